// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab_fuzz: random but structurally plausible use of /dev/kfab from
 * several processes and threads at once, with an oracle.
 *
 * Runs inside the test VM with kfab.ko loaded; without /dev/kfab it reports
 * a skip and exits 0.  Output is kselftest TAP: one test, "fuzz", then the
 * "# Totals:" line the runners add up.
 *
 * What it does
 * ------------
 * The parent probes the module (QUERY), opens NR_SHARED_FDS files that every
 * worker inherits (so processes share contexts), forks --procs workers and
 * reaps them.  Each worker runs --threads threads over one table of open
 * files (NR_SLOTS slots), so threads share files and close them under each
 * other's feet.  Every thread draws actions from its own generator, seeded
 * from --seed, the worker's slot and generation and the thread's index:
 * open, close, a known command with a plausible struct (mostly valid; else
 * with a bad size, tail, flags, reserved field, id or pointer), an ioctl
 * with a random command number, mmap of the device (and, when a mapping
 * succeeds, garbage written over every writable byte of it), munmap, and
 * now and then SIGKILL of its own process (the parent then starts the next
 * generation of that worker).
 *
 * The oracle: every outcome must be one the operation's model allows
 * (computed from the ABI rules in uapi/linux/kfab.h and abi.rst, exact where
 * that is cheap) and one that abi.rst documents for that command; a valid
 * QUERY succeeds with abi_version == KFAB_ABI_VERSION; a successful
 * DOMAIN_ALLOC returns an id in 1..max_objects; a worker dies only when it
 * meant to; after everything is reaped and closed, the module still works
 * and /sys/class/misc/kfab/contexts is back to its value at start.
 *
 * The operation budget (--ops) is shared by all workers; every operation
 * issued to the kernel takes one unit and is counted by kind: opens,
 * closes, ioctls, mmaps, munmaps, and each page written or read in a
 * mapping.  The closes and munmaps a worker does on its way out count too.
 *
 * Determinism: with --procs 1 --threads 1 and an --ops budget (not
 * --seconds) a seed always gives the same sequence and the same breakdown.  With more threads or processes the
 * scheduler decides the interleaving, so only each thread's choices repeat.
 *
 * Growing it
 * ----------
 * A new command is one entry in fuzz_cmds[] and its functions:
 *   .gen     fills a plausible struct: ids from the pool (pick_id()), flags
 *            and reserved fields mostly zero (rnd_flags(), rnd_reserved());
 *   .expect  (optional) the outcomes its handler may give for the struct
 *            it sees, once the dispatcher's size rules have passed;
 *   .done    (optional) checks a successful answer, feeds the id pool;
 *   .errnos  what abi.rst documents for its handler (the dispatcher's
 *            EINVAL, E2BIG, EFAULT and the VFS's EBADF come on top).
 *   .test_only for CONFIG_KFAB_TEST commands: a production module must
 *            answer them -ENOTTY;
 *   .private_file for test-only commands whose effect must stay private:
 *            each call goes to a file opened for it and closed after it,
 *            so that what it arms (a fault) never reaches the files the
 *            oracle is exact about.
 * The core does the rest: sizes, tails, pointers, command-number variants,
 * file descriptors, the dispatcher's part of the oracle, counting, logging.
 * Random command numbers at or above KFAB_CMD_TEST_BASE go to a private
 * file too when the module has KFAB_FEATURE_TEST.
 *
 * A new mapped ring is one entry in fuzz_rings[] and its functions:
 *   .geometry picks length, offset, prot and flags of the mmap() (the
 *             ring's offset and a length derived from QUERY, now and then
 *             off by a page or with the wrong prot);
 *   .scribble writes garbage into one page of a successful mapping (say,
 *             producer and consumer indices far out of range).
 * Every successful mapping is scribbled over page by page (read, when it is
 * not writable), stays mapped while the thread goes on issuing ioctls on
 * the same files, and is unmapped by a later munmap action or at exit.
 *
 * Netlink
 * -------
 * Alongside the ioctls, threads send the generic netlink family "kfab"
 * (uapi/linux/kfab_netlink.h) random requests: any command number, dump
 * or not, random attributes of random sizes, now and then cut short,
 * and now and then close the socket with the dump's answer unread.  The
 * dumps walk the contexts and objects the other threads create and
 * destroy.  A quarter of the requests are changes of the transport
 * (LISTEN_ADD/_DEL, ALLOW_ADD/_DEL) shaped nearly right: a loopback or a
 * foreign address, a few ports, a prefix length around 128, so that
 * listeners and networks really come and go under the dumps.  The
 * fuzzer runs in a network namespace of its own (nl_private_netns()), so
 * that what it leaves goes with it.  An eighth of the rest are
 * LIMIT_GET dumps and LIMIT_SET requests shaped nearly right (a real or
 * a foreign name, a value in range or just out of it, now and then the
 * wrong size or missing); the limits are module-wide, so the values in
 * range never lower one, and the run puts back what it found
 * (fuzz_limits_restore()).  The oracle: every answer is success
 * or one of the errors Documentation/netlink.rst names (NETLINK_OUTCOMES).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <net/if.h>
#include <sched.h>

#include <linux/kfab.h>
#include <linux/kfab_netlink.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include "kselftest.h"
#include "kfab_test.h"

#define DEBUGFS_CONTEXTS	"/sys/kernel/debug/kfab/contexts"

#define MAX_PROCS	32
#define MAX_THREADS	32
#define NR_SLOTS	8	/* open files of a worker, shared by its threads */
#define NR_SHARED_FDS	2	/* opened by the parent, inherited by every worker */
#define NR_IDS		64	/* object ids a worker remembers */
#define NR_MAPS		4	/* live mappings per thread */
#define NR_REGIONS	16	/* mmap offsets of CQ rings and counters a worker remembers */
#define MAX_FAIL_MSGS	32	/* failures kept verbatim; all are counted */
#define STOP_FAILURES	100	/* stop early after this many failures */
#define FAIL_MSG_LEN	480
#define STALL_SECONDS	60	/* no progress for this long: a hang */
#define BAD_FD_BASE	900	/* 900..999: never open */
#define ANSWER_MAX	512	/* largest command struct we read back */
/* A low address nothing maps on its own: per-thread "edge" pages go here. */
#define EDGE_BASE	0x20000000ul

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif
#define offsetofend(type, member) \
	(offsetof(type, member) + sizeof(((type *)0)->member))

/*
 * Outcomes: success or an errno, one bit each, so that what the oracle
 * allows is a mask.  Anything not listed is OUTI_OTHER and never allowed.
 */
#define FUZZ_OUTCOMES(X)						\
	X(OK, 0) X(EINVAL, EINVAL) X(E2BIG, E2BIG) X(EFAULT, EFAULT)	\
	X(ENOTTY, ENOTTY) X(ENOENT, ENOENT) X(EBUSY, EBUSY)		\
	X(ENOSPC, ENOSPC) X(EOPNOTSUPP, EOPNOTSUPP) X(EBADF, EBADF)	\
	X(ENOMEM, ENOMEM) X(ENODEV, ENODEV) X(EACCES, EACCES)		\
	X(EOVERFLOW, EOVERFLOW) X(EPERM, EPERM) X(EMFILE, EMFILE)	\
	X(ENFILE, ENFILE) X(EAGAIN, EAGAIN) X(ETIMEDOUT, ETIMEDOUT)	\
	X(EINTR, EINTR) X(EEXIST, EEXIST) X(EDESTADDRREQ, EDESTADDRREQ)	\
	X(EDQUOT, EDQUOT) X(ENAMETOOLONG, ENAMETOOLONG)			\
	X(EADDRINUSE, EADDRINUSE) X(EADDRNOTAVAIL, EADDRNOTAVAIL)	\
	X(ERANGE, ERANGE) X(EMSGSIZE, EMSGSIZE)

#define X(name, err) OUTI_##name,
enum { FUZZ_OUTCOMES(X) OUTI_OTHER };
#undef X
#define O(name)		(1u << OUTI_##name)

static const struct {
	int err;
	const char *name;
} outcomes[] = {
#define X(name, err) { err, #name },
	FUZZ_OUTCOMES(X)
#undef X
};

/* Every command can fail the dispatcher's checks, and any fd can be closed. */
#define DISPATCH_ERRNOS	(O(EINVAL) | O(E2BIG) | O(EFAULT) | O(EBADF))
/*
 * With several threads, a slot's fd may close under us, and the number
 * be taken again by another file, such as one of our own sockets, which
 * answers a kfab ioctl -ENOTTY.
 */
#define RACY_ERRNOS	(O(EBADF) | O(ENOTTY))
/* mmap() of the device: its own -EINVAL/-EPERM and the mm core's errors. */
#define MMAP_OUTCOMES	(O(OK) | O(EINVAL) | O(ENODEV) | O(EBADF) | O(EACCES) | \
			 O(ENOMEM) | O(EOVERFLOW) | O(EPERM) | O(EOPNOTSUPP))
/* A request to the netlink family: its policies, permissions and lookups. */
#define NETLINK_OUTCOMES (O(OK) | O(EINVAL) | O(ERANGE) | O(EOPNOTSUPP) | \
			  O(EPERM) | O(ENOENT) | O(EMSGSIZE) | O(ENOMEM) | \
			  O(EADDRINUSE) | O(EADDRNOTAVAIL) | O(EEXIST) | \
			  O(ENOSPC))

static uint32_t out_bit(int err)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(outcomes); i++)
		if (outcomes[i].err == err)
			return 1u << i;
	return 1u << OUTI_OTHER;
}

/* Kinds of operations issued to the kernel; commands follow K_CMD0. */
enum fuzz_kind {
	K_OPEN,
	K_CLOSE,
	K_IOCTL_RANDOM,
	K_MMAP,
	K_MUNMAP,
	K_PAGE_WRITE,
	K_PAGE_READ,
	K_NETLINK,
	K_RING,
	K_CMD0,
};

#define NR_KINDS_MAX	48

static const char *const base_kind_names[K_CMD0] = {
	[K_OPEN] = "open",
	[K_CLOSE] = "close",
	[K_IOCTL_RANDOM] = "ioctl_random",
	[K_MMAP] = "mmap",
	[K_MUNMAP] = "munmap",
	[K_PAGE_WRITE] = "page_write",
	[K_PAGE_READ] = "page_read",
	[K_NETLINK] = "netlink",
	[K_RING] = "ring",
};

/* The size field a command's struct carries. */
enum size_kind {
	SZ_EXACT,		/* sizeof the struct we know */
	SZ_ZERO,
	SZ_ONE,
	SZ_THREE,
	SZ_MIN_LESS_1,		/* one byte short of the first version */
	SZ_MIN,			/* exactly the first version */
	SZ_LONGER_ZERO,		/* longer, zero tail: accepted */
	SZ_LONGER_DIRTY,	/* longer, one non-zero tail byte: -E2BIG */
	SZ_PAGE,		/* a page, zero tail */
	SZ_PAGE_DIRTY,
	SZ_PAGE_PLUS_1,
	SZ_HUGE,
	NR_SIZE_KINDS,
};

static const struct {
	const char *name;
	unsigned int weight;
} size_kinds[NR_SIZE_KINDS] = {
	[SZ_EXACT] = { "exact", 300 },
	[SZ_ZERO] = { "zero", 6 },
	[SZ_ONE] = { "one", 4 },
	[SZ_THREE] = { "three", 4 },
	[SZ_MIN_LESS_1] = { "min-1", 8 },
	[SZ_MIN] = { "min", 10 },
	[SZ_LONGER_ZERO] = { "longer", 12 },
	[SZ_LONGER_DIRTY] = { "longer-dirty", 10 },
	[SZ_PAGE] = { "page", 5 },
	[SZ_PAGE_DIRTY] = { "page-dirty", 4 },
	[SZ_PAGE_PLUS_1] = { "page+1", 5 },
	[SZ_HUGE] = { "huge", 6 },
};

/* Where the ioctl argument points. */
enum ptr_kind {
	P_BUF,			/* a private buffer: fine */
	P_UNALIGNED,		/* same, at an odd address: fine */
	P_NULL,
	P_ONE,			/* (void *)1 */
	P_UNMAPPED,		/* a page nothing maps */
	P_GUARD,		/* a PROT_NONE page */
	P_STRADDLE,		/* starts in a page, runs into an unmapped one */
	P_RO,			/* a read-only page: no answer possible */
	P_KERNEL,		/* the direct map */
	P_KTEXT,		/* kernel text */
	P_NONCANON,		/* a non-canonical address */
	NR_PTR_KINDS,
};

static const struct {
	const char *name;
	unsigned int weight;
} ptr_kinds[NR_PTR_KINDS] = {
	[P_BUF] = { "buf", 300 },
	[P_UNALIGNED] = { "unaligned", 10 },
	[P_NULL] = { "NULL", 4 },
	[P_ONE] = { "1", 3 },
	[P_UNMAPPED] = { "unmapped", 4 },
	[P_GUARD] = { "prot-none", 3 },
	[P_STRADDLE] = { "straddle", 12 },
	[P_RO] = { "read-only", 8 },
	[P_KERNEL] = { "kernel", 3 },
	[P_KTEXT] = { "kernel-text", 2 },
	[P_NONCANON] = { "non-canonical", 2 },
};

/* One operation, as checked, logged and published while in flight. */
struct fuzz_op {
	uint16_t kind;		/* enum fuzz_kind */
	uint8_t size_kind;	/* enum size_kind, ioctls */
	uint8_t ptr_kind;	/* enum ptr_kind, ioctls */
	int32_t fd;
	uint64_t cmd;		/* ioctl number; mmap: prot << 32 | flags */
	uint64_t len;		/* mmap length; ioctl: bytes readable at arg */
	uint64_t off;		/* mmap offset; page ops: page index */
	uint32_t size;		/* the struct's size field */
	uint32_t arg;		/* the command's main input: flags or id */
	uint32_t expect;	/* outcomes the oracle allows (O() bits) */
	int32_t err;		/* 0 or the errno */
	uint64_t seq;		/* the thread's action number */
};

/* Shared by the parent and every worker (MAP_SHARED). */
struct fuzz_shared {
	uint64_t budget;		/* operations, UINT64_MAX: no limit */
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC, 0: none */
	uint64_t count[NR_KINDS_MAX];	/* operations issued, by kind */
	uint64_t faults;		/* SIGSEGV/SIGBUS in a device mapping */
	uint64_t failures;
	uint32_t stop;
	uint32_t kill_intent[MAX_PROCS];	/* generation + 1 that killed itself */
	uint32_t busy[MAX_PROCS][MAX_THREADS];	/* inflight[] is an op in the kernel */
	struct fuzz_op inflight[MAX_PROCS][MAX_THREADS];
	char fail_msg[MAX_FAIL_MSGS][FAIL_MSG_LEN];
};

static struct {
	uint64_t seed;
	uint64_t ops;
	unsigned int seconds;
	unsigned int procs;
	unsigned int threads;
	int verbose;
	bool ops_given;
	size_t page;
	uint32_t max_objects;
	uint32_t features;
	int shared_fd[NR_SHARED_FDS];
	uint16_t nl_family;	/* the "kfab" family's id, 0: not found */
} cfg = {
	.ops = 20000,
	.procs = 3,
	.threads = 3,
};

static struct fuzz_shared *shm;

/* A worker process: its files and the ids it has seen, shared by its threads. */
struct fuzz_proc {
	unsigned int slot;
	unsigned int gen;
	bool racy;		/* several threads: a slot's fd may close under us */
	int fds[NR_SLOTS];	/* -1: empty */
	uint32_t ids[NR_IDS];	/* 0: empty; ID_DEAD: destroyed */
	struct fuzz_region {	/* from CQ_OPEN and CNTR_OPEN answers */
		int fd;		/* the file that answered (may be closed since) */
		uint64_t off;	/* 0: empty */
		uint64_t len;
		bool writable;
	} regions[NR_REGIONS];
};

#define ID_DEAD		(1u << 31)

struct fuzz_ring;

struct fuzz_map {
	uint8_t *addr;		/* NULL: free */
	size_t len;
	int prot;
	const struct fuzz_ring *ring;
};

struct fuzz_thread {
	struct fuzz_proc *proc;
	unsigned int idx;
	uint64_t rng;
	uint64_t seq;
	uint8_t *scratch;	/* 2 pages: where a struct is built */
	uint8_t *buf;		/* 3 pages: for unaligned placement */
	uint8_t *guard;		/* a PROT_NONE page */
	uint8_t *ro;		/* a read-only page */
	uint8_t *edge;		/* a writable page followed by an unmapped one */
	uint8_t *mem;		/* the mapping scratch..ro live in */
	struct fuzz_map maps[NR_MAPS];
	int nl_sock;		/* a generic netlink socket, -1: none yet */
	pthread_t tid;
};

/* Random numbers: splitmix64, one stream per thread. */
static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(struct fuzz_thread *t)
{
	t->rng += 0x9e3779b97f4a7c15ull;
	return mix64(t->rng);
}

static uint32_t rnd_below(struct fuzz_thread *t, uint32_t n)
{
	return n ? (uint32_t)(rnd(t) % n) : 0;
}

static bool chance(struct fuzz_thread *t, uint32_t num, uint32_t den)
{
	return rnd_below(t, den) < num;
}

static unsigned int pick_weighted(struct fuzz_thread *t, const unsigned int *w,
				  unsigned int n)
{
	unsigned int i, total = 0, r;

	for (i = 0; i < n; i++)
		total += w[i];
	r = rnd_below(t, total);
	for (i = 0; i < n - 1; i++) {
		if (r < w[i])
			return i;
		r -= w[i];
	}
	return n - 1;
}

static unsigned int pick_size_kind(struct fuzz_thread *t)
{
	unsigned int w[NR_SIZE_KINDS], i;

	for (i = 0; i < NR_SIZE_KINDS; i++)
		w[i] = size_kinds[i].weight;
	return pick_weighted(t, w, NR_SIZE_KINDS);
}

static unsigned int pick_ptr_kind(struct fuzz_thread *t, bool good_too)
{
	unsigned int w[NR_PTR_KINDS], i;

	for (i = 0; i < NR_PTR_KINDS; i++)
		w[i] = ptr_kinds[i].weight;
	if (!good_too)
		w[P_BUF] = w[P_UNALIGNED] = 0;
	return pick_weighted(t, w, NR_PTR_KINDS);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Budget */

static uint64_t total_ops(void)
{
	uint64_t sum = 0;
	unsigned int k;

	/* Kinds past the last one in use stay zero. */
	for (k = 0; k < NR_KINDS_MAX; k++)
		sum += __atomic_load_n(&shm->count[k], __ATOMIC_RELAXED);
	return sum;
}

/*
 * The budget counts operations issued, not handed out: an operation a
 * worker took just before it was SIGKILLed was never issued, and must not
 * use up budget.  Workers running at once may overshoot by one each.
 */
static bool budget_over(void)
{
	if (__atomic_load_n(&shm->stop, __ATOMIC_RELAXED))
		return true;
	if (shm->deadline_ns && now_ns() >= shm->deadline_ns)
		return true;
	return total_ops() >= shm->budget;
}

/* May one more operation be issued? */
static bool take_op(void)
{
	if (__atomic_load_n(&shm->stop, __ATOMIC_RELAXED))
		return false;
	if (shm->deadline_ns && now_ns() >= shm->deadline_ns)
		return false;
	return total_ops() < shm->budget;
}

static void count(unsigned int kind)
{
	__atomic_fetch_add(&shm->count[kind], 1, __ATOMIC_RELAXED);
}

/* Commands */

static const struct fuzz_cmd *cmd_by_nr(unsigned int nr);
static void pool_add(struct fuzz_thread *t, uint32_t id);
static void pool_forget(struct fuzz_thread *t, uint32_t id);
static uint32_t pick_id(struct fuzz_thread *t);
static void fail_op(struct fuzz_thread *t, const struct fuzz_op *op,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

struct fuzz_cmd {
	const char *name;
	unsigned long ioc;	/* KFAB_IOC_*: number and the kernel's struct size */
	size_t min_size;	/* offsetofend() of the first version's last member */
	bool answers;		/* copies the struct back: read-only is -EFAULT */
	bool test_only;		/* CONFIG_KFAB_TEST only: -ENOTTY in production */
	bool private_file;	/* test-only and sent to a file of its own */
	uint32_t errnos;	/* documented beyond DISPATCH_ERRNOS */
	unsigned int weight;
	void (*gen)(struct fuzz_thread *t, void *cmd, struct fuzz_op *op);
	uint32_t (*expect)(const void *cmd);
	void (*done)(struct fuzz_thread *t, const void *cmd, struct fuzz_op *op);
};

static uint32_t rnd_flags(struct fuzz_thread *t)
{
	switch (rnd_below(t, 24)) {
	case 0:
		return 1u << rnd_below(t, 32);
	case 1:
		return (uint32_t)rnd(t) | 1u << rnd_below(t, 32);
	default:
		return 0;
	}
}

static uint32_t rnd_reserved(struct fuzz_thread *t)
{
	return chance(t, 1, 20) ? (uint32_t)rnd(t) | 1u << rnd_below(t, 32) : 0;
}

/* KFAB_IOC_QUERY */

static void gen_query(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_query *q = p;

	q->flags = rnd_flags(t);
	if (chance(t, 1, 4)) {
		/* Outputs hold garbage on input: the kernel overwrites them. */
		q->abi_version = (uint32_t)rnd(t);
		q->features = (uint32_t)rnd(t);
		q->max_objects = (uint32_t)rnd(t);
		q->max_ioctl_size = (uint32_t)rnd(t);
		q->module_version = (uint32_t)rnd(t);
		q->__reserved = (uint32_t)rnd(t);
	}
	op->arg = q->flags;
}

static uint32_t expect_query(const void *p)
{
	const struct kfab_query *q = p;

	return q->flags ? O(EOPNOTSUPP) : O(OK);
}

static void done_query(struct fuzz_thread *t, const void *p, struct fuzz_op *op)
{
	const struct kfab_query *q = p;

	if (q->size != op->size || q->flags || q->abi_version != KFAB_ABI_VERSION ||
	    q->features != cfg.features || q->max_objects != cfg.max_objects ||
	    q->max_ioctl_size != cfg.page || q->__reserved)
		fail_op(t, op, "bad answer: size %u flags %#x abi_version %u features %#x max_objects %u max_ioctl_size %u reserved %#x",
			q->size, q->flags, q->abi_version, q->features,
			q->max_objects, q->max_ioctl_size, q->__reserved);
}

/* KFAB_IOC_DESTROY */

static void gen_destroy(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_destroy *d = p;

	d->id = pick_id(t);
	op->arg = d->id;
}

static uint32_t expect_destroy(const void *p)
{
	const struct kfab_destroy *d = p;

	/* Ids are never 0 and never above max_objects. */
	if (!d->id || d->id > cfg.max_objects)
		return O(ENOENT);
	return O(OK) | O(ENOENT) | O(EBUSY);
}

static void done_destroy(struct fuzz_thread *t, const void *p, struct fuzz_op *op)
{
	const struct kfab_destroy *d = p;

	pool_forget(t, d->id);
}

/* KFAB_IOC_DOMAIN_ALLOC */

static void gen_domain_alloc(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_domain_alloc *d = p;

	d->flags = rnd_flags(t);
	d->__reserved = rnd_reserved(t);
	if (chance(t, 1, 4))
		d->out_domain_id = (uint32_t)rnd(t);
	op->arg = d->flags;
}

static uint32_t expect_domain_alloc(const void *p)
{
	const struct kfab_domain_alloc *d = p;

	/* abi.rst does not order the two checks. */
	if (d->flags && d->__reserved)
		return O(EOPNOTSUPP) | O(EINVAL);
	if (d->flags)
		return O(EOPNOTSUPP);
	if (d->__reserved)
		return O(EINVAL);
	return O(OK) | O(ENOSPC) | O(ENOMEM);
}

static void done_domain_alloc(struct fuzz_thread *t, const void *p,
			      struct fuzz_op *op)
{
	const struct kfab_domain_alloc *d = p;

	if (!d->out_domain_id || d->out_domain_id > cfg.max_objects ||
	    d->flags || d->__reserved)
		fail_op(t, op, "bad answer: out_domain_id %u flags %#x reserved %#x (max_objects %u)",
			d->out_domain_id, d->flags, d->__reserved,
			cfg.max_objects);
	else
		pool_add(t, d->out_domain_id);
}

#ifdef KFAB_IOC_TEST_FAULT
/* KFAB_IOC_TEST_FAULT: arms a fault in a file nobody else uses */

static void gen_test_fault(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	static const uint32_t nths[] = { 0, 1, 2, 3, INT32_MAX, UINT32_MAX };
	struct kfab_test_fault *f = p;

	f->flags = rnd_flags(t);
	if (!f->flags && chance(t, 1, 3))
		f->flags = KFAB_TEST_FAULT_PEEK;
	f->point = chance(t, 1, 5) ? (uint32_t)rnd(t) :
				     rnd_below(t, KFAB_FAULT_POINT_MAX + 1);
	f->nth = nths[rnd_below(t, ARRAY_SIZE(nths))];
	/*
	 * Another context only by an id no context has (ids count up from 1):
	 * a fault armed in a shared file or a kernel consumer's would break
	 * the oracle.
	 */
	if (chance(t, 1, 8))
		f->ctx_id = 0x80000000u | (uint32_t)rnd(t);
	if (chance(t, 1, 4))
		f->out_remaining = (uint32_t)rnd(t);
	if (chance(t, 1, 4))
		f->out_fired = (uint32_t)rnd(t);
	op->arg = f->point;
}

static uint32_t expect_test_fault(const void *p)
{
	const struct kfab_test_fault *f = p;

	if (f->flags & ~KFAB_TEST_FAULT_PEEK)
		return O(EOPNOTSUPP);
	if (f->point >= KFAB_FAULT_POINT_MAX)
		return O(EINVAL);
	/* Root: no such context; others: not theirs to arm. */
	if (f->ctx_id)
		return O(ENOENT) | O(EPERM);
	return O(OK);
}

static void done_test_fault(struct fuzz_thread *t, const void *p,
			    struct fuzz_op *op)
{
	const struct kfab_test_fault *f = p;

	/* The file is new: nothing was armed nor fired in it. */
	if (f->out_remaining || f->out_fired || !f->out_ctx_id)
		fail_op(t, op, "bad answer: out_remaining %u out_fired %u out_ctx_id %u in a new file",
			f->out_remaining, f->out_fired, f->out_ctx_id);
}
#endif

/* Mapped regions a CQ_OPEN or CNTR_OPEN answer offered */
static void region_add(struct fuzz_thread *t, int fd, uint64_t off,
		       uint64_t len, bool writable)
{
	struct fuzz_region *r = &t->proc->regions[rnd_below(t, NR_REGIONS)];

	/* Threads of a worker race here: a torn entry is just another test. */
	r->fd = fd;
	r->off = off;
	r->len = len;
	r->writable = writable;
}

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static uint32_t rnd_entries(struct fuzz_thread *t)
{
	static const uint32_t e[] = { 0, 1, 2, 3, 64, 1000, KFAB_CQ_MAX_ENTRIES,
				      KFAB_CQ_MAX_ENTRIES + 1, UINT32_MAX };

	return chance(t, 1, 10) ? (uint32_t)rnd(t) : e[rnd_below(t, ARRAY_SIZE(e))];
}

/* An eventfd field: mostly none; else some fd number, open or not. */
static void rnd_eventfd(struct fuzz_thread *t, uint32_t *flags, int32_t *efd,
			uint32_t flag)
{
	if (chance(t, 1, 6)) {
		*flags |= flag;
		*efd = chance(t, 1, 4) ? -1 : (int32_t)rnd_below(t, 24);
	} else if (chance(t, 1, 30)) {
		*efd = (int32_t)rnd(t);	/* without the flag: -EINVAL */
	}
}

/* KFAB_IOC_CQ_OPEN */

static void gen_cq_open(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_cq_open *c = p;

	c->flags = rnd_flags(t);
	c->domain_id = pick_id(t);
	c->entries = rnd_entries(t);
	rnd_eventfd(t, &c->flags, &c->eventfd, KFAB_CQ_OPEN_EVENTFD);
	if (chance(t, 1, 4)) {
		c->out_cq_id = (uint32_t)rnd(t);
		c->out_ring.ring.offset = rnd(t);
		c->out_ring.off_head = (uint32_t)rnd(t);
		c->out_ring.__reserved = (uint32_t)rnd(t);
	}
	op->arg = c->domain_id;
}

static uint32_t expect_cq_open(const void *p)
{
	const struct kfab_cq_open *c = p;
	uint32_t bad = 0;

	/* abi.rst does not order the checks: any of those that apply. */
	if (c->flags & ~(KFAB_CQ_OPEN_EVENTFD | KFAB_CQ_OPEN_PAYLOAD))
		bad |= O(EOPNOTSUPP);
	if (c->entries > KFAB_CQ_MAX_ENTRIES ||
	    (!(c->flags & KFAB_CQ_OPEN_EVENTFD) && c->eventfd))
		bad |= O(EINVAL);
	if (bad)
		return bad;
	if (!c->domain_id || c->domain_id > cfg.max_objects)
		return O(ENOENT);
	if (c->flags & KFAB_CQ_OPEN_EVENTFD)
		return O(OK) | O(ENOENT) | O(ENOSPC) | O(ENOMEM) | O(EBADF) |
		       O(EINVAL);
	return O(OK) | O(ENOENT) | O(ENOSPC) | O(ENOMEM);
}

static void done_cq_open(struct fuzz_thread *t, const void *p,
			 struct fuzz_op *op)
{
	const struct kfab_cq_open *c = p;
	uint64_t page = cfg.page;

	if (!c->out_cq_id || c->out_cq_id > cfg.max_objects ||
	    !is_pow2(c->out_ring.entries) || c->out_ring.entries > KFAB_CQ_MAX_ENTRIES ||
	    c->out_ring.entries < c->entries ||
	    c->out_ring.entry_size != sizeof(struct kfab_cq_entry) +
	    (c->flags & KFAB_CQ_OPEN_PAYLOAD ? KFAB_CQ_PAYLOAD_MAX : 0) ||
	    !c->out_ring.ring.offset || c->out_ring.ring.offset % page ||
	    !c->out_ring.cons.offset || c->out_ring.cons.offset % page ||
	    c->out_ring.ring.size % page || c->out_ring.cons.size % page ||
	    c->out_ring.off_entries + (uint64_t)c->out_ring.entries * c->out_ring.entry_size >
	    c->out_ring.ring.size || c->out_ring.off_head + 4 > c->out_ring.cons.size ||
	    c->out_ring.off_armed + 4 > c->out_ring.cons.size ||
	    c->out_ring.__reserved) {
		fail_op(t, op, "bad answer: cq %u entries %u/%u entry_size %u ring %#llx+%#llx cons %#llx+%#llx",
			c->out_cq_id, c->out_ring.entries, c->entries,
			c->out_ring.entry_size,
			(unsigned long long)c->out_ring.ring.offset,
			(unsigned long long)c->out_ring.ring.size,
			(unsigned long long)c->out_ring.cons.offset,
			(unsigned long long)c->out_ring.cons.size);
		return;
	}
	pool_add(t, c->out_cq_id);
	region_add(t, op->fd, c->out_ring.ring.offset, c->out_ring.ring.size, false);
	region_add(t, op->fd, c->out_ring.cons.offset, c->out_ring.cons.size, true);
}

/* KFAB_IOC_CQ_DRAIN */

static void gen_cq_drain(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_cq_drain *d = p;

	d->flags = rnd_flags(t);
	d->cq_id = pick_id(t);
	if (chance(t, 1, 4))
		d->out_overflow = (uint32_t)rnd(t);
	op->arg = d->cq_id;
}

static uint32_t expect_cq_drain(const void *p)
{
	const struct kfab_cq_drain *d = p;

	if (d->flags)
		return O(EOPNOTSUPP);
	if (!d->cq_id || d->cq_id > cfg.max_objects)
		return O(ENOENT);
	return O(OK) | O(ENOENT);
}

/* KFAB_IOC_CQ_HELP: pieces of large copies waiting on a CQ (share.c) */

static void gen_cq_help(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_cq_help *h = p;

	h->flags = rnd_flags(t);
	h->cq_id = pick_id(t);
	if (chance(t, 1, 8))
		h->__reserved = (uint32_t)rnd(t);
	if (chance(t, 1, 4))
		h->out_chunks = rnd(t);
	op->arg = h->cq_id;
}

static uint32_t expect_cq_help(const void *p)
{
	const struct kfab_cq_help *h = p;
	uint32_t bad = 0;

	if (h->flags)
		bad |= O(EOPNOTSUPP);
	if (h->__reserved)
		bad |= O(EINVAL);
	if (bad)
		return bad;
	if (!h->cq_id || h->cq_id > cfg.max_objects)
		return O(ENOENT);
	return O(OK) | O(ENOENT);
}

/* KFAB_IOC_CQ_READERR */

static uint64_t rnd_user_ptr(struct fuzz_thread *t)
{
	switch (rnd_below(t, 6)) {
	case 0:
		return 0;
	case 1:
		return 1;
	case 2:
		return (uintptr_t)t->guard;
	case 3:
		return (uintptr_t)t->ro;
	case 4:
		return 0xffff888000000000ull;
	default:
		return (uintptr_t)t->buf;	/* fine: 3 pages */
	}
}

static void gen_cq_readerr(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_cq_readerr *r = p;

	r->flags = rnd_flags(t);
	r->__reserved = rnd_reserved(t);
	r->cq_id = pick_id(t);
	r->err_data = rnd_user_ptr(t);
	r->err_data_size = chance(t, 1, 8) ? (uint32_t)rnd(t) :
					     rnd_below(t, 2 * KFAB_CQ_ERR_DATA_MAX);
	if (r->err_data == (uintptr_t)t->buf && r->err_data_size > 3 * cfg.page)
		r->err_data_size = 3 * cfg.page;
	op->arg = r->cq_id;
}

static uint32_t expect_cq_readerr(const void *p)
{
	const struct kfab_cq_readerr *r = p;
	uint32_t bad = 0;

	if (r->flags)
		bad |= O(EOPNOTSUPP);
	if (r->__reserved)
		bad |= O(EINVAL);
	if (bad)
		return bad;
	if (!r->cq_id || r->cq_id > cfg.max_objects)
		return O(ENOENT);
	return O(OK) | O(ENOENT) | O(EAGAIN) | O(EFAULT);
}

/* KFAB_IOC_CNTR_OPEN */

static void gen_cntr_open(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_cntr_open *c = p;

	c->flags = rnd_flags(t);
	c->domain_id = pick_id(t);
	rnd_eventfd(t, &c->flags, &c->eventfd, KFAB_CNTR_OPEN_EVENTFD);
	if (chance(t, 1, 4))
		c->out_region.offset = rnd(t);
	op->arg = c->domain_id;
}

static uint32_t expect_cntr_open(const void *p)
{
	const struct kfab_cntr_open *c = p;
	uint32_t bad = 0;

	if (c->flags & ~KFAB_CNTR_OPEN_EVENTFD)
		bad |= O(EOPNOTSUPP);
	if (!(c->flags & KFAB_CNTR_OPEN_EVENTFD) && c->eventfd)
		bad |= O(EINVAL);
	if (bad)
		return bad;
	if (!c->domain_id || c->domain_id > cfg.max_objects)
		return O(ENOENT);
	if (c->flags & KFAB_CNTR_OPEN_EVENTFD)
		return O(OK) | O(ENOENT) | O(ENOSPC) | O(ENOMEM) | O(EBADF) |
		       O(EINVAL);
	return O(OK) | O(ENOENT) | O(ENOSPC) | O(ENOMEM);
}

static void done_cntr_open(struct fuzz_thread *t, const void *p,
			   struct fuzz_op *op)
{
	const struct kfab_cntr_open *c = p;

	if (!c->out_cntr_id || c->out_cntr_id > cfg.max_objects ||
	    !c->out_region.offset || c->out_region.offset % cfg.page ||
	    !c->out_region.size || c->out_region.size % cfg.page ||
	    c->out_off_value + 8 > c->out_region.size ||
	    c->out_off_err + 8 > c->out_region.size ||
	    c->out_off_seq + 4 > c->out_region.size) {
		fail_op(t, op, "bad answer: cntr %u mmap %#llx+%#llx",
			c->out_cntr_id, (unsigned long long)c->out_region.offset,
			(unsigned long long)c->out_region.size);
		return;
	}
	pool_add(t, c->out_cntr_id);
	region_add(t, op->fd, c->out_region.offset, c->out_region.size, false);
}

/* KFAB_IOC_CNTR_UPDATE */

static void gen_cntr_update(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_cntr_update *u = p;

	u->flags = rnd_flags(t);
	u->cntr_id = pick_id(t);
	u->op = chance(t, 1, 10) ? (uint32_t)rnd(t) :
				   rnd_below(t, KFAB_CNTR_OP_MAX + 1);
	u->value = rnd(t);
	op->arg = u->cntr_id;
}

static uint32_t expect_cntr_update(const void *p)
{
	const struct kfab_cntr_update *u = p;
	uint32_t bad = 0;

	if (u->flags)
		bad |= O(EOPNOTSUPP);
	if (u->op >= KFAB_CNTR_OP_MAX)
		bad |= O(EINVAL);
	if (bad)
		return bad;
	if (!u->cntr_id || u->cntr_id > cfg.max_objects)
		return O(ENOENT);
	return O(OK) | O(ENOENT);
}

/* KFAB_IOC_CNTR_WAIT: never a long sleep, the budget would stall */

static void gen_cntr_wait(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_cntr_wait *w = p;

	w->flags = rnd_flags(t);
	w->cntr_id = pick_id(t);
	w->timeout_ms = (int32_t)rnd_below(t, 3);
	w->threshold = chance(t, 1, 2) ? rnd_below(t, 4) : rnd(t);
	w->err = chance(t, 1, 2) ? 0 : rnd(t);
	op->arg = w->cntr_id;
}

static uint32_t expect_cntr_wait(const void *p)
{
	const struct kfab_cntr_wait *w = p;

	if (w->flags)
		return O(EOPNOTSUPP);
	if (!w->cntr_id || w->cntr_id > cfg.max_objects)
		return O(ENOENT);
	return O(OK) | O(ENOENT) | O(ETIMEDOUT) | O(EINTR);
}

#ifdef KFAB_IOC_TEST_CQ_POST
/* KFAB_IOC_TEST_CQ_POST: into the shared files' CQs, to fill their rings */

static void gen_test_cq_post(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_test_cq_post *c = p;

	c->flags = chance(t, 1, 4) ? KFAB_TEST_POST_ERROR : rnd_flags(t);
	c->cq_id = chance(t, 1, 8) ? 0 : pick_id(t);
	c->cntr_id = chance(t, 1, 2) ? 0 : pick_id(t);
	c->count = chance(t, 1, 20) ? (uint32_t)rnd(t) | KFAB_TEST_POST_MAX :
				      rnd_below(t, 300);
	c->context = rnd(t);
	c->entry_flags = rnd(t);
	c->err = (int32_t)rnd_below(t, 200);
	c->err_data = rnd_user_ptr(t);
	c->err_data_size = chance(t, 1, 10) ? (uint32_t)rnd(t) :
				rnd_below(t, KFAB_CQ_ERR_DATA_MAX + 1);
	op->arg = c->cq_id;
}

static uint32_t expect_test_cq_post(const void *p)
{
	const struct kfab_test_cq_post *c = p;
	uint32_t bad = 0;

	if (c->flags & ~KFAB_TEST_POST_ERROR)
		bad |= O(EOPNOTSUPP);
	if (c->count > KFAB_TEST_POST_MAX ||
	    c->err_data_size > KFAB_CQ_ERR_DATA_MAX)
		bad |= O(EINVAL);
	if (bad)
		return bad;
	return O(OK) | O(ENOENT) | O(EFAULT) | O(ENOSPC) | O(ENOMEM);
}
#endif

/* KFAB_IOC_EP_OPEN, _BIND, _ENABLE; KFAB_IOC_DOORBELL, _CANCEL */

static void fuzz_node(struct fuzz_thread *t, struct kfab_addr *a);

static void gen_ep_open(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_ep_open *c = p;

	static const uint32_t block_flags[] = {
		KFAB_EP_OPEN_BLOCK, KFAB_EP_OPEN_JOIN,
		KFAB_EP_OPEN_JOIN | KFAB_EP_OPEN_SEND_ONLY,
		KFAB_EP_OPEN_SEND_ONLY, KFAB_EP_OPEN_BLOCK | KFAB_EP_OPEN_JOIN,
	};

	c->flags = rnd_flags(t);
	/* Scalable endpoints: a block, or joining one (of any object). */
	if (chance(t, 1, 6)) {
		c->flags = block_flags[rnd_below(t, 5)];
		c->block_ep_id = pick_id(t);
		c->block_index = chance(t, 1, 4) ? (uint32_t)rnd(t) :
						   rnd_below(t, 8);
	}
	c->domain_id = pick_id(t);
	c->type = chance(t, 1, 10) ? (uint32_t)rnd(t) : KFAB_EP_TYPE_RDM;
	c->sq_entries = chance(t, 1, 2) ? 0 : rnd_entries(t);
	/* Mostly any address; sometimes a service, a family, or junk. */
	if (chance(t, 1, 4)) {
		c->src.family = rnd_below(t, 4);
		c->src.ep = htobe64(chance(t, 1, 2) ? 1 + rnd_below(t, 4) :
						      rnd(t));
		c->src.incarnation = chance(t, 1, 8) ? (uint32_t)rnd(t) : 0;
		c->src.__reserved = chance(t, 1, 8) ? 1 : 0;
		if (c->src.family == KFAB_ADDR_INET)
			fuzz_node(t, &c->src);
	}
	op->arg = c->domain_id;
}

static uint32_t expect_ep_open(const void *p)
{
	const struct kfab_ep_open *c = p;
	uint32_t e = c->sq_entries ? c->sq_entries : KFAB_SQ_DEFAULT_ENTRIES;

	if (c->flags & ~(uint32_t)(KFAB_EP_OPEN_BLOCK | KFAB_EP_OPEN_JOIN |
				   KFAB_EP_OPEN_SEND_ONLY))
		return O(EOPNOTSUPP);
	if (!c->flags && (c->block_ep_id || c->block_index))
		return O(EINVAL);
	/* A block's well-formedness, then the ep it joins (ENOENT/EINVAL). */
	if (c->flags)
		return O(OK) | O(ENOENT) | O(ENOSPC) | O(ENOMEM) | O(EINVAL) |
		       O(EADDRNOTAVAIL);
	if (c->type != KFAB_EP_TYPE_RDM || !is_pow2(e) ||
	    e > KFAB_SQ_MAX_ENTRIES)
		return O(EINVAL);
	/* The address is checked once the domain was found. */
	if (c->src.family || c->src.ep || c->src.incarnation ||
	    c->src.__reserved)
		return O(OK) | O(ENOENT) | O(ENOSPC) | O(ENOMEM) | O(EINVAL) |
		       O(EADDRINUSE) | O(EADDRNOTAVAIL);
	return O(OK) | O(ENOENT) | O(ENOSPC) | O(ENOMEM);
}

static void done_ep_open(struct fuzz_thread *t, const void *p,
			 struct fuzz_op *op)
{
	const struct kfab_ep_open *c = p;

	if (!c->out_ep_id || c->out_ep_id > cfg.max_objects ||
	    (c->out_addr.family != KFAB_ADDR_LOCAL &&
	     c->out_addr.family != KFAB_ADDR_INET) || !c->out_addr.ep ||
	    !is_pow2(c->out_sq.entries) ||
	    c->out_sq.entry_size != sizeof(struct kfab_sqe) ||
	    c->out_sq.region.offset % cfg.page ||
	    c->out_sq.region.size % cfg.page ||
	    c->out_sq.off_entries + (uint64_t)c->out_sq.entries *
	    c->out_sq.entry_size > c->out_sq.region.size ||
	    c->out_sq.off_flags + sizeof(uint32_t) > c->out_sq.off_entries) {
		fail_op(t, op, "bad answer: ep %u entries %u sqe %u",
			c->out_ep_id, c->out_sq.entries, c->out_sq.entry_size);
		return;
	}
	pool_add(t, c->out_ep_id);
	/* Writable: the fuzzer scribbles requests and indices into it. */
	region_add(t, op->fd, c->out_sq.region.offset, c->out_sq.region.size,
		   true);
}

static void gen_ep_bind(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_ep_bind *b = p;

	b->flags = chance(t, 1, 3) ? rnd_below(t, 8) : rnd_flags(t);
	b->ep_id = pick_id(t);
	b->obj_id = pick_id(t);
	op->arg = b->ep_id;
}

static uint32_t expect_ep_bind(const void *p)
{
	const struct kfab_ep_bind *b = p;

	if (b->flags & ~7u)
		return O(EOPNOTSUPP);
	return O(OK) | O(ENOENT) | O(EINVAL) | O(EEXIST) | O(EBUSY);
}

static void gen_ep_enable(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_ep_enable *e = p;

	e->flags = rnd_flags(t);
	e->ep_id = pick_id(t);
	e->__reserved = rnd_reserved(t);
	op->arg = e->ep_id;
}

static uint32_t expect_ep_enable(const void *p)
{
	const struct kfab_ep_enable *e = p;

	if (e->flags)
		return O(EOPNOTSUPP);
	if (e->__reserved)
		return O(EINVAL);
	/* EINVAL: an SRX whose endpoints use another AV. */
	return O(OK) | O(ENOENT) | O(EDESTADDRREQ) | O(ENOMEM) | O(EINVAL);
}

static void gen_doorbell(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_doorbell *d = p;

	d->flags = rnd_flags(t);
	d->obj_id = pick_id(t);
	op->arg = d->obj_id;
}

static uint32_t expect_doorbell(const void *p)
{
	const struct kfab_doorbell *d = p;

	if (d->flags)
		return O(EOPNOTSUPP);
	return O(OK) | O(ENOENT) | O(EINVAL);
}

/*
 * KFAB_IOC_SQ_WATCH on any id; KFAB_IOC_SQ_POLL only ever with
 * KFAB_SQ_POLL_STOP (a poll without it would keep the thread for good).
 */
static void gen_sq_watch(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_sq_watch *w = p;

	w->flags = chance(t, 1, 3) ? KFAB_SQ_WATCH_REMOVE : rnd_flags(t);
	w->obj_id = pick_id(t);
	w->__reserved = rnd_reserved(t);
	op->arg = w->obj_id;
}

static uint32_t expect_sq_watch(const void *p)
{
	const struct kfab_sq_watch *w = p;

	if (w->flags & ~KFAB_SQ_WATCH_REMOVE)
		return O(EOPNOTSUPP);
	if (w->__reserved)
		return O(EINVAL);
	return O(OK) | O(ENOENT) | O(EEXIST) | O(ENOSPC);
}

static void gen_sq_poll(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_sq_poll *c = p;

	c->flags = KFAB_SQ_POLL_STOP | rnd_flags(t);
	c->idle_us = (uint32_t)rnd(t);
	c->__reserved = rnd_reserved(t);
	c->out_done = rnd(t);
	c->out_parks = rnd(t);
}

static uint32_t expect_sq_poll(const void *p)
{
	const struct kfab_sq_poll *c = p;

	if (c->flags & ~KFAB_SQ_POLL_STOP)
		return O(EOPNOTSUPP);
	if (c->__reserved)
		return O(EINVAL);
	return O(OK);
}

static void gen_cancel(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_cancel *c = p;

	c->flags = rnd_flags(t);
	c->obj_id = pick_id(t);
	c->__reserved = rnd_reserved(t);
	c->context = chance(t, 1, 2) ? rnd_below(t, 4) : rnd(t);
	op->arg = c->obj_id;
}

static uint32_t expect_cancel(const void *p)
{
	const struct kfab_cancel *c = p;

	if (c->flags)
		return O(EOPNOTSUPP);
	if (c->__reserved)
		return O(EINVAL);
	return O(OK) | O(ENOENT);
}

/* KFAB_IOC_NET_LISTEN: on the loopback only, at a few ports */

#define FUZZ_PORT_BASE	17470
#define FUZZ_PORTS	3

/* A node for an INET address: this machine's loopback, or junk. */
static void fuzz_node(struct fuzz_thread *t, struct kfab_addr *a)
{
	static const uint8_t lo4[16] = { [10] = 0xff, [11] = 0xff, [12] = 127,
					 [15] = 1 };
	static const uint8_t lo6[16] = { [15] = 1 };

	switch (rnd_below(t, 5)) {
	case 0:
		memcpy(a->node, lo6, sizeof(a->node));
		break;
	case 1:
		for (size_t i = 0; i < sizeof(a->node); i++)
			a->node[i] = chance(t, 1, 2) ? (uint8_t)rnd(t) : 0;
		break;
	default:
		memcpy(a->node, lo4, sizeof(a->node));
	}
	a->port = htobe16(chance(t, 1, 8) ? 0 :
			  FUZZ_PORT_BASE + rnd_below(t, FUZZ_PORTS));
}

static void gen_net_listen(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_net_listen *c = p;

	(void)op;
	c->flags = chance(t, 1, 3) ? KFAB_NET_LISTEN_REMOVE : rnd_flags(t);
	c->addr.family = chance(t, 1, 10) ? rnd_below(t, 256) : KFAB_ADDR_INET;
	c->addr.__reserved = chance(t, 1, 20);
	c->addr.ep = chance(t, 1, 20) ? htobe64(rnd(t)) : 0;
	c->addr.incarnation = chance(t, 1, 20) ? (uint32_t)rnd(t) : 0;
	fuzz_node(t, &c->addr);
}

static uint32_t expect_net_listen(const void *p)
{
	const struct kfab_net_listen *c = p;
	const struct kfab_addr *a = &c->addr;
	static const uint8_t zero[16];

	if (c->flags & ~KFAB_NET_LISTEN_REMOVE)
		return O(EOPNOTSUPP);
	if (a->family != KFAB_ADDR_INET || a->__reserved || a->ep ||
	    a->incarnation || !memcmp(a->node, zero, sizeof(zero)))
		return O(EINVAL);
	if (c->flags & KFAB_NET_LISTEN_REMOVE)
		return O(OK) | O(ENOENT);
	return O(OK) | O(EADDRINUSE) | O(EADDRNOTAVAIL) | O(ENOMEM);
}

/* The listeners the run may have left: removed, so later tests see none. */
static void fuzz_unlisten_all(void)
{
	static const uint8_t lo4[16] = { [10] = 0xff, [11] = 0xff, [12] = 127,
					 [15] = 1 };
	static const uint8_t lo6[16] = { [15] = 1 };
	const uint8_t *nodes[] = { lo4, lo6 };
	int fd = open(KFAB_DEV, O_RDWR);

	if (fd < 0)
		return;
	for (size_t i = 0; i < 2; i++)
		for (int port = 0; port <= FUZZ_PORTS; port++) {
			struct kfab_net_listen c = {
				.size = sizeof(c),
				.flags = KFAB_NET_LISTEN_REMOVE,
				.addr = { .family = KFAB_ADDR_INET },
			};

			memcpy(c.addr.node, nodes[i], sizeof(c.addr.node));
			c.addr.port = htobe16(port == FUZZ_PORTS ? KFAB_PORT_DEFAULT :
					      FUZZ_PORT_BASE + port);
			ioctl(fd, KFAB_IOC_NET_LISTEN, &c);
		}
	close(fd);
}

/*
 * KFAB_IOC_NET_ALLOW: networks of 198.18.0.0/15 (a benchmarking range no
 * test uses) or junk; the run ends with the list cleared.
 */
static void gen_net_allow(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_net_allow *c = p;

	(void)op;
	c->flags = chance(t, 1, 4) ? KFAB_NET_ALLOW_REMOVE :
		   chance(t, 1, 20) ? KFAB_NET_ALLOW_CLEAR : rnd_flags(t);
	c->prefix_len = chance(t, 1, 10) ? (uint8_t)rnd(t) :
			(uint8_t)(96 + 15 + rnd_below(t, 18));
	c->__reserved[rnd_below(t, 7)] = chance(t, 1, 20);
	if (chance(t, 1, 10)) {
		for (size_t i = 0; i < sizeof(c->node); i++)
			c->node[i] = (uint8_t)rnd(t);
	} else if (!(c->flags & KFAB_NET_ALLOW_CLEAR)) {
		/* 198.18.X.0 with X inside the prefix: no bit past it. */
		uint32_t v4 = 0xc6120000 | (uint32_t)rnd_below(t, 256) << 8;
		unsigned int bits = c->prefix_len > 96 && c->prefix_len <= 128 ?
				    c->prefix_len - 96 : 32;

		v4 &= bits ? ~0u << (32 - bits) : 0;
		c->node[10] = c->node[11] = 0xff;
		c->node[12] = v4 >> 24;
		c->node[13] = v4 >> 16;
		c->node[14] = v4 >> 8;
		c->node[15] = v4;
	}
	if (c->flags == KFAB_NET_ALLOW_CLEAR && chance(t, 3, 4)) {
		c->prefix_len = 0;
		memset(c->node, 0, sizeof(c->node));
		memset(c->__reserved, 0, sizeof(c->__reserved));
	}
}

static uint32_t expect_net_allow(const void *p)
{
	const struct kfab_net_allow *c = p;
	static const uint8_t zero[16];
	unsigned int i;

	if (c->flags & ~(KFAB_NET_ALLOW_REMOVE | KFAB_NET_ALLOW_CLEAR))
		return O(EOPNOTSUPP);
	if (c->prefix_len > 128 ||
	    memcmp(c->__reserved, zero, sizeof(c->__reserved)))
		return O(EINVAL);
	for (i = c->prefix_len; i < 128; i++)
		if (c->node[i / 8] & (0x80 >> (i % 8)))
			return O(EINVAL);
	if (c->flags & KFAB_NET_ALLOW_CLEAR)
		return c->flags == KFAB_NET_ALLOW_CLEAR && !c->prefix_len &&
		       !memcmp(c->node, zero, sizeof(zero)) ? O(OK) : O(EINVAL);
	if (c->flags & KFAB_NET_ALLOW_REMOVE)
		return O(OK) | O(ENOENT);
	return O(OK) | O(EEXIST) | O(ENOSPC) | O(ENOMEM);
}

/* The allow-list the run may have left: cleared. */
static void fuzz_allow_clear(void)
{
	struct kfab_net_allow c = {
		.size = sizeof(c),
		.flags = KFAB_NET_ALLOW_CLEAR,
	};
	int fd = open(KFAB_DEV, O_RDWR);

	if (fd < 0)
		return;
	ioctl(fd, KFAB_IOC_NET_ALLOW, &c);
	close(fd);
}

/*
 * KFAB_IOC_RX_BUFFERED: on any object (endpoints and SRXs of the pool
 * among them), limits around the bounds; the region it offers is mapped
 * read-only by the mapping ops.
 */

static void gen_rx_buffered(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	static const uint32_t lim[] = { 0, 1, 63, 64, 4096,
					KFAB_BUFRECV_LIMIT_MAX,
					KFAB_BUFRECV_LIMIT_MAX + 1, UINT32_MAX };
	static const uint32_t n[] = { 0, 1, 2, 64, KFAB_BUFRECV_SLOTS_MAX,
				      KFAB_BUFRECV_SLOTS_MAX + 1, UINT32_MAX };
	struct kfab_rx_buffered *c = p;

	c->flags = rnd_flags(t);
	c->obj_id = pick_id(t);
	c->limit = chance(t, 1, 10) ? (uint32_t)rnd(t) :
		   lim[rnd_below(t, ARRAY_SIZE(lim))];
	c->slots = chance(t, 1, 10) ? (uint32_t)rnd(t) :
		   n[rnd_below(t, ARRAY_SIZE(n))];
	c->cookie = rnd(t);
	if (chance(t, 1, 4))
		c->out_region = rnd(t);
	op->arg = c->obj_id;
}

static uint32_t expect_rx_buffered(const void *p)
{
	const struct kfab_rx_buffered *c = p;
	uint32_t lim = c->limit ? c->limit : KFAB_BUFRECV_LIMIT_DEFAULT;
	uint32_t n = c->slots ? c->slots : KFAB_BUFRECV_SLOTS_DEFAULT;

	if (c->flags)
		return O(EOPNOTSUPP);
	if (lim > KFAB_BUFRECV_LIMIT_MAX)
		return O(EMSGSIZE);
	if (n > KFAB_BUFRECV_SLOTS_MAX)
		return O(EINVAL);
	return O(OK) | O(ENOENT) | O(EINVAL) | O(EBUSY) | O(ENOSPC) |
	       O(ENOMEM);
}

static void done_rx_buffered(struct fuzz_thread *t, const void *p,
			     struct fuzz_op *op)
{
	const struct kfab_rx_buffered *c = p;
	uint32_t lim = c->limit ? c->limit : KFAB_BUFRECV_LIMIT_DEFAULT;

	if (c->out_limit != lim || c->out_stride < lim ||
	    c->out_stride % 64 || !c->out_slots ||
	    (uint64_t)c->out_slots * c->out_stride > KFAB_BUFRECV_REGION_MAX ||
	    c->out_region % cfg.page) {
		fail_op(t, op, "bad answer: limit %u stride %u slots %u",
			c->out_limit, c->out_stride, c->out_slots);
		return;
	}
	region_add(t, op->fd, c->out_region,
		   ((uint64_t)c->out_slots * c->out_stride + cfg.page - 1) /
		   cfg.page * cfg.page, false);
}

/* KFAB_IOC_SRX_OPEN: its ring is fuzzed as an endpoint's is. */

static void gen_srx_open(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_srx_open *c = p;

	c->flags = rnd_flags(t);
	c->domain_id = pick_id(t);
	c->sq_entries = chance(t, 1, 2) ? 0 : rnd_entries(t);
	op->arg = c->domain_id;
}

static uint32_t expect_srx_open(const void *p)
{
	const struct kfab_srx_open *c = p;
	uint32_t e = c->sq_entries ? c->sq_entries : KFAB_SQ_DEFAULT_ENTRIES;

	if (c->flags)
		return O(EOPNOTSUPP);
	if (!is_pow2(e) || e > KFAB_SQ_MAX_ENTRIES)
		return O(EINVAL);
	return O(OK) | O(ENOENT) | O(ENOSPC) | O(ENOMEM);
}

static void done_srx_open(struct fuzz_thread *t, const void *p,
			  struct fuzz_op *op)
{
	const struct kfab_srx_open *c = p;

	if (!c->out_srx_id || c->out_srx_id > cfg.max_objects ||
	    !is_pow2(c->out_sq.entries) ||
	    c->out_sq.entry_size != sizeof(struct kfab_sqe) ||
	    c->out_sq.region.offset % cfg.page ||
	    c->out_sq.region.size % cfg.page ||
	    c->out_sq.off_entries + (uint64_t)c->out_sq.entries *
	    c->out_sq.entry_size > c->out_sq.region.size ||
	    c->__reserved ||
	    c->out_sq.off_flags + sizeof(uint32_t) > c->out_sq.off_entries) {
		fail_op(t, op, "bad answer: srx %u entries %u sqe %u",
			c->out_srx_id, c->out_sq.entries, c->out_sq.entry_size);
		return;
	}
	pool_add(t, c->out_srx_id);
	region_add(t, op->fd, c->out_sq.region.offset, c->out_sq.region.size,
		   true);
}

/* KFAB_IOC_AV_OPEN, _INSERT, _REMOVE, _UNLINK */

/* A few names, so that workers in different processes share named AVs. */
static const char *const av_names[] = { "fz0", "fz1", "fz2", "fz-3.x" };

static uint64_t rnd_av_name(struct fuzz_thread *t)
{
	switch (rnd_below(t, 8)) {
	case 0:
		return 0;				/* unnamed */
	case 1:
		return rnd_user_ptr(t);			/* bad or odd pointers */
	case 2:
		/* No NUL before an unmapped page: -EFAULT. */
		memset(t->edge + cfg.page - 8, 'a', 8);
		return (uintptr_t)(t->edge + cfg.page - 8);
	case 3:
		/* Too long, or bad characters. */
		memset(t->edge, chance(t, 1, 2) ? 'b' : '/', 100);
		t->edge[chance(t, 1, 2) ? 100 : 20] = '\0';
		return (uintptr_t)t->edge;
	default:
		return (uintptr_t)av_names[rnd_below(t, ARRAY_SIZE(av_names))];
	}
}

static void gen_av_open(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_av_open *c = p;

	/* No KFAB_AV_OPEN_PERSIST: a persistent name would outlive the run. */
	c->flags = chance(t, 1, 2) ? rnd_below(t, 8) | (rnd_below(t, 2) << 4) :
				     rnd_flags(t) & ~KFAB_AV_OPEN_PERSIST;
	c->domain_id = pick_id(t);
	c->type = rnd_below(t, 4);
	c->count = chance(t, 1, 8) ? (uint32_t)rnd(t) : rnd_below(t, 3000);
	c->mode = chance(t, 1, 8) ? (uint32_t)rnd(t) : 0600;
	c->uid = rnd_below(t, 3) * 1000;
	c->gid = c->uid;
	c->__reserved = rnd_reserved(t);
	c->name = rnd_av_name(t);
	c->map_addr = rnd(t);
	op->arg = c->domain_id;
}

static uint32_t expect_av_open(const void *p)
{
	const struct kfab_av_open *c = p;

	if (c->flags & ~0x1fu)
		return O(EOPNOTSUPP);
	return O(OK) | O(EINVAL) | O(ENOENT) | O(EEXIST) | O(EFAULT) |
	       O(ENAMETOOLONG) | O(ENOSPC) | O(ENOMEM) | O(EDQUOT);
}

static void done_av_open(struct fuzz_thread *t, const void *p,
			 struct fuzz_op *op)
{
	const struct kfab_av_open *c = p;

	if (!c->out_av_id || c->out_av_id > cfg.max_objects ||
	    (c->out_type != KFAB_AV_TYPE_TABLE &&
	     c->out_type != KFAB_AV_TYPE_MAP) || !c->out_count ||
	    c->out_region.offset % cfg.page || c->out_region.size % cfg.page ||
	    c->out_region.size < sizeof(struct kfab_av_header) +
			       (uint64_t)c->out_count *
			       sizeof(struct kfab_av_entry)) {
		fail_op(t, op, "bad answer: av %u type %u count %u",
			c->out_av_id, c->out_type, c->out_count);
		return;
	}
	pool_add(t, c->out_av_id);
	region_add(t, op->fd, c->out_region.offset, c->out_region.size, false);
}

/* @n random, mostly valid, addresses in the thread's buffer */
static uint64_t rnd_addrs(struct fuzz_thread *t, uint32_t n)
{
	struct kfab_addr *a = (struct kfab_addr *)t->buf;
	uint32_t i, max = 3 * cfg.page / sizeof(*a);

	for (i = 0; i < n && i < max; i++) {
		a[i] = (struct kfab_addr){
			.family = chance(t, 1, 8) ? (uint8_t)rnd(t) :
						    KFAB_ADDR_LOCAL,
			.port = chance(t, 1, 8) ? (uint16_t)rnd(t) : 0,
			.incarnation = chance(t, 1, 8) ? (uint32_t)rnd(t) : 0,
			.ep = htobe64(rnd_below(t, 64)),
		};
		if (chance(t, 1, 8))
			a[i].node[rnd_below(t, 16)] = rnd(t);
	}
	return chance(t, 1, 8) ? rnd_user_ptr(t) : (uintptr_t)a;
}

static uint32_t rnd_count(struct fuzz_thread *t)
{
	if (chance(t, 1, 10))
		return chance(t, 1, 2) ? (uint32_t)rnd(t) : KFAB_AV_BATCH_MAX + 1;
	return rnd_below(t, 8);
}

static void gen_av_insert(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_av_insert *c = p;

	c->flags = rnd_flags(t);
	c->av_id = pick_id(t);
	c->count = rnd_count(t);
	c->addrs = rnd_addrs(t, c->count);
	/* Answers go to the second page of the scratch buffer, or nowhere. */
	c->indices = chance(t, 1, 4) ? rnd_user_ptr(t) :
				       (uintptr_t)(t->buf + cfg.page);
	c->errors = chance(t, 1, 2) ? 0 : (uintptr_t)(t->buf + 2 * cfg.page);
	if (c->count > 256 && c->indices == (uintptr_t)(t->buf + cfg.page))
		c->indices = 0;
	if (c->count > 256)
		c->errors = 0;
	c->__reserved = rnd_reserved(t);
	op->arg = c->av_id;
}

static uint32_t expect_av_insert(const void *p)
{
	const struct kfab_av_insert *c = p;

	if (c->flags)
		return O(EOPNOTSUPP);
	return O(OK) | O(EINVAL) | O(E2BIG) | O(ENOENT) | O(EPERM) |
	       O(EFAULT) | O(ENOMEM);
}

static void gen_av_remove(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_av_remove *c = p;
	uint32_t *idx = (uint32_t *)t->buf, i;

	c->flags = rnd_flags(t);
	c->av_id = pick_id(t);
	c->count = rnd_count(t);
	for (i = 0; i < c->count && i < 3 * cfg.page / sizeof(*idx); i++)
		idx[i] = chance(t, 1, 8) ? (uint32_t)rnd(t) : rnd_below(t, 8);
	c->indices = chance(t, 1, 8) ? rnd_user_ptr(t) : (uintptr_t)idx;
	op->arg = c->av_id;
}

static uint32_t expect_av_remove(const void *p)
{
	const struct kfab_av_remove *c = p;

	if (c->flags)
		return O(EOPNOTSUPP);
	return O(OK) | O(EINVAL) | O(E2BIG) | O(ENOENT) | O(EPERM) |
	       O(EFAULT) | O(ENOMEM);
}

static void gen_av_unlink(struct fuzz_thread *t, void *p, struct fuzz_op *op)
{
	struct kfab_av_unlink *c = p;

	c->flags = rnd_flags(t);
	c->name = rnd_av_name(t);
}

static uint32_t expect_av_unlink(const void *p)
{
	const struct kfab_av_unlink *c = p;

	if (c->flags)
		return O(EOPNOTSUPP);
	return O(OK) | O(EINVAL) | O(EFAULT) | O(ENAMETOOLONG) | O(ENOENT) |
	       O(EPERM);
}

static const struct fuzz_cmd fuzz_cmds[] = {
	{
		.name = "query",
		.ioc = KFAB_IOC_QUERY,
		.min_size = offsetofend(struct kfab_query, __reserved),
		.answers = true,
		.errnos = O(EOPNOTSUPP),
		.weight = 3,
		.gen = gen_query,
		.expect = expect_query,
		.done = done_query,
	},
	{
		.name = "destroy",
		.ioc = KFAB_IOC_DESTROY,
		.min_size = offsetofend(struct kfab_destroy, id),
		.answers = false,
		.errnos = O(ENOENT) | O(EBUSY),
		.weight = 4,
		.gen = gen_destroy,
		.expect = expect_destroy,
		.done = done_destroy,
	},
	{
		.name = "domain_alloc",
		.ioc = KFAB_IOC_DOMAIN_ALLOC,
		.min_size = offsetofend(struct kfab_domain_alloc, __reserved),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(ENOSPC) | O(ENOMEM),
		.weight = 4,
		.gen = gen_domain_alloc,
		.expect = expect_domain_alloc,
		.done = done_domain_alloc,
	},
	{
		.name = "cq_open",
		.ioc = KFAB_IOC_CQ_OPEN,
		.min_size = offsetofend(struct kfab_cq_open, out_ring),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(ENOENT) | O(ENOSPC) |
			  O(ENOMEM) | O(EBADF),
		.weight = 3,
		.gen = gen_cq_open,
		.expect = expect_cq_open,
		.done = done_cq_open,
	},
	{
		.name = "cq_drain",
		.ioc = KFAB_IOC_CQ_DRAIN,
		.min_size = offsetofend(struct kfab_cq_drain, out_overflow),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(ENOENT),
		.weight = 2,
		.gen = gen_cq_drain,
		.expect = expect_cq_drain,
	},
	{
		.name = "cq_readerr",
		.ioc = KFAB_IOC_CQ_READERR,
		.min_size = offsetofend(struct kfab_cq_readerr, __reserved),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(ENOENT) | O(EAGAIN) |
			  O(EFAULT),
		.weight = 2,
		.gen = gen_cq_readerr,
		.expect = expect_cq_readerr,
	},
	{
		.name = "cq_help",
		.ioc = KFAB_IOC_CQ_HELP,
		.min_size = offsetofend(struct kfab_cq_help, out_bytes),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(ENOENT),
		.weight = 2,
		.gen = gen_cq_help,
		.expect = expect_cq_help,
	},
	{
		.name = "cntr_open",
		.ioc = KFAB_IOC_CNTR_OPEN,
		.min_size = offsetofend(struct kfab_cntr_open, out_region.size),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(ENOENT) | O(ENOSPC) |
			  O(ENOMEM) | O(EBADF),
		.weight = 2,
		.gen = gen_cntr_open,
		.expect = expect_cntr_open,
		.done = done_cntr_open,
	},
	{
		.name = "cntr_update",
		.ioc = KFAB_IOC_CNTR_UPDATE,
		.min_size = offsetofend(struct kfab_cntr_update, out_err),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(ENOENT),
		.weight = 2,
		.gen = gen_cntr_update,
		.expect = expect_cntr_update,
	},
	{
		.name = "cntr_wait",
		.ioc = KFAB_IOC_CNTR_WAIT,
		.min_size = offsetofend(struct kfab_cntr_wait, out_err),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(ENOENT) | O(ETIMEDOUT) | O(EINTR),
		.weight = 1,
		.gen = gen_cntr_wait,
		.expect = expect_cntr_wait,
	},
	{
		.name = "av_open",
		.ioc = KFAB_IOC_AV_OPEN,
		.min_size = offsetofend(struct kfab_av_open, out_region.size),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(ENOENT) | O(EEXIST) | O(ENOSPC) |
			  O(ENOMEM) | O(EDQUOT) | O(ENAMETOOLONG),
		.weight = 2,
		.gen = gen_av_open,
		.expect = expect_av_open,
		.done = done_av_open,
	},
	{
		.name = "av_insert",
		.ioc = KFAB_IOC_AV_INSERT,
		.min_size = offsetofend(struct kfab_av_insert, __reserved),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(ENOENT) | O(EPERM) | O(ENOMEM),
		.weight = 3,
		.gen = gen_av_insert,
		.expect = expect_av_insert,
	},
	{
		.name = "av_remove",
		.ioc = KFAB_IOC_AV_REMOVE,
		.min_size = offsetofend(struct kfab_av_remove, indices),
		.errnos = O(EOPNOTSUPP) | O(ENOENT) | O(EPERM) | O(ENOMEM),
		.weight = 2,
		.gen = gen_av_remove,
		.expect = expect_av_remove,
	},
	{
		.name = "av_unlink",
		.ioc = KFAB_IOC_AV_UNLINK,
		.min_size = offsetofend(struct kfab_av_unlink, name),
		.errnos = O(EOPNOTSUPP) | O(ENOENT) | O(EPERM) |
			  O(ENAMETOOLONG),
		.weight = 1,
		.gen = gen_av_unlink,
		.expect = expect_av_unlink,
	},
	{
		.name = "ep_open",
		.ioc = KFAB_IOC_EP_OPEN,
		.min_size = offsetofend(struct kfab_ep_open, out_sq),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(ENOENT) | O(ENOSPC) | O(ENOMEM) |
			  O(EADDRINUSE) | O(EADDRNOTAVAIL),
		.weight = 2,
		.gen = gen_ep_open,
		.expect = expect_ep_open,
		.done = done_ep_open,
	},
	{
		.name = "ep_bind",
		.ioc = KFAB_IOC_EP_BIND,
		.min_size = offsetofend(struct kfab_ep_bind, obj_id),
		.errnos = O(EOPNOTSUPP) | O(ENOENT) | O(EEXIST) | O(EBUSY),
		.weight = 3,
		.gen = gen_ep_bind,
		.expect = expect_ep_bind,
	},
	{
		.name = "ep_enable",
		.ioc = KFAB_IOC_EP_ENABLE,
		.min_size = offsetofend(struct kfab_ep_enable, __reserved),
		.errnos = O(EOPNOTSUPP) | O(ENOENT) | O(EDESTADDRREQ) |
			  O(ENOMEM) | O(EINVAL),
		.weight = 2,
		.gen = gen_ep_enable,
		.expect = expect_ep_enable,
	},
	{
		.name = "doorbell",
		.ioc = KFAB_IOC_DOORBELL,
		.min_size = offsetofend(struct kfab_doorbell, out_done),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(ENOENT),
		.weight = 3,
		.gen = gen_doorbell,
		.expect = expect_doorbell,
	},
	{
		.name = "sq_watch",
		.ioc = KFAB_IOC_SQ_WATCH,
		.min_size = offsetofend(struct kfab_sq_watch, __reserved),
		.errnos = O(EOPNOTSUPP) | O(ENOENT) | O(EEXIST) | O(ENOSPC),
		.weight = 1,
		.gen = gen_sq_watch,
		.expect = expect_sq_watch,
	},
	{
		.name = "sq_poll (stop)",
		.ioc = KFAB_IOC_SQ_POLL,
		.min_size = offsetofend(struct kfab_sq_poll, out_parks),
		.answers = true,
		.errnos = O(EOPNOTSUPP),
		.weight = 1,
		.gen = gen_sq_poll,
		.expect = expect_sq_poll,
	},
	{
		.name = "cancel",
		.ioc = KFAB_IOC_CANCEL,
		.min_size = offsetofend(struct kfab_cancel, context),
		.errnos = O(EOPNOTSUPP) | O(ENOENT),
		.weight = 1,
		.gen = gen_cancel,
		.expect = expect_cancel,
	},
	{
		.name = "net_listen",
		.ioc = KFAB_IOC_NET_LISTEN,
		.min_size = offsetofend(struct kfab_net_listen, out_addr),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(EPERM) | O(ENOENT) |
			  O(EADDRINUSE) | O(EADDRNOTAVAIL) | O(ENOMEM),
		.weight = 1,
		.gen = gen_net_listen,
		.expect = expect_net_listen,
	},
	{
		.name = "net_allow",
		.ioc = KFAB_IOC_NET_ALLOW,
		.min_size = offsetofend(struct kfab_net_allow, node),
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(EPERM) | O(ENOENT) |
			  O(EEXIST) | O(ENOSPC) | O(ENOMEM),
		.weight = 1,
		.gen = gen_net_allow,
		.expect = expect_net_allow,
	},
	{
		.name = "rx_buffered",
		.ioc = KFAB_IOC_RX_BUFFERED,
		.min_size = offsetofend(struct kfab_rx_buffered, cookie),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(EMSGSIZE) | O(ENOENT) |
			  O(EBUSY) | O(ENOSPC) | O(ENOMEM),
		.weight = 1,
		.gen = gen_rx_buffered,
		.expect = expect_rx_buffered,
		.done = done_rx_buffered,
	},
	{
		.name = "srx_open",
		.ioc = KFAB_IOC_SRX_OPEN,
		.min_size = offsetofend(struct kfab_srx_open, out_sq),
		.answers = true,
		.errnos = O(EOPNOTSUPP) | O(ENOENT) | O(ENOSPC) | O(ENOMEM),
		.weight = 1,
		.gen = gen_srx_open,
		.expect = expect_srx_open,
		.done = done_srx_open,
	},
#ifdef KFAB_IOC_TEST_FAULT
	{
		.name = "test_fault",
		.ioc = KFAB_IOC_TEST_FAULT,
		.min_size = offsetofend(struct kfab_test_fault, out_fired),
		.answers = true,
		.test_only = true,
		.private_file = true,
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(EPERM) | O(ENOENT),
		.weight = 1,
		.gen = gen_test_fault,
		.expect = expect_test_fault,
		.done = done_test_fault,
	},
#endif
#ifdef KFAB_IOC_TEST_CQ_POST
	{
		.name = "test_cq_post",
		.ioc = KFAB_IOC_TEST_CQ_POST,
		.min_size = offsetofend(struct kfab_test_cq_post, out_overflowed),
		.answers = true,
		.test_only = true,
		.errnos = O(EOPNOTSUPP) | O(EINVAL) | O(ENOENT) | O(EFAULT) |
			  O(ENOSPC) | O(ENOMEM),
		.weight = 3,
		.gen = gen_test_cq_post,
		.expect = expect_test_cq_post,
	},
#endif
};

#define NR_KINDS	(K_CMD0 + ARRAY_SIZE(fuzz_cmds))
_Static_assert(NR_KINDS <= NR_KINDS_MAX, "raise NR_KINDS_MAX for new commands");

static const struct fuzz_cmd *cmd_by_nr(unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(fuzz_cmds); i++)
		if (_IOC_NR(fuzz_cmds[i].ioc) == nr)
			return &fuzz_cmds[i];
	return NULL;
}

static size_t cmd_size(const struct fuzz_cmd *c)
{
	return _IOC_SIZE(c->ioc);
}

static const char *kind_name(unsigned int kind)
{
	if (kind < K_CMD0)
		return base_kind_names[kind];
	if (kind < NR_KINDS)
		return fuzz_cmds[kind - K_CMD0].name;
	return "?";
}

/* Mapped rings */

struct fuzz_mmap {
	size_t len;
	off_t off;
	int prot;
	int flags;
	int fd;		/* the file to map, or -1: any */
};

struct fuzz_ring {
	const char *name;
	void (*geometry)(struct fuzz_thread *t, struct fuzz_mmap *m);
	void (*scribble)(struct fuzz_thread *t, uint8_t *page, size_t len);
};

/* Any length, offset, prot and flags. */
static void geometry_any(struct fuzz_thread *t, struct fuzz_mmap *m)
{
	size_t page = cfg.page;

	switch (rnd_below(t, 8)) {
	case 0:
		m->len = 0;
		break;
	case 1:
		m->len = 1 + rnd_below(t, page);
		break;
	case 2:
		m->len = page;
		break;
	case 3:
	case 4:
		m->len = page * (1 + rnd_below(t, 16));
		break;
	case 5:
		m->len = (size_t)1 << (20 + rnd_below(t, 27));
		break;
	case 6:
		m->len = SIZE_MAX - rnd_below(t, page);
		break;
	default:
		m->len = rnd(t) & 0xffffff;
		break;
	}

	switch (rnd_below(t, 8)) {
	case 0:
	case 1:
	case 2:
		m->off = 0;
		break;
	case 3:
		m->off = (off_t)(page * rnd_below(t, 64));
		break;
	case 4:
		m->off = 1 + rnd_below(t, page - 1);
		break;
	case 5:
		m->off = (off_t)1 << (32 + rnd_below(t, 31));
		break;
	case 6:
		m->off = -(off_t)page;
		break;
	default:
		m->off = (off_t)(rnd(t) & ~(uint64_t)(page - 1) & INT64_MAX);
		break;
	}

	m->prot = rnd_below(t, 8);	/* subsets of PROT_READ|WRITE|EXEC */

	switch (rnd_below(t, 20)) {
	case 0:
		m->flags = 0;		/* neither shared nor private */
		break;
	case 1:
		m->flags = MAP_SHARED_VALIDATE;
		break;
	case 2:
		/* Never a flag that places the mapping: NULL must stay unmapped. */
		m->flags = MAP_SHARED_VALIDATE | MAP_SYNC;
		break;
	default:
		m->flags = rnd_below(t, 2) ? MAP_SHARED : MAP_PRIVATE;
		break;
	}
	if (chance(t, 1, 5))
		m->flags |= MAP_POPULATE;
	if (chance(t, 1, 10))
		m->flags |= MAP_NORESERVE;
}

static void scribble_random(struct fuzz_thread *t, uint8_t *page, size_t len)
{
	size_t i;
	uint64_t v;

	for (i = 0; i + sizeof(v) <= len; i += sizeof(v)) {
		v = rnd(t);
		memcpy(page + i, &v, sizeof(v));
	}
	for (; i < len; i++)
		page[i] = (uint8_t)rnd(t);
}

/* A CQ ring or counter region of the worker's, else anything. */
static void geometry_region(struct fuzz_thread *t, struct fuzz_mmap *m)
{
	struct fuzz_region r = t->proc->regions[rnd_below(t, NR_REGIONS)];

	if (!r.off || chance(t, 1, 10)) {
		geometry_any(t, m);
		return;
	}
	m->fd = chance(t, 7, 8) ? r.fd : -1;
	m->off = (off_t)r.off;
	m->len = r.len;
	switch (rnd_below(t, 10)) {
	case 0:
		m->len += cfg.page;		/* longer than the region */
		break;
	case 1:
		m->len = cfg.page;		/* a prefix */
		break;
	case 2:
		m->off += cfg.page;		/* not a cookie */
		break;
	default:
		break;
	}
	m->prot = r.writable || chance(t, 1, 8) ? PROT_READ | PROT_WRITE :
						  PROT_READ;
	m->flags = chance(t, 1, 10) ? MAP_PRIVATE : MAP_SHARED;
	if (chance(t, 1, 5))
		m->flags |= MAP_POPULATE;
}

/*
 * Garbage for a consumer page: indices far out of range, near the edges
 * of u32 arithmetic, armed words of every kind.
 */
static void scribble_indices(struct fuzz_thread *t, uint8_t *page, size_t len)
{
	static const uint32_t edge[] = { 0, 1, 0x7fffffff, 0x80000000,
					 0xfffffffe, 0xffffffff, 65536, 65537 };
	size_t i;

	scribble_random(t, page, len);
	for (i = 0; i + 4 <= len && i < 256; i += 4) {
		uint32_t v = chance(t, 1, 2) ? edge[rnd_below(t, ARRAY_SIZE(edge))] :
					       (uint32_t)rnd(t);

		memcpy(page + i, &v, 4);
	}
}

static const struct fuzz_ring fuzz_rings[] = {
	{ .name = "any", .geometry = geometry_any, .scribble = scribble_random },
	{ .name = "region", .geometry = geometry_region,
	  .scribble = scribble_indices },
};

/* Failures and logging */

static const char *outcome_name(int err)
{
	static __thread char buf[24];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(outcomes); i++)
		if (outcomes[i].err == err)
			return outcomes[i].name;
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

static void format_mask(char *buf, size_t n, uint32_t mask)
{
	unsigned int i;
	size_t len = 0;

	buf[0] = 0;
	for (i = 0; i < ARRAY_SIZE(outcomes) && len < n; i++)
		if (mask & 1u << i)
			len += snprintf(buf + len, n - len, "%s%s",
					len ? "|" : "", outcomes[i].name);
}

static void describe_op(char *buf, size_t n, const struct fuzz_op *op)
{
	char expect[160], readable[24];
	size_t len;

	switch (op->kind) {
	case K_OPEN:
		len = snprintf(buf, n, "open(O_RDWR|%#" PRIx64 ") = %d",
			       op->cmd, op->fd);
		break;
	case K_CLOSE:
		len = snprintf(buf, n, "close(%d)", op->fd);
		break;
	case K_MMAP:
		len = snprintf(buf, n, "mmap(fd %d, len %#" PRIx64 ", off %#" PRIx64
			       ", prot %#x, flags %#x)", op->fd, op->len, op->off,
			       (unsigned int)(op->cmd >> 32), (unsigned int)op->cmd);
		break;
	case K_MUNMAP:
	case K_PAGE_WRITE:
	case K_PAGE_READ:
		len = snprintf(buf, n, "%s(len %#" PRIx64 ", page %" PRIu64 ")",
			       kind_name(op->kind), op->len, op->off);
		break;
	default:
		if (op->len == SIZE_MAX)
			snprintf(readable, sizeof(readable), "all");
		else
			snprintf(readable, sizeof(readable), "%" PRIu64, op->len);
		len = snprintf(buf, n, "%s(fd %d, cmd %#" PRIx64 ", size %u (%s), ptr %s, readable %s, arg %#x)",
			       kind_name(op->kind), op->fd, op->cmd, op->size,
			       size_kinds[op->size_kind].name,
			       ptr_kinds[op->ptr_kind].name, readable, op->arg);
		break;
	}
	if (len >= n)
		return;
	format_mask(expect, sizeof(expect), op->expect);
	snprintf(buf + len, n - len, " -> %s, allowed {%s}",
		 op->err < 0 ? "(in flight)" : outcome_name(op->err), expect);
}

static void fail_vmsg(struct fuzz_thread *t, const char *fmt, va_list ap)
{
	uint64_t n = __atomic_fetch_add(&shm->failures, 1, __ATOMIC_RELAXED);
	char msg[FAIL_MSG_LEN];
	size_t len = 0;

	if (t)
		len = snprintf(msg, sizeof(msg), "worker %u gen %u thread %u action %" PRIu64 ": ",
			       t->proc->slot, t->proc->gen, t->idx, t->seq);
	vsnprintf(msg + len, sizeof(msg) - len, fmt, ap);
	if (n < MAX_FAIL_MSGS)
		memcpy(shm->fail_msg[n], msg, sizeof(msg));
	if (cfg.verbose)
		fprintf(stderr, "kfab_fuzz: FAIL %s\n", msg);
	if (n + 1 >= STOP_FAILURES)
		__atomic_store_n(&shm->stop, 1, __ATOMIC_RELAXED);
}

static void __attribute__((format(printf, 2, 3)))
fail(struct fuzz_thread *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail_vmsg(t, fmt, ap);
	va_end(ap);
}

static void fail_op(struct fuzz_thread *t, const struct fuzz_op *op,
		    const char *fmt, ...)
{
	char what[FAIL_MSG_LEN], desc[FAIL_MSG_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	describe_op(desc, sizeof(desc), op);
	fail(t, "%s: %s", what, desc);
}

static void log_op(struct fuzz_thread *t, const struct fuzz_op *op)
{
	char desc[FAIL_MSG_LEN];

	if (cfg.verbose < 2)
		return;
	describe_op(desc, sizeof(desc), op);
	fprintf(stderr, "kfab_fuzz: [%u.%u.%u #%" PRIu64 "] %s\n", t->proc->slot,
		t->proc->gen, t->idx, op->seq, desc);
}

/* Publish what this thread is about to do in the kernel, for hang reports. */
static void op_begin(struct fuzz_thread *t, struct fuzz_op *op)
{
	op->seq = t->seq;
	shm->inflight[t->proc->slot][t->idx] = *op;
	shm->inflight[t->proc->slot][t->idx].err = -1;	/* no outcome yet */
	__atomic_store_n(&shm->busy[t->proc->slot][t->idx], 1, __ATOMIC_RELEASE);
}

static void op_end(struct fuzz_thread *t, struct fuzz_op *op)
{
	__atomic_store_n(&shm->busy[t->proc->slot][t->idx], 0, __ATOMIC_RELEASE);
	count(op->kind);
	log_op(t, op);
}

/* Check an outcome against the op's model and against what abi.rst documents. */
static void check_outcome(struct fuzz_thread *t, const struct fuzz_op *op,
			  uint32_t documented)
{
	uint32_t got = out_bit(op->err);

	if (!(got & documented))
		fail_op(t, op, "outcome not documented for this operation");
	else if (!(got & op->expect))
		fail_op(t, op, "outcome the ABI rules do not allow here");
}

/* Files and ids */

static int pick_fd(struct fuzz_thread *t, bool *known_bad)
{
	struct fuzz_proc *p = t->proc;
	unsigned int r = rnd_below(t, 100), start, i;
	int fd = -1;

	if (r < 3) {
		fd = -1;
	} else if (r < 5) {
		fd = BAD_FD_BASE + rnd_below(t, 100);
	} else if (r < 9) {
		/* A slot as it is, maybe empty. */
		fd = __atomic_load_n(&p->fds[rnd_below(t, NR_SLOTS)], __ATOMIC_ACQUIRE);
	} else {
		start = rnd_below(t, NR_SLOTS);
		for (i = 0; i < NR_SLOTS && fd < 0; i++)
			fd = __atomic_load_n(&p->fds[(start + i) % NR_SLOTS],
					     __ATOMIC_ACQUIRE);
	}
	*known_bad = fd < 0 || fd >= BAD_FD_BASE;
	return fd;
}

static void pool_add(struct fuzz_thread *t, uint32_t id)
{
	__atomic_store_n(&t->proc->ids[rnd_below(t, NR_IDS)], id, __ATOMIC_RELAXED);
}

static void pool_forget(struct fuzz_thread *t, uint32_t id)
{
	unsigned int i;

	for (i = 0; i < NR_IDS; i++)
		if (__atomic_load_n(&t->proc->ids[i], __ATOMIC_RELAXED) == id)
			__atomic_store_n(&t->proc->ids[i], id | ID_DEAD,
					 __ATOMIC_RELAXED);
}

/* An id from the pool (live or destroyed), a small one, 0, an edge, or any. */
static uint32_t pick_id(struct fuzz_thread *t)
{
	unsigned int r = rnd_below(t, 100), start = rnd_below(t, NR_IDS), i;
	uint32_t id;

	if (r < 70) {
		bool dead = r >= 55;

		for (i = 0; i < NR_IDS; i++) {
			id = __atomic_load_n(&t->proc->ids[(start + i) % NR_IDS],
					     __ATOMIC_RELAXED);
			if (id && !(id & ID_DEAD) == !dead)
				return id & ~ID_DEAD;
		}
	}
	if (r < 80)
		return 1 + rnd_below(t, 16);
	if (r < 86)
		return 0;
	if (r < 92)
		return cfg.max_objects + rnd_below(t, 3) - 1;
	return (uint32_t)rnd(t);
}

/*
 * A file of the thread's own for test-only commands: a fault they arm
 * fires in no one else's file, so the oracle stays exact everywhere else.
 */
static int open_private(struct fuzz_thread *t)
{
	struct fuzz_op op = { .kind = K_OPEN, .cmd = O_CLOEXEC,
			      .expect = O(OK) | O(ENOMEM) | O(EMFILE) | O(ENFILE) };

	if (!take_op())
		return -1;
	op_begin(t, &op);
	op.fd = open(KFAB_DEV, O_RDWR | O_CLOEXEC);
	op.err = op.fd < 0 ? errno : 0;
	op_end(t, &op);
	check_outcome(t, &op, op.expect);
	return op.fd;
}

static void close_private(struct fuzz_thread *t, int fd)
{
	struct fuzz_op op = { .kind = K_CLOSE, .fd = fd, .expect = O(OK) };

	take_op();	/* closed even past the budget: never leak it */
	op_begin(t, &op);
	op.err = close(fd) ? errno : 0;
	op_end(t, &op);
	check_outcome(t, &op, O(OK));
}

/* Actions */

static void act_open(struct fuzz_thread *t)
{
	static const int extra[] = { 0, 0, 0, 0, O_NONBLOCK, O_CLOEXEC, O_APPEND };
	struct fuzz_proc *p = t->proc;
	struct fuzz_op op = { .kind = K_OPEN };
	unsigned int start = rnd_below(t, NR_SLOTS), slot = start, i;
	int fd, old;

	op.cmd = extra[rnd_below(t, ARRAY_SIZE(extra))];
	/* An empty slot if there is one, else replace (close) a file. */
	for (i = 0; i < NR_SLOTS; i++)
		if (__atomic_load_n(&p->fds[(start + i) % NR_SLOTS],
				    __ATOMIC_RELAXED) < 0) {
			slot = (start + i) % NR_SLOTS;
			break;
		}
	if (!take_op())
		return;
	op_begin(t, &op);
	fd = open(KFAB_DEV, O_RDWR | (int)op.cmd);
	op.err = fd < 0 ? errno : 0;
	op.fd = fd;
	op.expect = O(OK) | O(ENOMEM) | O(EMFILE) | O(ENFILE);
	op_end(t, &op);
	check_outcome(t, &op, op.expect);
	if (fd < 0)
		return;
	if (fd >= BAD_FD_BASE) {
		fail_op(t, &op, "fd beyond the range kept for bad fds");
		close(fd);
		return;
	}

	old = __atomic_exchange_n(&p->fds[slot], fd, __ATOMIC_ACQ_REL);
	if (old >= 0) {
		/* Another thread may be in an ioctl on it: legal. */
		struct fuzz_op cl = { .kind = K_CLOSE, .fd = old, .expect = O(OK) };

		take_op();	/* closed even past the budget: never leak it */
		op_begin(t, &cl);
		cl.err = close(old) ? errno : 0;
		op_end(t, &cl);
		check_outcome(t, &cl, O(OK));
	}
}

static void act_close(struct fuzz_thread *t)
{
	struct fuzz_proc *p = t->proc;
	struct fuzz_op op = { .kind = K_CLOSE, .expect = O(OK) };
	unsigned int start = rnd_below(t, NR_SLOTS), i;
	int fd = -1;

	for (i = 0; i < NR_SLOTS && fd < 0; i++)
		if (__atomic_load_n(&p->fds[(start + i) % NR_SLOTS],
				    __ATOMIC_RELAXED) >= 0) {
			if (!take_op())
				return;
			fd = __atomic_exchange_n(&p->fds[(start + i) % NR_SLOTS],
						 -1, __ATOMIC_ACQ_REL);
			/* Lost a race with another closer: try the next slot. */
		}
	if (fd < 0)
		return;
	op.fd = fd;
	op_begin(t, &op);
	op.err = close(fd) ? errno : 0;
	op_end(t, &op);
	check_outcome(t, &op, O(OK));
}

static uint32_t pick_struct_size(struct fuzz_thread *t, const struct fuzz_cmd *c,
				 unsigned int kind)
{
	static const uint32_t huge[] = { 1u << 20, INT32_MAX, UINT32_MAX };
	size_t ksize = cmd_size(c), page = cfg.page;

	switch (kind) {
	case SZ_ZERO:
		return 0;
	case SZ_ONE:
		return 1;
	case SZ_THREE:
		return 3;
	case SZ_MIN_LESS_1:
		return c->min_size - 1;
	case SZ_MIN:
		return c->min_size;
	case SZ_LONGER_ZERO:
	case SZ_LONGER_DIRTY:
		if (rnd_below(t, 2))
			return ksize + 1 + rnd_below(t, 64);
		return ksize + 1 + rnd_below(t, page - ksize);
	case SZ_PAGE:
	case SZ_PAGE_DIRTY:
		return page;
	case SZ_PAGE_PLUS_1:
		return page + 1;
	case SZ_HUGE:
		if (rnd_below(t, 2))
			return huge[rnd_below(t, ARRAY_SIZE(huge))];
		return page + 2 + rnd_below(t, UINT32_MAX - page - 2);
	default:
		return ksize;
	}
}

/*
 * The dispatcher's rules (uapi/linux/kfab.h), for a struct of which
 * @readable bytes can be read at the pointer and which can be written back
 * or not.  @s holds what the kernel reads; @handler is what the command's
 * handler may answer once the struct has passed.
 */
static uint32_t expect_struct(const struct fuzz_cmd *c, const uint8_t *s,
			      uint32_t size, size_t readable, bool writable,
			      uint32_t handler)
{
	size_t ksize = cmd_size(c), i, end;
	bool dirty = false;

	if (readable < sizeof(uint32_t))
		return O(EFAULT);
	if (size < c->min_size)
		return O(EINVAL);
	if (size > cfg.page)
		return O(E2BIG);
	if (size > ksize) {
		/* The tail is checked before the struct is copied. */
		end = size < readable ? size : readable;
		for (i = ksize; i < end && !dirty; i++)
			dirty = s[i];
		if (dirty)
			return size > readable ? O(E2BIG) | O(EFAULT) : O(E2BIG);
		if (size > readable)
			return O(EFAULT);
	}
	if (readable < (size < ksize ? size : ksize))
		return O(EFAULT);
	if (!writable && c->answers && (handler & O(OK)))
		handler = (handler & ~O(OK)) | O(EFAULT);
	return handler;
}

/*
 * Put the struct built in t->scratch (@clen bytes) where @kind says, and
 * return the pointer; *readable and *writable say what the kernel can do.
 */
static void *place_struct(struct fuzz_thread *t, unsigned int kind, size_t clen,
			  size_t *readable, bool *writable)
{
	size_t page = cfg.page, k;
	uint8_t *dest;

	*readable = 0;
	*writable = true;
	switch (kind) {
	case P_BUF:
		*readable = SIZE_MAX;
		return t->scratch;
	case P_UNALIGNED:
		dest = t->buf + 1 + rnd_below(t, 7);
		memcpy(dest, t->scratch, clen);
		*readable = SIZE_MAX;
		return dest;
	case P_NULL:
		return NULL;
	case P_ONE:
		return (void *)1;
	case P_UNMAPPED:
		return t->edge + page + rnd_below(t, page);
	case P_GUARD:
		return t->guard + rnd_below(t, page);
	case P_STRADDLE:
		switch (rnd_below(t, 4)) {
		case 0:		/* not even the size field */
			k = rnd_below(t, sizeof(uint32_t));
			break;
		case 1:		/* ends exactly at the hole */
			k = clen;
			break;
		default:
			k = sizeof(uint32_t) + rnd_below(t, clen - sizeof(uint32_t) + 1);
			break;
		}
		dest = t->edge + page - k;
		memcpy(dest, t->scratch, k);
		*readable = k;
		return dest;
	case P_RO:
		if (mprotect(t->ro, page, PROT_READ | PROT_WRITE))
			return NULL;	/* cannot happen; NULL is still a test */
		memcpy(t->ro, t->scratch, clen < page ? clen : page);
		mprotect(t->ro, page, PROT_READ);
		*readable = page;
		*writable = false;
		return t->ro;
	case P_KERNEL:
		return (void *)0xffff888000000000ul;
	case P_KTEXT:
		return (void *)0xffffffff81000000ul;
	default:
		return (void *)0x8000000000000000ul;
	}
}

/* Read a successful answer and hand it to the command's check. */
static void answer(struct fuzz_thread *t, const struct fuzz_cmd *c,
		   const void *arg, struct fuzz_op *op)
{
	uint8_t ans[ANSWER_MAX] = { 0 };
	size_t n = cmd_size(c);

	if (!c->done)
		return;
	if (op->size < n)
		n = op->size;
	memcpy(ans, arg, n);
	c->done(t, ans, op);
}

static void act_command(struct fuzz_thread *t, const struct fuzz_cmd *c)
{
	struct fuzz_op op = { .kind = K_CMD0 + (c - fuzz_cmds) };
	size_t ksize = cmd_size(c), clen, readable;
	uint8_t *s = t->scratch;
	bool writable, bad_fd, private;
	uint32_t handler;
	void *arg;

	op.size_kind = pick_size_kind(t);
	op.size = pick_struct_size(t, c, op.size_kind);
	/* The bytes the kernel may read: up to a page, at least the struct. */
	clen = op.size <= cfg.page && op.size > ksize ? op.size : ksize;
	memset(s, 0, clen);
	c->gen(t, s, &op);
	/* What the caller's size leaves out, the kernel sees as zero. */
	if (op.size < ksize)
		memset(s + (op.size > 4 ? op.size : 4), 0,
		       ksize - (op.size > 4 ? op.size : 4));
	memcpy(s, &op.size, sizeof(op.size));
	if (op.size_kind == SZ_LONGER_DIRTY || op.size_kind == SZ_PAGE_DIRTY)
		s[ksize + rnd_below(t, op.size - ksize)] = 1 + rnd_below(t, 255);
	handler = c->expect ? c->expect(s) : O(OK) | c->errnos;

	op.ptr_kind = pick_ptr_kind(t, true);
	arg = place_struct(t, op.ptr_kind, clen, &readable, &writable);
	op.len = readable;

	/* The size bits of the number are not checked: vary them now and then. */
	op.cmd = c->ioc;
	if (chance(t, 1, 10))
		op.cmd = (c->ioc & ~((unsigned long)_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
			 (unsigned long)rnd_below(t, _IOC_SIZEMASK + 1) << _IOC_SIZESHIFT;

	private = c->private_file && (cfg.features & KFAB_FEATURE_TEST);
	if (private) {
		op.fd = open_private(t);
		if (op.fd < 0)
			return;
		bad_fd = false;
	} else {
		op.fd = pick_fd(t, &bad_fd);
	}
	if (bad_fd)
		op.expect = O(EBADF);
	else if (c->test_only && !(cfg.features & KFAB_FEATURE_TEST))
		op.expect = O(ENOTTY);	/* a production module */
	else
		op.expect = expect_struct(c, s, op.size, readable, writable, handler) |
			    (t->proc->racy && !private ? RACY_ERRNOS : 0);

	if (take_op()) {
		op_begin(t, &op);
		op.err = ioctl(op.fd, op.cmd, arg) ? errno : 0;
		op_end(t, &op);
		check_outcome(t, &op, O(OK) | DISPATCH_ERRNOS | c->errnos |
				      (c->test_only ? O(ENOTTY) : 0) |
				      (t->proc->racy && !private ?
				       RACY_ERRNOS : 0));
		if (!op.err && (op.expect & O(OK)))
			answer(t, c, arg, &op);
	}
	if (private)
		close_private(t, op.fd);
}

/* ioctl types the VFS handles itself whatever the file: never sent at random. */
static bool vfs_ioctl_type(unsigned int type)
{
	return type == 0x00 || type == 0x15 || type == 'T' || type == 'X' ||
	       type == 'f' || type == 0x94;
}

static void act_random_ioctl(struct fuzz_thread *t)
{
	static const unsigned int dirs[] = { _IOC_NONE, _IOC_READ, _IOC_WRITE,
					     _IOC_READ | _IOC_WRITE };
	struct fuzz_op op = { .kind = K_IOCTL_RANDOM };
	unsigned int type, nr, dir, size, i;
	const struct fuzz_cmd *c = NULL;
	uint32_t documented;
	size_t readable = SIZE_MAX;
	bool writable = true, bad_fd, private;
	uint8_t *s = t->scratch;
	void *arg = s;

	if (chance(t, 3, 5)) {
		type = KFAB_TYPE;
	} else {
		do
			type = rnd_below(t, 256);
		while (type == KFAB_TYPE || vfs_ioctl_type(type));
	}
	switch (rnd_below(t, 10)) {
	case 0:
	case 1:
	case 2:
	case 3:
		nr = rnd_below(t, 256);
		break;
	case 4:
	case 5:
	case 6:
		nr = rnd_below(t, ARRAY_SIZE(fuzz_cmds) + 2);
		break;
	case 7:
	case 8:
		nr = KFAB_CMD_TEST_BASE + rnd_below(t, 8);
		break;
	default:
		nr = 255;
		break;
	}
	dir = dirs[rnd_below(t, 4)];
	size = rnd_below(t, 2) ? rnd_below(t, _IOC_SIZEMASK + 1) : rnd_below(t, 64);
	op.cmd = _IOC(dir, type, nr, size);

	/* A random struct: random head, zero tail, a size of any kind. */
	memset(s, 0, 2 * cfg.page);
	scribble_random(t, s, 8 + rnd_below(t, 56));
	switch (rnd_below(t, 5)) {
	case 0:
		op.size = rnd_below(t, 64);
		break;
	case 1:
		op.size = rnd_below(t, cfg.page + 2);
		break;
	case 2:
		op.size = (uint32_t)rnd(t);
		break;
	default:
		c = &fuzz_cmds[rnd_below(t, ARRAY_SIZE(fuzz_cmds))];
		op.size = cmd_size(c);
		c = NULL;
		break;
	}
	memcpy(s, &op.size, sizeof(op.size));
	op.size_kind = SZ_EXACT;
	op.ptr_kind = P_BUF;
	if (chance(t, 1, 5)) {
		op.ptr_kind = pick_ptr_kind(t, false);
		/* All the kernel may read must be in place (a read-only page). */
		arg = place_struct(t, op.ptr_kind,
				   op.size <= cfg.page && op.size > 64 ? op.size : 64,
				   &readable, &writable);
	}
	op.len = readable;

	if (type == KFAB_TYPE && dir == (_IOC_READ | _IOC_WRITE))
		c = cmd_by_nr(nr);
	/* Test-only numbers go to a file of their own (see open_private()). */
	private = type == KFAB_TYPE && dir == (_IOC_READ | _IOC_WRITE) &&
		  nr >= KFAB_CMD_TEST_BASE && (cfg.features & KFAB_FEATURE_TEST);
	if (c && c->test_only && !private) {
		documented = O(ENOTTY) | O(EBADF);
		op.expect = O(ENOTTY);
	} else if (c) {
		/* A known command with random contents, as its handler sees them. */
		uint8_t view[ANSWER_MAX] = { 0 };

		memcpy(view, s, op.size < cmd_size(c) ? op.size : cmd_size(c));
		documented = O(OK) | DISPATCH_ERRNOS | c->errnos;
		op.expect = expect_struct(c, s, op.size, readable, writable,
					  c->expect ? c->expect(view) :
						      O(OK) | c->errnos);
	} else if (private) {
		/* A test-only command this table does not know: anything documented. */
		documented = O(OK) | DISPATCH_ERRNOS | O(ENOTTY);
		for (i = 0; i < ARRAY_SIZE(fuzz_cmds); i++)
			documented |= fuzz_cmds[i].errnos;
		op.expect = documented;
	} else if (op.cmd == KFAB_IOC_RING) {
		/* The struct-less doorbell: a pointer is no id (EINVAL). */
		documented = O(OK) | O(ENOENT) | O(EINVAL) | O(EBADF);
		op.expect = documented;
	} else {
		documented = O(ENOTTY) | O(EBADF);
		op.expect = O(ENOTTY);
	}

	if (private) {
		op.fd = open_private(t);
		if (op.fd < 0)
			return;
	} else {
		op.fd = pick_fd(t, &bad_fd);
		if (bad_fd)
			op.expect = O(EBADF);
		else if (t->proc->racy)
			op.expect |= RACY_ERRNOS;
		if (t->proc->racy)
			documented |= RACY_ERRNOS;
	}

	if (take_op()) {
		op_begin(t, &op);
		/* KFAB_IOC_RING answers a count: only -1 is a failure. */
		op.err = ioctl(op.fd, op.cmd, arg) < 0 ? errno : 0;
		op_end(t, &op);
		check_outcome(t, &op, documented);
		if (c && !op.err && (op.expect & O(OK)) && arg == s)
			answer(t, c, arg, &op);
	}
	if (private)
		close_private(t, op.fd);
}

/* Faults in device mappings land here, for the thread that is scribbling. */
static __thread sigjmp_buf *fault_jmp;

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (fault_jmp)
		siglongjmp(*fault_jmp, sig);
	/* A fault of the fuzzer itself: die of it. */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void read_page(const uint8_t *page, size_t len)
{
	const volatile uint8_t *p = page;
	size_t i;

	for (i = 0; i < len; i += 64)
		(void)p[i];
}

/* Write garbage into (or read) one page of a mapping; false if it faulted. */
static bool touch_page(struct fuzz_thread *t, const struct fuzz_map *m,
		       uint8_t *page, size_t len, bool write)
{
	sigjmp_buf jb;

	if (sigsetjmp(jb, 1)) {
		fault_jmp = NULL;
		return false;
	}
	fault_jmp = &jb;
	if (write)
		m->ring->scribble(t, page, len);
	else
		read_page(page, len);
	fault_jmp = NULL;
	return true;
}

static void scribble_map(struct fuzz_thread *t, const struct fuzz_map *m)
{
	bool write = m->prot & PROT_WRITE;
	size_t off, n;

	if (!(m->prot & (PROT_READ | PROT_WRITE)))
		return;
	for (off = 0; off < m->len; off += cfg.page) {
		struct fuzz_op op = {
			.kind = write ? K_PAGE_WRITE : K_PAGE_READ,
			.len = m->len,
			.off = off / cfg.page,
		};

		if (!take_op())
			return;
		n = m->len - off < cfg.page ? m->len - off : cfg.page;
		op_begin(t, &op);
		if (!touch_page(t, m, m->addr + off, n, write)) {
			__atomic_fetch_add(&shm->faults, 1, __ATOMIC_RELAXED);
			op.err = EFAULT;
			if (cfg.verbose)
				fprintf(stderr, "kfab_fuzz: fault in %s mapping, page %zu\n",
					m->ring->name, off / cfg.page);
		}
		op_end(t, &op);
		if (op.err)
			return;
	}
}

static void unmap(struct fuzz_thread *t, struct fuzz_map *m)
{
	struct fuzz_op op = { .kind = K_MUNMAP, .len = m->len, .expect = O(OK) };

	op_begin(t, &op);
	op.err = munmap(m->addr, m->len) ? errno : 0;
	op_end(t, &op);
	check_outcome(t, &op, O(OK));
	m->addr = NULL;
}

static void act_munmap(struct fuzz_thread *t)
{
	unsigned int start = rnd_below(t, NR_MAPS), i;

	for (i = 0; i < NR_MAPS; i++) {
		struct fuzz_map *m = &t->maps[(start + i) % NR_MAPS];

		if (m->addr) {
			if (take_op())
				unmap(t, m);
			return;
		}
	}
}

static void act_mmap(struct fuzz_thread *t)
{
	const struct fuzz_ring *r = &fuzz_rings[rnd_below(t, ARRAY_SIZE(fuzz_rings))];
	struct fuzz_op op = { .kind = K_MMAP };
	struct fuzz_map *m = NULL;
	struct fuzz_mmap g = { .fd = -1 };
	unsigned int i;
	bool bad_fd;
	void *addr;

	for (i = 0; i < NR_MAPS && !m; i++)
		if (!t->maps[i].addr)
			m = &t->maps[i];
	if (!m) {
		m = &t->maps[rnd_below(t, NR_MAPS)];
		if (!take_op())
			return;
		unmap(t, m);
	}
	r->geometry(t, &g);
	op.fd = pick_fd(t, &bad_fd);
	if (g.fd >= 0) {
		/* The file that offered the region, if it is still open. */
		op.fd = g.fd;
		bad_fd = false;
	}
	op.len = g.len;
	op.off = g.off;
	op.cmd = (uint64_t)(unsigned int)g.prot << 32 | (unsigned int)g.flags;
	op.expect = MMAP_OUTCOMES;
	if (bad_fd)
		op.expect &= ~O(OK);
	if (!take_op())
		return;
	op_begin(t, &op);
	addr = mmap(NULL, g.len, g.prot, g.flags, op.fd, g.off);
	op.err = addr == MAP_FAILED ? errno : 0;
	op_end(t, &op);
	check_outcome(t, &op, MMAP_OUTCOMES);
	if (addr == MAP_FAILED)
		return;
	if (cfg.verbose)
		fprintf(stderr, "kfab_fuzz: mmap of the device succeeded (%s ring, len %#zx off %#jx prot %#x flags %#x)\n",
			r->name, g.len, (intmax_t)g.off, g.prot, g.flags);
	*m = (struct fuzz_map) { .addr = addr, .len = g.len, .prot = g.prot, .ring = r };
	scribble_map(t, m);
}

static void act_kill(struct fuzz_thread *t)
{
	struct fuzz_proc *p = t->proc;

	__atomic_store_n(&shm->kill_intent[p->slot], p->gen + 1, __ATOMIC_SEQ_CST);
	if (cfg.verbose)
		fprintf(stderr, "kfab_fuzz: worker %u gen %u: thread %u sends SIGKILL\n",
			p->slot, p->gen, t->idx);
	kill(getpid(), SIGKILL);
	for (;;)
		pause();
}

/* Netlink */

/* A socket of the generic netlink protocol, answers waited for 100 ms. */
static int nl_socket(void)
{
	struct timeval tv = { .tv_usec = 100000 };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);

	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Appends an attribute to the message at @buf (its length at @len). */
static void nl_put(uint8_t *buf, size_t *len, uint16_t type, const void *data,
		   uint16_t n)
{
	struct nlattr *a = (struct nlattr *)(buf + *len);

	a->nla_len = NLA_HDRLEN + n;
	a->nla_type = type;
	memcpy(a + 1, data, n);
	*len += NLA_ALIGN(a->nla_len);
}

/*
 * The answer to the request numbered @seq: 0, or the errno of its error or
 * of a dump's end; what is left of earlier answers is skipped.  -1 when
 * none came in time (a request that was cut short may get none).
 */
static int nl_answer(int fd, uint32_t seq, uint8_t *buf, size_t size)
{
	for (;;) {
		ssize_t n = recv(fd, buf, size, 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (n < 0)
			return -1;
		for (; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE)
				return h->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) ?
				       -*(int *)NLMSG_DATA(h) : 0;
			if (!(h->nlmsg_flags & NLM_F_MULTI))
				return 0;
		}
	}
}

/* The family's id, asked of the controller: 0 when there is none. */
static uint16_t nl_resolve(void)
{
	uint8_t buf[4096] = { 0 };
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct genlmsghdr *g = NLMSG_DATA(h);
	size_t len = NLMSG_LENGTH(GENL_HDRLEN);
	struct nlattr *a;
	int fd = nl_socket(), rem;
	ssize_t n;

	if (fd < 0)
		return 0;
	nl_put(buf, &len, CTRL_ATTR_FAMILY_NAME, KFAB_GENL_NAME,
	       sizeof(KFAB_GENL_NAME));
	*h = (struct nlmsghdr){ .nlmsg_len = len, .nlmsg_type = GENL_ID_CTRL,
				.nlmsg_flags = NLM_F_REQUEST };
	*g = (struct genlmsghdr){ .cmd = CTRL_CMD_GETFAMILY, .version = 1 };
	n = send(fd, buf, len, 0) == (ssize_t)len ? recv(fd, buf, sizeof(buf), 0) : -1;
	close(fd);
	if (n < (ssize_t)NLMSG_LENGTH(GENL_HDRLEN) || h->nlmsg_type != GENL_ID_CTRL)
		return 0;
	rem = h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
	for (a = (struct nlattr *)((uint8_t *)g + GENL_HDRLEN);
	     rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= rem;
	     rem -= NLA_ALIGN(a->nla_len),
	     a = (struct nlattr *)((uint8_t *)a + NLA_ALIGN(a->nla_len)))
		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			return *(uint16_t *)(a + 1);
	return 0;
}

/*
 * A network namespace of the fuzzer's own, its loopback up: the transport
 * changes it sends (and its NET ioctls) act there, and go with it.
 * Without the privilege to make one, they meet EPERM where it runs.
 */
static void nl_private_netns(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd;

	if (unshare(CLONE_NEWNET))
		return;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
}

/*
 * A change of the transport, nearly right: LISTEN_ADD/_DEL of 127.0.0.1,
 * ::1 or an address the namespace lacks, on one of three ports (or
 * none); ALLOW_ADD/_DEL of a network of a few, its prefix length 0 to
 * 130.  Now and then an attribute is dropped or the wrong size.
 */
static size_t nl_transport_request(struct fuzz_thread *t, uint8_t *buf,
				   uint8_t *cmd)
{
	static const uint8_t nodes[][16] = {
		{ [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 },
		{ [15] = 1 },
		{ [10] = 0xff, [11] = 0xff, 10, 77, 0, 0 },
		{ 0xfd, 0x77 },
		{ 0 },
	};
	static const uint16_t ports[] = { 0, 7471, 7472, 7473 };
	size_t len = NLMSG_LENGTH(GENL_HDRLEN);
	bool listen = chance(t, 1, 2), broken = chance(t, 1, 8);
	const uint8_t *node = nodes[rnd_below(t, ARRAY_SIZE(nodes))];
	uint16_t node_len = broken && chance(t, 1, 2) ? 4 : 16;

	*cmd = listen ? (chance(t, 1, 2) ? KFAB_NL_CMD_LISTEN_ADD :
					   KFAB_NL_CMD_LISTEN_DEL) :
			(chance(t, 1, 2) ? KFAB_NL_CMD_ALLOW_ADD :
					   KFAB_NL_CMD_ALLOW_DEL);
	if (!broken || chance(t, 1, 2))
		nl_put(buf, &len, listen ? KFAB_NL_ATTR_LISTEN_NODE :
					   KFAB_NL_ATTR_ALLOW_NODE,
		       node, node_len);
	if (listen) {
		uint16_t port = ports[rnd_below(t, ARRAY_SIZE(ports))];

		if (port)
			nl_put(buf, &len, KFAB_NL_ATTR_LISTEN_PORT, &port,
			       sizeof(port));
	} else if (!broken || chance(t, 1, 2)) {
		uint32_t plen = chance(t, 1, 2) ? 96 + rnd_below(t, 35) :
						  rnd_below(t, 131);

		nl_put(buf, &len, KFAB_NL_ATTR_ALLOW_PREFIX_LEN, &plen,
		       sizeof(plen));
	}
	return len;
}

/*
 * The module-wide limits (KFAB_NL_CMD_LIMIT_SET): their names, a value in
 * range that lowers nothing (the oracle of the ioctls does not expect
 * -EDQUOT), the least and the most LIMIT_SET takes (netlink.rst), and
 * the value the run found, put back at its end.
 */
static struct fuzz_limit {
	const char *name;
	uint64_t high, min, max;
	unsigned long found;
	bool have;
} fuzz_limits[] = {
	{ .name = "av_max_named_per_user", .high = 1 << 20, .min = 1,
	  .max = 1 << 20 },
	{ .name = "av_max_entries_per_user", .high = 1 << 30, .min = 1,
	  .max = 1 << 30 },
	{ .name = "peer_timeout_ms", .high = 20000, .min = 100,
	  .max = 3600 * 1000 },
};

static FILE *fuzz_limit_file(const struct fuzz_limit *l, const char *mode)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/kfab/parameters/%s", l->name);
	return fopen(path, mode);
}

static void fuzz_limits_save(void)
{
	unsigned int i;
	FILE *f;

	for (i = 0; i < ARRAY_SIZE(fuzz_limits); i++) {
		f = fuzz_limit_file(&fuzz_limits[i], "r");
		if (!f)
			continue;
		fuzz_limits[i].have = fscanf(f, "%lu", &fuzz_limits[i].found) == 1;
		fclose(f);
	}
}

static void fuzz_limits_restore(void)
{
	unsigned int i;
	FILE *f;

	for (i = 0; i < ARRAY_SIZE(fuzz_limits); i++) {
		if (!fuzz_limits[i].have)
			continue;
		f = fuzz_limit_file(&fuzz_limits[i], "w");
		if (!f || fprintf(f, "%lu\n", fuzz_limits[i].found) < 0)
			fail(NULL, "limit %s: not put back", fuzz_limits[i].name);
		if (f && fclose(f))
			fail(NULL, "limit %s: not put back", fuzz_limits[i].name);
	}
}

/* LIMIT_GET, or a LIMIT_SET nearly right. */
static size_t nl_limit_request(struct fuzz_thread *t, uint8_t *buf,
			       struct fuzz_op *op)
{
	const struct fuzz_limit *l =
		&fuzz_limits[rnd_below(t, ARRAY_SIZE(fuzz_limits))];
	size_t len = NLMSG_LENGTH(GENL_HDRLEN);
	const char *name = l->name;
	uint64_t v;

	if (chance(t, 1, 4)) {
		op->cmd = KFAB_NL_CMD_LIMIT_GET;
		op->arg = NLM_F_REQUEST | NLM_F_DUMP;
		return len;
	}
	op->cmd = KFAB_NL_CMD_LIMIT_SET;
	op->arg = NLM_F_REQUEST | NLM_F_ACK;
	switch (rnd_below(t, 6)) {
	case 0:
		v = 0;
		break;
	case 1:
		v = l->max + 1;
		break;
	case 2:
		v = chance(t, 1, 2) ? 1ull << 32 : UINT64_MAX;
		break;
	default:
		/* In range, lowering nothing: the found value or more. */
		v = chance(t, 1, 2) && fuzz_limits[l - fuzz_limits].have ?
		    l->found : l->high;
	}
	if (chance(t, 1, 8))
		name = chance(t, 1, 2) ? "max_objects" : "";
	if (!chance(t, 1, 16))
		nl_put(buf, &len, KFAB_NL_ATTR_LIMIT_NAME, name,
		       strlen(name) + 1);
	if (!chance(t, 1, 16))
		nl_put(buf, &len, KFAB_NL_ATTR_LIMIT_VALUE, &v,
		       chance(t, 1, 16) ? 4 : sizeof(v));
	return len;
}

/* A random request: command, flags, attributes, maybe cut short. */
static size_t nl_random_request(struct fuzz_thread *t, uint8_t *buf,
				struct fuzz_op *op)
{
	static const uint16_t sizes[] = { 0, 1, 2, 4, 8, 16, 40 };
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct genlmsghdr *g = NLMSG_DATA(h);
	size_t len = NLMSG_LENGTH(GENL_HDRLEN);
	unsigned int i, n = rnd_below(t, 5);
	uint8_t data[40], cmd;

	if (chance(t, 1, 4)) {
		len = nl_transport_request(t, buf, &cmd);
		op->cmd = cmd;
		op->arg = NLM_F_REQUEST | NLM_F_ACK;
		goto header;
	}
	if (chance(t, 1, 8)) {
		len = nl_limit_request(t, buf, op);
		goto header;
	}
	for (i = 0; i < n; i++) {
		uint16_t sz = sizes[rnd_below(t, ARRAY_SIZE(sizes))];
		uint32_t v = chance(t, 1, 2) ? 0 : (uint32_t)rnd(t);

		memset(data, 0, sizeof(data));
		memcpy(data, &v, sz < 4 ? sz : 4);
		nl_put(buf, &len, rnd_below(t, KFAB_NL_ATTR_MAX + 8), data, sz);
	}
	op->cmd = chance(t, 9, 10) ? 1 + rnd_below(t, KFAB_NL_CMD_MAX) :
				     rnd_below(t, 256);
	op->arg = NLM_F_REQUEST | (chance(t, 2, 3) ? NLM_F_DUMP : 0) |
		  (chance(t, 1, 3) ? NLM_F_ACK : 0);
header:
	*h = (struct nlmsghdr){ .nlmsg_len = len, .nlmsg_type = cfg.nl_family,
				.nlmsg_flags = op->arg, .nlmsg_seq = t->seq };
	*g = (struct genlmsghdr){ .cmd = op->cmd, .version = KFAB_GENL_VERSION };
	/* Cut short, but never to nothing: the socket refuses that itself. */
	if (chance(t, 1, 10))
		len = 1 + rnd_below(t, len);
	op->len = len;
	return len;
}

static void act_netlink(struct fuzz_thread *t)
{
	struct fuzz_op op = { .kind = K_NETLINK, .fd = -1,
			      .expect = NETLINK_OUTCOMES };
	uint8_t *buf = t->scratch;
	size_t len;
	int rc;

	if (!cfg.nl_family || !take_op())
		return;
	if (t->nl_sock < 0)
		t->nl_sock = nl_socket();
	if (t->nl_sock < 0)
		return;
	len = nl_random_request(t, buf, &op);
	op.fd = t->nl_sock;
	op_begin(t, &op);
	rc = send(t->nl_sock, buf, len, 0) == (ssize_t)len ? 0 : -1;
	op.err = rc ? errno : 0;
	/* Now and then the socket goes with the answer unread. */
	if (!rc && chance(t, 1, 8)) {
		close(t->nl_sock);
		t->nl_sock = -1;
	} else if (!rc) {
		rc = nl_answer(t->nl_sock, (uint32_t)t->seq, buf, 2 * cfg.page);
		op.err = rc < 0 ? 0 : rc;
	}
	op_end(t, &op);
	check_outcome(t, &op, NETLINK_OUTCOMES);
}

/*
 * KFAB_IOC_RING: an id from the pool, or a value no id has (the upper
 * half set: EINVAL).  A ring that is not a ring's owner is ENOENT; an
 * endpoint not enabled, or an SRX without one, EINVAL (abi.rst).
 */
static void act_ring(struct fuzz_thread *t)
{
	struct fuzz_op op = { .kind = K_RING, .cmd = KFAB_IOC_RING };
	unsigned long arg;
	bool bad_fd;

	if (chance(t, 1, 10))
		arg = (unsigned long)rnd(t) | 1UL << 32;
	else
		arg = pick_id(t);
	op.arg = (uint32_t)arg;
	op.fd = pick_fd(t, &bad_fd);
	if (bad_fd)
		op.expect = O(EBADF);
	else if (arg > UINT32_MAX)
		op.expect = O(EINVAL);
	else
		op.expect = O(OK) | O(ENOENT) | O(EINVAL);
	if (!bad_fd && t->proc->racy)
		op.expect |= RACY_ERRNOS;
	if (!take_op())
		return;
	op_begin(t, &op);
	op.err = ioctl(op.fd, KFAB_IOC_RING, arg) < 0 ? errno : 0;
	op_end(t, &op);
	check_outcome(t, &op, O(OK) | O(ENOENT) | O(EINVAL) | O(EBADF) |
			      (t->proc->racy ? RACY_ERRNOS : 0));
}

enum fuzz_action {
	A_OPEN,
	A_CLOSE,
	A_COMMAND,
	A_RANDOM_IOCTL,
	A_RING,
	A_MMAP,
	A_MUNMAP,
	A_NETLINK,
	A_KILL,
	NR_ACTIONS,
};

static const unsigned int action_weight[NR_ACTIONS] = {
	[A_OPEN] = 400,
	[A_CLOSE] = 300,
	[A_COMMAND] = 7000,
	[A_RANDOM_IOCTL] = 1500,
	[A_RING] = 300,
	[A_MMAP] = 400,
	[A_MUNMAP] = 200,
	[A_NETLINK] = 300,
	[A_KILL] = 3,		/* about once per 3300 actions */
};

static void run_action(struct fuzz_thread *t)
{
	unsigned int w[ARRAY_SIZE(fuzz_cmds)], i;

	t->seq++;
	switch (pick_weighted(t, action_weight, NR_ACTIONS)) {
	case A_OPEN:
		act_open(t);
		break;
	case A_CLOSE:
		act_close(t);
		break;
	case A_COMMAND:
		for (i = 0; i < ARRAY_SIZE(fuzz_cmds); i++)
			w[i] = fuzz_cmds[i].weight;
		act_command(t, &fuzz_cmds[pick_weighted(t, w, ARRAY_SIZE(fuzz_cmds))]);
		break;
	case A_RANDOM_IOCTL:
		act_random_ioctl(t);
		break;
	case A_RING:
		act_ring(t);
		break;
	case A_MMAP:
		act_mmap(t);
		break;
	case A_MUNMAP:
		act_munmap(t);
		break;
	case A_NETLINK:
		act_netlink(t);
		break;
	default:
		act_kill(t);
	}
}

/* Workers */

static void *thread_main(void *arg)
{
	struct fuzz_thread *t = arg;

	while (!budget_over())
		run_action(t);
	return NULL;
}

static int thread_setup(struct fuzz_thread *t)
{
	size_t page = cfg.page;
	uint8_t *mem, *edge;

	/* [scratch 2][buf 3][guard][ro] */
	mem = mmap(NULL, 7 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -1;
	t->mem = mem;
	t->scratch = mem;
	t->buf = mem + 2 * page;
	t->guard = mem + 5 * page;
	t->ro = mem + 6 * page;
	if (mprotect(t->guard, page, PROT_NONE) ||
	    mprotect(t->ro, page, PROT_READ))
		return -1;

	/* A page low in the address space, where nothing maps the next one. */
	edge = mmap((void *)(EDGE_BASE + 2 * page * t->idx), page,
		    PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (edge == MAP_FAILED)
		return -1;
	t->edge = edge;
	return 0;
}

static void __attribute__((noreturn)) worker(unsigned int slot, unsigned int gen)
{
	struct fuzz_proc proc = { .slot = slot, .gen = gen, .racy = cfg.threads > 1 };
	struct fuzz_thread *th;
	struct sigaction sa = { .sa_sigaction = fault_handler,
				.sa_flags = SA_SIGINFO | SA_NODEFER };
	uint64_t seed;
	sigset_t all;
	unsigned int i, j;

	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);

	for (i = 0; i < NR_SLOTS; i++)
		proc.fds[i] = i < NR_SHARED_FDS ? cfg.shared_fd[i] : -1;

	th = calloc(cfg.threads, sizeof(*th));
	if (!th)
		_exit(2);
	seed = mix64(mix64(mix64(cfg.seed) + slot) + gen);
	for (i = 0; i < cfg.threads; i++) {
		th[i].proc = &proc;
		th[i].idx = i;
		th[i].rng = mix64(seed + i);
		th[i].nl_sock = -1;
		if (thread_setup(&th[i])) {
			fprintf(stderr, "kfab_fuzz: worker %u: setup: %s\n", slot,
				strerror(errno));
			_exit(2);
		}
	}
	for (i = 1; i < cfg.threads; i++)
		if (pthread_create(&th[i].tid, NULL, thread_main, &th[i])) {
			fprintf(stderr, "kfab_fuzz: worker %u: pthread_create failed\n",
				slot);
			_exit(2);
		}
	thread_main(&th[0]);
	for (i = 1; i < cfg.threads; i++)
		pthread_join(th[i].tid, NULL);

	/* Leave nothing behind: the parent checks the context count. */
	for (i = 0; i < cfg.threads; i++)
		for (j = 0; j < NR_MAPS; j++)
			if (th[i].maps[j].addr)
				unmap(&th[i], &th[i].maps[j]);
	for (i = 0; i < NR_SLOTS; i++)
		if (proc.fds[i] >= 0) {
			struct fuzz_op op = { .kind = K_CLOSE, .fd = proc.fds[i],
					      .expect = O(OK) };

			op_begin(&th[0], &op);
			op.err = close(proc.fds[i]) ? errno : 0;
			op_end(&th[0], &op);
			check_outcome(&th[0], &op, O(OK));
		}
	_exit(0);
}

/* The parent */

static void dump_debugfs(void)
{
	char line[256];
	int n = 0;
	FILE *f = fopen(DEBUGFS_CONTEXTS, "r");

	if (!f)
		return;
	ksft_print_msg("%s:\n", DEBUGFS_CONTEXTS);
	while (fgets(line, sizeof(line), f) && n++ < 40)
		ksft_print_msg("  %s", line);
	fclose(f);
}

struct fuzz_slot {
	pid_t pid;		/* 0: not running */
	unsigned int gen;
	bool killed_by_us;	/* the parent killed it (hang) */
};

static pid_t spawn(struct fuzz_slot *s, unsigned int slot)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0)
		worker(slot, s->gen);
	if (pid < 0) {
		fail(NULL, "fork: %s", strerror(errno));
		return 0;
	}
	s->pid = pid;
	if (cfg.verbose)
		fprintf(stderr, "kfab_fuzz: worker %u gen %u is pid %d\n", slot,
			s->gen, pid);
	return pid;
}

static void report_inflight(unsigned int slot)
{
	char desc[FAIL_MSG_LEN];
	unsigned int i;

	for (i = 0; i < cfg.threads; i++)
		if (__atomic_load_n(&shm->busy[slot][i], __ATOMIC_ACQUIRE)) {
			describe_op(desc, sizeof(desc), &shm->inflight[slot][i]);
			ksft_print_msg("worker %u thread %u in flight: %s\n", slot,
				       i, desc);
		}
}

/* Run the workers until the budget is spent; returns generations started. */
static unsigned int run_workers(unsigned int *kills)
{
	struct fuzz_slot slots[MAX_PROCS] = { 0 };
	uint64_t last_ops = 0, last_progress = now_ns(), last_report = now_ns();
	unsigned int live = 0, started = 0, i;
	bool stalled = false;
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);

	for (i = 0; i < cfg.procs; i++)
		if (spawn(&slots[i], i)) {
			live++;
			started++;
		}

	while (live) {
		struct timespec ts = { .tv_sec = 1 };
		int status;
		pid_t pid;

		sigtimedwait(&chld, NULL, &ts);
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			struct fuzz_slot *s = NULL;
			bool meant;

			for (i = 0; i < cfg.procs; i++)
				if (slots[i].pid == pid)
					s = &slots[i];
			if (!s)
				continue;
			i = s - slots;
			s->pid = 0;
			live--;
			meant = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
				shm->kill_intent[i] == s->gen + 1;
			if (meant) {
				(*kills)++;
			} else if (s->killed_by_us) {
				/* reported as a hang already */
			} else if (WIFSIGNALED(status)) {
				fail(NULL, "worker %u gen %u died of signal %d (%s)", i,
				     s->gen, WTERMSIG(status),
				     strsignal(WTERMSIG(status)));
			} else if (WEXITSTATUS(status)) {
				fail(NULL, "worker %u gen %u exited %d", i, s->gen,
				     WEXITSTATUS(status));
			}
			if (meant && !budget_over() && !stalled) {
				s->gen++;
				if (spawn(s, i)) {
					live++;
					started++;
				}
			}
		}

		if (total_ops() != last_ops) {
			last_ops = total_ops();
			last_progress = now_ns();
		} else if (!stalled && now_ns() - last_progress >
			   STALL_SECONDS * 1000000000ull) {
			stalled = true;
			fail(NULL, "no progress for %d s: a hang", STALL_SECONDS);
			__atomic_store_n(&shm->stop, 1, __ATOMIC_RELAXED);
			for (i = 0; i < cfg.procs; i++)
				if (slots[i].pid) {
					report_inflight(i);
					slots[i].killed_by_us = true;
					kill(slots[i].pid, SIGKILL);
				}
		} else if (stalled && now_ns() - last_progress >
			   2 * STALL_SECONDS * 1000000000ull) {
			fail(NULL, "%u workers cannot be reaped", live);
			break;
		}
		if (cfg.verbose && now_ns() - last_report > 10000000000ull) {
			last_report = now_ns();
			fprintf(stderr, "kfab_fuzz: %" PRIu64 " ops, %u workers live\n",
				last_ops, live);
		}
	}
	return started;
}

/* After the storm: the module still answers and still allocates. */
static void final_check(void)
{
	struct kfab_query q;
	int fd = kfab_open();
	uint32_t id;
	int rc;

	if (fd < 0) {
		fail(NULL, "final check: open: %s", strerror(errno));
		return;
	}
	rc = _test_cmd_query(fd, &q);
	if (rc || q.abi_version != KFAB_ABI_VERSION)
		fail(NULL, "final check: QUERY: %s, abi_version %u",
		     strerror(-rc), q.abi_version);
	rc = _test_cmd_domain_alloc(fd, &id);
	if (rc) {
		fail(NULL, "final check: DOMAIN_ALLOC: %s", strerror(-rc));
	} else {
		rc = _test_cmd_destroy(fd, id);
		if (rc)
			fail(NULL, "final check: DESTROY %u: %s", id,
			     strerror(-rc));
	}
	close(fd);
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [--seed N] [--ops N] [--seconds S] [--procs P] [--threads T] [--verbose]\n"
		"\n"
		"Random ioctl/open/close/mmap sequences against " KFAB_DEV " from P processes\n"
		"of T threads (default 3 x 3), with an oracle for every outcome.\n"
		"\n"
		"  --seed N      seed (default: from the clock; printed first)\n"
		"  --ops N       operations to issue, all workers together (default 20000;\n"
		"                unlimited when only --seconds is given)\n"
		"  --seconds S   stop after S seconds (with --ops: whichever comes first)\n"
		"  --procs P     worker processes at once (1..%d); some SIGKILL themselves\n"
		"                and are replaced\n"
		"  --threads T   threads per worker, sharing its files (1..%d)\n"
		"  --verbose     worker events and failures on stderr; twice: every op\n"
		"\n"
		"A seed replays exactly with --procs 1 --threads 1 and --ops (not\n"
		"--seconds).  With more processes or threads, the\n"
		"scheduler picks the interleaving: each thread repeats its choices,\n"
		"not the outcomes that depend on the others.\n"
		"\n"
		"Output: kselftest TAP, one test.  Without " KFAB_DEV " it skips, exit 0.\n",
		argv0, MAX_PROCS, MAX_THREADS);
}

static unsigned long long parse_num(const char *s, const char *what,
				    unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end || v > max) {
		fprintf(stderr, "kfab_fuzz: bad %s '%s'\n", what, s);
		exit(KSFT_FAIL);
	}
	return v;
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "procs", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool seeded = false;
	int c;

	while ((c = getopt_long(argc, argv, "s:n:t:p:T:vh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			cfg.seed = parse_num(optarg, "seed", ULLONG_MAX);
			seeded = true;
			break;
		case 'n':
			cfg.ops = parse_num(optarg, "ops", ULLONG_MAX);
			cfg.ops_given = true;
			break;
		case 't':
			cfg.seconds = parse_num(optarg, "seconds", 1u << 30);
			break;
		case 'p':
			cfg.procs = parse_num(optarg, "procs", MAX_PROCS);
			break;
		case 'T':
			cfg.threads = parse_num(optarg, "threads", MAX_THREADS);
			break;
		case 'v':
			cfg.verbose++;
			break;
		case 'h':
			usage(stdout, argv[0]);
			exit(0);
		default:
			usage(stderr, argv[0]);
			exit(KSFT_FAIL);
		}
	}
	if (optind < argc || !cfg.procs || !cfg.threads) {
		usage(stderr, argv[0]);
		exit(KSFT_FAIL);
	}
	if (cfg.seconds && !cfg.ops_given)
		cfg.ops = UINT64_MAX;
	if (!seeded) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		/* Small enough to type back. */
		cfg.seed = mix64(ts.tv_sec * 1000000000ull + ts.tv_nsec + getpid()) %
			   1000000000ull;
	}
}

static void print_breakdown(double secs, unsigned int started, unsigned int kills)
{
	char line[1024];
	size_t len = 0;
	unsigned int k;
	uint64_t ops = total_ops();

	for (k = 0; k < NR_KINDS && len < sizeof(line); k++)
		len += snprintf(line + len, sizeof(line) - len, " %s=%" PRIu64,
				kind_name(k), shm->count[k]);
	ksft_print_msg("seed %" PRIu64 ": %" PRIu64 " ops:%s; workers started=%u killed=%u; mapping faults=%" PRIu64 "\n",
		       cfg.seed, ops, line, started, kills, shm->faults);
	ksft_print_msg("%.1f s, %.0f ops/s\n", secs, secs > 0 ? ops / secs : 0.0);
}

int main(int argc, char **argv)
{
	struct kfab_query q;
	unsigned int started, kills = 0, i;
	char cmdline[512], ops_arg[32] = "", seconds_arg[32] = "";
	long base, now = 0;
	uint64_t t0, failures;
	double secs;
	int fd, rc;

	parse_args(argc, argv);
	cfg.page = sysconf(_SC_PAGESIZE);
	if (cfg.ops != UINT64_MAX)
		snprintf(ops_arg, sizeof(ops_arg), " --ops %" PRIu64, cfg.ops);
	if (cfg.seconds)
		snprintf(seconds_arg, sizeof(seconds_arg), " --seconds %u", cfg.seconds);

	ksft_print_header();
	ksft_set_plan(1);
	snprintf(cmdline, sizeof(cmdline), "%s --seed %" PRIu64 "%s%s --procs %u --threads %u",
		 argv[0], cfg.seed, ops_arg, seconds_arg, cfg.procs, cfg.threads);
	ksft_print_msg("seed %" PRIu64 ": %s\n", cfg.seed, cmdline);

	if (access(KFAB_DEV, F_OK)) {
		ksft_test_result_skip("no " KFAB_DEV "\n");
		ksft_exit_pass();
	}
	for (i = 0; i < ARRAY_SIZE(fuzz_cmds); i++)
		if (cmd_size(&fuzz_cmds[i]) > ANSWER_MAX)
			ksft_exit_fail_msg("%s: struct larger than ANSWER_MAX\n",
					   fuzz_cmds[i].name);

	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	shm->budget = cfg.ops;

	base = kfab_contexts();
	if (base < 0)
		ksft_print_msg("cannot read %s/contexts: no leak check\n", KFAB_SYSFS);

	fd = open(KFAB_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ksft_test_result_skip("cannot open " KFAB_DEV ": %s\n", strerror(errno));
		ksft_exit_pass();
	}
	rc = _test_cmd_query(fd, &q);
	if (rc)
		ksft_exit_fail_msg("QUERY: %s\n", strerror(-rc));
	if (q.abi_version != KFAB_ABI_VERSION)
		ksft_exit_fail_msg("abi_version %u, expected %u\n", q.abi_version,
				   KFAB_ABI_VERSION);
	cfg.max_objects = q.max_objects;
	cfg.features = q.features;
	cfg.nl_family = nl_resolve();
	close(fd);
	nl_private_netns();
	fuzz_limits_save();

	/* Files every worker inherits: processes sharing contexts. */
	for (i = 0; i < NR_SHARED_FDS; i++) {
		cfg.shared_fd[i] = open(KFAB_DEV, O_RDWR);
		if (cfg.shared_fd[i] < 0)
			ksft_exit_fail_msg("open: %s\n", strerror(errno));
	}

	t0 = now_ns();
	if (cfg.seconds)
		shm->deadline_ns = t0 + cfg.seconds * 1000000000ull;
	started = run_workers(&kills);
	secs = (now_ns() - t0) / 1e9;

	for (i = 0; i < NR_SHARED_FDS; i++)
		close(cfg.shared_fd[i]);
	fuzz_unlisten_all();
	fuzz_allow_clear();
	fuzz_limits_restore();
	final_check();

	if (base >= 0) {
		/* Releases finish before wait() returns; allow a moment anyway. */
		for (i = 0; i < 200 && (now = kfab_contexts()) != base; i++)
			usleep(10000);
		if (now != base) {
			fail(NULL, "contexts: %ld at start, %ld at the end: leaked", base,
			     now);
			dump_debugfs();
		}
	}

	print_breakdown(secs, started, kills);
	failures = shm->failures;
	for (i = 0; i < failures && i < MAX_FAIL_MSGS; i++)
		ksft_print_msg("FAIL %s\n", shm->fail_msg[i]);
	if (failures > MAX_FAIL_MSGS)
		ksft_print_msg("... and %" PRIu64 " more failures\n",
			       failures - MAX_FAIL_MSGS);

	if (failures) {
		ksft_print_msg("rerun: %s%s\n", cmdline,
			       cfg.procs * cfg.threads > 1 ?
			       " (the interleaving of threads and processes differs from run to run)" : "");
		ksft_test_result_fail("fuzz: seed %" PRIu64 ", %" PRIu64 " failures\n",
				      cfg.seed, failures);
		ksft_exit_fail();
	}
	ksft_test_result_pass("fuzz: seed %" PRIu64 ", %" PRIu64 " ops\n", cfg.seed,
			      total_ops());
	ksft_exit_pass();
}
