// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Buffered receives (FI_BUFFERED_RECV, fi_msg(3) "Buffered Receives") of
 * an endpoint: the kernel's region of slots (KFAB_IOC_RX_BUFFERED,
 * Documentation/ep.rst "Buffered receives"), mapped read-only here, and
 * the struct fi_recv_context the man page hands the application for each
 * buffered message.
 *
 * The kernel names a buffered message by a token and its slot's offset;
 * the CQ reader (cq.c) turns its completion into what fi_msg(3) wants:
 * op_context a struct fi_recv_context of the slot (ep, context NULL), buf
 * the slot's address in our mapping, len the message's length, FI_MORE
 * when it is longer than the slot.  FI_CLAIM or FI_DISCARD with that
 * context posts KFAB_SQE_BUFFERED with the token; the claim's completion
 * carries the fi_recv_context's context, which the application may have
 * changed.  Which endpoint a completion is of: the kernel reports the
 * region's cookie, which is this struct's address.
 *
 * Endpoints only: an SRX has no region here (kfab_srx has none to give),
 * so an endpoint bound to an SRX with FI_BUFFERED_RECV is refused at
 * fi_enable() (-FI_EOPNOTSUPP).
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
 * struct shim_bufrecv - an endpoint's region
 * @ep: the endpoint
 * @map: the region, read-only
 * @map_len: bytes mapped
 * @slots: how many
 * @stride: bytes from one slot to the next
 * @slot: one per slot
 */
struct shim_bufrecv {
	struct shim_ep *ep;
	const uint8_t *map;
	size_t map_len;
	uint32_t slots;
	uint32_t stride;
	struct shim_bufrecv_slot *slot;
};

/* Before the kernel's enable: the region, sized by FI_OPT_BUFFERED_LIMIT. */
int shim_bufrecv_setup(struct shim_ep *ep)
{
	struct kfab_rx_buffered cmd = { .size = sizeof(cmd) };
	long page = sysconf(_SC_PAGESIZE);
	struct shim_bufrecv *br;
	void *map;
	int ret;

	if (ep->srx)
		return -FI_EOPNOTSUPP;
	br = calloc(1, sizeof(*br));
	if (!br)
		return -FI_ENOMEM;
	cmd.obj_id = ep->id;
	cmd.limit = (uint32_t)ep->buffered_limit;
	cmd.cookie = (uintptr_t)br;
	ret = shim_dev_rx_buffered(ep->fd, &cmd);
	if (ret)
		goto err_free;
	br->slots = cmd.out_slots;
	br->stride = cmd.out_stride;
	br->map_len = ((size_t)br->slots * br->stride + page - 1) &
		      ~((size_t)page - 1);
	ret = shim_dev_mmap(ep->fd, cmd.out_region, br->map_len, false, &map);
	if (ret)
		goto err_free;
	br->map = map;
	br->slot = calloc(br->slots, sizeof(*br->slot));
	if (!br->slot) {
		munmap(map, br->map_len);
		ret = -FI_ENOMEM;
		goto err_free;
	}
	br->ep = ep;
	ep->bufrecv = br;
	return 0;

err_free:
	SHIM_WARN(EP_CTRL, "ep %u: KFAB_IOC_RX_BUFFERED: %s\n", ep->id,
		  fi_strerror(-ret));
	free(br);
	return ret;
}

void shim_bufrecv_free(struct shim_ep *ep)
{
	struct shim_bufrecv *br = ep->bufrecv;

	if (!br)
		return;
	munmap((void *)br->map, br->map_len);
	free(br->slot);
	free(br);
	ep->bufrecv = NULL;
}

/*
 * A completion of the CQ ring: a buffered message's notice becomes what
 * fi_msg(3) describes.  Others pass unchanged.
 */
void shim_bufrecv_entry(struct kfab_cq_entry *e)
{
	struct shim_bufrecv *br = (struct shim_bufrecv *)(uintptr_t)e->cookie;
	struct shim_bufrecv_slot *s;
	uint64_t i;

	if (!(e->flags & KFAB_COMP_BUFFERED) || !br)
		return;
	e->flags &= ~KFAB_COMP_BUFFERED;
	i = e->buf / br->stride;
	if (i >= br->slots)	/* the kernel wrote it: cannot happen */
		return;
	s = &br->slot[i];
	s->token = e->op_context;
	s->rc.ep = &br->ep->ep_fid;
	s->rc.context = NULL;
	e->op_context = (uintptr_t)&s->rc;
	e->buf = (uintptr_t)(br->map + e->buf);
	e->cookie = 0;
}

/*
 * FI_CLAIM or FI_DISCARD (not FI_PEEK) of a buffered message: @context
 * must be one of our struct fi_recv_context (-FI_EINVAL otherwise).  Fills
 * in the request; *@buffers: whether it takes the buffers (a claim).
 */
ssize_t shim_bufrecv_claim(struct shim_ep *ep, struct kfab_sqe *sqe,
			   const void *context, uint64_t flags, bool *buffers)
{
	struct shim_bufrecv *br = ep->bufrecv;
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
