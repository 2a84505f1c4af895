// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test-only support, built with CONFIG_KFAB_TEST: the module's fault
 * injection, and completions posted on request (KFAB_IOC_TEST_CQ_POST).
 * Nothing here may ever be reachable in a production module.
 *
 * Fault injection (Documentation/testing.rst has the long form)
 * ---------------
 * A fault point is a place where the module can fail on purpose, named by
 * an enum kfab_test_fault_point (uapi/linux/kfab.h) and listed in
 * kfab_fault_names[] below; that pair is the whole table.  The code at the
 * point asks kfab_fault(ctx, point) and fails as it would for real when it
 * answers true; without CONFIG_KFAB_TEST kfab_fault() is "false" and the
 * compiler drops the branch.  An allocation of kfab's own is an "alloc"
 * pass through kfab_alloc(ctx, kzalloc(...)) (kfab.h), which yields NULL
 * instead of allocating when the point fires.
 *
 * Every point is armed per context (struct kfab_ctx: an open file of
 * /dev/kfab, or the context a kernel consumer's domain owns) with "fail
 * the nth pass": kfab_fault_arm(ctx, point, n) makes the nth pass through
 * the point in that context fail, once; 0 disarms.  Each fire is counted.
 *
 * There is one way in, for every test: KFAB_IOC_TEST_FAULT arms a point of
 * the caller's own context, or of another one by its id (as debugfs lists
 * it) for CAP_SYS_ADMIN, and reports what was still to go and how often the
 * point fired.  C selftests call it directly, shell tests through
 * "kfabctl fault", and the in-kernel tests (kapi_test.c) call
 * kfab_fault_arm() on their domain's context.  None of it needs the
 * kernel's CONFIG_FAULT_INJECTION; the kernel's fail-nth stays an extra on
 * the debug kernel, for the allocator's own failures.
 */
#include <linux/capability.h>
#include <linux/nospec.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kfab.h"

/* The fault points, by name (debugfs; kfabctl knows the same names). */
static const char * const kfab_fault_names[KFAB_FAULT_POINT_MAX] = {
	[KFAB_FAULT_ALLOC] = "alloc",		/* -ENOMEM */
	[KFAB_FAULT_COPY_OUT] = "copy_out",	/* -EFAULT */
	[KFAB_FAULT_LOSE] = "lose",		/* kernel API send: -EIO */
	[KFAB_FAULT_NOREPLY] = "noreply",	/* kernel API send: lost */
	[KFAB_FAULT_SLOW_PARK] = "slow_park",	/* ring poller: 100 ms */
};

/**
 * kfab_fault() - a fault-injection point
 * @ctx: the context whose armed faults count
 * @point: which point this is
 *
 * Return: true on the pass that was armed to fail (once).
 */
bool kfab_fault(struct kfab_ctx *ctx, enum kfab_test_fault_point point)
{
	struct kfab_fault_state *f = &ctx->fault[point];

	/* The pass that takes the count from 1 to 0 fails. */
	if (atomic_dec_if_positive(&f->remaining) != 0)
		return false;
	atomic_inc(&f->fired);
	return true;
}

/**
 * kfab_fault_arm() - make the nth pass through a fault point fail
 * @ctx: the context
 * @point: the point
 * @nth: 1 for the next pass, 0 to disarm
 *
 * Return: the passes that were still to go before the call (0: the fault
 * armed before has fired, or none was armed).
 */
u32 kfab_fault_arm(struct kfab_ctx *ctx, enum kfab_test_fault_point point,
		   u32 nth)
{
	return atomic_xchg(&ctx->fault[point].remaining,
			   min_t(u32, nth, INT_MAX));
}

/* How often @point fired in @ctx. */
u32 kfab_fault_fired(struct kfab_ctx *ctx, enum kfab_test_fault_point point)
{
	return atomic_read(&ctx->fault[point].fired);
}

/* debugfs: a line per point of @ctx that is armed or has fired. */
void kfab_fault_show(struct seq_file *s, struct kfab_ctx *ctx)
{
	int i;

	for (i = 0; i < KFAB_FAULT_POINT_MAX; i++) {
		int remaining = atomic_read(&ctx->fault[i].remaining);
		int fired = atomic_read(&ctx->fault[i].fired);

		if (remaining || fired)
			seq_printf(s, "\tfault %s remaining %d fired %d\n",
				   kfab_fault_names[i], remaining, fired);
	}
}

/* The context named @id; it stays while kfab_ctx_lock is held. */
static struct kfab_ctx *kfab_fault_ctx_find(u32 id)
{
	struct kfab_ctx *ctx;

	lockdep_assert_held(&kfab_ctx_lock);
	list_for_each_entry(ctx, &kfab_ctx_list, node)
		if (ctx->id == id)
			return ctx;
	return NULL;
}

int kfab_ioctl_test_fault(struct kfab_ucmd *ucmd)
{
	struct kfab_test_fault *cmd = ucmd->cmd;
	struct kfab_ctx *ctx = ucmd->ctx;
	enum kfab_test_fault_point point;

	if (cmd->flags & ~KFAB_TEST_FAULT_PEEK)
		return -EOPNOTSUPP;
	if (cmd->point >= KFAB_FAULT_POINT_MAX)
		return -EINVAL;
	point = array_index_nospec(cmd->point, KFAB_FAULT_POINT_MAX);
	/* Another context's faults are the administrator's to arm. */
	if (cmd->ctx_id && cmd->ctx_id != ctx->id && !capable(CAP_SYS_ADMIN))
		return -EPERM;

	mutex_lock(&kfab_ctx_lock);
	if (cmd->ctx_id)
		ctx = kfab_fault_ctx_find(cmd->ctx_id);
	if (ctx) {
		cmd->out_ctx_id = ctx->id;
		if (cmd->flags & KFAB_TEST_FAULT_PEEK)
			cmd->out_remaining =
				atomic_read(&ctx->fault[point].remaining);
		else
			cmd->out_remaining = kfab_fault_arm(ctx, point,
							    cmd->nth);
		cmd->out_fired = kfab_fault_fired(ctx, point);
	}
	mutex_unlock(&kfab_ctx_lock);
	if (!ctx)
		return -ENOENT;
	/* Not kfab_ucmd_respond(): its own fault point must not fire here. */
	return kfab_ucmd_copy_out(ucmd, sizeof(*cmd));
}

/*
 * KFAB_IOC_TEST_CQ_POST: post completions (or errors) as an endpoint will,
 * so that the rings can be tested before endpoints exist.  Errors carry the
 * same err_data, copied in once.
 */
static int kfab_test_post(struct kfab_test_cq_post *cmd, struct kfab_cq *cq,
			  struct kfab_cq_err *err)
{
	struct kfab_cq_entry *entry = &err->entry;
	bool overflowed;
	u32 i;
	int rc = 0;

	for (i = 0; i < cmd->count; i++) {
		*entry = (struct kfab_cq_entry) {
			.op_context = cmd->context + i,
			.flags = cmd->entry_flags,
			.len = cmd->len,
			.buf = cmd->buf,
			.data = cmd->data,
			.tag = cmd->tag,
			.src_addr = cmd->src_addr,
		};
		if (cmd->flags & KFAB_TEST_POST_ERROR) {
			rc = kfab_cq_post_err(cq, err);
		} else {
			rc = kfab_cq_post(cq, entry, &overflowed);
			if (!rc && overflowed)
				cmd->out_overflowed++;
		}
		if (rc)
			break;
		cmd->out_posted++;
		cond_resched();
	}
	/* Some posted: say how many; none: say why. */
	return cmd->out_posted ? 0 : rc;
}

int kfab_ioctl_test_cq_post(struct kfab_ucmd *ucmd)
{
	struct kfab_test_cq_post *cmd = ucmd->cmd;
	struct kfab_cntr *cntr = NULL;
	struct kfab_cq *cq = NULL;
	struct kfab_cq_err *err;
	int rc;

	if (cmd->flags & ~KFAB_TEST_POST_ERROR)
		return -EOPNOTSUPP;
	if (cmd->count > KFAB_TEST_POST_MAX ||
	    cmd->err_data_size > KFAB_CQ_ERR_DATA_MAX)
		return -EINVAL;

	err = kzalloc(sizeof(*err), GFP_KERNEL_ACCOUNT);
	if (!err)
		return -ENOMEM;
	err->olen = cmd->olen;
	err->err = cmd->err;
	err->prov_errno = cmd->prov_errno;
	err->err_data_len = cmd->err_data_size;
	rc = -EFAULT;
	if (copy_from_user(err->err_data, u64_to_user_ptr(cmd->err_data),
			   cmd->err_data_size))
		goto out;

	rc = -ENOENT;
	if (cmd->cq_id) {
		cq = kfab_cq_get(ucmd->ctx, cmd->cq_id);
		if (!cq)
			goto out;
	}
	if (cmd->cntr_id) {
		cntr = kfab_cntr_get(ucmd->ctx, cmd->cntr_id);
		if (!cntr)
			goto out;
	}

	cmd->out_posted = 0;
	cmd->out_overflowed = 0;
	rc = 0;
	if (cq)
		rc = kfab_test_post(cmd, cq, err);
	else
		cmd->out_posted = cmd->count;
	if (!rc && cntr && cmd->out_posted)
		kfab_cntr_update(cntr, cmd->flags & KFAB_TEST_POST_ERROR ?
				 KFAB_CNTR_ADD_ERR : KFAB_CNTR_ADD,
				 cmd->out_posted, NULL, NULL);
	if (!rc)
		rc = kfab_ucmd_copy_out(ucmd, sizeof(*cmd));
out:
	if (cntr)
		kfab_cntr_put(cntr);
	if (cq)
		kfab_cq_put(cq);
	kfree(err);
	return rc;
}
