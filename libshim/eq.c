// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: fid_eq, the event queue (fi_eq(3)).
 *
 * An EQ is a user-space object of its fabric: no kernel object backs it.
 * Its events come from the application (fi_eq_write) and from libshim
 * itself through shim_eq_post()/shim_eq_post_err(), e.g. the completion of
 * an asynchronous AV insert.  Events are kept in one FIFO list; an error
 * entry is reported in order: fi_eq_read() answers -FI_EAVAIL while the
 * entry at the head is an error, and fi_eq_readerr() takes it.
 *
 * Size and overflow.  attr->size (0: SHIM_EQ_DEFAULT_SIZE) bounds what the
 * application may insert: fi_eq_write() answers -FI_EAGAIN while the EQ
 * holds size events or more.  Events that libshim posts are never refused
 * for lack of room, since the operation they complete has already happened
 * and could not be retried: they are kept beyond size (entries are
 * allocated one by one, so nothing is preallocated for size either) and
 * counted in @beyond_size.  Only a failed allocation (-FI_ENOMEM) is
 * returned to the poster, which must then report the failure some other
 * way (the call that would have caused the event).  So the EQ never enters
 * fi_eq(3)'s "overrun" state and never answers -FI_EOVERRUN.
 *
 * Wait objects (attr->wait_obj).  Every EQ but FI_WAIT_NONE and
 * FI_WAIT_YIELD has a wait fd, @wfd: an epoll instance holding @efd (an
 * eventfd readable exactly while the EQ holds an event, normal or error),
 * @tfd (a timerfd, see below) and the eventfd of each CM hook's hidden
 * receive CQ.  fi_eq_sread() sleeps in poll() on @wfd.
 *   FI_WAIT_NONE        no fi_eq_sread (-FI_ENOSYS), no fi_trywait
 *   FI_WAIT_UNSPEC      FI_GETWAIT has nothing to hand out (-FI_ENOSYS)
 *   FI_WAIT_FD          FI_GETWAIT gives @wfd
 *   FI_WAIT_POLLFD      @wfd as a one-entry struct pollfd list
 *   FI_WAIT_MUTEX_COND  FI_GETWAIT gives a mutex and a condition variable
 *                       that every insertion broadcasts while holding the
 *                       mutex (see shim_eq_wake()); no control message
 *                       broadcasts it: see "Connection management"
 *   FI_WAIT_YIELD       fi_eq_sread spins with sched_yield()
 *   FI_WAIT_SET         @wfd, in the wait set attr->wait_set names
 *                       (wait.c); FI_GETWAIT gives the set's fd
 *
 * Connection management (cm.c).  Passive endpoints and FI_EP_MSG
 * endpoints bound to the EQ hang a struct shim_cm_hook on it: their
 * control messages arrive in hidden CQs, not here, so fi_eq_read() and
 * fi_eq_readerr() first run every hook (shim_eq_progress_cm()), which
 * turns what arrived into FI_CONNREQ/FI_CONNECTED/FI_SHUTDOWN events and
 * error entries with shim_eq_post().  A hook names the eventfd of its
 * hidden receive CQ (armed for good, so the kernel signals it on every
 * control message): shim_eq_attach_cm() puts it in @wfd, so @wfd becomes
 * readable when a control message is there, before anyone reads the EQ,
 * and a hook resets its eventfd before it reads its CQ, so nothing that
 * arrives after a look is missed.  fi_trywait() runs the hooks and then
 * answers from @count.  A hook also says when it wants to run again
 * without a message (a connection probes its peer every SHIM_CM_PROBE_MS,
 * cm.c): @tfd is armed for the earliest such time, so a waiter on @wfd
 * wakes then, and the look it must take (fi_trywait, fi_eq_read,
 * fi_eq_sread) runs the probe.  The condition variable of
 * FI_WAIT_MUTEX_COND is broadcast only when an event is inserted: an
 * application that waits on it alone sees CM events only once it reads
 * the EQ again, and fi_trywait() on such an EQ with hooks answers
 * -FI_EAGAIN, since its caller may hold the mutex that posting takes.
 *
 * Locking: @cm_lock (the hook list) before a hook's own object lock
 * before @lock; @lock protects the list, the counters and the eventfd's
 * state; every entry point takes it (FI_THREAD_SAFE).  @wait_mutex/@cond
 * only serve sleepers (UNSPEC, MUTEX_COND) and are never taken under
 * @lock; hooks never run under @wait_mutex, since posting takes it.
 */
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include <rdma/fi_eq.h>

#include "internal.h"

/**
 * struct shim_eq_entry - one event in an EQ
 * @next: the list, oldest first
 * @event: the event number (FI_AV_COMPLETE, ...) of a normal entry
 * @is_err: an error entry: @err is what fi_eq_readerr() returns
 * @len: bytes in @data (normal entries)
 * @min_len: the smallest buffer fi_eq_read() accepts for it; below @len
 *	     only for connection events, whose bytes past struct
 *	     fi_eq_cm_entry are connection data that fi_eq(3) lets the
 *	     application's buffer truncate
 * @err: the error (error entries); @err.err_data is our own copy or NULL
 * @data: the event (normal entries)
 */
struct shim_eq_entry {
	struct shim_eq_entry *next;
	uint32_t event;
	bool is_err;
	size_t len;
	size_t min_len;
	struct fi_eq_err_entry err;
	uint8_t data[];
};

/**
 * struct shim_eq - a fid_eq
 * @eq_fid: what libfabric sees; the first member
 * @fabric: the parent; holds one count in its eq_cnt for us
 * @api_version: the fabric's; decides how fi_eq_readerr() hands out err_data
 * @size: how many events the application may have queued (fi_eq_write)
 * @flags: attr->flags (FI_WRITE, FI_AFFINITY)
 * @wait_obj: attr->wait_obj
 * @lock: protects everything below
 * @head, @tail: the events, oldest first
 * @count: entries in the list, errors included
 * @beyond_size: events libshim posted while @count was @size or more
 * @bind_cnt: objects that refer to this EQ (shim_eq_bind()): no close
 * @saved_err_data: the err_data last handed out by fi_eq_readerr() in the
 *		    provider's buffer; freed by the next readerr or close
 * @efd: the eventfd (every wait object but NONE and YIELD), else -1;
 *	 its counter is 1 while @count > 0 and 0 otherwise
 * @tfd: a timerfd in @wfd, armed while a hook wants to run again, or -1
 * @tfd_armed: @tfd is armed (under @cm_lock)
 * @wfd: the wait fd (epoll: @efd, @tfd and the hooks' fds), or -1
 * @wait_set: FI_WAIT_SET: the set @wfd is in (wait.c), else NULL
 * @peer_owner: opened with FI_PEER: the owner's EQ, where every event
 *	goes (peer/av.c); else NULL
 * @wait_mutex, @cond: sleepers of FI_WAIT_UNSPEC and FI_WAIT_MUTEX_COND
 * @cm_lock: protects @cm_hooks and @tfd_armed
 * @cm_hooks: the connection-management objects bound to the EQ (cm.c)
 */
struct shim_eq {
	struct fid_eq eq_fid;
	struct shim_fabric *fabric;
	uint32_t api_version;
	size_t size;
	uint64_t flags;
	enum fi_wait_obj wait_obj;

	pthread_mutex_t lock;
	struct shim_eq_entry *head, *tail;
	size_t count;
	uint64_t beyond_size;
	unsigned int bind_cnt;
	void *saved_err_data;
	int efd, tfd, wfd;
	struct shim_wait *wait_set;

	pthread_mutex_t wait_mutex;
	pthread_cond_t cond;
	struct fid_eq *peer_owner;

	pthread_mutex_t cm_lock;
	struct shim_cm_hook *cm_hooks;
	bool tfd_armed;
};

static const struct fi_ops shim_eq_fi_ops;

static struct shim_eq *to_shim_eq(struct fid_eq *eq)
{
	return container_of(eq, struct shim_eq, eq_fid);
}

struct shim_eq *shim_eq_from_fid(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_EQ || fid->ops != &shim_eq_fi_ops)
		return NULL;
	return container_of(fid, struct shim_eq, eq_fid.fid);
}

static bool shim_eq_uses_cond(const struct shim_eq *eq)
{
	return eq->wait_obj == FI_WAIT_UNSPEC ||
	       eq->wait_obj == FI_WAIT_MUTEX_COND;
}

static bool shim_eq_has_cm(struct shim_eq *eq)
{
	bool ret;

	pthread_mutex_lock(&eq->cm_lock);
	ret = eq->cm_hooks;
	pthread_mutex_unlock(&eq->cm_lock);
	return ret;
}

/*
 * Turn what the bound CM objects received into events: without @lock.
 * Then arm @tfd for the earliest time a hook wants to run again (or
 * disarm it), after emptying it: a waiter on @wfd sleeps until then.
 */
static void shim_eq_progress_cm(struct shim_eq *eq)
{
	struct itimerspec its = { 0 };
	struct shim_cm_hook *hook;
	uint64_t expired;
	int next = -1, ms;

	/* Sends queued by lazy rings go before anybody waits on an EQ. */
	shim_lazy_flush();
	pthread_mutex_lock(&eq->cm_lock);
	/* An EQ without hooks pays no system call here. */
	if (!eq->cm_hooks && !eq->tfd_armed) {
		pthread_mutex_unlock(&eq->cm_lock);
		return;
	}
	if (eq->tfd_armed && read(eq->tfd, &expired, sizeof(expired)) < 0 &&
	    errno != EAGAIN)
		SHIM_WARN(EQ, "timerfd: %s\n", strerror(errno));
	for (hook = eq->cm_hooks; hook; hook = hook->next) {
		ms = hook->progress(hook);
		if (ms >= 0 && (next < 0 || ms < next))
			next = ms;
	}
	if (eq->tfd >= 0 && (next >= 0 || eq->tfd_armed)) {
		if (next == 0)
			next = 1;	/* it_value 0 would disarm */
		if (next > 0) {
			its.it_value.tv_sec = next / 1000;
			its.it_value.tv_nsec = (long)(next % 1000) * 1000000;
		}
		if (timerfd_settime(eq->tfd, 0, &its, NULL))
			SHIM_WARN(EQ, "timerfd: %s\n", strerror(errno));
		else
			eq->tfd_armed = next > 0;
	}
	pthread_mutex_unlock(&eq->cm_lock);
}

/* The eventfd follows @count across 0: called with @lock, after a change. */
static void shim_eq_efd_update(struct shim_eq *eq, size_t old_count)
{
	uint64_t val = 1;
	ssize_t n = 0;

	if (eq->efd < 0)
		return;
	if (!old_count && eq->count)
		n = write(eq->efd, &val, sizeof(val));
	else if (old_count && !eq->count)
		n = read(eq->efd, &val, sizeof(val));
	/*
	 * Neither fails while the counter moves between 0 and 1 as here;
	 * an application that read()s the fd itself breaks that.
	 */
	if (n < 0)
		SHIM_WARN(EQ, "eventfd: %s\n", strerror(errno));
}

/*
 * Sleepers on the condition variable re-check under @wait_mutex, which the
 * inserter takes after the entry is in the list: a sleeper either sees the
 * entry or is already waiting when the broadcast comes.
 */
static void shim_eq_wake(struct shim_eq *eq)
{
	if (!shim_eq_uses_cond(eq))
		return;
	pthread_mutex_lock(&eq->wait_mutex);
	pthread_cond_broadcast(&eq->cond);
	pthread_mutex_unlock(&eq->wait_mutex);
}

static void shim_eq_free_entry(struct shim_eq_entry *entry)
{
	if (entry->is_err)
		free(entry->err.err_data);
	free(entry);
}

/*
 * Appends @entry.  @from_app: an fi_eq_write(), refused with -FI_EAGAIN
 * when the EQ is full; libshim's own events are always taken.
 */
static int shim_eq_insert(struct shim_eq *eq, struct shim_eq_entry *entry,
			  bool from_app)
{
	size_t old_count;

	entry->next = NULL;
	pthread_mutex_lock(&eq->lock);
	if (eq->count >= eq->size) {
		if (from_app) {
			pthread_mutex_unlock(&eq->lock);
			return -FI_EAGAIN;
		}
		if (!eq->beyond_size++)
			SHIM_WARN(EQ, "EQ full (%zu events): kfab keeps its own events beyond attr->size\n",
				  eq->size);
	}
	old_count = eq->count++;
	if (eq->tail)
		eq->tail->next = entry;
	else
		eq->head = entry;
	eq->tail = entry;
	shim_eq_efd_update(eq, old_count);
	pthread_mutex_unlock(&eq->lock);

	shim_eq_wake(eq);
	return 0;
}

/* Takes the head off the list: called with @lock, the list not empty. */
static struct shim_eq_entry *shim_eq_remove_head(struct shim_eq *eq)
{
	struct shim_eq_entry *entry = eq->head;
	size_t old_count = eq->count--;

	eq->head = entry->next;
	if (!eq->head)
		eq->tail = NULL;
	shim_eq_efd_update(eq, old_count);
	return entry;
}

static struct shim_eq_entry *shim_eq_new_event(uint32_t event, const void *buf,
					       size_t len)
{
	struct shim_eq_entry *entry;

	if (len > SIZE_MAX - sizeof(*entry))
		return NULL;
	entry = calloc(1, sizeof(*entry) + len);
	if (!entry)
		return NULL;
	entry->event = event;
	entry->len = len;
	if (len)
		memcpy(entry->data, buf, len);
	/* Connection data past the header may be cut to the reader's buffer. */
	entry->min_len = len;
	if ((event == FI_CONNREQ || event == FI_CONNECTED ||
	     event == FI_SHUTDOWN) && len > sizeof(struct fi_eq_cm_entry))
		entry->min_len = sizeof(struct fi_eq_cm_entry);
	return entry;
}

static struct shim_eq_entry *shim_eq_new_err(const struct fi_eq_err_entry *err)
{
	struct shim_eq_entry *entry;

	entry = calloc(1, sizeof(*entry));
	if (!entry)
		return NULL;
	entry->is_err = true;
	entry->err = *err;
	entry->err.err_data = NULL;
	entry->err.err_data_size = 0;
	if (err->err_data && err->err_data_size) {
		entry->err.err_data = malloc(err->err_data_size);
		if (!entry->err.err_data) {
			free(entry);
			return NULL;
		}
		memcpy(entry->err.err_data, err->err_data, err->err_data_size);
		entry->err.err_data_size = err->err_data_size;
	}
	return entry;
}

/* ---- the internal API (internal.h) ---- */

int shim_eq_post(struct shim_eq *eq, uint32_t event, const void *buf,
		 size_t len)
{
	struct shim_eq_entry *entry;

	if (!eq || (len && !buf))
		return -FI_EINVAL;
	if (eq->peer_owner)
		return shim_eq_peer_forward(eq->peer_owner, event, buf, len);
	entry = shim_eq_new_event(event, buf, len);
	if (!entry)
		return -FI_ENOMEM;
	return shim_eq_insert(eq, entry, false);
}

int shim_eq_post_err(struct shim_eq *eq, const struct fi_eq_err_entry *err)
{
	struct shim_eq_entry *entry;

	if (!eq || !err)
		return -FI_EINVAL;
	if (eq->peer_owner)
		return shim_eq_peer_forward_err(eq->peer_owner, err);
	entry = shim_eq_new_err(err);
	if (!entry)
		return -FI_ENOMEM;
	return shim_eq_insert(eq, entry, false);
}

void shim_eq_attach_cm(struct shim_eq *eq, struct shim_cm_hook *hook)
{
	struct epoll_event ev = { .events = EPOLLIN };

	pthread_mutex_lock(&eq->cm_lock);
	hook->next = eq->cm_hooks;
	eq->cm_hooks = hook;
	/*
	 * Cannot fail for lack of anything but memory; then the EQ's wait fd
	 * misses this object's messages until the next look, as before.
	 */
	if (eq->wfd >= 0 && hook->fd >= 0 &&
	    epoll_ctl(eq->wfd, EPOLL_CTL_ADD, hook->fd, &ev))
		SHIM_WARN(EQ, "epoll_ctl: %s\n", strerror(errno));
	pthread_mutex_unlock(&eq->cm_lock);
}

/* Once this returns, @hook runs no more: its object may go. */
void shim_eq_detach_cm(struct shim_eq *eq, struct shim_cm_hook *hook)
{
	struct shim_cm_hook **pp;

	pthread_mutex_lock(&eq->cm_lock);
	for (pp = &eq->cm_hooks; *pp; pp = &(*pp)->next) {
		if (*pp == hook) {
			*pp = hook->next;
			break;
		}
	}
	if (eq->wfd >= 0 && hook->fd >= 0)
		(void)epoll_ctl(eq->wfd, EPOLL_CTL_DEL, hook->fd, NULL);
	pthread_mutex_unlock(&eq->cm_lock);
}

void shim_eq_bind(struct shim_eq *eq)
{
	pthread_mutex_lock(&eq->lock);
	eq->bind_cnt++;
	pthread_mutex_unlock(&eq->lock);
}

void shim_eq_unbind(struct shim_eq *eq)
{
	pthread_mutex_lock(&eq->lock);
	if (eq->bind_cnt)
		eq->bind_cnt--;
	else
		SHIM_WARN(EQ, "shim_eq_unbind() without shim_eq_bind()\n");
	pthread_mutex_unlock(&eq->lock);
}

/* ---- struct fi_ops_eq ---- */

static ssize_t shim_eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			    size_t len, uint64_t flags)
{
	struct shim_eq *eq = to_shim_eq(eq_fid);
	struct shim_eq_entry *entry;
	ssize_t ret;

	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	if (len && !buf)
		return -FI_EINVAL;

	pthread_mutex_lock(&eq->lock);
	entry = eq->head;
	if (!entry) {
		ret = -FI_EAGAIN;
		goto out;
	}
	if (entry->is_err) {
		ret = -FI_EAVAIL;
		goto out;
	}
	if (len < entry->min_len) {
		ret = -FI_ETOOSMALL;
		goto out;
	}

	ret = len < entry->len ? len : entry->len;
	if (ret)
		memcpy(buf, entry->data, ret);
	if (event)
		*event = entry->event;
	if (!(flags & FI_PEEK))
		free(shim_eq_remove_head(eq));
out:
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

/*
 * err_data, as fi_eq(3) asks: an application on API 1.5 or later that
 * passes a buffer (err_data and a non-zero err_data_size) gets a copy, cut
 * to its size, and err_data_size says how much was copied.  The buffer
 * the previous readerr handed out is not the application's (a struct
 * reused as it came back from the last call).  Otherwise
 * err_data points into a buffer of the provider that stays valid until the
 * next fi_eq_readerr() on this EQ (or its close), and err_data_size is its
 * size.  Without error data: err_data NULL and err_data_size 0 either way.
 */
static ssize_t shim_eq_readerr(struct fid_eq *eq_fid,
			       struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct shim_eq *eq = to_shim_eq(eq_fid);
	struct shim_eq_entry *entry;
	size_t user_size, n;
	bool user_buf;
	void *user_data;

	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	if (!buf)
		return -FI_EINVAL;

	user_data = buf->err_data;
	user_size = buf->err_data_size;

	pthread_mutex_lock(&eq->lock);
	entry = eq->head;
	if (!entry || !entry->is_err) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}

	/*
	 * An application that reuses its struct passes back what the last
	 * call gave it: the provider's buffer, which is freed below, is no
	 * buffer of its own.
	 */
	user_buf = FI_VERSION_GE(eq->api_version, FI_VERSION(1, 5)) &&
		   user_data && user_size && user_data != eq->saved_err_data;

	/* The buffer handed out last time is no longer promised. */
	free(eq->saved_err_data);
	eq->saved_err_data = NULL;

	*buf = entry->err;
	if (user_buf) {
		n = entry->err.err_data_size < user_size ?
		    entry->err.err_data_size : user_size;
		if (n)
			memcpy(user_data, entry->err.err_data, n);
		buf->err_data = user_data;
		buf->err_data_size = n;
	}

	if (!(flags & FI_PEEK)) {
		shim_eq_remove_head(eq);
		if (user_buf)
			free(entry->err.err_data);
		else
			eq->saved_err_data = entry->err.err_data;
		free(entry);
	}
	pthread_mutex_unlock(&eq->lock);
	return sizeof(*buf);
}

static ssize_t shim_eq_write(struct fid_eq *eq_fid, uint32_t event,
			     const void *buf, size_t len, uint64_t flags)
{
	struct shim_eq *eq = to_shim_eq(eq_fid);
	struct shim_eq_entry *entry;
	int ret;

	if (flags & ~KFAB_EQ_WRITE_ERR)
		return -FI_EBADFLAGS;
	/* fi_eq(3): without FI_WRITE the application may not write. */
	if (!(eq->flags & FI_WRITE)) {
		SHIM_INFO(EQ, "fi_eq_write on an EQ opened without FI_WRITE\n");
		return -FI_EINVAL;
	}
	if (len && !buf)
		return -FI_EINVAL;

	if (flags & KFAB_EQ_WRITE_ERR) {
		if (len != sizeof(struct fi_eq_err_entry) || !buf)
			return -FI_EINVAL;
		entry = shim_eq_new_err(buf);
	} else {
		entry = shim_eq_new_event(event, buf, len);
	}
	if (!entry)
		return -FI_ENOMEM;

	ret = shim_eq_insert(eq, entry, true);
	if (ret) {
		shim_eq_free_entry(entry);
		return ret;
	}
	return len;
}

/* The time left until @deadline in ms, rounded up; 0 once it passed. */
/* The op table's read and readerr: the CM objects' news first. */
static ssize_t shim_eq_read_op(struct fid_eq *eq_fid, uint32_t *event,
			       void *buf, size_t len, uint64_t flags)
{
	shim_eq_progress_cm(to_shim_eq(eq_fid));
	return shim_eq_read(eq_fid, event, buf, len, flags);
}

static ssize_t shim_eq_readerr_op(struct fid_eq *eq_fid,
				  struct fi_eq_err_entry *buf, uint64_t flags)
{
	shim_eq_progress_cm(to_shim_eq(eq_fid));
	return shim_eq_readerr(eq_fid, buf, flags);
}

static int shim_ms_left(const struct timespec *deadline)
{
	struct timespec now;
	int64_t ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = (int64_t)(deadline->tv_sec - now.tv_sec) * 1000000000 +
	     (deadline->tv_nsec - now.tv_nsec);
	if (ns <= 0)
		return 0;
	return (int)((ns + 999999) / 1000000);
}

static void shim_deadline(struct timespec *deadline, int timeout)
{
	clock_gettime(CLOCK_MONOTONIC, deadline);
	deadline->tv_sec += timeout / 1000;
	deadline->tv_nsec += (long)(timeout % 1000) * 1000000;
	if (deadline->tv_nsec >= 1000000000) {
		deadline->tv_sec++;
		deadline->tv_nsec -= 1000000000;
	}
}

/*
 * Every wait object with a wait fd: run the CM hooks, read, and sleep in
 * poll() on @wfd, which the first event or control message wakes (and a
 * hook's timer, see the top of the file); a signal ends the wait.
 */
static ssize_t shim_eq_sread_fd(struct shim_eq *eq, uint32_t *event,
				void *buf, size_t len, int timeout,
				uint64_t flags, const struct timespec *deadline)
{
	struct pollfd pfd = { .fd = eq->wfd, .events = POLLIN };
	ssize_t ret;
	int n;

	for (;;) {
		shim_eq_progress_cm(eq);
		ret = shim_eq_read(&eq->eq_fid, event, buf, len, flags);
		if (ret != -FI_EAGAIN)
			return ret;
		if (timeout >= 0) {
			timeout = shim_ms_left(deadline);
			if (!timeout)
				return -FI_EAGAIN;
		}
		shim_lazy_sleep_begin();
		n = poll(&pfd, 1, timeout);
		shim_lazy_sleep_end();
		if (n < 0 && errno == EINTR)
			return -FI_EAGAIN;
		if (n < 0)
			return -errno;
	}
}

/* FI_WAIT_YIELD */
static ssize_t shim_eq_sread_yield(struct shim_eq *eq, uint32_t *event,
				   void *buf, size_t len, int timeout,
				   uint64_t flags,
				   const struct timespec *deadline)
{
	ssize_t ret;

	for (;;) {
		shim_eq_progress_cm(eq);
		ret = shim_eq_read(&eq->eq_fid, event, buf, len, flags);
		if (ret != -FI_EAGAIN)
			return ret;
		if (timeout >= 0 && !shim_ms_left(deadline))
			return -FI_EAGAIN;
		sched_yield();
	}
}

/*
 * fi_eq_sread(): timeout < 0 waits for ever, 0 reads once, otherwise ms.
 * -FI_EAGAIN when the time is up with nothing read.  fi_eq(3) forbids it
 * on FI_WAIT_NONE EQs: -FI_ENOSYS, as libfabric's own providers answer.
 * An FI_WAIT_SET EQ sleeps on its own wait fd.
 */
static ssize_t shim_eq_sread(struct fid_eq *eq_fid, uint32_t *event,
			     void *buf, size_t len, int timeout,
			     uint64_t flags)
{
	struct shim_eq *eq = to_shim_eq(eq_fid);
	struct timespec deadline = { 0 };

	if (eq->wait_obj == FI_WAIT_NONE) {
		SHIM_INFO(EQ, "fi_eq_sread on an EQ opened with FI_WAIT_NONE\n");
		return -FI_ENOSYS;
	}
	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	if (timeout > 0)
		shim_deadline(&deadline, timeout);
	else if (!timeout)
		return shim_eq_read_op(eq_fid, event, buf, len, flags);
	if (eq->wfd >= 0)
		return shim_eq_sread_fd(eq, event, buf, len, timeout, flags,
					&deadline);
	return shim_eq_sread_yield(eq, event, buf, len, timeout, flags,
				   &deadline);
}

/*
 * kfab's prov_errno is a positive errno or FI_E* value, so fi_strerror()
 * names it; err_data holds nothing strerror needs.
 */
static const char *shim_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
				    const void *err_data, char *buf, size_t len)
{
	const char *str = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	(void)eq_fid; (void)err_data;
	if (buf && len) {
		snprintf(buf, len, "%s", str);
		return buf;
	}
	return str;
}

static const struct fi_ops_eq shim_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = shim_eq_read_op,
	.readerr = shim_eq_readerr_op,
	.write = shim_eq_write,
	.sread = shim_eq_sread,
	.strerror = shim_eq_strerror,
};

/* ---- struct fi_ops ---- */

static void shim_eq_close_fds(struct shim_eq *eq)
{
	if (eq->wfd >= 0)
		close(eq->wfd);
	if (eq->tfd >= 0)
		close(eq->tfd);
	if (eq->efd >= 0)
		close(eq->efd);
	eq->efd = eq->tfd = eq->wfd = -1;
}

/*
 * fi_close(): -FI_EBUSY while another object is bound to the EQ, and then
 * nothing changes.  Events still queued are dropped, as fi_eq(3) says.
 */
static int shim_eq_close(struct fid *fid)
{
	struct shim_eq *eq = container_of(fid, struct shim_eq, eq_fid.fid);
	struct shim_fabric *fab = eq->fabric;
	struct shim_eq_entry *entry, *next;
	unsigned int binds;

	pthread_mutex_lock(&eq->lock);
	binds = eq->bind_cnt;
	pthread_mutex_unlock(&eq->lock);
	if (binds) {
		SHIM_WARN(EQ, "EQ still bound to %u object(s)\n", binds);
		return -FI_EBUSY;
	}
	if (eq->wait_set)
		shim_wait_del(eq->wait_set, &eq->eq_fid.fid);

	if (eq->beyond_size)
		SHIM_INFO(EQ, "EQ of size %zu held %llu provider event(s) beyond its size\n",
			  eq->size, (unsigned long long)eq->beyond_size);
	for (entry = eq->head; entry; entry = next) {
		next = entry->next;
		shim_eq_free_entry(entry);
	}
	free(eq->saved_err_data);
	shim_eq_close_fds(eq);
	pthread_cond_destroy(&eq->cond);
	pthread_mutex_destroy(&eq->wait_mutex);
	pthread_mutex_destroy(&eq->cm_lock);
	pthread_mutex_destroy(&eq->lock);

	pthread_mutex_lock(&fab->lock);
	fab->eq_cnt--;
	pthread_mutex_unlock(&fab->lock);
	free(eq);
	return 0;
}

static int shim_eq_getwait(struct shim_eq *eq, void *arg)
{
	struct fi_mutex_cond *mc;
	struct fi_wait_pollfd *pfd;

	if (eq->wait_set)
		return shim_wait_getwait(eq->wait_set, arg);
	if (!arg)
		return -FI_EINVAL;
	switch (eq->wait_obj) {
	case FI_WAIT_FD:
		*(int *)arg = eq->wfd;
		return 0;
	case FI_WAIT_POLLFD:
		pfd = arg;
		if (pfd->nfds < 1) {
			pfd->nfds = 1;
			return -FI_ETOOSMALL;
		}
		if (!pfd->fd)
			return -FI_EINVAL;
		pfd->fd[0] = (struct pollfd){ .fd = eq->wfd, .events = POLLIN };
		pfd->nfds = 1;
		/* The set never changes while the EQ is open. */
		pfd->change_index = 1;
		return 0;
	case FI_WAIT_MUTEX_COND:
		mc = arg;
		mc->mutex = &eq->wait_mutex;
		mc->cond = &eq->cond;
		return 0;
	default:
		/* NONE has no wait object; UNSPEC and YIELD none to hand out. */
		return -FI_ENOSYS;
	}
}

static int shim_eq_control(struct fid *fid, int command, void *arg)
{
	struct shim_eq *eq = container_of(fid, struct shim_eq, eq_fid.fid);
	int ret;

	switch (command) {
	case FI_GETWAIT:
		return shim_eq_getwait(eq, arg);
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = eq->wait_obj;
		return 0;
	case SHIM_CTRL_TRYWAIT:
		/* fi_trywait(): 0 when empty, so the caller may block. */
		if (eq->wait_obj == FI_WAIT_NONE)
			return -FI_ENOSYS;
		/*
		 * FI_WAIT_MUTEX_COND: the caller may hold @wait_mutex, which
		 * posting an event takes: the hooks cannot run here, so an
		 * EQ with some is never ready to sleep on.
		 */
		if (eq->wait_obj == FI_WAIT_MUTEX_COND && shim_eq_has_cm(eq))
			return -FI_EAGAIN;
		/* The hooks reset their fds before they look: see the top. */
		shim_eq_progress_cm(eq);
		pthread_mutex_lock(&eq->lock);
			ret = eq->count ? -FI_EAGAIN : 0;
		pthread_mutex_unlock(&eq->lock);
		return ret;
	default:
		return -FI_ENOSYS;
	}
}

/* wait.c: events to read, after the CM hooks ran. */
bool shim_eq_wait_ready(struct fid *fid)
{
	struct shim_eq *eq = container_of(fid, struct shim_eq, eq_fid.fid);
	bool ready;

	shim_eq_progress_cm(eq);
	pthread_mutex_lock(&eq->lock);
	ready = eq->count;
	pthread_mutex_unlock(&eq->lock);
	return ready;
}

static const struct fi_ops shim_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_eq_close,
	.bind = shim_no_bind,
	.control = shim_eq_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

/* ---- fi_eq_open ---- */

static int shim_eq_check_attr(const struct fi_eq_attr *attr)
{
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_POLLFD:
	case FI_WAIT_MUTEX_COND:
	case FI_WAIT_YIELD:
	case FI_WAIT_SET:	/* the set: shim_eq_open() */
		break;
	default:
		SHIM_INFO(EQ, "unknown wait_obj %d\n", (int)attr->wait_obj);
		return -FI_EINVAL;
	}
	if (attr->flags & ~(uint64_t)(FI_WRITE | FI_AFFINITY | FI_PEER)) {
		SHIM_INFO(EQ, "EQ flags 0x%llx not supported\n",
			  (unsigned long long)attr->flags);
		return -FI_EBADFLAGS;
	}
	/*
	 * No interrupt is ever raised for an EQ: the signaling vector is a
	 * hint with nothing to steer, accepted and ignored.
	 */
	if (attr->flags & FI_AFFINITY)
		SHIM_INFO(EQ, "signaling_vector %d ignored: kfab EQs raise no interrupts\n",
			  attr->signaling_vector);
	return 0;
}

/* @efd, @tfd and @wfd holding both (see the top of the file). */
static int shim_eq_init_wfd(struct shim_eq *eq)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ret;

	eq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (eq->efd < 0)
		goto err;
	eq->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (eq->tfd < 0)
		goto err;
	eq->wfd = epoll_create1(EPOLL_CLOEXEC);
	if (eq->wfd < 0)
		goto err;
	if (epoll_ctl(eq->wfd, EPOLL_CTL_ADD, eq->efd, &ev) ||
	    epoll_ctl(eq->wfd, EPOLL_CTL_ADD, eq->tfd, &ev))
		goto err;
	return 0;

err:
	ret = -errno;
	SHIM_WARN(EQ, "wait fd: %s\n", strerror(errno));
	shim_eq_close_fds(eq);
	return ret;
}

static int shim_eq_init_wait(struct shim_eq *eq)
{
	int ret;

	eq->efd = -1;
	eq->tfd = -1;
	eq->wfd = -1;
	if (eq->wait_obj != FI_WAIT_NONE && eq->wait_obj != FI_WAIT_YIELD) {
		ret = shim_eq_init_wfd(eq);
		if (ret)
			return ret;
	}

	/*
	 * Default attributes: an application that gets them through
	 * FI_GETWAIT (FI_WAIT_MUTEX_COND) may pthread_cond_timedwait() with a
	 * CLOCK_REALTIME deadline, as for any condition variable.  kfab's own
	 * timed waits use pthread_cond_clockwait() on CLOCK_MONOTONIC.
	 */
	ret = -pthread_mutex_init(&eq->wait_mutex, NULL);
	if (ret)
		goto err_efd;
	ret = -pthread_cond_init(&eq->cond, NULL);
	if (ret)
		goto err_mutex;
	return 0;

err_mutex:
	pthread_mutex_destroy(&eq->wait_mutex);
err_efd:
	shim_eq_close_fds(eq);
	return ret;
}

/**
 * shim_eq_open() - struct fi_ops_fabric.eq_open: fi_eq_open() for kfab
 * @fabric: a kfab fabric
 * @attr: size (0: SHIM_EQ_DEFAULT_SIZE), flags (FI_WRITE, FI_AFFINITY),
 *	  wait_obj (see the top of this file), signaling_vector (ignored)
 * @eq: out: the new EQ
 * @context: the application's context for the fid
 *
 * Return: 0; -FI_EINVAL for a NULL @attr or @eq, an unknown wait_obj, or
 * FI_WAIT_SET without a kfab wait set of @fabric; -FI_EBADFLAGS for other
 * flags; -FI_ENOMEM; -errno when no eventfd can be had.
 */
int shim_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq_fid, void *context)
{
	struct shim_fabric *fab = to_shim_fabric(fabric);
	struct fid_eq *owner = NULL;
	struct shim_wait *ws = NULL;
	struct shim_eq *eq;
	int ret;

	if (!attr || !eq_fid)
		return -FI_EINVAL;
	ret = shim_eq_check_attr(attr);
	if (ret)
		return ret;
	if (attr->wait_obj == FI_WAIT_SET) {
		ws = shim_wait_from_fid(attr->wait_set, fab);
		if (!ws)
			return -FI_EINVAL;
	}
	/* fi_peer(3): events go to the owner's EQ, which does the waiting. */
	if (attr->flags & FI_PEER) {
		ret = shim_eq_peer_check(context, &owner);
		if (ret)
			return ret;
		context = NULL;
	}

	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->fabric = fab;
	eq->api_version = fabric->api_version;
	eq->size = attr->size ? attr->size : SHIM_EQ_DEFAULT_SIZE;
	eq->flags = attr->flags;
	eq->wait_obj = attr->wait_obj;

	ret = -pthread_mutex_init(&eq->lock, NULL);
	if (ret)
		goto err_free;
	ret = -pthread_mutex_init(&eq->cm_lock, NULL);
	if (ret)
		goto err_lock;
	ret = shim_eq_init_wait(eq);
	if (ret)
		goto err_cm_lock;

	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = (struct fi_ops *)&shim_eq_fi_ops;
	eq->eq_fid.ops = (struct fi_ops_eq *)(owner ? &shim_eq_peer_ops :
							&shim_eq_ops);
	eq->peer_owner = owner;
	if (ws) {
		ret = shim_wait_add(ws, &eq->eq_fid.fid, SHIM_WAIT_EQ, eq->wfd);
		if (ret)
			goto err_wait;
		eq->wait_set = ws;
	}

	pthread_mutex_lock(&fab->lock);
	fab->eq_cnt++;
	pthread_mutex_unlock(&fab->lock);
	*eq_fid = &eq->eq_fid;
	SHIM_DBG(EQ, "EQ opened: size %zu, wait_obj %d, flags 0x%llx\n",
		 eq->size, (int)eq->wait_obj, (unsigned long long)eq->flags);
	return 0;

err_wait:
	shim_eq_close_fds(eq);
	pthread_cond_destroy(&eq->cond);
	pthread_mutex_destroy(&eq->wait_mutex);
err_cm_lock:
	pthread_mutex_destroy(&eq->cm_lock);
err_lock:
	pthread_mutex_destroy(&eq->lock);
err_free:
	free(eq);
	return ret;
}
