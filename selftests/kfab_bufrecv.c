// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Buffered receives through the raw ABI (KFAB_IOC_RX_BUFFERED,
 * KFAB_SQE_BUFFERED; fi_msg(3) "Buffered Receives"): a message nobody
 * waits for lands in a slot of a region the receiver maps read-only, its
 * completion points there, and FI_CLAIM or FI_DISCARD gives the slot
 * back.  Each endpoint lives in a file of its own, as if in a process of
 * its own.
 *
 * Needs /dev/kfab (the VM); on the host every test SKIPs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kfab_test.h"
#include "kfab_raw_ep.h"

#define LIMIT	256

static int rx_buffered(int fd, uint32_t id, uint32_t limit, uint32_t slots,
		       struct kfab_rx_buffered *out)
{
	*out = (struct kfab_rx_buffered){ .size = sizeof(*out),
					  .obj_id = id, .limit = limit,
					  .slots = slots,
					  .cookie = 0xc00c1e0000ULL | id };
	return kfab_ioctl(fd, KFAB_IOC_RX_BUFFERED, out);
}

/*
 * An endpoint in a file of its own, bound to an AV and one CQ, enabled;
 * with @slots, buffering @limit bytes in that many slots, mapped.
 */
static int buf_ep_setup(struct raw_ep *r, uint32_t limit, uint32_t slots)
{
	long page = sysconf(_SC_PAGESIZE);
	int rc = ep_setup(r, false);

	if (rc)
		return rc;
	if (slots) {
		if (rx_buffered(r->fd, r->ep, limit, slots, &r->rb))
			return -7;
		r->region.offset = r->rb.out_region;
		r->region.size = ((size_t)r->rb.out_slots * r->rb.out_stride +
				  page - 1) & ~(page - 1);
		r->slots = _test_mmap(r->fd, &r->region, PROT_READ);
		if (r->slots == MAP_FAILED)
			return -8;
	}
	return ep_enable(r);
}

/* A claim (or with @discard a discard) of the message @token names. */
static struct kfab_sqe sqe_claim(uint8_t op, uint64_t ctx, uint64_t token,
				 void *buf, size_t len, bool discard)
{
	struct kfab_sqe s = sqe_buf(op, ctx, ANY, buf, len);

	s.flags |= KFAB_SQE_CLAIM | KFAB_SQE_BUFFERED |
		   (discard ? KFAB_SQE_DISCARD : 0);
	s.data = token;
	if (discard)
		s.iov_count = 0;
	return s;
}

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	while (len--)
		if (*p++)
			return false;
	return true;
}

FIXTURE(buf) {
	struct raw_ep a, b;	/* a sends; b buffers */
	uint64_t a_to_b, b_to_a;
	uint8_t out[4096], in[4096];
};

FIXTURE_VARIANT(buf) {
	uint32_t slots;
};

FIXTURE_VARIANT_ADD(buf, four) { .slots = 4 };
FIXTURE_VARIANT_ADD(buf, two) { .slots = 2 };

FIXTURE_SETUP(buf)
{
	self->a.fd = self->b.fd = -1;
	if (!kfab_have_device())
		SKIP(return, "%s absent: needs kfab.ko (VM)", KFAB_DEV);
	ASSERT_EQ(0, buf_ep_setup(&self->a, 0, 0));
	ASSERT_EQ(0, buf_ep_setup(&self->b, LIMIT, variant->slots));
	self->a_to_b = peer(&self->a, &self->b);
	self->b_to_a = peer(&self->b, &self->a);
	ASSERT_NE(ANY, self->a_to_b);
	ASSERT_NE(ANY, self->b_to_a);
}

FIXTURE_TEARDOWN(buf)
{
	ep_close(&self->a);
	ep_close(&self->b);
}

/* Send @len bytes of pattern @seed from a to b (tagged with @tag). */
static int send_to_b(FIXTURE_DATA(buf) *self, size_t len, uint8_t seed,
		     bool tagged, uint64_t tag, uint64_t ctx)
{
	struct kfab_sqe s;

	fill(self->out, len, seed);
	s = sqe_buf(tagged ? KFAB_OP_TSEND : KFAB_OP_SEND, ctx, self->a_to_b,
		    self->out, len);
	s.tag = tag;
	return submit(&self->a, &s);
}

TEST_F(buf, setup_answers_the_limits)
{
	EXPECT_EQ(LIMIT, self->b.rb.out_limit);
	EXPECT_EQ(variant->slots, self->b.rb.out_slots);
	EXPECT_EQ(LIMIT, self->b.rb.out_stride);
	EXPECT_NE(0, self->b.rb.out_region);
}

/*
 * Below, at and above the limit: the notice points at the message's first
 * bytes, the rest of the slot is zero (what a longer, earlier message
 * left is gone), and a discard frees the slot and makes the token stale.
 */
TEST_F(buf, completion_points_at_the_bytes_then_discard)
{
	size_t sizes[] = { LIMIT, 1, 100, LIMIT + 1, 3000, 10 };
	struct kfab_cq_readerr er;
	struct kfab_cq_entry e, d;
	struct kfab_sqe s;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t len = sizes[i], held = len < LIMIT ? len : LIMIT;
		const uint8_t *slot;

		ASSERT_EQ(0, send_to_b(self, len, 3 * i + 1, false, 0, 10 + i));
		ASSERT_EQ(0, cq_next(&self->b, &e));
		EXPECT_EQ(KFAB_COMP_RECV | KFAB_COMP_MSG | KFAB_COMP_BUFFERED |
			  (len > LIMIT ? KFAB_COMP_MORE : 0), e.flags);
		EXPECT_EQ(len, e.len);
		EXPECT_EQ(self->b_to_a, e.src_addr);
		EXPECT_EQ(0xc00c1e0000ULL | self->b.ep, e.cookie);
		ASSERT_LT(e.buf, self->b.region.size);
		EXPECT_EQ(0, e.buf % self->b.rb.out_stride);
		slot = self->b.slots + e.buf;
		EXPECT_EQ(0, memcmp(slot, self->out, held));
		/* What a longer, earlier message left is gone. */
		EXPECT_TRUE(all_zero(slot + held, LIMIT - held));
		if (len <= LIMIT) {
			ASSERT_EQ(0, cq_next(&self->a, &d));
			EXPECT_EQ(10 + i, d.op_context);
		}
		s = sqe_claim(KFAB_OP_RECV, 500 + i, e.op_context, NULL, 0,
			      true);
		ASSERT_EQ(0, submit(&self->b, &s));
		ASSERT_EQ(0, cq_next(&self->b, &d));
		EXPECT_EQ(500 + i, d.op_context);
		EXPECT_EQ(0, d.len);
		EXPECT_EQ(0, d.flags & (KFAB_COMP_CLAIM | KFAB_COMP_BUFFERED));
		EXPECT_EQ(0, d.cookie);
		if (len > LIMIT) {
			ASSERT_EQ(0, cq_next(&self->a, &d));
			EXPECT_EQ(10 + i, d.op_context);
		}
		/* The token is stale now. */
		s = sqe_claim(KFAB_OP_RECV, 600, e.op_context, self->in,
			      sizeof(self->in), false);
		ASSERT_EQ(0, submit(&self->b, &s));
		EXPECT_EQ(-EAGAIN, cq_next(&self->b, &d));
		ASSERT_EQ(0, cq_err(&self->b, &er));
		EXPECT_EQ(EINVAL, er.out_err);
		EXPECT_EQ(600, er.out_entry.op_context);
	}
}

/* A claim of a message above the limit gets all of it, intact. */
TEST_F(buf, claim_of_a_partial_message_gets_the_rest)
{
	size_t sizes[] = { 50, LIMIT, LIMIT + 1, 4096 };
	struct kfab_cq_readerr er;
	struct kfab_cq_entry e, d;
	struct kfab_sqe s;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t len = sizes[i];

		ASSERT_EQ(0, send_to_b(self, len, 9 + i, false, 0, 20 + i));
		ASSERT_EQ(0, cq_next(&self->b, &e));
		memset(self->in, 0xee, sizeof(self->in));
		s = sqe_claim(KFAB_OP_RECV, 700 + i, e.op_context, self->in,
			      sizeof(self->in), false);
		ASSERT_EQ(0, submit(&self->b, &s));
		ASSERT_EQ(0, cq_next(&self->b, &d));
		EXPECT_EQ(700 + i, d.op_context);
		EXPECT_EQ(KFAB_COMP_RECV | KFAB_COMP_MSG | KFAB_COMP_CLAIM,
			  d.flags);
		EXPECT_EQ(len, d.len);
		EXPECT_EQ((uintptr_t)self->in, d.buf);
		EXPECT_EQ(0, memcmp(self->in, self->out, len));
		/* The send is done, either way. */
		ASSERT_EQ(0, cq_next(&self->a, &d));
		EXPECT_EQ(20 + i, d.op_context);
	}

	/* A claim into a buffer too small: truncated, the slot freed. */
	ASSERT_EQ(0, send_to_b(self, 1000, 1, false, 0, 30));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	s = sqe_claim(KFAB_OP_RECV, 800, e.op_context, self->in, 300, false);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &er));
	EXPECT_EQ(KFAB_ERR_TRUNC, er.out_err);
	EXPECT_EQ(700, er.out_olen);
	EXPECT_EQ(0, memcmp(self->in, self->out, 300));
	ASSERT_EQ(0, cq_next(&self->a, &d));
	EXPECT_EQ(30, d.op_context);
}

/* No free slot: the message waits in its sender's ring, then flows. */
TEST_F(buf, slots_exhausted_messages_wait_then_flow)
{
	struct kfab_cq_entry e[KFAB_BUFRECV_SLOTS_MAX], d;
	uint32_t done = 99;
	unsigned int i, n = variant->slots;
	struct kfab_sqe s;

	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, send_to_b(self, 64, i, false, 0, i));
		ASSERT_EQ(0, cq_next(&self->b, &e[i]));
		ASSERT_EQ(0, cq_next(&self->a, &d));
	}
	/* One more: nothing arrives, the send stays queued. */
	ASSERT_EQ(0, send_to_b(self, 64, 77, false, 0, 1000));
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &d));
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &d));
	ASSERT_EQ(0, _test_cmd_doorbell(self->a.fd, self->a.ep, &done));
	EXPECT_EQ(0, done);
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &d));

	/* One slot back: the next doorbell of the sender delivers it. */
	s = sqe_claim(KFAB_OP_RECV, 5, e[0].op_context, NULL, 0, true);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&self->b, &d));
	ASSERT_EQ(0, _test_cmd_doorbell(self->a.fd, self->a.ep, &done));
	EXPECT_EQ(1, done);
	ASSERT_EQ(0, cq_next(&self->b, &d));
	EXPECT_EQ(64, d.len);
	EXPECT_EQ(e[0].buf, d.buf);
	EXPECT_EQ(0, memcmp(self->b.slots + d.buf, self->out, 64));
	ASSERT_EQ(0, cq_next(&self->a, &d));
	EXPECT_EQ(1000, d.op_context);
}

/* A posted receive still takes a message first: nothing is buffered. */
TEST_F(buf, posted_receive_goes_first)
{
	struct kfab_cq_entry d;
	struct kfab_sqe s;

	s = sqe_buf(KFAB_OP_RECV, 42, ANY, self->in, sizeof(self->in));
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, send_to_b(self, 1000, 3, false, 0, 1));
	ASSERT_EQ(0, cq_next(&self->b, &d));
	EXPECT_EQ(42, d.op_context);
	EXPECT_EQ(0, d.flags & KFAB_COMP_BUFFERED);
	EXPECT_EQ(0, memcmp(self->in, self->out, 1000));
}

/* Tagged messages: the tag in the notice, claimed by a tagged receive. */
TEST_F(buf, tagged_message_is_buffered_and_claimed)
{
	struct kfab_cq_readerr er;
	struct kfab_cq_entry e, d;
	struct kfab_sqe s;

	ASSERT_EQ(0, send_to_b(self, 600, 5, true, 0xabcdef, 1));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(KFAB_COMP_RECV | KFAB_COMP_TAGGED | KFAB_COMP_BUFFERED |
		  KFAB_COMP_MORE, e.flags);
	EXPECT_EQ(0xabcdef, e.tag);
	EXPECT_EQ(600, e.len);
	/* A claim of the other kind names no message. */
	s = sqe_claim(KFAB_OP_RECV, 8, e.op_context, self->in, 600, false);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &er));
	EXPECT_EQ(EINVAL, er.out_err);
	s = sqe_claim(KFAB_OP_TRECV, 9, e.op_context, self->in, 600, false);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&self->b, &d));
	EXPECT_EQ(9, d.op_context);
	EXPECT_EQ(KFAB_COMP_RECV | KFAB_COMP_TAGGED | KFAB_COMP_CLAIM, d.flags);
	EXPECT_EQ(0xabcdef, d.tag);
	EXPECT_EQ(0, memcmp(self->in, self->out, 600));
	ASSERT_EQ(0, cq_next(&self->a, &d));
	EXPECT_EQ(1, d.op_context);
}

/* Tokens never given, or of a freed slot, are EINVAL; nothing breaks. */
TEST_F(buf, forged_or_stale_token_is_einval)
{
	uint64_t forged[] = { 0, 1, 12345, ~0ULL, 1ULL << 32,
			      (3ULL << 32) | 1000000 };
	struct kfab_cq_readerr er;
	struct kfab_cq_entry e, d;
	struct kfab_sqe s;
	unsigned int i;

	ASSERT_EQ(0, send_to_b(self, 10, 1, false, 0, 1));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	for (i = 0; i < ARRAY_SIZE(forged); i++) {
		bool discard = i & 1;

		if (forged[i] == e.op_context)
			continue;
		s = sqe_claim(KFAB_OP_RECV, 100 + i, forged[i], self->in, 64,
			      discard);
		ASSERT_EQ(0, submit(&self->b, &s));
		ASSERT_EQ(0, cq_err(&self->b, &er));
		EXPECT_EQ(EINVAL, er.out_err);
		EXPECT_EQ(100 + i, er.out_entry.op_context);
	}
	/* The next generation of the real slot is not valid yet either. */
	s = sqe_claim(KFAB_OP_RECV, 200, e.op_context + (1ULL << 32),
		      self->in, 64, false);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &er));
	EXPECT_EQ(EINVAL, er.out_err);
	/* Malformed: BUFFERED with PEEK, or without CLAIM. */
	s = sqe_claim(KFAB_OP_RECV, 201, e.op_context, self->in, 64, false);
	s.flags |= KFAB_SQE_PEEK;
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &er));
	EXPECT_EQ(EINVAL, er.out_err);
	s.flags &= ~(KFAB_SQE_PEEK | KFAB_SQE_CLAIM);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &er));
	EXPECT_EQ(EINVAL, er.out_err);
	/* A send with BUFFERED is malformed too. */
	s = sqe_buf(KFAB_OP_SEND, 202, self->a_to_b, self->out, 4);
	s.flags |= KFAB_SQE_BUFFERED;
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, cq_err(&self->a, &er));
	EXPECT_EQ(EINVAL, er.out_err);
	/* The real message is still there, intact. */
	s = sqe_claim(KFAB_OP_RECV, 300, e.op_context, self->in, 64, false);
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_next(&self->b, &d));
	EXPECT_EQ(300, d.op_context);
	EXPECT_EQ(10, d.len);
	EXPECT_EQ(0, memcmp(self->in, self->out, 10));
	/* An FI_CLAIM by context (FI_PEEK's) does not find it either. */
	ASSERT_EQ(0, send_to_b(self, 10, 1, false, 0, 2));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	s = sqe_buf(KFAB_OP_RECV, e.op_context, ANY, self->in, 64);
	s.flags |= KFAB_SQE_CLAIM;
	ASSERT_EQ(0, submit(&self->b, &s));
	ASSERT_EQ(0, cq_err(&self->b, &er));
	EXPECT_EQ(ENOMSG, er.out_err);
}

static sigjmp_buf fault_jmp;

static void on_fault(int sig)
{
	siglongjmp(fault_jmp, sig);
}

/* The region is read-only for good: no writable mapping, no mprotect. */
TEST_F(buf, user_space_cannot_write_the_region)
{
	struct sigaction sa = { .sa_handler = on_fault }, old_segv, old_bus;
	volatile uint8_t *p = (volatile uint8_t *)self->b.slots;
	void *w;
	int sig;

	w = mmap(NULL, self->b.region.size, PROT_READ | PROT_WRITE,
		 MAP_SHARED, self->b.fd, self->b.region.offset);
	EXPECT_EQ(MAP_FAILED, w);
	EXPECT_EQ(EPERM, errno);
	w = mmap(NULL, self->b.region.size, PROT_READ, MAP_PRIVATE,
		 self->b.fd, self->b.region.offset);
	EXPECT_EQ(MAP_FAILED, w);
	EXPECT_EQ(-1, mprotect((void *)self->b.slots, self->b.region.size,
			       PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);

	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	sig = sigsetjmp(fault_jmp, 1);
	if (!sig)
		p[0] = 1;
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
	EXPECT_EQ(SIGSEGV, sig);
	EXPECT_EQ(0, p[0]);
}

/* fork(): the child has no mapping of the region (VM_DONTCOPY). */
TEST_F(buf, fork_child_has_no_mapping)
{
	unsigned char vec[1];
	int status;
	pid_t pid;

	ASSERT_EQ(0, send_to_b(self, 10, 1, false, 0, 1));
	ASSERT_EQ(0, mincore((void *)self->b.slots, 1, vec));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(mincore((void *)self->b.slots, 1, vec) == -1 &&
		      errno == ENOMEM ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The parent still reads it. */
	EXPECT_EQ(0, memcmp(self->b.slots, self->out, 10));
}

/*
 * The receiver goes with slots taken, one message waiting at its sender:
 * the send completes with ECONNRESET, the region lives on in the mapping
 * until it is unmapped (kmemleak and the module's unload check the rest).
 */
TEST_F(buf, close_with_slots_outstanding)
{
	struct kfab_cq_readerr er;
	struct kfab_cq_entry e;
	uint8_t first[10];

	ASSERT_EQ(0, send_to_b(self, 10, 1, false, 0, 1));
	memcpy(first, self->out, sizeof(first));
	ASSERT_EQ(0, cq_next(&self->a, &e));
	ASSERT_EQ(0, send_to_b(self, 2000, 2, false, 0, 2));
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	/* The file is closed; the mapping (which holds it) stays readable. */
	_test_cq_unmap(&self->b.cq);
	_test_munmap(self->b.sq, &self->b.epo.out_sq.region);
	self->b.sq = NULL;
	close(self->b.fd);
	self->b.fd = -1;
	EXPECT_EQ(0, memcmp(self->b.slots, first, sizeof(first)));
	EXPECT_EQ(-EAGAIN, cq_err(&self->a, &er));
	/* The last mapping goes: the endpoint with it, and its messages. */
	_test_munmap((void *)self->b.slots, &self->b.region);
	self->b.slots = NULL;
	ASSERT_EQ(0, cq_err(&self->a, &er));
	EXPECT_EQ(ECONNRESET, er.out_err);
	EXPECT_EQ(2, er.out_entry.op_context);
	/* Sending again: nobody there. */
	ASSERT_EQ(0, send_to_b(self, 10, 1, false, 0, 3));
	ASSERT_EQ(0, cq_err(&self->a, &er));
	EXPECT_NE(0, er.out_err);
}

/* KFAB_IOC_RX_BUFFERED's own errors. */
TEST(setup_errors)
{
	struct kfab_rx_buffered rb;
	struct raw_ep r;
	uint32_t srx = 0;

	if (!kfab_have_device())
		SKIP(return, "needs kfab.ko");
	ASSERT_EQ(0, buf_ep_setup(&r, 0, 0));	/* enabled, no region */
	EXPECT_EQ(-EINVAL, rx_buffered(r.fd, r.ep, 0, 0, &rb));
	EXPECT_EQ(-ENOENT, rx_buffered(r.fd, 9999, 0, 0, &rb));
	EXPECT_EQ(-EINVAL, rx_buffered(r.fd, r.cq.id, 0, 0, &rb));
	rb = (struct kfab_rx_buffered){ .size = sizeof(rb), .flags = 1,
					.obj_id = r.ep };
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(r.fd, KFAB_IOC_RX_BUFFERED, &rb));

	/* A new endpoint, not enabled: limits first, then once only. */
	ASSERT_EQ(0, _test_cmd_ep_open(r.fd, r.dom, 32, &r.ep, NULL));
	EXPECT_EQ(-EMSGSIZE, rx_buffered(r.fd, r.ep,
					 KFAB_BUFRECV_LIMIT_MAX + 1, 1, &rb));
	EXPECT_EQ(-EINVAL, rx_buffered(r.fd, r.ep, 64,
				       KFAB_BUFRECV_SLOTS_MAX + 1, &rb));
	EXPECT_EQ(-EINVAL, rx_buffered(r.fd, r.ep, KFAB_BUFRECV_LIMIT_MAX,
				       KFAB_BUFRECV_SLOTS_MAX, &rb));
	ASSERT_EQ(0, rx_buffered(r.fd, r.ep, 0, 0, &rb));
	EXPECT_EQ(KFAB_BUFRECV_LIMIT_DEFAULT, rb.out_limit);
	EXPECT_EQ(KFAB_BUFRECV_SLOTS_DEFAULT, rb.out_slots);
	EXPECT_EQ(-EBUSY, rx_buffered(r.fd, r.ep, 0, 0, &rb));
	/* Odd limits round the stride up to 64 bytes. */
	ASSERT_EQ(0, _test_cmd_ep_open(r.fd, r.dom, 32, &r.ep, NULL));
	ASSERT_EQ(0, rx_buffered(r.fd, r.ep, 100, 3, &rb));
	EXPECT_EQ(100, rb.out_limit);
	EXPECT_EQ(128, rb.out_stride);

	/* An SRX takes one too. */
	ASSERT_EQ(0, _test_cmd_srx_open(r.fd, r.dom, 32, &srx, NULL));
	ASSERT_EQ(0, rx_buffered(r.fd, srx, 512, 8, &rb));
	EXPECT_EQ(-EBUSY, rx_buffered(r.fd, srx, 512, 8, &rb));
	/* The object goes: its offset no longer maps. */
	ASSERT_EQ(0, _test_cmd_destroy(r.fd, srx));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, r.fd,
				   rb.out_region));
	ep_close(&r);
}

/*
 * The slot count (rx_attr->total_buffered_recv / limit in the library):
 * 0 is the default, and hostile counts, whose region would pass
 * KFAB_BUFRECV_REGION_MAX or whose product would not fit 32 bits, are
 * refused without allocating; the largest region is taken.
 */
TEST(slot_counts_are_bounded)
{
	static const struct {
		uint32_t limit, slots;
		int rc;
	} c[] = {
		{ 1, UINT32_MAX, -EINVAL },
		{ KFAB_BUFRECV_LIMIT_MAX, UINT32_MAX, -EINVAL },
		{ 64, KFAB_BUFRECV_SLOTS_MAX + 1, -EINVAL },
		{ 64, 0x80000000u, -EINVAL },	/* 2^31 * 64: 2^37 */
		/* 1024 * 4160 (4097 rounded up) is past 4 MiB */
		{ 4097, KFAB_BUFRECV_SLOTS_MAX, -EINVAL },
		{ KFAB_BUFRECV_LIMIT_MAX,
		  KFAB_BUFRECV_REGION_MAX / KFAB_BUFRECV_LIMIT_MAX + 1,
		  -EINVAL },
		{ KFAB_BUFRECV_LIMIT_MAX,
		  KFAB_BUFRECV_REGION_MAX / KFAB_BUFRECV_LIMIT_MAX, 0 },
		{ 4096, KFAB_BUFRECV_SLOTS_MAX, 0 },	/* 4 MiB exactly */
		{ 64, 1, 0 },
		{ 256, 0, 0 },				/* the default count */
	};
	struct kfab_rx_buffered rb;
	struct raw_ep r;
	unsigned int i;
	uint32_t ep;

	if (!kfab_have_device())
		SKIP(return, "needs kfab.ko");
	ASSERT_EQ(0, buf_ep_setup(&r, 0, 0));
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		ASSERT_EQ(0, _test_cmd_ep_open(r.fd, r.dom, 32, &ep, NULL));
		EXPECT_EQ(c[i].rc, rx_buffered(r.fd, ep, c[i].limit,
					       c[i].slots, &rb))
			TH_LOG("limit %u slots %u", c[i].limit, c[i].slots);
		if (!c[i].rc) {
			EXPECT_EQ(c[i].slots ? c[i].slots :
				  KFAB_BUFRECV_SLOTS_DEFAULT, rb.out_slots);
			EXPECT_GE(KFAB_BUFRECV_REGION_MAX,
				  (uint64_t)rb.out_slots * rb.out_stride);
		}
		EXPECT_EQ(0, _test_cmd_destroy(r.fd, ep));
	}
	ep_close(&r);
}

/*
 * A scalable endpoint's receive context buffers like an endpoint; its
 * anchor and its transmit contexts, which nothing can reach, take no
 * region.
 */
TEST(block_receive_contexts_take_a_region)
{
	struct kfab_ep_open o = { .size = sizeof(o),
				  .type = KFAB_EP_TYPE_RDM,
				  .sq_entries = 32 };
	struct kfab_ep_open rx, tx;
	struct kfab_rx_buffered rb;
	struct raw_ep r;

	if (!kfab_have_device())
		SKIP(return, "needs kfab.ko");
	ASSERT_EQ(0, buf_ep_setup(&r, 0, 0));
	o.domain_id = r.dom;
	o.flags = KFAB_EP_OPEN_BLOCK;
	ASSERT_EQ(0, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &o));
	rx = o;
	rx.flags = KFAB_EP_OPEN_JOIN;
	rx.block_ep_id = o.out_ep_id;
	rx.block_index = 3;
	ASSERT_EQ(0, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &rx));
	tx = o;
	tx.flags = KFAB_EP_OPEN_JOIN | KFAB_EP_OPEN_SEND_ONLY;
	tx.block_ep_id = o.out_ep_id;
	ASSERT_EQ(0, kfab_ioctl(r.fd, KFAB_IOC_EP_OPEN, &tx));

	EXPECT_EQ(-EINVAL, rx_buffered(r.fd, o.out_ep_id, 0, 0, &rb));
	EXPECT_EQ(-EINVAL, rx_buffered(r.fd, tx.out_ep_id, 0, 0, &rb));
	ASSERT_EQ(0, rx_buffered(r.fd, rx.out_ep_id, 512, 4, &rb));
	EXPECT_EQ(4, rb.out_slots);
	EXPECT_EQ(-EBUSY, rx_buffered(r.fd, rx.out_ep_id, 512, 4, &rb));
	ep_close(&r);
}

/* An SRX that buffers: the notice goes to the endpoint sent to. */
TEST(srx_buffers_for_its_endpoints)
{
	struct kfab_av_open avo = { 0 };
	struct kfab_rx_buffered rb;
	struct kfab_cq_entry e, d;
	struct kfab_srx_open so;
	struct raw_ep a, b, x;
	struct kfab_mmap region;
	const uint8_t *slots;
	uint8_t out[100], in[100];
	struct kfab_sqe s;
	uint32_t srx = 0;
	uint64_t to_b;

	if (!kfab_have_device())
		SKIP(return, "needs kfab.ko");
	ASSERT_EQ(0, buf_ep_setup(&a, 0, 0));
	memset(&b, 0, sizeof(b));
	ASSERT_EQ(0, _test_open_domain(&b.fd, &b.dom));
	avo.domain_id = b.dom;
	ASSERT_EQ(0, _test_cmd_av_open(b.fd, &avo, &b.av));
	ASSERT_EQ(0, _test_cq_open_mapped(b.fd, b.dom, 64, 0, &b.cq));
	ASSERT_EQ(0, _test_cmd_ep_open(b.fd, b.dom, 32, &b.ep, &b.epo));
	ASSERT_EQ(0, _test_cmd_srx_open(b.fd, b.dom, 32, &srx, &so));
	ASSERT_EQ(0, rx_buffered(b.fd, srx, 64, 2, &rb));
	region.offset = rb.out_region;
	region.size = 4096;
	slots = _test_mmap(b.fd, &region, PROT_READ);
	ASSERT_NE(MAP_FAILED, slots);
	ASSERT_EQ(0, _test_cmd_ep_bind(b.fd, b.ep, srx, 0));
	/* An endpoint of an SRX has no receive context of its own. */
	EXPECT_EQ(-EINVAL, rx_buffered(b.fd, b.ep, 64, 2, &rb));
	ASSERT_EQ(0, _test_ep_bind_enable(b.fd, b.ep, b.av, b.cq.id));
	EXPECT_EQ(-EBUSY, rx_buffered(b.fd, srx, 64, 2, &rb));
	b.addr = b.epo.out_addr;
	to_b = peer(&a, &b);
	ASSERT_NE(ANY, to_b);

	fill(out, sizeof(out), 4);
	s = sqe_buf(KFAB_OP_SEND, 1, to_b, out, sizeof(out));
	ASSERT_EQ(0, submit(&a, &s));
	ASSERT_EQ(0, cq_next(&b, &e));
	EXPECT_EQ(100, e.len);
	EXPECT_TRUE(e.flags & KFAB_COMP_MORE);
	EXPECT_EQ(0xc00c1e0000ULL | srx, e.cookie);
	EXPECT_EQ(0, memcmp(slots + e.buf, out, 64));
	EXPECT_EQ(-EAGAIN, cq_next(&a, &d));

	/* Claimed through the SRX's ring; the completion is b's. */
	memset(&x, 0, sizeof(x));
	x.fd = b.fd;
	x.ep = srx;
	x.epo.out_sq = so.out_sq;
	x.sq = _test_mmap(b.fd, &so.out_sq.region, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, x.sq);
	s = sqe_claim(KFAB_OP_RECV, 7, e.op_context, in, sizeof(in), false);
	ASSERT_EQ(0, submit(&x, &s));
	ASSERT_EQ(0, cq_next(&b, &d));
	EXPECT_EQ(7, d.op_context);
	EXPECT_EQ(100, d.len);
	EXPECT_EQ(0, memcmp(in, out, sizeof(out)));
	ASSERT_EQ(0, cq_next(&a, &d));
	EXPECT_EQ(1, d.op_context);
	_test_munmap(x.sq, &so.out_sq.region);
	_test_munmap((void *)slots, &region);
	ep_close(&a);
	ep_close(&b);
}

TEST_HARNESS_MAIN
