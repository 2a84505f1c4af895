/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libshim/peer: fi_peer(3) - declarations private to this folder.
 *
 * kfab plays both roles of fi_peer(3) (Documentation/peer.rst):
 *
 *   peer   another provider (the owner) opens kfab's CQ, AV, domain, EQ
 *          and SRX with FI_PEER and passes its fid_peer_* objects in:
 *          cq.c (CQ), av.c (AV, domain, EQ, FI_PEER_TRANSFER endpoints),
 *          srx.c (SRX).
 *   owner  kfab hands its own CQ (and SRX) to another provider as a
 *          fid_peer_cq (fid_peer_srx) that kfab allocates, one per peer
 *          (fi_get_val(KFAB_FID_PEER_EXPORT), <kfab/kfab.h>): cq.c, srx.c.
 *
 * The plain provider (the files of libshim/) reaches this folder only
 * through the entry points and the hooks tables of internal.h ("fi_peer(3)");
 * what differs between libfabric versions is in compat.h only.
 */
#ifndef SHIM_PEER_H
#define SHIM_PEER_H

#include "../internal.h"
#include "compat.h"

/* ---- CQs (cq.c) ---- */

/* A completion kfab makes itself (a cancel on an exported SRX). */
int shim_cq_inject_err(struct shim_cq *cq, const struct fi_cq_err_entry *err);

/* ---- shared receive contexts (srx.c), for cq.c's hooks ---- */

/*
 * A peer SRX exists (the process-wide CQ hooks are then set).
 * shim_psrx_filter() is struct shim_cq_hooks.filter for every CQ: whether
 * a completion's context is a peer SRX's request, to drop, or a claim,
 * rewritten in place to the owner's receive and kept.
 * shim_psrx_progress_all() makes the owner callbacks and peeks of every
 * peer SRX: from every CQ read, never under a CQ's lock.
 */
bool shim_psrx_active(void);
int shim_psrx_filter(struct kfab_cq_entry *e, int err, bool commit);
void shim_psrx_progress_all(void);
/* The hooks every CQ gets once a peer SRX exists (cq.c). */
extern const struct shim_cq_hooks shim_psrx_cq_hooks;

#endif /* SHIM_PEER_H */
