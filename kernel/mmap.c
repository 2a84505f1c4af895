// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory shared with user space: completion rings, counters, AV tables.
 *
 * A region is zeroed vmalloc memory with a reference count.  The
 * object that owns it holds one reference; every file context it is offered
 * to holds one through a cookie, the page-aligned mmap offset user space
 * passes to mmap() on its /dev/kfab file; every VMA that maps it holds one.
 * So a region outlives its object for as long as a process still maps it:
 * destroying an object never leaves a user mapping pointing at freed pages.
 *
 * A region created read-only can never be mapped writable, not even later
 * with mprotect(): user space reads it without a system call and the kernel
 * alone writes it (the table of a named AV, the entries of a CQ ring).  A
 * region marked no_fork (buffered receives) is left out of a child's mm.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "kfab.h"

/* Cookies: index << KFAB_MMAP_COOKIE_SHIFT, so a region may span 4 GiB. */
#define KFAB_MMAP_COOKIE_SHIFT	32

/**
 * kfab_region_alloc() - allocate zeroed memory to share with user space
 * @size: bytes; rounded up to whole pages
 * @read_only: user space may only ever map it read-only
 *
 * Return: the region holding one reference, or an ERR_PTR (-ENOMEM,
 * -EINVAL for a size of 0 or above 4 GiB).
 */
struct kfab_region *kfab_region_alloc(size_t size, bool read_only)
{
	struct kfab_region *region;

	size = PAGE_ALIGN(size);
	if (!size || size > BIT_ULL(KFAB_MMAP_COOKIE_SHIFT))
		return ERR_PTR(-EINVAL);
	region = kzalloc(sizeof(*region), GFP_KERNEL_ACCOUNT);
	if (!region)
		return ERR_PTR(-ENOMEM);
	/*
	 * Not vmalloc_user(): its size comes from user space (a CQ's entries),
	 * so a failure is the caller's -ENOMEM, charged and without a
	 * warning.  The pages are mapped one by one in kfab_fops_mmap().
	 */
	region->vaddr = __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO |
				  __GFP_NOWARN);
	if (!region->vaddr) {
		kfree(region);
		return ERR_PTR(-ENOMEM);
	}
	region->size = size;
	region->read_only = read_only;
	kref_init(&region->ref);
	return region;
}

static void kfab_region_release(struct kref *ref)
{
	struct kfab_region *region = container_of(ref, struct kfab_region, ref);

	vfree(region->vaddr);
	kfree(region);
}

void kfab_region_get(struct kfab_region *region)
{
	kref_get(&region->ref);
}

void kfab_region_put(struct kfab_region *region)
{
	if (region)
		kref_put(&region->ref, kfab_region_release);
}

/**
 * kfab_region_offer() - let a context map a region
 * @ctx: the context
 * @region: the region; the context takes its own reference
 * @out_offset: the mmap offset to hand to user space
 *
 * Return: 0, -ENOSPC when the context offers too many regions, -ENOMEM.
 */
int kfab_region_offer(struct kfab_ctx *ctx, struct kfab_region *region,
		      u64 *out_offset)
{
	u32 index;
	int rc;

	rc = xa_alloc(&ctx->regions, &index, region,
		      XA_LIMIT(1, kfab_max_objects * 4), GFP_KERNEL_ACCOUNT);
	if (rc)
		return rc == -EBUSY ? -ENOSPC : rc;
	kfab_region_get(region);
	*out_offset = (u64)index << KFAB_MMAP_COOKIE_SHIFT;
	return 0;
}

/**
 * kfab_region_withdraw() - undo kfab_region_offer()
 * @ctx: the context
 * @offset: the offset kfab_region_offer() gave
 *
 * Later mmap() calls with @offset fail; mappings made already stay valid.
 */
void kfab_region_withdraw(struct kfab_ctx *ctx, u64 offset)
{
	struct kfab_region *region;

	region = xa_erase(&ctx->regions, offset >> KFAB_MMAP_COOKIE_SHIFT);
	kfab_region_put(region);
}

/* Called on the last close: the objects have withdrawn theirs already. */
void kfab_ctx_regions_destroy(struct kfab_ctx *ctx)
{
	struct kfab_region *region;
	unsigned long index;

	xa_for_each(&ctx->regions, index, region) {
		xa_erase(&ctx->regions, index);
		kfab_region_put(region);
	}
	xa_destroy(&ctx->regions);
}

static void kfab_vma_open(struct vm_area_struct *vma)
{
	kfab_region_get(vma->vm_private_data);
}

static void kfab_vma_close(struct vm_area_struct *vma)
{
	kfab_region_put(vma->vm_private_data);
}

static const struct vm_operations_struct kfab_vm_ops = {
	.open = kfab_vma_open,
	.close = kfab_vma_close,
};

/*
 * mmap() of /dev/kfab: the offset names the region, which is mapped from its
 * start; the length may be shorter than the region, never longer.
 */
int kfab_fops_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct kfab_ctx *ctx = filp->private_data;
	unsigned long index, off, len = vma->vm_end - vma->vm_start;
	struct kfab_region *region;
	int rc;

	if (vma->vm_pgoff & (BIT(KFAB_MMAP_COOKIE_SHIFT - PAGE_SHIFT) - 1))
		return -EINVAL;
	/* A private (copy-on-write) mapping would stop seeing our writes. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	index = vma->vm_pgoff >> (KFAB_MMAP_COOKIE_SHIFT - PAGE_SHIFT);

	xa_lock(&ctx->regions);
	region = xa_load(&ctx->regions, index);
	if (region)
		kfab_region_get(region);
	xa_unlock(&ctx->regions);
	if (!region)
		return -EINVAL;

	rc = -EINVAL;
	if (len > region->size)
		goto out_put;
	if (region->read_only) {
		rc = -EPERM;
		if (vma->vm_flags & VM_WRITE)
			goto out_put;
		kfab_vma_clear_maywrite(vma);
	}
	/* A buffered-receive region is its receiver's alone (bufrecv.c). */
	if (region->no_fork)
		kfab_vma_set_dontcopy(vma);
	/* The mapping starts at the region's first page; it never grows. */
	vma->vm_pgoff = 0;
	kfab_vma_set_dontexpand(vma);
	for (off = 0; off < len; off += PAGE_SIZE) {
		rc = vm_insert_page(vma, vma->vm_start + off,
				    vmalloc_to_page(region->vaddr + off));
		if (rc)
			goto out_put;
	}
	vma->vm_private_data = region;
	vma->vm_ops = &kfab_vm_ops;
	/* The reference taken above is now the VMA's. */
	return 0;

out_put:
	kfab_region_put(region);
	return rc;
}
