// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The generic netlink family "kfab" (uapi/linux/kfab_netlink.h,
 * Documentation/netlink.rst): dumps of contexts, objects, AVs, peers,
 * listeners and the allow-list, node totals, unlinking a named AV, and
 * the events multicast group.
 *
 * This file decides who sees what (struct kfab_nl_reader); the objects put
 * their own attributes (kfab_object_ops.nl_fill, kfab_av_for_each(),
 * kfab_peer_for_each()).  Dumps resume from a cursor in cb->args: a
 * context id (contexts are listed in id order), an object id within it, or
 * a position in the AV, peer, listener and allow lists.  Locks taken
 * here: kfab_ctx_lock, then a context's xarray lock (kfab.h "Locking" 1
 * and 6); av.c, peer.c and node.c take their own.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/pid_namespace.h>
#include <linux/user_namespace.h>
#include <net/genetlink.h>
#include <net/sock.h>

#include <linux/kfab_netlink.h>

#include "kfab.h"
#include "net.h"

static struct genl_family kfab_nl_family;

/**
 * struct kfab_nl_reader - who reads, and how ids are shown to them
 * @all: CAP_NET_ADMIN or CAP_SYS_ADMIN in the initial user namespace
 * @ns_admin: the same in the user namespace of @net
 * @net: the socket's network namespace
 * @user_ns: the socket opener's user namespace
 * @euid: the socket opener's
 * @pid_ns: the pid namespace pids are shown in
 */
struct kfab_nl_reader {
	bool all;
	bool ns_admin;
	struct net *net;
	struct user_namespace *user_ns;
	kuid_t euid;
	struct pid_namespace *pid_ns;
};

/* The reader of events: the initial namespaces. */
static void kfab_nl_reader_init_ns(struct kfab_nl_reader *r)
{
	*r = (struct kfab_nl_reader) {
		.all = true,
		.ns_admin = true,
		.net = &init_net,
		.user_ns = &init_user_ns,
		.euid = GLOBAL_ROOT_UID,
		.pid_ns = &init_pid_ns,
	};
}

/*
 * The reader of a request: its socket's opener (a socket handed to
 * another process keeps its opener's view), capabilities checked as
 * netlink does, on the opener and on the caller both.
 */
static int kfab_nl_reader_of(struct kfab_nl_reader *r, struct sk_buff *skb)
{
	struct sock *sk = NETLINK_CB(skb).sk;
	const struct cred *cred;

	if (!sk || !sk->sk_socket || !sk->sk_socket->file)
		return -EPERM;
	cred = sk->sk_socket->file->f_cred;
	*r = (struct kfab_nl_reader) {
		.all = netlink_capable(skb, CAP_NET_ADMIN) ||
		       netlink_capable(skb, CAP_SYS_ADMIN),
		.ns_admin = netlink_net_capable(skb, CAP_NET_ADMIN) ||
			    netlink_net_capable(skb, CAP_SYS_ADMIN),
		.net = sock_net(sk),
		.user_ns = cred->user_ns,
		.euid = cred->euid,
		.pid_ns = task_active_pid_ns(current),
	};
	return 0;
}

/* @ns is @ancestor or below it (the kernel's in_userns(), not exported). */
static bool kfab_nl_userns_within(const struct user_namespace *ancestor,
				  const struct user_namespace *ns)
{
	while (ns->level > ancestor->level)
		ns = ns->parent;
	return ns == ancestor;
}

/* The permission rule of uapi/linux/kfab_netlink.h, for one context. */
static bool kfab_nl_may_see(const struct kfab_nl_reader *r,
			    const struct kfab_ctx *ctx)
{
	if (r->all)
		return true;
	if (r->ns_admin && net_eq(ctx->net, r->net) &&
	    kfab_nl_userns_within(r->net->user_ns, ctx->user_ns))
		return true;
	return uid_eq(ctx->uid, r->euid) &&
	       kfab_nl_userns_within(r->user_ns, ctx->user_ns);
}

/* The same for an AV: its owner, or the admin its owner maps into. */
static bool kfab_nl_may_see_av(const struct kfab_nl_reader *r,
			       const struct kfab_av_info *info)
{
	if (r->all)
		return true;
	if (r->ns_admin && kuid_has_mapping(r->net->user_ns, info->uid))
		return true;
	return uid_eq(info->uid, r->euid);
}

int kfab_nl_put_u64(struct sk_buff *skb, int type, u64 value)
{
	return nla_put_u64_64bit(skb, type, value, KFAB_NL_ATTR_PAD);
}

static int kfab_nl_put_ctx(struct sk_buff *skb, const struct kfab_nl_reader *r,
			   const struct kfab_ctx *ctx)
{
	pid_t pid = ctx->pid ? pid_nr_ns(ctx->pid, r->pid_ns) : 0;

	if (nla_put_u32(skb, KFAB_NL_ATTR_CTX_ID, ctx->id) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_PID, pid) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_UID,
			from_kuid_munged(r->user_ns, ctx->uid)) ||
	    nla_put_string(skb, KFAB_NL_ATTR_COMM, ctx->comm) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_CGROUP_ID, ctx->cgroup_id) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_NETNS_INO, ctx->net->ns.inum) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_USERNS_INO, ctx->user_ns->ns.inum))
		return -EMSGSIZE;
	if (ctx->pid)
		return nla_put_u32(skb, KFAB_NL_ATTR_PIDNS_INO,
				   ns_of_pid(ctx->pid)->ns.inum) ? -EMSGSIZE : 0;
	return nla_put_flag(skb, KFAB_NL_ATTR_KERNEL) ? -EMSGSIZE : 0;
}

static int kfab_nl_put_av(struct sk_buff *skb, const struct kfab_nl_reader *r,
			  const struct kfab_av_info *info)
{
	if (kfab_nl_put_u64(skb, KFAB_NL_ATTR_AV_SERIAL, info->serial) ||
	    (info->name[0] &&
	     nla_put_string(skb, KFAB_NL_ATTR_AV_NAME, info->name)) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_AV_TYPE, info->type) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_UID,
			from_kuid_munged(r->user_ns, info->uid)) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_AV_GID,
			from_kgid_munged(r->user_ns, info->gid)) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_AV_MODE, info->mode) ||
	    (info->persist && nla_put_flag(skb, KFAB_NL_ATTR_AV_PERSIST)) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_AV_OPENERS, info->openers) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_ENTRIES, info->capacity) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_AV_USED, info->used) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_AV_GENERATION, info->generation))
		return -EMSGSIZE;
	return 0;
}

static int kfab_nl_put_obj(struct sk_buff *skb, struct kfab_ctx *ctx,
			   struct kfab_object *obj)
{
	const struct kfab_object_ops *ops = kfab_object_ops_of(obj);

	if (nla_put_u32(skb, KFAB_NL_ATTR_CTX_ID, ctx->id) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_OBJ_ID, obj->id) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_OBJ_TYPE, obj->type) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_OBJ_USERS,
			refcount_read(&obj->users)) ||
	    (obj->parent &&
	     nla_put_u32(skb, KFAB_NL_ATTR_DOMAIN_ID, obj->parent->id)))
		return -EMSGSIZE;
	return ops->nl_fill ? ops->nl_fill(skb, obj) : 0;
}

/* The header and end of one message of a dump. */
static void *kfab_nl_dump_start(struct sk_buff *skb,
				struct netlink_callback *cb, u8 cmd)
{
	return genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			   &kfab_nl_family, NLM_F_MULTI, cmd);
}

static int kfab_nl_dump_end(struct sk_buff *skb, void *hdr, int rc)
{
	if (rc) {
		genlmsg_cancel(skb, hdr);
		return rc;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/*
 * What a dump callback returns after a fill returned @rc: the bytes so far
 * (the core calls again, until 0), or the error when not even one message
 * fitted an empty buffer.
 */
static int kfab_nl_dump_done(struct sk_buff *skb, int rc)
{
	if (rc == -EMSGSIZE && skb->len)
		return skb->len;
	return rc ?: skb->len;
}

/* ---- contexts and their objects ---- */

/* Puts one context's records: the context, or its objects. */
typedef int (*kfab_nl_ctx_fill_fn)(struct sk_buff *skb,
				   struct netlink_callback *cb,
				   const struct kfab_nl_reader *r,
				   struct kfab_ctx *ctx);

/*
 * The contexts the reader may see (@only: just that id), from id
 * cb->args[0] on.  cb->args[1] is @fill's cursor inside one context,
 * reset as the walk moves to the next.
 */
static int kfab_nl_ctx_walk(struct sk_buff *skb, struct netlink_callback *cb,
			    u32 only, kfab_nl_ctx_fill_fn fill)
{
	struct kfab_nl_reader r;
	struct kfab_ctx *ctx;
	int rc;

	rc = kfab_nl_reader_of(&r, cb->skb);
	if (rc)
		return rc;
	mutex_lock(&kfab_ctx_lock);
	list_for_each_entry(ctx, &kfab_ctx_list, node) {
		if (ctx->id < cb->args[0] || (only && ctx->id != only) ||
		    !kfab_nl_may_see(&r, ctx))
			continue;
		if (ctx->id != cb->args[0]) {
			cb->args[0] = ctx->id;
			cb->args[1] = 0;
		}
		rc = fill(skb, cb, &r, ctx);
		if (rc)
			break;
		cb->args[0] = ctx->id + 1;
		cb->args[1] = 0;
	}
	mutex_unlock(&kfab_ctx_lock);
	return kfab_nl_dump_done(skb, rc);
}

/*
 * The memory a context charges: what its endpoints pin now, and the
 * kernel memory it maps (rings, AV tables).  Summed here, at dump time,
 * so the data path writes no line a context's endpoints would share.
 */
static int kfab_nl_put_ctx_mem(struct sk_buff *skb, struct kfab_ctx *ctx)
{
	struct kfab_region *region;
	struct kfab_object *obj;
	u64 pinned = 0, kbuf = 0;
	unsigned long index;

	xa_lock(&ctx->objects);
	xa_for_each(&ctx->objects, index, obj)
		if (obj->type == KFAB_OBJ_EP)
			pinned += kfab_ep_pinned(obj);
	xa_unlock(&ctx->objects);
	xa_lock(&ctx->regions);
	xa_for_each(&ctx->regions, index, region)
		kbuf += region->size;
	xa_unlock(&ctx->regions);
	if (kfab_nl_put_u64(skb, KFAB_NL_ATTR_PINNED_BYTES, pinned) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_KBUF_BYTES, kbuf))
		return -EMSGSIZE;
	return 0;
}

static int kfab_nl_ctx_fill(struct sk_buff *skb, struct netlink_callback *cb,
			    const struct kfab_nl_reader *r,
			    struct kfab_ctx *ctx)
{
	void *hdr = kfab_nl_dump_start(skb, cb, KFAB_NL_CMD_CTX_GET);
	int rc;

	if (!hdr)
		return -EMSGSIZE;
	rc = kfab_nl_put_ctx(skb, r, ctx) ?: kfab_nl_put_ctx_mem(skb, ctx);
	return kfab_nl_dump_end(skb, hdr, rc);
}

static int kfab_nl_ctx_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return kfab_nl_ctx_walk(skb, cb, 0, kfab_nl_ctx_fill);
}

/* One context's objects from id cb->args[1] on. */
static int kfab_nl_ctx_objs_fill(struct sk_buff *skb,
				 struct netlink_callback *cb,
				 const struct kfab_nl_reader *r,
				 struct kfab_ctx *ctx)
{
	struct kfab_object *obj;
	unsigned long index;
	void *hdr;
	int rc = 0;

	xa_lock(&ctx->objects);
	xa_for_each_start(&ctx->objects, index, obj, cb->args[1]) {
		hdr = kfab_nl_dump_start(skb, cb, KFAB_NL_CMD_OBJ_GET);
		if (!hdr) {
			rc = -EMSGSIZE;
			break;
		}
		rc = kfab_nl_dump_end(skb, hdr, kfab_nl_put_obj(skb, ctx, obj));
		if (rc)
			break;
		cb->args[1] = index + 1;
	}
	xa_unlock(&ctx->objects);
	return rc;
}

static int kfab_nl_obj_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct nlattr **attrs = kfab_genl_dump_attrs(cb);
	u32 only = attrs[KFAB_NL_ATTR_CTX_ID] ?
		   nla_get_u32(attrs[KFAB_NL_ATTR_CTX_ID]) : 0;

	return kfab_nl_ctx_walk(skb, cb, only, kfab_nl_ctx_objs_fill);
}

/* ---- address vectors ---- */

struct kfab_nl_av_dump {
	struct sk_buff *skb;
	struct netlink_callback *cb;
	struct kfab_nl_reader r;
};

static int kfab_nl_av_fill(void *arg, const struct kfab_av_info *info)
{
	struct kfab_nl_av_dump *d = arg;
	void *hdr;

	if (!kfab_nl_may_see_av(&d->r, info))
		return 0;
	hdr = kfab_nl_dump_start(d->skb, d->cb, KFAB_NL_CMD_AV_GET);
	if (!hdr)
		return -EMSGSIZE;
	return kfab_nl_dump_end(d->skb, hdr, kfab_nl_put_av(d->skb, &d->r, info));
}

/* cb->args[0]: the position in the node's list of AVs. */
static int kfab_nl_av_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct kfab_nl_av_dump d = { .skb = skb, .cb = cb };
	unsigned long pos;
	int rc;

	rc = kfab_nl_reader_of(&d.r, cb->skb);
	if (rc)
		return rc;
	pos = cb->args[0];
	rc = kfab_av_for_each(&pos, kfab_nl_av_fill, &d);
	cb->args[0] = pos;
	return kfab_nl_dump_done(skb, rc);
}

static int kfab_nl_av_del(struct sk_buff *skb, struct genl_info *info)
{
	if (GENL_REQ_ATTR_CHECK(info, KFAB_NL_ATTR_AV_NAME))
		return -EINVAL;
	/* The command's GENL_ADMIN_PERM made the caller an admin. */
	return kfab_av_unlink_name(nla_data(info->attrs[KFAB_NL_ATTR_AV_NAME]),
				   true);
}

/* ---- peers ---- */

struct kfab_nl_peer_dump {
	struct sk_buff *skb;
	struct netlink_callback *cb;
};

/* The peer's connection and the two sessions carried over it. */
static int kfab_nl_put_conn(struct sk_buff *skb,
			    const struct kfab_peer_info *info)
{
	if (nla_put_u8(skb, KFAB_NL_ATTR_PEER_CONNECTED, info->connected) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_PEER_SESSION, info->session) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_PEER_REMOTE_SESSION,
			info->remote_session) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_PEER_TX_SEQ, info->tx_seq) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_PEER_RX_SEQ, info->rx_seq) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_PEER_ACKED, info->acked) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_PEER_RESUMED, info->resumed) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_PEER_RESENT, info->resent) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_PEER_CROSSED, info->crossed) ||
	    nla_put_s64(skb, KFAB_NL_ATTR_PEER_CREDIT, info->credit,
			KFAB_NL_ATTR_PAD) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_PEER_OWED, info->owed))
		return -EMSGSIZE;
	return 0;
}

static int kfab_nl_put_peer(struct sk_buff *skb,
			    const struct kfab_peer_info *info)
{
	if (nla_put(skb, KFAB_NL_ATTR_PEER_NODE, sizeof(info->addr.node),
		    info->addr.node) ||
	    nla_put_u16(skb, KFAB_NL_ATTR_PEER_PORT,
			be16_to_cpu(info->addr.port)) ||
	    nla_put(skb, KFAB_NL_ATTR_PEER_LOCAL_NODE,
		    sizeof(info->local.node), info->local.node) ||
	    nla_put_u16(skb, KFAB_NL_ATTR_PEER_LOCAL_PORT,
			be16_to_cpu(info->local.port)) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_PEER_STATE, info->state) ||
	    nla_put_u32(skb, KFAB_NL_ATTR_PEER_INCARNATION,
			info->incarnation) ||
	    nla_put_string(skb, KFAB_NL_ATTR_PEER_ENGINE, info->engine) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_TX_MSGS, info->tx_msgs) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_TX_BYTES, info->tx_bytes) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_RX_MSGS, info->rx_msgs) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_RX_BYTES, info->rx_bytes) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_FAILURES, info->failures))
		return -EMSGSIZE;
	return kfab_nl_put_conn(skb, info);
}

static int kfab_nl_peer_fill(void *arg, const struct kfab_peer_info *info)
{
	struct kfab_nl_peer_dump *d = arg;
	void *hdr;

	hdr = kfab_nl_dump_start(d->skb, d->cb, KFAB_NL_CMD_PEER_GET);
	if (!hdr)
		return -EMSGSIZE;
	return kfab_nl_dump_end(d->skb, hdr, kfab_nl_put_peer(d->skb, info));
}

/*
 * Peers belong to a network namespace, not to a process: its admin sees
 * them.  cb->args[0]: the position in the node's list of peers.
 */
static int kfab_nl_peer_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct kfab_nl_peer_dump d = { .skb = skb, .cb = cb };
	struct kfab_nl_reader r;
	unsigned long pos;
	int rc;

	rc = kfab_nl_reader_of(&r, cb->skb);
	if (rc)
		return rc;
	if (!r.all && !r.ns_admin)
		return -EPERM;
	pos = cb->args[0];
	rc = kfab_peer_for_each(kfab_node_of(r.net), &pos, kfab_nl_peer_fill,
				&d);
	cb->args[0] = pos;
	return kfab_nl_dump_done(skb, rc);
}

/* ---- listeners and the allow-list ---- */

/* A dump of a node's table: listeners or allowed networks. */
struct kfab_nl_node_dump {
	struct sk_buff *skb;
	struct netlink_callback *cb;
};

static int kfab_nl_listener_fill(void *arg,
				 const struct kfab_listener_info *info)
{
	struct kfab_nl_node_dump *d = arg;
	void *hdr;
	int rc = 0;

	hdr = kfab_nl_dump_start(d->skb, d->cb, KFAB_NL_CMD_LISTEN_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put(d->skb, KFAB_NL_ATTR_LISTEN_NODE, sizeof(info->addr.node),
		    info->addr.node) ||
	    nla_put_u16(d->skb, KFAB_NL_ATTR_LISTEN_PORT,
			be16_to_cpu(info->addr.port)) ||
	    nla_put_string(d->skb, KFAB_NL_ATTR_PEER_ENGINE, info->engine))
		rc = -EMSGSIZE;
	return kfab_nl_dump_end(d->skb, hdr, rc);
}

/*
 * A node's listeners are what its endpoints' addresses already tell
 * anyone in the namespace: every reader sees them.  cb->args[0]: the
 * position in the node's list.
 */
static int kfab_nl_listen_dump(struct sk_buff *skb,
			       struct netlink_callback *cb)
{
	struct kfab_nl_node_dump d = { .skb = skb, .cb = cb };
	struct kfab_nl_reader r;
	unsigned long pos;
	int rc;

	rc = kfab_nl_reader_of(&r, cb->skb);
	if (rc)
		return rc;
	pos = cb->args[0];
	rc = kfab_listener_for_each(kfab_node_of(r.net), &pos,
				    kfab_nl_listener_fill, &d);
	cb->args[0] = pos;
	return kfab_nl_dump_done(skb, rc);
}

static int kfab_nl_allow_fill(void *arg, const u8 *node,
			      unsigned int prefix_len)
{
	struct kfab_nl_node_dump *d = arg;
	void *hdr;
	int rc = 0;

	hdr = kfab_nl_dump_start(d->skb, d->cb, KFAB_NL_CMD_ALLOW_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put(d->skb, KFAB_NL_ATTR_ALLOW_NODE, 16, node) ||
	    nla_put_u32(d->skb, KFAB_NL_ATTR_ALLOW_PREFIX_LEN, prefix_len))
		rc = -EMSGSIZE;
	return kfab_nl_dump_end(d->skb, hdr, rc);
}

/*
 * The allow-list is the namespace's filter, like its firewall's rules:
 * for its admin, as peers are.  cb->args[0]: the position in the list.
 */
static int kfab_nl_allow_dump(struct sk_buff *skb,
			      struct netlink_callback *cb)
{
	struct kfab_nl_node_dump d = { .skb = skb, .cb = cb };
	struct kfab_nl_reader r;
	unsigned long pos;
	int rc;

	rc = kfab_nl_reader_of(&r, cb->skb);
	if (rc)
		return rc;
	if (!r.all && !r.ns_admin)
		return -EPERM;
	pos = cb->args[0];
	rc = kfab_allow_for_each(kfab_node_of(r.net), &pos,
				 kfab_nl_allow_fill, &d);
	cb->args[0] = pos;
	return kfab_nl_dump_done(skb, rc);
}

/*
 * Changes of a namespace's transport: the family checked CAP_NET_ADMIN
 * over the user namespace of the socket's network namespace
 * (GENL_UNS_ADMIN_PERM), the rule KFAB_IOC_NET_* check on their caller;
 * node.c does the rest, for both.
 */
static int kfab_nl_listen_change(struct genl_info *info, bool remove)
{
	struct kfab_addr addr = { .family = KFAB_ADDR_INET };
	struct nlattr *port = info->attrs[KFAB_NL_ATTR_LISTEN_PORT];

	if (GENL_REQ_ATTR_CHECK(info, KFAB_NL_ATTR_LISTEN_NODE))
		return -EINVAL;
	memcpy(addr.node, nla_data(info->attrs[KFAB_NL_ATTR_LISTEN_NODE]),
	       sizeof(addr.node));
	if (port)
		addr.port = cpu_to_be16(nla_get_u16(port));
	return kfab_node_change_listener(genl_info_net(info), &addr, remove);
}

static int kfab_nl_listen_add(struct sk_buff *skb, struct genl_info *info)
{
	return kfab_nl_listen_change(info, false);
}

static int kfab_nl_listen_del(struct sk_buff *skb, struct genl_info *info)
{
	return kfab_nl_listen_change(info, true);
}

static int kfab_nl_allow_change(struct genl_info *info, u32 flags)
{
	struct kfab_net_allow cmd = { .flags = flags };

	if (GENL_REQ_ATTR_CHECK(info, KFAB_NL_ATTR_ALLOW_NODE) ||
	    GENL_REQ_ATTR_CHECK(info, KFAB_NL_ATTR_ALLOW_PREFIX_LEN))
		return -EINVAL;
	memcpy(cmd.node, nla_data(info->attrs[KFAB_NL_ATTR_ALLOW_NODE]),
	       sizeof(cmd.node));
	/* At most 128: the policy's range. */
	cmd.prefix_len = nla_get_u32(info->attrs[KFAB_NL_ATTR_ALLOW_PREFIX_LEN]);
	return kfab_node_change_allow(genl_info_net(info), &cmd);
}

static int kfab_nl_allow_add(struct sk_buff *skb, struct genl_info *info)
{
	return kfab_nl_allow_change(info, 0);
}

static int kfab_nl_allow_del(struct sk_buff *skb, struct genl_info *info)
{
	return kfab_nl_allow_change(info, KFAB_NET_ALLOW_REMOVE);
}

/* ---- engine rules ---- */

static int kfab_nl_engine_fill(void *arg, const u8 *node,
			       unsigned int prefix_len, u32 rule)
{
	struct kfab_nl_node_dump *d = arg;
	void *hdr;
	int rc = 0;

	hdr = kfab_nl_dump_start(d->skb, d->cb, KFAB_NL_CMD_ENGINE_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put(d->skb, KFAB_NL_ATTR_ENGINE_NODE, 16, node) ||
	    nla_put_u32(d->skb, KFAB_NL_ATTR_ENGINE_PREFIX_LEN, prefix_len) ||
	    nla_put_u32(d->skb, KFAB_NL_ATTR_ENGINE_RULE, rule))
		rc = -EMSGSIZE;
	return kfab_nl_dump_end(d->skb, hdr, rc);
}

/*
 * The engine rules say which networks this node reaches by which
 * hardware: for its admin, as the allow-list.  cb->args[0]: the position
 * in the list.
 */
static int kfab_nl_engine_dump(struct sk_buff *skb,
			       struct netlink_callback *cb)
{
	struct kfab_nl_node_dump d = { .skb = skb, .cb = cb };
	struct kfab_nl_reader r;
	unsigned long pos;
	int rc;

	rc = kfab_nl_reader_of(&r, cb->skb);
	if (rc)
		return rc;
	if (!r.all && !r.ns_admin)
		return -EPERM;
	pos = cb->args[0];
	rc = kfab_engine_rule_for_each(kfab_node_of(r.net), &pos,
				       kfab_nl_engine_fill, &d);
	cb->args[0] = pos;
	return kfab_nl_dump_done(skb, rc);
}

/* GENL_UNS_ADMIN_PERM checked the caller, as for the allow-list. */
static int kfab_nl_engine_change(struct genl_info *info, bool remove)
{
	struct nlattr *rule = info->attrs[KFAB_NL_ATTR_ENGINE_RULE];

	if (GENL_REQ_ATTR_CHECK(info, KFAB_NL_ATTR_ENGINE_NODE) ||
	    GENL_REQ_ATTR_CHECK(info, KFAB_NL_ATTR_ENGINE_PREFIX_LEN) ||
	    (!remove && GENL_REQ_ATTR_CHECK(info, KFAB_NL_ATTR_ENGINE_RULE)))
		return -EINVAL;
	/* The policy bounds the prefix length and the rule. */
	return kfab_node_change_engine_rule(genl_info_net(info),
		nla_data(info->attrs[KFAB_NL_ATTR_ENGINE_NODE]),
		nla_get_u32(info->attrs[KFAB_NL_ATTR_ENGINE_PREFIX_LEN]),
		rule ? nla_get_u32(rule) : KFAB_NL_ENGINE_AUTO, remove);
}

static int kfab_nl_engine_add(struct sk_buff *skb, struct genl_info *info)
{
	return kfab_nl_engine_change(info, false);
}

static int kfab_nl_engine_del(struct sk_buff *skb, struct genl_info *info)
{
	return kfab_nl_engine_change(info, true);
}

/* ---- totals ---- */

struct kfab_nl_stat {
	struct kfab_nl_reader r;
	u32 contexts, objects, avs, named_avs, peers;
};

static int kfab_nl_stat_av(void *arg, const struct kfab_av_info *info)
{
	struct kfab_nl_stat *st = arg;

	if (kfab_nl_may_see_av(&st->r, info)) {
		st->avs++;
		st->named_avs += !!info->name[0];
	}
	return 0;
}

static int kfab_nl_stat_peer(void *arg, const struct kfab_peer_info *info)
{
	struct kfab_nl_stat *st = arg;

	st->peers++;
	return 0;
}

/* Counts of what the reader may see. */
static void kfab_nl_stat_count(struct kfab_nl_stat *st)
{
	unsigned long pos = 0, index;
	struct kfab_object *obj;
	struct kfab_ctx *ctx;

	mutex_lock(&kfab_ctx_lock);
	list_for_each_entry(ctx, &kfab_ctx_list, node) {
		if (!kfab_nl_may_see(&st->r, ctx))
			continue;
		st->contexts++;
		xa_lock(&ctx->objects);
		xa_for_each(&ctx->objects, index, obj)
			st->objects++;
		xa_unlock(&ctx->objects);
	}
	mutex_unlock(&kfab_ctx_lock);
	kfab_av_for_each(&pos, kfab_nl_stat_av, st);
	pos = 0;
	if (st->r.all || st->r.ns_admin)
		kfab_peer_for_each(kfab_node_of(st->r.net), &pos,
				   kfab_nl_stat_peer, st);
}

static int kfab_nl_stat_get(struct sk_buff *skb, struct genl_info *info)
{
	struct kfab_nl_stat st = {};
	struct sk_buff *msg;
	void *hdr;
	int rc;

	rc = kfab_nl_reader_of(&st.r, skb);
	if (rc)
		return rc;
	kfab_nl_stat_count(&st);

	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &kfab_nl_family, 0,
				KFAB_NL_CMD_STAT_GET);
	if (!hdr ||
	    nla_put_u32(msg, KFAB_NL_ATTR_STAT_CONTEXTS, st.contexts) ||
	    nla_put_u32(msg, KFAB_NL_ATTR_STAT_OBJECTS, st.objects) ||
	    nla_put_u32(msg, KFAB_NL_ATTR_STAT_AVS, st.avs) ||
	    nla_put_u32(msg, KFAB_NL_ATTR_STAT_NAMED_AVS, st.named_avs) ||
	    nla_put_u32(msg, KFAB_NL_ATTR_STAT_PEERS, st.peers)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

/* ---- events ---- */

enum kfab_nl_mcgrp {
	KFAB_NL_MCGRP_EVENTS,
};

/*
 * Work items that send events for code that may not (av.c's "changed",
 * whose changes run under locks that rank below kfab_av_lock).  Drained
 * at unload before the family goes.
 */
static struct workqueue_struct *kfab_nl_wq;

/* Does anyone listen to events?  Cheap: for the data path to ask first. */
bool kfab_nl_listening(void)
{
	return genl_has_listeners(&kfab_nl_family, &init_net,
				  KFAB_NL_MCGRP_EVENTS);
}

/* Queue @work on kfab_nl_wq; false if it was pending already. */
bool kfab_nl_queue(struct work_struct *work)
{
	return queue_work(kfab_nl_wq, work);
}

/* Wait for the work items queued so far. */
void kfab_nl_flush(void)
{
	if (kfab_nl_wq)
		flush_workqueue(kfab_nl_wq);
}

/* Sends one event built by @put to @net's group, if anyone listens. */
static void kfab_nl_notify_net(struct net *net, u8 cmd,
			       int (*put)(struct sk_buff *skb,
					  const struct kfab_nl_reader *r,
					  const void *what),
			       const void *what)
{
	struct kfab_nl_reader r;
	struct sk_buff *msg;
	void *hdr;

	if (!genl_has_listeners(&kfab_nl_family, net, KFAB_NL_MCGRP_EVENTS))
		return;
	kfab_nl_reader_init_ns(&r);
	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return;
	hdr = genlmsg_put(msg, 0, 0, &kfab_nl_family, 0, cmd);
	if (!hdr || put(msg, &r, what)) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_end(msg, hdr);
	genlmsg_multicast_netns(&kfab_nl_family, net, msg, 0,
				KFAB_NL_MCGRP_EVENTS, GFP_KERNEL);
}

static void kfab_nl_notify(u8 cmd,
			   int (*put)(struct sk_buff *skb,
				      const struct kfab_nl_reader *r,
				      const void *what),
			   const void *what)
{
	kfab_nl_notify_net(&init_net, cmd, put, what);
}

static int kfab_nl_put_ctx_event(struct sk_buff *skb,
				 const struct kfab_nl_reader *r,
				 const void *what)
{
	return kfab_nl_put_ctx(skb, r, what);
}

static int kfab_nl_put_av_event(struct sk_buff *skb,
				const struct kfab_nl_reader *r,
				const void *what)
{
	return kfab_nl_put_av(skb, r, what);
}

/* A context opened or closed; process context, no kfab lock held. */
void kfab_nl_notify_ctx(struct kfab_ctx *ctx, bool opened)
{
	kfab_nl_notify(opened ? KFAB_NL_CMD_CTX_NEW : KFAB_NL_CMD_CTX_DEL,
		       kfab_nl_put_ctx_event, ctx);
}

/*
 * A name of an AV appeared or went, or its entries changed; process
 * context, no kfab lock held.
 */
void kfab_nl_notify_av(const struct kfab_av_info *info, u8 cmd)
{
	kfab_nl_notify(cmd, kfab_nl_put_av_event, info);
}

/* A peer event: @info and the namespace it lives in. */
struct kfab_nl_peer_event {
	struct net *net;
	const struct kfab_peer_info *info;
};

static int kfab_nl_put_peer_event(struct sk_buff *skb,
				  const struct kfab_nl_reader *r,
				  const void *what)
{
	const struct kfab_nl_peer_event *ev = what;

	if (nla_put_u32(skb, KFAB_NL_ATTR_NETNS_INO, ev->net->ns.inum))
		return -EMSGSIZE;
	return kfab_nl_put_peer(skb, ev->info);
}

/**
 * kfab_nl_notify_peer() - a peer's connection was made, or went
 * @net: the peer's network namespace
 * @info: the peer, after the change
 * @up: made (KFAB_NL_CMD_PEER_UP) or went (_DOWN)
 * @own_group: to @net's group too (not while @net is going away)
 *
 * To the initial namespace's group, and to @net's own: its admin may
 * listen there.  Process context; no spinlock held (it allocates).
 */
void kfab_nl_notify_peer(struct net *net, const struct kfab_peer_info *info,
			 bool up, bool own_group)
{
	struct kfab_nl_peer_event ev = { .net = net, .info = info };
	u8 cmd = up ? KFAB_NL_CMD_PEER_UP : KFAB_NL_CMD_PEER_DOWN;

	might_sleep();
	kfab_nl_notify_net(&init_net, cmd, kfab_nl_put_peer_event, &ev);
	if (own_group && !net_eq(net, &init_net))
		kfab_nl_notify_net(net, cmd, kfab_nl_put_peer_event, &ev);
}

/* ---- module-wide limits ---- */

/*
 * The module parameters that may change while it is loaded (kfab_limits,
 * limits.c), by sysfs or by KFAB_NL_CMD_LIMIT_SET; limits.c checks the
 * range for both.
 */
static int kfab_nl_put_limit(struct sk_buff *skb,
			     const struct kfab_limit *l)
{
	if (nla_put_string(skb, KFAB_NL_ATTR_LIMIT_NAME, l->name) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_LIMIT_VALUE,
			    READ_ONCE(*l->value)) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_LIMIT_MIN, l->min) ||
	    kfab_nl_put_u64(skb, KFAB_NL_ATTR_LIMIT_MAX, l->max))
		return -EMSGSIZE;
	return 0;
}

/* Anyone may read the limits.  cb->args[0]: the next one. */
static int kfab_nl_limit_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	void *hdr;
	int rc = 0;

	while (cb->args[0] < kfab_nr_limits) {
		hdr = kfab_nl_dump_start(skb, cb, KFAB_NL_CMD_LIMIT_GET);
		if (!hdr) {
			rc = -EMSGSIZE;
			break;
		}
		rc = kfab_nl_dump_end(skb, hdr,
				      kfab_nl_put_limit(skb,
							&kfab_limits[cb->args[0]]));
		if (rc)
			break;
		cb->args[0]++;
	}
	return kfab_nl_dump_done(skb, rc);
}

/*
 * The limits are the whole module's, every namespace's: only the admin of
 * the initial user namespace changes them (as a write to sysfs would need
 * root there).  An unknown name is -ENOENT, a value out of the limit's
 * range -EINVAL (extended ack on the attribute).
 */
static int kfab_nl_limit_set(struct sk_buff *skb, struct genl_info *info)
{
	const struct kfab_limit *l = NULL;
	struct nlattr *name, *value;
	size_t i;

	if (!netlink_capable(skb, CAP_NET_ADMIN) &&
	    !netlink_capable(skb, CAP_SYS_ADMIN))
		return -EPERM;
	if (GENL_REQ_ATTR_CHECK(info, KFAB_NL_ATTR_LIMIT_NAME) ||
	    GENL_REQ_ATTR_CHECK(info, KFAB_NL_ATTR_LIMIT_VALUE))
		return -EINVAL;
	name = info->attrs[KFAB_NL_ATTR_LIMIT_NAME];
	value = info->attrs[KFAB_NL_ATTR_LIMIT_VALUE];
	for (i = 0; i < kfab_nr_limits; i++)
		if (!nla_strcmp(name, kfab_limits[i].name))
			l = &kfab_limits[i];
	if (!l) {
		NL_SET_ERR_MSG_ATTR(info->extack, name, "no such limit");
		return -ENOENT;
	}
	if (kfab_limit_set(l, nla_get_u64(value))) {
		NL_SET_ERR_MSG_ATTR(info->extack, value,
				    "out of the limit's range (LIMIT_GET shows it)");
		return -EINVAL;
	}
	return 0;
}

/* ---- the family ---- */

static const struct nla_policy kfab_nl_dump_policy[KFAB_NL_ATTR_MAX + 1] = {
};

static const struct nla_policy kfab_nl_obj_policy[KFAB_NL_ATTR_MAX + 1] = {
	[KFAB_NL_ATTR_CTX_ID] = NLA_POLICY_MIN(NLA_U32, 1),
};

static const struct nla_policy kfab_nl_av_del_policy[KFAB_NL_ATTR_MAX + 1] = {
	[KFAB_NL_ATTR_AV_NAME] = { .type = NLA_NUL_STRING,
				   .len = KFAB_AV_NAME_MAX - 1 },
};

static const struct nla_policy kfab_nl_listen_policy[KFAB_NL_ATTR_MAX + 1] = {
	[KFAB_NL_ATTR_LISTEN_NODE] = NLA_POLICY_EXACT_LEN(16),
	[KFAB_NL_ATTR_LISTEN_PORT] = { .type = NLA_U16 },
};

static const struct nla_policy kfab_nl_allow_policy[KFAB_NL_ATTR_MAX + 1] = {
	[KFAB_NL_ATTR_ALLOW_NODE] = NLA_POLICY_EXACT_LEN(16),
	[KFAB_NL_ATTR_ALLOW_PREFIX_LEN] = NLA_POLICY_MAX(NLA_U32, 128),
};

static const struct nla_policy kfab_nl_engine_add_policy[KFAB_NL_ATTR_MAX + 1] = {
	[KFAB_NL_ATTR_ENGINE_NODE] = NLA_POLICY_EXACT_LEN(16),
	[KFAB_NL_ATTR_ENGINE_PREFIX_LEN] = NLA_POLICY_MAX(NLA_U32, 128),
	[KFAB_NL_ATTR_ENGINE_RULE] = NLA_POLICY_MAX(NLA_U32, KFAB_NL_ENGINE_RDMA),
};

static const struct nla_policy kfab_nl_engine_del_policy[KFAB_NL_ATTR_MAX + 1] = {
	[KFAB_NL_ATTR_ENGINE_NODE] = NLA_POLICY_EXACT_LEN(16),
	[KFAB_NL_ATTR_ENGINE_PREFIX_LEN] = NLA_POLICY_MAX(NLA_U32, 128),
};

static const struct nla_policy kfab_nl_limit_policy[KFAB_NL_ATTR_MAX + 1] = {
	[KFAB_NL_ATTR_LIMIT_NAME] = { .type = NLA_NUL_STRING, .len = 31 },
	[KFAB_NL_ATTR_LIMIT_VALUE] = { .type = NLA_U64 },
};

static const struct genl_ops kfab_nl_ops[] = {
	{
		.cmd = KFAB_NL_CMD_CTX_GET,
		.dumpit = kfab_nl_ctx_dump,
		.policy = kfab_nl_dump_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
	},
	{
		.cmd = KFAB_NL_CMD_OBJ_GET,
		.dumpit = kfab_nl_obj_dump,
		.policy = kfab_nl_obj_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
	},
	{
		.cmd = KFAB_NL_CMD_AV_GET,
		.dumpit = kfab_nl_av_dump,
		.policy = kfab_nl_dump_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
	},
	{
		.cmd = KFAB_NL_CMD_AV_DEL,
		.doit = kfab_nl_av_del,
		.policy = kfab_nl_av_del_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = KFAB_NL_CMD_PEER_GET,
		.dumpit = kfab_nl_peer_dump,
		.policy = kfab_nl_dump_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
	},
	{
		.cmd = KFAB_NL_CMD_STAT_GET,
		.doit = kfab_nl_stat_get,
		.policy = kfab_nl_dump_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
	},
	{
		.cmd = KFAB_NL_CMD_LISTEN_GET,
		.dumpit = kfab_nl_listen_dump,
		.policy = kfab_nl_dump_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
	},
	{
		.cmd = KFAB_NL_CMD_ALLOW_GET,
		.dumpit = kfab_nl_allow_dump,
		.policy = kfab_nl_dump_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
	},
	/* Changes of the socket's namespace: its admin, as the ioctls. */
	{
		.cmd = KFAB_NL_CMD_LISTEN_ADD,
		.doit = kfab_nl_listen_add,
		.policy = kfab_nl_listen_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KFAB_NL_CMD_LISTEN_DEL,
		.doit = kfab_nl_listen_del,
		.policy = kfab_nl_listen_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KFAB_NL_CMD_ALLOW_ADD,
		.doit = kfab_nl_allow_add,
		.policy = kfab_nl_allow_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KFAB_NL_CMD_ALLOW_DEL,
		.doit = kfab_nl_allow_del,
		.policy = kfab_nl_allow_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KFAB_NL_CMD_LIMIT_GET,
		.dumpit = kfab_nl_limit_dump,
		.policy = kfab_nl_dump_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
	},
	/* Module-wide: kfab_nl_limit_set() checks the initial namespace. */
	{
		.cmd = KFAB_NL_CMD_LIMIT_SET,
		.doit = kfab_nl_limit_set,
		.policy = kfab_nl_limit_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
	},
	{
		.cmd = KFAB_NL_CMD_ENGINE_GET,
		.dumpit = kfab_nl_engine_dump,
		.policy = kfab_nl_dump_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
	},
	/* Changes of the socket's namespace: its admin, as the allow-list. */
	{
		.cmd = KFAB_NL_CMD_ENGINE_ADD,
		.doit = kfab_nl_engine_add,
		.policy = kfab_nl_engine_add_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KFAB_NL_CMD_ENGINE_DEL,
		.doit = kfab_nl_engine_del,
		.policy = kfab_nl_engine_del_policy,
		.maxattr = KFAB_NL_ATTR_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
};

static const struct genl_multicast_group kfab_nl_mcgrps[] = {
	/* Events name other users' processes: for the node's admin. */
	[KFAB_NL_MCGRP_EVENTS] = { .name = KFAB_GENL_MCGRP_EVENTS,
				   .flags = GENL_MCAST_CAP_NET_ADMIN },
};

static struct genl_family kfab_nl_family __ro_after_init = {
	.name = KFAB_GENL_NAME,
	.version = KFAB_GENL_VERSION,
	.maxattr = KFAB_NL_ATTR_MAX,
	.netnsok = true,
	.module = THIS_MODULE,
	.ops = kfab_nl_ops,
	.n_ops = ARRAY_SIZE(kfab_nl_ops),
	/* Every command is validated strictly: unknown attributes fail. */
	.resv_start_op = 0,
	.mcgrps = kfab_nl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(kfab_nl_mcgrps),
};

int kfab_nl_init(void)
{
	int rc;

	/* KFAB_NL_ATTR_OBJ_TYPE carries enum kfab_obj_type as it is. */
	BUILD_BUG_ON((int)KFAB_NL_OBJ_DOMAIN != (int)KFAB_OBJ_DOMAIN ||
		     (int)KFAB_NL_OBJ_AV != (int)KFAB_OBJ_AV ||
		     (int)KFAB_NL_OBJ_CQ != (int)KFAB_OBJ_CQ ||
		     (int)KFAB_NL_OBJ_CNTR != (int)KFAB_OBJ_CNTR ||
		     (int)KFAB_NL_OBJ_EP != (int)KFAB_OBJ_EP ||
		     (int)KFAB_NL_OBJ_SRX != (int)KFAB_OBJ_SRX);
	kfab_nl_wq = alloc_workqueue("kfab_nl", 0, 0);
	if (!kfab_nl_wq)
		return -ENOMEM;
	rc = genl_register_family(&kfab_nl_family);
	if (rc) {
		destroy_workqueue(kfab_nl_wq);
		kfab_nl_wq = NULL;
	}
	return rc;
}

void kfab_nl_exit(void)
{
	/* Its work items send events: they end while the family is there. */
	destroy_workqueue(kfab_nl_wq);
	kfab_nl_wq = NULL;
	genl_unregister_family(&kfab_nl_family);
}
