/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kfab's tracepoints: the decision points of a message's life
 * (Documentation/netlink.rst, "Tracepoints", has an example).
 *
 *   kfab_post        a send or receive accepted from a submission ring
 *   kfab_match       a message met a posted receive
 *   kfab_unexpected  a message found no receive and waits (eager: copied
 *                    into the kernel; else pinned where the sender has it)
 *   kfab_copy        bytes copied between a pinned buffer and another
 *   kfab_complete    a request of an endpoint ended well
 *   kfab_error       a request of an endpoint ended with an error
 *
 * Endpoints are named by their number (kfab_addr.ep, EP_NUM over netlink).
 * CREATE_TRACE_POINTS is defined in trace.c only.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kfab

#if !defined(KFAB_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define KFAB_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(kfab_post,
	TP_PROTO(u64 ep, u8 opcode, u64 context, u64 len, u64 tag),
	TP_ARGS(ep, opcode, context, len, tag),
	TP_STRUCT__entry(
		__field(u64, ep)
		__field(u8, opcode)
		__field(u64, context)
		__field(u64, len)
		__field(u64, tag)
	),
	TP_fast_assign(
		__entry->ep = ep;
		__entry->opcode = opcode;
		__entry->context = context;
		__entry->len = len;
		__entry->tag = tag;
	),
	TP_printk("ep=%llu op=%u context=0x%llx len=%llu tag=0x%llx",
		  __entry->ep, __entry->opcode, __entry->context, __entry->len,
		  __entry->tag)
);

TRACE_EVENT(kfab_match,
	TP_PROTO(u64 ep, u64 context, u64 tag, size_t len),
	TP_ARGS(ep, context, tag, len),
	TP_STRUCT__entry(
		__field(u64, ep)
		__field(u64, context)
		__field(u64, tag)
		__field(size_t, len)
	),
	TP_fast_assign(
		__entry->ep = ep;
		__entry->context = context;
		__entry->tag = tag;
		__entry->len = len;
	),
	TP_printk("ep=%llu context=0x%llx tag=0x%llx len=%zu", __entry->ep,
		  __entry->context, __entry->tag, __entry->len)
);

TRACE_EVENT(kfab_unexpected,
	TP_PROTO(u64 ep, u64 tag, size_t len, int eager),
	TP_ARGS(ep, tag, len, eager),
	TP_STRUCT__entry(
		__field(u64, ep)
		__field(u64, tag)
		__field(size_t, len)
		__field(u8, eager)
	),
	TP_fast_assign(
		__entry->ep = ep;
		__entry->tag = tag;
		__entry->len = len;
		__entry->eager = eager;
	),
	TP_printk("ep=%llu tag=0x%llx len=%zu %s", __entry->ep, __entry->tag,
		  __entry->len, __entry->eager ? "eager" : "rendezvous")
);

TRACE_EVENT(kfab_copy,
	TP_PROTO(size_t off, size_t len, int into_buf),
	TP_ARGS(off, len, into_buf),
	TP_STRUCT__entry(
		__field(size_t, off)
		__field(size_t, len)
		__field(u8, into_buf)
	),
	TP_fast_assign(
		__entry->off = off;
		__entry->len = len;
		__entry->into_buf = into_buf;
	),
	TP_printk("%s off=%zu len=%zu", __entry->into_buf ? "in" : "out",
		  __entry->off, __entry->len)
);

DECLARE_EVENT_CLASS(kfab_end,
	TP_PROTO(u64 ep, int dir, u64 context, u64 len, int status),
	TP_ARGS(ep, dir, context, len, status),
	TP_STRUCT__entry(
		__field(u64, ep)
		__field(int, dir)
		__field(u64, context)
		__field(u64, len)
		__field(int, status)
	),
	TP_fast_assign(
		__entry->ep = ep;
		__entry->dir = dir;
		__entry->context = context;
		__entry->len = len;
		__entry->status = status;
	),
	TP_printk("ep=%llu %s context=0x%llx len=%llu status=%d",
		  __entry->ep, __entry->dir ? "rx" : "tx", __entry->context,
		  __entry->len, __entry->status)
);

DEFINE_EVENT(kfab_end, kfab_complete,
	TP_PROTO(u64 ep, int dir, u64 context, u64 len, int status),
	TP_ARGS(ep, dir, context, len, status)
);

DEFINE_EVENT(kfab_end, kfab_error,
	TP_PROTO(u64 ep, int dir, u64 context, u64 len, int status),
	TP_ARGS(ep, dir, context, len, status)
);

#endif /* KFAB_TRACE_H */

/* An out-of-tree module's trace header sits beside its sources. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
