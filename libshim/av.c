// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: fid_av.  An AV is a handle on an AV of the kernel
 * (KFAB_IOC_AV_OPEN) whose table this process maps read-only: inserts and
 * removes are ioctls, lookups read the mapping and make no system call.
 * A named AV (fi_av_attr.name) is one table for the whole node; every
 * process that opens the name maps the same pages and gets the same
 * fi_addr_t for the same address (Documentation/av.rst).
 *
 * fi_addr_t is the table index for FI_AV_TABLE and FI_AV_MAP alike.  With
 * rx_ctx_bits, the top bits carry a receive context (fi_rx_addr()); the
 * index is what is left below them.
 *
 * Addresses are struct kfab_addr (32 bytes, <linux/kfab.h>), or their
 * strings (addr.c) when the domain's addr_format is FI_ADDR_STR: then
 * fi_av_insert() takes an array of strings (char **), fi_av_lookup() gives
 * a string and fi_av_straddr() reads one.  fi_av_insertsvc() and
 * fi_av_insertsym() take nodes and services as fi_getinfo() does
 * (Documentation/av.rst, "Addresses").  The kernel judges every address
 * inserted; a string that is no address is inserted as the all-zero
 * address, which the kernel refuses (KFAB_ADDR_UNSPEC), so it fails alone
 * with -FI_EINVAL as any other bad address does.
 *
 * FI_EVENT inserts are carried out at once (or, with FI_MORE, at the next
 * insert without it) and reported on the bound EQ: an error entry per
 * failed address, then one FI_AV_COMPLETE entry.  FI_MORE batches only
 * asynchronous inserts: a synchronous insert must return how many
 * addresses it inserted, so it cannot wait for the next call.
 */
#include <endian.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rdma/fi_eq.h>

#include "barrier.h"
#include "internal.h"

#define SHIM_AV_OPEN_FLAGS	(FI_EVENT | FI_READ | FI_SYMMETRIC)
#define SHIM_AV_INSERT_FLAGS	(FI_MORE | FI_SYNC_ERR | FI_AV_USER_ID)
/* rx_ctx_bits beyond this would eat into the 32-bit index. */
#define SHIM_AV_MAX_RX_CTX_BITS	32

/* An FI_EVENT insert waiting for the end of an FI_MORE batch. */
struct shim_av_req {
	struct shim_av_req *next;
	struct kfab_addr *addrs;
	size_t count;
	fi_addr_t *fi_addr;
	uint64_t *user_ids;	/* FI_AV_USER_ID values, or NULL */
	void *context;
};

/**
 * struct shim_av - a fid_av
 * @av_fid: what libfabric sees
 * @domain: the parent domain
 * @id: the kernel's id of the AV handle, in the fabric's file
 * @type: FI_AV_TABLE or FI_AV_MAP
 * @rx_ctx_bits: from fi_av_attr
 * @flags: fi_av_attr.flags (FI_EVENT, FI_READ, FI_SYMMETRIC)
 * @map: the table, mapped read-only; @map_size bytes
 * @hdr: the table's header in @map
 * @capacity: entries the table holds
 * @lock: protects everything below
 * @eq: the bound EQ, or NULL
 * @ep_cnt: endpoints bound to the AV
 * @user_ids: FI_AV_USER_ID of each index, or NULL; @user_ids_len entries
 * @pending: FI_EVENT inserts of an unfinished FI_MORE batch, oldest first
 */
struct shim_av {
	struct fid_av av_fid;
	struct shim_domain *domain;
	uint32_t id;
	enum fi_av_type type;
	int rx_ctx_bits;
	uint64_t flags;
	void *map;
	size_t map_size;
	const struct kfab_av_header *hdr;
	uint32_t capacity;
	pthread_mutex_t lock;
	struct shim_eq *eq;
	unsigned int ep_cnt;
	uint64_t *user_ids;
	size_t user_ids_len;
	struct shim_av_req *pending, **pending_tail;
};

static inline int shim_av_fd(const struct shim_av *av)
{
	return av->domain->fabric->fd;
}

/* ---- reading the mapped table ---- */

static const struct kfab_av_entry *shim_av_entry(const struct shim_av *av,
						 uint32_t index)
{
	return (const void *)((const char *)av->map +
			      av->hdr->entries_offset +
			      (size_t)index * av->hdr->entry_size);
}

/*
 * An address of the table, read as the words it is made of (each one
 * untorn; the seqcount below makes the whole consistent).
 */
static void shim_av_copy_addr(const struct kfab_addr *from,
			      struct kfab_addr *to)
{
	const uint64_t *w = (const uint64_t *)from;
	uint64_t words[sizeof(*to) / sizeof(uint64_t)];
	size_t i;

	_Static_assert(sizeof(*to) % sizeof(uint64_t) == 0 &&
		       _Alignof(struct kfab_addr) >= _Alignof(uint64_t),
		       "struct kfab_addr is made of 64-bit words");
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		words[i] = shim_read_once(&w[i]);
	memcpy(to, words, sizeof(*to));
}

/*
 * The reader side of the entry's seqcount (uapi/linux/kfab.h): the acquire
 * load of seq pairs with the kernel's smp_store_release() of the even seq,
 * the rmb with its smp_wmb() after the odd one.
 */
static bool shim_av_read_entry(const struct shim_av *av, uint32_t index,
			       struct kfab_addr *addr)
{
	const struct kfab_av_entry *e = shim_av_entry(av, index);
	uint32_t seq, flags;

	for (;;) {
		seq = shim_load_acquire(&e->seq);
		if (seq & 1)
			continue;
		flags = shim_read_once(&e->flags);
		shim_av_copy_addr(&e->addr, addr);
		shim_smp_rmb();
		if (shim_read_once(&e->seq) == seq)
			break;
	}
	return flags & KFAB_AV_ENTRY_VALID;
}

/* The table index in @fi_addr, below the receive context bits. */
static bool shim_av_index(const struct shim_av *av, fi_addr_t fi_addr,
			  uint32_t *index)
{
	uint64_t i = fi_addr;

	if (fi_addr == FI_ADDR_NOTAVAIL)
		return false;
	if (av->rx_ctx_bits)
		i &= (1ULL << (64 - av->rx_ctx_bits)) - 1;
	if (i >= av->capacity)
		return false;
	*index = (uint32_t)i;
	return true;
}

/*
 * fi_rx_addr(): the receive context in the top rx_ctx_bits of *@fi_addr
 * into *@rx_index, *@fi_addr without them.  An index no scalable endpoint
 * can have is -FI_EINVAL.
 */
int shim_av_rx_split(const struct shim_av *av, fi_addr_t *fi_addr,
		     uint16_t *rx_index)
{
	uint64_t rx;

	*rx_index = 0;
	if (!av || !av->rx_ctx_bits || *fi_addr == FI_ADDR_NOTAVAIL)
		return 0;
	rx = *fi_addr >> (64 - av->rx_ctx_bits);
	if (rx >= SHIM_SEP_MAX_CTX)
		return -FI_EINVAL;
	*rx_index = (uint16_t)rx;
	*fi_addr &= (1ULL << (64 - av->rx_ctx_bits)) - 1;
	return 0;
}

int shim_av_resolve(struct shim_av *av, fi_addr_t fi_addr,
		    struct kfab_addr *addr)
{
	uint32_t index;

	if (!shim_av_index(av, fi_addr, &index) ||
	    !shim_av_read_entry(av, index, addr))
		return -FI_EINVAL;
	return 0;
}

fi_addr_t shim_av_user_id(struct shim_av *av, fi_addr_t fi_addr)
{
	fi_addr_t id = fi_addr;
	uint32_t index;

	pthread_mutex_lock(&av->lock);
	if (av->user_ids && shim_av_index(av, fi_addr, &index) &&
	    index < av->user_ids_len)
		id = av->user_ids[index];
	pthread_mutex_unlock(&av->lock);
	return id;
}

/* ---- inserting ---- */

/* Remember @id as what completions report for @index (under av->lock). */
static int shim_av_set_user_id(struct shim_av *av, uint32_t index,
			       uint64_t id)
{
	if (index >= av->user_ids_len) {
		size_t len = av->capacity;
		uint64_t *ids = realloc(av->user_ids, len * sizeof(*ids));
		size_t i;

		if (!ids)
			return -FI_ENOMEM;
		for (i = av->user_ids_len; i < len; i++)
			ids[i] = i;
		av->user_ids = ids;
		av->user_ids_len = len;
	}
	av->user_ids[index] = id;
	return 0;
}

/*
 * Insert @count addresses, KFAB_AV_BATCH_MAX to an ioctl.  Each address's
 * index (KFAB_AV_INDEX_NONE when it failed) goes to @indices and its status
 * (0 or a negative fabric errno) to @errors.  When the kernel refuses a
 * call itself, the addresses it was given and those after them fail with
 * its error (those before were inserted).
 *
 * Return: the number inserted.
 */
static size_t shim_av_insert_batch(struct shim_av *av,
				   const struct kfab_addr *addrs, size_t count,
				   uint32_t *indices, int *errors)
{
	size_t done = 0, inserted = 0, i;
	int32_t *errs = (int32_t *)errors;	/* same size, see below */
	int ret;

	_Static_assert(sizeof(int) == sizeof(int32_t), "errors are __s32");
	while (done < count) {
		uint32_t n = count - done < KFAB_AV_BATCH_MAX ?
			     count - done : KFAB_AV_BATCH_MAX;
		uint32_t got;

		ret = shim_dev_av_insert(shim_av_fd(av), av->id, addrs + done,
					 n, indices + done, errs + done, &got);
		if (ret) {
			SHIM_WARN(AV, "AV %u: KFAB_IOC_AV_INSERT: %s\n",
				  av->id, fi_strerror(-ret));
			for (i = done; i < count; i++) {
				indices[i] = KFAB_AV_INDEX_NONE;
				errors[i] = ret;
			}
			break;
		}
		inserted += got;
		done += n;
	}
	return inserted;
}

/*
 * Hand the results of an insert to the caller: fi_addr values, and the
 * FI_AV_USER_ID of each address inserted.  Return: the number inserted.
 */
static size_t shim_av_insert_results(struct shim_av *av, size_t count,
				     const uint32_t *indices, int *errors,
				     fi_addr_t *fi_addr,
				     const uint64_t *user_ids)
{
	size_t i, inserted = 0;

	pthread_mutex_lock(&av->lock);
	for (i = 0; i < count; i++) {
		if (!errors[i] && user_ids)
			errors[i] = shim_av_set_user_id(av, indices[i],
							user_ids[i]);
		if (fi_addr)
			fi_addr[i] = errors[i] ? FI_ADDR_NOTAVAIL : indices[i];
		if (!errors[i])
			inserted++;
	}
	pthread_mutex_unlock(&av->lock);
	return inserted;
}

/*
 * Report one FI_EVENT insert: an error entry per failed address (data: its
 * position in the call), then FI_AV_COMPLETE (data: the number inserted).
 * The EQ keeps every entry the provider posts.  @errors NULL: there was no
 * memory to try the insert, every address failed with -FI_ENOMEM.
 */
static void shim_av_report(struct shim_av *av, struct shim_av_req *req,
			   const int *errors, size_t inserted)
{
	struct fi_eq_entry done = {
		.fid = &av->av_fid.fid,
		.context = req->context,
		.data = inserted,
	};
	size_t i;

	for (i = 0; i < req->count; i++) {
		struct fi_eq_err_entry err = {
			.fid = &av->av_fid.fid,
			.context = req->context,
			.data = i,
			.err = errors ? -errors[i] : FI_ENOMEM,
		};

		if (err.err && shim_eq_post_err(av->eq, &err))
			SHIM_WARN(AV, "AV %u: no memory for an EQ error entry\n",
				  av->id);
	}
	if (shim_eq_post(av->eq, FI_AV_COMPLETE, &done, sizeof(done)))
		SHIM_WARN(AV, "AV %u: no memory for FI_AV_COMPLETE\n", av->id);
}

static void shim_av_req_free(struct shim_av_req *req)
{
	free(req->addrs);
	free(req->user_ids);
	free(req);
}

/*
 * The end of an FI_MORE batch: the addresses of every pending insert go to
 * the kernel together, in as few ioctls as KFAB_AV_BATCH_MAX allows, then
 * each insert is reported in the order it was made.
 */
static void shim_av_flush(struct shim_av *av)
{
	struct shim_av_req *list, *req, *next;
	struct kfab_addr *addrs = NULL;
	uint32_t *indices = NULL;
	int *errors = NULL;
	size_t total = 0, at, i;

	pthread_mutex_lock(&av->lock);
	list = av->pending;
	av->pending = NULL;
	av->pending_tail = &av->pending;
	pthread_mutex_unlock(&av->lock);

	for (req = list; req; req = req->next)
		total += req->count;
	if (total) {
		addrs = malloc(total * sizeof(*addrs));
		indices = malloc(total * sizeof(*indices));
		errors = malloc(total * sizeof(*errors));
	}
	if (addrs && indices && errors) {
		at = 0;
		for (req = list; req; req = req->next) {
			memcpy(addrs + at, req->addrs,
			       req->count * sizeof(*addrs));
			at += req->count;
		}
		shim_av_insert_batch(av, addrs, total, indices, errors);
	} else {
		free(errors);
		errors = NULL;
	}

	at = 0;
	for (req = list; req; req = next) {
		size_t inserted = 0;

		next = req->next;
		if (errors)
			inserted = shim_av_insert_results(av, req->count,
							  indices + at,
							  errors + at,
							  req->fi_addr,
							  req->user_ids);
		else if (req->fi_addr)
			for (i = 0; i < req->count; i++)
				req->fi_addr[i] = FI_ADDR_NOTAVAIL;
		shim_av_report(av, req, errors ? errors + at : NULL, inserted);
		at += req->count;
		shim_av_req_free(req);
	}
	free(errors);
	free(indices);
	free(addrs);
}

static int shim_av_queue(struct shim_av *av, const struct kfab_addr *addrs,
			 size_t count, fi_addr_t *fi_addr, uint64_t flags,
			 void *context)
{
	struct shim_av_req *req = calloc(1, sizeof(*req));
	size_t i;

	if (!req)
		return -FI_ENOMEM;
	req->count = count;
	req->fi_addr = fi_addr;
	req->context = context;
	req->addrs = malloc((count ? count : 1) * sizeof(*addrs));
	if (!req->addrs)
		goto err;
	if (count)
		memcpy(req->addrs, addrs, count * sizeof(*addrs));
	if (flags & FI_AV_USER_ID) {
		req->user_ids = malloc((count ? count : 1) * sizeof(uint64_t));
		if (!req->user_ids)
			goto err;
		for (i = 0; i < count; i++)
			req->user_ids[i] = fi_addr[i];
	}

	pthread_mutex_lock(&av->lock);
	*av->pending_tail = req;
	av->pending_tail = &req->next;
	pthread_mutex_unlock(&av->lock);

	if (!(flags & FI_MORE))
		shim_av_flush(av);
	return 0;

err:
	shim_av_req_free(req);
	return -FI_ENOMEM;
}

/* What every insert call checks before it touches anything. */
static int shim_av_insert_check(struct shim_av *av, size_t count,
				fi_addr_t *fi_addr, uint64_t flags,
				void *context)
{
	if (flags & ~SHIM_AV_INSERT_FLAGS)
		return -FI_EBADFLAGS;
	if (av->flags & FI_READ)
		return -FI_EPERM;
	if ((flags & FI_AV_USER_ID) && count && !fi_addr)
		return -FI_EINVAL;
	if (av->flags & FI_EVENT) {
		if (flags & FI_SYNC_ERR)
			return -FI_EBADFLAGS;
		if (!av->eq)
			return -FI_ENOEQ;
	} else if ((flags & FI_SYNC_ERR) && count && !context) {
		return -FI_EINVAL;
	}
	return 0;
}

static int shim_av_insert_addrs(struct shim_av *av,
				const struct kfab_addr *addrs, size_t count,
				fi_addr_t *fi_addr, uint64_t flags,
				void *context)
{
	uint64_t *user_ids = NULL;
	uint32_t *indices = NULL;
	int *errors = NULL, ret;
	size_t i;

	ret = shim_av_insert_check(av, count, fi_addr, flags, context);
	if (ret)
		return ret;
	if (av->flags & FI_EVENT)
		return shim_av_queue(av, addrs, count, fi_addr, flags, context);
	if (!count)
		return 0;
	if (count > INT_MAX)
		return -FI_EINVAL;

	ret = -FI_ENOMEM;
	indices = malloc(count * sizeof(*indices));
	errors = flags & FI_SYNC_ERR ? context : malloc(count * sizeof(*errors));
	if (!indices || !errors)
		goto out;
	if (flags & FI_AV_USER_ID) {
		user_ids = malloc(count * sizeof(*user_ids));
		if (!user_ids)
			goto out;
		for (i = 0; i < count; i++)
			user_ids[i] = fi_addr[i];
	}
	shim_av_insert_batch(av, addrs, count, indices, errors);
	ret = shim_av_insert_results(av, count, indices, errors, fi_addr,
				     user_ids);
out:
	free(user_ids);
	if (errors != context)
		free(errors);
	free(indices);
	return ret;
}

/* The form of the AV's addresses: FI_ADDR_STR or the struct. */
static uint32_t shim_av_format(const struct shim_av *av)
{
	return av->domain->addr_format;
}

/*
 * FI_ADDR_STR: @strs (char **) as addresses.  One that is no address
 * becomes the all-zero address, for the kernel to refuse alone.
 */
static struct kfab_addr *shim_av_parse_strs(const char *const *strs,
					    size_t count)
{
	struct kfab_addr *addrs = calloc(count ? count : 1, sizeof(*addrs));
	size_t i;

	if (!addrs)
		return NULL;
	for (i = 0; i < count; i++)
		if (shim_addr_parse(strs[i], SHIM_ADDR_EP, &addrs[i]))
			memset(&addrs[i], 0, sizeof(addrs[i]));
	return addrs;
}

static int shim_av_insert(struct fid_av *av_fid, const void *addr,
			  size_t count, fi_addr_t *fi_addr, uint64_t flags,
			  void *context)
{
	struct shim_av *av = container_of(av_fid, struct shim_av, av_fid);
	struct kfab_addr *addrs;
	int ret;

	if (count && !addr)
		return -FI_EINVAL;
	if (shim_av_format(av) != FI_ADDR_STR)
		return shim_av_insert_addrs(av, addr, count, fi_addr, flags,
					    context);
	ret = shim_av_insert_check(av, count, fi_addr, flags, context);
	if (ret)
		return ret;
	addrs = shim_av_parse_strs(addr, count);
	if (!addrs)
		return -FI_ENOMEM;
	ret = shim_av_insert_addrs(av, addrs, count, fi_addr, flags, context);
	free(addrs);
	return ret;
}

/* ---- nodes and services, strings ---- */

/*
 * fi_av_insertsvc: @node and @service as fi_getinfo() takes them
 * (Documentation/av.rst): @node NULL or "local" (KFAB_ADDR_LOCAL), a host
 * name or numeric address with an optional ":PORT" ("[IPV6]:PORT"), and
 * @service a service number, 1..65535; or @node a whole "fi_kfab://..."
 * and @service NULL.
 *
 * Return: 1 or 0 (inserted or not, as fi_av_insert()); -FI_EINVAL for a
 * node or service that is malformed or names no endpoint; -FI_ENODATA for
 * a host name that does not resolve; -FI_ENOMEM.
 */
static int shim_av_insertsvc(struct fid_av *av_fid, const char *node,
			     const char *service, fi_addr_t *fi_addr,
			     uint64_t flags, void *context)
{
	struct shim_av *av = container_of(av_fid, struct shim_av, av_fid);
	struct kfab_addr addr;
	uint64_t ep;
	int ret;

	ret = shim_av_insert_check(av, 1, fi_addr, flags, context);
	if (ret)
		return ret;
	if (shim_addr_is_str(node)) {
		if (service || shim_addr_parse(node, SHIM_ADDR_EP, &addr))
			return -FI_EINVAL;
	} else {
		if (shim_addr_service(service, &ep))
			return -FI_EINVAL;
		ret = shim_addr_from_node(node, false, &addr);
		if (ret) {
			SHIM_INFO(AV, "AV %u: node \"%s\": %s\n", av->id, node,
				  fi_strerror(-ret));
			return ret;
		}
		addr.ep = htobe64(ep);
	}
	return shim_av_insert_addrs(av, &addr, 1, fi_addr, flags, context);
}

/*
 * fi_av_insertsym: nodes @node .. @node + @nodecnt - 1 (shim_addr_sym_nodes():
 * numeric addresses count up, host names by their numeric suffix), for each
 * the services @service .. @service + @svccnt - 1, in that order.
 *
 * Return: the number inserted (as fi_av_insert()); -FI_EINVAL for a
 * malformed node or service, counts of 0, or ranges past the last address
 * or past service 65535; -FI_ENODATA for a host name that does not
 * resolve; -FI_ENOMEM.  Nothing is inserted when the call fails.
 */
static int shim_av_insertsym(struct fid_av *av_fid, const char *node,
			     size_t nodecnt, const char *service,
			     size_t svccnt, fi_addr_t *fi_addr,
			     uint64_t flags, void *context)
{
	struct shim_av *av = container_of(av_fid, struct shim_av, av_fid);
	struct kfab_addr *nodes, *addrs;
	size_t i, j, count;
	uint64_t ep;
	int ret;

	if (!nodecnt || !svccnt || shim_addr_service(service, &ep) ||
	    svccnt - 1 > KFAB_SERVICE_MAX - ep || nodecnt > INT_MAX / svccnt)
		return -FI_EINVAL;
	count = nodecnt * svccnt;
	ret = shim_av_insert_check(av, count, fi_addr, flags, context);
	if (ret)
		return ret;
	nodes = calloc(nodecnt, sizeof(*nodes));
	addrs = calloc(count, sizeof(*addrs));
	ret = -FI_ENOMEM;
	if (!nodes || !addrs)
		goto out;
	ret = shim_addr_sym_nodes(node ? node : "local", nodecnt, nodes);
	if (ret) {
		SHIM_INFO(AV, "AV %u: %zu nodes from \"%s\": %s\n", av->id,
			  nodecnt, node ? node : "(null)", fi_strerror(-ret));
		goto out;
	}
	for (i = 0; i < nodecnt; i++) {
		for (j = 0; j < svccnt; j++) {
			addrs[i * svccnt + j] = nodes[i];
			addrs[i * svccnt + j].ep = htobe64(ep + j);
		}
	}
	ret = shim_av_insert_addrs(av, addrs, count, fi_addr, flags, context);
out:
	free(addrs);
	free(nodes);
	return ret;
}

/*
 * fi_av_straddr: the string form of @addr (addr.c), in @buf truncated to
 * *@len bytes with a NUL; *@len set to the size the whole string needs.
 * @addr is a struct kfab_addr, or a string for an FI_ADDR_STR domain,
 * printed back in its canonical form.  An address that is none prints as
 * "fi_kfab://invalid/...", NULL as "fi_kfab://(null)".
 */
static const char *shim_av_straddr(struct fid_av *av_fid, const void *addr,
				   char *buf, size_t *len)
{
	struct shim_av *av = container_of(av_fid, struct shim_av, av_fid);
	const char *str = NULL;
	struct kfab_addr a;
	size_t n, have;

	if (!len)
		return NULL;
	have = buf ? *len : 0;
	if (!addr)
		str = "fi_kfab://(null)";
	else if (shim_av_format(av) != FI_ADDR_STR)
		memcpy(&a, addr, sizeof(a));
	else if (shim_addr_parse(addr, SHIM_ADDR_EP | SHIM_ADDR_SRC, &a))
		str = "fi_kfab://invalid";
	if (!str) {
		n = shim_addr_format(&a, buf, have);
	} else {
		n = strlen(str);
		if (have) {
			size_t copy = n < have ? n : have - 1;

			memcpy(buf, str, copy);
			buf[copy] = '\0';
		}
	}
	*len = n + 1;
	return buf;
}

/* ---- removing, looking up ---- */

static int shim_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr,
			  size_t count, uint64_t flags)
{
	struct shim_av *av = container_of(av_fid, struct shim_av, av_fid);
	uint32_t *indices;
	size_t done, i;
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (av->flags & FI_READ)
		return -FI_EPERM;
	if (!count)
		return 0;
	if (!fi_addr)
		return -FI_EINVAL;
	indices = malloc(count * sizeof(*indices));
	if (!indices)
		return -FI_ENOMEM;
	for (i = 0; i < count; i++) {
		if (!shim_av_index(av, fi_addr[i], &indices[i])) {
			ret = -FI_EINVAL;
			goto out;
		}
	}
	for (done = 0; done < count && !ret; done += KFAB_AV_BATCH_MAX) {
		size_t n = count - done;

		if (n > KFAB_AV_BATCH_MAX)
			n = KFAB_AV_BATCH_MAX;
		ret = shim_dev_av_remove(shim_av_fd(av), av->id,
					 indices + done, n);
	}
	if (!ret && av->user_ids) {
		pthread_mutex_lock(&av->lock);
		for (i = 0; i < count; i++)
			if (indices[i] < av->user_ids_len)
				av->user_ids[indices[i]] = indices[i];
		pthread_mutex_unlock(&av->lock);
	}
out:
	free(indices);
	return ret;
}

/*
 * fi_av_lookup: the address at @fi_addr, in the AV's form (a string for
 * FI_ADDR_STR), truncated to *@addrlen bytes (a string keeps its NUL);
 * *@addrlen set to the size of the whole.
 */
static int shim_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr,
			  void *addr, size_t *addrlen)
{
	struct shim_av *av = container_of(av_fid, struct shim_av, av_fid);
	struct kfab_addr found;
	int ret;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	ret = shim_av_resolve(av, fi_addr, &found);
	if (ret)
		return ret;
	shim_addr_out(&found, shim_av_format(av), addr, addrlen);
	return 0;
}

static int shim_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		       struct fid_av_set **av_set, void *context)
{
	(void)av; (void)attr; (void)av_set; (void)context;
	return -FI_ENOSYS;
}

/* ---- the fid ---- */

static int shim_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct shim_av *av = container_of(fid, struct shim_av, av_fid.fid);
	struct shim_eq *eq;
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	eq = bfid ? shim_eq_from_fid(bfid) : NULL;
	if (!eq)
		return bfid && shim_is_import_only(bfid) ? -FI_ENOSYS :
							   -FI_EINVAL;
	pthread_mutex_lock(&av->lock);
	if (av->eq) {
		ret = -FI_EBUSY;
	} else {
		av->eq = eq;
		shim_eq_bind(eq);
	}
	pthread_mutex_unlock(&av->lock);
	return ret;
}

static int shim_av_close(struct fid *fid)
{
	struct shim_av *av = container_of(fid, struct shim_av, av_fid.fid);
	int ret;

	pthread_mutex_lock(&av->lock);
	ret = av->ep_cnt ? -FI_EBUSY : 0;
	pthread_mutex_unlock(&av->lock);
	if (ret)
		return ret;

	/* An unfinished FI_MORE batch is carried out and reported. */
	if (av->pending)
		shim_av_flush(av);
	ret = shim_dev_destroy(shim_av_fd(av), av->id);
	if (ret) {
		SHIM_WARN(AV, "AV %u: KFAB_IOC_DESTROY: %s\n", av->id,
			  fi_strerror(-ret));
		return ret;
	}
	munmap(av->map, av->map_size);
	if (av->eq)
		shim_eq_unbind(av->eq);
	pthread_mutex_destroy(&av->lock);
	free(av->user_ids);
	free(av);
	return 0;
}

static const struct fi_ops shim_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_av_close,
	.bind = shim_av_bind,
	.control = shim_no_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

static const struct fi_ops_av shim_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = shim_av_insert,
	.insertsvc = shim_av_insertsvc,
	.insertsym = shim_av_insertsym,
	.remove = shim_av_remove,
	.lookup = shim_av_lookup,
	.straddr = shim_av_straddr,
	.av_set = shim_av_set,
};

struct shim_av *shim_av_from_fid(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_AV || fid->ops != &shim_av_fi_ops)
		return NULL;
	return container_of(fid, struct shim_av, av_fid.fid);
}

uint32_t shim_av_id(const struct shim_av *av)
{
	return av->id;
}

void shim_av_bind_ep(struct shim_av *av)
{
	pthread_mutex_lock(&av->lock);
	av->ep_cnt++;
	pthread_mutex_unlock(&av->lock);
}

void shim_av_unbind_ep(struct shim_av *av)
{
	pthread_mutex_lock(&av->lock);
	av->ep_cnt--;
	pthread_mutex_unlock(&av->lock);
}

/* The kernel's answer must describe a table that fits its mapping. */
static bool shim_av_map_ok(const struct shim_av *av)
{
	const struct kfab_av_header *hdr = av->hdr;

	return av->map_size >= sizeof(*hdr) &&
	       hdr->entry_size >= sizeof(struct kfab_av_entry) &&
	       hdr->capacity == av->capacity &&
	       hdr->entries_offset >= sizeof(*hdr) &&
	       hdr->entries_offset <= av->map_size &&
	       (av->map_size - hdr->entries_offset) / hdr->entry_size >=
	       hdr->capacity;
}

static int shim_av_open_check(const struct fi_av_attr *attr)
{
	if (attr->flags & ~SHIM_AV_OPEN_FLAGS)
		return -FI_EBADFLAGS;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE &&
	    attr->type != FI_AV_MAP)
		return -FI_EINVAL;
	if (attr->rx_ctx_bits < 0 ||
	    attr->rx_ctx_bits > SHIM_AV_MAX_RX_CTX_BITS)
		return -FI_EINVAL;
	if (attr->count > UINT32_MAX)
		return -FI_EINVAL;
	if ((attr->flags & FI_READ) && !attr->name)
		return -FI_EINVAL;
	return 0;
}

/**
 * shim_av_open() - struct fi_ops_domain.av_open: fi_av_open() for kfab
 * @domain: a kfab domain
 * @attr: the attributes; type FI_AV_UNSPEC comes back as the type chosen,
 *	  and a named AV's map_addr comes back when it was NULL
 * @av: out: the new AV
 * @context: the application's context for the fid
 *
 * Return: 0; -FI_EINVAL for bad attributes; -FI_EBADFLAGS for unknown
 * flags; -FI_ENOENT for FI_READ of a name that does not exist; -FI_EACCES
 * when the named AV's owner and mode refuse; -EDQUOT when the owner's
 * limits are reached; -FI_ENOMEM.
 */
int shim_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av_fid, void *context)
{
	struct shim_domain *dom = to_shim_domain(domain);
	struct kfab_av_open cmd = { 0 };
	struct fi_av_attr peer_attr;
	struct fid_peer_av *peer_av;
	struct shim_av *av;
	int ret;

	if (!attr || !av_fid)
		return -FI_EINVAL;
	/* fi_peer(3): the owner's attributes, for a table of kfab's own. */
	if (attr->flags & FI_PEER) {
		peer_attr = *attr;
		ret = shim_av_peer_attr(context, &peer_attr, &peer_av);
		if (ret)
			return ret;
		attr = &peer_attr;
		context = NULL;
	}
	ret = shim_av_open_check(attr);
	if (ret)
		return ret;

	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	ret = -pthread_mutex_init(&av->lock, NULL);
	if (ret)
		goto err_free;

	cmd.domain_id = dom->id;
	cmd.type = attr->type == FI_AV_MAP ? KFAB_AV_TYPE_MAP :
		   attr->type == FI_AV_TABLE ? KFAB_AV_TYPE_TABLE :
					       KFAB_AV_TYPE_UNSPEC;
	cmd.count = attr->count;
	if (attr->name) {
		cmd.name = (uintptr_t)attr->name;
		cmd.map_addr = (uintptr_t)attr->map_addr;
		cmd.mode = shim_av_create_mode();
		if (attr->flags & FI_READ)
			cmd.flags |= KFAB_AV_OPEN_READ_ONLY;
	}
	ret = shim_dev_av_open(dom->fabric->fd, &cmd);
	if (ret) {
		SHIM_INFO(AV, "KFAB_IOC_AV_OPEN%s%s: %s\n",
			  attr->name ? " " : "", attr->name ? attr->name : "",
			  fi_strerror(-ret));
		goto err_mutex;
	}
	av->id = cmd.out_av_id;

	av->map_size = cmd.out_region.size;
	av->map = mmap(NULL, av->map_size, PROT_READ, MAP_SHARED,
		       dom->fabric->fd, cmd.out_region.offset);
	if (av->map == MAP_FAILED) {
		ret = -errno;
		SHIM_WARN(AV, "AV %u: mmap: %s\n", av->id, fi_strerror(-ret));
		goto err_destroy;
	}
	av->hdr = av->map;
	av->capacity = cmd.out_count;
	if (!shim_av_map_ok(av)) {
		SHIM_WARN(AV, "AV %u: the kernel's table does not fit its mapping\n",
			  av->id);
		ret = -FI_EOTHER;
		goto err_unmap;
	}

	av->domain = dom;
	av->type = cmd.out_type == KFAB_AV_TYPE_MAP ? FI_AV_MAP : FI_AV_TABLE;
	av->rx_ctx_bits = attr->rx_ctx_bits;
	av->flags = attr->flags;
	av->pending_tail = &av->pending;
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = (struct fi_ops *)&shim_av_fi_ops;
	av->av_fid.ops = (struct fi_ops_av *)&shim_av_ops;

	attr->type = av->type;
	if (attr->name && !attr->map_addr)
		attr->map_addr = (void *)(uintptr_t)cmd.out_map_addr;
	*av_fid = &av->av_fid;
	SHIM_DBG(AV, "AV %u opened: %u entries%s%s\n", av->id, av->capacity,
		 attr->name ? ", name " : "", attr->name ? attr->name : "");
	return 0;

err_unmap:
	munmap(av->map, av->map_size);
err_destroy:
	shim_dev_destroy(dom->fabric->fd, av->id);
err_mutex:
	pthread_mutex_destroy(&av->lock);
err_free:
	free(av);
	return ret;
}
