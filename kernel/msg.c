// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Messages between endpoints: matching and data movement
 * (Documentation/ep.rst, Documentation/design.rst "A message's path").
 *
 * Every request runs in the context of the process that submitted it (its
 * doorbell), so the kernel reaches that process's memory with the ordinary
 * uaccess functions, and the other process's memory only through pages it
 * pinned itself.  A send reaches its receiver's receive context and then
 * takes one of three ways:
 *
 *  - matched: a posted receive waits (its buffers pinned, charged to
 *    RLIMIT_MEMLOCK); the send copies from the sender's memory straight
 *    into those pages: one copy (kfab_recv_deliver()).
 *  - eager: no receive waits and the message is small (at most
 *    KFAB_MSG_EAGER_MAX); it is copied into kernel memory within the
 *    receive context's budget (KFAB_MSG_UNEXP_MAX, or the send waits in
 *    the sender's ring: -EAGAIN) and the send completes
 *    (kfab_unexp_eager()).
 *  - rendezvous: no receive waits and the message is large or asked for
 *    FI_DELIVERY_COMPLETE; the sender's buffers are pinned and wait at the
 *    receiver, and the receive that matches copies from them: one copy,
 *    and the send completes then (kfab_unexp_rendezvous()).
 *
 * A transport that brings messages from other nodes enters at the same
 * three pieces with a struct kfab_msg that describes what arrived.
 *
 * Receives are matched in the order posted, unexpected messages in the
 * order they arrived, per kind (messages, tagged messages): FI_ORDER_SAS.
 *
 * Errors: functions return 0 or a negative errno, and a completion carries
 * the same negative value in struct kfab_comp's @status; only the CQ's
 * error entry (ep.c) turns it positive, as fi_cq_err_entry wants.
 *
 * Locking (kernel/kfab.h "Locking"): a request holds at most one receive
 * context's lock at a time; a send completed by a receive is reported
 * after the receiver's lock is dropped.  Pinning and unpinning (which take
 * mmap locks) happen outside receive context locks.
 */
#include <linux/lockdep.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>

#include <net/netlink.h>

#include <linux/kfab_netlink.h>

#include "kfab.h"
#include "msg.h"
#include "net.h"
#include "trace.h"

/* Unexpected messages up to this size are buffered in the kernel. */
#define KFAB_MSG_EAGER_MAX	(64 * 1024)
/* Kernel memory one receive context may hold for unexpected messages. */
#define KFAB_MSG_UNEXP_MAX	(1024 * 1024)

#define KFAB_SQE_FLAGS	(KFAB_SQE_COMPLETION | KFAB_SQE_REMOTE_CQ_DATA | \
			 KFAB_SQE_INLINE | KFAB_SQE_MULTI_RECV | \
			 KFAB_SQE_DELIVERY_COMPLETE | KFAB_SQE_FENCE | \
			 KFAB_SQE_PEEK | KFAB_SQE_CLAIM | KFAB_SQE_DISCARD | \
			 KFAB_SQE_PROBE | KFAB_SQE_BUFFERED)
#define KFAB_SQE_SEND_ONLY (KFAB_SQE_INLINE | KFAB_SQE_DELIVERY_COMPLETE | \
			    KFAB_SQE_FENCE | KFAB_SQE_PROBE)
#define KFAB_SQE_RECV_ONLY (KFAB_SQE_MULTI_RECV | KFAB_SQE_PEEK | \
			    KFAB_SQE_CLAIM | KFAB_SQE_DISCARD | \
			    KFAB_SQE_BUFFERED)

/**
 * struct kfab_recv_end - how a receive ends, filled in by name
 * @kind: KFAB_KIND_*
 * @context: the receive's context
 * @flags: the receive's KFAB_SQE_* (without KFAB_SQE_MULTI_RECV while a
 *	multi-receive buffer stays posted)
 * @buf: where the message went
 * @len: bytes delivered
 * @msg_len: bytes the message had: more than @len is a truncation
 * @msg: the message, or NULL when the receive ends without one
 * @src: with @msg: the sender's index in the receiver's AV
 * @tag: without @msg: the receive's own tag
 * @status: 0 or a negative errno
 * @payload: the message itself, for a receive that pinned nothing
 */
struct kfab_recv_end {
	int kind;
	u64 context;
	u32 flags;
	u64 buf;
	size_t len;
	size_t msg_len;
	const struct kfab_msg *msg;
	u64 src;
	u64 tag;
	int status;
	const void *payload;
};

/* ---- receive contexts ---- */

struct kfab_rx_ctx *kfab_rx_ctx_alloc(void)
{
	struct kfab_rx_ctx *rxc = kzalloc(sizeof(*rxc), GFP_KERNEL_ACCOUNT);
	int kind;

	if (!rxc)
		return NULL;
	kref_init(&rxc->ref);
	mutex_init(&rxc->lock);
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED; kind++) {
		INIT_LIST_HEAD(&rxc->posted[kind]);
		INIT_LIST_HEAD(&rxc->unexpected[kind]);
	}
	INIT_LIST_HEAD(&rxc->claimed);
	INIT_LIST_HEAD(&rxc->cores);
	return rxc;
}

static void kfab_rx_ctx_release(struct kref *ref)
{
	struct kfab_rx_ctx *rxc = container_of(ref, struct kfab_rx_ctx, ref);
	struct kfab_recv *recv, *next;

	llist_for_each_entry_safe(recv, next, llist_del_all(&rxc->free_recvs),
				  free)
		kfree(recv);
	llist_for_each_entry_safe(recv, next, rxc->spare_recvs, free)
		kfree(recv);
	kfab_rx_ctx_bufrecv_free(rxc);
	mutex_destroy(&rxc->lock);
	kfree(rxc);
}

void kfab_rx_ctx_put(struct kfab_rx_ctx *rxc)
{
	kref_put(&rxc->ref, kfab_rx_ctx_release);
}

/*
 * Where a receive context reports what no message decides: the endpoint
 * that joined it first and is still there.
 */
static struct kfab_ep *kfab_rx_first_ep(struct kfab_rx_ctx *rxc)
{
	struct kfab_ep_core *core;

	lockdep_assert_held(&rxc->lock);
	core = list_first_entry_or_null(&rxc->cores, struct kfab_ep_core,
					rx_link);
	return core ? core->ep : NULL;
}

/*
 * netlink: what a receive context holds unexpected now, messages and
 * bytes, and how many messages ever waited there (no sleep: the caller
 * holds an xarray lock; values a moment old are enough).
 */
int kfab_rx_ctx_nl_fill(struct sk_buff *skb, struct kfab_rx_ctx *rxc)
{
	if (kfab_nl_put_u64(skb, KFAB_NL_ATTR_UNEXP_BYTES,
			    kfab_rx_ctx_unexp_bytes(rxc)) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_UNEXP_MSGS,
			    kfab_rx_ctx_unexp_msgs(rxc)) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_UNEXP_TOTAL,
			    kfab_rx_ctx_unexp_total(rxc)))
		return -EMSGSIZE;
	return 0;
}

/* ---- completions ---- */

static u64 kfab_comp_kind(int kind)
{
	return kind == KFAB_KIND_TAGGED ? KFAB_COMP_TAGGED : KFAB_COMP_MSG;
}

/* Report a receive on @ep (NULL: nobody is left to tell). */
static void kfab_complete_recv(struct kfab_ep *ep,
			       const struct kfab_recv_end *end)
{
	const struct kfab_msg *msg = end->msg;
	struct kfab_comp c = {
		.dir = KFAB_RX,
		.req_flags = end->flags,
		.entry = {
			.op_context = end->context,
			.flags = KFAB_COMP_RECV | kfab_comp_kind(end->kind),
			.len = end->status ? 0 : end->len,
			.buf = end->buf,
			.tag = msg ? msg->tag : end->tag,
			.src_addr = msg ? end->src : KFAB_CQ_ADDR_NOTAVAIL,
		},
		.status = end->status,
		.payload = end->payload,
	};

	if (!ep)
		return;
	if (end->flags & KFAB_SQE_MULTI_RECV)
		c.entry.flags |= KFAB_COMP_MULTI_RECV;
	if (msg && (msg->flags & KFAB_SQE_REMOTE_CQ_DATA)) {
		c.entry.flags |= KFAB_COMP_REMOTE_CQ_DATA;
		c.entry.data = msg->data;
	}
	if (end->payload)
		c.entry.flags |= KFAB_COMP_PAYLOAD;
	if ((end->flags & KFAB_SQE_BUFFERED) &&
	    !(end->flags & KFAB_SQE_DISCARD))
		c.entry.flags |= KFAB_COMP_CLAIM;
	if (!c.status && end->msg_len > end->len) {
		c.status = -KFAB_ERR_TRUNC;
		c.olen = end->msg_len - end->len;
	}
	kfab_ep_complete(ep, &c);
}

/* A receive that failed before any message: no source, no data. */
static void kfab_complete_recv_err(struct kfab_ep *ep, int kind,
				   const struct kfab_req *req, int status)
{
	kfab_complete_recv(ep, &(struct kfab_recv_end){
		.kind = kind,
		.context = req->context,
		.flags = req->flags,
		.tag = req->tag,
		.status = status,
	});
}

static void kfab_complete_send(struct kfab_ep *ep, int kind, u64 context,
			       u32 flags, int status)
{
	struct kfab_comp c = {
		.dir = KFAB_TX,
		.req_flags = flags,
		.entry = {
			.op_context = context,
			.flags = KFAB_COMP_SEND | kfab_comp_kind(kind),
		},
		.status = status,
	};

	kfab_ep_complete(ep, &c);
}

/* ---- matching ---- */

static bool kfab_tag_match(u64 want, u64 ignore, u64 tag)
{
	return !((want ^ tag) & ~ignore);
}

/*
 * The oldest posted receive of @rxc that takes @msg from @from (the
 * sender's index in @rxc's AV).  It leaves its list, but for a
 * multi-receive buffer, which stays first until it is full.
 */
struct kfab_recv *kfab_match_recv(struct kfab_rx_ctx *rxc,
				  const struct kfab_msg *msg, u64 from)
{
	struct kfab_recv *recv;

	lockdep_assert_held(&rxc->lock);
	list_for_each_entry(recv, &rxc->posted[msg->kind], link) {
		if (recv->src != KFAB_CQ_ADDR_NOTAVAIL && recv->src != from)
			continue;
		if (msg->kind == KFAB_KIND_TAGGED &&
		    !kfab_tag_match(recv->tag, recv->ignore, msg->tag))
			continue;
		if (!(recv->flags & KFAB_SQE_MULTI_RECV))
			list_del(&recv->link);
		return recv;
	}
	return NULL;
}

/* The oldest unexpected message a receive matches (left on its list). */
static struct kfab_unexp *kfab_match_unexp(struct kfab_rx_ctx *rxc,
					   int kind, u64 src, u64 tag,
					   u64 ignore)
{
	struct kfab_unexp *u;

	lockdep_assert_held(&rxc->lock);
	list_for_each_entry(u, &rxc->unexpected[kind], link) {
		if (src != KFAB_CQ_ADDR_NOTAVAIL &&
		    kfab_av_index_of(rxc->av, &u->msg.src) != src)
			continue;
		if (kind == KFAB_KIND_TAGGED &&
		    !kfab_tag_match(tag, ignore, u->msg.tag))
			continue;
		return u;
	}
	return NULL;
}

/* ---- unexpected messages ---- */

/*
 * What a buffered message costs the receiver's budget: its bytes and its
 * bookkeeping, so a flood of empty messages is bounded too.
 */
static size_t kfab_unexp_cost(size_t len)
{
	return len + sizeof(struct kfab_unexp);
}

/* A message no receive matched goes on its list, counted. */
static void kfab_unexp_hold(struct kfab_rx_ctx *rxc, struct kfab_unexp *u)
{
	lockdep_assert_held(&rxc->lock);
	list_add_tail(&u->link, &rxc->unexpected[u->msg.kind]);
	rxc->unexp_msgs++;
	rxc->unexp_total++;
}

/*
 * A message whose bytes stay in its sender's pages: the send waits at
 * this receiver until kfab_send_done() (a reference on @sender).
 */
static void kfab_unexp_keep_sender(struct kfab_unexp *u,
				   struct kfab_ep_core *sender, u64 context)
{
	kref_get(&sender->ref);
	atomic_inc(&sender->tx_waiting);
	u->sender = sender;
	u->sender_context = context;
}

/* Take a message off its list; its buffered bytes leave the budget. */
static void kfab_unexp_take(struct kfab_rx_ctx *rxc, struct kfab_unexp *u)
{
	lockdep_assert_held(&rxc->lock);
	list_del(&u->link);
	rxc->unexp_msgs--;
	/* A remote message is charged to its peer's credit instead. */
	if (u->kbuf && !u->remote)
		rxc->unexp_bytes -= kfab_unexp_cost(u->msg.len);
	/* A buffered one gives its slot back; its token goes stale. */
	if (u->slot.token) {
		kfab_bufrecv_release(rxc, u->slot.token);
		u->slot.token = 0;
	}
}

/**
 * kfab_send_done() - a send that waited at its receiver is over
 * @sender: the sending endpoint (the caller's reference), counted in its
 *	@tx_waiting
 * @kind: KFAB_KIND_*
 * @context: the send's context
 * @flags: the send's KFAB_SQE_*
 * @status: 0 or a negative errno
 *
 * No receive context's lock held: the sender's is taken.
 */
void kfab_send_done(struct kfab_ep_core *sender, int kind, u64 context,
		    u32 flags, int status)
{
	mutex_lock(&sender->rxc->lock);
	if (!sender->dead)
		kfab_complete_send(sender->ep, kind, context, flags, status);
	mutex_unlock(&sender->rxc->lock);
	/* After the completion: a fenced send may go once it is seen. */
	atomic_dec(&sender->tx_waiting);
}

/*
 * A message is out of every list: tell its rendezvous sender, if it is
 * still there, and free it.  @status: 0 (taken) or a negative errno (not
 * delivered).  No receive context lock held: the sender's may be the same.
 */
void kfab_unexp_finish(struct kfab_unexp *u, int status)
{
	struct kfab_ep_core *sender = u->sender;

	if (sender) {
		kfab_send_done(sender, u->msg.kind, u->sender_context,
			       u->msg.flags, status);
		kfab_ep_core_put(sender);
	}
	if (u->remote)
		kfab_remote_release(u->remote, status);
	kfab_buf_put(&u->buf);
	kvfree(u->kbuf);
	kfree(u);
}

static void kfab_unexp_finish_list(struct list_head *list, int status)
{
	struct kfab_unexp *u, *n;

	list_for_each_entry_safe(u, n, list, link)
		kfab_unexp_finish(u, status);
}

/* Copy up to @n bytes of an unexpected message out to a receive's iter. */
static int kfab_unexp_copy_out(struct kfab_unexp *u, struct iov_iter *to,
			       size_t n)
{
	if (u->kbuf)
		return copy_to_iter(u->kbuf, n, to) == n ? 0 : -EFAULT;
	/* At a sender on this node: its CPU may take pieces (share.c). */
	if (u->sender && !u->remote)
		return kfab_share_copy_out(u->sender, &u->buf, to, n);
	return kfab_buf_copy_out(&u->buf, 0, to, n);
}

/* Report a message to a receive of @rxc that took @n bytes of it. */
static void kfab_complete_unexp(struct kfab_rx_ctx *rxc, struct kfab_unexp *u,
				const struct kfab_req *req, u32 flags, u64 buf,
				size_t n, size_t msg_len, int status)
{
	kfab_complete_recv(u->target->ep, &(struct kfab_recv_end){
		.kind = u->msg.kind,
		.context = req->context,
		.flags = flags,
		.buf = buf,
		.len = n,
		.msg_len = msg_len,
		.msg = &u->msg,
		.src = kfab_av_index_of(rxc->av, &u->msg.src),
		.status = status,
	});
}

/* A new unexpected message for @target, its envelope filled in. */
static struct kfab_unexp *kfab_unexp_new(struct kfab_ep_core *target,
					 const struct kfab_msg *msg)
{
	struct kfab_unexp *u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);

	if (!u)
		return NULL;
	u->target = target;
	u->msg = *msg;
	/* Only the sender's doorbell may pin through its file. */
	u->msg.pin_cache = NULL;
	return u;
}

/**
 * kfab_unexp_eager() - buffer a small message no receive waits for
 * @rxc: the receiver's receive context, locked
 * @target: the endpoint it was sent to
 * @msg: the message
 * @from: its payload (@msg->len bytes)
 *
 * Return: 0 (the send is done), -EAGAIN when the context's budget is full
 * (the send waits), -ENOMEM, -EFAULT.
 */
int kfab_unexp_eager(struct kfab_rx_ctx *rxc, struct kfab_ep_core *target,
		     const struct kfab_msg *msg, struct iov_iter *from)
{
	size_t cost = kfab_unexp_cost(msg->len);
	struct kfab_unexp *u;
	int rc = -ENOMEM;

	lockdep_assert_held(&rxc->lock);
	if (rxc->unexp_bytes + cost > KFAB_MSG_UNEXP_MAX)
		return -EAGAIN;
	trace_kfab_unexpected(target->num, msg->tag, msg->len, true);
	u = kfab_unexp_new(target, msg);
	if (!u)
		return -ENOMEM;
	u->kbuf = kvmalloc(msg->len ?: 1, GFP_KERNEL_ACCOUNT);
	if (!u->kbuf)
		goto err_free;
	rc = -EFAULT;
	if (copy_from_iter(u->kbuf, msg->len, from) != msg->len)
		goto err_free;
	rxc->unexp_bytes += cost;
	kfab_unexp_hold(rxc, u);
	return 0;

err_free:
	kvfree(u->kbuf);
	kfree(u);
	return rc;
}

/**
 * kfab_unexp_rendezvous() - queue a message that stays with its sender
 * @rxc: the receiver's receive context, locked
 * @target: the endpoint it was sent to
 * @msg: the message
 * @from: its payload, pinned here (the sender's memory) or kernel memory
 * @sender: the sending endpoint, told when a receive takes the message
 * @context: the send's context
 *
 * Return: 0 (the send completes when a receive takes the message, or with
 * -ECONNRESET when the receiver goes first), -ENOMEM (also past
 * RLIMIT_MEMLOCK), -EFAULT.
 */
int kfab_unexp_rendezvous(struct kfab_rx_ctx *rxc,
			  struct kfab_ep_core *target,
			  const struct kfab_msg *msg, struct iov_iter *from,
			  struct kfab_ep_core *sender, u64 context,
			  struct kfab_pin_stats *pins)
{
	struct kfab_unexp *u;
	int rc;

	lockdep_assert_held(&rxc->lock);
	trace_kfab_unexpected(target->num, msg->tag, msg->len, false);
	u = kfab_unexp_new(target, msg);
	if (!u)
		return -ENOMEM;
	rc = kfab_buf_get(&u->buf, from, false, pins);
	if (rc) {
		kfree(u);
		return rc;
	}
	kfab_unexp_keep_sender(u, sender, context);
	kfab_unexp_hold(rxc, u);
	return 0;
}

/* The notice of a buffered message: where it lies, named by its token. */
static void kfab_complete_buffered(struct kfab_rx_ctx *rxc,
				   struct kfab_unexp *u)
{
	const struct kfab_msg *msg = &u->msg;
	struct kfab_comp c = {
		.dir = KFAB_RX,
		.req_flags = KFAB_SQE_COMPLETION,
		.entry = {
			.op_context = u->slot.token,
			.flags = KFAB_COMP_RECV | KFAB_COMP_BUFFERED |
				 kfab_comp_kind(msg->kind),
			.len = msg->len,
			.buf = u->slot.offset,
			.tag = msg->tag,
			.src_addr = kfab_av_index_of(rxc->av, &msg->src),
			.cookie = u->slot.cookie,
		},
	};

	if (msg->len > u->slot.len)
		c.entry.flags |= KFAB_COMP_MORE;
	if (msg->flags & KFAB_SQE_REMOTE_CQ_DATA) {
		c.entry.flags |= KFAB_COMP_REMOTE_CQ_DATA;
		c.entry.data = msg->data;
	}
	kfab_ep_complete(u->target->ep, &c);
}

/**
 * kfab_unexp_buffered() - put a message no receive waits for where its
 *	receiver reads it: a slot of the receive context's region
 * @rxc: the receiver's receive context, locked, with a region
 * @target: the endpoint it was sent to
 * @msg: the message
 * @from: its payload; the first bytes (up to the limit) are copied, the
 *	rest is pinned and waits with the message (@sender's memory)
 * @sender: the sending endpoint, told when the message is claimed or
 *	discarded if it did not fit its slot
 * @context: the send's context
 * @pins: the sender's pinned memory counters
 * @later: out: the send completes later (the message did not fit)
 *
 * The receiver's CQ gets the notice now (KFAB_COMP_BUFFERED); the message
 * waits on @claimed, under its token, for FI_CLAIM or FI_DISCARD.
 * Return: 0, -EAGAIN when no slot is free (the send waits), -ENOMEM,
 * -EFAULT.
 */
static int kfab_unexp_buffered(struct kfab_rx_ctx *rxc,
			       struct kfab_ep_core *target,
			       const struct kfab_msg *msg,
			       struct iov_iter *from,
			       struct kfab_ep_core *sender, u64 context,
			       struct kfab_pin_stats *pins, bool *later)
{
	size_t n = min_t(size_t, msg->len, kfab_bufrecv_limit(rxc));
	struct kfab_unexp *u;
	int rc;

	lockdep_assert_held(&rxc->lock);
	u = kfab_unexp_new(target, msg);
	if (!u)
		return -ENOMEM;
	rc = kfab_bufrecv_fill(rxc, from, n, &u->slot);
	if (rc) {
		kfree(u);
		return rc;
	}
	trace_kfab_unexpected(target->num, msg->tag, msg->len, true);
	if (msg->len > n) {
		rc = kfab_buf_get(&u->buf, from, false, pins);
		if (rc) {
			kfab_bufrecv_release(rxc, u->slot.token);
			kfab_buf_put(&u->buf);
			kfree(u);
			return rc;
		}
		kfab_unexp_keep_sender(u, sender, context);
		*later = true;
	}
	kfab_unexp_hold(rxc, u);
	list_move_tail(&u->link, &rxc->claimed);
	u->claim_context = u->slot.token;
	kfab_complete_buffered(rxc, u);
	return 0;
}

/* ---- posted receives ---- */

/*
 * A receive context keeps up to this many receives that are done with, so
 * that a stream of small receives allocates nothing: otherwise the
 * receiver allocates each and its sender frees it on another CPU, SLUB's
 * slow path on both sides (Documentation/bench.rst, "Small messages,
 * again").  A default ring's worth: a receiver that reposts a full ring
 * at a time (four senders' windows of 64) finds them all here.  It keeps
 * only what it once had posted at the same time.
 */
#define KFAB_RECV_CACHE_MAX	KFAB_SQ_DEFAULT_ENTRIES

/* A receive to fill in: one kept by @rxc, or a new one. */
static struct kfab_recv *kfab_recv_alloc(struct kfab_rx_ctx *rxc)
{
	struct llist_node *node;
	struct kfab_recv *recv;

	/* llist_del_first() allows one taker at a time: the lock. */
	lockdep_assert_held(&rxc->lock);
	node = rxc->spare_recvs;
	if (node) {
		rxc->spare_recvs = node->next;
		WRITE_ONCE(rxc->nr_spare_recvs, rxc->nr_spare_recvs - 1);
	} else {
		node = llist_del_first(&rxc->free_recvs);
		if (!node)
			return kzalloc(sizeof(*recv), GFP_KERNEL_ACCOUNT);
		atomic_dec(&rxc->nr_free_recvs);
	}
	recv = llist_entry(node, struct kfab_recv, free);
	/* kfab_recv_post() sets the rest; the buffer starts zeroed. */
	recv->used = 0;
	recv->buf = (struct kfab_buf){};
	return recv;
}

void kfab_recv_put(struct kfab_recv *recv)
{
	if (!refcount_dec_and_test(&recv->users))
		return;
	kfab_buf_put(&recv->buf);
	kfree(recv);
}

/*
 * kfab_recv_put() for a caller that holds @rxc (the receive context it was
 * posted on, unlocked): the last user's receive goes back to @rxc.
 */
void kfab_recv_put_cached(struct kfab_rx_ctx *rxc, struct kfab_recv *recv)
{
	if (!refcount_dec_and_test(&recv->users))
		return;
	/* An unpinned receive's buffer holds nothing (and it is most of them). */
	if (!recv->unpinned)
		kfab_buf_put(&recv->buf);
	/* Read without the lock: the bound may be passed by a few. */
	if (atomic_inc_return(&rxc->nr_free_recvs) +
	    READ_ONCE(rxc->nr_spare_recvs) <= KFAB_RECV_CACHE_MAX) {
		llist_add(&recv->free, &rxc->free_recvs);
		return;
	}
	atomic_dec(&rxc->nr_free_recvs);
	kfree(recv);
}

/**
 * kfab_recv_put_locked() - a receive done with, given back under its lock
 * @rxc: its receive context, locked
 * @recv: a receive off its posted list
 *
 * References to a posted receive are taken under @rxc's lock (a pull's),
 * so a count of one seen here stays one: the receive goes back to the
 * cache without an atomic operation.  Return: false when it could not
 * (another reference, pinned pages, a full cache): the caller then calls
 * kfab_recv_put_cached() once the lock is dropped.
 */
bool kfab_recv_put_locked(struct kfab_rx_ctx *rxc, struct kfab_recv *recv)
{
	lockdep_assert_held(&rxc->lock);
	if (refcount_read(&recv->users) != 1 || !recv->unpinned ||
	    rxc->nr_spare_recvs + atomic_read(&rxc->nr_free_recvs) >=
	    KFAB_RECV_CACHE_MAX)
		return false;
	recv->free.next = rxc->spare_recvs;
	rxc->spare_recvs = &recv->free;
	WRITE_ONCE(rxc->nr_spare_recvs, rxc->nr_spare_recvs + 1);
	return true;
}

/*
 * A receive takes @n bytes.  Return: true when it is done with: always
 * for a plain receive; for a multi-receive buffer, once fewer than its
 * least free space is left (it is then released).
 */
static bool kfab_recv_take(struct kfab_recv *recv, size_t n)
{
	recv->used += n;
	if (!(recv->flags & KFAB_SQE_MULTI_RECV))
		return true;
	return recv->len - recv->used < max_t(size_t, recv->min_free, 1);
}

/*
 * Up to a slot's worth of a message into @to.  An inline send's payload
 * is one kernel segment (its ring entry's copy): a plain memcpy, without
 * the iterator walk and the usercopy checks a user buffer needs.
 */
static int kfab_copy_small(void *to, size_t n, struct iov_iter *from)
{
	if (iov_iter_is_kvec(from) && from->nr_segs == 1 &&
	    from->kvec->iov_len - from->iov_offset >= n) {
		memcpy(to, from->kvec->iov_base + from->iov_offset, n);
		iov_iter_advance(from, n);
		return 0;
	}
	return copy_from_iter(to, n, from) == n ? 0 : -EFAULT;
}

/**
 * kfab_recv_deliver() - copy a message into a receive that matched it
 * @rxc: the receive context, locked
 * @target: the endpoint the message was sent to (its CQ reports it)
 * @recv: the receive, from kfab_match_recv()
 * @msg: the message
 * @from: the sender's index in @rxc's AV
 * @data: the payload, @msg->len bytes
 *
 * The receive completes here.  A receive that is done leaves @rxc's list;
 * the caller frees it (kfab_recv_put()) once @rxc is unlocked.
 *
 * Return: the copy's status (0 or -EFAULT), for the send's completion;
 * *@done: whether @recv is done.
 */
int kfab_recv_deliver(struct kfab_rx_ctx *rxc, struct kfab_ep_core *target,
		      struct kfab_recv *recv, const struct kfab_msg *msg,
		      u64 from, struct iov_iter *data, bool *done)
{
	size_t at = recv->used, n = min(msg->len, recv->len - at);
	/* Only its first n bytes are read, once the copy wrote them. */
	u8 small[KFAB_CQ_PAYLOAD_MAX] __uninitialized;
	int rc;

	lockdep_assert_held(&rxc->lock);
	trace_kfab_match(target->num, recv->context, msg->tag, msg->len);
	*done = kfab_recv_take(recv, n);
	if (recv->unpinned)
		rc = kfab_copy_small(small, n, data);
	else if (!target->ep->kops &&
		 kfab_share_wanted(target->ep->cq[KFAB_RX], data, n))
		/* Large: the receiver's CPU may take pieces (share.c). */
		rc = kfab_share_copy(target->ep->cq[KFAB_RX], &recv->buf, at,
				     data, n, msg->pin_cache);
	else
		rc = kfab_buf_copy_in(&recv->buf, at, data, n);
	kfab_complete_recv(target->ep, &(struct kfab_recv_end){
		.kind = msg->kind,
		.context = recv->context,
		.flags = *done ? recv->flags :
				 recv->flags & ~KFAB_SQE_MULTI_RECV,
		.buf = recv->base + at,
		.len = n,
		.msg_len = msg->len,
		.msg = msg,
		.src = from,
		.status = rc,
		.payload = recv->unpinned && !rc ? small : NULL,
	});
	if (*done && (recv->flags & KFAB_SQE_MULTI_RECV))
		list_del(&recv->link);
	return rc;
}

/* ---- messages from other nodes ---- */

/* A remote message whose payload is still at its sender. */
static bool kfab_unexp_at_sender(const struct kfab_unexp *u)
{
	return u->remote && u->remote->rts;
}

/*
 * A pull of @n bytes of remote message @msg (from @remote) into @recv's
 * buffer at @at, reported with @context, @flags and @buf.  Takes a user
 * of @recv and a reference on @target; @remote moves into the pull.
 */
static struct kfab_pull *kfab_pull_new(struct kfab_rx_ctx *rxc,
				       struct kfab_ep_core *target,
				       const struct kfab_msg *msg,
				       struct kfab_remote *remote,
				       struct kfab_recv *recv, size_t at,
				       size_t n, u64 context, u32 flags,
				       u64 buf)
{
	struct kfab_pull *pull;

	lockdep_assert_held(&rxc->lock);
	pull = kzalloc(sizeof(*pull), GFP_KERNEL_ACCOUNT);
	if (!pull)
		return NULL;
	kref_get(&target->ref);
	pull->target = target;
	pull->msg = *msg;
	pull->src = kfab_av_index_of(rxc->av, &msg->src);
	refcount_inc(&recv->users);
	pull->recv = recv;
	pull->at = at;
	pull->len = n;
	pull->context = context;
	pull->flags = flags;
	pull->buf = buf;
	pull->remote = remote;
	return pull;
}

/*
 * A receive of its own over the next @n bytes of @iter, pinned (and
 * counted on @pins, its endpoint's, if any).
 */
static struct kfab_recv *
kfab_recv_pin_next(struct iov_iter *iter, size_t n, struct kfab_pin_stats *pins)
{
	struct iov_iter part = *iter;
	struct kfab_recv *recv;
	int rc;

	recv = kzalloc(sizeof(*recv), GFP_KERNEL_ACCOUNT);
	if (!recv)
		return ERR_PTR(-ENOMEM);
	refcount_set(&recv->users, 1);
	iov_iter_truncate(&part, n);
	rc = kfab_buf_get(&recv->buf, &part, true, pins);
	if (rc) {
		kfab_recv_put(recv);
		return ERR_PTR(rc);
	}
	recv->len = n;
	iov_iter_advance(iter, n);
	return recv;
}

/*
 * A receive takes @n (> 0) bytes of @u, whose payload is at its sender:
 * pin them and queue a pull on @pulls, started once @rxc is unlocked.
 * Return: 0, or a negative errno for the receive (nothing queued).
 */
static int kfab_unexp_pull(struct kfab_rx_ctx *rxc, struct kfab_unexp *u,
			   struct kfab_req *req, size_t n, u32 flags, u64 buf,
			   struct list_head *pulls, struct kfab_pin_stats *pins)
{
	struct kfab_recv *recv = kfab_recv_pin_next(&req->iter, n, pins);
	struct kfab_pull *pull;

	if (IS_ERR(recv))
		return PTR_ERR(recv);
	pull = kfab_pull_new(rxc, u->target, &u->msg, u->remote, recv, 0, n,
			     req->context, flags, buf);
	kfab_recv_put(recv);
	if (!pull)
		return -ENOMEM;
	u->remote = NULL;
	list_add_tail(&pull->link, pulls);
	return 0;
}

static void kfab_pulls_start(struct list_head *pulls)
{
	struct kfab_pull *pull, *next;

	list_for_each_entry_safe(pull, next, pulls, link) {
		list_del_init(&pull->link);
		kfab_pull_start(pull);
	}
}

/* ---- buffered receives of messages from other nodes ---- */

/*
 * A message from another node whose payload came with it (@u->kbuf), on
 * its unexpected list, with a slot taken (@u->slot): into the slot,
 * noticed as a local one is.  The bytes past the slot stay in @kbuf for
 * the claim; a message that fits needs @kbuf no more.  It keeps @remote
 * (its peer's credit) until it is claimed or discarded.
 */
static void kfab_unexp_remote_to_slot(struct kfab_rx_ctx *rxc,
				      struct kfab_unexp *u)
{
	lockdep_assert_held(&rxc->lock);
	if (u->msg.len <= u->slot.len) {
		kvfree(u->kbuf);
		u->kbuf = NULL;
	}
	list_move_tail(&u->link, &rxc->claimed);
	u->claim_context = u->slot.token;
	kfab_complete_buffered(rxc, u);
}

/* @n bytes of kernel memory as a receive's pages, for a pull. */
static struct kfab_recv *kfab_recv_bounce(void *bounce, size_t n)
{
	unsigned int i, nr = DIV_ROUND_UP(n, PAGE_SIZE);
	struct kfab_recv *recv;

	recv = kzalloc(sizeof(*recv), GFP_KERNEL_ACCOUNT);
	if (!recv)
		return NULL;
	refcount_set(&recv->users, 1);
	recv->buf.bv = recv->buf.inline_bv;
	if (nr > KFAB_BUF_INLINE_BV) {
		recv->buf.bv = kvcalloc(nr, sizeof(*recv->buf.bv),
					GFP_KERNEL_ACCOUNT);
		if (!recv->buf.bv) {
			kfree(recv);
			return NULL;
		}
	}
	for (i = 0; i < nr; i++) {
		size_t len = min_t(size_t, n - i * PAGE_SIZE, PAGE_SIZE);

		recv->buf.bv[i] = (struct bio_vec){
			.bv_page = vmalloc_to_page(bounce + i * PAGE_SIZE),
			.bv_len = len,
		};
	}
	recv->buf.nr_bv = nr;
	recv->buf.len = n;
	recv->len = n;
	return recv;
}

/*
 * A rendezvous message from another node (payload at its sender), on its
 * unexpected list, with a slot taken: its first bytes are pulled from the
 * sender into a bounce buffer, and kfab_pull_complete() puts them in the
 * slot and notices the message.  Meanwhile it stays on its list, where a
 * posted receive may still take it (the slot's token then goes stale and
 * the bytes are dropped).  The pull holds a copy of the origin that owes
 * the sender nothing (kfab_remote_dup()).  Return: 0 with the pull on
 * @pulls, or -ENOMEM.
 */
static int kfab_unexp_remote_prefetch(struct kfab_rx_ctx *rxc,
				      struct kfab_unexp *u,
				      struct list_head *pulls)
{
	size_t n = min_t(size_t, u->msg.len, kfab_bufrecv_limit(rxc));
	struct kfab_recv *recv = NULL;
	struct kfab_pull *pull = NULL;
	void *bounce;

	lockdep_assert_held(&rxc->lock);
	bounce = __vmalloc(n, GFP_KERNEL_ACCOUNT);
	if (bounce)
		recv = kfab_recv_bounce(bounce, n);
	if (recv)
		pull = kfab_pull_new(rxc, u->target, &u->msg, NULL, recv, 0, n,
				     0, 0, 0);
	if (recv)
		kfab_recv_put(recv);
	/* Last, so that nothing needs the peer's lock to undo it. */
	if (pull)
		pull->remote = kfab_remote_dup(u->remote);
	if (pull && !pull->remote) {
		kfab_recv_put(pull->recv);
		kfab_ep_core_put(pull->target);	/* its endpoint holds one */
		kfree(pull);
		pull = NULL;
	}
	if (!pull) {
		vfree(bounce);
		return -ENOMEM;
	}
	pull->slot_token = u->slot.token;
	pull->bounce = bounce;
	list_add_tail(&pull->link, pulls);
	return 0;
}

/*
 * A receive context that buffers has free slots: messages from other
 * nodes that wait for one take them, oldest first of each kind; those
 * whose payload is at the sender get their first bytes pulled (@pulls,
 * started once @rxc is unlocked), and the ones behind them wait until
 * they are noticed, so that notices keep the order of arrival.
 */
static void kfab_bufrecv_refill(struct kfab_rx_ctx *rxc,
				struct list_head *pulls)
{
	struct kfab_unexp *u, *next;
	struct iov_iter it;
	struct kvec kv;
	size_t n;
	int kind;

	lockdep_assert_held(&rxc->lock);
	if (!kfab_bufrecv_limit(rxc))
		return;
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED; kind++) {
		list_for_each_entry_safe(u, next, &rxc->unexpected[kind],
					 link) {
			if (!u->remote)
				continue;
			if (u->slot.token)	/* its first bytes are coming */
				break;
			n = u->kbuf ? min_t(size_t, u->msg.len,
					    kfab_bufrecv_limit(rxc)) : 0;
			kv = (struct kvec){ .iov_base = u->kbuf, .iov_len = n };
			iov_iter_kvec(&it, ITER_SOURCE, &kv, 1, n);
			if (kfab_bufrecv_fill(rxc, &it, n, &u->slot))
				return;
			if (u->kbuf) {
				kfab_unexp_remote_to_slot(rxc, u);
				continue;
			}
			if (kfab_unexp_remote_prefetch(rxc, u, pulls)) {
				/* No memory now: the next refill tries again. */
				kfab_bufrecv_release(rxc, u->slot.token);
				u->slot.token = 0;
				return;
			}
			break;	/* the rest of this kind after it */
		}
	}
}

/* The message on an unexpected list whose first bytes go to @token's slot. */
static struct kfab_unexp *kfab_find_prefetched(struct kfab_rx_ctx *rxc,
					       u64 token, int kind)
{
	struct kfab_unexp *u;

	if (!kfab_bufrecv_valid(rxc, token))
		return NULL;
	list_for_each_entry(u, &rxc->unexpected[kind], link)
		if (u->slot.token == token)
			return u;
	return NULL;
}

/*
 * The first bytes of a buffered message from another node are here (or
 * failed, @status): into its slot and noticed, unless a receive took the
 * message meanwhile; then the messages behind it get slots (@pulls).  A
 * failure drops the message (its origin's session is over).  Return:
 * the message to finish, or NULL.
 */
static struct kfab_unexp *kfab_prefetch_done(struct kfab_rx_ctx *rxc,
					     struct kfab_pull *pull,
					     int status,
					     struct list_head *pulls)
{
	struct kfab_unexp *u;

	lockdep_assert_held(&rxc->lock);
	u = kfab_find_prefetched(rxc, pull->slot_token, pull->msg.kind);
	if (!u)
		return NULL;
	/*
	 * Its session is over.  No refill here: a pull that cannot start
	 * ends in this function, and the next one might too, recursing;
	 * the next arrival, claim or discard refills.
	 */
	if (status) {
		kfab_unexp_take(rxc, u);
		return u;
	}
	memcpy(u->slot.data, pull->bounce, pull->len);
	u->slot.len = pull->len;
	list_move_tail(&u->link, &rxc->claimed);
	u->claim_context = u->slot.token;
	kfab_complete_buffered(rxc, u);
	/* The messages behind it may go now. */
	kfab_bufrecv_refill(rxc, pulls);
	return NULL;
}

/**
 * kfab_pull_complete() - the end of a pull: its receive completes
 * @pull: the pull; its @remote is the caller's to release, the rest is
 *	let go here (the caller frees @pull)
 * @status: 0 once all its bytes arrived, or a negative errno
 */
void kfab_pull_complete(struct kfab_pull *pull, int status)
{
	struct kfab_ep_core *target = pull->target;
	struct kfab_rx_ctx *rxc = target->rxc;
	struct kfab_unexp *gone = NULL;
	LIST_HEAD(pulls);

	mutex_lock(&rxc->lock);
	if (pull->slot_token)
		gone = kfab_prefetch_done(rxc, pull, status, &pulls);
	else if (!target->dead)
		kfab_complete_recv(target->ep, &(struct kfab_recv_end){
			.kind = pull->msg.kind,
			.context = pull->context,
			.flags = pull->flags,
			.buf = pull->buf,
			.len = pull->len,
			.msg_len = pull->msg.len,
			.msg = &pull->msg,
			.src = pull->src,
			.status = status,
			/* A receive without pages: its bytes go this way. */
			.payload = pull->bounce && !status ? pull->bounce :
							     NULL,
		});
	mutex_unlock(&rxc->lock);
	kfab_pulls_start(&pulls);
	if (gone)
		kfab_unexp_finish(gone, status);
	kfab_recv_put(pull->recv);
	vfree(pull->bounce);
	kfab_ep_core_put(target);
}

/*
 * A pull for a receive that pinned nothing (kfab_recv_skips_pin()): its @n
 * bytes, at most KFAB_CQ_PAYLOAD_MAX, land in a bounce buffer and go to
 * the receive's completion (kfab_pull_complete()), as a local message's
 * would.  Return: the pull, or NULL for no memory.
 */
static struct kfab_pull *kfab_pull_new_bounced(struct kfab_rx_ctx *rxc,
					       struct kfab_ep_core *target,
					       const struct kfab_msg *msg,
					       struct kfab_remote *remote,
					       size_t n, u64 context,
					       u32 flags, u64 buf)
{
	struct kfab_pull *pull = NULL;
	struct kfab_recv *bounced;
	void *bounce;

	bounce = __vmalloc(n, GFP_KERNEL_ACCOUNT);
	if (!bounce)
		return NULL;
	bounced = kfab_recv_bounce(bounce, n);
	if (bounced) {
		pull = kfab_pull_new(rxc, target, msg, remote, bounced, 0, n,
				     context, flags, buf);
		kfab_recv_put(bounced);
	}
	if (!pull) {
		vfree(bounce);
		return NULL;
	}
	pull->bounce = bounce;
	return pull;
}

/*
 * A remote message with its payload at the sender reaches a posted
 * receive: it takes what fits, as kfab_recv_deliver() would.  Under the
 * lock; the receive is put by the caller when *@done.
 */
static void kfab_recv_take_remote(struct kfab_rx_ctx *rxc,
				  struct kfab_ep_core *target,
				  struct kfab_recv *recv,
				  const struct kfab_msg *msg, u64 from,
				  struct kfab_remote *remote, bool *done,
				  struct kfab_arrival *out)
{
	size_t at = recv->used, n = min(msg->len, recv->len - at);
	u32 flags;

	*done = kfab_recv_take(recv, n);
	flags = *done ? recv->flags : recv->flags & ~KFAB_SQE_MULTI_RECV;
	if (*done && (recv->flags & KFAB_SQE_MULTI_RECV))
		list_del(&recv->link);
	if (n && recv->unpinned)
		out->pull = kfab_pull_new_bounced(rxc, target, msg, remote, n,
						  recv->context, flags,
						  recv->base + at);
	else if (n)
		out->pull = kfab_pull_new(rxc, target, msg, remote, recv, at,
					  n, recv->context, flags,
					  recv->base + at);
	else
		out->pull = NULL;
	if (out->pull) {
		out->told = false;
		return;
	}
	/* Nothing to pull (an empty buffer), or no memory for it. */
	out->status = n ? -ENOMEM : 0;
	kfab_complete_recv(target->ep, &(struct kfab_recv_end){
		.kind = msg->kind,
		.context = recv->context,
		.flags = flags,
		.buf = recv->base + at,
		.msg_len = msg->len,
		.msg = msg,
		.src = from,
		.status = out->status,
	});
}

/**
 * kfab_msg_arrive() - a message from another node reached its endpoint
 * @target: the endpoint (a reference the caller keeps)
 * @msg: the message
 * @kbuf: its payload (kvmalloc'd, @msg->len bytes), or NULL when it is at
 *	the sender (@remote->rts); taken here either way
 * @remote: its origin
 * @out: what happened
 *
 * Matched as a local message would be; unmatched, it waits without the
 * receive context's budget (its peer's credit bounds it).  @remote stays
 * the caller's when the message went nowhere (delivered or failed: the
 * caller releases it with @out->status); else the message or the pull
 * owns it, and *@out says whether the sender may have its RESULT now.
 */
void kfab_msg_arrive(struct kfab_ep_core *target, const struct kfab_msg *msg,
		     void *kbuf, struct kfab_remote *remote,
		     struct kfab_arrival *out)
{
	struct kfab_rx_ctx *rxc = target->rxc;
	struct kfab_recv *recv;
	struct kfab_unexp *u;
	struct iov_iter it;
	struct kvec kv;
	bool done = false;
	LIST_HEAD(pulls);
	u64 from;

	*out = (struct kfab_arrival){ .told = true, .kept = false };
	mutex_lock(&rxc->lock);
	out->status = -EHOSTUNREACH;
	if (target->dead)
		goto out_unlock;
	from = kfab_av_index_of(rxc->av, &msg->src);
	recv = kfab_match_recv(rxc, msg, from);
	if (recv && remote->rts) {
		kfab_recv_take_remote(rxc, target, recv, msg, from, remote,
				      &done, out);
		out->kept = !!out->pull;
	} else if (recv) {
		kv = (struct kvec){ .iov_base = kbuf, .iov_len = msg->len };
		iov_iter_kvec(&it, ITER_SOURCE, &kv, 1, msg->len);
		out->status = kfab_recv_deliver(rxc, target, recv, msg, from,
						&it, &done);
	} else {
		out->status = -ENOMEM;
		u = kfab_unexp_new(target, msg);
		if (!u)
			goto out_unlock;
		u->kbuf = kbuf;
		kbuf = NULL;
		u->remote = remote;
		kfab_unexp_hold(rxc, u);
		out->status = 0;
		out->kept = true;
		/* FI_DELIVERY_COMPLETE, or a pull: the receive tells it. */
		out->told = !remote->rts &&
			    !(msg->flags & KFAB_SQE_DELIVERY_COMPLETE);
		remote->told = out->told;
		/* A receiver that buffers reads it in a slot, if one is free. */
		kfab_bufrecv_refill(rxc, &pulls);
	}
out_unlock:
	mutex_unlock(&rxc->lock);
	kfab_pulls_start(&pulls);
	if (done)
		kfab_recv_put(recv);
	kvfree(kbuf);
}

/**
 * kfab_msg_slot_reserve() - a slot to read a message from another node
 *	into, straight from the socket
 * @target: the endpoint it was sent to (a reference the caller keeps)
 * @msg: the message: an eager one, its payload still in the socket
 * @slot: out: the slot (kfab_bufrecv_reserve())
 *
 * Only where the message would end in a slot anyway, so that reading it
 * there saves the copy out of a kernel buffer: the receive context
 * buffers, the payload fits a slot, no receive of its kind is posted and
 * no message of its kind waits ahead of it (which would take the slot
 * first, kfab_bufrecv_refill()), and a slot is free.  The caller then
 * writes @msg->len bytes at @slot->data and calls kfab_msg_arrive_slot(),
 * or gives the slot back with kfab_msg_slot_cancel().
 *
 * Return: whether @slot was taken.
 */
bool kfab_msg_slot_reserve(struct kfab_ep_core *target,
			   const struct kfab_msg *msg,
			   struct kfab_bufrecv_slot *slot)
{
	struct kfab_rx_ctx *rxc = target->rxc;
	bool taken;

	/* Set before the endpoint was enabled, never changed: no lock. */
	if (!msg->len || !READ_ONCE(rxc->bufrecv))
		return false;
	mutex_lock(&rxc->lock);
	taken = !target->dead && msg->len <= kfab_bufrecv_limit(rxc) &&
		list_empty(&rxc->posted[msg->kind]) &&
		list_empty(&rxc->unexpected[msg->kind]) &&
		!kfab_bufrecv_reserve(rxc, msg->len, slot);
	mutex_unlock(&rxc->lock);
	return taken;
}

/* The payload could not be read: the slot is free again. */
void kfab_msg_slot_cancel(struct kfab_ep_core *target,
			  const struct kfab_bufrecv_slot *slot)
{
	struct kfab_rx_ctx *rxc = target->rxc;

	mutex_lock(&rxc->lock);
	kfab_bufrecv_release(rxc, slot->token);
	mutex_unlock(&rxc->lock);
}

/**
 * kfab_msg_arrive_slot() - kfab_msg_arrive() of a message whose payload
 *	was read into a slot (kfab_msg_slot_reserve())
 * @target: the endpoint (a reference the caller keeps)
 * @msg: the message
 * @slot: the slot, @msg->len bytes written
 * @remote: its origin
 * @out: what happened, as kfab_msg_arrive() says
 *
 * Noticed where it lies, as kfab_bufrecv_refill() would have noticed it
 * after copying it there; a receive posted while it was read takes it
 * instead (copied from the slot, which is given back), and so does the
 * end of its endpoint (-EHOSTUNREACH).
 */
void kfab_msg_arrive_slot(struct kfab_ep_core *target,
			  const struct kfab_msg *msg,
			  const struct kfab_bufrecv_slot *slot,
			  struct kfab_remote *remote,
			  struct kfab_arrival *out)
{
	struct kfab_rx_ctx *rxc = target->rxc;
	struct kfab_recv *recv = NULL;
	struct kfab_unexp *u;
	struct iov_iter it;
	struct kvec kv;
	bool done = false;
	u64 from;

	*out = (struct kfab_arrival){ .told = true, .kept = false };
	mutex_lock(&rxc->lock);
	out->status = -EHOSTUNREACH;
	if (target->dead)
		goto out_release;
	from = kfab_av_index_of(rxc->av, &msg->src);
	recv = kfab_match_recv(rxc, msg, from);
	if (recv) {
		kv = (struct kvec){ .iov_base = slot->data,
				    .iov_len = msg->len };
		iov_iter_kvec(&it, ITER_SOURCE, &kv, 1, msg->len);
		out->status = kfab_recv_deliver(rxc, target, recv, msg, from,
						&it, &done);
		goto out_release;
	}
	out->status = -ENOMEM;
	u = kfab_unexp_new(target, msg);
	if (!u)
		goto out_release;
	u->slot = *slot;
	u->remote = remote;
	kfab_unexp_hold(rxc, u);
	out->status = 0;
	out->kept = true;
	/* FI_DELIVERY_COMPLETE: the notice tells it (as for a refill). */
	out->told = !(msg->flags & KFAB_SQE_DELIVERY_COMPLETE);
	remote->told = out->told;
	kfab_unexp_remote_to_slot(rxc, u);
	mutex_unlock(&rxc->lock);
	return;

out_release:
	kfab_bufrecv_release(rxc, slot->token);
	mutex_unlock(&rxc->lock);
	if (done)
		kfab_recv_put(recv);
}

/* ---- sends ---- */

/* The CQ of @ep's direction @dir is too full to take more for now. */
static bool kfab_ep_cq_busy(struct kfab_ep *ep, enum kfab_dir dir)
{
	return ep->cq[dir] && kfab_cq_nearly_full(ep->cq[dir]);
}

/*
 * The sender's index in its receiver's AV (for directed receives and
 * FI_SOURCE), under the receive context's lock; a doorbell's sends to one
 * endpoint look it up once while the AV stays as it was.
 */
static u64 kfab_send_from(struct kfab_dest *d, struct kfab_rx_ctx *rxc,
			  const struct kfab_addr *src)
{
	u64 gen;

	lockdep_assert_held(&rxc->lock);
	if (!d)
		return kfab_av_index_of(rxc->av, src);
	gen = kfab_av_generation(rxc->av);
	if (d->rx_av != rxc->av || d->rx_gen != gen) {
		d->from = kfab_av_index_of(rxc->av, src);
		d->rx_av = rxc->av;
		d->rx_gen = gen;
		d->as_memo = false;
	}
	return d->from;
}

/*
 * Hand a message to the endpoint it is for: matched, eager or
 * rendezvous.  Return: 0 or a negative errno for the send's completion,
 * -EAGAIN when it must wait in the sender's ring; *@later: it completes
 * later (rendezvous).
 */
static int kfab_send_to(struct kfab_ep *ep, struct kfab_ep_core *target,
			const struct kfab_msg *msg, struct kfab_req *req,
			bool *later)
{
	struct kfab_rx_ctx *rxc = target->rxc;
	struct kfab_recv *recv;
	bool done = false;
	u64 from;
	int rc;

	*later = false;
	mutex_lock(&rxc->lock);
	rc = -EHOSTUNREACH;
	if (target->dead)
		goto out_unlock;
	/* No completion is dropped: the message waits while the CQ is full. */
	rc = -EAGAIN;
	if (kfab_ep_cq_busy(target->ep, KFAB_RX))
		goto out_unlock;
	from = kfab_send_from(ep->dest, rxc, &msg->src);
	recv = kfab_match_recv(rxc, msg, from);
	if (recv) {
		rc = kfab_recv_deliver(rxc, target, recv, msg, from,
				       &req->iter, &done);
		if (done && kfab_recv_put_locked(rxc, recv))
			done = false;
		mutex_unlock(&rxc->lock);
		if (done)
			kfab_recv_put_cached(rxc, recv);
		return rc;
	}
	/* A receiver that buffers (FI_BUFFERED_RECV) reads it in place. */
	if (kfab_bufrecv_limit(rxc)) {
		rc = kfab_unexp_buffered(rxc, target, msg, &req->iter,
					 ep->core, req->context, ep->pins,
					 later);
	/* A large message, or one to be delivered first, stays with us. */
	} else if (msg->len > KFAB_MSG_EAGER_MAX ||
	    (msg->flags & KFAB_SQE_DELIVERY_COMPLETE)) {
		rc = kfab_unexp_rendezvous(rxc, target, msg, &req->iter,
					   ep->core, req->context, ep->pins);
		*later = !rc;
	} else {
		rc = kfab_unexp_eager(rxc, target, msg, &req->iter);
	}
out_unlock:
	mutex_unlock(&rxc->lock);
	return rc;
}

/*
 * fi_rx_addr(): receive context @index of the scalable endpoint @dst names,
 * a number of @dst's block.  An address that is no block's base is -EINVAL.
 */
static int kfab_addr_rx_ctx(struct kfab_addr *dst, u16 index)
{
	u64 base = be64_to_cpu(dst->ep);

	if (!(base & KFAB_EP_BLOCK_BIT) || (base & (KFAB_EP_BLOCK_MAX - 1)))
		return -EINVAL;
	dst->ep = cpu_to_be64(base | index);
	return 0;
}

/*
 * KFAB_SQE_PROBE: is anybody at @dst?  Nothing moves (a connection's
 * liveness).  @rc is what resolving @dst gave.  Another
 * node's address is asked over the wire (KFAB_WIRE_PROBE), and the probe
 * completes with its answer; a sender that cannot ask there (no node
 * address of its own) gets -EOPNOTSUPP, "cannot tell", never "gone".
 */
static int kfab_msg_probe(struct kfab_ep *ep, struct kfab_req *req, int kind,
			  const struct kfab_addr *dst, int rc)
{
	struct kfab_msg msg = {
		.kind = kind,
		.src = ep->core->addr,
		.flags = req->flags,
	};

	if (rc == -EREMOTE) {
		rc = kfab_peer_send(ep, dst, &msg, req);
		if (rc == -EAGAIN || !rc)
			return rc;
		if (rc == -EHOSTUNREACH)
			rc = -EOPNOTSUPP;
	}
	kfab_complete_send(ep, kind, req->context, req->flags, rc);
	return 0;
}

/* Whether @d is where a send to @addr and @rx_index goes, AV at @gen. */
static bool kfab_dest_is(const struct kfab_dest *d, u64 addr, u16 rx_index,
			 u64 gen)
{
	return d->target && d->addr == addr && d->rx_index == rx_index &&
	       d->av_gen == gen;
}

/*
 * What the last doorbell's destination was, when @addr and @rx_index are
 * still it: the sender's AV is at the same generation (under @sq_lock).
 */
static bool kfab_memo_dst(const struct kfab_dest_memo *m, u64 addr,
			  u16 rx_index, u64 gen, struct kfab_addr *dst)
{
	if (!m->valid || m->addr != addr || m->rx_index != rx_index ||
	    m->av_gen != gen)
		return false;
	*dst = m->dst;
	return true;
}

/* The memo's endpoint with a reference, or NULL: look it up anew. */
static struct kfab_ep_core *kfab_memo_target(const struct kfab_dest_memo *m)
{
	return m->core ? kfab_ep_core_reget(m->core, m->epoch) : NULL;
}

/*
 * Where a send goes: *@dst, and with 0 the endpoint of this machine
 * (*@target, a reference) that has it.  A doorbell's sends to one address
 * resolve it once (struct kfab_dest): a later one borrows the doorbell's
 * reference (*@borrowed) while the sender's AV stays as it was.  The
 * first takes what the AVs said from the last doorbell's memo while their
 * generations are the same (struct kfab_dest_memo), and the endpoint
 * while none has left kfab_eps since it was looked up.
 */
static int kfab_msg_resolve(struct kfab_ep *ep, u64 addr, u16 rx_index,
			    struct kfab_addr *dst,
			    struct kfab_ep_core **target, bool *borrowed)
{
	struct kfab_dest *d = ep->dest;
	u64 gen = kfab_av_generation(ep->av);
	u64 epoch = 0;
	bool memo;
	int rc;

	*borrowed = false;
	if (d && kfab_dest_is(d, addr, rx_index, gen)) {
		*dst = d->dst;
		*target = d->target;
		*borrowed = true;
		return 0;
	}
	memo = d && kfab_memo_dst(&ep->memo, addr, rx_index, gen, dst);
	if (memo) {
		rc = 0;
	} else {
		rc = kfab_av_addr_of(ep->av, addr, dst);
		if (!rc && rx_index)
			rc = kfab_addr_rx_ctx(dst, rx_index);
	}
	if (!rc) {
		*target = memo ? kfab_memo_target(&ep->memo) : NULL;
		if (*target) {
			epoch = ep->memo.epoch;
		} else {
			epoch = kfab_ep_core_epoch();
			rc = kfab_node_resolve(ep->core->net, dst, target);
		}
	}
	if (rc || !d)
		return rc;
	/* Keep it for the next sends: the doorbell's reference. */
	if (d->target)
		kfab_ep_core_put(d->target);
	/* Field by field: a whole-struct store clears 120 bytes each time. */
	d->target = *target;
	d->addr = addr;
	d->rx_index = rx_index;
	d->dst = *dst;
	d->av_gen = gen;
	d->rx_av = NULL;
	d->not_local = false;
	d->as_memo = false;
	d->epoch = epoch;
	/*
	 * The same endpoint, so the same receive context and AV: its index
	 * of us holds while that AV's generation does (kfab_send_from()).
	 */
	if (memo && ep->memo.rx_av && (*target)->num == ep->memo.num) {
		d->rx_av = ep->memo.rx_av;
		d->rx_gen = ep->memo.rx_gen;
		d->from = ep->memo.from;
		/* Looked up anew (a core left since): keep it with its count. */
		d->as_memo = !ep->memo.core || epoch == ep->memo.epoch;
	}
	*borrowed = true;
	return 0;
}

static int kfab_msg_send(struct kfab_ep *ep, struct kfab_req *req, int kind)
{
	struct kfab_msg msg = {
		.kind = kind,
		.src = ep->core->addr,
		.tag = req->tag,
		.data = req->data,
		.flags = req->flags,
		.len = iov_iter_count(&req->iter),
		/* The sender's own memory: a kernel caller's is not pinned. */
		.pin_cache = ep->kops ? NULL : &ep->obj.ctx->pin_cache,
	};
	struct kfab_ep_core *target = NULL;
	struct kfab_addr dst;
	bool later, borrowed;
	int rc;

	/* FI_FENCE: every earlier send completes first. */
	if ((req->flags & KFAB_SQE_FENCE) &&
	    atomic_read(&ep->core->tx_waiting))
		return -EAGAIN;
	/* No completion is dropped: wait while our CQ cannot take it. */
	if (kfab_ep_cq_busy(ep, KFAB_TX))
		return -EAGAIN;

	rc = kfab_msg_resolve(ep, req->addr, req->rx_index, &dst, &target,
			      &borrowed);
	if (req->flags & KFAB_SQE_PROBE) {
		if (!rc && !borrowed)
			kfab_ep_core_put(target);
		return kfab_msg_probe(ep, req, kind, &dst, rc);
	}
	if (!rc) {
		rc = kfab_send_to(ep, target, &msg, req, &later);
		if (!borrowed)
			kfab_ep_core_put(target);
	} else if (rc == -EREMOTE) {
		/* Another node's: its peer completes the send. */
		rc = kfab_peer_send(ep, &dst, &msg, req);
		later = !rc;
	}
	if (rc == -EAGAIN)
		return rc;
	kfab_ep_count_send(ep, msg.len);
	if (rc || !later)
		kfab_complete_send(ep, kind, req->context, req->flags, rc);
	return 0;
}

/* ---- receives ---- */

/* The address of a request's first buffer, reported in completions. */
static u64 kfab_req_base(const struct kfab_req *req)
{
	const struct iov_iter *it = &req->iter;

	if (!iov_iter_count(it))
		return 0;
	if (iter_is_ubuf(it))
		return (u64)(__force uintptr_t)it->ubuf + it->iov_offset;
	if (iter_is_iovec(it))
		return (u64)(__force uintptr_t)kfab_iter_iov(it)[0].iov_base +
		       it->iov_offset;
	if (iov_iter_is_kvec(it))
		return (u64)(uintptr_t)it->kvec[0].iov_base + it->iov_offset;
	return 0;
}

/* A receive's source: -EINVAL for an index its AV does not hold. */
static int kfab_recv_check_src(struct kfab_rx_ctx *rxc, u64 addr)
{
	struct kfab_addr a;

	if (addr == KFAB_CQ_ADDR_NOTAVAIL)
		return 0;
	if (!rxc->av)
		return -EINVAL;
	return kfab_av_addr_of(rxc->av, addr, &a);
}

/*
 * FI_PEEK: report the oldest matching message; with FI_CLAIM set it
 * aside for the claimer, with FI_DISCARD drop it.  Return: the message to
 * finish once @rxc is unlocked, or NULL.
 */
static struct kfab_unexp *kfab_msg_peek(struct kfab_rx_ctx *rxc,
					struct kfab_req *req, int kind)
{
	bool discard = req->flags & KFAB_SQE_DISCARD;
	struct kfab_unexp *u;
	size_t n;

	u = kfab_match_unexp(rxc, kind, req->addr, req->tag, req->ignore);
	if (!u) {
		kfab_complete_recv_err(kfab_rx_first_ep(rxc), kind, req,
				       -ENOMSG);
		return NULL;
	}
	n = discard ? 0 : u->msg.len;
	kfab_complete_unexp(rxc, u, req, req->flags, 0, n, n, 0);
	if (req->flags & KFAB_SQE_CLAIM) {
		/* Set aside: no other receive sees it now. */
		list_move_tail(&u->link, &rxc->claimed);
		u->claim_context = req->context;
		return NULL;
	}
	if (!discard)
		return NULL;
	kfab_unexp_take(rxc, u);
	return u;
}

/*
 * FI_CLAIM: take the message set aside for this context, into the
 * receive's buffers or (FI_DISCARD) nowhere; one still at its sender on
 * another node is pulled (@pulls).  Return: as kfab_msg_peek().
 */
static struct kfab_unexp *kfab_msg_claim(struct kfab_rx_ctx *rxc,
					 struct kfab_req *req, int kind,
					 struct list_head *pulls)
{
	struct kfab_unexp *u = NULL, *c;
	u64 base;
	size_t n;
	int rc;

	list_for_each_entry(c, &rxc->claimed, link)
		if (c->claim_context == req->context && c->msg.kind == kind &&
		    !c->slot.token) {
			u = c;
			break;
		}
	if (!u) {
		kfab_complete_recv_err(kfab_rx_first_ep(rxc), kind, req,
				       -ENOMSG);
		return NULL;
	}
	kfab_unexp_take(rxc, u);
	if (req->flags & KFAB_SQE_DISCARD) {
		kfab_complete_unexp(rxc, u, req, req->flags, 0, 0, 0, 0);
		return u;
	}
	/* The buffer's address before the copy advances the iter. */
	base = kfab_req_base(req);
	n = min(iov_iter_count(&req->iter), u->msg.len);
	if (n && kfab_unexp_at_sender(u)) {
		rc = kfab_unexp_pull(rxc, u, req, n, req->flags, base, pulls,
				     NULL);
		if (rc)
			kfab_complete_unexp(rxc, u, req, req->flags, base, 0, 0,
					    rc);
		return u;
	}
	rc = kfab_unexp_copy_out(u, &req->iter, n);
	kfab_complete_unexp(rxc, u, req, req->flags, base, n, u->msg.len, rc);
	return u;
}

/* The buffered message @token names, on @claimed; NULL for none. */
static struct kfab_unexp *kfab_find_buffered(struct kfab_rx_ctx *rxc,
					     u64 token, int kind)
{
	struct kfab_unexp *u;

	if (!token || !kfab_bufrecv_valid(rxc, token))
		return NULL;
	list_for_each_entry(u, &rxc->claimed, link)
		if (u->slot.token == token)
			return u->msg.kind == kind ? u : NULL;
	return NULL;
}

/*
 * FI_CLAIM of a buffered message (KFAB_SQE_BUFFERED, the token in @data):
 * copy it whole into the receive's buffers, its start from the slot and
 * the rest from its sender's pages; or with FI_DISCARD drop it.  A token
 * that names no message (stale, made up, of the other kind) is -EINVAL.
 * Return: the message to finish once @rxc is unlocked, or NULL.
 */
static struct kfab_unexp *kfab_msg_claim_buffered(struct kfab_rx_ctx *rxc,
						  struct kfab_req *req,
						  int kind,
						  struct list_head *pulls)
{
	struct kfab_unexp *u = kfab_find_buffered(rxc, req->data, kind);
	size_t n, first;
	u64 base;
	int rc;

	if (!u) {
		kfab_complete_recv_err(kfab_rx_first_ep(rxc), kind, req,
				       -EINVAL);
		return NULL;
	}
	if (req->flags & KFAB_SQE_DISCARD) {
		kfab_complete_unexp(rxc, u, req, req->flags, 0, 0, 0, 0);
		kfab_unexp_take(rxc, u);
		kfab_bufrecv_refill(rxc, pulls);
		return u;
	}
	base = kfab_req_base(req);
	n = min(iov_iter_count(&req->iter), u->msg.len);
	/* At its sender on another node: pulled whole into the buffers. */
	if (n > u->slot.len && kfab_unexp_at_sender(u)) {
		rc = kfab_unexp_pull(rxc, u, req, n, req->flags, base, pulls,
				     NULL);
		if (rc)
			kfab_complete_unexp(rxc, u, req, req->flags, base, 0, 0,
					    rc);
		kfab_unexp_take(rxc, u);
		kfab_bufrecv_refill(rxc, pulls);
		return u;
	}
	first = min(n, u->slot.len);
	rc = copy_to_iter(u->slot.data, first, &req->iter) == first ?
	     0 : -EFAULT;
	/* The rest: at the local sender, or here (from another node). */
	if (!rc && n > first && u->kbuf)
		rc = copy_to_iter(u->kbuf + first, n - first, &req->iter) ==
		     n - first ? 0 : -EFAULT;
	else if (!rc && n > first)
		rc = kfab_buf_copy_out(&u->buf, 0, &req->iter, n - first);
	kfab_complete_unexp(rxc, u, req, req->flags, base, n, u->msg.len, rc);
	kfab_unexp_take(rxc, u);
	kfab_bufrecv_refill(rxc, pulls);
	return u;
}

/* FI_PEEK, with FI_CLAIM or FI_DISCARD; FI_CLAIM alone, or with FI_DISCARD */
static int kfab_msg_peek_claim(struct kfab_rx_ctx *rxc, struct kfab_req *req,
			       int kind)
{
	struct kfab_unexp *u = NULL;
	LIST_HEAD(pulls);

	mutex_lock(&rxc->lock);
	if (kfab_recv_check_src(rxc, req->addr))
		kfab_complete_recv_err(kfab_rx_first_ep(rxc), kind, req,
				       -EINVAL);
	else if (req->flags & KFAB_SQE_BUFFERED)
		u = kfab_msg_claim_buffered(rxc, req, kind, &pulls);
	else if (req->flags & KFAB_SQE_PEEK)
		u = kfab_msg_peek(rxc, req, kind);
	else
		u = kfab_msg_claim(rxc, req, kind, &pulls);
	mutex_unlock(&rxc->lock);
	kfab_pulls_start(&pulls);
	/* Taken (discarded or delivered): the sender's send is done. */
	if (u)
		kfab_unexp_finish(u, 0);
	return 0;
}

/* Whether @ep's receive completions can carry a small message's bytes. */
static bool kfab_ep_rx_payload(const struct kfab_ep *ep)
{
	const struct kfab_cq *cq = ep->cq[KFAB_RX];

	return cq && cq->payload && !ep->kops;
}

/*
 * A receive that needs no pinned pages: a small one, in one buffer of the
 * poster's own memory, whose completion will carry the message: a send
 * copies it into the completion and the library copies it out when it
 * reads the CQ.  On an endpoint, its receive CQ must take payloads; on an
 * SRX (@owner NULL), whose completions go to whichever endpoint a message
 * reaches, every endpoint that joined must, which @rxc->pins_small says.
 */
static bool kfab_recv_skips_pin(struct kfab_rx_ctx *rxc, struct kfab_ep *owner,
				const struct kfab_req *req, size_t len)
{
	const struct iov_iter *it = &req->iter;

	if (owner ? !kfab_ep_rx_payload(owner) : rxc->pins_small)
		return false;
	return len && len <= KFAB_CQ_PAYLOAD_MAX &&
	       (req->flags & KFAB_SQE_COMPLETION) &&
	       !(req->flags & KFAB_SQE_MULTI_RECV) &&
	       (iter_is_ubuf(it) || (iter_is_iovec(it) && it->nr_segs == 1));
}

/**
 * kfab_rx_ctx_pin_small() - an SRX's endpoint joins that needs pinned receives
 * @rxc: the SRX's receive context, locked
 * @ep: the endpoint joining, bound to the SRX
 *
 * An endpoint whose receive completions cannot carry a message (no receive
 * CQ, or one without payload slots) could be reached by a message that
 * matched a receive posted unpinned: pin the receives posted so far in the
 * caller's memory (the file's, like every post), and every later one.
 *
 * Return: 0, or the pin's error (the receives pinned so far stay pinned).
 */
int kfab_rx_ctx_pin_small(struct kfab_rx_ctx *rxc, struct kfab_ep *ep)
{
	struct kfab_recv *recv;
	struct iov_iter iter;
	int kind, rc;

	lockdep_assert_held(&rxc->lock);
	if (rxc->pins_small || kfab_ep_rx_payload(ep))
		return 0;
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED; kind++) {
		list_for_each_entry(recv, &rxc->posted[kind], link) {
			if (!recv->unpinned)
				continue;
			iov_iter_ubuf(&iter, ITER_DEST,
				      u64_to_user_ptr(recv->base), recv->len);
			rc = kfab_buf_get(&recv->buf, &iter, true, NULL);
			if (rc) {
				/* Unpinned holds nothing (kfab_recv_put_cached()). */
				kfab_buf_put(&recv->buf);
				recv->buf = (struct kfab_buf){};
				return rc;
			}
			recv->unpinned = false;
		}
	}
	rxc->pins_small = true;
	return 0;
}

/*
 * Post a receive on @rxc for the @len bytes of its buffers at @base that
 * waiting messages left, pinned so that a sender can copy into them from
 * its own context.
 */
static int kfab_recv_post(struct kfab_rx_ctx *rxc, struct kfab_ep *owner,
			  struct kfab_pin_cache *cache, struct kfab_req *req,
			  int kind, u64 base, size_t len)
{
	bool unpinned = kfab_recv_skips_pin(rxc, owner, req, len);
	struct kfab_recv *recv;
	int rc;

	recv = kfab_recv_alloc(rxc);
	if (!recv)
		return -ENOMEM;
	refcount_set(&recv->users, 1);
	if (!unpinned) {
		/* A large receive may stay pinned (pincache.c). */
		recv->buf.cache = cache;
		rc = kfab_buf_get(&recv->buf, &req->iter, true,
				  owner ? owner->pins : NULL);
		if (rc) {
			kfab_recv_put(recv);
			return rc;
		}
	}
	recv->context = req->context;
	recv->tag = req->tag;
	recv->ignore = req->ignore;
	recv->src = req->addr;
	recv->flags = req->flags;
	recv->base = base;
	recv->len = len;
	recv->min_free = req->flags & KFAB_SQE_MULTI_RECV ? req->data : 0;
	recv->unpinned = unpinned;
	list_add_tail(&recv->link, &rxc->posted[kind]);
	return 0;
}

/*
 * @owner: the endpoint posting on its own receive context, or NULL (SRX);
 * @cache: the posting file's kept pins, or NULL (kernel memory)
 */
static int kfab_msg_recv(struct kfab_rx_ctx *rxc, struct kfab_ep *owner,
			 struct kfab_pin_cache *cache, struct kfab_req *req,
			 int kind)
{
	size_t len = iov_iter_count(&req->iter), used = 0, n;
	bool multi = req->flags & KFAB_SQE_MULTI_RECV;
	u64 base = kfab_req_base(req);
	struct kfab_unexp *u;
	LIST_HEAD(taken);
	LIST_HEAD(pulls);
	bool done;
	u32 flags;
	int rc;

	if (owner && kfab_ep_cq_busy(owner, KFAB_RX))
		return -EAGAIN;
	if (req->flags & (KFAB_SQE_PEEK | KFAB_SQE_CLAIM))
		return kfab_msg_peek_claim(rxc, req, kind);

	mutex_lock(&rxc->lock);
	if (kfab_recv_check_src(rxc, req->addr)) {
		kfab_complete_recv_err(kfab_rx_first_ep(rxc), kind, req,
				       -EINVAL);
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
		n = min(len - used, u->msg.len);
		done = !multi ||
		       len - (used + n) < max_t(size_t, req->data, 1);
		flags = done ? req->flags : req->flags & ~KFAB_SQE_MULTI_RECV;
		if (n && kfab_unexp_at_sender(u)) {
			/* Its pull completes the receive when the data is in. */
			rc = kfab_unexp_pull(rxc, u, req, n, flags, base + used,
					     &pulls, owner ? owner->pins : NULL);
			if (rc)
				kfab_complete_unexp(rxc, u, req, flags,
						    base + used, 0, 0, rc);
		} else {
			rc = kfab_unexp_copy_out(u, &req->iter, n);
			kfab_complete_unexp(rxc, u, req, flags, base + used, n,
					    u->msg.len, rc);
		}
		used += n;
		list_add_tail(&u->link, &taken);
		if (done)
			goto out_unlock;
	}

	/* Under the lock, so no message slips past between look and post. */
	rc = kfab_recv_post(rxc, owner, cache, req, kind, base + used,
			    len - used);
	if (rc)
		kfab_complete_recv_err(kfab_rx_first_ep(rxc), kind, req, rc);
out_unlock:
	mutex_unlock(&rxc->lock);
	kfab_pulls_start(&pulls);
	kfab_unexp_finish_list(&taken, 0);
	return 0;
}

/* ---- requests ---- */

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
	/* A buffered message is claimed or discarded by its token. */
	if (f & KFAB_SQE_BUFFERED)
		return pcd == KFAB_SQE_CLAIM ||
		       pcd == (KFAB_SQE_CLAIM | KFAB_SQE_DISCARD);
	return !pcd || pcd == KFAB_SQE_PEEK || pcd == KFAB_SQE_CLAIM ||
	       pcd == (KFAB_SQE_PEEK | KFAB_SQE_CLAIM) ||
	       pcd == (KFAB_SQE_PEEK | KFAB_SQE_DISCARD) ||
	       pcd == (KFAB_SQE_CLAIM | KFAB_SQE_DISCARD);
}

/* A malformed request: an -EINVAL completion of its direction. */
static int kfab_msg_reject(struct kfab_ep *ep, const struct kfab_req *req)
{
	int kind = kfab_req_kind(req);

	if (kfab_req_is_send(req))
		kfab_complete_send(ep, kind, req->context, req->flags,
				   -EINVAL);
	else
		kfab_complete_recv_err(ep, kind, req, -EINVAL);
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
	return kfab_msg_recv(ep->core->rxc, ep,
			     ep->kops ? NULL : &ep->obj.ctx->pin_cache, req, kind);
}

static int kfab_msg_reject_srx(struct kfab_rx_ctx *rxc,
			       const struct kfab_req *req)
{
	mutex_lock(&rxc->lock);
	kfab_complete_recv_err(kfab_rx_first_ep(rxc), kfab_req_kind(req), req,
			       -EINVAL);
	mutex_unlock(&rxc->lock);
	return 0;
}

/*
 * Carry out a receive of a shared receive context's ring, in its file's
 * ioctl (a large buffer may stay pinned in the file's cache), as
 * kfab_msg_post(); a send, or a failure, completes with an error on the
 * endpoint that joined the context first.
 */
static int kfab_msg_post_srx(struct kfab_srx *srx, struct kfab_req *req)
{
	might_sleep();
	if (kfab_req_valid(req) && !kfab_req_is_send(req) &&
	    iov_iter_count(&req->iter) <= KFAB_MSG_MAX)
		return kfab_msg_recv(srx->rxc, NULL, &srx->obj.ctx->pin_cache,
				     req, kfab_req_kind(req));
	return kfab_msg_reject_srx(srx->rxc, req);
}

/* ---- the common case ---- */

/*
 * Most small messages are one case: an inline send to the doorbell's last
 * destination on this machine, taken by the first receive posted there, a
 * small one whose completion carries the message; and that receive,
 * posted while no message waits.  The fast path does only what that case
 * needs (no request, no iterator, no completion structure: a third of the
 * general path's instructions) and leaves the entry to the general path
 * the moment a condition fails, before it has changed anything, so both
 * give the same completions in the same order.  Documentation/bench.rst,
 * "The common case".
 */
static bool kfab_fast_path = true;
module_param_named(fast_path, kfab_fast_path, bool, 0644);
MODULE_PARM_DESC(fast_path,
		 "small messages' common case skips the general path (default: on)");

/* What a send on the fast path may ask for. */
#define KFAB_FAST_SEND_FLAGS	(KFAB_SQE_INLINE | KFAB_SQE_COMPLETION | \
				 KFAB_SQE_REMOTE_CQ_DATA)

/* A completion entry, each member written once. */
static void kfab_fast_entry(struct kfab_cq_entry *e, u64 context, u64 flags,
			    u64 len, u64 buf, u64 tag, u64 src)
{
	e->op_context = context;
	e->flags = flags;
	e->len = len;
	e->buf = buf;
	e->data = 0;
	e->tag = tag;
	e->src_addr = src;
	e->cookie = 0;
}

/* The sender's completion: the ring's fast post, or the general one. */
static void kfab_fast_complete_send(struct kfab_ep *ep, int kind,
				    const struct kfab_sqe *sqe)
{
	struct kfab_cq *cq = ep->cq[KFAB_TX];
	/* Every member set below: not zeroed first, once per message. */
	struct kfab_cq_entry e __uninitialized;
	bool overflowed;

	trace_kfab_complete(ep->core->num, KFAB_TX, sqe->context, 0, 0);
	if (!cq || !(sqe->flags & KFAB_SQE_COMPLETION))
		return;
	kfab_fast_entry(&e, sqe->context, KFAB_COMP_SEND | kfab_comp_kind(kind),
			0, 0, 0, 0);
	if (!kfab_cq_post_fast(cq, &e, NULL))
		kfab_cq_post_payload(cq, &e, NULL, &overflowed);
}

/*
 * @addr, not the doorbell's destination @d (or no longer: the AV is at
 * generation @gen now), resolved: true when it is an endpoint of this
 * machine, which then becomes @d.  An address found elsewhere (another
 * node's, or none) is remembered, so that its sends are not resolved
 * twice.
 */
static noinline bool kfab_fast_dest(struct kfab_ep *ep, struct kfab_dest *d,
				    u64 addr, u64 gen)
{
	struct kfab_ep_core *target;
	struct kfab_addr dst;
	bool borrowed;

	if (d->not_local && d->not_local_addr == addr &&
	    d->not_local_gen == gen)
		return false;
	if (!kfab_msg_resolve(ep, addr, 0, &dst, &target, &borrowed))
		return true;
	d->not_local = true;
	d->not_local_addr = addr;
	d->not_local_gen = gen;
	return false;
}

/*
 * An inline send whose receive is the first one posted.  Return: true
 * when it is done (delivered and completed); false when the general path
 * must take it (nothing done).
 */
static bool kfab_fast_send(struct kfab_ep *ep, const struct kfab_sqe *sqe,
			   int kind)
{
	struct kfab_dest *d = ep->dest;
	struct kfab_ep_core *target;
	/* Every member set before use: not zeroed first, once per message. */
	struct kfab_cq_entry e __uninitialized;
	struct kfab_rx_ctx *rxc;
	struct kfab_recv *recv;
	struct kfab_ep *rx;
	u64 from, gen;
	bool cached;

	if ((sqe->flags & ~KFAB_FAST_SEND_FLAGS) ||
	    !(sqe->flags & KFAB_SQE_INLINE) || sqe->iov_count ||
	    sqe->rx_index || sqe->__reserved2 ||
	    sqe->len > KFAB_CQ_PAYLOAD_MAX)
		return false;
	if (!d || ep->kops || ep->cntr[KFAB_TX] ||
	    kfab_ep_cq_busy(ep, KFAB_TX))
		return false;
	/* The doorbell's last destination, or resolved here to become it. */
	gen = kfab_av_generation(ep->av);
	if (!kfab_dest_is(d, sqe->addr, 0, gen) &&
	    !kfab_fast_dest(ep, d, sqe->addr, gen))
		return false;

	target = d->target;
	rxc = target->rxc;
	mutex_lock(&rxc->lock);
	rx = target->ep;
	if (target->dead || !rx || rx->kops || rx->cntr[KFAB_RX] ||
	    !rx->cq[KFAB_RX] || !rx->cq[KFAB_RX]->payload ||
	    kfab_ep_cq_busy(rx, KFAB_RX))
		goto general;
	recv = list_first_entry_or_null(&rxc->posted[kind], struct kfab_recv,
					link);
	if (!recv || !recv->unpinned || (recv->flags & KFAB_SQE_MULTI_RECV) ||
	    recv->used || recv->len < sqe->len)
		goto general;
	from = kfab_send_from(d, rxc, &ep->core->addr);
	if ((recv->src != KFAB_CQ_ADDR_NOTAVAIL && recv->src != from) ||
	    (kind == KFAB_KIND_TAGGED &&
	     !kfab_tag_match(recv->tag, recv->ignore, sqe->tag)))
		goto general;
	/* As kfab_recv_deliver() and kfab_complete_recv() would report it. */
	kfab_fast_entry(&e, recv->context,
			KFAB_COMP_RECV | kfab_comp_kind(kind) |
			KFAB_COMP_PAYLOAD, sqe->len, recv->base, sqe->tag,
			from);
	if (sqe->flags & KFAB_SQE_REMOTE_CQ_DATA) {
		e.flags |= KFAB_COMP_REMOTE_CQ_DATA;
		e.data = sqe->data;
	}
	/* A full ring or an overflow list: the general path waits or queues. */
	if (!kfab_cq_post_fast(rx->cq[KFAB_RX], &e, sqe->inline_data))
		goto general;
	list_del(&recv->link);
	trace_kfab_match(target->num, recv->context, sqe->tag, sqe->len);
	kfab_ep_count_recv(rx, sqe->len);
	trace_kfab_complete(rx->core->num, KFAB_RX, recv->context, sqe->len,
			    0);
	/* Unpinned and matched under the lock: nobody else holds it. */
	cached = kfab_recv_put_locked(rxc, recv);
	mutex_unlock(&rxc->lock);
	if (!cached)
		kfab_recv_put_cached(rxc, recv);

	kfab_ep_count_send(ep, sqe->len);
	kfab_fast_complete_send(ep, kind, sqe);
	return true;

general:
	mutex_unlock(&rxc->lock);
	return false;
}

/*
 * A small receive, from any source or one its AV holds, posted while no
 * message of its kind waits: it goes to the end of the posted list
 * unpinned (kfab_recv_skips_pin()'s case).
 * @owner: the endpoint posting on its own receive context, or NULL (SRX).
 * Return: as kfab_fast_send().
 */
static bool kfab_fast_recv(struct kfab_rx_ctx *rxc, struct kfab_ep *owner,
			   const struct kfab_sqe *sqe, int kind)
{
	u64 len = sqe->iov[0].len;
	struct kfab_recv *recv;

	if (sqe->flags != KFAB_SQE_COMPLETION || sqe->iov_count != 1 ||
	    sqe->rx_index || sqe->__reserved2 || !len ||
	    len > KFAB_CQ_PAYLOAD_MAX)
		return false;
	if (owner && (owner->srx || !kfab_ep_rx_payload(owner) ||
		      kfab_ep_cq_busy(owner, KFAB_RX)))
		return false;

	mutex_lock(&rxc->lock);
	/* A source its AV does not hold fails on the general path. */
	if (!list_empty(&rxc->unexpected[kind]) ||
	    (!owner && rxc->pins_small) ||
	    kfab_recv_check_src(rxc, sqe->addr))
		goto general;
	recv = kfab_recv_alloc(rxc);
	if (!recv)
		goto general;
	refcount_set(&recv->users, 1);
	recv->context = sqe->context;
	recv->tag = sqe->tag;
	recv->ignore = sqe->ignore;
	recv->src = sqe->addr;
	recv->flags = sqe->flags;
	recv->base = sqe->iov[0].base;
	recv->len = len;
	recv->min_free = 0;
	recv->unpinned = true;
	list_add_tail(&recv->link, &rxc->posted[kind]);
	mutex_unlock(&rxc->lock);
	return true;

general:
	mutex_unlock(&rxc->lock);
	return false;
}

/* An entry the fast path carried out (true), or one for the general path. */
static __always_inline bool kfab_fast_submit(struct kfab_ep *ep,
					     struct kfab_rx_ctx *rxc,
					     const struct kfab_sqe *sqe)
{
	/* Written through sysfs at any time: either value is right. */
	if (!kfab_fast_path)
		return false;
	switch (sqe->opcode) {
	case KFAB_OP_SEND:
		return ep && kfab_fast_send(ep, sqe, KFAB_KIND_MSG);
	case KFAB_OP_TSEND:
		return ep && kfab_fast_send(ep, sqe, KFAB_KIND_TAGGED);
	case KFAB_OP_RECV:
		return kfab_fast_recv(rxc, ep, sqe, KFAB_KIND_MSG);
	case KFAB_OP_TRECV:
		return kfab_fast_recv(rxc, ep, sqe, KFAB_KIND_TAGGED);
	}
	return false;
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

	/* Every member, one by one: zeroing the whole first costs per message. */
	req->opcode = sqe->opcode;
	req->rx_index = sqe->rx_index;
	req->flags = sqe->flags;
	req->context = sqe->context;
	req->addr = sqe->addr;
	req->tag = sqe->tag;
	req->ignore = sqe->ignore;
	req->data = sqe->data;
	/* An empty iterator keeps error completions well formed. */
	iov_iter_kvec(&req->iter, ITER_DEST, kv, 0, 0);
	if ((sqe->rx_index && !send) || sqe->rx_index >= KFAB_EP_BLOCK_MAX ||
	    sqe->__reserved2 || sqe->iov_count > KFAB_IOV_MAX)
		return false;
	/* A probe carries nothing (KFAB_SQE_PROBE). */
	if ((sqe->flags & KFAB_SQE_PROBE) &&
	    (sqe->opcode != KFAB_OP_SEND || sqe->iov_count ||
	     (sqe->flags & KFAB_SQE_INLINE)))
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

/*
 * An entry of an endpoint's ring: 0 when consumed, -EAGAIN to leave it.
 * kfab_sqe_to_req() writes @req and the used part of @iov before anything
 * reads them, so they skip the kernel's zeroing of stack variables (once
 * per message here).
 */
static noinline int kfab_msg_submit_general(struct kfab_ep *ep,
					    const struct kfab_sqe *sqe)
{
	struct iovec iov[KFAB_IOV_MAX] __uninitialized;
	struct kfab_req req __uninitialized;
	struct kvec kv;

	if (!kfab_sqe_to_req(sqe, &req, iov, &kv))
		return kfab_msg_reject(ep, &req);
	return kfab_msg_post(ep, &req);
}

/*
 * An entry of an endpoint's ring (kfab_sq_fn, the doorbell calls it for
 * every entry): 0 when consumed, -EAGAIN to leave it first in the ring.
 * The general path's frame (a request, its iovecs) only when it is taken.
 */
int kfab_ep_submit(void *owner, const struct kfab_sqe *sqe)
{
	struct kfab_ep *ep = owner;
	int rc = 0;

	if (!kfab_fast_submit(ep, ep->core->rxc, sqe))
		rc = kfab_msg_submit_general(ep, sqe);
	if (rc != -EAGAIN)
		trace_kfab_post(ep->core->num, sqe->opcode, sqe->context,
				sqe->len, sqe->tag);
	return rc;
}

static noinline int kfab_msg_submit_srx_general(struct kfab_srx *srx,
						const struct kfab_sqe *sqe)
{
	struct iovec iov[KFAB_IOV_MAX] __uninitialized;
	struct kfab_req req __uninitialized;
	struct kvec kv;

	if (!kfab_sqe_to_req(sqe, &req, iov, &kv))
		return kfab_msg_reject_srx(srx->rxc, &req);
	return kfab_msg_post_srx(srx, &req);
}

/* An entry of a shared receive context's ring, as kfab_ep_submit(). */
int kfab_srx_submit(void *owner, const struct kfab_sqe *sqe)
{
	struct kfab_srx *srx = owner;
	int rc = 0;

	if (!kfab_fast_submit(NULL, srx->rxc, sqe))
		rc = kfab_msg_submit_srx_general(srx, sqe);
	/* Receives of an SRX belong to no one endpoint yet: "ep" 0. */
	if (rc != -EAGAIN)
		trace_kfab_post(0, sqe->opcode, sqe->context, sqe->len,
				sqe->tag);
	return rc;
}

/* The oldest receive on @posted with @context, or NULL. */
static struct kfab_recv *kfab_find_recv(struct list_head *posted, u64 context)
{
	struct kfab_recv *recv;

	list_for_each_entry(recv, posted, link)
		if (recv->context == context)
			return recv;
	return NULL;
}

/**
 * kfab_msg_cancel() - cancel the oldest posted receive with a context
 * @rxc: the receive context it was posted to
 * @context: the receive's context
 *
 * Return: 0 (it completes with -ECANCELED on the endpoint that posted it,
 * or for a shared context the endpoint that joined it first), or -ENOENT.
 */
int kfab_msg_cancel(struct kfab_rx_ctx *rxc, u64 context)
{
	struct kfab_recv *recv = NULL;
	int kind;

	mutex_lock(&rxc->lock);
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED; kind++) {
		recv = kfab_find_recv(&rxc->posted[kind], context);
		if (recv)
			break;
	}
	if (recv) {
		list_del(&recv->link);
		kfab_complete_recv(kfab_rx_first_ep(rxc), &(struct kfab_recv_end){
			.kind = kind,
			.context = recv->context,
			.flags = recv->flags,
			.buf = recv->base,
			.tag = recv->tag,
			.status = -ECANCELED,
		});
	}
	mutex_unlock(&rxc->lock);
	if (!recv)
		return -ENOENT;
	kfab_recv_put(recv);
	return 0;
}

/* Move the messages sent to @core (every one for NULL) onto @out. */
static void kfab_rx_take_msgs(struct kfab_rx_ctx *rxc,
			      struct kfab_ep_core *core, struct list_head *out)
{
	struct list_head *lists[] = { &rxc->unexpected[KFAB_KIND_MSG],
				      &rxc->unexpected[KFAB_KIND_TAGGED],
				      &rxc->claimed };
	struct kfab_unexp *u, *n;
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
	struct kfab_rx_ctx *rxc = core->rxc;
	LIST_HEAD(pulls);
	LIST_HEAD(gone);

	mutex_lock(&rxc->lock);
	core->dead = true;
	core->ep = NULL;
	list_del_init(&core->rx_link);
	kfab_rx_take_msgs(rxc, core, &gone);
	/* Slots it held go to other endpoints' messages that wait. */
	kfab_bufrecv_refill(rxc, &pulls);
	mutex_unlock(&rxc->lock);
	kfab_pulls_start(&pulls);
	kfab_unexp_finish_list(&gone, -ECONNRESET);
}

/**
 * kfab_msg_flush_rx() - drop everything a receive context holds
 * @rxc: a context no endpoint receives through any more
 */
void kfab_msg_flush_rx(struct kfab_rx_ctx *rxc)
{
	struct kfab_recv *recv, *next;
	LIST_HEAD(posted);
	LIST_HEAD(gone);
	int kind;

	mutex_lock(&rxc->lock);
	for (kind = KFAB_KIND_MSG; kind <= KFAB_KIND_TAGGED; kind++)
		list_splice_init(&rxc->posted[kind], &posted);
	kfab_rx_take_msgs(rxc, NULL, &gone);
	rxc->av = NULL;
	mutex_unlock(&rxc->lock);

	list_for_each_entry_safe(recv, next, &posted, link)
		kfab_recv_put(recv);
	kfab_unexp_finish_list(&gone, -ECONNRESET);
}
