// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Domains: the kernel half of libfabric's fid_domain.  A domain is the parent
 * of the AVs, CQs, counters and endpoints later commands create; for now it
 * only exists and is counted.
 */
#include <linux/slab.h>

#include "kfab.h"

static inline struct kfab_domain *to_kfab_domain(struct kfab_object *obj)
{
	return container_of(obj, struct kfab_domain, obj);
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

	obj = kfab_object_alloc(ucmd->ctx, sizeof(struct kfab_domain),
				KFAB_OBJ_DOMAIN);
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
