// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ioctl ABI of /dev/kfab, rule by rule (uapi/linux/kfab.h):
 * size-prefixed structs, -EINVAL short, -E2BIG long with a non-zero tail,
 * -ENOTTY for unknown commands, -EFAULT for bad pointers, zero-filled
 * outputs, per-file objects; plus open/close churn and concurrency.
 *
 * Runs inside the test VM with kfab.ko loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kfab.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

FIXTURE(kfab) {
	int fd;
};

FIXTURE_SETUP(kfab)
{
	self->fd = kfab_open();
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", KFAB_DEV, strerror(errno));
}

FIXTURE_TEARDOWN(kfab)
{
	close(self->fd);
}

/* The commands of this ABI, production and test-only. */
static bool known_command(unsigned int nr, bool test_module)
{
	switch (nr) {
	case KFAB_CMD_QUERY:
	case KFAB_CMD_DESTROY:
	case KFAB_CMD_DOMAIN_ALLOC:
	case KFAB_CMD_AV_OPEN:
	case KFAB_CMD_AV_INSERT:
	case KFAB_CMD_AV_REMOVE:
	case KFAB_CMD_AV_UNLINK:
	case KFAB_CMD_CQ_OPEN:
	case KFAB_CMD_CQ_DRAIN:
	case KFAB_CMD_CQ_READERR:
	case KFAB_CMD_CQ_HELP:
	case KFAB_CMD_CNTR_OPEN:
	case KFAB_CMD_CNTR_UPDATE:
	case KFAB_CMD_CNTR_WAIT:
	case KFAB_CMD_EP_OPEN:
	case KFAB_CMD_EP_BIND:
	case KFAB_CMD_EP_ENABLE:
	case KFAB_CMD_DOORBELL:
	case KFAB_CMD_CANCEL:
	case KFAB_CMD_SQ_WATCH:
	case KFAB_CMD_SQ_POLL:
	case KFAB_CMD_SRX_OPEN:
	case KFAB_CMD_RX_BUFFERED:
	case KFAB_CMD_NET_LISTEN:
	case KFAB_CMD_NET_ALLOW:
		return true;
	case KFAB_CMD_TEST_FAULT:
	case KFAB_CMD_TEST_CQ_POST:
		return test_module;
	default:
		return false;
	}
}

/* QUERY */

TEST_F(kfab, query_returns_abi_version_and_limits)
{
	struct kfab_query q = { .size = sizeof(q) };

	ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_QUERY, &q));
	EXPECT_EQ(sizeof(q), q.size);
	EXPECT_EQ(KFAB_ABI_VERSION, q.abi_version);
	EXPECT_LT(0, q.max_objects);
	EXPECT_EQ(getpagesize(), q.max_ioctl_size);
	EXPECT_NE(0, q.module_version);
	EXPECT_EQ(0, q.__reserved);
}

TEST_F(kfab, query_overwrites_every_output)
{
	struct kfab_query q;

	memset(&q, 0xa5, sizeof(q));
	q.size = sizeof(q);
	q.flags = 0;
	ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_QUERY, &q));
	EXPECT_EQ(KFAB_ABI_VERSION, q.abi_version);
	EXPECT_EQ(0, q.__reserved);
	/* Only the features this header knows, and every module rings. */
	EXPECT_EQ(0, q.features & ~(KFAB_FEATURE_TEST | KFAB_FEATURE_RING |
				    KFAB_FEATURE_SQ_POLL));
	EXPECT_TRUE(q.features & KFAB_FEATURE_RING);
	EXPECT_TRUE(q.features & KFAB_FEATURE_SQ_POLL);
}

TEST_F(kfab, query_rejects_unknown_flags)
{
	struct kfab_query q = { .size = sizeof(q), .flags = 1 };

	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_QUERY, &q));
	q.flags = 1u << 31;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_QUERY, &q));
}

TEST_F(kfab, query_struct_shorter_than_first_version_is_einval)
{
	uint32_t buf[8];

	memset(buf, 0xcc, sizeof(buf));
	buf[0] = 12;
	buf[1] = 0;
	ASSERT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_QUERY, buf));
	buf[0] = sizeof(struct kfab_query);
	ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_QUERY, buf));
}

/*
 * Length rules for every command, as iommufd's selftests check them: too
 * short is -EINVAL, longer with a zero tail works, a non-zero byte in the
 * tail is -E2BIG, beyond a page is -E2BIG.  _last is the last member of the
 * first version of the struct.
 */
#define TEST_LENGTH(_struct, _ioctl, _last)				\
	do {								\
		size_t min_size = offsetof(struct _struct, _last) +	\
				  sizeof(((struct _struct *)0)->_last);	\
		struct {						\
			struct _struct cmd;				\
			uint8_t extra[64];				\
		} buf;							\
		memset(&buf, 0, sizeof(buf));				\
		buf.cmd.size = min_size - 1;				\
		EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, _ioctl, &buf));	\
		buf.cmd.size = 0;					\
		EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, _ioctl, &buf));	\
		buf.cmd.size = sizeof(buf);				\
		buf.extra[63] = 1;					\
		EXPECT_EQ(-E2BIG, kfab_ioctl(self->fd, _ioctl, &buf));	\
		buf.extra[63] = 0;					\
		buf.extra[0] = 0xff;					\
		EXPECT_EQ(-E2BIG, kfab_ioctl(self->fd, _ioctl, &buf));	\
		buf.extra[0] = 0;					\
		buf.cmd.size = getpagesize() + 1;			\
		EXPECT_EQ(-E2BIG, kfab_ioctl(self->fd, _ioctl, &buf));	\
		buf.cmd.size = UINT32_MAX;				\
		EXPECT_EQ(-E2BIG, kfab_ioctl(self->fd, _ioctl, &buf));	\
	} while (0)

TEST_F(kfab, every_command_enforces_struct_length)
{
	TEST_LENGTH(kfab_query, KFAB_IOC_QUERY, __reserved);
	TEST_LENGTH(kfab_destroy, KFAB_IOC_DESTROY, id);
	TEST_LENGTH(kfab_domain_alloc, KFAB_IOC_DOMAIN_ALLOC, __reserved);
	TEST_LENGTH(kfab_cq_open, KFAB_IOC_CQ_OPEN, out_ring);
	TEST_LENGTH(kfab_cq_drain, KFAB_IOC_CQ_DRAIN, out_overflow);
	TEST_LENGTH(kfab_cq_readerr, KFAB_IOC_CQ_READERR, __reserved);
	TEST_LENGTH(kfab_cq_help, KFAB_IOC_CQ_HELP, out_bytes);
	TEST_LENGTH(kfab_cntr_open, KFAB_IOC_CNTR_OPEN, out_region);
	TEST_LENGTH(kfab_cntr_update, KFAB_IOC_CNTR_UPDATE, out_err);
	TEST_LENGTH(kfab_cntr_wait, KFAB_IOC_CNTR_WAIT, out_err);
	TEST_LENGTH(kfab_doorbell, KFAB_IOC_DOORBELL, out_done);
	TEST_LENGTH(kfab_cancel, KFAB_IOC_CANCEL, context);
	TEST_LENGTH(kfab_av_open, KFAB_IOC_AV_OPEN, out_region);
	TEST_LENGTH(kfab_av_insert, KFAB_IOC_AV_INSERT, __reserved);
	TEST_LENGTH(kfab_av_remove, KFAB_IOC_AV_REMOVE, indices);
	TEST_LENGTH(kfab_av_unlink, KFAB_IOC_AV_UNLINK, name);
	TEST_LENGTH(kfab_ep_open, KFAB_IOC_EP_OPEN, out_sq);
	TEST_LENGTH(kfab_ep_bind, KFAB_IOC_EP_BIND, obj_id);
	TEST_LENGTH(kfab_ep_enable, KFAB_IOC_EP_ENABLE, __reserved);
	TEST_LENGTH(kfab_srx_open, KFAB_IOC_SRX_OPEN, out_sq);
	TEST_LENGTH(kfab_rx_buffered, KFAB_IOC_RX_BUFFERED, cookie);
	if (kfab_fd_test_module(self->fd)) {
		TEST_LENGTH(kfab_test_fault, KFAB_IOC_TEST_FAULT, out_fired);
		TEST_LENGTH(kfab_test_cq_post, KFAB_IOC_TEST_CQ_POST,
			    out_overflowed);
	}
}

TEST_F(kfab, longer_struct_with_zero_tail_is_accepted)
{
	struct {
		struct kfab_domain_alloc cmd;
		uint8_t extra[64];
	} buf;
	struct {
		struct kfab_query q;
		uint8_t extra[64];
	} qbuf;
	unsigned int i;

	memset(&buf, 0, sizeof(buf));
	buf.cmd.size = sizeof(buf);
	ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_DOMAIN_ALLOC, &buf));
	EXPECT_NE(0, buf.cmd.out_domain_id);
	test_cmd_destroy(self->fd, buf.cmd.out_domain_id);

	memset(&qbuf, 0, sizeof(qbuf));
	qbuf.q.size = sizeof(qbuf);
	ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_QUERY, &qbuf));
	EXPECT_EQ(KFAB_ABI_VERSION, qbuf.q.abi_version);
	/* What the kernel does not know stays zero. */
	for (i = 0; i < sizeof(qbuf.extra); i++)
		ASSERT_EQ(0, qbuf.extra[i]);
}

TEST_F(kfab, size_bits_of_the_command_number_are_not_checked)
{
	struct kfab_query q = { .size = sizeof(q) };
	unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, KFAB_TYPE,
				 KFAB_CMD_QUERY, 4);

	EXPECT_EQ(0, kfab_ioctl(self->fd, cmd, &q));
	EXPECT_EQ(KFAB_ABI_VERSION, q.abi_version);
}

/* Unknown commands */

TEST_F(kfab, unknown_commands_get_enotty)
{
	struct kfab_query q = { .size = sizeof(q) };
	unsigned int nr;
	bool test_module;

	test_cmd_query(self->fd, &q);
	test_module = q.features & KFAB_FEATURE_TEST;
	for (nr = KFAB_CMD_DOMAIN_ALLOC + 1; nr < 256; nr++) {
		/* Test-only commands exist only in a CONFIG_KFAB_TEST module. */
		if (known_command(nr, test_module))
			continue;
		q.size = sizeof(q);
		EXPECT_EQ(-ENOTTY, kfab_ioctl(self->fd,
			_IOWR(KFAB_TYPE, nr, struct kfab_query), &q));
	}
	q.size = sizeof(q);
	/* Right number, wrong type byte or direction */
	EXPECT_EQ(-ENOTTY, kfab_ioctl(self->fd,
		_IOWR(KFAB_TYPE + 1, KFAB_CMD_QUERY, struct kfab_query), &q));
	EXPECT_EQ(-ENOTTY, kfab_ioctl(self->fd, _IO(KFAB_TYPE, KFAB_CMD_QUERY), &q));
	EXPECT_EQ(-ENOTTY, kfab_ioctl(self->fd,
		_IOR(KFAB_TYPE, KFAB_CMD_QUERY, struct kfab_query), &q));
	EXPECT_EQ(-ENOTTY, kfab_ioctl(self->fd,
		_IOW(KFAB_TYPE, KFAB_CMD_QUERY, struct kfab_query), &q));
	/* Generic file ioctls the device does not implement */
	EXPECT_EQ(-ENOTTY, kfab_ioctl(self->fd, FIONREAD, &nr));
}

/* Bad pointers */

TEST_F(kfab, bad_pointers_get_efault)
{
	static const unsigned long cmds[] = {
		KFAB_IOC_QUERY, KFAB_IOC_DESTROY, KFAB_IOC_DOMAIN_ALLOC,
		KFAB_IOC_CQ_OPEN, KFAB_IOC_CQ_DRAIN, KFAB_IOC_CQ_READERR,
		KFAB_IOC_CQ_HELP,
		KFAB_IOC_CNTR_OPEN, KFAB_IOC_CNTR_UPDATE, KFAB_IOC_CNTR_WAIT,
	};
	long page = getpagesize();
	uint8_t *map;
	unsigned int i;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, munmap(map + page, page));

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		uint32_t *tail = (uint32_t *)(map + page - 4);

		EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, cmds[i], NULL));
		EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, cmds[i], (void *)1));
		EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, cmds[i], map + page));
		/* A kernel address is never dereferenced for user space. */
		EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, cmds[i],
					      (void *)0xffff888000000000ul));
		EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, cmds[i],
					      (void *)0xffffffff81000000ul));
		/* The size is readable, the rest of the struct is not. */
		*tail = _IOC_SIZE(cmds[i]) > 64 ? _IOC_SIZE(cmds[i]) : 64;
		EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, cmds[i], tail));
	}

	/* A read-only struct: the kernel cannot answer into it. */
	{
		struct kfab_query *q = (struct kfab_query *)map;

		memset(q, 0, sizeof(*q));
		q->size = sizeof(*q);
		ASSERT_EQ(0, mprotect(map, page, PROT_READ));
		EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, KFAB_IOC_QUERY, q));
	}
	munmap(map, page);
}

/* Objects: DOMAIN_ALLOC and DESTROY */

TEST_F(kfab, domain_alloc_and_destroy)
{
	uint32_t a, b;

	test_cmd_domain_alloc(self->fd, &a);
	test_cmd_domain_alloc(self->fd, &b);
	EXPECT_NE(0, a);
	EXPECT_NE(0, b);
	EXPECT_NE(a, b);
	test_cmd_destroy(self->fd, a);
	test_err_destroy(ENOENT, self->fd, a);
	test_cmd_destroy(self->fd, b);
}

TEST_F(kfab, domain_alloc_rejects_flags_and_reserved)
{
	struct kfab_domain_alloc cmd = { .size = sizeof(cmd), .flags = 1 };

	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_DOMAIN_ALLOC, &cmd));
	cmd.flags = 0;
	cmd.__reserved = 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_DOMAIN_ALLOC, &cmd));
}

TEST_F(kfab, destroy_of_unknown_id_is_enoent)
{
	test_err_destroy(ENOENT, self->fd, 0);
	test_err_destroy(ENOENT, self->fd, 1);
	test_err_destroy(ENOENT, self->fd, 12345);
	test_err_destroy(ENOENT, self->fd, UINT32_MAX);
}

TEST_F(kfab, domain_ids_reuse_after_destroy)
{
	uint32_t a, b;

	test_cmd_domain_alloc(self->fd, &a);
	test_cmd_destroy(self->fd, a);
	test_cmd_domain_alloc(self->fd, &b);
	EXPECT_EQ(a, b);
	test_cmd_destroy(self->fd, b);
}

TEST_F(kfab, objects_belong_to_their_file)
{
	int other = kfab_open();
	uint32_t id, oid;

	ASSERT_LE(0, other);
	test_cmd_domain_alloc(self->fd, &id);
	test_cmd_domain_alloc(other, &oid);
	/* Same numbers, different tables: neither reaches the other. */
	EXPECT_EQ(id, oid);
	test_cmd_destroy(other, oid);
	test_err_destroy(ENOENT, other, oid);
	test_cmd_destroy(self->fd, id);
	close(other);
}

TEST_F(kfab, object_limit_gives_enospc)
{
	struct kfab_query q = { .size = sizeof(q) };
	uint32_t i, id;

	ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_QUERY, &q));
	if (q.max_objects > 100000)
		SKIP(return, "max_objects %u too large to fill", q.max_objects);
	for (i = 0; i < q.max_objects; i++)
		test_cmd_domain_alloc(self->fd, &id);
	test_err_domain_alloc(ENOSPC, self->fd, &id);
	test_cmd_destroy(self->fd, q.max_objects / 2);
	test_cmd_domain_alloc(self->fd, &id);
	EXPECT_EQ(q.max_objects / 2, id);
	/* The rest go when the file closes (teardown). */
}

/* Completion queues and counters */

TEST_F(kfab, cq_open_checks_flags_reserved_ids_sizes_and_eventfd)
{
	struct kfab_cq_open cmd = { .size = sizeof(cmd) };
	uint32_t dom, cq;
	int efd;

	test_cmd_domain_alloc(self->fd, &dom);
	cmd.domain_id = dom;
	cmd.flags = 4;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));
	cmd.flags = 1u << 31;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));
	cmd.flags = 0;
	cmd.eventfd = 3;	/* without KFAB_CQ_OPEN_EVENTFD */
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));
	cmd.eventfd = 0;
	cmd.entries = KFAB_CQ_MAX_ENTRIES + 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));
	cmd.entries = UINT32_MAX;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));
	cmd.entries = 0;
	cmd.domain_id = 0;
	EXPECT_EQ(-ENOENT, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));
	cmd.domain_id = 12345;
	EXPECT_EQ(-ENOENT, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));
	/* Not an eventfd, not a file. */
	cmd.domain_id = dom;
	cmd.flags = KFAB_CQ_OPEN_EVENTFD;
	cmd.eventfd = self->fd;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));
	cmd.eventfd = 999;
	EXPECT_EQ(-EBADF, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));
	cmd.eventfd = -1;
	EXPECT_EQ(-EBADF, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));

	/* Every output written, whatever came in. */
	efd = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	memset(&cmd, 0xa5, sizeof(cmd));
	cmd.size = sizeof(cmd);
	cmd.flags = KFAB_CQ_OPEN_EVENTFD;
	cmd.domain_id = dom;
	cmd.entries = 100;
	cmd.eventfd = efd;
	ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_CQ_OPEN, &cmd));
	EXPECT_EQ(128, cmd.out_ring.entries);
	EXPECT_EQ(sizeof(struct kfab_cq_entry), cmd.out_ring.entry_size);
	EXPECT_EQ(0, cmd.out_ring.ring.offset % getpagesize());
	EXPECT_EQ(0, cmd.out_ring.ring.size % getpagesize());
	EXPECT_LE(cmd.out_ring.off_entries + 128 * sizeof(struct kfab_cq_entry),
		  cmd.out_ring.ring.size);
	EXPECT_NE(cmd.out_ring.ring.offset, cmd.out_ring.cons.offset);
	EXPECT_EQ(0, cmd.out_ring.__reserved);
	close(efd);	/* the CQ holds its own reference */

	/* A CQ is not a domain; a domain with a CQ cannot go. */
	test_cmd_cq_open(self->fd, dom, 0, 0, &cq, NULL);
	test_err_cq_open(ENOENT, self->fd, cq, 0, 0, &cq, NULL);
	test_err_destroy(EBUSY, self->fd, dom);
	test_cmd_destroy(self->fd, cq);
	test_cmd_destroy(self->fd, cmd.out_cq_id);
	test_cmd_destroy(self->fd, dom);
}

TEST_F(kfab, cq_drain_and_readerr_check_ids_and_flags)
{
	struct kfab_cq_drain d = { .size = sizeof(d) };
	struct kfab_cq_readerr r = { .size = sizeof(r) };
	uint32_t dom, cq;

	test_cmd_domain_alloc(self->fd, &dom);
	test_cmd_cq_open(self->fd, dom, 4, 0, &cq, NULL);
	d.cq_id = dom;
	EXPECT_EQ(-ENOENT, kfab_ioctl(self->fd, KFAB_IOC_CQ_DRAIN, &d));
	d.cq_id = 0;
	EXPECT_EQ(-ENOENT, kfab_ioctl(self->fd, KFAB_IOC_CQ_DRAIN, &d));
	d.cq_id = cq;
	d.flags = 1;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_CQ_DRAIN, &d));
	d.flags = 0;
	d.out_overflow = 77;
	EXPECT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_CQ_DRAIN, &d));
	EXPECT_EQ(0, d.out_overflow);

	r.cq_id = UINT32_MAX;
	EXPECT_EQ(-ENOENT, kfab_ioctl(self->fd, KFAB_IOC_CQ_READERR, &r));
	r.cq_id = cq;
	r.flags = 4;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_CQ_READERR, &r));
	r.flags = 0;
	r.__reserved = 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_CQ_READERR, &r));
	r.__reserved = 0;
	EXPECT_EQ(-EAGAIN, kfab_ioctl(self->fd, KFAB_IOC_CQ_READERR, &r));
}

TEST_F(kfab, readerr_that_cannot_answer_keeps_the_error_queued)
{
	struct kfab_test_cq_post p = { 0 };
	struct kfab_cq_readerr r = { .size = sizeof(r) };
	char data[8] = "abcdefg", out[8];
	uint32_t dom, cq;

	if (!kfab_fd_test_module(self->fd))
		SKIP(return, "needs the CONFIG_KFAB_TEST build");
	test_cmd_domain_alloc(self->fd, &dom);
	test_cmd_cq_open(self->fd, dom, 4, 0, &cq, NULL);
	p.cq_id = cq;
	p.flags = KFAB_TEST_POST_ERROR;
	p.count = 1;
	p.err = EIO;
	p.context = 5;
	p.err_data = (uintptr_t)data;
	p.err_data_size = sizeof(data);
	test_cmd_test_cq_post(self->fd, &p);
	r.cq_id = cq;
	r.err_data = 1;		/* a bad pointer for the data */
	r.err_data_size = sizeof(out);
	EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, KFAB_IOC_CQ_READERR, &r));
	EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, KFAB_IOC_CQ_READERR, NULL));
	test_cmd_cq_readerr(self->fd, cq, out, sizeof(out), &r);
	EXPECT_EQ(5, r.out_entry.op_context);
	EXPECT_EQ(EIO, r.out_err);
	EXPECT_EQ(sizeof(data), r.err_data_size);
	EXPECT_EQ(sizeof(data), r.out_err_data_len);
	EXPECT_STREQ(data, out);
	EXPECT_EQ(-EAGAIN, kfab_ioctl(self->fd, KFAB_IOC_CQ_READERR, &r));
}

TEST_F(kfab, test_cq_post_checks_its_arguments)
{
	struct kfab_test_cq_post p = { .size = sizeof(p) };
	uint32_t dom, cq;

	if (!kfab_fd_test_module(self->fd))
		SKIP(return, "needs the CONFIG_KFAB_TEST build");
	test_cmd_domain_alloc(self->fd, &dom);
	test_cmd_cq_open(self->fd, dom, 4, 0, &cq, NULL);
	p.cq_id = cq;
	p.flags = 2;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_TEST_CQ_POST, &p));
	p.flags = 0;
	p.count = KFAB_TEST_POST_MAX + 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_TEST_CQ_POST, &p));
	p.count = 1;
	p.err_data_size = KFAB_CQ_ERR_DATA_MAX + 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_TEST_CQ_POST, &p));
	p.err_data_size = 4;
	p.err_data = 1;
	EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, KFAB_IOC_TEST_CQ_POST, &p));
	p.err_data_size = 0;
	p.cq_id = dom;
	EXPECT_EQ(-ENOENT, kfab_ioctl(self->fd, KFAB_IOC_TEST_CQ_POST, &p));
	p.cq_id = 0;
	p.cntr_id = cq;
	EXPECT_EQ(-ENOENT, kfab_ioctl(self->fd, KFAB_IOC_TEST_CQ_POST, &p));
	p.cntr_id = 0;
	p.cq_id = cq;
	EXPECT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_TEST_CQ_POST, &p));
	EXPECT_EQ(1, p.out_posted);
	EXPECT_EQ(0, p.out_overflowed);
}

TEST_F(kfab, counter_commands_check_flags_ops_and_ids)
{
	struct kfab_cntr_open o = { .size = sizeof(o) };
	struct kfab_cntr_update u = { .size = sizeof(u) };
	struct kfab_cntr_wait w = { .size = sizeof(w) };
	uint32_t dom, cq;

	test_cmd_domain_alloc(self->fd, &dom);
	test_cmd_cq_open(self->fd, dom, 4, 0, &cq, NULL);
	o.domain_id = dom;
	o.flags = 2;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_CNTR_OPEN, &o));
	o.flags = 0;
	o.eventfd = 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_CNTR_OPEN, &o));
	o.eventfd = 0;
	o.domain_id = cq;
	EXPECT_EQ(-ENOENT, kfab_ioctl(self->fd, KFAB_IOC_CNTR_OPEN, &o));
	o.domain_id = dom;
	o.flags = KFAB_CNTR_OPEN_EVENTFD;
	o.eventfd = 998;
	EXPECT_EQ(-EBADF, kfab_ioctl(self->fd, KFAB_IOC_CNTR_OPEN, &o));
	o.flags = 0;
	o.eventfd = 0;
	ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_CNTR_OPEN, &o));

	u.cntr_id = cq;
	EXPECT_EQ(-ENOENT, kfab_ioctl(self->fd, KFAB_IOC_CNTR_UPDATE, &u));
	u.cntr_id = o.out_cntr_id;
	u.flags = 1;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_CNTR_UPDATE, &u));
	u.flags = 0;
	u.op = KFAB_CNTR_OP_MAX;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_CNTR_UPDATE, &u));
	u.op = UINT32_MAX;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_CNTR_UPDATE, &u));

	w.cntr_id = 0;
	EXPECT_EQ(-ENOENT, kfab_ioctl(self->fd, KFAB_IOC_CNTR_WAIT, &w));
	w.cntr_id = o.out_cntr_id;
	w.flags = 1;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_CNTR_WAIT, &w));
	w.flags = 0;
	w.threshold = 1;
	EXPECT_EQ(-ETIMEDOUT, kfab_ioctl(self->fd, KFAB_IOC_CNTR_WAIT, &w));
	test_err_destroy(EBUSY, self->fd, dom);
}

TEST_F(kfab, cq_regions_map_only_as_documented)
{
	struct kfab_cq_open cmd = { .size = sizeof(cmd) };
	long page = getpagesize();
	uint32_t dom;
	void *p;

	test_cmd_domain_alloc(self->fd, &dom);
	test_cmd_cq_open(self->fd, dom, 64, 0, &cmd.out_cq_id, &cmd.out_ring);
	/* Longer than the region, writable ring, private: refused. */
	p = mmap(NULL, cmd.out_ring.ring.size + page, PROT_READ, MAP_SHARED,
		 self->fd, cmd.out_ring.ring.offset);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, cmd.out_ring.ring.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, cmd.out_ring.ring.offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, cmd.out_ring.cons.size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE, self->fd, cmd.out_ring.cons.offset);
	EXPECT_EQ(MAP_FAILED, p);
	/* Mappings outlive the CQ; the offsets do not. */
	p = mmap(NULL, cmd.out_ring.cons.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, cmd.out_ring.cons.offset);
	ASSERT_NE(MAP_FAILED, p);
	test_cmd_destroy(self->fd, cmd.out_cq_id);
	memset(p, 0xff, cmd.out_ring.cons.size);
	EXPECT_EQ(0, munmap(p, cmd.out_ring.cons.size));
	p = mmap(NULL, cmd.out_ring.ring.size, PROT_READ, MAP_SHARED, self->fd,
		 cmd.out_ring.ring.offset);
	EXPECT_EQ(MAP_FAILED, p);
}

/* Contexts: open/close, sysfs and debugfs */

TEST(sysfs_reports_abi_version)
{
	EXPECT_EQ(KFAB_ABI_VERSION, read_sysfs_long(KFAB_SYSFS "/abi_version"));
}

TEST(sysfs_counts_open_contexts)
{
	long base = read_sysfs_long(KFAB_SYSFS "/contexts");
	int fds[8];
	int i;

	ASSERT_LE(0, base);
	for (i = 0; i < 8; i++) {
		fds[i] = kfab_open();
		ASSERT_LE(0, fds[i]);
	}
	EXPECT_EQ(base + 8, read_sysfs_long(KFAB_SYSFS "/contexts"));
	for (i = 0; i < 8; i++)
		close(fds[i]);
	EXPECT_EQ(base, read_sysfs_long(KFAB_SYSFS "/contexts"));
}

TEST(debugfs_lists_contexts_and_objects)
{
	char line[256], want[64];
	int fd = kfab_open();
	bool seen_ctx = false, seen_domain = false;
	uint32_t id;
	FILE *f;

	ASSERT_LE(0, fd);
	test_cmd_domain_alloc(fd, &id);
	f = fopen("/sys/kernel/debug/kfab/contexts", "r");
	if (!f)
		SKIP(close(fd); return, "debugfs not mounted");
	snprintf(want, sizeof(want), " pid %d ", getpid());
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, want))
			seen_ctx = true;
		else if (seen_ctx && strstr(line, "\tdomain "))
			seen_domain = true;
	}
	fclose(f);
	EXPECT_TRUE(seen_ctx);
	EXPECT_TRUE(seen_domain);
	close(fd);
}

TEST(open_close_1000_times)
{
	long base = read_sysfs_long(KFAB_SYSFS "/contexts");
	uint32_t id;
	int i, fd;

	for (i = 0; i < 1000; i++) {
		fd = kfab_open();
		ASSERT_LE(0, fd);
		/* Leave objects behind on purpose: close must free them. */
		test_cmd_domain_alloc(fd, &id);
		test_cmd_domain_alloc(fd, &id);
		ASSERT_EQ(0, close(fd));
	}
	EXPECT_EQ(base, read_sysfs_long(KFAB_SYSFS "/contexts"));
}

static int churn(int fd, int rounds)
{
	struct kfab_query q = { .size = sizeof(q) };
	uint32_t id;
	int i;

	for (i = 0; i < rounds; i++) {
		if (kfab_ioctl(fd, KFAB_IOC_QUERY, &q) ||
		    q.abi_version != KFAB_ABI_VERSION)
			return -1;
		if (_test_cmd_domain_alloc(fd, &id) || _test_cmd_destroy(fd,
									 id))
			return -1;
	}
	return 0;
}

TEST(two_processes_at_once)
{
	int status, fd, i;
	pid_t child[2];

	for (i = 0; i < 2; i++) {
		child[i] = fork();
		ASSERT_LE(0, child[i]);
		if (!child[i]) {
			fd = kfab_open();
			_exit(fd < 0 || churn(fd, 2000) ? 1 : 0);
		}
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(child[i], waitpid(child[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
}

struct thread_arg {
	int fd;
	int rc;
};

static void *churn_thread(void *p)
{
	struct thread_arg *arg = p;

	arg->rc = churn(arg->fd, 2000);
	return NULL;
}

TEST(threads_share_one_file)
{
	struct thread_arg args[4];
	pthread_t th[4];
	int fd = kfab_open();
	int i;

	ASSERT_LE(0, fd);
	for (i = 0; i < 4; i++) {
		args[i].fd = fd;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, churn_thread, &args[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, args[i].rc);
	}
	close(fd);
}

/*
 * Destroying ids another thread races to create or destroy; the racing
 * thread runs until the main one ends.  On the debug kernel under TCG, on
 * a busy machine, this took over the harness's default 30 s: it has a
 * timeout of its own (a fixture, for TEST_F_TIMEOUT).
 */
#define RACE_ROUNDS 5000

struct race_arg {
	int fd;
	volatile bool stop;
};

static void *destroy_all_thread(void *p)
{
	struct race_arg *arg = p;
	uint32_t id;

	while (!arg->stop)
		for (id = 1; id < 8; id++)
			_test_cmd_destroy(arg->fd, id);
	return NULL;
}

FIXTURE(race) {};
FIXTURE_SETUP(race) {}
FIXTURE_TEARDOWN(race) {}

TEST_F_TIMEOUT(race, destroy_races_with_alloc, 300)
{
	struct race_arg arg = { .stop = false };
	pthread_t th;
	uint32_t id;
	int i;

	arg.fd = kfab_open();
	ASSERT_LE(0, arg.fd);
	ASSERT_EQ(0, pthread_create(&th, NULL, destroy_all_thread, &arg));
	for (i = 0; i < RACE_ROUNDS; i++) {
		int rc = _test_cmd_domain_alloc(arg.fd, &id);

		ASSERT_EQ(0, rc);
		rc = _test_cmd_destroy(arg.fd, id);
		ASSERT_TRUE(rc == 0 || rc == -ENOENT);
	}
	arg.stop = true;
	pthread_join(th, NULL);
	close(arg.fd);
}

TEST(fork_shares_the_context)
{
	int fd = kfab_open();
	int status;
	uint32_t id;
	pid_t pid;

	ASSERT_LE(0, fd);
	test_cmd_domain_alloc(fd, &id);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(_test_cmd_destroy(fd, id) ? 1 : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	test_err_destroy(ENOENT, fd, id);
	close(fd);
}

TEST(killed_process_releases_its_context)
{
	long base = read_sysfs_long(KFAB_SYSFS "/contexts");
	int status, pipefd[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		uint32_t id;
		int i, fd = kfab_open();

		for (i = 0; fd >= 0 && i < 100; i++)
			_test_cmd_domain_alloc(fd, &id);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	EXPECT_EQ(base + 1, read_sysfs_long(KFAB_SYSFS "/contexts"));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(base, read_sysfs_long(KFAB_SYSFS "/contexts"));
	close(pipefd[0]);
	close(pipefd[1]);
}

TEST_HARNESS_MAIN
