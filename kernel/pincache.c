// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Pins kept across messages: a large buffer a process sends from or
 * receives into again and again stays pinned between its messages, so
 * that only its first message pays for pinning and unpinning its pages,
 * which costs as much as copying them (Documentation/bench.rst, "Where a
 * 1 MiB message's time goes").  RDMA providers keep such a cache of
 * registrations; ours is the kernel's side of it and needs nothing from
 * the program.
 *
 * A kept pin is only right while the process's addresses still map the
 * pages it holds: every entry has an MMU interval notifier over its range,
 * and any change there (munmap, mremap, madvise, a fork's write-protect)
 * marks it stale, after which no new request takes it.  A request that
 * took it before the change goes on with the old pages, as it would had
 * the change come a moment after its copy: pinned pages are never freed
 * under anyone.  An entry is made only after its pages were pinned with
 * no change in between (the notifier's sequence, mmu_interval_read_retry()).
 *
 * One cache per open file (struct kfab_ctx), holding entries of whichever
 * process pinned through the file (an entry is taken only by its own mm).
 * Bounded: at most KFAB_PIN_CACHE_ENTRIES entries and a quarter of the
 * pinning process's RLIMIT_MEMLOCK (KFAB_PIN_CACHE_MAX_BYTES with
 * CAP_IPC_LOCK or no limit), charged to it (mm->pinned_vm) while kept;
 * the least recently used unused entry makes room.  Kept pages show in
 * the process's VmPin and in debugfs, not in an endpoint's pinned bytes.
 *
 * A stale entry goes soon, not at the file's next large request: the
 * notifier queues the cache's prune work, so memory a program unmaps, or
 * a forked child's that exits, is not held pinned behind its back.
 *
 * Locking: the cache's mutex covers its list and counts (taken where
 * pins are taken: process context, possibly under a receive context's
 * lock, never under a spinlock); an entry's spinlock, inside it, covers
 * its @stale, its @cache and the notifier's sequence, and is all the
 * notifier callback takes.  The last reference's release (the notifier's
 * removal, which may sleep, and the unpinning) runs on a workqueue: a
 * buffer is let go in many places.
 */
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "kfab.h"

/* Buffers from this size on are kept: below it pinning costs little. */
#define KFAB_PIN_CACHE_MIN_BYTES	(64 * 1024)
#define KFAB_PIN_CACHE_ENTRIES		64
#define KFAB_PIN_CACHE_MAX_BYTES	(256UL << 20)

static bool kfab_pin_cache_on = true;
module_param_named(pin_cache, kfab_pin_cache_on, bool, 0644);
MODULE_PARM_DESC(pin_cache,
		 "keep large buffers pinned between their messages (default: on)");

static struct workqueue_struct *kfab_pin_wq;

/**
 * struct kfab_pinned - a kept pin of one process's range
 * @mni: the notifier over [@start, @start + @nr_pages pages)
 * @lock: @stale, @cache and @mni's sequence
 * @link: on the cache's list, most recently used first (its mutex)
 * @cache: while on its list (its mutex and @lock: either is enough to
 *	read it): the cache to prune when the range changes
 * @users: the cache's (while listed) and one per buffer using it
 * @mm: the pinning process's (mmgrab()), charged for @nr_pages
 * @start: page aligned
 * @nr_pages: pages pinned
 * @writable: pinned for writing (receives)
 * @stale: the range changed: no new buffer takes it (written under
 *	@lock, read without it: a byte, not a bool, for READ_ONCE())
 * @release: the last user's release, on kfab_pin_wq
 * @pages: the pinned pages, @nr_pages of them
 */
struct kfab_pinned {
	struct mmu_interval_notifier mni;
	spinlock_t lock;	/* @stale, @cache, @mni's sequence */
	struct list_head link;
	struct kfab_pin_cache *cache;
	refcount_t users;
	struct mm_struct *mm;
	unsigned long start;
	unsigned long nr_pages;
	bool writable;
	u8 stale;
	struct work_struct release;
	struct page **pages;
};

/* Any change of the range: no request takes the entry from now on. */
static bool kfab_pinned_invalidate(struct mmu_interval_notifier *mni,
				   const struct mmu_notifier_range *range,
				   unsigned long cur_seq)
{
	struct kfab_pinned *p = container_of(mni, struct kfab_pinned, mni);

	/* Only a spinlock and a work queued: fine where we cannot block. */
	spin_lock(&p->lock);
	mmu_interval_set_seq(mni, cur_seq);
	WRITE_ONCE(p->stale, 1);
	if (p->cache)
		queue_work(kfab_pin_wq, &p->cache->prune);
	spin_unlock(&p->lock);
	return true;
}

static const struct mmu_interval_notifier_ops kfab_pinned_ops = {
	.invalidate = kfab_pinned_invalidate,
};

static void kfab_pinned_free(struct kfab_pinned *p)
{
	mmu_interval_notifier_remove(&p->mni);
	unpin_user_pages_dirty_lock(p->pages, p->nr_pages, p->writable);
	atomic64_sub(p->nr_pages, &p->mm->pinned_vm);
	mmdrop(p->mm);
	kvfree(p->pages);
	kfree(p);
}

static void kfab_pinned_release(struct work_struct *work)
{
	kfab_pinned_free(container_of(work, struct kfab_pinned, release));
}

/* A buffer (or the cache) lets the entry go. */
void kfab_pinned_put(struct kfab_pinned *p)
{
	if (refcount_dec_and_test(&p->users))
		queue_work(kfab_pin_wq, &p->release);
}

struct page **kfab_pinned_pages(struct kfab_pinned *p, unsigned long start)
{
	return p->pages + ((start - p->start) >> PAGE_SHIFT);
}

static void kfab_pin_cache_prune(struct work_struct *work);

void kfab_pin_cache_init(struct kfab_pin_cache *c)
{
	mutex_init(&c->lock);
	INIT_LIST_HEAD(&c->lru);
	INIT_WORK(&c->prune, kfab_pin_cache_prune);
}

/* Off the list; the caller puts the cache's reference after unlocking. */
static void kfab_pin_cache_unlist(struct kfab_pin_cache *c,
				  struct kfab_pinned *p, struct list_head *gone)
{
	lockdep_assert_held(&c->lock);
	list_move(&p->link, gone);
	/* Its notifier no longer queues @c's pruning (kfab_pin_cache_fini()). */
	spin_lock(&p->lock);
	p->cache = NULL;
	spin_unlock(&p->lock);
	c->nr--;
	c->nr_pages -= p->nr_pages;
}

static void kfab_pin_cache_put_list(struct list_head *gone)
{
	struct kfab_pinned *p, *next;

	list_for_each_entry_safe(p, next, gone, link) {
		list_del(&p->link);
		kfab_pinned_put(p);
	}
}

/* Off the list if its range changed.  Return: whether it was. */
static bool kfab_pin_cache_drop_stale(struct kfab_pin_cache *c,
				      struct kfab_pinned *p,
				      struct list_head *gone)
{
	if (!READ_ONCE(p->stale))
		return false;
	kfab_pin_cache_unlist(c, p, gone);
	c->stale++;
	return true;
}

/* Stale entries off the list, their pins let go unless a buffer has them. */
static void kfab_pin_cache_prune(struct work_struct *work)
{
	struct kfab_pin_cache *c = container_of(work, struct kfab_pin_cache,
						prune);
	struct kfab_pinned *p, *next;
	LIST_HEAD(gone);

	mutex_lock(&c->lock);
	list_for_each_entry_safe(p, next, &c->lru, link)
		kfab_pin_cache_drop_stale(c, p, &gone);
	mutex_unlock(&c->lock);
	kfab_pin_cache_put_list(&gone);
}

/*
 * The end of a file: entries nobody else uses go now (the process sees
 * its VmPin fall as its file closes), the others once their last
 * buffers let go.
 */
void kfab_pin_cache_fini(struct kfab_pin_cache *c)
{
	struct kfab_pinned *p, *next;
	LIST_HEAD(gone);

	mutex_lock(&c->lock);
	list_for_each_entry_safe(p, next, &c->lru, link)
		kfab_pin_cache_unlist(c, p, &gone);
	mutex_unlock(&c->lock);
	/* Unlisted, no entry queues it again: the cache may go after this. */
	cancel_work_sync(&c->prune);
	list_for_each_entry_safe(p, next, &gone, link) {
		list_del(&p->link);
		if (refcount_dec_and_test(&p->users))
			kfab_pinned_free(p);
	}
	mutex_destroy(&c->lock);
}

/* What the cache may keep of the current process's pins, in pages. */
static unsigned long kfab_pin_cache_max_pages(void)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK);

	if (limit == RLIM_INFINITY || capable(CAP_IPC_LOCK))
		limit = KFAB_PIN_CACHE_MAX_BYTES;
	else
		limit = min(limit / 4, KFAB_PIN_CACHE_MAX_BYTES);
	return limit >> PAGE_SHIFT;
}

/*
 * Room for @nr_pages more: unused entries go, least recently used first,
 * stale ones whatever their place.  Return: whether there is room.
 */
static bool kfab_pin_cache_make_room(struct kfab_pin_cache *c,
				     unsigned long nr_pages,
				     struct list_head *gone)
{
	unsigned long max = kfab_pin_cache_max_pages();
	struct kfab_pinned *p, *prev;

	lockdep_assert_held(&c->lock);
	if (nr_pages > max)
		return false;
	list_for_each_entry_safe_reverse(p, prev, &c->lru, link) {
		if (c->nr < KFAB_PIN_CACHE_ENTRIES &&
		    c->nr_pages + nr_pages <= max)
			break;
		/* The cache's own reference only: no buffer uses it. */
		if (READ_ONCE(p->stale) || refcount_read(&p->users) == 1) {
			kfab_pin_cache_unlist(c, p, gone);
			c->evicted++;
		}
	}
	return c->nr < KFAB_PIN_CACHE_ENTRIES && c->nr_pages + nr_pages <= max;
}

/* A kept entry of ours that covers the range, with a reference. */
static struct kfab_pinned *kfab_pin_cache_find(struct kfab_pin_cache *c,
					       unsigned long start,
					       unsigned long nr_pages,
					       bool writable,
					       struct list_head *gone)
{
	unsigned long end = start + (nr_pages << PAGE_SHIFT);
	struct kfab_pinned *p, *next;

	lockdep_assert_held(&c->lock);
	list_for_each_entry_safe(p, next, &c->lru, link) {
		if (kfab_pin_cache_drop_stale(c, p, gone))
			continue;
		if (p->mm != current->mm || (writable && !p->writable) ||
		    start < p->start ||
		    end > p->start + (p->nr_pages << PAGE_SHIFT))
			continue;
		refcount_inc(&p->users);
		list_move(&p->link, &c->lru);
		return p;
	}
	return NULL;
}

/* Pin the range anew, with its notifier.  Return: the entry or NULL. */
static struct kfab_pinned *kfab_pinned_new(unsigned long start,
					   unsigned long nr_pages,
					   bool writable)
{
	unsigned int gup = FOLL_LONGTERM | (writable ? FOLL_WRITE : 0);
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	struct mm_struct *mm = current->mm;
	struct kfab_pinned *p;
	unsigned long seq;
	bool changed;
	int rc;

	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return NULL;
	p->pages = kvmalloc_array(nr_pages, sizeof(*p->pages),
				  GFP_KERNEL_ACCOUNT);
	if (!p->pages) {
		kfree(p);
		return NULL;
	}
	if (atomic64_add_return(nr_pages, &mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK))
		goto err_charge;
	spin_lock_init(&p->lock);
	refcount_set(&p->users, 1);
	INIT_WORK(&p->release, kfab_pinned_release);
	p->start = start;
	p->nr_pages = nr_pages;
	p->writable = writable;
	if (mmu_interval_notifier_insert(&p->mni, mm, start,
					 nr_pages << PAGE_SHIFT,
					 &kfab_pinned_ops))
		goto err_charge;
	/* A change from here on is seen below: the pages are not kept. */
	seq = mmu_interval_read_begin(&p->mni);
	rc = pin_user_pages_fast(start, nr_pages, gup, p->pages);
	if (rc != nr_pages) {
		if (rc > 0)
			unpin_user_pages(p->pages, rc);
		goto err_notifier;
	}
	spin_lock(&p->lock);
	changed = mmu_interval_read_retry(&p->mni, seq);
	spin_unlock(&p->lock);
	if (changed) {
		unpin_user_pages(p->pages, nr_pages);
		goto err_notifier;
	}
	mmgrab(mm);
	p->mm = mm;
	return p;

err_notifier:
	mmu_interval_notifier_remove(&p->mni);
err_charge:
	atomic64_sub(nr_pages, &mm->pinned_vm);
	kvfree(p->pages);
	kfree(p);
	return NULL;
}

/**
 * kfab_pin_cache_get() - a kept pin of the current process's range
 * @c: the file's cache
 * @start: the range's first byte
 * @len: its bytes
 * @writable: the kernel will write into it
 *
 * Return: an entry covering the range, with a reference for the caller
 * (kfab_pinned_put()), its pages at kfab_pinned_pages(); or NULL: pin it
 * as a buffer of its own (too small, the cache is off or full of ranges
 * in use, the limit is reached, the range changed while being pinned).
 */
struct kfab_pinned *kfab_pin_cache_get(struct kfab_pin_cache *c,
				       unsigned long start, size_t len,
				       bool writable)
{
	unsigned long first = start & PAGE_MASK, nr_pages;
	struct kfab_pinned *p;
	LIST_HEAD(gone);

	/* Written through sysfs at any time: either value is right. */
	if (!c || len < KFAB_PIN_CACHE_MIN_BYTES || !current->mm ||
	    !kfab_pin_cache_on)
		return NULL;
	/*
	 * User space's address and length: a range that wraps or leaves
	 * user space would match an entry it does not lie in (the page
	 * index below it); the buffer's own pinning fails it.
	 */
	if (!access_ok((void __user *)start, len))
		return NULL;
	nr_pages = DIV_ROUND_UP(offset_in_page(start) + len, PAGE_SIZE);

	mutex_lock(&c->lock);
	p = kfab_pin_cache_find(c, first, nr_pages, writable, &gone);
	if (p) {
		c->hits++;
		goto out;
	}
	c->misses++;
	if (!kfab_pin_cache_make_room(c, nr_pages, &gone))
		goto out;
	p = kfab_pinned_new(first, nr_pages, writable);
	if (!p)
		goto out;
	/* One for the cache, one for the caller. */
	refcount_inc(&p->users);
	list_add(&p->link, &c->lru);
	spin_lock(&p->lock);
	p->cache = c;
	/* Changed since it was pinned, when no cache was there to prune. */
	if (READ_ONCE(p->stale))
		queue_work(kfab_pin_wq, &c->prune);
	spin_unlock(&p->lock);
	c->nr++;
	c->nr_pages += nr_pages;
out:
	mutex_unlock(&c->lock);
	kfab_pin_cache_put_list(&gone);
	return p;
}

void kfab_pin_cache_show(struct seq_file *s, struct kfab_pin_cache *c)
{
	mutex_lock(&c->lock);
	seq_printf(s, "\tpin_cache entries %u pages %lu hits %llu misses %llu stale %llu evicted %llu\n",
		   c->nr, c->nr_pages, c->hits, c->misses, c->stale,
		   c->evicted);
	mutex_unlock(&c->lock);
}

int kfab_pin_cache_mod_init(void)
{
	kfab_pin_wq = alloc_workqueue("kfab_pin", 0, 0);
	return kfab_pin_wq ? 0 : -ENOMEM;
}

/* Every file is closed: what is left is releases in flight. */
void kfab_pin_cache_mod_exit(void)
{
	destroy_workqueue(kfab_pin_wq);
}
