// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ring poller through the raw ABI: KFAB_IOC_SQ_WATCH, KFAB_IOC_SQ_POLL
 * and the ring's flags word.  A thread of the test lends itself as the
 * poller of the sender's file; the sender then only publishes its tail.
 * The cases: requests carried out with no doorbell, a poller that parks
 * and a doorbell that wakes it, a poller whose CPU is taken, one poller
 * per file, a signal and a
 * SIGKILL that end the poll, objects that go while watched, and a ring
 * user space scribbles over under the poller.
 *
 * Needs /dev/kfab (the VM); on the host every test SKIPs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kfab_test.h"
#include "kfab_raw_ep.h"

/* Long enough on an emulated guest, short enough for a failing test. */
#define WAIT_MS		10000

static int sq_watch(int fd, uint32_t id, uint32_t flags)
{
	struct kfab_sq_watch cmd = {
		.size = sizeof(cmd), .flags = flags, .obj_id = id,
	};

	return kfab_ioctl(fd, KFAB_IOC_SQ_WATCH, &cmd);
}

/* KFAB_IOC_SQ_WATCH from a struct in read-only memory. */
static int sq_watch_ro(int fd, uint32_t id)
{
	long page = sysconf(_SC_PAGESIZE);
	struct kfab_sq_watch *ro;
	int rc;

	ro = mmap(NULL, page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED)
		return -errno;
	*ro = (struct kfab_sq_watch){ .size = sizeof(*ro), .obj_id = id };
	rc = mprotect(ro, page, PROT_READ) ? -errno :
	     kfab_ioctl(fd, KFAB_IOC_SQ_WATCH, ro);
	munmap(ro, page);
	return rc;
}

static int sq_poll(int fd, uint32_t idle_us, uint32_t flags,
		   struct kfab_sq_poll *out)
{
	struct kfab_sq_poll cmd = {
		.size = sizeof(cmd), .flags = flags, .idle_us = idle_us,
	};
	int rc = kfab_ioctl(fd, KFAB_IOC_SQ_POLL, &cmd);

	if (out)
		*out = cmd;
	return rc;
}

static uint32_t sq_flags(struct raw_ep *r)
{
	return __atomic_load_n(SQ_U32(r, r->epo.out_sq.off_flags),
			       __ATOMIC_ACQUIRE);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* Until @r's flags say @want (under @mask), at most WAIT_MS: 0 or -1. */
static int wait_flags(struct raw_ep *r, uint32_t mask, uint32_t want)
{
	uint64_t end = now_ms() + WAIT_MS;

	while ((sq_flags(r) & mask) != want) {
		if (now_ms() > end)
			return -1;
		usleep(1000);
	}
	return 0;
}

/* The next completion of @r, waiting at most @ms: 0 or -EAGAIN. */
static int cq_wait(struct raw_ep *r, struct kfab_cq_entry *e, int ms)
{
	uint64_t end = now_ms() + ms;

	for (;;) {
		if (!cq_next(r, e))
			return 0;
		if (now_ms() > end)
			return -EAGAIN;
		usleep(200);
	}
}

/* An inline send of @len bytes (zero) to @to, its completion asked or not. */
static struct kfab_sqe inline_send(uint64_t to, uint64_t ctx, uint32_t len,
				   bool completion)
{
	return (struct kfab_sqe){ .opcode = KFAB_OP_SEND, .context = ctx,
				  .addr = to, .len = len,
				  .flags = KFAB_SQE_INLINE |
					   (completion ? KFAB_SQE_COMPLETION : 0) };
}

/* A thread that is the poller of one file until stopped. */
struct poller {
	pthread_t thread;
	int fd;
	uint32_t idle_us;
	int rc;
	struct kfab_sq_poll out;
};

static void *poller_run(void *arg)
{
	struct poller *p = arg;

	p->rc = sq_poll(p->fd, p->idle_us, 0, &p->out);
	return NULL;
}

static int poller_start(struct poller *p, int fd, uint32_t idle_us)
{
	memset(p, 0, sizeof(*p));
	p->fd = fd;
	p->idle_us = idle_us;
	return pthread_create(&p->thread, NULL, poller_run, p);
}

/* Start a poller of @r's file; 0 once it has polled and then parked. */
static int poller_until_parked(struct poller *p, struct raw_ep *r,
			       uint32_t idle_us)
{
	if (poller_start(p, r->fd, idle_us))
		return -1;
	if (wait_flags(r, KFAB_SQ_RING_NEED_WAKEUP, 0))
		return -1;
	return wait_flags(r, KFAB_SQ_RING_NEED_WAKEUP,
			  KFAB_SQ_RING_NEED_WAKEUP);
}

/* Stop the file's poller and wait for its thread: its status. */
static int poller_stop(struct poller *p)
{
	int rc = sq_poll(p->fd, 0, KFAB_SQ_POLL_STOP, NULL);

	pthread_join(p->thread, NULL);
	return rc ? rc : p->rc;
}

/*
 * Destroy an endpoint opened with ep_open_ring() in another's file.  A
 * pass of the poller holds it for a moment (-EBUSY, as documented).
 */
static int ep_drop(struct raw_ep *c)
{
	int i, rc = -EBUSY;

	_test_munmap(c->sq, &c->epo.out_sq.region);
	c->sq = NULL;
	for (i = 0; i < 1000 && rc == -EBUSY; i++) {
		rc = _test_cmd_destroy(c->fd, c->ep);
		if (rc == -EBUSY)
			usleep(1000);
	}
	return rc;
}

FIXTURE(sqpoll) {
	struct raw_ep a, b;
	uint64_t b_to_a;
};

FIXTURE_SETUP(sqpoll)
{
	self->a.fd = self->b.fd = -1;
	if (!kfab_have_device())
		SKIP(return, "%s absent: needs kfab.ko (VM)", KFAB_DEV);
	ASSERT_EQ(0, ep_setup(&self->a, true));
	ASSERT_EQ(0, ep_setup(&self->b, true));
	self->b_to_a = peer(&self->b, &self->a);
	ASSERT_NE(ANY, self->b_to_a);
}

FIXTURE_TEARDOWN(sqpoll)
{
	ep_close(&self->a);
	ep_close(&self->b);
}

TEST_F(sqpoll, control_path_errors)
{
	struct kfab_sq_poll out;
	struct kfab_sq_watch w = { .size = sizeof(w), .obj_id = self->b.ep,
				   .__reserved = 1 };

	RETURN_IF_SETUP_SKIPPED();
	/* The word is there, apart from tail and head, and starts clear. */
	ASSERT_NE(0, self->b.epo.out_sq.off_flags);
	EXPECT_NE(self->b.epo.out_sq.off_tail, self->b.epo.out_sq.off_flags);
	EXPECT_NE(self->b.epo.out_sq.off_head, self->b.epo.out_sq.off_flags);
	EXPECT_EQ(0, sq_flags(&self->b));

	EXPECT_EQ(-EOPNOTSUPP, sq_watch(self->b.fd, self->b.ep, 1u << 5));
	EXPECT_EQ(-EINVAL, kfab_ioctl(self->b.fd, KFAB_IOC_SQ_WATCH, &w));
	/* Objects without a ring, ids of nothing, another file's ring. */
	EXPECT_EQ(-ENOENT, sq_watch(self->b.fd, self->b.cq.id, 0));
	EXPECT_EQ(-ENOENT, sq_watch(self->b.fd, self->b.dom, 0));
	EXPECT_EQ(-ENOENT, sq_watch(self->b.fd, 0, 0));
	EXPECT_EQ(-ENOENT, sq_watch(self->b.fd, 0xffffffffu, 0));
	EXPECT_EQ(-ENOENT, sq_watch(self->b.fd, self->b.ep + 100, 0));
	EXPECT_EQ(-ENOENT, sq_watch(self->b.fd, self->b.ep,
				    KFAB_SQ_WATCH_REMOVE));

	/* Watched with no poller running: posters ring for themselves. */
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, 0));
	EXPECT_EQ(KFAB_SQ_RING_WATCHED | KFAB_SQ_RING_NEED_WAKEUP,
		  sq_flags(&self->b));
	EXPECT_EQ(-EEXIST, sq_watch(self->b.fd, self->b.ep, 0));
	/* Nothing is written back: a read-only struct takes effect too. */
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, KFAB_SQ_WATCH_REMOVE));
	EXPECT_EQ(0, sq_watch_ro(self->b.fd, self->b.ep));
	EXPECT_EQ(-EEXIST, sq_watch_ro(self->b.fd, self->b.ep));
	EXPECT_EQ(KFAB_SQ_RING_WATCHED | KFAB_SQ_RING_NEED_WAKEUP,
		  sq_flags(&self->b));
	/* What user space writes in the word changes nothing. */
	*SQ_U32(&self->b, self->b.epo.out_sq.off_flags) = 0xdeadbeef;
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, KFAB_SQ_WATCH_REMOVE));
	EXPECT_EQ(0, sq_flags(&self->b));
	EXPECT_EQ(-ENOENT, sq_watch(self->b.fd, self->b.ep,
				    KFAB_SQ_WATCH_REMOVE));

	EXPECT_EQ(-EOPNOTSUPP, sq_poll(self->b.fd, 1000, 1u << 7, NULL));
	EXPECT_EQ(-EINVAL, sq_poll(self->b.fd, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, sq_poll(self->b.fd, KFAB_SQ_POLL_MAX_IDLE_US + 1,
				   0, NULL));
	/* A stop with no poller: every later poll returns at once. */
	ASSERT_EQ(0, sq_poll(self->b.fd, 0, KFAB_SQ_POLL_STOP, &out));
	EXPECT_EQ(0, out.out_done);
	ASSERT_EQ(0, sq_poll(self->b.fd, 1000, 0, &out));
	EXPECT_EQ(0, out.out_done);
	EXPECT_EQ(0, out.out_parks);
}

TEST_F(sqpoll, requests_go_without_a_doorbell)
{
	static char tx[1 << 20], rx[1 << 20];
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	struct poller p;
	char small[64];
	int i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, 0));
	/* Idle a whole second: it never parks during the test. */
	ASSERT_EQ(0, poller_start(&p, self->b.fd, KFAB_SQ_POLL_MAX_IDLE_US));
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP, 0));
	/*
	 * It polls; NEED_WAKEUP may come back at any moment, as it parks
	 * whenever another task shares its CPU (a kworker on the debug
	 * kernel): then it looks again after a tick, so nothing below waits
	 * on it for long.
	 */
	EXPECT_TRUE(sq_flags(&self->b) & KFAB_SQ_RING_WATCHED);

	/* Inline sends, unexpected at a: only the tail is published. */
	for (i = 0; i < 8; i++) {
		s = inline_send(self->b_to_a, i, 64, true);
		memset(s.inline_data, i, 64);
		queue(&self->b, &s);
	}
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, cq_wait(&self->b, &e, WAIT_MS));
		EXPECT_EQ(i, e.op_context);
	}
	for (i = 0; i < 8; i++) {
		s = sqe_buf(KFAB_OP_RECV, 100 + i, ANY, small, sizeof(small));
		ASSERT_EQ(0, submit(&self->a, &s));
		ASSERT_EQ(0, cq_next(&self->a, &e));
		EXPECT_EQ(100 + i, e.op_context);
		EXPECT_EQ(64, e.len);
		EXPECT_EQ(i, small[63]);
	}

	/* A large send: the poller is the sender's kernel side. */
	for (i = 0; i < (int)sizeof(tx); i++)
		tx[i] = i * 7;
	s = sqe_buf(KFAB_OP_RECV, 200, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	s = sqe_buf(KFAB_OP_SEND, 201, self->b_to_a, tx, sizeof(tx));
	queue(&self->b, &s);
	ASSERT_EQ(0, cq_wait(&self->a, &e, WAIT_MS));
	EXPECT_EQ(200, e.op_context);
	EXPECT_EQ(sizeof(tx), e.len);
	ASSERT_EQ(0, cq_wait(&self->b, &e, WAIT_MS));
	EXPECT_EQ(201, e.op_context);
	EXPECT_EQ(0, memcmp(tx, rx, sizeof(tx)));

	ASSERT_EQ(0, poller_stop(&p));
	EXPECT_EQ(9, p.out.out_done);
	/* Nobody polls now: the word says so. */
	EXPECT_EQ(KFAB_SQ_RING_WATCHED | KFAB_SQ_RING_NEED_WAKEUP,
		  sq_flags(&self->b));
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, KFAB_SQ_WATCH_REMOVE));
}

TEST_F(sqpoll, a_parked_poller_is_woken_by_a_doorbell)
{
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	struct poller p;
	char rx[64];
	int i;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < 3; i++) {
		s = sqe_buf(KFAB_OP_RECV, 10 + i, ANY, rx, sizeof(rx));
		ASSERT_EQ(0, submit(&self->a, &s));
	}
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, 0));
	/* 200 ms idle: it parks soon, and stays awake long after a wake. */
	ASSERT_EQ(0, poller_until_parked(&p, &self->b, 200000));

	/*
	 * Parked: a producer rings, as the flag says; the doorbell carries
	 * the request out and wakes the poller.  (Whether this park was for
	 * idleness or for want of a CPU, a tick later it looks again too.)
	 */
	s = inline_send(self->b_to_a, 1, 8, true);
	queue(&self->b, &s);
	ASSERT_LE(0, _test_cmd_doorbell(self->b.fd, self->b.ep, NULL));
	ASSERT_EQ(0, cq_wait(&self->a, &e, WAIT_MS));
	EXPECT_EQ(10, e.op_context);
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP, 0));
	/* Awake: what is published goes with no doorbell. */
	s.context = 2;
	queue(&self->b, &s);
	ASSERT_EQ(0, cq_wait(&self->a, &e, WAIT_MS));
	EXPECT_EQ(11, e.op_context);

	/* Idle again: it parks again, and the KFAB_IOC_RING form wakes it. */
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP,
				KFAB_SQ_RING_NEED_WAKEUP));
	s.context = 3;
	queue(&self->b, &s);
	EXPECT_LE(0, _test_cmd_ring(self->b.fd, self->b.ep));
	ASSERT_EQ(0, cq_wait(&self->a, &e, WAIT_MS));
	EXPECT_EQ(12, e.op_context);
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP, 0));

	ASSERT_EQ(0, poller_stop(&p));
	EXPECT_LE(1, p.out.out_done);
	EXPECT_LE(2, p.out.out_parks);
	for (i = 1; i <= 3; i++) {
		ASSERT_EQ(0, cq_next(&self->b, &e));
		EXPECT_EQ(i, e.op_context);
	}
}

/*
 * A doorbell rung the moment NEED_WAKEUP shows, while the poller is still
 * parking (slow_park holds it 100 ms between raising the flag and its
 * last look), wakes it.  The kick was once lost there: the poller slept
 * on until some later doorbell, NEED_WAKEUP up all the while.
 */
TEST_F(sqpoll, a_doorbell_while_it_parks_wakes_it)
{
	struct kfab_test_fault f = { .size = sizeof(f),
				     .point = KFAB_FAULT_SLOW_PARK, .nth = 1 };
	struct kfab_cq_entry e;
	struct kfab_query q;
	struct kfab_sqe s;
	struct poller p;
	char rx[8];

	RETURN_IF_SETUP_SKIPPED();
	test_cmd_query(self->a.fd, &q);
	if (!(q.features & KFAB_FEATURE_TEST))
		SKIP(return, "needs a CONFIG_KFAB_TEST module");
	s = sqe_buf(KFAB_OP_RECV, 10, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, 0));
	ASSERT_EQ(0, kfab_ioctl(self->b.fd, KFAB_IOC_TEST_FAULT, &f));
	ASSERT_EQ(0, poller_until_parked(&p, &self->b, 200000));

	s = inline_send(self->b_to_a, 1, 8, true);
	queue(&self->b, &s);
	ASSERT_LE(0, _test_cmd_doorbell(self->b.fd, self->b.ep, NULL));
	ASSERT_EQ(0, cq_wait(&self->a, &e, WAIT_MS));
	EXPECT_EQ(10, e.op_context);
	/* Awake again, for its idle time (200 ms). */
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP, 0));
	f.flags = KFAB_TEST_FAULT_PEEK;
	ASSERT_EQ(0, kfab_ioctl(self->b.fd, KFAB_IOC_TEST_FAULT, &f));
	EXPECT_EQ(1, f.out_fired);
	ASSERT_EQ(0, poller_stop(&p));
	ASSERT_EQ(0, cq_next(&self->b, &e));
	EXPECT_EQ(1, e.op_context);
}

/*
 * A poller that shares its CPU with a busy task parks at once, deaf to
 * kicks (it would take the CPU from whoever rang), yet looks again every
 * tick: a request published without a doorbell still goes.  Once the CPU
 * is its own again it stays awake for its idle time.
 */
TEST_F(sqpoll, a_poller_without_a_cpu_parks_and_comes_back)
{
	struct kfab_cq_entry e;
	pthread_attr_t attr;
	struct kfab_sqe s;
	struct poller p;
	cpu_set_t one;
	char rx[8];
	pid_t hog;
	int status;

	RETURN_IF_SETUP_SKIPPED();
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	hog = fork();
	ASSERT_LE(0, hog);
	if (!hog) {
		if (sched_setaffinity(0, sizeof(one), &one))
			_exit(1);
		for (;;)
			;
	}
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, 0));
	memset(&p, 0, sizeof(p));
	p.fd = self->b.fd;
	p.idle_us = KFAB_SQ_POLL_MAX_IDLE_US;
	ASSERT_EQ(0, pthread_attr_init(&attr));
	ASSERT_EQ(0, pthread_attr_setaffinity_np(&attr, sizeof(one), &one));
	ASSERT_EQ(0, pthread_create(&p.thread, &attr, poller_run, &p));
	pthread_attr_destroy(&attr);

	s = sqe_buf(KFAB_OP_RECV, 1, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	/*
	 * Half a second beside the hog: some 125 ticks.  A slow emulated
	 * guest runs the poller at every third or fourth (6 parks in 100 ms
	 * seen), still far from the one park of a poller that would not look
	 * again.
	 */
	usleep(500000);
	s = inline_send(self->b_to_a, 2, 8, false);
	queue(&self->b, &s);
	ASSERT_EQ(0, cq_wait(&self->a, &e, WAIT_MS));
	EXPECT_EQ(1, e.op_context);

	ASSERT_EQ(0, kill(hog, SIGKILL));
	ASSERT_EQ(hog, waitpid(hog, &status, 0));
	/* Alone now: awake, NEED_WAKEUP clear, for a whole second. */
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP, 0));
	ASSERT_EQ(0, poller_stop(&p));
	EXPECT_EQ(1, p.out.out_done);
	/* A park per tick or so, not one. */
	EXPECT_LE(10, p.out.out_parks);
}

TEST_F(sqpoll, one_poller_per_file_and_stop_is_final)
{
	struct poller p;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, poller_start(&p, self->b.fd, 200000));
	/* Until it runs: watching a ring clears NEED_WAKEUP at once then. */
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, 0));
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP, 0));
	EXPECT_EQ(-EBUSY, sq_poll(self->b.fd, 1000, 0, NULL));
	/* Another file has a poller of its own. */
	EXPECT_EQ(0, sq_poll(self->a.fd, 0, KFAB_SQ_POLL_STOP, NULL));
	ASSERT_EQ(0, poller_stop(&p));
	EXPECT_EQ(0, sq_poll(self->b.fd, 1000, 0, NULL));
	EXPECT_EQ(KFAB_SQ_RING_WATCHED | KFAB_SQ_RING_NEED_WAKEUP,
		  sq_flags(&self->b));
}

static void on_usr1(int sig)
{
	(void)sig;
}

TEST_F(sqpoll, a_signal_ends_the_poll_and_it_can_go_on)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	struct poller p;
	char rx[8];

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, 0));
	/* Once while it spins, once while it is parked. */
	ASSERT_EQ(0, poller_start(&p, self->b.fd, KFAB_SQ_POLL_MAX_IDLE_US));
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP, 0));
	ASSERT_EQ(0, pthread_kill(p.thread, SIGUSR1));
	pthread_join(p.thread, NULL);
	EXPECT_EQ(-EINTR, p.rc);
	EXPECT_EQ(KFAB_SQ_RING_WATCHED | KFAB_SQ_RING_NEED_WAKEUP,
		  sq_flags(&self->b));

	ASSERT_EQ(0, poller_until_parked(&p, &self->b, 200000));
	ASSERT_EQ(0, pthread_kill(p.thread, SIGUSR1));
	pthread_join(p.thread, NULL);
	EXPECT_EQ(-EINTR, p.rc);

	/* The file is not left with a poller it thinks runs. */
	ASSERT_EQ(0, poller_start(&p, self->b.fd, KFAB_SQ_POLL_MAX_IDLE_US));
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP, 0));
	s = sqe_buf(KFAB_OP_RECV, 1, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	s = inline_send(self->b_to_a, 2, 8, false);
	queue(&self->b, &s);
	ASSERT_EQ(0, cq_wait(&self->a, &e, WAIT_MS));
	ASSERT_EQ(0, poller_stop(&p));
	signal(SIGUSR1, SIG_DFL);
}

/*
 * A process killed while its thread polls, with a send in its ring and
 * one the poller is copying: the kernel lets go of everything, and the
 * receiver sees only whole messages.
 */
TEST_F(sqpoll, a_killed_poller_leaves_nothing_behind)
{
	static char rx[4 << 20];
	struct kfab_cq_readerr err;
	struct kfab_cq_entry e;
	int status, pipefd[2];
	struct kfab_sqe s;
	pid_t pid;

	RETURN_IF_SETUP_SKIPPED();
	s = sqe_buf(KFAB_OP_RECV, 1, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		static char tx[4 << 20];
		struct poller p;
		char c = 1;

		memset(tx, 0x77, sizeof(tx));
		if (sq_watch(self->b.fd, self->b.ep, 0) ||
		    poller_start(&p, self->b.fd, KFAB_SQ_POLL_MAX_IDLE_US) ||
		    wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP, 0))
			_exit(1);
		s = sqe_buf(KFAB_OP_SEND, 2, self->b_to_a, tx, sizeof(tx));
		queue(&self->b, &s);
		if (write(pipefd[1], &c, 1) != 1)
			_exit(2);
		pause();
		_exit(3);
	}
	close(pipefd[1]);
	{
		char c;

		ASSERT_EQ(1, read(pipefd[0], &c, 1));
	}
	close(pipefd[0]);
	/* The send is published: kill it at whatever point it got to. */
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	/* Our copy of b's file goes too: the sender is gone for good. */
	ep_close(&self->b);

	/* Whole, or not at all: never a completion for part of it. */
	if (!cq_wait(&self->a, &e, 2000)) {
		EXPECT_EQ(1, e.op_context);
		EXPECT_EQ(sizeof(rx), e.len);
		EXPECT_EQ(0x77, rx[sizeof(rx) - 1]);
	} else if (!cq_err(&self->a, &err)) {
		EXPECT_EQ(1, err.out_entry.op_context);
	} else {
		/* Not started: the receive is still posted, and cancels. */
		EXPECT_EQ(0, _test_cmd_cancel(self->a.fd, self->a.ep, 1));
	}
}

TEST_F(sqpoll, watched_objects_that_go)
{
	struct raw_ep c;
	struct kfab_cq_entry e;
	struct kfab_sqe s;
	struct poller p;
	uint32_t old;
	char rx[8];

	RETURN_IF_SETUP_SKIPPED();
	/* A second endpoint of b's file, watched, then destroyed. */
	c = self->b;
	ASSERT_EQ(0, ep_open_ring(&c));
	ASSERT_EQ(0, ep_enable(&c));
	ASSERT_EQ(0, sq_watch(c.fd, c.ep, 0));
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, 0));
	ASSERT_EQ(0, poller_until_parked(&p, &c, 200000));
	/* Parked, the poller holds no reference: the destroy goes. */
	old = c.ep;
	ASSERT_EQ(0, ep_drop(&c));

	/* A new endpoint may get the old id: it is not watched for that. */
	ASSERT_EQ(0, ep_open_ring(&c));
	ASSERT_EQ(0, ep_enable(&c));
	if (c.ep == old)
		EXPECT_EQ(0, sq_flags(&c));
	EXPECT_EQ(-ENOENT, sq_watch(c.fd, c.ep, KFAB_SQ_WATCH_REMOVE));

	/* The poller goes on with the ring it still watches. */
	s = sqe_buf(KFAB_OP_RECV, 1, ANY, rx, sizeof(rx));
	ASSERT_EQ(0, submit(&self->a, &s));
	s = inline_send(self->b_to_a, 2, 8, false);
	queue(&self->b, &s);
	if (sq_flags(&self->b) & KFAB_SQ_RING_NEED_WAKEUP)
		ASSERT_EQ(0, _test_cmd_doorbell(self->b.fd, self->b.ep, NULL));
	ASSERT_EQ(0, cq_wait(&self->a, &e, WAIT_MS));
	EXPECT_EQ(1, e.op_context);
	ASSERT_EQ(0, poller_stop(&p));
	ASSERT_EQ(0, ep_drop(&c));
}

/*
 * What user space may do to a watched ring under a running poller: a
 * tail far ahead, garbage entries, an endpoint that cannot send yet, a
 * receiver whose budget is full.  The poller must neither crash nor spin
 * on it for ever: it parks, and stops when asked.
 */
TEST_F(sqpoll, hostile_rings_under_the_poller)
{
	struct raw_ep c;
	struct kfab_sqe s;
	struct poller p;
	uint32_t head;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	/* An endpoint not enabled: its ring is stuck, not a busy loop. */
	c = self->b;
	ASSERT_EQ(0, ep_open_ring(&c));
	s = inline_send(self->b_to_a, 0, 8, false);
	queue(&c, &s);
	ASSERT_EQ(0, sq_watch(c.fd, c.ep, 0));
	ASSERT_EQ(0, sq_watch(self->b.fd, self->b.ep, 0));
	ASSERT_EQ(0, poller_start(&p, self->b.fd, 200000));
	/* It parks (with a timeout, to try again) although c has work. */
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP, 0));
	ASSERT_EQ(0, wait_flags(&self->b, KFAB_SQ_RING_NEED_WAKEUP,
				KFAB_SQ_RING_NEED_WAKEUP));

	/* Garbage entries, then a tail a ring and more ahead. */
	for (i = 0; i < 16; i++) {
		memset(&s, 0xa5 + i, sizeof(s));
		queue(&self->b, &s);
	}
	ASSERT_EQ(0, _test_cmd_doorbell(self->b.fd, self->b.ep, NULL));
	head = __atomic_load_n(SQ_U32(&self->b, self->b.epo.out_sq.off_head),
			       __ATOMIC_ACQUIRE);
	EXPECT_EQ(self->b.tail, head);
	__atomic_store_n(SQ_U32(&self->b, self->b.epo.out_sq.off_tail),
			 head + 3 * self->b.epo.out_sq.entries,
			 __ATOMIC_RELEASE);
	memset(self->b.sq + self->b.epo.out_sq.off_entries, 0xff,
	       (size_t)self->b.epo.out_sq.entries *
	       self->b.epo.out_sq.entry_size);
	ASSERT_EQ(0, _test_cmd_doorbell(self->b.fd, self->b.ep, NULL));
	/* And scribbles over the flags word while it runs. */
	for (i = 0; i < 100; i++) {
		*SQ_U32(&self->b, self->b.epo.out_sq.off_flags) = ~0u;
		*SQ_U32(&c, c.epo.out_sq.off_flags) = 0;
		usleep(1000);
	}
	ASSERT_EQ(0, poller_stop(&p));
	EXPECT_LE(1, p.out.out_parks);
	/* Every entry was taken (an error completion each), by somebody. */
	head = __atomic_load_n(SQ_U32(&self->b, self->b.epo.out_sq.off_head),
			       __ATOMIC_ACQUIRE);
	EXPECT_EQ(self->b.tail + 3 * self->b.epo.out_sq.entries, head);
	/* The stuck one is still there, and goes once c can send. */
	EXPECT_EQ(0, *SQ_U32(&c, c.epo.out_sq.off_head));
	ASSERT_EQ(0, ep_enable(&c));
	EXPECT_EQ(0, _test_cmd_doorbell(c.fd, c.ep, NULL));
	EXPECT_EQ(1, *SQ_U32(&c, c.epo.out_sq.off_head));
	ASSERT_EQ(0, ep_drop(&c));
}

TEST_HARNESS_MAIN
