// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab_nl_avins NAME: inserts two addresses into the named AV NAME (it
 * must exist), then removes one, over the raw ABI; for
 * selftests/kfab_netlink to see the AV's "changed" events come from
 * another process.  Exits 0, or 1 with a reason on stderr.
 */
#include <endian.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kfab.h>

static int fail(const char *what)
{
	perror(what);
	return 1;
}

int main(int argc, char **argv)
{
	struct kfab_domain_alloc d = { .size = sizeof(d) };
	struct kfab_av_open o = { .size = sizeof(o) };
	struct kfab_av_insert ins = { .size = sizeof(ins) };
	struct kfab_av_remove rm = { .size = sizeof(rm) };
	struct kfab_addr addrs[2] = {
		{ .family = KFAB_ADDR_LOCAL, .ep = htobe64(11) },
		{ .family = KFAB_ADDR_LOCAL, .ep = htobe64(12) },
	};
	uint32_t indices[2];
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: kfab_nl_avins NAME\n");
		return 2;
	}
	fd = open("/dev/kfab", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail("/dev/kfab");
	if (ioctl(fd, KFAB_IOC_DOMAIN_ALLOC, &d))
		return fail("KFAB_IOC_DOMAIN_ALLOC");
	o.domain_id = d.out_domain_id;
	o.flags = KFAB_AV_OPEN_NO_CREATE;
	o.name = (uintptr_t)argv[1];
	if (ioctl(fd, KFAB_IOC_AV_OPEN, &o))
		return fail("KFAB_IOC_AV_OPEN");
	ins.av_id = o.out_av_id;
	ins.count = 2;
	ins.addrs = (uintptr_t)addrs;
	ins.indices = (uintptr_t)indices;
	if (ioctl(fd, KFAB_IOC_AV_INSERT, &ins) || ins.out_inserted != 2)
		return fail("KFAB_IOC_AV_INSERT");
	rm.av_id = o.out_av_id;
	rm.count = 1;
	rm.indices = (uintptr_t)indices;
	if (ioctl(fd, KFAB_IOC_AV_REMOVE, &rm))
		return fail("KFAB_IOC_AV_REMOVE");
	close(fd);
	return 0;
}
