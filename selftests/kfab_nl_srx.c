// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab_nl_srx: a known traffic pattern through a shared receive context,
 * for selftests/kfab_netlink to check the SRX's counters (and its two
 * endpoints') against.
 *
 * Endpoints E0 and E1 receive through one SRX; a sender S of another
 * fabric sends them tagged messages (libfabric, one process).  The
 * program says where it is on stdout ("STEP E0 E1", the endpoints'
 * numbers) and waits for a line on stdin before going on:
 *
 *   "held E0 E1"  two receives posted on the SRX took 10 bytes sent to
 *                 E0 and 20 sent to E1; then 50 bytes to E0 (tag 3) and
 *                 70 to E1 (tag 4) found no receive: both held.
 *   "done E0 E1"  FI_PEEK|FI_CLAIM found the 50 bytes, FI_CLAIM received
 *                 them (one receive); 200 bytes to E1 truncated by a
 *                 receive of 100; a receive canceled (reported on E0);
 *                 a peek for a tag nobody sent (-FI_ENOMSG, no receive).
 *                 The 70 bytes are still held.
 *   "drained E0 E1" a receive took the 70 bytes: nothing held.
 *
 * So at "done" the SRX counts 3 receives of 80 bytes, 2 errors (1
 * truncated, 1 canceled), 1 message held of the 2 ever held.  Exits 0
 * after the third line on stdin, 1 (a reason on stderr) when a step
 * fails.
 */
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <linux/kfab.h>

#include "kfab_test.h"

#define TIMEOUT_MS	10000

#define FAIL(...) do { fprintf(stderr, "kfab_nl_srx: " __VA_ARGS__); \
		       fputc('\n', stderr); exit(1); } while (0)

/* The receiving side: one SRX, two endpoints with a CQ each. */
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_ep *srx, *ep[2];
static struct fid_cq *cq[2];
static struct kfab_test_fi s;		/* the sender */
static fi_addr_t to[2];			/* E0, E1 in the sender's AV */
static char sbuf[256], rbuf[4][256];

static struct fi_info *hints(bool shared)
{
	struct fi_info *h = kfab_test_rdm_hints();

	if (!h)
		FAIL("hints");
	h->ep_attr->rx_ctx_cnt = shared ? FI_SHARED_CONTEXT : 0;
	return h;
}

static uint64_t ep_num(struct fid_ep *e)
{
	struct kfab_addr a;
	size_t len = sizeof(a);

	if (fi_getname(&e->fid, &a, &len))
		FAIL("fi_getname");
	return be64toh(a.ep);
}

static void open_receivers(void)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_info *h = hints(true);
	struct kfab_addr name;
	size_t len;
	int i;

	if (fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, h, &info) ||
	    fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL) ||
	    fi_av_open(domain, &av_attr, &av, NULL) ||
	    fi_srx_context(domain, info->rx_attr, &srx, NULL))
		FAIL("open the receiving domain and its SRX");
	fi_freeinfo(h);
	if (_test_fi_side_open(&s, hints(false), true))
		FAIL("open the sender");
	for (i = 0; i < 2; i++) {
		len = sizeof(name);
		if (fi_cq_open(domain, &cq_attr, &cq[i], NULL) ||
		    fi_endpoint(domain, info, &ep[i], NULL) ||
		    fi_ep_bind(ep[i], &av->fid, 0) ||
		    fi_ep_bind(ep[i], &srx->fid, 0) ||
		    fi_ep_bind(ep[i], &cq[i]->fid, FI_TRANSMIT | FI_RECV) ||
		    fi_enable(ep[i]) ||
		    fi_getname(&ep[i]->fid, &name, &len) ||
		    fi_av_insert(s.av, &name, 1, &to[i], 0, NULL) != 1)
			FAIL("endpoint %d", i);
	}
}

/* The next completion on E@i: its status (0 or a negative FI_E*). */
static int wait_rx(int i, size_t *len)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t rc = kfab_test_wait_cq(cq[i], s.cq, &e, NULL, &err,
				       TIMEOUT_MS);

	if (rc == -FI_EAVAIL)
		return -(int)err.err;
	if (rc != 1)
		FAIL("no completion on E%d: %zd", i, rc);
	if (len)
		*len = e.len;
	return 0;
}

/* @n bytes tagged @tag to E@i, the send seen done. */
static void send_to(int i, size_t n, uint64_t tag)
{
	struct fi_cq_tagged_entry e;

	if (fi_tsend(s.ep, sbuf, n, NULL, to[i], tag, NULL))
		FAIL("fi_tsend of %zu", n);
	if (kfab_test_wait_cq(s.cq, NULL, &e, NULL, NULL, TIMEOUT_MS) != 1)
		FAIL("the send of %zu", n);
}

static void post(char *buf, size_t n, uint64_t tag, void *context)
{
	if (fi_trecv(srx, buf, n, NULL, FI_ADDR_UNSPEC, tag, 0, context))
		FAIL("fi_trecv tag %llu", (unsigned long long)tag);
}

static ssize_t trecvmsg(void *buf, size_t n, uint64_t tag, void *context,
			uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = n };
	struct fi_msg_tagged msg = {
		.msg_iov = &iov, .iov_count = buf ? 1 : 0,
		.addr = FI_ADDR_UNSPEC, .tag = tag, .context = context,
	};

	return fi_trecvmsg(srx, &msg, flags);
}

static void expect(int i, int status, size_t want_len, const char *what)
{
	size_t len = 0;
	int rc = wait_rx(i, &len);

	if (rc != status || (!status && len != want_len))
		FAIL("%s: status %d, %zu bytes", what, rc, len);
}

static void step(const char *what)
{
	char line[16];

	printf("%s %llu %llu\n", what, (unsigned long long)ep_num(ep[0]),
	       (unsigned long long)ep_num(ep[1]));
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		exit(1);
}

int main(void)
{
	struct fi_context claim;
	int i;

	open_receivers();

	post(rbuf[0], 100, 1, NULL);
	post(rbuf[1], 100, 2, NULL);
	send_to(0, 10, 1);
	send_to(1, 20, 2);
	expect(0, 0, 10, "10 bytes to E0");
	expect(1, 0, 20, "20 bytes to E1");
	send_to(0, 50, 3);
	send_to(1, 70, 4);
	step("held");

	if (trecvmsg(NULL, 0, 3, &claim, FI_PEEK | FI_CLAIM))
		FAIL("FI_PEEK|FI_CLAIM");
	expect(0, 0, 50, "the peek");
	if (trecvmsg(rbuf[2], 100, 3, &claim, FI_CLAIM))
		FAIL("FI_CLAIM");
	expect(0, 0, 50, "the claim");
	post(rbuf[3], 100, 5, NULL);
	send_to(1, 200, 5);
	expect(1, -FI_ETRUNC, 0, "200 bytes into 100");
	post(rbuf[0], 100, 6, (void *)6);
	if (fi_cancel(&srx->fid, (void *)6))
		FAIL("fi_cancel");
	expect(0, -FI_ECANCELED, 0, "the canceled receive");
	if (trecvmsg(NULL, 0, 99, &claim, FI_PEEK))
		FAIL("FI_PEEK for nothing");
	expect(0, -FI_ENOMSG, 0, "the peek for nothing");
	step("done");

	post(rbuf[1], 100, 4, NULL);
	expect(1, 0, 70, "the 70 bytes held");
	step("drained");

	_test_fi_close(&s);
	for (i = 0; i < 2; i++) {
		fi_close(&ep[i]->fid);
		fi_close(&cq[i]->fid);
	}
	fi_close(&srx->fid);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return 0;
}
