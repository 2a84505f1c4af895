// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-sep-node: a scalable endpoint's receive contexts reached from
 * another node (selftests/kfab_net runs it on the netns bed).
 *
 *   kfab-sep-node recv FILE N    a scalable endpoint with N receive
 *                                contexts, its address (hex) into FILE
 *   kfab-sep-node send FILE N    to each context i of the address in
 *                                FILE, fi_rx_addr(addr, i, 8): the int i
 *
 * The receiver checks that context i gets exactly the message i (sent in
 * reverse order, so arrival order cannot pass for routing); the sender
 * checks that every send completes and that index N, beyond the target's
 * contexts, is an FI_EHOSTUNREACH error completion.  First it sends a
 * burst of tagged messages without waiting, every other one to index N:
 * context 0 holds the others (it posts no tagged receive), so each send
 * to it must complete without error and each one beyond must fail, each
 * with its own context, though the receiving node acknowledges the burst
 * in a few frames (an error must never be overtaken by the
 * acknowledgment of its message).  Exit 0, or 1 with a reason.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "kfab_test.h"

#define SEP_MAX		16
#define RX_BITS		8
#define TIMEOUT_MS	60000
#define BURST		256

static int die(const char *what, int rc)
{
	fprintf(stderr, "kfab-sep-node: %s: %d (%s)\n", what, rc,
		fi_strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static void ok(const char *what, int rc)
{
	if (rc)
		die(what, rc);
}

static struct fi_info *open_domain(int n, struct fid_fabric **fabric,
				   struct fid_domain **domain)
{
	struct fi_info *hints = kfab_test_rdm_hints(), *info;

	if (!hints)
		die("hints", -FI_ENOMEM);
	hints->caps |= FI_NAMED_RX_CTX;
	hints->ep_attr->rx_ctx_cnt = (size_t)n;
	ok("fi_getinfo", fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0,
				    hints, &info));
	fi_freeinfo(hints);
	ok("fi_fabric", fi_fabric(info->fabric_attr, fabric, NULL));
	ok("fi_domain", fi_domain(*fabric, info, domain, NULL));
	return info;
}

static int do_recv(const char *file, int n)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_ep *sep, *rx[SEP_MAX];
	struct fid_cq *cq[SEP_MAX];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fid_domain *domain;
	struct fid_fabric *fabric;
	unsigned char name[64];
	size_t len = sizeof(name);
	int got[SEP_MAX], i;
	struct fi_info *info;
	struct fid_av *av;
	char tmp[4096];
	FILE *f;

	info = open_domain(n, &fabric, &domain);
	ok("fi_av_open", fi_av_open(domain, &av_attr, &av, NULL));
	ok("fi_scalable_ep", fi_scalable_ep(domain, info, &sep, NULL));
	ok("fi_scalable_ep_bind", fi_scalable_ep_bind(sep, &av->fid, 0));
	for (i = 0; i < n; i++) {
		got[i] = -1;
		ok("fi_cq_open", fi_cq_open(domain, &cq_attr, &cq[i], NULL));
		ok("fi_rx_context", fi_rx_context(sep, i, NULL, &rx[i], NULL));
		ok("fi_ep_bind", fi_ep_bind(rx[i], &cq[i]->fid, FI_RECV));
		ok("fi_enable", fi_enable(rx[i]));
		ok("fi_recv", (int)fi_recv(rx[i], &got[i], sizeof(got[i]),
					   NULL, FI_ADDR_UNSPEC, NULL));
	}
	ok("fi_enable(sep)", fi_enable(sep));
	ok("fi_getname", fi_getname(&sep->fid, name, &len));
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	f = fopen(tmp, "w");
	if (!f)
		die("fopen", -FI_EIO);
	for (i = 0; i < (int)len; i++)
		fprintf(f, "%02x", name[i]);
	fclose(f);
	if (rename(tmp, file))
		die("rename", -FI_EIO);
	for (i = 0; i < n; i++) {
		if (kfab_test_wait_cq(cq[i], NULL, &e, NULL, &err,
				      TIMEOUT_MS) != 1)
			die("a receive did not complete", i);
		if (got[i] != i)
			die("a context got another's message", got[i]);
	}
	for (i = 0; i < n; i++) {
		if (fi_cq_read(cq[i], &e, 1) != -FI_EAGAIN)
			die("a context got a second message", i);
		ok("fi_close(rx)", fi_close(&rx[i]->fid));
		ok("fi_close(cq)", fi_close(&cq[i]->fid));
	}
	ok("fi_close(sep)", fi_close(&sep->fid));
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return 0;
}

/* The burst: even sends to context 0 succeed, odd ones to @n fail. */
static void send_burst(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t to,
		       int n)
{
	static int vals[BURST];
	static bool done[BURST];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int posted = 0, ended = 0, i;
	uint64_t end = kfab_now_ms() + TIMEOUT_MS;
	ssize_t rc;

	while (ended < BURST && kfab_now_ms() < end) {
		if (posted < BURST) {
			vals[posted] = posted;
			rc = fi_tsend(ep, &vals[posted], sizeof(int), NULL,
				      fi_rx_addr(to, posted % 2 ? n : 0,
						 RX_BITS),
				      0x5e9, &vals[posted]);
			if (rc && rc != -FI_EAGAIN)
				die("fi_tsend (burst)", (int)rc);
			if (!rc)
				posted++;
		}
		rc = fi_cq_read(cq, &e, 1);
		if (rc == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(cq, &err, 0) != 1)
				die("fi_cq_readerr (burst)", -FI_EOTHER);
			i = (int *)err.op_context - vals;
			if (i < 0 || i >= posted || done[i] || !(i % 2) ||
			    err.err != FI_EHOSTUNREACH)
				die("a burst send failed wrongly", i);
		} else if (rc == 1) {
			i = (int *)e.op_context - vals;
			if (i < 0 || i >= posted || done[i] || i % 2)
				die("a burst send to nowhere completed", i);
		} else if (rc == -FI_EAGAIN) {
			continue;
		} else {
			die("fi_cq_read (burst)", (int)rc);
		}
		done[i] = true;
		ended++;
	}
	if (ended < BURST)
		die("burst sends did not complete", ended);
}

static int do_send(const char *file, int n)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE,
				      .rx_ctx_bits = RX_BITS };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fid_domain *domain;
	struct fid_fabric *fabric;
	unsigned char name[64];
	unsigned int byte;
	int vals[SEP_MAX + 1], i, tries;
	struct fi_info *info;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t to;
	size_t len = 0;
	FILE *f = NULL;

	for (tries = 0; tries < 600 && !f; tries++) {
		f = fopen(file, "r");
		if (!f)
			usleep(100000);
	}
	if (!f)
		die("no address file", -FI_ETIMEDOUT);
	while (len < sizeof(name) && fscanf(f, "%2x", &byte) == 1)
		name[len++] = (unsigned char)byte;
	fclose(f);
	info = open_domain(1, &fabric, &domain);
	ok("fi_av_open", fi_av_open(domain, &av_attr, &av, NULL));
	ok("fi_cq_open", fi_cq_open(domain, &cq_attr, &cq, NULL));
	ok("fi_endpoint", fi_endpoint(domain, info, &ep, NULL));
	ok("fi_ep_bind", fi_ep_bind(ep, &av->fid, 0));
	ok("fi_ep_bind", fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	ok("fi_enable", fi_enable(ep));
	if (fi_av_insert(av, name, 1, &to, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	send_burst(ep, cq, to, n);
	for (i = n - 1; i >= 0; i--) {
		vals[i] = i;
		ok("fi_send", (int)fi_send(ep, &vals[i], sizeof(vals[i]), NULL,
					   fi_rx_addr(to, i, RX_BITS), NULL));
		if (kfab_test_wait_cq(cq, NULL, &e, NULL, &err,
				      TIMEOUT_MS) != 1)
			die("a send failed", (int)err.err);
	}
	vals[n] = n;
	ok("fi_send", (int)fi_send(ep, &vals[n], sizeof(vals[n]), NULL,
				   fi_rx_addr(to, n, RX_BITS), NULL));
	if (kfab_test_wait_cq(cq, NULL, &e, NULL, &err, TIMEOUT_MS) !=
	    -FI_EAVAIL || err.err != FI_EHOSTUNREACH)
		die("a send beyond the contexts did not fail", (int)err.err);
	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return 0;
}

int main(int argc, char **argv)
{
	int n;

	if (argc != 4 || (n = atoi(argv[3])) < 1 || n > SEP_MAX) {
		fprintf(stderr, "usage: kfab-sep-node recv|send FILE N\n");
		return 2;
	}
	if (!strcmp(argv[1], "recv"))
		return do_recv(argv[2], n);
	if (!strcmp(argv[1], "send"))
		return do_send(argv[2], n);
	fprintf(stderr, "usage: kfab-sep-node recv|send FILE N\n");
	return 2;
}
