// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Large copies shared by both processes (kernel/share.c): a send that
 * matches a posted receive of share_min_bytes or more is copied in pieces,
 * by the sender's doorbell and by the receiver's KFAB_IOC_CQ_HELP while
 * the ring says KFAB_CQ_RING_HELP.  Through the raw ABI, each endpoint in
 * a file (or a process) of its own: every byte arrives, both completions
 * come once, whoever polls or not, through signals and SIGKILL of either
 * side, and nothing stays pinned.
 *
 * Needs /dev/kfab (the VM); on the host every test SKIPs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kfab_test.h"
#include "kfab_raw_ep.h"

#define MIB		(1024 * 1024)
#define PARAM_MIN	"/sys/module/kfab/parameters/share_min_bytes"
#define PARAM_FANOUT	"/sys/module/kfab/parameters/share_fanout_bytes"
#define PARAM_WORKERS	"/sys/module/kfab/parameters/share_workers"
#define PARAM_PIN_CACHE	"/sys/module/kfab/parameters/pin_cache"
#define DEBUGFS_CONTEXTS "/sys/kernel/debug/kfab/contexts"
#define DEBUGFS_SHARE	"/sys/kernel/debug/kfab/share"

static bool wants_help(struct raw_ep *r)
{
	return KFAB_TEST_RING_U32(&r->cq, r->cq.layout.off_flags) &
	       KFAB_CQ_RING_HELP;
}

/* KFAB_IOC_CQ_HELP on @r's CQ: 0 or -errno; pieces copied in *@chunks. */
static int help(int fd, uint32_t cq_id, uint64_t *chunks)
{
	struct kfab_cq_help h = { .size = sizeof(h), .cq_id = cq_id };
	int rc = kfab_ioctl(fd, KFAB_IOC_CQ_HELP, &h);

	if (!rc && chunks)
		*chunks += h.out_chunks;
	return rc;
}

/* Both ends of a pipe. */
static void close_pipe(int p[2])
{
	close(p[0]);
	close(p[1]);
}

/* Byte @i of message @seed. */
static uint8_t pat(uint64_t seed, size_t i)
{
	return (uint8_t)(i * 131 + (i >> 12) + seed * 17 + 1);
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = pat(seed, i);
}

/* Offset of the first wrong byte, or -1. */
static long check(const uint8_t *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pat(seed, i))
			return (long)i;
	return -1;
}

static long share_min(void)
{
	return read_sysfs_long(PARAM_MIN);
}

/* A field of debugfs "share" ("jobs", "helped", ...), or -1. */
static long long share_stat(const char *name)
{
	char line[256], *p;
	long long v = -1;
	FILE *f = fopen(DEBUGFS_SHARE, "r");

	if (!f)
		return -1;
	while (v < 0 && fgets(line, sizeof(line), f)) {
		p = strstr(line, name);
		if (p)
			sscanf(p + strlen(name), " %lld", &v);
	}
	fclose(f);
	return v;
}

/* Write @v to the module parameter @path: 0, or -1 when it refused. */
static int set_param(const char *path, const char *v)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(v, f);
	return fclose(f) ? -1 : 0;
}

/* This process's pinned memory (VmPin), in kB, or -1. */
static long vm_pin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * VmPin once it has come down to @kb, or as it is after two seconds: a
 * kept pin that is evicted or whose memory goes is unpinned by a worker,
 * soon but not at once (a slow guest once showed two evicted pins still
 * charged when the test looked).
 */
static long vm_pin_kb_settled(long kb)
{
	long v;
	int i;

	for (i = 0; i < 200 && (v = vm_pin_kb()) > kb; i++)
		usleep(10000);
	return v;
}

/* The bool module parameter pin_cache: 1, 0, or -1 when absent. */
static int pin_cache_param(void)
{
	char c = 0;
	FILE *f = fopen(PARAM_PIN_CACHE, "r");

	if (!f)
		return -1;
	if (fread(&c, 1, 1, f) != 1)
		c = 0;
	fclose(f);
	return c == 'Y' ? 1 : c == 'N' ? 0 : -1;
}

static void *big_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* ---- the command itself ---- */

TEST(help_rejects_what_is_not_its_own)
{
	struct kfab_cq_help h;
	struct kfab_test_cq cq;
	uint32_t dom, dom2;
	int fd, fd2;

	if (!kfab_have_device())
		SKIP(return, "%s absent: needs kfab.ko (VM)", KFAB_DEV);
	ASSERT_EQ(0, _test_open_domain(&fd, &dom));
	ASSERT_EQ(0, _test_open_domain(&fd2, &dom2));
	ASSERT_EQ(0, _test_cq_open_mapped(fd, dom, 64, 0, &cq));

	/* Nothing to do: 0, and every output written (zero). */
	memset(&h, 0xa5, sizeof(h));
	h.size = sizeof(h);
	h.flags = 0;
	h.__reserved = 0;
	h.cq_id = cq.id;
	ASSERT_EQ(0, kfab_ioctl(fd, KFAB_IOC_CQ_HELP, &h));
	EXPECT_EQ(0, h.out_chunks);
	EXPECT_EQ(0, h.out_bytes);
	EXPECT_EQ(cq.id, h.cq_id);
	EXPECT_EQ(0, KFAB_TEST_RING_U32(&cq, cq.layout.off_flags) &
		     KFAB_CQ_RING_HELP);

	/* Ids that are no CQ of this file. */
	EXPECT_EQ(-ENOENT, help(fd, 0, NULL));
	EXPECT_EQ(-ENOENT, help(fd, dom, NULL));
	EXPECT_EQ(-ENOENT, help(fd, 99999, NULL));
	EXPECT_EQ(-ENOENT, help(fd, UINT32_MAX, NULL));
	/* Another file's CQ: its id means nothing here. */
	EXPECT_EQ(-ENOENT, help(fd2, cq.id, NULL));

	/* Flags and reserved bits. */
	h = (struct kfab_cq_help){ .size = sizeof(h), .cq_id = cq.id,
				   .flags = 1 };
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(fd, KFAB_IOC_CQ_HELP, &h));
	h.flags = 1u << 31;
	EXPECT_EQ(-EOPNOTSUPP, kfab_ioctl(fd, KFAB_IOC_CQ_HELP, &h));
	h.flags = 0;
	h.__reserved = 1;
	EXPECT_EQ(-EINVAL, kfab_ioctl(fd, KFAB_IOC_CQ_HELP, &h));
	/* Short structs, bad pointers. */
	h = (struct kfab_cq_help){ .size = 8, .cq_id = cq.id };
	EXPECT_EQ(-EINVAL, kfab_ioctl(fd, KFAB_IOC_CQ_HELP, &h));
	EXPECT_EQ(-EFAULT, kfab_ioctl(fd, KFAB_IOC_CQ_HELP, NULL));

	_test_cq_unmap(&cq);
	close(fd);
	close(fd2);
}

/* ---- one process, two files: the sender copies alone ---- */

FIXTURE(share) {
	struct raw_ep a, b;
	uint64_t a_to_b;
	long min;
	long fanout, workers;	/* the module's, to restore; -2: untouched */
	int pin_cache;		/* the module's, to restore; -1: absent */
};

/*
 * Every test twice: with the module's settings (on a 2-CPU machine no
 * kernel worker is offered a copy), and with two workers offered every
 * copy of 1 MiB or more whatever the CPUs.
 */
FIXTURE_VARIANT(share) {
	bool workers;
};

FIXTURE_VARIANT_ADD(share, alone) {
	.workers = false,
};

FIXTURE_VARIANT_ADD(share, workers) {
	.workers = true,
};

FIXTURE_SETUP(share)
{
	self->a.fd = self->b.fd = -1;
	self->fanout = self->workers = -2;
	self->pin_cache = -1;
	if (!kfab_have_device())
		SKIP(return, "%s absent: needs kfab.ko (VM)", KFAB_DEV);
	self->min = share_min();
	if (self->min <= 0)
		SKIP(return, "share_min_bytes is 0 or absent");
	/*
	 * Each buffer pinned for its own message, so that "nothing stays
	 * pinned" holds after each; the kept pins have their own tests.
	 */
	self->pin_cache = pin_cache_param();
	if (self->pin_cache > 0)
		ASSERT_EQ(0, set_param(PARAM_PIN_CACHE, "0"));
	if (variant->workers) {
		self->fanout = read_sysfs_long(PARAM_FANOUT);
		self->workers = read_sysfs_long(PARAM_WORKERS);
		ASSERT_LE(0, self->fanout);
		ASSERT_LE(-1, self->workers);
		ASSERT_EQ(0, set_param(PARAM_FANOUT, "1048576"));
		ASSERT_EQ(0, set_param(PARAM_WORKERS, "2"));
	}
	ASSERT_EQ(0, ep_setup(&self->a, true));
	ASSERT_EQ(0, ep_setup(&self->b, true));
	self->a_to_b = peer_addr(&self->a, &self->b.addr);
	ASSERT_NE(ANY, self->a_to_b);
}

FIXTURE_TEARDOWN(share)
{
	char v[32];

	ep_close(&self->a);
	ep_close(&self->b);
	if (self->pin_cache > 0)
		set_param(PARAM_PIN_CACHE, "1");
	if (self->fanout < 0)
		return;
	snprintf(v, sizeof(v), "%ld", self->fanout);
	set_param(PARAM_FANOUT, v);
	snprintf(v, sizeof(v), "%ld", self->workers);
	set_param(PARAM_WORKERS, v);
}

/*
 * One message from a's @siov into b's @riov: both complete with the
 * whole length, and every byte is where it belongs.
 */
static void one_message(struct __test_metadata *_metadata,
			FIXTURE_DATA(share) *self, const struct iovec *siov,
			unsigned int sn, const struct iovec *riov,
			unsigned int rn, uint64_t seed, bool late)
{
	struct kfab_cq_entry e;
	struct kfab_sqe q;
	size_t len = 0, off = 0, i, j;
	uint8_t *flat;

	for (i = 0; i < sn; i++)
		len += siov[i].iov_len;
	flat = malloc(len);
	ASSERT_NE(NULL, flat);
	fill(flat, len, seed);
	for (i = 0; i < sn; off += siov[i].iov_len, i++)
		memcpy(siov[i].iov_base, flat + off, siov[i].iov_len);
	for (j = 0; j < rn; j++)
		memset(riov[j].iov_base, 0, riov[j].iov_len);

	if (late) {
		/* The message waits at a (rendezvous); b's doorbell copies. */
		q = sqe_iov(KFAB_OP_SEND, 200 + seed, self->a_to_b, siov, sn);
		ASSERT_EQ(0, submit(&self->a, &q));
		EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	}
	q = sqe_iov(KFAB_OP_RECV, 100 + seed, ANY, riov, rn);
	ASSERT_EQ(0, submit(&self->b, &q));
	if (!late) {
		q = sqe_iov(KFAB_OP_SEND, 200 + seed, self->a_to_b, siov, sn);
		ASSERT_EQ(0, submit(&self->a, &q));
	}
	ASSERT_EQ(0, cq_next(&self->a, &e));
	EXPECT_EQ(200 + seed, e.op_context);
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(100 + seed, e.op_context);
	EXPECT_EQ(len, e.len);
	EXPECT_EQ(-EAGAIN, cq_next(&self->a, &e));
	EXPECT_EQ(-EAGAIN, cq_next(&self->b, &e));

	off = 0;
	for (j = 0; j < rn && off < len; j++) {
		size_t n = riov[j].iov_len < len - off ? riov[j].iov_len :
							  len - off;

		EXPECT_EQ(0, memcmp(riov[j].iov_base, flat + off, n));
		off += n;
	}
	free(flat);
}

TEST_F(share, sizes_around_the_threshold_arrive_whole)
{
	size_t min = (size_t)self->min;
	size_t sizes[] = { min - 1, min, min + 1, MIB, MIB + 12345,
			   16 * MIB };
	long long jobs = share_stat("jobs"), helped = share_stat("helped");
	long long offered = share_stat("offered");
	long long by_workers = share_stat("by_workers");
	unsigned int i, shared = 0, big = 0;
	uint8_t *s, *r;

	RETURN_IF_SETUP_SKIPPED();
	s = big_alloc(16 * MIB + 8192);
	r = big_alloc(16 * MIB + 8192);
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, r);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct iovec siov = { s + 1, sizes[i] };
		struct iovec riov = { r + 3, sizes[i] };

		one_message(_metadata, self, &siov, 1, &riov, 1, i, false);
		one_message(_metadata, self, &siov, 1, &riov, 1, i + 10, true);
		shared += 2 * (sizes[i] >= min);
		big += 2 * (sizes[i] >= MIB);
	}
	/* Nobody polled b's CQ: a copied every piece itself, or workers. */
	if (jobs >= 0) {
		EXPECT_EQ(jobs + shared, share_stat("jobs"));
		EXPECT_EQ(helped, share_stat("helped"));
	}
	/*
	 * Two workers were offered every copy of 1 MiB (16 pieces) or more;
	 * the second CPU idle, they took pieces of some.
	 */
	if (variant->workers) {
		EXPECT_EQ(offered + 2 * big, share_stat("offered"));
		EXPECT_LT(by_workers, share_stat("by_workers"));
	}
	EXPECT_EQ(0, wants_help(&self->b));
	EXPECT_EQ(0, vm_pin_kb());
	munmap(s, 16 * MIB + 8192);
	munmap(r, 16 * MIB + 8192);
}

TEST_F(share, odd_iovec_layouts_arrive_whole)
{
	uint8_t *s = big_alloc(4 * MIB), *r = big_alloc(4 * MIB);
	struct iovec siov[4], riov[3];

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, r);
	/* Pieces that start and end inside pages, one of a single byte. */
	siov[0] = (struct iovec){ s + 7, 65536 - 7 + 1 };
	siov[1] = (struct iovec){ s + MIB + 4095, 1 };
	siov[2] = (struct iovec){ s + MIB + 8191, 700001 };
	siov[3] = (struct iovec){ s + 3 * MIB + 5, 33 };
	riov[0] = (struct iovec){ r + 4093, 3 };
	riov[1] = (struct iovec){ r + MIB + 1, 500000 };
	riov[2] = (struct iovec){ r + 2 * MIB + 333, MIB };
	one_message(_metadata, self, siov, 4, riov, 3, 42, false);
	one_message(_metadata, self, siov, 4, riov, 3, 44, true);
	/* Into a receive larger than the message. */
	one_message(_metadata, self, siov + 2, 1, riov + 2, 1, 43, false);
	one_message(_metadata, self, siov + 2, 1, riov + 2, 1, 45, true);
	EXPECT_EQ(0, vm_pin_kb());
	munmap(s, 4 * MIB);
	munmap(r, 4 * MIB);
}

TEST_F(share, a_bad_source_page_fails_both_sides)
{
	size_t len = 2 * MIB;
	uint8_t *s = big_alloc(len), *r = big_alloc(len);
	struct kfab_cq_readerr err;
	struct kfab_sqe q;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, r);
	memset(s, 1, len);
	ASSERT_EQ(0, mprotect(s + MIB, 4096, PROT_NONE));
	q = sqe_buf(KFAB_OP_RECV, 1, ANY, r, len);
	ASSERT_EQ(0, submit(&self->b, &q));
	q = sqe_buf(KFAB_OP_SEND, 2, self->a_to_b, s, len);
	ASSERT_EQ(0, submit(&self->a, &q));
	ASSERT_EQ(0, _test_cmd_cq_readerr(self->a.fd, self->a.cq.id, NULL, 0,
					  &err));
	EXPECT_EQ(2, err.out_entry.op_context);
	EXPECT_EQ(EFAULT, err.out_err);
	ASSERT_EQ(0, _test_cmd_cq_readerr(self->b.fd, self->b.cq.id, NULL, 0,
					  &err));
	EXPECT_EQ(1, err.out_entry.op_context);
	EXPECT_EQ(EFAULT, err.out_err);
	EXPECT_EQ(0, vm_pin_kb());
	munmap(s, len);
	munmap(r, len);
}

/* ---- two processes: the receiver helps ---- */

#define NMSG	4
#define MSGLEN	(8 * MIB)

static void noop(int sig)
{
	(void)sig;
}

/* SIGALRM every @usec microseconds, interrupting (no SA_RESTART). */
static void tick(long usec)
{
	struct sigaction sa = { .sa_handler = noop };
	struct itimerval it = {
		.it_interval = { 0, usec }, .it_value = { 0, usec },
	};

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

static void untick(void)
{
	struct itimerval it = { 0 };

	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_DFL);
}

/*
 * The receiving child: posts @n receives of @len, tells its address, then
 * spins on its CQ helping whenever the ring asks, until @n receives
 * completed; checks every byte.  Writes the pieces it copied to @out.
 * Exit status: 0, or where it failed.
 */
static int receiver(int ready, int out, unsigned int n, size_t len,
		    long usec)
{
	struct raw_ep r;
	struct kfab_cq_entry e;
	uint64_t chunks = 0;
	unsigned int got = 0, i;
	uint8_t *buf = big_alloc((size_t)n * len);
	struct kfab_sqe q;

	if (!buf || ep_setup(&r, true))
		return 10;
	for (i = 0; i < n; i++) {
		q = sqe_buf(KFAB_OP_RECV, i, ANY, buf + (size_t)i * len, len);
		if (submit(&r, &q))
			return 11;
	}
	if (write(ready, &r.addr, sizeof(r.addr)) != sizeof(r.addr))
		return 12;
	if (usec)
		tick(usec);
	while (got < n) {
		if (wants_help(&r) && help(r.fd, r.cq.id, &chunks))
			return 13;
		if (cq_next(&r, &e))
			continue;
		if (e.op_context >= n || e.len != len ||
		    check(buf + e.op_context * len, len, e.op_context) >= 0)
			return 14;
		got++;
	}
	untick();
	if (write(out, &chunks, sizeof(chunks)) != sizeof(chunks))
		return 15;
	return vm_pin_kb() ? 16 : 0;
}

/* Send @n messages of @len to @to, each filled with its number. */
static void send_all(struct __test_metadata *_metadata, struct raw_ep *a,
		     uint64_t to, unsigned int n, size_t len)
{
	uint8_t *s = big_alloc(len);
	struct kfab_cq_entry e;
	struct kfab_sqe q;
	unsigned int i;

	ASSERT_NE(NULL, s);
	for (i = 0; i < n; i++) {
		fill(s, len, i);
		q = sqe_buf(KFAB_OP_SEND, i, to, s, len);
		ASSERT_EQ(0, submit(a, &q));
		ASSERT_EQ(0, cq_next(a, &e));
		EXPECT_EQ(i, e.op_context);
	}
	munmap(s, len);
}

static void helped_pair(struct __test_metadata *_metadata,
			FIXTURE_DATA(share) *self, long usec)
{
	long long helped = share_stat("helped");
	struct kfab_addr child;
	int ready[2], out[2], status;
	uint64_t chunks = 0;
	uint64_t to;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(out));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(receiver(ready[1], out[1], NMSG, MSGLEN, usec));
	ASSERT_EQ(sizeof(child), read(ready[0], &child, sizeof(child)));
	to = peer_addr(&self->a, &child);
	ASSERT_NE(ANY, to);
	if (usec)
		tick(usec);
	send_all(_metadata, &self->a, to, NMSG, MSGLEN);
	untick();
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(sizeof(chunks), read(out[0], &chunks, sizeof(chunks)));
	/* The receiver spun on its CQ all along: it took pieces. */
	EXPECT_LT(0, chunks);
	if (helped >= 0)
		EXPECT_LE(helped + (long long)chunks, share_stat("helped"));
	EXPECT_EQ(0, vm_pin_kb());
	close_pipe(ready);
	close_pipe(out);
}

TEST_F(share, the_receiver_helps_while_it_polls)
{
	RETURN_IF_SETUP_SKIPPED();
	helped_pair(_metadata, self, 0);
}

/* A completion waits in @r's CQ (nothing is taken). */
static bool cq_ready(struct raw_ep *r)
{
	return KFAB_TEST_RING_U32(&r->cq, r->cq.layout.off_tail) !=
	       *(uint32_t *)(r->cq.cons + r->cq.layout.off_head);
}

/*
 * The receiving child of a_receiver_that_stops_polling_mid_copy: for each
 * of @n receives of @len, posts it and says so ('r' on @out), helps once
 * as soon as the ring asks, with a timer that ends the help early, then
 * stops polling: it writes to @out the pieces it copied and whether the
 * receive was still unfinished when it stopped, and sleeps on @go until
 * the sender's send has completed; only then does it look at its CQ.
 * Exit status: 0, or where it failed.
 */
static int idle_receiver(int ready, int out, int go, unsigned int n,
			 size_t len)
{
	uint8_t *buf = big_alloc(len);
	struct kfab_cq_entry e;
	uint64_t report[2];
	struct kfab_sqe q;
	struct raw_ep r;
	unsigned int i;
	char c;

	if (!buf || ep_setup(&r, true))
		return 10;
	if (write(ready, &r.addr, sizeof(r.addr)) != sizeof(r.addr))
		return 11;
	for (i = 0; i < n; i++) {
		memset(buf, 0, len);
		q = sqe_buf(KFAB_OP_RECV, i, ANY, buf, len);
		if (submit(&r, &q) || write(out, "r", 1) != 1)
			return 12;
		while (!wants_help(&r) && !cq_ready(&r))
			;
		report[0] = 0;
		if (wants_help(&r)) {
			tick(1000);
			if (help(r.fd, r.cq.id, &report[0]))
				return 13;
			untick();
		}
		/* Left while the copy went on: its completion is not in. */
		report[1] = !cq_ready(&r);
		if (write(out, report, sizeof(report)) != sizeof(report) ||
		    read(go, &c, 1) != 1)
			return 14;
		if (cq_next(&r, &e) || e.op_context != i || e.len != len ||
		    check(buf, len, i) >= 0)
			return 15;
	}
	return vm_pin_kb() ? 16 : 0;
}

/*
 * A receiver that helps for a moment and then stops polling (a signal
 * ends its KFAB_IOC_CQ_HELP early; it reads nothing until told): the
 * sender copies what is left alone, its send completes while the
 * receiver sleeps, the receive is whole when the receiver looks again,
 * and nothing stays pinned.
 */
TEST_F(share, a_receiver_that_stops_polling_mid_copy)
{
	const size_t pieces = MSGLEN / (64 * 1024);
	int ready[2], out[2], go[2], status;
	unsigned int i, midway = 0;
	uint8_t *s = big_alloc(MSGLEN);
	struct kfab_addr child;
	struct kfab_cq_entry e;
	uint64_t report[2], to;
	struct kfab_sqe q;
	pid_t pid;
	char c;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(out));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(idle_receiver(ready[1], out[1], go[0], NMSG, MSGLEN));
	ASSERT_EQ(sizeof(child), read(ready[0], &child, sizeof(child)));
	to = peer_addr(&self->a, &child);
	ASSERT_NE(ANY, to);
	for (i = 0; i < NMSG; i++) {
		fill(s, MSGLEN, i);
		ASSERT_EQ(1, read(out[0], &c, 1));
		q = sqe_buf(KFAB_OP_SEND, i, to, s, MSGLEN);
		ASSERT_EQ(0, submit(&self->a, &q));
		/* Complete, though the receiver may have stopped mid-copy. */
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(i, e.op_context);
		ASSERT_EQ(sizeof(report), read(out[0], report, sizeof(report)));
		TH_LOG("message %u: the receiver copied %llu of %zu pieces%s",
		       i, (unsigned long long)report[0], pieces,
		       report[1] ? ", then left" : "");
		EXPECT_GT(pieces, report[0]);
		if (report[0] && report[1])
			midway++;
		ASSERT_EQ(1, write(go[1], "g", 1));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/*
	 * At least once the receiver helped, then left in the middle; with
	 * kernel workers taking pieces too, the copy may end first.
	 */
	if (!variant->workers)
		EXPECT_LE(1, midway);
	EXPECT_EQ(0, vm_pin_kb());
	munmap(s, MSGLEN);
	close_pipe(ready);
	close_pipe(out);
	close_pipe(go);
}

TEST_F(share, signals_on_both_sides_change_nothing)
{
	RETURN_IF_SETUP_SKIPPED();
	helped_pair(_metadata, self, 300);
}

/*
 * The mirror case: the sending child sends first (its messages wait, its
 * pages pinned) and spins on its CQ for the sends' completions, helping;
 * the parent's receives, posted later, copy with its help.
 */
static int late_sender(int ready, int out, const struct kfab_addr *to_addr,
		       unsigned int n, size_t len, long usec)
{
	uint8_t *src = big_alloc((size_t)n * len);
	struct kfab_cq_entry e;
	unsigned int got = 0, i;
	uint64_t chunks = 0;
	struct raw_ep s;
	struct kfab_sqe q;
	uint64_t to;

	if (!src || ep_setup(&s, true))
		return 10;
	to = peer_addr(&s, to_addr);
	if (to == ANY)
		return 11;
	for (i = 0; i < n; i++) {
		fill(src + (size_t)i * len, len, i);
		q = sqe_buf(KFAB_OP_SEND, i, to, src + (size_t)i * len, len);
		if (submit(&s, &q))
			return 12;
	}
	if (write(ready, "x", 1) != 1)
		return 13;
	if (usec)
		tick(usec);
	while (got < n) {
		if (wants_help(&s) && help(s.fd, s.cq.id, &chunks))
			return 14;
		if (cq_next(&s, &e))
			continue;
		if (e.op_context >= n)
			return 15;
		got++;
	}
	untick();
	if (write(out, &chunks, sizeof(chunks)) != sizeof(chunks))
		return 16;
	return 0;
}

static void late_pair(struct __test_metadata *_metadata,
		      FIXTURE_DATA(share) *self, long usec)
{
	uint8_t *buf = big_alloc(MSGLEN);
	struct kfab_cq_entry e;
	int ready[2], out[2], status;
	uint64_t chunks = 0;
	struct kfab_sqe q;
	unsigned int i;
	pid_t pid;
	char c;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(out));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(late_sender(ready[1], out[1], &self->b.addr, NMSG,
				  MSGLEN, usec));
	ASSERT_EQ(1, read(ready[0], &c, 1));
	if (usec)
		tick(usec);
	for (i = 0; i < NMSG; i++) {
		memset(buf, 0, MSGLEN);
		q = sqe_buf(KFAB_OP_RECV, i, ANY, buf, MSGLEN);
		ASSERT_EQ(0, submit(&self->b, &q));
		ASSERT_EQ(0, cq_next(&self->b, &e));
		EXPECT_EQ(MSGLEN, e.len);
		EXPECT_EQ(-1, check(buf, MSGLEN, e.op_context));
	}
	untick();
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(sizeof(chunks), read(out[0], &chunks, sizeof(chunks)));
	/* The sender spun on its CQ all along: it took pieces. */
	EXPECT_LT(0, chunks);
	EXPECT_EQ(0, vm_pin_kb());
	munmap(buf, MSGLEN);
	close_pipe(ready);
	close_pipe(out);
}

TEST_F(share, the_sender_helps_a_late_receive)
{
	RETURN_IF_SETUP_SKIPPED();
	late_pair(_metadata, self, 0);
}

TEST_F(share, signals_on_both_sides_of_a_late_receive)
{
	RETURN_IF_SETUP_SKIPPED();
	late_pair(_metadata, self, 300);
}

/*
 * The mirror case with the helper killed: the sending child is killed
 * while the parent's receives copy its messages; they wait pinned at the
 * parent, so every receive still gets its whole message.
 */
TEST_F(share, late_receive_with_the_sender_killed)
{
	const unsigned int n = 8;
	const size_t len = 4 * MIB;
	long ctxs = kfab_contexts();
	uint8_t *buf = big_alloc(len);
	int ready[2], out[2], go[2];
	struct kfab_cq_entry e;
	struct kfab_sqe q;
	pid_t pid, killer;
	unsigned int i;
	char c;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(out));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(late_sender(ready[1], out[1], &self->b.addr, n, len, 0));
	ASSERT_EQ(1, read(ready[0], &c, 1));
	killer = fork();
	ASSERT_LE(0, killer);
	if (!killer) {
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		usleep(20000);
		kill(pid, SIGKILL);
		_exit(0);
	}
	ASSERT_EQ(1, write(go[1], "x", 1));
	for (i = 0; i < n; i++) {
		memset(buf, 0, len);
		q = sqe_buf(KFAB_OP_RECV, i, ANY, buf, len);
		ASSERT_EQ(0, submit(&self->b, &q));
		ASSERT_EQ(0, cq_next(&self->b, &e));
		EXPECT_EQ(len, e.len);
		EXPECT_EQ(-1, check(buf, len, e.op_context));
	}
	ASSERT_EQ(killer, waitpid(killer, NULL, 0));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	EXPECT_EQ(ctxs, kfab_contexts());
	EXPECT_EQ(0, vm_pin_kb());
	munmap(buf, len);
	close_pipe(ready);
	close_pipe(out);
	close_pipe(go);
}

/*
 * The helper is killed while the sender copies: every send still ends
 * once, with success or an error, and nothing stays pinned.
 */
TEST_F(share, helper_killed_mid_copy)
{
	long ctxs = kfab_contexts();
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	struct kfab_addr child;
	int ready[2], out[2], go[2];
	unsigned int i, ends = 0;
	pid_t pid, killer;
	uint8_t *s;
	uint64_t to;
	char c;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(out));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(receiver(ready[1], out[1], 8, 4 * MIB, 0));
	ASSERT_EQ(sizeof(child), read(ready[0], &child, sizeof(child)));
	killer = fork();
	ASSERT_LE(0, killer);
	if (!killer) {
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		usleep(20000);
		kill(pid, SIGKILL);
		_exit(0);
	}
	to = peer_addr(&self->a, &child);
	ASSERT_NE(ANY, to);
	s = big_alloc(4 * MIB);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(1, write(go[1], "x", 1));
	for (i = 0; i < 8; i++) {
		struct kfab_sqe q = sqe_buf(KFAB_OP_SEND, i, to, s, 4 * MIB);

		fill(s, 4 * MIB, i);
		ASSERT_EQ(0, submit(&self->a, &q));
	}
	/* Each send ended once: a completion or an error. */
	while (!cq_next(&self->a, &e))
		ends++;
	while (!_test_cmd_cq_readerr(self->a.fd, self->a.cq.id, NULL, 0, &err)) {
		EXPECT_TRUE(err.out_err == EHOSTUNREACH ||
			    err.out_err == ECONNRESET);
		ends++;
	}
	EXPECT_EQ(8, ends);
	ASSERT_EQ(killer, waitpid(killer, NULL, 0));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	EXPECT_EQ(ctxs, kfab_contexts());
	EXPECT_EQ(0, vm_pin_kb());
	munmap(s, 4 * MIB);
	close_pipe(ready);
	close_pipe(out);
	close_pipe(go);
}

/*
 * A child that sends @n messages of @len to @to_addr, each filled with its
 * number, after it says "x" on @ready; then it waits to be killed.
 */
static void __attribute__((noreturn))
sending_child(int ready, const struct kfab_addr *to_addr, unsigned int n,
	      size_t len)
{
	uint8_t *src = big_alloc(len);
	struct kfab_sqe q;
	struct raw_ep s;
	unsigned int i;
	uint64_t to;

	if (!src || ep_setup(&s, true))
		_exit(1);
	to = peer_addr(&s, to_addr);
	if (to == ANY || write(ready, "x", 1) != 1)
		_exit(2);
	for (i = 0; i < n; i++) {
		fill(src, len, i);
		q = sqe_buf(KFAB_OP_SEND, i, to, src, len);
		if (submit(&s, &q))
			_exit(3);
	}
	pause();
	_exit(0);
}

/*
 * Post @n receives of @len on b, one after the other in @buf, and fork
 * sending_child() at them: *@pid once it is about to send.
 */
static void receives_and_a_sender(struct __test_metadata *_metadata,
				  FIXTURE_DATA(share) *self, uint8_t *buf,
				  unsigned int n, size_t len, int ready[2],
				  pid_t *pid)
{
	struct kfab_sqe q;
	unsigned int i;
	char c;

	for (i = 0; i < n; i++) {
		q = sqe_buf(KFAB_OP_RECV, i, ANY, buf + (size_t)i * len, len);
		ASSERT_EQ(0, submit(&self->b, &q));
	}
	ASSERT_EQ(0, pipe(ready));
	*pid = fork();
	ASSERT_LE(0, *pid);
	if (!*pid)
		sending_child(ready[1], &self->b.addr, n, len);
	ASSERT_EQ(1, read(ready[0], &c, 1));
}

/*
 * The sender is killed mid-copy: while the receiver helps (@helping: until
 * a piece was the receiver's), or while it does not poll (then the
 * sender's doorbell and any workers copy, and it waits for the workers'
 * last pieces: it cannot leave them holding its pages).  Every receive
 * that completed holds its whole message; nothing hangs, nothing is left.
 */
static void kill_sender_mid_copy(struct __test_metadata *_metadata,
				 FIXTURE_DATA(share) *self, bool helping)
{
	const unsigned int n = 8;
	const size_t len = 4 * MIB;
	long ctxs = kfab_contexts();
	uint8_t *buf = big_alloc(n * len);
	struct kfab_cq_entry e;
	uint64_t chunks = 0;
	unsigned int got = 0;
	int ready[2];
	pid_t pid;

	ASSERT_NE(NULL, buf);
	receives_and_a_sender(_metadata, self, buf, n, len, ready, &pid);
	/* Help until a piece was ours (or all is in), then kill the sender. */
	while (helping && !chunks && got < n) {
		if (wants_help(&self->b))
			ASSERT_EQ(0, help(self->b.fd, self->b.cq.id, &chunks));
		if (cq_next(&self->b, &e))
			continue;
		ASSERT_GT(n, e.op_context);
		EXPECT_EQ(len, e.len);
		EXPECT_EQ(-1, check(buf + e.op_context * len, len,
				    e.op_context));
		got++;
	}
	if (!helping)
		usleep(30000);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	EXPECT_EQ(ctxs, kfab_contexts());
	EXPECT_EQ(0, wants_help(&self->b));
	EXPECT_EQ(0, help(self->b.fd, self->b.cq.id, NULL));
	while (!cq_next(&self->b, &e)) {
		ASSERT_GT(n, e.op_context);
		EXPECT_EQ(len, e.len);
		EXPECT_EQ(-1, check(buf + e.op_context * len, len,
				    e.op_context));
		got++;
	}
	if (helping)
		EXPECT_LE(1, got);
	/* The receives the dead sender never reached go with b. */
	ep_close(&self->b);
	EXPECT_EQ(0, vm_pin_kb());
	munmap(buf, n * len);
	close_pipe(ready);
}

TEST_F(share, sender_killed_mid_copy)
{
	RETURN_IF_SETUP_SKIPPED();
	kill_sender_mid_copy(_metadata, self, true);
}

TEST_F(share, sender_killed_while_nobody_helps)
{
	RETURN_IF_SETUP_SKIPPED();
	kill_sender_mid_copy(_metadata, self, false);
}

/* share_min_bytes 0: nothing is shared, the copy is the sender's alone. */
TEST_F(share, threshold_zero_shares_nothing)
{
	long long jobs = share_stat("jobs");
	uint8_t *s = big_alloc(MIB), *r = big_alloc(MIB);
	struct iovec siov = { s, MIB }, riov = { r, MIB };
	char val[32];

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, r);
	if (access(PARAM_MIN, W_OK))
		SKIP(goto out, "%s not writable", PARAM_MIN);
	ASSERT_EQ(0, set_param(PARAM_MIN, "0"));
	one_message(_metadata, self, &siov, 1, &riov, 1, 7, false);
	if (jobs >= 0)
		EXPECT_EQ(jobs, share_stat("jobs"));
	snprintf(val, sizeof(val), "%ld", self->min);
	ASSERT_EQ(0, set_param(PARAM_MIN, val));
	/* Not a number: refused, unchanged. */
	EXPECT_NE(0, set_param(PARAM_MIN, "many"));
	EXPECT_EQ(self->min, share_min());
out:
	munmap(s, MIB);
	munmap(r, MIB);
}

/* ---- kernel workers: very large copies offered to idle CPUs ---- */

/*
 * The receiver helps while workers are offered pieces too: up to three
 * takers of one copy (the workers get a CPU only when one of the two
 * processes leaves its own), every byte arrives, each end comes once.
 */
TEST_F(share, the_receiver_and_the_workers_share_a_copy)
{
	long long offered = share_stat("offered");

	RETURN_IF_SETUP_SKIPPED();
	if (!variant->workers)
		SKIP(return, "the workers variant's");
	helped_pair(_metadata, self, 0);
	helped_pair(_metadata, self, 300);
	/* Two workers for each of the 2 x NMSG copies of MSGLEN. */
	EXPECT_EQ(offered + 2 * 2 * NMSG, share_stat("offered"));
}

/* Workers 0 or threshold 0: nothing is offered; garbage is refused. */
TEST_F(share, no_workers_offers_nothing)
{
	uint8_t *s = big_alloc(2 * MIB), *r = big_alloc(2 * MIB);
	struct iovec siov = { s, 2 * MIB }, riov = { r, 2 * MIB };
	long long offered = share_stat("offered");

	RETURN_IF_SETUP_SKIPPED();
	if (!variant->workers)
		SKIP(return, "the workers variant's");
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, set_param(PARAM_WORKERS, "0"));
	one_message(_metadata, self, &siov, 1, &riov, 1, 3, false);
	one_message(_metadata, self, &siov, 1, &riov, 1, 4, true);
	ASSERT_EQ(0, set_param(PARAM_WORKERS, "2"));
	ASSERT_EQ(0, set_param(PARAM_FANOUT, "0"));
	one_message(_metadata, self, &siov, 1, &riov, 1, 5, false);
	EXPECT_EQ(offered, share_stat("offered"));
	/* Below the threshold by a byte: nothing either. */
	ASSERT_EQ(0, set_param(PARAM_FANOUT, "2097153"));
	one_message(_metadata, self, &siov, 1, &riov, 1, 6, true);
	EXPECT_EQ(offered, share_stat("offered"));
	/* Any negative is "automatic"; words are refused. */
	EXPECT_EQ(0, set_param(PARAM_WORKERS, "-7"));
	one_message(_metadata, self, &siov, 1, &riov, 1, 8, false);
	EXPECT_NE(0, set_param(PARAM_WORKERS, "lots"));
	EXPECT_NE(0, set_param(PARAM_FANOUT, "-1"));
	EXPECT_EQ(-7, read_sysfs_long(PARAM_WORKERS));
	munmap(s, 2 * MIB);
	munmap(r, 2 * MIB);
}

/* ---- large buffers kept pinned between their messages (pincache.c) ---- */

/* Hits of the kept pins of this process's files (debugfs), or -1. */
static long long kept_hits(void)
{
	char line[256];
	long long sum = -1, h;
	bool ours = false;
	int pid;
	FILE *f = fopen(DEBUGFS_CONTEXTS, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "context %*u pid %d", &pid) == 1)
			ours = pid == getpid();
		else if (ours &&
			 sscanf(line, "\tpin_cache entries %*u pages %*u hits %lld",
				&h) == 1)
			sum = (sum < 0 ? 0 : sum) + h;
	}
	fclose(f);
	return sum;
}

/*
 * The cache on, and a 1 MiB buffer to send from and one to receive into,
 * each in a 2 MiB range of its own (kfab_pmd_alloc()'s 4 MiB, at the
 * return: unmap it).
 */
static uint8_t *kept_buffers(struct iovec *siov, struct iovec *riov)
{
	uint8_t *s;

	if (set_param(PARAM_PIN_CACHE, "1"))
		return NULL;
	s = kfab_pmd_alloc(4 * MIB);
	if (!s)
		return NULL;
	*siov = (struct iovec){ s, MIB };
	*riov = (struct iovec){ s + 2 * MIB, MIB };
	return s;
}

/* A test's start: skipped without the cache, else kept_buffers() in @s. */
#define KEPT_BUFFERS(s, siov, riov) do {				\
		RETURN_IF_SETUP_SKIPPED();				\
		if (self->pin_cache <= 0)				\
			SKIP(return, "pin_cache absent or off");	\
		(s) = kept_buffers(siov, riov);				\
		ASSERT_NE(NULL, (s));					\
	} while (0)

/* A fresh anonymous mapping in place of @p's (the same address). */
static int remap(void *p, size_t n)
{
	if (munmap(p, n))
		return -1;
	return mmap(p, n, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p ? 0 : -1;
}

/*
 * Buffers sent from and received into again keep their pins, and every
 * change of their mappings is seen: a pin kept over pages the process no
 * longer has there would carry the old pages' bytes, or land in them.
 */
TEST_F(share, kept_pins_follow_the_mappings)
{
	struct iovec siov, riov;
	long long hits;
	uint8_t *s, *r;
	int status;
	pid_t pid;

	KEPT_BUFFERS(s, &siov, &riov);
	r = riov.iov_base;

	one_message(_metadata, self, &siov, 1, &riov, 1, 1, false);
	hits = kept_hits();
	one_message(_metadata, self, &siov, 1, &riov, 1, 2, false);
	if (hits >= 0)
		EXPECT_LE(hits + 2, kept_hits());	/* both buffers kept */
	EXPECT_LE(2 * MIB / 1024, vm_pin_kb());	/* and charged */

	/* Unmapped and mapped anew at the same address: sender, receiver. */
	ASSERT_EQ(0, remap(s, MIB));
	one_message(_metadata, self, &siov, 1, &riov, 1, 3, false);
	ASSERT_EQ(0, remap(r, MIB));
	one_message(_metadata, self, &siov, 1, &riov, 1, 4, false);
	/* Their pages dropped: fresh ones on the next touch. */
	ASSERT_EQ(0, madvise(r, MIB, MADV_DONTNEED));
	one_message(_metadata, self, &siov, 1, &riov, 1, 5, false);
	ASSERT_EQ(0, madvise(s, MIB, MADV_DONTNEED));
	one_message(_metadata, self, &siov, 1, &riov, 1, 6, false);
	/* A child writes its copies; ours carry our bytes still. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		memset(s, 0x5a, MIB);
		memset(r, 0xa5, MIB);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	one_message(_metadata, self, &siov, 1, &riov, 1, 7, false);
	one_message(_metadata, self, &siov, 1, &riov, 1, 8, true);

	/* Closing the files lets every kept pin go, at once. */
	ep_close(&self->a);
	ep_close(&self->b);
	EXPECT_EQ(0, vm_pin_kb_settled(0));
	munmap(s, 4 * MIB);
}

/*
 * Memory a program unmaps is not held pinned behind its back: its kept
 * pins go soon after, with the files still open and no further call.
 */
TEST_F(share, kept_pins_go_with_their_memory)
{
	struct iovec siov, riov;
	uint8_t *s;

	KEPT_BUFFERS(s, &siov, &riov);
	one_message(_metadata, self, &siov, 1, &riov, 1, 1, false);
	one_message(_metadata, self, &siov, 1, &riov, 1, 2, false);
	EXPECT_LE(2 * MIB / 1024, vm_pin_kb());

	ASSERT_EQ(0, munmap(s, 4 * MIB));
	EXPECT_EQ(0, vm_pin_kb_settled(0));

	/* The files go on, with buffers of their own again. */
	s = kept_buffers(&siov, &riov);
	ASSERT_NE(NULL, s);
	one_message(_metadata, self, &siov, 1, &riov, 1, 3, true);
	one_message(_metadata, self, &siov, 1, &riov, 1, 4, false);
	munmap(s, 4 * MIB);
}

/* A file keeps at most 64 pins: the least recently used go. */
TEST_F(share, kept_pins_are_bounded)
{
	const size_t len = 256 * 1024, n = 80;
	struct iovec siov, riov;
	unsigned int i;
	uint8_t *s, *r;

	RETURN_IF_SETUP_SKIPPED();
	if (self->pin_cache <= 0)
		SKIP(return, "pin_cache absent or off");
	if ((size_t)self->min > len)
		SKIP(return, "share_min_bytes above 256 KiB");
	ASSERT_EQ(0, set_param(PARAM_PIN_CACHE, "1"));
	s = big_alloc(len);
	r = big_alloc(n * len);
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, r);
	siov = (struct iovec){ s, len };
	for (i = 0; i < n; i++) {
		riov = (struct iovec){ r + i * len, len };
		one_message(_metadata, self, &siov, 1, &riov, 1, i, false);
	}
	/* 64 receives' pins and the send buffer's, in whole pages. */
	EXPECT_GE(65 * (len / 1024), vm_pin_kb_settled(65 * (len / 1024)));
	EXPECT_LT(0, vm_pin_kb());
	/* The oldest went; sending into it again pins it anew, correctly. */
	riov = (struct iovec){ r, len };
	one_message(_metadata, self, &siov, 1, &riov, 1, 99, false);
	ep_close(&self->a);
	ep_close(&self->b);
	EXPECT_EQ(0, vm_pin_kb_settled(0));
	munmap(s, len);
	munmap(r, n * len);
}

/*
 * Ranges a kept pin does not hold are never served from it: a receive
 * whose range wraps past the end of the address space, or leaves user
 * space, fails as before (EFAULT; EOVERFLOW for a wrapping range from
 * newer kernels' pinning) with pins kept below it.
 */
TEST_F(share, kept_pins_ignore_wild_ranges)
{
	static const uint64_t wild[] = { ~0ULL - 4095, 1ULL << 63,
					 0x00007ffffffff000ULL };
	struct kfab_cq_readerr err;
	struct iovec siov, riov;
	struct kfab_sqe q;
	unsigned int i;
	uint8_t *s;

	KEPT_BUFFERS(s, &siov, &riov);
	one_message(_metadata, self, &siov, 1, &riov, 1, 1, false);
	for (i = 0; i < sizeof(wild) / sizeof(wild[0]); i++) {
		q = sqe_buf(KFAB_OP_RECV, 10 + i, ANY,
			    (void *)(uintptr_t)wild[i], MIB);
		ASSERT_EQ(0, submit(&self->b, &q));
		ASSERT_EQ(0, cq_err(&self->b, &err));
		EXPECT_EQ(10 + i, err.out_entry.op_context);
		/* The kernel's pinning: 6.12 calls a wrapping range so. */
		EXPECT_TRUE(err.out_err == EFAULT ||
			    err.out_err == EOVERFLOW);
	}
	/* The kept pins serve their own ranges as before. */
	one_message(_metadata, self, &siov, 1, &riov, 1, 2, false);
	ep_close(&self->a);
	ep_close(&self->b);
	EXPECT_EQ(0, vm_pin_kb());
	munmap(s, 4 * MIB);
}

TEST_HARNESS_MAIN
