// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: fid_ep.  An endpoint is a kernel endpoint (KFAB_IOC_EP_OPEN,
 * FI_EP_RDM) with a submission ring that the process maps read-write:
 * msg.c writes one struct kfab_sqe per request into it, publishes the tail
 * and rings the doorbell (KFAB_IOC_DOORBELL).  This file holds the
 * endpoint's life: open, bind, enable, close, names, options and the op
 * tables of everything kfab does not carry (RMA, atomics, collectives),
 * which answer -FI_ENOSYS.  An FI_EP_MSG endpoint is the same kernel
 * endpoint with a connection (cm.c, ep->conn): a hidden AV bound at
 * open, an EQ required at enable, and fi_ops_cm of its own.
 *
 * Binding: one AV (flags 0), one CQ and one counter per direction, one
 * shared receive context (srx.c).  Each bind is KFAB_IOC_EP_BIND with the
 * object's kernel id, and the object learns about us: the AV and the SRX
 * refuse fi_close() meanwhile, the CQ and the counter ring our doorbell
 * (and our SRX's) before they are read (manual progress, see cq.c).
 * Binding after fi_enable() is -FI_EOPBADSTATE.
 *
 * Locking: ep->lock serialises the producer side of the ring (unless the
 * domain is FI_THREAD_DOMAIN's, shim_data_lock()) and every change of
 * binding or state.  Progress (shim_ep_progress()) takes no lock
 * of ours: it only compares two indices and makes a system call.
 *
 * Documentation/ep.rst has the long form.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "barrier.h"
#include "internal.h"

/* What kfab offers when fi_info's caps leave it to the provider. */
#define SHIM_EP_DEFAULT_CAPS	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | \
				 SHIM_COMM_CAPS | FI_DIRECTED_RECV | FI_SOURCE)

/* ---- progress ---- */

/*
 * An SRX has no CQ of its own: the receives in its ring complete on its
 * endpoints' CQs, so reading those progresses it too.
 */
bool shim_ep_progress(struct shim_ep *ep)
{
	struct shim_srx *srx = shim_read_once(&ep->srx);
	bool pending = shim_ring_progress(&ep->ring);

	if (srx)
		pending |= shim_srx_progress(srx);
	return pending;
}

/* ---- binding ---- */

int shim_ep_bind_av(struct shim_ep *ep, struct fid *bfid, uint64_t flags)
{
	struct shim_av *av = shim_av_from_fid(bfid);
	int ret;

	if (!av)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (ep->av)
		return -FI_EINVAL;	/* one AV per endpoint */
	ret = shim_dev_ep_bind(ep->fd, ep->id, shim_av_id(av), 0);
	if (ret)
		return ret;
	shim_av_bind_ep(av);
	/* cq.c reads it without our lock (FI_AV_USER_ID sources). */
	shim_write_once(&ep->av, av);
	return 0;
}

static int shim_ep_bind_cq(struct shim_ep *ep, struct fid *bfid,
			   uint64_t flags)
{
	struct shim_cq *cq = shim_cq_from_fid(bfid);
	uint32_t kflags = 0;
	bool attach;
	int ret;

	if (!cq)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EBADFLAGS;
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;	/* a CQ for no direction */
	if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
	    ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EINVAL;	/* one CQ per direction */
	if (flags & FI_TRANSMIT)
		kflags |= KFAB_EP_BIND_TRANSMIT;
	if (flags & FI_RECV)
		kflags |= KFAB_EP_BIND_RECV;
	if (flags & FI_SELECTIVE_COMPLETION)
		kflags |= KFAB_EP_BIND_SELECTIVE;

	/* The CQ progresses us once, whatever directions it serves. */
	attach = cq != ep->tx_cq && cq != ep->rx_cq;
	if (attach) {
		ret = shim_cq_attach_ep(cq, ep);
		if (ret)
			return ret;
	}
	ret = shim_dev_ep_bind(ep->fd, ep->id, shim_cq_id(cq), kflags);
	if (ret) {
		if (attach)
			shim_cq_detach_ep(cq, ep);
		return ret;
	}
	if (flags & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	if (flags & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	return 0;
}

/*
 * Counters count sends (FI_SEND) and receives (FI_RECV).  The RMA events
 * (FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE) are known flags for
 * an operation kfab does not have: -FI_ENOSYS.  Anything else is
 * -FI_EBADFLAGS.
 */
static int shim_ep_bind_cntr(struct shim_ep *ep, struct fid *bfid,
			     uint64_t flags)
{
	const uint64_t rma = FI_READ | FI_WRITE | FI_REMOTE_READ |
			     FI_REMOTE_WRITE;
	struct shim_cntr *cntr = shim_cntr_from_fid(bfid);
	uint32_t kflags = 0;
	bool attach;
	int ret;

	if (!cntr)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)(FI_SEND | FI_RECV | rma))
		return -FI_EBADFLAGS;
	if (flags & rma)
		return -FI_ENOSYS;
	if (!flags)
		return -FI_EINVAL;
	if (((flags & FI_SEND) && ep->tx_cntr) ||
	    ((flags & FI_RECV) && ep->rx_cntr))
		return -FI_EINVAL;
	if (flags & FI_SEND)
		kflags |= KFAB_EP_BIND_TRANSMIT;
	if (flags & FI_RECV)
		kflags |= KFAB_EP_BIND_RECV;

	attach = cntr != ep->tx_cntr && cntr != ep->rx_cntr;
	if (attach) {
		ret = shim_cntr_attach_ep(cntr, ep);
		if (ret)
			return ret;
	}
	ret = shim_dev_ep_bind(ep->fd, ep->id, shim_cntr_id(cntr), kflags);
	if (ret) {
		if (attach)
			shim_cntr_detach_ep(cntr, ep);
		return ret;
	}
	if (flags & FI_SEND)
		ep->tx_cntr = cntr;
	if (flags & FI_RECV)
		ep->rx_cntr = cntr;
	return 0;
}

/*
 * A shared receive context: flags 0, one per endpoint ("An endpoint may
 * only be associated with a single receive context", fi_endpoint(3)), of
 * the same domain, and the endpoint's receive caps a subset of the SRX's.
 * The kernel checks the AV when the endpoint is enabled.
 */
static int shim_ep_bind_srx(struct shim_ep *ep, struct fid *bfid,
			    uint64_t flags)
{
	struct shim_srx *srx = shim_srx_from_fid(bfid);
	int ret;

	if (!srx)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (ep->srx)
		return -FI_EINVAL;
	ret = shim_srx_bind_ep(srx, ep);
	if (ret)
		return ret;
	ret = shim_dev_ep_bind(ep->fd, ep->id, srx->id, 0);
	if (ret) {
		shim_srx_unbind_ep(srx, ep, false);
		return ret;
	}
	/* Progress and msg.c read it without our lock. */
	shim_write_once(&ep->srx, srx);
	return 0;
}

/*
 * An STX (stx.c): flags 0; only on an endpoint opened with tx_ctx_cnt
 * FI_SHARED_CONTEXT, once (-FI_EINVAL otherwise).
 */
static int shim_ep_bind_stx(struct shim_ep *ep, struct fid *bfid,
			    uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	if (!ep->shared_tx || ep->stx)
		return -FI_EINVAL;
	return shim_stx_bind_ep(bfid, ep->domain, ep->caps & SHIM_TX_CAPS,
				&ep->stx);
}

/* An EQ is kept for the events endpoints will report; nothing is sent yet. */
static int shim_ep_bind_eq(struct shim_ep *ep, struct fid *bfid,
			   uint64_t flags)
{
	struct shim_eq *eq = shim_eq_from_fid(bfid);

	if (!eq)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (ep->eq)
		return -FI_EINVAL;
	shim_eq_bind(eq);
	ep->eq = eq;
	return 0;
}

static int shim_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct shim_ep *ep = container_of(fid, struct shim_ep, ep_fid.fid);
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	if (ep->sep)
		return shim_sep_bind(ep, bfid, flags);
	pthread_mutex_lock(&ep->lock);
	if (ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	switch (bfid->fclass) {
	case FI_CLASS_AV:
		/* A connected endpoint's AV is its own (cm.c). */
		ret = ep->conn ? -FI_EINVAL : shim_ep_bind_av(ep, bfid, flags);
		break;
	case FI_CLASS_CQ:
		ret = shim_ep_bind_cq(ep, bfid, flags);
		break;
	case FI_CLASS_CNTR:
		ret = shim_ep_bind_cntr(ep, bfid, flags);
		break;
	case FI_CLASS_EQ:
		ret = shim_ep_bind_eq(ep, bfid, flags);
		break;
	case FI_CLASS_SRX_CTX:
		ret = shim_ep_bind_srx(ep, bfid, flags);
		break;
	case FI_CLASS_STX_CTX:
		ret = shim_ep_bind_stx(ep, bfid, flags);
		break;
	default:
		/* fi_import_fid() of something kfab cannot import */
		ret = shim_is_import_only(bfid) ? -FI_ENOSYS : -FI_EINVAL;
		break;
	}
out:
	pthread_mutex_unlock(&ep->lock);
	if (ret)
		SHIM_INFO(EP_CTRL, "ep %u: bind of class %zu flags 0x%llx: %s\n",
			  ep->id, bfid->fclass, (unsigned long long)flags,
			  fi_strerror(-ret));
	return ret;
}

/* ---- enabling ---- */

/*
 * The directions the endpoint's caps need: FI_SEND/FI_RECV when given,
 * both when neither is (fi_getinfo(3)), none without a data transfer cap.
 */
static void shim_ep_directions(const struct shim_ep *ep, bool *tx, bool *rx)
{
	uint64_t dirs = ep->caps & (FI_SEND | FI_RECV);

	if (!(ep->caps & (FI_MSG | FI_TAGGED))) {
		*tx = *rx = false;
		return;
	}
	if (!dirs)
		dirs = FI_SEND | FI_RECV;
	*tx = dirs & FI_SEND;
	*rx = dirs & FI_RECV;
}

/*
 * fi_enable(): -FI_ENOAV without an AV, -FI_ENOCQ when a direction the
 * caps need has neither a CQ nor a counter ("not configured with the
 * necessary event queue", fi_endpoint(3)).  An SRX changes nothing there:
 * its receives complete on the endpoint's RX CQ or counter.  An endpoint
 * opened with rx_ctx_cnt (tx_ctx_cnt) FI_SHARED_CONTEXT without an SRX
 * (STX) bound is -FI_EOPBADSTATE ("If an endpoint is using a shared ...
 * receive context, the shared contexts must be bound to the endpoint",
 * fi_endpoint(3)).
 * The kernel refuses an SRX whose endpoints use different AVs (-EINVAL).
 * Enabling twice is harmless.
 */
static int shim_ep_enable(struct shim_ep *ep)
{
	bool tx, rx;
	int ret = 0;

	pthread_mutex_lock(&ep->lock);
	if (ep->enabled)
		goto out;
	if (!ep->av) {
		ret = -FI_ENOAV;
		goto out;
	}
	/* fi_endpoint(3): a connected endpoint reports on its EQ. */
	if (ep->conn && !ep->eq) {
		ret = -FI_ENOEQ;
		goto out;
	}
	shim_ep_directions(ep, &tx, &rx);
	if ((tx && !ep->tx_cq && !ep->tx_cntr) ||
	    (rx && !ep->rx_cq && !ep->rx_cntr)) {
		ret = -FI_ENOCQ;
		goto out;
	}
	if ((ep->shared_rx && !ep->srx) || (ep->shared_tx && !ep->stx)) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	/*
	 * FI_BUFFERED_RECV: the region (its own or its SRX's), before
	 * anything can arrive; an SRX's endpoints agree on the mode.
	 */
	ret = shim_bufrecv_setup(ep);
	if (ret)
		goto out;
	ret = shim_dev_ep_enable(ep->fd, ep->id);
	if (ret) {
		SHIM_WARN(EP_CTRL, "ep %u: KFAB_IOC_EP_ENABLE: %s\n", ep->id,
			  fi_strerror(-ret));
		goto out;
	}
	ep->enabled = true;
	/*
	 * Bound in each direction it uses: its CQs and counters progress it.
	 * Watched or not: while the poller is parked, the ring is lazy.
	 */
	shim_ring_watch(&ep->ring, ep->domain->fabric);
	shim_lazy_add(&ep->ring);
	if (ep->srx)
		shim_srx_ep_enabled(ep->srx, ep);
	if (ep->conn)
		shim_conn_enable(ep->conn, ep->eq);
out:
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/* ---- fi_control ---- */

/*
 * FI_GETOPSFLAG: the flags of the one direction *@flags names (exactly one
 * of FI_TRANSMIT and FI_RECV, else -FI_EINVAL), without the direction bit.
 */
int shim_opsflag_get(uint64_t *flags, uint64_t tx, uint64_t rx)
{
	uint64_t dir = *flags & (FI_TRANSMIT | FI_RECV);

	if (dir == FI_TRANSMIT)
		*flags = tx;
	else if (dir == FI_RECV)
		*flags = rx;
	else
		return -FI_EINVAL;
	return 0;
}

/*
 * FI_SETOPSFLAG (and fi_ep_alias()'s flags): @flags, without its
 * direction bit, into *@tx or *@rx as the direction says (exactly one of
 * FI_TRANSMIT and FI_RECV, else -FI_EINVAL).  msg.c reads them without a
 * lock: one store.
 */
int shim_opsflag_set(uint64_t flags, uint64_t *tx, uint64_t *rx)
{
	uint64_t dir = flags & (FI_TRANSMIT | FI_RECV);

	flags &= ~(uint64_t)(FI_TRANSMIT | FI_RECV);
	if (dir == FI_TRANSMIT)
		shim_write_once(tx, flags);
	else if (dir == FI_RECV)
		shim_write_once(rx, flags);
	else
		return -FI_EINVAL;
	return 0;
}

static int shim_ep_control(struct fid *fid, int command, void *arg)
{
	struct shim_ep *ep = container_of(fid, struct shim_ep, ep_fid.fid);
	int ret;

	switch (command) {
	case FI_GETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		pthread_mutex_lock(&ep->lock);
		ret = shim_opsflag_get(arg, ep->tx_op_flags, ep->rx_op_flags);
		pthread_mutex_unlock(&ep->lock);
		return ret;
	case FI_SETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		pthread_mutex_lock(&ep->lock);
		ret = shim_opsflag_set(*(uint64_t *)arg, &ep->tx_op_flags,
				       &ep->rx_op_flags);
		pthread_mutex_unlock(&ep->lock);
		return ret;
	case FI_ALIAS:
		return shim_ep_alias_open(ep, NULL, arg);
	case FI_ENABLE:
		return ep->sep ? shim_sep_enable(ep) : shim_ep_enable(ep);
	case FI_GET_VAL:
		return shim_get_kernel_handle(arg, ep->fd, ep->id);
	case FI_GETWAIT:	/* endpoints have no wait object */
	default:
		return -FI_ENOSYS;
	}
}

/* ---- closing ---- */

static void shim_ep_detach(struct shim_ep *ep)
{
	if (ep->tx_cq)
		shim_cq_detach_ep(ep->tx_cq, ep);
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
		shim_cq_detach_ep(ep->rx_cq, ep);
	if (ep->tx_cntr)
		shim_cntr_detach_ep(ep->tx_cntr, ep);
	if (ep->rx_cntr && ep->rx_cntr != ep->tx_cntr)
		shim_cntr_detach_ep(ep->rx_cntr, ep);
}

/* Undo shim_ep_detach() when the kernel refuses to destroy the endpoint. */
static void shim_ep_reattach(struct shim_ep *ep)
{
	if (ep->tx_cq)
		(void)shim_cq_attach_ep(ep->tx_cq, ep);
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
		(void)shim_cq_attach_ep(ep->rx_cq, ep);
	if (ep->tx_cntr)
		(void)shim_cntr_attach_ep(ep->tx_cntr, ep);
	if (ep->rx_cntr && ep->rx_cntr != ep->tx_cntr)
		(void)shim_cntr_attach_ep(ep->rx_cntr, ep);
}

static void shim_ep_free(struct shim_ep *ep)
{
	if (ep->conn)
		shim_conn_free(ep->conn);
	if (ep->sep)
		shim_sep_free(ep);
	shim_ring_unmap(&ep->ring);
	shim_bufrecv_free(ep);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}

/*
 * fi_close(): the CQs and counters stop progressing us first (their lists'
 * locks wait for a progress call that is running), then the kernel object
 * goes, which releases the bound objects in the kernel; then the library's
 * references.  A failed destroy changes nothing.
 */
static int shim_ep_close(struct fid *fid)
{
	struct shim_ep *ep = container_of(fid, struct shim_ep, ep_fid.fid);
	int ret;

	/* fi_endpoint(3): "All allocated aliases must be closed" first. */
	if (__atomic_load_n(&ep->alias_cnt, __ATOMIC_ACQUIRE))
		return -FI_EBUSY;
	/* fi_endpoint(3): a scalable endpoint's contexts go first. */
	if (ep->sep && shim_sep_busy(ep))
		return -FI_EBUSY;
	/* What a lazy ring holds still goes, before any SHUTDOWN. */
	if (ep->ring.lazy) {
		pthread_mutex_lock(&ep->lock);
		ep->ring.lazy = false;
		pthread_mutex_unlock(&ep->lock);
		shim_lazy_del(&ep->ring);
	}
	shim_ring_unwatch(&ep->ring);
	if (ep->enabled)
		shim_ep_progress(ep);
	/* The peer learns it first; the connection is over either way. */
	if (ep->conn)
		shim_conn_close(ep->conn);
	shim_ep_detach(ep);
	ret = shim_dev_destroy(ep->fd, ep->id);
	if (ret) {
		SHIM_WARN(EP_CTRL, "ep %u: KFAB_IOC_DESTROY: %s\n", ep->id,
			  fi_strerror(-ret));
		shim_ep_reattach(ep);
		return ret;
	}
	if (ep->av)
		shim_av_unbind_ep(ep->av);
	if (ep->srx)
		shim_srx_unbind_ep(ep->srx, ep, ep->enabled);
	if (ep->stx)
		shim_stx_unbind_ep(ep->stx);
	if (ep->eq)
		shim_eq_unbind(ep->eq);
	if (ep->parent)
		shim_sep_ctx_closed(ep);
	shim_ep_free(ep);
	return 0;
}

/* ---- names (fi_cm) ---- */

/*
 * fi_getname(): the address the kernel gave the endpoint, as a struct
 * kfab_addr, or its string form when the endpoint's addr_format is
 * FI_ADDR_STR (addr.c).  A short buffer gets what fits (a string keeps a
 * NUL) and -FI_ETOOSMALL, with *addrlen set to the size needed (fi_cm(3)).
 */
static int shim_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct shim_ep *ep = container_of(fid, struct shim_ep, ep_fid.fid);

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	return shim_addr_out(&ep->addr, ep->addr_format, addr, addrlen) ?
	       0 : -FI_ETOOSMALL;
}

/*
 * fi_setname(): the kernel names an endpoint when it creates it, and the
 * name cannot change.  fi_cm(3): "If no service address is specified and a
 * service address has not yet been assigned to the endpoint, then the
 * provider will allocate a service address" - ours always has one, so no
 * address (NULL, 0) is 0.  The endpoint's own address is 0 too, before or
 * after fi_enable(): it "will be assigned the given addressing", which it
 * has.  "If an address cannot be assigned, or the endpoint address cannot
 * be modified, an appropriate fabric error number is returned": any other
 * endpoint address is -FI_EADDRNOTAVAIL (fi_cm(3) likens fi_setname to
 * bind(2), whose answer for an address that is not the caller's is
 * EADDRNOTAVAIL); what is no endpoint address in the endpoint's
 * addr_format ("must match ... fi_info": a struct kfab_addr of
 * src_addrlen bytes, or an FI_ADDR_STR string) is -FI_EINVAL.
 */
static int shim_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct shim_ep *ep = container_of(fid, struct shim_ep, ep_fid.fid);
	struct kfab_addr want;

	if (!addr)
		return addrlen ? -FI_EINVAL : 0;
	if (!addrlen ||
	    shim_addr_in(addr, addrlen, ep->addr_format, SHIM_ADDR_EP, &want))
		return -FI_EINVAL;
	if (memcmp(&want, &ep->addr, sizeof(want)))
		return -FI_EADDRNOTAVAIL;
	return 0;
}

/* ---- struct fi_ops_ep ---- */

/*
 * fi_cancel: the kernel takes back the oldest posted receive with this
 * context, which then completes with FI_ECANCELED.  Requests still in the
 * ring are not posted yet, so the ring is run first.  Sends, and receives
 * that matched already, are not cancellable: -FI_ENOENT.
 */
static ssize_t shim_ep_cancel(fid_t fid, void *context)
{
	struct shim_ep *ep = container_of(fid, struct shim_ep, ep_fid.fid);

	if (!ep->enabled)
		return -FI_ENOENT;
	shim_ep_progress(ep);
	return shim_dev_cancel(ep->fd, ep->id, (uintptr_t)context);
}

/*
 * fi_getopt()/fi_setopt(), level FI_OPT_ENDPOINT: every option
 * fi_endpoint(3) lists (the rest, and other levels, -FI_ENOPROTOOPT).
 *
 *  FI_OPT_MIN_MULTI_RECV  size_t, read-write
 *  FI_OPT_CM_DATA_SIZE    size_t, read-only (-FI_EOPNOTSUPP to set):
 *                         SHIM_CM_DATA_MAX for FI_EP_MSG, 0 otherwise
 *                         (no connection data without connections)
 *  FI_OPT_BUFFERED_LIMIT, size_t: with FI_BUFFERED_RECV (bufrecv.c) the
 *  FI_OPT_BUFFERED_MIN    slot size, 1 to KFAB_BUFRECV_LIMIT_MAX and to
 *                         rx_attr->total_buffered_recv (the region has
 *                         total / limit slots), and a
 *                         minimum at most that; without it kfab buffers
 *                         nothing, so the largest threshold is 0.
 *                         SIZE_MAX is "the maximum supported", anything
 *                         larger -FI_EMSGSIZE, as the man page says; only
 *                         before fi_enable() (-FI_EOPBADSTATE).  An
 *                         endpoint of an SRX reports its SRX's region
 *                         once enabled (srx.c)
 *  FI_OPT_FI_HMEM_P2P     int: kfab moves host memory only, so there is
 *                         never a peer-to-peer transfer: ENABLED (the
 *                         default), PREFERRED and DISABLED are kept,
 *                         REQUIRED is -FI_EOPNOTSUPP, others -FI_EINVAL
 *  FI_OPT_XPU_TRIGGER     no device memory: -FI_EOPNOTSUPP
 *
 * A wrong optlen (or none, or no optval) is -FI_EINVAL; getopt sets
 * *optlen to the option's size.
 */
static int shim_ep_opt_len(const void *optval, size_t optlen, size_t want)
{
	return optval && optlen == want ? 0 : -FI_EINVAL;
}

static int shim_ep_getopt(fid_t fid, int level, int optname, void *optval,
			  size_t *optlen)
{
	struct shim_ep *ep = container_of(fid, struct shim_ep, ep_fid.fid);
	size_t want = sizeof(size_t), val = 0;
	int p2p;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
	case FI_OPT_CM_DATA_SIZE:
	case FI_OPT_BUFFERED_LIMIT:
	case FI_OPT_BUFFERED_MIN:
		break;
	case FI_OPT_FI_HMEM_P2P:
		want = sizeof(int);
		break;
	case FI_OPT_XPU_TRIGGER:
		return -FI_EOPNOTSUPP;
	default:
		return -FI_ENOPROTOOPT;
	}
	if (!optval || !optlen || *optlen < want)
		return -FI_EINVAL;
	if (optname == FI_OPT_CM_DATA_SIZE && ep->conn)
		return shim_ep_msg_getopt(fid, level, optname, optval, optlen);
	pthread_mutex_lock(&ep->lock);
	if (optname == FI_OPT_MIN_MULTI_RECV)
		val = ep->min_multi_recv;
	else if (optname == FI_OPT_BUFFERED_LIMIT)
		val = ep->buffered_limit;
	else if (optname == FI_OPT_BUFFERED_MIN)
		val = ep->buffered_min;
	p2p = ep->hmem_p2p;
	pthread_mutex_unlock(&ep->lock);
	if (optname == FI_OPT_FI_HMEM_P2P)
		*(int *)optval = p2p;
	else
		*(size_t *)optval = val;
	*optlen = want;
	return 0;
}

/*
 * FI_OPT_BUFFERED_LIMIT/MIN.  Without FI_BUFFERED_RECV: 0, or SIZE_MAX
 * for the most kfab has there (0).  With it: the limit 1 to
 * KFAB_BUFRECV_LIMIT_MAX and at most rx_attr->total_buffered_recv, so
 * the region keeps to its total (SIZE_MAX: the largest such), the
 * minimum at most the limit (a notice always holds the limit's bytes);
 * else -FI_EMSGSIZE.
 */
static int shim_ep_set_buffered(struct shim_ep *ep, size_t *field, size_t val)
{
	size_t max = ep->buffered ? KFAB_BUFRECV_LIMIT_MAX : 0;

	if (max > ep->buffered_total)
		max = ep->buffered_total;

	if (field == &ep->buffered_min && ep->buffered)
		max = ep->buffered_limit;
	if (val == SIZE_MAX)
		val = max;
	if (val > max || (ep->buffered && !val &&
			  field == &ep->buffered_limit))
		return -FI_EMSGSIZE;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	*field = val;
	if (ep->buffered_min > ep->buffered_limit)
		ep->buffered_min = ep->buffered_limit;
	return 0;
}

static int shim_ep_set_p2p(struct shim_ep *ep, int val)
{
	switch (val) {
	case FI_HMEM_P2P_ENABLED:
	case FI_HMEM_P2P_PREFERRED:
	case FI_HMEM_P2P_DISABLED:
		ep->hmem_p2p = val;
		return 0;
	case FI_HMEM_P2P_REQUIRED:
		return -FI_EOPNOTSUPP;
	default:
		return -FI_EINVAL;
	}
}

static int shim_ep_setopt(fid_t fid, int level, int optname,
			  const void *optval, size_t optlen)
{
	struct shim_ep *ep = container_of(fid, struct shim_ep, ep_fid.fid);
	int ret;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
	case FI_OPT_BUFFERED_LIMIT:
	case FI_OPT_BUFFERED_MIN:
		ret = shim_ep_opt_len(optval, optlen, sizeof(size_t));
		break;
	case FI_OPT_FI_HMEM_P2P:
		ret = shim_ep_opt_len(optval, optlen, sizeof(int));
		break;
	case FI_OPT_CM_DATA_SIZE:	/* read-only */
	case FI_OPT_XPU_TRIGGER:	/* getopt only */
		return -FI_EOPNOTSUPP;
	default:
		return -FI_ENOPROTOOPT;
	}
	if (ret)
		return ret;
	pthread_mutex_lock(&ep->lock);
	if (optname == FI_OPT_MIN_MULTI_RECV)
		ep->min_multi_recv = *(const size_t *)optval;
	else if (optname == FI_OPT_BUFFERED_LIMIT)
		ret = shim_ep_set_buffered(ep, &ep->buffered_limit,
					   *(const size_t *)optval);
	else if (optname == FI_OPT_BUFFERED_MIN)
		ret = shim_ep_set_buffered(ep, &ep->buffered_min,
					   *(const size_t *)optval);
	else
		ret = shim_ep_set_p2p(ep, *(const int *)optval);
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/* fi_tx_context(), fi_rx_context(): a scalable endpoint's only (sep.c). */
static int shim_ep_tx_ctx(struct fid_ep *sep, int index,
			  struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			  void *context)
{
	struct shim_ep *ep = to_shim_ep(sep);

	if (!ep->sep)
		return -FI_ENOSYS;
	return shim_sep_tx_context(ep, index, attr, tx_ep, context);
}

static int shim_ep_rx_ctx(struct fid_ep *sep, int index,
			  struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			  void *context)
{
	struct shim_ep *ep = to_shim_ep(sep);

	if (!ep->sep)
		return -FI_ENOSYS;
	return shim_sep_rx_context(ep, index, attr, rx_ep, context);
}

/* Sends and receives share one ring: both answer its free slots. */
static ssize_t shim_ep_rx_size_left(struct fid_ep *ep_fid)
{
	struct shim_ep *ep = to_shim_ep(ep_fid);

	/* Its receive context is the SRX: see shim_post_recv() in msg.c. */
	if (shim_read_once(&ep->srx))
		return -FI_EOPBADSTATE;
	return shim_ep_ring_space(ep);
}

static ssize_t shim_ep_tx_size_left(struct fid_ep *ep)
{
	return shim_ep_ring_space(to_shim_ep(ep));
}

/* ---- RMA: none ---- */

static ssize_t shim_rma_read(struct fid_ep *ep, void *buf, size_t len,
			     void *desc, fi_addr_t src_addr, uint64_t addr,
			     uint64_t key, void *context)
{
	(void)ep; (void)buf; (void)len; (void)desc; (void)src_addr;
	(void)addr; (void)key; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_rma_readv(struct fid_ep *ep, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t src_addr,
			      uint64_t addr, uint64_t key, void *context)
{
	(void)ep; (void)iov; (void)desc; (void)count; (void)src_addr;
	(void)addr; (void)key; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
				uint64_t flags)
{
	(void)ep; (void)msg; (void)flags;
	return -FI_ENOSYS;
}

static ssize_t shim_rma_write(struct fid_ep *ep, const void *buf, size_t len,
			      void *desc, fi_addr_t dest_addr, uint64_t addr,
			      uint64_t key, void *context)
{
	(void)ep; (void)buf; (void)len; (void)desc; (void)dest_addr;
	(void)addr; (void)key; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_rma_writev(struct fid_ep *ep, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t dest_addr,
			       uint64_t addr, uint64_t key, void *context)
{
	(void)ep; (void)iov; (void)desc; (void)count; (void)dest_addr;
	(void)addr; (void)key; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_rma_writemsg(struct fid_ep *ep,
				 const struct fi_msg_rma *msg, uint64_t flags)
{
	(void)ep; (void)msg; (void)flags;
	return -FI_ENOSYS;
}

static ssize_t shim_rma_inject(struct fid_ep *ep, const void *buf, size_t len,
			       fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	(void)ep; (void)buf; (void)len; (void)dest_addr; (void)addr; (void)key;
	return -FI_ENOSYS;
}

static ssize_t shim_rma_writedata(struct fid_ep *ep, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest_addr, uint64_t addr,
				  uint64_t key, void *context)
{
	(void)ep; (void)buf; (void)len; (void)desc; (void)data;
	(void)dest_addr; (void)addr; (void)key; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_rma_injectdata(struct fid_ep *ep, const void *buf,
				   size_t len, uint64_t data,
				   fi_addr_t dest_addr, uint64_t addr,
				   uint64_t key)
{
	(void)ep; (void)buf; (void)len; (void)data; (void)dest_addr;
	(void)addr; (void)key;
	return -FI_ENOSYS;
}

/* ---- atomics: none ---- */

static ssize_t shim_atomic_write(struct fid_ep *ep, const void *buf,
				 size_t count, void *desc, fi_addr_t dest_addr,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	(void)ep; (void)buf; (void)count; (void)desc; (void)dest_addr;
	(void)addr; (void)key; (void)datatype; (void)op; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov,
				  void **desc, size_t count,
				  fi_addr_t dest_addr, uint64_t addr,
				  uint64_t key, enum fi_datatype datatype,
				  enum fi_op op, void *context)
{
	(void)ep; (void)iov; (void)desc; (void)count; (void)dest_addr;
	(void)addr; (void)key; (void)datatype; (void)op; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_atomic_writemsg(struct fid_ep *ep,
				    const struct fi_msg_atomic *msg,
				    uint64_t flags)
{
	(void)ep; (void)msg; (void)flags;
	return -FI_ENOSYS;
}

static ssize_t shim_atomic_inject(struct fid_ep *ep, const void *buf,
				  size_t count, fi_addr_t dest_addr,
				  uint64_t addr, uint64_t key,
				  enum fi_datatype datatype, enum fi_op op)
{
	(void)ep; (void)buf; (void)count; (void)dest_addr; (void)addr;
	(void)key; (void)datatype; (void)op;
	return -FI_ENOSYS;
}

static ssize_t shim_atomic_readwrite(struct fid_ep *ep, const void *buf,
				     size_t count, void *desc, void *result,
				     void *result_desc, fi_addr_t dest_addr,
				     uint64_t addr, uint64_t key,
				     enum fi_datatype datatype, enum fi_op op,
				     void *context)
{
	(void)ep; (void)buf; (void)count; (void)desc; (void)result;
	(void)result_desc; (void)dest_addr; (void)addr; (void)key;
	(void)datatype; (void)op; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_atomic_readwritev(struct fid_ep *ep,
				      const struct fi_ioc *iov, void **desc,
				      size_t count, struct fi_ioc *resultv,
				      void **result_desc, size_t result_count,
				      fi_addr_t dest_addr, uint64_t addr,
				      uint64_t key, enum fi_datatype datatype,
				      enum fi_op op, void *context)
{
	(void)ep; (void)iov; (void)desc; (void)count; (void)resultv;
	(void)result_desc; (void)result_count; (void)dest_addr; (void)addr;
	(void)key; (void)datatype; (void)op; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_atomic_readwritemsg(struct fid_ep *ep,
					const struct fi_msg_atomic *msg,
					struct fi_ioc *resultv,
					void **result_desc,
					size_t result_count, uint64_t flags)
{
	(void)ep; (void)msg; (void)resultv; (void)result_desc;
	(void)result_count; (void)flags;
	return -FI_ENOSYS;
}

static ssize_t shim_atomic_compwrite(struct fid_ep *ep, const void *buf,
				     size_t count, void *desc,
				     const void *compare, void *compare_desc,
				     void *result, void *result_desc,
				     fi_addr_t dest_addr, uint64_t addr,
				     uint64_t key, enum fi_datatype datatype,
				     enum fi_op op, void *context)
{
	(void)ep; (void)buf; (void)count; (void)desc; (void)compare;
	(void)compare_desc; (void)result; (void)result_desc;
	(void)dest_addr; (void)addr; (void)key; (void)datatype; (void)op;
	(void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_atomic_compwritev(struct fid_ep *ep,
				      const struct fi_ioc *iov, void **desc,
				      size_t count,
				      const struct fi_ioc *comparev,
				      void **compare_desc,
				      size_t compare_count,
				      struct fi_ioc *resultv,
				      void **result_desc, size_t result_count,
				      fi_addr_t dest_addr, uint64_t addr,
				      uint64_t key, enum fi_datatype datatype,
				      enum fi_op op, void *context)
{
	(void)ep; (void)iov; (void)desc; (void)count; (void)comparev;
	(void)compare_desc; (void)compare_count; (void)resultv;
	(void)result_desc; (void)result_count; (void)dest_addr; (void)addr;
	(void)key; (void)datatype; (void)op; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_atomic_compwritemsg(struct fid_ep *ep,
					const struct fi_msg_atomic *msg,
					const struct fi_ioc *comparev,
					void **compare_desc,
					size_t compare_count,
					struct fi_ioc *resultv,
					void **result_desc,
					size_t result_count, uint64_t flags)
{
	(void)ep; (void)msg; (void)comparev; (void)compare_desc;
	(void)compare_count; (void)resultv; (void)result_desc;
	(void)result_count; (void)flags;
	return -FI_ENOSYS;
}

/* fi_atomic(3): "not supported" is -FI_EOPNOTSUPP for the valid queries. */
static int shim_atomic_valid(struct fid_ep *ep, enum fi_datatype datatype,
			     enum fi_op op, size_t *count)
{
	(void)ep; (void)datatype; (void)op; (void)count;
	return -FI_EOPNOTSUPP;
}

/* ---- collectives: none ---- */

static ssize_t shim_coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
				 void *context)
{
	(void)ep; (void)coll_addr; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
				  uint64_t flags, void *context)
{
	(void)ep; (void)coll_addr; (void)flags; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_coll_broadcast(struct fid_ep *ep, void *buf, size_t count,
				   void *desc, fi_addr_t coll_addr,
				   fi_addr_t root_addr,
				   enum fi_datatype datatype, uint64_t flags,
				   void *context)
{
	(void)ep; (void)buf; (void)count; (void)desc; (void)coll_addr;
	(void)root_addr; (void)datatype; (void)flags; (void)context;
	return -FI_ENOSYS;
}

/* alltoall and allgather */
static ssize_t shim_coll_exchange(struct fid_ep *ep, const void *buf,
				  size_t count, void *desc, void *result,
				  void *result_desc, fi_addr_t coll_addr,
				  enum fi_datatype datatype, uint64_t flags,
				  void *context)
{
	(void)ep; (void)buf; (void)count; (void)desc; (void)result;
	(void)result_desc; (void)coll_addr; (void)datatype; (void)flags;
	(void)context;
	return -FI_ENOSYS;
}

/* allreduce and reduce_scatter */
static ssize_t shim_coll_reduce_all(struct fid_ep *ep, const void *buf,
				    size_t count, void *desc, void *result,
				    void *result_desc, fi_addr_t coll_addr,
				    enum fi_datatype datatype, enum fi_op op,
				    uint64_t flags, void *context)
{
	(void)ep; (void)buf; (void)count; (void)desc; (void)result;
	(void)result_desc; (void)coll_addr; (void)datatype; (void)op;
	(void)flags; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_coll_reduce(struct fid_ep *ep, const void *buf,
				size_t count, void *desc, void *result,
				void *result_desc, fi_addr_t coll_addr,
				fi_addr_t root_addr, enum fi_datatype datatype,
				enum fi_op op, uint64_t flags, void *context)
{
	(void)ep; (void)buf; (void)count; (void)desc; (void)result;
	(void)result_desc; (void)coll_addr; (void)root_addr; (void)datatype;
	(void)op; (void)flags; (void)context;
	return -FI_ENOSYS;
}

/* scatter and gather */
static ssize_t shim_coll_rooted(struct fid_ep *ep, const void *buf,
				size_t count, void *desc, void *result,
				void *result_desc, fi_addr_t coll_addr,
				fi_addr_t root_addr, enum fi_datatype datatype,
				uint64_t flags, void *context)
{
	(void)ep; (void)buf; (void)count; (void)desc; (void)result;
	(void)result_desc; (void)coll_addr; (void)root_addr; (void)datatype;
	(void)flags; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_coll_msg(struct fid_ep *ep,
			     const struct fi_msg_collective *msg,
			     struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, uint64_t flags)
{
	(void)ep; (void)msg; (void)resultv; (void)result_desc;
	(void)result_count; (void)flags;
	return -FI_ENOSYS;
}

/* ---- the tables ---- */

static const struct fi_ops shim_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_ep_close,
	.bind = shim_ep_bind,
	.control = shim_ep_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

static const struct fi_ops_ep shim_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = shim_ep_cancel,
	.getopt = shim_ep_getopt,
	.setopt = shim_ep_setopt,
	.tx_ctx = shim_ep_tx_ctx,
	.rx_ctx = shim_ep_rx_ctx,
	.rx_size_left = shim_ep_rx_size_left,
	.tx_size_left = shim_ep_tx_size_left,
};

/* RDM endpoints have no single peer and no connections. */
static const struct fi_ops_cm shim_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = shim_ep_setname,
	.getname = shim_ep_getname,
	.getpeer = shim_no_getpeer,
	.connect = shim_no_connect,
	.listen = shim_no_listen,
	.accept = shim_no_accept,
	.reject = shim_no_reject,
	.shutdown = shim_no_shutdown,
	.join = shim_no_join,
};

/* FI_EP_MSG endpoints: one peer, fixed by fi_connect() or fi_accept(). */
static const struct fi_ops_cm shim_ep_msg_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = shim_ep_setname,
	.getname = shim_ep_getname,
	.getpeer = shim_conn_getpeer,
	.connect = shim_conn_connect,
	.listen = shim_no_listen,
	.accept = shim_conn_accept,
	.reject = shim_no_reject,
	.shutdown = shim_conn_shutdown,
	.join = shim_no_join,
};

const struct fi_ops_rma shim_ep_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = shim_rma_read,
	.readv = shim_rma_readv,
	.readmsg = shim_rma_readmsg,
	.write = shim_rma_write,
	.writev = shim_rma_writev,
	.writemsg = shim_rma_writemsg,
	.inject = shim_rma_inject,
	.writedata = shim_rma_writedata,
	.injectdata = shim_rma_injectdata,
};

const struct fi_ops_atomic shim_ep_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = shim_atomic_write,
	.writev = shim_atomic_writev,
	.writemsg = shim_atomic_writemsg,
	.inject = shim_atomic_inject,
	.readwrite = shim_atomic_readwrite,
	.readwritev = shim_atomic_readwritev,
	.readwritemsg = shim_atomic_readwritemsg,
	.compwrite = shim_atomic_compwrite,
	.compwritev = shim_atomic_compwritev,
	.compwritemsg = shim_atomic_compwritemsg,
	.writevalid = shim_atomic_valid,
	.readwritevalid = shim_atomic_valid,
	.compwritevalid = shim_atomic_valid,
};

const struct fi_ops_collective shim_ep_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = shim_coll_barrier,
	.broadcast = shim_coll_broadcast,
	.alltoall = shim_coll_exchange,
	.allreduce = shim_coll_reduce_all,
	.allgather = shim_coll_exchange,
	.reduce_scatter = shim_coll_reduce_all,
	.reduce = shim_coll_reduce,
	.scatter = shim_coll_rooted,
	.gather = shim_coll_rooted,
	.msg = shim_coll_msg,
	.barrier2 = shim_coll_barrier2,
};

/* ---- opening ---- */

/*
 * The ring's size: tx + rx queue sizes, rounded up to a power of two.  An
 * endpoint opened for a shared receive context posts no receives of its
 * own: tx alone (fi_endpoint(3) leaves rx_attr->size to the SRX then).
 */
static uint32_t shim_ep_sq_entries(const struct fi_info *info, bool shared_rx)
{
	uint64_t want = 0;

	if (info->tx_attr)
		want += info->tx_attr->size;
	if (info->rx_attr && !shared_rx)
		want += info->rx_attr->size;
	return shim_ring_entries(want);
}

/**
 * shim_endpoint() - struct fi_ops_domain.endpoint: fi_endpoint() for kfab
 * @domain: a kfab domain
 * @info: an fi_info kfab answered (or hints it accepts): FI_EP_RDM only
 * @ep_fid: out: the new endpoint, not enabled
 * @context: the application's context for the fid
 *
 * The endpoint gets @info->src_addr when it has one (a service, a node's
 * listener; fi_getinfo() with FI_SOURCE), else an address the module picks.
 *
 * Return: 0; -FI_EINVAL without @info or @ep_fid, or for a src_addr that
 * is no source address in @info's addr_format; -FI_ENOPROTOOPT for an
 * endpoint type other than FI_EP_RDM; -FI_ENODATA when @info asks for what
 * kfab does not offer; -FI_ENOMEM; or the kernel's -errno
 * (-FI_EADDRINUSE: the service is taken on that node; -FI_EADDRNOTAVAIL:
 * the node has no such listener).
 */
int shim_endpoint(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **ep_fid, void *context)
{
	const struct fi_ep_attr *a = info ? info->ep_attr : NULL;

	/* More than one context is fi_scalable_ep()'s (sep.c). */
	if (a && ((a->tx_ctx_cnt > 1 && a->tx_ctx_cnt != FI_SHARED_CONTEXT) ||
		  (a->rx_ctx_cnt > 1 && a->rx_ctx_cnt != FI_SHARED_CONTEXT)))
		return -FI_EINVAL;
	return shim_ep_open(domain, info, ep_fid, context, NULL);
}

/*
 * shim_endpoint() with @block's KFAB_EP_OPEN_* flags and block fields
 * (a scalable endpoint's anchor or context, sep.c), or none.
 */
int shim_ep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep_fid, void *context,
		 const struct kfab_ep_open *block)
{
	struct shim_domain *dom = to_shim_domain(domain);
	struct kfab_ep_open cmd = { 0 };
	struct shim_ep *ep;
	bool msg;
	int ret;

	if (!info || !ep_fid)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type != FI_EP_UNSPEC &&
	    info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_MSG &&
	    info->ep_attr->type != FI_EP_DGRAM)
		return -FI_ENOPROTOOPT;
	ret = shim_info_check(info);
	if (ret)
		return ret;
	msg = info->ep_attr && info->ep_attr->type == FI_EP_MSG;
	/* A connected endpoint's AV is its own: no SRX can be shared. */
	if (msg && info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT)
		return -FI_ENODATA;
	/* The address wanted (fi_getinfo()'s src_addr), or any. */
	if (info->src_addr &&
	    shim_addr_in(info->src_addr, info->src_addrlen, info->addr_format,
			 SHIM_ADDR_SRC, &cmd.src)) {
		SHIM_INFO(EP_CTRL, "src_addr is no source address of kfab's\n");
		return -FI_EINVAL;
	}

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ret = -pthread_mutex_init(&ep->lock, NULL);
	if (ret) {
		free(ep);
		return ret;
	}
	ep->domain = dom;
	ep->fd = dom->fabric->fd;
	ep->type = info->ep_attr && info->ep_attr->type ? info->ep_attr->type :
							  FI_EP_RDM;
	ep->max_msg_size = ep->type == FI_EP_DGRAM ? SHIM_DGRAM_MAX_MSG_SIZE :
						     SHIM_MAX_MSG_SIZE;
	if (info->ep_attr && info->ep_attr->max_msg_size > ep->max_msg_size) {
		ret = -FI_ENODATA;
		goto err_free;
	}
	ep->addr_format = info->addr_format;
	ep->caps = info->caps ? info->caps : SHIM_EP_DEFAULT_CAPS;
	ep->shared_rx = info->ep_attr &&
			info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT;
	ep->shared_tx = info->ep_attr &&
			info->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT;
	if (info->tx_attr)
		ep->tx_op_flags = info->tx_attr->op_flags;
	if (info->rx_attr)
		ep->rx_op_flags = info->rx_attr->op_flags;
	/*
	 * FI_BUFFERED_RECV or FI_VARIABLE_MSG: an RDM endpoint, or a
	 * scalable endpoint's receive context, with a receive context of
	 * its own (bufrecv.c); fi_msg(3) gives both the same behaviour.  Its
	 * region holds rx_attr->total_buffered_recv bytes.
	 */
	ep->buffered = (!block || block->flags == KFAB_EP_OPEN_JOIN) &&
		       ep->type == FI_EP_RDM &&
		       (shim_info_buffered(info) ||
			(ep->caps & FI_VARIABLE_MSG));
	if (ep->buffered) {
		ep->buffered_total = info->rx_attr &&
				     info->rx_attr->total_buffered_recv ?
				     info->rx_attr->total_buffered_recv :
				     SHIM_BUFRECV_TOTAL_DEFAULT;
		ep->buffered_limit =
			shim_bufrecv_default_limit(ep->buffered_total);
	}
	ep->buffered_min = ep->buffered_limit;

	cmd.domain_id = dom->id;
	cmd.type = KFAB_EP_TYPE_RDM;
	if (block) {
		cmd.flags = block->flags;
		cmd.block_ep_id = block->block_ep_id;
		cmd.block_index = block->block_index;
	}
	cmd.sq_entries = shim_ep_sq_entries(info, ep->shared_rx);
	ret = shim_dev_ep_open(ep->fd, &cmd);
	if (ret) {
		SHIM_WARN(EP_CTRL, "KFAB_IOC_EP_OPEN: %s\n", fi_strerror(-ret));
		goto err_free;
	}
	ep->id = cmd.out_ep_id;
	ep->addr = cmd.out_addr;
	ret = shim_ring_map(&ep->ring, ep->fd, ep->id, &cmd.out_sq);
	if (ret) {
		SHIM_WARN(EP_CTRL, "ep %u: mapping the ring: %s\n", ep->id,
			  fi_strerror(-ret));
		shim_dev_destroy(ep->fd, ep->id);
		goto err_free;
	}
	if (msg) {
		ret = shim_conn_open(ep, domain, info, &ep->conn);
		if (!ret)
			ret = shim_ep_bind_av(ep, shim_conn_av(ep->conn), 0);
		if (ret)
			goto err_destroy;
	}

	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = (struct fi_ops *)&shim_ep_fi_ops;
	ep->ep_fid.ops = (struct fi_ops_ep *)&shim_ep_ops;
	ep->ep_fid.cm = (struct fi_ops_cm *)(msg ? &shim_ep_msg_cm_ops :
						    &shim_ep_cm_ops);
	ep->ep_fid.msg = (struct fi_ops_msg *)&shim_ep_msg_ops;
	ep->ep_fid.rma = (struct fi_ops_rma *)&shim_ep_rma_ops;
	ep->ep_fid.tagged = (struct fi_ops_tagged *)&shim_ep_tagged_ops;
	ep->ep_fid.atomic = (struct fi_ops_atomic *)&shim_ep_atomic_ops;
	ep->ep_fid.collective =
		(struct fi_ops_collective *)&shim_ep_collective_ops;
	*ep_fid = &ep->ep_fid;
	SHIM_DBG(EP_CTRL, "ep %u: %u ring entries\n", ep->id,
		 ep->ring.entries);
	return 0;

err_destroy:
	if (ep->conn)
		shim_conn_close(ep->conn);
	shim_dev_destroy(ep->fd, ep->id);
	if (ep->av)
		shim_av_unbind_ep(ep->av);
err_free:
	shim_ep_free(ep);
	return ret;
}

/*
 * fi_endpoint2(): flags 0 is fi_endpoint().  FI_PEER_TRANSFER (fi_peer(3)):
 * @context is the owner's struct fi_peer_transfer_context (peer/av.c);
 * any other flag is -FI_EBADFLAGS.
 */
int shim_endpoint2(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, uint64_t flags, void *context)
{
	int ret;

	if (flags == FI_PEER_TRANSFER) {
		if (!info || !ep)
			return -FI_EINVAL;
		ret = shim_ep_peer_transfer(info, context);
		return ret ? ret : shim_endpoint(domain, info, ep, NULL);
	}
	if (flags) {
		SHIM_INFO(EP_CTRL, "fi_endpoint2 flags 0x%llx not supported\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	return shim_endpoint(domain, info, ep, context);
}
