/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers shared by kfab's VM selftests.
 */
#ifndef KFAB_TEST_H
#define KFAB_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/kfab.h>

#define KFAB_DEV "/dev/kfab"
#define KFAB_SYSFS "/sys/class/misc/kfab"

/*
 * The 6.1 harness runs the test body even when FIXTURE_SETUP() called
 * SKIP(); a test whose setup may skip starts with this.
 */
#define RETURN_IF_SETUP_SKIPPED() do {			\
		if (_metadata->skip)			\
			return;				\
	} while (0)

static inline int kfab_open(void)
{
	return open(KFAB_DEV, O_RDWR | O_CLOEXEC);
}

/* ioctl() returning -errno, so ASSERT_EQ(-EINVAL, ...) reads naturally */
static inline int kfab_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static inline int kfab_query(int fd, struct kfab_query *q)
{
	*q = (struct kfab_query){ .size = sizeof(*q) };
	return kfab_ioctl(fd, KFAB_IOC_QUERY, q);
}

static inline int kfab_domain_alloc(int fd, uint32_t *id)
{
	struct kfab_domain_alloc cmd = { .size = sizeof(cmd) };
	int rc = kfab_ioctl(fd, KFAB_IOC_DOMAIN_ALLOC, &cmd);

	if (!rc)
		*id = cmd.out_domain_id;
	return rc;
}

static inline int kfab_destroy(int fd, uint32_t id)
{
	struct kfab_destroy cmd = { .size = sizeof(cmd), .id = id };

	return kfab_ioctl(fd, KFAB_IOC_DESTROY, &cmd);
}

/* Raw AV commands: 0 or -errno, outputs where the pointers say. */
static inline int kfab_av_insert(int fd, uint32_t av_id,
				 const struct kfab_addr *addrs, uint32_t count,
				 uint32_t *indices, int32_t *errors,
				 uint32_t *inserted)
{
	struct kfab_av_insert cmd = {
		.size = sizeof(cmd),
		.av_id = av_id,
		.count = count,
		.addrs = (uintptr_t)addrs,
		.indices = (uintptr_t)indices,
		.errors = (uintptr_t)errors,
	};
	int rc = kfab_ioctl(fd, KFAB_IOC_AV_INSERT, &cmd);

	if (inserted)
		*inserted = cmd.out_inserted;
	return rc;
}

static inline int kfab_av_remove(int fd, uint32_t av_id,
				 const uint32_t *indices, uint32_t count)
{
	struct kfab_av_remove cmd = {
		.size = sizeof(cmd),
		.av_id = av_id,
		.count = count,
		.indices = (uintptr_t)indices,
	};

	return kfab_ioctl(fd, KFAB_IOC_AV_REMOVE, &cmd);
}

static inline int kfab_av_unlink(int fd, const char *name)
{
	struct kfab_av_unlink cmd = { .size = sizeof(cmd),
				      .name = (uintptr_t)name };

	return kfab_ioctl(fd, KFAB_IOC_AV_UNLINK, &cmd);
}

/* A decimal value from a sysfs file, or -1. */
static inline long read_sysfs_long(const char *path)
{
	char buf[64] = "";
	long val = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		val = strtol(buf, NULL, 10);
	fclose(f);
	return val;
}

static inline long kfab_contexts(void)
{
	return read_sysfs_long(KFAB_SYSFS "/contexts");
}

/* Whether the module was built with CONFIG_KFAB_TEST (test-only commands). */
static inline int kfab_test_module(void)
{
	struct kfab_query q;
	int fd = kfab_open();
	int ret;

	if (fd < 0)
		return 0;
	ret = !kfab_query(fd, &q) && (q.features & KFAB_FEATURE_TEST);
	close(fd);
	return ret;
}

/* Milliseconds of CLOCK_MONOTONIC, for the tests' deadlines. */
static inline uint64_t kfab_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Whether the running module knows a command: @cmd is its zeroed struct
 * with @size set, naming domain 0, which never exists, so anything but
 * -ENOTTY means known.
 */
static inline int kfab_knows(unsigned long ioc, void *cmd)
{
	int fd = kfab_open();
	int rc;

	if (fd < 0)
		return 0;
	rc = kfab_ioctl(fd, ioc, cmd);
	close(fd);
	return rc != -ENOTTY;
}

#endif /* KFAB_TEST_H */
