// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-bench-floor: what a small message cannot cost less than, measured
 * where the providers run (tools/kfab-bench runs it in the bench guest):
 * the system calls under kfab's one-way latency, and a ping-pong over the
 * raw ABI with no libfabric and no libshim.
 *
 *   kfab-bench-floor [-n CALLS] [-i ROUND_TRIPS] [-S SIZE]
 *
 *   syscall   getppid(): a system call that does nothing
 *   ioctl     an ioctl kfab does not know (-ENOTTY): the VFS, the LSM
 *             hook and kfab's dispatch
 *   doorbell  KFAB_IOC_DOORBELL on an endpoint whose ring is empty: the
 *             command's framing, the object lookup, the ring's lock
 *   ring      KFAB_IOC_RING on the same endpoint: the same without a
 *             struct to copy in and out
 *   rung      a request's round trip through the doorbell: a probe (a
 *             send that delivers nothing) queued, KFAB_IOC_RING, its
 *             completion read off the CQ ring
 *   polled    the same request carried out by the ring poller, a thread
 *             of this process in KFAB_IOC_SQ_POLL: queued, no system
 *             call (unless the poller parked), the completion read; what
 *             a post costs where a CPU is spare for the poller
 *   raw       one-way latency of a SIZE-byte (default 8, at most 64)
 *             ping-pong between two processes, each side's doorbell
 *             carrying its next receive and its reply (an inject, as
 *             fi_pingpong's through lazy doorbells), receives completing
 *             with the payload in the CQ slot, read straight off the ring
 *
 * Each of the first six is the mean of -n calls (default 50000); the
 * ping-pong runs -i round trips (default 5000) after 100 untimed ones.
 * Output, microseconds:
 *
 *   floor: syscall 0.50
 *   floor: raw 8 5.61
 *
 * Exit status 0, or 1 with the reason on stderr.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "../selftests/kfab_raw_ep.h"
#include "kfab_bench_time.h"

static long calls = 50000, trips = 5000;
static size_t size = 8;

static void die(const char *what, int err)
{
	fprintf(stderr, "kfab-bench-floor: %s: %s\n", what, strerror(err));
	exit(1);
}

/* @r as ep_setup() makes it, with a CQ whose slots carry small payloads. */
static void endpoint(struct raw_ep *r)
{
	struct kfab_av_open avo = { .size = sizeof(avo) };
	int rc;

	memset(r, 0, sizeof(*r));
	rc = _test_open_domain(&r->fd, &r->dom);
	if (rc)
		die("a domain of " KFAB_DEV, -rc);
	avo.domain_id = r->dom;
	rc = _test_cmd_av_open(r->fd, &avo, &r->av);
	if (!rc)
		rc = _test_cq_open_mapped(r->fd, r->dom, 64,
					  KFAB_CQ_OPEN_PAYLOAD, &r->cq);
	if (rc)
		die("an AV and a CQ", -rc);
	if (ep_open_ring(r))
		die("an endpoint and its ring", errno);
	if (ep_enable(r))
		die("enabling the endpoint", errno);
}

static void post_recv(struct raw_ep *r, void *buf)
{
	struct kfab_sqe s = sqe_buf(KFAB_OP_RECV, 1, ANY, buf, size);

	queue(r, &s);
}

/* A receive posted and an inject to @to queued, both carried out now. */
static void reply(struct raw_ep *r, uint64_t to, void *buf)
{
	struct kfab_sqe s = { .opcode = KFAB_OP_SEND, .context = 2,
			      .addr = to, .flags = KFAB_SQE_INLINE,
			      .len = size };

	post_recv(r, buf);
	memset(s.inline_data, 0x5a, size);
	queue(r, &s);
	if (_test_cmd_ring(r->fd, r->ep) < 0)
		die("KFAB_IOC_RING", errno);
}

/* Spin until a receive completes; its payload goes to @buf. */
static void wait_recv(struct raw_ep *r, void *buf)
{
	uint32_t *headp = (uint32_t *)(r->cq.cons + r->cq.layout.off_head);
	const uint32_t *tailp = (const uint32_t *)(r->cq.ring +
						   r->cq.layout.off_tail);
	const struct kfab_cq_entry *e;
	uint32_t head = *headp;

	for (;;) {
		if (__atomic_load_n(tailp, __ATOMIC_ACQUIRE) == head)
			continue;
		e = (const struct kfab_cq_entry *)kfab_test_cq_slot(&r->cq,
								    head);
		if (e->flags & KFAB_COMP_PAYLOAD)
			memcpy(buf, e + 1, e->len);
		__atomic_store_n(headp, ++head, __ATOMIC_RELEASE);
		if (e->flags & KFAB_COMP_RECV)
			return;
	}
}

/* Spin until the next completion of @r, of any kind. */
static void wait_any(struct raw_ep *r)
{
	struct kfab_cq_entry e;

	while (cq_next(r, &e))
		;
}

/* A probe of @to with its completion: the cheapest whole request. */
static struct kfab_sqe probe(uint64_t to)
{
	return (struct kfab_sqe){ .opcode = KFAB_OP_SEND, .addr = to,
				  .flags = KFAB_SQE_PROBE |
					   KFAB_SQE_COMPLETION };
}

/* Mean usec of @calls probes of @to, each rung and waited for. */
static double rung(struct raw_ep *r, uint64_t to)
{
	struct kfab_sqe s = probe(to);
	double t0 = now();
	long i;

	for (i = 0; i < calls; i++) {
		queue(r, &s);
		if (_test_cmd_ring(r->fd, r->ep) < 0)
			die("KFAB_IOC_RING", errno);
		wait_any(r);
	}
	return (now() - t0) / calls * 1e6;
}

static void *poller(void *arg)
{
	struct kfab_sq_poll cmd = { .size = sizeof(cmd), .idle_us = 1000 };
	struct raw_ep *r = arg;

	kfab_ioctl(r->fd, KFAB_IOC_SQ_POLL, &cmd);
	return NULL;
}

/*
 * The same through the ring poller: -1 when the module has none.  The
 * poster rings only when the flags word says the poller is parked, as
 * libshim does; *@rang tells how often that was.
 */
static double polled(struct raw_ep *r, uint64_t to, long *rang)
{
	struct kfab_sq_watch w = { .size = sizeof(w), .obj_id = r->ep };
	struct kfab_sq_poll stop = { .size = sizeof(stop),
				     .flags = KFAB_SQ_POLL_STOP };
	const uint32_t *flags;
	struct kfab_sqe s = probe(to);
	pthread_t thread;
	double t0;
	long i;

	if (!r->epo.out_sq.off_flags || kfab_ioctl(r->fd, KFAB_IOC_SQ_WATCH, &w))
		return -1;
	flags = (const uint32_t *)(r->sq + r->epo.out_sq.off_flags);
	if (pthread_create(&thread, NULL, poller, r))
		die("a poller thread", EAGAIN);
	/*
	 * Until it runs: the flag clears.  It parks again after idle_us
	 * with nothing to do, and a look that missed that window (this
	 * thread descheduled for a millisecond) would wait for ever: every
	 * so often the doorbell kicks a parked poller awake.
	 */
	for (i = 1; __atomic_load_n(flags, __ATOMIC_ACQUIRE) &
		    KFAB_SQ_RING_NEED_WAKEUP; i++)
		if (!(i % 100000) && _test_cmd_ring(r->fd, r->ep) < 0)
			die("KFAB_IOC_RING", errno);
	*rang = 0;
	t0 = now();
	for (i = 0; i < calls; i++) {
		queue(r, &s);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(flags, __ATOMIC_RELAXED) &
		    KFAB_SQ_RING_NEED_WAKEUP) {
			(*rang)++;
			if (_test_cmd_ring(r->fd, r->ep) < 0)
				die("KFAB_IOC_RING", errno);
		}
		wait_any(r);
	}
	t0 = (now() - t0) / calls * 1e6;
	kfab_ioctl(r->fd, KFAB_IOC_SQ_POLL, &stop);
	pthread_join(thread, NULL);
	w.flags = KFAB_SQ_WATCH_REMOVE;
	kfab_ioctl(r->fd, KFAB_IOC_SQ_WATCH, &w);
	return t0;
}

/* One-way usec of @trips round trips between @a (here) and @b (a child). */
static double pingpong(struct raw_ep *a, struct raw_ep *b, uint64_t to_b,
		       uint64_t to_a)
{
	static uint8_t abuf[KFAB_INLINE_MAX], bbuf[KFAB_INLINE_MAX];
	long i, warm = 100;
	int status;
	double t0 = 0;
	pid_t pid;

	post_recv(a, abuf);
	post_recv(b, bbuf);
	_test_cmd_doorbell(b->fd, b->ep, NULL);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (!pid) {
		for (i = 0; i < warm + trips; i++) {
			wait_recv(b, bbuf);
			reply(b, to_a, bbuf);
		}
		_exit(0);
	}
	for (i = 0; i < warm + trips; i++) {
		if (i == warm)
			t0 = now();
		reply(a, to_b, abuf);
		wait_recv(a, abuf);
	}
	t0 = now() - t0;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("the ping-pong's other process", ECHILD);
	return t0 / trips / 2 * 1e6;
}

int main(int argc, char **argv)
{
	struct raw_ep a, b;
	uint64_t to_a, to_b;
	double t0;
	long i, rang;
	int c;

	while ((c = getopt(argc, argv, "n:i:S:")) != -1) {
		switch (c) {
		case 'n':
			calls = atol(optarg);
			break;
		case 'i':
			trips = atol(optarg);
			break;
		case 'S':
			size = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: kfab-bench-floor [-n CALLS] [-i ROUND_TRIPS] [-S SIZE]\n");
			return 1;
		}
	}
	if (calls < 1 || trips < 1 || !size || size > KFAB_INLINE_MAX) {
		fprintf(stderr, "kfab-bench-floor: -n and -i at least 1, -S 1 to %d\n",
			KFAB_INLINE_MAX);
		return 1;
	}
	endpoint(&a);
	endpoint(&b);
	to_b = peer(&a, &b);
	to_a = peer(&b, &a);
	if (to_a == ANY || to_b == ANY)
		die("inserting the peers' addresses", errno);

	t0 = now();
	for (i = 0; i < calls; i++)
		getppid();
	printf("floor: syscall %.2f\n", (now() - t0) / calls * 1e6);
	t0 = now();
	for (i = 0; i < calls; i++)
		ioctl(a.fd, _IO(KFAB_TYPE, 0xef), 0);
	printf("floor: ioctl %.2f\n", (now() - t0) / calls * 1e6);
	t0 = now();
	for (i = 0; i < calls; i++)
		if (_test_cmd_doorbell(a.fd, a.ep, NULL))
			die("KFAB_IOC_DOORBELL", errno);
	printf("floor: doorbell %.2f\n", (now() - t0) / calls * 1e6);
	t0 = now();
	for (i = 0; i < calls; i++)
		if (_test_cmd_ring(a.fd, a.ep) < 0)
			die("KFAB_IOC_RING", errno);
	printf("floor: ring %.2f\n", (now() - t0) / calls * 1e6);
	printf("floor: rung %.2f\n", rung(&a, to_b));
	t0 = polled(&a, to_b, &rang);
	if (t0 >= 0)
		printf("floor: polled %.2f (%ld of %ld rang)\n", t0, rang, calls);
	printf("floor: raw %zu %.2f\n", size, pingpong(&a, &b, to_b, to_a));
	ep_close(&a);
	ep_close(&b);
	return 0;
}
