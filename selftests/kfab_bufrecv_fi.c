// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Buffered receives through libfabric (fi_msg(3) "Buffered Receives",
 * fi_endpoint(3) FI_OPT_BUFFERED_LIMIT/MIN): an application that sets
 * FI_BUFFERED_RECV gets completions whose op_context is a struct
 * fi_recv_context and whose buf is the message where the kernel put it,
 * and claims or discards them with fi_recvmsg()/fi_trecvmsg().
 *
 * Needs /dev/kfab (the VM); on the host every test SKIPs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <linux/kfab.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

#define LIMIT	256
#define WAIT_MS	5000

static struct fi_info *buffered_hints(void)
{
	struct fi_info *hints = kfab_test_rdm_hints();

	if (hints)
		hints->mode = FI_BUFFERED_RECV | FI_CONTEXT;
	return hints;
}

FIXTURE(bfi) {
	struct kfab_test_fi rx, tx;
	fi_addr_t to_rx;
	uint8_t out[4096], in[4096];
};

FIXTURE_SETUP(bfi)
{
	size_t limit = LIMIT;

	self->rx = self->tx = (struct kfab_test_fi){ 0 };
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, _test_fi_side_open(&self->rx, buffered_hints(), false));
	ASSERT_TRUE(self->rx.info->mode & FI_BUFFERED_RECV);
	ASSERT_EQ(0, fi_setopt(&self->rx.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &limit, sizeof(limit)));
	ASSERT_EQ(0, fi_ep_bind(self->rx.ep, &self->rx.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(self->rx.ep, &self->rx.cq->fid,
				FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(self->rx.ep));
	ASSERT_EQ(0, _test_fi_side_open(&self->tx, kfab_test_rdm_hints(),
					true));
	ASSERT_EQ(1, kfab_test_fi_insert_peer(&self->tx, &self->rx,
					      &self->to_rx));
}

FIXTURE_TEARDOWN(bfi)
{
	_test_fi_close(&self->rx);
	_test_fi_close(&self->tx);
}

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 13 + i);
}

/* A send from tx to rx and the notice of it at rx. */
static int send_and_notice(FIXTURE_DATA(bfi) *self, size_t len, bool tagged,
			   struct fi_cq_tagged_entry *e)
{
	ssize_t rc;

	fill(self->out, len, (uint8_t)len);
	rc = tagged ? fi_tsend(self->tx.ep, self->out, len, NULL,
			       self->to_rx, 0x77, self->out) :
		      fi_send(self->tx.ep, self->out, len, NULL, self->to_rx,
			      self->out);
	if (rc)
		return (int)rc;
	return (int)kfab_test_wait_cq(self->rx.cq, self->tx.cq, e, NULL, NULL,
				      WAIT_MS);
}

TEST_F(bfi, notice_points_at_the_message_then_discard)
{
	size_t sizes[] = { 1, 100, LIMIT, LIMIT + 1, 3000 };
	struct fi_cq_tagged_entry e, d;
	struct fi_recv_context *rc;
	struct fi_msg msg = { 0 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t len = sizes[i];

		ASSERT_EQ(1, send_and_notice(self, len, false, &e));
		EXPECT_EQ(FI_RECV | FI_MSG | (len > LIMIT ? FI_MORE : 0),
			  e.flags);
		EXPECT_EQ(len, e.len);
		rc = e.op_context;
		ASSERT_NE(NULL, rc);
		EXPECT_EQ(self->rx.ep, rc->ep);
		EXPECT_EQ(NULL, rc->context);
		EXPECT_EQ(0, memcmp(e.buf, self->out,
				    len < LIMIT ? len : LIMIT));
		msg.context = rc;
		ASSERT_EQ(0, fi_recvmsg(self->rx.ep, &msg, FI_DISCARD));
		ASSERT_EQ(1, kfab_test_wait_cq(self->rx.cq, self->tx.cq, &d,
					       NULL, NULL, WAIT_MS));
		EXPECT_EQ(0, d.len);
		/* The send is done (for a long one, by the discard). */
		ASSERT_EQ(1, kfab_test_wait_cq(self->tx.cq, NULL, &d, NULL,
					       NULL, WAIT_MS));
		EXPECT_EQ((void *)self->out, d.op_context);
	}
}

TEST_F(bfi, claim_gets_the_whole_message_with_its_context)
{
	struct fi_cq_tagged_entry e, d;
	struct fi_recv_context *rc;
	struct iovec iov = { .iov_base = self->in, .iov_len = 4096 };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	int mine;

	ASSERT_EQ(1, send_and_notice(self, 3000, false, &e));
	rc = e.op_context;
	rc->context = &mine;
	msg.context = rc;
	ASSERT_EQ(0, fi_recvmsg(self->rx.ep, &msg, FI_CLAIM));
	ASSERT_EQ(1, kfab_test_wait_cq(self->rx.cq, self->tx.cq, &d, NULL,
				       NULL, WAIT_MS));
	EXPECT_EQ(&mine, d.op_context);
	EXPECT_EQ(FI_RECV | FI_MSG | FI_CLAIM, d.flags);
	EXPECT_EQ(3000, d.len);
	EXPECT_EQ(0, memcmp(self->in, self->out, 3000));
}

TEST_F(bfi, tagged_claim)
{
	struct fi_cq_tagged_entry e, d;
	struct iovec iov = { .iov_base = self->in, .iov_len = 4096 };
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1 };

	ASSERT_EQ(1, send_and_notice(self, 500, true, &e));
	EXPECT_EQ(FI_RECV | FI_TAGGED | FI_MORE, e.flags);
	EXPECT_EQ(0x77, e.tag);
	msg.context = e.op_context;
	ASSERT_EQ(0, fi_trecvmsg(self->rx.ep, &msg, FI_CLAIM));
	ASSERT_EQ(1, kfab_test_wait_cq(self->rx.cq, self->tx.cq, &d, NULL,
				       NULL, WAIT_MS));
	EXPECT_EQ(FI_RECV | FI_TAGGED | FI_CLAIM, d.flags);
	EXPECT_EQ(0x77, d.tag);
	EXPECT_EQ(0, memcmp(self->in, self->out, 500));
}

TEST_F(bfi, forged_context_and_stale_claim)
{
	struct fi_cq_tagged_entry e, d;
	struct fi_cq_err_entry err;
	struct fi_recv_context fake = { .ep = NULL };
	struct fi_msg msg = { 0 };

	msg.context = &fake;
	EXPECT_EQ(-FI_EINVAL, fi_recvmsg(self->rx.ep, &msg, FI_DISCARD));
	msg.context = NULL;
	EXPECT_EQ(-FI_EINVAL, fi_recvmsg(self->rx.ep, &msg, FI_CLAIM));
	ASSERT_EQ(1, send_and_notice(self, 10, false, &e));
	msg.context = e.op_context;
	EXPECT_EQ(-FI_EBADFLAGS,
		  fi_recvmsg(self->rx.ep, &msg, FI_DISCARD | FI_PEEK));
	ASSERT_EQ(0, fi_recvmsg(self->rx.ep, &msg, FI_DISCARD));
	ASSERT_EQ(1, kfab_test_wait_cq(self->rx.cq, self->tx.cq, &d, NULL,
				       NULL, WAIT_MS));
	/* Discarded already: the kernel says EINVAL. */
	ASSERT_EQ(0, fi_recvmsg(self->rx.ep, &msg, FI_DISCARD));
	ASSERT_EQ(-FI_EAVAIL, kfab_test_wait_cq(self->rx.cq, self->tx.cq, &d,
						NULL, &err, WAIT_MS));
	EXPECT_EQ(FI_EINVAL, err.err);
}

/* The options, the mode, and an endpoint without FI_BUFFERED_RECV. */
TEST(options_and_mode)
{
	struct kfab_test_fi s;
	size_t v, len;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, _test_fi_side_open(&s, buffered_hints(), false));
	EXPECT_TRUE(s.info->rx_attr->mode & FI_BUFFERED_RECV);
	EXPECT_EQ((size_t)KFAB_BUFRECV_SLOTS_DEFAULT *
		  KFAB_BUFRECV_LIMIT_DEFAULT,
		  s.info->rx_attr->total_buffered_recv);
	len = sizeof(v);
	ASSERT_EQ(0, fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(KFAB_BUFRECV_LIMIT_DEFAULT, v);
	v = 0;
	EXPECT_EQ(-FI_EMSGSIZE, fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT,
					  FI_OPT_BUFFERED_LIMIT, &v, sizeof(v)));
	v = KFAB_BUFRECV_LIMIT_MAX + 1;
	EXPECT_EQ(-FI_EMSGSIZE, fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT,
					  FI_OPT_BUFFERED_LIMIT, &v, sizeof(v)));
	v = SIZE_MAX;
	ASSERT_EQ(0, fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, sizeof(v)));
	ASSERT_EQ(0, fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(KFAB_BUFRECV_LIMIT_MAX, v);
	v = 1000;
	ASSERT_EQ(0, fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, sizeof(v)));
	v = 1001;
	EXPECT_EQ(-FI_EMSGSIZE, fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT,
					  FI_OPT_BUFFERED_MIN, &v, sizeof(v)));
	v = 64;
	ASSERT_EQ(0, fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_MIN, &v, sizeof(v)));
	ASSERT_EQ(0, fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_MIN, &v, &len));
	EXPECT_EQ(64, v);
	ASSERT_EQ(0, fi_ep_bind(s.ep, &s.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(s.ep));
	v = 100;
	EXPECT_EQ(-FI_EOPBADSTATE, fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT,
					     FI_OPT_BUFFERED_LIMIT, &v,
					     sizeof(v)));
	test_fi_close(&s);

	/* Without the mode: nothing buffered, limits 0 as before. */
	ASSERT_EQ(0, _test_fi_side_open(&s, kfab_test_rdm_hints(), true));
	EXPECT_FALSE(s.info->mode & FI_BUFFERED_RECV);
	EXPECT_FALSE(s.info->rx_attr->mode & FI_BUFFERED_RECV);
	len = sizeof(v);
	ASSERT_EQ(0, fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(0, v);
	test_fi_close(&s);
}

/* fi_getinfo()'s rx_attr->total_buffered_recv for hints asking @want. */
static int total_answered(size_t want, size_t *got)
{
	struct fi_info *hints = buffered_hints(), *info;
	int rc;

	if (!hints)
		return -FI_ENOMEM;
	hints->rx_attr->total_buffered_recv = want;
	rc = fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (rc)
		return rc;
	*got = info->rx_attr->total_buffered_recv;
	fi_freeinfo(info);
	return 0;
}

/*
 * rx_attr->total_buffered_recv sizes the region (fi_endpoint(3): a hint
 * the provider "may adjust"): the answer is what the slots of the
 * default limit really hold, whole slots of it; more than the kernel's
 * largest region is -FI_ENODATA.
 */
TEST(total_buffered_recv_in_getinfo)
{
	static const struct {
		size_t want, got;
	} c[] = {
		{ 0, (size_t)KFAB_BUFRECV_SLOTS_DEFAULT *
		     KFAB_BUFRECV_LIMIT_DEFAULT },
		{ 1, 1 },			/* one slot of one byte */
		{ 1000, 1000 },			/* one slot, limit 1000 */
		{ 10000, 8192 },		/* two slots of 4096 */
		{ KFAB_BUFRECV_REGION_MAX, KFAB_BUFRECV_REGION_MAX },
	};
	unsigned int i;
	size_t got;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		got = 0;
		ASSERT_EQ(0, total_answered(c[i].want, &got));
		EXPECT_EQ(c[i].got, got) TH_LOG("asked %zu", c[i].want);
	}
	EXPECT_EQ(-FI_ENODATA, total_answered(KFAB_BUFRECV_REGION_MAX + 1,
					      &got));
	EXPECT_EQ(-FI_ENODATA, total_answered(SIZE_MAX, &got));
}

/*
 * The receiver of @total bytes with @limit-byte slots (0: the default),
 * enabled: how many messages it buffers before the next waits at the
 * sender, and that the next goes into the slot a discard frees.
 */
static int slots_filled(struct __test_metadata *_metadata, size_t total,
			size_t limit)
{
	struct fi_cq_tagged_entry e[64], d;
	struct kfab_test_fi rx, tx;
	struct fi_msg msg = { 0 };
	struct fi_info *hints;
	fi_addr_t to_rx;
	uint8_t out[16] = "buffered";
	int n;

	hints = buffered_hints();
	if (!hints)
		return -1;
	hints->rx_attr->total_buffered_recv = total;
	if (_test_fi_side_open(&rx, hints, false))
		return -1;
	if (limit && fi_setopt(&rx.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &limit, sizeof(limit)))
		return -1;
	if (fi_ep_bind(rx.ep, &rx.av->fid, 0) ||
	    fi_ep_bind(rx.ep, &rx.cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(rx.ep))
		return -1;
	if (_test_fi_side_open(&tx, kfab_test_rdm_hints(), true) ||
	    kfab_test_fi_insert_peer(&tx, &rx, &to_rx) != 1)
		return -1;
	for (n = 0; n < 64; n++) {
		if (fi_send(tx.ep, out, sizeof(out), NULL, to_rx, NULL))
			return -1;
		if (kfab_test_wait_cq(rx.cq, tx.cq, &e[n], NULL, NULL,
				      n ? 300 : WAIT_MS) != 1)
			break;
	}
	/* The one that waits goes into the slot a discard gives back. */
	if (n < 64) {
		msg.context = e[0].op_context;
		EXPECT_EQ(0, fi_recvmsg(rx.ep, &msg, FI_DISCARD));
		EXPECT_EQ(1, kfab_test_wait_cq(rx.cq, tx.cq, &d, NULL, NULL,
					       WAIT_MS));
		EXPECT_EQ(0, d.len);
		EXPECT_EQ(1, kfab_test_wait_cq(rx.cq, tx.cq, &d, NULL, NULL,
					       WAIT_MS));
		EXPECT_EQ(e[0].buf, d.buf);
		EXPECT_EQ(0, memcmp(d.buf, out, sizeof(out)));
	}
	_test_fi_close(&tx);
	_test_fi_close(&rx);
	return n;
}

/*
 * The region has total / limit slots, with the default limit or one the
 * application set; FI_OPT_BUFFERED_LIMIT cannot pass the total.
 */
TEST(total_buffered_recv_sizes_the_region)
{
	struct kfab_test_fi s;
	struct fi_info *hints;
	size_t v, len = sizeof(v);

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	EXPECT_EQ(2, slots_filled(_metadata, 8192, 0));
	EXPECT_EQ(4, slots_filled(_metadata, 8192, 2048));
	EXPECT_EQ(3, slots_filled(_metadata, 1000, 300));
	EXPECT_EQ(1, slots_filled(_metadata, 100, 0));

	/* The limit stays within the total; SIZE_MAX is the total. */
	hints = buffered_hints();
	ASSERT_NE(NULL, hints);
	hints->rx_attr->total_buffered_recv = 8192;
	ASSERT_EQ(0, _test_fi_side_open(&s, hints, false));
	EXPECT_EQ(8192, s.info->rx_attr->total_buffered_recv);
	ASSERT_EQ(0, fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(KFAB_BUFRECV_LIMIT_DEFAULT, v);
	v = 8193;
	EXPECT_EQ(-FI_EMSGSIZE, fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT,
					  FI_OPT_BUFFERED_LIMIT, &v, sizeof(v)));
	v = SIZE_MAX;
	ASSERT_EQ(0, fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, sizeof(v)));
	ASSERT_EQ(0, fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(8192, v);
	test_fi_close(&s);
}

/*
 * Two endpoints on one SRX with FI_BUFFERED_RECV, each sent to by a
 * sender of its own: the region is the SRX's, the notices go to the CQ
 * of the endpoint sent to, claims and discards go through any endpoint
 * of the SRX (or the SRX itself).
 */
FIXTURE(bsrx) {
	struct kfab_test_fi rx, tx1, tx2;
	struct fid_cq *cq2;
	struct fid_ep *srx, *ep2;
	fi_addr_t to_ep1, to_ep2;
	uint8_t out[4096], in[4096];
};

static int bsrx_ep_open(FIXTURE_DATA(bsrx) *self, struct fid_ep **ep,
			struct fid_cq *cq, size_t limit)
{
	int rc = fi_endpoint(self->rx.domain, self->rx.info, ep, NULL);

	if (!rc)
		rc = fi_setopt(&(*ep)->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &limit, sizeof(limit));
	if (!rc)
		rc = fi_ep_bind(*ep, &self->rx.av->fid, 0);
	if (!rc)
		rc = fi_ep_bind(*ep, &self->srx->fid, 0);
	if (!rc)
		rc = fi_ep_bind(*ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_enable(*ep);
	return rc;
}

FIXTURE_SETUP(bsrx)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct kfab_test_fi ep2_side;
	size_t limit = LIMIT;

	self->rx = self->tx1 = self->tx2 = (struct kfab_test_fi){ 0 };
	self->srx = self->ep2 = NULL;
	self->cq2 = NULL;
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_srx())
		SKIP(return, "kfab.ko without shared receive contexts");
	ASSERT_EQ(0, _test_fi_domain_open(&self->rx, buffered_hints()));
	ASSERT_EQ(0, fi_av_open(self->rx.domain,
				&(struct fi_av_attr){ .type = FI_AV_TABLE },
				&self->rx.av, NULL));
	ASSERT_EQ(0, fi_cq_open(self->rx.domain, &cq_attr, &self->rx.cq,
				NULL));
	ASSERT_EQ(0, fi_cq_open(self->rx.domain, &cq_attr, &self->cq2, NULL));
	ASSERT_EQ(0, fi_srx_context(self->rx.domain, self->rx.info->rx_attr,
				    &self->srx, NULL));
	/* The SRX's limit wins over the endpoints' own. */
	ASSERT_EQ(0, fi_setopt(&self->srx->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &limit, sizeof(limit)));
	ASSERT_EQ(0, bsrx_ep_open(self, &self->rx.ep, self->rx.cq, 1000));
	ASSERT_EQ(0, bsrx_ep_open(self, &self->ep2, self->cq2, 2000));
	ASSERT_EQ(0, _test_fi_side_open(&self->tx1, kfab_test_rdm_hints(),
					true));
	ASSERT_EQ(0, _test_fi_side_open(&self->tx2, kfab_test_rdm_hints(),
					true));
	ASSERT_EQ(1, kfab_test_fi_insert_peer(&self->tx1, &self->rx,
					      &self->to_ep1));
	ep2_side = self->rx;
	ep2_side.ep = self->ep2;
	ASSERT_EQ(1, kfab_test_fi_insert_peer(&self->tx2, &ep2_side,
					      &self->to_ep2));
}

FIXTURE_TEARDOWN(bsrx)
{
	/* The endpoints first; the SRX last (it is busy until then). */
	if (self->ep2)
		EXPECT_EQ(0, fi_close(&self->ep2->fid));
	if (self->rx.ep)
		EXPECT_EQ(0, fi_close(&self->rx.ep->fid));
	self->rx.ep = NULL;
	if (self->srx)
		EXPECT_EQ(0, fi_close(&self->srx->fid));
	if (self->cq2)
		EXPECT_EQ(0, fi_close(&self->cq2->fid));
	_test_fi_close(&self->rx);
	_test_fi_close(&self->tx1);
	_test_fi_close(&self->tx2);
}

/* @len bytes from @tx to @to, noticed on @cq. */
static int bsrx_send(FIXTURE_DATA(bsrx) *self, struct kfab_test_fi *tx,
		     fi_addr_t to, size_t len, struct fid_cq *cq,
		     struct fi_cq_tagged_entry *e)
{
	ssize_t rc;

	fill(self->out, len, (uint8_t)len);
	rc = fi_send(tx->ep, self->out, len, NULL, to, self->out);
	if (rc)
		return (int)rc;
	return (int)kfab_test_wait_cq(cq, tx->cq, e, NULL, NULL, WAIT_MS);
}

TEST_F(bsrx, notices_go_to_the_endpoint_sent_to)
{
	struct fi_cq_tagged_entry e1, e2, d;
	struct fi_recv_context *rc1, *rc2;
	struct iovec iov = { .iov_base = self->in, .iov_len = 4096 };
	struct fi_msg cm = { .msg_iov = &iov, .iov_count = 1 };
	struct fi_msg msg = { 0 };
	uint8_t first[LIMIT];
	int mine;

	ASSERT_EQ(1, bsrx_send(self, &self->tx1, self->to_ep1, 100,
			       self->rx.cq, &e1));
	EXPECT_EQ(FI_RECV | FI_MSG, e1.flags);
	EXPECT_EQ(100, e1.len);
	EXPECT_EQ(0, memcmp(e1.buf, self->out, 100));
	rc1 = e1.op_context;
	ASSERT_NE(NULL, rc1);
	/* fi_msg(3): "the receiving endpoint or Rx context": the SRX. */
	EXPECT_EQ(self->srx, rc1->ep);
	EXPECT_EQ(NULL, rc1->context);
	ASSERT_EQ(1, bsrx_send(self, &self->tx2, self->to_ep2, 3000,
			       self->cq2, &e2));
	EXPECT_EQ(FI_RECV | FI_MSG | FI_MORE, e2.flags);
	EXPECT_EQ(3000, e2.len);
	memcpy(first, self->out, LIMIT);
	EXPECT_EQ(0, memcmp(e2.buf, first, LIMIT));
	rc2 = e2.op_context;
	EXPECT_EQ(self->srx, rc2->ep);
	/* Nothing crossed over. */
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->rx.cq, &d, 1));

	/* ep2's message, claimed through ep1: reported on ep2's CQ. */
	rc2->context = &mine;
	cm.context = rc2;
	ASSERT_EQ(0, fi_recvmsg(self->rx.ep, &cm, FI_CLAIM));
	ASSERT_EQ(1, kfab_test_wait_cq(self->cq2, self->tx2.cq, &d, NULL,
				       NULL, WAIT_MS));
	EXPECT_EQ(&mine, d.op_context);
	EXPECT_EQ(FI_RECV | FI_MSG | FI_CLAIM, d.flags);
	EXPECT_EQ(3000, d.len);
	EXPECT_EQ(0, memcmp(self->in, self->out, 3000));
	/* The long send is done by the claim. */
	ASSERT_EQ(1, kfab_test_wait_cq(self->tx2.cq, NULL, &d, NULL, NULL,
				       WAIT_MS));
	/* ep1's, discarded through ep2: reported on ep1's CQ. */
	msg.context = rc1;
	ASSERT_EQ(0, fi_recvmsg(self->ep2, &msg, FI_DISCARD));
	ASSERT_EQ(1, kfab_test_wait_cq(self->rx.cq, self->tx1.cq, &d, NULL,
				       NULL, WAIT_MS));
	EXPECT_EQ(FI_RECV | FI_MSG, d.flags);
	EXPECT_EQ(0, d.len);
}

TEST_F(bsrx, claim_on_the_srx_itself_and_tagged)
{
	struct fi_cq_tagged_entry e, d;
	struct iovec iov = { .iov_base = self->in, .iov_len = 4096 };
	struct fi_msg_tagged tm = { .msg_iov = &iov, .iov_count = 1 };

	fill(self->out, 700, 3);
	ASSERT_EQ(0, fi_tsend(self->tx1.ep, self->out, 700, NULL,
			      self->to_ep1, 0x99, NULL));
	ASSERT_EQ(1, kfab_test_wait_cq(self->rx.cq, self->tx1.cq, &e, NULL,
				       NULL, WAIT_MS));
	EXPECT_EQ(FI_RECV | FI_TAGGED | FI_MORE, e.flags);
	EXPECT_EQ(0x99, e.tag);
	tm.context = e.op_context;
	ASSERT_EQ(0, fi_trecvmsg(self->srx, &tm, FI_CLAIM));
	ASSERT_EQ(1, kfab_test_wait_cq(self->rx.cq, self->tx1.cq, &d, NULL,
				       NULL, WAIT_MS));
	EXPECT_EQ(FI_RECV | FI_TAGGED | FI_CLAIM, d.flags);
	EXPECT_EQ(700, d.len);
	EXPECT_EQ(0, memcmp(self->in, self->out, 700));
}

TEST_F(bsrx, options_are_the_srx_region)
{
	size_t v, len = sizeof(v);

	/* The SRX set LIMIT before its first endpoint: every one has it. */
	ASSERT_EQ(0, fi_getopt(&self->rx.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(LIMIT, v);
	ASSERT_EQ(0, fi_getopt(&self->ep2->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(LIMIT, v);
	ASSERT_EQ(0, fi_getopt(&self->srx->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(LIMIT, v);
	ASSERT_EQ(0, fi_getopt(&self->ep2->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_MIN, &v, &len));
	EXPECT_GE(LIMIT, v);
	v = 64;
	EXPECT_EQ(-FI_EOPBADSTATE, fi_setopt(&self->srx->fid, FI_OPT_ENDPOINT,
					     FI_OPT_BUFFERED_LIMIT, &v,
					     sizeof(v)));
	/* fi_close() of an SRX with endpoints is -FI_EBUSY. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->srx->fid));
}

TEST_F(bsrx, stale_and_forged_tokens)
{
	struct fi_cq_tagged_entry e, d;
	struct fi_cq_err_entry err;
	struct fi_recv_context fake = { .ep = NULL };
	struct fi_msg msg = { 0 };

	msg.context = &fake;
	EXPECT_EQ(-FI_EINVAL, fi_recvmsg(self->rx.ep, &msg, FI_DISCARD));
	EXPECT_EQ(-FI_EINVAL, fi_recvmsg(self->srx, &msg, FI_DISCARD));
	msg.context = NULL;
	EXPECT_EQ(-FI_EINVAL, fi_recvmsg(self->ep2, &msg, FI_CLAIM));
	ASSERT_EQ(1, bsrx_send(self, &self->tx2, self->to_ep2, 10, self->cq2,
			       &e));
	msg.context = e.op_context;
	ASSERT_EQ(0, fi_recvmsg(self->ep2, &msg, FI_DISCARD));
	ASSERT_EQ(1, kfab_test_wait_cq(self->cq2, NULL, &d, NULL, NULL,
				       WAIT_MS));
	/* Twice: stale; the kernel reports it on the SRX's first endpoint. */
	ASSERT_EQ(0, fi_recvmsg(self->ep2, &msg, FI_DISCARD));
	ASSERT_EQ(-FI_EAVAIL, kfab_test_wait_cq(self->rx.cq, self->cq2, &d,
						NULL, &err, WAIT_MS));
	EXPECT_EQ(FI_EINVAL, err.err);
}

/* An endpoint closed with its message unclaimed: the message goes too. */
TEST_F(bsrx, endpoint_closed_with_a_claim_outstanding)
{
	struct fi_cq_tagged_entry e, d;
	struct fi_cq_err_entry err;
	struct fi_msg msg = { 0 };
	size_t v, len = sizeof(v);

	ASSERT_EQ(1, bsrx_send(self, &self->tx2, self->to_ep2, 3000,
			       self->cq2, &e));
	EXPECT_TRUE(e.flags & FI_MORE);
	ASSERT_EQ(0, fi_close(&self->ep2->fid));
	self->ep2 = NULL;
	/* Its sender learns the message was not delivered. */
	ASSERT_EQ(-FI_EAVAIL, kfab_test_wait_cq(self->tx2.cq, NULL, &d, NULL,
						&err, WAIT_MS));
	EXPECT_NE(0, err.err);
	/* Its token is stale, through the endpoint that is left. */
	msg.context = e.op_context;
	ASSERT_EQ(0, fi_recvmsg(self->rx.ep, &msg, FI_DISCARD));
	ASSERT_EQ(-FI_EAVAIL, kfab_test_wait_cq(self->rx.cq, NULL, &d, NULL,
						&err, WAIT_MS));
	EXPECT_EQ(FI_EINVAL, err.err);
	/* The region stays with the SRX and still works. */
	ASSERT_EQ(1, bsrx_send(self, &self->tx1, self->to_ep1, 50,
			       self->rx.cq, &e));
	EXPECT_EQ(0, memcmp(e.buf, self->out, 50));
	ASSERT_EQ(0, fi_getopt(&self->srx->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(LIMIT, v);
	msg.context = e.op_context;
	ASSERT_EQ(0, fi_recvmsg(self->srx, &msg, FI_DISCARD));
	ASSERT_EQ(1, kfab_test_wait_cq(self->rx.cq, NULL, &d, NULL, NULL,
				       WAIT_MS));
}

/* fi_srx_context()'s total_buffered_recv bounds the SRX's limit. */
TEST(srx_total_bounds_its_limit)
{
	struct fi_rx_attr attr;
	struct kfab_test_fi s;
	struct fid_ep *srx;
	size_t v, len = sizeof(v);

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_srx())
		SKIP(return, "kfab.ko without shared receive contexts");
	ASSERT_EQ(0, _test_fi_domain_open(&s, buffered_hints()));
	attr = *s.info->rx_attr;
	attr.total_buffered_recv = 1000;
	ASSERT_EQ(0, fi_srx_context(s.domain, &attr, &srx, NULL));
	v = 1001;
	EXPECT_EQ(-FI_EMSGSIZE, fi_setopt(&srx->fid, FI_OPT_ENDPOINT,
					  FI_OPT_BUFFERED_LIMIT, &v,
					  sizeof(v)));
	v = SIZE_MAX;
	ASSERT_EQ(0, fi_setopt(&srx->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, sizeof(v)));
	ASSERT_EQ(0, fi_getopt(&srx->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(1000, v);
	EXPECT_EQ(0, fi_close(&srx->fid));
	attr.total_buffered_recv = KFAB_BUFRECV_REGION_MAX + 1;
	EXPECT_EQ(-FI_ENODATA, fi_srx_context(s.domain, &attr, &srx, NULL));
	test_fi_close(&s);
}

/* Every endpoint of a buffering SRX buffers; none of a plain one. */
TEST(srx_endpoints_agree_on_the_mode)
{
	struct kfab_test_fi s, p;
	struct fid_ep *srx, *plain;
	size_t v = 0;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_srx())
		SKIP(return, "kfab.ko without shared receive contexts");
	ASSERT_EQ(0, _test_fi_side_open(&s, buffered_hints(), false));
	ASSERT_EQ(0, fi_srx_context(s.domain, s.info->rx_attr, &srx, NULL));
	EXPECT_EQ(-FI_EMSGSIZE, fi_setopt(&srx->fid, FI_OPT_ENDPOINT,
					  FI_OPT_BUFFERED_LIMIT, &v,
					  sizeof(v)));
	v = KFAB_BUFRECV_LIMIT_MAX + 1;
	EXPECT_EQ(-FI_EMSGSIZE, fi_setopt(&srx->fid, FI_OPT_ENDPOINT,
					  FI_OPT_BUFFERED_LIMIT, &v,
					  sizeof(v)));
	ASSERT_EQ(0, fi_ep_bind(s.ep, &s.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(s.ep, &srx->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(s.ep));
	/* A plain endpoint of the same domain on the buffering SRX. */
	ASSERT_EQ(0, _test_fi_domain_open(&p, kfab_test_rdm_hints()));
	ASSERT_EQ(0, fi_endpoint(s.domain, p.info, &plain, NULL));
	ASSERT_EQ(0, fi_ep_bind(plain, &s.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(plain, &srx->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(plain, &s.cq->fid, FI_TRANSMIT | FI_RECV));
	EXPECT_EQ(-FI_EINVAL, fi_enable(plain));
	EXPECT_EQ(0, fi_close(&plain->fid));
	EXPECT_EQ(0, fi_close(&s.ep->fid));
	s.ep = NULL;
	EXPECT_EQ(0, fi_close(&srx->fid));
	test_fi_close(&p);
	test_fi_close(&s);
}

/* fi_getinfo() for @caps and @type: the answer, or NULL (*@rc says). */
static struct fi_info *variable_info(uint64_t caps, enum fi_ep_type type,
				     uint64_t mode, int *rc)
{
	struct fi_info *hints = kfab_test_hints(), *info = NULL;

	if (!hints) {
		*rc = -FI_ENOMEM;
		return NULL;
	}
	hints->caps = caps;
	hints->mode = mode;
	hints->ep_attr->type = type;
	*rc = fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	return *rc ? NULL : info;
}

/*
 * fi_getinfo(3): FI_VARIABLE_MSG is a primary capability, answered when
 * asked for (and not otherwise), needing no FI_BUFFERED_RECV mode, with
 * FI_MSG and/or FI_TAGGED; kfab offers it on RDM endpoints only.
 */
TEST(variable_msg_in_getinfo)
{
	struct fi_info *info, *i;
	int rc;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	info = variable_info(FI_MSG | FI_VARIABLE_MSG, FI_EP_UNSPEC, 0, &rc);
	ASSERT_EQ(0, rc);
	for (i = info; i; i = i->next) {
		EXPECT_EQ(FI_EP_RDM, i->ep_attr->type);
		EXPECT_TRUE(i->caps & FI_VARIABLE_MSG);
		EXPECT_TRUE(i->caps & FI_MSG);
		EXPECT_TRUE(i->rx_attr->caps & FI_VARIABLE_MSG);
		EXPECT_FALSE(i->mode & FI_BUFFERED_RECV);
		EXPECT_LT(0, i->rx_attr->total_buffered_recv);
	}
	fi_freeinfo(info);
	/* Alone it brings FI_MSG and FI_TAGGED ("requires" one of them). */
	info = variable_info(FI_VARIABLE_MSG, FI_EP_RDM, 0, &rc);
	ASSERT_EQ(0, rc);
	EXPECT_EQ(FI_MSG | FI_TAGGED, info->caps & (FI_MSG | FI_TAGGED));
	fi_freeinfo(info);
	/* With the mode too: both. */
	info = variable_info(FI_MSG | FI_VARIABLE_MSG, FI_EP_RDM,
			     FI_BUFFERED_RECV, &rc);
	ASSERT_EQ(0, rc);
	EXPECT_TRUE(info->caps & FI_VARIABLE_MSG);
	EXPECT_TRUE(info->mode & FI_BUFFERED_RECV);
	fi_freeinfo(info);
	/* Not asked: not answered. */
	info = variable_info(FI_MSG, FI_EP_RDM, 0, &rc);
	ASSERT_EQ(0, rc);
	for (i = info; i; i = i->next)
		EXPECT_FALSE(i->caps & FI_VARIABLE_MSG);
	fi_freeinfo(info);
	info = variable_info(0, FI_EP_UNSPEC, 0, &rc);
	ASSERT_EQ(0, rc);
	for (i = info; i; i = i->next) {
		EXPECT_FALSE(i->caps & FI_VARIABLE_MSG);
		EXPECT_FALSE(i->rx_attr->caps & FI_VARIABLE_MSG);
	}
	fi_freeinfo(info);
	/* Not for connected or datagram endpoints. */
	EXPECT_EQ(NULL, variable_info(FI_MSG | FI_VARIABLE_MSG, FI_EP_MSG, 0,
				      &rc));
	EXPECT_EQ(-FI_ENODATA, rc);
	EXPECT_EQ(NULL, variable_info(FI_MSG | FI_VARIABLE_MSG, FI_EP_DGRAM,
				      0, &rc));
	EXPECT_EQ(-FI_ENODATA, rc);
}

#define VAR_LEN	(1 << 20)

/*
 * A 1 MiB message to an FI_VARIABLE_MSG endpoint (no FI_BUFFERED_RECV
 * mode) with no receive posted: a buffered notice with the whole length
 * and FI_MORE, the start in the slot; claimed whole and intact.
 */
TEST(variable_msg_of_one_mib_is_claimed_whole)
{
	struct kfab_test_fi rx, tx;
	struct fi_cq_tagged_entry e, d;
	struct fi_recv_context *rc;
	struct iovec iov;
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	uint8_t *out, *in;
	fi_addr_t to_rx;
	struct fi_info *hints;
	size_t v, len = sizeof(v);
	int mine;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	out = malloc(VAR_LEN);
	in = calloc(1, VAR_LEN);
	ASSERT_NE(NULL, out);
	ASSERT_NE(NULL, in);
	fill(out, VAR_LEN, 7);
	hints = kfab_test_rdm_hints();
	ASSERT_NE(NULL, hints);
	hints->caps |= FI_VARIABLE_MSG;
	ASSERT_EQ(0, _test_fi_side_open(&rx, hints, true));
	EXPECT_TRUE(rx.info->caps & FI_VARIABLE_MSG);
	EXPECT_FALSE(rx.info->mode & FI_BUFFERED_RECV);
	ASSERT_EQ(0, fi_getopt(&rx.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &len));
	EXPECT_EQ(KFAB_BUFRECV_LIMIT_DEFAULT, v);
	ASSERT_EQ(0, _test_fi_side_open(&tx, kfab_test_rdm_hints(), true));
	ASSERT_EQ(1, kfab_test_fi_insert_peer(&tx, &rx, &to_rx));

	ASSERT_EQ(0, fi_send(tx.ep, out, VAR_LEN, NULL, to_rx, out));
	ASSERT_EQ(1, kfab_test_wait_cq(rx.cq, tx.cq, &e, NULL, NULL,
				       WAIT_MS));
	EXPECT_EQ(FI_RECV | FI_MSG | FI_MORE, e.flags);
	EXPECT_EQ(VAR_LEN, e.len);
	EXPECT_EQ(0, memcmp(e.buf, out, KFAB_BUFRECV_LIMIT_DEFAULT));
	rc = e.op_context;
	ASSERT_NE(NULL, rc);
	EXPECT_EQ(rx.ep, rc->ep);
	/* The send waits for the claim. */
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(tx.cq, &d, 1));
	rc->context = &mine;
	iov.iov_base = in;
	iov.iov_len = VAR_LEN;
	msg.context = rc;
	ASSERT_EQ(0, fi_recvmsg(rx.ep, &msg, FI_CLAIM));
	ASSERT_EQ(1, kfab_test_wait_cq(rx.cq, tx.cq, &d, NULL, NULL,
				       WAIT_MS));
	EXPECT_EQ(&mine, d.op_context);
	EXPECT_EQ(FI_RECV | FI_MSG | FI_CLAIM, d.flags);
	EXPECT_EQ(VAR_LEN, d.len);
	EXPECT_EQ(0, memcmp(in, out, VAR_LEN));
	ASSERT_EQ(1, kfab_test_wait_cq(tx.cq, NULL, &d, NULL, NULL, WAIT_MS));
	EXPECT_EQ((void *)out, d.op_context);
	test_fi_close(&tx);
	test_fi_close(&rx);
	free(out);
	free(in);
}

TEST_HARNESS_MAIN
