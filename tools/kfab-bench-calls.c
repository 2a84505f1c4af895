// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-bench-calls: the library calls of fi_pingpong's small-message loop,
 * with nothing to wait for, over any libfabric provider.
 *
 *   kfab-bench-calls -p PROV [-n MSGS] [-r REPS] [--thread-domain]
 *
 * Two endpoints of one process, A and B, each with its own domain, CQs and
 * AV holding the other.  One round: A posts a receive (fi_recv) and sends
 * B 8 bytes (fi_inject), B reads the message's completion (fi_cq_read);
 * then B does the same towards A.  That is what each side of fi_pingpong
 * -S 8 does per message, without the time one side spends waiting for the
 * other: under tools/kfab-insn-count.so (tools/kfab-bench-insn) the count
 * between the marks is what a message costs the library and the kernel on
 * the ping-pong's critical path, with none of the polling that moves with
 * the emulator's scheduling.
 *
 * Each of REPS repetitions sends MSGS messages (MSGS / 2 rounds) between
 * two marks (bench_mark()); the run starts with bench_mark_run(), after
 * one round that lets a provider meet its peer (shm maps it on the first
 * send, which fails with -FI_EAGAIN until both sides progress).  The
 * domains are opened as fi_pingpong opens them (threading left to the
 * provider: FI_THREAD_SAFE for kfab and shm), or with FI_THREAD_DOMAIN,
 * as MPI libraries and kfab-bench-rate ask.  Prints one line a
 * repetition: "calls: N msgs in T s".
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "kfab_bench_time.h"

#define MSG_SIZE	8
#define BUF_SIZE	64

struct side {
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *txcq;
	struct fid_cq *rxcq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	void *desc;
	fi_addr_t peer;
	struct fi_context2 ctx;
	char rbuf[BUF_SIZE];
	char sbuf[BUF_SIZE];
};

static struct fi_info *info;
static struct fid_fabric *fabric;

static void die(const char *what, int ret)
{
	fprintf(stderr, "kfab-bench-calls: %s: %s\n", what,
		fi_strerror(ret < 0 ? -ret : ret));
	exit(1);
}

static void open_side(struct side *s)
{
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_CONTEXT,
		.wait_obj = FI_WAIT_NONE,
		.size = 64,
	};
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int ret;

	ret = fi_domain(fabric, info, &s->domain, NULL);
	if (ret)
		die("fi_domain", ret);
	ret = fi_av_open(s->domain, &av_attr, &s->av, NULL);
	if (ret)
		die("fi_av_open", ret);
	ret = fi_cq_open(s->domain, &cq_attr, &s->txcq, NULL);
	if (!ret)
		ret = fi_cq_open(s->domain, &cq_attr, &s->rxcq, NULL);
	if (ret)
		die("fi_cq_open", ret);
	if (info->domain_attr->mr_mode & FI_MR_LOCAL) {
		ret = fi_mr_reg(s->domain, s->rbuf, BUF_SIZE, FI_RECV, 0, 0, 0,
				&s->mr, NULL);
		if (ret)
			die("fi_mr_reg", ret);
		s->desc = fi_mr_desc(s->mr);
	}
	ret = fi_endpoint(s->domain, info, &s->ep, NULL);
	if (ret)
		die("fi_endpoint", ret);
	ret = fi_ep_bind(s->ep, &s->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(s->ep, &s->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(s->ep, &s->rxcq->fid, FI_RECV);
	if (ret)
		die("fi_ep_bind", ret);
	ret = fi_enable(s->ep);
	if (ret)
		die("fi_enable", ret);
}

/* @s's AV gets @to's address: s->peer. */
static void meet(struct side *s, struct side *to)
{
	char name[256];
	size_t len = sizeof(name);
	int ret;

	ret = fi_getname(&to->ep->fid, name, &len);
	if (ret)
		die("fi_getname", ret);
	if (fi_av_insert(s->av, name, 1, &s->peer, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
}

static void post_recv(struct side *s)
{
	ssize_t ret;

	do
		ret = fi_recv(s->ep, s->rbuf, BUF_SIZE, s->desc, FI_ADDR_UNSPEC,
			      &s->ctx);
	while (ret == -FI_EAGAIN);
	if (ret)
		die("fi_recv", (int)ret);
}

/* Progress of @s's endpoint: a read of its transmit CQ, which stays empty. */
static void progress(struct side *s)
{
	struct fi_cq_entry e;

	(void)fi_cq_read(s->txcq, &e, 1);
}

/*
 * fi_pingpong's pp_inject(): its completion is not reported.  A provider
 * may want both sides to progress first (shm's first send to a peer waits
 * for the peer to map it), as fi_pingpong's retry does.
 */
static void inject(struct side *s, struct side *to)
{
	ssize_t ret;

	while ((ret = fi_inject(s->ep, s->sbuf, MSG_SIZE, s->peer)) ==
	       -FI_EAGAIN) {
		progress(s);
		progress(to);
	}
	if (ret)
		die("fi_inject", (int)ret);
}

/* fi_pingpong's pp_get_rx_comp(): one receive's completion. */
static void recv_done(struct side *s, struct side *from)
{
	struct fi_cq_entry e;
	ssize_t ret;

	while ((ret = fi_cq_read(s->rxcq, &e, 1)) == -FI_EAGAIN)
		progress(from);
	if (ret != 1)
		die("fi_cq_read", ret < 0 ? (int)ret : -FI_EOTHER);
}

/* A message each way, A's receive for the next one posted before. */
static void round_trip(struct side *a, struct side *b)
{
	post_recv(a);
	inject(a, b);
	recv_done(b, a);
	post_recv(b);
	inject(b, a);
	recv_done(a, b);
}

static void usage(void)
{
	fprintf(stderr, "usage: kfab-bench-calls -p PROV [-n MSGS] [-r REPS] [--thread-domain]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "thread-domain", no_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	struct side a = { 0 }, b = { 0 };
	struct fi_info *hints;
	const char *prov = NULL;
	long msgs = 20000, reps = 2, i, r;
	bool thread_domain = false;
	int c, ret;

	while ((c = getopt_long(argc, argv, "p:n:r:", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			prov = optarg;
			break;
		case 'n':
			msgs = strtol(optarg, NULL, 0);
			break;
		case 'r':
			reps = strtol(optarg, NULL, 0);
			break;
		case 'D':
			thread_domain = true;
			break;
		default:
			usage();
		}
	}
	if (!prov || msgs < 2 || reps < 1)
		usage();

	hints = fi_allocinfo();
	if (!hints)
		die("fi_allocinfo", -FI_ENOMEM);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED |
				      FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	if (thread_domain)
		hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(prov);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		die("fi_getinfo", ret);
	if (info->tx_attr->inject_size < MSG_SIZE)
		die("inject_size", -FI_EMSGSIZE);
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (ret)
		die("fi_fabric", ret);
	open_side(&a);
	open_side(&b);
	meet(&a, &b);
	meet(&b, &a);

	/*
	 * B's first receive; later ones are posted as in fi_pingpong.  One
	 * round before the marks: a provider's first message to a peer may
	 * cost it more than the others (shm maps the peer).
	 */
	post_recv(&b);
	round_trip(&a, &b);
	bench_mark_run();
	for (r = 0; r < reps; r++) {
		double t0, t1;

		bench_mark();
		t0 = now();
		for (i = 0; i < msgs / 2; i++)
			round_trip(&a, &b);
		t1 = now();
		bench_mark();
		printf("calls: %ld msgs in %.3f s\n", msgs / 2 * 2, t1 - t0);
	}
	fflush(stdout);
	/* B's last receive stays posted: closing the endpoint cancels it. */
	fi_close(&a.ep->fid);
	fi_close(&b.ep->fid);
	return 0;
}
