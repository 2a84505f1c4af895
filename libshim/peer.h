/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libshim: peer providers (fi_peer(3)) - private declarations.
 *
 * kfab plays both roles of fi_peer(3) (Documentation/peer.rst):
 *
 *   peer   another provider (the owner) opens kfab's CQ, AV, domain, EQ
 *          and SRX with FI_PEER and passes its fid_peer_* objects in:
 *          peer_cq.c (CQ), peer_av.c (AV, domain, EQ, FI_PEER_TRANSFER
 *          endpoints), peer_srx.c (SRX).
 *   owner  kfab hands its own CQ (and SRX) to another provider as a
 *          fid_peer_cq (fid_peer_srx) that kfab allocates, one per peer
 *          (fi_get_val(KFAB_FID_PEER_EXPORT), <kfab/kfab.h>): peer_cq.c,
 *          peer_srx.c.
 *
 * The object files of cq.c, av.c, eq.c, ep.c and domain.c call in here
 * through a few hooks; what differs between libfabric versions is in
 * peer_compat.h only.
 */
#ifndef SHIM_PEER_H
#define SHIM_PEER_H

#include "internal.h"
#include "peer_compat.h"

/* ---- CQs (peer_cq.c; the ring itself stays in cq.c) ---- */

struct shim_cq_peer;	/* a kfab CQ another provider owns */
struct shim_cq_owner;	/* a kfab CQ exported to other providers */

/*
 * cq.c for peer_cq.c: the ring of a CQ that only the forwarder reads.
 * shim_cq_forward() hands each entry of the ring (and of the kernel's
 * overflow list) to @sink with its source already in the terms of the
 * CQ's AV; an entry is consumed only when @sink returns 0, and the walk
 * stops at the first non-zero return, which it returns.  The caller
 * serialises calls.  shim_cq_take_err() reads one error completion into
 * @buf with err_data in the CQ's own buffer: 1, -FI_EAGAIN, or -errno.
 */
typedef int (*shim_cq_sink_fn)(void *arg, const struct kfab_cq_entry *e,
			       fi_addr_t src);
int shim_cq_forward(struct shim_cq *cq, shim_cq_sink_fn sink, void *arg);
bool shim_cq_has_err(struct shim_cq *cq);
ssize_t shim_cq_take_err(struct shim_cq *cq, struct fi_cq_err_entry *buf);
bool shim_cq_progress_eps(struct shim_cq *cq);
/* Wake fi_cq_sread() waiters of @cq (an owner queue grew). */
void shim_cq_wake(struct shim_cq *cq);
struct shim_cq_owner *shim_cq_get_owner(struct shim_cq *cq);
/* Sets it once; returns the one that is set (ours or another thread's). */
struct shim_cq_owner *shim_cq_set_owner(struct shim_cq *cq,
					struct shim_cq_owner *owner);

/* kfab's CQ opened with FI_PEER: checks @context; 0 or -FI_EINVAL. */
int shim_cq_peer_new(void *context, struct shim_cq_peer **peer);
void shim_cq_peer_free(struct shim_cq_peer *peer);
extern const struct fi_ops_cq shim_cq_peer_ops;
/* The ops of a peer CQ find their state here (cq.c). */
struct shim_cq_peer *shim_cq_get_peer(struct shim_cq *cq);
struct shim_cq *shim_cq_from_cq_fid(struct fid_cq *cq_fid);

/*
 * kfab's CQ as an owner.  Every hook takes a NULL owner (never exported)
 * and then does nothing.
 *   export    fi_get_val(KFAB_FID_PEER_EXPORT): a new fid_peer_cq
 *   progress  fi_cq_read(peer, NULL, 0) of every imported peer CQ; true
 *             when there is one (its traffic needs polling)
 *   count     completions written by peers and not read yet
 *   pop       up to @max of them, oldest first
 *   has_err / pop_err  the same for errors; err_data is copied into
 *             @data (up to @data_len bytes, set to what was copied)
 *   close     before fi_close() of the CQ: -FI_EBUSY while a fid_peer_cq
 *             without an imported peer CQ exists; otherwise closes the
 *             imported CQs (their error, if one fails) and frees all
 */
int shim_cq_owner_export(struct shim_cq *cq, void *val);
bool shim_cq_owner_progress(struct shim_cq_owner *o);
size_t shim_cq_owner_count(struct shim_cq_owner *o);
size_t shim_cq_owner_pop(struct shim_cq_owner *o, struct kfab_cq_entry *out,
			 size_t max);
bool shim_cq_owner_has_err(struct shim_cq_owner *o);
int shim_cq_owner_pop_err(struct shim_cq_owner *o,
			  struct fi_cq_err_entry *err, void *data,
			  size_t *data_len);
int shim_cq_owner_close(struct shim_cq_owner *o);

/* Completions kfab makes itself (a cancel on an exported SRX). */
int shim_cq_inject_err(struct shim_cq *cq, const struct fi_cq_err_entry *err);

/* ---- shared receive contexts (peer_srx.c) ---- */

/*
 * cq.c asks about every completion while a peer SRX exists:
 * shim_psrx_intercept() says whether its context is a peer SRX's request,
 * to swallow, or a claim, rewritten in place to the owner's receive and
 * to pass on.  @err is the completion's error (0 for success).  With
 * @commit false nothing changes state (the caller may not get rid of the
 * completion); the same call with @commit true, on the entry as it was,
 * makes it final.
 */
#define SHIM_PSRX_NOT_MINE	0
#define SHIM_PSRX_SWALLOW	1
#define SHIM_PSRX_PASS		2
bool shim_psrx_active(void);
int shim_psrx_intercept(struct kfab_cq_entry *e, int err, bool commit);
/* Owner callbacks, peeks: from every CQ read, never under a CQ's lock. */
void shim_psrx_progress_all(void);

struct shim_srx;
/* fi_srx_context() with FI_PEER: kfab as the peer of @context's owner. */
int shim_srx_peer_context(struct fid_domain *domain, struct fi_rx_attr *attr,
			  struct fid_ep **rx_ep, void *context);
/*
 * srx.c hooks, for an SRX with srx->psrx set: a receive posted (kfab as
 * the owner: into the lists; as a peer: -FI_ENOSYS), a cancel, an export
 * (fi_get_val(KFAB_FID_PEER_EXPORT)), fi_close() (before the kernel
 * object goes: -FI_EBUSY while a fid_peer_srx without an imported fid is
 * open; after: free), and endpoints enabled and unbound.
 */
ssize_t shim_srx_peer_post(struct shim_srx *srx, const struct kfab_sqe *sqe);
ssize_t shim_srx_peer_cancel(struct shim_srx *srx, void *context);
int shim_srx_peer_export(struct shim_srx *srx, void *val);
int shim_srx_peer_close(struct shim_srx *srx);
void shim_srx_peer_free(struct shim_srx *srx);
void shim_srx_peer_ep_enabled(struct shim_srx *srx, struct shim_ep *ep);
void shim_srx_peer_ep_unbound(struct shim_srx *srx, struct shim_ep *ep);

/* ---- AV, domain, EQ, endpoints (peer_av.c) ---- */

/* fi_av_open(FI_PEER): the owner's attributes for kfab's own table. */
int shim_av_peer_attr(void *context, struct fi_av_attr *attr,
		      struct fid_peer_av **peer_av);
/* fi_domain2(FI_PEER): checks the context; the owner's domain. */
int shim_domain_peer_check(void *context, struct fid_domain **owner);
/* fi_eq_open(FI_PEER) */
int shim_eq_peer_check(void *context, struct fid_eq **owner);
extern const struct fi_ops_eq shim_eq_peer_ops;
/* Events of a peer EQ go to the owner's EQ. */
int shim_eq_peer_forward(struct fid_eq *owner, uint32_t event,
			 const void *buf, size_t len);
int shim_eq_peer_forward_err(struct fid_eq *owner,
			     const struct fi_eq_err_entry *err);
/* fi_endpoint2(FI_PEER_TRANSFER): checks the context, sets peer_ops. */
int shim_ep_peer_transfer(struct fi_info *info, void *context);

/* fi_import_fid() on a kfab object that gives it no meaning. */
bool shim_is_import_only(const struct fid *fid);

#endif /* SHIM_PEER_H */
