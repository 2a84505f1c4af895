// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Endpoints, messages and tagged messages, through libfabric's API
 * (fi_endpoint(3), fi_msg(3), fi_tagged(3), fi_cm(3), fi_mr(3)).
 *
 * The control path (open, bind, enable, names, options) needs the kernel's
 * KFAB_IOC_EP_* commands; the data path runs end to end between endpoints
 * of one process and of two processes.  Every test SKIPs without /dev/kfab,
 * and without a module that knows KFAB_IOC_EP_OPEN.
 *
 * Runs inside the test VM with FI_PROVIDER_PATH naming libshim/prov.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <linux/kfab.h>
#include <kfab/kfab.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

#define TIMEOUT_MS	10000

/* fi_tx_size_left() and fi_rx_size_left() are deprecated wrappers of these. */
static ssize_t tx_left(struct fid_ep *ep)
{
	return ep->ops->tx_size_left(ep);
}

static ssize_t rx_left(struct fid_ep *ep)
{
	return ep->ops->rx_size_left(ep);
}

static void fill(void *buf, size_t len, unsigned int seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

static bool check_fill(const void *buf, size_t len, unsigned int seed)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(i * 31 + seed))
			return false;
	return true;
}

/* ---- the control path: one endpoint, not enabled ---- */

FIXTURE(ep) {
	struct kfab_test_fi s;
};

FIXTURE_SETUP(ep)
{
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_endpoints())
		SKIP(return, "kfab.ko without endpoints (KFAB_IOC_EP_OPEN)");
	ASSERT_EQ(0, _test_fi_side_open(&self->s, kfab_test_rdm_hints(),
					false));
}

FIXTURE_TEARDOWN(ep)
{
	test_fi_close(&self->s);
}

TEST_F(ep, open_close)
{
	struct fid_ep *ep;
	struct fi_info *info;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(FI_CLASS_EP, self->s.ep->fid.fclass);

	EXPECT_EQ(-FI_EINVAL, fi_endpoint(self->s.domain, NULL, &ep, NULL));
	info = fi_dupinfo(self->s.info);
	ASSERT_NE(NULL, info);
	/* FI_EP_MSG: selftests/kfab_cm.c; FI_EP_DGRAM: kfab_dgram.c */
	info->ep_attr->type = FI_EP_SOCK_STREAM;
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_endpoint(self->s.domain, info, &ep,
					       NULL));
	info->ep_attr->type = FI_EP_RDM;
	info->caps |= FI_RMA;
	EXPECT_EQ(-FI_ENODATA, fi_endpoint(self->s.domain, info, &ep, NULL));
	fi_freeinfo(info);

	/* FI_PEER_TRANSFER without its context: selftests/kfab_peer */
	EXPECT_EQ(-FI_EINVAL, fi_endpoint2(self->s.domain, self->s.info, &ep,
					   FI_PEER_TRANSFER, NULL));
	EXPECT_EQ(-FI_EBADFLAGS, fi_endpoint2(self->s.domain, self->s.info,
					      &ep, 1ULL << 61, NULL));
	ASSERT_EQ(0, fi_endpoint2(self->s.domain, self->s.info, &ep, 0,
				  (void *)0x1234));
	EXPECT_EQ((void *)0x1234, ep->fid.context);
	/* The domain cannot go while an endpoint lives in it. */
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->s.domain->fid));
	EXPECT_EQ(0, fi_close(&ep->fid));
}

/* A ring of 4096 entries at most, whatever the queue sizes. */
TEST_F(ep, open_with_large_queues)
{
	struct fi_info *info;
	struct fid_ep *ep;

	RETURN_IF_SETUP_SKIPPED();
	info = fi_dupinfo(self->s.info);
	ASSERT_NE(NULL, info);
	info->tx_attr->size = KFAB_SQ_MAX_ENTRIES;
	info->rx_attr->size = KFAB_SQ_MAX_ENTRIES;
	ASSERT_EQ(0, fi_endpoint(self->s.domain, info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->s.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->s.cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(ep));
	EXPECT_EQ(KFAB_SQ_MAX_ENTRIES, tx_left(ep));
	EXPECT_EQ(0, fi_close(&ep->fid));
	info->tx_attr->size = 3;
	info->rx_attr->size = 2;
	ASSERT_EQ(0, fi_endpoint(self->s.domain, info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->s.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->s.cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(ep));
	EXPECT_EQ(8, rx_left(ep));
	EXPECT_EQ(0, fi_close(&ep->fid));
	fi_freeinfo(info);
}

#define EXPECT_OP(tbl, type, op)					\
	EXPECT_NE(NULL, (void *)(tbl)->op) TH_LOG(#type "." #op " is NULL")

TEST_F(ep, ops_tables_fully_populated)
{
	struct fid_ep *ep;
	struct fi_ops *fo;
	struct fi_ops_ep *eo;
	struct fi_ops_cm *cm;
	struct fi_ops_msg *mo;
	struct fi_ops_tagged *to;
	struct fi_ops_rma *ro;
	struct fi_ops_atomic *ao;
	struct fi_ops_collective *co;
	struct fid_ep *alias = NULL;
	char buf[8];
	size_t count;

	RETURN_IF_SETUP_SKIPPED();
	ep = self->s.ep;
	fo = ep->fid.ops;
	EXPECT_EQ(sizeof(struct fi_ops), fo->size);
	EXPECT_OP(fo, fi_ops, close);
	EXPECT_OP(fo, fi_ops, bind);
	EXPECT_OP(fo, fi_ops, control);
	EXPECT_OP(fo, fi_ops, ops_open);
	EXPECT_OP(fo, fi_ops, tostr);
	EXPECT_OP(fo, fi_ops, ops_set);
	eo = ep->ops;
	EXPECT_EQ(sizeof(struct fi_ops_ep), eo->size);
	EXPECT_OP(eo, fi_ops_ep, cancel);
	EXPECT_OP(eo, fi_ops_ep, getopt);
	EXPECT_OP(eo, fi_ops_ep, setopt);
	EXPECT_OP(eo, fi_ops_ep, tx_ctx);
	EXPECT_OP(eo, fi_ops_ep, rx_ctx);
	EXPECT_OP(eo, fi_ops_ep, rx_size_left);
	EXPECT_OP(eo, fi_ops_ep, tx_size_left);
	cm = ep->cm;
	EXPECT_EQ(sizeof(struct fi_ops_cm), cm->size);
	EXPECT_OP(cm, fi_ops_cm, setname);
	EXPECT_OP(cm, fi_ops_cm, getname);
	EXPECT_OP(cm, fi_ops_cm, getpeer);
	EXPECT_OP(cm, fi_ops_cm, connect);
	EXPECT_OP(cm, fi_ops_cm, listen);
	EXPECT_OP(cm, fi_ops_cm, accept);
	EXPECT_OP(cm, fi_ops_cm, reject);
	EXPECT_OP(cm, fi_ops_cm, shutdown);
	EXPECT_OP(cm, fi_ops_cm, join);
	mo = ep->msg;
	EXPECT_EQ(sizeof(struct fi_ops_msg), mo->size);
	EXPECT_OP(mo, fi_ops_msg, recv);
	EXPECT_OP(mo, fi_ops_msg, recvv);
	EXPECT_OP(mo, fi_ops_msg, recvmsg);
	EXPECT_OP(mo, fi_ops_msg, send);
	EXPECT_OP(mo, fi_ops_msg, sendv);
	EXPECT_OP(mo, fi_ops_msg, sendmsg);
	EXPECT_OP(mo, fi_ops_msg, inject);
	EXPECT_OP(mo, fi_ops_msg, senddata);
	EXPECT_OP(mo, fi_ops_msg, injectdata);
	to = ep->tagged;
	EXPECT_EQ(sizeof(struct fi_ops_tagged), to->size);
	EXPECT_OP(to, fi_ops_tagged, recv);
	EXPECT_OP(to, fi_ops_tagged, recvv);
	EXPECT_OP(to, fi_ops_tagged, recvmsg);
	EXPECT_OP(to, fi_ops_tagged, send);
	EXPECT_OP(to, fi_ops_tagged, sendv);
	EXPECT_OP(to, fi_ops_tagged, sendmsg);
	EXPECT_OP(to, fi_ops_tagged, inject);
	EXPECT_OP(to, fi_ops_tagged, senddata);
	EXPECT_OP(to, fi_ops_tagged, injectdata);
	ro = ep->rma;
	EXPECT_EQ(sizeof(struct fi_ops_rma), ro->size);
	EXPECT_OP(ro, fi_ops_rma, read);
	EXPECT_OP(ro, fi_ops_rma, readv);
	EXPECT_OP(ro, fi_ops_rma, readmsg);
	EXPECT_OP(ro, fi_ops_rma, write);
	EXPECT_OP(ro, fi_ops_rma, writev);
	EXPECT_OP(ro, fi_ops_rma, writemsg);
	EXPECT_OP(ro, fi_ops_rma, inject);
	EXPECT_OP(ro, fi_ops_rma, writedata);
	EXPECT_OP(ro, fi_ops_rma, injectdata);
	ao = ep->atomic;
	EXPECT_EQ(sizeof(struct fi_ops_atomic), ao->size);
	EXPECT_OP(ao, fi_ops_atomic, write);
	EXPECT_OP(ao, fi_ops_atomic, writev);
	EXPECT_OP(ao, fi_ops_atomic, writemsg);
	EXPECT_OP(ao, fi_ops_atomic, inject);
	EXPECT_OP(ao, fi_ops_atomic, readwrite);
	EXPECT_OP(ao, fi_ops_atomic, readwritev);
	EXPECT_OP(ao, fi_ops_atomic, readwritemsg);
	EXPECT_OP(ao, fi_ops_atomic, compwrite);
	EXPECT_OP(ao, fi_ops_atomic, compwritev);
	EXPECT_OP(ao, fi_ops_atomic, compwritemsg);
	EXPECT_OP(ao, fi_ops_atomic, writevalid);
	EXPECT_OP(ao, fi_ops_atomic, readwritevalid);
	EXPECT_OP(ao, fi_ops_atomic, compwritevalid);
	co = ep->collective;
	EXPECT_EQ(sizeof(struct fi_ops_collective), co->size);
	EXPECT_OP(co, fi_ops_collective, barrier);
	EXPECT_OP(co, fi_ops_collective, broadcast);
	EXPECT_OP(co, fi_ops_collective, alltoall);
	EXPECT_OP(co, fi_ops_collective, allreduce);
	EXPECT_OP(co, fi_ops_collective, allgather);
	EXPECT_OP(co, fi_ops_collective, reduce_scatter);
	EXPECT_OP(co, fi_ops_collective, reduce);
	EXPECT_OP(co, fi_ops_collective, scatter);
	EXPECT_OP(co, fi_ops_collective, gather);
	EXPECT_OP(co, fi_ops_collective, msg);
	EXPECT_OP(co, fi_ops_collective, barrier2);

	/* What kfab lacks says so. */
	EXPECT_EQ(-FI_ENOSYS, fi_read(ep, buf, 1, NULL, 0, 0, 0, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_write(ep, buf, 1, NULL, 0, 0, 0, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_inject_write(ep, buf, 1, 0, 0, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_atomic(ep, buf, 1, NULL, 0, 0, 0, FI_INT32,
					FI_SUM, NULL));
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomicvalid(ep, FI_INT32, FI_SUM,
						 &count));
	EXPECT_EQ(-FI_ENOSYS, fi_barrier(ep, 0, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_connect(ep, buf, NULL, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_shutdown(ep, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_tx_context(ep, 0, NULL, &alias, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_rx_context(ep, 0, NULL, &alias, NULL));
}

TEST_F(ep, bind_av)
{
	struct fi_av_attr attr = { .type = FI_AV_MAP };
	struct fid_av *av2;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EBADFLAGS, fi_ep_bind(self->s.ep, &self->s.av->fid,
					    FI_RECV));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.av->fid, 0));
	/* One AV per endpoint. */
	ASSERT_EQ(0, fi_av_open(self->s.domain, &attr, &av2, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &av2->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &self->s.av->fid, 0));
	EXPECT_EQ(0, fi_close(&av2->fid));
	/* The AV stays while the endpoint holds it... */
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->s.av->fid));
	/* ...and goes once the endpoint is closed. */
	EXPECT_EQ(0, fi_close(&self->s.ep->fid));
	self->s.ep = NULL;
	EXPECT_EQ(0, fi_close(&self->s.av->fid));
	self->s.av = NULL;
}

TEST_F(ep, bind_cq)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fid_cq *cq2;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EBADFLAGS, fi_ep_bind(self->s.ep, &self->s.cq->fid,
					    FI_TRANSMIT | (1ULL << 61)));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &self->s.cq->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &self->s.cq->fid,
					 FI_SELECTIVE_COMPLETION));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.cq->fid, FI_TRANSMIT));
	/* One CQ per direction. */
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &self->s.cq->fid,
					 FI_TRANSMIT));
	ASSERT_EQ(0, fi_cq_open(self->s.domain, &attr, &cq2, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &cq2->fid,
					 FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &cq2->fid,
				FI_RECV | FI_SELECTIVE_COMPLETION));
	EXPECT_EQ(-FI_EBUSY, fi_close(&cq2->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->s.cq->fid));
	EXPECT_EQ(0, fi_close(&self->s.ep->fid));
	self->s.ep = NULL;
	EXPECT_EQ(0, fi_close(&cq2->fid));
}

TEST_F(ep, bind_cntr)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_cntr_open(self->s.domain, &attr, &cntr, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &cntr->fid, 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_ep_bind(self->s.ep, &cntr->fid,
					    FI_SEND | (1ULL << 61)));
	EXPECT_EQ(-FI_ENOSYS, fi_ep_bind(self->s.ep, &cntr->fid, FI_READ));
	EXPECT_EQ(-FI_ENOSYS, fi_ep_bind(self->s.ep, &cntr->fid, FI_WRITE));
	EXPECT_EQ(-FI_ENOSYS, fi_ep_bind(self->s.ep, &cntr->fid,
					 FI_REMOTE_READ));
	EXPECT_EQ(-FI_ENOSYS, fi_ep_bind(self->s.ep, &cntr->fid,
					 FI_REMOTE_WRITE));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &cntr->fid, FI_SEND));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &cntr->fid, FI_SEND));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &cntr->fid, FI_RECV));
	EXPECT_EQ(-FI_EBUSY, fi_close(&cntr->fid));
	EXPECT_EQ(0, fi_close(&self->s.ep->fid));
	self->s.ep = NULL;
	EXPECT_EQ(0, fi_close(&cntr->fid));
}

TEST_F(ep, bind_wrong_classes)
{
	struct fi_eq_attr eq_attr = { .size = 8 };
	struct fid srx = { .fclass = FI_CLASS_SRX_CTX };	/* not kfab's */
	struct fid stx = { .fclass = FI_CLASS_STX_CTX };
	struct fid_eq *eq, *eq2;
	struct fid_ep *ep2;
	struct fid_mr *mr;
	char buf[8] = "";

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, NULL, 0));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &self->s.domain->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &self->s.fabric->fid, 0));
	ASSERT_EQ(0, fi_endpoint(self->s.domain, self->s.info, &ep2, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &ep2->fid, 0));
	EXPECT_EQ(0, fi_close(&ep2->fid));
	ASSERT_EQ(0, fi_mr_reg(self->s.domain, buf, sizeof(buf), FI_SEND, 0,
			       0, 0, &mr, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &mr->fid, 0));
	EXPECT_EQ(0, fi_close(&mr->fid));
	/* An SRX or STX must be kfab's (kfab_srx, pair.stx_*). */
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &srx, 0));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &stx, 0));
	/* An EQ is kept; one per endpoint; it stays while bound. */
	ASSERT_EQ(0, fi_eq_open(self->s.fabric, &eq_attr, &eq, NULL));
	ASSERT_EQ(0, fi_eq_open(self->s.fabric, &eq_attr, &eq2, NULL));
	EXPECT_EQ(-FI_EBADFLAGS, fi_ep_bind(self->s.ep, &eq->fid, FI_SEND));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &eq->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(self->s.ep, &eq2->fid, 0));
	EXPECT_EQ(-FI_EBUSY, fi_close(&eq->fid));
	EXPECT_EQ(0, fi_close(&self->s.ep->fid));
	self->s.ep = NULL;
	EXPECT_EQ(0, fi_close(&eq->fid));
	EXPECT_EQ(0, fi_close(&eq2->fid));
}

TEST_F(ep, enable_errors)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr;
	char buf[8];

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_ENOAV, fi_enable(self->s.ep));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.av->fid, 0));
	EXPECT_EQ(-FI_ENOCQ, fi_enable(self->s.ep));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.cq->fid, FI_TRANSMIT));
	/* Receives need a CQ or a counter too. */
	EXPECT_EQ(-FI_ENOCQ, fi_enable(self->s.ep));
	/* Data transfers wait for fi_enable(). */
	EXPECT_EQ(-FI_EOPBADSTATE, fi_send(self->s.ep, buf, 1, NULL, 0, NULL));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_trecv(self->s.ep, buf, 1, NULL,
					    FI_ADDR_UNSPEC, 0, 0, NULL));
	EXPECT_EQ(-FI_EOPBADSTATE, tx_left(self->s.ep));
	EXPECT_EQ(-FI_EOPBADSTATE, rx_left(self->s.ep));
	ASSERT_EQ(0, fi_cntr_open(self->s.domain, &attr, &cntr, NULL));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &cntr->fid, FI_RECV));
	/* fi_control(FI_ENABLE) is fi_enable(); enabling twice is harmless. */
	ASSERT_EQ(0, fi_control(&self->s.ep->fid, FI_ENABLE, NULL));
	EXPECT_EQ(0, fi_enable(self->s.ep));
	/* No more binds. */
	EXPECT_EQ(-FI_EOPBADSTATE, fi_ep_bind(self->s.ep, &self->s.cq->fid,
					      FI_RECV));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_ep_bind(self->s.ep, &cntr->fid,
					      FI_SEND));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_ep_bind(self->s.ep, &self->s.av->fid,
					      0));
	EXPECT_EQ(0, fi_close(&self->s.ep->fid));
	self->s.ep = NULL;
	EXPECT_EQ(0, fi_close(&cntr->fid));
}

/* A send-only endpoint needs a transmit CQ, and nothing for receives. */
TEST_F(ep, enable_send_only)
{
	struct fi_info *info;
	struct fid_ep *ep;

	RETURN_IF_SETUP_SKIPPED();
	info = fi_dupinfo(self->s.info);
	ASSERT_NE(NULL, info);
	info->caps = FI_MSG | FI_SEND;
	ASSERT_EQ(0, fi_endpoint(self->s.domain, info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->s.av->fid, 0));
	EXPECT_EQ(-FI_ENOCQ, fi_enable(ep));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->s.cq->fid, FI_TRANSMIT));
	EXPECT_EQ(0, fi_enable(ep));
	EXPECT_EQ(0, fi_close(&ep->fid));
	fi_freeinfo(info);
}

TEST_F(ep, getname)
{
	struct kfab_addr a, b;
	unsigned char small[4];
	struct fid_ep *ep2;
	size_t len;

	RETURN_IF_SETUP_SKIPPED();
	len = 0;
	EXPECT_EQ(-FI_ETOOSMALL, fi_getname(&self->s.ep->fid, NULL, &len));
	EXPECT_EQ(sizeof(struct kfab_addr), len);
	len = sizeof(small);
	EXPECT_EQ(-FI_ETOOSMALL, fi_getname(&self->s.ep->fid, small, &len));
	EXPECT_EQ(sizeof(struct kfab_addr), len);
	len = sizeof(a);
	ASSERT_EQ(0, fi_getname(&self->s.ep->fid, &a, &len));
	EXPECT_EQ(sizeof(a), len);
	/* No listener in this namespace: an endpoint of this machine. */
	EXPECT_EQ(KFAB_ADDR_LOCAL, a.family);
	EXPECT_EQ(0, a.port);
	EXPECT_EQ(0, a.node[0] | a.node[15]);
	/* A number of the module's, with its incarnation */
	EXPECT_LT(KFAB_SERVICE_MAX, be64toh(a.ep));
	EXPECT_NE(0U, a.incarnation);
	/* What fit was copied: the start of the address. */
	EXPECT_EQ(0, memcmp(small, &a, sizeof(small)));
	/* Every endpoint has a name of its own. */
	ASSERT_EQ(0, fi_endpoint(self->s.domain, self->s.info, &ep2, NULL));
	len = sizeof(b);
	ASSERT_EQ(0, fi_getname(&ep2->fid, &b, &len));
	EXPECT_NE(a.ep, b.ep);
	EXPECT_EQ(0, fi_close(&ep2->fid));
	/* RDM endpoints have no peer. */
	len = sizeof(b);
	EXPECT_EQ(-FI_ENOSYS, fi_getpeer(self->s.ep, &b, &len));
}

/*
 * fi_setname(): the kernel names endpoints.  The endpoint's own address
 * (and no address at all) is what it has: 0, before and after enable;
 * another one cannot be assigned: -FI_EADDRNOTAVAIL; what is no kfab
 * address: -FI_EINVAL.
 */
TEST_F(ep, setname)
{
	struct kfab_addr a, b, bad;
	struct fid_ep *ep2;
	size_t len = sizeof(a);

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_getname(&self->s.ep->fid, &a, &len));
	EXPECT_EQ(0, fi_setname(&self->s.ep->fid, &a, sizeof(a)));
	EXPECT_EQ(0, fi_setname(&self->s.ep->fid, NULL, 0));
	ASSERT_EQ(0, fi_endpoint(self->s.domain, self->s.info, &ep2, NULL));
	len = sizeof(b);
	ASSERT_EQ(0, fi_getname(&ep2->fid, &b, &len));
	EXPECT_EQ(-FI_EADDRNOTAVAIL, fi_setname(&self->s.ep->fid, &b,
						sizeof(b)));
	EXPECT_EQ(0, fi_close(&ep2->fid));
	/* Still gone once ep2 is: an address is never reused. */
	EXPECT_EQ(-FI_EADDRNOTAVAIL, fi_setname(&self->s.ep->fid, &b,
						sizeof(b)));
	EXPECT_EQ(-FI_EINVAL, fi_setname(&self->s.ep->fid, &a, sizeof(a) - 1));
	EXPECT_EQ(-FI_EINVAL, fi_setname(&self->s.ep->fid, &a, sizeof(a) + 1));
	EXPECT_EQ(-FI_EINVAL, fi_setname(&self->s.ep->fid, NULL, sizeof(a)));
	bad = a;
	bad.family = KFAB_ADDR_UNSPEC;
	EXPECT_EQ(-FI_EINVAL, fi_setname(&self->s.ep->fid, &bad, sizeof(bad)));
	bad = a;
	bad.node[15] = 1;
	EXPECT_EQ(-FI_EINVAL, fi_setname(&self->s.ep->fid, &bad, sizeof(bad)));
	bad = a;
	bad.ep = 0;
	EXPECT_EQ(-FI_EINVAL, fi_setname(&self->s.ep->fid, &bad, sizeof(bad)));
	bad = a;
	bad.incarnation = 0;
	EXPECT_EQ(-FI_EINVAL, fi_setname(&self->s.ep->fid, &bad, sizeof(bad)));
	/* Another incarnation of the module is another address. */
	bad = a;
	bad.incarnation = ~a.incarnation;
	EXPECT_EQ(-FI_EADDRNOTAVAIL, fi_setname(&self->s.ep->fid, &bad,
						sizeof(bad)));
	/* The name did not change. */
	len = sizeof(b);
	ASSERT_EQ(0, fi_getname(&self->s.ep->fid, &b, &len));
	EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
	/* After enable, the same answers. */
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.cq->fid,
				FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(self->s.ep));
	EXPECT_EQ(0, fi_setname(&self->s.ep->fid, &a, sizeof(a)));
	bad = a;
	bad.ep = htobe64(be64toh(a.ep) + 1);
	EXPECT_EQ(-FI_EADDRNOTAVAIL, fi_setname(&self->s.ep->fid, &bad,
						sizeof(bad)));
}

TEST_F(ep, control_opsflags)
{
	struct kfab_kernel_handle h;
	uint64_t flags;
	int fd;

	RETURN_IF_SETUP_SKIPPED();
	flags = FI_TRANSMIT;
	ASSERT_EQ(0, fi_control(&self->s.ep->fid, FI_GETOPSFLAG, &flags));
	EXPECT_EQ(self->s.info->tx_attr->op_flags, flags);
	flags = FI_TRANSMIT | FI_COMPLETION;
	ASSERT_EQ(0, fi_control(&self->s.ep->fid, FI_SETOPSFLAG, &flags));
	flags = FI_RECV | FI_COMPLETION | FI_MORE;
	ASSERT_EQ(0, fi_control(&self->s.ep->fid, FI_SETOPSFLAG, &flags));
	flags = FI_TRANSMIT;
	ASSERT_EQ(0, fi_control(&self->s.ep->fid, FI_GETOPSFLAG, &flags));
	EXPECT_EQ(FI_COMPLETION, flags);
	flags = FI_RECV;
	ASSERT_EQ(0, fi_control(&self->s.ep->fid, FI_GETOPSFLAG, &flags));
	EXPECT_EQ(FI_COMPLETION | FI_MORE, flags);
	/* One direction at a time. */
	flags = FI_TRANSMIT | FI_RECV;
	EXPECT_EQ(-FI_EINVAL, fi_control(&self->s.ep->fid, FI_GETOPSFLAG,
					 &flags));
	flags = FI_COMPLETION;
	EXPECT_EQ(-FI_EINVAL, fi_control(&self->s.ep->fid, FI_SETOPSFLAG,
					 &flags));
	EXPECT_EQ(-FI_EINVAL, fi_control(&self->s.ep->fid, FI_GETOPSFLAG,
					 NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_control(&self->s.ep->fid, FI_GETWAIT, &fd));
	/* The kernel object behind the endpoint. */
	ASSERT_EQ(0, kfab_kernel_handle(&self->s.ep->fid, &h));
	EXPECT_NE(0U, h.id);
}

TEST_F(ep, getopt_setopt)
{
	size_t val, len;
	int ival = 1;

	RETURN_IF_SETUP_SKIPPED();
	val = 4096;
	ASSERT_EQ(0, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &val, sizeof(val)));
	val = 0;
	len = sizeof(val);
	ASSERT_EQ(0, fi_getopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &val, &len));
	EXPECT_EQ(4096U, val);
	EXPECT_EQ(sizeof(val), len);
	EXPECT_EQ(-FI_EINVAL, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					FI_OPT_MIN_MULTI_RECV, &val, 1));
	len = 1;
	EXPECT_EQ(-FI_EINVAL, fi_getopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					FI_OPT_MIN_MULTI_RECV, &val, &len));
	/* FI_OPT_CM_DATA_SIZE: no connection, no data; read-only */
	len = sizeof(val);
	val = 7;
	ASSERT_EQ(0, fi_getopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_CM_DATA_SIZE, &val, &len));
	EXPECT_EQ(0U, val);
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					    FI_OPT_CM_DATA_SIZE, &val,
					    sizeof(val)));
	/* FI_OPT_BUFFERED_LIMIT/MIN: no buffered receives, so at most 0 */
	val = 9;
	ASSERT_EQ(0, fi_getopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &val, &len));
	EXPECT_EQ(0U, val);
	val = 1;
	EXPECT_EQ(-FI_EMSGSIZE, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					  FI_OPT_BUFFERED_LIMIT, &val,
					  sizeof(val)));
	EXPECT_EQ(-FI_EMSGSIZE, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					  FI_OPT_BUFFERED_MIN, &val,
					  sizeof(val)));
	val = SIZE_MAX;		/* "the maximum supported" */
	EXPECT_EQ(0, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &val, sizeof(val)));
	ASSERT_EQ(0, fi_getopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_LIMIT, &val, &len));
	EXPECT_EQ(0U, val);
	EXPECT_EQ(0, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_BUFFERED_MIN, &val, sizeof(val)));
	EXPECT_EQ(-FI_EINVAL, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					FI_OPT_BUFFERED_MIN, &val, 4));
	/* FI_OPT_FI_HMEM_P2P: host memory only, so never "required" */
	len = sizeof(ival);
	ival = -1;
	ASSERT_EQ(0, fi_getopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_FI_HMEM_P2P, &ival, &len));
	EXPECT_EQ(FI_HMEM_P2P_ENABLED, ival);
	EXPECT_EQ(sizeof(ival), len);
	ival = FI_HMEM_P2P_REQUIRED;
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					    FI_OPT_FI_HMEM_P2P, &ival,
					    sizeof(ival)));
	ival = 99;
	EXPECT_EQ(-FI_EINVAL, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					FI_OPT_FI_HMEM_P2P, &ival,
					sizeof(ival)));
	ival = FI_HMEM_P2P_DISABLED;
	EXPECT_EQ(-FI_EINVAL, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					FI_OPT_FI_HMEM_P2P, &ival,
					sizeof(val)));
	ASSERT_EQ(0, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_FI_HMEM_P2P, &ival, sizeof(ival)));
	ASSERT_EQ(0, fi_getopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_FI_HMEM_P2P, &ival, &len));
	EXPECT_EQ(FI_HMEM_P2P_DISABLED, ival);
	/* FI_OPT_XPU_TRIGGER: no device to trigger from */
	len = sizeof(val);
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_getopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					    FI_OPT_XPU_TRIGGER, &val, &len));
	/* What fi_endpoint(3) does not list, and other levels: not kfab's */
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_getopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					     FI_OPT_SEND_BUF_SIZE, &val, &len));
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_setopt(&self->s.ep->fid, FI_OPT_ENDPOINT,
					     -1, &val, sizeof(val)));
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_getopt(&self->s.ep->fid,
					     FI_OPT_ENDPOINT + 1,
					     FI_OPT_MIN_MULTI_RECV, &val,
					     &len));
	/* The buffered thresholds are set before fi_enable() */
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.cq->fid,
				FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(self->s.ep));
	val = 0;
	EXPECT_EQ(-FI_EOPBADSTATE, fi_setopt(&self->s.ep->fid,
					     FI_OPT_ENDPOINT,
					     FI_OPT_BUFFERED_LIMIT, &val,
					     sizeof(val)));
	/* Nothing the library could cancel. */
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&self->s.ep->fid, &val));
}

TEST_F(ep, memory_registration)
{
	struct fi_mr_attr attr = { 0 };
	struct fid_mr *mr, *mr2;
	struct iovec iov[KFAB_IOV_MAX + 1];
	char buf[256] = "";
	size_t i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_mr_reg(self->s.domain, buf, sizeof(buf),
			       FI_SEND | FI_RECV, 0, 42, 0, &mr, &attr));
	EXPECT_EQ(FI_CLASS_MR, mr->fid.fclass);
	EXPECT_EQ(&attr, mr->fid.context);
	EXPECT_EQ(42ULL, fi_mr_key(mr));
	EXPECT_EQ(mr->mem_desc, fi_mr_desc(mr));
	/* A key in use. */
	EXPECT_EQ(-FI_ENOKEY, fi_mr_reg(self->s.domain, buf, sizeof(buf),
					FI_SEND, 0, 42, 0, &mr2, NULL));
	/* Access flags fi_mr(3) does not list; flags kfab has no use for. */
	EXPECT_EQ(-FI_EINVAL, fi_mr_reg(self->s.domain, buf, sizeof(buf),
					FI_MSG, 0, 43, 0, &mr2, NULL));
	EXPECT_EQ(-FI_EBADFLAGS, fi_mr_reg(self->s.domain, buf, sizeof(buf),
					   FI_SEND, 0, 43, FI_RMA_EVENT,
					   &mr2, NULL));
	for (i = 0; i < KFAB_IOV_MAX + 1; i++) {
		iov[i].iov_base = buf + i * 8;
		iov[i].iov_len = 8;
	}
	EXPECT_EQ(-FI_EINVAL, fi_mr_regv(self->s.domain, iov,
					 KFAB_IOV_MAX + 1, FI_RECV, 0, 43, 0,
					 &mr2, NULL));
	ASSERT_EQ(0, fi_mr_regv(self->s.domain, iov, KFAB_IOV_MAX, FI_RECV,
				0, 43, 0, &mr2, NULL));
	EXPECT_EQ(43ULL, fi_mr_key(mr2));
	EXPECT_EQ(0, fi_close(&mr2->fid));
	attr.mr_iov = iov;
	attr.iov_count = 1;
	attr.access = FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE;
	attr.requested_key = 43;	/* free again */
	ASSERT_EQ(0, fi_mr_regattr(self->s.domain, &attr, 0, &mr2));
	EXPECT_EQ(43ULL, fi_mr_key(mr2));
	/* Device memory is not kfab's. */
	attr.iface = FI_HMEM_CUDA;
	attr.requested_key = 44;
	EXPECT_EQ(-FI_ENOSYS, fi_mr_regattr(self->s.domain, &attr, 0, &mr));
	/* bind: nothing to bind to; refresh and enable: nothing to do. */
	EXPECT_EQ(-FI_ENOSYS, fi_mr_bind(mr2, &self->s.ep->fid, 0));
	EXPECT_EQ(0, fi_mr_refresh(mr2, iov, 1, 0));
	EXPECT_EQ(0, fi_mr_enable(mr2));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->s.domain->fid));
	EXPECT_EQ(0, fi_close(&mr2->fid));
	EXPECT_EQ(0, fi_close(&mr->fid));
}

/* ---- arguments of the data path, on an enabled endpoint ---- */

TEST_F(ep, data_path_argument_checks)
{
	struct iovec iov[KFAB_IOV_MAX + 1];
	struct fi_msg msg = { 0 };
	struct fi_msg_tagged tmsg = { 0 };
	static char big[KFAB_INLINE_MAX + 1];
	size_t i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(self->s.ep, &self->s.cq->fid,
				FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(self->s.ep));
	EXPECT_LT(0, tx_left(self->s.ep));
	EXPECT_EQ(tx_left(self->s.ep), rx_left(self->s.ep));

	for (i = 0; i < KFAB_IOV_MAX + 1; i++) {
		iov[i].iov_base = big;
		iov[i].iov_len = 1;
	}
	EXPECT_EQ(-FI_EINVAL, fi_sendv(self->s.ep, iov, NULL,
				       KFAB_IOV_MAX + 1, 0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_trecvv(self->s.ep, iov, NULL,
					KFAB_IOV_MAX + 1, FI_ADDR_UNSPEC, 0,
					0, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_inject(self->s.ep, big, sizeof(big), 0));
	EXPECT_EQ(-FI_EINVAL, fi_tinjectdata(self->s.ep, big, sizeof(big), 1,
					     0, 7));
	/* Nothing is read: the length alone is refused. */
	EXPECT_EQ(-FI_EMSGSIZE, fi_send(self->s.ep, big, (1ULL << 30) + 1,
					NULL, 0, NULL));
	EXPECT_EQ(-FI_EMSGSIZE, fi_trecv(self->s.ep, big, (1ULL << 30) + 1,
					 NULL, FI_ADDR_UNSPEC, 0, 0, NULL));

	msg.msg_iov = iov;
	msg.iov_count = 1;
	msg.addr = FI_ADDR_UNSPEC;
	/* Multi-receive: one buffer, untagged. */
	msg.iov_count = 2;
	EXPECT_EQ(-FI_EINVAL, fi_recvmsg(self->s.ep, &msg, FI_MULTI_RECV));
	msg.iov_count = 1;
	/* An inline payload cannot wait for its delivery. */
	EXPECT_EQ(-FI_EBADFLAGS, fi_sendmsg(self->s.ep, &msg,
					    FI_DELIVERY_COMPLETE | FI_INJECT));
	tmsg.msg_iov = iov;
	tmsg.iov_count = 1;
	tmsg.addr = FI_ADDR_UNSPEC;
	EXPECT_EQ(-FI_EBADFLAGS, fi_trecvmsg(self->s.ep, &tmsg, FI_MULTI_RECV));
	/* FI_PEEK and friends: tagged only; FI_CLAIM needs a context. */
	EXPECT_EQ(-FI_EBADFLAGS, fi_recvmsg(self->s.ep, &msg, FI_PEEK));
	EXPECT_EQ(-FI_EBADFLAGS, fi_recvmsg(self->s.ep, &msg, FI_CLAIM));
	EXPECT_EQ(-FI_EBADFLAGS, fi_trecvmsg(self->s.ep, &tmsg, FI_DISCARD));
	EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(self->s.ep, &tmsg, FI_CLAIM));
	EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(self->s.ep, &tmsg,
					  FI_PEEK | FI_CLAIM));
	EXPECT_EQ(-FI_EBADFLAGS, fi_trecvmsg(self->s.ep, &tmsg,
					     FI_PEEK | (1ULL << 61)));
	EXPECT_EQ(-FI_EINVAL, fi_sendmsg(self->s.ep, NULL, 0));
	/* Nothing was queued by any of these. */
	EXPECT_EQ(tx_left(self->s.ep), rx_left(self->s.ep));
}

/* ---- the data path: endpoints of one process ---- */

FIXTURE(pair) {
	struct kfab_test_fi a;		/* sender */
	struct kfab_test_fi b;		/* receiver */
	fi_addr_t a_at_b;	/* a's address in b's AV */
	fi_addr_t b_at_a;	/* b's address in a's AV */
};

static int insert_name(struct fid_ep *from, struct fid_av *av,
		       fi_addr_t *fi_addr)
{
	struct kfab_addr addr;
	size_t len = sizeof(addr);
	int rc = fi_getname(&from->fid, &addr, &len);

	if (rc)
		return rc;
	rc = fi_av_insert(av, &addr, 1, fi_addr, 0, NULL);
	return rc == 1 ? 0 : -FI_EINVAL;
}

/*
 * The data path under kfab's own model (FI_THREAD_SAFE) and under
 * FI_THREAD_DOMAIN, where the library takes no lock on it.
 */
FIXTURE_VARIANT(pair) {
	enum fi_threading threading;
};

FIXTURE_VARIANT_ADD(pair, thread_safe) {
	.threading = FI_THREAD_UNSPEC,
};

FIXTURE_VARIANT_ADD(pair, thread_domain) {
	.threading = FI_THREAD_DOMAIN,
};

static struct fi_info *pair_hints(enum fi_threading threading)
{
	struct fi_info *hints = kfab_test_rdm_hints();

	if (hints)
		hints->domain_attr->threading = threading;
	return hints;
}

FIXTURE_SETUP(pair)
{
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_endpoints())
		SKIP(return, "kfab.ko without endpoints (KFAB_IOC_EP_OPEN)");
	ASSERT_EQ(0, _test_fi_side_open(&self->a, pair_hints(variant->threading),
					true));
	ASSERT_EQ(0, _test_fi_side_open(&self->b, pair_hints(variant->threading),
					true));
	EXPECT_EQ(variant->threading ? variant->threading : FI_THREAD_SAFE,
		  self->a.info->domain_attr->threading);
	ASSERT_EQ(0, insert_name(self->b.ep, self->a.av, &self->b_at_a));
	ASSERT_EQ(0, insert_name(self->a.ep, self->b.av, &self->a_at_b));
}

FIXTURE_TEARDOWN(pair)
{
	test_fi_close(&self->a);
	test_fi_close(&self->b);
}

/* b's next completion, with a progressed meanwhile. */
#define WAIT_B(e, src)	\
	kfab_test_wait_cq(self->b.cq, self->a.cq, (e), (src), NULL, TIMEOUT_MS)
#define WAIT_A(e)	\
	kfab_test_wait_cq(self->a.cq, self->b.cq, (e), NULL, NULL, TIMEOUT_MS)

TEST_F(pair, send_recv)
{
	char sbuf[100], rbuf[128];
	struct fi_cq_tagged_entry e;
	fi_addr_t src = 0;
	int rctx, sctx;

	RETURN_IF_SETUP_SKIPPED();
	fill(sbuf, sizeof(sbuf), 1);
	memset(rbuf, 0, sizeof(rbuf));
	ASSERT_EQ(0, fi_recv(self->b.ep, rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, &rctx));
	ASSERT_EQ(0, fi_send(self->a.ep, sbuf, sizeof(sbuf), NULL,
			     self->b_at_a, &sctx));
	ASSERT_EQ(1, WAIT_B(&e, &src));
	EXPECT_EQ(&rctx, e.op_context);
	EXPECT_EQ(sizeof(sbuf), e.len);
	EXPECT_EQ(FI_RECV | FI_MSG, e.flags & (FI_RECV | FI_MSG | FI_TAGGED));
	EXPECT_EQ(self->a_at_b, src);
	EXPECT_TRUE(check_fill(rbuf, sizeof(sbuf), 1));
	ASSERT_EQ(1, WAIT_A(&e));
	EXPECT_EQ(&sctx, e.op_context);
	EXPECT_EQ(FI_SEND | FI_MSG, e.flags & (FI_SEND | FI_MSG | FI_TAGGED));
}

/*
 * fi_msg(3) FI_MULTI_RECV: one buffer takes message after message; the
 * completion that leaves less than FI_OPT_MIN_MULTI_RECV carries
 * FI_MULTI_RECV: the buffer is released.
 */
TEST_F(pair, multi_recv_fills_one_buffer)
{
	struct fi_cq_tagged_entry e;
	char buf[4096], sbuf[1000];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC };
	size_t min = 1500;
	int i, ctx;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_setopt(&self->b.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
	msg.context = &ctx;
	ASSERT_EQ(0, fi_recvmsg(self->b.ep, &msg, FI_MULTI_RECV));
	for (i = 0; i < 3; i++) {
		fill(sbuf, sizeof(sbuf), i);
		ASSERT_EQ(0, fi_send(self->a.ep, sbuf, sizeof(sbuf), NULL,
				     self->b_at_a, NULL));
		ASSERT_EQ(1, WAIT_B(&e, NULL));
		EXPECT_EQ(&ctx, e.op_context);
		EXPECT_EQ(sizeof(sbuf), e.len);
		EXPECT_EQ(buf + i * sizeof(sbuf), (char *)e.buf);
		EXPECT_TRUE(check_fill(buf + i * sizeof(sbuf), sizeof(sbuf), i));
		/* 3096, 2096, then 1096 left: released at the third. */
		EXPECT_EQ(i == 2 ? FI_MULTI_RECV : 0, e.flags & FI_MULTI_RECV);
		ASSERT_EQ(1, WAIT_A(&e));
	}
}

/* FI_DELIVERY_COMPLETE: the send completes when the receive has it. */
TEST_F(pair, delivery_complete_waits_for_the_receiver)
{
	struct fi_cq_tagged_entry e;
	struct iovec iov;
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	char sbuf[64] = "delivered", rbuf[64];
	int sctx;

	RETURN_IF_SETUP_SKIPPED();
	iov.iov_base = sbuf;
	iov.iov_len = sizeof(sbuf);
	msg.addr = self->b_at_a;
	msg.context = &sctx;
	ASSERT_EQ(0, fi_sendmsg(self->a.ep, &msg,
				FI_DELIVERY_COMPLETE | FI_COMPLETION));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->a.cq, &e, 1));
	ASSERT_EQ(0, fi_recv(self->b.ep, rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	ASSERT_EQ(1, WAIT_A(&e));
	EXPECT_EQ(&sctx, e.op_context);
	EXPECT_STREQ("delivered", rbuf);
}

/* fi_endpoint(3): a cancelled receive completes with FI_ECANCELED. */
TEST_F(pair, cancel_a_posted_receive)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	char rbuf[16], sbuf[16] = "late";
	int rctx, other;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_recv(self->b.ep, rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, &rctx));
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&self->b.ep->fid, &other));
	ASSERT_EQ(0, fi_cancel(&self->b.ep->fid, &rctx));
	EXPECT_EQ(-FI_EAVAIL, fi_cq_read(self->b.cq, &e, 1));
	ASSERT_EQ(1, fi_cq_readerr(self->b.cq, &err, 0));
	EXPECT_EQ(&rctx, err.op_context);
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&self->b.ep->fid, &rctx));
	/* A message that comes now waits: the receive is gone. */
	ASSERT_EQ(0, fi_send(self->a.ep, sbuf, sizeof(sbuf), NULL,
			     self->b_at_a, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->b.cq, &e, 1));
}

/* fi_av(3): a source inserted with FI_AV_USER_ID is reported by its id. */
TEST_F(pair, source_reports_av_user_id)
{
	struct kfab_addr addr;
	size_t len = sizeof(addr);
	fi_addr_t id_and_addr = 0xc0ffee, src = 0;
	struct fi_cq_tagged_entry e;
	uint32_t v = 1, r = 0;

	RETURN_IF_SETUP_SKIPPED();
	/* b learns a again, this time under an id (a second index). */
	ASSERT_EQ(0, fi_av_remove(self->b.av, &self->a_at_b, 1, 0));
	ASSERT_EQ(0, fi_getname(&self->a.ep->fid, &addr, &len));
	ASSERT_EQ(1, fi_av_insert(self->b.av, &addr, 1, &id_and_addr,
				  FI_AV_USER_ID, NULL));
	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     NULL));
	ASSERT_EQ(0, fi_send(self->a.ep, &v, sizeof(v), NULL, self->b_at_a,
			     NULL));
	ASSERT_EQ(1, WAIT_B(&e, &src));
	EXPECT_EQ(0xc0ffeeULL, src);
}

/*
 * fi_av(3): a removed fi_addr_t "is invalid until it is returned again by
 * a new fi_av_insert".  kfab: fi_av_lookup() is -FI_EINVAL; a send to it
 * is accepted and completes with an FI_EINVAL error completion (the
 * kernel resolves the address when it carries the send out), and so does
 * a receive directed at it; messages from the removed peer report
 * FI_ADDR_NOTAVAIL.  Inserting the address again gives the same index
 * (the lowest free), and it works again.
 */
TEST_F(pair, removed_address_fails_until_reinserted)
{
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	struct kfab_addr addr;
	size_t len = sizeof(addr);
	fi_addr_t again, src = 0;
	uint32_t v = 7, r = 0;
	int sctx, rctx;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_av_remove(self->a.av, &self->b_at_a, 1, 0));
	EXPECT_EQ(-FI_EINVAL, fi_av_lookup(self->a.av, self->b_at_a, &addr,
					   &len));
	/* A second remove of the same index: nothing to remove. */
	EXPECT_EQ(-FI_EINVAL, fi_av_remove(self->a.av, &self->b_at_a, 1, 0));

	/* A send to it: an error completion, nothing arrives at b. */
	ASSERT_EQ(0, fi_send(self->a.ep, &v, sizeof(v), NULL, self->b_at_a,
			     &sctx));
	ASSERT_EQ(-FI_EAVAIL, kfab_test_wait_cq(self->a.cq, NULL, &e, NULL,
						&err, TIMEOUT_MS));
	EXPECT_EQ(FI_EINVAL, err.err);
	EXPECT_EQ(&sctx, err.op_context);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->b.cq, &e, 1));
	/* fi_inject, fi_tsend: the same */
	ASSERT_EQ(0, fi_tsend(self->a.ep, &v, sizeof(v), NULL, self->b_at_a,
			      1, &sctx));
	ASSERT_EQ(-FI_EAVAIL, kfab_test_wait_cq(self->a.cq, NULL, &e, NULL,
						&err, TIMEOUT_MS));
	EXPECT_EQ(FI_EINVAL, err.err);

	/* b forgets a: a receive directed at it fails, a's messages come
	 * from FI_ADDR_NOTAVAIL. */
	ASSERT_EQ(0, fi_av_remove(self->b.av, &self->a_at_b, 1, 0));
	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, self->a_at_b,
			     &rctx));
	ASSERT_EQ(-FI_EAVAIL, kfab_test_wait_cq(self->b.cq, NULL, &e, NULL,
						&err, TIMEOUT_MS));
	EXPECT_EQ(FI_EINVAL, err.err);
	EXPECT_EQ(&rctx, err.op_context);

	/* a learns b again: the same index, and it works */
	ASSERT_EQ(0, fi_getname(&self->b.ep->fid, &addr, &len));
	ASSERT_EQ(1, fi_av_insert(self->a.av, &addr, 1, &again, 0, NULL));
	EXPECT_EQ(self->b_at_a, again);
	len = sizeof(addr);
	EXPECT_EQ(0, fi_av_lookup(self->a.av, again, &addr, &len));
	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     &rctx));
	ASSERT_EQ(0, fi_send(self->a.ep, &v, sizeof(v), NULL, again, &sctx));
	ASSERT_EQ(1, WAIT_B(&e, &src));
	EXPECT_EQ(7U, r);
	EXPECT_EQ(FI_ADDR_NOTAVAIL, src);
	ASSERT_EQ(1, WAIT_A(&e));
	EXPECT_EQ(&sctx, e.op_context);
}

/* An endpoint of the pair's a side whose sends complete only on request. */
static int open_selective(struct kfab_test_fi *s, fi_addr_t *to_b,
			  struct kfab_test_fi *b)
{
	int rc = _test_fi_side_open(s, kfab_test_rdm_hints(), false);

	if (!rc)
		rc = fi_ep_bind(s->ep, &s->av->fid, 0);
	if (!rc)
		rc = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV |
					FI_SELECTIVE_COMPLETION);
	if (!rc)
		rc = fi_enable(s->ep);
	if (!rc)
		rc = kfab_test_fi_insert_peer(s, b, to_b) == 1 ? 0 :
								  -FI_EINVAL;
	return rc;
}

/*
 * fi_ep_alias(3): the alias "differs from its parent endpoint only by its
 * default data transfer flags".  On an endpoint with selective completion,
 * fi_send() through the endpoint completes silently; through an alias
 * whose transmit flags hold FI_COMPLETION it completes in the CQ.
 */
TEST_F(pair, alias_sends_with_its_own_flags)
{
	struct fi_cq_tagged_entry e;
	struct kfab_test_fi c = { 0 };
	struct fid_ep *alias, *alias2;
	uint32_t v = 1, r = 0;
	uint64_t flags;
	fi_addr_t to_b;
	size_t len;
	char name[64], aname[64];
	int ctx1, ctx2;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, open_selective(&c, &to_b, &self->b));
	/* Exactly one direction */
	EXPECT_EQ(-FI_EINVAL, fi_ep_alias(c.ep, &alias, FI_COMPLETION));
	EXPECT_EQ(-FI_EINVAL, fi_ep_alias(c.ep, &alias,
					  FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_ep_alias(c.ep, &alias, FI_TRANSMIT | FI_COMPLETION));
	EXPECT_EQ(FI_CLASS_EP, alias->fid.fclass);
	flags = FI_TRANSMIT;
	ASSERT_EQ(0, fi_control(&alias->fid, FI_GETOPSFLAG, &flags));
	EXPECT_EQ(FI_COMPLETION, flags);
	flags = FI_TRANSMIT;
	ASSERT_EQ(0, fi_control(&c.ep->fid, FI_GETOPSFLAG, &flags));
	EXPECT_EQ(0U, flags);
	/* Everything else is the endpoint's: its name, for one */
	len = sizeof(name);
	ASSERT_EQ(0, fi_getname(&c.ep->fid, name, &len));
	len = sizeof(aname);
	ASSERT_EQ(0, fi_getname(&alias->fid, aname, &len));
	EXPECT_EQ(0, memcmp(name, aname, len));

	/* Through the endpoint: received, no completion */
	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     NULL));
	ASSERT_EQ(0, fi_send(c.ep, &v, sizeof(v), NULL, to_b, &ctx1));
	ASSERT_EQ(1, kfab_test_wait_cq(self->b.cq, c.cq, &e, NULL, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(c.cq, &e, 1));
	/* Through the alias: received, and completed */
	v = 2;
	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     NULL));
	ASSERT_EQ(0, fi_send(alias, &v, sizeof(v), NULL, to_b, &ctx2));
	ASSERT_EQ(1, kfab_test_wait_cq(self->b.cq, c.cq, &e, NULL, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ(2U, r);
	ASSERT_EQ(1, kfab_test_wait_cq(c.cq, NULL, &e, NULL, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ(&ctx2, e.op_context);

	/* FI_SETOPSFLAG on the alias changes the alias alone */
	flags = FI_TRANSMIT;
	ASSERT_EQ(0, fi_control(&alias->fid, FI_SETOPSFLAG, &flags));
	ASSERT_EQ(0, fi_tsend(alias, &v, sizeof(v), NULL, to_b, 5, &ctx1));
	ASSERT_EQ(0, fi_trecv(self->b.ep, &r, sizeof(r), NULL,
			      FI_ADDR_UNSPEC, 5, 0, NULL));
	ASSERT_EQ(1, kfab_test_wait_cq(self->b.cq, c.cq, &e, NULL, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(c.cq, &e, 1));
	/* An alias of the alias starts from the alias's flags */
	ASSERT_EQ(0, fi_ep_alias(alias, &alias2, FI_RECV | FI_COMPLETION));
	flags = FI_RECV;
	ASSERT_EQ(0, fi_control(&alias2->fid, FI_GETOPSFLAG, &flags));
	EXPECT_EQ(FI_COMPLETION, flags);

	/* fi_endpoint(3): the aliases are closed before the endpoint */
	EXPECT_EQ(-FI_EBUSY, fi_close(&c.ep->fid));
	EXPECT_EQ(0, fi_close(&alias->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&c.ep->fid));
	/* What an alias cannot do: bind */
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(alias2, &c.cq->fid, FI_TRANSMIT));
	EXPECT_EQ(0, fi_close(&alias2->fid));
	EXPECT_EQ(0, _test_fi_close(&c));
}

/* Receives through an alias take its receive flags; cancel works too. */
TEST_F(pair, alias_receives_and_cancels)
{
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	struct fid_ep *alias;
	uint32_t v = 3, r = 0;
	int rctx;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_ep_alias(self->b.ep, &alias, FI_RECV | FI_COMPLETION));
	ASSERT_EQ(0, fi_recv(alias, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     &rctx));
	EXPECT_EQ(0, fi_cancel(&alias->fid, &rctx));
	ASSERT_EQ(-FI_EAVAIL, kfab_test_wait_cq(self->b.cq, NULL, &e, NULL,
						&err, TIMEOUT_MS));
	EXPECT_EQ(FI_ECANCELED, err.err);
	ASSERT_EQ(0, fi_recv(alias, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     &rctx));
	ASSERT_EQ(0, fi_send(self->a.ep, &v, sizeof(v), NULL, self->b_at_a,
			     NULL));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_EQ(&rctx, e.op_context);
	EXPECT_EQ(3U, r);
	EXPECT_EQ(0, fi_close(&alias->fid));
}

/* An endpoint of @domain that transmits through @stx, to b. */
static int open_stx_ep(struct fid_domain *domain, struct fi_info *info,
		       struct fid_av *av, struct fid_cq *cq,
		       struct fid_stx *stx, struct fid_ep **ep)
{
	int rc = fi_endpoint(domain, info, ep, NULL);

	if (!rc)
		rc = fi_ep_bind(*ep, &av->fid, 0);
	if (!rc)
		rc = fi_ep_bind(*ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_ep_bind(*ep, &stx->fid, 0);
	if (!rc)
		rc = fi_enable(*ep);
	return rc;
}

/*
 * fi_endpoint(3) "Shared contexts": endpoints opened with tx_ctx_cnt
 * FI_SHARED_CONTEXT need an STX bound before fi_enable(), post their
 * sends to themselves, and complete them on their own CQs.
 */
TEST_F(pair, stx_serves_the_endpoints_bound_to_it)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_ep *e1 = NULL, *e2 = NULL, *plain;
	struct fid_cq *cq1, *cq2;
	struct fi_cq_tagged_entry e;
	struct fid_domain *d2;
	struct fid_stx *stx, *stx2;
	struct kfab_test_fi c = { 0 };
	struct fi_tx_attr bad;
	struct fi_info *hints;
	fi_addr_t to_b;
	uint32_t v, r = 0;
	int ctx1, ctx2, n;

	RETURN_IF_SETUP_SKIPPED();
	hints = kfab_test_rdm_hints();
	ASSERT_NE(NULL, hints);
	hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	ASSERT_EQ(0, _test_fi_domain_open(&c, hints));
	EXPECT_EQ(FI_SHARED_CONTEXT, c.info->ep_attr->tx_ctx_cnt);
	EXPECT_EQ(1U, c.info->domain_attr->max_ep_stx_ctx);

	EXPECT_EQ(-FI_EINVAL, fi_stx_context(c.domain, c.info->tx_attr, NULL,
					     NULL));
	bad = *c.info->tx_attr;
	bad.inject_size = 1 << 20;
	EXPECT_EQ(-FI_ENODATA, fi_stx_context(c.domain, &bad, &stx, NULL));
	ASSERT_EQ(0, fi_stx_context(c.domain, c.info->tx_attr, &stx, &n));
	EXPECT_EQ(FI_CLASS_STX_CTX, stx->fid.fclass);
	EXPECT_EQ(&n, stx->fid.context);
	ASSERT_EQ(0, fi_av_open(c.domain, &av_attr, &c.av, NULL));
	ASSERT_EQ(0, fi_cq_open(c.domain, &cq_attr, &cq1, NULL));
	ASSERT_EQ(0, fi_cq_open(c.domain, &cq_attr, &cq2, NULL));
	ASSERT_EQ(0, kfab_test_fi_insert_peer(&c, &self->b, &to_b) == 1 ? 0 :
		     -1);

	/* Without its STX an endpoint cannot be enabled */
	ASSERT_EQ(0, fi_endpoint(c.domain, c.info, &e1, NULL));
	ASSERT_EQ(0, fi_ep_bind(e1, &c.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(e1, &cq1->fid, FI_TRANSMIT | FI_RECV));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_enable(e1));
	EXPECT_EQ(-FI_EBADFLAGS, fi_ep_bind(e1, &stx->fid, FI_TRANSMIT));
	/* One of another domain: -FI_EDOMAIN */
	ASSERT_EQ(0, fi_domain(c.fabric, c.info, &d2, NULL));
	ASSERT_EQ(0, fi_stx_context(d2, NULL, &stx2, NULL));
	EXPECT_EQ(-FI_EDOMAIN, fi_ep_bind(e1, &stx2->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(e1, &stx->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(e1, &stx->fid, 0));	/* one */
	ASSERT_EQ(0, fi_enable(e1));
	ASSERT_EQ(0, open_stx_ep(c.domain, c.info, c.av, cq2, stx, &e2));
	/* An endpoint that does not share its transmit context binds none */
	c.info->ep_attr->tx_ctx_cnt = 1;
	ASSERT_EQ(0, fi_endpoint(c.domain, c.info, &plain, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(plain, &stx->fid, 0));
	EXPECT_EQ(0, fi_close(&plain->fid));
	c.info->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;

	/* Both send to b; each completes on its own CQ */
	v = 1;
	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     NULL));
	ASSERT_EQ(0, fi_send(e1, &v, sizeof(v), NULL, to_b, &ctx1));
	ASSERT_EQ(1, kfab_test_wait_cq(self->b.cq, cq1, &e, NULL, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ(1U, r);
	v = 2;
	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     NULL));
	ASSERT_EQ(0, fi_send(e2, &v, sizeof(v), NULL, to_b, &ctx2));
	ASSERT_EQ(1, kfab_test_wait_cq(self->b.cq, cq2, &e, NULL, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ(2U, r);
	ASSERT_EQ(1, kfab_test_wait_cq(cq1, NULL, &e, NULL, NULL, TIMEOUT_MS));
	EXPECT_EQ(&ctx1, e.op_context);
	ASSERT_EQ(1, kfab_test_wait_cq(cq2, NULL, &e, NULL, NULL, TIMEOUT_MS));
	EXPECT_EQ(&ctx2, e.op_context);

	/* The STX outlives its endpoints; nothing binds to it */
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind((struct fid_ep *)stx, &cq1->fid, 0));
	EXPECT_EQ(-FI_EBUSY, fi_close(&stx->fid));
	EXPECT_EQ(0, fi_close(&e1->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&stx->fid));
	EXPECT_EQ(0, fi_close(&e2->fid));
	EXPECT_EQ(0, fi_close(&stx->fid));
	EXPECT_EQ(0, fi_close(&stx2->fid));
	EXPECT_EQ(0, fi_close(&d2->fid));
	EXPECT_EQ(0, fi_close(&cq1->fid));
	EXPECT_EQ(0, fi_close(&cq2->fid));
	EXPECT_EQ(0, _test_fi_close(&c));
}

TEST_F(pair, tagged_send_recv)
{
	char sbuf[64], rbuf[64];
	struct fi_cq_tagged_entry e;
	fi_addr_t src = 0;
	int rctx, sctx;

	RETURN_IF_SETUP_SKIPPED();
	fill(sbuf, sizeof(sbuf), 2);
	ASSERT_EQ(0, fi_trecv(self->b.ep, rbuf, sizeof(rbuf), NULL,
			      FI_ADDR_UNSPEC, 0x1234, 0, &rctx));
	ASSERT_EQ(0, fi_tsend(self->a.ep, sbuf, sizeof(sbuf), NULL,
			      self->b_at_a, 0x1234, &sctx));
	ASSERT_EQ(1, WAIT_B(&e, &src));
	EXPECT_EQ(&rctx, e.op_context);
	EXPECT_EQ(0x1234ULL, e.tag);
	EXPECT_EQ(sizeof(sbuf), e.len);
	EXPECT_EQ(FI_RECV | FI_TAGGED, e.flags & (FI_RECV | FI_TAGGED | FI_MSG));
	EXPECT_EQ(self->a_at_b, src);
	EXPECT_TRUE(check_fill(rbuf, sizeof(rbuf), 2));
	ASSERT_EQ(1, WAIT_A(&e));
	EXPECT_EQ(&sctx, e.op_context);
	EXPECT_EQ(FI_SEND | FI_TAGGED, e.flags & (FI_SEND | FI_TAGGED | FI_MSG));
}

TEST_F(pair, inject_has_no_completion)
{
	char sbuf[KFAB_INLINE_MAX], rbuf[KFAB_INLINE_MAX];
	struct fi_cq_tagged_entry e;
	int rctx;

	RETURN_IF_SETUP_SKIPPED();
	fill(sbuf, sizeof(sbuf), 3);
	ASSERT_EQ(0, fi_recv(self->b.ep, rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, &rctx));
	ASSERT_EQ(0, fi_inject(self->a.ep, sbuf, sizeof(sbuf), self->b_at_a));
	/* The buffer is the caller's again at once. */
	memset(sbuf, 0, sizeof(sbuf));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_EQ(&rctx, e.op_context);
	EXPECT_TRUE(check_fill(rbuf, sizeof(rbuf), 3));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->a.cq, &e, 1));

	/* Tagged, with data. */
	fill(sbuf, 10, 4);
	ASSERT_EQ(0, fi_trecv(self->b.ep, rbuf, sizeof(rbuf), NULL,
			      FI_ADDR_UNSPEC, 9, 0, &rctx));
	ASSERT_EQ(0, fi_tinjectdata(self->a.ep, sbuf, 10, 0xdada,
				    self->b_at_a, 9));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_EQ(10U, e.len);
	EXPECT_EQ(0xdadaULL, e.data);
	EXPECT_TRUE(e.flags & FI_REMOTE_CQ_DATA);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->a.cq, &e, 1));
}

TEST_F(pair, senddata_remote_cq_data)
{
	char sbuf[32], rbuf[32];
	struct fi_cq_tagged_entry e;
	struct iovec iov = { .iov_base = sbuf, .iov_len = sizeof(sbuf) };
	struct fi_msg msg = {
		.msg_iov = &iov, .iov_count = 1, .data = 0xfeedULL,
	};

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_recv(self->b.ep, rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	ASSERT_EQ(0, fi_senddata(self->a.ep, sbuf, sizeof(sbuf), NULL,
				 0xbeefULL, self->b_at_a, NULL));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_TRUE(e.flags & FI_REMOTE_CQ_DATA);
	EXPECT_EQ(0xbeefULL, e.data);
	/* fi_sendmsg with FI_REMOTE_CQ_DATA */
	msg.addr = self->b_at_a;
	ASSERT_EQ(0, fi_recv(self->b.ep, rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	ASSERT_EQ(0, fi_sendmsg(self->a.ep, &msg, FI_REMOTE_CQ_DATA));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_TRUE(e.flags & FI_REMOTE_CQ_DATA);
	EXPECT_EQ(0xfeedULL, e.data);
	/* A plain send carries none. */
	ASSERT_EQ(0, fi_recv(self->b.ep, rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	ASSERT_EQ(0, fi_send(self->a.ep, sbuf, sizeof(sbuf), NULL,
			     self->b_at_a, NULL));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_FALSE(e.flags & FI_REMOTE_CQ_DATA);
}

TEST_F(pair, iov_four_buffers)
{
	char src[1000], dst[1000];
	struct iovec siov[4], riov[4];
	struct fi_cq_tagged_entry e;
	static const size_t scut[4] = { 1, 99, 400, 500 };
	static const size_t rcut[4] = { 500, 250, 249, 1 };
	size_t i, so = 0, ro = 0;

	RETURN_IF_SETUP_SKIPPED();
	fill(src, sizeof(src), 5);
	memset(dst, 0, sizeof(dst));
	for (i = 0; i < 4; i++) {
		siov[i].iov_base = src + so;
		siov[i].iov_len = scut[i];
		so += scut[i];
		riov[i].iov_base = dst + ro;
		riov[i].iov_len = rcut[i];
		ro += rcut[i];
	}
	ASSERT_EQ(0, fi_trecvv(self->b.ep, riov, NULL, 4, FI_ADDR_UNSPEC, 1,
			       0, NULL));
	ASSERT_EQ(0, fi_tsendv(self->a.ep, siov, NULL, 4, self->b_at_a, 1,
			       NULL));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_EQ(sizeof(src), e.len);
	EXPECT_TRUE(check_fill(dst, sizeof(dst), 5));
}

TEST_F(pair, more_batches_until_the_last)
{
	uint32_t sbuf[4], rbuf[4];
	struct iovec iov[4];
	struct fi_msg msg[4];
	struct fi_cq_tagged_entry e;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < 4; i++) {
		sbuf[i] = 100 + i;
		ASSERT_EQ(0, fi_recv(self->b.ep, &rbuf[i], sizeof(rbuf[i]),
				     NULL, FI_ADDR_UNSPEC, &rbuf[i]));
		iov[i].iov_base = &sbuf[i];
		iov[i].iov_len = sizeof(sbuf[i]);
		msg[i] = (struct fi_msg){
			.msg_iov = &iov[i], .iov_count = 1,
			.addr = self->b_at_a, .context = &sbuf[i],
		};
	}
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, fi_sendmsg(self->a.ep, &msg[i], FI_MORE));
	/* Nothing is delivered, however much both sides progress. */
	EXPECT_EQ(-FI_EAGAIN, kfab_test_wait_cq(self->b.cq, self->a.cq, &e,
						NULL, NULL, 200));
	ASSERT_EQ(0, fi_sendmsg(self->a.ep, &msg[3], 0));
	/* Then everything, in order. */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(1, WAIT_B(&e, NULL));
		EXPECT_EQ(&rbuf[i], e.op_context);
		EXPECT_EQ(100U + i, rbuf[i]);
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(1, WAIT_A(&e));
		EXPECT_EQ(&sbuf[i], e.op_context);
	}
}

/*
 * A send of at most 64 bytes (KFAB_INLINE_MAX) travels in its ring entry,
 * as an inject does: what the buffer held when the call returned is what
 * arrives, although the kernel carries the send out later (FI_MORE).  A
 * larger one is read from the buffer when the kernel carries it out.  A
 * small send from a NULL buffer still fails in the kernel, FI_EFAULT.
 */
TEST_F(pair, small_sends_carry_their_payload_in_the_entry)
{
	char small[64], large[65], rsmall[64], rlarge[65];
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	struct iovec iov[2] = {
		{ .iov_base = small, .iov_len = sizeof(small) },
		{ .iov_base = large, .iov_len = sizeof(large) },
	};
	struct fi_msg msg[2];
	int i;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_recv(self->b.ep, rsmall, sizeof(rsmall), NULL,
			     FI_ADDR_UNSPEC, rsmall));
	ASSERT_EQ(0, fi_recv(self->b.ep, rlarge, sizeof(rlarge), NULL,
			     FI_ADDR_UNSPEC, rlarge));
	for (i = 0; i < 2; i++)
		msg[i] = (struct fi_msg){
			.msg_iov = &iov[i], .iov_count = 1,
			.addr = self->b_at_a, .context = iov[i].iov_base,
		};
	fill(small, sizeof(small), 1);
	fill(large, sizeof(large), 2);
	ASSERT_EQ(0, fi_sendmsg(self->a.ep, &msg[0], FI_MORE));
	ASSERT_EQ(0, fi_sendmsg(self->a.ep, &msg[1], FI_MORE));
	/* Not sent yet: the application breaks the rule, on purpose. */
	fill(small, sizeof(small), 3);
	fill(large, sizeof(large), 4);
	ASSERT_EQ(0, fi_inject(self->a.ep, "x", 1, self->b_at_a));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_EQ((void *)rsmall, e.op_context);
	EXPECT_TRUE(check_fill(rsmall, sizeof(rsmall), 1));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_EQ((void *)rlarge, e.op_context);
	EXPECT_TRUE(check_fill(rlarge, sizeof(rlarge), 4));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(1, WAIT_A(&e));
		EXPECT_EQ(iov[i].iov_base, e.op_context);
	}

	/* The inject found no receive: it waits, unexpected; take it. */
	ASSERT_EQ(0, fi_recv(self->b.ep, rsmall, sizeof(rsmall), NULL,
			     FI_ADDR_UNSPEC, NULL));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_EQ(1U, e.len);

	ASSERT_EQ(0, fi_send(self->a.ep, NULL, 8, NULL, self->b_at_a, small));
	ASSERT_EQ(-FI_EAVAIL, kfab_test_wait_cq(self->a.cq, self->b.cq, &e,
						NULL, &err, TIMEOUT_MS));
	EXPECT_EQ(FI_EFAULT, err.err);
	EXPECT_EQ((void *)small, err.op_context);
}

TEST_F(pair, unexpected_message)
{
	char sbuf[300], rbuf[300];
	struct fi_cq_tagged_entry e;
	fi_addr_t src = 0;

	RETURN_IF_SETUP_SKIPPED();
	fill(sbuf, sizeof(sbuf), 6);
	ASSERT_EQ(0, fi_tsend(self->a.ep, sbuf, sizeof(sbuf), NULL,
			      self->b_at_a, 77, sbuf));
	/* The send completes although no receive is posted yet. */
	ASSERT_EQ(1, WAIT_A(&e));
	EXPECT_EQ((void *)sbuf, e.op_context);
	memset(sbuf, 0, sizeof(sbuf));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->b.cq, &e, 1));
	ASSERT_EQ(0, fi_trecv(self->b.ep, rbuf, sizeof(rbuf), NULL,
			      FI_ADDR_UNSPEC, 77, 0, rbuf));
	ASSERT_EQ(1, WAIT_B(&e, &src));
	EXPECT_EQ((void *)rbuf, e.op_context);
	EXPECT_EQ(77ULL, e.tag);
	EXPECT_EQ(self->a_at_b, src);
	EXPECT_TRUE(check_fill(rbuf, sizeof(rbuf), 6));
}

TEST_F(pair, directed_receive)
{
	struct kfab_test_fi c = { 0 };
	fi_addr_t c_at_b, b_at_c;
	uint32_t from_a = 0xa, from_c = 0xc, r_for_c = 0, r_any = 0;
	struct fi_cq_tagged_entry e;
	fi_addr_t src;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, _test_fi_side_open(&c, kfab_test_rdm_hints(), true));
	ASSERT_EQ(0, insert_name(c.ep, self->b.av, &c_at_b));
	ASSERT_EQ(0, insert_name(self->b.ep, c.av, &b_at_c));
	/* b waits for c first, then for anyone. */
	ASSERT_EQ(0, fi_recv(self->b.ep, &r_for_c, sizeof(r_for_c),
			     NULL, c_at_b, &r_for_c));
	ASSERT_EQ(0, fi_recv(self->b.ep, &r_any, sizeof(r_any), NULL,
			     FI_ADDR_UNSPEC, &r_any));
	/* a's message passes over the receive meant for c. */
	ASSERT_EQ(0, fi_send(self->a.ep, &from_a, sizeof(from_a), NULL,
			     self->b_at_a, NULL));
	ASSERT_EQ(1, WAIT_B(&e, &src));
	EXPECT_EQ(&r_any, e.op_context);
	EXPECT_EQ(0xaU, r_any);
	EXPECT_EQ(self->a_at_b, src);
	ASSERT_EQ(0, fi_send(c.ep, &from_c, sizeof(from_c), NULL,
			     b_at_c, NULL));
	ASSERT_EQ(1, kfab_test_wait_cq(self->b.cq, c.cq, &e, &src, NULL,
				       TIMEOUT_MS));
	EXPECT_EQ(&r_for_c, e.op_context);
	EXPECT_EQ(0xcU, r_for_c);
	EXPECT_EQ(c_at_b, src);
	/* a's send completion, then c's. */
	ASSERT_EQ(1, WAIT_A(&e));
	ASSERT_EQ(1, kfab_test_wait_cq(c.cq, NULL, &e, NULL, NULL, TIMEOUT_MS));
	test_fi_close(&c);
}

TEST_F(pair, tag_and_ignore_matching)
{
	uint32_t v1 = 1, v2 = 2, r1 = 0, r2 = 0;
	struct fi_cq_tagged_entry e;

	RETURN_IF_SETUP_SKIPPED();
	/* Any tag 0xab00-0xabff. */
	ASSERT_EQ(0, fi_trecv(self->b.ep, &r1, sizeof(r1), NULL,
			      FI_ADDR_UNSPEC, 0xab00, 0xff, &r1));
	/* 0xac00 does not match it and waits, unexpected. */
	ASSERT_EQ(0, fi_tsend(self->a.ep, &v2, sizeof(v2), NULL, self->b_at_a,
			      0xac00, NULL));
	ASSERT_EQ(0, fi_tsend(self->a.ep, &v1, sizeof(v1), NULL, self->b_at_a,
			      0xab42, NULL));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_EQ(&r1, e.op_context);
	EXPECT_EQ(0xab42ULL, e.tag);
	EXPECT_EQ(1U, r1);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->b.cq, &e, 1));
	ASSERT_EQ(0, fi_trecv(self->b.ep, &r2, sizeof(r2), NULL,
			      FI_ADDR_UNSPEC, 0xac00, 0, &r2));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_EQ(&r2, e.op_context);
	EXPECT_EQ(2U, r2);
	/* Untagged receives never match tagged sends, nor the reverse. */
	ASSERT_EQ(0, fi_recv(self->b.ep, &r1, sizeof(r1), NULL,
			     FI_ADDR_UNSPEC, &r1));
	ASSERT_EQ(0, fi_tsend(self->a.ep, &v1, sizeof(v1), NULL, self->b_at_a,
			      0, NULL));
	EXPECT_EQ(-FI_EAGAIN, kfab_test_wait_cq(self->b.cq, self->a.cq, &e,
						NULL, NULL, 200));
	ASSERT_EQ(0, fi_send(self->a.ep, &v2, sizeof(v2), NULL, self->b_at_a,
			     NULL));
	ASSERT_EQ(1, WAIT_B(&e, NULL));
	EXPECT_EQ(&r1, e.op_context);
	EXPECT_EQ(FI_MSG, e.flags & (FI_MSG | FI_TAGGED));
}

TEST_F(pair, message_order)
{
	enum { N = 100 };
	uint32_t sbuf[N], rbuf[N];
	struct fi_cq_tagged_entry e;
	int i;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < N; i++) {
		sbuf[i] = i;
		rbuf[i] = ~0U;
		/* Every receive matches every send: order decides. */
		ASSERT_EQ(0, fi_recv(self->b.ep, &rbuf[i], sizeof(rbuf[i]),
				     NULL, FI_ADDR_UNSPEC, &rbuf[i]));
	}
	for (i = 0; i < N; i++) {
		ssize_t rc;

		while ((rc = fi_send(self->a.ep, &sbuf[i], sizeof(sbuf[i]),
				     NULL, self->b_at_a, NULL)) == -FI_EAGAIN)
			(void)fi_cq_read(self->a.cq, NULL, 0);
		ASSERT_EQ(0, rc);
	}
	for (i = 0; i < N; i++) {
		ASSERT_EQ(1, WAIT_B(&e, NULL));
		EXPECT_EQ(&rbuf[i], e.op_context);
		EXPECT_EQ((uint32_t)i, rbuf[i]);
	}
}

TEST_F(pair, sizes)
{
	static const size_t sizes[] = {
		0, 1, 64, 4096, 65536, 1 << 20, 16 << 20,
	};
	struct fi_cq_tagged_entry e;
	char *sbuf, *rbuf;
	size_t i;

	RETURN_IF_SETUP_SKIPPED();
	sbuf = malloc(16 << 20);
	rbuf = malloc((16 << 20) + 1);
	ASSERT_NE(NULL, sbuf);
	ASSERT_NE(NULL, rbuf);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fill(sbuf, sizes[i], (unsigned int)i);
		memset(rbuf, 0x5a, sizes[i] + 1);
		ASSERT_EQ(0, fi_trecv(self->b.ep, rbuf, sizes[i] + 1, NULL,
				      FI_ADDR_UNSPEC, i, 0, rbuf));
		ASSERT_EQ(0, fi_tsend(self->a.ep, sbuf, sizes[i], NULL,
				      self->b_at_a, i, sbuf));
		ASSERT_EQ(1, WAIT_B(&e, NULL)) TH_LOG("size %zu", sizes[i]);
		EXPECT_EQ(sizes[i], e.len);
		EXPECT_TRUE(check_fill(rbuf, sizes[i], (unsigned int)i))
			TH_LOG("size %zu: data differ", sizes[i]);
		/* Not one byte beyond the message. */
		EXPECT_EQ(0x5a, (unsigned char)rbuf[sizes[i]]);
		ASSERT_EQ(1, WAIT_A(&e));
		EXPECT_EQ((void *)sbuf, e.op_context);
	}
	free(sbuf);
	free(rbuf);
}

/* ---- the data path: two processes ---- */

/*
 * One side of a ping-pong between processes: names through pipes, then
 * @rounds rounds of every size, tagged and not; 0 when all went well.
 */
static int ping_pong(bool first, int rfd, int wfd)
{
	static const size_t sizes[] = { 0, 1, 64, 4096, 65536, 1 << 20 };
	struct kfab_test_fi s = { 0 };
	struct kfab_addr mine, peer;
	struct fi_cq_tagged_entry e;
	fi_addr_t peer_addr, src;
	size_t len = sizeof(mine), i;
	char *buf;
	int rc = 1;

	buf = malloc(1 << 20);
	if (!buf || _test_fi_side_open(&s, kfab_test_rdm_hints(), true))
		goto out;
	if (fi_getname(&s.ep->fid, &mine, &len) ||
	    kfab_write_all(wfd, &mine, sizeof(mine)) ||
	    kfab_read_all(rfd, &peer, sizeof(peer)))
		goto out;
	if (fi_av_insert(s.av, &peer, 1, &peer_addr, 0, NULL) != 1)
		goto out;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		bool tagged = i & 1;

		if (first) {
			fill(buf, sizes[i], (unsigned int)i);
			if (tagged ? fi_tsend(s.ep, buf, sizes[i], NULL,
					      peer_addr, i, NULL) :
				     fi_send(s.ep, buf, sizes[i], NULL,
					     peer_addr, NULL))
				goto out;
			if (kfab_test_wait_cq(s.cq, NULL, &e, NULL, NULL,
					      TIMEOUT_MS) != 1)
				goto out;
		}
		memset(buf, 0, sizes[i]);
		if (tagged ? fi_trecv(s.ep, buf, sizes[i], NULL, peer_addr,
				      i, 0, buf) :
			     fi_recv(s.ep, buf, sizes[i], NULL, peer_addr, buf))
			goto out;
		if (kfab_test_wait_cq(s.cq, NULL, &e, &src, NULL,
				      TIMEOUT_MS) != 1 ||
		    e.op_context != buf || e.len != sizes[i] ||
		    src != peer_addr || (tagged && e.tag != i) ||
		    !check_fill(buf, sizes[i], (unsigned int)i))
			goto out;
		if (!first) {
			/* Send it back as it came. */
			if (tagged ? fi_tsend(s.ep, buf, sizes[i], NULL,
					      peer_addr, i, NULL) :
				     fi_send(s.ep, buf, sizes[i], NULL,
					     peer_addr, NULL))
				goto out;
			if (kfab_test_wait_cq(s.cq, NULL, &e, NULL, NULL,
					      TIMEOUT_MS) != 1)
				goto out;
		}
	}
	rc = 0;
	/* Neither side closes before the other is done with it. */
	if (kfab_write_all(wfd, &rc, sizeof(rc)) ||
	    kfab_read_all(rfd, &rc, sizeof(rc)))
		rc = 1;
out:
	if (s.ep)
		fi_close(&s.ep->fid);
	if (s.cq)
		fi_close(&s.cq->fid);
	if (s.av)
		fi_close(&s.av->fid);
	if (s.domain)
		fi_close(&s.domain->fid);
	if (s.fabric)
		fi_close(&s.fabric->fid);
	if (s.info)
		fi_freeinfo(s.info);
	free(buf);
	return rc;
}

/* ---- lazy doorbells (FI_KFAB_LAZY_DOORBELL, libshim/ring.c) ---- */

/*
 * A receive longer than KFAB_CQ_PAYLOAD_MAX: the sender's doorbell writes
 * it in place, so its buffer shows when the kernel had the send.
 */
struct big_recv {
	uint32_t v;
	char pad[124];
};

/*
 * Two enabled sides of this process, a sending to b, with the provider
 * loaded under FI_KFAB_LAZY_DOORBELL=@lazy (read once, when libfabric
 * loads kfab: each test is a process of its own).
 */
static int lazy_pair_open(const char *lazy, struct kfab_test_fi *a,
			  struct kfab_test_fi *b, fi_addr_t *b_at_a)
{
	int rc;

	if (setenv("FI_PROVIDER", "kfab", 1) ||
	    setenv("FI_KFAB_LAZY_DOORBELL", lazy, 1))
		return -FI_EOTHER;
	rc = _test_fi_side_open(a, kfab_test_rdm_hints(), true);
	if (!rc)
		rc = _test_fi_side_open(b, kfab_test_rdm_hints(), true);
	if (!rc)
		rc = insert_name(b->ep, a->av, b_at_a);
	return rc;
}

/*
 * Requests without FI_MORE wait in the ring for the next progress call of
 * the process, which rings once for all of them (a sweeper period of 1 s
 * keeps the sweeper out of it): b's buffers are untouched until then.
 */
TEST(lazy_requests_go_at_the_next_progress_call)
{
	struct kfab_test_fi a = { 0 }, b = { 0 };
	struct fi_cq_tagged_entry e[8];
	struct big_recv r[8];
	fi_addr_t b_at_a;
	uint32_t v[8];
	int i, sctx[8];

	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, lazy_pair_open("1000000", &a, &b, &b_at_a));
	memset(r, 0xff, sizeof(r));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, fi_recv(b.ep, &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(b.cq, e, 8));
	/* Sends with completions: a's CQ is where their program looks. */
	for (i = 0; i < 8; i++) {
		v[i] = i;
		ASSERT_EQ(0, fi_send(a.ep, &v[i], sizeof(v[i]), NULL, b_at_a,
				     &sctx[i]));
	}
	/* Not in the kernel yet: nothing wrote b's buffers. */
	usleep(20000);
	EXPECT_EQ(0xffffffffU, r[0].v);
	EXPECT_EQ(0xffffffffU, r[7].v);
	/* Any progress call rings every due ring of the process. */
	ASSERT_EQ(8, fi_cq_read(b.cq, e, 8));
	for (i = 0; i < 8; i++)
		EXPECT_EQ((uint32_t)i, r[i].v);
	ASSERT_EQ(8, fi_cq_read(a.cq, e, 8));
	for (i = 0; i < 8; i++)
		EXPECT_EQ(&sctx[i], e[i].op_context);
	EXPECT_EQ(0, _test_fi_close(&a));
	EXPECT_EQ(0, _test_fi_close(&b));
}

/*
 * A read that finds completions waiting returns them without the full
 * progress pass (libshim's fast path), yet still rings what the process
 * posted lazily: the request is in the kernel when the read returns.
 */
TEST(a_read_that_finds_completions_still_rings_lazy_requests)
{
	struct kfab_test_fi a = { 0 }, b = { 0 };
	struct fi_cq_tagged_entry e[2];
	struct big_recv r[2];
	uint32_t v[2] = { 7, 8 };
	fi_addr_t b_at_a;
	int sctx[2];

	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, lazy_pair_open("1000000", &a, &b, &b_at_a));
	memset(r, 0xff, sizeof(r));
	ASSERT_EQ(0, fi_recv(b.ep, &r[0], sizeof(r[0]), NULL, FI_ADDR_UNSPEC,
			     NULL));
	ASSERT_EQ(0, fi_recv(b.ep, &r[1], sizeof(r[1]), NULL, FI_ADDR_UNSPEC,
			     NULL));
	ASSERT_EQ(0, fi_send(a.ep, &v[0], sizeof(v[0]), NULL, b_at_a,
			     &sctx[0]));
	/* b's read rings a's ring: one receive done, a's completion waits. */
	ASSERT_EQ(1, fi_cq_read(b.cq, e, 2));
	EXPECT_EQ(7U, r[0].v);
	ASSERT_EQ(0, fi_send(a.ep, &v[1], sizeof(v[1]), NULL, b_at_a,
			     &sctx[1]));
	usleep(20000);
	EXPECT_EQ(0xffffffffU, r[1].v);
	/* An entry waits: the fast path, which rings all the same. */
	ASSERT_EQ(1, fi_cq_read(a.cq, e, 1));
	EXPECT_EQ(&sctx[0], e[0].op_context);
	EXPECT_EQ(8U, r[1].v);
	ASSERT_EQ(1, fi_cq_read(a.cq, e, 1));
	EXPECT_EQ(&sctx[1], e[0].op_context);
	ASSERT_EQ(1, fi_cq_read(b.cq, e, 2));
	EXPECT_EQ(0, _test_fi_close(&a));
	EXPECT_EQ(0, _test_fi_close(&b));
}

/*
 * A sender that posts and then waits outside libfabric (here: on a pipe,
 * as fi_pingpong does on its control socket) is rung by the sweeper; after
 * an idle spell the sweeper parks, and the next request wakes it.
 */
TEST(a_sender_that_never_calls_is_rung_by_the_sweeper)
{
	struct kfab_test_fi b = { 0 };
	struct fi_cq_tagged_entry e;
	int to_child[2], from_child[2];
	struct kfab_addr name;
	size_t len = sizeof(name);
	uint32_t r[2] = { 0, 0 };
	int i, status, got;
	char c = 0;
	pid_t pid;

	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(from_child));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct kfab_test_fi a = { 0 };
		fi_addr_t dst;
		uint32_t v;

		close(to_child[1]);
		close(from_child[0]);
		if (read(to_child[0], &name, sizeof(name)) != sizeof(name) ||
		    setenv("FI_PROVIDER", "kfab", 1) ||
		    setenv("FI_KFAB_LAZY_DOORBELL", "1000", 1) ||
		    _test_fi_side_open(&a, kfab_test_rdm_hints(), true) ||
		    fi_av_insert(a.av, &name, 1, &dst, 0, NULL) != 1)
			_exit(2);
		for (i = 0; i < 2; i++) {
			v = 100 + i;
			/* With a completion: an inject would ring at once. */
			if (fi_send(a.ep, &v, sizeof(v), NULL, dst, &c))
				_exit(3);
			/* Outside libfabric: only the sweeper can ring. */
			if (write(from_child[1], "s", 1) != 1 ||
			    read(to_child[0], &c, 1) != 1)
				_exit(4);
		}
		_exit(_test_fi_close(&a) ? 5 : 0);
	}
	close(to_child[0]);
	close(from_child[1]);
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	ASSERT_EQ(0, _test_fi_side_open(&b, kfab_test_rdm_hints(), true));
	ASSERT_EQ(0, fi_getname(&b.ep->fid, &name, &len));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, fi_recv(b.ep, &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(b.cq, &e, 1));
	ASSERT_EQ(sizeof(name), write(to_child[1], &name, sizeof(name)));
	for (i = 0; i < 2; i++) {
		/* The child posted and now blocks on the pipe. */
		ASSERT_EQ(1, read(from_child[0], &c, 1));
		got = (int)kfab_test_wait_cq(b.cq, NULL, &e, NULL, NULL,
					     TIMEOUT_MS);
		ASSERT_EQ(1, got);
		EXPECT_EQ(100U + i, r[i]);
		/* Long enough for the sweeper to park (64 idle periods). */
		if (!i)
			usleep(300000);
		ASSERT_EQ(1, write(to_child[1], "g", 1));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, _test_fi_close(&b));
}

/* fi_close() of an endpoint rings first: what it posted still goes. */
TEST_F(pair, closing_an_endpoint_sends_what_waits_in_its_ring)
{
	struct fi_cq_tagged_entry e;
	uint32_t r = 0, v = 42;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->b.cq, &e, 1));
	ASSERT_EQ(0, fi_send(self->a.ep, &v, sizeof(v), NULL, self->b_at_a,
			     &e));
	EXPECT_EQ(0, fi_close(&self->a.ep->fid));
	self->a.ep = NULL;
	ASSERT_EQ(1, fi_cq_read(self->b.cq, &e, 1));
	EXPECT_EQ(42U, r);
}

/*
 * A full ring rings at once: an endpoint with a small ring sends until
 * the ring fills, and the first sends arrive without any read of its CQ.
 */
TEST_F(pair, a_full_lazy_ring_rings_without_a_read)
{
	struct kfab_test_fi c = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_info *hints;
	struct big_recv r[64];
	fi_addr_t b_at_c;
	uint32_t v[64];
	int i, sent;

	RETURN_IF_SETUP_SKIPPED();
	hints = kfab_test_rdm_hints();
	ASSERT_NE(NULL, hints);
	hints->tx_attr->size = 8;
	hints->rx_attr->size = 8;
	ASSERT_EQ(0, _test_fi_side_open(&c, hints, true));
	ASSERT_EQ(0, insert_name(self->b.ep, c.av, &b_at_c));
	memset(r, 0, sizeof(r));
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, fi_recv(self->b.ep, &r[i], sizeof(r[i]), NULL,
				     FI_ADDR_UNSPEC, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->b.cq, &e, 1));
	for (sent = 0; sent < 64 && !r[0].v; sent++) {
		v[sent] = (uint32_t)sent + 1;
		ASSERT_EQ(0, fi_send(c.ep, &v[sent], sizeof(v[sent]), NULL,
				     b_at_c, NULL));
	}
	/* The ring filled (16 slots or so) and rang, unread. */
	EXPECT_EQ(1U, r[0].v);
	EXPECT_LT(sent, 64);
	for (i = 0; i < sent; i++) {
		ASSERT_EQ(1, kfab_test_wait_cq(self->b.cq, c.cq, &e, NULL,
					       NULL, TIMEOUT_MS));
		ASSERT_EQ(1, kfab_test_wait_cq(c.cq, self->b.cq, &e, NULL,
					       NULL, TIMEOUT_MS));
	}
	for (i = 0; i < sent; i++)
		EXPECT_EQ((uint32_t)i + 1, r[i].v);
	EXPECT_EQ(0, _test_fi_close(&c));
}

/*
 * FI_KFAB_LAZY_DOORBELL=0 (read when the provider loads: each test is a
 * process of its own): every request rings at once, so b sees a's send
 * without a's CQ ever being read.
 */
TEST(eager_doorbell_rings_at_every_request)
{
	struct kfab_test_fi a = { 0 }, b = { 0 };
	struct fi_cq_tagged_entry e;
	struct big_recv r = { 0 };
	fi_addr_t b_at_a;
	uint32_t v = 7;

	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, lazy_pair_open("0", &a, &b, &b_at_a));
	ASSERT_EQ(0, fi_recv(b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC, NULL));
	ASSERT_EQ(0, fi_send(a.ep, &v, sizeof(v), NULL, b_at_a, &e));
	/* In b's buffer before any further call. */
	EXPECT_EQ(7U, r.v);
	ASSERT_EQ(1, fi_cq_read(b.cq, &e, 1));
	ASSERT_EQ(1, fi_cq_read(a.cq, &e, 1));
	EXPECT_EQ(0, _test_fi_close(&a));
	EXPECT_EQ(0, _test_fi_close(&b));
}

/*
 * A send that reports no completion (an inject) gives its program no
 * reason to call again, so it rings at once even on a lazy ring (a 1 s
 * sweeper stays out of it), and what waited in the ring goes first.
 */
TEST(a_send_without_completion_rings_at_once)
{
	struct kfab_test_fi a = { 0 }, b = { 0 };
	struct fi_cq_tagged_entry e[2];
	struct big_recv r[2];
	uint32_t v[2] = { 1, 2 };
	fi_addr_t b_at_a;
	int sctx;

	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, lazy_pair_open("1000000", &a, &b, &b_at_a));
	memset(r, 0, sizeof(r));
	ASSERT_EQ(0, fi_recv(b.ep, &r[0], sizeof(r[0]), NULL, FI_ADDR_UNSPEC,
			     NULL));
	ASSERT_EQ(0, fi_recv(b.ep, &r[1], sizeof(r[1]), NULL, FI_ADDR_UNSPEC,
			     NULL));
	/* b's receives went with the progress call of a's CQ read. */
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(a.cq, e, 2));
	ASSERT_EQ(0, fi_send(a.ep, &v[0], sizeof(v[0]), NULL, b_at_a, &sctx));
	usleep(20000);
	EXPECT_EQ(0U, r[0].v);
	ASSERT_EQ(0, fi_inject(a.ep, &v[1], sizeof(v[1]), b_at_a));
	/* Both in b's buffers before any further call, in order. */
	EXPECT_EQ(1U, r[0].v);
	EXPECT_EQ(2U, r[1].v);
	ASSERT_EQ(2, fi_cq_read(b.cq, e, 2));
	ASSERT_EQ(1, fi_cq_read(a.cq, e, 2));
	EXPECT_EQ(&sctx, e[0].op_context);
	EXPECT_EQ(0, _test_fi_close(&a));
	EXPECT_EQ(0, _test_fi_close(&b));
}

TEST(two_processes_ping_pong)
{
	int to_child[2], to_parent[2], status;
	pid_t pid;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_endpoints())
		SKIP(return, "kfab.ko without endpoints (KFAB_IOC_EP_OPEN)");
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(to_parent));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(to_child[1]);
		close(to_parent[0]);
		_exit(ping_pong(false, to_child[0], to_parent[1]));
	}
	close(to_child[0]);
	close(to_parent[1]);
	EXPECT_EQ(0, ping_pong(true, to_parent[0], to_child[1]));
	close(to_parent[0]);
	close(to_child[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * Four processes flood one receiver with sequence-numbered messages of
 * assorted sizes: every message arrives exactly once, intact, and in
 * order per sender (FI_ORDER_SAS).  The receiver keeps 64 receives posted.
 */
#define FLOOD_SENDERS	4
#define FLOOD_MSGS	1500
#define FLOOD_POSTED	64
#define FLOOD_MAX	(96 * 1024)

struct flood_hdr {
	uint32_t sender;
	uint32_t seq;
	uint32_t len;
	uint32_t sum;
};

static uint32_t flood_sum(const unsigned char *p, size_t len)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i < len; i++)
		sum = sum * 31 + p[i];
	return sum;
}

static int flood_sender(uint32_t id, const struct kfab_addr *to, int done_fd)
{
	struct kfab_test_fi s = { 0 };
	unsigned char *buf = malloc(FLOOD_MAX);
	struct fi_cq_tagged_entry e;
	fi_addr_t dest;
	uint32_t seq, completed = 0, rnd = id * 7919 + 1;
	int rc;

	if (!buf || _test_fi_side_open(&s, kfab_test_rdm_hints(), true) ||
	    fi_av_insert(s.av, to, 1, &dest, 0, NULL) != 1)
		return 1;
	for (seq = 0; seq < FLOOD_MSGS; seq++) {
		struct flood_hdr *h = (struct flood_hdr *)buf;
		size_t len, i;

		rnd = rnd * 1103515245 + 12345;
		/* Mostly small, some beyond the eager size (64 KiB). */
		len = sizeof(*h) + (rnd >> 8) % (rnd % 16 ? 2048 : FLOOD_MAX -
							   sizeof(*h));
		for (i = sizeof(*h); i < len; i++)
			buf[i] = (unsigned char)(seq * 13 + i + id);
		h->sender = id;
		h->seq = seq;
		h->len = len;
		h->sum = flood_sum(buf + sizeof(*h), len - sizeof(*h));
		do {
			rc = fi_send(s.ep, buf, len, NULL, dest, NULL);
			if (rc == -FI_EAGAIN)
				fi_cq_read(s.cq, &e, 1) > 0 ? completed++ : 0;
		} while (rc == -FI_EAGAIN);
		if (rc)
			return 2;
		/* The buffer is reused: wait for this send to complete. */
		while (completed <= seq) {
			rc = fi_cq_read(s.cq, &e, 1);
			if (rc == 1)
				completed++;
			else if (rc != -FI_EAGAIN)
				return 3;
		}
	}
	rc = 0;
	if (kfab_write_all(done_fd, &rc, sizeof(rc)))
		return 4;
	/* Stay until the receiver has everything (a pipe closes on exit). */
	pause();
	return 0;
}

TEST_F_TIMEOUT(pair, four_processes_flood_one_receiver, 600)
{
	static unsigned char bufs[FLOOD_POSTED][FLOOD_MAX];
	uint32_t next[FLOOD_SENDERS] = { 0 }, got = 0;
	struct fi_cq_tagged_entry e;
	pid_t pids[FLOOD_SENDERS];
	struct kfab_addr me;
	size_t len = sizeof(me);
	int done[2], i, rc;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_getname(&self->b.ep->fid, &me, &len));
	for (i = 0; i < FLOOD_POSTED; i++)
		ASSERT_EQ(0, fi_recv(self->b.ep, bufs[i], FLOOD_MAX, NULL,
				     FI_ADDR_UNSPEC, bufs[i]));
	ASSERT_EQ(0, pipe(done));
	for (i = 0; i < FLOOD_SENDERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			_exit(flood_sender(i, &me, done[1]));
	}
	while (got < FLOOD_SENDERS * FLOOD_MSGS) {
		struct flood_hdr *h;
		unsigned char *b;

		rc = fi_cq_sread(self->b.cq, &e, 1, NULL, 10000);
		ASSERT_EQ(1, rc) TH_LOG("after %u messages", got);
		b = e.op_context;
		h = (struct flood_hdr *)b;
		ASSERT_LT(h->sender, FLOOD_SENDERS);
		/* Exactly once and in order per sender. */
		ASSERT_EQ(next[h->sender], h->seq);
		ASSERT_EQ(h->len, e.len);
		ASSERT_EQ(h->sum, flood_sum(b + sizeof(*h), h->len - sizeof(*h)));
		next[h->sender]++;
		got++;
		ASSERT_EQ(0, fi_recv(self->b.ep, b, FLOOD_MAX, NULL,
				     FI_ADDR_UNSPEC, b));
	}
	for (i = 0; i < FLOOD_SENDERS; i++) {
		int status;

		ASSERT_EQ(0, kfab_read_all(done[0], &rc, sizeof(rc)));
		kill(pids[i], SIGKILL);
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
	}
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->b.cq, &e, 1));
}

TEST_HARNESS_MAIN
