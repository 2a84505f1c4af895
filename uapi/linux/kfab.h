/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * kfab: the libfabric (OFI) object model in the kernel - user/kernel ABI.
 *
 * Conventions (Documentation/abi.rst has the long form):
 *
 *  - Every command takes one struct whose first member is "__u32 size", the
 *    number of bytes user space passes.  The kernel accepts any size from the
 *    end of the command's first-version struct up to a page: bytes it does not
 *    know must be zero (else -E2BIG), a shorter struct is -EINVAL.  Outputs
 *    the caller's size cannot hold are dropped; outputs it can hold but the
 *    kernel does not know are zero-filled.  Structs only ever grow at the end.
 *  - Commands are _IOWR(KFAB_TYPE, nr, first-version struct).  The kernel
 *    dispatches on type, direction and nr only: the size bits of the command
 *    number are not checked, "size" is what counts, so a binary built against
 *    an older or newer header keeps working.
 *  - User pointers travel as __u64; every struct is naturally aligned with
 *    explicit padding ("__reserved" members, which must be zero on input).
 *  - Unknown commands get -ENOTTY; unknown flags get -EOPNOTSUPP.
 *  - Objects (domains now; AVs, CQs, endpoints later) live in the file
 *    context that created them and are named by a __u32 id, never 0.
 *    KFAB_IOC_DESTROY destroys any of them; closing the file destroys all.
 */
#ifndef _UAPI_LINUX_KFAB_H
#define _UAPI_LINUX_KFAB_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define KFAB_DEVICE_NAME	"kfab"
#define KFAB_ABI_VERSION	1

/* ioctl type byte: 0xFA is unassigned in ioctl-number.rst */
#define KFAB_TYPE		0xFA

enum kfab_cmd_nr {
	KFAB_CMD_QUERY = 0x00,
	KFAB_CMD_DESTROY = 0x01,
	KFAB_CMD_DOMAIN_ALLOC = 0x02,
	/* Test-only commands (CONFIG_KFAB_TEST) are numbered from here. */
	KFAB_CMD_TEST_BASE = 0x38,
	KFAB_CMD_TEST_FAULT = KFAB_CMD_TEST_BASE,
};

/* Bits of kfab_query.features */
enum kfab_feature {
	/* The module was built with CONFIG_KFAB_TEST: never on in production. */
	KFAB_FEATURE_TEST = 1 << 0,
};

/**
 * struct kfab_query - KFAB_IOC_QUERY: ABI version and limits of the module
 * @size: sizeof(struct kfab_query)
 * @flags: must be 0
 * @abi_version: out: KFAB_ABI_VERSION of the running module
 * @features: out: KFAB_FEATURE_* bits
 * @max_objects: out: most objects one open file may hold at once
 * @max_ioctl_size: out: largest @size any command accepts
 * @module_version: out: the module's version as (major << 16 | minor << 8 | patch)
 * @__reserved: out: zero
 */
struct kfab_query {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 features;
	__u32 max_objects;
	__u32 max_ioctl_size;
	__u32 module_version;
	__u32 __reserved;
};

#define KFAB_IOC_QUERY _IOWR(KFAB_TYPE, KFAB_CMD_QUERY, struct kfab_query)

/**
 * struct kfab_destroy - KFAB_IOC_DESTROY: destroy an object of this file
 * @size: sizeof(struct kfab_destroy)
 * @id: the object's id
 *
 * -ENOENT if @id names no object of this file, -EBUSY while other objects
 * still depend on it (destroy those first).
 */
struct kfab_destroy {
	__u32 size;
	__u32 id;
};

#define KFAB_IOC_DESTROY _IOWR(KFAB_TYPE, KFAB_CMD_DESTROY, struct kfab_destroy)

/**
 * struct kfab_domain_alloc - KFAB_IOC_DOMAIN_ALLOC: open a domain
 * @size: sizeof(struct kfab_domain_alloc)
 * @flags: must be 0
 * @out_domain_id: out: id of the new domain
 * @__reserved: must be 0
 *
 * A domain is the libfabric fid_domain: the parent of the AVs, CQs,
 * counters and endpoints that later commands create.
 */
struct kfab_domain_alloc {
	__u32 size;
	__u32 flags;
	__u32 out_domain_id;
	__u32 __reserved;
};

#define KFAB_IOC_DOMAIN_ALLOC \
	_IOWR(KFAB_TYPE, KFAB_CMD_DOMAIN_ALLOC, struct kfab_domain_alloc)

/*
 * Test-only commands.  They exist only in a module built with
 * CONFIG_KFAB_TEST (KFAB_FEATURE_TEST); a production module answers -ENOTTY.
 */

/* Fault-injection points of KFAB_IOC_TEST_FAULT */
enum kfab_test_fault_point {
	/* kfab's own allocations of objects: fail with -ENOMEM */
	KFAB_FAULT_ALLOC = 0,
	/* copying a command's answer back to user space: fail with -EFAULT */
	KFAB_FAULT_COPY_OUT = 1,
	KFAB_FAULT_POINT_MAX,
};

/**
 * struct kfab_test_fault - KFAB_IOC_TEST_FAULT: make the nth pass fail
 * @size: sizeof(struct kfab_test_fault)
 * @point: a KFAB_FAULT_* point (-EINVAL otherwise)
 * @nth: the nth pass through @point in this file fails (1 = the next); 0
 *	disarms
 * @out_remaining: out: passes that were still to go before this call; 0
 *	means the fault armed earlier has fired (or none was armed)
 *
 * Faults are per open file, one shot, and count passes made by any thread
 * using the file.  This is how the selftests walk every failure path of
 * every command, as the kernel's fail-nth does for allocations.
 */
struct kfab_test_fault {
	__u32 size;
	__u32 point;
	__u32 nth;
	__u32 out_remaining;
};

#define KFAB_IOC_TEST_FAULT \
	_IOWR(KFAB_TYPE, KFAB_CMD_TEST_FAULT, struct kfab_test_fault)

#endif /* _UAPI_LINUX_KFAB_H */
