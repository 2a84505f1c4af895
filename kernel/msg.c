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
#include <linux/slab.h>
#include <linux/uio.h>

#include "kfab.h"

/* Unexpected messages up to this size are buffered in the kernel. */
#define KFAB_MSG_EAGER_MAX	(64 * 1024)
/* Kernel memory one receive context may hold for unexpected messages. */
#define KFAB_MSG_UNEXP_MAX	(1024 * 1024)
/* The largest message (ep_attr->max_msg_size). */
#define KFAB_MSG_MAX		BIT_ULL(30)

#define KFAB_SQE_FLAGS	(KFAB_SQE_COMPLETION | KFAB_SQE_REMOTE_CQ_DATA | \
			 KFAB_SQE_INLINE | KFAB_SQE_MULTI_RECV | \
			 KFAB_SQE_DELIVERY_COMPLETE | KFAB_SQE_FENCE | \
			 KFAB_SQE_PEEK | KFAB_SQE_CLAIM | KFAB_SQE_DISCARD)
#define KFAB_SQE_SEND_ONLY (KFAB_SQE_INLINE | KFAB_SQE_DELIVERY_COMPLETE | \
			    KFAB_SQE_FENCE)
#define KFAB_SQE_RECV_ONLY (KFAB_SQE_MULTI_RECV | KFAB_SQE_PEEK | \
			    KFAB_SQE_CLAIM | KFAB_SQE_DISCARD)

/* A posted receive. */
struct kfab_msg_rx {
	struct list_head link;
	u64 context;
	u64 tag;
	u64 ignore;
	u64 src;		/* an index of the receive context's AV, or ~0 */
	u32 flags;
	u64 base;		/* the buffer's address, for completions */
	size_t len;
	/* FI_MULTI_RECV: bytes taken, and the least free space it serves */
	size_t used;
	size_t min_free;
	/* Small: nothing pinned, the message travels in the completion. */
	bool unpinned;
	struct kfab_buf buf;
};

/* A message no receive matched yet. */
struct kfab_msg_unexp {
	struct list_head link;
	/*
	 * The endpoint it was sent to, whose CQ its receive completes on.
	 * No reference: the endpoint's death takes its messages off the
	 * lists first (kfab_msg_detach()).
	 */
	struct kfab_ep_core *target;
	int kind;
	struct kfab_addr src;
	u64 tag;
	u64 data;
	u32 flags;		/* the send's KFAB_SQE_* */
	u64 claim_context;	/* on the claimed list: the claimer's context */
	size_t len;
	void *kbuf;		/* eager: the payload */
	/* Rendezvous: the sender's buffers and its request. */
	struct kfab_buf buf;
	struct kfab_ep_core *sender;
	u64 sender_context;
};

/* ---- receive contexts ---- */

struct kfab_rx_ctx *kfab_rx_ctx_alloc(void)
{
	struct kfab_rx_ctx *rx = kzalloc(sizeof(*rx), GFP_KERNEL_ACCOUNT);
	int kind;

	if (!rx)
		return NULL;
	kref_init(&rx->ref);
	mutex_init(&rx->lock);
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED; kind++) {
		INIT_LIST_HEAD(&rx->posted[kind]);
		INIT_LIST_HEAD(&rx->unexpected[kind]);
	}
	INIT_LIST_HEAD(&rx->claimed);
	INIT_LIST_HEAD(&rx->cores);
	return rx;
}

static void kfab_rx_ctx_release(struct kref *ref)
{
	struct kfab_rx_ctx *rx = container_of(ref, struct kfab_rx_ctx, ref);

	mutex_destroy(&rx->lock);
	kfree(rx);
}

void kfab_rx_ctx_put(struct kfab_rx_ctx *rx)
{
	kref_put(&rx->ref, kfab_rx_ctx_release);
}

/*
 * Where a receive context reports what no message decides: the endpoint
 * that joined it first and is still there.  Under @rx's lock.
 */
static struct kfab_ep *kfab_rx_first_ep(struct kfab_rx_ctx *rx)
{
	struct kfab_ep_core *core;

	core = list_first_entry_or_null(&rx->cores, struct kfab_ep_core,
					rx_link);
	return core ? core->ep : NULL;
}

/* ---- matching ---- */

static bool kfab_tag_match(u64 want, u64 ignore, u64 tag)
{
	return !((want ^ tag) & ~ignore);
}

static struct kfab_msg_rx *kfab_match_posted(struct kfab_rx_ctx *rxc,
					     int kind, u64 src, u64 tag)
{
	struct kfab_msg_rx *rx;

	list_for_each_entry(rx, &rxc->posted[kind], link) {
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

/* The oldest unexpected message a receive matches (left on its list). */
static struct kfab_msg_unexp *kfab_match_unexp(struct kfab_rx_ctx *rxc,
					       int kind, u64 src, u64 tag,
					       u64 ignore)
{
	struct kfab_msg_unexp *u;

	list_for_each_entry(u, &rxc->unexpected[kind], link) {
		if (src != KFAB_CQ_ADDR_NOTAVAIL &&
		    kfab_av_index_of(rxc->av, &u->src) != src)
			continue;
		if (kind == KFAB_KIND_TAGGED &&
		    !kfab_tag_match(tag, ignore, u->tag))
			continue;
		return u;
	}
	return NULL;
}

/*
 * What a buffered message costs the receiver's budget: its bytes and its
 * bookkeeping, so a flood of empty messages is bounded too.
 */
static size_t kfab_unexp_cost(size_t len)
{
	return len + sizeof(struct kfab_msg_unexp);
}

/* Take a message off its list; its buffered bytes leave the budget. */
static void kfab_unexp_take(struct kfab_rx_ctx *rxc, struct kfab_msg_unexp *u)
{
	list_del(&u->link);
	if (u->kbuf)
		rxc->unexp_bytes -= kfab_unexp_cost(u->len);
}

static u64 kfab_comp_kind(int kind)
{
	return kind == KFAB_KIND_TAGGED ? KFAB_COMP_TAGGED : KFAB_COMP_MSG;
}

/*
 * Report a receive on @ep (NULL: nobody is left to tell): @len delivered
 * of a message of @msg_len bytes.
 */
static void kfab_complete_rx(struct kfab_ep *ep, int kind, u64 context,
			     u32 rx_flags, u64 buf, size_t len, size_t msg_len,
			     u64 src, u64 tag, u64 data, u32 send_flags,
			     int err, const void *payload)
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

	if (!ep)
		return;
	if (send_flags & KFAB_SQE_REMOTE_CQ_DATA) {
		e.flags |= KFAB_COMP_REMOTE_CQ_DATA;
		e.data = data;
	}
	if (payload)
		e.flags |= KFAB_COMP_PAYLOAD;
	if (!err && msg_len > len)
		err = KFAB_ERR_TRUNC;
	kfab_ep_complete_payload(ep, KFAB_RX, rx_flags, &e, err,
				 err == KFAB_ERR_TRUNC ? msg_len - len : 0,
				 payload);
}

/* A receive that failed before any message: no source, no data. */
static void kfab_complete_rx_err(struct kfab_ep *ep, int kind,
				 const struct kfab_req *req, int err)
{
	kfab_complete_rx(ep, kind, req->context, req->flags, 0, 0, 0,
			 KFAB_CQ_ADDR_NOTAVAIL, req->tag, 0, 0, err, NULL);
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

/*
 * A message is out of every list: tell its rendezvous sender, if it is
 * still there, and free it.  No receive context lock held: the sender's
 * may be the same.
 */
static void kfab_unexp_finish(struct kfab_msg_unexp *u, int err)
{
	struct kfab_ep_core *sender = u->sender;

	if (sender) {
		mutex_lock(&sender->rx->lock);
		if (!sender->dead)
			kfab_complete_tx(sender->ep, u->kind, u->sender_context,
					 u->flags, err);
		mutex_unlock(&sender->rx->lock);
		/* After the completion: a fenced send may go once it is seen. */
		atomic_dec(&sender->tx_waiting);
		kfab_ep_core_put(sender);
	}
	kfab_buf_put(&u->buf);
	kvfree(u->kbuf);
	kfree(u);
}

static void kfab_unexp_finish_list(struct list_head *list, int err)
{
	struct kfab_msg_unexp *u, *n;

	list_for_each_entry_safe(u, n, list, link)
		kfab_unexp_finish(u, err);
}

/* Copy up to @n bytes of an unexpected message out to a receive's iter. */
static int kfab_unexp_copy_out(struct kfab_msg_unexp *u, struct iov_iter *to,
			       size_t n)
{
	if (u->kbuf)
		return copy_to_iter(u->kbuf, n, to) == n ? 0 : -EFAULT;
	return kfab_buf_copy_out(&u->buf, 0, to, n);
}

/* Report a message to a receive of @rxc that took @n bytes of it. */
static void kfab_complete_unexp(struct kfab_rx_ctx *rxc,
				struct kfab_msg_unexp *u,
				const struct kfab_req *req, u32 rx_flags,
				u64 buf, size_t n, size_t msg_len, int err)
{
	kfab_complete_rx(u->target->ep, u->kind, req->context, rx_flags, buf,
			 err ? 0 : n, msg_len, kfab_av_index_of(rxc->av, &u->src),
			 u->tag, u->data, u->flags, err, NULL);
}

static void kfab_rx_free(struct kfab_msg_rx *rx)
{
	kfab_buf_put(&rx->buf);
	kfree(rx);
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

/* The CQ of @ep's direction @dir is too full to take more for now. */
static bool kfab_ep_cq_busy(struct kfab_ep *ep, enum kfab_dir dir)
{
	return ep->cq[dir] && kfab_cq_nearly_full(ep->cq[dir]);
}

static int kfab_msg_send(struct kfab_ep *ep, struct kfab_req *req, int kind)
{
	struct kfab_addr self = { .family = KFAB_ADDR_LOCAL,
				  .ep = ep->core->num };
	size_t len = iov_iter_count(&req->iter);
	struct kfab_msg_unexp *u = NULL;
	struct kfab_ep_core *target;
	struct kfab_rx_ctx *rxc;
	struct kfab_msg_rx *rx;
	struct kfab_addr dst;
	bool rendezvous;
	u64 from;
	int rc;

	/* FI_FENCE: every earlier send completes first. */
	if ((req->flags & KFAB_SQE_FENCE) &&
	    atomic_read(&ep->core->tx_waiting))
		return -EAGAIN;
	/* No completion is dropped: wait while our CQ cannot take it. */
	if (kfab_ep_cq_busy(ep, KFAB_TX))
		return -EAGAIN;
	if (kfab_av_addr_of(ep->av, req->addr, &dst)) {
		kfab_complete_tx(ep, kind, req->context, req->flags, EINVAL);
		return 0;
	}
	target = kfab_ep_core_find(dst.ep);
	if (!target) {
		kfab_complete_tx(ep, kind, req->context, req->flags,
				 EHOSTUNREACH);
		return 0;
	}
	rxc = target->rx;

	mutex_lock(&rxc->lock);
	rc = EHOSTUNREACH;
	if (target->dead)
		goto err_unlock;
	/* Nor the receiver's: the message waits in our ring meanwhile. */
	if (kfab_ep_cq_busy(target->ep, KFAB_RX)) {
		mutex_unlock(&rxc->lock);
		kfab_ep_core_put(target);
		return -EAGAIN;
	}
	/* Where the receiver's AV has us: for directed receives and src. */
	from = kfab_av_index_of(rxc->av, &self);
	rx = kfab_match_posted(rxc, kind, from, req->tag);
	if (rx) {
		size_t at = rx->used, n = min(len, rx->len - at);
		bool done = kfab_rx_take(rx, n);
		u8 small[KFAB_CQ_PAYLOAD_MAX];

		if (rx->unpinned)
			rc = copy_from_iter(small, n, &req->iter) == n ? 0 :
			     EFAULT;
		else
			rc = -kfab_buf_copy_in(&rx->buf, at, &req->iter, n);
		kfab_complete_rx(target->ep, kind, rx->context,
				 done ? rx->flags :
					rx->flags & ~KFAB_SQE_MULTI_RECV,
				 rx->base + at, rc ? 0 : n, len, from,
				 req->tag, req->data, req->flags, rc,
				 rx->unpinned && !rc ? small : NULL);
		if (done && (rx->flags & KFAB_SQE_MULTI_RECV))
			list_del(&rx->link);
		mutex_unlock(&rxc->lock);
		kfab_ep_core_put(target);
		if (done)
			kfab_rx_free(rx);
		kfab_complete_tx(ep, kind, req->context, req->flags, rc);
		return 0;
	}

	/*
	 * Unexpected.  A large message, or one that must be delivered before
	 * it completes, waits in the sender's memory (pinned, or a kernel
	 * caller's); a small one is copied here within the budget.
	 */
	rendezvous = len > KFAB_MSG_EAGER_MAX ||
		     (req->flags & KFAB_SQE_DELIVERY_COMPLETE);
	if (!rendezvous &&
	    rxc->unexp_bytes + kfab_unexp_cost(len) > KFAB_MSG_UNEXP_MAX) {
		mutex_unlock(&rxc->lock);
		kfab_ep_core_put(target);
		return -EAGAIN;
	}
	rc = ENOMEM;
	u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
	if (!u)
		goto err_unlock;
	if (rendezvous) {
		rc = -kfab_buf_get(&u->buf, &req->iter, false);
		if (rc)
			goto err_unlock;
		kref_get(&ep->core->ref);
		atomic_inc(&ep->core->tx_waiting);
		u->sender = ep->core;
		u->sender_context = req->context;
	} else {
		rc = ENOMEM;
		u->kbuf = kvmalloc(len ?: 1, GFP_KERNEL_ACCOUNT);
		if (!u->kbuf)
			goto err_unlock;
		rc = EFAULT;
		if (copy_from_iter(u->kbuf, len, &req->iter) != len)
			goto err_unlock;
		rxc->unexp_bytes += kfab_unexp_cost(len);
	}
	u->target = target;
	u->kind = kind;
	u->src = self;
	u->tag = req->tag;
	u->data = req->data;
	u->flags = req->flags;
	u->len = len;
	list_add_tail(&u->link, &rxc->unexpected[kind]);
	mutex_unlock(&rxc->lock);
	kfab_ep_core_put(target);
	/* Eager: the data is safe, the send is done.  Rendezvous: later. */
	if (!rendezvous)
		kfab_complete_tx(ep, kind, req->context, req->flags, 0);
	return 0;

err_unlock:
	mutex_unlock(&rxc->lock);
	kfab_ep_core_put(target);
	if (u)
		kfab_unexp_finish(u, 0);
	kfab_complete_tx(ep, kind, req->context, req->flags, abs(rc));
	return 0;
}

/* The address of a request's first buffer, reported in completions. */
static u64 kfab_req_base(const struct kfab_req *req)
{
	const struct iov_iter *it = &req->iter;

	if (!iov_iter_count(it))
		return 0;
	if (iter_is_ubuf(it))
		return (u64)(__force uintptr_t)it->ubuf + it->iov_offset;
	if (iter_is_iovec(it))
		return (u64)(__force uintptr_t)it->iov[0].iov_base +
		       it->iov_offset;
	if (iov_iter_is_kvec(it))
		return (u64)(uintptr_t)it->kvec[0].iov_base + it->iov_offset;
	return 0;
}

/* A receive's source: -EINVAL for an index its AV does not hold. */
static int kfab_rx_check_src(struct kfab_rx_ctx *rxc, u64 addr)
{
	struct kfab_addr a;

	if (addr == KFAB_CQ_ADDR_NOTAVAIL)
		return 0;
	if (!rxc->av)
		return -EINVAL;
	return kfab_av_addr_of(rxc->av, addr, &a);
}

/* FI_PEEK, with FI_CLAIM or FI_DISCARD; FI_CLAIM alone, or with FI_DISCARD */
static int kfab_msg_peek_claim(struct kfab_rx_ctx *rxc, struct kfab_req *req,
			       int kind)
{
	bool discard = req->flags & KFAB_SQE_DISCARD;
	struct kfab_msg_unexp *u = NULL, *c;
	size_t n;
	int rc;

	mutex_lock(&rxc->lock);
	if (kfab_rx_check_src(rxc, req->addr)) {
		kfab_complete_rx_err(kfab_rx_first_ep(rxc), kind, req, EINVAL);
		goto out_unlock;
	}
	if (req->flags & KFAB_SQE_PEEK) {
		u = kfab_match_unexp(rxc, kind, req->addr, req->tag,
				     req->ignore);
		if (!u) {
			kfab_complete_rx_err(kfab_rx_first_ep(rxc), kind, req,
					     ENOMSG);
			goto out_unlock;
		}
		n = discard ? 0 : u->len;
		kfab_complete_unexp(rxc, u, req, req->flags, 0, n, n, 0);
		if (req->flags & KFAB_SQE_CLAIM) {
			/* Set aside: no other receive sees it now. */
			list_move_tail(&u->link, &rxc->claimed);
			u->claim_context = req->context;
			u = NULL;
		} else if (discard) {
			kfab_unexp_take(rxc, u);
		} else {
			u = NULL;
		}
		goto out_unlock;
	}

	list_for_each_entry(c, &rxc->claimed, link)
		if (c->claim_context == req->context && c->kind == kind) {
			u = c;
			break;
		}
	if (!u) {
		kfab_complete_rx_err(kfab_rx_first_ep(rxc), kind, req, ENOMSG);
		goto out_unlock;
	}
	kfab_unexp_take(rxc, u);
	if (discard) {
		kfab_complete_unexp(rxc, u, req, req->flags, 0, 0, 0, 0);
	} else {
		/* The buffer's address before the copy advances the iter. */
		u64 base = kfab_req_base(req);

		n = min(iov_iter_count(&req->iter), u->len);
		rc = kfab_unexp_copy_out(u, &req->iter, n);
		kfab_complete_unexp(rxc, u, req, req->flags, base, n, u->len,
				    -rc);
	}
out_unlock:
	mutex_unlock(&rxc->lock);
	/* Taken (discarded or delivered): the sender's send is done. */
	if (u)
		kfab_unexp_finish(u, 0);
	return 0;
}

/*
 * A receive that needs no pinned pages: a small one, in one buffer of the
 * poster's own memory, posted on an endpoint (not an SRX, whose completions
 * go to whichever endpoint a message reaches) whose receive CQ carries
 * payloads and will report it.  A send copies the message into the
 * completion and the library copies it out when it reads the CQ.
 */
static bool kfab_rx_skips_pin(struct kfab_ep *owner,
			      const struct kfab_req *req, size_t len)
{
	const struct iov_iter *it = &req->iter;
	struct kfab_cq *cq = owner ? owner->cq[KFAB_RX] : NULL;

	return cq && cq->payload && !owner->kops && len &&
	       len <= KFAB_CQ_PAYLOAD_MAX &&
	       (req->flags & KFAB_SQE_COMPLETION) &&
	       !(req->flags & KFAB_SQE_MULTI_RECV) &&
	       (iter_is_ubuf(it) || (iter_is_iovec(it) && it->nr_segs == 1));
}

/* @owner: the endpoint posting on its own receive context, or NULL (SRX) */
static int kfab_msg_recv(struct kfab_rx_ctx *rxc, struct kfab_ep *owner,
			 struct kfab_req *req, int kind)
{
	size_t len = iov_iter_count(&req->iter), used = 0, n;
	bool multi = req->flags & KFAB_SQE_MULTI_RECV;
	u64 base = kfab_req_base(req);
	struct kfab_msg_unexp *u;
	struct kfab_msg_rx *rx;
	LIST_HEAD(taken);
	bool done, unpinned;
	int rc;

	if (owner && kfab_ep_cq_busy(owner, KFAB_RX))
		return -EAGAIN;
	if (req->flags & (KFAB_SQE_PEEK | KFAB_SQE_CLAIM))
		return kfab_msg_peek_claim(rxc, req, kind);

	mutex_lock(&rxc->lock);
	if (kfab_rx_check_src(rxc, req->addr)) {
		kfab_complete_rx_err(kfab_rx_first_ep(rxc), kind, req, EINVAL);
		goto out_unlock;
	}

	/*
	 * Messages that wait go first, in arrival order: one for a plain
	 * receive, as many as fit a multi-receive buffer.  They are copied
	 * straight into the receive's own buffers (this process's memory,
	 * or a kernel caller's), so a receive that finds its message waiting
	 * pins nothing.
	 */
	for (;;) {
		u = kfab_match_unexp(rxc, kind, req->addr, req->tag,
				     req->ignore);
		if (!u)
			break;
		kfab_unexp_take(rxc, u);
		n = min(len - used, u->len);
		rc = kfab_unexp_copy_out(u, &req->iter, n);
		done = !multi ||
		       len - (used + n) < max_t(size_t, req->data, 1);
		kfab_complete_unexp(rxc, u, req,
				    done ? req->flags :
					   req->flags & ~KFAB_SQE_MULTI_RECV,
				    base + used, n, u->len, -rc);
		used += n;
		list_add_tail(&u->link, &taken);
		if (done)
			goto out_unlock;
	}

	/*
	 * Nothing (more) waits: post it, its buffers pinned so that a sender
	 * can copy into them from its own context.  Under the lock, so no
	 * message slips past between looking and posting.
	 */
	unpinned = kfab_rx_skips_pin(owner, req, len - used);
	rx = kzalloc(sizeof(*rx), GFP_KERNEL_ACCOUNT);
	if (!rx)
		rc = ENOMEM;
	else if (unpinned)
		rc = 0;
	else
		rc = -kfab_buf_get(&rx->buf, &req->iter, true);
	if (rc) {
		if (rx)
			kfab_rx_free(rx);
		kfab_complete_rx_err(kfab_rx_first_ep(rxc), kind, req, rc);
		goto out_unlock;
	}
	rx->context = req->context;
	rx->tag = req->tag;
	rx->ignore = req->ignore;
	rx->src = req->addr;
	rx->flags = req->flags;
	rx->base = base + used;
	rx->len = len - used;
	rx->min_free = multi ? req->data : 0;
	rx->unpinned = unpinned;
	list_add_tail(&rx->link, &rxc->posted[kind]);
out_unlock:
	mutex_unlock(&rxc->lock);
	kfab_unexp_finish_list(&taken, 0);
	return 0;
}

static int kfab_req_kind(const struct kfab_req *req)
{
	return req->opcode == KFAB_OP_TSEND || req->opcode == KFAB_OP_TRECV ?
	       KFAB_KIND_TAGGED : KFAB_KIND_MSG;
}

static bool kfab_req_is_send(const struct kfab_req *req)
{
	return req->opcode == KFAB_OP_SEND || req->opcode == KFAB_OP_TSEND;
}

/*
 * Whether a request's flags make sense, whoever made it.  FI_PEEK,
 * FI_CLAIM and FI_DISCARD combine as fi_tagged(3) allows: PEEK, alone or
 * with one of CLAIM and DISCARD; CLAIM, alone or with DISCARD.
 */
static bool kfab_req_valid(const struct kfab_req *req)
{
	u32 f = req->flags, pcd = f & (KFAB_SQE_PEEK | KFAB_SQE_CLAIM |
				       KFAB_SQE_DISCARD);

	if (req->opcode < KFAB_OP_SEND || req->opcode > KFAB_OP_TRECV ||
	    (f & ~KFAB_SQE_FLAGS))
		return false;
	if (kfab_req_is_send(req))
		return !(f & KFAB_SQE_RECV_ONLY);
	if (f & KFAB_SQE_SEND_ONLY)
		return false;
	if ((f & KFAB_SQE_MULTI_RECV) &&
	    (pcd || req->opcode != KFAB_OP_RECV))
		return false;
	return !pcd || pcd == KFAB_SQE_PEEK || pcd == KFAB_SQE_CLAIM ||
	       pcd == (KFAB_SQE_PEEK | KFAB_SQE_CLAIM) ||
	       pcd == (KFAB_SQE_PEEK | KFAB_SQE_DISCARD) ||
	       pcd == (KFAB_SQE_CLAIM | KFAB_SQE_DISCARD);
}

/* A malformed request: an EINVAL completion of its direction. */
static int kfab_msg_reject(struct kfab_ep *ep, const struct kfab_req *req)
{
	int kind = kfab_req_kind(req);

	if (kfab_req_is_send(req))
		kfab_complete_tx(ep, kind, req->context, req->flags, EINVAL);
	else
		kfab_complete_rx_err(ep, kind, req, EINVAL);
	return 0;
}

/**
 * kfab_msg_post() - carry out a send or a receive of an endpoint
 * @ep: the endpoint, enabled; its doorbell (or the kernel caller's
 *	serialisation) keeps it alive
 * @req: the request; @req->iter is consumed
 *
 * May sleep.  Return: 0 when the request is taken (it has completed, or
 * completes later, possibly with an error completion), -EAGAIN when it
 * cannot go on yet (its receiver's buffer budget is full, or FI_FENCE
 * waits): post it again later.
 */
int kfab_msg_post(struct kfab_ep *ep, struct kfab_req *req)
{
	int kind = kfab_req_kind(req);

	might_sleep();
	if (!kfab_req_valid(req) || iov_iter_count(&req->iter) > KFAB_MSG_MAX)
		return kfab_msg_reject(ep, req);
	if (kfab_req_is_send(req))
		return kfab_msg_send(ep, req, kind);
	/* An endpoint with a shared receive context has no receives. */
	if (ep->srx)
		return kfab_msg_reject(ep, req);
	return kfab_msg_recv(ep->core->rx, ep, req, kind);
}

static int kfab_msg_reject_srx(struct kfab_rx_ctx *rxc,
			       const struct kfab_req *req)
{
	mutex_lock(&rxc->lock);
	kfab_complete_rx_err(kfab_rx_first_ep(rxc), kfab_req_kind(req), req,
			     EINVAL);
	mutex_unlock(&rxc->lock);
	return 0;
}

/**
 * kfab_msg_post_srx() - carry out a receive of a shared receive context
 * @rxc: the context's lists
 * @req: the request: a receive (a send gets an EINVAL completion)
 *
 * As kfab_msg_post(); failures complete on the endpoint that joined the
 * context first.
 */
int kfab_msg_post_srx(struct kfab_rx_ctx *rxc, struct kfab_req *req)
{
	might_sleep();
	if (kfab_req_valid(req) && !kfab_req_is_send(req) &&
	    iov_iter_count(&req->iter) <= KFAB_MSG_MAX)
		return kfab_msg_recv(rxc, NULL, req, kfab_req_kind(req));
	return kfab_msg_reject_srx(rxc, req);
}

/*
 * A ring entry as a request.  Return: false for a malformed entry (its
 * buffers are not even looked at).  @iov is the iterator's storage.
 */
static bool kfab_sqe_to_req(const struct kfab_sqe *sqe, struct kfab_req *req,
			    struct iovec *iov, struct kvec *kv)
{
	bool send = sqe->opcode == KFAB_OP_SEND || sqe->opcode == KFAB_OP_TSEND;
	size_t len = 0;
	unsigned int i;

	*req = (struct kfab_req){
		.opcode = sqe->opcode,
		.flags = sqe->flags,
		.context = sqe->context,
		.addr = sqe->addr,
		.tag = sqe->tag,
		.ignore = sqe->ignore,
		.data = sqe->data,
	};
	/* An empty iterator keeps error completions well formed. */
	iov_iter_kvec(&req->iter, ITER_DEST, kv, 0, 0);
	if (sqe->__reserved || sqe->__reserved2 ||
	    sqe->iov_count > KFAB_IOV_MAX)
		return false;
	if (sqe->flags & KFAB_SQE_INLINE) {
		if (!send || sqe->iov_count || sqe->len > KFAB_INLINE_MAX ||
		    (sqe->flags & KFAB_SQE_DELIVERY_COMPLETE))
			return false;
		kv->iov_base = (void *)sqe->inline_data;
		kv->iov_len = sqe->len;
		iov_iter_kvec(&req->iter, ITER_SOURCE, kv, 1, sqe->len);
		return true;
	}
	/* FI_PEEK and FI_DISCARD ignore the buffers (fi_tagged(3)). */
	if (sqe->flags & (KFAB_SQE_PEEK | KFAB_SQE_DISCARD))
		return true;
	/* Bad pointers fail in the copy or the pinning, with -EFAULT. */
	for (i = 0; i < sqe->iov_count; i++) {
		if (sqe->iov[i].len > KFAB_MSG_MAX)
			return false;
		iov[i].iov_base = u64_to_user_ptr(sqe->iov[i].base);
		iov[i].iov_len = sqe->iov[i].len;
		len += sqe->iov[i].len;
	}
	if (len > KFAB_MSG_MAX)
		return false;
	/* MULTI_RECV takes one buffer: its offsets are the completions'. */
	if ((sqe->flags & KFAB_SQE_MULTI_RECV) && sqe->iov_count != 1)
		return false;
	iov_iter_init(&req->iter, send ? ITER_SOURCE : ITER_DEST, iov,
		      sqe->iov_count, len);
	return true;
}

/* An entry of an endpoint's ring: 0 when consumed, -EAGAIN to leave it. */
int kfab_msg_submit(struct kfab_ep *ep, const struct kfab_sqe *sqe)
{
	struct iovec iov[KFAB_IOV_MAX];
	struct kfab_req req;
	struct kvec kv;

	if (!kfab_sqe_to_req(sqe, &req, iov, &kv))
		return kfab_msg_reject(ep, &req);
	return kfab_msg_post(ep, &req);
}

/* An entry of a shared receive context's ring. */
int kfab_msg_submit_srx(struct kfab_rx_ctx *rxc, const struct kfab_sqe *sqe)
{
	struct iovec iov[KFAB_IOV_MAX];
	struct kfab_req req;
	struct kvec kv;

	if (!kfab_sqe_to_req(sqe, &req, iov, &kv))
		return kfab_msg_reject_srx(rxc, &req);
	return kfab_msg_post_srx(rxc, &req);
}

/**
 * kfab_msg_cancel() - cancel the oldest posted receive with a context
 * @rxc: the receive context it was posted to
 * @context: the receive's context
 *
 * Return: 0 (it completes with ECANCELED on the endpoint that posted it,
 * or for a shared context the endpoint that joined it first), or -ENOENT.
 */
int kfab_msg_cancel(struct kfab_rx_ctx *rxc, u64 context)
{
	struct kfab_msg_rx *rx, *found = NULL;
	int kind;

	mutex_lock(&rxc->lock);
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED && !found; kind++)
		list_for_each_entry(rx, &rxc->posted[kind], link)
			if (rx->context == context) {
				list_del(&rx->link);
				found = rx;
				kfab_complete_rx(kfab_rx_first_ep(rxc), kind,
						 rx->context, rx->flags,
						 rx->base, 0, 0,
						 KFAB_CQ_ADDR_NOTAVAIL, rx->tag,
						 0, 0, ECANCELED, NULL);
				break;
			}
	mutex_unlock(&rxc->lock);
	if (!found)
		return -ENOENT;
	kfab_rx_free(found);
	return 0;
}

/* Move the messages sent to @core (every one for NULL) onto @out. */
static void kfab_rx_take_msgs(struct kfab_rx_ctx *rxc,
			      struct kfab_ep_core *core, struct list_head *out)
{
	struct list_head *lists[] = { &rxc->unexpected[KFAB_KIND_MSG],
				      &rxc->unexpected[KFAB_KIND_TAGGED],
				      &rxc->claimed };
	struct kfab_msg_unexp *u, *n;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lists); i++)
		list_for_each_entry_safe(u, n, lists[i], link)
			if (!core || u->target == core) {
				kfab_unexp_take(rxc, u);
				list_add_tail(&u->link, out);
			}
}

/**
 * kfab_msg_detach() - an endpoint is going: nothing reaches it any more
 * @core: its core
 *
 * Its messages that wait unexpected (on its own lists or a shared
 * context's) go, and their rendezvous senders learn that they were not
 * delivered.  Receives stay: a shared context's serve its other
 * endpoints, an endpoint's own go with kfab_msg_flush_rx().
 */
void kfab_msg_detach(struct kfab_ep_core *core)
{
	struct kfab_rx_ctx *rxc = core->rx;
	LIST_HEAD(gone);

	mutex_lock(&rxc->lock);
	core->dead = true;
	core->ep = NULL;
	list_del_init(&core->rx_link);
	kfab_rx_take_msgs(rxc, core, &gone);
	mutex_unlock(&rxc->lock);
	kfab_unexp_finish_list(&gone, ECONNRESET);
}

/**
 * kfab_msg_flush_rx() - drop everything a receive context holds
 * @rxc: a context no endpoint receives through any more
 */
void kfab_msg_flush_rx(struct kfab_rx_ctx *rxc)
{
	struct kfab_msg_rx *rx, *rn;
	LIST_HEAD(posted);
	LIST_HEAD(gone);
	int kind;

	mutex_lock(&rxc->lock);
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED; kind++)
		list_splice_init(&rxc->posted[kind], &posted);
	kfab_rx_take_msgs(rxc, NULL, &gone);
	rxc->av = NULL;
	mutex_unlock(&rxc->lock);

	list_for_each_entry_safe(rx, rn, &posted, link)
		kfab_rx_free(rx);
	kfab_unexp_finish_list(&gone, ECONNRESET);
}
