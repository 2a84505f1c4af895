// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim/peer: peer shared receive contexts (fi_peer(3)), both roles.
 * libshim/srx.c reaches this file through struct shim_srx_hooks, and
 * libshim/cq.c through the CQ hooks of peer/cq.c (internal.h).
 *
 * The kernel matches nothing here.  A kfab SRX in peer mode has no receive
 * posted in the kernel, so every message sent to one of its endpoints
 * waits there, unexpected, in arrival order.  The *engine* (kfab as the
 * peer of some owner) finds the oldest with a receive flagged
 * KFAB_SQE_PEEK | KFAB_SQE_CLAIM (any source, every tag bit ignored; one
 * for untagged, one for tagged messages) whose context is a slot of the
 * engine: the kernel sets the message aside for that context and completes
 * the peek with its length, tag, data and source.  The engine then asks
 * the owner for a buffer (get_msg/get_tag); with one, a receive flagged
 * KFAB_SQE_CLAIM with the same context moves the message into it;
 * without, the owner queues the entry (queue_msg/queue_tag) and later
 * hands it back with start_msg/start_tag (the same claim) or
 * discard_msg/discard_tag (KFAB_SQE_CLAIM | KFAB_SQE_DISCARD).  Every
 * entry goes back with free_entry once the engine is done with it.
 *
 * The kernel completes those requests on the CQ of the endpoint the
 * message was sent to (a peek that finds nothing, on the first endpoint's):
 * shim_psrx_filter(), the filter of every CQ's hooks (peer/cq.c) while an
 * engine exists, drops the engine's own and rewrites a claim's into the
 * completion of the owner's receive (its context).  Owner callbacks are
 * never made from there, only from shim_psrx_progress_all(), which every
 * read of a kfab CQ calls first (the hooks' progress), serialised per
 * engine, as the spec wants ("the get and queue calls should be
 * serialized").
 *
 * kfab as the owner: fi_get_val(KFAB_FID_PEER_EXPORT) on a kfab SRX turns
 * it into an SRX whose receives live here, in posting order, and whose
 * unexpected messages (from kfab's own endpoints and from every peer)
 * live here too, in arrival order.  kfab's own traffic reaches it through
 * an engine of its own that calls kfab's owner ops, exactly as an outside
 * peer does; so one set of lists serves kfab's messages and the peers'
 * in the order receives were posted.  A peer's source address belongs to
 * its own AV: its messages match receives posted with FI_ADDR_UNSPEC only.
 *
 * Locks: an engine's lock (slots) and an owner's lock (lists) are leaves;
 * no callback into another provider is made holding either.
 */
#include <stdlib.h>
#include <string.h>

#include "../barrier.h"
#include "peer.h"

#define SHIM_PSRX_SLOTS	256
#define SHIM_KIND_MSG	0
#define SHIM_KIND_TAG	1

enum shim_slot_state {
	SHIM_SLOT_FREE,
	SHIM_SLOT_PEEK,		/* the peek is in the kernel */
	SHIM_SLOT_ARRIVED,	/* found a message: ask the owner */
	SHIM_SLOT_HELD,		/* queued at the owner */
	SHIM_SLOT_CLAIM,	/* claimed into the owner's buffer */
	SHIM_SLOT_DISCARD,	/* dropped at the owner's word */
	SHIM_SLOT_DONE,		/* completed: free_entry() to call */
	SHIM_SLOT_RETRY_CLAIM,	/* the ring was full: claim again */
	SHIM_SLOT_RETRY_DISCARD,
};

struct shim_psrx;

/**
 * struct shim_psrx_slot - one message the engine handles
 * @ps: its engine
 * @state: a SHIM_SLOT_*
 * @kind: SHIM_KIND_MSG or SHIM_KIND_TAG
 * @len, @tag, @data, @flags: the message, as the peek reported it
 * @src: its source in the SRX's AV, or FI_ADDR_UNSPEC
 * @entry: the owner's entry, from get_* until free_entry()
 */
struct shim_psrx_slot {
	struct shim_psrx *ps;
	enum shim_slot_state state;
	int kind;
	uint64_t len, tag, data, flags;
	fi_addr_t src;
	struct fi_peer_rx_entry *entry;
};

struct shim_srx_owner;
static void shim_owner_start_deferred(struct shim_srx_owner *own);

/**
 * struct shim_psrx - the engine of a kfab SRX
 * @srx: the SRX (its kernel object and ring)
 * @owner: the fid_peer_srx whose owner_ops the engine calls: another
 *	provider's (kfab as the peer), or kfab's own (kfab as the owner)
 * @own: kfab as the owner: the lists; else NULL
 * @honor_completion: a claim's success is reported only when the entry
 *	has FI_COMPLETION (kfab's own entries carry the receive's choice)
 * @progress_lock: one progress at a time (owner callbacks serialised)
 * @lock: protects the slots and @peeking
 * @peeking: a peek of that kind is in the kernel
 * @dead: its SRX is closed, but completions of its requests may still
 *	sit in CQ rings: it stays (unused) so they are recognised and dropped
 * @next: the global list
 * @slots: contexts of the engine's requests
 */
struct shim_psrx {
	struct shim_srx *srx;
	struct fid_peer_srx *owner;
	struct shim_srx_owner *own;
	bool honor_completion;
	pthread_mutex_t progress_lock;
	pthread_mutex_t lock;
	bool peeking[2];
	bool dead;
	struct shim_psrx *next;
	struct shim_psrx_slot slots[SHIM_PSRX_SLOTS];
};

static const struct shim_srx_hooks shim_psrx_srx_hooks;

static struct shim_psrx *to_shim_psrx(struct shim_srx *srx)
{
	return srx->peer;
}

/* Every engine, for the CQ hooks; shim_psrx_count is read unlocked. */
static pthread_rwlock_t shim_psrx_rw = PTHREAD_RWLOCK_INITIALIZER;
static struct shim_psrx *shim_psrx_list;
static unsigned int shim_psrx_count;

bool shim_psrx_active(void)
{
	return shim_read_once(&shim_psrx_count) != 0;
}

/* Under shim_psrx_rw (read): the slot behind @ctx, or NULL. */
static struct shim_psrx_slot *shim_psrx_slot_of(uint64_t ctx)
{
	struct shim_psrx *ps;

	for (ps = shim_psrx_list; ps; ps = ps->next) {
		uintptr_t lo = (uintptr_t)&ps->slots[0];
		uintptr_t hi = (uintptr_t)&ps->slots[SHIM_PSRX_SLOTS];

		if (ctx >= lo && ctx < hi &&
		    (ctx - lo) % sizeof(struct shim_psrx_slot) == 0)
			return (struct shim_psrx_slot *)(uintptr_t)ctx;
	}
	return NULL;
}

/* ---- requests into the SRX's ring ---- */

static int shim_psrx_post(struct shim_psrx *ps, struct kfab_sqe *sqe)
{
	struct shim_srx *srx = ps->srx;
	ssize_t ret;

	pthread_mutex_lock(&srx->lock);
	/* Without an enabled endpoint the kernel takes no doorbell. */
	ret = srx->live ? shim_ring_post(&srx->ring, sqe, false, true) :
			  -FI_EAGAIN;
	pthread_mutex_unlock(&srx->lock);
	return (int)ret;
}

static void shim_psrx_sqe(struct kfab_sqe *sqe, struct shim_psrx_slot *s,
			  uint32_t flags)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = s->kind == SHIM_KIND_TAG ? KFAB_OP_TRECV : KFAB_OP_RECV;
	sqe->flags = flags | KFAB_SQE_COMPLETION;
	sqe->context = (uintptr_t)s;
	sqe->addr = KFAB_CQ_ADDR_NOTAVAIL;	/* any source */
	sqe->ignore = ~0ULL;			/* any tag */
}

/* Claim the message of @s into @e's buffers (or drop it). */
static int shim_psrx_claim(struct shim_psrx_slot *s,
			   struct fi_peer_rx_entry *e, bool discard)
{
	struct shim_psrx *ps = s->ps;
	struct kfab_sqe sqe;
	size_t i, n;
	int ret;

	shim_psrx_sqe(&sqe, s, KFAB_SQE_CLAIM |
			       (discard ? KFAB_SQE_DISCARD : 0));
	if (!discard) {
		n = e->count < KFAB_IOV_MAX ? e->count : KFAB_IOV_MAX;
		for (i = 0; i < n && e->iov; i++) {
			sqe.iov[i].base = (uintptr_t)e->iov[i].iov_base;
			sqe.iov[i].len = e->iov[i].iov_len;
		}
		sqe.iov_count = (uint8_t)(e->iov ? n : 0);
	}
	pthread_mutex_lock(&ps->lock);
	s->entry = e;
	s->state = discard ? SHIM_SLOT_DISCARD : SHIM_SLOT_CLAIM;
	pthread_mutex_unlock(&ps->lock);
	ret = shim_psrx_post(ps, &sqe);
	if (ret) {
		/* The entry is ours now: progress tries again. */
		pthread_mutex_lock(&ps->lock);
		s->state = discard ? SHIM_SLOT_RETRY_DISCARD :
				     SHIM_SLOT_RETRY_CLAIM;
		pthread_mutex_unlock(&ps->lock);
	}
	return 0;
}

/* ---- fi_ops_srx_peer: the owner hands a queued message back ---- */

static struct shim_psrx_slot *shim_psrx_held(struct fi_peer_rx_entry *e)
{
	struct shim_psrx_slot *s;

	if (!e)
		return NULL;
	pthread_rwlock_rdlock(&shim_psrx_rw);
	s = shim_psrx_slot_of((uintptr_t)e->peer_context);
	pthread_rwlock_unlock(&shim_psrx_rw);
	if (!s || s->state != SHIM_SLOT_HELD || s->entry != e)
		return NULL;
	return s;
}

static int shim_psrx_start(struct fi_peer_rx_entry *e)
{
	struct shim_psrx_slot *s = shim_psrx_held(e);

	return s ? shim_psrx_claim(s, e, false) : -FI_EINVAL;
}

static int shim_psrx_discard(struct fi_peer_rx_entry *e)
{
	struct shim_psrx_slot *s = shim_psrx_held(e);

	return s ? shim_psrx_claim(s, e, true) : -FI_EINVAL;
}

static const struct fi_ops_srx_peer shim_psrx_peer_ops = {
	.size = sizeof(struct fi_ops_srx_peer),
	.start_msg = shim_psrx_start,
	.start_tag = shim_psrx_start,
	.discard_msg = shim_psrx_discard,
	.discard_tag = shim_psrx_discard,
};

/* ---- filtering the engine's completions (the CQ hooks, peer/cq.c) ---- */

int shim_psrx_filter(struct kfab_cq_entry *e, int err, bool commit)
{
	struct shim_psrx_slot *s;
	struct shim_psrx *ps;
	int ret = SHIM_CQ_KEEP;

	pthread_rwlock_rdlock(&shim_psrx_rw);
	s = shim_psrx_slot_of(e->op_context);
	if (!s)
		goto out;
	ps = s->ps;
	pthread_mutex_lock(&ps->lock);
	if (ps->dead) {
		ret = SHIM_CQ_DROP;
		pthread_mutex_unlock(&ps->lock);
		goto out;
	}
	switch (s->state) {
	case SHIM_SLOT_PEEK:
		ret = SHIM_CQ_DROP;
		if (!commit)
			break;
		ps->peeking[s->kind] = false;
		if (err) {
			/* ENOMSG: nothing waits. */
			s->state = SHIM_SLOT_FREE;
			break;
		}
		s->len = e->len;
		s->tag = e->tag;
		s->data = e->data;
		s->flags = e->flags;
		s->src = e->src_addr == KFAB_CQ_ADDR_NOTAVAIL ?
			 FI_ADDR_UNSPEC : e->src_addr;
		s->state = SHIM_SLOT_ARRIVED;
		break;
	case SHIM_SLOT_CLAIM:
		/*
		 * The owner's receive completes, with the owner's context
		 * and the start of the owner's buffer.
		 */
		e->op_context = (uintptr_t)s->entry->context;
		if (s->entry->count && s->entry->iov)
			e->buf = (uintptr_t)s->entry->iov[0].iov_base;
		ret = SHIM_CQ_KEEP;
		if (!err && ps->honor_completion &&
		    !(s->entry->flags & FI_COMPLETION))
			ret = SHIM_CQ_DROP;
		if (commit)
			s->state = SHIM_SLOT_DONE;
		break;
	case SHIM_SLOT_DISCARD:
		/* fi_peer(3): no completion for a discarded message. */
		ret = SHIM_CQ_DROP;
		if (commit)
			s->state = SHIM_SLOT_DONE;
		break;
	default:
		/* Stale: a request of a state since left. */
		ret = SHIM_CQ_DROP;
		break;
	}
	pthread_mutex_unlock(&ps->lock);
out:
	pthread_rwlock_unlock(&shim_psrx_rw);
	return ret;
}

/* ---- progress ---- */

static void shim_psrx_arrived(struct shim_psrx *ps, struct shim_psrx_slot *s)
{
	struct fi_peer_rx_entry *e = NULL;
	int ret;

	if (s->kind == SHIM_KIND_TAG)
		ret = shim_peer_get_tag(ps->owner, s->src, s->len, s->tag, &e);
	else
		ret = shim_peer_get_msg(ps->owner, s->src, s->len, &e);
	if (ret && ret != -FI_ENOENT)
		return;		/* the owner is out of entries: later */
	if (!e)
		return;
	SHIM_RXE_SIZE(e) = s->len;
	if (s->flags & FI_REMOTE_CQ_DATA)
		shim_rxe_set_cq_data(e, s->data);
	if (!ret) {
		shim_psrx_claim(s, e, false);
		return;
	}
	/* Unexpected: the owner keeps it until a receive matches. */
	e->addr = s->src;
	if (s->kind == SHIM_KIND_TAG)
		e->tag = s->tag;
	e->peer_context = s;
	pthread_mutex_lock(&ps->lock);
	s->entry = e;
	s->state = SHIM_SLOT_HELD;
	pthread_mutex_unlock(&ps->lock);
	if (s->kind == SHIM_KIND_TAG)
		ret = ps->owner->owner_ops->queue_tag(e);
	else
		ret = ps->owner->owner_ops->queue_msg(e);
	if (ret)
		SHIM_WARN(EP_DATA, "the owner refused to queue a message: %d\n",
			  ret);
}

static void shim_psrx_progress(struct shim_psrx *ps)
{
	struct fi_peer_rx_entry *done[16];
	struct shim_psrx_slot *arrived[2], *peek[2], *retry[4];
	bool retry_discard[4];
	struct kfab_sqe sqe;
	int i, n, k, na, nr;

	if (ps->dead || pthread_mutex_trylock(&ps->progress_lock))
		return;
	if (ps->own)
		shim_owner_start_deferred(ps->own);
	for (;;) {
		n = 0;
		na = 0;
		nr = 0;
		pthread_mutex_lock(&ps->lock);
		for (i = 0; i < SHIM_PSRX_SLOTS; i++) {
			struct shim_psrx_slot *s = &ps->slots[i];

			if (s->state == SHIM_SLOT_DONE && n < 16) {
				done[n++] = s->entry;
				s->entry = NULL;
				s->state = SHIM_SLOT_FREE;
			} else if (s->state == SHIM_SLOT_ARRIVED && na < 2) {
				arrived[na++] = s;
			} else if ((s->state == SHIM_SLOT_RETRY_CLAIM ||
				    s->state == SHIM_SLOT_RETRY_DISCARD) &&
				   nr < 4) {
				retry_discard[nr] =
					s->state == SHIM_SLOT_RETRY_DISCARD;
				retry[nr++] = s;
			}
		}
		pthread_mutex_unlock(&ps->lock);
		for (i = 0; i < n; i++)
			ps->owner->owner_ops->free_entry(done[i]);
		for (i = 0; i < nr; i++)
			shim_psrx_claim(retry[i], retry[i]->entry,
					retry_discard[i]);
		for (i = 0; i < na; i++)
			shim_psrx_arrived(ps, arrived[i]);
		if (n < 16)
			break;
	}

	/* One peek per kind in the kernel at a time: arrival order. */
	pthread_mutex_lock(&ps->lock);
	for (k = 0; k < 2; k++) {
		peek[k] = NULL;
		if (ps->peeking[k])
			continue;
		for (i = 0; i < SHIM_PSRX_SLOTS; i++) {
			if (ps->slots[i].state == SHIM_SLOT_FREE) {
				peek[k] = &ps->slots[i];
				peek[k]->state = SHIM_SLOT_PEEK;
				peek[k]->kind = k;
				ps->peeking[k] = true;
				break;
			}
		}
	}
	pthread_mutex_unlock(&ps->lock);
	for (k = 0; k < 2; k++) {
		if (!peek[k])
			continue;
		shim_psrx_sqe(&sqe, peek[k], KFAB_SQE_PEEK | KFAB_SQE_CLAIM);
		if (shim_psrx_post(ps, &sqe)) {
			pthread_mutex_lock(&ps->lock);
			peek[k]->state = SHIM_SLOT_FREE;
			ps->peeking[k] = false;
			pthread_mutex_unlock(&ps->lock);
		}
	}
	pthread_mutex_unlock(&ps->progress_lock);
}

void shim_psrx_progress_all(void)
{
	struct shim_psrx *ps;

	if (!shim_psrx_active())
		return;
	pthread_rwlock_rdlock(&shim_psrx_rw);
	for (ps = shim_psrx_list; ps; ps = ps->next)
		shim_psrx_progress(ps);
	pthread_rwlock_unlock(&shim_psrx_rw);
}

/* ---- engines ---- */

static struct shim_psrx *shim_psrx_new(struct shim_srx *srx,
				       struct fid_peer_srx *owner,
				       bool honor_completion)
{
	struct shim_psrx *ps = calloc(1, sizeof(*ps));
	int i;

	if (!ps)
		return NULL;
	if (pthread_mutex_init(&ps->lock, NULL)) {
		free(ps);
		return NULL;
	}
	if (pthread_mutex_init(&ps->progress_lock, NULL)) {
		pthread_mutex_destroy(&ps->lock);
		free(ps);
		return NULL;
	}
	for (i = 0; i < SHIM_PSRX_SLOTS; i++)
		ps->slots[i].ps = ps;
	ps->srx = srx;
	ps->owner = owner;
	ps->honor_completion = honor_completion;
	return ps;
}

static void shim_psrx_register(struct shim_psrx *ps)
{
	pthread_rwlock_wrlock(&shim_psrx_rw);
	ps->next = shim_psrx_list;
	shim_psrx_list = ps;
	shim_write_once(&shim_psrx_count, shim_psrx_count + 1);
	pthread_rwlock_unlock(&shim_psrx_rw);
	/* From now on every CQ may carry an engine's completions. */
	shim_cq_set_global_hooks(&shim_psrx_cq_hooks);
}

/*
 * The SRX is going (no endpoint is bound any more, so no completion of
 * the engine can come): entries still the engine's go back to the owner.
 */
static void shim_psrx_free(struct shim_psrx *ps)
{
	struct fi_peer_rx_entry *back[SHIM_PSRX_SLOTS];
	struct shim_psrx **pp;
	bool in_flight = false;
	int i, n = 0;

	pthread_mutex_lock(&ps->progress_lock);
	pthread_mutex_lock(&ps->lock);
	for (i = 0; i < SHIM_PSRX_SLOTS; i++) {
		struct shim_psrx_slot *s = &ps->slots[i];

		if (s->entry && s->state != SHIM_SLOT_HELD)
			back[n++] = s->entry;
		s->entry = NULL;
		in_flight |= s->state == SHIM_SLOT_PEEK ||
			     s->state == SHIM_SLOT_CLAIM ||
			     s->state == SHIM_SLOT_DISCARD;
	}
	/*
	 * A completion of one of its requests may still wait in a CQ: the
	 * engine stays, dead, so the context is recognised and dropped
	 * rather than handed to the application.
	 */
	ps->dead = in_flight;
	pthread_mutex_unlock(&ps->lock);
	pthread_mutex_unlock(&ps->progress_lock);
	for (i = 0; i < n; i++)
		ps->owner->owner_ops->free_entry(back[i]);
	if (in_flight)
		return;
	pthread_rwlock_wrlock(&shim_psrx_rw);
	for (pp = &shim_psrx_list; *pp; pp = &(*pp)->next) {
		if (*pp == ps) {
			*pp = ps->next;
			shim_write_once(&shim_psrx_count, shim_psrx_count - 1);
			break;
		}
	}
	pthread_rwlock_unlock(&shim_psrx_rw);
	pthread_mutex_destroy(&ps->progress_lock);
	pthread_mutex_destroy(&ps->lock);
	free(ps);
}

/* ---- kfab as the peer: fi_srx_context(FI_PEER) ---- */

int shim_srx_peer_context(struct fid_domain *domain, struct fi_rx_attr *attr,
			  struct fid_ep **rx_ep, void *context)
{
	struct fi_peer_srx_context *ctx = context;
	struct fi_ops_srx_owner *o;
	struct fi_rx_attr a = *attr;
	struct fid_peer_srx *owner;
	struct shim_psrx *ps;
	struct shim_srx *srx;
	int ret;

	if (!rx_ep || !ctx || ctx->size < sizeof(*ctx) || !ctx->srx)
		return -FI_EINVAL;
	owner = ctx->srx;
	o = owner->owner_ops;
	if (!o || !o->get_msg || !o->get_tag || !o->queue_msg ||
	    !o->queue_tag || !o->free_entry) {
		SHIM_INFO(EP_CTRL, "FI_PEER without a usable fi_peer_srx_context\n");
		return -FI_EINVAL;
	}
	a.op_flags &= ~FI_PEER;
	ret = shim_srx_context(domain, &a, rx_ep, NULL);
	if (ret)
		return ret;
	srx = to_shim_srx(*rx_ep);
	ps = shim_psrx_new(srx, owner, false);
	if (!ps) {
		(void)fi_close(&(*rx_ep)->fid);
		return -FI_ENOMEM;
	}
	/*
	 * fi_peer(3): the owner initialises everything but the peer's
	 * callbacks, which the peer sets before returning.  An owner that
	 * gave no table gets ours.
	 */
	if (owner->peer_ops) {
		owner->peer_ops->start_msg = shim_psrx_start;
		owner->peer_ops->start_tag = shim_psrx_start;
		owner->peer_ops->discard_msg = shim_psrx_discard;
		owner->peer_ops->discard_tag = shim_psrx_discard;
	} else {
		owner->peer_ops = (struct fi_ops_srx_peer *)&shim_psrx_peer_ops;
	}
	shim_srx_set_hooks(srx, &shim_psrx_srx_hooks, ps);
	shim_psrx_register(ps);
	return 0;
}

/* ---- kfab as the owner ---- */

/**
 * struct shim_rxe - an fi_peer_rx_entry of kfab's: a posted receive (a
 *	recv) or an unexpected message
 * @pe: what the peer sees
 * @next: the list it is on (recvs or unexpected), if any
 * @kind: SHIM_KIND_*
 * @ignore: a tagged recv's ignore bits
 * @directed: a recv for one source (@pe.addr, of kfab's AV)
 * @from: unexpected: the peer object it arrived through
 * @iov, @desc: storage @pe points to
 */
struct shim_rxe {
	struct fi_peer_rx_entry pe;
	struct shim_rxe *next;
	int kind;
	uint64_t ignore;
	bool directed;
	struct shim_peer_srx_obj *from;
	struct iovec iov[KFAB_IOV_MAX];
	void *desc[KFAB_IOV_MAX];
};

/**
 * struct shim_peer_srx_obj - one fid_peer_srx kfab handed out
 * @peer: what the peer provider sees; the first member.  Its ep_fid has
 *	class FI_CLASS_SRX_CTX: a peer binds its endpoints to it (shm does)
 * @peer_ops: the table the peer fills in (fi_peer(3)); a peer may also
 *	point @peer.peer_ops elsewhere (libfabric 1.17's shm does)
 * @own: the owner state
 * @internal: kfab's own engine's object (its sources are kfab's AV's)
 * @imported: a fid the peer returned (fi_import_fid), closed with us
 * @next: the owner's list
 */
struct shim_peer_srx_obj {
	struct fid_peer_srx peer;
	struct fi_ops_srx_peer peer_ops;
	struct shim_srx_owner *own;
	bool internal;
	struct fid *imported;
	struct shim_peer_srx_obj *next;
};

struct shim_rxe_list {
	struct shim_rxe *head, *tail;
};

/**
 * struct shim_srx_owner - a kfab SRX exported to peers
 * @srx: the SRX
 * @lock: protects the lists and @objs
 * @recvs: the posted receives (recvs), per kind, oldest first
 * @unexp: messages no receive matched yet, per kind, oldest first
 * @objs: the objects handed out to peers
 * @self: the object of kfab's own engine
 * @cancel_ep: where a cancelled receive completes (the first endpoint
 *	enabled that is still bound)
 * @to_start: messages a receive took while their peer was queueing them:
 *	started at the next progress, not from inside the peer's queue call
 */
struct shim_srx_owner {
	struct shim_srx *srx;
	pthread_mutex_t lock;
	struct shim_rxe_list recvs[2], unexp[2], to_start;
	struct shim_peer_srx_obj *objs;
	struct shim_peer_srx_obj self;
	struct shim_ep *cancel_ep;
};

static void shim_rxe_append(struct shim_rxe_list *l, struct shim_rxe *r)
{
	r->next = NULL;
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
}

/* Unlink and return the first entry @match accepts. */
static struct shim_rxe *shim_rxe_take(struct shim_rxe_list *l,
				      bool (*match)(const struct shim_rxe *,
						    const void *),
				      const void *arg)
{
	struct shim_rxe *r, *prev = NULL;

	for (r = l->head; r; prev = r, r = r->next) {
		if (!match(r, arg))
			continue;
		if (prev)
			prev->next = r->next;
		else
			l->head = r->next;
		if (l->tail == r)
			l->tail = prev;
		r->next = NULL;
		return r;
	}
	return NULL;
}

struct shim_arrival {
	fi_addr_t addr;
	uint64_t tag;
	bool internal;
};

/* The recv @recv for a message (directed ones: kfab's sources only). */
static bool shim_recv_matches(const struct shim_rxe *recv,
				const struct shim_arrival *a, int kind)
{
	if (recv->directed && (!a->internal || a->addr != recv->pe.addr))
		return false;
	if (kind == SHIM_KIND_TAG && ((recv->pe.tag ^ a->tag) & ~recv->ignore))
		return false;
	return true;
}

static bool shim_match_msg(const struct shim_rxe *recv, const void *arg)
{
	return shim_recv_matches(recv, arg, SHIM_KIND_MSG);
}

static bool shim_match_tag(const struct shim_rxe *recv, const void *arg)
{
	return shim_recv_matches(recv, arg, SHIM_KIND_TAG);
}

/* An unexpected message @u for the posted receive @arg. */
static bool shim_match_unexp(const struct shim_rxe *u, const void *arg)
{
	const struct shim_rxe *recv = arg;
	struct shim_arrival a = {
		.addr = u->pe.addr, .tag = u->pe.tag,
		.internal = u->from && u->from->internal,
	};

	return shim_recv_matches(recv, &a, recv->kind);
}

/* The same, the other way round: the recv @recv for the message @arg. */
static bool shim_match_unexp_rev(const struct shim_rxe *recv, const void *arg)
{
	const struct shim_rxe *u = arg;
	struct shim_arrival a = {
		.addr = u->pe.addr, .tag = u->pe.tag,
		.internal = u->from && u->from->internal,
	};

	return shim_recv_matches(recv, &a, u->kind);
}

static struct shim_rxe *shim_rxe_new(void)
{
	struct shim_rxe *r = calloc(1, sizeof(*r));

	if (r) {
		r->pe.iov = r->iov;
		r->pe.desc = r->desc;
	}
	return r;
}

/* A posted receive's buffers and context into an unexpected entry. */
static void shim_rxe_fill(struct shim_rxe *u, const struct shim_rxe *recv)
{
	memcpy(u->iov, recv->iov, sizeof(u->iov));
	memcpy(u->desc, recv->desc, sizeof(u->desc));
	u->pe.iov = u->iov;
	u->pe.desc = u->desc;
	u->pe.count = recv->pe.count;
	u->pe.context = recv->pe.context;
	u->pe.flags = recv->pe.flags;
}

static int shim_owner_get(struct fid_peer_srx *srx, fi_addr_t addr,
			  size_t size, uint64_t tag, bool tagged,
			  struct fi_peer_rx_entry **entry)
{
	struct shim_peer_srx_obj *obj =
		container_of(srx, struct shim_peer_srx_obj, peer);
	struct shim_srx_owner *own = obj->own;
	int kind = tagged ? SHIM_KIND_TAG : SHIM_KIND_MSG;
	struct shim_arrival a = { .addr = addr, .tag = tag,
				  .internal = obj->internal };
	struct shim_rxe *r;

	if (!entry)
		return -FI_EINVAL;
	pthread_mutex_lock(&own->lock);
	r = shim_rxe_take(&own->recvs[kind],
			  tagged ? shim_match_tag : shim_match_msg, &a);
	pthread_mutex_unlock(&own->lock);
	if (r) {
		/* The receive's own fields, and what the message brings. */
		r->pe.srx = srx;
		r->pe.addr = addr;
		r->pe.tag = tagged ? tag : 0;
		SHIM_RXE_SIZE(&r->pe) = size;
		r->from = obj;
		*entry = &r->pe;
		return 0;
	}
	r = shim_rxe_new();
	if (!r)
		return -FI_ENOMEM;
	r->kind = kind;
	r->from = obj;
	r->pe.srx = srx;
	r->pe.addr = addr;
	r->pe.tag = tagged ? tag : 0;
	SHIM_RXE_SIZE(&r->pe) = size;
	r->pe.flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	*entry = &r->pe;
	return -FI_ENOENT;
}

SHIM_PEER_DEFINE_OWNER_GET(shim_owner_get_msg, shim_owner_get_tag,
			   shim_owner_get)

/* Hand an unexpected message to the peer it came through. */
static int shim_owner_start(struct shim_rxe *u)
{
	struct fi_ops_srx_peer *ops = u->pe.srx->peer_ops;

	return u->kind == SHIM_KIND_TAG ? ops->start_tag(&u->pe) :
					  ops->start_msg(&u->pe);
}

static int shim_owner_queue(struct fi_peer_rx_entry *e)
{
	struct shim_rxe *u = container_of(e, struct shim_rxe, pe);
	struct shim_peer_srx_obj *obj;
	struct shim_srx_owner *own;
	struct shim_rxe *recv;

	if (!e || !e->srx)
		return -FI_EINVAL;
	obj = container_of(e->srx, struct shim_peer_srx_obj, peer);
	own = obj->own;
	pthread_mutex_lock(&own->lock);
	/*
	 * A receive posted between the peer's get and this queue found no
	 * message yet: it takes this one, or it would wait for ever.  The
	 * peer is started at the next progress: calling back into it from
	 * inside its own queue call could find its locks held.
	 */
	recv = shim_rxe_take(&own->recvs[u->kind], shim_match_unexp_rev, u);
	if (recv) {
		shim_rxe_fill(u, recv);
		shim_rxe_append(&own->to_start, u);
	} else {
		shim_rxe_append(&own->unexp[u->kind], u);
	}
	pthread_mutex_unlock(&own->lock);
	free(recv);
	return 0;
}

/* Progress: start what shim_owner_queue() matched. */
static void shim_owner_start_deferred(struct shim_srx_owner *own)
{
	struct shim_rxe *u;

	for (;;) {
		pthread_mutex_lock(&own->lock);
		u = own->to_start.head;
		if (u) {
			own->to_start.head = u->next;
			if (!own->to_start.head)
				own->to_start.tail = NULL;
			u->next = NULL;
		}
		pthread_mutex_unlock(&own->lock);
		if (!u)
			return;
		if (shim_owner_start(u))
			SHIM_WARN(EP_DATA, "a peer refused to start a message\n");
	}
}

static void shim_owner_free_entry(struct fi_peer_rx_entry *e)
{
	if (e)
		free(container_of(e, struct shim_rxe, pe));
}

static const struct fi_ops_srx_owner shim_srx_owner_ops = {
	.size = sizeof(struct fi_ops_srx_owner),
	.get_msg = shim_owner_get_msg,
	.get_tag = shim_owner_get_tag,
	.queue_msg = shim_owner_queue,
	.queue_tag = shim_owner_queue,
	.free_entry = shim_owner_free_entry,
};

/* ---- the application's receives on an exported SRX (srx.c hooks) ---- */

static ssize_t shim_psrx_srx_post(struct shim_srx *srx,
				  const struct kfab_sqe *sqe)
{
	struct shim_srx_owner *own = to_shim_psrx(srx)->own;
	struct shim_rxe *recv, *u;
	uint8_t i;

	/* kfab as the peer: receives are the owner's (fi_peer(3)). */
	if (!own)
		return -FI_ENOSYS;
	if (sqe->flags & (KFAB_SQE_MULTI_RECV | KFAB_SQE_PEEK |
			  KFAB_SQE_CLAIM | KFAB_SQE_DISCARD))
		return -FI_EBADFLAGS;
	recv = shim_rxe_new();
	if (!recv)
		return -FI_ENOMEM;
	recv->kind = sqe->opcode == KFAB_OP_TRECV ? SHIM_KIND_TAG :
						    SHIM_KIND_MSG;
	recv->pe.context = (void *)(uintptr_t)sqe->context;
	recv->pe.count = sqe->iov_count;
	for (i = 0; i < sqe->iov_count && i < KFAB_IOV_MAX; i++) {
		recv->iov[i].iov_base = (void *)(uintptr_t)sqe->iov[i].base;
		recv->iov[i].iov_len = sqe->iov[i].len;
	}
	recv->pe.addr = sqe->addr;
	recv->directed = sqe->addr != FI_ADDR_UNSPEC;
	recv->pe.tag = recv->kind == SHIM_KIND_TAG ? sqe->tag : 0;
	recv->ignore = sqe->ignore;
	recv->pe.flags = FI_RECV |
			 (recv->kind == SHIM_KIND_TAG ? FI_TAGGED : FI_MSG);
	if (sqe->flags & KFAB_SQE_COMPLETION)
		recv->pe.flags |= FI_COMPLETION;

	pthread_mutex_lock(&own->lock);
	u = shim_rxe_take(&own->unexp[recv->kind], shim_match_unexp, recv);
	if (!u)
		shim_rxe_append(&own->recvs[recv->kind], recv);
	pthread_mutex_unlock(&own->lock);
	if (!u)
		return 0;
	/* A message waits: its peer moves it in (start_msg/start_tag). */
	shim_rxe_fill(u, recv);
	free(recv);
	return shim_owner_start(u);
}

static bool shim_match_context(const struct shim_rxe *recv, const void *arg)
{
	return recv->pe.context == arg;
}

static ssize_t shim_psrx_srx_cancel(struct shim_srx *srx, void *context)
{
	struct shim_srx_owner *own = to_shim_psrx(srx)->own;
	struct fi_cq_err_entry err = { 0 };
	struct shim_cq *cq = NULL;
	struct shim_rxe *recv;
	int kind;

	if (!own)
		return -FI_ENOSYS;
	pthread_mutex_lock(&own->lock);
	/* As a kernel SRX: nowhere to complete before an endpoint is enabled. */
	if (!own->cancel_ep) {
		pthread_mutex_unlock(&own->lock);
		return -FI_ENOENT;
	}
	for (kind = 0; kind < 2; kind++) {
		recv = shim_rxe_take(&own->recvs[kind], shim_match_context,
				  context);
		if (recv)
			break;
	}
	if (recv)
		cq = own->cancel_ep->rx_cq;
	pthread_mutex_unlock(&own->lock);
	if (!recv)
		return -FI_ENOENT;
	/* fi_cancel(3): an error completion, FI_ECANCELED. */
	err.op_context = context;
	err.flags = recv->pe.flags & (FI_RECV | FI_MSG | FI_TAGGED);
	err.tag = recv->pe.tag;
	err.err = FI_ECANCELED;
	err.prov_errno = FI_ECANCELED;
	free(recv);
	return cq ? shim_cq_inject_err(cq, &err) : 0;
}

static void shim_psrx_srx_ep_enabled(struct shim_srx *srx, struct shim_ep *ep)
{
	struct shim_srx_owner *own = to_shim_psrx(srx)->own;

	if (!own)
		return;
	pthread_mutex_lock(&own->lock);
	if (!own->cancel_ep && ep->rx_cq)
		own->cancel_ep = ep;
	pthread_mutex_unlock(&own->lock);
}

static void shim_psrx_srx_ep_unbound(struct shim_srx *srx, struct shim_ep *ep)
{
	struct shim_srx_owner *own = to_shim_psrx(srx)->own;

	if (!own)
		return;
	pthread_mutex_lock(&own->lock);
	if (own->cancel_ep == ep)
		own->cancel_ep = NULL;
	pthread_mutex_unlock(&own->lock);
}

/* ---- the fid_peer_srx objects ---- */

static void shim_rxe_free_list(struct shim_rxe_list *l,
			       const struct shim_peer_srx_obj *from)
{
	struct shim_rxe *r, *next, *keep = NULL, *keep_tail = NULL;

	for (r = l->head; r; r = next) {
		next = r->next;
		if (from && r->from != from) {
			r->next = NULL;
			if (keep_tail)
				keep_tail->next = r;
			else
				keep = r;
			keep_tail = r;
			continue;
		}
		free(r);
	}
	l->head = keep;
	l->tail = keep_tail;
}

/* Under own->lock: close the imported fid, unlink and free @obj. */
static int shim_peer_srx_obj_release(struct shim_peer_srx_obj *obj)
{
	struct shim_srx_owner *own = obj->own;
	struct shim_peer_srx_obj **pp;
	int ret;

	if (obj->imported) {
		ret = fi_close(obj->imported);
		if (ret)
			return ret;
		obj->imported = NULL;
	}
	/* The peer is gone, and so are the messages it queued. */
	shim_rxe_free_list(&own->unexp[SHIM_KIND_MSG], obj);
	shim_rxe_free_list(&own->unexp[SHIM_KIND_TAG], obj);
	shim_rxe_free_list(&own->to_start, obj);
	for (pp = &own->objs; *pp; pp = &(*pp)->next) {
		if (*pp == obj) {
			*pp = obj->next;
			break;
		}
	}
	free(obj);
	return 0;
}

static int shim_peer_srx_obj_close(struct fid *fid)
{
	struct shim_peer_srx_obj *obj =
		container_of(fid, struct shim_peer_srx_obj, peer.ep_fid.fid);
	struct shim_srx_owner *own = obj->own;
	int ret;

	pthread_mutex_lock(&own->lock);
	ret = shim_peer_srx_obj_release(obj);
	pthread_mutex_unlock(&own->lock);
	return ret;
}

/* fi_import_fid(): what the peer returned from fi_srx_context(), if any. */
static int shim_peer_srx_obj_import(struct fid *fid, struct fid *bfid,
				    uint64_t flags)
{
	struct shim_peer_srx_obj *obj =
		container_of(fid, struct shim_peer_srx_obj, peer.ep_fid.fid);
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (!bfid || bfid == fid)
		return -FI_EINVAL;
	pthread_mutex_lock(&obj->own->lock);
	if (obj->imported)
		ret = -FI_EBUSY;
	else
		obj->imported = bfid;
	pthread_mutex_unlock(&obj->own->lock);
	return ret;
}

static const struct fi_ops shim_peer_srx_obj_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_peer_srx_obj_close,
	.bind = shim_peer_srx_obj_import,
	.control = shim_no_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

/* A fid_peer_srx is no endpoint of kfab's: its endpoint calls do nothing. */
static ssize_t shim_peer_srx_obj_cancel(fid_t fid, void *context)
{
	(void)fid; (void)context;
	return -FI_ENOSYS;
}

static int shim_peer_srx_obj_getopt(fid_t fid, int level, int optname,
				    void *optval, size_t *optlen)
{
	(void)fid; (void)level; (void)optname; (void)optval; (void)optlen;
	return -FI_ENOPROTOOPT;
}

static int shim_peer_srx_obj_setopt(fid_t fid, int level, int optname,
				    const void *optval, size_t optlen)
{
	(void)fid; (void)level; (void)optname; (void)optval; (void)optlen;
	return -FI_ENOPROTOOPT;
}

static int shim_peer_srx_obj_ctx(struct fid_ep *sep, int index, void *attr,
				 struct fid_ep **ep, void *context)
{
	(void)sep; (void)index; (void)attr; (void)ep; (void)context;
	return -FI_ENOSYS;
}

static int shim_peer_srx_obj_tx_ctx(struct fid_ep *sep, int index,
				    struct fi_tx_attr *attr,
				    struct fid_ep **ep, void *context)
{
	return shim_peer_srx_obj_ctx(sep, index, attr, ep, context);
}

static int shim_peer_srx_obj_rx_ctx(struct fid_ep *sep, int index,
				    struct fi_rx_attr *attr,
				    struct fid_ep **ep, void *context)
{
	return shim_peer_srx_obj_ctx(sep, index, attr, ep, context);
}

static ssize_t shim_peer_srx_obj_size_left(struct fid_ep *ep)
{
	(void)ep;
	return -FI_ENOSYS;
}

static const struct fi_ops_ep shim_peer_srx_obj_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = shim_peer_srx_obj_cancel,
	.getopt = shim_peer_srx_obj_getopt,
	.setopt = shim_peer_srx_obj_setopt,
	.tx_ctx = shim_peer_srx_obj_tx_ctx,
	.rx_ctx = shim_peer_srx_obj_rx_ctx,
	.rx_size_left = shim_peer_srx_obj_size_left,
	.tx_size_left = shim_peer_srx_obj_size_left,
};

static void shim_peer_srx_obj_init(struct shim_peer_srx_obj *obj,
				   struct shim_srx_owner *own, bool internal)
{
	obj->own = own;
	obj->internal = internal;
	obj->peer.ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	obj->peer.ep_fid.fid.context = &own->srx->ep_fid;
	obj->peer.ep_fid.fid.ops = (struct fi_ops *)&shim_peer_srx_obj_fi_ops;
	obj->peer.ep_fid.ops = (struct fi_ops_ep *)&shim_peer_srx_obj_ep_ops;
	obj->peer.owner_ops = (struct fi_ops_srx_owner *)&shim_srx_owner_ops;
	obj->peer.peer_ops = &obj->peer_ops;
	obj->peer_ops.size = sizeof(obj->peer_ops);
}

/* The first export turns the SRX into one whose matching lives here. */
static int shim_srx_owner_new(struct shim_srx *srx)
{
	struct shim_srx_owner *own = calloc(1, sizeof(*own));
	struct shim_psrx *ps;

	if (!own)
		return -FI_ENOMEM;
	if (pthread_mutex_init(&own->lock, NULL)) {
		free(own);
		return -FI_ENOMEM;
	}
	own->srx = srx;
	shim_peer_srx_obj_init(&own->self, own, true);
	/* kfab's own messages reach the lists as a peer's do. */
	own->self.peer_ops = shim_psrx_peer_ops;
	ps = shim_psrx_new(srx, &own->self.peer, true);
	if (!ps) {
		pthread_mutex_destroy(&own->lock);
		free(own);
		return -FI_ENOMEM;
	}
	ps->own = own;
	shim_srx_set_hooks(srx, &shim_psrx_srx_hooks, ps);
	shim_psrx_register(ps);
	return 0;
}

int shim_srx_peer_export(struct shim_srx *srx, void *val)
{
	struct fid_peer_srx **out = val;
	struct shim_peer_srx_obj *obj;
	struct shim_srx_owner *own;
	int ret = 0;

	if (!out)
		return -FI_EINVAL;
	pthread_mutex_lock(&srx->lock);
	if (srx->peer && !to_shim_psrx(srx)->own) {
		ret = -FI_EINVAL;	/* a peer SRX of another owner */
	} else if (!srx->peer) {
		/*
		 * Receives already in the kernel, or endpoints already
		 * matched there, would bypass the lists.
		 */
		if (srx->bound ||
		    shim_ring_space(&srx->ring) != srx->ring.entries)
			ret = -FI_EOPBADSTATE;
		else
			ret = shim_srx_owner_new(srx);
	}
	pthread_mutex_unlock(&srx->lock);
	if (ret)
		return ret;
	own = to_shim_psrx(srx)->own;
	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return -FI_ENOMEM;
	shim_peer_srx_obj_init(obj, own, false);
	pthread_mutex_lock(&own->lock);
	obj->next = own->objs;
	own->objs = obj;
	pthread_mutex_unlock(&own->lock);
	*out = &obj->peer;
	return 0;
}

static int shim_psrx_srx_close(struct shim_srx *srx)
{
	struct shim_srx_owner *own = to_shim_psrx(srx)->own;
	struct shim_peer_srx_obj *obj;
	int ret = 0;

	if (!own)
		return 0;
	pthread_mutex_lock(&own->lock);
	for (obj = own->objs; obj; obj = obj->next) {
		if (!obj->imported) {
			ret = -FI_EBUSY;
			goto out;
		}
	}
	while (own->objs) {
		ret = shim_peer_srx_obj_release(own->objs);
		if (ret)
			goto out;
	}
out:
	pthread_mutex_unlock(&own->lock);
	return ret;
}

static void shim_psrx_srx_free(struct shim_srx *srx)
{
	struct shim_psrx *ps = to_shim_psrx(srx);
	struct shim_srx_owner *own = ps->own;
	int k;

	shim_psrx_free(ps);
	if (!own)
		return;
	for (k = 0; k < 2; k++) {
		shim_rxe_free_list(&own->recvs[k], NULL);
		shim_rxe_free_list(&own->unexp[k], NULL);
	}
	shim_rxe_free_list(&own->to_start, NULL);
	pthread_mutex_destroy(&own->lock);
	free(own);
}

static const struct shim_srx_hooks shim_psrx_srx_hooks = {
	.post = shim_psrx_srx_post,
	.cancel = shim_psrx_srx_cancel,
	.ep_enabled = shim_psrx_srx_ep_enabled,
	.ep_unbound = shim_psrx_srx_ep_unbound,
	.close = shim_psrx_srx_close,
	.free = shim_psrx_srx_free,
};
