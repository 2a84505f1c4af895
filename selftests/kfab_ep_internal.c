// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The producer side of the submission ring (libshim/msg.c), on the host,
 * without a device: what each fi_msg(3)/fi_tagged(3) call writes into the
 * ring, when the tail is published, and what a full ring answers.
 *
 * The endpoint here is a struct shim_ep of our own whose "ring region" is
 * plain memory and whose file descriptor is -1: every doorbell fails
 * (-EBADF, logged) and nothing consumes the ring unless the test moves
 * head itself, as the kernel would.  libkfab.so exports nothing of this,
 * so the program is linked with the libshim sources.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	struct shim_domain dom;
	struct shim_ep ep;
	struct fid_ep *fid;
};

/*
 * Every ring test runs under both models: FI_THREAD_SAFE (the endpoint's
 * lock taken) and FI_THREAD_DOMAIN (the application serialises, the data
 * path skips it: shim_data_lock()).
 */
FIXTURE_VARIANT(ring) {
	bool serial;
};

FIXTURE_VARIANT_ADD(ring, thread_safe) {
	.serial = false,
};

FIXTURE_VARIANT_ADD(ring, thread_domain) {
	.serial = true,
};

FIXTURE_SETUP(ring)
{
	memset(&self->r, 0xee, sizeof(self->r));	/* stale slots */
	self->r.tail = 0;
	self->r.head = 0;
	memset(&self->dom, 0, sizeof(self->dom));
	self->dom.serial = variant->serial;
	memset(&self->ep, 0, sizeof(self->ep));
	ASSERT_EQ(0, pthread_mutex_init(&self->ep.lock, NULL));
	self->ep.domain = &self->dom;
	self->ep.fd = -1;
	self->ep.id = 1;
	self->ep.caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV;
	self->ep.type = FI_EP_RDM;
	self->ep.max_msg_size = SHIM_MAX_MSG_SIZE;
	self->ep.enabled = true;
	self->ep.ring.fd = -1;
	self->ep.ring.id = 1;
	self->ep.ring.tail = &self->r.tail;
	self->ep.ring.head = &self->r.head;
	self->ep.ring.sqes = (uint8_t *)self->r.sqes;
	self->ep.ring.entries = ENTRIES;
	self->ep.ring.mask = ENTRIES - 1;
	self->ep.ring.entry_size = sizeof(struct kfab_sqe);
	self->ep.ep_fid.fid.fclass = FI_CLASS_EP;
	self->ep.ep_fid.msg = (struct fi_ops_msg *)&shim_ep_msg_ops;
	self->ep.ep_fid.tagged = (struct fi_ops_tagged *)&shim_ep_tagged_ops;
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

/* Above KFAB_INLINE_MAX: a send that travels as an iovec. */
#define BIG	(KFAB_INLINE_MAX + 1)

TEST_F(ring, send_writes_one_entry_and_publishes)
{
	char buf[BIG];
	const struct kfab_sqe *e;

	ASSERT_EQ(0, fi_send(self->fid, buf, sizeof(buf), NULL, 7, buf));
	EXPECT_EQ(1U, shim_load_acquire(&self->r.tail));
	e = slot(self, 0);
	EXPECT_EQ(KFAB_OP_SEND, e->opcode);
	EXPECT_EQ(1, e->iov_count);
	EXPECT_EQ(0, e->rx_index);
	EXPECT_EQ(0U, e->__reserved2);
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, e->flags);
	EXPECT_EQ((uintptr_t)buf, e->context);
	EXPECT_EQ(7ULL, e->addr);
	EXPECT_EQ((uintptr_t)buf, e->iov[0].base);
	EXPECT_EQ(sizeof(buf), e->iov[0].len);
	/* The header is written whole over a stale slot ... */
	EXPECT_EQ(0ULL, e->tag);
	EXPECT_EQ(0ULL, e->ignore);
	EXPECT_EQ(0ULL, e->data);
	EXPECT_EQ(0ULL, e->len);
	/* ... the union only as far as iov_count: the kernel reads no more. */
	EXPECT_EQ(0xeeeeeeeeeeeeeeeeULL, e->iov[1].base);
	EXPECT_EQ(ENTRIES - 1, shim_ep_ring_space(&self->ep));
	/* Progress sees a request the kernel has not taken. */
	EXPECT_TRUE(shim_ep_progress(&self->ep));
	self->r.head = 1;
	EXPECT_FALSE(shim_ep_progress(&self->ep));
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
	char buf[BIG];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct iovec small = { .iov_base = buf, .iov_len = 8 };
	struct fi_msg msg = {
		.msg_iov = &iov, .iov_count = 1, .addr = 4, .data = 0x77,
	};
	struct fi_msg inj = { .msg_iov = &small, .iov_count = 1, .addr = 4 };

	ASSERT_EQ(0, fi_senddata(self->fid, buf, BIG, NULL, 0x55, 4, NULL));
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
	ASSERT_EQ(0, fi_sendmsg(self->fid, &inj, FI_INJECT));
	EXPECT_EQ((uint32_t)(KFAB_SQE_COMPLETION | KFAB_SQE_INLINE),
		  slot(self, 3)->flags);
	EXPECT_EQ(-FI_EINVAL, fi_sendmsg(self->fid, &msg, FI_INJECT));
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
	char buf[BIG];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1 };

	self->ep.tx_selective = true;
	ASSERT_EQ(0, fi_send(self->fid, buf, BIG, NULL, 0, NULL));
	EXPECT_EQ(0U, slot(self, 0)->flags);
	ASSERT_EQ(0, fi_tsendmsg(self->fid, &msg, FI_COMPLETION));
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, slot(self, 1)->flags);
	/* The default flags of fi_control(FI_SETOPSFLAG) count too. */
	self->ep.tx_op_flags = FI_COMPLETION;
	ASSERT_EQ(0, fi_send(self->fid, buf, BIG, NULL, 0, NULL));
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
	EXPECT_FALSE(shim_ep_progress(&self->ep));
	EXPECT_EQ(ENTRIES - 2, shim_ep_ring_space(&self->ep));
	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg, 0));
	EXPECT_EQ(3U, self->r.tail);
}

TEST_F(ring, full_ring_is_eagain_until_head_moves)
{
	char buf[8];
	int i;

	for (i = 0; i < ENTRIES; i++)
		ASSERT_EQ(0, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(0, shim_ep_ring_space(&self->ep));
	EXPECT_EQ(-FI_EAGAIN, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_recv(self->fid, buf, 8, NULL, 0, NULL));
	/* The kernel consumed two. */
	shim_store_release(&self->r.head, 2);
	EXPECT_EQ(2, shim_ep_ring_space(&self->ep));
	ASSERT_EQ(0, fi_recv(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(KFAB_OP_RECV, slot(self, 4)->opcode);
	EXPECT_EQ(5U, self->r.tail);
	/* A full batch is published, so the kernel can make room. */
	ASSERT_EQ(0, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	/* A head that is not the kernel's counts as a full ring. */
	self->r.head = 100;
	EXPECT_EQ(0, shim_ep_ring_space(&self->ep));
	EXPECT_EQ(-FI_EAGAIN, fi_send(self->fid, buf, 8, NULL, 0, NULL));
}

struct held_send {
	struct fid_ep *fid;
	char buf[8];
	ssize_t ret;
	int done;
};

static void *send_in_thread(void *arg)
{
	struct held_send *h = arg;

	h->ret = fi_send(h->fid, h->buf, sizeof(h->buf), NULL, 7, NULL);
	__atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The endpoint's lock, held by someone else: under FI_THREAD_SAFE a send
 * and a receive wait for it; under FI_THREAD_DOMAIN they do not take it
 * (the application serialises), and only the data path skips it.
 */
TEST_F(ring, data_path_lock_follows_threading)
{
	struct held_send h = { .fid = self->fid };
	char buf[8];
	pthread_t t;

	ASSERT_EQ(0, pthread_mutex_lock(&self->ep.lock));
	if (variant->serial) {
		EXPECT_EQ(0, fi_send(self->fid, buf, sizeof(buf), NULL, 7,
				     NULL));
		EXPECT_EQ(0, fi_recv(self->fid, buf, sizeof(buf), NULL,
				     FI_ADDR_UNSPEC, NULL));
		EXPECT_EQ(2U, shim_load_acquire(&self->r.tail));
		/* Still ours: nothing unlocked what it did not lock. */
		EXPECT_EQ(EBUSY, pthread_mutex_trylock(&self->ep.lock));
		ASSERT_EQ(0, pthread_mutex_unlock(&self->ep.lock));
		return;
	}
	ASSERT_EQ(0, pthread_create(&t, NULL, send_in_thread, &h));
	usleep(100000);
	EXPECT_EQ(0, __atomic_load_n(&h.done, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0U, shim_load_acquire(&self->r.tail));
	ASSERT_EQ(0, pthread_mutex_unlock(&self->ep.lock));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(1, h.done);
	EXPECT_EQ(0, h.ret);
	EXPECT_EQ(1U, shim_load_acquire(&self->r.tail));
}

TEST_F(ring, argument_checks)
{
	char buf[BIG];
	struct iovec iov[KFAB_IOV_MAX + 1];
	int i;

	for (i = 0; i < KFAB_IOV_MAX + 1; i++) {
		iov[i].iov_base = buf;
		iov[i].iov_len = sizeof(buf);
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
	EXPECT_EQ(-FI_EOPBADSTATE, shim_ep_ring_space(&self->ep));
	EXPECT_EQ(1U, self->r.tail);
}

/*
 * A send of at most KFAB_INLINE_MAX bytes carries its payload in the entry
 * (its buffers concatenated), with its completion as asked; one byte more,
 * FI_DELIVERY_COMPLETE or a NULL buffer, and it carries its iovecs.
 */
TEST_F(ring, small_sends_travel_inline)
{
	char buf[BIG], part[3][KFAB_INLINE_MAX / 2];
	struct iovec iov[3];
	struct fi_msg msg = { .msg_iov = iov, .iov_count = 1 };
	const struct kfab_sqe *e;
	int i;

	for (i = 0; i < BIG; i++)
		buf[i] = (char)i;
	ASSERT_EQ(0, fi_send(self->fid, buf, KFAB_INLINE_MAX, NULL, 2, buf));
	e = slot(self, 0);
	EXPECT_EQ((uint32_t)(KFAB_SQE_COMPLETION | KFAB_SQE_INLINE), e->flags);
	EXPECT_EQ(0, e->iov_count);
	EXPECT_EQ((uint64_t)KFAB_INLINE_MAX, e->len);
	EXPECT_EQ(0, memcmp(e->inline_data, buf, KFAB_INLINE_MAX));
	EXPECT_EQ((uintptr_t)buf, e->context);

	ASSERT_EQ(0, fi_send(self->fid, buf, BIG, NULL, 2, NULL));
	e = slot(self, 1);
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, e->flags);
	EXPECT_EQ(1, e->iov_count);
	EXPECT_EQ((uint64_t)BIG, e->iov[0].len);

	/* Two buffers, one payload; a third would pass the limit. */
	for (i = 0; i < 3; i++) {
		memset(part[i], 'a' + i, sizeof(part[i]));
		iov[i].iov_base = part[i];
		iov[i].iov_len = sizeof(part[i]);
	}
	msg.iov_count = 2;
	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg, 0));
	e = slot(self, 2);
	EXPECT_EQ((uint32_t)(KFAB_SQE_COMPLETION | KFAB_SQE_INLINE), e->flags);
	EXPECT_EQ((uint64_t)KFAB_INLINE_MAX, e->len);
	EXPECT_EQ(0, memcmp(e->inline_data, part[0], sizeof(part[0])));
	EXPECT_EQ(0, memcmp(e->inline_data + sizeof(part[0]), part[1],
			    sizeof(part[1])));
	msg.iov_count = 3;
	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg, 0));
	EXPECT_EQ(3, slot(self, 3)->iov_count);
	self->r.head = 4;

	/* Delivered from the caller's buffer: never inline. */
	msg.iov_count = 1;
	ASSERT_EQ(0, fi_sendmsg(self->fid, &msg, FI_DELIVERY_COMPLETE));
	EXPECT_EQ((uint32_t)(KFAB_SQE_COMPLETION | KFAB_SQE_DELIVERY_COMPLETE),
		  slot(self, 4)->flags);
	EXPECT_EQ(1, slot(self, 4)->iov_count);
	/* A NULL buffer fails in the kernel (FI_EFAULT), as a bad one does. */
	ASSERT_EQ(0, fi_send(self->fid, NULL, 8, NULL, 2, NULL));
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, slot(self, 5)->flags);
	EXPECT_EQ(0ULL, slot(self, 5)->iov[0].base);
	/* Tagged sends too. */
	ASSERT_EQ(0, fi_tsend(self->fid, buf, 8, NULL, 2, 0x33, NULL));
	EXPECT_EQ((uint32_t)(KFAB_SQE_COMPLETION | KFAB_SQE_INLINE),
		  slot(self, 6)->flags);
	EXPECT_EQ(0x33ULL, slot(self, 6)->tag);
	EXPECT_EQ(8ULL, slot(self, 6)->len);
}

/* FI_PEEK, FI_CLAIM and FI_DISCARD of fi_trecvmsg (fi_tagged(3)). */
TEST_F(ring, peek_claim_discard_flags)
{
	char buf[8];
	struct fi_context ctx;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg_tagged msg = {
		.msg_iov = &iov, .iov_count = 1, .tag = 5, .context = &ctx,
		.addr = FI_ADDR_UNSPEC,
	};
	struct fi_msg umsg = { .msg_iov = &iov, .iov_count = 1 };

	/* A peek takes no buffer and always reports. */
	self->ep.rx_selective = true;
	ASSERT_EQ(0, fi_trecvmsg(self->fid, &msg, FI_PEEK));
	EXPECT_EQ(KFAB_OP_TRECV, slot(self, 0)->opcode);
	EXPECT_EQ((uint32_t)(KFAB_SQE_PEEK | KFAB_SQE_COMPLETION),
		  slot(self, 0)->flags);
	EXPECT_EQ(0, slot(self, 0)->iov_count);
	EXPECT_EQ(5ULL, slot(self, 0)->tag);
	ASSERT_EQ(0, fi_trecvmsg(self->fid, &msg, FI_PEEK | FI_CLAIM));
	EXPECT_EQ((uint32_t)(KFAB_SQE_PEEK | KFAB_SQE_CLAIM |
			     KFAB_SQE_COMPLETION), slot(self, 1)->flags);
	EXPECT_EQ((uintptr_t)&ctx, slot(self, 1)->context);
	self->r.head = 2;
	/* The claiming receive brings its buffer... */
	ASSERT_EQ(0, fi_trecvmsg(self->fid, &msg, FI_CLAIM | FI_COMPLETION));
	EXPECT_EQ((uint32_t)(KFAB_SQE_CLAIM | KFAB_SQE_COMPLETION),
		  slot(self, 2)->flags);
	EXPECT_EQ(1, slot(self, 2)->iov_count);
	EXPECT_EQ((uintptr_t)buf, slot(self, 2)->iov[0].base);
	/* ...a discarding one none. */
	ASSERT_EQ(0, fi_trecvmsg(self->fid, &msg, FI_CLAIM | FI_DISCARD));
	EXPECT_EQ((uint32_t)(KFAB_SQE_CLAIM | KFAB_SQE_DISCARD),
		  slot(self, 3)->flags);
	EXPECT_EQ(0, slot(self, 3)->iov_count);
	self->r.head = 4;
	ASSERT_EQ(0, fi_trecvmsg(self->fid, &msg, FI_PEEK | FI_DISCARD));
	EXPECT_EQ((uint32_t)(KFAB_SQE_PEEK | KFAB_SQE_DISCARD |
			     KFAB_SQE_COMPLETION), slot(self, 4)->flags);
	/* FI_DISCARD alone; FI_CLAIM without a context; untagged. */
	EXPECT_EQ(-FI_EBADFLAGS, fi_trecvmsg(self->fid, &msg, FI_DISCARD));
	EXPECT_EQ(-FI_EBADFLAGS, fi_trecvmsg(self->fid, &msg,
					     FI_PEEK | FI_CLAIM | FI_DISCARD));
	msg.context = NULL;
	EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(self->fid, &msg, FI_CLAIM));
	EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(self->fid, &msg,
					  FI_PEEK | FI_CLAIM));
	/* A plain peek needs no context. */
	ASSERT_EQ(0, fi_trecvmsg(self->fid, &msg, FI_PEEK));
	EXPECT_EQ(-FI_EBADFLAGS, fi_recvmsg(self->fid, &umsg, FI_PEEK));
	EXPECT_EQ(-FI_EBADFLAGS, fi_recvmsg(self->fid, &umsg, FI_CLAIM));
	EXPECT_EQ(-FI_EBADFLAGS, fi_recvmsg(self->fid, &umsg, FI_DISCARD));
	EXPECT_EQ(6U, self->r.tail);
}

/* ---- a shared receive context, and an endpoint bound to it ---- */

FIXTURE(srx) {
	struct region r, er;
	struct shim_srx srx;
	struct shim_ep ep;
	struct shim_domain dom;
	struct fid_ep *fid;
};

FIXTURE_SETUP(srx)
{
	memset(&self->r, 0xee, sizeof(self->r));
	self->r.tail = self->r.head = 0;
	memset(&self->er, 0, sizeof(self->er));
	memset(&self->srx, 0, sizeof(self->srx));
	memset(&self->ep, 0, sizeof(self->ep));
	ASSERT_EQ(0, pthread_mutex_init(&self->srx.lock, NULL));
	ASSERT_EQ(0, pthread_mutex_init(&self->ep.lock, NULL));
	self->srx.domain = &self->dom;
	self->srx.fd = -1;
	self->srx.id = 2;
	self->srx.caps = SHIM_RX_CAPS;
	self->srx.ring.fd = -1;
	self->srx.ring.id = 2;
	self->srx.ring.tail = &self->r.tail;
	self->srx.ring.head = &self->r.head;
	self->srx.ring.sqes = (uint8_t *)self->r.sqes;
	self->srx.ring.entries = ENTRIES;
	self->srx.ring.mask = ENTRIES - 1;
	self->srx.ring.entry_size = sizeof(struct kfab_sqe);
	self->srx.ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	self->srx.ep_fid.msg = (struct fi_ops_msg *)&shim_srx_msg_ops;
	self->srx.ep_fid.tagged = (struct fi_ops_tagged *)&shim_srx_tagged_ops;
	self->fid = &self->srx.ep_fid;

	self->ep.domain = &self->dom;
	self->ep.fd = -1;
	self->ep.id = 3;
	self->ep.caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV;
	self->ep.type = FI_EP_RDM;
	self->ep.max_msg_size = SHIM_MAX_MSG_SIZE;
	self->ep.ring.fd = -1;
	self->ep.ring.tail = &self->er.tail;
	self->ep.ring.head = &self->er.head;
	self->ep.ring.sqes = (uint8_t *)self->er.sqes;
	self->ep.ring.entries = ENTRIES;
	self->ep.ring.mask = ENTRIES - 1;
	self->ep.ring.entry_size = sizeof(struct kfab_sqe);
	self->ep.ep_fid.fid.fclass = FI_CLASS_EP;
	self->ep.ep_fid.msg = (struct fi_ops_msg *)&shim_ep_msg_ops;
	self->ep.ep_fid.tagged = (struct fi_ops_tagged *)&shim_ep_tagged_ops;
}

FIXTURE_TEARDOWN(srx)
{
	pthread_mutex_destroy(&self->srx.lock);
	pthread_mutex_destroy(&self->ep.lock);
}

TEST_F(srx, receives_go_to_the_srx_ring)
{
	char buf[8];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = 1 };

	ASSERT_EQ(0, fi_recv(self->fid, buf, 8, NULL, 3, buf));
	EXPECT_EQ(KFAB_OP_RECV, self->r.sqes[0].opcode);
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, self->r.sqes[0].flags);
	/* FI_DIRECTED_RECV is the SRX's cap. */
	EXPECT_EQ(3ULL, self->r.sqes[0].addr);
	EXPECT_EQ((uintptr_t)buf, self->r.sqes[0].context);
	/* No endpoint enabled: published, for the first enable to ring. */
	EXPECT_EQ(1U, self->r.tail);
	EXPECT_FALSE(shim_srx_progress(&self->srx));
	self->srx.min_multi_recv = 99;
	ASSERT_EQ(0, fi_recvmsg(self->fid, &msg, FI_MULTI_RECV));
	EXPECT_EQ((uint32_t)(KFAB_SQE_MULTI_RECV | KFAB_SQE_COMPLETION),
		  self->r.sqes[1].flags);
	EXPECT_EQ(99ULL, self->r.sqes[1].data);
	ASSERT_EQ(0, fi_trecv(self->fid, buf, 8, NULL, FI_ADDR_UNSPEC, 7, 1,
			      NULL));
	EXPECT_EQ(KFAB_OP_TRECV, self->r.sqes[2].opcode);
	EXPECT_EQ(7ULL, self->r.sqes[2].tag);
	EXPECT_EQ(1ULL, self->r.sqes[2].ignore);
	self->srx.caps &= ~FI_DIRECTED_RECV;
	ASSERT_EQ(0, fi_recv(self->fid, buf, 8, NULL, 3, buf));
	EXPECT_EQ(~0ULL, self->r.sqes[3].addr);
	/* Full, and no endpoint to ring for: -FI_EAGAIN at once. */
	EXPECT_EQ(0U, shim_ring_space(&self->srx.ring));
	EXPECT_EQ(-FI_EAGAIN, fi_recv(self->fid, buf, 8, NULL, 0, NULL));
	/* Sends have no place on an SRX. */
	EXPECT_EQ(-FI_ENOSYS, fi_send(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_inject(self->fid, buf, 8, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_tsend(self->fid, buf, 8, NULL, 0, 1, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_tinjectdata(self->fid, buf, 8, 1, 0, 1));
	EXPECT_EQ(-FI_ENOSYS, fi_sendmsg(self->fid, &msg, 0));
}

TEST_F(srx, bound_endpoint_posts_no_receives)
{
	char buf[8];
	struct shim_domain other;

	self->ep.enabled = true;
	ASSERT_EQ(0, shim_srx_bind_ep(&self->srx, &self->ep));
	EXPECT_EQ(1U, self->srx.bound);
	self->ep.srx = &self->srx;
	EXPECT_EQ(-FI_EOPBADSTATE, fi_recv(&self->ep.ep_fid, buf, 8, NULL, 0,
					   NULL));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_trecv(&self->ep.ep_fid, buf, 8, NULL, 0,
					    1, 0, NULL));
	/* Its sends still go through its own ring. */
	ASSERT_EQ(0, fi_send(&self->ep.ep_fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(1U, self->er.tail);
	EXPECT_EQ(0U, self->r.tail);
	shim_srx_unbind_ep(&self->srx, &self->ep, false);
	EXPECT_EQ(0U, self->srx.bound);
	/* Subset rule and domain. */
	self->srx.caps = FI_MSG | FI_RECV;
	EXPECT_EQ(-FI_EINVAL, shim_srx_bind_ep(&self->srx, &self->ep));
	self->ep.caps = FI_MSG | FI_RECV | FI_SEND | FI_LOCAL_COMM;
	EXPECT_EQ(0, shim_srx_bind_ep(&self->srx, &self->ep));
	shim_srx_unbind_ep(&self->srx, &self->ep, false);
	self->ep.domain = &other;
	EXPECT_EQ(-FI_EDOMAIN, shim_srx_bind_ep(&self->srx, &self->ep));
	EXPECT_EQ(0U, self->srx.bound);
}

/* Success completions are left out only if every live endpoint says so. */
TEST_F(srx, selective_only_when_all_endpoints_are)
{
	struct shim_ep ep2 = { 0 };
	char buf[8];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };

	ep2.domain = &self->dom;
	self->ep.rx_selective = true;
	ASSERT_EQ(0, shim_srx_bind_ep(&self->srx, &self->ep));
	ASSERT_EQ(0, shim_srx_bind_ep(&self->srx, &ep2));
	EXPECT_FALSE(shim_srx_selective(&self->srx));
	/* Enabling rings the doorbell of what waited (fd -1: logged). */
	shim_srx_ep_enabled(&self->srx, &self->ep);
	EXPECT_TRUE(shim_srx_selective(&self->srx));
	ASSERT_EQ(0, fi_recv(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ(0U, self->r.sqes[0].flags);
	ASSERT_EQ(0, fi_recvmsg(self->fid, &msg, FI_COMPLETION));
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, self->r.sqes[1].flags);
	shim_srx_ep_enabled(&self->srx, &ep2);
	EXPECT_FALSE(shim_srx_selective(&self->srx));
	ASSERT_EQ(0, fi_recv(self->fid, buf, 8, NULL, 0, NULL));
	EXPECT_EQ((uint32_t)KFAB_SQE_COMPLETION, self->r.sqes[2].flags);
	shim_srx_unbind_ep(&self->srx, &ep2, true);
	EXPECT_TRUE(shim_srx_selective(&self->srx));
	shim_srx_unbind_ep(&self->srx, &self->ep, true);
	EXPECT_FALSE(shim_srx_selective(&self->srx));
	EXPECT_EQ(0U, self->srx.bound);
	EXPECT_EQ(0U, self->srx.live);
}

TEST_HARNESS_MAIN
