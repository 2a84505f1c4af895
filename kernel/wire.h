/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kfab's wire protocol between nodes (Documentation/net.rst has the long
 * form).  Every frame is a struct kfab_wire_hdr, then @len bytes: the
 * type's body, then for MSG and DATA the payload.  Every field is
 * big-endian.  A frame is untrusted input: the receiver checks the magic,
 * the type, every length against the type and its limits, and drops the
 * connection on the first malformed frame.
 *
 * Two nodes talk over one connection, made by whichever needs it first;
 * both send every other frame on it.  It opens with the caller's HELLO and
 * the called node's WELCOME, so the caller knows which load of the other
 * module it reaches before anything else is sent.  When both call at
 * once, the call of the node with the lower address is kept: the other
 * node's HELLO gets a WELCOME with KFAB_WIRE_WELCOME_CROSSED, and that
 * connection closes unused.
 *
 * A message: the sender's node sends MSG (small: the payload follows) or
 * RTS (large: the envelope only).  The receiving node matches it as a
 * local message.  An RTS that a receive took is answered by CTS, naming
 * the pull that will place the data and how many bytes it wants; the
 * sender sends them as DATA frames, which the receiver reads straight into
 * the receive's pages.  RESULT ends an RTS, a message with
 * KFAB_WIRE_DELIVERY and a probe with its status, so the sender's
 * completion says what happened at the receiver.  Any other MSG ends when
 * a frame of the receiving node acknowledges it (@ack): the receiver
 * counts a MSG as carried out only once it found the endpoint and
 * delivered or held the message, and answers it with a RESULT only for an
 * error, which no frame numbered before that RESULT acknowledges past the
 * MSG.  So the sender reads the error before the acknowledgment, and a
 * stream of small messages needs no frame back per message.  A probe
 * (MSG with KFAB_WIRE_PROBE, no payload) is only answered: RESULT 0 when
 * an enabled endpoint is at its destination, else the error a message
 * would get; it costs the receiver one lookup and one RESULT.
 *
 * Memory a peer can make this node hold is bounded by credits: a node may
 * have at most KFAB_WIRE_CREDIT_MAX bytes of messages (payload plus
 * KFAB_WIRE_MSG_COST each) that the receiver has not released; the
 * receiver returns credit in @credit of any frame when it releases them.
 *
 * A connection that is reset does not end what the two nodes were doing:
 * every frame after the HELLO and WELCOME has a number (@seq) in its
 * session, each node acknowledges the frames it carried out (@ack, in any
 * frame it sends), keeps those it sent until they are acknowledged, and
 * after a new HELLO and WELCOME sends again those the other node says it
 * did not get, in order.  A session is one node's run of frames to the
 * other, named by a number each node draws (@session of HELLO and
 * WELCOME); a node that ended the session (a long outage, a malformed
 * frame, a new load of its module) draws a new one, and the other node,
 * seeing an unknown name, ends its side too.
 */
#ifndef KFAB_WIRE_H
#define KFAB_WIRE_H

#include <linux/types.h>
#include <linux/kfab.h>

#define KFAB_WIRE_MAGIC		0x6b666231	/* "kfb1" */
#define KFAB_WIRE_VERSION	7
/* Bytes of unreleased messages one node may hold at another */
#define KFAB_WIRE_CREDIT_MAX	(4 << 20)
/* What each message costs of the credit, besides its eager payload */
#define KFAB_WIRE_MSG_COST	256
/* Largest payload of one MSG, and of one DATA frame */
#define KFAB_WIRE_EAGER_MAX	(16 * 1024)
#define KFAB_WIRE_DATA_MAX	(256 * 1024)
/*
 * A node acknowledges a MSG as soon as no more bytes wait to be read, else
 * at least every so many frames, with a frame of its own if need be
 */
#define KFAB_WIRE_ACK_EVERY	32
/* How long a node keeps the acknowledgment of a lazy MSG for a frame back */
#define KFAB_WIRE_ACK_DELAY_MS	2

enum kfab_wire_type {
	KFAB_WIRE_HELLO = 1,
	KFAB_WIRE_MSG = 2,
	KFAB_WIRE_RTS = 3,
	KFAB_WIRE_CTS = 4,
	KFAB_WIRE_DATA = 5,
	KFAB_WIRE_RESULT = 6,
	KFAB_WIRE_CREDIT = 7,
	/* The last type kfab_conn_rx() takes */
	KFAB_WIRE_TYPE_MAX = KFAB_WIRE_CREDIT,
	/* The answer to a HELLO, read by the caller before anything else */
	KFAB_WIRE_WELCOME = 8,
};

/**
 * struct kfab_wire_hdr - the head of every frame
 * @magic: KFAB_WIRE_MAGIC
 * @type: a KFAB_WIRE_* value
 * @__reserved: 0
 * @len: bytes that follow this header
 * @credit: credit bytes the sender of this frame returns
 * @seq: the frame's number in its sender's session, one more than the
 *	last one's (the first is 1); 0 in HELLO and WELCOME
 * @ack: how many frames of the other node's session the sender of this
 *	frame has carried out; 0 in HELLO and WELCOME
 */
struct kfab_wire_hdr {
	__be32 magic;
	__u8 type;
	__u8 __reserved[3];
	__be32 len;
	__be32 credit;
	__be32 seq;
	__be32 ack;
};

/**
 * struct kfab_wire_hello - the first frame on a connection, from its
 *	initiator: who is calling
 * @version: KFAB_WIRE_VERSION
 * @incarnation: the caller's module load: a new one means every earlier
 *	operation with the caller is over
 * @node: the caller's node address (@ep 0): the listener of its endpoints
 *	that send on this connection, where answers to them go
 * @session: the caller's session with the called node
 * @peer_session: the called node's session as the caller knows it (0: none)
 * @received: frames of @peer_session the caller has carried out
 * @__reserved: 0
 */
struct kfab_wire_hello {
	__be32 version;
	__be32 incarnation;
	struct kfab_addr node;
	__be32 session;
	__be32 peer_session;
	__be32 received;
	__be32 __reserved;
};

/* Bits of kfab_wire_welcome.flags */
enum kfab_wire_welcome_flags {
	/* Both nodes called: this connection closes, the other one is kept */
	KFAB_WIRE_WELCOME_CROSSED = 1 << 0,
	/* Both sessions go on: send again what @received does not cover */
	KFAB_WIRE_WELCOME_RESUMED = 1 << 1,
	KFAB_WIRE_WELCOME_FLAGS = KFAB_WIRE_WELCOME_CROSSED |
				  KFAB_WIRE_WELCOME_RESUMED,
};

/**
 * struct kfab_wire_welcome - the answer to a HELLO, back to the caller
 * @incarnation: the called node's module load
 * @flags: KFAB_WIRE_WELCOME_* bits
 * @session: the called node's session with the caller
 * @received: with KFAB_WIRE_WELCOME_RESUMED: frames of the caller's
 *	session the called node has carried out; else 0
 */
struct kfab_wire_welcome {
	__be32 incarnation;
	__be32 flags;
	__be32 session;
	__be32 received;
};

/* Bits of kfab_wire_msg.flags */
enum kfab_wire_msg_flags {
	KFAB_WIRE_TAGGED = 1 << 0,	/* fi_tsend: @tag matters */
	KFAB_WIRE_CQ_DATA = 1 << 1,	/* @data is remote CQ data */
	KFAB_WIRE_DELIVERY = 1 << 2,	/* RESULT only once delivered */
	/*
	 * MSG of no payload: is an enabled endpoint at @dst?  Nothing is
	 * delivered; RESULT says 0 or the error a message would get
	 * (KFAB_SQE_PROBE of another node's address).
	 */
	KFAB_WIRE_PROBE = 1 << 3,
	/*
	 * MSG only: nobody waits for its acknowledgment (an inject, no
	 * counter): the ack and the credit ride on the next frame back,
	 * with a frame of their own only after KFAB_WIRE_ACK_DELAY_MS
	 */
	KFAB_WIRE_LAZY = 1 << 4,
	KFAB_WIRE_MSG_FLAGS = KFAB_WIRE_TAGGED | KFAB_WIRE_CQ_DATA |
			      KFAB_WIRE_DELIVERY | KFAB_WIRE_PROBE |
			      KFAB_WIRE_LAZY,
};

/**
 * struct kfab_wire_msg - MSG and RTS: a message's envelope
 * @src: the sending endpoint
 * @dst: the receiving endpoint
 * @tag: tagged: the tag
 * @data: with KFAB_WIRE_CQ_DATA: the remote CQ data
 * @op: the sender's operation, echoed in CTS and RESULT
 * @flags: KFAB_WIRE_* bits
 * @len: the message's length (MSG: the payload that follows)
 */
struct kfab_wire_msg {
	struct kfab_addr src;
	struct kfab_addr dst;
	__be64 tag;
	__be64 data;
	__be32 op;
	__be32 flags;
	__be64 len;
};

/**
 * struct kfab_wire_cts - clear to send: a receive took an RTS
 * @op: the sender's operation
 * @pull: the receiver's pull, for the DATA frames
 * @len: bytes wanted, at most the message's
 */
struct kfab_wire_cts {
	__be32 op;
	__be32 pull;
	__be64 len;
};

/**
 * struct kfab_wire_data - a piece of a rendezvous message
 * @pull: the receiver's pull (from CTS)
 * @__reserved: 0
 * @offset: where the payload that follows goes in the message
 */
struct kfab_wire_data {
	__be32 pull;
	__be32 __reserved;
	__be64 offset;
};

/**
 * struct kfab_wire_result - the end of an operation at the receiver
 * @op: the sender's operation
 * @status: 0 or a negative errno (as __be32 of an s32)
 */
struct kfab_wire_result {
	__be32 op;
	__be32 status;
};

#endif /* KFAB_WIRE_H */
