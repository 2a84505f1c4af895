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
 *  - Objects (domains, AVs; CQs, endpoints later) live in the file
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
	/* Address vectors: 0x10-0x1f */
	KFAB_CMD_AV_OPEN = 0x10,
	KFAB_CMD_AV_INSERT = 0x11,
	KFAB_CMD_AV_REMOVE = 0x12,
	KFAB_CMD_AV_UNLINK = 0x13,
	/* Completion queues: 0x20-0x27; counters: 0x28-0x2f */
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
 * Addresses.  A struct kfab_addr names one endpoint.  Today every address is
 * KFAB_ADDR_LOCAL: an endpoint of this node, named by a number the module
 * hands out when the endpoint is created and never reuses while it is
 * loaded.  Remote nodes will get a family of their own that fills @node; the
 * size of the address stays 16 bytes.
 */
enum kfab_addr_family {
	KFAB_ADDR_UNSPEC = 0,		/* never valid in an AV */
	KFAB_ADDR_LOCAL = 1,
};

/**
 * struct kfab_addr - the address of a kfab endpoint (fi_getname's bytes)
 * @family: a KFAB_ADDR_* value
 * @__reserved: must be 0
 * @node: KFAB_ADDR_LOCAL: must be 0
 * @ep: the endpoint's number, never 0
 */
struct kfab_addr {
	__u16 family;
	__u16 __reserved;
	__u32 node;
	__u64 ep;
};

/*
 * Address vectors.  An AV is a table of addresses; the index of an entry is
 * the fi_addr_t user space uses (FI_AV_TABLE and FI_AV_MAP alike).  An AV is
 * unnamed (private to the handle that opened it) or named: one table on the
 * node that every file opening the same name shares, across processes and
 * containers, guarded by an owner, a group and a mode (Documentation/av.rst).
 *
 * Inserting takes the lowest unused index; inserting an address the table
 * holds already returns the index it has, so every opener of a named AV
 * gets the same index for the same address.  Every opener maps the table
 * read-only (struct kfab_av_header), so lookups cost no system call.  The
 * table has a fixed capacity, chosen when the AV is created.
 */
enum kfab_av_type {
	KFAB_AV_TYPE_UNSPEC = 0,	/* open: the AV's type, or TABLE */
	KFAB_AV_TYPE_TABLE = 1,
	KFAB_AV_TYPE_MAP = 2,
};

/* Bits of kfab_av_open.flags */
enum kfab_av_open_flags {
	/* Open an existing named AV read-only; -ENOENT if there is none. */
	KFAB_AV_OPEN_READ_ONLY = 1 << 0,
	/* Named: -EEXIST if the name exists (create only). */
	KFAB_AV_OPEN_EXCL = 1 << 1,
	/* Named: -ENOENT if the name does not exist (open only). */
	KFAB_AV_OPEN_NO_CREATE = 1 << 2,
	/*
	 * Named, creating: the name stays after its last opener closes, until
	 * KFAB_IOC_AV_UNLINK.  Needs CAP_SYS_ADMIN in the initial user ns.
	 */
	KFAB_AV_OPEN_PERSIST = 1 << 3,
	/*
	 * Named, creating: the owner is @uid/@gid (in the caller's user ns),
	 * not the caller.  Needs CAP_CHOWN in the initial user ns.
	 */
	KFAB_AV_OPEN_SET_OWNER = 1 << 4,
};

/* Bits of kfab_av_open.out_flags */
enum kfab_av_open_out_flags {
	KFAB_AV_OUT_CREATED = 1 << 0,	/* this call created the named AV */
	KFAB_AV_OUT_READ_ONLY = 1 << 1,	/* this handle may not change it */
};

#define KFAB_AV_NAME_MAX	64	/* bytes, with the terminating NUL */

/**
 * struct kfab_av_open - KFAB_IOC_AV_OPEN: open an unnamed or named AV
 * @size: sizeof(struct kfab_av_open)
 * @flags: KFAB_AV_OPEN_* bits; all but the first need a @name (-EINVAL)
 * @domain_id: the parent domain, of this file
 * @type: a KFAB_AV_TYPE_*; opening a named AV of another type is -EINVAL
 * @count: entries wanted; 0 asks for the module's default.  Above the
 *	module's av_max_count: -EINVAL.  A named AV that exists keeps the
 *	capacity it was created with; @out_count tells it.
 * @mode: creating a named AV: its permission bits (0 to 0777, the way
 *	chmod reads them, read = may open, write = may insert and remove);
 *	otherwise ignored.  Bits above 0777: -EINVAL.
 * @uid: with KFAB_AV_OPEN_SET_OWNER: the owner
 * @gid: with KFAB_AV_OPEN_SET_OWNER: the group
 * @__reserved: must be 0
 * @out_av_id: out: id of the AV handle in this file
 * @name: user pointer to the NUL-terminated name, 0 for an unnamed AV.
 *	1 to KFAB_AV_NAME_MAX - 1 characters of [A-Za-z0-9._-], not starting
 *	with '.'; anything else is -EINVAL (-ENAMETOOLONG without a NUL
 *	in the first KFAB_AV_NAME_MAX bytes).
 * @map_addr: named FI_AV_MAP: the map_addr of fi_av_attr.  The creator's
 *	value is kept (the module picks one when it is 0); fi_addr_t values
 *	are the same for all openers whatever they pass.
 * @out_type: out: the AV's type
 * @out_count: out: entries the table holds
 * @out_flags: out: KFAB_AV_OUT_* bits
 * @__reserved2: out: zero
 * @out_map_addr: out: the AV's map_addr (0 for an unnamed AV)
 * @out_mmap_offset: out: mmap() offset of the table (read-only, shared)
 * @out_mmap_size: out: bytes to map
 *
 * Opening an existing named AV without KFAB_AV_OPEN_READ_ONLY asks for
 * read and write access.  -EACCES when the AV's owner, group and mode
 * refuse the access asked (CAP_DAC_OVERRIDE in the initial user ns
 * overrides the mode), -EDQUOT when the owner's limits on named AVs or on
 * their entries are reached (module parameters av_max_named_per_user and
 * av_max_entries_per_user; CAP_SYS_RESOURCE in the initial user ns is
 * exempt).
 */
struct kfab_av_open {
	__u32 size;
	__u32 flags;
	__u32 domain_id;
	__u32 type;
	__u32 count;
	__u32 mode;
	__u32 uid;
	__u32 gid;
	__u32 __reserved;
	__u32 out_av_id;
	__u64 name;
	__u64 map_addr;
	__u32 out_type;
	__u32 out_count;
	__u32 out_flags;
	__u32 __reserved2;
	__u64 out_map_addr;
	__u64 out_mmap_offset;
	__u64 out_mmap_size;
};

#define KFAB_IOC_AV_OPEN _IOWR(KFAB_TYPE, KFAB_CMD_AV_OPEN, struct kfab_av_open)

/* An index that names no entry: failed inserts get it. */
#define KFAB_AV_INDEX_NONE	0xffffffffU
/* Most addresses one KFAB_IOC_AV_INSERT or _REMOVE takes (-E2BIG above). */
#define KFAB_AV_BATCH_MAX	4096

/**
 * struct kfab_av_insert - KFAB_IOC_AV_INSERT: insert addresses
 * @size: sizeof(struct kfab_av_insert)
 * @flags: must be 0
 * @av_id: the AV handle; -EPERM when it is read-only
 * @count: addresses, 0 to KFAB_AV_BATCH_MAX
 * @addrs: user pointer to struct kfab_addr[@count]
 * @indices: user pointer to __u32[@count], out: each address's index, or
 *	KFAB_AV_INDEX_NONE when it failed
 * @errors: user pointer to __s32[@count], out: 0 or the -errno of each
 *	address (-EINVAL malformed, -ENOSPC table full, -ENOMEM); 0 when not
 *	wanted
 * @out_inserted: out: how many addresses got an index
 * @__reserved: must be 0
 *
 * Addresses are inserted in order; one that fails does not stop the rest.
 * The command fails (inserting nothing) for bad arguments; -EFAULT while
 * writing @indices or @errors comes after the inserts were made.
 */
struct kfab_av_insert {
	__u32 size;
	__u32 flags;
	__u32 av_id;
	__u32 count;
	__u64 addrs;
	__u64 indices;
	__u64 errors;
	__u32 out_inserted;
	__u32 __reserved;
};

#define KFAB_IOC_AV_INSERT \
	_IOWR(KFAB_TYPE, KFAB_CMD_AV_INSERT, struct kfab_av_insert)

/**
 * struct kfab_av_remove - KFAB_IOC_AV_REMOVE: remove entries
 * @size: sizeof(struct kfab_av_remove)
 * @flags: must be 0
 * @av_id: the AV handle; -EPERM when it is read-only
 * @count: indices, 0 to KFAB_AV_BATCH_MAX
 * @indices: user pointer to __u32[@count]
 *
 * All or nothing: -EINVAL, and nothing removed, when an index names no
 * entry (or appears twice).  A removed index is free for the next insert.
 * In a named AV the entry goes for every opener.
 */
struct kfab_av_remove {
	__u32 size;
	__u32 flags;
	__u32 av_id;
	__u32 count;
	__u64 indices;
};

#define KFAB_IOC_AV_REMOVE \
	_IOWR(KFAB_TYPE, KFAB_CMD_AV_REMOVE, struct kfab_av_remove)

/**
 * struct kfab_av_unlink - KFAB_IOC_AV_UNLINK: remove a name
 * @size: sizeof(struct kfab_av_unlink)
 * @flags: must be 0
 * @name: user pointer to the NUL-terminated name
 *
 * The name goes at once (a later open of it creates a new AV); files that
 * have the AV open keep using it until they close it.  Only the owner, or
 * CAP_SYS_ADMIN in the initial user ns, may unlink: -EPERM otherwise,
 * -ENOENT when there is no such name.
 */
struct kfab_av_unlink {
	__u32 size;
	__u32 flags;
	__u64 name;
};

#define KFAB_IOC_AV_UNLINK \
	_IOWR(KFAB_TYPE, KFAB_CMD_AV_UNLINK, struct kfab_av_unlink)

/*
 * The mapped table of an AV, read-only for user space: a struct
 * kfab_av_header, then struct kfab_av_entry[capacity] at @entries_offset.
 *
 * Memory ordering.  The kernel is the only writer and changes one entry at
 * a time as a seqcount writer: it makes @seq odd (then smp_wmb()), writes
 * @flags and @addr, then makes @seq even again with smp_store_release().
 * A reader loads @seq with acquire semantics and retries while it is odd,
 * copies the entry, issues a read barrier (smp_rmb()) and retries if @seq
 * changed.  @used and @generation are written with smp_store_release()
 * after the entries they describe: a reader that loads @generation with
 * acquire semantics sees every entry written before it.
 */
enum kfab_av_entry_flags {
	KFAB_AV_ENTRY_VALID = 1 << 0,	/* the index is in use */
};

struct kfab_av_entry {
	__u32 seq;
	__u32 flags;
	struct kfab_addr addr;
	__u64 __reserved;
};

/**
 * struct kfab_av_header - the start of what mmap() of out_mmap_offset shows
 * @capacity: entries in the table
 * @used: entries in use now
 * @entry_size: sizeof(struct kfab_av_entry) of the kernel
 * @entries_offset: byte offset of the entries from the start of the mapping
 * @generation: bumped after every change to the table
 * @__reserved: zero
 */
struct kfab_av_header {
	__u32 capacity;
	__u32 used;
	__u32 entry_size;
	__u32 entries_offset;
	__u64 generation;
	__u64 __reserved[5];
};

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
