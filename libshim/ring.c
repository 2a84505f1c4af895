// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: the producer side of a submission ring.  Endpoints (ep.c, for
 * sends and receives) and shared receive contexts (srx.c, receives only)
 * each own one; msg.c builds the struct kfab_sqe entries, this file puts
 * them in.  The protocol is uapi/linux/kfab.h's:
 *
 *   1. head = acquire-load(head)        pairs with the kernel's release of
 *                                       head: the slots before it are free
 *   2. tail - head == entries?          full: publish, ring the doorbell
 *                                       once, look again, else -FI_EAGAIN
 *   3. write sqes[tail & mask]
 *   4. release-store(tail, tail + 1)    pairs with the kernel's acquire of
 *                                       tail: it sees the slot written
 *   5. KFAB_IOC_DOORBELL                unless FI_MORE
 *
 * With FI_MORE the entry is written but the tail is not published: the
 * kernel cannot see (nor progress start) any part of a batch until the
 * call without FI_MORE publishes all of it and rings once.  A full ring
 * ends a batch early (FI_MORE is a hint).
 *
 * A lazy ring (an endpoint's or an SRX's, unless FI_KFAB_LAZY_DOORBELL=0)
 * skips step 5: the entries are published, and the next manual progress
 * call rings once for everything published since (kfab's data progress is
 * FI_PROGRESS_MANUAL, fi_domain(3)).  Every enabled endpoint is bound to
 * a CQ or counter in each direction it uses, whose reads progress it; so
 * a stream of sends without FI_MORE costs one system call per CQ read
 * that finds work, not one per send.  Not so a send that reports no
 * completion (an inject, a send without FI_COMPLETION on a selective
 * endpoint): nothing tells its program to call again for it, and
 * programs send one and then wait elsewhere (fi_pingpong's last reply
 * waited for the sweeper inside its timed loop), so it rings at once
 * (SHIM_BELL_NOW), taking whatever waited in the ring with it.  A full
 * ring still rings at once, and fi_close() rings before the endpoint
 * goes.
 *
 * Every lazy ring of the process is also on one list, and any progress
 * call (of any CQ, counter or EQ, shim_lazy_flush()) rings those that
 * wait: a program that sends on one endpoint and reads or sleeps on
 * another's CQ is not left waiting for itself.  Rings that wait are
 * counted (@due, shim_lazy_due), so a flush that finds none costs one load.
 * Nobody may come while a thread sleeps in kfab (shim_lazy_sleep_begin())
 * or after fi_trywait() told the program to sleep outside it, until its
 * next progress call: meanwhile requests ring at once (shim_ring_lazy()).
 *
 * And a program may post and then wait outside libfabric without
 * fi_trywait() (fi_pingpong does, on its control socket): the sweeper, a
 * thread of the library, wakes every period (FI_KFAB_LAZY_DOORBELL, in
 * microseconds) and rings every ring that was due at its previous wake
 * too, so a request waits at most two periods for a program that never
 * calls.  After SHIM_SWEEP_IDLE periods with nothing due it parks on a
 * futex; the post that finds it parked wakes it (one system call, after
 * an idle spell).  A polling program flushes long before a period ends,
 * so the sweeper finds nothing to ring.
 *
 * We never read the tail back: local_tail is ours.  The owner's lock
 * serialises producers; progress takes no lock (two loads and a call).
 */
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "barrier.h"
#include "internal.h"

/* The lazy rings of the process, and how many of them wait for a call. */
static pthread_mutex_t shim_lazy_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_ring **shim_lazy_rings;
static size_t shim_lazy_count, shim_lazy_cap;
static unsigned int shim_lazy_due;
/* Numbers the rings' turns to due: a flush rings them in that order. */
static unsigned int shim_lazy_seq;
/*
 * Threads asleep in kfab (a blocking read or wait), and whether an
 * fi_trywait() said "block" since the last progress call: while either
 * holds, nobody may come to ring, so requests ring at once.
 */
static unsigned int shim_lazy_sleepers;
static bool shim_lazy_outside;

/*
 * The sweeper: @epoch counts its wakes (a ring due since an earlier one
 * waited a whole period); @parked is its futex word, 1 while it sleeps
 * for good; @state says whether this process has one (after fork() the
 * child has not: the first lazy request starts another).
 */
#define SHIM_SWEEP_IDLE		64	/* empty periods before it parks */
static unsigned int shim_sweep_us = 10000;
static unsigned int shim_sweep_epoch;
static unsigned int shim_sweep_parked;
static pthread_mutex_t shim_sweep_lock = PTHREAD_MUTEX_INITIALIZER;
static enum { SHIM_SWEEP_NONE, SHIM_SWEEP_RUNNING, SHIM_SWEEP_FAILED }
	shim_sweep_state;
static bool shim_sweep_stop;
static pthread_t shim_sweep_thread;
static bool shim_lazy_atfork;

/* The kernel's answer must describe a ring that fits its region. */
int shim_ring_map(struct shim_ring *ring, int fd, uint32_t id,
		  const struct kfab_sq_layout *l)
{
	uint32_t n = l->entries;
	int ret;

	if (!n || (n & (n - 1)) || l->entry_size < sizeof(struct kfab_sqe) ||
	    l->entry_size % sizeof(uint64_t) ||
	    l->off_tail % sizeof(uint32_t) || l->off_head % sizeof(uint32_t) ||
	    l->off_entries % sizeof(uint64_t) ||
	    l->off_tail + sizeof(uint32_t) > l->region.size ||
	    l->off_head + sizeof(uint32_t) > l->region.size ||
	    l->off_entries + (uint64_t)n * l->entry_size > l->region.size ||
	    l->off_flags % sizeof(uint32_t) ||
	    l->off_flags + sizeof(uint32_t) > l->region.size)
		return -FI_EOTHER;

	ring->fd = fd;
	ring->id = id;
	ring->map_len = l->region.size;
	ret = shim_dev_mmap(fd, l->region.offset, ring->map_len, true,
			    &ring->map);
	if (ret) {
		ring->map = NULL;
		return ret;
	}
	ring->tail = (uint32_t *)((char *)ring->map + l->off_tail);
	ring->head = (const uint32_t *)((char *)ring->map + l->off_head);
	ring->sqes = (uint8_t *)ring->map + l->off_entries;
	/* Offset 0 is the tail's: a module without a flags word says 0. */
	ring->flags = l->off_flags ?
		      (const uint32_t *)((char *)ring->map + l->off_flags) :
		      NULL;
	ring->watched = false;
	ring->entries = n;
	ring->mask = n - 1;
	ring->entry_size = l->entry_size;
	/* A fresh ring: both indices start where the kernel put them. */
	ring->local_tail = shim_load_acquire(ring->head);
	ring->published = ring->local_tail;
	shim_store_release(ring->tail, ring->local_tail);
	return 0;
}

void shim_ring_unmap(struct shim_ring *ring)
{
	if (ring->map)
		munmap(ring->map, ring->map_len);
	ring->map = NULL;
}

uint32_t shim_ring_entries(uint64_t want)
{
	uint32_t n = 1;

	if (!want)
		return 0;	/* the kernel's default */
	if (want >= KFAB_SQ_MAX_ENTRIES)
		return KFAB_SQ_MAX_ENTRIES;
	while (n < want)
		n <<= 1;
	return n;
}

/* Slots in use, as far as we know; never above ring->entries. */
static uint32_t shim_ring_used(struct shim_ring *ring)
{
	/* Pairs with the kernel's smp_store_release() of head. */
	uint32_t used = ring->local_tail - shim_load_acquire(ring->head);

	/* A head past our tail, or too far behind, is not the kernel's. */
	return used > ring->entries ? ring->entries : used;
}

uint32_t shim_ring_space(struct shim_ring *ring)
{
	return ring->entries - shim_ring_used(ring);
}

static void shim_ring_publish(struct shim_ring *ring)
{
	if (ring->published == ring->local_tail)
		return;
	/* Pairs with the kernel's smp_load_acquire() of tail. */
	shim_store_release(ring->tail, ring->local_tail);
	ring->published = ring->local_tail;
}

static bool shim_sweep_ensure(void);
static void shim_lazy_forked(void);

/* @ring has published requests no doorbell took yet. */
static void shim_ring_set_due(struct shim_ring *ring)
{
	if (!__atomic_exchange_n(&ring->due, true, __ATOMIC_ACQ_REL)) {
		__atomic_store_n(&ring->due_seq,
				 __atomic_add_fetch(&shim_lazy_seq, 1,
						    __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ring->due_epoch,
				 __atomic_load_n(&shim_sweep_epoch,
						 __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
		__atomic_add_fetch(&shim_lazy_due, 1, __ATOMIC_RELEASE);
	}
}

/* A doorbell follows: whatever was published is taken with it. */
static void shim_ring_clear_due(struct shim_ring *ring)
{
	/*
	 * Every CQ read comes here for each endpoint: a plain load first, so
	 * a ring that is not due costs no locked write to a line the poster
	 * writes too.
	 */
	if (__atomic_load_n(&ring->due, __ATOMIC_ACQUIRE) &&
	    __atomic_exchange_n(&ring->due, false, __ATOMIC_ACQ_REL))
		__atomic_sub_fetch(&shim_lazy_due, 1, __ATOMIC_RELEASE);
}

static void shim_ring_doorbell(struct shim_ring *ring)
{
	int ret = shim_dev_doorbell(ring->fd, ring->id, NULL);

	/*
	 * The requests are in the ring whatever the answer: the next
	 * doorbell (or progress from a CQ read) carries them out.
	 */
	if (ret)
		SHIM_INFO(EP_DATA, "ring of %u: KFAB_IOC_DOORBELL: %s\n",
			  ring->id, fi_strerror(-ret));
}

/*
 * Due, unless somebody sleeps: the due mark, then the look at the
 * sleepers; a sleeper counts itself, then looks at the due rings
 * (shim_lazy_sleep_begin()).  Full barriers between, so one of the two
 * sees the other: the request is never left with everybody asleep.
 */
static void shim_ring_lazy(struct shim_ring *ring)
{
	shim_ring_set_due(ring);
	shim_smp_mb();
	if (__atomic_load_n(&shim_lazy_sleepers, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&shim_lazy_outside, __ATOMIC_RELAXED) ||
	    !shim_sweep_ensure())
		shim_ring_progress(ring);
}

/*
 * A watched ring whose poller is awake: it takes what is published, and
 * nobody need ring.  The producer's half of the pair in uapi/linux/kfab.h:
 * the tail was stored, a full barrier, then the flags; the poller stores
 * NEED_WAKEUP, a full barrier, then looks at the tail.  One of the two
 * sees the other.
 */
static bool shim_ring_poller_awake(struct shim_ring *ring)
{
	if (!shim_read_once(&ring->watched))
		return false;
	shim_smp_mb();
	return !(shim_read_once(ring->flags) & KFAB_SQ_RING_NEED_WAKEUP);
}

void shim_ring_flush(struct shim_ring *ring)
{
	shim_ring_publish(ring);
	if (!shim_ring_poller_awake(ring))
		shim_ring_doorbell(ring);
}

/* The next slot, or NULL when the ring is full (shim_ring_slot()). */
static struct kfab_sqe *shim_ring_next(struct shim_ring *ring,
				       enum shim_ring_bell bell)
{
	uint8_t *slot;

	if (shim_ring_used(ring) >= ring->entries) {
		shim_ring_publish(ring);
		if (bell == SHIM_BELL_NONE)
			return NULL;
		shim_ring_doorbell(ring);
		if (shim_ring_used(ring) >= ring->entries)
			return NULL;
	}
	slot = ring->sqes + (size_t)(ring->local_tail & ring->mask) *
	       ring->entry_size;
	/* A kernel entry larger than ours: what we do not know is zero. */
	if (ring->entry_size > sizeof(struct kfab_sqe))
		memset(slot + sizeof(struct kfab_sqe), 0,
		       ring->entry_size - sizeof(struct kfab_sqe));
	return (struct kfab_sqe *)slot;
}

/*
 * Only the header is cleared: the kernel reads no more of the rest than
 * the header says is used, so a small entry costs no 128-byte clear.
 */
struct kfab_sqe *shim_ring_slot(struct shim_ring *ring,
				enum shim_ring_bell bell)
{
	struct kfab_sqe *slot = shim_ring_next(ring, bell);

	if (slot)
		memset(slot, 0, offsetof(struct kfab_sqe, iov));
	return slot;
}

ssize_t shim_ring_commit(struct shim_ring *ring, bool more,
			 enum shim_ring_bell bell)
{
	ring->local_tail++;
	if (more)
		return 0;
	shim_ring_publish(ring);
	if (bell == SHIM_BELL_NONE)
		return 0;
	/* An awake poller takes it; a parked one is as no poller. */
	if (shim_ring_poller_awake(ring))
		return 0;
	if (!ring->lazy)
		shim_ring_doorbell(ring);
	else if (bell == SHIM_BELL_LAZY)
		shim_ring_lazy(ring);
	else
		/* Whatever waited goes with it: the ring is not due after. */
		shim_ring_progress(ring);
	return 0;
}

ssize_t shim_ring_post(struct shim_ring *ring, const struct kfab_sqe *sqe,
		       bool more, enum shim_ring_bell bell)
{
	struct kfab_sqe *slot = shim_ring_next(ring, bell);
	unsigned int i;

	if (!slot)
		return -FI_EAGAIN;
	/* The header whole, then what it says is used (shim_sqe_size()). */
	memcpy(slot, sqe, offsetof(struct kfab_sqe, iov));
	if (sqe->flags & KFAB_SQE_INLINE)
		memcpy(slot->inline_data, sqe->inline_data,
		       shim_sqe_size(sqe) - offsetof(struct kfab_sqe, iov));
	else
		for (i = 0; i < sqe->iov_count && i < KFAB_IOV_MAX; i++)
			slot->iov[i] = sqe->iov[i];
	return shim_ring_commit(ring, more, bell);
}

bool shim_ring_progress(struct shim_ring *ring)
{
	uint32_t tail, head;

	shim_ring_clear_due(ring);
	/* The published tail is ours; a scribbled one only costs a call. */
	tail = shim_read_once(ring->tail);
	/* Pairs with the kernel's smp_store_release() of head. */
	head = shim_load_acquire(ring->head);
	if (head == tail)
		return false;
	/*
	 * The poller takes them, unless it is parked, or has not moved
	 * since our last look: then it has no CPU (the program's threads
	 * took them all), and we ring rather than wait for it.
	 */
	if (shim_ring_poller_awake(ring) &&
	    (shim_read_once(&ring->seen_head) != head ||
	     shim_read_once(&ring->seen_tail) != tail)) {
		shim_write_once(&ring->seen_head, head);
		shim_write_once(&ring->seen_tail, tail);
		return true;
	}
	(void)shim_dev_doorbell(ring->fd, ring->id, NULL);
	return shim_load_acquire(ring->head) != tail;
}

void shim_lazy_add(struct shim_ring *ring)
{
	if (ring->lazy || !shim_lazy_doorbell())
		return;
	pthread_mutex_lock(&shim_lazy_lock);
	if (!shim_lazy_atfork) {
		if (pthread_atfork(NULL, NULL, shim_lazy_forked))
			goto out;
		shim_lazy_atfork = true;
	}
	if (shim_lazy_count == shim_lazy_cap) {
		size_t cap = shim_lazy_cap ? shim_lazy_cap * 2 : 16;
		struct shim_ring **r = realloc(shim_lazy_rings,
					       cap * sizeof(*r));

		if (!r)
			goto out;
		shim_lazy_rings = r;
		shim_lazy_cap = cap;
	}
	shim_lazy_rings[shim_lazy_count++] = ring;
	ring->lazy = true;
out:
	pthread_mutex_unlock(&shim_lazy_lock);
}

void shim_lazy_del(struct shim_ring *ring)
{
	size_t i;

	pthread_mutex_lock(&shim_lazy_lock);
	for (i = 0; i < shim_lazy_count; i++) {
		if (shim_lazy_rings[i] == ring) {
			shim_lazy_rings[i] = shim_lazy_rings[--shim_lazy_count];
			break;
		}
	}
	shim_ring_clear_due(ring);
	pthread_mutex_unlock(&shim_lazy_lock);
}

/*
 * The list's lock keeps every ring mapped meanwhile: fi_close() takes its
 * endpoint's ring off the list before it unmaps it.
 */
static void shim_lazy_flush_due(void)
{
	struct shim_ring *r, *first;
	size_t i, n;

	if (!__atomic_load_n(&shim_lazy_due, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&shim_lazy_lock);
	/*
	 * Oldest due first: a receive posted on one endpoint before a send
	 * on another is in the kernel before that send (and matches it).
	 */
	for (n = 0; n < shim_lazy_count; n++) {
		first = NULL;
		for (i = 0; i < shim_lazy_count; i++) {
			r = shim_lazy_rings[i];
			if (__atomic_load_n(&r->due, __ATOMIC_ACQUIRE) &&
			    (!first || (int)(r->due_seq - first->due_seq) < 0))
				first = r;
		}
		if (!first)
			break;
		shim_ring_progress(first);
	}
	pthread_mutex_unlock(&shim_lazy_lock);
}

void shim_lazy_flush(void)
{
	/* A progress call: whoever trywaited is back, or others poll. */
	if (__atomic_load_n(&shim_lazy_outside, __ATOMIC_RELAXED))
		__atomic_store_n(&shim_lazy_outside, false, __ATOMIC_RELAXED);
	shim_lazy_flush_due();
}

void shim_lazy_sleep_begin(void)
{
	__atomic_add_fetch(&shim_lazy_sleepers, 1, __ATOMIC_SEQ_CST);
	shim_smp_mb();
	shim_lazy_flush();
}

void shim_lazy_sleep_end(void)
{
	__atomic_sub_fetch(&shim_lazy_sleepers, 1, __ATOMIC_RELEASE);
}

void shim_lazy_trywait_done(void)
{
	__atomic_store_n(&shim_lazy_outside, true, __ATOMIC_SEQ_CST);
	shim_smp_mb();
	shim_lazy_flush_due();
}

/* Ring what was due at the sweeper's previous wake already. */
static bool shim_sweep_once(unsigned int epoch)
{
	struct shim_ring *r;
	bool any = false;
	size_t i;

	if (!__atomic_load_n(&shim_lazy_due, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&shim_lazy_lock);
	for (i = 0; i < shim_lazy_count; i++) {
		r = shim_lazy_rings[i];
		if (!__atomic_load_n(&r->due, __ATOMIC_ACQUIRE))
			continue;
		any = true;
		/* Due since before the previous wake: a whole period. */
		if (epoch - __atomic_load_n(&r->due_epoch,
					    __ATOMIC_RELAXED) >= 2)
			shim_ring_progress(r);
	}
	pthread_mutex_unlock(&shim_lazy_lock);
	return any;
}

static void *shim_sweeper(void *arg)
{
	struct timespec ts = {
		.tv_sec = shim_sweep_us / 1000000,
		.tv_nsec = (long)(shim_sweep_us % 1000000) * 1000,
	};
	unsigned int idle = 0, epoch;

	(void)arg;
	while (!__atomic_load_n(&shim_sweep_stop, __ATOMIC_ACQUIRE)) {
		(void)nanosleep(&ts, NULL);
		epoch = __atomic_add_fetch(&shim_sweep_epoch, 1,
					   __ATOMIC_SEQ_CST);
		if (shim_sweep_once(epoch)) {
			idle = 0;
			continue;
		}
		if (++idle < SHIM_SWEEP_IDLE)
			continue;
		/* Park, then look once more: a post saw us awake or wakes us. */
		__atomic_store_n(&shim_sweep_parked, 1, __ATOMIC_SEQ_CST);
		shim_smp_mb();
		if (!__atomic_load_n(&shim_lazy_due, __ATOMIC_SEQ_CST) &&
		    !__atomic_load_n(&shim_sweep_stop, __ATOMIC_SEQ_CST))
			(void)syscall(SYS_futex, &shim_sweep_parked,
				      FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
		__atomic_store_n(&shim_sweep_parked, 0, __ATOMIC_SEQ_CST);
		idle = 0;
	}
	return NULL;
}

/*
 * The child of fork() has no sweeper (its first lazy request starts one),
 * and the rings on the list are its parent's: the same kernel rings,
 * whose requests name the parent's memory.  The child never rings them
 * for the parent: they leave the list and stop being lazy here.
 */
static void shim_lazy_forked(void)
{
	size_t i;

	pthread_mutex_init(&shim_lazy_lock, NULL);
	for (i = 0; i < shim_lazy_count; i++) {
		shim_lazy_rings[i]->lazy = false;
		shim_lazy_rings[i]->due = false;
	}
	shim_lazy_count = 0;
	shim_lazy_due = 0;
	shim_lazy_sleepers = 0;
	shim_lazy_outside = false;
	shim_sweep_state = SHIM_SWEEP_NONE;
	shim_sweep_parked = 0;
	pthread_mutex_init(&shim_sweep_lock, NULL);
}

static bool shim_sweep_start(void)
{
	bool ok;

	pthread_mutex_lock(&shim_sweep_lock);
	if (shim_sweep_state == SHIM_SWEEP_NONE) {
		__atomic_store_n(&shim_sweep_stop, false, __ATOMIC_RELEASE);
		ok = !pthread_create(&shim_sweep_thread, NULL, shim_sweeper,
				     NULL);
		shim_sweep_state = ok ? SHIM_SWEEP_RUNNING : SHIM_SWEEP_FAILED;
		if (!ok)
			SHIM_WARN(EP_DATA, "no sweeper thread: doorbells ring at once\n");
	}
	ok = shim_sweep_state == SHIM_SWEEP_RUNNING;
	pthread_mutex_unlock(&shim_sweep_lock);
	return ok;
}

/*
 * A sweeper runs and is awake: false when none can run (the caller rings
 * at once).  A parked one is woken: the post saw @parked after its due
 * mark (full barrier in shim_ring_lazy()), or the sweeper sees the mark.
 */
static bool shim_sweep_ensure(void)
{
	if (__atomic_load_n(&shim_sweep_state, __ATOMIC_ACQUIRE) !=
	    SHIM_SWEEP_RUNNING && !shim_sweep_start())
		return false;
	if (__atomic_load_n(&shim_sweep_parked, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&shim_sweep_parked, 0, __ATOMIC_SEQ_CST))
		(void)syscall(SYS_futex, &shim_sweep_parked, FUTEX_WAKE_PRIVATE,
			      1, NULL, NULL, 0);
	return true;
}

void shim_lazy_set_period(unsigned int usec)
{
	shim_sweep_us = usec;
}

/* The provider's cleanup, before libfabric unloads us: no thread stays. */
void shim_lazy_cleanup(void)
{
	pthread_mutex_lock(&shim_sweep_lock);
	if (shim_sweep_state == SHIM_SWEEP_RUNNING) {
		__atomic_store_n(&shim_sweep_stop, true, __ATOMIC_SEQ_CST);
		__atomic_store_n(&shim_sweep_parked, 0, __ATOMIC_SEQ_CST);
		(void)syscall(SYS_futex, &shim_sweep_parked, FUTEX_WAKE_PRIVATE,
			      1, NULL, NULL, 0);
		pthread_join(shim_sweep_thread, NULL);
		shim_sweep_state = SHIM_SWEEP_FAILED;	/* eager from now on */
	}
	pthread_mutex_unlock(&shim_sweep_lock);
}
