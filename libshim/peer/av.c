// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim/peer: kfab as the peer of fi_peer(3) for the objects that need no
 * data path of their own: the peer AV, the peer domain, the peer EQ and
 * FI_PEER_TRANSFER endpoints; and what fi_import_fid() means to kfab.
 *
 * Peer AV.  fi_peer(3) targets a main provider paired with an offload
 * provider that reuses the main one's addressing.  kfab's addresses are
 * kernel addresses that no other provider holds, so a kfab peer AV is a
 * kfab AV of its own whose attributes (type, count) come from the owner's
 * query(); fi_addr_t values in kfab's completions are relative to it, as
 * the spec says.  ep_addr() is never needed: kfab knows its endpoints'
 * addresses.
 *
 * Peer domain.  kfab needs nothing of the owner's domain (kfab needs no
 * memory registration): the owner's domain is checked and kfab opens a
 * domain of its own.
 *
 * Peer EQ.  Events kfab posts (FI_AV_COMPLETE of asynchronous inserts,
 * errors) go to the owner's EQ, with fi_eq_write(); errors only to a kfab
 * EQ (KFAB_EQ_WRITE_ERR): libfabric 1.17 has no standard way to write an
 * error into another provider's EQ, so such an error is logged and
 * dropped.  Reading a peer EQ is -FI_ENOSYS.
 *
 * FI_PEER_TRANSFER.  kfab sends no control messages (the kernel delivers
 * every message whole), so it never starts a peer transfer: fi_endpoint2()
 * with FI_PEER_TRANSFER checks the context, fills in the callbacks (which
 * answer -FI_EINVAL, as nothing of kfab's can complete) and opens an
 * ordinary endpoint; every restriction of the owner's fi_info is met by
 * transferring nothing.
 */
#include <string.h>

#include "peer.h"

/* ---- AV ---- */

int shim_av_peer_attr(void *context, struct fi_av_attr *attr,
		      struct fid_peer_av **peer_av)
{
	struct fi_peer_av_context *ctx = context;
	struct fid_peer_av *pav;
	struct fi_av_attr owner = { 0 };
	int ret;

	if (!ctx || ctx->size < sizeof(*ctx))
		return -FI_EINVAL;
	pav = shim_peer_av_ctx_av(ctx);
	if (!pav || !pav->owner_ops || !pav->owner_ops->query) {
		SHIM_INFO(AV, "FI_PEER without a usable fi_peer_av_context\n");
		return -FI_EINVAL;
	}
	ret = pav->owner_ops->query(pav, &owner);
	if (ret) {
		SHIM_INFO(AV, "the owner's AV query: %s\n", fi_strerror(-ret));
		return ret;
	}
	if (owner.type == FI_AV_TABLE || owner.type == FI_AV_MAP)
		attr->type = owner.type;
	if (owner.count > attr->count)
		attr->count = owner.count;
	attr->flags &= ~FI_PEER;
	*peer_av = pav;
	return 0;
}

/* ---- domain ---- */

int shim_domain_peer_check(void *context, struct fid_domain **owner)
{
	struct fi_peer_domain_context *ctx = context;

	if (!ctx || ctx->size < sizeof(*ctx) || !ctx->domain) {
		SHIM_INFO(DOMAIN, "FI_PEER without a usable fi_peer_domain_context\n");
		return -FI_EINVAL;
	}
	*owner = ctx->domain;
	return 0;
}

/* ---- EQ ---- */

int shim_eq_peer_check(void *context, struct fid_eq **owner)
{
	struct fi_peer_eq_context *ctx = context;

	if (!ctx || ctx->size < sizeof(*ctx) || !ctx->eq ||
	    !ctx->eq->ops || !ctx->eq->ops->write) {
		SHIM_INFO(EQ, "FI_PEER without a usable fi_peer_eq_context\n");
		return -FI_EINVAL;
	}
	*owner = ctx->eq;
	return 0;
}

int shim_eq_peer_forward(struct fid_eq *owner, uint32_t event,
			 const void *buf, size_t len)
{
	struct shim_eq *keq = shim_eq_from_fid(&owner->fid);
	ssize_t ret;

	/* A kfab owner takes kfab's events whatever its FI_WRITE and size. */
	if (keq)
		return shim_eq_post(keq, event, buf, len);
	ret = fi_eq_write(owner, event, buf, len, 0);
	if (ret < 0) {
		SHIM_WARN(EQ, "the owner's EQ refused event %u: %s\n", event,
			  fi_strerror((int)-ret));
		return (int)ret;
	}
	return 0;
}

int shim_eq_peer_forward_err(struct fid_eq *owner,
			     const struct fi_eq_err_entry *err)
{
	struct shim_eq *keq = shim_eq_from_fid(&owner->fid);

	if (keq)
		return shim_eq_post_err(keq, err);
	SHIM_WARN(EQ, "error %d for the owner's EQ dropped: no way to write it\n",
		  err->err);
	return -FI_ENOSYS;
}

static ssize_t shim_eq_peer_read(struct fid_eq *eq, uint32_t *event,
				 void *buf, size_t len, uint64_t flags)
{
	(void)eq; (void)event; (void)buf; (void)len; (void)flags;
	return -FI_ENOSYS;
}

static ssize_t shim_eq_peer_readerr(struct fid_eq *eq,
				    struct fi_eq_err_entry *buf, uint64_t flags)
{
	(void)eq; (void)buf; (void)flags;
	return -FI_ENOSYS;
}

static ssize_t shim_eq_peer_write(struct fid_eq *eq, uint32_t event,
				  const void *buf, size_t len, uint64_t flags)
{
	(void)eq; (void)event; (void)buf; (void)len; (void)flags;
	return -FI_ENOSYS;
}

static ssize_t shim_eq_peer_sread(struct fid_eq *eq, uint32_t *event,
				  void *buf, size_t len, int timeout,
				  uint64_t flags)
{
	(void)eq; (void)event; (void)buf; (void)len; (void)timeout; (void)flags;
	return -FI_ENOSYS;
}

static const char *shim_eq_peer_strerror(struct fid_eq *eq, int prov_errno,
					 const void *err_data, char *buf,
					 size_t len)
{
	const char *str = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	(void)eq; (void)err_data;
	if (buf && len) {
		strncpy(buf, str, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return str;
}

const struct fi_ops_eq shim_eq_peer_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = shim_eq_peer_read,
	.readerr = shim_eq_peer_readerr,
	.write = shim_eq_peer_write,
	.sread = shim_eq_peer_sread,
	.strerror = shim_eq_peer_strerror,
};

/* ---- FI_PEER_TRANSFER ---- */

static ssize_t shim_transfer_complete(struct fid_ep *ep,
				      struct fi_cq_tagged_entry *buf,
				      SHIM_TRANSFER_SRC_T src_addr)
{
	(void)ep; (void)buf; (void)src_addr;
	SHIM_WARN(EP_DATA, "a peer transfer completed, but kfab starts none\n");
	return -FI_EINVAL;
}

static ssize_t shim_transfer_comperr(struct fid_ep *ep,
				     struct fi_cq_err_entry *buf)
{
	(void)ep; (void)buf;
	SHIM_WARN(EP_DATA, "a peer transfer failed, but kfab starts none\n");
	return -FI_EINVAL;
}

int shim_ep_peer_transfer(struct fi_info *info, void *context)
{
	struct fi_peer_transfer_context *ctx = context;

	(void)info;
	if (!ctx || ctx->size < sizeof(*ctx) || !ctx->peer_ops) {
		SHIM_INFO(EP_CTRL, "FI_PEER_TRANSFER without a usable fi_peer_transfer_context\n");
		return -FI_EINVAL;
	}
	ctx->peer_ops->complete = shim_transfer_complete;
	ctx->peer_ops->comperr = shim_transfer_comperr;
	return 0;
}

/* ---- fi_import_fid() ---- */

/*
 * fi_import_fid(fid, expfid, flags) is fid->ops->bind(): kfab gives it a
 * meaning only on its own fid_peer_* objects (the peer's object they were
 * opened with, cq.c and srx.c).  Everything else kfab cannot
 * import is one of these classes, and its bind answers -FI_ENOSYS for
 * them rather than the -FI_EINVAL of a bad bind.
 */
bool shim_is_import_only(const struct fid *fid)
{
	switch (fid->fclass) {
	case FI_CLASS_MR_CACHE:
	case FI_CLASS_MEM_MONITOR:
	case FI_CLASS_PEER_CQ:
	case FI_CLASS_PEER_SRX:
	case FI_CLASS_LOG:
	case FI_CLASS_PEER_AV:
	case FI_CLASS_PEER_AV_SET:
		return true;
	default:
		return false;
	}
}
