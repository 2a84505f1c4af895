/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The message engine's pieces (msg.c), for msg.c itself and for the
 * transports that bring messages from other nodes: what a message, a
 * posted receive and an unexpected message are, and the three ways a
 * message that reached its receive context goes on (matched, eager,
 * rendezvous).  msg.c's comments above each function say what it does.
 */
#ifndef KFAB_MSG_H
#define KFAB_MSG_H

#include "kfab.h"

/* The largest message (ep_attr->max_msg_size). */
#define KFAB_MSG_MAX		BIT_ULL(30)

/**
 * struct kfab_msg - a message as its receiver sees it: the envelope
 * @kind: KFAB_KIND_MSG or KFAB_KIND_TAGGED
 * @src: the sender's address
 * @tag: tagged: the tag
 * @data: with KFAB_SQE_REMOTE_CQ_DATA in @flags: the remote CQ data
 * @flags: the send's KFAB_SQE_*
 * @len: bytes of payload
 * @pin_cache: a local sender's file, whose kept pins a large payload may
 *	use (pincache.c); NULL for others
 */
struct kfab_msg {
	int kind;
	struct kfab_addr src;
	u64 tag;
	u64 data;
	u32 flags;
	size_t len;
	struct kfab_pin_cache *pin_cache;
};

/**
 * struct kfab_recv - a posted receive: a receive that waits for a message
 * @link: on its receive context's @posted list of its kind
 * @free: once done with: on its receive context's @free_recvs or
 *	@spare_recvs
 * @context: reported in its completions
 * @tag: tagged: the tag wanted
 * @ignore: tagged: the bits of @tag to ignore
 * @src: the only source taken (an index of the receive context's AV), or
 *	KFAB_CQ_ADDR_NOTAVAIL for any
 * @flags: the receive's KFAB_SQE_*
 * @base: the buffer's address, for completions
 * @len: bytes of buffer
 * @used: FI_MULTI_RECV: bytes taken so far
 * @min_free: FI_MULTI_RECV: the least free space the buffer keeps serving
 * @unpinned: small: nothing pinned (@buf empty), the message travels in
 *	the completion
 * @users: the poster's, and one per pull (peer.c) that writes into @buf
 * @buf: the pinned buffers (unless @unpinned)
 */
struct kfab_recv {
	union {
		struct list_head link;
		struct llist_node free;
	};
	refcount_t users;
	u64 context;
	u64 tag;
	u64 ignore;
	u64 src;
	u32 flags;
	u64 base;
	size_t len;
	size_t used;
	size_t min_free;
	bool unpinned;
	struct kfab_buf buf;
};

/**
 * struct kfab_unexp - a message no receive matched yet
 * @link: on its receive context's @unexpected list of its kind, or on
 *	@claimed
 * @msg: its envelope
 * @target: the endpoint it was sent to, whose CQ its receive completes
 *	on.  No reference: the endpoint's death takes its messages off the
 *	lists first (kfab_msg_detach()).
 * @claim_context: on the claimed list: the claimer's context
 * @kbuf: eager: the payload, in kernel memory
 * @buf: rendezvous: the sender's pinned buffers (or a kernel caller's)
 * @sender: rendezvous: the sending endpoint's core (a reference)
 * @sender_context: rendezvous: the send's context, for its completion
 * @remote: a message from another node: where it came from (peer.c
 *	owns it); its payload is in @kbuf, or still at the sender
 * @slot: buffered (FI_BUFFERED_RECV): its start in a slot of the receive
 *	context's region (bufrecv.c), the rest (if any) in @buf, or in
 *	@kbuf for one from another node (whole there: read past the slot); on
 *	@claimed with the slot's token as @claim_context.  @slot.token is
 *	0 for any other message.
 */
struct kfab_unexp {
	struct list_head link;
	struct kfab_msg msg;
	struct kfab_ep_core *target;
	u64 claim_context;
	void *kbuf;
	struct kfab_buf buf;
	struct kfab_ep_core *sender;
	u64 sender_context;
	struct kfab_remote *remote;
	struct kfab_bufrecv_slot slot;
};

/**
 * struct kfab_remote - where a message from another node came from
 * @peer: the node it came from (a reference)
 * @op: the sender's operation
 * @cost: the credit it holds at the sender
 * @gen: the peer's session it came in
 * @rts: its payload is still at the sender: a receive pulls it
 * @on_ack: a small message without FI_DELIVERY_COMPLETE: the sender
 *	completes it when its frame is acknowledged, and gets a RESULT only
 *	for an error
 * @lazy: KFAB_WIRE_LAZY: its credit goes back with the next frame
 * @told: the sender has had its RESULT, or needs none
 */
struct kfab_remote {
	struct kfab_peer *peer;
	u32 op;
	u32 cost;
	u32 gen;
	bool rts;
	bool on_ack;
	bool lazy;
	bool told;
};

/**
 * struct kfab_pull - a receive that takes a message from another node's
 *	pages: the data arrives later, straight into @recv's pages
 * @link: on a list of pulls to start, then in its peer's table
 * @id: its number in the peer's table (the DATA frames' @pull)
 * @target: the receiving endpoint (a reference)
 * @msg: the message's envelope
 * @src: the sender's index in the receiving AV
 * @recv: the receive whose pages take it (a user of it)
 * @at: where in @recv's buffer the message starts
 * @len: bytes taken (at most @msg.len)
 * @got: bytes arrived so far
 * @context: the receive's context
 * @flags: the receive's flags for the completion
 * @buf: the address reported in the completion
 * @remote: its origin (owned)
 * @slot_token: a buffered receive's pull of a message's first bytes
 *	(msg.c, kfab_unexp_remote_prefetch()): the token of the slot they
 *	go to, from @bounce, once here; 0 for a receive's pull
 * @bounce: the kernel memory @recv's pages are (vmalloc), or NULL: with
 *	@slot_token, or without for a receive that pinned nothing, whose
 *	completion then carries the bytes
 */
struct kfab_pull {
	struct list_head link;
	u32 id;
	struct kfab_ep_core *target;
	struct kfab_msg msg;
	u64 src;
	struct kfab_recv *recv;
	size_t at;
	size_t len;
	size_t got;
	u64 context;
	u32 flags;
	u64 buf;
	struct kfab_remote *remote;
	u64 slot_token;
	void *bounce;
};

/**
 * struct kfab_arrival - what became of a message from another node
 * @status: its status for the sender, when @told
 * @told: the sender may have its RESULT now (else a receive or the
 *	message's end tells it later)
 * @pull: a receive took it and waits for its data: start this pull
 * @kept: its struct kfab_remote is kept (by a waiting message or @pull)
 */
struct kfab_arrival {
	int status;
	bool told;
	struct kfab_pull *pull;
	bool kept;
};

/* Under the receive context's lock (kfab.h "Locking" 4) */
struct kfab_recv *kfab_match_recv(struct kfab_rx_ctx *rxc,
				  const struct kfab_msg *msg, u64 from);
int kfab_recv_deliver(struct kfab_rx_ctx *rxc, struct kfab_ep_core *target,
		      struct kfab_recv *recv, const struct kfab_msg *msg,
		      u64 from, struct iov_iter *data, bool *done);
int kfab_unexp_eager(struct kfab_rx_ctx *rxc, struct kfab_ep_core *target,
		     const struct kfab_msg *msg, struct iov_iter *from);
int kfab_unexp_rendezvous(struct kfab_rx_ctx *rxc,
			  struct kfab_ep_core *target,
			  const struct kfab_msg *msg, struct iov_iter *from,
			  struct kfab_ep_core *sender, u64 context,
			  struct kfab_pin_stats *pins);

/* With no receive context's lock held (they may take one, or sleep) */
void kfab_recv_put(struct kfab_recv *recv);
void kfab_recv_put_cached(struct kfab_rx_ctx *rxc, struct kfab_recv *recv);
bool kfab_recv_put_locked(struct kfab_rx_ctx *rxc, struct kfab_recv *recv);
void kfab_unexp_finish(struct kfab_unexp *u, int status);
void kfab_send_done(struct kfab_ep_core *sender, int kind, u64 context,
		    u32 flags, int status);
void kfab_msg_arrive(struct kfab_ep_core *target, const struct kfab_msg *msg,
		     void *kbuf, struct kfab_remote *remote,
		     struct kfab_arrival *out);
bool kfab_msg_slot_reserve(struct kfab_ep_core *target,
			   const struct kfab_msg *msg,
			   struct kfab_bufrecv_slot *slot);
void kfab_msg_slot_cancel(struct kfab_ep_core *target,
			  const struct kfab_bufrecv_slot *slot);
void kfab_msg_arrive_slot(struct kfab_ep_core *target,
			  const struct kfab_msg *msg,
			  const struct kfab_bufrecv_slot *slot,
			  struct kfab_remote *remote,
			  struct kfab_arrival *out);
void kfab_pull_complete(struct kfab_pull *pull, int status);

/* peer.c: the other end of a message from another node */
void kfab_remote_release(struct kfab_remote *r, int status);
struct kfab_remote *kfab_remote_dup(const struct kfab_remote *r);
void kfab_pull_start(struct kfab_pull *pull);

#endif /* KFAB_MSG_H */
