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
 *   addr.c    addresses: their kinds, their strings, nodes and services
 *   av.c      fid_av: a kernel AV handle and its table, mapped read-only
 *   eq.c      fid_eq: event queues, user-space objects of the fabric
 *   cq.c      fid_cq: a kernel CQ whose ring is mapped and read here
 *   cntr.c    fid_cntr: a kernel counter whose values are mapped
 *   wait.c    fid_wait: wait sets, an epoll fd over members' eventfds
 *   ep.c      fid_ep: a kernel endpoint and its mapped submission ring
 *   alias.c   fi_ep_alias(): an endpoint with default flags of its own
 *   stx.c     fid_stx: shared transmit contexts (bookkeeping only)
 *   srx.c     fid_ep of class FI_CLASS_SRX_CTX: a shared receive context
 *   ring.c    the producer side of those submission rings
 *   msg.c     fi_msg and fi_tagged: requests written into the rings
 *   mr.c      fid_mr: registrations, which kfab needs none of
 *   dev.c     the ioctl wrappers, the only code that talks to the device
 *   enosys.c  stubs for every operation that does not exist yet
 *
 * fi_peer(3), kfab as the peer and as the owner of another provider's
 * objects, is an extension in a folder of its own, peer/ (peer/peer.h;
 * the libfabric version differences in peer/compat.h): peer/cq.c CQs,
 * peer/srx.c shared receive contexts, peer/av.c AV, domain, EQ,
 * FI_PEER_TRANSFER endpoints and fi_import_fid.  The files above are the
 * plain provider; the extension plugs in at the points declared in the
 * section "fi_peer(3)" below and nowhere else: a few entry points (an
 * object opened with FI_PEER, fi_get_val(KFAB_FID_PEER_EXPORT)), and one
 * hooks table per object whose data path it changes (struct
 * shim_cq_hooks, struct shim_srx_hooks).
 *
 * Every op table is static const and fully populated.  libfabric's public
 * structs hold non-const op pointers (struct fid.ops and friends), so the
 * tables are cast when installed: nothing in libfabric writes through them.
 */
#ifndef SHIM_INTERNAL_H
#define SHIM_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <linux/kfab.h>

#include <kfab/kfab.h>

/* Names kfab reports in fi_info and expects back in fi_fabric/fi_domain. */
#define SHIM_PROV_NAME		"kfab"
#define SHIM_FABRIC_NAME	"kfab"
#define SHIM_DOMAIN_NAME	"kfab0"
#define SHIM_DEFAULT_DEV	"/dev/kfab"

/* rdma/fabric.h has one; this is the same, for when it has not. */
#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

/* ---- provider (prov.c) ---- */

extern struct fi_provider shim_prov;

/* The device path: FI_KFAB_DEV, read once when libfabric loads kfab. */
const char *shim_dev_path(void);

/*
 * Logging: libfabric's FI_WARN/FI_INFO/FI_DBG with kfab's provider and a
 * FI_LOG_<subsys> subsystem, e.g. SHIM_WARN(DOMAIN, "...\n").  FI_DBG
 * compiles to nothing unless built with ENABLE_DEBUG=1 (make DEBUG=1).
 */
#define SHIM_WARN(subsys, ...)	FI_WARN(&shim_prov, FI_LOG_##subsys, __VA_ARGS__)
#define SHIM_INFO(subsys, ...)	FI_INFO(&shim_prov, FI_LOG_##subsys, __VA_ARGS__)
#define SHIM_DBG(subsys, ...)	FI_DBG(&shim_prov, FI_LOG_##subsys, __VA_ARGS__)

/* ---- fi_info (info.c) ---- */

/*
 * Where peers may be: on this machine, and (the transport, once a listener
 * makes the namespace a node) on others.  Open MPI asks for FI_REMOTE_COMM
 * even when all its ranks share one node.
 */
#define SHIM_COMM_CAPS	(FI_LOCAL_COMM | FI_REMOTE_COMM)
/* The capabilities kfab offers, per direction. */
#define SHIM_TX_CAPS	(FI_MSG | FI_TAGGED | FI_SEND | SHIM_COMM_CAPS | \
			 FI_FENCE)
#define SHIM_RX_CAPS	(FI_MSG | FI_TAGGED | FI_RECV | SHIM_COMM_CAPS | FI_NAMED_RX_CTX | \
			 FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV)
#define SHIM_CAPS	(SHIM_TX_CAPS | SHIM_RX_CAPS)

bool shim_info_buffered(const struct fi_info *info);
int shim_info_get(uint32_t version, const struct fi_info *hints,
		  uint32_t max_objects, enum fi_ep_type type,
		  struct fi_info **info);
int shim_info_check(const struct fi_info *hints);
/* fi_srx_context()'s attributes: 0, or -FI_ENODATA (logged as for hints). */
int shim_info_check_rx_attr(const struct fi_rx_attr *attr);
/* fi_stx_context()'s attributes: 0, or -FI_ENODATA (logged as for hints). */
int shim_info_check_tx_attr(const struct fi_tx_attr *attr);

/**
 * struct shim_info_addrs - fi_getinfo()'s node and service as addresses
 * @format: FI_FORMAT_UNSPEC or FI_ADDR_STR (hints->addr_format)
 * @has_src: @src is src_addr (FI_SOURCE, hints->src_addr, or any)
 * @has_dest: @dest is dest_addr (no FI_SOURCE, or hints->dest_addr)
 */
struct shim_info_addrs {
	uint32_t format;
	bool has_src, has_dest;
	struct kfab_addr src, dest;
};

int shim_info_addrs(const char *node, const char *service, uint64_t flags,
		    const struct fi_info *hints, struct shim_info_addrs *out);
int shim_info_set_addrs(struct fi_info *info,
			const struct shim_info_addrs *addrs);

/* ---- addresses (addr.c) ---- */

/*
 * Two kinds of struct kfab_addr (shim_addr_check()): SHIM_ADDR_EP names an
 * endpoint (AV entries, fi_getname, dest_addr); SHIM_ADDR_SRC is what an
 * endpoint is opened with (src_addr: family UNSPEC for any address of this
 * node, ep 0 for a number of the module's, never an incarnation).
 */
#define SHIM_ADDR_EP		1u
#define SHIM_ADDR_SRC		2u
/* The longest string form of an address, with its NUL, and a bit more. */
#define SHIM_ADDR_STRLEN	96
/* The longest host name a node may carry, with its NUL. */
#define SHIM_ADDR_HOSTLEN	256

int shim_addr_check(const struct kfab_addr *a, unsigned int kinds);
int shim_addr_parse(const char *s, unsigned int kinds, struct kfab_addr *a);
size_t shim_addr_format(const struct kfab_addr *a, char *buf, size_t len);
bool shim_addr_is_v4mapped(const uint8_t node[16]);
bool shim_addr_is_str(const char *node);
int shim_addr_service(const char *service, uint64_t *ep);
int shim_addr_split_node(const char *node, char *host, size_t hostlen,
			 uint16_t *port, bool *v6);
int shim_addr_resolve_host(const char *host, bool v6, bool numeric,
			   uint8_t node[16]);
int shim_addr_from_node(const char *node, bool numeric, struct kfab_addr *a);
int shim_addr_sym_nodes(const char *node, size_t nodecnt,
			struct kfab_addr *out);
/* An address in an application's @format (FI_ADDR_STR or the struct). */
bool shim_addr_out(const struct kfab_addr *a, uint32_t format, void *buf,
		   size_t *len);
int shim_addr_in(const void *buf, size_t len, uint32_t format,
		 unsigned int kinds, struct kfab_addr *a);

/* ---- device (dev.c): each returns 0 or -errno ---- */

int shim_dev_open(const char *path, int *fd);
void shim_dev_close(int fd);
int shim_dev_query(int fd, struct kfab_query *query);
int shim_dev_domain_alloc(int fd, uint32_t *domain_id);
int shim_dev_destroy(int fd, uint32_t id);
int shim_dev_av_open(int fd, struct kfab_av_open *cmd);
int shim_dev_av_insert(int fd, uint32_t av_id, const struct kfab_addr *addrs,
		       uint32_t count, uint32_t *indices, int32_t *errors,
		       uint32_t *inserted);
int shim_dev_av_remove(int fd, uint32_t av_id, const uint32_t *indices,
		       uint32_t count);
int shim_dev_cq_open(int fd, struct kfab_cq_open *cmd);
int shim_dev_cq_drain(int fd, uint32_t cq_id, uint32_t *overflow);
int shim_dev_cq_readerr(int fd, struct kfab_cq_readerr *cmd);
int shim_dev_cq_help(int fd, uint32_t cq_id, uint64_t *chunks);
int shim_dev_cntr_open(int fd, struct kfab_cntr_open *cmd);
int shim_dev_cntr_update(int fd, uint32_t cntr_id, uint32_t op,
			 uint64_t value);
int shim_dev_cntr_wait(int fd, uint32_t cntr_id, uint64_t threshold,
		       uint64_t err, int timeout_ms);
int shim_dev_mmap(int fd, uint64_t offset, size_t len, bool writable,
		  void **addr);
int shim_dev_ep_open(int fd, struct kfab_ep_open *cmd);
int shim_dev_ep_bind(int fd, uint32_t ep_id, uint32_t obj_id, uint32_t flags);
int shim_dev_ep_enable(int fd, uint32_t ep_id);
int shim_dev_doorbell(int fd, uint32_t obj_id, uint32_t *done);
int shim_dev_cancel(int fd, uint32_t obj_id, uint64_t context);
int shim_dev_sq_watch(int fd, uint32_t obj_id, bool remove);
int shim_dev_sq_poll(int fd, uint32_t idle_us, bool stop);
int shim_dev_srx_open(int fd, struct kfab_srx_open *cmd);
int shim_dev_rx_buffered(int fd, struct kfab_rx_buffered *cmd);

/* ---- fabric (fabric.c) ---- */

/**
 * struct shim_fabric - a fid_fabric: one open file of the kfab device
 * @fabric_fid: what libfabric sees
 * @fd: the open device; every object of this fabric lives in its context
 * @abi: the device's answer to KFAB_IOC_QUERY when the fabric was opened
 * @lock: protects @domain_cnt and @eq_cnt
 * @domain_cnt: open domains; the fabric cannot close while any is open
 * @eq_cnt: open EQs; the same
 */
struct shim_fabric {
	struct fid_fabric fabric_fid;
	int fd;
	struct kfab_query abi;
	pthread_mutex_t lock;
	unsigned int domain_cnt;
	unsigned int eq_cnt;
	/* The ring poller's thread (sqpoll.c), of process @poll_pid (or 0) */
	pthread_t poll_thread;
	pid_t poll_pid;
};

static inline struct shim_fabric *to_shim_fabric(struct fid_fabric *fabric)
{
	return container_of(fabric, struct shim_fabric, fabric_fid);
}

/*
 * A private fi_control() command: "may the caller block on your wait
 * object?"  Objects with a wait object (EQ, CQ, counter) answer 0 when they
 * are empty and armed, -FI_EAGAIN when something is ready to be read; the
 * rest answer -FI_ENOSYS.  fi_trywait() asks each object it is given.
 */
#define SHIM_CTRL_TRYWAIT	0x6b660001

int shim_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context);
bool shim_is_fabric(const struct fid_fabric *fabric);
int shim_fabric_dev_open(int *fd, struct kfab_query *abi);

/* ---- domain (domain.c) ---- */

struct shim_mr;

/**
 * struct shim_domain - a fid_domain: a domain object of the kernel
 * @domain_fid: what libfabric sees
 * @fabric: the parent; holds one count in its domain_cnt for us
 * @id: the kernel's id of the domain in @fabric's file
 * @mr_mode: the mr_mode of the fi_info the domain was opened with
 * @addr_format: its addr_format: FI_FORMAT_UNSPEC (struct kfab_addr) or
 *	FI_ADDR_STR (strings), the form of its AVs' addresses (fi_av(3))
 * @mr_lock: protects @mrs and @next_key
 * @mrs: the open memory registrations (mr.c), newest first
 * @next_key: the next provider-chosen key (FI_MR_BASIC, FI_MR_PROV_KEY)
 */
struct shim_domain {
	struct fid_domain domain_fid;
	struct shim_fabric *fabric;
	uint32_t id;
	int mr_mode;
	uint32_t addr_format;
	bool serial;		/* FI_THREAD_DOMAIN: shim_data_lock() */
	pthread_mutex_t mr_lock;
	struct shim_mr *mrs;
	uint64_t next_key;
};

/*
 * The data path's locks: an endpoint's or an SRX's ring as a send or a
 * receive is posted, a CQ's ring as it is read, the endpoints a CQ's read
 * progresses.  Under FI_THREAD_DOMAIN the application serialises every
 * call on the domain's objects (fi_domain(3)) and none of the library's
 * own threads (the sweeper, the ring poller, a wait set's thread) takes
 * these locks, so they are skipped: a lock and an unlock, two locked
 * instructions, less per call.  The control path (bind, enable, close)
 * locks as before: there it never runs beside the data path either.
 * Whoever may call from another thread (fi_peer(3)'s hooks) keeps them:
 * @serial is false there (cq.c).
 */
static inline void shim_data_lock(pthread_mutex_t *lock, bool serial)
{
	if (!serial)
		pthread_mutex_lock(lock);
}

static inline void shim_data_unlock(pthread_mutex_t *lock, bool serial)
{
	if (!serial)
		pthread_mutex_unlock(lock);
}

static inline struct shim_domain *to_shim_domain(struct fid_domain *domain)
{
	return container_of(domain, struct shim_domain, domain_fid);
}

int shim_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context);
int shim_domain_open2(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, uint64_t flags,
		      void *context);
bool shim_is_domain(const struct fid_domain *domain);

/* ---- address vectors (av.c) ---- */

/* The mode of named AVs this process creates: FI_KFAB_AV_MODE (octal). */
unsigned int shim_av_create_mode(void);
/* FI_KFAB_LAZY_DOORBELL != 0: endpoints' rings wait for progress (ring.c). */
bool shim_lazy_doorbell(void);
/* FI_KFAB_SQ_POLL: the ring poller's idle microseconds, 0 for none. */
unsigned int shim_sq_poll_us(void);

struct shim_av;

int shim_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av, void *context);
/* For endpoints: the AV behind a fid, NULL unless it is a kfab AV. */
struct shim_av *shim_av_from_fid(struct fid *fid);
/* An endpoint binds to or unbinds from the AV: fi_close() is -FI_EBUSY between. */
void shim_av_bind_ep(struct shim_av *av);
void shim_av_unbind_ep(struct shim_av *av);
/* The address at @fi_addr, read from the mapped table: 0 or -FI_EINVAL. */
int shim_av_rx_split(const struct shim_av *av, fi_addr_t *fi_addr,
		     uint16_t *rx_index);
int shim_av_resolve(struct shim_av *av, fi_addr_t fi_addr,
		    struct kfab_addr *addr);
/* What a completion reports for @fi_addr: its FI_AV_USER_ID, or itself. */
fi_addr_t shim_av_user_id(struct shim_av *av, fi_addr_t fi_addr);

/* The kernel id of the AV handle, for KFAB_IOC_EP_BIND. */
uint32_t shim_av_id(const struct shim_av *av);

/* ---- event queues (eq.c) ---- */

/* attr->size 0 in fi_eq_open() means this many events. */
#define SHIM_EQ_DEFAULT_SIZE	256

/*
 * An EQ; the struct fid_eq is its first member, eq_fid.  Other libshim
 * objects post their asynchronous events to it:
 *
 * shim_eq_from_fid()  the kfab EQ behind @fid, or NULL when @fid is not one
 *                     (e.g. the EQ an application binds to an AV).
 * shim_eq_post()      appends a normal event of @len bytes (copied), e.g.
 *                     FI_AV_COMPLETE with a struct fi_eq_entry.  Never
 *                     refused for lack of room: kfab's own events are kept
 *                     beyond attr->size (and counted).  0, or -FI_ENOMEM
 *                     (-FI_EINVAL for a NULL @eq, or NULL @buf with @len).
 * shim_eq_post_err()  appends an error entry: *@err is copied, and so are
 *                     err->err_data_size bytes of err->err_data if both are
 *                     set.  err->err is a positive FI_E* value, prov_errno a
 *                     positive errno or 0.  Same returns.
 * shim_eq_bind()      an object now refers to @eq: fi_close(eq) answers
 *                     -FI_EBUSY until the matching shim_eq_unbind().
 * shim_eq_attach_cm() every read of @eq runs @hook->progress first (cm.c);
 *                     shim_eq_detach_cm() stops it, waiting for a run.
 *
 * All are thread-safe and may be called from any thread.
 */
struct shim_eq;

struct shim_eq *shim_eq_from_fid(struct fid *fid);
int shim_eq_post(struct shim_eq *eq, uint32_t event, const void *buf,
		 size_t len);
int shim_eq_post_err(struct shim_eq *eq, const struct fi_eq_err_entry *err);
void shim_eq_bind(struct shim_eq *eq);
void shim_eq_unbind(struct shim_eq *eq);

/**
 * struct shim_cm_hook - a CM object that an EQ's reads progress (cm.c)
 * @next: the EQ's list, under its cm_lock
 * @progress: turns the object's control messages into events of the EQ;
 *	runs under the EQ's cm_lock and may post to the EQ.  Returns in how
 *	many ms it wants to run again without a message, or -1 for never
 * @fd: an eventfd signalled when a control message arrives (reset by
 *	@progress before it looks), in the EQ's wait fd; or -1
 */
struct shim_cm_hook {
	struct shim_cm_hook *next;
	int (*progress)(struct shim_cm_hook *hook);
	int fd;
};

void shim_eq_attach_cm(struct shim_eq *eq, struct shim_cm_hook *hook);
void shim_eq_detach_cm(struct shim_eq *eq, struct shim_cm_hook *hook);

int shim_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq, void *context);
/* ---- completion queues (cq.c) and counters (cntr.c) ---- */

int shim_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cq, void *context);
int shim_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);

struct shim_ep;
struct shim_cq;
struct shim_cntr;

/*
 * For endpoints (ep.c): the CQ or counter behind a fid (NULL unless it is
 * kfab's), its kernel id, and the list of endpoints bound to it.  Reading
 * the CQ (fi_cq_read/readfrom/sread/sreadfrom) or the counter
 * (fi_cntr_read/readerr/wait) first rings the doorbell of every attached
 * endpoint whose ring holds requests (shim_ep_progress()): that is the
 * manual progress of FI_PROGRESS_MANUAL.  fi_close() of a CQ or counter
 * answers -FI_EBUSY while an endpoint is attached.  attach: 0 or
 * -FI_ENOMEM; attaching an endpoint twice is counted twice.
 */
struct shim_cq *shim_cq_from_fid(struct fid *fid);
uint32_t shim_cq_id(const struct shim_cq *cq);
int shim_cq_attach_ep(struct shim_cq *cq, struct shim_ep *ep);
void shim_cq_detach_ep(struct shim_cq *cq, struct shim_ep *ep);
struct shim_cntr *shim_cntr_from_fid(struct fid *fid);
/* Poll sets (poll.c): a member's close is -FI_EBUSY while it is one. */
void shim_cntr_poll_ref(struct shim_cntr *cntr, int delta);
void shim_cq_poll_ref(struct shim_cq *cq, int delta);
/* The CQ's endpoints progressed; true when it holds something to read. */
bool shim_cq_poll_ready(struct shim_cq *cq);
int shim_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **pollset);
uint32_t shim_cntr_id(const struct shim_cntr *cntr);
int shim_cntr_attach_ep(struct shim_cntr *cntr, struct shim_ep *ep);
void shim_cntr_detach_ep(struct shim_cntr *cntr, struct shim_ep *ep);

/*
 * A list of endpoints to progress (cq.c; used by cq.c and cntr.c).  Its
 * lock is its own: progress never takes the lock of a CQ or an endpoint.
 */
struct shim_ep_list {
	pthread_mutex_t lock;
	bool serial;		/* progress skips @lock (shim_data_lock()) */
	struct shim_ep **eps;
	size_t count;
	size_t cap;
};

int shim_ep_list_init(struct shim_ep_list *list);
void shim_ep_list_destroy(struct shim_ep_list *list);
int shim_ep_list_add(struct shim_ep_list *list, struct shim_ep *ep);
void shim_ep_list_del(struct shim_ep_list *list, struct shim_ep *ep);
size_t shim_ep_list_count(struct shim_ep_list *list);
/*
 * Ring the doorbells; true when some ring still holds requests after.
 * Waiters that see true sleep at most SHIM_PROGRESS_SLICE_MS at a time.
 */
#define SHIM_PROGRESS_SLICE_MS	1
bool shim_ep_list_progress(struct shim_ep_list *list);

/* FI_GET_VAL of KFAB_FID_KERNEL_HANDLE (cq.c), for CQs and counters. */
int shim_get_kernel_handle(void *arg, int fd, uint32_t id);

/*
 * Blocking on an eventfd (cq.c): the remaining time of a timeout in ms
 * (negative: forever) and a poll that returns when the fd is readable or
 * the time is up; the fd's count is reset after.
 */
int shim_timeout_left(int timeout, const struct timespec *start);
void shim_eventfd_wait(int efd, int timeout_ms);
void shim_eventfd_reset(int efd);

/* ---- wait sets (wait.c) ---- */

/* What a member of a wait set is, so the set knows how to ask it. */
enum shim_wait_kind {
	SHIM_WAIT_CQ,
	SHIM_WAIT_CNTR,
	SHIM_WAIT_EQ,
};

struct shim_wait;

int shim_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		   struct fid_wait **waitset);
/* attr->wait_set of an FI_WAIT_SET object: a kfab set of @fabric, or NULL */
struct shim_wait *shim_wait_from_fid(struct fid_wait *wait_fid,
				     struct shim_fabric *fabric);
int shim_wait_add(struct shim_wait *ws, struct fid *fid,
		  enum shim_wait_kind kind, int efd);
void shim_wait_del(struct shim_wait *ws, struct fid *fid);
int shim_wait_getwait(struct shim_wait *ws, void *arg);
/* FI_WAIT_MUTEX_COND CQs and counters: a set of their own */
int shim_wait_open_own(struct shim_fabric *fabric, struct shim_wait **out);
void shim_wait_close_own(struct shim_wait *ws);
/* eq.c: an EQ's events for its wait set, after its CM hooks ran. */
bool shim_eq_wait_ready(struct fid *fid);

/* ---- submission rings (ring.c) ---- */

/**
 * struct shim_ring - the producer side of a submission ring
 * @fd: the fabric's device file
 * @id: the kernel object whose doorbell drains it (an endpoint or an SRX)
 * @map: the ring region, mapped read-write, @map_len bytes
 * @tail: the producer index in @map (we write it)
 * @head: the consumer index in @map (the kernel writes it)
 * @sqes: the first slot
 * @entries: slots of the ring; @mask: @entries - 1
 * @entry_size: bytes from one slot to the next (>= sizeof(struct kfab_sqe))
 * @local_tail: our copy of the producer index, never read back from @tail;
 *	it runs ahead of the published one during an FI_MORE batch
 * @published: the tail last published (stored in @tail)
 * @lazy: a request without FI_MORE is published but not rung: the next
 *	progress call (reading a CQ or counter the owner is bound to), a
 *	full ring or fi_close() rings once for all of them
 * @due: @lazy, and requests wait for a doorbell (shim_lazy_flush())
 * @due_epoch: the sweeper's wake count when @due was last set
 * @due_seq: the process's count of rings made due, when @due was set
 *
 * Endpoints (sends and receives) and shared receive contexts (receives)
 * write their requests through this one piece of code.  The owner's lock
 * serialises producers: every shim_ring_*() but shim_ring_progress() is
 * called under it.
 */
struct shim_ring {
	int fd;
	uint32_t id;
	void *map;
	size_t map_len;
	uint32_t *tail;
	const uint32_t *head;
	uint8_t *sqes;
	uint32_t entries, mask, entry_size;
	uint32_t local_tail;
	uint32_t published;
	/* KFAB_SQ_RING_* of the kernel, NULL when the module has none */
	const uint32_t *flags;
	/* The fabric's poller takes what is published (sqpoll.c) */
	bool watched;
	/* What the last progress call found waiting for the poller */
	uint32_t seen_head, seen_tail;
	bool lazy;
	bool due;
	unsigned int due_epoch;
	unsigned int due_seq;
};

/*
 * Check @layout (the out_sq of KFAB_IOC_EP_OPEN or KFAB_IOC_SRX_OPEN)
 * against what fits its region, map it and start both indices at the
 * kernel's head: 0, -FI_EOTHER for a layout that does not fit, or mmap()'s
 * -errno.
 */
int shim_ring_map(struct shim_ring *ring, int fd, uint32_t id,
		  const struct kfab_sq_layout *layout);
void shim_ring_unmap(struct shim_ring *ring);
/* The ring's size for queue sizes summing to @want (0: the kernel's). */
uint32_t shim_ring_entries(uint64_t want);
/* Free slots, as far as we know (a head that is not the kernel's: none). */
uint32_t shim_ring_space(struct shim_ring *ring);
/*
 * When shim_ring_post() rings: never (the kernel would refuse the
 * doorbell), at once, or at once unless the ring is @lazy.
 */
enum shim_ring_bell {
	SHIM_BELL_NONE,
	SHIM_BELL_NOW,
	SHIM_BELL_LAZY,
};

/*
 * The next slot, its header zeroed, or NULL when the ring is full: then
 * the ring is published and rung once first (unless SHIM_BELL_NONE).  The
 * caller writes the entry in place, then shim_ring_commit() counts it;
 * a slot left uncommitted is as if never taken.
 */
struct kfab_sqe *shim_ring_slot(struct shim_ring *ring,
				enum shim_ring_bell bell);
/* Count the slot filled: without @more, publish and ring as @bell says. */
ssize_t shim_ring_commit(struct shim_ring *ring, bool more,
			 enum shim_ring_bell bell);
/* shim_ring_slot(), a copy of @sqe (its used part), shim_ring_commit(). */
ssize_t shim_ring_post(struct shim_ring *ring, const struct kfab_sqe *sqe,
		       bool more, enum shim_ring_bell bell);

/*
 * The bytes of @sqe the kernel reads: the header, then as much of the
 * union as the header says is used (the payload, or iov_count buffers).
 * The rest of an entry built on the stack need not be initialised.
 */
static inline size_t shim_sqe_size(const struct kfab_sqe *sqe)
{
	size_t used = sqe->flags & KFAB_SQE_INLINE ?
		      sqe->len : sqe->iov_count * sizeof(sqe->iov[0]);

	if (used > sizeof(sqe->iov))
		used = sizeof(sqe->iov);
	return offsetof(struct kfab_sqe, iov) + used;
}

/*
 * A small payload (an inject's into its entry, a completion slot's into
 * the receive's buffer; at most 64 bytes) a word at a time: memcpy() of a
 * length known only at run time is a call into libc whose dispatch costs
 * more than an 8-byte message's copy.
 */
static inline void shim_copy_small(void *to, const void *from, size_t len)
{
	uint8_t *t = to;
	const uint8_t *f = from;

	for (; len >= sizeof(uint64_t); len -= sizeof(uint64_t)) {
		memcpy(t, f, sizeof(uint64_t));	/* one move, any alignment */
		t += sizeof(uint64_t);
		f += sizeof(uint64_t);
	}
	while (len--)
		*t++ = *f++;
}

/* Publish a pending FI_MORE batch and ring the doorbell. */
void shim_ring_flush(struct shim_ring *ring);
/*
 * Manual progress: ring the doorbell when the published part of the ring
 * holds requests.  Lock-free (the kernel keeps its own head); true when
 * requests remain in the ring afterwards.
 */
bool shim_ring_progress(struct shim_ring *ring);
/*
 * The process's lazy rings: an endpoint's joins when it is enabled, an
 * SRX's when its first endpoint is, and each leaves at fi_close();
 * shim_lazy_flush() rings every one that waits (called by every progress
 * call: CQ, counter, EQ, wait and poll sets).  shim_lazy_add() makes the
 * ring lazy (@lazy) unless FI_KFAB_LAZY_DOORBELL=0 or it has no memory
 * for the list; the ring then stays eager.  The caller holds the ring's
 * owner's lock.
 */
void shim_lazy_add(struct shim_ring *ring);
void shim_lazy_del(struct shim_ring *ring);
void shim_lazy_flush(void);
/* Around every sleep of a blocking read or wait: rings ring at once. */
void shim_lazy_sleep_begin(void);
void shim_lazy_sleep_end(void);
/* fi_trywait() said 0: the program sleeps outside kfab until it calls. */
void shim_lazy_trywait_done(void);
/* The sweeper's period (FI_KFAB_LAZY_DOORBELL), before any ring is lazy. */
void shim_lazy_set_period(unsigned int usec);
/* Stop the sweeper: the provider is unloaded (shim_cleanup()). */
void shim_lazy_cleanup(void);
/*
 * The ring poller (sqpoll.c): with FI_KFAB_SQ_POLL, an enabled endpoint's
 * ring is watched by its fabric's poller thread (true); before the
 * endpoint goes it is unwatched; the fabric's close stops the thread.
 */
bool shim_ring_watch(struct shim_ring *ring, struct shim_fabric *fab);
void shim_ring_unwatch(struct shim_ring *ring);
void shim_sq_poll_stop(struct shim_fabric *fab);

/* ---- endpoints (ep.c), shared receive contexts (srx.c), data path (msg.c) ---- */

/* ep_attr->max_msg_size: the largest message kfab carries. */
#define SHIM_MAX_MSG_SIZE	(1ULL << 30)
/*
 * An FI_EP_DGRAM endpoint's max_msg_size: what the kernel always sends
 * eagerly (kernel/msg.c's KFAB_MSG_EAGER_MAX), so a datagram never waits
 * pinned for its receiver.
 */
#define SHIM_DGRAM_MAX_MSG_SIZE	(64 * 1024)
/*
 * rx_attr->total_buffered_recv: what the kernel buffers per endpoint for
 * messages that arrive before their receive (a kernel limit).
 */
#define SHIM_BUFFERED_RECV	(1UL << 20)
/* tx_attr->size and rx_attr->size offered by default */
#define SHIM_EP_QUEUE_SIZE	256

/*
 * Receive capabilities an endpoint bound to an SRX may use only if the
 * SRX has them (fi_endpoint(3): "Endpoints associated with a shared
 * receive context must use a subset of the receive context's
 * attributes").  FI_RECV, FI_LOCAL_COMM and FI_REMOTE_COMM are left out:
 * they say which directions and which peers, not how receives match.
 */
#define SHIM_SRX_SUBSET_CAPS	(FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | \
				 FI_SOURCE | FI_MULTI_RECV)

struct shim_srx;
struct shim_srx_hooks;

/**
 * struct shim_ep - a fid_ep: a kernel endpoint (FI_EP_RDM)
 * @ep_fid: what libfabric sees
 * @domain: the parent
 * @fd: the fabric's device file
 * @id: the kernel's id of the endpoint
 * @addr: its address (fi_getname)
 * @addr_format: the addr_format of its fi_info: fi_getname() and
 *	fi_setname() take FI_ADDR_STR addresses as strings
 * @caps: the capabilities it was opened with
 * @shared_rx: opened with ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT: it
 *	needs an SRX before fi_enable()
 * @lock: serialises ring production and every change of state below
 * @enabled: fi_enable() succeeded: no more binds, data transfers allowed
 * @av: the bound AV, or NULL
 * @srx: the bound shared receive context, or NULL: receives are posted
 *	there, not here (read without @lock by progress; set before enable)
 * @tx_cq: the CQ of transmit completions, or NULL; @tx_selective: bound
 *	with FI_SELECTIVE_COMPLETION
 * @rx_cq: the same for receives; @rx_selective
 * @tx_cntr: the counter of sends, or NULL
 * @rx_cntr: the counter of receives, or NULL
 * @eq: the bound EQ, or NULL (kept for future events)
 * @tx_op_flags: default flags of fi_send() and friends (fi_control)
 * @rx_op_flags: default flags of fi_recv() and friends
 * @min_multi_recv: FI_OPT_MIN_MULTI_RECV
 * @ring: the submission ring, for sends and (without an SRX) receives
 */
struct shim_ep {
	struct fid_ep ep_fid;
	struct shim_domain *domain;
	int fd;
	uint32_t id;
	struct kfab_addr addr;
	uint32_t addr_format;
	uint64_t caps;
	bool shared_rx;
	pthread_mutex_t lock;
	bool enabled;
	struct shim_av *av;
	struct shim_srx *srx;
	struct shim_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct shim_cntr *tx_cntr, *rx_cntr;
	struct shim_eq *eq;
	uint64_t tx_op_flags, rx_op_flags;
	size_t min_multi_recv;
	struct shim_ring ring;
	struct shim_conn *conn;
	enum fi_ep_type type;
	size_t max_msg_size;
	bool shared_tx;
	struct shim_stx *stx;
	unsigned int alias_cnt;
	size_t buffered_limit, buffered_min, buffered_total;
	bool buffered;
	struct shim_bufrecv *bufrecv;
	int hmem_p2p;
	struct shim_sep *sep;
	struct shim_ep *parent;
	int ctx_index;
	bool ctx_rx;
};

/* ---- buffered receives (bufrecv.c) ---- */

struct shim_bufrecv;

/*
 * rx_attr->total_buffered_recv of a buffered receive context (bufrecv.c):
 * the bytes its region holds, by default KFAB_BUFRECV_SLOTS_DEFAULT slots
 * of the default limit, at most the kernel's KFAB_BUFRECV_REGION_MAX.
 */
#define SHIM_BUFRECV_TOTAL_DEFAULT \
	((size_t)KFAB_BUFRECV_SLOTS_DEFAULT * KFAB_BUFRECV_LIMIT_DEFAULT)
#define SHIM_BUFRECV_TOTAL_MAX	((size_t)KFAB_BUFRECV_REGION_MAX)

uint32_t shim_bufrecv_slots(size_t limit, size_t total);
size_t shim_bufrecv_default_limit(size_t total);
size_t shim_bufrecv_total(size_t want);
int shim_bufrecv_setup(struct shim_ep *ep);
int shim_bufrecv_setup_srx(struct shim_srx *srx, size_t limit, size_t total,
			   struct shim_bufrecv **out);
void shim_bufrecv_free(struct shim_ep *ep);
void shim_bufrecv_close(struct shim_bufrecv *br);
size_t shim_bufrecv_limit(const struct shim_bufrecv *br);
bool shim_bufrecv_entry(struct kfab_cq_entry *e);
ssize_t shim_bufrecv_claim(struct shim_bufrecv *br, struct kfab_sqe *sqe,
			   const void *context, uint64_t flags, bool *buffers);

/* ---- scalable endpoints (sep.c) ---- */

#define SHIM_SEP_MAX_CTX	KFAB_EP_BLOCK_MAX

int shim_ep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep_fid, void *context,
		 const struct kfab_ep_open *block);
int shim_ep_bind_av(struct shim_ep *ep, struct fid *bfid, uint64_t flags);
ssize_t shim_probe(struct shim_ep *ep, fi_addr_t dest);
int shim_scalable_ep(struct fid_domain *domain, struct fi_info *info,
		     struct fid_ep **sep, void *context);
int shim_sep_bind(struct shim_ep *ep, struct fid *bfid, uint64_t flags);
int shim_sep_enable(struct shim_ep *ep);
bool shim_sep_busy(struct shim_ep *ep);
void shim_sep_free(struct shim_ep *ep);
void shim_sep_ctx_closed(struct shim_ep *ctx);
int shim_sep_tx_context(struct shim_ep *ep, int index,
			struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			void *context);
int shim_sep_rx_context(struct shim_ep *ep, int index,
			struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			void *context);

static inline struct shim_ep *to_shim_ep(struct fid_ep *ep)
{
	return container_of(ep, struct shim_ep, ep_fid);
}

/**
 * struct shim_ep_alias - fi_ep_alias(3): an endpoint with flags of its own
 * @ep_fid: what libfabric sees (FI_CLASS_EP, shim_ep_alias_fi_ops)
 * @ep: the endpoint it is an alias of; holds one of its @alias_cnt
 * @tx_op_flags, @rx_op_flags: the defaults of the alias's operations
 *
 * Everything but the default flags is the endpoint's: msg.c finds the
 * endpoint with shim_msg_ep() and the flags with shim_ep_alias_of().
 */
struct shim_ep_alias {
	struct fid_ep ep_fid;
	struct shim_ep *ep;
	uint64_t tx_op_flags, rx_op_flags;
};

extern const struct fi_ops shim_ep_alias_fi_ops;

static inline struct shim_ep_alias *shim_ep_alias_of(struct fid_ep *ep)
{
	if (ep->fid.ops != &shim_ep_alias_fi_ops)
		return NULL;
	return container_of(ep, struct shim_ep_alias, ep_fid);
}

/* The endpoint behind an endpoint or an alias of one (data path). */
static inline struct shim_ep *shim_msg_ep(struct fid_ep *ep)
{
	struct shim_ep_alias *alias = shim_ep_alias_of(ep);

	return alias ? alias->ep : to_shim_ep(ep);
}

/* stx.c: shared transmit contexts, library objects endpoints bind. */
struct shim_stx;
int shim_stx_context(struct fid_domain *domain, struct fi_tx_attr *attr,
		     struct fid_stx **stx, void *context);
int shim_stx_bind_ep(struct fid *fid, struct shim_domain *domain,
		     uint64_t tx_caps, struct shim_stx **out);
void shim_stx_unbind_ep(struct shim_stx *stx);

/* alias.c: fi_control(FI_ALIAS) of an endpoint (@flags: FI_ALIAS's). */
int shim_ep_alias_open(struct shim_ep *ep, const struct shim_ep_alias *from,
		       struct fi_alias *arg);
/* ep.c: FI_SETOPSFLAG's check and split, shared with aliases. */
int shim_opsflag_set(uint64_t flags, uint64_t *tx, uint64_t *rx);
int shim_opsflag_get(uint64_t *flags, uint64_t tx, uint64_t rx);

int shim_endpoint(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **ep, void *context);

/* ---- connection management (cm.c): FI_EP_MSG and passive endpoints ---- */

/* The most connection data fi_connect/fi_accept/fi_reject carry. */
#define SHIM_CM_DATA_MAX	256

struct shim_conn;
int shim_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_pep **pep, void *context);
int shim_conn_open(struct shim_ep *ep, struct fid_domain *domain,
		   const struct fi_info *info, struct shim_conn **out);
struct fid *shim_conn_av(struct shim_conn *conn);
void shim_conn_enable(struct shim_conn *conn, struct shim_eq *eq);
int shim_conn_dest(struct shim_conn *conn, fi_addr_t *dest);
void shim_conn_close(struct shim_conn *conn);
void shim_conn_free(struct shim_conn *conn);
int shim_conn_connect(struct fid_ep *ep, const void *addr, const void *param,
		      size_t paramlen);
int shim_conn_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int shim_conn_shutdown(struct fid_ep *ep, uint64_t flags);
int shim_conn_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int shim_ep_msg_getopt(fid_t fid, int level, int optname, void *optval,
		       size_t *optlen);
int shim_endpoint2(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, uint64_t flags, void *context);
/*
 * Manual progress: the endpoint's ring, and its SRX's (see
 * shim_ring_progress()).  True when requests remain in a ring afterwards.
 */
bool shim_ep_progress(struct shim_ep *ep);

/*
 * ep.c's tables of what endpoints and SRXs both lack (RMA, atomics,
 * collectives): every entry -FI_ENOSYS (-FI_EOPNOTSUPP for the atomic
 * valid queries).
 */
extern const struct fi_ops_rma shim_ep_rma_ops;
extern const struct fi_ops_atomic shim_ep_atomic_ops;
extern const struct fi_ops_collective shim_ep_collective_ops;

/**
 * struct shim_srx - a fid_ep of class FI_CLASS_SRX_CTX: a kernel shared
 * receive context (KFAB_IOC_SRX_OPEN)
 * @ep_fid: what libfabric sees
 * @domain: the parent
 * @fd: the fabric's device file
 * @id: the kernel's id of the SRX
 * @caps: its receive capabilities (rx_attr->caps, kfab's when 0)
 * @lock: serialises ring production and the counts below
 * @bound: endpoints bound to it; fi_close() is -FI_EBUSY while non-zero
 * @live: of those, the enabled ones: the kernel takes the SRX's doorbell
 *	only with one (receives posted before wait in the ring)
 * @live_selective: of those, the ones whose RX CQ was bound with
 *	FI_SELECTIVE_COMPLETION
 * @rx_op_flags: default flags of fi_recv() and friends on the SRX
 * @min_multi_recv: FI_OPT_MIN_MULTI_RECV of its multi-receive buffers
 * @ring: its submission ring, receives only
 * @hooks: fi_peer(3) (peer/srx.c): kfab as the peer of another
 *	provider's SRX, or as the owner of an exported one; NULL for an
 *	SRX whose receives the kernel matches.  Set once, with @peer, at
 *	creation or at the first export, before any endpoint is bound
 *	(shim_srx_set_hooks()); read without @lock.
 * @peer: the hooks' state (peer/srx.c's struct shim_psrx)
 * @buffered_limit: FI_OPT_BUFFERED_LIMIT set on the SRX, 0 when not set
 *	(the first endpoint enabled gives its own)
 * @buffered_min: FI_OPT_BUFFERED_MIN set on the SRX
 * @buffered_total: fi_srx_context()'s rx_attr->total_buffered_recv, 0
 *	when not given (the first endpoint enabled gives its own)
 * @mode_set: an endpoint was enabled (or is being): @buffered is fixed
 * @buffered: its endpoints have FI_BUFFERED_RECV; then @bufrecv is its
 *	region (bufrecv.c), set under @lock before the first endpoint is
 *	enabled and kept until fi_close()
 *
 * Completions of its receives go to the CQ and counter of the endpoint
 * the message was sent to; so a success completion is suppressed
 * (FI_SELECTIVE_COMPLETION without FI_COMPLETION) only when every
 * enabled endpoint bound to it asked for selective completions.
 */
struct shim_srx {
	struct fid_ep ep_fid;
	struct shim_domain *domain;
	int fd;
	uint32_t id;
	uint64_t caps;
	pthread_mutex_t lock;
	unsigned int bound, live, live_selective;
	uint64_t rx_op_flags;
	size_t min_multi_recv;
	struct shim_ring ring;
	const struct shim_srx_hooks *hooks;
	void *peer;
	size_t buffered_limit, buffered_min, buffered_total;
	bool mode_set, buffered;
	struct shim_bufrecv *bufrecv;
};

static inline struct shim_srx *to_shim_srx(struct fid_ep *ep)
{
	return container_of(ep, struct shim_srx, ep_fid);
}

/* struct fi_ops_domain.srx_ctx: fi_srx_context() for kfab */
int shim_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context);
/* The SRX behind a fid, NULL unless it is a kfab SRX. */
struct shim_srx *shim_srx_from_fid(struct fid *fid);
/*
 * An endpoint binds (before enable), is enabled, and goes (after its
 * kernel object is destroyed).  shim_srx_bind_ep() checks the subset rule
 * and the domain: 0, -FI_EINVAL or -FI_EDOMAIN.  shim_srx_ep_enabled()
 * rings the SRX's doorbell, so receives posted before any endpoint was
 * enabled are carried out now.
 */
int shim_srx_bind_ep(struct shim_srx *srx, struct shim_ep *ep);
void shim_srx_ep_enabled(struct shim_srx *srx, struct shim_ep *ep);
void shim_srx_unbind_ep(struct shim_srx *srx, struct shim_ep *ep,
			bool was_enabled);
/* Receives into the SRX's ring (msg.c builds them): 0 or -FI_E*. */
ssize_t shim_srx_post(struct shim_srx *srx, const struct kfab_sqe *sqe,
		      bool more);
/* Should a successful receive of the SRX be reported without FI_COMPLETION? */
bool shim_srx_selective(struct shim_srx *srx);
/*
 * FI_BUFFERED_RECV: before the kernel's enable of @ep (bufrecv.c), the
 * SRX's region, made for its first endpoint; 0, -FI_EINVAL when @ep's
 * mode is not the SRX's, or the kernel's.  shim_srx_bufrecv() is the
 * region, NULL when none.
 */
int shim_srx_bufrecv_join(struct shim_srx *srx, struct shim_ep *ep);
struct shim_bufrecv *shim_srx_bufrecv(struct shim_srx *srx);
/* Manual progress of the SRX's ring (shim_ring_progress()). */
bool shim_srx_progress(struct shim_srx *srx);

/*
 * msg.c: the op tables of the data path.  An SRX's receive calls are the
 * endpoint's (they look at the fid's class); its sends are -FI_ENOSYS.
 */
extern const struct fi_ops_msg shim_ep_msg_ops;
extern const struct fi_ops_tagged shim_ep_tagged_ops;
extern const struct fi_ops_msg shim_srx_msg_ops;
extern const struct fi_ops_tagged shim_srx_tagged_ops;
/* Free slots of the endpoint's ring; -FI_EOPBADSTATE before enable. */
ssize_t shim_ep_ring_space(struct shim_ep *ep);

/* ---- fi_peer(3): where peer/ plugs in ---- */

/*
 * The extension's entry points: an object opened with FI_PEER, or handed
 * to another provider with fi_get_val(KFAB_FID_PEER_EXPORT) (<kfab/kfab.h>).
 * Each checks what the owner passed in: 0 or -FI_E*.
 */
struct fid_peer_av;
/* fi_av_open(FI_PEER): the owner's attributes for kfab's own table. */
int shim_av_peer_attr(void *context, struct fi_av_attr *attr,
		      struct fid_peer_av **peer_av);
/* fi_domain2(FI_PEER): checks the context; the owner's domain. */
int shim_domain_peer_check(void *context, struct fid_domain **owner);
/* fi_eq_open(FI_PEER): the owner's EQ, which gets every event. */
int shim_eq_peer_check(void *context, struct fid_eq **owner);
extern const struct fi_ops_eq shim_eq_peer_ops;
int shim_eq_peer_forward(struct fid_eq *owner, uint32_t event,
			 const void *buf, size_t len);
int shim_eq_peer_forward_err(struct fid_eq *owner,
			     const struct fi_eq_err_entry *err);
/* fi_endpoint2(FI_PEER_TRANSFER): checks the context, sets peer_ops. */
int shim_ep_peer_transfer(struct fi_info *info, void *context);
/* fi_import_fid() on a kfab object that gives it no meaning. */
bool shim_is_import_only(const struct fid *fid);
/*
 * fi_cq_open(FI_PEER): @cq, being opened, becomes the peer of @context's
 * owner: its hooks are set and *@ops is the fi_ops_cq it answers with.
 */
int shim_cq_peer_open(struct shim_cq *cq, void *context,
		      const struct fi_ops_cq **ops);
int shim_cq_peer_export(struct shim_cq *cq, void *val);
/* fi_srx_context(FI_PEER): kfab as the peer of @context's owner. */
int shim_srx_peer_context(struct fid_domain *domain, struct fi_rx_attr *attr,
			  struct fid_ep **rx_ep, void *context);
int shim_srx_peer_export(struct shim_srx *srx, void *val);

/**
 * struct shim_cq_hooks - where fi_peer(3) changes what a CQ returns
 * @progress: before every read and wait: drive what feeds the CQ from
 *	outside the kernel (peer SRX engines, imported peer CQs).  True
 *	while some of it is seen only by polling: a waiter then sleeps in
 *	short slices and fi_trywait() says -FI_EAGAIN.
 * @filter: every completion taken from the kernel, @err its error (0 for
 *	success): SHIM_CQ_KEEP, perhaps rewritten in place, or SHIM_CQ_DROP
 *	(the extension's own).  With @commit false nothing changes state
 *	(the caller may not consume the completion yet); the same call with
 *	@commit true, on the entry as it was, makes it final.
 * @queued: completions queued in the library (written by peers), which
 *	fi_cq_read() returns after the kernel's; @pop takes up to @max of
 *	them, oldest first
 * @err_queued: the same for errors; @pop_err takes one, its err_data
 *	copied into @data (up to *@len bytes; *@len set to what was copied):
 *	0 or -FI_EAGAIN
 * @close: fi_close() of the CQ, before its kernel object goes: 0, or an
 *	error that leaves the CQ open (-FI_EBUSY while a peer still writes)
 * @free: the CQ is freed (also after a failed open)
 *
 * The core calls them through shim_cq_hooks() (cq.c): a CQ's own (a peer
 * CQ, an exported CQ), else the process-wide ones, which exist once the
 * process has a peer SRX (its completions come through the CQs of its
 * endpoints, and every read of any CQ drives its progress).  Every member
 * is set.  None is called with cq->lock held, except @filter, @queued,
 * @pop, @err_queued and @pop_err, which take only leaf locks of the
 * extension.
 */
#define SHIM_CQ_KEEP	0
#define SHIM_CQ_DROP	1
struct shim_cq_hooks {
	bool (*progress)(struct shim_cq *cq);
	int (*filter)(struct shim_cq *cq, struct kfab_cq_entry *e, int err,
		      bool commit);
	size_t (*queued)(struct shim_cq *cq);
	size_t (*pop)(struct shim_cq *cq, struct kfab_cq_entry *out,
		      size_t max);
	bool (*err_queued)(struct shim_cq *cq);
	int (*pop_err)(struct shim_cq *cq, struct fi_cq_err_entry *err,
		       void *data, size_t *len);
	int (*close)(struct shim_cq *cq);
	void (*free)(struct shim_cq *cq);
};

/*
 * cq.c for peer/: a CQ's hooks and their state @peer are set once,
 * together.  shim_cq_set_hooks() returns the state set with @hooks:
 * @peer, or another thread's; NULL when the CQ has other hooks.
 * shim_cq_peer() returns the state when the CQ's hooks are @hooks, else
 * NULL.  The process-wide hooks are set once too.
 */
void *shim_cq_set_hooks(struct shim_cq *cq, const struct shim_cq_hooks *hooks,
			void *peer);
void *shim_cq_peer(struct shim_cq *cq, const struct shim_cq_hooks *hooks);
void shim_cq_set_global_hooks(const struct shim_cq_hooks *hooks);
/*
 * The ring of a CQ that only the forwarder reads (a peer CQ).
 * shim_cq_forward() hands each entry of the ring (and of the kernel's
 * overflow list) to @sink with its source already in the terms of the
 * CQ's AV; an entry is consumed only when @sink returns 0, and the walk
 * stops at the first non-zero return, which it returns.  The caller
 * serialises calls.  shim_cq_take_err() reads one error completion into
 * @buf with err_data in the CQ's own buffer: 1, -FI_EAGAIN, or -errno.
 */
typedef int (*shim_cq_sink_fn)(void *arg, const struct kfab_cq_entry *e,
			       fi_addr_t src);
int shim_cq_forward(struct shim_cq *cq, shim_cq_sink_fn sink, void *arg);
bool shim_cq_has_err(struct shim_cq *cq);
ssize_t shim_cq_take_err(struct shim_cq *cq, struct fi_cq_err_entry *buf);
bool shim_cq_progress_eps(struct shim_cq *cq);
/* Wake fi_cq_sread() waiters of @cq (a library queue grew). */
void shim_cq_wake(struct shim_cq *cq);
struct shim_cq *shim_cq_from_cq_fid(struct fid_cq *cq_fid);

/**
 * struct shim_srx_hooks - where fi_peer(3) takes over an SRX's receives
 * @post: a receive posted (kfab as the owner: into the library's lists;
 *	as a peer: -FI_ENOSYS, receives are the owner's)
 * @cancel: fi_cancel() of one
 * @ep_enabled, @ep_unbound: an endpoint bound to the SRX was enabled, or
 *	goes (called with and without srx->lock respectively)
 * @close: fi_close(), before the kernel object goes (srx->lock held):
 *	-FI_EBUSY while a fid_peer_srx without an imported fid is open
 * @free: after it went
 */
struct shim_srx_hooks {
	ssize_t (*post)(struct shim_srx *srx, const struct kfab_sqe *sqe);
	ssize_t (*cancel)(struct shim_srx *srx, void *context);
	void (*ep_enabled)(struct shim_srx *srx, struct shim_ep *ep);
	void (*ep_unbound)(struct shim_srx *srx, struct shim_ep *ep);
	int (*close)(struct shim_srx *srx);
	void (*free)(struct shim_srx *srx);
};

/* srx.c for peer/: under srx->lock, before any endpoint is bound. */
void shim_srx_set_hooks(struct shim_srx *srx,
			const struct shim_srx_hooks *hooks, void *peer);

/* ---- memory registration (mr.c) ---- */

int shim_mr_reg(struct fid *fid, const void *buf, size_t len,
		uint64_t access, uint64_t offset, uint64_t requested_key,
		uint64_t flags, struct fid_mr **mr, void *context);
int shim_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		 uint64_t access, uint64_t offset, uint64_t requested_key,
		 uint64_t flags, struct fid_mr **mr, void *context);
int shim_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		    uint64_t flags, struct fid_mr **mr);
/* Registrations still open in @dom (domain close answers -FI_EBUSY). */
bool shim_domain_has_mrs(struct shim_domain *dom);

/* ---- stubs (enosys.c) ---- */

/* struct fi_ops */
int shim_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int shim_no_control(struct fid *fid, int command, void *arg);
int shim_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context);
int shim_no_tostr(const struct fid *fid, char *buf, size_t len);
int shim_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context);

/* struct fi_ops_cm */
int shim_no_setname(fid_t fid, void *addr, size_t addrlen);
int shim_no_getname(fid_t fid, void *addr, size_t *addrlen);
int shim_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int shim_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		    size_t paramlen);
int shim_no_listen(struct fid_pep *pep);
int shim_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int shim_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		   size_t paramlen);
int shim_no_shutdown(struct fid_ep *ep, uint64_t flags);
int shim_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		 struct fid_mc **mc, void *context);

/* struct fi_ops_domain */
int shim_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			 enum fi_op op, struct fi_atomic_attr *attr,
			 uint64_t flags);
int shim_no_query_collective(struct fid_domain *domain,
			     enum fi_collective_op coll,
			     struct fi_collective_attr *attr, uint64_t flags);

#endif /* SHIM_INTERNAL_H */
