// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Scalable endpoints (fi_endpoint(3) "Scalable Endpoints"): fi_scalable_ep,
 * fi_scalable_ep_bind, fi_tx_context, fi_rx_context, FI_NAMED_RX_CTX with
 * fi_rx_addr(): a message to receive context i lands there and nowhere
 * else; an index beyond the target's contexts is an error completion;
 * the hostile orderings (parent closed before its contexts, an index out
 * of range, a context opened twice).  SKIPs without /dev/kfab.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

#define TIMEOUT_MS	10000
#define NCTX		4
#define RX_BITS		8

static struct fi_info *sep_hints(void)
{
	struct fi_info *hints = kfab_test_rdm_hints();

	if (!hints)
		return NULL;
	hints->caps |= FI_NAMED_RX_CTX;
	hints->ep_attr->tx_ctx_cnt = NCTX;
	hints->ep_attr->rx_ctx_cnt = NCTX;
	return hints;
}

TEST(getinfo_offers_contexts_truthfully)
{
	struct fi_info *hints, *info;

	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	hints = sep_hints();
	ASSERT_NE(NULL, hints);
	ASSERT_EQ(0, fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, hints,
				&info));
	EXPECT_EQ(NCTX, info->ep_attr->tx_ctx_cnt);
	EXPECT_EQ(NCTX, info->ep_attr->rx_ctx_cnt);
	EXPECT_EQ(KFAB_EP_BLOCK_MAX, info->domain_attr->max_ep_tx_ctx);
	EXPECT_EQ(KFAB_EP_BLOCK_MAX, info->domain_attr->max_ep_rx_ctx);
	EXPECT_TRUE(info->caps & FI_NAMED_RX_CTX);
	fi_freeinfo(info);
	hints->ep_attr->rx_ctx_cnt = KFAB_EP_BLOCK_MAX + 1;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL,
					  0, hints, &info));
	fi_freeinfo(hints);
}

FIXTURE(sep) {
	struct kfab_test_fi a;		/* the scalable endpoint's side */
	struct kfab_test_fi s;		/* a plain sender */
	struct fid_ep *sep;
	struct fid_ep *rx[NCTX], *tx[NCTX];
	struct fid_cq *rcq[NCTX], *tcq;
	struct fid_av *sav;		/* the sender's AV, with rx_ctx_bits */
	fi_addr_t to_sep;
};

FIXTURE_SETUP(sep)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE,
				      .rx_ctx_bits = RX_BITS };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr a_attr = { .type = FI_AV_TABLE };
	struct kfab_addr name;
	size_t len = sizeof(name);
	int i;

	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, _test_fi_domain_open(&self->a, sep_hints()));
	ASSERT_EQ(0, fi_av_open(self->a.domain, &a_attr, &self->a.av, NULL));
	ASSERT_EQ(0, _test_fi_side_open(&self->s, kfab_test_rdm_hints(),
					false));
	ASSERT_EQ(0, fi_scalable_ep(self->a.domain, self->a.info, &self->sep,
				    NULL));
	ASSERT_EQ(0, fi_scalable_ep_bind(self->sep, &self->a.av->fid, 0));
	for (i = 0; i < NCTX; i++) {
		ASSERT_EQ(0, fi_cq_open(self->a.domain, &cq_attr,
					&self->rcq[i], NULL));
		ASSERT_EQ(0, fi_rx_context(self->sep, i, NULL, &self->rx[i],
					   NULL));
		ASSERT_EQ(FI_CLASS_RX_CTX, self->rx[i]->fid.fclass);
		ASSERT_EQ(0, fi_ep_bind(self->rx[i], &self->rcq[i]->fid,
					FI_RECV));
		ASSERT_EQ(0, fi_enable(self->rx[i]));
	}
	ASSERT_EQ(0, fi_enable(self->sep));
	/* The sender: its own AV with rx_ctx_bits, its CQ. */
	ASSERT_EQ(0, fi_av_open(self->s.domain, &av_attr, &self->sav, NULL));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->sav->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.cq->fid,
				FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(self->s.ep));
	ASSERT_EQ(0, fi_getname(&self->sep->fid, &name, &len));
	ASSERT_EQ(1, fi_av_insert(self->sav, &name, 1, &self->to_sep, 0,
				  NULL));
}

FIXTURE_TEARDOWN(sep)
{
	int i;

	for (i = 0; i < NCTX; i++) {
		if (self->tx[i])
			fi_close(&self->tx[i]->fid);
		if (self->rx[i])
			fi_close(&self->rx[i]->fid);
	}
	if (self->sep)
		EXPECT_EQ(0, fi_close(&self->sep->fid));
	if (self->s.ep)
		fi_close(&self->s.ep->fid);
	self->s.ep = NULL;
	if (self->sav)
		fi_close(&self->sav->fid);
	if (self->tcq)
		fi_close(&self->tcq->fid);
	for (i = 0; i < NCTX; i++)
		if (self->rcq[i])
			fi_close(&self->rcq[i]->fid);
	test_fi_close(&self->s);
	test_fi_close(&self->a);
}

static ssize_t wait_cq(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		       struct fi_cq_err_entry *err)
{
	return kfab_test_wait_cq(cq, NULL, e, NULL, err, TIMEOUT_MS);
}

TEST_F(sep, each_rx_context_receives_only_its_own)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int got[NCTX], i, sent;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < NCTX; i++) {
		got[i] = -1;
		ASSERT_EQ(0, fi_recv(self->rx[i], &got[i], sizeof(got[i]),
				     NULL, FI_ADDR_UNSPEC, &got[i]));
	}
	/* Backwards, so that arrival order cannot pass for routing. */
	for (i = NCTX - 1; i >= 0; i--) {
		sent = 100 + i;
		ASSERT_EQ(0, fi_send(self->s.ep, &sent, sizeof(sent), NULL,
				     fi_rx_addr(self->to_sep, i, RX_BITS),
				     NULL));
		ASSERT_EQ(1, wait_cq(self->s.cq, &e, &err));
		ASSERT_EQ(1, wait_cq(self->rcq[i], &e, &err));
		EXPECT_EQ((void *)&got[i], e.op_context);
		EXPECT_EQ(100 + i, got[i]);
	}
	for (i = 0; i < NCTX; i++)
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->rcq[i], &e, 1));
}

TEST_F(sep, tagged_messages_follow_the_rx_index)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int got = -1, sent = 7;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_trecv(self->rx[2], &got, sizeof(got), NULL,
			      FI_ADDR_UNSPEC, 0x42, 0, NULL));
	/* The same tag to context 1 must not match context 2's receive. */
	ASSERT_EQ(0, fi_tsend(self->s.ep, &sent, sizeof(sent), NULL,
			      fi_rx_addr(self->to_sep, 1, RX_BITS), 0x42,
			      NULL));
	ASSERT_EQ(1, wait_cq(self->s.cq, &e, &err));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->rcq[2], &e, 1));
	ASSERT_EQ(0, fi_tsend(self->s.ep, &sent, sizeof(sent), NULL,
			      fi_rx_addr(self->to_sep, 2, RX_BITS), 0x42,
			      NULL));
	ASSERT_EQ(1, wait_cq(self->s.cq, &e, &err));
	ASSERT_EQ(1, wait_cq(self->rcq[2], &e, &err));
	EXPECT_EQ(0x42ULL, e.tag);
	EXPECT_EQ(7, got);
}

TEST_F(sep, the_base_address_reaches_rx_context_0)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int got = -1, sent = 5;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_recv(self->rx[0], &got, sizeof(got), NULL,
			     FI_ADDR_UNSPEC, NULL));
	ASSERT_EQ(0, fi_send(self->s.ep, &sent, sizeof(sent), NULL,
			     self->to_sep, NULL));
	ASSERT_EQ(1, wait_cq(self->s.cq, &e, &err));
	ASSERT_EQ(1, wait_cq(self->rcq[0], &e, &err));
	EXPECT_EQ(5, got);
}

TEST_F(sep, an_index_beyond_the_contexts_is_an_error_completion)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int sent = 1, i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_send(self->s.ep, &sent, sizeof(sent), NULL,
			     fi_rx_addr(self->to_sep, NCTX, RX_BITS), NULL));
	ASSERT_EQ(-FI_EAVAIL, wait_cq(self->s.cq, &e, &err));
	EXPECT_NE(0, err.err);
	for (i = 0; i < NCTX; i++)
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->rcq[i], &e, 1));
	/* The last index a block has, far beyond ours: the same. */
	ASSERT_EQ(0, fi_send(self->s.ep, &sent, sizeof(sent), NULL,
			     fi_rx_addr(self->to_sep, KFAB_EP_BLOCK_MAX - 1,
					RX_BITS), NULL));
	ASSERT_EQ(-FI_EAVAIL, wait_cq(self->s.cq, &e, &err));
	EXPECT_EQ(FI_EHOSTUNREACH, err.err);
}

TEST_F(sep, a_tx_context_sends_as_the_scalable_endpoint)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct kfab_addr name;
	size_t len = sizeof(name);
	fi_addr_t to_s, src = 0;
	int got = -1, sent = 9;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cq_open(self->a.domain, &cq_attr, &self->tcq, NULL));
	ASSERT_EQ(0, fi_tx_context(self->sep, 3, NULL, &self->tx[3], NULL));
	ASSERT_EQ(FI_CLASS_TX_CTX, self->tx[3]->fid.fclass);
	EXPECT_EQ(-FI_ENOCQ, fi_enable(self->tx[3]));
	ASSERT_EQ(0, fi_ep_bind(self->tx[3], &self->tcq->fid, FI_TRANSMIT));
	ASSERT_EQ(0, fi_enable(self->tx[3]));
	ASSERT_EQ(0, fi_getname(&self->s.ep->fid, &name, &len));
	ASSERT_EQ(1, fi_av_insert(self->a.av, &name, 1, &to_s, 0, NULL));
	/* The sender knows the scalable endpoint by its base address. */
	ASSERT_EQ(0, fi_recv(self->s.ep, &got, sizeof(got), NULL,
			     FI_ADDR_UNSPEC, NULL));
	ASSERT_EQ(0, fi_send(self->tx[3], &sent, sizeof(sent), NULL, to_s,
			     NULL));
	ASSERT_EQ(1, wait_cq(self->tcq, &e, &err));
	ASSERT_EQ(1, kfab_test_wait_cq(self->s.cq, NULL, &e, &src, &err,
				       TIMEOUT_MS));
	EXPECT_EQ(9, got);
	EXPECT_EQ(self->to_sep, src);
}

TEST_F(sep, hostile_orderings)
{
	struct fid_ep *ctx;

	RETURN_IF_SETUP_SKIPPED();
	/* Out of range, and open twice. */
	EXPECT_EQ(-FI_EINVAL, fi_rx_context(self->sep, NCTX, NULL, &ctx,
					    NULL));
	EXPECT_EQ(-FI_EINVAL, fi_rx_context(self->sep, -1, NULL, &ctx, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_tx_context(self->sep, NCTX, NULL, &ctx,
					    NULL));
	EXPECT_EQ(-FI_EBUSY, fi_rx_context(self->sep, 1, NULL, &ctx, NULL));
	/* One AV; nothing else binds to the scalable endpoint. */
	EXPECT_EQ(-FI_EINVAL, fi_scalable_ep_bind(self->sep,
						  &self->a.av->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_scalable_ep_bind(self->sep,
						  &self->rcq[0]->fid, 0));
	/* The scalable endpoint itself moves no data. */
	EXPECT_EQ(-FI_EOPBADSTATE, fi_send(self->sep, "x", 1, NULL,
					   self->to_sep, NULL));
	/* The parent goes last; a plain endpoint has no contexts. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->sep->fid));
	EXPECT_EQ(-FI_ENOSYS, fi_rx_context(self->s.ep, 0, NULL, &ctx, NULL));
	/* A closed context can be opened again, and works. */
	ASSERT_EQ(0, fi_close(&self->rx[1]->fid));
	ASSERT_EQ(0, fi_rx_context(self->sep, 1, NULL, &self->rx[1], NULL));
	ASSERT_EQ(0, fi_ep_bind(self->rx[1], &self->rcq[1]->fid, FI_RECV));
	ASSERT_EQ(0, fi_enable(self->rx[1]));
	/* All contexts closed first: then the parent closes. */
	ASSERT_EQ(0, fi_close(&self->rx[0]->fid));
	self->rx[0] = NULL;
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->sep->fid));
}

/*
 * FI_BUFFERED_RECV with a scalable endpoint (fi_msg(3) "Buffered
 * Receives"): fi_getinfo() offers it with several contexts, and each
 * receive context buffers on its own, as an endpoint does: the notice
 * names that context in its struct fi_recv_context, the claim goes
 * through it; a transmit context buffers nothing (its limit is 0).
 */
TEST(receive_contexts_buffer)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE,
				      .rx_ctx_bits = RX_BITS };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_tagged_entry e, d;
	struct fid_ep *sep, *rx, *tx;
	struct kfab_test_fi a, s;
	struct fi_recv_context *rc;
	struct fid_cq *rcq;
	struct fid_av *sav;
	struct kfab_addr name;
	uint8_t out[100], in[128];
	struct iovec iov = { .iov_base = in, .iov_len = sizeof(in) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	size_t len = sizeof(name), v = 64, vlen = sizeof(v);
	struct fi_info *hints;
	fi_addr_t to_sep;
	unsigned int i;

	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	hints = sep_hints();
	ASSERT_NE(NULL, hints);
	hints->mode = FI_BUFFERED_RECV | FI_CONTEXT;
	ASSERT_EQ(0, _test_fi_domain_open(&a, hints));
	EXPECT_TRUE(a.info->mode & FI_BUFFERED_RECV);
	EXPECT_TRUE(a.info->rx_attr->mode & FI_BUFFERED_RECV);
	EXPECT_EQ(NCTX, a.info->ep_attr->rx_ctx_cnt);
	ASSERT_EQ(0, fi_av_open(a.domain, &av_attr, &a.av, NULL));
	ASSERT_EQ(0, fi_scalable_ep(a.domain, a.info, &sep, NULL));
	ASSERT_EQ(0, fi_scalable_ep_bind(sep, &a.av->fid, 0));
	ASSERT_EQ(0, fi_cq_open(a.domain, &cq_attr, &rcq, NULL));
	ASSERT_EQ(0, fi_rx_context(sep, 2, NULL, &rx, NULL));
	ASSERT_EQ(0, fi_setopt(&rx->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, sizeof(v)));
	ASSERT_EQ(0, fi_ep_bind(rx, &rcq->fid, FI_RECV));
	ASSERT_EQ(0, fi_enable(rx));
	ASSERT_EQ(0, fi_tx_context(sep, 0, NULL, &tx, NULL));
	ASSERT_EQ(0, fi_getopt(&tx->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &v, &vlen));
	EXPECT_EQ(0, v);
	ASSERT_EQ(0, fi_enable(sep));

	ASSERT_EQ(0, _test_fi_side_open(&s, kfab_test_rdm_hints(), false));
	ASSERT_EQ(0, fi_av_open(s.domain, &av_attr, &sav, NULL));
	ASSERT_EQ(0, fi_ep_bind(s.ep, &sav->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(s.ep));
	ASSERT_EQ(0, fi_getname(&sep->fid, &name, &len));
	ASSERT_EQ(1, fi_av_insert(sav, &name, 1, &to_sep, 0, NULL));

	/* No receive posted: the message lies in receive context 2's slot. */
	for (i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7 + 1);
	ASSERT_EQ(0, fi_send(s.ep, out, sizeof(out), NULL,
			     fi_rx_addr(to_sep, 2, RX_BITS), out));
	ASSERT_EQ(1, kfab_test_wait_cq(rcq, s.cq, &e, NULL, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ(FI_RECV | FI_MSG | FI_MORE, e.flags);
	EXPECT_EQ(sizeof(out), e.len);
	rc = e.op_context;
	ASSERT_NE(NULL, rc);
	EXPECT_EQ(rx, rc->ep);
	EXPECT_EQ(0, memcmp(e.buf, out, 64));
	/* Claimed through the context: the whole message. */
	msg.context = rc;
	ASSERT_EQ(0, fi_recvmsg(rx, &msg, FI_CLAIM));
	ASSERT_EQ(1, kfab_test_wait_cq(rcq, s.cq, &d, NULL, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ(FI_RECV | FI_MSG | FI_CLAIM, d.flags);
	EXPECT_EQ(sizeof(out), d.len);
	EXPECT_EQ(0, memcmp(in, out, sizeof(out)));
	ASSERT_EQ(1, kfab_test_wait_cq(s.cq, NULL, &d, NULL, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ((void *)out, d.op_context);

	EXPECT_EQ(0, fi_close(&rx->fid));
	EXPECT_EQ(0, fi_close(&tx->fid));
	EXPECT_EQ(0, fi_close(&sep->fid));
	fi_close(&s.ep->fid);
	s.ep = NULL;
	fi_close(&sav->fid);
	fi_close(&rcq->fid);
	test_fi_close(&s);
	test_fi_close(&a);
}

TEST(fi_endpoint_refuses_several_contexts)
{
	struct kfab_test_fi a;
	struct fid_ep *ep;

	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, _test_fi_domain_open(&a, sep_hints()));
	EXPECT_EQ(-FI_EINVAL, fi_endpoint(a.domain, a.info, &ep, NULL));
	a.info->ep_attr->rx_ctx_cnt = 0;
	a.info->ep_attr->tx_ctx_cnt = KFAB_EP_BLOCK_MAX + 1;
	EXPECT_EQ(-FI_EINVAL, fi_scalable_ep(a.domain, a.info, &ep, NULL));
	a.info->ep_attr->type = FI_EP_MSG;
	a.info->ep_attr->tx_ctx_cnt = 1;
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_scalable_ep(a.domain, a.info, &ep,
						  NULL));
	test_fi_close(&a);
}

TEST_HARNESS_MAIN
