// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues: the kernel half of libfabric's fid_cq.
 *
 * A CQ is a ring of struct kfab_cq_entry in pages the kernel allocates and
 * the owning process maps: the kernel produces, user space consumes without
 * a system call.  The layout, who writes which index and the pairing of the
 * barriers are written down once, beside the ring's definition in
 * uapi/linux/kfab.h; the labels (P1)-(P3) below refer to it.
 * Documentation/cq.rst has the long form.
 *
 * The kernel keeps its own tail and never reads it back.  The head it reads
 * comes from a page user space can write, so it is checked on every read:
 * a head that claims more entries in the ring than it holds makes the ring
 * count as full.  Nothing user space writes is ever used as an index.
 *
 * A completion that finds the ring full waits on an overflow list and is
 * moved into the ring, in order, when space appears (kfab_cq_drain()).
 * Error completions wait on a list of their own for KFAB_IOC_CQ_READERR.
 */
#include <linux/eventfd.h>
#include <linux/log2.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <net/netlink.h>

#include <linux/kfab_netlink.h>

#include "kfab.h"

/* Bounds of the overflow and error lists, in entries (see the uapi header) */
#define KFAB_CQ_BACKLOG_FACTOR	16
#define KFAB_CQ_BACKLOG_MIN	1024

/* A completion waiting for space in the ring */
struct kfab_cq_node {
	struct list_head link;
	struct kfab_cq_entry entry;
	u8 payload[KFAB_CQ_PAYLOAD_MAX];	/* with KFAB_COMP_PAYLOAD */
};

/* An error completion waiting for KFAB_IOC_CQ_READERR */
struct kfab_cq_err_node {
	struct list_head link;
	struct kfab_cq_err err;
};

static inline struct kfab_cq *to_kfab_cq(struct kfab_object *obj)
{
	return container_of(obj, struct kfab_cq, obj);
}

struct kfab_cq *kfab_cq_get(struct kfab_ctx *ctx, u32 id)
{
	struct kfab_object *obj = kfab_object_get(ctx, id, KFAB_OBJ_CQ);

	return obj ? to_kfab_cq(obj) : NULL;
}

void kfab_cq_put(struct kfab_cq *cq)
{
	kfab_object_put(&cq->obj);
}

/*
 * Free slots in the ring, judged from user space's head.  (P1): the acquire
 * orders user space's reads of the slots it released before our writes.
 * The head is read only once the slots known free are used up: it lives
 * on a line the consumer writes, and reading it on every post would pull
 * that line across CPUs once per completion (io_uring caches it too).
 */
static u32 kfab_cq_space(struct kfab_cq *cq)
{
	u32 head, used;

	lockdep_assert_held(&cq->lock);
	if (cq->space)
		return cq->space;
	/* (P1) pairs with user space's release of head (C3). */
	head = smp_load_acquire(&cq->cons->head);
	used = cq->tail - head;
	if (used > cq->entries) {
		/* Corrupt: only this CQ's owner can have written it. */
		cq->bad_head++;
		return 0;
	}
	cq->space = cq->entries - used;
	return cq->space;
}

/*
 * A completion's payload (at most KFAB_CQ_PAYLOAD_MAX bytes) into its
 * slot, a word at a time: memcpy() of a length known only at run time is
 * a rep movsb on most x86 CPUs, whose start costs more than the whole of
 * a small message's copy (and under an emulator a round per byte).
 */
static void kfab_cq_copy_payload(u8 *to, const u8 *from, size_t len)
{
	for (; len >= sizeof(u64); len -= sizeof(u64)) {
		memcpy(to, from, sizeof(u64));	/* one move, any alignment */
		to += sizeof(u64);
		from += sizeof(u64);
	}
	while (len--)
		*to++ = *from++;
}

/* (P2): the slot first, then the tail that publishes it. */
static void kfab_cq_ring_put(struct kfab_cq *cq,
			     const struct kfab_cq_entry *entry,
			     const void *payload)
{
	u8 *slot = cq->slots + (size_t)(cq->tail & cq->mask) * cq->slot_size;

	lockdep_assert_held(&cq->lock);
	memcpy(slot, entry, sizeof(*entry));
	if (entry->flags & KFAB_COMP_PAYLOAD)
		kfab_cq_copy_payload(slot + sizeof(*entry), payload,
				     entry->len);
	cq->tail++;
	cq->space--;
	/* (P2) pairs with user space's acquire of tail (C1). */
	smp_store_release(&cq->ring->tail, cq->tail);
}

/* The overflow words of the ring follow the list. */
static void kfab_cq_sync_overflow(struct kfab_cq *cq)
{
	lockdep_assert_held(&cq->lock);
	WRITE_ONCE(cq->ring->overflow, cq->nr_overflow);
	kfab_cq_sync_flags(cq);
}

/* Most overflowed completions moved while the lock is held once. */
#define KFAB_CQ_DRAIN_BATCH	256U

/*
 * Move what the ring can take from the overflow list into it, oldest
 * first, at most KFAB_CQ_DRAIN_BATCH.  The nodes go to @done, for the
 * caller to free unlocked.  Returns how many moved.
 */
static u32 kfab_cq_drain_locked(struct kfab_cq *cq, struct list_head *done)
{
	struct kfab_cq_node *node, *next;
	u32 space, moved = 0;

	lockdep_assert_held(&cq->lock);
	if (!cq->nr_overflow)
		return 0;
	space = min(kfab_cq_space(cq), KFAB_CQ_DRAIN_BATCH);
	list_for_each_entry_safe(node, next, &cq->overflow, link) {
		if (moved == space)
			break;
		kfab_cq_ring_put(cq, &node->entry, node->payload);
		list_move_tail(&node->link, done);
		cq->nr_overflow--;
		moved++;
	}
	kfab_cq_sync_overflow(cq);
	return moved;
}

static void kfab_cq_free_nodes(struct list_head *list)
{
	struct kfab_cq_node *node, *next;

	list_for_each_entry_safe(node, next, list, link)
		kfree(node);
}

/*
 * (P3): whatever was published above is visible before armed is read; if
 * user space armed after our publication, it sees the entry itself.
 */
void kfab_cq_wake(struct kfab_cq *cq)
{
	/* Set at open, never after: without one nobody waits to be woken. */
	if (!cq->eventfd)
		return;
	/* (P3) pairs with user space's smp_mb() after arming (C2). */
	smp_mb();
	if (READ_ONCE(cq->cons->armed))
		kfab_eventfd_signal(cq->eventfd);
}

/**
 * kfab_cq_post() - post one completion
 * @cq: the CQ
 * @entry: the completion
 * @overflowed: out: true when it went to the overflow list
 *
 * Completions keep their order: while the overflow list holds any, new ones
 * queue behind them.  Process context only (it may allocate).
 *
 * Return: 0, or -ENOSPC when the ring and the overflow list are both full
 * (the completion is not posted), -ENOMEM.
 */
int kfab_cq_post(struct kfab_cq *cq, const struct kfab_cq_entry *entry,
		 bool *overflowed)
{
	return kfab_cq_post_payload(cq, entry, NULL, overflowed);
}

/**
 * kfab_cq_post_payload() - post one completion that may carry its message
 * @cq: the CQ
 * @in: the completion; with KFAB_COMP_PAYLOAD (only on a CQ opened with
 *	KFAB_CQ_OPEN_PAYLOAD), @in->len bytes of @payload go with it
 * @payload: the message, or NULL
 * @overflowed: out: true when it went to the overflow list
 *
 * As kfab_cq_post().
 */
int kfab_cq_post_payload(struct kfab_cq *cq, const struct kfab_cq_entry *in,
			 const void *payload, bool *overflowed)
{
	const struct kfab_cq_entry *entry = in;
	struct kfab_cq_node *node = NULL;
	/* Copied whole before use; rarely used: not zeroed per completion. */
	struct kfab_cq_entry stripped __uninitialized;
	LIST_HEAD(done);
	int rc = 0;

	/* Only kfab's own small messages, on a CQ that has room for them. */
	if ((in->flags & KFAB_COMP_PAYLOAD) &&
	    (!payload || !cq->payload || in->len > KFAB_CQ_PAYLOAD_MAX)) {
		stripped = *in;
		stripped.flags &= ~KFAB_COMP_PAYLOAD;
		entry = &stripped;
	}

	*overflowed = false;
	for (;;) {
		spin_lock(&cq->lock);
		/* One batch at most; KFAB_IOC_CQ_DRAIN does the rest. */
		kfab_cq_drain_locked(cq, &done);
		if (!cq->nr_overflow && kfab_cq_space(cq)) {
			kfab_cq_ring_put(cq, entry, payload);
			cq->posted++;
			break;
		}
		if (cq->nr_overflow >= cq->backlog_max) {
			rc = -ENOSPC;
			break;
		}
		if (node) {
			node->entry = *entry;
			if (entry->flags & KFAB_COMP_PAYLOAD)
				memcpy(node->payload, payload, entry->len);
			list_add_tail(&node->link, &cq->overflow);
			node = NULL;
			cq->nr_overflow++;
			cq->overflowed++;
			cq->posted++;
			kfab_cq_sync_overflow(cq);
			*overflowed = true;
			break;
		}
		spin_unlock(&cq->lock);

		/* The ring is full: allocate unlocked, then look again. */
		node = kmalloc(sizeof(*node), GFP_KERNEL_ACCOUNT);
		if (!node) {
			rc = -ENOMEM;
			goto out;
		}
	}
	spin_unlock(&cq->lock);
	if (!rc)
		kfab_cq_wake(cq);
out:
	kfree(node);
	kfab_cq_free_nodes(&done);
	return rc;
}

/**
 * kfab_cq_post_fast() - post a completion if the ring takes it now
 * @cq: the CQ
 * @entry: the completion; with KFAB_COMP_PAYLOAD the caller has checked
 *	that @cq has payload slots and @entry->len fits one
 * @payload: the message, or NULL
 *
 * The common case of kfab_cq_post_payload(), for msg.c's fast path: no
 * overflow list to keep behind, no allocation, no drain.
 *
 * Return: true when posted; false, with nothing done, when the ring is
 * full or completions wait on the overflow list.
 */
bool kfab_cq_post_fast(struct kfab_cq *cq, const struct kfab_cq_entry *entry,
		       const void *payload)
{
	spin_lock(&cq->lock);
	if (cq->nr_overflow || !kfab_cq_space(cq)) {
		spin_unlock(&cq->lock);
		return false;
	}
	kfab_cq_ring_put(cq, entry, payload);
	cq->posted++;
	spin_unlock(&cq->lock);
	kfab_cq_wake(cq);
	return true;
}

/**
 * kfab_cq_post_err() - post one error completion
 * @cq: the CQ
 * @err: the error completion (copied)
 *
 * Return: 0, -ENOSPC when the error list is full, -ENOMEM.
 */
int kfab_cq_post_err(struct kfab_cq *cq, const struct kfab_cq_err *err)
{
	struct kfab_cq_err_node *node;
	int rc = 0;

	node = kmalloc(sizeof(*node), GFP_KERNEL_ACCOUNT);
	if (!node)
		return -ENOMEM;
	node->err = *err;

	spin_lock(&cq->lock);
	if (cq->nr_errors >= cq->backlog_max) {
		rc = -ENOSPC;
	} else {
		list_add_tail(&node->link, &cq->errors);
		cq->nr_errors++;
		WRITE_ONCE(cq->ring->err_count, cq->nr_errors);
		node = NULL;
	}
	spin_unlock(&cq->lock);
	kfree(node);
	if (!rc)
		kfab_cq_wake(cq);
	return rc;
}

/* How many overflowed completions are left after a drain. */
static u32 kfab_cq_drain(struct kfab_cq *cq)
{
	u32 moved, left;

	/* Batch by batch: the lock is never held for a whole ring's worth. */
	do {
		LIST_HEAD(done);

		spin_lock(&cq->lock);
		moved = kfab_cq_drain_locked(cq, &done);
		left = cq->nr_overflow;
		spin_unlock(&cq->lock);
		kfab_cq_free_nodes(&done);
		cond_resched();
	} while (moved && left);
	return left;
}

void kfab_cq_destroy(struct kfab_object *obj)
{
	struct kfab_cq *cq = to_kfab_cq(obj);
	struct kfab_cq_err_node *enode, *enext;

	/* Mappings made already keep their pages (kfab_region refcounts). */
	if (cq->ring_offset)
		kfab_region_withdraw(obj->ctx, cq->ring_offset);
	if (cq->cons_offset)
		kfab_region_withdraw(obj->ctx, cq->cons_offset);
	kfab_region_put(cq->ring_region);
	kfab_region_put(cq->cons_region);
	kfab_cq_free_nodes(&cq->overflow);
	list_for_each_entry_safe(enode, enext, &cq->errors, link)
		kfree(enode);
	if (cq->eventfd)
		eventfd_ctx_put(cq->eventfd);
	kfree(cq);
}

void kfab_cq_show(struct seq_file *s, struct kfab_object *obj)
{
	struct kfab_cq *cq = to_kfab_cq(obj);

	spin_lock(&cq->lock);
	seq_printf(s, " domain %u entries %u head %u tail %u overflow %u overflowed %llu errors %u posted %llu bad_head %llu eventfd %s armed %u helped %llu",
		   cq->obj.parent->id, cq->entries, READ_ONCE(cq->cons->head),
		   cq->tail, cq->nr_overflow, cq->overflowed, cq->nr_errors,
		   cq->posted, cq->bad_head, cq->eventfd ? "yes" : "no",
		   READ_ONCE(cq->cons->armed) ? 1 : 0, cq->helped);
	spin_unlock(&cq->lock);
}

/* netlink: the ring's size and what it held back (no sleep: xarray lock). */
int kfab_cq_nl_fill(struct sk_buff *skb, struct kfab_object *obj)
{
	struct kfab_cq *cq = to_kfab_cq(obj);
	int rc;

	spin_lock(&cq->lock);
	rc = nla_put_u32(skb, KFAB_NL_ATTR_ENTRIES, cq->entries) ||
	     kfab_nl_put_u64(skb, KFAB_NL_ATTR_CQ_POSTED, cq->posted) ||
	     kfab_nl_put_u64(skb, KFAB_NL_ATTR_CQ_OVERFLOWED, cq->overflowed) ||
	     nla_put_u32(skb, KFAB_NL_ATTR_CQ_BACKLOG, cq->nr_overflow) ||
	     nla_put_u32(skb, KFAB_NL_ATTR_CQ_ERRORS, cq->nr_errors);
	spin_unlock(&cq->lock);
	return rc ? -EMSGSIZE : 0;
}

/* Allocate and offer both regions; on failure the destroy path frees. */
static int kfab_cq_alloc_rings(struct kfab_ucmd *ucmd, struct kfab_cq *cq)
{
	size_t ring_size = sizeof(struct kfab_cq_ring) +
			   (size_t)cq->entries * cq->slot_size;
	int rc;

	cq->ring_region = kfab_region_alloc(ring_size, true);
	if (IS_ERR(cq->ring_region)) {
		rc = PTR_ERR(cq->ring_region);
		cq->ring_region = NULL;
		return rc;
	}
	cq->cons_region = kfab_region_alloc(sizeof(struct kfab_cq_consumer),
					    false);
	if (IS_ERR(cq->cons_region)) {
		rc = PTR_ERR(cq->cons_region);
		cq->cons_region = NULL;
		return rc;
	}
	cq->ring = cq->ring_region->vaddr;
	cq->slots = (u8 *)(cq->ring + 1);
	cq->cons = cq->cons_region->vaddr;
	cq->ring->entries = cq->entries;
	cq->ring->mask = cq->mask;
	cq->ring->entry_size = cq->slot_size;

	rc = kfab_region_offer(ucmd->ctx, cq->ring_region, &cq->ring_offset);
	if (rc)
		return rc;
	return kfab_region_offer(ucmd->ctx, cq->cons_region, &cq->cons_offset);
}

int kfab_ioctl_cq_open(struct kfab_ucmd *ucmd)
{
	struct kfab_cq_open *cmd = ucmd->cmd;
	struct kfab_object *obj;
	struct kfab_cq *cq;
	u32 entries;
	int rc;

	if (cmd->flags & ~(KFAB_CQ_OPEN_EVENTFD | KFAB_CQ_OPEN_PAYLOAD))
		return -EOPNOTSUPP;
	if (!(cmd->flags & KFAB_CQ_OPEN_EVENTFD) && cmd->eventfd)
		return -EINVAL;
	entries = cmd->entries ? cmd->entries : KFAB_CQ_DEFAULT_ENTRIES;
	if (entries > KFAB_CQ_MAX_ENTRIES)
		return -EINVAL;
	entries = roundup_pow_of_two(entries);

	obj = kfab_object_alloc_in(ucmd->ctx, cmd->domain_id, sizeof(*cq),
				   KFAB_OBJ_CQ);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	cq = to_kfab_cq(obj);
	spin_lock_init(&cq->lock);
	INIT_LIST_HEAD(&cq->overflow);
	INIT_LIST_HEAD(&cq->errors);
	INIT_LIST_HEAD(&cq->shares);
	cq->entries = entries;
	cq->mask = entries - 1;
	cq->payload = cmd->flags & KFAB_CQ_OPEN_PAYLOAD;
	cq->slot_size = sizeof(struct kfab_cq_entry) +
			(cq->payload ? KFAB_CQ_PAYLOAD_MAX : 0);
	cq->backlog_max = max_t(u32, entries * KFAB_CQ_BACKLOG_FACTOR,
				KFAB_CQ_BACKLOG_MIN);

	if (cmd->flags & KFAB_CQ_OPEN_EVENTFD) {
		cq->eventfd = eventfd_ctx_fdget(cmd->eventfd);
		if (IS_ERR(cq->eventfd)) {
			rc = PTR_ERR(cq->eventfd);
			cq->eventfd = NULL;
			goto err_abort;
		}
	}
	rc = kfab_cq_alloc_rings(ucmd, cq);
	if (rc)
		goto err_abort;

	*cmd = (struct kfab_cq_open) {
		.size = cmd->size,
		.flags = cmd->flags,
		.domain_id = cmd->domain_id,
		.entries = cmd->entries,
		.eventfd = cmd->eventfd,
		.out_cq_id = obj->id,
		.out_ring = {
			.ring = {
				.offset = cq->ring_offset,
				.size = cq->ring_region->size,
			},
			.cons = {
				.offset = cq->cons_offset,
				.size = cq->cons_region->size,
			},
			.entries = entries,
			.entry_size = cq->slot_size,
			.off_tail = offsetof(struct kfab_cq_ring, tail),
			.off_flags = offsetof(struct kfab_cq_ring, flags),
			.off_overflow = offsetof(struct kfab_cq_ring, overflow),
			.off_err_count = offsetof(struct kfab_cq_ring,
						  err_count),
			.off_entries = sizeof(struct kfab_cq_ring),
			.off_head = offsetof(struct kfab_cq_consumer, head),
			.off_armed = offsetof(struct kfab_cq_consumer, armed),
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

int kfab_ioctl_cq_drain(struct kfab_ucmd *ucmd)
{
	struct kfab_cq_drain *cmd = ucmd->cmd;
	struct kfab_cq *cq;

	if (cmd->flags)
		return -EOPNOTSUPP;
	cq = kfab_cq_get(ucmd->ctx, cmd->cq_id);
	if (!cq)
		return -ENOENT;
	cmd->out_overflow = kfab_cq_drain(cq);
	kfab_cq_put(cq);
	return kfab_ucmd_respond(ucmd, sizeof(*cmd));
}

/* Give back an error completion the caller could not deliver: it stays first. */
static void kfab_cq_requeue_err(struct kfab_cq *cq,
				struct kfab_cq_err_node *node)
{
	spin_lock(&cq->lock);
	list_add(&node->link, &cq->errors);
	cq->nr_errors++;
	WRITE_ONCE(cq->ring->err_count, cq->nr_errors);
	spin_unlock(&cq->lock);
}

int kfab_ioctl_cq_readerr(struct kfab_ucmd *ucmd)
{
	struct kfab_cq_readerr *cmd = ucmd->cmd;
	struct kfab_cq_err_node *node;
	struct kfab_cq *cq;
	u32 copy;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	cq = kfab_cq_get(ucmd->ctx, cmd->cq_id);
	if (!cq)
		return -ENOENT;

	spin_lock(&cq->lock);
	node = list_first_entry_or_null(&cq->errors, struct kfab_cq_err_node,
					link);
	if (node) {
		list_del(&node->link);
		cq->nr_errors--;
		WRITE_ONCE(cq->ring->err_count, cq->nr_errors);
	}
	spin_unlock(&cq->lock);
	if (!node) {
		rc = -EAGAIN;
		goto out_put;
	}

	copy = min_t(u32, cmd->err_data_size, node->err.err_data_len);
	*cmd = (struct kfab_cq_readerr) {
		.size = cmd->size,
		.cq_id = cmd->cq_id,
		.err_data_size = copy,
		.err_data = cmd->err_data,
		.out_entry = node->err.entry,
		.out_olen = node->err.olen,
		.out_err = node->err.err,
		.out_prov_errno = node->err.prov_errno,
		.out_err_data_len = node->err.err_data_len,
	};
	rc = 0;
	if (copy && copy_to_user(u64_to_user_ptr(cmd->err_data),
				 node->err.err_data, copy))
		rc = -EFAULT;
	/*
	 * The bytes of a truncated small receive: this is the receiver's own
	 * call, so they go to its buffer now (a bad buffer only loses them).
	 */
	if (!rc && (node->err.entry.flags & KFAB_COMP_PAYLOAD)) {
		if (copy_to_user(u64_to_user_ptr(node->err.entry.buf),
				 node->err.payload, node->err.payload_len))
			cmd->out_entry.len = 0;
		cmd->out_entry.flags &= ~KFAB_COMP_PAYLOAD;
	}
	if (!rc)
		rc = kfab_ucmd_respond(ucmd, sizeof(*cmd));
	if (rc)
		kfab_cq_requeue_err(cq, node);
	else
		kfree(node);
out_put:
	kfab_cq_put(cq);
	return rc;
}
