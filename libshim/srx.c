// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: shared receive contexts, fi_srx_context() (fi_endpoint(3),
 * "Shared contexts").  An SRX is a kernel object (KFAB_IOC_SRX_OPEN) with
 * matching lists of its own and a submission ring that takes receives
 * only; the application posts fi_recv*()/fi_trecv*() to it (msg.c builds
 * the entries, ring.c writes them), and endpoints bound to it before
 * fi_enable() post none of their own.  Messages sent to any of its
 * endpoints match its receives in the order posted; each completes on the
 * CQ and counter of the endpoint the message was sent to.  The kernel
 * wants every endpoint of an SRX on the same AV object (fi_endpoint(3):
 * "all connectionless endpoints associated with a shared receive context
 * must also share the same address vector") and refuses fi_enable()
 * otherwise.
 *
 * The library keeps three counts under srx->lock: endpoints bound (the
 * SRX refuses fi_close() while there are any), the enabled ones (the
 * kernel takes the SRX's doorbell only with one: receives posted before
 * wait, published, in the ring and go in when the first endpoint is
 * enabled), and those whose RX CQ asked for selective completions.
 *
 * Locking: an endpoint's lock is taken before its SRX's, never the other
 * way.  Progress takes neither.
 *
 * FI_BUFFERED_RECV (bufrecv.c): the SRX's first endpoint enabled decides
 * whether it buffers; if so the region is the SRX's, made then, and
 * shared by all its endpoints.
 *
 * fi_peer(3) (peer/srx.c) takes an SRX's receives over when it is opened
 * with FI_PEER or exported: srx->hooks, called at the points below.
 *
 * Documentation/ep.rst ("Shared receive contexts") has the long form.
 */
#include <stdlib.h>
#include <string.h>

#include "barrier.h"
#include "internal.h"

static const struct fi_ops shim_srx_fi_ops;

/* The SRX's fi_peer(3) hooks, or NULL: its receives are the kernel's. */
static const struct shim_srx_hooks *shim_srx_hooks(struct shim_srx *srx)
{
	return shim_load_acquire(&srx->hooks);
}

void shim_srx_set_hooks(struct shim_srx *srx,
			const struct shim_srx_hooks *hooks, void *peer)
{
	srx->peer = peer;
	/* Published after @peer: the data path reads without the lock. */
	shim_store_release(&srx->hooks, hooks);
}

struct shim_srx *shim_srx_from_fid(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_SRX_CTX ||
	    fid->ops != &shim_srx_fi_ops)
		return NULL;
	return container_of(fid, struct shim_srx, ep_fid.fid);
}

/* ---- the endpoints of an SRX ---- */

int shim_srx_bind_ep(struct shim_srx *srx, struct shim_ep *ep)
{
	uint64_t ep_caps = ep->caps & SHIM_SRX_SUBSET_CAPS;

	/* fi_endpoint(3) -FI_EDOMAIN: "an attempt ... to bind multiple domains" */
	if (srx->domain != ep->domain)
		return -FI_EDOMAIN;
	/* "must use a subset of the receive context's attributes" */
	if (ep_caps & ~srx->caps) {
		SHIM_INFO(EP_CTRL, "ep %u: receive caps 0x%llx not all in srx %u's 0x%llx\n",
			  ep->id, (unsigned long long)ep_caps, srx->id,
			  (unsigned long long)srx->caps);
		return -FI_EINVAL;
	}
	pthread_mutex_lock(&srx->lock);
	srx->bound++;
	pthread_mutex_unlock(&srx->lock);
	return 0;
}

void shim_srx_ep_enabled(struct shim_srx *srx, struct shim_ep *ep)
{
	pthread_mutex_lock(&srx->lock);
	shim_write_once(&srx->live, srx->live + 1);
	if (ep->rx_selective)
		shim_write_once(&srx->live_selective, srx->live_selective + 1);
	if (srx->hooks)
		srx->hooks->ep_enabled(srx, ep);
	/* From the first endpoint on, the kernel takes its receives. */
	if (srx->live == 1 && !srx->ring.watched)
		shim_ring_watch(&srx->ring, srx->domain->fabric);
	/*
	 * Lazy like its endpoints' rings: a window of receives without
	 * FI_MORE costs one system call at the next progress call, not one
	 * each.  Oldest due rings first, so receives reposted before a send
	 * on an endpoint are in the kernel before it.
	 */
	shim_lazy_add(&srx->ring);
	/* Receives posted while no endpoint was enabled go in now. */
	if (shim_ring_space(&srx->ring) != srx->ring.entries)
		shim_ring_flush(&srx->ring);
	pthread_mutex_unlock(&srx->lock);
}

void shim_srx_unbind_ep(struct shim_srx *srx, struct shim_ep *ep,
			bool was_enabled)
{
	if (srx->hooks)
		srx->hooks->ep_unbound(srx, ep);
	pthread_mutex_lock(&srx->lock);
	srx->bound--;
	if (was_enabled) {
		shim_write_once(&srx->live, srx->live - 1);
		if (ep->rx_selective)
			shim_write_once(&srx->live_selective,
					srx->live_selective - 1);
	}
	pthread_mutex_unlock(&srx->lock);
}

/* ---- buffered receives ---- */

int shim_srx_bufrecv_join(struct shim_srx *srx, struct shim_ep *ep)
{
	struct shim_bufrecv *br = NULL;
	size_t limit, total;
	int ret = 0;

	pthread_mutex_lock(&srx->lock);
	if (srx->mode_set) {
		if (srx->buffered != ep->buffered) {
			SHIM_INFO(EP_CTRL, "ep %u: FI_BUFFERED_RECV %s, srx %u's endpoints %s\n",
				  ep->id, ep->buffered ? "set" : "not set",
				  srx->id, srx->buffered ? "have it" : "do not");
			ret = -FI_EINVAL;
		}
		goto out;
	}
	if (ep->buffered) {
		/* fi_peer(3) matches in the library: nothing to buffer into. */
		if (srx->hooks) {
			ret = -FI_EOPNOTSUPP;
			goto out;
		}
		limit = srx->buffered_limit ? srx->buffered_limit :
					      ep->buffered_limit;
		total = srx->buffered_total ? srx->buffered_total :
					      ep->buffered_total;
		ret = shim_bufrecv_setup_srx(srx, limit, total, &br);
		if (ret)
			goto out;
		/* Published before any endpoint is enabled: msg.c reads it. */
		shim_store_release(&srx->bufrecv, br);
	}
	srx->mode_set = true;
	srx->buffered = ep->buffered;
out:
	/* The endpoint's options report the region's. */
	if (!ret && srx->bufrecv) {
		ep->buffered_limit = shim_bufrecv_limit(srx->bufrecv);
		if (srx->buffered_min)
			ep->buffered_min = srx->buffered_min;
		if (ep->buffered_min > ep->buffered_limit)
			ep->buffered_min = ep->buffered_limit;
	}
	pthread_mutex_unlock(&srx->lock);
	return ret;
}

struct shim_bufrecv *shim_srx_bufrecv(struct shim_srx *srx)
{
	return shim_load_acquire(&srx->bufrecv);
}

/*
 * A receive of the SRX completes on whichever endpoint the message was
 * sent to, so its success is left out only when every enabled endpoint
 * bound its RX CQ with FI_SELECTIVE_COMPLETION.  Read without the lock:
 * a receive posted while an endpoint is being enabled or closed may ask
 * for one completion more than needed, never one fewer than wanted by an
 * endpoint that was enabled before it was posted.
 */
bool shim_srx_selective(struct shim_srx *srx)
{
	unsigned int live = shim_read_once(&srx->live);

	return live && shim_read_once(&srx->live_selective) == live;
}

ssize_t shim_srx_post(struct shim_srx *srx, const struct kfab_sqe *sqe,
		      bool more)
{
	const struct shim_srx_hooks *hooks = shim_srx_hooks(srx);
	ssize_t ret;

	/* fi_peer(3): receives matched in the library. */
	if (hooks)
		return hooks->post(srx, sqe);
	shim_data_lock(&srx->lock, srx->domain->serial);
	ret = shim_ring_post(&srx->ring, sqe, more,
			     srx->live > 0 ? SHIM_BELL_LAZY : SHIM_BELL_NONE);
	shim_data_unlock(&srx->lock, srx->domain->serial);
	return ret;
}

/* Before an endpoint is enabled the kernel would refuse the doorbell. */
bool shim_srx_progress(struct shim_srx *srx)
{
	if (!shim_read_once(&srx->live))
		return false;
	return shim_ring_progress(&srx->ring);
}

/* ---- struct fi_ops ---- */

static int shim_srx_close(struct fid *fid)
{
	struct shim_srx *srx = container_of(fid, struct shim_srx, ep_fid.fid);
	int ret;

	pthread_mutex_lock(&srx->lock);
	if (srx->bound) {
		pthread_mutex_unlock(&srx->lock);
		return -FI_EBUSY;
	}
	/* Peers' objects first (fi_peer(3)); -FI_EBUSY while one is used. */
	ret = srx->hooks ? srx->hooks->close(srx) : 0;
	if (ret) {
		pthread_mutex_unlock(&srx->lock);
		return ret;
	}
	/* The poller may hold it for a moment: it lets go first. */
	shim_ring_unwatch(&srx->ring);
	if (srx->ring.lazy)
		shim_lazy_del(&srx->ring);
	srx->ring.lazy = false;
	/* Its posted receives go with it, silently (fi_endpoint(3)). */
	ret = shim_dev_destroy(srx->fd, srx->id);
	pthread_mutex_unlock(&srx->lock);
	if (ret) {
		SHIM_WARN(EP_CTRL, "srx %u: KFAB_IOC_DESTROY: %s\n", srx->id,
			  fi_strerror(-ret));
		return ret;
	}
	if (srx->hooks)
		srx->hooks->free(srx);
	shim_bufrecv_close(srx->bufrecv);
	shim_ring_unmap(&srx->ring);
	pthread_mutex_destroy(&srx->lock);
	free(srx);
	return 0;
}

/*
 * "Shared receive contexts are not associated with completion queues or
 * counters" (fi_endpoint(3)); endpoints bind to the SRX, never the
 * reverse.  Nothing binds to it: -FI_EINVAL.
 */
static int shim_srx_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid; (void)bfid; (void)flags;
	return -FI_EINVAL;
}

/*
 * FI_GETOPSFLAG/FI_SETOPSFLAG: the default flags of receives on the SRX
 * (FI_RECV; an SRX has no transmit side: FI_TRANSMIT is -FI_EINVAL).
 * FI_ENABLE is 0: the SRX works from its creation (its receives wait in
 * the ring until an endpoint bound to it is enabled).
 */
static int shim_srx_control(struct fid *fid, int command, void *arg)
{
	struct shim_srx *srx = container_of(fid, struct shim_srx, ep_fid.fid);
	uint64_t *flags = arg;

	switch (command) {
	case FI_GETOPSFLAG:
		if (!flags || (*flags & (FI_TRANSMIT | FI_RECV)) != FI_RECV)
			return -FI_EINVAL;
		*flags = shim_read_once(&srx->rx_op_flags);
		return 0;
	case FI_SETOPSFLAG:
		if (!flags || (*flags & (FI_TRANSMIT | FI_RECV)) != FI_RECV)
			return -FI_EINVAL;
		/* msg.c reads it without the lock. */
		shim_write_once(&srx->rx_op_flags,
				*flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV));
		return 0;
	case FI_ENABLE:
		return 0;
	case FI_GET_VAL:
		if (arg && ((struct fi_fid_var *)arg)->name == KFAB_FID_PEER_EXPORT)
			return shim_srx_peer_export(srx,
						    ((struct fi_fid_var *)arg)->val);
		return shim_get_kernel_handle(arg, srx->fd, srx->id);
	default:
		return -FI_ENOSYS;
	}
}

/* ---- struct fi_ops_ep ---- */

/*
 * fi_cancel: as an endpoint's (ep.c), with the SRX's id.  The kernel
 * takes back the oldest posted receive of the SRX with this context; it
 * completes with FI_ECANCELED on the first endpoint enabled that is still
 * there.
 * Before an endpoint is enabled nothing is posted in the kernel yet:
 * -FI_ENOENT.
 */
static ssize_t shim_srx_cancel(fid_t fid, void *context)
{
	struct shim_srx *srx = container_of(fid, struct shim_srx, ep_fid.fid);
	const struct shim_srx_hooks *hooks = shim_srx_hooks(srx);

	if (hooks)
		return hooks->cancel(srx, context);
	if (!shim_read_once(&srx->live))
		return -FI_ENOENT;
	shim_srx_progress(srx);
	return shim_dev_cancel(srx->fd, srx->id, (uintptr_t)context);
}

/*
 * Options of the SRX, level FI_OPT_ENDPOINT: FI_OPT_MIN_MULTI_RECV of its
 * multi-receive buffers, as ep.c's; FI_OPT_BUFFERED_LIMIT/MIN of its
 * buffered receives (fi_endpoint(3)): until its first endpoint is
 * enabled, the values that endpoint's region will have (the limit 1 to
 * KFAB_BUFRECV_LIMIT_MAX and to the SRX's total_buffered_recv when
 * fi_srx_context() gave one, SIZE_MAX for that; the minimum at most the
 * limit; else -FI_EMSGSIZE), -FI_EOPBADSTATE after.  Unset, getopt gives
 * the region's once there is one, else kfab's default.
 */
static int shim_srx_getopt(fid_t fid, int level, int optname, void *optval,
			   size_t *optlen)
{
	struct shim_srx *srx = container_of(fid, struct shim_srx, ep_fid.fid);
	size_t val;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname != FI_OPT_MIN_MULTI_RECV &&
	    optname != FI_OPT_BUFFERED_LIMIT && optname != FI_OPT_BUFFERED_MIN)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_EINVAL;
	pthread_mutex_lock(&srx->lock);
	if (optname == FI_OPT_MIN_MULTI_RECV) {
		val = srx->min_multi_recv;
	} else {
		val = srx->bufrecv ? shim_bufrecv_limit(srx->bufrecv) :
		      srx->buffered_limit ? srx->buffered_limit :
		      KFAB_BUFRECV_LIMIT_DEFAULT;
		if (optname == FI_OPT_BUFFERED_MIN && srx->buffered_min &&
		    srx->buffered_min < val)
			val = srx->buffered_min;
	}
	pthread_mutex_unlock(&srx->lock);
	*(size_t *)optval = val;
	*optlen = sizeof(size_t);
	return 0;
}

/* FI_OPT_BUFFERED_LIMIT/MIN of the SRX, under its lock. */
static int shim_srx_set_buffered(struct shim_srx *srx, int optname,
				 size_t val)
{
	size_t limit = srx->buffered_limit ? srx->buffered_limit :
					     KFAB_BUFRECV_LIMIT_DEFAULT;
	size_t max = optname == FI_OPT_BUFFERED_LIMIT ?
		     KFAB_BUFRECV_LIMIT_MAX : limit;

	/* fi_srx_context()'s total_buffered_recv bounds the region. */
	if (srx->buffered_total && max > srx->buffered_total)
		max = srx->buffered_total;

	if (val == SIZE_MAX)
		val = max;
	if (val > max || !val)
		return -FI_EMSGSIZE;
	if (srx->mode_set)
		return -FI_EOPBADSTATE;
	if (optname == FI_OPT_BUFFERED_LIMIT) {
		srx->buffered_limit = val;
		if (srx->buffered_min > val)
			srx->buffered_min = val;
	} else {
		srx->buffered_min = val;
	}
	return 0;
}

static int shim_srx_setopt(fid_t fid, int level, int optname,
			   const void *optval, size_t optlen)
{
	struct shim_srx *srx = container_of(fid, struct shim_srx, ep_fid.fid);
	int ret;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname != FI_OPT_MIN_MULTI_RECV &&
	    optname != FI_OPT_BUFFERED_LIMIT && optname != FI_OPT_BUFFERED_MIN)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	if (optname == FI_OPT_MIN_MULTI_RECV) {
		/* msg.c reads it without a lock. */
		shim_write_once(&srx->min_multi_recv,
				*(const size_t *)optval);
		return 0;
	}
	pthread_mutex_lock(&srx->lock);
	ret = shim_srx_set_buffered(srx, optname, *(const size_t *)optval);
	pthread_mutex_unlock(&srx->lock);
	return ret;
}

static int shim_srx_tx_ctx(struct fid_ep *sep, int index,
			   struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			   void *context)
{
	(void)sep; (void)index; (void)attr; (void)tx_ep; (void)context;
	return -FI_ENOSYS;
}

static int shim_srx_rx_ctx(struct fid_ep *sep, int index,
			   struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			   void *context)
{
	(void)sep; (void)index; (void)attr; (void)rx_ep; (void)context;
	return -FI_ENOSYS;
}

/* The free slots of its ring, at any time (an SRX has no enabled state). */
static ssize_t shim_srx_rx_size_left(struct fid_ep *ep)
{
	struct shim_srx *srx = to_shim_srx(ep);
	ssize_t ret;

	pthread_mutex_lock(&srx->lock);
	ret = (ssize_t)shim_ring_space(&srx->ring);
	pthread_mutex_unlock(&srx->lock);
	return ret;
}

/* An SRX transmits nothing. */
static ssize_t shim_srx_tx_size_left(struct fid_ep *ep)
{
	(void)ep;
	return -FI_ENOSYS;
}

/* ---- the tables ---- */

static const struct fi_ops shim_srx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_srx_close,
	.bind = shim_srx_bind,
	.control = shim_srx_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

static const struct fi_ops_ep shim_srx_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = shim_srx_cancel,
	.getopt = shim_srx_getopt,
	.setopt = shim_srx_setopt,
	.tx_ctx = shim_srx_tx_ctx,
	.rx_ctx = shim_srx_rx_ctx,
	.rx_size_left = shim_srx_rx_size_left,
	.tx_size_left = shim_srx_tx_size_left,
};

/* An SRX has no address and no connections. */
static const struct fi_ops_cm shim_srx_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = shim_no_setname,
	.getname = shim_no_getname,
	.getpeer = shim_no_getpeer,
	.connect = shim_no_connect,
	.listen = shim_no_listen,
	.accept = shim_no_accept,
	.reject = shim_no_reject,
	.shutdown = shim_no_shutdown,
	.join = shim_no_join,
};

/* ---- opening ---- */

/**
 * shim_srx_context() - struct fi_ops_domain.srx_ctx: fi_srx_context()
 * @domain: a kfab domain
 * @attr: the receive attributes, or NULL for kfab's: caps (kfab's receive
 *	caps when 0), op_flags (the default flags of its receives), size
 *	(ring entries, rounded up to a power of two; 0: the kernel's
 *	default); every field must be within what fi_getinfo() offers in
 *	rx_attr, as for fi_endpoint().  Not written back.
 * @rx_ep: out: the SRX, a fid_ep of class FI_CLASS_SRX_CTX
 * @context: the application's context for the fid
 *
 * Return: 0; -FI_EINVAL without @rx_ep; -FI_ENODATA when @attr asks for
 * what kfab does not offer; -FI_ENOMEM; or the kernel's -errno.
 */
int shim_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context)
{
	struct shim_domain *dom = to_shim_domain(domain);
	struct kfab_srx_open cmd = { 0 };
	struct shim_srx *srx;
	int ret;

	if (!rx_ep)
		return -FI_EINVAL;
	ret = shim_info_check_rx_attr(attr);
	if (ret)
		return ret;

	srx = calloc(1, sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	ret = -pthread_mutex_init(&srx->lock, NULL);
	if (ret) {
		free(srx);
		return ret;
	}
	srx->domain = dom;
	srx->fd = dom->fabric->fd;
	srx->caps = attr && attr->caps ? attr->caps : SHIM_RX_CAPS;
	srx->rx_op_flags = attr ? attr->op_flags : 0;
	srx->buffered_total = attr ? attr->total_buffered_recv : 0;

	cmd.domain_id = dom->id;
	cmd.sq_entries = shim_ring_entries(attr ? attr->size : 0);
	ret = shim_dev_srx_open(srx->fd, &cmd);
	if (ret) {
		SHIM_WARN(EP_CTRL, "KFAB_IOC_SRX_OPEN: %s\n", fi_strerror(-ret));
		goto err_free;
	}
	srx->id = cmd.out_srx_id;
	ret = shim_ring_map(&srx->ring, srx->fd, srx->id, &cmd.out_sq);
	if (ret) {
		SHIM_WARN(EP_CTRL, "srx %u: mapping the ring: %s\n", srx->id,
			  fi_strerror(-ret));
		shim_dev_destroy(srx->fd, srx->id);
		goto err_free;
	}

	srx->ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->ep_fid.fid.context = context;
	srx->ep_fid.fid.ops = (struct fi_ops *)&shim_srx_fi_ops;
	srx->ep_fid.ops = (struct fi_ops_ep *)&shim_srx_ops;
	srx->ep_fid.cm = (struct fi_ops_cm *)&shim_srx_cm_ops;
	srx->ep_fid.msg = (struct fi_ops_msg *)&shim_srx_msg_ops;
	srx->ep_fid.tagged = (struct fi_ops_tagged *)&shim_srx_tagged_ops;
	srx->ep_fid.rma = (struct fi_ops_rma *)&shim_ep_rma_ops;
	srx->ep_fid.atomic = (struct fi_ops_atomic *)&shim_ep_atomic_ops;
	srx->ep_fid.collective =
		(struct fi_ops_collective *)&shim_ep_collective_ops;
	*rx_ep = &srx->ep_fid;
	SHIM_DBG(EP_CTRL, "srx %u: %u ring entries\n", srx->id,
		 srx->ring.entries);
	return 0;

err_free:
	shim_ring_unmap(&srx->ring);
	pthread_mutex_destroy(&srx->lock);
	free(srx);
	return ret;
}
