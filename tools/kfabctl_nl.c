// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfabctl's netlink half: the commands in the shape of iproute2's rdma,
 * over the generic netlink family "kfab" (uapi/linux/kfab_netlink.h).
 *
 *   kfabctl [-j] [-p] [-d] OBJECT show [FILTER VALUE]...
 *	OBJECT: ctx, domain, av, cq, cntr, ep, srx, peer, listen, allow,
 *	engine
 *	FILTER: pid, uid, name (comm, or an AV's name), type (object type),
 *	ctx (a context id)
 *   kfabctl [-j] [-p] stat show
 *   kfabctl [-j] monitor
 *   kfabctl av del NAME
 *   kfabctl [-j] [-p] net show
 *   kfabctl net listen add|del ADDR [PORT]
 *   kfabctl net allow add|del NET[/LEN]
 *   kfabctl net engine add NET[/LEN] auto|tcp|rdma, net engine del NET[/LEN]
 *   kfabctl [-j] [-p] net engine show (also: engine show)
 *   kfabctl [-j] [-p] limit show
 *   kfabctl limit set NAME VALUE
 *
 * Every message becomes one record: a list of (key, value) printed as
 * "key value ..." lines, or as a JSON object built with json-c (-j; -p
 * pretty-prints).  The keys are stable: Documentation/kfabctl.8.md lists
 * them.  -d adds the detail keys (namespaces, cgroup, references).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <json-c/json.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include <linux/kfab.h>
#include <linux/kfab_netlink.h>

#include "kfabctl.h"

enum kv_type { KV_U16, KV_U32, KV_U64, KV_STR, KV_FLAG, KV_MODE, KV_NODE,
	       KV_OBJ_TYPE, KV_AV_TYPE, KV_PEER_STATE, KV_NET, KV_S64,
	       KV_BOOL, KV_ENGINE_NET, KV_ENGINE_RULE };

/* One attribute: its JSON key, how to print it, and whether -d shows it. */
struct kv_attr {
	const char *key;
	enum kv_type type;
	bool detail;
};

static const struct kv_attr kv_attrs[KFAB_NL_ATTR_MAX + 1] = {
	[KFAB_NL_ATTR_CTX_ID] = { "ctx", KV_U32 },
	[KFAB_NL_ATTR_PID] = { "pid", KV_U32 },
	[KFAB_NL_ATTR_UID] = { "uid", KV_U32 },
	[KFAB_NL_ATTR_COMM] = { "comm", KV_STR },
	[KFAB_NL_ATTR_CGROUP_ID] = { "cgroup", KV_U64, true },
	[KFAB_NL_ATTR_NETNS_INO] = { "netns", KV_U32, true },
	[KFAB_NL_ATTR_USERNS_INO] = { "userns", KV_U32, true },
	[KFAB_NL_ATTR_PIDNS_INO] = { "pidns", KV_U32, true },
	[KFAB_NL_ATTR_KERNEL] = { "kernel", KV_FLAG },
	[KFAB_NL_ATTR_OBJ_ID] = { "id", KV_U32 },
	[KFAB_NL_ATTR_OBJ_TYPE] = { "type", KV_OBJ_TYPE },
	[KFAB_NL_ATTR_OBJ_USERS] = { "users", KV_U32, true },
	[KFAB_NL_ATTR_DOMAIN_ID] = { "domain", KV_U32 },
	[KFAB_NL_ATTR_ENTRIES] = { "entries", KV_U32 },
	[KFAB_NL_ATTR_CQ_POSTED] = { "posted", KV_U64 },
	[KFAB_NL_ATTR_CQ_OVERFLOWED] = { "overflowed", KV_U64 },
	[KFAB_NL_ATTR_CQ_BACKLOG] = { "backlog", KV_U32 },
	[KFAB_NL_ATTR_CQ_ERRORS] = { "errors", KV_U32 },
	[KFAB_NL_ATTR_CNTR_VALUE] = { "value", KV_U64 },
	[KFAB_NL_ATTR_CNTR_ERR] = { "err", KV_U64 },
	[KFAB_NL_ATTR_EP_NUM] = { "num", KV_U64 },
	[KFAB_NL_ATTR_EP_ENABLED] = { "enabled", KV_FLAG },
	[KFAB_NL_ATTR_EP_AV_ID] = { "av", KV_U32 },
	[KFAB_NL_ATTR_EP_SRX_ID] = { "srx", KV_U32 },
	[KFAB_NL_ATTR_EP_TX_CQ_ID] = { "tx_cq", KV_U32 },
	[KFAB_NL_ATTR_EP_RX_CQ_ID] = { "rx_cq", KV_U32 },
	[KFAB_NL_ATTR_AV_SERIAL] = { "serial", KV_U64 },
	[KFAB_NL_ATTR_AV_NAME] = { "name", KV_STR },
	[KFAB_NL_ATTR_AV_TYPE] = { "av_type", KV_AV_TYPE },
	[KFAB_NL_ATTR_AV_GID] = { "gid", KV_U32 },
	[KFAB_NL_ATTR_AV_MODE] = { "mode", KV_MODE },
	[KFAB_NL_ATTR_AV_PERSIST] = { "persist", KV_FLAG },
	[KFAB_NL_ATTR_AV_OPENERS] = { "openers", KV_U32 },
	[KFAB_NL_ATTR_AV_USED] = { "used", KV_U32 },
	[KFAB_NL_ATTR_AV_GENERATION] = { "generation", KV_U64, true },
	[KFAB_NL_ATTR_READ_ONLY] = { "read_only", KV_FLAG },
	[KFAB_NL_ATTR_PEER_NODE] = { "node", KV_NODE },
	[KFAB_NL_ATTR_PEER_PORT] = { "port", KV_U16 },
	[KFAB_NL_ATTR_PEER_LOCAL_NODE] = { "local_node", KV_NODE },
	[KFAB_NL_ATTR_PEER_LOCAL_PORT] = { "local_port", KV_U16 },
	[KFAB_NL_ATTR_PEER_STATE] = { "state", KV_PEER_STATE },
	[KFAB_NL_ATTR_PEER_INCARNATION] = { "incarnation", KV_U32, true },
	[KFAB_NL_ATTR_PEER_ENGINE] = { "engine", KV_STR },
	[KFAB_NL_ATTR_TX_MSGS] = { "tx_msgs", KV_U64 },
	[KFAB_NL_ATTR_TX_BYTES] = { "tx_bytes", KV_U64 },
	[KFAB_NL_ATTR_RX_MSGS] = { "rx_msgs", KV_U64 },
	[KFAB_NL_ATTR_RX_BYTES] = { "rx_bytes", KV_U64 },
	[KFAB_NL_ATTR_FAILURES] = { "failures", KV_U64 },
	[KFAB_NL_ATTR_STAT_CONTEXTS] = { "contexts", KV_U32 },
	[KFAB_NL_ATTR_STAT_OBJECTS] = { "objects", KV_U32 },
	[KFAB_NL_ATTR_STAT_AVS] = { "avs", KV_U32 },
	[KFAB_NL_ATTR_STAT_NAMED_AVS] = { "named_avs", KV_U32 },
	[KFAB_NL_ATTR_STAT_PEERS] = { "peers", KV_U32 },
	[KFAB_NL_ATTR_TX_ERRORS] = { "tx_errors", KV_U64 },
	[KFAB_NL_ATTR_RX_ERRORS] = { "rx_errors", KV_U64 },
	[KFAB_NL_ATTR_TRUNCATED] = { "truncated", KV_U64 },
	[KFAB_NL_ATTR_CANCELED] = { "canceled", KV_U64 },
	[KFAB_NL_ATTR_UNEXP_BYTES] = { "unexp_bytes", KV_U64 },
	[KFAB_NL_ATTR_LISTEN_NODE] = { "node", KV_NODE },
	[KFAB_NL_ATTR_LISTEN_PORT] = { "port", KV_U16 },
	/* With ALLOW_PREFIX_LEN: "net": "10.77.0.0/24" */
	[KFAB_NL_ATTR_ALLOW_NODE] = { "net", KV_NET },
	[KFAB_NL_ATTR_PINNED_BYTES] = { "pinned_bytes", KV_U64 },
	[KFAB_NL_ATTR_PINNED_PEAK] = { "pinned_peak", KV_U64 },
	[KFAB_NL_ATTR_KBUF_BYTES] = { "kbuf_bytes", KV_U64 },
	[KFAB_NL_ATTR_UNEXP_MSGS] = { "unexp_msgs", KV_U64 },
	[KFAB_NL_ATTR_UNEXP_TOTAL] = { "unexp_total", KV_U64 },
	[KFAB_NL_ATTR_PEER_CONNECTED] = { "connected", KV_BOOL },
	[KFAB_NL_ATTR_PEER_SESSION] = { "session", KV_U32 },
	[KFAB_NL_ATTR_PEER_REMOTE_SESSION] = { "remote_session", KV_U32 },
	[KFAB_NL_ATTR_PEER_TX_SEQ] = { "frames_sent", KV_U32 },
	[KFAB_NL_ATTR_PEER_RX_SEQ] = { "frames_done", KV_U32 },
	[KFAB_NL_ATTR_PEER_ACKED] = { "frames_acked", KV_U32 },
	[KFAB_NL_ATTR_PEER_RESUMED] = { "resumed", KV_U64 },
	[KFAB_NL_ATTR_PEER_RESENT] = { "resent", KV_U64 },
	[KFAB_NL_ATTR_PEER_CROSSED] = { "crossed", KV_U64 },
	[KFAB_NL_ATTR_PEER_CREDIT] = { "credit", KV_S64 },
	[KFAB_NL_ATTR_PEER_OWED] = { "owed", KV_U32 },
	[KFAB_NL_ATTR_LIMIT_NAME] = { "name", KV_STR },
	[KFAB_NL_ATTR_LIMIT_VALUE] = { "value", KV_U64 },
	[KFAB_NL_ATTR_LIMIT_MIN] = { "min", KV_U64 },
	[KFAB_NL_ATTR_LIMIT_MAX] = { "max", KV_U64 },
	/* With ENGINE_PREFIX_LEN: "net": "10.77.0.0/24" */
	[KFAB_NL_ATTR_ENGINE_NODE] = { "net", KV_ENGINE_NET },
	[KFAB_NL_ATTR_ENGINE_RULE] = { "engine", KV_ENGINE_RULE },
};

static const char * const obj_type_names[] = {
	[KFAB_NL_OBJ_DOMAIN] = "domain", [KFAB_NL_OBJ_AV] = "av",
	[KFAB_NL_OBJ_CQ] = "cq", [KFAB_NL_OBJ_CNTR] = "cntr",
	[KFAB_NL_OBJ_EP] = "ep", [KFAB_NL_OBJ_SRX] = "srx",
};

static const char * const peer_state_names[] = {
	[KFAB_NL_PEER_IDLE] = "idle", [KFAB_NL_PEER_UP] = "up",
	[KFAB_NL_PEER_CLOSED] = "closed",
};

/* What kfabctl net engine add takes and shows */
static const char * const engine_rule_names[] = {
	[KFAB_NL_ENGINE_AUTO] = "auto", [KFAB_NL_ENGINE_TCP] = "tcp",
	[KFAB_NL_ENGINE_RDMA] = "rdma",
};

static const char * const event_names[KFAB_NL_CMD_MAX + 1] = {
	[KFAB_NL_CMD_CTX_NEW] = "ctx_new", [KFAB_NL_CMD_CTX_DEL] = "ctx_del",
	[KFAB_NL_CMD_AV_NEW] = "av_new", [KFAB_NL_CMD_AV_GONE] = "av_gone",
	[KFAB_NL_CMD_PEER_UP] = "peer_up", [KFAB_NL_CMD_PEER_DOWN] = "peer_down",
	[KFAB_NL_CMD_AV_CHANGED] = "av_changed",
};

static const char *name_of(const char * const *names, size_t n, uint32_t v)
{
	return v < n && names[v] ? names[v] : "unknown";
}

#define NAME_OF(names, v) name_of(names, sizeof(names) / sizeof(names[0]), v)

/* What the user asked for: the output style and the filters. */
struct show {
	bool json, pretty, details;
	json_object *records;		/* -j: the array printed at the end */
	int obj_type;			/* objects: only this type, 0: any */
	long pid, uid, ctx;		/* -1: any */
	const char *name;
	/* ctx -> its opener, to show and filter objects by it */
	struct ctx_row { uint32_t ctx, pid, uid; char comm[32]; } *ctxs;
	size_t nr_ctxs;
	const char *event;		/* monitor: the record's event */
	const char *kind;		/* net show: a plain line's first word */
};

/* A network as an administrator writes it: 10.77.0.0/24, fd77::/64. */
static json_object *json_of_net(struct nlattr *nla, struct nlattr *len_nla)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const uint8_t *n = nla_data(nla);
	uint32_t len = len_nla ? nla_get_u32(len_nla) : 128;
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (nla_len(nla) != 16)
		return json_object_new_string("?");
	if (len >= 96 && !memcmp(n, v4mapped, sizeof(v4mapped))) {
		inet_ntop(AF_INET, n + 12, buf, sizeof(buf));
		len -= 96;
	} else {
		inet_ntop(AF_INET6, n, buf, sizeof(buf));
	}
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "/%u", len);
	return json_object_new_string(buf);
}

static json_object *json_of(const struct kv_attr *a, struct nlattr *nla,
			    struct nlattr **tb)
{
	char buf[INET6_ADDRSTRLEN];

	switch (a->type) {
	case KV_U16:
		return json_object_new_int(nla_get_u16(nla));
	case KV_U32:
	case KV_MODE:
		return json_object_new_int64(nla_get_u32(nla));
	case KV_U64:
		return json_object_new_uint64(nla_get_u64(nla));
	case KV_S64:
		return json_object_new_int64(nla_get_s64(nla));
	case KV_BOOL:
		return json_object_new_boolean(nla_get_u8(nla));
	case KV_STR:
		return json_object_new_string(nla_get_string(nla));
	case KV_FLAG:
		return json_object_new_boolean(1);
	case KV_NODE:
		if (nla_len(nla) != 16 ||
		    !inet_ntop(AF_INET6, nla_data(nla), buf, sizeof(buf)))
			return json_object_new_string("?");
		return json_object_new_string(buf);
	case KV_OBJ_TYPE:
		return json_object_new_string(NAME_OF(obj_type_names,
						      nla_get_u32(nla)));
	case KV_AV_TYPE:
		return json_object_new_string(nla_get_u32(nla) == KFAB_AV_TYPE_MAP ?
					      "map" : "table");
	case KV_PEER_STATE:
		return json_object_new_string(NAME_OF(peer_state_names,
						      nla_get_u32(nla)));
	case KV_NET:
		return json_of_net(nla, tb[KFAB_NL_ATTR_ALLOW_PREFIX_LEN]);
	case KV_ENGINE_NET:
		return json_of_net(nla, tb[KFAB_NL_ATTR_ENGINE_PREFIX_LEN]);
	case KV_ENGINE_RULE:
		return json_object_new_string(NAME_OF(engine_rule_names,
						      nla_get_u32(nla)));
	}
	return NULL;
}

/* One record, as JSON (also the source of the plain output). */
static json_object *record_of(struct show *s, struct nlattr **tb)
{
	json_object *rec = json_object_new_object();
	int i;

	if (s->event)
		json_object_object_add(rec, "event",
				       json_object_new_string(s->event));
	for (i = 1; i <= KFAB_NL_ATTR_MAX; i++) {
		const struct kv_attr *a = &kv_attrs[i];

		if (!tb[i] || !a->key || (a->detail && !s->details))
			continue;
		json_object_object_add(rec, a->key, json_of(a, tb[i], tb));
	}
	return rec;
}

static void print_plain(json_object *rec)
{
	const char *sep = "";

	json_object_object_foreach(rec, key, val) {
		/* A boolean prints as its key when true, else not at all. */
		if (json_object_is_type(val, json_type_boolean) &&
		    !json_object_get_boolean(val))
			continue;
		if (json_object_is_type(val, json_type_boolean))
			printf("%s%s", sep, key);
		else if (!strcmp(key, "mode"))
			printf("%s%s %04o", sep, key, json_object_get_int(val));
		else
			printf("%s%s %s", sep, key, json_object_get_string(val));
		sep = " ";
	}
	putchar('\n');
}

static void emit(struct show *s, json_object *rec)
{
	if (s->json && s->records) {
		json_object_array_add(s->records, rec);
		return;
	}
	if (s->json)
		puts(json_object_to_json_string_ext(rec, s->pretty ?
						    JSON_C_TO_STRING_PRETTY :
						    JSON_C_TO_STRING_PLAIN));
	else if (s->kind)
		printf("%s ", s->kind);
	if (!s->json)
		print_plain(rec);
	json_object_put(rec);
	fflush(stdout);
}

static const struct ctx_row *ctx_row(const struct show *s, uint32_t ctx)
{
	size_t i;

	for (i = 0; i < s->nr_ctxs; i++)
		if (s->ctxs[i].ctx == ctx)
			return &s->ctxs[i];
	return NULL;
}

static bool u32_filter(long want, struct nlattr *nla)
{
	return want < 0 || (nla && nla_get_u32(nla) == (uint32_t)want);
}

/* The filters, on a record's attributes (objects: on their context's). */
static bool wanted(const struct show *s, struct nlattr **tb)
{
	const struct ctx_row *row;

	if (s->obj_type && (!tb[KFAB_NL_ATTR_OBJ_TYPE] ||
			    nla_get_u32(tb[KFAB_NL_ATTR_OBJ_TYPE]) != (uint32_t)s->obj_type))
		return false;
	if (!u32_filter(s->ctx, tb[KFAB_NL_ATTR_CTX_ID]))
		return false;
	if (tb[KFAB_NL_ATTR_OBJ_ID] && tb[KFAB_NL_ATTR_CTX_ID]) {
		row = ctx_row(s, nla_get_u32(tb[KFAB_NL_ATTR_CTX_ID]));
		if (!row)
			return false;
		return (s->pid < 0 || row->pid == s->pid) &&
		       (s->uid < 0 || row->uid == s->uid) &&
		       (!s->name || !strcmp(row->comm, s->name));
	}
	if (!u32_filter(s->pid, tb[KFAB_NL_ATTR_PID]) ||
	    !u32_filter(s->uid, tb[KFAB_NL_ATTR_UID]))
		return false;
	if (s->name) {
		struct nlattr *n = tb[KFAB_NL_ATTR_COMM] ?: tb[KFAB_NL_ATTR_AV_NAME] ?:
				 tb[KFAB_NL_ATTR_LIMIT_NAME];

		return n && !strcmp(nla_get_string(n), s->name);
	}
	return true;
}

static int parse(struct nl_msg *msg, struct nlattr **tb, uint8_t *cmd)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	*cmd = ((struct genlmsghdr *)nlmsg_data(nlh))->cmd;
	return genlmsg_parse(nlh, 0, tb, KFAB_NL_ATTR_MAX, NULL);
}

/* Objects get their context's pid, uid and comm, as rdma's resources do. */
static void add_opener(const struct show *s, json_object *rec,
		       struct nlattr **tb)
{
	const struct ctx_row *row;

	if (!tb[KFAB_NL_ATTR_OBJ_ID] || !tb[KFAB_NL_ATTR_CTX_ID])
		return;
	row = ctx_row(s, nla_get_u32(tb[KFAB_NL_ATTR_CTX_ID]));
	if (!row)
		return;
	json_object_object_add(rec, "pid", json_object_new_int64(row->pid));
	json_object_object_add(rec, "uid", json_object_new_int64(row->uid));
	json_object_object_add(rec, "comm", json_object_new_string(row->comm));
}

static int on_record(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KFAB_NL_ATTR_MAX + 1];
	struct show *s = arg;
	json_object *rec;
	uint8_t cmd;

	if (parse(msg, tb, &cmd) < 0 || !wanted(s, tb))
		return NL_OK;
	rec = record_of(s, tb);
	add_opener(s, rec, tb);
	emit(s, rec);
	return NL_OK;
}

static int on_ctx_row(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KFAB_NL_ATTR_MAX + 1];
	struct show *s = arg;
	struct ctx_row *row;
	uint8_t cmd;

	if (parse(msg, tb, &cmd) < 0 || !tb[KFAB_NL_ATTR_CTX_ID])
		return NL_OK;
	row = realloc(s->ctxs, (s->nr_ctxs + 1) * sizeof(*row));
	if (!row)
		return NL_STOP;
	s->ctxs = row;
	row = &s->ctxs[s->nr_ctxs++];
	memset(row, 0, sizeof(*row));
	row->ctx = nla_get_u32(tb[KFAB_NL_ATTR_CTX_ID]);
	row->pid = tb[KFAB_NL_ATTR_PID] ? nla_get_u32(tb[KFAB_NL_ATTR_PID]) : 0;
	row->uid = tb[KFAB_NL_ATTR_UID] ? nla_get_u32(tb[KFAB_NL_ATTR_UID]) : 0;
	if (tb[KFAB_NL_ATTR_COMM])
		snprintf(row->comm, sizeof(row->comm), "%s",
			 nla_get_string(tb[KFAB_NL_ATTR_COMM]));
	return NL_OK;
}

static struct nl_sock *nl_open(int *family)
{
	struct nl_sock *sk = nl_socket_alloc();

	if (!sk || genl_connect(sk)) {
		fprintf(stderr, "kfabctl: generic netlink: %s\n", strerror(errno));
		nl_socket_free(sk);
		return NULL;
	}
	*family = genl_ctrl_resolve(sk, KFAB_GENL_NAME);
	if (*family < 0) {
		fprintf(stderr, "kfabctl: no generic netlink family \"%s\" (is kfab.ko loaded?)\n",
			KFAB_GENL_NAME);
		nl_socket_free(sk);
		return NULL;
	}
	return sk;
}

/*
 * The end of a dump: a dump refused at its start (EPERM) says so in its
 * NLMSG_DONE, which libnl takes for a plain end.
 */
static int on_done(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	int *err = arg, e;

	if (nlmsg_datalen(nlh) >= (int)sizeof(e)) {
		memcpy(&e, nlmsg_data(nlh), sizeof(e));
		if (e < 0)
			*err = e;
	}
	return NL_STOP;
}

/* A request's header; the caller adds its attributes. */
static struct nl_msg *request_new(int family, uint8_t cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (msg && !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0,
				flags, cmd, KFAB_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* Sends @msg (and frees it) and reads its answer. */
static int request_send(struct nl_sock *sk, struct nl_msg *msg,
			nl_recvmsg_msg_cb_t fn, void *arg)
{
	int rc, done_err = 0;

	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, fn, arg);
	nl_socket_modify_cb(sk, NL_CB_FINISH, NL_CB_CUSTOM, on_done, &done_err);
	rc = nl_send_auto(sk, msg);
	nlmsg_free(msg);
	if (rc < 0)
		return rc;
	/* libnl asks for an ack and reads it with the reply (or the error). */
	rc = nl_recvmsgs_default(sk);
	return rc < 0 ? rc : done_err ? -nl_syserr2nlerr(-done_err) : rc;
}

/* Sends one request (a dump with @flags NLM_F_DUMP) and reads its answer. */
static int request(struct nl_sock *sk, int family, uint8_t cmd, int flags,
		   nl_recvmsg_msg_cb_t fn, void *arg, const char *name)
{
	struct nl_msg *msg = request_new(family, cmd, flags);

	if (!msg)
		return -NLE_NOMEM;
	if (name && nla_put_string(msg, KFAB_NL_ATTR_AV_NAME, name)) {
		nlmsg_free(msg);
		return -NLE_NOMEM;
	}
	return request_send(sk, msg, fn, arg);
}

static int nl_fail(const char *what, int rc)
{
	fprintf(stderr, "kfabctl: %s: %s\n", what, nl_geterror(rc));
	return 1;
}

static const struct { const char *name; uint8_t cmd; int type; } objects[] = {
	{ "ctx", KFAB_NL_CMD_CTX_GET, 0 },
	{ "domain", KFAB_NL_CMD_OBJ_GET, KFAB_NL_OBJ_DOMAIN },
	{ "cq", KFAB_NL_CMD_OBJ_GET, KFAB_NL_OBJ_CQ },
	{ "cntr", KFAB_NL_CMD_OBJ_GET, KFAB_NL_OBJ_CNTR },
	{ "ep", KFAB_NL_CMD_OBJ_GET, KFAB_NL_OBJ_EP },
	{ "srx", KFAB_NL_CMD_OBJ_GET, KFAB_NL_OBJ_SRX },
	{ "obj", KFAB_NL_CMD_OBJ_GET, 0 },
	{ "av", KFAB_NL_CMD_AV_GET, 0 },
	{ "peer", KFAB_NL_CMD_PEER_GET, 0 },
	{ "listen", KFAB_NL_CMD_LISTEN_GET, 0 },
	{ "allow", KFAB_NL_CMD_ALLOW_GET, 0 },
	{ "engine", KFAB_NL_CMD_ENGINE_GET, 0 },
	{ "stat", KFAB_NL_CMD_STAT_GET, 0 },
	{ "limit", KFAB_NL_CMD_LIMIT_GET, 0 },
};

static int parse_filters(struct show *s, int argc, char **argv)
{
	unsigned long v;
	int i;

	for (i = 0; i < argc; i += 2) {
		if (i + 1 >= argc) {
			fprintf(stderr, "kfabctl: %s: needs a value\n", argv[i]);
			return -1;
		}
		if (!strcmp(argv[i], "name")) {
			s->name = argv[i + 1];
			continue;
		}
		if (!strcmp(argv[i], "type")) {
			for (v = 1; v < sizeof(obj_type_names) / sizeof(obj_type_names[0]); v++)
				if (!strcmp(obj_type_names[v], argv[i + 1]))
					s->obj_type = v;
			if (!s->obj_type) {
				fprintf(stderr, "kfabctl: type %s: unknown\n", argv[i + 1]);
				return -1;
			}
			continue;
		}
		if (kfabctl_parse_uint(argv[i + 1], 10, UINT32_MAX, &v)) {
			fprintf(stderr, "kfabctl: %s %s: not a number\n", argv[i], argv[i + 1]);
			return -1;
		}
		if (!strcmp(argv[i], "pid"))
			s->pid = v;
		else if (!strcmp(argv[i], "uid"))
			s->uid = v;
		else if (!strcmp(argv[i], "ctx"))
			s->ctx = v;
		else {
			fprintf(stderr, "kfabctl: unknown filter %s (pid, uid, name, type, ctx)\n",
				argv[i]);
			return -1;
		}
	}
	return 0;
}

static int show(struct show *s, const char *object, int argc, char **argv)
{
	struct nl_sock *sk;
	size_t i, n = sizeof(objects) / sizeof(objects[0]);
	int family, rc = 1;

	for (i = 0; i < n && strcmp(objects[i].name, object); i++)
		;
	if (i == n || argc < 1 || strcmp(argv[0], "show")) {
		fprintf(stderr, "kfabctl: usage: kfabctl [-j] [-p] [-d] OBJECT show [FILTER VALUE]...\n");
		return 2;
	}
	s->obj_type = objects[i].type;
	if (parse_filters(s, argc - 1, argv + 1))
		return 2;
	sk = nl_open(&family);
	if (!sk)
		return 1;
	if (objects[i].cmd == KFAB_NL_CMD_OBJ_GET) {
		rc = request(sk, family, KFAB_NL_CMD_CTX_GET, NLM_F_DUMP,
			     on_ctx_row, s, NULL);
		if (rc < 0) {
			rc = nl_fail("contexts", rc);
			goto out;
		}
	}
	if (s->json)
		s->records = json_object_new_array();
	rc = request(sk, family, objects[i].cmd,
		     objects[i].cmd == KFAB_NL_CMD_STAT_GET ? 0 : NLM_F_DUMP,
		     on_record, s, NULL);
	if (rc < 0) {
		rc = nl_fail(object, rc);
		goto out;
	}
	if (s->json)
		puts(json_object_to_json_string_ext(s->records, s->pretty ?
						    JSON_C_TO_STRING_PRETTY :
						    JSON_C_TO_STRING_PLAIN));
	rc = 0;
out:
	json_object_put(s->records);
	free(s->ctxs);
	nl_socket_free(sk);
	return rc;
}

/*
 * kfabctl net show: the listeners, allowed networks, engine rules and
 * peers of the caller's network namespace; each line starts with what it
 * is (JSON: an object of four arrays).  All but the listeners are for the
 * namespace's admin: others get the listeners only.
 */
static int net_show(struct show *s)
{
	static const struct { const char *kind; uint8_t cmd; } parts[] = {
		{ "listen", KFAB_NL_CMD_LISTEN_GET },
		{ "allow", KFAB_NL_CMD_ALLOW_GET },
		{ "engine", KFAB_NL_CMD_ENGINE_GET },
		{ "peer", KFAB_NL_CMD_PEER_GET },
	};
	json_object *all = NULL;
	struct nl_sock *sk;
	int family, rc = 0;
	size_t i;

	sk = nl_open(&family);
	if (!sk)
		return 1;
	if (s->json)
		all = json_object_new_object();
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if (s->json)
			s->records = json_object_new_array();
		s->kind = parts[i].kind;
		rc = request(sk, family, parts[i].cmd, NLM_F_DUMP, on_record,
			     s, NULL);
		if (rc == -NLE_PERM && i) {
			/* Not the namespace's admin: listeners only. */
			json_object_put(s->records);
			s->records = NULL;
			rc = 0;
			continue;
		}
		if (rc < 0) {
			rc = nl_fail(parts[i].kind, rc);
			goto out;
		}
		if (s->json)
			json_object_object_add(all, parts[i].kind, s->records);
		s->records = NULL;
		rc = 0;
	}
	if (s->json)
		puts(json_object_to_json_string_ext(all, s->pretty ?
						    JSON_C_TO_STRING_PRETTY :
						    JSON_C_TO_STRING_PLAIN));
out:
	json_object_put(s->records);
	json_object_put(all);
	nl_socket_free(sk);
	return rc;
}

static int on_event(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KFAB_NL_ATTR_MAX + 1];
	struct show *s = arg;
	uint8_t cmd;

	if (parse(msg, tb, &cmd) < 0)
		return NL_OK;
	s->event = NAME_OF(event_names, cmd);
	emit(s, record_of(s, tb));
	return NL_OK;
}

/* Prints events until killed; each a line (a JSON object with -j). */
static int monitor(struct show *s)
{
	int family, group, rc;
	struct nl_sock *sk = nl_open(&family);

	if (!sk)
		return 1;
	group = genl_ctrl_resolve_grp(sk, KFAB_GENL_NAME, KFAB_GENL_MCGRP_EVENTS);
	rc = group < 0 ? group : nl_socket_add_membership(sk, group);
	if (rc < 0) {
		nl_socket_free(sk);
		return nl_fail("join the events group (needs CAP_NET_ADMIN)", rc);
	}
	nl_socket_disable_seq_check(sk);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, s);
	if (!s->json)
		fprintf(stderr, "kfabctl: monitoring kfab events\n");
	for (;;) {
		rc = nl_recvmsgs_default(sk);
		if (rc < 0 && rc != -NLE_INTR) {
			nl_socket_free(sk);
			return nl_fail("monitor", rc);
		}
	}
}

static int ignore_reply(struct nl_msg *msg __attribute__((unused)),
			void *arg __attribute__((unused)))
{
	return NL_OK;
}

static int av_del(const char *name)
{
	int family, rc;
	struct nl_sock *sk = nl_open(&family);

	if (!sk)
		return 1;
	rc = request(sk, family, KFAB_NL_CMD_AV_DEL, 0, ignore_reply,
		     NULL, name);
	nl_socket_free(sk);
	return rc < 0 ? nl_fail(name, rc) : 0;
}

/*
 * The answer to a change: libnl's own codes lose the errno, which the
 * kernel's documented errors are; an error callback keeps it.
 */
static int on_error(struct sockaddr_nl *who __attribute__((unused)),
		    struct nlmsgerr *e, void *arg)
{
	*(int *)arg = e->error;
	return NL_STOP;
}

static int on_ack(struct nl_msg *msg __attribute__((unused)), void *arg)
{
	*(int *)arg = 0;
	return NL_STOP;
}

/* Sends a change, @msg (freed here); 0 or a negative errno. */
static int change_send(struct nl_sock *sk, struct nl_msg *msg)
{
	int rc, err = -EIO;

	nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, on_error, &err);
	nl_socket_modify_cb(sk, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &err);
	rc = nl_send_auto(sk, msg);
	nlmsg_free(msg);
	if (rc < 0)
		return -EIO;
	rc = nl_recvmsgs_default(sk);
	return err ? err : rc < 0 ? -EIO : 0;
}

/*
 * kfabctl net listen add|del ADDR [PORT]: a listener of this network
 * namespace, as KFAB_NL_CMD_LISTEN_ADD/_DEL (CAP_NET_ADMIN over it).
 */
static int net_listen(bool add, int argc, char **argv)
{
	struct kfab_addr a;
	unsigned long port;
	struct nl_sock *sk;
	struct nl_msg *msg;
	int family, rc;

	if (kfabctl_parse_node(argv[0], &a) ||
	    (argc == 2 && (a.port ||
			   kfabctl_parse_uint(argv[1], 10, 65535, &port)))) {
		fprintf(stderr, "kfabctl: net listen: not an address and port: %s%s%s\n",
			argv[0], argc == 2 ? " " : "", argc == 2 ? argv[1] : "");
		return 2;
	}
	if (argc == 2)
		a.port = htons((uint16_t)port);
	sk = nl_open(&family);
	if (!sk)
		return 1;
	msg = request_new(family, add ? KFAB_NL_CMD_LISTEN_ADD :
					KFAB_NL_CMD_LISTEN_DEL, 0);
	if (!msg || nla_put(msg, KFAB_NL_ATTR_LISTEN_NODE, sizeof(a.node),
			    a.node) ||
	    (a.port && nla_put_u16(msg, KFAB_NL_ATTR_LISTEN_PORT,
				   ntohs(a.port)))) {
		nlmsg_free(msg);
		nl_socket_free(sk);
		return 1;
	}
	rc = change_send(sk, msg);
	nl_socket_free(sk);
	if (rc)
		fprintf(stderr, "kfabctl: net listen %s %s: %s\n",
			add ? "add" : "del", argv[0], strerror(-rc));
	return rc ? 1 : 0;
}

/*
 * kfabctl net allow add|del NET[/LEN]: the allow-list of this network
 * namespace, as KFAB_NL_CMD_ALLOW_ADD/_DEL (CAP_NET_ADMIN over it).
 */
static int net_allow(bool add, const char *arg)
{
	struct kfab_net_allow c = { 0 };
	struct nl_sock *sk;
	struct nl_msg *msg;
	int family, rc;

	if (kfabctl_parse_net(arg, &c)) {
		fprintf(stderr, "kfabctl: net allow: not a network: %s\n", arg);
		return 2;
	}
	sk = nl_open(&family);
	if (!sk)
		return 1;
	msg = request_new(family, add ? KFAB_NL_CMD_ALLOW_ADD :
					KFAB_NL_CMD_ALLOW_DEL, 0);
	if (!msg || nla_put(msg, KFAB_NL_ATTR_ALLOW_NODE, sizeof(c.node),
			    c.node) ||
	    nla_put_u32(msg, KFAB_NL_ATTR_ALLOW_PREFIX_LEN, c.prefix_len)) {
		nlmsg_free(msg);
		nl_socket_free(sk);
		return 1;
	}
	rc = change_send(sk, msg);
	nl_socket_free(sk);
	if (rc)
		fprintf(stderr, "kfabctl: net allow %s %s: %s%s\n",
			add ? "add" : "del", arg, strerror(-rc),
			rc == -EINVAL ? " (bits set past the prefix?)" : "");
	return rc ? 1 : 0;
}

/*
 * kfabctl net engine add NET[/LEN] auto|tcp|rdma, net engine del
 * NET[/LEN]: the engine rules of this network namespace, as
 * KFAB_NL_CMD_ENGINE_ADD/_DEL (CAP_NET_ADMIN over it).
 */
static int net_engine(bool add, const char *arg, const char *engine)
{
	struct kfab_net_allow c = { 0 };
	struct nl_sock *sk;
	struct nl_msg *msg;
	uint32_t rule = 0;
	int family, rc;

	if (kfabctl_parse_net(arg, &c)) {
		fprintf(stderr, "kfabctl: net engine: not a network: %s\n", arg);
		return 2;
	}
	if (add) {
		while (rule < sizeof(engine_rule_names) / sizeof(engine_rule_names[0]) &&
		       strcmp(engine_rule_names[rule], engine))
			rule++;
		if (rule == sizeof(engine_rule_names) / sizeof(engine_rule_names[0])) {
			fprintf(stderr, "kfabctl: net engine: %s: not auto, tcp or rdma\n",
				engine);
			return 2;
		}
	}
	sk = nl_open(&family);
	if (!sk)
		return 1;
	msg = request_new(family, add ? KFAB_NL_CMD_ENGINE_ADD :
					KFAB_NL_CMD_ENGINE_DEL, 0);
	if (!msg || nla_put(msg, KFAB_NL_ATTR_ENGINE_NODE, sizeof(c.node),
			    c.node) ||
	    nla_put_u32(msg, KFAB_NL_ATTR_ENGINE_PREFIX_LEN, c.prefix_len) ||
	    (add && nla_put_u32(msg, KFAB_NL_ATTR_ENGINE_RULE, rule))) {
		nlmsg_free(msg);
		nl_socket_free(sk);
		return 1;
	}
	rc = change_send(sk, msg);
	nl_socket_free(sk);
	if (rc)
		fprintf(stderr, "kfabctl: net engine %s %s: %s%s\n",
			add ? "add" : "del", arg, strerror(-rc),
			rc == -EINVAL ? " (bits set past the prefix?)" :
			rc == -EEXIST ? " (del it first)" : "");
	return rc ? 1 : 0;
}

/*
 * kfabctl limit set NAME VALUE: a module-wide limit, as
 * KFAB_NL_CMD_LIMIT_SET (CAP_NET_ADMIN or CAP_SYS_ADMIN in the initial
 * user namespace).
 */
static int limit_set(const char *name, const char *arg)
{
	unsigned long value;
	struct nl_sock *sk;
	struct nl_msg *msg;
	int family, rc;

	if (kfabctl_parse_uint(arg, 0, UINT64_MAX, &value)) {
		fprintf(stderr, "kfabctl: limit set %s: not a number: %s\n",
			name, arg);
		return 2;
	}
	sk = nl_open(&family);
	if (!sk)
		return 1;
	msg = request_new(family, KFAB_NL_CMD_LIMIT_SET, 0);
	if (!msg || nla_put_string(msg, KFAB_NL_ATTR_LIMIT_NAME, name) ||
	    nla_put_u64(msg, KFAB_NL_ATTR_LIMIT_VALUE, value)) {
		nlmsg_free(msg);
		nl_socket_free(sk);
		return 1;
	}
	rc = change_send(sk, msg);
	nl_socket_free(sk);
	if (rc)
		fprintf(stderr, "kfabctl: limit set %s %s: %s%s\n", name, arg,
			strerror(-rc),
			rc == -ENOENT ? " (no such limit: kfabctl limit show)" :
			rc == -EINVAL ? " (out of range: kfabctl limit show)" :
			"");
	return rc ? 1 : 0;
}

/* kfabctl net listen|allow|engine add|del ...: true with *@rc when it was one. */
static bool net_change(int argc, char **argv, int *rc)
{
	bool add;

	if (argc < 4 || strcmp(argv[0], "net") ||
	    (strcmp(argv[2], "add") && strcmp(argv[2], "del")))
		return false;
	add = !strcmp(argv[2], "add");
	if (!strcmp(argv[1], "listen") && argc <= 5)
		*rc = net_listen(add, argc - 3, argv + 3);
	else if (!strcmp(argv[1], "allow") && argc == 4)
		*rc = net_allow(add, argv[3]);
	else if (!strcmp(argv[1], "engine") && argc == (add ? 5 : 4))
		*rc = net_engine(add, argv[3], add ? argv[4] : NULL);
	else
		return false;
	return true;
}

/* Does the command line name a netlink command?  Then runs it. */
int kfabctl_nl_main(const struct kfabctl_opts *o, int argc, char **argv,
		    bool *handled)
{
	struct show s = { .json = o->json, .pretty = o->pretty,
			  .details = o->details, .pid = -1, .uid = -1,
			  .ctx = -1 };
	size_t i, n = sizeof(objects) / sizeof(objects[0]);
	int rc;

	*handled = true;
	if (net_change(argc, argv, &rc))
		return rc;
	if (!strcmp(argv[0], "monitor"))
		return monitor(&s);
	if (!strcmp(argv[0], "limit") && argc == 4 && !strcmp(argv[1], "set"))
		return limit_set(argv[2], argv[3]);
	if (!strcmp(argv[0], "av") && argc == 3 && !strcmp(argv[1], "del"))
		return av_del(argv[2]);
	if (!strcmp(argv[0], "net") && argc == 2 && !strcmp(argv[1], "show"))
		return net_show(&s);
	if (!strcmp(argv[0], "net") && argc == 3 &&
	    !strcmp(argv[1], "engine") && !strcmp(argv[2], "show"))
		return show(&s, "engine", 1, (char *[]){ "show" });
	/* Old spellings, kept for scripts. */
	if (!strcmp(argv[0], "contexts") && argc == 1)
		return show(&s, "ctx", 1, (char *[]){ "show" });
	if (!strcmp(argv[0], "av") && argc == 2 && !strcmp(argv[1], "list"))
		return show(&s, "av", 1, (char *[]){ "show" });
	for (i = 0; i < n; i++)
		if (!strcmp(argv[0], objects[i].name) && argc >= 2 &&
		    !strcmp(argv[1], "show"))
			return show(&s, argv[0], argc - 1, argv + 1);
	*handled = false;
	return 0;
}

/*
 * The context of the kernel consumer whose domain is @name: its comm is
 * "k:NAME", cut at 15 bytes.  0 if there is none or more than one.
 */
unsigned int kfabctl_nl_kernel_ctx(const char *name)
{
	struct show s = { .pid = -1, .uid = -1, .ctx = -1 };
	unsigned int found = 0, n = 0;
	char want[16];
	int family, rc;
	struct nl_sock *sk = nl_open(&family);
	size_t i;

	if (!sk)
		return 0;
	rc = request(sk, family, KFAB_NL_CMD_CTX_GET, NLM_F_DUMP, on_ctx_row,
		     &s, NULL);
	nl_socket_free(sk);
	if (rc < 0) {
		nl_fail("contexts", rc);
		return 0;
	}
	snprintf(want, sizeof(want), "k:%s", name);
	for (i = 0; i < s.nr_ctxs; i++)
		if (!s.ctxs[i].pid && !strcmp(s.ctxs[i].comm, want)) {
			found = s.ctxs[i].ctx;
			n++;
		}
	free(s.ctxs);
	if (n != 1) {
		fprintf(stderr, "kfabctl: %s kernel domains named %s\n",
			n ? "several" : "no", name);
		return 0;
	}
	return found;
}
