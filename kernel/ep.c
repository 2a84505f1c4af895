// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Endpoints: the kernel half of libfabric's FI_EP_RDM fid_ep
 * (Documentation/ep.rst).
 *
 * An endpoint is an object of the file that created it, like any other,
 * plus a struct kfab_ep_core that other endpoints reach by the endpoint's
 * number (its address): kfab_eps maps numbers to cores.  A sender takes a
 * reference on the core, then the lock of the core's receive context;
 * while the core is not dead, the endpoint, its bindings and its CQs are
 * there.  Destroying the endpoint marks the core dead under that lock
 * first, so nothing reaches the endpoint after that, then releases what
 * it held.
 *
 * Messages to an endpoint are matched in a receive context (msg.c): its
 * own, made with the core, or a shared one (srx.c) bound before enable.
 * The receive context's lock covers the core's @dead and @ep.
 *
 * Requests come through a submission ring (sq.c) and its doorbell.
 */
#include <linux/lockdep.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <net/netlink.h>

#include <linux/kfab_netlink.h>

#include "kfab.h"
#include "net.h"
#include "trace.h"

/*
 * Machine-unique endpoint numbers: above the services, never reused while
 * loaded (kfab_incarnation tells loads apart).
 */
static atomic64_t kfab_ep_next_num = ATOMIC64_INIT(KFAB_SERVICE_MAX);
/* Blocks of scalable endpoints: KFAB_EP_BLOCK_BIT | n * KFAB_EP_BLOCK_MAX */
static atomic64_t kfab_ep_next_block = ATOMIC64_INIT(0);
/* Number -> struct kfab_ep_core, looked up under RCU. */
static DEFINE_XARRAY(kfab_eps);
/*
 * Counts the cores that left kfab_eps: a core found while it was N is
 * still the number's, and not yet freed, as long as it reads N
 * (kfab_ep_core_epoch(), kfab_ep_core_reget()).
 */
static atomic64_t kfab_eps_gone = ATOMIC64_INIT(0);

/*
 * A number's index in kfab_eps.  The numbers start above the services;
 * indexed as they are, even the first endpoint made the tree three levels
 * deep, and every send walked them (Documentation/bench.rst).
 */
static unsigned long kfab_ep_index(u64 num)
{
	return num - (KFAB_SERVICE_MAX + 1);
}

static inline struct kfab_ep *to_kfab_ep(struct kfab_object *obj)
{
	return container_of(obj, struct kfab_ep, obj);
}

static void kfab_ep_core_release(struct kref *ref)
{
	struct kfab_ep_core *core = container_of(ref, struct kfab_ep_core,
						 ref);

	if (core->rxc)
		kfab_rx_ctx_put(core->rxc);
	kfab_node_release(core);
	kfree_rcu(core, rcu);
}

void kfab_ep_core_put(struct kfab_ep_core *core)
{
	kref_put(&core->ref, kfab_ep_core_release);
}

/*
 * A core leaves kfab_eps: the erase, then the count, both before the last
 * reference can go (kfree_rcu() follows the count).
 */
static void kfab_eps_erase(struct kfab_ep_core *core)
{
	xa_erase(&kfab_eps, kfab_ep_index(core->num));
	/* The erase is seen by whoever sees the count (kfab_ep_core_epoch()). */
	smp_mb__before_atomic();
	atomic64_inc(&kfab_eps_gone);
}

/**
 * kfab_ep_core_epoch() - the count of cores gone, read before a lookup
 *
 * Return: the value to keep with a core kfab_ep_core_find() then finds,
 * for kfab_ep_core_reget().
 */
u64 kfab_ep_core_epoch(void)
{
	u64 epoch = atomic64_read(&kfab_eps_gone);

	/* Pairs with kfab_eps_erase(): the lookup after sees its erase. */
	smp_rmb();
	return epoch;
}

/**
 * kfab_ep_core_reget() - a core found earlier, again, without a lookup
 * @core: what kfab_ep_core_find() returned, its reference since dropped
 * @epoch: kfab_ep_core_epoch() before that lookup
 *
 * While no core has left kfab_eps since @epoch, @core is still in it,
 * so its memory is still a core's (freed only after it leaves and a grace
 * period passes).  A core that leaves while we look counts after its
 * erase and before its kfree_rcu(): reading the old count in this
 * read-side section means the grace period waits for us.  Holding no
 * reference meanwhile, the keeper pins nothing (Documentation/bench.rst,
 * "A kept destination and the library's receive").
 *
 * Return: @core with a reference, or NULL: look it up anew.
 */
struct kfab_ep_core *kfab_ep_core_reget(struct kfab_ep_core *core, u64 epoch)
{
	rcu_read_lock();
	if (atomic64_read(&kfab_eps_gone) != epoch ||
	    !kref_get_unless_zero(&core->ref))
		core = NULL;
	rcu_read_unlock();
	return core;
}

/**
 * kfab_ep_core_find() - the endpoint with a number, for a sender
 * @num: the number (kfab_addr.ep)
 *
 * Return: its core with a reference (kfab_ep_core_put()), or NULL.  The
 * endpoint may die meanwhile: check @dead under its receive context's
 * lock (@core->rxc->lock).
 */
struct kfab_ep_core *kfab_ep_core_find(u64 num)
{
	struct kfab_ep_core *core;

	rcu_read_lock();
	core = xa_load(&kfab_eps, kfab_ep_index(num));
	if (core && !kref_get_unless_zero(&core->ref))
		core = NULL;
	rcu_read_unlock();
	return core;
}

/**
 * kfab_ep_complete() - report the end of a request of an endpoint
 * @ep: the endpoint (its receive context's lock held, or its own
 *	doorbell running)
 * @comp: the completion
 *
 * A success goes to the CQ when the request asked for it (the library
 * decides, from FI_COMPLETION, the CQ's selectivity and inject); an error
 * always goes, as a positive errno in the CQ's error entry.  The counter
 * counts both.  A kernel caller's endpoint has its hook called instead.
 */
/*
 * Every completion, counted for netlink before it is reported; a receive
 * of an SRX on the SRX too.  A peek's report (found or -ENOMSG) receives
 * nothing: its claim, if any, is the receive.
 */
static void kfab_ep_count(struct kfab_ep *ep, const struct kfab_comp *comp)
{
	struct kfab_ep_stats __percpu *st = ep->stats;

	if (comp->dir == KFAB_RX && (comp->req_flags & KFAB_SQE_PEEK))
		return;
	if (!comp->status) {
		if (comp->dir == KFAB_RX)
			kfab_ep_count_recv(ep, comp->entry.len);
		return;
	}
	if (comp->dir == KFAB_RX && ep->srx)
		kfab_srx_count_err(ep->srx, comp->status);
	if (comp->status == -KFAB_ERR_TRUNC)
		this_cpu_inc(st->truncated);
	else if (comp->status == -ECANCELED)
		this_cpu_inc(st->canceled);
	if (comp->dir == KFAB_TX)
		this_cpu_inc(st->tx_errors);
	else
		this_cpu_inc(st->rx_errors);
}

void kfab_ep_complete(struct kfab_ep *ep, const struct kfab_comp *comp)
{
	struct kfab_cntr *cntr = ep->cntr[comp->dir];
	struct kfab_cq *cq = ep->cq[comp->dir];
	bool overflowed;

	kfab_ep_count(ep, comp);
	if (comp->status)
		trace_kfab_error(ep->core->num, comp->dir,
				 comp->entry.op_context, comp->entry.len,
				 comp->status);
	else
		trace_kfab_complete(ep->core->num, comp->dir,
				    comp->entry.op_context, comp->entry.len, 0);
	if (ep->kops) {
		if (comp->status || (comp->req_flags & KFAB_SQE_COMPLETION))
			ep->kops->complete(ep, comp);
		return;
	}
	if (cntr)
		kfab_cntr_update(cntr, comp->status ? KFAB_CNTR_ADD_ERR :
						      KFAB_CNTR_ADD,
				 1, NULL, NULL);
	if (!cq)
		return;
	if (comp->status) {
		struct kfab_cq_err e = {
			.entry = comp->entry,
			.olen = comp->olen,
			.err = -comp->status,
		};

		if (comp->payload && (comp->entry.flags & KFAB_COMP_PAYLOAD)) {
			e.payload_len = min_t(u64, comp->entry.len,
					      KFAB_CQ_PAYLOAD_MAX);
			memcpy(e.payload, comp->payload, e.payload_len);
		}
		/* A full error list is the consumer's: it is bounded, counted. */
		kfab_cq_post_err(cq, &e);
		return;
	}
	if (!(comp->req_flags & KFAB_SQE_COMPLETION))
		return;
	kfab_cq_post_payload(cq, &comp->entry, comp->payload, &overflowed);
}

/* The core of a new endpoint, with its own receive context and address. */
static int kfab_ep_core_new(struct kfab_ep *ep, struct net *net,
			    const struct kfab_addr *src)
{
	struct kfab_ep_core *core;

	core = kzalloc(sizeof(*core), GFP_KERNEL_ACCOUNT);
	if (!core)
		return -ENOMEM;
	kref_init(&core->ref);
	INIT_LIST_HEAD(&core->rx_link);
	mutex_init(&core->share_lock);
	core->num = atomic64_inc_return(&kfab_ep_next_num);
	core->ep = ep;
	/* Not in kfab_eps until enabled: nobody can send to it before. */
	ep->core = core;
	core->rxc = kfab_rx_ctx_alloc();
	if (!core->rxc)
		return -ENOMEM;
	return kfab_node_bind(net, src, core);
}

/**
 * kfab_ep_create() - a new endpoint, not yet published in @ctx
 * @ctx: the owner's context
 * @domain: the parent (the endpoint takes a user of it)
 * @net: the network namespace it lives in
 * @src: the address asked for (struct kfab_ep_open's @src)
 * @sq_entries: entries of its submission ring, or 0 for a kernel caller's
 *	endpoint, which has none (its requests come through kfab_msg_post())
 * @kops: a kernel caller's hooks, or NULL
 * @kpriv: the kernel caller's, for @kops
 *
 * The one constructor of KFAB_IOC_EP_OPEN and kfab_ep_kopen().  The caller
 * publishes it with kfab_object_finalize() or drops it with
 * kfab_object_abort().  May sleep.
 *
 * Return: the endpoint, or an ERR_PTR: -ENOMEM, -ENOSPC, or
 * kfab_node_bind()'s address errors.
 */
static struct kfab_ep *kfab_ep_create(struct kfab_ctx *ctx,
				      struct kfab_object *domain,
				      struct net *net,
				      const struct kfab_addr *src,
				      u32 sq_entries,
				      const struct kfab_ep_kops *kops,
				      void *kpriv)
{
	struct kfab_object *obj;
	struct kfab_ep *ep;
	int rc;

	obj = kfab_object_alloc(ctx, sizeof(*ep), KFAB_OBJ_EP, domain);
	if (IS_ERR(obj))
		return ERR_CAST(obj);
	ep = to_kfab_ep(obj);
	mutex_init(&ep->sq_lock);
	ep->kops = kops;
	ep->kpriv = kpriv;

	rc = -ENOMEM;
	if (kfab_fault(ctx, KFAB_FAULT_ALLOC))
		goto err_abort;
	ep->pins = kfab_pin_stats_new();
	ep->stats = alloc_percpu_gfp(struct kfab_ep_stats, GFP_KERNEL_ACCOUNT);
	if (!ep->pins || !ep->stats)
		goto err_abort;
	rc = kfab_ep_core_new(ep, net, src);
	if (rc)
		goto err_abort;
	if (sq_entries) {
		rc = kfab_sq_init(ctx, &ep->sq, sq_entries);
		if (rc)
			goto err_abort;
	}
	return ep;

err_abort:
	kfab_object_abort(ctx, obj);
	return ERR_PTR(rc);
}

/* The block fields of KFAB_IOC_EP_OPEN make sense together, or -EINVAL. */
static int kfab_ep_open_block_valid(const struct kfab_ep_open *cmd)
{
	u32 flags = cmd->flags;

	if (flags & ~(KFAB_EP_OPEN_BLOCK | KFAB_EP_OPEN_JOIN |
		      KFAB_EP_OPEN_SEND_ONLY))
		return -EOPNOTSUPP;
	if (!flags)
		return cmd->block_ep_id || cmd->block_index ? -EINVAL : 0;
	/* A block's numbers are the module's: no service. */
	if (cmd->src.ep)
		return -EINVAL;
	if (flags == KFAB_EP_OPEN_BLOCK)
		return cmd->block_ep_id || cmd->block_index ? -EINVAL : 0;
	if (flags == KFAB_EP_OPEN_JOIN)
		return cmd->block_index < KFAB_EP_BLOCK_MAX ? 0 : -EINVAL;
	if (flags == (KFAB_EP_OPEN_JOIN | KFAB_EP_OPEN_SEND_ONLY))
		return cmd->block_index ? -EINVAL : 0;
	return -EINVAL;
}

static struct kfab_ep *kfab_ep_get(struct kfab_ctx *ctx, u32 id);

/*
 * Make the new, unpublished @ep a member of a block (scalable endpoints):
 * a new block's anchor, or a context of the block of an endpoint of this
 * file.  Nothing knows @ep's number yet, so it may change.
 */
static int kfab_ep_open_block(struct kfab_ucmd *ucmd, struct kfab_ep *ep)
{
	struct kfab_ep_open *cmd = ucmd->cmd;
	struct kfab_ep_core *core = ep->core;
	struct kfab_ep *base;
	int rc = 0;

	if (cmd->flags & KFAB_EP_OPEN_BLOCK) {
		core->block = KFAB_EP_BLOCK_BIT |
			      atomic64_inc_return(&kfab_ep_next_block) *
			      KFAB_EP_BLOCK_MAX;
		core->addr.ep = cpu_to_be64(core->block);
		core->send_only = true;
		return 0;
	}
	base = kfab_ep_get(ucmd->ctx, cmd->block_ep_id);
	if (!base)
		return -ENOENT;
	if (!base->core->block || base->core->net != core->net) {
		rc = -EINVAL;
	} else {
		core->block = base->core->block;
		core->addr = base->core->addr;
		if (cmd->flags & KFAB_EP_OPEN_SEND_ONLY)
			core->send_only = true;
		else
			core->num = core->block | cmd->block_index;
	}
	kfab_object_put(&base->obj);
	return rc;
}

int kfab_ioctl_ep_open(struct kfab_ucmd *ucmd)
{
	struct kfab_ep_open *cmd = ucmd->cmd;
	struct kfab_ctx *ctx = ucmd->ctx;
	struct kfab_object *domain;
	struct kfab_ep *ep;
	u32 entries;
	int rc;

	rc = kfab_ep_open_block_valid(cmd);
	if (rc)
		return rc;
	rc = kfab_sq_entries(cmd->sq_entries, &entries);
	if (rc || cmd->type != KFAB_EP_TYPE_RDM)
		return -EINVAL;

	domain = kfab_object_get(ctx, cmd->domain_id, KFAB_OBJ_DOMAIN);
	if (!domain)
		return -ENOENT;
	ep = kfab_ep_create(ctx, domain, current->nsproxy->net_ns, &cmd->src,
			    entries, NULL, NULL);
	kfab_object_put(domain);
	if (IS_ERR(ep))
		return PTR_ERR(ep);
	if (cmd->flags) {
		rc = kfab_ep_open_block(ucmd, ep);
		if (rc) {
			kfab_object_abort(ctx, &ep->obj);
			return rc;
		}
	}

	cmd->out_ep_id = ep->obj.id;
	cmd->out_addr = ep->core->addr;
	kfab_sq_layout(&ep->sq, &cmd->out_sq);
	rc = kfab_ucmd_respond(ucmd, sizeof(*cmd));
	if (rc) {
		kfab_object_abort(ctx, &ep->obj);
		return rc;
	}
	kfab_object_finalize(ctx, &ep->obj);
	return 0;
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
	if (ep->srx)
		kfab_object_put(&ep->srx->obj);
}

void kfab_ep_destroy(struct kfab_object *obj)
{
	struct kfab_ep *ep = to_kfab_ep(obj);
	struct kfab_ep_core *core = ep->core;

	if (core) {
		/* Copies with its help are over before its CQ goes. */
		mutex_lock(&core->share_lock);
		core->tx_cq = NULL;
		mutex_unlock(&core->share_lock);
		if (ep->enabled && !core->send_only)
			kfab_eps_erase(core);
		kfab_node_unbind(core);
		/* Its unexpected messages go, their senders are told. */
		if (core->rxc) {
			kfab_msg_detach(core);
			/* Its own receives too; a shared context's stay. */
			if (!ep->srx) {
				kfab_msg_flush_rx(core->rxc);
				kfab_bufrecv_withdraw(obj->ctx, core->rxc);
			}
		}
		kfab_ep_core_put(core);
	}
	kfab_sq_fini(obj->ctx, &ep->sq);
	kfab_ep_unbind_all(ep);
	/* Buffers still pinned against it hold their own references. */
	kfab_pin_stats_put(ep->pins);
	free_percpu(ep->stats);
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

	lockdep_assert_held(&ep->sq_lock);
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

/* Receive through a shared context instead of the endpoint's own lists. */
static int kfab_ep_bind_srx(struct kfab_ep *ep, struct kfab_object *obj,
			    u32 flags)
{
	struct kfab_srx *srx = container_of(obj, struct kfab_srx, obj);

	lockdep_assert_held(&ep->sq_lock);
	if (flags)
		return -EINVAL;
	if (ep->srx)
		return -EEXIST;
	/* Not enabled: nothing was posted to or sent to the own lists. */
	kref_get(&srx->rxc->ref);
	kfab_rx_ctx_put(ep->core->rxc);
	ep->core->rxc = srx->rxc;
	ep->srx = srx;
	return 0;
}

/* An AV: where the endpoint's destinations and sources are looked up. */
static int kfab_ep_bind_av(struct kfab_ep *ep, struct kfab_object *obj,
			   u32 flags)
{
	lockdep_assert_held(&ep->sq_lock);
	if (flags)
		return -EINVAL;
	if (ep->av)
		return -EEXIST;
	ep->av = container_of(obj, struct kfab_av, obj);
	return 0;
}

int kfab_ioctl_ep_bind(struct kfab_ucmd *ucmd)
{
	struct kfab_ep_bind *cmd = ucmd->cmd;
	struct kfab_object *obj;
	struct kfab_ep *ep;
	int rc;

	if (cmd->flags & ~(KFAB_EP_BIND_TRANSMIT | KFAB_EP_BIND_RECV |
			   KFAB_EP_BIND_SELECTIVE))
		return -EOPNOTSUPP;
	ep = kfab_ep_get(ucmd->ctx, cmd->ep_id);
	if (!ep)
		return -ENOENT;
	obj = kfab_object_get(ucmd->ctx, cmd->obj_id, KFAB_OBJ_ANY);

	mutex_lock(&ep->sq_lock);
	if (ep->enabled) {
		rc = -EBUSY;
		goto out;
	}
	switch (obj ? obj->type : KFAB_OBJ_NONE) {
	case KFAB_OBJ_AV:
		rc = kfab_ep_bind_av(ep, obj, cmd->flags);
		break;
	case KFAB_OBJ_SRX:
		rc = kfab_ep_bind_srx(ep, obj, cmd->flags);
		break;
	case KFAB_OBJ_CQ:
	case KFAB_OBJ_CNTR:
		rc = kfab_ep_bind_dirs(ep, obj, cmd->flags);
		break;
	default:
		rc = -ENOENT;
		break;
	}
	/* A bound AV or SRX keeps this user; CQs and counters took their own. */
	if (!rc && (obj->type == KFAB_OBJ_AV || obj->type == KFAB_OBJ_SRX))
		obj = NULL;
out:
	mutex_unlock(&ep->sq_lock);
	if (obj)
		kfab_object_put(obj);
	kfab_object_put(&ep->obj);
	return rc;
}

/*
 * Join the receive context: source addresses are looked up in the
 * endpoint's AV, which must be every endpoint's of a shared context
 * (fi_endpoint(3)); the first endpoint of an SRX sets it.  An SRX's small
 * receives may wait unpinned for a completion that carries the message;
 * one that cannot has them pinned first.
 */
static int kfab_ep_join_rx(struct kfab_ep *ep)
{
	struct kfab_rx_ctx *rxc = ep->core->rxc;
	struct kfab_srx *srx = ep->srx;
	int rc = 0;

	mutex_lock(&rxc->lock);
	if (srx && srx->av && srx->av != ep->av)
		rc = -EINVAL;
	else if (srx)
		rc = kfab_rx_ctx_pin_small(rxc, ep);
	if (!rc && srx && !srx->av) {
		refcount_inc(&ep->av->obj.users);
		srx->av = ep->av;
	}
	if (!rc) {
		rxc->av = ep->av;
		list_add_tail(&ep->core->rx_link, &rxc->cores);
	}
	mutex_unlock(&rxc->lock);
	return rc;
}

/* Enable: join the receive context, become reachable by number. */
static int kfab_ep_publish(struct kfab_ep *ep)
{
	int rc;

	lockdep_assert_held(&ep->sq_lock);
	rc = kfab_ep_join_rx(ep);
	if (rc)
		return rc;
	/* Only a block's receive context can meet a number that is taken. */
	if (!ep->core->send_only)
		rc = xa_insert(&kfab_eps, kfab_ep_index(ep->core->num), ep->core,
			       GFP_KERNEL_ACCOUNT);
	if (rc == -EBUSY)
		rc = -EADDRINUSE;
	if (!rc) {
		rc = kfab_node_publish(ep->core);
		if (rc)
			kfab_eps_erase(ep->core);
	}
	if (rc) {
		mutex_lock(&ep->core->rxc->lock);
		list_del_init(&ep->core->rx_link);
		mutex_unlock(&ep->core->rxc->lock);
		return rc;
	}
	ep->enabled = true;
	/* Receivers may publish copies of its messages there (share.c). */
	mutex_lock(&ep->core->share_lock);
	ep->core->tx_cq = ep->kops ? NULL : ep->cq[KFAB_TX];
	mutex_unlock(&ep->core->share_lock);
	return 0;
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
	if (ep->enabled)
		goto out;
	rc = -EDESTADDRREQ;
	if (!ep->av)
		goto out;
	rc = kfab_ep_publish(ep);
out:
	mutex_unlock(&ep->sq_lock);
	kfab_object_put(&ep->obj);
	return rc;
}

/* ->doorbell: -EINVAL before enable, when nothing may be sent yet. */
int kfab_ep_doorbell(struct kfab_object *obj, u32 *out_done)
{
	struct kfab_ep *ep = to_kfab_ep(obj);
	/* kfab_dest_init(): no clearing of the whole on every doorbell. */
	struct kfab_dest dest __uninitialized;
	int rc = 0;

	kfab_dest_init(&dest);
	mutex_lock(&ep->sq_lock);
	if (ep->enabled) {
		/* Sends to another node go out together at the end. */
		ep->plugging = true;
		/* Sends to one address look it up once. */
		ep->dest = &dest;
		*out_done = kfab_sq_run(&ep->sq, kfab_ep_submit, ep);
		ep->dest = NULL;
		if (dest.target && !dest.as_memo)
			kfab_dest_remember(&ep->memo, &dest);
		ep->plugging = false;
		kfab_peer_unplug(ep);
	} else {
		rc = -EINVAL;
	}
	mutex_unlock(&ep->sq_lock);
	if (dest.target)
		kfab_ep_core_put(dest.target);
	return rc;
}

struct kfab_sq *kfab_ep_sq(struct kfab_object *obj)
{
	return &to_kfab_ep(obj)->sq;
}

/* ->cancel: an endpoint of an SRX has no receives of its own. */
int kfab_ep_cancel(struct kfab_object *obj, u64 context)
{
	struct kfab_ep *ep = to_kfab_ep(obj);
	int rc;

	mutex_lock(&ep->sq_lock);
	rc = ep->enabled && !ep->srx ?
	     kfab_msg_cancel(ep->core->rxc, context) : -ENOENT;
	mutex_unlock(&ep->sq_lock);
	return rc;
}

/* debugfs: under the context's xarray lock, so nothing that sleeps. */
void kfab_ep_show(struct seq_file *s, struct kfab_object *obj)
{
	struct kfab_ep *ep = to_kfab_ep(obj);

	seq_puts(s, " addr ");
	kfab_addr_show(s, &ep->core->addr);
	seq_printf(s, " num %llu enabled %d sq %u head %u av %u srx %u cq %u/%u selective %d/%d cntr %u/%u",
		   ep->core->num, ep->enabled,
		   ep->sq.entries,
		   READ_ONCE(ep->sq.head), ep->av ? ep->av->obj.id : 0,
		   ep->srx ? ep->srx->obj.id : 0,
		   ep->cq[KFAB_TX] ? ep->cq[KFAB_TX]->obj.id : 0,
		   ep->cq[KFAB_RX] ? ep->cq[KFAB_RX]->obj.id : 0,
		   ep->selective[KFAB_TX], ep->selective[KFAB_RX],
		   ep->cntr[KFAB_TX] ? ep->cntr[KFAB_TX]->obj.id : 0,
		   ep->cntr[KFAB_RX] ? ep->cntr[KFAB_RX]->obj.id : 0);
}

/* The id of a bound object, 0 for none: bindings are set once, then fixed. */
static u32 kfab_ep_bound_id(struct kfab_object *obj)
{
	return obj ? obj->id : 0;
}

/* netlink: what an endpoint (KFAB_OBJ_EP) has pinned now. */
u64 kfab_ep_pinned(struct kfab_object *obj)
{
	struct kfab_ep *ep = to_kfab_ep(obj);

	return ep->pins ? atomic64_read(&ep->pins->bytes) : 0;
}

static int kfab_ep_put_stat(struct sk_buff *skb, int type, atomic64_t *v)
{
	return kfab_nl_put_u64(skb, type, atomic64_read(v));
}

/* netlink: the traffic, and what waits unexpected where it receives. */
static int kfab_ep_nl_fill_stats(struct sk_buff *skb, struct kfab_ep *ep)
{
	struct kfab_ep_stats __percpu *st = ep->stats;

	if (kfab_nl_put_stat(skb, KFAB_NL_ATTR_TX_MSGS, &st->tx_msgs) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_TX_BYTES, &st->tx_bytes) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_RX_MSGS, &st->rx_msgs) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_RX_BYTES, &st->rx_bytes) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_TX_ERRORS, &st->tx_errors) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_RX_ERRORS, &st->rx_errors) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_TRUNCATED, &st->truncated) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_CANCELED, &st->canceled) ||
	    kfab_rx_ctx_nl_fill(skb, ep->core->rxc))
		return -EMSGSIZE;
	if (ep->pins &&
	    (kfab_ep_put_stat(skb, KFAB_NL_ATTR_PINNED_BYTES,
			      &ep->pins->bytes) ||
	     kfab_ep_put_stat(skb, KFAB_NL_ATTR_PINNED_PEAK,
			      &ep->pins->peak)))
		return -EMSGSIZE;
	return 0;
}

/* netlink: number, state and bindings (no sleep: xarray lock). */
int kfab_ep_nl_fill(struct sk_buff *skb, struct kfab_object *obj)
{
	struct kfab_ep *ep = to_kfab_ep(obj);
	struct kfab_cq *tx_cq = READ_ONCE(ep->cq[KFAB_TX]);
	struct kfab_cq *rx_cq = READ_ONCE(ep->cq[KFAB_RX]);
	struct kfab_srx *srx = READ_ONCE(ep->srx);
	struct kfab_av *av = READ_ONCE(ep->av);
	/* Set once under sq_lock: seen or not yet, either is true enough. */
	bool enabled = data_race(ep->enabled);

	if (kfab_nl_put_u64(skb, KFAB_NL_ATTR_EP_NUM, ep->core->num) ||
	    (enabled &&
	     nla_put_flag(skb, KFAB_NL_ATTR_EP_ENABLED)) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_ENTRIES, ep->sq.entries) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_EP_AV_ID,
			kfab_ep_bound_id(av ? &av->obj : NULL)) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_EP_SRX_ID,
			kfab_ep_bound_id(srx ? &srx->obj : NULL)) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_EP_TX_CQ_ID,
			kfab_ep_bound_id(tx_cq ? &tx_cq->obj : NULL)) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_EP_RX_CQ_ID,
			kfab_ep_bound_id(rx_cq ? &rx_cq->obj : NULL)))
		return -EMSGSIZE;
	return kfab_ep_nl_fill_stats(skb, ep);
}

/**
 * kfab_ep_kopen() - an enabled endpoint for a kernel consumer
 * @ctx: the consumer's context
 * @domain: the parent (a user is taken)
 * @av: the AV to bind (a user is taken)
 * @src: the address asked for, as struct kfab_ep_open's @src
 * @kops: where its completions go instead of a CQ
 * @kpriv: the consumer's, for @kops
 * @out: the endpoint, published in @ctx
 *
 * It lives in the initial network namespace and has no submission ring:
 * kernel requests come through kfab_msg_post().  May sleep.  Return: 0,
 * -ENOMEM, -ENOSPC, kfab_node_bind()'s address errors.
 */
int kfab_ep_kopen(struct kfab_ctx *ctx, struct kfab_object *domain,
		  struct kfab_av *av, const struct kfab_addr *src,
		  const struct kfab_ep_kops *kops, void *kpriv,
		  struct kfab_ep **out)
{
	struct kfab_ep *ep;
	int rc;

	ep = kfab_ep_create(ctx, domain, &init_net, src, 0, kops, kpriv);
	if (IS_ERR(ep))
		return PTR_ERR(ep);
	refcount_inc(&av->obj.users);
	ep->av = av;
	mutex_lock(&ep->sq_lock);
	rc = kfab_ep_publish(ep);
	mutex_unlock(&ep->sq_lock);
	if (rc) {
		kfab_object_abort(ctx, &ep->obj);
		return rc;
	}
	kfab_object_finalize(ctx, &ep->obj);
	*out = ep;
	return 0;
}
