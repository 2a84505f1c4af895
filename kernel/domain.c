// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Domains: the kernel half of libfabric's fid_domain.  A domain is the parent
 * of the AVs, CQs, counters, endpoints and SRXs created under it (each holds
 * a user of it, kernel/object.c); it has no state of its own yet.
 */
#include <linux/slab.h>

#include "kfab.h"

static inline struct kfab_domain *to_kfab_domain(struct kfab_object *obj)
{
	return container_of(obj, struct kfab_domain, obj);
}

/*
 * A new domain, not yet published: the one constructor of
 * KFAB_IOC_DOMAIN_ALLOC and of the in-kernel API's domains.
 */
struct kfab_object *kfab_domain_create(struct kfab_ctx *ctx)
{
	return kfab_object_alloc(ctx, sizeof(struct kfab_domain),
				 KFAB_OBJ_DOMAIN, NULL);
}

int kfab_ioctl_domain_alloc(struct kfab_ucmd *ucmd)
{
	struct kfab_domain_alloc *cmd = ucmd->cmd;
	struct kfab_object *obj;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;

	obj = kfab_domain_create(ucmd->ctx);
	if (IS_ERR(obj))
		return PTR_ERR(obj);

	cmd->out_domain_id = obj->id;
	rc = kfab_ucmd_respond(ucmd, sizeof(*cmd));
	if (rc) {
		kfab_object_abort(ucmd->ctx, obj);
		return rc;
	}
	kfab_object_finalize(ucmd->ctx, obj);
	return 0;
}

void kfab_domain_destroy(struct kfab_object *obj)
{
	kfree(to_kfab_domain(obj));
}
