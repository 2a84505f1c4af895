// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: connection management (fi_cm(3)) for FI_EP_MSG endpoints and
 * passive endpoints (fid_pep).
 *
 * A connected endpoint is an RDM endpoint of the kernel whose peer is
 * fixed when the connection is made: its hidden AV (struct shim_conn.av)
 * holds the peer's data endpoint at index 0, and msg.c sends there
 * whatever fi_addr_t the application passes.  The handshake is a small
 * exchange of control messages (struct shim_cm_msg) between hidden RDM
 * endpoints (struct shim_cm_chan): one per passive endpoint, at the
 * address fi_getname() gives and applications connect to, and one per
 * FI_EP_MSG endpoint.  They travel through the kernel like any message,
 * so a connection works wherever RDM does, across nodes included.
 *
 *   active                             passive
 *   fi_connect  -- CONNREQ (id, data and control addresses, data) -->
 *                                      pep: FI_CONNREQ, info->handle
 *                                      fi_endpoint(info): claims the request
 *               <-- ACCEPT (id, addresses, data) -- fi_accept:
 *   FI_CONNECTED                         FI_CONNECTED once ACCEPT is sent
 *               <-- REJECT (id, data) -- fi_reject, or the pep closes
 *   error entry FI_ECONNREFUSED
 *   fi_shutdown or fi_close of a connected endpoint: SHUTDOWN -->
 *                                      FI_SHUTDOWN on the peer's EQ
 *
 * A CONNREQ that cannot be delivered (no pep at the address, or it is
 * gone) is an FI_ECONNREFUSED error entry too.  Control messages are
 * turned into events when the bound EQ is read or waited on (shim_cm_hook,
 * eq.c); the receive CQ of each control endpoint has an eventfd, armed for
 * good, that the EQ's wait fd holds, so a message wakes a thread sleeping
 * on the EQ before anyone reads it.  A peer that dies without closing
 * sends nothing: a connected endpoint probes its peer every
 * SHIM_CM_PROBE_MS while its EQ is read or waited on (the EQ's timer wakes
 * a waiter for it), and its partner's sends complete with FI_EHOSTUNREACH
 * (ep.rst, "Connections").
 *
 * Connection requests live in one list of the process (shim_connreqs):
 * info->handle is only dereferenced after it has been found there, so a
 * handle used twice, or after its pep closed, is -FI_EINVAL, never a use
 * after free.
 *
 * Locking: an EQ's cm_lock, then a pep's or a connection's lock, then
 * shim_connreq_lock, then the EQ's own lock (eq.c).
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_cm.h>

#include "barrier.h"
#include "internal.h"

#define SHIM_CM_MAGIC		0x4d43464bu	/* "KFCM" */
#define SHIM_CM_VERSION		1
/* How long a control message may take to be delivered. */
#define SHIM_CM_SEND_MS		10000
/*
 * How often the EQ's reads ask whether a connected peer's control
 * endpoint is still there (KFAB_SQE_PROBE): a peer that died without a
 * SHUTDOWN ends the connection with FI_SHUTDOWN within this long.
 */
#define SHIM_CM_PROBE_MS	100

enum shim_cm_type {
	SHIM_CM_CONNREQ = 1,
	SHIM_CM_ACCEPT,
	SHIM_CM_REJECT,
	SHIM_CM_SHUTDOWN,
};

/**
 * struct shim_cm_msg - a control message between two libshims
 * @magic: SHIM_CM_MAGIC; anything else is dropped
 * @version: SHIM_CM_VERSION
 * @type: enum shim_cm_type
 * @data_len: bytes of @data, at most SHIM_CM_DATA_MAX
 * @conn_id: chosen by the active side, echoed in every answer
 * @data_addr: the sender's data endpoint
 * @ctrl_addr: the sender's control endpoint, where answers go
 * @data: the application's connection data
 */
struct shim_cm_msg {
	uint32_t magic;
	uint8_t version;
	uint8_t type;
	uint16_t data_len;
	uint64_t conn_id;
	struct kfab_addr data_addr;
	struct kfab_addr ctrl_addr;
	uint8_t data[SHIM_CM_DATA_MAX];
};

/**
 * struct shim_cm_chan - a hidden RDM endpoint for control messages
 * @ep, @av, @txcq, @rxcq: its objects, opened on the owner's domain
 * @addr: its address
 * @tx: the message being sent (the send waits for its completion, whose
 *	context is @tx)
 * @rx: the one receive buffer, posted again after each message
 * @rx_fd: @rxcq's eventfd, armed for good: readable once a message came
 * @probe_dest: the probed control endpoint's index in @av, kept while the
 *	channel lives (FI_ADDR_NOTAVAIL: none yet)
 * @probing: a probe is out (its completion has a NULL context)
 * @probe_ret: once @probing is over: its answer (shim_cm_chan_probe())
 */
struct shim_cm_chan {
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *txcq, *rxcq;
	struct kfab_addr addr;
	struct shim_cm_msg tx;
	struct shim_cm_msg rx;
	int rx_fd;
	fi_addr_t probe_dest;
	bool probing;
	int probe_ret;
};

enum shim_conn_state {
	SHIM_CONN_IDLE,		/* active, nothing asked yet */
	SHIM_CONN_PASSIVE,	/* opened from a connection request */
	SHIM_CONN_CONNECTING,	/* CONNREQ sent */
	SHIM_CONN_CONNECTED,
	SHIM_CONN_DOWN,		/* refused, shut down, or peer gone */
};

/**
 * struct shim_conn - the connection of an FI_EP_MSG endpoint
 * @ep: the endpoint
 * @eq: its EQ, once enabled (the hook is attached to it)
 * @hook: on @eq
 * @lock: protects everything below (and the channel's use)
 * @chan: the control endpoint
 * @av: the data endpoint's AV: the peer at 0 once connected
 * @state: enum shim_conn_state
 * @conn_id: the connection's id (the active side's choice)
 * @peer_data, @peer_ctrl: the peer's endpoints
 * @probed_ms: when the peer was last probed (CLOCK_MONOTONIC ms)
 * @no_probe: probes cannot tell (the kernel answers -FI_EOPNOTSUPP)
 */
struct shim_conn {
	struct shim_ep *ep;
	struct shim_eq *eq;
	struct shim_cm_hook hook;
	pthread_mutex_t lock;
	struct shim_cm_chan chan;
	struct fid_av *av;
	enum shim_conn_state state;
	uint64_t conn_id;
	struct kfab_addr peer_data, peer_ctrl;
	uint64_t probed_ms;
	bool no_probe;
};

/**
 * struct shim_pep - a passive endpoint
 * @pep_fid: what libfabric sees
 * @info: a copy of what it was opened with: the base of FI_CONNREQ's info
 * @domain: a domain of its own (fi_passive_ep() takes a fabric)
 * @lock: protects @chan's use, @eq and @listening
 * @chan: the control endpoint: the address applications connect to
 * @eq: the bound EQ
 * @hook: on @eq while listening
 * @listening: fi_listen() was called
 */
struct shim_pep {
	struct fid_pep pep_fid;
	struct fi_info *info;
	struct fid_domain *domain;
	pthread_mutex_t lock;
	struct shim_cm_chan chan;
	struct shim_eq *eq;
	struct shim_cm_hook hook;
	bool listening;
	int backlog;
};

/*
 * FI_BACKLOG: connection requests a pep holds unanswered at most; more are
 * rejected at once.  The default is listen(2)'s SOMAXCONN.
 */
#define SHIM_PEP_BACKLOG_DEFAULT	4096

/**
 * struct shim_connreq - a connection request (fi_info->handle)
 * @fid: FI_CLASS_CONNREQ
 * @next: shim_connreqs
 * @pep: the pep it arrived at
 * @msg: the CONNREQ (addresses and id)
 */
struct shim_connreq {
	struct fid fid;
	struct shim_connreq *next;
	struct shim_pep *pep;
	struct shim_cm_msg msg;
};

static pthread_mutex_t shim_connreq_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_connreq *shim_connreqs;

/* ---- the control channel ---- */

static void shim_cm_chan_close(struct shim_cm_chan *chan)
{
	if (chan->ep)
		fi_close(&chan->ep->fid);
	if (chan->txcq)
		fi_close(&chan->txcq->fid);
	if (chan->rxcq)
		fi_close(&chan->rxcq->fid);
	if (chan->av)
		fi_close(&chan->av->fid);
	memset(chan, 0, sizeof(*chan));
	chan->rx_fd = -1;
	chan->probe_dest = FI_ADDR_NOTAVAIL;
}

static int shim_cm_chan_post(struct shim_cm_chan *chan)
{
	return (int)fi_recv(chan->ep, &chan->rx, sizeof(chan->rx), NULL,
			    FI_ADDR_UNSPEC, NULL);
}

/*
 * An RDM endpoint for messages only: at @info's src_addr for a pep
 * (@at_src), else at a number the module picks (a connected endpoint's
 * data endpoint has the src_addr).
 */
static int shim_cm_chan_open(struct shim_cm_chan *chan,
			     struct fid_domain *domain,
			     const struct fi_info *info, bool at_src)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG,
				      .wait_obj = FI_WAIT_NONE, .size = 16 };
	struct fi_cq_attr rx_attr = { .format = FI_CQ_FORMAT_MSG,
				      .wait_obj = FI_WAIT_FD, .size = 16 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_info *rdm;
	int ret;

	chan->rx_fd = -1;
	chan->probe_dest = FI_ADDR_NOTAVAIL;
	rdm = fi_dupinfo(info);
	if (!rdm)
		return -FI_ENOMEM;
	rdm->ep_attr->type = FI_EP_RDM;
	rdm->caps = FI_MSG | FI_SEND | FI_RECV;
	rdm->tx_attr->size = 4;
	rdm->rx_attr->size = 4;
	rdm->ep_attr->rx_ctx_cnt = 1;
	free(rdm->dest_addr);
	rdm->dest_addr = NULL;
	rdm->dest_addrlen = 0;
	rdm->handle = NULL;
	if (!at_src) {
		free(rdm->src_addr);
		rdm->src_addr = NULL;
		rdm->src_addrlen = 0;
	}

	ret = fi_av_open(domain, &av_attr, &chan->av, NULL);
	if (!ret)
		ret = fi_cq_open(domain, &cq_attr, &chan->txcq, NULL);
	if (!ret)
		ret = fi_cq_open(domain, &rx_attr, &chan->rxcq, NULL);
	if (!ret)
		ret = fi_control(&chan->rxcq->fid, FI_GETWAIT, &chan->rx_fd);
	/* Arm it for good: the kernel signals every completion from now. */
	if (!ret) {
		ret = fi_control(&chan->rxcq->fid, SHIM_CTRL_TRYWAIT, NULL);
		if (ret == -FI_EAGAIN)
			ret = 0;
	}
	if (!ret)
		ret = fi_endpoint(domain, rdm, &chan->ep, NULL);
	fi_freeinfo(rdm);
	if (!ret)
		ret = fi_ep_bind(chan->ep, &chan->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(chan->ep, &chan->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(chan->ep, &chan->rxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(chan->ep);
	if (!ret)
		ret = shim_cm_chan_post(chan);
	if (ret) {
		shim_cm_chan_close(chan);
		return ret;
	}
	chan->addr = to_shim_ep(chan->ep)->addr;
	return 0;
}

/*
 * The next completion of the channel's sends: 1 with *@ret its status and
 * *@ctx its context, 0 when none is there, or a negative error of the CQ.
 */
static int shim_cm_chan_tx_next(struct shim_cm_chan *chan, int *ret,
				void **ctx)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_msg_entry entry;
	ssize_t n;

	n = fi_cq_read(chan->txcq, &entry, 1);
	if (n == 1) {
		*ret = 0;
		*ctx = entry.op_context;
		return 1;
	}
	if (n == -FI_EAVAIL) {
		if (fi_cq_readerr(chan->txcq, &err, 0) < 0)
			return -FI_EOTHER;
		*ret = -(int)err.err;
		*ctx = err.op_context;
		return 1;
	}
	return n == -FI_EAGAIN ? 0 : (int)n;
}

/* A completion that is not @tx's is the probe's: keep its answer. */
static bool shim_cm_chan_took_probe(struct shim_cm_chan *chan, int ret,
				    void *ctx)
{
	if (ctx == &chan->tx)
		return false;
	if (chan->probing) {
		chan->probing = false;
		chan->probe_ret = ret;
	}
	return true;	/* or a send that timed out, answered late */
}

/* The send's completion, or -FI_ETIMEDOUT: the caller holds the owner. */
static int shim_cm_chan_wait_tx(struct shim_cm_chan *chan)
{
	void *ctx;
	int waited, ret, n;

	for (waited = 0; waited < SHIM_CM_SEND_MS;) {
		n = shim_cm_chan_tx_next(chan, &ret, &ctx);
		if (n < 0)
			return n;
		if (n && !shim_cm_chan_took_probe(chan, ret, ctx))
			return ret;
		if (!n) {
			(void)poll(NULL, 0, 1);
			waited++;
		}
	}
	return -FI_ETIMEDOUT;
}

/* The control endpoint @to as an entry of the channel's AV, in *@dest. */
static int shim_cm_chan_dest(struct shim_cm_chan *chan,
			     const struct kfab_addr *to, fi_addr_t *dest)
{
	uint32_t format = to_shim_ep(chan->ep)->addr_format;
	char name[SHIM_ADDR_STRLEN];
	size_t len = sizeof(name);
	int ret;

	if (!shim_addr_out(to, format, name, &len))
		return -FI_EINVAL;
	ret = fi_av_insert(chan->av, name, 1, dest, 0, NULL);
	if (ret != 1)
		return ret < 0 ? ret : -FI_EADDRNOTAVAIL;
	return 0;
}

/*
 * chan->tx (built by the caller) to the control endpoint @to, through a
 * passing entry of the channel's AV.
 */
static int shim_cm_chan_to(struct shim_cm_chan *chan,
			   const struct kfab_addr *to)
{
	fi_addr_t dest;
	int ret;

	ret = shim_cm_chan_dest(chan, to, &dest);
	if (ret)
		return ret;
	ret = (int)fi_send(chan->ep, &chan->tx,
			   offsetof(struct shim_cm_msg, data) +
			   chan->tx.data_len, NULL, dest, &chan->tx);
	if (!ret)
		ret = shim_cm_chan_wait_tx(chan);
	(void)fi_av_remove(chan->av, &dest, 1, 0);
	return ret;
}

/* Send chan->tx (built by the caller) to the control endpoint @to. */
static int shim_cm_chan_send(struct shim_cm_chan *chan,
			     const struct kfab_addr *to)
{
	chan->tx.magic = SHIM_CM_MAGIC;
	chan->tx.version = SHIM_CM_VERSION;
	chan->tx.ctrl_addr = chan->addr;
	return shim_cm_chan_to(chan, to);
}

/*
 * Is the control endpoint @to still there?  A probe (KFAB_SQE_PROBE) goes
 * out if none is; its answer comes at once for this node's endpoints, a
 * network round trip later for another node's (asked over the wire), and
 * nothing here waits for it.  Returns -FI_EAGAIN while it is out, else
 * its answer: 0 when @to is there, -FI_EOPNOTSUPP when the kernel cannot
 * tell, or the error a send to it gets (-FI_EHOSTUNREACH: gone;
 * -FI_ECONNRESET: of an earlier load of the module, or the other node's
 * session ended).
 */
static int shim_cm_chan_probe(struct shim_cm_chan *chan,
			      const struct kfab_addr *to)
{
	void *ctx;
	int ret, n;

	if (!chan->probing) {
		if (chan->probe_dest == FI_ADDR_NOTAVAIL) {
			ret = shim_cm_chan_dest(chan, to, &chan->probe_dest);
			if (ret)
				return ret;
		}
		ret = (int)shim_probe(to_shim_ep(chan->ep), chan->probe_dest);
		if (ret)
			return ret;
		chan->probing = true;
	}
	while (chan->probing) {
		n = shim_cm_chan_tx_next(chan, &ret, &ctx);
		if (n < 0)
			return n;
		if (!n)
			return -FI_EAGAIN;
		(void)shim_cm_chan_took_probe(chan, ret, ctx);
	}
	return chan->probe_ret;
}

/*
 * The next well-formed control message into *@msg: 1, or 0 when none is
 * there.  Malformed ones (another sender's garbage) are dropped.
 */
static int shim_cm_chan_poll(struct shim_cm_chan *chan,
			     struct shim_cm_msg *msg)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_msg_entry entry;
	ssize_t n;

	/* Reset before the look: a message after it signals again. */
	shim_eventfd_reset(chan->rx_fd);
	for (;;) {
		n = fi_cq_read(chan->rxcq, &entry, 1);
		if (n == -FI_EAVAIL) {
			(void)fi_cq_readerr(chan->rxcq, &err, 0);
			if (shim_cm_chan_post(chan))
				return 0;
			continue;
		}
		if (n != 1)
			return 0;
		*msg = chan->rx;
		if (shim_cm_chan_post(chan))
			SHIM_WARN(EP_CTRL, "control receive not posted again\n");
		if (entry.len < offsetof(struct shim_cm_msg, data) ||
		    msg->magic != SHIM_CM_MAGIC ||
		    msg->version != SHIM_CM_VERSION ||
		    msg->data_len > SHIM_CM_DATA_MAX ||
		    entry.len != offsetof(struct shim_cm_msg, data) +
				 msg->data_len ||
		    shim_addr_check(&msg->data_addr, SHIM_ADDR_EP) ||
		    shim_addr_check(&msg->ctrl_addr, SHIM_ADDR_EP)) {
			SHIM_INFO(EP_CTRL, "malformed control message dropped\n");
			continue;
		}
		return 1;
	}
}

static int shim_cm_set_data(struct shim_cm_msg *msg, const void *param,
			    size_t paramlen)
{
	if (paramlen > SHIM_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	msg->data_len = (uint16_t)paramlen;
	if (paramlen)
		memcpy(msg->data, param, paramlen);
	return 0;
}

/* ---- events ---- */

/* FI_CONNREQ/FI_CONNECTED/FI_SHUTDOWN with the message's data. */
static int shim_cm_post_event(struct shim_eq *eq, uint32_t event,
			      struct fid *fid, struct fi_info *info,
			      const struct shim_cm_msg *msg)
{
	size_t len = sizeof(struct fi_eq_cm_entry) + (msg ? msg->data_len : 0);
	struct fi_eq_cm_entry *entry;
	int ret;

	entry = calloc(1, len);
	if (!entry)
		return -FI_ENOMEM;
	entry->fid = fid;
	entry->info = info;
	if (msg && msg->data_len)
		memcpy(entry->data, msg->data, msg->data_len);
	ret = shim_eq_post(eq, event, entry, len);
	free(entry);
	return ret;
}

/* An error entry for @fid: @err positive, with the message's data. */
static void shim_cm_post_err(struct shim_eq *eq, struct fid *fid, int err,
			     const struct shim_cm_msg *msg)
{
	struct fi_eq_err_entry entry = {
		.fid = fid,
		.err = err,
		.prov_errno = err,
	};

	if (msg && msg->data_len) {
		entry.err_data = (void *)msg->data;
		entry.err_data_size = msg->data_len;
	}
	if (shim_eq_post_err(eq, &entry))
		SHIM_WARN(EQ, "connection error %d not reported: no memory\n",
			  err);
}

/* ---- connection requests ---- */

/* Take @fid out of the list if it is a request there; NULL otherwise. */
static struct shim_connreq *shim_connreq_take(struct fid *fid)
{
	struct shim_connreq **pp, *req = NULL;

	pthread_mutex_lock(&shim_connreq_lock);
	for (pp = &shim_connreqs; *pp; pp = &(*pp)->next) {
		if (&(*pp)->fid == fid) {
			req = *pp;
			*pp = req->next;
			break;
		}
	}
	pthread_mutex_unlock(&shim_connreq_lock);
	return req;
}

static int shim_connreq_close(struct fid *fid)
{
	(void)fid;
	return -FI_ENOSYS;	/* fi_accept() or fi_reject() end a request */
}

static const struct fi_ops shim_connreq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_connreq_close,
	.bind = shim_no_bind,
	.control = shim_no_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

/* The info of FI_CONNREQ: the pep's, type MSG, the peer and the handle. */
static struct fi_info *shim_connreq_info(struct shim_pep *pep,
					 struct shim_connreq *req)
{
	char name[SHIM_ADDR_STRLEN];
	size_t len = sizeof(name);
	struct fi_info *info;

	info = fi_dupinfo(pep->info);
	if (!info)
		return NULL;
	info->ep_attr->type = FI_EP_MSG;
	free(info->src_addr);
	info->src_addr = NULL;
	info->src_addrlen = 0;
	free(info->dest_addr);
	info->dest_addr = NULL;
	info->dest_addrlen = 0;
	if (shim_addr_out(&req->msg.data_addr, info->addr_format, name, &len)) {
		info->dest_addr = malloc(len);
		if (info->dest_addr) {
			memcpy(info->dest_addr, name, len);
			info->dest_addrlen = len;
		}
	}
	info->handle = &req->fid;
	return info;
}

/* Answer a request with REJECT from the pep's channel. */
static void shim_pep_send_reject(struct shim_pep *pep,
				 const struct shim_cm_msg *req,
				 const void *param, size_t paramlen)
{
	struct shim_cm_msg *tx = &pep->chan.tx;

	memset(tx, 0, sizeof(*tx));
	tx->type = SHIM_CM_REJECT;
	tx->conn_id = req->conn_id;
	tx->data_addr = pep->chan.addr;
	(void)shim_cm_set_data(tx, param, paramlen);
	if (shim_cm_chan_send(&pep->chan, &req->ctrl_addr))
		SHIM_INFO(EP_CTRL, "REJECT not delivered\n");
}

/* Requests of @pep still unanswered (under shim_connreq_lock). */
static int shim_pep_pending_locked(const struct shim_pep *pep)
{
	const struct shim_connreq *req;
	int n = 0;

	for (req = shim_connreqs; req; req = req->next)
		n += req->pep == pep;
	return n;
}

static void shim_pep_connreq(struct shim_pep *pep,
			     const struct shim_cm_msg *msg)
{
	struct shim_connreq *req;
	struct fi_info *info;
	bool full;

	pthread_mutex_lock(&shim_connreq_lock);
	full = shim_pep_pending_locked(pep) >= pep->backlog;
	pthread_mutex_unlock(&shim_connreq_lock);
	if (full) {
		SHIM_INFO(EP_CTRL, "backlog of %d full: request refused\n",
			  pep->backlog);
		goto refuse;
	}
	req = calloc(1, sizeof(*req));
	if (!req)
		goto refuse;
	req->fid.fclass = FI_CLASS_CONNREQ;
	req->fid.ops = (struct fi_ops *)&shim_connreq_fi_ops;
	req->pep = pep;
	req->msg = *msg;
	info = shim_connreq_info(pep, req);
	if (!info)
		goto refuse_free;
	pthread_mutex_lock(&shim_connreq_lock);
	req->next = shim_connreqs;
	shim_connreqs = req;
	pthread_mutex_unlock(&shim_connreq_lock);
	if (!shim_cm_post_event(pep->eq, FI_CONNREQ, &pep->pep_fid.fid, info,
				msg))
		return;
	fi_freeinfo(info);
	if (shim_connreq_take(&req->fid) != req)
		return;		/* cannot happen: the handle was never out */
refuse_free:
	free(req);
refuse:
	shim_pep_send_reject(pep, msg, NULL, 0);
}

static int shim_pep_progress(struct shim_cm_hook *hook)
{
	struct shim_pep *pep = container_of(hook, struct shim_pep, hook);
	struct shim_cm_msg msg;

	pthread_mutex_lock(&pep->lock);
	while (shim_cm_chan_poll(&pep->chan, &msg)) {
		if (msg.type == SHIM_CM_CONNREQ)
			shim_pep_connreq(pep, &msg);
		/* A SHUTDOWN of a request never accepted: nothing to do. */
	}
	pthread_mutex_unlock(&pep->lock);
	return -1;
}

/* ---- the passive endpoint ---- */

static struct shim_pep *to_shim_pep(struct fid *fid)
{
	return container_of(fid, struct shim_pep, pep_fid.fid);
}

/* Requests never answered are refused when their pep goes. */
static void shim_pep_reject_pending(struct shim_pep *pep)
{
	struct shim_connreq **pp, *req, *mine = NULL;

	pthread_mutex_lock(&shim_connreq_lock);
	for (pp = &shim_connreqs; *pp;) {
		req = *pp;
		if (req->pep != pep) {
			pp = &req->next;
			continue;
		}
		*pp = req->next;
		req->next = mine;
		mine = req;
	}
	pthread_mutex_unlock(&shim_connreq_lock);
	while (mine) {
		req = mine;
		mine = req->next;
		shim_pep_send_reject(pep, &req->msg, NULL, 0);
		free(req);
	}
}

static int shim_pep_close(struct fid *fid)
{
	struct shim_pep *pep = to_shim_pep(fid);

	if (pep->eq) {
		if (pep->listening)
			shim_eq_detach_cm(pep->eq, &pep->hook);
		shim_eq_unbind(pep->eq);
	}
	pthread_mutex_lock(&pep->lock);
	shim_pep_reject_pending(pep);
	pthread_mutex_unlock(&pep->lock);
	shim_cm_chan_close(&pep->chan);
	fi_close(&pep->domain->fid);
	fi_freeinfo(pep->info);
	pthread_mutex_destroy(&pep->lock);
	free(pep);
	return 0;
}

static int shim_pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct shim_pep *pep = to_shim_pep(fid);
	struct shim_eq *eq;
	int ret = 0;

	if (!bfid || bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	eq = shim_eq_from_fid(bfid);
	if (!eq)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&pep->lock);
	if (pep->eq || pep->listening) {
		ret = -FI_EINVAL;
	} else {
		shim_eq_bind(eq);
		pep->eq = eq;
	}
	pthread_mutex_unlock(&pep->lock);
	return ret;
}

static int shim_pep_listen(struct fid_pep *pep_fid)
{
	struct shim_pep *pep = to_shim_pep(&pep_fid->fid);
	int ret = 0;

	pthread_mutex_lock(&pep->lock);
	if (!pep->eq)
		ret = -FI_ENOEQ;
	else if (pep->listening)
		ret = -FI_EOPBADSTATE;
	else
		pep->listening = true;
	pthread_mutex_unlock(&pep->lock);
	/* Outside our lock: the EQ's cm_lock comes first. */
	if (!ret)
		shim_eq_attach_cm(pep->eq, &pep->hook);
	return ret;
}

static int shim_pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct shim_pep *pep = to_shim_pep(fid);

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	return shim_addr_out(&pep->chan.addr, pep->info->addr_format, addr,
			     addrlen) ? 0 : -FI_ETOOSMALL;
}

/* The address is fixed when the pep is opened (fi_getinfo's src_addr). */
static int shim_pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct shim_pep *pep = to_shim_pep(fid);
	struct kfab_addr want;

	if (!addr)
		return addrlen ? -FI_EINVAL : 0;
	if (!addrlen || shim_addr_in(addr, addrlen, pep->info->addr_format,
				     SHIM_ADDR_EP, &want))
		return -FI_EINVAL;
	return memcmp(&want, &pep->chan.addr, sizeof(want)) ?
	       -FI_EADDRNOTAVAIL : 0;
}

static int shim_pep_reject(struct fid_pep *pep_fid, fid_t handle,
			   const void *param, size_t paramlen)
{
	struct shim_pep *pep = to_shim_pep(&pep_fid->fid);
	struct shim_connreq *req;

	if (paramlen > SHIM_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	req = shim_connreq_take(handle);
	if (!req)
		return -FI_EINVAL;
	if (req->pep != pep) {
		/* Not ours: put it back for its own pep. */
		pthread_mutex_lock(&shim_connreq_lock);
		req->next = shim_connreqs;
		shim_connreqs = req;
		pthread_mutex_unlock(&shim_connreq_lock);
		return -FI_EINVAL;
	}
	pthread_mutex_lock(&pep->lock);
	shim_pep_send_reject(pep, &req->msg, param, paramlen);
	pthread_mutex_unlock(&pep->lock);
	free(req);
	return 0;
}

/* FI_OPT_CM_DATA_SIZE: how much connection data kfab carries. */
static int shim_cm_getopt(fid_t fid, int level, int optname, void *optval,
			  size_t *optlen)
{
	(void)fid;
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_EINVAL;
	*(size_t *)optval = SHIM_CM_DATA_MAX;
	*optlen = sizeof(size_t);
	return 0;
}

/* FI_OPT_CM_DATA_SIZE is read-only; no other option is a pep's. */
static int shim_pep_setopt(fid_t fid, int level, int optname,
			   const void *optval, size_t optlen)
{
	(void)fid; (void)optval; (void)optlen;
	if (level == FI_OPT_ENDPOINT && optname == FI_OPT_CM_DATA_SIZE)
		return -FI_EOPNOTSUPP;
	return -FI_ENOPROTOOPT;
}

/*
 * fi_control(FI_BACKLOG, int *): how many requests the pep holds before it
 * refuses more (at least 1, else -FI_EINVAL), before or after fi_listen().
 * FI_GETOPSFLAG and the rest are endpoints', not a pep's: -FI_ENOSYS.
 */
static int shim_pep_control(struct fid *fid, int command, void *arg)
{
	struct shim_pep *pep = container_of(fid, struct shim_pep, pep_fid.fid);

	if (command != FI_BACKLOG)
		return -FI_ENOSYS;
	if (!arg || *(int *)arg < 1)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->lock);
	pep->backlog = *(int *)arg;
	pthread_mutex_unlock(&pep->lock);
	return 0;
}

int shim_ep_msg_getopt(fid_t fid, int level, int optname, void *optval,
		       size_t *optlen)
{
	return shim_cm_getopt(fid, level, optname, optval, optlen);
}

static const struct fi_ops shim_pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_pep_close,
	.bind = shim_pep_bind,
	.control = shim_pep_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

static ssize_t shim_pep_cancel(fid_t fid, void *context)
{
	(void)fid; (void)context;
	return -FI_ENOENT;	/* a pep has no operations to cancel */
}

static int shim_pep_ctx(struct fid_ep *sep, int index, void *attr,
			struct fid_ep **ep, void *context)
{
	(void)sep; (void)index; (void)attr; (void)ep; (void)context;
	return -FI_ENOSYS;
}

static ssize_t shim_pep_size_left(struct fid_ep *ep)
{
	(void)ep;
	return -FI_ENOSYS;
}

static const struct fi_ops_ep shim_pep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = shim_pep_cancel,
	.getopt = shim_cm_getopt,
	.setopt = shim_pep_setopt,
	.tx_ctx = (void *)shim_pep_ctx,
	.rx_ctx = (void *)shim_pep_ctx,
	.rx_size_left = shim_pep_size_left,
	.tx_size_left = shim_pep_size_left,
};

static const struct fi_ops_cm shim_pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = shim_pep_setname,
	.getname = shim_pep_getname,
	.getpeer = shim_no_getpeer,
	.connect = shim_no_connect,
	.listen = shim_pep_listen,
	.accept = shim_no_accept,
	.reject = shim_pep_reject,
	.shutdown = shim_no_shutdown,
	.join = shim_no_join,
};

/**
 * shim_passive_ep() - fi_passive_ep(): a listener at @info's src_addr
 * @fabric: a kfab fabric
 * @info: FI_EP_MSG (or FI_EP_UNSPEC) info kfab answered
 * @pep_fid: out
 * @context: the application's
 *
 * Return: 0, -FI_EINVAL, -FI_ENOPROTOOPT for another endpoint type,
 * -FI_ENODATA for what kfab does not offer, -FI_ENOMEM, or what opening
 * the control endpoint answers (-FI_EADDRINUSE: the service is taken).
 */
int shim_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_pep **pep_fid, void *context)
{
	struct shim_pep *pep;
	int ret;

	if (!info || !pep_fid)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type != FI_EP_MSG &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_ENOPROTOOPT;
	ret = shim_info_check(info);
	if (ret)
		return ret;
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->backlog = SHIM_PEP_BACKLOG_DEFAULT;
	ret = -pthread_mutex_init(&pep->lock, NULL);
	if (ret)
		goto err_free;
	ret = -FI_ENOMEM;
	pep->info = fi_dupinfo(info);
	if (!pep->info || !pep->info->ep_attr)
		goto err_lock;
	pep->info->ep_attr->type = FI_EP_MSG;
	ret = fi_domain(fabric, pep->info, &pep->domain, NULL);
	if (ret)
		goto err_info;
	ret = shim_cm_chan_open(&pep->chan, pep->domain, pep->info, true);
	if (ret)
		goto err_domain;

	pep->hook.progress = shim_pep_progress;
	pep->hook.fd = pep->chan.rx_fd;
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = (struct fi_ops *)&shim_pep_fi_ops;
	pep->pep_fid.ops = (struct fi_ops_ep *)&shim_pep_ops;
	pep->pep_fid.cm = (struct fi_ops_cm *)&shim_pep_cm_ops;
	*pep_fid = &pep->pep_fid;
	return 0;

err_domain:
	fi_close(&pep->domain->fid);
err_info:
	fi_freeinfo(pep->info);
err_lock:
	pthread_mutex_destroy(&pep->lock);
err_free:
	free(pep);
	return ret;
}

/* ---- the connection of an FI_EP_MSG endpoint ---- */

static uint64_t shim_cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * A peer process that dies sends no SHUTDOWN; its endpoints go with its
 * file.  Every SHIM_CM_PROBE_MS of EQ reads, ask the kernel whether the
 * peer's control endpoint is still there (this node's kernel, or over the
 * wire the peer's node, shim_cm_chan_probe()): when it is gone, the
 * connection ends as a SHUTDOWN would end it (fi_cm(3): FI_SHUTDOWN "the
 * remote endpoint has been shut down or the connection has been lost").
 * The caller holds @conn's lock.  Returns in how many ms the next probe
 * is due (or the answer of one that is out should be looked for), or -1
 * when none will be.
 */
static int shim_conn_watch_peer(struct shim_conn *conn)
{
	uint64_t now;
	int ret;

	if (conn->state != SHIM_CONN_CONNECTED || conn->no_probe)
		return -1;
	now = shim_cm_now_ms();
	if (!conn->chan.probing) {
		if (now - conn->probed_ms < SHIM_CM_PROBE_MS)
			return (int)(SHIM_CM_PROBE_MS -
				     (now - conn->probed_ms));
		conn->probed_ms = now;
	}
	ret = shim_cm_chan_probe(&conn->chan, &conn->peer_ctrl);
	if (ret == -FI_EAGAIN) {
		/* Out to another node: look again, less often as it takes. */
		now -= conn->probed_ms;
		return now < 1 ? 1 : now > SHIM_CM_PROBE_MS ?
		       SHIM_CM_PROBE_MS : (int)now;
	}
	if (ret == -FI_EOPNOTSUPP) {
		conn->no_probe = true;
	} else if (ret == -FI_EHOSTUNREACH || ret == -FI_ECONNRESET) {
		SHIM_INFO(EP_CTRL, "connection %llx: the peer is gone\n",
			  (unsigned long long)conn->conn_id);
		conn->state = SHIM_CONN_DOWN;
		(void)shim_cm_post_event(conn->eq, FI_SHUTDOWN,
					 &conn->ep->ep_fid.fid, NULL, NULL);
		return -1;
	}
	return conn->no_probe ? -1 : SHIM_CM_PROBE_MS;
}

static int shim_conn_progress(struct shim_cm_hook *hook)
{
	struct shim_conn *conn = container_of(hook, struct shim_conn, hook);
	struct fid *fid = &conn->ep->ep_fid.fid;
	struct shim_cm_msg msg;
	int next;

	pthread_mutex_lock(&conn->lock);
	while (shim_cm_chan_poll(&conn->chan, &msg)) {
		if (msg.conn_id != conn->conn_id)
			continue;	/* an old or forged answer */
		if (msg.type == SHIM_CM_ACCEPT &&
		    conn->state == SHIM_CONN_CONNECTING) {
			char name[SHIM_ADDR_STRLEN];
			size_t len = sizeof(name);
			fi_addr_t peer;

			conn->peer_data = msg.data_addr;
			conn->peer_ctrl = msg.ctrl_addr;
			if (!shim_addr_out(&msg.data_addr,
					   conn->ep->addr_format, name, &len) ||
			    fi_av_insert(conn->av, name, 1, &peer, 0,
					 NULL) != 1) {
				conn->state = SHIM_CONN_DOWN;
				shim_cm_post_err(conn->eq, fid, FI_ECONNABORTED,
						 NULL);
				continue;
			}
			conn->state = SHIM_CONN_CONNECTED;
			(void)shim_cm_post_event(conn->eq, FI_CONNECTED, fid,
						 NULL, &msg);
		} else if (msg.type == SHIM_CM_REJECT &&
			   conn->state == SHIM_CONN_CONNECTING) {
			conn->state = SHIM_CONN_DOWN;
			shim_cm_post_err(conn->eq, fid, FI_ECONNREFUSED, &msg);
		} else if (msg.type == SHIM_CM_SHUTDOWN &&
			   conn->state == SHIM_CONN_CONNECTED &&
			   !memcmp(&msg.ctrl_addr, &conn->peer_ctrl,
				   sizeof(msg.ctrl_addr))) {
			conn->state = SHIM_CONN_DOWN;
			(void)shim_cm_post_event(conn->eq, FI_SHUTDOWN, fid,
						 NULL, NULL);
		}
	}
	next = shim_conn_watch_peer(conn);
	pthread_mutex_unlock(&conn->lock);
	return next;
}

/**
 * shim_conn_open() - the connection state of a new FI_EP_MSG endpoint
 * @ep: the endpoint being opened (not yet visible to the application)
 * @domain: its domain
 * @info: what it is opened with; a handle claims that connection request
 * @out: the connection
 *
 * Return: 0; -FI_EINVAL for a handle that is no pending request of this
 * process; -FI_ENOMEM or what opening the hidden objects answers.
 */
int shim_conn_open(struct shim_ep *ep, struct fid_domain *domain,
		   const struct fi_info *info, struct shim_conn **out)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct shim_connreq *req = NULL;
	struct shim_conn *conn;
	int ret;

	if (info->handle) {
		req = shim_connreq_take(info->handle);
		if (!req)
			return -FI_EINVAL;
	}
	ret = -FI_ENOMEM;
	conn = calloc(1, sizeof(*conn));
	if (!conn)
		goto err_req;
	ret = -pthread_mutex_init(&conn->lock, NULL);
	if (ret)
		goto err_free;
	ret = fi_av_open(domain, &av_attr, &conn->av, NULL);
	if (ret)
		goto err_lock;
	ret = shim_cm_chan_open(&conn->chan, domain, info, false);
	if (ret)
		goto err_av;
	conn->ep = ep;
	conn->hook.progress = shim_conn_progress;
	conn->hook.fd = conn->chan.rx_fd;
	if (req) {
		conn->state = SHIM_CONN_PASSIVE;
		conn->conn_id = req->msg.conn_id;
		conn->peer_data = req->msg.data_addr;
		conn->peer_ctrl = req->msg.ctrl_addr;
		free(req);
	}
	*out = conn;
	return 0;

err_av:
	fi_close(&conn->av->fid);
err_lock:
	pthread_mutex_destroy(&conn->lock);
err_free:
	free(conn);
err_req:
	if (req) {
		/* Back where the application may still reject it. */
		pthread_mutex_lock(&shim_connreq_lock);
		req->next = shim_connreqs;
		shim_connreqs = req;
		pthread_mutex_unlock(&shim_connreq_lock);
	}
	return ret;
}

struct fid *shim_conn_av(struct shim_conn *conn)
{
	return &conn->av->fid;
}

/* fi_enable(): the EQ's reads progress the connection from now on. */
void shim_conn_enable(struct shim_conn *conn, struct shim_eq *eq)
{
	conn->eq = eq;
	shim_eq_attach_cm(eq, &conn->hook);
}

/* Where a send goes: -FI_ENOTCONN unless connected. */
int shim_conn_dest(struct shim_conn *conn, fi_addr_t *dest)
{
	enum shim_conn_state state = shim_read_once(&conn->state);

	if (state != SHIM_CONN_CONNECTED)
		return -FI_ENOTCONN;
	*dest = 0;
	return 0;
}

static void shim_conn_send_shutdown(struct shim_conn *conn)
{
	struct shim_cm_msg *tx = &conn->chan.tx;

	memset(tx, 0, sizeof(*tx));
	tx->type = SHIM_CM_SHUTDOWN;
	tx->conn_id = conn->conn_id;
	tx->data_addr = to_shim_ep(conn->chan.ep)->addr;
	if (shim_cm_chan_send(&conn->chan, &conn->peer_ctrl))
		SHIM_INFO(EP_CTRL, "SHUTDOWN not delivered\n");
}

/*
 * fi_close() of the endpoint, before its kernel object goes: the peer
 * learns it (SHUTDOWN) and the EQ stops progressing us.
 */
void shim_conn_close(struct shim_conn *conn)
{
	if (conn->eq)
		shim_eq_detach_cm(conn->eq, &conn->hook);
	pthread_mutex_lock(&conn->lock);
	if (conn->state == SHIM_CONN_CONNECTED)
		shim_conn_send_shutdown(conn);
	conn->state = SHIM_CONN_DOWN;
	pthread_mutex_unlock(&conn->lock);
	shim_cm_chan_close(&conn->chan);
}

/* After the endpoint's kernel object went: its AV may go too. */
void shim_conn_free(struct shim_conn *conn)
{
	fi_close(&conn->av->fid);
	pthread_mutex_destroy(&conn->lock);
	free(conn);
}

static struct shim_conn *shim_ep_conn(struct fid_ep *ep_fid)
{
	return to_shim_ep(ep_fid)->conn;
}

static bool shim_conn_ready(struct shim_conn *conn)
{
	return conn->ep->enabled && conn->eq;
}

/* fi_connect(): CONNREQ to the pep at @addr; FI_CONNECTED comes later. */
int shim_conn_connect(struct fid_ep *ep_fid, const void *addr,
		      const void *param, size_t paramlen)
{
	struct shim_conn *conn = shim_ep_conn(ep_fid);
	struct shim_cm_msg *tx = &conn->chan.tx;
	uint32_t format = conn->ep->addr_format;
	struct kfab_addr to;
	size_t len;
	int ret;

	if (!addr || paramlen > SHIM_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	len = format == FI_ADDR_STR ? strnlen(addr, SHIM_ADDR_STRLEN) + 1 :
				      sizeof(struct kfab_addr);
	if (shim_addr_in(addr, len, format, SHIM_ADDR_EP, &to))
		return -FI_EINVAL;
	pthread_mutex_lock(&conn->lock);
	ret = -FI_EOPBADSTATE;
	if (!shim_conn_ready(conn) || conn->state != SHIM_CONN_IDLE)
		goto out;
	memset(tx, 0, sizeof(*tx));
	tx->type = SHIM_CM_CONNREQ;
	do {
		tx->conn_id = ((uint64_t)random() << 32) ^ (uint64_t)random() ^
			      (uintptr_t)conn;
	} while (!tx->conn_id);
	tx->data_addr = conn->ep->addr;
	(void)shim_cm_set_data(tx, param, paramlen);
	conn->conn_id = tx->conn_id;
	conn->peer_ctrl = to;
	conn->state = SHIM_CONN_CONNECTING;
	ret = shim_cm_chan_send(&conn->chan, &to);
	if (ret) {
		/* Nobody listens there: refused, as fi_cm(3) reports it. */
		conn->state = SHIM_CONN_DOWN;
		shim_cm_post_err(conn->eq, &ep_fid->fid, FI_ECONNREFUSED, NULL);
		ret = 0;
	}
out:
	pthread_mutex_unlock(&conn->lock);
	return ret;
}

/* fi_accept(): ACCEPT to the requester, then FI_CONNECTED here. */
int shim_conn_accept(struct fid_ep *ep_fid, const void *param,
		     size_t paramlen)
{
	struct shim_conn *conn = shim_ep_conn(ep_fid);
	struct shim_cm_msg *tx = &conn->chan.tx;
	char name[SHIM_ADDR_STRLEN];
	size_t len = sizeof(name);
	fi_addr_t peer;
	int ret;

	if (paramlen > SHIM_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	pthread_mutex_lock(&conn->lock);
	ret = -FI_EOPBADSTATE;
	if (!shim_conn_ready(conn) || conn->state != SHIM_CONN_PASSIVE)
		goto out;
	ret = -FI_EINVAL;
	if (!shim_addr_out(&conn->peer_data, conn->ep->addr_format, name,
			   &len))
		goto out;
	ret = fi_av_insert(conn->av, name, 1, &peer, 0, NULL);
	if (ret != 1) {
		ret = ret < 0 ? ret : -FI_EINVAL;
		goto out;
	}
	memset(tx, 0, sizeof(*tx));
	tx->type = SHIM_CM_ACCEPT;
	tx->conn_id = conn->conn_id;
	tx->data_addr = conn->ep->addr;
	(void)shim_cm_set_data(tx, param, paramlen);
	ret = shim_cm_chan_send(&conn->chan, &conn->peer_ctrl);
	if (ret) {
		conn->state = SHIM_CONN_DOWN;
		ret = -FI_ECONNABORTED;
		goto out;
	}
	conn->state = SHIM_CONN_CONNECTED;
	ret = shim_cm_post_event(conn->eq, FI_CONNECTED, &ep_fid->fid, NULL,
				 NULL);
out:
	pthread_mutex_unlock(&conn->lock);
	return ret;
}

/* fi_shutdown(): SHUTDOWN to the peer; sends fail from now on. */
int shim_conn_shutdown(struct fid_ep *ep_fid, uint64_t flags)
{
	struct shim_conn *conn = shim_ep_conn(ep_fid);
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&conn->lock);
	if (conn->state == SHIM_CONN_CONNECTED)
		shim_conn_send_shutdown(conn);
	else
		ret = -FI_ENOTCONN;
	conn->state = SHIM_CONN_DOWN;
	pthread_mutex_unlock(&conn->lock);
	return ret;
}

/* fi_getpeer(): the peer's data endpoint, once connected or accepting. */
int shim_conn_getpeer(struct fid_ep *ep_fid, void *addr, size_t *addrlen)
{
	struct shim_conn *conn = shim_ep_conn(ep_fid);
	struct kfab_addr peer;
	bool known;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	pthread_mutex_lock(&conn->lock);
	known = conn->state == SHIM_CONN_CONNECTED ||
		conn->state == SHIM_CONN_PASSIVE;
	peer = conn->peer_data;
	pthread_mutex_unlock(&conn->lock);
	if (!known)
		return -FI_ENOTCONN;
	return shim_addr_out(&peer, conn->ep->addr_format, addr, addrlen) ?
	       0 : -FI_ETOOSMALL;
}
