// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: fid_domain.  A domain is a domain object of the kernel
 * (KFAB_IOC_DOMAIN_ALLOC) in its fabric's file; it is the parent of the
 * AVs, CQs, counters and endpoints (av.c, cq.c, cntr.c, ep.c) and of the
 * memory registrations, which live in the library alone (mr.c).
 */
#include <stdlib.h>

#include "internal.h"

/*
 * A failed close changes nothing: the domain stays open and usable, so the
 * caller may try again (-FI_EBUSY: the kernel still holds children).
 */
static int shim_domain_close(struct fid *fid)
{
	struct shim_domain *dom =
		container_of(fid, struct shim_domain, domain_fid.fid);
	struct shim_fabric *fab = dom->fabric;
	int ret;

	/* Registrations are children the kernel does not know of. */
	if (shim_domain_has_mrs(dom))
		return -FI_EBUSY;
	ret = shim_dev_destroy(fab->fd, dom->id);
	if (ret) {
		SHIM_WARN(DOMAIN, "domain %u: KFAB_IOC_DESTROY: %s\n", dom->id,
			  fi_strerror(-ret));
		return ret;
	}

	pthread_mutex_lock(&fab->lock);
	fab->domain_cnt--;
	pthread_mutex_unlock(&fab->lock);
	pthread_mutex_destroy(&dom->mr_lock);
	free(dom);
	return 0;
}

static const struct fi_ops shim_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_domain_close,
	.bind = shim_no_bind,
	.control = shim_no_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

/* fi_srx_context(): with FI_PEER, @context is the owner's (peer/srx.c). */
static int shim_domain_srx_ctx(struct fid_domain *domain,
			       struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			       void *context)
{
	if (attr && (attr->op_flags & FI_PEER))
		return shim_srx_peer_context(domain, attr, rx_ep, context);
	return shim_srx_context(domain, attr, rx_ep, context);
}

static const struct fi_ops_domain shim_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = shim_av_open,
	.cq_open = shim_cq_open,
	.endpoint = shim_endpoint,
	.scalable_ep = shim_scalable_ep,
	.cntr_open = shim_cntr_open,
	.poll_open = shim_poll_open,
	.stx_ctx = shim_stx_context,
	.srx_ctx = shim_domain_srx_ctx,
	.query_atomic = shim_no_query_atomic,
	.query_collective = shim_no_query_collective,
	.endpoint2 = shim_endpoint2,
};

static const struct fi_ops_mr shim_domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = shim_mr_reg,
	.regv = shim_mr_regv,
	.regattr = shim_mr_regattr,
};

bool shim_is_domain(const struct fid_domain *domain)
{
	return domain->fid.fclass == FI_CLASS_DOMAIN &&
	       domain->fid.ops == &shim_domain_fi_ops;
}

/**
 * shim_domain_open() - struct fi_ops_fabric.domain: fi_domain() for kfab
 * @fabric: a kfab fabric
 * @info: an fi_info of kfab's (its hints must match what kfab offers, as
 *	  in fi_getinfo(); domain_attr->name, if set, must be kfab's)
 * @domain: out: the new domain
 * @context: the application's context for the fid
 *
 * Return: 0; -FI_EINVAL without @info; -FI_ENODATA when @info asks for
 * what kfab does not offer; -FI_ENOMEM; or the kernel's -errno (-ENOSPC
 * once the fabric's file holds max_objects objects).
 */
int shim_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context)
{
	struct shim_fabric *fab = to_shim_fabric(fabric);
	struct shim_domain *dom;
	int ret;

	if (!info || !domain)
		return -FI_EINVAL;
	ret = shim_info_check(info);
	if (ret)
		return ret;

	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	ret = -pthread_mutex_init(&dom->mr_lock, NULL);
	if (ret) {
		free(dom);
		return ret;
	}
	dom->mr_mode = info->domain_attr ? info->domain_attr->mr_mode : 0;
	dom->addr_format = info->addr_format;
	dom->serial = info->domain_attr &&
		      info->domain_attr->threading == FI_THREAD_DOMAIN;
	dom->next_key = 1;

	pthread_mutex_lock(&fab->lock);
	ret = shim_dev_domain_alloc(fab->fd, &dom->id);
	if (!ret)
		fab->domain_cnt++;
	pthread_mutex_unlock(&fab->lock);
	if (ret) {
		SHIM_WARN(DOMAIN, "KFAB_IOC_DOMAIN_ALLOC: %s\n",
			  fi_strerror(-ret));
		pthread_mutex_destroy(&dom->mr_lock);
		free(dom);
		return ret;
	}

	dom->fabric = fab;
	dom->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain_fid.fid.context = context;
	dom->domain_fid.fid.ops = (struct fi_ops *)&shim_domain_fi_ops;
	dom->domain_fid.ops = (struct fi_ops_domain *)&shim_domain_ops;
	dom->domain_fid.mr = (struct fi_ops_mr *)&shim_domain_mr_ops;
	*domain = &dom->domain_fid;
	SHIM_DBG(DOMAIN, "domain %u opened\n", dom->id);
	return 0;
}

/*
 * fi_domain2(): FI_PEER (fi_peer(3), peer/av.c) is the one flag.  The
 * owner's domain, in @context, is checked; kfab needs nothing of it.
 */
int shim_domain_open2(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, uint64_t flags,
		      void *context)
{
	struct fid_domain *owner;
	int ret;

	if (flags == FI_PEER) {
		ret = shim_domain_peer_check(context, &owner);
		if (!ret)
			ret = shim_domain_open(fabric, info, domain, NULL);
		/* The owner may call in from threads of its own: locks. */
		if (!ret)
			to_shim_domain(*domain)->serial = false;
		return ret;
	}
	if (flags) {
		SHIM_INFO(DOMAIN, "fi_domain2 flags 0x%llx not supported\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	return shim_domain_open(fabric, info, domain, context);
}
