// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fi_peer(3): kfab as the peer of an owner written here (as a provider
 * linking kfab would be), and kfab as the owner of another kfab CQ and of
 * libfabric's own shm provider.
 *
 * The owner records every callback kfab makes (which, in what order, with
 * which arguments) and can refuse one, as an owner whose CQ is full does.
 * Documentation/peer.rst describes both roles.
 *
 * Runs inside the test VM with FI_PROVIDER_PATH naming libshim/prov; every
 * test SKIPs without /dev/kfab.  The user-space half is also meant to run
 * under valgrind (selftests/vm-suite kfab_peer does).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext.h>
#include <rdma/fi_tagged.h>

#include <linux/kfab.h>
#include <kfab/kfab.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

#define TIMEOUT_MS	10000

/* ---- the owner: records every callback ---- */

enum ev_type {
	EV_WRITE = 1, EV_WRITEERR, EV_AV_QUERY, EV_EQ_WRITE,
	EV_GET_MSG, EV_GET_TAG, EV_QUEUE_MSG, EV_QUEUE_TAG, EV_FREE,
};

struct ev {
	enum ev_type type;
	void *ctx;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data, tag;
	fi_addr_t src;
	int err, prov_errno;
	size_t olen;
	uint32_t event;
	struct fi_eq_entry eq_entry;
	struct fi_peer_rx_entry *entry;
};

#define MAX_EVS	4096

struct owner {
	pthread_mutex_t lock;
	struct ev ev[MAX_EVS];
	int n;
	int refuse_write;	/* refuse this many write() calls */
	int refuse_writeerr;
	int av_query_ret;
	enum fi_av_type av_type;
	size_t av_count;
	struct fid_peer_cq peer_cq;
	struct fi_ops_cq_owner cq_ops;
	struct fid_peer_av peer_av;
	struct fi_ops_av_owner av_ops;
	struct fid_eq eq;
	struct fi_ops_eq eq_ops;
	/* the SRX: receives posted at the owner, messages kfab queued */
	struct fid_peer_srx peer_srx;
	struct fi_ops_srx_owner srx_ops;
	struct fi_ops_srx_peer srx_peer_ops;	/* kfab fills it in */
	struct fi_peer_rx_entry *posted[16];
	int nposted;
	struct fi_peer_rx_entry *queued[16];
	int nqueued;
	int entries_out;	/* allocated and not freed */
};

static struct owner owner;

static struct ev *owner_add(enum ev_type type)
{
	struct ev *e = NULL;

	pthread_mutex_lock(&owner.lock);
	if (owner.n < MAX_EVS) {
		e = &owner.ev[owner.n++];
		memset(e, 0, sizeof(*e));
		e->type = type;
	}
	pthread_mutex_unlock(&owner.lock);
	return e;
}

static int owner_count(enum ev_type type)
{
	int i, n = 0;

	pthread_mutex_lock(&owner.lock);
	for (i = 0; i < owner.n; i++)
		n += owner.ev[i].type == type;
	pthread_mutex_unlock(&owner.lock);
	return n;
}

static ssize_t owner_write(struct fid_peer_cq *cq, void *context,
			   uint64_t flags, size_t len, void *buf,
			   uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct ev *e = owner_add(EV_WRITE);
	bool refuse;

	if (!e || cq != &owner.peer_cq)
		return -FI_EINVAL;
	e->ctx = context;
	e->flags = flags;
	e->len = len;
	e->buf = buf;
	e->data = data;
	e->tag = tag;
	e->src = src;
	pthread_mutex_lock(&owner.lock);
	refuse = owner.refuse_write > 0;
	if (refuse)
		owner.refuse_write--;
	pthread_mutex_unlock(&owner.lock);
	/* A refused entry is logged with err -FI_EAGAIN: it must come again. */
	if (refuse)
		e->err = -FI_EAGAIN;
	return refuse ? -FI_EAGAIN : 0;
}

static ssize_t owner_writeerr(struct fid_peer_cq *cq,
			      const struct fi_cq_err_entry *err)
{
	struct ev *e = owner_add(EV_WRITEERR);
	bool refuse;

	if (!e || cq != &owner.peer_cq)
		return -FI_EINVAL;
	e->ctx = err->op_context;
	e->flags = err->flags;
	e->len = err->len;
	e->buf = err->buf;
	e->data = err->data;
	e->tag = err->tag;
	e->olen = err->olen;
	e->err = err->err;
	e->prov_errno = err->prov_errno;
	pthread_mutex_lock(&owner.lock);
	refuse = owner.refuse_writeerr > 0;
	if (refuse)
		owner.refuse_writeerr--;
	pthread_mutex_unlock(&owner.lock);
	if (refuse)
		e->src = (fi_addr_t)-FI_EAGAIN;	/* marks it refused */
	return refuse ? -FI_EAGAIN : 0;
}

static int owner_av_query(struct fid_peer_av *av, struct fi_av_attr *attr)
{
	owner_add(EV_AV_QUERY);
	if (av != &owner.peer_av || !attr)
		return -FI_EINVAL;
	if (owner.av_query_ret)
		return owner.av_query_ret;
	memset(attr, 0, sizeof(*attr));
	attr->type = owner.av_type;
	attr->count = owner.av_count;
	return 0;
}

static fi_addr_t owner_av_ep_addr(struct fid_peer_av *av, struct fid_ep *ep)
{
	(void)av; (void)ep;
	return FI_ADDR_NOTAVAIL;
}

static ssize_t owner_eq_write(struct fid_eq *eq, uint32_t event,
			      const void *buf, size_t len, uint64_t flags)
{
	struct ev *e = owner_add(EV_EQ_WRITE);

	if (!e || eq != &owner.eq || flags)
		return -FI_EINVAL;
	e->event = event;
	e->len = len;
	if (len >= sizeof(struct fi_eq_entry))
		memcpy(&e->eq_entry, buf, sizeof(e->eq_entry));
	return (ssize_t)len;
}

/* The owner's receive entries: one allocation with its iovec. */
struct owner_entry {
	struct fi_peer_rx_entry e;
	struct iovec iov;
};

static struct fi_peer_rx_entry *owner_entry_new(void)
{
	struct owner_entry *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->e.iov = &o->iov;
	o->e.srx = &owner.peer_srx;
	pthread_mutex_lock(&owner.lock);
	owner.entries_out++;
	pthread_mutex_unlock(&owner.lock);
	return &o->e;
}

static int owner_get(struct fid_peer_srx *srx, fi_addr_t addr, size_t size,
		     uint64_t tag, bool tagged, struct fi_peer_rx_entry **e)
{
	struct ev *ev = owner_add(tagged ? EV_GET_TAG : EV_GET_MSG);
	struct fi_peer_rx_entry *p = NULL;
	int i;

	if (!ev || srx != &owner.peer_srx)
		return -FI_EINVAL;
	ev->src = addr;
	ev->len = size;
	ev->tag = tag;
	pthread_mutex_lock(&owner.lock);
	if (owner.nposted) {
		p = owner.posted[0];
		for (i = 1; i < owner.nposted; i++)
			owner.posted[i - 1] = owner.posted[i];
		owner.nposted--;
	}
	pthread_mutex_unlock(&owner.lock);
	if (!p) {
		p = owner_entry_new();
		if (!p)
			return -FI_ENOMEM;
		p->addr = addr;
		p->tag = tag;
		p->flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	} else {
		p->addr = addr;
		p->tag = tag;
		p->flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	}
	ev->entry = p;
	*e = p;
	return p->count ? 0 : -FI_ENOENT;
}

#if FI_MAJOR_VERSION >= 2
static int owner_get_msg(struct fid_peer_srx *srx,
			 struct fi_peer_match_attr *a,
			 struct fi_peer_rx_entry **e)
{
	return owner_get(srx, a->addr, a->msg_size, 0, false, e);
}

static int owner_get_tag(struct fid_peer_srx *srx,
			 struct fi_peer_match_attr *a,
			 struct fi_peer_rx_entry **e)
{
	return owner_get(srx, a->addr, a->msg_size, a->tag, true, e);
}
#else
static int owner_get_msg(struct fid_peer_srx *srx, fi_addr_t addr,
			 size_t size, struct fi_peer_rx_entry **e)
{
	return owner_get(srx, addr, size, 0, false, e);
}

static int owner_get_tag(struct fid_peer_srx *srx, fi_addr_t addr,
			 uint64_t tag, struct fi_peer_rx_entry **e)
{
	return owner_get(srx, addr, 0, tag, true, e);
}
#endif

static int owner_queue(struct fi_peer_rx_entry *e, bool tagged)
{
	struct ev *ev = owner_add(tagged ? EV_QUEUE_TAG : EV_QUEUE_MSG);

	if (!ev)
		return -FI_ENOMEM;
	ev->entry = e;
	ev->ctx = e->peer_context;
	pthread_mutex_lock(&owner.lock);
	owner.queued[owner.nqueued++] = e;
	pthread_mutex_unlock(&owner.lock);
	return 0;
}

static int owner_queue_msg(struct fi_peer_rx_entry *e)
{
	return owner_queue(e, false);
}

static int owner_queue_tag(struct fi_peer_rx_entry *e)
{
	return owner_queue(e, true);
}

static void owner_free_entry(struct fi_peer_rx_entry *e)
{
	struct ev *ev = owner_add(EV_FREE);

	if (ev)
		ev->entry = e;
	pthread_mutex_lock(&owner.lock);
	owner.entries_out--;
	pthread_mutex_unlock(&owner.lock);
	free(container_of(e, struct owner_entry, e));
}

/*
 * The application posts a receive at the owner: the oldest queued
 * message gets it (start_*), or it waits for get_*.
 */
static int owner_post(void *buf, size_t len, void *ctx)
{
	struct fi_peer_rx_entry *e = NULL;
	int i;

	pthread_mutex_lock(&owner.lock);
	if (owner.nqueued) {
		e = owner.queued[0];
		for (i = 1; i < owner.nqueued; i++)
			owner.queued[i - 1] = owner.queued[i];
		owner.nqueued--;
	}
	pthread_mutex_unlock(&owner.lock);
	if (!e) {
		e = owner_entry_new();
		if (!e)
			return -FI_ENOMEM;
		pthread_mutex_lock(&owner.lock);
		owner.posted[owner.nposted++] = e;
		pthread_mutex_unlock(&owner.lock);
	}
	e->iov[0].iov_base = buf;
	e->iov[0].iov_len = len;
	e->count = 1;
	e->context = ctx;
	if (owner.nposted && owner.posted[owner.nposted - 1] == e)
		return 0;
	return e->flags & FI_TAGGED ? owner.peer_srx.peer_ops->start_tag(e) :
				      owner.peer_srx.peer_ops->start_msg(e);
}

/* The application discards the oldest queued message at the owner. */
static int owner_discard(void)
{
	struct fi_peer_rx_entry *e;
	int i;

	pthread_mutex_lock(&owner.lock);
	if (!owner.nqueued) {
		pthread_mutex_unlock(&owner.lock);
		return -FI_ENOENT;
	}
	e = owner.queued[0];
	for (i = 1; i < owner.nqueued; i++)
		owner.queued[i - 1] = owner.queued[i];
	owner.nqueued--;
	pthread_mutex_unlock(&owner.lock);
	return e->flags & FI_TAGGED ? owner.peer_srx.peer_ops->discard_tag(e) :
				      owner.peer_srx.peer_ops->discard_msg(e);
}

static void owner_reset(void)
{
	static bool init;

	if (!init) {
		pthread_mutex_init(&owner.lock, NULL);
		init = true;
	}
	pthread_mutex_lock(&owner.lock);
	owner.n = 0;
	owner.refuse_write = 0;
	owner.refuse_writeerr = 0;
	owner.av_query_ret = 0;
	owner.av_type = FI_AV_TABLE;
	owner.av_count = 64;
	pthread_mutex_unlock(&owner.lock);

	owner.cq_ops = (struct fi_ops_cq_owner){
		.size = sizeof(owner.cq_ops),
		.write = owner_write,
		.writeerr = owner_writeerr,
	};
	owner.peer_cq.fid.fclass = FI_CLASS_PEER_CQ;
	owner.peer_cq.owner_ops = &owner.cq_ops;

	owner.av_ops = (struct fi_ops_av_owner){
		.size = sizeof(owner.av_ops),
		.query = owner_av_query,
		.ep_addr = owner_av_ep_addr,
	};
	owner.peer_av.fid.fclass = FI_CLASS_PEER_AV;
	owner.peer_av.owner_ops = &owner.av_ops;

	owner.nposted = 0;
	owner.nqueued = 0;
	owner.entries_out = 0;
	owner.srx_ops = (struct fi_ops_srx_owner){
		.size = sizeof(owner.srx_ops),
		.get_msg = owner_get_msg,
		.get_tag = owner_get_tag,
		.queue_msg = owner_queue_msg,
		.queue_tag = owner_queue_tag,
		.free_entry = owner_free_entry,
	};
	memset(&owner.srx_peer_ops, 0, sizeof(owner.srx_peer_ops));
	owner.srx_peer_ops.size = sizeof(owner.srx_peer_ops);
	memset(&owner.peer_srx, 0, sizeof(owner.peer_srx));
	owner.peer_srx.ep_fid.fid.fclass = FI_CLASS_PEER_SRX;
	owner.peer_srx.owner_ops = &owner.srx_ops;
	owner.peer_srx.peer_ops = &owner.srx_peer_ops;

	memset(&owner.eq_ops, 0, sizeof(owner.eq_ops));
	owner.eq_ops.size = sizeof(owner.eq_ops);
	owner.eq_ops.write = owner_eq_write;
	owner.eq.fid.fclass = FI_CLASS_EQ;
	owner.eq.ops = &owner.eq_ops;
}

/* The owner's fi_cq_read(peer, NULL, 0) until @type was called @n times. */
static bool owner_progress_until(struct fid_cq *peer, struct fid_cq *other,
				 enum ev_type type, int n)
{
	uint64_t end = kfab_now_ms() + TIMEOUT_MS;
	struct fi_cq_tagged_entry e;

	do {
		if (other)
			(void)fi_cq_read(other, &e, 0);
		if (fi_cq_read(peer, NULL, 0))
			return false;
		if (owner_count(type) >= n)
			return true;
	} while (kfab_now_ms() < end);
	return false;
}

/* ---- kfab objects ---- */

FIXTURE(peer) {
	struct kfab_test_fi fi;		/* fi.cq: an ordinary kfab CQ */
	struct fid_ep *tx;		/* bound to fi.cq (fi.ep unused) */
	fi_addr_t tx_addr;
};

static int open_ep(FIXTURE_DATA(peer) *self, struct fid_cq *cq,
		   struct fid_ep **ep, fi_addr_t *addr)
{
	struct kfab_addr a;
	size_t len = sizeof(a);
	int rc;

	rc = fi_endpoint(self->fi.domain, self->fi.info, ep, NULL);
	if (!rc)
		rc = fi_ep_bind(*ep, &self->fi.av->fid, 0);
	if (!rc)
		rc = fi_ep_bind(*ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_enable(*ep);
	if (!rc)
		rc = fi_getname(&(*ep)->fid, &a, &len);
	if (!rc)
		rc = fi_av_insert(self->fi.av, &a, 1, addr, 0,
				  NULL) == 1 ? 0 : -1;
	return rc;
}

FIXTURE_SETUP(peer)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };

	owner_reset();
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab,shm", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_endpoints())
		SKIP(return, "kfab.ko without endpoints");
	test_fi_domain_open(&self->fi, kfab_test_rdm_hints());
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &av_attr, &self->fi.av, NULL));
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &cq_attr, &self->fi.cq, NULL));
	ASSERT_EQ(0, open_ep(self, self->fi.cq, &self->tx, &self->tx_addr));
}

FIXTURE_TEARDOWN(peer)
{
	if (self->tx)
		EXPECT_EQ(0, fi_close(&self->tx->fid));
	test_fi_close(&self->fi);
}

static int open_peer_cq(FIXTURE_DATA(peer) *self, enum fi_cq_format format,
			struct fid_cq **cq)
{
	struct fi_cq_attr attr = { .format = format, .flags = FI_PEER,
				   .wait_obj = FI_WAIT_FD, .size = 64 };
	struct fi_peer_cq_context ctx = { .size = sizeof(ctx),
					  .cq = &owner.peer_cq };

	return fi_cq_open(self->fi.domain, &attr, cq, &ctx);
}

/* ---- kfab as the peer: CQ ---- */

TEST_F_TIMEOUT(peer, cq_open_checks_the_owner_context, 300)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED,
				   .flags = FI_PEER };
	struct fi_peer_cq_context ctx = { .size = sizeof(ctx),
					  .cq = &owner.peer_cq };
	struct fi_ops_cq_owner half = { .size = sizeof(half),
					.write = owner_write };
	struct fid_peer_cq bad = { .owner_ops = &half };
	struct fid_cq *cq;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	ctx.size = sizeof(ctx) - 1;
	EXPECT_EQ(-FI_EINVAL, fi_cq_open(self->fi.domain, &attr, &cq, &ctx));
	ctx.size = sizeof(ctx);
	ctx.cq = NULL;
	EXPECT_EQ(-FI_EINVAL, fi_cq_open(self->fi.domain, &attr, &cq, &ctx));
	ctx.cq = &bad;		/* no writeerr */
	EXPECT_EQ(-FI_EINVAL, fi_cq_open(self->fi.domain, &attr, &cq, &ctx));
	ctx.cq = &owner.peer_cq;
	attr.flags = FI_PEER | (1ULL << 50);
	EXPECT_EQ(-FI_EBADFLAGS, fi_cq_open(self->fi.domain, &attr, &cq, &ctx));
	attr.flags = FI_PEER;
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &cq, &ctx));
	/* The context was the owner's and temporary: not kept as ours. */
	EXPECT_EQ(NULL, cq->fid.context);
	EXPECT_EQ((size_t)FI_CLASS_CQ, cq->fid.fclass);
	/* Nothing happened, so nothing was written. */
	EXPECT_EQ(0, fi_cq_read(cq, NULL, 0));
	EXPECT_EQ(0, owner.n);
	EXPECT_EQ(0, fi_close(&cq->fid));
}

TEST_F_TIMEOUT(peer, cq_reads_other_than_progress_are_enosys, 300)
{
	struct fi_cq_tagged_entry e[2];
	struct fi_cq_err_entry err = { 0 };
	fi_addr_t src;
	struct fid_cq *cq;
	int fd;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, open_peer_cq(self, FI_CQ_FORMAT_TAGGED, &cq));
	EXPECT_EQ(0, fi_cq_read(cq, NULL, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_cq_read(cq, e, 1));
	EXPECT_EQ(-FI_ENOSYS, fi_cq_readfrom(cq, e, 2, &src));
	EXPECT_EQ(-FI_ENOSYS, fi_cq_readerr(cq, &err, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_cq_sread(cq, e, 1, NULL, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_cq_sreadfrom(cq, e, 1, &src, NULL, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_cq_signal(cq));
	/* The owner waits and signals: a peer CQ has no wait object. */
	EXPECT_EQ(-FI_ENODATA, fi_control(&cq->fid, FI_GETWAIT, &fd));
	EXPECT_NE(NULL, fi_cq_strerror(cq, EIO, NULL, NULL, 0));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

TEST_F_TIMEOUT(peer, cq_writes_every_completion_through_the_owner, 300)
{
	char rbuf[64] = { 0 }, sbuf[64] = "peer cq";
	struct fid_cq *pcq;
	struct fid_ep *rx;
	fi_addr_t rx_addr;
	struct ev *e;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, open_peer_cq(self, FI_CQ_FORMAT_TAGGED, &pcq));
	ASSERT_EQ(0, open_ep(self, pcq, &rx, &rx_addr));

	/* Expected: the receive is posted first. */
	ASSERT_EQ(0, fi_trecv(rx, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			      7, 0, (void *)0x101));
	ASSERT_EQ(0, fi_tsenddata(self->tx, sbuf, 8, NULL, 99, rx_addr, 7,
				  (void *)0x201));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_WRITE, 1));
	e = &owner.ev[0];
	EXPECT_EQ(EV_WRITE, e->type);
	EXPECT_EQ((void *)0x101, e->ctx);
	EXPECT_EQ(FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA, e->flags);
	EXPECT_EQ(8, e->len);
	EXPECT_EQ((void *)rbuf, e->buf);
	EXPECT_EQ(99, e->data);
	EXPECT_EQ(7, e->tag);
	/* An address of kfab's AV: the owner converts, if it wants to. */
	EXPECT_EQ(self->tx_addr, e->src);
	EXPECT_EQ(0, memcmp(rbuf, sbuf, 8));

	/* Unexpected: the message waits in the kernel for its receive. */
	ASSERT_EQ(0, fi_send(self->tx, sbuf, 5, NULL, rx_addr, (void *)0x202));
	for (int i = 0; i < 20; i++) {
		(void)fi_cq_read(self->fi.cq, NULL, 0);
		EXPECT_EQ(0, fi_cq_read(pcq, NULL, 0));
	}
	EXPECT_EQ(1, owner.n);
	ASSERT_EQ(0, fi_recv(rx, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			     (void *)0x102));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_WRITE, 2));
	e = &owner.ev[1];
	EXPECT_EQ((void *)0x102, e->ctx);
	EXPECT_EQ(FI_RECV | FI_MSG, e->flags);
	EXPECT_EQ(5, e->len);

	/* The peer CQ takes the endpoint's sends too. */
	ASSERT_EQ(0, fi_send(rx, sbuf, 3, NULL, self->tx_addr, (void *)0x301));
	ASSERT_EQ(0, fi_recv(self->tx, rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, (void *)0x302));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_WRITE, 3));
	e = &owner.ev[2];
	EXPECT_EQ((void *)0x301, e->ctx);
	EXPECT_EQ(FI_SEND | FI_MSG, e->flags);
	EXPECT_EQ(FI_ADDR_NOTAVAIL, e->src);
	EXPECT_EQ(3, owner.n);
	EXPECT_EQ(0, owner_count(EV_WRITEERR));

	/* Closing: the endpoint first (fi_cq(3)), then the peer CQ. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&pcq->fid));
	EXPECT_EQ(0, fi_close(&rx->fid));
	EXPECT_EQ(0, fi_close(&pcq->fid));
}

TEST_F_TIMEOUT(peer, cq_errors_and_refusals_reach_the_owner_once_each, 300)
{
	char rbuf[16] = { 0 }, sbuf[64] = { 0 };
	struct fid_cq *pcq;
	struct fid_ep *rx;
	fi_addr_t rx_addr;
	int i, n;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, open_peer_cq(self, FI_CQ_FORMAT_TAGGED, &pcq));
	ASSERT_EQ(0, open_ep(self, pcq, &rx, &rx_addr));

	/* A cancelled receive: writeerr with FI_ECANCELED. */
	ASSERT_EQ(0, fi_recv(rx, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			     (void *)0x401));
	EXPECT_EQ(0, fi_cancel(&rx->fid, (void *)0x401));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_WRITEERR, 1));
	EXPECT_EQ((void *)0x401, owner.ev[0].ctx);
	EXPECT_EQ(FI_ECANCELED, owner.ev[0].err);

	/* A truncated message: FI_ETRUNC, with what was cut off in olen. */
	owner.refuse_writeerr = 1;
	ASSERT_EQ(0, fi_recv(rx, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			     (void *)0x402));
	ASSERT_EQ(0, fi_send(self->tx, sbuf, 64, NULL, rx_addr, (void *)0x403));
	/* Refused once, then written again: two calls, same error. */
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_WRITEERR, 3));
	EXPECT_EQ((fi_addr_t)-FI_EAGAIN, owner.ev[1].src);
	for (i = 1; i <= 2; i++) {
		EXPECT_EQ((void *)0x402, owner.ev[i].ctx);
		EXPECT_EQ(FI_ETRUNC, owner.ev[i].err);
		EXPECT_EQ(48, owner.ev[i].olen);
	}

	/* A refused completion stays first and comes again, exactly once. */
	owner.refuse_write = 2;
	ASSERT_EQ(0, fi_recv(rx, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			     (void *)0x404));
	ASSERT_EQ(0, fi_recv(rx, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			     (void *)0x405));
	ASSERT_EQ(0, fi_send(self->tx, sbuf, 4, NULL, rx_addr, (void *)0x406));
	ASSERT_EQ(0, fi_send(self->tx, sbuf, 4, NULL, rx_addr, (void *)0x407));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_WRITE, 4));
	n = owner.n;
	EXPECT_EQ(7, n);
	EXPECT_EQ((void *)0x404, owner.ev[3].ctx);
	EXPECT_EQ(-FI_EAGAIN, owner.ev[3].err);
	EXPECT_EQ((void *)0x404, owner.ev[4].ctx);
	EXPECT_EQ(-FI_EAGAIN, owner.ev[4].err);
	EXPECT_EQ((void *)0x404, owner.ev[5].ctx);
	EXPECT_EQ(0, owner.ev[5].err);
	EXPECT_EQ((void *)0x405, owner.ev[6].ctx);
	/* Nothing more, however often the owner progresses. */
	for (i = 0; i < 10; i++)
		EXPECT_EQ(0, fi_cq_read(pcq, NULL, 0));
	EXPECT_EQ(n, owner.n);

	EXPECT_EQ(0, fi_close(&rx->fid));
	EXPECT_EQ(0, fi_close(&pcq->fid));
}

/* The kernel's overflow list drains into the owner, in order. */
TEST_F_TIMEOUT(peer, cq_overflow_reaches_the_owner_in_order, 300)
{
	struct kfab_kernel_handle h;
	struct kfab_test_cq_post cmd;
	struct fid_cq *pcq;
	int i, bad = 0;

	RETURN_IF_SETUP_SKIPPED();
	if (!kfab_test_module())
		SKIP(return, "needs the CONFIG_KFAB_TEST build of kfab.ko");
	ASSERT_EQ(0, open_peer_cq(self, FI_CQ_FORMAT_TAGGED, &pcq));
	ASSERT_EQ(0, kfab_kernel_handle(&pcq->fid, &h));
	cmd = (struct kfab_test_cq_post){
		.size = sizeof(cmd), .cq_id = h.id, .count = 1000,
		.context = 0x10000, .entry_flags = FI_RECV | FI_MSG,
		.len = 1, .src_addr = KFAB_CQ_ADDR_NOTAVAIL,
	};
	ASSERT_EQ(0, kfab_ioctl(h.fd, KFAB_IOC_TEST_CQ_POST, &cmd));
	ASSERT_EQ(1000, cmd.out_posted);
	EXPECT_LT(0, cmd.out_overflowed);
	owner.refuse_write = 1;
	ASSERT_TRUE(owner_progress_until(pcq, NULL, EV_WRITE, 1001));
	/* The first was refused once and written again. */
	for (i = 1; i < 1001; i++)
		bad += owner.ev[i].ctx != (void *)(uintptr_t)(0x10000 + i - 1);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(1001, owner.n);
	EXPECT_EQ(0, fi_close(&pcq->fid));
}

/* ---- kfab as the peer: SRX ---- */

static int open_peer_srx(FIXTURE_DATA(peer) *self, struct fid_ep **srx)
{
	struct fi_rx_attr attr = { .op_flags = FI_PEER };
	struct fi_peer_srx_context ctx = { .size = sizeof(ctx),
					   .srx = &owner.peer_srx };

	return fi_srx_context(self->fi.domain, &attr, srx, &ctx);
}

/* An endpoint receiving through @srx, completing on @cq. */
static int open_srx_ep(FIXTURE_DATA(peer) *self, struct fid_cq *cq,
		       struct fid_ep *srx, struct fid_ep **ep, fi_addr_t *addr)
{
	struct kfab_addr a;
	size_t len = sizeof(a);
	int rc;

	rc = fi_endpoint(self->fi.domain, self->fi.info, ep, NULL);
	if (!rc)
		rc = fi_ep_bind(*ep, &self->fi.av->fid, 0);
	if (!rc)
		rc = fi_ep_bind(*ep, &srx->fid, 0);
	if (!rc)
		rc = fi_ep_bind(*ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_enable(*ep);
	if (!rc)
		rc = fi_getname(&(*ep)->fid, &a, &len);
	if (!rc)
		rc = fi_av_insert(self->fi.av, &a, 1, addr, 0,
				  NULL) == 1 ? 0 : -1;
	return rc;
}

/* The index of the first event of @type at or after @from, or -1. */
static int ev_find(enum ev_type type, int from)
{
	int i;

	for (i = from; i < owner.n; i++)
		if (owner.ev[i].type == type)
			return i;
	return -1;
}

TEST_F_TIMEOUT(peer, srx_open_checks_the_owner_context, 300)
{
	struct fi_rx_attr attr = { .op_flags = FI_PEER };
	struct fi_peer_srx_context ctx = { .size = sizeof(ctx) };
	struct fi_ops_srx_owner half = { .size = sizeof(half) };
	struct fid_peer_srx bad = { .owner_ops = &half };
	struct fi_peer_rx_entry stray = { 0 };
	struct fid_ep *srx;
	char buf[8];

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_srx_context(self->fi.domain, &attr, &srx,
					     NULL));
	EXPECT_EQ(-FI_EINVAL, fi_srx_context(self->fi.domain, &attr, &srx,
					     &ctx));
	ctx.srx = &bad;
	EXPECT_EQ(-FI_EINVAL, fi_srx_context(self->fi.domain, &attr, &srx,
					     &ctx));
	ASSERT_EQ(0, open_peer_srx(self, &srx));
	/* kfab filled in its callbacks before returning (fi_peer(3)). */
	EXPECT_NE(NULL, owner.srx_peer_ops.start_msg);
	EXPECT_NE(NULL, owner.srx_peer_ops.start_tag);
	EXPECT_NE(NULL, owner.srx_peer_ops.discard_msg);
	EXPECT_NE(NULL, owner.srx_peer_ops.discard_tag);
	EXPECT_EQ(&owner.srx_peer_ops, owner.peer_srx.peer_ops);
	EXPECT_EQ(NULL, srx->fid.context);
	/* Receives are the owner's: posting them to kfab is -FI_ENOSYS. */
	EXPECT_EQ(-FI_ENOSYS, fi_recv(srx, buf, sizeof(buf), NULL,
				      FI_ADDR_UNSPEC, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_trecv(srx, buf, sizeof(buf), NULL,
				       FI_ADDR_UNSPEC, 1, 0, NULL));
	/* An entry that is not one kfab queued is refused, not followed. */
	stray.peer_context = buf;
	EXPECT_EQ(-FI_EINVAL, owner.srx_peer_ops.start_msg(&stray));
	EXPECT_EQ(-FI_EINVAL, owner.srx_peer_ops.discard_tag(&stray));
	EXPECT_EQ(0, fi_close(&srx->fid));
	EXPECT_EQ(0, owner.n);
}

TEST_F_TIMEOUT(peer, srx_expected_and_unexpected_flows, 300)
{
	char rbuf[4][32] = { { 0 } };
	struct fid_cq *pcq;
	struct fid_ep *srx, *rx;
	fi_addr_t rx_addr;
	int g, w, f, q, n;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, open_peer_cq(self, FI_CQ_FORMAT_TAGGED, &pcq));
	ASSERT_EQ(0, open_peer_srx(self, &srx));
	ASSERT_EQ(0, open_srx_ep(self, pcq, srx, &rx, &rx_addr));

	/*
	 * Expected (fi_peer(3), first flow): the receive waits at the owner;
	 * kfab's get_msg finds it, the message lands in it, kfab writes the
	 * completion and then frees the entry.
	 */
	ASSERT_EQ(0, owner_post(rbuf[0], sizeof(rbuf[0]), (void *)0x601));
	ASSERT_EQ(0, fi_send(self->tx, "expected", 9, NULL, rx_addr,
			     (void *)0x701));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_FREE, 1));
	g = ev_find(EV_GET_MSG, 0);
	w = ev_find(EV_WRITE, 0);
	f = ev_find(EV_FREE, 0);
	ASSERT_LE(0, g);
	ASSERT_LT(g, w);
	ASSERT_LT(w, f);
	EXPECT_EQ(self->tx_addr, owner.ev[g].src);
	EXPECT_EQ(9, owner.ev[g].len);
	EXPECT_EQ((void *)0x601, owner.ev[w].ctx);
	EXPECT_EQ(FI_RECV | FI_MSG, owner.ev[w].flags);
	EXPECT_EQ(9, owner.ev[w].len);
	EXPECT_EQ((void *)rbuf[0], owner.ev[w].buf);
	EXPECT_EQ(self->tx_addr, owner.ev[w].src);
	EXPECT_EQ(owner.ev[g].entry, owner.ev[f].entry);
	EXPECT_STREQ("expected", rbuf[0]);
	EXPECT_EQ(-1, ev_find(EV_QUEUE_MSG, 0));

	/*
	 * Unexpected (second flow): get_msg finds nothing, kfab queues the
	 * entry with its own peer_context; the owner's receive starts it.
	 */
	n = owner.n;
	ASSERT_EQ(0, fi_send(self->tx, "unexpected", 11, NULL, rx_addr,
			     (void *)0x702));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_QUEUE_MSG, 1));
	g = ev_find(EV_GET_MSG, n);
	q = ev_find(EV_QUEUE_MSG, n);
	ASSERT_LE(0, g);
	ASSERT_LT(g, q);
	EXPECT_EQ(owner.ev[g].entry, owner.ev[q].entry);
	EXPECT_NE(NULL, owner.ev[q].ctx);	/* kfab's peer_context */
	EXPECT_EQ(11, owner.ev[q].entry->size);
	EXPECT_EQ(-1, ev_find(EV_WRITE, n));
	EXPECT_EQ(1, owner.nqueued);
	n = owner.n;
	ASSERT_EQ(0, owner_post(rbuf[1], sizeof(rbuf[1]), (void *)0x602));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_FREE, 2));
	w = ev_find(EV_WRITE, n);
	f = ev_find(EV_FREE, n);
	ASSERT_LE(0, w);
	ASSERT_LT(w, f);
	EXPECT_EQ((void *)0x602, owner.ev[w].ctx);
	EXPECT_EQ(11, owner.ev[w].len);
	EXPECT_STREQ("unexpected", rbuf[1]);

	/* Tagged: get_tag with the message's tag, completion with it. */
	n = owner.n;
	ASSERT_EQ(0, owner_post(rbuf[2], sizeof(rbuf[2]), (void *)0x603));
	ASSERT_EQ(0, fi_tsenddata(self->tx, "tagged", 7, NULL, 55, rx_addr,
				  0xabc, (void *)0x703));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_FREE, 3));
	g = ev_find(EV_GET_TAG, n);
	w = ev_find(EV_WRITE, n);
	ASSERT_LE(0, g);
	ASSERT_LT(g, w);
	EXPECT_EQ(0xabc, owner.ev[g].tag);
	EXPECT_EQ((void *)0x603, owner.ev[w].ctx);
	EXPECT_EQ(FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA, owner.ev[w].flags);
	EXPECT_EQ(0xabc, owner.ev[w].tag);
	EXPECT_EQ(55, owner.ev[w].data);

	/* A short buffer: FI_ETRUNC through writeerr, the entry freed. */
	n = owner.n;
	ASSERT_EQ(0, owner_post(rbuf[3], 4, (void *)0x604));
	ASSERT_EQ(0, fi_send(self->tx, "0123456789", 10, NULL, rx_addr,
			     (void *)0x704));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_FREE, 4));
	w = ev_find(EV_WRITEERR, n);
	ASSERT_LE(0, w);
	EXPECT_EQ((void *)0x604, owner.ev[w].ctx);
	EXPECT_EQ(FI_ETRUNC, owner.ev[w].err);
	EXPECT_EQ(6, owner.ev[w].olen);

	/* Every entry went back; nothing was left over. */
	EXPECT_EQ(0, owner.entries_out);
	EXPECT_EQ(-FI_EBUSY, fi_close(&srx->fid));
	EXPECT_EQ(0, fi_close(&rx->fid));
	EXPECT_EQ(0, fi_close(&srx->fid));
	EXPECT_EQ(0, fi_close(&pcq->fid));
}

TEST_F_TIMEOUT(peer, srx_discard_drops_the_message_without_a_completion, 300)
{
	char rbuf[32] = { 0 };
	struct fid_cq *pcq;
	struct fid_ep *srx, *rx;
	fi_addr_t rx_addr;
	int n, i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, open_peer_cq(self, FI_CQ_FORMAT_TAGGED, &pcq));
	ASSERT_EQ(0, open_peer_srx(self, &srx));
	ASSERT_EQ(0, open_srx_ep(self, pcq, srx, &rx, &rx_addr));

	ASSERT_EQ(0, fi_tsend(self->tx, "drop me", 8, NULL, rx_addr, 3,
			      (void *)0x801));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_QUEUE_TAG, 1));
	n = owner.n;
	ASSERT_EQ(0, owner_discard());
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_FREE, 1));
	for (i = 0; i < 10; i++)
		EXPECT_EQ(0, fi_cq_read(pcq, NULL, 0));
	/* No completion for a discarded message, and its entry came back. */
	EXPECT_EQ(-1, ev_find(EV_WRITE, n));
	EXPECT_EQ(-1, ev_find(EV_WRITEERR, n));
	EXPECT_EQ(0, owner.entries_out);
	/* It is gone: the next receive gets the next message. */
	ASSERT_EQ(0, owner_post(rbuf, sizeof(rbuf), (void *)0x602));
	ASSERT_EQ(0, fi_send(self->tx, "next", 5, NULL, rx_addr,
			     (void *)0x802));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_WRITE, 1));
	EXPECT_STREQ("next", rbuf);
	EXPECT_EQ(0, fi_close(&rx->fid));
	EXPECT_EQ(0, fi_close(&srx->fid));
	EXPECT_EQ(0, fi_close(&pcq->fid));
}

/* Two endpoints on kfab's peer SRX: messages reach the owner in arrival order. */
TEST_F_TIMEOUT(peer, srx_two_endpoints_in_arrival_order, 300)
{
	char rbuf[4][16] = { { 0 } };
	struct fid_cq *pcq;
	struct fid_ep *srx, *rx1, *rx2;
	fi_addr_t a1, a2;
	int i, w;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, open_peer_cq(self, FI_CQ_FORMAT_TAGGED, &pcq));
	ASSERT_EQ(0, open_peer_srx(self, &srx));
	ASSERT_EQ(0, open_srx_ep(self, pcq, srx, &rx1, &a1));
	ASSERT_EQ(0, open_srx_ep(self, pcq, srx, &rx2, &a2));
	ASSERT_EQ(0, fi_send(self->tx, "one", 4, NULL, a2, NULL));
	ASSERT_EQ(0, fi_send(self->tx, "two", 4, NULL, a1, NULL));
	ASSERT_EQ(0, fi_send(self->tx, "three", 6, NULL, a2, NULL));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_QUEUE_MSG, 3));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, owner_post(rbuf[i], 16, (void *)(uintptr_t)(0xd01 + i)));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_WRITE, 3));
	/* The oldest queued message got the first receive, and so on. */
	EXPECT_STREQ("one", rbuf[0]);
	EXPECT_STREQ("two", rbuf[1]);
	EXPECT_STREQ("three", rbuf[2]);
	for (w = ev_find(EV_WRITE, 0), i = 0; w >= 0; w = ev_find(EV_WRITE, w + 1), i++)
		EXPECT_EQ((void *)(uintptr_t)(0xd01 + i), owner.ev[w].ctx);
	EXPECT_EQ(3, i);
	EXPECT_EQ(0, fi_close(&rx1->fid));
	EXPECT_EQ(0, fi_close(&rx2->fid));
	EXPECT_EQ(0, fi_close(&srx->fid));
	EXPECT_EQ(0, fi_close(&pcq->fid));
	EXPECT_EQ(0, owner.entries_out);
}

/*
 * Lifetime: kfab's SRX closed while the owner still holds a message kfab
 * queued, and while kfab's peeks are in flight.  Nothing of kfab's reaches
 * the owner after, start_msg on the orphan is refused, and every entry
 * kfab had is back.
 */
TEST_F_TIMEOUT(peer, srx_closed_under_the_owner, 300)
{
	struct fid_cq *pcq;
	struct fid_ep *srx, *rx;
	struct fi_peer_rx_entry *orphan;
	fi_addr_t rx_addr;
	int n, i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, open_peer_cq(self, FI_CQ_FORMAT_TAGGED, &pcq));
	ASSERT_EQ(0, open_peer_srx(self, &srx));
	ASSERT_EQ(0, open_srx_ep(self, pcq, srx, &rx, &rx_addr));
	ASSERT_EQ(0, fi_send(self->tx, "orphan", 7, NULL, rx_addr, NULL));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_QUEUE_MSG, 1));
	/* Progress again: new peeks are in the kernel when kfab closes. */
	EXPECT_EQ(0, fi_cq_read(pcq, NULL, 0));
	EXPECT_EQ(0, fi_close(&rx->fid));
	EXPECT_EQ(0, fi_close(&srx->fid));
	n = owner.n;
	for (i = 0; i < 10; i++)
		EXPECT_EQ(0, fi_cq_read(pcq, NULL, 0));
	EXPECT_EQ(n, owner.n);
	/* The queued entry is the owner's; kfab refuses to start it. */
	ASSERT_EQ(1, owner.nqueued);
	orphan = owner.queued[0];
	EXPECT_EQ(-FI_EINVAL, owner.srx_peer_ops.start_msg(orphan));
	EXPECT_EQ(-FI_EINVAL, owner.srx_peer_ops.discard_msg(orphan));
	owner.nqueued = 0;
	owner_free_entry(orphan);
	EXPECT_EQ(0, owner.entries_out);
	EXPECT_EQ(0, fi_close(&pcq->fid));
}

/* A sender the receiving side's AV does not hold: FI_ADDR_UNSPEC. */
TEST_F_TIMEOUT(peer, srx_sender_not_in_the_av, 300)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	char rbuf[32] = { 0 };
	struct fid_cq *pcq;
	struct fid_ep *srx, *rx, *tx2;
	struct fid_av *av2;
	struct kfab_addr a;
	fi_addr_t rx_addr, to_rx;
	size_t len = sizeof(a);
	int g, w;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, open_peer_cq(self, FI_CQ_FORMAT_TAGGED, &pcq));
	ASSERT_EQ(0, open_peer_srx(self, &srx));
	ASSERT_EQ(0, open_srx_ep(self, pcq, srx, &rx, &rx_addr));
	/* A sender with an AV of its own, which knows rx; rx's knows not it. */
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &av_attr, &av2, NULL));
	ASSERT_EQ(0, fi_endpoint(self->fi.domain, self->fi.info, &tx2, NULL));
	ASSERT_EQ(0, fi_ep_bind(tx2, &av2->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(tx2, &self->fi.cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(tx2));
	ASSERT_EQ(0, fi_getname(&rx->fid, &a, &len));
	ASSERT_EQ(1, fi_av_insert(av2, &a, 1, &to_rx, 0, NULL));

	ASSERT_EQ(0, owner_post(rbuf, sizeof(rbuf), (void *)0x901));
	ASSERT_EQ(0, fi_send(tx2, "stranger", 9, NULL, to_rx, (void *)0x902));
	ASSERT_TRUE(owner_progress_until(pcq, self->fi.cq, EV_WRITE, 1));
	g = ev_find(EV_GET_MSG, 0);
	w = ev_find(EV_WRITE, 0);
	ASSERT_LE(0, g);
	/* fi_peer(3): an unknown source is FI_ADDR_UNSPEC for matching. */
	EXPECT_EQ(FI_ADDR_UNSPEC, owner.ev[g].src);
	EXPECT_EQ((void *)0x901, owner.ev[w].ctx);
	EXPECT_EQ(FI_ADDR_NOTAVAIL, owner.ev[w].src);
	EXPECT_STREQ("stranger", rbuf);
	EXPECT_EQ(0, fi_close(&tx2->fid));
	EXPECT_EQ(0, fi_close(&av2->fid));
	EXPECT_EQ(0, fi_close(&rx->fid));
	EXPECT_EQ(0, fi_close(&srx->fid));
	EXPECT_EQ(0, fi_close(&pcq->fid));
}

/* ---- kfab as the peer: AV, domain, EQ, transfers, fi_import_fid ---- */

TEST_F_TIMEOUT(peer, av_takes_the_owner_attributes, 300)
{
	struct fi_av_attr attr = { .flags = FI_PEER };
	struct fi_peer_av_context ctx = { .size = sizeof(ctx) };
	struct kfab_addr a = { 0 };
	struct fid_av *av;
	fi_addr_t fa;
	size_t len;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, &attr, &av, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_av_open(self->fi.domain, &attr, &av, &ctx));
	EXPECT_EQ(0, owner.n);
	ctx.av = (void *)&owner.peer_av;
	owner.av_query_ret = -FI_EOTHER;
	EXPECT_EQ(-FI_EOTHER, fi_av_open(self->fi.domain, &attr, &av, &ctx));
	EXPECT_EQ(1, owner_count(EV_AV_QUERY));

	owner.av_query_ret = 0;
	owner.av_type = FI_AV_MAP;
	owner.av_count = 16;
	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, &ctx));
	EXPECT_EQ(2, owner_count(EV_AV_QUERY));
	EXPECT_EQ(NULL, av->fid.context);
	/* A table of kfab's own: kfab's addresses work in it. */
	len = sizeof(a);
	ASSERT_EQ(0, fi_getname(&self->tx->fid, &a, &len));
	ASSERT_EQ(1, fi_av_insert(av, &a, 1, &fa, 0, NULL));
	EXPECT_EQ(0, fi_av_remove(av, &fa, 1, 0));
	EXPECT_EQ(0, fi_close(&av->fid));
	EXPECT_EQ(2, owner.n);
}

/* libfabric 1.17 has no peer counter: FI_PEER is refused as the spec says. */
TEST_F_TIMEOUT(peer, cntr_peer_open_is_einval_without_peer_counters, 300)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .flags = FI_PEER };
	struct fid_cntr *cntr;
	int dummy_context[4] = { sizeof(dummy_context) };

	RETURN_IF_SETUP_SKIPPED();
#if FI_MAJOR_VERSION >= 2
	SKIP(return, "a libfabric with peer counters: not covered yet");
#endif
	EXPECT_EQ(-FI_EINVAL, fi_cntr_open(self->fi.domain, &attr, &cntr,
					   dummy_context));
	EXPECT_EQ(-FI_EINVAL, fi_cntr_open(self->fi.domain, &attr, &cntr,
					   NULL));
}

TEST_F_TIMEOUT(peer, domain2_needs_the_owner_domain, 300)
{
	struct fi_peer_domain_context ctx = { .size = sizeof(ctx) };
	struct fid_domain *dom;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_domain2(self->fi.fabric, self->fi.info, &dom,
					 FI_PEER, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_domain2(self->fi.fabric, self->fi.info, &dom,
					 FI_PEER, &ctx));
	ctx.domain = self->fi.domain;
	ctx.size = sizeof(ctx) - 1;
	EXPECT_EQ(-FI_EINVAL, fi_domain2(self->fi.fabric, self->fi.info, &dom,
					 FI_PEER, &ctx));
	ctx.size = sizeof(ctx);
	EXPECT_EQ(-FI_EBADFLAGS, fi_domain2(self->fi.fabric, self->fi.info,
					    &dom,
					    FI_PEER | FI_PEER_TRANSFER, &ctx));
	ASSERT_EQ(0, fi_domain2(self->fi.fabric, self->fi.info, &dom, FI_PEER,
				&ctx));
	EXPECT_EQ(NULL, dom->fid.context);
	EXPECT_EQ(0, fi_close(&dom->fid));
}

/* FI_AV_COMPLETE of an asynchronous insert, through a peer EQ. */
static void eq_av_insert(struct __test_metadata *_metadata,
			 FIXTURE_DATA(peer) *self, struct fid_eq *peq)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct kfab_addr a;
	struct fid_av *av;
	fi_addr_t fa;
	size_t len = sizeof(a);

	ASSERT_EQ(0, fi_av_open(self->fi.domain, &attr, &av, NULL));
	ASSERT_EQ(0, fi_av_bind(av, &peq->fid, 0));
	EXPECT_EQ(-FI_EBUSY, fi_close(&peq->fid));
	ASSERT_EQ(0, fi_getname(&self->tx->fid, &a, &len));
	ASSERT_EQ(0, fi_av_insert(av, &a, 1, &fa, 0, (void *)0x77));
	EXPECT_EQ(0, fi_close(&av->fid));
}

TEST_F_TIMEOUT(peer, eq_events_go_to_the_owner_eq, 300)
{
	struct fi_eq_attr attr = { .flags = FI_PEER };
	struct fi_peer_eq_context ctx = { .size = sizeof(ctx) };
	struct fi_eq_attr kattr = { .wait_obj = FI_WAIT_NONE };
	struct fi_eq_entry entry;
	struct fi_eq_err_entry err = { 0 };
	struct fid_eq *peq, *keq;
	uint32_t event;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_eq_open(self->fi.fabric, &attr, &peq, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_eq_open(self->fi.fabric, &attr, &peq, &ctx));

	/* An owner written here: kfab calls its fi_eq_write(). */
	ctx.eq = &owner.eq;
	ASSERT_EQ(0, fi_eq_open(self->fi.fabric, &attr, &peq, &ctx));
	EXPECT_EQ(NULL, peq->fid.context);
	EXPECT_EQ(-FI_ENOSYS, fi_eq_read(peq, &event, &entry, sizeof(entry), 0));
	EXPECT_EQ(-FI_ENOSYS, fi_eq_readerr(peq, &err, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_eq_sread(peq, &event, &entry, sizeof(entry),
					  0, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_eq_write(peq, FI_NOTIFY, &entry,
					  sizeof(entry), 0));
	eq_av_insert(_metadata, self, peq);
	ASSERT_EQ(1, owner_count(EV_EQ_WRITE));
	EXPECT_EQ(FI_AV_COMPLETE, owner.ev[0].event);
	EXPECT_EQ(sizeof(struct fi_eq_entry), owner.ev[0].len);
	EXPECT_EQ((void *)0x77, owner.ev[0].eq_entry.context);
	EXPECT_EQ(1, owner.ev[0].eq_entry.data);
	EXPECT_EQ(0, fi_close(&peq->fid));

	/* A kfab EQ as the owner gets the event in its queue. */
	ASSERT_EQ(0, fi_eq_open(self->fi.fabric, &kattr, &keq, NULL));
	ctx.eq = keq;
	ASSERT_EQ(0, fi_eq_open(self->fi.fabric, &attr, &peq, &ctx));
	eq_av_insert(_metadata, self, peq);
	ASSERT_EQ(sizeof(entry), fi_eq_read(keq, &event, &entry,
					    sizeof(entry), 0));
	EXPECT_EQ(FI_AV_COMPLETE, event);
	EXPECT_EQ((void *)0x77, entry.context);
	EXPECT_EQ(0, fi_close(&peq->fid));
	EXPECT_EQ(0, fi_close(&keq->fid));
}

TEST_F_TIMEOUT(peer, transfer_endpoint_sets_its_callbacks, 300)
{
	struct fi_ops_transfer_peer ops = { .size = sizeof(ops) };
	struct fi_peer_transfer_context ctx = { .size = sizeof(ctx),
						.peer_ops = &ops };
	struct fi_cq_tagged_entry te = { 0 };
	struct fi_cq_err_entry ee = { 0 };
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	struct fid_ep *ep;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_endpoint2(self->fi.domain, self->fi.info, &ep,
					   FI_PEER_TRANSFER, NULL));
	ctx.size = 1;
	EXPECT_EQ(-FI_EINVAL, fi_endpoint2(self->fi.domain, self->fi.info, &ep,
					   FI_PEER_TRANSFER, &ctx));
	ctx.size = sizeof(ctx);
	ctx.info = self->fi.info;
	ctx.ep = self->tx;
	ASSERT_EQ(0, fi_endpoint2(self->fi.domain, self->fi.info, &ep,
				  FI_PEER_TRANSFER, &ctx));
	ASSERT_NE(NULL, ops.complete);
	ASSERT_NE(NULL, ops.comperr);
	EXPECT_EQ(NULL, ep->fid.context);
	/* kfab starts no peer transfer: nothing of it can complete. */
	EXPECT_EQ(-FI_EINVAL, ops.complete(ep, &te, &src));
	EXPECT_EQ(-FI_EINVAL, ops.comperr(ep, &ee));
	EXPECT_EQ(0, fi_close(&ep->fid));
}

static int fake_close(struct fid *fid)
{
	(void)fid;
	return 0;
}

TEST_F_TIMEOUT(peer, import_fid_is_enosys_where_it_means_nothing, 300)
{
	struct fi_ops fake_ops = { .size = sizeof(fake_ops),
				   .close = fake_close };
	struct fid monitor = { .fclass = FI_CLASS_MEM_MONITOR,
			       .ops = &fake_ops };
	struct fid log = { .fclass = FI_CLASS_LOG, .ops = &fake_ops };
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_eq_attr eattr = { .wait_obj = FI_WAIT_NONE };
	struct fid_cntr *cntr;
	struct fid *exp = NULL;
	struct fid_eq *eq;
	struct fid_ep *ep;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cntr_open(self->fi.domain, &cattr, &cntr, NULL));
	ASSERT_EQ(0, fi_eq_open(self->fi.fabric, &eattr, &eq, NULL));
	ASSERT_EQ(0, fi_endpoint(self->fi.domain, self->fi.info, &ep, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_import_fid(&self->fi.fabric->fid, &monitor,
					    0));
	EXPECT_EQ(-FI_ENOSYS, fi_import_fid(&self->fi.domain->fid, &monitor,
					    0));
	EXPECT_EQ(-FI_ENOSYS, fi_import_fid(&self->fi.av->fid, &monitor, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_import_fid(&self->fi.av->fid, &log, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_import_fid(&self->fi.cq->fid, &log, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_import_fid(&cntr->fid, &monitor, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_import_fid(&eq->fid, &monitor, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_import_fid(&ep->fid, &monitor, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_import_fid(&ep->fid, &owner.peer_cq.fid, 0));
	/* fi_export_fid() is reserved (fi_peer(3)): nothing kfab knows. */
	EXPECT_EQ(-FI_ENOSYS, fi_export_fid(&self->fi.cq->fid, 0, &exp, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_export_fid(&ep->fid, 0, &exp, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_export_fid(&eq->fid, 0, &exp, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_export_fid(&self->fi.domain->fid, 0, &exp,
					    NULL));
	EXPECT_EQ(NULL, exp);
	/* A plain bind of a wrong object stays -FI_EINVAL. */
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(ep, &self->fi.domain->fid, 0));
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&eq->fid));
	EXPECT_EQ(0, fi_close(&cntr->fid));
}

/* ---- kfab as the owner: CQ ---- */

static struct fid_peer_cq *export_cq(struct fid_cq *cq)
{
	struct fid_peer_cq *p = NULL;

	if (fi_get_val(&cq->fid, KFAB_FID_PEER_EXPORT, &p))
		return NULL;
	return p;
}

TEST_F_TIMEOUT(peer, owner_cq_takes_what_a_peer_writes, 300)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED,
				   .wait_obj = FI_WAIT_FD };
	struct fi_cq_tagged_entry e[4];
	struct fi_cq_err_entry err = { 0 };
	char data[8] = "errdata", mine[8];
	struct fi_cq_err_entry in = {
		.op_context = (void *)0x51, .flags = FI_RECV, .len = 3,
		.err = FI_EIO, .prov_errno = 5, .olen = 9,
		.err_data = data, .err_data_size = sizeof(data),
	};
	struct fid_peer_cq *p1, *p2;
	fi_addr_t src[4];
	struct fid_cq *cq;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_get_val(&cq->fid, KFAB_FID_PEER_EXPORT, NULL));
	p1 = export_cq(cq);
	p2 = export_cq(cq);
	ASSERT_NE(NULL, p1);
	ASSERT_NE(NULL, p2);
	/* One object per peer, each kfab's. */
	EXPECT_NE(p1, p2);
	EXPECT_EQ((size_t)FI_CLASS_PEER_CQ, p1->fid.fclass);
	ASSERT_NE(NULL, p1->owner_ops);
	ASSERT_NE(NULL, p1->owner_ops->write);
	ASSERT_NE(NULL, p1->owner_ops->writeerr);

	EXPECT_EQ(0, p1->owner_ops->write(p1, (void *)0x41, FI_RECV | FI_TAGGED,
					  10, (void *)0x1000, 5, 6, 3));
	EXPECT_EQ(0, p2->owner_ops->write(p2, (void *)0x42, FI_SEND | FI_MSG,
					  0, NULL, 0, 0, FI_ADDR_NOTAVAIL));
	ASSERT_EQ(2, fi_cq_readfrom(cq, e, 4, src));
	EXPECT_EQ((void *)0x41, e[0].op_context);
	EXPECT_EQ(FI_RECV | FI_TAGGED, e[0].flags);
	EXPECT_EQ(10, e[0].len);
	EXPECT_EQ((void *)0x1000, e[0].buf);
	EXPECT_EQ(5, e[0].data);
	EXPECT_EQ(6, e[0].tag);
	/* The source is an address of the peer's AV: kfab cannot say. */
	EXPECT_EQ(FI_ADDR_NOTAVAIL, src[0]);
	EXPECT_EQ((void *)0x42, e[1].op_context);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, e, 1));

	/* An error: -FI_EAVAIL first, then readerr with its data. */
	EXPECT_EQ(0, p1->owner_ops->writeerr(p1, &in));
	data[0] = 'X';		/* kfab copied it */
	EXPECT_EQ(0, p1->owner_ops->write(p1, (void *)0x43, FI_RECV, 0, NULL,
					  0, 0, FI_ADDR_NOTAVAIL));
	EXPECT_EQ(-FI_EAVAIL, fi_cq_read(cq, e, 1));
	ASSERT_EQ(1, fi_cq_readerr(cq, &err, 0));
	EXPECT_EQ((void *)0x51, err.op_context);
	EXPECT_EQ(FI_EIO, err.err);
	EXPECT_EQ(5, err.prov_errno);
	EXPECT_EQ(9, err.olen);
	ASSERT_EQ(sizeof(mine), err.err_data_size);
	EXPECT_EQ(0, memcmp(err.err_data, "errdata", 8));
	/* The caller's buffer, from API 1.5 */
	EXPECT_EQ(0, p1->owner_ops->writeerr(p1, &in));
	err.err_data = mine;
	err.err_data_size = 4;
	ASSERT_EQ(1, fi_cq_readerr(cq, &err, 0));
	EXPECT_EQ((void *)mine, err.err_data);
	EXPECT_EQ(4, err.err_data_size);
	EXPECT_EQ(0, memcmp(mine, "Xrrd", 4));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_readerr(cq, &err, 0));
	ASSERT_EQ(1, fi_cq_read(cq, e, 4));
	EXPECT_EQ((void *)0x43, e[0].op_context);

	/* Growing past the CQ's size: nothing is refused or lost. */
	for (int i = 0; i < 3000; i++)
		ASSERT_EQ(0, p2->owner_ops->write(p2, (void *)(uintptr_t)i, 0,
						  0, NULL, 0, 0,
						  FI_ADDR_NOTAVAIL));
	for (int i = 0; i < 3000; i++) {
		ASSERT_EQ(1, fi_cq_read(cq, e, 1));
		ASSERT_EQ((void *)(uintptr_t)i, e[0].op_context);
	}

	/* Not closable while a peer may still write through p1/p2. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&cq->fid));
	EXPECT_EQ(0, fi_close(&p1->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&cq->fid));
	EXPECT_EQ(0, fi_close(&p2->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

struct sread_arg {
	struct fid_cq *cq;
	ssize_t ret;
	void *ctx;
};

static void *sread_thread(void *p)
{
	struct sread_arg *a = p;
	struct fi_cq_tagged_entry e;

	a->ret = fi_cq_sread(a->cq, &e, 1, NULL, 5000);
	a->ctx = e.op_context;
	return NULL;
}

TEST_F_TIMEOUT(peer, owner_cq_wakes_a_waiter_when_a_peer_writes, 300)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED,
				   .wait_obj = FI_WAIT_FD };
	struct sread_arg a = { 0 };
	struct fid_peer_cq *p;
	uint64_t start;
	pthread_t t;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &a.cq, NULL));
	p = export_cq(a.cq);
	ASSERT_NE(NULL, p);
	start = kfab_now_ms();
	ASSERT_EQ(0, pthread_create(&t, NULL, sread_thread, &a));
	usleep(200 * 1000);
	EXPECT_EQ(0, p->owner_ops->write(p, (void *)0x61, FI_RECV, 0, NULL, 0,
					 0, FI_ADDR_NOTAVAIL));
	pthread_join(t, NULL);
	EXPECT_EQ(1, a.ret);
	EXPECT_EQ((void *)0x61, a.ctx);
	EXPECT_GT(4000, kfab_now_ms() - start);
	EXPECT_EQ(0, fi_close(&p->fid));
	EXPECT_EQ(0, fi_close(&a.cq->fid));
}

/* Peers writing from four threads while the application reads. */
#define WRITERS		4
#define PER_WRITER	5000

struct writer_arg {
	struct fid_peer_cq *p;
	int id;
	int refused;
};

static void *writer_thread(void *v)
{
	struct writer_arg *w = v;
	uintptr_t i;

	for (i = 0; i < PER_WRITER; i++)
		if (w->p->owner_ops->write(w->p,
					   (void *)(((uintptr_t)w->id << 32) | i),
					   FI_RECV | FI_MSG, 0, NULL, 0, 0,
					   FI_ADDR_NOTAVAIL))
			w->refused++;
	return NULL;
}

TEST_F_TIMEOUT(peer, owner_cq_takes_concurrent_writers, 300)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT,
				   .size = 64 };
	struct writer_arg w[WRITERS];
	pthread_t t[WRITERS];
	struct fi_cq_entry e[32];
	uintptr_t next[WRITERS] = { 0 };
	uint64_t end;
	int i, got = 0, bad = 0;
	ssize_t n;
	struct fid_cq *cq;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	for (i = 0; i < WRITERS; i++) {
		w[i] = (struct writer_arg){ .p = export_cq(cq), .id = i };
		ASSERT_NE(NULL, w[i].p);
	}
	for (i = 0; i < WRITERS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, writer_thread, &w[i]));
	/* A hang guard, not a speed limit: valgrind under TCG needs minutes. */
	end = kfab_now_ms() + 240000;
	while (got < WRITERS * PER_WRITER && kfab_now_ms() < end) {
		n = fi_cq_read(cq, e, 32);
		for (i = 0; i < n; i++) {
			uintptr_t c = (uintptr_t)e[i].op_context;
			int id = (int)(c >> 32);

			/* Each writer's entries come out in its order. */
			if (id >= WRITERS || (c & 0xffffffff) != next[id]++)
				bad++;
		}
		if (n > 0)
			got += n;
	}
	for (i = 0; i < WRITERS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].refused);
	}
	EXPECT_EQ(WRITERS * PER_WRITER, got);
	EXPECT_EQ(0, bad);
	for (i = 0; i < WRITERS; i++)
		EXPECT_EQ(0, fi_close(&w[i].p->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

/* kfab owning a kfab peer CQ: the owner's reads progress the peer. */
TEST_F_TIMEOUT(peer, owner_cq_progresses_an_imported_peer_cq, 300)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_attr pattr = { .format = FI_CQ_FORMAT_TAGGED,
				    .flags = FI_PEER };
	struct fi_peer_cq_context ctx = { .size = sizeof(ctx) };
	struct fi_cq_tagged_entry e;
	struct fid_cq *ocq, *pcq;
	struct fid_ep *rx;
	fi_addr_t rx_addr;
	char rbuf[16] = { 0 };
	uint64_t end;
	ssize_t rc;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &ocq, NULL));
	ctx.cq = export_cq(ocq);
	ASSERT_NE(NULL, ctx.cq);
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &pattr, &pcq, &ctx));
	/* Importing: wrong flags, wrong class, itself, twice. */
	EXPECT_EQ(-FI_EBADFLAGS, fi_import_fid(&ctx.cq->fid, &pcq->fid, 1));
	EXPECT_EQ(-FI_EINVAL, fi_import_fid(&ctx.cq->fid, &self->fi.av->fid,
					    0));
	EXPECT_EQ(-FI_EINVAL, fi_import_fid(&ctx.cq->fid, &ocq->fid, 0));
	ASSERT_EQ(0, fi_import_fid(&ctx.cq->fid, &pcq->fid, 0));
	EXPECT_EQ(-FI_EBUSY, fi_import_fid(&ctx.cq->fid, &pcq->fid, 0));

	ASSERT_EQ(0, open_ep(self, pcq, &rx, &rx_addr));
	ASSERT_EQ(0, fi_recv(rx, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			     (void *)0x71));
	ASSERT_EQ(0, fi_send(self->tx, "hi", 2, NULL, rx_addr, (void *)0x72));
	end = kfab_now_ms() + TIMEOUT_MS;
	do {
		(void)fi_cq_read(self->fi.cq, &e, 0);
		rc = fi_cq_read(ocq, &e, 1);
	} while (rc == -FI_EAGAIN && kfab_now_ms() < end);
	ASSERT_EQ(1, rc);
	EXPECT_EQ((void *)0x71, e.op_context);
	EXPECT_EQ(FI_RECV | FI_MSG, e.flags);
	EXPECT_EQ(2, e.len);

	/* The owner closes what it imported; the peer's endpoint goes first. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&ocq->fid));
	EXPECT_EQ(0, fi_close(&rx->fid));
	EXPECT_EQ(0, fi_close(&ocq->fid));
}

/* ---- kfab as the owner of libfabric's shm provider ---- */

struct shm {
	bool plain_cq;		/* shm's CQ refused FI_PEER: drained by kfab */
	struct fid_ep *srx;	/* what shm's fi_srx_context returned, if any */
	struct kfab_test_fi fi;	/* fi.ep unused: shm's endpoints are ep[] */
	struct fid_ep *ep[2];
	fi_addr_t addr[2];
};

/* Which step of shm_setup() failed, for the log. */
static const char *shm_step = "";

static int shm_setup_srx(struct shm *s, struct fid_peer_cq *peer_cq,
			 struct fid_peer_srx *peer_srx);

static int shm_setup(struct shm *s, struct fid_peer_cq *peer_cq)
{
	return shm_setup_srx(s, peer_cq, NULL);
}

/* With @peer_srx, shm's second endpoint receives through kfab's SRX. */
static int shm_setup_srx(struct shm *s, struct fid_peer_cq *peer_cq,
			 struct fid_peer_srx *peer_srx)
{
	struct fi_rx_attr rx_attr = { .op_flags = FI_PEER };
	struct fi_peer_srx_context sctx = { .size = sizeof(sctx),
					    .srx = peer_srx };
	struct fid_ep *shm_srx = NULL;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_NONE,
				      .flags = FI_PEER };
	struct fi_peer_cq_context ctx = { .size = sizeof(ctx), .cq = peer_cq };
	struct fi_info *hints = fi_allocinfo();
	char name[64];
	size_t len;
	int rc, i;

	if (!hints)
		return -FI_ENOMEM;
	hints->fabric_attr->prov_name = strdup("shm");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR;
#define STEP(x) (shm_step = #x, (x))
	rc = STEP(fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, hints,
			     &s->fi.info));
	fi_freeinfo(hints);
	if (rc)
		return rc;
	rc = STEP(fi_fabric(s->fi.info->fabric_attr, &s->fi.fabric, NULL));
	if (!rc)
		rc = STEP(fi_domain(s->fi.fabric, s->fi.info, &s->fi.domain,
				    NULL));
	if (!rc)
		rc = STEP(fi_av_open(s->fi.domain, &av_attr, &s->fi.av, NULL));
	/*
	 * libfabric 1.17's shm refuses FI_PEER on a CQ (-FI_EINVAL, "invalid
	 * flags"); then its own CQ, which kfab drains (KFAB_IMPORT_DRAIN).
	 */
	if (!rc) {
		rc = STEP(fi_cq_open(s->fi.domain, &cq_attr, &s->fi.cq, &ctx));
		if (rc == -FI_EINVAL) {
			cq_attr.flags = 0;
			s->plain_cq = true;
			rc = STEP(fi_cq_open(s->fi.domain, &cq_attr, &s->fi.cq,
					     NULL));
		}
	}
	/*
	 * shm 1.17 takes the owner's SRX for its domain and returns no fid
	 * of its own; its endpoints bind to the fid_peer_srx itself.
	 */
	if (!rc && peer_srx)
		rc = STEP(fi_srx_context(s->fi.domain, &rx_attr, &shm_srx,
					 &sctx));
	if (!rc && shm_srx)
		s->srx = shm_srx;
	for (i = 0; !rc && i < 2; i++) {
		rc = STEP(fi_endpoint(s->fi.domain, s->fi.info, &s->ep[i],
				      NULL));
		if (!rc)
			rc = STEP(fi_ep_bind(s->ep[i], &s->fi.av->fid, 0));
		if (!rc && peer_srx && i == 1)
			rc = STEP(fi_ep_bind(s->ep[i], &peer_srx->ep_fid.fid, 0));
		if (!rc)
			rc = STEP(fi_ep_bind(s->ep[i], &s->fi.cq->fid,
					     FI_TRANSMIT | FI_RECV));
		if (!rc)
			rc = STEP(fi_enable(s->ep[i]));
		len = sizeof(name);
		if (!rc)
			rc = STEP(fi_getname(&s->ep[i]->fid, name, &len));
		if (!rc)
			rc = STEP(fi_av_insert(s->fi.av, name, 1, &s->addr[i],
					       0,
					       NULL)) == 1 ? 0 : -FI_EOTHER;
	}
#undef STEP
	return rc;
}

static void shm_close_eps(struct __test_metadata *_metadata, struct shm *s)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (s->ep[i])
			EXPECT_EQ(0, fi_close(&s->ep[i]->fid));
		s->ep[i] = NULL;
	}
}

static void shm_close(struct __test_metadata *_metadata, struct shm *s)
{
	shm_close_eps(_metadata, s);
	if (s->srx)
		EXPECT_EQ(0, fi_close(&s->srx->fid));
	test_fi_close(&s->fi);
	memset(s, 0, sizeof(*s));
}

/* @op until it is not -FI_EAGAIN, reading @cq (progress) meanwhile. */
#define RETRY(cq, op) do {						\
		uint64_t _end = kfab_now_ms() + TIMEOUT_MS;			\
		struct fi_cq_tagged_entry _e;				\
									\
		while ((rc = (op)) == -FI_EAGAIN && kfab_now_ms() < _end)	\
			(void)fi_cq_read((cq), &_e, 0);			\
	} while (0)

/* fi_cq_read() of kfab's CQ until one completion (progressing shm too). */
static ssize_t read_one(struct fid_cq *cq, struct fi_cq_tagged_entry *e)
{
	uint64_t end = kfab_now_ms() + TIMEOUT_MS;
	ssize_t rc;

	do {
		rc = fi_cq_read(cq, e, 1);
	} while (rc == -FI_EAGAIN && kfab_now_ms() < end);
	return rc;
}

TEST_F_TIMEOUT(peer, shm_writes_its_completions_into_a_kfab_cq, 300)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_tagged_entry e;
	struct fid_peer_cq *p;
	struct shm s = { 0 };
	char rbuf[32] = { 0 };
	struct fid_cq *cq;
	int i, rc, sends = 0, recvs = 0;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	p = export_cq(cq);
	ASSERT_NE(NULL, p);
	rc = shm_setup(&s, p);
	if (rc == -FI_ENODATA) {
		shm_close(_metadata, &s);
		EXPECT_EQ(0, fi_close(&p->fid));
		EXPECT_EQ(0, fi_close(&cq->fid));
		SKIP(return, "no shm provider");
	}
	ASSERT_EQ(0, rc) TH_LOG("shm: %s: %s", shm_step, fi_strerror(-rc));
	/* kfab keeps shm's CQ: its reads progress it, its close closes it. */
	TH_LOG("shm's CQ is %s", s.plain_cq ? "a plain CQ, drained" :
					      "a peer CQ");
	EXPECT_EQ(-FI_EBADFLAGS, fi_import_fid(&p->fid, &s.fi.cq->fid, 1));
	ASSERT_EQ(0, fi_import_fid(&p->fid, &s.fi.cq->fid,
				   s.plain_cq ? KFAB_IMPORT_DRAIN : 0));

	ASSERT_EQ(0, fi_trecv(s.ep[1], rbuf, sizeof(rbuf), NULL,
			      FI_ADDR_UNSPEC, 5, 0, (void *)0x81));
	/* shm says -FI_EAGAIN until progress has mapped the peer. */
	RETRY(cq, fi_tsend(s.ep[0], "through shm", 12, NULL, s.addr[1], 5,
			   (void *)0x82));
	ASSERT_EQ(0, rc);
	/* And one of kfab's own into the same CQ. */
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(1, read_one(cq, &e)) TH_LOG("completion %d", i);
		if (e.flags & FI_RECV) {
			recvs++;
			EXPECT_EQ((void *)0x81, e.op_context);
			EXPECT_EQ(FI_RECV | FI_TAGGED, e.flags & (FI_RECV | FI_TAGGED));
			EXPECT_EQ(12, e.len);
			EXPECT_EQ(5, e.tag);
		} else {
			sends++;
			EXPECT_EQ((void *)0x82, e.op_context);
			EXPECT_TRUE(e.flags & FI_SEND);
		}
	}
	EXPECT_EQ(1, sends);
	EXPECT_EQ(1, recvs);
	EXPECT_EQ(0, strcmp(rbuf, "through shm"));

	/*
	 * Lifetime: shm's endpoints first (shm's CQ refuses to close under
	 * them, and so does kfab's, which would close it); then kfab's CQ
	 * closes shm's CQ and frees the fid_peer_cq.
	 */
	EXPECT_EQ(-FI_EBUSY, fi_close(&cq->fid));
	shm_close_eps(_metadata, &s);
	EXPECT_EQ(0, fi_close(&cq->fid));
	s.fi.cq = NULL;
	shm_close(_metadata, &s);
}

/* The other allowed order: shm's CQ, then the fid_peer_cq, then kfab's. */
TEST_F_TIMEOUT(peer, shm_peer_cq_closed_before_the_owner, 300)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fid_peer_cq *p;
	struct shm s = { 0 };
	struct fid_cq *cq;
	int rc;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	p = export_cq(cq);
	ASSERT_NE(NULL, p);
	rc = shm_setup(&s, p);
	if (rc == -FI_ENODATA) {
		shm_close(_metadata, &s);
		EXPECT_EQ(0, fi_close(&p->fid));
		EXPECT_EQ(0, fi_close(&cq->fid));
		SKIP(return, "no shm provider");
	}
	ASSERT_EQ(0, rc) TH_LOG("shm: %s: %s", shm_step, fi_strerror(-rc));
	shm_close(_metadata, &s);
	EXPECT_EQ(-FI_EBUSY, fi_close(&cq->fid));
	EXPECT_EQ(0, fi_close(&p->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

/* ---- kfab as the owner of an SRX ---- */

static struct fid_peer_srx *export_srx(struct fid_ep *srx)
{
	struct fid_peer_srx *p = NULL;

	if (fi_get_val(&srx->fid, KFAB_FID_PEER_EXPORT, &p))
		return NULL;
	return p;
}

/* The next receive completion of @cq (sends are skipped). */
static ssize_t read_recv(struct fid_cq *cq, struct fi_cq_tagged_entry *e)
{
	ssize_t rc;

	do {
		rc = read_one(cq, e);
	} while (rc == 1 && !(e->flags & FI_RECV));
	return rc;
}

/* Progress for a while: did any receive complete?  (Sends are read.) */
static bool recv_waiting(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e;
	bool seen = false;
	int i;

	for (i = 0; i < 50; i++)
		while (fi_cq_read(cq, &e, 1) == 1)
			seen |= !!(e.flags & FI_RECV);
	return seen;
}

TEST_F_TIMEOUT(peer, owner_srx_matches_kfab_traffic_in_posting_order, 300)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	char rbuf[8][16] = { { 0 } };
	struct fid_ep *srx, *srx2, *rx1, *rx2, *ep;
	struct iovec iov = { .iov_len = 16 };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC };
	struct fid_peer_srx *p;
	fi_addr_t a1, a2;
	struct fid_cq *cq;

	RETURN_IF_SETUP_SKIPPED();
	iov.iov_base = rbuf[5];
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	ASSERT_EQ(0, fi_srx_context(self->fi.domain, NULL, &srx, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_get_val(&srx->fid, KFAB_FID_PEER_EXPORT,
					 NULL));
	p = export_srx(srx);
	ASSERT_NE(NULL, p);
	EXPECT_EQ((size_t)FI_CLASS_SRX_CTX, p->ep_fid.fid.fclass);
	ASSERT_NE(NULL, p->owner_ops);
	ASSERT_NE(NULL, p->peer_ops);
	ASSERT_EQ(0, open_srx_ep(self, cq, srx, &rx1, &a1));
	ASSERT_EQ(0, open_srx_ep(self, cq, srx, &rx2, &a2));
	/* Too late to export an SRX whose endpoints match in the kernel. */
	ASSERT_EQ(0, fi_srx_context(self->fi.domain, NULL, &srx2, NULL));
	ASSERT_EQ(0, fi_endpoint(self->fi.domain, self->fi.info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &srx2->fid, 0));
	EXPECT_EQ(NULL, export_srx(srx2));
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&srx2->fid));

	/* Two receives, messages to either endpoint: posting order. */
	ASSERT_EQ(0, fi_recv(srx, rbuf[0], 16, NULL, FI_ADDR_UNSPEC,
			     (void *)0xa01));
	ASSERT_EQ(0, fi_recv(srx, rbuf[1], 16, NULL, FI_ADDR_UNSPEC,
			     (void *)0xa02));
	ASSERT_EQ(0, fi_send(self->tx, "to rx2", 7, NULL, a2, NULL));
	ASSERT_EQ(1, read_recv(cq, &e));
	EXPECT_EQ((void *)0xa01, e.op_context);
	EXPECT_EQ(7, e.len);
	EXPECT_EQ((void *)rbuf[0], e.buf);
	EXPECT_STREQ("to rx2", rbuf[0]);
	ASSERT_EQ(0, fi_send(self->tx, "to rx1", 7, NULL, a1, NULL));
	ASSERT_EQ(1, read_recv(cq, &e));
	EXPECT_EQ((void *)0xa02, e.op_context);
	EXPECT_STREQ("to rx1", rbuf[1]);

	/* Unexpected, then its receive. */
	ASSERT_EQ(0, fi_send(self->tx, "early", 6, NULL, a1, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, &e, 1));
	ASSERT_EQ(0, fi_recv(srx, rbuf[2], 16, NULL, FI_ADDR_UNSPEC,
			     (void *)0xa03));
	ASSERT_EQ(1, read_recv(cq, &e));
	EXPECT_EQ((void *)0xa03, e.op_context);
	EXPECT_STREQ("early", rbuf[2]);

	/* Tags and ignore bits; a directed receive for someone else. */
	ASSERT_EQ(0, fi_trecv(srx, rbuf[3], 16, NULL, a2, 0x10, 0,
			      (void *)0xa04));
	ASSERT_EQ(0, fi_trecv(srx, rbuf[4], 16, NULL, FI_ADDR_UNSPEC, 0x10,
			      0x0f, (void *)0xa05));
	ASSERT_EQ(0, fi_tsend(self->tx, "tag", 4, NULL, a1, 0x13, NULL));
	ASSERT_EQ(1, read_recv(cq, &e));
	EXPECT_EQ((void *)0xa05, e.op_context);
	EXPECT_EQ(0x13, e.tag);
	EXPECT_EQ(FI_RECV | FI_TAGGED, e.flags);

	/* Cancel: the directed receive comes back with FI_ECANCELED. */
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&srx->fid, (void *)0xbad));
	EXPECT_EQ(0, fi_cancel(&srx->fid, (void *)0xa04));
	EXPECT_EQ(-FI_EAVAIL, fi_cq_read(cq, &e, 1));
	ASSERT_EQ(1, fi_cq_readerr(cq, &err, 0));
	EXPECT_EQ((void *)0xa04, err.op_context);
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, &e, 1));

	/* What the exported SRX does not do: multi-receive buffers. */
	EXPECT_EQ(-FI_EBADFLAGS, fi_recvmsg(srx, &msg, FI_MULTI_RECV));

	/* Lifetime: endpoints, then the peer object, then the SRX. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&srx->fid));
	EXPECT_EQ(0, fi_close(&rx1->fid));
	EXPECT_EQ(0, fi_close(&rx2->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&srx->fid));
	EXPECT_EQ(0, fi_close(&p->ep_fid.fid));
	EXPECT_EQ(0, fi_close(&srx->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

/* A peer written here, calling kfab's owner ops as a provider would. */
static struct fi_peer_rx_entry *started[8];
static int nstarted;

static int test_peer_start(struct fi_peer_rx_entry *e)
{
	if (nstarted < 8)
		started[nstarted++] = e;
	return 0;
}

static int test_peer_discard(struct fi_peer_rx_entry *e)
{
	(void)e;
	return 0;
}

static int peer_get_msg(struct fid_peer_srx *p, fi_addr_t addr, size_t size,
			struct fi_peer_rx_entry **e)
{
#if FI_MAJOR_VERSION >= 2
	struct fi_peer_match_attr a = { .addr = addr, .msg_size = size };

	return p->owner_ops->get_msg(p, &a, e);
#else
	return p->owner_ops->get_msg(p, addr, size, e);
#endif
}

static int peer_get_tag(struct fid_peer_srx *p, fi_addr_t addr, uint64_t tag,
			struct fi_peer_rx_entry **e)
{
#if FI_MAJOR_VERSION >= 2
	struct fi_peer_match_attr a = { .addr = addr, .tag = tag };

	return p->owner_ops->get_tag(p, &a, e);
#else
	return p->owner_ops->get_tag(p, addr, tag, e);
#endif
}

TEST_F_TIMEOUT(peer, owner_srx_ops_called_by_a_peer, 300)
{
	char buf[4][16];
	struct fi_peer_rx_entry *e = NULL;
	struct fid_peer_srx *p;
	struct fid_ep *srx;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	nstarted = 0;
	ASSERT_EQ(0, fi_srx_context(self->fi.domain, NULL, &srx, NULL));
	p = export_srx(srx);
	ASSERT_NE(NULL, p);
	/* The peer sets its callbacks (fi_peer(3)). */
	p->peer_ops->start_msg = test_peer_start;
	p->peer_ops->start_tag = test_peer_start;
	p->peer_ops->discard_msg = test_peer_discard;
	p->peer_ops->discard_tag = test_peer_discard;

	/* Expected: the posted receive, with what a peer needs. */
	ASSERT_EQ(0, fi_recv(srx, buf[0], 16, NULL, FI_ADDR_UNSPEC,
			     (void *)0xc01));
	ASSERT_EQ(0, peer_get_msg(p, 5, 10, &e));
	ASSERT_NE(NULL, e);
	EXPECT_EQ((void *)0xc01, e->context);
	EXPECT_EQ(1, e->count);
	EXPECT_EQ((void *)buf[0], e->iov[0].iov_base);
	EXPECT_EQ(16, e->iov[0].iov_len);
	EXPECT_EQ(FI_RECV | FI_MSG | FI_COMPLETION, e->flags);
	EXPECT_EQ(p, e->srx);
	EXPECT_EQ(5, e->addr);
	p->owner_ops->free_entry(e);

	/*
	 * A receive for one kfab source never takes a peer's message: the
	 * peer's get finds nothing, queues; a receive for any source takes
	 * it (start_msg on the peer).
	 */
	ASSERT_EQ(0, fi_recv(srx, buf[1], 16, NULL, self->tx_addr,
			     (void *)0xc02));
	ASSERT_EQ(-FI_ENOENT, peer_get_msg(p, self->tx_addr, 3, &e));
	ASSERT_NE(NULL, e);
	EXPECT_EQ(0, p->owner_ops->queue_msg(e));
	EXPECT_EQ(0, nstarted);
	ASSERT_EQ(0, fi_recv(srx, buf[2], 16, NULL, FI_ADDR_UNSPEC,
			     (void *)0xc03));
	ASSERT_EQ(1, nstarted);
	EXPECT_EQ(e, started[0]);
	EXPECT_EQ((void *)0xc03, e->context);
	EXPECT_EQ((void *)buf[2], e->iov[0].iov_base);
	p->owner_ops->free_entry(e);
	/* No endpoint enabled: nowhere to report a cancel (as kfab's SRX). */
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&srx->fid, (void *)0xc02));

	/*
	 * A receive posted between the peer's get and its queue takes the
	 * message; the peer is started at the next progress, not inside
	 * its own queue call.
	 */
	ASSERT_EQ(-FI_ENOENT, peer_get_tag(p, 9, 0x77, &e));
	ASSERT_EQ(0, fi_trecv(srx, buf[3], 16, NULL, FI_ADDR_UNSPEC, 0x77, 0,
			      (void *)0xc04));
	EXPECT_EQ(0, p->owner_ops->queue_tag(e));
	EXPECT_EQ(1, nstarted);
	for (i = 0; i < 3 && nstarted < 2; i++)
		(void)fi_cq_read(self->fi.cq, NULL, 0);
	ASSERT_EQ(2, nstarted);
	EXPECT_EQ(e, started[1]);
	EXPECT_EQ((void *)0xc04, e->context);
	EXPECT_EQ(0x77, e->tag);
	p->owner_ops->free_entry(e);

	/* A message still queued goes with the peer's object. */
	ASSERT_EQ(-FI_ENOENT, peer_get_msg(p, 9, 1, &e));
	EXPECT_EQ(0, p->owner_ops->queue_msg(e));
	EXPECT_EQ(0, fi_close(&p->ep_fid.fid));
	EXPECT_EQ(0, fi_close(&srx->fid));
}

/*
 * shm as the peer of kfab's SRX: shm's messages and kfab's are matched
 * from the one SRX, in the order the receives were posted.
 */
TEST_F_TIMEOUT(peer, owner_srx_serves_shm_and_kfab_from_one_srx, 300)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	char rbuf[8][16] = { { 0 } };
	struct fid_peer_srx *psrx;
	struct fid_peer_cq *pcq;
	struct fid_ep *srx, *rx;
	struct shm s = { 0 };
	struct fid_cq *cq;
	fi_addr_t a;
	int rc, i;
	bool seen_k = false, seen_s = false;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cq_open(self->fi.domain, &attr, &cq, NULL));
	ASSERT_EQ(0, fi_srx_context(self->fi.domain, NULL, &srx, NULL));
	psrx = export_srx(srx);
	pcq = export_cq(cq);
	ASSERT_NE(NULL, psrx);
	ASSERT_NE(NULL, pcq);
	rc = shm_setup_srx(&s, pcq, psrx);
	if (rc == -FI_ENODATA) {
		shm_close(_metadata, &s);
		EXPECT_EQ(0, fi_close(&pcq->fid));
		EXPECT_EQ(0, fi_close(&psrx->ep_fid.fid));
		EXPECT_EQ(0, fi_close(&srx->fid));
		EXPECT_EQ(0, fi_close(&cq->fid));
		SKIP(return, "no shm provider");
	}
	ASSERT_EQ(0, rc) TH_LOG("shm: %s: %s", shm_step, fi_strerror(-rc));
	/* shm filled in its callbacks (1.17: its own table). */
	ASSERT_NE(NULL, psrx->peer_ops);
	ASSERT_NE(NULL, psrx->peer_ops->start_msg);
	ASSERT_EQ(0, fi_import_fid(&pcq->fid, &s.fi.cq->fid,
				   s.plain_cq ? KFAB_IMPORT_DRAIN : 0));
	ASSERT_EQ(0, open_srx_ep(self, cq, srx, &rx, &a));

	/* Three receives; shm, kfab, shm: they take them in that order. */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, fi_recv(srx, rbuf[i], 16, NULL, FI_ADDR_UNSPEC,
				     (void *)(uintptr_t)(0xb01 + i)));
	RETRY(cq, fi_send(s.ep[0], "shm 1", 6, NULL, s.addr[1], NULL));
	ASSERT_EQ(0, rc);
	ASSERT_EQ(1, read_recv(cq, &e));
	EXPECT_EQ((void *)0xb01, e.op_context);
	EXPECT_EQ(6, e.len);
	EXPECT_STREQ("shm 1", rbuf[0]);
	ASSERT_EQ(0, fi_send(self->tx, "kfab 1", 7, NULL, a, NULL));
	ASSERT_EQ(1, read_recv(cq, &e));
	EXPECT_EQ((void *)0xb02, e.op_context);
	EXPECT_STREQ("kfab 1", rbuf[1]);
	RETRY(cq, fi_send(s.ep[0], "shm 2", 6, NULL, s.addr[1], NULL));
	ASSERT_EQ(0, rc);
	ASSERT_EQ(1, read_recv(cq, &e));
	EXPECT_EQ((void *)0xb03, e.op_context);
	EXPECT_STREQ("shm 2", rbuf[2]);

	/*
	 * Unexpected from both: shm queues its message with kfab (queue_msg),
	 * kfab's waits in the kernel; two receives take both, and shm's
	 * start_msg moves its one in.
	 */
	RETRY(cq, fi_send(s.ep[0], "shm 3", 6, NULL, s.addr[1], NULL));
	ASSERT_EQ(0, rc);
	ASSERT_EQ(0, fi_send(self->tx, "kfab 2", 7, NULL, a, NULL));
	EXPECT_FALSE(recv_waiting(cq));
	for (i = 3; i < 5; i++)
		ASSERT_EQ(0, fi_recv(srx, rbuf[i], 16, NULL, FI_ADDR_UNSPEC,
				     (void *)(uintptr_t)(0xb01 + i)));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(1, read_recv(cq, &e));
		ASSERT_TRUE(e.op_context == (void *)0xb04 ||
			    e.op_context == (void *)0xb05);
		if (!strcmp((char *)e.buf, "shm 3"))
			seen_s = true;
		if (!strcmp((char *)e.buf, "kfab 2"))
			seen_k = true;
	}
	EXPECT_TRUE(seen_s);
	EXPECT_TRUE(seen_k);

	/*
	 * A receive directed at a kfab source never takes shm's message
	 * (its source belongs to shm's AV); a cancel takes it back.
	 */
	ASSERT_EQ(0, fi_recv(srx, rbuf[5], 16, NULL, self->tx_addr,
			     (void *)0xb06));
	RETRY(cq, fi_send(s.ep[0], "shm 4", 6, NULL, s.addr[1], NULL));
	ASSERT_EQ(0, rc);
	EXPECT_FALSE(recv_waiting(cq));
	EXPECT_EQ(0, fi_cancel(&srx->fid, (void *)0xb06));
	EXPECT_EQ(-FI_EAVAIL, fi_cq_read(cq, &e, 1));
	ASSERT_EQ(1, fi_cq_readerr(cq, &err, 0));
	EXPECT_EQ((void *)0xb06, err.op_context);
	EXPECT_EQ(FI_ECANCELED, err.err);
	ASSERT_EQ(0, fi_recv(srx, rbuf[6], 16, NULL, FI_ADDR_UNSPEC,
			     (void *)0xb07));
	ASSERT_EQ(1, read_recv(cq, &e));
	EXPECT_EQ((void *)0xb07, e.op_context);
	EXPECT_STREQ("shm 4", rbuf[6]);

	/*
	 * Lifetime: every endpoint, then shm's objects and kfab's peer
	 * objects (the SRX's first: shm's messages still queued go with
	 * it), then kfab's SRX and CQ.
	 */
	EXPECT_EQ(0, fi_close(&rx->fid));
	shm_close_eps(_metadata, &s);
	EXPECT_EQ(-FI_EBUSY, fi_close(&srx->fid));
	EXPECT_EQ(0, fi_close(&psrx->ep_fid.fid));
	EXPECT_EQ(0, fi_close(&srx->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));	/* closes shm's CQ */
	s.fi.cq = NULL;
	shm_close(_metadata, &s);
}

TEST_HARNESS_MAIN
