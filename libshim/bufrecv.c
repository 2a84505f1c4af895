// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Buffered receives (FI_BUFFERED_RECV, fi_msg(3) "Buffered Receives") of
 * a receive context, an endpoint's own or a shared receive context's: the
 * kernel's region of slots (KFAB_IOC_RX_BUFFERED, Documentation/ep.rst
 * "Buffered receives"), mapped read-only here, and the struct
 * fi_recv_context the man page hands the application for each buffered
 * message.
 *
 * The kernel names a buffered message by a token and its slot's offset;
 * the CQ reader (cq.c) turns its completion into what fi_msg(3) wants:
 * op_context a struct fi_recv_context of the slot (ep the endpoint or the
 * SRX that owns the region, context NULL), buf the slot's address in our
 * mapping, len the message's length, FI_MORE when it is longer than the
 * slot.  FI_CLAIM or FI_DISCARD with that context posts
 * KFAB_SQE_BUFFERED with the token; the claim's completion carries the
 * fi_recv_context's context, which the application may have changed.
 * Which region a completion is of: the kernel reports the region's
 * cookie, which is this struct's address, looked up among the live ones
 * (a notice read after its region went names nothing and is dropped).
 *
 * An SRX's region is made when the first endpoint bound to it is
 * enabled, with the SRX's FI_OPT_BUFFERED_LIMIT if the application set
 * one there, else that endpoint's; every endpoint of the SRX must then
 * have FI_BUFFERED_RECV, and none may when the first had not (the kernel
 * buffers for the whole context).  Its notices go to the CQ of the
 * endpoint a message was sent to; claims and discards go to the SRX's
 * ring, posted on the SRX or on any of its endpoints.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

/**
 * struct shim_bufrecv_slot - the library's side of one slot
 * @rc: what the application gets as op_context, and passes back
 * @token: the kernel's name of the slot's message, 0 when none
 */
struct shim_bufrecv_slot {
	struct fi_recv_context rc;
	uint64_t token;
};

/**
 * struct shim_bufrecv - a receive context's region
 * @owner: the endpoint or SRX whose region it is (fi_recv_context.ep)
 * @map: the region, read-only
 * @map_len: bytes mapped
 * @limit: bytes of a message a slot holds (FI_OPT_BUFFERED_LIMIT)
 * @slots: how many
 * @stride: bytes from one slot to the next
 * @slot: one per slot
 * @next: on shim_bufrecv_live, under shim_bufrecv_lock
 */
struct shim_bufrecv {
	struct fid_ep *owner;
	const uint8_t *map;
	size_t map_len;
	size_t limit;
	uint32_t slots;
	uint32_t stride;
	struct shim_bufrecv_slot *slot;
	struct shim_bufrecv *next;
};

/* The regions mapped now: a completion's cookie is checked against them. */
static pthread_mutex_t shim_bufrecv_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_bufrecv *shim_bufrecv_live;

static void shim_bufrecv_unlist(struct shim_bufrecv *br)
{
	struct shim_bufrecv **p;

	pthread_mutex_lock(&shim_bufrecv_lock);
	for (p = &shim_bufrecv_live; *p; p = &(*p)->next)
		if (*p == br) {
			*p = br->next;
			break;
		}
	pthread_mutex_unlock(&shim_bufrecv_lock);
}

/**
 * shim_bufrecv_slots() - how many slots of @limit bytes a region buffering
 *	at most @total bytes (rx_attr->total_buffered_recv) has
 * @limit: FI_OPT_BUFFERED_LIMIT, 1 to KFAB_BUFRECV_LIMIT_MAX
 * @total: the bound, 0 for the default (SHIM_BUFRECV_TOTAL_DEFAULT)
 *
 * @total / @limit, within what KFAB_IOC_RX_BUFFERED takes: at most
 * KFAB_BUFRECV_SLOTS_MAX, and KFAB_BUFRECV_REGION_MAX bytes of the
 * kernel's stride (the limit rounded up to 64 bytes); at least one.
 */
uint32_t shim_bufrecv_slots(size_t limit, size_t total)
{
	size_t stride = (limit + 63) & ~(size_t)63;
	size_t n;

	if (!limit)
		return 1;
	n = (total ? total : SHIM_BUFRECV_TOTAL_DEFAULT) / limit;
	if (n > KFAB_BUFRECV_REGION_MAX / stride)
		n = KFAB_BUFRECV_REGION_MAX / stride;
	if (n > KFAB_BUFRECV_SLOTS_MAX)
		n = KFAB_BUFRECV_SLOTS_MAX;
	return n ? (uint32_t)n : 1;
}

/*
 * The default FI_OPT_BUFFERED_LIMIT of a region bounded by @total
 * (0: the default total): KFAB_BUFRECV_LIMIT_DEFAULT, or @total when less.
 */
size_t shim_bufrecv_default_limit(size_t total)
{
	if (total && total < KFAB_BUFRECV_LIMIT_DEFAULT)
		return total;
	return KFAB_BUFRECV_LIMIT_DEFAULT;
}

/*
 * rx_attr->total_buffered_recv answered for hints asking @want (0: no
 * wish): what a region of the default limit really buffers, @want
 * rounded down to whole slots (fi_endpoint(3): the provider "may adjust"
 * it).  @want is at most SHIM_BUFRECV_TOTAL_MAX (shim_info_check()).
 */
size_t shim_bufrecv_total(size_t want)
{
	size_t limit;

	if (!want)
		want = SHIM_BUFRECV_TOTAL_DEFAULT;
	limit = shim_bufrecv_default_limit(want);
	return (size_t)shim_bufrecv_slots(limit, want) * limit;
}

/*
 * The kernel object @obj_id (an endpoint not enabled yet, or an SRX none
 * of whose endpoints is) gets a region of @limit-byte slots, as many as
 * @total bytes allow (shim_bufrecv_slots()): 0 and *@out,
 * or a negative FI_E* code.
 */
static int shim_bufrecv_open(int fd, uint32_t obj_id, size_t limit,
			     size_t total, struct fid_ep *owner,
			     struct shim_bufrecv **out)
{
	struct kfab_rx_buffered cmd = { .size = sizeof(cmd) };
	long page = sysconf(_SC_PAGESIZE);
	struct shim_bufrecv *br;
	void *map;
	int ret;

	br = calloc(1, sizeof(*br));
	if (!br)
		return -FI_ENOMEM;
	cmd.obj_id = obj_id;
	cmd.limit = (uint32_t)limit;
	cmd.slots = shim_bufrecv_slots(limit, total);
	cmd.cookie = (uintptr_t)br;
	ret = shim_dev_rx_buffered(fd, &cmd);
	if (ret)
		goto err_free;
	br->limit = cmd.out_limit;
	br->slots = cmd.out_slots;
	br->stride = cmd.out_stride;
	br->map_len = ((size_t)br->slots * br->stride + page - 1) &
		      ~((size_t)page - 1);
	ret = shim_dev_mmap(fd, cmd.out_region, br->map_len, false, &map);
	if (ret)
		goto err_free;
	br->map = map;
	br->slot = calloc(br->slots, sizeof(*br->slot));
	if (!br->slot) {
		munmap(map, br->map_len);
		ret = -FI_ENOMEM;
		goto err_free;
	}
	br->owner = owner;
	pthread_mutex_lock(&shim_bufrecv_lock);
	br->next = shim_bufrecv_live;
	shim_bufrecv_live = br;
	pthread_mutex_unlock(&shim_bufrecv_lock);
	*out = br;
	return 0;

err_free:
	SHIM_WARN(EP_CTRL, "object %u: KFAB_IOC_RX_BUFFERED: %s\n", obj_id,
		  fi_strerror(-ret));
	free(br);
	return ret;
}

void shim_bufrecv_close(struct shim_bufrecv *br)
{
	if (!br)
		return;
	shim_bufrecv_unlist(br);
	munmap((void *)br->map, br->map_len);
	free(br->slot);
	free(br);
}

size_t shim_bufrecv_limit(const struct shim_bufrecv *br)
{
	return br->limit;
}

/*
 * Before the kernel's enable of @ep (its lock held): its own region, sized
 * by its FI_OPT_BUFFERED_LIMIT, or its SRX's (srx.c decides).
 */
int shim_bufrecv_setup(struct shim_ep *ep)
{
	if (ep->srx)
		return shim_srx_bufrecv_join(ep->srx, ep);
	if (!ep->buffered || ep->bufrecv)
		return 0;
	return shim_bufrecv_open(ep->fd, ep->id, ep->buffered_limit,
				 ep->buffered_total, &ep->ep_fid,
				 &ep->bufrecv);
}

/* The same for an SRX (its lock held), before any endpoint of it is enabled. */
int shim_bufrecv_setup_srx(struct shim_srx *srx, size_t limit, size_t total,
			   struct shim_bufrecv **out)
{
	return shim_bufrecv_open(srx->fd, srx->id, limit, total, &srx->ep_fid,
				 out);
}

void shim_bufrecv_free(struct shim_ep *ep)
{
	shim_bufrecv_close(ep->bufrecv);
	ep->bufrecv = NULL;
}

/* Whether @br is a region mapped now (shim_bufrecv_lock held). */
static bool shim_bufrecv_is_live(const struct shim_bufrecv *br)
{
	const struct shim_bufrecv *p;

	for (p = shim_bufrecv_live; p; p = p->next)
		if (p == br)
			return true;
	return false;
}

/*
 * A completion of the CQ ring: a buffered message's notice becomes what
 * fi_msg(3) describes.  Others pass unchanged.  Return: false for a
 * notice to drop, whose region is gone with its endpoint or SRX (the
 * kernel dropped the message then too).
 */
bool shim_bufrecv_entry(struct kfab_cq_entry *e)
{
	struct shim_bufrecv *br = (struct shim_bufrecv *)(uintptr_t)e->cookie;
	struct shim_bufrecv_slot *s;
	uint64_t i;

	if (!(e->flags & KFAB_COMP_BUFFERED))
		return true;
	pthread_mutex_lock(&shim_bufrecv_lock);
	if (!br || !shim_bufrecv_is_live(br)) {
		pthread_mutex_unlock(&shim_bufrecv_lock);
		return false;
	}
	e->flags &= ~KFAB_COMP_BUFFERED;
	i = e->buf / br->stride;
	if (i < br->slots) {	/* the kernel wrote it: cannot fail */
		s = &br->slot[i];
		s->token = e->op_context;
		s->rc.ep = br->owner;
		s->rc.context = NULL;
		e->op_context = (uintptr_t)&s->rc;
		e->buf = (uintptr_t)(br->map + e->buf);
	}
	e->cookie = 0;
	pthread_mutex_unlock(&shim_bufrecv_lock);
	return true;
}

/*
 * FI_CLAIM or FI_DISCARD (not FI_PEEK) of a buffered message of @br (NULL:
 * the receive context has no region yet): @context must be one of its
 * struct fi_recv_context (-FI_EINVAL otherwise).  Fills in the request;
 * *@buffers: whether it takes the buffers (a claim).
 */
ssize_t shim_bufrecv_claim(struct shim_bufrecv *br, struct kfab_sqe *sqe,
			   const void *context, uint64_t flags, bool *buffers)
{
	const struct shim_bufrecv_slot *s = context;
	uintptr_t off;

	if ((flags & FI_PEEK) || !(flags & (FI_CLAIM | FI_DISCARD)))
		return -FI_EBADFLAGS;
	if (!br || !context)
		return -FI_EINVAL;
	off = (uintptr_t)s - (uintptr_t)br->slot;
	if ((uintptr_t)s < (uintptr_t)br->slot ||
	    off >= (uintptr_t)br->slots * sizeof(*s) || off % sizeof(*s))
		return -FI_EINVAL;
	sqe->flags |= KFAB_SQE_CLAIM | KFAB_SQE_BUFFERED;
	if (flags & FI_DISCARD)
		sqe->flags |= KFAB_SQE_DISCARD;
	sqe->data = s->token;
	sqe->context = (uintptr_t)s->rc.context;
	*buffers = !(flags & FI_DISCARD);
	return 0;
}
