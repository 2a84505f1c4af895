// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The producer side of the submission ring (libshim/msg.c), on the host,
 * without a device: what each fi_msg(3)/fi_tagged(3) call writes into the
 * ring, when the tail is published, and what a full ring answers.
 *
 * The endpoint here is a struct kfab_ep of our own whose "ring region" is
 * plain memory and whose file descriptor is -1: every doorbell fails
 * (-EBADF, logged) and nothing consumes the ring unless the test moves
 * head itself, as the kernel would.  libkfab.so exports nothing of this,
 * so the program is linked with the libshim sources.
 */
#include <stdlib.h>
#include <string.h>

#include "barrier.h"
#include "internal.h"

#include <rdma/fi_tagged.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

#define ENTRIES	4

/* The kernel's region, as the uapi describes it (offsets of our choice). */
struct region {
	uint32_t tail;
	uint32_t pad0[15];
	uint32_t head;
	uint32_t pad1[15];
	struct kfab_sqe sqes[ENTRIES];
};

FIXTURE(ring) {
	struct region r;
	struct kfab_ep ep;
	struct fid_ep *fid;
};

FIXTURE_SETUP(ring)
{
	memset(&self->r, 0xee, sizeof(self->r));	/* stale slots */
	self->r.tail = 0;
	self->r.head = 0;
	memset(&self->ep, 0, sizeof(self->ep));
	ASSERT_EQ(0, pthread_mutex_init(&self->ep.lock, NULL));
	self->ep.fd = -1;
	self->ep.id = 1;
	self->ep.caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV;
	self->ep.enabled = true;
	self->ep.ring.fd = -1;
	self->ep.ring.id = 1;
	self->ep.ring.tail = &self->r.tail;
	self->ep.ring.head = &self->r.head;
	self->ep.ring.sqes = (uint8_t *)self->r.sqes;
	self->ep.ring.entries = ENTRIES;
	self->ep.ring.mask = ENTRIES - 1;
	self->ep.ring.sqe_size = sizeof(struct kfab_sqe);
	self->ep.ep_fid.fid.fclass = FI_CLASS_EP;
	self->ep.ep_fid.msg = (struct fi_ops_msg *)&kfab_ep_msg_ops;
	self->ep.ep_fid.tagged = (struct fi_ops_tagged *)&kfab_ep_tagged_ops;
	self->fid = &self->ep.ep_fid;
}

FIXTURE_TEARDOWN(ring)
{
	pthread_mutex_destroy(&self->ep.lock);
}

static const struct kfab_sqe *slot(FIXTURE_DATA(ring) *self, uint32_t i)
{
	return &self->r.sqes[i % ENTRIES];
}

TEST_F(ring, send_writes_one_entry_and_publishes)
{
	char buf[10];
	const struct kfab_sqe *e;

	ASSERT_EQ(0, fi_send(self->fid, buf, sizeof(buf), NULL, 7, buf));
	EXPECT_EQ(1U, kfab_load_acquire(&self->r.tail));
	e = slot(self, 0);
	EXPECT_EQ(KFAB_OP_SEND, e->opcode);
	EXPECT_EQ(1, e->iov_count);
	EXPECT_EQ(0, e->__reserved);
	EXPECT_EQ(0U, e->__reserved2);
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, e->flags);
	EXPECT_EQ((uintptr_t)buf, e->context);
	EXPECT_EQ(7ULL, e->addr);
	EXPECT_EQ((uintptr_t)buf, e->iov[0].base);
	EXPECT_EQ(sizeof(buf), e->iov[0].len);
	/* The rest of the union is zero, not stale. */
	EXPECT_EQ(0ULL, e->iov[1].base);
	EXPECT_EQ(0ULL, e->iov[3].len);
	EXPECT_EQ(ENTRIES - 1, kfab_ep_ring_space(&self->ep));
	/* Progress sees a request the kernel has not taken. */
	EXPECT_TRUE(kfab_ep_progress(&self->ep));
	self->r.head = 1;
	EXPECT_FALSE(kfab_ep_progress(&self->ep));
}

TEST_F(ring, recv_source_only_when_directed)
{
	char buf[10];

	ASSERT_EQ(0, fi_recv(self->fid, buf, sizeof(buf), NULL, 5, NULL));
	EXPECT_EQ(KFAB_OP_RECV, slot(self, 0)->opcode);
	EXPECT_EQ(5ULL, slot(self, 0)->addr);
	ASSERT_EQ(0, fi_recv(self->fid, buf, sizeof(buf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	EXPECT_EQ(~0ULL, slot(self, 1)->addr);
	self->ep.caps &= ~FI_DIRECTED_RECV;
	ASSERT_EQ(0, fi_recv(self->fid, buf, sizeof(buf), NULL, 5, NULL));
	EXPECT_EQ(~0ULL, slot(self, 2)->addr);
}

TEST_F(ring, tagged_carry_tag_and_ignore)
{
	char buf[10];

	ASSERT_EQ(0, fi_tsend(self->fid, buf, 3, NULL, 2, 0xabcd, NULL));
	EXPECT_EQ(KFAB_OP_TSEND, slot(self, 0)->opcode);
	EXPECT_EQ(0xabcdULL, slot(self, 0)->tag);
	ASSERT_EQ(0, fi_trecv(self->fid, buf, 3, NULL, FI_ADDR_UNSPEC, 0xab00,
			      0xff, NULL));
	EXPECT_EQ(KFAB_OP_TRECV, slot(self, 1)->opcode);
	EXPECT_EQ(0xab00ULL, slot(self, 1)->tag);
	EXPECT_EQ(0xffULL, slot(self, 1)->ignore);
}

TEST_F(ring, inject_copies_inline_without_completion)
{
	char buf[KFAB_INLINE_MAX + 1];
	const struct kfab_sqe *e;
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char)i;
	ASSERT_EQ(0, fi_inject(self->fid, buf, KFAB_INLINE_MAX, 3));
	e = slot(self, 0);
	EXPECT_EQ((uint32_t)KFAB_SQE_INLINE, e->flags);
	EXPECT_EQ(0, e->iov_count);
	EXPECT_EQ((uint64_t)KFAB_INLINE_MAX, e->len);
	EXPECT_EQ(0, memcmp(e->inline_data, buf, KFAB_INLINE_MAX));
	EXPECT_EQ(-FI_EINVAL, fi_inject(self->fid, buf, sizeof(buf), 3));
	ASSERT_EQ(0, fi_tinjectdata(self->fid, buf, 5, 0x99, 3, 0x42));
	e = slot(self, 1);
	EXPECT_EQ((uint32_t)(KFAB_SQE_INLINE | KFAB_SQE_REMOTE_CQ_DATA),
		  e->flags);
	EXPECT_EQ(0x99ULL, e->data);
	EXPECT_EQ(0x42ULL, e->tag);
	EXPECT_EQ(5ULL, e->len);
	EXPECT_EQ(2U, self->r.tail);
}

TEST_F(ring, senddata_and_msg_flags)
{
	char buf[8];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg msg = {
		.msg_iov = &iov, .iov_count = 1, .addr = 4, .data = 0x77,
	};

	ASSERT_EQ(0, fi_senddata(self->fid, buf, 8, NULL, 0x55, 4, NULL));
	EXPECT_EQ((uint32_t)(KFAB_SQE_COMPLETION | KFAB_SQE_REMOTE_CQ_DATA),
		  slot(self, 0)->flags);
	EXPECT_EQ(0x55ULL, slot(self, 0)->data);
	/* fi_sendmsg: data only with FI_REMOTE_CQ_DATA. */
	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg, 0));
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, slot(self, 1)->flags);
	EXPECT_EQ(0ULL, slot(self, 1)->data);
	self->r.head = 2;
	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg, FI_REMOTE_CQ_DATA));
	EXPECT_EQ(0x77ULL, slot(self, 2)->data);
	/* FI_INJECT in a sendmsg: inline, and a completion as usual. */
	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg, FI_INJECT));
	EXPECT_EQ((uint32_t)(KFAB_SQE_COMPLETION | KFAB_SQE_INLINE),
		  slot(self, 3)->flags);
	self->r.head = 4;
	/* FI_DELIVERY_COMPLETE and FI_FENCE travel as flags of their own... */
	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg,
				FI_DELIVERY_COMPLETE | FI_FENCE));
	EXPECT_EQ((uint32_t)(KFAB_SQE_COMPLETION | KFAB_SQE_DELIVERY_COMPLETE |
			     KFAB_SQE_FENCE), slot(self, 4)->flags);
	/* ...but an inline payload cannot wait for its delivery. */
	EXPECT_EQ(-FI_EBADFLAGS, fi_sendmsg(self->fid, &msg,
					    FI_DELIVERY_COMPLETE | FI_INJECT));
	/* FI_MULTI_RECV carries FI_OPT_MIN_MULTI_RECV in the entry's data. */
	self->ep.min_multi_recv = 123;
	ASSERT_EQ(0, fi_recvmsg(self->fid, &msg, FI_MULTI_RECV));
	EXPECT_EQ((uint32_t)(KFAB_SQE_COMPLETION | KFAB_SQE_MULTI_RECV),
		  slot(self, 5)->flags);
	EXPECT_EQ(123ULL, slot(self, 5)->data);
}

TEST_F(ring, selective_completion)
{
	char buf[8];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1 };

	self->ep.tx_selective = true;
	ASSERT_EQ(0, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(0U, slot(self, 0)->flags);
	ASSERT_EQ(0, fi_tsendmsg(self->fid, &msg, FI_COMPLETION));
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, slot(self, 1)->flags);
	/* The default flags of fi_control(FI_SETOPSFLAG) count too. */
	self->ep.tx_op_flags = FI_COMPLETION;
	ASSERT_EQ(0, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, slot(self, 2)->flags);
	/* Receives follow their own binding. */
	ASSERT_EQ(0, fi_recv(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, slot(self, 3)->flags);
}

TEST_F(ring, more_publishes_at_the_end_of_the_batch)
{
	char buf[8];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };

	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg, FI_MORE));
	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg, FI_MORE));
	EXPECT_EQ(0U, self->r.tail);
	/* Nothing published: progress has nothing to start. */
	EXPECT_FALSE(kfab_ep_progress(&self->ep));
	EXPECT_EQ(ENTRIES - 2, kfab_ep_ring_space(&self->ep));
	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg, 0));
	EXPECT_EQ(3U, self->r.tail);
}

TEST_F(ring, full_ring_is_eagain_until_head_moves)
{
	char buf[8];
	int i;

	for (i = 0; i < ENTRIES; i++)
		ASSERT_EQ(0, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(0, kfab_ep_ring_space(&self->ep));
	EXPECT_EQ(-FI_EAGAIN, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_recv(self->fid, buf, 8, NULL, 0, NULL));
	/* The kernel consumed two. */
	kfab_store_release(&self->r.head, 2);
	EXPECT_EQ(2, kfab_ep_ring_space(&self->ep));
	ASSERT_EQ(0, fi_recv(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(KFAB_OP_RECV, slot(self, 4)->opcode);
	EXPECT_EQ(5U, self->r.tail);
	/* A full batch is published, so the kernel can make room. */
	ASSERT_EQ(0, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	/* A head that is not the kernel's counts as a full ring. */
	self->r.head = 100;
	EXPECT_EQ(0, kfab_ep_ring_space(&self->ep));
	EXPECT_EQ(-FI_EAGAIN, fi_send(self->fid, buf, 8, NULL, 0, NULL));
}

TEST_F(ring, argument_checks)
{
	char buf[8];
	struct iovec iov[KFAB_IOV_MAX + 1];
	int i;

	for (i = 0; i < KFAB_IOV_MAX + 1; i++) {
		iov[i].iov_base = buf;
		iov[i].iov_len = 1;
	}
	EXPECT_EQ(-FI_EINVAL, fi_sendv(self->fid, iov, NULL, KFAB_IOV_MAX + 1,
				       0, NULL));
	ASSERT_EQ(0, fi_sendv(self->fid, iov, NULL, KFAB_IOV_MAX, 0, NULL));
	EXPECT_EQ(KFAB_IOV_MAX, slot(self, 0)->iov_count);
	EXPECT_EQ(-FI_EMSGSIZE, fi_send(self->fid, buf, (1ULL << 30) + 1,
					NULL, 0, NULL));
	EXPECT_EQ(-FI_EMSGSIZE, fi_trecv(self->fid, buf, (1ULL << 30) + 1,
					 NULL, 0, 0, 0, NULL));
	iov[0].iov_len = 1ULL << 29;
	iov[1].iov_len = 1ULL << 29;
	iov[2].iov_len = 1;
	EXPECT_EQ(-FI_EMSGSIZE, fi_recvv(self->fid, iov, NULL, 3, 0, NULL));
	self->ep.enabled = false;
	EXPECT_EQ(-FI_EOPBADSTATE, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(-FI_EOPBADSTATE, kfab_ep_ring_space(&self->ep));
	EXPECT_EQ(1U, self->r.tail);
}

TEST_HARNESS_MAIN
