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
 *    an older or newer header keeps working.  One exception, the hot path:
 *    KFAB_IOC_RING is _IO(KFAB_TYPE, nr) with the object's id as the
 *    integer argument and the answer in the return value, nothing to copy.
 *  - User pointers travel as __u64; every struct is naturally aligned with
 *    explicit padding ("__reserved" members, which must be zero on input).
 *  - Unknown commands get -ENOTTY; unknown flags get -EOPNOTSUPP.
 *  - Objects (domains, AVs, CQs, counters, endpoints, shared receive
 *    contexts) live in the file context that created them and are named by
 *    a __u32 id, never 0.  Commands on one kind of object are named after
 *    it (KFAB_IOC_CQ_DRAIN); commands that apply to every object with a
 *    given part take any object id (KFAB_IOC_DESTROY: any object;
 *    KFAB_IOC_DOORBELL and KFAB_IOC_CANCEL: any object that owns a
 *    submission ring).  Closing the file destroys every object.
 *  - Memory the kernel shares is described by one struct per idea: a
 *    region to mmap() is a struct kfab_mmap, a submission ring's layout a
 *    struct kfab_sq_layout, a completion ring's a struct kfab_cq_layout.
 */
#ifndef _UAPI_LINUX_KFAB_H
#define _UAPI_LINUX_KFAB_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define KFAB_DEVICE_NAME	"kfab"
#define KFAB_ABI_VERSION	2

/* ioctl type byte: 0xFA is unassigned in ioctl-number.rst */
#define KFAB_TYPE		0xFA

enum kfab_cmd_nr {
	KFAB_CMD_QUERY = 0x00,
	KFAB_CMD_DESTROY = 0x01,
	KFAB_CMD_DOMAIN_ALLOC = 0x02,
	/* Any object that owns a submission ring (endpoints, SRXs) */
	KFAB_CMD_DOORBELL = 0x03,
	KFAB_CMD_CANCEL = 0x04,
	KFAB_CMD_RING = 0x05,
	KFAB_CMD_SQ_WATCH = 0x06,
	KFAB_CMD_SQ_POLL = 0x07,
	/* Address vectors: 0x10-0x1f */
	KFAB_CMD_AV_OPEN = 0x10,
	KFAB_CMD_AV_INSERT = 0x11,
	KFAB_CMD_AV_REMOVE = 0x12,
	KFAB_CMD_AV_UNLINK = 0x13,
	/* Completion queues: 0x20-0x27; counters: 0x28-0x2f */
	KFAB_CMD_CQ_OPEN = 0x20,
	KFAB_CMD_CQ_DRAIN = 0x21,
	KFAB_CMD_CQ_READERR = 0x22,
	KFAB_CMD_CQ_HELP = 0x23,
	KFAB_CMD_CNTR_OPEN = 0x28,
	KFAB_CMD_CNTR_UPDATE = 0x29,
	KFAB_CMD_CNTR_WAIT = 0x2a,
	/* Endpoints: 0x30-0x3f */
	KFAB_CMD_EP_OPEN = 0x30,
	KFAB_CMD_EP_BIND = 0x31,
	KFAB_CMD_EP_ENABLE = 0x32,
	/* Shared receive contexts: 0x40-0x4f */
	KFAB_CMD_SRX_OPEN = 0x40,
	KFAB_CMD_RX_BUFFERED = 0x41,
	/* The transport between nodes: 0x50-0x5f */
	KFAB_CMD_NET_LISTEN = 0x50,
	KFAB_CMD_NET_ALLOW = 0x51,
	/* Test-only commands (CONFIG_KFAB_TEST): 0xf0-0xff, a range of their own */
	KFAB_CMD_TEST_BASE = 0xf0,
	KFAB_CMD_TEST_FAULT = KFAB_CMD_TEST_BASE,
	KFAB_CMD_TEST_CQ_POST = KFAB_CMD_TEST_BASE + 1,
};

/* Bits of kfab_query.features */
enum kfab_feature {
	/* The module was built with CONFIG_KFAB_TEST: never on in production. */
	KFAB_FEATURE_TEST = 1 << 0,
	/* KFAB_IOC_RING exists. */
	KFAB_FEATURE_RING = 1 << 1,
	/* KFAB_IOC_SQ_WATCH and KFAB_IOC_SQ_POLL: a poller for the rings */
	KFAB_FEATURE_SQ_POLL = 1 << 2,
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

/**
 * struct kfab_mmap - a region of memory the kernel shares with the file
 * @offset: the offset to pass to mmap() on the /dev/kfab file (MAP_SHARED)
 * @size: bytes to map
 *
 * Commands that create an object with shared memory return one per region.
 * Whether a region may be mapped writable is said where it is returned.
 */
struct kfab_mmap {
	__u64 offset;
	__u64 size;
};

/*
 * Addresses (Documentation/net.rst).  A struct kfab_addr names one endpoint
 * of one node and means the same on every node that receives it as bytes:
 * every field has a fixed byte order, and only the node that owns the
 * endpoint interprets @incarnation.
 *
 *  - KFAB_ADDR_INET: a node on the network, by the address and TCP port of
 *    its listener (KFAB_IOC_NET_LISTEN): an IPv6 address, or an IPv4
 *    address mapped into IPv6 (::ffff:a.b.c.d).  A node is one network
 *    namespace of one machine.
 *  - KFAB_ADDR_LOCAL: an endpoint of this machine made while its network
 *    namespace had no listener; @port and @node are zero.  It reaches the
 *    endpoint from any namespace of this machine and nothing elsewhere.
 *
 * Endpoints are numbered (@ep) in two ranges.  1 to KFAB_SERVICE_MAX are
 * well-known services, chosen by the application as a TCP port is, one per
 * node; their @incarnation is 0, so the address is known in advance.
 * Above KFAB_SERVICE_MAX are numbers the module hands out and never reuses
 * while it is loaded; their @incarnation is the module's, a random number
 * drawn at load, so an address kept across a restart of the module never
 * reaches a new endpoint: sends to it fail.
 */
enum kfab_addr_family {
	KFAB_ADDR_UNSPEC = 0,		/* never valid in an AV */
	KFAB_ADDR_LOCAL = 1,
	KFAB_ADDR_INET = 2,
};

#define KFAB_SERVICE_MAX	65535
/* The listener's TCP port when none is given */
#define KFAB_PORT_DEFAULT	7471

/**
 * struct kfab_addr - the address of a kfab endpoint (fi_getname's bytes)
 * @family: a KFAB_ADDR_* value
 * @__reserved: must be 0
 * @port: KFAB_ADDR_INET: the node's listener port, big-endian; else 0
 * @incarnation: the owning node's module load (big-endian), 0 for a service
 * @node: KFAB_ADDR_INET: the node's IPv6 or IPv4-mapped address; else 0
 * @ep: the endpoint's number, big-endian, never 0
 */
struct kfab_addr {
	__u8 family;
	__u8 __reserved;
	__be16 port;
	__be32 incarnation;
	__u8 node[16];
	__be64 ep;
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
 * @flags: KFAB_AV_OPEN_* bits; each of them needs a @name (-EINVAL)
 * @domain_id: the parent domain, of this file
 * @type: a KFAB_AV_TYPE_*; opening a named AV of another type is -EINVAL
 * @count: entries wanted; 0 asks for the module's default.  Above the
 *	module's av_max_count: -EINVAL.  A named AV that exists keeps the
 *	capacity it was created with; @out_count tells it.
 * @mode: creating a named AV: its permission bits (0 to 0777, the way
 *	chmod reads them, read = may open, write = may insert and remove).
 *	Any named open checks it (bits above 0777: -EINVAL) and only a
 *	creating one uses it; an unnamed open ignores it.
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
 * @out_region: out: the table (struct kfab_av_header), read-only
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
	struct kfab_mmap out_region;
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
 * struct kfab_av_header - the start of the AV's out_region
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
 * Completion queues (Documentation/cq.rst has the long form).
 *
 * A CQ is a ring of struct kfab_cq_entry that the kernel produces and user
 * space consumes without a system call, in two regions user space maps
 * with mmap() on its /dev/kfab file:
 *
 *  - the ring region (struct kfab_cq_layout's @ring), read-only for user
 *    space: the header fields below and the entries, written by the kernel
 *    alone;
 *  - the consumer region (@cons), read-write: the consumer index and the
 *    "armed" word, written by user space alone.
 *
 * Where each field lives is told by the off_* members of struct
 * kfab_cq_layout (byte offsets into the region named), never by the
 * structs below, which only show the kernel's current choice.  So the
 * layout can change without breaking the ABI.
 *
 * Indices are free-running __u32 counters; slot i is entries[i & mask].
 * The ring holds tail - head entries (unsigned arithmetic), never more
 * than @entries.
 *
 *   tail   written by the kernel only, read by user space
 *   head   written by user space only, read by the kernel
 *
 * Memory ordering - the one place it is written down.  Each barrier on
 * one side pairs with the one on the same line on the other:
 *
 *   kernel (producer)                    user space (consumer)
 *   -----------------                    ---------------------
 *   (P1) h = smp_load_acquire(head)      (C3) copy the entries out, then
 *        before writing a slot that          smp_store_release(head, h)
 *        head may still be reading
 *   (P2) write entries[tail & mask],     (C1) t = smp_load_acquire(tail),
 *        then smp_store_release(tail)         then read entries before t
 *   (P3) after publishing (tail, the     (C2) store armed = 1, smp_mb(),
 *        overflow and err_count words),       then re-read tail, overflow
 *        smp_mb(), then read armed:           and err_count; sleep on the
 *        non-zero = signal the eventfd        eventfd only if all say empty
 *
 * (P1)/(C3): the kernel never overwrites a slot before user space has
 * copied it.  (P2)/(C1): user space never sees a slot before its contents.
 * (P3)/(C2) is a Dekker pair (as io_uring's NEED_WAKEUP): either user
 * space sees the new entry, or the kernel sees armed and signals; a wakeup
 * is never lost.  The kernel never clears armed; user space does when no
 * thread waits any more.
 *
 * What the kernel does with what user space can write: it keeps its own
 * copy of tail and never reads it back from the ring; it reads head once
 * per post or drain, and if tail - head > entries (a value no correct
 * consumer writes) it treats the ring as full, so completions wait in the
 * overflow list (and the post fails with -ENOSPC once that is full too).
 * armed is a boolean: any non-zero value means armed.  Slots are indexed
 * with the kernel's tail and mask only.  A process that scribbles over its
 * consumer region can only lose or repeat its own completions.
 *
 * Overflow: a completion that finds the ring full goes to a list in the
 * kernel (at most 16 times the ring's entries, at least 1024) and is moved
 * into the ring, in order, as soon as space appears: on the next post and
 * on KFAB_IOC_CQ_DRAIN, which libshim calls when it finds the ring empty
 * and @overflow non-zero.  Error completions never enter the ring: they
 * wait in a list of their own (same bound), @err_count tells how many, and
 * KFAB_IOC_CQ_READERR takes them one at a time.
 */

/* kfab_cq_entry.src_addr when the source is not known (FI_ADDR_NOTAVAIL) */
#define KFAB_CQ_ADDR_NOTAVAIL	(~0ULL)
/* Largest CQ in entries, and the default one */
#define KFAB_CQ_MAX_ENTRIES	65536
#define KFAB_CQ_DEFAULT_ENTRIES	1024
/* Bytes of provider error data an error completion carries at most */
#define KFAB_CQ_ERR_DATA_MAX	64

/**
 * struct kfab_cq_entry - one completion, as the kernel writes it
 * @op_context: the operation's context
 * @flags: FI_* completion flags (FI_SEND, FI_RECV, FI_REMOTE_CQ_DATA...)
 * @len: bytes received
 * @buf: where they were placed (multi-receive)
 * @data: remote CQ data
 * @tag: the tag of a tagged message
 * @src_addr: the source fi_addr_t, or KFAB_CQ_ADDR_NOTAVAIL
 * @cookie: with KFAB_COMP_BUFFERED: the cookie of the region the message
 *	lies in (kfab_rx_buffered.cookie), so that a CQ shared by several
 *	endpoints knows whose it is; else zero
 */
struct kfab_cq_entry {
	__u64 op_context;
	__u64 flags;
	__u64 len;
	__u64 buf;
	__u64 data;
	__u64 tag;
	__u64 src_addr;
	__u64 cookie;
};

/* Bits of the ring's flags word */
enum kfab_cq_ring_flags {
	/* The overflow list is not empty: KFAB_IOC_CQ_DRAIN will fill the ring. */
	KFAB_CQ_RING_OVERFLOW = 1 << 0,
	/*
	 * A large copy into a receive (or out of a send) of an endpoint
	 * bound to this CQ has pieces nobody took yet: KFAB_IOC_CQ_HELP
	 * copies them in the caller's time.  A hint, set and cleared by the
	 * kernel; acting on a stale one costs one system call and nothing
	 * else.
	 */
	KFAB_CQ_RING_HELP = 1 << 1,
};

/**
 * struct kfab_cq_ring - the kernel's layout of the start of the ring region
 * @tail: producer index (see above)
 * @flags: KFAB_CQ_RING_* bits
 * @overflow: completions waiting in the overflow list
 * @err_count: error completions waiting for KFAB_IOC_CQ_READERR
 * @entries: slots in the ring, a power of two
 * @mask: @entries - 1
 * @entry_size: bytes from one slot to the next
 * @__reserved: zero
 *
 * The entries follow at kfab_cq_layout.off_entries.
 */
struct kfab_cq_ring {
	__u32 tail;
	__u32 flags;
	__u32 overflow;
	__u32 err_count;
	__u32 entries;
	__u32 mask;
	__u32 entry_size;
	__u32 __reserved[9];
};

/**
 * struct kfab_cq_consumer - the kernel's layout of the consumer region
 * @head: consumer index (see above)
 * @armed: non-zero: signal the CQ's eventfd on every new completion
 * @__reserved: ignored
 */
struct kfab_cq_consumer {
	__u32 head;
	__u32 armed;
	__u32 __reserved[14];
};

/* Bits of kfab_cq_open.flags */
enum kfab_cq_open_flags {
	/* @eventfd is an eventfd to signal while the CQ is armed */
	KFAB_CQ_OPEN_EVENTFD = 1 << 0,
	/*
	 * Slots of two halves: the struct kfab_cq_entry, then up to
	 * KFAB_CQ_PAYLOAD_MAX bytes of the small message a completion with
	 * KFAB_COMP_PAYLOAD carries (out_entry_size says 128).  The reader
	 * copies @len bytes of it to @buf and clears the flag before the
	 * application sees the completion: small receives need no pinned
	 * pages that way (Documentation/cq.rst).
	 */
	KFAB_CQ_OPEN_PAYLOAD = 1 << 1,
};

/* Bytes of message a completion slot carries (KFAB_CQ_OPEN_PAYLOAD) */
#define KFAB_CQ_PAYLOAD_MAX	64

/**
 * struct kfab_cq_layout - where a completion ring lives (KFAB_IOC_CQ_OPEN)
 * @ring: the ring region: map it without PROT_WRITE (-EPERM otherwise)
 * @cons: the consumer region: map it read-write
 * @entries: slots in the ring, a power of two
 * @entry_size: bytes from one slot to the next
 * @off_tail: offset of the __u32 tail in @ring
 * @off_flags: offset of the __u32 flags word (KFAB_CQ_RING_*) in @ring
 * @off_overflow: offset of the __u32 overflow count in @ring
 * @off_err_count: offset of the __u32 error count in @ring
 * @off_entries: offset of the first slot in @ring
 * @off_head: offset of the __u32 head in @cons
 * @off_armed: offset of the __u32 armed word in @cons
 * @__reserved: zero
 *
 * The same names mean the same things in struct kfab_sq_layout.
 */
struct kfab_cq_layout {
	struct kfab_mmap ring;
	struct kfab_mmap cons;
	__u32 entries;
	__u32 entry_size;
	__u32 off_tail;
	__u32 off_flags;
	__u32 off_overflow;
	__u32 off_err_count;
	__u32 off_entries;
	__u32 off_head;
	__u32 off_armed;
	__u32 __reserved;
};

/**
 * struct kfab_cq_open - KFAB_IOC_CQ_OPEN: create a completion queue
 * @size: sizeof(struct kfab_cq_open)
 * @flags: KFAB_CQ_OPEN_* bits
 * @domain_id: the parent domain, of this file
 * @entries: slots wanted, 0 for KFAB_CQ_DEFAULT_ENTRIES; rounded up to a
 *	power of two; above KFAB_CQ_MAX_ENTRIES is -EINVAL
 * @eventfd: with KFAB_CQ_OPEN_EVENTFD, an eventfd of the caller (-EBADF
 *	or -EINVAL if it is none); must be 0 otherwise
 * @out_cq_id: out: id of the CQ
 * @out_ring: out: where the ring lives
 *
 * Both regions must be mapped MAP_SHARED.  The CQ holds a reference on
 * its domain.
 */
struct kfab_cq_open {
	__u32 size;
	__u32 flags;
	__u32 domain_id;
	__u32 entries;
	__s32 eventfd;
	__u32 out_cq_id;
	struct kfab_cq_layout out_ring;
};

#define KFAB_IOC_CQ_OPEN _IOWR(KFAB_TYPE, KFAB_CMD_CQ_OPEN, struct kfab_cq_open)

/**
 * struct kfab_cq_drain - KFAB_IOC_CQ_DRAIN: move overflowed completions in
 * @size: sizeof(struct kfab_cq_drain)
 * @flags: must be 0
 * @cq_id: the CQ
 * @out_overflow: out: completions still in the overflow list (the ring is
 *	full, or user space's head is corrupt)
 */
struct kfab_cq_drain {
	__u32 size;
	__u32 flags;
	__u32 cq_id;
	__u32 out_overflow;
};

#define KFAB_IOC_CQ_DRAIN \
	_IOWR(KFAB_TYPE, KFAB_CMD_CQ_DRAIN, struct kfab_cq_drain)

/**
 * struct kfab_cq_readerr - KFAB_IOC_CQ_READERR: take the oldest error
 * @size: sizeof(struct kfab_cq_readerr)
 * @flags: must be 0
 * @cq_id: the CQ
 * @err_data_size: in: bytes the buffer at @err_data holds (0: none);
 *	out: bytes copied there
 * @err_data: user pointer for the error data, or 0
 * @out_entry: out: the completion fields of the failed operation
 * @out_olen: out: bytes that did not fit (truncation)
 * @out_err: out: positive errno of the failure
 * @out_prov_errno: out: provider-specific error
 * @out_err_data_len: out: bytes of error data the completion carries (more
 *	than @err_data_size when the buffer was short: the rest is dropped)
 * @__reserved: must be 0
 *
 * -EAGAIN when no error completion waits.  When an answer cannot be
 * copied out (-EFAULT), the error completion stays queued.
 */
struct kfab_cq_readerr {
	__u32 size;
	__u32 flags;
	__u32 cq_id;
	__u32 err_data_size;
	__u64 err_data;
	struct kfab_cq_entry out_entry;
	__u64 out_olen;
	__s32 out_err;
	__s32 out_prov_errno;
	__u32 out_err_data_len;
	__u32 __reserved;
};

#define KFAB_IOC_CQ_READERR \
	_IOWR(KFAB_TYPE, KFAB_CMD_CQ_READERR, struct kfab_cq_readerr)

/**
 * struct kfab_cq_help - KFAB_IOC_CQ_HELP: copy pieces of large messages
 *	that wait for help (KFAB_CQ_RING_HELP)
 * @size: sizeof(struct kfab_cq_help)
 * @flags: must be 0
 * @cq_id: a CQ of this file
 * @__reserved: must be 0
 * @out_chunks: out: pieces this call copied
 * @out_bytes: out: bytes this call copied
 *
 * A copy of at least the module parameter share_min_bytes between two
 * processes of this node is made in pieces (Documentation/cq.rst,
 * "Helping with large copies"): the process that copies today takes them
 * one by one in its doorbell (the sender, into a posted receive; the
 * receiver, out of a message that waited at its sender), and the owner of
 * the other side's CQ (the receive CQ, or the transmit CQ) may take
 * others meanwhile with this command, which copies pieces of every such
 * message of the CQ's endpoints until none is left untaken, then returns.
 * Both sides' pages are pinned, each by its own process, so the call
 * reaches no memory but what the two processes gave for the message.  It
 * returns early, with what it copied, when a signal is pending.  The
 * other process reports both completions once every piece is in; nothing
 * is reported here.
 *
 * 0, also when there was nothing to copy; -ENOENT for an id that is no
 * CQ of this file.
 */
struct kfab_cq_help {
	__u32 size;
	__u32 flags;
	__u32 cq_id;
	__u32 __reserved;
	__u64 out_chunks;
	__u64 out_bytes;
};

#define KFAB_IOC_CQ_HELP \
	_IOWR(KFAB_TYPE, KFAB_CMD_CQ_HELP, struct kfab_cq_help)

/*
 * Counters.  A counter is a success value and an error value, which user
 * space reads from a read-only mapping without a system call (struct
 * kfab_cntr_values, at the out_off_* offsets).  The kernel changes them as
 * a seqcount writer: @seq odd while it writes, even and one higher after.
 * A reader loads @seq with acquire semantics, retries while it is odd,
 * reads the values, issues a read barrier (smp_rmb) and retries if @seq
 * changed.  With KFAB_CNTR_OPEN_EVENTFD the kernel signals the eventfd
 * after every change (no arming: counters change rarely), after the
 * closing @seq store, for callers that poll it (FI_WAIT_FD); one that
 * resets the eventfd before it reads the values never sleeps through a
 * change.  Threads that block in fi_cntr_wait() use KFAB_IOC_CNTR_WAIT.
 */
enum kfab_cntr_open_flags {
	KFAB_CNTR_OPEN_EVENTFD = 1 << 0,
};

/**
 * struct kfab_cntr_values - the kernel's layout of a counter's mapping
 * @seq: seqcount, see above
 * @__reserved: zero
 * @value: operations completed
 * @err: operations failed
 * @__reserved2: zero
 */
struct kfab_cntr_values {
	__u32 seq;
	__u32 __reserved;
	__u64 value;
	__u64 err;
	__u64 __reserved2[5];
};

/**
 * struct kfab_cntr_open - KFAB_IOC_CNTR_OPEN: create a counter
 * @size: sizeof(struct kfab_cntr_open)
 * @flags: KFAB_CNTR_OPEN_* bits
 * @domain_id: the parent domain, of this file
 * @eventfd: with KFAB_CNTR_OPEN_EVENTFD, an eventfd of the caller; must be
 *	0 otherwise
 * @out_cntr_id: out: id of the counter
 * @out_off_seq: out: offset of the seqcount in the mapping
 * @out_off_value: out: offset of the success value (__u64)
 * @out_off_err: out: offset of the error value (__u64)
 * @out_region: out: the page of the values, read-only
 */
struct kfab_cntr_open {
	__u32 size;
	__u32 flags;
	__u32 domain_id;
	__s32 eventfd;
	__u32 out_cntr_id;
	__u32 out_off_seq;
	__u32 out_off_value;
	__u32 out_off_err;
	struct kfab_mmap out_region;
};

#define KFAB_IOC_CNTR_OPEN \
	_IOWR(KFAB_TYPE, KFAB_CMD_CNTR_OPEN, struct kfab_cntr_open)

/* kfab_cntr_update.op */
enum kfab_cntr_op {
	KFAB_CNTR_ADD = 0,	/* value += @value (fi_cntr_add) */
	KFAB_CNTR_SET = 1,	/* value = @value (fi_cntr_set) */
	KFAB_CNTR_ADD_ERR = 2,	/* err += @value (fi_cntr_adderr) */
	KFAB_CNTR_SET_ERR = 3,	/* err = @value (fi_cntr_seterr) */
	KFAB_CNTR_OP_MAX,
};

/**
 * struct kfab_cntr_update - KFAB_IOC_CNTR_UPDATE: change a counter
 * @size: sizeof(struct kfab_cntr_update)
 * @flags: must be 0
 * @cntr_id: the counter
 * @op: a KFAB_CNTR_* operation (-EINVAL otherwise)
 * @value: the operand; additions wrap modulo 2^64
 * @out_value: out: the success value after the update
 * @out_err: out: the error value after the update
 */
struct kfab_cntr_update {
	__u32 size;
	__u32 flags;
	__u32 cntr_id;
	__u32 op;
	__u64 value;
	__u64 out_value;
	__u64 out_err;
};

#define KFAB_IOC_CNTR_UPDATE \
	_IOWR(KFAB_TYPE, KFAB_CMD_CNTR_UPDATE, struct kfab_cntr_update)

/**
 * struct kfab_cntr_wait - KFAB_IOC_CNTR_WAIT: sleep until a counter reaches
 * a threshold or its error value changes
 * @size: sizeof(struct kfab_cntr_wait)
 * @flags: must be 0
 * @cntr_id: the counter
 * @timeout_ms: most milliseconds to sleep; negative: no limit
 * @threshold: wake when the success value is at least this
 * @err: the error value the caller knows: wake when it differs
 * @out_value: out: the success value at wakeup
 * @out_err: out: the error value at wakeup
 *
 * Returns 0 when either condition holds (the outputs tell which),
 * -ETIMEDOUT after @timeout_ms, -EINTR on a signal.  Any number of
 * threads may wait at once; every change wakes them all.
 */
struct kfab_cntr_wait {
	__u32 size;
	__u32 flags;
	__u32 cntr_id;
	__s32 timeout_ms;
	__u64 threshold;
	__u64 err;
	__u64 out_value;
	__u64 out_err;
};

#define KFAB_IOC_CNTR_WAIT \
	_IOWR(KFAB_TYPE, KFAB_CMD_CNTR_WAIT, struct kfab_cntr_wait)

/*
 * Submission rings.  Endpoints and shared receive contexts take requests
 * through a ring: user space writes struct kfab_sqe entries and rings the
 * doorbell (KFAB_IOC_DOORBELL with the object's id), and the kernel carries
 * them out.  The ring lives in one region user space maps read-write; the
 * command that creates the object returns its struct kfab_sq_layout.
 * Indices are free-running __u32; slot i is the entry at
 * off_entries + (i & (entries - 1)) * entry_size.
 *
 *   tail   written by user space only, read by the kernel
 *   head   written by the kernel only, read by user space
 *
 * Memory ordering: user space fills a slot, then smp_store_release(tail);
 * the kernel reads tail with smp_load_acquire() and only then the slots
 * before it; it copies each slot before acting on it and publishes head
 * with smp_store_release() after it is done with the slots before it, so
 * user space may reuse a slot once its acquire load of head has passed it.
 *
 * Trust: the kernel keeps its own copy of head and never reads it back; it
 * reads tail once per doorbell and takes at most the ring's size of entries
 * from it (a tail more than that ahead of head is treated as a full ring;
 * one behind head as empty).  Every entry is copied before it is checked,
 * so user space changing it meanwhile changes nothing.  A malformed entry
 * gets an error completion (FI_EINVAL) and is consumed.
 */

#define KFAB_SQ_DEFAULT_ENTRIES	256
#define KFAB_SQ_MAX_ENTRIES	4096

/**
 * struct kfab_sq_layout - where a submission ring lives
 * @region: the ring's region: map it read-write
 * @entries: slots in the ring, a power of two
 * @entry_size: bytes of one slot (sizeof(struct kfab_sqe) of the kernel)
 * @off_tail: offset of the __u32 tail in @region
 * @off_head: offset of the __u32 head in @region
 * @off_entries: offset of the first slot in @region
 * @off_flags: offset of the __u32 KFAB_SQ_RING_* word in @region, written
 *	by the kernel only; 0 from a module without KFAB_FEATURE_SQ_POLL,
 *	whose rings have no such word
 */
struct kfab_sq_layout {
	struct kfab_mmap region;
	__u32 entries;
	__u32 entry_size;
	__u32 off_tail;
	__u32 off_head;
	__u32 off_entries;
	__u32 off_flags;
};

/*
 * Bits of a submission ring's flags word.  The kernel sets and clears
 * them; a value user space writes there is overwritten at the next
 * change and read by nobody.
 */
enum kfab_sq_ring_flags {
	/* The file's poller watches this ring (KFAB_IOC_SQ_WATCH). */
	KFAB_SQ_RING_WATCHED = 1 << 0,
	/*
	 * The poller is parked (or none runs): after publishing a tail,
	 * ring the doorbell yourself.  The producer's side of the pair:
	 * release-store tail, full barrier (smp_mb()), load flags.  The
	 * poller sets the bit, full barrier, then looks at every tail once
	 * more before it sleeps: either it sees the entry or the producer
	 * sees the bit (Documentation/ep.rst, "The ring poller").
	 */
	KFAB_SQ_RING_NEED_WAKEUP = 1 << 1,
};

/**
 * struct kfab_doorbell - KFAB_IOC_DOORBELL: carry out queued requests
 * @size: sizeof(struct kfab_doorbell)
 * @flags: must be 0
 * @obj_id: an object of this file that owns a submission ring: an
 *	endpoint, enabled (-EINVAL otherwise), or a shared receive context
 *	with at least one enabled endpoint bound (-EINVAL otherwise);
 *	-ENOENT for any other id
 * @out_done: out: entries consumed by this call
 *
 * Takes entries from the kernel's head up to the tail user space
 * published.  A send that cannot go on yet (its receiver's buffers for
 * unexpected messages are full) stays first in the ring and is retried on
 * the next doorbell; out_done then stops short of the tail.
 */
struct kfab_doorbell {
	__u32 size;
	__u32 flags;
	__u32 obj_id;
	__u32 out_done;
};

#define KFAB_IOC_DOORBELL _IOWR(KFAB_TYPE, KFAB_CMD_DOORBELL, struct kfab_doorbell)

/*
 * KFAB_IOC_RING: KFAB_IOC_DOORBELL without a struct, for the path that
 * makes one system call per message: ioctl(fd, KFAB_IOC_RING, obj_id)
 * returns the entries consumed (out_done), or -1 with errno as
 * KFAB_IOC_DOORBELL, and -EINVAL for an argument above 0xffffffff.
 * Nothing is copied from or to user space but the ring itself.  Present
 * when KFAB_IOC_QUERY reports KFAB_FEATURE_RING; older modules answer
 * -ENOTTY.
 */
#define KFAB_IOC_RING _IO(KFAB_TYPE, KFAB_CMD_RING)

/*
 * The ring poller (Documentation/ep.rst, "The ring poller").  A thread of
 * the program may lend itself to the kernel with KFAB_IOC_SQ_POLL: it then
 * carries out the requests of the rings this file watches as soon as they
 * are published, so the posting thread makes no system call for them.
 * After @idle_us without work it parks and sets KFAB_SQ_RING_NEED_WAKEUP
 * on every watched ring; any doorbell of the file wakes it.  It runs as
 * the calling thread (its memory, its credentials, its limits), never as
 * anyone else.  Present when KFAB_IOC_QUERY reports KFAB_FEATURE_SQ_POLL.
 */

/* Rings one file's poller watches at most */
#define KFAB_SQ_POLL_MAX_RINGS		64
/* Longest idle spell before the poller parks, in microseconds */
#define KFAB_SQ_POLL_MAX_IDLE_US	1000000

enum kfab_sq_watch_flags {
	/* Stop watching the ring instead (-ENOENT if it was not watched) */
	KFAB_SQ_WATCH_REMOVE = 1 << 0,
};

/**
 * struct kfab_sq_watch - KFAB_IOC_SQ_WATCH: have the poller watch a ring
 * @size: sizeof(struct kfab_sq_watch)
 * @flags: KFAB_SQ_WATCH_* (others: -EOPNOTSUPP)
 * @obj_id: an object of this file that owns a submission ring, an
 *	endpoint or a shared receive context (-ENOENT for any other id);
 *	until it can take requests (an endpoint before enable) its ring
 *	does not keep the poller spinning
 * @__reserved: must be 0
 *
 * -EEXIST if the ring is watched already, -ENOSPC beyond
 * KFAB_SQ_POLL_MAX_RINGS.  Stop watching a ring before destroying its
 * object: a pass of the poller holds a reference for a moment, and a
 * destroy that meets it fails with -EBUSY.  The ring's flags word says
 * KFAB_SQ_RING_WATCHED, and KFAB_SQ_RING_NEED_WAKEUP until a poller runs.
 * The command has no outputs: the struct is only read.
 */
struct kfab_sq_watch {
	__u32 size;
	__u32 flags;
	__u32 obj_id;
	__u32 __reserved;
};

#define KFAB_IOC_SQ_WATCH _IOWR(KFAB_TYPE, KFAB_CMD_SQ_WATCH, struct kfab_sq_watch)

enum kfab_sq_poll_flags {
	/*
	 * Make the file's poller return 0 at once, and every later
	 * KFAB_IOC_SQ_POLL of the file too: for a library closing down.
	 */
	KFAB_SQ_POLL_STOP = 1 << 0,
};

/**
 * struct kfab_sq_poll - KFAB_IOC_SQ_POLL: be the file's ring poller
 * @size: sizeof(struct kfab_sq_poll)
 * @flags: KFAB_SQ_POLL_* (others: -EOPNOTSUPP)
 * @idle_us: busy time without work before parking, 1 to
 *	KFAB_SQ_POLL_MAX_IDLE_US (-EINVAL otherwise; ignored with
 *	KFAB_SQ_POLL_STOP)
 * @__reserved: must be 0
 * @out_done: out: requests the poller carried out
 * @out_parks: out: times it parked
 *
 * Returns when KFAB_SQ_POLL_STOP is asked (0, with the counts), or with
 * -EINTR when a signal is pending (run it again to go on).  -EBUSY while
 * another thread polls for the file.
 */
struct kfab_sq_poll {
	__u32 size;
	__u32 flags;
	__u32 idle_us;
	__u32 __reserved;
	__u64 out_done;
	__u64 out_parks;
};

#define KFAB_IOC_SQ_POLL _IOWR(KFAB_TYPE, KFAB_CMD_SQ_POLL, struct kfab_sq_poll)

/**
 * struct kfab_cancel - KFAB_IOC_CANCEL: cancel a posted receive
 * @size: sizeof(struct kfab_cancel)
 * @flags: must be 0
 * @obj_id: an object of this file that owns a submission ring: an
 *	endpoint or a shared receive context (-ENOENT for any other id)
 * @__reserved: must be 0
 * @context: the context of the receive to cancel
 *
 * The oldest posted receive of the object with that context is removed
 * and completes with an error completion (ECANCELED).  -ENOENT when there
 * is none (sends, receives that matched already, and receives of an
 * endpoint bound to a shared receive context, which has none of its own).
 * Run the doorbell first: requests still in the ring are not posted yet.
 */
struct kfab_cancel {
	__u32 size;
	__u32 flags;
	__u32 obj_id;
	__u32 __reserved;
	__u64 context;
};

#define KFAB_IOC_CANCEL _IOWR(KFAB_TYPE, KFAB_CMD_CANCEL, struct kfab_cancel)

/*
 * Endpoints (Documentation/ep.rst).  An endpoint is a reliable-datagram
 * (FI_EP_RDM) endpoint.  Creating one gives it an address (see "Addresses"
 * above) and a submission ring.  It is bound to one AV and to the CQs and
 * counters that receive its completions, then enabled; from then on its
 * ring carries its requests.
 */
enum kfab_ep_type {
	KFAB_EP_TYPE_RDM = 1,
};

/* Most iovecs in one request, and inline payload bytes (FI_INJECT) */
#define KFAB_IOV_MAX		4
#define KFAB_INLINE_MAX		64

/**
 * struct kfab_ep_open - KFAB_IOC_EP_OPEN: create an endpoint
 * @size: sizeof(struct kfab_ep_open)
 * @flags: KFAB_EP_OPEN_* bits (0: a plain endpoint)
 * @domain_id: the parent domain
 * @type: KFAB_EP_TYPE_RDM
 * @sq_entries: submission ring entries: 0 for KFAB_SQ_DEFAULT_ENTRIES,
 *	else a power of two up to KFAB_SQ_MAX_ENTRIES (-EINVAL otherwise)
 * @out_ep_id: out: the endpoint's id in this file
 * @src: the address wanted (fi_info src_addr), all zero for any.  @family
 *	KFAB_ADDR_UNSPEC: the first listener of the caller's network
 *	namespace, or KFAB_ADDR_LOCAL without one; KFAB_ADDR_INET: that
 *	listener of the namespace (-EADDRNOTAVAIL if it has none such);
 *	KFAB_ADDR_LOCAL: a local address even with a listener.  @ep 0 for a
 *	number of the module's, or a service (-EADDRINUSE if taken in the
 *	namespace); @incarnation 0 (-EINVAL otherwise).
 * @out_addr: out: the endpoint's address
 * @out_sq: out: where its submission ring lives
 * @block_ep_id: KFAB_EP_OPEN_JOIN: an endpoint of this file in the block
 *	joined; else 0
 * @block_index: KFAB_EP_OPEN_JOIN without KFAB_EP_OPEN_SEND_ONLY: the
 *	receive context's index, below KFAB_EP_BLOCK_MAX; else 0
 */
struct kfab_ep_open {
	__u32 size;
	__u32 flags;
	__u32 domain_id;
	__u32 type;
	__u32 sq_entries;
	__u32 out_ep_id;
	struct kfab_addr src;
	struct kfab_addr out_addr;
	struct kfab_sq_layout out_sq;
	__u32 block_ep_id;
	__u32 block_index;
};

/*
 * Scalable endpoints (Documentation/ep.rst, "Scalable endpoints").  A
 * block is KFAB_EP_BLOCK_MAX endpoint numbers reserved at once: base,
 * base + 1, ..., base + KFAB_EP_BLOCK_MAX - 1, with base a multiple of
 * KFAB_EP_BLOCK_MAX above KFAB_EP_BLOCK_BIT.  The base is the scalable
 * endpoint's address (every endpoint of the block has it as @out_addr and
 * as the source of what it sends); number base + i is its receive context
 * i.  A send with struct kfab_sqe's @rx_index i goes to base + i of the
 * block its AV entry names: never outside that block.
 */
enum kfab_ep_open_flags {
	/*
	 * Reserve a new block; this endpoint is its anchor: it has the
	 * block's address but no number anyone reaches.  @src.ep must be 0.
	 */
	KFAB_EP_OPEN_BLOCK = 1 << 0,
	/* Join @block_ep_id's block as receive context @block_index */
	KFAB_EP_OPEN_JOIN = 1 << 1,
	/* With KFAB_EP_OPEN_JOIN: a transmit context, reached by no number */
	KFAB_EP_OPEN_SEND_ONLY = 1 << 2,
};

#define KFAB_EP_BLOCK_BIT	0x4000000000000000ULL	/* bit 62 */
#define KFAB_EP_BLOCK_MAX	256

#define KFAB_IOC_EP_OPEN _IOWR(KFAB_TYPE, KFAB_CMD_EP_OPEN, struct kfab_ep_open)

/* Bits of kfab_ep_bind.flags */
enum kfab_ep_bind_flags {
	/* CQ or counter: for completions of transmits (sends) */
	KFAB_EP_BIND_TRANSMIT = 1 << 0,
	/* CQ or counter: for completions of receives */
	KFAB_EP_BIND_RECV = 1 << 1,
	/*
	 * CQ: bound with FI_SELECTIVE_COMPLETION.  Recorded (debugfs); the
	 * library expresses it per request with KFAB_SQE_COMPLETION.
	 */
	KFAB_EP_BIND_SELECTIVE = 1 << 2,
};

/**
 * struct kfab_ep_bind - KFAB_IOC_EP_BIND: bind an object to an endpoint
 * @size: sizeof(struct kfab_ep_bind)
 * @flags: KFAB_EP_BIND_* bits: none for an AV or an SRX; TRANSMIT and/or
 *	RECV (and SELECTIVE) for a CQ; TRANSMIT and/or RECV for a counter
 * @ep_id: the endpoint, not enabled yet (-EBUSY otherwise)
 * @obj_id: an AV, CQ, counter or shared receive context of this file
 *	(-ENOENT otherwise)
 *
 * The endpoint holds the object until it is destroyed, so destroying the
 * object fails with -EBUSY meanwhile.  One AV, one SRX, and one CQ and one
 * counter per direction: binding another is -EEXIST.
 */
struct kfab_ep_bind {
	__u32 size;
	__u32 flags;
	__u32 ep_id;
	__u32 obj_id;
};

#define KFAB_IOC_EP_BIND _IOWR(KFAB_TYPE, KFAB_CMD_EP_BIND, struct kfab_ep_bind)

/**
 * struct kfab_ep_enable - KFAB_IOC_EP_ENABLE: make an endpoint usable
 * @size: sizeof(struct kfab_ep_enable)
 * @flags: must be 0
 * @ep_id: the endpoint
 * @__reserved: must be 0
 *
 * -EDESTADDRREQ without an AV.  Enabling twice is harmless.  From now on
 * the endpoint receives messages sent to its address.
 */
struct kfab_ep_enable {
	__u32 size;
	__u32 flags;
	__u32 ep_id;
	__u32 __reserved;
};

#define KFAB_IOC_EP_ENABLE \
	_IOWR(KFAB_TYPE, KFAB_CMD_EP_ENABLE, struct kfab_ep_enable)

/*
 * Completion flags the kernel writes into kfab_cq_entry.flags.  Their
 * values are libfabric's (FI_MSG, FI_TAGGED, FI_RECV, FI_SEND,
 * FI_REMOTE_CQ_DATA), so libshim hands them over unchanged.
 */
#define KFAB_COMP_MSG		0x2ULL		/* bit 1 */
#define KFAB_COMP_TAGGED	0x8ULL		/* bit 3 */
#define KFAB_COMP_RECV		0x400ULL	/* bit 10 */
#define KFAB_COMP_SEND		0x800ULL	/* bit 11 */
#define KFAB_COMP_MULTI_RECV	0x10000ULL	/* bit 16 */
#define KFAB_COMP_REMOTE_CQ_DATA 0x20000ULL	/* bit 17 */
/* FI_MORE: a buffered message longer than its slot (KFAB_IOC_RX_BUFFERED) */
#define KFAB_COMP_MORE		0x40000ULL	/* bit 18 */
/* FI_CLAIM: the claim of a buffered message */
#define KFAB_COMP_CLAIM		0x0800000000000000ULL	/* bit 59 */
/*
 * kfab's own: a buffered message (KFAB_IOC_RX_BUFFERED): @op_context is
 * its token, @buf its offset in the region.
 */
#define KFAB_COMP_BUFFERED	0x4000000000000000ULL	/* bit 62 */
/*
 * kfab's own, never libfabric's: the message's @len bytes are in the second
 * half of the slot (KFAB_CQ_OPEN_PAYLOAD), not yet at @buf.  For an error
 * completion, KFAB_IOC_CQ_READERR copies them to @buf itself.
 */
#define KFAB_COMP_PAYLOAD	0x8000000000000000ULL	/* bit 63 */
/*
 * The error of a receive whose buffers were too small for the message
 * (libfabric's FI_ETRUNC); the completion's olen says how much did not fit.
 */
#define KFAB_ERR_TRUNC		265

/*
 * Shared receive contexts (fi_srx_context).  An SRX has matching lists of
 * its own and a submission ring that takes receives only.  Endpoints bound
 * to it (KFAB_IOC_EP_BIND with the SRX's id, before enable) have no
 * receive lists of their own: messages sent to any of them match the
 * SRX's receives in the order posted, and wait on the SRX's unexpected
 * lists in arrival order.  A receive's completion goes to the CQ and
 * counter of the endpoint the message was sent to.  Every endpoint of an
 * SRX must use the same AV object (enable fails with -EINVAL otherwise).
 * Requests of the SRX's ring that fail before any message matched them
 * (malformed entries, bad buffers, FI_PEEK that finds nothing) and
 * cancellations complete on the endpoint bound first that is still there.
 * The SRX cannot be destroyed while endpoints are bound (-EBUSY); its
 * posted receives are dropped with it.
 */

/**
 * struct kfab_srx_open - KFAB_IOC_SRX_OPEN: create a shared receive context
 * @size: sizeof(struct kfab_srx_open)
 * @flags: must be 0
 * @domain_id: the parent domain
 * @sq_entries: ring entries, as kfab_ep_open.sq_entries
 * @out_srx_id: out: its id in this file
 * @__reserved: out: zero
 * @out_sq: out: where its submission ring lives
 *
 * Its ring works as an endpoint's (KFAB_IOC_DOORBELL, KFAB_IOC_CANCEL with
 * @out_srx_id); a send in it is malformed (EINVAL completion).
 */
struct kfab_srx_open {
	__u32 size;
	__u32 flags;
	__u32 domain_id;
	__u32 sq_entries;
	__u32 out_srx_id;
	__u32 __reserved;
	struct kfab_sq_layout out_sq;
};

#define KFAB_IOC_SRX_OPEN \
	_IOWR(KFAB_TYPE, KFAB_CMD_SRX_OPEN, struct kfab_srx_open)

/*
 * Buffered receives (FI_BUFFERED_RECV, fi_msg(3) "Buffered Receives").
 * A receive context (an endpoint's own, before enable, or an SRX's,
 * before an endpoint joins it) gets a region of @out_slots slots of
 * @out_stride bytes, allocated and written by the kernel and mapped
 * read-only (never writable, not inherited by fork()) at @out_region.
 *
 * A message that no posted receive matches is copied once, by its
 * sender's doorbell, into a free slot: its first @out_limit bytes.  The
 * receiving endpoint's CQ gets a completion with KFAB_COMP_BUFFERED:
 * @op_context is the slot's token, @buf the slot's byte offset in the
 * region, @len the message's whole length, KFAB_COMP_MORE when that is
 * more than @out_limit (the rest stays pinned at its sender, whose send
 * completes when the message is claimed or discarded).  The bytes of a
 * slot past the message are zero.  The message then belongs to that
 * token: posted receives and FI_PEEK never see it.  A receive with
 * KFAB_SQE_CLAIM | KFAB_SQE_BUFFERED and the token in @data copies the
 * whole message into its buffers (completion: KFAB_COMP_CLAIM, its own
 * @context); with KFAB_SQE_DISCARD too it drops it (length 0).  Either
 * frees the slot and the token goes stale: using it again, or a token
 * never given, completes with EINVAL.  While no slot is free a message
 * waits in its sender's ring (as when the eager budget is full) and goes
 * on at a later doorbell of the sender.  Messages from other nodes are
 * not buffered: they wait for a posted receive as before.
 */

/* Largest @limit (FI_OPT_BUFFERED_LIMIT), and the default one */
#define KFAB_BUFRECV_LIMIT_MAX		65536
#define KFAB_BUFRECV_LIMIT_DEFAULT	4096
/* Most slots, and the default number */
#define KFAB_BUFRECV_SLOTS_MAX		1024
#define KFAB_BUFRECV_SLOTS_DEFAULT	64
/* Most bytes of one region (slots times stride) */
#define KFAB_BUFRECV_REGION_MAX		(4 << 20)

/**
 * struct kfab_rx_buffered - KFAB_IOC_RX_BUFFERED: buffer unexpected
 *	messages in a region mapped read-only into the receiver
 * @size: sizeof(struct kfab_rx_buffered)
 * @flags: must be 0
 * @obj_id: an endpoint (not enabled, no SRX bound; a block's receive
 *	context too, not its anchor or a KFAB_EP_OPEN_SEND_ONLY context,
 *	which nothing reaches) or an SRX (no endpoint enabled on it yet)
 * @limit: bytes of a message a slot holds (FI_OPT_BUFFERED_LIMIT), 1 to
 *	KFAB_BUFRECV_LIMIT_MAX (above: -EMSGSIZE); 0 for the default
 * @slots: slots, 1 to KFAB_BUFRECV_SLOTS_MAX; 0 for the default
 * @out_limit: out: the limit in force
 * @out_slots: out: the slots
 * @out_stride: out: bytes from one slot to the next (@out_limit rounded
 *	up to 64)
 * @out_region: out: the mmap offset of the region (read-only, shared)
 * @cookie: reported in the @cookie of every KFAB_COMP_BUFFERED completion
 *	of this region (the library's handle for it)
 *
 * -EBUSY when the context has a region already, -EINVAL when it is in
 * use already, cannot receive, or @slots is above KFAB_BUFRECV_SLOTS_MAX
 * or times @out_stride exceeds KFAB_BUFRECV_REGION_MAX (computed in 64
 * bits: no product overflows).  The library sizes @slots from
 * rx_attr->total_buffered_recv (total / limit).
 */
struct kfab_rx_buffered {
	__u32 size;
	__u32 flags;
	__u32 obj_id;
	__u32 limit;
	__u32 slots;
	__u32 out_limit;
	__u32 out_slots;
	__u32 out_stride;
	__u64 out_region;
	__u64 cookie;
};

#define KFAB_IOC_RX_BUFFERED \
	_IOWR(KFAB_TYPE, KFAB_CMD_RX_BUFFERED, struct kfab_rx_buffered)

/* kfab_sqe.opcode */
enum kfab_sqe_op {
	KFAB_OP_SEND = 1,
	KFAB_OP_RECV = 2,
	KFAB_OP_TSEND = 3,
	KFAB_OP_TRECV = 4,
};

/* Bits of kfab_sqe.flags */
enum kfab_sqe_flags {
	/*
	 * Report the request's success on the CQ (errors are always
	 * reported): the library sets it from FI_COMPLETION, the CQ's
	 * FI_SELECTIVE_COMPLETION and whether the request is an inject.
	 */
	KFAB_SQE_COMPLETION = 1 << 0,
	/* Send: @data goes to the receiver as remote CQ data */
	KFAB_SQE_REMOTE_CQ_DATA = 1 << 1,
	/* Send: the payload is @inline_data (@len bytes), not @iov */
	KFAB_SQE_INLINE = 1 << 2,
	/*
	 * Receive (KFAB_OP_RECV, one iovec): the buffer takes message after
	 * message (FI_MULTI_RECV) until fewer than @data bytes are left
	 * (FI_OPT_MIN_MULTI_RECV); the completion of the message that
	 * leaves it so carries KFAB_COMP_MULTI_RECV: the buffer is released.
	 */
	KFAB_SQE_MULTI_RECV = 1 << 3,
	/*
	 * Send (not inline): complete only once the message is in a
	 * receive buffer (FI_DELIVERY_COMPLETE), never when it is buffered.
	 */
	KFAB_SQE_DELIVERY_COMPLETE = 1 << 4,
	/*
	 * Send: not carried out before every earlier send of the endpoint
	 * has completed (FI_FENCE); it waits first in the ring meanwhile.
	 */
	KFAB_SQE_FENCE = 1 << 5,
	/*
	 * Receive (FI_PEEK): look for a matching unexpected message without
	 * taking it.  Found: a success completion with its length, tag, data
	 * and source (no bytes move; @iov is ignored).  Not found: an error
	 * completion, ENOMSG.  Never stays posted.
	 */
	KFAB_SQE_PEEK = 1 << 6,
	/*
	 * Receive (FI_CLAIM).  With KFAB_SQE_PEEK: a message found is also
	 * set aside for this request's @context, where no other receive
	 * matches it.  Without: take the message set aside for @context into
	 * @iov (ENOMSG when there is none).
	 */
	KFAB_SQE_CLAIM = 1 << 7,
	/*
	 * Receive (FI_DISCARD), with KFAB_SQE_PEEK or KFAB_SQE_CLAIM: the
	 * message found or set aside is dropped instead of delivered; the
	 * completion reports it with length 0.
	 */
	KFAB_SQE_DISCARD = 1 << 8,
	/*
	 * Send (KFAB_OP_SEND, no payload): deliver nothing; complete with 0
	 * when an enabled endpoint of this machine is at the destination,
	 * else with the error a send would get (EHOSTUNREACH, ECONNRESET).
	 * A destination on another node is asked over the wire and answers
	 * the same way (after a round trip); a sender without a node address
	 * of its own completes with EOPNOTSUPP (cannot tell).  The library
	 * probes the peer of a connection with it (FI_SHUTDOWN of a peer
	 * that died, Documentation/ep.rst).
	 */
	KFAB_SQE_PROBE = 1 << 9,
	/*
	 * Receive, with KFAB_SQE_CLAIM (and maybe KFAB_SQE_DISCARD), not
	 * KFAB_SQE_PEEK: claim the buffered message whose token is @data
	 * (KFAB_IOC_RX_BUFFERED).
	 */
	KFAB_SQE_BUFFERED = 1 << 10,
};

/**
 * struct kfab_kiov - one buffer of a request
 * @base: user pointer
 * @len: bytes
 */
struct kfab_kiov {
	__u64 base;
	__u64 len;
};

/**
 * struct kfab_sqe - one request of the submission ring
 * @opcode: a KFAB_OP_*
 * @iov_count: buffers in @iov, 0 to KFAB_IOV_MAX
 * @rx_index: sends: the receive context of the scalable endpoint @addr
 *	names (fi_rx_addr()), below KFAB_EP_BLOCK_MAX; 0 otherwise
 * @flags: KFAB_SQE_* bits
 * @context: the operation's context, reported in its completion
 * @addr: send: the destination fi_addr_t (an index of the bound AV);
 *	receive: the only source accepted, or ~0 for any
 * @tag: tagged operations: the tag
 * @ignore: tagged receives: the tag bits to ignore
 * @data: with KFAB_SQE_REMOTE_CQ_DATA: the remote CQ data; with
 *	KFAB_SQE_MULTI_RECV: the least free space a buffer keeps serving;
 *	KFAB_SQE_BUFFERED: the token of the message claimed
 * @len: KFAB_SQE_INLINE: bytes of @inline_data (up to KFAB_INLINE_MAX)
 * @iov: the buffers
 * @inline_data: the payload of a KFAB_SQE_INLINE send
 *
 * Every member before the union is read and must hold what it says (0
 * where unused); of the union the kernel reads @iov up to @iov_count, or
 * @inline_data up to @len, and nothing else, so a producer need not
 * clear the rest of a slot it reuses.
 */
struct kfab_sqe {
	__u8 opcode;
	__u8 iov_count;
	__u16 rx_index;
	__u32 flags;
	__u64 context;
	__u64 addr;
	__u64 tag;
	__u64 ignore;
	__u64 data;
	__u64 len;
	__u64 __reserved2;
	union {
		struct kfab_kiov iov[KFAB_IOV_MAX];
		__u8 inline_data[KFAB_INLINE_MAX];
	};
};

/*
 * Test-only commands.  They exist only in a module built with
 * CONFIG_KFAB_TEST (KFAB_FEATURE_TEST); a production module answers -ENOTTY.
 */

/*
 * Fault-injection points of KFAB_IOC_TEST_FAULT.  Every point counts
 * passes per context (an open file, or a kernel consumer's domain).
 */
enum kfab_test_fault_point {
	/* kfab's own allocations (objects, kernel API posts): -ENOMEM */
	KFAB_FAULT_ALLOC = 0,
	/* copying a command's answer back to user space: -EFAULT */
	KFAB_FAULT_COPY_OUT = 1,
	/* kernel API: a send's payload is lost, it completes with -EIO */
	KFAB_FAULT_LOSE = 2,
	/* kernel API: a send is reported sent but never delivered */
	KFAB_FAULT_NOREPLY = 3,
	/*
	 * the ring poller, parking, waits 100 ms between raising
	 * NEED_WAKEUP and its last look at the rings (nothing fails)
	 */
	KFAB_FAULT_SLOW_PARK = 4,
	KFAB_FAULT_POINT_MAX,
};

/* Bits of kfab_test_fault.flags */
enum kfab_test_fault_flags {
	/* Only report: leave the point as it is (@nth is ignored). */
	KFAB_TEST_FAULT_PEEK = 1 << 0,
};

/**
 * struct kfab_test_fault - KFAB_IOC_TEST_FAULT: make the nth pass through
 * a fault point of a context fail
 * @size: sizeof(struct kfab_test_fault)
 * @flags: KFAB_TEST_FAULT_* bits
 * @point: a KFAB_FAULT_* point (-EINVAL otherwise)
 * @nth: the nth pass through @point in the context fails (1 = the next);
 *	0 disarms
 * @ctx_id: the context: 0 for this file's own; another context by its id
 *	(the "context" lines of /sys/kernel/debug/kfab/contexts), for
 *	instance a kernel consumer's, needs CAP_SYS_ADMIN (-EPERM) and must
 *	exist (-ENOENT)
 * @out_ctx_id: out: the id of the context (this file's, for @ctx_id 0)
 * @out_remaining: out: passes that were still to go before this call; 0
 *	means the fault armed earlier has fired (or none was armed)
 * @out_fired: out: times @point has fired in the context, ever
 *
 * Faults are one shot and count passes made by any thread using the
 * context.  This is how the selftests walk every failure path of every
 * command, as the kernel's fail-nth does for allocations, and how the
 * tests of kernel consumers (kfab_blk) make the in-kernel API fail.
 */
struct kfab_test_fault {
	__u32 size;
	__u32 flags;
	__u32 point;
	__u32 nth;
	__u32 ctx_id;
	__u32 out_ctx_id;
	__u32 out_remaining;
	__u32 out_fired;
};

#define KFAB_IOC_TEST_FAULT \
	_IOWR(KFAB_TYPE, KFAB_CMD_TEST_FAULT, struct kfab_test_fault)

/* Bits of kfab_test_cq_post.flags */
enum kfab_test_cq_post_flags {
	/* Post error completions, and bump the counter's error value. */
	KFAB_TEST_POST_ERROR = 1 << 0,
};

/* Most completions one KFAB_IOC_TEST_CQ_POST posts (-EINVAL above) */
#define KFAB_TEST_POST_MAX	0x100000U

/**
 * struct kfab_test_cq_post - KFAB_IOC_TEST_CQ_POST: the kernel posts
 * completions into a CQ and bumps a counter, as an endpoint would
 * @size: sizeof(struct kfab_test_cq_post)
 * @flags: KFAB_TEST_POST_* bits
 * @cq_id: the CQ to post into, 0 for none
 * @cntr_id: the counter to add @count to (or its error value), 0 for none
 * @count: completions to post, 0 to KFAB_TEST_POST_MAX
 * @err: errors: the positive errno they carry
 * @context: op_context of the first completion; the nth gets @context + n
 * @entry_flags: the completions' flags
 * @len: their len
 * @buf: their buf
 * @data: their data
 * @tag: their tag
 * @src_addr: their source address
 * @olen: errors: their olen
 * @prov_errno: errors: their prov_errno
 * @err_data_size: errors: bytes of error data, up to KFAB_CQ_ERR_DATA_MAX
 * @err_data: errors: user pointer to the error data
 * @out_posted: out: completions queued (ring or overflow list); fewer than
 *	@count when the overflow list filled up (-ENOSPC if none)
 * @out_overflowed: out: how many of them went to the overflow list
 */
struct kfab_test_cq_post {
	__u32 size;
	__u32 flags;
	__u32 cq_id;
	__u32 cntr_id;
	__u32 count;
	__s32 err;
	__u64 context;
	__u64 entry_flags;
	__u64 len;
	__u64 buf;
	__u64 data;
	__u64 tag;
	__u64 src_addr;
	__u64 olen;
	__s32 prov_errno;
	__u32 err_data_size;
	__u64 err_data;
	__u32 out_posted;
	__u32 out_overflowed;
};

#define KFAB_IOC_TEST_CQ_POST \
	_IOWR(KFAB_TYPE, KFAB_CMD_TEST_CQ_POST, struct kfab_test_cq_post)

/*
 * The transport between nodes (Documentation/net.rst).  A network
 * namespace has no node address, and kfab opens no port in it, until an
 * administrator (CAP_NET_ADMIN over the namespace) adds a listener.
 */
enum kfab_net_listen_flags {
	/* Remove the listener instead; its connections close. */
	KFAB_NET_LISTEN_REMOVE = 1 << 0,
};

/**
 * struct kfab_net_listen - KFAB_IOC_NET_LISTEN: add or remove a listener
 * @size: sizeof(struct kfab_net_listen)
 * @flags: KFAB_NET_LISTEN_* bits
 * @addr: KFAB_ADDR_INET with @node (an address of the caller's network
 *	namespace; not the unspecified address) and @port (0 for
 *	KFAB_PORT_DEFAULT); @ep and @incarnation 0
 * @out_addr: out: the listener's node address as endpoints will carry it
 *
 * -EPERM without CAP_NET_ADMIN over the caller's network namespace,
 * -EADDRINUSE for a listener that exists, -ENOENT removing one that does
 * not, -EADDRNOTAVAIL when the namespace has no such address.  The first
 * listener of a namespace names its endpoints made from then on.
 */
struct kfab_net_listen {
	__u32 size;
	__u32 flags;
	struct kfab_addr addr;
	struct kfab_addr out_addr;
};

#define KFAB_IOC_NET_LISTEN \
	_IOWR(KFAB_TYPE, KFAB_CMD_NET_LISTEN, struct kfab_net_listen)

/*
 * The nodes a namespace exchanges messages with.  While its allow-list is
 * empty, any node may; once it holds a network, a connection from a node
 * outside every network on it is closed at once (its HELLO unread, and a
 * HELLO naming such a node drops the connection too), and a send to such
 * a node ends with -EHOSTUNREACH.  Endpoints of this machine are never
 * affected.
 */
enum kfab_net_allow_flags {
	/* Remove the network instead. */
	KFAB_NET_ALLOW_REMOVE = 1 << 0,
	/* Empty the list (@prefix_len and @node must be 0). */
	KFAB_NET_ALLOW_CLEAR = 1 << 1,
};

/* At most this many networks per namespace. */
#define KFAB_NET_ALLOW_MAX	64

/**
 * struct kfab_net_allow - KFAB_IOC_NET_ALLOW: change a namespace's
 *	allow-list of peer networks
 * @size: sizeof(struct kfab_net_allow)
 * @flags: KFAB_NET_ALLOW_* bits (none: add the network)
 * @prefix_len: how many leading bits of @node name the network, 0 to 128
 *	(an IPv4 network A.B.C.D/N is v4-mapped: 96 + N; 0 is every node)
 * @__reserved: zero
 * @node: the network's address, IPv6 or v4-mapped IPv4, with every bit
 *	past @prefix_len zero
 *
 * -EPERM without CAP_NET_ADMIN over the caller's network namespace,
 * -EINVAL for a prefix over 128 or bits past it, -EEXIST for a network
 * on the list, -ENOENT removing one that is not, -ENOSPC past
 * KFAB_NET_ALLOW_MAX.
 */
struct kfab_net_allow {
	__u32 size;
	__u32 flags;
	__u8 prefix_len;
	__u8 __reserved[7];
	__u8 node[16];
};

#define KFAB_IOC_NET_ALLOW \
	_IOWR(KFAB_TYPE, KFAB_CMD_NET_ALLOW, struct kfab_net_allow)

#endif /* _UAPI_LINUX_KFAB_H */
