// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Endpoints and messages through the raw ABI: KFAB_IOC_EP_*, the
 * submission ring and the CQ ring, without libshim.  Each endpoint lives
 * in a file of its own, as if in a process of its own.  What the kernel
 * must do with a hostile ring is here too.
 *
 * Needs /dev/kfab (the VM); on the host every test SKIPs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kfab_test.h"
#include "kfab_raw_ep.h"

FIXTURE(msg) {
	struct raw_ep a, b;
	uint64_t a_to_b, b_to_a;
};

FIXTURE_SETUP(msg)
{
	self->a.fd = self->b.fd = -1;
	if (!kfab_have_device())
		SKIP(return, "%s absent: needs kfab.ko (VM)", KFAB_DEV);
	ASSERT_EQ(0, ep_setup(&self->a, true));
	ASSERT_EQ(0, ep_setup(&self->b, true));
	self->a_to_b = peer(&self->a, &self->b);
	self->b_to_a = peer(&self->b, &self->a);
	ASSERT_NE(ANY, self->a_to_b);
	ASSERT_NE(ANY, self->b_to_a);
}

FIXTURE_TEARDOWN(msg)
{
	ep_close(&self->a);
	ep_close(&self->b);
}

TEST(control_path_errors)
{
	struct kfab_ep_open o = { .size = sizeof(o), .type = KFAB_EP_TYPE_RDM };
	struct raw_ep r;
	struct kfab_sqe s = { .opcode = KFAB_OP_RECV };

	if (!kfab_have_device())
		SKIP(return, "needs kfab.ko");
	ASSERT_EQ(0, ep_setup(&r, false));
	o.domain_id = r.dom;
	o.type = 2;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.type = KFAB_EP_TYPE_RDM;
	o.sq_entries = 3;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.sq_entries = KFAB_SQ_MAX_ENTRIES * 2;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.sq_entries = 0;
	o.flags = 1 << 3;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.flags = 0;
	o.domain_id = r.cq.id;
	EXPECT_EQ(-ENOENT, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));

	/* Nothing runs before enable, and enable needs an AV. */
	queue(&r, &s);
	test_err_doorbell(EINVAL, r.fd, r.ep, NULL);
	test_err_ep_enable(EDESTADDRREQ, r.fd, r.ep);
	test_err_ep_bind(ENOENT, r.fd, r.ep, 999, 0);
	test_err_ep_bind(EINVAL, r.fd, r.ep, r.av, KFAB_EP_BIND_RECV);
	test_err_ep_bind(EINVAL, r.fd, r.ep, r.cq.id, 0);
	test_err_ep_bind(EOPNOTSUPP, r.fd, r.ep, r.cq.id, 1 << 7);
	test_err_ep_bind(ENOENT, r.fd, r.ep, r.ep, 0);
	test_cmd_ep_bind(r.fd, r.ep, r.av, 0);
	test_err_ep_bind(EEXIST, r.fd, r.ep, r.av, 0);
	test_cmd_ep_bind(r.fd, r.ep, r.cq.id, KFAB_EP_BIND_RECV);
	test_err_ep_bind(EEXIST, r.fd, r.ep, r.cq.id, KFAB_EP_BIND_RECV |
				KFAB_EP_BIND_TRANSMIT);
	test_cmd_ep_bind(r.fd, r.ep, r.cq.id, KFAB_EP_BIND_TRANSMIT);
	test_cmd_ep_enable(r.fd, r.ep);
	test_cmd_ep_enable(r.fd, r.ep);
	test_err_ep_bind(EBUSY, r.fd, r.ep, r.cq.id, KFAB_EP_BIND_TRANSMIT);
	/* The bound objects stay while the endpoint holds them. */
	test_err_destroy(EBUSY, r.fd, r.av);
	test_err_destroy(EBUSY, r.fd, r.cq.id);
	test_cmd_destroy(r.fd, r.ep);
	test_cmd_destroy(r.fd, r.av);
	test_cmd_destroy(r.fd, r.cq.id);
	ep_close(&r);
}

/*
 * Blocks of scalable endpoints (KFAB_EP_OPEN_BLOCK/JOIN/SEND_ONLY): every
 * malformed combination, joining what is no block, an index taken twice.
 */
TEST(scalable_blocks_reject_what_is_malformed)
{
	struct kfab_ep_open o = { .size = sizeof(o), .type = KFAB_EP_TYPE_RDM };
	struct kfab_ep_open base, c1, c2, tx;
	struct raw_ep r;

	if (!kfab_have_device())
		SKIP(return, "needs kfab.ko");
	ASSERT_EQ(0, ep_setup(&r, false));
	o.domain_id = r.dom;
	/* Block fields without a block flag; flags that do not go together. */
	o.block_index = 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.block_index = 0;
	o.block_ep_id = r.ep;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.flags = KFAB_EP_OPEN_BLOCK;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.flags = KFAB_EP_OPEN_BLOCK | KFAB_EP_OPEN_JOIN;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.flags = KFAB_EP_OPEN_SEND_ONLY;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.flags = KFAB_EP_OPEN_JOIN | KFAB_EP_OPEN_SEND_ONLY;
	o.block_index = 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.flags = KFAB_EP_OPEN_JOIN;
	o.block_index = KFAB_EP_BLOCK_MAX;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	/* Joining a plain endpoint, or no endpoint at all. */
	o.block_index = 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.block_ep_id = r.av;
	EXPECT_EQ(-ENOENT, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	/* A block: no service. */
	o.flags = KFAB_EP_OPEN_BLOCK;
	o.block_ep_id = 0;
	o.block_index = 0;
	o.src.ep = htobe64(77);
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	o.src.ep = 0;

	base = o;
	ASSERT_EQ(0, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &base));
	EXPECT_TRUE(be64toh(base.out_addr.ep) & KFAB_EP_BLOCK_BIT);
	EXPECT_EQ(0ULL, be64toh(base.out_addr.ep) % KFAB_EP_BLOCK_MAX);
	c1 = o;
	c1.flags = KFAB_EP_OPEN_JOIN;
	c1.block_ep_id = base.out_ep_id;
	c1.block_index = 3;
	c2 = c1;
	tx = c1;
	tx.flags |= KFAB_EP_OPEN_SEND_ONLY;
	tx.block_index = 0;
	ASSERT_EQ(0, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &c1));
	ASSERT_EQ(0, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &c2));
	ASSERT_EQ(0, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &tx));
	/* Every member has the block's address. */
	EXPECT_EQ(0, memcmp(&base.out_addr, &c1.out_addr, sizeof(c1.out_addr)));
	EXPECT_EQ(0, memcmp(&base.out_addr, &tx.out_addr, sizeof(tx.out_addr)));
	/* Index 3 twice: the second enable finds it taken. */
	test_cmd_ep_bind(r.fd, c1.out_ep_id, r.av, 0);
	test_cmd_ep_bind(r.fd, c2.out_ep_id, r.av, 0);
	test_cmd_ep_enable(r.fd, c1.out_ep_id);
	test_err_ep_enable(EADDRINUSE, r.fd, c2.out_ep_id);
	/* Once the first goes, the index is free again. */
	test_cmd_destroy(r.fd, c1.out_ep_id);
	test_cmd_ep_enable(r.fd, c2.out_ep_id);
	/* Joining through a context works as through the anchor. */
	c1.block_ep_id = tx.out_ep_id;
	c1.block_index = 4;
	EXPECT_EQ(0, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &c1));
	ep_close(&r);
}

TEST_F(msg, expected_and_unexpected_messages)
{
	char tx[100], rx[128], big_rx[64];
	static char large[1 << 20], large_rx[1 << 20];
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < (int)sizeof(tx); i++)
		tx[i] = i;
	/* Expected: the receive is there first. */
	s = sqe_buf(KFAB_OP_RECV, 11, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	s = sqe_buf(KFAB_OP_SEND, 22, self->b_to_a, tx, sizeof(tx));
	s.flags |= KFAB_SQE_REMOTE_CQ_DATA;
	s.data = 0xfeed;
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(11, e.op_context);
	EXPECT_EQ(KFAB_COMP_RECV | KFAB_COMP_MSG | KFAB_COMP_REMOTE_CQ_DATA,
		  e.flags);
	EXPECT_EQ(sizeof(tx), e.len);
	EXPECT_EQ((uintptr_t)rx, e.buf);
	EXPECT_EQ(0xfeed, e.data);
	EXPECT_EQ(self->a_to_b, e.src_addr);
	EXPECT_EQ(0, memcmp(tx, rx, sizeof(tx)));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(22, e.op_context);
	EXPECT_EQ(KFAB_COMP_SEND | KFAB_COMP_MSG, e.flags);

	/* Unexpected, small (buffered) and large (waits for the receive). */
	s = sqe_buf(KFAB_OP_SEND, 33, self->b_to_a, tx, 50);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(33, e.op_context);
	memset(large, 0x5a, sizeof(large));
	s = sqe_buf(KFAB_OP_SEND, 44, self->b_to_a, large, sizeof(large));
	ASSERT_EQ(0, submit(&self->b, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));
	memset(rx, 0, sizeof(rx));
	s = sqe_buf(KFAB_OP_RECV, 55, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(55, e.op_context);
	EXPECT_EQ(50, e.len);
	EXPECT_EQ(0, memcmp(tx, rx, 50));
	s = sqe_buf(KFAB_OP_RECV, 66, ANY, large_rx, sizeof(large_rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(66, e.op_context);
	EXPECT_EQ(sizeof(large), e.len);
	EXPECT_EQ(0, memcmp(large, large_rx, sizeof(large)));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(44, e.op_context);

	/* Inline payload, and a buffer too small: FI_ETRUNC with olen. */
	s = (struct kfab_sqe){ .opcode = KFAB_OP_SEND, .context = 77,
			       .addr = self->b_to_a, .len = 64,
			       .flags = KFAB_SQE_INLINE };
	memset(s.inline_data, 0x33, 64);
	ASSERT_EQ(0, submit(&self->b, &s));
	/* Inject asks for no completion. */
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));
	s = sqe_buf(KFAB_OP_RECV, 88, ANY, big_rx, 10);
	ASSERT_EQ(0, submit(&self->a, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	ASSERT_EQ(0, cq_err(&self->a, &err));
	EXPECT_EQ(88, err.out_entry.op_context);
	EXPECT_EQ(KFAB_ERR_TRUNC, err.out_err);
	EXPECT_EQ(54, err.out_olen);
	EXPECT_EQ(10, err.out_entry.len);
	EXPECT_EQ(0x33, big_rx[9]);
}

TEST_F(msg, tags_order_and_directed_receives)
{
	uint64_t vals[4], seq[8], v = 0;
	struct kfab_cq_entry e;
	struct raw_ep c;
	uint64_t a_to_c, c_to_a;
	struct kfab_sqe s;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	/* Tagged receives match by tag and ignore bits, in posting order. */
	for (i = 0; i < 4; i++) {
		s = sqe_buf(KFAB_OP_TRECV, 100 + i, ANY, &vals[i],
			    sizeof(vals[i]));
		s.tag = i < 2 ? 0x100 : 0x200;
		s.ignore = i == 3 ? 0xfff : 0;
		queue(&self->a, &s);
	}
	test_cmd_doorbell(self->a.fd, self->a.ep, NULL);
	for (i = 0; i < 4; i++) {
		v = 1000 + i;
		s = sqe_buf(KFAB_OP_TSEND, i, self->b_to_a, &v, sizeof(v));
		s.tag = i == 3 ? 0x777 : (i & 1 ? 0x200 : 0x100);
		ASSERT_EQ(0, submit(&self->b, &s));
	}
	/* 0x100 -> rx 100, 0x200 -> rx 102, 0x100 -> rx 101, 0x777 -> 103 */
	EXPECT_EQ(1000, vals[0]);
	EXPECT_EQ(1002, vals[1]);
	EXPECT_EQ(1001, vals[2]);
	EXPECT_EQ(1003, vals[3]);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(KFAB_COMP_RECV | KFAB_COMP_TAGGED, e.flags);
	}

	/* A receive directed at C ignores B's message, which waits. */
	ASSERT_EQ(0, ep_setup(&c, true));
	a_to_c = peer(&self->a, &c);
	c_to_a = peer(&c, &self->a);
	s = sqe_buf(KFAB_OP_RECV, 200, a_to_c, &vals[0], sizeof(vals[0]));
	ASSERT_EQ(0, submit(&self->a, &s));
	v = 1;
	s = sqe_buf(KFAB_OP_SEND, 0, self->b_to_a, &v, sizeof(v));
	ASSERT_EQ(0, submit(&self->b, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	v = 2;
	s = sqe_buf(KFAB_OP_SEND, 0, c_to_a, &v, sizeof(v));
	ASSERT_EQ(0, submit(&c, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(200, e.op_context);
	EXPECT_EQ(a_to_c, e.src_addr);
	EXPECT_EQ(2, vals[0]);
	/* Messages of one sender arrive in order. */
	for (i = 0; i < 8; i++) {
		seq[i] = 10 + i;
		s = sqe_buf(KFAB_OP_SEND, 0, self->b_to_a, &seq[i],
			    sizeof(seq[i]));
		queue(&self->b, &s);
	}
	test_cmd_doorbell(self->b.fd, self->b.ep, NULL);
	for (i = -1; i < 8; i++) {
		s = sqe_buf(KFAB_OP_RECV, 300, self->a_to_b, &v, sizeof(v));
		ASSERT_EQ(0, submit(&self->a, &s));
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(i < 0 ? 1 : 10 + i, v);
	}
	ep_close(&c);
}

TEST_F(msg, hostile_requests_get_error_completions)
{
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	uint32_t done;
	int n = 0;

	RETURN_IF_SETUP_SKIPPED();
	s = (struct kfab_sqe){ .opcode = 99, .context = 1 };
	queue(&self->b, &s);
	s = (struct kfab_sqe){ .opcode = KFAB_OP_SEND, .context = 2,
			       .iov_count = KFAB_IOV_MAX + 1 };
	queue(&self->b, &s);
	s = (struct kfab_sqe){ .opcode = KFAB_OP_SEND, .context = 3,
			       .rx_index = KFAB_EP_BLOCK_MAX };
	queue(&self->b, &s);
	s = (struct kfab_sqe){ .opcode = KFAB_OP_SEND, .context = 4,
			       .flags = 1 << 20 };
	queue(&self->b, &s);
	s = (struct kfab_sqe){ .opcode = KFAB_OP_SEND, .context = 5,
			       .flags = KFAB_SQE_INLINE, .len = 65 };
	queue(&self->b, &s);
	s = (struct kfab_sqe){ .opcode = KFAB_OP_RECV, .context = 6,
			       .flags = KFAB_SQE_INLINE };
	queue(&self->b, &s);
	s = sqe_buf(KFAB_OP_SEND, 7, 12345, &n, sizeof(n));	/* bad addr */
	queue(&self->b, &s);
	s = sqe_buf(KFAB_OP_SEND, 8, self->b_to_a, (void *)8, 100);
	queue(&self->b, &s);
	s = sqe_buf(KFAB_OP_SEND, 9, self->b_to_a, &n, 1ULL << 40);
	queue(&self->b, &s);
	s = sqe_buf(KFAB_OP_RECV, 10, ANY, (void *)8, 100);
	queue(&self->b, &s);
	s = sqe_buf(KFAB_OP_RECV, 11, 4242, &n, sizeof(n));
	queue(&self->b, &s);
	test_cmd_doorbell(self->b.fd, self->b.ep, &done);
	EXPECT_EQ(11, done);
	while (!cq_err(&self->b, &err)) {
		n++;
		EXPECT_NE(0, err.out_err);
	}
	EXPECT_EQ(11, n);
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));
	/* A's receive queue saw nothing: the bad-pointer send failed whole. */
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));

	/* A tail far beyond head: one ring's worth is taken, no more. */
	__atomic_store_n(SQ_U32(&self->b, self->b.epo.out_sq.off_tail),
			 self->b.tail + 1000000, __ATOMIC_RELEASE);
	test_cmd_doorbell(self->b.fd, self->b.ep, &done);
	EXPECT_EQ(self->b.epo.out_sq.entries, done);
	/* Garbage all over the ring and its indices: the kernel goes on. */
	memset(self->b.sq, 0xa5, self->b.epo.out_sq.region.size);
	test_cmd_doorbell(self->b.fd, self->b.ep, NULL);
	memset(self->b.sq, 0xff, self->b.epo.out_sq.region.size);
	test_cmd_doorbell(self->b.fd, self->b.ep, NULL);
}

/*
 * KFAB_SQE_PROBE: a send that delivers nothing and says whether an
 * endpoint is at the destination; with a payload, or on a receive, it is
 * a malformed request.
 */
TEST_F(msg, probe_tells_whether_the_peer_is_there)
{
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	uint64_t b_to_a = self->b_to_a;
	char x = 'x';

	RETURN_IF_SETUP_SKIPPED();
	s = (struct kfab_sqe){ .opcode = KFAB_OP_SEND, .context = 1,
			       .addr = b_to_a,
			       .flags = KFAB_SQE_PROBE | KFAB_SQE_COMPLETION };
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(1ULL, e.op_context);
	/* Nothing reached A. */
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	EXPECT_NE(0, cq_err(&self->a, &err));

	/* A payload, or a receive: -EINVAL completions. */
	s = sqe_buf(KFAB_OP_SEND, 2, b_to_a, &x, 1);
	s.flags |= KFAB_SQE_PROBE;
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(EINVAL, err.out_err);
	s = (struct kfab_sqe){ .opcode = KFAB_OP_RECV, .context = 3,
			       .addr = ANY,
			       .flags = KFAB_SQE_PROBE | KFAB_SQE_COMPLETION };
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(EINVAL, err.out_err);

	/* A gone: the probe fails as a send would. */
	ep_close(&self->a);
	s = (struct kfab_sqe){ .opcode = KFAB_OP_SEND, .context = 4,
			       .addr = b_to_a,
			       .flags = KFAB_SQE_PROBE | KFAB_SQE_COMPLETION };
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(EHOSTUNREACH, err.out_err);
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));
}

/* FI_MULTI_RECV: one buffer, message after message, released when full. */
TEST_F(msg, multi_receive_fills_one_buffer)
{
	char buf[1000] = { 0 }, msg[300];
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	/* Two messages wait already; the buffer takes both at once. */
	for (i = 0; i < 2; i++) {
		memset(msg, 'a' + i, sizeof(msg));
		s = sqe_buf(KFAB_OP_SEND, i, self->b_to_a, msg, sizeof(msg));
		ASSERT_EQ(0, submit(&self->b, &s));
	}
	s = sqe_buf(KFAB_OP_RECV, 77, ANY, buf, sizeof(buf));
	s.flags |= KFAB_SQE_MULTI_RECV;
	s.data = 350;		/* FI_OPT_MIN_MULTI_RECV */
	ASSERT_EQ(0, submit(&self->a, &s));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(77, e.op_context);
		EXPECT_EQ(300, e.len);
		EXPECT_EQ((uintptr_t)buf + 300 * i, e.buf);
		EXPECT_EQ(0, e.flags & KFAB_COMP_MULTI_RECV);
	}
	/* 400 bytes left: still served; the third message leaves 100. */
	memset(msg, 'c', sizeof(msg));
	s = sqe_buf(KFAB_OP_SEND, 2, self->b_to_a, msg, sizeof(msg));
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ((uintptr_t)buf + 600, e.buf);
	EXPECT_EQ(KFAB_COMP_MULTI_RECV, e.flags & KFAB_COMP_MULTI_RECV);
	EXPECT_EQ('a', buf[0]);
	EXPECT_EQ('b', buf[300]);
	EXPECT_EQ('c', buf[899]);
	/* Released: the next message waits for another receive. */
	s = sqe_buf(KFAB_OP_SEND, 3, self->b_to_a, msg, 10);
	ASSERT_EQ(0, submit(&self->b, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	/* Multi-receive is for one untagged buffer. */
	s = sqe_buf(KFAB_OP_TRECV, 78, ANY, buf, sizeof(buf));
	s.flags |= KFAB_SQE_MULTI_RECV;
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_err(&self->a, &err));
	EXPECT_EQ(78, err.out_entry.op_context);
	EXPECT_EQ(EINVAL, err.out_err);
}

/* FI_DELIVERY_COMPLETE waits for the receive; FI_FENCE for what went before. */
TEST_F(msg, delivery_complete_and_fence)
{
	uint64_t small = 1, big_rx[2], v = 9, w;
	static char big[256 * 1024], big_buf[256 * 1024];
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	uint32_t done;

	RETURN_IF_SETUP_SKIPPED();
	s = sqe_buf(KFAB_OP_SEND, 1, self->b_to_a, &small, sizeof(small));
	s.flags |= KFAB_SQE_DELIVERY_COMPLETE;
	ASSERT_EQ(0, submit(&self->b, &s));
	/* Small, but not complete while it only waits at the receiver. */
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));
	s = sqe_buf(KFAB_OP_RECV, 2, ANY, big_rx, sizeof(big_rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(1, e.op_context);

	/* A large send waits at A; a fenced send after it waits in B's ring. */
	s = sqe_buf(KFAB_OP_SEND, 3, self->b_to_a, big, sizeof(big));
	queue(&self->b, &s);
	s = sqe_buf(KFAB_OP_SEND, 4, self->b_to_a, &v, sizeof(v));
	s.flags |= KFAB_SQE_FENCE;
	queue(&self->b, &s);
	test_cmd_doorbell(self->b.fd, self->b.ep, &done);
	EXPECT_EQ(1, done);
	s = sqe_buf(KFAB_OP_RECV, 5, ANY, big_buf, sizeof(big_buf));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(3, e.op_context);
	/* Now the fence passes. */
	test_cmd_doorbell(self->b.fd, self->b.ep, &done);
	EXPECT_EQ(1, done);
	s = sqe_buf(KFAB_OP_RECV, 6, ANY, &w, sizeof(w));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(6, e.op_context);
	EXPECT_EQ(9, w);
	/* Inline payloads cannot be delivery-complete; receives take no fence. */
	s = (struct kfab_sqe){ .opcode = KFAB_OP_SEND, .context = 7, .len = 8,
			       .addr = self->b_to_a,
			       .flags = KFAB_SQE_INLINE |
					KFAB_SQE_DELIVERY_COMPLETE };
	ASSERT_EQ(0, submit(&self->b, &s));
	s = sqe_buf(KFAB_OP_RECV, 8, ANY, &w, sizeof(w));
	s.flags |= KFAB_SQE_FENCE;
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(7, err.out_entry.op_context);
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(8, err.out_entry.op_context);
}

TEST_F(msg, cancel_takes_back_a_posted_receive)
{
	struct kfab_cancel c = { .size = sizeof(c) };
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	uint64_t v = 0, w = 5;

	RETURN_IF_SETUP_SKIPPED();
	s = sqe_buf(KFAB_OP_RECV, 41, ANY, &v, sizeof(v));
	ASSERT_EQ(0, submit(&self->a, &s));
	test_err_cancel(ENOENT, self->a.fd, self->a.ep, 40);
	test_cmd_cancel(self->a.fd, self->a.ep, 41);
	ASSERT_EQ(0, cq_err(&self->a, &err));
	EXPECT_EQ(41, err.out_entry.op_context);
	EXPECT_EQ(ECANCELED, err.out_err);
	test_err_cancel(ENOENT, self->a.fd, self->a.ep, 41);
	/* The message that follows waits for another receive. */
	s = sqe_buf(KFAB_OP_SEND, 1, self->b_to_a, &w, sizeof(w));
	ASSERT_EQ(0, submit(&self->b, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	EXPECT_EQ(0, v);
	c.obj_id = self->a.ep;
	c.context = 41;
	c.flags = 1;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->a.fd, KFAB_IOC_CANCEL, &c));
	test_err_cancel(ENOENT, self->a.fd, self->a.cq.id, 41);
}

TEST_F(msg, unexpected_budget_makes_senders_wait)
{
	static char buf[20][64 * 1024], rx[64 * 1024];
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	uint32_t done, total = 0;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < 20; i++) {
		memset(buf[i], i, sizeof(buf[i]));
		s = sqe_buf(KFAB_OP_SEND, i, self->b_to_a, buf[i],
			    sizeof(buf[i]));
		queue(&self->b, &s);
	}
	test_cmd_doorbell(self->b.fd, self->b.ep, &done);
	/*
	 * 1 MiB of buffering at the receiver, bookkeeping included: 15
	 * messages of 64 KiB, the rest wait.
	 */
	EXPECT_EQ(15, done);
	total = done;
	for (i = 0; i < 20; i++) {
		s = sqe_buf(KFAB_OP_RECV, 100 + i, ANY, rx, sizeof(rx));
		ASSERT_EQ(0, submit(&self->a, &s));
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(i, rx[0]);
		EXPECT_EQ(i, rx[sizeof(rx) - 1]);
		if (total < 20) {
			test_cmd_doorbell(self->b.fd, self->b.ep, &done);
			total += done;
		}
	}
	EXPECT_EQ(20, total);
}

TEST_F(msg, peers_that_go_away)
{
	static char large[4 << 20], rx[4 << 20];
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct kfab_sqe s;

	RETURN_IF_SETUP_SKIPPED();
	/* A large message waits at A while its sender goes: still delivered. */
	memset(large, 0x42, sizeof(large));
	s = sqe_buf(KFAB_OP_SEND, 1, self->b_to_a, large, sizeof(large));
	ASSERT_EQ(0, submit(&self->b, &s));
	ep_close(&self->b);
	s = sqe_buf(KFAB_OP_RECV, 2, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(sizeof(rx), e.len);
	EXPECT_EQ(0x42, rx[sizeof(rx) - 1]);

	/* Sends to an endpoint that is gone fail. */
	ASSERT_EQ(0, ep_setup(&self->b, true));
	self->b_to_a = peer(&self->b, &self->a);
	s = sqe_buf(KFAB_OP_SEND, 3, self->b_to_a, large, sizeof(large));
	ASSERT_EQ(0, submit(&self->b, &s));
	/* A closes with B's large message waiting: B is told. */
	ep_close(&self->a);
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(3, err.out_entry.op_context);
	EXPECT_EQ(ECONNRESET, err.out_err);
	s = sqe_buf(KFAB_OP_SEND, 4, self->b_to_a, large, 8);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(4, err.out_entry.op_context);
	EXPECT_EQ(EHOSTUNREACH, err.out_err);
}

/* A sender killed while its 64 MiB message waits; then the receiver. */
TEST_F(msg, sigkill_mid_transfer_leaves_nothing)
{
	long ctxs = kfab_contexts();
	int ready[2];
	pid_t pid;
	char c;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	if (!pid) {
		struct raw_ep s;
		size_t len = 64 << 20;
		char *big = malloc(len);
		struct kfab_sqe q;
		uint64_t to_a;

		if (!big || ep_setup(&s, true))
			_exit(1);
		memset(big, 7, len);
		to_a = peer(&s, &self->a);
		q = sqe_buf(KFAB_OP_SEND, 1, to_a, big, len);
		if (submit(&s, &q) || write(ready[1], "x", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	EXPECT_EQ(ctxs, kfab_contexts());
	/* A still holds the message; closing A frees it all. */
	ep_close(&self->a);
	EXPECT_EQ(ctxs - 1, kfab_contexts());
	close(ready[0]);
	close(ready[1]);
}

/*
 * A receiver killed while it holds unexpected messages, a small buffered
 * one and a large one in the sender's memory: the sender of the large one
 * learns it was not delivered, and nothing is left behind.
 */
TEST_F(msg, receiver_killed_holding_unexpected_messages)
{
	static char large[2 << 20];
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	long ctxs = kfab_contexts();
	struct kfab_addr child_addr;
	struct raw_ep tmp = { .fd = -1 };
	int ready[2];
	uint64_t to_child;
	struct kfab_sqe s;
	pid_t pid;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	if (!pid) {
		struct raw_ep r;

		if (ep_setup(&r, true) ||
		    write(ready[1], &r.addr, sizeof(r.addr)) !=
		    sizeof(r.addr))
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(sizeof(child_addr), read(ready[0], &child_addr,
					   sizeof(child_addr)));
	EXPECT_EQ(ctxs + 1, kfab_contexts());
	tmp.addr = child_addr;
	to_child = peer(&self->b, &tmp);
	ASSERT_NE(ANY, to_child);
	s = sqe_buf(KFAB_OP_SEND, 1, to_child, large, 100);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	s = sqe_buf(KFAB_OP_SEND, 2, to_child, large, sizeof(large));
	ASSERT_EQ(0, submit(&self->b, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	EXPECT_EQ(ctxs, kfab_contexts());
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(2, err.out_entry.op_context);
	EXPECT_EQ(ECONNRESET, err.out_err);
	/* And sends to it now fail. */
	s = sqe_buf(KFAB_OP_SEND, 3, to_child, large, 8);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(EHOSTUNREACH, err.out_err);
	close(ready[0]);
	close(ready[1]);
}

/*
 * A second endpoint (and CQ, opened with @cq_flags) in @r's file, bound to
 * @r's AV.
 */
static int ep_sibling_flags(struct raw_ep *r, struct raw_ep *sib, uint32_t srx,
			    bool own_cq, bool do_enable, uint32_t cq_flags)
{
	int rc;

	*sib = *r;
	if (own_cq && _test_cq_open_mapped(r->fd, r->dom, 64, cq_flags,
					   &sib->cq))
		return -1;
	rc = ep_open_ring(sib);
	if (rc)
		return rc - 2;
	if (_test_cmd_ep_bind(r->fd, sib->ep, sib->av, 0) ||
	    _test_cmd_ep_bind(r->fd, sib->ep, sib->cq.id,
			      KFAB_EP_BIND_TRANSMIT | KFAB_EP_BIND_RECV) ||
	    (srx && _test_cmd_ep_bind(r->fd, sib->ep, srx, 0)))
		return -5;
	return do_enable ? _test_cmd_ep_enable(r->fd, sib->ep) : 0;
}

static int ep_sibling(struct raw_ep *r, struct raw_ep *sib, uint32_t srx,
		      bool own_cq, bool do_enable)
{
	return ep_sibling_flags(r, sib, srx, own_cq, do_enable, 0);
}

/* Unmap what ep_sibling() mapped; the objects go with the file. */
static void ep_sibling_unmap(struct raw_ep *sib, bool own_cq)
{
	if (own_cq)
		_test_cq_unmap(&sib->cq);
	_test_munmap(sib->sq, &sib->epo.out_sq.region);
}

/*
 * @view: @owner's file, CQ and address, with the SRX's ring in place of
 * the endpoint's, so queue(), doorbell() and the cancel helpers work on
 * the SRX and cq_next()/cq_err() on @owner's CQ.
 */
static int srx_view(struct raw_ep *view, const struct raw_ep *owner,
		    const struct kfab_srx_open *o)
{
	*view = *owner;
	view->ep = o->out_srx_id;
	view->epo.out_sq = o->out_sq;
	view->tail = 0;
	view->sq = _test_mmap(owner->fd, &o->out_sq.region,
			      PROT_READ | PROT_WRITE);
	return view->sq == MAP_FAILED ? -1 : 0;
}

static void srx_unview(struct raw_ep *view)
{
	_test_munmap(view->sq, &view->epo.out_sq.region);
}

/* An SRX in @r's file, its ring mapped as a raw_ep @x (x->ep: its id). */
static int srx_setup(struct raw_ep *r, struct raw_ep *x)
{
	struct kfab_srx_open o;

	if (_test_cmd_srx_open(r->fd, r->dom, 32, NULL, &o))
		return -1;
	return srx_view(x, r, &o) ? -2 : 0;
}

/*
 * Two endpoints of A share one SRX, each with its own CQ: receives posted
 * to the SRX serve messages to either, in posting order, and complete on
 * the CQ of the endpoint the message was sent to.
 */
TEST_F(msg, shared_receive_context)
{
	struct kfab_av_open avo = { 0 };
	struct raw_ep x, e1, e2, e3;
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	char rx[5][16], tx[16];
	uint64_t to1, to2;
	struct kfab_sqe s;
	uint32_t done;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, srx_setup(&self->a, &x));
	/* No endpoint yet: nothing could report a failed receive. */
	test_err_doorbell(EINVAL, x.fd, x.ep, &done);
	ASSERT_EQ(0, ep_sibling(&self->a, &e1, x.ep, false, true));
	ASSERT_EQ(0, ep_sibling(&self->a, &e2, x.ep, true, true));
	test_err_ep_bind(EBUSY, e1.fd, e1.ep, x.ep, 0);
	test_err_destroy(EBUSY, self->a.fd, x.ep);
	/* Another AV than the SRX's endpoints use: enable refuses. */
	avo.domain_id = self->a.dom;
	test_cmd_av_open(self->a.fd, &avo, NULL);
	e3 = self->a;
	e3.av = avo.out_av_id;
	ASSERT_EQ(0, ep_sibling(&e3, &e3, 0, false, false));
	test_err_ep_bind(EINVAL, e3.fd, e3.ep, x.ep, KFAB_EP_BIND_RECV);
	test_cmd_ep_bind(e3.fd, e3.ep, x.ep, 0);
	test_err_ep_bind(EEXIST, e3.fd, e3.ep, x.ep, 0);
	test_err_ep_enable(EINVAL, e3.fd, e3.ep);
	test_cmd_destroy(self->a.fd, e3.ep);
	ep_sibling_unmap(&e3, false);

	to1 = peer(&self->b, &e1);
	to2 = peer(&self->b, &e2);
	for (i = 0; i < 3; i++) {
		s = sqe_buf(KFAB_OP_RECV, 1 + i, ANY, rx[i], sizeof(rx[i]));
		queue(&x, &s);
	}
	test_cmd_doorbell(x.fd, x.ep, &done);
	EXPECT_EQ(3, done);
	for (i = 0; i < 3; i++) {
		memset(tx, 'a' + i, sizeof(tx));
		s = sqe_buf(KFAB_OP_SEND, 10 + i, i == 1 ? to1 : to2, tx,
			    sizeof(tx));
		ASSERT_EQ(0, submit(&self->b, &s));
	}
	/* Posting order, across endpoints: 1 -> e2, 2 -> e1, 3 -> e2. */
	ASSERT_EQ(0, cq_next(&e2, &e));
	EXPECT_EQ(1, e.op_context);
	EXPECT_EQ('a', rx[0][0]);
	ASSERT_EQ(0, cq_next(&e1, &e));
	EXPECT_EQ(2, e.op_context);
	EXPECT_EQ('b', rx[1][0]);
	ASSERT_EQ(0, cq_next(&e2, &e));
	EXPECT_EQ(3, e.op_context);
	EXPECT_EQ('c', rx[2][15]);
	EXPECT_EQ(-EAGAIN, cq_next(&e1, &e));

	/* Unexpected, in arrival order across endpoints. */
	for (i = 0; i < 2; i++) {
		memset(tx, 'p' + i, sizeof(tx));
		s = sqe_buf(KFAB_OP_SEND, 20 + i, i ? to2 : to1, tx,
			    sizeof(tx));
		ASSERT_EQ(0, submit(&self->b, &s));
	}
	s = sqe_buf(KFAB_OP_RECV, 4, ANY, rx[3], sizeof(rx[3]));
	ASSERT_EQ(0, submit(&x, &s));
	ASSERT_EQ(0, cq_next(&e1, &e));
	EXPECT_EQ(4, e.op_context);
	EXPECT_EQ('p', rx[3][0]);
	EXPECT_EQ(peer(&self->a, &self->b), e.src_addr);
	s = sqe_buf(KFAB_OP_RECV, 5, ANY, rx[4], sizeof(rx[4]));
	ASSERT_EQ(0, submit(&x, &s));
	ASSERT_EQ(0, cq_next(&e2, &e));
	EXPECT_EQ(5, e.op_context);
	EXPECT_EQ('q', rx[4][0]);

	/* An endpoint of an SRX has no receives of its own. */
	s = sqe_buf(KFAB_OP_RECV, 6, ANY, rx[0], sizeof(rx[0]));
	ASSERT_EQ(0, submit(&e1, &s));
	ASSERT_EQ(0, cq_err(&e1, &err));
	EXPECT_EQ(6, err.out_entry.op_context);
	EXPECT_EQ(EINVAL, err.out_err);
	/* A send on the SRX's ring is malformed: the first endpoint hears. */
	s = sqe_buf(KFAB_OP_SEND, 7, to1, tx, 1);
	ASSERT_EQ(0, submit(&x, &s));
	ASSERT_EQ(0, cq_err(&e1, &err));
	EXPECT_EQ(7, err.out_entry.op_context);
	/* Cancel on the SRX. */
	s = sqe_buf(KFAB_OP_RECV, 8, ANY, rx[0], sizeof(rx[0]));
	ASSERT_EQ(0, submit(&x, &s));
	test_cmd_cancel(self->a.fd, x.ep, 8);
	test_err_cancel(ENOENT, self->a.fd, x.ep, 8);
	ASSERT_EQ(0, cq_err(&e1, &err));
	EXPECT_EQ(8, err.out_entry.op_context);
	EXPECT_EQ(ECANCELED, err.out_err);

	/* e2 goes while a message to it waits; e1's stays. */
	s = sqe_buf(KFAB_OP_SEND, 30, to2, tx, 1);
	ASSERT_EQ(0, submit(&self->b, &s));
	tx[0] = 'z';
	s = sqe_buf(KFAB_OP_SEND, 31, to1, tx, 1);
	ASSERT_EQ(0, submit(&self->b, &s));
	ep_sibling_unmap(&e2, true);
	test_cmd_destroy(self->a.fd, e2.ep);
	test_cmd_destroy(self->a.fd, e2.cq.id);
	s = sqe_buf(KFAB_OP_RECV, 9, ANY, rx[0], sizeof(rx[0]));
	ASSERT_EQ(0, submit(&x, &s));
	ASSERT_EQ(0, cq_next(&e1, &e));
	EXPECT_EQ(9, e.op_context);
	EXPECT_EQ('z', rx[0][0]);
	ep_sibling_unmap(&e1, false);
	test_cmd_destroy(self->a.fd, e1.ep);
	/* Unbound, the SRX goes, its posted receive with it. */
	s = sqe_buf(KFAB_OP_RECV, 10, ANY, rx[0], sizeof(rx[0]));
	queue(&x, &s);
	test_err_doorbell(EINVAL, x.fd, x.ep, &done);
	munmap(x.sq, x.epo.out_sq.region.size);
	test_cmd_destroy(self->a.fd, x.ep);
}

static struct kfab_sqe sqe_tag(uint8_t op, uint32_t flags, uint64_t ctx,
			       uint64_t addr, uint64_t tag, void *buf,
			       size_t len)
{
	struct kfab_sqe s = sqe_buf(op, ctx, addr, buf, len);

	s.flags |= flags;
	s.tag = tag;
	return s;
}

/* FI_PEEK, FI_CLAIM and FI_DISCARD on tagged receives. */
TEST_F(msg, peek_claim_and_discard)
{
	static char big[100000], big_rx[100000];
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	char tx[10] = "claimed!!", rx[16];
	struct kfab_sqe s;
	uint32_t ok = KFAB_SQE_COMPLETION;

	RETURN_IF_SETUP_SKIPPED();
	s = sqe_tag(KFAB_OP_TSEND, 0, 1, self->b_to_a, 7, tx, sizeof(tx));
	ASSERT_EQ(0, submit(&self->b, &s));
	memset(big, 0x42, sizeof(big));
	s = sqe_tag(KFAB_OP_TSEND, 0, 2, self->b_to_a, 8, big, sizeof(big));
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&self->b, &e));	/* the eager one */
	EXPECT_EQ(1, e.op_context);

	/* Nothing with tag 9: FI_ENOMSG. */
	s = sqe_tag(KFAB_OP_TRECV, KFAB_SQE_PEEK, 100, ANY, 9, NULL, 0);
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_err(&self->a, &err));
	EXPECT_EQ(100, err.out_entry.op_context);
	EXPECT_EQ(ENOMSG, err.out_err);
	/* Peek: its length and tag, and it stays. */
	s = sqe_tag(KFAB_OP_TRECV, KFAB_SQE_PEEK, 101, ANY, 7, NULL, 0);
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(101, e.op_context);
	EXPECT_EQ(sizeof(tx), e.len);
	EXPECT_EQ(7, e.tag);
	EXPECT_EQ(KFAB_COMP_RECV | KFAB_COMP_TAGGED, e.flags);
	/* Peek and claim: set aside for context 102. */
	s = sqe_tag(KFAB_OP_TRECV, KFAB_SQE_PEEK | KFAB_SQE_CLAIM, 102, ANY, 7,
		    NULL, 0);
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(102, e.op_context);
	/* Claimed: an ordinary receive does not see it. */
	s = sqe_tag(KFAB_OP_TRECV, 0, 103, ANY, 7, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	/* Another context has claimed nothing. */
	s = sqe_tag(KFAB_OP_TRECV, KFAB_SQE_CLAIM, 104, ANY, 0, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_err(&self->a, &err));
	EXPECT_EQ(104, err.out_entry.op_context);
	EXPECT_EQ(ENOMSG, err.out_err);
	/* The claim with 102 takes it. */
	memset(rx, 0, sizeof(rx));
	s = sqe_tag(KFAB_OP_TRECV, KFAB_SQE_CLAIM, 102, ANY, 0, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(102, e.op_context);
	EXPECT_EQ(sizeof(tx), e.len);
	EXPECT_EQ((uintptr_t)rx, e.buf);
	EXPECT_EQ(0, strcmp(rx, tx));
	/* Peek and discard the rendezvous one: its sender completes. */
	s = sqe_tag(KFAB_OP_TRECV, KFAB_SQE_PEEK | KFAB_SQE_DISCARD, 105, ANY,
		    8, NULL, 0);
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(105, e.op_context);
	EXPECT_EQ(0, e.len);
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(2, e.op_context);
	/* Claim then discard. */
	s = sqe_tag(KFAB_OP_TSEND, 0, 3, self->b_to_a, 7, big, sizeof(big));
	ASSERT_EQ(0, submit(&self->b, &s));
	/* The receive 103 posted above takes it, truncated. */
	ASSERT_EQ(0, cq_err(&self->a, &err));
	EXPECT_EQ(103, err.out_entry.op_context);
	EXPECT_EQ(KFAB_ERR_TRUNC, err.out_err);
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(3, e.op_context);
	s = sqe_tag(KFAB_OP_TSEND, 0, 4, self->b_to_a, 11, big, sizeof(big));
	ASSERT_EQ(0, submit(&self->b, &s));
	s = sqe_tag(KFAB_OP_TRECV, KFAB_SQE_PEEK | KFAB_SQE_CLAIM, 106, ANY,
		    11, NULL, 0);
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(sizeof(big), e.len);
	s = sqe_tag(KFAB_OP_TRECV, KFAB_SQE_CLAIM | KFAB_SQE_DISCARD, 106, ANY,
		    0, big_rx, sizeof(big_rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(106, e.op_context);
	EXPECT_EQ(0, e.len);
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(4, e.op_context);
	/* Combinations fi_tagged(3) does not have, and peeking sends. */
	s = sqe_tag(KFAB_OP_TRECV, KFAB_SQE_PEEK | KFAB_SQE_CLAIM |
		    KFAB_SQE_DISCARD, 107, ANY, 0, NULL, 0);
	ASSERT_EQ(0, submit(&self->a, &s));
	s = sqe_tag(KFAB_OP_TRECV, KFAB_SQE_DISCARD, 108, ANY, 0, NULL, 0);
	ASSERT_EQ(0, submit(&self->a, &s));
	s = sqe_tag(KFAB_OP_RECV, KFAB_SQE_PEEK | KFAB_SQE_MULTI_RECV, 109,
		    ANY, 0, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	s = sqe_tag(KFAB_OP_TSEND, KFAB_SQE_PEEK, 110, self->a_to_b, 0, rx, 1);
	ASSERT_EQ(0, submit(&self->a, &s));
	for (ok = 107; ok <= 110; ok++) {
		ASSERT_EQ(0, cq_err(&self->a, &err));
		EXPECT_EQ(ok, err.out_entry.op_context);
		EXPECT_EQ(EINVAL, err.out_err);
	}
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));
}

/* ---- SRXs: the control path, a hostile SRX ring, peek on an SRX ---- */

TEST(srx_control_path_errors)
{
	struct kfab_srx_open o, o2;
	struct kfab_av_open avo = { .size = sizeof(avo) };
	struct raw_ep r, view;
	uint32_t ep2_av;

	if (!kfab_have_device() || !kfab_have_srx())
		SKIP(return, "needs kfab.ko with shared receive contexts");
	ASSERT_EQ(0, ep_setup(&r, false));
	/* Opening: flags, ring size, parent. */
	test_cmd_srx_open(r.fd, r.dom, 32, NULL, &o);
	EXPECT_NE(0U, o.out_srx_id);
	EXPECT_EQ(32U, o.out_sq.entries);
	EXPECT_EQ(sizeof(struct kfab_sqe), o.out_sq.entry_size);
	EXPECT_EQ(0U, o.out_sq.region.offset % getpagesize());
	EXPECT_LE(o.out_sq.off_entries + 32ULL * o.out_sq.entry_size, o.out_sq.region.size);
	EXPECT_LE(o.out_sq.off_tail + 4ULL, o.out_sq.region.size);
	EXPECT_LE(o.out_sq.off_head + 4ULL, o.out_sq.region.size);
	_test_cmd_srx_open(r.fd, r.dom, 32, NULL, &o2);
	o2.flags = 1;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(r.fd, KFAB_IOC_SRX_OPEN, &o2));
	o2.flags = 0;
	o2.sq_entries = 3;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_SRX_OPEN, &o2));
	o2.sq_entries = KFAB_SQ_MAX_ENTRIES * 2;
	EXPECT_EQ(-EINVAL, kfab_ioctl(r.fd, KFAB_IOC_SRX_OPEN, &o2));
	o2.sq_entries = 0;
	o2.domain_id = r.cq.id;
	EXPECT_EQ(-ENOENT, kfab_ioctl(r.fd, KFAB_IOC_SRX_OPEN, &o2));
	o2.domain_id = r.dom;
	ASSERT_EQ(0, kfab_ioctl(r.fd, KFAB_IOC_SRX_OPEN, &o2));
	EXPECT_EQ((uint32_t)KFAB_SQ_DEFAULT_ENTRIES, o2.out_sq.entries);

	/* No enabled endpoint: its doorbell is refused, cancel finds none. */
	ASSERT_EQ(0, srx_view(&view, &r, &o));
	test_err_doorbell(EINVAL, view.fd, view.ep, NULL);
	test_err_cancel(ENOENT, r.fd, o.out_srx_id, 1);

	/* Binding: flags 0, one SRX, before enable; it stays while bound. */
	test_err_ep_bind(EINVAL, r.fd, r.ep, o.out_srx_id, KFAB_EP_BIND_RECV);
	test_cmd_ep_bind(r.fd, r.ep, o.out_srx_id, 0);
	test_err_ep_bind(EEXIST, r.fd, r.ep, o.out_srx_id, 0);
	test_err_ep_bind(EEXIST, r.fd, r.ep, o2.out_srx_id, 0);
	test_err_destroy(EBUSY, r.fd, o.out_srx_id);
	test_cmd_ep_bind(r.fd, r.ep, r.av, 0);
	test_cmd_ep_bind(r.fd, r.ep, r.cq.id, KFAB_EP_BIND_TRANSMIT |
				       KFAB_EP_BIND_RECV);
	test_cmd_ep_enable(r.fd, r.ep);
	test_err_ep_bind(EBUSY, r.fd, r.ep, o2.out_srx_id, 0);
	/* Now the SRX's doorbell works. */
	test_cmd_doorbell(view.fd, view.ep, NULL);
	test_err_cancel(ENOENT, r.fd, o.out_srx_id, 1);

	/* A second endpoint of the SRX on another AV: enable refuses. */
	avo.domain_id = r.dom;
	test_cmd_av_open(r.fd, &avo, &ep2_av);
	{
		struct raw_ep r2 = r;

		test_cmd_ep_open(r.fd, r.dom, 0, &r2.ep, &r2.epo);
		test_cmd_ep_bind(r2.fd, r2.ep, ep2_av, 0);
		test_cmd_ep_bind(r2.fd, r2.ep, o.out_srx_id, 0);
		test_cmd_ep_bind(r2.fd, r2.ep, r.cq.id, KFAB_EP_BIND_RECV);
		test_err_ep_enable(EINVAL, r2.fd, r2.ep);
		/* On the same AV it is fine. */
		test_cmd_destroy(r.fd, r2.ep);
		ASSERT_EQ(0, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &r2.epo));
		r2.ep = r2.epo.out_ep_id;
		test_cmd_ep_bind(r2.fd, r2.ep, r.av, 0);
		test_cmd_ep_bind(r2.fd, r2.ep, o.out_srx_id, 0);
		test_cmd_ep_bind(r2.fd, r2.ep, r.cq.id, KFAB_EP_BIND_RECV);
		test_cmd_ep_enable(r2.fd, r2.ep);
		test_err_destroy(EBUSY, r.fd, o.out_srx_id);
		test_cmd_destroy(r.fd, r2.ep);
	}
	/* The SRX goes once its endpoints have. */
	test_err_destroy(EBUSY, r.fd, o.out_srx_id);
	test_cmd_destroy(r.fd, r.ep);
	test_cmd_destroy(r.fd, o.out_srx_id);
	test_err_doorbell(ENOENT, view.fd, view.ep, NULL);
	test_cmd_destroy(r.fd, o2.out_srx_id);
	test_cmd_destroy(r.fd, ep2_av);
	srx_unview(&view);
	ep_close(&r);
}

FIXTURE(srx_pair) {
	struct raw_ep a, b, b2, x;	/* x: the SRX's ring, on b's file */
	struct kfab_srx_open o;
	uint64_t a_to_b, a_to_b2;
};

FIXTURE_SETUP(srx_pair)
{
	int fd;

	self->a.fd = self->b.fd = -1;
	if (!kfab_have_device() || !kfab_have_srx())
		SKIP(return, "needs kfab.ko with shared receive contexts");
	ASSERT_EQ(0, ep_setup(&self->a, true));
	/* b and b2: two endpoints of one file, one AV, one SRX; own CQs. */
	ASSERT_EQ(0, ep_setup(&self->b, false));
	fd = self->b.fd;
	test_cmd_srx_open(fd, self->b.dom, 32, NULL, &self->o);
	test_cmd_ep_bind(fd, self->b.ep, self->b.av, 0);
	test_cmd_ep_bind(fd, self->b.ep, self->o.out_srx_id, 0);
	test_cmd_ep_bind(fd, self->b.ep, self->b.cq.id,
			 KFAB_EP_BIND_TRANSMIT | KFAB_EP_BIND_RECV);
	test_cmd_ep_enable(fd, self->b.ep);
	self->b2 = self->b;
	test_cq_open_mapped(fd, self->b.dom, 64, 0, &self->b2.cq);
	test_cmd_ep_open(fd, self->b.dom, 0, &self->b2.ep, &self->b2.epo);
	self->b2.addr = self->b2.epo.out_addr;
	self->b2.sq = NULL;
	test_cmd_ep_bind(fd, self->b2.ep, self->b.av, 0);
	test_cmd_ep_bind(fd, self->b2.ep, self->o.out_srx_id, 0);
	test_cmd_ep_bind(fd, self->b2.ep, self->b2.cq.id, KFAB_EP_BIND_RECV);
	test_cmd_ep_enable(fd, self->b2.ep);
	ASSERT_EQ(0, srx_view(&self->x, &self->b, &self->o));
	self->a_to_b = peer(&self->a, &self->b);
	self->a_to_b2 = peer(&self->a, &self->b2);
	ASSERT_NE(ANY, self->a_to_b);
	ASSERT_NE(ANY, self->a_to_b2);
	ASSERT_NE(ANY, peer(&self->b, &self->a));
}

FIXTURE_TEARDOWN(srx_pair)
{
	if (self->x.sq && self->x.sq != MAP_FAILED)
		srx_unview(&self->x);
	_test_cq_unmap(&self->b2.cq);
	ep_close(&self->a);
	ep_close(&self->b);
}

/* The SRX's ring takes receives only; the rest gets error completions. */
TEST_F(srx_pair, hostile_srx_ring)
{
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	uint64_t v = 9, r = 0;
	uint32_t done;
	int n = 0;

	RETURN_IF_SETUP_SKIPPED();
	s = sqe_buf(KFAB_OP_SEND, 1, self->a_to_b, &v, sizeof(v));
	queue(&self->x, &s);
	s = sqe_buf(KFAB_OP_TSEND, 2, 0, &v, sizeof(v));
	queue(&self->x, &s);
	s = (struct kfab_sqe){ .opcode = 99, .context = 3 };
	queue(&self->x, &s);
	s = (struct kfab_sqe){ .opcode = KFAB_OP_RECV, .context = 4,
			       .iov_count = KFAB_IOV_MAX + 1 };
	queue(&self->x, &s);
	s = (struct kfab_sqe){ .opcode = KFAB_OP_RECV, .context = 5,
			       .flags = 1 << 20 };
	queue(&self->x, &s);
	s = (struct kfab_sqe){ .opcode = KFAB_OP_TRECV, .context = 6,
			       .__reserved2 = 1 };
	queue(&self->x, &s);
	/* FI_DISCARD alone is no request. */
	s = sqe_buf(KFAB_OP_TRECV, 7, ANY, &r, sizeof(r));
	s.flags |= KFAB_SQE_DISCARD;
	queue(&self->x, &s);
	s = sqe_buf(KFAB_OP_RECV, 8, ANY, (void *)8, 100);
	queue(&self->x, &s);
	s = sqe_buf(KFAB_OP_RECV, 9, 4242, &r, sizeof(r));
	queue(&self->x, &s);
	test_cmd_doorbell(self->x.fd, self->x.ep, &done);
	EXPECT_EQ(9, done);
	/* All on the endpoint bound first; nothing went anywhere. */
	while (!cq_err(&self->b, &err)) {
		n++;
		EXPECT_NE(0, err.out_err);
	}
	EXPECT_EQ(9, n);
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));
	EXPECT_EQ(-EAGAIN, cq_next(&self->b2, &e));
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));

	/* A tail far beyond head: one ring's worth is taken, no more. */
	__atomic_store_n(SQ_U32(&self->x, self->x.epo.out_sq.off_tail),
			 self->x.tail + 1000000, __ATOMIC_RELEASE);
	test_cmd_doorbell(self->x.fd, self->x.ep, &done);
	EXPECT_EQ(self->x.epo.out_sq.entries, done);
	memset(self->x.sq, 0xa5, self->x.epo.out_sq.region.size);
	test_cmd_doorbell(self->x.fd, self->x.ep, NULL);
	memset(self->x.sq, 0xff, self->x.epo.out_sq.region.size);
	test_cmd_doorbell(self->x.fd, self->x.ep, NULL);
}

/* FI_PEEK with nothing to find; FI_CLAIM of nothing; cancel on the SRX. */
TEST_F(srx_pair, peek_claim_and_cancel)
{
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	uint64_t v = 0x77, r = 0;

	RETURN_IF_SETUP_SKIPPED();
	s = sqe_buf(KFAB_OP_TRECV, 1, ANY, &r, sizeof(r));
	s.flags |= KFAB_SQE_PEEK;
	s.tag = 5;
	ASSERT_EQ(0, submit(&self->x, &s));
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(1, err.out_entry.op_context);
	EXPECT_EQ(ENOMSG, err.out_err);
	s.flags = KFAB_SQE_CLAIM | KFAB_SQE_COMPLETION;
	s.context = 2;
	ASSERT_EQ(0, submit(&self->x, &s));
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(2, err.out_entry.op_context);
	EXPECT_EQ(ENOMSG, err.out_err);
	/* A tagged message to b2; a peek finds it, reported at b2. */
	s = sqe_buf(KFAB_OP_TSEND, 3, self->a_to_b2, &v, sizeof(v));
	s.tag = 5;
	ASSERT_EQ(0, submit(&self->a, &s));
	s = sqe_buf(KFAB_OP_TRECV, 4, ANY, &r, sizeof(r));
	s.flags |= KFAB_SQE_PEEK | KFAB_SQE_CLAIM;
	s.tag = 5;
	ASSERT_EQ(0, submit(&self->x, &s));
	ASSERT_EQ(0, cq_next(&self->b2, &e));
	EXPECT_EQ(4, e.op_context);
	EXPECT_EQ(sizeof(v), e.len);
	EXPECT_EQ(5, e.tag);
	EXPECT_EQ(0, r);
	/* Claimed: a plain receive stays posted; the claim takes it. */
	s = sqe_buf(KFAB_OP_TRECV, 5, ANY, &r, sizeof(r));
	s.tag = 5;
	ASSERT_EQ(0, submit(&self->x, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&self->b2, &e));
	s = sqe_buf(KFAB_OP_TRECV, 4, ANY, &r, sizeof(r));
	s.flags |= KFAB_SQE_CLAIM;
	s.tag = 5;
	ASSERT_EQ(0, submit(&self->x, &s));
	ASSERT_EQ(0, cq_next(&self->b2, &e));
	EXPECT_EQ(4, e.op_context);
	EXPECT_EQ(0x77, r);
	/* Cancel the plain receive on the SRX: reported at b. */
	test_cmd_cancel(self->b.fd, self->o.out_srx_id, 5);
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(5, err.out_entry.op_context);
	EXPECT_EQ(ECANCELED, err.out_err);
	test_err_cancel(ENOENT, self->b.fd, self->o.out_srx_id, 5);
	/* An endpoint bound to the SRX has no receives of its own. */
	test_err_cancel(ENOENT, self->b.fd, self->b.ep, 5);
}

/* The slot of the next completion of a CQ opened with KFAB_CQ_OPEN_PAYLOAD. */
static const uint8_t *cq_next_slot(struct raw_ep *r, struct kfab_cq_entry *e)
{
	uint32_t head = *(uint32_t *)(r->cq.cons + r->cq.layout.off_head);
	const uint8_t *slot = r->cq.ring + r->cq.layout.off_entries +
			      (size_t)(head & (r->cq.layout.entries - 1)) *
			      r->cq.layout.entry_size;

	return cq_next(r, e) ? NULL : slot;
}

/*
 * The next completion of @r is receive @ctx's (into @buf) of the @len
 * bytes at @msg, carried in its slot.
 */
static bool got_in_slot(struct raw_ep *r, uint64_t ctx, const void *buf,
			const void *msg, size_t len)
{
	const uint8_t *slot;
	struct kfab_cq_entry e;

	slot = cq_next_slot(r, &e);
	return slot && e.op_context == ctx &&
	       e.flags == (KFAB_COMP_RECV | KFAB_COMP_MSG | KFAB_COMP_PAYLOAD) &&
	       e.len == len && e.buf == (uintptr_t)buf &&
	       !memcmp(slot + sizeof(e), msg, len);
}

/*
 * A small receive on an endpoint whose CQ carries payloads pins nothing:
 * the message comes in the completion's slot, and the receive's buffer is
 * untouched until the library copies it there.  A truncated one gets its
 * bytes from KFAB_IOC_CQ_READERR.
 */
TEST_F(msg, small_receives_travel_in_the_completion)
{
	char rx8[8] = { 0 }, rx4[4] = { 0 }, rx100[100] = { 0 };
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct raw_ep p;
	struct kfab_sqe s;
	uint64_t to_p;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, ep_sibling_flags(&self->a, &p, 0, true, true,
				      KFAB_CQ_OPEN_PAYLOAD));
	EXPECT_EQ(sizeof(struct kfab_cq_entry) + KFAB_CQ_PAYLOAD_MAX,
		  p.cq.layout.entry_size);
	to_p = peer(&self->b, &p);

	s = sqe_buf(KFAB_OP_RECV, 1, ANY, rx8, sizeof(rx8));
	ASSERT_EQ(0, submit(&p, &s));
	s = sqe_buf(KFAB_OP_SEND, 2, to_p, "payload", 8);
	ASSERT_EQ(0, submit(&self->b, &s));
	EXPECT_TRUE(got_in_slot(&p, 1, rx8, "payload", 8));
	EXPECT_EQ(0, rx8[0]);	/* nothing wrote the buffer itself */

	/* Truncated: READERR puts the bytes that fit into the buffer. */
	s = sqe_buf(KFAB_OP_RECV, 3, ANY, rx4, sizeof(rx4));
	ASSERT_EQ(0, submit(&p, &s));
	s = sqe_buf(KFAB_OP_SEND, 4, to_p, "truncated", 10);
	ASSERT_EQ(0, submit(&self->b, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&p, &e));
	ASSERT_EQ(0, cq_err(&p, &err));
	EXPECT_EQ(3, err.out_entry.op_context);
	EXPECT_EQ(KFAB_ERR_TRUNC, err.out_err);
	EXPECT_EQ(6, err.out_olen);
	EXPECT_EQ(4, err.out_entry.len);
	EXPECT_EQ(0, err.out_entry.flags & KFAB_COMP_PAYLOAD);
	EXPECT_EQ(0, memcmp(rx4, "trun", 4));

	/* Larger, or without a completion asked for: pinned, written. */
	s = sqe_buf(KFAB_OP_RECV, 5, ANY, rx100, sizeof(rx100));
	ASSERT_EQ(0, submit(&p, &s));
	s = sqe_buf(KFAB_OP_SEND, 6, to_p, "direct", 7);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&p, &e));
	EXPECT_EQ(0, e.flags & KFAB_COMP_PAYLOAD);
	EXPECT_EQ(0, strcmp(rx100, "direct"));
	memset(rx8, 0, sizeof(rx8));
	s = sqe_buf(KFAB_OP_RECV, 7, ANY, rx8, sizeof(rx8));
	s.flags = 0;
	ASSERT_EQ(0, submit(&p, &s));
	s = sqe_buf(KFAB_OP_SEND, 8, to_p, "silent", 7);
	ASSERT_EQ(0, submit(&self->b, &s));
	EXPECT_EQ(-EAGAIN, cq_next(&p, &e));
	EXPECT_EQ(0, strcmp(rx8, "silent"));
	/* A message that waits is copied by the receive itself. */
	s = sqe_buf(KFAB_OP_SEND, 9, to_p, "waited", 7);
	ASSERT_EQ(0, submit(&self->b, &s));
	s = sqe_buf(KFAB_OP_RECV, 10, ANY, rx8, sizeof(rx8));
	ASSERT_EQ(0, submit(&p, &s));
	ASSERT_EQ(0, cq_next(&p, &e));
	EXPECT_EQ(0, e.flags & KFAB_COMP_PAYLOAD);
	EXPECT_EQ(0, strcmp(rx8, "waited"));
	ep_sibling_unmap(&p, true);
}

/*
 * The same through an SRX, whose receives complete on whichever endpoint
 * a message reaches: small ones pin nothing while every endpoint that
 * joined reports to a CQ that carries payloads.  One that does not has
 * the receives posted so far pinned as it is enabled (a buffer gone by
 * then fails the enable) and every later one pinned too.
 */
TEST_F(msg, srx_small_receives_travel_in_the_completion)
{
	char rx8[8] = { 0 }, rxa[8] = { 0 }, rxb[8] = { 0 };
	struct raw_ep x, y, p1, p2, p3, p4;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	uint64_t to_p1, to_p2, to_p3;
	char *gone;

	RETURN_IF_SETUP_SKIPPED();
	if (!kfab_have_srx())
		SKIP(return, "needs kfab.ko with shared receive contexts");
	ASSERT_EQ(0, srx_setup(&self->a, &x));
	ASSERT_EQ(0, ep_sibling_flags(&self->a, &p1, x.ep, true, true,
				      KFAB_CQ_OPEN_PAYLOAD));
	to_p1 = peer(&self->b, &p1);

	s = sqe_buf(KFAB_OP_RECV, 1, ANY, rx8, sizeof(rx8));
	queue(&x, &s);
	test_cmd_doorbell(x.fd, x.ep, NULL);
	s = sqe_buf(KFAB_OP_SEND, 2, to_p1, "payload", 8);
	ASSERT_EQ(0, submit(&self->b, &s));
	EXPECT_TRUE(got_in_slot(&p1, 1, rx8, "payload", 8));
	EXPECT_EQ(0, rx8[0]);

	/* rxa waits unpinned; p2's CQ has no payload slots: pinned now. */
	s = sqe_buf(KFAB_OP_RECV, 3, ANY, rxa, sizeof(rxa));
	queue(&x, &s);
	test_cmd_doorbell(x.fd, x.ep, NULL);
	ASSERT_EQ(0, ep_sibling_flags(&self->a, &p2, x.ep, true, true, 0));
	to_p2 = peer(&self->b, &p2);
	s = sqe_buf(KFAB_OP_SEND, 4, to_p2, "pinned", 7);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&p2, &e));
	EXPECT_EQ(3, e.op_context);
	EXPECT_EQ(0, e.flags & KFAB_COMP_PAYLOAD);
	EXPECT_EQ(0, strcmp(rxa, "pinned"));
	/* And from now on, even for a message to p1. */
	s = sqe_buf(KFAB_OP_RECV, 5, ANY, rxb, sizeof(rxb));
	queue(&x, &s);
	test_cmd_doorbell(x.fd, x.ep, NULL);
	s = sqe_buf(KFAB_OP_SEND, 6, to_p1, "later", 6);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&p1, &e));
	EXPECT_EQ(5, e.op_context);
	EXPECT_EQ(0, e.flags & KFAB_COMP_PAYLOAD);
	EXPECT_EQ(0, strcmp(rxb, "later"));
	EXPECT_EQ(-EAGAIN, cq_next(&p2, &e));

	/* A second SRX: its unpinned receive's buffer unmapped by then. */
	ASSERT_EQ(0, srx_setup(&self->a, &y));
	ASSERT_EQ(0, ep_sibling_flags(&self->a, &p3, y.ep, true, true,
				      KFAB_CQ_OPEN_PAYLOAD));
	gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, gone);
	s = sqe_buf(KFAB_OP_RECV, 7, ANY, gone, 8);
	queue(&y, &s);
	test_cmd_doorbell(y.fd, y.ep, NULL);
	ASSERT_EQ(0, munmap(gone, 4096));
	ASSERT_EQ(EFAULT, -ep_sibling_flags(&self->a, &p4, y.ep, true, true,
					    0));
	/* The receive still serves p3, through its completion. */
	to_p3 = peer(&self->b, &p3);
	s = sqe_buf(KFAB_OP_SEND, 8, to_p3, "still", 6);
	ASSERT_EQ(0, submit(&self->b, &s));
	EXPECT_TRUE(got_in_slot(&p3, 7, gone, "still", 6));
	/* Nothing left to pin: p4 may join now. */
	test_cmd_ep_enable(self->a.fd, p4.ep);
	ep_sibling_unmap(&p4, true);
	ep_sibling_unmap(&p3, true);
	srx_unview(&y);
	ep_sibling_unmap(&p2, true);
	ep_sibling_unmap(&p1, true);
	srx_unview(&x);
}

/*
 * Read every completion, the overflow list's too: how many (-1 when the
 * drain fails), the first @max contexts in @ctx.
 */
static int cq_read_contexts(struct raw_ep *r, uint64_t *ctx, int max)
{
	struct kfab_cq_entry e;
	int n = 0;

	for (;;) {
		while (!cq_next(r, &e)) {
			if (n < max)
				ctx[n] = e.op_context;
			n++;
		}
		if (_test_cmd_cq_drain(r->fd, r->cq.id, NULL))
			return -1;
		if (cq_next(r, &e))
			return n;
		if (n < max)
			ctx[n] = e.op_context;
		n++;
	}
}

static int cq_read_all(struct raw_ep *r)
{
	return cq_read_contexts(r, NULL, 0);
}

/*
 * A CQ the application does not read holds the work that would complete
 * on it: sends stay in the ring (the library's -FI_EAGAIN), and no
 * completion is ever dropped for lack of room.
 */
TEST_F(msg, full_cq_holds_back_senders)
{
	uint32_t done, total = 0, queued = 0;
	struct kfab_sqe s;
	char byte = 1;
	int i, n;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < 200; i++) {
		while (queued - total < self->b.epo.out_sq.entries) {
			s = sqe_buf(KFAB_OP_SEND, queued, self->b_to_a, &byte, 1);
			queue(&self->b, &s);
			queued++;
		}
		test_cmd_doorbell(self->b.fd, self->b.ep, &done);
		total += done;
		if (!done)
			break;
	}
	/* The ring (64) and the overflow list up to its headroom (1024 - 256). */
	EXPECT_EQ(64 + 1024 - 256, total);
	n = cq_read_all(&self->b);
	EXPECT_EQ((int)total, n);
	test_cmd_doorbell(self->b.fd, self->b.ep, &done);
	EXPECT_LT(0, done);
	total += done;
	EXPECT_EQ((int)done, cq_read_all(&self->b));
}

/*
 * One doorbell's sends to several endpoints, an address that names none
 * among them: each message reaches its own receiver, which reports the
 * sender as its own AV knows it (the kernel looks a destination up once a
 * doorbell, so what it remembers must follow the address).
 */
TEST_F(msg, one_doorbell_sends_to_several_receivers)
{
	static const char *const data[] = { "b1", "c1", "bad", "b2", "c2" };
	char rx_b[2][8] = { { 0 } }, rx_c[2][8] = { { 0 } };
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	uint64_t a_to_c, c_to_a;
	struct raw_ep c;
	struct kfab_sqe s;
	uint32_t done;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, ep_setup(&c, true));
	/* C knows B first, so A's index there differs from A's at B. */
	ASSERT_NE(ANY, peer(&c, &self->b));
	c_to_a = peer(&c, &self->a);
	a_to_c = peer(&self->a, &c);
	ASSERT_NE(ANY, c_to_a);
	ASSERT_NE(ANY, a_to_c);
	ASSERT_NE(self->b_to_a, c_to_a);
	for (i = 0; i < 2; i++) {
		s = sqe_buf(KFAB_OP_RECV, 1 + i, ANY, rx_b[i], sizeof(rx_b[i]));
		ASSERT_EQ(0, submit(&self->b, &s));
		s = sqe_buf(KFAB_OP_RECV, 3 + i, ANY, rx_c[i], sizeof(rx_c[i]));
		ASSERT_EQ(0, submit(&c, &s));
	}
	s = sqe_buf(KFAB_OP_SEND, 10, self->a_to_b, (void *)data[0], 3);
	queue(&self->a, &s);
	s = sqe_buf(KFAB_OP_SEND, 11, a_to_c, (void *)data[1], 3);
	queue(&self->a, &s);
	s = sqe_buf(KFAB_OP_SEND, 12, 4242, (void *)data[2], 4);
	queue(&self->a, &s);
	s = sqe_buf(KFAB_OP_SEND, 13, self->a_to_b, (void *)data[3], 3);
	queue(&self->a, &s);
	s = sqe_buf(KFAB_OP_SEND, 14, a_to_c, (void *)data[4], 3);
	queue(&self->a, &s);
	test_cmd_doorbell(self->a.fd, self->a.ep, &done);
	EXPECT_EQ(5, done);

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, cq_next(&self->b, &e));
		EXPECT_EQ(1 + i, e.op_context);
		EXPECT_EQ(self->b_to_a, e.src_addr);
		EXPECT_STREQ(data[3 * i], rx_b[i]);
		ASSERT_EQ(0, cq_next(&c, &e));
		EXPECT_EQ(3 + i, e.op_context);
		EXPECT_EQ(c_to_a, e.src_addr);
		EXPECT_STREQ(data[1 + 3 * i], rx_c[i]);
	}
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));
	EXPECT_EQ(-EAGAIN, cq_next(&c, &e));
	ASSERT_EQ(0, cq_err(&self->a, &err));
	EXPECT_EQ(12, err.out_entry.op_context);
	EXPECT_EQ(EINVAL, err.out_err);
	for (i = 10; i <= 14; i++) {
		if (i == 12)
			continue;
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(i, e.op_context);
	}
	ep_close(&c);
}

/*
 * A receive context keeps some of the receives it is done with for its
 * next posts: rounds of more receives than it keeps, small and spanning
 * pages by turns, each filled with its own message.
 */
TEST_F(msg, receives_are_reused_round_after_round)
{
	enum { N = 300, BIG = 5000 };
	static uint8_t rx[N][BIG], tx[N][BIG];
	struct kfab_cq_entry e;
	int round, i, got;
	struct kfab_sqe s;
	uint32_t done;
	size_t len;

	RETURN_IF_SETUP_SKIPPED();
	for (round = 0; round < 3; round++) {
		memset(rx, 0, sizeof(rx));
		for (i = 0; i < N; i++) {
			len = (i + round) % 2 ? BIG : 8;
			memset(tx[i], round * N + i, len);
			s = sqe_buf(KFAB_OP_RECV, round * N + i, ANY, rx[i],
				    len);
			queue(&self->a, &s);
			if (i % 16 == 15 || i == N - 1)
				test_cmd_doorbell(self->a.fd, self->a.ep, NULL);
		}
		got = 0;
		for (i = 0; i < N; i++) {
			len = (i + round) % 2 ? BIG : 8;
			s = sqe_buf(KFAB_OP_SEND, i, self->b_to_a, tx[i], len);
			queue(&self->b, &s);
			if (i % 16 != 15 && i != N - 1)
				continue;
			test_cmd_doorbell(self->b.fd, self->b.ep, &done);
			EXPECT_EQ(i % 16 + 1, done);
			while (!cq_next(&self->a, &e)) {
				EXPECT_EQ(round * N + got, e.op_context);
				got++;
			}
			while (!cq_next(&self->b, &e))
				;
		}
		EXPECT_EQ(N, got);
		for (i = 0; i < N; i++) {
			len = (i + round) % 2 ? BIG : 8;
			EXPECT_EQ(0, memcmp(tx[i], rx[i], len));
			/* Nothing beyond a small receive's buffer. */
			if (len < BIG)
				EXPECT_EQ(0, rx[i][len]);
		}
	}
}

/*
 * Send completions keep the order of the sends across inline sends and
 * sends from user buffers, an error, a full ring and its overflow list,
 * and none is lost or posted twice; each message reaches the next
 * receive.  (Any change to how a doorbell posts them, batching them for
 * instance, must keep this.)
 */
TEST_F(msg, send_completions_keep_their_order)
{
	enum { ROUNDS = 8, BAD = 100 };
	static uint64_t buf[ROUNDS * 256], tx[ROUNDS * 256], ctx[ROUNDS * 256];
	uint32_t n = self->b.epo.out_sq.entries, done;
	struct kfab_cq_readerr err;
	struct kfab_sqe s;
	int round, got;
	uint64_t i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_GE(sizeof(buf) / sizeof(buf[0]), ROUNDS * n);
	ASSERT_LT(BAD, ROUNDS * n);
	for (i = 0; i < ROUNDS * n; i++) {
		s = sqe_buf(KFAB_OP_RECV, i, ANY, &buf[i], sizeof(buf[i]));
		queue(&self->a, &s);
		if (i % n == n - 1)
			test_cmd_doorbell(self->a.fd, self->a.ep, NULL);
	}
	/* Rounds of a ring's worth, B's CQ unread: its ring overflows. */
	for (round = 0; round < ROUNDS; round++) {
		for (i = round * n; i < (round + 1) * n; i++) {
			/* Still there when the doorbell reads it. */
			tx[i] = i;
			if (i % 7 == 3) {
				s = sqe_buf(KFAB_OP_SEND, i, self->b_to_a,
					    &tx[i], sizeof(tx[i]));
			} else {
				s = (struct kfab_sqe){
					.opcode = KFAB_OP_SEND, .context = i,
					.addr = i == BAD ? 4242 : self->b_to_a,
					.len = sizeof(tx[i]),
					.flags = KFAB_SQE_INLINE |
						 KFAB_SQE_COMPLETION };
				memcpy(s.inline_data, &tx[i], sizeof(tx[i]));
			}
			queue(&self->b, &s);
		}
		test_cmd_doorbell(self->b.fd, self->b.ep, &done);
		EXPECT_EQ(n, done);
	}
	got = ROUNDS * n - 1;
	ASSERT_EQ(got, cq_read_contexts(&self->b, ctx, ROUNDS * n));
	for (i = 0; i < got; i++)
		EXPECT_EQ(i < BAD ? i : i + 1, ctx[i]);
	ASSERT_EQ(0, cq_err(&self->b, &err));
	EXPECT_EQ(BAD, err.out_entry.op_context);
	EXPECT_EQ(EINVAL, err.out_err);
	EXPECT_NE(0, cq_err(&self->b, &err));
	/* Every message reached the next receive; the last one waits. */
	ASSERT_EQ(got, cq_read_contexts(&self->a, ctx, ROUNDS * n));
	for (i = 0; i < got; i++) {
		EXPECT_EQ(i, ctx[i]);
		EXPECT_EQ(i < BAD ? i : i + 1, buf[i]);
	}
}

#define FAST_PATH_PARAM	"/sys/module/kfab/parameters/fast_path"

static int set_fast_path(bool on)
{
	FILE *f = fopen(FAST_PATH_PARAM, "w");
	int rc;

	if (!f)
		return -1;
	rc = fputs(on ? "Y" : "N", f) < 0;
	return fclose(f) || rc ? -1 : 0;
}

/* An inline send (at most KFAB_INLINE_MAX bytes) to @addr. */
#define STALE_BYTE	0xa5

static struct kfab_sqe sqe_inline(uint8_t op, uint64_t ctx, uint64_t addr,
				  uint64_t tag, const void *msg, size_t len)
{
	struct kfab_sqe s = { .opcode = op, .context = ctx, .addr = addr,
			      .tag = tag, .len = len,
			      .flags = KFAB_SQE_INLINE | KFAB_SQE_COMPLETION };

	/* Stale bytes past @len, as a reused slot has: none may be read. */
	memset(s.inline_data, STALE_BYTE, sizeof(s.inline_data));
	memcpy(s.inline_data, msg, len);
	return s;
}

/*
 * Every completion @r's CQ holds, errors last, as lines of text at @out;
 * source @from (an index that differs from run to run) as "from".
 */
static size_t cq_transcript(struct raw_ep *r, uint64_t from, char *out,
			    size_t room)
{
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	const uint8_t *slot;
	size_t n = 0, i;

	while ((slot = cq_next_slot(r, &e))) {
		n += snprintf(out + n, room - n,
			      "ctx %llu flags %#llx len %llu buf %#llx data %#llx tag %llu src %s:",
			      (unsigned long long)e.op_context,
			      (unsigned long long)e.flags,
			      (unsigned long long)e.len,
			      (unsigned long long)e.buf,
			      (unsigned long long)e.data,
			      (unsigned long long)e.tag,
			      e.src_addr == from ? "from" :
			      e.src_addr == ANY ? "any" : "other");
		for (i = 0; (e.flags & KFAB_COMP_PAYLOAD) && i < e.len &&
		     i < KFAB_CQ_PAYLOAD_MAX; i++)
			n += snprintf(out + n, room - n, " %02x",
				      slot[sizeof(e) + i]);
		/* A sender's stale entry bytes (sqe_inline()) past the message. */
		for (; (e.flags & KFAB_COMP_PAYLOAD) && i < KFAB_CQ_PAYLOAD_MAX;
		     i++)
			if (slot[sizeof(e) + i] == STALE_BYTE) {
				n += snprintf(out + n, room - n, " STALE");
				break;
			}
		n += snprintf(out + n, room - n, "\n");
	}
	while (!cq_err(r, &err))
		n += snprintf(out + n, room - n,
			      "error ctx %llu err %u olen %llu len %llu\n",
			      (unsigned long long)err.out_entry.op_context,
			      err.out_err, (unsigned long long)err.out_olen,
			      (unsigned long long)err.out_entry.len);
	return n;
}

/*
 * One sequence of small inline sends and receives that takes the fast
 * path where it can (a send whose first posted receive takes it, a
 * receive posted while nothing waits) and leaves it for the general one
 * wherever a condition fails: a tag or source the first receive does not
 * take, a receive from a source its AV does not hold, a receive too
 * short, a message that finds no receive, a receive that finds a message
 * waiting.  Into @rx and @tx: what the receiver's and the
 * sender's CQs then hold, and the receive buffers.
 */
static int fast_path_sequence(struct raw_ep *a, struct raw_ep *b, char *rx,
			      char *tx, size_t room)
{
	char bufs[10][64], big[64];
	struct raw_ep p;
	struct kfab_sqe s;
	uint64_t to_p, from_b;
	size_t n;
	int i;

	memset(bufs, 0, sizeof(bufs));
	for (i = 0; i < 64; i++)
		big[i] = 'a' + i % 26;
	if (ep_sibling_flags(a, &p, 0, true, true, KFAB_CQ_OPEN_PAYLOAD))
		return -1;
	to_p = peer(b, &p);
	from_b = peer(&p, b);
	/*
	 * Receives: from a source the AV does not hold (an error), plain,
	 * directed, two tagged, short, large, plain.
	 */
	s = sqe_buf(KFAB_OP_RECV, 20, 4242, bufs[0], 8);
	queue(&p, &s);
	s = sqe_buf(KFAB_OP_RECV, 1, ANY, bufs[1], 8);
	queue(&p, &s);
	s = sqe_buf(KFAB_OP_RECV, 2, from_b, bufs[2], 8);
	queue(&p, &s);
	s = sqe_tag(KFAB_OP_TRECV, 0, 3, ANY, 5, bufs[3], 8);
	queue(&p, &s);
	s = sqe_tag(KFAB_OP_TRECV, 0, 4, ANY, 7, bufs[4], 8);
	queue(&p, &s);
	s = sqe_buf(KFAB_OP_RECV, 5, ANY, bufs[5], 4);
	queue(&p, &s);
	s = sqe_buf(KFAB_OP_RECV, 6, ANY, bufs[6], 64);
	queue(&p, &s);
	s = sqe_buf(KFAB_OP_RECV, 7, ANY, bufs[7], 8);
	queue(&p, &s);
	if (_test_cmd_doorbell(p.fd, p.ep, NULL))
		return -2;

	/* Sends, one doorbell: the first resolves where the rest go. */
	s = sqe_inline(KFAB_OP_SEND, 11, to_p, 0, "first", 6);
	queue(b, &s);
	s = sqe_inline(KFAB_OP_SEND, 12, to_p, 0, "second", 7);
	queue(b, &s);
	s = sqe_inline(KFAB_OP_TSEND, 13, to_p, 7, "tag 7", 6);
	queue(b, &s);
	s = sqe_inline(KFAB_OP_TSEND, 14, to_p, 5, "tag 5", 6);
	queue(b, &s);
	s = sqe_inline(KFAB_OP_SEND, 15, to_p, 0, "truncated", 10);
	queue(b, &s);
	s = sqe_inline(KFAB_OP_SEND, 16, to_p, 0, "", 0);
	s.flags |= KFAB_SQE_REMOTE_CQ_DATA;
	s.data = 0x1234;
	queue(b, &s);
	s = sqe_inline(KFAB_OP_SEND, 17, to_p, 0, "silent", 7);
	s.flags &= ~KFAB_SQE_COMPLETION;
	queue(b, &s);
	s = sqe_inline(KFAB_OP_SEND, 18, to_p, 0, "waits", 6);
	queue(b, &s);
	s = sqe_inline(KFAB_OP_SEND, 19, to_p, 0, big, sizeof(big));
	queue(b, &s);
	if (_test_cmd_doorbell(b->fd, b->ep, NULL))
		return -3;
	/* Two receives find them waiting. */
	s = sqe_buf(KFAB_OP_RECV, 8, ANY, bufs[8], 8);
	queue(&p, &s);
	s = sqe_buf(KFAB_OP_RECV, 9, ANY, bufs[9], 64);
	queue(&p, &s);
	if (_test_cmd_doorbell(p.fd, p.ep, NULL))
		return -4;

	n = cq_transcript(&p, from_b, rx, room);
	for (i = 1; i < 10; i++)
		n += snprintf(rx + n, room - n, "buf %d %.64s\n", i, bufs[i]);
	cq_transcript(b, ANY, tx, room);
	ep_sibling_unmap(&p, true);
	return 0;
}

/*
 * kfab's fast path (msg.c, "the common case") gives exactly what the
 * general path gives: the sequence above with it (the default) and
 * without it (the fast_path module parameter), the same completions, in
 * the same order, with the same payloads; and neither reads an entry's
 * inline bytes past its message (stale there, as in a reused slot).
 */
TEST_F(msg, fast_path_gives_what_the_general_path_gives)
{
	static char rx[2][4096], tx[2][4096];
	struct raw_ep b2;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	if (access(FAST_PATH_PARAM, W_OK))
		SKIP(return, "%s not writable", FAST_PATH_PARAM);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, set_fast_path(i == 0));
		ASSERT_EQ(0, ep_setup(&b2, true));
		EXPECT_EQ(0, fast_path_sequence(&self->a, &b2, rx[i], tx[i],
						sizeof(rx[i])));
		ep_close(&b2);
	}
	ASSERT_EQ(0, set_fast_path(true));
	/* Addresses differ from run to run; what they are does not. */
	EXPECT_STREQ(rx[1], rx[0]);
	EXPECT_STREQ(tx[1], tx[0]);
	/* Neither path read an entry past its message. */
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(NULL, strstr(rx[i], "STALE"));
		EXPECT_EQ(NULL, strchr(rx[i], (char)STALE_BYTE));
	}
}

TEST_F(msg, ring_is_the_doorbell_without_a_struct)
{
	struct kfab_query q = { .size = sizeof(q) };
	uint8_t rx[3][8], tx[8] = "ringing";
	struct raw_ep idle;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, kfab_ioctl(self->a.fd, KFAB_IOC_QUERY, &q));
	EXPECT_TRUE(q.features & KFAB_FEATURE_RING);
	/* An empty ring: nothing consumed. */
	EXPECT_EQ(0, _test_cmd_ring(self->a.fd, self->a.ep));
	for (i = 0; i < 3; i++) {
		s = sqe_buf(KFAB_OP_RECV, 10 + i, ANY, rx[i], sizeof(rx[i]));
		queue(&self->a, &s);
	}
	EXPECT_EQ(3, _test_cmd_ring(self->a.fd, self->a.ep));
	for (i = 0; i < 2; i++) {
		s = sqe_buf(KFAB_OP_SEND, 20 + i, self->b_to_a, tx, sizeof(tx));
		queue(&self->b, &s);
	}
	EXPECT_EQ(2, _test_cmd_ring(self->b.fd, self->b.ep));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(10 + i, e.op_context);
		EXPECT_EQ(0, memcmp(tx, rx[i], sizeof(tx)));
		ASSERT_EQ(0, cq_next(&self->b, &e));
		EXPECT_EQ(20 + i, e.op_context);
	}

	/* What is no ring of this file: the doorbell's answers. */
	EXPECT_EQ(-ENOENT, _test_cmd_ring(self->a.fd, 0));
	EXPECT_EQ(-ENOENT, _test_cmd_ring(self->a.fd, self->a.cq.id));
	EXPECT_EQ(-ENOENT, _test_cmd_ring(self->a.fd, self->a.av));
	EXPECT_EQ(-ENOENT, _test_cmd_ring(self->a.fd, self->a.dom));
	EXPECT_EQ(-ENOENT, _test_cmd_ring(self->a.fd, 0xffffffffUL));
	/* No id is wider than 32 bits: not taken for its low half. */
	EXPECT_EQ(-EINVAL,
		  _test_cmd_ring(self->a.fd, (1UL << 32) | self->a.ep));
	EXPECT_EQ(-EINVAL, _test_cmd_ring(self->a.fd, ~0UL));
	/* An endpoint not enabled yet may not send: as the doorbell. */
	ASSERT_EQ(0, ep_setup(&idle, false));
	EXPECT_EQ(-EINVAL, _test_cmd_ring(idle.fd, idle.ep));
	ep_close(&idle);
	/* Only the exact command: other sizes or directions are unknown. */
	EXPECT_EQ(-ENOTTY, kfab_ioctl(self->a.fd,
		_IOC(_IOC_NONE, KFAB_TYPE, KFAB_CMD_RING, 4), NULL));
	EXPECT_EQ(-ENOTTY, kfab_ioctl(self->a.fd,
		_IOR(KFAB_TYPE, KFAB_CMD_RING, __u32), NULL));
	/* The remaining receive is still posted: the struct form finds it. */
	s = sqe_buf(KFAB_OP_SEND, 23, self->b_to_a, tx, sizeof(tx));
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(12, e.op_context);
}

/* A send of @msg from @r to @addr, on a doorbell of its own. */
static int send_alone(struct raw_ep *r, uint64_t ctx, uint64_t addr,
		      const char *msg, bool inl)
{
	struct kfab_sqe s;

	if (inl)
		s = sqe_inline(KFAB_OP_SEND, ctx, addr, 0, msg, strlen(msg));
	else
		s = sqe_buf(KFAB_OP_SEND, ctx, addr, (void *)msg, strlen(msg));
	return submit(r, &s);
}

/*
 * An endpoint's doorbell remembers where the last one's send went (struct
 * kfab_dest_memo): doorbell after doorbell, each carrying one send, what
 * it remembers must follow the receiver's AV (the sender's index there),
 * the sender's AV (an index that names another endpoint now) and the
 * receiver's life.  @inl: sends small enough for the fast path.
 */
static void doorbells_follow_the_avs(struct __test_metadata *_metadata,
				     FIXTURE_DATA(msg) *self, bool inl)
{
	char rx[4][8] = { { 0 } };
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	uint64_t a_to_c, c_to_a, b_to_a;
	uint32_t idx;
	struct raw_ep c;
	struct kfab_sqe s;

	ASSERT_EQ(0, ep_setup(&c, true));
	c_to_a = peer(&c, &self->a);
	ASSERT_NE(ANY, c_to_a);

	/* 1: as resolved. */
	s = sqe_buf(KFAB_OP_RECV, 1, ANY, rx[0], sizeof(rx[0]));
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, send_alone(&self->a, 11, self->a_to_b, "m1", inl));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(1, e.op_context);
	EXPECT_EQ(self->b_to_a, e.src_addr);
	EXPECT_EQ(2, e.len);

	/* 2: B's AV changes; A's next send reports A's new index there. */
	idx = self->b_to_a;
	ASSERT_EQ(0, _test_cmd_av_remove(self->b.fd, self->b.av, &idx, 1));
	ASSERT_NE(ANY, peer(&self->b, &c));	/* takes A's old index */
	b_to_a = peer(&self->b, &self->a);
	ASSERT_NE(ANY, b_to_a);
	ASSERT_NE(self->b_to_a, b_to_a);
	s = sqe_buf(KFAB_OP_RECV, 2, ANY, rx[1], sizeof(rx[1]));
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, send_alone(&self->a, 12, self->a_to_b, "m2", inl));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(2, e.op_context);
	EXPECT_EQ(b_to_a, e.src_addr);

	/* 3: A's index of B names C now: the send goes to C. */
	idx = self->a_to_b;
	ASSERT_EQ(0, _test_cmd_av_remove(self->a.fd, self->a.av, &idx, 1));
	a_to_c = peer(&self->a, &c);
	ASSERT_EQ(self->a_to_b, a_to_c);
	s = sqe_buf(KFAB_OP_RECV, 3, ANY, rx[2], sizeof(rx[2]));
	ASSERT_EQ(0, submit(&c, &s));
	s = sqe_buf(KFAB_OP_RECV, 4, ANY, rx[3], sizeof(rx[3]));
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, send_alone(&self->a, 13, a_to_c, "m3", inl));
	ASSERT_EQ(0, cq_next(&c, &e));
	EXPECT_EQ(3, e.op_context);
	EXPECT_EQ(c_to_a, e.src_addr);
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));

	/* 4: C is gone: the next send to it fails, nothing else happens. */
	ep_close(&c);
	ASSERT_EQ(0, send_alone(&self->a, 14, a_to_c, "m4", inl));
	ASSERT_EQ(0, cq_err(&self->a, &err));
	EXPECT_EQ(14, err.out_entry.op_context);
	EXPECT_EQ(EHOSTUNREACH, err.out_err);
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));
	for (idx = 11; idx <= 13; idx++) {
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(idx, e.op_context);
	}
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
}

TEST_F(msg, doorbells_follow_the_avs)
{
	RETURN_IF_SETUP_SKIPPED();
	doorbells_follow_the_avs(_metadata, self, false);
}

TEST_F(msg, doorbells_follow_the_avs_inline)
{
	RETURN_IF_SETUP_SKIPPED();
	doorbells_follow_the_avs(_metadata, self, true);
}

/*
 * The endpoint a doorbell's send reached is kept for the next doorbell
 * without a reference (struct kfab_dest_memo's @core).  Once it is closed
 * the next send to its address fails, however often an endpoint is made
 * again after it (in the memory its core had, once a grace period has
 * passed), and the new endpoint receives nothing.
 */
TEST_F(msg, kept_destination_never_reaches_a_newer_endpoint)
{
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct raw_ep d, n;
	uint64_t a_to_d;
	struct kfab_sqe s;
	char rx[8];
	int i;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < 48; i++) {
		ASSERT_EQ(0, ep_setup(&d, true));
		a_to_d = peer(&self->a, &d);
		ASSERT_NE(ANY, a_to_d);
		s = sqe_buf(KFAB_OP_RECV, 1, ANY, rx, sizeof(rx));
		ASSERT_EQ(0, submit(&d, &s));
		ASSERT_EQ(0, send_alone(&self->a, 100 + i, a_to_d, "k1", i & 1));
		ASSERT_EQ(0, cq_next(&d, &e));
		ep_close(&d);
		/* kfree_rcu(): the core's memory may be had again after. */
		usleep(2000);
		ASSERT_EQ(0, ep_setup(&n, true));
		s = sqe_buf(KFAB_OP_RECV, 2, ANY, rx, sizeof(rx));
		ASSERT_EQ(0, submit(&n, &s));
		ASSERT_EQ(0, send_alone(&self->a, 1000 + i, a_to_d, "k2", i & 1));
		ASSERT_EQ(0, cq_err(&self->a, &err));
		EXPECT_EQ(1000 + i, err.out_entry.op_context);
		EXPECT_EQ(EHOSTUNREACH, err.out_err);
		EXPECT_EQ(-EAGAIN, cq_next(&n, &e));
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(100 + i, e.op_context);
		ep_close(&n);
	}
	/* An endpoint gone elsewhere only costs the kept one a lookup. */
	s = sqe_buf(KFAB_OP_RECV, 3, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, send_alone(&self->a, 3, self->a_to_b, "k3", true));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(3, e.op_context);
	ASSERT_EQ(0, ep_setup(&d, true));
	ep_close(&d);
	s = sqe_buf(KFAB_OP_RECV, 4, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, send_alone(&self->a, 4, self->a_to_b, "k4", true));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(4, e.op_context);
	EXPECT_EQ(self->b_to_a, e.src_addr);
}

/*
 * The kernel copies an entry's header and first iovec, and the rest only
 * when the header says it is used (kfab_sq_copy()): inline payloads of
 * 16 and 17 bytes and the whole 64, one iovec with garbage after it, two
 * and four iovecs; every message arrives whole, nothing past it.
 */
TEST_F(msg, entries_are_read_as_far_as_their_headers_say)
{
	static const size_t inl[] = { 16, 17, KFAB_INLINE_MAX };
	char tx[KFAB_INLINE_MAX], rx[7][KFAB_INLINE_MAX + 8];
	struct kfab_cq_entry e;
	struct iovec iov[4];
	struct kfab_sqe s;
	size_t want[7];
	unsigned int i, k = 0;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < sizeof(tx); i++)
		tx[i] = (char)(i + 1);
	memset(rx, 0, sizeof(rx));
	for (i = 0; i < 7; i++) {
		s = sqe_buf(KFAB_OP_RECV, i, ANY, rx[i], sizeof(rx[i]));
		queue(&self->a, &s);
	}
	test_cmd_doorbell(self->a.fd, self->a.ep, NULL);
	/* Stale bytes after each payload (sqe_inline()). */
	for (i = 0; i < 3; i++) {
		s = sqe_inline(KFAB_OP_SEND, k, self->b_to_a, 0, tx, inl[i]);
		want[k++] = inl[i];
		queue(&self->b, &s);
	}
	/* One iovec, and what follows it is garbage. */
	s = sqe_buf(KFAB_OP_SEND, k, self->b_to_a, tx, 9);
	memset(&s.iov[1], STALE_BYTE, sizeof(s.iov) - sizeof(s.iov[0]));
	want[k++] = 9;
	queue(&self->b, &s);
	/* Two iovecs, then four: gathered in order. */
	iov[0] = (struct iovec){ tx, 10 };
	iov[1] = (struct iovec){ tx + 10, 20 };
	s = sqe_iov(KFAB_OP_SEND, k, self->b_to_a, iov, 2);
	want[k++] = 30;
	queue(&self->b, &s);
	for (i = 0; i < 4; i++)
		iov[i] = (struct iovec){ tx + 7 * i, 7 };
	s = sqe_iov(KFAB_OP_SEND, k, self->b_to_a, iov, 4);
	want[k++] = 28;
	queue(&self->b, &s);
	/* Four iovecs over a slot of the same ring: the header says one. */
	s = sqe_iov(KFAB_OP_SEND, k, self->b_to_a, iov, 4);
	s.iov_count = 1;
	want[k++] = 7;
	queue(&self->b, &s);
	test_cmd_doorbell(self->b.fd, self->b.ep, NULL);
	for (i = 0; i < k; i++) {
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(i, e.op_context);
		EXPECT_EQ(want[i], e.len);
		EXPECT_EQ(0, memcmp(rx[i], tx, want[i]));
		EXPECT_EQ(0, rx[i][want[i]]);
		ASSERT_EQ(0, cq_next(&self->b, &e));
		EXPECT_EQ(i, e.op_context);
	}
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
}

TEST_HARNESS_MAIN
