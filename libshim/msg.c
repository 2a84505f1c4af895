// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: the data path of an endpoint, fi_msg(3) and fi_tagged(3).
 *
 * Every call becomes one struct kfab_sqe written into the endpoint's
 * submission ring (ep.c maps it): the opcode, the buffers (at most
 * KFAB_IOV_MAX, copied into the entry), the context, the peer (the
 * destination of a send; the only accepted source of an FI_DIRECTED_RECV
 * receive, else ~0 = FI_ADDR_UNSPEC), tag and ignore bits, remote CQ data,
 * and whether a successful completion is wanted.  Injected payloads (at
 * most KFAB_INLINE_MAX bytes) are copied into the entry itself, so the
 * caller's buffer is free on return; so are other sends that small, which
 * the kernel then reads from the entry, not from the caller's memory.
 *
 * ring.c puts the entry into the ring (the producer side of the protocol
 * of uapi/linux/kfab.h, FI_MORE batching included).  Receives go to their
 * receive context's ring: the endpoint's own, or a shared receive
 * context's (srx.c): the receive calls of both op tables are the same
 * functions, which look at the fid's class.  An endpoint bound to an SRX
 * posts no receives of its own.
 *
 * The ring holds sends and receives alike; its free slots are what
 * fi_tx_size_left() and fi_rx_size_left() report.  The owner's lock
 * serialises producers (FI_THREAD_SAFE); under FI_THREAD_DOMAIN the
 * application does, and the lock is skipped (shim_data_lock()).
 */
#include <string.h>

#include <rdma/fi_tagged.h>

#include "barrier.h"
#include "internal.h"

/* Flags a send of the *msg family may carry. */
#define SHIM_SEND_MSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA | \
				 FI_INJECT | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
				 FI_FENCE)
/*
 * Flags a receive of the *msg family may carry; FI_MULTI_RECV for untagged
 * receives only.  FI_PEEK, FI_CLAIM and FI_DISCARD for tagged receives
 * only; for fi_recvmsg() fi_msg(3) gives FI_CLAIM and FI_DISCARD to
 * buffered receives (FI_BUFFERED_RECV, bufrecv.c).
 */
#define SHIM_RECV_MSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_MULTI_RECV)
#define SHIM_PEEK_FLAGS		(FI_PEEK | FI_CLAIM | FI_DISCARD)
#define SHIM_TRECV_MSG_FLAGS	(FI_COMPLETION | FI_MORE | SHIM_PEEK_FLAGS)

/* ---- the endpoint's ring ---- */

ssize_t shim_ep_ring_space(struct shim_ep *ep)
{
	ssize_t ret;

	pthread_mutex_lock(&ep->lock);
	if (!ep->enabled)
		ret = -FI_EOPBADSTATE;
	else
		ret = (ssize_t)shim_ring_space(&ep->ring);
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/*
 * Write @sqe into the endpoint's ring (ring.c): data waits for enable.  A
 * send that reports no completion rings at once (ring.c, lazy rings).
 */
static ssize_t shim_ep_post(struct shim_ep *ep, const struct kfab_sqe *sqe,
			    bool more)
{
	bool send = sqe->opcode == KFAB_OP_SEND || sqe->opcode == KFAB_OP_TSEND;
	enum shim_ring_bell bell = SHIM_BELL_LAZY;
	ssize_t ret;

	if (send && !(sqe->flags & KFAB_SQE_COMPLETION))
		bell = SHIM_BELL_NOW;

	shim_data_lock(&ep->lock, ep->domain->serial);
	if (!ep->enabled)
		ret = -FI_EOPBADSTATE;
	else
		ret = shim_ring_post(&ep->ring, sqe, more, bell);
	shim_data_unlock(&ep->lock, ep->domain->serial);
	return ret;
}

/*
 * An entry written in place (no copy on the stack to clear and copy):
 * the next slot of @ep's ring, with the endpoint's lock held
 * (shim_data_lock()) and the endpoint enabled; shim_ep_slot_commit()
 * publishes it and unlocks.  NULL, unlocked, with *@ret the answer when
 * there is none.
 */
static inline __attribute__((always_inline)) struct kfab_sqe *
shim_ep_slot(struct shim_ep *ep, enum shim_ring_bell bell, ssize_t *ret)
{
	struct kfab_sqe *sqe = NULL;

	shim_data_lock(&ep->lock, ep->domain->serial);
	if (!ep->enabled)
		*ret = -FI_EOPBADSTATE;
	else if (!(sqe = shim_ring_slot(&ep->ring, bell)))
		*ret = -FI_EAGAIN;
	if (!sqe)
		shim_data_unlock(&ep->lock, ep->domain->serial);
	return sqe;
}

static inline __attribute__((always_inline)) ssize_t
shim_ep_slot_commit(struct shim_ep *ep, bool more, enum shim_ring_bell bell)
{
	ssize_t ret = shim_ring_commit(&ep->ring, more, bell);

	shim_data_unlock(&ep->lock, ep->domain->serial);
	return ret;
}

/* ---- building entries ---- */

/* Buffers into the entry: -FI_EINVAL beyond KFAB_IOV_MAX. */
static ssize_t shim_sqe_set_iov(struct kfab_sqe *sqe, const struct iovec *iov,
				size_t count, uint64_t *total)
{
	uint64_t sum = 0;
	size_t i;

	if (count > KFAB_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (iov[i].iov_len > SHIM_MAX_MSG_SIZE)
			return -FI_EMSGSIZE;
		sum += iov[i].iov_len;
		sqe->iov[i].base = (uintptr_t)iov[i].iov_base;
		sqe->iov[i].len = iov[i].iov_len;
	}
	if (sum > SHIM_MAX_MSG_SIZE)
		return -FI_EMSGSIZE;
	sqe->iov_count = (uint8_t)count;
	*total = sum;
	return 0;
}

/*
 * A send's payload, checked before anything is written: its length, and
 * whether it goes in the entry (@in_entry).  An inject's payload must fit
 * the entry (-FI_EINVAL, as must its buffers' addresses); other sends are
 * held to the message size (-FI_EMSGSIZE).  A small send carries its
 * payload in the entry even without FI_INJECT: the kernel then copies
 * from its own copy of the entry, with no user iterator and no checked
 * user copy (Documentation/bench.rst, "Where a window's time goes").  Not
 * for FI_DELIVERY_COMPLETE, which the kernel delivers from the caller's
 * buffer, nor for a NULL buffer, whose send fails in the kernel with
 * FI_EFAULT as any bad buffer's does.
 */
static ssize_t shim_send_payload(const struct shim_ep *ep,
				 const struct iovec *iov, size_t count,
				 bool inject, bool delivery, uint64_t *total,
				 bool *in_entry)
{
	bool null_base = false;
	uint64_t sum = 0;
	size_t i;

	if (count > KFAB_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (inject && iov[i].iov_len > KFAB_INLINE_MAX - sum)
			return -FI_EINVAL;
		if (iov[i].iov_len > SHIM_MAX_MSG_SIZE)
			return -FI_EMSGSIZE;
		if (iov[i].iov_len && !iov[i].iov_base)
			null_base = true;
		sum += iov[i].iov_len;
	}
	if (inject && null_base)
		return -FI_EINVAL;
	if (sum > SHIM_MAX_MSG_SIZE)
		return -FI_EMSGSIZE;
	/* A datagram's own limit (the inline path is below it). */
	if (!inject && count && sum > ep->max_msg_size)
		return -FI_EMSGSIZE;
	*total = sum;
	*in_entry = inject ||
		    (!delivery && sum <= KFAB_INLINE_MAX && !null_base);
	return 0;
}

/* Checked by shim_send_payload(): the payload into the entry itself. */
static void shim_sqe_put_inline(struct kfab_sqe *sqe, const struct iovec *iov,
				size_t count, uint64_t total)
{
	size_t i, len = 0;

	for (i = 0; i < count; i++) {
		shim_copy_small(sqe->inline_data + len, iov[i].iov_base,
				iov[i].iov_len);
		len += iov[i].iov_len;
	}
	sqe->flags |= KFAB_SQE_INLINE;
	sqe->len = total;
}

/* Checked by shim_send_payload(): the buffers into the entry. */
static void shim_sqe_put_iov(struct kfab_sqe *sqe, const struct iovec *iov,
			     size_t count)
{
	size_t i;

	for (i = 0; i < count; i++) {
		sqe->iov[i].base = (uintptr_t)iov[i].iov_base;
		sqe->iov[i].len = iov[i].iov_len;
	}
	sqe->iov_count = (uint8_t)count;
}

/*
 * A successful completion is reported unless the CQ was bound with
 * FI_SELECTIVE_COMPLETION and the operation's flags lack FI_COMPLETION.
 */
static bool shim_want_completion(bool selective, uint64_t flags)
{
	return !selective || (flags & FI_COMPLETION);
}

/* One buffer as the iovec the calls of several take. */
static struct iovec shim_iov1(const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return iov;
}

/**
 * shim_send_one() - one send of any flavour
 * @ep: the endpoint
 * @op: KFAB_OP_SEND or KFAB_OP_TSEND
 * @iov: the payload, @count buffers
 * @dest: the destination, an index of the bound AV
 * @tag: tagged sends: the tag
 * @data: with FI_REMOTE_CQ_DATA in @flags: the remote CQ data
 * @context: the operation's context
 * @flags: the operation's flags (the defaults or the *msg call's):
 *	FI_INJECT copies the payload into the entry
 * @inject: an fi_inject*() call: FI_INJECT and never a completion
 *
 * Inlined twice: into shim_send(), every call's, and into shim_inject(),
 * where the compiler knows what an inject rules out and leaves it out.
 */
static inline __attribute__((always_inline)) ssize_t
shim_send_one(struct shim_ep *ep, uint8_t op, const struct iovec *iov,
	      size_t count, fi_addr_t dest, uint64_t tag, uint64_t data,
	      void *context, uint64_t flags, bool inject)
{
	bool copied = inject || (flags & FI_INJECT), delivery = false;
	enum shim_ring_bell bell = SHIM_BELL_LAZY;
	bool in_entry;
	uint32_t sqe_flags = 0;
	uint16_t rx_index = 0;
	struct kfab_sqe *sqe;
	uint64_t total;
	ssize_t ret;

	/* A connected endpoint sends to its peer, whatever @dest says. */
	if (ep->conn) {
		ret = shim_conn_dest(ep->conn, &dest);
		if (ret)
			return ret;
	}
	/* fi_rx_addr(): the kernel picks the receive context (sep.c). */
	ret = shim_av_rx_split(shim_read_once(&ep->av), &dest, &rx_index);
	if (ret)
		return ret;
	if (flags & FI_REMOTE_CQ_DATA)
		sqe_flags |= KFAB_SQE_REMOTE_CQ_DATA;
	else
		data = 0;
	if (flags & FI_FENCE)
		sqe_flags |= KFAB_SQE_FENCE;
	if (flags & FI_DELIVERY_COMPLETE) {
		/* The kernel delivers an inline payload from its own copy. */
		if (copied)
			return -FI_EBADFLAGS;
		/* fi_cq(3): "applies only to reliable endpoints" */
		if (ep->type == FI_EP_DGRAM)
			return -FI_EBADFLAGS;
		sqe_flags |= KFAB_SQE_DELIVERY_COMPLETE;
		delivery = true;
	}
	ret = shim_send_payload(ep, iov, count, copied, delivery, &total,
				&in_entry);
	if (ret)
		return ret;
	if (!inject && shim_want_completion(ep->tx_selective, flags))
		sqe_flags |= KFAB_SQE_COMPLETION;
	/* A send that reports no completion rings at once (ring.c). */
	if (!(sqe_flags & KFAB_SQE_COMPLETION))
		bell = SHIM_BELL_NOW;

	sqe = shim_ep_slot(ep, bell, &ret);
	if (!sqe)
		return ret;
	sqe->opcode = op;
	sqe->rx_index = rx_index;
	sqe->flags = sqe_flags;
	sqe->context = (uintptr_t)context;
	sqe->addr = dest;
	sqe->tag = tag;
	sqe->data = data;
	if (in_entry)
		shim_sqe_put_inline(sqe, iov, count, total);
	else
		shim_sqe_put_iov(sqe, iov, count);
	return shim_ep_slot_commit(ep, flags & FI_MORE, bell);
}

static __attribute__((noinline)) ssize_t
shim_send(struct shim_ep *ep, uint8_t op, const struct iovec *iov,
	  size_t count, fi_addr_t dest, uint64_t tag, uint64_t data,
	  void *context, uint64_t flags, bool inject)
{
	return shim_send_one(ep, op, iov, count, dest, tag, data, context,
			     flags, inject);
}

/*
 * fi_inject() and fi_tinject(), a ping-pong's sends: one buffer, no
 * context, no flags (Documentation/bench.rst, "A kept destination and
 * the library's receive").
 */
static ssize_t shim_inject(struct fid_ep *ep_fid, uint8_t op, const void *buf,
			   size_t len, fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = shim_iov1(buf, len);

	return shim_send_one(shim_msg_ep(ep_fid), op, &iov, 1, dest, tag, 0,
			     NULL, 0, true);
}

/**
 * shim_probe() - is an endpoint at @dest?  (KFAB_SQE_PROBE)
 * @ep: an enabled endpoint with a transmit CQ
 * @dest: an index of its AV
 *
 * Nothing is delivered: the completion on @ep's transmit CQ is a success
 * when an enabled endpoint is there, FI_EHOSTUNREACH or FI_ECONNRESET
 * when none is (another node's address is asked over the wire, so its
 * answer comes a round trip later), FI_EOPNOTSUPP when the kernel cannot
 * tell.  cm.c watches a connection's peer with it.
 */
ssize_t shim_probe(struct shim_ep *ep, fi_addr_t dest)
{
	struct kfab_sqe sqe = {
		.opcode = KFAB_OP_SEND,
		.flags = KFAB_SQE_PROBE | KFAB_SQE_COMPLETION,
		.addr = dest,
	};

	return shim_ep_post(ep, &sqe, false);
}

/*
 * FI_PEEK, FI_CLAIM and FI_DISCARD of a tagged receive (fi_tagged(3)) as
 * the kernel's KFAB_SQE_PEEK, _CLAIM and _DISCARD.  FI_DISCARD goes with
 * FI_PEEK or FI_CLAIM, never alone nor with both: -FI_EBADFLAGS.  FI_CLAIM needs the
 * application's struct fi_context as the context, which the kernel keys
 * the claimed message by (and which the paired FI_CLAIM receive passes
 * again): -FI_EINVAL without one.  A peek moves no data (a provider "may
 * return NULL" in buf) and a discard takes none, so neither passes
 * buffers; a peek always asks for its completion, which is its answer.
 */
static ssize_t shim_sqe_set_peek(struct kfab_sqe *sqe, const void *context,
				 uint64_t flags, bool *buffers)
{
	*buffers = true;
	if (!(flags & SHIM_PEEK_FLAGS))
		return 0;
	/* "in conjunction with either FI_PEEK or FI_CLAIM": one of them */
	if ((flags & FI_DISCARD) &&
	    (flags & (FI_PEEK | FI_CLAIM)) != FI_PEEK &&
	    (flags & (FI_PEEK | FI_CLAIM)) != FI_CLAIM)
		return -FI_EBADFLAGS;
	if ((flags & FI_CLAIM) && !context)
		return -FI_EINVAL;
	if (flags & FI_PEEK)
		sqe->flags |= KFAB_SQE_PEEK | KFAB_SQE_COMPLETION;
	if (flags & FI_CLAIM)
		sqe->flags |= KFAB_SQE_CLAIM;
	if (flags & FI_DISCARD)
		sqe->flags |= KFAB_SQE_DISCARD;
	*buffers = !(flags & (FI_PEEK | FI_DISCARD));
	return 0;
}

/*
 * The common receive: one buffer on an endpoint's own receive context,
 * none of FI_MULTI_RECV, FI_PEEK, FI_CLAIM, FI_DISCARD.  Written in place
 * as shim_send() writes a send, with the checks shim_sqe_set_iov() makes
 * of one buffer: no entry on the stack to clear and copy, some 110 of
 * the 290 instructions a ping-pong's receive cost (Documentation/
 * bench.rst, "A kept destination and the library's receive").
 */
static ssize_t shim_ep_post_recv(struct shim_ep *ep, uint8_t op,
				 const struct iovec *iov, fi_addr_t src,
				 uint64_t tag, uint64_t ignore, void *context,
				 uint64_t flags)
{
	uint32_t sqe_flags = 0;
	struct kfab_sqe *sqe;
	ssize_t ret;

	if (!iov)
		return -FI_EINVAL;
	if (iov->iov_len > SHIM_MAX_MSG_SIZE)
		return -FI_EMSGSIZE;
	if (shim_want_completion(ep->rx_selective, flags))
		sqe_flags = KFAB_SQE_COMPLETION;

	sqe = shim_ep_slot(ep, SHIM_BELL_LAZY, &ret);
	if (!sqe)
		return ret;
	sqe->opcode = op;
	sqe->flags = sqe_flags;
	sqe->context = (uintptr_t)context;
	sqe->addr = (ep->caps & FI_DIRECTED_RECV) ? src : FI_ADDR_UNSPEC;
	sqe->tag = tag;
	sqe->ignore = ignore;
	sqe->iov[0].base = (uintptr_t)iov->iov_base;
	sqe->iov[0].len = iov->iov_len;
	sqe->iov_count = 1;
	return shim_ep_slot_commit(ep, flags & FI_MORE, SHIM_BELL_LAZY);
}

/**
 * shim_post_recv() - post one receive of any flavour on a receive context
 * @rxc: the receive context: an endpoint's own, or a shared receive
 *	context (FI_CLASS_SRX_CTX)
 * @op: KFAB_OP_RECV or KFAB_OP_TRECV
 * @iov: the buffers, @count of them
 * @src: FI_DIRECTED_RECV: the only source accepted; else ignored
 * @tag: tagged receives: the tag
 * @ignore: tagged receives: the bits of the tag to ignore
 * @context: the operation's context
 * @flags: the operation's flags
 *
 * An endpoint bound to an SRX answers -FI_EOPBADSTATE: its receives are
 * the SRX's ("Users post receive buffers directly to a shared receive
 * context", fi_endpoint(3)), and fi_endpoint(3)'s -FI_EOPBADSTATE is "the
 * endpoint's state does not permit the requested operation" - the
 * operation exists, the binding rules it out.
 */
static ssize_t shim_post_recv(struct fid_ep *rxc, uint8_t op,
			      const struct iovec *iov, size_t count,
			      fi_addr_t src, uint64_t tag, uint64_t ignore,
			      void *context, uint64_t flags)
{
	struct kfab_sqe sqe;
	struct shim_srx *srx = NULL;
	struct shim_ep *ep = NULL;
	size_t min_multi_recv;
	bool selective, buffers;
	uint64_t caps, total;
	ssize_t ret;

	if (rxc->fid.fclass == FI_CLASS_SRX_CTX) {
		srx = to_shim_srx(rxc);
		caps = srx->caps;
		min_multi_recv = shim_read_once(&srx->min_multi_recv);
		selective = shim_srx_selective(srx);
	} else {
		ep = shim_msg_ep(rxc);
		srx = shim_read_once(&ep->srx);
		/* Its SRX's buffered messages are claimed through it too. */
		if (srx && !(ep->buffered && (flags & (FI_CLAIM | FI_DISCARD))))
			return -FI_EOPBADSTATE;
		if (srx)
			return shim_post_recv(&srx->ep_fid, op, iov, count,
					      src, tag, ignore, context, flags);
		if (count == 1 &&
		    !(flags & (FI_MULTI_RECV | SHIM_PEEK_FLAGS)))
			return shim_ep_post_recv(ep, op, iov, src, tag, ignore,
						 context, flags);
		caps = ep->caps;
		min_multi_recv = shim_read_once(&ep->min_multi_recv);
		selective = ep->rx_selective;
	}
	/* The header: the ring takes no more of the rest than is used. */
	memset(&sqe, 0, offsetof(struct kfab_sqe, iov));
	if (flags & FI_MULTI_RECV) {
		if (op != KFAB_OP_RECV)
			return -FI_EBADFLAGS;
		if (count != 1)
			return -FI_EINVAL;
		/* The kernel releases the buffer below this much room. */
		sqe.flags |= KFAB_SQE_MULTI_RECV;
		sqe.data = min_multi_recv;
	}
	sqe.context = (uintptr_t)context;
	/* FI_BUFFERED_RECV: FI_CLAIM/FI_DISCARD name a buffered message. */
	if (ep && ep->buffered && (flags & (FI_CLAIM | FI_DISCARD)))
		ret = shim_bufrecv_claim(ep->bufrecv, &sqe, context, flags,
					 &buffers);
	else if (srx && shim_srx_bufrecv(srx) &&
		 (flags & (FI_CLAIM | FI_DISCARD)))
		ret = shim_bufrecv_claim(shim_srx_bufrecv(srx), &sqe, context,
					 flags, &buffers);
	else if ((flags & SHIM_PEEK_FLAGS) && op != KFAB_OP_TRECV)
		return -FI_EBADFLAGS;
	else
		ret = shim_sqe_set_peek(&sqe, context, flags, &buffers);
	if (ret)
		return ret;
	sqe.opcode = op;
	sqe.addr = (caps & FI_DIRECTED_RECV) ? src : FI_ADDR_UNSPEC;
	/* A buffered message is named by its token, whoever sent it. */
	if (sqe.flags & KFAB_SQE_BUFFERED)
		sqe.addr = FI_ADDR_UNSPEC;
	sqe.tag = tag;
	sqe.ignore = ignore;
	if (buffers) {
		ret = shim_sqe_set_iov(&sqe, iov, count, &total);
		if (ret)
			return ret;
	}
	if (shim_want_completion(selective, flags))
		sqe.flags |= KFAB_SQE_COMPLETION;
	if (srx)
		return shim_srx_post(srx, &sqe, flags & FI_MORE);
	return shim_ep_post(ep, &sqe, flags & FI_MORE);
}

/*
 * The default flags of a direction (fi_control may change them meanwhile):
 * an alias's own (fi_ep_alias(3)), else its endpoint's.
 */
static uint64_t shim_tx_flags(struct fid_ep *ep_fid)
{
	struct shim_ep_alias *alias = shim_ep_alias_of(ep_fid);

	if (alias)
		return shim_read_once(&alias->tx_op_flags);
	return shim_read_once(&shim_msg_ep(ep_fid)->tx_op_flags);
}

/* The default flags of receives on a receive context (endpoint or SRX). */
static uint64_t shim_rx_ctx_flags(struct fid_ep *rxc)
{
	struct shim_ep_alias *alias = shim_ep_alias_of(rxc);

	if (rxc->fid.fclass == FI_CLASS_SRX_CTX)
		return shim_read_once(&to_shim_srx(rxc)->rx_op_flags);
	if (alias)
		return shim_read_once(&alias->rx_op_flags);
	return shim_read_once(&to_shim_ep(rxc)->rx_op_flags);
}

/* ---- fi_msg ---- */

static ssize_t shim_msg_recv(struct fid_ep *rxc, void *buf, size_t len,
			     void *desc, fi_addr_t src_addr, void *context)
{
	struct iovec iov = shim_iov1(buf, len);

	(void)desc;
	return shim_post_recv(rxc, KFAB_OP_RECV, &iov, 1, src_addr, 0, 0,
			      context, shim_rx_ctx_flags(rxc));
}

static ssize_t shim_msg_recvv(struct fid_ep *rxc, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t src_addr,
			      void *context)
{
	(void)desc;
	return shim_post_recv(rxc, KFAB_OP_RECV, iov, count, src_addr, 0, 0,
			      context, shim_rx_ctx_flags(rxc));
}

static ssize_t shim_msg_recvmsg(struct fid_ep *rxc, const struct fi_msg *msg,
				uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)(SHIM_RECV_MSG_FLAGS | FI_CLAIM | FI_DISCARD))
		return -FI_EBADFLAGS;
	return shim_post_recv(rxc, KFAB_OP_RECV, msg->msg_iov,
			      msg->iov_count, msg->addr, 0, 0, msg->context,
			      flags);
}

static ssize_t shim_msg_send(struct fid_ep *ep_fid, const void *buf,
			     size_t len, void *desc, fi_addr_t dest_addr,
			     void *context)
{
	struct shim_ep *ep = shim_msg_ep(ep_fid);
	struct iovec iov = shim_iov1(buf, len);

	(void)desc;
	return shim_send(ep, KFAB_OP_SEND, &iov, 1, dest_addr, 0, 0, context,
			 shim_tx_flags(ep_fid) & ~(uint64_t)FI_REMOTE_CQ_DATA,
			 false);
}

static ssize_t shim_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t dest_addr,
			      void *context)
{
	struct shim_ep *ep = shim_msg_ep(ep_fid);

	(void)desc;
	return shim_send(ep, KFAB_OP_SEND, iov, count, dest_addr, 0, 0, context,
			 shim_tx_flags(ep_fid) & ~(uint64_t)FI_REMOTE_CQ_DATA,
			 false);
}

static ssize_t shim_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
				uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)SHIM_SEND_MSG_FLAGS)
		return -FI_EBADFLAGS;
	return shim_send(shim_msg_ep(ep_fid), KFAB_OP_SEND, msg->msg_iov,
			 msg->iov_count, msg->addr, 0, msg->data, msg->context,
			 flags, false);
}

static ssize_t shim_msg_inject(struct fid_ep *ep_fid, const void *buf,
			       size_t len, fi_addr_t dest_addr)
{
	return shim_inject(ep_fid, KFAB_OP_SEND, buf, len, dest_addr, 0);
}

static ssize_t shim_msg_senddata(struct fid_ep *ep_fid, const void *buf,
				 size_t len, void *desc, uint64_t data,
				 fi_addr_t dest_addr, void *context)
{
	struct shim_ep *ep = shim_msg_ep(ep_fid);
	struct iovec iov = shim_iov1(buf, len);

	(void)desc;
	return shim_send(ep, KFAB_OP_SEND, &iov, 1, dest_addr, 0, data, context,
			 shim_tx_flags(ep_fid) | FI_REMOTE_CQ_DATA, false);
}

static ssize_t shim_msg_injectdata(struct fid_ep *ep_fid, const void *buf,
				   size_t len, uint64_t data,
				   fi_addr_t dest_addr)
{
	struct iovec iov = shim_iov1(buf, len);

	return shim_send(shim_msg_ep(ep_fid), KFAB_OP_SEND, &iov, 1, dest_addr,
			 0, data, NULL, FI_REMOTE_CQ_DATA, true);
}

const struct fi_ops_msg shim_ep_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = shim_msg_recv,
	.recvv = shim_msg_recvv,
	.recvmsg = shim_msg_recvmsg,
	.send = shim_msg_send,
	.sendv = shim_msg_sendv,
	.sendmsg = shim_msg_sendmsg,
	.inject = shim_msg_inject,
	.senddata = shim_msg_senddata,
	.injectdata = shim_msg_injectdata,
};

/* ---- fi_tagged ---- */

static ssize_t shim_tagged_recv(struct fid_ep *rxc, void *buf, size_t len,
				void *desc, fi_addr_t src_addr, uint64_t tag,
				uint64_t ignore, void *context)
{
	struct iovec iov = shim_iov1(buf, len);

	(void)desc;
	return shim_post_recv(rxc, KFAB_OP_TRECV, &iov, 1, src_addr, tag,
			      ignore, context, shim_rx_ctx_flags(rxc));
}

static ssize_t shim_tagged_recvv(struct fid_ep *rxc,
				 const struct iovec *iov, void **desc,
				 size_t count, fi_addr_t src_addr,
				 uint64_t tag, uint64_t ignore, void *context)
{
	(void)desc;
	return shim_post_recv(rxc, KFAB_OP_TRECV, iov, count, src_addr, tag,
			      ignore, context, shim_rx_ctx_flags(rxc));
}

/* FI_PEEK, FI_CLAIM and FI_DISCARD: see shim_sqe_set_peek(). */
static ssize_t shim_tagged_recvmsg(struct fid_ep *rxc,
				   const struct fi_msg_tagged *msg,
				   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)SHIM_TRECV_MSG_FLAGS)
		return -FI_EBADFLAGS;
	return shim_post_recv(rxc, KFAB_OP_TRECV, msg->msg_iov,
			      msg->iov_count, msg->addr, msg->tag, msg->ignore,
			      msg->context, flags);
}

static ssize_t shim_tagged_send(struct fid_ep *ep_fid, const void *buf,
				size_t len, void *desc, fi_addr_t dest_addr,
				uint64_t tag, void *context)
{
	struct shim_ep *ep = shim_msg_ep(ep_fid);
	struct iovec iov = shim_iov1(buf, len);

	(void)desc;
	return shim_send(ep, KFAB_OP_TSEND, &iov, 1, dest_addr, tag, 0, context,
			 shim_tx_flags(ep_fid) & ~(uint64_t)FI_REMOTE_CQ_DATA,
			 false);
}

static ssize_t shim_tagged_sendv(struct fid_ep *ep_fid,
				 const struct iovec *iov, void **desc,
				 size_t count, fi_addr_t dest_addr,
				 uint64_t tag, void *context)
{
	struct shim_ep *ep = shim_msg_ep(ep_fid);

	(void)desc;
	return shim_send(ep, KFAB_OP_TSEND, iov, count, dest_addr, tag, 0,
			 context,
			 shim_tx_flags(ep_fid) & ~(uint64_t)FI_REMOTE_CQ_DATA,
			 false);
}

static ssize_t shim_tagged_sendmsg(struct fid_ep *ep_fid,
				   const struct fi_msg_tagged *msg,
				   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)SHIM_SEND_MSG_FLAGS)
		return -FI_EBADFLAGS;
	return shim_send(shim_msg_ep(ep_fid), KFAB_OP_TSEND, msg->msg_iov,
			 msg->iov_count, msg->addr, msg->tag, msg->data,
			 msg->context, flags, false);
}

static ssize_t shim_tagged_inject(struct fid_ep *ep_fid, const void *buf,
				  size_t len, fi_addr_t dest_addr,
				  uint64_t tag)
{
	return shim_inject(ep_fid, KFAB_OP_TSEND, buf, len, dest_addr, tag);
}

static ssize_t shim_tagged_senddata(struct fid_ep *ep_fid, const void *buf,
				    size_t len, void *desc, uint64_t data,
				    fi_addr_t dest_addr, uint64_t tag,
				    void *context)
{
	struct shim_ep *ep = shim_msg_ep(ep_fid);
	struct iovec iov = shim_iov1(buf, len);

	(void)desc;
	return shim_send(ep, KFAB_OP_TSEND, &iov, 1, dest_addr, tag, data,
			 context, shim_tx_flags(ep_fid) | FI_REMOTE_CQ_DATA, false);
}

static ssize_t shim_tagged_injectdata(struct fid_ep *ep_fid, const void *buf,
				      size_t len, uint64_t data,
				      fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = shim_iov1(buf, len);

	return shim_send(shim_msg_ep(ep_fid), KFAB_OP_TSEND, &iov, 1, dest_addr,
			 tag, data, NULL, FI_REMOTE_CQ_DATA, true);
}

const struct fi_ops_tagged shim_ep_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = shim_tagged_recv,
	.recvv = shim_tagged_recvv,
	.recvmsg = shim_tagged_recvmsg,
	.send = shim_tagged_send,
	.sendv = shim_tagged_sendv,
	.sendmsg = shim_tagged_sendmsg,
	.inject = shim_tagged_inject,
	.senddata = shim_tagged_senddata,
	.injectdata = shim_tagged_injectdata,
};

/* ---- a shared receive context: receives only ---- */

/*
 * Sends are posted to endpoints; an SRX is a receive context only
 * (fi_endpoint(3), "Shared contexts"), so every send call on one is
 * -FI_ENOSYS.
 */
static ssize_t shim_srx_send(struct fid_ep *ep, const void *buf, size_t len,
			     void *desc, fi_addr_t dest_addr, void *context)
{
	(void)ep; (void)buf; (void)len; (void)desc; (void)dest_addr;
	(void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_sendv(struct fid_ep *ep, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t dest_addr,
			      void *context)
{
	(void)ep; (void)iov; (void)desc; (void)count; (void)dest_addr;
	(void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
				uint64_t flags)
{
	(void)ep; (void)msg; (void)flags;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_inject(struct fid_ep *ep, const void *buf,
			       size_t len, fi_addr_t dest_addr)
{
	(void)ep; (void)buf; (void)len; (void)dest_addr;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_senddata(struct fid_ep *ep, const void *buf,
				 size_t len, void *desc, uint64_t data,
				 fi_addr_t dest_addr, void *context)
{
	(void)ep; (void)buf; (void)len; (void)desc; (void)data;
	(void)dest_addr; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_injectdata(struct fid_ep *ep, const void *buf,
				   size_t len, uint64_t data,
				   fi_addr_t dest_addr)
{
	(void)ep; (void)buf; (void)len; (void)data; (void)dest_addr;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_tsend(struct fid_ep *ep, const void *buf, size_t len,
			      void *desc, fi_addr_t dest_addr, uint64_t tag,
			      void *context)
{
	(void)ep; (void)buf; (void)len; (void)desc; (void)dest_addr;
	(void)tag; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_tsendv(struct fid_ep *ep, const struct iovec *iov,
			       void **desc, size_t count,
			       fi_addr_t dest_addr, uint64_t tag,
			       void *context)
{
	(void)ep; (void)iov; (void)desc; (void)count; (void)dest_addr;
	(void)tag; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_tsendmsg(struct fid_ep *ep,
				 const struct fi_msg_tagged *msg,
				 uint64_t flags)
{
	(void)ep; (void)msg; (void)flags;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_tinject(struct fid_ep *ep, const void *buf,
				size_t len, fi_addr_t dest_addr, uint64_t tag)
{
	(void)ep; (void)buf; (void)len; (void)dest_addr; (void)tag;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_tsenddata(struct fid_ep *ep, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest_addr, uint64_t tag,
				  void *context)
{
	(void)ep; (void)buf; (void)len; (void)desc; (void)data;
	(void)dest_addr; (void)tag; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_srx_tinjectdata(struct fid_ep *ep, const void *buf,
				    size_t len, uint64_t data,
				    fi_addr_t dest_addr, uint64_t tag)
{
	(void)ep; (void)buf; (void)len; (void)data; (void)dest_addr;
	(void)tag;
	return -FI_ENOSYS;
}

const struct fi_ops_msg shim_srx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = shim_msg_recv,
	.recvv = shim_msg_recvv,
	.recvmsg = shim_msg_recvmsg,
	.send = shim_srx_send,
	.sendv = shim_srx_sendv,
	.sendmsg = shim_srx_sendmsg,
	.inject = shim_srx_inject,
	.senddata = shim_srx_senddata,
	.injectdata = shim_srx_injectdata,
};

const struct fi_ops_tagged shim_srx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = shim_tagged_recv,
	.recvv = shim_tagged_recvv,
	.recvmsg = shim_tagged_recvmsg,
	.send = shim_srx_tsend,
	.sendv = shim_srx_tsendv,
	.sendmsg = shim_srx_tsendmsg,
	.inject = shim_srx_tinject,
	.senddata = shim_srx_tsenddata,
	.injectdata = shim_srx_tinjectdata,
};
