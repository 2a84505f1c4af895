/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Layout of every struct in uapi/linux/kfab.h, checked at compile time by
 * both the C and the C++ build of the host-side uapi test.  A change here is
 * an ABI change: sizes and offsets must never move, structs only grow.
 */
#ifndef KFAB_UAPI_LAYOUT_H
#define KFAB_UAPI_LAYOUT_H

#include <stddef.h>
#include <linux/kfab.h>
#include <linux/kfab_blk.h>
#include <linux/kfab_netlink.h>

#ifdef __cplusplus
#define KFAB_STATIC_ASSERT(e) static_assert(e, #e)
#else
#define KFAB_STATIC_ASSERT(e) _Static_assert(e, #e)
#endif

#define KFAB_CHECK_SIZE(s, n) KFAB_STATIC_ASSERT(sizeof(struct s) == (n))
#define KFAB_CHECK_OFF(s, m, n) KFAB_STATIC_ASSERT(offsetof(struct s, m) == (n))
/* The command number encodes the first version's size. */
#define KFAB_CHECK_CMD(cmd, s) KFAB_STATIC_ASSERT(_IOC_SIZE(cmd) == sizeof(struct s))

KFAB_CHECK_SIZE(kfab_query, 32);
KFAB_CHECK_OFF(kfab_query, size, 0);
KFAB_CHECK_OFF(kfab_query, flags, 4);
KFAB_CHECK_OFF(kfab_query, abi_version, 8);
KFAB_CHECK_OFF(kfab_query, features, 12);
KFAB_CHECK_OFF(kfab_query, max_objects, 16);
KFAB_CHECK_OFF(kfab_query, max_ioctl_size, 20);
KFAB_CHECK_OFF(kfab_query, module_version, 24);
KFAB_CHECK_OFF(kfab_query, __reserved, 28);
KFAB_CHECK_CMD(KFAB_IOC_QUERY, kfab_query);

KFAB_CHECK_SIZE(kfab_destroy, 8);
KFAB_CHECK_OFF(kfab_destroy, size, 0);
KFAB_CHECK_OFF(kfab_destroy, id, 4);
KFAB_CHECK_CMD(KFAB_IOC_DESTROY, kfab_destroy);

KFAB_CHECK_SIZE(kfab_domain_alloc, 16);
KFAB_CHECK_OFF(kfab_domain_alloc, size, 0);
KFAB_CHECK_OFF(kfab_domain_alloc, flags, 4);
KFAB_CHECK_OFF(kfab_domain_alloc, out_domain_id, 8);
KFAB_CHECK_OFF(kfab_domain_alloc, __reserved, 12);
KFAB_CHECK_CMD(KFAB_IOC_DOMAIN_ALLOC, kfab_domain_alloc);

KFAB_CHECK_SIZE(kfab_mmap, 16);
KFAB_CHECK_OFF(kfab_mmap, offset, 0);
KFAB_CHECK_OFF(kfab_mmap, size, 8);

KFAB_CHECK_SIZE(kfab_sq_layout, 40);
KFAB_CHECK_OFF(kfab_sq_layout, region, 0);
KFAB_CHECK_OFF(kfab_sq_layout, entries, 16);
KFAB_CHECK_OFF(kfab_sq_layout, entry_size, 20);
KFAB_CHECK_OFF(kfab_sq_layout, off_tail, 24);
KFAB_CHECK_OFF(kfab_sq_layout, off_head, 28);
KFAB_CHECK_OFF(kfab_sq_layout, off_entries, 32);
KFAB_CHECK_OFF(kfab_sq_layout, off_flags, 36);

KFAB_CHECK_SIZE(kfab_doorbell, 16);
KFAB_CHECK_OFF(kfab_doorbell, flags, 4);
KFAB_CHECK_OFF(kfab_doorbell, obj_id, 8);
KFAB_CHECK_OFF(kfab_doorbell, out_done, 12);
KFAB_CHECK_CMD(KFAB_IOC_DOORBELL, kfab_doorbell);

KFAB_CHECK_SIZE(kfab_cancel, 24);
KFAB_CHECK_OFF(kfab_cancel, flags, 4);
KFAB_CHECK_OFF(kfab_cancel, obj_id, 8);
KFAB_CHECK_OFF(kfab_cancel, __reserved, 12);
KFAB_CHECK_OFF(kfab_cancel, context, 16);
KFAB_CHECK_CMD(KFAB_IOC_CANCEL, kfab_cancel);

KFAB_CHECK_SIZE(kfab_sq_watch, 16);
KFAB_CHECK_OFF(kfab_sq_watch, flags, 4);
KFAB_CHECK_OFF(kfab_sq_watch, obj_id, 8);
KFAB_CHECK_OFF(kfab_sq_watch, __reserved, 12);
KFAB_CHECK_CMD(KFAB_IOC_SQ_WATCH, kfab_sq_watch);

KFAB_CHECK_SIZE(kfab_sq_poll, 32);
KFAB_CHECK_OFF(kfab_sq_poll, flags, 4);
KFAB_CHECK_OFF(kfab_sq_poll, idle_us, 8);
KFAB_CHECK_OFF(kfab_sq_poll, __reserved, 12);
KFAB_CHECK_OFF(kfab_sq_poll, out_done, 16);
KFAB_CHECK_OFF(kfab_sq_poll, out_parks, 24);
KFAB_CHECK_CMD(KFAB_IOC_SQ_POLL, kfab_sq_poll);

KFAB_CHECK_SIZE(kfab_addr, 32);
KFAB_CHECK_OFF(kfab_addr, family, 0);
KFAB_CHECK_OFF(kfab_addr, __reserved, 1);
KFAB_CHECK_OFF(kfab_addr, port, 2);
KFAB_CHECK_OFF(kfab_addr, incarnation, 4);
KFAB_CHECK_OFF(kfab_addr, node, 8);
KFAB_CHECK_OFF(kfab_addr, ep, 24);

KFAB_CHECK_SIZE(kfab_av_open, 96);
KFAB_CHECK_OFF(kfab_av_open, size, 0);
KFAB_CHECK_OFF(kfab_av_open, flags, 4);
KFAB_CHECK_OFF(kfab_av_open, domain_id, 8);
KFAB_CHECK_OFF(kfab_av_open, type, 12);
KFAB_CHECK_OFF(kfab_av_open, count, 16);
KFAB_CHECK_OFF(kfab_av_open, mode, 20);
KFAB_CHECK_OFF(kfab_av_open, uid, 24);
KFAB_CHECK_OFF(kfab_av_open, gid, 28);
KFAB_CHECK_OFF(kfab_av_open, __reserved, 32);
KFAB_CHECK_OFF(kfab_av_open, out_av_id, 36);
KFAB_CHECK_OFF(kfab_av_open, name, 40);
KFAB_CHECK_OFF(kfab_av_open, map_addr, 48);
KFAB_CHECK_OFF(kfab_av_open, out_type, 56);
KFAB_CHECK_OFF(kfab_av_open, out_count, 60);
KFAB_CHECK_OFF(kfab_av_open, out_flags, 64);
KFAB_CHECK_OFF(kfab_av_open, __reserved2, 68);
KFAB_CHECK_OFF(kfab_av_open, out_map_addr, 72);
KFAB_CHECK_OFF(kfab_av_open, out_region, 80);
KFAB_CHECK_CMD(KFAB_IOC_AV_OPEN, kfab_av_open);

KFAB_CHECK_SIZE(kfab_av_insert, 48);
KFAB_CHECK_OFF(kfab_av_insert, size, 0);
KFAB_CHECK_OFF(kfab_av_insert, flags, 4);
KFAB_CHECK_OFF(kfab_av_insert, av_id, 8);
KFAB_CHECK_OFF(kfab_av_insert, count, 12);
KFAB_CHECK_OFF(kfab_av_insert, addrs, 16);
KFAB_CHECK_OFF(kfab_av_insert, indices, 24);
KFAB_CHECK_OFF(kfab_av_insert, errors, 32);
KFAB_CHECK_OFF(kfab_av_insert, out_inserted, 40);
KFAB_CHECK_OFF(kfab_av_insert, __reserved, 44);
KFAB_CHECK_CMD(KFAB_IOC_AV_INSERT, kfab_av_insert);

KFAB_CHECK_SIZE(kfab_av_remove, 24);
KFAB_CHECK_OFF(kfab_av_remove, av_id, 8);
KFAB_CHECK_OFF(kfab_av_remove, count, 12);
KFAB_CHECK_OFF(kfab_av_remove, indices, 16);
KFAB_CHECK_CMD(KFAB_IOC_AV_REMOVE, kfab_av_remove);

KFAB_CHECK_SIZE(kfab_av_unlink, 16);
KFAB_CHECK_OFF(kfab_av_unlink, flags, 4);
KFAB_CHECK_OFF(kfab_av_unlink, name, 8);
KFAB_CHECK_CMD(KFAB_IOC_AV_UNLINK, kfab_av_unlink);

KFAB_CHECK_SIZE(kfab_av_entry, 48);
KFAB_CHECK_OFF(kfab_av_entry, seq, 0);
KFAB_CHECK_OFF(kfab_av_entry, flags, 4);
KFAB_CHECK_OFF(kfab_av_entry, addr, 8);
KFAB_CHECK_OFF(kfab_av_entry, __reserved, 40);

KFAB_CHECK_SIZE(kfab_av_header, 64);
KFAB_CHECK_OFF(kfab_av_header, capacity, 0);
KFAB_CHECK_OFF(kfab_av_header, used, 4);
KFAB_CHECK_OFF(kfab_av_header, entry_size, 8);
KFAB_CHECK_OFF(kfab_av_header, entries_offset, 12);
KFAB_CHECK_OFF(kfab_av_header, generation, 16);
KFAB_CHECK_OFF(kfab_av_header, __reserved, 24);

KFAB_CHECK_SIZE(kfab_test_fault, 32);
KFAB_CHECK_OFF(kfab_test_fault, size, 0);
KFAB_CHECK_OFF(kfab_test_fault, flags, 4);
KFAB_CHECK_OFF(kfab_test_fault, point, 8);
KFAB_CHECK_OFF(kfab_test_fault, nth, 12);
KFAB_CHECK_OFF(kfab_test_fault, ctx_id, 16);
KFAB_CHECK_OFF(kfab_test_fault, out_ctx_id, 20);
KFAB_CHECK_OFF(kfab_test_fault, out_remaining, 24);
KFAB_CHECK_OFF(kfab_test_fault, out_fired, 28);
KFAB_CHECK_CMD(KFAB_IOC_TEST_FAULT, kfab_test_fault);
/* Test-only commands: their own range, 0xf0-0xff, after every other. */
KFAB_STATIC_ASSERT(KFAB_CMD_TEST_BASE == 0xf0);
KFAB_STATIC_ASSERT(_IOC_NR(KFAB_IOC_TEST_FAULT) == 0xf0);
KFAB_STATIC_ASSERT(_IOC_NR(KFAB_IOC_TEST_CQ_POST) == 0xf1);
KFAB_STATIC_ASSERT(KFAB_FAULT_ALLOC == 0 && KFAB_FAULT_COPY_OUT == 1 &&
		   KFAB_FAULT_LOSE == 2 && KFAB_FAULT_NOREPLY == 3);
KFAB_STATIC_ASSERT(KFAB_TEST_FAULT_PEEK == 1);

/* Completion queues and counters: the ring layouts too, though user space
 * finds them through the offsets CQ_OPEN and CNTR_OPEN return. */
KFAB_CHECK_SIZE(kfab_cq_entry, 64);
KFAB_CHECK_OFF(kfab_cq_entry, op_context, 0);
KFAB_CHECK_OFF(kfab_cq_entry, flags, 8);
KFAB_CHECK_OFF(kfab_cq_entry, len, 16);
KFAB_CHECK_OFF(kfab_cq_entry, buf, 24);
KFAB_CHECK_OFF(kfab_cq_entry, data, 32);
KFAB_CHECK_OFF(kfab_cq_entry, tag, 40);
KFAB_CHECK_OFF(kfab_cq_entry, src_addr, 48);
KFAB_CHECK_OFF(kfab_cq_entry, cookie, 56);

KFAB_CHECK_SIZE(kfab_cq_ring, 64);
KFAB_CHECK_OFF(kfab_cq_ring, tail, 0);
KFAB_CHECK_OFF(kfab_cq_ring, flags, 4);
KFAB_CHECK_OFF(kfab_cq_ring, overflow, 8);
KFAB_CHECK_OFF(kfab_cq_ring, err_count, 12);
KFAB_CHECK_OFF(kfab_cq_ring, entries, 16);
KFAB_CHECK_OFF(kfab_cq_ring, mask, 20);
KFAB_CHECK_OFF(kfab_cq_ring, entry_size, 24);
KFAB_CHECK_OFF(kfab_cq_ring, __reserved, 28);

KFAB_CHECK_SIZE(kfab_cq_consumer, 64);
KFAB_CHECK_OFF(kfab_cq_consumer, head, 0);
KFAB_CHECK_OFF(kfab_cq_consumer, armed, 4);
KFAB_CHECK_OFF(kfab_cq_consumer, __reserved, 8);

KFAB_CHECK_SIZE(kfab_cq_layout, 72);
KFAB_CHECK_OFF(kfab_cq_layout, ring, 0);
KFAB_CHECK_OFF(kfab_cq_layout, cons, 16);
KFAB_CHECK_OFF(kfab_cq_layout, entries, 32);
KFAB_CHECK_OFF(kfab_cq_layout, entry_size, 36);
KFAB_CHECK_OFF(kfab_cq_layout, off_tail, 40);
KFAB_CHECK_OFF(kfab_cq_layout, off_flags, 44);
KFAB_CHECK_OFF(kfab_cq_layout, off_overflow, 48);
KFAB_CHECK_OFF(kfab_cq_layout, off_err_count, 52);
KFAB_CHECK_OFF(kfab_cq_layout, off_entries, 56);
KFAB_CHECK_OFF(kfab_cq_layout, off_head, 60);
KFAB_CHECK_OFF(kfab_cq_layout, off_armed, 64);
KFAB_CHECK_OFF(kfab_cq_layout, __reserved, 68);

KFAB_CHECK_SIZE(kfab_cq_open, 96);
KFAB_CHECK_OFF(kfab_cq_open, size, 0);
KFAB_CHECK_OFF(kfab_cq_open, flags, 4);
KFAB_CHECK_OFF(kfab_cq_open, domain_id, 8);
KFAB_CHECK_OFF(kfab_cq_open, entries, 12);
KFAB_CHECK_OFF(kfab_cq_open, eventfd, 16);
KFAB_CHECK_OFF(kfab_cq_open, out_cq_id, 20);
KFAB_CHECK_OFF(kfab_cq_open, out_ring, 24);
KFAB_CHECK_CMD(KFAB_IOC_CQ_OPEN, kfab_cq_open);

KFAB_CHECK_SIZE(kfab_cq_drain, 16);
KFAB_CHECK_OFF(kfab_cq_drain, size, 0);
KFAB_CHECK_OFF(kfab_cq_drain, flags, 4);
KFAB_CHECK_OFF(kfab_cq_drain, cq_id, 8);
KFAB_CHECK_OFF(kfab_cq_drain, out_overflow, 12);
KFAB_CHECK_CMD(KFAB_IOC_CQ_DRAIN, kfab_cq_drain);

KFAB_CHECK_SIZE(kfab_cq_readerr, 112);
KFAB_CHECK_OFF(kfab_cq_readerr, size, 0);
KFAB_CHECK_OFF(kfab_cq_readerr, flags, 4);
KFAB_CHECK_OFF(kfab_cq_readerr, cq_id, 8);
KFAB_CHECK_OFF(kfab_cq_readerr, err_data_size, 12);
KFAB_CHECK_OFF(kfab_cq_readerr, err_data, 16);
KFAB_CHECK_OFF(kfab_cq_readerr, out_entry, 24);
KFAB_CHECK_OFF(kfab_cq_readerr, out_olen, 88);
KFAB_CHECK_OFF(kfab_cq_readerr, out_err, 96);
KFAB_CHECK_OFF(kfab_cq_readerr, out_prov_errno, 100);
KFAB_CHECK_OFF(kfab_cq_readerr, out_err_data_len, 104);
KFAB_CHECK_OFF(kfab_cq_readerr, __reserved, 108);
KFAB_CHECK_CMD(KFAB_IOC_CQ_READERR, kfab_cq_readerr);

KFAB_CHECK_SIZE(kfab_cq_help, 32);
KFAB_CHECK_OFF(kfab_cq_help, size, 0);
KFAB_CHECK_OFF(kfab_cq_help, flags, 4);
KFAB_CHECK_OFF(kfab_cq_help, cq_id, 8);
KFAB_CHECK_OFF(kfab_cq_help, __reserved, 12);
KFAB_CHECK_OFF(kfab_cq_help, out_chunks, 16);
KFAB_CHECK_OFF(kfab_cq_help, out_bytes, 24);
KFAB_CHECK_CMD(KFAB_IOC_CQ_HELP, kfab_cq_help);

KFAB_CHECK_SIZE(kfab_cntr_values, 64);
KFAB_CHECK_OFF(kfab_cntr_values, seq, 0);
KFAB_CHECK_OFF(kfab_cntr_values, __reserved, 4);
KFAB_CHECK_OFF(kfab_cntr_values, value, 8);
KFAB_CHECK_OFF(kfab_cntr_values, err, 16);
KFAB_CHECK_OFF(kfab_cntr_values, __reserved2, 24);

KFAB_CHECK_SIZE(kfab_cntr_open, 48);
KFAB_CHECK_OFF(kfab_cntr_open, size, 0);
KFAB_CHECK_OFF(kfab_cntr_open, flags, 4);
KFAB_CHECK_OFF(kfab_cntr_open, domain_id, 8);
KFAB_CHECK_OFF(kfab_cntr_open, eventfd, 12);
KFAB_CHECK_OFF(kfab_cntr_open, out_cntr_id, 16);
KFAB_CHECK_OFF(kfab_cntr_open, out_off_seq, 20);
KFAB_CHECK_OFF(kfab_cntr_open, out_off_value, 24);
KFAB_CHECK_OFF(kfab_cntr_open, out_off_err, 28);
KFAB_CHECK_OFF(kfab_cntr_open, out_region, 32);
KFAB_CHECK_CMD(KFAB_IOC_CNTR_OPEN, kfab_cntr_open);

KFAB_CHECK_SIZE(kfab_cntr_update, 40);
KFAB_CHECK_OFF(kfab_cntr_update, size, 0);
KFAB_CHECK_OFF(kfab_cntr_update, flags, 4);
KFAB_CHECK_OFF(kfab_cntr_update, cntr_id, 8);
KFAB_CHECK_OFF(kfab_cntr_update, op, 12);
KFAB_CHECK_OFF(kfab_cntr_update, value, 16);
KFAB_CHECK_OFF(kfab_cntr_update, out_value, 24);
KFAB_CHECK_OFF(kfab_cntr_update, out_err, 32);
KFAB_CHECK_CMD(KFAB_IOC_CNTR_UPDATE, kfab_cntr_update);

KFAB_CHECK_SIZE(kfab_cntr_wait, 48);
KFAB_CHECK_OFF(kfab_cntr_wait, size, 0);
KFAB_CHECK_OFF(kfab_cntr_wait, flags, 4);
KFAB_CHECK_OFF(kfab_cntr_wait, cntr_id, 8);
KFAB_CHECK_OFF(kfab_cntr_wait, timeout_ms, 12);
KFAB_CHECK_OFF(kfab_cntr_wait, threshold, 16);
KFAB_CHECK_OFF(kfab_cntr_wait, err, 24);
KFAB_CHECK_OFF(kfab_cntr_wait, out_value, 32);
KFAB_CHECK_OFF(kfab_cntr_wait, out_err, 40);
KFAB_CHECK_CMD(KFAB_IOC_CNTR_WAIT, kfab_cntr_wait);

/* The receive flags of FI_PEEK, FI_CLAIM and FI_DISCARD */
KFAB_STATIC_ASSERT(KFAB_SQE_PEEK == 1 << 6);
KFAB_STATIC_ASSERT(KFAB_SQE_CLAIM == 1 << 7);
KFAB_STATIC_ASSERT(KFAB_SQE_DISCARD == 1 << 8);

KFAB_CHECK_SIZE(kfab_test_cq_post, 112);
KFAB_CHECK_OFF(kfab_test_cq_post, size, 0);
KFAB_CHECK_OFF(kfab_test_cq_post, flags, 4);
KFAB_CHECK_OFF(kfab_test_cq_post, cq_id, 8);
KFAB_CHECK_OFF(kfab_test_cq_post, cntr_id, 12);
KFAB_CHECK_OFF(kfab_test_cq_post, count, 16);
KFAB_CHECK_OFF(kfab_test_cq_post, err, 20);
KFAB_CHECK_OFF(kfab_test_cq_post, context, 24);
KFAB_CHECK_OFF(kfab_test_cq_post, entry_flags, 32);
KFAB_CHECK_OFF(kfab_test_cq_post, len, 40);
KFAB_CHECK_OFF(kfab_test_cq_post, buf, 48);
KFAB_CHECK_OFF(kfab_test_cq_post, data, 56);
KFAB_CHECK_OFF(kfab_test_cq_post, tag, 64);
KFAB_CHECK_OFF(kfab_test_cq_post, src_addr, 72);
KFAB_CHECK_OFF(kfab_test_cq_post, olen, 80);
KFAB_CHECK_OFF(kfab_test_cq_post, prov_errno, 88);
KFAB_CHECK_OFF(kfab_test_cq_post, err_data_size, 92);
KFAB_CHECK_OFF(kfab_test_cq_post, err_data, 96);
KFAB_CHECK_OFF(kfab_test_cq_post, out_posted, 104);
KFAB_CHECK_OFF(kfab_test_cq_post, out_overflowed, 108);
KFAB_CHECK_CMD(KFAB_IOC_TEST_CQ_POST, kfab_test_cq_post);

KFAB_CHECK_SIZE(kfab_ep_open, 136);
KFAB_CHECK_OFF(kfab_ep_open, domain_id, 8);
KFAB_CHECK_OFF(kfab_ep_open, sq_entries, 16);
KFAB_CHECK_OFF(kfab_ep_open, out_ep_id, 20);
KFAB_CHECK_OFF(kfab_ep_open, src, 24);
KFAB_CHECK_OFF(kfab_ep_open, out_addr, 56);
KFAB_CHECK_OFF(kfab_ep_open, out_sq, 88);
KFAB_CHECK_OFF(kfab_ep_open, block_ep_id, 128);
KFAB_CHECK_OFF(kfab_ep_open, block_index, 132);
KFAB_CHECK_CMD(KFAB_IOC_EP_OPEN, kfab_ep_open);
KFAB_CHECK_SIZE(kfab_ep_bind, 16);
KFAB_CHECK_OFF(kfab_ep_bind, obj_id, 12);
KFAB_CHECK_CMD(KFAB_IOC_EP_BIND, kfab_ep_bind);
KFAB_CHECK_SIZE(kfab_ep_enable, 16);
KFAB_CHECK_CMD(KFAB_IOC_EP_ENABLE, kfab_ep_enable);
KFAB_CHECK_SIZE(kfab_srx_open, 64);
KFAB_CHECK_OFF(kfab_srx_open, domain_id, 8);
KFAB_CHECK_OFF(kfab_srx_open, sq_entries, 12);
KFAB_CHECK_OFF(kfab_srx_open, out_srx_id, 16);
KFAB_CHECK_OFF(kfab_srx_open, __reserved, 20);
KFAB_CHECK_OFF(kfab_srx_open, out_sq, 24);
KFAB_CHECK_CMD(KFAB_IOC_SRX_OPEN, kfab_srx_open);

KFAB_CHECK_SIZE(kfab_rx_buffered, 48);
KFAB_CHECK_OFF(kfab_rx_buffered, obj_id, 8);
KFAB_CHECK_OFF(kfab_rx_buffered, limit, 12);
KFAB_CHECK_OFF(kfab_rx_buffered, slots, 16);
KFAB_CHECK_OFF(kfab_rx_buffered, out_limit, 20);
KFAB_CHECK_OFF(kfab_rx_buffered, out_slots, 24);
KFAB_CHECK_OFF(kfab_rx_buffered, out_stride, 28);
KFAB_CHECK_OFF(kfab_rx_buffered, out_region, 32);
KFAB_CHECK_OFF(kfab_rx_buffered, cookie, 40);
KFAB_CHECK_CMD(KFAB_IOC_RX_BUFFERED, kfab_rx_buffered);
KFAB_CHECK_SIZE(kfab_sqe, 128);
KFAB_CHECK_OFF(kfab_sqe, rx_index, 2);
KFAB_CHECK_OFF(kfab_sqe, flags, 4);
KFAB_CHECK_OFF(kfab_sqe, context, 8);
KFAB_CHECK_OFF(kfab_sqe, addr, 16);
KFAB_CHECK_OFF(kfab_sqe, tag, 24);
KFAB_CHECK_OFF(kfab_sqe, ignore, 32);
KFAB_CHECK_OFF(kfab_sqe, data, 40);
KFAB_CHECK_OFF(kfab_sqe, len, 48);
KFAB_CHECK_OFF(kfab_sqe, iov, 64);
KFAB_CHECK_OFF(kfab_sqe, inline_data, 64);

KFAB_CHECK_SIZE(kfab_net_listen, 72);
KFAB_CHECK_OFF(kfab_net_listen, flags, 4);
KFAB_CHECK_OFF(kfab_net_listen, addr, 8);
KFAB_CHECK_OFF(kfab_net_listen, out_addr, 40);
KFAB_CHECK_CMD(KFAB_IOC_NET_LISTEN, kfab_net_listen);
KFAB_CHECK_SIZE(kfab_net_allow, 32);
KFAB_CHECK_OFF(kfab_net_allow, flags, 4);
KFAB_CHECK_OFF(kfab_net_allow, prefix_len, 8);
KFAB_CHECK_OFF(kfab_net_allow, __reserved, 9);
KFAB_CHECK_OFF(kfab_net_allow, node, 16);
KFAB_CHECK_CMD(KFAB_IOC_NET_ALLOW, kfab_net_allow);

/*
 * uapi/linux/kfab_netlink.h: the family's numbers are its ABI, as struct
 * offsets are the ioctls'.  New ones only ever go at the end.
 */
#define KFAB_CHECK_NUM(name, n) KFAB_STATIC_ASSERT((name) == (n))
KFAB_CHECK_NUM(KFAB_GENL_VERSION, 1);
KFAB_CHECK_NUM(KFAB_NL_CMD_CTX_GET, 1);
KFAB_CHECK_NUM(KFAB_NL_CMD_OBJ_GET, 2);
KFAB_CHECK_NUM(KFAB_NL_CMD_AV_GET, 3);
KFAB_CHECK_NUM(KFAB_NL_CMD_AV_DEL, 4);
KFAB_CHECK_NUM(KFAB_NL_CMD_PEER_GET, 5);
KFAB_CHECK_NUM(KFAB_NL_CMD_STAT_GET, 6);
KFAB_CHECK_NUM(KFAB_NL_CMD_CTX_NEW, 7);
KFAB_CHECK_NUM(KFAB_NL_CMD_CTX_DEL, 8);
KFAB_CHECK_NUM(KFAB_NL_CMD_AV_NEW, 9);
KFAB_CHECK_NUM(KFAB_NL_CMD_AV_GONE, 10);
KFAB_CHECK_NUM(KFAB_NL_CMD_LISTEN_GET, 11);
KFAB_CHECK_NUM(KFAB_NL_CMD_ALLOW_GET, 12);
KFAB_CHECK_NUM(KFAB_NL_CMD_PEER_UP, 13);
KFAB_CHECK_NUM(KFAB_NL_CMD_PEER_DOWN, 14);
KFAB_CHECK_NUM(KFAB_NL_CMD_AV_CHANGED, 15);
KFAB_CHECK_NUM(KFAB_NL_CMD_LISTEN_ADD, 16);
KFAB_CHECK_NUM(KFAB_NL_CMD_LISTEN_DEL, 17);
KFAB_CHECK_NUM(KFAB_NL_CMD_ALLOW_ADD, 18);
KFAB_CHECK_NUM(KFAB_NL_CMD_ALLOW_DEL, 19);
KFAB_CHECK_NUM(KFAB_NL_CMD_LIMIT_GET, 20);
KFAB_CHECK_NUM(KFAB_NL_CMD_LIMIT_SET, 21);
KFAB_CHECK_NUM(KFAB_NL_CMD_ENGINE_GET, 22);
KFAB_CHECK_NUM(KFAB_NL_CMD_ENGINE_ADD, 23);
KFAB_CHECK_NUM(KFAB_NL_CMD_ENGINE_DEL, 24);
KFAB_CHECK_NUM(KFAB_NL_OBJ_DOMAIN, 1);
KFAB_CHECK_NUM(KFAB_NL_OBJ_SRX, 6);
KFAB_CHECK_NUM(KFAB_NL_PEER_IDLE, 0);
KFAB_CHECK_NUM(KFAB_NL_PEER_UP, 1);
KFAB_CHECK_NUM(KFAB_NL_PEER_CLOSED, 2);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PAD, 1);
KFAB_CHECK_NUM(KFAB_NL_ATTR_CTX_ID, 2);
KFAB_CHECK_NUM(KFAB_NL_ATTR_KERNEL, 10);
KFAB_CHECK_NUM(KFAB_NL_ATTR_OBJ_ID, 11);
KFAB_CHECK_NUM(KFAB_NL_ATTR_EP_RX_CQ_ID, 27);
KFAB_CHECK_NUM(KFAB_NL_ATTR_AV_SERIAL, 28);
KFAB_CHECK_NUM(KFAB_NL_ATTR_READ_ONLY, 37);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_NODE, 38);
KFAB_CHECK_NUM(KFAB_NL_ATTR_FAILURES, 47);
KFAB_CHECK_NUM(KFAB_NL_ATTR_STAT_CONTEXTS, 48);
KFAB_CHECK_NUM(KFAB_NL_ATTR_STAT_PEERS, 52);
KFAB_CHECK_NUM(KFAB_NL_ATTR_TX_ERRORS, 53);
KFAB_CHECK_NUM(KFAB_NL_ATTR_UNEXP_BYTES, 57);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_LOCAL_NODE, 58);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_LOCAL_PORT, 59);
KFAB_CHECK_NUM(KFAB_NL_ATTR_LISTEN_NODE, 60);
KFAB_CHECK_NUM(KFAB_NL_ATTR_LISTEN_PORT, 61);
KFAB_CHECK_NUM(KFAB_NL_ATTR_ALLOW_NODE, 62);
KFAB_CHECK_NUM(KFAB_NL_ATTR_ALLOW_PREFIX_LEN, 63);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PINNED_BYTES, 64);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PINNED_PEAK, 65);
KFAB_CHECK_NUM(KFAB_NL_ATTR_KBUF_BYTES, 66);
KFAB_CHECK_NUM(KFAB_NL_ATTR_UNEXP_MSGS, 67);
KFAB_CHECK_NUM(KFAB_NL_ATTR_UNEXP_TOTAL, 68);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_CONNECTED, 69);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_SESSION, 70);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_REMOTE_SESSION, 71);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_TX_SEQ, 72);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_RX_SEQ, 73);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_ACKED, 74);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_RESUMED, 75);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_RESENT, 76);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_CROSSED, 77);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_CREDIT, 78);
KFAB_CHECK_NUM(KFAB_NL_ATTR_PEER_OWED, 79);
KFAB_CHECK_NUM(KFAB_NL_ATTR_LIMIT_NAME, 80);
KFAB_CHECK_NUM(KFAB_NL_ATTR_LIMIT_VALUE, 81);
KFAB_CHECK_NUM(KFAB_NL_ATTR_LIMIT_MIN, 82);
KFAB_CHECK_NUM(KFAB_NL_ATTR_LIMIT_MAX, 83);
KFAB_CHECK_NUM(KFAB_NL_ATTR_ENGINE_NODE, 84);
KFAB_CHECK_NUM(KFAB_NL_ATTR_ENGINE_PREFIX_LEN, 85);
KFAB_CHECK_NUM(KFAB_NL_ATTR_ENGINE_RULE, 86);
KFAB_CHECK_NUM(KFAB_NL_ENGINE_AUTO, 0);
KFAB_CHECK_NUM(KFAB_NL_ENGINE_TCP, 1);
KFAB_CHECK_NUM(KFAB_NL_ENGINE_RDMA, 2);
KFAB_CHECK_NUM(KFAB_NL_ENGINE_RULES_MAX, 64);

/* uapi/linux/kfab_blk.h: the wire protocol of kfab_blk and its server */
KFAB_CHECK_SIZE(kfab_blk_req, 64);
KFAB_CHECK_OFF(kfab_blk_req, magic, 0);
KFAB_CHECK_OFF(kfab_blk_req, op, 4);
KFAB_CHECK_OFF(kfab_blk_req, __reserved, 6);
KFAB_CHECK_OFF(kfab_blk_req, tag, 8);
KFAB_CHECK_OFF(kfab_blk_req, offset, 16);
KFAB_CHECK_OFF(kfab_blk_req, len, 24);
KFAB_CHECK_OFF(kfab_blk_req, __reserved2, 28);
KFAB_CHECK_OFF(kfab_blk_req, client, 32);
KFAB_CHECK_SIZE(kfab_blk_info, 16);
KFAB_CHECK_OFF(kfab_blk_info, size, 0);
KFAB_CHECK_OFF(kfab_blk_info, block_size, 8);
KFAB_CHECK_OFF(kfab_blk_info, __reserved, 12);

#endif /* KFAB_UAPI_LAYOUT_H */
