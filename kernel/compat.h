/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The few kernel interfaces kfab uses whose shape changed after 6.1, the
 * kernel it is built and tested against first.  One wrapper each, so the
 * rest of the module reads the same on every kernel it builds for.
 */
#ifndef KFAB_COMPAT_H
#define KFAB_COMPAT_H

#include <linux/blk-mq.h>
#include <linux/eventfd.h>
#include <linux/mm.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/uio.h>
#include <linux/version.h>
#include <net/genetlink.h>

/* vm_flags became read-only outside helpers in 6.3. */
static inline void kfab_vma_clear_maywrite(struct vm_area_struct *vma)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, VM_MAYWRITE);
#else
	vma->vm_flags &= ~VM_MAYWRITE;
#endif
}

/* A device mapping that mremap() may not grow, and that core dumps skip. */
/* Not inherited by a child: fork() leaves it out of the new mm. */
static inline void kfab_vma_set_dontcopy(struct vm_area_struct *vma)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTCOPY);
#else
	vma->vm_flags |= VM_DONTCOPY;
#endif
}

static inline void kfab_vma_set_dontexpand(struct vm_area_struct *vma)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
}

/* eventfd_signal() lost its count argument in 6.8. */
static inline void kfab_eventfd_signal(struct eventfd_ctx *ctx)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
	eventfd_signal(ctx);
#else
	eventfd_signal(ctx, 1);
#endif
}

/* An ITER_IOVEC iterator's array became iter_iov() (was ->iov) in 6.4. */
static inline const struct iovec *kfab_iter_iov(const struct iov_iter *it)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	return iter_iov(it);
#else
	return it->iov;
#endif
}

/*
 * Send a bvec iterator's pages by reference, not by copy: MSG_SPLICE_PAGES
 * since 6.5, sendpage (now gone) before.  Return: 0 or a negative errno.
 */
static inline int kfab_sock_send_pages(struct socket *sock, struct msghdr *msg)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
	msg->msg_flags |= MSG_SPLICE_PAGES;
	while (msg_data_left(msg)) {
		int rc = sock_sendmsg(sock, msg);

		if (rc <= 0)
			return rc ? rc : -EPIPE;
	}
	return 0;
#else
	int flags = msg->msg_flags;

	while (msg_data_left(msg)) {
		const struct bio_vec *bv = msg->msg_iter.bvec;
		size_t off = bv->bv_offset + msg->msg_iter.iov_offset;
		size_t n = min3(msg_data_left(msg),
				bv->bv_len - msg->msg_iter.iov_offset,
				PAGE_SIZE - offset_in_page(off));
		int rc;

		rc = kernel_sendpage(sock, nth_page(bv->bv_page,
						    off >> PAGE_SHIFT),
				     offset_in_page(off), n,
				     n < msg_data_left(msg) ? flags | MSG_MORE :
							     flags);
		if (rc <= 0)
			return rc ? rc : -EPIPE;
		iov_iter_advance(&msg->msg_iter, rc);
	}
	return 0;
#endif
}

/*
 * Since 6.2 a kernel socket may share its task's page fragment; a socket
 * that sends from a work item must not (a macro: struct sock is not
 * defined here).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define kfab_sock_own_frag(sk)	((sk)->sk_use_task_frag = false)
#else
#define kfab_sock_own_frag(sk)	do { } while (0)
#endif

/* What kfab_blk asks of its queue; see kfab_blk_mq_alloc_disk(). */
struct kfab_blk_limits {
	unsigned int block_size;	/* logical and physical */
	unsigned int max_hw_sectors;
	unsigned short max_segments;
	bool write_cache;		/* volatile: flushes go through */
};

/*
 * A blk-mq disk with its queue limits.  6.9 made blk_mq_alloc_disk() take
 * the limits (struct queue_limits) and 6.11 removed the blk_queue_*()
 * setters called after it, turning the write cache into a feature flag of
 * the limits (BLK_FEAT_WRITE_CACHE).
 */
static inline struct gendisk *
kfab_blk_mq_alloc_disk(struct blk_mq_tag_set *set,
		       const struct kfab_blk_limits *kl, void *queuedata)
{
	struct gendisk *disk;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
	struct queue_limits lim = {
		.logical_block_size = kl->block_size,
		.physical_block_size = kl->block_size,
		.max_hw_sectors = kl->max_hw_sectors,
		.max_segments = kl->max_segments,
	};

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
	if (kl->write_cache)
		lim.features |= BLK_FEAT_WRITE_CACHE;
#endif
	disk = blk_mq_alloc_disk(set, &lim, queuedata);
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 11, 0)
	if (!IS_ERR(disk))
		blk_queue_write_cache(disk->queue, kl->write_cache, false);
#endif
#else
	disk = blk_mq_alloc_disk(set, queuedata);
	if (IS_ERR(disk))
		return disk;
	blk_queue_logical_block_size(disk->queue, kl->block_size);
	blk_queue_physical_block_size(disk->queue, kl->block_size);
	blk_queue_max_hw_sectors(disk->queue, kl->max_hw_sectors);
	blk_queue_max_segments(disk->queue, kl->max_segments);
	blk_queue_write_cache(disk->queue, kl->write_cache, false);
#endif
	return disk;
}

/* The parsed attributes of a dump's request moved into a genl_info in 6.2. */
static inline struct nlattr **kfab_genl_dump_attrs(struct netlink_callback *cb)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	return genl_info_dump(cb)->attrs;
#else
	return genl_dumpit_info(cb)->attrs;
#endif
}

#endif /* KFAB_COMPAT_H */
