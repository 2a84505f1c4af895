// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test-only support, built with CONFIG_KFAB_TEST: fault injection per open
 * file (KFAB_IOC_TEST_FAULT arms a point; the nth pass through it fails)
 * and completions posted on request (KFAB_IOC_TEST_CQ_POST).
 * Nothing here may ever be reachable in a production module.
 */
#include <linux/nospec.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kfab.h"

/**
 * kfab_test_should_fail() - a fault-injection point
 * @ctx: the file whose armed faults count
 * @point: which point this is
 *
 * Return: true on the pass that was armed to fail (once).
 */
bool kfab_test_should_fail(struct kfab_ctx *ctx,
			   enum kfab_test_fault_point point)
{
	/* The pass that takes the count from 1 to 0 fails. */
	return atomic_dec_if_positive(&ctx->test_fault[point]) == 0;
}

int kfab_ioctl_test_fault(struct kfab_ucmd *ucmd)
{
	struct kfab_test_fault *cmd = ucmd->cmd;
	atomic_t *fault;

	if (cmd->point >= KFAB_FAULT_POINT_MAX)
		return -EINVAL;
	fault = &ucmd->ctx->test_fault[array_index_nospec(cmd->point,
							  KFAB_FAULT_POINT_MAX)];
	cmd->out_remaining = atomic_xchg(fault, min_t(u32, cmd->nth, INT_MAX));
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
