// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: the ring poller (FI_KFAB_SQ_POLL; Documentation/ep.rst, "The
 * ring poller").  With it set, each fabric lends one thread of the
 * library to the kernel (KFAB_IOC_SQ_POLL), and every endpoint it enables
 * asks the kernel to watch its ring (KFAB_IOC_SQ_WATCH).  The kernel then
 * takes requests as soon as they are published, and a post costs no
 * system call: only a look at the ring's flags word, whose NEED_WAKEUP
 * says the poller is parked and the poster must ring for itself.
 *
 * Worth it where a CPU is spare (the poller spins for FI_KFAB_SQ_POLL
 * microseconds after its last work, then parks); off by default.
 *
 * The thread blocks every signal, so the program's signals go to its own
 * threads and never interrupt the poll; a fatal one still ends it.  The
 * fabric's close stops it (KFAB_SQ_POLL_STOP) and joins it.  A child of
 * fork() has no poller thread and leaves its parent's alone.
 */
#include <signal.h>
#include <unistd.h>

#include "barrier.h"
#include "internal.h"

static void *shim_sq_poll_thread(void *arg)
{
	struct shim_fabric *fab = arg;
	int ret;

	/* -EINTR only for a signal it cannot block: go on until stopped. */
	do {
		ret = shim_dev_sq_poll(fab->fd, shim_sq_poll_us(), false);
	} while (ret == -EINTR);
	if (ret)
		SHIM_INFO(CORE, "KFAB_IOC_SQ_POLL: %s; posters ring for themselves\n",
			  fi_strerror(-ret));
	return NULL;
}

/* The fabric's poller, started once; 0 or -FI_* when there is none. */
static int shim_sq_poll_start(struct shim_fabric *fab)
{
	sigset_t all, old;
	int ret = 0;

	pthread_mutex_lock(&fab->lock);
	if (fab->poll_pid == getpid())
		goto out;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&fab->poll_thread, NULL, shim_sq_poll_thread, fab);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		ret = -FI_ENOMEM;
		goto out;
	}
	fab->poll_pid = getpid();
out:
	pthread_mutex_unlock(&fab->lock);
	return ret;
}

void shim_sq_poll_stop(struct shim_fabric *fab)
{
	if (fab->poll_pid != getpid())
		return;
	(void)shim_dev_sq_poll(fab->fd, 0, true);
	pthread_join(fab->poll_thread, NULL);
	fab->poll_pid = 0;
}

/*
 * Have the fabric's poller watch @ring: with FI_KFAB_SQ_POLL set and a
 * module that has one.  Whatever fails leaves the ring as it was.
 */
bool shim_ring_watch(struct shim_ring *ring, struct shim_fabric *fab)
{
	int ret;

	if (!shim_sq_poll_us() || !ring->flags ||
	    !(fab->abi.features & KFAB_FEATURE_SQ_POLL))
		return false;
	ret = shim_sq_poll_start(fab);
	if (!ret)
		ret = shim_dev_sq_watch(ring->fd, ring->id, false);
	if (ret) {
		SHIM_INFO(EP_CTRL, "ring of %u: no poller: %s\n", ring->id,
			  fi_strerror(-ret));
		return false;
	}
	shim_write_once(&ring->watched, true);
	return true;
}

/* Before the ring's object goes: the poller may hold it for a moment. */
void shim_ring_unwatch(struct shim_ring *ring)
{
	if (!ring->watched)
		return;
	shim_write_once(&ring->watched, false);
	(void)shim_dev_sq_watch(ring->fd, ring->id, true);
}
