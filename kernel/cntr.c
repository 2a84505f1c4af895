// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Counters: the kernel half of libfabric's fid_cntr.
 *
 * The kernel keeps a success value and an error value and mirrors both into
 * a page user space maps read-only, under a seqcount (the protocol is in
 * uapi/linux/kfab.h), so fi_cntr_read() costs no system call.  The mirror
 * is only ever written, never read back.  Every change signals the
 * counter's eventfd, if it has one, and wakes the threads sleeping in
 * KFAB_IOC_CNTR_WAIT.
 */
#include <linux/eventfd.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include <net/netlink.h>

#include <linux/kfab_netlink.h>

#include "kfab.h"

static inline struct kfab_cntr *to_kfab_cntr(struct kfab_object *obj)
{
	return container_of(obj, struct kfab_cntr, obj);
}

struct kfab_cntr *kfab_cntr_get(struct kfab_ctx *ctx, u32 id)
{
	struct kfab_object *obj = kfab_object_get(ctx, id, KFAB_OBJ_CNTR);

	return obj ? to_kfab_cntr(obj) : NULL;
}

void kfab_cntr_put(struct kfab_cntr *cntr)
{
	kfab_object_put(&cntr->obj);
}

/**
 * kfab_cntr_update() - change a counter and tell its readers
 * @cntr: the counter
 * @op: what to do with @value
 * @value: the operand
 * @out_value: out, may be NULL: the success value after the change
 * @out_err: out, may be NULL: the error value after the change
 */
void kfab_cntr_update(struct kfab_cntr *cntr, enum kfab_cntr_op op, u64 value,
		      u64 *out_value, u64 *out_err)
{
	struct kfab_cntr_values *shared = cntr->shared;
	u32 seq;

	spin_lock(&cntr->lock);
	switch (op) {
	case KFAB_CNTR_ADD:
		cntr->value += value;
		break;
	case KFAB_CNTR_SET:
		cntr->value = value;
		break;
	case KFAB_CNTR_ADD_ERR:
		cntr->err += value;
		break;
	default:
		cntr->err = value;
		break;
	}
	/* Seqcount writer: odd, the values, even again. */
	seq = READ_ONCE(shared->seq);
	WRITE_ONCE(shared->seq, seq + 1);
	/* Pairs with the reader's smp_rmb() before it re-reads seq. */
	smp_wmb();
	WRITE_ONCE(shared->value, cntr->value);
	WRITE_ONCE(shared->err, cntr->err);
	/* Pairs with the reader's acquire load of seq. */
	smp_store_release(&shared->seq, seq + 2);
	if (out_value)
		*out_value = cntr->value;
	if (out_err)
		*out_err = cntr->err;
	spin_unlock(&cntr->lock);

	if (cntr->eventfd)
		kfab_eventfd_signal(cntr->eventfd);
	wake_up_all(&cntr->wait);
}

void kfab_cntr_destroy(struct kfab_object *obj)
{
	struct kfab_cntr *cntr = to_kfab_cntr(obj);

	if (cntr->mmap_offset)
		kfab_region_withdraw(obj->ctx, cntr->mmap_offset);
	kfab_region_put(cntr->region);
	if (cntr->eventfd)
		eventfd_ctx_put(cntr->eventfd);
	kfree(cntr);
}

void kfab_cntr_show(struct seq_file *s, struct kfab_object *obj)
{
	struct kfab_cntr *cntr = to_kfab_cntr(obj);

	spin_lock(&cntr->lock);
	seq_printf(s, " domain %u value %llu err %llu eventfd %s",
		   cntr->obj.parent->id, cntr->value, cntr->err,
		   cntr->eventfd ? "yes" : "no");
	spin_unlock(&cntr->lock);
}

/* netlink: the values (no sleep: xarray lock). */
int kfab_cntr_nl_fill(struct sk_buff *skb, struct kfab_object *obj)
{
	struct kfab_cntr *cntr = to_kfab_cntr(obj);
	int rc;

	spin_lock(&cntr->lock);
	rc = kfab_nl_put_u64(skb, KFAB_NL_ATTR_CNTR_VALUE, cntr->value) ||
	     kfab_nl_put_u64(skb, KFAB_NL_ATTR_CNTR_ERR, cntr->err);
	spin_unlock(&cntr->lock);
	return rc ? -EMSGSIZE : 0;
}

int kfab_ioctl_cntr_open(struct kfab_ucmd *ucmd)
{
	struct kfab_cntr_open *cmd = ucmd->cmd;
	struct kfab_object *obj;
	struct kfab_cntr *cntr;
	int rc;

	if (cmd->flags & ~KFAB_CNTR_OPEN_EVENTFD)
		return -EOPNOTSUPP;
	if (!(cmd->flags & KFAB_CNTR_OPEN_EVENTFD) && cmd->eventfd)
		return -EINVAL;

	obj = kfab_object_alloc_in(ucmd->ctx, cmd->domain_id, sizeof(*cntr),
				   KFAB_OBJ_CNTR);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	cntr = to_kfab_cntr(obj);
	spin_lock_init(&cntr->lock);
	init_waitqueue_head(&cntr->wait);

	if (cmd->flags & KFAB_CNTR_OPEN_EVENTFD) {
		cntr->eventfd = eventfd_ctx_fdget(cmd->eventfd);
		if (IS_ERR(cntr->eventfd)) {
			rc = PTR_ERR(cntr->eventfd);
			cntr->eventfd = NULL;
			goto err_abort;
		}
	}
	cntr->region = kfab_region_alloc(sizeof(struct kfab_cntr_values), true);
	if (IS_ERR(cntr->region)) {
		rc = PTR_ERR(cntr->region);
		cntr->region = NULL;
		goto err_abort;
	}
	cntr->shared = cntr->region->vaddr;
	rc = kfab_region_offer(ucmd->ctx, cntr->region, &cntr->mmap_offset);
	if (rc)
		goto err_abort;

	*cmd = (struct kfab_cntr_open) {
		.size = cmd->size,
		.flags = cmd->flags,
		.domain_id = cmd->domain_id,
		.eventfd = cmd->eventfd,
		.out_cntr_id = obj->id,
		.out_off_seq = offsetof(struct kfab_cntr_values, seq),
		.out_off_value = offsetof(struct kfab_cntr_values, value),
		.out_off_err = offsetof(struct kfab_cntr_values, err),
		.out_region = {
			.offset = cntr->mmap_offset,
			.size = cntr->region->size,
		},
	};
	rc = kfab_ucmd_respond(ucmd, sizeof(*cmd));
	if (rc)
		goto err_abort;
	kfab_object_finalize(ucmd->ctx, obj);
	return 0;

err_abort:
	kfab_object_abort(ucmd->ctx, obj);
	return rc;
}

int kfab_ioctl_cntr_update(struct kfab_ucmd *ucmd)
{
	struct kfab_cntr_update *cmd = ucmd->cmd;
	struct kfab_cntr *cntr;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->op >= KFAB_CNTR_OP_MAX)
		return -EINVAL;
	cntr = kfab_cntr_get(ucmd->ctx, cmd->cntr_id);
	if (!cntr)
		return -ENOENT;
	kfab_cntr_update(cntr, cmd->op, cmd->value, &cmd->out_value,
			 &cmd->out_err);
	kfab_cntr_put(cntr);
	/*
	 * The update is done whatever happens to the answer: a caller that
	 * cannot read it back reads the mapped values instead.
	 */
	return kfab_ucmd_respond(ucmd, sizeof(*cmd));
}

/* Whether a KFAB_IOC_CNTR_WAIT sleeper may go; snapshots the values. */
static bool kfab_cntr_reached(struct kfab_cntr *cntr,
			      struct kfab_cntr_wait *cmd)
{
	bool done;

	spin_lock(&cntr->lock);
	cmd->out_value = cntr->value;
	cmd->out_err = cntr->err;
	done = cntr->value >= cmd->threshold || cntr->err != cmd->err;
	spin_unlock(&cntr->lock);
	return done;
}

int kfab_ioctl_cntr_wait(struct kfab_ucmd *ucmd)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct kfab_cntr_wait *cmd = ucmd->cmd;
	struct kfab_cntr *cntr;
	long left;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	cntr = kfab_cntr_get(ucmd->ctx, cmd->cntr_id);
	if (!cntr)
		return -ENOENT;
	/* The reference taken above makes KFAB_IOC_DESTROY -EBUSY meanwhile. */
	left = cmd->timeout_ms < 0 ? MAX_SCHEDULE_TIMEOUT :
				     msecs_to_jiffies(cmd->timeout_ms);
	/* wait_woken() closes the window between the check and the sleep. */
	add_wait_queue(&cntr->wait, &wait);
	for (;;) {
		if (kfab_cntr_reached(cntr, cmd)) {
			rc = 0;
			break;
		}
		if (signal_pending(current)) {
			rc = -EINTR;
			break;
		}
		if (!left) {
			rc = -ETIMEDOUT;
			break;
		}
		left = wait_woken(&wait, TASK_INTERRUPTIBLE, left);
	}
	remove_wait_queue(&cntr->wait, &wait);
	kfab_cntr_put(cntr);
	if (rc)
		return rc;
	return kfab_ucmd_respond(ucmd, sizeof(*cmd));
}
