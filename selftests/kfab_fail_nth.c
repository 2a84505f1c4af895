// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Walk every failure point of every command that allocates or answers, the
 * way iommufd's fail_nth selftest does: make the 1st, 2nd, ... pass fail
 * until the command runs through with the fault unfired, and check after
 * each failure that the command failed cleanly and left nothing behind.
 *
 * Two sources of faults:
 *  - kfab's own points (KFAB_IOC_TEST_FAULT, CONFIG_KFAB_TEST): object
 *    allocation and the copy of the answer to user space, on any kernel;
 *  - the kernel's failslab/fail_page_alloc with /proc/thread-self/fail-nth,
 *    which fails every slab and page allocation the syscall makes, kfab's
 *    and the core kernel's alike (debug kernel only).
 *
 * "Left nothing behind" is checked through id reuse: object ids are the
 * lowest free ones, so a leaked or half-published object would shift the
 * next id; and through the open-file count in sysfs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kfab.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

#define FAIL_NTH "/proc/thread-self/fail-nth"
#define MAX_WALK 1000

static bool has_test_feature(int fd)
{
	struct kfab_query q = { .size = sizeof(q) };

	return !kfab_ioctl(fd, KFAB_IOC_QUERY, &q) &&
	       (q.features & KFAB_FEATURE_TEST);
}

/* Arm @point to fail on the @nth pass; returns what was still to go. */
static int arm(int fd, unsigned int point, unsigned int nth)
{
	struct kfab_test_fault f = {
		.size = sizeof(f), .point = point, .nth = nth,
	};

	if (kfab_ioctl(fd, KFAB_IOC_TEST_FAULT, &f))
		return -1;
	return f.out_remaining;
}

/*
 * The operations walked.  Each runs against a file that holds exactly one
 * domain (id 1) and reports 0 or -errno; the expected state afterwards is
 * the same whether it failed or not, once "undo" has run.
 */
struct walk_op {
	const char *name;
	int (*run)(int fd);
	void (*undo)(int fd);	/* after a success: back to one domain */
};

static int op_query(int fd)
{
	struct kfab_query q = { .size = sizeof(q) };
	int rc = kfab_ioctl(fd, KFAB_IOC_QUERY, &q);

	return rc ? rc : (q.abi_version == KFAB_ABI_VERSION ? 0 : -EPROTO);
}

static int op_domain_alloc(int fd)
{
	struct kfab_domain_alloc cmd = { .size = sizeof(cmd) };
	int rc = kfab_ioctl(fd, KFAB_IOC_DOMAIN_ALLOC, &cmd);

	/* The lowest free id: anything else means a slot leaked. */
	return rc ? rc : (cmd.out_domain_id == 2 ? 0 : -EPROTO);
}

static void undo_domain_alloc(int fd)
{
	struct kfab_destroy d = { .size = sizeof(d), .id = 2 };

	kfab_ioctl(fd, KFAB_IOC_DESTROY, &d);
}

static int op_destroy(int fd)
{
	struct kfab_destroy d = { .size = sizeof(d), .id = 1 };

	return kfab_ioctl(fd, KFAB_IOC_DESTROY, &d);
}

static void undo_destroy(int fd)
{
	struct kfab_domain_alloc cmd = { .size = sizeof(cmd) };

	kfab_ioctl(fd, KFAB_IOC_DOMAIN_ALLOC, &cmd);
}

/*
 * A CQ's life under domain 1: open (id 2, and the first two mmap cookies:
 * a leaked region offer would move them), completions and an error posted
 * past the ring, drained, the error read, destroyed.  Whatever step fails,
 * the CQ goes before returning, and an error completion whose answer
 * failed must still be there afterwards.
 */
static int cq_destroy_2(int fd, int rc)
{
	struct kfab_destroy d = { .size = sizeof(d), .id = 2 };
	int rc2 = kfab_ioctl(fd, KFAB_IOC_DESTROY, &d);

	return rc ? rc : rc2;
}

static int op_cq_cycle(int fd)
{
	struct kfab_cq_open o = { .size = sizeof(o), .domain_id = 1,
				  .entries = 2 };
	struct kfab_test_cq_post p = { .size = sizeof(p), .cq_id = 2,
				       .count = 5, .context = 1 };
	struct kfab_cq_drain d = { .size = sizeof(d), .cq_id = 2 };
	struct kfab_cq_readerr r = { .size = sizeof(r), .cq_id = 2 };
	char data[8] = "fail", out[8];
	int rc;

	rc = kfab_ioctl(fd, KFAB_IOC_CQ_OPEN, &o);
	if (rc)
		return rc;
	if (o.out_cq_id != 2 || o.out_ring_offset != 1ull << 32 ||
	    o.out_cons_offset != 2ull << 32)
		return cq_destroy_2(fd, -EPROTO);
	rc = kfab_ioctl(fd, KFAB_IOC_TEST_CQ_POST, &p);
	if (rc)
		return cq_destroy_2(fd, rc);
	p.flags = KFAB_TEST_POST_ERROR;
	p.count = 1;
	p.err = 5;
	p.err_data = (uintptr_t)data;
	p.err_data_size = sizeof(data);
	rc = kfab_ioctl(fd, KFAB_IOC_TEST_CQ_POST, &p);
	if (rc)
		return cq_destroy_2(fd, rc);
	rc = kfab_ioctl(fd, KFAB_IOC_CQ_DRAIN, &d);
	if (rc)
		return cq_destroy_2(fd, rc);
	r.err_data = (uintptr_t)out;
	r.err_data_size = sizeof(out);
	rc = kfab_ioctl(fd, KFAB_IOC_CQ_READERR, &r);
	if (rc) {
		/* The fault was one-shot: the error must still be there. */
		struct kfab_cq_readerr again = r;

		again.size = sizeof(again);
		if (kfab_ioctl(fd, KFAB_IOC_CQ_READERR, &again) ||
		    again.out_entry.op_context != 1)
			rc = -EPROTO;
		return cq_destroy_2(fd, rc);
	}
	if (r.out_err != 5 || r.out_entry.op_context != 1)
		return cq_destroy_2(fd, -EPROTO);
	return cq_destroy_2(fd, 0);
}

/* The same for a counter: open (id 2, first cookie), set, wait, destroy. */
static int op_cntr_cycle(int fd)
{
	struct kfab_cntr_open o = { .size = sizeof(o), .domain_id = 1 };
	struct kfab_cntr_update u = { .size = sizeof(u), .cntr_id = 2,
				      .op = KFAB_CNTR_SET, .value = 3 };
	struct kfab_cntr_wait w = { .size = sizeof(w), .cntr_id = 2,
				    .threshold = 3 };
	int rc;

	rc = kfab_ioctl(fd, KFAB_IOC_CNTR_OPEN, &o);
	if (rc)
		return rc;
	if (o.out_cntr_id != 2 || o.out_mmap_offset != 1ull << 32)
		return cq_destroy_2(fd, -EPROTO);
	/* SET is idempotent: a lost answer is no lost update. */
	rc = kfab_ioctl(fd, KFAB_IOC_CNTR_UPDATE, &u);
	if (rc)
		return cq_destroy_2(fd, rc);
	rc = kfab_ioctl(fd, KFAB_IOC_CNTR_WAIT, &w);
	if (!rc && w.out_value != 3)
		rc = -EPROTO;
	return cq_destroy_2(fd, rc);
}

static const struct walk_op walk_ops[] = {
	{ "query", op_query, NULL },
	{ "domain_alloc", op_domain_alloc, undo_domain_alloc },
	{ "destroy", op_destroy, undo_destroy },
	{ "cq_cycle", op_cq_cycle, NULL },
	{ "cntr_cycle", op_cntr_cycle, NULL },
};

/* The file's state is one domain, id 1, and nothing else. */
static bool state_is_one_domain(int fd)
{
	struct kfab_domain_alloc cmd = { .size = sizeof(cmd) };
	struct kfab_destroy d = { .size = sizeof(d) };

	/* Ids are the lowest free: a leaked slot would make this 3 or more. */
	if (kfab_ioctl(fd, KFAB_IOC_DOMAIN_ALLOC, &cmd) || cmd.out_domain_id != 2)
		return false;
	d.id = 2;
	if (kfab_ioctl(fd, KFAB_IOC_DESTROY, &d))
		return false;
	/* Destroy and re-create id 1 to prove it is a live domain. */
	d.id = 1;
	if (kfab_ioctl(fd, KFAB_IOC_DESTROY, &d))
		return false;
	if (kfab_ioctl(fd, KFAB_IOC_DOMAIN_ALLOC, &cmd))
		return false;
	return cmd.out_domain_id == 1;
}

FIXTURE(walk) {
	int fd;
};

FIXTURE_VARIANT(walk) {
	unsigned int point;
	int expected;
};

FIXTURE_VARIANT_ADD(walk, alloc) {
	.point = KFAB_FAULT_ALLOC,
	.expected = -ENOMEM,
};

FIXTURE_VARIANT_ADD(walk, copy_out) {
	.point = KFAB_FAULT_COPY_OUT,
	.expected = -EFAULT,
};

FIXTURE_SETUP(walk)
{
	struct kfab_domain_alloc cmd = { .size = sizeof(cmd) };

	self->fd = kfab_open();
	ASSERT_LE(0, self->fd);
	if (!has_test_feature(self->fd))
		SKIP(return, "module built without CONFIG_KFAB_TEST");
	ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_DOMAIN_ALLOC, &cmd));
	ASSERT_EQ(1, cmd.out_domain_id);
}

FIXTURE_TEARDOWN(walk)
{
	close(self->fd);
}

/*
 * A source of faults: arm(fd, point, n) makes the nth pass fail (n > 0) or
 * disarms (n == 0); either way it returns the passes that were still to go,
 * so 0 after an operation means the fault fired inside it.
 */
typedef int (*arm_fn)(int fd, unsigned int point, unsigned int nth);

static void walk_all_ops(struct __test_metadata *_metadata, int fd,
			 arm_fn arm_fault, unsigned int point, int expected)
{
	unsigned int i, n, fired;

	for (i = 0; i < sizeof(walk_ops) / sizeof(walk_ops[0]); i++) {
		const struct walk_op *op = &walk_ops[i];

		fired = 0;
		for (n = 1; n < MAX_WALK; n++) {
			int rc, remaining;

			ASSERT_EQ(0, arm_fault(fd, point, n));
			rc = op->run(fd);
			remaining = arm_fault(fd, point, 0);
			if (remaining > 0) {
				/* Fewer than n passes: it ran through. */
				ASSERT_EQ(0, rc) TH_LOG("%s", op->name);
				if (op->undo)
					op->undo(fd);
				break;
			}
			fired++;
			EXPECT_TRUE(rc == 0 || rc == expected)
				TH_LOG("%s: pass %u: rc %d", op->name, n, rc);
			if (!rc && op->undo)
				op->undo(fd);
			ASSERT_TRUE(state_is_one_domain(fd))
				TH_LOG("%s: pass %u left a mess", op->name, n);
		}
		ASSERT_LT(n, MAX_WALK);
		TH_LOG("%s: %u failure points", op->name, fired);
	}
}

TEST_F(walk, kfab_fault_points_fail_cleanly)
{
	RETURN_IF_SETUP_SKIPPED();
	walk_all_ops(_metadata, self->fd, arm, variant->point,
		     variant->expected);
}

TEST_F(walk, faults_are_per_file)
{
	int other;

	RETURN_IF_SETUP_SKIPPED();
	other = kfab_open();
	ASSERT_LE(0, other);
	ASSERT_EQ(0, arm(self->fd, variant->point, 1));
	EXPECT_EQ(0, op_query(other));
	EXPECT_EQ(1, arm(self->fd, variant->point, 0));
	close(other);
}

TEST_F(walk, bad_point_is_einval)
{
	struct kfab_test_fault f = {
		.size = sizeof(f), .point = KFAB_FAULT_POINT_MAX, .nth = 1,
	};

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_TEST_FAULT, &f));
	f.point = UINT32_MAX;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_TEST_FAULT, &f));
}

/* failslab + fail_page_alloc through /proc/thread-self/fail-nth */

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

/*
 * /proc/thread-self/fail-nth, opened once: opening it allocates, which
 * would itself consume the count.
 */
static int fail_nth_fd = -1;

static int arm_fail_nth(int fd, unsigned int point, unsigned int nth)
{
	char buf[16] = "";

	if (nth) {
		snprintf(buf, sizeof(buf), "%u", nth);
		return pwrite(fail_nth_fd, buf, strlen(buf), 0) > 0 ? 0 : -1;
	}
	if (pread(fail_nth_fd, buf, sizeof(buf) - 1, 0) <= 0 ||
	    pwrite(fail_nth_fd, "0", 1, 0) != 1)
		return -1;
	return atoi(buf);
}

static bool setup_failslab(void)
{
	if (fail_nth_fd < 0)
		fail_nth_fd = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	if (fail_nth_fd < 0)
		return false;
	/* GFP_KERNEL allocations are exempt unless told otherwise; and no
	 * stack dumps: the test bed treats "Call Trace" as a kernel splat.
	 */
	return !write_file("/sys/kernel/debug/failslab/ignore-gfp-wait", "N") &&
	       !write_file("/sys/kernel/debug/failslab/verbose", "0") &&
	       !write_file("/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N") &&
	       !write_file("/sys/kernel/debug/fail_page_alloc/verbose", "0");
}

FIXTURE(failslab) {
	int fd;
};

FIXTURE_SETUP(failslab)
{
	struct kfab_domain_alloc cmd = { .size = sizeof(cmd) };

	if (!setup_failslab())
		SKIP(return, "no fail-nth: kernel without FAULT_INJECTION");
	self->fd = kfab_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_DOMAIN_ALLOC, &cmd));
	ASSERT_EQ(1, cmd.out_domain_id);
}

FIXTURE_TEARDOWN(failslab)
{
	if (self->fd > 0)
		close(self->fd);
}

TEST_F(failslab, every_allocating_ioctl_fails_cleanly)
{
	RETURN_IF_SETUP_SKIPPED();
	walk_all_ops(_metadata, self->fd, arm_fail_nth, 0, -ENOMEM);
}

TEST_F(failslab, open_fails_cleanly)
{
	long base = kfab_contexts();
	unsigned int n;

	RETURN_IF_SETUP_SKIPPED();
	for (n = 1; n < MAX_WALK; n++) {
		int fd, left;

		ASSERT_EQ(0, arm_fail_nth(-1, 0, n));
		fd = kfab_open();
		left = arm_fail_nth(-1, 0, 0);
		if (fd >= 0)
			close(fd);
		else
			EXPECT_EQ(ENOMEM, errno);
		EXPECT_EQ(base, kfab_contexts());
		if (left > 0) {
			ASSERT_LE(0, fd);
			break;
		}
	}
	ASSERT_LT(n, MAX_WALK);
}

TEST_HARNESS_MAIN
