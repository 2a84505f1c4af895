/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kfab internal definitions shared by the files of the module.
 *
 * Object model: every open of /dev/kfab makes a struct kfab_ctx.  Objects a
 * context creates (domains, AVs, CQs, counters, endpoints, SRXs) sit in the
 * context's xarray under a small integer id.  Each object carries a refcount
 * of its users: the table holds one, and every object or operation that
 * depends on it holds one more.  An object can be destroyed only when the
 * table's reference is the last one, so a parent outlives its children.
 *
 * Locking
 * =======
 * The module's locks, outermost first.  A lock is only ever taken while
 * holding locks that stand above it here; helpers that need a lock held
 * say so with lockdep_assert_held().  Every lock is taken in process
 * context, with interrupts enabled, except the last.
 *
 *  1. kfab_ctx_lock (main.c, mutex): the list of contexts; netlink's
 *     dumps (netlink.c) walk it, filling each context's objects.
 * 1a. kfab_sq_poller.lock (sqpoll.c, mutex): one file's watched rings;
 *     the poller holds it across a pass, which rings them (everything
 *     below may be taken inside).
 *  2. kfab_av_lock (av.c, mutex): named AVs by name, per-owner quotas,
 *     the list of AV tables and each table's openers.
 *  3. kfab_ep.sq_lock and kfab_srx.sq_lock (mutexes): one doorbell,
 *     cancel, bind or enable of that object at a time.  A kernel
 *     consumer's endpoint has kfab_kep.lock (kapi.c, mutex) in this
 *     place instead: its posts, cancels and close.
 * 3'. kfab_engines_lock (engine.c, mutex): the registered engines; held
 *     while a listener opens, so it opens with each of them, and while an
 *     engine comes or goes (with net_rwsem read-held inside it).
 * 3a. kfab_node.lock (node.c, mutex): one network namespace's listeners
 *     (also walked under RCU), peers and connections in.  An engine's
 *     own locks (kfab_rdma.ko's) come after it.
 * 3b. kfab_peer.rx_lock (peer.c, mutex): held by a connection's reader
 *     while it carries out one frame (which may call into msg.c), so a
 *     new connection learns where the old one stopped.  A reader holding
 *     it only ever tries to become the peer's sender, never waits for it.
 * 3c. kfab_peer.lock (peer.c, mutex): one remote node's operations,
 *     pulls, frames to send and sent, credit, sessions and state.  Never
 *     held while an engine sends or receives, nor while calling into
 *     msg.c, which takes receive context locks itself (net.h, peer.c).
 *  4. kfab_rx_ctx.lock (msg.c, mutex): a receive context's posted
 *     receives and unexpected messages, its budget and AV, and the cores
 *     that receive through it (their @dead, @ep, @rx_link).  Completions
 *     to those endpoints are posted under it.  At most one is held at a
 *     time: a send takes its receiver's, and completes itself after
 *     dropping it (msg.c).
 * 4a. kfab_ep_core.share_lock (share.c, mutex): a sending endpoint's
 *     @tx_cq while a receiver copies one of its messages with the
 *     sender's help; a receiver takes it with mutex_trylock() under its
 *     receive context's lock, the endpoint's destruction alone.
 * 4b. kfab_pin_cache.lock (pincache.c, mutex): one file's kept pins; taken
 *     where buffers are pinned, possibly under 4 and 4a; inside it the
 *     pinning itself (the mmap lock, an MMU notifier's insertion) and an
 *     entry's spinlock.  The notifier's callback takes only that
 *     spinlock, and queues the cache's prune work, which takes 4b.
 *  5. kfab_av_table.lock (av.c, mutex): one table's entries; senders and
 *     receivers look addresses up under a receive context's lock.
 *  6. xa_lock of a context's objects (object.c, spinlock): the id table;
 *     debugfs's ->show and netlink's ->nl_fill callbacks run under it.
 *  7. kfab_kep.done_lock (kapi.c, spinlock): a kernel endpoint's
 *     outstanding and done requests; the engine's completion hook takes
 *     it under a receive context's lock.
 *  8. kfab_cq.lock (cq.c) and kfab_cntr.lock (cntr.c) (spinlocks): the
 *     producer side of one completion ring, the values of one counter;
 *     a CQ's lock also covers the copy jobs published on it (share.c:
 *     claims of their pieces, which a sender takes under 4, a helper
 *     and a kernel worker under nothing else; the sender waits for its
 *     workers with cancel_work_sync() under 4).  Nothing is taken under
 *     them.
 *  9. kfab_kcq.lock (kapi.c, spinlock, taken with spin_lock_irqsave()):
 *     a kernel CQ's completed requests.  kfab_kcq_poll() may be called
 *     from any context, hard interrupts included, so this is the one
 *     lock that must be irq-safe; it nests inside kfab_kep.done_lock.
 *
 * netlink's events allocate and are sent with none of 4-9 held: a
 * peer's up and down after its kfab_peer.lock is dropped (peer.c); a named
 * AV's "changed" from a work item on kfab_nl_wq (av.c), because its
 * entries change under 5 (and a kernel consumer's 3), below kfab_av_lock,
 * which the event needs for the name.
 *
 * Pinning and unpinning user pages (buf.c) take the mmap lock and are done
 * outside 4-9.  A lookup by endpoint number (kfab_ep_core_find()) takes
 * RCU and a reference, no lock; so does taking a kept core again
 * (kfab_ep_core_reget()), which kfab_eps_gone's count makes safe.
 */
#ifndef KFAB_H
#define KFAB_H

#include <linux/bvec.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/uio.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <linux/kfab.h>

#include "compat.h"

#define KFAB_MODULE_VERSION_MAJOR	0
#define KFAB_MODULE_VERSION_MINOR	1
#define KFAB_MODULE_VERSION_PATCH	0

/* Upper bound on any command's struct: bounds the zero-tail check. */
#define KFAB_MAX_IOCTL_SIZE		PAGE_SIZE

extern unsigned int kfab_max_objects;

enum kfab_obj_type {
	KFAB_OBJ_NONE,		/* reserved slot: allocated, not yet visible */
	KFAB_OBJ_DOMAIN,
	KFAB_OBJ_AV,
	KFAB_OBJ_CQ,
	KFAB_OBJ_CNTR,
	KFAB_OBJ_EP,
	KFAB_OBJ_SRX,
	KFAB_OBJ_TYPE_MAX,
	/* For lookups only: an object of any type (KFAB_IOC_EP_BIND, ...) */
	KFAB_OBJ_ANY = KFAB_OBJ_TYPE_MAX,
};

struct kfab_ctx;
struct seq_file;
struct sk_buff;

/**
 * struct kfab_object - the head of every object of a context
 * @type: what it is
 * @id: its id in @ctx's table
 * @users: one for the context's table, one per dependent object or user
 * @ctx: the context that created it
 * @parent: the domain it was created under (a user of it), NULL for a
 *	domain
 */
struct kfab_object {
	enum kfab_obj_type type;
	u32 id;
	refcount_t users;
	struct kfab_ctx *ctx;
	struct kfab_object *parent;
};

/* Per-type behaviour, indexed by enum kfab_obj_type. */
struct kfab_object_ops {
	const char *name;
	/* Frees the object; called once its last user is gone. */
	void (*destroy)(struct kfab_object *obj);
	/*
	 * debugfs: appends " key value..." to the object's line; called
	 * under the context's xarray lock, so it must not sleep.  Optional.
	 */
	void (*show)(struct seq_file *s, struct kfab_object *obj);
	/*
	 * netlink.c: puts the type's KFAB_NL_ATTR_* of the object; called
	 * under the context's xarray lock, so it must not sleep.  Returns
	 * -EMSGSIZE when @skb is full.  Optional.
	 */
	int (*nl_fill)(struct sk_buff *skb, struct kfab_object *obj);
	/*
	 * Objects that own a submission ring (sq.c): run it
	 * (KFAB_IOC_DOORBELL), cancel a posted receive (KFAB_IOC_CANCEL).
	 * NULL for the others.
	 */
	int (*doorbell)(struct kfab_object *obj, u32 *out_done);
	int (*cancel)(struct kfab_object *obj, u64 context);
	/* The ring itself, for the poller (sqpoll.c). */
	struct kfab_sq *(*sq)(struct kfab_object *obj);
};

/**
 * struct kfab_fault_state - one fault point of one context (test.c)
 * @remaining: passes to go before the point fires; 0 = disarmed
 * @fired: times the point fired
 */
struct kfab_fault_state {
	atomic_t remaining;
	atomic_t fired;
};

/*
 * One per open file of /dev/kfab, and one per kernel consumer's domain.
 * Who opened it (@pid, @uid, the namespaces) is fixed at open: netlink.c
 * decides from it who may see the context.
 */
/**
 * struct kfab_sq_poller - a file's ring poller (sqpoll.c)
 * @lock: the fields below but @state; held across a pass, which runs
 *	rings ("Locking" 1a)
 * @wait: where the poller parks
 * @ring: the rings watched: the owner's id, the tail the last pass saw
 * @nr: entries of @ring in use
 * @running: a thread is in KFAB_IOC_SQ_POLL
 * @awake: it runs and is not parked: new rings need no NEED_WAKEUP
 * @state: KFAB_SQ_POLLER_* bits (atomic bitops, no lock)
 */
struct kfab_sq_poller {
	struct mutex lock;		/* "Locking" 1a */
	wait_queue_head_t wait;
	struct {
		u32 id;
		u32 seen;
	} ring[KFAB_SQ_POLL_MAX_RINGS];
	u32 nr;
	bool running;
	bool awake;
	unsigned long state;
};

enum kfab_sq_poller_state {
	/* It sleeps; a doorbell of the file kicks it. */
	KFAB_SQ_POLLER_PARKED,
	/* A doorbell came since it parked. */
	KFAB_SQ_POLLER_KICKED,
	/* KFAB_SQ_POLL_STOP came: no poller runs in this file any more. */
	KFAB_SQ_POLLER_STOP,
	/* Parked for want of a CPU: doorbells do not wake it. */
	KFAB_SQ_POLLER_CONTENDED,
};

/**
 * struct kfab_pin_cache - large buffers kept pinned between their
 *	messages (pincache.c), one per file
 * @lock: the list and the counts ("Locking" 4b)
 * @lru: struct kfab_pinned, most recently used first
 * @nr: entries on @lru
 * @nr_pages: their pages
 * @hits: buffers that found their pages kept (debugfs)
 * @misses: eligible buffers that did not
 * @stale: entries dropped because their range changed
 * @evicted: entries dropped to make room
 * @prune: drops stale entries, queued by their notifiers
 */
struct kfab_pin_cache {
	struct mutex lock;	/* the list, the counts ("Locking" 4b) */
	struct list_head lru;
	struct work_struct prune;
	unsigned int nr;
	unsigned long nr_pages;
	u64 hits;
	u64 misses;
	u64 stale;
	u64 evicted;
};

struct kfab_pinned;

void kfab_pin_cache_init(struct kfab_pin_cache *c);
void kfab_pin_cache_fini(struct kfab_pin_cache *c);
struct kfab_pinned *kfab_pin_cache_get(struct kfab_pin_cache *c,
				       unsigned long start, size_t len,
				       bool writable);
struct page **kfab_pinned_pages(struct kfab_pinned *p, unsigned long start);
void kfab_pinned_put(struct kfab_pinned *p);
void kfab_pin_cache_show(struct seq_file *s, struct kfab_pin_cache *c);
int kfab_pin_cache_mod_init(void);
void kfab_pin_cache_mod_exit(void);

struct kfab_ctx {
	struct xarray objects;
	struct xarray regions;		/* mmap cookie -> struct kfab_region */
	u32 id;				/* node-unique, in kfab_ctx_list order */
	pid_t tgid;			/* of the opener, in the initial pid ns */
	kuid_t uid;
	char comm[TASK_COMM_LEN];
	struct pid *pid;		/* the opener's tgid (a reference), NULL: kernel */
	struct net *net;		/* the opener's (a reference) */
	struct user_namespace *user_ns;	/* the opener's (a reference) */
	u64 cgroup_id;			/* the opener's cgroup v2 */
	struct list_head node;		/* on kfab_ctx_list */
	struct kfab_sq_poller sq_poller;	/* sqpoll.c */
	struct kfab_pin_cache pin_cache;	/* pincache.c */
#ifdef CONFIG_KFAB_TEST
	struct kfab_fault_state fault[KFAB_FAULT_POINT_MAX];	/* test.c */
#endif
};

/* main.c */
extern struct mutex kfab_ctx_lock;
extern struct list_head kfab_ctx_list;
extern atomic_t kfab_nr_ctx;

/* Arguments of one ioctl, handed to its handler by the dispatcher. */
struct kfab_ucmd {
	struct kfab_ctx *ctx;
	void __user *ubuffer;
	u32 user_size;
	void *cmd;		/* kernel copy of the user's struct */
};

struct kfab_ctx *kfab_ctx_create(pid_t tgid, kuid_t uid, const char *comm);
void kfab_ctx_release(struct kfab_ctx *ctx);
int kfab_ucmd_respond(struct kfab_ucmd *ucmd, size_t cmd_len);
int kfab_ucmd_copy_out(struct kfab_ucmd *ucmd, size_t cmd_len);

/* object.c */
struct kfab_object *kfab_object_alloc(struct kfab_ctx *ctx, size_t size,
				      enum kfab_obj_type type,
				      struct kfab_object *parent);
struct kfab_object *kfab_object_alloc_in(struct kfab_ctx *ctx, u32 domain_id,
					 size_t size, enum kfab_obj_type type);
const struct kfab_object_ops *kfab_object_ops_of(const struct kfab_object *obj);
void kfab_object_abort(struct kfab_ctx *ctx, struct kfab_object *obj);
void kfab_object_finalize(struct kfab_ctx *ctx, struct kfab_object *obj);
struct kfab_object *kfab_object_get(struct kfab_ctx *ctx, u32 id,
				    enum kfab_obj_type type);
void kfab_object_put(struct kfab_object *obj);
int kfab_object_destroy(struct kfab_ctx *ctx, u32 id);
void kfab_ctx_destroy_all(struct kfab_ctx *ctx);
const char *kfab_object_type_name(enum kfab_obj_type type);
void kfab_object_show(struct seq_file *s, struct kfab_object *obj);
int kfab_ioctl_destroy(struct kfab_ucmd *ucmd);

/* mmap.c: memory shared with user space */

/**
 * struct kfab_region - zeroed pages that user space maps with mmap()
 * @ref: the owning object, each context it is offered to and each VMA
 * @vaddr: the kernel's address of the pages (vmalloc)
 * @size: bytes, a multiple of PAGE_SIZE
 * @read_only: user space may never map it writable
 */
struct kfab_region {
	struct kref ref;
	void *vaddr;
	size_t size;
	bool read_only;
	bool no_fork;
};

struct kfab_region *kfab_region_alloc(size_t size, bool read_only);
void kfab_region_get(struct kfab_region *region);
void kfab_region_put(struct kfab_region *region);
int kfab_region_offer(struct kfab_ctx *ctx, struct kfab_region *region,
		      u64 *out_offset);
void kfab_region_withdraw(struct kfab_ctx *ctx, u64 offset);
void kfab_ctx_regions_destroy(struct kfab_ctx *ctx);
int kfab_fops_mmap(struct file *filp, struct vm_area_struct *vma);

/* domain.c */
struct kfab_domain {
	struct kfab_object obj;
};

struct kfab_object *kfab_domain_create(struct kfab_ctx *ctx);
int kfab_ioctl_domain_alloc(struct kfab_ucmd *ucmd);
void kfab_domain_destroy(struct kfab_object *obj);

/* av.c: address vectors (Documentation/av.rst) */
struct kfab_av_table;

/**
 * struct kfab_av - an AV handle: one open of an AV by one file
 * @obj: the object in the file's table
 * @table: the table, shared with every other handle of a named AV
 * @read_only: this handle may not insert or remove
 * @mmap_offset: where the file maps @table's region; 0 before it is offered
 * @opener: on @table's list of handles, under kfab_av_lock
 */
struct kfab_av {
	struct kfab_object obj;
	struct kfab_av_table *table;
	bool read_only;
	u64 mmap_offset;
	struct list_head opener;
};

int kfab_ioctl_av_open(struct kfab_ucmd *ucmd);
int kfab_ioctl_av_insert(struct kfab_ucmd *ucmd);
int kfab_ioctl_av_remove(struct kfab_ucmd *ucmd);
int kfab_ioctl_av_unlink(struct kfab_ucmd *ucmd);
void kfab_av_destroy(struct kfab_object *obj);
int kfab_av_init(void);
void kfab_av_exit(void);
/**
 * struct kfab_limit - a module parameter that may change while loaded
 * @name: its name (sysfs, netlink)
 * @value: where it lives (its user reads it with READ_ONCE())
 * @min, @max: its range, both included
 */
struct kfab_limit {
	const char *name;
	unsigned int *value;
	u32 min, max;
};

extern const struct kfab_limit kfab_limits[];
extern const size_t kfab_nr_limits;
extern const struct kernel_param_ops kfab_limit_param_ops;
int kfab_limit_set(const struct kfab_limit *l, u64 v);

/* Limits (limits.c): sysfs and KFAB_NL_CMD_LIMIT_SET change them */
extern unsigned int kfab_av_max_named_per_user;
extern unsigned int kfab_av_max_entries_per_user;
unsigned int kfab_av_count(bool named_only);
int kfab_av_addr_of(struct kfab_av *av, u64 index, struct kfab_addr *addr);
int kfab_av_kopen(struct kfab_ctx *ctx, struct kfab_object *domain,
		  const char *name, u32 flags, u32 count, struct kfab_av **out);
u32 kfab_av_insert_batch(struct kfab_ctx *ctx, struct kfab_av *av,
			 const struct kfab_addr *addrs, u32 count,
			 u32 *indices, s32 *errors);
int kfab_av_remove_batch(struct kfab_av *av, const u32 *indices, u32 count);
u64 kfab_av_index_of(struct kfab_av *av, const struct kfab_addr *addr);
u64 kfab_av_generation(struct kfab_av *av);
void kfab_av_debugfs_show(struct seq_file *s);
int kfab_av_nl_fill(struct sk_buff *skb, struct kfab_object *obj);

/**
 * struct kfab_av_info - an AV table as netlink shows it, copied under its
 *	locks (the table itself is av.c's)
 * @serial: node-unique number
 * @name: a named AV's name, "" for an unnamed one
 * @type: KFAB_AV_TYPE_*
 * @uid: owner
 * @gid: group
 * @mode: permission bits
 * @persist: the name outlives the last handle
 * @openers: handles
 * @capacity: entries
 * @used: entries in use
 * @generation: changes made so far
 */
struct kfab_av_info {
	u64 serial;
	char name[KFAB_AV_NAME_MAX];
	u32 type;
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
	bool persist;
	u32 openers;
	u32 capacity;
	u32 used;
	u64 generation;
};

/* Called for each table by kfab_av_for_each(); non-zero stops the walk. */
typedef int (*kfab_av_info_fn)(void *arg, const struct kfab_av_info *info);
int kfab_av_for_each(unsigned long *pos, kfab_av_info_fn fn, void *arg);
int kfab_av_unlink_name(const char *name, bool admin);
/* cq.c: completion queues, rings shared with user space */
struct kfab_buf;

/**
 * struct kfab_cq - a completion queue
 * @obj: the object head
 * @lock: protects everything below that changes
 * @entries: slots in the ring, a power of two
 * @mask: @entries - 1
 * @tail: the producer index: the kernel's own copy, never read back
 * @ring: the header of @ring_region (kernel-written, user read-only)
 * @slots: the slots of @ring_region
 * @slot_size: bytes from one slot to the next
 * @payload: slots carry small messages (KFAB_CQ_OPEN_PAYLOAD)
 * @cons: @cons_region: head and armed, written by user space (untrusted)
 * @ring_region: pages of @ring and @slots
 * @cons_region: the page of @cons
 * @ring_offset: mmap cookie of @ring_region in the owner's file
 * @cons_offset: mmap cookie of @cons_region in the owner's file
 * @overflow: struct kfab_cq_node, completions the full ring could not take
 * @nr_overflow: entries on @overflow
 * @errors: struct kfab_cq_err_node, error completions, oldest first
 * @nr_errors: entries on @errors
 * @backlog_max: most entries on @overflow, and on @errors
 * @eventfd: signalled while user space has the CQ armed, or NULL
 * @posted: completions ever posted (debugfs)
 * @overflowed: completions that ever went through @overflow (debugfs)
 * @bad_head: times a head from user space was out of range (debugfs)
 * @shares: copy jobs into receives of its endpoints that helpers may take
 *	pieces of (share.c's struct kfab_share)
 * @helped: pieces of those jobs its owner copied (debugfs)
 */
struct kfab_cq {
	struct kfab_object obj;
	spinlock_t lock;	/* producer side: tail, lists, counts ("Locking" 8) */
	u32 entries;
	u32 mask;
	u32 tail;
	u32 space;		/* slots free at the last read of head */
	struct kfab_cq_ring *ring;
	u8 *slots;
	u32 slot_size;
	bool payload;
	struct kfab_cq_consumer *cons;
	struct kfab_region *ring_region;
	struct kfab_region *cons_region;
	u64 ring_offset;
	u64 cons_offset;
	struct list_head overflow;
	u32 nr_overflow;
	struct list_head errors;
	u32 nr_errors;
	u32 backlog_max;
	struct eventfd_ctx *eventfd;
	u64 posted;
	u64 overflowed;
	u64 bad_head;
	struct list_head shares;
	u64 helped;
};

/* An error completion, as the kernel queues it. */
struct kfab_cq_err {
	struct kfab_cq_entry entry;
	u64 olen;
	int err;		/* positive errno */
	int prov_errno;
	u32 err_data_len;
	u8 err_data[KFAB_CQ_ERR_DATA_MAX];
	/* KFAB_COMP_PAYLOAD: bytes READERR copies to entry.buf */
	u32 payload_len;
	u8 payload[KFAB_CQ_PAYLOAD_MAX];
};

int kfab_ioctl_cq_open(struct kfab_ucmd *ucmd);
int kfab_ioctl_cq_drain(struct kfab_ucmd *ucmd);
int kfab_ioctl_cq_readerr(struct kfab_ucmd *ucmd);
void kfab_cq_destroy(struct kfab_object *obj);
void kfab_cq_show(struct seq_file *s, struct kfab_object *obj);
int kfab_cq_nl_fill(struct sk_buff *skb, struct kfab_object *obj);
struct kfab_cq *kfab_cq_get(struct kfab_ctx *ctx, u32 id);
void kfab_cq_put(struct kfab_cq *cq);
int kfab_cq_post(struct kfab_cq *cq, const struct kfab_cq_entry *entry,
		 bool *overflowed);
int kfab_cq_post_payload(struct kfab_cq *cq, const struct kfab_cq_entry *entry,
			 const void *payload, bool *overflowed);
bool kfab_cq_post_fast(struct kfab_cq *cq, const struct kfab_cq_entry *entry,
		       const void *payload);
int kfab_cq_post_err(struct kfab_cq *cq, const struct kfab_cq_err *err);

/*
 * Room kept free on the overflow list for completions already under way
 * when kfab_cq_nearly_full() said yes: at most one per endpoint whose
 * request is between that check and its post.
 */
#define KFAB_CQ_HEADROOM	256

/**
 * kfab_cq_nearly_full() - whether new work should wait for the consumer
 * @cq: the CQ
 *
 * True once the overflow list is within KFAB_CQ_HEADROOM of its bound: a
 * request that would complete on @cq stays in its submission ring (the
 * library sees -FI_EAGAIN) until the application reads completions, so
 * none is ever dropped for lack of room.  Lockless: a hint that errs by
 * the completions in flight, which the headroom covers.  Inline: every
 * message asks it of both its CQs.
 */
static inline bool kfab_cq_nearly_full(struct kfab_cq *cq)
{
	return READ_ONCE(cq->nr_overflow) + KFAB_CQ_HEADROOM >= cq->backlog_max;
}

void kfab_cq_wake(struct kfab_cq *cq);

/* share.c: large copies shared with the receiver's CPU */
extern unsigned int kfab_share_min_bytes;
void kfab_cq_sync_flags(struct kfab_cq *cq);
bool kfab_share_wanted(struct kfab_cq *cq, const struct iov_iter *from,
		       size_t n);
int kfab_share_copy(struct kfab_cq *cq, struct kfab_buf *dst, size_t dst_off,
		    struct iov_iter *from, size_t n,
		    struct kfab_pin_cache *cache);
struct kfab_ep_core;
int kfab_share_copy_out(struct kfab_ep_core *sender, struct kfab_buf *src,
			struct iov_iter *to, size_t n);
int kfab_ioctl_cq_help(struct kfab_ucmd *ucmd);
void kfab_share_debugfs_show(struct seq_file *s);
int kfab_share_init(void);
void kfab_share_exit(void);

/* cntr.c: counters */

/**
 * struct kfab_cntr - a counter
 * @obj: the object head
 * @lock: serialises writers of @shared
 * @value: the success value, the kernel's own copy
 * @err: the error value, the kernel's own copy
 * @shared: the mapped copy user space reads (seqcount protected)
 * @region: the page of @shared (read-only for user space)
 * @mmap_offset: mmap cookie of @region in the owner's file
 * @eventfd: signalled after every change, or NULL
 * @wait: KFAB_IOC_CNTR_WAIT sleepers, woken by every change
 */
struct kfab_cntr {
	struct kfab_object obj;
	spinlock_t lock;	/* writers of value, err, shared ("Locking" 8) */
	u64 value;
	u64 err;
	struct kfab_cntr_values *shared;
	struct kfab_region *region;
	u64 mmap_offset;
	struct eventfd_ctx *eventfd;
	wait_queue_head_t wait;
};

int kfab_ioctl_cntr_open(struct kfab_ucmd *ucmd);
int kfab_ioctl_cntr_update(struct kfab_ucmd *ucmd);
int kfab_ioctl_cntr_wait(struct kfab_ucmd *ucmd);
void kfab_cntr_destroy(struct kfab_object *obj);
void kfab_cntr_show(struct seq_file *s, struct kfab_object *obj);
int kfab_cntr_nl_fill(struct sk_buff *skb, struct kfab_object *obj);
struct kfab_cntr *kfab_cntr_get(struct kfab_ctx *ctx, u32 id);
void kfab_cntr_put(struct kfab_cntr *cntr);
void kfab_cntr_update(struct kfab_cntr *cntr, enum kfab_cntr_op op, u64 value,
		      u64 *out_value, u64 *out_err);

/* sq.c: submission rings of endpoints and shared receive contexts */

/**
 * struct kfab_sq - a submission ring (uapi/linux/kfab.h has its protocol)
 * @region: its pages, mapped read-write by the owner
 * @offset: mmap cookie of @region in the owner's file
 * @entries: slots, a power of two
 * @head: the consumer index, the kernel's own copy
 * @tail_user: the tail user space writes (untrusted)
 * @head_user: the head the kernel publishes
 * @flags_user: the KFAB_SQ_RING_* word the kernel publishes
 * @sqes: the slots
 * @watched: the file's poller watches it (under its lock)
 */
struct kfab_sq {
	struct kfab_region *region;
	u64 offset;
	u32 entries;
	u32 head;
	u32 *tail_user;
	u32 *head_user;
	u32 *flags_user;
	struct kfab_sqe *sqes;
	bool watched;
};

/* What a ring's owner does with one entry: 0 or -EAGAIN (stays first). */
typedef int (*kfab_sq_fn)(void *owner, const struct kfab_sqe *sqe);

int kfab_sq_entries(u32 want, u32 *entries);
int kfab_sq_init(struct kfab_ctx *ctx, struct kfab_sq *sq, u32 entries);
void kfab_sq_fini(struct kfab_ctx *ctx, struct kfab_sq *sq);
void kfab_sq_layout(const struct kfab_sq *sq, struct kfab_sq_layout *out);
u32 kfab_sq_run(struct kfab_sq *sq, kfab_sq_fn fn, void *owner);
/* The two kfab_sq_fn (msg.c), called directly (INDIRECT_CALL_2()) */
int kfab_ep_submit(void *owner, const struct kfab_sqe *sqe);
int kfab_srx_submit(void *owner, const struct kfab_sqe *sqe);

/* sqpoll.c: the ring poller */
void kfab_sq_poller_init(struct kfab_sq_poller *p);
void kfab_sq_poller_fini(struct kfab_sq_poller *p);
void kfab_sq_poller_kick(struct kfab_ctx *ctx);
int kfab_ioctl_sq_watch(struct kfab_ucmd *ucmd);
int kfab_ioctl_sq_poll(struct kfab_ucmd *ucmd);
int kfab_ioctl_doorbell(struct kfab_ucmd *ucmd);
long kfab_ioctl_ring(struct kfab_ctx *ctx, unsigned long arg);
int kfab_ioctl_cancel(struct kfab_ucmd *ucmd);

/* buf.c: buffers other processes reach (Documentation/ep.rst) */

#define KFAB_BUF_INLINE_BV	2

/**
 * struct kfab_buf - a request's buffers, reachable from any process
 * @bv: the buffers, page by page
 * @nr_bv: entries of @bv
 * @len: bytes in all
 * @mm: user memory: the process that pinned it, charged for @nr_pinned
 *	pages (mm->pinned_vm, against RLIMIT_MEMLOCK); NULL for kernel memory
 * @nr_pinned: pages pinned
 * @writable: pinned for writing (dirtied when released)
 * @cache: set before kfab_buf_get(): the file whose kept pins a large
 *	buffer of one segment may use (pincache.c), or NULL
 * @kept: the kept pin @bv points into (a reference), or NULL
 * @inline_bv: @bv of a small buffer, without an allocation
 */
struct kfab_buf {
	struct bio_vec *bv;
	unsigned int nr_bv;
	size_t len;
	struct mm_struct *mm;
	unsigned long nr_pinned;
	struct kfab_pin_stats *pins;
	bool writable;
	struct kfab_pin_cache *cache;
	struct kfab_pinned *kept;
	struct bio_vec inline_bv[KFAB_BUF_INLINE_BV];
};

/**
 * struct kfab_pin_stats - user memory pinned for an endpoint's requests
 * @users: one for the endpoint, one per buffer pinned against it (a
 *	buffer may outlive its endpoint: a send held at its receiver)
 * @bytes: pinned now, in whole pages
 * @peak: the most @bytes has been
 *
 * On a line of its own, written only where pages are pinned and
 * unpinned (buf.c); netlink reads it.
 */
struct kfab_pin_stats {
	refcount_t users;
	atomic64_t bytes;
	atomic64_t peak;
} ____cacheline_aligned_in_smp;

struct kfab_pin_stats *kfab_pin_stats_new(void);
u64 kfab_ep_pinned(struct kfab_object *obj);
void kfab_pin_stats_put(struct kfab_pin_stats *pins);
int kfab_buf_get(struct kfab_buf *b, const struct iov_iter *iter,
		 bool writable, struct kfab_pin_stats *pins);
void kfab_buf_put(struct kfab_buf *b);
int kfab_buf_copy_in(struct kfab_buf *b, size_t off, struct iov_iter *from,
		     size_t n);
int kfab_buf_copy_out(struct kfab_buf *b, size_t off, struct iov_iter *to,
		      size_t n);

/**
 * struct kfab_buf_cursor - where a walk through a struct kfab_buf stands
 * @i: the bio_vec
 * @base: the byte of the buffer that bio_vec @i starts at
 */
struct kfab_buf_cursor {
	unsigned int i;
	size_t base;
};

int kfab_buf_copy_buf(struct kfab_buf *dst, struct kfab_buf_cursor *dc,
		      size_t doff, struct kfab_buf *src,
		      struct kfab_buf_cursor *sc, size_t soff, size_t n);

/* ep.c, msg.c, srx.c: endpoints and the messages between them (Documentation/ep.rst) */

enum kfab_dir {
	KFAB_TX = 0,
	KFAB_RX = 1,
};

/* Posted receives and unexpected messages, by kind */
enum kfab_msg_kind {
	KFAB_KIND_MSG = 0,
	KFAB_KIND_TAGGED = 1,
};

struct kfab_ep;
struct kfab_av;
struct kfab_peer;

/**
 * struct kfab_rx_ctx - where messages are matched: an endpoint's own
 *	receive lists, or a shared receive context's
 * @ref: one for its owner (the endpoint's core or the SRX), one per core
 *	that receives through it
 * @lock: the lists, @unexp_bytes, @av, @bufrecv's slots, the cores'
 *	@dead, @ep and @rx_link, and completions to those endpoints
 * @posted: posted receives (msg.c's struct kfab_recv), by kind, in order
 * @unexpected: messages no receive matched yet (struct kfab_unexp),
 *	by kind, in arrival order
 * @claimed: messages set aside by FI_PEEK|FI_CLAIM, by context
 * @unexp_bytes: bytes of @unexpected and @claimed buffered in the kernel
 * @unexp_msgs: messages on @unexpected and @claimed (netlink)
 * @unexp_total: messages that ever went on @unexpected (netlink)
 * @cores: the enabled endpoints that receive through it, oldest first
 * @av: the AV source addresses are looked up in (the endpoints')
 * @bufrecv: buffered receives (bufrecv.c): the region unexpected
 *	messages are copied into, or NULL; set before any endpoint joins
 * @free_recvs: posted receives done with, kept for the next posts
 *	(msg.c, kfab_recv_alloc()): pushed by anyone, taken under @lock
 * @nr_free_recvs: how many
 * @spare_recvs: the same, put back under @lock by whoever holds it
 *	(kfab_recv_put_locked(): no atomic operation), taken first; a
 *	stack linked through their @free, kept under @lock
 * @nr_spare_recvs: how many; with @nr_free_recvs about
 *	KFAB_RECV_CACHE_MAX at most
 * @pins_small: an SRX's: an endpoint whose receive completions cannot
 *	carry a message joined, so every receive pins its buffer (msg.c,
 *	kfab_rx_ctx_pin_small()); never cleared
 */
struct kfab_rx_ctx {
	struct kref ref;
	struct mutex lock;	/* see above; kfab.h "Locking" 4 */
	struct list_head posted[2];
	struct list_head unexpected[2];
	struct list_head claimed;
	size_t unexp_bytes;
	u64 unexp_msgs;
	u64 unexp_total;
	struct list_head cores;
	struct kfab_av *av;
	struct kfab_bufrecv *bufrecv;
	struct llist_head free_recvs;
	atomic_t nr_free_recvs;
	struct llist_node *spare_recvs;
	unsigned int nr_spare_recvs;
	bool pins_small;
};

/**
 * struct kfab_bufrecv_slot - where kfab_bufrecv_fill() put a message
 * @token: names the slot's message to user space (a CQ entry's context)
 *	until the slot is released
 * @offset: the slot's byte offset in the region
 * @data: the slot in the kernel's view
 * @len: bytes copied into it
 * @cookie: the region's cookie (KFAB_IOC_RX_BUFFERED)
 */
struct kfab_bufrecv_slot {
	u64 token;
	u64 cookie;
	u64 offset;
	void *data;
	size_t len;
};

/* bufrecv.c; all but the ioctl and withdraw under the rx_ctx's lock */
int kfab_ioctl_rx_buffered(struct kfab_ucmd *ucmd);
void kfab_bufrecv_withdraw(struct kfab_ctx *ctx, struct kfab_rx_ctx *rxc);
void kfab_rx_ctx_bufrecv_free(struct kfab_rx_ctx *rxc);
u32 kfab_bufrecv_limit(struct kfab_rx_ctx *rxc);
int kfab_bufrecv_reserve(struct kfab_rx_ctx *rxc, size_t n,
			 struct kfab_bufrecv_slot *out);
int kfab_bufrecv_fill(struct kfab_rx_ctx *rxc, struct iov_iter *from,
		      size_t n, struct kfab_bufrecv_slot *out);
bool kfab_bufrecv_valid(struct kfab_rx_ctx *rxc, u64 token);
void kfab_bufrecv_release(struct kfab_rx_ctx *rxc, u64 token);

/**
 * struct kfab_ep_core - what other endpoints reach of an endpoint
 * @ref: one for the endpoint, one per sender working on it, one per
 *	unexpected message it sent that waits at a receiver
 * @rcu: frees it after kfab_ep_core_find()'s lookups are done
 * @num: the endpoint's number on this machine (kfab_eps)
 * @addr: its address (node.c), as fi_getname() and receivers see it
 * @net: the network namespace it lives in (a reference)
 * @service: a service endpoint's number in @net, else 0
 * @rxc: where messages to it are matched (a reference); its lock covers
 *	@dead, @ep and @rx_link
 * @rx_link: on @rxc's cores while enabled and not dead
 * @dead: the endpoint is gone; nothing may reach @ep any more
 * @ep: the endpoint, while !@dead
 * @tx_waiting: sends of this endpoint waiting at receivers (rendezvous)
 * @block: a scalable endpoint's context: its block's base number, which
 *	@addr names; else 0
 * @send_only: never reachable by @num (a block's anchor, a transmit
 *	context)
 * @share_lock: held by a receiver that copies one of this endpoint's
 *	messages with its help (share.c), and to change @tx_cq
 * @tx_cq: the endpoint's transmit CQ, where such copies are published;
 *	NULL for a kernel caller's endpoint and once the endpoint goes
 */
struct kfab_ep_core {
	struct kref ref;
	struct rcu_head rcu;
	u64 num;
	struct kfab_addr addr;
	struct net *net;
	u64 service;
	struct kfab_rx_ctx *rxc;
	struct list_head rx_link;
	bool dead;
	struct kfab_ep *ep;
	atomic_t tx_waiting;
	u64 block;
	bool send_only;
	struct mutex share_lock;	/* "Locking" 4a */
	struct kfab_cq *tx_cq;
};

/**
 * struct kfab_comp - the end of a request, as the engine reports it
 * @dir: KFAB_TX or KFAB_RX: which CQ and counter of the endpoint
 * @req_flags: the request's KFAB_SQE_*: a success is reported only with
 *	KFAB_SQE_COMPLETION
 * @entry: the completion as a CQ takes it
 * @status: 0, or a negative errno; -KFAB_ERR_TRUNC: the message did not
 *	fit the receive
 * @olen: with -KFAB_ERR_TRUNC: the bytes that did not fit
 * @payload: with KFAB_COMP_PAYLOAD in @entry.flags: the @entry.len bytes
 *	of a small message, for a receive that pinned nothing
 */
struct kfab_comp {
	enum kfab_dir dir;
	u32 req_flags;
	struct kfab_cq_entry entry;
	int status;
	u64 olen;
	const void *payload;
};

/**
 * struct kfab_ep_kops - an endpoint of a kernel caller
 * @complete: called for every completion of the endpoint instead of
 *	posting it to a CQ (errors always; successes when the request had
 *	KFAB_SQE_COMPLETION).  Process context, possibly another process's,
 *	possibly with a receive context's lock held: it must not sleep for
 *	long nor call into kfab.
 */
struct kfab_ep_kops {
	void (*complete)(struct kfab_ep *ep, const struct kfab_comp *comp);
};

struct kfab_srx;

/**
 * struct kfab_ep_stats - an endpoint's traffic, as netlink shows it
 * @tx_msgs: sends posted (accepted by kfab_msg_post())
 * @tx_bytes: their payload
 * @rx_msgs: receives completed without error (a peek is none)
 * @rx_bytes: what they received
 * @tx_errors: sends completed with an error
 * @rx_errors: receives completed with an error
 * @truncated: receives that got a message longer than their buffers
 * @canceled: requests canceled
 *
 * Per CPU, added up when read: a message is counted by whichever CPU
 * carries it out (a sender's doorbell counts the receiver's receive), so
 * a shared line written with an atomic operation by every sender would
 * cost each message a cache-line transfer.  this_cpu_*() in any context.
 */
struct kfab_ep_stats {
	u64 tx_msgs;
	u64 tx_bytes;
	u64 rx_msgs;
	u64 rx_bytes;
	u64 tx_errors;
	u64 rx_errors;
	u64 truncated;
	u64 canceled;
};

/* A per-CPU count of struct kfab_ep_stats or kfab_srx_stats, added up. */
static inline u64 kfab_stat_sum(u64 __percpu *count)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		/* Added to on other CPUs meanwhile: one may be missed. */
		sum += data_race(*per_cpu_ptr(count, cpu));
	return sum;
}

/**
 * struct kfab_srx_stats - a shared receive context's receives, as
 *	netlink shows them
 * @rx_msgs: receives completed without error (a peek is none)
 * @rx_bytes: what they received
 * @rx_errors: receives completed with an error
 * @truncated: receives that got a message longer than their buffers
 * @canceled: receives canceled
 *
 * Counted where its endpoints' own are (kfab_ep_complete()), per CPU as
 * theirs are (struct kfab_ep_stats).
 */
struct kfab_srx_stats {
	u64 rx_msgs;
	u64 rx_bytes;
	u64 rx_errors;
	u64 truncated;
	u64 canceled;
};

/**
 * struct kfab_dest - where a doorbell's last send to this machine went:
 *	its next sends to the same address skip the lookups (msg.c,
 *	kfab_msg_send()); on kfab_ep_doorbell()'s stack, under @sq_lock
 * @target: the endpoint (a reference), or NULL before the first
 * @addr: the sends' address, an index of the sender's AV
 * @rx_index: its receive context (fi_rx_addr()), or 0
 * @dst: what @addr and @rx_index named
 * @av_gen: the sender's AV's generation before @dst was looked up
 * @rx_av: the AV @from is an index of (@target's receive context's), or
 *	NULL before it was looked up for this @target
 * @rx_gen: @rx_av's generation before @from was looked up
 * @from: the sender's index in @rx_av
 * @not_local: the fast path found @not_local_addr (under @not_local_gen)
 *	on no endpoint of this machine: it leaves its sends to the general
 *	path without resolving it again
 * @as_memo: everything above is what the endpoint's memo says already
 *	(taken whole from it, nothing looked up since): the doorbell need
 *	not write it back
 *
 * Empty, only @target, @rx_av and @not_local say anything (the rest is
 * read after one of them is set): kfab_dest_init() writes those three,
 * not the whole struct, on a doorbell that may carry one message.
 */
struct kfab_dest {
	struct kfab_ep_core *target;
	u64 addr;
	u16 rx_index;
	struct kfab_addr dst;
	u64 av_gen;
	struct kfab_av *rx_av;
	u64 rx_gen;
	u64 from;
	bool not_local;
	u64 not_local_addr;
	u64 not_local_gen;
	bool as_memo;
	u64 epoch;
};

static inline void kfab_dest_init(struct kfab_dest *d)
{
	d->target = NULL;
	d->rx_av = NULL;
	d->not_local = false;
}

/**
 * struct kfab_dest_memo - what an endpoint's doorbells last resolved,
 *	kept from one doorbell to the next (under @sq_lock; msg.c): a
 *	ping-pong's doorbell carries one send, and resolving it anew cost
 *	two AV lookups each time.  It holds no reference: the AVs' answers
 *	are reused while their generations say they still hold, the
 *	endpoint while no endpoint has gone (@core)
 * @valid: the rest says something
 * @addr: the address sent to, an index of the sender's AV
 * @rx_index: its receive context (fi_rx_addr()), or 0
 * @av_gen: the sender's AV's generation when @dst was looked up
 * @dst: what @addr and @rx_index named
 * @num: the endpoint @dst was then (numbers are never reused)
 * @rx_av: that endpoint's receive context's AV, or NULL before @from was
 *	looked up; compared, never followed (the endpoint's own, while it
 *	lives)
 * @rx_gen: @rx_av's generation when @from was looked up
 * @from: the sender's index in @rx_av
 * @core: the core @dst named, without a reference, or NULL: taken again
 *	by kfab_ep_core_reget() while no core has left kfab_eps since
 *	@epoch, instead of a lookup (an endpoint of this machine by its
 *	number only: a service's or another node's is looked up each time)
 * @epoch: kfab_ep_core_epoch() before @core was looked up
 */
struct kfab_dest_memo {
	bool valid;
	u16 rx_index;
	u64 addr;
	u64 av_gen;
	struct kfab_addr dst;
	u64 num;
	struct kfab_av *rx_av;
	u64 rx_gen;
	u64 from;
	struct kfab_ep_core *core;
	u64 epoch;
};

/* A doorbell's destination, kept for the next doorbell. */
static inline void kfab_dest_remember(struct kfab_dest_memo *m,
				      const struct kfab_dest *d)
{
	m->valid = true;
	m->rx_index = d->rx_index;
	m->addr = d->addr;
	m->av_gen = d->av_gen;
	m->dst = d->dst;
	m->num = d->target->num;
	m->rx_av = d->rx_av;
	m->rx_gen = d->rx_gen;
	m->from = d->from;
	/* What kfab_ep_core_find() found; never followed without reget. */
	m->core = d->dst.family == KFAB_ADDR_LOCAL &&
		  be64_to_cpu(d->dst.ep) > KFAB_SERVICE_MAX ? d->target : NULL;
	m->epoch = d->epoch;
}

/**
 * struct kfab_ep - an endpoint (KFAB_OBJ_EP)
 * @obj: the object head
 * @core: the part senders reach, found by number
 * @av: the bound AV (a user of its object), or NULL
 * @srx: the bound shared receive context (a user of it), or NULL
 * @cq: the bound CQs by direction (users), or NULL
 * @selective: the CQ of that direction reports only flagged successes
 * @cntr: the bound counters by direction (users), or NULL
 * @kops: a kernel caller's hooks, or NULL
 * @kpriv: the kernel caller's
 * @enabled: KFAB_IOC_EP_ENABLE happened; bindings are fixed
 * @sq_lock: serialises doorbells
 * @sq: the submission ring
 * @stats: its traffic (netlink)
 * @pins: what its requests pin (netlink; a reference)
 * @plugging: a doorbell runs the ring: sends to another node wait for its
 *	end to go out, together (under @sq_lock)
 * @plugged: the peer they wait in (a reference), or NULL (under @sq_lock)
 * @dest: while a doorbell runs, its sends' last destination (under
 *	@sq_lock), else NULL
 * @memo: the last doorbell's last destination on this machine (under
 *	@sq_lock)
 */
struct kfab_ep {
	struct kfab_object obj;
	struct kfab_ep_core *core;
	struct kfab_av *av;
	struct kfab_srx *srx;
	struct kfab_cq *cq[2];
	bool selective[2];
	struct kfab_cntr *cntr[2];
	const struct kfab_ep_kops *kops;
	void *kpriv;
	bool enabled;
	struct mutex sq_lock;	/* doorbells, one at a time ("Locking" 3) */
	struct kfab_sq sq;
	struct kfab_ep_stats __percpu *stats;
	struct kfab_pin_stats *pins;
	bool plugging;
	struct kfab_peer *plugged;
	struct kfab_dest *dest;
	struct kfab_dest_memo memo;
};

/**
 * struct kfab_srx - a shared receive context (KFAB_OBJ_SRX)
 * @obj: the object head
 * @rxc: its receive context
 * @av: the AV of its endpoints (a user of it), from the first enabled
 * @sq_lock: serialises doorbells
 * @sq: the submission ring (receives only)
 * @stats: its receives' ends (netlink)
 */
struct kfab_srx {
	struct kfab_object obj;
	struct kfab_rx_ctx *rxc;
	struct kfab_av *av;
	struct mutex sq_lock;	/* doorbells, one at a time ("Locking" 3) */
	struct kfab_sq sq;
	struct kfab_srx_stats __percpu *stats;
};

/**
 * struct kfab_req - a send or a receive, from a ring entry or kernel code
 * @opcode: KFAB_OP_*
 * @rx_index: send: the receive context of a scalable destination, or 0
 * @flags: KFAB_SQE_*
 * @context: reported back in the completion
 * @addr: send: the destination (an index of the endpoint's AV); receive:
 *	the only source accepted, or KFAB_CQ_ADDR_NOTAVAIL
 * @tag: tagged: the tag
 * @ignore: tagged receive: the bits of @tag to ignore
 * @data: KFAB_SQE_REMOTE_CQ_DATA: the data; KFAB_SQE_MULTI_RECV: the
 *	least free space the buffer keeps serving
 * @iter: the payload of a send, the buffers of a receive: the current
 *	process's memory, or kernel memory (ITER_KVEC, ITER_BVEC) that
 *	stays valid until the request completes; kernel memory is neither
 *	pinned nor charged
 */
struct kfab_req {
	u8 opcode;
	u16 rx_index;
	u32 flags;
	u64 context;
	u64 addr;
	u64 tag;
	u64 ignore;
	u64 data;
	struct iov_iter iter;
};

int kfab_ioctl_ep_open(struct kfab_ucmd *ucmd);
int kfab_ioctl_ep_bind(struct kfab_ucmd *ucmd);
int kfab_ioctl_ep_enable(struct kfab_ucmd *ucmd);
int kfab_ep_doorbell(struct kfab_object *obj, u32 *out_done);
struct kfab_sq *kfab_ep_sq(struct kfab_object *obj);
int kfab_ep_cancel(struct kfab_object *obj, u64 context);
void kfab_ep_destroy(struct kfab_object *obj);
void kfab_ep_show(struct seq_file *s, struct kfab_object *obj);
int kfab_ep_nl_fill(struct sk_buff *skb, struct kfab_object *obj);
struct kfab_ep_core *kfab_ep_core_find(u64 num);
u64 kfab_ep_core_epoch(void);
struct kfab_ep_core *kfab_ep_core_reget(struct kfab_ep_core *core, u64 epoch);
void kfab_ep_core_put(struct kfab_ep_core *core);
void kfab_ep_complete(struct kfab_ep *ep, const struct kfab_comp *comp);
void kfab_srx_count_recv(struct kfab_srx *srx, size_t bytes);

/* A send of @bytes was posted (msg.c).  Inline: once per message. */
static inline void kfab_ep_count_send(struct kfab_ep *ep, size_t bytes)
{
	this_cpu_inc(ep->stats->tx_msgs);
	this_cpu_add(ep->stats->tx_bytes, bytes);
}

/* A message of @bytes received whole; on its SRX too, if any. */
static inline void kfab_ep_count_recv(struct kfab_ep *ep, size_t bytes)
{
	if (ep->srx)
		kfab_srx_count_recv(ep->srx, bytes);
	this_cpu_inc(ep->stats->rx_msgs);
	this_cpu_add(ep->stats->rx_bytes, bytes);
}

int kfab_ep_kopen(struct kfab_ctx *ctx, struct kfab_object *domain,
		  struct kfab_av *av, const struct kfab_addr *src,
		  const struct kfab_ep_kops *kops,
		  void *kpriv, struct kfab_ep **out);

/* srx.c */
int kfab_ioctl_srx_open(struct kfab_ucmd *ucmd);
void kfab_srx_destroy(struct kfab_object *obj);
void kfab_srx_show(struct seq_file *s, struct kfab_object *obj);
int kfab_srx_nl_fill(struct sk_buff *skb, struct kfab_object *obj);
int kfab_srx_doorbell(struct kfab_object *obj, u32 *out_done);
struct kfab_sq *kfab_srx_sq(struct kfab_object *obj);
int kfab_srx_cancel(struct kfab_object *obj, u64 context);

/* What a receive context holds unexpected now, for netlink. */
static inline u64 kfab_rx_ctx_unexp_bytes(struct kfab_rx_ctx *rxc)
{
	/* Without its lock: a value that may be a moment old is enough. */
	return data_race(rxc->unexp_bytes);
}

/* How many messages it holds now, for netlink. */
static inline u64 kfab_rx_ctx_unexp_msgs(struct kfab_rx_ctx *rxc)
{
	/* Without its lock, as kfab_rx_ctx_unexp_bytes(). */
	return data_race(rxc->unexp_msgs);
}

/* How many it ever held, for netlink. */
static inline u64 kfab_rx_ctx_unexp_total(struct kfab_rx_ctx *rxc)
{
	/* Without its lock, as kfab_rx_ctx_unexp_bytes(). */
	return data_race(rxc->unexp_total);
}

int kfab_rx_ctx_nl_fill(struct sk_buff *skb, struct kfab_rx_ctx *rxc);
void kfab_srx_count_err(struct kfab_srx *srx, int status);

/* msg.c */
struct kfab_rx_ctx *kfab_rx_ctx_alloc(void);
void kfab_rx_ctx_put(struct kfab_rx_ctx *rxc);
int kfab_rx_ctx_pin_small(struct kfab_rx_ctx *rxc, struct kfab_ep *ep);
int kfab_msg_post(struct kfab_ep *ep, struct kfab_req *req);
void kfab_msg_detach(struct kfab_ep_core *core);
void kfab_msg_flush_rx(struct kfab_rx_ctx *rx);
int kfab_msg_cancel(struct kfab_rx_ctx *rx, u64 context);

/*
 * test.c: fault injection and test-only ioctls (CONFIG_KFAB_TEST).  A fault
 * point is one line: "if (kfab_fault(ctx, KFAB_FAULT_...)) fail;".
 */
#ifdef CONFIG_KFAB_TEST
bool kfab_fault(struct kfab_ctx *ctx, enum kfab_test_fault_point point);
u32 kfab_fault_arm(struct kfab_ctx *ctx, enum kfab_test_fault_point point,
		   u32 nth);
u32 kfab_fault_fired(struct kfab_ctx *ctx, enum kfab_test_fault_point point);
void kfab_fault_show(struct seq_file *s, struct kfab_ctx *ctx);
int kfab_ioctl_test_fault(struct kfab_ucmd *ucmd);
int kfab_ioctl_test_cq_post(struct kfab_ucmd *ucmd);
#else
static inline bool kfab_fault(struct kfab_ctx *ctx,
			      enum kfab_test_fault_point point)
{
	return false;
}

static inline void kfab_fault_show(struct seq_file *s, struct kfab_ctx *ctx)
{
}
#endif

/*
 * kfab_alloc() - one of kfab's own allocations, a pass through @ctx's
 * KFAB_FAULT_ALLOC: NULL without calling @alloc when the point fires, else
 * what @alloc (an expression yielding a pointer or NULL) gives.  Only
 * @alloc without CONFIG_KFAB_TEST.
 */
#define kfab_alloc(ctx, alloc) \
	(kfab_fault(ctx, KFAB_FAULT_ALLOC) ? NULL : (alloc))

/* kapi.c: the in-kernel API (kfab_kapi.h), with CONFIG_KFAB_KAPI */
#ifdef CONFIG_KFAB_KAPI
int kfab_kapi_init(void);
void kfab_kapi_exit(void);
#else
static inline int kfab_kapi_init(void)
{
	return 0;
}

static inline void kfab_kapi_exit(void)
{
}
#endif
#if defined(CONFIG_KFAB_KAPI) && defined(CONFIG_KFAB_TEST)
struct kfab_kdomain;
struct kfab_ctx *kfab_kdomain_ctx(struct kfab_kdomain *dom);
extern const struct file_operations kfab_kapi_test_fops;
#endif

/* netlink.c: the generic netlink family (uapi/linux/kfab_netlink.h) */
struct kfab_av_info;
int kfab_nl_init(void);
void kfab_nl_exit(void);
void kfab_nl_notify_ctx(struct kfab_ctx *ctx, bool opened);
void kfab_nl_notify_av(const struct kfab_av_info *info, u8 cmd);
bool kfab_nl_listening(void);
bool kfab_nl_queue(struct work_struct *work);
void kfab_nl_flush(void);
int kfab_nl_put_u64(struct sk_buff *skb, int type, u64 value);

/* A per-CPU counter (struct kfab_ep_stats, kfab_srx_stats), added up. */
static inline int kfab_nl_put_stat(struct sk_buff *skb, int type,
				   u64 __percpu *count)
{
	return kfab_nl_put_u64(skb, type, kfab_stat_sum(count));
}

/* sysfs.c */
extern const struct attribute_group *kfab_sysfs_groups[];

/* debugfs.c */
extern struct dentry *kfab_debugfs_root;
void kfab_debugfs_init(void);
void kfab_debugfs_exit(void);

#endif /* KFAB_H */
