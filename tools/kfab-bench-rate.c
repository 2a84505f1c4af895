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
 * with the bandwidth of the same run (MB/sec, 10^6 bytes) and the CPU time
 * (user and system, getrusage) that every process of the run spent over
 * the repetition, per message and per MB:
 *
 *   rate: ... cpu 12.3 usec/msg 1540 usec/MB (3 processes)
 *
 * Several senders, one receiver (-N n, 1 to 16): the sender forks n
 * processes, each with its own endpoint, and the receiver takes them all
 * on one endpoint (or, with --srx, on one endpoint per sender sharing one
 * shared receive context, fi_srx_context).  The senders go in lock-step
 * rounds: each sends its window, the receiver waits for all n windows,
 * reposts them and acks every sender, so the receiver never lacks a
 * receive and needs no FI_SOURCE.  Sender 0 prints the aggregate (n times
 * its messages over its time) and the CPU time of all n + 1 processes.
 *
 * Independent pairs (--pairs k, 1 to 16, on both sides): each side forks
 * k processes, pair i is sender i and receiver i, each pair a run of its
 * own; every sender prints its own lines, marked "pair i", and the caller
 * adds the rates up.
 *
 * --yield (both sides): a poll that finds nothing calls sched_yield(),
 * so that where there are more processes than CPUs the one with work
 * runs instead of a spinning one until its time slice ends.
 *
 * -S takes a list, SIZE:COUNT,..., run one after the other in the same
 * processes, COUNT messages a repetition each (default -n): with -W 1
 * (a message, then its ack) that is a ping-pong at every size, whose CPU
 * time tools/kfab-bench puts beside fi_pingpong's points; the line then
 * has "lat L usec", half the time of a window (message and ack).
 *
 * All data sends come out of one buffer of S bytes and all receives land
 * in one (the data are not looked at), so -S 1m with a window of 8 needs
 * 1 MiB on each side, not 8; acks are 8-byte messages of their own.
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
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "kfab_bench_time.h"

#define TAG_DATA 1
#define TAG_ACK  2
#define ACK_SIZE 8
#define MAX_PROCS 16
#define MAX_SIZES 8

/* What a sender tells the receiver before anything else. */
struct params {
	uint32_t size;		/* bytes per message */
	uint32_t window;	/* sends per window, per sender */
	uint32_t windows;	/* windows per repetition */
	uint32_t warmup;	/* windows before the first repetition */
	uint32_t reps;
	uint32_t tagged;
	uint32_t senders;	/* into this receiver (-N) */
	uint32_t id;		/* this sender's number, 0 .. senders - 1 */
	uint32_t nsizes;	/* -S SIZE:COUNT,...: run each in turn */
	uint32_t sizes[MAX_SIZES];
	uint32_t counts[MAX_SIZES];	/* messages per repetition */
};

static struct {
	const char *prov;
	const char *peer;	/* NULL: receiver */
	int port;
	int timeout;
	int more;
	bool srx;		/* receiver: one SRX, one endpoint per sender */
	bool yield;		/* sched_yield() after a poll that found nothing */
	uint32_t pairs;		/* independent pairs (--pairs) */
	uint32_t pair;		/* this process's pair */
	struct params p;
	uint32_t msgs;
	uint32_t bufsize;	/* the largest size */
} opt = {
	.port = 47593, .timeout = 60, .more = 1, .pairs = 1,
	.p = { .size = 8, .window = 64, .reps = 3, .senders = 1 },
	.msgs = 20000,
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_ep *ep[MAX_PROCS];	/* [0] only, unless --srx */
static struct fid_ep *srx;
static struct fid_cq *txcq, *rxcq;
static struct fid_mr *mr;
static void *desc;
static char *buf;		/* data (size bytes), then one ack slot per peer */
static struct fi_context2 *ctx;	/* one per receive of a round, then acks */
static fi_addr_t peer[MAX_PROCS];
static int sock[MAX_PROCS] = { -1 };	/* control sockets, by sender id */
static uint32_t nsock;

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



/* ------------------------------------------------------------ socket */

static void xfer(int s, int send_it, void *p, size_t len)
{
	char *c = p;

	while (len) {
		ssize_t n = send_it ? send(s, c, len, MSG_NOSIGNAL)
				    : recv(s, c, len, 0);
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

static int listen_on(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, lsock = socket(AF_INET, SOCK_STREAM, 0);

	if (lsock < 0)
		die("socket: %s", strerror(errno));
	setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lsock, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lsock, MAX_PROCS))
		die("bind/listen on port %d: %s", port, strerror(errno));
	return lsock;
}

static int accept_one(int lsock)
{
	int one = 1, s = accept(lsock, NULL, NULL);

	if (s < 0)
		die("accept: %s", strerror(errno));
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return s;
}

/* The sender's side: the receiver may still be starting, retry until -t. */
static int connect_to(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	int one = 1, s;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		die("bad address %s", addr);
	for (;;) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0)
			die("socket: %s", strerror(errno));
		if (!connect(s, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		if (errno != ECONNREFUSED && errno != EINTR)
			die("connect to %s:%d: %s", addr, port,
			    strerror(errno));
		close(s);
		usleep(50000);
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return s;
}

/* Everyone at the same point: a byte each way on every control socket. */
static void barrier(void)
{
	char c = 0;
	uint32_t i;

	for (i = 0; i < nsock; i++)
		xfer(sock[i], 1, &c, 1);
	for (i = 0; i < nsock; i++)
		xfer(sock[i], 0, &c, 1);
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
	if (opt.srx && !opt.peer)
		hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
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

/* Receives of one round: the receiver's window for all its senders. */
static uint32_t round_recvs(void)
{
	return opt.peer ? 1 : opt.p.senders * opt.p.window;
}

static void open_one_ep(struct fid_ep **e)
{
	int ret;

	ret = fi_endpoint(domain, info, e, NULL);
	if (ret)
		fi_die("fi_endpoint", ret);
	ret = fi_ep_bind(*e, &av->fid, 0);
	if (ret)
		fi_die("fi_ep_bind (av)", ret);
	if (srx) {
		ret = fi_ep_bind(*e, &srx->fid, 0);
		if (ret)
			fi_die("fi_ep_bind (srx)", ret);
	}
	ret = fi_ep_bind(*e, &txcq->fid, FI_TRANSMIT);
	if (ret)
		fi_die("fi_ep_bind (tx cq)", ret);
	ret = fi_ep_bind(*e, &rxcq->fid, FI_RECV);
	if (ret)
		fi_die("fi_ep_bind (rx cq)", ret);
	ret = fi_enable(*e);
	if (ret)
		fi_die("fi_enable", ret);
}

static size_t buf_len(void)
{
	size_t data = ((size_t)opt.bufsize + 63) & ~(size_t)63;

	return (data + (size_t)MAX_PROCS * ACK_SIZE + 4095) & ~4095UL;
}

static void open_ep(void)
{
	struct fi_av_attr av_attr = { .type = FI_AV_UNSPEC,
				      .count = MAX_PROCS };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_NONE };
	size_t slots = (opt.peer ? opt.p.window : round_recvs()) + MAX_PROCS;
	uint32_t i, neps = opt.srx && !opt.peer ? opt.p.senders : 1;
	int ret;

	/* A sender: its window, one ack receive; the receiver the reverse. */
	if ((opt.peer ? opt.p.window : opt.p.senders) > info->tx_attr->size ||
	    round_recvs() > info->rx_attr->size)
		die("window %u (x%u senders) too large for provider %s (tx size %zu, rx size %zu)",
		    opt.p.window, opt.p.senders, info->fabric_attr->prov_name,
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
	if (opt.srx && !opt.peer) {
		ret = fi_srx_context(domain, info->rx_attr, &srx, NULL);
		if (ret)
			fi_die("fi_srx_context", ret);
	}
	for (i = 0; i < neps; i++)
		open_one_ep(&ep[i]);

	buf = aligned_alloc(4096, buf_len());
	ctx = calloc(slots, sizeof(*ctx));
	if (!buf || !ctx)
		die("out of memory");
	memset(buf, 0xab, buf_len());
	if (info->domain_attr->mr_mode & FI_MR_LOCAL) {
		ret = fi_mr_reg(domain, buf, buf_len(), FI_SEND | FI_RECV, 0,
				0, 0, &mr, NULL);
		if (ret)
			fi_die("fi_mr_reg", ret);
		desc = fi_mr_desc(mr);
	}
}

/*
 * Over control socket @s: send the name of endpoint @e, insert the peer's
 * into the AV as *@addr.
 */
static void exchange_address(int s, struct fid_ep *e, fi_addr_t *addr)
{
	char name[256], pname[256];
	size_t len = sizeof(name);
	uint32_t n, plen;
	int ret;

	ret = fi_getname(&e->fid, name, &len);
	if (ret)
		fi_die("fi_getname", ret);
	n = len;
	xfer(s, 1, &n, sizeof(n));
	xfer(s, 1, name, len);
	xfer(s, 0, &plen, sizeof(plen));
	if (plen > sizeof(pname))
		die("peer address too long (%u bytes)", plen);
	xfer(s, 0, pname, plen);
	ret = fi_av_insert(av, pname, 1, addr, 0, NULL);
	if (ret != 1)
		fi_die("fi_av_insert", ret < 0 ? ret : -FI_EOTHER);
}

static void close_all(void)
{
	uint32_t i;
	int ret;

	for (i = 0; i < MAX_PROCS; i++) {
		ret = ep[i] ? fi_close(&ep[i]->fid) : 0;
		if (ret)
			fi_die("fi_close (ep)", ret);
	}
	{
		struct fid *fids[] = { srx ? &srx->fid : NULL,
				       mr ? &mr->fid : NULL, &av->fid,
				       &txcq->fid, &rxcq->fid, &domain->fid,
				       &fabric->fid };

		for (i = 0; i < sizeof(fids) / sizeof(fids[0]); i++) {
			ret = fids[i] ? fi_close(fids[i]) : 0;
			if (ret)
				fi_die("fi_close", ret);
		}
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
	if (n == -FI_EAGAIN) {
		/* More processes than CPUs: let one with work run. */
		if (opt.yield)
			sched_yield();
		return;
	}
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

/* One operation: a data message (of opt.p.size) or an ack (ACK_SIZE). */
struct op {
	struct fid_ep *ep;	/* a receive on the SRX goes to it */
	fi_addr_t addr;		/* FI_ADDR_UNSPEC for a receive */
	uint64_t tag;
	uint32_t slot;		/* its context */
	uint32_t ack;		/* 0: data; else 1 + the ack slot */
	bool send;
	bool more;
};

/* Post @o; a full queue is retried after progress. */
static void post(const struct op *o)
{
	struct iovec iov = {
		.iov_base = o->ack ? buf + buf_len() - (size_t)o->ack * ACK_SIZE
				   : buf,
		.iov_len = o->ack ? ACK_SIZE : opt.p.size,
	};
	uint64_t flags = FI_COMPLETION | (o->more ? FI_MORE : 0);
	const char *what;
	ssize_t ret;

	do {
		if (opt.p.tagged) {
			struct fi_msg_tagged m = {
				.msg_iov = &iov, .desc = &desc, .iov_count = 1,
				.addr = o->addr, .tag = o->tag,
				.context = &ctx[o->slot],
			};
			what = o->send ? "fi_tsendmsg" : "fi_trecvmsg";
			ret = o->send ? fi_tsendmsg(o->ep, &m, flags) :
					fi_trecvmsg(o->ep, &m, flags);
		} else {
			struct fi_msg m = {
				.msg_iov = &iov, .desc = &desc, .iov_count = 1,
				.addr = o->addr, .context = &ctx[o->slot],
			};
			what = o->send ? "fi_sendmsg" : "fi_recvmsg";
			ret = o->send ? fi_sendmsg(o->ep, &m, flags) :
					fi_recvmsg(o->ep, &m, flags);
		}
		if (ret == -FI_EAGAIN)
			progress();
	} while (ret == -FI_EAGAIN);
	if (ret)
		fi_die(what, ret);
	if (o->send)
		tx_posted++;
	else
		rx_posted++;
}

/* The receiver's round: FI_MORE on all but the last receive. */
static void post_recv_round(void)
{
	uint32_t i, n = round_recvs();
	struct op o = { .ep = srx ? srx : ep[0], .addr = FI_ADDR_UNSPEC,
			.tag = TAG_DATA };

	for (i = 0; i < n; i++) {
		o.slot = i;
		o.more = opt.more && i + 1 < n;
		post(&o);
	}
}

/* The receiver acks every sender: the round is reposted. */
static void send_acks(void)
{
	uint32_t i;

	for (i = 0; i < opt.p.senders; i++) {
		struct op o = { .ep = srx ? ep[i] : ep[0], .addr = peer[i],
				.tag = TAG_ACK, .slot = round_recvs() + i,
				.ack = 1 + i, .send = true };
		post(&o);
	}
}

/* CPU time per repetition, this process (and the receiver: all of them). */
static double *cpu;

static void receiver(void)
{
	uint32_t total = opt.p.warmup + opt.p.reps * opt.p.windows;
	uint32_t w, rep = 0;
	double c0 = 0;

	post_recv_round();
	barrier();	/* all receives are posted */
	for (w = 0; w <= total; w++) {
		if (w) {
			wait_rx(rx_posted);
			/* None after the last: the next size posts its own. */
			if (w < total)
				post_recv_round();
		}
		if (w > opt.p.warmup &&
		    (w - opt.p.warmup) % opt.p.windows == 0)
			cpu[rep++] = cpu_usec() - c0;
		if (w >= opt.p.warmup &&
		    (w - opt.p.warmup) % opt.p.windows == 0)
			c0 = cpu_usec();
		send_acks();
		wait_tx(tx_posted);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sender: the time of each repetition (cpu[] has its CPU time). */
static void sender(double *dt)
{
	uint32_t total = opt.p.warmup + opt.p.reps * opt.p.windows;
	uint32_t w, i, rep = 0;
	struct op ack = { .ep = ep[0], .addr = FI_ADDR_UNSPEC, .tag = TAG_ACK,
			  .slot = opt.p.window, .ack = 1 };
	struct op data = { .ep = ep[0], .addr = peer[0], .tag = TAG_DATA,
			   .send = true };
	double t0 = 0, c0 = 0;

	post(&ack);
	barrier();
	for (w = 0; w <= total; w++) {
		/* The ack of window w-1: everything before it has landed. */
		wait_rx(rx_posted);
		if (w > opt.p.warmup &&
		    (w - opt.p.warmup) % opt.p.windows == 0) {
			dt[rep] = now() - t0;
			cpu[rep] = cpu_usec() - c0;
			bench_mark();
			rep++;
		}
		if (w == total)
			break;
		if (w >= opt.p.warmup &&
		    (w - opt.p.warmup) % opt.p.windows == 0) {
			bench_mark();
			t0 = now();
			c0 = cpu_usec();
		}
		post(&ack);
		for (i = 0; i < opt.p.window; i++) {
			data.slot = i;
			data.more = opt.more && i + 1 < opt.p.window;
			post(&data);
		}
		wait_tx(tx_posted);
	}
}

/*
 * After the run: the senders send their CPU times to the receiver, which
 * adds its own and sends the sums back, so that sender 0 can print them.
 */
static void gather_cpu(void)
{
	size_t len = opt.p.reps * sizeof(*cpu);
	double *other = malloc(len);
	uint32_t i, r;

	if (!other)
		die("out of memory");
	if (opt.peer) {
		xfer(sock[0], 1, cpu, len);
		xfer(sock[0], 0, cpu, len);
	} else {
		for (i = 0; i < nsock; i++) {
			xfer(sock[i], 0, other, len);
			for (r = 0; r < opt.p.reps; r++)
				cpu[r] += other[r];
		}
		for (i = 0; i < nsock; i++)
			xfer(sock[i], 1, cpu, len);
	}
	free(other);
}

static void report(const double *dt)
{
	uint64_t msgs = (uint64_t)opt.p.windows * opt.p.window *
			opt.p.senders;
	double *rate = calloc(opt.p.reps, sizeof(*rate));
	char who[32] = "";
	uint32_t r;

	if (!rate)
		die("out of memory");
	if (opt.pairs > 1)
		snprintf(who, sizeof(who), ", pair %u", opt.pair);
	for (r = 0; r < opt.p.reps; r++) {
		double mb = (double)msgs * opt.p.size / 1e6;

		rate[r] = msgs / dt[r] / 1e6;
		printf("rate: %.4f Mxfers/sec (%llu msgs of %u bytes in %.3f s, window %u, %s, %s, %u sender%s%s%s, %s) bw %.1f MB/sec lat %.2f usec cpu %.3f usec/msg %.0f usec/MB (%u processes)\n",
		       rate[r], (unsigned long long)msgs, opt.p.size, dt[r],
		       opt.p.window, opt.more ? "FI_MORE" : "no FI_MORE",
		       opt.p.tagged ? "tagged" : "msg", opt.p.senders,
		       opt.p.senders > 1 ? "s" : "", opt.srx ? " srx" : "",
		       who, info->fabric_attr->prov_name, mb / dt[r],
		       dt[r] * 1e6 / opt.p.windows / 2,
		       cpu[r] / msgs, cpu[r] / mb, opt.p.senders + 1);
	}
	qsort(rate, opt.p.reps, sizeof(*rate), cmp_double);
	printf("median: %.4f Mxfers/sec\n", rate[opt.p.reps / 2]);
	fflush(stdout);
	free(rate);
}

/* Size @i of -S, with its windows: both sides compute the same. */
static void set_size(uint32_t i)
{
	opt.p.size = opt.p.sizes[i];
	opt.p.windows = (opt.p.counts[i] + opt.p.window - 1) / opt.p.window;
	opt.p.warmup = opt.p.windows / 10 + 1;
}

/* The receiver's -S came from a sender: check it, as the sender's own. */
static void check_sizes(void)
{
	uint32_t i;

	if (opt.p.nsizes < 1 || opt.p.nsizes > MAX_SIZES)
		die("bad number of sizes %u", opt.p.nsizes);
	opt.bufsize = 0;
	for (i = 0; i < opt.p.nsizes; i++) {
		if (opt.p.sizes[i] < 1 || opt.p.sizes[i] > 1 << 24 ||
		    opt.p.counts[i] < 1 || opt.p.counts[i] > 1 << 30)
			die("bad size %u or count %u", opt.p.sizes[i],
			    opt.p.counts[i]);
		if (opt.p.sizes[i] > opt.bufsize)
			opt.bufsize = opt.p.sizes[i];
	}
}

/* One process of the run: a receiver with its senders, or a sender. */
static void run(int lsock)
{
	uint32_t i, tagged = opt.p.tagged, n;
	double *dt = NULL;

	if (opt.peer) {
		nsock = 1;
		sock[0] = connect_to(opt.peer, opt.port);
		xfer(sock[0], 1, &opt.p, sizeof(opt.p));
	} else {
		/* The first sender says how many there are. */
		struct params p;

		sock[0] = accept_one(lsock);
		xfer(sock[0], 0, &opt.p, sizeof(opt.p));
		n = opt.p.senders;
		if (n < 1 || n > MAX_PROCS || opt.p.id >= n)
			die("bad sender count %u or id %u", n, opt.p.id);
		if (opt.p.id) {	/* keep the sockets in sender order */
			sock[opt.p.id] = sock[0];
			sock[0] = -1;
		}
		for (i = 1; i < n; i++) {
			int s = accept_one(lsock);

			xfer(s, 0, &p, sizeof(p));
			if (p.id >= n || sock[p.id] >= 0 || p.senders != n)
				die("bad sender id %u of %u", p.id, p.senders);
			sock[p.id] = s;
		}
		nsock = n;
		close(lsock);
		if (opt.p.tagged != tagged)
			die("sender and receiver disagree on -m");
	}
	check_sizes();
	open_fabric();
	open_ep();
	if (opt.peer)
		exchange_address(sock[0], ep[0], &peer[0]);
	else
		for (i = 0; i < nsock; i++)
			exchange_address(sock[i], srx ? ep[i] : ep[0],
					  &peer[i]);
	cpu = calloc(opt.p.reps, sizeof(*cpu));
	dt = calloc(opt.p.reps, sizeof(*dt));
	if (!cpu || !dt)
		die("out of memory");
	for (i = 0; i < opt.p.nsizes; i++) {
		set_size(i);
		if (opt.peer)
			sender(dt);
		else
			receiver();
		gather_cpu();
		if (opt.peer && opt.p.id == 0)
			report(dt);
	}
	barrier();
	close_all();
	for (i = 0; i < nsock; i++)
		close(sock[i]);
	free(dt);
	free(cpu);
}

/*
 * Fork @n processes that each call run() (as sender @id = i, or as the
 * receiver of pair i), and wait for them: the worst exit status wins.
 */
static int fork_all(uint32_t n, int lsock)
{
	pid_t pid[MAX_PROCS];
	int status, rc = 0;
	uint32_t i;

	fflush(stdout);
	for (i = 0; i < n; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			die("fork: %s", strerror(errno));
		if (pid[i] == 0) {
			alarm(opt.timeout);	/* not inherited */
			if (opt.peer && opt.pairs == 1)
				opt.p.id = i;
			opt.pair = i;
			if (opt.pairs > 1) {
				opt.port += i;
				if (!opt.peer)
					lsock = listen_on(opt.port);
			}
			run(lsock);
			exit(0);
		}
	}
	if (lsock >= 0)
		close(lsock);
	for (i = 0; i < n; i++) {
		if (waitpid(pid[i], &status, 0) < 0)
			die("waitpid: %s", strerror(errno));
		if (WIFEXITED(status) && WEXITSTATUS(status) > rc)
			rc = WEXITSTATUS(status);
		else if (!WIFEXITED(status) && rc < 1)
			rc = 1;
	}
	return rc;
}

/* ------------------------------------------------------------- main */

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: kfab-bench-rate -p PROV [options] [SERVER_ADDR]\n"
		"  -p PROV     provider (kfab, shm, tcp, ...)\n"
		"  -m msg|tagged  fi_sendmsg or fi_tsendmsg (default msg)\n"
		"  -S SIZE[:COUNT],...  message sizes (k, m: KiB, MiB; at most 16m\n"
		"              and %d sizes), each run in turn with COUNT messages\n"
		"              a repetition (default -n); default %u\n"
		"  -W N        window: sends per FI_MORE batch (default %u)\n"
		"  -n N        messages per repetition and sender (default %u)\n"
		"  -r N        repetitions (default %u)\n"
		"  -N N        senders into one receiver (sender side, 1..%d)\n"
		"  --srx       receiver: one endpoint per sender, one SRX\n"
		"  --pairs N   N independent pairs (both sides, 1..%d;\n"
		"              ports PORT .. PORT+N-1)\n"
		"  -B PORT     control port, receiver (default %d)\n"
		"  -P PORT     control port, sender (default %d)\n"
		"  -t SECONDS  give up after this (default %d)\n"
		"  --no-more   never set FI_MORE (sends and receives)\n"
		"  --yield     sched_yield() after every poll that finds nothing\n"
		"              (both sides; for more processes than CPUs)\n"
		"The sender's -S/-W/-n/-r/-N are the ones used.\n",
		MAX_SIZES, opt.p.size, opt.p.window, opt.msgs, opt.p.reps, MAX_PROCS,
		MAX_PROCS, opt.port, opt.port, opt.timeout);
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

/* -S SIZE[:COUNT][,SIZE[:COUNT]...], SIZE with an optional k or m. */
static void parse_sizes(const char *arg)
{
	char *copy = strdup(arg), *item, *save = NULL;
	uint32_t n = 0;

	if (!copy)
		die("out of memory");
	for (item = strtok_r(copy, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *count = strchr(item, ':'), *end;
		unsigned long v;

		if (n == MAX_SIZES)
			die("more than %d sizes in -S", MAX_SIZES);
		if (count)
			*count++ = '\0';
		v = strtoul(item, &end, 0);
		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		if (end == item || *end || v < 1 || v > 1 << 24)
			die("bad size %s (1..16m)", item);
		opt.p.sizes[n] = v;
		opt.p.counts[n] = count ? num(count, 1, 1 << 30) : 0;
		n++;
	}
	if (!n)
		die("no size in -S");
	opt.p.nsizes = n;
	free(copy);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "no-more", no_argument, NULL, 'M' },
		{ "yield", no_argument, NULL, 'Y' },
		{ "srx", no_argument, NULL, 'X' },
		{ "pairs", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, lsock = -1;
	uint32_t i;

	for (i = 0; i < MAX_PROCS; i++)
		sock[i] = -1;
	while ((c = getopt_long(argc, argv, "p:m:S:W:n:r:N:B:P:t:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'p': opt.prov = optarg; break;
		case 'm':
			if (strcmp(optarg, "msg") && strcmp(optarg, "tagged"))
				usage(1);
			opt.p.tagged = !strcmp(optarg, "tagged");
			break;
		case 'S': parse_sizes(optarg); break;
		case 'W': opt.p.window = num(optarg, 1, 4096); break;
		case 'n': opt.msgs = num(optarg, 1, 1 << 30); break;
		case 'r': opt.p.reps = num(optarg, 1, 100); break;
		case 'N': opt.p.senders = num(optarg, 1, MAX_PROCS); break;
		case 'X': opt.srx = true; break;
		case 'K': opt.pairs = num(optarg, 1, MAX_PROCS); break;
		case 'B': case 'P': opt.port = num(optarg, 1, 65535); break;
		case 't': opt.timeout = num(optarg, 1, 86400); break;
		case 'M': opt.more = 0; break;
		case 'Y': opt.yield = true; break;
		case 'h': usage(0); break;
		default: usage(1);
		}
	}
	if (!opt.prov || argc - optind > 1)
		usage(1);
	opt.peer = argc > optind ? argv[optind] : NULL;
	/* Whatever becomes of it, the sender's run starts here. */
	if (opt.peer)
		bench_mark_run();
	if (opt.pairs > 1 && opt.p.senders > 1)
		die("-N and --pairs do not go together");
	if (opt.peer && opt.srx)
		die("--srx is the receiver's");
	if (!opt.p.nsizes) {
		opt.p.nsizes = 1;
		opt.p.sizes[0] = opt.p.size;
	}
	/* The sender's counts go to the receiver: -n resolved here. */
	for (i = 0; i < opt.p.nsizes; i++)
		if (!opt.p.counts[i])
			opt.p.counts[i] = opt.msgs;

	signal(SIGALRM, on_alarm);
	alarm(opt.timeout);

	/* Listen before forking: a sender may connect at once. */
	if (!opt.peer && opt.pairs == 1)
		lsock = listen_on(opt.port);
	if (opt.pairs > 1)
		return fork_all(opt.pairs, lsock);
	if (opt.peer && opt.p.senders > 1)
		return fork_all(opt.p.senders, -1);
	run(lsock);
	return 0;
}
