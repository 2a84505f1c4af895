// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: fid_mr.  kfab needs no memory registration: mr_mode is 0, and
 * the kernel reads and writes the buffers of a request through the
 * process's own address space while it carries the request out.  But
 * applications register memory anyway (fi_mr(3) allows it whatever the
 * mode), so fi_mr_reg()/fi_mr_regv()/fi_mr_regattr() give them a struct
 * fid_mr with everything the man page promises, kept in the library only:
 *
 *  - access flags are checked (unknown bits: -FI_EINVAL); flags must be 0
 *    (FI_RMA_EVENT, FI_RMA_PMEM, FI_HMEM_* need what kfab lacks:
 *    -FI_EBADFLAGS); non-system memory (FI_HMEM_CUDA...) is -FI_ENOSYS;
 *  - the key is the requested_key, -FI_ENOKEY when another registration of
 *    the domain holds it; a domain opened with FI_MR_BASIC or
 *    FI_MR_PROV_KEY gets keys the provider picks instead (a counter);
 *  - fi_mr_desc() is the fid_mr itself (the data path ignores descriptors);
 *  - fi_mr_bind(): -FI_ENOSYS (kfab has neither FI_MR_ENDPOINT nor RMA
 *    events), fi_mr_refresh(): 0 (nothing is pinned, nothing to refresh),
 *    fi_mr_enable(): 0 (registrations are never created disabled).
 *
 * A domain with registrations open refuses fi_close() (-FI_EBUSY).
 */
#include <stdlib.h>

#include "internal.h"

#define SHIM_MR_ACCESS	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
			 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_COLLECTIVE)

/**
 * struct shim_mr - a fid_mr
 * @mr_fid: what libfabric sees (key, mem_desc)
 * @domain: the parent
 * @next: the domain's list, under its mr_lock
 * @access: the access flags of the registration
 */
struct shim_mr {
	struct fid_mr mr_fid;
	struct shim_domain *domain;
	struct shim_mr *next;
	uint64_t access;
};

/* Called with dom->mr_lock held. */
static bool shim_mr_key_used(struct shim_domain *dom, uint64_t key)
{
	struct shim_mr *mr;

	for (mr = dom->mrs; mr; mr = mr->next)
		if (mr->mr_fid.key == key)
			return true;
	return false;
}

bool shim_domain_has_mrs(struct shim_domain *dom)
{
	bool ret;

	pthread_mutex_lock(&dom->mr_lock);
	ret = dom->mrs != NULL;
	pthread_mutex_unlock(&dom->mr_lock);
	return ret;
}

static int shim_mr_close(struct fid *fid)
{
	struct shim_mr *mr = container_of(fid, struct shim_mr, mr_fid.fid);
	struct shim_domain *dom = mr->domain;
	struct shim_mr **p;

	pthread_mutex_lock(&dom->mr_lock);
	for (p = &dom->mrs; *p; p = &(*p)->next) {
		if (*p == mr) {
			*p = mr->next;
			break;
		}
	}
	pthread_mutex_unlock(&dom->mr_lock);
	free(mr);
	return 0;
}

static int shim_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid; (void)bfid; (void)flags;
	return -FI_ENOSYS;
}

static int shim_mr_control(struct fid *fid, int command, void *arg)
{
	(void)fid; (void)arg;
	switch (command) {
	case FI_REFRESH:
	case FI_ENABLE:
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static const struct fi_ops shim_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_mr_close,
	.bind = shim_mr_bind,
	.control = shim_mr_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

/* Provider-chosen keys: FI_MR_BASIC (API < 1.5) or FI_MR_PROV_KEY. */
static bool shim_mr_prov_key(const struct shim_domain *dom)
{
	return dom->mr_mode == FI_MR_BASIC || (dom->mr_mode & FI_MR_PROV_KEY);
}

static int shim_mr_new(struct shim_domain *dom, const struct fi_mr_attr *attr,
		       uint64_t flags, struct fid_mr **mr_fid)
{
	struct shim_mr *mr;
	size_t i;
	int ret = 0;

	if (!attr || !mr_fid)
		return -FI_EINVAL;
	if (attr->access & ~(uint64_t)SHIM_MR_ACCESS)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	if (attr->auth_key_size)
		return -FI_EINVAL;	/* auth_key_size is 0 in kfab's fi_info */
	if (attr->iov_count > KFAB_IOV_MAX ||
	    (attr->iov_count && !attr->mr_iov))
		return -FI_EINVAL;
	for (i = 0; i < attr->iov_count; i++)
		if (attr->mr_iov[i].iov_len && !attr->mr_iov[i].iov_base)
			return -FI_EINVAL;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = dom;
	mr->access = attr->access;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = (struct fi_ops *)&shim_mr_fi_ops;
	mr->mr_fid.mem_desc = &mr->mr_fid;

	pthread_mutex_lock(&dom->mr_lock);
	if (shim_mr_prov_key(dom)) {
		do
			mr->mr_fid.key = dom->next_key++;
		while (shim_mr_key_used(dom, mr->mr_fid.key));
	} else if (shim_mr_key_used(dom, attr->requested_key)) {
		ret = -FI_ENOKEY;
	} else {
		mr->mr_fid.key = attr->requested_key;
	}
	if (!ret) {
		mr->next = dom->mrs;
		dom->mrs = mr;
	}
	pthread_mutex_unlock(&dom->mr_lock);
	if (ret) {
		free(mr);
		return ret;
	}
	*mr_fid = &mr->mr_fid;
	return 0;
}

static struct shim_domain *shim_mr_domain(struct fid *fid)
{
	struct fid_domain *domain;

	if (!fid || fid->fclass != FI_CLASS_DOMAIN)
		return NULL;
	domain = container_of(fid, struct fid_domain, fid);
	return shim_is_domain(domain) ? to_shim_domain(domain) : NULL;
}

int shim_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		    uint64_t flags, struct fid_mr **mr)
{
	struct shim_domain *dom = shim_mr_domain(fid);

	if (!dom)
		return -FI_EINVAL;
	return shim_mr_new(dom, attr, flags, mr);
}

int shim_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		 uint64_t access, uint64_t offset, uint64_t requested_key,
		 uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return shim_mr_regattr(fid, &attr, flags, mr);
}

int shim_mr_reg(struct fid *fid, const void *buf, size_t len,
		uint64_t access, uint64_t offset, uint64_t requested_key,
		uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return shim_mr_regv(fid, &iov, 1, access, offset, requested_key,
			    flags, mr, context);
}
