// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Loading and unloading kfab.ko: rmmod is refused while a file is open and
 * clean otherwise, load/unload loops leave nothing behind, bad parameters
 * are refused.  Runs in the test VM as root, last in the suite; KFAB_KO
 * names the module file.  Every test leaves the module loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/kfab.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

static int load(const char *params)
{
	const char *ko = getenv("KFAB_KO");
	int fd, rc;

	if (!ko)
		return -ENOENT;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return rc;
}

static int unload(void)
{
	return syscall(SYS_delete_module, "kfab", O_NONBLOCK) ? -errno : 0;
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

FIXTURE(module) {
	int unused;
};

FIXTURE_SETUP(module)
{
	if (!getenv("KFAB_KO"))
		SKIP(return, "KFAB_KO not set: not in the test VM");
	if (geteuid())
		SKIP(return, "needs root");
	ASSERT_TRUE(exists("/dev/kfab")) TH_LOG("kfab.ko is not loaded");
}

FIXTURE_TEARDOWN(module)
{
	if (getenv("KFAB_KO") && !exists("/dev/kfab"))
		load("");
}

TEST_F(module, rmmod_refused_while_a_file_is_open)
{
	int fd, rc;

	RETURN_IF_SETUP_SKIPPED();
	fd = kfab_open();
	ASSERT_LE(0, fd);
	rc = unload();
	EXPECT_TRUE(rc == -EWOULDBLOCK || rc == -EBUSY) TH_LOG("rc %d", rc);
	EXPECT_EQ(0, _test_query_abi(fd));
	close(fd);
}

TEST_F(module, load_unload_loop)
{
	int i, fd;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(0, unload());
		EXPECT_FALSE(exists("/dev/kfab"));
		EXPECT_FALSE(exists("/sys/class/misc/kfab"));
		EXPECT_FALSE(exists("/sys/kernel/debug/kfab"));
		ASSERT_EQ(0, load(""));
		fd = kfab_open();
		ASSERT_LE(0, fd);
		EXPECT_EQ(0, _test_query_abi(fd));
		close(fd);
	}
}

TEST_F(module, second_load_is_eexist)
{
	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-EEXIST, load(""));
}

TEST_F(module, bad_parameters_are_refused)
{
	struct kfab_query q = { .size = sizeof(q) };
	int fd;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, unload());
	EXPECT_EQ(-EINVAL, load("max_objects=0"));
	EXPECT_FALSE(exists("/dev/kfab"));

	ASSERT_EQ(0, load("max_objects=7"));
	fd = kfab_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, KFAB_IOC_QUERY, &q));
	EXPECT_EQ(7, q.max_objects);
	close(fd);
	ASSERT_EQ(0, unload());

	/* The limits take their ranges at load too (limits.c) */
	EXPECT_EQ(-EINVAL, load("peer_timeout_ms=0"));
	EXPECT_EQ(-EINVAL, load("peer_timeout_ms=3600001"));
	EXPECT_EQ(-EINVAL, load("av_max_named_per_user=abc"));
	EXPECT_EQ(-EINVAL, load("av_max_entries_per_user=4294967296"));
	EXPECT_FALSE(exists("/dev/kfab"));
	ASSERT_EQ(0, load("peer_timeout_ms=100 av_max_named_per_user=1048576"));
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load(""));
}

TEST_HARNESS_MAIN
