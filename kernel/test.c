// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test-only support, built with CONFIG_KFAB_TEST: fault injection per open
 * file.  KFAB_IOC_TEST_FAULT arms a point; the nth pass through it fails.
 * Nothing here may ever be reachable in a production module.
 */
#include <linux/nospec.h>

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
