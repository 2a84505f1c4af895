// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: fid_wait, wait sets (fi_poll(3): fi_wait_open, fi_wait).
 *
 * A wait set is an epoll instance holding the eventfds of its members, the
 * CQs, counters and EQs opened with FI_WAIT_SET and attr->wait_set naming
 * it.  Each member keeps the eventfd it would have with FI_WAIT_FD: the
 * kernel signals a CQ's (when armed) and a counter's on every change, the
 * library an EQ's while it holds an event.  No kernel object backs the set.
 *
 * fi_wait() never trusts the fd alone.  It asks every member first, the
 * way fi_trywait() does (a CQ is progressed, its eventfd reset, armed for
 * good and looked at; a counter's eventfd is reset and its values compared
 * with those the set saw last; an EQ runs its CM hooks and counts its
 * events), returns 0 when one has news, and only then sleeps in
 * epoll_wait() until a member signals, and looks again.  Since each look
 * resets before it reads, nothing that happens between the look and the
 * sleep is lost.  An EQ's fd is its own wait fd (eq.c), an epoll fd that
 * its CM objects' control messages wake too (nested in the set's).
 *
 * FI_GETWAIT gives the epoll fd (FI_WAIT_FD and FI_WAIT_UNSPEC sets; a
 * one-entry struct fi_wait_pollfd for FI_WAIT_POLLFD sets): an
 * application that poll()s or epoll()s it calls fi_trywait() on the set
 * first, as fi_poll(3) requires, and reads its members when woken.
 * FI_WAIT_MUTEX_COND sets: FI_GETWAIT gives the set's own mutex and
 * condition variable (struct fi_mutex_cond), and a helper thread of the
 * set turns the eventfds into broadcasts.  It starts with the first
 * member, sleeps in epoll_wait() on the set's epoll fd (its members
 * edge-triggered there: one wake-up per signal, no spinning on an fd that
 * stays readable until the application looks), and for each wake-up sets
 * @signaled and broadcasts @cond holding @mutex; fi_close() of the set
 * stops it (its @stop_fd) and joins it.  The thread never touches a
 * member.  The application's protocol (fi_poll(3)):
 *
 *	pthread_mutex_lock(mc.mutex);
 *	while (fi_trywait(fabric, &set_fid, 1) == 0)
 *		pthread_cond_wait(mc.cond, mc.mutex);	(or _timedwait)
 *	pthread_mutex_unlock(mc.mutex);
 *	... read the members ...
 *
 * fi_trywait() says -FI_EAGAIN when @signaled was set (and clears it) or a
 * member has news, looking as for the other sets.  No wake-up is lost: a
 * signal after the look makes the thread set @signaled and take @mutex to
 * broadcast, which it gets only once the application sleeps in
 * pthread_cond_wait() (or before its fi_trywait(), which then sees
 * @signaled).  fi_wait() on such a set is that protocol.  After fork(), a
 * child has no helper thread: the first fi_trywait(), fi_wait() or member
 * there gives the set a new epoll fd with the same members and a thread
 * of the child's.
 *
 * Lifetime: a member leaves the set when it is closed (shim_wait_del()),
 * and the set answers fi_close() with -FI_EBUSY while it has members.
 * Locking: @mutex (FI_WAIT_MUTEX_COND, the application's) before @lock
 * (the member list) before any member's own locks; members call
 * shim_wait_add()/shim_wait_del() holding none of theirs.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_eq.h>

#include "internal.h"

/**
 * struct shim_wait_member - a CQ, counter or EQ of a wait set
 * @next: the list
 * @fid: the member
 * @kind: what it is
 * @efd: its eventfd, in the epoll set
 * @value, @err: a counter's values when the set last looked
 */
struct shim_wait_member {
	struct shim_wait_member *next;
	struct fid *fid;
	enum shim_wait_kind kind;
	int efd;
	uint64_t value, err;
};

/**
 * struct shim_wait - a fid_wait
 * @wait_fid: what libfabric sees
 * @fabric: the fabric it was opened on; members must be of it
 * @wait_obj: FI_WAIT_FD, FI_WAIT_UNSPEC, FI_WAIT_POLLFD (an epoll fd),
 *	FI_WAIT_YIELD or FI_WAIT_MUTEX_COND
 * @epfd: the epoll fd (FI_WAIT_MUTEX_COND: the helper thread's)
 * @lock: protects @members and (FI_WAIT_MUTEX_COND) @thread_pid
 * @members: newest first
 * @mutex, @cond: FI_WAIT_MUTEX_COND: what FI_GETWAIT gives
 * @signaled: FI_WAIT_MUTEX_COND: the thread saw a signal that no
 *	fi_trywait() has reported yet
 * @stop_fd: FI_WAIT_MUTEX_COND: an eventfd in @epfd that stops the thread
 * @thread: FI_WAIT_MUTEX_COND: the helper thread
 * @thread_pid: the process @thread runs in (0: none started)
 */
struct shim_wait {
	struct fid_wait wait_fid;
	struct shim_fabric *fabric;
	enum fi_wait_obj wait_obj;
	int epfd;
	pthread_mutex_t lock;
	struct shim_wait_member *members;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	atomic_bool signaled;
	int stop_fd;
	pthread_t thread;
	pid_t thread_pid;
};

static const struct fi_ops shim_wait_fi_ops;

static struct shim_wait *to_shim_wait(struct fid_wait *wait_fid)
{
	return container_of(wait_fid, struct shim_wait, wait_fid);
}

/* A kfab wait set of @fabric, or NULL. */
struct shim_wait *shim_wait_from_fid(struct fid_wait *wait_fid,
				     struct shim_fabric *fabric)
{
	struct shim_wait *ws;

	if (!wait_fid || wait_fid->fid.fclass != FI_CLASS_WAIT ||
	    wait_fid->fid.ops != &shim_wait_fi_ops)
		return NULL;
	ws = to_shim_wait(wait_fid);
	return ws->fabric == fabric ? ws : NULL;
}

/*
 * Milliseconds left of @timeout (negative: for ever) since @start: -1 for
 * ever, 0 when up.  wait.c links without cq.c's helpers (selftests'
 * kfab_eq_internal takes eq.c and this file alone).
 */
static int shim_wait_left(int timeout, const struct timespec *start)
{
	struct timespec now;
	long left;

	if (timeout < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	left = timeout - ((now.tv_sec - start->tv_sec) * 1000 +
			  (now.tv_nsec - start->tv_nsec) / 1000000);
	return left > 0 ? (int)left : 0;
}

/* A counter's values, progressed as fi_cntr_read() does. */
static void shim_wait_cntr_values(struct fid *fid, uint64_t *value,
				  uint64_t *err)
{
	struct fid_cntr *cntr = container_of(fid, struct fid_cntr, fid);

	*value = fi_cntr_read(cntr);
	*err = fi_cntr_readerr(cntr);
}

/* ---- FI_WAIT_MUTEX_COND: the helper thread ---- */

/*
 * Sleep on the set's fds; broadcast @cond under @mutex for each signal,
 * until @stop_fd.  Each member's fd is edge-triggered here: a signal
 * wakes the thread once, however long the fd stays readable.
 */
static void *shim_wait_mc_thread(void *arg)
{
	struct shim_wait *ws = arg;
	struct epoll_event ev[8];
	bool news, stop = false;
	int i, n;

	while (!stop) {
		n = epoll_wait(ws->epfd, ev, sizeof(ev) / sizeof(ev[0]), -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		news = false;
		for (i = 0; i < n; i++) {
			if (ev[i].data.ptr)
				news = true;
			else
				stop = true;
		}
		if (!news)
			continue;
		atomic_store(&ws->signaled, true);
		pthread_mutex_lock(&ws->mutex);
		pthread_cond_broadcast(&ws->cond);
		pthread_mutex_unlock(&ws->mutex);
	}
	return NULL;
}

/*
 * After fork(): the parent's thread sleeps on the epoll instance this
 * process shares with it.  Give the set one of its own, with the same
 * members and a new @stop_fd.  Under @lock.
 */
static int shim_wait_mc_refork(struct shim_wait *ws)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	struct shim_wait_member *m;
	int epfd, stop_fd;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_fd < 0) {
		close(epfd);
		return -errno;
	}
	for (m = ws->members; m; m = m->next) {
		ev.data.ptr = m;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, m->efd, &ev)) {
			close(stop_fd);
			close(epfd);
			return -errno;
		}
	}
	close(ws->epfd);
	close(ws->stop_fd);
	ws->epfd = epfd;
	ws->stop_fd = stop_fd;
	return 0;
}

/*
 * FI_WAIT_MUTEX_COND: the helper thread of this process runs (started on
 * the first member, and again in a forked child).  Under @lock.  The
 * thread blocks every signal: they stay the application's threads'.
 */
static int shim_wait_mc_start(struct shim_wait *ws)
{
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t all, old;
	pid_t pid;
	int ret;

	if (ws->wait_obj != FI_WAIT_MUTEX_COND)
		return 0;
	pid = getpid();
	if (ws->thread_pid == pid)
		return 0;
	if (ws->thread_pid) {
		ret = shim_wait_mc_refork(ws);
		if (ret)
			return ret;
	}
	/* The stop fd is the one entry whose data is NULL. */
	ev.data.ptr = NULL;
	if (epoll_ctl(ws->epfd, EPOLL_CTL_ADD, ws->stop_fd, &ev))
		return -errno;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&ws->thread, NULL, shim_wait_mc_thread, ws);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		(void)epoll_ctl(ws->epfd, EPOLL_CTL_DEL, ws->stop_fd, NULL);
		SHIM_WARN(CORE, "wait set: no helper thread: %s\n",
			  strerror(-ret));
		return ret == -EAGAIN ? -FI_EAGAIN : -FI_ENOMEM;
	}
	ws->thread_pid = pid;
	return 0;
}

/* The thread of this process ends (fi_close(), no members left). */
static void shim_wait_mc_stop(struct shim_wait *ws)
{
	if (ws->thread_pid != getpid())
		return;		/* none, or the parent's after fork() */
	(void)eventfd_write(ws->stop_fd, 1);
	pthread_join(ws->thread, NULL);
	ws->thread_pid = 0;
}

/**
 * shim_wait_add() - a member joins @ws
 * @ws: the set
 * @fid: the CQ, counter or EQ, fully opened
 * @kind: which
 * @efd: its eventfd
 *
 * Return: 0, -FI_ENOMEM, or epoll_ctl()'s -errno.
 */
int shim_wait_add(struct shim_wait *ws, struct fid *fid,
		  enum shim_wait_kind kind, int efd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct shim_wait_member *m;
	int ret;

	if (ws->wait_obj == FI_WAIT_MUTEX_COND)
		ev.events |= EPOLLET;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->fid = fid;
	m->kind = kind;
	m->efd = efd;
	if (kind == SHIM_WAIT_CNTR)
		shim_wait_cntr_values(fid, &m->value, &m->err);
	ev.data.ptr = m;
	pthread_mutex_lock(&ws->lock);
	ret = shim_wait_mc_start(ws);
	if (!ret)
		ret = epoll_ctl(ws->epfd, EPOLL_CTL_ADD, efd, &ev) ? -errno : 0;
	if (!ret) {
		m->next = ws->members;
		ws->members = m;
	}
	pthread_mutex_unlock(&ws->lock);
	if (ret)
		free(m);
	return ret;
}

/* A member leaves @ws (before its eventfd is closed). */
void shim_wait_del(struct shim_wait *ws, struct fid *fid)
{
	struct shim_wait_member **pp, *m = NULL;

	pthread_mutex_lock(&ws->lock);
	for (pp = &ws->members; *pp; pp = &(*pp)->next) {
		if ((*pp)->fid == fid) {
			m = *pp;
			*pp = m->next;
			(void)epoll_ctl(ws->epfd, EPOLL_CTL_DEL, m->efd, NULL);
			break;
		}
	}
	pthread_mutex_unlock(&ws->lock);
	free(m);
}

/*
 * Has @m news?  Reset first, then look (see the top of the file).
 */
static bool shim_wait_member_ready(struct shim_wait_member *m)
{
	uint64_t value, err;
	int ret;

	switch (m->kind) {
	case SHIM_WAIT_CQ:
		ret = m->fid->ops->control(m->fid, SHIM_CTRL_TRYWAIT, NULL);
		return ret == -FI_EAGAIN;
	case SHIM_WAIT_CNTR:
		/* Non-blocking: empties it, or finds it empty. */
		(void)eventfd_read(m->efd, &value);
		shim_wait_cntr_values(m->fid, &value, &err);
		if (value == m->value && err == m->err)
			return false;
		m->value = value;
		m->err = err;
		return true;
	case SHIM_WAIT_EQ:
		return shim_eq_wait_ready(m->fid);
	}
	return false;
}

/*
 * Any member with news?  Every member is looked at: each resets its fd.
 * FI_WAIT_MUTEX_COND: a signal the helper thread saw is news too (and is
 * reported once); the thread of this process is started first (fork()).
 */
static bool shim_wait_ready(struct shim_wait *ws)
{
	struct shim_wait_member *m;
	bool ready = false;

	pthread_mutex_lock(&ws->lock);
	if (ws->wait_obj == FI_WAIT_MUTEX_COND) {
		if (ws->members)
			(void)shim_wait_mc_start(ws);
		ready = atomic_exchange(&ws->signaled, false);
	}
	for (m = ws->members; m; m = m->next)
		ready |= shim_wait_member_ready(m);
	pthread_mutex_unlock(&ws->lock);
	return ready;
}

/*
 * fi_wait() of an FI_WAIT_MUTEX_COND set: the application's protocol (see
 * the top of the file), with @timeout ms (negative: for ever).
 */
static int shim_wait_mc_wait(struct shim_wait *ws, int timeout)
{
	struct timespec until;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	if (timeout > 0) {
		until.tv_sec += timeout / 1000;
		until.tv_nsec += (long)(timeout % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&ws->mutex);
	for (;;) {
		if (shim_wait_ready(ws)) {
			ret = 0;
			break;
		}
		/* Timed out: after one more look. */
		if (!timeout || ret == ETIMEDOUT) {
			ret = -FI_ETIMEDOUT;
			break;
		}
		shim_lazy_sleep_begin();
		ret = timeout < 0 ?
		      pthread_cond_wait(&ws->cond, &ws->mutex) :
		      pthread_cond_timedwait(&ws->cond, &ws->mutex, &until);
		shim_lazy_sleep_end();
		if (ret && ret != ETIMEDOUT) {
			ret = -ret;
			break;
		}
	}
	pthread_mutex_unlock(&ws->mutex);
	return ret;
}

/*
 * fi_wait(): 0 once a member has news (a completion or error in a CQ, a
 * changed counter, an event in an EQ), -FI_ETIMEDOUT when @timeout ms
 * passed without (timeout < 0: for ever), -FI_EINTR for a signal.
 */
static int shim_wait_wait(struct fid_wait *wait_fid, int timeout)
{
	struct shim_wait *ws = to_shim_wait(wait_fid);
	struct epoll_event ev[8];
	struct timespec start;
	int left, n;

	if (ws->wait_obj == FI_WAIT_MUTEX_COND)
		return shim_wait_mc_wait(ws, timeout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (shim_wait_ready(ws))
			return 0;
		left = shim_wait_left(timeout, &start);
		if (!left)
			return -FI_ETIMEDOUT;
		if (ws->wait_obj == FI_WAIT_YIELD) {
			sched_yield();
			continue;
		}
		shim_lazy_sleep_begin();
		n = epoll_wait(ws->epfd, ev, sizeof(ev) / sizeof(ev[0]), left);
		shim_lazy_sleep_end();
		if (n < 0 && errno == EINTR)
			return -FI_EINTR;
		if (n < 0)
			return -errno;
		/* Signaled: look again. */
	}
}

/*
 * FI_GETWAIT for the set and for its members: the epoll fd, as an int or
 * (FI_WAIT_POLLFD) as a one-entry list that never changes; the set's
 * mutex and condition variable (FI_WAIT_MUTEX_COND).
 */
int shim_wait_getwait(struct shim_wait *ws, void *arg)
{
	struct fi_wait_pollfd *pfd = arg;
	struct fi_mutex_cond *mc = arg;

	if (!arg)
		return -FI_EINVAL;
	if (ws->wait_obj == FI_WAIT_YIELD)
		return -FI_ENODATA;
	if (ws->wait_obj == FI_WAIT_MUTEX_COND) {
		mc->mutex = &ws->mutex;
		mc->cond = &ws->cond;
		return 0;
	}
	if (ws->wait_obj != FI_WAIT_POLLFD) {
		*(int *)arg = ws->epfd;
		return 0;
	}
	if (pfd->nfds < 1) {
		pfd->nfds = 1;
		return -FI_ETOOSMALL;
	}
	if (!pfd->fd)
		return -FI_EINVAL;
	pfd->fd[0] = (struct pollfd){ .fd = ws->epfd, .events = POLLIN };
	pfd->nfds = 1;
	pfd->change_index = 1;
	return 0;
}

static int shim_wait_control(struct fid *fid, int command, void *arg)
{
	struct shim_wait *ws = container_of(fid, struct shim_wait,
					    wait_fid.fid);

	switch (command) {
	case FI_GETWAIT:
		return shim_wait_getwait(ws, arg);
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = ws->wait_obj;
		return 0;
	case SHIM_CTRL_TRYWAIT:
		/* fi_trywait(): only the set is passed, not its members. */
		if (ws->wait_obj == FI_WAIT_YIELD)
			return -FI_ENOSYS;
		if (shim_wait_ready(ws))
			return -FI_EAGAIN;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

/* fi_poll(3): "must not be bound to any other opened resources". */
static int shim_wait_close(struct fid *fid)
{
	struct shim_wait *ws = container_of(fid, struct shim_wait,
					    wait_fid.fid);
	bool busy;

	pthread_mutex_lock(&ws->lock);
	busy = ws->members;
	pthread_mutex_unlock(&ws->lock);
	if (busy)
		return -FI_EBUSY;
	if (ws->wait_obj == FI_WAIT_MUTEX_COND) {
		shim_wait_mc_stop(ws);
		close(ws->stop_fd);
		pthread_cond_destroy(&ws->cond);
		pthread_mutex_destroy(&ws->mutex);
	}
	close(ws->epfd);
	pthread_mutex_destroy(&ws->lock);
	free(ws);
	return 0;
}

static const struct fi_ops shim_wait_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_wait_close,
	.bind = shim_no_bind,
	.control = shim_wait_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

static const struct fi_ops_wait shim_wait_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = shim_wait_wait,
};

/* FI_WAIT_MUTEX_COND: the pair FI_GETWAIT gives, and the stop fd. */
static int shim_wait_mc_init(struct shim_wait *ws)
{
	int ret;

	ret = -pthread_mutex_init(&ws->mutex, NULL);
	if (ret)
		return ret;
	ret = -pthread_cond_init(&ws->cond, NULL);
	if (ret)
		goto err_mutex;
	ws->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ws->stop_fd < 0) {
		ret = -errno;
		goto err_cond;
	}
	atomic_init(&ws->signaled, false);
	return 0;

err_cond:
	pthread_cond_destroy(&ws->cond);
err_mutex:
	pthread_mutex_destroy(&ws->mutex);
	return ret;
}

/**
 * shim_wait_open_own() - a set of its own, for a CQ or counter opened
 *	with FI_WAIT_MUTEX_COND
 * @fabric: the object's fabric
 * @out: the set: the object joins it as any member, and closes it after
 *	leaving it (shim_wait_close_own())
 *
 * Its FI_GETWAIT and the application's protocol are those of an
 * FI_WAIT_MUTEX_COND set (the top of the file), fi_trywait() being
 * called on the object itself.
 *
 * Return: 0, or what fi_wait_open() would answer.
 */
int shim_wait_open_own(struct shim_fabric *fabric, struct shim_wait **out)
{
	struct fi_wait_attr attr = { .wait_obj = FI_WAIT_MUTEX_COND };
	struct fid_wait *wait_fid;
	int ret;

	ret = shim_wait_open(&fabric->fabric_fid, &attr, &wait_fid);
	if (!ret)
		*out = to_shim_wait(wait_fid);
	return ret;
}

/* The set of shim_wait_open_own(), once its object has left it. */
void shim_wait_close_own(struct shim_wait *ws)
{
	(void)shim_wait_close(&ws->wait_fid.fid);
}

/**
 * shim_wait_open() - struct fi_ops_fabric.wait_open: fi_wait_open()
 * @fabric: a kfab fabric
 * @attr: wait_obj FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_POLLFD,
 *	FI_WAIT_YIELD or FI_WAIT_MUTEX_COND; flags 0
 * @waitset: out
 *
 * Return: 0; -FI_EINVAL without @attr or @waitset, or for an unknown
 * wait_obj (FI_WAIT_NONE and FI_WAIT_SET among them: a set waits on
 * something, and not on another set); -FI_EBADFLAGS for flags;
 * -FI_ENOMEM or -errno.
 */
int shim_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		   struct fid_wait **waitset)
{
	struct shim_wait *ws;
	int ret;

	if (!attr || !waitset)
		return -FI_EINVAL;
	switch (attr->wait_obj) {
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_POLLFD:
	case FI_WAIT_YIELD:
	case FI_WAIT_MUTEX_COND:
		break;
	default:
		return -FI_EINVAL;
	}
	if (attr->flags)
		return -FI_EBADFLAGS;
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return -FI_ENOMEM;
	ret = -pthread_mutex_init(&ws->lock, NULL);
	if (ret)
		goto err_free;
	ws->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ws->epfd < 0) {
		ret = -errno;
		goto err_lock;
	}
	ws->stop_fd = -1;
	if (attr->wait_obj == FI_WAIT_MUTEX_COND) {
		ret = shim_wait_mc_init(ws);
		if (ret)
			goto err_epoll;
	}
	ws->fabric = to_shim_fabric(fabric);
	ws->wait_obj = attr->wait_obj;
	ws->wait_fid.fid.fclass = FI_CLASS_WAIT;
	ws->wait_fid.fid.ops = (struct fi_ops *)&shim_wait_fi_ops;
	ws->wait_fid.ops = (struct fi_ops_wait *)&shim_wait_ops;
	*waitset = &ws->wait_fid;
	return 0;

err_epoll:
	close(ws->epfd);
err_lock:
	pthread_mutex_destroy(&ws->lock);
err_free:
	free(ws);
	return ret;
}
