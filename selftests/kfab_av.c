// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address vectors: the kernel's AV commands (FIXTURE(ioctl): ABI, named
 * AVs, sharing, permissions, limits, lifetime) and libfabric's fi_av(3)
 * through the kfab provider (FIXTURE(fi_av)), one test per behaviour.
 *
 * Needs /dev/kfab (the VM); on the host every test SKIPs.  Runs as root:
 * the permission tests drop to other uids in forked children.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

#define PARAMS		"/sys/module/kfab/parameters/"
#define DEBUGFS_AVS	"/sys/kernel/debug/kfab/avs"

/*
 * An endpoint of this machine: a service up to KFAB_SERVICE_MAX, else a
 * number of the module's with an incarnation (any will do in an AV).
 */
#define TEST_INCARNATION	0x6b666162

static struct kfab_addr local_addr(uint64_t ep)
{
	return kfab_test_addr(KFAB_ADDR_LOCAL, NULL, 0, ep,
			      ep > KFAB_SERVICE_MAX ? TEST_INCARNATION : 0);
}

static uint64_t ep_of(const struct kfab_addr *a)
{
	return be64toh(a->ep);
}

/* A name unique to this test process, so tests never share AVs. */
static const char *test_name(const char *what)
{
	char *name;

	/* Freed with the test's process, which the harness forks per test. */
	if (asprintf(&name, "t%d-%s", getpid(), what) < 0)
		abort();
	return name;
}

/* ---- raw ioctls ---- */

static int av_open(int fd, uint32_t domain, const char *name, uint32_t flags,
		   uint32_t mode, struct kfab_av_open *out)
{
	struct kfab_av_open cmd = {
		.flags = flags,
		.domain_id = domain,
		.mode = mode,
		.name = (uintptr_t)name,
	};
	int rc = _test_cmd_av_open(fd, &cmd, NULL);

	if (out)
		*out = cmd;
	return rc;
}

static int av_insert_one(int fd, uint32_t av, uint64_t ep, uint32_t *index)
{
	struct kfab_addr a = local_addr(ep);
	int32_t err;
	int rc = _test_cmd_av_insert(fd, av, &a, 1, index, &err, NULL);

	return rc ? rc : err;
}

/* The mapped table of an open AV, read-only. */
struct av_map {
	void *base;
	size_t size;
	const struct kfab_av_header *hdr;
};

static int av_map(int fd, const struct kfab_av_open *o, struct av_map *m)
{
	m->size = o->out_region.size;
	m->base = _test_mmap(fd, &o->out_region, PROT_READ);
	if (m->base == MAP_FAILED)
		return -errno;
	m->hdr = m->base;
	return 0;
}

/* The entry at @index, read the way uapi/linux/kfab.h says. */
static bool av_map_read(const struct av_map *m, uint32_t index,
			struct kfab_addr *addr)
{
	const struct kfab_av_entry *e = (const void *)((const char *)m->base +
		m->hdr->entries_offset + (size_t)index * m->hdr->entry_size);
	uint32_t seq, flags;

	do {
		seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		flags = e->flags;
		*addr = e->addr;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while ((seq & 1) || __atomic_load_n(&e->seq, __ATOMIC_RELAXED) != seq);
	return flags & KFAB_AV_ENTRY_VALID;
}

static long read_param(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), PARAMS "%s", name);
	return read_sysfs_long(path);
}

static int write_param(const char *name, long val)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%ld\n", val);
	return fclose(f) ? -errno : 0;
}

/* Become @uid/@gid for good (no capabilities left), in a forked child. */
static void become(uid_t uid, gid_t gid)
{
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
	    setresuid(uid, uid, uid))
		_exit(100);
}

/*
 * Run @fn in a child as @uid/@gid and return its exit status; the child
 * opens its own file of the device and a domain in it.
 */
static int as_user(uid_t uid, gid_t gid,
		   int (*fn)(int fd, uint32_t dom, const void *arg),
		   const void *arg)
{
	pid_t pid = fork();
	int status;

	if (!pid) {
		uint32_t dom;
		int fd;

		become(uid, gid);
		if (_test_open_domain(&fd, &dom))
			_exit(101);
		_exit(fn(fd, dom, arg));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Child bodies: exit status 0 when the kernel answered what was expected. */
struct open_expect {
	const char *name;
	uint32_t flags;
	int rc;
};

static int child_open(int fd, uint32_t dom, const void *arg)
{
	const struct open_expect *e = arg;

	return av_open(fd, dom, e->name, e->flags, 0600, NULL) == e->rc ? 0 : 1;
}

static int child_unlink_refused(int fd, uint32_t dom, const void *arg)
{
	(void)dom;
	return _test_cmd_av_unlink(fd, arg) == -EPERM ? 0 : 1;
}

FIXTURE(ioctl) {
	int fd;
	uint32_t dom;
};

FIXTURE_SETUP(ioctl)
{
	self->fd = -1;
	if (!kfab_have_device())
		SKIP(return, "%s absent: needs kfab.ko (VM)", KFAB_DEV);
	self->fd = kfab_open();
	ASSERT_LE(0, self->fd);
	test_cmd_domain_alloc(self->fd, &self->dom);
}

FIXTURE_TEARDOWN(ioctl)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(ioctl, unnamed_open_maps_a_read_only_table)
{
	struct kfab_av_open o;
	struct av_map m = { 0 };
	void *w;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, av_open(self->fd, self->dom, NULL, 0, 0, &o));
	EXPECT_NE(0, o.out_av_id);
	EXPECT_EQ(KFAB_AV_TYPE_TABLE, o.out_type);
	EXPECT_LE(read_param("av_default_count"), o.out_count);
	EXPECT_EQ(0, o.out_flags);
	EXPECT_EQ(0, o.out_map_addr);
	ASSERT_EQ(0, av_map(self->fd, &o, &m));
	EXPECT_EQ(o.out_count, m.hdr->capacity);
	EXPECT_EQ(sizeof(struct kfab_av_entry), m.hdr->entry_size);
	EXPECT_EQ(0, m.hdr->used);

	/* Never writable: not by mmap(), not by mprotect() later. */
	w = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 o.out_region.offset);
	EXPECT_EQ(MAP_FAILED, w);
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, mprotect(m.base, m.size, PROT_READ | PROT_WRITE));
	/* Private mappings would stop seeing the kernel's writes. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, m.size, PROT_READ, MAP_PRIVATE,
				   self->fd, o.out_region.offset));

	/* The parent domain cannot go while the AV holds it. */
	test_err_destroy(EBUSY, self->fd, self->dom);
	test_cmd_destroy(self->fd, o.out_av_id);
	test_cmd_destroy(self->fd, self->dom);
	/* The mapping outlives the AV. */
	EXPECT_EQ(o.out_count, m.hdr->capacity);
	munmap(m.base, m.size);
}

TEST_F(ioctl, insert_takes_the_lowest_free_index_and_lookups_read_the_map)
{
	struct kfab_addr addrs[4] = { local_addr(10), local_addr(11),
				      local_addr(12), local_addr(11) };
	uint32_t idx[4], inserted, i;
	int32_t errs[4];
	struct kfab_addr got;
	struct kfab_av_open o;
	struct av_map m = { 0 };

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, av_open(self->fd, self->dom, NULL, 0, 0, &o));
	ASSERT_EQ(0, av_map(self->fd, &o, &m));
	test_cmd_av_insert(self->fd, o.out_av_id, addrs, 4, idx, errs,
			       &inserted);
	EXPECT_EQ(4, inserted);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(i, idx[i]);
		EXPECT_EQ(0, errs[i]);
		ASSERT_TRUE(av_map_read(&m, i, &got));
		EXPECT_EQ(0, memcmp(&addrs[i], &got, sizeof(got)));
	}
	/* An address the table holds keeps its index. */
	EXPECT_EQ(1, idx[3]);
	EXPECT_EQ(3, m.hdr->used);
	EXPECT_FALSE(av_map_read(&m, 3, &got));

	/* Remove, then the freed index is the next one given. */
	i = 1;
	test_cmd_av_remove(self->fd, o.out_av_id, &i, 1);
	EXPECT_FALSE(av_map_read(&m, 1, &got));
	EXPECT_EQ(2, m.hdr->used);
	ASSERT_EQ(0, av_insert_one(self->fd, o.out_av_id, 13, &i));
	EXPECT_EQ(1, i);
	ASSERT_EQ(0, av_insert_one(self->fd, o.out_av_id, 11, &i));
	EXPECT_EQ(3, i);
	munmap(m.base, m.size);
}

TEST_F(ioctl, insert_reports_each_bad_address_and_a_full_table)
{
	struct kfab_addr bad[11] = {
		local_addr(1), local_addr(1), local_addr(1), local_addr(0),
		local_addr(1), local_addr(70000), local_addr(1), local_addr(1),
		local_addr(1), local_addr(1), local_addr(5),
	};
	struct kfab_av_open o;
	uint32_t idx[11], inserted, i;
	int32_t errs[11];

	RETURN_IF_SETUP_SKIPPED();
	bad[0].family = KFAB_ADDR_UNSPEC;
	bad[1].__reserved = 1;
	bad[2].node[15] = 7;		/* LOCAL names no node */
	bad[4].incarnation = htobe32(1);	/* a service has none */
	bad[5].incarnation = 0;		/* the module's number has one */
	bad[6].port = htobe16(KFAB_PORT_DEFAULT);	/* LOCAL has no port */
	bad[7].family = KFAB_ADDR_INET;	/* INET with no port... */
	bad[7].node[15] = 1;
	bad[8].family = KFAB_ADDR_INET;	/* ...or no node */
	bad[8].port = htobe16(KFAB_PORT_DEFAULT);
	bad[9].family = 9;
	ASSERT_EQ(0, av_open(self->fd, self->dom, NULL, 0, 0, &o));
	test_cmd_av_insert(self->fd, o.out_av_id, bad, 11, idx, errs,
			       &inserted);
	EXPECT_EQ(1, inserted);
	for (i = 0; i < 10; i++) {
		EXPECT_EQ(-EINVAL, errs[i]) {
			TH_LOG("address %u", i);
		}
		EXPECT_EQ(KFAB_AV_INDEX_NONE, idx[i]);
	}
	EXPECT_EQ(0, errs[10]);
	EXPECT_EQ(0, idx[10]);

	/* Fill the table: the next address finds no room. */
	for (i = 1; i < o.out_count; i++)
		ASSERT_EQ(0, av_insert_one(self->fd, o.out_av_id, 100 + i, NULL));
	EXPECT_EQ(-ENOSPC, av_insert_one(self->fd, o.out_av_id, 99, NULL));
}

TEST_F(ioctl, hostile_arguments_get_clear_errors)
{
	struct kfab_av_open o;
	struct kfab_addr a = local_addr(1);
	struct kfab_av_insert ins = { .size = sizeof(ins) };
	struct kfab_av_open c = { .size = sizeof(c) };
	uint32_t idx[3] = { 0, 0, 12345 };

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, av_open(self->fd, self->dom, NULL, 0, 0, &o));

	/* open */
	EXPECT_EQ(-ENOENT, av_open(self->fd, 999, NULL, 0, 0, NULL));
	EXPECT_EQ(-ENOENT, av_open(self->fd, o.out_av_id, NULL, 0, 0, NULL));
	EXPECT_EQ(-EOPNOTSUPP, av_open(self->fd, self->dom, NULL, 1 << 20, 0,
				       NULL));
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, NULL,
				   KFAB_AV_OPEN_READ_ONLY, 0, NULL));
	c.domain_id = self->dom;
	c.type = 3;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_AV_OPEN, &c));
	c.type = 0;
	c.count = read_param("av_max_count") + 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_AV_OPEN, &c));
	c.count = 0;
	c.__reserved = 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_AV_OPEN, &c));
	c.__reserved = 0;
	c.size = offsetof(struct kfab_av_open, out_region.size);
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_AV_OPEN, &c));
	c.size = sizeof(c);
	c.name = 1;
	EXPECT_EQ(-EFAULT, kfab_ioctl(self->fd, KFAB_IOC_AV_OPEN, &c));

	/* insert */
	test_err_av_insert(ENOENT, self->fd, 999, &a, 1, NULL, NULL, NULL);
	test_err_av_insert(ENOENT, self->fd, self->dom, &a, 1, NULL, NULL,
				     NULL);
	test_err_av_insert(E2BIG, self->fd, o.out_av_id, &a,
				    KFAB_AV_BATCH_MAX + 1, NULL, NULL, NULL);
	test_err_av_insert(E2BIG, self->fd, o.out_av_id, &a, UINT32_MAX,
				    NULL, NULL, NULL);
	test_err_av_insert(EFAULT, self->fd, o.out_av_id, NULL, 1, NULL,
				     NULL, NULL);
	test_err_av_insert(EFAULT, self->fd, o.out_av_id, (void *)1, 1,
				     NULL, NULL, NULL);
	/* A bad output pointer: the insert happened, the copy failed. */
	test_err_av_insert(EFAULT, self->fd, o.out_av_id, &a, 1, (void *)8,
				     NULL, NULL);
	test_cmd_av_insert(self->fd, o.out_av_id, &a, 0, NULL, NULL, NULL);
	ins.av_id = o.out_av_id;
	ins.flags = 1;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(self->fd, KFAB_IOC_AV_INSERT, &ins));
	ins.flags = 0;
	ins.__reserved = 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_AV_INSERT, &ins));

	/* remove: all or nothing */
	test_err_av_remove(EINVAL, self->fd, o.out_av_id, idx, 2);
	test_err_av_remove(EINVAL, self->fd, o.out_av_id, &idx[2], 1);
	test_err_av_remove(EFAULT, self->fd, o.out_av_id, NULL, 1);
	test_err_av_remove(E2BIG, self->fd, o.out_av_id, idx,
				    KFAB_AV_BATCH_MAX + 1);
	test_err_av_remove(ENOENT, self->fd, 999, idx, 1);
	test_cmd_av_remove(self->fd, o.out_av_id, idx, 0);
	/* The entry is still there after every refusal. */
	test_cmd_av_remove(self->fd, o.out_av_id, idx, 1);

	/* unlink */
	test_err_av_unlink(EFAULT, self->fd, NULL);
	test_err_av_unlink(ENOENT, self->fd, test_name("none"));
}

TEST_F(ioctl, names_are_validated)
{
	char name[200];
	char *page;
	size_t len;

	RETURN_IF_SETUP_SKIPPED();
	/* Every length from the longest valid name to well past the limit. */
	for (len = KFAB_AV_NAME_MAX - 1; len < sizeof(name); len++) {
		memset(name, 'a', len);
		name[len] = '\0';
		EXPECT_EQ(len < KFAB_AV_NAME_MAX ? 0 : -ENAMETOOLONG,
			  av_open(self->fd, self->dom, name, 0, 0600, NULL));
	}
	test_cmd_av_unlink(self->fd, name + sizeof(name) - KFAB_AV_NAME_MAX);
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, "", 0, 0600, NULL));
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, ".hidden", 0, 0600, NULL));
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, "a/b", 0, 0600, NULL));
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, "a b", 0, 0600, NULL));
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, "caf\xc3\xa9", 0,
				   0600, NULL));
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, "x\n", 0, 0600, NULL));
	/* Latin-1 letters are letters to the kernel's isalnum(), not here. */
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, "av-\xff", 0, 0600,
				   NULL));
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, "\xc0\xc1", 0, 0600,
				   NULL));
	test_err_av_unlink(ENAMETOOLONG, self->fd, name);

	/* A name running into an unmapped page: -EFAULT, not a read past it. */
	page = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	ASSERT_EQ(0, munmap(page + 4096, 4096));
	memset(page + 4096 - 10, 'b', 10);
	EXPECT_EQ(-EFAULT, av_open(self->fd, self->dom, page + 4096 - 10, 0,
				   0600, NULL));
	munmap(page, 4096);
}

TEST_F(ioctl, named_open_flags)
{
	const char *name = test_name("flags");
	struct kfab_av_open o, o2, c = { .size = sizeof(c) };
	uint32_t zero = 0;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-ENOENT, av_open(self->fd, self->dom, name,
				   KFAB_AV_OPEN_READ_ONLY, 0, NULL));
	EXPECT_EQ(-ENOENT, av_open(self->fd, self->dom, name,
				   KFAB_AV_OPEN_NO_CREATE, 0, NULL));
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, name,
				   KFAB_AV_OPEN_READ_ONLY | KFAB_AV_OPEN_EXCL,
				   0, NULL));
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, name,
				   KFAB_AV_OPEN_NO_CREATE | KFAB_AV_OPEN_PERSIST,
				   0, NULL));
	EXPECT_EQ(-EINVAL, av_open(self->fd, self->dom, name, 0, 01000, NULL));

	ASSERT_EQ(0, av_open(self->fd, self->dom, name, KFAB_AV_OPEN_EXCL,
			     0640, &o));
	EXPECT_EQ(KFAB_AV_OUT_CREATED, o.out_flags);
	EXPECT_NE(0, o.out_map_addr);
	EXPECT_EQ(-EEXIST, av_open(self->fd, self->dom, name,
				   KFAB_AV_OPEN_EXCL, 0640, NULL));
	ASSERT_EQ(0, av_open(self->fd, self->dom, name, KFAB_AV_OPEN_READ_ONLY,
			     0, &o2));
	EXPECT_EQ(KFAB_AV_OUT_READ_ONLY, o2.out_flags);
	EXPECT_EQ(o.out_count, o2.out_count);
	EXPECT_EQ(o.out_map_addr, o2.out_map_addr);

	/* A read-only handle changes nothing. */
	EXPECT_EQ(-EPERM, av_insert_one(self->fd, o2.out_av_id, 1, NULL));
	ASSERT_EQ(0, av_insert_one(self->fd, o.out_av_id, 1, NULL));
	test_err_av_remove(EPERM, self->fd, o2.out_av_id, &zero, 1);
	/* Another type than the AV's: refused. */
	c.domain_id = self->dom;
	c.type = KFAB_AV_TYPE_MAP;
	c.name = (uintptr_t)name;
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->fd, KFAB_IOC_AV_OPEN, &c));
	/* The last close takes the name away. */
	EXPECT_EQ(1, read_sysfs_long(KFAB_SYSFS "/named_avs") >= 1);
	test_cmd_destroy(self->fd, o.out_av_id);
	test_cmd_destroy(self->fd, o2.out_av_id);
	EXPECT_EQ(-ENOENT, av_open(self->fd, self->dom, name,
				   KFAB_AV_OPEN_NO_CREATE, 0, NULL));
}

TEST_F(ioctl, named_av_is_one_table_for_every_opener)
{
	const char *name = test_name("shared");
	struct kfab_av_open a, b;
	struct av_map ma = { 0 }, mb = { 0 };
	struct kfab_addr got;
	uint32_t ia, ib, dom2;
	int fd2;

	RETURN_IF_SETUP_SKIPPED();
	fd2 = kfab_open();
	ASSERT_LE(0, fd2);
	test_cmd_domain_alloc(fd2, &dom2);
	ASSERT_EQ(0, av_open(self->fd, self->dom, name, 0, 0600, &a));
	ASSERT_EQ(0, av_open(fd2, dom2, name, 0, 0600, &b));
	EXPECT_EQ(KFAB_AV_OUT_CREATED, a.out_flags);
	EXPECT_EQ(0, b.out_flags);
	ASSERT_EQ(0, av_map(self->fd, &a, &ma));
	ASSERT_EQ(0, av_map(fd2, &b, &mb));

	ASSERT_EQ(0, av_insert_one(self->fd, a.out_av_id, 42, &ia));
	ASSERT_EQ(0, av_insert_one(fd2, b.out_av_id, 42, &ib));
	EXPECT_EQ(ia, ib);
	ASSERT_EQ(0, av_insert_one(fd2, b.out_av_id, 43, &ib));
	/* What one file inserted, the other reads without a system call. */
	ASSERT_TRUE(av_map_read(&ma, ib, &got));
	EXPECT_EQ(43, ep_of(&got));
	EXPECT_EQ(2, ma.hdr->used);
	EXPECT_EQ(ma.hdr->generation, mb.hdr->generation);

	/* The AV lives while anyone holds it open. */
	close(fd2);
	ASSERT_EQ(0, av_open(self->fd, self->dom, name, KFAB_AV_OPEN_NO_CREATE,
			     0, &b));
	EXPECT_EQ(2, ma.hdr->used);
	munmap(ma.base, ma.size);
	munmap(mb.base, mb.size);
}

TEST_F(ioctl, other_uid_is_refused_a_0600_av)
{
	const char *name = test_name("private");
	struct open_expect rw = { name, 0, -EACCES };
	struct open_expect ro = { name, KFAB_AV_OPEN_READ_ONLY, -EACCES };
	struct open_expect create = { test_name("mine"), 0, 0 };

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, av_open(self->fd, self->dom, name, 0, 0600, NULL));
	EXPECT_EQ(0, as_user(1000, 1000, child_open, &rw));
	EXPECT_EQ(0, as_user(1000, 1000, child_open, &ro));
	/* An unprivileged user may create a name of its own. */
	EXPECT_EQ(0, as_user(1000, 1000, child_open, &create));
	/* ... and may not unlink root's. */
	EXPECT_EQ(0, as_user(1000, 1000, child_unlink_refused, name));
}

TEST_F(ioctl, group_readable_av_is_readable_by_the_group)
{
	const char *name = test_name("group");
	struct open_expect ro = { name, KFAB_AV_OPEN_READ_ONLY, 0 };
	struct open_expect rw = { name, 0, -EACCES };
	struct kfab_av_open o = { .size = sizeof(o), .domain_id = self->dom,
				  .flags = KFAB_AV_OPEN_SET_OWNER,
				  .mode = 0640, .uid = 0, .gid = 2000 };

	RETURN_IF_SETUP_SKIPPED();
	o.name = (uintptr_t)name;
	test_cmd_av_open(self->fd, &o, NULL);
	/* A member of group 2000 reads, and may not write. */
	EXPECT_EQ(0, as_user(1500, 2000, child_open, &ro));
	EXPECT_EQ(0, as_user(1500, 2000, child_open, &rw));
	/* Somebody else may not even read. */
	ro.rc = -EACCES;
	EXPECT_EQ(0, as_user(1500, 1500, child_open, &ro));
}

TEST_F(ioctl, set_owner_hands_the_av_to_another_user)
{
	const char *name = test_name("owned");
	struct open_expect rw = { name, 0, 0 };
	struct kfab_av_open o = { .size = sizeof(o), .domain_id = self->dom,
				  .flags = KFAB_AV_OPEN_SET_OWNER |
					   KFAB_AV_OPEN_PERSIST,
				  .mode = 0600, .uid = 1000, .gid = 1000 };

	RETURN_IF_SETUP_SKIPPED();
	o.name = (uintptr_t)name;
	test_cmd_av_open(self->fd, &o, NULL);
	test_cmd_destroy(self->fd, o.out_av_id);
	/* Persistent: the name stays with no opener; uid 1000 owns it. */
	EXPECT_EQ(0, as_user(1000, 1000, child_open, &rw));
	rw.rc = -EACCES;
	EXPECT_EQ(0, as_user(1001, 1001, child_open, &rw));
	test_cmd_av_unlink(self->fd, name);
	EXPECT_EQ(-ENOENT, av_open(self->fd, self->dom, name,
				   KFAB_AV_OPEN_NO_CREATE, 0, NULL));
}

/* Creation flags reserved to the administrator. */
static int child_privileged_flags(int fd, uint32_t dom, const void *arg)
{
	struct kfab_av_open o = { .size = sizeof(o), .domain_id = dom,
				  .mode = 0600, .uid = 0, .gid = 0 };

	o.name = (uintptr_t)arg;
	o.flags = KFAB_AV_OPEN_PERSIST;
	if (_test_cmd_av_open(fd, &o, NULL) != -EPERM)
		return 1;
	o.flags = KFAB_AV_OPEN_SET_OWNER;
	if (_test_cmd_av_open(fd, &o, NULL) != -EPERM)
		return 2;
	return 0;
}

TEST_F(ioctl, persist_and_set_owner_need_privileges)
{
	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(0, as_user(1000, 1000, child_privileged_flags,
			     test_name("priv")));
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/*
 * Root of a new user namespace whose uid and gid 0 are 1000 outside, as a
 * container runtime sets it up: root in there, nobody special here.
 */
TEST_F(ioctl, user_namespace_root_is_not_root)
{
	const char *name = test_name("nsroot");
	int go[2], ready[2], status;
	char path[64], c;
	pid_t pid;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, av_open(self->fd, self->dom, name, 0, 0600, NULL));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	if (!pid) {
		uint32_t dom;
		int fd;

		if (unshare(CLONE_NEWUSER) || write(ready[1], "u", 1) != 1 ||
		    read(go[0], &c, 1) != 1)
			_exit(10);
		/* Now mapped: become the namespace's root, uid 1000 outside. */
		if (setresgid(0, 0, 0) || setresuid(0, 0, 0) || getuid())
			_exit(11);
		if (_test_open_domain(&fd, &dom))
			_exit(12);
		if (av_open(fd, dom, name, KFAB_AV_OPEN_READ_ONLY, 0, NULL) !=
		    -EACCES)
			_exit(13);
		if (av_open(fd, dom, name, 0, 0600, NULL) != -EACCES)
			_exit(14);
		if (_test_cmd_av_unlink(fd, name) != -EPERM)
			_exit(15);
		/* Privileged flags need privileges outside the namespace. */
		if (child_privileged_flags(fd, dom, test_name("nspriv")))
			_exit(16);
		_exit(0);
	}
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	ASSERT_EQ(0, write_file(path, "0 1000 1\n"));
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	ASSERT_EQ(0, write_file(path, "0 1000 1\n"));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

static int open_count(int fd, uint32_t dom, int n, uint32_t count)
{
	char name[KFAB_AV_NAME_MAX];
	struct kfab_av_open c = { .size = sizeof(c), .domain_id = dom,
				  .mode = 0600, .count = count };

	snprintf(name, sizeof(name), "q%d-%d", getpid(), n);
	c.name = (uintptr_t)name;
	return _test_cmd_av_open(fd, &c, NULL);
}

/* Limits set by the test: 2 named AVs, 3000 entries. */
static int child_quota(int fd, uint32_t dom, const void *arg)
{
	(void)arg;
	if (open_count(fd, dom, 1, 100) || open_count(fd, dom, 2, 100))
		return 1;
	if (open_count(fd, dom, 3, 100) != -EDQUOT)
		return 2;
	/* Unnamed AVs are not named ones. */
	if (av_open(fd, dom, NULL, 0, 0, NULL))
		return 3;
	/* Closing gives the room back. */
	close(fd);
	if (_test_open_domain(&fd, &dom))
		return 4;
	if (open_count(fd, dom, 4, 100000) != -EINVAL)
		return 5;
	if (open_count(fd, dom, 5, 4000) != -EDQUOT)
		return 6;
	if (open_count(fd, dom, 6, 2000) || open_count(fd, dom, 7, 100))
		return 7;
	return 0;
}

TEST_F(ioctl, per_user_limits_are_enforced)
{
	long named = read_param("av_max_named_per_user");
	long entries = read_param("av_max_entries_per_user");

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_LT(0, named);
	ASSERT_EQ(0, write_param("av_max_named_per_user", 2));
	ASSERT_EQ(0, write_param("av_max_entries_per_user", 3000));
	EXPECT_EQ(0, as_user(1000, 1000, child_quota, NULL));
	EXPECT_EQ(0, write_param("av_max_named_per_user", named));
	EXPECT_EQ(0, write_param("av_max_entries_per_user", entries));
}

TEST_F(ioctl, sigkill_while_holding_a_named_av_leaves_nothing)
{
	const char *name = test_name("killed");
	long before = read_sysfs_long(KFAB_SYSFS "/named_avs");
	long avs = read_sysfs_long(KFAB_SYSFS "/avs");
	int ready[2];
	pid_t pid;
	char c;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	if (!pid) {
		struct kfab_av_open o;
		uint32_t dom;
		int fd;

		if (_test_open_domain(&fd, &dom) ||
		    av_open(fd, dom, name, 0, 0600, &o) ||
		    av_insert_one(fd, o.out_av_id, 7, NULL))
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	EXPECT_EQ(before + 1, read_sysfs_long(KFAB_SYSFS "/named_avs"));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	EXPECT_EQ(before, read_sysfs_long(KFAB_SYSFS "/named_avs"));
	EXPECT_EQ(avs, read_sysfs_long(KFAB_SYSFS "/avs"));
	EXPECT_EQ(-ENOENT, av_open(self->fd, self->dom, name,
				   KFAB_AV_OPEN_NO_CREATE, 0, NULL));
	close(ready[0]);
	close(ready[1]);
}

TEST_F(ioctl, debugfs_lists_each_av)
{
	const char *name = test_name("shown");
	char line[512], want[128];
	bool seen_av = false, seen_opener = false, seen_entry = false;
	struct kfab_av_open o;
	FILE *f;

	RETURN_IF_SETUP_SKIPPED();

	ASSERT_EQ(0, av_open(self->fd, self->dom, name, 0, 0640, &o));
	ASSERT_EQ(0, av_insert_one(self->fd, o.out_av_id, 4242, NULL));
	f = fopen(DEBUGFS_AVS, "r");
	if (!f)
		SKIP(return, "no debugfs");
	snprintf(want, sizeof(want), " name %s type table owner 0 group 0 mode 0640 ",
		 name);
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, want) && strstr(line, " openers 1 "))
			seen_av = true;
		else if (seen_av && strstr(line, "\topener context") &&
			 strstr(line, " rw"))
			seen_opener = true;
		else if (seen_av && strstr(line, "\tentry 0 fi_kfab://local/4242"))
			seen_entry = true;
	}
	fclose(f);
	EXPECT_TRUE(seen_av);
	EXPECT_TRUE(seen_opener);
	EXPECT_TRUE(seen_entry);
}

/*
 * Four processes hammer one named AV at once: each inserts the same shared
 * addresses and addresses of its own, removes and re-inserts its own, and
 * checks every entry it reads from the mapping.  The shared addresses end
 * with one index each, the same for everybody.
 */
#define STRESS_PROCS	4
#define STRESS_SHARED	64
#define STRESS_OWN	128

static int stress_child(const char *name, int n, int report)
{
	struct kfab_addr addrs[STRESS_OWN];
	uint32_t shared[STRESS_SHARED], own[STRESS_OWN], i, round, dom;
	struct kfab_av_open o;
	struct kfab_addr got;
	struct av_map m = { 0 };
	int fd;

	if (_test_open_domain(&fd, &dom) ||
	    av_open(fd, dom, name, 0, 0600, &o) || av_map(fd, &o, &m))
		return 1;
	for (round = 0; round < 20; round++) {
		for (i = 0; i < STRESS_SHARED; i++)
			if (av_insert_one(fd, o.out_av_id, 1000 + i, &shared[i]))
				return 2;
		for (i = 0; i < STRESS_OWN; i++)
			addrs[i] = local_addr(100000 * (n + 1) + i);
		if (_test_cmd_av_insert(fd, o.out_av_id, addrs, STRESS_OWN, own,
					NULL,
			      &i) || i != STRESS_OWN)
			return 3;
		for (i = 0; i < STRESS_OWN; i++)
			if (!av_map_read(&m, own[i], &got) ||
			    ep_of(&got) != ep_of(&addrs[i]))
				return 4;
		for (i = 0; i < STRESS_SHARED; i++)
			if (!av_map_read(&m, shared[i], &got) ||
			    ep_of(&got) != 1000 + i)
				return 5;
		if (_test_cmd_av_remove(fd, o.out_av_id, own, STRESS_OWN))
			return 6;
	}
	if (write(report, shared, sizeof(shared)) != sizeof(shared))
		return 7;
	return 0;
}

TEST_F(ioctl, concurrent_openers_of_a_named_av_agree)
{
	const char *name = test_name("stress");
	uint32_t seen[STRESS_PROCS][STRESS_SHARED];
	int report[2], status, i;
	pid_t pids[STRESS_PROCS];

	RETURN_IF_SETUP_SKIPPED();
	/* Hold it open, so that it outlives any one child. */
	ASSERT_EQ(0, av_open(self->fd, self->dom, name, 0, 0600, NULL));
	ASSERT_EQ(0, pipe(report));
	for (i = 0; i < STRESS_PROCS; i++) {
		pids[i] = fork();
		if (!pids[i])
			_exit(stress_child(name, i, report[1]));
		ASSERT_LT(0, pids[i]);
	}
	for (i = 0; i < STRESS_PROCS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	for (i = 0; i < STRESS_PROCS; i++) {
		ASSERT_EQ(sizeof(seen[i]), read(report[0], seen[i],
						 sizeof(seen[i])));
		EXPECT_EQ(0, memcmp(seen[0], seen[i], sizeof(seen[i])));
	}
}

/*
 * A creating open that fails at its very end (its answer cannot be copied
 * out) takes its new name away again - but not from under a file that
 * opened the name in the meantime.
 */
TEST_F_TIMEOUT(ioctl, failed_create_keeps_a_name_another_file_opened, 240)
{
	const char *name = test_name("race");
	struct kfab_test_fault f = { .size = sizeof(f),
				     .point = KFAB_FAULT_COPY_OUT, .nth = 1 };
	struct kfab_query q;
	int round, hits = 0;

	RETURN_IF_SETUP_SKIPPED();
	test_cmd_query(self->fd, &q);
	if (!(q.features & KFAB_FEATURE_TEST))
		SKIP(return, "needs a CONFIG_KFAB_TEST module");
	for (round = 0; round < 40; round++) {
		int go[2], status;
		pid_t pid;
		char c;

		ASSERT_EQ(0, pipe(go));
		pid = fork();
		if (!pid) {
			/* Open the name as soon as it exists; hold it; check. */
			struct kfab_av_open o;
			int fd = kfab_open(), fd2 = kfab_open(), i, rc = -1;
			uint32_t dom, dom2;

			if (_test_cmd_domain_alloc(fd, &dom) ||
			    _test_cmd_domain_alloc(fd2, &dom2) ||
			    write(go[1], "r", 1) != 1)
				_exit(10);
			for (i = 0; i < 4000 && rc; i++)
				rc = av_open(fd, dom, name,
					     KFAB_AV_OPEN_NO_CREATE, 0, &o);
			if (rc)
				_exit(1);	/* never saw it: no hit */
			/* We hold it: the name must still find it. */
			_exit(av_open(fd2, dom2, name, KFAB_AV_OPEN_NO_CREATE,
				      0, NULL) ? 20 : 0);
		}
		ASSERT_EQ(1, read(go[0], &c, 1));
		ASSERT_EQ(0, kfab_ioctl(self->fd, KFAB_IOC_TEST_FAULT, &f));
		EXPECT_EQ(-EFAULT, av_open(self->fd, self->dom, name,
					   KFAB_AV_OPEN_EXCL, 0600, NULL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_NE(20, WEXITSTATUS(status));
		EXPECT_NE(10, WEXITSTATUS(status));
		if (!WEXITSTATUS(status))
			hits++;
		close(go[0]);
		close(go[1]);
		/* No name is left behind either way. */
		EXPECT_EQ(-ENOENT, av_open(self->fd, self->dom, name,
					   KFAB_AV_OPEN_NO_CREATE, 0, NULL));
	}
	TH_LOG("%d of 40 rounds opened the name in the window", hits);
}

/* The administrator's way: tools/kfabctl (vm-suite runs from selftests/). */
TEST_F(ioctl, kfabctl_creates_and_removes_a_shared_av)
{
	const char *name = test_name("admin");
	struct open_expect rw = { name, 0, 0 };
	struct kfab_av_open o;
	char cmd[256];

	RETURN_IF_SETUP_SKIPPED();
	if (access("../tools/kfabctl", X_OK))
		SKIP(return, "tools/kfabctl not built");
	snprintf(cmd, sizeof(cmd),
		 "../tools/kfabctl av create %s --mode 0660 --owner 0:3000 --count 10 >/dev/null",
		 name);
	ASSERT_EQ(0, system(cmd));
	/* A second create of the name is refused. */
	snprintf(cmd, sizeof(cmd), "../tools/kfabctl av create %s 2>/dev/null",
		 name);
	EXPECT_NE(0, system(cmd));
	/* It outlives kfabctl; the group may use it, others may not. */
	ASSERT_EQ(0, av_open(self->fd, self->dom, name, KFAB_AV_OPEN_NO_CREATE,
			     0, &o));
	EXPECT_LE(10, o.out_count);
	EXPECT_EQ(0, as_user(1000, 3000, child_open, &rw));
	rw.rc = -EACCES;
	EXPECT_EQ(0, as_user(1000, 1000, child_open, &rw));
	snprintf(cmd, sizeof(cmd), "../tools/kfabctl av list | grep -q ' name %s '",
		 name);
	EXPECT_EQ(0, system(cmd));
	snprintf(cmd, sizeof(cmd), "../tools/kfabctl av rm %s", name);
	EXPECT_EQ(0, system(cmd));
	EXPECT_NE(0, system(cmd));
	EXPECT_EQ(-ENOENT, av_open(self->fd, self->dom, name,
				   KFAB_AV_OPEN_NO_CREATE, 0, NULL));
}

/* ---- fi_av(3) through the provider ---- */

FIXTURE(fi_av) {
	struct kfab_test_fi fi;
};

FIXTURE_VARIANT(fi_av) {
	enum fi_av_type type;
	bool named;
};

FIXTURE_VARIANT_ADD(fi_av, table) { .type = FI_AV_TABLE };
FIXTURE_VARIANT_ADD(fi_av, map) { .type = FI_AV_MAP };
FIXTURE_VARIANT_ADD(fi_av, unspec) { .type = FI_AV_UNSPEC };
FIXTURE_VARIANT_ADD(fi_av, named) { .type = FI_AV_TABLE, .named = true };

FIXTURE_SETUP(fi_av)
{
	self->fi = (struct kfab_test_fi){ 0 };
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "%s absent: needs kfab.ko (VM)", KFAB_DEV);
	test_fi_domain_open(&self->fi, kfab_test_hints());
}

FIXTURE_TEARDOWN(fi_av)
{
	test_fi_close(&self->fi);
}

static struct fi_av_attr av_attr(const FIXTURE_VARIANT(fi_av) *v,
				 const char *what)
{
	struct fi_av_attr attr = { .type = v->type };

	if (v->named)
		attr.name = strdup(test_name(what));
	return attr;
}

TEST_F(fi_av, open_reports_the_type_and_inserts_sequential_indices)
{
	struct fi_av_attr attr = av_attr(variant, "seq");
	struct kfab_addr addrs[3] = { local_addr(1), local_addr(2),
				      local_addr(3) };
	struct kfab_addr got;
	fi_addr_t fa[3];
	size_t len;
	struct fid_av *av;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, &attr));
	EXPECT_EQ(variant->type == FI_AV_UNSPEC ? FI_AV_TABLE : variant->type,
		  attr.type);
	EXPECT_EQ(FI_CLASS_AV, av->fid.fclass);
	ASSERT_EQ(3, fi_av_insert(av, addrs, 3, fa, 0, NULL));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ((fi_addr_t)i, fa[i]);
		len = sizeof(got);
		ASSERT_EQ(0, fi_av_lookup(av, fa[i], &got, &len));
		EXPECT_EQ(sizeof(got), len);
		EXPECT_EQ(0, memcmp(&addrs[i], &got, sizeof(got)));
	}
	/* fi_addr may be NULL: the indices are known. */
	EXPECT_EQ(0, fi_av_insert(av, addrs, 0, NULL, 0, NULL));
	addrs[0] = local_addr(4);
	EXPECT_EQ(1, fi_av_insert(av, addrs, 1, NULL, 0, NULL));
	len = sizeof(got);
	ASSERT_EQ(0, fi_av_lookup(av, 3, &got, &len));
	EXPECT_EQ(4, ep_of(&got));
	EXPECT_EQ(0, fi_close(&av->fid));
	free((void *)attr.name);
}

TEST_F(fi_av, lookup_truncates_and_reports_the_size)
{
	struct fi_av_attr attr = av_attr(variant, "trunc");
	struct kfab_addr a = local_addr(0x1122334455667788ULL), got;
	unsigned char small[4];
	fi_addr_t fa;
	size_t len;
	struct fid_av *av;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	ASSERT_EQ(1, fi_av_insert(av, &a, 1, &fa, 0, NULL));
	len = sizeof(small);
	ASSERT_EQ(0, fi_av_lookup(av, fa, small, &len));
	EXPECT_EQ(sizeof(struct kfab_addr), len);
	EXPECT_EQ(0, memcmp(small, &a, sizeof(small)));
	len = 0;
	EXPECT_EQ(0, fi_av_lookup(av, fa, NULL, &len));
	EXPECT_EQ(sizeof(struct kfab_addr), len);
	/* Bogus fi_addr values. */
	len = sizeof(got);
	EXPECT_EQ(-FI_EINVAL, fi_av_lookup(av, fa + 1, &got, &len));
	EXPECT_EQ(-FI_EINVAL, fi_av_lookup(av, FI_ADDR_NOTAVAIL, &got, &len));
	EXPECT_EQ(-FI_EINVAL, fi_av_lookup(av, 1ULL << 40, &got, &len));
	EXPECT_EQ(-FI_EINVAL, fi_av_lookup(av, fa, &got, NULL));
	len = sizeof(got);
	EXPECT_EQ(-FI_EINVAL, fi_av_lookup(av, fa, NULL, &len));
	EXPECT_EQ(0, fi_close(&av->fid));
	free((void *)attr.name);
}

TEST_F(fi_av, remove_then_reinsert_takes_the_lowest_index)
{
	struct fi_av_attr attr = av_attr(variant, "reins");
	struct kfab_addr addrs[4] = { local_addr(1), local_addr(2),
				      local_addr(3), local_addr(4) };
	fi_addr_t fa[4], again, bogus = 1000;
	struct kfab_addr got;
	size_t len = sizeof(got);
	struct fid_av *av;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	ASSERT_EQ(4, fi_av_insert(av, addrs, 4, fa, 0, NULL));
	ASSERT_EQ(0, fi_av_remove(av, &fa[1], 2, 0));
	EXPECT_EQ(-FI_EINVAL, fi_av_lookup(av, fa[1], &got, &len));
	ASSERT_EQ(1, fi_av_insert(av, &addrs[2], 1, &again, 0, NULL));
	EXPECT_EQ(fa[1], again);
	ASSERT_EQ(1, fi_av_insert(av, &addrs[1], 1, &again, 0, NULL));
	EXPECT_EQ(fa[2], again);

	EXPECT_EQ(-FI_EINVAL, fi_av_remove(av, &bogus, 1, 0));
	EXPECT_EQ(-FI_EINVAL, fi_av_remove(av, NULL, 1, 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_av_remove(av, fa, 1, FI_MORE));
	bogus = FI_ADDR_NOTAVAIL;
	EXPECT_EQ(-FI_EINVAL, fi_av_remove(av, &bogus, 1, 0));
	EXPECT_EQ(0, fi_av_remove(av, fa, 0, 0));
	/* Nothing was removed by the refusals. */
	EXPECT_EQ(0, fi_av_lookup(av, fa[0], &got, &len));
	EXPECT_EQ(0, fi_close(&av->fid));
	free((void *)attr.name);
}

TEST_F(fi_av, failed_inserts_are_fi_addr_notavail_and_sync_err_says_why)
{
	struct fi_av_attr attr = av_attr(variant, "fail");
	struct kfab_addr addrs[3] = { local_addr(1), { .family = 9, .ep = htobe64(2) },
				      local_addr(3) };
	fi_addr_t fa[3];
	int errs[3] = { -1, -1, -1 };
	struct fid_av *av;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	EXPECT_EQ(2, fi_av_insert(av, addrs, 3, fa, FI_SYNC_ERR, errs));
	EXPECT_EQ(0, fa[0]);
	EXPECT_EQ(FI_ADDR_NOTAVAIL, fa[1]);
	EXPECT_EQ(1, fa[2]);
	EXPECT_EQ(0, errs[0]);
	EXPECT_EQ(-FI_EINVAL, errs[1]);
	EXPECT_EQ(0, errs[2]);
	/* FI_SYNC_ERR needs its array. */
	EXPECT_EQ(-FI_EINVAL, fi_av_insert(av, addrs, 1, fa, FI_SYNC_ERR, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insert(av, NULL, 1, fa, 0, NULL));
	EXPECT_EQ(-FI_EBADFLAGS, fi_av_insert(av, addrs, 1, fa, FI_PEEK, NULL));
	/* FI_AV_USER_ID reads ids from fi_addr: it must be there. */
	EXPECT_EQ(-FI_EINVAL, fi_av_insert(av, addrs, 1, NULL, FI_AV_USER_ID,
					   NULL));
	fa[0] = 0xabcdef;
	EXPECT_EQ(1, fi_av_insert(av, &addrs[0], 1, fa, FI_AV_USER_ID, NULL));
	EXPECT_EQ(0, fa[0]);
	/* Sync inserts with FI_MORE are carried out at once. */
	addrs[0] = local_addr(77);
	EXPECT_EQ(1, fi_av_insert(av, addrs, 1, fa, FI_MORE, NULL));
	EXPECT_EQ(2, fa[0]);
	EXPECT_EQ(0, fi_close(&av->fid));
	free((void *)attr.name);
}

TEST_F(fi_av, fi_event_reports_on_the_bound_eq)
{
	struct fi_av_attr attr = av_attr(variant, "event");
	struct fi_eq_attr eq_attr = { .size = 8, .wait_obj = FI_WAIT_NONE };
	struct kfab_addr addrs[3] = { local_addr(1), { .family = 9 },
				      local_addr(3) };
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_entry entry;
	struct kfab_addr many[20];
	fi_addr_t fa[3], fb[2], fc;
	uint32_t event;
	struct fid_eq *eq;
	struct fid_av *av;
	int ctx1, ctx2, ctx3, i, n = 0;

	RETURN_IF_SETUP_SKIPPED();
	attr.flags = FI_EVENT;
	ASSERT_EQ(0, fi_eq_open(self->fi.fabric, &eq_attr, &eq, NULL));
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	EXPECT_EQ(-FI_ENOEQ, fi_av_insert(av, addrs, 3, fa, 0, &ctx1));
	EXPECT_EQ(-FI_EBADFLAGS, fi_av_bind(av, &eq->fid, 1));
	EXPECT_EQ(-FI_EINVAL, fi_av_bind(av, &self->fi.domain->fid, 0));
	ASSERT_EQ(0, fi_av_bind(av, &eq->fid, 0));
	EXPECT_EQ(-FI_EBUSY, fi_av_bind(av, &eq->fid, 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_av_insert(av, addrs, 3, fa, FI_SYNC_ERR,
					      &ctx1));

	EXPECT_EQ(0, fi_av_insert(av, addrs, 3, fa, 0, &ctx1));
	EXPECT_EQ(-FI_EAVAIL, fi_eq_read(eq, &event, &entry, sizeof(entry), 0));
	ASSERT_EQ(sizeof(err), fi_eq_readerr(eq, &err, 0));
	EXPECT_EQ(&av->fid, err.fid);
	EXPECT_EQ(&ctx1, err.context);
	EXPECT_EQ(1, err.data);
	EXPECT_EQ(FI_EINVAL, err.err);
	ASSERT_EQ(sizeof(entry), fi_eq_read(eq, &event, &entry, sizeof(entry),
					    0));
	EXPECT_EQ(FI_AV_COMPLETE, event);
	EXPECT_EQ(&ctx1, entry.context);
	EXPECT_EQ(2, entry.data);
	EXPECT_EQ(FI_ADDR_NOTAVAIL, fa[1]);
	EXPECT_EQ(1, fa[2]);

	/* FI_MORE: nothing happens until the batch ends, then all, in order. */
	addrs[0] = local_addr(10);
	addrs[1] = local_addr(11);
	addrs[2] = local_addr(12);
	EXPECT_EQ(0, fi_av_insert(av, addrs, 2, fb, FI_MORE, &ctx2));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(eq, &event, &entry, sizeof(entry), 0));
	EXPECT_EQ(0, fi_av_insert(av, &addrs[2], 1, &fc, 0, &ctx3));
	ASSERT_EQ(sizeof(entry), fi_eq_read(eq, &event, &entry, sizeof(entry),
					    0));
	EXPECT_EQ(&ctx2, entry.context);
	EXPECT_EQ(2, entry.data);
	ASSERT_EQ(sizeof(entry), fi_eq_read(eq, &event, &entry, sizeof(entry),
					    0));
	EXPECT_EQ(&ctx3, entry.context);
	EXPECT_EQ(1, entry.data);
	EXPECT_EQ(2, fb[0]);
	EXPECT_EQ(3, fb[1]);
	EXPECT_EQ(4, fc);

	/* Every event is kept, even beyond the EQ's size. */
	for (i = 0; i < 20; i++)
		many[i] = (struct kfab_addr){ .family = 9 };
	EXPECT_EQ(0, fi_av_insert(av, many, 20, NULL, 0, &ctx1));
	while (fi_eq_readerr(eq, &err, 0) > 0)
		n++;
	EXPECT_EQ(20, n);
	ASSERT_EQ(sizeof(entry), fi_eq_read(eq, &event, &entry, sizeof(entry),
					    0));
	EXPECT_EQ(0, entry.data);

	/* The EQ stays while the AV refers to it. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&eq->fid));
	EXPECT_EQ(0, fi_close(&av->fid));
	EXPECT_EQ(0, fi_close(&eq->fid));
	free((void *)attr.name);
}

TEST_F(fi_av, close_carries_out_an_unfinished_batch)
{
	struct fi_av_attr attr = av_attr(variant, "batch");
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct kfab_addr a = local_addr(5);
	struct fi_eq_entry entry;
	uint32_t event;
	fi_addr_t fa;
	struct fid_eq *eq;
	struct fid_av *av;

	RETURN_IF_SETUP_SKIPPED();
	attr.flags = FI_EVENT;
	ASSERT_EQ(0, fi_eq_open(self->fi.fabric, &eq_attr, &eq, NULL));
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	ASSERT_EQ(0, fi_av_bind(av, &eq->fid, 0));
	EXPECT_EQ(0, fi_av_insert(av, &a, 1, &fa, FI_MORE, NULL));
	EXPECT_EQ(0, fi_close(&av->fid));
	ASSERT_EQ(sizeof(entry), fi_eq_read(eq, &event, &entry, sizeof(entry),
					    0));
	EXPECT_EQ(FI_AV_COMPLETE, event);
	EXPECT_EQ(1, entry.data);
	EXPECT_EQ(0, fi_close(&eq->fid));
	free((void *)attr.name);
}

/* A node's address (@ip IPv4 or IPv6) with a service or module number */
static struct kfab_addr inet_addr_of(const char *ip, uint16_t port,
				     uint64_t ep)
{
	return kfab_test_addr(KFAB_ADDR_INET, ip, port, ep,
			      ep > KFAB_SERVICE_MAX ? TEST_INCARNATION : 0);
}

/* Does the AV hold @want at @fa? */
static bool av_holds(struct fid_av *av, fi_addr_t fa,
		     const struct kfab_addr *want)
{
	struct kfab_addr got;
	size_t len = sizeof(got);

	return fa != FI_ADDR_NOTAVAIL && !fi_av_lookup(av, fa, &got, &len) &&
	       len == sizeof(got) && !memcmp(&got, want, sizeof(got));
}

/* fi_av_straddr(@av, @a): the string, with *len checked */
static bool straddr_is(struct fid_av *av, struct kfab_addr a,
		       const char *want)
{
	char buf[128];
	size_t len = sizeof(buf);

	return fi_av_straddr(av, &a, buf, &len) == buf &&
	       !strcmp(want, buf) && len == strlen(want) + 1;
}

/* fi_av_straddr: every form, truncation, and what is no address. */
TEST_F(fi_av, straddr_prints_every_form)
{
	struct fi_av_attr attr = av_attr(variant, "str");
	struct kfab_addr a;
	char buf[128], tiny[8];
	struct fid_av *av;
	size_t len;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	EXPECT_TRUE(straddr_is(av, local_addr(42), "fi_kfab://local/42"));
	EXPECT_TRUE(straddr_is(av, local_addr(70000),
			       "fi_kfab://local/70000.6b666162"));
	EXPECT_TRUE(straddr_is(av, inet_addr_of("10.0.0.1", 7471, 5),
			       "fi_kfab://10.0.0.1:7471/5"));
	EXPECT_TRUE(straddr_is(av, inet_addr_of("fd00::1", 9000, 65535),
			       "fi_kfab://[fd00::1]:9000/65535"));
	EXPECT_TRUE(straddr_is(av, inet_addr_of("2001:db8::2", 1, UINT64_MAX),
			       "fi_kfab://[2001:db8::2]:1/18446744073709551615.6b666162"));
	/* What is no address says so, with its bytes. */
	a = local_addr(42);
	a.family = 9;
	len = sizeof(buf);
	EXPECT_TRUE(buf == fi_av_straddr(av, &a, buf, &len));
	EXPECT_EQ(0, strncmp("fi_kfab://invalid/09", buf, 20));
	EXPECT_EQ(strlen(buf) + 1, len);

	/* Too small: cut, with a NUL, and the size needed. */
	a = local_addr(42);
	len = sizeof(tiny);
	EXPECT_TRUE(tiny == fi_av_straddr(av, &a, tiny, &len));
	EXPECT_STREQ("fi_kfab", tiny);
	EXPECT_EQ(strlen("fi_kfab://local/42") + 1, len);
	len = 0;
	EXPECT_TRUE(NULL == fi_av_straddr(av, &a, NULL, &len));
	EXPECT_EQ(strlen("fi_kfab://local/42") + 1, len);
	EXPECT_TRUE(NULL == fi_av_straddr(av, &a, buf, NULL));
	EXPECT_EQ(0, fi_close(&av->fid));
	free((void *)attr.name);
}

/*
 * fi_av_insertsvc: a node (NULL and "local": this machine; a numeric
 * address or host name, with a port or not) and a service, or a whole
 * "fi_kfab://..." and no service.  Exact answers for what names nothing.
 */
TEST_F(fi_av, insertsvc_takes_nodes_services_and_strings)
{
	struct fi_av_attr attr = av_attr(variant, "svc");
	struct kfab_addr want;
	fi_addr_t fa[10], again;
	char str[128];
	int errs[1] = { 1 };
	struct fid_av *av;
	size_t len;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	ASSERT_EQ(1, fi_av_insertsvc(av, NULL, "42", &fa[0], 0, NULL));
	want = local_addr(42);
	EXPECT_TRUE(av_holds(av, fa[0], &want));
	ASSERT_EQ(1, fi_av_insertsvc(av, "local", "43", &fa[1], 0, NULL));
	want = local_addr(43);
	EXPECT_TRUE(av_holds(av, fa[1], &want));
	ASSERT_EQ(1, fi_av_insertsvc(av, "10.0.0.1", "5", &fa[2], 0, NULL));
	want = inet_addr_of("10.0.0.1", KFAB_PORT_DEFAULT, 5);
	EXPECT_TRUE(av_holds(av, fa[2], &want));
	ASSERT_EQ(1, fi_av_insertsvc(av, "10.0.0.1:9000", "5", &fa[3], 0,
				     NULL));
	want = inet_addr_of("10.0.0.1", 9000, 5);
	EXPECT_TRUE(av_holds(av, fa[3], &want));
	ASSERT_EQ(1, fi_av_insertsvc(av, "fd00::1", "6", &fa[4], 0, NULL));
	want = inet_addr_of("fd00::1", KFAB_PORT_DEFAULT, 6);
	EXPECT_TRUE(av_holds(av, fa[4], &want));
	ASSERT_EQ(1, fi_av_insertsvc(av, "[fd00::1]:9000", "65535", &fa[5], 0,
				     NULL));
	want = inet_addr_of("fd00::1", 9000, 65535);
	EXPECT_TRUE(av_holds(av, fa[5], &want));
	ASSERT_EQ(1, fi_av_insertsvc(av, "localhost", "7", &fa[6], 0, NULL));
	len = sizeof(want);
	ASSERT_EQ(0, fi_av_lookup(av, fa[6], &want, &len));
	EXPECT_EQ(KFAB_ADDR_INET, want.family);
	EXPECT_EQ(7, ep_of(&want));
	/* A whole address; what straddr prints comes back to the same entry. */
	ASSERT_EQ(1, fi_av_insertsvc(av, "fi_kfab://10.0.0.2/70000.6b666162",
				     NULL, &fa[7], 0, NULL));
	want = inet_addr_of("10.0.0.2", KFAB_PORT_DEFAULT, 70000);
	EXPECT_TRUE(av_holds(av, fa[7], &want));
	len = sizeof(str);
	fi_av_straddr(av, &want, str, &len);
	ASSERT_EQ(1, fi_av_insertsvc(av, str, NULL, &again, 0, NULL));
	EXPECT_EQ(fa[7], again);
	/* FI_SYNC_ERR works here too. */
	ASSERT_EQ(1, fi_av_insertsvc(av, "local", "44", &fa[8], FI_SYNC_ERR,
				     errs));
	EXPECT_EQ(0, errs[0]);

	/* No endpoint named: -FI_EINVAL, nothing inserted. */
	fa[9] = 12345;
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, NULL, NULL, &fa[9], 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, "local", NULL, &fa[9], 0,
					      NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, NULL, "0", &fa[9], 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, NULL, "65536", &fa[9], 0,
					      NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, NULL, "4x2", &fa[9], 0,
					      NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, NULL, "-1", &fa[9], 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, NULL, "042", &fa[9], 0,
					      NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, "fi_kfab://local/5", "5",
					      &fa[9], 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, "fi_kfab://local", NULL,
					      &fa[9], 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, "fi_kfab://local/0", NULL,
					      &fa[9], 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, "fi_kfab://any/5", NULL,
					      &fa[9], 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, "fi_sockaddr://1.2.3.4:5",
					      NULL, &fa[9], 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, "local:7471", "5", &fa[9], 0,
					      NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, "0", "42", &fa[9], 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, "0.0.0.0", "42", &fa[9], 0,
					      NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsvc(av, "10.0.0.1:0", "42", &fa[9], 0,
					      NULL));
	EXPECT_EQ(-FI_ENODATA, fi_av_insertsvc(av, "no-such-node.invalid", "5",
					       &fa[9], 0, NULL));
	EXPECT_EQ(-FI_EBADFLAGS, fi_av_insertsvc(av, NULL, "5", &fa[9],
						 FI_COMPLETION, NULL));
	EXPECT_EQ(12345, fa[9]);
	EXPECT_EQ(0, fi_close(&av->fid));
	free((void *)attr.name);
}

/*
 * fi_av_insertsym: fi_av(3)'s order (every service of a node before the
 * next node), numeric nodes counting up across octets, and what fails.
 */
TEST_F(fi_av, insertsym_counts_nodes_then_services)
{
	static const char *const ips[3] = { "10.0.0.254", "10.0.0.255",
					    "10.0.1.0" };
	struct fi_av_attr attr = av_attr(variant, "sym");
	struct kfab_addr want;
	fi_addr_t fa[6];
	struct fid_av *av;
	int i, j;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	ASSERT_EQ(6, fi_av_insertsym(av, "10.0.0.254", 3, "100", 2, fa, 0,
				     NULL));
	for (i = 0; i < 3; i++) {
		for (j = 0; j < 2; j++) {
			want = inet_addr_of(ips[i], KFAB_PORT_DEFAULT, 100 + j);
			EXPECT_TRUE(av_holds(av, fa[i * 2 + j], &want)) {
				TH_LOG("node %d service %d", i, j);
			}
		}
	}
	ASSERT_EQ(3, fi_av_insertsym(av, NULL, 1, "7", 3, fa, 0, NULL));
	for (j = 0; j < 3; j++) {
		want = local_addr(7 + j);
		EXPECT_TRUE(av_holds(av, fa[j], &want));
	}
	ASSERT_EQ(2, fi_av_insertsym(av, "[fd00::ff]:9000", 2, "65535", 1, fa,
				     0, NULL));
	want = inet_addr_of("fd00::ff", 9000, 65535);
	EXPECT_TRUE(av_holds(av, fa[0], &want));
	want = inet_addr_of("fd00::100", 9000, 65535);
	EXPECT_TRUE(av_holds(av, fa[1], &want));

	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "10.0.0.1", 0, "1", 1, fa, 0,
					      NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "10.0.0.1", 1, "1", 0, fa, 0,
					      NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "10.0.0.1", 1, "65535", 2,
					      fa, 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "10.0.0.1", 1, "0", 1, fa, 0,
					      NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "10.0.0.1", 1, NULL, 1, fa,
					      0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "local", 2, "1", 1, fa, 0,
					      NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "255.255.255.255", 2, "1", 1,
					      fa, 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "localhost", 2, "1", 1, fa,
					      0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "fi_kfab://local/5", 1, "1",
					      1, fa, 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "0", 1, "1", 1, fa, 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "10.0.0.1", SIZE_MAX, "1",
					      SIZE_MAX, fa, 0, NULL));
	EXPECT_EQ(-FI_ENODATA, fi_av_insertsym(av, "no-such-node.invalid", 1,
					       "1", 1, fa, 0, NULL));
	/* Several nodes of a name: it must end in a number. */
	EXPECT_EQ(-FI_EINVAL, fi_av_insertsym(av, "no-such-node1.invalid", 2,
					      "1", 1, fa, 0, NULL));
	EXPECT_EQ(-FI_EBADFLAGS, fi_av_insertsym(av, "10.0.0.1", 1, "1", 1, fa,
						 FI_COMPLETION, NULL));
	EXPECT_EQ(0, fi_close(&av->fid));
	free((void *)attr.name);
}

/*
 * Host names count up by their numeric suffix, keeping its width (fi_av(3):
 * "host10", "host11"), each one looked up: here in an /etc/hosts of this
 * test's own mount namespace.
 */
TEST_F(fi_av, insertsym_counts_host_names_up)
{
	static const char hosts[] = "10.9.0.8 kfabnode08\n"
				    "10.9.0.9 kfabnode09\n"
				    "10.9.0.10 kfabnode10\n"
				    "fd00::99 kfabnode99\n";
	char path[] = "/tmp/kfab_av_hostsXXXXXX";
	struct fi_av_attr attr = av_attr(variant, "hosts");
	struct kfab_addr want;
	fi_addr_t fa[6];
	struct fid_av *av;
	int fd;

	RETURN_IF_SETUP_SKIPPED();
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	ASSERT_EQ(sizeof(hosts) - 1, write(fd, hosts, sizeof(hosts) - 1));
	close(fd);
	if (unshare(CLONE_NEWNS) ||
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) ||
	    mount(path, "/etc/hosts", "none", MS_BIND, NULL)) {
		unlink(path);
		SKIP(return, "no /etc/hosts of our own: %s", strerror(errno));
	}
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	ASSERT_EQ(6, fi_av_insertsym(av, "kfabnode08:9000", 3, "1", 2, fa, 0,
				     NULL));
	want = inet_addr_of("10.9.0.8", 9000, 1);
	EXPECT_TRUE(av_holds(av, fa[0], &want));
	want = inet_addr_of("10.9.0.8", 9000, 2);
	EXPECT_TRUE(av_holds(av, fa[1], &want));
	want = inet_addr_of("10.9.0.9", 9000, 1);
	EXPECT_TRUE(av_holds(av, fa[2], &want));
	want = inet_addr_of("10.9.0.10", 9000, 2);
	EXPECT_TRUE(av_holds(av, fa[5], &want));
	/* One name too many: kfabnode11 resolves to nothing. */
	EXPECT_EQ(-FI_ENODATA, fi_av_insertsym(av, "kfabnode10", 2, "1", 1, fa,
					       0, NULL));
	/* A name that is IPv6 in /etc/hosts */
	ASSERT_EQ(1, fi_av_insertsvc(av, "kfabnode99", "3", fa, 0, NULL));
	want = inet_addr_of("fd00::99", KFAB_PORT_DEFAULT, 3);
	EXPECT_TRUE(av_holds(av, fa[0], &want));
	EXPECT_EQ(0, fi_close(&av->fid));
	umount("/etc/hosts");
	unlink(path);
	free((void *)attr.name);
}

/*
 * A domain opened with FI_ADDR_STR: fi_av_insert() takes strings (an
 * array of char *), fi_av_lookup() and fi_av_straddr() give them.
 */
FIXTURE(fi_av_str) {
	struct kfab_test_fi fi;
	struct fid_av *av;
};

FIXTURE_SETUP(fi_av_str)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fi_info *hints = kfab_test_hints();

	self->fi = (struct kfab_test_fi){ 0 };
	self->av = NULL;
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "%s absent: needs kfab.ko (VM)", KFAB_DEV);
	ASSERT_NE(NULL, hints);
	hints->addr_format = FI_ADDR_STR;
	test_fi_domain_open(&self->fi, hints);
	ASSERT_EQ(FI_ADDR_STR, self->fi.info->addr_format);
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &self->av, NULL));
}

FIXTURE_TEARDOWN(fi_av_str)
{
	if (self->av)
		fi_close(&self->av->fid);
	test_fi_close(&self->fi);
}

TEST_F(fi_av_str, insert_lookup_and_straddr_take_strings)
{
	const char *strs[4] = {
		"fi_kfab://local/42",
		"fi_kfab://local/0",		/* no endpoint */
		"fi_kfab://10.0.0.1/70000.0000abcd",
		"junk",
	};
	char buf[128], small[12];
	fi_addr_t fa[4];
	int errs[4];
	size_t len;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(2, fi_av_insert(self->av, strs, 4, fa, FI_SYNC_ERR, errs));
	EXPECT_EQ(0, errs[0]);
	EXPECT_EQ(-FI_EINVAL, errs[1]);
	EXPECT_EQ(0, errs[2]);
	EXPECT_EQ(-FI_EINVAL, errs[3]);
	EXPECT_EQ(FI_ADDR_NOTAVAIL, fa[1]);
	EXPECT_EQ(FI_ADDR_NOTAVAIL, fa[3]);

	len = sizeof(buf);
	ASSERT_EQ(0, fi_av_lookup(self->av, fa[0], buf, &len));
	EXPECT_STREQ("fi_kfab://local/42", buf);
	EXPECT_EQ(strlen(buf) + 1, len);
	len = sizeof(buf);
	ASSERT_EQ(0, fi_av_lookup(self->av, fa[2], buf, &len));
	EXPECT_STREQ("fi_kfab://10.0.0.1:7471/70000.0000abcd", buf);
	EXPECT_EQ(strlen(buf) + 1, len);
	/* Too small: cut with a NUL, and the size needed */
	len = sizeof(small);
	ASSERT_EQ(0, fi_av_lookup(self->av, fa[2], small, &len));
	EXPECT_STREQ("fi_kfab://1", small);
	EXPECT_EQ(strlen(buf) + 1, len);

	/* straddr reads a string: printed back in the canonical form */
	len = sizeof(buf);
	EXPECT_TRUE(buf == fi_av_straddr(self->av, "fi_kfab://[FD00::1]/5",
					 buf, &len));
	EXPECT_STREQ("fi_kfab://[fd00::1]:7471/5", buf);
	len = sizeof(buf);
	EXPECT_TRUE(buf == fi_av_straddr(self->av, "junk", buf, &len));
	EXPECT_STREQ("fi_kfab://invalid", buf);

	/* insertsvc and insertsym work the same in either format */
	ASSERT_EQ(1, fi_av_insertsvc(self->av, "10.0.0.3", "9", fa, 0, NULL));
	len = sizeof(buf);
	ASSERT_EQ(0, fi_av_lookup(self->av, fa[0], buf, &len));
	EXPECT_STREQ("fi_kfab://10.0.0.3:7471/9", buf);
}

TEST_F(fi_av, rx_ctx_bits_leave_the_index_below_them)
{
	struct fi_av_attr attr = av_attr(variant, "rx");
	struct kfab_addr a = local_addr(9), got;
	size_t len = sizeof(got);
	fi_addr_t fa, rx;
	struct fid_av *av;

	RETURN_IF_SETUP_SKIPPED();
	attr.rx_ctx_bits = 40;
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, &attr, &av, NULL));
	attr.rx_ctx_bits = -1;
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, &attr, &av, NULL));
	attr.rx_ctx_bits = 4;
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	ASSERT_EQ(1, fi_av_insert(av, &a, 1, &fa, 0, NULL));
	ASSERT_EQ(0, fi_av_lookup(av, fi_rx_addr(fa, 3, 4), &got, &len));
	EXPECT_EQ(9, ep_of(&got));
	rx = fi_rx_addr(fa, 1, 4);
	ASSERT_EQ(0, fi_av_remove(av, &rx, 1, 0));
	EXPECT_EQ(-FI_EINVAL, fi_av_lookup(av, fa, &got, &len));
	EXPECT_EQ(0, fi_close(&av->fid));
	free((void *)attr.name);
}

TEST_F(fi_av, open_refuses_bad_attributes)
{
	struct fi_av_attr attr = { .type = variant->type };
	struct fid_av *av;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, NULL, &av, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, &attr, NULL, NULL));
	attr.flags = FI_READ;
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, &attr, &av, NULL));
	attr.flags = FI_TAGGED;
	EXPECT_EQ(-FI_EBADFLAGS, fi_av_open(self->fi.domain, &attr, &av, NULL));
	attr.flags = 0;
	attr.type = 77;
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, &attr, &av, NULL));
	attr.type = variant->type;
	attr.count = (size_t)UINT32_MAX + 1;
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, &attr, &av, NULL));
	attr.count = 0;
	attr.name = "bad name";
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, &attr, &av, NULL));
	attr.name = test_name("absent");
	attr.flags = FI_READ;
	EXPECT_EQ(-FI_ENOENT, fi_av_open(self->fi.domain, &attr, &av, NULL));
	/* FI_SYMMETRIC is a hint kfab accepts. */
	attr.name = NULL;
	attr.flags = FI_SYMMETRIC;
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	EXPECT_EQ(0, fi_close(&av->fid));
}

TEST_F(fi_av, named_map_av_returns_its_map_addr)
{
	struct fi_av_attr attr = { .type = FI_AV_MAP,
				   .name = test_name("mapaddr") };
	struct fi_av_attr again;
	struct fid_av *av, *av2;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	EXPECT_NE(NULL, attr.map_addr);
	again = attr;
	again.map_addr = NULL;
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &again, &av2, NULL));
	EXPECT_EQ(attr.map_addr, again.map_addr);
	/* Another type than the AV's: refused. */
	again.type = FI_AV_TABLE;
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, &again, &av, NULL));
	EXPECT_EQ(0, fi_close(&av2->fid));
	EXPECT_EQ(0, fi_close(&av->fid));
}

/*
 * The parent inserts into a named AV; a forked child opens it FI_READ, sees
 * the same fi_addr_t for the same addresses, sees an insert the parent
 * makes later without a call of its own, and can change nothing.
 */
TEST_F(fi_av, forked_reader_shares_a_named_av)
{
	struct fi_av_attr attr = { .type = variant->type,
				   .name = test_name("fork") };
	struct kfab_addr addrs[3] = { local_addr(21), local_addr(22),
				      local_addr(23) };
	int to_child[2], to_parent[2], status;
	fi_addr_t fa[3];
	struct fid_av *av;
	pid_t pid;
	char c;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	ASSERT_EQ(2, fi_av_insert(av, addrs, 2, fa, 0, NULL));
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(to_parent));

	pid = fork();
	if (!pid) {
		struct fi_av_attr ro = { .name = attr.name, .flags = FI_READ };
		struct fid_fabric *fabric;
		struct fid_domain *domain;
		struct kfab_addr got;
		struct fid_av *rav;
		fi_addr_t fb;
		size_t len;
		int i;

		/* A process of its own: its own fabric, domain and AV. */
		if (fi_fabric(self->fi.info->fabric_attr, &fabric, NULL) ||
		    fi_domain(fabric, self->fi.info, &domain, NULL) ||
		    fi_av_open(domain, &ro, &rav, NULL))
			_exit(1);
		for (i = 0; i < 2; i++) {
			len = sizeof(got);
			if (fi_av_lookup(rav, fa[i], &got, &len) ||
			    memcmp(&got, &addrs[i], sizeof(got)))
				_exit(2);
		}
		if (fi_av_insert(rav, &addrs[2], 1, &fb, 0, NULL) != -FI_EPERM ||
		    fi_av_remove(rav, fa, 1, 0) != -FI_EPERM)
			_exit(3);
		if (write(to_parent[1], "r", 1) != 1 ||
		    read(to_child[0], &c, 1) != 1)
			_exit(4);
		len = sizeof(got);
		if (fi_av_lookup(rav, 2, &got, &len) || ep_of(&got) != 23)
			_exit(5);
		if (fi_close(&rav->fid) || fi_close(&domain->fid) ||
		    fi_close(&fabric->fid))
			_exit(6);
		_exit(0);
	}
	ASSERT_EQ(1, read(to_parent[0], &c, 1));
	ASSERT_EQ(1, fi_av_insert(av, &addrs[2], 1, &fa[2], 0, NULL));
	EXPECT_EQ(2, fa[2]);
	ASSERT_EQ(1, write(to_child[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, fi_close(&av->fid));
}

TEST_HARNESS_MAIN
