// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Large copies shared by both processes (Documentation/design.rst, "A
 * message's path"; Documentation/bench.rst, "Large copies shared by both
 * CPUs").
 *
 * A send that matches a posted receive is copied by the sender's doorbell
 * into the receive's pinned pages (msg.c, kfab_recv_deliver()), while the
 * receiving process, on a machine with a CPU to spare, spins in
 * fi_cq_read() waiting for it.  A large one (kfab_share_min_bytes and
 * more) becomes a copy job instead: the sender pins its own source pages
 * too (charged to its RLIMIT_MEMLOCK, as a rendezvous is), so that both
 * sides' pages are reachable from any process, and the copy is cut into
 * KFAB_SHARE_CHUNK pieces that whoever takes one copies page to page.  The
 * job is published on the receiving endpoint's receive CQ (its @shares,
 * and the ring's KFAB_CQ_RING_HELP bit, which libshim's CQ reads look
 * at), and the CQ's owner takes pieces with KFAB_IOC_CQ_HELP while the
 * sender takes the others.  One copy per byte still, no access to another
 * process's memory but what it pinned itself for this message, and a
 * helper reaches only the jobs of its own CQ (ids are per file).
 *
 * The mirror case is a receive that takes a message waiting at its
 * sender (a rendezvous: the sender's pages are pinned already), which the
 * receiver's doorbell copies: the receiver pins its own buffers, and the
 * job goes on the sender's transmit CQ, where the sending process waits
 * for its send to complete (kfab_share_copy_out()).
 *
 * The party that copies today (the initiator) owns the job, which lives
 * on its stack for the length of the copy: it claims pieces until none is
 * left untaken, takes the job off the CQ, waits for the pieces helpers
 * are still copying (one each at most: page to page, a piece cannot
 * fault, sleep or be interrupted), and then reports the receive and the
 * send as it always did.  A helper that never polls, stops polling or
 * dies costs nothing but its own pieces' time: the initiator copies what
 * is left.  A helper with a signal pending stops taking
 * pieces and returns.  Pinning that fails (RLIMIT_MEMLOCK, a bad source
 * page) falls back to the initiator's own copy, which reports -EFAULT for
 * a bad page as before.
 *
 * A very large job (kfab_share_fanout_bytes and more) is offered to
 * kernel workers as well, on a machine with more CPUs than the two
 * processes occupy: the initiator queues up to kfab_share_workers items
 * on an unbound workqueue, which the scheduler starts on idle CPUs, and
 * each takes pieces like a helper.  kfab cannot see which CPUs are idle;
 * the scheduler can.  Where none is, a worker gets a CPU after the pieces
 * are gone and returns at once, or never runs: the initiator cancels
 * what has not started once its own claims find nothing left.  A worker
 * copies only between the two sides' pinned pages, so it runs as no
 * process and reaches nothing but the job; its CPU time is the
 * kworker's, not either process's.
 *
 * Locking (kfab.h "Locking"): the initiator holds the receive context's
 * lock (4) throughout, as for every copy into a receive, and in the
 * mirror case the sender's kfab_ep_core.share_lock (4a) too.  Helpers and
 * workers take only the CQ's lock (8), under which pieces are claimed and
 * counted and jobs are added and removed; they never wait for a receive
 * context, so the initiator's wait for them (the completion, then
 * cancel_work_sync()) is bounded.  complete() is called with no lock held.
 */
#include <linux/completion.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/uio.h>
#include <linux/workqueue.h>

#include "kfab.h"

/* Bytes one claim takes: small enough to share, large enough to pay. */
#define KFAB_SHARE_CHUNK	(64 * 1024)

/*
 * Copies into one receive of at least this many bytes are shared (0: none
 * is): /sys/module/kfab/parameters/share_min_bytes, read once per copy.
 */
unsigned int kfab_share_min_bytes = 256 * 1024;
module_param_named(share_min_bytes, kfab_share_min_bytes, uint, 0644);
MODULE_PARM_DESC(share_min_bytes,
		 "copies into a receive of at least this many bytes are shared with the receiver's CPU (0: never)");

/*
 * Copies of at least this many bytes are offered to kernel workers too
 * (0: never): /sys/module/kfab/parameters/share_fanout_bytes.
 */
static unsigned int kfab_share_fanout_bytes = 4 * 1024 * 1024;
module_param_named(share_fanout_bytes, kfab_share_fanout_bytes, uint, 0644);
MODULE_PARM_DESC(share_fanout_bytes,
		 "shared copies of at least this many bytes are offered to kernel workers on idle CPUs too (0: never)");

/* The most workers one copy is offered to; -1: online CPUs but two. */
static int kfab_share_workers = -1;
module_param_named(share_workers, kfab_share_workers, int, 0644);
MODULE_PARM_DESC(share_workers,
		 "kernel workers offered one copy of share_fanout_bytes or more (-1: online CPUs but the two processes', at most 8)");

#define KFAB_SHARE_WORKERS_MAX	8

/* Unbound: the scheduler starts its items where a CPU is idle. */
static struct workqueue_struct *kfab_share_wq;

/* Totals since load, for debugfs "share" */
static atomic64_t kfab_share_jobs;
static atomic64_t kfab_share_chunks;
static atomic64_t kfab_share_helped;
static atomic64_t kfab_share_fallbacks;
static atomic64_t kfab_share_offered;
static atomic64_t kfab_share_by_workers;
static atomic64_t kfab_share_serial;

/**
 * struct kfab_share - a copy job: one large message into one receive
 * @link: on its CQ's @shares while published (under the CQ's lock)
 * @serial: tells jobs apart (a helper's cursors belong to one job)
 * @dst: the receive's pages, pinned by the receiver
 * @dst_off: where in @dst the message goes
 * @src: the message's pages, pinned by the sender
 * @src_off: where in @src it starts
 * @len: bytes
 * @nr_chunks: pieces of KFAB_SHARE_CHUNK (the last may be shorter)
 * @next: the next piece to claim (under the CQ's lock)
 * @busy: pieces helpers are copying now (under the CQ's lock)
 * @helped: pieces helpers copied (under the CQ's lock)
 * @by_workers: pieces kernel workers copied (under the CQ's lock)
 * @status: 0, or the first piece's error (under the CQ's lock)
 * @closed: off the CQ: the initiator waits for @busy to reach 0
 * @idle: completed by the helper that ends the last busy piece once
 *	@closed
 */
struct kfab_share {
	struct list_head link;
	u64 serial;
	struct kfab_buf *dst;
	size_t dst_off;
	struct kfab_buf *src;
	size_t src_off;
	size_t len;
	unsigned int nr_chunks;
	unsigned int next;
	unsigned int busy;
	unsigned int helped;
	unsigned int by_workers;
	int status;
	bool closed;
	struct completion idle;
};

/* Whether any job on @cq has pieces nobody took. */
static bool kfab_share_wanted_on(struct kfab_cq *cq)
{
	struct kfab_share *sh;

	lockdep_assert_held(&cq->lock);
	list_for_each_entry(sh, &cq->shares, link)
		if (sh->next < sh->nr_chunks)
			return true;
	return false;
}

/* The ring's flags word follows the overflow list and the jobs. */
void kfab_cq_sync_flags(struct kfab_cq *cq)
{
	u32 flags = 0;

	lockdep_assert_held(&cq->lock);
	if (cq->nr_overflow)
		flags |= KFAB_CQ_RING_OVERFLOW;
	if (kfab_share_wanted_on(cq))
		flags |= KFAB_CQ_RING_HELP;
	WRITE_ONCE(cq->ring->flags, flags);
}

/* Claim the next piece of @sh: its number, or @sh->nr_chunks for none. */
static unsigned int kfab_share_claim(struct kfab_cq *cq, struct kfab_share *sh)
{
	unsigned int c;

	lockdep_assert_held(&cq->lock);
	if (sh->next >= sh->nr_chunks)
		return sh->nr_chunks;
	c = sh->next++;
	if (sh->next == sh->nr_chunks)
		kfab_cq_sync_flags(cq);
	return c;
}

/* Copy piece @c of @sh, with the caller's cursors. */
static int kfab_share_copy_chunk(struct kfab_share *sh, unsigned int c,
				 struct kfab_buf_cursor *dc,
				 struct kfab_buf_cursor *sc)
{
	size_t off = (size_t)c * KFAB_SHARE_CHUNK;
	size_t n = min_t(size_t, sh->len - off, KFAB_SHARE_CHUNK);

	return kfab_buf_copy_buf(sh->dst, dc, sh->dst_off + off, sh->src, sc,
				 sh->src_off + off, n);
}

/**
 * kfab_share_wanted() - whether a copy into a receive is worth sharing
 * @cq: the receiving endpoint's receive CQ, or NULL
 * @from: the message: the sender's own memory, or anything else
 * @n: bytes to copy
 *
 * Only a user process's send (its memory is pinned here, its doorbell
 * waits for the copy) to an endpoint whose CQ a process reads.
 */
bool kfab_share_wanted(struct kfab_cq *cq, const struct iov_iter *from,
		       size_t n)
{
	unsigned int min = READ_ONCE(kfab_share_min_bytes);

	return cq && min && n >= min &&
	       (iter_is_iovec(from) || iter_is_ubuf(from));
}

/* Publish @sh on @cq: helpers may take pieces from now on. */
static void kfab_share_publish(struct kfab_cq *cq, struct kfab_share *sh)
{
	spin_lock(&cq->lock);
	list_add_tail(&sh->link, &cq->shares);
	kfab_cq_sync_flags(cq);
	spin_unlock(&cq->lock);
	/* A reader asleep in fi_cq_sread() may come and help. */
	kfab_cq_wake(cq);
}

/* Take @sh off @cq and wait for the pieces helpers still copy. */
static void kfab_share_close(struct kfab_cq *cq, struct kfab_share *sh)
{
	bool wait;

	spin_lock(&cq->lock);
	list_del(&sh->link);
	sh->closed = true;
	wait = sh->busy;
	kfab_cq_sync_flags(cq);
	spin_unlock(&cq->lock);
	if (wait)
		wait_for_completion(&sh->idle);
}

/**
 * struct kfab_share_worker - a job's piece taker on a kernel worker
 * @work: on kfab_share_wq until it runs or its initiator cancels it
 * @cq: the job's CQ (the initiator keeps it there)
 * @sh: the job (the initiator waits for @work before it returns)
 */
struct kfab_share_worker {
	struct work_struct work;
	struct kfab_cq *cq;
	struct kfab_share *sh;
};

/* Workers to offer @sh: none below the threshold or without spare CPUs. */
static unsigned int kfab_share_nr_workers(const struct kfab_share *sh)
{
	unsigned int min = READ_ONCE(kfab_share_fanout_bytes);
	int n = READ_ONCE(kfab_share_workers);

	if (!min || sh->len < min)
		return 0;
	/* The sender's CPU and the receiver's copy already. */
	if (n < 0)
		n = num_online_cpus() - 2;
	n = clamp(n, 0, KFAB_SHARE_WORKERS_MAX);
	/* Each should find two pieces at least. */
	return min_t(unsigned int, n, sh->nr_chunks / 2);
}

/*
 * Claim and copy pieces of @sh until none is left untaken: the initiator
 * (@worker false) or a kernel worker, whose pieces @sh counts.
 */
static void kfab_share_take_rest(struct kfab_cq *cq, struct kfab_share *sh,
				 bool worker)
{
	struct kfab_buf_cursor dc = { }, sc = { };
	unsigned int c;
	int rc;

	for (;;) {
		spin_lock(&cq->lock);
		c = kfab_share_claim(cq, sh);
		spin_unlock(&cq->lock);
		if (c == sh->nr_chunks)
			return;
		rc = kfab_share_copy_chunk(sh, c, &dc, &sc);
		if (rc || worker) {
			spin_lock(&cq->lock);
			sh->status = sh->status ?: rc;
			sh->by_workers += worker;
			spin_unlock(&cq->lock);
		}
		cond_resched();
	}
}

static void kfab_share_work(struct work_struct *work)
{
	struct kfab_share_worker *w =
		container_of(work, struct kfab_share_worker, work);

	kfab_share_take_rest(w->cq, w->sh, true);
}

/*
 * Offer @sh (published) to kernel workers.  Return: the items queued
 * (kfab_share_recall() takes them back), or NULL for none.
 */
static struct kfab_share_worker *kfab_share_offer(struct kfab_cq *cq,
						  struct kfab_share *sh,
						  unsigned int *nr)
{
	struct kfab_share_worker *w;
	unsigned int i;

	*nr = kfab_share_nr_workers(sh);
	if (!*nr)
		return NULL;
	/* Only a copy this large gets here: an allocation is noise. */
	w = kcalloc(*nr, sizeof(*w), GFP_KERNEL_ACCOUNT);
	if (!w) {
		*nr = 0;
		return NULL;
	}
	for (i = 0; i < *nr; i++) {
		INIT_WORK(&w[i].work, kfab_share_work);
		w[i].cq = cq;
		w[i].sh = sh;
		queue_work(kfab_share_wq, &w[i].work);
	}
	atomic64_add(*nr, &kfab_share_offered);
	return w;
}

/* Cancel the workers that never started, wait for those that did. */
static void kfab_share_recall(struct kfab_share_worker *w, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		cancel_work_sync(&w[i].work);
	kfree(w);
}

/*
 * Publish @sh (its buffers and length set) on @cq, copy pieces until
 * none is left untaken, then take it off and wait for the helpers' and
 * workers' last pieces.  Return: 0, or the first piece's error.
 */
static int kfab_share_run(struct kfab_cq *cq, struct kfab_share *sh)
{
	struct kfab_share_worker *workers;
	unsigned int nr_workers;

	init_completion(&sh->idle);
	sh->nr_chunks = DIV_ROUND_UP(sh->len, KFAB_SHARE_CHUNK);
	sh->serial = atomic64_inc_return(&kfab_share_serial);
	kfab_share_publish(cq, sh);
	workers = kfab_share_offer(cq, sh, &nr_workers);
	kfab_share_take_rest(cq, sh, false);
	kfab_share_close(cq, sh);
	/* Once the workers are back too, @sh is final: status and counts. */
	if (workers)
		kfab_share_recall(workers, nr_workers);
	atomic64_inc(&kfab_share_jobs);
	atomic64_add(sh->nr_chunks, &kfab_share_chunks);
	atomic64_add(sh->helped, &kfab_share_helped);
	atomic64_add(sh->by_workers, &kfab_share_by_workers);
	return sh->status;
}

/**
 * kfab_share_copy() - copy a large message into a receive, with help
 * @cq: the receiving endpoint's receive CQ (kfab_share_wanted() said yes)
 * @dst: the receive's pinned pages
 * @dst_off: where in them the message goes
 * @from: the message, in the current process's memory; advanced by @n
 * @n: bytes
 * @cache: the sender's file, whose kept pins @from may use, or NULL
 *
 * Called by the sender with the receive context's lock held, which keeps
 * the receiving endpoint and @cq there.  Returns once every byte is in.
 * Return: 0 or -EFAULT, as kfab_buf_copy_in().
 */
int kfab_share_copy(struct kfab_cq *cq, struct kfab_buf *dst, size_t dst_off,
		    struct iov_iter *from, size_t n,
		    struct kfab_pin_cache *cache)
{
	struct kfab_buf src = { .cache = cache };
	struct kfab_share sh = {
		.dst = dst,
		.dst_off = dst_off,
		.src = &src,
		.len = n,
	};
	struct iov_iter part = *from;
	int rc;

	iov_iter_truncate(&part, n);
	rc = kfab_buf_get(&src, &part, false, NULL);
	if (rc) {
		/* Not pinned: alone, as always (a bad page fails there). */
		kfab_buf_put(&src);
		atomic64_inc(&kfab_share_fallbacks);
		return kfab_buf_copy_in(dst, dst_off, from, n);
	}
	rc = kfab_share_run(cq, &sh);
	kfab_buf_put(&src);
	iov_iter_advance(from, n);
	return rc;
}

/**
 * kfab_share_copy_out() - copy a message that waited at its sender into a
 *	receive, with the sender's help
 * @sender: the sending endpoint's core (the message holds a reference)
 * @src: the message's pages, pinned by the sender
 * @to: the receive's buffers, the current process's memory; advanced by @n
 * @n: bytes
 *
 * The mirror of kfab_share_copy(): called by the receiver's doorbell with
 * its receive context's lock held; the job goes on the sender's transmit
 * CQ, whose owner waits there for its send to complete.  @sender's
 * @share_lock keeps that CQ there: taken with a trylock (another
 * receiver's copy of the same sender's messages, or the endpoint going,
 * holds it: then the receiver copies alone, as does one that cannot pin
 * its buffers).  Return: 0 or -EFAULT, as kfab_buf_copy_out().
 */
int kfab_share_copy_out(struct kfab_ep_core *sender, struct kfab_buf *src,
			struct iov_iter *to, size_t n)
{
	struct kfab_buf dst = { };
	struct kfab_share sh = {
		.dst = &dst,
		.src = src,
		.len = n,
	};
	struct iov_iter part = *to;
	struct kfab_cq *cq;
	int rc;

	if (!mutex_trylock(&sender->share_lock))
		return kfab_buf_copy_out(src, 0, to, n);
	cq = sender->tx_cq;
	if (!kfab_share_wanted(cq, to, n))
		goto alone;
	iov_iter_truncate(&part, n);
	if (kfab_buf_get(&dst, &part, true, NULL)) {
		kfab_buf_put(&dst);
		atomic64_inc(&kfab_share_fallbacks);
		goto alone;
	}
	rc = kfab_share_run(cq, &sh);
	mutex_unlock(&sender->share_lock);
	kfab_buf_put(&dst);
	iov_iter_advance(to, n);
	return rc;

alone:
	mutex_unlock(&sender->share_lock);
	return kfab_buf_copy_out(src, 0, to, n);
}

/*
 * One piece of a job of @cq for a helper: the job with the piece claimed
 * and counted busy, or NULL when no job has pieces left.
 */
static struct kfab_share *kfab_share_take(struct kfab_cq *cq,
					  unsigned int *chunk)
{
	struct kfab_share *sh;

	spin_lock(&cq->lock);
	list_for_each_entry(sh, &cq->shares, link) {
		*chunk = kfab_share_claim(cq, sh);
		if (*chunk < sh->nr_chunks) {
			sh->busy++;
			spin_unlock(&cq->lock);
			return sh;
		}
	}
	spin_unlock(&cq->lock);
	return NULL;
}

/* A helper's piece is in; the last one of a closed job wakes its owner. */
static void kfab_share_put(struct kfab_cq *cq, struct kfab_share *sh, int rc)
{
	bool wake;

	spin_lock(&cq->lock);
	if (rc && !sh->status)
		sh->status = rc;
	sh->helped++;
	cq->helped++;
	wake = !--sh->busy && sh->closed;
	spin_unlock(&cq->lock);
	/* Not a byte of @sh after this: its owner may return at once. */
	if (wake)
		complete(&sh->idle);
}

int kfab_ioctl_cq_help(struct kfab_ucmd *ucmd)
{
	struct kfab_cq_help *cmd = ucmd->cmd;
	struct kfab_buf_cursor dc = { }, sc = { };
	u64 serial = 0, chunks = 0, bytes = 0;
	struct kfab_share *sh;
	struct kfab_cq *cq;
	unsigned int c;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	cq = kfab_cq_get(ucmd->ctx, cmd->cq_id);
	if (!cq)
		return -ENOENT;
	while (!signal_pending(current)) {
		sh = kfab_share_take(cq, &c);
		if (!sh)
			break;
		/* Pieces of one job come in ascending order: keep walking. */
		if (sh->serial != serial) {
			dc = (struct kfab_buf_cursor){ };
			sc = (struct kfab_buf_cursor){ };
			serial = sh->serial;
		}
		rc = kfab_share_copy_chunk(sh, c, &dc, &sc);
		chunks++;
		bytes += min_t(size_t, sh->len - (size_t)c * KFAB_SHARE_CHUNK,
			       KFAB_SHARE_CHUNK);
		kfab_share_put(cq, sh, rc);
		cond_resched();
	}
	kfab_cq_put(cq);
	*cmd = (struct kfab_cq_help){
		.size = cmd->size,
		.cq_id = cmd->cq_id,
		.out_chunks = chunks,
		.out_bytes = bytes,
	};
	return kfab_ucmd_respond(ucmd, sizeof(*cmd));
}

/* debugfs "share": the totals since load. */
void kfab_share_debugfs_show(struct seq_file *s)
{
	seq_printf(s, "min_bytes %u chunk %u jobs %lld chunks %lld helped %lld fallbacks %lld\n",
		   READ_ONCE(kfab_share_min_bytes), KFAB_SHARE_CHUNK,
		   atomic64_read(&kfab_share_jobs),
		   atomic64_read(&kfab_share_chunks),
		   atomic64_read(&kfab_share_helped),
		   atomic64_read(&kfab_share_fallbacks));
	seq_printf(s, "fanout_bytes %u workers %d offered %lld by_workers %lld\n",
		   READ_ONCE(kfab_share_fanout_bytes),
		   READ_ONCE(kfab_share_workers),
		   atomic64_read(&kfab_share_offered),
		   atomic64_read(&kfab_share_by_workers));
}

int kfab_share_init(void)
{
	/* Several items of one job run at once, each on a CPU of its own. */
	kfab_share_wq = alloc_workqueue("kfab_share", WQ_UNBOUND, 0);
	return kfab_share_wq ? 0 : -ENOMEM;
}

/* Every item was waited for by its initiator: the queue is empty. */
void kfab_share_exit(void)
{
	destroy_workqueue(kfab_share_wq);
}
