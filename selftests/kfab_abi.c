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
	EXPECT_EQ(0, q.features & ~KFAB_FEATURE_TEST);
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
	EXPECT_EQ(0, kfab_destroy(self->fd, buf.cmd.out_domain_id));

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

	ASSERT_EQ(0, kfab_query(self->fd, &q));
	test_module = q.features & KFAB_FEATURE_TEST;
	for (nr = KFAB_CMD_DOMAIN_ALLOC + 1; nr < 256; nr++) {
		/* Test-only commands exist only in a CONFIG_KFAB_TEST module. */
		if (test_module && nr == KFAB_CMD_TEST_FAULT)
			continue;
		if (nr >= KFAB_CMD_AV_OPEN && nr <= KFAB_CMD_AV_UNLINK)
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
		*tail = 64;
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

	ASSERT_EQ(0, kfab_domain_alloc(self->fd, &a));
	ASSERT_EQ(0, kfab_domain_alloc(self->fd, &b));
	EXPECT_NE(0, a);
	EXPECT_NE(0, b);
	EXPECT_NE(a, b);
	EXPECT_EQ(0, kfab_destroy(self->fd, a));
	EXPECT_EQ(-ENOENT, kfab_destroy(self->fd, a));
	EXPECT_EQ(0, kfab_destroy(self->fd, b));
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
	EXPECT_EQ(-ENOENT, kfab_destroy(self->fd, 0));
	EXPECT_EQ(-ENOENT, kfab_destroy(self->fd, 1));
	EXPECT_EQ(-ENOENT, kfab_destroy(self->fd, 12345));
	EXPECT_EQ(-ENOENT, kfab_destroy(self->fd, UINT32_MAX));
}

TEST_F(kfab, domain_ids_reuse_after_destroy)
{
	uint32_t a, b;

	ASSERT_EQ(0, kfab_domain_alloc(self->fd, &a));
	ASSERT_EQ(0, kfab_destroy(self->fd, a));
	ASSERT_EQ(0, kfab_domain_alloc(self->fd, &b));
	EXPECT_EQ(a, b);
	EXPECT_EQ(0, kfab_destroy(self->fd, b));
}

TEST_F(kfab, objects_belong_to_their_file)
{
	int other = kfab_open();
	uint32_t id, oid;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, kfab_domain_alloc(self->fd, &id));
	ASSERT_EQ(0, kfab_domain_alloc(other, &oid));
	/* Same numbers, different tables: neither reaches the other. */
	EXPECT_EQ(id, oid);
	EXPECT_EQ(0, kfab_destroy(other, oid));
	EXPECT_EQ(-ENOENT, kfab_destroy(other, oid));
	EXPECT_EQ(0, kfab_destroy(self->fd, id));
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
		ASSERT_EQ(0, kfab_domain_alloc(self->fd, &id));
	EXPECT_EQ(-ENOSPC, kfab_domain_alloc(self->fd, &id));
	EXPECT_EQ(0, kfab_destroy(self->fd, q.max_objects / 2));
	EXPECT_EQ(0, kfab_domain_alloc(self->fd, &id));
	EXPECT_EQ(q.max_objects / 2, id);
	/* The rest go when the file closes (teardown). */
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
	ASSERT_EQ(0, kfab_domain_alloc(fd, &id));
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
		ASSERT_EQ(0, kfab_domain_alloc(fd, &id));
		ASSERT_EQ(0, kfab_domain_alloc(fd, &id));
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
		if (kfab_domain_alloc(fd, &id) || kfab_destroy(fd, id))
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
 * Destroying ids another thread races to create or destroy.  The count is
 * kept small enough for the debug kernel under TCG to stay far from the
 * harness's 30 s timeout; the racing thread runs until the main one ends.
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
			kfab_destroy(arg->fd, id);
	return NULL;
}

TEST(destroy_races_with_alloc)
{
	struct race_arg arg = { .stop = false };
	pthread_t th;
	uint32_t id;
	int i;

	arg.fd = kfab_open();
	ASSERT_LE(0, arg.fd);
	ASSERT_EQ(0, pthread_create(&th, NULL, destroy_all_thread, &arg));
	for (i = 0; i < RACE_ROUNDS; i++) {
		int rc = kfab_domain_alloc(arg.fd, &id);

		ASSERT_EQ(0, rc);
		rc = kfab_destroy(arg.fd, id);
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
	ASSERT_EQ(0, kfab_domain_alloc(fd, &id));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(kfab_destroy(fd, id) ? 1 : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(-ENOENT, kfab_destroy(fd, id));
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
			kfab_domain_alloc(fd, &id);
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
