/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Nodes and the transport between them (Documentation/net.rst).
 *
 * A node is one network namespace of one machine, known by the addresses
 * of its listeners (node.c); an endpoint has one of them.  Messages to
 * endpoints of other nodes go to a struct kfab_peer (peer.c), one per pair
 * of node addresses (one of ours, one of theirs), which owns the
 * operations in flight and speaks kfab's wire protocol (wire.h) over one
 * connection of an engine: the kernel's TCP (tcp.c) today, RDMA later,
 * each behind a struct kfab_engine.  peer.c and node.c know frames and
 * addresses; an engine knows how bytes move.
 *
 * Locking (kfab.h "Locking" has the module-wide order): kfab_node.lock
 * (listeners, the peer list) comes before any peer's lock; a peer's
 * kfab_peer.lock (its operations, its connection, its queues) is taken
 * without any receive context's lock held, and a receive context's lock
 * may be taken under it.
 */
#ifndef KFAB_NET_H
#define KFAB_NET_H

#include <linux/in6.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>

#include "kfab.h"

struct kfab_buf;
struct kfab_conn;
struct kfab_engine;
struct kfab_msg;
struct kfab_peer;

/**
 * struct kfab_listener - where a node accepts connections
 * @link: on its node's @listeners, first one first
 * @addr: its node address (KFAB_ADDR_INET, @ep and @incarnation 0)
 * @node: the node
 * @engine: the engine it accepts connections of
 * @priv: the engine's
 * @rcu: freed after a grace period (kfab_node_is_self() reads @addr)
 */
struct kfab_listener {
	struct list_head link;
	struct kfab_addr addr;
	struct kfab_node *node;
	const struct kfab_engine *engine;
	void *priv;
	struct rcu_head rcu;
};

/**
 * struct kfab_node - kfab in one network namespace
 * @net: the namespace (no reference: the node lives as long as it does)
 * @lock: @listeners, @peers, @allowed, @engine_rules, @dying
 * @listeners: struct kfab_listener, the first names the node (changed
 *	under @lock, walked under @lock or RCU)
 * @peers: struct kfab_peer, one per remote node reached or reaching us
 * @services: service number -> struct kfab_ep_core, reserved at creation
 *	(no entry), published at enable; looked up under RCU
 * @conns: connections being read (struct kfab_conn)
 * @allowed: struct kfab_allow, the networks of nodes it may exchange
 *	messages with (empty: any); changed under @lock, walked under RCU
 * @nr_allowed: entries on @allowed
 * @engine_rules: struct kfab_engine_rule, the engine its peers call the
 *	nodes of a network with (empty: auto); changed under @lock,
 *	walked under RCU
 * @nr_engine_rules: entries on @engine_rules
 * @dying: the namespace goes: no new listener, no new peer
 */
struct kfab_node {
	struct net *net;
	struct mutex lock;	/* see above */
	struct list_head listeners;
	struct list_head peers;
	struct list_head conns;
	struct list_head allowed;
	unsigned int nr_allowed;
	struct list_head engine_rules;
	unsigned int nr_engine_rules;
	struct xarray services;
	bool dying;
};

/**
 * struct kfab_conn - a connection between this node and another, read side
 * @link: on its node's @conns while its reader runs
 * @node: the local node
 * @engine: the engine it goes by (which embeds it in its own struct)
 * @local: the node address of this node's end (@ep 0): the listener it
 *	came to, or the one the peer that called talks from
 * @peer: the peer it carries frames of (a reference): set by the HELLO of
 *	a connection in, before the reader starts on a connection out
 * @out: its send side, the same connection
 *
 * The engine reads it with kfab_conn_rx() until that fails, then calls
 * kfab_conn_closed() and takes it off @conns.
 */
struct kfab_conn {
	struct list_head link;
	struct kfab_node *node;
	const struct kfab_engine *engine;
	struct kfab_addr local;
	struct kfab_peer *peer;
	struct kfab_link *out;
};

/**
 * struct kfab_link - a connection's send side, held by a peer to send on
 * @engine: the engine it goes by (which embeds it in its own struct)
 * @conn: its read side
 */
struct kfab_link {
	const struct kfab_engine *engine;
	struct kfab_conn *conn;
};

/**
 * struct kfab_engine - one way of moving frames between nodes
 * @name: for debugfs
 * @listen: open a listener (its @addr and @node set; the node's lock held)
 * @unlisten: close it; no connection is accepted after this returns
 * @connect: call a node; blocks for at most kfab_peer_timeout_ms.  The
 *	link is the caller's (@release ends it); nobody reads it but
 *	@recv_link until @start
 * @start: start reading a connection made by @connect (its @peer set)
 *	with kfab_conn_rx(); @local is this node's end
 * @hold: a connection in becomes a peer's to send on too (a reference,
 *	ended by @release)
 * @release: stop sending on a link and shut its connection down
 * @abort: optional: as @release, for a link given up while the session
 *	goes on, which the other node must take for a reset, not an end
 *	(without it, @release)
 * @send_kvec: send @len bytes of @kv (copied), blocking
 * @send_pages: send @len bytes of a message's pinned pages from @off,
 *	without copying them where the engine can, blocking
 * @recv: read exactly what @to describes from a connection, blocking
 *	(-ESHUTDOWN: it ended)
 * @recv_link: read exactly what @to describes from a link not started
 *	(the WELCOME), blocking for at most kfab_peer_timeout_ms
 * @shutdown: end a connection; its reader (work on kfab_net_wq) fails and
 *	closes it
 * @rx_pending: optional: whether bytes of a connection wait to be read, a
 *	hint that lets the reader send one acknowledgment for a burst of
 *	frames (without it, one after each small message)
 *
 * @owner: the module of an engine that registers (engine.c)
 * @link: on the list of registered engines
 *
 * Another engine (kfab_rdma.ko) provides the same and registers it; a
 * peer calls with kfab_engine_for()'s, and a connection is its engine's
 * (kfab_conn.engine, kfab_link.engine) whoever made it.
 */
struct kfab_engine {
	const char *name;
	struct module *owner;
	struct list_head link;
	int (*listen)(struct kfab_listener *l);
	void (*unlisten)(struct kfab_listener *l);
	int (*connect)(struct kfab_node *node, const struct kfab_addr *addr,
		       struct kfab_link **out);
	void (*start)(struct kfab_link *link, const struct kfab_addr *local);
	struct kfab_link *(*hold)(struct kfab_conn *conn);
	void (*release)(struct kfab_link *link);
	void (*abort)(struct kfab_link *link);
	int (*send_kvec)(struct kfab_link *link, struct kvec *kv,
			 unsigned int nr, size_t len, bool more);
	int (*send_pages)(struct kfab_link *link, struct kfab_buf *buf,
			  size_t off, size_t len, bool more);
	int (*recv)(struct kfab_conn *conn, struct iov_iter *to);
	int (*recv_link)(struct kfab_link *link, struct iov_iter *to);
	void (*shutdown)(struct kfab_conn *conn);
	bool (*rx_pending)(struct kfab_conn *conn);
};

extern u32 kfab_incarnation;
extern struct workqueue_struct *kfab_net_wq;
extern unsigned int kfab_peer_timeout_ms;

/* node.c */
int kfab_node_init(void);
void kfab_node_exit(void);
struct kfab_node *kfab_node_of(struct net *net);
bool kfab_addr_valid(const struct kfab_addr *addr);
void kfab_addr_show(struct seq_file *s, const struct kfab_addr *a);
bool kfab_addr_same_node(const struct kfab_addr *a, const struct kfab_addr *b);
int kfab_node_bind(struct net *net, const struct kfab_addr *want,
		   struct kfab_ep_core *core);
int kfab_node_publish(struct kfab_ep_core *core);
void kfab_node_unbind(struct kfab_ep_core *core);
void kfab_node_release(struct kfab_ep_core *core);
int kfab_node_resolve(struct net *net, const struct kfab_addr *dst,
		      struct kfab_ep_core **target);
int kfab_node_find_ep(struct kfab_node *node, const struct kfab_addr *dst,
		      struct kfab_ep_core **target);
bool kfab_node_is_self(struct kfab_node *node, const struct kfab_addr *addr);
int kfab_ioctl_net_listen(struct kfab_ucmd *ucmd);
int kfab_ioctl_net_allow(struct kfab_ucmd *ucmd);
bool kfab_node_allows(struct kfab_node *node, const u8 *addr);
void kfab_node_debugfs_show(struct seq_file *s);
void kfab_conns_close(struct kfab_node *node);
void kfab_conns_close_engine(struct kfab_node *node,
			     const struct kfab_engine *e);
void kfab_listener_add_engine(struct kfab_node *node, struct kfab_listener *l,
			      const struct kfab_engine *e);
void kfab_node_drop_engine(struct kfab_node *node, const struct kfab_engine *e);

/*
 * engine.c: the registered engines.  kfab.ko exports what an engine's
 * module uses (in namespace KFAB_ENGINE) only when built with one.
 */
#ifdef CONFIG_KFAB_RDMA
#define EXPORT_SYMBOL_FOR_KFAB_ENGINES(sym) EXPORT_SYMBOL_NS_GPL(sym, KFAB_ENGINE)
#else
#define EXPORT_SYMBOL_FOR_KFAB_ENGINES(sym)
#endif
const struct kfab_engine *kfab_engine_for(struct kfab_node *node,
					  const struct kfab_addr *addr,
					  bool *fallback);
void kfab_engine_register(struct kfab_engine *e);
void kfab_engine_unregister(struct kfab_engine *e);
void kfab_engines_hold(void);
void kfab_engines_release(void);
void kfab_listener_add_engines(struct kfab_node *node, struct kfab_listener *l);

/* A listener as netlink shows it, copied under its node's lock. */
struct kfab_listener_info {
	struct kfab_addr addr;
	const char *engine;
};

/* Called for each listener, each allowed network; non-zero stops. */
typedef int (*kfab_listener_info_fn)(void *arg,
				     const struct kfab_listener_info *info);
typedef int (*kfab_allow_info_fn)(void *arg, const u8 *node,
				  unsigned int prefix_len);
typedef int (*kfab_engine_rule_fn)(void *arg, const u8 *node,
				   unsigned int prefix_len, u32 rule);
/* The one path of the ioctls and netlink commands that change them */
int kfab_node_change_listener(struct net *net, struct kfab_addr *addr,
			      bool remove);
int kfab_node_change_allow(struct net *net, const struct kfab_net_allow *cmd);
int kfab_listener_for_each(struct kfab_node *node, unsigned long *pos,
			   kfab_listener_info_fn fn, void *arg);
int kfab_allow_for_each(struct kfab_node *node, unsigned long *pos,
			kfab_allow_info_fn fn, void *arg);
/* The engine rules (node.c, Documentation/net.rst "Choosing the engine") */
u32 kfab_node_engine_rule(struct kfab_node *node, const u8 *addr);
int kfab_node_change_engine_rule(struct net *net, const u8 *prefix,
				 unsigned int prefix_len, u32 rule,
				 bool remove);
int kfab_engine_rule_for_each(struct kfab_node *node, unsigned long *pos,
			      kfab_engine_rule_fn fn, void *arg);

/* tcp.c: the TCP engine */
extern const struct kfab_engine kfab_tcp_engine;

/* peer.c: peers and the wire protocol */
int kfab_peer_init(void);
void kfab_peer_exit(void);
void kfab_peer_unplug(struct kfab_ep *ep);
int kfab_peer_send(struct kfab_ep *ep, const struct kfab_addr *dst,
		   const struct kfab_msg *msg, struct kfab_req *req);
int kfab_conn_rx(struct kfab_conn *conn);
void kfab_conn_closed(struct kfab_conn *conn, int rc);
void kfab_node_close_peers(struct kfab_node *node);
void kfab_node_recheck_peers(struct kfab_node *node);
void kfab_node_peers_drop_engine(struct kfab_node *node,
				 const struct kfab_engine *e);
void kfab_peer_debugfs_show(struct seq_file *s, struct kfab_node *node);

/* A peer as netlink shows it, copied under its lock (peer.c). */
struct kfab_peer_info {
	struct kfab_addr local;
	struct kfab_addr addr;
	int state;		/* enum kfab_nl_peer_state */
	u32 incarnation;
	const char *engine;
	u64 tx_msgs, tx_bytes, rx_msgs, rx_bytes, failures;
	/* Its connection and the sessions over it */
	bool connected;		/* a connection is up (out or in) */
	u32 session, remote_session;
	u32 tx_seq, rx_seq, acked;
	u64 resumed, resent, crossed;
	s64 credit;
	u32 owed;
};

/* Called for each peer by kfab_peer_for_each(); non-zero stops the walk. */
typedef int (*kfab_peer_info_fn)(void *arg, const struct kfab_peer_info *info);

/* netlink.c: a peer went up or down */
void kfab_nl_notify_peer(struct net *net, const struct kfab_peer_info *info,
			 bool up, bool own_group);
int kfab_peer_for_each(struct kfab_node *node, unsigned long *pos,
		       kfab_peer_info_fn fn, void *arg);

#endif /* KFAB_NET_H */
