// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Endpoints: the kernel half of libfabric's FI_EP_RDM fid_ep
 * (Documentation/ep.rst).
 *
 * An endpoint is an object of the file that created it, like any other,
 * plus a struct kfab_ep_core that other endpoints reach by the endpoint's
 * number (its address): kfab_eps maps numbers to cores.  A sender takes a
 * reference on the core, then its lock; while the core is not dead, the
 * endpoint, its bindings and its CQs are there.  Destroying the endpoint
 * marks the core dead under the lock first, so nothing reaches the
 * endpoint after that, then releases what it held.
 *
 * The submission ring (uapi/linux/kfab.h has its protocol): one region the
 * process maps read-write, a tail it writes, a head the kernel writes.  The
 * kernel's head is its own copy; it reads the tail once per doorbell and
 * copies each entry before looking at it.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kfab.h"

/* Node-unique endpoint numbers: never 0, never reused while loaded. */
static atomic64_t kfab_ep_next_num = ATOMIC64_INIT(0);
/* Number -> struct kfab_ep_core, looked up under RCU. */
static DEFINE_XARRAY(kfab_eps);

/* The ring region: tail and head on a cache line each, then the entries. */
#define KFAB_SQ_OFF_TAIL	0
#define KFAB_SQ_OFF_HEAD	64
#define KFAB_SQ_OFF_SQES	128

static inline struct kfab_ep *to_kfab_ep(struct kfab_object *obj)
{
	return container_of(obj, struct kfab_ep, obj);
}

static void kfab_ep_core_release(struct kref *ref)
{
	struct kfab_ep_core *core = container_of(ref, struct kfab_ep_core,
						 ref);

	mutex_destroy(&core->lock);
	kfree_rcu(core, rcu);
}

void kfab_ep_core_put(struct kfab_ep_core *core)
{
	kref_put(&core->ref, kfab_ep_core_release);
}

/**
 * kfab_ep_core_find() - the endpoint with a number, for a sender
 * @num: the number (kfab_addr.ep)
 *
 * Return: its core with a reference (kfab_ep_core_put()), or NULL.  The
 * endpoint may die meanwhile: check @dead under the core's lock.
 */
struct kfab_ep_core *kfab_ep_core_find(u64 num)
{
	struct kfab_ep_core *core;

	rcu_read_lock();
	core = xa_load(&kfab_eps, num);
	if (core && !kref_get_unless_zero(&core->ref))
		core = NULL;
	rcu_read_unlock();
	return core;
}

/**
 * kfab_ep_complete() - report the end of a request of an endpoint
 * @ep: the endpoint (its core's lock held, or its own doorbell running)
 * @dir: which of its CQs and counters
 * @flags: the request's KFAB_SQE_* flags
 * @entry: the completion (flags, context, lengths...)
 * @err: 0, or the positive errno the request failed with
 * @olen: with @err: bytes that did not fit
 *
 * A success goes to the CQ when the request asked for it (the library
 * decides, from FI_COMPLETION, the CQ's selectivity and inject); an error
 * always goes.  The counter counts both.
 */
void kfab_ep_complete(struct kfab_ep *ep, enum kfab_dir dir, u64 flags,
		      const struct kfab_cq_entry *entry, int err, u64 olen)
{
	struct kfab_cntr *cntr = ep->cntr[dir];
	struct kfab_cq *cq = ep->cq[dir];
	bool overflowed;

	if (cntr)
		kfab_cntr_update(cntr, err ? KFAB_CNTR_ADD_ERR : KFAB_CNTR_ADD,
				 1, NULL, NULL);
	if (!cq)
		return;
	if (err) {
		struct kfab_cq_err e = {
			.entry = *entry,
			.olen = olen,
			.err = err,
		};

		/* A full error list is the consumer's: it is bounded, counted. */
		kfab_cq_post_err(cq, &e);
		return;
	}
	if (!(flags & KFAB_SQE_COMPLETION))
		return;
	kfab_cq_post(cq, entry, &overflowed);
}

int kfab_ioctl_ep_open(struct kfab_ucmd *ucmd)
{
	struct kfab_ep_open *cmd = ucmd->cmd;
	struct kfab_ctx *ctx = ucmd->ctx;
	struct kfab_object *domain, *obj;
	struct kfab_ep_core *core;
	struct kfab_ep *ep;
	u32 entries;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	entries = cmd->sq_entries ?: KFAB_SQ_DEFAULT_ENTRIES;
	if (cmd->type != KFAB_EP_TYPE_RDM || !is_power_of_2(entries) ||
	    entries > KFAB_SQ_MAX_ENTRIES)
		return -EINVAL;

	domain = kfab_object_get(ctx, cmd->domain_id, KFAB_OBJ_DOMAIN);
	if (!domain)
		return -ENOENT;
	obj = kfab_object_alloc(ctx, sizeof(*ep), KFAB_OBJ_EP);
	if (IS_ERR(obj)) {
		kfab_object_put(domain);
		return PTR_ERR(obj);
	}
	ep = to_kfab_ep(obj);
	ep->domain = domain;
	mutex_init(&ep->sq_lock);

	rc = -ENOMEM;
	if (kfab_test_should_fail(ctx, KFAB_FAULT_ALLOC))
		goto err_abort;
	core = kzalloc(sizeof(*core), GFP_KERNEL_ACCOUNT);
	if (!core)
		goto err_abort;
	kref_init(&core->ref);
	mutex_init(&core->lock);
	INIT_LIST_HEAD(&core->posted[KFAB_KIND_MSG]);
	INIT_LIST_HEAD(&core->posted[KFAB_KIND_TAGGED]);
	INIT_LIST_HEAD(&core->unexpected[KFAB_KIND_MSG]);
	INIT_LIST_HEAD(&core->unexpected[KFAB_KIND_TAGGED]);
	core->num = atomic64_inc_return(&kfab_ep_next_num);
	core->ep = ep;
	/* Not in kfab_eps until enabled: nobody can send to it before. */
	ep->core = core;

	ep->sq_region = kfab_region_alloc(KFAB_SQ_OFF_SQES +
					  (size_t)entries *
					  sizeof(struct kfab_sqe), false);
	if (IS_ERR(ep->sq_region)) {
		rc = PTR_ERR(ep->sq_region);
		ep->sq_region = NULL;
		goto err_abort;
	}
	ep->sq_entries = entries;
	ep->sq_tail_user = ep->sq_region->vaddr + KFAB_SQ_OFF_TAIL;
	ep->sq_head_user = ep->sq_region->vaddr + KFAB_SQ_OFF_HEAD;
	ep->sqes = ep->sq_region->vaddr + KFAB_SQ_OFF_SQES;
	rc = kfab_region_offer(ctx, ep->sq_region, &ep->sq_offset);
	if (rc)
		goto err_abort;

	cmd->out_ep_id = obj->id;
	cmd->out_addr = (struct kfab_addr){
		.family = KFAB_ADDR_LOCAL,
		.ep = core->num,
	};
	cmd->out_sq_entries = entries;
	cmd->out_sqe_size = sizeof(struct kfab_sqe);
	cmd->out_sq_mmap_offset = ep->sq_offset;
	cmd->out_sq_mmap_size = ep->sq_region->size;
	cmd->out_off_tail = KFAB_SQ_OFF_TAIL;
	cmd->out_off_head = KFAB_SQ_OFF_HEAD;
	cmd->out_off_sqes = KFAB_SQ_OFF_SQES;
	cmd->__reserved = 0;
	rc = kfab_ucmd_respond(ucmd, sizeof(*cmd));
	if (rc)
		goto err_abort;
	kfab_object_finalize(ctx, obj);
	return 0;

err_abort:
	kfab_object_abort(ctx, obj);
	return rc;
}

/* Drop what the endpoint holds; the core is dead or was never published. */
static void kfab_ep_unbind_all(struct kfab_ep *ep)
{
	int dir;

	for (dir = KFAB_TX; dir <= KFAB_RX; dir++) {
		if (ep->cq[dir])
			kfab_cq_put(ep->cq[dir]);
		if (ep->cntr[dir])
			kfab_cntr_put(ep->cntr[dir]);
	}
	if (ep->av)
		kfab_object_put(&ep->av->obj);
}

void kfab_ep_destroy(struct kfab_object *obj)
{
	struct kfab_ep *ep = to_kfab_ep(obj);
	struct kfab_ep_core *core = ep->core;

	if (core) {
		if (ep->enabled)
			xa_erase(&kfab_eps, core->num);
		mutex_lock(&core->lock);
		core->dead = true;
		core->ep = NULL;
		mutex_unlock(&core->lock);
		/* Receives and unexpected messages go, senders are told. */
		kfab_msg_flush(core);
		kfab_ep_core_put(core);
	}
	if (ep->sq_offset)
		kfab_region_withdraw(obj->ctx, ep->sq_offset);
	kfab_region_put(ep->sq_region);
	kfab_ep_unbind_all(ep);
	if (ep->domain)
		kfab_object_put(ep->domain);
	mutex_destroy(&ep->sq_lock);
	kfree(ep);
}

static struct kfab_ep *kfab_ep_get(struct kfab_ctx *ctx, u32 id)
{
	struct kfab_object *obj = kfab_object_get(ctx, id, KFAB_OBJ_EP);

	return obj ? to_kfab_ep(obj) : NULL;
}

/* Bind one CQ or counter per direction the flags name. */
static int kfab_ep_bind_dirs(struct kfab_ep *ep, struct kfab_object *obj,
			     u32 flags)
{
	bool is_cq = obj->type == KFAB_OBJ_CQ;
	int dir;

	if (!(flags & (KFAB_EP_BIND_TRANSMIT | KFAB_EP_BIND_RECV)) ||
	    (!is_cq && (flags & KFAB_EP_BIND_SELECTIVE)))
		return -EINVAL;
	for (dir = KFAB_TX; dir <= KFAB_RX; dir++) {
		if (!(flags & (dir == KFAB_TX ? KFAB_EP_BIND_TRANSMIT :
						KFAB_EP_BIND_RECV)))
			continue;
		if (is_cq ? !!ep->cq[dir] : !!ep->cntr[dir])
			return -EEXIST;
	}
	for (dir = KFAB_TX; dir <= KFAB_RX; dir++) {
		if (!(flags & (dir == KFAB_TX ? KFAB_EP_BIND_TRANSMIT :
						KFAB_EP_BIND_RECV)))
			continue;
		/* Each direction holds a user of its own. */
		refcount_inc(&obj->users);
		if (is_cq) {
			ep->cq[dir] = container_of(obj, struct kfab_cq, obj);
			ep->selective[dir] = flags & KFAB_EP_BIND_SELECTIVE;
		} else {
			ep->cntr[dir] = container_of(obj, struct kfab_cntr,
						     obj);
		}
	}
	return 0;
}

int kfab_ioctl_ep_bind(struct kfab_ucmd *ucmd)
{
	struct kfab_ep_bind *cmd = ucmd->cmd;
	struct kfab_object *obj = NULL;
	struct kfab_ep *ep;
	int rc;

	if (cmd->flags & ~(KFAB_EP_BIND_TRANSMIT | KFAB_EP_BIND_RECV |
			   KFAB_EP_BIND_SELECTIVE))
		return -EOPNOTSUPP;
	ep = kfab_ep_get(ucmd->ctx, cmd->ep_id);
	if (!ep)
		return -ENOENT;

	mutex_lock(&ep->sq_lock);
	rc = -EBUSY;
	if (ep->enabled)
		goto out;
	rc = -ENOENT;
	obj = kfab_object_get(ucmd->ctx, cmd->obj_id, KFAB_OBJ_AV);
	if (obj) {
		rc = -EINVAL;
		if (cmd->flags)
			goto out;
		rc = -EEXIST;
		if (ep->av)
			goto out;
		ep->av = container_of(obj, struct kfab_av, obj);
		obj = NULL;	/* the endpoint keeps this user */
		rc = 0;
		goto out;
	}
	obj = kfab_object_get(ucmd->ctx, cmd->obj_id, KFAB_OBJ_CQ);
	if (!obj)
		obj = kfab_object_get(ucmd->ctx, cmd->obj_id, KFAB_OBJ_CNTR);
	if (obj)
		rc = kfab_ep_bind_dirs(ep, obj, cmd->flags);
out:
	mutex_unlock(&ep->sq_lock);
	if (obj)
		kfab_object_put(obj);
	kfab_object_put(&ep->obj);
	return rc;
}

int kfab_ioctl_ep_enable(struct kfab_ucmd *ucmd)
{
	struct kfab_ep_enable *cmd = ucmd->cmd;
	struct kfab_ep *ep;
	int rc = 0;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	ep = kfab_ep_get(ucmd->ctx, cmd->ep_id);
	if (!ep)
		return -ENOENT;
	mutex_lock(&ep->sq_lock);
	if (!ep->av)
		rc = -EDESTADDRREQ;
	else if (!ep->enabled)
		rc = xa_err(xa_store(&kfab_eps, ep->core->num, ep->core,
				     GFP_KERNEL_ACCOUNT));
	if (!rc)
		ep->enabled = true;
	mutex_unlock(&ep->sq_lock);
	kfab_object_put(&ep->obj);
	return rc;
}

/*
 * Carry out the entries between the kernel's head and the tail user space
 * published, at most a ring's worth.  An entry that cannot go on yet
 * (-EAGAIN) stops the walk and stays first in the ring.
 */
static u32 kfab_ep_run_ring(struct kfab_ep *ep)
{
	/* The entries before tail are written: pairs with user's release. */
	u32 tail = smp_load_acquire(ep->sq_tail_user);
	u32 avail = tail - ep->sq_head, done = 0;
	struct kfab_sqe sqe;

	/* A tail beyond a ring's worth is garbage: take one ring. */
	if (avail > ep->sq_entries)
		avail = ep->sq_entries;
	while (done < avail) {
		u32 slot = ep->sq_head & (ep->sq_entries - 1);

		/* A copy: user space may change the slot meanwhile. */
		memcpy(&sqe, &ep->sqes[slot], sizeof(sqe));
		if (kfab_msg_submit(ep, &sqe) == -EAGAIN)
			break;
		ep->sq_head++;
		done++;
		/* The slot is read: user space may reuse it (its acquire). */
		smp_store_release(ep->sq_head_user, ep->sq_head);
	}
	return done;
}

int kfab_ioctl_ep_doorbell(struct kfab_ucmd *ucmd)
{
	struct kfab_ep_doorbell *cmd = ucmd->cmd;
	struct kfab_ep *ep;
	int rc = 0;

	if (cmd->flags)
		return -EOPNOTSUPP;
	ep = kfab_ep_get(ucmd->ctx, cmd->ep_id);
	if (!ep)
		return -ENOENT;
	mutex_lock(&ep->sq_lock);
	if (ep->enabled)
		cmd->out_done = kfab_ep_run_ring(ep);
	else
		rc = -EINVAL;
	mutex_unlock(&ep->sq_lock);
	kfab_object_put(&ep->obj);
	if (rc)
		return rc;
	return kfab_ucmd_respond(ucmd, sizeof(*cmd));
}

int kfab_ioctl_ep_cancel(struct kfab_ucmd *ucmd)
{
	struct kfab_ep_cancel *cmd = ucmd->cmd;
	struct kfab_ep *ep;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	ep = kfab_ep_get(ucmd->ctx, cmd->ep_id);
	if (!ep)
		return -ENOENT;
	mutex_lock(&ep->sq_lock);
	rc = ep->enabled ? kfab_msg_cancel(ep, cmd->context) : -ENOENT;
	mutex_unlock(&ep->sq_lock);
	kfab_object_put(&ep->obj);
	return rc;
}

/* debugfs: under the context's xarray lock, so nothing that sleeps. */
void kfab_ep_show(struct seq_file *s, struct kfab_object *obj)
{
	struct kfab_ep *ep = to_kfab_ep(obj);

	seq_printf(s, " addr local:0:%llu enabled %d sq %u head %u av %u cq %u/%u selective %d/%d cntr %u/%u",
		   ep->core->num, ep->enabled, ep->sq_entries,
		   READ_ONCE(ep->sq_head), ep->av ? ep->av->obj.id : 0,
		   ep->cq[KFAB_TX] ? ep->cq[KFAB_TX]->obj.id : 0,
		   ep->cq[KFAB_RX] ? ep->cq[KFAB_RX]->obj.id : 0,
		   ep->selective[KFAB_TX], ep->selective[KFAB_RX],
		   ep->cntr[KFAB_TX] ? ep->cntr[KFAB_TX]->obj.id : 0,
		   ep->cntr[KFAB_RX] ? ep->cntr[KFAB_RX]->obj.id : 0);
}

/**
 * kfab_ep_kopen() - an enabled endpoint for a kernel consumer
 * @ctx: the consumer's context
 * @domain: the parent (a user is taken)
 * @av: the AV to bind (a user is taken)
 * @kops: where its completions go instead of a CQ
 * @kpriv: the consumer's, for @kops
 * @out: the endpoint, published in @ctx
 *
 * It has no submission ring: kernel requests come through kfab_msg_post().
 * May sleep.  Return: 0, -ENOMEM, -ENOSPC.
 */
int kfab_ep_kopen(struct kfab_ctx *ctx, struct kfab_object *domain,
		  struct kfab_av *av, const struct kfab_ep_kops *kops,
		  void *kpriv, struct kfab_ep **out)
{
	struct kfab_object *obj;
	struct kfab_ep_core *core;
	struct kfab_ep *ep;
	int rc;

	obj = kfab_object_alloc(ctx, sizeof(*ep), KFAB_OBJ_EP);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	ep = to_kfab_ep(obj);
	refcount_inc(&domain->users);
	ep->domain = domain;
	mutex_init(&ep->sq_lock);
	ep->kops = kops;
	ep->kpriv = kpriv;

	rc = -ENOMEM;
	core = kzalloc(sizeof(*core), GFP_KERNEL_ACCOUNT);
	if (!core)
		goto err_abort;
	kref_init(&core->ref);
	mutex_init(&core->lock);
	INIT_LIST_HEAD(&core->posted[KFAB_KIND_MSG]);
	INIT_LIST_HEAD(&core->posted[KFAB_KIND_TAGGED]);
	INIT_LIST_HEAD(&core->unexpected[KFAB_KIND_MSG]);
	INIT_LIST_HEAD(&core->unexpected[KFAB_KIND_TAGGED]);
	core->num = atomic64_inc_return(&kfab_ep_next_num);
	core->ep = ep;
	ep->core = core;

	refcount_inc(&av->obj.users);
	ep->av = av;
	rc = xa_err(xa_store(&kfab_eps, core->num, core, GFP_KERNEL_ACCOUNT));
	if (rc)
		goto err_abort;
	ep->enabled = true;
	kfab_object_finalize(ctx, obj);
	*out = ep;
	return 0;

err_abort:
	kfab_object_abort(ctx, obj);
	return rc;
}
