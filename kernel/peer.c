// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Peers: the other nodes this node exchanges messages with, and kfab's
 * wire protocol with them (wire.h, Documentation/net.rst).
 *
 * A peer is one remote node address as seen from one address of a local
 * node (namespace): a node with two listeners talks to another node from
 * each of them as two peers, so every frame and every answer stays
 * between the two addresses the endpoints have.  The two nodes share one
 * connection, made by whichever sends first: the peer sends on it (@out)
 * and its reader (struct kfab_conn, @in) carries out what comes back.
 * When both call at once, the call of the node with the lower address
 * wins (kfab_peer_keeps_ours()): the other caller is told so in the
 * WELCOME, drops its call and waits for the winning one to arrive.
 *
 * A send to another node is a struct kfab_op in the peer's table until
 * the receiving node is done with it: the sender's completion says what
 * happened over there, and an error never goes unreported.  A small
 * message travels in its MSG frame (copied once into the op, so the
 * sender's buffer is free at once) and completes when the receiving node
 * acknowledges the frame (@ackq), which it does only once it has found
 * the endpoint and delivered or held the message; an error comes as a
 * RESULT, and the receiving node holds back its acknowledgments until
 * that RESULT has a number (kfab_peer_ack_safe()), so the sender always
 * reads the RESULT before the acknowledgment.  A large message stays
 * pinned in the sender's pages, announced by RTS, until the receiving
 * node's CTS asks for its bytes, which go out of those pages without a
 * copy; its RESULT ends it, as it ends a probe and a send with
 * FI_DELIVERY_COMPLETE.  What a peer may make this node hold is bounded
 * by credits (wire.h).
 *
 * Only the peer's one sender (@tx_busy) sends on its connection, puts a new
 * one in place or lets it go (kfab_peer_conn_lost()).
 *
 * A connection that is reset (by the other node's TCP, or by a
 * middlebox) ends nothing: every frame has a number in its session and
 * stays on @sent until the other node acknowledges it; the node that has
 * something outstanding calls again, and after the new HELLO and WELCOME
 * each node sends again, in order, what the other says it did not get
 * (kfab_peer_resume()).  A connection that fails for good (no answer for
 * kfab_peer_timeout_ms, a malformed frame, the other node closing it, no
 * new connection within kfab_peer_timeout_ms of a reset) ends the session:
 * every operation that depends on it ends with an error completion,
 * pinned pages are let go, and the next send starts a new session.  A
 * HELLO or WELCOME naming sessions we do not share (the other node ended
 * its side, or its module was reloaded) ends ours the same way, with
 * -ECONNRESET.
 *
 * Locking: kfab_peer.lock (a mutex) covers the peer's tables, queues,
 * credit and state.  It is never held while calling into msg.c (which
 * takes receive context locks) nor while an engine sends or receives;
 * msg.c never calls back into a peer with a receive context's lock held.
 * kfab_peer.rx_lock is held by a reader while it carries out one frame,
 * so that a new connection learns how far the old one's reader got; it
 * comes before kfab_peer.lock, and after being the sender (@tx_busy): a
 * reader holding it only ever tries to become the sender, never waits.
 */
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include <linux/kfab_netlink.h>

#include "kfab.h"
#include "msg.h"
#include "net.h"
#include "wire.h"

/* A limit (limits.c checks its range): read with READ_ONCE(). */
unsigned int kfab_peer_timeout_ms = 10000;
EXPORT_SYMBOL_FOR_KFAB_ENGINES(kfab_peer_timeout_ms);
module_param_cb(peer_timeout_ms, &kfab_limit_param_ops,
		&kfab_peer_timeout_ms, 0644);
__MODULE_PARM_TYPE(peer_timeout_ms, "uint");
MODULE_PARM_DESC(peer_timeout_ms,
		 "How long a connection to another node may take to make or to move data before its operations fail (ms)");

struct workqueue_struct *kfab_net_wq;
EXPORT_SYMBOL_FOR_KFAB_ENGINES(kfab_net_wq);

/**
 * struct kfab_op - a send to another node, until it is acknowledged or
 *	its RESULT comes
 * @ref: the peer's table, and each frame that carries it
 * @id: its number in the peer's table
 * @on_ack: a small message: the acknowledgment of its frame ends it
 * @ack_link: on its peer's @ackq once its frame has a number
 * @seq: that number
 * @sender: the sending endpoint (a reference), counted in its @tx_waiting
 * @context: the send's context
 * @kind: KFAB_KIND_*
 * @flags: the send's KFAB_SQE_*
 * @len: the message's bytes
 * @cost: the credit it holds
 * @kbuf: MSG: the payload, copied
 * @buf: RTS: the sender's pages, pinned
 * @gen: the peer's generation it belongs to
 */
struct kfab_op {
	struct kref ref;
	u32 id;
	bool on_ack;
	struct list_head ack_link;
	u32 seq;
	struct kfab_ep_core *sender;
	u64 context;
	int kind;
	u32 flags;
	size_t len;
	u32 cost;
	void *kbuf;
	struct kfab_buf buf;
	u32 gen;
};

/**
 * struct kfab_frame - a frame waiting to go out
 * @link: on its peer's @txq, then on its @sent until acknowledged
 * @numbered: it went out once: @seq, @hdr's credit and ack are its for
 *	good
 * @holds: a RESULT the acknowledgments wait for (kfab_peer_ack_safe())
 * @seq: its number in the session
 * @hdr: its header
 * @body: its body
 * @body_len: bytes of @body
 * @op: MSG: the op whose @kbuf follows; DATA: the op whose pages follow
 *	(a reference either way)
 * @off: DATA: where in the message the bytes still to send begin
 * @left: DATA: how many are left (once out: at most KFAB_WIRE_DATA_MAX)
 * @pull: DATA: the receiver's pull
 */
struct kfab_frame {
	struct list_head link;
	bool numbered;
	bool holds;
	u32 seq;
	struct kfab_wire_hdr hdr;
	union {
		struct kfab_wire_hello hello;
		struct kfab_wire_msg msg;
		struct kfab_wire_cts cts;
		struct kfab_wire_data data;
		struct kfab_wire_result result;
	} body;
	size_t body_len;
	struct kfab_op *op;
	size_t off;
	size_t left;
	u32 pull;
};

enum kfab_peer_state {
	KFAB_PEER_IDLE,		/* no connection; the next send calls */
	KFAB_PEER_UP,		/* @out (and @in) connected */
	KFAB_PEER_CLOSED,	/* the node goes: nothing more */
};

/**
 * struct kfab_peer - a remote node, seen from one local node
 * @link: on its node's @peers
 * @node: the local node
 * @ref: the node's list, each connection in, each message from it
 * @local: the local node's address it talks from, a listener's (@ep and
 *	@incarnation 0): the HELLO names it, answers come to it
 * @addr: the remote node's address (@ep and @incarnation 0)
 * @lock: everything below
 * @state: enum kfab_peer_state
 * @incarnation: the remote module's load, from its HELLO (0: not known)
 * @gen: bumped when a session ends: what is held of an older one (a
 *	received message, a pull) sends nothing when it is let go
 * @session: our session with the remote node (never 0)
 * @remote_session: the remote node's session with us (0: not known)
 * @started: a frame of the session went out or came in
 * @tx_seq: the number of the last frame that went out
 * @rx_seq: how many frames of the remote session were carried out
 * @acked: how many of ours the remote node carried out, as its frames
 *	and its last HELLO or WELCOME said
 * @ack_hdr: the acknowledgment of the last frame it sent us
 * @ack_sent: the acknowledgment the last frame out told
 * @holds: RESULTs queued without a number that @ack_cap waits for
 * @ack_cap: the most a frame may acknowledge while @holds
 * @sent: frames out, not acknowledged yet, in order
 * @ackq: small messages out (struct kfab_op) that the next
 *	acknowledgment of their frames ends, in order
 * @lost_at: when a reset connection left things outstanding, or a call
 *	was reset (0: none)
 * @rx_lock: held by a reader carrying out a frame (see "Locking")
 * @engine: the engine its connections go by
 * @out: the connection, to send on
 * @in: the same connection, as its reader knows it
 * @calling: the transmit work is making a connection now
 * @crossed_at: when our calls began to cross the other node's (0: not)
 * @txq: frames to send, in order
 * @tx_busy: someone sends @txq now (the transmit work, or a doorbell or
 *	receive loop that found the connection idle), or changes the
 *	connection: the one sender
 * @tx_wait: woken when @tx_busy clears
 * @tx_work: connects and sends @txq
 * @retry_work: calls again a little after a crossed call
 * @ack_work: sends what a lazy MSG's sender is owed (KFAB_WIRE_LAZY) when
 *	no frame went back for KFAB_WIRE_ACK_DELAY_MS
 * @lazy_due: a lazy MSG's acknowledgment or credit waits for the next
 *	frame out (which clears it), or for @ack_work
 * @down_work: the peer may no longer talk: let the connection go
 * @ops: sends in flight (struct kfab_op) by id
 * @next_op: for ids
 * @pulls: receives waiting for data from it (struct kfab_pull) by id
 * @next_pull: for ids
 * @allowed: on its node's allow-list, and @local still a listener
 *	(kfab_node_recheck_peers() keeps it true): a sender finding it false
 *	drops the link
 * @credit: bytes of messages this node may still send it
 * @owed: credit this node has released and not yet returned
 * @tx_msgs, @rx_msgs, @tx_bytes, @rx_bytes, @failures: counters (debugfs)
 * @failed_with: the error that ended the last session (debugfs)
 * @crossed: calls of ours that gave way to the other node's (debugfs)
 * @resumed: sessions that went on over a new connection (debugfs)
 * @resent: frames sent again on one (debugfs)
 * @rx_direct: messages whose payload was read from the socket straight
 *	into a buffered-receive slot, with no copy in between (debugfs)
 */
struct kfab_peer {
	struct list_head link;
	struct kfab_node *node;
	struct kref ref;
	struct kfab_addr local;
	struct kfab_addr addr;
	struct mutex lock;	/* see above; net.h "Locking" */
	enum kfab_peer_state state;
	u32 incarnation;
	u32 gen;
	u32 session;
	u32 remote_session;
	bool started;
	u32 tx_seq;
	u32 rx_seq;
	u32 acked;
	u32 ack_hdr;
	u32 ack_sent;
	u32 holds;
	u32 ack_cap;
	struct list_head sent;
	struct list_head ackq;
	unsigned long lost_at;
	struct mutex rx_lock;	/* see above */
	const struct kfab_engine *engine;
	struct kfab_link *out;
	struct kfab_conn *in;
	bool calling;
	unsigned long crossed_at;
	struct list_head txq;
	bool tx_busy;
	wait_queue_head_t tx_wait;
	struct work_struct tx_work;
	struct delayed_work retry_work;
	struct delayed_work ack_work;
	bool lazy_due;
	struct work_struct down_work;
	struct xarray ops;
	u32 next_op;
	struct xarray pulls;
	u32 next_pull;
	bool allowed;
	s64 credit;
	u32 owed;
	u64 tx_msgs, rx_msgs, tx_bytes, rx_bytes, failures;
	int failed_with;
	u64 crossed;
	u64 resumed;
	u64 resent;
	u64 rx_direct;
};

/* ---- peers ---- */

static void kfab_peer_tx_work(struct work_struct *work);
static void kfab_peer_down_work(struct work_struct *work);
static void kfab_peer_retry_work(struct work_struct *work);
static void kfab_peer_ack_work(struct work_struct *work);
static void kfab_peer_tx_release(struct kfab_peer *peer);
static bool kfab_peer_tx_claim_wait(struct kfab_peer *peer, bool closed);
static void kfab_peer_conn_lost(struct kfab_peer *peer, int rc,
				bool may_resume);
static void kfab_peer_kick(struct kfab_peer *peer);

static void kfab_peer_release(struct kref *ref)
{
	struct kfab_peer *peer = container_of(ref, struct kfab_peer, ref);

	WARN_ON(!xa_empty(&peer->ops) || !xa_empty(&peer->pulls) ||
		!list_empty(&peer->sent));
	xa_destroy(&peer->ops);
	xa_destroy(&peer->pulls);
	mutex_destroy(&peer->rx_lock);
	mutex_destroy(&peer->lock);
	kfree(peer);
}

static void kfab_peer_put(struct kfab_peer *peer)
{
	kref_put(&peer->ref, kfab_peer_release);
}

/* Only the node part of an address: what names a peer's ends. */
static struct kfab_addr kfab_addr_node_of(const struct kfab_addr *a)
{
	struct kfab_addr n = { .family = a->family, .port = a->port };

	memcpy(n.node, a->node, sizeof(n.node));
	return n;
}

/* @peer's remote node is on the allow-list, its local address a listener. */
static bool kfab_peer_may_talk(struct kfab_node *node, struct kfab_peer *peer)
{
	return kfab_node_allows(node, peer->addr.node) &&
	       kfab_node_is_self(node, &peer->local);
}

/*
 * The peer of @node between its address @local and remote node @addr,
 * made on first use (@create).
 * Return: a reference, or NULL (none, no memory, or the node goes).
 */
static struct kfab_peer *kfab_peer_get(struct kfab_node *node,
				       const struct kfab_addr *local,
				       const struct kfab_addr *addr,
				       bool create)
{
	struct kfab_peer *peer, *found = NULL;
	bool fallback;

	mutex_lock(&node->lock);
	list_for_each_entry(peer, &node->peers, link)
		if (kfab_addr_same_node(&peer->addr, addr) &&
		    kfab_addr_same_node(&peer->local, local)) {
			found = peer;
			break;
		}
	if (!found && create && !node->dying) {
		found = kzalloc(sizeof(*found), GFP_KERNEL);
		if (found) {
			found->node = node;
			kref_init(&found->ref);
			found->local = kfab_addr_node_of(local);
			found->addr = kfab_addr_node_of(addr);
			mutex_init(&found->lock);
			mutex_init(&found->rx_lock);
			found->session = get_random_u32() ?: 1;
			INIT_LIST_HEAD(&found->txq);
			INIT_LIST_HEAD(&found->sent);
			INIT_LIST_HEAD(&found->ackq);
			init_waitqueue_head(&found->tx_wait);
			INIT_WORK(&found->tx_work, kfab_peer_tx_work);
			INIT_DELAYED_WORK(&found->retry_work,
					  kfab_peer_retry_work);
			INIT_DELAYED_WORK(&found->ack_work, kfab_peer_ack_work);
			INIT_WORK(&found->down_work, kfab_peer_down_work);
			xa_init_flags(&found->ops, XA_FLAGS_ALLOC1);
			xa_init_flags(&found->pulls, XA_FLAGS_ALLOC1);
			found->credit = KFAB_WIRE_CREDIT_MAX;
			/* What it would call with now; each call picks again. */
			found->engine = kfab_engine_for(node, addr, &fallback) ?:
					&kfab_tcp_engine;
			/* Under the node's lock, as the lists' changes are. */
			found->allowed = kfab_peer_may_talk(node, found);
			list_add_tail(&found->link, &node->peers);
		}
	}
	if (found)
		kref_get(&found->ref);
	mutex_unlock(&node->lock);
	return found;
}

/* The engine @peer goes by: its connection's, or the one it calls with. */
static const char *kfab_peer_engine_name(struct kfab_peer *peer)
{
	lockdep_assert_held(&peer->lock);
	return peer->out ? peer->out->engine->name : peer->engine->name;
}

/* A snapshot of @peer for netlink's dumps and events. */
static void kfab_peer_info_of(struct kfab_peer *peer,
			      struct kfab_peer_info *info)
{
	lockdep_assert_held(&peer->lock);
	*info = (struct kfab_peer_info) {
		.local = peer->local,
		.addr = peer->addr,
		.state = peer->state == KFAB_PEER_UP ? KFAB_NL_PEER_UP :
			 peer->state == KFAB_PEER_IDLE ? KFAB_NL_PEER_IDLE :
			 KFAB_NL_PEER_CLOSED,
		.incarnation = peer->incarnation,
		.engine = kfab_peer_engine_name(peer),
		.tx_msgs = peer->tx_msgs,
		.tx_bytes = peer->tx_bytes,
		.rx_msgs = peer->rx_msgs,
		.rx_bytes = peer->rx_bytes,
		.failures = peer->failures,
		.connected = peer->out || peer->in,
		.session = peer->session,
		.remote_session = peer->remote_session,
		.tx_seq = peer->tx_seq,
		.rx_seq = peer->rx_seq,
		.acked = peer->acked,
		.resumed = peer->resumed,
		.resent = peer->resent,
		.crossed = peer->crossed,
		.credit = peer->credit,
		.owed = peer->owed,
	};
}

/* ---- frames out ---- */

static struct kfab_frame *kfab_frame_new(u8 type, size_t body_len)
{
	struct kfab_frame *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return NULL;
	f->hdr.magic = cpu_to_be32(KFAB_WIRE_MAGIC);
	f->hdr.type = type;
	f->body_len = body_len;
	return f;
}

static void kfab_op_release(struct kref *ref)
{
	struct kfab_op *op = container_of(ref, struct kfab_op, ref);

	kfab_buf_put(&op->buf);
	kvfree(op->kbuf);
	kfree(op);
}

static void kfab_op_put(struct kfab_op *op)
{
	kref_put(&op->ref, kfab_op_release);
}

static void kfab_frame_free(struct kfab_frame *f)
{
	if (f->op)
		kfab_op_put(f->op);
	kfree(f);
}

static void kfab_frames_free(struct list_head *gone)
{
	struct kfab_frame *f, *n;

	list_for_each_entry_safe(f, n, gone, link)
		kfab_frame_free(f);
}

/* The next piece of a DATA frame, a frame of its own (resent alone). */
static struct kfab_frame *kfab_frame_piece(struct kfab_frame *f)
{
	struct kfab_frame *p = kmemdup(f, sizeof(*f), GFP_KERNEL);

	if (!p)
		return NULL;
	kref_get(&p->op->ref);
	p->left = KFAB_WIRE_DATA_MAX;
	return p;
}

/* ---- sessions ---- */

/*
 * Could the remote node have carried out @ack of our frames, no fewer than
 * it said before (@since)?
 */
static bool kfab_peer_ack_valid(struct kfab_peer *peer, u32 ack, u32 since)
{
	lockdep_assert_held(&peer->lock);
	return (s32)(ack - since) >= 0 && (s32)(peer->tx_seq - ack) >= 0;
}

/* The remote node carried out our frames up to @ack: they go (to @gone). */
static void kfab_peer_acked(struct kfab_peer *peer, u32 ack,
			    struct list_head *gone)
{
	struct kfab_frame *f, *n;

	lockdep_assert_held(&peer->lock);
	if ((s32)(ack - peer->acked) <= 0)
		return;
	list_for_each_entry_safe(f, n, &peer->sent, link) {
		if ((s32)(ack - f->seq) < 0)
			break;
		list_move_tail(&f->link, gone);
	}
	peer->acked = ack;
}

/*
 * The remote node's frame said it carried out our frames up to @ack: the
 * small messages among them are done (to @done, by @ack_link; the caller
 * ends them).  Its RESULTs came before (kfab_peer_ack_safe()).
 */
static void kfab_peer_ack_ops(struct kfab_peer *peer, u32 ack,
			      struct list_head *done)
{
	struct kfab_op *op, *n;

	lockdep_assert_held(&peer->lock);
	list_for_each_entry_safe(op, n, &peer->ackq, ack_link) {
		if ((s32)(ack - op->seq) < 0)
			break;
		xa_erase(&peer->ops, op->id);
		list_move_tail(&op->ack_link, done);
	}
}

/*
 * What a frame numbered now may acknowledge: all we carried out, unless a
 * RESULT waits for its number.  A small message completes at its sender
 * on the acknowledgment of its frame, so a RESULT that fails it must reach
 * the sender first: until it is numbered, no frame acknowledges past the
 * frames carried out before the one it answers (@ack_cap).
 */
static u32 kfab_peer_ack_safe(struct kfab_peer *peer)
{
	lockdep_assert_held(&peer->lock);
	return peer->holds ? peer->ack_cap : peer->rx_seq;
}

/*
 * Number @f the first time it goes out; its credit and its acknowledgment
 * of the remote session go with that number, once.  Sent again after a
 * reset it says what it said: frames numbered later may acknowledge more,
 * never frames numbered before a RESULT (kfab_peer_ack_safe()).
 */
static void kfab_peer_stamp(struct kfab_peer *peer, struct kfab_frame *f)
{
	lockdep_assert_held(&peer->lock);
	if (f->numbered) {
		peer->resent++;
		return;
	}
	f->numbered = true;
	f->seq = ++peer->tx_seq;
	f->hdr.seq = cpu_to_be32(f->seq);
	f->hdr.credit = cpu_to_be32(peer->owed);
	peer->owed = 0;
	peer->started = true;
	if (f->holds) {
		f->holds = false;
		peer->holds--;
	}
	peer->ack_sent = kfab_peer_ack_safe(peer);
	f->hdr.ack = cpu_to_be32(peer->ack_sent);
	peer->lazy_due = false;
	if (f->hdr.type == KFAB_WIRE_MSG && f->op->on_ack) {
		f->op->seq = f->seq;
		list_add_tail(&f->op->ack_link, &peer->ackq);
	}
}

/*
 * End our session: what went out or waits to go goes (to @gone), and the
 * caller fails what was in flight (kfab_peer_fail_ops(), _pulls()).  A
 * session we ended on our own gets a new name (@rename), which the remote
 * node does not know: it ends its side when it next hears from us.
 */
static void kfab_peer_end_session(struct kfab_peer *peer,
				  struct list_head *gone, bool rename)
{
	struct kfab_op *op, *n;

	lockdep_assert_held(&peer->lock);
	list_splice_tail_init(&peer->sent, gone);
	list_splice_tail_init(&peer->txq, gone);
	/* Still in @ops: kfab_peer_fail_ops() ends them. */
	list_for_each_entry_safe(op, n, &peer->ackq, ack_link)
		list_del_init(&op->ack_link);
	peer->gen++;
	if (rename) {
		peer->session = get_random_u32() ?: 1;
		peer->remote_session = 0;
	}
	peer->started = false;
	peer->tx_seq = 0;
	peer->rx_seq = 0;
	peer->acked = 0;
	peer->ack_hdr = 0;
	peer->ack_sent = 0;
	peer->holds = 0;
	peer->lost_at = 0;
	peer->credit = KFAB_WIRE_CREDIT_MAX;
	peer->owed = 0;
}

/*
 * A HELLO or WELCOME named sessions other than ours: the remote node's
 * load @inc and its session @remote are the ones from now on, and ours
 * ends if it had begun, counted as a failure.  @rename: as the called
 * node, the session we begin instead gets a new name (the WELCOME says
 * it), so that no HELLO written for the old one can be taken for it
 * (kfab_peer_hello_stale()).  The caller keeps the name its HELLO gave.
 * Return: whether it ended.
 */
static bool kfab_peer_adopt(struct kfab_peer *peer, u32 inc, u32 remote,
			    bool rename, struct list_head *gone)
{
	bool ended = peer->started;

	lockdep_assert_held(&peer->lock);
	if (ended) {
		kfab_peer_end_session(peer, gone, rename);
		peer->failures++;
		peer->failed_with = -ECONNRESET;
	}
	peer->incarnation = inc;
	peer->remote_session = remote;
	return ended;
}

/*
 * A connection is the peer's: what a lazy MSG's sender was owed while
 * there was none goes now (kfab_peer_ack_work()).
 */
static void kfab_peer_up(struct kfab_peer *peer)
{
	lockdep_assert_held(&peer->lock);
	peer->state = KFAB_PEER_UP;
	if (peer->lazy_due)
		mod_delayed_work(kfab_net_wq, &peer->ack_work, 0);
}

/*
 * Both sessions go on over a new connection: what the remote node got of
 * ours (@received) goes (to @gone), the rest goes out again, first and in
 * order.
 */
static void kfab_peer_resume(struct kfab_peer *peer, u32 received,
			     struct list_head *gone)
{
	struct kfab_frame *f, *n;

	lockdep_assert_held(&peer->lock);
	kfab_peer_acked(peer, received, gone);
	list_splice_init(&peer->sent, &peer->txq);
	/* Frames put back by an earlier resume that did not get far */
	list_for_each_entry_safe(f, n, &peer->txq, link) {
		if (!f->numbered || (s32)(received - f->seq) < 0)
			break;
		list_move_tail(&f->link, gone);
	}
	peer->lost_at = 0;
	peer->resumed++;
}

/*
 * Queue @f (NULL: out of memory, dropped like a lost connection would).
 * @direct: the caller calls kfab_peer_kick() once it drops the lock, and
 * sends it from there.
 */
static void kfab_peer_queue_how(struct kfab_peer *peer, struct kfab_frame *f,
				bool direct)
{
	lockdep_assert_held(&peer->lock);
	if (!f)
		return;
	if (peer->state == KFAB_PEER_CLOSED) {
		kfab_frame_free(f);
		return;
	}
	list_add_tail(&f->link, &peer->txq);
	/* The hot paths kick it themselves once unlocked. */
	if (!peer->tx_busy && !direct)
		queue_work(kfab_net_wq, &peer->tx_work);
}

static void kfab_peer_queue(struct kfab_peer *peer, struct kfab_frame *f)
{
	kfab_peer_queue_how(peer, f, false);
}

static void kfab_peer_queue_direct(struct kfab_peer *peer,
				   struct kfab_frame *f)
{
	kfab_peer_queue_how(peer, f, true);
}

/*
 * Queue the RESULT of the sender's @op.  @holds: the reader answers a
 * small message while carrying out its frame, and no acknowledgment of
 * that frame may go out before this RESULT (kfab_peer_ack_safe()).
 * Without memory the RESULT is lost and the send ends as it would
 * without one (acknowledged, or failed with its session).
 */
static void kfab_peer_result(struct kfab_peer *peer, u32 op, int status,
			     bool holds)
{
	struct kfab_frame *f = kfab_frame_new(KFAB_WIRE_RESULT,
					      sizeof(f->body.result));

	lockdep_assert_held(&peer->lock);
	if (!f || peer->state == KFAB_PEER_CLOSED) {
		kfree(f);
		return;
	}
	f->body.result.op = cpu_to_be32(op);
	f->body.result.status = cpu_to_be32((u32)status);
	if (holds) {
		if (!peer->holds++)
			peer->ack_cap = peer->rx_seq;
		f->holds = true;
	}
	kfab_peer_queue_direct(peer, f);
}

/*
 * Give credit back: in the next frame, or a frame of its own.  @direct:
 * the caller sends it (kfab_peer_kick(), or the reader when done with its
 * frame).  @lazy: a lazy MSG's (KFAB_WIRE_LAZY): a frame of its own only
 * once a quarter of the credit is owed (else the next frame back, or
 * @ack_work, carries it).
 */
static void kfab_peer_return_credit(struct kfab_peer *peer, u32 cost,
				    u32 gen, bool direct, bool lazy)
{
	lockdep_assert_held(&peer->lock);
	if (gen != peer->gen || !cost)
		return;
	peer->owed += cost;
	if (lazy && peer->owed < KFAB_WIRE_CREDIT_MAX / 4) {
		peer->lazy_due = true;
		return;
	}
	if (list_empty(&peer->txq))
		kfab_peer_queue_how(peer, kfab_frame_new(KFAB_WIRE_CREDIT, 0),
				    direct);
}

/* ---- sends ---- */

/* End an op: its sender's completion, its slot, its credit. */
static void kfab_op_end(struct kfab_peer *peer, struct kfab_op *op,
			int status)
{
	kfab_send_done(op->sender, op->kind, op->context, op->flags, status);
	kfab_ep_core_put(op->sender);
	op->sender = NULL;
	kfab_op_put(op);
}

static u32 kfab_op_gen(void *entry)
{
	return ((struct kfab_op *)entry)->gen;
}

static u32 kfab_pull_gen(void *entry)
{
	return ((struct kfab_pull *)entry)->remote->gen;
}

/*
 * Take an entry of an ended session out of one of @peer's tables (@ops,
 * @pulls), looking from *@pos on; NULL: none left.  Those of the session
 * going on now stay.
 */
static void *kfab_peer_take_old(struct kfab_peer *peer, struct xarray *xa,
				unsigned long *pos, u32 (*gen_of)(void *entry))
{
	void *entry;

	mutex_lock(&peer->lock);
	for (entry = xa_find(xa, pos, ULONG_MAX, XA_PRESENT); entry;
	     entry = xa_find_after(xa, pos, ULONG_MAX, XA_PRESENT))
		if (gen_of(entry) != peer->gen) {
			xa_erase(xa, *pos);
			break;
		}
	mutex_unlock(&peer->lock);
	return entry;
}

/* Fail every send of an ended session (its answers will not come). */
static void kfab_peer_fail_ops(struct kfab_peer *peer, int status)
{
	unsigned long pos = 0;
	struct kfab_op *op;

	while ((op = kfab_peer_take_old(peer, &peer->ops, &pos, kfab_op_gen)))
		kfab_op_end(peer, op, status);
}

static u32 kfab_wire_flags(const struct kfab_msg *msg)
{
	u32 f = 0;

	if (msg->kind == KFAB_KIND_TAGGED)
		f |= KFAB_WIRE_TAGGED;
	if (msg->flags & KFAB_SQE_REMOTE_CQ_DATA)
		f |= KFAB_WIRE_CQ_DATA;
	if (msg->flags & KFAB_SQE_DELIVERY_COMPLETE)
		f |= KFAB_WIRE_DELIVERY;
	if (msg->flags & KFAB_SQE_PROBE)
		f |= KFAB_WIRE_PROBE;
	return f;
}

/**
 * kfab_peer_unplug() - send what a doorbell's sends queued
 * @ep: the endpoint whose doorbell ends (its sq_lock held)
 */
void kfab_peer_unplug(struct kfab_ep *ep)
{
	struct kfab_peer *peer = ep->plugged;

	if (!peer)
		return;
	ep->plugged = NULL;
	kfab_peer_kick(peer);
	kfab_peer_put(peer);
}

/*
 * @peer has a frame of @ep's to send (the caller's reference on @peer is
 * given).  While @ep's doorbell runs its ring, the frames wait for its end
 * or for a send to another node, and go out together (the drain batches
 * them); otherwise at once.  A kernel caller's endpoint has no doorbell:
 * @plugging stays false there.
 */
static void kfab_peer_plug(struct kfab_ep *ep, struct kfab_peer *peer)
{
	if (!ep->plugging) {
		kfab_peer_kick(peer);
		kfab_peer_put(peer);
		return;
	}
	lockdep_assert_held(&ep->sq_lock);
	if (ep->plugged == peer) {
		kfab_peer_put(peer);
		return;
	}
	kfab_peer_unplug(ep);
	ep->plugged = peer;
}

/**
 * kfab_peer_send() - send a message to an endpoint of another node
 * @ep: the sender, whose doorbell runs (its process's context)
 * @dst: the destination, a KFAB_ADDR_INET of another node
 * @msg: the message
 * @req: the send; its payload is copied (small) or pinned (large) here
 *
 * A probe (KFAB_SQE_PROBE in @msg, no payload) goes as a MSG with
 * KFAB_WIRE_PROBE: the receiving node only answers whether an endpoint is
 * at @dst, and the send completes with that answer.
 *
 * Return: 0 (the send completes when the receiving node acknowledges or
 * answers it, or with an error when the connection fails), -EAGAIN (no
 * credit: post it again later), or a negative errno for an error
 * completion now (-EHOSTUNREACH: the sender has no node address to be
 * answered at).
 */
int kfab_peer_send(struct kfab_ep *ep, const struct kfab_addr *dst,
		   const struct kfab_msg *msg, struct kfab_req *req)
{
	struct kfab_node *node = kfab_node_of(ep->core->net);
	bool eager = msg->len <= KFAB_WIRE_EAGER_MAX, lazy;
	struct kfab_frame *f;
	struct kfab_peer *peer;
	struct kfab_op *op;
	u32 id;
	int rc;

	/*
	 * The receiver answers the sender's node address: it needs one, and
	 * its listener must still be there to take the answers.
	 */
	if (ep->core->addr.family != KFAB_ADDR_INET ||
	    !kfab_node_is_self(node, &ep->core->addr) ||
	    !kfab_node_allows(node, dst->node))
		return -EHOSTUNREACH;
	peer = kfab_peer_get(node, &ep->core->addr, dst, true);
	if (!peer)
		return -ENOMEM;

	rc = -ENOMEM;
	op = kzalloc(sizeof(*op), GFP_KERNEL_ACCOUNT);
	f = kfab_frame_new(eager ? KFAB_WIRE_MSG : KFAB_WIRE_RTS,
			   sizeof(f->body.msg));
	if (!op || !f)
		goto err_free;
	kref_init(&op->ref);
	INIT_LIST_HEAD(&op->ack_link);
	op->on_ack = eager && !(msg->flags & (KFAB_SQE_DELIVERY_COMPLETE |
					      KFAB_SQE_PROBE));
	op->kind = msg->kind;
	op->flags = msg->flags;
	op->context = req->context;
	op->len = msg->len;
	op->cost = KFAB_WIRE_MSG_COST + (eager ? msg->len : 0);
	if (eager) {
		op->kbuf = kvmalloc(msg->len ?: 1, GFP_KERNEL_ACCOUNT);
		if (!op->kbuf)
			goto err_free;
		rc = -EFAULT;
		if (copy_from_iter(op->kbuf, msg->len, &req->iter) != msg->len)
			goto err_free;
	} else {
		rc = kfab_buf_get(&op->buf, &req->iter, false, ep->pins);
		if (rc)
			goto err_free;
	}
	/* Nobody waits for its success: its acknowledgment need not hurry. */
	lazy = op->on_ack && !(msg->flags & KFAB_SQE_COMPLETION) &&
	       !ep->cntr[KFAB_TX];
	f->body.msg = (struct kfab_wire_msg){
		.src = msg->src,
		.dst = *dst,
		.tag = cpu_to_be64(msg->tag),
		.data = cpu_to_be64(msg->data),
		.flags = cpu_to_be32(kfab_wire_flags(msg) |
				     (lazy ? KFAB_WIRE_LAZY : 0)),
		.len = cpu_to_be64(msg->len),
	};

	mutex_lock(&peer->lock);
	rc = -EAGAIN;
	if (peer->credit < op->cost)
		goto err_unlock;
	rc = xa_alloc_cyclic(&peer->ops, &id, op, xa_limit_32b,
			     &peer->next_op, GFP_KERNEL_ACCOUNT);
	if (rc < 0)
		goto err_unlock;
	op->id = id;
	op->gen = peer->gen;
	peer->credit -= op->cost;
	if (!(msg->flags & KFAB_SQE_PROBE)) {
		peer->tx_msgs++;
		peer->tx_bytes += msg->len;
	}
	kref_get(&ep->core->ref);
	op->sender = ep->core;
	atomic_inc(&ep->core->tx_waiting);
	f->body.msg.op = cpu_to_be32(id);
	if (eager) {
		kref_get(&op->ref);
		f->op = op;
	}
	kfab_peer_queue_direct(peer, f);
	mutex_unlock(&peer->lock);
	kfab_peer_plug(ep, peer);
	return 0;

err_unlock:
	mutex_unlock(&peer->lock);
err_free:
	kfree(f);
	if (op)
		kfab_op_put(op);
	kfab_peer_put(peer);
	return rc;
}

/* ---- the receiving side ---- */

static void kfab_remote_free(struct kfab_remote *r)
{
	kfab_peer_put(r->peer);
	kfree(r);
}

/*
 * A message from another node is done with here: its credit goes back,
 * and its sender hears the status unless it did already or a small
 * message's acknowledgment tells it.  @reader: the connection's reader,
 * carrying out the message's frame, sends what this queues once done.
 */
static void kfab_remote_end(struct kfab_remote *r, int status, bool reader)
{
	struct kfab_peer *peer = r->peer;

	mutex_lock(&peer->lock);
	if (!r->told && r->gen == peer->gen && (status || !r->on_ack))
		kfab_peer_result(peer, r->op, status, r->on_ack && reader);
	kfab_peer_return_credit(peer, r->cost, r->gen, reader,
				r->lazy && reader && !status);
	mutex_unlock(&peer->lock);
	if (!reader)
		kfab_peer_kick(peer);
	kfab_remote_free(r);
}

/**
 * kfab_remote_dup() - a second origin of a message from another node, for
 *	a pull of its first bytes (msg.c: a buffered receive's slot)
 * @r: the message's origin
 *
 * The copy owes the sender no RESULT and holds none of its credit:
 * releasing it only lets go of the peer.  Return: the copy, or NULL.
 */
struct kfab_remote *kfab_remote_dup(const struct kfab_remote *r)
{
	struct kfab_remote *d = kmemdup(r, sizeof(*r), GFP_KERNEL_ACCOUNT);

	if (!d)
		return NULL;
	kref_get(&d->peer->ref);
	d->cost = 0;
	d->told = true;
	return d;
}

/**
 * kfab_remote_release() - a message from another node is done with here
 * @r: its origin
 * @status: 0 (taken, or discarded), or why it was not delivered
 *
 * Its credit goes back, and its sender hears the status unless it did
 * already.  No receive context's lock held.
 */
void kfab_remote_release(struct kfab_remote *r, int status)
{
	kfab_remote_end(r, status, false);
}

/* A pull is over: its receive completes, its sender hears. */
static void kfab_pull_end(struct kfab_peer *peer, struct kfab_pull *pull,
			  int status)
{
	kfab_pull_complete(pull, status);
	kfab_remote_release(pull->remote, status);
	kfree(pull);
}

/**
 * kfab_pull_start() - ask the sender of a message for its bytes
 * @pull: a receive that took a message whose payload is at its sender
 *
 * No receive context's lock held.
 */
void kfab_pull_start(struct kfab_pull *pull)
{
	struct kfab_peer *peer = pull->remote->peer;
	struct kfab_frame *f;
	u32 id;
	int rc;

	f = kfab_frame_new(KFAB_WIRE_CTS, sizeof(f->body.cts));
	mutex_lock(&peer->lock);
	rc = -ECONNRESET;
	if (peer->state == KFAB_PEER_CLOSED || pull->remote->gen != peer->gen)
		goto err_unlock;
	rc = -ENOMEM;
	if (!f)
		goto err_unlock;
	rc = xa_alloc_cyclic(&peer->pulls, &id, pull, xa_limit_32b,
			     &peer->next_pull, GFP_KERNEL_ACCOUNT);
	if (rc < 0)
		goto err_unlock;
	pull->id = id;
	f->body.cts = (struct kfab_wire_cts){
		.op = cpu_to_be32(pull->remote->op),
		.pull = cpu_to_be32(id),
		.len = cpu_to_be64(pull->len),
	};
	kfab_peer_queue(peer, f);
	mutex_unlock(&peer->lock);
	return;

err_unlock:
	mutex_unlock(&peer->lock);
	kfree(f);
	kfab_pull_end(peer, pull, rc);
}

/* Fail every pull of an ended session (its data will not come). */
static void kfab_peer_fail_pulls(struct kfab_peer *peer, int status)
{
	unsigned long pos = 0;
	struct kfab_pull *pull;

	while ((pull = kfab_peer_take_old(peer, &peer->pulls, &pos,
					  kfab_pull_gen)))
		kfab_pull_end(peer, pull, status);
}

/* ---- frames in (the connection's receive loop) ---- */

/* Read the rest of a frame into nothing (a duplicate or a late pull). */
static int kfab_conn_skip(struct kfab_conn *conn, size_t n)
{
	struct iov_iter it;

	iov_iter_discard(&it, ITER_DEST, n);
	return conn->engine->recv(conn, &it);
}

static int kfab_conn_recv_buf(struct kfab_conn *conn, void *buf, size_t n)
{
	struct kvec kv = { .iov_base = buf, .iov_len = n };
	struct iov_iter it;

	iov_iter_kvec(&it, ITER_DEST, &kv, 1, n);
	return conn->engine->recv(conn, &it);
}

/*
 * A probe (MSG with KFAB_WIRE_PROBE, no payload): answer whether an
 * endpoint is at its destination, as a probe of this node's own address
 * would (kfab_msg_send()), and deliver nothing.  One lookup and one
 * RESULT, under the same credit as any message.
 */
static int kfab_conn_rx_probe(struct kfab_conn *conn,
			      const struct kfab_wire_msg *w, u8 type, u64 mlen)
{
	struct kfab_peer *peer = conn->peer;
	struct kfab_ep_core *target;
	int rc;

	if (type != KFAB_WIRE_MSG || mlen ||
	    (be32_to_cpu(w->flags) & ~KFAB_WIRE_PROBE))
		return -EPROTO;
	rc = kfab_node_find_ep(peer->node, &w->dst, &target);
	if (!rc)
		kfab_ep_core_put(target);
	mutex_lock(&peer->lock);
	kfab_peer_result(peer, be32_to_cpu(w->op), rc, false);
	kfab_peer_return_credit(peer, KFAB_WIRE_MSG_COST, peer->gen, true,
				false);
	mutex_unlock(&peer->lock);
	return 0;
}

/*
 * The payload of an eager MSG for @msg, its endpoint looked up first
 * (*@target, held, when found): straight into a free slot of its
 * buffered-receive region when the message would end there anyway
 * (kfab_msg_slot_reserve(): *@direct, @slot taken), so that it is
 * copied once; else into a kernel buffer (*@kbuf) as before.
 */
static int kfab_conn_rx_payload(struct kfab_conn *conn,
				const struct kfab_wire_msg *w,
				const struct kfab_msg *msg, void **kbuf,
				struct kfab_ep_core **target,
				struct kfab_bufrecv_slot *slot, bool *direct)
{
	int rc;

	if (kfab_node_find_ep(conn->peer->node, &w->dst, target))
		*target = NULL;
	if (*target && kfab_msg_slot_reserve(*target, msg, slot)) {
		rc = kfab_conn_recv_buf(conn, slot->data, msg->len);
		if (rc)
			kfab_msg_slot_cancel(*target, slot);
		*direct = !rc;
	} else {
		*kbuf = kvmalloc(msg->len ?: 1, GFP_KERNEL);
		rc = *kbuf ? kfab_conn_recv_buf(conn, *kbuf, msg->len) :
			     -ENOMEM;
	}
	if (rc && *target) {
		kfab_ep_core_put(*target);
		*target = NULL;
	}
	if (rc) {
		kvfree(*kbuf);
		*kbuf = NULL;
	}
	return rc;
}

/*
 * MSG or RTS: a message for an endpoint of this node.  By the time its
 * frame counts as carried out, the endpoint was found and the message
 * delivered, held or failed (with its RESULT queued): a small message's
 * sender takes the acknowledgment as its completion.
 */
static int kfab_conn_rx_msg(struct kfab_conn *conn, u8 type, u32 len,
			    bool *ack_now)
{
	struct kfab_peer *peer = conn->peer;
	struct kfab_ep_core *target = NULL;
	struct kfab_bufrecv_slot slot;
	bool direct = false;
	struct kfab_wire_msg w;
	struct kfab_arrival out;
	struct kfab_remote *r;
	struct kfab_msg msg;
	void *kbuf = NULL;
	u64 mlen;
	u32 flags;
	int rc;

	if (len < sizeof(w))
		return -EPROTO;
	rc = kfab_conn_recv_buf(conn, &w, sizeof(w));
	if (rc)
		return rc;
	mlen = be64_to_cpu(w.len);
	flags = be32_to_cpu(w.flags);
	/* Every length the peer wrote is checked before it is used. */
	if ((flags & ~KFAB_WIRE_MSG_FLAGS) || !kfab_addr_valid(&w.src) ||
	    !kfab_addr_same_node(&w.src, &peer->addr) ||
	    !kfab_addr_same_node(&w.dst, &peer->local))
		return -EPROTO;
	if (type == KFAB_WIRE_MSG ? (mlen > KFAB_WIRE_EAGER_MAX ||
				     len != sizeof(w) + mlen) :
				    (mlen <= KFAB_WIRE_EAGER_MAX ||
				     mlen > KFAB_MSG_MAX || len != sizeof(w)))
		return -EPROTO;
	/* Lazy: a small message whose sender waits for no RESULT. */
	if ((flags & KFAB_WIRE_LAZY) &&
	    (type != KFAB_WIRE_MSG || (flags & KFAB_WIRE_DELIVERY)))
		return -EPROTO;
	*ack_now = type == KFAB_WIRE_MSG && !(flags & KFAB_WIRE_LAZY);
	if (flags & KFAB_WIRE_PROBE)
		return kfab_conn_rx_probe(conn, &w, type, mlen);
	msg = (struct kfab_msg){
		.kind = flags & KFAB_WIRE_TAGGED ? KFAB_KIND_TAGGED :
						   KFAB_KIND_MSG,
		.src = w.src,
		.tag = be64_to_cpu(w.tag),
		.data = be64_to_cpu(w.data),
		.flags = (flags & KFAB_WIRE_CQ_DATA ? KFAB_SQE_REMOTE_CQ_DATA : 0) |
			 (flags & KFAB_WIRE_DELIVERY ? KFAB_SQE_DELIVERY_COMPLETE : 0),
		.len = mlen,
	};
	if (type == KFAB_WIRE_MSG) {
		rc = kfab_conn_rx_payload(conn, &w, &msg, &kbuf, &target,
					  &slot, &direct);
		if (rc)
			return rc;
	}

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r) {
		kvfree(kbuf);
		if (direct)
			kfab_msg_slot_cancel(target, &slot);
		if (target)
			kfab_ep_core_put(target);
		return -ENOMEM;
	}
	kref_get(&peer->ref);
	r->peer = peer;
	r->op = be32_to_cpu(w.op);
	/* A payload read into a slot costs what one in a buffer would. */
	r->cost = KFAB_WIRE_MSG_COST + (type == KFAB_WIRE_MSG ? mlen : 0);
	r->rts = type == KFAB_WIRE_RTS;
	r->on_ack = !r->rts && !(flags & KFAB_WIRE_DELIVERY);
	r->lazy = flags & KFAB_WIRE_LAZY;
	mutex_lock(&peer->lock);
	r->gen = peer->gen;
	peer->rx_msgs++;
	peer->rx_bytes += mlen;
	if (direct)
		peer->rx_direct++;
	mutex_unlock(&peer->lock);

	rc = target ? 0 : kfab_node_find_ep(peer->node, &w.dst, &target);
	if (rc) {
		kvfree(kbuf);
		kfab_remote_end(r, rc, true);
		return 0;
	}
	if (direct)
		kfab_msg_arrive_slot(target, &msg, &slot, r, &out);
	else
		kfab_msg_arrive(target, &msg, kbuf, r, &out);
	kfab_ep_core_put(target);
	if (!out.kept) {
		kfab_remote_end(r, out.status, true);
		return 0;
	}
	/* Held (out.told): the acknowledgment of its frame tells the sender. */
	if (out.pull)
		kfab_pull_start(out.pull);
	return 0;
}

/* CTS: send the bytes a receive asked for, out of the op's pages. */
static int kfab_conn_rx_cts(struct kfab_conn *conn, u32 len)
{
	struct kfab_peer *peer = conn->peer;
	struct kfab_wire_cts w;
	struct kfab_frame *f;
	struct kfab_op *op;
	u64 want;
	int rc;

	if (len != sizeof(w))
		return -EPROTO;
	rc = kfab_conn_recv_buf(conn, &w, sizeof(w));
	if (rc)
		return rc;
	want = be64_to_cpu(w.len);
	f = kfab_frame_new(KFAB_WIRE_DATA, sizeof(f->body.data));
	if (!f)
		return -ENOMEM;
	mutex_lock(&peer->lock);
	op = xa_load(&peer->ops, be32_to_cpu(w.op));
	/* Not ours (ended already), or not a large one: ignore or refuse. */
	if (!op || !op->buf.len || want > op->len) {
		mutex_unlock(&peer->lock);
		kfree(f);
		return op ? -EPROTO : 0;
	}
	kref_get(&op->ref);
	f->op = op;
	f->left = want;
	f->pull = be32_to_cpu(w.pull);
	kfab_peer_queue(peer, f);
	mutex_unlock(&peer->lock);
	return 0;
}

/* DATA: bytes of a pulled message, read straight into its pages. */
static int kfab_conn_rx_data(struct kfab_conn *conn, u32 len)
{
	struct kfab_peer *peer = conn->peer;
	struct kfab_wire_data w;
	struct kfab_pull *pull;
	struct iov_iter it;
	size_t n = len - sizeof(w);
	u64 off;
	int rc;

	if (len < sizeof(w) || n > KFAB_WIRE_DATA_MAX)
		return -EPROTO;
	rc = kfab_conn_recv_buf(conn, &w, sizeof(w));
	if (rc)
		return rc;
	off = be64_to_cpu(w.offset);
	mutex_lock(&peer->lock);
	pull = xa_load(&peer->pulls, be32_to_cpu(w.pull));
	mutex_unlock(&peer->lock);
	/* Only this loop reads DATA and ends pulls that got their bytes. */
	if (!pull)
		return kfab_conn_skip(conn, n);
	if (w.__reserved || off != pull->got || n > pull->len - pull->got)
		return -EPROTO;
	iov_iter_bvec(&it, ITER_DEST, pull->recv->buf.bv,
		      pull->recv->buf.nr_bv, pull->recv->buf.len);
	iov_iter_advance(&it, pull->at + off);
	iov_iter_truncate(&it, n);
	rc = conn->engine->recv(conn, &it);
	if (rc)
		return rc;
	pull->got += n;
	if (pull->got < pull->len)
		return 0;
	mutex_lock(&peer->lock);
	xa_erase(&peer->pulls, pull->id);
	mutex_unlock(&peer->lock);
	kfab_pull_end(peer, pull, 0);
	return 0;
}

/* RESULT: the receiving node is done with one of our sends. */
static int kfab_conn_rx_result(struct kfab_conn *conn, u32 len)
{
	struct kfab_peer *peer = conn->peer;
	struct kfab_wire_result w;
	struct kfab_op *op;
	int status, rc;

	if (len != sizeof(w))
		return -EPROTO;
	rc = kfab_conn_recv_buf(conn, &w, sizeof(w));
	if (rc)
		return rc;
	status = (s32)be32_to_cpu(w.status);
	/* A status is an errno the sender can report: nothing else. */
	if (status > 0 || status < -MAX_ERRNO)
		return -EPROTO;
	mutex_lock(&peer->lock);
	op = xa_erase(&peer->ops, be32_to_cpu(w.op));
	if (op)
		list_del_init(&op->ack_link);
	mutex_unlock(&peer->lock);
	if (op)
		kfab_op_end(peer, op, status);
	return 0;
}

/*
 * Answer a HELLO: which load of this node's module the caller reached, our
 * session with it, and with KFAB_WIRE_WELCOME_RESUMED how much of the
 * caller's we carried out.
 */
static int kfab_conn_welcome(struct kfab_conn *conn, u32 flags, u32 session,
			     u32 received)
{
	struct kfab_wire_welcome w = {
		.incarnation = cpu_to_be32(kfab_incarnation),
		.flags = cpu_to_be32(flags),
		.session = cpu_to_be32(session),
		.received = cpu_to_be32(received),
	};
	struct kfab_wire_hdr h = {
		.magic = cpu_to_be32(KFAB_WIRE_MAGIC),
		.type = KFAB_WIRE_WELCOME,
		.len = cpu_to_be32(sizeof(w)),
	};
	struct kvec kv[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = &w, .iov_len = sizeof(w) },
	};

	return conn->engine->send_kvec(conn->out, kv, 2,
				       sizeof(h) + sizeof(w), false);
}

/*
 * When both nodes call at once, one call must give way, and both must
 * agree which without talking: the node with the lower address keeps its
 * own.
 */
static bool kfab_peer_keeps_ours(const struct kfab_peer *peer)
{
	int cmp = memcmp(peer->local.node, peer->addr.node,
			 sizeof(peer->local.node));

	if (!cmp)
		cmp = be16_to_cpu(peer->local.port) -
		      be16_to_cpu(peer->addr.port);
	return cmp < 0;
}

/*
 * A HELLO of our sessions that says the caller carried out fewer of our
 * frames than it has acknowledged since was written before another
 * connection took the sessions on: the calls crossed and the other went
 * through while this one waited, or this one's caller gave it up (its
 * connection was reset) and called again.  Counts never go back under the
 * same two names (a session that ends is renamed, or, at a caller, comes
 * back paired with the called node's new one: kfab_peer_adopt()), so it
 * is stale whether or not that connection is still up, and must not end
 * the sessions it is late for.
 */
static bool kfab_peer_hello_stale(struct kfab_peer *peer, u32 inc,
				  const struct kfab_wire_hello *w)
{
	lockdep_assert_held(&peer->lock);
	return inc == peer->incarnation &&
	       be32_to_cpu(w->session) == peer->remote_session &&
	       be32_to_cpu(w->peer_session) == peer->session &&
	       (s32)(be32_to_cpu(w->received) - peer->acked) < 0;
}

/*
 * HELLO: who called.  Its connection becomes the peer's, in place of one
 * it had (which the other node gave up).  If it names the sessions we
 * share, both go on (the WELCOME says how far ours got); else ours ends,
 * with what was in flight (a new load of a node we knew, or one that ended
 * its side).
 */
static int kfab_conn_rx_hello(struct kfab_conn *conn, u32 len)
{
	struct kfab_peer_info info;
	struct kfab_wire_hello w;
	struct kfab_peer *peer;
	bool crossed, stale, ended = false, up = false;
	u32 inc, flags = 0, session, received = 0;
	LIST_HEAD(gone);
	int rc;

	if (conn->peer || len != sizeof(w))
		return -EPROTO;
	rc = kfab_conn_recv_buf(conn, &w, sizeof(w));
	if (rc)
		return rc;
	inc = be32_to_cpu(w.incarnation);
	if (be32_to_cpu(w.version) != KFAB_WIRE_VERSION || !inc ||
	    !w.session || w.__reserved ||
	    w.node.family != KFAB_ADDR_INET || !w.node.port || w.node.ep ||
	    w.node.incarnation || w.node.__reserved ||
	    kfab_node_is_self(conn->node, &w.node))
		return -EPROTO;
	/* A node off the allow-list, whichever address it called from. */
	if (!kfab_node_allows(conn->node, w.node.node))
		return -EACCES;
	/* The listener it came to is gone: nobody here answers it. */
	if (!kfab_node_is_self(conn->node, &conn->local))
		return -EHOSTUNREACH;
	peer = kfab_peer_get(conn->node, &conn->local, &w.node, true);
	if (!peer)
		return -ENOMEM;
	conn->peer = peer;	/* kfab_conn_closed() puts it */

	mutex_lock(&peer->lock);
	crossed = peer->calling && kfab_peer_keeps_ours(peer);
	mutex_unlock(&peer->lock);
	if (crossed) {
		rc = kfab_conn_welcome(conn, KFAB_WIRE_WELCOME_CROSSED, 0, 0);
		return rc ?: -EALREADY;
	}

	/* Our own call, if any, ends first: it gives way to this one. */
	if (!kfab_peer_tx_claim_wait(peer, false))
		return -ESHUTDOWN;
	mutex_lock(&peer->lock);
	stale = kfab_peer_hello_stale(peer, inc, &w);
	mutex_unlock(&peer->lock);
	if (stale) {
		kfab_peer_tx_release(peer);
		rc = kfab_conn_welcome(conn, KFAB_WIRE_WELCOME_CROSSED, 0, 0);
		return rc ?: -EALREADY;
	}
	if (peer->out || peer->in)
		kfab_peer_conn_lost(peer, -ECONNRESET, true);
	/* The old connection's reader is done with its last frame. */
	mutex_lock(&peer->rx_lock);
	mutex_lock(&peer->lock);
	if (inc == peer->incarnation &&
	    be32_to_cpu(w.session) == peer->remote_session &&
	    be32_to_cpu(w.peer_session) == peer->session &&
	    kfab_peer_ack_valid(peer, be32_to_cpu(w.received), peer->acked)) {
		kfab_peer_resume(peer, be32_to_cpu(w.received), &gone);
		flags = KFAB_WIRE_WELCOME_RESUMED;
		received = peer->rx_seq;
	} else {
		ended = kfab_peer_adopt(peer, inc, be32_to_cpu(w.session),
					true, &gone);
	}
	session = peer->session;
	mutex_unlock(&peer->lock);
	mutex_unlock(&peer->rx_lock);
	kfab_frames_free(&gone);
	if (ended) {
		kfab_peer_fail_ops(peer, -ECONNRESET);
		kfab_peer_fail_pulls(peer, -ECONNRESET);
	}
	/* The WELCOME goes first: we are the sender until it is out. */
	rc = kfab_conn_welcome(conn, flags, session, received);
	if (!rc) {
		mutex_lock(&peer->lock);
		peer->in = conn;
		peer->out = conn->engine->hold(conn);
		peer->crossed_at = 0;
		peer->lost_at = 0;
		up = peer->state == KFAB_PEER_IDLE;
		if (up) {
			kfab_peer_up(peer);
			kfab_peer_info_of(peer, &info);
		}
		mutex_unlock(&peer->lock);
	}
	kfab_peer_tx_release(peer);
	if (up)
		kfab_nl_notify_peer(conn->node->net, &info, true, true);
	return rc;
}

/*
 * A frame's header came on @conn: it must be the peer's connection (a
 * connection given up is not read on: what it still held comes again on
 * the new one) and the frame the next of the remote session.  Its
 * acknowledgment and credit are taken; *@gen is the session's generation,
 * for kfab_peer_rx_done(), which ends the sends it acknowledges.
 */
static int kfab_peer_rx_hdr(struct kfab_peer *peer, struct kfab_conn *conn,
			    const struct kfab_wire_hdr *h, u32 *gen,
			    struct list_head *gone)
{
	u32 credit = be32_to_cpu(h->credit), ack = be32_to_cpu(h->ack);
	int rc = 0;

	lockdep_assert_held(&peer->rx_lock);
	mutex_lock(&peer->lock);
	if (peer->in != conn) {
		rc = -ESTALE;
	} else if (be32_to_cpu(h->seq) != peer->rx_seq + 1 ||
		   !kfab_peer_ack_valid(peer, ack, peer->ack_hdr)) {
		rc = -EPROTO;
	} else {
		peer->ack_hdr = ack;
		kfab_peer_acked(peer, ack, gone);
		/* Never more than it lent: a confused peer gains nothing. */
		peer->credit = min_t(s64, peer->credit + credit,
				     KFAB_WIRE_CREDIT_MAX);
		*gen = peer->gen;
	}
	mutex_unlock(&peer->lock);
	return rc;
}

/*
 * A frame was carried out: it counts as received, unless its session ended
 * meanwhile, and the sends its acknowledgment (@ack) ends go to @done.
 * The remote node hears so in a frame of its own if none is waiting to go:
 * at once for a small message (@ack_now: its sender waits for that), after
 * KFAB_WIRE_ACK_DELAY_MS for a lazy one (@lazy: the sender waits for
 * nothing), else every KFAB_WIRE_ACK_EVERY frames.  Return: whether frames
 * wait to go.
 */
static bool kfab_peer_rx_done(struct kfab_peer *peer, u32 gen, u32 ack,
			      bool ack_now, bool lazy, struct list_head *done)
{
	bool more = false;
	u32 unacked;

	lockdep_assert_held(&peer->rx_lock);
	mutex_lock(&peer->lock);
	if (peer->gen == gen) {
		peer->rx_seq++;
		peer->started = true;
		kfab_peer_ack_ops(peer, ack, done);
		unacked = peer->rx_seq - peer->ack_sent;
		if ((unacked >= KFAB_WIRE_ACK_EVERY || (ack_now && unacked)) &&
		    list_empty(&peer->txq))
			kfab_peer_queue_direct(peer,
					       kfab_frame_new(KFAB_WIRE_CREDIT, 0));
		more = !list_empty(&peer->txq);
		/* A lazy MSG's due waits a little for a frame going back. */
		peer->lazy_due |= lazy && peer->rx_seq != peer->ack_sent;
		if (!more && peer->lazy_due && peer->state != KFAB_PEER_CLOSED)
			queue_delayed_work(kfab_net_wq, &peer->ack_work,
					   msecs_to_jiffies(KFAB_WIRE_ACK_DELAY_MS));
	}
	mutex_unlock(&peer->lock);
	return more;
}

/* The sends an acknowledgment ended complete. */
static void kfab_peer_end_acked(struct kfab_peer *peer,
				struct list_head *done)
{
	struct kfab_op *op, *n;

	list_for_each_entry_safe(op, n, done, ack_link) {
		list_del_init(&op->ack_link);
		kfab_op_end(peer, op, 0);
	}
}

/**
 * kfab_conn_rx() - read and carry out one frame of an incoming connection
 * @conn: the connection
 *
 * Return: 0, or a negative errno: the connection is to be dropped
 * (-EPROTO for a malformed frame).
 */
int kfab_conn_rx(struct kfab_conn *conn)
{
	struct kfab_peer *peer;
	struct kfab_wire_hdr h;
	u32 len, credit, gen;
	bool ack_now = false, lazy = false, more = false;
	LIST_HEAD(gone);
	LIST_HEAD(done);
	int rc;

	rc = kfab_conn_recv_buf(conn, &h, sizeof(h));
	if (rc)
		return rc;
	len = be32_to_cpu(h.len);
	credit = be32_to_cpu(h.credit);
	if (be32_to_cpu(h.magic) != KFAB_WIRE_MAGIC ||
	    memchr_inv(h.__reserved, 0, sizeof(h.__reserved)) ||
	    !h.type || h.type > KFAB_WIRE_TYPE_MAX ||
	    len > sizeof(struct kfab_wire_msg) + KFAB_WIRE_DATA_MAX ||
	    credit > KFAB_WIRE_CREDIT_MAX)
		return -EPROTO;
	/* The first frame says who calls; nothing else comes before it. */
	if (h.type == KFAB_WIRE_HELLO)
		return credit || h.seq || h.ack ? -EPROTO :
		       kfab_conn_rx_hello(conn, len);
	peer = conn->peer;
	if (!peer)
		return -EPROTO;

	mutex_lock(&peer->rx_lock);
	rc = kfab_peer_rx_hdr(peer, conn, &h, &gen, &gone);
	if (!rc) {
		switch (h.type) {
		case KFAB_WIRE_MSG:
		case KFAB_WIRE_RTS:
			rc = kfab_conn_rx_msg(conn, h.type, len, &ack_now);
			lazy = h.type == KFAB_WIRE_MSG && !ack_now;
			break;
		case KFAB_WIRE_CTS:
			rc = kfab_conn_rx_cts(conn, len);
			break;
		case KFAB_WIRE_DATA:
			rc = kfab_conn_rx_data(conn, len);
			break;
		case KFAB_WIRE_RESULT:
			rc = kfab_conn_rx_result(conn, len);
			break;
		default:	/* KFAB_WIRE_CREDIT */
			rc = len ? -EPROTO : 0;
		}
	}
	if (!rc)
		more = kfab_peer_rx_done(peer, gen, be32_to_cpu(h.ack), ack_now,
					 lazy, &done);
	mutex_unlock(&peer->rx_lock);
	kfab_frames_free(&gone);
	kfab_peer_end_acked(peer, &done);
	/* What it queued goes once no frame is waiting to be read. */
	if (more && !(conn->engine->rx_pending &&
		      conn->engine->rx_pending(conn)))
		kfab_peer_kick(peer);
	return rc;
}
EXPORT_SYMBOL_FOR_KFAB_ENGINES(kfab_conn_rx);

/*
 * A connection's reader ended (@rc: why).  If it was its peer's, the peer
 * lost it (kfab_peer_conn_lost()).  One that was given up already, or a
 * crossed call's, ends quietly.
 */
void kfab_conn_closed(struct kfab_conn *conn, int rc)
{
	struct kfab_peer *peer = conn->peer;
	bool ours;

	if (!peer)
		return;
	mutex_lock(&peer->lock);
	ours = peer->in == conn;
	mutex_unlock(&peer->lock);
	/* Only the sender changes the connection; a closed peer has none. */
	if (ours && kfab_peer_tx_claim_wait(peer, false)) {
		mutex_lock(&peer->lock);
		ours = peer->in == conn;
		mutex_unlock(&peer->lock);
		if (ours)
			kfab_peer_conn_lost(peer, rc, true);
		kfab_peer_tx_release(peer);
	}
	conn->peer = NULL;
	kfab_peer_put(peer);
}
EXPORT_SYMBOL_FOR_KFAB_ENGINES(kfab_conn_closed);

/* ---- the connection ---- */

/*
 * Small frames go out KFAB_PEER_TX_BATCH at a time, in one call of the
 * engine: a burst of small messages costs a socket call per batch, not
 * per message.
 */
#define KFAB_PEER_TX_BATCH	16

/*
 * Describe @f's header, body and a MSG's payload in @kv (three at most),
 * its length set.  Return: how many of @kv; *@len grows by their bytes.
 */
static unsigned int kfab_frame_kvecs(struct kfab_frame *f, struct kvec *kv,
				     size_t *len)
{
	size_t payload = 0;
	unsigned int nr = 0;

	if (f->hdr.type == KFAB_WIRE_DATA) {
		payload = f->left;
		f->body.data.pull = cpu_to_be32(f->pull);
		f->body.data.offset = cpu_to_be64(f->off);
	} else if (f->hdr.type == KFAB_WIRE_MSG) {
		payload = f->op->len;
	}
	f->hdr.len = cpu_to_be32(f->body_len + payload);
	kv[nr++] = (struct kvec){ .iov_base = &f->hdr, .iov_len = sizeof(f->hdr) };
	*len += sizeof(f->hdr);
	if (f->body_len) {
		kv[nr++] = (struct kvec){ .iov_base = &f->body,
					  .iov_len = f->body_len };
		*len += f->body_len;
	}
	if (f->hdr.type == KFAB_WIRE_MSG && payload) {
		kv[nr++] = (struct kvec){ .iov_base = f->op->kbuf,
					  .iov_len = payload };
		*len += payload;
	}
	return nr;
}

/*
 * Send @nr frames of @f in one call (DATA: only one, at most
 * KFAB_WIRE_DATA_MAX).  Return: 0 or -errno.
 */
static int kfab_peer_xmit(struct kfab_peer *peer, struct kfab_link *out,
			  struct kfab_frame **f, unsigned int nr, bool more)
{
	struct kvec kv[3 * KFAB_PEER_TX_BATCH];
	unsigned int i, n = 0;
	size_t len = 0;
	bool data = f[0]->hdr.type == KFAB_WIRE_DATA;
	int rc;

	for (i = 0; i < nr; i++)
		n += kfab_frame_kvecs(f[i], kv + n, &len);
	rc = out->engine->send_kvec(out, kv, n, len, more || data);
	if (rc || !data)
		return rc;
	/* The message's own pages go out as they are: no copy. */
	return out->engine->send_pages(out, &f[0]->op->buf, f[0]->off,
				       f[0]->left, more);
}

/*
 * The called node's WELCOME: the load of its module we reached and its
 * session.  With KFAB_WIRE_WELCOME_RESUMED both sessions go on, and what
 * it did not get of ours goes out again first; else a session of ours
 * that had begun ends here, before anything is sent on this connection
 * (so frames queued for a node that restarted go to its new self).
 * Return: 0, -EALREADY (the calls crossed: the other node's is kept), or
 * another -errno.
 */
static int kfab_peer_welcomed(struct kfab_peer *peer, struct kfab_link *out)
{
	struct {
		struct kfab_wire_hdr h;
		struct kfab_wire_welcome w;
	} __packed ans;
	struct kvec kv = { .iov_base = &ans, .iov_len = sizeof(ans) };
	struct iov_iter it;
	bool ended = false;
	u32 inc, flags, session, received;
	LIST_HEAD(gone);
	int rc;

	iov_iter_kvec(&it, ITER_DEST, &kv, 1, sizeof(ans));
	rc = out->engine->recv_link(out, &it);
	if (rc)
		return rc == -EAGAIN ? -ETIMEDOUT : rc;
	inc = be32_to_cpu(ans.w.incarnation);
	flags = be32_to_cpu(ans.w.flags);
	session = be32_to_cpu(ans.w.session);
	received = be32_to_cpu(ans.w.received);
	/* Untrusted like every frame: exactly a WELCOME, or nothing. */
	if (be32_to_cpu(ans.h.magic) != KFAB_WIRE_MAGIC ||
	    ans.h.type != KFAB_WIRE_WELCOME || ans.h.credit ||
	    ans.h.seq || ans.h.ack ||
	    memchr_inv(ans.h.__reserved, 0, sizeof(ans.h.__reserved)) ||
	    be32_to_cpu(ans.h.len) != sizeof(ans.w) || !inc ||
	    (flags & ~KFAB_WIRE_WELCOME_FLAGS))
		return -EPROTO;
	/* The other call goes on: its HELLO brings the session's news. */
	if (flags & KFAB_WIRE_WELCOME_CROSSED)
		return -EALREADY;
	if (!session || (!(flags & KFAB_WIRE_WELCOME_RESUMED) && received))
		return -EPROTO;
	mutex_lock(&peer->lock);
	if (!(flags & KFAB_WIRE_WELCOME_RESUMED))
		ended = kfab_peer_adopt(peer, inc, session, false, &gone);
	/* It can only resume what our HELLO named. */
	else if (inc != peer->incarnation || session != peer->remote_session ||
		 !kfab_peer_ack_valid(peer, received, peer->acked))
		rc = -EPROTO;
	else
		kfab_peer_resume(peer, received, &gone);
	mutex_unlock(&peer->lock);
	kfab_frames_free(&gone);
	if (ended) {
		kfab_peer_fail_ops(peer, -ECONNRESET);
		kfab_peer_fail_pulls(peer, -ECONNRESET);
	}
	return rc;
}

/*
 * Call the peer's node: with the engine its node's rules give it
 * (kfab_engine_for()), and with TCP when that one cannot reach it (no
 * device of it on the way, no listener of it there) and the rule is
 * "auto".  Which one answered is the link's (kfab_link.engine).
 */
static int kfab_peer_connect(struct kfab_peer *peer, struct kfab_link **out)
{
	struct kfab_node *node = peer->node;
	const struct kfab_engine *e;
	bool fallback;
	int rc;

	mutex_lock(&node->lock);
	e = kfab_engine_for(node, &peer->addr, &fallback);
	if (e)
		WRITE_ONCE(peer->engine, e);
	mutex_unlock(&node->lock);
	/* "rdma" while no RDMA engine is loaded: as an unreachable node. */
	if (!e)
		return -EHOSTUNREACH;
	rc = e->connect(node, &peer->addr, out);
	if (rc && fallback && e != &kfab_tcp_engine) {
		pr_debug("kfab: %s cannot reach [%pI6c]:%u (%d): TCP\n",
			 e->name, peer->addr.node, be16_to_cpu(peer->addr.port),
			 rc);
		rc = kfab_tcp_engine.connect(node, &peer->addr, out);
	}
	return rc;
}

/*
 * The call, as the sender: connect, say who we are (the address answers
 * go to), and once welcomed make the connection the peer's.
 */
static int kfab_peer_call(struct kfab_peer *peer)
{
	struct kfab_node *node = peer->node;
	struct kfab_peer_info info;
	struct kfab_frame *f;
	struct kfab_link *out;
	bool up = false;
	int rc;

	/* Our listener went: the other node could not answer. */
	if (!kfab_node_is_self(node, &peer->local))
		return -EHOSTUNREACH;
	f = kfab_frame_new(KFAB_WIRE_HELLO, sizeof(f->body.hello));
	if (!f)
		return -ENOMEM;
	/* The old connection's reader is done with its last frame. */
	mutex_lock(&peer->rx_lock);
	mutex_lock(&peer->lock);
	f->body.hello = (struct kfab_wire_hello){
		.version = cpu_to_be32(KFAB_WIRE_VERSION),
		.incarnation = cpu_to_be32(kfab_incarnation),
		.node = peer->local,
		.session = cpu_to_be32(peer->session),
		.peer_session = cpu_to_be32(peer->remote_session),
		.received = cpu_to_be32(peer->rx_seq),
	};
	peer->calling = true;
	mutex_unlock(&peer->lock);
	mutex_unlock(&peer->rx_lock);
	rc = kfab_peer_connect(peer, &out);
	if (rc)
		goto out;
	rc = kfab_peer_xmit(peer, out, &f, 1, false);
	if (!rc)
		rc = kfab_peer_welcomed(peer, out);
	mutex_lock(&peer->lock);
	if (!rc && peer->state == KFAB_PEER_CLOSED)
		rc = -ESHUTDOWN;
	if (!rc) {
		kref_get(&peer->ref);
		out->conn->peer = peer;		/* kfab_conn_closed() puts it */
		peer->out = out;
		peer->in = out->conn;
		peer->crossed_at = 0;
		peer->lost_at = 0;
		up = peer->state == KFAB_PEER_IDLE;
		kfab_peer_up(peer);
		if (up)
			kfab_peer_info_of(peer, &info);
	}
	mutex_unlock(&peer->lock);
	if (rc) {
		out->engine->release(out);
		goto out;
	}
	out->engine->start(out, &peer->local);
	if (up)
		kfab_nl_notify_peer(node->net, &info, true, true);
out:
	mutex_lock(&peer->lock);
	peer->calling = false;
	mutex_unlock(&peer->lock);
	kfree(f);
	return rc;
}

/*
 * Errors of a connection that was reset, by the other node's TCP or on
 * the way, rather than ended by the other node or timed out: a new
 * connection may carry the session on.
 */
static bool kfab_conn_err_reset(int rc)
{
	return rc == -ECONNRESET || rc == -ECONNABORTED || rc == -EPIPE;
}

/* Has @peer anything the remote node has yet to get or to answer? */
static bool kfab_peer_outstanding(struct kfab_peer *peer)
{
	lockdep_assert_held(&peer->lock);
	return !list_empty(&peer->sent) || !list_empty(&peer->txq) ||
	       !xa_empty(&peer->ops) || !xa_empty(&peer->pulls);
}

/*
 * The connection failed (or could not be made), as the sender.  One that
 * was reset (@may_resume, @rc says so) ends nothing: the session waits
 * for a new connection, which we make at once if we have anything
 * outstanding, for up to kfab_peer_timeout_ms (kfab_peer_recall()).
 * Otherwise the session ends: what was queued is dropped, every send in
 * flight fails (its answer would have come on it) and so does every pull
 * (its data would have).  The next send starts a new session.
 */
static void kfab_peer_conn_lost(struct kfab_peer *peer, int rc,
				bool may_resume)
{
	struct kfab_peer_info info;
	struct kfab_link *out;
	LIST_HEAD(gone);
	bool down, resume;

	mutex_lock(&peer->lock);
	WARN_ON_ONCE(!peer->tx_busy);
	out = peer->out;
	peer->out = NULL;
	peer->in = NULL;
	peer->crossed_at = 0;
	down = peer->state == KFAB_PEER_UP;
	if (down)
		peer->state = KFAB_PEER_IDLE;
	resume = may_resume && kfab_conn_err_reset(rc) && peer->allowed &&
		 peer->state != KFAB_PEER_CLOSED;
	if (!resume) {
		kfab_peer_end_session(peer, &gone, true);
		peer->failures++;
		peer->failed_with = rc;
	} else if (kfab_peer_outstanding(peer) && !peer->lost_at) {
		/* Our sender calls once it lets go (kfab_peer_tx_release()). */
		peer->lost_at = jiffies ?: 1;
	}
	if (down)
		kfab_peer_info_of(peer, &info);
	mutex_unlock(&peer->lock);
	if (down)
		kfab_nl_notify_peer(peer->node->net, &info, false, true);
	/*
	 * Its reader ends too, and finds it is not the peer's any more.  A
	 * session that goes on resets it: the other node may not have
	 * noticed yet, and must not take it for an end.
	 */
	if (out && resume && out->engine->abort)
		out->engine->abort(out);
	else if (out)
		out->engine->release(out);
	kfab_frames_free(&gone);
	if (resume)
		return;
	if (rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -ENETUNREACH)
		rc = -EHOSTUNREACH;
	kfab_peer_fail_ops(peer, rc);
	kfab_peer_fail_pulls(peer, -ECONNRESET);
}

/*
 * Send what is queued, as the one sender of @peer (@tx_busy is ours).
 * @direct: in a doorbell or a receive loop, which keep small frames moving
 * without waking the transmit work; a DATA frame (a large message's bytes)
 * is left to the work.
 */
static void kfab_peer_drain(struct kfab_peer *peer, bool direct)
{
	struct kfab_frame *f, *s, *batch[KFAB_PEER_TX_BATCH];
	struct kfab_link *out;
	unsigned int nr;
	bool more, allowed;
	int rc;

	for (;;) {
		mutex_lock(&peer->lock);
		f = list_first_entry_or_null(&peer->txq, struct kfab_frame,
					     link);
		out = peer->out;
		if (!f || !out || (direct && f->hdr.type == KFAB_WIRE_DATA)) {
			peer->tx_busy = false;
			if (f)
				queue_work(kfab_net_wq, &peer->tx_work);
			mutex_unlock(&peer->lock);
			wake_up_all(&peer->tx_wait);
			return;
		}
		allowed = peer->allowed;
		mutex_unlock(&peer->lock);

		/*
		 * A large message's bytes go in pieces, each a frame of its
		 * own; @f stays first with the rest (only we take from the
		 * head of the queue).
		 */
		s = f;
		if (f->hdr.type == KFAB_WIRE_DATA &&
		    f->left > KFAB_WIRE_DATA_MAX) {
			s = kfab_frame_piece(f);
			if (!s) {
				kfab_peer_conn_lost(peer, -ENOMEM, false);
				kfab_peer_tx_release(peer);
				return;
			}
		}
		mutex_lock(&peer->lock);
		if (s != f) {
			f->off += s->left;
			f->left -= s->left;
			list_add_tail(&s->link, &peer->sent);
		} else {
			list_move_tail(&f->link, &peer->sent);
		}
		/* Kept on @sent until acknowledged: a reset sends it again. */
		kfab_peer_stamp(peer, s);
		batch[0] = s;
		nr = 1;
		/* Small frames after a small one go with it. */
		while (s->hdr.type != KFAB_WIRE_DATA &&
		       nr < KFAB_PEER_TX_BATCH &&
		       (f = list_first_entry_or_null(&peer->txq,
						     struct kfab_frame, link)) &&
		       f->hdr.type != KFAB_WIRE_DATA) {
			list_move_tail(&f->link, &peer->sent);
			kfab_peer_stamp(peer, f);
			batch[nr++] = f;
		}
		more = !list_empty(&peer->txq);
		mutex_unlock(&peer->lock);

		/* Taken off the allow-list meanwhile: the link goes. */
		rc = allowed ? kfab_peer_xmit(peer, out, batch, nr, more) :
			       -EHOSTUNREACH;
		if (rc) {
			kfab_peer_conn_lost(peer, rc, true);
			kfab_peer_tx_release(peer);
			return;
		}
	}
}

/* Become @peer's sender, unless someone is.  Return: whether we are. */
static bool kfab_peer_tx_claim(struct kfab_peer *peer)
{
	bool mine;

	mutex_lock(&peer->lock);
	mine = !peer->tx_busy;
	peer->tx_busy = true;
	mutex_unlock(&peer->lock);
	return mine;
}

/* For the wait in kfab_peer_tx_claim_wait(): worth trying again? */
static bool kfab_peer_tx_maybe_free(struct kfab_peer *peer, bool closed)
{
	/* Unlocked reads, a hint only: the claim decides under the lock. */
	bool busy = data_race(peer->tx_busy);
	/* The same */
	enum kfab_peer_state state = data_race(peer->state);

	return !busy || (!closed && state == KFAB_PEER_CLOSED);
}

/*
 * Become @peer's sender once whoever is lets go (a send blocks for at
 * most kfab_peer_timeout_ms).  A closed peer is nobody's to change
 * unless @closed.  Return: whether we are the sender.
 */
static bool kfab_peer_tx_claim_wait(struct kfab_peer *peer, bool closed)
{
	bool mine, gone;

	might_sleep();
	for (;;) {
		mutex_lock(&peer->lock);
		gone = !closed && peer->state == KFAB_PEER_CLOSED;
		mine = !gone && !peer->tx_busy;
		if (mine)
			peer->tx_busy = true;
		mutex_unlock(&peer->lock);
		if (mine || gone)
			return mine;
		wait_event(peer->tx_wait, kfab_peer_tx_maybe_free(peer, closed));
	}
}

/*
 * Stop being @peer's sender.  Frames queued meanwhile found it busy and
 * rely on us, and so does a session waiting for a new connection: hand
 * them to the transmit work.
 */
static void kfab_peer_tx_release(struct kfab_peer *peer)
{
	mutex_lock(&peer->lock);
	peer->tx_busy = false;
	if (!list_empty(&peer->txq) || (peer->lost_at && !peer->out))
		queue_work(kfab_net_wq, &peer->tx_work);
	mutex_unlock(&peer->lock);
	wake_up_all(&peer->tx_wait);
}

/*
 * Send @peer's queue from here (a doorbell, a receive loop) when the
 * connection is up and nobody else sends; else the transmit work does.
 */
static void kfab_peer_kick(struct kfab_peer *peer)
{
	bool up;

	mutex_lock(&peer->lock);
	up = peer->out && peer->state == KFAB_PEER_UP;
	if (!up && !list_empty(&peer->txq))
		queue_work(kfab_net_wq, &peer->tx_work);
	mutex_unlock(&peer->lock);
	if (up && kfab_peer_tx_claim(peer))
		kfab_peer_drain(peer, true);
}

/* How soon a crossed call is made again, if the other one has not come */
#define KFAB_PEER_RETRY	(HZ / 10)

/*
 * Calls again a little later while kfab_peer_timeout_ms has not passed
 * since @since (and the peer is not closed).  Return: whether it will.
 */
static bool kfab_peer_retry_within(struct kfab_peer *peer,
				   unsigned long since)
{
	unsigned long limit = msecs_to_jiffies(READ_ONCE(kfab_peer_timeout_ms));
	bool wait;

	lockdep_assert_held(&peer->lock);
	wait = time_before(jiffies, since + limit) &&
	       peer->state != KFAB_PEER_CLOSED;
	if (wait)
		mod_delayed_work(kfab_net_wq, &peer->retry_work,
				 KFAB_PEER_RETRY);
	return wait;
}

/*
 * Our call crossed the other node's, which is kept: the queue waits for
 * that connection.  Should it not come (the other call failed), we call
 * again a little later, for as long as a call may take.  Return: whether
 * to wait (else the sends fail).
 */
static bool kfab_peer_crossed(struct kfab_peer *peer)
{
	bool wait;

	mutex_lock(&peer->lock);
	peer->crossed++;
	if (!peer->crossed_at)
		peer->crossed_at = jiffies ?: 1;
	wait = kfab_peer_retry_within(peer, peer->crossed_at);
	mutex_unlock(&peer->lock);
	return wait;
}

/*
 * A call to carry on a session after a reset failed with @rc: while
 * kfab_peer_timeout_ms has not passed since the reset, we call again a
 * little later.  A call that was itself reset (its connection aborted
 * before the answer) is such a reset, even when the one before left
 * nothing outstanding.  Return: whether to wait (else the session ends).
 */
static bool kfab_peer_recall(struct kfab_peer *peer, int rc)
{
	bool wait;

	mutex_lock(&peer->lock);
	if (!peer->lost_at && kfab_conn_err_reset(rc))
		peer->lost_at = jiffies ?: 1;
	wait = peer->lost_at && kfab_peer_retry_within(peer, peer->lost_at);
	mutex_unlock(&peer->lock);
	return wait;
}

/* Stop being the sender, leaving the queue to wait (for a retry). */
static void kfab_peer_tx_idle(struct kfab_peer *peer)
{
	mutex_lock(&peer->lock);
	peer->tx_busy = false;
	mutex_unlock(&peer->lock);
	wake_up_all(&peer->tx_wait);
}

static void kfab_peer_tx_work(struct work_struct *work)
{
	struct kfab_peer *peer = container_of(work, struct kfab_peer,
					      tx_work);
	int rc;

	if (!kfab_peer_tx_claim(peer))
		return;
	if (!peer->out) {
		/* After a crossed call: the other node's, or the retry. */
		if (delayed_work_pending(&peer->retry_work)) {
			kfab_peer_tx_idle(peer);
			return;
		}
		rc = kfab_peer_call(peer);
		if (rc == -EALREADY) {
			if (kfab_peer_crossed(peer)) {
				kfab_peer_tx_idle(peer);
				return;
			}
			rc = -EHOSTUNREACH;
		} else if (rc && rc != -EPROTO && kfab_peer_recall(peer, rc)) {
			kfab_peer_tx_idle(peer);
			return;
		}
		if (rc) {
			kfab_peer_conn_lost(peer, rc, false);
			kfab_peer_tx_release(peer);
			return;
		}
	}
	kfab_peer_drain(peer, false);
}

/* No frame went back since a lazy MSG: its due goes in one of its own. */
static void kfab_peer_ack_work(struct work_struct *work)
{
	struct kfab_peer *peer = container_of(to_delayed_work(work),
					      struct kfab_peer, ack_work);
	bool due;

	/* Without a connection: kfab_peer_up() brings us back. */
	mutex_lock(&peer->lock);
	due = peer->lazy_due;
	if (due && peer->state == KFAB_PEER_UP && list_empty(&peer->txq))
		kfab_peer_queue_direct(peer,
				       kfab_frame_new(KFAB_WIRE_CREDIT, 0));
	mutex_unlock(&peer->lock);
	kfab_peer_kick(peer);
}

static void kfab_peer_retry_work(struct work_struct *work)
{
	struct kfab_peer *peer = container_of(to_delayed_work(work),
					      struct kfab_peer, retry_work);

	queue_work(kfab_net_wq, &peer->tx_work);
}

/* The peer may no longer talk: its sender lets the connection go. */
static void kfab_peer_down_work(struct work_struct *work)
{
	struct kfab_peer *peer = container_of(work, struct kfab_peer,
					      down_work);

	/* A sender at work fails on the dead link and cleans up itself. */
	if (!kfab_peer_tx_claim(peer))
		return;
	if (peer->out)
		kfab_peer_conn_lost(peer, -ECONNRESET, false);
	kfab_peer_tx_release(peer);
}

/*
 * @node's allow-list or listeners changed: each peer learns whether it may
 * still talk (so senders need not walk the lists per frame), and peers
 * that may not lose their connections, and what was in flight with them
 * fails.
 */
void kfab_node_recheck_peers(struct kfab_node *node)
{
	struct kfab_peer *peer;
	bool allowed;

	mutex_lock(&node->lock);
	list_for_each_entry(peer, &node->peers, link) {
		allowed = kfab_peer_may_talk(node, peer);
		mutex_lock(&peer->lock);
		peer->allowed = allowed;
		if (!allowed && peer->in)
			peer->in->engine->shutdown(peer->in);
		mutex_unlock(&peer->lock);
		if (allowed)
			continue;
		/* Only the sender lets the connection go: the down work is one. */
		queue_work(kfab_net_wq, &peer->down_work);
	}
	mutex_unlock(&node->lock);
}

/*
 * Engine @e goes (kfab_node_drop_engine()): peers that called with it call
 * with TCP from now on.  Their connections of it end next, which a peer
 * takes as a reset, so its session goes on over TCP.
 */
void kfab_node_peers_drop_engine(struct kfab_node *node,
				 const struct kfab_engine *e)
{
	struct kfab_peer *peer;

	mutex_lock(&node->lock);
	list_for_each_entry(peer, &node->peers, link)
		if (peer->engine == e)
			WRITE_ONCE(peer->engine, &kfab_tcp_engine);
	mutex_unlock(&node->lock);
}

/* ---- the end of a node ---- */

/*
 * The node goes: every peer stops, its sends and pulls fail, its
 * connections close.  Called once no listener is left and no new peer
 * can come.
 */
void kfab_node_close_peers(struct kfab_node *node)
{
	struct kfab_peer_info info;
	struct kfab_peer *peer, *n;
	LIST_HEAD(gone);
	bool was_up;

	mutex_lock(&node->lock);
	list_splice_init(&node->peers, &gone);
	mutex_unlock(&node->lock);
	list_for_each_entry_safe(peer, n, &gone, link) {
		mutex_lock(&peer->lock);
		was_up = peer->state == KFAB_PEER_UP;
		peer->state = KFAB_PEER_CLOSED;
		if (peer->in)
			peer->in->engine->shutdown(peer->in);
		if (was_up)
			kfab_peer_info_of(peer, &info);
		mutex_unlock(&peer->lock);
		/* The namespace goes: only the initial one's group hears. */
		if (was_up)
			kfab_nl_notify_peer(node->net, &info, false, false);
		wake_up_all(&peer->tx_wait);
		cancel_delayed_work_sync(&peer->retry_work);
		cancel_delayed_work_sync(&peer->ack_work);
		cancel_work_sync(&peer->tx_work);
		cancel_work_sync(&peer->down_work);
		/* Only the sender may let the connection go. */
		kfab_peer_tx_claim_wait(peer, true);
		kfab_peer_conn_lost(peer, -ECONNRESET, false);
		kfab_peer_put(peer);
	}
	kfab_conns_close(node);
}

void kfab_peer_debugfs_show(struct seq_file *s, struct kfab_node *node)
{
	struct kfab_peer *peer;

	mutex_lock(&node->lock);
	list_for_each_entry(peer, &node->peers, link) {
		mutex_lock(&peer->lock);
		seq_printf(s, "netns %u peer [%pI6c]:%u local [%pI6c]:%u state %s incarnation %08x out %d in %d credit %lld owed %u tx %llu/%llu rx %llu/%llu failures %llu failed_with %d engine %s crossed %llu session %08x/%08x seq %u/%u acked %u resumed %llu resent %llu direct %llu\n",
			   node->net->ns.inum, peer->addr.node,
			   be16_to_cpu(peer->addr.port), peer->local.node,
			   be16_to_cpu(peer->local.port),
			   peer->state == KFAB_PEER_UP ? "up" :
			   peer->state == KFAB_PEER_IDLE ? "idle" : "closed",
			   peer->incarnation, !!peer->out, !!peer->in,
			   peer->credit, peer->owed, peer->tx_msgs,
			   peer->tx_bytes, peer->rx_msgs, peer->rx_bytes,
			   peer->failures, peer->failed_with,
			   kfab_peer_engine_name(peer), peer->crossed,
			   peer->session, peer->remote_session, peer->tx_seq,
			   peer->rx_seq, peer->acked, peer->resumed,
			   peer->resent, peer->rx_direct);
		mutex_unlock(&peer->lock);
	}
	mutex_unlock(&node->lock);
}

/**
 * kfab_peer_for_each() - the peers of a node, for netlink dumps
 * @node: the node
 * @pos: peers to skip; advanced past each peer @fn took
 * @fn: called with a snapshot of each peer, under the node's lock
 * @arg: @fn's
 *
 * Return: 0 after the last peer, or what @fn returned to stop.
 */
int kfab_peer_for_each(struct kfab_node *node, unsigned long *pos,
		       kfab_peer_info_fn fn, void *arg)
{
	struct kfab_peer_info info;
	struct kfab_peer *peer;
	unsigned long i = 0;
	int rc = 0;

	mutex_lock(&node->lock);
	list_for_each_entry(peer, &node->peers, link) {
		if (i++ < *pos)
			continue;
		mutex_lock(&peer->lock);
		kfab_peer_info_of(peer, &info);
		mutex_unlock(&peer->lock);
		rc = fn(arg, &info);
		if (rc)
			break;
		(*pos)++;
	}
	mutex_unlock(&node->lock);
	return rc;
}

int kfab_peer_init(void)
{
	/* High priority: its workers compete with programs polling CQs. */
	kfab_net_wq = alloc_workqueue("kfab_net", WQ_UNBOUND | WQ_HIGHPRI |
				      WQ_MEM_RECLAIM, 0);
	return kfab_net_wq ? 0 : -ENOMEM;
}

void kfab_peer_exit(void)
{
	destroy_workqueue(kfab_net_wq);
}
