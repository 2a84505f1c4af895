// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Messages between endpoints: matching and data movement
 * (Documentation/ep.rst).
 *
 * Every request runs in the context of the process that submitted it (its
 * doorbell), so the kernel reaches that process's memory with the ordinary
 * uaccess functions, and the other process's memory only through pages it
 * pinned itself:
 *
 *  - A posted receive pins its buffers (charged to RLIMIT_MEMLOCK) and
 *    waits on its endpoint's list.  A send that matches it copies from the
 *    sender's memory straight into those pages: one copy.
 *  - A send that finds no receive is unexpected.  Up to
 *    KFAB_MSG_EAGER_MAX bytes are copied into kernel memory at once (at
 *    most KFAB_MSG_UNEXP_MAX per receiving endpoint, or the send waits in
 *    the sender's ring: -EAGAIN); a larger one pins the sender's buffers
 *    and waits, and the receive that matches it copies from them: one
 *    copy, and the send completes then.
 *
 * Receives are matched in the order posted, unexpected messages in the
 * order they arrived, per kind (messages, tagged messages): FI_ORDER_SAS.
 *
 * Locking: a core's lock covers its lists and completions to its endpoint.
 * A request takes one core lock at a time; a send completed by a receive
 * is reported after the receiver's lock is dropped.  Pinning and unpinning
 * (which take mmap locks) happen outside core locks.
 */
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kfab.h"

/* Unexpected messages up to this size are buffered in the kernel. */
#define KFAB_MSG_EAGER_MAX	(64 * 1024)
/* Kernel memory one endpoint may hold for unexpected messages. */
#define KFAB_MSG_UNEXP_MAX	(1024 * 1024)
/* The largest message (ep_attr->max_msg_size). */
#define KFAB_MSG_MAX		BIT_ULL(30)

#define KFAB_SQE_FLAGS	(KFAB_SQE_COMPLETION | KFAB_SQE_REMOTE_CQ_DATA | \
			 KFAB_SQE_INLINE | KFAB_SQE_MULTI_RECV | \
			 KFAB_SQE_DELIVERY_COMPLETE | KFAB_SQE_FENCE)
#define KFAB_SQE_SEND_ONLY (KFAB_SQE_INLINE | KFAB_SQE_DELIVERY_COMPLETE | \
			    KFAB_SQE_FENCE)

/* One user buffer, pinned by the process that owns it. */
struct kfab_seg {
	struct page **pages;
	unsigned int nr_pages;
	unsigned int offset;	/* into the first page */
	size_t len;
};

/* The buffers of one request, pinned; @mm is charged for them. */
struct kfab_pinned {
	struct kfab_seg seg[KFAB_IOV_MAX];
	unsigned int nseg;
	struct mm_struct *mm;
	unsigned long locked;
	bool writable;
};

/* A posted receive. */
struct kfab_msg_rx {
	struct list_head link;
	u64 context;
	u64 tag;
	u64 ignore;
	u64 src;		/* an index of the receiver's AV, or ~0 */
	u32 flags;
	u64 buf;
	size_t len;
	/* FI_MULTI_RECV: bytes taken, and the least free space it serves */
	size_t used;
	size_t min_free;
	struct kfab_pinned pin;
};

/* A message no receive matched yet. */
struct kfab_msg_unexp {
	struct list_head link;
	struct kfab_addr src;
	u64 tag;
	u64 data;
	u32 flags;		/* the send's KFAB_SQE_* */
	size_t len;
	void *buf;		/* eager: the payload */
	/* Rendezvous: the sender's pinned buffers and its request. */
	struct kfab_pinned pin;
	struct kfab_ep_core *sender;
	u64 sender_context;
};

/* ---- pinning ---- */

static void kfab_unpin(struct kfab_pinned *p)
{
	unsigned int i;

	for (i = 0; i < p->nseg; i++) {
		if (p->writable)
			unpin_user_pages_dirty_lock(p->seg[i].pages,
						    p->seg[i].nr_pages, true);
		else
			unpin_user_pages(p->seg[i].pages, p->seg[i].nr_pages);
		kvfree(p->seg[i].pages);
	}
	if (p->mm) {
		account_locked_vm(p->mm, p->locked, false);
		mmdrop(p->mm);
	}
	p->nseg = 0;
	p->mm = NULL;
}

/* Pin the caller's buffers of a request (the caller's own memory). */
static int kfab_pin(struct kfab_pinned *p, const struct kfab_kiov *iov,
		    unsigned int count, bool writable)
{
	unsigned int i, gup = FOLL_LONGTERM | (writable ? FOLL_WRITE : 0);
	unsigned long pages = 0;
	int rc;

	p->writable = writable;
	for (i = 0; i < count; i++)
		if (iov[i].len)
			pages += DIV_ROUND_UP(offset_in_page(iov[i].base) +
					      iov[i].len, PAGE_SIZE);
	if (!pages)
		return 0;
	rc = account_locked_vm(current->mm, pages, true);
	if (rc)
		return rc;
	mmgrab(current->mm);
	p->mm = current->mm;
	p->locked = pages;

	for (i = 0; i < count; i++) {
		struct kfab_seg *seg = &p->seg[p->nseg];
		unsigned long start = iov[i].base;

		if (!iov[i].len)
			continue;
		seg->offset = offset_in_page(start);
		seg->len = iov[i].len;
		seg->nr_pages = DIV_ROUND_UP(seg->offset + seg->len, PAGE_SIZE);
		seg->pages = kvmalloc_array(seg->nr_pages, sizeof(*seg->pages),
					    GFP_KERNEL_ACCOUNT);
		if (!seg->pages) {
			rc = -ENOMEM;
			goto err;
		}
		rc = pin_user_pages_fast(start & PAGE_MASK, seg->nr_pages, gup,
					 seg->pages);
		if (rc != seg->nr_pages) {
			if (rc > 0)
				unpin_user_pages(seg->pages, rc);
			kvfree(seg->pages);
			rc = rc < 0 ? rc : -EFAULT;
			goto err;
		}
		p->nseg++;
	}
	return 0;
err:
	kfab_unpin(p);
	return rc;
}

/*
 * Copy @n bytes between pinned buffers, from their byte @off on, and
 * either kernel memory @kbuf or the current process's memory @ubuf (the
 * other is NULL).  @to_pin: into the pinned pages, else out of them.
 */
static int kfab_pinned_copy(struct kfab_pinned *p, size_t off, void *kbuf,
			    void __user *ubuf, size_t n, bool to_pin)
{
	unsigned int i = 0;

	while (n) {
		struct kfab_seg *seg;
		size_t pos, chunk;
		unsigned long left = 0;
		void *addr;

		while (i < p->nseg && off >= p->seg[i].len)
			off -= p->seg[i++].len;
		if (i == p->nseg)
			return -EFAULT;
		seg = &p->seg[i];
		pos = seg->offset + off;
		chunk = min3(n, PAGE_SIZE - offset_in_page(pos),
			     seg->len - off);
		addr = kmap_local_page(seg->pages[pos >> PAGE_SHIFT]) +
		       offset_in_page(pos);
		if (ubuf && to_pin)
			left = copy_from_user(addr, ubuf, chunk);
		else if (ubuf)
			left = copy_to_user(ubuf, addr, chunk);
		else if (to_pin)
			memcpy(addr, kbuf, chunk);
		else
			memcpy(kbuf, addr, chunk);
		kunmap_local(addr);
		if (left)
			return -EFAULT;
		if (ubuf)
			ubuf += chunk;
		else
			kbuf += chunk;
		off += chunk;
		n -= chunk;
	}
	return 0;
}

/* ---- the payload of a send, wherever it is ---- */

static size_t kfab_iov_len(const struct kfab_sqe *sqe)
{
	size_t len = 0;
	unsigned int i;

	if (sqe->flags & KFAB_SQE_INLINE)
		return sqe->len;
	for (i = 0; i < sqe->iov_count; i++)
		len += sqe->iov[i].len;
	return len;
}

/* Copy the first @n bytes of a send's payload into pinned buffers, @at on. */
static int kfab_send_to_pinned(const struct kfab_sqe *sqe,
			       struct kfab_pinned *dst, size_t at, size_t n)
{
	size_t off = 0, chunk;
	unsigned int i;
	int rc;

	if (sqe->flags & KFAB_SQE_INLINE)
		return kfab_pinned_copy(dst, at, (void *)sqe->inline_data, NULL,
					n, true);
	for (i = 0; i < sqe->iov_count && off < n; i++) {
		chunk = min_t(size_t, sqe->iov[i].len, n - off);
		rc = kfab_pinned_copy(dst, at + off, NULL,
				      u64_to_user_ptr(sqe->iov[i].base),
				      chunk, true);
		if (rc)
			return rc;
		off += chunk;
	}
	return 0;
}

/* Copy a send's whole payload into kernel memory. */
static int kfab_send_to_kernel(const struct kfab_sqe *sqe, void *buf)
{
	unsigned int i;

	if (sqe->flags & KFAB_SQE_INLINE) {
		memcpy(buf, sqe->inline_data, sqe->len);
		return 0;
	}
	for (i = 0; i < sqe->iov_count; i++) {
		if (copy_from_user(buf, u64_to_user_ptr(sqe->iov[i].base),
				   sqe->iov[i].len))
			return -EFAULT;
		buf += sqe->iov[i].len;
	}
	return 0;
}

/*
 * Copy an unexpected message into the receiver's own buffers, from byte
 * @at of them on (multi-receive; then there is one buffer).
 */
static int kfab_unexp_to_user(struct kfab_msg_unexp *u,
			      const struct kfab_sqe *sqe, size_t at, size_t n)
{
	size_t off = 0, chunk;
	unsigned int i;
	int rc = 0;

	for (i = 0; i < sqe->iov_count && off < n && !rc; i++) {
		void __user *dst = u64_to_user_ptr(sqe->iov[i].base + at);

		chunk = min_t(size_t, sqe->iov[i].len, n - off);
		if (u->buf)
			rc = copy_to_user(dst, u->buf + off, chunk) ? -EFAULT : 0;
		else
			rc = kfab_pinned_copy(&u->pin, off, NULL, dst, chunk,
					      false);
		off += chunk;
	}
	return rc;
}

/* ---- matching ---- */

static bool kfab_tag_match(u64 want, u64 ignore, u64 tag)
{
	return !((want ^ tag) & ~ignore);
}

static struct kfab_msg_rx *kfab_match_posted(struct kfab_ep_core *core,
					     int kind, u64 src, u64 tag)
{
	struct kfab_msg_rx *rx;

	list_for_each_entry(rx, &core->posted[kind], link) {
		if (rx->src != KFAB_CQ_ADDR_NOTAVAIL && rx->src != src)
			continue;
		if (kind == KFAB_KIND_TAGGED &&
		    !kfab_tag_match(rx->tag, rx->ignore, tag))
			continue;
		/* A multi-receive buffer stays first until it is full. */
		if (!(rx->flags & KFAB_SQE_MULTI_RECV))
			list_del(&rx->link);
		return rx;
	}
	return NULL;
}

static struct kfab_msg_unexp *kfab_match_unexp(struct kfab_ep *ep, int kind,
					       u64 src, u64 tag, u64 ignore)
{
	struct kfab_msg_unexp *u;

	list_for_each_entry(u, &ep->core->unexpected[kind], link) {
		if (src != KFAB_CQ_ADDR_NOTAVAIL &&
		    kfab_av_index_of(ep->av, &u->src) != src)
			continue;
		if (kind == KFAB_KIND_TAGGED &&
		    !kfab_tag_match(tag, ignore, u->tag))
			continue;
		list_del(&u->link);
		return u;
	}
	return NULL;
}

static u64 kfab_comp_kind(int kind)
{
	return kind == KFAB_KIND_TAGGED ? KFAB_COMP_TAGGED : KFAB_COMP_MSG;
}

/* Report a receive: @len delivered of a message of @msg_len bytes. */
static void kfab_complete_rx(struct kfab_ep *ep, int kind, u64 context,
			     u32 rx_flags, u64 buf, size_t len, size_t msg_len,
			     u64 src, u64 tag, u64 data, u32 send_flags,
			     int err)
{
	struct kfab_cq_entry e = {
		.op_context = context,
		.flags = KFAB_COMP_RECV | kfab_comp_kind(kind) |
			 (rx_flags & KFAB_SQE_MULTI_RECV ?
			  KFAB_COMP_MULTI_RECV : 0),
		.len = len,
		.buf = buf,
		.tag = tag,
		.src_addr = src,
	};

	if (send_flags & KFAB_SQE_REMOTE_CQ_DATA) {
		e.flags |= KFAB_COMP_REMOTE_CQ_DATA;
		e.data = data;
	}
	if (!err && msg_len > len)
		err = KFAB_ERR_TRUNC;
	kfab_ep_complete(ep, KFAB_RX, rx_flags, &e, err,
			 err == KFAB_ERR_TRUNC ? msg_len - len : 0);
}

static void kfab_complete_tx(struct kfab_ep *ep, int kind, u64 context,
			     u32 flags, int err)
{
	struct kfab_cq_entry e = {
		.op_context = context,
		.flags = KFAB_COMP_SEND | kfab_comp_kind(kind),
	};

	kfab_ep_complete(ep, KFAB_TX, flags, &e, err, 0);
}

/* A rendezvous send is over: tell its sender, if it is still there. */
static void kfab_complete_sender(struct kfab_msg_unexp *u, int kind, int err)
{
	struct kfab_ep_core *sender = u->sender;

	mutex_lock(&sender->lock);
	if (!sender->dead)
		kfab_complete_tx(sender->ep, kind, u->sender_context, u->flags,
				 err);
	mutex_unlock(&sender->lock);
	/* After the completion: a fenced send may go once it is seen. */
	atomic_dec(&sender->tx_waiting);
	kfab_ep_core_put(sender);
	u->sender = NULL;
}

static void kfab_unexp_free(struct kfab_msg_unexp *u)
{
	kfab_unpin(&u->pin);
	kvfree(u->buf);
	kfree(u);
}

/*
 * A receive takes @n bytes.  Return: true when it is done with: always
 * for a plain receive; for a multi-receive buffer, once fewer than its
 * least free space is left (it is then released).
 */
static bool kfab_rx_take(struct kfab_msg_rx *rx, size_t n)
{
	rx->used += n;
	if (!(rx->flags & KFAB_SQE_MULTI_RECV))
		return true;
	return rx->len - rx->used < max_t(size_t, rx->min_free, 1);
}

/* ---- requests ---- */

static int kfab_msg_send(struct kfab_ep *ep, const struct kfab_sqe *sqe,
			 int kind, size_t len)
{
	struct kfab_addr self = { .family = KFAB_ADDR_LOCAL,
				  .ep = ep->core->num };
	struct kfab_msg_unexp *u = NULL;
	struct kfab_ep_core *target;
	struct kfab_msg_rx *rx;
	struct kfab_addr dst;
	u64 from;
	int rc;

	/* FI_FENCE: every earlier send completes first. */
	if ((sqe->flags & KFAB_SQE_FENCE) &&
	    atomic_read(&ep->core->tx_waiting))
		return -EAGAIN;
	if (kfab_av_addr_of(ep->av, sqe->addr, &dst)) {
		kfab_complete_tx(ep, kind, sqe->context, sqe->flags, EINVAL);
		return 0;
	}
	target = kfab_ep_core_find(dst.ep);
	if (!target) {
		kfab_complete_tx(ep, kind, sqe->context, sqe->flags,
				 EHOSTUNREACH);
		return 0;
	}

	/*
	 * A message that may wait at the receiver in the sender's memory: a
	 * large one, or one that must be delivered before it completes.  Pin
	 * it before taking locks.
	 */
	if (len > KFAB_MSG_EAGER_MAX ||
	    (sqe->flags & KFAB_SQE_DELIVERY_COMPLETE)) {
		u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
		rc = u ? kfab_pin(&u->pin, sqe->iov, sqe->iov_count, false) :
			 -ENOMEM;
		if (rc)
			goto err;
	}

	mutex_lock(&target->lock);
	rc = EHOSTUNREACH;
	if (target->dead)
		goto err_unlock;
	/* Where the receiver's AV has us: for directed receives and src. */
	from = kfab_av_index_of(target->ep->av, &self);
	rx = kfab_match_posted(target, kind, from, sqe->tag);
	if (rx) {
		size_t at = rx->used, n = min(len, rx->len - at);
		bool done = kfab_rx_take(rx, n);

		rc = -kfab_send_to_pinned(sqe, &rx->pin, at, n);
		kfab_complete_rx(target->ep, kind, rx->context,
				 done ? rx->flags :
					rx->flags & ~KFAB_SQE_MULTI_RECV,
				 rx->buf + at, rc ? 0 : n, len, from,
				 sqe->tag, sqe->data, sqe->flags, rc);
		if (done && (rx->flags & KFAB_SQE_MULTI_RECV))
			list_del(&rx->link);
		mutex_unlock(&target->lock);
		kfab_ep_core_put(target);
		if (done) {
			kfab_unpin(&rx->pin);
			kfree(rx);
		}
		if (u)
			kfab_unexp_free(u);
		kfab_complete_tx(ep, kind, sqe->context, sqe->flags, rc);
		return 0;
	}

	if (!u) {
		/* Eager: buffered here, within the receiver's budget. */
		if (target->unexp_bytes + len > KFAB_MSG_UNEXP_MAX) {
			mutex_unlock(&target->lock);
			kfab_ep_core_put(target);
			return -EAGAIN;
		}
		rc = ENOMEM;
		u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
		if (!u)
			goto err_unlock;
		u->buf = kvmalloc(len ?: 1, GFP_KERNEL_ACCOUNT);
		if (!u->buf)
			goto err_unlock;
		rc = -kfab_send_to_kernel(sqe, u->buf);
		if (rc)
			goto err_unlock;
		target->unexp_bytes += len;
	} else {
		kref_get(&ep->core->ref);
		atomic_inc(&ep->core->tx_waiting);
		u->sender = ep->core;
		u->sender_context = sqe->context;
	}
	u->src = self;
	u->tag = sqe->tag;
	u->data = sqe->data;
	u->flags = sqe->flags;
	u->len = len;
	list_add_tail(&u->link, &target->unexpected[kind]);
	mutex_unlock(&target->lock);
	kfab_ep_core_put(target);
	/* Eager: the data is safe, the send is done.  Rendezvous: later. */
	if (u->buf)
		kfab_complete_tx(ep, kind, sqe->context, sqe->flags, 0);
	return 0;

err_unlock:
	mutex_unlock(&target->lock);
err:
	kfab_ep_core_put(target);
	if (u)
		kfab_unexp_free(u);
	kfab_complete_tx(ep, kind, sqe->context, sqe->flags, abs(rc));
	return 0;
}

static int kfab_msg_recv(struct kfab_ep *ep, const struct kfab_sqe *sqe,
			 int kind, size_t len)
{
	struct kfab_ep_core *core = ep->core;
	struct kfab_msg_unexp *u;
	struct kfab_msg_rx *rx;
	u64 src = KFAB_CQ_ADDR_NOTAVAIL, from;
	size_t n;
	int rc;

	if (sqe->addr != KFAB_CQ_ADDR_NOTAVAIL) {
		struct kfab_addr a;

		if (kfab_av_addr_of(ep->av, sqe->addr, &a)) {
			kfab_complete_rx(ep, kind, sqe->context, sqe->flags,
					 0, 0, 0, KFAB_CQ_ADDR_NOTAVAIL, 0, 0,
					 0, EINVAL);
			return 0;
		}
		src = sqe->addr;
	}

	rx = kzalloc(sizeof(*rx), GFP_KERNEL_ACCOUNT);
	rc = rx ? kfab_pin(&rx->pin, sqe->iov, sqe->iov_count, true) : -ENOMEM;
	if (rc) {
		kfree(rx);
		kfab_complete_rx(ep, kind, sqe->context, sqe->flags, 0, 0, 0,
				 KFAB_CQ_ADDR_NOTAVAIL, 0, 0, 0, -rc);
		return 0;
	}
	rx->context = sqe->context;
	rx->tag = sqe->tag;
	rx->ignore = sqe->ignore;
	rx->src = src;
	rx->flags = sqe->flags;
	rx->buf = sqe->iov_count ? sqe->iov[0].base : 0;
	rx->len = len;
	rx->min_free = sqe->flags & KFAB_SQE_MULTI_RECV ? sqe->data : 0;

	/*
	 * Messages that wait go first, in arrival order: one for a plain
	 * receive, as many as fit a multi-receive buffer.  They are copied
	 * with uaccess: the buffers are this process's own.
	 */
	for (;;) {
		size_t at;
		bool done;

		mutex_lock(&core->lock);
		u = kfab_match_unexp(ep, kind, src, sqe->tag, sqe->ignore);
		if (!u) {
			list_add_tail(&rx->link, &core->posted[kind]);
			mutex_unlock(&core->lock);
			return 0;
		}
		if (u->buf)
			core->unexp_bytes -= u->len;
		mutex_unlock(&core->lock);

		at = rx->used;
		n = min(len - at, u->len);
		done = kfab_rx_take(rx, n);
		rc = kfab_unexp_to_user(u, sqe, at, n);
		from = kfab_av_index_of(ep->av, &u->src);
		kfab_complete_rx(ep, kind, sqe->context,
				 done ? sqe->flags :
					sqe->flags & ~KFAB_SQE_MULTI_RECV,
				 rx->buf + at, rc ? 0 : n, u->len, from, u->tag,
				 u->data, u->flags, -rc);
		if (u->sender)
			kfab_complete_sender(u, kind, 0);
		kfab_unexp_free(u);
		if (done) {
			kfab_unpin(&rx->pin);
			kfree(rx);
			return 0;
		}
	}
}

/* An entry of the ring: 0 when consumed, -EAGAIN to leave it there. */
int kfab_msg_submit(struct kfab_ep *ep, const struct kfab_sqe *sqe)
{
	bool send = sqe->opcode == KFAB_OP_SEND || sqe->opcode == KFAB_OP_TSEND;
	int kind = sqe->opcode == KFAB_OP_TSEND ||
		   sqe->opcode == KFAB_OP_TRECV ? KFAB_KIND_TAGGED :
						  KFAB_KIND_MSG;
	bool inline_data = sqe->flags & KFAB_SQE_INLINE;
	size_t len;
	unsigned int i;
	bool ok;

	ok = sqe->opcode >= KFAB_OP_SEND && sqe->opcode <= KFAB_OP_TRECV &&
	     !sqe->__reserved && !sqe->__reserved2 &&
	     !(sqe->flags & ~KFAB_SQE_FLAGS) && sqe->iov_count <= KFAB_IOV_MAX;
	if (ok && !send)
		ok = !(sqe->flags & KFAB_SQE_SEND_ONLY);
	if (ok && (sqe->flags & KFAB_SQE_MULTI_RECV))
		ok = sqe->opcode == KFAB_OP_RECV && sqe->iov_count == 1;
	if (ok && inline_data)
		ok = send && !sqe->iov_count && sqe->len <= KFAB_INLINE_MAX &&
		     !(sqe->flags & KFAB_SQE_DELIVERY_COMPLETE);
	/* Bad pointers fail in the copy or the pinning, with -EFAULT. */
	for (i = 0; ok && !inline_data && i < sqe->iov_count; i++)
		ok = sqe->iov[i].len <= KFAB_MSG_MAX;
	if (ok)
		ok = kfab_iov_len(sqe) <= KFAB_MSG_MAX;
	if (!ok) {
		if (send)
			kfab_complete_tx(ep, kind, sqe->context, sqe->flags,
					 EINVAL);
		else
			kfab_complete_rx(ep, kind, sqe->context, sqe->flags,
					 0, 0, 0, KFAB_CQ_ADDR_NOTAVAIL, 0, 0,
					 0, EINVAL);
		return 0;
	}
	len = kfab_iov_len(sqe);
	if (send)
		return kfab_msg_send(ep, sqe, kind, len);
	return kfab_msg_recv(ep, sqe, kind, len);
}

/**
 * kfab_msg_cancel() - cancel the oldest posted receive with a context
 * @ep: the endpoint (its doorbell lock held)
 * @context: the receive's context
 *
 * Return: 0 (it completes with ECANCELED), or -ENOENT.
 */
int kfab_msg_cancel(struct kfab_ep *ep, u64 context)
{
	struct kfab_ep_core *core = ep->core;
	struct kfab_msg_rx *rx, *found = NULL;
	int kind, found_kind = 0;

	mutex_lock(&core->lock);
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED && !found; kind++)
		list_for_each_entry(rx, &core->posted[kind], link)
			if (rx->context == context) {
				list_del(&rx->link);
				found = rx;
				found_kind = kind;
				break;
			}
	mutex_unlock(&core->lock);
	if (!found)
		return -ENOENT;
	kfab_complete_rx(ep, found_kind, found->context, found->flags,
			 found->buf, 0, 0, KFAB_CQ_ADDR_NOTAVAIL, found->tag, 0,
			 0, ECANCELED);
	kfab_unpin(&found->pin);
	kfree(found);
	return 0;
}

/*
 * The endpoint is gone (@core is dead): drop its receives, and its
 * unexpected messages, whose rendezvous senders learn that their message
 * was not delivered.
 */
void kfab_msg_flush(struct kfab_ep_core *core)
{
	struct kfab_msg_unexp *u, *un;
	struct list_head unexp[2];
	struct kfab_msg_rx *rx, *rn;
	LIST_HEAD(posted);
	int kind;

	INIT_LIST_HEAD(&unexp[KFAB_KIND_MSG]);
	INIT_LIST_HEAD(&unexp[KFAB_KIND_TAGGED]);
	mutex_lock(&core->lock);
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED; kind++) {
		list_splice_init(&core->posted[kind], &posted);
		list_splice_init(&core->unexpected[kind], &unexp[kind]);
	}
	core->unexp_bytes = 0;
	mutex_unlock(&core->lock);

	list_for_each_entry_safe(rx, rn, &posted, link) {
		kfab_unpin(&rx->pin);
		kfree(rx);
	}
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED; kind++) {
		list_for_each_entry_safe(u, un, &unexp[kind], link) {
			if (u->sender)
				kfab_complete_sender(u, kind, ECONNRESET);
			kfab_unexp_free(u);
		}
	}
}
