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
 * FI_WAIT_MUTEX_COND sets are -FI_ENOSYS: the kernel signals members
 * through eventfds, and only a thread of the process could turn those
 * into broadcasts of the application's condition variable; kfab runs no
 * threads of its own.
 *
 * Lifetime: a member leaves the set when it is closed (shim_wait_del()),
 * and the set answers fi_close() with -FI_EBUSY while it has members.
 * Locking: @lock (the member list) before any member's own locks; members
 * call shim_wait_add()/shim_wait_del() holding none of theirs.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
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
 * @wait_obj: FI_WAIT_FD, FI_WAIT_UNSPEC, FI_WAIT_POLLFD (an epoll fd) or
 *	FI_WAIT_YIELD
 * @epfd: the epoll fd
 * @lock: protects @members
 * @members: newest first
 */
struct shim_wait {
	struct fid_wait wait_fid;
	struct shim_fabric *fabric;
	enum fi_wait_obj wait_obj;
	int epfd;
	pthread_mutex_t lock;
	struct shim_wait_member *members;
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

/* Any member with news?  Every member is looked at: each resets its fd. */
static bool shim_wait_ready(struct shim_wait *ws)
{
	struct shim_wait_member *m;
	bool ready = false;

	pthread_mutex_lock(&ws->lock);
	for (m = ws->members; m; m = m->next)
		ready |= shim_wait_member_ready(m);
	pthread_mutex_unlock(&ws->lock);
	return ready;
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
		n = epoll_wait(ws->epfd, ev, sizeof(ev) / sizeof(ev[0]), left);
		if (n < 0 && errno == EINTR)
			return -FI_EINTR;
		if (n < 0)
			return -errno;
		/* Signaled: look again. */
	}
}

/*
 * FI_GETWAIT for the set and for its members: the epoll fd, as an int or
 * (FI_WAIT_POLLFD) as a one-entry list that never changes.
 */
int shim_wait_getwait(struct shim_wait *ws, void *arg)
{
	struct fi_wait_pollfd *pfd = arg;

	if (!arg)
		return -FI_EINVAL;
	if (ws->wait_obj == FI_WAIT_YIELD)
		return -FI_ENODATA;
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

/**
 * shim_wait_open() - struct fi_ops_fabric.wait_open: fi_wait_open()
 * @fabric: a kfab fabric
 * @attr: wait_obj FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_POLLFD or
 *	FI_WAIT_YIELD; flags 0
 * @waitset: out
 *
 * Return: 0; -FI_EINVAL without @attr or @waitset, or for an unknown
 * wait_obj (FI_WAIT_NONE and FI_WAIT_SET among them: a set waits on
 * something, and not on another set); -FI_EBADFLAGS for flags;
 * -FI_ENOSYS for FI_WAIT_MUTEX_COND (see the top of the file); -FI_ENOMEM or
 * -errno.
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
		break;
	case FI_WAIT_MUTEX_COND:
		SHIM_INFO(CORE, "wait sets are epoll fds: no FI_WAIT_MUTEX_COND\n");
		return -FI_ENOSYS;
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
	ws->fabric = to_shim_fabric(fabric);
	ws->wait_obj = attr->wait_obj;
	ws->wait_fid.fid.fclass = FI_CLASS_WAIT;
	ws->wait_fid.fid.ops = (struct fi_ops *)&shim_wait_fi_ops;
	ws->wait_fid.ops = (struct fi_ops_wait *)&shim_wait_ops;
	*waitset = &ws->wait_fid;
	return 0;

err_lock:
	pthread_mutex_destroy(&ws->lock);
err_free:
	free(ws);
	return ret;
}
