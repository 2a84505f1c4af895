// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-bench-rate: message rate of small sends between two processes over
 * any libfabric provider, through the public API only (so the same code
 * measures kfab, shm and tcp).
 *
 *   kfab-bench-rate -p PROV [options]             receiver (server)
 *   kfab-bench-rate -p PROV [options] 127.0.0.1   sender (client)
 *
 * The sender posts windows of W sends of S bytes (fi_sendmsg, or
 * fi_tsendmsg with -m tagged): the first W-1 with FI_MORE, the last one
 * without, so a provider that batches can ring its doorbell once per
 * window.  The receiver keeps W receives posted and posts each window of
 * them the same way (fi_recvmsg or fi_trecvmsg, FI_MORE on all but the
 * last), so both sides batch (--no-more: no FI_MORE at all, on either
 * side).  After a window has arrived the receiver reposts it and sends one
 * ack,
 * and the sender waits for that ack before the next window, so no send
 * ever finds its receive missing.  The time from the first window of a
 * repetition to the ack of its last one, over the messages sent, is the
 * rate; the sender prints one line per repetition:
 *
 *   rate: 0.1234 Mxfers/sec (20032 msgs of 8 bytes in 0.162 s, ...)
 *
 * Addresses (fi_getname) are exchanged over a TCP socket (-B/-P port,
 * like fi_pingpong); the receiver takes the sender's size, window and
 * counts from it.  Every wait is bounded by -t seconds (SIGALRM): the
 * program never hangs.  Exit status 0 on success, 1 on a libfabric or
 * socket error (with the reason on stderr), 2 on timeout.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define TAG_DATA 1
#define TAG_ACK  2

/* What the sender tells the receiver before anything else. */
struct params {
	uint32_t size;		/* bytes per message */
	uint32_t window;	/* sends per window, receives kept posted */
	uint32_t windows;	/* windows per repetition */
	uint32_t warmup;	/* windows before the first repetition */
	uint32_t reps;
	uint32_t tagged;
};

static struct {
	const char *prov;
	const char *peer;	/* NULL: receiver */
	int port;
	int timeout;
	int more;
	struct params p;
	uint32_t msgs;
} opt = {
	.port = 47593, .timeout = 60, .more = 1,
	.p = { .size = 8, .window = 64, .reps = 3 },
	.msgs = 20000,
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_ep *ep;
static struct fid_cq *txcq, *rxcq;
static struct fid_mr *mr;
static void *desc;
static char *buf;		/* window + 1 slots of p.size bytes */
static struct fi_context2 *ctx;	/* one per slot */
static fi_addr_t peer;
static int sock = -1;

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kfab-bench-rate: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void fi_die(const char *what, ssize_t ret)
{
	die("%s: %s (%zd)", what, fi_strerror((int)-ret), ret);
}

static void on_alarm(int sig)
{
	static const char msg[] = "kfab-bench-rate: timeout\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ socket */

static void xfer(int send_it, void *p, size_t len)
{
	char *c = p;

	while (len) {
		ssize_t n = send_it ? send(sock, c, len, MSG_NOSIGNAL)
				    : recv(sock, c, len, 0);
		if (n == 0)
			die("peer closed the control socket");
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("control socket: %s", strerror(errno));
		}
		c += n;
		len -= n;
	}
}

static void sock_connect(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(opt.port) };
	int one = 1;

	if (inet_pton(AF_INET, opt.peer ? opt.peer : "0.0.0.0",
		      &sa.sin_addr) != 1)
		die("bad address %s", opt.peer);
	if (!opt.peer) {
		int lsock = socket(AF_INET, SOCK_STREAM, 0);

		if (lsock < 0)
			die("socket: %s", strerror(errno));
		setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(lsock, (struct sockaddr *)&sa, sizeof(sa)) ||
		    listen(lsock, 1))
			die("bind/listen on port %d: %s", opt.port,
			    strerror(errno));
		sock = accept(lsock, NULL, NULL);
		if (sock < 0)
			die("accept: %s", strerror(errno));
		close(lsock);
	} else {
		/* The receiver may still be starting: retry until -t. */
		for (;;) {
			sock = socket(AF_INET, SOCK_STREAM, 0);
			if (sock < 0)
				die("socket: %s", strerror(errno));
			if (!connect(sock, (struct sockaddr *)&sa, sizeof(sa)))
				break;
			if (errno != ECONNREFUSED && errno != EINTR)
				die("connect to %s:%d: %s", opt.peer, opt.port,
				    strerror(errno));
			close(sock);
			usleep(50000);
		}
	}
	setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void barrier(void)
{
	char c = 0;

	xfer(1, &c, 1);
	xfer(0, &c, 1);
}

/* ------------------------------------------------------------ fabric */

static void open_fabric(void)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		die("fi_allocinfo failed");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = opt.p.tagged ? FI_TAGGED : FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED |
				      FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(opt.prov);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		fi_die("fi_getinfo", ret);

	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (ret)
		fi_die("fi_fabric", ret);
	ret = fi_domain(fabric, info, &domain, NULL);
	if (ret)
		fi_die("fi_domain", ret);
}

static void open_ep(void)
{
	struct fi_av_attr av_attr = { .type = FI_AV_UNSPEC, .count = 2 };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_NONE };
	size_t slots = opt.p.window + 1;
	int ret;

	if (opt.p.window > info->tx_attr->size ||
	    opt.p.window + 1 > info->rx_attr->size)
		die("window %u too large for provider %s (tx size %zu, rx size %zu)",
		    opt.p.window, info->fabric_attr->prov_name,
		    info->tx_attr->size, info->rx_attr->size);
	cq_attr.size = 2 * slots > 128 ? 2 * slots : 128;

	ret = fi_av_open(domain, &av_attr, &av, NULL);
	if (ret)
		fi_die("fi_av_open", ret);
	ret = fi_cq_open(domain, &cq_attr, &txcq, NULL);
	if (ret)
		fi_die("fi_cq_open (tx)", ret);
	ret = fi_cq_open(domain, &cq_attr, &rxcq, NULL);
	if (ret)
		fi_die("fi_cq_open (rx)", ret);
	ret = fi_endpoint(domain, info, &ep, NULL);
	if (ret)
		fi_die("fi_endpoint", ret);
	ret = fi_ep_bind(ep, &av->fid, 0);
	if (ret)
		fi_die("fi_ep_bind (av)", ret);
	ret = fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT);
	if (ret)
		fi_die("fi_ep_bind (tx cq)", ret);
	ret = fi_ep_bind(ep, &rxcq->fid, FI_RECV);
	if (ret)
		fi_die("fi_ep_bind (rx cq)", ret);
	ret = fi_enable(ep);
	if (ret)
		fi_die("fi_enable", ret);

	buf = aligned_alloc(4096, (slots * opt.p.size + 4095) & ~4095UL);
	ctx = calloc(slots, sizeof(*ctx));
	if (!buf || !ctx)
		die("out of memory");
	memset(buf, 0xab, slots * opt.p.size);
	if (info->domain_attr->mr_mode & FI_MR_LOCAL) {
		ret = fi_mr_reg(domain, buf, slots * opt.p.size,
				FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL);
		if (ret)
			fi_die("fi_mr_reg", ret);
		desc = fi_mr_desc(mr);
	}
}

static void exchange_addresses(void)
{
	char name[256], pname[256];
	size_t len = sizeof(name);
	uint32_t n, plen;
	int ret;

	ret = fi_getname(&ep->fid, name, &len);
	if (ret)
		fi_die("fi_getname", ret);
	n = len;
	xfer(1, &n, sizeof(n));
	xfer(1, name, len);
	xfer(0, &plen, sizeof(plen));
	if (plen > sizeof(pname))
		die("peer address too long (%u bytes)", plen);
	xfer(0, pname, plen);
	ret = fi_av_insert(av, pname, 1, &peer, 0, NULL);
	if (ret != 1)
		fi_die("fi_av_insert", ret < 0 ? ret : -FI_EOTHER);
}

static void close_all(void)
{
	struct fid *fids[] = { &ep->fid, mr ? &mr->fid : NULL, &av->fid,
			       &txcq->fid, &rxcq->fid, &domain->fid,
			       &fabric->fid };
	size_t i;

	for (i = 0; i < sizeof(fids) / sizeof(fids[0]); i++) {
		int ret = fids[i] ? fi_close(fids[i]) : 0;

		if (ret)
			fi_die("fi_close", ret);
	}
	fi_freeinfo(info);
	free(buf);
	free(ctx);
}

/* -------------------------------------------------------- data path */

/* Completions reaped so far, and operations posted so far, per queue. */
static uint64_t tx_done, rx_done, tx_posted, rx_posted;

static void poll_cq(struct fid_cq *cq, uint64_t *done, const char *which)
{
	struct fi_cq_entry e[64];
	ssize_t n = fi_cq_read(cq, e, 64);

	if (n > 0) {
		*done += n;
		return;
	}
	if (n == -FI_EAGAIN)
		return;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };
		char ebuf[256];

		fi_cq_readerr(cq, &err, 0);
		die("%s completion error: %s (%d, prov_errno %d: %s)", which,
		    fi_strerror(err.err), err.err, err.prov_errno,
		    fi_cq_strerror(cq, err.prov_errno, err.err_data, ebuf,
				   sizeof(ebuf)));
	}
	fi_die(which, n);
}

static void wait_tx(uint64_t target)
{
	while (tx_done < target)
		poll_cq(txcq, &tx_done, "tx");
}

static void wait_rx(uint64_t target)
{
	while (rx_done < target)
		poll_cq(rxcq, &rx_done, "rx");
}

/* A post was refused for lack of room (-FI_EAGAIN): progress both. */
static void progress(void)
{
	poll_cq(txcq, &tx_done, "tx");
	poll_cq(rxcq, &rx_done, "rx");
}

/*
 * Post slot `slot` (a send to the peer, or a receive from anyone), with
 * FI_MORE if `more`; a full queue is retried after progress.
 */
static void post(uint32_t slot, uint64_t tag, int more, bool send)
{
	struct iovec iov = { .iov_base = buf + (size_t)slot * opt.p.size,
			     .iov_len = opt.p.size };
	uint64_t flags = FI_COMPLETION | (more ? FI_MORE : 0);
	fi_addr_t addr = send ? peer : FI_ADDR_UNSPEC;
	const char *what;
	ssize_t ret;

	do {
		if (opt.p.tagged) {
			struct fi_msg_tagged m = {
				.msg_iov = &iov, .desc = &desc, .iov_count = 1,
				.addr = addr, .tag = tag,
				.context = &ctx[slot],
			};
			what = send ? "fi_tsendmsg" : "fi_trecvmsg";
			ret = send ? fi_tsendmsg(ep, &m, flags) :
				     fi_trecvmsg(ep, &m, flags);
		} else {
			struct fi_msg m = {
				.msg_iov = &iov, .desc = &desc, .iov_count = 1,
				.addr = addr, .context = &ctx[slot],
			};
			what = send ? "fi_sendmsg" : "fi_recvmsg";
			ret = send ? fi_sendmsg(ep, &m, flags) :
				     fi_recvmsg(ep, &m, flags);
		}
		if (ret == -FI_EAGAIN)
			progress();
	} while (ret == -FI_EAGAIN);
	if (ret)
		fi_die(what, ret);
	if (send)
		tx_posted++;
	else
		rx_posted++;
}

static void post_recv(uint32_t slot, uint64_t tag, int more)
{
	post(slot, tag, more, false);
}

static void post_send(uint32_t slot, uint64_t tag, int more)
{
	post(slot, tag, more, true);
}

/* The receiver's window: FI_MORE on all but the last receive. */
static void post_recv_window(void)
{
	uint32_t i;

	for (i = 0; i < opt.p.window; i++)
		post_recv(i, TAG_DATA, opt.more && i + 1 < opt.p.window);
}

static void receiver(void)
{
	uint32_t total = opt.p.warmup + opt.p.reps * opt.p.windows;
	uint32_t w;

	post_recv_window();
	barrier();	/* all receives are posted */
	for (w = 0; w <= total; w++) {
		if (w) {
			wait_rx(rx_posted);
			post_recv_window();
		}
		post_send(opt.p.window, TAG_ACK, 0);
		wait_tx(tx_posted);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void sender(void)
{
	uint32_t total = opt.p.warmup + opt.p.reps * opt.p.windows;
	uint32_t msgs = opt.p.windows * opt.p.window;
	double t0 = 0, *rate = calloc(opt.p.reps, sizeof(*rate));
	uint32_t w, i, rep = 0;

	if (!rate)
		die("out of memory");
	post_recv(opt.p.window, TAG_ACK, 0);
	barrier();
	for (w = 0; w <= total; w++) {
		/* The ack of window w-1: everything before it has landed. */
		wait_rx(rx_posted);
		if (w > opt.p.warmup &&
		    (w - opt.p.warmup) % opt.p.windows == 0) {
			double dt = now() - t0;

			rate[rep] = msgs / dt / 1e6;
			printf("rate: %.4f Mxfers/sec (%u msgs of %u bytes in %.3f s, window %u, %s, %s, %s)\n",
			       rate[rep], msgs, opt.p.size, dt, opt.p.window,
			       opt.more ? "FI_MORE" : "no FI_MORE",
			       opt.p.tagged ? "tagged" : "msg",
			       info->fabric_attr->prov_name);
			fflush(stdout);
			rep++;
		}
		if (w == total)
			break;
		if (w >= opt.p.warmup &&
		    (w - opt.p.warmup) % opt.p.windows == 0)
			t0 = now();
		post_recv(opt.p.window, TAG_ACK, 0);
		for (i = 0; i < opt.p.window; i++)
			post_send(i, TAG_DATA,
				  opt.more && i + 1 < opt.p.window);
		wait_tx(tx_posted);
	}
	qsort(rate, opt.p.reps, sizeof(*rate), cmp_double);
	printf("median: %.4f Mxfers/sec\n", rate[opt.p.reps / 2]);
	free(rate);
}

/* ------------------------------------------------------------- main */

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: kfab-bench-rate -p PROV [options] [SERVER_ADDR]\n"
		"  -p PROV     provider (kfab, shm, tcp, ...)\n"
		"  -m msg|tagged  fi_sendmsg or fi_tsendmsg (default msg)\n"
		"  -S BYTES    message size (default %u)\n"
		"  -W N        window: sends per FI_MORE batch (default %u)\n"
		"  -n N        messages per repetition (default %u)\n"
		"  -r N        repetitions (default %u)\n"
		"  -B PORT     control port, receiver (default %d)\n"
		"  -P PORT     control port, sender (default %d)\n"
		"  -t SECONDS  give up after this (default %d)\n"
		"  --no-more   never set FI_MORE (sends and receives)\n"
		"The sender's -S/-W/-n/-r are the ones used.\n",
		opt.p.size, opt.p.window, opt.msgs, opt.p.reps, opt.port,
		opt.port, opt.timeout);
	exit(status);
}

static unsigned long num(const char *s, unsigned long min, unsigned long max)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (*s == '\0' || *end || v < min || v > max)
		die("bad number %s (%lu..%lu)", s, min, max);
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "no-more", no_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "p:m:S:W:n:r:B:P:t:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'p': opt.prov = optarg; break;
		case 'm':
			if (strcmp(optarg, "msg") && strcmp(optarg, "tagged"))
				usage(1);
			opt.p.tagged = !strcmp(optarg, "tagged");
			break;
		case 'S': opt.p.size = num(optarg, 1, 1 << 20); break;
		case 'W': opt.p.window = num(optarg, 1, 4096); break;
		case 'n': opt.msgs = num(optarg, 1, 1 << 30); break;
		case 'r': opt.p.reps = num(optarg, 1, 100); break;
		case 'B': case 'P': opt.port = num(optarg, 1, 65535); break;
		case 't': opt.timeout = num(optarg, 1, 86400); break;
		case 'M': opt.more = 0; break;
		case 'h': usage(0); break;
		default: usage(1);
		}
	}
	if (!opt.prov || argc - optind > 1)
		usage(1);
	opt.peer = argc > optind ? argv[optind] : NULL;
	opt.p.windows = (opt.msgs + opt.p.window - 1) / opt.p.window;
	opt.p.warmup = opt.p.windows / 10 + 1;

	signal(SIGALRM, on_alarm);
	alarm(opt.timeout);

	open_fabric();
	sock_connect();
	/* The receiver adopts the sender's parameters (and checks -m). */
	if (opt.peer) {
		xfer(1, &opt.p, sizeof(opt.p));
	} else {
		uint32_t tagged = opt.p.tagged;

		xfer(0, &opt.p, sizeof(opt.p));
		if (opt.p.tagged != tagged)
			die("sender and receiver disagree on -m");
	}
	open_ep();
	exchange_addresses();
	if (opt.peer)
		sender();
	else
		receiver();
	barrier();
	close_all();
	close(sock);
	return 0;
}
