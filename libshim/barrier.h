/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libshim: the memory barriers of the memory kfab shares with the kernel
 * (CQ rings, counters, AV tables).  The one place they live: every access to
 * shared memory that orders anything goes through these, and each use says
 * beside it which kernel barrier it pairs with.
 *
 * They are the compiler's __atomic builtins, which on x86-64 and arm64 match
 * the kernel's smp_load_acquire()/smp_store_release()/smp_mb().
 */
#ifndef SHIM_BARRIER_H
#define SHIM_BARRIER_H

#include <stdint.h>

/* READ_ONCE()/WRITE_ONCE(): one untorn access the compiler cannot fuse. */
#define shim_read_once(p)	__atomic_load_n((p), __ATOMIC_RELAXED)
#define shim_write_once(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* smp_load_acquire()/smp_store_release() */
#define shim_load_acquire(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define shim_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* smp_rmb() and smp_mb() */
#define shim_smp_rmb()		__atomic_thread_fence(__ATOMIC_ACQUIRE)
#define shim_smp_mb()		__atomic_thread_fence(__ATOMIC_SEQ_CST)

#endif /* SHIM_BARRIER_H */
