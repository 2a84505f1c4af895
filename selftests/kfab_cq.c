// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues and counters, through libfabric's API (fi_cq(3),
 * fi_cntr(3)) and through the raw ioctls and mappings of /dev/kfab.
 *
 * The kernel posts the completions: KFAB_IOC_TEST_CQ_POST (CONFIG_KFAB_TEST)
 * stands in for the endpoints that do not exist yet.  The kernel ids and the
 * device file behind a CQ come from the kfab extension kfab_kernel_handle().
 *
 * Runs inside the test VM with the test build of kfab.ko and
 * FI_PROVIDER_PATH naming libshim/prov.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <linux/kfab.h>
#include <kfab/kfab.h>

#include "kselftest_harness.h"
#include "kfab_test.h"


/* KFAB_IOC_TEST_CQ_POST of @count completions with contexts from @ctx. */
static int post(int fd, uint32_t cq_id, uint32_t cntr_id, uint32_t count,
		uint64_t ctx, struct kfab_test_cq_post *out)
{
	struct kfab_test_cq_post cmd = {
		.cq_id = cq_id, .cntr_id = cntr_id,
		.count = count, .context = ctx,
		.entry_flags = FI_RECV | FI_MSG, .len = ctx, .buf = ctx,
		.data = ctx, .tag = ctx, .src_addr = KFAB_CQ_ADDR_NOTAVAIL,
	};
	int rc = _test_cmd_test_cq_post(fd, &cmd);

	if (out)
		*out = cmd;
	return rc;
}

static int post_err(int fd, uint32_t cq_id, uint32_t cntr_id, uint64_t ctx,
		    int err, const void *data, uint32_t data_size)
{
	struct kfab_test_cq_post cmd = {
		.flags = KFAB_TEST_POST_ERROR,
		.cq_id = cq_id, .cntr_id = cntr_id, .count = 1,
		.context = ctx, .err = err, .prov_errno = err + 1000,
		.entry_flags = FI_RECV, .len = 11, .olen = 22, .tag = 33,
		.err_data = (uintptr_t)data, .err_data_size = data_size,
	};

	return _test_cmd_test_cq_post(fd, &cmd);
}

/* ---- libfabric objects ---- */

FIXTURE(dom) {
	struct kfab_test_fi fi;
};

static void open_domain(struct __test_metadata *_metadata,
			struct kfab_test_fi *fi)
{
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_test_module())
		SKIP(return, "needs the CONFIG_KFAB_TEST build of kfab.ko");
	test_fi_domain_open(fi, kfab_test_hints());
}

FIXTURE_SETUP(dom)
{
	open_domain(_metadata, &self->fi);
}

FIXTURE_TEARDOWN(dom)
{
	test_fi_close(&self->fi);
}

static struct fid_cq *open_cq(struct __test_metadata *_metadata,
			      struct fid_domain *domain,
			      enum fi_cq_format format, size_t size,
			      enum fi_wait_obj wait_obj,
			      struct kfab_kernel_handle *h)
{
	struct fi_cq_attr attr = {
		.size = size, .format = format, .wait_obj = wait_obj,
	};
	struct fid_cq *cq = NULL;
	int rc = fi_cq_open(domain, &attr, &cq, NULL);

	EXPECT_EQ(0, rc);
	if (rc)
		return NULL;
	EXPECT_EQ(0, kfab_kernel_handle(&cq->fid, h));
	return cq;
}

/* ---- every format ---- */

FIXTURE(fmt) {
	struct kfab_test_fi fi;
};

FIXTURE_VARIANT(fmt) {
	enum fi_cq_format format;
	size_t entry_size;
};

FIXTURE_VARIANT_ADD(fmt, unspec) {
	.format = FI_CQ_FORMAT_UNSPEC, .entry_size = sizeof(struct fi_cq_entry),
};

FIXTURE_VARIANT_ADD(fmt, context) {
	.format = FI_CQ_FORMAT_CONTEXT, .entry_size = sizeof(struct fi_cq_entry),
};

FIXTURE_VARIANT_ADD(fmt, msg) {
	.format = FI_CQ_FORMAT_MSG, .entry_size = sizeof(struct fi_cq_msg_entry),
};

FIXTURE_VARIANT_ADD(fmt, data_fmt) {
	.format = FI_CQ_FORMAT_DATA, .entry_size = sizeof(struct fi_cq_data_entry),
};

FIXTURE_VARIANT_ADD(fmt, tagged) {
	.format = FI_CQ_FORMAT_TAGGED,
	.entry_size = sizeof(struct fi_cq_tagged_entry),
};

FIXTURE_SETUP(fmt)
{
	open_domain(_metadata, &self->fi);
}

FIXTURE_TEARDOWN(fmt)
{
	test_fi_close(&self->fi);
}

TEST_F(fmt, read_gives_every_field_of_the_format_then_eagain)
{
	struct kfab_kernel_handle h;
	uint8_t buf[8 * sizeof(struct fi_cq_tagged_entry)];
	struct fid_cq *cq;
	ssize_t n;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	cq = open_cq(_metadata, self->fi.domain, variant->format, 16,
		     FI_WAIT_NONE, &h);
	ASSERT_NE(NULL, cq);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, buf, 8));
	ASSERT_EQ(0, post(h.fd, h.id, 0, 5, 1000, NULL));
	memset(buf, 0xa5, sizeof(buf));
	n = fi_cq_read(cq, buf, 3);
	ASSERT_EQ(3, n);
	n = fi_cq_read(cq, buf + 3 * variant->entry_size, 8);
	ASSERT_EQ(2, n);
	for (i = 0; i < 5; i++) {
		struct fi_cq_tagged_entry *t =
			(void *)(buf + i * variant->entry_size);
		uint64_t ctx = 1000 + i;

		EXPECT_EQ(ctx, (uintptr_t)t->op_context);
		if (variant->entry_size >= sizeof(struct fi_cq_msg_entry)) {
			EXPECT_EQ(FI_RECV | FI_MSG, t->flags);
			EXPECT_EQ(1000, t->len);
		}
		if (variant->entry_size >= sizeof(struct fi_cq_data_entry)) {
			EXPECT_EQ(1000, (uintptr_t)t->buf);
			EXPECT_EQ(1000, t->data);
		}
		if (variant->entry_size >= sizeof(struct fi_cq_tagged_entry))
			EXPECT_EQ(1000, t->tag);
	}
	/* Nothing written past the entries read. */
	EXPECT_EQ(0xa5, buf[5 * variant->entry_size]);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, buf, 8));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

TEST_F(fmt, readfrom_gives_the_source_or_addr_notavail)
{
	struct kfab_test_cq_post cmd = { .count = 1 };
	struct kfab_kernel_handle h;
	uint8_t buf[4 * sizeof(struct fi_cq_tagged_entry)];
	fi_addr_t src[4] = { 0 };
	struct fid_cq *cq;

	RETURN_IF_SETUP_SKIPPED();
	cq = open_cq(_metadata, self->fi.domain, variant->format, 0,
		     FI_WAIT_NONE, &h);
	ASSERT_NE(NULL, cq);
	cmd.cq_id = h.id;
	cmd.src_addr = 7;
	test_cmd_test_cq_post(h.fd, &cmd);
	cmd.src_addr = KFAB_CQ_ADDR_NOTAVAIL;
	test_cmd_test_cq_post(h.fd, &cmd);
	ASSERT_EQ(2, fi_cq_readfrom(cq, buf, 4, src));
	EXPECT_EQ(7, src[0]);
	EXPECT_EQ(FI_ADDR_NOTAVAIL, src[1]);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_readfrom(cq, buf, 4, src));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

/* ---- sizes and overflow ---- */

/* Read everything; check that contexts run @first, @first + 1, ... */
static uint64_t read_in_order(struct __test_metadata *_metadata,
			      struct fid_cq *cq, uint64_t first, uint64_t n)
{
	struct fi_cq_entry e[64];
	uint64_t seen = 0;
	ssize_t got, i;

	for (;;) {
		got = fi_cq_read(cq, e, 64);
		if (got == -FI_EAGAIN)
			break;
		if (got < 0) {
			EXPECT_EQ(0, got);
			break;
		}
		for (i = 0; i < got; i++, seen++)
			if ((uintptr_t)e[i].op_context != first + seen) {
				EXPECT_EQ(first + seen, (uintptr_t)e[i].op_context);
				return seen;
			}
	}
	EXPECT_EQ(n, seen);
	return seen;
}

TEST_F(dom, every_size_rounds_up_and_keeps_order)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 100, 1024, 65536 };
	struct kfab_test_cq_post out;
	struct kfab_kernel_handle h;
	unsigned int i;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t ring = sizes[i] ? sizes[i] : KFAB_CQ_DEFAULT_ENTRIES;
		struct fid_cq *cq;
		uint32_t n = ring < 1024 ? 3 * ring + 5 : ring + 5;

		cq = open_cq(_metadata, self->fi.domain, FI_CQ_FORMAT_CONTEXT,
			     sizes[i], FI_WAIT_NONE, &h);
		ASSERT_NE(NULL, cq);
		ASSERT_EQ(0, post(h.fd, h.id, 0, n, 1, &out));
		EXPECT_EQ(n, out.out_posted);
		/* Power-of-two rings: everything past the ring overflowed. */
		EXPECT_LE(n - out.out_overflowed, ring * 2);
		EXPECT_LT(0, out.out_overflowed);
		read_in_order(_metadata, cq, 1, n);
		EXPECT_EQ(0, fi_close(&cq->fid));
	}
	EXPECT_EQ(-FI_EINVAL, fi_cq_open(self->fi.domain, &(struct fi_cq_attr){
		.size = KFAB_CQ_MAX_ENTRIES + 1 }, &(struct fid_cq *){ 0 }, NULL));
}

TEST_F(dom, ten_times_the_ring_while_nobody_reads_comes_out_once_in_order)
{
	struct kfab_test_cq_post out;
	struct kfab_kernel_handle h;
	struct fid_cq *cq;
	uint32_t i;

	RETURN_IF_SETUP_SKIPPED();
	cq = open_cq(_metadata, self->fi.domain, FI_CQ_FORMAT_CONTEXT, 64,
		     FI_WAIT_NONE, &h);
	ASSERT_NE(NULL, cq);
	/* In batches of odd sizes, as endpoints would. */
	for (i = 0; i < 640; i += 37) {
		uint32_t n = 640 - i < 37 ? 640 - i : 37;

		ASSERT_EQ(0, post(h.fd, h.id, 0, n, 100 + i, &out));
		ASSERT_EQ(n, out.out_posted);
	}
	EXPECT_EQ(640, read_in_order(_metadata, cq, 100, 640));
	/* The ring works on afterwards. */
	ASSERT_EQ(0, post(h.fd, h.id, 0, 3, 5000, NULL));
	EXPECT_EQ(3, read_in_order(_metadata, cq, 5000, 3));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

/* ---- errors ---- */

TEST_F(dom, error_completions_make_read_eavail_and_come_out_of_readerr)
{
	static const char data[] = "kfab error data";
	struct fi_cq_err_entry err;
	struct fi_cq_msg_entry e[4];
	struct kfab_kernel_handle h;
	char ubuf[64], sbuf[64];
	struct fid_cq *cq;

	RETURN_IF_SETUP_SKIPPED();
	cq = open_cq(_metadata, self->fi.domain, FI_CQ_FORMAT_MSG, 8,
		     FI_WAIT_NONE, &h);
	ASSERT_NE(NULL, cq);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_readerr(cq, &err, 0));
	ASSERT_EQ(0, post(h.fd, h.id, 0, 2, 1, NULL));
	ASSERT_EQ(0, post_err(h.fd, h.id, 0, 77, FI_ETRUNC, data, sizeof(data)));
	ASSERT_EQ(0, post_err(h.fd, h.id, 0, 78, FI_ECANCELED, data, 4));
	ASSERT_EQ(0, post_err(h.fd, h.id, 0, 79, FI_EIO, NULL, 0));

	/* An error waiting: read fails, sread too, until readerr took it. */
	EXPECT_EQ(-FI_EAVAIL, fi_cq_read(cq, e, 4));

	/* Caller's buffer (API >= 1.5 and err_data_size > 0). */
	memset(&err, 0, sizeof(err));
	memset(ubuf, 0, sizeof(ubuf));
	err.err_data = ubuf;
	err.err_data_size = sizeof(ubuf);
	ASSERT_EQ(1, fi_cq_readerr(cq, &err, 0));
	EXPECT_EQ(77, (uintptr_t)err.op_context);
	EXPECT_EQ(FI_RECV, err.flags);
	EXPECT_EQ(11, err.len);
	EXPECT_EQ(22, err.olen);
	EXPECT_EQ(33, err.tag);
	EXPECT_EQ(FI_ETRUNC, err.err);
	EXPECT_EQ(FI_ETRUNC + 1000, err.prov_errno);
	EXPECT_EQ((void *)ubuf, err.err_data);
	EXPECT_EQ(sizeof(data), err.err_data_size);
	EXPECT_STREQ(data, ubuf);
	EXPECT_EQ(-FI_EAVAIL, fi_cq_read(cq, e, 4));

	/* err_data_size 0: the provider's buffer. */
	memset(&err, 0, sizeof(err));
	ASSERT_EQ(1, fi_cq_readerr(cq, &err, 0));
	EXPECT_EQ(78, (uintptr_t)err.op_context);
	EXPECT_EQ(FI_ECANCELED, err.err);
	ASSERT_NE(NULL, err.err_data);
	EXPECT_EQ(4, err.err_data_size);
	EXPECT_EQ(0, memcmp(err.err_data, data, 4));

	/* A buffer shorter than the data: what fits. */
	memset(&err, 0, sizeof(err));
	err.err_data = sbuf;
	err.err_data_size = 2;
	ASSERT_EQ(1, fi_cq_readerr(cq, &err, 0));
	EXPECT_EQ(79, (uintptr_t)err.op_context);
	EXPECT_EQ(FI_EIO, err.err);
	EXPECT_EQ(0, err.err_data_size);

	EXPECT_EQ(-FI_EAGAIN, fi_cq_readerr(cq, &err, 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_cq_readerr(cq, &err, 1));
	EXPECT_EQ(-FI_EINVAL, fi_cq_readerr(cq, NULL, 0));
	/* The successes were there all along. */
	EXPECT_EQ(2, fi_cq_read(cq, e, 4));
	EXPECT_EQ(1, (uintptr_t)e[0].op_context);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, e, 4));

	/* strerror: the caller's buffer, or a string of ours. */
	EXPECT_EQ((const char *)sbuf, fi_cq_strerror(cq, FI_EIO, NULL, sbuf, sizeof(sbuf)));
	EXPECT_STREQ(fi_strerror(FI_EIO), sbuf);
	EXPECT_STREQ(fi_strerror(FI_EIO), fi_cq_strerror(cq, FI_EIO, NULL,
							 NULL, 0));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

/* ---- attributes and return codes ---- */

TEST_F(dom, open_checks_its_attributes)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fid_cq *cq = NULL;
	enum fi_wait_obj wobj;
	struct fid *fids[1];
	int fd;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_cq_open(self->fi.domain, NULL, &cq, NULL));
	attr.format = 99;
	EXPECT_EQ(-FI_EINVAL, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	attr.format = FI_CQ_FORMAT_CONTEXT;
	/* FI_WAIT_SET without a kfab wait set (kfab_wait.c has them) */
	attr.wait_obj = FI_WAIT_SET;
	EXPECT_EQ(-FI_EINVAL, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	/* FI_WAIT_MUTEX_COND: a wait set of its own (kfab_wait.c) */
	attr.wait_obj = FI_WAIT_MUTEX_COND;
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	EXPECT_EQ(0, fi_close(&cq->fid));
	cq = NULL;
	attr.wait_obj = 77;
	EXPECT_EQ(-FI_EINVAL, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	attr.wait_obj = FI_WAIT_NONE;
	attr.wait_cond = 9;
	EXPECT_EQ(-FI_EINVAL, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	attr.wait_cond = FI_CQ_COND_NONE;
	attr.flags = FI_SEND;
	EXPECT_EQ(-FI_EBADFLAGS, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	attr.flags = FI_AFFINITY;
	EXPECT_EQ(NULL, cq);
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &cq, NULL));

	/* No wait object: nothing to get, nothing to trywait on. */
	EXPECT_EQ(-FI_ENODATA, fi_control(&cq->fid, FI_GETWAIT, &fd));
	EXPECT_EQ(0, fi_control(&cq->fid, FI_GETWAITOBJ, &wobj));
	EXPECT_EQ(FI_WAIT_NONE, wobj);
	fids[0] = &cq->fid;
	EXPECT_EQ(-FI_EINVAL, fi_trywait(self->fi.fabric, fids, 1));
	EXPECT_EQ(-FI_ENOSYS, fi_control(&cq->fid, 12345, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_cq_read(cq, NULL, 1));
	EXPECT_EQ(0, fi_cq_read(cq, NULL, 0));

	/* The domain cannot close under its CQ. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->fi.domain->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

/* ---- blocking reads ---- */

FIXTURE(wait) {
	struct kfab_test_fi fi;
};

FIXTURE_VARIANT(wait) {
	enum fi_wait_obj wait_obj;
};

FIXTURE_VARIANT_ADD(wait, fd) { .wait_obj = FI_WAIT_FD };
FIXTURE_VARIANT_ADD(wait, unspec) { .wait_obj = FI_WAIT_UNSPEC };
FIXTURE_VARIANT_ADD(wait, yield) { .wait_obj = FI_WAIT_YIELD };
FIXTURE_VARIANT_ADD(wait, none) { .wait_obj = FI_WAIT_NONE };

FIXTURE_SETUP(wait)
{
	open_domain(_metadata, &self->fi);
}

FIXTURE_TEARDOWN(wait)
{
	test_fi_close(&self->fi);
}

struct poster {
	int fd;
	uint32_t cq_id;
	uint32_t cntr_id;
	unsigned int delay_ms;
	uint32_t count;
	struct fid_cq *signal_cq;	/* fi_cq_signal() instead of a post */
	struct fid_cntr *cntr;		/* fi_cntr_add() instead of a post */
	bool err;
};

static void *poster_main(void *p)
{
	struct poster *a = p;

	usleep(a->delay_ms * 1000);
	if (a->signal_cq)
		fi_cq_signal(a->signal_cq);
	else if (a->cntr && a->err)
		fi_cntr_adderr(a->cntr, 1);
	else if (a->cntr)
		fi_cntr_add(a->cntr, a->count);
	else
		post(a->fd, a->cq_id, a->cntr_id, a->count, 42, NULL);
	return NULL;
}

TEST_F(wait, sread_times_out_wakes_on_a_completion_and_on_signal)
{
	struct fi_cq_err_entry err = { 0 };
	struct kfab_kernel_handle h;
	struct fi_cq_entry e[8];
	struct poster a = { 0 };
	fi_addr_t src[8];
	struct fid_cq *cq;
	pthread_t th;
	uint64_t t0;

	RETURN_IF_SETUP_SKIPPED();
	cq = open_cq(_metadata, self->fi.domain, FI_CQ_FORMAT_CONTEXT, 32,
		     variant->wait_obj, &h);
	ASSERT_NE(NULL, cq);

	/* Nothing comes: -FI_EAGAIN after the timeout, not before. */
	t0 = kfab_now_ms();
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(cq, e, 8, NULL, 200));
	EXPECT_LE(190, kfab_now_ms() - t0);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(cq, e, 8, NULL, 0));

	/* A completion 200 ms later wakes an infinite wait. */
	a = (struct poster){ .fd = h.fd, .cq_id = h.id, .delay_ms = 200,
			     .count = 1 };
	ASSERT_EQ(0, pthread_create(&th, NULL, poster_main, &a));
	t0 = kfab_now_ms();
	EXPECT_EQ(1, fi_cq_sread(cq, e, 8, NULL, -1));
	EXPECT_EQ(42, (uintptr_t)e[0].op_context);
	pthread_join(th, NULL);

	/* Available at once: no waiting. */
	ASSERT_EQ(0, post(h.fd, h.id, 0, 3, 42, NULL));
	EXPECT_EQ(3, fi_cq_sread(cq, e, 8, NULL, 5000));

	/* fi_cq_signal() unblocks it with -FI_EAGAIN. */
	a = (struct poster){ .signal_cq = cq, .delay_ms = 200 };
	ASSERT_EQ(0, pthread_create(&th, NULL, poster_main, &a));
	t0 = kfab_now_ms();
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(cq, e, 8, NULL, 10000));
	EXPECT_GT(5000, kfab_now_ms() - t0);
	pthread_join(th, NULL);

	/* An error pending: -FI_EAVAIL. */
	ASSERT_EQ(0, post_err(h.fd, h.id, 0, 1, FI_EIO, NULL, 0));
	EXPECT_EQ(-FI_EAVAIL, fi_cq_sread(cq, e, 8, NULL, 1000));
	EXPECT_EQ(1, fi_cq_readerr(cq, &err, 0));

	/* sreadfrom gives the sources too. */
	ASSERT_EQ(0, post(h.fd, h.id, 0, 2, 42, NULL));
	EXPECT_EQ(2, fi_cq_sreadfrom(cq, e, 8, src, NULL, 1000));
	EXPECT_EQ(FI_ADDR_NOTAVAIL, src[1]);
	EXPECT_EQ(0, fi_close(&cq->fid));
}

TEST_F(wait, sread_with_a_threshold_waits_for_that_many)
{
	struct fi_cq_attr attr = {
		.size = 32, .format = FI_CQ_FORMAT_CONTEXT,
		.wait_obj = variant->wait_obj,
		.wait_cond = FI_CQ_COND_THRESHOLD,
	};
	struct kfab_kernel_handle h;
	struct fi_cq_entry e[8];
	struct poster a;
	struct fid_cq *cq;
	size_t thr = 4;
	pthread_t th;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	ASSERT_EQ(0, kfab_kernel_handle(&cq->fid, &h));
	ASSERT_EQ(0, post(h.fd, h.id, 0, 1, 42, NULL));
	a = (struct poster){ .fd = h.fd, .cq_id = h.id, .delay_ms = 200,
			     .count = 3 };
	ASSERT_EQ(0, pthread_create(&th, NULL, poster_main, &a));
	/* One is there, but four are asked for: the call waits for them. */
	EXPECT_EQ(4, fi_cq_sread(cq, e, 8, &thr, 5000));
	pthread_join(th, NULL);
	/* The threshold is not met before the timeout: what is there. */
	ASSERT_EQ(0, post(h.fd, h.id, 0, 1, 42, NULL));
	EXPECT_EQ(1, fi_cq_sread(cq, e, 8, &thr, 100));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

TEST_F(wait, wait_fd_works_with_poll_epoll_and_trywait)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct kfab_kernel_handle h;
	struct fi_cq_entry e[8];
	struct pollfd pfd;
	struct fid_cq *cq;
	struct fid *fids[1];
	enum fi_wait_obj wobj;
	int fd = -1, ep;

	RETURN_IF_SETUP_SKIPPED();
	cq = open_cq(_metadata, self->fi.domain, FI_CQ_FORMAT_CONTEXT, 32,
		     variant->wait_obj, &h);
	ASSERT_NE(NULL, cq);
	fids[0] = &cq->fid;
	EXPECT_EQ(0, fi_control(&cq->fid, FI_GETWAITOBJ, &wobj));
	EXPECT_EQ(variant->wait_obj, wobj);
	if (variant->wait_obj != FI_WAIT_FD &&
	    variant->wait_obj != FI_WAIT_UNSPEC) {
		EXPECT_EQ(-FI_ENODATA, fi_control(&cq->fid, FI_GETWAIT, &fd));
		EXPECT_EQ(-FI_EINVAL, fi_trywait(self->fi.fabric, fids, 1));
		EXPECT_EQ(0, fi_close(&cq->fid));
		return;
	}
	ASSERT_EQ(0, fi_control(&cq->fid, FI_GETWAIT, &fd));
	ASSERT_LE(0, fd);

	/* Empty: trywait arms it and says "block". */
	EXPECT_EQ(0, fi_trywait(self->fi.fabric, fids, 1));
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));

	/* A completion makes the fd readable, and trywait says "read first". */
	ASSERT_EQ(0, post(h.fd, h.id, 0, 1, 42, NULL));
	EXPECT_EQ(1, poll(&pfd, 1, 1000));
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_EQ(1, epoll_wait(ep, &out, 1, 1000));
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(self->fi.fabric, fids, 1));
	EXPECT_EQ(1, fi_cq_read(cq, e, 8));

	/* Drained: trywait resets the fd and arms again. */
	EXPECT_EQ(0, fi_trywait(self->fi.fabric, fids, 1));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	ASSERT_EQ(0, post_err(h.fd, h.id, 0, 1, FI_EIO, NULL, 0));
	EXPECT_EQ(1, epoll_wait(ep, &out, 1, 1000));
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(self->fi.fabric, fids, 1));
	close(ep);
	EXPECT_EQ(0, fi_close(&cq->fid));
}

/* ---- concurrency ---- */

struct producer {
	int fd;
	uint32_t cq_id;
	uint64_t base;
	volatile bool *stop;
	uint64_t posted;
	int rc;
};

static void *producer_main(void *p)
{
	struct producer *a = p;
	struct kfab_test_cq_post out;
	unsigned int seed = (unsigned int)a->base;

	while (!*a->stop) {
		uint32_t n = 1 + rand_r(&seed) % 50;
		int rc = post(a->fd, a->cq_id, 0, n, a->base + a->posted, &out);

		if (rc == -ENOSPC) {	/* the overflow list is full: back off */
			sched_yield();
			continue;
		}
		if (rc) {
			a->rc = rc;
			break;
		}
		/* Each batch carries its first context in len, data and tag. */
		a->posted += out.out_posted;
	}
	return NULL;
}

static void run_concurrent(struct __test_metadata *_metadata,
			   struct fid_domain *domain, unsigned int producers,
			   unsigned int seconds)
{
	struct producer prod[2];
	volatile bool stop = false;
	struct kfab_kernel_handle h;
	struct fi_cq_tagged_entry e[32];
	uint64_t next[2] = { 0, 0 }, sum = 0, total = 0, deadline;
	pthread_t th[2];
	struct fid_cq *cq;
	unsigned int i;
	ssize_t n, k;

	cq = open_cq(_metadata, domain, FI_CQ_FORMAT_TAGGED, 64,
		     FI_WAIT_NONE, &h);
	ASSERT_NE(NULL, cq);
	for (i = 0; i < producers; i++) {
		prod[i] = (struct producer){ .fd = h.fd, .cq_id = h.id,
					     .base = (uint64_t)(i + 1) << 40,
					     .stop = &stop };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, producer_main,
					    &prod[i]));
	}
	deadline = kfab_now_ms() + seconds * 1000;
	for (;;) {
		bool done = kfab_now_ms() >= deadline;

		if (done && !stop) {
			stop = true;
			for (i = 0; i < producers; i++)
				pthread_join(th[i], NULL);
		}
		n = fi_cq_read(cq, e, 1 + total % 32);
		if (n == -FI_EAGAIN) {
			if (stop)
				break;
			continue;
		}
		ASSERT_LT(0, n);
		for (k = 0; k < n; k++) {
			uint64_t ctx = (uintptr_t)e[k].op_context;
			unsigned int p = (unsigned int)(ctx >> 40) - 1;

			ASSERT_GT(producers, p) TH_LOG("context %#lx", (long)ctx);
			/* In order per producer: nothing lost or doubled. */
			ASSERT_EQ(prod[p].base + next[p], ctx);
			next[p]++;
			/* Not torn: the fields come from one post. */
			ASSERT_EQ(e[k].len, e[k].data);
			ASSERT_EQ(e[k].len, e[k].tag);
			ASSERT_EQ(e[k].len, (uintptr_t)e[k].buf);
			ASSERT_LE(e[k].len, ctx);
			ASSERT_GT(e[k].len + 50, ctx);
			ASSERT_EQ(FI_RECV | FI_MSG, e[k].flags);
			sum += ctx;
			total++;
		}
	}
	for (i = 0; i < producers; i++) {
		uint64_t want = 0, j;

		EXPECT_EQ(0, prod[i].rc);
		EXPECT_EQ(prod[i].posted, next[i]);
		for (j = 0; j < prod[i].posted; j++)
			want += prod[i].base + j;
		sum -= want;
	}
	EXPECT_EQ(0, sum);
	TH_LOG("%lu completions through a 64-entry ring", (unsigned long)total);
	EXPECT_LT(1000, total);
	EXPECT_EQ(0, fi_close(&cq->fid));
}

TEST_F_TIMEOUT(dom, producer_in_the_kernel_and_consumer_thread_lose_nothing, 60)
{
	RETURN_IF_SETUP_SKIPPED();
	run_concurrent(_metadata, self->fi.domain, 1, 3);
}

TEST_F_TIMEOUT(dom, two_producers_and_a_consumer_lose_nothing, 60)
{
	RETURN_IF_SETUP_SKIPPED();
	run_concurrent(_metadata, self->fi.domain, 2, 3);
}

TEST_F_TIMEOUT(dom, a_blocked_reader_is_woken_for_every_batch, 60)
{
	volatile bool stop = false;
	struct kfab_kernel_handle h;
	struct fi_cq_entry e[16];
	struct producer prod;
	uint64_t next = 0, deadline;
	struct fid_cq *cq;
	pthread_t th;
	ssize_t n, k;

	RETURN_IF_SETUP_SKIPPED();
	cq = open_cq(_metadata, self->fi.domain, FI_CQ_FORMAT_CONTEXT, 16,
		     FI_WAIT_FD, &h);
	ASSERT_NE(NULL, cq);
	prod = (struct producer){ .fd = h.fd, .cq_id = h.id,
				  .base = 1ull << 40, .stop = &stop };
	ASSERT_EQ(0, pthread_create(&th, NULL, producer_main, &prod));
	deadline = kfab_now_ms() + 2000;
	while (kfab_now_ms() < deadline) {
		n = fi_cq_sread(cq, e, 16, NULL, 5000);
		ASSERT_LT(0, n);
		for (k = 0; k < n; k++, next++)
			ASSERT_EQ(prod.base + next, (uintptr_t)e[k].op_context);
	}
	stop = true;
	pthread_join(th, NULL);
	while ((n = fi_cq_sread(cq, e, 16, NULL, 100)) > 0)
		for (k = 0; k < n; k++, next++)
			ASSERT_EQ(prod.base + next, (uintptr_t)e[k].op_context);
	EXPECT_EQ(-FI_EAGAIN, n);
	EXPECT_EQ(prod.posted, next);
	EXPECT_EQ(0, fi_close(&cq->fid));
}

/* ---- counters ---- */

TEST_F(dom, counter_read_add_set_and_errors)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct kfab_kernel_handle h;
	struct fid_cntr *cntr;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cntr_open(self->fi.domain, &attr, &cntr, NULL));
	ASSERT_EQ(0, kfab_kernel_handle(&cntr->fid, &h));
	EXPECT_EQ(0, fi_cntr_read(cntr));
	EXPECT_EQ(0, fi_cntr_readerr(cntr));
	EXPECT_EQ(0, fi_cntr_add(cntr, 5));
	EXPECT_EQ(5, fi_cntr_read(cntr));
	EXPECT_EQ(0, fi_cntr_add(cntr, 7));
	EXPECT_EQ(12, fi_cntr_read(cntr));
	EXPECT_EQ(0, fi_cntr_set(cntr, 2));
	EXPECT_EQ(2, fi_cntr_read(cntr));
	EXPECT_EQ(0, fi_cntr_adderr(cntr, 3));
	EXPECT_EQ(3, fi_cntr_readerr(cntr));
	EXPECT_EQ(2, fi_cntr_read(cntr));
	EXPECT_EQ(0, fi_cntr_seterr(cntr, 1));
	EXPECT_EQ(1, fi_cntr_readerr(cntr));
	/* The kernel bumps it as completions happen. */
	ASSERT_EQ(0, post(h.fd, 0, h.id, 10, 0, NULL));
	EXPECT_EQ(12, fi_cntr_read(cntr));
	ASSERT_EQ(0, post_err(h.fd, 0, h.id, 0, FI_EIO, NULL, 0));
	EXPECT_EQ(2, fi_cntr_readerr(cntr));
	/* Wrapping is the caller's business. */
	EXPECT_EQ(0, fi_cntr_set(cntr, UINT64_MAX));
	EXPECT_EQ(0, fi_cntr_add(cntr, 2));
	EXPECT_EQ(1, fi_cntr_read(cntr));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->fi.domain->fid));
	EXPECT_EQ(0, fi_close(&cntr->fid));

	attr.events = 5;
	EXPECT_EQ(-FI_ENOSYS, fi_cntr_open(self->fi.domain, &attr, &cntr,
					   NULL));
	attr.events = FI_CNTR_EVENTS_COMP;
	attr.flags = 1;
	EXPECT_EQ(-FI_EBADFLAGS, fi_cntr_open(self->fi.domain, &attr, &cntr,
					      NULL));
	attr.flags = 0;
	/* FI_WAIT_SET without a kfab wait set (kfab_wait.c has them) */
	attr.wait_obj = FI_WAIT_SET;
	EXPECT_EQ(-FI_EINVAL, fi_cntr_open(self->fi.domain, &attr, &cntr,
					   NULL));
	attr.wait_obj = 99;
	EXPECT_EQ(-FI_EINVAL, fi_cntr_open(self->fi.domain, &attr, &cntr,
					   NULL));
	/* No attributes: the defaults. */
	ASSERT_EQ(0, fi_cntr_open(self->fi.domain, NULL, &cntr, NULL));
	EXPECT_EQ(0, fi_close(&cntr->fid));
}

TEST_F(wait, counter_wait_times_out_wakes_and_sees_errors)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP, .wait_obj = variant->wait_obj,
	};
	struct fid_cntr *cntr;
	struct poster a;
	pthread_t th;
	uint64_t t0;
	int fd = -1;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cntr_open(self->fi.domain, &attr, &cntr, NULL));
	t0 = kfab_now_ms();
	EXPECT_EQ(-FI_ETIMEDOUT, fi_cntr_wait(cntr, 1, 200));
	EXPECT_LE(190, kfab_now_ms() - t0);
	EXPECT_EQ(0, fi_cntr_wait(cntr, 0, 0));

	a = (struct poster){ .cntr = cntr, .count = 3, .delay_ms = 200 };
	ASSERT_EQ(0, pthread_create(&th, NULL, poster_main, &a));
	EXPECT_EQ(0, fi_cntr_wait(cntr, 3, -1));
	EXPECT_EQ(3, fi_cntr_read(cntr));
	pthread_join(th, NULL);

	/* A change of the error value ends the wait. */
	a = (struct poster){ .cntr = cntr, .err = true, .delay_ms = 200 };
	ASSERT_EQ(0, pthread_create(&th, NULL, poster_main, &a));
	EXPECT_EQ(-FI_EAVAIL, fi_cntr_wait(cntr, 100, 10000));
	pthread_join(th, NULL);
	EXPECT_EQ(1, fi_cntr_readerr(cntr));

	if (variant->wait_obj == FI_WAIT_FD) {
		struct pollfd pfd;
		struct fid *fids[1] = { &cntr->fid };

		ASSERT_EQ(0, fi_control(&cntr->fid, FI_GETWAIT, &fd));
		EXPECT_EQ(0, fi_trywait(self->fi.fabric, fids, 1));
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		EXPECT_EQ(0, poll(&pfd, 1, 0));
		EXPECT_EQ(0, fi_cntr_add(cntr, 1));
		EXPECT_EQ(1, poll(&pfd, 1, 1000));
	} else {
		EXPECT_EQ(-FI_ENODATA, fi_control(&cntr->fid, FI_GETWAIT, &fd));
	}
	EXPECT_EQ(0, fi_close(&cntr->fid));
}

/* ---- the raw ring, scribbled over ---- */

struct raw_cq {
	int fd;
	uint32_t dom;
	struct kfab_test_cq cq;
};

static int raw_cq_open(struct raw_cq *r, uint32_t entries)
{
	memset(r, 0, sizeof(*r));
	if (_test_open_domain(&r->fd, &r->dom))
		return -1;
	return _test_cq_open_mapped(r->fd, r->dom, entries, 0, &r->cq) ? -1 : 0;
}

#define RING_U32(r, off)	KFAB_TEST_RING_U32(&(r)->cq, off)
#define CONS_U32(r, off)	KFAB_TEST_CONS_U32(&(r)->cq, off)

/* Read every entry there is with the raw protocol; returns how many. */
static uint32_t raw_consume(struct raw_cq *r, uint64_t *first_ctx)
{
	uint32_t head = CONS_U32(r, r->cq.layout.off_head), n = 0;
	uint32_t tail = __atomic_load_n((uint32_t *)(r->cq.ring +
						     r->cq.layout.off_tail),
					__ATOMIC_ACQUIRE);

	/* A head scribbled far away: skip to the tail (user space's loss). */
	if (tail - head > r->cq.layout.entries)
		head = tail;
	for (; head != tail; head++, n++) {
		const struct kfab_cq_entry *e =
			(const void *)kfab_test_cq_slot(&r->cq, head);

		if (!n && first_ctx)
			*first_ctx = e->op_context;
	}
	__atomic_store_n((uint32_t *)(r->cq.cons + r->cq.layout.off_head), head,
			 __ATOMIC_RELEASE);
	return n;
}

TEST(raw_ring_layout_mappings_and_protection)
{
	struct raw_cq r;
	uint32_t overflow;
	uint64_t ctx = 0;
	void *p;

	if (!kfab_test_module())
		SKIP(return, "needs the CONFIG_KFAB_TEST build of kfab.ko");
	ASSERT_EQ(0, raw_cq_open(&r, 5));
	EXPECT_EQ(8, r.cq.layout.entries);
	EXPECT_EQ(sizeof(struct kfab_cq_entry), r.cq.layout.entry_size);
	EXPECT_EQ(8, RING_U32(&r, offsetof(struct kfab_cq_ring, entries)));
	EXPECT_EQ(7, RING_U32(&r, offsetof(struct kfab_cq_ring, mask)));
	/* The ring can never be made writable, nor mapped privately. */
	EXPECT_EQ(-1, mprotect(r.cq.ring, r.cq.layout.ring.size, PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, r.cq.layout.ring.size, PROT_READ | PROT_WRITE,
		 MAP_SHARED,
		 r.fd, r.cq.layout.ring.offset);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, r.cq.layout.cons.size, PROT_READ, MAP_PRIVATE, r.fd,
		 r.cq.layout.cons.offset);
	EXPECT_EQ(MAP_FAILED, p);

	/* 20 into 8 slots: 12 overflow, said so in the ring. */
	ASSERT_EQ(0, post(r.fd, r.cq.id, 0, 20, 1, NULL));
	EXPECT_EQ(8, RING_U32(&r, r.cq.layout.off_tail));
	EXPECT_EQ(12, RING_U32(&r, r.cq.layout.off_overflow));
	EXPECT_EQ(KFAB_CQ_RING_OVERFLOW, RING_U32(&r, r.cq.layout.off_flags));
	EXPECT_EQ(8, raw_consume(&r, &ctx));
	EXPECT_EQ(1, ctx);
	test_cmd_cq_drain(r.fd, r.cq.id, &overflow);
	EXPECT_EQ(4, overflow);
	EXPECT_EQ(8, raw_consume(&r, &ctx));
	EXPECT_EQ(9, ctx);
	/* A post drains first, and keeps the order. */
	ASSERT_EQ(0, post(r.fd, r.cq.id, 0, 1, 21, NULL));
	EXPECT_EQ(0, RING_U32(&r, r.cq.layout.off_overflow));
	EXPECT_EQ(0, RING_U32(&r, r.cq.layout.off_flags));
	EXPECT_EQ(5, raw_consume(&r, &ctx));
	EXPECT_EQ(17, ctx);
	/* Errors: counted in the ring. */
	ASSERT_EQ(0, post_err(r.fd, r.cq.id, 0, 1, FI_EIO, NULL, 0));
	EXPECT_EQ(1, RING_U32(&r, r.cq.layout.off_err_count));
	close(r.fd);
}

TEST(raw_overflow_list_is_bounded)
{
	struct kfab_test_cq_post out;
	struct raw_cq r;

	if (!kfab_test_module())
		SKIP(return, "needs the CONFIG_KFAB_TEST build of kfab.ko");
	ASSERT_EQ(0, raw_cq_open(&r, 1));
	/* 1 slot, at most 1024 in the overflow list: then -ENOSPC. */
	ASSERT_EQ(0, post(r.fd, r.cq.id, 0, 2000, 0, &out));
	EXPECT_EQ(1025, out.out_posted);
	EXPECT_EQ(1024, out.out_overflowed);
	EXPECT_EQ(-ENOSPC, post(r.fd, r.cq.id, 0, 1, 0, NULL));
	close(r.fd);
}

static void scribble(uint8_t *p, size_t len, unsigned int *seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)rand_r(seed);
}

TEST_F_TIMEOUT(dom, scribbling_over_the_mapping_hurts_only_that_cq, 120)
{
	struct kfab_kernel_handle h;
	struct fid_cq *cq;
	int status, round;
	pid_t pid;

	RETURN_IF_SETUP_SKIPPED();
	/* An innocent CQ in this process, busy all along. */
	cq = open_cq(_metadata, self->fi.domain, FI_CQ_FORMAT_CONTEXT, 16,
		     FI_WAIT_FD, &h);
	ASSERT_NE(NULL, cq);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned int seed = 1;
		struct raw_cq r;
		int i;

		if (raw_cq_open(&r, 16))
			_exit(1);
		for (i = 0; i < 300; i++) {
			struct kfab_cq_readerr e;

			/* Every byte it can write: head, armed, the rest. */
			scribble(r.cq.cons, r.cq.layout.cons.size, &seed);
			if (i % 3 == 0)	/* and now and then wild values */
				CONS_U32(&r, r.cq.layout.off_head) =
					RING_U32(&r, r.cq.layout.off_tail) +
					(uint32_t)rand_r(&seed) % 64 - 32;
			post(r.fd, r.cq.id, 0, 1 + i % 40, i, NULL);
			post_err(r.fd, r.cq.id, 0, i, FI_EIO, NULL, 0);
			_test_cmd_cq_drain(r.fd, r.cq.id, NULL);
			_test_cmd_cq_readerr(r.fd, r.cq.id, NULL, 0, &e);
			raw_consume(&r, NULL);
		}
		/* A sane head again: the CQ works on, as far as it can. */
		CONS_U32(&r, r.cq.layout.off_head) =
			RING_U32(&r, r.cq.layout.off_tail);
		raw_consume(&r, NULL);
		i = post(r.fd, r.cq.id, 0, 1, 0, NULL);
		if (i && i != -ENOSPC)
			_exit(2);
		_exit(_test_cmd_destroy(r.fd, r.cq.id) ? 3 : 0);
	}

	for (round = 0; round < 200; round++) {
		ASSERT_EQ(0, post(h.fd, h.id, 0, 20, round * 100, NULL));
		EXPECT_EQ(20, read_in_order(_metadata, cq, round * 100, 20));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

TEST(debugfs_shows_each_cq_and_counter)
{
	uint32_t cntr;
	char line[512];
	bool cq_seen = false, cntr_seen = false;
	struct raw_cq r;
	FILE *f;

	if (!kfab_test_module())
		SKIP(return, "needs the CONFIG_KFAB_TEST build of kfab.ko");
	ASSERT_EQ(0, raw_cq_open(&r, 4));
	test_cmd_cntr_open(r.fd, r.dom, &cntr, NULL);
	ASSERT_EQ(0, post(r.fd, r.cq.id, cntr, 6, 0, NULL));
	f = fopen("/sys/kernel/debug/kfab/contexts", "r");
	if (!f)
		SKIP(close(r.fd); return, "debugfs not mounted");
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "\tcq ") &&
		    strstr(line, " entries 4 head 0 tail 4 overflow 2 "))
			cq_seen = true;
		if (strstr(line, "\tcntr ") && strstr(line, " value 6 err 0"))
			cntr_seen = true;
	}
	fclose(f);
	EXPECT_TRUE(cq_seen);
	EXPECT_TRUE(cntr_seen);
	close(r.fd);
}

TEST(raw_counter_mapping_wait_and_update)
{
	struct kfab_cntr_open co;
	struct kfab_cntr_wait w = { 0 };
	const uint8_t *map;
	uint64_t value;
	uint32_t dom;
	int fd;

	if (!kfab_test_module())
		SKIP(return, "needs the CONFIG_KFAB_TEST build of kfab.ko");
	test_open_domain(&fd, &dom);
	test_cmd_cntr_open(fd, dom, NULL, &co);
	map = test_mmap(fd, &co.out_region, PROT_READ);
	EXPECT_EQ(MAP_FAILED, _test_mmap(fd, &co.out_region,
					 PROT_READ | PROT_WRITE));
	test_cmd_cntr_update(fd, co.out_cntr_id, KFAB_CNTR_ADD, 9, &value,
			     NULL);
	EXPECT_EQ(9, value);
	EXPECT_EQ(9, *(const volatile uint64_t *)(map + co.out_off_value));
	EXPECT_EQ(2, *(const volatile uint32_t *)(map + co.out_off_seq));
	test_cmd_cntr_update(fd, co.out_cntr_id, KFAB_CNTR_SET_ERR, 4, NULL,
			     NULL);
	EXPECT_EQ(4, *(const volatile uint64_t *)(map + co.out_off_err));
	test_err_cntr_update(EINVAL, fd, co.out_cntr_id, KFAB_CNTR_OP_MAX, 4,
			     NULL, NULL);

	w.cntr_id = co.out_cntr_id;
	w.threshold = 9;
	w.err = 4;
	test_cmd_cntr_wait(fd, &w);
	EXPECT_EQ(9, w.out_value);
	w.threshold = 10;
	w.timeout_ms = 50;
	test_err_cntr_wait(ETIMEDOUT, fd, &w);
	w.err = 0;
	test_cmd_cntr_wait(fd, &w);
	EXPECT_EQ(4, w.out_err);
	close(fd);
}

TEST_HARNESS_MAIN
