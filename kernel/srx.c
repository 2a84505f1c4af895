// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive contexts: fi_srx_context (Documentation/ep.rst).
 *
 * An SRX is a receive context (msg.c's lists and matching) that several
 * endpoints of one file receive through, plus a submission ring of its own
 * that takes receives.  Each endpoint bound to it holds a user of the
 * object and a reference on the receive context; the receive context
 * outlives the object while senders still hold an endpoint's core.
 * Completions of its receives go to the endpoint a message was sent to;
 * what no message decides (a malformed entry, a cancel, FI_PEEK finding
 * nothing) goes to the first endpoint that joined and is still there.
 */
#include <linux/slab.h>

#include <net/netlink.h>

#include <linux/kfab_netlink.h>

#include "kfab.h"

static inline struct kfab_srx *to_kfab_srx(struct kfab_object *obj)
{
	return container_of(obj, struct kfab_srx, obj);
}

int kfab_ioctl_srx_open(struct kfab_ucmd *ucmd)
{
	struct kfab_srx_open *cmd = ucmd->cmd;
	struct kfab_ctx *ctx = ucmd->ctx;
	struct kfab_object *obj;
	struct kfab_srx *srx;
	u32 entries;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	rc = kfab_sq_entries(cmd->sq_entries, &entries);
	if (rc)
		return rc;

	obj = kfab_object_alloc_in(ctx, cmd->domain_id, sizeof(*srx),
				   KFAB_OBJ_SRX);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	srx = to_kfab_srx(obj);
	mutex_init(&srx->sq_lock);

	rc = -ENOMEM;
	if (kfab_fault(ctx, KFAB_FAULT_ALLOC))
		goto err_abort;
	srx->rxc = kfab_rx_ctx_alloc();
	srx->stats = alloc_percpu_gfp(struct kfab_srx_stats,
				      GFP_KERNEL_ACCOUNT);
	if (!srx->rxc || !srx->stats)
		goto err_abort;
	rc = kfab_sq_init(ctx, &srx->sq, entries);
	if (rc)
		goto err_abort;

	cmd->out_srx_id = obj->id;
	cmd->__reserved = 0;
	kfab_sq_layout(&srx->sq, &cmd->out_sq);
	rc = kfab_ucmd_respond(ucmd, sizeof(*cmd));
	if (rc)
		goto err_abort;
	kfab_object_finalize(ctx, obj);
	return 0;

err_abort:
	kfab_object_abort(ctx, obj);
	return rc;
}

/* Its last user is gone: no endpoint is bound any more. */
void kfab_srx_destroy(struct kfab_object *obj)
{
	struct kfab_srx *srx = to_kfab_srx(obj);

	if (srx->rxc) {
		kfab_msg_flush_rx(srx->rxc);
		kfab_bufrecv_withdraw(obj->ctx, srx->rxc);
		kfab_rx_ctx_put(srx->rxc);
	}
	if (srx->av)
		kfab_object_put(&srx->av->obj);
	kfab_sq_fini(obj->ctx, &srx->sq);
	free_percpu(srx->stats);
	mutex_destroy(&srx->sq_lock);
	kfree(srx);
}

/*
 * Run the ring.  -EINVAL while no enabled endpoint is bound: there would
 * be no CQ to report a failed receive on.
 */
int kfab_srx_doorbell(struct kfab_object *obj, u32 *out_done)
{
	struct kfab_srx *srx = to_kfab_srx(obj);
	bool joined;

	mutex_lock(&srx->rxc->lock);
	joined = !list_empty(&srx->rxc->cores);
	mutex_unlock(&srx->rxc->lock);
	if (!joined)
		return -EINVAL;
	mutex_lock(&srx->sq_lock);
	*out_done = kfab_sq_run(&srx->sq, kfab_srx_submit, srx);
	mutex_unlock(&srx->sq_lock);
	return 0;
}

struct kfab_sq *kfab_srx_sq(struct kfab_object *obj)
{
	return &to_kfab_srx(obj)->sq;
}

int kfab_srx_cancel(struct kfab_object *obj, u64 context)
{
	struct kfab_srx *srx = to_kfab_srx(obj);
	int rc;

	mutex_lock(&srx->sq_lock);
	rc = kfab_msg_cancel(srx->rxc, context);
	mutex_unlock(&srx->sq_lock);
	return rc;
}

/* debugfs: under the context's xarray lock, so nothing that sleeps. */
void kfab_srx_show(struct seq_file *s, struct kfab_object *obj)
{
	struct kfab_srx *srx = to_kfab_srx(obj);

	seq_printf(s, " sq %u head %u", srx->sq.entries,
		   READ_ONCE(srx->sq.head));
}

/* A message of @bytes received whole on one of the SRX's endpoints. */
void kfab_srx_count_recv(struct kfab_srx *srx, size_t bytes)
{
	this_cpu_inc(srx->stats->rx_msgs);
	this_cpu_add(srx->stats->rx_bytes, bytes);
}

/**
 * kfab_srx_count_err() - count a receive of an SRX that failed
 * @srx: the SRX
 * @status: its completion's status, on one of the SRX's endpoints (not a
 *	peek)
 *
 * Wherever its endpoint counts it: kfab_ep_complete(), any context.
 */
void kfab_srx_count_err(struct kfab_srx *srx, int status)
{
	struct kfab_srx_stats __percpu *st = srx->stats;

	if (status == -KFAB_ERR_TRUNC)
		this_cpu_inc(st->truncated);
	else if (status == -ECANCELED)
		this_cpu_inc(st->canceled);
	this_cpu_inc(st->rx_errors);
}

/*
 * netlink: the ring's size, its receives, what waits unexpected (no
 * sleep: xarray lock).
 */
int kfab_srx_nl_fill(struct sk_buff *skb, struct kfab_object *obj)
{
	struct kfab_srx *srx = to_kfab_srx(obj);
	struct kfab_srx_stats __percpu *st = srx->stats;

	if (nla_put_u32(skb, KFAB_NL_ATTR_ENTRIES, srx->sq.entries) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_RX_MSGS, &st->rx_msgs) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_RX_BYTES, &st->rx_bytes) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_RX_ERRORS, &st->rx_errors) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_TRUNCATED, &st->truncated) ||
	    kfab_nl_put_stat(skb, KFAB_NL_ATTR_CANCELED, &st->canceled) ||
	    kfab_rx_ctx_nl_fill(skb, srx->rxc))
		return -EMSGSIZE;
	return 0;
}
