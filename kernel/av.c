// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address vectors: the kernel half of libfabric's fid_av
 * (Documentation/av.rst has the design and the permission model).
 *
 * Two objects.  A struct kfab_av_table is the table itself: its entries,
 * the page region every opener maps read-only, the index bitmap and a hash
 * of the addresses it holds.  A struct kfab_av is one handle on a table, an
 * object in one file's table (KFAB_OBJ_AV).  An unnamed AV is one table with
 * one handle.  A named AV is one table with a handle per open, found by its
 * name on kfab_av_list; the name holds a reference of its own until the
 * last handle closes (or, for a persistent AV, until it is unlinked).
 *
 * References on a table (t->ref): one per handle, one for the name while
 * it is linked.  kfab_av_lock protects kfab_av_list, every table's name,
 * link state, openers and owner accounting; t->lock serialises the changes
 * to one table's entries.  Lock order: kfab_av_lock, then t->lock.  A table
 * reference is never dropped under kfab_av_lock (its release takes it).
 */
#include <linux/bitmap.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/ctype.h>
#include <linux/module.h>
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include <net/netlink.h>

#include <linux/kfab_netlink.h>

#include "kfab.h"
#include "net.h"

static unsigned int kfab_av_default_count = 1024;
module_param_named(av_default_count, kfab_av_default_count, uint, 0444);
MODULE_PARM_DESC(av_default_count, "Entries of an AV opened with count 0 (default 1024)");

static unsigned int kfab_av_max_count = 65536;
module_param_named(av_max_count, kfab_av_max_count, uint, 0444);
MODULE_PARM_DESC(av_max_count, "Most entries one AV may ask for (default 65536)");

/*
 * Limits that change while loaded (limits.c checks their range, for sysfs
 * and KFAB_NL_CMD_LIMIT_SET alike): read with READ_ONCE().
 */
unsigned int kfab_av_max_named_per_user = 64;
module_param_cb(av_max_named_per_user, &kfab_limit_param_ops,
		&kfab_av_max_named_per_user, 0644);
__MODULE_PARM_TYPE(av_max_named_per_user, "uint");
MODULE_PARM_DESC(av_max_named_per_user, "Most named AVs one owner may have (default 64)");

unsigned int kfab_av_max_entries_per_user = 1 << 20;
module_param_cb(av_max_entries_per_user, &kfab_limit_param_ops,
		&kfab_av_max_entries_per_user, 0644);
__MODULE_PARM_TYPE(av_max_entries_per_user, "uint");
MODULE_PARM_DESC(av_max_entries_per_user, "Most entries the named AVs of one owner may hold together (default 1048576)");

/* The kernel's own copy of one entry, and its place in the address hash. */
struct kfab_av_slot {
	struct rhash_head node;
	struct kfab_addr addr;
	u32 index;		/* its own, so a hash hit needs no division */
};

/* What the named AVs of one owner cost, against the per-user limits. */
struct kfab_av_user {
	kuid_t uid;
	unsigned int named;
	u64 entries;
	struct list_head node;		/* on kfab_av_users */
};

/**
 * struct kfab_av_table - the table of an AV, shared by its handles
 * @ref: one per handle, one for the name while @linked
 * @lock: serialises changes to the entries, @used and @generation
 * @region: the pages user space maps: header, then the entries
 * @hdr: the header in @region
 * @entries: the entries in @region, written only by this file
 * @slots: the kernel's copy of each entry, never read from @region
 * @used_map: which indices are in use
 * @by_addr: @slots in use, by address (an address is in a table once)
 * @capacity: entries
 * @used: entries in use
 * @generation: changes made so far
 * @type: KFAB_AV_TYPE_TABLE or _MAP
 * @map_addr: a named AV's map_addr
 * @serial: node-unique number, for debugfs
 * @name: the name, "" for an unnamed AV (under kfab_av_lock)
 * @uid: owner
 * @gid: group
 * @mode: permission bits of a named AV
 * @persist: the name outlives the last handle, until unlinked
 * @linked: the name finds the table (under kfab_av_lock)
 * @openers: handles (under kfab_av_lock)
 * @handles: the handles, on struct kfab_av.opener (under kfab_av_lock)
 * @charged: the owner accounting a named AV is charged to, or NULL
 * @node: on kfab_av_list (under kfab_av_lock)
 * @nl_work: sends a named AV's "changed" event (kfab_av_changed())
 * @nl_pending: @nl_work is queued and holds a reference (under @lock)
 */
struct kfab_av_table {
	struct kref ref;
	struct mutex lock;	/* the entries, @used, @generation */
	struct kfab_region *region;
	struct kfab_av_header *hdr;
	struct kfab_av_entry *entries;
	struct kfab_av_slot *slots;
	unsigned long *used_map;
	struct rhashtable by_addr;
	u32 capacity;
	u32 used;
	u64 generation;
	u32 type;
	u64 map_addr;
	u64 serial;
	char name[KFAB_AV_NAME_MAX];
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
	bool persist;
	bool linked;
	unsigned int openers;
	struct list_head handles;
	struct kfab_av_user *charged;
	struct list_head node;
	struct work_struct nl_work;
	bool nl_pending;
};

static void kfab_av_nl_work(struct work_struct *work);

static const struct rhashtable_params kfab_av_hash_params = {
	.key_len = sizeof(struct kfab_addr),
	.key_offset = offsetof(struct kfab_av_slot, addr),
	.head_offset = offsetof(struct kfab_av_slot, node),
	.automatic_shrinking = true,
};

static DEFINE_MUTEX(kfab_av_lock);
static LIST_HEAD(kfab_av_list);
static LIST_HEAD(kfab_av_users);
static unsigned int kfab_av_nr, kfab_av_nr_named;	/* under kfab_av_lock */
static atomic64_t kfab_av_next_serial = ATOMIC64_INIT(0);

#define KFAB_AV_OPEN_NAMED_FLAGS					\
	(KFAB_AV_OPEN_READ_ONLY | KFAB_AV_OPEN_EXCL |			\
	 KFAB_AV_OPEN_NO_CREATE | KFAB_AV_OPEN_PERSIST |		\
	 KFAB_AV_OPEN_SET_OWNER)
/* Flags that only make sense when the call may create the AV. */
#define KFAB_AV_OPEN_CREATE_FLAGS					\
	(KFAB_AV_OPEN_EXCL | KFAB_AV_OPEN_PERSIST | KFAB_AV_OPEN_SET_OWNER)

static inline struct kfab_av *to_kfab_av(struct kfab_object *obj)
{
	return container_of(obj, struct kfab_av, obj);
}

/* Entries a table asked for @count holds: its last page is filled too. */
static u32 kfab_av_capacity(u32 count)
{
	size_t bytes;

	if (!count)
		count = kfab_av_default_count;
	bytes = PAGE_ALIGN(sizeof(struct kfab_av_header) +
			   (size_t)count * sizeof(struct kfab_av_entry));
	return (bytes - sizeof(struct kfab_av_header)) /
	       sizeof(struct kfab_av_entry);
}

static struct kfab_av_table *kfab_av_table_alloc(struct kfab_ctx *ctx,
						 u32 type, u32 capacity)
{
	struct kfab_av_table *t;
	int rc = -ENOMEM;

	t = kfab_alloc(ctx, kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT));
	if (!t)
		return ERR_PTR(-ENOMEM);
	t->region = kfab_region_alloc(sizeof(struct kfab_av_header) +
				      (size_t)capacity *
				      sizeof(struct kfab_av_entry), true);
	if (IS_ERR(t->region)) {
		rc = PTR_ERR(t->region);
		t->region = NULL;
		goto err;
	}
	t->slots = kfab_alloc(ctx, kvcalloc(capacity, sizeof(*t->slots),
					    GFP_KERNEL_ACCOUNT));
	if (!t->slots)
		goto err;
	t->used_map = kfab_alloc(ctx, bitmap_zalloc(capacity,
						    GFP_KERNEL_ACCOUNT));
	if (!t->used_map)
		goto err;
	rc = rhashtable_init(&t->by_addr, &kfab_av_hash_params);
	if (rc)
		goto err;

	t->hdr = t->region->vaddr;
	t->entries = t->region->vaddr + sizeof(struct kfab_av_header);
	t->hdr->capacity = capacity;
	t->hdr->entry_size = sizeof(struct kfab_av_entry);
	t->hdr->entries_offset = sizeof(struct kfab_av_header);
	t->capacity = capacity;
	t->type = type;
	t->serial = atomic64_inc_return(&kfab_av_next_serial);
	t->uid = current_fsuid();
	t->gid = current_fsgid();
	t->mode = 0600;
	kref_init(&t->ref);
	mutex_init(&t->lock);
	INIT_LIST_HEAD(&t->handles);
	INIT_LIST_HEAD(&t->node);
	INIT_WORK(&t->nl_work, kfab_av_nl_work);
	return t;

err:
	bitmap_free(t->used_map);
	kvfree(t->slots);
	kfab_region_put(t->region);
	kfree(t);
	return ERR_PTR(rc);
}

/* ---- owner accounting of named AVs (under kfab_av_lock) ---- */

static struct kfab_av_user *kfab_av_user_charge(kuid_t uid, u32 entries)
{
	struct kfab_av_user *user;
	bool exempt = capable(CAP_SYS_RESOURCE);

	lockdep_assert_held(&kfab_av_lock);
	list_for_each_entry(user, &kfab_av_users, node)
		if (uid_eq(user->uid, uid))
			goto found;
	user = kzalloc(sizeof(*user), GFP_KERNEL_ACCOUNT);
	if (!user)
		return ERR_PTR(-ENOMEM);
	user->uid = uid;
	list_add(&user->node, &kfab_av_users);
found:
	if (!exempt &&
	    (user->named >= READ_ONCE(kfab_av_max_named_per_user) ||
	     user->entries + entries >
	     READ_ONCE(kfab_av_max_entries_per_user))) {
		if (!user->named) {
			list_del(&user->node);
			kfree(user);
		}
		return ERR_PTR(-EDQUOT);
	}
	user->named++;
	user->entries += entries;
	return user;
}

static void kfab_av_user_uncharge(struct kfab_av_user *user, u32 entries)
{
	lockdep_assert_held(&kfab_av_lock);
	user->named--;
	user->entries -= entries;
	if (!user->named) {
		list_del(&user->node);
		kfree(user);
	}
}

/* The last reference is gone: no handle, no name. */
static void kfab_av_table_release(struct kref *ref)
{
	struct kfab_av_table *t = container_of(ref, struct kfab_av_table, ref);

	mutex_lock(&kfab_av_lock);
	list_del(&t->node);
	kfab_av_nr--;
	if (t->charged) {
		kfab_av_user_uncharge(t->charged, t->capacity);
		kfab_av_nr_named--;
	}
	mutex_unlock(&kfab_av_lock);

	rhashtable_destroy(&t->by_addr);
	bitmap_free(t->used_map);
	kvfree(t->slots);
	kfab_region_put(t->region);
	mutex_destroy(&t->lock);
	kfree(t);
}

static void kfab_av_table_put(struct kfab_av_table *t)
{
	kref_put(&t->ref, kfab_av_table_release);
}

/* Make a new table known to debugfs, sysfs and module unload. */
static void kfab_av_table_publish(struct kfab_av_table *t)
{
	lockdep_assert_held(&kfab_av_lock);
	list_add_tail(&t->node, &kfab_av_list);
	kfab_av_nr++;
	if (t->charged)
		kfab_av_nr_named++;
}

static struct kfab_av_table *kfab_av_find(const char *name)
{
	struct kfab_av_table *t;

	lockdep_assert_held(&kfab_av_lock);
	list_for_each_entry(t, &kfab_av_list, node)
		if (t->linked && !strcmp(t->name, name))
			return t;
	return NULL;
}

/* A snapshot of @t for netlink (kfab_av_lock held, takes t->lock). */
static void kfab_av_info_of(struct kfab_av_table *t, struct kfab_av_info *info);

/*
 * The entries of a named table changed: tell the events group, from
 * kfab_nl_wq.  Changes run under @t's lock, which ranks below
 * kfab_av_lock (kfab.h "Locking" 2, 5), and a kernel consumer may hold
 * its endpoint's lock too: the event, which needs kfab_av_lock for the
 * name and allocates, is sent later.  Changes made before the work runs
 * make one event, with the table as it is then.
 */
static void kfab_av_changed(struct kfab_av_table *t)
{
	lockdep_assert_held(&t->lock);
	if (!t->charged || t->nl_pending || !kfab_nl_listening())
		return;
	/* The work's reference; the caller's handle holds another. */
	kref_get(&t->ref);
	t->nl_pending = true;
	kfab_nl_queue(&t->nl_work);
}

static void kfab_av_nl_work(struct work_struct *work)
{
	struct kfab_av_table *t = container_of(work, struct kfab_av_table,
					       nl_work);
	struct kfab_av_info info;
	bool linked;

	mutex_lock(&t->lock);
	t->nl_pending = false;
	mutex_unlock(&t->lock);
	mutex_lock(&kfab_av_lock);
	linked = t->linked;
	if (linked)
		kfab_av_info_of(t, &info);
	mutex_unlock(&kfab_av_lock);
	if (linked)
		kfab_nl_notify_av(&info, KFAB_NL_CMD_AV_CHANGED);
	kfab_av_table_put(t);
}

/* A snapshot of @t for netlink (kfab_av_lock held, takes t->lock). */
static void kfab_av_info_of(struct kfab_av_table *t, struct kfab_av_info *info)
{
	lockdep_assert_held(&kfab_av_lock);
	*info = (struct kfab_av_info) {
		.serial = t->serial,
		.type = t->type,
		.uid = t->uid,
		.gid = t->gid,
		.mode = t->mode,
		.persist = t->persist,
		.openers = t->openers,
		.capacity = t->capacity,
	};
	if (t->linked)
		strscpy(info->name, t->name, sizeof(info->name));
	mutex_lock(&t->lock);
	info->used = t->used;
	info->generation = t->generation;
	mutex_unlock(&t->lock);
}

/*
 * Tell the events group that a name went; called without kfab_av_lock,
 * with a reference on @t.
 */
static void kfab_av_notify_gone(struct kfab_av_table *t, const char *name)
{
	struct kfab_av_info info;

	mutex_lock(&kfab_av_lock);
	kfab_av_info_of(t, &info);
	mutex_unlock(&kfab_av_lock);
	strscpy(info.name, name, sizeof(info.name));
	kfab_nl_notify_av(&info, KFAB_NL_CMD_AV_GONE);
}

/*
 * The mode of a named AV, read the way the kernel reads a file's: the
 * owner's bits, else the group's, else the others'.  Credentials are
 * compared as kuid/kgid, so a user namespace's root is its mapped uid here.
 * CAP_DAC_OVERRIDE in the initial user namespace overrides, as for files.
 */
static bool kfab_av_may(const struct kfab_av_table *t, unsigned int want)
{
	unsigned int mode = t->mode;

	if (uid_eq(current_fsuid(), t->uid))
		mode >>= 6;
	else if (in_group_p(t->gid))
		mode >>= 3;
	if (!(want & ~mode & 7))
		return true;
	return capable(CAP_DAC_OVERRIDE);
}

/*
 * A name is 1 to KFAB_AV_NAME_MAX - 1 characters of [A-Za-z0-9._-], no
 * leading '.'.  @name holds at least KFAB_AV_NAME_MAX bytes or a NUL.
 */
static int kfab_av_check_name(const char *name)
{
	size_t len = strnlen(name, KFAB_AV_NAME_MAX), i;

	if (len == KFAB_AV_NAME_MAX)
		return -ENAMETOOLONG;
	if (!len || name[0] == '.')
		return -EINVAL;
	/* ASCII only: the kernel's isalnum() takes Latin-1 letters too. */
	for (i = 0; i < len; i++)
		if (!isascii(name[i]) || (!isalnum(name[i]) &&
					  !strchr("._-", name[i])))
			return -EINVAL;
	return 0;
}

/* A user's name into @name (KFAB_AV_NAME_MAX bytes), checked. */
static int kfab_av_copy_name(char *name, u64 uname)
{
	long len;

	len = strncpy_from_user(name, u64_to_user_ptr(uname), KFAB_AV_NAME_MAX);
	if (len < 0)
		return len;
	return kfab_av_check_name(name);
}

/* Attach @av to a new unnamed table. */
static int kfab_av_attach_unnamed(struct kfab_ctx *ctx, struct kfab_av *av,
				  const struct kfab_av_open *cmd)
{
	struct kfab_av_table *t;

	t = kfab_av_table_alloc(ctx, cmd->type ?: KFAB_AV_TYPE_TABLE,
				kfab_av_capacity(cmd->count));
	if (IS_ERR(t))
		return PTR_ERR(t);
	mutex_lock(&kfab_av_lock);
	kfab_av_table_publish(t);
	t->openers = 1;
	list_add(&av->opener, &t->handles);
	av->table = t;
	mutex_unlock(&kfab_av_lock);
	return 0;
}

/*
 * Attach @av to the named table @name, creating it unless @cmd forbids.
 * Finding and creating happen under kfab_av_lock, so two openers racing on
 * a new name get one table.
 */
static int kfab_av_attach_named(struct kfab_ctx *ctx, struct kfab_av *av,
				const struct kfab_av_open *cmd,
				const char *name, bool *created)
{
	bool read_only = cmd->flags & KFAB_AV_OPEN_READ_ONLY;
	struct kfab_av_info info;
	struct kfab_av_user *user;
	struct kfab_av_table *t;
	kuid_t uid = current_fsuid();
	kgid_t gid = current_fsgid();
	u32 capacity;
	int rc;

	if (cmd->flags & KFAB_AV_OPEN_SET_OWNER) {
		uid = make_kuid(current_user_ns(), cmd->uid);
		gid = make_kgid(current_user_ns(), cmd->gid);
		if (!uid_valid(uid) || !gid_valid(gid))
			return -EINVAL;
	}

	mutex_lock(&kfab_av_lock);
	t = kfab_av_find(name);
	if (t) {
		rc = -EEXIST;
		if (cmd->flags & KFAB_AV_OPEN_EXCL)
			goto out_unlock;
		rc = -EACCES;
		if (!kfab_av_may(t, read_only ? MAY_READ : MAY_READ | MAY_WRITE))
			goto out_unlock;
		rc = -EINVAL;
		if (cmd->type && cmd->type != t->type)
			goto out_unlock;
		kref_get(&t->ref);
	} else {
		rc = -ENOENT;
		if (cmd->flags & (KFAB_AV_OPEN_NO_CREATE | KFAB_AV_OPEN_READ_ONLY))
			goto out_unlock;
		capacity = kfab_av_capacity(cmd->count);
		user = kfab_av_user_charge(uid, capacity);
		if (IS_ERR(user)) {
			rc = PTR_ERR(user);
			goto out_unlock;
		}
		t = kfab_av_table_alloc(ctx, cmd->type ?: KFAB_AV_TYPE_TABLE,
					capacity);
		if (IS_ERR(t)) {
			kfab_av_user_uncharge(user, capacity);
			rc = PTR_ERR(t);
			goto out_unlock;
		}
		strscpy(t->name, name, sizeof(t->name));
		t->charged = user;
		t->uid = uid;
		t->gid = gid;
		t->mode = cmd->mode;
		t->persist = cmd->flags & KFAB_AV_OPEN_PERSIST;
		/* The creator's value, or one of ours: never 0. */
		t->map_addr = cmd->map_addr ?: t->serial << PAGE_SHIFT;
		/* kref_init()'s reference is the name's; this one, av's. */
		t->linked = true;
		kref_get(&t->ref);
		kfab_av_table_publish(t);
		kfab_av_info_of(t, &info);
		*created = true;
	}
	t->openers++;
	list_add_tail(&av->opener, &t->handles);
	av->table = t;
	/* The creator may change what it created, whatever the mode. */
	av->read_only = read_only;
	rc = 0;
out_unlock:
	mutex_unlock(&kfab_av_lock);
	if (*created)
		kfab_nl_notify_av(&info, KFAB_NL_CMD_AV_NEW);
	return rc;
}

/*
 * Detach a handle from its table.  The last handle of a named AV takes the
 * name with it unless the AV persists; with @unlink (the open that created
 * the AV failed) even then.  A handle another file opened meanwhile keeps
 * the name in every case.
 */
static void kfab_av_detach(struct kfab_av *av, bool unlink)
{
	struct kfab_av_table *t = av->table;
	bool drop_name = false;

	mutex_lock(&kfab_av_lock);
	list_del(&av->opener);
	t->openers--;
	if (t->linked && !t->openers && (unlink || !t->persist)) {
		t->linked = false;
		drop_name = true;
	}
	mutex_unlock(&kfab_av_lock);

	if (drop_name) {
		kfab_av_notify_gone(t, t->name);
		kfab_av_table_put(t);
	}
	kfab_av_table_put(t);
	av->table = NULL;
}

void kfab_av_destroy(struct kfab_object *obj)
{
	struct kfab_av *av = to_kfab_av(obj);

	if (av->mmap_offset)
		kfab_region_withdraw(obj->ctx, av->mmap_offset);
	if (av->table)
		kfab_av_detach(av, false);
	kfree(av);
}

/* The arguments of an open, user space's or a kernel caller's. */
static int kfab_av_open_check(const struct kfab_av_open *cmd, bool named)
{
	if (cmd->flags & ~KFAB_AV_OPEN_NAMED_FLAGS)
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->type > KFAB_AV_TYPE_MAP ||
	    cmd->count > kfab_av_max_count)
		return -EINVAL;
	if (!named)
		return cmd->flags ? -EINVAL : 0;
	if (cmd->mode & ~0777)
		return -EINVAL;
	/* Read-only or open-only calls never create: creation flags clash. */
	if ((cmd->flags & (KFAB_AV_OPEN_READ_ONLY | KFAB_AV_OPEN_NO_CREATE)) &&
	    (cmd->flags & KFAB_AV_OPEN_CREATE_FLAGS))
		return -EINVAL;
	if ((cmd->flags & KFAB_AV_OPEN_PERSIST) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if ((cmd->flags & KFAB_AV_OPEN_SET_OWNER) && !capable(CAP_CHOWN))
		return -EPERM;
	return 0;
}

/**
 * kfab_av_create() - a new AV handle, not yet published in @ctx
 * @ctx: the owner's context
 * @domain: the parent (the handle takes a user of it)
 * @cmd: the open's arguments, checked by kfab_av_open_check()
 * @name: a named AV's name, checked, or NULL
 * @created: out: the call created the named AV
 *
 * The one constructor of KFAB_IOC_AV_OPEN and kfab_av_kopen().  The caller
 * publishes the handle with kfab_object_finalize(), or drops it with
 * kfab_av_abort().  May sleep.
 *
 * Return: the handle or an ERR_PTR, as KFAB_IOC_AV_OPEN documents.
 */
static struct kfab_av *kfab_av_create(struct kfab_ctx *ctx,
				      struct kfab_object *domain,
				      const struct kfab_av_open *cmd,
				      const char *name, bool *created)
{
	struct kfab_object *obj;
	struct kfab_av *av;
	int rc;

	*created = false;
	obj = kfab_object_alloc(ctx, sizeof(struct kfab_av), KFAB_OBJ_AV,
				domain);
	if (IS_ERR(obj))
		return ERR_CAST(obj);
	av = to_kfab_av(obj);
	INIT_LIST_HEAD(&av->opener);
	if (name)
		rc = kfab_av_attach_named(ctx, av, cmd, name, created);
	else
		rc = kfab_av_attach_unnamed(ctx, av, cmd);
	if (rc) {
		kfab_object_abort(ctx, obj);
		return ERR_PTR(rc);
	}
	return av;
}

/* Undo kfab_av_create(): a named AV it created goes with it. */
static void kfab_av_abort(struct kfab_ctx *ctx, struct kfab_av *av,
			  bool created)
{
	if (created)
		kfab_av_detach(av, true);
	kfab_object_abort(ctx, &av->obj);
}

int kfab_ioctl_av_open(struct kfab_ucmd *ucmd)
{
	struct kfab_av_open *cmd = ucmd->cmd;
	struct kfab_ctx *ctx = ucmd->ctx;
	char name[KFAB_AV_NAME_MAX];
	struct kfab_object *domain;
	struct kfab_av_table *t;
	bool created;
	struct kfab_av *av;
	int rc;

	rc = kfab_av_open_check(cmd, cmd->name);
	if (rc)
		return rc;
	if (cmd->name) {
		rc = kfab_av_copy_name(name, cmd->name);
		if (rc)
			return rc;
	}

	domain = kfab_object_get(ctx, cmd->domain_id, KFAB_OBJ_DOMAIN);
	if (!domain)
		return -ENOENT;
	av = kfab_av_create(ctx, domain, cmd, cmd->name ? name : NULL,
			    &created);
	kfab_object_put(domain);
	if (IS_ERR(av))
		return PTR_ERR(av);
	t = av->table;
	rc = kfab_region_offer(ctx, t->region, &av->mmap_offset);
	if (rc)
		goto err_abort;

	cmd->out_av_id = av->obj.id;
	cmd->out_type = t->type;
	cmd->out_count = t->capacity;
	cmd->out_flags = (created ? KFAB_AV_OUT_CREATED : 0) |
			 (av->read_only ? KFAB_AV_OUT_READ_ONLY : 0);
	cmd->__reserved2 = 0;
	cmd->out_map_addr = t->map_addr;
	cmd->out_region.offset = av->mmap_offset;
	cmd->out_region.size = t->region->size;
	rc = kfab_ucmd_respond(ucmd, sizeof(*cmd));
	if (rc)
		goto err_abort;
	kfab_object_finalize(ctx, &av->obj);
	return 0;

err_abort:
	kfab_av_abort(ctx, av, created);
	return rc;
}

/**
 * kfab_av_kopen() - open an AV for a kernel consumer
 * @ctx: the kernel consumer's context
 * @domain: the parent domain (a user is taken for the AV)
 * @name: a named AV's name, or NULL for an unnamed one
 * @flags: KFAB_AV_OPEN_READ_ONLY, KFAB_AV_OPEN_NO_CREATE, KFAB_AV_OPEN_EXCL
 * @count: entries wanted, 0 for the default
 * @out: the handle, published in @ctx with the table's reference only
 *
 * A named AV is found or created as for user space; the owner and mode
 * checks use the caller's credentials (module init and kernel threads run
 * as root).  Nothing is offered to mmap.  May sleep.
 *
 * Return: 0 or a negative errno, as for KFAB_IOC_AV_OPEN.
 */
int kfab_av_kopen(struct kfab_ctx *ctx, struct kfab_object *domain,
		  const char *name, u32 flags, u32 count, struct kfab_av **out)
{
	struct kfab_av_open cmd = {
		.flags = flags,
		.count = count,
		.mode = 0600,
	};
	struct kfab_av *av;
	bool created;
	int rc;

	if (flags & ~(KFAB_AV_OPEN_READ_ONLY | KFAB_AV_OPEN_NO_CREATE |
		      KFAB_AV_OPEN_EXCL))
		return -EOPNOTSUPP;
	rc = kfab_av_open_check(&cmd, name);
	if (!rc && name)
		rc = kfab_av_check_name(name);
	if (rc)
		return rc;

	av = kfab_av_create(ctx, domain, &cmd, name, &created);
	if (IS_ERR(av))
		return PTR_ERR(av);
	kfab_object_finalize(ctx, &av->obj);
	*out = av;
	return 0;
}

/* Get an AV handle of this file that may change its table. */
static struct kfab_av *kfab_av_get_writable(struct kfab_ctx *ctx, u32 id,
					    int *rc)
{
	struct kfab_object *obj;

	obj = kfab_object_get(ctx, id, KFAB_OBJ_AV);
	if (!obj) {
		*rc = -ENOENT;
		return NULL;
	}
	if (to_kfab_av(obj)->read_only) {
		kfab_object_put(obj);
		*rc = -EPERM;
		return NULL;
	}
	return to_kfab_av(obj);
}

/*
 * The common start of an insert or a remove: a writable handle and, for a
 * non-zero @count, a kernel copy of the @count elements of @size bytes that
 * user space passes at @uptr.  On success the caller puts the handle and
 * kvfree()s the copy.
 */
static int kfab_av_batch_get(struct kfab_ucmd *ucmd, u32 av_id, u32 count,
			     u64 uptr, size_t size, struct kfab_av **av,
			     void **copy)
{
	int rc;

	if (count > KFAB_AV_BATCH_MAX)
		return -E2BIG;
	*av = kfab_av_get_writable(ucmd->ctx, av_id, &rc);
	if (!*av)
		return rc;
	*copy = NULL;
	if (!count)
		return 0;
	*copy = vmemdup_user(u64_to_user_ptr(uptr), array_size(count, size));
	if (IS_ERR(*copy)) {
		kfab_object_put(&(*av)->obj);
		return PTR_ERR(*copy);
	}
	return 0;
}

/* Write entry @i of the mapped table: the writer side of its seqcount. */
static void kfab_av_entry_publish(struct kfab_av_table *t, u32 i,
				  const struct kfab_addr *addr, u32 flags)
{
	struct kfab_av_entry *e = &t->entries[i];
	u32 seq = e->seq;	/* user space cannot write the region */

	WRITE_ONCE(e->seq, seq + 1);
	/* The odd seq before the entry: pairs with the reader's smp_rmb(). */
	smp_wmb();
	WRITE_ONCE(e->flags, flags);
	/* Readers copy it between seq loads and retry a torn copy. */
	memcpy(&e->addr, addr, sizeof(e->addr));
	/* The entry before the even seq: pairs with the reader's acquire. */
	smp_store_release(&e->seq, seq + 2);
}

/* After a batch: the header's view, released after the entries. */
static void kfab_av_header_publish(struct kfab_av_table *t)
{
	WRITE_ONCE(t->hdr->used, t->used);
	/* Senders' lookups read it unlocked (kfab_av_generation()). */
	WRITE_ONCE(t->generation, t->generation + 1);
	/* The entries before the generation: pairs with the reader's acquire. */
	smp_store_release(&t->hdr->generation, t->generation);
	kfab_av_changed(t);
}

static int kfab_av_insert_one(struct kfab_ctx *ctx, struct kfab_av_table *t,
			      const struct kfab_addr *addr, u32 *index)
{
	struct kfab_av_slot *slot;
	unsigned long i;
	int rc;

	lockdep_assert_held(&t->lock);
	if (!kfab_addr_valid(addr))
		return -EINVAL;
	slot = rhashtable_lookup_fast(&t->by_addr, addr, kfab_av_hash_params);
	if (slot) {
		*index = slot->index;
		return 0;
	}
	i = find_first_zero_bit(t->used_map, t->capacity);
	if (i >= t->capacity)
		return -ENOSPC;
	if (kfab_fault(ctx, KFAB_FAULT_ALLOC))
		return -ENOMEM;
	slot = &t->slots[i];
	slot->addr = *addr;
	slot->index = i;
	rc = rhashtable_insert_fast(&t->by_addr, &slot->node,
				    kfab_av_hash_params);
	if (rc)
		return -ENOMEM;
	__set_bit(i, t->used_map);
	t->used++;
	kfab_av_entry_publish(t, i, addr, KFAB_AV_ENTRY_VALID);
	*index = i;
	return 0;
}

/**
 * kfab_av_insert_batch() - insert addresses into the table of a handle
 * @ctx: whose fault points count
 * @av: a writable handle
 * @addrs: @count addresses (kernel memory)
 * @count: how many
 * @indices: out: the index of each, KFAB_AV_INDEX_NONE where it failed
 * @errors: out: 0 or a negative errno for each
 *
 * An address the table holds already keeps its index.  May sleep.
 *
 * Return: how many were inserted.
 */
u32 kfab_av_insert_batch(struct kfab_ctx *ctx, struct kfab_av *av,
			 const struct kfab_addr *addrs, u32 count,
			 u32 *indices, s32 *errors)
{
	struct kfab_av_table *t = av->table;
	u32 i, inserted = 0;

	mutex_lock(&t->lock);
	for (i = 0; i < count; i++) {
		errors[i] = kfab_av_insert_one(ctx, t, &addrs[i], &indices[i]);
		if (errors[i])
			indices[i] = KFAB_AV_INDEX_NONE;
		else
			inserted++;
	}
	if (inserted)
		kfab_av_header_publish(t);
	mutex_unlock(&t->lock);
	return inserted;
}

int kfab_ioctl_av_insert(struct kfab_ucmd *ucmd)
{
	struct kfab_av_insert *cmd = ucmd->cmd;
	struct kfab_addr *addrs = NULL;
	u32 *indices = NULL;
	s32 *errors = NULL;
	struct kfab_av *av;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	rc = kfab_av_batch_get(ucmd, cmd->av_id, cmd->count, cmd->addrs,
			       sizeof(*addrs), &av, (void **)&addrs);
	if (rc)
		return rc;

	cmd->out_inserted = 0;
	if (!cmd->count)
		goto respond;
	rc = -ENOMEM;
	indices = kfab_alloc(ucmd->ctx, kvmalloc_array(cmd->count,
						       sizeof(*indices),
						       GFP_KERNEL));
	errors = kfab_alloc(ucmd->ctx, kvmalloc_array(cmd->count,
						      sizeof(*errors),
						      GFP_KERNEL));
	if (!indices || !errors)
		goto out;

	cmd->out_inserted = kfab_av_insert_batch(ucmd->ctx, av, addrs,
						 cmd->count, indices, errors);

	rc = -EFAULT;
	if (cmd->indices &&
	    copy_to_user(u64_to_user_ptr(cmd->indices), indices,
			 array_size(cmd->count, sizeof(*indices))))
		goto out;
	if (cmd->errors &&
	    copy_to_user(u64_to_user_ptr(cmd->errors), errors,
			 array_size(cmd->count, sizeof(*errors))))
		goto out;
respond:
	rc = kfab_ucmd_respond(ucmd, sizeof(*cmd));
out:
	kvfree(errors);
	kvfree(indices);
	kvfree(addrs);
	kfab_object_put(&av->obj);
	return rc;
}

/**
 * kfab_av_remove_batch() - remove entries from the table of a handle
 * @av: a writable handle
 * @indices: @count indices (kernel memory)
 * @count: how many
 *
 * All or nothing.  May sleep.
 *
 * Return: 0; -EINVAL when an index names no entry or comes twice; -ENOMEM.
 */
int kfab_av_remove_batch(struct kfab_av *av, const u32 *indices, u32 count)
{
	struct kfab_av_table *t = av->table;
	unsigned long *seen;
	u32 i;
	int rc;

	if (!count)
		return 0;
	seen = bitmap_zalloc(t->capacity, GFP_KERNEL);
	if (!seen)
		return -ENOMEM;

	mutex_lock(&t->lock);
	/* All or nothing: check every index before removing any. */
	rc = -EINVAL;
	for (i = 0; i < count; i++)
		if (indices[i] >= t->capacity ||
		    !test_bit(indices[i], t->used_map) ||
		    __test_and_set_bit(indices[i], seen))
			goto out_unlock;
	for (i = 0; i < count; i++) {
		struct kfab_av_slot *slot = &t->slots[indices[i]];

		rhashtable_remove_fast(&t->by_addr, &slot->node,
				       kfab_av_hash_params);
		__clear_bit(indices[i], t->used_map);
		t->used--;
		kfab_av_entry_publish(t, indices[i], &slot->addr, 0);
	}
	kfab_av_header_publish(t);
	rc = 0;
out_unlock:
	mutex_unlock(&t->lock);
	bitmap_free(seen);
	return rc;
}

int kfab_ioctl_av_remove(struct kfab_ucmd *ucmd)
{
	struct kfab_av_remove *cmd = ucmd->cmd;
	u32 *indices = NULL;
	struct kfab_av *av;
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	rc = kfab_av_batch_get(ucmd, cmd->av_id, cmd->count, cmd->indices,
			       sizeof(*indices), &av, (void **)&indices);
	if (rc)
		return rc;
	rc = kfab_av_remove_batch(av, indices, cmd->count);
	kvfree(indices);
	kfab_object_put(&av->obj);
	return rc;
}

/**
 * kfab_av_unlink_name() - take a named AV's name away
 * @name: the name, checked by the caller
 * @admin: the caller may unlink any name; else only its own (fsuid)
 *
 * The table lives on while handles have it open.  Return: 0, -ENOENT
 * when no AV has the name, -EPERM.
 */
int kfab_av_unlink_name(const char *name, bool admin)
{
	struct kfab_av_table *t;

	mutex_lock(&kfab_av_lock);
	t = kfab_av_find(name);
	if (!t) {
		mutex_unlock(&kfab_av_lock);
		return -ENOENT;
	}
	if (!admin && !uid_eq(current_fsuid(), t->uid)) {
		mutex_unlock(&kfab_av_lock);
		return -EPERM;
	}
	t->linked = false;
	/* The name's reference becomes ours until the event is out. */
	mutex_unlock(&kfab_av_lock);
	kfab_av_notify_gone(t, name);
	kfab_av_table_put(t);
	return 0;
}

int kfab_ioctl_av_unlink(struct kfab_ucmd *ucmd)
{
	struct kfab_av_unlink *cmd = ucmd->cmd;
	char name[KFAB_AV_NAME_MAX];
	int rc;

	if (cmd->flags)
		return -EOPNOTSUPP;
	rc = kfab_av_copy_name(name, cmd->name);
	if (rc)
		return rc;
	return kfab_av_unlink_name(name, capable(CAP_SYS_ADMIN));
}

/**
 * kfab_av_addr_of() - the address at an index of an AV
 * @av: a handle
 * @index: the index (an fi_addr_t without receive-context bits)
 * @addr: out: the address
 *
 * May sleep (the table's lock).  Return: 0, or -EINVAL for an index that
 * names no entry.
 */
int kfab_av_addr_of(struct kfab_av *av, u64 index, struct kfab_addr *addr)
{
	struct kfab_av_table *t = av->table;
	int rc = -EINVAL;

	mutex_lock(&t->lock);
	if (index < t->capacity && test_bit(index, t->used_map)) {
		*addr = t->slots[index].addr;
		rc = 0;
	}
	mutex_unlock(&t->lock);
	return rc;
}

/**
 * kfab_av_generation() - how many times a handle's table has changed
 * @av: a handle
 *
 * Lockless: a result looked up under the table's lock holds while this
 * stays the same (every insert and remove moves it, under that lock).
 */
u64 kfab_av_generation(struct kfab_av *av)
{
	return READ_ONCE(av->table->generation);
}

/**
 * kfab_av_index_of() - the index of an address in an AV
 * @av: a handle
 * @addr: the address
 *
 * Return: its index, or KFAB_CQ_ADDR_NOTAVAIL when the AV does not hold it.
 */
u64 kfab_av_index_of(struct kfab_av *av, const struct kfab_addr *addr)
{
	struct kfab_av_table *t = av->table;
	struct kfab_av_slot *slot;
	u64 index = KFAB_CQ_ADDR_NOTAVAIL;

	mutex_lock(&t->lock);
	slot = rhashtable_lookup_fast(&t->by_addr, addr, kfab_av_hash_params);
	if (slot)
		index = slot->index;
	mutex_unlock(&t->lock);
	return index;
}

unsigned int kfab_av_count(bool named_only)
{
	unsigned int n;

	mutex_lock(&kfab_av_lock);
	n = named_only ? kfab_av_nr_named : kfab_av_nr;
	mutex_unlock(&kfab_av_lock);
	return n;
}

static const char *kfab_av_type_name(u32 type)
{
	return type == KFAB_AV_TYPE_MAP ? "map" : "table";
}

static void kfab_av_debugfs_show_table(struct seq_file *s,
				       struct kfab_av_table *t)
{
	struct kfab_av *av;
	unsigned long i;

	seq_printf(s, "av %llu name %s type %s owner %u group %u mode %04o persist %s linked %s openers %u capacity %u used %u generation %llu\n",
		   t->serial, t->name[0] ? t->name : "-",
		   kfab_av_type_name(t->type),
		   from_kuid(&init_user_ns, t->uid),
		   from_kgid(&init_user_ns, t->gid), t->mode,
		   t->persist ? "yes" : "no", t->linked ? "yes" : "no",
		   t->openers, t->capacity, t->used, t->generation);
	list_for_each_entry(av, &t->handles, opener)
		seq_printf(s, "\topener context %u pid %d handle %u %s\n",
			   av->obj.ctx->id, av->obj.ctx->tgid, av->obj.id,
			   av->read_only ? "ro" : "rw");
	mutex_lock(&t->lock);
	for_each_set_bit(i, t->used_map, t->capacity) {
		seq_printf(s, "\tentry %lu ", i);
		kfab_addr_show(s, &t->slots[i].addr);
		seq_putc(s, '\n');
	}
	mutex_unlock(&t->lock);
}

/* debugfs kfab/avs: every AV of the node, named or not. */
void kfab_av_debugfs_show(struct seq_file *s)
{
	struct kfab_av_table *t;

	mutex_lock(&kfab_av_lock);
	list_for_each_entry(t, &kfab_av_list, node)
		kfab_av_debugfs_show_table(s, t);
	mutex_unlock(&kfab_av_lock);
}

/**
 * kfab_av_for_each() - every AV table of the node, for netlink dumps
 * @pos: tables to skip; advanced past each table @fn took
 * @fn: called with a snapshot of each table, under kfab_av_lock
 * @arg: @fn's
 *
 * Return: 0 after the last table, or what @fn returned to stop.
 */
int kfab_av_for_each(unsigned long *pos, kfab_av_info_fn fn, void *arg)
{
	struct kfab_av_info info;
	struct kfab_av_table *t;
	unsigned long i = 0;
	int rc = 0;

	mutex_lock(&kfab_av_lock);
	list_for_each_entry(t, &kfab_av_list, node) {
		if (i++ < *pos)
			continue;
		kfab_av_info_of(t, &info);
		rc = fn(arg, &info);
		if (rc)
			break;
		(*pos)++;
	}
	mutex_unlock(&kfab_av_lock);
	return rc;
}

/* netlink: a handle's table and access (the xarray lock held: no sleep). */
int kfab_av_nl_fill(struct sk_buff *skb, struct kfab_object *obj)
{
	struct kfab_av *av = to_kfab_av(obj);

	if (kfab_nl_put_u64(skb, KFAB_NL_ATTR_AV_SERIAL, av->table->serial))
		return -EMSGSIZE;
	if (av->read_only && nla_put_flag(skb, KFAB_NL_ATTR_READ_ONLY))
		return -EMSGSIZE;
	return 0;
}

int kfab_av_init(void)
{
	if (!kfab_av_max_count || kfab_av_default_count > kfab_av_max_count) {
		pr_err("kfab: av_default_count must be at most av_max_count, which must be at least 1\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * Module unload: no file is open, so only persistent named AVs are left,
 * each held by its name alone.
 */
void kfab_av_exit(void)
{
	struct kfab_av_table *t, *found;

	/* "changed" events still queued hold their tables. */
	kfab_nl_flush();
	for (;;) {
		found = NULL;
		mutex_lock(&kfab_av_lock);
		list_for_each_entry(t, &kfab_av_list, node) {
			if (t->linked && !t->openers) {
				t->linked = false;
				found = t;
				break;
			}
		}
		mutex_unlock(&kfab_av_lock);
		if (!found)
			break;
		kfab_av_table_put(found);
	}
	/* Anything left is a reference leak inside kfab: keep it, say so. */
	WARN_ON(!list_empty(&kfab_av_list));
}
