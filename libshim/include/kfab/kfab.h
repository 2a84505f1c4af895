/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kfab/kfab.h - extensions of the kfab libfabric provider.
 *
 * The calls here are static inline wrappers over libfabric's own extension
 * hooks (fi_get_val() with provider-specific names that have FI_PROV_SPECIFIC
 * set, as rdma/fabric.h asks), so an application needs only -lfabric and no
 * link against libkfab: the provider that libfabric loaded from
 * FI_PROVIDER_PATH answers them, and libfabric's hook providers pass them
 * through.  Called on an object of another provider they fail with whatever
 * that provider answers for an unknown name (normally -FI_ENOSYS).
 */
#ifndef KFAB_KFAB_H
#define KFAB_KFAB_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The provider's version, as fi_info reports it in fabric_attr->prov_version. */
#define KFAB_PROV_VERSION	FI_VERSION(0, 1)

/**
 * struct kfab_abi_info - what the kfab kernel module told a fabric
 * @size: in: sizeof(struct kfab_abi_info) of the caller (kfab_query() sets it)
 * @abi_version: KFAB_ABI_VERSION of the module (<linux/kfab.h>)
 * @features: KFAB_FEATURE_* bits of the module
 * @max_objects: most kernel objects (domains, ...) one fabric may hold
 * @max_ioctl_size: largest command struct the module accepts
 * @module_version: the module's version, (major << 16 | minor << 8 | patch)
 *
 * Grows only at the end.  The provider fills what the caller's @size holds
 * and zeroes members of a newer caller that it does not know.
 */
struct kfab_abi_info {
	uint32_t size;
	uint32_t abi_version;
	uint32_t features;
	uint32_t max_objects;
	uint32_t max_ioctl_size;
	uint32_t module_version;
};

/* fi_get_val() name on a kfab fabric: val is a struct kfab_abi_info *. */
#define KFAB_FABRIC_ABI_INFO	((int)(FI_PROV_SPECIFIC | 0x4b460001U))

/**
 * kfab_query() - the kernel ABI version and limits behind a kfab fabric
 * @fabric: a fabric opened with fi_fabric() from a kfab fi_info
 * @info: filled in on success
 *
 * The values are those the module reported when the fabric was opened
 * (KFAB_IOC_QUERY); no system call is made.
 *
 * Return: 0, or -FI_EINVAL for a NULL @info, or the error of a fabric that
 * is not kfab's (normally -FI_ENOSYS).
 */
static inline int kfab_query(struct fid_fabric *fabric,
			     struct kfab_abi_info *info)
{
	if (!info)
		return -FI_EINVAL;
	info->size = sizeof(*info);
	return fi_get_val(&fabric->fid, KFAB_FABRIC_ABI_INFO, info);
}

/*
 * fi_eq_write() flag on a kfab EQ: insert an error entry.  buf is a
 * struct fi_eq_err_entry and len its size; the event argument is ignored.
 * The entry (and err_data_size bytes of err_data, if both are set) is
 * copied; fi_eq_read() then answers -FI_EAVAIL when it reaches it and
 * fi_eq_readerr() returns it.  libfabric 1.17 has no standard flag for
 * this.  The EQ's size and FI_WRITE rules apply as for any fi_eq_write().
 */
#define KFAB_EQ_WRITE_ERR	(1ULL << 62)
/**
 * struct kfab_kernel_handle - the kernel object behind a kfab fid
 * @fd: the /dev/kfab file the object lives in (the fabric's; do not close)
 * @id: the object's id in that file (<linux/kfab.h>)
 */
struct kfab_kernel_handle {
	int fd;
	uint32_t id;
};

/* fi_get_val() name on a kfab CQ or counter: val is a struct kfab_kernel_handle *. */
#define KFAB_FID_KERNEL_HANDLE	((int)(FI_PROV_SPECIFIC | 0x4b460002U))

/**
 * kfab_kernel_handle() - the kernel file and id of a kfab CQ or counter
 * @fid: the CQ's or counter's fid
 * @handle: filled in on success
 *
 * For tools and tests that talk to the module directly (the test-only
 * KFAB_IOC_TEST_CQ_POST, debugfs).
 *
 * Return: 0, -FI_EINVAL for a NULL @handle, or the error of a fid that
 * is not kfab's (normally -FI_ENOSYS).
 */
static inline int kfab_kernel_handle(struct fid *fid,
				     struct kfab_kernel_handle *handle)
{
	if (!handle)
		return -FI_EINVAL;
	return fi_get_val(fid, KFAB_FID_KERNEL_HANDLE, handle);
}

/*
 * fi_get_val() name on a kfab CQ (val: struct fid_peer_cq **) or a kfab
 * shared receive context (val: struct fid_peer_srx **): kfab as the owner
 * of fi_peer(3).  Each call allocates a new fid_peer_* object for one peer
 * provider, owned by kfab; pass it to that provider's fi_cq_open() or
 * fi_srx_context() with FI_PEER (struct fi_peer_cq_context or
 * fi_peer_srx_context).  Then either:
 *
 *  - fi_import_fid(&peer_obj->fid, &peers_object->fid, 0): kfab keeps the
 *    fid the peer returned, drives its progress from its own reads
 *    (fi_cq_read(peer_cq, NULL, 0)) and closes it when the fid_peer_*
 *    object or kfab's object is closed; or
 *  - close the peer's object yourself, then fi_close(&peer_obj->fid).
 *
 * kfab's object cannot be closed (-FI_EBUSY) while a fid_peer_* object of
 * it is open without an imported fid.  See Documentation/peer.rst.
 */
#define KFAB_FID_PEER_EXPORT	((int)(FI_PROV_SPECIFIC | 0x4b460003U))

/*
 * fi_import_fid() flag on a kfab fid_peer_cq: the CQ imported is a plain
 * CQ of the peer (not opened with FI_PEER: libfabric 1.17's shm refuses
 * FI_PEER on its CQs), of format FI_CQ_FORMAT_TAGGED.  kfab then reads
 * it (fi_cq_read(), fi_cq_readerr()) whenever kfab's CQ is read and moves
 * what it finds into kfab's CQ, where the application reads it.
 */
#define KFAB_IMPORT_DRAIN	(1ULL << 61)

#ifdef __cplusplus
}
#endif

#endif /* KFAB_KFAB_H */
