// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: fid_cntr.  A counter is a kernel counter (KFAB_IOC_CNTR_OPEN)
 * whose values are mapped read-only into the process: fi_cntr_read() and
 * fi_cntr_readerr() read them under the kernel's seqcount (the protocol is
 * in uapi/linux/kfab.h) without a system call.  Changes go through
 * KFAB_IOC_CNTR_UPDATE; fi_cntr_wait() sleeps in KFAB_IOC_CNTR_WAIT, which
 * wakes every waiter on every change.  With FI_WAIT_FD the kernel also
 * signals an eventfd on every change, for applications that poll it.
 * FI_WAIT_NONE and FI_WAIT_YIELD counters wait by yielding the CPU.
 */
#include <sched.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "barrier.h"
#include "internal.h"

/**
 * struct shim_cntr - a fid_cntr
 * @cntr_fid: what libfabric sees
 * @domain: the parent
 * @fd: the fabric's device file
 * @id: the kernel's id of the counter
 * @wait_obj: FI_WAIT_NONE, FI_WAIT_FD, FI_WAIT_UNSPEC, FI_WAIT_YIELD,
 *	FI_WAIT_SET or FI_WAIT_MUTEX_COND
 * @efd: the eventfd (FI_WAIT_FD, FI_WAIT_SET), else -1
 * @wait_set: FI_WAIT_SET: the set @efd is in (wait.c), else NULL
 * @own_wait: FI_WAIT_MUTEX_COND: @wait_set, the counter's own (closed
 *	with it)
 * @map: the mapped values (read-only), @map_len bytes
 * @seq: the kernel's seqcount, in @map
 * @value: the success value, in @map
 * @err: the error value, in @map
 * @eps: the endpoints bound to the counter, progressed before every read
 */
struct shim_cntr {
	struct fid_cntr cntr_fid;
	struct shim_domain *domain;
	int fd;
	uint32_t id;
	enum fi_wait_obj wait_obj;
	int efd;
	struct shim_wait *wait_set;
	struct shim_wait *own_wait;
	void *map;
	size_t map_len;
	const uint32_t *seq;
	const uint64_t *value;
	const uint64_t *err;
	struct shim_ep_list eps;
	unsigned int poll_refs;	/* poll sets holding it (poll.c) */
};

static inline struct shim_cntr *to_shim_cntr(struct fid_cntr *cntr)
{
	return container_of(cntr, struct shim_cntr, cntr_fid);
}

/* Both values at one instant: a seqcount reader. */
static void shim_cntr_values(struct shim_cntr *cntr, uint64_t *value,
			     uint64_t *err)
{
	uint32_t seq;

	for (;;) {
		/* Pairs with the kernel's release of the closing seq. */
		seq = shim_load_acquire(cntr->seq);
		if (seq & 1) {
			sched_yield();
			continue;
		}
		*value = shim_read_once(cntr->value);
		*err = shim_read_once(cntr->err);
		/* Pairs with the kernel's smp_wmb() after the opening seq. */
		shim_smp_rmb();
		if (shim_read_once(cntr->seq) == seq)
			return;
	}
}

static uint64_t shim_cntr_read(struct fid_cntr *cntr_fid)
{
	struct shim_cntr *cntr = to_shim_cntr(cntr_fid);
	uint64_t value, err;

	shim_ep_list_progress(&cntr->eps);
	shim_cntr_values(cntr, &value, &err);
	return value;
}

static uint64_t shim_cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct shim_cntr *cntr = to_shim_cntr(cntr_fid);
	uint64_t value, err;

	shim_ep_list_progress(&cntr->eps);
	shim_cntr_values(cntr, &value, &err);
	return err;
}

static int shim_cntr_op(struct fid_cntr *cntr_fid, uint32_t op, uint64_t value)
{
	struct shim_cntr *cntr = to_shim_cntr(cntr_fid);

	return shim_dev_cntr_update(cntr->fd, cntr->id, op, value);
}

static int shim_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	return shim_cntr_op(cntr_fid, KFAB_CNTR_ADD, value);
}

static int shim_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	return shim_cntr_op(cntr_fid, KFAB_CNTR_SET, value);
}

static int shim_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	return shim_cntr_op(cntr_fid, KFAB_CNTR_ADD_ERR, value);
}

static int shim_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	return shim_cntr_op(cntr_fid, KFAB_CNTR_SET_ERR, value);
}

/*
 * fi_cntr_wait(): 0 once the value reaches @threshold, -FI_EAVAIL when the
 * error value changes meanwhile, -FI_ETIMEDOUT when @timeout ms pass.
 */
static int shim_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
			  int timeout)
{
	struct shim_cntr *cntr = to_shim_cntr(cntr_fid);
	uint64_t value, err, err0;
	struct timespec start;
	bool pending;
	int left, ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	shim_cntr_values(cntr, &value, &err0);
	for (;;) {
		/* Manual progress; see shim_cq_sreadfrom() for the slices. */
		pending = shim_ep_list_progress(&cntr->eps);
		shim_cntr_values(cntr, &value, &err);
		if (value >= threshold)
			return 0;
		if (err != err0)
			return -FI_EAVAIL;
		left = shim_timeout_left(timeout, &start);
		if (!left)
			return -FI_ETIMEDOUT;
		if (cntr->wait_obj == FI_WAIT_NONE ||
		    cntr->wait_obj == FI_WAIT_YIELD) {
			sched_yield();
			continue;
		}
		if (pending && (left < 0 || left > SHIM_PROGRESS_SLICE_MS))
			left = SHIM_PROGRESS_SLICE_MS;
		shim_lazy_sleep_begin();
		ret = shim_dev_cntr_wait(cntr->fd, cntr->id, threshold, err0,
					 left);
		shim_lazy_sleep_end();
		if (ret && ret != -EINTR && ret != -ETIMEDOUT)
			return ret;
		/* Woken, interrupted or timed out: the loop looks again. */
	}
}

static int shim_cntr_control(struct fid *fid, int command, void *arg)
{
	struct shim_cntr *cntr =
		container_of(fid, struct shim_cntr, cntr_fid.fid);

	switch (command) {
	case SHIM_CTRL_TRYWAIT:
		/*
		 * Every change signals the fd: once it is reset, the
		 * caller may block on it and wakes on the next change.
		 */
		if (cntr->efd < 0)
			return -FI_ENOSYS;
		shim_eventfd_reset(cntr->efd);
		return 0;
	case FI_GETWAIT:
		if (cntr->wait_set)
			return shim_wait_getwait(cntr->wait_set, arg);
		if (!arg)
			return -FI_EINVAL;
		if (cntr->efd < 0)
			return -FI_ENODATA;
		*(int *)arg = cntr->efd;
		return 0;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = cntr->wait_obj;
		return 0;
	case FI_GET_VAL:
		return shim_get_kernel_handle(arg, cntr->fd, cntr->id);
	default:
		return -FI_ENOSYS;
	}
}

static const struct fi_ops shim_cntr_fi_ops;

void shim_cntr_poll_ref(struct shim_cntr *cntr, int delta)
{
	__atomic_add_fetch(&cntr->poll_refs, delta, __ATOMIC_ACQ_REL);
}

struct shim_cntr *shim_cntr_from_fid(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_CNTR ||
	    fid->ops != &shim_cntr_fi_ops)
		return NULL;
	return container_of(fid, struct shim_cntr, cntr_fid.fid);
}

uint32_t shim_cntr_id(const struct shim_cntr *cntr)
{
	return cntr->id;
}

int shim_cntr_attach_ep(struct shim_cntr *cntr, struct shim_ep *ep)
{
	return shim_ep_list_add(&cntr->eps, ep);
}

void shim_cntr_detach_ep(struct shim_cntr *cntr, struct shim_ep *ep)
{
	shim_ep_list_del(&cntr->eps, ep);
}

static void shim_cntr_free(struct shim_cntr *cntr)
{
	if (cntr->wait_set)
		shim_wait_del(cntr->wait_set, &cntr->cntr_fid.fid);
	if (cntr->own_wait)
		shim_wait_close_own(cntr->own_wait);
	if (cntr->map)
		munmap(cntr->map, cntr->map_len);
	if (cntr->efd >= 0)
		close(cntr->efd);
	shim_ep_list_destroy(&cntr->eps);
	free(cntr);
}

static int shim_cntr_close(struct fid *fid)
{
	struct shim_cntr *cntr =
		container_of(fid, struct shim_cntr, cntr_fid.fid);
	int ret;

	/* Close the endpoints bound to it first, and the poll sets. */
	if (shim_ep_list_count(&cntr->eps) ||
	    __atomic_load_n(&cntr->poll_refs, __ATOMIC_ACQUIRE))
		return -FI_EBUSY;
	ret = shim_dev_destroy(cntr->fd, cntr->id);
	if (ret) {
		SHIM_WARN(CNTR, "cntr %u: KFAB_IOC_DESTROY: %s\n", cntr->id,
			  fi_strerror(-ret));
		return ret;
	}
	shim_cntr_free(cntr);
	return 0;
}

static const struct fi_ops shim_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_cntr_close,
	.bind = shim_no_bind,
	.control = shim_cntr_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

static const struct fi_ops_cntr shim_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = shim_cntr_read,
	.readerr = shim_cntr_readerr,
	.add = shim_cntr_add,
	.set = shim_cntr_set,
	.wait = shim_cntr_wait,
	.adderr = shim_cntr_adderr,
	.seterr = shim_cntr_seterr,
};

static int shim_cntr_check_attr(const struct fi_cntr_attr *attr)
{
	/*
	 * fi_peer(3): a provider without peer counters fails FI_PEER with
	 * -FI_EINVAL, as for CQs.  libfabric 1.17 has no fid_peer_cntr
	 * (peer/compat.h, SHIM_PEER_HAVE_CNTR) and kfab builds none.
	 */
	if (attr->flags & FI_PEER)
		return -FI_EINVAL;
	if (attr->flags)
		return -FI_EBADFLAGS;
	if (attr->events != FI_CNTR_EVENTS_COMP)
		return -FI_ENOSYS;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_YIELD:
	case FI_WAIT_SET:	/* the set: shim_cntr_open() */
	case FI_WAIT_MUTEX_COND:	/* a set of its own: shim_cntr_open() */
		return 0;
	default:
		return -FI_EINVAL;
	}
}

/**
 * shim_cntr_open() - struct fi_ops_domain.cntr_open: fi_cntr_open() for kfab
 * @domain: a kfab domain
 * @attr: the attributes, or NULL for the defaults: events
 *	FI_CNTR_EVENTS_COMP; wait objects NONE, UNSPEC, FD, YIELD, SET (a
 *	kfab wait set of the domain's fabric), MUTEX_COND (a set of its own,
 *	wait.c); no flags
 * @cntr_fid: out: the new counter
 * @context: the application's context for the fid
 *
 * Return: 0; -FI_EINVAL (a wait_set that is not kfab's or of another
 * fabric among the reasons), -FI_EBADFLAGS, -FI_ENOSYS (other events),
 * -FI_ENOMEM, or the kernel's -errno.
 */
int shim_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr_fid, void *context)
{
	static const struct fi_cntr_attr defaults = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = FI_WAIT_NONE,
	};
	struct shim_domain *dom = to_shim_domain(domain);
	struct kfab_cntr_open cmd = { 0 };
	struct shim_wait *ws = NULL;
	struct shim_cntr *cntr;
	int ret;

	if (!cntr_fid)
		return -FI_EINVAL;
	if (!attr)
		attr = (struct fi_cntr_attr *)&defaults;
	ret = shim_cntr_check_attr(attr);
	if (ret)
		return ret;
	if (attr->wait_obj == FI_WAIT_SET) {
		ws = shim_wait_from_fid(attr->wait_set, dom->fabric);
		if (!ws)
			return -FI_EINVAL;
	}
	if (attr->wait_obj == FI_WAIT_MUTEX_COND) {
		ret = shim_wait_open_own(dom->fabric, &ws);
		if (ret)
			return ret;
	}

	cntr = calloc(1, sizeof(*cntr));
	ret = cntr ? shim_ep_list_init(&cntr->eps) : -FI_ENOMEM;
	if (ret) {
		free(cntr);
		if (attr->wait_obj == FI_WAIT_MUTEX_COND)
			shim_wait_close_own(ws);
		return ret;
	}
	if (attr->wait_obj == FI_WAIT_MUTEX_COND)
		cntr->own_wait = ws;
	cntr->efd = -1;
	cntr->domain = dom;
	cntr->eps.serial = dom->serial;
	cntr->fd = dom->fabric->fd;
	cntr->wait_obj = attr->wait_obj;
	if (attr->wait_obj == FI_WAIT_FD || ws) {
		cntr->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (cntr->efd < 0) {
			ret = -errno;
			goto err_free;
		}
		cmd.flags = KFAB_CNTR_OPEN_EVENTFD;
		cmd.eventfd = cntr->efd;
	}
	cmd.domain_id = dom->id;
	ret = shim_dev_cntr_open(cntr->fd, &cmd);
	if (ret) {
		SHIM_WARN(CNTR, "KFAB_IOC_CNTR_OPEN: %s\n", fi_strerror(-ret));
		goto err_free;
	}
	cntr->id = cmd.out_cntr_id;
	if (cmd.out_off_seq + sizeof(uint32_t) > cmd.out_region.size ||
	    cmd.out_off_value + sizeof(uint64_t) > cmd.out_region.size ||
	    cmd.out_off_err + sizeof(uint64_t) > cmd.out_region.size)
		ret = -FI_EOTHER;
	else
		ret = shim_dev_mmap(cntr->fd, cmd.out_region.offset,
				    cmd.out_region.size, false, &cntr->map);
	if (ret) {
		cntr->map = NULL;
		SHIM_WARN(CNTR, "cntr %u: mapping the values: %s\n", cntr->id,
			  fi_strerror(-ret));
		shim_dev_destroy(cntr->fd, cntr->id);
		goto err_free;
	}
	cntr->map_len = cmd.out_region.size;
	cntr->seq = (const uint32_t *)((char *)cntr->map + cmd.out_off_seq);
	cntr->value = (const uint64_t *)((char *)cntr->map + cmd.out_off_value);
	cntr->err = (const uint64_t *)((char *)cntr->map + cmd.out_off_err);

	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = (struct fi_ops *)&shim_cntr_fi_ops;
	cntr->cntr_fid.ops = (struct fi_ops_cntr *)&shim_cntr_ops;
	if (ws) {
		ret = shim_wait_add(ws, &cntr->cntr_fid.fid, SHIM_WAIT_CNTR,
				    cntr->efd);
		if (ret) {
			shim_dev_destroy(cntr->fd, cntr->id);
			goto err_free;
		}
		cntr->wait_set = ws;
	}
	*cntr_fid = &cntr->cntr_fid;
	return 0;

err_free:
	shim_cntr_free(cntr);
	return ret;
}
