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

KFAB_CHECK_SIZE(kfab_test_fault, 16);
KFAB_CHECK_OFF(kfab_test_fault, size, 0);
KFAB_CHECK_OFF(kfab_test_fault, point, 4);
KFAB_CHECK_OFF(kfab_test_fault, nth, 8);
KFAB_CHECK_OFF(kfab_test_fault, out_remaining, 12);
KFAB_CHECK_CMD(KFAB_IOC_TEST_FAULT, kfab_test_fault);

#endif /* KFAB_UAPI_LAYOUT_H */
