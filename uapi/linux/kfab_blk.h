/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * The wire protocol of kfab_blk, the sample block driver of kfab's
 * in-kernel API, and its server tools/kfab-blk-server
 * (Documentation/kfab_blk.rst).
 *
 * The driver sends one message (untagged) per block request: a struct
 * kfab_blk_req, followed for a write by the data.  The server answers with
 * one tagged message whose tag is the request's @tag: the data of a read
 * (nothing for the other operations), with the status as remote CQ data
 * (0, or a positive errno).  Ordering is FI_ORDER_SAS: nothing else.
 */
#ifndef _UAPI_LINUX_KFAB_BLK_H
#define _UAPI_LINUX_KFAB_BLK_H

#include <linux/types.h>
#include <linux/kfab.h>

#define KFAB_BLK_MAGIC		0x6b66626bU	/* "kfbk" */

/* Largest data of one request: a request and its header stay eager. */
#define KFAB_BLK_MAX_DATA	(60 * 1024)

enum kfab_blk_op {
	KFAB_BLK_OP_READ = 1,
	KFAB_BLK_OP_WRITE = 2,
	KFAB_BLK_OP_FLUSH = 3,
	KFAB_BLK_OP_INFO = 4,	/* the answer's data: struct kfab_blk_info */
};

/**
 * struct kfab_blk_req - the header of a request
 * @magic: KFAB_BLK_MAGIC
 * @op: enum kfab_blk_op
 * @__reserved: 0
 * @tag: the tag of the answer
 * @offset: bytes from the start of the device
 * @len: bytes to read or write (the write's data follows the header)
 * @__reserved2: 0
 * @client: the sender's address (fi_getname()'s bytes), for a server
 *	whose AV does not hold it yet
 */
struct kfab_blk_req {
	__u32 magic;
	__u16 op;
	__u16 __reserved;
	__u64 tag;
	__u64 offset;
	__u32 len;
	__u32 __reserved2;
	struct kfab_addr client;
};

/* The answer to KFAB_BLK_OP_INFO */
struct kfab_blk_info {
	__u64 size;		/* bytes */
	__u32 block_size;	/* bytes, a power of two from 512 to 4096 */
	__u32 __reserved;
};

#endif /* _UAPI_LINUX_KFAB_BLK_H */
