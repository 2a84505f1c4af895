// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Datagram endpoints (FI_EP_DGRAM) through libfabric's API: what
 * fi_getinfo offers, the limits (max_msg_size, delivery completion), the
 * data path between two endpoints of this process, and a datagram that
 * has nowhere to go.  Every test SKIPs without /dev/kfab.  Runs inside
 * the test VM with FI_PROVIDER_PATH naming libshim/prov.
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
#define DGRAM_MAX	(64 * 1024)	/* kfab's max_msg_size for datagrams */

static struct fi_info *dgram_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->ep_attr->type = FI_EP_DGRAM;
	hints->caps = FI_MSG | FI_TAGGED;
	return hints;
}

TEST(getinfo_offers_dgram_with_its_limits)
{
	struct fi_info *hints, *info;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	hints = dgram_hints();
	ASSERT_NE(NULL, hints);
	ASSERT_EQ(0, fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, hints,
				&info));
	EXPECT_EQ(FI_EP_DGRAM, info->ep_attr->type);
	EXPECT_EQ(DGRAM_MAX, info->ep_attr->max_msg_size);
	EXPECT_EQ(NULL, info->next);
	fi_freeinfo(info);

	hints->ep_attr->max_msg_size = DGRAM_MAX + 1;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL,
					  0, hints, &info));
	hints->ep_attr->max_msg_size = 0;
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL,
					  0, hints, &info));
	fi_freeinfo(hints);
}

FIXTURE(dgram) {
	struct kfab_test_fi a, b;
	fi_addr_t to_b, to_a;
};

FIXTURE_SETUP(dgram)
{
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_endpoints())
		SKIP(return, "kfab.ko without endpoints (KFAB_IOC_EP_OPEN)");
	ASSERT_EQ(0, _test_fi_side_open(&self->a, dgram_hints(), true));
	ASSERT_EQ(0, _test_fi_side_open(&self->b, dgram_hints(), true));
	ASSERT_EQ(FI_EP_DGRAM, self->a.info->ep_attr->type);
	ASSERT_EQ(1, kfab_test_fi_insert_peer(&self->a, &self->b,
					      &self->to_b));
	ASSERT_EQ(1, kfab_test_fi_insert_peer(&self->b, &self->a,
					      &self->to_a));
}

FIXTURE_TEARDOWN(dgram)
{
	test_fi_close(&self->a);
	test_fi_close(&self->b);
}

static ssize_t wait_cq(struct fid_cq *cq, struct fid_cq *other,
		       struct fi_cq_err_entry *err)
{
	struct fi_cq_tagged_entry e;

	return kfab_test_wait_cq(cq, other, &e, NULL, err, TIMEOUT_MS);
}

TEST_F(dgram, datagrams_and_tagged_datagrams_arrive)
{
	struct fi_cq_err_entry err;
	char *big, *rx;

	RETURN_IF_SETUP_SKIPPED();
	big = malloc(DGRAM_MAX);
	rx = calloc(1, DGRAM_MAX);
	ASSERT_TRUE(big && rx);
	memset(big, 0x5a, DGRAM_MAX);
	/* max_msg_size exactly */
	ASSERT_EQ(0, fi_recv(self->b.ep, rx, DGRAM_MAX, NULL, 0, NULL));
	ASSERT_EQ(0, fi_send(self->a.ep, big, DGRAM_MAX, NULL, self->to_b,
			     NULL));
	ASSERT_EQ(1, wait_cq(self->a.cq, self->b.cq, &err));
	ASSERT_EQ(1, wait_cq(self->b.cq, self->a.cq, &err));
	EXPECT_EQ(0, memcmp(big, rx, DGRAM_MAX));
	/* tagged, the other way */
	ASSERT_EQ(0, fi_trecv(self->a.ep, rx, 16, NULL, 0, 9, 0, NULL));
	ASSERT_EQ(0, fi_tsend(self->b.ep, "dgram", 6, NULL, self->to_a, 9,
			      NULL));
	ASSERT_EQ(1, wait_cq(self->b.cq, self->a.cq, &err));
	ASSERT_EQ(1, wait_cq(self->a.cq, self->b.cq, &err));
	EXPECT_STREQ("dgram", rx);
	free(big);
	free(rx);
}

TEST_F(dgram, oversize_and_reliable_only_sends_are_refused)
{
	struct iovec iov[2];
	struct fi_msg msg = { .msg_iov = iov, .iov_count = 2,
			      .addr = 0 };
	char *big;

	RETURN_IF_SETUP_SKIPPED();
	big = calloc(1, DGRAM_MAX + 1);
	ASSERT_NE(NULL, big);
	EXPECT_EQ(-FI_EMSGSIZE, fi_send(self->a.ep, big, DGRAM_MAX + 1, NULL,
					self->to_b, NULL));
	EXPECT_EQ(-FI_EMSGSIZE, fi_tsend(self->a.ep, big, DGRAM_MAX + 1,
					 NULL, self->to_b, 1, NULL));
	/* The sum of the iovecs counts. */
	iov[0] = (struct iovec){ .iov_base = big, .iov_len = DGRAM_MAX };
	iov[1] = (struct iovec){ .iov_base = big, .iov_len = 1 };
	msg.addr = self->to_b;
	EXPECT_EQ(-FI_EMSGSIZE, fi_sendmsg(self->a.ep, &msg, 0));
	/* fi_cq(3): delivery completion "applies only to reliable endpoints" */
	msg.iov_count = 1;
	EXPECT_EQ(-FI_EBADFLAGS, fi_sendmsg(self->a.ep, &msg,
					    FI_DELIVERY_COMPLETE));
	/* No connection management on datagram endpoints */
	EXPECT_EQ(-FI_ENOSYS, fi_connect(self->a.ep, big, NULL, 0));
	free(big);
}

TEST_F(dgram, datagram_to_a_closed_endpoint_fails_its_send)
{
	struct fi_cq_err_entry err;
	ssize_t rc;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_close(&self->b.ep->fid));
	self->b.ep = NULL;
	ASSERT_EQ(0, fi_send(self->a.ep, "x", 2, NULL, self->to_b, NULL));
	rc = wait_cq(self->a.cq, NULL, &err);
	ASSERT_EQ(-FI_EAVAIL, rc);
	EXPECT_EQ(FI_EHOSTUNREACH, err.err);
}

TEST_HARNESS_MAIN
