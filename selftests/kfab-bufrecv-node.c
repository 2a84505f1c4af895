// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-bufrecv-node: buffered receives (FI_BUFFERED_RECV) of messages from
 * another node (selftests/kfab_net runs it on the netns bed).
 *
 *   kfab-bufrecv-node recv FILE   an endpoint with FI_BUFFERED_RECV,
 *                                 total_buffered_recv SLOTS * LIMIT and
 *                                 FI_OPT_BUFFERED_LIMIT LIMIT, its
 *                                 address (hex) into FILE
 *   kfab-bufrecv-node send FILE   COUNT messages to the address in FILE,
 *                                 4 bytes to 16 KiB (eager on the wire)
 *                                 and 40 KiB (rendezvous: the receiver
 *                                 pulls their start into the slot, and
 *                                 the rest at the claim)
 *
 * The receiver posts no receive.  It waits until every slot holds a
 * message (SLOTS notices, each with its whole length, FI_MORE past the
 * limit and the start of the message in buf), sees that no more come
 * while the slots are full, then claims (those longer than a slot, and
 * every third) or discards them one by one; each slot given back lets a
 * waiting message in, until all COUNT arrived, in the order sent,
 * intact.  Exit 0, or 1 with a reason.
 */
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

#include <linux/kfab.h>

#include "kfab_test.h"

#define LIMIT		256
#define SLOTS		KFAB_BUFRECV_SLOTS_DEFAULT
#define COUNT		(SLOTS + 16)
#define EAGER_MAX	(16 * 1024)	/* kernel/wire.h KFAB_WIRE_EAGER_MAX */
#define MAX_LEN		(40 * 1024)
#define TIMEOUT_MS	60000

static int die(const char *what, long rc)
{
	fprintf(stderr, "kfab-bufrecv-node: %s: %ld (%s)\n", what, rc,
		fi_strerror(rc < 0 ? (int)-rc : (int)rc));
	exit(1);
}

static void ok(const char *what, long rc)
{
	if (rc)
		die(what, rc);
}

/* Message @i: its length, and its bytes (the index first). */
static size_t msg_len(int i)
{
	static const size_t lens[] = { 4, 100, LIMIT, LIMIT + 1, 3000,
				       EAGER_MAX, MAX_LEN };

	return lens[i % (sizeof(lens) / sizeof(lens[0]))];
}

static void msg_fill(uint8_t *p, int i)
{
	size_t k, len = msg_len(i);

	for (k = 0; k < len; k++)
		p[k] = (uint8_t)(i * 7 + k * 13);
	memcpy(p, &i, sizeof(i));
}

static struct fi_info *open_side(bool buffered, struct fid_fabric **fabric,
				 struct fid_domain **domain, struct fid_av **av,
				 struct fid_cq **cq, struct fid_ep **ep)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_info *hints = kfab_test_rdm_hints(), *info;
	size_t limit = LIMIT;

	if (!hints)
		die("hints", -FI_ENOMEM);
	if (buffered) {
		hints->mode = FI_BUFFERED_RECV | FI_CONTEXT;
		/* SLOTS slots of LIMIT bytes: the region is total / limit. */
		hints->rx_attr->total_buffered_recv = (size_t)SLOTS * LIMIT;
	}
	ok("fi_getinfo", fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0,
				    hints, &info));
	fi_freeinfo(hints);
	if (buffered && !(info->mode & FI_BUFFERED_RECV))
		die("no FI_BUFFERED_RECV in the answer", -FI_ENODATA);
	ok("fi_fabric", fi_fabric(info->fabric_attr, fabric, NULL));
	ok("fi_domain", fi_domain(*fabric, info, domain, NULL));
	ok("fi_av_open", fi_av_open(*domain, &av_attr, av, NULL));
	ok("fi_cq_open", fi_cq_open(*domain, &cq_attr, cq, NULL));
	ok("fi_endpoint", fi_endpoint(*domain, info, ep, NULL));
	if (buffered)
		ok("fi_setopt", fi_setopt(&(*ep)->fid, FI_OPT_ENDPOINT,
					  FI_OPT_BUFFERED_LIMIT, &limit,
					  sizeof(limit)));
	ok("fi_ep_bind", fi_ep_bind(*ep, &(*av)->fid, 0));
	ok("fi_ep_bind", fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV));
	ok("fi_enable", fi_enable(*ep));
	return info;
}

/*
 * Notices read while waiting for a claim's completion (a claim of a
 * message pulled from the sender completes when its bytes are in; the
 * slot it gave back may have been noticed again before that).
 */
static struct fi_cq_tagged_entry early[COUNT];
static int early_head, early_tail;

/* One notice: the message it names must be @want, whole and in place. */
static struct fi_recv_context *notice(struct fid_cq *cq, int want,
				      bool *more)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t exp[MAX_LEN];
	size_t len = msg_len(want), first = len < LIMIT ? len : LIMIT;
	struct fi_recv_context *rc;
	int idx;

	if (early_head != early_tail)
		e = early[early_head++];
	else if (kfab_test_wait_cq(cq, NULL, &e, NULL, &err,
				   TIMEOUT_MS) != 1)
		die("no notice", want);
	rc = e.op_context;
	if (!rc || e.len != len || !e.buf)
		die("a notice with the wrong length", (long)e.len);
	memcpy(&idx, e.buf, sizeof(idx));
	if (idx != want)
		die("a message out of order", idx);
	*more = e.flags & FI_MORE;
	if (*more != (len > LIMIT))
		die("FI_MORE wrong for a message of", (long)len);
	msg_fill(exp, want);
	if (memcmp(e.buf, exp, first))
		die("a slot that does not hold its message", want);
	return rc;
}

/* Claim (whole) or discard message @i, named by @rc. */
static void give_back(struct fid_ep *ep, struct fid_cq *cq,
		      struct fi_recv_context *rc, int i, bool claim)
{
	static uint8_t in[MAX_LEN], exp[MAX_LEN];
	struct iovec iov = { .iov_base = in, .iov_len = sizeof(in) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	msg.context = rc;
	rc->context = &msg;
	memset(in, 0, sizeof(in));
	ok(claim ? "FI_CLAIM" : "FI_DISCARD",
	   fi_recvmsg(ep, &msg, claim ? FI_CLAIM : FI_DISCARD));
	for (;;) {
		if (kfab_test_wait_cq(cq, NULL, &e, NULL, &err,
				      TIMEOUT_MS) != 1)
			die("a claim or discard failed", err.err);
		if (e.op_context == &msg)
			break;
		if (early_tail == COUNT)
			die("too many notices", early_tail);
		early[early_tail++] = e;
	}
	if (!claim)
		return;
	msg_fill(exp, i);
	if (e.op_context != &msg || !(e.flags & FI_CLAIM) ||
	    e.len != msg_len(i) || memcmp(in, exp, msg_len(i)))
		die("a claim did not get its message whole", i);
}

static int do_recv(const char *file)
{
	struct fi_recv_context *rc[COUNT];
	struct fid_domain *domain;
	struct fid_fabric *fabric;
	struct fi_cq_tagged_entry e;
	unsigned char name[64];
	size_t len = sizeof(name);
	struct fi_info *info;
	bool more[COUNT];
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	char tmp[4096];
	int i, next;
	FILE *f;

	info = open_side(true, &fabric, &domain, &av, &cq, &ep);
	ok("fi_getname", fi_getname(&ep->fid, name, &len));
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	f = fopen(tmp, "w");
	if (!f)
		die("fopen", -FI_EIO);
	for (i = 0; i < (int)len; i++)
		fprintf(f, "%02x", name[i]);
	fclose(f);
	if (rename(tmp, file))
		die("rename", -FI_EIO);
	/* Every slot taken... */
	for (i = 0; i < SLOTS; i++)
		rc[i] = notice(cq, i, &more[i]);
	/* ...and the rest wait. */
	if (kfab_test_wait_cq(cq, NULL, &e, NULL, NULL, 1000) != -FI_EAGAIN)
		die("a notice with every slot full", 0);
	for (i = 0, next = SLOTS; i < COUNT; i++) {
		give_back(ep, cq, rc[i], i, more[i] || i % 3 == 0);
		/* The slot given back takes the next message waiting. */
		if (next < COUNT) {
			rc[next] = notice(cq, next, &more[next]);
			next++;
		}
	}
	if (early_head != early_tail || fi_cq_read(cq, &e, 1) != -FI_EAGAIN)
		die("a notice too many", 0);
	printf("kfab-bufrecv-node: %d messages, %d slots: ok\n", COUNT,
	       SLOTS);
	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return 0;
}

static int do_send(const char *file)
{
	static uint8_t out[COUNT][MAX_LEN];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fid_domain *domain;
	struct fid_fabric *fabric;
	unsigned char name[64];
	unsigned int byte;
	int i, tries, done = 0;
	struct fi_info *info;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t to;
	size_t len = 0;
	FILE *f = NULL;
	ssize_t rc;

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
	info = open_side(false, &fabric, &domain, &av, &cq, &ep);
	if (fi_av_insert(av, name, 1, &to, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	for (i = 0; i < COUNT; i++) {
		msg_fill(out[i], i);
		while ((rc = fi_send(ep, out[i], msg_len(i), NULL, to,
				     NULL)) == -FI_EAGAIN)
			if (fi_cq_read(cq, &e, 1) == 1)
				done++;
		ok("fi_send", rc);
	}
	while (done < COUNT) {
		if (kfab_test_wait_cq(cq, NULL, &e, NULL, &err,
				      TIMEOUT_MS) != 1)
			die("a send failed", err.err);
		done++;
	}
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
	if (argc == 3 && !strcmp(argv[1], "recv"))
		return do_recv(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "send"))
		return do_send(argv[2]);
	fprintf(stderr, "usage: kfab-bufrecv-node recv|send FILE\n");
	return 2;
}
