// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Poll sets (fi_poll(3)) through libfabric's API: opening, adding and
 * removing CQs and counters, fi_poll() answering the contexts of members
 * with news, and the closing rules (a member cannot be closed while in a
 * set, nor a set with members).  Every test SKIPs without /dev/kfab.
 * Runs inside the test VM with FI_PROVIDER_PATH naming libshim/prov.
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

#include "kselftest_harness.h"
#include "kfab_test.h"

#define TIMEOUT_MS	10000

FIXTURE(poll) {
	struct kfab_test_fi a, b;
	struct fid_cntr *cntr;
	struct fid_poll *ps;
	fi_addr_t to_b;
	int ctx_a, ctx_b, ctx_cntr;
};

FIXTURE_SETUP(poll)
{
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_poll_attr attr = { 0 };

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_endpoints())
		SKIP(return, "kfab.ko without endpoints (KFAB_IOC_EP_OPEN)");
	ASSERT_EQ(0, _test_fi_side_open(&self->a, kfab_test_rdm_hints(),
					true));
	ASSERT_EQ(0, _test_fi_side_open(&self->b, kfab_test_rdm_hints(),
					true));
	ASSERT_EQ(1, kfab_test_fi_insert_peer(&self->a, &self->b,
					      &self->to_b));
	ASSERT_EQ(0, fi_cntr_open(self->a.domain, &cntr_attr, &self->cntr,
				  &self->ctx_cntr));
	self->a.cq->fid.context = &self->ctx_a;
	self->b.cq->fid.context = &self->ctx_b;
	ASSERT_EQ(0, fi_poll_open(self->a.domain, &attr, &self->ps));
}

FIXTURE_TEARDOWN(poll)
{
	if (self->ps) {
		(void)fi_poll_del(self->ps, &self->a.cq->fid, 0);
		(void)fi_poll_del(self->ps, &self->b.cq->fid, 0);
		if (self->cntr)
			(void)fi_poll_del(self->ps, &self->cntr->fid, 0);
		EXPECT_EQ(0, fi_close(&self->ps->fid));
	}
	if (self->cntr)
		EXPECT_EQ(0, fi_close(&self->cntr->fid));
	test_fi_close(&self->a);
	test_fi_close(&self->b);
}

static bool has(void **ctx, int n, void *want)
{
	int i;

	for (i = 0; i < n; i++)
		if (ctx[i] == want)
			return true;
	return false;
}

TEST(poll_open_checks_its_arguments)
{
	struct fi_poll_attr attr = { .flags = 1 };
	struct kfab_test_fi s;
	struct fid_poll *ps;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, _test_fi_domain_open(&s, kfab_test_rdm_hints()));
	EXPECT_EQ(-FI_EINVAL, fi_poll_open(s.domain, NULL, &ps));
	EXPECT_EQ(-FI_EBADFLAGS, fi_poll_open(s.domain, &attr, &ps));
	attr.flags = 0;
	ASSERT_EQ(0, fi_poll_open(s.domain, &attr, &ps));
	EXPECT_EQ(FI_CLASS_POLL, ps->fid.fclass);
	EXPECT_EQ(0, fi_close(&ps->fid));
	EXPECT_EQ(0, _test_fi_close(&s));
}

TEST_F(poll, add_and_del_take_cqs_and_counters_once)
{
	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_poll_add(self->ps, &self->a.av->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_poll_add(self->ps, NULL, 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_poll_add(self->ps, &self->a.cq->fid, 1));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->a.cq->fid, 0));
	EXPECT_EQ(-FI_EALREADY, fi_poll_add(self->ps, &self->a.cq->fid, 0));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cntr->fid, 0));
	EXPECT_EQ(0, fi_poll_del(self->ps, &self->cntr->fid, 0));
	EXPECT_EQ(-FI_ENOENT, fi_poll_del(self->ps, &self->cntr->fid, 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_poll_del(self->ps, &self->a.cq->fid, 1));
}

TEST_F(poll, poll_answers_members_with_news)
{
	void *ctx[4];
	char buf[8];
	int n;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->a.cq->fid, 0));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->b.cq->fid, 0));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cntr->fid, 0));
	EXPECT_EQ(0, fi_poll(self->ps, ctx, 4));
	EXPECT_EQ(-FI_EINVAL, fi_poll(self->ps, NULL, 1));
	EXPECT_EQ(-FI_EINVAL, fi_poll(self->ps, ctx, -1));

	/* A message: both CQs have a completion, after progress by fi_poll. */
	ASSERT_EQ(0, fi_recv(self->b.ep, buf, sizeof(buf), NULL, 0, NULL));
	ASSERT_EQ(0, fi_send(self->a.ep, "poll", 5, NULL, self->to_b, NULL));
	n = fi_poll(self->ps, ctx, 4);
	if (n < 2)
		n = fi_poll(self->ps, ctx, 4);	/* the receiver's turn */
	EXPECT_EQ(2, n);
	EXPECT_TRUE(has(ctx, n, &self->ctx_a));
	EXPECT_TRUE(has(ctx, n, &self->ctx_b));
	/* Still there until read; the count limits the answer. */
	EXPECT_EQ(1, fi_poll(self->ps, ctx, 1));

	/* A counter is news once per change. */
	ASSERT_EQ(0, fi_cntr_add(self->cntr, 3));
	n = fi_poll(self->ps, ctx, 4);
	EXPECT_TRUE(has(ctx, n, &self->ctx_cntr));
	n = fi_poll(self->ps, ctx, 4);
	EXPECT_FALSE(has(ctx, n, &self->ctx_cntr));
}

TEST_F(poll, members_and_sets_close_in_order)
{
	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->b.cq->fid, 0));
	ASSERT_EQ(0, fi_poll_add(self->ps, &self->cntr->fid, 0));
	/* A member stays open while it is one; a set with members too. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->cntr->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->ps->fid));
	ASSERT_EQ(0, fi_poll_del(self->ps, &self->cntr->fid, 0));
	EXPECT_EQ(0, fi_close(&self->cntr->fid));
	self->cntr = NULL;
	ASSERT_EQ(0, fi_poll_del(self->ps, &self->b.cq->fid, 0));
	EXPECT_EQ(0, fi_close(&self->ps->fid));
	self->ps = NULL;
}

TEST_HARNESS_MAIN
