// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Scalable endpoints (fi_endpoint(3) "Scalable Endpoints";
 * Documentation/ep.rst, "Scalable endpoints").
 *
 * A scalable endpoint is a kfab endpoint opened with KFAB_EP_OPEN_BLOCK:
 * the anchor of a block of endpoint numbers, whose address is the block's
 * base (fi_getname()).  It moves no data itself.  Its contexts are
 * endpoints of their own, opened on demand in the same block:
 *
 *  - receive context i: KFAB_EP_OPEN_JOIN, number base + i, so a message
 *    sent to fi_rx_addr(addr, i, bits) lands on it and on nothing else
 *    (the kernel adds i to the base, msg.c's rx_index);
 *  - transmit context i: KFAB_EP_OPEN_JOIN | KFAB_EP_OPEN_SEND_ONLY, with
 *    a ring of its own and the block's address as the source of its
 *    sends.
 *
 * Each context binds its own CQs and counters and is enabled on its own;
 * the AV is the scalable endpoint's (fi_scalable_ep_bind()), bound to each
 * context as it opens.  The anchor's lock covers struct shim_sep and is
 * taken before a context's.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/**
 * struct shim_sep - what a scalable endpoint adds to its anchor
 * @info: a copy of the fi_info it was opened with (the contexts' defaults)
 * @tx_cnt, @rx_cnt: ep_attr's tx_ctx_cnt and rx_ctx_cnt
 * @tx, @rx: the open contexts by index, NULL when closed
 * @open: how many of them are open (fi_close() is -FI_EBUSY until 0)
 * @av_fid: the AV of fi_scalable_ep_bind(), or NULL
 */
struct shim_sep {
	struct fi_info *info;
	size_t tx_cnt, rx_cnt;
	struct shim_ep **tx, **rx;
	unsigned int open;
	struct fid *av_fid;
};

/* ep_attr's count: 0 is 1 (the default), FI_SHARED_CONTEXT none here. */
static int shim_sep_count(size_t want, size_t *cnt)
{
	if (want == FI_SHARED_CONTEXT || want > SHIM_SEP_MAX_CTX)
		return -FI_EINVAL;
	*cnt = want ? want : 1;
	return 0;
}

static struct fi_info *shim_sep_ctx_info(const struct fi_info *info)
{
	struct fi_info *dup = fi_dupinfo(info);

	if (dup && dup->ep_attr) {
		dup->ep_attr->tx_ctx_cnt = 1;
		dup->ep_attr->rx_ctx_cnt = 1;
	}
	return dup;
}

/**
 * shim_scalable_ep() - struct fi_ops_domain.scalable_ep
 * @domain: a kfab domain
 * @info: FI_EP_RDM or FI_EP_DGRAM; ep_attr's tx_ctx_cnt and rx_ctx_cnt
 *	1 to SHIM_SEP_MAX_CTX (0: 1)
 * @sep_fid: out: the scalable endpoint (FI_CLASS_SEP)
 * @context: the application's
 *
 * Return: 0, -FI_EINVAL (no @info, a count out of range), or what
 * fi_endpoint() answers for @info.
 */
int shim_scalable_ep(struct fid_domain *domain, struct fi_info *info,
		     struct fid_ep **sep_fid, void *context)
{
	struct kfab_ep_open block = { .flags = KFAB_EP_OPEN_BLOCK };
	struct shim_sep *sep;
	struct fi_info *dup;
	struct fid_ep *fid;
	struct shim_ep *ep;
	int ret;

	if (!info || !sep_fid)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type == FI_EP_MSG)
		return -FI_ENOPROTOOPT;
	sep = calloc(1, sizeof(*sep));
	if (!sep)
		return -FI_ENOMEM;
	ret = shim_sep_count(info->ep_attr ? info->ep_attr->tx_ctx_cnt : 1,
			     &sep->tx_cnt);
	if (!ret)
		ret = shim_sep_count(info->ep_attr ?
				     info->ep_attr->rx_ctx_cnt : 1,
				     &sep->rx_cnt);
	if (ret)
		goto err_free;
	ret = -FI_ENOMEM;
	sep->tx = calloc(sep->tx_cnt, sizeof(*sep->tx));
	sep->rx = calloc(sep->rx_cnt, sizeof(*sep->rx));
	sep->info = shim_sep_ctx_info(info);
	if (!sep->tx || !sep->rx || !sep->info)
		goto err_free;
	/* The anchor's ring is never used: the smallest. */
	dup = fi_dupinfo(sep->info);
	if (!dup)
		goto err_free;
	if (dup->tx_attr)
		dup->tx_attr->size = 1;
	if (dup->rx_attr)
		dup->rx_attr->size = 1;
	ret = shim_ep_open(domain, dup, &fid, context, &block);
	fi_freeinfo(dup);
	if (ret)
		goto err_free;
	ep = to_shim_ep(fid);
	ep->sep = sep;
	ep->ep_fid.fid.fclass = FI_CLASS_SEP;
	*sep_fid = fid;
	return 0;

err_free:
	if (sep->info)
		fi_freeinfo(sep->info);
	free(sep->tx);
	free(sep->rx);
	free(sep);
	return ret;
}

void shim_sep_free(struct shim_ep *ep)
{
	struct shim_sep *sep = ep->sep;

	fi_freeinfo(sep->info);
	free(sep->tx);
	free(sep->rx);
	free(sep);
	ep->sep = NULL;
}

bool shim_sep_busy(struct shim_ep *ep)
{
	bool busy;

	pthread_mutex_lock(&ep->lock);
	busy = ep->sep->open != 0;
	pthread_mutex_unlock(&ep->lock);
	return busy;
}

/*
 * fi_scalable_ep_bind(): an AV only (flags 0), once; the open contexts
 * get it too, and those opened later.  Other classes are -FI_EINVAL: CQs
 * and counters are bound to the contexts.
 */
int shim_sep_bind(struct shim_ep *ep, struct fid *bfid, uint64_t flags)
{
	struct shim_sep *sep = ep->sep;
	size_t i;
	int ret;

	if (bfid->fclass != FI_CLASS_AV)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&ep->lock);
	if (sep->av_fid) {
		ret = -FI_EINVAL;
		goto out;
	}
	/* The anchor holds the AV (its fi_close() is -FI_EBUSY till we go). */
	ret = shim_ep_bind_av(ep, bfid, 0);
	for (i = 0; !ret && i < sep->tx_cnt; i++)
		if (sep->tx[i])
			ret = fi_ep_bind(&sep->tx[i]->ep_fid, bfid, 0);
	for (i = 0; !ret && i < sep->rx_cnt; i++)
		if (sep->rx[i])
			ret = fi_ep_bind(&sep->rx[i]->ep_fid, bfid, 0);
	if (!ret)
		sep->av_fid = bfid;
out:
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/*
 * fi_enable() of the scalable endpoint: it needs its AV (-FI_ENOAV);
 * each context is enabled by its own fi_enable().
 */
int shim_sep_enable(struct shim_ep *ep)
{
	int ret;

	pthread_mutex_lock(&ep->lock);
	ret = ep->sep->av_fid ? 0 : -FI_ENOAV;
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/*
 * A new context @index of @tx_cnt or @rx_cnt: -FI_EINVAL out of range,
 * -FI_EBUSY when that context is open already.
 */
static int shim_sep_ctx_open(struct shim_ep *ep, int index, bool rx,
			     const struct fi_tx_attr *tx_attr,
			     const struct fi_rx_attr *rx_attr,
			     struct fid_ep **ctx_fid, void *context)
{
	struct kfab_ep_open block = { .block_ep_id = ep->id };
	struct shim_sep *sep = ep->sep;
	struct shim_ep **slot;
	struct fi_info *info;
	struct shim_ep *ctx;
	struct fid_ep *fid;
	int ret;

	if (!ctx_fid || index < 0 ||
	    (size_t)index >= (rx ? sep->rx_cnt : sep->tx_cnt))
		return -FI_EINVAL;
	if ((tx_attr && shim_info_check_tx_attr(tx_attr)) ||
	    (rx_attr && shim_info_check_rx_attr(rx_attr)))
		return -FI_ENODATA;
	if (rx) {
		block.flags = KFAB_EP_OPEN_JOIN;
		block.block_index = (uint32_t)index;
	} else {
		block.flags = KFAB_EP_OPEN_JOIN | KFAB_EP_OPEN_SEND_ONLY;
	}
	info = fi_dupinfo(sep->info);
	if (!info)
		return -FI_ENOMEM;
	/* One direction per context: the other's ring share is none. */
	if (info->tx_attr) {
		if (tx_attr)
			*info->tx_attr = *tx_attr;
		if (rx)
			info->tx_attr->size = 0;
	}
	if (info->rx_attr) {
		if (rx_attr)
			*info->rx_attr = *rx_attr;
		if (!rx)
			info->rx_attr->size = 0;
	}
	pthread_mutex_lock(&ep->lock);
	slot = rx ? &sep->rx[index] : &sep->tx[index];
	if (*slot) {
		ret = -FI_EBUSY;
		goto out;
	}
	ret = shim_ep_open(&ep->domain->domain_fid, info, &fid, context,
			   &block);
	if (ret)
		goto out;
	ctx = to_shim_ep(fid);
	ctx->parent = ep;
	ctx->ctx_index = index;
	ctx->ctx_rx = rx;
	ctx->ep_fid.fid.fclass = rx ? FI_CLASS_RX_CTX : FI_CLASS_TX_CTX;
	/* Only its own direction needs a CQ or counter at fi_enable(). */
	ctx->caps &= ~(uint64_t)(rx ? FI_SEND : FI_RECV);
	ctx->caps |= rx ? FI_RECV : FI_SEND;
	if (sep->av_fid) {
		ret = fi_ep_bind(fid, sep->av_fid, 0);
		if (ret) {
			ctx->parent = NULL;
			fi_close(&fid->fid);
			goto out;
		}
	}
	*slot = ctx;
	sep->open++;
	*ctx_fid = fid;
out:
	pthread_mutex_unlock(&ep->lock);
	fi_freeinfo(info);
	return ret;
}

int shim_sep_tx_context(struct shim_ep *ep, int index,
			struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			void *context)
{
	return shim_sep_ctx_open(ep, index, false, attr, NULL, tx_ep, context);
}

int shim_sep_rx_context(struct shim_ep *ep, int index,
			struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			void *context)
{
	return shim_sep_ctx_open(ep, index, true, NULL, attr, rx_ep, context);
}

/* fi_close() of a context, after its kernel endpoint went. */
void shim_sep_ctx_closed(struct shim_ep *ctx)
{
	struct shim_ep *ep = ctx->parent;
	struct shim_sep *sep = ep->sep;

	pthread_mutex_lock(&ep->lock);
	if (ctx->ctx_rx)
		sep->rx[ctx->ctx_index] = NULL;
	else
		sep->tx[ctx->ctx_index] = NULL;
	sep->open--;
	pthread_mutex_unlock(&ep->lock);
}
