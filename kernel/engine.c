// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Engines: the ways frames move between nodes (net.h, Documentation/
 * net.rst "Engines").  TCP (tcp.c) is part of kfab.ko and reaches every
 * address.  Other engines live in modules of their own (kfab_rdma.ko
 * over the kernel's verbs), so that kfab.ko needs no RDMA stack; such a
 * module registers its engine here while it is loaded.
 *
 * A registered engine is preferred: a peer calls with it first and falls
 * back to TCP when it cannot reach the other node (kfab_engine_for(),
 * peer.c), unless the administrator's engine rules (node.c) say "tcp" or
 * "rdma" for the other node's address.  Every listener of a node listens with TCP and with each
 * registered engine that can listen on its address, on the same port.
 *
 * Locking: kfab_engines_lock (a mutex) covers the list and is taken before
 * any node's lock (kfab.h "Locking").  A peer's connection may belong to
 * any engine: peer.c calls a link's own engine (kfab_link.engine).
 */
#include <linux/module.h>
#include <linux/rculist.h>
#include <linux/rtnetlink.h>
#include <linux/kfab_netlink.h>
#include <net/net_namespace.h>

#include "kfab.h"
#include "net.h"

static DEFINE_MUTEX(kfab_engines_lock);
static LIST_HEAD(kfab_engines);

/* The registered engine called @name, or NULL; under RCU. */
static const struct kfab_engine *kfab_engine_named(const char *name)
{
	const struct kfab_engine *e;

	list_for_each_entry_rcu(e, &kfab_engines, link)
		if (!strcmp(e->name, name))
			return e;
	return NULL;
}

/**
 * kfab_engine_for() - the engine a peer of @node calls @addr with
 * @node: the peer's node
 * @addr: the node it calls
 * @fallback: set when TCP may take over if that engine cannot reach it
 *
 * By the node's engine rules (node.c): "auto" (no rule) gives the newest
 * registered engine, or TCP, and lets TCP take over; "tcp" gives TCP;
 * "rdma" the engine named so, with no fallback, or NULL while no such
 * engine is registered (the call fails as an unreachable node's does).
 * The caller holds @node's lock, as kfab_node_peers_drop_engine() does
 * when it changes a peer's engine.  The peer keeps no reference on it:
 * an engine's module ends every connection of its engine before it goes
 * (kfab_engine_unregister()).
 *
 * Return: the engine, or NULL.
 */
const struct kfab_engine *kfab_engine_for(struct kfab_node *node,
					  const struct kfab_addr *addr,
					  bool *fallback)
{
	u32 rule = kfab_node_engine_rule(node, addr->node);
	const struct kfab_engine *e;

	lockdep_assert_held(&node->lock);
	*fallback = rule == KFAB_NL_ENGINE_AUTO;
	if (rule == KFAB_NL_ENGINE_TCP)
		return &kfab_tcp_engine;
	rcu_read_lock();
	if (rule == KFAB_NL_ENGINE_RDMA)
		e = kfab_engine_named("rdma");
	else
		e = list_first_or_null_rcu(&kfab_engines, struct kfab_engine,
					   link) ?: &kfab_tcp_engine;
	rcu_read_unlock();
	return e;
}

/*
 * Open @e's listener beside each of @node's TCP listeners.  One that
 * cannot listen (no device on the address) is left out: TCP serves it.
 */
static void kfab_node_listen_engine(struct kfab_node *node,
				    struct kfab_engine *e)
{
	struct kfab_listener *l;

	mutex_lock(&node->lock);
	list_for_each_entry(l, &node->listeners, link)
		if (l->engine == &kfab_tcp_engine)
			kfab_listener_add_engine(node, l, e);
	mutex_unlock(&node->lock);
}

/**
 * kfab_engine_register() - an engine's module offers its engine
 * @e: the engine, with @owner set
 *
 * From now on peers call with it first and listeners listen with it too,
 * those already open included.
 */
void kfab_engine_register(struct kfab_engine *e)
{
	struct net *net;

	mutex_lock(&kfab_engines_lock);
	list_add_rcu(&e->link, &kfab_engines);
	down_read(&net_rwsem);
	for_each_net(net)
		kfab_node_listen_engine(kfab_node_of(net), e);
	up_read(&net_rwsem);
	mutex_unlock(&kfab_engines_lock);
}
EXPORT_SYMBOL_FOR_KFAB_ENGINES(kfab_engine_register);

/**
 * kfab_engine_unregister() - an engine's module goes
 * @e: the engine
 *
 * No peer calls with it any more and its listeners close; every
 * connection of it is shut down and its reader has closed it when this
 * returns.  A peer that lost its connection this way calls again, over
 * TCP, and its session goes on (the engine's shutdown reads as a reset).
 * What the connections still hold is the engine's to wait for.
 */
void kfab_engine_unregister(struct kfab_engine *e)
{
	struct net *net;

	mutex_lock(&kfab_engines_lock);
	list_del_rcu(&e->link);
	synchronize_rcu();
	down_read(&net_rwsem);
	for_each_net(net)
		kfab_node_drop_engine(kfab_node_of(net), e);
	up_read(&net_rwsem);
	mutex_unlock(&kfab_engines_lock);
}
EXPORT_SYMBOL_FOR_KFAB_ENGINES(kfab_engine_unregister);

/*
 * The list stays as it is while the caller opens a listener (node.c): this
 * comes before the node's lock.
 */
void kfab_engines_hold(void)
{
	mutex_lock(&kfab_engines_lock);
}

void kfab_engines_release(void)
{
	mutex_unlock(&kfab_engines_lock);
}

/* New TCP listener @l of @node: the registered engines listen there too. */
void kfab_listener_add_engines(struct kfab_node *node, struct kfab_listener *l)
{
	struct kfab_engine *e;

	lockdep_assert_held(&kfab_engines_lock);
	lockdep_assert_held(&node->lock);
	list_for_each_entry(e, &kfab_engines, link)
		kfab_listener_add_engine(node, l, e);
}
