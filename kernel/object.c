// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The object table of a kfab context.
 *
 * Creating an object is two-phase, so that a half-built object is never
 * visible to another thread of the same process: kfab_object_alloc() reserves
 * an id (the slot holds XA_ZERO_ENTRY, which lookups see as empty), the
 * handler fills the object and answers user space, then
 * kfab_object_finalize() publishes it or kfab_object_abort() frees it.
 *
 * Every object but a domain has a parent, the domain it was created under;
 * the object holds a user of it from kfab_object_alloc() until its own
 * destroy has run, so a domain is never destroyed under its children.
 * Each type's ->destroy frees what the type owns; the parent is this
 * file's business.
 */
#include <linux/slab.h>

#include "kfab.h"

static const struct kfab_object_ops kfab_object_ops[KFAB_OBJ_TYPE_MAX] = {
	[KFAB_OBJ_DOMAIN] = {
		.name = "domain",
		.destroy = kfab_domain_destroy,
	},
	[KFAB_OBJ_AV] = {
		.name = "av",
		.destroy = kfab_av_destroy,
		.nl_fill = kfab_av_nl_fill,
	},
	[KFAB_OBJ_CQ] = {
		.name = "cq",
		.destroy = kfab_cq_destroy,
		.show = kfab_cq_show,
		.nl_fill = kfab_cq_nl_fill,
	},
	[KFAB_OBJ_CNTR] = {
		.name = "cntr",
		.destroy = kfab_cntr_destroy,
		.show = kfab_cntr_show,
		.nl_fill = kfab_cntr_nl_fill,
	},
	[KFAB_OBJ_EP] = {
		.name = "ep",
		.destroy = kfab_ep_destroy,
		.show = kfab_ep_show,
		.nl_fill = kfab_ep_nl_fill,
		.doorbell = kfab_ep_doorbell,
		.cancel = kfab_ep_cancel,
		.sq = kfab_ep_sq,
	},
	[KFAB_OBJ_SRX] = {
		.name = "srx",
		.destroy = kfab_srx_destroy,
		.show = kfab_srx_show,
		.nl_fill = kfab_srx_nl_fill,
		.doorbell = kfab_srx_doorbell,
		.cancel = kfab_srx_cancel,
		.sq = kfab_srx_sq,
	},
};

/* What objects of @obj's type do: never NULL for a published object. */
const struct kfab_object_ops *kfab_object_ops_of(const struct kfab_object *obj)
{
	return &kfab_object_ops[obj->type];
}

const char *kfab_object_type_name(enum kfab_obj_type type)
{
	if (type <= KFAB_OBJ_NONE || type >= KFAB_OBJ_TYPE_MAX)
		return "none";
	return kfab_object_ops[type].name;
}

/* debugfs: the type's details of a published object, if it has any. */
void kfab_object_show(struct seq_file *s, struct kfab_object *obj)
{
	if (obj->type > KFAB_OBJ_NONE && obj->type < KFAB_OBJ_TYPE_MAX &&
	    kfab_object_ops[obj->type].show)
		kfab_object_ops[obj->type].show(s, obj);
}

/**
 * kfab_object_alloc() - allocate an object and reserve its id
 * @ctx: the owning context
 * @size: size of the containing struct, whose first member is the object
 * @type: its type
 * @parent: the domain it belongs to (the object takes a user of it), or
 *	NULL for a domain
 *
 * Return: the zeroed object holding the table's reference, or an ERR_PTR:
 * -ENOSPC when the context holds kfab_max_objects already, -ENOMEM.
 */
struct kfab_object *kfab_object_alloc(struct kfab_ctx *ctx, size_t size,
				      enum kfab_obj_type type,
				      struct kfab_object *parent)
{
	struct kfab_object *obj;
	int rc;

	obj = kfab_alloc(ctx, kzalloc(size, GFP_KERNEL_ACCOUNT));
	if (!obj)
		return ERR_PTR(-ENOMEM);
	obj->type = type;
	obj->ctx = ctx;
	refcount_set(&obj->users, 1);

	rc = xa_alloc(&ctx->objects, &obj->id, XA_ZERO_ENTRY,
		      XA_LIMIT(1, kfab_max_objects), GFP_KERNEL_ACCOUNT);
	if (rc) {
		kfree(obj);
		return ERR_PTR(rc == -EBUSY ? -ENOSPC : rc);
	}
	if (parent) {
		refcount_inc(&parent->users);
		obj->parent = parent;
	}
	return obj;
}

/**
 * kfab_object_alloc_in() - kfab_object_alloc() under a domain user space names
 * @ctx: the owning context
 * @domain_id: the id of a domain of @ctx
 * @size: as kfab_object_alloc()
 * @type: as kfab_object_alloc()
 *
 * The start of every command that creates an object under a domain.
 * Return: as kfab_object_alloc(), or ERR_PTR(-ENOENT) when @domain_id
 * names no domain of @ctx.
 */
struct kfab_object *kfab_object_alloc_in(struct kfab_ctx *ctx, u32 domain_id,
					 size_t size, enum kfab_obj_type type)
{
	struct kfab_object *domain, *obj;

	domain = kfab_object_get(ctx, domain_id, KFAB_OBJ_DOMAIN);
	if (!domain)
		return ERR_PTR(-ENOENT);
	obj = kfab_object_alloc(ctx, size, type, domain);
	kfab_object_put(domain);
	return obj;
}

/* Run the type's destroy, then let go of the parent. */
static void kfab_object_free(struct kfab_object *obj)
{
	struct kfab_object *parent = obj->parent;

	kfab_object_ops[obj->type].destroy(obj);
	if (parent)
		kfab_object_put(parent);
}

/* Undo kfab_object_alloc() for an object that was never published. */
void kfab_object_abort(struct kfab_ctx *ctx, struct kfab_object *obj)
{
	xa_erase(&ctx->objects, obj->id);
	kfab_object_free(obj);
}

/* Make a fully built object visible to lookups. */
void kfab_object_finalize(struct kfab_ctx *ctx, struct kfab_object *obj)
{
	void *old;

	/* The slot exists already, so this store never allocates. */
	old = xa_store(&ctx->objects, obj->id, obj, GFP_KERNEL);
	WARN_ON(old);
}

/**
 * kfab_object_get() - look up an object of a context and take a reference
 * @ctx: the context
 * @id: the id user space gave
 * @type: the type the caller needs, or KFAB_OBJ_ANY
 *
 * Return: the object, to be released with kfab_object_put(), or NULL when
 * @id names nothing of that type in @ctx.
 */
struct kfab_object *kfab_object_get(struct kfab_ctx *ctx, u32 id,
				    enum kfab_obj_type type)
{
	struct kfab_object *obj;

	xa_lock(&ctx->objects);
	obj = xa_load(&ctx->objects, id);
	if (obj && ((type != KFAB_OBJ_ANY && obj->type != type) ||
		    !refcount_inc_not_zero(&obj->users)))
		obj = NULL;
	xa_unlock(&ctx->objects);
	return obj;
}

/* The table holds its own reference, so a put never frees. */
void kfab_object_put(struct kfab_object *obj)
{
	refcount_dec(&obj->users);
}

/**
 * kfab_object_destroy() - remove an object from its context and free it
 * @ctx: the context
 * @id: the object's id
 *
 * Return: 0, -ENOENT when @id names no object, -EBUSY while something else
 * still holds a reference.
 */
int kfab_object_destroy(struct kfab_ctx *ctx, u32 id)
{
	struct kfab_object *obj;

	xa_lock(&ctx->objects);
	obj = xa_load(&ctx->objects, id);
	if (!obj) {
		xa_unlock(&ctx->objects);
		return -ENOENT;
	}
	if (!refcount_dec_if_one(&obj->users)) {
		xa_unlock(&ctx->objects);
		return -EBUSY;
	}
	__xa_erase(&ctx->objects, id);
	xa_unlock(&ctx->objects);

	kfab_object_free(obj);
	return 0;
}

/*
 * Called on the last close of the file, when no ioctl can run any more.
 * Children hold references on their parents, so destroy in passes: each pass
 * frees every object nobody depends on, until the table is empty.
 */
void kfab_ctx_destroy_all(struct kfab_ctx *ctx)
{
	struct kfab_object *obj;
	unsigned long index;
	bool progress;

	do {
		progress = false;
		xa_for_each(&ctx->objects, index, obj)
			if (!kfab_object_destroy(ctx, index))
				progress = true;
	} while (progress);

	/* Anything left is a reference leak inside kfab: keep it, say so. */
	WARN_ON(!xa_empty(&ctx->objects));
	xa_destroy(&ctx->objects);
}

int kfab_ioctl_destroy(struct kfab_ucmd *ucmd)
{
	struct kfab_destroy *cmd = ucmd->cmd;

	return kfab_object_destroy(ucmd->ctx, cmd->id);
}
