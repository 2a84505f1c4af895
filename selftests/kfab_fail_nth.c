// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Walk every failure point of every command that allocates or answers, the
 * way iommufd's fail_nth selftest does: make the 1st, 2nd, ... pass fail
 * until the command runs through with the fault unfired, and check after
 * each failure that the command failed cleanly and left nothing behind.
 *
 * Two sources of faults:
 *  - kfab's own fault points (KFAB_IOC_TEST_FAULT, a module built with
 *    CONFIG_KFAB_TEST): its allocations and the copy of the answer to
 *    user space, on any kernel, the stock one included.  This is the walk
 *    that always runs; the ioctl itself is tested here too (FIXTURE(fault));
 *  - the kernel's failslab/fail_page_alloc with /proc/thread-self/fail-nth,
 *    which fails every slab and page allocation the syscall makes, kfab's
 *    and the core kernel's alike: an extra on the debug kernel only
 *    (CONFIG_FAULT_INJECTION), for the allocator's own failures.
 *
 * "Left nothing behind" is checked through id reuse: object ids are the
 * lowest free ones, so a leaked or half-published object would shift the
 * next id; through the open-file count in sysfs; and, for address vectors,
 * through the AV counts in sysfs (avs, named_avs), the names (a failed
 * named open must leave no name) and the mapped table (a failed insert or
 * remove leaves it unchanged or consistent with what the answer says).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
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

#define FAIL_NTH "/proc/thread-self/fail-nth"
#define MAX_WALK 1000

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
 * domain (id 1), plus what its "setup" made, and reports 0 or -errno; the
 * expected state afterwards is the same whether it failed or not, once
 * "undo" has run, and "teardown" takes the file back to one domain.
 * Setup, check, undo and teardown run with no fault armed.
 */
struct walk_op {
	const char *name;
	int (*setup)(int fd);	/* what run needs; 0 or -errno */
	int (*run)(int fd);
	/* after run, before undo: what @rc left is sane (else sets why) */
	bool (*check)(int fd, int rc);
	void (*undo)(int fd);	/* after a success: back to what setup made */
	void (*teardown)(int fd);	/* back to one domain */
	bool needs_root;	/* persistent AVs: CAP_SYS_ADMIN */
};

/* Why the last check failed, for the log. */
static char why_msg[256];

static bool __attribute__((format(printf, 1, 2))) why(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why_msg, sizeof(why_msg), fmt, ap);
	va_end(ap);
	return false;
}

static int op_domain_alloc(int fd)
{
	uint32_t id;
	int rc = _test_cmd_domain_alloc(fd, &id);

	/* The lowest free id: anything else means a slot leaked. */
	return rc ? rc : (id == 2 ? 0 : -EPROTO);
}

static void undo_domain_alloc(int fd)
{
	_test_cmd_destroy(fd, 2);
}

static int op_destroy(int fd)
{
	return _test_cmd_destroy(fd, 1);
}

static void undo_destroy(int fd)
{
	_test_cmd_domain_alloc(fd, NULL);
}

/* ---- address vectors ---- */

#define AV_COUNT	16	/* entries asked for: the table fills one page */
#define AV_NADDRS	4

static long kfab_avs(bool named)
{
	return read_sysfs_long(named ? KFAB_SYSFS "/named_avs" :
				       KFAB_SYSFS "/avs");
}

/*
 * What an AV operation's setup made, for its run, check, undo and
 * teardown.  The AV a setup opens is id 2, the one a run opens id 2 or 3.
 */
static struct {
	char name[KFAB_AV_NAME_MAX];	/* unique per setup */
	unsigned int serial;
	long named;			/* named_avs after setup */
	struct kfab_av_open open;	/* setup's open, or run's answer */
	const struct kfab_av_header *map;	/* setup's AV, read-only */
	uint64_t generation;		/* of the table after setup */
	struct kfab_addr addrs[AV_NADDRS];	/* [0] is in the table */
	unsigned int naddrs;		/* addresses the table may hold */
	uint32_t indices[AV_NADDRS];	/* run's answer */
	int32_t errors[AV_NADDRS];
	uint32_t inserted;
} av;

/* A service of this machine (1..KFAB_SERVICE_MAX: no incarnation) */
static struct kfab_addr local_addr(uint64_t ep)
{
	return (struct kfab_addr){ .family = KFAB_ADDR_LOCAL,
				   .ep = htobe64(ep) };
}

static bool addr_eq(const struct kfab_addr *a, const struct kfab_addr *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static int av_open_cmd(int fd, const char *name, uint32_t flags,
		       struct kfab_av_open *out)
{
	struct kfab_av_open cmd = {
		.flags = flags,
		.domain_id = 1,
		.count = AV_COUNT,
		.mode = 0600,
		.name = (uintptr_t)name,
	};
	int rc = _test_cmd_av_open(fd, &cmd, NULL);

	if (out)
		*out = cmd;
	return rc;
}

/* Insert one address into AV 2: its index, or KFAB_AV_INDEX_NONE. */
static uint32_t av_insert_one(int fd, const struct kfab_addr *addr)
{
	uint32_t index = KFAB_AV_INDEX_NONE;
	int32_t err = -1;

	if (_test_cmd_av_insert(fd, 2, addr, 1, &index, &err, NULL) || err)
		return KFAB_AV_INDEX_NONE;
	return index;
}

/* A name no earlier pass (nor run) used: a leftover would be this run's. */
static void av_new_name(void)
{
	snprintf(av.name, sizeof(av.name), "fail-nth-%d-%u", getpid(),
		 ++av.serial);
}

/* The name opens (a handle that is closed again), or it does not. */
static bool av_name_exists(int fd)
{
	struct kfab_av_open o;
	int rc = av_open_cmd(fd, av.name, KFAB_AV_OPEN_NO_CREATE, &o);

	if (!rc)
		_test_cmd_destroy(fd, o.out_av_id);
	return !rc;
}

static const struct kfab_av_entry *av_entry(uint32_t i)
{
	return (const void *)((const char *)av.map + av.map->entries_offset +
			      (size_t)i * av.map->entry_size);
}

/* Where @addr is in the mapped table, or KFAB_AV_INDEX_NONE. */
static uint32_t av_map_find(const struct kfab_addr *addr)
{
	uint32_t i;

	for (i = 0; i < av.map->capacity; i++)
		if ((av_entry(i)->flags & KFAB_AV_ENTRY_VALID) &&
		    addr_eq(&av_entry(i)->addr, addr))
			return i;
	return KFAB_AV_INDEX_NONE;
}

/*
 * The mapped table holds only addresses of av.addrs[], each once, with no
 * entry half-written, and "used" counts them.  Nothing else writes the
 * table while a single-threaded test looks.
 */
static bool av_map_consistent(void)
{
	uint32_t i, j, valid = 0;

	for (i = 0; i < av.map->capacity; i++) {
		const struct kfab_av_entry *e = av_entry(i);

		if (e->seq & 1 || e->flags & ~KFAB_AV_ENTRY_VALID)
			return why("entry %u: seq %u flags %#x", i, e->seq,
				   e->flags);
		if (!(e->flags & KFAB_AV_ENTRY_VALID))
			continue;
		valid++;
		for (j = 0; j < av.naddrs; j++)
			if (addr_eq(&e->addr, &av.addrs[j]))
				break;
		if (j == av.naddrs)
			return why("entry %u: ep %llu was never inserted", i,
				   (unsigned long long)be64toh(e->addr.ep));
		if (av_map_find(&e->addr) != i)
			return why("entry %u: ep %llu is in the table twice", i,
				   (unsigned long long)be64toh(e->addr.ep));
	}
	if (valid != av.map->used)
		return why("%u valid entries, header says used %u", valid,
			   av.map->used);
	return true;
}

/* Open AV 2 (unnamed), map its table and insert av.addrs[0..@seed). */
static int av_setup_table(int fd, unsigned int seed)
{
	void *map;
	unsigned int i;
	int rc;

	rc = av_open_cmd(fd, NULL, 0, &av.open);
	if (rc)
		return rc;
	if (av.open.out_av_id != 2)
		return -EPROTO;
	map = mmap(NULL, av.open.out_region.size, PROT_READ, MAP_SHARED, fd,
		   av.open.out_region.offset);
	if (map == MAP_FAILED)
		return -errno;
	av.map = map;
	for (i = 0; i < AV_NADDRS; i++)
		av.addrs[i] = local_addr(10 + i);
	for (i = 0; i < seed; i++)
		if (av_insert_one(fd, &av.addrs[i]) != i)
			return -EPROTO;
	av.generation = av.map->generation;
	return 0;
}

static void av_teardown_table(int fd)
{
	if (av.map)
		munmap((void *)av.map, av.open.out_region.size);
	av.map = NULL;
	_test_cmd_destroy(fd, 2);
}

/* av_open: an unnamed AV */

static int op_av_open(int fd)
{
	int rc = av_open_cmd(fd, NULL, 0, &av.open);

	/* The lowest free id: anything else means a slot leaked. */
	return rc ? rc : (av.open.out_av_id == 2 ? 0 : -EPROTO);
}

static void undo_av_open(int fd)
{
	_test_cmd_destroy(fd, 2);
}

/* av_open_named: creating a named AV */

static int setup_av_named(int fd)
{
	av_new_name();
	av.named = kfab_avs(true);
	return 0;
}

static int op_av_open_named(int fd)
{
	int rc = av_open_cmd(fd, av.name, 0, &av.open);

	if (rc)
		return rc;
	return av.open.out_av_id == 2 &&
	       (av.open.out_flags & KFAB_AV_OUT_CREATED) ? 0 : -EPROTO;
}

static int op_av_open_persist(int fd)
{
	int rc = av_open_cmd(fd, av.name,
			     KFAB_AV_OPEN_PERSIST | KFAB_AV_OPEN_EXCL, &av.open);

	if (rc)
		return rc;
	return av.open.out_av_id == 2 &&
	       (av.open.out_flags & KFAB_AV_OUT_CREATED) ? 0 : -EPROTO;
}

/* A failed create leaves no name; a successful one made exactly one. */
static bool check_av_open_named(int fd, int rc)
{
	if (rc) {
		if (av_name_exists(fd))
			return why("a failed create left the name %s", av.name);
		if (kfab_avs(true) != av.named)
			return why("named_avs %ld, was %ld", kfab_avs(true),
				   av.named);
		return true;
	}
	if (kfab_avs(true) != av.named + 1)
		return why("named_avs %ld after creating, was %ld",
			   kfab_avs(true), av.named);
	return av_name_exists(fd) || why("created %s, but it does not open",
					 av.name);
}

static void undo_av_open_named(int fd)
{
	_test_cmd_destroy(fd, 2);
}

static void undo_av_open_persist(int fd)
{
	_test_cmd_destroy(fd, 2);
	_test_cmd_av_unlink(fd, av.name);
}

/* av_open_existing: a second open of a named AV (id 2) of this file */

static int setup_av_existing(int fd)
{
	int rc;

	av_new_name();
	rc = av_open_cmd(fd, av.name, KFAB_AV_OPEN_EXCL, NULL);
	av.named = kfab_avs(true);
	return rc;
}

static int op_av_open_existing(int fd)
{
	int rc = av_open_cmd(fd, av.name, 0, &av.open);

	if (rc)
		return rc;
	return av.open.out_av_id == 3 &&
	       !(av.open.out_flags & KFAB_AV_OUT_CREATED) ? 0 : -EPROTO;
}

/* Whatever the second open did, the first handle and the name stand. */
static bool check_av_open_existing(int fd, int rc)
{
	struct kfab_addr a = local_addr(7);

	if (kfab_avs(true) != av.named)
		return why("named_avs %ld, was %ld", kfab_avs(true), av.named);
	if (!av_name_exists(fd))
		return why("the name %s went", av.name);
	if (av_insert_one(fd, &a) != 0)
		return why("the first handle no longer inserts");
	return true;
}

static void undo_av_open_existing(int fd)
{
	_test_cmd_destroy(fd, 3);
}

static void teardown_av_existing(int fd)
{
	_test_cmd_destroy(fd, 2);
}

/* av_insert: a few addresses, one of them in the table already */

static int setup_av_insert(int fd)
{
	av.naddrs = AV_NADDRS;
	return av_setup_table(fd, 1);
}

static int op_av_insert(int fd)
{
	unsigned int i;

	for (i = 0; i < AV_NADDRS; i++) {
		av.indices[i] = 0x5a5a5a5a;
		av.errors[i] = 0x5a5a5a5a;
	}
	av.inserted = 0;
	return _test_cmd_av_insert(fd, 2, av.addrs, AV_NADDRS, av.indices,
			     av.errors, &av.inserted);
}

/*
 * The table is consistent, agrees with the answer when there is one, and
 * the kernel's own index of addresses agrees with the table: inserting an
 * address again gives the index the table shows, or a free one.
 */
static bool check_av_insert(int fd, int rc)
{
	uint32_t i, at, used, inserted = 0;

	if (!av_map_consistent())
		return false;
	if (av_map_find(&av.addrs[0]) != 0)
		return why("ep 10 left index 0");
	if (rc == -ENOMEM && (av.map->used != 1 ||
			      av.map->generation != av.generation))
		return why("failed with -ENOMEM, but used %u generation %llu (was 1, %llu)",
			   av.map->used,
			   (unsigned long long)av.map->generation,
			   (unsigned long long)av.generation);
	if (!rc) {
		for (i = 0; i < AV_NADDRS; i++) {
			at = av_map_find(&av.addrs[i]);
			if (!av.errors[i]) {
				if (av.indices[i] != at)
					return why("ep %u: index %u, the table has it at %u",
						   10 + i, av.indices[i], at);
				inserted++;
			} else if (av.errors[i] != -ENOMEM ||
				   av.indices[i] != KFAB_AV_INDEX_NONE ||
				   at != KFAB_AV_INDEX_NONE) {
				return why("ep %u: error %d index %u, at %u in the table",
					   10 + i, av.errors[i], av.indices[i],
					   at);
			}
		}
		if (inserted != av.inserted)
			return why("out_inserted %u, %u addresses got an index",
				   av.inserted, inserted);
	}

	used = av.map->used;
	for (i = 0; i < AV_NADDRS; i++) {
		uint32_t got;

		at = av_map_find(&av.addrs[i]);
		got = av_insert_one(fd, &av.addrs[i]);
		if (got == KFAB_AV_INDEX_NONE)
			return why("ep %u: inserting again failed", 10 + i);
		if (at != KFAB_AV_INDEX_NONE) {
			if (got != at)
				return why("ep %u: inserted again at %u, the table has it at %u",
					   10 + i, got, at);
			continue;
		}
		/* Absent: it takes a free index, and goes again. */
		if (!addr_eq(&av_entry(got)->addr, &av.addrs[i]))
			return why("ep %u: inserted at %u, the table shows another",
				   10 + i, got);
		if (_test_cmd_av_remove(fd, 2, &got, 1))
			return why("ep %u: cannot remove it again", 10 + i);
	}
	if (av.map->used != used)
		return why("used %u after inserting present addresses again, was %u",
			   av.map->used, used);
	return true;
}

/* Remove what the run inserted: the table is the seed alone again. */
static void undo_av_insert(int fd)
{
	unsigned int i;

	for (i = 1; i < AV_NADDRS; i++)
		if (!av.errors[i])
			_test_cmd_av_remove(fd, 2, &av.indices[i], 1);
}

/* av_remove: two of three entries */

static const uint32_t av_remove_indices[] = { 0, 2 };

static int setup_av_remove(int fd)
{
	av.naddrs = 3;
	return av_setup_table(fd, 3);
}

static int op_av_remove(int fd)
{
	return _test_cmd_av_remove(fd, 2, av_remove_indices, 2);
}

/* All or nothing. */
static bool check_av_remove(int fd, int rc)
{
	uint32_t i;

	if (!av_map_consistent())
		return false;
	if (rc) {
		if (av.map->used != 3 || av.map->generation != av.generation)
			return why("failed, but used %u generation %llu (was 3, %llu)",
				   av.map->used,
				   (unsigned long long)av.map->generation,
				   (unsigned long long)av.generation);
		for (i = 0; i < 3; i++)
			if (av_map_find(&av.addrs[i]) != i)
				return why("failed, but ep %u moved", 10 + i);
		return true;
	}
	if (av.map->used != 1 || av_map_find(&av.addrs[1]) != 1)
		return why("removed, but used %u, ep 11 at %u", av.map->used,
			   av_map_find(&av.addrs[1]));
	return true;
}

/* The removed indices are the lowest free: the addresses go back there. */
static void undo_av_remove(int fd)
{
	av_insert_one(fd, &av.addrs[0]);
	av_insert_one(fd, &av.addrs[2]);
}

/* av_unlink: a persistent named AV, with no opener or with one */

static int setup_av_persist(int fd, bool keep_open)
{
	int rc;

	av_new_name();
	rc = av_open_cmd(fd, av.name,
			 KFAB_AV_OPEN_PERSIST | KFAB_AV_OPEN_EXCL, &av.open);
	if (rc)
		return rc;
	if (!keep_open)
		rc = _test_cmd_destroy(fd, av.open.out_av_id);
	av.named = kfab_avs(true);
	return rc;
}

static int setup_av_unlink(int fd)
{
	return setup_av_persist(fd, false);
}

static int setup_av_unlink_open(int fd)
{
	return setup_av_persist(fd, true);
}

static int op_av_unlink(int fd)
{
	return _test_cmd_av_unlink(fd, av.name);
}

static bool check_av_unlink(int fd, int rc)
{
	if (rc) {
		if (!av_name_exists(fd))
			return why("a failed unlink took the name");
		return kfab_avs(true) == av.named ||
		       why("named_avs %ld, was %ld", kfab_avs(true), av.named);
	}
	if (av_name_exists(fd))
		return why("unlinked, but the name still opens");
	/* With no opener, the table goes with the name. */
	return kfab_avs(true) == av.named - 1 ||
	       why("named_avs %ld after unlink, was %ld", kfab_avs(true),
		   av.named);
}

/* The handle outlives the name, and keeps working. */
static bool check_av_unlink_open(int fd, int rc)
{
	struct kfab_addr a = local_addr(7);

	if (rc)
		return check_av_unlink(fd, rc);
	if (av_name_exists(fd))
		return why("unlinked, but the name still opens");
	if (kfab_avs(true) != av.named)
		return why("named_avs %ld: the open AV went with its name",
			   kfab_avs(true));
	return av_insert_one(fd, &a) == 0 ||
	       why("the handle no longer inserts after the unlink");
}

static void teardown_av_unlink(int fd)
{
	_test_cmd_destroy(fd, 2);
	_test_cmd_av_unlink(fd, av.name);	/* -ENOENT once unlinked */
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
	int rc2 = _test_cmd_destroy(fd, 2);

	return rc ? rc : rc2;
}

static int op_cq_cycle(int fd)
{
	struct kfab_test_cq_post p = { .cq_id = 2, .count = 5, .context = 1 };
	struct kfab_cq_layout ring;
	struct kfab_cq_readerr r;
	char data[8] = "fail", out[8];
	uint32_t id;
	int rc;

	rc = _test_cmd_cq_open(fd, 1, 2, 0, &id, &ring);
	if (rc)
		return rc;
	if (id != 2 || ring.ring.offset != 1ull << 32 ||
	    ring.cons.offset != 2ull << 32)
		return cq_destroy_2(fd, -EPROTO);
	rc = _test_cmd_test_cq_post(fd, &p);
	if (rc)
		return cq_destroy_2(fd, rc);
	p.flags = KFAB_TEST_POST_ERROR;
	p.count = 1;
	p.err = 5;
	p.err_data = (uintptr_t)data;
	p.err_data_size = sizeof(data);
	rc = _test_cmd_test_cq_post(fd, &p);
	if (rc)
		return cq_destroy_2(fd, rc);
	rc = _test_cmd_cq_drain(fd, 2, NULL);
	if (rc)
		return cq_destroy_2(fd, rc);
	rc = _test_cmd_cq_readerr(fd, 2, out, sizeof(out), &r);
	if (rc) {
		/* The fault was one-shot: the error must still be there. */
		struct kfab_cq_readerr again;

		if (_test_cmd_cq_readerr(fd, 2, out, sizeof(out), &again) ||
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
	struct kfab_cntr_wait w = { .cntr_id = 2, .threshold = 3 };
	struct kfab_cntr_open o;
	int rc;

	rc = _test_cmd_cntr_open(fd, 1, NULL, &o);
	if (rc)
		return rc;
	if (o.out_cntr_id != 2 || o.out_region.offset != 1ull << 32)
		return cq_destroy_2(fd, -EPROTO);
	/* SET is idempotent: a lost answer is no lost update. */
	rc = _test_cmd_cntr_update(fd, 2, KFAB_CNTR_SET, 3, NULL, NULL);
	if (rc)
		return cq_destroy_2(fd, rc);
	rc = _test_cmd_cntr_wait(fd, &w);
	if (!rc && w.out_value != 3)
		rc = -EPROTO;
	return cq_destroy_2(fd, rc);
}

/* Destroy ids in the order given (holders first), keep the first error. */
static int destroy_ids(int fd, int rc, const uint32_t *ids, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		int rc2 = _test_cmd_destroy(fd, ids[i]);

		if (!rc && rc2 && rc2 != -ENOENT)
			rc = rc2;
	}
	return rc;
}

/* Queue one request in a mapped ring and ring its doorbell. */
static int ring_one(int fd, uint32_t id, const struct kfab_sq_layout *sq,
		    const struct kfab_sqe *sqe)
{
	uint8_t *ring = _test_mmap(fd, &sq->region, PROT_READ | PROT_WRITE);
	int rc;

	if (ring == MAP_FAILED)
		return -errno;
	memcpy(ring + sq->off_entries, sqe, sizeof(*sqe));
	__atomic_store_n((uint32_t *)(ring + sq->off_tail), 1,
			 __ATOMIC_RELEASE);
	rc = _test_cmd_doorbell(fd, id, NULL);
	_test_munmap(ring, &sq->region);
	return rc;
}

/*
 * An endpoint's life under domain 1: AV 2, CQ 3 (with payload slots),
 * endpoint 4 and SRX 5, bound and enabled; a receive posted on the SRX and
 * a message to itself; everything destroyed, holders first.  Data path
 * failures are error completions, not errors of the calls.
 */
static int op_ep_cycle(int fd)
{
	static const uint32_t ids[] = { 4, 5, 3, 2 };
	struct kfab_av_open avo = { .domain_id = 1 };
	struct kfab_sqe sqe = { .iov_count = 1,
				.flags = KFAB_SQE_COMPLETION };
	uint32_t av_id = 0, cq_id = 0, ep_id = 0, srx_id = 0;
	uint32_t idx = KFAB_AV_INDEX_NONE;
	char buf[16] = "fail-nth";
	struct kfab_srx_open so;
	struct kfab_ep_open epo;
	int rc;

	rc = _test_cmd_av_open(fd, &avo, &av_id);
	if (!rc)
		rc = _test_cmd_cq_open(fd, 1, 4, KFAB_CQ_OPEN_PAYLOAD, &cq_id,
				       NULL);
	if (!rc)
		rc = _test_cmd_ep_open(fd, 1, 4, &ep_id, &epo);
	if (!rc)
		rc = _test_cmd_srx_open(fd, 1, 4, &srx_id, &so);
	if (!rc && (av_id != 2 || cq_id != 3 || ep_id != 4 || srx_id != 5))
		rc = -EPROTO;
	if (!rc)
		rc = _test_cmd_ep_bind(fd, 4, 2, 0);
	if (!rc)
		rc = _test_cmd_ep_bind(fd, 4, 3, KFAB_EP_BIND_TRANSMIT |
				       KFAB_EP_BIND_RECV);
	if (!rc)
		rc = _test_cmd_ep_bind(fd, 4, 5, 0);
	if (!rc)
		rc = _test_cmd_ep_enable(fd, 4);
	if (!rc)
		rc = _test_cmd_av_insert(fd, 2, &epo.out_addr, 1, &idx, NULL,
					 NULL);
	if (!rc) {
		sqe.opcode = KFAB_OP_RECV;
		sqe.addr = KFAB_CQ_ADDR_NOTAVAIL;
		sqe.iov[0].base = (uintptr_t)buf;
		sqe.iov[0].len = sizeof(buf);
		rc = ring_one(fd, 5, &so.out_sq, &sqe);
	}
	if (!rc) {
		sqe.opcode = KFAB_OP_SEND;
		sqe.addr = idx;
		rc = ring_one(fd, 4, &epo.out_sq, &sqe);
	}
	return destroy_ids(fd, rc, ids, sizeof(ids) / sizeof(ids[0]));
}

static const struct walk_op walk_ops[] = {
	{ "query", .run = _test_query_abi },
	{ "domain_alloc", .run = op_domain_alloc, .undo = undo_domain_alloc },
	{ "destroy", .run = op_destroy, .undo = undo_destroy },
	{ "cq_cycle", .run = op_cq_cycle },
	{ "cntr_cycle", .run = op_cntr_cycle },
	{ "ep_cycle", .run = op_ep_cycle },
	{ "av_open", .run = op_av_open, .undo = undo_av_open },
	{ "av_open_named", .setup = setup_av_named, .run = op_av_open_named,
	  .check = check_av_open_named, .undo = undo_av_open_named },
	{ "av_open_persist", .setup = setup_av_named,
	  .run = op_av_open_persist, .check = check_av_open_named,
	  .undo = undo_av_open_persist, .needs_root = true },
	{ "av_open_existing", .setup = setup_av_existing,
	  .run = op_av_open_existing, .check = check_av_open_existing,
	  .undo = undo_av_open_existing, .teardown = teardown_av_existing },
	{ "av_insert", .setup = setup_av_insert, .run = op_av_insert,
	  .check = check_av_insert, .undo = undo_av_insert,
	  .teardown = av_teardown_table },
	{ "av_remove", .setup = setup_av_remove, .run = op_av_remove,
	  .check = check_av_remove, .undo = undo_av_remove,
	  .teardown = av_teardown_table },
	{ "av_unlink", .setup = setup_av_unlink, .run = op_av_unlink,
	  .check = check_av_unlink, .teardown = teardown_av_unlink,
	  .needs_root = true },
	{ "av_unlink_open", .setup = setup_av_unlink_open, .run = op_av_unlink,
	  .check = check_av_unlink_open, .teardown = teardown_av_unlink,
	  .needs_root = true },
};

/* The file's state is one domain, id 1, and nothing else. */
static bool state_is_one_domain(int fd)
{
	uint32_t id;

	/* Ids are the lowest free: a leaked slot would make this 3 or more. */
	if (_test_cmd_domain_alloc(fd, &id) || id != 2)
		return false;
	if (_test_cmd_destroy(fd, 2))
		return false;
	/* Destroy and re-create id 1 to prove it is a live domain. */
	if (_test_cmd_destroy(fd, 1))
		return false;
	if (_test_cmd_domain_alloc(fd, &id))
		return false;
	return id == 1;
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
	uint32_t dom;

	self->fd = kfab_open();
	ASSERT_LE(0, self->fd);
	if (!kfab_fd_test_module(self->fd))
		SKIP(return, "module built without CONFIG_KFAB_TEST");
	test_cmd_domain_alloc(self->fd, &dom);
	ASSERT_EQ(1, dom);
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
	bool root = !geteuid();

	for (i = 0; i < sizeof(walk_ops) / sizeof(walk_ops[0]); i++) {
		const struct walk_op *op = &walk_ops[i];

		if (op->needs_root && !root) {
			TH_LOG("%s: not root, not walked", op->name);
			continue;
		}
		fired = 0;
		for (n = 1; n < MAX_WALK; n++) {
			long avs = kfab_avs(false), named = kfab_avs(true);
			int rc, remaining;
			bool ran_through;

			if (op->setup) {
				ASSERT_EQ(0, op->setup(fd))
					TH_LOG("%s: setup", op->name);
			}
			ASSERT_EQ(0, arm_fault(fd, point, n));
			rc = op->run(fd);
			remaining = arm_fault(fd, point, 0);
			/* Fewer than n passes: it ran through. */
			ran_through = remaining > 0;
			if (ran_through) {
				EXPECT_EQ(0, rc) TH_LOG("%s", op->name);
			} else {
				EXPECT_TRUE(rc == 0 || rc == expected)
					TH_LOG("%s: pass %u: rc %d", op->name, n, rc);
			}
			why_msg[0] = 0;
			if (op->check) {
				EXPECT_TRUE(op->check(fd, rc))
					TH_LOG("%s: pass %u: rc %d: %s", op->name,
					       n, rc, why_msg);
			}
			if (!rc && op->undo)
				op->undo(fd);
			if (op->teardown)
				op->teardown(fd);
			ASSERT_TRUE(state_is_one_domain(fd))
				TH_LOG("%s: pass %u left a mess", op->name, n);
			/* No AV and no name outlives the operation. */
			ASSERT_EQ(avs, kfab_avs(false))
				TH_LOG("%s: pass %u: AVs leaked", op->name, n);
			ASSERT_EQ(named, kfab_avs(true))
				TH_LOG("%s: pass %u: named AVs leaked", op->name, n);
			if (ran_through)
				break;
			fired++;
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
	EXPECT_EQ(0, _test_query_abi(other));
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

/* KFAB_IOC_TEST_FAULT itself: contexts, reports, and its errors */

FIXTURE(fault) {
	int fd;
};

FIXTURE_SETUP(fault)
{
	self->fd = kfab_open();
	ASSERT_LE(0, self->fd);
	if (!kfab_fd_test_module(self->fd))
		SKIP(return, "module built without CONFIG_KFAB_TEST");
}

FIXTURE_TEARDOWN(fault)
{
	close(self->fd);
}

/* KFAB_IOC_TEST_FAULT on @fd for context @ctx_id; 0 or -errno. */
static int fault_cmd(int fd, uint32_t flags, uint32_t point, uint32_t nth,
		     uint32_t ctx_id, struct kfab_test_fault *out)
{
	*out = (struct kfab_test_fault){
		.size = sizeof(*out), .flags = flags, .point = point,
		.nth = nth, .ctx_id = ctx_id,
	};
	return kfab_ioctl(fd, KFAB_IOC_TEST_FAULT, out);
}

/* The id of @fd's own context. */
static uint32_t ctx_id_of(int fd)
{
	struct kfab_test_fault f;

	if (fault_cmd(fd, KFAB_TEST_FAULT_PEEK, KFAB_FAULT_ALLOC, 0, 0, &f))
		return 0;
	return f.out_ctx_id;
}

TEST_F(fault, reports_remaining_and_fired_count)
{
	struct kfab_test_fault f;
	uint32_t id;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fault_cmd(self->fd, 0, KFAB_FAULT_ALLOC, 2, 0, &f));
	EXPECT_NE(0, f.out_ctx_id);
	EXPECT_EQ(0, f.out_remaining);
	EXPECT_EQ(0, f.out_fired);
	/* The first pass goes through, the second fails. */
	EXPECT_EQ(0, _test_cmd_domain_alloc(self->fd, &id));
	ASSERT_EQ(0, fault_cmd(self->fd, KFAB_TEST_FAULT_PEEK,
			       KFAB_FAULT_ALLOC, 0, 0, &f));
	EXPECT_EQ(1, f.out_remaining);
	EXPECT_EQ(0, f.out_fired);
	EXPECT_EQ(-ENOMEM, _test_cmd_domain_alloc(self->fd, &id));
	/* One shot: the next pass goes through again. */
	EXPECT_EQ(0, _test_cmd_domain_alloc(self->fd, &id));
	ASSERT_EQ(0, fault_cmd(self->fd, 0, KFAB_FAULT_ALLOC, 0, 0, &f));
	EXPECT_EQ(0, f.out_remaining);
	EXPECT_EQ(1, f.out_fired);
	/* Counted per point. */
	ASSERT_EQ(0, fault_cmd(self->fd, KFAB_TEST_FAULT_PEEK,
			       KFAB_FAULT_COPY_OUT, 0, 0, &f));
	EXPECT_EQ(0, f.out_fired);
}

TEST_F(fault, peek_leaves_the_point_armed)
{
	struct kfab_test_fault f;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fault_cmd(self->fd, 0, KFAB_FAULT_COPY_OUT, 7, 0, &f));
	/* PEEK ignores nth: 0 here would disarm without it. */
	ASSERT_EQ(0, fault_cmd(self->fd, KFAB_TEST_FAULT_PEEK,
			       KFAB_FAULT_COPY_OUT, 0, 0, &f));
	EXPECT_EQ(7, f.out_remaining);
	ASSERT_EQ(0, fault_cmd(self->fd, 0, KFAB_FAULT_COPY_OUT, 0, 0, &f));
	EXPECT_EQ(7, f.out_remaining);
}

TEST_F(fault, every_point_can_be_armed_and_disarmed)
{
	struct kfab_test_fault f;
	uint32_t p;

	RETURN_IF_SETUP_SKIPPED();
	for (p = 0; p < KFAB_FAULT_POINT_MAX; p++) {
		ASSERT_EQ(0, fault_cmd(self->fd, 0, p, 3, 0, &f));
		ASSERT_EQ(0, fault_cmd(self->fd, 0, p, 0, 0, &f));
		EXPECT_EQ(3, f.out_remaining) TH_LOG("point %u", p);
	}
}

TEST_F(fault, own_context_by_id_is_this_file)
{
	struct kfab_test_fault f;
	uint32_t id;
	int other;

	RETURN_IF_SETUP_SKIPPED();
	id = ctx_id_of(self->fd);
	other = kfab_open();
	ASSERT_NE(0, id);
	ASSERT_LE(0, other);
	EXPECT_NE(id, ctx_id_of(other));
	ASSERT_EQ(0, fault_cmd(self->fd, 0, KFAB_FAULT_ALLOC, 1, id, &f));
	EXPECT_EQ(id, f.out_ctx_id);
	EXPECT_EQ(0, _test_query_abi(other));
	EXPECT_EQ(-ENOMEM, _test_cmd_domain_alloc(self->fd, &id));
	close(other);
}

TEST_F(fault, bad_flags_are_eopnotsupp)
{
	struct kfab_test_fault f;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-EOPNOTSUPP, fault_cmd(self->fd, 2, KFAB_FAULT_ALLOC, 1, 0,
					 &f));
	EXPECT_EQ(-EOPNOTSUPP, fault_cmd(self->fd, 1u << 31,
					 KFAB_FAULT_ALLOC, 1, 0, &f));
	/* Nothing was armed. */
	ASSERT_EQ(0, fault_cmd(self->fd, 0, KFAB_FAULT_ALLOC, 0, 0, &f));
	EXPECT_EQ(0, f.out_remaining);
}

TEST_F(fault, root_arms_another_files_context_by_id)
{
	struct kfab_test_fault f;
	uint32_t id;
	int other;

	RETURN_IF_SETUP_SKIPPED();
	if (geteuid())
		SKIP(return, "not root");
	other = kfab_open();
	ASSERT_LE(0, other);
	ASSERT_EQ(0, fault_cmd(self->fd, 0, KFAB_FAULT_ALLOC, 1,
			       ctx_id_of(other), &f));
	EXPECT_EQ(ctx_id_of(other), f.out_ctx_id);
	/* It fires in the other file, not in this one. */
	EXPECT_EQ(0, _test_cmd_domain_alloc(self->fd, &id));
	EXPECT_EQ(-ENOMEM, _test_cmd_domain_alloc(other, &id));
	ASSERT_EQ(0, fault_cmd(self->fd, KFAB_TEST_FAULT_PEEK,
			       KFAB_FAULT_ALLOC, 0, ctx_id_of(other), &f));
	EXPECT_EQ(1, f.out_fired);
	ASSERT_EQ(0, fault_cmd(self->fd, KFAB_TEST_FAULT_PEEK,
			       KFAB_FAULT_ALLOC, 0, 0, &f));
	EXPECT_EQ(0, f.out_fired);
	close(other);
}

TEST_F(fault, unknown_context_is_enoent)
{
	struct kfab_test_fault f;
	uint32_t gone;
	int other;

	RETURN_IF_SETUP_SKIPPED();
	if (geteuid())
		SKIP(return, "not root");
	other = kfab_open();
	ASSERT_LE(0, other);
	gone = ctx_id_of(other);
	close(other);
	EXPECT_EQ(-ENOENT, fault_cmd(self->fd, 0, KFAB_FAULT_ALLOC, 1, gone,
				     &f));
	EXPECT_EQ(-ENOENT, fault_cmd(self->fd, KFAB_TEST_FAULT_PEEK,
				     KFAB_FAULT_ALLOC, 0, UINT32_MAX, &f));
}

/*
 * Without CAP_SYS_ADMIN only the caller's own context: another one is
 * -EPERM, whether it exists or not, and nothing is armed.
 */
TEST_F(fault, unprivileged_caller_cannot_target_another_context)
{
	struct kfab_test_fault f;
	uint32_t mine, theirs;
	int other, status;
	pid_t pid;

	RETURN_IF_SETUP_SKIPPED();
	if (geteuid())
		SKIP(return, "not root: cannot drop to another user");
	other = kfab_open();
	ASSERT_LE(0, other);
	mine = ctx_id_of(self->fd);
	theirs = ctx_id_of(other);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Leaving uid 0 drops every capability. */
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		if (fault_cmd(self->fd, 0, KFAB_FAULT_ALLOC, 1, theirs, &f) !=
		    -EPERM)
			_exit(11);
		if (fault_cmd(self->fd, KFAB_TEST_FAULT_PEEK, KFAB_FAULT_ALLOC,
			      0, theirs, &f) != -EPERM)
			_exit(12);
		if (fault_cmd(self->fd, 0, KFAB_FAULT_ALLOC, 1, UINT32_MAX,
			      &f) != -EPERM)
			_exit(13);
		/* Its own context, by 0 or by id, stays the caller's. */
		if (fault_cmd(self->fd, 0, KFAB_FAULT_COPY_OUT, 5, mine, &f) ||
		    f.out_ctx_id != mine ||
		    fault_cmd(self->fd, 0, KFAB_FAULT_COPY_OUT, 0, 0, &f) ||
		    f.out_remaining != 5)
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Nothing was armed in the other file. */
	ASSERT_EQ(0, fault_cmd(self->fd, KFAB_TEST_FAULT_PEEK,
			       KFAB_FAULT_ALLOC, 0, theirs, &f));
	EXPECT_EQ(0, f.out_remaining);
	EXPECT_EQ(0, _test_cmd_domain_alloc(other, &mine));
	close(other);
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
	uint32_t dom;

	if (!setup_failslab())
		SKIP(return, "no fail-nth: kernel without FAULT_INJECTION");
	self->fd = kfab_open();
	ASSERT_LE(0, self->fd);
	test_cmd_domain_alloc(self->fd, &dom);
	ASSERT_EQ(1, dom);
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
