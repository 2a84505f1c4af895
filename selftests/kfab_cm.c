// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Connected endpoints (FI_EP_MSG) and passive endpoints, through
 * libfabric's API: fi_cm(3), fi_eq(3)'s connection events and error
 * entries, and fi_msg(3)/fi_tagged(3) over a connection.  Each test names
 * the behaviour it checks; the hostile orderings (a pep that closes with a
 * request pending, accepting twice, shutting down during a transfer, a
 * stale handle) are tests of their own.
 *
 * Both sides live in this process, each with its own fabric, domain and
 * EQ, as two processes would have them.  Every test SKIPs without
 * /dev/kfab.  Runs inside the test VM with FI_PROVIDER_PATH naming
 * libshim/prov.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

#define TIMEOUT_MS	10000
#define CM_DATA_MAX	256	/* what kfab answers for FI_OPT_CM_DATA_SIZE */

/* One side: a fabric, an EQ, a domain, a CQ and a MSG endpoint. */
struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_eq *eq;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static struct fi_info *msg_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_TAGGED;
	return hints;
}

static int msg_info(struct fi_info **info)
{
	struct fi_info *hints = msg_hints();
	int rc;

	if (!hints)
		return -FI_ENOMEM;
	rc = fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	return rc;
}

/* Fabric and an EQ with @wait_obj; @info is kept (freed with the side). */
static int side_fabric_wait(struct side *s, struct fi_info *info,
			    enum fi_wait_obj wait_obj)
{
	struct fi_eq_attr eq_attr = { .wait_obj = wait_obj };
	int rc;

	s->info = info;
	rc = fi_fabric(info->fabric_attr, &s->fabric, NULL);
	if (!rc)
		rc = fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL);
	return rc;
}

static int side_fabric(struct side *s, struct fi_info *info)
{
	return side_fabric_wait(s, info, FI_WAIT_UNSPEC);
}

/* Domain, CQ and endpoint for @info, bound and enabled. */
static int side_ep(struct side *s, struct fi_info *info)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	int rc;

	rc = fi_domain(s->fabric, info, &s->domain, NULL);
	if (!rc)
		rc = fi_cq_open(s->domain, &cq_attr, &s->cq, NULL);
	if (!rc)
		rc = fi_endpoint(s->domain, info, &s->ep, NULL);
	if (!rc)
		rc = fi_ep_bind(s->ep, &s->eq->fid, 0);
	if (!rc)
		rc = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_enable(s->ep);
	return rc;
}

static int side_close(struct side *s)
{
	int rc = 0;

	if (s->ep)
		rc |= fi_close(&s->ep->fid);
	if (s->cq)
		rc |= fi_close(&s->cq->fid);
	if (s->domain)
		rc |= fi_close(&s->domain->fid);
	if (s->eq)
		rc |= fi_close(&s->eq->fid);
	if (s->fabric)
		rc |= fi_close(&s->fabric->fid);
	if (s->info)
		fi_freeinfo(s->info);
	memset(s, 0, sizeof(*s));
	return rc;
}

/* An event (fi_eq_sread): its number, or a negative code. */
static ssize_t wait_event(struct fid_eq *eq, uint32_t *event,
			  struct fi_eq_cm_entry *entry, size_t len)
{
	return fi_eq_sread(eq, event, entry, len, TIMEOUT_MS, 0);
}

/* An error entry: fi_eq_sread answers -FI_EAVAIL, then readerr. */
static int wait_error(struct fid_eq *eq, struct fi_eq_err_entry *err)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;
	ssize_t rc;

	rc = wait_event(eq, &event, &entry, sizeof(entry));
	if (rc != -FI_EAVAIL)
		return rc < 0 ? (int)rc : -FI_EOTHER;
	memset(err, 0, sizeof(*err));
	return fi_eq_readerr(eq, err, 0) == sizeof(*err) ? 0 : -FI_EOTHER;
}

static ssize_t wait_cq(struct fid_cq *cq, struct fid_cq *other,
		       struct fi_cq_err_entry *err)
{
	struct fi_cq_tagged_entry e;

	return kfab_test_wait_cq(cq, other, &e, NULL, err, TIMEOUT_MS);
}

FIXTURE(cm) {
	struct fi_info *pep_info;
	struct fid_fabric *fabric;	/* the listener's */
	struct fid_eq *eq;
	struct fid_pep *pep;
	char name[128];
	size_t namelen;
	struct side srv, cli;
};

FIXTURE_SETUP(cm)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_info *info;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_endpoints())
		SKIP(return, "kfab.ko without endpoints (KFAB_IOC_EP_OPEN)");
	ASSERT_EQ(0, msg_info(&self->pep_info));
	ASSERT_EQ(0, fi_fabric(self->pep_info->fabric_attr, &self->fabric,
			       NULL));
	ASSERT_EQ(0, fi_eq_open(self->fabric, &eq_attr, &self->eq, NULL));
	ASSERT_EQ(0, fi_passive_ep(self->fabric, self->pep_info, &self->pep,
				   NULL));
	self->namelen = sizeof(self->name);
	ASSERT_EQ(0, fi_getname(&self->pep->fid, self->name,
				&self->namelen));
	ASSERT_EQ(0, msg_info(&info));
	ASSERT_EQ(0, side_fabric(&self->cli, info));
	ASSERT_EQ(0, side_ep(&self->cli, info));
}

FIXTURE_TEARDOWN(cm)
{
	EXPECT_EQ(0, side_close(&self->cli));
	EXPECT_EQ(0, side_close(&self->srv));
	if (self->pep)
		EXPECT_EQ(0, fi_close(&self->pep->fid));
	if (self->eq)
		EXPECT_EQ(0, fi_close(&self->eq->fid));
	if (self->fabric)
		EXPECT_EQ(0, fi_close(&self->fabric->fid));
	fi_freeinfo(self->pep_info);
}

/* The pep listens; the client connects with @data; the CONNREQ's info. */
static void listen_and_connect(struct __test_metadata *_metadata,
			       FIXTURE_DATA(cm) *self, const char *data,
			       struct fi_info **req)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX];
	struct fi_eq_cm_entry *entry = (void *)buf;
	size_t len = data ? strlen(data) + 1 : 0;
	uint32_t event = 0;

	ASSERT_EQ(0, fi_pep_bind(self->pep, &self->eq->fid, 0));
	ASSERT_EQ(0, fi_listen(self->pep));
	ASSERT_EQ(0, fi_connect(self->cli.ep, self->name, data, len));
	ASSERT_EQ(sizeof(*entry) + len,
		  wait_event(self->eq, &event, entry, sizeof(buf)));
	ASSERT_EQ(FI_CONNREQ, event);
	EXPECT_EQ(&self->pep->fid, entry->fid);
	ASSERT_NE(NULL, entry->info);
	EXPECT_EQ(FI_EP_MSG, entry->info->ep_attr->type);
	EXPECT_NE(NULL, entry->info->handle);
	EXPECT_NE(NULL, entry->info->dest_addr);
	if (len)
		EXPECT_EQ(0, memcmp(entry->data, data, len));
	*req = entry->info;
}

/* Server side: endpoint from the request, accept; both see FI_CONNECTED. */
static void accept_it(struct __test_metadata *_metadata,
		      FIXTURE_DATA(cm) *self, struct fi_info *req,
		      const char *data)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX];
	struct fi_eq_cm_entry *entry = (void *)buf;
	size_t len = data ? strlen(data) + 1 : 0;
	uint32_t event = 0;

	ASSERT_EQ(0, side_fabric(&self->srv, req));
	ASSERT_EQ(0, side_ep(&self->srv, req));
	ASSERT_EQ(0, fi_accept(self->srv.ep, data, len));
	ASSERT_EQ(sizeof(*entry), wait_event(self->srv.eq, &event, entry,
					     sizeof(buf)));
	EXPECT_EQ(FI_CONNECTED, event);
	EXPECT_EQ(&self->srv.ep->fid, entry->fid);
	ASSERT_EQ(sizeof(*entry) + len,
		  wait_event(self->cli.eq, &event, entry, sizeof(buf)));
	EXPECT_EQ(FI_CONNECTED, event);
	EXPECT_EQ(&self->cli.ep->fid, entry->fid);
	if (len)
		EXPECT_EQ(0, memcmp(entry->data, data, len));
}

static void connect_pair(struct __test_metadata *_metadata,
			 FIXTURE_DATA(cm) *self)
{
	struct fi_info *req = NULL;

	listen_and_connect(_metadata, self, "hello", &req);
	accept_it(_metadata, self, req, "welcome");
}

TEST(getinfo_offers_msg_endpoints)
{
	struct fi_info *hints, *info, *fi;
	bool rdm = false, msg = false;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, msg_info(&info));
	EXPECT_EQ(FI_EP_MSG, info->ep_attr->type);
	EXPECT_EQ(0, info->caps & (FI_DIRECTED_RECV | FI_SOURCE |
				   FI_NAMED_RX_CTX));
	/* No scalable connected endpoints. */
	EXPECT_EQ(1U, info->domain_attr->max_ep_rx_ctx);
	EXPECT_EQ(1U, info->ep_attr->tx_ctx_cnt);
	EXPECT_EQ(0, info->rx_attr->caps & FI_DIRECTED_RECV);
	fi_freeinfo(info);

	/* No type named: RDM first, then MSG. */
	hints = fi_allocinfo();
	ASSERT_NE(NULL, hints);
	ASSERT_EQ(0, fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, hints,
				&info));
	EXPECT_EQ(FI_EP_RDM, info->ep_attr->type);
	for (fi = info; fi; fi = fi->next) {
		rdm |= fi->ep_attr->type == FI_EP_RDM;
		msg |= fi->ep_attr->type == FI_EP_MSG;
	}
	EXPECT_TRUE(rdm && msg);
	fi_freeinfo(info);

	/* A connection has one peer: no directed receives, no sources. */
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_DIRECTED_RECV;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL,
					  0, hints, &info));
	hints->caps = FI_MSG;
	hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL,
					  0, hints, &info));
	fi_freeinfo(hints);
}

TEST_F(cm, pep_binds_listens_and_names)
{
	struct fid_pep *pep;
	size_t len, size;
	char small[4];

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(FI_CLASS_PEP, self->pep->fid.fclass);
	EXPECT_EQ(sizeof(struct kfab_addr), self->namelen);
	len = sizeof(small);
	EXPECT_EQ(-FI_ETOOSMALL, fi_getname(&self->pep->fid, small, &len));
	EXPECT_EQ(self->namelen, len);
	EXPECT_EQ(0, fi_setname(&self->pep->fid, self->name, self->namelen));

	EXPECT_EQ(-FI_ENOEQ, fi_listen(self->pep));
	EXPECT_EQ(-FI_EINVAL, fi_pep_bind(self->pep, &self->cli.cq->fid, 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_pep_bind(self->pep, &self->eq->fid, 1));
	ASSERT_EQ(0, fi_pep_bind(self->pep, &self->eq->fid, 0));
	EXPECT_EQ(-FI_EINVAL, fi_pep_bind(self->pep, &self->eq->fid, 0));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->eq->fid));
	ASSERT_EQ(0, fi_listen(self->pep));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_listen(self->pep));

	len = sizeof(size);
	EXPECT_EQ(0, fi_getopt(&self->pep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_CM_DATA_SIZE, &size, &len));
	EXPECT_EQ(CM_DATA_MAX, size);
	/* Read-only (fi_endpoint(3)) */
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_setopt(&self->pep->fid, FI_OPT_ENDPOINT,
					    FI_OPT_CM_DATA_SIZE, &size,
					    sizeof(size)));
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_setopt(&self->cli.ep->fid,
					    FI_OPT_ENDPOINT,
					    FI_OPT_CM_DATA_SIZE, &size,
					    sizeof(size)));
	len = sizeof(size);
	EXPECT_EQ(0, fi_getopt(&self->cli.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_CM_DATA_SIZE, &size, &len));
	EXPECT_EQ(CM_DATA_MAX, size);

	/* Another type is no passive endpoint. */
	self->pep_info->ep_attr->type = FI_EP_RDM;
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_passive_ep(self->fabric, self->pep_info,
						 &pep, NULL));
	self->pep_info->ep_attr->type = FI_EP_MSG;
	EXPECT_EQ(-FI_EINVAL, fi_passive_ep(self->fabric, NULL, &pep, NULL));
}

TEST_F(cm, msg_endpoint_refuses_what_a_connection_cannot_do)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	char big[CM_DATA_MAX + 1] = { 0 }, buf[8];
	struct fid_ep *ep;
	struct fid_av *av;
	size_t len = sizeof(buf);

	RETURN_IF_SETUP_SKIPPED();
	/* Its AV is its own. */
	ASSERT_EQ(0, fi_endpoint(self->cli.domain, self->cli.info, &ep, NULL));
	ASSERT_EQ(0, fi_av_open(self->cli.domain, &av_attr, &av, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(ep, &av->fid, 0));
	EXPECT_EQ(0, fi_ep_bind(ep, &self->cli.cq->fid, FI_TRANSMIT | FI_RECV));
	/* fi_endpoint(3): no EQ bound */
	EXPECT_EQ(-FI_ENOEQ, fi_enable(ep));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_connect(ep, self->name, NULL, 0));
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&av->fid));

	/* Not connected: no sends, no peer, nothing to shut down. */
	EXPECT_EQ(-FI_ENOTCONN, fi_send(self->cli.ep, buf, 1, NULL, 0, NULL));
	EXPECT_EQ(-FI_ENOTCONN, fi_tsend(self->cli.ep, buf, 1, NULL, 0, 1,
					 NULL));
	EXPECT_EQ(-FI_ENOTCONN, fi_getpeer(self->cli.ep, buf, &len));
	EXPECT_EQ(-FI_ENOTCONN, fi_shutdown(self->cli.ep, 0));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_accept(self->cli.ep, NULL, 0));
	EXPECT_EQ(-FI_EINVAL, fi_connect(self->cli.ep, self->name, big,
					 sizeof(big)));
	EXPECT_EQ(-FI_EINVAL, fi_connect(self->cli.ep, NULL, NULL, 0));
	EXPECT_EQ(-FI_EINVAL, fi_connect(self->cli.ep, self->name, NULL, 1));
	/* Receives may be posted before the connection exists. */
	EXPECT_EQ(0, fi_recv(self->cli.ep, buf, sizeof(buf), NULL, 0, NULL));
}

TEST_F(cm, connect_accept_carry_data_and_messages)
{
	struct fi_cq_err_entry err;
	char a[64], b[64], peer[64];
	size_t len = sizeof(peer), name_len = sizeof(peer);
	char name[64];
	uint32_t event;
	struct fi_eq_cm_entry entry;

	RETURN_IF_SETUP_SKIPPED();
	connect_pair(_metadata, self);

	/* fi_getpeer: each side names the other's endpoint. */
	ASSERT_EQ(0, fi_getpeer(self->cli.ep, peer, &len));
	ASSERT_EQ(0, fi_getname(&self->srv.ep->fid, name, &name_len));
	EXPECT_EQ(name_len, len);
	EXPECT_EQ(0, memcmp(peer, name, len));
	len = 4;
	EXPECT_EQ(-FI_ETOOSMALL, fi_getpeer(self->srv.ep, peer, &len));
	EXPECT_EQ(sizeof(struct kfab_addr), len);
	/* Accepting twice */
	EXPECT_EQ(-FI_EOPBADSTATE, fi_accept(self->srv.ep, NULL, 0));
	EXPECT_EQ(-FI_EOPBADSTATE, fi_connect(self->cli.ep, self->name, NULL,
					      0));

	/* Messages both ways; the address argument is ignored. */
	strcpy(a, "ping");
	ASSERT_EQ(0, fi_recv(self->srv.ep, b, sizeof(b), NULL, 0, NULL));
	ASSERT_EQ(0, fi_send(self->cli.ep, a, 5, NULL, 12345, NULL));
	ASSERT_EQ(1, wait_cq(self->cli.cq, self->srv.cq, &err));
	ASSERT_EQ(1, wait_cq(self->srv.cq, self->cli.cq, &err));
	EXPECT_STREQ("ping", b);
	/* Tagged */
	strcpy(a, "tagged");
	ASSERT_EQ(0, fi_trecv(self->cli.ep, b, sizeof(b), NULL, 0, 7, 0,
			      NULL));
	ASSERT_EQ(0, fi_tsend(self->srv.ep, a, 7, NULL, 0, 7, NULL));
	ASSERT_EQ(1, wait_cq(self->srv.cq, self->cli.cq, &err));
	ASSERT_EQ(1, wait_cq(self->cli.cq, self->srv.cq, &err));
	EXPECT_STREQ("tagged", b);

	/* fi_shutdown: the peer gets FI_SHUTDOWN, sends end on both sides. */
	ASSERT_EQ(0, fi_shutdown(self->cli.ep, 0));
	EXPECT_EQ(-FI_ENOTCONN, fi_shutdown(self->cli.ep, 0));
	EXPECT_EQ(-FI_ENOTCONN, fi_send(self->cli.ep, a, 1, NULL, 0, NULL));
	ASSERT_EQ(sizeof(entry), wait_event(self->srv.eq, &event, &entry,
					    sizeof(entry)));
	EXPECT_EQ(FI_SHUTDOWN, event);
	EXPECT_EQ(&self->srv.ep->fid, entry.fid);
	EXPECT_EQ(-FI_ENOTCONN, fi_send(self->srv.ep, a, 1, NULL, 0, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->cli.eq, &event, &entry,
					 sizeof(entry), 0));
}

/*
 * fi_msg(3) FI_MULTI_RECV over a connection: one buffer takes message
 * after message from the peer, each completion pointing into it; the one
 * that leaves less than FI_OPT_MIN_MULTI_RECV carries FI_MULTI_RECV (the
 * buffer is released), and the next message waits for a new receive.
 */
TEST_F(cm, multi_recv_over_a_connection)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[1024], sbuf[300], rbuf[300];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	size_t min = 200, v, len = sizeof(v);
	int i, ctx, rctx;

	RETURN_IF_SETUP_SKIPPED();
	connect_pair(_metadata, self);
	ASSERT_EQ(0, fi_setopt(&self->srv.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
	ASSERT_EQ(0, fi_getopt(&self->srv.ep->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &v, &len));
	EXPECT_EQ(min, v);
	msg.context = &ctx;
	ASSERT_EQ(0, fi_recvmsg(self->srv.ep, &msg, FI_MULTI_RECV));
	/* 724, 424, then 124 left: released at the third. */
	for (i = 0; i < 3; i++) {
		memset(sbuf, 'a' + i, sizeof(sbuf));
		ASSERT_EQ(0, fi_send(self->cli.ep, sbuf, sizeof(sbuf), NULL, 0,
				     NULL));
		ASSERT_EQ(1, kfab_test_wait_cq(self->srv.cq, self->cli.cq, &e,
					       NULL, &err, TIMEOUT_MS));
		EXPECT_EQ(&ctx, e.op_context);
		EXPECT_EQ(sizeof(sbuf), e.len);
		EXPECT_EQ(buf + i * sizeof(sbuf), (char *)e.buf);
		EXPECT_EQ(0, memcmp(buf + i * sizeof(sbuf), sbuf,
				    sizeof(sbuf)));
		EXPECT_EQ(FI_RECV | FI_MSG, e.flags & (FI_RECV | FI_MSG));
		EXPECT_EQ(i == 2 ? FI_MULTI_RECV : 0, e.flags & FI_MULTI_RECV);
		ASSERT_EQ(1, wait_cq(self->cli.cq, self->srv.cq, &err));
	}
	/* Released: the next message waits for the next receive. */
	memset(sbuf, 'z', sizeof(sbuf));
	ASSERT_EQ(0, fi_send(self->cli.ep, sbuf, sizeof(sbuf), NULL, 0,
			     NULL));
	EXPECT_EQ(-FI_EAGAIN, kfab_test_wait_cq(self->srv.cq, self->cli.cq,
						&e, NULL, &err, 200));
	EXPECT_EQ('c', buf[3 * sizeof(sbuf) - 1]);
	ASSERT_EQ(0, fi_recv(self->srv.ep, rbuf, sizeof(rbuf), NULL, 0,
			     &rctx));
	ASSERT_EQ(1, kfab_test_wait_cq(self->srv.cq, self->cli.cq, &e, NULL,
				       &err, TIMEOUT_MS));
	EXPECT_EQ(&rctx, e.op_context);
	EXPECT_EQ(0, memcmp(rbuf, sbuf, sizeof(sbuf)));
	EXPECT_EQ(0, e.flags & FI_MULTI_RECV);
}

TEST_F(cm, shutdown_flags_are_checked)
{
	RETURN_IF_SETUP_SKIPPED();
	connect_pair(_metadata, self);
	EXPECT_EQ(-FI_EBADFLAGS, fi_shutdown(self->cli.ep, 1));
}

TEST_F(cm, reject_reports_econnrefused_with_data)
{
	struct fi_eq_err_entry err;
	struct fi_info *req = NULL;
	struct side other = { 0 };
	struct fi_info *info;

	RETURN_IF_SETUP_SKIPPED();
	listen_and_connect(_metadata, self, NULL, &req);
	EXPECT_EQ(-FI_EINVAL, fi_reject(self->pep, NULL, NULL, 0));
	EXPECT_EQ(-FI_EINVAL, fi_reject(self->pep, req->handle, "x",
					CM_DATA_MAX + 1));
	ASSERT_EQ(0, fi_reject(self->pep, req->handle, "no", 3));
	ASSERT_EQ(0, wait_error(self->cli.eq, &err));
	EXPECT_EQ(FI_ECONNREFUSED, err.err);
	EXPECT_EQ(&self->cli.ep->fid, err.fid);
	ASSERT_EQ(3, err.err_data_size);
	EXPECT_EQ(0, memcmp(err.err_data, "no", 3));
	/* The handle is spent: reject again, or an endpoint from it. */
	EXPECT_EQ(-FI_EINVAL, fi_reject(self->pep, req->handle, NULL, 0));
	info = fi_dupinfo(req);
	ASSERT_NE(NULL, info);
	ASSERT_EQ(0, side_fabric(&other, info));
	ASSERT_EQ(0, fi_domain(other.fabric, info, &other.domain, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_endpoint(other.domain, info, &other.ep,
					  NULL));
	EXPECT_EQ(0, side_close(&other));
	fi_freeinfo(req);
	/* A refused endpoint does not connect again. */
	EXPECT_EQ(-FI_EOPBADSTATE, fi_connect(self->cli.ep, self->name, NULL,
					      0));
}

TEST_F(cm, connect_to_closed_pep_is_refused)
{
	struct fi_eq_err_entry err;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_close(&self->pep->fid));
	self->pep = NULL;
	ASSERT_EQ(0, fi_connect(self->cli.ep, self->name, NULL, 0));
	ASSERT_EQ(0, wait_error(self->cli.eq, &err));
	EXPECT_EQ(FI_ECONNREFUSED, err.err);
}

/*
 * fi_control(FI_BACKLOG): a pep holds that many unanswered requests; the
 * next is refused at once (FI_ECONNREFUSED at the client), and a slot
 * frees when a request is answered.
 */
TEST_F(cm, backlog_bounds_pending_requests)
{
	struct fi_eq_err_entry err;
	struct fi_info *req = NULL, *info;
	struct side late = { 0 };
	int backlog = 0;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EINVAL, fi_control(&self->pep->fid, FI_BACKLOG, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_control(&self->pep->fid, FI_BACKLOG,
					 &backlog));
	backlog = -3;
	EXPECT_EQ(-FI_EINVAL, fi_control(&self->pep->fid, FI_BACKLOG,
					 &backlog));
	EXPECT_EQ(-FI_ENOSYS, fi_control(&self->pep->fid, FI_GETOPSFLAG,
					 &backlog));
	backlog = 1;
	ASSERT_EQ(0, fi_control(&self->pep->fid, FI_BACKLOG, &backlog));

	listen_and_connect(_metadata, self, "first", &req);
	/* A second client while the first request waits: refused */
	ASSERT_EQ(0, msg_info(&info));
	ASSERT_EQ(0, side_fabric(&late, info));
	ASSERT_EQ(0, side_ep(&late, info));
	ASSERT_EQ(0, fi_connect(late.ep, self->name, NULL, 0));
	/* The pep sees it (and refuses it) when its EQ is read. */
	EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(self->eq, &(uint32_t){ 0 }, &err,
					  sizeof(err), 200, 0));
	ASSERT_EQ(0, wait_error(late.eq, &err));
	EXPECT_EQ(FI_ECONNREFUSED, err.err);
	EXPECT_EQ(0, side_close(&late));
	/* The first request is still good (the srv side owns it now). */
	accept_it(_metadata, self, req, NULL);
}

TEST_F(cm, pep_closing_refuses_pending_requests)
{
	struct fi_eq_err_entry err;
	struct fi_info *req = NULL;

	RETURN_IF_SETUP_SKIPPED();
	listen_and_connect(_metadata, self, "x", &req);
	ASSERT_EQ(0, fi_close(&self->pep->fid));
	self->pep = NULL;
	ASSERT_EQ(0, wait_error(self->cli.eq, &err));
	EXPECT_EQ(FI_ECONNREFUSED, err.err);
	/* The request went with its pep: an endpoint from it is refused. */
	ASSERT_EQ(0, side_fabric(&self->srv, req));
	EXPECT_EQ(-FI_EINVAL, side_ep(&self->srv, req));
}

TEST_F(cm, endpoint_claims_its_request_once)
{
	struct fi_info *req = NULL, *again;
	struct fid_ep *ep;

	RETURN_IF_SETUP_SKIPPED();
	listen_and_connect(_metadata, self, NULL, &req);
	again = fi_dupinfo(req);
	ASSERT_NE(NULL, again);
	accept_it(_metadata, self, req, NULL);
	/* The same handle a second time */
	EXPECT_EQ(-FI_EINVAL, fi_endpoint(self->srv.domain, again, &ep, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_reject(self->pep, again->handle, NULL, 0));
	fi_freeinfo(again);
}

TEST_F(cm, closing_a_connected_endpoint_shuts_the_peer_down)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;
	char buf[8];

	RETURN_IF_SETUP_SKIPPED();
	connect_pair(_metadata, self);
	ASSERT_EQ(0, fi_close(&self->srv.ep->fid));
	self->srv.ep = NULL;
	ASSERT_EQ(sizeof(entry), wait_event(self->cli.eq, &event, &entry,
					    sizeof(entry)));
	EXPECT_EQ(FI_SHUTDOWN, event);
	EXPECT_EQ(-FI_ENOTCONN, fi_send(self->cli.ep, buf, 1, NULL, 0, NULL));
}

TEST_F(cm, shutdown_during_a_transfer_ends_without_hanging)
{
	struct fi_cq_err_entry err;
	struct fi_eq_cm_entry entry;
	size_t len = 4 << 20;
	uint32_t event;
	char *big;
	ssize_t rc;

	RETURN_IF_SETUP_SKIPPED();
	connect_pair(_metadata, self);
	big = calloc(1, len);
	ASSERT_NE(NULL, big);
	/* A large send waits for a receive the peer never posts. */
	ASSERT_EQ(0, fi_send(self->cli.ep, big, len, NULL, 0, NULL));
	(void)fi_cq_read(self->cli.cq, NULL, 0);
	ASSERT_EQ(0, fi_shutdown(self->srv.ep, 0));
	ASSERT_EQ(sizeof(entry), wait_event(self->cli.eq, &event, &entry,
					    sizeof(entry)));
	EXPECT_EQ(FI_SHUTDOWN, event);
	/* Closing the receiver ends the send with an error completion. */
	ASSERT_EQ(0, fi_close(&self->srv.ep->fid));
	self->srv.ep = NULL;
	rc = wait_cq(self->cli.cq, NULL, &err);
	EXPECT_TRUE(rc == 1 || rc == -FI_EAVAIL);
	if (rc == -FI_EAVAIL)
		EXPECT_NE(0, err.err);
	free(big);
}

/*
 * A peer process that dies sends no SHUTDOWN (ep.rst, "Connections"): its
 * partner's send to it fails, and its EQ reads find the peer gone
 * (KFAB_SQE_PROBE) and post FI_SHUTDOWN; sends are -FI_ENOTCONN then.
 */
TEST_F(cm, a_killed_peer_ends_the_connection_with_shutdown)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX];
	struct fi_eq_cm_entry *entry = (void *)buf;
	struct fi_cq_err_entry err;
	struct fi_info *info;
	struct side child;
	uint32_t event;
	int ready[2];
	pid_t pid;
	char c;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_pep_bind(self->pep, &self->eq->fid, 0));
	ASSERT_EQ(0, fi_listen(self->pep));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* The client, in a process of its own: connect, then wait. */
		memset(&child, 0, sizeof(child));
		if (msg_info(&info) || side_fabric(&child, info) ||
		    side_ep(&child, info) ||
		    fi_connect(child.ep, self->name, NULL, 0) ||
		    wait_event(child.eq, &event, entry, sizeof(buf)) < 0 ||
		    event != FI_CONNECTED)
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_LT(0, wait_event(self->eq, &event, entry, sizeof(buf)));
	ASSERT_EQ(FI_CONNREQ, event);
	ASSERT_EQ(0, side_fabric(&self->srv, entry->info));
	ASSERT_EQ(0, side_ep(&self->srv, entry->info));
	ASSERT_EQ(0, fi_accept(self->srv.ep, NULL, 0));
	ASSERT_EQ(sizeof(*entry), wait_event(self->srv.eq, &event, entry,
					     sizeof(buf)));
	EXPECT_EQ(FI_CONNECTED, event);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	close(ready[0]);
	close(ready[1]);

	ASSERT_EQ(0, fi_send(self->srv.ep, "x", 2, NULL, 0, NULL));
	ASSERT_EQ(-FI_EAVAIL, wait_cq(self->srv.cq, NULL, &err));
	EXPECT_EQ(FI_EHOSTUNREACH, err.err);
	ASSERT_EQ(sizeof(*entry), wait_event(self->srv.eq, &event, entry,
					     sizeof(buf)));
	EXPECT_EQ(FI_SHUTDOWN, event);
	EXPECT_EQ(&self->srv.ep->fid, entry->fid);
	EXPECT_EQ(-FI_ENOTCONN, fi_send(self->srv.ep, "x", 2, NULL, 0, NULL));
	/* Once: no second FI_SHUTDOWN. */
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->srv.eq, &event, entry,
					 sizeof(buf), 0));
}

/* A peer that lives on is never taken for gone, however long we wait. */
TEST_F(cm, a_live_idle_peer_gets_no_shutdown)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;

	RETURN_IF_SETUP_SKIPPED();
	connect_pair(_metadata, self);
	/* Several probe periods (SHIM_CM_PROBE_MS) on both EQs. */
	EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(self->cli.eq, &event, &entry,
					  sizeof(entry), 350, 0));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(self->srv.eq, &event, &entry,
					  sizeof(entry), 350, 0));
	EXPECT_EQ(0, fi_send(self->cli.ep, "x", 2, NULL, 0, NULL));
}

/* ---- the EQ's wait object covers its connection traffic ---- */

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* CPU time of the calling thread, user + system, in ms. */
static long thread_cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* A thread blocked in poll() on an EQ's fd, with nobody reading the EQ. */
struct poller {
	pthread_t thread;
	int fd;
	int rc;
	short revents;
};

static void *poller_run(void *arg)
{
	struct poller *p = arg;
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };

	p->rc = poll(&pfd, 1, TIMEOUT_MS);
	p->revents = pfd.revents;
	return NULL;
}

/* An FI_WAIT_FD EQ on the listener's fabric, its fd in *@fd. */
static void open_fd_eq(struct __test_metadata *_metadata,
		       struct fid_fabric *fabric, struct fid_eq **eq, int *fd)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_FD };

	ASSERT_EQ(0, fi_eq_open(fabric, &attr, eq, NULL));
	ASSERT_EQ(0, fi_control(&(*eq)->fid, FI_GETWAIT, fd));
	ASSERT_LE(0, *fd);
}

TEST_F(cm, eq_fd_wakes_on_a_connection_request_without_a_read)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX];
	struct fi_eq_cm_entry *entry = (void *)buf;
	struct fid *fids[1];
	struct poller p = { 0 };
	struct fid_eq *eq;
	uint32_t event;

	RETURN_IF_SETUP_SKIPPED();
	open_fd_eq(_metadata, self->fabric, &eq, &p.fd);
	fids[0] = &eq->fid;
	ASSERT_EQ(0, fi_pep_bind(self->pep, &eq->fid, 0));
	ASSERT_EQ(0, fi_listen(self->pep));
	/* Nothing pending: fi_trywait says the caller may block. */
	ASSERT_EQ(0, fi_trywait(self->fabric, fids, 1));
	ASSERT_EQ(0, pthread_create(&p.thread, NULL, poller_run, &p));
	usleep(100 * 1000);
	ASSERT_EQ(0, fi_connect(self->cli.ep, self->name, NULL, 0));
	ASSERT_EQ(0, pthread_join(p.thread, NULL));
	EXPECT_EQ(1, p.rc);
	EXPECT_TRUE(p.revents & POLLIN);
	/* Something is there: fi_trywait must not let the caller sleep. */
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(self->fabric, fids, 1));
	ASSERT_LT(0, fi_eq_read(eq, &event, entry, sizeof(buf), 0));
	EXPECT_EQ(FI_CONNREQ, event);
	EXPECT_EQ(0, fi_reject(self->pep, entry->info->handle, NULL, 0));
	fi_freeinfo(entry->info);
	EXPECT_EQ(0, fi_trywait(self->fabric, fids, 1));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(eq, &event, entry, sizeof(buf), 0));
	EXPECT_EQ(0, fi_close(&self->pep->fid));
	self->pep = NULL;
	EXPECT_EQ(0, fi_close(&eq->fid));
}

TEST_F(cm, eq_fd_wakes_on_connected_without_a_read)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX];
	struct fi_eq_cm_entry *entry = (void *)buf;
	struct fi_info *info, *req;
	struct poller p = { 0 };
	struct side c2 = { 0 };
	struct fid *fids[1];
	uint32_t event;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, msg_info(&info));
	ASSERT_EQ(0, side_fabric_wait(&c2, info, FI_WAIT_FD));
	ASSERT_EQ(0, side_ep(&c2, info));
	ASSERT_EQ(0, fi_control(&c2.eq->fid, FI_GETWAIT, &p.fd));
	fids[0] = &c2.eq->fid;
	ASSERT_EQ(0, fi_pep_bind(self->pep, &self->eq->fid, 0));
	ASSERT_EQ(0, fi_listen(self->pep));
	ASSERT_EQ(0, fi_connect(c2.ep, self->name, NULL, 0));
	ASSERT_LT(0, wait_event(self->eq, &event, entry, sizeof(buf)));
	ASSERT_EQ(FI_CONNREQ, event);
	req = entry->info;
	ASSERT_EQ(0, fi_trywait(c2.fabric, fids, 1));
	ASSERT_EQ(0, pthread_create(&p.thread, NULL, poller_run, &p));
	usleep(100 * 1000);
	ASSERT_EQ(0, side_fabric(&self->srv, req));
	ASSERT_EQ(0, side_ep(&self->srv, req));
	ASSERT_EQ(0, fi_accept(self->srv.ep, NULL, 0));
	ASSERT_EQ(0, pthread_join(p.thread, NULL));
	EXPECT_EQ(1, p.rc);
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(c2.fabric, fids, 1));
	ASSERT_EQ(sizeof(*entry), fi_eq_read(c2.eq, &event, entry,
					     sizeof(buf), 0));
	EXPECT_EQ(FI_CONNECTED, event);
	EXPECT_EQ(&c2.ep->fid, entry->fid);
	EXPECT_EQ(0, side_close(&c2));
}

/* fi_eq_sread sleeps in the kernel: its thread uses little CPU. */
TEST_F(cm, eq_sread_timeout_sleeps_without_spinning)
{
	struct fi_eq_cm_entry entry;
	long t0, c0, wall, cpu;
	struct fid *fids[2];
	uint32_t event;

	RETURN_IF_SETUP_SKIPPED();
	connect_pair(_metadata, self);
	/* A listening pep and two connections, each on an EQ. */
	t0 = now_ms();
	c0 = thread_cpu_ms();
	EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(self->eq, &event, &entry,
					  sizeof(entry), 500, 0));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(self->cli.eq, &event, &entry,
					  sizeof(entry), 500, 0));
	wall = now_ms() - t0;
	cpu = thread_cpu_ms() - c0;
	EXPECT_LE(990, wall);
	EXPECT_GT(4000, wall);
	TH_LOG("sread: %ld ms wall, %ld ms CPU", wall, cpu);
	EXPECT_GT(wall / 4, cpu);
	/* fi_trywait on EQs with nothing pending: 0. */
	fids[0] = &self->eq->fid;
	fids[1] = &self->cli.eq->fid;
	EXPECT_EQ(0, fi_trywait(self->fabric, fids, 1));
	EXPECT_EQ(0, fi_trywait(self->cli.fabric, fids + 1, 1));
}

/* Nobody sends: fi_eq_sread alone learns that the peer died. */
TEST_F(cm, a_killed_peer_wakes_a_sleeping_sread_with_shutdown)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX];
	struct fi_eq_cm_entry *entry = (void *)buf;
	struct fi_info *info;
	struct side child;
	uint32_t event;
	int ready[2];
	pid_t pid;
	char c;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_pep_bind(self->pep, &self->eq->fid, 0));
	ASSERT_EQ(0, fi_listen(self->pep));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		memset(&child, 0, sizeof(child));
		if (msg_info(&info) || side_fabric(&child, info) ||
		    side_ep(&child, info) ||
		    fi_connect(child.ep, self->name, NULL, 0) ||
		    wait_event(child.eq, &event, entry, sizeof(buf)) < 0 ||
		    event != FI_CONNECTED)
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_LT(0, wait_event(self->eq, &event, entry, sizeof(buf)));
	ASSERT_EQ(FI_CONNREQ, event);
	ASSERT_EQ(0, side_fabric_wait(&self->srv, entry->info, FI_WAIT_FD));
	ASSERT_EQ(0, side_ep(&self->srv, entry->info));
	ASSERT_EQ(0, fi_accept(self->srv.ep, NULL, 0));
	ASSERT_EQ(sizeof(*entry), wait_event(self->srv.eq, &event, entry,
					     sizeof(buf)));
	EXPECT_EQ(FI_CONNECTED, event);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	close(ready[0]);
	close(ready[1]);
	ASSERT_EQ(sizeof(*entry), wait_event(self->srv.eq, &event, entry,
					     sizeof(buf)));
	EXPECT_EQ(FI_SHUTDOWN, event);
	EXPECT_EQ(&self->srv.ep->fid, entry->fid);
}

TEST_HARNESS_MAIN
