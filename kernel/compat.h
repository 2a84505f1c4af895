/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The few kernel interfaces kfab uses whose shape changed after 6.1, the
 * kernel it is built and tested against first.  One wrapper each, so the
 * rest of the module reads the same on every kernel it builds for.
 */
#ifndef KFAB_COMPAT_H
#define KFAB_COMPAT_H

#include <linux/eventfd.h>
#include <linux/mm.h>
#include <linux/uio.h>
#include <linux/version.h>

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

#endif /* KFAB_COMPAT_H */
