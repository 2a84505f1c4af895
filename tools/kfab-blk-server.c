// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-blk-server: the user-space end of kfab_blk (Documentation/kfab_blk.rst).
 * Serves a file, or memory, as the blocks of a kfab_blk device, over kfab
 * through the public libfabric API (provider kfab).  The protocol is in
 * <linux/kfab_blk.h>.
 *
 *   kfab-blk-server (--av NAME | --service N [--node HOST] [--av NAME])
 *                   (--file PATH [--size BYTES] | --mem BYTES)
 *                   [--block-size N] [--rx N] [--quiet]
 *
 * It opens (or creates) the named AV NAME, or an AV of its own, inserts its
 * own address and prints one line
 * "kfab-blk-server: ep EP index INDEX size BYTES addr ADDRESS", then
 * serves until SIGINT or SIGTERM.  kfab_blk loads with av=NAME
 * server_index=INDEX, or server_ep=EP, or server=ADDRESS.  With --service
 * the endpoint is the well-known service N of this node (a listener's
 * address, HOST's when given: fi_getinfo(HOST, N, FI_SOURCE)), so its
 * address is known in advance and stays the same when the server is
 * restarted: kfab_blk on another node reaches it with
 * server=fi_kfab://HOST:PORT/N and finds it again after a restart.
 * Requests carry the client's address; a client the AV does not hold is
 * inserted from it and answered there.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <linux/kfab.h>
#include <linux/kfab_blk.h>

#define RX_BUF_SIZE	(sizeof(struct kfab_blk_req) + KFAB_BLK_MAX_DATA)

/* One posted receive and the answer it leads to. */
struct slot {
	struct fi_context rx_ctx;	/* first: a completion's op_context */
	struct fi_context tx_ctx;
	char *rx_buf;
	char *tx_buf;
	char *tx_ptr;			/* the answer's data: tx_buf or memory */
	/* An answer the receiver could not take yet (-FI_EAGAIN). */
	bool pending;
	size_t tx_len;
	uint64_t tx_tag, tx_status;
	fi_addr_t tx_dest;
};

static struct {
	const char *av_name;
	const char *service;
	const char *node;
	const char *file;
	uint64_t size;
	uint64_t mem;
	uint32_t block_size;
	unsigned int nrx;
	bool quiet;
} opt = { .block_size = 512, .nrx = 64 };

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_ep *ep;
static struct slot *slots;
static int fd = -1;
static char *mem;
static volatile sig_atomic_t stop;
static unsigned long served;

static void die(const char *what, int ret)
{
	fprintf(stderr, "kfab-blk-server: %s: %s (%d)\n", what,
		fi_strerror(ret < 0 ? -ret : ret), ret);
	exit(1);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kfab-blk-server (--av NAME | --service N [--node HOST] [--av NAME])\n"
		"                       (--file PATH [--size BYTES] | --mem BYTES)\n"
		"                       [--block-size N] [--rx N] [--quiet]\n"
		"  --av NAME      the named AV clients of this machine find it in\n"
		"  --service N    serve on the well-known service N (1..65535) of this\n"
		"                 node, at HOST (a listener's address, kfabctl net listen)\n"
		"                 or its first listener: fi_kfab://HOST:PORT/N for kfab_blk's\n"
		"                 server=, from any node\n");
	exit(2);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		usage();
	return v;
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "av", required_argument, NULL, 'a' },
		{ "service", required_argument, NULL, 'S' },
		{ "node", required_argument, NULL, 'n' },
		{ "file", required_argument, NULL, 'f' },
		{ "size", required_argument, NULL, 's' },
		{ "mem", required_argument, NULL, 'm' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "rx", required_argument, NULL, 'r' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "a:S:n:f:s:m:b:r:qh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'a': opt.av_name = optarg; break;
		case 'S': opt.service = optarg; break;
		case 'n': opt.node = optarg; break;
		case 'f': opt.file = optarg; break;
		case 's': opt.size = parse_size(optarg); break;
		case 'm': opt.mem = parse_size(optarg); break;
		case 'b': opt.block_size = parse_size(optarg); break;
		case 'r': opt.nrx = parse_size(optarg); break;
		case 'q': opt.quiet = true; break;
		default: usage();
		}
	}
	if (optind != argc || (!opt.av_name && !opt.service) ||
	    (opt.node && !opt.service) || !!opt.file == !!opt.mem ||
	    !opt.nrx || opt.block_size < 512 || opt.block_size > 4096 ||
	    (opt.block_size & (opt.block_size - 1)))
		usage();
}

static void open_backing(void)
{
	struct stat st;

	if (opt.mem) {
		opt.size = opt.mem;
		mem = calloc(1, opt.size);
		if (!mem)
			die("calloc", -FI_ENOMEM);
		return;
	}
	fd = open(opt.file, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || fstat(fd, &st)) {
		perror(opt.file);
		exit(1);
	}
	if (opt.size && (uint64_t)st.st_size != opt.size &&
	    ftruncate(fd, opt.size)) {
		perror("ftruncate");
		exit(1);
	}
	if (!opt.size)
		opt.size = st.st_size;
	opt.size -= opt.size % opt.block_size;
	if (!opt.size) {
		fprintf(stderr, "kfab-blk-server: %s is empty (give --size)\n",
			opt.file);
		exit(1);
	}
}

/* Read or write @len bytes at @off of the backing store: 0 or an errno. */
static int backing_io(bool write, char *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (mem) {
		if (write)
			memcpy(mem + off, buf, len);
		else
			memcpy(buf, mem + off, len);
		return 0;
	}
	while (len) {
		n = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (!n)
			return EIO;
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}

static void setup_fabric(void)
{
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_TAGGED,
		.wait_obj = FI_WAIT_UNSPEC,
		.size = 4 * opt.nrx,
	};
	struct fi_av_attr av_attr = {
		.type = FI_AV_TABLE,
		.name = opt.av_name,
	};
	struct fi_info *hints, *info;
	struct kfab_addr self;
	size_t len = sizeof(self);
	char str[128];
	size_t slen = sizeof(str);
	fi_addr_t index;
	int ret;

	hints = fi_allocinfo();
	if (!hints)
		die("fi_allocinfo", -FI_ENOMEM);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_SOURCE;
	hints->fabric_attr->prov_name = strdup("kfab");
	/* With a service: this node's address of it is the source. */
	ret = fi_getinfo(FI_VERSION(1, 17), opt.node, opt.service,
			 opt.service ? FI_SOURCE : 0, hints, &info);
	if (ret)
		die(opt.service ? "fi_getinfo (--node, --service)" : "fi_getinfo",
		    ret);
	fi_freeinfo(hints);

	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (ret)
		die("fi_fabric", ret);
	ret = fi_domain(fabric, info, &domain, NULL);
	if (ret)
		die("fi_domain", ret);
	ret = fi_av_open(domain, &av_attr, &av, NULL);
	if (ret)
		die("fi_av_open", ret);
	ret = fi_cq_open(domain, &cq_attr, &cq, NULL);
	if (ret)
		die("fi_cq_open", ret);
	ret = fi_endpoint(domain, info, &ep, NULL);
	if (ret)
		die("fi_endpoint", ret);
	ret = fi_ep_bind(ep, &av->fid, 0);
	if (ret)
		die("fi_ep_bind (av)", ret);
	ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret)
		die("fi_ep_bind (cq)", ret);
	ret = fi_enable(ep);
	if (ret)
		die(opt.service ? "fi_enable (the service is taken?)" : "fi_enable",
		    ret);
	fi_freeinfo(info);

	ret = fi_getname(&ep->fid, &self, &len);
	if (ret)
		die("fi_getname", ret);
	ret = fi_av_insert(av, &self, 1, &index, 0, NULL);
	if (ret != 1)
		die("fi_av_insert (self)", ret < 0 ? ret : -FI_EINVAL);
	if (!fi_av_straddr(av, &self, str, &slen))
		snprintf(str, sizeof(str), "?");
	printf("kfab-blk-server: ep %" PRIu64 " index %" PRIu64 " size %" PRIu64
	       " addr %s\n", (uint64_t)be64toh(self.ep), (uint64_t)index,
	       opt.size, str);
	fflush(stdout);
}

static void post_rx(struct slot *s)
{
	int ret;

	do {
		ret = fi_recv(ep, s->rx_buf, RX_BUF_SIZE, NULL, FI_ADDR_UNSPEC,
			      &s->rx_ctx);
	} while (ret == -FI_EAGAIN);
	if (ret)
		die("fi_recv", ret);
}

/* Send the answer of @s; -FI_EAGAIN leaves it pending. */
static void send_answer(struct slot *s)
{
	int ret;

	ret = fi_tsenddata(ep, s->tx_ptr, s->tx_len, NULL, s->tx_status,
			   s->tx_dest, s->tx_tag, &s->tx_ctx);
	if (ret == -FI_EAGAIN) {
		s->pending = true;
		return;
	}
	s->pending = false;
	if (ret) {
		/* The client is gone: nothing to answer, take the next one. */
		if (!opt.quiet)
			fprintf(stderr, "kfab-blk-server: fi_tsenddata: %s\n",
				fi_strerror(-ret));
		post_rx(s);
	}
}

/* The source of a request: by the AV index, or by the address it gives. */
static fi_addr_t source_of(fi_addr_t src, const struct kfab_blk_req *req)
{
	fi_addr_t index;

	if (src != FI_ADDR_NOTAVAIL)
		return src;
	if (fi_av_insert(av, &req->client, 1, &index, 0, NULL) != 1)
		return FI_ADDR_NOTAVAIL;
	return index;
}

static void serve(struct slot *s, size_t len, fi_addr_t src)
{
	struct kfab_blk_req *req = (void *)s->rx_buf;
	int status = 0;

	s->tx_len = 0;
	s->tx_ptr = s->tx_buf;
	if (len < sizeof(*req) || req->magic != KFAB_BLK_MAGIC) {
		if (!opt.quiet)
			fprintf(stderr, "kfab-blk-server: a bad message (%zu bytes)\n",
				len);
		post_rx(s);
		return;
	}
	s->tx_tag = req->tag;
	s->tx_dest = source_of(src, req);
	if (s->tx_dest == FI_ADDR_NOTAVAIL) {
		post_rx(s);
		return;
	}
	switch (req->op) {
	case KFAB_BLK_OP_READ:
	case KFAB_BLK_OP_WRITE:
		if (req->len > KFAB_BLK_MAX_DATA || req->offset > opt.size ||
		    req->len > opt.size - req->offset ||
		    (req->op == KFAB_BLK_OP_WRITE &&
		     len != sizeof(*req) + req->len)) {
			status = EINVAL;
			break;
		}
		if (req->op == KFAB_BLK_OP_READ && mem) {
			/* Sent from where it is: the send copies it at once. */
			s->tx_ptr = mem + req->offset;
			s->tx_len = req->len;
		} else if (req->op == KFAB_BLK_OP_READ) {
			status = backing_io(false, s->tx_buf, req->len,
					    req->offset);
			if (!status)
				s->tx_len = req->len;
		} else {
			status = backing_io(true, s->rx_buf + sizeof(*req),
					    req->len, req->offset);
		}
		break;
	case KFAB_BLK_OP_FLUSH:
		if (fd >= 0 && fdatasync(fd))
			status = errno;
		break;
	case KFAB_BLK_OP_INFO: {
		struct kfab_blk_info info = {
			.size = opt.size,
			.block_size = opt.block_size,
		};

		memcpy(s->tx_buf, &info, sizeof(info));
		s->tx_len = sizeof(info);
		break;
	}
	default:
		status = EOPNOTSUPP;
	}
	s->tx_status = status;
	served++;
	send_answer(s);
}

static void handle_error(void)
{
	struct fi_cq_err_entry err = { 0 };
	struct slot *s;
	int ret;

	ret = fi_cq_readerr(cq, &err, 0);
	if (ret < 0)
		die("fi_cq_readerr", ret);
	if (!err.op_context)
		return;
	if (!opt.quiet)
		fprintf(stderr, "kfab-blk-server: %s failed: %s\n",
			err.flags & FI_RECV ? "a receive" : "an answer",
			fi_strerror(err.err));
	/* Either way the slot takes the next request. */
	if (err.flags & FI_RECV)
		s = (struct slot *)((char *)err.op_context -
				    offsetof(struct slot, rx_ctx));
	else
		s = (struct slot *)((char *)err.op_context -
				    offsetof(struct slot, tx_ctx));
	post_rx(s);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct fi_cq_tagged_entry comp[16];
	unsigned int i, npending;
	fi_addr_t src[16];
	int ret, j;

	parse_args(argc, argv);
	open_backing();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setup_fabric();

	slots = calloc(opt.nrx, sizeof(*slots));
	if (!slots)
		die("calloc", -FI_ENOMEM);
	for (i = 0; i < opt.nrx; i++) {
		slots[i].rx_buf = malloc(RX_BUF_SIZE);
		slots[i].tx_buf = malloc(KFAB_BLK_MAX_DATA);
		if (!slots[i].rx_buf || !slots[i].tx_buf)
			die("malloc", -FI_ENOMEM);
		post_rx(&slots[i]);
	}

	while (!stop) {
		npending = 0;
		for (i = 0; i < opt.nrx; i++)
			if (slots[i].pending) {
				send_answer(&slots[i]);
				npending += slots[i].pending;
			}
		/* A batch: one wake-up serves every request that came. */
		ret = fi_cq_sreadfrom(cq, comp, 16, src, NULL,
				      npending ? 1 : 200);
		if (ret == -FI_EAGAIN || ret == -FI_EINTR)
			continue;
		if (ret == -FI_EAVAIL) {
			handle_error();
			continue;
		}
		if (ret < 0)
			die("fi_cq_sreadfrom", ret);
		for (j = 0; j < ret; j++) {
			if (comp[j].flags & FI_RECV) {
				serve((struct slot *)comp[j].op_context,
				      comp[j].len, src[j]);
				continue;
			}
			/* The answer is out: the slot takes the next request. */
			post_rx((struct slot *)((char *)comp[j].op_context -
						offsetof(struct slot, tx_ctx)));
		}
	}

	if (!opt.quiet)
		fprintf(stderr, "kfab-blk-server: %lu requests served\n",
			served);
	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	for (i = 0; i < opt.nrx; i++) {
		free(slots[i].rx_buf);
		free(slots[i].tx_buf);
	}
	free(slots);
	free(mem);
	if (fd >= 0)
		close(fd);
	return 0;
}
