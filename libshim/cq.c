// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: fid_cq.  A CQ is a kernel CQ (KFAB_IOC_CQ_OPEN) whose ring is
 * mapped into the process: fi_cq_read() copies entries out of the ring and
 * moves the consumer index without a system call.  Only two slow paths
 * enter the kernel: KFAB_IOC_CQ_DRAIN, when the ring is empty and the
 * kernel says completions wait in its overflow list, and
 * KFAB_IOC_CQ_READERR for error completions.
 *
 * The ring protocol, and which barrier pairs with which, is written down
 * once, beside the ring in uapi/linux/kfab.h; (C1)-(C3) below refer to it.
 * Every ring access goes through libshim/barrier.h.
 *
 * Waiting (FI_WAIT_FD, and FI_WAIT_UNSPEC, which is the same here): the CQ
 * has an eventfd that the kernel signals on every completion while the
 * "armed" word of the consumer page is non-zero.  A waiter arms, issues a
 * full barrier, looks at the ring once more and only then sleeps in poll()
 * (C2): either it sees the completion, or the kernel sees armed.  The word
 * stays armed while any thread waits and after fi_trywait() has armed it
 * for an application that polls the fd itself.  FI_WAIT_NONE and
 * FI_WAIT_YIELD have no fd: fi_cq_sread() yields the CPU while it waits.
 */
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "barrier.h"
#include "internal.h"

/**
 * struct shim_cq - a fid_cq
 * @cq_fid: what libfabric sees
 * @domain: the parent
 * @fd: the fabric's device file
 * @id: the kernel's id of the CQ
 * @format: the entry format the application reads
 * @wait_obj: FI_WAIT_NONE, FI_WAIT_FD, FI_WAIT_UNSPEC, FI_WAIT_YIELD,
 *	FI_WAIT_SET or FI_WAIT_MUTEX_COND
 * @wait_cond: FI_CQ_COND_NONE or FI_CQ_COND_THRESHOLD
 * @efd: the eventfd (FI_WAIT_FD, FI_WAIT_UNSPEC, FI_WAIT_SET), else -1
 * @wait_set: FI_WAIT_SET: the set @efd is in (wait.c), else NULL
 * @own_wait: FI_WAIT_MUTEX_COND: @wait_set, the CQ's own (closed with it)
 * @lock: serialises consumers, the provider's err_data buffer and arming
 * @ring_map: the ring region (read-only), @ring_len bytes
 * @cons_map: the consumer region (read-write), @cons_len bytes
 * @tail: the kernel's producer index, in @ring_map
 * @overflow: completions in the kernel's overflow list, in @ring_map
 * @err_count: error completions waiting, in @ring_map
 * @flags: the ring's KFAB_CQ_RING_* word, in @ring_map
 * @slots: the first slot, in @ring_map
 * @head: the consumer index, in @cons_map
 * @armed: the armed word, in @cons_map
 * @entries: slots in the ring
 * @mask: @entries - 1
 * @entry_size: bytes from one slot to the next
 * @local_head: our copy of the consumer index: never read back from
 *	@head, which the application could scribble over; changed under
 *	@lock, read without it to see whether the ring has entries
 * @fast_reads: reads in a row that took the ring's entries without
 *	progressing the endpoints first (shim_cq_ring_ready()); a hint, read
 *	and written without @lock: a lost update costs one progress call
 * @waiters: threads blocked in fi_cq_sread() (under @lock)
 * @trywait_armed: fi_trywait() armed the CQ for good (under @lock)
 * @signaled: fi_cq_signal() was called and no fi_cq_sread() saw it yet
 *	(under @lock)
 * @err_data: the provider's err_data buffer (fi_cq_readerr(3))
 * @eps: the endpoints bound to the CQ, progressed before every read
 * @hooks: fi_peer(3) (peer/cq.c): the CQ was opened with FI_PEER or
 *	exported to other providers; else NULL.  Set once, after @peer, and
 *	read without @lock (shim_cq_hooks())
 * @peer: the hooks' state
 * @err_held: @held is a kernel error taken out of the kernel for the
 *	hooks' filter, which kept it: readerr returns it first (under @lock)
 * @held: that error; its err_data is in @held_data
 * @poll_refs: poll sets holding the CQ (poll.c): fi_close() is -FI_EBUSY
 */
struct shim_cq {
	struct fid_cq cq_fid;
	struct shim_domain *domain;
	int fd;
	uint32_t id;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	enum fi_cq_wait_cond wait_cond;
	int efd;
	struct shim_wait *wait_set;
	struct shim_wait *own_wait;
	pthread_mutex_t lock;
	void *ring_map;
	size_t ring_len;
	void *cons_map;
	size_t cons_len;
	const uint32_t *tail;
	const uint32_t *overflow;
	const uint32_t *err_count;
	const uint32_t *flags;
	const uint8_t *slots;
	uint32_t *head;
	uint32_t *armed;
	uint32_t entries;
	uint32_t mask;
	uint32_t entry_size;
	uint32_t local_head;
	unsigned int fast_reads;
	unsigned int waiters;
	bool trywait_armed;
	bool signaled;
	uint8_t err_data[KFAB_CQ_ERR_DATA_MAX];
	struct shim_ep_list eps;
	unsigned int poll_refs;
	const struct shim_cq_hooks *hooks;
	void *peer;
	bool err_held;
	struct kfab_cq_readerr held;
	uint8_t held_data[KFAB_CQ_ERR_DATA_MAX];
};

static inline struct shim_cq *to_shim_cq(struct fid_cq *cq)
{
	return container_of(cq, struct shim_cq, cq_fid);
}

/* ---- waiting on an eventfd (shared with cntr.c) ---- */

static long shim_ms_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 +
	       (now.tv_nsec - start->tv_nsec) / 1000000;
}

/* Milliseconds left of @timeout since @start: -1 for ever, 0 when up. */
int shim_timeout_left(int timeout, const struct timespec *start)
{
	long left;

	if (timeout < 0)
		return -1;
	left = timeout - shim_ms_since(start);
	return left > 0 ? (int)left : 0;
}

void shim_eventfd_wait(int efd, int timeout_ms)
{
	struct pollfd pfd = { .fd = efd, .events = POLLIN };

	/* EINTR or a timeout: the caller looks again either way. */
	shim_lazy_sleep_begin();
	(void)poll(&pfd, 1, timeout_ms);
	shim_lazy_sleep_end();
}

/* The eventfd is non-blocking: this empties it, or finds it empty. */
void shim_eventfd_reset(int efd)
{
	eventfd_t val;

	(void)eventfd_read(efd, &val);
}

int shim_get_kernel_handle(void *arg, int fd, uint32_t id)
{
	struct fi_fid_var *var = arg;
	struct kfab_kernel_handle *h;

	if (!var)
		return -FI_EINVAL;
	if (var->name != KFAB_FID_KERNEL_HANDLE)
		return -FI_ENOSYS;
	h = var->val;
	if (!h)
		return -FI_EINVAL;
	h->fd = fd;
	h->id = id;
	return 0;
}

/* ---- endpoints bound to CQs and counters: manual progress ---- */

int shim_ep_list_init(struct shim_ep_list *list)
{
	list->eps = NULL;
	list->count = 0;
	list->cap = 0;
	return -pthread_mutex_init(&list->lock, NULL);
}

void shim_ep_list_destroy(struct shim_ep_list *list)
{
	free(list->eps);
	list->eps = NULL;
	pthread_mutex_destroy(&list->lock);
}

int shim_ep_list_add(struct shim_ep_list *list, struct shim_ep *ep)
{
	int ret = 0;

	pthread_mutex_lock(&list->lock);
	if (list->count == list->cap) {
		size_t cap = list->cap ? list->cap * 2 : 4;
		struct shim_ep **eps = realloc(list->eps, cap * sizeof(*eps));

		if (!eps) {
			ret = -FI_ENOMEM;
			goto out;
		}
		list->eps = eps;
		list->cap = cap;
	}
	list->eps[list->count++] = ep;
out:
	pthread_mutex_unlock(&list->lock);
	return ret;
}

/* Removes one occurrence of @ep; order does not matter. */
void shim_ep_list_del(struct shim_ep_list *list, struct shim_ep *ep)
{
	size_t i;

	pthread_mutex_lock(&list->lock);
	for (i = 0; i < list->count; i++) {
		if (list->eps[i] == ep) {
			list->eps[i] = list->eps[--list->count];
			break;
		}
	}
	pthread_mutex_unlock(&list->lock);
}

size_t shim_ep_list_count(struct shim_ep_list *list)
{
	size_t n;

	pthread_mutex_lock(&list->lock);
	n = list->count;
	pthread_mutex_unlock(&list->lock);
	return n;
}

/*
 * The list's lock keeps every endpoint alive meanwhile: fi_close() of an
 * endpoint detaches it (under this lock) before it frees anything.
 */
bool shim_ep_list_progress(struct shim_ep_list *list)
{
	bool pending = false;
	size_t i;

	/* Lazy rings of other endpoints of the process go too (ring.c). */
	shim_lazy_flush();
	shim_data_lock(&list->lock, list->serial);
	for (i = 0; i < list->count; i++)
		pending |= shim_ep_progress(list->eps[i]);
	shim_data_unlock(&list->lock, list->serial);
	return pending;
}

/*
 * fi_cq_readfrom(): the kernel reports a source as an index of the
 * receiving endpoint's AV; an AV with FI_AV_USER_ID wants the id the
 * application gave that index (fi_av(3)).  The CQ entry does not say which
 * endpoint received, so the translation is made when every endpoint bound
 * to the CQ uses the same AV (the common case); otherwise the index is
 * returned.  Called without cq->lock (list lock, then the AV's lock).
 */
static void shim_cq_user_ids(struct shim_cq *cq, fi_addr_t *src, size_t n)
{
	struct shim_ep_list *list = &cq->eps;
	struct shim_av *av = NULL, *ep_av;
	size_t i;

	pthread_mutex_lock(&list->lock);
	for (i = 0; i < list->count; i++) {
		ep_av = shim_read_once(&list->eps[i]->av);
		if (!ep_av)
			continue;
		if (av && av != ep_av) {
			av = NULL;
			break;
		}
		av = ep_av;
	}
	if (av)
		for (i = 0; i < n; i++)
			if (src[i] != FI_ADDR_NOTAVAIL)
				src[i] = shim_av_user_id(av, src[i]);
	pthread_mutex_unlock(&list->lock);
}

/* ---- fi_peer(3): the hooks (peer/cq.c) ---- */

/* Every CQ's, once the process has a peer SRX; never unset. */
static const struct shim_cq_hooks *shim_cq_global_hooks;

/* The hooks of @cq, or NULL: a CQ that only kfab's kernel fills. */
static const struct shim_cq_hooks *shim_cq_hooks(struct shim_cq *cq)
{
	const struct shim_cq_hooks *h = shim_load_acquire(&cq->hooks);

	return h ? h : shim_load_acquire(&shim_cq_global_hooks);
}

/*
 * A read without cq->lock (shim_data_lock()): FI_THREAD_DOMAIN, and no
 * hooks, whose peers may write the CQ from threads of their own.
 */
static bool shim_cq_serial(struct shim_cq *cq)
{
	return cq->domain->serial && !shim_cq_hooks(cq);
}

void shim_cq_set_global_hooks(const struct shim_cq_hooks *hooks)
{
	shim_store_release(&shim_cq_global_hooks, hooks);
}

void *shim_cq_set_hooks(struct shim_cq *cq, const struct shim_cq_hooks *hooks,
			void *peer)
{
	void *cur;

	pthread_mutex_lock(&cq->lock);
	if (!cq->hooks) {
		cq->peer = peer;
		/* Published whole: readers look without the lock. */
		shim_store_release(&cq->hooks, hooks);
	}
	cur = cq->hooks == hooks ? cq->peer : NULL;
	pthread_mutex_unlock(&cq->lock);
	return cur;
}

void *shim_cq_peer(struct shim_cq *cq, const struct shim_cq_hooks *hooks)
{
	return shim_load_acquire(&cq->hooks) == hooks ? cq->peer : NULL;
}

static bool shim_cq_hook_progress(struct shim_cq *cq)
{
	const struct shim_cq_hooks *h = shim_cq_hooks(cq);

	return h && h->progress(cq);
}

static int shim_cq_hook_filter(struct shim_cq *cq, struct kfab_cq_entry *e,
			       int err, bool commit)
{
	const struct shim_cq_hooks *h = shim_cq_hooks(cq);

	return h ? h->filter(cq, e, err, commit) : SHIM_CQ_KEEP;
}

static size_t shim_cq_hook_queued(struct shim_cq *cq)
{
	const struct shim_cq_hooks *h = shim_cq_hooks(cq);

	return h ? h->queued(cq) : 0;
}

static bool shim_cq_hook_err_queued(struct shim_cq *cq)
{
	const struct shim_cq_hooks *h = shim_cq_hooks(cq);

	return h && h->err_queued(cq);
}

/* ---- the ring ---- */

/*
 * Entries the kernel has for us (in the ring and in its overflow list),
 * and those queued in the library (the hooks').
 */
static uint32_t shim_cq_pending(struct shim_cq *cq)
{
	/* (C1): pairs with the kernel's release of tail (P2). */
	uint32_t avail = shim_load_acquire(cq->tail) - cq->local_head;

	if (avail > cq->entries)	/* cannot happen: the kernel wrote it */
		avail = cq->entries;
	avail += shim_read_once(cq->overflow);
	avail += (uint32_t)shim_cq_hook_queued(cq);
	return avail;
}

/* One slot consumed (cq->lock held); readers without it look at the index. */
static void shim_cq_step(struct shim_cq *cq)
{
	shim_write_once(&cq->local_head, cq->local_head + 1);
}

/*
 * With hooks, some kernel errors may be the extension's own (a peer SRX's
 * peek that found nothing): under cq->lock, take kernel errors out until
 * the filter keeps one, and hold it.  True when one is held.
 */
static bool shim_cq_hold_err_locked(struct shim_cq *cq)
{
	struct kfab_cq_readerr cmd;
	struct kfab_cq_entry e;

	while (!cq->err_held && shim_read_once(cq->err_count)) {
		memset(&cmd, 0, sizeof(cmd));
		cmd.cq_id = cq->id;
		cmd.err_data = (uintptr_t)cq->held_data;
		cmd.err_data_size = sizeof(cq->held_data);
		if (shim_dev_cq_readerr(cq->fd, &cmd))
			break;
		e = cmd.out_entry;
		if (shim_cq_hook_filter(cq, &e, cmd.out_err, true) ==
		    SHIM_CQ_DROP)
			continue;
		cmd.out_entry = e;
		cq->held = cmd;
		cq->err_held = true;
	}
	return cq->err_held;
}

/*
 * An error completion waits: the kernel's, or one the hooks queued.  With
 * hooks, a kernel error counts only once their filter kept it.  Called
 * with cq->lock held.
 */
static bool shim_cq_err_waiting_locked(struct shim_cq *cq)
{
	if (shim_cq_hooks(cq) && shim_read_once(cq->err_count) &&
	    shim_cq_hold_err_locked(cq))
		return true;
	return cq->err_held || shim_read_once(cq->err_count) ||
	       shim_cq_hook_err_queued(cq);
}

/* The same without the lock, which it takes only to filter an error. */
static bool shim_cq_err_waiting(struct shim_cq *cq)
{
	bool held;

	if (shim_cq_hooks(cq) && shim_read_once(cq->err_count)) {
		pthread_mutex_lock(&cq->lock);
		held = shim_cq_hold_err_locked(cq);
		pthread_mutex_unlock(&cq->lock);
		if (held)
			return true;
	}
	return cq->err_held || shim_read_once(cq->err_count) ||
	       shim_cq_hook_err_queued(cq);
}

/* readerr of a held error, with readerr's err_data rules (cq->lock held). */
static void shim_cq_give_held_locked(struct shim_cq *cq,
				     struct fi_cq_err_entry *buf,
				     bool user_buf)
{
	struct kfab_cq_readerr *h = &cq->held;
	size_t len = h->err_data_size;

	buf->op_context = (void *)(uintptr_t)h->out_entry.op_context;
	buf->flags = h->out_entry.flags;
	buf->len = h->out_entry.len;
	buf->buf = (void *)(uintptr_t)h->out_entry.buf;
	buf->data = h->out_entry.data;
	buf->tag = h->out_entry.tag;
	buf->olen = h->out_olen;
	buf->err = h->out_err;
	buf->prov_errno = h->out_prov_errno;
	if (user_buf) {
		if (len > buf->err_data_size)
			len = buf->err_data_size;
		memcpy(buf->err_data, cq->held_data, len);
	} else {
		memcpy(cq->err_data, cq->held_data, len);
		buf->err_data = len ? cq->err_data : NULL;
	}
	buf->err_data_size = len;
	cq->err_held = false;
}

static void shim_cq_copy(struct shim_cq *cq, void *buf, size_t i,
			 const struct kfab_cq_entry *e)
{
	void *ctx = (void *)(uintptr_t)e->op_context;

	switch (cq->format) {
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *m = (struct fi_cq_msg_entry *)buf + i;

		m->op_context = ctx;
		m->flags = e->flags;
		m->len = e->len;
		break;
	}
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry *d = (struct fi_cq_data_entry *)buf + i;

		d->op_context = ctx;
		d->flags = e->flags;
		d->len = e->len;
		d->buf = (void *)(uintptr_t)e->buf;
		d->data = e->data;
		break;
	}
	case FI_CQ_FORMAT_TAGGED: {
		struct fi_cq_tagged_entry *t = (struct fi_cq_tagged_entry *)buf + i;

		t->op_context = ctx;
		t->flags = e->flags;
		t->len = e->len;
		t->buf = (void *)(uintptr_t)e->buf;
		t->data = e->data;
		t->tag = e->tag;
		break;
	}
	default:
		((struct fi_cq_entry *)buf)[i].op_context = ctx;
		break;
	}
}

/*
 * Completions queued in the library (other providers wrote them into an
 * exported CQ) come after the ring's; their sources are in the terms of
 * the peer's AV, which kfab cannot translate: FI_ADDR_NOTAVAIL.
 */
static size_t shim_cq_read_queued(struct shim_cq *cq, void *buf, size_t first,
				  size_t count, fi_addr_t *src_addr)
{
	const struct shim_cq_hooks *h = shim_cq_hooks(cq);
	struct kfab_cq_entry e[16];
	size_t n = 0, got, i;

	while (h && n < count) {
		got = h->pop(cq, e, count - n < 16 ? count - n : 16);
		if (!got)
			break;
		for (i = 0; i < got; i++, n++) {
			shim_cq_copy(cq, buf, first + n, &e[i]);
			if (src_addr)
				src_addr[first + n] = FI_ADDR_NOTAVAIL;
		}
	}
	return n;
}

/*
 * Copy up to @count entries out of the ring; when it runs dry while the
 * kernel holds overflowed completions, have them moved in and go on.
 * Called with cq->lock held.
 */
/*
 * A small message that came in the slot (KFAB_COMP_PAYLOAD) goes to the
 * receive's buffer before anyone sees its completion.  The kernel wrote
 * buf and len (at most KFAB_CQ_PAYLOAD_MAX) from the receive we posted.
 */
static void shim_cq_payload(const struct shim_cq *cq, const uint8_t *slot,
			    struct kfab_cq_entry *e)
{
	if (!(e->flags & KFAB_COMP_PAYLOAD))
		return;
	e->flags &= ~KFAB_COMP_PAYLOAD;
	if (e->len <= KFAB_CQ_PAYLOAD_MAX &&
	    cq->entry_size >= sizeof(*e) + KFAB_CQ_PAYLOAD_MAX)
		shim_copy_small((void *)(uintptr_t)e->buf, slot + sizeof(*e),
				e->len);
}

static size_t shim_cq_read_locked(struct shim_cq *cq, void *buf, size_t count,
				  fi_addr_t *src_addr)
{
	size_t n = 0, esize = cq->entry_size < sizeof(struct kfab_cq_entry) ?
			      cq->entry_size : sizeof(struct kfab_cq_entry);
	/* Set once, never unset: one look serves the whole read. */
	const struct shim_cq_hooks *h = shim_cq_hooks(cq);
	uint32_t tail, avail, start;

	for (;;) {
		start = cq->local_head;
		/* (C1): pairs with the kernel's release of tail (P2). */
		tail = shim_load_acquire(cq->tail);
		avail = tail - cq->local_head;
		if (avail > cq->entries)
			avail = cq->entries;
		for (; n < count && avail; avail--) {
			const uint8_t *slot = cq->slots +
				(size_t)(cq->local_head & cq->mask) * cq->entry_size;
			struct kfab_cq_entry e;

			/* A whole entry is one struct copy, not a call. */
			if (esize == sizeof(e)) {
				e = *(const struct kfab_cq_entry *)slot;
			} else {
				memset(&e, 0, sizeof(e));
				memcpy(&e, slot, esize);
			}
			shim_cq_payload(cq, slot, &e);
			shim_cq_step(cq);
			/* A notice of a region gone with its owner: dropped. */
			if (!shim_bufrecv_entry(&e))
				continue;
			/* fi_peer(3): the extension's own, or one to rewrite. */
			if (h && h->filter(cq, &e, 0, true) == SHIM_CQ_DROP)
				continue;
			shim_cq_copy(cq, buf, n, &e);
			if (src_addr)
				src_addr[n] = e.src_addr == KFAB_CQ_ADDR_NOTAVAIL ?
					      FI_ADDR_NOTAVAIL : e.src_addr;
			n++;
		}
		/*
		 * (C3): the slots are copied before the kernel may reuse them.
		 * An empty poll writes nothing: the kernel reads this line.
		 */
		if (cq->local_head != start)
			shim_store_release(cq->head, cq->local_head);
		if (n == count || !shim_read_once(cq->overflow))
			break;
		/* The ring ran dry and the kernel holds more: the slow path. */
		if (shim_dev_cq_drain(cq->fd, cq->id, NULL) ||
		    shim_load_acquire(cq->tail) == tail)
			break;
	}
	/* The hooks' queue: a look at them first, not a call. */
	if (n == count || !h)
		return n;
	return n + shim_cq_read_queued(cq, buf, n, count - n, src_addr);
}

/*
 * A large message is being copied into a receive of ours, or out of a
 * send of ours into a late receive (the ring's KFAB_CQ_RING_HELP): copy
 * pieces of it in this thread's time, which would otherwise only spin
 * here; the other process reports it once every piece is in (Documentation/
 * cq.rst, "Helping with large copies").  A stale bit costs one system
 * call.  True when it helped.
 */
static bool shim_cq_help(struct shim_cq *cq)
{
	if (!(shim_read_once(cq->flags) & KFAB_CQ_RING_HELP))
		return false;
	return !shim_dev_cq_help(cq->fd, cq->id, NULL);
}

/*
 * Completions wait in the ring and nothing else needs a look first: no
 * hooks, no error (which fi_cq(3) puts first), no overflow.  Read without
 * cq->lock: a stale answer only sends the caller down the full path
 * (local_head moves under the lock; the ring's words are the kernel's).
 * Every SHIM_CQ_FAST_READS-th read in a row progresses the endpoints all
 * the same: requests the kernel left in a ring (a CQ nearly full) are not
 * held back by a CQ that other processes keep busy.
 */
#define SHIM_CQ_FAST_READS	64

static bool shim_cq_ring_ready(struct shim_cq *cq)
{
	/* (C1): the acquire is taken again under the lock before any slot. */
	return shim_read_once(&cq->fast_reads) < SHIM_CQ_FAST_READS &&
	       shim_read_once(cq->tail) != shim_read_once(&cq->local_head) &&
	       !shim_read_once(cq->err_count) &&
	       !shim_read_once(cq->overflow) &&
	       !shim_load_acquire(&cq->hooks) &&
	       !shim_read_once(&cq->err_held);
}

/*
 * Nothing to read: neither the ring nor the kernel's overflow list nor the
 * hooks have an entry, so a poll that finds nothing takes no lock.
 */
static bool shim_cq_ring_empty(struct shim_cq *cq)
{
	return shim_read_once(cq->tail) == shim_read_once(&cq->local_head) &&
	       !shim_read_once(cq->overflow) &&
	       !shim_load_acquire(&cq->hooks);
}

static ssize_t shim_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				fi_addr_t *src_addr)
{
	struct shim_cq *cq = to_shim_cq(cq_fid);
	bool serial;
	size_t n;

	if (count && !buf)
		return -FI_EINVAL;
	/*
	 * The common case of a busy poll: completions are there.  They go
	 * out at once, after the requests that wait for a doorbell (one load
	 * when none does); the bound endpoints' progress waits for the call
	 * that finds the ring empty (Documentation/ep.rst, "Progress";
	 * bench.rst, "Long enough runs, and the library's share").
	 */
	if (count && shim_cq_ring_ready(cq)) {
		unsigned int fast = shim_read_once(&cq->fast_reads);

		shim_lazy_flush();
		shim_write_once(&cq->fast_reads, fast + 1);
	} else {
		/* Manual progress (the lazy rings too), then the hooks'. */
		shim_ep_list_progress(&cq->eps);
		if (shim_read_once(&cq->fast_reads))
			shim_write_once(&cq->fast_reads, 0);
		shim_cq_hook_progress(cq);
		shim_cq_help(cq);
		/* An error waiting comes first (fi_cq(3)): no system call. */
		if (shim_cq_err_waiting(cq))
			return -FI_EAVAIL;
		if (shim_cq_ring_empty(cq))
			return count ? -FI_EAGAIN : 0;
	}
	serial = shim_cq_serial(cq);
	shim_data_lock(&cq->lock, serial);
	n = shim_cq_read_locked(cq, buf, count, src_addr);
	shim_data_unlock(&cq->lock, serial);
	if (n && src_addr)
		shim_cq_user_ids(cq, src_addr, n);
	if (n)
		return (ssize_t)n;
	return count ? -FI_EAGAIN : 0;
}

static ssize_t shim_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return shim_cq_readfrom(cq_fid, buf, count, NULL);
}

/* An error queued by the hooks, with readerr's err_data rules. */
static ssize_t shim_cq_readerr_queued(struct shim_cq *cq,
				      const struct shim_cq_hooks *h,
				      struct fi_cq_err_entry *buf,
				      bool user_buf)
{
	struct fi_cq_err_entry err;
	void *data = user_buf ? buf->err_data : cq->err_data;
	size_t len = user_buf ? buf->err_data_size : sizeof(cq->err_data);
	int ret;

	pthread_mutex_lock(&cq->lock);
	ret = h->pop_err(cq, &err, data, &len);
	pthread_mutex_unlock(&cq->lock);
	if (ret)
		return ret;
	err.err_data = user_buf ? buf->err_data : (len ? cq->err_data : NULL);
	err.err_data_size = len;
	*buf = err;
	return 1;
}

static ssize_t shim_cq_readerr(struct fid_cq *cq_fid,
			       struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct shim_cq *cq = to_shim_cq(cq_fid);
	struct kfab_cq_readerr cmd = { .cq_id = cq->id };
	uint32_t api = cq->domain->fabric->fabric_fid.api_version;
	const struct shim_cq_hooks *h = shim_cq_hooks(cq);
	bool user_buf;
	int ret;

	if (!buf)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	/*
	 * fi_cq(3): from API 1.5, a non-zero err_data_size names the
	 * caller's buffer; otherwise err_data points to ours, valid until
	 * the next read of the CQ.
	 */
	user_buf = FI_VERSION_GE(api, FI_VERSION(1, 5)) && buf->err_data_size;
	if (user_buf) {
		cmd.err_data = (uintptr_t)buf->err_data;
		cmd.err_data_size = buf->err_data_size > UINT32_MAX ?
				    UINT32_MAX : (uint32_t)buf->err_data_size;
	} else {
		cmd.err_data = (uintptr_t)cq->err_data;
		cmd.err_data_size = sizeof(cq->err_data);
	}

	if (cq->err_held || h) {
		pthread_mutex_lock(&cq->lock);
		if (shim_cq_hold_err_locked(cq)) {
			shim_cq_give_held_locked(cq, buf, user_buf);
			pthread_mutex_unlock(&cq->lock);
			return 1;
		}
		pthread_mutex_unlock(&cq->lock);
	}
	if (h && !shim_read_once(cq->err_count) && h->err_queued(cq))
		return shim_cq_readerr_queued(cq, h, buf, user_buf);

	pthread_mutex_lock(&cq->lock);
	ret = shim_dev_cq_readerr(cq->fd, &cmd);
	pthread_mutex_unlock(&cq->lock);
	if (ret)
		return ret == -EAGAIN ? -FI_EAGAIN : ret;

	buf->op_context = (void *)(uintptr_t)cmd.out_entry.op_context;
	buf->flags = cmd.out_entry.flags;
	buf->len = cmd.out_entry.len;
	buf->buf = (void *)(uintptr_t)cmd.out_entry.buf;
	buf->data = cmd.out_entry.data;
	buf->tag = cmd.out_entry.tag;
	buf->olen = cmd.out_olen;
	buf->err = cmd.out_err;
	buf->prov_errno = cmd.out_prov_errno;
	if (!user_buf)
		buf->err_data = cmd.err_data_size ? cq->err_data : NULL;
	buf->err_data_size = cmd.err_data_size;
	return 1;
}

/* Arm for a waiter (under cq->lock); see the top of the file. */
static void shim_cq_arm_locked(struct shim_cq *cq)
{
	shim_write_once(cq->armed, 1);
}

static void shim_cq_disarm_locked(struct shim_cq *cq)
{
	if (!cq->waiters && !cq->trywait_armed)
		shim_write_once(cq->armed, 0);
}

/* Block until something may have changed, for at most @left ms. */
static void shim_cq_block(struct shim_cq *cq, int left, uint32_t threshold)
{
	bool ready;

	if (cq->efd < 0) {
		sched_yield();
		return;
	}
	pthread_mutex_lock(&cq->lock);
	cq->waiters++;
	shim_cq_arm_locked(cq);
	pthread_mutex_unlock(&cq->lock);
	/* (C2): pairs with the kernel's smp_mb() before it reads armed (P3). */
	shim_smp_mb();

	pthread_mutex_lock(&cq->lock);
	ready = shim_cq_err_waiting_locked(cq) ||
		shim_cq_pending(cq) >= threshold ||
		cq->signaled ||
		(shim_read_once(cq->flags) & KFAB_CQ_RING_HELP);
	pthread_mutex_unlock(&cq->lock);
	if (!ready) {
		shim_eventfd_wait(cq->efd, left);
		/* Reset before the caller looks again: nothing is missed. */
		shim_eventfd_reset(cq->efd);
	}

	pthread_mutex_lock(&cq->lock);
	cq->waiters--;
	shim_cq_disarm_locked(cq);
	pthread_mutex_unlock(&cq->lock);
}

static ssize_t shim_cq_sreadfrom(struct fid_cq *cq_fid, void *buf,
				 size_t count, fi_addr_t *src_addr,
				 const void *cond, int timeout)
{
	struct shim_cq *cq = to_shim_cq(cq_fid);
	uint32_t threshold = 1;
	struct timespec start;
	bool pending;
	size_t n;
	int left;

	if (!count)
		return shim_cq_readfrom(cq_fid, buf, 0, src_addr);
	if (!buf)
		return -FI_EINVAL;
	if (cq->wait_cond == FI_CQ_COND_THRESHOLD && cond) {
		size_t want = *(const size_t *)cond;

		if (want > count)
			want = count;
		if (want > cq->entries)
			want = cq->entries;
		threshold = want ? (uint32_t)want : 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);

	for (;;) {
		/*
		 * Manual progress.  While a ring holds requests the kernel
		 * could not carry out yet (a receiver's buffers are full),
		 * nothing may signal us when they can go: sleep in short
		 * slices and ring again.
		 */
		pending = shim_ep_list_progress(&cq->eps);
		/* Peers' traffic is seen only by polling them: short slices. */
		pending |= shim_cq_hook_progress(cq);
		shim_cq_help(cq);
		if (shim_cq_err_waiting(cq))
			return -FI_EAVAIL;
		left = shim_timeout_left(timeout, &start);
		pthread_mutex_lock(&cq->lock);
		if (cq->signaled) {
			cq->signaled = false;
			pthread_mutex_unlock(&cq->lock);
			return -FI_EAGAIN;
		}
		if (shim_cq_pending(cq) >= threshold || !left) {
			n = shim_cq_read_locked(cq, buf, count, src_addr);
			/* Pass a wakeup on to the next waiter if we left some. */
			if (n && cq->waiters && cq->efd >= 0 &&
			    shim_cq_pending(cq))
				(void)eventfd_write(cq->efd, 1);
			pthread_mutex_unlock(&cq->lock);
			if (n && src_addr)
				shim_cq_user_ids(cq, src_addr, n);
			if (n)
				return (ssize_t)n;
			if (!left)
				return -FI_EAGAIN;
			continue;
		}
		pthread_mutex_unlock(&cq->lock);
		if (pending && (left < 0 || left > SHIM_PROGRESS_SLICE_MS))
			left = SHIM_PROGRESS_SLICE_MS;
		shim_cq_block(cq, left, threshold);
	}
}

static ssize_t shim_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			     const void *cond, int timeout)
{
	return shim_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static int shim_cq_signal(struct fid_cq *cq_fid)
{
	struct shim_cq *cq = to_shim_cq(cq_fid);

	pthread_mutex_lock(&cq->lock);
	cq->signaled = true;
	pthread_mutex_unlock(&cq->lock);
	if (cq->efd >= 0)
		(void)eventfd_write(cq->efd, 1);
	return 0;
}

static const char *shim_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
				    const void *err_data, char *buf, size_t len)
{
	/* kfab's prov_errno values are errnos; err_data is opaque bytes. */
	const char *str = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	(void)cq_fid;
	(void)err_data;
	if (buf && len) {
		snprintf(buf, len, "%s", str);
		return buf;
	}
	return str;
}

/* fi_trywait(): arm for good, then say whether the caller may block. */
static int shim_cq_trywait(struct shim_cq *cq)
{
	bool ready;

	if (cq->efd < 0)
		return -FI_ENOSYS;	/* no wait object: fi_trywait says EINVAL */
	/*
	 * Requests stuck in a ring need the caller to come back, and so does
	 * peers' traffic, whose progress is manual: no sleep.
	 */
	if (shim_ep_list_progress(&cq->eps) | shim_cq_hook_progress(cq))
		return -FI_EAGAIN;
	shim_eventfd_reset(cq->efd);
	pthread_mutex_lock(&cq->lock);
	cq->trywait_armed = true;
	shim_cq_arm_locked(cq);
	pthread_mutex_unlock(&cq->lock);
	/* (C2): pairs with the kernel's smp_mb() before it reads armed (P3). */
	shim_smp_mb();
	pthread_mutex_lock(&cq->lock);
	ready = shim_cq_err_waiting_locked(cq) || shim_cq_pending(cq);
	pthread_mutex_unlock(&cq->lock);
	return ready ? -FI_EAGAIN : 0;
}

static int shim_cq_control(struct fid *fid, int command, void *arg)
{
	struct shim_cq *cq = container_of(fid, struct shim_cq, cq_fid.fid);

	switch (command) {
	case SHIM_CTRL_TRYWAIT:
		return shim_cq_trywait(cq);
	case FI_GETWAIT:
		if (cq->wait_set)
			return shim_wait_getwait(cq->wait_set, arg);
		if (!arg)
			return -FI_EINVAL;
		if (cq->efd < 0)
			return -FI_ENODATA;
		*(int *)arg = cq->efd;
		return 0;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = cq->wait_obj;
		return 0;
	case FI_GET_VAL:
		if (arg && ((struct fi_fid_var *)arg)->name == KFAB_FID_PEER_EXPORT)
			return shim_cq_peer_export(cq,
						   ((struct fi_fid_var *)arg)->val);
		return shim_get_kernel_handle(arg, cq->fd, cq->id);
	default:
		return -FI_ENOSYS;
	}
}

static const struct fi_ops shim_cq_fi_ops;

/* fi_poll(): progressed, and holding a completion or an error. */
bool shim_cq_poll_ready(struct shim_cq *cq)
{
	shim_cq_progress_eps(cq);
	shim_cq_help(cq);
	return shim_cq_pending(cq) || shim_cq_hook_queued(cq) ||
	       shim_cq_err_waiting(cq);
}

void shim_cq_poll_ref(struct shim_cq *cq, int delta)
{
	__atomic_add_fetch(&cq->poll_refs, delta, __ATOMIC_ACQ_REL);
}

struct shim_cq *shim_cq_from_fid(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_CQ || fid->ops != &shim_cq_fi_ops)
		return NULL;
	return container_of(fid, struct shim_cq, cq_fid.fid);
}

uint32_t shim_cq_id(const struct shim_cq *cq)
{
	return cq->id;
}

int shim_cq_attach_ep(struct shim_cq *cq, struct shim_ep *ep)
{
	return shim_ep_list_add(&cq->eps, ep);
}

void shim_cq_detach_ep(struct shim_cq *cq, struct shim_ep *ep)
{
	shim_ep_list_del(&cq->eps, ep);
}

/* ---- for peer/cq.c (internal.h) ---- */

struct shim_cq *shim_cq_from_cq_fid(struct fid_cq *cq_fid)
{
	return to_shim_cq(cq_fid);
}

bool shim_cq_progress_eps(struct shim_cq *cq)
{
	return shim_ep_list_progress(&cq->eps);
}

bool shim_cq_has_err(struct shim_cq *cq)
{
	return shim_read_once(cq->err_count) != 0;
}

ssize_t shim_cq_take_err(struct shim_cq *cq, struct fi_cq_err_entry *buf)
{
	memset(buf, 0, sizeof(*buf));
	return shim_cq_readerr(&cq->cq_fid, buf, 0);
}

void shim_cq_wake(struct shim_cq *cq)
{
	/* Pairs with the waiter's barrier after it armed (C2). */
	shim_smp_mb();
	if (cq->efd >= 0 && shim_read_once(cq->armed))
		(void)eventfd_write(cq->efd, 1);
}

/*
 * The forwarder of a peer CQ is its only reader (the caller serialises),
 * so no cq->lock: the sink calls into the owner, which may take locks of
 * its own and even call back into kfab.
 */
int shim_cq_forward(struct shim_cq *cq, shim_cq_sink_fn sink, void *arg)
{
	size_t esize = cq->entry_size < sizeof(struct kfab_cq_entry) ?
		       cq->entry_size : sizeof(struct kfab_cq_entry);
	uint32_t tail, avail, start;
	fi_addr_t src;
	int ret = 0;

	for (;;) {
		start = cq->local_head;
		/* (C1): pairs with the kernel's release of tail (P2). */
		tail = shim_load_acquire(cq->tail);
		avail = tail - cq->local_head;
		if (avail > cq->entries)
			avail = cq->entries;
		for (; avail; avail--) {
			struct kfab_cq_entry e = { 0 }, orig;
			const uint8_t *slot = cq->slots +
				(size_t)(cq->local_head & cq->mask) * cq->entry_size;

			memcpy(&e, slot, esize);
			/* A small message's bytes, before the owner sees it. */
			shim_cq_payload(cq, slot, &e);
			/* Rewritten, or dropped, only once the owner took it. */
			orig = e;
			if (shim_cq_hook_filter(cq, &e, 0, false) ==
			    SHIM_CQ_DROP) {
				shim_cq_hook_filter(cq, &orig, 0, true);
				shim_cq_step(cq);
				continue;
			}
			/* fi_peer(3): FI_ADDR_NOTAVAIL when there is no source. */
			src = e.src_addr == KFAB_CQ_ADDR_NOTAVAIL ||
			      !(e.flags & FI_RECV) ?
			      FI_ADDR_NOTAVAIL : e.src_addr;
			if (src != FI_ADDR_NOTAVAIL)
				shim_cq_user_ids(cq, &src, 1);
			ret = sink(arg, &e, src);
			if (ret)
				break;
			shim_cq_hook_filter(cq, &orig, 0, true);
			shim_cq_step(cq);
		}
		/*
		 * (C3): the slots are copied before the kernel may reuse them.
		 * An empty poll writes nothing: the kernel reads this line.
		 */
		if (cq->local_head != start)
			shim_store_release(cq->head, cq->local_head);
		if (ret || !shim_read_once(cq->overflow))
			break;
		if (shim_dev_cq_drain(cq->fd, cq->id, NULL) ||
		    shim_load_acquire(cq->tail) == tail)
			break;
	}
	return ret;
}

static void shim_cq_free(struct shim_cq *cq)
{
	if (cq->wait_set)
		shim_wait_del(cq->wait_set, &cq->cq_fid.fid);
	if (cq->own_wait)
		shim_wait_close_own(cq->own_wait);
	if (cq->ring_map)
		munmap(cq->ring_map, cq->ring_len);
	if (cq->cons_map)
		munmap(cq->cons_map, cq->cons_len);
	if (cq->efd >= 0)
		close(cq->efd);
	if (cq->hooks)
		cq->hooks->free(cq);
	shim_ep_list_destroy(&cq->eps);
	pthread_mutex_destroy(&cq->lock);
	free(cq);
}

/* A failed close changes nothing: the CQ stays open and usable. */
static int shim_cq_close(struct fid *fid)
{
	struct shim_cq *cq = container_of(fid, struct shim_cq, cq_fid.fid);
	int ret;

	/* fi_cq(3): close the endpoints bound to it first. */
	if (shim_ep_list_count(&cq->eps) ||
	    __atomic_load_n(&cq->poll_refs, __ATOMIC_ACQUIRE))
		return -FI_EBUSY;
	/* fi_peer(3): peers writing into this CQ go first. */
	if (cq->hooks) {
		ret = cq->hooks->close(cq);
		if (ret)
			return ret;
	}
	ret = shim_dev_destroy(cq->fd, cq->id);
	if (ret) {
		SHIM_WARN(CQ, "cq %u: KFAB_IOC_DESTROY: %s\n", cq->id,
			  fi_strerror(-ret));
		return ret;
	}
	shim_cq_free(cq);
	return 0;
}

static const struct fi_ops shim_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_cq_close,
	.bind = shim_no_bind,
	.control = shim_cq_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

static const struct fi_ops_cq shim_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = shim_cq_read,
	.readfrom = shim_cq_readfrom,
	.readerr = shim_cq_readerr,
	.sread = shim_cq_sread,
	.sreadfrom = shim_cq_sreadfrom,
	.signal = shim_cq_signal,
	.strerror = shim_cq_strerror,
};

static int shim_cq_check_attr(const struct fi_cq_attr *attr)
{
	if (attr->flags & ~(uint64_t)(FI_AFFINITY | FI_PEER))
		return -FI_EBADFLAGS;
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
	case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA:
	case FI_CQ_FORMAT_TAGGED:
		break;
	default:
		return -FI_EINVAL;
	}
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_YIELD:
	case FI_WAIT_SET:	/* the set: shim_cq_open() */
	case FI_WAIT_MUTEX_COND:	/* a set of its own: shim_cq_open() */
		break;
	default:
		return -FI_EINVAL;
	}
	if (attr->wait_cond != FI_CQ_COND_NONE &&
	    attr->wait_cond != FI_CQ_COND_THRESHOLD)
		return -FI_EINVAL;
	if (attr->size > KFAB_CQ_MAX_ENTRIES)
		return -FI_EINVAL;
	return 0;
}

/* Map both regions and find the fields where the kernel says they are. */
static int shim_cq_map(struct shim_cq *cq, const struct kfab_cq_layout *l)
{
	int ret;

	if (l->off_entries + (uint64_t)l->entries * l->entry_size >
	    l->ring.size ||
	    l->off_tail + sizeof(uint32_t) > l->ring.size ||
	    l->off_overflow + sizeof(uint32_t) > l->ring.size ||
	    l->off_err_count + sizeof(uint32_t) > l->ring.size ||
	    l->off_flags + sizeof(uint32_t) > l->ring.size ||
	    l->off_head + sizeof(uint32_t) > l->cons.size ||
	    l->off_armed + sizeof(uint32_t) > l->cons.size ||
	    !l->entries || (l->entries & (l->entries - 1)))
		return -FI_EOTHER;

	cq->ring_len = l->ring.size;
	ret = shim_dev_mmap(cq->fd, l->ring.offset, cq->ring_len, false,
			    &cq->ring_map);
	if (ret) {
		cq->ring_map = NULL;
		return ret;
	}
	cq->cons_len = l->cons.size;
	ret = shim_dev_mmap(cq->fd, l->cons.offset, cq->cons_len, true,
			    &cq->cons_map);
	if (ret) {
		cq->cons_map = NULL;
		return ret;
	}
	cq->tail = (const uint32_t *)((char *)cq->ring_map + l->off_tail);
	cq->overflow = (const uint32_t *)((char *)cq->ring_map +
					  l->off_overflow);
	cq->err_count = (const uint32_t *)((char *)cq->ring_map +
					   l->off_err_count);
	cq->flags = (const uint32_t *)((char *)cq->ring_map + l->off_flags);
	cq->slots = (const uint8_t *)cq->ring_map + l->off_entries;
	cq->head = (uint32_t *)((char *)cq->cons_map + l->off_head);
	cq->armed = (uint32_t *)((char *)cq->cons_map + l->off_armed);
	cq->entries = l->entries;
	cq->mask = l->entries - 1;
	cq->entry_size = l->entry_size;
	cq->local_head = shim_read_once(cq->head);
	return 0;
}

/**
 * shim_cq_open() - struct fi_ops_domain.cq_open: fi_cq_open() for kfab
 * @domain: a kfab domain
 * @attr: the attributes: every format; any size up to KFAB_CQ_MAX_ENTRIES
 *	(0: the default); wait objects NONE, UNSPEC, FD, YIELD, SET (with a
 *	kfab wait set of the domain's fabric), MUTEX_COND (a set of its
 *	own, wait.c); wait_cond NONE or THRESHOLD;
 *	flags FI_AFFINITY (ignored)
 * @cq_fid: out: the new CQ
 * @context: the application's context for the fid
 *
 * Return: 0; -FI_EINVAL for a bad attribute (a wait_set that is not kfab's
 * or of another fabric among them), -FI_EBADFLAGS for an unknown flag,
 * -FI_ENOMEM, or the kernel's -errno.
 */
int shim_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cq_fid, void *context)
{
	struct shim_domain *dom = to_shim_domain(domain);
	const struct fi_ops_cq *ops = &shim_cq_ops;
	struct kfab_cq_open cmd = { 0 };
	struct shim_wait *ws = NULL;
	struct shim_cq *cq;
	int ret;

	if (!attr || !cq_fid)
		return -FI_EINVAL;
	ret = shim_cq_check_attr(attr);
	if (ret)
		return ret;
	if (attr->wait_obj == FI_WAIT_SET && !(attr->flags & FI_PEER)) {
		ws = shim_wait_from_fid(attr->wait_set, dom->fabric);
		if (!ws)
			return -FI_EINVAL;
	}
	if (attr->wait_obj == FI_WAIT_MUTEX_COND && !(attr->flags & FI_PEER)) {
		ret = shim_wait_open_own(dom->fabric, &ws);
		if (ret)
			return ret;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		if (attr->wait_obj == FI_WAIT_MUTEX_COND && ws)
			shim_wait_close_own(ws);
		return -FI_ENOMEM;
	}
	if (attr->wait_obj == FI_WAIT_MUTEX_COND)
		cq->own_wait = ws;
	cq->efd = -1;
	ret = -pthread_mutex_init(&cq->lock, NULL);
	if (ret) {
		free(cq);
		return ret;
	}
	ret = shim_ep_list_init(&cq->eps);
	if (ret) {
		pthread_mutex_destroy(&cq->lock);
		free(cq);
		return ret;
	}
	cq->domain = dom;
	cq->eps.serial = dom->serial;
	cq->fd = dom->fabric->fd;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ?
		     FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->wait_obj = attr->wait_obj;
	cq->wait_cond = attr->wait_cond;

	/*
	 * fi_peer(3): the owner does the signalling, so a peer CQ has no
	 * wait object of its own, and @context is the owner's.
	 */
	if (attr->flags & FI_PEER) {
		ret = shim_cq_peer_open(cq, context, &ops);
		if (ret)
			goto err_free;
		context = NULL;
		cq->wait_obj = FI_WAIT_NONE;
	} else if (attr->wait_obj == FI_WAIT_FD ||
		   attr->wait_obj == FI_WAIT_UNSPEC || ws) {
		cq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (cq->efd < 0) {
			ret = -errno;
			goto err_free;
		}
		cmd.flags = KFAB_CQ_OPEN_EVENTFD;
		cmd.eventfd = cq->efd;
	}
	/* Small receives then pin nothing: their bytes come in the slot. */
	cmd.flags |= KFAB_CQ_OPEN_PAYLOAD;
	cmd.domain_id = dom->id;
	cmd.entries = (uint32_t)attr->size;
	ret = shim_dev_cq_open(cq->fd, &cmd);
	if (ret) {
		SHIM_WARN(CQ, "KFAB_IOC_CQ_OPEN: %s\n", fi_strerror(-ret));
		goto err_free;
	}
	cq->id = cmd.out_cq_id;
	ret = shim_cq_map(cq, &cmd.out_ring);
	if (ret) {
		SHIM_WARN(CQ, "cq %u: mapping the ring: %s\n", cq->id,
			  fi_strerror(-ret));
		shim_dev_destroy(cq->fd, cq->id);
		goto err_free;
	}

	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = (struct fi_ops *)&shim_cq_fi_ops;
	cq->cq_fid.ops = (struct fi_ops_cq *)ops;
	if (ws) {
		ret = shim_wait_add(ws, &cq->cq_fid.fid, SHIM_WAIT_CQ, cq->efd);
		if (ret) {
			shim_dev_destroy(cq->fd, cq->id);
			goto err_free;
		}
		cq->wait_set = ws;
		/* The set may be epoll()ed at once: armed for good. */
		pthread_mutex_lock(&cq->lock);
		cq->trywait_armed = true;
		shim_cq_arm_locked(cq);
		pthread_mutex_unlock(&cq->lock);
	}
	*cq_fid = &cq->cq_fid;
	SHIM_DBG(CQ, "cq %u: %u entries\n", cq->id, cq->entries);
	return 0;

err_free:
	shim_cq_free(cq);
	return ret;
}
