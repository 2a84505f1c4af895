// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Wait sets (fi_poll(3): fi_wait_open, fi_wait, fi_trywait, FI_GETWAIT)
 * and FI_WAIT_SET on CQs, counters and EQs, through libfabric's API: one
 * thread asleep in fi_wait() wakes for a completion, a counter change and
 * an EQ event; the set's fd works with poll() and epoll after
 * fi_trywait(); the closing rules (a set with members is -FI_EBUSY; a
 * member that closes leaves the set).  Every test SKIPs without /dev/kfab.
 * Runs inside the test VM with FI_PROVIDER_PATH naming libshim/prov.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "kselftest_harness.h"
#include "kfab_test.h"

#define TIMEOUT_MS	10000
/* How long the waker lets the sleeper sleep before it acts. */
#define NAP_MS		200

/*
 * a sends to b.  b's CQ, counter (receives) and EQ are in one wait set,
 * opened with FI_WAIT_FD.
 */
FIXTURE(wait) {
	struct kfab_test_fi a, b;
	struct fid_wait *ws;
	struct fid_cntr *cntr;
	struct fid_eq *eq;
	fi_addr_t to_b;
};

static int open_b(struct kfab_test_fi *b, struct fid_wait *ws,
		  struct fid_cntr **cntr, struct fid_eq **eq)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_SET,
				      .wait_set = ws };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_SET,
					  .wait_set = ws };
	struct fi_eq_attr eq_attr = { .flags = FI_WRITE,
				      .wait_obj = FI_WAIT_SET,
				      .wait_set = ws };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int rc;

	rc = fi_av_open(b->domain, &av_attr, &b->av, NULL);
	if (!rc)
		rc = fi_cq_open(b->domain, &cq_attr, &b->cq, NULL);
	if (!rc)
		rc = fi_cntr_open(b->domain, &cntr_attr, cntr, NULL);
	if (!rc)
		rc = fi_eq_open(b->fabric, &eq_attr, eq, NULL);
	if (!rc)
		rc = fi_endpoint(b->domain, b->info, &b->ep, NULL);
	if (!rc)
		rc = fi_ep_bind(b->ep, &b->av->fid, 0);
	if (!rc)
		rc = fi_ep_bind(b->ep, &b->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_ep_bind(b->ep, &(*cntr)->fid, FI_RECV);
	if (!rc)
		rc = fi_enable(b->ep);
	return rc;
}

FIXTURE_SETUP(wait)
{
	struct fi_wait_attr attr = { .wait_obj = FI_WAIT_FD };

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_endpoints())
		SKIP(return, "kfab.ko without endpoints (KFAB_IOC_EP_OPEN)");
	ASSERT_EQ(0, _test_fi_side_open(&self->a, kfab_test_rdm_hints(),
					true));
	ASSERT_EQ(0, _test_fi_domain_open(&self->b, kfab_test_rdm_hints()));
	ASSERT_EQ(0, fi_wait_open(self->b.fabric, &attr, &self->ws));
	ASSERT_EQ(0, open_b(&self->b, self->ws, &self->cntr, &self->eq));
	ASSERT_EQ(1, kfab_test_fi_insert_peer(&self->a, &self->b,
					      &self->to_b));
}

FIXTURE_TEARDOWN(wait)
{
	if (self->b.ep)
		EXPECT_EQ(0, fi_close(&self->b.ep->fid));
	self->b.ep = NULL;
	if (self->cntr)
		EXPECT_EQ(0, fi_close(&self->cntr->fid));
	if (self->eq)
		EXPECT_EQ(0, fi_close(&self->eq->fid));
	if (self->b.cq)
		EXPECT_EQ(0, fi_close(&self->b.cq->fid));
	self->b.cq = NULL;
	if (self->ws)
		EXPECT_EQ(0, fi_close(&self->ws->fid));
	test_fi_close(&self->b);
	test_fi_close(&self->a);
}

/* A thread asleep in fi_wait(): what it returned, and after how long. */
struct sleeper {
	pthread_t thread;
	struct fid_wait *ws;
	int timeout;
	int ret;
	uint64_t ms;
};

static void *sleeper_run(void *arg)
{
	struct sleeper *s = arg;
	uint64_t start = kfab_now_ms();

	s->ret = fi_wait(s->ws, s->timeout);
	s->ms = kfab_now_ms() - start;
	return NULL;
}

static int sleeper_start(struct sleeper *s, struct fid_wait *ws, int timeout)
{
	*s = (struct sleeper){ .ws = ws, .timeout = timeout, .ret = 1 };
	return pthread_create(&s->thread, NULL, sleeper_run, s);
}

static void nap(void)
{
	usleep(NAP_MS * 1000);
}

TEST(wait_open_checks_its_arguments)
{
	static const struct {
		enum fi_wait_obj obj;
		uint64_t flags;
		int ret;
	} cases[] = {
		{ FI_WAIT_FD, 1, -FI_EBADFLAGS },
		{ FI_WAIT_MUTEX_COND, 0, -FI_ENOSYS },
		{ FI_WAIT_NONE, 0, -FI_EINVAL },
		{ FI_WAIT_SET, 0, -FI_EINVAL },
		{ (enum fi_wait_obj)99, 0, -FI_EINVAL },
	};
	struct pollfd pfds[2] = { { .fd = -1 }, { .fd = -1 } };
	struct fi_wait_attr attr = { 0 };
	struct fi_wait_pollfd wp;
	enum fi_wait_obj obj;
	struct kfab_test_fi s;
	struct fid_wait *ws;
	struct fid *fid;
	size_t i;
	int fd;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, _test_fi_domain_open(&s, kfab_test_rdm_hints()));
	EXPECT_EQ(-FI_EINVAL, fi_wait_open(s.fabric, NULL, &ws));
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		attr.wait_obj = cases[i].obj;
		attr.flags = cases[i].flags;
		EXPECT_EQ(cases[i].ret, fi_wait_open(s.fabric, &attr, &ws))
			TH_LOG("case %zu", i);
	}

	/* FI_WAIT_FD and FI_WAIT_UNSPEC: an fd; empty: nothing to wait for */
	attr = (struct fi_wait_attr){ .wait_obj = FI_WAIT_FD };
	ASSERT_EQ(0, fi_wait_open(s.fabric, &attr, &ws));
	EXPECT_EQ(FI_CLASS_WAIT, ws->fid.fclass);
	EXPECT_EQ(0, fi_control(&ws->fid, FI_GETWAITOBJ, &obj));
	EXPECT_EQ(FI_WAIT_FD, obj);
	fd = -1;
	EXPECT_EQ(0, fi_control(&ws->fid, FI_GETWAIT, &fd));
	EXPECT_LE(0, fd);
	EXPECT_EQ(-FI_EINVAL, fi_control(&ws->fid, FI_GETWAIT, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_control(&ws->fid, FI_ENABLE, NULL));
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(ws, 0));
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(ws, 20));
	fid = &ws->fid;
	EXPECT_EQ(0, fi_trywait(s.fabric, &fid, 1));
	EXPECT_EQ(0, fi_close(&ws->fid));

	attr.wait_obj = FI_WAIT_UNSPEC;
	ASSERT_EQ(0, fi_wait_open(s.fabric, &attr, &ws));
	EXPECT_EQ(0, fi_control(&ws->fid, FI_GETWAIT, &fd));
	EXPECT_EQ(0, fi_close(&ws->fid));

	/* FI_WAIT_POLLFD: the same epoll fd as a one-entry list */
	attr.wait_obj = FI_WAIT_POLLFD;
	ASSERT_EQ(0, fi_wait_open(s.fabric, &attr, &ws));
	EXPECT_EQ(0, fi_control(&ws->fid, FI_GETWAITOBJ, &obj));
	EXPECT_EQ(FI_WAIT_POLLFD, obj);
	wp = (struct fi_wait_pollfd){ .nfds = 0, .fd = pfds };
	EXPECT_EQ(-FI_ETOOSMALL, fi_control(&ws->fid, FI_GETWAIT, &wp));
	EXPECT_EQ(1U, wp.nfds);
	wp.fd = NULL;
	EXPECT_EQ(-FI_EINVAL, fi_control(&ws->fid, FI_GETWAIT, &wp));
	wp = (struct fi_wait_pollfd){ .nfds = 2, .fd = pfds };
	EXPECT_EQ(0, fi_control(&ws->fid, FI_GETWAIT, &wp));
	EXPECT_EQ(1U, wp.nfds);
	EXPECT_LE(0, pfds[0].fd);
	EXPECT_EQ(POLLIN, pfds[0].events);
	EXPECT_EQ(-1, pfds[1].fd);
	fid = &ws->fid;
	EXPECT_EQ(0, fi_trywait(s.fabric, &fid, 1));
	EXPECT_EQ(0, poll(pfds, 1, 20));
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(ws, 20));
	EXPECT_EQ(0, fi_close(&ws->fid));

	/* FI_WAIT_YIELD: no fd to give, nothing fi_trywait() can promise */
	attr.wait_obj = FI_WAIT_YIELD;
	ASSERT_EQ(0, fi_wait_open(s.fabric, &attr, &ws));
	EXPECT_EQ(-FI_ENODATA, fi_control(&ws->fid, FI_GETWAIT, &fd));
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(ws, 5));
	fid = &ws->fid;
	EXPECT_EQ(-FI_EINVAL, fi_trywait(s.fabric, &fid, 1));
	EXPECT_EQ(0, fi_close(&ws->fid));
	EXPECT_EQ(0, _test_fi_close(&s));
}

/* FI_WAIT_SET needs a kfab wait set of the object's own fabric. */
TEST(wait_set_objects_need_a_kfab_set_of_their_fabric)
{
	struct fi_wait_attr attr = { .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr cq_attr = { .wait_obj = FI_WAIT_SET };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_SET };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_SET };
	struct fi_poll_attr poll_attr = { 0 };
	struct kfab_test_fi s, t;
	struct fid_wait *other, *bogus;
	struct fid_poll *ps;
	struct fid_cntr *cntr;
	struct fid_eq *eq;
	struct fid_cq *cq;
	size_t i;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	ASSERT_EQ(0, _test_fi_domain_open(&s, kfab_test_rdm_hints()));
	ASSERT_EQ(0, _test_fi_domain_open(&t, kfab_test_rdm_hints()));
	ASSERT_EQ(0, fi_wait_open(t.fabric, &attr, &other));
	ASSERT_EQ(0, fi_poll_open(s.domain, &poll_attr, &ps));
	/* A poll set posing as a wait set */
	bogus = (struct fid_wait *)ps;
	for (i = 0; i < 3; i++) {
		struct fid_wait *set = i == 0 ? NULL : i == 1 ? bogus : other;

		cq_attr.wait_set = set;
		cntr_attr.wait_set = set;
		eq_attr.wait_set = set;
		EXPECT_EQ(-FI_EINVAL, fi_cq_open(s.domain, &cq_attr, &cq, NULL))
			TH_LOG("set %zu", i);
		EXPECT_EQ(-FI_EINVAL, fi_cntr_open(s.domain, &cntr_attr, &cntr,
						   NULL))
			TH_LOG("set %zu", i);
		EXPECT_EQ(-FI_EINVAL, fi_eq_open(s.fabric, &eq_attr, &eq, NULL))
			TH_LOG("set %zu", i);
	}
	/* The refusals left nothing in the other fabric's set */
	EXPECT_EQ(0, fi_close(&other->fid));
	EXPECT_EQ(0, fi_close(&ps->fid));
	EXPECT_EQ(0, _test_fi_close(&t));
	EXPECT_EQ(0, _test_fi_close(&s));
}

/* fi_poll(3): a set "bound to any other opened resources" is -FI_EBUSY. */
TEST_F(wait, close_of_a_set_with_members_is_ebusy)
{
	enum fi_wait_obj obj;
	int fd, setfd;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->ws->fid));
	/* Members say what they wait on, and give the set's fd */
	EXPECT_EQ(0, fi_control(&self->b.cq->fid, FI_GETWAITOBJ, &obj));
	EXPECT_EQ(FI_WAIT_SET, obj);
	EXPECT_EQ(0, fi_control(&self->ws->fid, FI_GETWAIT, &setfd));
	EXPECT_EQ(0, fi_control(&self->b.cq->fid, FI_GETWAIT, &fd));
	EXPECT_EQ(setfd, fd);
	EXPECT_EQ(0, fi_control(&self->cntr->fid, FI_GETWAIT, &fd));
	EXPECT_EQ(setfd, fd);
	EXPECT_EQ(0, fi_control(&self->eq->fid, FI_GETWAIT, &fd));
	EXPECT_EQ(setfd, fd);

	/* Members leave as they close; the set closes after the last. */
	EXPECT_EQ(0, fi_close(&self->eq->fid));
	self->eq = NULL;
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->ws->fid));
	EXPECT_EQ(0, fi_close(&self->b.ep->fid));
	self->b.ep = NULL;
	EXPECT_EQ(0, fi_close(&self->cntr->fid));
	self->cntr = NULL;
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->ws->fid));
	EXPECT_EQ(0, fi_close(&self->b.cq->fid));
	self->b.cq = NULL;
	EXPECT_EQ(0, fi_close(&self->ws->fid));
	self->ws = NULL;
}

/* A thread asleep on the set wakes for a completion in the CQ. */
TEST_F(wait, wait_wakes_for_a_completion)
{
	struct fi_cq_tagged_entry e;
	struct sleeper s;
	uint32_t v = 5, r = 0;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     NULL));
	/* The counter saw nothing yet, the CQ is empty: the set sleeps. */
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->ws, 0));
	ASSERT_EQ(0, sleeper_start(&s, self->ws, TIMEOUT_MS));
	nap();
	ASSERT_EQ(0, fi_send(self->a.ep, &v, sizeof(v), NULL, self->to_b,
			     NULL));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_GT(TIMEOUT_MS, s.ms);
	ASSERT_EQ(1, fi_cq_read(self->b.cq, &e, 1));
	EXPECT_EQ(5U, r);
	/* The counter moved too (the sleeper may have seen it): once read,
	 * nothing is news any more. */
	(void)fi_wait(self->ws, 0);
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->ws, 50));
}

/* ... for a counter that changes (fi_cntr_add here) ... */
TEST_F(wait, wait_wakes_for_a_counter)
{
	struct sleeper s;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, sleeper_start(&s, self->ws, TIMEOUT_MS));
	nap();
	ASSERT_EQ(0, fi_cntr_add(self->cntr, 3));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_GT(TIMEOUT_MS, s.ms);
	EXPECT_EQ(3U, fi_cntr_read(self->cntr));
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->ws, 50));
	/* An error count that changes is news too */
	ASSERT_EQ(0, fi_cntr_adderr(self->cntr, 1));
	EXPECT_EQ(0, fi_wait(self->ws, TIMEOUT_MS));
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->ws, 0));
}

/* ... and for an event in the EQ, until it is read. */
TEST_F(wait, wait_wakes_for_an_eq_event)
{
	struct fi_eq_entry entry = { .context = &entry };
	uint32_t event;
	struct sleeper s;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, sleeper_start(&s, self->ws, TIMEOUT_MS));
	nap();
	ASSERT_EQ((ssize_t)sizeof(entry),
		  fi_eq_write(self->eq, FI_NOTIFY, &entry, sizeof(entry), 0));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_GT(TIMEOUT_MS, s.ms);
	/* Still there: still news */
	EXPECT_EQ(0, fi_wait(self->ws, 0));
	ASSERT_EQ((ssize_t)sizeof(entry),
		  fi_eq_sread(self->eq, &event, &entry, sizeof(entry), 100, 0));
	EXPECT_EQ(FI_NOTIFY, event);
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->ws, 20));
}

/* Nothing happens: the sleeper gives up after its timeout, no sooner. */
TEST_F(wait, wait_times_out)
{
	uint64_t start = kfab_now_ms();

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->ws, 300));
	EXPECT_LE(300U, kfab_now_ms() - start);
}

/*
 * FI_GETWAIT's fd, as fi_poll(3) says to use it: fi_trywait() on the set
 * (not its members) says 0, then poll() or epoll sleeps until news.
 */
TEST_F(wait, getwait_fd_works_with_poll_and_epoll)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct fi_cq_tagged_entry e;
	struct pollfd pfd;
	uint32_t v = 9, r = 0;
	struct fid *fid;
	int fd, ep;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_control(&self->ws->fid, FI_GETWAIT, &fd));
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	fid = &self->ws->fid;
	ASSERT_EQ(0, fi_trywait(self->b.fabric, &fid, 1));
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     NULL));
	ASSERT_EQ(0, fi_send(self->a.ep, &v, sizeof(v), NULL, self->to_b,
			     NULL));
	ASSERT_EQ(1, poll(&pfd, 1, TIMEOUT_MS));
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(self->b.fabric, &fid, 1));
	ASSERT_EQ(1, fi_cq_read(self->b.cq, &e, 1));
	EXPECT_EQ(9U, r);
	/* The counter moved with the receive: one more -FI_EAGAIN, then 0 */
	(void)fi_trywait(self->b.fabric, &fid, 1);
	ASSERT_EQ(0, fi_trywait(self->b.fabric, &fid, 1));
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	/* The same fd in an epoll set of the application's */
	ep = epoll_create1(0);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	ASSERT_EQ(0, fi_cntr_add(self->cntr, 1));
	EXPECT_EQ(1, epoll_wait(ep, &out, 1, TIMEOUT_MS));
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(self->b.fabric, &fid, 1));
	EXPECT_EQ(0, fi_trywait(self->b.fabric, &fid, 1));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	close(ep);
}

/* A member's own blocking reads still work: they sleep on its eventfd. */
TEST_F(wait, members_block_on_their_own_reads)
{
	struct fi_cq_tagged_entry e;
	uint32_t v = 1, r = 0;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_recv(self->b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     NULL));
	ASSERT_EQ(0, fi_send(self->a.ep, &v, sizeof(v), NULL, self->to_b,
			     NULL));
	ASSERT_EQ(1, fi_cq_sread(self->b.cq, &e, 1, NULL, TIMEOUT_MS));
	EXPECT_EQ(0, fi_cntr_wait(self->cntr, 1, TIMEOUT_MS));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(self->b.cq, &e, 1, NULL, 10));
}

/*
 * A member closed while a thread sleeps on the set: it leaves the set,
 * the sleeper goes on sleeping on what is left and wakes for it.
 */
TEST_F(wait, member_closed_while_a_thread_waits)
{
	struct fi_eq_entry entry = { 0 };
	struct sleeper s;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, sleeper_start(&s, self->ws, TIMEOUT_MS));
	nap();
	EXPECT_EQ(0, fi_close(&self->b.ep->fid));
	self->b.ep = NULL;
	EXPECT_EQ(0, fi_close(&self->cntr->fid));
	self->cntr = NULL;
	nap();
	ASSERT_EQ((ssize_t)sizeof(entry),
		  fi_eq_write(self->eq, FI_NOTIFY, &entry, sizeof(entry), 0));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_GT(TIMEOUT_MS, s.ms);
}

static struct fi_info *msg_info(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	if (!hints)
		return NULL;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	if (fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, hints, &info))
		info = NULL;
	fi_freeinfo(hints);
	return info;
}

static long thread_cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/*
 * An EQ with a listening passive endpoint in the set: fi_wait sleeps in
 * the kernel (little CPU) until a connection request arrives, which wakes
 * it before anyone reads the EQ.
 */
TEST_F(wait, wait_sleeps_on_a_cm_eq_until_a_connection_request)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG };
	struct fi_info *info, *cinfo;
	struct fid_cq *ccq;
	struct fid_fabric *cfab;
	struct fid_domain *cdom;
	struct fid_eq *ceq;
	struct fid_ep *cep;
	struct fid_pep *pep;
	struct fi_eq_cm_entry entry;
	char name[128];
	size_t namelen = sizeof(name);
	struct sleeper s;
	uint64_t start;
	uint32_t event;
	long cpu;

	RETURN_IF_SETUP_SKIPPED();
	info = msg_info();
	cinfo = msg_info();
	ASSERT_NE(NULL, info);
	ASSERT_NE(NULL, cinfo);
	ASSERT_EQ(0, fi_passive_ep(self->b.fabric, info, &pep, NULL));
	ASSERT_EQ(0, fi_pep_bind(pep, &self->eq->fid, 0));
	ASSERT_EQ(0, fi_listen(pep));
	ASSERT_EQ(0, fi_getname(&pep->fid, name, &namelen));

	start = kfab_now_ms();
	cpu = thread_cpu_ms();
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->ws, 500));
	cpu = thread_cpu_ms() - cpu;
	start = kfab_now_ms() - start;
	EXPECT_LE(490U, start);
	EXPECT_GT((long)start / 4, cpu);
	TH_LOG("fi_wait: %llu ms wall, %ld ms CPU",
	       (unsigned long long)start, cpu);

	ASSERT_EQ(0, fi_fabric(cinfo->fabric_attr, &cfab, NULL));
	ASSERT_EQ(0, fi_eq_open(cfab, &eq_attr, &ceq, NULL));
	ASSERT_EQ(0, fi_domain(cfab, cinfo, &cdom, NULL));
	ASSERT_EQ(0, fi_endpoint(cdom, cinfo, &cep, NULL));
	ASSERT_EQ(0, fi_cq_open(cdom, &cq_attr, &ccq, NULL));
	ASSERT_EQ(0, fi_ep_bind(cep, &ceq->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(cep, &ccq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(cep));
	ASSERT_EQ(0, sleeper_start(&s, self->ws, TIMEOUT_MS));
	nap();
	ASSERT_EQ(0, fi_connect(cep, name, NULL, 0));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_GT(TIMEOUT_MS, s.ms);
	ASSERT_LT(0, fi_eq_read(self->eq, &event, &entry, sizeof(entry), 0));
	EXPECT_EQ(FI_CONNREQ, event);
	EXPECT_EQ(0, fi_reject(pep, entry.info->handle, NULL, 0));
	fi_freeinfo(entry.info);
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->ws, 20));

	EXPECT_EQ(0, fi_close(&cep->fid));
	EXPECT_EQ(0, fi_close(&ccq->fid));
	EXPECT_EQ(0, fi_close(&cdom->fid));
	EXPECT_EQ(0, fi_close(&ceq->fid));
	EXPECT_EQ(0, fi_close(&cfab->fid));
	EXPECT_EQ(0, fi_close(&pep->fid));
	fi_freeinfo(info);
	fi_freeinfo(cinfo);
}

TEST_HARNESS_MAIN
