// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: shared transmit contexts (fi_endpoint(3), fi_stx_context).
 *
 * An endpoint opened with ep_attr->tx_ctx_cnt FI_SHARED_CONTEXT transmits
 * through the STX bound to it, which it needs before fi_enable().  kfab's
 * kernel endpoint is one object that sends as its own address, so the
 * sharing is the application's view only: an STX is a library object
 * holding the transmit attributes it was opened with, each endpoint bound
 * to it keeps its own submission ring, and its sends complete on its own
 * CQ and counter, as fi_endpoint(3) has it for shared contexts
 * ("Completed operations are posted to the CQs bound to the endpoint").
 * What the man page promises is kept (operations posted to the endpoint,
 * one STX per endpoint, the endpoint's transmit caps a subset of the
 * STX's, the STX outliving its endpoints); what a shared hardware queue
 * would save, kfab never spent.
 *
 * The STX counts its endpoints (@ep_cnt, atomic): fi_close() is -FI_EBUSY
 * while any is bound.  No lock: the count is the only mutable state.
 */
#include <stdlib.h>

#include "internal.h"

/**
 * struct shim_stx - a fid_stx
 * @stx_fid: what libfabric sees (FI_CLASS_STX_CTX)
 * @domain: its domain; only that domain's endpoints bind it
 * @attr: the transmit attributes it was opened with (the domain's defaults
 *	for NULL)
 * @ep_cnt: endpoints bound to it
 */
struct shim_stx {
	struct fid_stx stx_fid;
	struct shim_domain *domain;
	struct fi_tx_attr attr;
	unsigned int ep_cnt;
};

static const struct fi_ops shim_stx_fi_ops;

static struct shim_stx *to_shim_stx(struct fid *fid)
{
	return container_of(fid, struct shim_stx, stx_fid.fid);
}

static int shim_stx_close(struct fid *fid)
{
	struct shim_stx *stx = to_shim_stx(fid);

	if (__atomic_load_n(&stx->ep_cnt, __ATOMIC_ACQUIRE))
		return -FI_EBUSY;
	free(stx);
	return 0;
}

/* Endpoints bind the STX, not the other way round. */
static int shim_stx_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid; (void)bfid; (void)flags;
	return -FI_EINVAL;
}

static const struct fi_ops shim_stx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_stx_close,
	.bind = shim_stx_bind,
	.control = shim_no_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

/* An STX has no requests of its own: nothing to cancel or size. */
static ssize_t shim_stx_cancel(fid_t fid, void *context)
{
	(void)fid; (void)context;
	return -FI_ENOENT;
}

static int shim_stx_getopt(fid_t fid, int level, int optname, void *optval,
			   size_t *optlen)
{
	(void)fid; (void)level; (void)optname; (void)optval; (void)optlen;
	return -FI_ENOPROTOOPT;
}

static int shim_stx_setopt(fid_t fid, int level, int optname,
			   const void *optval, size_t optlen)
{
	(void)fid; (void)level; (void)optname; (void)optval; (void)optlen;
	return -FI_ENOPROTOOPT;
}

static int shim_stx_tx_ctx(struct fid_ep *sep, int index,
			   struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			   void *context)
{
	(void)sep; (void)index; (void)attr; (void)tx_ep; (void)context;
	return -FI_ENOSYS;
}

static int shim_stx_rx_ctx(struct fid_ep *sep, int index,
			   struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			   void *context)
{
	(void)sep; (void)index; (void)attr; (void)rx_ep; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_stx_size_left(struct fid_ep *ep)
{
	(void)ep;
	return -FI_ENOSYS;
}

static const struct fi_ops_ep shim_stx_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = shim_stx_cancel,
	.getopt = shim_stx_getopt,
	.setopt = shim_stx_setopt,
	.tx_ctx = shim_stx_tx_ctx,
	.rx_ctx = shim_stx_rx_ctx,
	.rx_size_left = shim_stx_size_left,
	.tx_size_left = shim_stx_size_left,
};

/**
 * shim_stx_bind_ep() - fi_ep_bind() of an STX: one more endpoint
 * @fid: what the application passed
 * @domain: the endpoint's domain
 * @tx_caps: the endpoint's transmit caps
 * @out: the STX
 *
 * Return: 0; -FI_EINVAL for something that is no kfab STX, or when
 * @tx_caps are not a subset of the STX's caps (when it was opened with
 * some: "Endpoints associated with a shared transmit context must use a
 * subset of the transmit context's attributes"); -FI_EDOMAIN for an STX
 * of another domain (fi_endpoint(3): "an attempt was made to bind
 * multiple domains").
 */
int shim_stx_bind_ep(struct fid *fid, struct shim_domain *domain,
		     uint64_t tx_caps, struct shim_stx **out)
{
	struct shim_stx *stx;

	if (fid->fclass != FI_CLASS_STX_CTX || fid->ops != &shim_stx_fi_ops)
		return -FI_EINVAL;
	stx = to_shim_stx(fid);
	if (stx->domain != domain)
		return -FI_EDOMAIN;
	if (stx->attr.caps && (tx_caps & ~stx->attr.caps))
		return -FI_EINVAL;
	__atomic_add_fetch(&stx->ep_cnt, 1, __ATOMIC_ACQ_REL);
	*out = stx;
	return 0;
}

void shim_stx_unbind_ep(struct shim_stx *stx)
{
	__atomic_sub_fetch(&stx->ep_cnt, 1, __ATOMIC_ACQ_REL);
}

/**
 * shim_stx_context() - struct fi_ops_domain.stx_ctx: fi_stx_context()
 * @domain: a kfab domain
 * @attr: transmit attributes, judged as tx_attr hints are (NULL: the
 *	domain's defaults)
 * @stx_fid: out
 * @context: the application's
 *
 * Return: 0; -FI_EINVAL without @stx_fid; -FI_ENODATA for attributes kfab
 * does not offer (logged as for hints); -FI_ENOMEM.
 */
int shim_stx_context(struct fid_domain *domain, struct fi_tx_attr *attr,
		     struct fid_stx **stx_fid, void *context)
{
	struct shim_stx *stx;
	int ret;

	if (!stx_fid)
		return -FI_EINVAL;
	ret = shim_info_check_tx_attr(attr);
	if (ret)
		return ret;
	stx = calloc(1, sizeof(*stx));
	if (!stx)
		return -FI_ENOMEM;
	stx->domain = to_shim_domain(domain);
	if (attr)
		stx->attr = *attr;
	stx->stx_fid.fid.fclass = FI_CLASS_STX_CTX;
	stx->stx_fid.fid.context = context;
	stx->stx_fid.fid.ops = (struct fi_ops *)&shim_stx_fi_ops;
	stx->stx_fid.ops = (struct fi_ops_ep *)&shim_stx_ops;
	*stx_fid = &stx->stx_fid;
	return 0;
}
