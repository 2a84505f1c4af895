// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The in-kernel API (kfab_kapi.h, Documentation/kapi.rst): the second front
 * door of the engine, next to the ioctls.
 *
 * A kernel domain owns a struct kfab_ctx of its own, made here instead of by
 * an open of /dev/kfab, so its AVs and endpoints are ordinary objects of
 * object.c: debugfs lists them, the engine cannot tell them from user
 * ones.  The wrappers here add what kernel callers need: reference counts
 * between the wrappers (a child holds its parent), completions turned into
 * callbacks on a workqueue or entries of a kernel CQ, statistics, and the
 * teardown of an endpoint that waits for its callbacks.
 *
 * Locking (the module's order is in kfab.h): kep->lock (a mutex) serialises
 * posts, cancels and close of one endpoint, and is taken before the
 * engine's locks.  kep->done_lock (a spinlock, process context only)
 * covers its outstanding and done lists and statistics; a kernel CQ's
 * lock nests inside it.  A kernel CQ's lock is the only lock of kfab taken
 * with interrupts disabled (spin_lock_irqsave()): kfab_kcq_poll() may be
 * called from any context, hard interrupts included.  The engine's
 * completion hook runs with engine locks held, so it takes only done_lock
 * and queues work.
 */
#include <linux/debugfs.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kfab.h"
#include "kfab_kapi.h"

/* Latency buckets: [0, 1) us, then [2^(i-1), 2^i) us; the last is open. */
#define KFAB_KAPI_HIST		24
#define KFAB_KAPI_NAME_MAX	32

/**
 * struct kfab_kdomain - a kernel consumer's domain
 * @ref: the caller's, one per AV, CQ and endpoint of it
 * @ctx: the context its objects live in
 * @domain: the domain object in @ctx
 * @dir: its debugfs directory
 * @name: for debugfs
 *
 * Its fault points (CONFIG_KFAB_TEST) are @ctx's: KFAB_IOC_TEST_FAULT arms
 * them by the context's id, kapi_test.c through kfab_kdomain_ctx().
 */
struct kfab_kdomain {
	struct kref ref;
	struct kfab_ctx *ctx;
	struct kfab_object *domain;
	struct dentry *dir;
	char name[KFAB_KAPI_NAME_MAX];
};

/* An AV handle; @ref: the caller's, one per endpoint bound to it. */
struct kfab_kav {
	struct kref ref;
	struct kfab_kdomain *dom;
	struct kfab_av *av;
};

/* A kernel CQ; @ref: the caller's, one per endpoint bound to it. */
struct kfab_kcq {
	struct kref ref;
	struct kfab_kdomain *dom;
	spinlock_t lock;	/* @done; irq-safe: see "Locking" above */
	struct list_head done;
	wait_queue_head_t wait;
};

struct kfab_kep_stats {
	u64 reqs[2];		/* by enum kfab_dir */
	u64 bytes[2];
	u64 errors;
	u64 cancelled;
	u64 hist[KFAB_KAPI_HIST];
};

/**
 * struct kfab_kep - a kernel endpoint
 * @dom: its domain (a reference)
 * @av: its AV (a reference)
 * @cq: its kernel CQ (a reference), or NULL for callbacks
 * @ep: the engine's endpoint, an object of @dom's context
 * @wq: where @work runs
 * @work: calls the callbacks of @done
 * @lock: serialises posts, cancels and close
 * @closing: kfab_kep_close() began: no post may start
 * @done_lock: @outstanding, @done, @nr_outstanding, @stats
 * @outstanding: requests taken and not completed
 * @done: completed requests whose callbacks have to run
 * @nr_outstanding: entries of @outstanding
 * @nr_sends: sends among them
 * @sends_done: kfab_kep_close() waits here for @nr_sends to reach 0
 * @stats: for debugfs
 * @file: its debugfs file
 * @name: for debugfs
 */
struct kfab_kep {
	struct kfab_kdomain *dom;
	struct kfab_kav *av;
	struct kfab_kcq *cq;
	struct kfab_ep *ep;
	struct workqueue_struct *wq;
	struct work_struct work;
	struct mutex lock;	/* posts, cancels, close */
	bool closing;
	spinlock_t done_lock;	/* lists, counts, statistics */
	struct list_head outstanding;
	struct list_head done;
	unsigned int nr_outstanding;
	unsigned int nr_sends;
	wait_queue_head_t sends_done;
	struct kfab_kep_stats stats;
	struct dentry *file;
	char name[KFAB_KAPI_NAME_MAX];
};

static struct workqueue_struct *kfab_kapi_wq;
static struct dentry *kfab_kapi_dir;

#ifdef CONFIG_KFAB_TEST
/* For kapi_test.c: the context whose fault points a domain's posts pass. */
struct kfab_ctx *kfab_kdomain_ctx(struct kfab_kdomain *dom)
{
	return dom->ctx;
}
#endif

/* ---- domains ---- */

/**
 * kfab_kdomain_open() - open a domain for a kernel consumer
 * @name: for debugfs (/sys/kernel/debug/kfab/kapi/NAME/) and for the
 *	context's line in /sys/kernel/debug/kfab/contexts; NULL: "kernel"
 *
 * The domain's objects live in a kfab context of their own, which user
 * space cannot reach.  Sleeps.
 *
 * Return: the domain, or ERR_PTR(-ENOMEM).
 */
struct kfab_kdomain *kfab_kdomain_open(const char *name)
{
	char comm[TASK_COMM_LEN];
	struct kfab_kdomain *dom;
	struct kfab_object *obj;

	might_sleep();
	dom = kzalloc(sizeof(*dom), GFP_KERNEL);
	if (!dom)
		return ERR_PTR(-ENOMEM);
	kref_init(&dom->ref);
	strscpy(dom->name, name ?: "kernel", sizeof(dom->name));
	snprintf(comm, sizeof(comm), "k:%s", dom->name);
	dom->ctx = kfab_ctx_create(0, GLOBAL_ROOT_UID, comm);
	if (!dom->ctx)
		goto err_free;
	obj = kfab_domain_create(dom->ctx);
	if (IS_ERR(obj))
		goto err_ctx;
	kfab_object_finalize(dom->ctx, obj);
	dom->domain = obj;

	/* debugfs failures are not fatal; a second domain of a name has none. */
	dom->dir = debugfs_create_dir(dom->name, kfab_kapi_dir);
	return dom;

err_ctx:
	kfab_ctx_release(dom->ctx);
err_free:
	kfree(dom);
	return ERR_PTR(-ENOMEM);
}
EXPORT_SYMBOL_GPL(kfab_kdomain_open);

static void kfab_kdomain_release(struct kref *ref)
{
	struct kfab_kdomain *dom = container_of(ref, struct kfab_kdomain, ref);

	debugfs_remove_recursive(dom->dir);
	/* Its children are gone: only the domain object is left. */
	kfab_ctx_release(dom->ctx);
	kfree(dom);
}

static void kfab_kdomain_put(struct kfab_kdomain *dom)
{
	kref_put(&dom->ref, kfab_kdomain_release);
}

/**
 * kfab_kdomain_close() - drop the caller's reference on a domain
 * @dom: the domain
 *
 * The domain goes when its last AV, CQ and endpoint have.  Sleeps.
 */
void kfab_kdomain_close(struct kfab_kdomain *dom)
{
	might_sleep();
	kfab_kdomain_put(dom);
}
EXPORT_SYMBOL_GPL(kfab_kdomain_close);

/* ---- address vectors ---- */

/**
 * kfab_kav_open() - open an address vector
 * @dom: the domain
 * @name: a named AV's name (shared with user space), or NULL for an
 *	unnamed AV of this consumer alone
 * @flags: for a named AV: KFAB_AV_OPEN_READ_ONLY, KFAB_AV_OPEN_NO_CREATE,
 *	KFAB_AV_OPEN_EXCL (uapi/linux/kfab.h); 0 otherwise
 * @count: entries wanted, 0 for the module's default
 *
 * A named AV is found by name or created (owner root, mode 0600: only root
 * and kernel consumers may open it then; a user-space creator chooses its
 * own mode).  The owner and mode are checked against the caller's
 * credentials, as for a process.  Sleeps.
 *
 * Return: the AV, or an ERR_PTR: -ENOENT (a named AV that does not exist,
 * with KFAB_AV_OPEN_NO_CREATE or READ_ONLY), -EEXIST (with EXCL), -EACCES,
 * -EINVAL (bad name or flags), -EDQUOT, -ENOMEM.
 */
struct kfab_kav *kfab_kav_open(struct kfab_kdomain *dom, const char *name,
			       u32 flags, u32 count)
{
	struct kfab_kav *kav;
	int rc;

	might_sleep();
	kav = kzalloc(sizeof(*kav), GFP_KERNEL);
	if (!kav)
		return ERR_PTR(-ENOMEM);
	rc = kfab_av_kopen(dom->ctx, dom->domain, name, flags, count, &kav->av);
	if (rc) {
		kfree(kav);
		return ERR_PTR(rc);
	}
	kref_init(&kav->ref);
	kref_get(&dom->ref);
	kav->dom = dom;
	return kav;
}
EXPORT_SYMBOL_GPL(kfab_kav_open);

static void kfab_kav_release(struct kref *ref)
{
	struct kfab_kav *kav = container_of(ref, struct kfab_kav, ref);
	struct kfab_kdomain *dom = kav->dom;

	/* Endpoints hold this wrapper, so nothing holds the object. */
	WARN_ON(kfab_object_destroy(dom->ctx, kav->av->obj.id));
	kfree(kav);
	kfab_kdomain_put(dom);
}

/**
 * kfab_kav_close() - drop the caller's reference on an AV
 * @av: the AV
 *
 * The handle goes when the endpoints bound to it have; a named AV's table
 * stays while other openers (user space included) have it.  Sleeps.
 */
void kfab_kav_close(struct kfab_kav *av)
{
	might_sleep();
	kref_put(&av->ref, kfab_kav_release);
}
EXPORT_SYMBOL_GPL(kfab_kav_close);

/**
 * kfab_kav_insert() - insert addresses
 * @av: the AV (not read-only)
 * @addrs: @count addresses, struct kfab_addr as fi_getname() gives them
 * @count: how many
 * @indices: out: @count indices, KFAB_KADDR_ANY where an address failed
 *
 * An address the AV holds already keeps its index.  Sleeps.
 *
 * Return: how many were inserted; or, when none was, a negative errno:
 * -EPERM (read-only handle), -EINVAL (a bad address), -ENOSPC (full),
 * -ENOMEM.
 */
int kfab_kav_insert(struct kfab_kav *av, const struct kfab_addr *addrs,
		    u32 count, u64 *indices)
{
	u32 *idx, i, inserted;
	s32 *err;
	int rc = 0;

	might_sleep();
	if (av->av->read_only)
		return -EPERM;
	if (!count)
		return 0;
	if (count > KFAB_AV_BATCH_MAX)
		return -E2BIG;
	idx = kmalloc_array(count, sizeof(*idx), GFP_KERNEL);
	err = kmalloc_array(count, sizeof(*err), GFP_KERNEL);
	if (!idx || !err) {
		rc = -ENOMEM;
		goto out;
	}
	inserted = kfab_av_insert_batch(av->dom->ctx, av->av, addrs, count,
					idx, err);
	for (i = 0; i < count; i++) {
		indices[i] = err[i] ? KFAB_KADDR_ANY : idx[i];
		if (err[i] && !rc)
			rc = err[i];
	}
	if (inserted)
		rc = inserted;
out:
	kfree(err);
	kfree(idx);
	return rc;
}
EXPORT_SYMBOL_GPL(kfab_kav_insert);

/**
 * kfab_kav_remove() - remove entries
 * @av: the AV (not read-only)
 * @indices: @count indices
 * @count: how many
 *
 * All or nothing.  Sleeps.
 *
 * Return: 0; -EPERM (read-only handle); -EINVAL (an index names no entry
 * or comes twice); -ENOMEM.
 */
int kfab_kav_remove(struct kfab_kav *av, const u64 *indices, u32 count)
{
	u32 *idx, i;
	int rc;

	might_sleep();
	if (av->av->read_only)
		return -EPERM;
	if (!count)
		return 0;
	if (count > KFAB_AV_BATCH_MAX)
		return -E2BIG;
	idx = kmalloc_array(count, sizeof(*idx), GFP_KERNEL);
	if (!idx)
		return -ENOMEM;
	rc = 0;
	for (i = 0; i < count && !rc; i++) {
		if (indices[i] > U32_MAX)
			rc = -EINVAL;
		idx[i] = indices[i];
	}
	if (!rc)
		rc = kfab_av_remove_batch(av->av, idx, count);
	kfree(idx);
	return rc;
}
EXPORT_SYMBOL_GPL(kfab_kav_remove);

/**
 * kfab_kav_lookup() - the address at an index
 * @av: the AV
 * @index: the index
 * @addr: out: the address
 *
 * Sleeps.  Return: 0, or -EINVAL when @index names no entry.
 */
int kfab_kav_lookup(struct kfab_kav *av, u64 index, struct kfab_addr *addr)
{
	might_sleep();
	return kfab_av_addr_of(av->av, index, addr);
}
EXPORT_SYMBOL_GPL(kfab_kav_lookup);

/* ---- kernel CQs ---- */

/**
 * kfab_kcq_open() - open a kernel completion queue
 * @dom: the domain
 *
 * The endpoints opened with it in &kfab_kep_attr.cq queue their completed
 * requests on it, in completion order, for kfab_kcq_poll().  It has no
 * size: a request is its own entry.  Sleeps.
 *
 * Return: the CQ, or ERR_PTR(-ENOMEM).
 */
struct kfab_kcq *kfab_kcq_open(struct kfab_kdomain *dom)
{
	struct kfab_kcq *cq;

	might_sleep();
	cq = kzalloc(sizeof(*cq), GFP_KERNEL);
	if (!cq)
		return ERR_PTR(-ENOMEM);
	kref_init(&cq->ref);
	spin_lock_init(&cq->lock);
	INIT_LIST_HEAD(&cq->done);
	init_waitqueue_head(&cq->wait);
	kref_get(&dom->ref);
	cq->dom = dom;
	return cq;
}
EXPORT_SYMBOL_GPL(kfab_kcq_open);

static void kfab_kcq_release(struct kref *ref)
{
	struct kfab_kcq *cq = container_of(ref, struct kfab_kcq, ref);
	struct kfab_kdomain *dom = cq->dom;
	struct kfab_kreq *req, *next;

	/* Requests nobody polled are the caller's memory: just let go. */
	list_for_each_entry_safe(req, next, &cq->done, link)
		list_del_init(&req->link);
	kfree(cq);
	kfab_kdomain_put(dom);
}

/**
 * kfab_kcq_close() - drop the caller's reference on a kernel CQ
 * @cq: the CQ
 *
 * It goes when the endpoints bound to it have; completions nobody polled
 * are dropped then.  Sleeps.
 */
void kfab_kcq_close(struct kfab_kcq *cq)
{
	might_sleep();
	kref_put(&cq->ref, kfab_kcq_release);
}
EXPORT_SYMBOL_GPL(kfab_kcq_close);

/**
 * kfab_kcq_poll() - take completed requests
 * @cq: the CQ
 * @reqs: out: up to @max requests, oldest first
 * @max: room in @reqs
 *
 * Any context, softirq and hard interrupt included; never sleeps.
 *
 * Return: how many requests were taken (0 when none is there).
 */
int kfab_kcq_poll(struct kfab_kcq *cq, struct kfab_kreq **reqs, int max)
{
	struct kfab_kreq *req;
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < max && !list_empty(&cq->done)) {
		req = list_first_entry(&cq->done, struct kfab_kreq, link);
		list_del_init(&req->link);
		reqs[n++] = req;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}
EXPORT_SYMBOL_GPL(kfab_kcq_poll);

static bool kfab_kcq_ready(struct kfab_kcq *cq)
{
	unsigned long flags;
	bool ready;

	spin_lock_irqsave(&cq->lock, flags);
	ready = !list_empty(&cq->done);
	spin_unlock_irqrestore(&cq->lock, flags);
	return ready;
}

/**
 * kfab_kcq_wait() - sleep until a completion is there to poll
 * @cq: the CQ
 * @timeout: in jiffies (MAX_SCHEDULE_TIMEOUT: no limit)
 *
 * Sleeps, interruptibly.
 *
 * Return: the jiffies left (at least 1) when a completion is there, 0 on
 * timeout, -ERESTARTSYS when a signal came.
 */
long kfab_kcq_wait(struct kfab_kcq *cq, long timeout)
{
	DEFINE_WAIT(wait);
	long ret;

	might_sleep();
	/* Open-coded: the wait_event macros' nested __ret upsets sparse. */
	for (;;) {
		prepare_to_wait(&cq->wait, &wait, TASK_INTERRUPTIBLE);
		if (kfab_kcq_ready(cq)) {
			ret = timeout ?: 1;
			break;
		}
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		if (!timeout) {
			ret = 0;
			break;
		}
		timeout = schedule_timeout(timeout);
	}
	finish_wait(&cq->wait, &wait);
	return ret;
}
EXPORT_SYMBOL_GPL(kfab_kcq_wait);

/* ---- endpoints ---- */

static bool kfab_kop_is_send(enum kfab_kop op)
{
	return op == KFAB_KOP_SEND || op == KFAB_KOP_TSEND;
}

/* Byte count of the buffers of @req. */
static size_t kfab_kreq_size(const struct kfab_kreq *req)
{
	struct scatterlist *sg;
	size_t sum = 0;
	unsigned int i;

	switch (req->buf_type) {
	case KFAB_KBUF_KVEC:
		for (i = 0; i < req->nr_segs; i++)
			sum += req->kvec[i].iov_len;
		break;
	case KFAB_KBUF_BVEC:
		for (i = 0; i < req->nr_segs; i++)
			sum += req->bvec[i].bv_len;
		break;
	case KFAB_KBUF_SG:
		for_each_sg(req->sg, sg, req->nr_segs, i)
			sum += sg->length;
		break;
	}
	return sum;
}

static unsigned int kfab_kapi_bucket(u64 ns)
{
	u64 us = div_u64(ns, NSEC_PER_USEC);

	if (!us)
		return 0;
	return min_t(unsigned int, ilog2(us) + 1, KFAB_KAPI_HIST - 1);
}

/*
 * A request is over, @req->status set: off the outstanding list, onto its
 * CQ or the list of callbacks to run.  Process context; takes spinlocks only.
 */
static void kfab_kapi_finish(struct kfab_kep *kep, struct kfab_kreq *req)
{
	bool send = kfab_kop_is_send(req->op);
	struct kfab_kep_stats *st = &kep->stats;
	struct kfab_kcq *cq = kep->cq;
	unsigned long irqflags;

	kfree(req->sg_bvec);
	req->sg_bvec = NULL;

	spin_lock(&kep->done_lock);
	kep->nr_outstanding--;
	if (send && !--kep->nr_sends)
		wake_up(&kep->sends_done);
	st->reqs[send ? KFAB_TX : KFAB_RX]++;
	st->hist[kfab_kapi_bucket(ktime_get_ns() - req->start_ns)]++;
	if (req->status == -ECANCELED)
		st->cancelled++;
	else if (req->status)
		st->errors++;
	else
		st->bytes[send ? KFAB_TX : KFAB_RX] += send ? req->len :
							      req->out_len;
	if (cq) {
		spin_lock_irqsave(&cq->lock, irqflags);
		list_move_tail(&req->link, &cq->done);
		spin_unlock_irqrestore(&cq->lock, irqflags);
	} else {
		list_move_tail(&req->link, &kep->done);
	}
	spin_unlock(&kep->done_lock);

	if (cq)
		wake_up(&cq->wait);
	else
		queue_work(kep->wq, &kep->work);
}

/* The engine's completion hook: under its locks, so no sleeping here. */
static void kfab_kapi_complete(struct kfab_ep *ep, const struct kfab_comp *comp)
{
	const struct kfab_cq_entry *entry = &comp->entry;
	struct kfab_kreq *req = (struct kfab_kreq *)(uintptr_t)entry->op_context;

	req->status = comp->status == -KFAB_ERR_TRUNC ? -EMSGSIZE :
							comp->status;
	if (comp->dir == KFAB_RX) {
		req->out_len = entry->len;
		req->out_tag = entry->tag;
		req->out_src = entry->src_addr;
		if (entry->flags & KFAB_COMP_REMOTE_CQ_DATA) {
			req->out_data = entry->data;
			req->out_flags |= KFAB_KCOMP_REMOTE_DATA;
		}
	}
	kfab_kapi_finish(ep->kpriv, req);
}

static const struct kfab_ep_kops kfab_kapi_kops = {
	.complete = kfab_kapi_complete,
};

/* Runs the callbacks, outside every kfab lock. */
static void kfab_kapi_work(struct work_struct *work)
{
	struct kfab_kep *kep = container_of(work, struct kfab_kep, work);
	struct kfab_kreq *req, *next;
	LIST_HEAD(done);

	spin_lock(&kep->done_lock);
	list_splice_init(&kep->done, &done);
	spin_unlock(&kep->done_lock);
	list_for_each_entry_safe(req, next, &done, link) {
		list_del_init(&req->link);
		/* The callback may free @req. */
		req->done(req);
	}
}

static int kfab_kep_stats_show(struct seq_file *s, void *unused)
{
	struct kfab_kep *kep = s->private;
	struct kfab_kep_stats st;
	unsigned int in_flight, i;

	spin_lock(&kep->done_lock);
	st = kep->stats;
	in_flight = kep->nr_outstanding;
	spin_unlock(&kep->done_lock);

	seq_printf(s, "tx_requests %llu\ntx_bytes %llu\nrx_requests %llu\nrx_bytes %llu\n",
		   st.reqs[KFAB_TX], st.bytes[KFAB_TX], st.reqs[KFAB_RX],
		   st.bytes[KFAB_RX]);
	seq_printf(s, "errors %llu\ncancelled %llu\nin_flight %u\n",
		   st.errors, st.cancelled, in_flight);
	seq_puts(s, "latency_us");
	for (i = 0; i < KFAB_KAPI_HIST; i++)
		seq_printf(s, " %s%lu:%llu", i == KFAB_KAPI_HIST - 1 ? ">=" : "<",
			   i == KFAB_KAPI_HIST - 1 ? 1UL << (i - 1) : 1UL << i,
			   st.hist[i]);
	seq_putc(s, '\n');
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kfab_kep_stats);

/**
 * kfab_kep_open() - open an enabled FI_EP_RDM endpoint
 * @dom: the domain
 * @av: its AV: destinations of sends and sources of receives are indices
 *	of it
 * @attr: its name, and where completions go; NULL: callbacks on kfab's
 *	workqueue, no name
 *
 * The endpoint can post at once.  Its address (kfab_kep_addr()) is what a
 * peer, in the kernel or in user space, inserts in its own AV.  Statistics
 * are in /sys/kernel/debug/kfab/kapi/DOMAIN/NAME.  Sleeps.
 *
 * Return: the endpoint, or an ERR_PTR: -ENOMEM, -ENOSPC, or an address
 * error as KFAB_IOC_EP_OPEN's (-EINVAL, -EADDRNOTAVAIL, -EADDRINUSE).
 */
struct kfab_kep *kfab_kep_open(struct kfab_kdomain *dom, struct kfab_kav *av,
			       const struct kfab_kep_attr *attr)
{
	static const struct kfab_addr any;
	struct kfab_kep *kep;
	int rc;

	might_sleep();
	kep = kzalloc(sizeof(*kep), GFP_KERNEL);
	if (!kep)
		return ERR_PTR(-ENOMEM);
	mutex_init(&kep->lock);
	spin_lock_init(&kep->done_lock);
	INIT_LIST_HEAD(&kep->outstanding);
	INIT_LIST_HEAD(&kep->done);
	INIT_WORK(&kep->work, kfab_kapi_work);
	init_waitqueue_head(&kep->sends_done);
	kep->wq = attr && attr->wq ? attr->wq : kfab_kapi_wq;
	strscpy(kep->name, attr && attr->name ? attr->name : "ep",
		sizeof(kep->name));

	rc = kfab_ep_kopen(dom->ctx, dom->domain, av->av,
			   attr && attr->src ? attr->src : &any, &kfab_kapi_kops,
			   kep, &kep->ep);
	if (rc) {
		mutex_destroy(&kep->lock);
		kfree(kep);
		return ERR_PTR(rc);
	}
	kref_get(&dom->ref);
	kep->dom = dom;
	kref_get(&av->ref);
	kep->av = av;
	if (attr && attr->cq) {
		kref_get(&attr->cq->ref);
		kep->cq = attr->cq;
	}
	kep->file = debugfs_create_file(kep->name, 0400, dom->dir, kep,
					&kfab_kep_stats_fops);
	return kep;
}
EXPORT_SYMBOL_GPL(kfab_kep_open);

/**
 * kfab_kep_addr() - the address of an endpoint
 * @ep: the endpoint
 * @addr: out: its address, for a peer's AV
 *
 * Any context.
 */
void kfab_kep_addr(struct kfab_kep *ep, struct kfab_addr *addr)
{
	*addr = ep->ep->core->addr;
}
EXPORT_SYMBOL_GPL(kfab_kep_addr);

/* A scatterlist as a bio_vec array, for the engine's iov_iter. */
static int kfab_kreq_sg_to_bvec(struct kfab_kreq *req)
{
	struct scatterlist *sg;
	unsigned int i;

	req->sg_bvec = kmalloc_array(req->nr_segs, sizeof(*req->sg_bvec),
				     GFP_NOIO);
	if (!req->sg_bvec)
		return -ENOMEM;
	for_each_sg(req->sg, sg, req->nr_segs, i) {
		req->sg_bvec[i].bv_page = sg_page(sg);
		req->sg_bvec[i].bv_len = sg->length;
		req->sg_bvec[i].bv_offset = sg->offset;
	}
	return 0;
}

static const u8 kfab_kop_opcode[] = {
	[KFAB_KOP_SEND] = KFAB_OP_SEND,
	[KFAB_KOP_RECV] = KFAB_OP_RECV,
	[KFAB_KOP_TSEND] = KFAB_OP_TSEND,
	[KFAB_KOP_TRECV] = KFAB_OP_TRECV,
};

/**
 * kfab_kep_post() - post a send or a receive
 * @ep: the endpoint
 * @req: the request, filled in by the caller (see &struct kfab_kreq)
 *
 * A send goes to the endpoint at index @req->addr of the endpoint's AV,
 * kernel or user space alike; a receive waits for a message from any
 * endpoint (or from @req->addr only).  Messages are matched in the order
 * receives were posted, per kind (tagged or not).  The request may
 * complete before this returns; its callback never runs in this call's
 * context.  Sleeps; internal allocations are GFP_NOIO, so a block driver
 * may post from its I/O path.
 *
 * Return: 0 when taken (it completes exactly once, later); -EAGAIN when
 * the receiver cannot take more unexpected data now (try again later);
 * -EINVAL for a malformed request (bad op, flags, buffer type or @len
 * beyond the buffers, no callback and no CQ); -ENOMEM; -ESHUTDOWN once
 * kfab_kep_close() has begun.  A request that was not taken never
 * completes.
 */
int kfab_kep_post(struct kfab_kep *ep, struct kfab_kreq *req)
{
	bool send = kfab_kop_is_send(req->op);
	struct kfab_req r = {};
	unsigned int noio;
	int rc;

	might_sleep();
	if (req->op > KFAB_KOP_TRECV || req->buf_type > KFAB_KBUF_SG ||
	    (req->flags & ~KFAB_KREQ_REMOTE_DATA) || (!send && req->flags) ||
	    (!ep->cq && !req->done) || (req->nr_segs && !req->kvec) ||
	    req->len > kfab_kreq_size(req))
		return -EINVAL;
	if (kfab_fault(ep->dom->ctx, KFAB_FAULT_ALLOC))
		return -ENOMEM;

	req->sg_bvec = NULL;
	switch (req->buf_type) {
	case KFAB_KBUF_KVEC:
		iov_iter_kvec(&r.iter, send ? ITER_SOURCE : ITER_DEST,
			      req->kvec, req->nr_segs, req->len);
		break;
	case KFAB_KBUF_BVEC:
		iov_iter_bvec(&r.iter, send ? ITER_SOURCE : ITER_DEST,
			      req->bvec, req->nr_segs, req->len);
		break;
	case KFAB_KBUF_SG:
		if (req->nr_segs) {
			rc = kfab_kreq_sg_to_bvec(req);
			if (rc)
				return rc;
		}
		iov_iter_bvec(&r.iter, send ? ITER_SOURCE : ITER_DEST,
			      req->sg_bvec, req->nr_segs, req->len);
		break;
	}
	r.opcode = kfab_kop_opcode[req->op];
	/* Every success is reported: the caller waits for each request. */
	r.flags = KFAB_SQE_COMPLETION |
		  (req->flags & KFAB_KREQ_REMOTE_DATA ?
		   KFAB_SQE_REMOTE_CQ_DATA : 0);
	r.context = (uintptr_t)req;
	r.addr = req->addr;
	r.tag = req->tag;
	r.ignore = req->ignore;
	r.data = req->data;

	req->ep = ep;
	req->status = 0;
	req->out_len = 0;
	req->out_tag = 0;
	req->out_data = 0;
	req->out_src = KFAB_KADDR_ANY;
	req->out_flags = 0;
	req->start_ns = ktime_get_ns();

	mutex_lock(&ep->lock);
	if (ep->closing) {
		rc = -ESHUTDOWN;
		goto out_free;
	}
	/* On the list before the engine sees it: it may complete at once. */
	spin_lock(&ep->done_lock);
	list_add_tail(&req->link, &ep->outstanding);
	ep->nr_outstanding++;
	if (send)
		ep->nr_sends++;
	spin_unlock(&ep->done_lock);

	if (send && kfab_fault(ep->dom->ctx, KFAB_FAULT_LOSE)) {
		req->status = -EIO;
		kfab_kapi_finish(ep, req);
		rc = 0;
		goto out_unlock;
	}
	if (send && kfab_fault(ep->dom->ctx, KFAB_FAULT_NOREPLY)) {
		/* Reported sent, never delivered: the peer never answers. */
		kfab_kapi_finish(ep, req);
		rc = 0;
		goto out_unlock;
	}

	/* The engine allocates with GFP_KERNEL: not from a block driver's I/O. */
	noio = memalloc_noio_save();
	rc = kfab_msg_post(ep->ep, &r);
	memalloc_noio_restore(noio);
	if (rc) {
		spin_lock(&ep->done_lock);
		list_del_init(&req->link);
		ep->nr_outstanding--;
		if (send)
			ep->nr_sends--;
		spin_unlock(&ep->done_lock);
		goto out_free;
	}
	goto out_unlock;

out_free:
	kfree(req->sg_bvec);
	req->sg_bvec = NULL;
out_unlock:
	mutex_unlock(&ep->lock);
	return rc;
}
EXPORT_SYMBOL_GPL(kfab_kep_post);

/**
 * kfab_kep_cancel() - cancel a posted receive
 * @ep: the endpoint
 * @req: a receive posted on @ep
 *
 * Sleeps.
 *
 * Return: 0 when the receive was still waiting: it completes with
 * -ECANCELED; -ENOENT when it is not waiting (a message matched it, it
 * was cancelled, or it was never posted): its completion, if it was
 * taken, comes or came; -EINVAL for a send (sends cannot be cancelled).
 */
int kfab_kep_cancel(struct kfab_kep *ep, struct kfab_kreq *req)
{
	int rc;

	might_sleep();
	if (kfab_kop_is_send(req->op))
		return -EINVAL;
	mutex_lock(&ep->lock);
	if (ep->closing)
		rc = -ENOENT;
	else
		rc = kfab_msg_cancel(ep->ep->core->rxc, (uintptr_t)req);
	mutex_unlock(&ep->lock);
	return rc;
}
EXPORT_SYMBOL_GPL(kfab_kep_cancel);

static bool kfab_kep_sends_done(struct kfab_kep *ep)
{
	bool done;

	spin_lock(&ep->done_lock);
	done = !ep->nr_sends;
	spin_unlock(&ep->done_lock);
	return done;
}

/**
 * kfab_kep_close() - close an endpoint
 * @ep: the endpoint
 *
 * Stops the endpoint: posts fail with -ESHUTDOWN from now on.  Its sends
 * still outstanding are waited for: a send of more than 64 KiB that no
 * receive has taken yet waits at its receiver in the caller's memory, and
 * ends when the receiver takes it or goes away (-ECONNRESET); a caller
 * that cannot wait for its peers keeps its messages at 64 KiB or less
 * (they are copied at once).  Its posted receives then complete with
 * -ECANCELED.  Returns once every callback of the endpoint has returned;
 * completions for a kernel CQ may still wait there to be polled.  Must
 * not be called from a callback of the same endpoint (it waits for
 * them).  Sleeps.
 */
void kfab_kep_close(struct kfab_kep *ep)
{
	struct kfab_kreq *req, *next;
	LIST_HEAD(left);

	might_sleep();
	mutex_lock(&ep->lock);
	ep->closing = true;
	mutex_unlock(&ep->lock);

	/*
	 * A send that waits at a receiver refers to the caller's memory, and
	 * only the receiver ends it (taking it, or going away): wait for it.
	 */
	wait_event(ep->sends_done, kfab_kep_sends_done(ep));

	/* The engine's endpoint goes: no completion comes from it after. */
	WARN_ON(kfab_object_destroy(ep->dom->ctx, ep->ep->obj.id));
	ep->ep = NULL;

	/* What the engine dropped without a word ends here. */
	spin_lock(&ep->done_lock);
	list_splice_init(&ep->outstanding, &left);
	spin_unlock(&ep->done_lock);
	list_for_each_entry_safe(req, next, &left, link) {
		req->status = -ECANCELED;
		kfab_kapi_finish(ep, req);
	}
	flush_work(&ep->work);

	debugfs_remove(ep->file);
	if (ep->cq)
		kfab_kcq_close(ep->cq);
	kfab_kav_close(ep->av);
	kfab_kdomain_put(ep->dom);
	mutex_destroy(&ep->lock);
	kfree(ep);
}
EXPORT_SYMBOL_GPL(kfab_kep_close);

/* ---- module ---- */

int kfab_kapi_init(void)
{
	kfab_kapi_wq = alloc_workqueue("kfab_kapi", WQ_UNBOUND | WQ_MEM_RECLAIM,
				       0);
	if (!kfab_kapi_wq)
		return -ENOMEM;
	kfab_kapi_dir = debugfs_create_dir("kapi", kfab_debugfs_root);
#ifdef CONFIG_KFAB_TEST
	debugfs_create_file("selftest", 0400, kfab_kapi_dir, NULL,
			    &kfab_kapi_test_fops);
#endif
	return 0;
}

void kfab_kapi_exit(void)
{
	/* Consumers hold the module: nothing of theirs is left. */
	destroy_workqueue(kfab_kapi_wq);
}
