// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive contexts (fi_srx_context, fi_endpoint(3) "Shared
 * contexts") and FI_PEEK/FI_CLAIM/FI_DISCARD (fi_tagged(3)), through
 * libfabric's API.
 *
 * The receiving side is one domain with one AV, one SRX and four
 * endpoints bound to both, each with a CQ of its own; the senders are
 * endpoints of other fabrics (other files of the device), in this
 * process or in children.  Every test SKIPs without /dev/kfab or without
 * a module that knows KFAB_IOC_SRX_OPEN.
 *
 * Runs inside the test VM with FI_PROVIDER_PATH naming libshim/prov.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <linux/kfab.h>
#include <kfab/kfab.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

#define TIMEOUT_MS	10000
#define NEP		4

static struct fi_info *srx_hints(void)
{
	struct fi_info *hints = kfab_test_rdm_hints();

	if (!hints)
		return NULL;
	hints->caps |= FI_MULTI_RECV;
	hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	return hints;
}

static int get_info(struct fi_info **info, bool shared)
{
	struct fi_info *hints = srx_hints();
	int rc;

	if (!hints)
		return -FI_ENOMEM;
	if (!shared)
		hints->ep_attr->rx_ctx_cnt = 0;
	rc = fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	return rc;
}

/* A sender: fabric, domain, AV, CQ and an enabled endpoint of its own. */
static int side_open(struct kfab_test_fi *s)
{
	struct fi_info *hints = srx_hints();

	if (hints)
		hints->ep_attr->rx_ctx_cnt = 0;
	return _test_fi_side_open(s, hints, true);
}

static int name_of(struct fid_ep *ep, struct kfab_addr *addr)
{
	size_t len = sizeof(*addr);

	return fi_getname(&ep->fid, addr, &len);
}

static int insert(struct fid_av *av, const struct kfab_addr *addr,
		  fi_addr_t *fi_addr)
{
	return fi_av_insert(av, addr, 1, fi_addr, 0, NULL) == 1 ?
	       0 : -FI_EINVAL;
}

/* ---- the receiving side: one SRX, four endpoints ---- */

FIXTURE(srx) {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *srx;
	struct fid_ep *ep[NEP];
	struct fid_cq *cq[NEP];
	struct kfab_addr name[NEP];
	struct kfab_test_fi s;			/* a sender */
	fi_addr_t to[NEP];		/* ep[i] in the sender's AV */
	fi_addr_t s_at_rx;		/* the sender in the receivers' AV */
	bool ready;
};

static int open_rx_ep(FIXTURE_DATA(srx) *self, int i, bool bind_srx)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	int rc;

	rc = fi_cq_open(self->domain, &cq_attr, &self->cq[i], NULL);
	if (!rc)
		rc = fi_endpoint(self->domain, self->info, &self->ep[i], NULL);
	if (!rc)
		rc = fi_ep_bind(self->ep[i], &self->av->fid, 0);
	if (!rc && bind_srx)
		rc = fi_ep_bind(self->ep[i], &self->srx->fid, 0);
	if (!rc)
		rc = fi_ep_bind(self->ep[i], &self->cq[i]->fid,
				FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_enable(self->ep[i]);
	if (!rc)
		rc = name_of(self->ep[i], &self->name[i]);
	return rc;
}

FIXTURE_SETUP(srx)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct kfab_addr sname;
	int i;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_srx())
		SKIP(return, "kfab.ko without shared receive contexts");
	ASSERT_EQ(0, get_info(&self->info, true));
	ASSERT_EQ(0, fi_fabric(self->info->fabric_attr, &self->fabric, NULL));
	ASSERT_EQ(0, fi_domain(self->fabric, self->info, &self->domain, NULL));
	ASSERT_EQ(0, fi_av_open(self->domain, &av_attr, &self->av, NULL));
	ASSERT_EQ(0, fi_srx_context(self->domain, self->info->rx_attr,
				    &self->srx, NULL));
	for (i = 0; i < NEP; i++)
		ASSERT_EQ(0, open_rx_ep(self, i, true));
	ASSERT_EQ(0, side_open(&self->s));
	for (i = 0; i < NEP; i++)
		ASSERT_EQ(0, insert(self->s.av, &self->name[i], &self->to[i]));
	ASSERT_EQ(0, name_of(self->s.ep, &sname));
	ASSERT_EQ(0, insert(self->av, &sname, &self->s_at_rx));
	self->ready = true;
}

FIXTURE_TEARDOWN(srx)
{
	int i;

	if (!self->ready)
		return;
	EXPECT_EQ(0, _test_fi_close(&self->s));
	for (i = 0; i < NEP; i++) {
		if (self->ep[i])
			EXPECT_EQ(0, fi_close(&self->ep[i]->fid));
		if (self->cq[i])
			EXPECT_EQ(0, fi_close(&self->cq[i]->fid));
	}
	if (self->srx)
		EXPECT_EQ(0, fi_close(&self->srx->fid));
	EXPECT_EQ(0, fi_close(&self->av->fid));
	EXPECT_EQ(0, fi_close(&self->domain->fid));
	EXPECT_EQ(0, fi_close(&self->fabric->fid));
	fi_freeinfo(self->info);
}

/* ep[i]'s next completion, with the sender progressed meanwhile. */
#define WAIT_RX(i, e, src, err) \
	kfab_test_wait_cq(self->cq[i], self->s.cq, (e), (src), (err), \
			  TIMEOUT_MS)
#define WAIT_TX(e) \
	kfab_test_wait_cq(self->s.cq, NULL, (e), NULL, NULL, TIMEOUT_MS)
/* Nothing more arrives at ep[i] within a short while. */
#define EXPECT_RX_EMPTY(i) do {						\
		struct fi_cq_tagged_entry _e;				\
		EXPECT_EQ(-FI_EAGAIN,					\
			  kfab_test_wait_cq(self->cq[i], self->s.cq,	\
					    &_e, NULL, NULL, 100));	\
	} while (0)

/* Send @v to ep[@i] (tagged with @tag unless it is ~0) and see it complete. */
static int send_to(FIXTURE_DATA(srx) *self, int i, const uint32_t *v,
		   uint64_t tag)
{
	struct fi_cq_tagged_entry e;
	ssize_t rc;

	if (tag == ~0ULL)
		rc = fi_send(self->s.ep, v, sizeof(*v), NULL, self->to[i],
			     (void *)v);
	else
		rc = fi_tsend(self->s.ep, v, sizeof(*v), NULL, self->to[i],
			      tag, (void *)v);
	if (rc)
		return (int)rc;
	rc = kfab_test_wait_cq(self->s.cq, NULL, &e, NULL, NULL, TIMEOUT_MS);
	if (rc != 1 || e.op_context != v)
		return -1;
	return 0;
}

#define EXPECT_OP(tbl, type, op)					\
	EXPECT_NE(NULL, (void *)(tbl)->op) TH_LOG(#type "." #op " is NULL")

TEST_F(srx, open_and_the_calls_of_an_srx)
{
	struct fi_rx_attr attr;
	struct fid_ep *srx2, *ctx = NULL;
	struct kfab_kernel_handle h;
	struct fid_ep *srx = self->srx;
	uint64_t flags;
	struct fi_cq_tagged_entry entry;
	char buf[8] = "";
	size_t val, len;
	int fd;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(FI_CLASS_SRX_CTX, srx->fid.fclass);
	EXPECT_EQ(sizeof(struct fi_ops), srx->fid.ops->size);
	EXPECT_EQ(sizeof(struct fi_ops_ep), srx->ops->size);
	EXPECT_OP(srx->ops, fi_ops_ep, cancel);
	EXPECT_OP(srx->ops, fi_ops_ep, rx_size_left);
	EXPECT_OP(srx->cm, fi_ops_cm, setname);
	EXPECT_OP(srx->cm, fi_ops_cm, join);
	EXPECT_OP(srx->msg, fi_ops_msg, injectdata);
	EXPECT_OP(srx->tagged, fi_ops_tagged, injectdata);
	EXPECT_OP(srx->rma, fi_ops_rma, injectdata);
	EXPECT_OP(srx->atomic, fi_ops_atomic, compwritevalid);
	EXPECT_OP(srx->collective, fi_ops_collective, barrier2);

	/* Attributes: NULL is kfab's, anything beyond them -FI_ENODATA. */
	EXPECT_EQ(-FI_EINVAL, fi_srx_context(self->domain, NULL, NULL, NULL));
	ASSERT_EQ(0, fi_srx_context(self->domain, NULL, &srx2, (void *)7));
	EXPECT_EQ((void *)7, srx2->fid.context);
	EXPECT_EQ(KFAB_SQ_DEFAULT_ENTRIES, srx2->ops->rx_size_left(srx2));
	EXPECT_EQ(0, fi_close(&srx2->fid));
	attr = *self->info->rx_attr;
	attr.size = 3;
	ASSERT_EQ(0, fi_srx_context(self->domain, &attr, &srx2, NULL));
	EXPECT_EQ(4, srx2->ops->rx_size_left(srx2));
	EXPECT_EQ(3U, attr.size);	/* not written back */
	EXPECT_EQ(0, fi_close(&srx2->fid));
	attr.size = KFAB_SQ_MAX_ENTRIES + 1;
	EXPECT_EQ(-FI_ENODATA, fi_srx_context(self->domain, &attr, &srx2,
					      NULL));
	attr = *self->info->rx_attr;
	attr.caps |= FI_RMA;
	EXPECT_EQ(-FI_ENODATA, fi_srx_context(self->domain, &attr, &srx2,
					      NULL));
	attr = *self->info->rx_attr;
	attr.iov_limit = KFAB_IOV_MAX + 1;
	EXPECT_EQ(-FI_ENODATA, fi_srx_context(self->domain, &attr, &srx2,
					      NULL));
	attr = *self->info->rx_attr;
	attr.total_buffered_recv = 1ULL << 40;
	EXPECT_EQ(-FI_ENODATA, fi_srx_context(self->domain, &attr, &srx2,
					      NULL));
	attr = *self->info->rx_attr;
	attr.op_flags = FI_MULTICAST;
	EXPECT_EQ(-FI_ENODATA, fi_srx_context(self->domain, &attr, &srx2,
					      NULL));

	/* Receives only: every send is -FI_ENOSYS, and so is what transmits. */
	EXPECT_EQ(-FI_ENOSYS, fi_send(srx, buf, 1, NULL, 0, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_senddata(srx, buf, 1, NULL, 1, 0, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_inject(srx, buf, 1, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_tsend(srx, buf, 1, NULL, 0, 1, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_tinject(srx, buf, 1, 0, 1));
	EXPECT_EQ(-FI_ENOSYS, srx->ops->tx_size_left(srx));
	EXPECT_EQ(-FI_ENOSYS, fi_tx_context(srx, 0, NULL, &ctx, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_rx_context(srx, 0, NULL, &ctx, NULL));
	EXPECT_EQ(NULL, ctx);
	/* No name, no connection, nothing bound to it. */
	len = sizeof(buf);
	EXPECT_EQ(-FI_ENOSYS, fi_getname(&srx->fid, buf, &len));
	EXPECT_EQ(-FI_ENOSYS, fi_setname(&srx->fid, buf, sizeof(buf)));
	EXPECT_EQ(-FI_ENOSYS, fi_connect(srx, buf, NULL, 0));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(srx, &self->cq[0]->fid, FI_RECV));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(srx, &self->av->fid, 0));

	/* fi_control: the receive flags, enable, the kernel handle. */
	flags = FI_RECV | FI_COMPLETION;
	ASSERT_EQ(0, fi_control(&srx->fid, FI_SETOPSFLAG, &flags));
	flags = FI_RECV;
	ASSERT_EQ(0, fi_control(&srx->fid, FI_GETOPSFLAG, &flags));
	EXPECT_EQ(FI_COMPLETION, flags);
	flags = FI_TRANSMIT;
	EXPECT_EQ(-FI_EINVAL, fi_control(&srx->fid, FI_GETOPSFLAG, &flags));
	EXPECT_EQ(-FI_EINVAL, fi_control(&srx->fid, FI_SETOPSFLAG, &flags));
	EXPECT_EQ(-FI_EINVAL, fi_control(&srx->fid, FI_GETOPSFLAG, NULL));
	EXPECT_EQ(0, fi_enable(srx));
	EXPECT_EQ(-FI_ENOSYS, fi_control(&srx->fid, FI_GETWAIT, &fd));
	ASSERT_EQ(0, kfab_kernel_handle(&srx->fid, &h));
	EXPECT_NE(0U, h.id);

	/* Options: FI_OPT_MIN_MULTI_RECV only. */
	val = 100;
	ASSERT_EQ(0, fi_setopt(&srx->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &val, sizeof(val)));
	val = 0;
	len = sizeof(val);
	ASSERT_EQ(0, fi_getopt(&srx->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &val, &len));
	EXPECT_EQ(100U, val);
	EXPECT_EQ(-FI_EINVAL, fi_setopt(&srx->fid, FI_OPT_ENDPOINT,
					FI_OPT_MIN_MULTI_RECV, &val, 1));
	len = 1;
	EXPECT_EQ(-FI_EINVAL, fi_getopt(&srx->fid, FI_OPT_ENDPOINT,
					FI_OPT_MIN_MULTI_RECV, &val, &len));
	len = sizeof(val);
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_getopt(&srx->fid, FI_OPT_ENDPOINT,
					     FI_OPT_CM_DATA_SIZE, &val, &len));
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_setopt(&srx->fid, FI_OPT_ENDPOINT + 1,
					     FI_OPT_MIN_MULTI_RECV, &val,
					     sizeof(val)));
	/*
	 * The ring: rx_attr->size.  A receive waits there for the next
	 * progress call (the ring is lazy, as an endpoint's) and then
	 * leaves it.
	 */
	EXPECT_EQ((ssize_t)self->info->rx_attr->size,
		  srx->ops->rx_size_left(srx));
	ASSERT_EQ(0, fi_recv(srx, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
			     buf));
	EXPECT_LE((ssize_t)self->info->rx_attr->size - 1,
		  srx->ops->rx_size_left(srx));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq[0], &entry, 1));
	EXPECT_EQ((ssize_t)self->info->rx_attr->size,
		  srx->ops->rx_size_left(srx));
	EXPECT_EQ(0, fi_cancel(&srx->fid, buf));
}

TEST_F(srx, cancel_on_the_srx)
{
	uint32_t r1, r2, v = 5;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_recv(self->srx, &r1, sizeof(r1), NULL, FI_ADDR_UNSPEC,
			     &r1));
	ASSERT_EQ(0, fi_recv(self->srx, &r2, sizeof(r2), NULL, FI_ADDR_UNSPEC,
			     &r2));
	EXPECT_EQ(0, fi_cancel(&self->srx->fid, &r1));
	/* Once only, and nothing that was never posted. */
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&self->srx->fid, &r1));
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&self->srx->fid, NULL));
	/* The cancellation completes on the endpoint enabled first. */
	ASSERT_EQ(-FI_EAVAIL, WAIT_RX(0, &e, NULL, &err));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ((void *)&r1, err.op_context);
	/* The other receive is still posted and takes the next message. */
	ASSERT_EQ(0, send_to(self, 2, &v, ~0ULL));
	ASSERT_EQ(1, WAIT_RX(2, &e, NULL, NULL));
	EXPECT_EQ((void *)&r2, e.op_context);
	EXPECT_EQ(5U, r2);
	/* An endpoint bound to an SRX has no receives to cancel. */
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&self->ep[1]->fid, &r2));
}

/* fi_ep_bind() of an SRX, and fi_close() of everything in the wrong order. */
TEST_F(srx, bind_and_close_rules)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_ep *srx2, *ep, *ep2;
	struct fid_domain *dom2;
	struct fid_av *av2;
	struct fid_cq *cq;
	struct fi_info *info;
	struct fi_rx_attr attr;
	char buf[8];

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_srx_context(self->domain, self->info->rx_attr, &srx2,
				    NULL));
	ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cq, NULL));
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	EXPECT_EQ(-FI_EBADFLAGS, fi_ep_bind(ep, &srx2->fid, FI_RECV));
	ASSERT_EQ(0, fi_ep_bind(ep, &srx2->fid, 0));
	/* One SRX per endpoint. */
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(ep, &self->srx->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(ep, &srx2->fid, 0));
	/* The SRX stays while an endpoint holds it. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&srx2->fid));
	/* Its receives are the SRX's, and its RX CQ is still needed. */
	ASSERT_EQ(0, fi_ep_bind(ep, &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT));
	EXPECT_EQ(-FI_ENOCQ, fi_enable(ep));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_RECV));
	ASSERT_EQ(0, fi_enable(ep));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_recv(ep, buf, 1, NULL, FI_ADDR_UNSPEC,
					   NULL));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_trecv(ep, buf, 1, NULL, FI_ADDR_UNSPEC,
					    1, 0, NULL));
	EXPECT_EQ(-FI_EOPBADSTATE, ep->ops->rx_size_left(ep));
	EXPECT_LT(0, ep->ops->tx_size_left(ep));
	/* No binding after enable. */
	EXPECT_EQ(-FI_EOPBADSTATE, fi_ep_bind(ep, &self->srx->fid, 0));
	/* Children first: endpoint, then SRX, AV and CQ, then the domain. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&srx2->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&cq->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->domain->fid));
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->domain->fid));
	EXPECT_EQ(0, fi_close(&srx2->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));

	/* An endpoint asking for more receive caps than the SRX has. */
	attr = *self->info->rx_attr;
	attr.caps = FI_MSG | FI_RECV;
	ASSERT_EQ(0, fi_srx_context(self->domain, &attr, &srx2, NULL));
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(ep, &srx2->fid, 0));
	info = fi_dupinfo(self->info);
	ASSERT_NE(NULL, info);
	info->caps = FI_MSG | FI_SEND | FI_RECV;
	ASSERT_EQ(0, fi_endpoint(self->domain, info, &ep2, NULL));
	EXPECT_EQ(0, fi_ep_bind(ep2, &srx2->fid, 0));
	EXPECT_EQ(0, fi_close(&ep2->fid));
	/* Opened for a shared receive context, enabled without one. */
	ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cq, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_enable(ep));
	EXPECT_EQ(0, fi_close(&ep->fid));
	/* Without FI_SHARED_CONTEXT an endpoint needs none. */
	info->ep_attr->rx_ctx_cnt = 0;
	ASSERT_EQ(0, fi_endpoint(self->domain, info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	EXPECT_EQ(0, fi_enable(ep));
	EXPECT_LT(0, ep->ops->rx_size_left(ep));
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&srx2->fid));

	/* Every endpoint of an SRX on the same AV: the kernel says so. */
	ASSERT_EQ(0, fi_av_open(self->domain, &av_attr, &av2, NULL));
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &av2->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->srx->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	EXPECT_EQ(-FI_EINVAL, fi_enable(ep));
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&av2->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
	fi_freeinfo(info);

	/* An SRX of another domain. */
	ASSERT_EQ(0, fi_domain(self->fabric, self->info, &dom2, NULL));
	ASSERT_EQ(0, fi_srx_context(dom2, NULL, &srx2, NULL));
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	EXPECT_EQ(-FI_EDOMAIN, fi_ep_bind(ep, &srx2->fid, 0));
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&dom2->fid));
	EXPECT_EQ(0, fi_close(&srx2->fid));
	EXPECT_EQ(0, fi_close(&dom2->fid));
}

/*
 * Four endpoints bound to one SRX: messages sent to each of them match
 * the SRX's receives in the order posted, and each completes on the CQ of
 * the endpoint it was sent to, with the sender as its source.
 */
TEST_F(srx, shared_by_four_endpoints)
{
	enum { N = 16 };
	uint32_t sbuf[N], rbuf[N];
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int i, k;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < N; i++) {
		rbuf[i] = ~0U;
		ASSERT_EQ(0, fi_recv(self->srx, &rbuf[i], sizeof(rbuf[i]), NULL,
				     FI_ADDR_UNSPEC, &rbuf[i]));
	}
	/* Messages to ep 0, 1, 2, 3, 0, 1, ... */
	for (i = 0; i < N; i++) {
		sbuf[i] = 1000 + i;
		ASSERT_EQ(0, send_to(self, i % NEP, &sbuf[i], ~0ULL));
	}
	for (k = 0; k < NEP; k++) {
		for (i = k; i < N; i += NEP) {
			ASSERT_EQ(1, WAIT_RX(k, &e, &src, NULL));
			/* The i-th message took the i-th receive. */
			EXPECT_EQ((void *)&rbuf[i], e.op_context);
			EXPECT_EQ(1000U + i, rbuf[i]);
			EXPECT_EQ(sizeof(uint32_t), e.len);
			EXPECT_EQ(FI_RECV | FI_MSG, e.flags);
			EXPECT_EQ(self->s_at_rx, src);
		}
		EXPECT_RX_EMPTY(k);
	}
}

/* Unexpected messages wait on the SRX and match in arrival order. */
TEST_F(srx, unexpected_messages_in_arrival_order)
{
	enum { N = 12 };
	uint32_t sbuf[N], rbuf[N];
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	/* Arrival order 3, 2, 1, 0, 3, ...: not the endpoints' order. */
	for (i = 0; i < N; i++) {
		sbuf[i] = 2000 + i;
		ASSERT_EQ(0, send_to(self, NEP - 1 - i % NEP, &sbuf[i],
				     ~0ULL));
	}
	for (i = 0; i < NEP; i++)
		EXPECT_RX_EMPTY(i);
	for (i = 0; i < N; i++) {
		int k = NEP - 1 - i % NEP;

		rbuf[i] = ~0U;
		ASSERT_EQ(0, fi_recv(self->srx, &rbuf[i], sizeof(rbuf[i]), NULL,
				     FI_ADDR_UNSPEC, &rbuf[i]));
		ASSERT_EQ(1, WAIT_RX(k, &e, &src, NULL)) TH_LOG("message %d", i);
		EXPECT_EQ((void *)&rbuf[i], e.op_context);
		EXPECT_EQ(2000U + i, rbuf[i]);
		EXPECT_EQ(self->s_at_rx, src);
	}
	for (i = 0; i < NEP; i++)
		EXPECT_RX_EMPTY(i);
}

/* FI_DIRECTED_RECV and tag/ignore matching on the SRX. */
TEST_F(srx, directed_and_tagged_receives)
{
	struct kfab_test_fi c;
	struct kfab_addr cname;
	fi_addr_t c_at_rx, c_to1, src;
	uint32_t from_s = 0x5, from_c = 0xc, r_for_c = 0, r_any = 0;
	uint32_t v1 = 1, v2 = 2, r1 = 0, r2 = 0;
	struct fi_cq_tagged_entry e;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, side_open(&c));
	ASSERT_EQ(0, name_of(c.ep, &cname));
	ASSERT_EQ(0, insert(self->av, &cname, &c_at_rx));
	ASSERT_EQ(0, insert(c.av, &self->name[1], &c_to1));
	/* A receive for c only, then one for anyone. */
	ASSERT_EQ(0, fi_recv(self->srx, &r_for_c, sizeof(r_for_c), NULL,
			     c_at_rx, &r_for_c));
	ASSERT_EQ(0, fi_recv(self->srx, &r_any, sizeof(r_any), NULL,
			     FI_ADDR_UNSPEC, &r_any));
	ASSERT_EQ(0, send_to(self, 0, &from_s, ~0ULL));
	ASSERT_EQ(1, WAIT_RX(0, &e, &src, NULL));
	EXPECT_EQ((void *)&r_any, e.op_context);
	EXPECT_EQ(0x5U, r_any);
	ASSERT_EQ(0, fi_send(c.ep, &from_c, sizeof(from_c), NULL, c_to1,
			     NULL));
	ASSERT_EQ(1, kfab_test_wait_cq(self->cq[1], c.cq, &e, &src, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ((void *)&r_for_c, e.op_context);
	EXPECT_EQ(0xcU, r_for_c);
	EXPECT_EQ(c_at_rx, src);
	ASSERT_EQ(1, kfab_test_wait_cq(c.cq, NULL, &e, NULL, NULL, TIMEOUT_MS));
	EXPECT_EQ(0, _test_fi_close(&c));

	/* Tags 0xab00-0xabff; 0xac00 waits, unexpected, for its own. */
	ASSERT_EQ(0, fi_trecv(self->srx, &r1, sizeof(r1), NULL,
			      FI_ADDR_UNSPEC, 0xab00, 0xff, &r1));
	ASSERT_EQ(0, send_to(self, 3, &v2, 0xac00));
	ASSERT_EQ(0, send_to(self, 2, &v1, 0xab42));
	ASSERT_EQ(1, WAIT_RX(2, &e, NULL, NULL));
	EXPECT_EQ((void *)&r1, e.op_context);
	EXPECT_EQ(0xab42ULL, e.tag);
	EXPECT_EQ(FI_RECV | FI_TAGGED, e.flags);
	EXPECT_EQ(1U, r1);
	EXPECT_RX_EMPTY(3);
	ASSERT_EQ(0, fi_trecv(self->srx, &r2, sizeof(r2), NULL,
			      FI_ADDR_UNSPEC, 0xac00, 0, &r2));
	ASSERT_EQ(1, WAIT_RX(3, &e, NULL, NULL));
	EXPECT_EQ((void *)&r2, e.op_context);
	EXPECT_EQ(2U, r2);
}

/* One multi-receive buffer of the SRX takes messages sent to all four. */
TEST_F(srx, multi_recv_on_the_srx)
{
	uint32_t buf[16], v[5];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC, .context = buf };
	struct fi_cq_tagged_entry e;
	size_t min = 3 * sizeof(uint32_t);
	int i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_setopt(&self->srx->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
	ASSERT_EQ(0, fi_recvmsg(self->srx, &msg, FI_MULTI_RECV));
	/* 16 words, released when fewer than 3 are left: 14 messages. */
	for (i = 0; i < 5; i++) {
		v[i] = 300 + i;
		ASSERT_EQ(0, send_to(self, i % NEP, &v[i], ~0ULL));
		ASSERT_EQ(1, WAIT_RX(i % NEP, &e, NULL, NULL));
		EXPECT_EQ((void *)buf, e.op_context);
		EXPECT_EQ(sizeof(uint32_t), e.len);
		EXPECT_EQ((void *)&buf[i], e.buf);
		EXPECT_EQ(300U + i, buf[i]);
		EXPECT_FALSE(e.flags & FI_MULTI_RECV);
	}
	for (; i < 14; i++) {
		v[0] = 300 + i;
		ASSERT_EQ(0, send_to(self, i % NEP, &v[0], ~0ULL));
		ASSERT_EQ(1, WAIT_RX(i % NEP, &e, NULL, NULL));
		EXPECT_EQ((void *)&buf[i], e.buf);
		EXPECT_EQ(300U + i, buf[i]);
		/* The last one releases the buffer. */
		EXPECT_EQ(i == 13, !!(e.flags & FI_MULTI_RECV));
	}
	/* Nothing is posted any more: the next message waits. */
	v[0] = 999;
	ASSERT_EQ(0, send_to(self, 0, &v[0], ~0ULL));
	EXPECT_RX_EMPTY(0);
}

/*
 * An endpoint that closes while messages sent to it wait on the SRX:
 * they go with it; the others' stay, in their order.
 */
TEST_F(srx, closing_an_endpoint_drops_its_waiting_messages)
{
	uint32_t v[4] = { 10, 11, 12, 13 }, r[2] = { 0, 0 };
	struct fi_cq_tagged_entry e;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, send_to(self, 1, &v[0], ~0ULL));
	ASSERT_EQ(0, send_to(self, 2, &v[1], ~0ULL));
	ASSERT_EQ(0, send_to(self, 1, &v[2], ~0ULL));
	ASSERT_EQ(0, send_to(self, 3, &v[3], ~0ULL));
	ASSERT_EQ(0, fi_close(&self->ep[1]->fid));
	self->ep[1] = NULL;
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, fi_recv(self->srx, &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, &r[i]));
	ASSERT_EQ(1, WAIT_RX(2, &e, NULL, NULL));
	EXPECT_EQ((void *)&r[0], e.op_context);
	EXPECT_EQ(11U, r[0]);
	ASSERT_EQ(1, WAIT_RX(3, &e, NULL, NULL));
	EXPECT_EQ((void *)&r[1], e.op_context);
	EXPECT_EQ(13U, r[1]);
	EXPECT_EQ(0, fi_close(&self->cq[1]->fid));
	self->cq[1] = NULL;
	/* The SRX still serves the others. */
	ASSERT_EQ(0, fi_recv(self->srx, &r[0], sizeof(r[0]), NULL,
			     FI_ADDR_UNSPEC, &r[0]));
	ASSERT_EQ(0, send_to(self, 0, &v[3], ~0ULL));
	ASSERT_EQ(1, WAIT_RX(0, &e, NULL, NULL));
	EXPECT_EQ(13U, r[0]);
}

/* Receives posted before any endpoint of the SRX is enabled. */
TEST_F(srx, receives_posted_before_enable)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fid_ep *srx2, *ep;
	struct fid_cq *cq;
	struct kfab_addr name;
	fi_addr_t to;
	uint32_t r = 0, v = 77;
	struct fi_cq_tagged_entry e;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_srx_context(self->domain, NULL, &srx2, NULL));
	ASSERT_EQ(0, fi_recv(srx2, &r, sizeof(r), NULL, FI_ADDR_UNSPEC, &r));
	/* Nothing in the kernel to cancel yet. */
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&srx2->fid, &r));
	ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cq, NULL));
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &srx2->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(ep));
	ASSERT_EQ(0, name_of(ep, &name));
	ASSERT_EQ(0, insert(self->s.av, &name, &to));
	ASSERT_EQ(0, fi_send(self->s.ep, &v, sizeof(v), NULL, to, NULL));
	ASSERT_EQ(1, kfab_test_wait_cq(cq, self->s.cq, &e, NULL, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ((void *)&r, e.op_context);
	EXPECT_EQ(77U, r);
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
	EXPECT_EQ(0, fi_close(&srx2->fid));
}

/* ---- FI_PEEK, FI_CLAIM, FI_DISCARD (fi_tagged(3)) ---- */

static ssize_t trecvmsg(struct fid_ep *ep, void *buf, size_t len,
			uint64_t tag, void *context, uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged msg = {
		.msg_iov = &iov, .iov_count = buf ? 1 : 0,
		.addr = FI_ADDR_UNSPEC, .tag = tag, .context = context,
	};

	return fi_trecvmsg(ep, &msg, flags);
}

TEST_F(srx, peek_finds_or_reports_enomsg)
{
	struct fi_context pctx, rctx;
	uint32_t v = 42, r = 0;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;

	RETURN_IF_SETUP_SKIPPED();
	/* Nothing there: an FI_ENOMSG error completion (first endpoint). */
	ASSERT_EQ(0, trecvmsg(self->srx, NULL, 0, 7, &pctx, FI_PEEK));
	ASSERT_EQ(-FI_EAVAIL, WAIT_RX(0, &e, NULL, &err));
	EXPECT_EQ(FI_ENOMSG, err.err);
	EXPECT_EQ((void *)&pctx, err.op_context);
	/* A message with tag 7 to ep 2: the peek sees it, takes nothing. */
	ASSERT_EQ(0, send_to(self, 2, &v, 7));
	ASSERT_EQ(0, trecvmsg(self->srx, &r, sizeof(r), 7, &pctx, FI_PEEK));
	ASSERT_EQ(1, WAIT_RX(2, &e, &src, NULL));
	EXPECT_EQ((void *)&pctx, e.op_context);
	EXPECT_EQ(sizeof(v), e.len);
	EXPECT_EQ(7ULL, e.tag);
	EXPECT_EQ(self->s_at_rx, src);
	EXPECT_TRUE(e.flags & FI_RECV);
	EXPECT_TRUE(e.flags & FI_TAGGED);
	EXPECT_EQ(NULL, e.buf);	/* no data moved */
	EXPECT_EQ(0U, r);
	/* Another tag finds nothing. */
	ASSERT_EQ(0, trecvmsg(self->srx, NULL, 0, 8, &pctx, FI_PEEK));
	ASSERT_EQ(-FI_EAVAIL, WAIT_RX(0, &e, NULL, &err));
	EXPECT_EQ(FI_ENOMSG, err.err);
	/* The message is still there for a receive. */
	ASSERT_EQ(0, fi_trecv(self->srx, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			      7, 0, &rctx));
	ASSERT_EQ(1, WAIT_RX(2, &e, NULL, NULL));
	EXPECT_EQ((void *)&rctx, e.op_context);
	EXPECT_EQ(42U, r);
	/* And now it is gone. */
	ASSERT_EQ(0, trecvmsg(self->srx, NULL, 0, 7, &pctx, FI_PEEK));
	ASSERT_EQ(-FI_EAVAIL, WAIT_RX(0, &e, NULL, &err));
	EXPECT_EQ(FI_ENOMSG, err.err);
}

TEST_F(srx, peek_claim_then_claim_receives_it)
{
	struct fi_context cctx, octx;
	uint32_t v = 43, w = 44, r = 0, other = 0;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, send_to(self, 1, &v, 9));
	ASSERT_EQ(0, trecvmsg(self->srx, NULL, 0, 9, &cctx,
			      FI_PEEK | FI_CLAIM));
	ASSERT_EQ(1, WAIT_RX(1, &e, NULL, NULL));
	EXPECT_EQ((void *)&cctx, e.op_context);
	EXPECT_EQ(sizeof(v), e.len);
	/* Claimed: no other receive or peek sees it... */
	ASSERT_EQ(0, trecvmsg(self->srx, NULL, 0, 9, &octx, FI_PEEK));
	ASSERT_EQ(-FI_EAVAIL, WAIT_RX(0, &e, NULL, &err));
	EXPECT_EQ(FI_ENOMSG, err.err);
	ASSERT_EQ(0, fi_trecv(self->srx, &other, sizeof(other), NULL,
			      FI_ADDR_UNSPEC, 9, 0, &octx));
	EXPECT_RX_EMPTY(1);
	/* ...a claim with another context neither... */
	ASSERT_EQ(0, trecvmsg(self->srx, &r, sizeof(r), 9, &err, FI_CLAIM));
	ASSERT_EQ(-FI_EAVAIL, WAIT_RX(0, &e, NULL, &err));
	EXPECT_EQ(FI_ENOMSG, err.err);
	/* ...only the claiming receive with its context. */
	ASSERT_EQ(0, trecvmsg(self->srx, &r, sizeof(r), 9, &cctx, FI_CLAIM));
	ASSERT_EQ(1, WAIT_RX(1, &e, NULL, NULL));
	EXPECT_EQ((void *)&cctx, e.op_context);
	EXPECT_EQ(sizeof(v), e.len);
	EXPECT_EQ(43U, r);
	/* The plain receive posted meanwhile takes the next one. */
	ASSERT_EQ(0, send_to(self, 3, &w, 9));
	ASSERT_EQ(1, WAIT_RX(3, &e, NULL, NULL));
	EXPECT_EQ((void *)&octx, e.op_context);
	EXPECT_EQ(44U, other);
	/* A claim for nothing: FI_ENOMSG. */
	ASSERT_EQ(0, trecvmsg(self->srx, &r, sizeof(r), 9, &cctx, FI_CLAIM));
	ASSERT_EQ(-FI_EAVAIL, WAIT_RX(0, &e, NULL, &err));
	EXPECT_EQ(FI_ENOMSG, err.err);
}

TEST_F(srx, peek_discard_and_claim_discard)
{
	struct fi_context ctx;
	uint32_t v = 45, w = 46, r = 0;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	RETURN_IF_SETUP_SKIPPED();
	/* FI_PEEK | FI_DISCARD: found and dropped, reported with length 0. */
	ASSERT_EQ(0, send_to(self, 0, &v, 11));
	ASSERT_EQ(0, trecvmsg(self->srx, &r, sizeof(r), 11, &ctx,
			      FI_PEEK | FI_DISCARD));
	ASSERT_EQ(1, WAIT_RX(0, &e, NULL, NULL));
	EXPECT_EQ((void *)&ctx, e.op_context);
	EXPECT_EQ(0U, e.len);
	EXPECT_EQ(0U, r);
	ASSERT_EQ(0, trecvmsg(self->srx, NULL, 0, 11, &ctx, FI_PEEK));
	ASSERT_EQ(-FI_EAVAIL, WAIT_RX(0, &e, NULL, &err));
	EXPECT_EQ(FI_ENOMSG, err.err);
	/* FI_PEEK | FI_CLAIM, then FI_CLAIM | FI_DISCARD. */
	ASSERT_EQ(0, send_to(self, 2, &w, 12));
	ASSERT_EQ(0, trecvmsg(self->srx, NULL, 0, 12, &ctx,
			      FI_PEEK | FI_CLAIM));
	ASSERT_EQ(1, WAIT_RX(2, &e, NULL, NULL));
	ASSERT_EQ(0, trecvmsg(self->srx, &r, sizeof(r), 12, &ctx,
			      FI_CLAIM | FI_DISCARD));
	ASSERT_EQ(1, WAIT_RX(2, &e, NULL, NULL));
	EXPECT_EQ((void *)&ctx, e.op_context);
	EXPECT_EQ(0U, e.len);
	EXPECT_EQ(0U, r);
	ASSERT_EQ(0, trecvmsg(self->srx, &r, sizeof(r), 12, &ctx, FI_CLAIM));
	ASSERT_EQ(-FI_EAVAIL, WAIT_RX(0, &e, NULL, &err));
	EXPECT_EQ(FI_ENOMSG, err.err);
	/* Argument checks. */
	EXPECT_EQ(-FI_EBADFLAGS, trecvmsg(self->srx, &r, sizeof(r), 12, &ctx,
					  FI_DISCARD));
	EXPECT_EQ(-FI_EINVAL, trecvmsg(self->srx, &r, sizeof(r), 12, NULL,
				       FI_CLAIM));
}

/* The same on an endpoint of its own (no SRX). */
TEST_F(srx, peek_and_claim_on_a_plain_endpoint)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_context ctx;
	struct fi_info *info;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct kfab_addr name;
	fi_addr_t to;
	uint32_t v = 47, r = 0;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	RETURN_IF_SETUP_SKIPPED();
	info = fi_dupinfo(self->info);
	ASSERT_NE(NULL, info);
	info->ep_attr->rx_ctx_cnt = 1;
	ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cq, NULL));
	ASSERT_EQ(0, fi_endpoint(self->domain, info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(ep));
	ASSERT_EQ(0, name_of(ep, &name));
	ASSERT_EQ(0, insert(self->s.av, &name, &to));
	ASSERT_EQ(0, trecvmsg(ep, NULL, 0, 5, &ctx, FI_PEEK));
	ASSERT_EQ(-FI_EAVAIL, kfab_test_wait_cq(cq, NULL, &e, NULL, &err,
						TIMEOUT_MS));
	EXPECT_EQ(FI_ENOMSG, err.err);
	ASSERT_EQ(0, fi_tsend(self->s.ep, &v, sizeof(v), NULL, to, 5, NULL));
	ASSERT_EQ(1, WAIT_TX(&e));
	ASSERT_EQ(0, trecvmsg(ep, NULL, 0, 5, &ctx, FI_PEEK | FI_CLAIM));
	ASSERT_EQ(1, kfab_test_wait_cq(cq, NULL, &e, NULL, NULL, TIMEOUT_MS));
	EXPECT_EQ(sizeof(v), e.len);
	ASSERT_EQ(0, trecvmsg(ep, &r, sizeof(r), 5, &ctx, FI_CLAIM));
	ASSERT_EQ(1, kfab_test_wait_cq(cq, NULL, &e, NULL, NULL, TIMEOUT_MS));
	EXPECT_EQ((void *)&ctx, e.op_context);
	EXPECT_EQ(47U, r);
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
	fi_freeinfo(info);
}

/* ---- large receives of an SRX keep their pins (pincache.c) ---- */

#define MIB		(1024 * 1024)
#define PIN_CACHE	"/sys/module/kfab/parameters/pin_cache"
#define CONTEXTS	"/sys/kernel/debug/kfab/contexts"

/*
 * Hits of the kept pins of this process's file that holds an SRX
 * (debugfs lists a file's objects before its pin cache), or -1.
 */
static long long srx_kept_hits(void)
{
	bool ours = false, srx = false;
	long long hits = -1, h;
	char line[256];
	int pid;
	FILE *f = fopen(CONTEXTS, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "context %*u pid %d", &pid) == 1) {
			ours = pid == getpid();
			srx = false;
		} else if (ours && !strncmp(line, "\tsrx ", 5)) {
			srx = true;
		} else if (srx &&
			   sscanf(line, "\tpin_cache entries %*u pages %*u hits %lld",
				  &h) == 1) {
			hits = h;
		}
	}
	fclose(f);
	return hits;
}

static bool pin_cache_on(void)
{
	FILE *f = fopen(PIN_CACHE, "r");
	bool on = f && fgetc(f) == 'Y';

	if (f)
		fclose(f);
	return on;
}

/* A 1 MiB message from the sender into @r, received through the SRX. */
static void big_through_srx(struct __test_metadata *_metadata,
			    FIXTURE_DATA(srx) *self, uint8_t *s, uint8_t *r,
			    uint8_t fill)
{
	struct fi_cq_tagged_entry e;
	size_t i, wrong = 0;

	memset(s, fill, MIB);
	memset(r, 0, MIB);
	ASSERT_EQ(0, fi_recv(self->srx, r, MIB, NULL, FI_ADDR_UNSPEC, r));
	ASSERT_EQ(0, fi_send(self->s.ep, s, MIB, NULL, self->to[1], s));
	ASSERT_EQ(1, WAIT_RX(1, &e, NULL, NULL));
	EXPECT_EQ(r, e.op_context);
	EXPECT_EQ(MIB, e.len);
	ASSERT_EQ(1, WAIT_TX(&e));
	for (i = 0; i < MIB; i++)
		wrong += r[i] != fill;
	EXPECT_EQ(0, wrong) TH_LOG("message %u", fill);
}

/*
 * A large buffer received into again and again through an SRX stays
 * pinned between its messages, as an endpoint's own receive does, and
 * a new mapping at its address is seen.
 */
TEST_F(srx, large_receives_keep_their_pins)
{
	long long hits;
	uint8_t *s, *r;
	uint8_t fill;

	RETURN_IF_SETUP_SKIPPED();
	if (!pin_cache_on())
		SKIP(return, "pin_cache absent or off");
	if (srx_kept_hits() < 0)
		SKIP(return, "no debugfs");
	s = kfab_pmd_alloc(4 * MIB);
	ASSERT_NE(NULL, s);
	r = s + 2 * MIB;

	big_through_srx(_metadata, self, s, r, 1);
	hits = srx_kept_hits();
	for (fill = 2; fill <= 4; fill++)
		big_through_srx(_metadata, self, s, r, fill);
	EXPECT_LE(hits + 3, srx_kept_hits());

	/* Mapped anew at the same address: the new pages get the bytes. */
	ASSERT_EQ(0, munmap(r, MIB));
	ASSERT_EQ(r, mmap(r, MIB, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	big_through_srx(_metadata, self, s, r, 5);
	big_through_srx(_metadata, self, s, r, 6);
	munmap(s, 4 * MIB);
}

/* ---- four processes, four endpoints, one SRX ---- */

#define PROC_MSGS	200

struct hello {
	uint32_t id;
	uint32_t pad;
	struct kfab_addr addr;
};

/*
 * Child @id: sends PROC_MSGS {id, seq} to @to once the parent says go (one
 * byte each), and stays until the parent closes @fin_fd.
 */
static int proc_sender(uint32_t id, const struct kfab_addr *to, int name_fd,
		       int go_fd, int fin_fd)
{
	struct kfab_test_fi s;
	struct kfab_addr me;
	struct hello hello;
	struct fi_cq_tagged_entry e;
	uint32_t msg[PROC_MSGS][2], seq, done = 0;
	fi_addr_t dest;
	char go;
	ssize_t rc;

	if (side_open(&s) || insert(s.av, to, &dest) || name_of(s.ep, &me))
		return 1;
	/* One write (atomic on a pipe): the four children share it. */
	hello.id = id;
	hello.addr = me;
	if (kfab_write_all(name_fd, &hello, sizeof(hello)) ||
	    kfab_read_all(go_fd, &go, 1))
		return 2;
	for (seq = 0; seq < PROC_MSGS; seq++) {
		msg[seq][0] = id;
		msg[seq][1] = seq;
		while ((rc = fi_send(s.ep, msg[seq], sizeof(msg[seq]), NULL,
				     dest, NULL)) == -FI_EAGAIN)
			if (fi_cq_read(s.cq, &e, 1) == 1)
				done++;
		if (rc)
			return 3;
	}
	while (done < PROC_MSGS) {
		rc = fi_cq_read(s.cq, &e, 1);
		if (rc == 1)
			done++;
		else if (rc != -FI_EAGAIN)
			return 4;
	}
	/* Stay until the parent has everything (it closes fin). */
	(void)!read(fin_fd, &go, 1);
	return 0;
}

TEST_F_TIMEOUT(srx, four_processes_to_four_endpoints, 120)
{
	enum { POSTED = 32 };
	static uint32_t rbuf[POSTED][2];
	uint32_t next[NEP] = { 0 }, got = 0;
	fi_addr_t src_of[NEP];
	uint64_t last;
	int names[2], go[2], fin[2], i, k, status;
	pid_t pids[NEP];
	struct fi_cq_tagged_entry e;
	fi_addr_t src;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, pipe(names));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(fin));
	for (i = 0; i < NEP; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i]) {
			/* A parent that dies closes the pipes: no hang. */
			close(names[0]);
			close(go[1]);
			close(fin[1]);
			_exit(proc_sender(i, &self->name[i], names[1], go[0],
					  fin[0]));
		}
	}
	/* Their addresses into the SRX's AV, before any message moves. */
	for (i = 0; i < NEP; i++) {
		struct hello h;

		ASSERT_EQ(0, kfab_read_all(names[0], &h, sizeof(h)));
		ASSERT_LT(h.id, NEP);
		ASSERT_EQ(0, insert(self->av, &h.addr, &src_of[h.id]));
	}
	for (i = 0; i < POSTED; i++)
		ASSERT_EQ(0, fi_recv(self->srx, rbuf[i], sizeof(rbuf[i]), NULL,
				     FI_ADDR_UNSPEC, rbuf[i]));
	ASSERT_EQ(0, kfab_write_all(go[1], "gggg", NEP));
	last = kfab_now_ms();
	while (got < NEP * PROC_MSGS) {
		bool any = false;

		ASSERT_GT(last + TIMEOUT_MS, kfab_now_ms())
			TH_LOG("stuck after %u messages: %u %u %u %u", got,
			       next[0], next[1], next[2], next[3]);

		for (k = 0; k < NEP; k++) {
			uint32_t *b;
			ssize_t rc = fi_cq_readfrom(self->cq[k], &e, 1, &src);

			if (rc == -FI_EAGAIN)
				continue;
			ASSERT_EQ(1, rc) TH_LOG("after %u messages", got);
			any = true;
			b = e.op_context;
			/* Sender k sent to ep k only, in order, once each. */
			ASSERT_EQ((uint32_t)k, b[0]);
			ASSERT_EQ(next[k], b[1]);
			ASSERT_EQ(src_of[k], src);
			next[k]++;
			got++;
			ASSERT_EQ(0, fi_recv(self->srx, b, 2 * sizeof(*b),
					     NULL, FI_ADDR_UNSPEC, b));
			last = kfab_now_ms();
		}
		if (!any)
			usleep(100);
	}
	close(fin[1]);
	for (i = 0; i < NEP; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	for (i = 0; i < NEP; i++)
		EXPECT_RX_EMPTY(i);
	close(names[0]);
	close(names[1]);
	close(go[0]);
	close(go[1]);
	close(fin[0]);
}

TEST_HARNESS_MAIN
