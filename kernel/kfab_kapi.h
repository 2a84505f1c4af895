/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kfab's in-kernel API: the same engine as /dev/kfab, for kernel code.
 * Documentation/kapi.rst is built from the comments of this file.
 */
#ifndef KFAB_KAPI_H
#define KFAB_KAPI_H

#include <linux/bvec.h>
#include <linux/list.h>
#include <linux/scatterlist.h>
#include <linux/types.h>
#include <linux/uio.h>
#include <linux/workqueue.h>

#include <linux/kfab.h>

/**
 * DOC: Overview
 *
 * A kernel consumer (a block driver, a file system client) opens the same
 * objects as a libfabric process: a domain, address vectors (named AVs are
 * shared with user space), and FI_EP_RDM endpoints.  Its endpoints are
 * peers of user-space endpoints: a kernel send reaches a user receive and
 * the other way round, through the same matching code.
 *
 * Objects are opaque and reference counted.  A child holds a reference on
 * its parent: an endpoint on its domain, its AV and its CQ; an AV and a CQ
 * on their domain.  Every ``*_close()`` drops the caller's reference, so
 * closing a parent before its children is safe: it goes when the last
 * child does.  Only kfab_kep_close() does more: it stops the endpoint,
 * ends its outstanding requests with -ECANCELED and waits for every
 * completion callback to return before it returns.
 *
 * Contexts: every call that may sleep says so and has a might_sleep():
 * all opens and closes, kfab_kav_insert(), kfab_kav_remove(),
 * kfab_kav_lookup(), kfab_kep_post(), kfab_kep_cancel() and
 * kfab_kcq_wait().  kfab_kcq_poll() and kfab_kep_addr() never sleep and
 * may be called from softirq or with interrupts off.  Nothing may be
 * called from hard interrupt context except kfab_kcq_poll().
 *
 * Errors are negative errnos.  A request that was taken (kfab_kep_post()
 * returned 0) always completes exactly once, through its callback or its
 * endpoint's kernel CQ, with &kfab_kreq.status set.
 */

struct kfab_kdomain;
struct kfab_kav;
struct kfab_kep;
struct kfab_kcq;

/* A receive from any source; also an index that names nothing. */
#define KFAB_KADDR_ANY		KFAB_CQ_ADDR_NOTAVAIL

/**
 * enum kfab_kop - what a request does
 * @KFAB_KOP_SEND: send a message (fi_send)
 * @KFAB_KOP_RECV: receive a message (fi_recv)
 * @KFAB_KOP_TSEND: send a tagged message (fi_tsend)
 * @KFAB_KOP_TRECV: receive a tagged message (fi_trecv)
 */
enum kfab_kop {
	KFAB_KOP_SEND,
	KFAB_KOP_RECV,
	KFAB_KOP_TSEND,
	KFAB_KOP_TRECV,
};

/**
 * enum kfab_kbuf - the kind of memory of a request's buffers
 * @KFAB_KBUF_KVEC: &kfab_kreq.kvec, kernel virtual addresses
 *	(kmalloc or vmalloc memory)
 * @KFAB_KBUF_BVEC: &kfab_kreq.bvec, pages
 * @KFAB_KBUF_SG: &kfab_kreq.sg, a scatterlist (its pages; DMA addresses
 *	are not used)
 */
enum kfab_kbuf {
	KFAB_KBUF_KVEC,
	KFAB_KBUF_BVEC,
	KFAB_KBUF_SG,
};

/* &kfab_kreq.flags */
/* Send: carry &kfab_kreq.data to the receiver's completion (FI_REMOTE_CQ_DATA). */
#define KFAB_KREQ_REMOTE_DATA	BIT(0)

/* &kfab_kreq.out_flags */
/* Receive: &kfab_kreq.out_data holds the sender's data. */
#define KFAB_KCOMP_REMOTE_DATA	BIT(0)

/**
 * struct kfab_kreq - a send or a receive of a kernel endpoint
 * @op: what it does
 * @flags: KFAB_KREQ_* bits
 * @addr: send: the destination, an index of the endpoint's AV; receive:
 *	the only source it accepts (an index), or KFAB_KADDR_ANY
 * @tag: tagged send: the tag; tagged receive: the tag wanted
 * @ignore: tagged receive: tag bits that do not have to match
 * @data: send with KFAB_KREQ_REMOTE_DATA: the remote CQ data
 * @buf_type: which member of the union holds the buffers
 * @kvec: the buffers, with KFAB_KBUF_KVEC
 * @bvec: the buffers, with KFAB_KBUF_BVEC
 * @sg: the buffers, with KFAB_KBUF_SG
 * @nr_segs: entries of @kvec, @bvec or @sg (0 for an empty message)
 * @len: bytes of the buffers the request uses, at most their sum
 * @done: the completion callback, for an endpoint without a kernel CQ
 * @priv: the caller's
 * @status: out: 0; -EMSGSIZE: a receive got only @out_len bytes of a longer
 *	message; -ECANCELED: cancelled, or its endpoint was closed;
 *	-EHOSTUNREACH: no endpoint at the destination; -ECONNRESET: the
 *	receiver went away before taking the message; -EINVAL: bad request
 *	(bad @addr); -ENOMEM; -EIO: the message was lost (fault injection)
 * @out_len: out: receive: bytes received
 * @out_tag: out: tagged receive: the message's tag
 * @out_data: out: receive: the remote CQ data, with KFAB_KCOMP_REMOTE_DATA
 * @out_src: out: receive: the source's index in the receiver's AV, or
 *	KFAB_KADDR_ANY when the AV does not hold it
 * @out_flags: out: KFAB_KCOMP_* bits
 * @link: kfab's while the request is outstanding; the caller's after
 *	kfab_kcq_poll() returned it
 * @ep: kfab's
 * @sg_bvec: kfab's
 * @start_ns: kfab's
 *
 * The caller owns the struct and the buffers, and keeps both valid and
 * unchanged from kfab_kep_post() until the request completes.  kfab never
 * pins nor maps the buffers for longer than the request: a receive holds
 * them while posted; a send holds them until its completion.
 */
struct kfab_kreq {
	enum kfab_kop op;
	u32 flags;
	u64 addr;
	u64 tag;
	u64 ignore;
	u64 data;
	enum kfab_kbuf buf_type;
	union {
		const struct kvec *kvec;
		const struct bio_vec *bvec;
		struct scatterlist *sg;
	};
	unsigned int nr_segs;
	size_t len;
	void (*done)(struct kfab_kreq *req);
	void *priv;

	int status;
	size_t out_len;
	u64 out_tag;
	u64 out_data;
	u64 out_src;
	u32 out_flags;

	struct list_head link;
	struct kfab_kep *ep;
	struct bio_vec *sg_bvec;
	u64 start_ns;
};

/**
 * struct kfab_kep_attr - how to open a kernel endpoint
 * @name: for debugfs (/sys/kernel/debug/kfab/kapi/DOMAIN/NAME); may be NULL
 * @cq: completions go to this kernel CQ; NULL: each request's
 *	&kfab_kreq.done is called
 * @wq: the workqueue that runs the callbacks; NULL: kfab's own (unbound,
 *	WQ_MEM_RECLAIM, so a block driver may rely on it under memory
 *	pressure)
 * @src: the address wanted, as KFAB_IOC_EP_OPEN's @src (a service, a
 *	listener of the initial network namespace); NULL: any
 */
struct kfab_kep_attr {
	const char *name;
	struct kfab_kcq *cq;
	struct workqueue_struct *wq;
	const struct kfab_addr *src;
};

struct kfab_kdomain *kfab_kdomain_open(const char *name);
void kfab_kdomain_close(struct kfab_kdomain *dom);

struct kfab_kav *kfab_kav_open(struct kfab_kdomain *dom, const char *name,
			       u32 flags, u32 count);
void kfab_kav_close(struct kfab_kav *av);
int kfab_kav_insert(struct kfab_kav *av, const struct kfab_addr *addrs,
		    u32 count, u64 *indices);
int kfab_kav_remove(struct kfab_kav *av, const u64 *indices, u32 count);
int kfab_kav_lookup(struct kfab_kav *av, u64 index, struct kfab_addr *addr);

struct kfab_kcq *kfab_kcq_open(struct kfab_kdomain *dom);
void kfab_kcq_close(struct kfab_kcq *cq);
int kfab_kcq_poll(struct kfab_kcq *cq, struct kfab_kreq **reqs, int max);
long kfab_kcq_wait(struct kfab_kcq *cq, long timeout);

struct kfab_kep *kfab_kep_open(struct kfab_kdomain *dom, struct kfab_kav *av,
			       const struct kfab_kep_attr *attr);
void kfab_kep_close(struct kfab_kep *ep);
void kfab_kep_addr(struct kfab_kep *ep, struct kfab_addr *addr);
int kfab_kep_post(struct kfab_kep *ep, struct kfab_kreq *req);
int kfab_kep_cancel(struct kfab_kep *ep, struct kfab_kreq *req);

#endif /* KFAB_KAPI_H */
