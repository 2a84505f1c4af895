/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libshim: kfab's libfabric provider - private declarations.
 *
 * The provider maps libfabric's fid_* objects onto objects of the kfab
 * kernel module (/dev/kfab).  One file per object, as libfabric's providers
 * do:
 *
 *   prov.c    fi_prov_ini(), the struct fi_provider, getinfo, parameters
 *   info.c    the fi_info kfab offers and the matching of hints against it
 *   fabric.c  fid_fabric: one open file of the device per fabric
 *   domain.c  fid_domain: one kernel domain object per domain
 *   av.c      fid_av: a kernel AV handle and its table, mapped read-only
 *   eq.c      fid_eq: event queues, user-space objects of the fabric
 *   cq.c      fid_cq: a kernel CQ whose ring is mapped and read here
 *   cntr.c    fid_cntr: a kernel counter whose values are mapped
 *   dev.c     the ioctl wrappers, the only code that talks to the device
 *   enosys.c  stubs for every operation that does not exist yet
 *
 * Every op table is static const and fully populated.  libfabric's public
 * structs hold non-const op pointers (struct fid.ops and friends), so the
 * tables are cast when installed: nothing in libfabric writes through them.
 */
#ifndef KFAB_INTERNAL_H
#define KFAB_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <linux/kfab.h>

#include <kfab/kfab.h>

/* Names kfab reports in fi_info and expects back in fi_fabric/fi_domain. */
#define KFAB_PROV_NAME		"kfab"
#define KFAB_FABRIC_NAME	"kfab"
#define KFAB_DOMAIN_NAME	"kfab0"
#define KFAB_DEFAULT_DEV	"/dev/kfab"

/* rdma/fabric.h has one; this is the same, for when it has not. */
#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

/* ---- provider (prov.c) ---- */

extern struct fi_provider kfab_prov;

/* The device path: FI_KFAB_DEV, read once when libfabric loads kfab. */
const char *kfab_dev_path(void);

/*
 * Logging: libfabric's FI_WARN/FI_INFO/FI_DBG with kfab's provider and a
 * FI_LOG_<subsys> subsystem, e.g. KFAB_WARN(DOMAIN, "...\n").  FI_DBG
 * compiles to nothing unless built with ENABLE_DEBUG=1 (make DEBUG=1).
 */
#define KFAB_WARN(subsys, ...)	FI_WARN(&kfab_prov, FI_LOG_##subsys, __VA_ARGS__)
#define KFAB_INFO(subsys, ...)	FI_INFO(&kfab_prov, FI_LOG_##subsys, __VA_ARGS__)
#define KFAB_DBG(subsys, ...)	FI_DBG(&kfab_prov, FI_LOG_##subsys, __VA_ARGS__)

/* ---- fi_info (info.c) ---- */

int kfab_info_get(uint32_t version, const struct fi_info *hints,
		  struct fi_info **info);
int kfab_info_check(const struct fi_info *hints);

/* ---- device (dev.c): each returns 0 or -errno ---- */

int kfab_dev_open(const char *path, int *fd);
void kfab_dev_close(int fd);
int kfab_dev_query(int fd, struct kfab_query *query);
int kfab_dev_domain_alloc(int fd, uint32_t *domain_id);
int kfab_dev_destroy(int fd, uint32_t id);
int kfab_dev_av_open(int fd, struct kfab_av_open *cmd);
int kfab_dev_av_insert(int fd, uint32_t av_id, const struct kfab_addr *addrs,
		       uint32_t count, uint32_t *indices, int32_t *errors,
		       uint32_t *inserted);
int kfab_dev_av_remove(int fd, uint32_t av_id, const uint32_t *indices,
		       uint32_t count);
int kfab_dev_cq_open(int fd, struct kfab_cq_open *cmd);
int kfab_dev_cq_drain(int fd, uint32_t cq_id, uint32_t *overflow);
int kfab_dev_cq_readerr(int fd, struct kfab_cq_readerr *cmd);
int kfab_dev_cntr_open(int fd, struct kfab_cntr_open *cmd);
int kfab_dev_cntr_update(int fd, uint32_t cntr_id, uint32_t op,
			 uint64_t value);
int kfab_dev_cntr_wait(int fd, uint32_t cntr_id, uint64_t threshold,
		       uint64_t err, int timeout_ms);
int kfab_dev_mmap(int fd, uint64_t offset, size_t len, bool writable,
		  void **addr);

/* ---- fabric (fabric.c) ---- */

/**
 * struct kfab_fabric - a fid_fabric: one open file of the kfab device
 * @fabric_fid: what libfabric sees
 * @fd: the open device; every object of this fabric lives in its context
 * @abi: the device's answer to KFAB_IOC_QUERY when the fabric was opened
 * @lock: protects @domain_cnt and @eq_cnt
 * @domain_cnt: open domains; the fabric cannot close while any is open
 * @eq_cnt: open EQs; the same
 */
struct kfab_fabric {
	struct fid_fabric fabric_fid;
	int fd;
	struct kfab_query abi;
	pthread_mutex_t lock;
	unsigned int domain_cnt;
	unsigned int eq_cnt;
};

static inline struct kfab_fabric *to_kfab_fabric(struct fid_fabric *fabric)
{
	return container_of(fabric, struct kfab_fabric, fabric_fid);
}

/*
 * A private fi_control() command: "may the caller block on your wait
 * object?"  Objects with a wait object (EQ, CQ, counter) answer 0 when they
 * are empty and armed, -FI_EAGAIN when something is ready to be read; the
 * rest answer -FI_ENOSYS.  fi_trywait() asks each object it is given.
 */
#define KFAB_CTRL_TRYWAIT	0x6b660001

int kfab_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context);
bool kfab_is_fabric(const struct fid_fabric *fabric);
int kfab_fabric_dev_open(int *fd, struct kfab_query *abi);

/* ---- domain (domain.c) ---- */

/**
 * struct kfab_domain - a fid_domain: a domain object of the kernel
 * @domain_fid: what libfabric sees
 * @fabric: the parent; holds one count in its domain_cnt for us
 * @id: the kernel's id of the domain in @fabric's file
 */
struct kfab_domain {
	struct fid_domain domain_fid;
	struct kfab_fabric *fabric;
	uint32_t id;
};

static inline struct kfab_domain *to_kfab_domain(struct fid_domain *domain)
{
	return container_of(domain, struct kfab_domain, domain_fid);
}

int kfab_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context);
int kfab_domain_open2(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, uint64_t flags,
		      void *context);
bool kfab_is_domain(const struct fid_domain *domain);

/* ---- address vectors (av.c) ---- */

/* The mode of named AVs this process creates: FI_KFAB_AV_MODE (octal). */
unsigned int kfab_av_create_mode(void);

struct kfab_av;

int kfab_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av, void *context);
/* For endpoints: the AV behind a fid, NULL unless it is a kfab AV. */
struct kfab_av *kfab_av_from_fid(struct fid *fid);
/* An endpoint binds to or unbinds from the AV: fi_close() is -FI_EBUSY between. */
void kfab_av_bind_ep(struct kfab_av *av);
void kfab_av_unbind_ep(struct kfab_av *av);
/* The address at @fi_addr, read from the mapped table: 0 or -FI_EINVAL. */
int kfab_av_resolve(struct kfab_av *av, fi_addr_t fi_addr,
		    struct kfab_addr *addr);
/* What a completion reports for @fi_addr: its FI_AV_USER_ID, or itself. */
fi_addr_t kfab_av_user_id(struct kfab_av *av, fi_addr_t fi_addr);

/* ---- event queues (eq.c) ---- */

/* attr->size 0 in fi_eq_open() means this many events. */
#define KFAB_EQ_DEFAULT_SIZE	256

/*
 * An EQ; the struct fid_eq is its first member, eq_fid.  Other libshim
 * objects post their asynchronous events to it:
 *
 * kfab_eq_from_fid()  the kfab EQ behind @fid, or NULL when @fid is not one
 *                     (e.g. the EQ an application binds to an AV).
 * kfab_eq_post()      appends a normal event of @len bytes (copied), e.g.
 *                     FI_AV_COMPLETE with a struct fi_eq_entry.  Never
 *                     refused for lack of room: kfab's own events are kept
 *                     beyond attr->size (and counted).  0, or -FI_ENOMEM
 *                     (-FI_EINVAL for a NULL @eq, or NULL @buf with @len).
 * kfab_eq_post_err()  appends an error entry: *@err is copied, and so are
 *                     err->err_data_size bytes of err->err_data if both are
 *                     set.  err->err is a positive FI_E* value, prov_errno a
 *                     positive errno or 0.  Same returns.
 * kfab_eq_bind()      an object now refers to @eq: fi_close(eq) answers
 *                     -FI_EBUSY until the matching kfab_eq_unbind().
 *
 * All are thread-safe and may be called from any thread.
 */
struct kfab_eq;

struct kfab_eq *kfab_eq_from_fid(struct fid *fid);
int kfab_eq_post(struct kfab_eq *eq, uint32_t event, const void *buf,
		 size_t len);
int kfab_eq_post_err(struct kfab_eq *eq, const struct fi_eq_err_entry *err);
void kfab_eq_bind(struct kfab_eq *eq);
void kfab_eq_unbind(struct kfab_eq *eq);

int kfab_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq, void *context);
/* ---- completion queues (cq.c) and counters (cntr.c) ---- */

int kfab_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cq, void *context);
int kfab_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);

/* FI_GET_VAL of KFAB_FID_KERNEL_HANDLE (cq.c), for CQs and counters. */
int kfab_get_kernel_handle(void *arg, int fd, uint32_t id);

/*
 * Blocking on an eventfd (cq.c): the remaining time of a timeout in ms
 * (negative: forever) and a poll that returns when the fd is readable or
 * the time is up; the fd's count is reset after.
 */
int kfab_timeout_left(int timeout, const struct timespec *start);
void kfab_eventfd_wait(int efd, int timeout_ms);
void kfab_eventfd_reset(int efd);

/* ---- stubs (enosys.c) ---- */

/* struct fi_ops */
int kfab_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int kfab_no_control(struct fid *fid, int command, void *arg);
int kfab_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context);
int kfab_no_tostr(const struct fid *fid, char *buf, size_t len);
int kfab_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context);

/* struct fi_ops_fabric */
int kfab_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_pep **pep, void *context);
int kfab_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		      struct fid_wait **waitset);

/* struct fi_ops_domain */
int kfab_no_endpoint(struct fid_domain *domain, struct fi_info *info,
		     struct fid_ep **ep, void *context);
int kfab_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **sep, void *context);
int kfab_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		      struct fid_poll **pollset);
int kfab_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		    struct fid_stx **stx, void *context);
int kfab_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context);
int kfab_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			 enum fi_op op, struct fi_atomic_attr *attr,
			 uint64_t flags);
int kfab_no_query_collective(struct fid_domain *domain,
			     enum fi_collective_op coll,
			     struct fi_collective_attr *attr, uint64_t flags);
int kfab_no_endpoint2(struct fid_domain *domain, struct fi_info *info,
		      struct fid_ep **ep, uint64_t flags, void *context);

/* struct fi_ops_mr */
int kfab_no_mr_reg(struct fid *fid, const void *buf, size_t len,
		   uint64_t access, uint64_t offset, uint64_t requested_key,
		   uint64_t flags, struct fid_mr **mr, void *context);
int kfab_no_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		    uint64_t access, uint64_t offset, uint64_t requested_key,
		    uint64_t flags, struct fid_mr **mr, void *context);
int kfab_no_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		       uint64_t flags, struct fid_mr **mr);

#endif /* KFAB_INTERNAL_H */
