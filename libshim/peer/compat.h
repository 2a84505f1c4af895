/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libshim/peer: every difference between the peer API (fi_peer(3)) of the
 * libfabric kfab is built against and the 2.x text kfab is written to.
 *
 * The rest of libshim uses only what is defined here, never the version
 * macros, so following a newer libfabric means changing this file alone.
 * Two shapes are known:
 *
 *   libfabric 1.17 (Debian 12)       2.x (fi_peer(3) of 2.1)
 *   ------------------------------   ------------------------------------
 *   declared in <rdma/fi_ext.h>      <rdma/providers/fi_peer.h>
 *   no fid_peer_cntr                 fid_peer_cntr, FI_CLASS_PEER_CNTR
 *   get_msg(srx, addr, size, &e)     get_msg(srx, &match_attr, &e)
 *   get_tag(srx, addr, tag, &e)      get_tag(srx, &match_attr, &e) (the
 *                                      man page shows a tag argument too;
 *                                      the 2.x header has it in match_attr)
 *   fi_peer_rx_entry.size            .msg_size, and .cq_data
 *   no foreach_unspec_addr           foreach_unspec_addr(srx, get_addr)
 *   fi_peer_av_context.av has the    struct fid_peer_av *av
 *     misspelt type fi_peer_av *
 *   transfer complete(.., *src)      complete(.., src) by value
 *
 * Versions between the two (1.18 to 1.22) moved these one at a time; they
 * are treated as 1.17 here and are untested: adjust the conditions below
 * (and only them) for such a libfabric.
 */
#ifndef SHIM_PEER_COMPAT_H
#define SHIM_PEER_COMPAT_H

#include <rdma/fabric.h>
#include <rdma/fi_ext.h>

#if FI_MAJOR_VERSION >= 2
#include <rdma/providers/fi_peer.h>
#define SHIM_PEER_API_2X	1
#else
#define SHIM_PEER_API_2X	0
#endif

/* The peer counter exists, and with it foreach_unspec_addr and cq_data. */
#define SHIM_PEER_HAVE_CNTR		SHIM_PEER_API_2X
#define SHIM_PEER_HAVE_UNSPEC_ADDR	SHIM_PEER_API_2X

/* fi_peer_av_context.av, whatever its declared type. */
#define shim_peer_av_ctx_av(ctx)	((struct fid_peer_av *)(void *)(ctx)->av)

/* The message size in an fi_peer_rx_entry. */
#if SHIM_PEER_API_2X
#define SHIM_RXE_SIZE(e)		((e)->msg_size)
#define shim_rxe_set_cq_data(e, d)	((e)->cq_data = (d))
#define shim_rxe_cq_data(e)		((e)->cq_data)
#else
#define SHIM_RXE_SIZE(e)		((e)->size)
#define shim_rxe_set_cq_data(e, d)	((void)(e), (void)(d))
#define shim_rxe_cq_data(e)		((void)(e), (uint64_t)0)
#endif

/*
 * The peer's calls into the owner: kfab as a peer always knows the source,
 * the size and (tagged) the tag, and passes what the version takes.
 */
#if SHIM_PEER_API_2X
static inline int shim_peer_get_msg(struct fid_peer_srx *srx, fi_addr_t addr,
				    size_t size, struct fi_peer_rx_entry **e)
{
	struct fi_peer_match_attr attr = { .addr = addr, .msg_size = size };

	return srx->owner_ops->get_msg(srx, &attr, e);
}

static inline int shim_peer_get_tag(struct fid_peer_srx *srx, fi_addr_t addr,
				    size_t size, uint64_t tag,
				    struct fi_peer_rx_entry **e)
{
	struct fi_peer_match_attr attr = { .addr = addr, .msg_size = size,
					   .tag = tag };

	return srx->owner_ops->get_tag(srx, &attr, e);
}
#else
static inline int shim_peer_get_msg(struct fid_peer_srx *srx, fi_addr_t addr,
				    size_t size, struct fi_peer_rx_entry **e)
{
	return srx->owner_ops->get_msg(srx, addr, size, e);
}

static inline int shim_peer_get_tag(struct fid_peer_srx *srx, fi_addr_t addr,
				    size_t size, uint64_t tag,
				    struct fi_peer_rx_entry **e)
{
	(void)size;	/* 1.17's get_tag does not take it */
	return srx->owner_ops->get_tag(srx, addr, tag, e);
}
#endif

/*
 * kfab as an owner: get_msg/get_tag have the version's signature and call
 * one function, IMPL(srx, addr, size, tag, tagged, entry); a size or tag
 * the version does not pass arrives as 0.
 */
#if SHIM_PEER_API_2X
#define SHIM_PEER_DEFINE_OWNER_GET(get_msg_fn, get_tag_fn, impl)	\
static int get_msg_fn(struct fid_peer_srx *srx,				\
		      struct fi_peer_match_attr *attr,			\
		      struct fi_peer_rx_entry **e)			\
{									\
	return impl(srx, attr->addr, attr->msg_size, 0, false, e);	\
}									\
static int get_tag_fn(struct fid_peer_srx *srx,				\
		      struct fi_peer_match_attr *attr,			\
		      struct fi_peer_rx_entry **e)			\
{									\
	return impl(srx, attr->addr, attr->msg_size, attr->tag, true, e); \
}
#else
#define SHIM_PEER_DEFINE_OWNER_GET(get_msg_fn, get_tag_fn, impl)	\
static int get_msg_fn(struct fid_peer_srx *srx, fi_addr_t addr,		\
		      size_t size, struct fi_peer_rx_entry **e)		\
{									\
	return impl(srx, addr, size, 0, false, e);			\
}									\
static int get_tag_fn(struct fid_peer_srx *srx, fi_addr_t addr,		\
		      uint64_t tag, struct fi_peer_rx_entry **e)	\
{									\
	return impl(srx, addr, 0, tag, true, e);			\
}
#endif

/* fi_ops_transfer_peer.complete: the source by pointer (1.17) or value. */
#if SHIM_PEER_API_2X
#define SHIM_TRANSFER_SRC_T	fi_addr_t
#else
#define SHIM_TRANSFER_SRC_T	fi_addr_t *
#endif

#endif /* SHIM_PEER_COMPAT_H */
