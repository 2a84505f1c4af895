// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab_nl_traffic: a known traffic pattern between two endpoints, for
 * selftests/kfab_netlink to check the endpoints' counters against.
 *
 * Endpoint A sends to endpoint B (both in this process, libfabric).  The
 * program says where it is on stdout and waits for a line on stdin
 * before going on, so that its reader can look at the counters:
 *
 *   "held A B"  A sent 1, 100, 4096 and 65536 bytes, B received them;
 *               then A sent two messages of 1000 bytes that B holds
 *               unexpected.  A and B are the endpoints' numbers.
 *   "done A B"  B received the two; A sent 300 bytes that B's receive
 *               of 100 truncated; B canceled a receive.
 *   "sent A B"  A sent 256 KiB from a page-aligned buffer, more than is
 *               copied eagerly: it stays pinned at A until B receives it.
 *   "posted A B" B received it; then B posted a receive of 512 KiB,
 *               page-aligned, that nothing matches: pinned at B.
 *   "gone A B"  B canceled that receive: nothing is pinned.
 *
 * Exits 0 after the fifth line on stdin, 1 (with a reason on stderr)
 * when a step fails.
 */
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>

#include <linux/kfab.h>

#include "kfab_test.h"

static const size_t sizes[] = { 1, 100, 4096, 65536 };
static char sbuf[65536], rbuf[65536];
/* Whole pages: what is pinned is known to the byte. */
#define BIG_SEND	(256 * 1024)
#define BIG_RECV	(512 * 1024)
static char big_s[BIG_SEND] __attribute__((aligned(4096)));
static char big_r[BIG_RECV] __attribute__((aligned(4096)));

#define FAIL(...) do { fprintf(stderr, "kfab_nl_traffic: " __VA_ARGS__); \
		       fputc('\n', stderr); exit(1); } while (0)

static uint64_t ep_num(struct fid_ep *ep)
{
	struct kfab_addr a;
	size_t len = sizeof(a);

	if (fi_getname(&ep->fid, &a, &len))
		FAIL("fi_getname");
	return be64toh(a.ep);
}

/* One completion of @s (progressing @other), its status. */
static int wait_one(struct kfab_test_fi *s, struct kfab_test_fi *other)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t rc = kfab_test_wait_cq(s->cq, other->cq, &e, NULL, &err, 10000);

	if (rc == -FI_EAVAIL)
		return -(int)err.err;
	if (rc != 1)
		FAIL("no completion: %zd", rc);
	return 0;
}

static void send_one(struct kfab_test_fi *a, struct kfab_test_fi *b,
		     fi_addr_t to, size_t len)
{
	if (fi_send(a->ep, sbuf, len, NULL, to, NULL))
		FAIL("fi_send %zu", len);
	if (wait_one(a, b))
		FAIL("send %zu failed", len);
}

static void recv_one(struct kfab_test_fi *b, struct kfab_test_fi *a,
		     size_t len, int want)
{
	if (fi_recv(b->ep, rbuf, len, NULL, FI_ADDR_UNSPEC, NULL))
		FAIL("fi_recv %zu", len);
	if (wait_one(b, a) != want)
		FAIL("receive of %zu: not status %d", len, want);
}

/*
 * One progress call on @s's CQ, which has nothing to report yet: a request
 * just posted reaches the kernel by then (a lazy ring rings at progress,
 * libshim/ring.c), not whenever the library's sweeper comes by.
 */
static void progress(struct kfab_test_fi *s)
{
	struct fi_cq_tagged_entry e;
	ssize_t rc = fi_cq_read(s->cq, &e, 1);

	if (rc != -FI_EAGAIN)
		FAIL("progress: %zd, not -FI_EAGAIN", rc);
}

static void step(const char *what, uint64_t a, uint64_t b)
{
	char line[16];

	printf("%s %llu %llu\n", what, (unsigned long long)a,
	       (unsigned long long)b);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		exit(1);
}

int main(void)
{
	struct kfab_test_fi a, b;
	struct kfab_addr addr;
	size_t len = sizeof(addr), i;
	fi_addr_t to;

	if (_test_fi_side_open(&a, kfab_test_rdm_hints(), true) ||
	    _test_fi_side_open(&b, kfab_test_rdm_hints(), true))
		FAIL("open the endpoints");
	if (fi_getname(&b.ep->fid, &addr, &len) ||
	    fi_av_insert(a.av, &addr, 1, &to, 0, NULL) != 1)
		FAIL("address B in A's AV");

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (fi_recv(b.ep, rbuf, sizes[i], NULL, FI_ADDR_UNSPEC, NULL))
			FAIL("fi_recv");
		send_one(&a, &b, to, sizes[i]);
		if (wait_one(&b, &a))
			FAIL("receive of %zu", sizes[i]);
	}
	send_one(&a, &b, to, 1000);
	send_one(&a, &b, to, 1000);
	step("held", ep_num(a.ep), ep_num(b.ep));

	recv_one(&b, &a, 1000, 0);
	recv_one(&b, &a, 1000, 0);
	send_one(&a, &b, to, 300);
	recv_one(&b, &a, 100, -FI_ETRUNC);
	if (fi_recv(b.ep, rbuf, 10, NULL, FI_ADDR_UNSPEC, (void *)1) ||
	    fi_cancel(&b.ep->fid, (void *)1) || wait_one(&b, &a) != -FI_ECANCELED)
		FAIL("a canceled receive");
	step("done", ep_num(a.ep), ep_num(b.ep));

	if (fi_send(a.ep, big_s, BIG_SEND, NULL, to, NULL))
		FAIL("fi_send of 256 KiB");
	progress(&a);
	step("sent", ep_num(a.ep), ep_num(b.ep));
	if (fi_recv(b.ep, big_r, BIG_RECV, NULL, FI_ADDR_UNSPEC, NULL) ||
	    wait_one(&b, &a) || wait_one(&a, &b))
		FAIL("the 256 KiB message");
	if (fi_recv(b.ep, big_r, BIG_RECV, NULL, FI_ADDR_UNSPEC, (void *)2))
		FAIL("fi_recv of 512 KiB");
	progress(&b);
	step("posted", ep_num(a.ep), ep_num(b.ep));
	if (fi_cancel(&b.ep->fid, (void *)2) ||
	    wait_one(&b, &a) != -FI_ECANCELED)
		FAIL("cancel the 512 KiB receive");
	step("gone", ep_num(a.ep), ep_num(b.ep));

	_test_fi_close(&a);
	_test_fi_close(&b);
	return 0;
}
