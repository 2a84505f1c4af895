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
 * caller's buffer is free on return.
 *
 * The producer side of the ring protocol of uapi/linux/kfab.h:
 *
 *   1. head = acquire-load(head)        pairs with the kernel's release of
 *                                       head: the slots before it are free
 *   2. tail - head == entries?          full: publish, ring the doorbell
 *                                       once, look again, else -FI_EAGAIN
 *   3. write sqes[tail & mask]
 *   4. release-store(tail, tail + 1)    pairs with the kernel's acquire of
 *                                       tail: it sees the slot written
 *   5. KFAB_IOC_EP_DOORBELL             unless FI_MORE
 *
 * With FI_MORE the entry is written but the tail is not published: the
 * kernel cannot see (nor progress, see kfab_ep_progress()) any part of a
 * batch until the call without FI_MORE publishes all of it and rings once.
 * A full ring ends a batch early (FI_MORE is a hint).
 *
 * The ring holds sends and receives alike; its free slots are what
 * fi_tx_size_left() and fi_rx_size_left() report.  The endpoint's lock
 * serialises producers (FI_THREAD_SAFE).
 */
#include <string.h>

#include <rdma/fi_tagged.h>

#include "barrier.h"
#include "internal.h"

/* Flags a send of the *msg family may carry. */
#define KFAB_SEND_MSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA | \
				 FI_INJECT | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
				 FI_FENCE)
/*
 * Flags a receive of the *msg family may carry; FI_MULTI_RECV for untagged
 * receives only.  FI_PEEK, FI_CLAIM and FI_DISCARD need the kernel's
 * matching engine to expose them: -FI_EBADFLAGS until it does.
 */
#define KFAB_RECV_MSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_MULTI_RECV)
#define KFAB_TRECV_MSG_FLAGS	(FI_COMPLETION | FI_MORE)

/* ---- the ring ---- */

static void kfab_ep_publish_locked(struct kfab_ep *ep)
{
	if (ep->published == ep->local_tail)
		return;
	/* Pairs with the kernel's smp_load_acquire() of tail. */
	kfab_store_release(ep->tail, ep->local_tail);
	ep->published = ep->local_tail;
}

static void kfab_ep_doorbell_locked(struct kfab_ep *ep)
{
	int ret = kfab_dev_ep_doorbell(ep->fd, ep->id, NULL);

	/*
	 * The requests are in the ring whatever the answer: the next
	 * doorbell (or progress from a CQ read) carries them out.
	 */
	if (ret)
		KFAB_INFO(EP_DATA, "ep %u: KFAB_IOC_EP_DOORBELL: %s\n", ep->id,
			  fi_strerror(-ret));
}

/* Slots in use, as far as we know; never above ep->entries. */
static uint32_t kfab_ep_used_locked(struct kfab_ep *ep)
{
	/* Pairs with the kernel's smp_store_release() of head. */
	uint32_t used = ep->local_tail - kfab_load_acquire(ep->head);

	/* A head past our tail, or too far behind, is not the kernel's. */
	return used > ep->entries ? ep->entries : used;
}

ssize_t kfab_ep_ring_space(struct kfab_ep *ep)
{
	ssize_t ret;

	pthread_mutex_lock(&ep->lock);
	if (!ep->enabled)
		ret = -FI_EOPBADSTATE;
	else
		ret = (ssize_t)(ep->entries - kfab_ep_used_locked(ep));
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/* Write @sqe into the ring; see the top of the file. */
static ssize_t kfab_ep_post(struct kfab_ep *ep, const struct kfab_sqe *sqe,
			    bool more)
{
	ssize_t ret = 0;
	uint8_t *slot;

	pthread_mutex_lock(&ep->lock);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (kfab_ep_used_locked(ep) >= ep->entries) {
		kfab_ep_publish_locked(ep);
		kfab_ep_doorbell_locked(ep);
		if (kfab_ep_used_locked(ep) >= ep->entries) {
			ret = -FI_EAGAIN;
			goto out;
		}
	}
	slot = ep->sqes + (size_t)(ep->local_tail & ep->mask) * ep->sqe_size;
	memcpy(slot, sqe, sizeof(*sqe));
	/* A kernel entry larger than ours: what we do not know is zero. */
	if (ep->sqe_size > sizeof(*sqe))
		memset(slot + sizeof(*sqe), 0, ep->sqe_size - sizeof(*sqe));
	ep->local_tail++;
	if (!more) {
		kfab_ep_publish_locked(ep);
		kfab_ep_doorbell_locked(ep);
	}
out:
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/* ---- building entries ---- */

/* Buffers into the entry: -FI_EINVAL beyond KFAB_IOV_MAX. */
static ssize_t kfab_sqe_set_iov(struct kfab_sqe *sqe, const struct iovec *iov,
				size_t count, uint64_t *total)
{
	uint64_t sum = 0;
	size_t i;

	if (count > KFAB_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (iov[i].iov_len > KFAB_MAX_MSG_SIZE)
			return -FI_EMSGSIZE;
		sum += iov[i].iov_len;
		sqe->iov[i].base = (uintptr_t)iov[i].iov_base;
		sqe->iov[i].len = iov[i].iov_len;
	}
	if (sum > KFAB_MAX_MSG_SIZE)
		return -FI_EMSGSIZE;
	sqe->iov_count = (uint8_t)count;
	*total = sum;
	return 0;
}

/* The payload into the entry itself: -FI_EINVAL beyond KFAB_INLINE_MAX. */
static ssize_t kfab_sqe_set_inline(struct kfab_sqe *sqe,
				   const struct iovec *iov, size_t count)
{
	size_t i, len = 0;

	if (count > KFAB_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (iov[i].iov_len > KFAB_INLINE_MAX - len)
			return -FI_EINVAL;
		if (iov[i].iov_len && !iov[i].iov_base)
			return -FI_EINVAL;
		if (iov[i].iov_len)
			memcpy(sqe->inline_data + len, iov[i].iov_base,
			       iov[i].iov_len);
		len += iov[i].iov_len;
	}
	sqe->flags |= KFAB_SQE_INLINE;
	sqe->len = len;
	sqe->iov_count = 0;
	return 0;
}

/*
 * A successful completion is reported unless the CQ was bound with
 * FI_SELECTIVE_COMPLETION and the operation's flags lack FI_COMPLETION.
 */
static bool kfab_want_completion(bool selective, uint64_t flags)
{
	return !selective || (flags & FI_COMPLETION);
}

/**
 * kfab_send() - one send of any flavour
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
 */
static ssize_t kfab_send(struct kfab_ep *ep, uint8_t op,
			 const struct iovec *iov, size_t count, fi_addr_t dest,
			 uint64_t tag, uint64_t data, void *context,
			 uint64_t flags, bool inject)
{
	struct kfab_sqe sqe = { 0 };
	uint64_t total;
	ssize_t ret;

	sqe.opcode = op;
	sqe.context = (uintptr_t)context;
	sqe.addr = dest;
	sqe.tag = tag;
	if (flags & FI_REMOTE_CQ_DATA) {
		sqe.flags |= KFAB_SQE_REMOTE_CQ_DATA;
		sqe.data = data;
	}
	if (flags & FI_FENCE)
		sqe.flags |= KFAB_SQE_FENCE;
	if (flags & FI_DELIVERY_COMPLETE) {
		/* The kernel delivers an inline payload from its own copy. */
		if (inject || (flags & FI_INJECT))
			return -FI_EBADFLAGS;
		sqe.flags |= KFAB_SQE_DELIVERY_COMPLETE;
	}
	if (inject || (flags & FI_INJECT))
		ret = kfab_sqe_set_inline(&sqe, iov, count);
	else
		ret = kfab_sqe_set_iov(&sqe, iov, count, &total);
	if (ret)
		return ret;
	if (!inject && kfab_want_completion(ep->tx_selective, flags))
		sqe.flags |= KFAB_SQE_COMPLETION;
	return kfab_ep_post(ep, &sqe, flags & FI_MORE);
}

/**
 * kfab_recv() - one receive of any flavour
 * @ep: the endpoint
 * @op: KFAB_OP_RECV or KFAB_OP_TRECV
 * @iov: the buffers, @count of them
 * @src: FI_DIRECTED_RECV: the only source accepted; else ignored
 * @tag: tagged receives: the tag
 * @ignore: tagged receives: the bits of the tag to ignore
 * @context: the operation's context
 * @flags: the operation's flags
 */
static ssize_t kfab_recv(struct kfab_ep *ep, uint8_t op,
			 const struct iovec *iov, size_t count, fi_addr_t src,
			 uint64_t tag, uint64_t ignore, void *context,
			 uint64_t flags)
{
	struct kfab_sqe sqe = { 0 };
	uint64_t total;
	ssize_t ret;

	if (flags & FI_MULTI_RECV) {
		if (op != KFAB_OP_RECV)
			return -FI_EBADFLAGS;
		if (count != 1)
			return -FI_EINVAL;
		/* The kernel releases the buffer below this much room. */
		sqe.flags |= KFAB_SQE_MULTI_RECV;
		sqe.data = kfab_read_once(&ep->min_multi_recv);
	}
	sqe.opcode = op;
	sqe.context = (uintptr_t)context;
	sqe.addr = (ep->caps & FI_DIRECTED_RECV) ? src : FI_ADDR_UNSPEC;
	sqe.tag = tag;
	sqe.ignore = ignore;
	ret = kfab_sqe_set_iov(&sqe, iov, count, &total);
	if (ret)
		return ret;
	if (kfab_want_completion(ep->rx_selective, flags))
		sqe.flags |= KFAB_SQE_COMPLETION;
	return kfab_ep_post(ep, &sqe, flags & FI_MORE);
}

/* The default flags of a direction (fi_control may change them meanwhile). */
static uint64_t kfab_tx_flags(struct kfab_ep *ep)
{
	return kfab_read_once(&ep->tx_op_flags);
}

static uint64_t kfab_rx_flags(struct kfab_ep *ep)
{
	return kfab_read_once(&ep->rx_op_flags);
}

static struct iovec kfab_iov1(const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return iov;
}

/* ---- fi_msg ---- */

static ssize_t kfab_msg_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			     void *desc, fi_addr_t src_addr, void *context)
{
	struct kfab_ep *ep = to_kfab_ep(ep_fid);
	struct iovec iov = kfab_iov1(buf, len);

	(void)desc;
	return kfab_recv(ep, KFAB_OP_RECV, &iov, 1, src_addr, 0, 0, context,
			 kfab_rx_flags(ep));
}

static ssize_t kfab_msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t src_addr,
			      void *context)
{
	struct kfab_ep *ep = to_kfab_ep(ep_fid);

	(void)desc;
	return kfab_recv(ep, KFAB_OP_RECV, iov, count, src_addr, 0, 0, context,
			 kfab_rx_flags(ep));
}

static ssize_t kfab_msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
				uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)KFAB_RECV_MSG_FLAGS)
		return -FI_EBADFLAGS;
	return kfab_recv(to_kfab_ep(ep_fid), KFAB_OP_RECV, msg->msg_iov,
			 msg->iov_count, msg->addr, 0, 0, msg->context, flags);
}

static ssize_t kfab_msg_send(struct fid_ep *ep_fid, const void *buf,
			     size_t len, void *desc, fi_addr_t dest_addr,
			     void *context)
{
	struct kfab_ep *ep = to_kfab_ep(ep_fid);
	struct iovec iov = kfab_iov1(buf, len);

	(void)desc;
	return kfab_send(ep, KFAB_OP_SEND, &iov, 1, dest_addr, 0, 0, context,
			 kfab_tx_flags(ep) & ~(uint64_t)FI_REMOTE_CQ_DATA,
			 false);
}

static ssize_t kfab_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t dest_addr,
			      void *context)
{
	struct kfab_ep *ep = to_kfab_ep(ep_fid);

	(void)desc;
	return kfab_send(ep, KFAB_OP_SEND, iov, count, dest_addr, 0, 0, context,
			 kfab_tx_flags(ep) & ~(uint64_t)FI_REMOTE_CQ_DATA,
			 false);
}

static ssize_t kfab_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
				uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)KFAB_SEND_MSG_FLAGS)
		return -FI_EBADFLAGS;
	return kfab_send(to_kfab_ep(ep_fid), KFAB_OP_SEND, msg->msg_iov,
			 msg->iov_count, msg->addr, 0, msg->data, msg->context,
			 flags, false);
}

static ssize_t kfab_msg_inject(struct fid_ep *ep_fid, const void *buf,
			       size_t len, fi_addr_t dest_addr)
{
	struct iovec iov = kfab_iov1(buf, len);

	return kfab_send(to_kfab_ep(ep_fid), KFAB_OP_SEND, &iov, 1, dest_addr,
			 0, 0, NULL, 0, true);
}

static ssize_t kfab_msg_senddata(struct fid_ep *ep_fid, const void *buf,
				 size_t len, void *desc, uint64_t data,
				 fi_addr_t dest_addr, void *context)
{
	struct kfab_ep *ep = to_kfab_ep(ep_fid);
	struct iovec iov = kfab_iov1(buf, len);

	(void)desc;
	return kfab_send(ep, KFAB_OP_SEND, &iov, 1, dest_addr, 0, data, context,
			 kfab_tx_flags(ep) | FI_REMOTE_CQ_DATA, false);
}

static ssize_t kfab_msg_injectdata(struct fid_ep *ep_fid, const void *buf,
				   size_t len, uint64_t data,
				   fi_addr_t dest_addr)
{
	struct iovec iov = kfab_iov1(buf, len);

	return kfab_send(to_kfab_ep(ep_fid), KFAB_OP_SEND, &iov, 1, dest_addr,
			 0, data, NULL, FI_REMOTE_CQ_DATA, true);
}

const struct fi_ops_msg kfab_ep_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = kfab_msg_recv,
	.recvv = kfab_msg_recvv,
	.recvmsg = kfab_msg_recvmsg,
	.send = kfab_msg_send,
	.sendv = kfab_msg_sendv,
	.sendmsg = kfab_msg_sendmsg,
	.inject = kfab_msg_inject,
	.senddata = kfab_msg_senddata,
	.injectdata = kfab_msg_injectdata,
};

/* ---- fi_tagged ---- */

static ssize_t kfab_tagged_recv(struct fid_ep *ep_fid, void *buf, size_t len,
				void *desc, fi_addr_t src_addr, uint64_t tag,
				uint64_t ignore, void *context)
{
	struct kfab_ep *ep = to_kfab_ep(ep_fid);
	struct iovec iov = kfab_iov1(buf, len);

	(void)desc;
	return kfab_recv(ep, KFAB_OP_TRECV, &iov, 1, src_addr, tag, ignore,
			 context, kfab_rx_flags(ep));
}

static ssize_t kfab_tagged_recvv(struct fid_ep *ep_fid,
				 const struct iovec *iov, void **desc,
				 size_t count, fi_addr_t src_addr,
				 uint64_t tag, uint64_t ignore, void *context)
{
	struct kfab_ep *ep = to_kfab_ep(ep_fid);

	(void)desc;
	return kfab_recv(ep, KFAB_OP_TRECV, iov, count, src_addr, tag, ignore,
			 context, kfab_rx_flags(ep));
}

/* FI_PEEK, FI_CLAIM and FI_DISCARD are refused here (-FI_EBADFLAGS). */
static ssize_t kfab_tagged_recvmsg(struct fid_ep *ep_fid,
				   const struct fi_msg_tagged *msg,
				   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)KFAB_TRECV_MSG_FLAGS)
		return -FI_EBADFLAGS;
	return kfab_recv(to_kfab_ep(ep_fid), KFAB_OP_TRECV, msg->msg_iov,
			 msg->iov_count, msg->addr, msg->tag, msg->ignore,
			 msg->context, flags);
}

static ssize_t kfab_tagged_send(struct fid_ep *ep_fid, const void *buf,
				size_t len, void *desc, fi_addr_t dest_addr,
				uint64_t tag, void *context)
{
	struct kfab_ep *ep = to_kfab_ep(ep_fid);
	struct iovec iov = kfab_iov1(buf, len);

	(void)desc;
	return kfab_send(ep, KFAB_OP_TSEND, &iov, 1, dest_addr, tag, 0, context,
			 kfab_tx_flags(ep) & ~(uint64_t)FI_REMOTE_CQ_DATA,
			 false);
}

static ssize_t kfab_tagged_sendv(struct fid_ep *ep_fid,
				 const struct iovec *iov, void **desc,
				 size_t count, fi_addr_t dest_addr,
				 uint64_t tag, void *context)
{
	struct kfab_ep *ep = to_kfab_ep(ep_fid);

	(void)desc;
	return kfab_send(ep, KFAB_OP_TSEND, iov, count, dest_addr, tag, 0,
			 context,
			 kfab_tx_flags(ep) & ~(uint64_t)FI_REMOTE_CQ_DATA,
			 false);
}

static ssize_t kfab_tagged_sendmsg(struct fid_ep *ep_fid,
				   const struct fi_msg_tagged *msg,
				   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)KFAB_SEND_MSG_FLAGS)
		return -FI_EBADFLAGS;
	return kfab_send(to_kfab_ep(ep_fid), KFAB_OP_TSEND, msg->msg_iov,
			 msg->iov_count, msg->addr, msg->tag, msg->data,
			 msg->context, flags, false);
}

static ssize_t kfab_tagged_inject(struct fid_ep *ep_fid, const void *buf,
				  size_t len, fi_addr_t dest_addr,
				  uint64_t tag)
{
	struct iovec iov = kfab_iov1(buf, len);

	return kfab_send(to_kfab_ep(ep_fid), KFAB_OP_TSEND, &iov, 1, dest_addr,
			 tag, 0, NULL, 0, true);
}

static ssize_t kfab_tagged_senddata(struct fid_ep *ep_fid, const void *buf,
				    size_t len, void *desc, uint64_t data,
				    fi_addr_t dest_addr, uint64_t tag,
				    void *context)
{
	struct kfab_ep *ep = to_kfab_ep(ep_fid);
	struct iovec iov = kfab_iov1(buf, len);

	(void)desc;
	return kfab_send(ep, KFAB_OP_TSEND, &iov, 1, dest_addr, tag, data,
			 context, kfab_tx_flags(ep) | FI_REMOTE_CQ_DATA, false);
}

static ssize_t kfab_tagged_injectdata(struct fid_ep *ep_fid, const void *buf,
				      size_t len, uint64_t data,
				      fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = kfab_iov1(buf, len);

	return kfab_send(to_kfab_ep(ep_fid), KFAB_OP_TSEND, &iov, 1, dest_addr,
			 tag, data, NULL, FI_REMOTE_CQ_DATA, true);
}

const struct fi_ops_tagged kfab_ep_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = kfab_tagged_recv,
	.recvv = kfab_tagged_recvv,
	.recvmsg = kfab_tagged_recvmsg,
	.send = kfab_tagged_send,
	.sendv = kfab_tagged_sendv,
	.sendmsg = kfab_tagged_sendmsg,
	.inject = kfab_tagged_inject,
	.senddata = kfab_tagged_senddata,
	.injectdata = kfab_tagged_injectdata,
};
