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
 */
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/completion.h>
#include <linux/module.h>
#include <linux/slab.h>

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

struct kfab_blk_dev {
	struct kfab_kdomain *dom;
	struct kfab_kav *av;
	struct kfab_kep *ep;
	u64 server;		/* the server's index in @av */
	struct kfab_addr self;
	u64 self_index;		/* ours in a named @av, or KFAB_KADDR_ANY */
	atomic64_t next_tag;
	struct blk_mq_tag_set tag_set;
	struct gendisk *disk;
	int major;
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
};

static struct kfab_blk_dev kfab_blk;

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

static void kfab_blk_put(struct kfab_blk_cmd *cmd)
{
	if (atomic_dec_and_test(&cmd->pending))
		blk_mq_end_request(blk_mq_rq_from_pdu(cmd), READ_ONCE(cmd->status));
}

/* Both halves come here, from kfab's workqueue. */
static void kfab_blk_done(struct kfab_kreq *kreq)
{
	struct kfab_blk_cmd *cmd = kreq->priv;
	struct request *rq = blk_mq_rq_from_pdu(cmd);

	if (kreq->status) {
		WRITE_ONCE(cmd->status, BLK_STS_IOERR);
		/* Not sent: no answer will come. */
		if (kreq == &cmd->send)
			kfab_kep_cancel(cmd->dev->ep, &cmd->recv);
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
	blk_mq_start_request(rq);

	hdr->magic = KFAB_BLK_MAGIC;
	hdr->tag = atomic64_inc_return(&dev->next_tag);
	hdr->offset = (u64)blk_rq_pos(rq) << SECTOR_SHIFT;
	hdr->len = len;
	hdr->client = dev->self;
	cmd->status = BLK_STS_OK;
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

/*
 * From kblockd (process context).  The receive is cancelled; its
 * completion ends the request with -EIO.  If it is completing already,
 * that ends it.  Either way the request is ended by kfab_blk_done().
 */
static enum blk_eh_timer_return kfab_blk_timeout(struct request *rq)
{
	struct kfab_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);

	WRITE_ONCE(cmd->status, BLK_STS_IOERR);
	if (!kfab_kep_cancel(cmd->dev->ep, &cmd->recv))
		kfab_blk_drain(cmd->dev, cmd->hdr->tag);
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

/* A synchronous request at load time: what the server serves. */
struct kfab_blk_sync {
	struct completion done;
	atomic_t pending;
};

static void kfab_blk_sync_done(struct kfab_kreq *req)
{
	struct kfab_blk_sync *sync = req->priv;

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
		/* This machine's: its numbers carry our module's load. */
		addr = (struct kfab_addr){
			.family = KFAB_ADDR_LOCAL,
			.ep = cpu_to_be64(kfab_blk_server_ep),
			.incarnation = kfab_blk_server_ep > KFAB_SERVICE_MAX ?
				       dev->self.incarnation : 0,
		};
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

	if ((!kfab_blk_av && !kfab_blk_server_ep) || !kfab_blk_queue_depth ||
	    !kfab_blk_hw_queues || !kfab_blk_timeout_ms) {
		pr_err("kfab_blk: needs av= or server_ep=, and non-zero queue_depth, hw_queues, timeout_ms\n");
		return -EINVAL;
	}
	rc = kfab_blk_connect(dev);
	if (rc) {
		pr_err("kfab_blk: cannot reach the server's address: %d\n", rc);
		return rc;
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
	pr_info("kfab_blk: kfab_blk0, %llu bytes, endpoint %llu, server index %llu\n",
		(u64)get_capacity(disk) << SECTOR_SHIFT,
		be64_to_cpu(dev->self.ep),
		dev->server);
	return 0;

err_disk:
	put_disk(disk);
err_tag_set:
	blk_mq_free_tag_set(&dev->tag_set);
err_blkdev:
	unregister_blkdev(dev->major, "kfab_blk");
err_disconnect:
	kfab_blk_disconnect(dev);
	return rc;
}

static void __exit kfab_blk_exit(void)
{
	struct kfab_blk_dev *dev = &kfab_blk;

	/* Waits for the requests in flight: timeouts bound them. */
	del_gendisk(dev->disk);
	put_disk(dev->disk);
	blk_mq_free_tag_set(&dev->tag_set);
	unregister_blkdev(dev->major, "kfab_blk");
	kfab_blk_disconnect(dev);
}

module_init(kfab_blk_init);
module_exit(kfab_blk_exit);

MODULE_DESCRIPTION("kfab_blk: a block device served by a user-space kfab server");
MODULE_LICENSE("Dual BSD/GPL");
