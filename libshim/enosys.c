// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: stubs for the operations kfab does not implement yet.
 *
 * libfabric requires every op table to be fully populated (fi_provider(7));
 * libfabric 1.17 keeps its fi_no_* helpers inside the library, so kfab has
 * its own.  Each answers the error the man page of the operation lists for
 * "not supported": -FI_ENOSYS almost everywhere.  When a feature lands, its
 * table entry moves to the real function and the stub goes away.
 */
#include "internal.h"

/* ---- struct fi_ops ---- */

int shim_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid; (void)bfid; (void)flags;
	return -FI_ENOSYS;
}

int shim_no_control(struct fid *fid, int command, void *arg)
{
	(void)fid; (void)command; (void)arg;
	return -FI_ENOSYS;
}

int shim_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context)
{
	(void)fid; (void)name; (void)flags; (void)ops; (void)context;
	return -FI_ENOSYS;
}

int shim_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	(void)fid; (void)buf; (void)len;
	return -FI_ENOSYS;
}

int shim_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context)
{
	(void)fid; (void)name; (void)flags; (void)ops; (void)context;
	return -FI_ENOSYS;
}

/* ---- struct fi_ops_cm: RDM endpoints and SRXs have no connections ---- */

int shim_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void)fid; (void)addr; (void)addrlen;
	return -FI_ENOSYS;
}

int shim_no_getname(fid_t fid, void *addr, size_t *addrlen)
{
	(void)fid; (void)addr; (void)addrlen;
	return -FI_ENOSYS;
}

int shim_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	(void)ep; (void)addr; (void)addrlen;
	return -FI_ENOSYS;
}

int shim_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		    size_t paramlen)
{
	(void)ep; (void)addr; (void)param; (void)paramlen;
	return -FI_ENOSYS;
}

int shim_no_listen(struct fid_pep *pep)
{
	(void)pep;
	return -FI_ENOSYS;
}

int shim_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	(void)ep; (void)param; (void)paramlen;
	return -FI_ENOSYS;
}

int shim_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		   size_t paramlen)
{
	(void)pep; (void)handle; (void)param; (void)paramlen;
	return -FI_ENOSYS;
}

int shim_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	(void)ep; (void)flags;
	return -FI_ENOSYS;
}

int shim_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		 struct fid_mc **mc, void *context)
{
	(void)ep; (void)addr; (void)flags; (void)mc; (void)context;
	return -FI_ENOSYS;
}

/* ---- struct fi_ops_domain ---- */

int shim_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			 enum fi_op op, struct fi_atomic_attr *attr,
			 uint64_t flags)
{
	(void)domain; (void)datatype; (void)op; (void)attr; (void)flags;
	return -FI_ENOSYS;
}

int shim_no_query_collective(struct fid_domain *domain,
			     enum fi_collective_op coll,
			     struct fi_collective_attr *attr, uint64_t flags)
{
	(void)domain; (void)coll; (void)attr; (void)flags;
	return -FI_ENOSYS;
}
