// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: the ioctl wrappers of /dev/kfab.  This is the only file that
 * talks to the device (ioctls and mmap); everything else calls these.
 *
 * Each command struct is zero-initialised with .size set to the struct this
 * library was built with (uapi/linux/kfab.h); the kernel accepts any size
 * from the command's first version on.  Every wrapper returns 0 or -errno,
 * which is also a libfabric error code (fi_errno.h's FI_E* equal errno).
 */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "barrier.h"
#include "internal.h"

/*
 * Memory the kernel writes through pointers inside a command (the results
 * of KFAB_IOC_AV_INSERT, an error's data) is invisible to valgrind, which would call it
 * uninitialised forever after.  Under valgrind, say it is written; the
 * client request is a few no-op instructions otherwise.
 */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define SHIM_MEM_WRITTEN(p, n)	VALGRIND_MAKE_MEM_DEFINED((p), (n))
#define SHIM_UNDER_VALGRIND()	RUNNING_ON_VALGRIND
#endif
#endif
#ifndef SHIM_MEM_WRITTEN
#define SHIM_MEM_WRITTEN(p, n)	((void)(p), (void)(n))
#define SHIM_UNDER_VALGRIND()	0
#endif

int shim_dev_open(const char *path, int *fd)
{
	int ret = open(path, O_RDWR | O_CLOEXEC);

	if (ret < 0)
		return -errno;
	*fd = ret;
	return 0;
}

void shim_dev_close(int fd)
{
	/* The kernel destroys what is left in the file's context. */
	close(fd);
}

static int shim_dev_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

int shim_dev_query(int fd, struct kfab_query *query)
{
	struct kfab_query cmd = { .size = sizeof(cmd) };
	int ret = shim_dev_ioctl(fd, KFAB_IOC_QUERY, &cmd);

	if (!ret)
		*query = cmd;
	return ret;
}

int shim_dev_domain_alloc(int fd, uint32_t *domain_id)
{
	struct kfab_domain_alloc cmd = { .size = sizeof(cmd) };
	int ret = shim_dev_ioctl(fd, KFAB_IOC_DOMAIN_ALLOC, &cmd);

	if (!ret)
		*domain_id = cmd.out_domain_id;
	return ret;
}

int shim_dev_destroy(int fd, uint32_t id)
{
	struct kfab_destroy cmd = { .size = sizeof(cmd), .id = id };

	return shim_dev_ioctl(fd, KFAB_IOC_DESTROY, &cmd);
}

int shim_dev_av_open(int fd, struct kfab_av_open *cmd)
{
	cmd->size = sizeof(*cmd);
	return shim_dev_ioctl(fd, KFAB_IOC_AV_OPEN, cmd);
}

int shim_dev_av_insert(int fd, uint32_t av_id, const struct kfab_addr *addrs,
		       uint32_t count, uint32_t *indices, int32_t *errors,
		       uint32_t *inserted)
{
	struct kfab_av_insert cmd = {
		.size = sizeof(cmd),
		.av_id = av_id,
		.count = count,
		.addrs = (uintptr_t)addrs,
		.indices = (uintptr_t)indices,
		.errors = (uintptr_t)errors,
	};
	int ret = shim_dev_ioctl(fd, KFAB_IOC_AV_INSERT, &cmd);

	if (!ret) {
		*inserted = cmd.out_inserted;
		SHIM_MEM_WRITTEN(indices, count * sizeof(*indices));
		SHIM_MEM_WRITTEN(errors, count * sizeof(*errors));
	}
	return ret;
}

int shim_dev_av_remove(int fd, uint32_t av_id, const uint32_t *indices,
		       uint32_t count)
{
	struct kfab_av_remove cmd = {
		.size = sizeof(cmd),
		.av_id = av_id,
		.count = count,
		.indices = (uintptr_t)indices,
	};

	return shim_dev_ioctl(fd, KFAB_IOC_AV_REMOVE, &cmd);
}

int shim_dev_cq_open(int fd, struct kfab_cq_open *cmd)
{
	cmd->size = sizeof(*cmd);
	return shim_dev_ioctl(fd, KFAB_IOC_CQ_OPEN, cmd);
}

int shim_dev_cq_drain(int fd, uint32_t cq_id, uint32_t *overflow)
{
	struct kfab_cq_drain cmd = { .size = sizeof(cmd), .cq_id = cq_id };
	int ret = shim_dev_ioctl(fd, KFAB_IOC_CQ_DRAIN, &cmd);

	if (!ret && overflow)
		*overflow = cmd.out_overflow;
	return ret;
}

int shim_dev_cq_readerr(int fd, struct kfab_cq_readerr *cmd)
{
	int ret;

	cmd->size = sizeof(*cmd);
	ret = shim_dev_ioctl(fd, KFAB_IOC_CQ_READERR, cmd);
	if (!ret && cmd->err_data)
		SHIM_MEM_WRITTEN((void *)(uintptr_t)cmd->err_data,
				 cmd->err_data_size);
	return ret;
}

int shim_dev_cq_help(int fd, uint32_t cq_id, uint64_t *chunks)
{
	struct kfab_cq_help cmd = { .size = sizeof(cmd), .cq_id = cq_id };
	int ret = shim_dev_ioctl(fd, KFAB_IOC_CQ_HELP, &cmd);

	if (!ret && chunks)
		*chunks = cmd.out_chunks;
	return ret;
}

int shim_dev_cntr_open(int fd, struct kfab_cntr_open *cmd)
{
	cmd->size = sizeof(*cmd);
	return shim_dev_ioctl(fd, KFAB_IOC_CNTR_OPEN, cmd);
}

int shim_dev_cntr_update(int fd, uint32_t cntr_id, uint32_t op,
			 uint64_t value)
{
	struct kfab_cntr_update cmd = {
		.size = sizeof(cmd), .cntr_id = cntr_id, .op = op,
		.value = value,
	};

	return shim_dev_ioctl(fd, KFAB_IOC_CNTR_UPDATE, &cmd);
}

int shim_dev_cntr_wait(int fd, uint32_t cntr_id, uint64_t threshold,
		       uint64_t err, int timeout_ms)
{
	struct kfab_cntr_wait cmd = {
		.size = sizeof(cmd), .cntr_id = cntr_id,
		.timeout_ms = timeout_ms, .threshold = threshold, .err = err,
	};

	return shim_dev_ioctl(fd, KFAB_IOC_CNTR_WAIT, &cmd);
}

/* A region of the device's file: MAP_SHARED, so the kernel's writes show. */
int shim_dev_mmap(int fd, uint64_t offset, size_t len, bool writable,
		  void **addr)
{
	void *p = mmap(NULL, len, PROT_READ | (writable ? PROT_WRITE : 0),
		       MAP_SHARED, fd, (off_t)offset);

	if (p == MAP_FAILED)
		return -errno;
	*addr = p;
	return 0;
}

int shim_dev_ep_open(int fd, struct kfab_ep_open *cmd)
{
	cmd->size = sizeof(*cmd);
	return shim_dev_ioctl(fd, KFAB_IOC_EP_OPEN, cmd);
}

int shim_dev_ep_bind(int fd, uint32_t ep_id, uint32_t obj_id, uint32_t flags)
{
	struct kfab_ep_bind cmd = {
		.size = sizeof(cmd),
		.flags = flags,
		.ep_id = ep_id,
		.obj_id = obj_id,
	};

	return shim_dev_ioctl(fd, KFAB_IOC_EP_BIND, &cmd);
}

int shim_dev_ep_enable(int fd, uint32_t ep_id)
{
	struct kfab_ep_enable cmd = { .size = sizeof(cmd), .ep_id = ep_id };

	return shim_dev_ioctl(fd, KFAB_IOC_EP_ENABLE, &cmd);
}

/*
 * KFAB_IOC_RING unless the first -ENOTTY said the module is older, or
 * valgrind runs us: it knows no integer-argument ioctl of ours and warns
 * about each, so it gets the struct form, which it can check.
 */
static int shim_dev_ring = -1;

static bool shim_dev_use_ring(void)
{
	int use = shim_read_once(&shim_dev_ring);

	if (use < 0) {
		use = !SHIM_UNDER_VALGRIND();
		shim_write_once(&shim_dev_ring, use);
	}
	return use;
}

int shim_dev_doorbell(int fd, uint32_t obj_id, uint32_t *done)
{
	struct kfab_doorbell cmd = { .size = sizeof(cmd), .obj_id = obj_id };
	int ret;

	/* No struct to copy in and out: the cheaper call where it exists. */
	if (shim_dev_use_ring()) {
		ret = ioctl(fd, KFAB_IOC_RING, (unsigned long)obj_id);
		if (ret >= 0) {
			if (done)
				*done = (uint32_t)ret;
			return 0;
		}
		if (errno != ENOTTY)
			return -errno;
		shim_write_once(&shim_dev_ring, 0);
	}
	ret = shim_dev_ioctl(fd, KFAB_IOC_DOORBELL, &cmd);
	if (!ret && done)
		*done = cmd.out_done;
	return ret;
}

int shim_dev_sq_watch(int fd, uint32_t obj_id, bool remove)
{
	struct kfab_sq_watch cmd = {
		.size = sizeof(cmd), .obj_id = obj_id,
		.flags = remove ? KFAB_SQ_WATCH_REMOVE : 0,
	};

	return shim_dev_ioctl(fd, KFAB_IOC_SQ_WATCH, &cmd);
}

/* Blocks the calling thread until stopped (or a signal: -EINTR). */
int shim_dev_sq_poll(int fd, uint32_t idle_us, bool stop)
{
	struct kfab_sq_poll cmd = {
		.size = sizeof(cmd), .idle_us = idle_us,
		.flags = stop ? KFAB_SQ_POLL_STOP : 0,
	};

	return shim_dev_ioctl(fd, KFAB_IOC_SQ_POLL, &cmd);
}

int shim_dev_cancel(int fd, uint32_t obj_id, uint64_t context)
{
	struct kfab_cancel cmd = {
		.size = sizeof(cmd), .obj_id = obj_id, .context = context,
	};

	return shim_dev_ioctl(fd, KFAB_IOC_CANCEL, &cmd);
}

int shim_dev_rx_buffered(int fd, struct kfab_rx_buffered *cmd)
{
	cmd->size = sizeof(*cmd);
	return shim_dev_ioctl(fd, KFAB_IOC_RX_BUFFERED, cmd);
}

int shim_dev_srx_open(int fd, struct kfab_srx_open *cmd)
{
	cmd->size = sizeof(*cmd);
	return shim_dev_ioctl(fd, KFAB_IOC_SRX_OPEN, cmd);
}
