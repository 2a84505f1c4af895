// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfabctl: kfab's administration tool.
 *
 *   kfabctl info        the module's ABI version, features and limits
 *   kfabctl contexts    open files of /dev/kfab (from debugfs; root)
 *
 * It grows with kfab: named AVs (create, remove, list) come next, and later
 * it moves to generic netlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kfab.h>

#define KFAB_DEV_PATH "/dev/" KFAB_DEVICE_NAME
#define KFAB_DEBUGFS "/sys/kernel/debug/kfab"

static int open_dev(void)
{
	const char *path = getenv("KFAB_DEV") ? getenv("KFAB_DEV") : KFAB_DEV_PATH;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		fprintf(stderr, "kfabctl: %s: %s%s\n", path, strerror(errno),
			errno == ENOENT ? " (is kfab.ko loaded? modprobe kfab)" : "");
	return fd;
}

static int cmd_info(void)
{
	struct kfab_query q = { .size = sizeof(q) };
	int fd = open_dev();

	if (fd < 0)
		return 1;
	if (ioctl(fd, KFAB_IOC_QUERY, &q)) {
		fprintf(stderr, "kfabctl: KFAB_IOC_QUERY: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);

	printf("device:          %s\n", KFAB_DEV_PATH);
	printf("module version:  %u.%u.%u\n", q.module_version >> 16,
	       (q.module_version >> 8) & 0xff, q.module_version & 0xff);
	printf("abi version:     %u (this tool: %u)\n", q.abi_version,
	       KFAB_ABI_VERSION);
	printf("features:        %s\n",
	       q.features & KFAB_FEATURE_TEST ? "test (CONFIG_KFAB_TEST: not for production)" : "-");
	printf("max objects:     %u per open file\n", q.max_objects);
	printf("max ioctl size:  %u bytes\n", q.max_ioctl_size);
	return q.abi_version == KFAB_ABI_VERSION ? 0 : 1;
}

static int cmd_contexts(void)
{
	FILE *f = fopen(KFAB_DEBUGFS "/contexts", "r");
	char line[512];

	if (!f) {
		fprintf(stderr, "kfabctl: %s/contexts: %s (needs root and debugfs)\n",
			KFAB_DEBUGFS, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f))
		fputs(line, stdout);
	fclose(f);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: kfabctl COMMAND\n"
		"  info       ABI version, features and limits of the loaded module\n"
		"  contexts   open files of /dev/kfab and their objects (root)\n");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "info"))
		return cmd_info();
	if (!strcmp(argv[1], "contexts"))
		return cmd_contexts();
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
