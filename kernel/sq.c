// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Submission rings: how user space hands requests to an endpoint or a
 * shared receive context (uapi/linux/kfab.h has the protocol).
 *
 * One region the owner maps read-write: a tail it writes, a head the
 * kernel writes, the slots.  The kernel's head is its own copy; it reads
 * the tail once per doorbell and copies each slot before looking at it,
 * so nothing user space writes meanwhile changes what it acts on.
 */
#include <linux/string.h>

#include "kfab.h"

int kfab_sq_init(struct kfab_ctx *ctx, struct kfab_sq *sq, u32 entries)
{
	int rc;

	sq->region = kfab_region_alloc(KFAB_SQ_OFF_SQES +
				       (size_t)entries * sizeof(struct kfab_sqe),
				       false);
	if (IS_ERR(sq->region)) {
		rc = PTR_ERR(sq->region);
		sq->region = NULL;
		return rc;
	}
	sq->entries = entries;
	sq->tail_user = sq->region->vaddr + KFAB_SQ_OFF_TAIL;
	sq->head_user = sq->region->vaddr + KFAB_SQ_OFF_HEAD;
	sq->sqes = sq->region->vaddr + KFAB_SQ_OFF_SQES;
	return kfab_region_offer(ctx, sq->region, &sq->offset);
}

void kfab_sq_fini(struct kfab_ctx *ctx, struct kfab_sq *sq)
{
	if (sq->offset)
		kfab_region_withdraw(ctx, sq->offset);
	kfab_region_put(sq->region);
}

/*
 * Carry out the entries between the kernel's head and the tail user space
 * published, at most a ring's worth.  An entry that cannot go on yet
 * (-EAGAIN) stops the walk and stays first in the ring.  Return: entries
 * consumed.
 */
u32 kfab_sq_run(struct kfab_sq *sq, kfab_sq_fn fn, void *owner)
{
	/* The entries before tail are written: pairs with user's release. */
	u32 tail = smp_load_acquire(sq->tail_user);
	u32 avail = tail - sq->head, done = 0;
	struct kfab_sqe sqe;

	/* A tail beyond a ring's worth is garbage: take one ring. */
	if (avail > sq->entries)
		avail = sq->entries;
	while (done < avail) {
		u32 slot = sq->head & (sq->entries - 1);

		/* A copy: user space may change the slot meanwhile. */
		memcpy(&sqe, &sq->sqes[slot], sizeof(sqe));
		if (fn(owner, &sqe) == -EAGAIN)
			break;
		sq->head++;
		done++;
		/* The slot is read: user space may reuse it (its acquire). */
		smp_store_release(sq->head_user, sq->head);
	}
	return done;
}
