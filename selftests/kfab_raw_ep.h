/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A raw endpoint for the tests that drive the ABI without libshim
 * (kfab_msg, kfab_share, kfab_bufrecv) and for make bench's
 * tools/kfab-bench-floor: a file of its own, as if in a
 * process of its own, with a domain, an AV, one CQ mapped and an
 * endpoint whose submission ring is mapped; requests go through the ring
 * and the doorbell, completions are read off the ring.  Include it after
 * kfab_test.h.
 */
#ifndef KFAB_RAW_EP_H
#define KFAB_RAW_EP_H

#include <sys/uio.h>

#include "kfab_test.h"

/* A receive's source: any. */
#define ANY	(~0ULL)

/**
 * struct raw_ep - one endpoint in a file of its own
 * @fd: the file, -1 when closed
 * @dom: @av: @ep: the objects' ids
 * @addr: the endpoint's address
 * @cq: its CQ, mapped (bound to both directions)
 * @epo: what KFAB_IOC_EP_OPEN answered: the ring's layout
 * @sq: the submission ring, mapped
 * @tail: the ring's tail as this side last published it
 * @rb: @region: @slots: with buffered receives (kfab_bufrecv), what
 *	KFAB_IOC_RX_BUFFERED answered and its region, mapped; else zero
 */
struct raw_ep {
	int fd;
	uint32_t dom, av, ep;
	struct kfab_addr addr;
	struct kfab_test_cq cq;
	struct kfab_ep_open epo;
	uint8_t *sq;
	uint32_t tail;
	struct kfab_rx_buffered rb;
	struct kfab_mmap region;
	const uint8_t *slots;
};

/* A word of @r's ring region at @off (its tail and head). */
#define SQ_U32(r, off)	((uint32_t *)((r)->sq + (off)))

static inline struct kfab_sqe *sq_slot(struct raw_ep *r, uint32_t i)
{
	return (struct kfab_sqe *)(r->sq + r->epo.out_sq.off_entries +
				   (size_t)(i & (r->epo.out_sq.entries - 1)) *
				   r->epo.out_sq.entry_size);
}

/*
 * A new endpoint in @r's file and domain, its ring mapped (@tail 0):
 * 0, -1 when it cannot be opened, -2 when its ring cannot be mapped.
 */
static inline int ep_open_ring(struct raw_ep *r)
{
	r->tail = 0;
	if (_test_cmd_ep_open(r->fd, r->dom, 32, &r->ep, &r->epo))
		return -1;
	r->addr = r->epo.out_addr;
	r->sq = _test_mmap(r->fd, &r->epo.out_sq.region,
			   PROT_READ | PROT_WRITE);
	return r->sq == MAP_FAILED ? -2 : 0;
}

/* Bind @r to its AV and CQ and enable it: 0 or -6. */
static inline int ep_enable(struct raw_ep *r)
{
	return _test_ep_bind_enable(r->fd, r->ep, r->av, r->cq.id) ? -6 : 0;
}

/*
 * An endpoint in a file of its own, bound to an AV and one CQ when
 * @enable, and enabled.  0, or the negative number of the step that
 * failed.
 */
static inline int ep_setup(struct raw_ep *r, bool enable)
{
	struct kfab_av_open avo = { 0 };
	int rc;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (_test_open_domain(&r->fd, &r->dom))
		return -1;
	avo.domain_id = r->dom;
	if (_test_cmd_av_open(r->fd, &avo, &r->av))
		return -2;
	if (_test_cq_open_mapped(r->fd, r->dom, 64, 0, &r->cq))
		return -3;
	rc = ep_open_ring(r);
	if (rc)
		return rc - 3;
	if (!enable)
		return 0;
	return ep_enable(r);
}

/* Like a process exiting: the mappings go too (they hold the file). */
static inline void ep_close(struct raw_ep *r)
{
	if (r->fd < 0)
		return;
	_test_cq_unmap(&r->cq);
	_test_munmap(r->sq, &r->epo.out_sq.region);
	if (r->slots)
		_test_munmap((void *)r->slots, &r->region);
	r->slots = NULL;
	r->sq = NULL;
	close(r->fd);
	r->fd = -1;
}

/* @p inserted into @r's AV: its fi_addr_t there, ANY on failure. */
static inline uint64_t peer_addr(struct raw_ep *r, const struct kfab_addr *p)
{
	uint32_t idx = KFAB_AV_INDEX_NONE;

	if (_test_cmd_av_insert(r->fd, r->av, p, 1, &idx, NULL, NULL))
		return ANY;
	return idx;
}

static inline uint64_t peer(struct raw_ep *r, const struct raw_ep *p)
{
	return peer_addr(r, &p->addr);
}

/* Queue one request (no doorbell). */
static inline void queue(struct raw_ep *r, const struct kfab_sqe *sqe)
{
	*sq_slot(r, r->tail) = *sqe;
	r->tail++;
	__atomic_store_n(SQ_U32(r, r->epo.out_sq.off_tail), r->tail,
			 __ATOMIC_RELEASE);
}

/* Queue one request and ring: the doorbell's status. */
static inline int submit(struct raw_ep *r, const struct kfab_sqe *sqe)
{
	queue(r, sqe);
	return _test_cmd_doorbell(r->fd, r->ep, NULL);
}

/* A request over @n iovecs, its completion asked for. */
static inline struct kfab_sqe sqe_iov(uint8_t op, uint64_t ctx,
				      uint64_t addr, const struct iovec *iov,
				      unsigned int n)
{
	struct kfab_sqe s = { .opcode = op, .context = ctx, .addr = addr,
			      .flags = KFAB_SQE_COMPLETION, .iov_count = n };
	unsigned int i;

	for (i = 0; i < n; i++) {
		s.iov[i].base = (uintptr_t)iov[i].iov_base;
		s.iov[i].len = iov[i].iov_len;
	}
	return s;
}

static inline struct kfab_sqe sqe_buf(uint8_t op, uint64_t ctx,
				      uint64_t addr, void *buf, size_t len)
{
	struct iovec iov = { buf, len };

	return sqe_iov(op, ctx, addr, &iov, 1);
}

/* The next completion: 0, -EAGAIN when the ring is empty. */
static inline int cq_next(struct raw_ep *r, struct kfab_cq_entry *e)
{
	uint32_t *headp = (uint32_t *)(r->cq.cons + r->cq.layout.off_head);
	uint32_t head = *headp;
	uint32_t tail = __atomic_load_n((uint32_t *)(r->cq.ring +
						     r->cq.layout.off_tail),
					__ATOMIC_ACQUIRE);

	if (head == tail)
		return -EAGAIN;
	*e = *(const struct kfab_cq_entry *)kfab_test_cq_slot(&r->cq, head);
	__atomic_store_n(headp, head + 1, __ATOMIC_RELEASE);
	return 0;
}

/* KFAB_IOC_CQ_READERR: the oldest error completion of @r's CQ. */
static inline int cq_err(struct raw_ep *r, struct kfab_cq_readerr *e)
{
	return _test_cmd_cq_readerr(r->fd, r->cq.id, NULL, 0, e);
}

#endif /* KFAB_RAW_EP_H */
