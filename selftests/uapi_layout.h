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

KFAB_CHECK_SIZE(kfab_addr, 16);
KFAB_CHECK_OFF(kfab_addr, family, 0);
KFAB_CHECK_OFF(kfab_addr, __reserved, 2);
KFAB_CHECK_OFF(kfab_addr, node, 4);
KFAB_CHECK_OFF(kfab_addr, ep, 8);

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
KFAB_CHECK_OFF(kfab_av_open, out_mmap_offset, 80);
KFAB_CHECK_OFF(kfab_av_open, out_mmap_size, 88);
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

KFAB_CHECK_SIZE(kfab_av_entry, 32);
KFAB_CHECK_OFF(kfab_av_entry, seq, 0);
KFAB_CHECK_OFF(kfab_av_entry, flags, 4);
KFAB_CHECK_OFF(kfab_av_entry, addr, 8);
KFAB_CHECK_OFF(kfab_av_entry, __reserved, 24);

KFAB_CHECK_SIZE(kfab_av_header, 64);
KFAB_CHECK_OFF(kfab_av_header, capacity, 0);
KFAB_CHECK_OFF(kfab_av_header, used, 4);
KFAB_CHECK_OFF(kfab_av_header, entry_size, 8);
KFAB_CHECK_OFF(kfab_av_header, entries_offset, 12);
KFAB_CHECK_OFF(kfab_av_header, generation, 16);
KFAB_CHECK_OFF(kfab_av_header, __reserved, 24);

KFAB_CHECK_SIZE(kfab_test_fault, 16);
KFAB_CHECK_OFF(kfab_test_fault, size, 0);
KFAB_CHECK_OFF(kfab_test_fault, point, 4);
KFAB_CHECK_OFF(kfab_test_fault, nth, 8);
KFAB_CHECK_OFF(kfab_test_fault, out_remaining, 12);
KFAB_CHECK_CMD(KFAB_IOC_TEST_FAULT, kfab_test_fault);

#endif /* KFAB_UAPI_LAYOUT_H */
