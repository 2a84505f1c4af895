// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ring poller: a thread of the program, lent to the kernel with
 * KFAB_IOC_SQ_POLL, carries out the requests of the rings its file
 * watches (KFAB_IOC_SQ_WATCH) as soon as they are published, so the
 * thread that posts them makes no system call.  io_uring's SQPOLL, with
 * one difference: the poller is the caller's own thread, not one the
 * module makes, so every copy, pin and limit it meets is the program's
 * own (its mm, its credentials, its RLIMIT_MEMLOCK) and nothing here
 * needs to borrow them.
 *
 * It spins while there is work and for idle_us after; then it parks:
 * PARKED, NEED_WAKEUP on every watched ring, a full barrier, one more
 * look at every tail (the pair is in uapi/linux/kfab.h), and sleep until
 * a doorbell of the file kicks it.  A producer that sees NEED_WAKEUP
 * rings the doorbell itself, which carries its requests out at once and
 * kicks the parked poller; a kick ignored (a contended park, below) can
 * delay the poller's return, never a request.
 *
 * It spins only while it is alone on its CPU (single_task_running(), as
 * KVM's halt polling): where the program's threads want every CPU, it
 * parks at once, and a doorbell does not wake it (the kick would take a
 * CPU from the thread that rang); it looks again after a tick.
 *
 * A ring whose first entry cannot go on (a send waiting for its
 * receiver's budget, an endpoint not enabled yet) is "stuck": it does
 * not keep the poller spinning, which parks with a timeout of idle_us
 * instead and tries it again when it wakes.
 *
 * The poller remembers rings by id, not by reference, and takes a
 * reference for the length of a pass only: a destroy of a watched
 * object may meet it and fail with -EBUSY (the library stops watching
 * first).  An id whose object is gone, or is not a watched ring any more
 * (an id used again), is dropped at the next pass.
 */
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>

#include "kfab.h"

void kfab_sq_poller_init(struct kfab_sq_poller *p)
{
	mutex_init(&p->lock);
	init_waitqueue_head(&p->wait);
}

void kfab_sq_poller_fini(struct kfab_sq_poller *p)
{
	mutex_destroy(&p->lock);
}

/* The ring of an object, or NULL for objects that have none. */
static struct kfab_sq *kfab_sq_of(struct kfab_object *obj)
{
	const struct kfab_object_ops *ops = kfab_object_ops_of(obj);

	return ops->sq ? ops->sq(obj) : NULL;
}

/* The kernel's head of @sq, read without the owner's lock. */
static u32 kfab_sq_head(struct kfab_sq *sq)
{
	/* head changes under the owner's sq_lock; a stale one costs a pass. */
	return data_race(sq->head);
}

/* Entries published that the kernel has not taken. */
static bool kfab_sq_pending(struct kfab_sq *sq)
{
	return READ_ONCE(*sq->tail_user) != kfab_sq_head(sq);
}

/* What a watched ring's flags say while its poller is awake or not. */
static void kfab_sq_flag(struct kfab_sq *sq, bool need_wakeup)
{
	WRITE_ONCE(*sq->flags_user, KFAB_SQ_RING_WATCHED |
		   (need_wakeup ? KFAB_SQ_RING_NEED_WAKEUP : 0));
}

/* Forget the @i-th id: the last one takes its place. */
static void kfab_sq_poller_drop(struct kfab_sq_poller *p, u32 i)
{
	lockdep_assert_held(&p->lock);
	p->nr--;
	p->ring[i] = p->ring[p->nr];
}

/*
 * The @i-th watched ring's object, with a reference, or NULL after
 * dropping an id that no longer names one.
 */
static struct kfab_object *kfab_sq_poller_get(struct kfab_ctx *ctx,
					      struct kfab_sq_poller *p, u32 i,
					      struct kfab_sq **sq)
{
	struct kfab_object *obj;

	lockdep_assert_held(&p->lock);
	obj = kfab_object_get(ctx, p->ring[i].id, KFAB_OBJ_ANY);
	*sq = obj ? kfab_sq_of(obj) : NULL;
	if (*sq && (*sq)->watched)
		return obj;
	if (obj)
		kfab_object_put(obj);
	kfab_sq_poller_drop(p, i);
	return NULL;
}

/* Drop the ids of objects gone.  Return: the rings watched now. */
static u32 kfab_sq_poller_prune(struct kfab_ctx *ctx, struct kfab_sq_poller *p)
{
	struct kfab_object *obj;
	struct kfab_sq *sq;
	u32 i = 0;

	while (i < p->nr) {
		obj = kfab_sq_poller_get(ctx, p, i, &sq);
		if (!obj)
			continue;
		kfab_object_put(obj);
		i++;
	}
	return p->nr;
}

/* Set or clear NEED_WAKEUP on every watched ring. */
static void kfab_sq_poller_flag_all(struct kfab_ctx *ctx,
				    struct kfab_sq_poller *p, bool need_wakeup)
{
	struct kfab_object *obj;
	struct kfab_sq *sq;
	u32 i = 0;

	lockdep_assert_held(&p->lock);
	while (i < p->nr) {
		obj = kfab_sq_poller_get(ctx, p, i, &sq);
		if (!obj)
			continue;	/* the last id moved to i */
		kfab_sq_flag(sq, need_wakeup);
		kfab_object_put(obj);
		i++;
	}
}

/*
 * One look at every watched ring: run those with entries.  Return: the
 * entries carried out; *@stuck: some ring kept entries it had before.
 */
static u32 kfab_sq_poller_pass(struct kfab_ctx *ctx, struct kfab_sq_poller *p,
			       bool *stuck)
{
	struct kfab_object *obj;
	struct kfab_sq *sq;
	u32 i = 0, total = 0, done, tail;

	*stuck = false;
	mutex_lock(&p->lock);
	while (i < p->nr) {
		obj = kfab_sq_poller_get(ctx, p, i, &sq);
		if (!obj)
			continue;
		/*
		 * The tail this pass acted on: one published after it is
		 * news to the park's last look, even if it came before
		 * this pass ended.
		 */
		tail = READ_ONCE(*sq->tail_user);
		if (tail != kfab_sq_head(sq)) {
			done = 0;
			kfab_object_ops_of(obj)->doorbell(obj, &done);
			total += done;
			if (!done && kfab_sq_pending(sq))
				*stuck = true;
		}
		p->ring[i].seen = tail;
		kfab_object_put(obj);
		i++;
	}
	mutex_unlock(&p->lock);
	return total;
}

/* Some ring got entries after the last pass looked at it. */
static bool kfab_sq_poller_news(struct kfab_ctx *ctx, struct kfab_sq_poller *p)
{
	struct kfab_object *obj;
	struct kfab_sq *sq;
	bool news = false;
	u32 i = 0, tail;

	lockdep_assert_held(&p->lock);
	while (i < p->nr && !news) {
		obj = kfab_sq_poller_get(ctx, p, i, &sq);
		if (!obj)
			continue;
		tail = READ_ONCE(*sq->tail_user);
		news = tail != kfab_sq_head(sq) && tail != p->ring[i].seen;
		kfab_object_put(obj);
		i++;
	}
	return news;
}

/* Until a doorbell kicks, a stop, a signal, or @timeout (jiffies). */
static void kfab_sq_poller_sleep(struct kfab_sq_poller *p, long timeout)
{
	DEFINE_WAIT(wait);

	/* Open-coded: the wait_event macros' nested __ret upsets sparse. */
	while (timeout) {
		prepare_to_wait(&p->wait, &wait, TASK_INTERRUPTIBLE);
		if (test_bit(KFAB_SQ_POLLER_KICKED, &p->state) ||
		    test_bit(KFAB_SQ_POLLER_STOP, &p->state) ||
		    signal_pending(current))
			break;
		timeout = schedule_timeout(timeout);
	}
	finish_wait(&p->wait, &wait);
}

/* Park: flags, barrier, one more look, then sleep (see the top). */
static void kfab_sq_poller_park(struct kfab_ctx *ctx, struct kfab_sq_poller *p,
				bool contended, long timeout)
{
	bool news;

	mutex_lock(&p->lock);
	p->awake = false;
	/*
	 * Parked before NEED_WAKEUP is up: a producer that sees the flag
	 * rings, and its kick must find PARKED set or it is lost, leaving
	 * the poller asleep until some later doorbell (once, on the debug
	 * kernel).  A kick from here on ends the sleep before it starts.
	 */
	clear_bit(KFAB_SQ_POLLER_KICKED, &p->state);
	if (contended)
		set_bit(KFAB_SQ_POLLER_CONTENDED, &p->state);
	set_bit(KFAB_SQ_POLLER_PARKED, &p->state);
	/* PARKED before the flag: pairs with kfab_sq_poller_kick()'s. */
	smp_mb__after_atomic();
	kfab_sq_poller_flag_all(ctx, p, true);
	/* A test widens the window between the flag and the last look. */
	if (kfab_fault(ctx, KFAB_FAULT_SLOW_PARK))
		msleep(100);
	/* Pairs with the producer's barrier between its tail and flags. */
	smp_mb();
	news = kfab_sq_poller_news(ctx, p);
	mutex_unlock(&p->lock);

	if (!news)
		kfab_sq_poller_sleep(p, timeout);
	clear_bit(KFAB_SQ_POLLER_PARKED, &p->state);
	clear_bit(KFAB_SQ_POLLER_CONTENDED, &p->state);
	mutex_lock(&p->lock);
	p->awake = true;
	kfab_sq_poller_flag_all(ctx, p, false);
	mutex_unlock(&p->lock);
}

/* A doorbell of the file: a parked poller wakes and watches again. */
void kfab_sq_poller_kick(struct kfab_ctx *ctx)
{
	struct kfab_sq_poller *p = &ctx->sq_poller;

	/* Pairs with the park's barrier between PARKED and NEED_WAKEUP. */
	smp_rmb();
	if (!test_bit(KFAB_SQ_POLLER_PARKED, &p->state) ||
	    test_bit(KFAB_SQ_POLLER_CONTENDED, &p->state))
		return;
	set_bit(KFAB_SQ_POLLER_KICKED, &p->state);
	wake_up(&p->wait);
}

static int kfab_sq_poller_run(struct kfab_ctx *ctx, struct kfab_sq_poll *cmd)
{
	struct kfab_sq_poller *p = &ctx->sq_poller;
	u64 idle = (u64)cmd->idle_us * NSEC_PER_USEC, last;
	bool stuck;
	u32 done;

	mutex_lock(&p->lock);
	p->awake = true;
	kfab_sq_poller_flag_all(ctx, p, false);
	mutex_unlock(&p->lock);

	last = ktime_get_ns();
	while (!test_bit(KFAB_SQ_POLLER_STOP, &p->state)) {
		if (signal_pending(current))
			return -EINTR;
		done = kfab_sq_poller_pass(ctx, p, &stuck);
		cmd->out_done += done;
		if (done) {
			last = ktime_get_ns();
		} else if (!single_task_running()) {
			/*
			 * Idle, and another task wants this CPU: the program's
			 * own threads, where they take every CPU.  Spinning
			 * for work they would post only delays them, and so
			 * would a doorbell's kick: park, deaf to kicks, and
			 * look again after a tick.
			 */
			kfab_sq_poller_park(ctx, p, true, 1);
			cmd->out_parks++;
			last = ktime_get_ns();
		} else if (ktime_get_ns() - last >= idle) {
			kfab_sq_poller_park(ctx, p, false, stuck ?
					    usecs_to_jiffies(cmd->idle_us) :
					    MAX_SCHEDULE_TIMEOUT);
			cmd->out_parks++;
			last = ktime_get_ns();
		}
		cond_resched();
	}
	return 0;
}

int kfab_ioctl_sq_poll(struct kfab_ucmd *ucmd)
{
	struct kfab_sq_poller *p = &ucmd->ctx->sq_poller;
	struct kfab_sq_poll *cmd = ucmd->cmd;
	int rc;

	if (cmd->flags & ~KFAB_SQ_POLL_STOP)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	cmd->out_done = 0;
	cmd->out_parks = 0;
	if (cmd->flags & KFAB_SQ_POLL_STOP) {
		set_bit(KFAB_SQ_POLLER_STOP, &p->state);
		wake_up(&p->wait);
		return kfab_ucmd_respond(ucmd, sizeof(*cmd));
	}
	if (!cmd->idle_us || cmd->idle_us > KFAB_SQ_POLL_MAX_IDLE_US)
		return -EINVAL;

	mutex_lock(&p->lock);
	rc = p->running ? -EBUSY : 0;
	p->running = true;
	mutex_unlock(&p->lock);
	if (rc)
		return rc;

	rc = kfab_sq_poller_run(ucmd->ctx, cmd);

	/* Nobody watches now: producers ring for themselves. */
	mutex_lock(&p->lock);
	p->awake = false;
	kfab_sq_poller_flag_all(ucmd->ctx, p, true);
	p->running = false;
	mutex_unlock(&p->lock);
	return rc ? rc : kfab_ucmd_respond(ucmd, sizeof(*cmd));
}

static int kfab_sq_unwatch(struct kfab_sq_poller *p, struct kfab_sq *sq,
			   u32 id)
{
	u32 i;

	lockdep_assert_held(&p->lock);
	if (!sq->watched)
		return -ENOENT;
	for (i = 0; i < p->nr; i++) {
		if (p->ring[i].id == id) {
			kfab_sq_poller_drop(p, i);
			break;
		}
	}
	sq->watched = false;
	WRITE_ONCE(*sq->flags_user, 0);
	return 0;
}

int kfab_ioctl_sq_watch(struct kfab_ucmd *ucmd)
{
	struct kfab_sq_poller *p = &ucmd->ctx->sq_poller;
	struct kfab_sq_watch *cmd = ucmd->cmd;
	struct kfab_object *obj;
	struct kfab_sq *sq;
	int rc = 0;

	if (cmd->flags & ~KFAB_SQ_WATCH_REMOVE)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	obj = kfab_object_get(ucmd->ctx, cmd->obj_id, KFAB_OBJ_ANY);
	sq = obj ? kfab_sq_of(obj) : NULL;
	if (!sq) {
		rc = -ENOENT;
		goto out;
	}
	mutex_lock(&p->lock);
	if (cmd->flags & KFAB_SQ_WATCH_REMOVE) {
		rc = kfab_sq_unwatch(p, sq, cmd->obj_id);
	} else if (sq->watched) {
		rc = -EEXIST;
	} else if (p->nr == KFAB_SQ_POLL_MAX_RINGS &&
		   kfab_sq_poller_prune(ucmd->ctx, p) == KFAB_SQ_POLL_MAX_RINGS) {
		rc = -ENOSPC;
	} else {
		p->ring[p->nr].id = cmd->obj_id;
		p->ring[p->nr].seen = READ_ONCE(*sq->tail_user);
		p->nr++;
		sq->watched = true;
		kfab_sq_flag(sq, !p->awake);
	}
	mutex_unlock(&p->lock);
out:
	if (obj)
		kfab_object_put(obj);
	/*
	 * Nothing to answer: a struct it could not write back (read-only
	 * memory) must not turn a watch that took effect into -EFAULT.
	 */
	return rc;
}
