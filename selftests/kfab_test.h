/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What kfab's selftests share: a helper per ioctl command, the setup
 * sequences more than one test file needs (raw and through libfabric),
 * and probes for what the running module offers.  A test file includes
 * the harness (and <rdma/fabric.h>, if it uses libfabric) first.
 * Documentation/testing.rst says which helper does what.
 */
#ifndef KFAB_TEST_H
#define KFAB_TEST_H

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/kfab.h>

#define KFAB_DEV "/dev/kfab"
#define KFAB_SYSFS "/sys/class/misc/kfab"

/*
 * The 6.1 harness runs the test body even when FIXTURE_SETUP() called
 * SKIP(); a test whose setup may skip starts with this.
 */
#define RETURN_IF_SETUP_SKIPPED() do {			\
		if (_metadata->skip)			\
			return;				\
	} while (0)

static inline int kfab_open(void)
{
	return open(KFAB_DEV, O_RDWR | O_CLOEXEC);
}

/* ioctl() returning -errno, so ASSERT_EQ(-EINVAL, ...) reads naturally */
static inline int kfab_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/*
 * One helper per command of uapi/linux/kfab.h, in the style of iommufd's
 * selftests, in three forms with the same arguments:
 *
 *   _test_cmd_<cmd>(fd, ...)   fills the struct (size included), issues the
 *                              command, copies the outputs where the
 *                              pointers say (NULL: not wanted, unless the
 *                              helper says otherwise) and returns 0 or
 *                              -errno.  Usable anywhere: forked children,
 *                              threads, fault-injection walks.
 *   test_cmd_<cmd>(fd, ...)    the same inside a TEST/TEST_F body or a
 *                              helper that has _metadata: ASSERTs success.
 *   test_err_<cmd>(errno, fd, ...)  ASSERTs that exact failure.
 *
 * Tests of the ABI's own rules (sizes, flags, reserved fields) fill the
 * struct by hand and call kfab_ioctl(); KFAB_IOC_TEST_FAULT has no helper
 * here on purpose (its callers own it).
 */

static inline int _test_cmd_query(int fd, struct kfab_query *out)
{
	struct kfab_query cmd = { .size = sizeof(cmd) };
	int rc = kfab_ioctl(fd, KFAB_IOC_QUERY, &cmd);

	if (out)
		*out = cmd;
	return rc;
}

static inline int _test_cmd_destroy(int fd, uint32_t id)
{
	struct kfab_destroy cmd = { .size = sizeof(cmd), .id = id };

	return kfab_ioctl(fd, KFAB_IOC_DESTROY, &cmd);
}

static inline int _test_cmd_domain_alloc(int fd, uint32_t *out_id)
{
	struct kfab_domain_alloc cmd = { .size = sizeof(cmd) };
	int rc = kfab_ioctl(fd, KFAB_IOC_DOMAIN_ALLOC, &cmd);

	if (!rc && out_id)
		*out_id = cmd.out_domain_id;
	return rc;
}

static inline int _test_cmd_doorbell(int fd, uint32_t obj_id,
				     uint32_t *out_done)
{
	struct kfab_doorbell cmd = { .size = sizeof(cmd), .obj_id = obj_id };
	int rc = kfab_ioctl(fd, KFAB_IOC_DOORBELL, &cmd);

	if (out_done)
		*out_done = cmd.out_done;
	return rc;
}

/* KFAB_IOC_RING: the entries consumed, or -errno (@id may be any value). */
static inline int _test_cmd_ring(int fd, unsigned long id)
{
	int rc = ioctl(fd, KFAB_IOC_RING, id);

	return rc < 0 ? -errno : rc;
}

static inline int _test_cmd_cancel(int fd, uint32_t obj_id, uint64_t context)
{
	struct kfab_cancel cmd = { .size = sizeof(cmd), .obj_id = obj_id,
				   .context = context };

	return kfab_ioctl(fd, KFAB_IOC_CANCEL, &cmd);
}

/*
 * AV_OPEN has too many inputs for positions: @cmd comes with its named
 * fields filled (domain_id, type, name, flags, ...); the size is set here
 * and the answer lands in @cmd.  @out_av_id may be NULL.
 */
static inline int _test_cmd_av_open(int fd, struct kfab_av_open *cmd,
				    uint32_t *out_av_id)
{
	int rc;

	cmd->size = sizeof(*cmd);
	rc = kfab_ioctl(fd, KFAB_IOC_AV_OPEN, cmd);
	if (!rc && out_av_id)
		*out_av_id = cmd->out_av_id;
	return rc;
}

static inline int _test_cmd_av_insert(int fd, uint32_t av_id,
				      const struct kfab_addr *addrs,
				      uint32_t count, uint32_t *indices,
				      int32_t *errors, uint32_t *out_inserted)
{
	struct kfab_av_insert cmd = {
		.size = sizeof(cmd),
		.av_id = av_id,
		.count = count,
		.addrs = (uintptr_t)addrs,
		.indices = (uintptr_t)indices,
		.errors = (uintptr_t)errors,
	};
	int rc = kfab_ioctl(fd, KFAB_IOC_AV_INSERT, &cmd);

	if (out_inserted)
		*out_inserted = cmd.out_inserted;
	return rc;
}

static inline int _test_cmd_av_remove(int fd, uint32_t av_id,
				      const uint32_t *indices, uint32_t count)
{
	struct kfab_av_remove cmd = {
		.size = sizeof(cmd),
		.av_id = av_id,
		.count = count,
		.indices = (uintptr_t)indices,
	};

	return kfab_ioctl(fd, KFAB_IOC_AV_REMOVE, &cmd);
}

static inline int _test_cmd_av_unlink(int fd, const char *name)
{
	struct kfab_av_unlink cmd = { .size = sizeof(cmd),
				      .name = (uintptr_t)name };

	return kfab_ioctl(fd, KFAB_IOC_AV_UNLINK, &cmd);
}

/* @flags: KFAB_CQ_OPEN_PAYLOAD or 0 (an eventfd wants the raw struct). */
static inline int _test_cmd_cq_open(int fd, uint32_t domain_id,
				    uint32_t entries, uint32_t flags,
				    uint32_t *out_cq_id,
				    struct kfab_cq_layout *out_ring)
{
	struct kfab_cq_open cmd = { .size = sizeof(cmd), .flags = flags,
				    .domain_id = domain_id,
				    .entries = entries };
	int rc = kfab_ioctl(fd, KFAB_IOC_CQ_OPEN, &cmd);

	if (!rc && out_cq_id)
		*out_cq_id = cmd.out_cq_id;
	if (!rc && out_ring)
		*out_ring = cmd.out_ring;
	return rc;
}

static inline int _test_cmd_cq_drain(int fd, uint32_t cq_id,
				     uint32_t *out_overflow)
{
	struct kfab_cq_drain cmd = { .size = sizeof(cmd), .cq_id = cq_id };
	int rc = kfab_ioctl(fd, KFAB_IOC_CQ_DRAIN, &cmd);

	if (out_overflow)
		*out_overflow = cmd.out_overflow;
	return rc;
}

/* The whole answer lands in @out, which must not be NULL. */
static inline int _test_cmd_cq_readerr(int fd, uint32_t cq_id,
				       void *err_data, uint32_t err_data_size,
				       struct kfab_cq_readerr *out)
{
	*out = (struct kfab_cq_readerr){ .size = sizeof(*out), .cq_id = cq_id,
					 .err_data = (uintptr_t)err_data,
					 .err_data_size = err_data_size };
	return kfab_ioctl(fd, KFAB_IOC_CQ_READERR, out);
}

/* @out (may be NULL): the whole answer, for the region and offsets. */
static inline int _test_cmd_cntr_open(int fd, uint32_t domain_id,
				      uint32_t *out_cntr_id,
				      struct kfab_cntr_open *out)
{
	struct kfab_cntr_open cmd = { .size = sizeof(cmd),
				      .domain_id = domain_id };
	int rc = kfab_ioctl(fd, KFAB_IOC_CNTR_OPEN, &cmd);

	if (!rc && out_cntr_id)
		*out_cntr_id = cmd.out_cntr_id;
	if (out)
		*out = cmd;
	return rc;
}

static inline int _test_cmd_cntr_update(int fd, uint32_t cntr_id,
					enum kfab_cntr_op op, uint64_t value,
					uint64_t *out_value, uint64_t *out_err)
{
	struct kfab_cntr_update cmd = { .size = sizeof(cmd),
					.cntr_id = cntr_id, .op = op,
					.value = value };
	int rc = kfab_ioctl(fd, KFAB_IOC_CNTR_UPDATE, &cmd);

	if (out_value)
		*out_value = cmd.out_value;
	if (out_err)
		*out_err = cmd.out_err;
	return rc;
}

/*
 * CNTR_WAIT has inputs that read best by name too: @cmd comes with
 * cntr_id, threshold, err and timeout_ms filled; the answer lands in it.
 */
static inline int _test_cmd_cntr_wait(int fd, struct kfab_cntr_wait *cmd)
{
	cmd->size = sizeof(*cmd);
	return kfab_ioctl(fd, KFAB_IOC_CNTR_WAIT, cmd);
}

/* An RDM endpoint; @out (may be NULL): the whole answer (address, ring). */
static inline int _test_cmd_ep_open(int fd, uint32_t domain_id,
				    uint32_t sq_entries, uint32_t *out_ep_id,
				    struct kfab_ep_open *out)
{
	struct kfab_ep_open cmd = { .size = sizeof(cmd),
				    .domain_id = domain_id,
				    .type = KFAB_EP_TYPE_RDM,
				    .sq_entries = sq_entries };
	int rc = kfab_ioctl(fd, KFAB_IOC_EP_OPEN, &cmd);

	if (!rc && out_ep_id)
		*out_ep_id = cmd.out_ep_id;
	if (out)
		*out = cmd;
	return rc;
}

static inline int _test_cmd_ep_bind(int fd, uint32_t ep_id, uint32_t obj_id,
				    uint32_t flags)
{
	struct kfab_ep_bind cmd = { .size = sizeof(cmd), .flags = flags,
				    .ep_id = ep_id, .obj_id = obj_id };

	return kfab_ioctl(fd, KFAB_IOC_EP_BIND, &cmd);
}

static inline int _test_cmd_ep_enable(int fd, uint32_t ep_id)
{
	struct kfab_ep_enable cmd = { .size = sizeof(cmd), .ep_id = ep_id };

	return kfab_ioctl(fd, KFAB_IOC_EP_ENABLE, &cmd);
}

/* @out (may be NULL): the whole answer (the ring's layout). */
static inline int _test_cmd_srx_open(int fd, uint32_t domain_id,
				     uint32_t sq_entries, uint32_t *out_srx_id,
				     struct kfab_srx_open *out)
{
	struct kfab_srx_open cmd = { .size = sizeof(cmd),
				     .domain_id = domain_id,
				     .sq_entries = sq_entries };
	int rc = kfab_ioctl(fd, KFAB_IOC_SRX_OPEN, &cmd);

	if (!rc && out_srx_id)
		*out_srx_id = cmd.out_srx_id;
	if (out)
		*out = cmd;
	return rc;
}

/*
 * Test-only (CONFIG_KFAB_TEST): @cmd comes with its named fields filled
 * (cq_id, cntr_id, count, context, flags, err, ...); the size is set here
 * and out_posted/out_overflowed land in @cmd.
 */
static inline int _test_cmd_test_cq_post(int fd, struct kfab_test_cq_post *cmd)
{
	cmd->size = sizeof(*cmd);
	return kfab_ioctl(fd, KFAB_IOC_TEST_CQ_POST, cmd);
}

/*
 * QUERY, and the ABI version is the one this header describes: 0,
 * -errno, or -EPROTO for another version.
 */
static inline int _test_query_abi(int fd)
{
	struct kfab_query q;
	int rc = _test_cmd_query(fd, &q);

	return rc ? rc : (q.abi_version == KFAB_ABI_VERSION ? 0 : -EPROTO);
}

/*
 * A file of its own on /dev/kfab (*@fd, left open whatever follows) with
 * a domain in it: 0 or -errno.
 */
static inline int _test_open_domain(int *fd, uint32_t *domain_id)
{
	*domain_id = 0;
	*fd = kfab_open();
	if (*fd < 0)
		return -errno;
	return _test_cmd_domain_alloc(*fd, domain_id);
}

/* An mmap() of a region an answer offered: the address or MAP_FAILED. */
static inline void *_test_mmap(int fd, const struct kfab_mmap *region,
			       int prot)
{
	return mmap(NULL, region->size, prot, MAP_SHARED, fd, region->offset);
}

static inline void _test_munmap(void *p, const struct kfab_mmap *region)
{
	if (p && p != MAP_FAILED)
		munmap(p, region->size);
}

/*
 * A completion queue with its two regions mapped (the ring read-only, the
 * consumer page read-write), as a library would hold it.
 */
struct kfab_test_cq {
	uint32_t id;
	struct kfab_cq_layout layout;
	uint8_t *ring;
	uint8_t *cons;
};

static inline int _test_cq_open_mapped(int fd, uint32_t domain_id,
				       uint32_t entries, uint32_t flags,
				       struct kfab_test_cq *cq)
{
	int rc;

	*cq = (struct kfab_test_cq){ 0 };
	rc = _test_cmd_cq_open(fd, domain_id, entries, flags, &cq->id,
			       &cq->layout);
	if (rc)
		return rc;
	cq->ring = _test_mmap(fd, &cq->layout.ring, PROT_READ);
	if (cq->ring == MAP_FAILED)
		return -errno;
	cq->cons = _test_mmap(fd, &cq->layout.cons, PROT_READ | PROT_WRITE);
	return cq->cons == MAP_FAILED ? -errno : 0;
}

/* Unmap what _test_cq_open_mapped() mapped; the CQ stays. */
static inline void _test_cq_unmap(struct kfab_test_cq *cq)
{
	_test_munmap(cq->ring, &cq->layout.ring);
	_test_munmap(cq->cons, &cq->layout.cons);
	cq->ring = cq->cons = NULL;
}

#define KFAB_TEST_RING_U32(cq, off) \
	(*(volatile uint32_t *)((cq)->ring + (off)))
#define KFAB_TEST_CONS_U32(cq, off) \
	(*(volatile uint32_t *)((cq)->cons + (off)))

/* Slot @i of a mapped CQ ring (masked), the way a consumer finds it. */
static inline const uint8_t *kfab_test_cq_slot(const struct kfab_test_cq *cq,
					       uint32_t i)
{
	return cq->ring + cq->layout.off_entries +
	       (size_t)(i & (cq->layout.entries - 1)) * cq->layout.entry_size;
}

/*
 * An endpoint bound the common way and enabled: the AV, then the CQ for
 * transmits and receives.
 */
static inline int _test_ep_bind_enable(int fd, uint32_t ep_id, uint32_t av_id,
				       uint32_t cq_id)
{
	int rc = _test_cmd_ep_bind(fd, ep_id, av_id, 0);

	if (!rc)
		rc = _test_cmd_ep_bind(fd, ep_id, cq_id,
				       KFAB_EP_BIND_TRANSMIT |
				       KFAB_EP_BIND_RECV);
	return rc ? rc : _test_cmd_ep_enable(fd, ep_id);
}

/*
 * The assertion layer: for TEST/TEST_F bodies and helpers that take
 * _metadata; include kselftest_harness.h before this header.
 */
#ifdef __KSELFTEST_HARNESS_H

/* Statements of their own, so that a block may follow one. */
#define __test_ok(call) do { ASSERT_EQ(0, call); } while (0)
#define __test_fail(_errno, call) do { ASSERT_EQ(-(_errno), call); } while (0)

#define test_cmd_query(fd, out) __test_ok(_test_cmd_query(fd, out))
#define test_err_query(_errno, fd, out) \
	__test_fail(_errno, _test_cmd_query(fd, out))

#define test_cmd_destroy(fd, id) __test_ok(_test_cmd_destroy(fd, id))
#define test_err_destroy(_errno, fd, id) \
	__test_fail(_errno, _test_cmd_destroy(fd, id))

#define test_cmd_domain_alloc(fd, out_id) \
	__test_ok(_test_cmd_domain_alloc(fd, out_id))
#define test_err_domain_alloc(_errno, fd, out_id) \
	__test_fail(_errno, _test_cmd_domain_alloc(fd, out_id))

#define test_cmd_doorbell(fd, obj_id, out_done) \
	__test_ok(_test_cmd_doorbell(fd, obj_id, out_done))
#define test_err_doorbell(_errno, fd, obj_id, out_done) \
	__test_fail(_errno, _test_cmd_doorbell(fd, obj_id, out_done))

#define test_cmd_cancel(fd, obj_id, context) \
	__test_ok(_test_cmd_cancel(fd, obj_id, context))
#define test_err_cancel(_errno, fd, obj_id, context) \
	__test_fail(_errno, _test_cmd_cancel(fd, obj_id, context))

#define test_cmd_av_open(fd, cmd, out_av_id) \
	__test_ok(_test_cmd_av_open(fd, cmd, out_av_id))
#define test_err_av_open(_errno, fd, cmd, out_av_id) \
	__test_fail(_errno, _test_cmd_av_open(fd, cmd, out_av_id))

#define test_cmd_av_insert(fd, av_id, addrs, count, indices, errors, out) \
	__test_ok(_test_cmd_av_insert(fd, av_id, addrs, count, indices, \
					 errors, out))
#define test_err_av_insert(_errno, fd, av_id, addrs, count, indices, errors, \
			   out)						      \
	__test_fail(_errno, _test_cmd_av_insert(fd, av_id, addrs, count,   \
						 indices, errors, out))

#define test_cmd_av_remove(fd, av_id, indices, count) \
	__test_ok(_test_cmd_av_remove(fd, av_id, indices, count))
#define test_err_av_remove(_errno, fd, av_id, indices, count) \
	__test_fail(_errno, _test_cmd_av_remove(fd, av_id, indices, count))

#define test_cmd_av_unlink(fd, name) __test_ok(_test_cmd_av_unlink(fd, name))
#define test_err_av_unlink(_errno, fd, name) \
	__test_fail(_errno, _test_cmd_av_unlink(fd, name))

#define test_cmd_cq_open(fd, dom, entries, flags, out_id, out_ring) \
	__test_ok(_test_cmd_cq_open(fd, dom, entries, flags, out_id, \
				       out_ring))
#define test_err_cq_open(_errno, fd, dom, entries, flags, out_id, out_ring) \
	__test_fail(_errno, _test_cmd_cq_open(fd, dom, entries, flags,     \
					       out_id, out_ring))

#define test_cmd_cq_drain(fd, cq_id, out_overflow) \
	__test_ok(_test_cmd_cq_drain(fd, cq_id, out_overflow))
#define test_err_cq_drain(_errno, fd, cq_id, out_overflow) \
	__test_fail(_errno, _test_cmd_cq_drain(fd, cq_id, out_overflow))

#define test_cmd_cq_readerr(fd, cq_id, data, data_size, out) \
	__test_ok(_test_cmd_cq_readerr(fd, cq_id, data, data_size, out))
#define test_err_cq_readerr(_errno, fd, cq_id, data, data_size, out)	\
	__test_fail(_errno, _test_cmd_cq_readerr(fd, cq_id, data,	\
						  data_size, out))

#define test_cmd_cntr_open(fd, dom, out_id, out) \
	__test_ok(_test_cmd_cntr_open(fd, dom, out_id, out))
#define test_err_cntr_open(_errno, fd, dom, out_id, out) \
	__test_fail(_errno, _test_cmd_cntr_open(fd, dom, out_id, out))

#define test_cmd_cntr_update(fd, cntr_id, op, value, out_value, out_err) \
	__test_ok(_test_cmd_cntr_update(fd, cntr_id, op, value,	  \
					   out_value, out_err))
#define test_err_cntr_update(_errno, fd, cntr_id, op, value, out_value, \
			     out_err)					\
	__test_fail(_errno, _test_cmd_cntr_update(fd, cntr_id, op, value, \
						   out_value, out_err))

#define test_cmd_cntr_wait(fd, cmd) __test_ok(_test_cmd_cntr_wait(fd, cmd))
#define test_err_cntr_wait(_errno, fd, cmd) \
	__test_fail(_errno, _test_cmd_cntr_wait(fd, cmd))

#define test_cmd_ep_open(fd, dom, sq_entries, out_id, out) \
	__test_ok(_test_cmd_ep_open(fd, dom, sq_entries, out_id, out))
#define test_err_ep_open(_errno, fd, dom, sq_entries, out_id, out) \
	__test_fail(_errno, _test_cmd_ep_open(fd, dom, sq_entries, out_id, out))

#define test_cmd_ep_bind(fd, ep_id, obj_id, flags) \
	__test_ok(_test_cmd_ep_bind(fd, ep_id, obj_id, flags))
#define test_err_ep_bind(_errno, fd, ep_id, obj_id, flags) \
	__test_fail(_errno, _test_cmd_ep_bind(fd, ep_id, obj_id, flags))

#define test_cmd_ep_enable(fd, ep_id) __test_ok(_test_cmd_ep_enable(fd, ep_id))
#define test_err_ep_enable(_errno, fd, ep_id) \
	__test_fail(_errno, _test_cmd_ep_enable(fd, ep_id))

#define test_cmd_srx_open(fd, dom, sq_entries, out_id, out) \
	__test_ok(_test_cmd_srx_open(fd, dom, sq_entries, out_id, out))
#define test_err_srx_open(_errno, fd, dom, sq_entries, out_id, out) \
	__test_fail(_errno, _test_cmd_srx_open(fd, dom, sq_entries, out_id, out))

#define test_cmd_test_cq_post(fd, cmd) \
	__test_ok(_test_cmd_test_cq_post(fd, cmd))
#define test_err_test_cq_post(_errno, fd, cmd) \
	__test_fail(_errno, _test_cmd_test_cq_post(fd, cmd))

/* Shared setup pieces: each ASSERTs every step. */

/* A file of its own on /dev/kfab with a domain in it. */
#define test_open_domain(out_fd, out_dom) \
	__test_ok(_test_open_domain(out_fd, out_dom))

/* A region of an answer mapped shared: the address. */
#define test_mmap(fd, region, prot) ({					\
		void *__p = _test_mmap(fd, region, prot);		\
		ASSERT_NE(MAP_FAILED, __p) TH_LOG("mmap: %s",		\
						  strerror(errno));	\
		__p;							\
	})

/* A CQ opened and its ring and consumer page mapped (struct kfab_test_cq). */
#define test_cq_open_mapped(fd, dom, entries, flags, cq) \
	__test_ok(_test_cq_open_mapped(fd, dom, entries, flags, cq))

/* Bind @av_id and @cq_id (transmit and receive) to @ep_id and enable it. */
#define test_ep_bind_enable(fd, ep_id, av_id, cq_id) \
	__test_ok(_test_ep_bind_enable(fd, ep_id, av_id, cq_id))

#endif /* __KSELFTEST_HARNESS_H */


/* A decimal value from a sysfs file, or -1. */
static inline long read_sysfs_long(const char *path)
{
	char buf[64] = "";
	long val = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		val = strtol(buf, NULL, 10);
	fclose(f);
	return val;
}

static inline long kfab_contexts(void)
{
	return read_sysfs_long(KFAB_SYSFS "/contexts");
}

/*
 * @n bytes (a multiple of 2 MiB) of fresh anonymous memory at a 2 MiB
 * boundary, or NULL: a mapping made next to it (malloc()'s) then splits
 * no huge-page range of it, which would tell the kernel's kept pins of
 * the buffer (pincache.c) that their range changed.  munmap() @n bytes.
 */
static inline uint8_t *kfab_pmd_alloc(size_t n)
{
	const size_t pmd = 2 << 20;
	uint8_t *p, *a;

	p = mmap(NULL, n + pmd, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + pmd - 1) & ~(uintptr_t)(pmd - 1));
	if (a > p)
		munmap(p, a - p);
	if (p + n + pmd > a + n)
		munmap(a + n, p + n + pmd - (a + n));
	return a;
}

/*
 * Whether the module behind @fd was built with CONFIG_KFAB_TEST (the
 * test-only commands).
 */
static inline bool kfab_fd_test_module(int fd)
{
	struct kfab_query q;

	return !_test_cmd_query(fd, &q) && (q.features & KFAB_FEATURE_TEST);
}

/* The same in a file of its own. */
static inline int kfab_test_module(void)
{
	int fd = kfab_open();
	int ret;

	if (fd < 0)
		return 0;
	ret = kfab_fd_test_module(fd);
	close(fd);
	return ret;
}

/*
 * An address (every field in network order): @family, the node @ip (IPv4,
 * mapped into IPv6, or IPv6; NULL for none), @port, @ep and @incarnation.
 * Whether it is valid is the caller's business.
 */
static inline struct kfab_addr kfab_test_addr(uint8_t family, const char *ip,
					      uint16_t port, uint64_t ep,
					      uint32_t incarnation)
{
	struct kfab_addr a = {
		.family = family,
		.port = htobe16(port),
		.incarnation = htobe32(incarnation),
		.ep = htobe64(ep),
	};
	struct in_addr in4;

	if (!ip)
		return a;
	if (inet_pton(AF_INET, ip, &in4) == 1) {
		a.node[10] = a.node[11] = 0xff;
		memcpy(a.node + 12, &in4, 4);
	} else if (inet_pton(AF_INET6, ip, a.node) != 1) {
		abort();
	}
	return a;
}

/* Milliseconds of CLOCK_MONOTONIC, for the tests' deadlines. */
static inline uint64_t kfab_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* All of @len bytes in one write()/read() (pipes between test processes). */
static inline int kfab_write_all(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

static inline int kfab_read_all(int fd, void *buf, size_t len)
{
	return read(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

/*
 * Whether the running module knows a command: @cmd is its zeroed struct
 * with @size set, naming domain 0, which never exists, so anything but
 * -ENOTTY means known.
 */
static inline int kfab_knows(unsigned long ioc, void *cmd)
{
	int fd = kfab_open();
	int rc;

	if (fd < 0)
		return 0;
	rc = kfab_ioctl(fd, ioc, cmd);
	close(fd);
	return rc != -ENOTTY;
}

/* Whether /dev/kfab is there to use (the VM) or not (the host). */
static inline bool kfab_have_device(void)
{
	return !access(KFAB_DEV, R_OK | W_OK);
}

/* Whether the running module knows endpoints (kernel/ep.c). */
static inline bool kfab_have_endpoints(void)
{
	struct kfab_ep_open cmd = { .size = sizeof(cmd) };

	return kfab_knows(KFAB_IOC_EP_OPEN, &cmd);
}

/* Whether the running module knows shared receive contexts. */
static inline bool kfab_have_srx(void)
{
	struct kfab_srx_open cmd = { .size = sizeof(cmd) };

	return kfab_knows(KFAB_IOC_SRX_OPEN, &cmd);
}

/*
 * Through libfabric (files that include <rdma/fabric.h> first): the
 * objects of one side, opened in this order and closed in reverse.
 */
#ifdef FI_VERSION

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

/* The libfabric API version the tests ask for. */
#define KFAB_TEST_FI_VERSION	FI_VERSION(1, 17)

/* Every object may be NULL (not opened). */
struct kfab_test_fi {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

/* Hints that name kfab and nothing else (NULL without memory). */
static inline struct fi_info *kfab_test_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (hints)
		hints->fabric_attr->prov_name = strdup("kfab");
	return hints;
}

/* Hints for kfab's RDM endpoints, with the capabilities the tests use. */
static inline struct fi_info *kfab_test_rdm_hints(void)
{
	struct fi_info *hints = kfab_test_hints();

	if (!hints)
		return NULL;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
	return hints;
}

/*
 * fi_getinfo() with @node, @service, @flags and @hints (freed here), the
 * fabric and the domain.
 */
static inline int _test_fi_domain_open_at(struct kfab_test_fi *s,
					  const char *node,
					  const char *service, uint64_t flags,
					  struct fi_info *hints)
{
	int rc;

	*s = (struct kfab_test_fi){ 0 };
	if (!hints)
		return -FI_ENOMEM;
	rc = fi_getinfo(KFAB_TEST_FI_VERSION, node, service, flags, hints,
			&s->info);
	fi_freeinfo(hints);
	if (!rc)
		rc = fi_fabric(s->info->fabric_attr, &s->fabric, NULL);
	if (!rc)
		rc = fi_domain(s->fabric, s->info, &s->domain, NULL);
	return rc;
}

static inline int _test_fi_domain_open(struct kfab_test_fi *s,
				       struct fi_info *hints)
{
	return _test_fi_domain_open_at(s, NULL, NULL, 0, hints);
}

/*
 * And an AV (FI_AV_TABLE), a CQ (FI_CQ_FORMAT_TAGGED) and an endpoint;
 * with @enable, the endpoint bound to both (the CQ for transmits and
 * receives) and enabled.  0 or a negative FI_E* code.
 */
static inline int _test_fi_side_open_at(struct kfab_test_fi *s,
					const char *node, const char *service,
					uint64_t flags, struct fi_info *hints,
					bool enable)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	int rc = _test_fi_domain_open_at(s, node, service, flags, hints);

	if (!rc)
		rc = fi_av_open(s->domain, &av_attr, &s->av, NULL);
	if (!rc)
		rc = fi_cq_open(s->domain, &cq_attr, &s->cq, NULL);
	if (!rc)
		rc = fi_endpoint(s->domain, s->info, &s->ep, NULL);
	if (!rc && enable)
		rc = fi_ep_bind(s->ep, &s->av->fid, 0);
	if (!rc && enable)
		rc = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc && enable)
		rc = fi_enable(s->ep);
	return rc;
}

static inline int _test_fi_side_open(struct kfab_test_fi *s,
				     struct fi_info *hints, bool enable)
{
	return _test_fi_side_open_at(s, NULL, NULL, 0, hints, enable);
}

/* @to's endpoint into @from's AV at *@addr: 1, or a negative FI_E* code. */
static inline int kfab_test_fi_insert_peer(struct kfab_test_fi *from,
					   struct kfab_test_fi *to,
					   fi_addr_t *addr)
{
	struct kfab_addr name;
	size_t len = sizeof(name);
	int rc = fi_getname(&to->ep->fid, &name, &len);

	return rc ? rc : fi_av_insert(from->av, &name, 1, addr, 0, NULL);
}

/* Close what is open, in reverse: 0, or the fi_close() codes or-ed. */
static inline int _test_fi_close(struct kfab_test_fi *s)
{
	int rc = 0;

	if (s->ep)
		rc |= fi_close(&s->ep->fid);
	if (s->cq)
		rc |= fi_close(&s->cq->fid);
	if (s->av)
		rc |= fi_close(&s->av->fid);
	if (s->domain)
		rc |= fi_close(&s->domain->fid);
	if (s->fabric)
		rc |= fi_close(&s->fabric->fid);
	if (s->info)
		fi_freeinfo(s->info);
	*s = (struct kfab_test_fi){ 0 };
	return rc;
}

/*
 * One completion from @cq (which progresses its endpoints) while
 * @other's are progressed too: 1, -FI_EAVAIL (with @err filled when
 * given, -FI_EOTHER if it cannot be read), or -FI_EAGAIN after @ms.
 */
static inline ssize_t kfab_test_wait_cq(struct fid_cq *cq,
					struct fid_cq *other,
					struct fi_cq_tagged_entry *e,
					fi_addr_t *src,
					struct fi_cq_err_entry *err, int ms)
{
	uint64_t end = kfab_now_ms() + ms;
	ssize_t rc;

	do {
		if (other)
			(void)fi_cq_read(other, NULL, 0);
		rc = fi_cq_readfrom(cq, e, 1, src);
		if (rc == -FI_EAVAIL && err) {
			memset(err, 0, sizeof(*err));
			if (fi_cq_readerr(cq, err, 0) != 1)
				return -FI_EOTHER;
		}
		if (rc != -FI_EAGAIN)
			return rc;
	} while (kfab_now_ms() < end);
	return -FI_EAGAIN;
}

#ifdef __KSELFTEST_HARNESS_H
/* _test_fi_domain_open(), ASSERTing each step. */
#define test_fi_domain_open(s, hints) \
	_test_fi_domain_open_assert(_metadata, s, hints)
static inline void
_test_fi_domain_open_assert(struct __test_metadata *_metadata,
			    struct kfab_test_fi *s, struct fi_info *hints)
{
	*s = (struct kfab_test_fi){ 0 };
	ASSERT_NE(NULL, hints);
	ASSERT_EQ(0, fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0, hints,
				&s->info));
	fi_freeinfo(hints);
	ASSERT_EQ(0, fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	ASSERT_EQ(0, fi_domain(s->fabric, s->info, &s->domain, NULL));
}

/* Close what is open, in reverse, EXPECTing each fi_close() to succeed. */
#define test_fi_close(s) _test_fi_close_expect(_metadata, s)
static inline void _test_fi_close_expect(struct __test_metadata *_metadata,
					 struct kfab_test_fi *s)
{
	if (s->ep)
		EXPECT_EQ(0, fi_close(&s->ep->fid));
	if (s->cq)
		EXPECT_EQ(0, fi_close(&s->cq->fid));
	if (s->av)
		EXPECT_EQ(0, fi_close(&s->av->fid));
	if (s->domain)
		EXPECT_EQ(0, fi_close(&s->domain->fid));
	if (s->fabric)
		EXPECT_EQ(0, fi_close(&s->fabric->fid));
	if (s->info)
		fi_freeinfo(s->info);
	*s = (struct kfab_test_fi){ 0 };
}
#endif /* __KSELFTEST_HARNESS_H */

#endif /* FI_VERSION */

#endif /* KFAB_TEST_H */
