// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RDMA engine (kfab_rdma.ko): kfab's frames over reliable connected
 * queue pairs of the kernel's verbs, connections made by rdma_cm, in the
 * manner of nvme-rdma and RDS (Documentation/net.rst "The RDMA engine").
 *
 * A connection is a byte stream, as TCP's is, so peer.c speaks the same
 * wire protocol over either engine: the sender copies frames into its
 * send buffers, several frames into one while the peer says more follow,
 * and posts each as a SEND; the receiver has KFAB_RDMA_RECV_NR buffers
 * posted, its reader copies out of them what kfab_conn_rx() asks for and
 * posts each buffer again once it is read out.  A sender that finds the
 * other side's buffers all full is held off by the hardware (receiver not
 * ready, retried without end: rnr_retry_count 7) rather than by credits of
 * our own; a reader that stops reading stops its sender that way, and the
 * sender's wait for a free send buffer ends after kfab_peer_timeout_ms.
 *
 * Large messages go without a copy: send_pages() registers the message's
 * pages for remote reading (fast registration, one MR per connection) and
 * sends a descriptor instead of the bytes (a SEND with immediate data
 * KFAB_RDMA_IMM_DESC: address, key, length); the reader that meets it
 * where peer.c wants those bytes reads them with RDMA READ straight into
 * the receive's pages (the kernel's rdma_rw API) and answers DONE (a SEND
 * with immediate data KFAB_RDMA_IMM_DONE, taken in the completion
 * handler).  The sender invalidates the registration before send_pages()
 * returns, so the other node can never read the pages once the message is
 * complete.  Pages that cannot be registered as one MR (a kernel
 * consumer's scattered pieces) are copied as before.
 *
 * Resets and ends: a keepalive SEND (immediate data PING) every second
 * fails on a dead link and resets the connection (kfab_rdma_ping_work());
 * a side that ends a connection on purpose sends FIN before it
 * disconnects, so that the other side tells an end from a reset
 * (kfab_rdma_close()).
 *
 * Trust: everything a connection carries is peer.c's to check; this file
 * trusts only the lengths the hardware reports, and checks those against
 * its buffers.
 *
 * Lifetime: a connection has a reference for its reader, one for the
 * peer's link and one for its keepalive while that runs; the last one's
 * put tears it down (drain the QP, free the CQ, PD and cm_id) in process
 * context, never from a cm_id's own event handler.  It is on
 * kfab_rdma_conns from its cm_id's creation to then, so a device's
 * removal finds it.
 *
 * Locking: kfab_rdma_conn.lock (a spinlock, taken from the CQ's softirq
 * completions) covers the read buffers ready, the free send buffers and
 * @dead.  kfab_rdma_lock (mutex) covers the list of connections; it comes
 * after kfab_node.lock.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <rdma/ib_verbs.h>
#include <net/ipv6.h>
#include <rdma/rdma_cm.h>

#include <rdma/rw.h>

#include "kfab.h"
#include "net.h"
#include "wire.h"

MODULE_IMPORT_NS(KFAB_ENGINE);

/* Posted receive buffers per connection, and their size. */
#define KFAB_RDMA_RECV_NR	32
#define KFAB_RDMA_BUF_SIZE	(64 * 1024)
/* Send buffers per connection. */
#define KFAB_RDMA_SEND_NR	16
/* Large pieces go by RDMA READ from this size (smaller: copied). */
#define KFAB_RDMA_BULK_MIN	(16 * 1024)
/* Pages of the one registration: a DATA frame's, unaligned. */
#define KFAB_RDMA_MR_PAGES	(KFAB_WIRE_DATA_MAX / PAGE_SIZE + 1)
/* How deep the RDMA READs of one side may be. */
#define KFAB_RDMA_RD_ATOM	4

/* Immediate data of a SEND that is not stream bytes: kind << 24 | id. */
enum {
	KFAB_RDMA_IMM_DESC = 1,		/* a kfab_rdma_desc: read these bytes */
	KFAB_RDMA_IMM_DONE = 2,		/* the descriptor of id was read */
	KFAB_RDMA_IMM_PING = 3,		/* keepalive: nothing to read */
	KFAB_RDMA_IMM_FIN = 4,		/* the sender ends the connection */
};

/* A keepalive SEND every second: a dead link fails it (retry exceeded). */
#define KFAB_RDMA_PING_INTERVAL	HZ
/* How long a closing side waits for its FIN to be taken. */
#define KFAB_RDMA_FIN_WAIT	HZ

/**
 * struct kfab_rdma_desc - bytes of the stream to be read, not sent
 * @addr: where, in the sender's registration
 * @rkey: its key
 * @len: how many (at most KFAB_WIRE_DATA_MAX)
 * @id: answered in DONE
 * @__reserved: 0
 */
struct kfab_rdma_desc {
	__be64 addr;
	__be32 rkey;
	__be32 len;
	__be32 id;
	__be32 __reserved;
};

/**
 * struct kfab_rdma_buf - one registered buffer, sent from or read into
 * @cqe: its completion
 * @link: on @ready (read) or @free_tx (send)
 * @data: the memory, KFAB_RDMA_BUF_SIZE
 * @dma: its DMA address
 * @len: bytes in it (read: as the hardware said, or for a descriptor
 *	the bytes it stands for; send: filled so far)
 * @off: bytes already read out of it
 * @desc: it holds a struct kfab_rdma_desc (read side)
 * @parsed: the descriptor was checked: @len, @raddr, @rkey, @id are its
 * @raddr, @rkey, @id: the descriptor's
 */
struct kfab_rdma_buf {
	struct ib_cqe cqe;
	struct list_head link;
	void *data;
	u64 dma;
	u32 len;
	u32 off;
	bool desc;
	bool parsed;
	u64 raddr;
	u32 rkey;
	u32 id;
};

/*
 * What a cm_id's context is: a listener's, until a request that came to
 * it becomes a connection's (both get their events through one handler).
 */
struct kfab_rdma_ctx {
	bool listener;
};

/**
 * struct kfab_rdma_conn - a connection over RDMA, either way
 * @conn: what peer.c reads
 * @link: what peer.c sends on
 * @id: its rdma_cm identifier (its QP is @id->qp)
 * @pd: protection domain of @id's device
 * @cq: both queues' completions, polled in softirq
 * @rx: the receive buffers
 * @tx: the send buffers
 * @fill: the send buffer being filled (the peer's one sender's), or NULL
 * @ctx: says it is a connection's (a cm_id's context)
 * @lock: @ready, @free_tx, @dead, @err
 * @ready: receive buffers with bytes not read yet, oldest first
 * @free_tx: send buffers not in flight
 * @wait: the reader (for @ready) and the sender (for @free_tx)
 * @dead: no more reading or sending; @err says why
 * @err: -ECONNRESET (the connection failed: a session may go on),
 *	-ESHUTDOWN (ended by either side), or the CM's error
 * @cm_done: a connect's steps (address, route, established)
 * @cm_rc: their result
 * @mr: the registration large messages are read from (sender)
 * @mr_key: the key part of its rkey, new at each registration
 * @bulk_id: the descriptor sent last (sender)
 * @bulk_done: its DONE came (under @lock)
 * @reg_cqe, @inv_cqe, @done_cqe, @read_cqe: completions of a
 *	registration, an invalidation, a DONE sent, an RDMA READ
 * @inv_done, @read_done: an invalidation, an RDMA READ finished
 * @inv_status, @read_status: how they finished
 * @tx_bulk, @tx_bulk_bytes: descriptors the other side read, their bytes
 * @tx_copied: bytes copied into send buffers (the sender's counts)
 * @rx_bulk, @rx_bulk_bytes: descriptors read by RDMA READ, their bytes
 * @rx_copied: bytes copied out of receive buffers (the reader's counts)
 * @rx_work: the reader: kfab_conn_rx() until it fails
 * @ping_work: the keepalive, while the connection lives
 * @ping_cqe, @fin_cqe: completions of a keepalive, of the FIN
 * @ping_busy: a keepalive is in flight (under @lock)
 * @ping_at: when it went (under @lock)
 * @fin_seen: the other side sent FIN: its disconnect is an end, not a
 *	reset (under @lock)
 * @closed: kfab_rdma_close() ran (under @lock)
 * @fin_done: the FIN was taken (or failed)
 * @ref: see the top of the file
 * @all: on kfab_rdma_conns
 */
struct kfab_rdma_conn {
	struct kfab_rdma_ctx ctx;
	struct kfab_conn conn;
	struct kfab_link link;
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct kfab_rdma_buf rx[KFAB_RDMA_RECV_NR];
	struct kfab_rdma_buf tx[KFAB_RDMA_SEND_NR];
	struct kfab_rdma_buf *fill;
	spinlock_t lock;	/* see above */
	struct list_head ready;
	struct list_head free_tx;
	wait_queue_head_t wait;
	bool dead;
	int err;
	struct completion cm_done;
	int cm_rc;
	struct ib_mr *mr;
	u8 mr_key;
	u32 bulk_id;
	bool bulk_done;
	struct ib_cqe reg_cqe, inv_cqe, done_cqe, read_cqe;
	struct completion inv_done, read_done;
	int inv_status, read_status;
	u64 tx_bulk, tx_bulk_bytes, tx_copied;
	u64 rx_bulk, rx_bulk_bytes, rx_copied;
	struct work_struct rx_work;
	struct delayed_work ping_work;
	struct ib_cqe ping_cqe, fin_cqe;
	bool ping_busy;
	unsigned long ping_at;
	bool fin_seen;
	bool closed;
	struct completion fin_done;
	struct kref ref;
	struct list_head all;
};

static DEFINE_MUTEX(kfab_rdma_lock);
static LIST_HEAD(kfab_rdma_conns);
static atomic_t kfab_rdma_nr_conns = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(kfab_rdma_gone_wait);
/* The module goes: no new listener or connection (an int: READ_ONCE). */
static int kfab_rdma_going;

static struct kfab_engine kfab_rdma_engine;
static struct ib_client kfab_rdma_client;

/**
 * struct kfab_rdma_dev - what the engine knows of a device (client data)
 * @dying: its removal began: no new connection goes over it (under
 *	kfab_rdma_lock), so the removal's wait for them to end ends
 */
struct kfab_rdma_dev {
	bool dying;
};

static struct kfab_rdma_conn *kfab_rdma_conn(struct kfab_conn *conn)
{
	return container_of(conn, struct kfab_rdma_conn, conn);
}

static struct kfab_rdma_conn *kfab_rdma_link_conn(struct kfab_link *link)
{
	return container_of(link, struct kfab_rdma_conn, link);
}

/* A node address as rdma_cm takes it: IPv4 for a v4-mapped one. */
static void kfab_rdma_sockaddr(const struct kfab_addr *a,
			       struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (ipv6_addr_v4mapped((const struct in6_addr *)a->node)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = a->port;
		memcpy(&sin->sin_addr, &a->node[12], 4);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = a->port;
		memcpy(&sin6->sin6_addr, a->node, sizeof(sin6->sin6_addr));
	}
}

/* The other way, for the allow-list: an IPv4 address v4-mapped. */
static void kfab_rdma_node_of(const struct sockaddr *sa, u8 node[16])
{
	memset(node, 0, 16);
	if (sa->sa_family == AF_INET) {
		node[10] = 0xff;
		node[11] = 0xff;
		memcpy(&node[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(node, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

/* ---- the end of a connection ---- */

/* No more reading or sending: wake whoever waits.  Any context. */
static void kfab_rdma_kill(struct kfab_rdma_conn *rc, int err)
{
	unsigned long flags;

	spin_lock_irqsave(&rc->lock, flags);
	if (!rc->dead) {
		rc->dead = true;
		rc->err = err;
	}
	spin_unlock_irqrestore(&rc->lock, flags);
	wake_up_all(&rc->wait);
	/* A connect waiting for its next step ends too. */
	complete(&rc->cm_done);
}

static void kfab_rdma_free_bufs(struct kfab_rdma_conn *rc,
				struct kfab_rdma_buf *bufs, unsigned int nr,
				enum dma_data_direction dir)
{
	struct ib_device *dev = rc->id->device;
	unsigned int i;

	for (i = 0; i < nr; i++) {
		if (!bufs[i].data)
			continue;
		if (bufs[i].dma)
			ib_dma_unmap_single(dev, bufs[i].dma, KFAB_RDMA_BUF_SIZE,
					    dir);
		kfree(bufs[i].data);
		bufs[i].data = NULL;
	}
}

/* Free the QP and everything of the device's; the cm_id stays. */
static void kfab_rdma_free_qp(struct kfab_rdma_conn *rc)
{
	if (rc->id->qp) {
		ib_drain_qp(rc->id->qp);
		rdma_destroy_qp(rc->id);
	}
	if (rc->mr) {
		ib_dereg_mr(rc->mr);
		rc->mr = NULL;
	}
	if (rc->cq) {
		ib_free_cq(rc->cq);
		rc->cq = NULL;
	}
	if (rc->pd) {
		kfab_rdma_free_bufs(rc, rc->rx, KFAB_RDMA_RECV_NR,
				    DMA_FROM_DEVICE);
		kfab_rdma_free_bufs(rc, rc->tx, KFAB_RDMA_SEND_NR,
				    DMA_TO_DEVICE);
		ib_dealloc_pd(rc->pd);
		rc->pd = NULL;
	}
}

/* The memory of @rc goes; the module's exit waits for the last one. */
static void kfab_rdma_conn_gone(struct kfab_rdma_conn *rc)
{
	kfree(rc);
	if (atomic_dec_and_test(&kfab_rdma_nr_conns))
		wake_up_all(&kfab_rdma_gone_wait);
}

static void kfab_rdma_conn_free(struct kref *ref)
{
	struct kfab_rdma_conn *rc = container_of(ref, struct kfab_rdma_conn,
						 ref);

	might_sleep();
	mutex_lock(&kfab_rdma_lock);
	list_del(&rc->all);
	mutex_unlock(&kfab_rdma_lock);
	rdma_disconnect(rc->id);
	kfab_rdma_free_qp(rc);
	rdma_destroy_id(rc->id);
	kfab_rdma_conn_gone(rc);
}

static void kfab_rdma_conn_put(struct kfab_rdma_conn *rc)
{
	kref_put(&rc->ref, kfab_rdma_conn_free);
}

/* ---- completions (softirq) ---- */

static int kfab_rdma_post_recv(struct kfab_rdma_conn *rc,
			       struct kfab_rdma_buf *b);

/* The other side read the bytes of our descriptor @id. */
static void kfab_rdma_bulk_done(struct kfab_rdma_conn *rc, u32 id)
{
	unsigned long flags;

	spin_lock_irqsave(&rc->lock, flags);
	if (id == (rc->bulk_id & 0xffffff))
		rc->bulk_done = true;
	spin_unlock_irqrestore(&rc->lock, flags);
	wake_up_all(&rc->wait);
}

/* A registration or a DONE sent: only a failure matters. */
static void kfab_rdma_wr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	if (wc->status != IB_WC_SUCCESS)
		kfab_rdma_kill(cq->cq_context, -ECONNRESET);
}

/* A keepalive went: one that failed means the link or the other side did. */
static void kfab_rdma_ping_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kfab_rdma_conn *rc = cq->cq_context;
	unsigned long flags;

	if (wc->status != IB_WC_SUCCESS)
		kfab_rdma_kill(rc, -ECONNRESET);
	spin_lock_irqsave(&rc->lock, flags);
	rc->ping_busy = false;
	spin_unlock_irqrestore(&rc->lock, flags);
}

static void kfab_rdma_fin_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kfab_rdma_conn *rc = cq->cq_context;

	complete(&rc->fin_done);
}

static void kfab_rdma_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kfab_rdma_conn *rc = cq->cq_context;

	rc->inv_status = wc->status == IB_WC_SUCCESS ? 0 : -ECONNRESET;
	complete(&rc->inv_done);
}

static void kfab_rdma_read_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kfab_rdma_conn *rc = cq->cq_context;

	rc->read_status = wc->status == IB_WC_SUCCESS ? 0 : -ECONNRESET;
	if (wc->status != IB_WC_SUCCESS)
		kfab_rdma_kill(rc, -ECONNRESET);
	complete(&rc->read_done);
}

static void kfab_rdma_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kfab_rdma_buf *b = container_of(wc->wr_cqe,
					       struct kfab_rdma_buf, cqe);
	struct kfab_rdma_conn *rc = cq->cq_context;
	unsigned long flags;

	/* The hardware's length is the one thing trusted here: check it. */
	if (wc->status != IB_WC_SUCCESS || wc->byte_len > KFAB_RDMA_BUF_SIZE) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_debug("kfab_rdma: receive failed: %s\n",
				 ib_wc_status_msg(wc->status));
		kfab_rdma_kill(rc, -ECONNRESET);
		return;
	}
	b->len = wc->byte_len;
	b->off = 0;
	b->desc = false;
	b->parsed = false;
	if (wc->wc_flags & IB_WC_WITH_IMM) {
		u32 imm = be32_to_cpu(wc->ex.imm_data);

		switch (imm >> 24) {
		case KFAB_RDMA_IMM_DESC:
			/* Checked by the reader, in stream order. */
			b->desc = true;
			break;
		case KFAB_RDMA_IMM_DONE:
			kfab_rdma_bulk_done(rc, imm & 0xffffff);
			if (kfab_rdma_post_recv(rc, b))
				kfab_rdma_kill(rc, -ECONNRESET);
			return;
		case KFAB_RDMA_IMM_FIN:
			/*
			 * The end, as a TCP FIN: what came before it is
			 * read first (it is on @ready), then the reader
			 * stops, whether or not the disconnect follows.
			 */
			spin_lock_irqsave(&rc->lock, flags);
			rc->fin_seen = true;
			spin_unlock_irqrestore(&rc->lock, flags);
			kfab_rdma_kill(rc, -ESHUTDOWN);
			return;
		case KFAB_RDMA_IMM_PING:
			if (kfab_rdma_post_recv(rc, b))
				kfab_rdma_kill(rc, -ECONNRESET);
			return;
		default:
			kfab_rdma_kill(rc, -EPROTO);
			return;
		}
	}
	spin_lock_irqsave(&rc->lock, flags);
	list_add_tail(&b->link, &rc->ready);
	spin_unlock_irqrestore(&rc->lock, flags);
	wake_up_all(&rc->wait);
}

static void kfab_rdma_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kfab_rdma_buf *b = container_of(wc->wr_cqe,
					       struct kfab_rdma_buf, cqe);
	struct kfab_rdma_conn *rc = cq->cq_context;
	unsigned long flags;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_debug("kfab_rdma: send failed: %s\n",
				 ib_wc_status_msg(wc->status));
		kfab_rdma_kill(rc, -ECONNRESET);
	}
	b->len = 0;
	spin_lock_irqsave(&rc->lock, flags);
	list_add_tail(&b->link, &rc->free_tx);
	spin_unlock_irqrestore(&rc->lock, flags);
	wake_up_all(&rc->wait);
}

/* ---- setting a connection up ---- */

static struct kfab_rdma_conn *kfab_rdma_conn_new(struct kfab_node *node)
{
	struct kfab_rdma_conn *rc = kzalloc(sizeof(*rc), GFP_KERNEL);

	if (!rc)
		return NULL;
	rc->conn.node = node;
	rc->conn.engine = &kfab_rdma_engine;
	rc->conn.out = &rc->link;
	rc->link.engine = &kfab_rdma_engine;
	rc->link.conn = &rc->conn;
	spin_lock_init(&rc->lock);
	INIT_LIST_HEAD(&rc->ready);
	INIT_LIST_HEAD(&rc->free_tx);
	INIT_LIST_HEAD(&rc->all);
	init_waitqueue_head(&rc->wait);
	init_completion(&rc->cm_done);
	init_completion(&rc->inv_done);
	init_completion(&rc->read_done);
	init_completion(&rc->fin_done);
	rc->ping_cqe.done = kfab_rdma_ping_done;
	rc->fin_cqe.done = kfab_rdma_fin_done;
	rc->reg_cqe.done = kfab_rdma_wr_done;
	rc->done_cqe.done = kfab_rdma_wr_done;
	rc->inv_cqe.done = kfab_rdma_inv_done;
	rc->read_cqe.done = kfab_rdma_read_done;
	kref_init(&rc->ref);
	atomic_inc(&kfab_rdma_nr_conns);
	return rc;
}

static int kfab_rdma_post_recv(struct kfab_rdma_conn *rc,
			       struct kfab_rdma_buf *b)
{
	struct ib_sge sge = {
		.addr = b->dma,
		.length = KFAB_RDMA_BUF_SIZE,
		.lkey = rc->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &b->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(rc->id->device, b->dma,
				      KFAB_RDMA_BUF_SIZE, DMA_FROM_DEVICE);
	return ib_post_recv(rc->id->qp, &wr, NULL);
}

static int kfab_rdma_alloc_bufs(struct kfab_rdma_conn *rc,
				struct kfab_rdma_buf *bufs, unsigned int nr,
				enum dma_data_direction dir,
				void (*done)(struct ib_cq *cq, struct ib_wc *wc))
{
	struct ib_device *dev = rc->id->device;
	unsigned int i;

	for (i = 0; i < nr; i++) {
		struct kfab_rdma_buf *b = &bufs[i];

		b->data = kmalloc(KFAB_RDMA_BUF_SIZE, GFP_KERNEL);
		if (!b->data)
			return -ENOMEM;
		b->dma = ib_dma_map_single(dev, b->data, KFAB_RDMA_BUF_SIZE,
					   dir);
		if (ib_dma_mapping_error(dev, b->dma)) {
			b->dma = 0;
			return -ENOMEM;
		}
		b->cqe.done = done;
	}
	return 0;
}

/*
 * The device's resources of a connection whose @id has a device (its
 * route resolved, or a request come in): PD, CQ, QP, buffers, the
 * receives posted.
 */
static int kfab_rdma_setup_qp(struct kfab_rdma_conn *rc)
{
	struct ib_device *dev = rc->id->device;
	struct ib_qp_init_attr attr = {};
	struct kfab_rdma_dev *d;
	unsigned int i;
	int ret;

	/* @rc is on kfab_rdma_conns: a removal that begins later finds it. */
	mutex_lock(&kfab_rdma_lock);
	d = ib_get_client_data(dev, &kfab_rdma_client);
	ret = !d || d->dying ? -ENODEV : 0;
	mutex_unlock(&kfab_rdma_lock);
	if (ret)
		return ret;
	rc->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(rc->pd)) {
		ret = PTR_ERR(rc->pd);
		rc->pd = NULL;
		return ret;
	}
	/* Room for every WR of both queues, rdma_rw's included. */
	rc->cq = ib_alloc_cq(dev, rc, KFAB_RDMA_RECV_NR + 4 * KFAB_RDMA_SEND_NR +
			     2 * KFAB_RDMA_MR_PAGES + 2, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(rc->cq)) {
		ret = PTR_ERR(rc->cq);
		rc->cq = NULL;
		return ret;
	}
	ret = kfab_rdma_alloc_bufs(rc, rc->rx, KFAB_RDMA_RECV_NR,
				   DMA_FROM_DEVICE, kfab_rdma_recv_done);
	if (!ret)
		ret = kfab_rdma_alloc_bufs(rc, rc->tx, KFAB_RDMA_SEND_NR,
					   DMA_TO_DEVICE, kfab_rdma_send_done);
	if (ret)
		return ret;
	attr.event_handler = NULL;
	attr.send_cq = rc->cq;
	attr.recv_cq = rc->cq;
	attr.qp_type = IB_QPT_RC;
	/* Ours are all signaled; rdma_rw's READs but the last are not. */
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	/* One more of each for ib_drain_qp()'s markers. */
	/*
	 * Sends, a registration, an invalidation and a DONE at a time, and
	 * an RDMA READ of a DATA frame's pages, at worst one WR per page
	 * (rdma_rw splits a READ by the device's read SGEs).
	 */
	/* ... and a keepalive and a FIN. */
	attr.cap.max_send_wr = KFAB_RDMA_SEND_NR + 6 + KFAB_RDMA_MR_PAGES;
	attr.cap.max_recv_wr = KFAB_RDMA_RECV_NR + 1;
	attr.cap.max_send_sge = min_t(u32, dev->attrs.max_send_sge, 16);
	attr.cap.max_recv_sge = 1;
	/* One RDMA READ at a time (rdma_rw adds its WRs). */
	attr.cap.max_rdma_ctxs = 1;
	attr.port_num = rc->id->port_num;
	ret = rdma_create_qp(rc->id, rc->pd, &attr);
	if (ret)
		return ret;
	rc->mr = ib_alloc_mr(rc->pd, IB_MR_TYPE_MEM_REG, KFAB_RDMA_MR_PAGES);
	if (IS_ERR(rc->mr)) {
		ret = PTR_ERR(rc->mr);
		rc->mr = NULL;
		return ret;
	}
	for (i = 0; i < KFAB_RDMA_SEND_NR; i++)
		list_add_tail(&rc->tx[i].link, &rc->free_tx);
	for (i = 0; i < KFAB_RDMA_RECV_NR; i++) {
		ret = kfab_rdma_post_recv(rc, &rc->rx[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * What both ends ask of the connection: retries without end, and RDMA
 * READs both ways (of large messages), as deep as the device allows.
 */
static void kfab_rdma_conn_param(struct kfab_rdma_conn *rc,
				 struct rdma_conn_param *p)
{
	struct ib_device_attr *a = &rc->id->device->attrs;
	u8 depth = min3(a->max_qp_rd_atom, a->max_qp_init_rd_atom,
			KFAB_RDMA_RD_ATOM);

	*p = (struct rdma_conn_param){
		.retry_count = 7,
		.rnr_retry_count = 7,
		.initiator_depth = depth,
		.responder_resources = depth,
	};
}

/* Put @rc on the list the device's removal walks (no reference). */
static void kfab_rdma_conn_list(struct kfab_rdma_conn *rc)
{
	mutex_lock(&kfab_rdma_lock);
	list_add_tail(&rc->all, &kfab_rdma_conns);
	mutex_unlock(&kfab_rdma_lock);
}

/* ---- keepalive and the end ---- */

/* A SEND without bytes, with immediate data @kind << 24. */
static int kfab_rdma_post_imm(struct kfab_rdma_conn *rc, struct ib_cqe *cqe,
			      u32 kind)
{
	struct ib_send_wr wr = {
		.wr_cqe = cqe,
		.opcode = IB_WR_SEND_WITH_IMM,
		.send_flags = IB_SEND_SIGNALED,
		.ex.imm_data = cpu_to_be32(kind << 24),
	};

	return ib_post_send(rc->id->qp, &wr, NULL);
}

/*
 * Every second while the connection lives, a keepalive: RC's
 * acknowledgements tell a link cut or a peer gone (its failure kills the
 * connection as a reset, and the session may go on over a new one), as
 * TCP's keepalive does for the TCP engine; an idle reader would otherwise
 * wait without end.  A keepalive that neither succeeds nor fails within
 * kfab_peer_timeout_ms (a QP whose retries never end: a timeout of 0)
 * counts as failed.  It holds a reference while it runs.
 */
static void kfab_rdma_ping_work(struct work_struct *work)
{
	struct kfab_rdma_conn *rc = container_of(to_delayed_work(work),
						 struct kfab_rdma_conn,
						 ping_work);
	unsigned long limit = msecs_to_jiffies(READ_ONCE(kfab_peer_timeout_ms));
	bool dead, post, stuck;

	spin_lock_irq(&rc->lock);
	dead = rc->dead;
	post = !dead && !rc->ping_busy;
	stuck = !dead && rc->ping_busy &&
		time_after(jiffies, rc->ping_at + limit);
	if (post) {
		rc->ping_busy = true;
		rc->ping_at = jiffies;
	}
	spin_unlock_irq(&rc->lock);
	if (dead) {
		kfab_rdma_conn_put(rc);
		return;
	}
	if ((post && kfab_rdma_post_imm(rc, &rc->ping_cqe,
					KFAB_RDMA_IMM_PING)) || stuck)
		kfab_rdma_kill(rc, -ECONNRESET);
	queue_delayed_work(kfab_net_wq, &rc->ping_work,
			   KFAB_RDMA_PING_INTERVAL);
}

/*
 * The end of a connection, once, from process context: a connection
 * that ends on purpose (not reset: @rc->err is not -ECONNRESET) says so
 * with a FIN first, so that the other side takes the disconnect that
 * follows as an end, as a TCP FIN, and one that is reset disconnects
 * without it, which the other side takes as a reset (its session may go
 * on).  The disconnect waits until the FIN is taken: rdma_cm's message
 * could overtake it.
 */
static void kfab_rdma_close(struct kfab_rdma_conn *rc)
{
	bool first, fin;

	spin_lock_irq(&rc->lock);
	first = !rc->closed;
	rc->closed = true;
	fin = rc->err != -ECONNRESET && !rc->fin_seen;
	spin_unlock_irq(&rc->lock);
	if (!first)
		return;
	if (fin && rc->id->qp &&
	    !kfab_rdma_post_imm(rc, &rc->fin_cqe, KFAB_RDMA_IMM_FIN))
		wait_for_completion_timeout(&rc->fin_done,
					    KFAB_RDMA_FIN_WAIT);
	rdma_disconnect(rc->id);
}

/* ---- reading ---- */

static void kfab_rdma_rx_work(struct work_struct *work)
{
	struct kfab_rdma_conn *rc = container_of(work, struct kfab_rdma_conn,
						 rx_work);
	struct kfab_node *node = rc->conn.node;
	int ret;

	do {
		ret = kfab_conn_rx(&rc->conn);
	} while (!ret);
	if (ret != -ESHUTDOWN && ret != -ECONNRESET)
		pr_debug("kfab_rdma: connection dropped: %d\n", ret);
	kfab_rdma_kill(rc, ret);
	kfab_rdma_close(rc);
	kfab_conn_closed(&rc->conn, ret);
	mutex_lock(&node->lock);
	list_del(&rc->conn.link);
	mutex_unlock(&node->lock);
	kfab_rdma_conn_put(rc);
}

/* Start reading @rc, with the reference the caller gives. */
static void kfab_rdma_conn_read(struct kfab_rdma_conn *rc)
{
	struct kfab_node *node = rc->conn.node;

	INIT_WORK(&rc->rx_work, kfab_rdma_rx_work);
	mutex_lock(&node->lock);
	list_add_tail(&rc->conn.link, &node->conns);
	mutex_unlock(&node->lock);
	queue_work(kfab_net_wq, &rc->rx_work);
	/* The keepalive's reference. */
	kref_get(&rc->ref);
	INIT_DELAYED_WORK(&rc->ping_work, kfab_rdma_ping_work);
	queue_delayed_work(kfab_net_wq, &rc->ping_work, KFAB_RDMA_PING_INTERVAL);
}

/*
 * Wait until @cond holds for @rc, for at most @timeout jiffies
 * (MAX_SCHEDULE_TIMEOUT: without end).  TASK_IDLE: readers wait for as
 * long as a connection is quiet, and no signal ends a wait.  Open-coded:
 * the wait_event macros' nested __ret upsets sparse.  Return: whether it
 * holds.
 */
static bool kfab_rdma_wait(struct kfab_rdma_conn *rc,
			   bool (*cond)(struct kfab_rdma_conn *rc),
			   long timeout)
{
	DEFINE_WAIT(wait);
	bool ret;

	for (;;) {
		prepare_to_wait(&rc->wait, &wait, TASK_IDLE);
		ret = cond(rc);
		if (ret || !timeout)
			break;
		timeout = schedule_timeout(timeout);
	}
	finish_wait(&rc->wait, &wait);
	return ret;
}

/* Is anything to read there, or the end? */
static bool kfab_rdma_readable(struct kfab_rdma_conn *rc)
{
	bool ret;

	spin_lock_irq(&rc->lock);
	ret = !list_empty(&rc->ready) || rc->dead;
	spin_unlock_irq(&rc->lock);
	return ret;
}

/*
 * Read exactly what @to describes, waiting for at most @timeout jiffies
 * between buffers (MAX_SCHEDULE_TIMEOUT: without end).
 */
/*
 * A scatterlist of the next @n bytes of @it (a bio_vec iterator), which
 * stays where it is.  Return: 0 or -errno.
 */
static int kfab_rdma_sg(const struct iov_iter *it, size_t n,
			struct sg_table *sgt)
{
	const struct bio_vec *bv = it->bvec;
	size_t skip = it->iov_offset, left = n, len;
	struct scatterlist *sg;
	unsigned int nr = 0;
	int ret;

	for (; left; bv++, skip = 0, nr++)
		left -= min(left, bv->bv_len - skip);
	ret = sg_alloc_table(sgt, nr, GFP_KERNEL);
	if (ret)
		return ret;
	bv = it->bvec;
	skip = it->iov_offset;
	left = n;
	for_each_sg(sgt->sgl, sg, nr, ret) {
		size_t at = bv->bv_offset + skip;

		len = min(left, bv->bv_len - skip);
		sg_set_page(sg, nth_page(bv->bv_page, at >> PAGE_SHIFT), len,
			    offset_in_page(at));
		left -= len;
		bv++;
		skip = 0;
	}
	return 0;
}

/* Wait for one of our work requests: @done completes it, @status says. */
static int kfab_rdma_wr_wait(struct kfab_rdma_conn *rc,
			     struct completion *done, const int *status)
{
	unsigned long left = msecs_to_jiffies(READ_ONCE(kfab_peer_timeout_ms));

	if (!wait_for_completion_timeout(done, left)) {
		/* Its QP in error flushes it: then it can be let go. */
		kfab_rdma_kill(rc, -ETIMEDOUT);
		rdma_disconnect(rc->id);
		wait_for_completion(done);
		return -ETIMEDOUT;
	}
	return READ_ONCE(*status);
}

/*
 * Read @n bytes of the other side's registration at @raddr, @rkey into
 * what @to describes (a receive's pages) with RDMA READ, and advance it.
 */
static int kfab_rdma_read_bulk(struct kfab_rdma_conn *rc, struct iov_iter *to,
			       size_t n, u64 raddr, u32 rkey)
{
	struct ib_qp *qp = rc->id->qp;
	u32 port = rc->id->port_num;
	struct rdma_rw_ctx ctx;
	struct sg_table sgt;
	int ret;

	ret = kfab_rdma_sg(to, n, &sgt);
	if (ret)
		return ret;
	ret = rdma_rw_ctx_init(&ctx, qp, port, sgt.sgl, sgt.orig_nents, 0,
			       raddr, rkey, DMA_FROM_DEVICE);
	if (ret < 0)
		goto out;
	reinit_completion(&rc->read_done);
	ret = rdma_rw_ctx_post(&ctx, qp, port, &rc->read_cqe, NULL);
	if (!ret)
		ret = kfab_rdma_wr_wait(rc, &rc->read_done,
					&rc->read_status);
	rdma_rw_ctx_destroy(&ctx, qp, port, sgt.sgl, sgt.orig_nents,
			    DMA_FROM_DEVICE);
	if (!ret) {
		iov_iter_advance(to, n);
		WRITE_ONCE(rc->rx_bulk_bytes, rc->rx_bulk_bytes + n);
	}
out:
	sg_free_table(&sgt);
	return ret;
}

/* Tell the sender its descriptor @id was read (a SEND without bytes). */
static int kfab_rdma_send_done_imm(struct kfab_rdma_conn *rc, u32 id)
{
	struct ib_send_wr wr = {
		.wr_cqe = &rc->done_cqe,
		.opcode = IB_WR_SEND_WITH_IMM,
		.send_flags = IB_SEND_SIGNALED,
		.ex.imm_data = cpu_to_be32(KFAB_RDMA_IMM_DONE << 24 | id),
	};

	return ib_post_send(rc->id->qp, &wr, NULL);
}

/*
 * A descriptor at the head of the stream: check it once.  Untrusted: its
 * length bounds what it stands for (the hardware checks the address and
 * key against the sender's registration).
 */
static int kfab_rdma_desc_take(struct kfab_rdma_conn *rc,
			       struct kfab_rdma_buf *b)
{
	struct kfab_rdma_desc d;

	if (b->len != sizeof(d))
		return -EPROTO;
	ib_dma_sync_single_for_cpu(rc->id->device, b->dma, b->len,
				   DMA_FROM_DEVICE);
	memcpy(&d, b->data, sizeof(d));
	b->len = be32_to_cpu(d.len);
	b->raddr = be64_to_cpu(d.addr);
	b->rkey = be32_to_cpu(d.rkey);
	b->id = be32_to_cpu(d.id);
	b->parsed = true;
	if (!b->len || b->len > KFAB_WIRE_DATA_MAX || d.__reserved ||
	    b->id > 0xffffff)
		return -EPROTO;
	return 0;
}

/*
 * Read exactly what @to describes, waiting for at most @timeout jiffies
 * between buffers (MAX_SCHEDULE_TIMEOUT: without end).  Bytes a
 * descriptor stands for can only be what peer.c reads into a receive's
 * pages (or skips): anywhere else the other side broke the protocol.
 */
static int kfab_rdma_read(struct kfab_rdma_conn *rc, struct iov_iter *to,
			  long timeout)
{
	struct kfab_rdma_buf *b;
	size_t n;
	int ret;

	while (iov_iter_count(to)) {
		if (!kfab_rdma_wait(rc, kfab_rdma_readable, timeout))
			return -EAGAIN;
		spin_lock_irq(&rc->lock);
		b = list_first_entry_or_null(&rc->ready, struct kfab_rdma_buf,
					     link);
		ret = rc->err ?: -ESHUTDOWN;
		spin_unlock_irq(&rc->lock);
		/* What came before the end is still read. */
		if (!b)
			return ret;
		if (b->desc) {
			ret = b->parsed ? 0 : kfab_rdma_desc_take(rc, b);
			if (ret)
				return ret;
			if (!iov_iter_is_bvec(to) && !iov_iter_is_discard(to))
				return -EPROTO;
			n = min_t(size_t, b->len - b->off, iov_iter_count(to));
			if (iov_iter_is_discard(to))
				iov_iter_advance(to, n);
			else
				ret = kfab_rdma_read_bulk(rc, to, n,
							  b->raddr + b->off,
							  b->rkey);
			if (ret)
				return ret;
		} else {
			if (!b->off)
				ib_dma_sync_single_for_cpu(rc->id->device,
							   b->dma, b->len,
							   DMA_FROM_DEVICE);
			n = min_t(size_t, b->len - b->off, iov_iter_count(to));
			if (copy_to_iter(b->data + b->off, n, to) != n)
				return -EFAULT;
			WRITE_ONCE(rc->rx_copied, rc->rx_copied + n);
		}
		b->off += n;
		if (b->off < b->len)
			continue;
		if (b->desc) {
			if (kfab_rdma_send_done_imm(rc, b->id))
				return -ECONNRESET;
			WRITE_ONCE(rc->rx_bulk, rc->rx_bulk + 1);
		}
		spin_lock_irq(&rc->lock);
		list_del(&b->link);
		ret = rc->dead;
		spin_unlock_irq(&rc->lock);
		if (!ret && kfab_rdma_post_recv(rc, b))
			kfab_rdma_kill(rc, -ECONNRESET);
	}
	return 0;
}

static int kfab_rdma_recv(struct kfab_conn *conn, struct iov_iter *to)
{
	return kfab_rdma_read(kfab_rdma_conn(conn), to, MAX_SCHEDULE_TIMEOUT);
}

/* A receive buffer holds bytes its reader has not read yet. */
static bool kfab_rdma_rx_pending(struct kfab_conn *conn)
{
	struct kfab_rdma_conn *rc = kfab_rdma_conn(conn);
	bool ret;

	spin_lock_irq(&rc->lock);
	ret = !list_empty(&rc->ready);
	spin_unlock_irq(&rc->lock);
	return ret;
}

/* The answer to our HELLO, read before the connection is started. */
static int kfab_rdma_recv_link(struct kfab_link *link, struct iov_iter *to)
{
	return kfab_rdma_read(kfab_rdma_link_conn(link), to,
			      msecs_to_jiffies(READ_ONCE(kfab_peer_timeout_ms)));
}

/* ---- sending (the peer's one sender at a time) ---- */

static bool kfab_rdma_tx_free(struct kfab_rdma_conn *rc)
{
	bool ret;

	spin_lock_irq(&rc->lock);
	ret = !list_empty(&rc->free_tx) || rc->dead;
	spin_unlock_irq(&rc->lock);
	return ret;
}

/* Post the buffer being filled, if it holds anything. */
static int kfab_rdma_flush(struct kfab_rdma_conn *rc)
{
	struct kfab_rdma_buf *b = rc->fill;
	struct ib_sge sge;
	struct ib_send_wr wr = {};
	int ret;

	if (!b || !b->len)
		return 0;
	rc->fill = NULL;
	sge = (struct ib_sge){
		.addr = b->dma,
		.length = b->len,
		.lkey = rc->pd->local_dma_lkey,
	};
	wr.wr_cqe = &b->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	ib_dma_sync_single_for_device(rc->id->device, b->dma, b->len,
				      DMA_TO_DEVICE);
	ret = ib_post_send(rc->id->qp, &wr, NULL);
	if (ret) {
		kfab_rdma_kill(rc, -ECONNRESET);
		return -ECONNRESET;
	}
	return 0;
}

/* The buffer to fill: the one begun, or a free one (waited for). */
static int kfab_rdma_fill_buf(struct kfab_rdma_conn *rc)
{
	long left = msecs_to_jiffies(READ_ONCE(kfab_peer_timeout_ms));
	int ret = 0;

	if (rc->fill && rc->fill->len < KFAB_RDMA_BUF_SIZE)
		return 0;
	ret = kfab_rdma_flush(rc);
	if (ret)
		return ret;
	if (!kfab_rdma_wait(rc, kfab_rdma_tx_free, left))
		return -ETIMEDOUT;
	spin_lock_irq(&rc->lock);
	if (rc->dead) {
		ret = rc->err ?: -ESHUTDOWN;
	} else {
		rc->fill = list_first_entry(&rc->free_tx, struct kfab_rdma_buf,
					    link);
		list_del(&rc->fill->link);
		rc->fill->len = 0;
	}
	spin_unlock_irq(&rc->lock);
	return ret == -ESHUTDOWN ? -EPIPE : ret;
}

/* Copy what @from holds into send buffers; post them unless @more. */
static int kfab_rdma_send_iter(struct kfab_rdma_conn *rc,
			       struct iov_iter *from, bool more)
{
	struct kfab_rdma_buf *b;
	size_t n;
	int ret;

	while (iov_iter_count(from)) {
		ret = kfab_rdma_fill_buf(rc);
		if (ret)
			return ret;
		b = rc->fill;
		n = min_t(size_t, KFAB_RDMA_BUF_SIZE - b->len,
			  iov_iter_count(from));
		if (copy_from_iter(b->data + b->len, n, from) != n)
			return -EFAULT;
		b->len += n;
		WRITE_ONCE(rc->tx_copied, rc->tx_copied + n);
	}
	return more ? 0 : kfab_rdma_flush(rc);
}

static int kfab_rdma_send_kvec(struct kfab_link *link, struct kvec *kv,
			       unsigned int nr, size_t len, bool more)
{
	struct iov_iter from;

	iov_iter_kvec(&from, ITER_SOURCE, kv, nr, len);
	return kfab_rdma_send_iter(kfab_rdma_link_conn(link), &from, more);
}

/* Has the descriptor sent last been read, or is the connection gone? */
static bool kfab_rdma_bulk_read(struct kfab_rdma_conn *rc)
{
	bool ret;

	spin_lock_irq(&rc->lock);
	ret = rc->bulk_done || rc->dead;
	spin_unlock_irq(&rc->lock);
	return ret;
}

/*
 * Send @len bytes of @from as a descriptor that the other side reads
 * (see the top), and invalidate the registration once it did.
 * Return: 0, -EAGAIN (the pages cannot be one registration: copy them),
 * or another -errno (the connection failed).
 */
static int kfab_rdma_send_bulk(struct kfab_rdma_conn *rc,
			       struct iov_iter *from, size_t len)
{
	struct ib_device *dev = rc->id->device;
	long left = msecs_to_jiffies(READ_ONCE(kfab_peer_timeout_ms));
	struct ib_send_wr send = {}, inv = {};
	struct ib_reg_wr reg = {};
	struct kfab_rdma_desc *d;
	struct kfab_rdma_buf *b;
	struct sg_table sgt;
	struct ib_sge sge;
	int ret, nents;

	ret = kfab_rdma_sg(from, len, &sgt);
	if (ret)
		return ret;
	nents = ib_dma_map_sg(dev, sgt.sgl, sgt.orig_nents, DMA_TO_DEVICE);
	if (!nents) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = -EAGAIN;
	if (ib_map_mr_sg(rc->mr, sgt.sgl, nents, NULL, PAGE_SIZE) != nents)
		goto out_unmap;
	/* The bytes before it go first, then a buffer of its own. */
	ret = kfab_rdma_flush(rc);
	if (!ret)
		ret = kfab_rdma_fill_buf(rc);
	if (ret)
		goto out_unmap;
	b = rc->fill;
	rc->fill = NULL;

	ib_update_fast_reg_key(rc->mr, ++rc->mr_key);
	spin_lock_irq(&rc->lock);
	rc->bulk_id = (rc->bulk_id + 1) & 0xffffff;
	rc->bulk_done = false;
	spin_unlock_irq(&rc->lock);
	d = b->data;
	*d = (struct kfab_rdma_desc){
		.addr = cpu_to_be64(rc->mr->iova),
		.rkey = cpu_to_be32(rc->mr->rkey),
		.len = cpu_to_be32(len),
		.id = cpu_to_be32(rc->bulk_id),
	};
	b->len = sizeof(*d);
	ib_dma_sync_single_for_device(dev, b->dma, b->len, DMA_TO_DEVICE);
	sge = (struct ib_sge){
		.addr = b->dma,
		.length = b->len,
		.lkey = rc->pd->local_dma_lkey,
	};
	reg.wr.wr_cqe = &rc->reg_cqe;
	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.send_flags = IB_SEND_SIGNALED;
	reg.wr.next = &send;
	reg.mr = rc->mr;
	reg.key = rc->mr->rkey;
	reg.access = IB_ACCESS_REMOTE_READ;
	send.wr_cqe = &b->cqe;
	send.sg_list = &sge;
	send.num_sge = 1;
	send.opcode = IB_WR_SEND_WITH_IMM;
	send.send_flags = IB_SEND_SIGNALED;
	send.ex.imm_data = cpu_to_be32(KFAB_RDMA_IMM_DESC << 24 | rc->bulk_id);
	ret = ib_post_send(rc->id->qp, &reg.wr, NULL);
	if (ret) {
		/* Nothing went: the buffer is free again. */
		spin_lock_irq(&rc->lock);
		list_add(&b->link, &rc->free_tx);
		spin_unlock_irq(&rc->lock);
		kfab_rdma_kill(rc, -ECONNRESET);
		ret = -ECONNRESET;
		goto out_unmap;
	}

	/* Until it is read, and no longer: then nobody reads the pages. */
	if (!kfab_rdma_wait(rc, kfab_rdma_bulk_read, left))
		kfab_rdma_kill(rc, -ETIMEDOUT);
	inv.wr_cqe = &rc->inv_cqe;
	inv.opcode = IB_WR_LOCAL_INV;
	inv.send_flags = IB_SEND_SIGNALED;
	inv.ex.invalidate_rkey = rc->mr->rkey;
	reinit_completion(&rc->inv_done);
	/* A QP in error reads nothing more; its flush ends the wait. */
	ret = ib_post_send(rc->id->qp, &inv, NULL);
	if (!ret)
		ret = kfab_rdma_wr_wait(rc, &rc->inv_done, &rc->inv_status);
	spin_lock_irq(&rc->lock);
	if (rc->dead)
		ret = rc->err == -ESHUTDOWN ? -EPIPE : rc->err;
	spin_unlock_irq(&rc->lock);
	if (ret) {
		/* The QP is done with: its PD and MR go with it. */
		kfab_rdma_kill(rc, -ECONNRESET);
		rdma_disconnect(rc->id);
	} else {
		WRITE_ONCE(rc->tx_bulk, rc->tx_bulk + 1);
		WRITE_ONCE(rc->tx_bulk_bytes, rc->tx_bulk_bytes + len);
	}
out_unmap:
	ib_dma_unmap_sg(dev, sgt.sgl, sgt.orig_nents, DMA_TO_DEVICE);
out_free:
	sg_free_table(&sgt);
	return ret;
}

/*
 * A large message's pages: read by the other side from where they are
 * (see the top), or copied when small or not registrable as one MR.
 */
static int kfab_rdma_send_pages(struct kfab_link *link, struct kfab_buf *buf,
				size_t off, size_t len, bool more)
{
	struct kfab_rdma_conn *rc = kfab_rdma_link_conn(link);
	struct iov_iter from;
	int ret;

	iov_iter_bvec(&from, ITER_SOURCE, buf->bv, buf->nr_bv, buf->len);
	iov_iter_advance(&from, off);
	iov_iter_truncate(&from, len);
	if (len >= KFAB_RDMA_BULK_MIN) {
		ret = kfab_rdma_send_bulk(rc, &from, len);
		if (ret != -EAGAIN)
			return ret;
	}
	return kfab_rdma_send_iter(rc, &from, more);
}

/* ---- connections in ---- */

/**
 * struct kfab_rdma_listener - a listener's rdma_cm identifier
 * @ctx: says it is a listener's (its cm_id's context)
 * @l: the listener
 * @lock: @id
 * @id: listening on @l's address and port, in RDMA_PS_TCP; NULL once
 *	its device went (rdma_cm destroyed it)
 */
struct kfab_rdma_listener {
	struct kfab_rdma_ctx ctx;
	struct kfab_listener *l;
	struct mutex lock;	/* @id */
	struct rdma_cm_id *id;
};

/*
 * A request came to a listener (from its handler, holding @id's handler
 * mutex): set the connection up and accept it, or say no.  Return: 0, or
 * non-zero for rdma_cm to destroy @id.
 */
static int kfab_rdma_accept(struct kfab_rdma_listener *rl,
			    struct rdma_cm_id *id)
{
	struct kfab_node *node = rl->l->node;
	struct rdma_conn_param param;
	struct kfab_rdma_conn *rc;
	u8 from[16];
	int ret;

	if (READ_ONCE(kfab_rdma_going))
		return -ENODEV;
	kfab_rdma_node_of((struct sockaddr *)&id->route.addr.dst_addr, from);
	if (!kfab_node_allows(node, from))
		return -EACCES;
	rc = kfab_rdma_conn_new(node);
	if (!rc)
		return -ENOMEM;
	rc->id = id;
	id->context = &rc->ctx;
	kfab_rdma_conn_list(rc);
	ret = kfab_rdma_setup_qp(rc);
	if (!ret) {
		kfab_rdma_conn_param(rc, &param);
		ret = rdma_accept(id, &param);
	}
	if (ret) {
		/* rdma_cm destroys @id itself. */
		mutex_lock(&kfab_rdma_lock);
		list_del(&rc->all);
		mutex_unlock(&kfab_rdma_lock);
		kfab_rdma_free_qp(rc);
		kfab_rdma_conn_gone(rc);
		return ret;
	}
	rc->conn.local = rl->l->addr;
	/* The reader's reference is the first one. */
	kfab_rdma_conn_read(rc);
	return 0;
}

/*
 * A listener's events: requests, and its device going, which leaves the
 * address to TCP (rdma_cm destroys the cm_id when we say non-zero).
 */
static int kfab_rdma_listener_event(struct kfab_rdma_listener *rl,
				    struct rdma_cm_id *id,
				    struct rdma_cm_event *ev)
{
	int ret = 0;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return kfab_rdma_accept(rl, id);
	if (ev->event != RDMA_CM_EVENT_DEVICE_REMOVAL)
		return 0;
	mutex_lock(&rl->lock);
	if (rl->id == id) {
		rl->id = NULL;
		ret = 1;
	}
	mutex_unlock(&rl->lock);
	return ret;
}

/*
 * Events of a connection (@id->context), and of a listener's new requests
 * (the listener's, until kfab_rdma_accept() makes them the connection's).
 */
static int kfab_rdma_cm_handler(struct rdma_cm_id *id,
				struct rdma_cm_event *ev)
{
	struct kfab_rdma_ctx *ctx = id->context;
	struct kfab_rdma_conn *rc;
	int ret;

	if (ctx->listener)
		return kfab_rdma_listener_event(container_of(ctx,
						struct kfab_rdma_listener, ctx),
						id, ev);
	rc = container_of(ctx, struct kfab_rdma_conn, ctx);
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, READ_ONCE(kfab_peer_timeout_ms));
		if (ret) {
			rc->cm_rc = ret;
			complete(&rc->cm_done);
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_ESTABLISHED:
		rc->cm_rc = 0;
		complete(&rc->cm_done);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		rc->cm_rc = -EHOSTUNREACH;
		complete(&rc->cm_done);
		break;
	case RDMA_CM_EVENT_REJECTED:
		rc->cm_rc = -ECONNREFUSED;
		complete(&rc->cm_done);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		rc->cm_rc = -ETIMEDOUT;
		complete(&rc->cm_done);
		kfab_rdma_kill(rc, -ECONNRESET);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * The other side ended it after its FIN, as a TCP FIN
		 * would; without one, its side was reset (its QP failed).
		 */
		spin_lock_irq(&rc->lock);
		ret = rc->fin_seen ? -ESHUTDOWN : -ECONNRESET;
		spin_unlock_irq(&rc->lock);
		kfab_rdma_kill(rc, ret);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* The client's removal (below) frees it; a session goes on. */
		rc->cm_rc = -ENODEV;
		kfab_rdma_kill(rc, -ECONNRESET);
		break;
	default:
		break;
	}
	return 0;
}

static int kfab_rdma_listen(struct kfab_listener *l)
{
	struct kfab_rdma_listener *rl;
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	int ret;

	if (READ_ONCE(kfab_rdma_going))
		return -ENODEV;
	rl = kzalloc(sizeof(*rl), GFP_KERNEL_ACCOUNT);
	if (!rl)
		return -ENOMEM;
	rl->ctx.listener = true;
	rl->l = l;
	mutex_init(&rl->lock);
	id = rdma_create_id(l->node->net, kfab_rdma_cm_handler, &rl->ctx,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		kfree(rl);
		return PTR_ERR(id);
	}
	kfab_rdma_sockaddr(&l->addr, &ss);
	/* Bound to an address, the listener hears only devices on it. */
	ret = rdma_bind_addr(id, (struct sockaddr *)&ss);
	if (!ret && !id->device)
		ret = -ENODEV;
	if (!ret)
		ret = rdma_listen(id, 128);
	if (ret) {
		rdma_destroy_id(id);
		kfree(rl);
		return ret;
	}
	rl->id = id;
	l->priv = rl;
	return 0;
}

static void kfab_rdma_unlisten(struct kfab_listener *l)
{
	struct kfab_rdma_listener *rl = l->priv;
	struct rdma_cm_id *id;

	mutex_lock(&rl->lock);
	id = rl->id;
	rl->id = NULL;
	mutex_unlock(&rl->lock);
	/* Waits for its handler: no request is taken after this. */
	if (id)
		rdma_destroy_id(id);
	mutex_destroy(&rl->lock);
	kfree(rl);
	l->priv = NULL;
}

/* ---- connections out ---- */

/* Wait for the next step of a connect. */
static int kfab_rdma_cm_wait(struct kfab_rdma_conn *rc)
{
	long left = msecs_to_jiffies(READ_ONCE(kfab_peer_timeout_ms));

	int ret;

	if (!wait_for_completion_timeout(&rc->cm_done, left))
		return -ETIMEDOUT;
	reinit_completion(&rc->cm_done);
	spin_lock_irq(&rc->lock);
	ret = rc->dead ? (rc->err ?: -ESHUTDOWN) : 0;
	spin_unlock_irq(&rc->lock);
	return ret ?: rc->cm_rc;
}

static int kfab_rdma_connect(struct kfab_node *node,
			     const struct kfab_addr *addr,
			     struct kfab_link **out)
{
	unsigned int ms = READ_ONCE(kfab_peer_timeout_ms);
	struct rdma_conn_param param;
	struct kfab_rdma_conn *rc;
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	int ret;

	if (READ_ONCE(kfab_rdma_going))
		return -ENODEV;
	rc = kfab_rdma_conn_new(node);
	if (!rc)
		return -ENOMEM;
	id = rdma_create_id(node->net, kfab_rdma_cm_handler, &rc->ctx, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		kfab_rdma_conn_gone(rc);
		return PTR_ERR(id);
	}
	rc->id = id;
	kfab_rdma_conn_list(rc);
	kfab_rdma_sockaddr(addr, &ss);
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, ms);
	if (!ret)
		ret = kfab_rdma_cm_wait(rc);	/* the route, too */
	if (!ret)
		ret = kfab_rdma_setup_qp(rc);
	if (!ret) {
		kfab_rdma_conn_param(rc, &param);
		ret = rdma_connect(id, &param);
	}
	if (!ret)
		ret = kfab_rdma_cm_wait(rc);
	if (ret) {
		kfab_rdma_kill(rc, ret);
		kfab_rdma_conn_put(rc);
		return ret;
	}
	*out = &rc->link;
	return 0;
}

/* The call was answered: read what comes on it from now on. */
static void kfab_rdma_start(struct kfab_link *link,
			    const struct kfab_addr *local)
{
	struct kfab_rdma_conn *rc = kfab_rdma_link_conn(link);

	rc->conn.local = *local;
	kref_get(&rc->ref);
	kfab_rdma_conn_read(rc);
}

/* A connection in becomes its peer's to send on. */
static struct kfab_link *kfab_rdma_hold(struct kfab_conn *conn)
{
	struct kfab_rdma_conn *rc = kfab_rdma_conn(conn);

	kref_get(&rc->ref);
	return &rc->link;
}

/* A peer stops sending on a connection: it ends (its reader too). */
static void kfab_rdma_release(struct kfab_link *link)
{
	struct kfab_rdma_conn *rc = kfab_rdma_link_conn(link);

	kfab_rdma_kill(rc, -ESHUTDOWN);
	kfab_rdma_close(rc);
	kfab_rdma_conn_put(rc);
}

/*
 * End a connection: its reader wakes and closes it.  Called with node
 * and peer locks held: it only marks and wakes.
 */
static void kfab_rdma_shutdown(struct kfab_conn *conn)
{
	kfab_rdma_kill(kfab_rdma_conn(conn), -ESHUTDOWN);
}

static struct kfab_engine kfab_rdma_engine = {
	.name = "rdma",
	.owner = THIS_MODULE,
	.listen = kfab_rdma_listen,
	.unlisten = kfab_rdma_unlisten,
	.connect = kfab_rdma_connect,
	.start = kfab_rdma_start,
	.hold = kfab_rdma_hold,
	.release = kfab_rdma_release,
	.send_kvec = kfab_rdma_send_kvec,
	.send_pages = kfab_rdma_send_pages,
	.recv = kfab_rdma_recv,
	.recv_link = kfab_rdma_recv_link,
	.shutdown = kfab_rdma_shutdown,
	.rx_pending = kfab_rdma_rx_pending,
};

/* ---- devices ---- */

static int kfab_rdma_add_one(struct ib_device *dev)
{
	struct kfab_rdma_dev *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return -ENOMEM;
	ib_set_client_data(dev, &kfab_rdma_client, d);
	return 0;
}

/*
 * A device goes (rdma link delete, its driver unloaded): its connections
 * fail as a reset, so their peers call again (over TCP if no other device
 * reaches), and are freed before this returns, as ib_core requires.
 */
static void kfab_rdma_remove_one(struct ib_device *dev, void *client_data)
{
	struct kfab_rdma_dev *d = client_data;
	struct kfab_rdma_conn *rc;
	unsigned int i;

	mutex_lock(&kfab_rdma_lock);
	/* Peers that call again meanwhile take another device, or TCP. */
	d->dying = true;
	list_for_each_entry(rc, &kfab_rdma_conns, all)
		if (rc->id->device == dev)
			kfab_rdma_kill(rc, -ECONNRESET);
	mutex_unlock(&kfab_rdma_lock);
	/*
	 * Readers close their connections, peers let their links go.  Not
	 * a flush of kfab_net_wq: TCP's readers run there as long as their
	 * connections last.
	 */
	for (i = 1;; i++) {
		unsigned int left = 0;

		mutex_lock(&kfab_rdma_lock);
		list_for_each_entry(rc, &kfab_rdma_conns, all)
			if (rc->id->device == dev)
				left++;
		mutex_unlock(&kfab_rdma_lock);
		if (!left)
			break;
		if (!(i % 500))
			pr_warn("kfab_rdma: %s: waiting for %u connections to end\n",
				dev_name(&dev->dev), left);
		msleep(20);
	}
	kfree(d);
}

static struct ib_client kfab_rdma_client = {
	.name = "kfab_rdma",
	.add = kfab_rdma_add_one,
	.remove = kfab_rdma_remove_one,
};

/* ---- debugfs: kfab_rdma/conns, for developers and tests ---- */

static struct dentry *kfab_rdma_debugfs;

static int kfab_rdma_conns_show(struct seq_file *s, void *unused)
{
	struct kfab_rdma_conn *rc;

	mutex_lock(&kfab_rdma_lock);
	list_for_each_entry(rc, &kfab_rdma_conns, all) {
		bool dead;

		spin_lock_irq(&rc->lock);
		dead = rc->dead;
		spin_unlock_irq(&rc->lock);
		seq_printf(s, "netns %u local %pISpc peer %pISpc device %s",
			   rc->conn.node->net->ns.inum,
			   &rc->id->route.addr.src_addr,
			   &rc->id->route.addr.dst_addr,
			   rc->id->device ? dev_name(&rc->id->device->dev) : "-");
		seq_printf(s, " dead %d tx_bulk %llu/%llu tx_copied %llu rx_bulk %llu/%llu rx_copied %llu\n",
			   dead, READ_ONCE(rc->tx_bulk),
			   READ_ONCE(rc->tx_bulk_bytes), READ_ONCE(rc->tx_copied),
			   READ_ONCE(rc->rx_bulk), READ_ONCE(rc->rx_bulk_bytes),
			   READ_ONCE(rc->rx_copied));
	}
	mutex_unlock(&kfab_rdma_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kfab_rdma_conns);

static int __init kfab_rdma_init(void)
{
	int ret = ib_register_client(&kfab_rdma_client);

	if (ret)
		return ret;
	kfab_rdma_debugfs = debugfs_create_dir("kfab_rdma", NULL);
	debugfs_create_file("conns", 0400, kfab_rdma_debugfs, NULL,
			    &kfab_rdma_conns_fops);
	kfab_engine_register(&kfab_rdma_engine);
	return 0;
}

static void __exit kfab_rdma_exit(void)
{
	WRITE_ONCE(kfab_rdma_going, 1);
	/* Listeners close, peers fall back to TCP, connections end. */
	kfab_engine_unregister(&kfab_rdma_engine);
	wait_event(kfab_rdma_gone_wait, !atomic_read(&kfab_rdma_nr_conns));
	debugfs_remove_recursive(kfab_rdma_debugfs);
	ib_unregister_client(&kfab_rdma_client);
}

module_init(kfab_rdma_init);
module_exit(kfab_rdma_exit);
MODULE_DESCRIPTION("kfab: the RDMA engine between nodes");
MODULE_AUTHOR("kfab developers");
MODULE_LICENSE("Dual BSD/GPL");
