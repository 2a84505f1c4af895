// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab_blk: a block device whose blocks live in a user-space server
 * (tools/kfab-blk-server), reached through kfab's in-kernel API.  The
 * sample client of kfab_kapi.h; Documentation/kfab_blk.rst tells how to run
 * it.
 *
 * One request of the block layer is two kfab requests: a send of the
 * header (and, for a write, the data: one message, bio_vecs) to the server,
 * and a tagged receive of the answer (for a read, straight into the
 * request's pages, through a scatterlist).  The answer's remote CQ data is
 * the server's status.  The block request ends when both have completed;
 * one that waits longer than timeout_ms has its receive cancelled and
 * fails with -EIO, so a dead or silent server never hangs I/O.
 *
 * A server named by server= (an address of the string form, on another node
 * or this one) may come back: as nvme-fabrics does, a lost server (a send
 * that cannot be delivered, a request that times out) quiesces the queues,
 * sends the requests in flight back to the block layer, and probes the
 * server every reconnect_delay seconds.  When it answers, I/O resumes;
 * when ctrl_loss_tmo seconds have passed first, every request fails with
 * -EIO from then on.
 */
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/completion.h>
#include <linux/ctype.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>

#include <linux/kfab_blk.h>

#include "compat.h"
#include "kfab_kapi.h"

static char *kfab_blk_av;
module_param_named(av, kfab_blk_av, charp, 0444);
MODULE_PARM_DESC(av, "Named AV the server is in (with server_index)");

static ulong kfab_blk_server_index;
module_param_named(server_index, kfab_blk_server_index, ulong, 0444);
MODULE_PARM_DESC(server_index, "The server's index in the named AV (default 0)");

static ulong kfab_blk_server_ep;
module_param_named(server_ep, kfab_blk_server_ep, ulong, 0444);
MODULE_PARM_DESC(server_ep, "The server's endpoint number on this machine (kfab_addr.ep), without av");

static char *kfab_blk_server;
module_param_named(server, kfab_blk_server, charp, 0444);
MODULE_PARM_DESC(server, "The server's address: fi_kfab://A.B.C.D[:PORT]/EP, fi_kfab://[IPV6][:PORT]/EP or fi_kfab://local/EP");

static int kfab_blk_reconnect_delay = 10;
module_param_named(reconnect_delay, kfab_blk_reconnect_delay, int, 0444);
MODULE_PARM_DESC(reconnect_delay, "With server=: seconds between attempts to reach a lost server (default 10)");

static int kfab_blk_ctrl_loss_tmo = 600;
module_param_named(ctrl_loss_tmo, kfab_blk_ctrl_loss_tmo, int, 0444);
MODULE_PARM_DESC(ctrl_loss_tmo, "With server=: seconds a server may stay lost before I/O fails with -EIO; -1: forever (default 600)");

static ulong kfab_blk_size;
module_param_named(size, kfab_blk_size, ulong, 0444);
MODULE_PARM_DESC(size, "Device size in bytes (default: what the server serves)");

static uint kfab_blk_queue_depth = 32;
module_param_named(queue_depth, kfab_blk_queue_depth, uint, 0444);
MODULE_PARM_DESC(queue_depth, "Requests in flight per hardware queue (default 32)");

static uint kfab_blk_hw_queues = 2;
module_param_named(hw_queues, kfab_blk_hw_queues, uint, 0444);
MODULE_PARM_DESC(hw_queues, "Hardware queues (default 2)");

static uint kfab_blk_timeout_ms = 10000;
module_param_named(timeout_ms, kfab_blk_timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "A request unanswered this long fails with -EIO (default 10000)");

/* Segments of one request: its data is at most KFAB_BLK_MAX_DATA. */
#define KFAB_BLK_MAX_SEGS	16
/* Bounds of the parameters in seconds: their jiffies fit a long. */
#define KFAB_BLK_MAX_SECS	(INT_MAX / MSEC_PER_SEC)
/* "fi_kfab://[" 45 characters of IPv6 "]:65535/" 20 digits "." 8 digits */
#define KFAB_BLK_ADDR_STRLEN	96
#define KFAB_BLK_ADDR_PREFIX	"fi_kfab://"
#define KFAB_BLK_ADDR_PREFIX_LEN	(sizeof(KFAB_BLK_ADDR_PREFIX) - 1)

/**
 * enum kfab_blk_state - the server as the driver sees it
 * @KFAB_BLK_LIVE: requests go to the server
 * @KFAB_BLK_RECONNECTING: lost: the queues are quiesced, requests wait in
 *	the block layer, recover() probes the server
 * @KFAB_BLK_FAILED: lost for good (ctrl_loss_tmo, or unloading): every
 *	request fails with -EIO
 */
enum kfab_blk_state {
	KFAB_BLK_LIVE,
	KFAB_BLK_RECONNECTING,
	KFAB_BLK_FAILED,
};

/**
 * struct kfab_blk_dev - the device and its connection to the server
 * @dom: kfab's domain of the driver
 * @av: the AV the server is in
 * @ep: the driver's endpoint
 * @server: the server's index in @av
 * @self: the address of @ep
 * @self_index: ours in a named @av, or KFAB_KADDR_ANY
 * @server_addr: server='s address
 * @next_tag: the tag of the next request
 * @tag_set: blk-mq's
 * @disk: the device
 * @major: its major number
 * @reconnect: a lost server is waited for (server=); else its loss fails
 *	the requests it concerns at once, as before
 * @lock: protects @state and @lost_at; a spinlock taken in process
 *	context only (callbacks, kblockd, queue_rq, recover)
 * @state: an enum kfab_blk_state
 * @lost_at: jiffies when the server was lost
 * @quiesced: the queues are quiesced; only recover() and exit touch it
 *	(exit after recover is cancelled)
 * @recover: probes a lost server (kfab_blk_wq)
 */
struct kfab_blk_dev {
	struct kfab_kdomain *dom;
	struct kfab_kav *av;
	struct kfab_kep *ep;
	u64 server;
	struct kfab_addr self;
	u64 self_index;
	struct kfab_addr server_addr;
	atomic64_t next_tag;
	struct blk_mq_tag_set tag_set;
	struct gendisk *disk;
	int major;
	bool reconnect;
	spinlock_t lock;	/* @state, @lost_at */
	enum kfab_blk_state state;
	unsigned long lost_at;
	bool quiesced;
	struct delayed_work recover;
};

/* The driver's part of a block request. */
struct kfab_blk_cmd {
	struct kfab_blk_dev *dev;
	struct kfab_blk_req *hdr;	/* kmalloc: on one page, for a bio_vec */
	struct kfab_kreq send;
	struct kfab_kreq recv;
	struct kvec hdr_kvec;
	struct bio_vec bvec[KFAB_BLK_MAX_SEGS + 1];
	struct scatterlist sg[KFAB_BLK_MAX_SEGS];
	atomic_t pending;		/* send, recv, and queue_rq while it runs */
	blk_status_t status;
	/* Not served because the server was lost: send it again. */
	u8 retry;
};

static struct kfab_blk_dev kfab_blk;
/* Runs recover(); reclaim-safe, as it frees the requests held. */
static struct workqueue_struct *kfab_blk_wq;

/* A late answer to a timed-out request lands here instead of waiting forever. */
static void kfab_blk_drain_done(struct kfab_kreq *req)
{
	kfree(req);
}

static void kfab_blk_drain(struct kfab_blk_dev *dev, u64 tag)
{
	struct kfab_kreq *req = kzalloc(sizeof(*req), GFP_NOIO);

	if (!req)
		return;
	req->op = KFAB_KOP_TRECV;
	req->addr = dev->server;
	req->tag = tag;
	req->buf_type = KFAB_KBUF_KVEC;
	req->done = kfab_blk_drain_done;
	if (kfab_kep_post(dev->ep, req))
		kfree(req);
}

/*
 * The server is lost (a send it could not take, a request it left
 * unanswered).  With @reconnect, recover() quiesces and probes, unless the
 * device is failed already; with ctrl_loss_tmo 0 it fails at once.
 */
static void kfab_blk_lost(struct kfab_blk_dev *dev)
{
	bool failed = false;

	spin_lock(&dev->lock);
	if (dev->state == KFAB_BLK_LIVE) {
		dev->lost_at = jiffies;
		if (kfab_blk_ctrl_loss_tmo) {
			dev->state = KFAB_BLK_RECONNECTING;
			queue_delayed_work(kfab_blk_wq, &dev->recover, 0);
		} else {
			dev->state = KFAB_BLK_FAILED;
			failed = true;
		}
	}
	spin_unlock(&dev->lock);
	if (failed)
		pr_err("kfab_blk: kfab_blk0: server lost, ctrl_loss_tmo=0: I/O fails from now on\n");
}

static enum kfab_blk_state kfab_blk_state(struct kfab_blk_dev *dev)
{
	enum kfab_blk_state state;

	spin_lock(&dev->lock);
	state = dev->state;
	spin_unlock(&dev->lock);
	return state;
}

/* A send's or a receive's error that says the server is out of reach. */
static bool kfab_blk_status_lost(int status)
{
	switch (status) {
	case -EHOSTUNREACH:
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -ENETUNREACH:
	case -ETIMEDOUT:
	case -EPIPE:
		return true;
	}
	return false;
}

/* The last of the three references: end the request, or send it again. */
static void kfab_blk_put(struct kfab_blk_cmd *cmd)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);

	if (!atomic_dec_and_test(&cmd->pending))
		return;
	if (!READ_ONCE(cmd->retry)) {
		blk_mq_end_request(rq, READ_ONCE(cmd->status));
	} else if (kfab_blk_state(cmd->dev) == KFAB_BLK_FAILED) {
		blk_mq_end_request(rq, BLK_STS_IOERR);
	} else {
		/* Queued until recover() unquiesces, or failed then. */
		blk_mq_requeue_request(rq, true);
	}
}

/*
 * Both halves come here, from kfab's workqueue.  A receive cancelled
 * (-ECANCELED) was cancelled by whoever decided the request's fate: a
 * failed send, the timeout, recover() (they set @status or @retry).
 */
static void kfab_blk_done(struct kfab_kreq *kreq)
{
	struct kfab_blk_cmd *cmd = kreq->priv;
	struct kfab_blk_dev *dev = cmd->dev;
	struct request *rq = blk_mq_rq_from_pdu(cmd);

	if (kreq->status) {
		if (dev->reconnect && kfab_blk_status_lost(kreq->status)) {
			WRITE_ONCE(cmd->retry, 1);
			kfab_blk_lost(dev);
		} else if (kreq->status != -ECANCELED || !READ_ONCE(cmd->retry)) {
			WRITE_ONCE(cmd->status, BLK_STS_IOERR);
		}
		/* Not sent: no answer will come. */
		if (kreq == &cmd->send)
			kfab_kep_cancel(dev->ep, &cmd->recv);
	} else if (kreq == &cmd->recv) {
		if (!(kreq->out_flags & KFAB_KCOMP_REMOTE_DATA) ||
		    kreq->out_data ||
		    (req_op(rq) == REQ_OP_READ &&
		     kreq->out_len != blk_rq_bytes(rq)))
			WRITE_ONCE(cmd->status, BLK_STS_IOERR);
	}
	kfab_blk_put(cmd);
}

static blk_status_t kfab_blk_queue_rq(struct blk_mq_hw_ctx *hctx,
				      const struct blk_mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct kfab_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct kfab_blk_dev *dev = cmd->dev;
	struct kfab_blk_req *hdr = cmd->hdr;
	unsigned int len = blk_rq_bytes(rq), n = 0;
	struct req_iterator iter;
	struct bio_vec bv;
	int rc;

	switch (req_op(rq)) {
	case REQ_OP_READ:
		hdr->op = KFAB_BLK_OP_READ;
		break;
	case REQ_OP_WRITE:
		hdr->op = KFAB_BLK_OP_WRITE;
		break;
	case REQ_OP_FLUSH:
		hdr->op = KFAB_BLK_OP_FLUSH;
		len = 0;
		break;
	default:
		return BLK_STS_NOTSUPP;
	}
	switch (kfab_blk_state(dev)) {
	case KFAB_BLK_LIVE:
		break;
	case KFAB_BLK_RECONNECTING:
		/* Until recover() has quiesced the queue. */
		return BLK_STS_RESOURCE;
	default:
		return BLK_STS_IOERR;
	}
	blk_mq_start_request(rq);

	hdr->magic = KFAB_BLK_MAGIC;
	hdr->tag = atomic64_inc_return(&dev->next_tag);
	hdr->offset = (u64)blk_rq_pos(rq) << SECTOR_SHIFT;
	hdr->len = len;
	hdr->client = dev->self;
	cmd->status = BLK_STS_OK;
	cmd->retry = 0;
	/* The send, the receive, and this function until it is done with cmd. */
	atomic_set(&cmd->pending, 3);

	cmd->recv = (struct kfab_kreq){
		.op = KFAB_KOP_TRECV,
		.addr = dev->server,
		.tag = hdr->tag,
		.buf_type = KFAB_KBUF_KVEC,
		.done = kfab_blk_done,
		.priv = cmd,
	};
	cmd->send = (struct kfab_kreq){
		.op = KFAB_KOP_SEND,
		.addr = dev->server,
		.buf_type = KFAB_KBUF_KVEC,
		.kvec = &cmd->hdr_kvec,
		.nr_segs = 1,
		.len = sizeof(*hdr),
		.done = kfab_blk_done,
		.priv = cmd,
	};
	if (hdr->op == KFAB_BLK_OP_READ) {
		/* The answer lands in the request's pages. */
		cmd->recv.buf_type = KFAB_KBUF_SG;
		cmd->recv.sg = cmd->sg;
		cmd->recv.nr_segs = blk_rq_map_sg(rq->q, rq, cmd->sg);
		cmd->recv.len = len;
	} else if (hdr->op == KFAB_BLK_OP_WRITE) {
		/* Header and data in one message: the header as a page too. */
		cmd->bvec[n++] = (struct bio_vec){
			.bv_page = virt_to_page(hdr),
			.bv_offset = offset_in_page(hdr),
			.bv_len = sizeof(*hdr),
		};
		rq_for_each_bvec(bv, rq, iter) {
			if (WARN_ON_ONCE(n > KFAB_BLK_MAX_SEGS))
				return BLK_STS_IOERR;
			cmd->bvec[n++] = bv;
		}
		cmd->send.buf_type = KFAB_KBUF_BVEC;
		cmd->send.bvec = cmd->bvec;
		cmd->send.nr_segs = n;
		cmd->send.len = sizeof(*hdr) + len;
	}

	rc = kfab_kep_post(dev->ep, &cmd->send);
	if (rc)
		return rc == -EAGAIN || rc == -ENOMEM ? BLK_STS_RESOURCE :
							BLK_STS_IOERR;
	rc = kfab_kep_post(dev->ep, &cmd->recv);
	if (rc) {
		WRITE_ONCE(cmd->status, BLK_STS_IOERR);
		kfab_blk_put(cmd);
	} else if (READ_ONCE(cmd->status)) {
		/* The send failed meanwhile: its cancel may have come early. */
		kfab_kep_cancel(dev->ep, &cmd->recv);
	}
	kfab_blk_put(cmd);
	return BLK_STS_OK;
}

/* Cancel the answer's receive; a receive in its place drains a late one. */
static void kfab_blk_abort(struct kfab_blk_cmd *cmd)
{
	if (!kfab_kep_cancel(cmd->dev->ep, &cmd->recv))
		kfab_blk_drain(cmd->dev, cmd->hdr->tag);
}

/*
 * From kblockd (process context).  The receive is cancelled; its
 * completion ends the request with -EIO, or, when the server may come back
 * (server=), sends it again once it has.  If it is completing already,
 * that ends it.  Either way the request is ended by kfab_blk_done().
 */
static enum blk_eh_timer_return kfab_blk_timeout(struct request *rq)
{
	struct kfab_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct kfab_blk_dev *dev = cmd->dev;

	if (dev->reconnect && kfab_blk_state(dev) != KFAB_BLK_FAILED) {
		WRITE_ONCE(cmd->retry, 1);
		kfab_blk_lost(dev);
	} else {
		WRITE_ONCE(cmd->status, BLK_STS_IOERR);
	}
	kfab_blk_abort(cmd);
	return BLK_EH_RESET_TIMER;
}

static int kfab_blk_init_request(struct blk_mq_tag_set *set,
				 struct request *rq, unsigned int hctx_idx,
				 unsigned int numa_node)
{
	struct kfab_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);

	cmd->dev = set->driver_data;
	/* A power-of-two kmalloc is aligned to its size: never crosses a page. */
	BUILD_BUG_ON(sizeof(*cmd->hdr) > 64);
	cmd->hdr = kzalloc_node(64, GFP_KERNEL, numa_node);
	if (!cmd->hdr)
		return -ENOMEM;
	cmd->hdr_kvec.iov_base = cmd->hdr;
	cmd->hdr_kvec.iov_len = sizeof(*cmd->hdr);
	sg_init_table(cmd->sg, KFAB_BLK_MAX_SEGS);
	return 0;
}

static void kfab_blk_exit_request(struct blk_mq_tag_set *set,
				  struct request *rq, unsigned int hctx_idx)
{
	struct kfab_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);

	kfree(cmd->hdr);
}

static const struct blk_mq_ops kfab_blk_mq_ops = {
	.queue_rq = kfab_blk_queue_rq,
	.timeout = kfab_blk_timeout,
	.init_request = kfab_blk_init_request,
	.exit_request = kfab_blk_exit_request,
};

static const struct block_device_operations kfab_blk_fops = {
	.owner = THIS_MODULE,
};

/* A synchronous request at load time, and a lost server's probe. */
struct kfab_blk_sync {
	struct completion done;
	atomic_t pending;
	struct kfab_kep *ep;
	struct kfab_kreq *recv;
};

static void kfab_blk_sync_done(struct kfab_kreq *req)
{
	struct kfab_blk_sync *sync = req->priv;

	/* A send that failed gets no answer: do not wait timeout_ms for it. */
	if (req != sync->recv && req->status)
		kfab_kep_cancel(sync->ep, sync->recv);
	if (atomic_dec_and_test(&sync->pending))
		complete(&sync->done);
}

static int kfab_blk_info(struct kfab_blk_dev *dev, struct kfab_blk_info *info)
{
	struct kfab_blk_sync sync;
	struct kfab_blk_req hdr = {
		.magic = KFAB_BLK_MAGIC,
		.op = KFAB_BLK_OP_INFO,
		.tag = atomic64_inc_return(&dev->next_tag),
		.len = sizeof(*info),
		.client = dev->self,
	};
	struct kvec hvec = { .iov_base = &hdr, .iov_len = sizeof(hdr) };
	struct kvec ivec = { .iov_base = info, .iov_len = sizeof(*info) };
	struct kfab_kreq recv = {
		.op = KFAB_KOP_TRECV,
		.addr = dev->server,
		.tag = hdr.tag,
		.buf_type = KFAB_KBUF_KVEC,
		.kvec = &ivec,
		.nr_segs = 1,
		.len = sizeof(*info),
		.done = kfab_blk_sync_done,
		.priv = &sync,
	};
	struct kfab_kreq send = {
		.op = KFAB_KOP_SEND,
		.addr = dev->server,
		.buf_type = KFAB_KBUF_KVEC,
		.kvec = &hvec,
		.nr_segs = 1,
		.len = sizeof(hdr),
		.done = kfab_blk_sync_done,
		.priv = &sync,
	};
	int rc;

	init_completion(&sync.done);
	atomic_set(&sync.pending, 2);
	sync.ep = dev->ep;
	sync.recv = &recv;
	rc = kfab_kep_post(dev->ep, &recv);
	if (rc)
		return rc;
	rc = kfab_kep_post(dev->ep, &send);
	if (rc) {
		kfab_kep_cancel(dev->ep, &recv);
		kfab_blk_sync_done(&send);
	}
	if (!wait_for_completion_timeout(&sync.done,
					 msecs_to_jiffies(kfab_blk_timeout_ms))) {
		kfab_kep_cancel(dev->ep, &recv);
		/* Either way both complete now: the receive is gone or done. */
		wait_for_completion(&sync.done);
		if (!recv.status)
			recv.status = -ETIMEDOUT;
	}
	if (rc)
		return rc;
	if (send.status)
		return send.status;
	if (recv.status)
		return recv.status == -ECANCELED ? -ETIMEDOUT : recv.status;
	if (recv.out_len != sizeof(*info) || recv.out_data)
		return -EPROTO;
	return 0;
}

/* After recover() quiesced the queues: requests in flight go back. */
static bool kfab_blk_abort_rq(struct request *rq, void *data)
{
	struct kfab_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);

	WRITE_ONCE(cmd->retry, 1);
	kfab_blk_abort(cmd);
	return true;
}

/* The server answers INFO as it did at load: the same blocks. */
static int kfab_blk_probe(struct kfab_blk_dev *dev)
{
	struct kfab_blk_info info;
	int rc;

	rc = kfab_blk_info(dev, &info);
	if (rc)
		return rc;
	if (info.block_size != queue_logical_block_size(dev->disk->queue) ||
	    info.size < (u64)get_capacity(dev->disk) << SECTOR_SHIFT) {
		pr_warn_ratelimited("kfab_blk: kfab_blk0: the server came back with size %llu block %u: not the device's\n",
				    info.size, info.block_size);
		return -EMEDIUMTYPE;
	}
	return 0;
}

/* From RECONNECTING to @state (LIVE or FAILED), unless exit got there first. */
static bool kfab_blk_leave_reconnecting(struct kfab_blk_dev *dev,
					enum kfab_blk_state state)
{
	bool ok;

	spin_lock(&dev->lock);
	ok = dev->state == KFAB_BLK_RECONNECTING;
	if (ok)
		dev->state = state;
	spin_unlock(&dev->lock);
	if (!ok)
		return false;
	/* Requests held go to queue_rq: to the server, or to -EIO. */
	dev->quiesced = false;
	blk_mq_unquiesce_queue(dev->disk->queue);
	blk_mq_kick_requeue_list(dev->disk->queue);
	return true;
}

/*
 * The lost server's work, on kfab_blk_wq: the first run quiesces the
 * queues and sends the requests in flight back to the block layer (their
 * answers may never come); every run probes the server with INFO (bounded
 * by timeout_ms).  An answer resumes I/O; else the next run comes after
 * reconnect_delay, until ctrl_loss_tmo has passed since the loss.
 */
static void kfab_blk_recover(struct work_struct *work)
{
	struct kfab_blk_dev *dev = container_of(to_delayed_work(work),
						struct kfab_blk_dev, recover);
	int rc;

	if (kfab_blk_state(dev) != KFAB_BLK_RECONNECTING)
		return;
	if (!dev->quiesced) {
		blk_mq_quiesce_queue(dev->disk->queue);
		dev->quiesced = true;
		blk_mq_tagset_busy_iter(&dev->tag_set, kfab_blk_abort_rq, dev);
		pr_warn("kfab_blk: kfab_blk0: server lost; I/O held, reconnecting every %d s, for %d s\n",
			kfab_blk_reconnect_delay, kfab_blk_ctrl_loss_tmo);
	}
	rc = kfab_blk_probe(dev);
	if (!rc) {
		if (kfab_blk_leave_reconnecting(dev, KFAB_BLK_LIVE))
			pr_info("kfab_blk: kfab_blk0: server back after %u ms; I/O resumes\n",
				jiffies_to_msecs(jiffies - dev->lost_at));
		return;
	}
	if (kfab_blk_ctrl_loss_tmo >= 0 &&
	    time_after_eq(jiffies, dev->lost_at +
			  msecs_to_jiffies(kfab_blk_ctrl_loss_tmo *
					   MSEC_PER_SEC))) {
		if (kfab_blk_leave_reconnecting(dev, KFAB_BLK_FAILED))
			pr_err("kfab_blk: kfab_blk0: server lost for ctrl_loss_tmo=%d s (last try: %d): I/O fails from now on\n",
			       kfab_blk_ctrl_loss_tmo, rc);
		return;
	}
	queue_delayed_work(kfab_blk_wq, &dev->recover,
			   msecs_to_jiffies(kfab_blk_reconnect_delay *
					    MSEC_PER_SEC));
}

/* ---- server=: the string form of struct kfab_addr ---- */

/*
 * Decimal digits from @s up to @end: no sign, no leading zero (but "0"),
 * at most @max.  Return: true when that is what they are.
 */
static bool kfab_blk_parse_dec(const char *s, const char *end, u64 max,
			       u64 *val)
{
	u64 v = 0;

	if (s == end || (*s == '0' && end - s > 1))
		return false;
	for (; s < end; s++) {
		if (!isdigit(*s) || v > (max - (*s - '0')) / 10)
			return false;
		v = v * 10 + (*s - '0');
	}
	*val = v;
	return true;
}

/* Exactly eight hex digits: an incarnation. */
static bool kfab_blk_parse_inc(const char *s, const char *end, u32 *val)
{
	u32 v = 0;
	int d;

	if (end - s != 8)
		return false;
	for (; s < end; s++) {
		d = hex_to_bin(*s);
		if (d < 0)
			return false;
		v = v << 4 | d;
	}
	*val = v;
	return true;
}

/* The host from @h to @h_end: [IPV6] (@bracket), A.B.C.D or "local". */
static int kfab_blk_parse_host(const char *h, const char *h_end, bool bracket,
			       struct kfab_addr *a)
{
	static const u8 v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct in6_addr *a6 = (struct in6_addr *)a->node;
	const char *end;

	if (!bracket && h_end - h == 5 && !memcmp(h, "local", 5)) {
		a->family = KFAB_ADDR_LOCAL;
		return 0;
	}
	if (bracket) {
		if (!in6_pton(h, h_end - h, a->node, -1, &end) || end != h_end)
			return -EINVAL;
	} else {
		if (!in4_pton(h, h_end - h, a->node + 12, -1, &end) ||
		    end != h_end)
			return -EINVAL;
		memcpy(a->node, v4mapped, sizeof(v4mapped));
	}
	/* No node: :: and 0.0.0.0; nor a group. */
	if (ipv6_addr_any(a6) || ipv6_addr_is_multicast(a6) ||
	    (ipv6_addr_v4mapped(a6) &&
	     (!a6->s6_addr32[3] || ipv4_is_multicast(a6->s6_addr32[3]) ||
	      ipv4_is_lbcast(a6->s6_addr32[3]))))
		return -EINVAL;
	a->family = KFAB_ADDR_INET;
	return 0;
}

/* ":PORT" (optional, INET only), "/EP" from @p on. */
static const char *kfab_blk_parse_port_ep(const char *p, const char *end,
					  struct kfab_addr *a)
{
	const char *slash = memchr(p, '/', end - p);
	const char *dot;
	u64 v;
	u32 inc = 0;

	if (!slash)
		return "no /EP after the node";
	if (p < slash) {
		if (*p != ':')
			return "the node is followed by neither :PORT nor /EP";
		if (a->family != KFAB_ADDR_INET)
			return "a port goes with an IPv4 or [IPv6] node only";
		if (!kfab_blk_parse_dec(p + 1, slash, U16_MAX, &v) || !v)
			return "the port is no number from 1 to 65535";
		a->port = cpu_to_be16(v);
	} else if (a->family == KFAB_ADDR_INET) {
		a->port = cpu_to_be16(KFAB_PORT_DEFAULT);
	}
	p = slash + 1;
	dot = memchr(p, '.', end - p);
	if (!kfab_blk_parse_dec(p, dot ?: end, U64_MAX, &v) || !v)
		return "EP is no endpoint number (a service 1..65535, or NUMBER.INCARNATION)";
	if (dot ? v <= KFAB_SERVICE_MAX || !kfab_blk_parse_inc(dot + 1, end, &inc) :
		  v > KFAB_SERVICE_MAX)
		return "EP above 65535 needs its incarnation (8 hex digits), a service none";
	a->ep = cpu_to_be64(v);
	a->incarnation = cpu_to_be32(inc);
	return NULL;
}

/**
 * kfab_blk_parse_server() - the server= string as an address
 * @s: fi_kfab://A.B.C.D[:PORT]/EP, fi_kfab://[IPV6][:PORT]/EP or
 *	fi_kfab://local/EP (Documentation/net.rst); EP a service number
 *	(1..65535) or NUMBER.INCARNATION
 * @a: out: the address
 *
 * Everything is checked; what is wrong is logged.
 *
 * Return: 0 or -EINVAL.
 */
static int kfab_blk_parse_server(const char *s, struct kfab_addr *a)
{
	size_t len = strnlen(s, KFAB_BLK_ADDR_STRLEN);
	const char *p, *end = s + len, *h, *h_end, *why = NULL;
	bool bracket;

	*a = (struct kfab_addr){};
	if (len == KFAB_BLK_ADDR_STRLEN) {
		why = "too long";
		goto bad;
	}
	if (strncmp(s, KFAB_BLK_ADDR_PREFIX, KFAB_BLK_ADDR_PREFIX_LEN)) {
		why = "no fi_kfab:// prefix";
		goto bad;
	}
	p = s + KFAB_BLK_ADDR_PREFIX_LEN;
	bracket = *p == '[';
	if (bracket) {
		h = p + 1;
		h_end = memchr(h, ']', end - h);
		if (!h_end) {
			why = "no ] after [IPv6";
			goto bad;
		}
		p = h_end + 1;
	} else {
		h = p;
		h_end = h + strcspn(h, ":/");
		p = h_end;
	}
	if (kfab_blk_parse_host(h, h_end, bracket, a)) {
		why = bracket ? "no IPv6 address of a node in [ ]" :
				"the node is no IPv4 address of a node, [IPv6] nor local";
		goto bad;
	}
	why = kfab_blk_parse_port_ep(p, end, a);
	if (!why)
		return 0;
bad:
	pr_err("kfab_blk: server=%.*s: %s\n", KFAB_BLK_ADDR_STRLEN, s, why);
	return -EINVAL;
}

/* The server's address, from server= or server_ep=. */
static int kfab_blk_server_addr(struct kfab_blk_dev *dev,
				struct kfab_addr *addr)
{
	if (!kfab_blk_server) {
		/* This machine's: its numbers carry our module's load. */
		*addr = (struct kfab_addr){
			.family = KFAB_ADDR_LOCAL,
			.ep = cpu_to_be64(kfab_blk_server_ep),
			.incarnation = kfab_blk_server_ep > KFAB_SERVICE_MAX ?
				       dev->self.incarnation : 0,
		};
		return 0;
	}
	*addr = dev->server_addr;
	/* The server answers on another node only to a node address. */
	if (addr->family == KFAB_ADDR_INET &&
	    dev->self.family != KFAB_ADDR_INET) {
		pr_err("kfab_blk: server=%s is on a node, and this namespace has no listener (kfabctl net listen ADDR, in the initial network namespace, first)\n",
		       kfab_blk_server);
		return -EADDRNOTAVAIL;
	}
	return 0;
}

/* The endpoint, its AV and the server's index in it. */
static int kfab_blk_connect(struct kfab_blk_dev *dev)
{
	struct kfab_kep_attr attr = { .name = "kfab_blk0" };
	struct kfab_addr addr;
	int rc;

	dev->self_index = KFAB_KADDR_ANY;
	dev->dom = kfab_kdomain_open("kfab_blk");
	if (IS_ERR(dev->dom))
		return PTR_ERR(dev->dom);
	/* A named AV is the server's: it must exist. */
	dev->av = kfab_kav_open(dev->dom, kfab_blk_av,
				kfab_blk_av ? KFAB_AV_OPEN_NO_CREATE : 0, 0);
	if (IS_ERR(dev->av)) {
		rc = PTR_ERR(dev->av);
		goto err_dom;
	}
	dev->ep = kfab_kep_open(dev->dom, dev->av, &attr);
	if (IS_ERR(dev->ep)) {
		rc = PTR_ERR(dev->ep);
		goto err_av;
	}
	kfab_kep_addr(dev->ep, &dev->self);

	if (kfab_blk_av) {
		dev->server = kfab_blk_server_index;
		rc = kfab_kav_lookup(dev->av, dev->server, &addr);
		if (rc)
			goto err_ep;
		/* So that the server's answers find us by index too. */
		kfab_kep_addr(dev->ep, &addr);
		rc = kfab_kav_insert(dev->av, &addr, 1, &dev->self_index);
	} else {
		rc = kfab_blk_server_addr(dev, &addr);
		if (rc)
			goto err_ep;
		rc = kfab_kav_insert(dev->av, &addr, 1, &dev->server);
	}
	if (rc < 0)
		goto err_ep;
	return 0;

err_ep:
	kfab_kep_close(dev->ep);
err_av:
	kfab_kav_close(dev->av);
err_dom:
	kfab_kdomain_close(dev->dom);
	return rc;
}

static void kfab_blk_disconnect(struct kfab_blk_dev *dev)
{
	/* The named AV outlives us: take our address out of it. */
	if (dev->self_index != KFAB_KADDR_ANY)
		kfab_kav_remove(dev->av, &dev->self_index, 1);
	kfab_kep_close(dev->ep);
	kfab_kav_close(dev->av);
	kfab_kdomain_close(dev->dom);
}

/*
 * Unloading, or add_disk() failed: the device fails from now on, and the
 * requests held for a lost server go to queue_rq, which fails them.
 */
static void kfab_blk_stop_recovery(struct kfab_blk_dev *dev)
{
	spin_lock(&dev->lock);
	dev->state = KFAB_BLK_FAILED;
	spin_unlock(&dev->lock);
	cancel_delayed_work_sync(&dev->recover);
	if (dev->quiesced) {
		dev->quiesced = false;
		blk_mq_unquiesce_queue(dev->disk->queue);
	}
	blk_mq_kick_requeue_list(dev->disk->queue);
}

/* Every parameter, before anything is opened. */
static int kfab_blk_check_params(struct kfab_blk_dev *dev)
{
	if (!!kfab_blk_av + !!kfab_blk_server_ep + !!kfab_blk_server != 1) {
		pr_err("kfab_blk: needs one of av= (with server_index=), server_ep= and server=\n");
		return -EINVAL;
	}
	if (!kfab_blk_queue_depth || !kfab_blk_hw_queues ||
	    !kfab_blk_timeout_ms) {
		pr_err("kfab_blk: queue_depth, hw_queues and timeout_ms must not be 0\n");
		return -EINVAL;
	}
	if (kfab_blk_reconnect_delay < 1 ||
	    kfab_blk_reconnect_delay > KFAB_BLK_MAX_SECS ||
	    kfab_blk_ctrl_loss_tmo < -1 ||
	    kfab_blk_ctrl_loss_tmo > KFAB_BLK_MAX_SECS) {
		pr_err("kfab_blk: reconnect_delay=%d must be 1 to %lu s, ctrl_loss_tmo=%d -1 (forever) to %lu s\n",
		       kfab_blk_reconnect_delay, KFAB_BLK_MAX_SECS,
		       kfab_blk_ctrl_loss_tmo, KFAB_BLK_MAX_SECS);
		return -EINVAL;
	}
	if (kfab_blk_server) {
		if (kfab_blk_parse_server(kfab_blk_server, &dev->server_addr))
			return -EINVAL;
		dev->reconnect = true;
	}
	return 0;
}

static int __init kfab_blk_init(void)
{
	struct kfab_blk_dev *dev = &kfab_blk;
	struct kfab_blk_limits limits = {
		.max_hw_sectors = KFAB_BLK_MAX_DATA >> SECTOR_SHIFT,
		.max_segments = KFAB_BLK_MAX_SEGS,
		/* The server's page cache: fsync goes through as a flush. */
		.write_cache = true,
	};
	struct kfab_blk_info info;
	struct gendisk *disk;
	int rc;

	rc = kfab_blk_check_params(dev);
	if (rc)
		return rc;
	spin_lock_init(&dev->lock);
	dev->state = KFAB_BLK_LIVE;
	INIT_DELAYED_WORK(&dev->recover, kfab_blk_recover);
	kfab_blk_wq = alloc_workqueue("kfab_blk", WQ_MEM_RECLAIM, 0);
	if (!kfab_blk_wq)
		return -ENOMEM;
	rc = kfab_blk_connect(dev);
	if (rc) {
		pr_err("kfab_blk: cannot reach the server's address: %d\n", rc);
		goto err_wq;
	}
	rc = kfab_blk_info(dev, &info);
	if (rc) {
		pr_err("kfab_blk: the server does not answer: %d\n", rc);
		goto err_disconnect;
	}
	rc = -EINVAL;
	if (info.block_size < 512 || info.block_size > PAGE_SIZE ||
	    !is_power_of_2(info.block_size) ||
	    (kfab_blk_size && kfab_blk_size > info.size)) {
		pr_err("kfab_blk: server's size %llu block %u, size=%lu asked\n",
		       info.size, info.block_size, kfab_blk_size);
		goto err_disconnect;
	}

	rc = register_blkdev(0, "kfab_blk");
	if (rc < 0)
		goto err_disconnect;
	dev->major = rc;

	dev->tag_set.ops = &kfab_blk_mq_ops;
	dev->tag_set.nr_hw_queues = kfab_blk_hw_queues;
	dev->tag_set.queue_depth = kfab_blk_queue_depth;
	dev->tag_set.numa_node = NUMA_NO_NODE;
	dev->tag_set.cmd_size = sizeof(struct kfab_blk_cmd);
	/* Posting sleeps (kfab's mutexes). */
	dev->tag_set.flags = BLK_MQ_F_SHOULD_MERGE | BLK_MQ_F_BLOCKING;
	dev->tag_set.timeout = msecs_to_jiffies(kfab_blk_timeout_ms);
	dev->tag_set.driver_data = dev;
	rc = blk_mq_alloc_tag_set(&dev->tag_set);
	if (rc)
		goto err_blkdev;

	limits.block_size = info.block_size;
	disk = kfab_blk_mq_alloc_disk(&dev->tag_set, &limits, dev);
	if (IS_ERR(disk)) {
		rc = PTR_ERR(disk);
		goto err_tag_set;
	}
	dev->disk = disk;
	disk->major = dev->major;
	disk->first_minor = 0;
	disk->minors = 1;
	disk->fops = &kfab_blk_fops;
	disk->private_data = dev;
	strscpy(disk->disk_name, "kfab_blk0", sizeof(disk->disk_name));
	set_capacity(disk, (kfab_blk_size ?: info.size) >> SECTOR_SHIFT);
	rc = add_disk(disk);
	if (rc)
		goto err_disk;
	pr_info("kfab_blk: kfab_blk0, %llu bytes, endpoint %llu, server index %llu%s%s\n",
		(u64)get_capacity(disk) << SECTOR_SHIFT,
		be64_to_cpu(dev->self.ep), dev->server,
		kfab_blk_server ? ", server " : "",
		kfab_blk_server ? kfab_blk_server : "");
	return 0;

err_disk:
	kfab_blk_stop_recovery(dev);
	put_disk(disk);
err_tag_set:
	blk_mq_free_tag_set(&dev->tag_set);
err_blkdev:
	unregister_blkdev(dev->major, "kfab_blk");
err_disconnect:
	kfab_blk_disconnect(dev);
err_wq:
	destroy_workqueue(kfab_blk_wq);
	return rc;
}

static void __exit kfab_blk_exit(void)
{
	struct kfab_blk_dev *dev = &kfab_blk;

	/* Nobody has the device open: a lost server is not waited for. */
	kfab_blk_stop_recovery(dev);
	/* Waits for the requests in flight: timeouts bound them. */
	del_gendisk(dev->disk);
	put_disk(dev->disk);
	blk_mq_free_tag_set(&dev->tag_set);
	unregister_blkdev(dev->major, "kfab_blk");
	kfab_blk_disconnect(dev);
	destroy_workqueue(kfab_blk_wq);
}

module_init(kfab_blk_init);
module_exit(kfab_blk_exit);

MODULE_DESCRIPTION("kfab_blk: a block device served by a user-space kfab server");
MODULE_LICENSE("Dual BSD/GPL");
