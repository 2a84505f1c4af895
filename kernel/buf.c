// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Buffers that another process (or kernel code) reaches: a request's user
 * memory pinned by the process that owns it, or a kernel caller's memory,
 * both held as bio_vecs, page by page; and the copies between such a
 * buffer and a request's iov_iter, which is either the current process's
 * memory (reached with uaccess) or kernel memory.
 *
 * Pinned pages are charged to the pinning process's mm->pinned_vm and
 * checked against its RLIMIT_MEMLOCK, as RDMA's umem does: an atomic
 * counter, no mmap lock, so a small receive costs one pin_user_pages_fast()
 * and no lock a page fault would wait for.
 */
#include <linux/bvec.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>

#include "kfab.h"
#include "trace.h"

/* Segment @i of a user or kvec iterator: its address and length. */
static void kfab_iter_seg(const struct iov_iter *iter, unsigned long i,
			  unsigned long *base, size_t *len)
{
	size_t skip = i ? 0 : iter->iov_offset;

	if (iter_is_ubuf(iter)) {
		*base = (__force unsigned long)iter->ubuf + skip;
		*len = iter->count;
	} else if (iov_iter_is_kvec(iter)) {
		*base = (unsigned long)iter->kvec[i].iov_base + skip;
		*len = iter->kvec[i].iov_len - skip;
	} else {
		*base = (__force unsigned long)kfab_iter_iov(iter)[i].iov_base + skip;
		*len = kfab_iter_iov(iter)[i].iov_len - skip;
	}
}

static unsigned long kfab_iter_nr_segs(const struct iov_iter *iter)
{
	return iter_is_ubuf(iter) ? 1 : iter->nr_segs;
}

/* Pages that user or kvec memory spans. */
static unsigned long kfab_iter_pages(const struct iov_iter *iter)
{
	unsigned long i, base, pages = 0;
	size_t len, left = iter->count;

	for (i = 0; i < kfab_iter_nr_segs(iter) && left; i++) {
		kfab_iter_seg(iter, i, &base, &len);
		len = min(len, left);
		left -= len;
		if (len)
			pages += DIV_ROUND_UP(offset_in_page(base) + len,
					      PAGE_SIZE);
	}
	return pages;
}

struct kfab_pin_stats *kfab_pin_stats_new(void)
{
	struct kfab_pin_stats *pins;

	pins = kzalloc(sizeof(*pins), GFP_KERNEL_ACCOUNT);
	if (pins)
		refcount_set(&pins->users, 1);
	return pins;
}

void kfab_pin_stats_put(struct kfab_pin_stats *pins)
{
	if (pins && refcount_dec_and_test(&pins->users))
		kfree(pins);
}

/* @bytes more pinned for @pins' endpoint: now, and the peak it makes. */
static void kfab_pin_stats_add(struct kfab_pin_stats *pins, u64 bytes)
{
	s64 now = atomic64_add_return(bytes, &pins->bytes);
	s64 peak = atomic64_read(&pins->peak);

	while (now > peak && !atomic64_try_cmpxchg(&pins->peak, &peak, now))
		;
}

/* The endpoint's pinned bytes count the @pages its request holds. */
static void kfab_buf_count_pins(struct kfab_buf *b, unsigned long pages)
{
	b->nr_pinned = pages;
	if (b->pins) {
		refcount_inc(&b->pins->users);
		kfab_pin_stats_add(b->pins, (u64)pages << PAGE_SHIFT);
	}
}

static void kfab_buf_uncount_pins(struct kfab_buf *b)
{
	if (b->pins) {
		atomic64_sub((u64)b->nr_pinned << PAGE_SHIFT, &b->pins->bytes);
		kfab_pin_stats_put(b->pins);
	}
}

static int kfab_buf_charge(struct kfab_buf *b, unsigned long pages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	struct mm_struct *mm = current->mm;

	if (atomic64_add_return(pages, &mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(pages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	b->mm = mm;
	kfab_buf_count_pins(b, pages);
	return 0;
}

static int kfab_buf_alloc_bv(struct kfab_buf *b, unsigned long nr,
			     struct page ***pages)
{
	/* Room for the page pointers pin_user_pages_fast() fills, after. */
	size_t each = sizeof(struct bio_vec) + sizeof(struct page *);

	if (nr <= KFAB_BUF_INLINE_BV) {
		b->bv = b->inline_bv;
		*pages = NULL;
		return 0;
	}
	b->bv = kvmalloc_array(nr, each, GFP_KERNEL_ACCOUNT);
	if (!b->bv)
		return -ENOMEM;
	*pages = (struct page **)(b->bv + nr);
	return 0;
}

/* Point @np bio_vecs on from @b->nr_bv at @pages, @len bytes from @off. */
static void kfab_buf_fill_bv(struct kfab_buf *b, struct page **pages,
			     unsigned int off, size_t len, unsigned long np)
{
	unsigned long k;

	for (k = 0; k < np; k++) {
		struct bio_vec *bv = &b->bv[b->nr_bv + k];
		size_t chunk = min_t(size_t, len, PAGE_SIZE - off);

		bv->bv_page = pages[k];
		bv->bv_offset = off;
		bv->bv_len = chunk;
		len -= chunk;
		off = 0;
	}
	b->nr_bv += np;
}

/*
 * One segment of a large buffer whose pages the file keeps pinned
 * (pincache.c): the bio_vecs point into the kept pin.  Return: whether
 * it did (else the buffer is pinned as its own).
 */
static bool kfab_buf_use_kept(struct kfab_buf *b, const struct iov_iter *iter)
{
	struct page **pages, **unused;
	unsigned long base, nr;
	size_t len;

	if (!b->cache || kfab_iter_nr_segs(iter) != 1)
		return false;
	kfab_iter_seg(iter, 0, &base, &len);
	len = min(len, iov_iter_count(iter));
	b->kept = kfab_pin_cache_get(b->cache, base, len, b->writable);
	if (!b->kept)
		return false;
	nr = DIV_ROUND_UP(offset_in_page(base) + len, PAGE_SIZE);
	if (kfab_buf_alloc_bv(b, nr, &unused)) {
		kfab_pinned_put(b->kept);
		b->kept = NULL;
		return false;
	}
	pages = kfab_pinned_pages(b->kept, base & PAGE_MASK);
	kfab_buf_fill_bv(b, pages, offset_in_page(base), len, nr);
	kfab_buf_count_pins(b, nr);
	return true;
}

/* Pin the current process's memory that a user iterator describes. */
static int kfab_buf_pin(struct kfab_buf *b, const struct iov_iter *iter)
{
	unsigned int gup = FOLL_LONGTERM | (b->writable ? FOLL_WRITE : 0);
	unsigned long i, nr = kfab_iter_pages(iter), base;
	struct page *small[KFAB_BUF_INLINE_BV], **pages;
	size_t len, left = iter->count;
	int rc;

	if (!nr || kfab_buf_use_kept(b, iter))
		return 0;
	rc = kfab_buf_alloc_bv(b, nr, &pages);
	if (rc)
		return rc;
	if (!pages)
		pages = small;
	rc = kfab_buf_charge(b, nr);
	if (rc)
		return rc;

	for (i = 0; i < kfab_iter_nr_segs(iter) && left; i++) {
		unsigned int np, off;

		kfab_iter_seg(iter, i, &base, &len);
		len = min(len, left);
		if (!len)
			continue;
		left -= len;
		off = offset_in_page(base);
		np = DIV_ROUND_UP(off + len, PAGE_SIZE);
		rc = pin_user_pages_fast(base & PAGE_MASK, np, gup,
					 pages + b->nr_bv);
		if (rc != np) {
			if (rc > 0)
				unpin_user_pages(pages + b->nr_bv, rc);
			return rc < 0 ? rc : -EFAULT;
		}
		kfab_buf_fill_bv(b, pages + b->nr_bv, off, len, np);
	}
	return 0;
}

/* Hold kernel memory: a kvec's pages, or a copy of the bvecs. */
static int kfab_buf_hold_kernel(struct kfab_buf *b, const struct iov_iter *iter)
{
	size_t left = iter->count, skip = iter->iov_offset;
	struct page **unused;
	unsigned long i, nr;
	int rc;

	if (iov_iter_is_bvec(iter)) {
		nr = iter->nr_segs;
		rc = kfab_buf_alloc_bv(b, nr, &unused);
		if (rc)
			return rc;
		for (i = 0; i < nr && left; i++) {
			struct bio_vec bv = iter->bvec[i];

			bv.bv_offset += skip;
			bv.bv_len = min_t(size_t, bv.bv_len - skip, left);
			skip = 0;
			left -= bv.bv_len;
			b->bv[b->nr_bv++] = bv;
		}
		return 0;
	}

	nr = kfab_iter_pages(iter);
	rc = kfab_buf_alloc_bv(b, nr, &unused);
	if (rc)
		return rc;
	for (i = 0; i < iter->nr_segs && left; i++) {
		unsigned long base;
		size_t len;

		kfab_iter_seg(iter, i, &base, &len);
		len = min(len, left);
		left -= len;
		while (len) {
			void *p = (void *)base;
			size_t chunk = min_t(size_t, len,
					     PAGE_SIZE - offset_in_page(base));
			struct bio_vec *bv = &b->bv[b->nr_bv++];

			bv->bv_page = is_vmalloc_addr(p) ? vmalloc_to_page(p) :
							  virt_to_page(p);
			bv->bv_offset = offset_in_page(base);
			bv->bv_len = chunk;
			base += chunk;
			len -= chunk;
		}
	}
	return 0;
}

/**
 * kfab_buf_get() - make a request's buffers reachable from anywhere
 * @b: zeroed
 * @iter: the request's buffers (not advanced)
 * @writable: the kernel will write into them (a receive)
 * @pins: the endpoint's pinned memory counters, or NULL
 *
 * User memory is pinned and charged, to the process and to @pins (whole
 * pages); kernel memory is only described.
 * Return: 0 or a negative errno; @b needs kfab_buf_put() either way.
 */
int kfab_buf_get(struct kfab_buf *b, const struct iov_iter *iter,
		 bool writable, struct kfab_pin_stats *pins)
{
	b->writable = writable;
	b->pins = pins;
	b->len = iter->count;
	if (iov_iter_is_kvec(iter) || iov_iter_is_bvec(iter))
		return kfab_buf_hold_kernel(b, iter);
	if (!iter_is_iovec(iter) && !iter_is_ubuf(iter))
		return -EINVAL;
	return kfab_buf_pin(b, iter);
}

void kfab_buf_put(struct kfab_buf *b)
{
	unsigned int i;

	if (b->mm) {
		for (i = 0; i < b->nr_bv; i++) {
			struct page *page = b->bv[i].bv_page;

			if (b->writable)
				unpin_user_pages_dirty_lock(&page, 1, true);
			else
				unpin_user_page(page);
		}
		atomic64_sub(b->nr_pinned, &b->mm->pinned_vm);
		mmdrop(b->mm);
		b->mm = NULL;
		kfab_buf_uncount_pins(b);
	}
	if (b->kept) {
		kfab_buf_uncount_pins(b);
		kfab_pinned_put(b->kept);
		b->kept = NULL;
	}
	b->pins = NULL;
	/* A small receive's has none: no call on every message for NULL. */
	if (b->bv && b->bv != b->inline_bv)
		kvfree(b->bv);
	b->bv = NULL;
	b->nr_bv = 0;
}

/* Copy @n bytes between @b, from its byte @off on, and @iter. */
static int kfab_buf_copy(struct kfab_buf *b, size_t off, struct iov_iter *iter,
			 size_t n, bool into_buf)
{
	unsigned int i = 0;

	trace_kfab_copy(off, n, into_buf);

	while (i < b->nr_bv && off >= b->bv[i].bv_len)
		off -= b->bv[i++].bv_len;
	while (n) {
		struct bio_vec *bv;
		size_t pos, chunk, done;
		void *addr;

		if (i == b->nr_bv)
			return -EFAULT;
		bv = &b->bv[i];
		pos = bv->bv_offset + off;
		chunk = min3(n, bv->bv_len - off,
			     PAGE_SIZE - offset_in_page(pos));
		addr = kmap_local_page(nth_page(bv->bv_page,
						pos >> PAGE_SHIFT)) +
		       offset_in_page(pos);
		if (into_buf)
			done = copy_from_iter(addr, chunk, iter);
		else
			done = copy_to_iter(addr, chunk, iter);
		kunmap_local(addr);
		if (done != chunk)
			return -EFAULT;
		n -= chunk;
		off += chunk;
		if (off == bv->bv_len) {
			off = 0;
			i++;
		}
	}
	return 0;
}

/* Copy @n bytes from @from into @b at byte @off. */
int kfab_buf_copy_in(struct kfab_buf *b, size_t off, struct iov_iter *from,
		     size_t n)
{
	return kfab_buf_copy(b, off, from, n, true);
}

/* Copy @n bytes of @b from byte @off on out to @to. */
int kfab_buf_copy_out(struct kfab_buf *b, size_t off, struct iov_iter *to,
		      size_t n)
{
	return kfab_buf_copy(b, off, to, n, false);
}

/* Move @c forward to the bio_vec of @b that holds byte @off (>= c->base). */
static void kfab_buf_seek(const struct kfab_buf *b, struct kfab_buf_cursor *c,
			  size_t off)
{
	while (c->i < b->nr_bv && c->base + b->bv[c->i].bv_len <= off) {
		c->base += b->bv[c->i].bv_len;
		c->i++;
	}
}

/**
 * kfab_buf_copy_buf() - copy between two buffers that any process reaches
 * @dst: the destination (pinned writable, or kernel memory)
 * @dc: a cursor of @dst that stands at or before @doff
 * @doff: where in @dst the bytes go
 * @src: the source
 * @sc: a cursor of @src that stands at or before @soff
 * @soff: where in @src they come from
 * @n: bytes
 *
 * Page to page, no user access: it cannot fault and takes no lock, so it
 * may run in any process and under any lock of the engine.  A caller that
 * copies pieces in ascending order keeps its cursors (zeroed to begin
 * with) and walks each buffer once.  Return: 0, or -EFAULT when either
 * buffer is shorter than asked.
 */
int kfab_buf_copy_buf(struct kfab_buf *dst, struct kfab_buf_cursor *dc,
		      size_t doff, struct kfab_buf *src,
		      struct kfab_buf_cursor *sc, size_t soff, size_t n)
{
	trace_kfab_copy(doff, n, true);

	while (n) {
		const struct bio_vec *dbv, *sbv;
		size_t dpos, spos, chunk;
		void *d, *s;

		kfab_buf_seek(dst, dc, doff);
		kfab_buf_seek(src, sc, soff);
		if (dc->i >= dst->nr_bv || sc->i >= src->nr_bv)
			return -EFAULT;
		dbv = &dst->bv[dc->i];
		sbv = &src->bv[sc->i];
		dpos = dbv->bv_offset + (doff - dc->base);
		spos = sbv->bv_offset + (soff - sc->base);
		chunk = min3(n, dbv->bv_len - (doff - dc->base),
			     sbv->bv_len - (soff - sc->base));
		chunk = min3(chunk, PAGE_SIZE - offset_in_page(dpos),
			     PAGE_SIZE - offset_in_page(spos));
		s = kmap_local_page(nth_page(sbv->bv_page, spos >> PAGE_SHIFT));
		d = kmap_local_page(nth_page(dbv->bv_page, dpos >> PAGE_SHIFT));
		memcpy(d + offset_in_page(dpos), s + offset_in_page(spos),
		       chunk);
		kunmap_local(d);
		kunmap_local(s);
		n -= chunk;
		doff += chunk;
		soff += chunk;
	}
	return 0;
}
