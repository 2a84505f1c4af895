// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Buffered receives (FI_BUFFERED_RECV; Documentation/ep.rst "Buffered
 * receives"): a receive context's region of slots that the kernel writes
 * and the receiving process maps read-only.
 *
 * A message that no posted receive takes is copied once, by its sender,
 * into a free slot (msg.c, kfab_unexp_buffered()), or read into it from
 * the socket when it comes from another node (peer.c,
 * kfab_msg_slot_reserve()); the receiver reads it
 * there, where it lies, and gives the slot back with FI_CLAIM or
 * FI_DISCARD.  This file owns the region and its slots: which are free,
 * and the token that names a slot's current message.  A token is the
 * slot's number and its generation, which moves on each time the slot is
 * freed, so a token used twice, or one made up, names no message.
 *
 * Locking: the slots are the receive context's, under its lock
 * (kfab.h "Locking" 4); the region itself never changes once made.  An
 * endpoint's sq_lock (3) is held around installing its region, so that
 * its bind and enable wait.
 * Memory: the region is charged to the caller's memory cgroup
 * (GFP_KERNEL_ACCOUNT) and bounded by KFAB_BUFRECV_REGION_MAX; a message
 * waits in its sender's ring while no slot is free, so a receiver that
 * never claims costs no more than its region.
 */
#include <linux/bitmap.h>
#include <linux/slab.h>

#include "kfab.h"

/**
 * struct kfab_bufrecv - a receive context's buffered-receive region
 * @region: the slots (a reference), read-only for user space, not
 *	inherited by fork()
 * @ctx: the file it is offered to, and @offset there (until withdrawn)
 * @offset: its mmap offset
 * @limit: bytes of a message a slot holds (FI_OPT_BUFFERED_LIMIT)
 * @stride: bytes from one slot to the next
 * @slots: how many
 * @used: the slots holding a message
 * @gen: each slot's generation, the high half of its token
 * @cookie: user space's name for the region, in each notice
 */
struct kfab_bufrecv {
	struct kfab_region *region;
	struct kfab_ctx *ctx;
	u64 offset;
	u32 limit;
	u32 stride;
	u32 slots;
	unsigned long *used;
	u32 *gen;
	u64 cookie;
};

static void kfab_bufrecv_free(struct kfab_bufrecv *br)
{
	if (!br)
		return;
	kfab_region_put(br->region);
	bitmap_free(br->used);
	kfree(br->gen);
	kfree(br);
}

static struct kfab_bufrecv *kfab_bufrecv_alloc(u32 limit, u32 slots)
{
	struct kfab_bufrecv *br;
	u32 stride = ALIGN(limit, 64);

	if ((u64)stride * slots > KFAB_BUFRECV_REGION_MAX)
		return ERR_PTR(-EINVAL);
	br = kzalloc(sizeof(*br), GFP_KERNEL_ACCOUNT);
	if (!br)
		return ERR_PTR(-ENOMEM);
	br->limit = limit;
	br->stride = stride;
	br->slots = slots;
	br->used = bitmap_zalloc(slots, GFP_KERNEL_ACCOUNT);
	br->gen = kcalloc(slots, sizeof(*br->gen), GFP_KERNEL_ACCOUNT);
	br->region = kfab_region_alloc((size_t)stride * slots, true);
	if (IS_ERR(br->region)) {
		int rc = PTR_ERR(br->region);

		br->region = NULL;
		kfab_bufrecv_free(br);
		return ERR_PTR(rc);
	}
	br->region->no_fork = true;
	if (!br->used || !br->gen) {
		kfab_bufrecv_free(br);
		return ERR_PTR(-ENOMEM);
	}
	return br;
}

/* The receive context is going: its region goes with its last mapping. */
void kfab_rx_ctx_bufrecv_free(struct kfab_rx_ctx *rxc)
{
	kfab_bufrecv_free(rxc->bufrecv);
	rxc->bufrecv = NULL;
}

/**
 * kfab_bufrecv_withdraw() - its object is destroyed: no more mmap() of it
 * @ctx: the object's file
 * @rxc: the object's receive context
 *
 * Mappings made already stay valid (and read-only) while they last.
 */
void kfab_bufrecv_withdraw(struct kfab_ctx *ctx, struct kfab_rx_ctx *rxc)
{
	struct kfab_bufrecv *br;

	mutex_lock(&rxc->lock);
	br = rxc->bufrecv;
	if (br && br->ctx == ctx) {
		kfab_region_withdraw(ctx, br->offset);
		br->ctx = NULL;
	}
	mutex_unlock(&rxc->lock);
}

/*
 * The receive context of an endpoint that is not in use yet and can
 * receive (a scalable endpoint's receive context can, its anchor and
 * transmit contexts cannot: nothing reaches them), or of an SRX: -EINVAL
 * otherwise, -ENOENT for no such object.  A first look
 * only: kfab_bufrecv_install_obj() decides under the locks.  The
 * object's user is the caller's (kfab_object_put()).
 */
static struct kfab_rx_ctx *kfab_bufrecv_target(struct kfab_ctx *ctx, u32 id,
					       struct kfab_object **out)
{
	struct kfab_object *obj = kfab_object_get(ctx, id, KFAB_OBJ_ANY);
	struct kfab_rx_ctx *rxc = NULL;

	*out = obj;
	if (!obj)
		return ERR_PTR(-ENOENT);
	if (obj->type == KFAB_OBJ_EP) {
		struct kfab_ep *ep = container_of(obj, struct kfab_ep, obj);

		if (!ep->enabled && !ep->srx && !ep->kops && ep->core &&
		    !ep->core->send_only)
			rxc = ep->core->rxc;
	} else if (obj->type == KFAB_OBJ_SRX) {
		rxc = container_of(obj, struct kfab_srx, obj)->rxc;
	}
	return rxc ?: ERR_PTR(-EINVAL);
}

/* Whether the limits asked for are possible: 0 or a negative errno. */
static int kfab_bufrecv_check(struct kfab_rx_buffered *cmd)
{
	if (cmd->flags)
		return -EOPNOTSUPP;
	if (!cmd->limit)
		cmd->limit = KFAB_BUFRECV_LIMIT_DEFAULT;
	if (!cmd->slots)
		cmd->slots = KFAB_BUFRECV_SLOTS_DEFAULT;
	if (cmd->limit > KFAB_BUFRECV_LIMIT_MAX)
		return -EMSGSIZE;
	if (cmd->slots > KFAB_BUFRECV_SLOTS_MAX)
		return -EINVAL;
	return 0;
}

/* Under @rxc's lock: give it @br if it has none and nobody uses it yet. */
static int kfab_bufrecv_install(struct kfab_rx_ctx *rxc,
				struct kfab_bufrecv *br)
{
	lockdep_assert_held(&rxc->lock);
	if (rxc->bufrecv)
		return -EBUSY;
	if (!list_empty(&rxc->cores))
		return -EINVAL;
	rxc->bufrecv = br;
	return 0;
}

/*
 * The same for @obj's context @rxc; an endpoint's bind and enable wait
 * meanwhile (its sq_lock: "Locking" 3 before 4), so it cannot gain an SRX
 * or be enabled between the look and the install.
 */
static int kfab_bufrecv_install_obj(struct kfab_object *obj,
				    struct kfab_rx_ctx *rxc,
				    struct kfab_bufrecv *br)
{
	struct kfab_ep *ep = NULL;
	int rc = -EINVAL;

	if (obj->type == KFAB_OBJ_EP) {
		ep = container_of(obj, struct kfab_ep, obj);
		mutex_lock(&ep->sq_lock);
		if (ep->enabled || ep->srx || ep->core->rxc != rxc)
			goto out;
	}
	mutex_lock(&rxc->lock);
	rc = kfab_bufrecv_install(rxc, br);
	mutex_unlock(&rxc->lock);
out:
	if (ep)
		mutex_unlock(&ep->sq_lock);
	return rc;
}

int kfab_ioctl_rx_buffered(struct kfab_ucmd *ucmd)
{
	struct kfab_rx_buffered *cmd = ucmd->cmd;
	struct kfab_ctx *ctx = ucmd->ctx;
	struct kfab_bufrecv *br;
	struct kfab_object *obj;
	struct kfab_rx_ctx *rxc;
	int rc;

	rc = kfab_bufrecv_check(cmd);
	if (rc)
		return rc;
	rxc = kfab_bufrecv_target(ctx, cmd->obj_id, &obj);
	if (IS_ERR(rxc)) {
		rc = PTR_ERR(rxc);
		goto out_put;
	}
	br = kfab_bufrecv_alloc(cmd->limit, cmd->slots);
	if (IS_ERR(br)) {
		rc = PTR_ERR(br);
		goto out_put;
	}
	rc = kfab_region_offer(ctx, br->region, &br->offset);
	if (rc) {
		kfab_bufrecv_free(br);
		goto out_put;
	}
	br->ctx = ctx;
	br->cookie = cmd->cookie;
	rc = kfab_bufrecv_install_obj(obj, rxc, br);
	if (rc) {
		kfab_region_withdraw(ctx, br->offset);
		kfab_bufrecv_free(br);
		goto out_put;
	}
	cmd->out_limit = br->limit;
	cmd->out_slots = br->slots;
	cmd->out_stride = br->stride;
	cmd->out_region = br->offset;
	/* Installed: a failed copy leaves the region (as CQ_OPEN's does not). */
	rc = kfab_ucmd_respond(ucmd, sizeof(*cmd));
out_put:
	if (obj)
		kfab_object_put(obj);
	return rc;
}

/* ---- slots, under the receive context's lock ---- */

/* Bytes of a message a slot of @rxc takes; 0: @rxc buffers nothing. */
u32 kfab_bufrecv_limit(struct kfab_rx_ctx *rxc)
{
	lockdep_assert_held(&rxc->lock);
	return rxc->bufrecv ? rxc->bufrecv->limit : 0;
}

/**
 * kfab_bufrecv_reserve() - take a free slot for a message's first @n bytes
 * @rxc: the receive context, locked, with a region
 * @n: bytes, at most the limit
 * @out: the slot's place: token, offset in the region, where to write
 *
 * The slot's bytes past @n are zeroed now: what an earlier message left
 * is never seen.  The caller writes the first @n at @out->data (it may
 * drop the lock meanwhile: the slot is nobody else's), then notices the
 * message, or gives the slot back with kfab_bufrecv_release().
 * Return: 0, -EAGAIN when every slot is taken.
 */
int kfab_bufrecv_reserve(struct kfab_rx_ctx *rxc, size_t n,
			 struct kfab_bufrecv_slot *out)
{
	struct kfab_bufrecv *br = rxc->bufrecv;
	unsigned long slot;
	void *p;

	lockdep_assert_held(&rxc->lock);
	if (WARN_ON_ONCE(n > br->limit))
		return -EINVAL;
	slot = find_first_zero_bit(br->used, br->slots);
	if (slot >= br->slots)
		return -EAGAIN;
	p = br->region->vaddr + slot * br->stride;
	memset(p + n, 0, br->stride - n);
	__set_bit(slot, br->used);
	br->gen[slot]++;
	out->token = ((u64)br->gen[slot] << 32) | slot;
	out->cookie = br->cookie;
	out->offset = (u64)slot * br->stride;
	out->data = p;
	out->len = n;
	return 0;
}

/**
 * kfab_bufrecv_fill() - copy a message's start into a free slot
 * @rxc: the receive context, locked, with a region
 * @from: the message; its first @n bytes are taken (and @from advanced)
 * @n: bytes, at most the limit
 * @out: the slot's place: token, offset in the region
 *
 * The rest of the slot is zeroed (kfab_bufrecv_reserve()).
 * Return: 0, -EAGAIN when every slot is taken, -EFAULT.
 */
int kfab_bufrecv_fill(struct kfab_rx_ctx *rxc, struct iov_iter *from,
		      size_t n, struct kfab_bufrecv_slot *out)
{
	int rc = kfab_bufrecv_reserve(rxc, n, out);

	if (rc)
		return rc;
	if (copy_from_iter(out->data, n, from) != n) {
		kfab_bufrecv_release(rxc, out->token);
		return -EFAULT;
	}
	return 0;
}

/* Whether @token names a slot of @rxc that holds a message now. */
bool kfab_bufrecv_valid(struct kfab_rx_ctx *rxc, u64 token)
{
	struct kfab_bufrecv *br = rxc->bufrecv;
	u32 slot = lower_32_bits(token);

	lockdep_assert_held(&rxc->lock);
	return br && slot < br->slots && test_bit(slot, br->used) &&
	       br->gen[slot] == upper_32_bits(token);
}

/* The slot @token names is free again; its token goes stale. */
void kfab_bufrecv_release(struct kfab_rx_ctx *rxc, u64 token)
{
	struct kfab_bufrecv *br = rxc->bufrecv;
	u32 slot = lower_32_bits(token);

	lockdep_assert_held(&rxc->lock);
	if (WARN_ON_ONCE(!kfab_bufrecv_valid(rxc, token)))
		return;
	__clear_bit(slot, br->used);
	br->gen[slot]++;
}
