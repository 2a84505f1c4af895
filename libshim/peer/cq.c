// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim/peer: peer CQs (fi_peer(3)), both roles, and the CQ hooks
 * (struct shim_cq_hooks, internal.h) through which libshim/cq.c calls in
 * here.
 *
 * kfab as the peer: the owner opens a kfab CQ with FI_PEER and a struct
 * fi_peer_cq_context.  The kernel CQ and its ring exist as for any CQ (the
 * kernel writes kfab's completions there), but nobody reads the ring but
 * the forwarder below: fi_cq_read(cq, NULL, 0), which the owner calls to
 * drive kfab's progress, rings the doorbells of the bound endpoints and
 * hands every completion to owner_ops->write() and every error to
 * owner_ops->writeerr(), unchanged: the source stays an address of kfab's
 * AV, as fi_peer(3) wants.  What the owner refuses stays where it is (in
 * the ring, or held here for an error) and goes at the next call.  Every
 * other read call answers -FI_ENOSYS.
 *
 * kfab as the owner: fi_get_val(KFAB_FID_PEER_EXPORT) on a kfab CQ makes a
 * struct fid_peer_cq for one peer.  Its write()/writeerr() queue entries in
 * the library (the kernel ring is the kernel's to write), which
 * fi_cq_read() returns after the ring's; they are taken at any time from
 * any thread (the queue has its own lock), never refused for want of room
 * (as the kernel's overflow list, the queue grows; -FI_ENOMEM only when
 * memory runs out), and wake fi_cq_sread() waiters.  A peer CQ imported
 * with fi_import_fid() is progressed by every read of kfab's CQ and closed
 * by kfab.
 *
 * Three hooks tables: a peer CQ's, an exported CQ's, and the one every
 * other CQ gets once the process has a peer SRX (srx.c), whose
 * completions come through the CQs of its endpoints.  All three let the
 * peer SRXs filter completions and make progress.
 */
#include <stdlib.h>
#include <string.h>

#include "../barrier.h"
#include "peer.h"

/* ---- what every table shares: the peer SRXs (srx.c) ---- */

static bool shim_psrx_hook_progress(struct shim_cq *cq)
{
	(void)cq;
	shim_psrx_progress_all();
	/* Peers' traffic is seen only by polling them. */
	return shim_psrx_active();
}

static int shim_psrx_hook_filter(struct shim_cq *cq, struct kfab_cq_entry *e,
				 int err, bool commit)
{
	(void)cq;
	if (!shim_psrx_active())
		return SHIM_CQ_KEEP;
	return shim_psrx_filter(e, err, commit);
}

/* A CQ without a queue of its own in the library. */
static size_t shim_cq_no_queued(struct shim_cq *cq)
{
	(void)cq;
	return 0;
}

static size_t shim_cq_no_pop(struct shim_cq *cq, struct kfab_cq_entry *out,
			     size_t max)
{
	(void)cq; (void)out; (void)max;
	return 0;
}

static bool shim_cq_no_err_queued(struct shim_cq *cq)
{
	(void)cq;
	return false;
}

static int shim_cq_no_pop_err(struct shim_cq *cq,
			      struct fi_cq_err_entry *err, void *data,
			      size_t *len)
{
	(void)cq; (void)err; (void)data; (void)len;
	return -FI_EAGAIN;
}

static int shim_cq_no_close(struct shim_cq *cq)
{
	(void)cq;
	return 0;
}

static void shim_cq_no_free(struct shim_cq *cq)
{
	(void)cq;
}

const struct shim_cq_hooks shim_psrx_cq_hooks = {
	.progress = shim_psrx_hook_progress,
	.filter = shim_psrx_hook_filter,
	.queued = shim_cq_no_queued,
	.pop = shim_cq_no_pop,
	.err_queued = shim_cq_no_err_queued,
	.pop_err = shim_cq_no_pop_err,
	.close = shim_cq_no_close,
	.free = shim_cq_no_free,
};

/* ---- kfab as the peer ---- */

/**
 * struct shim_cq_peer - a kfab CQ that another provider owns
 * @owner: the owner's fid_peer_cq, valid until this CQ is closed
 * @lock: one forwarder at a time (the ring has one consumer)
 * @err_held: @err was read from the kernel but the owner refused it
 * @err: that error; its err_data points to @err_data
 * @err_data: the error's data
 */
struct shim_cq_peer {
	struct fid_peer_cq *owner;
	pthread_mutex_t lock;
	bool err_held;
	struct fi_cq_err_entry err;
	uint8_t err_data[KFAB_CQ_ERR_DATA_MAX];
};

static const struct shim_cq_hooks shim_cq_peer_hooks;
static const struct fi_ops_cq shim_cq_peer_ops;

int shim_cq_peer_open(struct shim_cq *cq, void *context,
		      const struct fi_ops_cq **ops)
{
	struct fi_peer_cq_context *ctx = context;
	struct shim_cq_peer *p;

	/* fi_peer(3): an FI_PEER open without the owner's object is invalid. */
	if (!ctx || ctx->size < sizeof(*ctx) || !ctx->cq ||
	    !ctx->cq->owner_ops || !ctx->cq->owner_ops->write ||
	    !ctx->cq->owner_ops->writeerr) {
		SHIM_INFO(CQ, "FI_PEER without a usable fi_peer_cq_context\n");
		return -FI_EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	if (pthread_mutex_init(&p->lock, NULL)) {
		free(p);
		return -FI_ENOMEM;
	}
	/* The context itself is temporary: keep only the object. */
	p->owner = ctx->cq;
	/* A CQ being opened has no hooks yet: these are set. */
	(void)shim_cq_set_hooks(cq, &shim_cq_peer_hooks, p);
	*ops = &shim_cq_peer_ops;
	return 0;
}

static void shim_cq_peer_free(struct shim_cq *cq)
{
	struct shim_cq_peer *p = shim_cq_peer(cq, &shim_cq_peer_hooks);

	pthread_mutex_destroy(&p->lock);
	free(p);
}

static int shim_cq_peer_sink(void *arg, const struct kfab_cq_entry *e,
			     fi_addr_t src)
{
	struct fid_peer_cq *owner = arg;
	ssize_t ret;

	ret = owner->owner_ops->write(owner, (void *)(uintptr_t)e->op_context,
				      e->flags, e->len,
				      (void *)(uintptr_t)e->buf, e->data,
				      e->tag, src);
	return ret < 0 ? (int)ret : 0;
}

/* Errors first, each exactly once; what the owner refuses is kept. */
static void shim_cq_peer_errors(struct shim_cq *cq, struct shim_cq_peer *p)
{
	ssize_t ret;

	for (;;) {
		if (!p->err_held) {
			if (!shim_cq_has_err(cq))
				return;
			ret = shim_cq_take_err(cq, &p->err);
			if (ret != 1)
				return;
			if (p->err.err_data_size > sizeof(p->err_data))
				p->err.err_data_size = sizeof(p->err_data);
			if (p->err.err_data && p->err.err_data_size)
				memcpy(p->err_data, p->err.err_data,
				       p->err.err_data_size);
			p->err.err_data = p->err.err_data_size ? p->err_data : NULL;
			p->err_held = true;
		}
		ret = p->owner->owner_ops->writeerr(p->owner, &p->err);
		if (ret < 0) {
			SHIM_DBG(CQ, "owner refused an error completion: %zd\n",
				 ret);
			return;
		}
		p->err_held = false;
	}
}

/*
 * With a peer SRX, a message takes two rounds: the first sees the peek's
 * completion, the second asks the owner and claims the message (its
 * completion is in the ring at once): both in one call.
 */
static void shim_cq_peer_progress(struct shim_cq *cq)
{
	struct shim_cq_peer *p = shim_cq_peer(cq, &shim_cq_peer_hooks);
	int ret, round;

	for (round = 0; round < 2; round++) {
		shim_cq_progress_eps(cq);
		shim_psrx_progress_all();
		pthread_mutex_lock(&p->lock);
		shim_cq_peer_errors(cq, p);
		ret = shim_cq_forward(cq, shim_cq_peer_sink, p->owner);
		if (ret)
			SHIM_DBG(CQ, "owner refused a completion: %d\n", ret);
		pthread_mutex_unlock(&p->lock);
		if (!shim_psrx_active())
			break;
	}
}

/* fi_cq_read(cq, NULL, 0) is the owner driving kfab's progress. */
static ssize_t shim_cq_peer_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	(void)buf;
	if (count)
		return -FI_ENOSYS;
	shim_cq_peer_progress(shim_cq_from_cq_fid(cq_fid));
	return 0;
}

static ssize_t shim_cq_peer_readfrom(struct fid_cq *cq_fid, void *buf,
				     size_t count, fi_addr_t *src_addr)
{
	(void)src_addr;
	return shim_cq_peer_read(cq_fid, buf, count);
}

static ssize_t shim_cq_peer_readerr(struct fid_cq *cq_fid,
				    struct fi_cq_err_entry *buf, uint64_t flags)
{
	(void)cq_fid; (void)buf; (void)flags;
	return -FI_ENOSYS;
}

static ssize_t shim_cq_peer_sread(struct fid_cq *cq_fid, void *buf,
				  size_t count, const void *cond, int timeout)
{
	(void)cq_fid; (void)buf; (void)count; (void)cond; (void)timeout;
	return -FI_ENOSYS;
}

static ssize_t shim_cq_peer_sreadfrom(struct fid_cq *cq_fid, void *buf,
				      size_t count, fi_addr_t *src_addr,
				      const void *cond, int timeout)
{
	(void)cq_fid; (void)buf; (void)count; (void)src_addr; (void)cond;
	(void)timeout;
	return -FI_ENOSYS;
}

static int shim_cq_peer_signal(struct fid_cq *cq_fid)
{
	(void)cq_fid;
	return -FI_ENOSYS;
}

static const char *shim_cq_peer_strerror(struct fid_cq *cq_fid,
					 int prov_errno, const void *err_data,
					 char *buf, size_t len)
{
	/* The owner may ask kfab what kfab's prov_errno means: an errno. */
	const char *str = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	(void)cq_fid; (void)err_data;
	if (buf && len) {
		strncpy(buf, str, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return str;
}

static const struct fi_ops_cq shim_cq_peer_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = shim_cq_peer_read,
	.readfrom = shim_cq_peer_readfrom,
	.readerr = shim_cq_peer_readerr,
	.sread = shim_cq_peer_sread,
	.sreadfrom = shim_cq_peer_sreadfrom,
	.signal = shim_cq_peer_signal,
	.strerror = shim_cq_peer_strerror,
};

/*
 * A peer CQ's reads are its own ops (above); the core calls the hooks
 * only when the forwarder reads the ring and the errors.
 */
static const struct shim_cq_hooks shim_cq_peer_hooks = {
	.progress = shim_psrx_hook_progress,
	.filter = shim_psrx_hook_filter,
	.queued = shim_cq_no_queued,
	.pop = shim_cq_no_pop,
	.err_queued = shim_cq_no_err_queued,
	.pop_err = shim_cq_no_pop_err,
	.close = shim_cq_no_close,
	.free = shim_cq_peer_free,
};

/* ---- kfab as the owner ---- */

struct shim_cq_owner;

/**
 * struct shim_peer_cq_obj - one fid_peer_cq kfab handed out
 * @peer: what the peer provider sees; the first member
 * @owner: the CQ's owner state
 * @imported: the peer's CQ (fi_import_fid), or NULL
 * @drain: @imported is a plain CQ to read (KFAB_IMPORT_DRAIN), not a peer
 *	CQ to progress
 * @next: the owner's list
 */
struct shim_peer_cq_obj {
	struct fid_peer_cq peer;
	struct shim_cq_owner *owner;
	struct fid_cq *imported;
	bool drain;
	struct shim_peer_cq_obj *next;
};

struct shim_cq_err_node {
	struct shim_cq_err_node *next;
	struct fi_cq_err_entry err;
	void *data;
	size_t data_len;
};

/**
 * struct shim_cq_owner - a kfab CQ exported to peer providers
 * @cq: the CQ
 * @lock: protects the queues (@ring..., @err_head...)
 * @ring: completions peers wrote, a circular array of @cap entries
 * @first: index of the oldest in @ring; @count entries
 * @err_head, @err_tail: errors peers wrote, oldest first; @err_count
 * @objs_lock: protects @objs, and is held while imported CQs progress
 * @objs: the fid_peer_cq objects handed out
 * @nimported: how many of them have an imported peer CQ (read unlocked)
 */
struct shim_cq_owner {
	struct shim_cq *cq;
	pthread_mutex_t lock;
	struct kfab_cq_entry *ring;
	size_t cap, first, count;
	struct shim_cq_err_node *err_head, *err_tail;
	size_t err_count;
	pthread_mutex_t objs_lock;
	struct shim_peer_cq_obj *objs;
	unsigned int nimported;
};

static int shim_cq_owner_push(struct shim_cq_owner *o,
			      const struct kfab_cq_entry *e)
{
	size_t i;

	pthread_mutex_lock(&o->lock);
	if (o->count == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		struct kfab_cq_entry *ring = malloc(cap * sizeof(*ring));

		if (!ring) {
			pthread_mutex_unlock(&o->lock);
			return -FI_ENOMEM;
		}
		for (i = 0; i < o->count; i++)
			ring[i] = o->ring[(o->first + i) % o->cap];
		free(o->ring);
		o->ring = ring;
		o->cap = cap;
		o->first = 0;
	}
	o->ring[(o->first + o->count) % o->cap] = *e;
	o->count++;
	pthread_mutex_unlock(&o->lock);
	shim_cq_wake(o->cq);
	return 0;
}

static ssize_t shim_cq_owner_write(struct fid_peer_cq *peer_cq, void *context,
				   uint64_t flags, size_t len, void *buf,
				   uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct shim_peer_cq_obj *obj =
		container_of(peer_cq, struct shim_peer_cq_obj, peer);
	struct kfab_cq_entry e = {
		.op_context = (uintptr_t)context,
		.flags = flags,
		.len = len,
		.buf = (uintptr_t)buf,
		.data = data,
		.tag = tag,
		.src_addr = KFAB_CQ_ADDR_NOTAVAIL,
	};

	/* @src is an address of the peer's AV: nothing kfab can translate. */
	(void)src;
	return shim_cq_owner_push(obj->owner, &e);
}

static ssize_t shim_cq_owner_writeerr(struct fid_peer_cq *peer_cq,
				      const struct fi_cq_err_entry *err)
{
	struct shim_peer_cq_obj *obj =
		container_of(peer_cq, struct shim_peer_cq_obj, peer);
	struct shim_cq_owner *o = obj->owner;
	struct shim_cq_err_node *node;

	if (!err)
		return -FI_EINVAL;
	node = calloc(1, sizeof(*node));
	if (!node)
		return -FI_ENOMEM;
	node->err = *err;
	node->err.err_data = NULL;
	node->err.err_data_size = 0;
	if (err->err_data && err->err_data_size) {
		node->data = malloc(err->err_data_size);
		if (!node->data) {
			free(node);
			return -FI_ENOMEM;
		}
		memcpy(node->data, err->err_data, err->err_data_size);
		node->data_len = err->err_data_size;
	}
	pthread_mutex_lock(&o->lock);
	if (o->err_tail)
		o->err_tail->next = node;
	else
		o->err_head = node;
	o->err_tail = node;
	shim_write_once(&o->err_count, o->err_count + 1);
	pthread_mutex_unlock(&o->lock);
	shim_cq_wake(o->cq);
	return 0;
}

static const struct fi_ops_cq_owner shim_cq_owner_ops = {
	.size = sizeof(struct fi_ops_cq_owner),
	.write = shim_cq_owner_write,
	.writeerr = shim_cq_owner_writeerr,
};

static const struct shim_cq_hooks shim_cq_owner_hooks;

static struct shim_cq_owner *to_shim_cq_owner(struct shim_cq *cq)
{
	return shim_cq_peer(cq, &shim_cq_owner_hooks);
}

static size_t shim_cq_owner_queued(struct shim_cq *cq)
{
	struct shim_cq_owner *o = to_shim_cq_owner(cq);
	size_t n;

	pthread_mutex_lock(&o->lock);
	n = o->count;
	pthread_mutex_unlock(&o->lock);
	return n;
}

static size_t shim_cq_owner_pop(struct shim_cq *cq, struct kfab_cq_entry *out,
				size_t max)
{
	struct shim_cq_owner *o = to_shim_cq_owner(cq);
	size_t n;

	pthread_mutex_lock(&o->lock);
	for (n = 0; n < max && o->count; n++) {
		out[n] = o->ring[o->first];
		o->first = (o->first + 1) % o->cap;
		o->count--;
	}
	pthread_mutex_unlock(&o->lock);
	return n;
}

static bool shim_cq_owner_err_queued(struct shim_cq *cq)
{
	struct shim_cq_owner *o = to_shim_cq_owner(cq);

	return shim_read_once(&o->err_count) != 0;
}

static int shim_cq_owner_pop_err(struct shim_cq *cq,
				 struct fi_cq_err_entry *err, void *data,
				 size_t *data_len)
{
	struct shim_cq_owner *o = to_shim_cq_owner(cq);
	struct shim_cq_err_node *node;
	size_t len;

	pthread_mutex_lock(&o->lock);
	node = o->err_head;
	if (node) {
		o->err_head = node->next;
		if (!o->err_head)
			o->err_tail = NULL;
		shim_write_once(&o->err_count, o->err_count - 1);
	}
	pthread_mutex_unlock(&o->lock);
	if (!node)
		return -FI_EAGAIN;
	*err = node->err;
	len = node->data_len < *data_len ? node->data_len : *data_len;
	if (len && data)
		memcpy(data, node->data, len);
	*data_len = data ? len : 0;
	free(node->data);
	free(node);
	return 0;
}

/*
 * A plain CQ of the peer (KFAB_IMPORT_DRAIN): what it holds moves into
 * ours, errors included, through the same queue a peer CQ writes into.
 */
static void shim_peer_cq_drain(struct shim_peer_cq_obj *obj)
{
	struct fi_cq_tagged_entry e[16];
	struct fi_cq_err_entry err;
	ssize_t n, i;

	for (;;) {
		n = fi_cq_read(obj->imported, e, 16);
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(obj->imported, &err, 0) != 1)
				return;
			if (shim_cq_owner_writeerr(&obj->peer, &err))
				return;
			continue;
		}
		if (n <= 0)
			return;
		for (i = 0; i < n; i++)
			if (shim_cq_owner_write(&obj->peer, e[i].op_context,
						e[i].flags, e[i].len, e[i].buf,
						e[i].data, e[i].tag,
						FI_ADDR_NOTAVAIL))
				return;	/* out of memory: the rest is lost */
		if (n < 16)
			return;
	}
}

/* Imported peer CQs are progressed by every read of kfab's CQ. */
static bool shim_cq_owner_progress(struct shim_cq *cq)
{
	struct shim_cq_owner *o = to_shim_cq_owner(cq);
	bool pending = shim_psrx_hook_progress(cq);
	struct shim_peer_cq_obj *obj;

	if (!shim_read_once(&o->nimported))
		return pending;
	/*
	 * Somebody else progressing the peers (or a peer calling back into
	 * a read of this CQ) is as good as doing it: never wait, never
	 * recurse.
	 */
	if (pthread_mutex_trylock(&o->objs_lock))
		return true;
	for (obj = o->objs; obj; obj = obj->next) {
		if (obj->drain)
			shim_peer_cq_drain(obj);
		else if (obj->imported)
			(void)fi_cq_read(obj->imported, NULL, 0);
	}
	pthread_mutex_unlock(&o->objs_lock);
	return true;
}

/* Unlinks @obj (under objs_lock) after closing its imported CQ. */
static int shim_peer_cq_obj_release(struct shim_peer_cq_obj *obj)
{
	struct shim_cq_owner *o = obj->owner;
	struct shim_peer_cq_obj **pp;
	int ret;

	if (obj->imported) {
		ret = fi_close(&obj->imported->fid);
		if (ret) {
			SHIM_INFO(CQ, "closing an imported peer CQ: %s\n",
				  fi_strerror(-ret));
			return ret;
		}
		obj->imported = NULL;
		obj->drain = false;
		shim_write_once(&o->nimported, o->nimported - 1);
	}
	for (pp = &o->objs; *pp; pp = &(*pp)->next) {
		if (*pp == obj) {
			*pp = obj->next;
			break;
		}
	}
	free(obj);
	return 0;
}

static int shim_peer_cq_obj_close(struct fid *fid)
{
	struct shim_peer_cq_obj *obj =
		container_of(fid, struct shim_peer_cq_obj, peer.fid);
	struct shim_cq_owner *o = obj->owner;
	int ret;

	pthread_mutex_lock(&o->objs_lock);
	ret = shim_peer_cq_obj_release(obj);
	pthread_mutex_unlock(&o->objs_lock);
	return ret;
}

/* fi_import_fid(): the peer's CQ, opened with this object. */
static int shim_peer_cq_obj_import(struct fid *fid, struct fid *bfid,
				   uint64_t flags)
{
	struct shim_peer_cq_obj *obj =
		container_of(fid, struct shim_peer_cq_obj, peer.fid);
	struct shim_cq_owner *o = obj->owner;
	int ret = 0;

	if (flags & ~KFAB_IMPORT_DRAIN)
		return -FI_EBADFLAGS;
	/* The CQ itself would write into itself: a loop, refused. */
	if (!bfid || bfid->fclass != FI_CLASS_CQ ||
	    shim_cq_from_fid(bfid) == o->cq)
		return -FI_EINVAL;
	pthread_mutex_lock(&o->objs_lock);
	if (obj->imported) {
		ret = -FI_EBUSY;
	} else {
		obj->imported = container_of(bfid, struct fid_cq, fid);
		obj->drain = flags & KFAB_IMPORT_DRAIN;
		shim_write_once(&o->nimported, o->nimported + 1);
	}
	pthread_mutex_unlock(&o->objs_lock);
	return ret;
}

static const struct fi_ops shim_peer_cq_obj_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_peer_cq_obj_close,
	.bind = shim_peer_cq_obj_import,
	.control = shim_no_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

static struct shim_cq_owner *shim_cq_owner_new(struct shim_cq *cq)
{
	struct shim_cq_owner *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	if (pthread_mutex_init(&o->lock, NULL)) {
		free(o);
		return NULL;
	}
	if (pthread_mutex_init(&o->objs_lock, NULL)) {
		pthread_mutex_destroy(&o->lock);
		free(o);
		return NULL;
	}
	o->cq = cq;
	return o;
}

static void shim_cq_owner_free(struct shim_cq_owner *o)
{
	struct shim_cq_err_node *node, *next;

	for (node = o->err_head; node; node = next) {
		next = node->next;
		free(node->data);
		free(node);
	}
	free(o->ring);
	pthread_mutex_destroy(&o->objs_lock);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

/*
 * The owner state of @cq, made at the first need: 0, -FI_ENOMEM, or
 * -FI_EINVAL for a CQ that is itself another provider's peer.
 */
static int shim_cq_owner_of(struct shim_cq *cq, struct shim_cq_owner **out)
{
	struct shim_cq_owner *o, *mine;

	o = to_shim_cq_owner(cq);
	if (!o) {
		mine = shim_cq_owner_new(cq);
		if (!mine)
			return -FI_ENOMEM;
		o = shim_cq_set_hooks(cq, &shim_cq_owner_hooks, mine);
		if (o != mine)
			shim_cq_owner_free(mine);
		if (!o)
			return -FI_EINVAL;
	}
	*out = o;
	return 0;
}

/* The queue a peer writes into takes kfab's own made-up completions too. */
int shim_cq_inject_err(struct shim_cq *cq, const struct fi_cq_err_entry *err)
{
	struct shim_peer_cq_obj tmp = { 0 };
	int ret;

	ret = shim_cq_owner_of(cq, &tmp.owner);
	if (ret)
		return ret;
	return (int)shim_cq_owner_writeerr(&tmp.peer, err);
}

/* fi_get_val(KFAB_FID_PEER_EXPORT) on a CQ (cq.c). */
int shim_cq_peer_export(struct shim_cq *cq, void *val)
{
	struct fid_peer_cq **out = val;
	struct shim_cq_owner *o;
	struct shim_peer_cq_obj *obj;
	int ret;

	if (!out)
		return -FI_EINVAL;
	ret = shim_cq_owner_of(cq, &o);
	if (ret)
		return ret;
	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return -FI_ENOMEM;
	obj->owner = o;
	obj->peer.fid.fclass = FI_CLASS_PEER_CQ;
	obj->peer.fid.context = cq;
	obj->peer.fid.ops = (struct fi_ops *)&shim_peer_cq_obj_fi_ops;
	obj->peer.owner_ops = (struct fi_ops_cq_owner *)&shim_cq_owner_ops;
	pthread_mutex_lock(&o->objs_lock);
	obj->next = o->objs;
	o->objs = obj;
	pthread_mutex_unlock(&o->objs_lock);
	*out = &obj->peer;
	return 0;
}

/*
 * Before fi_close() of the CQ: -FI_EBUSY while a fid_peer_cq without an
 * imported peer CQ exists; otherwise closes the imported CQs (their
 * error, if one fails).  The state itself goes with the CQ.
 */
static int shim_cq_owner_close(struct shim_cq *cq)
{
	struct shim_cq_owner *o = to_shim_cq_owner(cq);
	struct shim_peer_cq_obj *obj;
	int ret = 0;

	pthread_mutex_lock(&o->objs_lock);
	/* A peer may still write through an object it was never bound to. */
	for (obj = o->objs; obj; obj = obj->next) {
		if (!obj->imported) {
			ret = -FI_EBUSY;
			goto out;
		}
	}
	while (o->objs) {
		ret = shim_peer_cq_obj_release(o->objs);
		if (ret)
			goto out;
	}
out:
	pthread_mutex_unlock(&o->objs_lock);
	return ret;
}

static void shim_cq_owner_release(struct shim_cq *cq)
{
	shim_cq_owner_free(to_shim_cq_owner(cq));
}

static const struct shim_cq_hooks shim_cq_owner_hooks = {
	.progress = shim_cq_owner_progress,
	.filter = shim_psrx_hook_filter,
	.queued = shim_cq_owner_queued,
	.pop = shim_cq_owner_pop,
	.err_queued = shim_cq_owner_err_queued,
	.pop_err = shim_cq_owner_pop_err,
	.close = shim_cq_owner_close,
	.free = shim_cq_owner_release,
};
