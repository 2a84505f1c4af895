// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Nodes: kfab's identity in each network namespace (Documentation/net.rst).
 *
 * An endpoint's address names its node and its number.  A namespace whose
 * administrator added a listener (KFAB_IOC_NET_LISTEN) is a node on the
 * network: its endpoints are KFAB_ADDR_INET addresses of its first
 * listener.  Without one, endpoints get KFAB_ADDR_LOCAL addresses, which
 * only this machine understands.  Deciding where a destination lives is
 * kfab_node_resolve(): an address of one of the sender's own listeners, or
 * a local one, is an endpoint of this machine and keeps the single-copy
 * path; any other goes to a peer (peer.c).
 *
 * Numbers above KFAB_SERVICE_MAX are the module's (kfab_eps in ep.c) and
 * carry kfab_incarnation, drawn at load, so that addresses kept across a
 * reload reach nothing.  Services are chosen by applications and are one
 * per node (kfab_node.services).
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/kfab_netlink.h>
#include <linux/random.h>
#include <linux/rculist.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <net/addrconf.h>
#include <net/netns/generic.h>
#include <net/route.h>

#include "kfab.h"
#include "net.h"

u32 kfab_incarnation;

static unsigned int kfab_node_id;

struct kfab_node *kfab_node_of(struct net *net)
{
	return net_generic(net, kfab_node_id);
}

static bool kfab_addr_node_zero(const struct kfab_addr *a)
{
	return !memchr_inv(a->node, 0, sizeof(a->node));
}

/*
 * Whether an address is well formed, wherever it came from: a family we
 * know, the fields that family does not use zeroed, and an incarnation
 * exactly when the number is the module's.
 */
bool kfab_addr_valid(const struct kfab_addr *a)
{
	u64 ep = be64_to_cpu(a->ep);
	bool service = ep <= KFAB_SERVICE_MAX;

	if (a->__reserved || !ep || !a->incarnation != service)
		return false;
	switch (a->family) {
	case KFAB_ADDR_LOCAL:
		return !a->port && kfab_addr_node_zero(a);
	case KFAB_ADDR_INET:
		return a->port && !kfab_addr_node_zero(a);
	default:
		return false;
	}
}

/* Same family, node and port: the same node (LOCAL: this machine). */
bool kfab_addr_same_node(const struct kfab_addr *a, const struct kfab_addr *b)
{
	return a->family == b->family && a->port == b->port &&
	       !memcmp(a->node, b->node, sizeof(a->node));
}

/**
 * kfab_addr_show() - print an address in its string form
 * @s: where
 * @a: the address, as struct kfab_addr
 *
 * "fi_kfab://NODE/EP" as libshim prints it (Documentation/net.rst): NODE
 * is "local", "A.B.C.D:PORT" or "[IPV6]:PORT"; EP a service, or
 * "NUMBER.INCARNATION" (8 hex digits).
 */
void kfab_addr_show(struct seq_file *s, const struct kfab_addr *a)
{
	const struct in6_addr *a6 = (const struct in6_addr *)a->node;

	seq_puts(s, "fi_kfab://");
	if (a->family != KFAB_ADDR_INET)
		seq_puts(s, "local");
	else if (ipv6_addr_v4mapped(a6))
		seq_printf(s, "%pI4:%u", &a6->s6_addr32[3], be16_to_cpu(a->port));
	else
		seq_printf(s, "[%pI6c]:%u", a6, be16_to_cpu(a->port));
	seq_printf(s, "/%llu", be64_to_cpu(a->ep));
	if (a->incarnation)
		seq_printf(s, ".%08x", be32_to_cpu(a->incarnation));
}

/*
 * One of @node's listeners has @addr's node address.  On every send to
 * and every message from another node: under RCU, not the node's lock.
 */
bool kfab_node_is_self(struct kfab_node *node, const struct kfab_addr *addr)
{
	struct kfab_listener *l;
	bool self = false;

	rcu_read_lock();
	list_for_each_entry_rcu(l, &node->listeners, link)
		if (kfab_addr_same_node(&l->addr, addr)) {
			self = true;
			break;
		}
	rcu_read_unlock();
	return self;
}

/**
 * kfab_node_bind() - give a new endpoint its address
 * @net: the namespace it lives in
 * @want: the address asked for (struct kfab_ep_open's @src)
 * @core: its core, with @num set; @addr, @net and @service are filled in
 *
 * A service number is reserved in the node now (like bind()) and
 * reachable once kfab_node_publish() runs at enable.
 *
 * Return: 0, -EINVAL (a malformed request), -EADDRNOTAVAIL (no such
 * listener), -EADDRINUSE (the service is taken), -ENOMEM.
 */
int kfab_node_bind(struct net *net, const struct kfab_addr *want,
		   struct kfab_ep_core *core)
{
	struct kfab_node *node = kfab_node_of(net);
	u64 ep = be64_to_cpu(want->ep);
	struct kfab_addr *a = &core->addr;
	struct kfab_listener *l;
	int rc = 0;

	if (want->__reserved || want->incarnation || ep > KFAB_SERVICE_MAX)
		return -EINVAL;
	*a = (struct kfab_addr){ .family = KFAB_ADDR_LOCAL };
	mutex_lock(&node->lock);
	switch (want->family) {
	case KFAB_ADDR_UNSPEC:
		l = list_first_entry_or_null(&node->listeners,
					     struct kfab_listener, link);
		if (l)
			*a = l->addr;
		break;
	case KFAB_ADDR_LOCAL:
		break;
	case KFAB_ADDR_INET:
		rc = -EADDRNOTAVAIL;
		list_for_each_entry(l, &node->listeners, link)
			if (kfab_addr_same_node(&l->addr, want) ||
			    (!want->port && !memcmp(l->addr.node, want->node,
						    sizeof(want->node)))) {
				*a = l->addr;
				rc = 0;
				break;
			}
		break;
	default:
		rc = -EINVAL;
	}
	mutex_unlock(&node->lock);
	if (rc)
		return rc;

	if (ep) {
		/* Reserved (no entry) until enable; taken means in use. */
		rc = xa_insert(&node->services, ep, NULL, GFP_KERNEL_ACCOUNT);
		if (rc)
			return rc == -EBUSY ? -EADDRINUSE : rc;
		core->service = ep;
		a->ep = want->ep;
		a->incarnation = 0;
	} else {
		a->ep = cpu_to_be64(core->num);
		a->incarnation = cpu_to_be32(kfab_incarnation);
	}
	core->net = get_net(net);
	return 0;
}

/* At enable: a service endpoint becomes reachable by its service. */
int kfab_node_publish(struct kfab_ep_core *core)
{
	struct kfab_node *node;

	if (!core->service)
		return 0;
	node = kfab_node_of(core->net);
	return xa_err(xa_store(&node->services, core->service, core,
			       GFP_KERNEL_ACCOUNT));
}

/*
 * The endpoint goes: its service is free again at once (senders that
 * still hold its core find it dead), its namespace is let go with the core.
 */
void kfab_node_unbind(struct kfab_ep_core *core)
{
	if (core->service)
		xa_erase(&kfab_node_of(core->net)->services, core->service);
	core->service = 0;
}

void kfab_node_release(struct kfab_ep_core *core)
{
	kfab_node_unbind(core);
	if (core->net)
		put_net(core->net);
	core->net = NULL;
}

static struct kfab_ep_core *kfab_node_service(struct kfab_node *node, u64 ep)
{
	struct kfab_ep_core *core;

	rcu_read_lock();
	core = xa_load(&node->services, ep);
	if (core && !kref_get_unless_zero(&core->ref))
		core = NULL;
	rcu_read_unlock();
	return core;
}

/*
 * The endpoint @dst names on @node (for a LOCAL address: on this machine,
 * services in @node).  Return: 0 with a reference in *@target,
 * -EHOSTUNREACH (no such endpoint), -ECONNRESET (a number of an earlier
 * load of the module).
 */
static int kfab_node_lookup(struct kfab_node *node,
			    const struct kfab_addr *dst,
			    struct kfab_ep_core **target)
{
	u64 ep = be64_to_cpu(dst->ep);
	struct kfab_ep_core *core;

	if (ep <= KFAB_SERVICE_MAX) {
		core = kfab_node_service(node, ep);
	} else {
		if (be32_to_cpu(dst->incarnation) != kfab_incarnation)
			return -ECONNRESET;
		core = kfab_ep_core_find(ep);
		/* A number names one endpoint: through its own node only. */
		if (core && dst->family == KFAB_ADDR_INET &&
		    core->net != node->net) {
			kfab_ep_core_put(core);
			core = NULL;
		}
	}
	if (!core)
		return -EHOSTUNREACH;
	*target = core;
	return 0;
}

/**
 * kfab_node_resolve() - where a sender's destination lives
 * @net: the sender's namespace
 * @dst: the destination, valid (kfab_addr_valid())
 * @target: out: the endpoint, when it is on this machine
 *
 * Return: 0 with a reference in *@target; -EREMOTE for an endpoint of
 * another node (peer.c sends it); -EHOSTUNREACH, -ECONNRESET as
 * kfab_node_lookup().
 */
int kfab_node_resolve(struct net *net, const struct kfab_addr *dst,
		      struct kfab_ep_core **target)
{
	struct kfab_node *node = kfab_node_of(net);

	if (dst->family == KFAB_ADDR_INET && !kfab_node_is_self(node, dst))
		return -EREMOTE;
	return kfab_node_lookup(node, dst, target);
}

/* A frame from the network names an endpoint of @node: which one. */
int kfab_node_find_ep(struct kfab_node *node, const struct kfab_addr *dst,
		      struct kfab_ep_core **target)
{
	if (!kfab_addr_valid(dst) || dst->family != KFAB_ADDR_INET ||
	    !kfab_node_is_self(node, dst))
		return -EHOSTUNREACH;
	return kfab_node_lookup(node, dst, target);
}

/* ---- listeners ---- */

/* An address of @net's own interfaces (v4-mapped or v6). */
static bool kfab_node_has_addr(struct net *net, const u8 *node)
{
	const struct in6_addr *a6 = (const struct in6_addr *)node;

	if (ipv6_addr_v4mapped(a6))
		return inet_addr_type(net, a6->s6_addr32[3]) == RTN_LOCAL;
#if IS_ENABLED(CONFIG_IPV6)
	return ipv6_chk_addr(net, a6, NULL, 0);
#else
	return false;
#endif
}

/*
 * The node goes (no listener left, @dying set, so no connection comes
 * any more): end every connection in and wait until their readers, on
 * kfab_net_wq, have closed them.
 */
void kfab_conns_close(struct kfab_node *node)
{
	kfab_conns_close_engine(node, NULL);
}

/* The same for the connections of engine @e only (NULL: of every one). */
void kfab_conns_close_engine(struct kfab_node *node,
			     const struct kfab_engine *e)
{
	struct kfab_conn *conn;
	bool left;

	for (;;) {
		left = false;
		mutex_lock(&node->lock);
		list_for_each_entry(conn, &node->conns, link) {
			if (e && conn->engine != e)
				continue;
			conn->engine->shutdown(conn);
			left = true;
		}
		mutex_unlock(&node->lock);
		if (!left)
			return;
		/*
		 * Readers run on kfab_net_wq for as long as their connections
		 * last: flushing it waits for other engines' too.
		 */
		if (e)
			msleep(20);
		else
			flush_workqueue(kfab_net_wq);
	}
}

static int kfab_node_listen(struct kfab_node *node, struct kfab_addr *addr)
{
	struct kfab_listener *l, *old;
	int rc;

	if (!addr->port)
		addr->port = cpu_to_be16(KFAB_PORT_DEFAULT);
	if (!kfab_node_has_addr(node->net, addr->node))
		return -EADDRNOTAVAIL;
	l = kzalloc(sizeof(*l), GFP_KERNEL_ACCOUNT);
	if (!l)
		return -ENOMEM;
	l->addr = *addr;
	l->node = node;

	kfab_engines_hold();
	mutex_lock(&node->lock);
	rc = -ENODEV;
	if (node->dying)
		goto err_unlock;
	rc = -EADDRINUSE;
	list_for_each_entry(old, &node->listeners, link)
		if (kfab_addr_same_node(&old->addr, addr))
			goto err_unlock;
	l->engine = &kfab_tcp_engine;
	rc = l->engine->listen(l);
	if (rc)
		goto err_unlock;
	list_add_tail_rcu(&l->link, &node->listeners);
	kfab_listener_add_engines(node, l);
	mutex_unlock(&node->lock);
	kfab_engines_release();
	return 0;

err_unlock:
	mutex_unlock(&node->lock);
	kfab_engines_release();
	kfree(l);
	return rc;
}

/*
 * Engine @e listens beside TCP listener @l of @node, on the same address
 * and port.  Where it cannot (no device of it reaches the address), TCP
 * alone serves the address.
 */
void kfab_listener_add_engine(struct kfab_node *node, struct kfab_listener *l,
			      const struct kfab_engine *e)
{
	struct kfab_listener *el;
	int rc;

	lockdep_assert_held(&node->lock);
	el = kzalloc(sizeof(*el), GFP_KERNEL_ACCOUNT);
	if (!el)
		return;
	el->addr = l->addr;
	el->node = node;
	el->engine = e;
	rc = e->listen(el);
	if (rc) {
		pr_debug("kfab: netns %u: no %s listener: %d\n",
			 node->net->ns.inum, e->name, rc);
		kfree(el);
		return;
	}
	list_add_tail_rcu(&el->link, &node->listeners);
}

static void kfab_listener_free(struct kfab_listener *l)
{
	l->engine->unlisten(l);
	kfree_rcu(l, rcu);
}

/*
 * Take off @node's list the first listener that @match accepts (under RCU
 * rules: kfab_node_is_self() may walk the list meanwhile) and close it.
 * Return: whether there was one.
 */
static bool kfab_node_drop_listener(struct kfab_node *node,
				    bool (*match)(struct kfab_listener *l,
						  const void *arg),
				    const void *arg)
{
	struct kfab_listener *l, *found = NULL;

	mutex_lock(&node->lock);
	list_for_each_entry(l, &node->listeners, link)
		if (match(l, arg)) {
			found = l;
			list_del_rcu(&l->link);
			break;
		}
	mutex_unlock(&node->lock);
	if (found)
		kfab_listener_free(found);
	return found;
}

static bool kfab_listener_at(struct kfab_listener *l, const void *addr)
{
	return kfab_addr_same_node(&l->addr, addr);
}

static bool kfab_listener_of(struct kfab_listener *l, const void *engine)
{
	return l->engine == engine;
}

/* Close the listeners of @addr: TCP's and every other engine's. */
static int kfab_node_unlisten(struct kfab_node *node,
			      const struct kfab_addr *addr)
{
	struct kfab_addr want = *addr;

	if (!want.port)
		want.port = cpu_to_be16(KFAB_PORT_DEFAULT);
	if (!kfab_node_drop_listener(node, kfab_listener_at, &want))
		return -ENOENT;
	while (kfab_node_drop_listener(node, kfab_listener_at, &want))
		;
	return 0;
}

/*
 * Engine @e goes (kfab_engine_unregister()): its listeners close, peers
 * call with TCP from now on, and its connections end.
 */
void kfab_node_drop_engine(struct kfab_node *node, const struct kfab_engine *e)
{
	while (kfab_node_drop_listener(node, kfab_listener_of, e))
		;
	kfab_node_peers_drop_engine(node, e);
	kfab_conns_close_engine(node, e);
}

/* A listener's address as asked for: INET, a node, nothing else. */
static bool kfab_listen_addr_valid(const struct kfab_addr *addr)
{
	return addr->family == KFAB_ADDR_INET && !addr->__reserved &&
	       !addr->ep && !addr->incarnation && !kfab_addr_node_zero(addr);
}

/**
 * kfab_node_change_listener() - add or remove a listener of a namespace
 * @net: the namespace; the caller checked CAP_NET_ADMIN over its user
 *	namespace (the ioctl on the caller, netlink on the socket)
 * @addr: the listener (KFAB_ADDR_INET, @port 0: KFAB_PORT_DEFAULT); out:
 *	the port filled in when added
 * @remove: remove it instead
 *
 * The one path of KFAB_IOC_NET_LISTEN and KFAB_NL_CMD_LISTEN_ADD/_DEL.
 *
 * Return: 0, -EINVAL (a malformed address), -EADDRINUSE (the listener
 * exists), -ENOENT (removing one that does not), -EADDRNOTAVAIL (not an
 * address of @net), -ENODEV (@net is going), -ENOMEM, or the engine's.
 */
int kfab_node_change_listener(struct net *net, struct kfab_addr *addr,
			      bool remove)
{
	struct kfab_node *node = kfab_node_of(net);
	int rc;

	if (!kfab_listen_addr_valid(addr))
		return -EINVAL;
	if (remove)
		rc = kfab_node_unlisten(node, addr);
	else
		rc = kfab_node_listen(node, addr);
	if (rc)
		return rc;
	/* Peers of a listener gone end; those of one back may talk again. */
	kfab_node_recheck_peers(node);
	return 0;
}

int kfab_ioctl_net_listen(struct kfab_ucmd *ucmd)
{
	struct kfab_net_listen *cmd = ucmd->cmd;
	struct net *net = current->nsproxy->net_ns;
	struct kfab_addr addr = cmd->addr;
	int rc;

	if (cmd->flags & ~KFAB_NET_LISTEN_REMOVE)
		return -EOPNOTSUPP;
	if (!kfab_listen_addr_valid(&addr))
		return -EINVAL;
	if (!ns_capable(net->user_ns, CAP_NET_ADMIN))
		return -EPERM;
	rc = kfab_node_change_listener(net, &addr,
				       cmd->flags & KFAB_NET_LISTEN_REMOVE);
	if (rc)
		return rc;
	if (!(cmd->flags & KFAB_NET_LISTEN_REMOVE))
		cmd->out_addr = addr;
	return kfab_ucmd_respond(ucmd, sizeof(*cmd));
}

/* ---- the allow-list of peer networks ---- */

/**
 * struct kfab_allow - a network of nodes a namespace may talk to
 * @link: on its node's @allowed
 * @node: the network's address (IPv6 or v4-mapped), zero past @prefix_len
 * @prefix_len: its leading bits that count
 * @rcu: freed after a grace period (kfab_node_allows() walks the list)
 */
struct kfab_allow {
	struct list_head link;
	u8 node[16];
	u8 prefix_len;
	struct rcu_head rcu;
};

/* Do the first @bits bits of @a and @b agree? */
static bool kfab_prefix_match(const u8 *a, const u8 *b, unsigned int bits)
{
	unsigned int bytes = bits / 8, rest = bits % 8;

	if (memcmp(a, b, bytes))
		return false;
	return !rest || !((a[bytes] ^ b[bytes]) & (0xff << (8 - rest)));
}

/*
 * May @node exchange messages with the node at @addr (16 bytes: IPv6 or
 * v4-mapped)?  Yes while its list is empty.  On every connection in and
 * every send to another node: under RCU.
 */
bool kfab_node_allows(struct kfab_node *node, const u8 *addr)
{
	struct kfab_allow *a;
	bool ok;

	rcu_read_lock();
	ok = list_empty(&node->allowed);
	list_for_each_entry_rcu(a, &node->allowed, link)
		if (kfab_prefix_match(a->node, addr, a->prefix_len)) {
			ok = true;
			break;
		}
	rcu_read_unlock();
	return ok;
}
EXPORT_SYMBOL_FOR_KFAB_ENGINES(kfab_node_allows);

static struct kfab_allow *kfab_allow_find(struct kfab_node *node,
					  const struct kfab_net_allow *cmd)
{
	struct kfab_allow *a;

	lockdep_assert_held(&node->lock);
	list_for_each_entry(a, &node->allowed, link)
		if (a->prefix_len == cmd->prefix_len &&
		    !memcmp(a->node, cmd->node, sizeof(a->node)))
			return a;
	return NULL;
}

static void kfab_allow_clear(struct kfab_node *node)
{
	struct kfab_allow *a, *n;

	lockdep_assert_held(&node->lock);
	list_for_each_entry_safe(a, n, &node->allowed, link) {
		list_del_rcu(&a->link);
		kfree_rcu(a, rcu);
	}
	node->nr_allowed = 0;
}

static int kfab_node_allow(struct kfab_node *node,
			   const struct kfab_net_allow *cmd)
{
	struct kfab_allow *a, *add = NULL;
	int rc = 0;

	if (!(cmd->flags & (KFAB_NET_ALLOW_REMOVE | KFAB_NET_ALLOW_CLEAR))) {
		add = kzalloc(sizeof(*add), GFP_KERNEL_ACCOUNT);
		if (!add)
			return -ENOMEM;
		memcpy(add->node, cmd->node, sizeof(add->node));
		add->prefix_len = cmd->prefix_len;
	}
	mutex_lock(&node->lock);
	if (cmd->flags & KFAB_NET_ALLOW_CLEAR) {
		kfab_allow_clear(node);
	} else if (cmd->flags & KFAB_NET_ALLOW_REMOVE) {
		a = kfab_allow_find(node, cmd);
		if (a) {
			list_del_rcu(&a->link);
			node->nr_allowed--;
			kfree_rcu(a, rcu);
		} else {
			rc = -ENOENT;
		}
	} else if (kfab_allow_find(node, cmd)) {
		rc = -EEXIST;
	} else if (node->nr_allowed >= KFAB_NET_ALLOW_MAX) {
		rc = -ENOSPC;
	} else {
		list_add_tail_rcu(&add->link, &node->allowed);
		node->nr_allowed++;
		add = NULL;
	}
	mutex_unlock(&node->lock);
	kfree(add);
	if (!rc)
		kfab_node_recheck_peers(node);
	return rc;
}

/* A network: at most 128 bits, no bit past them (one way to write it). */
static bool kfab_prefix_valid(const u8 *node, unsigned int prefix_len)
{
	unsigned int i;

	if (prefix_len > 128)
		return false;
	for (i = prefix_len; i < 128; i++)
		if (node[i / 8] & (0x80 >> (i % 8)))
			return false;
	return true;
}

/* A network as asked for: a prefix, no bit past it; CLEAR alone. */
static int kfab_allow_valid(const struct kfab_net_allow *cmd)
{
	static const u8 zero[16];

	if (cmd->flags & ~(KFAB_NET_ALLOW_REMOVE | KFAB_NET_ALLOW_CLEAR))
		return -EOPNOTSUPP;
	if (!kfab_prefix_valid(cmd->node, cmd->prefix_len) ||
	    memchr_inv(cmd->__reserved, 0, sizeof(cmd->__reserved)))
		return -EINVAL;
	if ((cmd->flags & KFAB_NET_ALLOW_CLEAR) &&
	    (cmd->flags != KFAB_NET_ALLOW_CLEAR || cmd->prefix_len ||
	     memcmp(cmd->node, zero, sizeof(zero))))
		return -EINVAL;
	return 0;
}

/**
 * kfab_node_change_allow() - change a namespace's allow-list
 * @net: the namespace; the caller checked CAP_NET_ADMIN over its user
 *	namespace (the ioctl on the caller, netlink on the socket)
 * @cmd: the change, as struct kfab_net_allow says (@size unused)
 *
 * The one path of KFAB_IOC_NET_ALLOW and KFAB_NL_CMD_ALLOW_ADD/_DEL.
 *
 * Return: 0, -EOPNOTSUPP (unknown flags), -EINVAL (a prefix over 128,
 * bits past it), -EEXIST (on the list), -ENOENT (removing one that is
 * not), -ENOSPC (KFAB_NET_ALLOW_MAX), -ENOMEM.
 */
int kfab_node_change_allow(struct net *net, const struct kfab_net_allow *cmd)
{
	int rc = kfab_allow_valid(cmd);

	return rc ?: kfab_node_allow(kfab_node_of(net), cmd);
}

int kfab_ioctl_net_allow(struct kfab_ucmd *ucmd)
{
	struct kfab_net_allow *cmd = ucmd->cmd;
	struct net *net = current->nsproxy->net_ns;
	int rc;

	rc = kfab_allow_valid(cmd);
	if (rc)
		return rc;
	if (!ns_capable(net->user_ns, CAP_NET_ADMIN))
		return -EPERM;
	return kfab_node_change_allow(net, cmd);
}

/**
 * kfab_listener_for_each() - a node's listeners, for netlink dumps
 * @node: the node
 * @pos: listeners to skip; advanced past each one @fn took
 * @fn: called with a copy of each, under the node's lock
 * @arg: @fn's
 *
 * Return: 0 after the last one, or what @fn returned to stop.
 */
int kfab_listener_for_each(struct kfab_node *node, unsigned long *pos,
			   kfab_listener_info_fn fn, void *arg)
{
	struct kfab_listener_info info;
	struct kfab_listener *l;
	unsigned long i = 0;
	int rc = 0;

	mutex_lock(&node->lock);
	list_for_each_entry(l, &node->listeners, link) {
		if (i++ < *pos)
			continue;
		info = (struct kfab_listener_info) {
			.addr = l->addr,
			.engine = l->engine->name,
		};
		rc = fn(arg, &info);
		if (rc)
			break;
		*pos = i;
	}
	mutex_unlock(&node->lock);
	return rc;
}

/**
 * kfab_allow_for_each() - a node's allow-list, for netlink dumps
 * @node: the node
 * @pos: networks to skip; advanced past each one @fn took
 * @fn: called with each network and its prefix length, under the
 *	node's lock
 * @arg: @fn's
 *
 * Return: 0 after the last one, or what @fn returned to stop.
 */
int kfab_allow_for_each(struct kfab_node *node, unsigned long *pos,
			kfab_allow_info_fn fn, void *arg)
{
	struct kfab_allow *a;
	unsigned long i = 0;
	int rc = 0;

	mutex_lock(&node->lock);
	list_for_each_entry(a, &node->allowed, link) {
		if (i++ < *pos)
			continue;
		rc = fn(arg, a->node, a->prefix_len);
		if (rc)
			break;
		*pos = i;
	}
	mutex_unlock(&node->lock);
	return rc;
}

/* ---- the engine rules ---- */

/**
 * struct kfab_engine_rule - the engine a node calls the nodes of a
 *	network with (Documentation/net.rst "Choosing the engine")
 * @link: on its node's @engine_rules
 * @node: the network's address (IPv6 or v4-mapped), zero past @prefix_len
 * @prefix_len: its leading bits that count
 * @rule: enum kfab_nl_engine_rule
 * @rcu: freed after a grace period (kfab_node_engine_rule() walks the list)
 */
struct kfab_engine_rule {
	struct list_head link;
	u8 node[16];
	u8 prefix_len;
	u32 rule;
	struct rcu_head rcu;
};

/*
 * The rule for the node at @addr (16 bytes): the longest prefix that
 * matches, KFAB_NL_ENGINE_AUTO when none does.  On every call a peer
 * makes: under RCU.
 */
u32 kfab_node_engine_rule(struct kfab_node *node, const u8 *addr)
{
	struct kfab_engine_rule *r;
	u32 rule = KFAB_NL_ENGINE_AUTO;
	int best = -1;

	rcu_read_lock();
	list_for_each_entry_rcu(r, &node->engine_rules, link)
		if (r->prefix_len > best &&
		    kfab_prefix_match(r->node, addr, r->prefix_len)) {
			best = r->prefix_len;
			rule = r->rule;
		}
	rcu_read_unlock();
	return rule;
}

static struct kfab_engine_rule *
kfab_engine_rule_find(struct kfab_node *node, const u8 *prefix,
		      unsigned int prefix_len)
{
	struct kfab_engine_rule *r;

	lockdep_assert_held(&node->lock);
	list_for_each_entry(r, &node->engine_rules, link)
		if (r->prefix_len == prefix_len &&
		    !memcmp(r->node, prefix, sizeof(r->node)))
			return r;
	return NULL;
}

static void kfab_engine_rules_clear(struct kfab_node *node)
{
	struct kfab_engine_rule *r, *n;

	lockdep_assert_held(&node->lock);
	list_for_each_entry_safe(r, n, &node->engine_rules, link) {
		list_del_rcu(&r->link);
		kfree_rcu(r, rcu);
	}
	node->nr_engine_rules = 0;
}

static int kfab_engine_rule_remove(struct kfab_node *node, const u8 *prefix,
				   unsigned int prefix_len)
{
	struct kfab_engine_rule *r;

	lockdep_assert_held(&node->lock);
	r = kfab_engine_rule_find(node, prefix, prefix_len);
	if (!r)
		return -ENOENT;
	list_del_rcu(&r->link);
	node->nr_engine_rules--;
	kfree_rcu(r, rcu);
	return 0;
}

/**
 * kfab_node_change_engine_rule() - add or remove an engine rule
 * @net: the namespace; netlink checked CAP_NET_ADMIN over its user
 *	namespace (GENL_UNS_ADMIN_PERM)
 * @prefix: the network, 16 bytes (IPv6 or v4-mapped)
 * @prefix_len: its leading bits that count, at most 128
 * @rule: enum kfab_nl_engine_rule (ignored by a removal)
 * @remove: remove the rule of this network
 *
 * Peers read the rules at each call (kfab_engine_for()): a change applies
 * from a peer's next connection; one that is up stays as it is.  Ending
 * it would end its session too, as the engines end connections (a reset
 * that both sides resume is what a broken link makes, not a command).
 *
 * Return: 0, -EINVAL (a prefix over 128, bits past it, an unknown rule),
 * -EEXIST (a rule for this network already), -ENOENT (removing one that
 * is not there), -ENOSPC (KFAB_NL_ENGINE_RULES_MAX), -ENOMEM.
 */
int kfab_node_change_engine_rule(struct net *net, const u8 *prefix,
				 unsigned int prefix_len, u32 rule,
				 bool remove)
{
	struct kfab_node *node = kfab_node_of(net);
	struct kfab_engine_rule *add = NULL;
	int rc = 0;

	if (!kfab_prefix_valid(prefix, prefix_len) ||
	    rule > KFAB_NL_ENGINE_RDMA)
		return -EINVAL;
	if (!remove) {
		add = kzalloc(sizeof(*add), GFP_KERNEL_ACCOUNT);
		if (!add)
			return -ENOMEM;
		memcpy(add->node, prefix, sizeof(add->node));
		add->prefix_len = prefix_len;
		add->rule = rule;
	}
	mutex_lock(&node->lock);
	if (remove) {
		rc = kfab_engine_rule_remove(node, prefix, prefix_len);
	} else if (kfab_engine_rule_find(node, prefix, prefix_len)) {
		rc = -EEXIST;
	} else if (node->nr_engine_rules >= KFAB_NL_ENGINE_RULES_MAX) {
		rc = -ENOSPC;
	} else {
		list_add_tail_rcu(&add->link, &node->engine_rules);
		node->nr_engine_rules++;
		add = NULL;
	}
	mutex_unlock(&node->lock);
	kfree(add);
	return rc;
}

/**
 * kfab_engine_rule_for_each() - a node's engine rules, for netlink dumps
 * @node: the node
 * @pos: rules to skip; advanced past each one @fn took
 * @fn: called with each rule, under the node's lock
 * @arg: @fn's
 *
 * Return: 0 after the last one, or what @fn returned to stop.
 */
int kfab_engine_rule_for_each(struct kfab_node *node, unsigned long *pos,
			      kfab_engine_rule_fn fn, void *arg)
{
	struct kfab_engine_rule *r;
	unsigned long i = 0;
	int rc = 0;

	mutex_lock(&node->lock);
	list_for_each_entry(r, &node->engine_rules, link) {
		if (i++ < *pos)
			continue;
		rc = fn(arg, r->node, r->prefix_len, r->rule);
		if (rc)
			break;
		*pos = i;
	}
	mutex_unlock(&node->lock);
	return rc;
}

/* ---- namespaces ---- */

static int __net_init kfab_node_net_init(struct net *net)
{
	struct kfab_node *node = kfab_node_of(net);

	node->net = net;
	mutex_init(&node->lock);
	INIT_LIST_HEAD(&node->listeners);
	INIT_LIST_HEAD(&node->peers);
	INIT_LIST_HEAD(&node->conns);
	INIT_LIST_HEAD(&node->allowed);
	INIT_LIST_HEAD(&node->engine_rules);
	xa_init(&node->services);
	return 0;
}

/*
 * The namespace goes (its last user is gone, so no endpoint is left in
 * it): close the listeners, then every peer with what it holds.
 */
static void __net_exit kfab_node_net_exit(struct net *net)
{
	struct kfab_node *node = kfab_node_of(net);
	struct kfab_listener *l;

	mutex_lock(&node->lock);
	node->dying = true;
	mutex_unlock(&node->lock);
	/* One by one: kfab_node_is_self() may walk the list meanwhile. */
	for (;;) {
		mutex_lock(&node->lock);
		l = list_first_entry_or_null(&node->listeners,
					     struct kfab_listener, link);
		if (l)
			list_del_rcu(&l->link);
		mutex_unlock(&node->lock);
		if (!l)
			break;
		kfab_listener_free(l);
	}
	kfab_node_close_peers(node);
	mutex_lock(&node->lock);
	kfab_allow_clear(node);
	kfab_engine_rules_clear(node);
	mutex_unlock(&node->lock);
	WARN_ON(!xa_empty(&node->services));
	xa_destroy(&node->services);
	mutex_destroy(&node->lock);
}

static struct pernet_operations kfab_node_net_ops = {
	.init = kfab_node_net_init,
	.exit = kfab_node_net_exit,
	.id = &kfab_node_id,
	.size = sizeof(struct kfab_node),
};

int kfab_node_init(void)
{
	kfab_incarnation = get_random_u32() ?: 1;
	return register_pernet_subsys(&kfab_node_net_ops);
}

void kfab_node_exit(void)
{
	unregister_pernet_subsys(&kfab_node_net_ops);
}

/* debugfs "net": every node's listeners and peers. */
/* A network as an administrator writes it: 10.77.0.0/24, fd77::/64. */
static void kfab_allow_show(struct seq_file *s, const struct kfab_allow *a)
{
	if (a->prefix_len >= 96 && ipv6_addr_v4mapped((void *)a->node))
		seq_printf(s, "%pI4/%u", &a->node[12], a->prefix_len - 96);
	else
		seq_printf(s, "%pI6c/%u", a->node, a->prefix_len);
}

void kfab_node_debugfs_show(struct seq_file *s)
{
	struct kfab_listener *l;
	struct kfab_allow *a;
	struct net *net;

	seq_printf(s, "incarnation %08x\n", kfab_incarnation);
	down_read(&net_rwsem);
	for_each_net(net) {
		struct kfab_node *node = kfab_node_of(net);

		mutex_lock(&node->lock);
		list_for_each_entry(l, &node->listeners, link) {
			seq_printf(s, "netns %u listen ", net->ns.inum);
			kfab_addr_show(s, &l->addr);
			seq_putc(s, '\n');
		}
		list_for_each_entry(a, &node->allowed, link) {
			seq_printf(s, "netns %u allow ", net->ns.inum);
			kfab_allow_show(s, a);
			seq_putc(s, '\n');
		}
		mutex_unlock(&node->lock);
		kfab_peer_debugfs_show(s, node);
	}
	up_read(&net_rwsem);
}
