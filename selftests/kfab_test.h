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

#endif /* KFAB_TEST_H */
