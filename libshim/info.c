// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: the fi_info kfab offers, and hints matched against it.
 *
 * kfab states only what exists.  That is fabrics, domains, AVs, CQs,
 * counters and reliable-datagram endpoints carrying messages and tagged
 * messages between endpoints of this node.  So:
 *
 *  - caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV |
 *    FI_SOURCE | FI_MULTI_RECV | FI_FENCE | FI_LOCAL_COMM | FI_REMOTE_COMM |
 *    FI_SHARED_AV | FI_NAMED_RX_CTX (scalable endpoints' receive contexts
 *    by fi_rx_addr(), sep.c; not for FI_EP_MSG).  The _COMM bits say where peers may be: on this
 *    machine, and on other nodes through the module's transport
 *    (Documentation/net.rst), offered whenever the module is loaded because
 *    Open MPI asks for it even on one node.  FI_SHARED_AV: named AVs,
 *    shared by the processes of the node (fi_getinfo(3) defines the bit for
 *    them; av.c).  FI_SOURCE: the kernel fills the source of every receive
 *    completion.  FI_MULTI_RECV: untagged receives.  FI_RMA, FI_ATOMIC...
 *    appear when they work, so until then hints asking for any of them get
 *    -FI_ENODATA and the application moves on to a provider that can serve
 *    it.  When hints name caps, the answer carries those (plus the
 *    secondary _COMM bits and FI_SHARED_AV, true of every kfab domain), not
 *    more: e.g. FI_DIRECTED_RECV changes what fi_recv()'s src_addr means.
 *  - mem_tag_format FI_TAG_GENERIC (0xaaaa...): the kernel matches every bit of a
 *    64-bit tag (SHIM_TAG_BITS, the width of struct kfab_sqe's tag), so any
 *    format a hint asks for fits and is echoed back.
 *  - addr_format = FI_FORMAT_UNSPEC: a provider-specific, opaque address
 *    (struct kfab_addr, src_addrlen bytes) that applications exchange out
 *    of band (fi_getinfo(3)); or FI_ADDR_STR when the hints ask for it:
 *    the same addresses as strings, "fi_kfab://NODE:PORT/EP" (addr.c).
 *    Sockaddrs cannot name an endpoint of a node, so hints asking for any
 *    other format get -FI_ENODATA.  Node and service (fi_getinfo(3)) give
 *    src_addr with FI_SOURCE, dest_addr without (the section "addresses"
 *    at the end of this file).
 *  - ep_type FI_EP_RDM: the endpoint type kfab is built for; FI_EP_MSG
 *    (cm.c, shim_info_msg()): an RDM endpoint with one peer, so without
 *    directed receives, sources or SRXs.  prov.c answers one fi_info per
 *    type, RDM first, and keeps MSG and DGRAM from the rxm and rxd
 *    utility providers.  FI_EP_DGRAM (shim_info_dgram()): the RDM
 *    endpoint with max_msg_size SHIM_DGRAM_MAX_MSG_SIZE.
 *  - Queues: one submission ring per endpoint carries sends and receives;
 *    tx_attr->size and rx_attr->size say SHIM_EP_QUEUE_SIZE each, and hints
 *    up to KFAB_SQ_MAX_ENTRIES are accepted and echoed (fi_endpoint() sizes
 *    the ring from their sum).  inject_size KFAB_INLINE_MAX and iov_limit
 *    KFAB_IOV_MAX are the ring entry's; max_msg_size SHIM_MAX_MSG_SIZE;
 *    total_buffered_recv SHIM_BUFFERED_RECV is what the kernel buffers per
 *    endpoint for messages that arrive before their receive; an endpoint
 *    that buffers (FI_BUFFERED_RECV, FI_VARIABLE_MSG) gets a region of
 *    the hints' total_buffered_recv instead, rounded down to whole slots
 *    (bufrecv.c, shim_bufrecv_total()), SHIM_BUFRECV_TOTAL_DEFAULT when
 *    they give none.  Hints up to SHIM_BUFRECV_TOTAL_MAX are accepted
 *    (fi_endpoint(3): the provider "may adjust" the value), more get
 *    -FI_ENODATA.  Shared
 *    receive contexts (srx.c): max_ep_srx_ctx 1, and ep_attr->rx_ctx_cnt
 *    FI_SHARED_CONTEXT in the hints is accepted and echoed (the endpoint
 *    then needs an SRX bound before fi_enable()); fi_srx_context()'s
 *    attributes are judged like rx_attr hints.  Shared transmit contexts
 *    (stx.c) likewise: max_ep_stx_ctx 1, tx_ctx_cnt FI_SHARED_CONTEXT
 *    echoed, fi_stx_context()'s attributes judged like tx_attr hints.  FI_PEEK, FI_CLAIM and
 *    FI_DISCARD of tagged receives have no cap bit (fi_tagged(3) makes
 *    them part of FI_TAGGED).  msg_order
 *    FI_ORDER_SAS (the kernel takes a ring in order and matches in order);
 *    comp_order FI_ORDER_NONE (mem_tag_format: below; Open MPI's mtl ofi
 *    counts the tag bits it may use from the top of it, so 0 would leave
 *    it none).  op_flags hints among the completion flags
 *    kfab honours are echoed as the endpoint's default flags.  tclass hints
 *    are accepted and echoed: one node, one class of service.
 *  - Counts: CQs, counters, endpoints and SRXs are kernel objects of the
 *    fabric's open file, which holds at most the module's max_objects
 *    (KFAB_IOC_QUERY, read when the device is opened), the domain's own
 *    included: cq_cnt, ep_cnt, cntr_cnt, tx_ctx_cnt and rx_ctx_cnt are
 *    max_objects - 1, and hints above that get -FI_ENODATA.  cq_data_size
 *    8; memory registrations live in the library (mr_cnt, mr_key_size 8,
 *    mr_iov_limit KFAB_IOV_MAX); one transmit and one receive context per
 *    endpoint, up to SHIM_SEP_MAX_CTX of each for a scalable endpoint
 *    (max_ep_tx_ctx, max_ep_rx_ctx; ep_attr's counts echo the hints), and
 *    one SRX (max_ep_srx_ctx).
 *  - threading FI_THREAD_SAFE (objects lock what they change), so any
 *    threading hint is satisfied and echoed back; a domain opened with
 *    FI_THREAD_DOMAIN skips the data path's locks (shim_data_lock()),
 *    as the application serialises its calls there; control progress
 *    FI_PROGRESS_AUTO (every control call completes inside its ioctl); data
 *    progress FI_PROGRESS_MANUAL (reading a CQ or counter rings the
 *    doorbells of its endpoints); no mode and no mr_mode bit is required,
 *    but an RDM answer to hints that offer FI_BUFFERED_RECV (in mode or
 *    rx_attr->mode, shim_info_buffered()) has it in both: its endpoints
 *    buffer (bufrecv.c); FI_VARIABLE_MSG, a primary cap, is in caps and
 *    rx_attr->caps only when the hints ask for it, and only for RDM
 *    (prov.c): its endpoints buffer the same way, without the mode;
 *    av_type FI_AV_UNSPEC: both FI_AV_TABLE and FI_AV_MAP work, and a hint
 *    for either is echoed back.
 *
 * Matching follows fi_getinfo(3): a non-zero hint must be supported or the
 * answer is -FI_ENODATA; zero is a wildcard, except for mode bits, where
 * the hints list what the application can live with.  Each refusal is
 * logged at FI_LOG_INFO with the field that failed (FI_LOG_LEVEL=info).
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * Not const only because struct fi_info points at its attributes through
 * non-const pointers; nothing writes them (answers are fi_dupinfo() copies).
 */
/* Secondary caps kfab adds to an answer whatever the hints named. */
#define SHIM_CAPS_ALWAYS	(SHIM_COMM_CAPS | FI_SHARED_AV)
/*
 * Primary caps kfab answers with only when the hints ask for them:
 * FI_VARIABLE_MSG (fi_msg(3) "Variable Length Messages"), which changes
 * how unexpected messages reach the application (bufrecv.c).
 */
#define SHIM_CAPS_ASKED		FI_VARIABLE_MSG
/* What fi_info->caps may hold: the endpoints' and the domain's. */
#define SHIM_INFO_CAPS		(SHIM_CAPS | SHIM_CAPS_ALWAYS | SHIM_CAPS_ASKED)
/* Tag bits the kernel matches: all of struct kfab_sqe's tag. */
#define SHIM_TAG_BITS		(8 * sizeof(((struct kfab_sqe *)0)->tag))
/*
 * libfabric's own providers' FI_TAG_GENERIC (not in its public headers):
 * one-bit fields, no structure imposed, narrowed to the bits matched.
 */
#define SHIM_TAG_FORMAT		(0xaaaaaaaaaaaaaaaaULL >> (64 - SHIM_TAG_BITS))
/* Default op_flags a hint may ask for (msg.c honours them). */
#define SHIM_TX_OP_FLAGS	(FI_COMPLETION | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
#define SHIM_RX_OP_FLAGS	(FI_COMPLETION | FI_MULTI_RECV)
/* Registrations of one domain (library objects, see mr.c). */
#define SHIM_MR_CNT		65536

static struct fi_tx_attr shim_tx_attr = {
	.caps = SHIM_TX_CAPS,
	.mode = 0,
	.op_flags = 0,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.inject_size = KFAB_INLINE_MAX,
	.size = SHIM_EP_QUEUE_SIZE,
	.iov_limit = KFAB_IOV_MAX,
	.rma_iov_limit = 0,
};

static struct fi_rx_attr shim_rx_attr = {
	.caps = SHIM_RX_CAPS,
	.mode = 0,
	.op_flags = 0,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.total_buffered_recv = SHIM_BUFFERED_RECV,
	.size = SHIM_EP_QUEUE_SIZE,
	.iov_limit = KFAB_IOV_MAX,
};

static struct fi_ep_attr shim_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_UNSPEC,
	.protocol_version = 0,
	.max_msg_size = SHIM_MAX_MSG_SIZE,
	.tx_ctx_cnt = 1,	/* FI_SHARED_CONTEXT when the hints ask */
	.rx_ctx_cnt = 1,	/* FI_SHARED_CONTEXT when the hints ask */
	.mem_tag_format = SHIM_TAG_FORMAT,
};

static struct fi_domain_attr shim_domain_attr = {
	.name = SHIM_DOMAIN_NAME,
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_AUTO,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = 0,
	.mr_key_size = sizeof(uint64_t),
	.cq_data_size = sizeof(uint64_t),
	/* cq_cnt, ep_cnt, ...: the module's, set by shim_info_counts(). */
	.max_ep_tx_ctx = SHIM_SEP_MAX_CTX,	/* scalable endpoints (sep.c) */
	.max_ep_rx_ctx = SHIM_SEP_MAX_CTX,
	/* fi_srx_context(), fi_stx_context(): one each per endpoint. */
	.max_ep_stx_ctx = 1,
	.max_ep_srx_ctx = 1,
	.mr_iov_limit = KFAB_IOV_MAX,
	.max_err_data = KFAB_CQ_ERR_DATA_MAX,
	.caps = SHIM_COMM_CAPS | FI_SHARED_AV,
	.mode = 0,
	.mr_cnt = SHIM_MR_CNT,
};

/* prov_name stays NULL: libfabric's core fills it in (and api_version). */
static struct fi_fabric_attr shim_fabric_attr = {
	.name = SHIM_FABRIC_NAME,
	.prov_version = KFAB_PROV_VERSION,
};

static const struct fi_info shim_offer = {
	.caps = SHIM_INFO_CAPS,
	.mode = 0,
	.addr_format = FI_FORMAT_UNSPEC,
	/* The size of an endpoint's name; no address is bound in advance. */
	.src_addrlen = sizeof(struct kfab_addr),
	.tx_attr = &shim_tx_attr,
	.rx_attr = &shim_rx_attr,
	.ep_attr = &shim_ep_attr,
	.domain_attr = &shim_domain_attr,
	.fabric_attr = &shim_fabric_attr,
};

/* ---- the three shapes of a hint ---- */

/* A set of capabilities or flags: each one asked for must be offered. */
static bool shim_bits_ok(const char *field, uint64_t want, uint64_t have)
{
	if (!(want & ~have))
		return true;
	SHIM_INFO(CORE, "hints: %s 0x%llx not offered (kfab: 0x%llx)\n", field,
		  (unsigned long long)want, (unsigned long long)have);
	return false;
}

/* Mode bits: every one kfab requires must be one the application accepts. */
static bool shim_mode_ok(const char *field, uint64_t accepted,
			 uint64_t required)
{
	if (!(required & ~accepted))
		return true;
	SHIM_INFO(CORE, "hints: %s 0x%llx lacks what kfab requires (0x%llx)\n",
		  field, (unsigned long long)accepted,
		  (unsigned long long)required);
	return false;
}

/* A size or count: what is asked for must fit in what is offered. */
static bool shim_max_ok(const char *field, size_t want, size_t have)
{
	if (want <= have)
		return true;
	SHIM_INFO(CORE, "hints: %s %zu above kfab's %zu\n", field, want, have);
	return false;
}

/* One value of an enum (or a name): unspecified, or exactly kfab's. */
static bool shim_enum_ok(const char *field, int want, int have)
{
	if (!want || want == have)
		return true;
	SHIM_INFO(CORE, "hints: %s %d not offered (kfab: %d)\n", field, want,
		  have);
	return false;
}

static bool shim_name_ok(const char *field, const char *want,
			 const char *have)
{
	if (!want || !strcmp(want, have))
		return true;
	SHIM_INFO(CORE, "hints: %s \"%s\" is not kfab's \"%s\"\n", field, want,
		  have);
	return false;
}

/* An enum where kfab serves every value: unspecified or up to @max. */
static bool shim_range_ok(const char *field, int want, int max)
{
	if (want >= 0 && want <= max)
		return true;
	SHIM_INFO(CORE, "hints: %s %d unknown\n", field, want);
	return false;
}

/*
 * A traffic class: any that libfabric defines (fi_endpoint(3) calls it a
 * hint); kfab serves one node with one class of service.
 */
static bool shim_tclass_ok(const char *field, uint32_t want)
{
	if (want == FI_TC_UNSPEC ||
	    (want >= FI_TC_DSCP && want <= FI_TC_DSCP + 0x3f) ||
	    (want >= FI_TC_BEST_EFFORT && want <= FI_TC_NETWORK_CTRL))
		return true;
	SHIM_INFO(CORE, "hints: %s 0x%x unknown\n", field, want);
	return false;
}

/* A tag format: its fields must fit in the bits the kernel matches. */
static bool shim_tag_format_ok(uint64_t want)
{
	if (SHIM_TAG_BITS >= 64 || !(want >> SHIM_TAG_BITS))
		return true;
	SHIM_INFO(CORE, "hints: ep_attr->mem_tag_format 0x%llx wider than kfab's %zu tag bits\n",
		  (unsigned long long)want, (size_t)SHIM_TAG_BITS);
	return false;
}

/* The two forms of kfab's addresses: the struct, or its string. */
static bool shim_addr_format_ok(uint32_t want)
{
	if (want == FI_FORMAT_UNSPEC || want == FI_ADDR_STR)
		return true;
	SHIM_INFO(CORE, "hints: addr_format %u not offered (kfab: FI_FORMAT_UNSPEC or FI_ADDR_STR)\n",
		  want);
	return false;
}

/* ---- per attribute struct ---- */

static bool shim_tx_attr_ok(const struct fi_tx_attr *want)
{
	const struct fi_tx_attr *have = &shim_tx_attr;

	if (!want)
		return true;
	/* Old applications copy info->caps here: judge against those. */
	return shim_bits_ok("tx_attr->caps", want->caps, shim_offer.caps) &&
	       shim_mode_ok("tx_attr->mode", want->mode, have->mode) &&
	       shim_bits_ok("tx_attr->op_flags", want->op_flags, SHIM_TX_OP_FLAGS) &&
	       shim_bits_ok("tx_attr->msg_order", want->msg_order, have->msg_order) &&
	       shim_bits_ok("tx_attr->comp_order", want->comp_order, have->comp_order) &&
	       shim_max_ok("tx_attr->inject_size", want->inject_size, have->inject_size) &&
	       shim_max_ok("tx_attr->size", want->size, KFAB_SQ_MAX_ENTRIES) &&
	       shim_max_ok("tx_attr->iov_limit", want->iov_limit, have->iov_limit) &&
	       shim_max_ok("tx_attr->rma_iov_limit", want->rma_iov_limit,
			   have->rma_iov_limit) &&
	       shim_tclass_ok("tx_attr->tclass", want->tclass);
}

static bool shim_rx_attr_ok(const struct fi_rx_attr *want)
{
	const struct fi_rx_attr *have = &shim_rx_attr;

	if (!want)
		return true;
	return shim_bits_ok("rx_attr->caps", want->caps, shim_offer.caps) &&
	       shim_mode_ok("rx_attr->mode", want->mode, have->mode) &&
	       shim_bits_ok("rx_attr->op_flags", want->op_flags, SHIM_RX_OP_FLAGS) &&
	       shim_bits_ok("rx_attr->msg_order", want->msg_order, have->msg_order) &&
	       shim_bits_ok("rx_attr->comp_order", want->comp_order, have->comp_order) &&
	       shim_max_ok("rx_attr->total_buffered_recv", want->total_buffered_recv,
			   SHIM_BUFRECV_TOTAL_MAX) &&
	       shim_max_ok("rx_attr->size", want->size, KFAB_SQ_MAX_ENTRIES) &&
	       shim_max_ok("rx_attr->iov_limit", want->iov_limit, have->iov_limit);
}

int shim_info_check_rx_attr(const struct fi_rx_attr *attr)
{
	return shim_rx_attr_ok(attr) ? 0 : -FI_ENODATA;
}

int shim_info_check_tx_attr(const struct fi_tx_attr *attr)
{
	return shim_tx_attr_ok(attr) ? 0 : -FI_ENODATA;
}

/*
 * RDM; MSG (cm.c: an RDM endpoint whose peer is fixed); DGRAM (an RDM
 * endpoint with the limits of a datagram).
 */
static bool shim_ep_type_ok(enum fi_ep_type want)
{
	if (want == FI_EP_UNSPEC || want == FI_EP_RDM || want == FI_EP_MSG ||
	    want == FI_EP_DGRAM)
		return true;
	SHIM_DBG(CORE, "ep_attr->type %d: not offered\n", (int)want);
	return false;
}

static bool shim_ep_attr_ok(const struct fi_ep_attr *want)
{
	const struct fi_ep_attr *have = &shim_ep_attr;

	if (!want)
		return true;
	/*
	 * rx_ctx_cnt FI_SHARED_CONTEXT (SIZE_MAX): an endpoint that receives
	 * through an SRX; tx_ctx_cnt FI_SHARED_CONTEXT: one that transmits
	 * through an STX (stx.c).
	 */
	return shim_ep_type_ok(want->type) &&
	       shim_enum_ok("ep_attr->protocol", want->protocol, have->protocol) &&
	       shim_max_ok("ep_attr->protocol_version", want->protocol_version,
			   have->protocol_version) &&
	       shim_max_ok("ep_attr->max_msg_size", want->max_msg_size,
			   have->max_msg_size) &&
	       shim_max_ok("ep_attr->max_order_raw_size", want->max_order_raw_size,
			   have->max_order_raw_size) &&
	       shim_max_ok("ep_attr->max_order_war_size", want->max_order_war_size,
			   have->max_order_war_size) &&
	       shim_max_ok("ep_attr->max_order_waw_size", want->max_order_waw_size,
			   have->max_order_waw_size) &&
	       shim_tag_format_ok(want->mem_tag_format) &&
	       (want->tx_ctx_cnt == FI_SHARED_CONTEXT ||
		shim_max_ok("ep_attr->tx_ctx_cnt", want->tx_ctx_cnt,
			    SHIM_SEP_MAX_CTX)) &&
	       (want->rx_ctx_cnt == FI_SHARED_CONTEXT ||
		shim_max_ok("ep_attr->rx_ctx_cnt", want->rx_ctx_cnt,
			    SHIM_SEP_MAX_CTX)) &&
	       shim_max_ok("ep_attr->auth_key_size", want->auth_key_size,
			   have->auth_key_size);
}

static bool shim_domain_attr_ok(const struct fi_domain_attr *want)
{
	const struct fi_domain_attr *have = &shim_domain_attr;

	if (!want)
		return true;
	if (want->domain && !shim_is_domain(want->domain)) {
		SHIM_INFO(CORE, "hints: domain_attr->domain is not a kfab domain\n");
		return false;
	}
	/*
	 * Thread safety satisfies every threading model, automatic control
	 * progress every control progress hint, and kfab runs with or without
	 * resource management, and opens AVs of either type, so those hints
	 * only need to be known values.
	 * kfab requires no mr_mode bit, so every mr_mode hint fits.
	 */
	return shim_name_ok("domain_attr->name", want->name, have->name) &&
	       shim_range_ok("domain_attr->threading", want->threading,
			     FI_THREAD_ENDPOINT) &&
	       shim_range_ok("domain_attr->control_progress",
			     want->control_progress, FI_PROGRESS_MANUAL) &&
	       shim_enum_ok("domain_attr->data_progress", want->data_progress,
			    have->data_progress) &&
	       shim_range_ok("domain_attr->resource_mgmt", want->resource_mgmt,
			     FI_RM_ENABLED) &&
	       shim_range_ok("domain_attr->av_type", want->av_type, FI_AV_TABLE) &&
	       shim_max_ok("domain_attr->mr_key_size", want->mr_key_size,
			   have->mr_key_size) &&
	       shim_max_ok("domain_attr->cq_data_size", want->cq_data_size,
			   have->cq_data_size) &&
	       shim_max_ok("domain_attr->max_ep_tx_ctx", want->max_ep_tx_ctx,
			   have->max_ep_tx_ctx) &&
	       shim_max_ok("domain_attr->max_ep_rx_ctx", want->max_ep_rx_ctx,
			   have->max_ep_rx_ctx) &&
	       shim_max_ok("domain_attr->max_ep_stx_ctx", want->max_ep_stx_ctx,
			   have->max_ep_stx_ctx) &&
	       shim_max_ok("domain_attr->max_ep_srx_ctx", want->max_ep_srx_ctx,
			   have->max_ep_srx_ctx) &&
	       shim_max_ok("domain_attr->mr_iov_limit", want->mr_iov_limit,
			   have->mr_iov_limit) &&
	       shim_bits_ok("domain_attr->caps", want->caps, have->caps) &&
	       shim_mode_ok("domain_attr->mode", want->mode, have->mode) &&
	       shim_max_ok("domain_attr->auth_key_size", want->auth_key_size,
			   have->auth_key_size) &&
	       shim_max_ok("domain_attr->max_err_data", want->max_err_data,
			   have->max_err_data) &&
	       shim_max_ok("domain_attr->mr_cnt", want->mr_cnt, have->mr_cnt) &&
	       shim_tclass_ok("domain_attr->tclass", want->tclass);
}

static bool shim_fabric_attr_ok(const struct fi_fabric_attr *want)
{
	if (!want)
		return true;
	if (want->fabric && !shim_is_fabric(want->fabric)) {
		SHIM_INFO(CORE, "hints: fabric_attr->fabric is not a kfab fabric\n");
		return false;
	}
	/* prov_name was the core's to match; versions are outputs. */
	return shim_name_ok("fabric_attr->name", want->name,
			    shim_fabric_attr.name);
}

/**
 * shim_info_buffered() - do hints (or an endpoint's fi_info) offer
 *	FI_BUFFERED_RECV?
 * @info: the hints or fi_info, or NULL
 *
 * In rx_attr->mode, or in mode unless that has every bit set: hints that
 * accept every mode bit (fi_info -p kfab's) say no more than "anything",
 * and kfab requires no mode bit of them.
 */
bool shim_info_buffered(const struct fi_info *info)
{
	if (!info)
		return false;
	if (info->rx_attr && (info->rx_attr->mode & FI_BUFFERED_RECV))
		return true;
	return info->mode != ~0ULL && (info->mode & FI_BUFFERED_RECV);
}

/**
 * shim_info_check() - do hints ask only for what kfab offers?
 * @hints: fi_getinfo() hints, or the fi_info handed to fi_domain(); NULL
 *	   matches
 *
 * Return: 0, or -FI_ENODATA (the reason is logged at FI_LOG_INFO).
 */
int shim_info_check(const struct fi_info *hints)
{
	if (!hints)
		return 0;
	if (shim_bits_ok("caps", hints->caps, shim_offer.caps) &&
	    shim_mode_ok("mode", hints->mode, shim_offer.mode) &&
	    shim_addr_format_ok(hints->addr_format) &&
	    shim_tx_attr_ok(hints->tx_attr) &&
	    shim_rx_attr_ok(hints->rx_attr) &&
	    shim_ep_attr_ok(hints->ep_attr) &&
	    shim_domain_attr_ok(hints->domain_attr) &&
	    shim_fabric_attr_ok(hints->fabric_attr))
		return 0;
	return -FI_ENODATA;
}

/*
 * Before API 1.5 mr_mode was an enum, and an application gets back the
 * FI_MR_BASIC or FI_MR_SCALABLE it asked for (kfab has nothing to register,
 * so either is true); an old caller with no preference gets FI_MR_SCALABLE,
 * the one of the two that asks nothing of it.  From 1.5 on mr_mode lists the
 * bits the provider requires: none.
 */
static int shim_mr_mode(uint32_t version, int hint)
{
	if (hint == FI_MR_BASIC || hint == FI_MR_SCALABLE)
		return hint;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return FI_MR_SCALABLE;
	return shim_domain_attr.mr_mode;
}

/*
 * The counts of kernel objects a domain may open: all of its file's
 * max_objects but the domain itself.  Hints asking for more than that
 * cannot be served.
 */
static bool shim_info_counts(struct fi_domain_attr *attr,
			     const struct fi_domain_attr *want,
			     uint32_t max_objects)
{
	size_t objects = max_objects ? max_objects - 1 : 0;

	attr->cq_cnt = objects;
	attr->ep_cnt = objects;
	attr->cntr_cnt = objects;
	attr->tx_ctx_cnt = objects;
	attr->rx_ctx_cnt = objects;
	return !want ||
	       (shim_max_ok("domain_attr->cq_cnt", want->cq_cnt, objects) &&
		shim_max_ok("domain_attr->ep_cnt", want->ep_cnt, objects) &&
		shim_max_ok("domain_attr->cntr_cnt", want->cntr_cnt, objects) &&
		shim_max_ok("domain_attr->tx_ctx_cnt", want->tx_ctx_cnt, objects) &&
		shim_max_ok("domain_attr->rx_ctx_cnt", want->rx_ctx_cnt, objects));
}

/**
 * shim_info_get() - the fi_info list kfab answers fi_getinfo() with
 * @version: the API version the caller asked for
 * @hints: the caller's hints, already accepted by shim_info_check(), or NULL
 * @max_objects: the module's max_objects (struct kfab_query)
 * @info: out: the list, for the caller to fi_freeinfo()
 *
 * Where kfab serves several values of a hint, the answer carries the one the
 * application asked for.
 *
 * Return: 0, -FI_ENODATA (hints asking for more objects than the module
 * allows) or -FI_ENOMEM.
 */
/*
 * A connected endpoint (cm.c): one peer, so no directed receives and no
 * sources to report, and an AV of its own, so no SRX shared with others.
 */
static void shim_info_msg(struct fi_info *fi)
{
	const uint64_t no = FI_DIRECTED_RECV | FI_SOURCE | FI_NAMED_RX_CTX;

	fi->ep_attr->type = FI_EP_MSG;
	fi->ep_attr->rx_ctx_cnt = 1;
	/* No scalable connected endpoints (sep.c). */
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->caps &= ~no;
	fi->tx_attr->caps &= ~no;
	fi->rx_attr->caps &= ~no;
	fi->domain_attr->max_ep_srx_ctx = 0;
}

/*
 * A datagram endpoint: the kernel's RDM endpoint, delivering more than
 * fi_endpoint(3) asks (reliably, in order), within a datagram's size;
 * delivery completion "applies only to reliable endpoints" (fi_cq(3)).
 */
static void shim_info_dgram(struct fi_info *fi)
{
	fi->ep_attr->type = FI_EP_DGRAM;
	fi->ep_attr->max_msg_size = SHIM_DGRAM_MAX_MSG_SIZE;
	fi->tx_attr->op_flags &= ~FI_DELIVERY_COMPLETE;
}

int shim_info_get(uint32_t version, const struct fi_info *hints,
		  uint32_t max_objects, enum fi_ep_type type,
		  struct fi_info **info)
{
	const struct fi_domain_attr *want;
	struct fi_domain_attr *attr;
	struct fi_info *fi;

	fi = fi_dupinfo(&shim_offer);
	if (!fi)
		return -FI_ENOMEM;

	attr = fi->domain_attr;
	want = hints ? hints->domain_attr : NULL;
	if (!shim_info_counts(attr, want, max_objects)) {
		fi_freeinfo(fi);
		return -FI_ENODATA;
	}
	if (want && want->threading)
		attr->threading = want->threading;
	if (want && want->control_progress)
		attr->control_progress = want->control_progress;
	if (want && want->resource_mgmt)
		attr->resource_mgmt = want->resource_mgmt;
	if (want && want->av_type)
		attr->av_type = want->av_type;
	attr->mr_mode = shim_mr_mode(version, want ? want->mr_mode : 0);
	if (want && want->tclass)
		attr->tclass = want->tclass;

	/*
	 * Hints naming caps get those; naming only secondary ones (FI_SEND,
	 * FI_SOURCE...) they get both primary ones too, or nothing would
	 * move data.
	 */
	if (hints && hints->caps) {
		fi->caps = (hints->caps & SHIM_INFO_CAPS) | SHIM_CAPS_ALWAYS;
		if (!(fi->caps & (FI_MSG | FI_TAGGED)))
			fi->caps |= FI_MSG | FI_TAGGED;
	}
	if (!hints || !(hints->caps & SHIM_CAPS_ASKED))
		fi->caps &= ~(uint64_t)SHIM_CAPS_ASKED;
	fi->tx_attr->caps = fi->caps & SHIM_TX_CAPS;
	fi->rx_attr->caps = fi->caps & (SHIM_RX_CAPS | FI_VARIABLE_MSG);
	if (hints && hints->tx_attr) {
		const struct fi_tx_attr *tx = hints->tx_attr;

		if (tx->size)
			fi->tx_attr->size = tx->size;
		fi->tx_attr->op_flags = tx->op_flags;
		fi->tx_attr->tclass = tx->tclass;
	}
	if (hints && hints->rx_attr) {
		if (hints->rx_attr->size)
			fi->rx_attr->size = hints->rx_attr->size;
		fi->rx_attr->op_flags = hints->rx_attr->op_flags;
	}
	/*
	 * FI_SHARED_CONTEXT, or the contexts of a scalable endpoint (sep.c),
	 * as asked: kfab gives what the hints ask up to SHIM_SEP_MAX_CTX.
	 */
	if (hints && hints->ep_attr && hints->ep_attr->rx_ctx_cnt)
		fi->ep_attr->rx_ctx_cnt = hints->ep_attr->rx_ctx_cnt;
	if (hints && hints->ep_attr && hints->ep_attr->tx_ctx_cnt)
		fi->ep_attr->tx_ctx_cnt = hints->ep_attr->tx_ctx_cnt;
	/* The application's own field layout: kfab matches every bit. */
	if (hints && hints->ep_attr && hints->ep_attr->mem_tag_format)
		fi->ep_attr->mem_tag_format = hints->ep_attr->mem_tag_format;
	/*
	 * FI_BUFFERED_RECV (bufrecv.c): an RDM endpoint uses it when the
	 * application says it handles it; the answer then requires it.
	 */
	if (type == FI_EP_RDM && shim_info_buffered(hints)) {
		fi->mode |= FI_BUFFERED_RECV;
		fi->rx_attr->mode |= FI_BUFFERED_RECV;
	}
	/*
	 * FI_VARIABLE_MSG: "the application requirements and provider
	 * behavior is identical" to FI_BUFFERED_RECV's (fi_msg(3)), as a
	 * capability: no mode bit is required for it.
	 */
	if (type == FI_EP_RDM && (shim_info_buffered(hints) ||
				  (fi->caps & FI_VARIABLE_MSG)))
		/* What the region holds with the default limit. */
		fi->rx_attr->total_buffered_recv =
			shim_bufrecv_total(hints && hints->rx_attr ?
					   hints->rx_attr->total_buffered_recv :
					   0);
	if (type == FI_EP_MSG)
		shim_info_msg(fi);
	if (type == FI_EP_DGRAM)
		shim_info_dgram(fi);

	*info = fi;
	return 0;
}

/* ---- addresses: node, service, src_addr, dest_addr ---- */

/*
 * A node and service (fi_getinfo(3)) as one address of @kinds: @node a
 * whole "fi_kfab://..." with @service NULL, or a host (or "local", or
 * NULL) and a service number.  For a source (SHIM_ADDR_SRC), @node NULL is
 * any address of this node and @service NULL a number of the module's;
 * for a destination, @node NULL is this machine (KFAB_ADDR_LOCAL) and a
 * service is needed.  Return: 0, -FI_ENODATA or -FI_ENOMEM.
 */
static int shim_info_node_addr(const char *node, const char *service,
			       uint64_t flags, unsigned int kinds,
			       struct kfab_addr *a)
{
	uint64_t ep = 0;
	int ret;

	if (shim_addr_is_str(node)) {
		if (service || shim_addr_parse(node, kinds, a)) {
			SHIM_INFO(CORE, "node \"%s\"%s is no %s address of kfab's\n",
				  node, service ? " with a service" : "",
				  kinds == SHIM_ADDR_SRC ? "source" : "endpoint");
			return -FI_ENODATA;
		}
		return 0;
	}
	if ((service || kinds == SHIM_ADDR_EP) &&
	    shim_addr_service(service, &ep)) {
		SHIM_INFO(CORE, "service \"%s\" is no kfab service (1..%u)\n",
			  service ? service : "(null)", KFAB_SERVICE_MAX);
		return -FI_ENODATA;
	}
	if (!node && kinds == SHIM_ADDR_SRC) {
		*a = (struct kfab_addr){ .family = KFAB_ADDR_UNSPEC };
	} else {
		ret = shim_addr_from_node(node, flags & FI_NUMERICHOST, a);
		if (ret) {
			SHIM_INFO(CORE, "node \"%s\": %s\n", node,
				  fi_strerror(-ret));
			return ret == -FI_ENOMEM ? ret : -FI_ENODATA;
		}
	}
	a->ep = htobe64(ep);
	return 0;
}

/* An address of the hints: its length and form checked. */
static int shim_info_hint_addr(const char *field, const void *addr,
			       size_t len, uint32_t format, unsigned int kinds,
			       struct kfab_addr *a)
{
	if (!shim_addr_in(addr, len, format, kinds, a))
		return 0;
	SHIM_INFO(CORE, "hints: %s (%zu bytes) is no %s address of kfab's\n",
		  field, len, kinds == SHIM_ADDR_SRC ? "source" : "endpoint");
	return -FI_ENODATA;
}

/**
 * shim_info_addrs() - the addresses of fi_getinfo()'s answer
 * @node: fi_getinfo()'s node, or NULL
 * @service: its service, or NULL
 * @flags: its flags: FI_SOURCE, FI_NUMERICHOST
 * @hints: its hints (already accepted by shim_info_check()), or NULL
 * @out: out: the format and the addresses
 *
 * fi_getinfo(3): with FI_SOURCE, @node and @service name src_addr (what
 * fi_endpoint() opens the endpoint on); without, dest_addr (what
 * fi_av_insert() takes).  hints->src_addr counts without FI_SOURCE,
 * hints->dest_addr when @node and @service are NULL or with FI_SOURCE;
 * either is checked, in hints->addr_format, and passed on.
 *
 * Return: 0; -FI_ENODATA for a node, service or address that names nothing
 * kfab can open or reach (the reason logged at FI_LOG_INFO); -FI_ENOMEM.
 */
int shim_info_addrs(const char *node, const char *service, uint64_t flags,
		    const struct fi_info *hints, struct shim_info_addrs *out)
{
	bool source = flags & FI_SOURCE;
	int ret;

	*out = (struct shim_info_addrs){
		.format = hints ? hints->addr_format : FI_FORMAT_UNSPEC,
	};
	if (node || service) {
		ret = shim_info_node_addr(node, service, flags,
					  source ? SHIM_ADDR_SRC : SHIM_ADDR_EP,
					  source ? &out->src : &out->dest);
		if (ret)
			return ret;
		out->has_src = source;
		out->has_dest = !source;
	}
	if (!source && hints && hints->src_addr) {
		ret = shim_info_hint_addr("src_addr", hints->src_addr,
					  hints->src_addrlen, out->format,
					  SHIM_ADDR_SRC, &out->src);
		if (ret)
			return ret;
		out->has_src = true;
	}
	if ((source || (!node && !service)) && hints && hints->dest_addr) {
		ret = shim_info_hint_addr("dest_addr", hints->dest_addr,
					  hints->dest_addrlen, out->format,
					  SHIM_ADDR_EP, &out->dest);
		if (ret)
			return ret;
		out->has_dest = true;
	}
	if (!out->has_src) {
		/* What fi_endpoint() opens without a src_addr: any, 0. */
		out->src = (struct kfab_addr){ .family = KFAB_ADDR_UNSPEC };
		out->has_src = true;
	}
	return 0;
}

/*
 * A copy of @a for fi_info, in @format: 0 or -FI_ENOMEM.  @room: a string
 * takes SHIM_ADDR_STRLEN bytes (NUL-padded) rather than its own length.
 */
static int shim_info_dup_addr(const struct kfab_addr *a, uint32_t format,
			      bool room, void **addr, size_t *len)
{
	char str[SHIM_ADDR_STRLEN] = "";
	size_t n = sizeof(str);

	shim_addr_out(a, format, str, &n);
	if (room && format == FI_ADDR_STR)
		n = sizeof(str);
	*addr = malloc(n);
	if (!*addr)
		return -FI_ENOMEM;
	memcpy(*addr, str, n);
	*len = n;
	return 0;
}

/**
 * shim_info_set_addrs() - put shim_info_addrs()'s answer into @info
 * @info: an fi_info of shim_info_get()
 * @addrs: the format and addresses
 *
 * Every answer has a src_addr (fi_getinfo(3): "a provider shall return an
 * address that corresponds to the indicated fabric, domain, node, and/or
 * service").  When nothing named one it is "fi_kfab://any/0", what
 * fi_endpoint() opens without one.  That address (however it came) takes
 * as many bytes as fi_getname() may need (struct kfab_addr, or
 * SHIM_ADDR_STRLEN for a string, NUL-padded), so src_addrlen stays a size
 * fit for fi_getname() and the answer, given back as hints, gets itself.
 *
 * Return: 0 or -FI_ENOMEM.
 */
int shim_info_set_addrs(struct fi_info *info,
			const struct shim_info_addrs *addrs)
{
	bool any;
	int ret;

	info->addr_format = addrs->format;
	info->src_addrlen = addrs->format == FI_ADDR_STR ?
			    SHIM_ADDR_STRLEN : sizeof(struct kfab_addr);
	if (addrs->has_src) {
		any = addrs->src.family == KFAB_ADDR_UNSPEC && !addrs->src.ep;
		ret = shim_info_dup_addr(&addrs->src, addrs->format, any,
					 &info->src_addr,
					 &info->src_addrlen);
		if (ret)
			return ret;
	}
	if (addrs->has_dest)
		return shim_info_dup_addr(&addrs->dest, addrs->format, false,
					  &info->dest_addr,
					  &info->dest_addrlen);
	return 0;
}
