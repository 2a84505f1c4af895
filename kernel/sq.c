// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Submission rings: how user space hands requests to an endpoint or a
 * shared receive context (uapi/linux/kfab.h has the protocol).
 *
 * One region the owner maps read-write: a tail it writes, a head the
 * kernel writes, the slots.  The kernel's head is its own copy; it reads
 * the tail once per doorbell and copies each slot before looking at it,
 * so nothing user space writes meanwhile changes what it acts on.
 *
 * KFAB_IOC_DOORBELL and KFAB_IOC_CANCEL take any object that owns a ring
 * and call its type's ->doorbell and ->cancel (endpoints, SRXs).
 */
#include <linux/indirect_call_wrapper.h>
#include <linux/log2.h>
#include <linux/string.h>

#include "kfab.h"

/* Where the region's parts are; user space learns it from the layout. */
#define KFAB_SQ_OFF_TAIL	0
#define KFAB_SQ_OFF_HEAD	64
/* Kernel-written like head, read by the producer after each tail. */
#define KFAB_SQ_OFF_FLAGS	96
#define KFAB_SQ_OFF_ENTRIES	128

/**
 * kfab_sq_entries() - the size of a ring user space asks for
 * @want: 0 for KFAB_SQ_DEFAULT_ENTRIES, else a power of two up to
 *	KFAB_SQ_MAX_ENTRIES
 * @entries: out: the ring's entries
 *
 * Return: 0 or -EINVAL.
 */
int kfab_sq_entries(u32 want, u32 *entries)
{
	*entries = want ?: KFAB_SQ_DEFAULT_ENTRIES;
	if (!is_power_of_2(*entries) || *entries > KFAB_SQ_MAX_ENTRIES)
		return -EINVAL;
	return 0;
}

int kfab_sq_init(struct kfab_ctx *ctx, struct kfab_sq *sq, u32 entries)
{
	int rc;

	sq->region = kfab_region_alloc(KFAB_SQ_OFF_ENTRIES +
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
	sq->flags_user = sq->region->vaddr + KFAB_SQ_OFF_FLAGS;
	sq->sqes = sq->region->vaddr + KFAB_SQ_OFF_ENTRIES;
	return kfab_region_offer(ctx, sq->region, &sq->offset);
}

void kfab_sq_fini(struct kfab_ctx *ctx, struct kfab_sq *sq)
{
	if (sq->offset)
		kfab_region_withdraw(ctx, sq->offset);
	kfab_region_put(sq->region);
}

/* What the command that created the ring's owner tells user space. */
void kfab_sq_layout(const struct kfab_sq *sq, struct kfab_sq_layout *out)
{
	*out = (struct kfab_sq_layout){
		.region = {
			.offset = sq->offset,
			.size = sq->region->size,
		},
		.entries = sq->entries,
		.entry_size = sizeof(struct kfab_sqe),
		.off_tail = KFAB_SQ_OFF_TAIL,
		.off_head = KFAB_SQ_OFF_HEAD,
		.off_entries = KFAB_SQ_OFF_ENTRIES,
		.off_flags = KFAB_SQ_OFF_FLAGS,
	};
}

/* The header and the first iovec (or 16 bytes inline): a small entry. */
#define KFAB_SQE_HEAD	offsetof(struct kfab_sqe, iov[1])

/*
 * A copy: user space may change the slot meanwhile.  Only what the
 * copied header says is used, read from the copy alone: iovecs beyond the
 * first (@iov_count) or an inline payload beyond 16 bytes (@len); a small
 * message's entry is 80 bytes of its 128.  The rest of @to is not read.
 */
static void kfab_sq_copy(struct kfab_sqe *to, const struct kfab_sqe *slot)
{
	memcpy(to, slot, KFAB_SQE_HEAD);
	if (to->iov_count > 1 || to->len > sizeof(to->iov[0]))
		memcpy((u8 *)to + KFAB_SQE_HEAD, (const u8 *)slot + KFAB_SQE_HEAD,
		       sizeof(*to) - KFAB_SQE_HEAD);
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
	/* Filled from the slot before each use, as far as it is read. */
	struct kfab_sqe sqe __uninitialized;

	/* A tail beyond a ring's worth is garbage: take one ring. */
	if (avail > sq->entries)
		avail = sq->entries;
	while (done < avail) {
		u32 slot = sq->head & (sq->entries - 1);

		kfab_sq_copy(&sqe, &sq->sqes[slot]);
		/* Not through a retpoline: once per message. */
		if (INDIRECT_CALL_2(fn, kfab_ep_submit, kfab_srx_submit,
				    owner, &sqe) == -EAGAIN)
			break;
		sq->head++;
		done++;
		/* The slot is read: user space may reuse it (its acquire). */
		smp_store_release(sq->head_user, sq->head);
	}
	return done;
}

/* An object of the caller's that owns a ring, with a user; or NULL. */
static struct kfab_object *kfab_sq_owner_get(struct kfab_ctx *ctx, u32 id)
{
	struct kfab_object *obj = kfab_object_get(ctx, id, KFAB_OBJ_ANY);

	if (obj && !kfab_object_ops_of(obj)->doorbell) {
		kfab_object_put(obj);
		obj = NULL;
	}
	return obj;
}

/* Both forms of the doorbell: the ring of @id carried out, *@done of it. */
static int kfab_sq_ring(struct kfab_ctx *ctx, u32 id, u32 *done)
{
	struct kfab_object *obj = kfab_sq_owner_get(ctx, id);
	int rc;

	if (!obj)
		return -ENOENT;
	rc = kfab_object_ops_of(obj)->doorbell(obj, done);
	kfab_object_put(obj);
	/* A producer that saw NEED_WAKEUP: the poller watches again. */
	kfab_sq_poller_kick(ctx);
	return rc;
}

int kfab_ioctl_doorbell(struct kfab_ucmd *ucmd)
{
	struct kfab_doorbell *cmd = ucmd->cmd;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	rc = kfab_sq_ring(ucmd->ctx, cmd->obj_id, &cmd->out_done);
	if (rc)
		return rc;
	return kfab_ucmd_respond(ucmd, sizeof(*cmd));
}

/*
 * KFAB_IOC_RING: the doorbell with the object's id as the argument and
 * the entries consumed as the answer.  A message that needs a system call
 * of its own (a ping-pong's) then costs no copy from or to user space for
 * the command: three user accesses fewer than KFAB_IOC_DOORBELL.
 */
long kfab_ioctl_ring(struct kfab_ctx *ctx, unsigned long arg)
{
	u32 done = 0;
	int rc;

	if (arg > U32_MAX)
		return -EINVAL;
	rc = kfab_sq_ring(ctx, arg, &done);
	/* At most a ring's worth (KFAB_SQ_MAX_ENTRIES): never negative. */
	return rc ? rc : done;
}

int kfab_ioctl_cancel(struct kfab_ucmd *ucmd)
{
	struct kfab_cancel *cmd = ucmd->cmd;
	struct kfab_object *obj;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	obj = kfab_sq_owner_get(ucmd->ctx, cmd->obj_id);
	if (!obj)
		return -ENOENT;
	rc = kfab_object_ops_of(obj)->cancel(obj, cmd->context);
	kfab_object_put(obj);
	return rc;
}
