// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: fid_poll, poll sets (fi_poll(3)).
 *
 * A poll set is a user-space list of kfab CQs and counters of one domain.
 * fi_poll() progresses each (the doorbells of their endpoints, as a read
 * does) and answers the contexts of the CQs that hold a completion or an
 * error, and of the counters whose value or error count changed since the
 * last fi_poll() saw them: fi_poll(3)'s "might have occurred", with no
 * false negatives.  Nothing is read from a CQ or counter.
 *
 * A member cannot be closed while it is one (-FI_EBUSY, shim_cq_poll_ref()
 * and shim_cntr_poll_ref()), nor the poll set while it has members.
 *
 * Locking: @lock protects the member list; fi_poll() holds it while it
 * progresses the members, which take only their own locks.
 */
#include <stdlib.h>

#include <rdma/fi_domain.h>

#include "internal.h"

/**
 * struct shim_poll_member - a CQ or counter in a poll set
 * @next: the list
 * @fid: the member
 * @cq, @cntr: the one it is
 * @value, @err: a counter's values when fi_poll() last looked
 */
struct shim_poll_member {
	struct shim_poll_member *next;
	struct fid *fid;
	struct shim_cq *cq;
	struct shim_cntr *cntr;
	uint64_t value, err;
};

/**
 * struct shim_poll - a fid_poll
 * @poll_fid: what libfabric sees
 * @domain: the domain its members belong to
 * @lock: protects @members
 * @members: the CQs and counters, newest first
 */
struct shim_poll {
	struct fid_poll poll_fid;
	struct shim_domain *domain;
	pthread_mutex_t lock;
	struct shim_poll_member *members;
};

static struct shim_poll *to_shim_poll(struct fid_poll *poll_fid)
{
	return container_of(poll_fid, struct shim_poll, poll_fid);
}

static void shim_poll_ref(struct shim_poll_member *m, int delta)
{
	if (m->cq)
		shim_cq_poll_ref(m->cq, delta);
	else
		shim_cntr_poll_ref(m->cntr, delta);
}

/* fi_poll_add(): a kfab CQ or counter, once; flags 0. */
static int shim_poll_add(struct fid_poll *poll_fid, struct fid *event_fid,
			 uint64_t flags)
{
	struct shim_poll *ps = to_shim_poll(poll_fid);
	struct shim_poll_member *m, *it;
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (!event_fid)
		return -FI_EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->fid = event_fid;
	m->cq = shim_cq_from_fid(event_fid);
	if (!m->cq)
		m->cntr = shim_cntr_from_fid(event_fid);
	if (!m->cq && !m->cntr) {
		free(m);
		return -FI_EINVAL;
	}
	if (m->cntr) {
		m->value = fi_cntr_read(container_of(event_fid,
						     struct fid_cntr, fid));
		m->err = fi_cntr_readerr(container_of(event_fid,
						      struct fid_cntr, fid));
	}
	pthread_mutex_lock(&ps->lock);
	for (it = ps->members; it; it = it->next)
		if (it->fid == event_fid)
			ret = -FI_EALREADY;
	if (!ret) {
		shim_poll_ref(m, 1);
		m->next = ps->members;
		ps->members = m;
	}
	pthread_mutex_unlock(&ps->lock);
	if (ret)
		free(m);
	return ret;
}

/* fi_poll_del(): -FI_ENOENT for what is not a member. */
static int shim_poll_del(struct fid_poll *poll_fid, struct fid *event_fid,
			 uint64_t flags)
{
	struct shim_poll *ps = to_shim_poll(poll_fid);
	struct shim_poll_member **pp, *m = NULL;

	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&ps->lock);
	for (pp = &ps->members; *pp; pp = &(*pp)->next) {
		if ((*pp)->fid == event_fid) {
			m = *pp;
			*pp = m->next;
			break;
		}
	}
	pthread_mutex_unlock(&ps->lock);
	if (!m)
		return -FI_ENOENT;
	shim_poll_ref(m, -1);
	free(m);
	return 0;
}

static bool shim_poll_member_ready(struct shim_poll_member *m)
{
	struct fid_cntr *cntr;
	uint64_t value, err;

	if (m->cq)
		return shim_cq_poll_ready(m->cq);
	cntr = container_of(m->fid, struct fid_cntr, fid);
	value = fi_cntr_read(cntr);
	err = fi_cntr_readerr(cntr);
	if (value == m->value && err == m->err)
		return false;
	m->value = value;
	m->err = err;
	return true;
}

/* fi_poll(): the contexts of members with news, at most @count. */
static int shim_poll_poll(struct fid_poll *poll_fid, void **context,
			  int count)
{
	struct shim_poll *ps = to_shim_poll(poll_fid);
	struct shim_poll_member *m;
	int n = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	pthread_mutex_lock(&ps->lock);
	for (m = ps->members; m && n < count; m = m->next)
		if (shim_poll_member_ready(m))
			context[n++] = m->fid->context;
	pthread_mutex_unlock(&ps->lock);
	return n;
}

/* fi_poll(3): "must not be associated with any other resources". */
static int shim_poll_close(struct fid *fid)
{
	struct shim_poll *ps = container_of(fid, struct shim_poll,
					    poll_fid.fid);
	bool busy;

	pthread_mutex_lock(&ps->lock);
	busy = ps->members;
	pthread_mutex_unlock(&ps->lock);
	if (busy)
		return -FI_EBUSY;
	pthread_mutex_destroy(&ps->lock);
	free(ps);
	return 0;
}

static const struct fi_ops shim_poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_poll_close,
	.bind = shim_no_bind,
	.control = shim_no_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

static const struct fi_ops_poll shim_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = shim_poll_poll,
	.poll_add = shim_poll_add,
	.poll_del = shim_poll_del,
};

/**
 * shim_poll_open() - fi_poll_open()
 * @domain: a kfab domain
 * @attr: flags 0 (reserved by fi_poll(3)); -FI_EINVAL without it
 * @pollset: out
 *
 * Return: 0, -FI_EINVAL, -FI_EBADFLAGS or -FI_ENOMEM.
 */
int shim_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **pollset)
{
	struct shim_poll *ps;
	int ret;

	if (!attr || !pollset)
		return -FI_EINVAL;
	if (attr->flags)
		return -FI_EBADFLAGS;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	ret = -pthread_mutex_init(&ps->lock, NULL);
	if (ret) {
		free(ps);
		return ret;
	}
	ps->domain = to_shim_domain(domain);
	ps->poll_fid.fid.fclass = FI_CLASS_POLL;
	ps->poll_fid.fid.ops = (struct fi_ops *)&shim_poll_fi_ops;
	ps->poll_fid.ops = (struct fi_ops_poll *)&shim_poll_ops;
	*pollset = &ps->poll_fid;
	return 0;
}
