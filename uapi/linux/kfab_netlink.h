/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * kfab's generic netlink family: inspection, administration and events
 * (Documentation/netlink.rst has the long form).
 *
 * Conventions:
 *
 *  - The family is KFAB_GENL_NAME, version KFAB_GENL_VERSION, no family
 *    header.  Commands are strictly validated: an attribute the command's
 *    policy does not list, a short or oversize attribute, or trailing bytes
 *    are -EINVAL with an extended ack.
 *  - *_GET commands are dumps (NLM_F_DUMP): one message per object, in the
 *    command's own number, resuming across as many messages as it takes.
 *    Each message carries only the attributes that apply to it.
 *  - What a socket sees depends on its opener: CAP_NET_ADMIN or
 *    CAP_SYS_ADMIN in the initial user namespace sees everything; the
 *    admin of a network namespace's user namespace sees what processes of
 *    that user namespace (or below it) opened in that network namespace;
 *    anyone else sees what processes of their own uid opened in their user
 *    namespace or below.  IDs (uid, pid) are as the reader's namespaces
 *    see them.  Changes (KFAB_NL_CMD_AV_DEL) need CAP_NET_ADMIN in the
 *    initial user namespace, module-wide limits (KFAB_NL_CMD_LIMIT_SET)
 *    CAP_NET_ADMIN or CAP_SYS_ADMIN there; changes of a network namespace's transport
 *    (KFAB_NL_CMD_LISTEN_ADD and the like) CAP_NET_ADMIN over the user
 *    namespace that owns the socket's network namespace, as
 *    KFAB_IOC_NET_LISTEN and KFAB_IOC_NET_ALLOW ask of their caller.  A
 *    network namespace's listeners are shown to anyone in it; its peers,
 *    allow-list and engine rules to its admin only.
 *  - The multicast group KFAB_GENL_MCGRP_EVENTS carries the event commands
 *    of the initial network namespace; joining it needs CAP_NET_ADMIN.
 *    Events carry ids as the initial namespaces see them.  A peer's events
 *    also go to the group in the peer's own network namespace.
 *  - Attributes only ever get added at the end; numbers never change.
 */
#ifndef _UAPI_LINUX_KFAB_NETLINK_H
#define _UAPI_LINUX_KFAB_NETLINK_H

#define KFAB_GENL_NAME		"kfab"
#define KFAB_GENL_VERSION	1
#define KFAB_GENL_MCGRP_EVENTS	"events"

enum kfab_nl_cmd {
	KFAB_NL_CMD_UNSPEC,
	KFAB_NL_CMD_CTX_GET,	/* dump: open files and kernel consumers */
	KFAB_NL_CMD_OBJ_GET,	/* dump: objects; KFAB_NL_ATTR_CTX_ID filters */
	KFAB_NL_CMD_AV_GET,	/* dump: address vectors of the node */
	KFAB_NL_CMD_AV_DEL,	/* do: unlink a named AV (KFAB_NL_ATTR_AV_NAME) */
	KFAB_NL_CMD_PEER_GET,	/* dump: peers of the socket's network namespace */
	KFAB_NL_CMD_STAT_GET,	/* do: node totals, as the reader may see them */
	/* Events, on KFAB_GENL_MCGRP_EVENTS only */
	KFAB_NL_CMD_CTX_NEW,
	KFAB_NL_CMD_CTX_DEL,
	KFAB_NL_CMD_AV_NEW,	/* a name appeared */
	KFAB_NL_CMD_AV_GONE,	/* a name went: unlinked or last close */
	KFAB_NL_CMD_LISTEN_GET,	/* dump: listeners of the socket's network namespace */
	KFAB_NL_CMD_ALLOW_GET,	/* dump: its allow-list of peer networks */
	/* Events, on KFAB_GENL_MCGRP_EVENTS only */
	KFAB_NL_CMD_PEER_UP,	/* a peer's connection out was made */
	KFAB_NL_CMD_PEER_DOWN,	/* it failed or closed, or the node went */
	KFAB_NL_CMD_AV_CHANGED,	/* entries of a named AV changed (coalesced) */
	/* do: change the socket's network namespace (its admin) */
	KFAB_NL_CMD_LISTEN_ADD,	/* LISTEN_NODE, LISTEN_PORT (optional) */
	KFAB_NL_CMD_LISTEN_DEL,	/* the same */
	KFAB_NL_CMD_ALLOW_ADD,	/* ALLOW_NODE, ALLOW_PREFIX_LEN */
	KFAB_NL_CMD_ALLOW_DEL,	/* the same */
	/* Module-wide limits (the writable module parameters) */
	KFAB_NL_CMD_LIMIT_GET,	/* dump: every limit, its value and range */
	KFAB_NL_CMD_LIMIT_SET,	/* do: LIMIT_NAME, LIMIT_VALUE; initial admin */
	/* The engine rules of the socket's network namespace (its admin) */
	KFAB_NL_CMD_ENGINE_GET,	/* dump: ENGINE_NODE, ENGINE_PREFIX_LEN, ENGINE_RULE */
	KFAB_NL_CMD_ENGINE_ADD,	/* do: the same three */
	KFAB_NL_CMD_ENGINE_DEL,	/* do: ENGINE_NODE, ENGINE_PREFIX_LEN */
	__KFAB_NL_CMD_MAX,
};

#define KFAB_NL_CMD_MAX (__KFAB_NL_CMD_MAX - 1)

/* KFAB_NL_ATTR_OBJ_TYPE */
enum kfab_nl_obj_type {
	KFAB_NL_OBJ_DOMAIN = 1,
	KFAB_NL_OBJ_AV = 2,
	KFAB_NL_OBJ_CQ = 3,
	KFAB_NL_OBJ_CNTR = 4,
	KFAB_NL_OBJ_EP = 5,
	KFAB_NL_OBJ_SRX = 6,
};

/*
 * KFAB_NL_ATTR_ENGINE_RULE: how this node calls the nodes of a network
 * (Documentation/net.rst "Choosing the engine").  AUTO: the registered
 * engine first, TCP when it cannot reach the node (no rule says the same);
 * TCP: TCP only; RDMA: the RDMA engine only, never TCP.
 */
enum kfab_nl_engine_rule {
	KFAB_NL_ENGINE_AUTO = 0,
	KFAB_NL_ENGINE_TCP = 1,
	KFAB_NL_ENGINE_RDMA = 2,
};

/* The most engine rules a network namespace holds */
#define KFAB_NL_ENGINE_RULES_MAX	64

/* KFAB_NL_ATTR_PEER_STATE */
enum kfab_nl_peer_state {
	KFAB_NL_PEER_IDLE = 0,
	KFAB_NL_PEER_UP = 1,
	KFAB_NL_PEER_CLOSED = 2,
};

enum kfab_nl_attr {
	KFAB_NL_ATTR_UNSPEC,
	KFAB_NL_ATTR_PAD,
	/* Contexts */
	KFAB_NL_ATTR_CTX_ID,		/* u32 */
	KFAB_NL_ATTR_PID,		/* u32, in the reader's pid namespace; 0: none */
	KFAB_NL_ATTR_UID,		/* u32, in the reader's user namespace */
	KFAB_NL_ATTR_COMM,		/* string */
	KFAB_NL_ATTR_CGROUP_ID,		/* u64, cgroup v2 id of the opener */
	KFAB_NL_ATTR_NETNS_INO,		/* u32 */
	KFAB_NL_ATTR_USERNS_INO,	/* u32 */
	KFAB_NL_ATTR_PIDNS_INO,		/* u32 */
	KFAB_NL_ATTR_KERNEL,		/* flag: a kernel consumer's context */
	/* Objects */
	KFAB_NL_ATTR_OBJ_ID,		/* u32 */
	KFAB_NL_ATTR_OBJ_TYPE,		/* u32, enum kfab_nl_obj_type */
	KFAB_NL_ATTR_OBJ_USERS,		/* u32 */
	KFAB_NL_ATTR_DOMAIN_ID,		/* u32, the parent domain */
	KFAB_NL_ATTR_ENTRIES,		/* u32, ring slots or AV capacity */
	KFAB_NL_ATTR_CQ_POSTED,		/* u64 */
	KFAB_NL_ATTR_CQ_OVERFLOWED,	/* u64 */
	KFAB_NL_ATTR_CQ_BACKLOG,	/* u32, held back now: ring full */
	KFAB_NL_ATTR_CQ_ERRORS,		/* u32, error completions queued */
	KFAB_NL_ATTR_CNTR_VALUE,	/* u64 */
	KFAB_NL_ATTR_CNTR_ERR,		/* u64 */
	KFAB_NL_ATTR_EP_NUM,		/* u64 */
	KFAB_NL_ATTR_EP_ENABLED,	/* flag */
	KFAB_NL_ATTR_EP_AV_ID,		/* u32 */
	KFAB_NL_ATTR_EP_SRX_ID,		/* u32 */
	KFAB_NL_ATTR_EP_TX_CQ_ID,	/* u32 */
	KFAB_NL_ATTR_EP_RX_CQ_ID,	/* u32 */
	/* Address vectors */
	KFAB_NL_ATTR_AV_SERIAL,		/* u64, node-unique */
	KFAB_NL_ATTR_AV_NAME,		/* string, named AVs only */
	KFAB_NL_ATTR_AV_TYPE,		/* u32, KFAB_AV_TYPE_* */
	KFAB_NL_ATTR_AV_GID,		/* u32, in the reader's user namespace */
	KFAB_NL_ATTR_AV_MODE,		/* u32 */
	KFAB_NL_ATTR_AV_PERSIST,	/* flag */
	KFAB_NL_ATTR_AV_OPENERS,	/* u32 */
	KFAB_NL_ATTR_AV_USED,		/* u32 */
	KFAB_NL_ATTR_AV_GENERATION,	/* u64 */
	KFAB_NL_ATTR_READ_ONLY,		/* flag: an AV handle that may not change it */
	/* Peers */
	KFAB_NL_ATTR_PEER_NODE,		/* binary, 16 bytes: IPv6 (or v4-mapped) */
	KFAB_NL_ATTR_PEER_PORT,		/* u16, host order */
	KFAB_NL_ATTR_PEER_STATE,	/* u32, enum kfab_nl_peer_state */
	KFAB_NL_ATTR_PEER_INCARNATION,	/* u32 */
	KFAB_NL_ATTR_PEER_ENGINE,	/* string */
	KFAB_NL_ATTR_TX_MSGS,		/* u64 */
	KFAB_NL_ATTR_TX_BYTES,		/* u64 */
	KFAB_NL_ATTR_RX_MSGS,		/* u64 */
	KFAB_NL_ATTR_RX_BYTES,		/* u64 */
	KFAB_NL_ATTR_FAILURES,		/* u64 */
	/* Totals (KFAB_NL_CMD_STAT_GET) */
	KFAB_NL_ATTR_STAT_CONTEXTS,	/* u32 */
	KFAB_NL_ATTR_STAT_OBJECTS,	/* u32 */
	KFAB_NL_ATTR_STAT_AVS,		/* u32 */
	KFAB_NL_ATTR_STAT_NAMED_AVS,	/* u32 */
	KFAB_NL_ATTR_STAT_PEERS,	/* u32 */
	/* Endpoint traffic (TX_MSGS, TX_BYTES: sends posted; RX_*: received) */
	KFAB_NL_ATTR_TX_ERRORS,		/* u64, sends completed in error */
	KFAB_NL_ATTR_RX_ERRORS,		/* u64, receives completed in error */
	KFAB_NL_ATTR_TRUNCATED,		/* u64, receives truncated */
	KFAB_NL_ATTR_CANCELED,		/* u64, requests canceled */
	KFAB_NL_ATTR_UNEXP_BYTES,	/* u64, unexpected bytes held now */
	/* A peer is a pair of node addresses: this node's end of it */
	KFAB_NL_ATTR_PEER_LOCAL_NODE,	/* binary, 16 bytes, as PEER_NODE */
	KFAB_NL_ATTR_PEER_LOCAL_PORT,	/* u16, host order */
	/* Listeners (KFAB_NL_CMD_LISTEN_GET; also PEER_ENGINE) */
	KFAB_NL_ATTR_LISTEN_NODE,	/* binary, 16 bytes, as PEER_NODE */
	KFAB_NL_ATTR_LISTEN_PORT,	/* u16, host order */
	/* The allow-list (KFAB_NL_CMD_ALLOW_GET) */
	KFAB_NL_ATTR_ALLOW_NODE,	/* binary, 16 bytes: a network, as PEER_NODE */
	KFAB_NL_ATTR_ALLOW_PREFIX_LEN,	/* u32, 0-128 (v4-mapped: 96 + the v4 length) */
	/* Memory: endpoints (PINNED_*), contexts (PINNED_BYTES, KBUF_BYTES) */
	KFAB_NL_ATTR_PINNED_BYTES,	/* u64, user memory pinned now, whole pages */
	KFAB_NL_ATTR_PINNED_PEAK,	/* u64, the most pinned at once */
	KFAB_NL_ATTR_KBUF_BYTES,	/* u64, kernel memory it maps (rings, tables) */
	/* Where an endpoint or SRX receives (also UNEXP_BYTES) */
	KFAB_NL_ATTR_UNEXP_MSGS,	/* u64, unexpected messages held now */
	KFAB_NL_ATTR_UNEXP_TOTAL,	/* u64, messages ever held unexpected */
	/* A peer's connection and its sessions (Documentation/net.rst) */
	KFAB_NL_ATTR_PEER_CONNECTED,	/* u8, 1: a connection is up */
	KFAB_NL_ATTR_PEER_SESSION,	/* u32, our session with it (0: none yet) */
	KFAB_NL_ATTR_PEER_REMOTE_SESSION, /* u32, its session with us (0: not known) */
	KFAB_NL_ATTR_PEER_TX_SEQ,	/* u32, frames of our session sent */
	KFAB_NL_ATTR_PEER_RX_SEQ,	/* u32, frames of its session carried out */
	KFAB_NL_ATTR_PEER_ACKED,	/* u32, frames of ours it acknowledged */
	KFAB_NL_ATTR_PEER_RESUMED,	/* u64, sessions resumed over a new connection */
	KFAB_NL_ATTR_PEER_RESENT,	/* u64, frames sent again on one */
	KFAB_NL_ATTR_PEER_CROSSED,	/* u64, our calls that gave way to its */
	KFAB_NL_ATTR_PEER_CREDIT,	/* s64, bytes we may still send it */
	KFAB_NL_ATTR_PEER_OWED,		/* u32, credit released, not yet returned */
	/* Limits (KFAB_NL_CMD_LIMIT_GET/_SET) */
	KFAB_NL_ATTR_LIMIT_NAME,	/* string: the module parameter's name */
	KFAB_NL_ATTR_LIMIT_VALUE,	/* u64 */
	KFAB_NL_ATTR_LIMIT_MIN,		/* u64, the least LIMIT_SET takes */
	KFAB_NL_ATTR_LIMIT_MAX,		/* u64, the most */
	/* Engine rules (KFAB_NL_CMD_ENGINE_GET/_ADD/_DEL) */
	KFAB_NL_ATTR_ENGINE_NODE,	/* binary, 16 bytes: a network, as ALLOW_NODE */
	KFAB_NL_ATTR_ENGINE_PREFIX_LEN,	/* u32, 0-128, as ALLOW_PREFIX_LEN */
	KFAB_NL_ATTR_ENGINE_RULE,	/* u32, enum kfab_nl_engine_rule */
	__KFAB_NL_ATTR_MAX,
};

#define KFAB_NL_ATTR_MAX (__KFAB_NL_ATTR_MAX - 1)

#endif /* _UAPI_LINUX_KFAB_NETLINK_H */
