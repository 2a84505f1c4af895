// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Wait sets (fi_poll(3): fi_wait_open, fi_wait, fi_trywait, FI_GETWAIT)
 * and FI_WAIT_SET on CQs, counters and EQs, through libfabric's API: one
 * thread asleep in fi_wait() wakes for a completion, a counter change and
 * an EQ event; the set's fd works with poll() and epoll after
 * fi_trywait(); the closing rules (a set with members is -FI_EBUSY; a
 * member that closes leaves the set).  FI_WAIT_MUTEX_COND sets (fixture
 * mcwait): an application thread asleep in pthread_cond_timedwait(), as
 * fi_poll(3)'s protocol has it (lock, fi_trywait, wait), wakes for each
 * kind of member, times out without spinning, and the set closes in any
 * order its members allow, across fork() too.  Every test SKIPs without
 * /dev/kfab.
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
#include <sys/wait.h>
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

/*
 * a, and b with its CQ, counter and EQ in a wait set of @obj; *@ws is
 * the set (for FIXTURE(mcwait)'s FI_GETWAIT).
 */
static void wait_objs_open(struct __test_metadata *_metadata,
			   FIXTURE_DATA(wait) *self, enum fi_wait_obj obj)
{
	struct fi_wait_attr attr = { .wait_obj = obj };

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

static void wait_objs_close(struct __test_metadata *_metadata,
			    FIXTURE_DATA(wait) *self)
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

FIXTURE_SETUP(wait)
{
	wait_objs_open(_metadata, self, FI_WAIT_FD);
}

FIXTURE_TEARDOWN(wait)
{
	wait_objs_close(_metadata, self);
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
		{ FI_WAIT_MUTEX_COND, 1, -FI_EBADFLAGS },
		{ FI_WAIT_NONE, 0, -FI_EINVAL },
		{ FI_WAIT_SET, 0, -FI_EINVAL },
		{ (enum fi_wait_obj)99, 0, -FI_EINVAL },
	};
	struct pollfd pfds[2] = { { .fd = -1 }, { .fd = -1 } };
	struct fi_mutex_cond mc = { 0 };
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

	/*
	 * FI_WAIT_MUTEX_COND: the set's own pair; empty, it has nothing to
	 * wait for (and no helper thread yet)
	 */
	attr.wait_obj = FI_WAIT_MUTEX_COND;
	ASSERT_EQ(0, fi_wait_open(s.fabric, &attr, &ws));
	EXPECT_EQ(0, fi_control(&ws->fid, FI_GETWAITOBJ, &obj));
	EXPECT_EQ(FI_WAIT_MUTEX_COND, obj);
	EXPECT_EQ(0, fi_control(&ws->fid, FI_GETWAIT, &mc));
	EXPECT_NE(NULL, mc.mutex);
	EXPECT_NE(NULL, mc.cond);
	EXPECT_EQ(-FI_EINVAL, fi_control(&ws->fid, FI_GETWAIT, NULL));
	fid = &ws->fid;
	EXPECT_EQ(0, fi_trywait(s.fabric, &fid, 1));
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(ws, 0));
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

/* ---- FI_WAIT_MUTEX_COND sets ---- */

/* The same objects as FIXTURE(wait), in an FI_WAIT_MUTEX_COND set. */
FIXTURE(mcwait) {
	FIXTURE_DATA(wait) w;
	struct fi_mutex_cond mc;
};

FIXTURE_SETUP(mcwait)
{
	wait_objs_open(_metadata, &self->w, FI_WAIT_MUTEX_COND);
	if (!self->w.ws)
		return;
	ASSERT_EQ(0, fi_control(&self->w.ws->fid, FI_GETWAIT, &self->mc));
}

FIXTURE_TEARDOWN(mcwait)
{
	wait_objs_close(_metadata, &self->w);
}

/*
 * An application thread waiting on the set's condition variable the way
 * fi_poll(3) says: lock, fi_trywait() on the set, pthread_cond_timedwait()
 * while it answers 0.  What it got (0: news, -FI_ETIMEDOUT), after how
 * long, and the CPU the whole process spent meanwhile.
 */
struct cond_sleeper {
	pthread_t thread;
	struct fid_fabric *fabric;
	struct fid_wait *ws;
	struct fi_mutex_cond mc;
	int timeout;
	int ret;
	int wakeups;
	uint64_t ms;
};

static void *cond_sleeper_run(void *arg)
{
	struct cond_sleeper *s = arg;
	uint64_t start = kfab_now_ms();
	struct fid *fid = &s->ws->fid;
	struct timespec until;
	int rc;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += s->timeout / 1000;
	until.tv_nsec += (long)(s->timeout % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(s->mc.mutex);
	for (;;) {
		rc = fi_trywait(s->fabric, &fid, 1);
		if (rc == -FI_EAGAIN) {
			s->ret = 0;
			break;
		}
		if (rc) {
			s->ret = rc;
			break;
		}
		rc = pthread_cond_timedwait(s->mc.cond, s->mc.mutex, &until);
		if (rc == ETIMEDOUT) {
			s->ret = -FI_ETIMEDOUT;
			break;
		}
		s->wakeups++;
	}
	pthread_mutex_unlock(s->mc.mutex);
	s->ms = kfab_now_ms() - start;
	return NULL;
}

static int cond_sleeper_start(struct cond_sleeper *s,
			      FIXTURE_DATA(mcwait) *self, int timeout)
{
	*s = (struct cond_sleeper){ .fabric = self->w.b.fabric,
				    .ws = self->w.ws, .mc = self->mc,
				    .timeout = timeout, .ret = 1 };
	return pthread_create(&s->thread, NULL, cond_sleeper_run, s);
}

static long process_cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return -1;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* Members give the set's pair, the same one the set gives. */
TEST_F(mcwait, getwait_of_members_gives_the_sets_mutex_and_cond)
{
	struct fi_mutex_cond mc;
	enum fi_wait_obj obj;
	struct fid *members[3];
	int i;

	RETURN_IF_SETUP_SKIPPED();
	members[0] = &self->w.b.cq->fid;
	members[1] = &self->w.cntr->fid;
	members[2] = &self->w.eq->fid;
	for (i = 0; i < 3; i++) {
		memset(&mc, 0, sizeof(mc));
		EXPECT_EQ(0, fi_control(members[i], FI_GETWAITOBJ, &obj));
		EXPECT_EQ(FI_WAIT_SET, obj);
		EXPECT_EQ(0, fi_control(members[i], FI_GETWAIT, &mc));
		EXPECT_EQ(self->mc.mutex, mc.mutex);
		EXPECT_EQ(self->mc.cond, mc.cond);
	}
}

/* pthread_cond_timedwait() wakes for a completion in the CQ. */
TEST_F(mcwait, cond_wait_wakes_for_a_completion)
{
	struct fi_cq_tagged_entry e;
	struct cond_sleeper s;
	uint32_t v = 5, r = 0;
	struct fid *fid;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, fi_recv(self->w.b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC,
			     NULL));
	fid = &self->w.ws->fid;
	EXPECT_EQ(0, fi_trywait(self->w.b.fabric, &fid, 1));
	ASSERT_EQ(0, cond_sleeper_start(&s, self, TIMEOUT_MS));
	nap();
	ASSERT_EQ(0, fi_send(self->w.a.ep, &v, sizeof(v), NULL, self->w.to_b,
			     NULL));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_GT(TIMEOUT_MS, s.ms);
	EXPECT_LE(1, s.wakeups);
	ASSERT_EQ(1, fi_cq_read(self->w.b.cq, &e, 1));
	EXPECT_EQ(5U, r);
	/* Once everything is read, nothing is news (after the counter's). */
	(void)fi_wait(self->w.ws, 0);
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->w.ws, 50));
}

/* ... for a counter that changes ... */
TEST_F(mcwait, cond_wait_wakes_for_a_counter)
{
	struct cond_sleeper s;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, cond_sleeper_start(&s, self, TIMEOUT_MS));
	nap();
	ASSERT_EQ(0, fi_cntr_add(self->w.cntr, 3));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_GT(TIMEOUT_MS, s.ms);
	EXPECT_EQ(3U, fi_cntr_read(self->w.cntr));
	(void)fi_wait(self->w.ws, 0);
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->w.ws, 50));
}

/* ... and for an event in the EQ. */
TEST_F(mcwait, cond_wait_wakes_for_an_eq_event)
{
	struct fi_eq_entry entry = { .context = &entry };
	struct cond_sleeper s;
	uint32_t event;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, cond_sleeper_start(&s, self, TIMEOUT_MS));
	nap();
	ASSERT_EQ((ssize_t)sizeof(entry),
		  fi_eq_write(self->w.eq, FI_NOTIFY, &entry, sizeof(entry), 0));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_GT(TIMEOUT_MS, s.ms);
	ASSERT_EQ((ssize_t)sizeof(entry),
		  fi_eq_sread(self->w.eq, &event, &entry, sizeof(entry), 100, 0));
	EXPECT_EQ(FI_NOTIFY, event);
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->w.ws, 20));
}

/*
 * Nothing happens: the sleeper times out, and neither it nor the set's
 * helper thread spins meanwhile (the process's CPU time stays far below
 * the wall time).
 */
TEST_F(mcwait, cond_wait_times_out_without_spinning)
{
	struct cond_sleeper s;
	long cpu;

	RETURN_IF_SETUP_SKIPPED();
	cpu = process_cpu_ms();
	ASSERT_EQ(0, cond_sleeper_start(&s, self, 600));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	cpu = process_cpu_ms() - cpu;
	EXPECT_EQ(-FI_ETIMEDOUT, s.ret);
	EXPECT_LE(590U, s.ms);
	EXPECT_GT((long)s.ms / 4, cpu);
	TH_LOG("cond wait: %llu ms wall, %ld ms CPU, %d wake-ups",
	       (unsigned long long)s.ms, cpu, s.wakeups);
}

/* fi_wait() on such a set is the same protocol: it wakes, it times out. */
TEST_F(mcwait, fi_wait_wakes_and_times_out)
{
	uint64_t start = kfab_now_ms();
	struct sleeper s;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->w.ws, 300));
	EXPECT_LE(300U, kfab_now_ms() - start);
	ASSERT_EQ(0, sleeper_start(&s, self->w.ws, TIMEOUT_MS));
	nap();
	ASSERT_EQ(0, fi_cntr_add(self->w.cntr, 1));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_GT(TIMEOUT_MS, s.ms);
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->w.ws, 0));
}

/* After @delay_us, one fi_cntr_add(): a signal at any moment. */
struct poker {
	pthread_t thread;
	struct fid_cntr *cntr;
	int delay_us;
};

static void *poker_run(void *arg)
{
	struct poker *p = arg;

	usleep(p->delay_us);
	(void)fi_cntr_add(p->cntr, 1);
	return NULL;
}

/*
 * No wake-up is lost, whenever the signal comes: before the application
 * takes the mutex, between its fi_trywait() and its wait, or while it
 * sleeps.  Each round's pthread_cond_timedwait() loop ends long before its
 * timeout.
 */
TEST_F(mcwait, no_signal_is_lost_whenever_it_comes)
{
	struct fid *fid = &self->w.ws->fid;
	struct timespec until;
	struct poker p;
	int rc, i;

	RETURN_IF_SETUP_SKIPPED();
	for (i = 0; i < 40; i++) {
		/* Nothing pending before the round. */
		while (fi_trywait(self->w.b.fabric, &fid, 1) == -FI_EAGAIN)
			;
		p = (struct poker){ .cntr = self->w.cntr,
				    .delay_us = (i % 8) * 500 };
		ASSERT_EQ(0, pthread_create(&p.thread, NULL, poker_run, &p));
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += TIMEOUT_MS / 1000;
		rc = 0;
		pthread_mutex_lock(self->mc.mutex);
		while (!rc && fi_trywait(self->w.b.fabric, &fid, 1) == 0)
			rc = pthread_cond_timedwait(self->mc.cond,
						    self->mc.mutex, &until);
		pthread_mutex_unlock(self->mc.mutex);
		ASSERT_EQ(0, pthread_join(p.thread, NULL));
		ASSERT_EQ(0, rc) TH_LOG("round %d", i);
	}
	EXPECT_EQ(40U, fi_cntr_read(self->w.cntr));
}

/*
 * fi_poll(3): a set with members is -FI_EBUSY; members leave as they
 * close, in any order, while a thread waits on the condition variable;
 * then the set closes (its helper thread ends).
 */
TEST_F(mcwait, close_orderings)
{
	struct cond_sleeper s;

	RETURN_IF_SETUP_SKIPPED();
	ASSERT_EQ(0, cond_sleeper_start(&s, self, TIMEOUT_MS));
	nap();
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->w.ws->fid));
	EXPECT_EQ(0, fi_close(&self->w.b.ep->fid));
	self->w.b.ep = NULL;
	EXPECT_EQ(0, fi_close(&self->w.b.cq->fid));
	self->w.b.cq = NULL;
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->w.ws->fid));
	/* What is left still wakes the sleeper. */
	ASSERT_EQ(0, fi_cntr_add(self->w.cntr, 1));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_EQ(0, fi_close(&self->w.cntr->fid));
	self->w.cntr = NULL;
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->w.ws->fid));
	EXPECT_EQ(0, fi_close(&self->w.eq->fid));
	self->w.eq = NULL;
	EXPECT_EQ(0, fi_close(&self->w.ws->fid));
	self->w.ws = NULL;
}

/*
 * fork() with the helper thread running: the child, which has no such
 * thread, gets one of its own (and an epoll fd of its own) when it waits
 * on the set, and its wait ends; the parent's set goes on waking.
 */
TEST_F(mcwait, the_parent_goes_on_after_fork)
{
	struct cond_sleeper s;
	int status;
	pid_t pid;

	RETURN_IF_SETUP_SKIPPED();
	EXPECT_EQ(-FI_ETIMEDOUT, fi_wait(self->w.ws, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int rc = fi_wait(self->w.ws, 50);

		_exit(rc == 0 || rc == -FI_ETIMEDOUT ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	ASSERT_EQ(0, cond_sleeper_start(&s, self, TIMEOUT_MS));
	nap();
	ASSERT_EQ(0, fi_cntr_add(self->w.cntr, 1));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	EXPECT_GT(TIMEOUT_MS, s.ms);
}

/*
 * A CQ and a counter opened with FI_WAIT_MUTEX_COND (no set named): each
 * has a set of its own; FI_GETWAIT gives its pair, and a thread waiting
 * on it the fi_poll(3) way, with fi_trywait() on the object, wakes for a
 * completion, and for a counter's change.
 */
struct obj_sleeper {
	pthread_t thread;
	struct fid_fabric *fabric;
	struct fid *fid;
	struct fid_cntr *cntr;	/* a counter: wait until it is non-zero */
	struct fid_cq *cq;	/* a CQ: wait until it holds a completion */
	struct fi_mutex_cond mc;
	int ret;
};

static bool obj_sleeper_done(struct obj_sleeper *s)
{
	if (s->cntr)
		return fi_cntr_read(s->cntr) > 0;
	return fi_trywait(s->fabric, &s->fid, 1) == -FI_EAGAIN;
}

static void *obj_sleeper_run(void *arg)
{
	struct obj_sleeper *s = arg;
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += TIMEOUT_MS / 1000;
	pthread_mutex_lock(s->mc.mutex);
	while (!rc && !obj_sleeper_done(s)) {
		/* A counter's fi_trywait() only resets: its value decides. */
		if (s->cntr && fi_trywait(s->fabric, &s->fid, 1))
			break;
		rc = pthread_cond_timedwait(s->mc.cond, s->mc.mutex, &until);
	}
	pthread_mutex_unlock(s->mc.mutex);
	s->ret = rc == ETIMEDOUT ? -FI_ETIMEDOUT : -rc;
	return NULL;
}

TEST(mutex_cond_cq_and_counter_have_sets_of_their_own)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_MUTEX_COND };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_MUTEX_COND };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_mutex_cond mc, mc2;
	struct fi_cq_tagged_entry e;
	struct kfab_test_fi a, b;
	struct obj_sleeper s;
	struct fid_cntr *cntr;
	enum fi_wait_obj obj;
	uint32_t v = 7, r = 0;
	fi_addr_t to_b;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!kfab_have_device())
		SKIP(return, "/dev/kfab absent: needs kfab.ko (VM)");
	if (!kfab_have_endpoints())
		SKIP(return, "kfab.ko without endpoints (KFAB_IOC_EP_OPEN)");
	ASSERT_EQ(0, _test_fi_side_open(&a, kfab_test_rdm_hints(), true));
	ASSERT_EQ(0, _test_fi_domain_open(&b, kfab_test_rdm_hints()));
	ASSERT_EQ(0, fi_av_open(b.domain, &av_attr, &b.av, NULL));
	ASSERT_EQ(0, fi_cq_open(b.domain, &cq_attr, &b.cq, NULL));
	ASSERT_EQ(0, fi_cntr_open(b.domain, &cntr_attr, &cntr, NULL));
	ASSERT_EQ(0, fi_endpoint(b.domain, b.info, &b.ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(b.ep, &b.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(b.ep, &b.cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(b.ep));
	ASSERT_EQ(1, kfab_test_fi_insert_peer(&a, &b, &to_b));

	EXPECT_EQ(0, fi_control(&b.cq->fid, FI_GETWAITOBJ, &obj));
	EXPECT_EQ(FI_WAIT_MUTEX_COND, obj);
	EXPECT_EQ(0, fi_control(&cntr->fid, FI_GETWAITOBJ, &obj));
	EXPECT_EQ(FI_WAIT_MUTEX_COND, obj);
	ASSERT_EQ(0, fi_control(&b.cq->fid, FI_GETWAIT, &mc));
	ASSERT_EQ(0, fi_control(&cntr->fid, FI_GETWAIT, &mc2));
	EXPECT_NE(NULL, mc.mutex);
	EXPECT_NE(NULL, mc.cond);
	EXPECT_NE(mc.mutex, mc2.mutex);	/* two objects, two sets */

	/* The CQ */
	ASSERT_EQ(0, fi_recv(b.ep, &r, sizeof(r), NULL, FI_ADDR_UNSPEC, NULL));
	s = (struct obj_sleeper){ .fabric = b.fabric, .fid = &b.cq->fid,
				  .cq = b.cq, .mc = mc, .ret = 1 };
	ASSERT_EQ(0, pthread_create(&s.thread, NULL, obj_sleeper_run, &s));
	nap();
	ASSERT_EQ(0, fi_send(a.ep, &v, sizeof(v), NULL, to_b, NULL));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	ASSERT_EQ(1, fi_cq_read(b.cq, &e, 1));
	EXPECT_EQ(7U, r);

	/* The counter */
	s = (struct obj_sleeper){ .fabric = b.fabric, .fid = &cntr->fid,
				  .cntr = cntr, .mc = mc2, .ret = 1 };
	ASSERT_EQ(0, pthread_create(&s.thread, NULL, obj_sleeper_run, &s));
	nap();
	ASSERT_EQ(0, fi_cntr_add(cntr, 2));
	ASSERT_EQ(0, pthread_join(s.thread, NULL));
	EXPECT_EQ(0, s.ret);
	/* Blocking reads of its own still work. */
	EXPECT_EQ(0, fi_cntr_wait(cntr, 2, TIMEOUT_MS));

	/* Each closes with its set. */
	EXPECT_EQ(0, fi_close(&b.ep->fid));
	b.ep = NULL;
	EXPECT_EQ(0, fi_close(&cntr->fid));
	EXPECT_EQ(0, fi_close(&b.cq->fid));
	b.cq = NULL;
	test_fi_close(&b);
	test_fi_close(&a);
}

TEST_HARNESS_MAIN
