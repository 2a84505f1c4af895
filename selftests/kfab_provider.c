// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kfab libfabric provider (libshim/) through libfabric's public API:
 * fi_getinfo, fi_fabric, fi_domain, the op tables and the kfab extension.
 *
 * Runs in two places.  On the host there is no /dev/kfab: the tests that
 * need no device run, the others SKIP.  In the VM, with kfab.ko loaded,
 * everything runs.  The device is FI_KFAB_DEV if set, else /dev/kfab, as
 * for the provider.
 *
 * FI_PROVIDER_PATH must name libshim/prov (the runner sets it).  Each test
 * sets FI_PROVIDER=kfab, so that no other provider answers, before its
 * first libfabric call: libfabric reads its parameters once, when it
 * initialises, and the harness runs every test in a fresh forked process in
 * which libfabric has not been initialised yet.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <net/if.h>
#include <sched.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <linux/kfab.h>
#include <kfab/kfab.h>

/* The harness has an unused parameter; this file builds with -Wextra. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop
#include "kfab_test.h"

#define API_VERSION	((uint32_t)FI_VERSION(1, 17))
#define NR_DOMAINS	64

static const char *kfab_dev(void)
{
	const char *dev = getenv("FI_KFAB_DEV");

	return dev && *dev ? dev : "/dev/kfab";
}

static bool have_device(void)
{
	return !access(kfab_dev(), R_OK | W_OK);
}

/* Hints naming kfab, as fi_info -p kfab passes them. */
static struct fi_info *kfab_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->mode = ~0ULL;
	hints->domain_attr->mode = ~0ULL;
	hints->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	hints->fabric_attr->prov_name = strdup("kfab");
	return hints;
}

/*
 * Whether libfabric loaded kfab at all (fi_info -l): without it every
 * fi_getinfo() answers -FI_ENODATA, so the ENODATA tests would prove nothing.
 */
static bool kfab_is_loaded(void)
{
	struct fi_info *info = NULL, *cur;
	bool found = false;

	if (fi_getinfo(API_VERSION, NULL, NULL, FI_PROV_ATTR_ONLY, NULL, &info))
		return false;
	for (cur = info; cur; cur = cur->next)
		found |= cur->fabric_attr->prov_name &&
			 !strcmp(cur->fabric_attr->prov_name, "kfab");
	fi_freeinfo(info);
	return found;
}

/* Open file descriptors of this process. */
static int count_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *d;
	int n = 0;

	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n - 1;	/* the directory's own */
}

/* ---- fi_getinfo ---- */

FIXTURE(provider) {
	bool have_dev;
};

FIXTURE_SETUP(provider)
{
	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	self->have_dev = have_device();
}

FIXTURE_TEARDOWN(provider)
{
}

#define NEED_DEVICE(have)						\
	do {								\
		if (!(have))						\
			SKIP(return, "%s absent: needs kfab.ko (VM)",	\
			     kfab_dev());				\
	} while (0)

TEST_F(provider, getinfo_without_device_returns_enodata)
{
	struct fi_info *hints, *info = NULL;

	/*
	 * On the host there is no device anyway; in the VM this hides it.
	 * kfab reads FI_KFAB_DEV when libfabric loads it, at this process's
	 * first libfabric call below.
	 */
	ASSERT_EQ(0, setenv("FI_KFAB_DEV", "/nonexistent/kfab", 1));
	ASSERT_TRUE(kfab_is_loaded())
		TH_LOG("kfab not loaded: FI_PROVIDER_PATH must name libshim/prov");

	ASSERT_EQ(-FI_ENODATA, fi_getinfo(API_VERSION, NULL, NULL, 0, NULL,
					  &info));
	EXPECT_EQ(NULL, info);

	hints = kfab_hints();
	ASSERT_NE(NULL, hints);
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(API_VERSION, NULL, NULL, 0, hints,
					  &info));
	EXPECT_EQ(NULL, info);
	fi_freeinfo(hints);
}

TEST_F(provider, getinfo_on_a_file_that_is_not_kfab_returns_enodata)
{
	struct fi_info *info = NULL;

	/* /dev/null opens read-write but answers no kfab ioctl (ENOTTY). */
	ASSERT_EQ(0, setenv("FI_KFAB_DEV", "/dev/null", 1));
	ASSERT_TRUE(kfab_is_loaded())
		TH_LOG("kfab not loaded: FI_PROVIDER_PATH must name libshim/prov");
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(API_VERSION, NULL, NULL, 0, NULL,
					  &info));
	EXPECT_EQ(NULL, info);
}

TEST_F(provider, getinfo_lists_kfab)
{
	struct fi_info *hints, *info = NULL;

	NEED_DEVICE(self->have_dev);

	/* No hints at all: kfab lists what it offers, RDM, MSG, DGRAM. */
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, NULL, &info));
	ASSERT_NE(NULL, info);
	ASSERT_NE(NULL, info->next);
	EXPECT_EQ(FI_EP_MSG, (int)info->next->ep_attr->type);
	ASSERT_NE(NULL, info->next->next);
	EXPECT_EQ(FI_EP_DGRAM, (int)info->next->next->ep_attr->type);
	EXPECT_EQ(NULL, info->next->next->next);
	ASSERT_NE(NULL, info->fabric_attr->prov_name);
	EXPECT_STREQ("kfab", info->fabric_attr->prov_name);
	EXPECT_STREQ("kfab", info->fabric_attr->name);
	EXPECT_EQ((uint32_t)KFAB_PROV_VERSION, info->fabric_attr->prov_version);
	EXPECT_EQ(API_VERSION, info->fabric_attr->api_version);
	EXPECT_STREQ("kfab0", info->domain_attr->name);

	/* Truthful: node-local messages and tagged messages, nothing more. */
	EXPECT_EQ(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_LOCAL_COMM |
		  FI_REMOTE_COMM | FI_DIRECTED_RECV | FI_SOURCE |
		  FI_MULTI_RECV | FI_FENCE | FI_SHARED_AV | FI_NAMED_RX_CTX,
		  info->caps);
	EXPECT_EQ(FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV,
		  info->domain_attr->caps);
	EXPECT_EQ(FI_MSG | FI_TAGGED | FI_SEND | FI_LOCAL_COMM |
		  FI_REMOTE_COMM | FI_FENCE, info->tx_attr->caps);
	EXPECT_EQ(FI_MSG | FI_TAGGED | FI_RECV | FI_LOCAL_COMM |
		  FI_REMOTE_COMM | FI_DIRECTED_RECV | FI_SOURCE |
		  FI_MULTI_RECV | FI_NAMED_RX_CTX, info->rx_attr->caps);
	/* A scalable endpoint's contexts (kfab_sep); one by default. */
	EXPECT_EQ(KFAB_EP_BLOCK_MAX, info->domain_attr->max_ep_tx_ctx);
	EXPECT_EQ(KFAB_EP_BLOCK_MAX, info->domain_attr->max_ep_rx_ctx);
	EXPECT_EQ(1U, info->ep_attr->tx_ctx_cnt);
	EXPECT_EQ(1U, info->ep_attr->rx_ctx_cnt);
	EXPECT_EQ(0ULL, info->mode);
	EXPECT_EQ(FI_FORMAT_UNSPEC, (int)info->addr_format);
	EXPECT_EQ(sizeof(struct kfab_addr), info->src_addrlen);
	EXPECT_EQ(FI_EP_RDM, (int)info->ep_attr->type);
	EXPECT_EQ(1ULL << 30, info->ep_attr->max_msg_size);
	/* 64 tag bits, each a field: Open MPI counts them from the top. */
	EXPECT_EQ(0xaaaaaaaaaaaaaaaaULL, info->ep_attr->mem_tag_format);
	EXPECT_EQ(256U, info->tx_attr->size);
	EXPECT_EQ(256U, info->rx_attr->size);
	EXPECT_EQ((size_t)KFAB_INLINE_MAX, info->tx_attr->inject_size);
	EXPECT_EQ((size_t)KFAB_IOV_MAX, info->tx_attr->iov_limit);
	EXPECT_EQ((size_t)KFAB_IOV_MAX, info->rx_attr->iov_limit);
	EXPECT_EQ(FI_ORDER_SAS, info->tx_attr->msg_order);
	EXPECT_EQ(FI_ORDER_SAS, info->rx_attr->msg_order);
	EXPECT_EQ(FI_ORDER_NONE, info->tx_attr->comp_order);
	EXPECT_EQ(0ULL, info->tx_attr->op_flags);
	EXPECT_EQ(1U << 20, info->rx_attr->total_buffered_recv);
	EXPECT_EQ(8U, info->domain_attr->cq_data_size);
	EXPECT_EQ(8U, info->domain_attr->mr_key_size);
	EXPECT_EQ(FI_THREAD_SAFE, (int)info->domain_attr->threading);
	EXPECT_EQ(FI_PROGRESS_AUTO, (int)info->domain_attr->control_progress);
	EXPECT_EQ(FI_PROGRESS_MANUAL, (int)info->domain_attr->data_progress);
	EXPECT_EQ(FI_AV_UNSPEC, (int)info->domain_attr->av_type);
	EXPECT_EQ(0, info->domain_attr->mr_mode);
	EXPECT_LT(0U, info->domain_attr->ep_cnt);
	fi_freeinfo(info);
	info = NULL;

	/* fi_info -p kfab's hints (every mode bit accepted) match too. */
	hints = kfab_hints();
	ASSERT_NE(NULL, hints);
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	ASSERT_NE(NULL, info);
	EXPECT_STREQ("kfab", info->fabric_attr->prov_name);
	EXPECT_EQ(0ULL, info->mode);		/* kfab needs no mode bit */
	EXPECT_EQ(0, info->domain_attr->mr_mode);
	fi_freeinfo(info);
	info = NULL;

	/* A threading model the application asks for is echoed back. */
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_THREAD_DOMAIN, (int)info->domain_attr->threading);
	fi_freeinfo(info);
	info = NULL;

	/* So is an AV type: kfab opens both. */
	hints->domain_attr->av_type = FI_AV_MAP;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_AV_MAP, (int)info->domain_attr->av_type);
	fi_freeinfo(info);
	info = NULL;
	hints->domain_attr->av_type = FI_AV_TABLE;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_AV_TABLE, (int)info->domain_attr->av_type);
	fi_freeinfo(info);
	info = NULL;
	hints->domain_attr->av_type = FI_AV_UNSPEC;

	/* A node and a service: a destination, or with FI_SOURCE a source. */
	EXPECT_EQ(0, fi_getinfo(API_VERSION, "localhost", "4711", 0, hints,
				&info));
	fi_freeinfo(info);
	info = NULL;
	EXPECT_EQ(0, fi_getinfo(API_VERSION, NULL, "4711", FI_SOURCE, hints,
				&info));
	fi_freeinfo(info);
	info = NULL;
	fi_freeinfo(hints);

	/* Before API 1.5 mr_mode was an enum: kfab answers FI_MR_SCALABLE. */
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 4), NULL, NULL, 0, NULL, &info));
	EXPECT_EQ(FI_MR_SCALABLE, info->domain_attr->mr_mode);
	fi_freeinfo(info);
}

static void ask_stream_ep(struct fi_info *h)
{
	h->ep_attr->type = FI_EP_SOCK_STREAM;
}
static void ask_rma(struct fi_info *h) { h->caps = FI_RMA; }
static void ask_atomic(struct fi_info *h) { h->caps = FI_ATOMIC; }
static void ask_sockaddr(struct fi_info *h) { h->addr_format = FI_SOCKADDR_IN; }
static void ask_auto_data_progress(struct fi_info *h)
{
	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
}
static void ask_bad_av_type(struct fi_info *h) { h->domain_attr->av_type = 3; }
static void ask_tx_queue(struct fi_info *h)
{
	h->tx_attr->size = KFAB_SQ_MAX_ENTRIES + 1;
}
/* More contexts than a scalable endpoint has (kfab_sep) */
static void ask_too_many_tx_contexts(struct fi_info *h)
{
	h->ep_attr->tx_ctx_cnt = KFAB_EP_BLOCK_MAX + 1;
}
static void ask_too_many_rx_ctx(struct fi_info *h)
{
	h->domain_attr->max_ep_rx_ctx = KFAB_EP_BLOCK_MAX + 1;
}
static void ask_two_stx(struct fi_info *h)
{
	h->domain_attr->max_ep_stx_ctx = 2;
}
static void ask_two_srx(struct fi_info *h)
{
	h->domain_attr->max_ep_srx_ctx = 2;
}
static void ask_max_msg_size(struct fi_info *h)
{
	h->ep_attr->max_msg_size = (1ULL << 30) + 1;
}
static void ask_inject_size(struct fi_info *h)
{
	h->tx_attr->inject_size = KFAB_INLINE_MAX + 1;
}
static void ask_iov_limit(struct fi_info *h)
{
	h->rx_attr->iov_limit = KFAB_IOV_MAX + 1;
}
static void ask_multicast(struct fi_info *h)
{
	h->tx_attr->op_flags = FI_MULTICAST;
}
static void ask_other_fabric(struct fi_info *h)
{
	h->fabric_attr->name = strdup("tcp");
}
static void ask_other_domain(struct fi_info *h)
{
	h->domain_attr->name = strdup("kfab1");
}

TEST_F(provider, getinfo_rejects_unsupported_hints)
{
	static const struct {
		const char *what;
		void (*ask)(struct fi_info *hints);
	} cases[] = {
		{ "ep_type FI_EP_SOCK_STREAM", ask_stream_ep },
		{ "caps FI_RMA", ask_rma },
		{ "caps FI_ATOMIC", ask_atomic },
		{ "addr_format FI_SOCKADDR_IN", ask_sockaddr },
		{ "data_progress FI_PROGRESS_AUTO", ask_auto_data_progress },
		{ "av_type 3", ask_bad_av_type },
		{ "tx_attr->size KFAB_SQ_MAX_ENTRIES + 1", ask_tx_queue },
		{ "ep_attr->tx_ctx_cnt 257", ask_too_many_tx_contexts },
		{ "domain_attr->max_ep_rx_ctx 257", ask_too_many_rx_ctx },
		{ "domain_attr->max_ep_srx_ctx 2", ask_two_srx },
		{ "domain_attr->max_ep_stx_ctx 2", ask_two_stx },
		{ "ep_attr->max_msg_size 1 GiB + 1", ask_max_msg_size },
		{ "tx_attr->inject_size KFAB_INLINE_MAX + 1", ask_inject_size },
		{ "rx_attr->iov_limit KFAB_IOV_MAX + 1", ask_iov_limit },
		{ "tx_attr->op_flags FI_MULTICAST", ask_multicast },
		{ "fabric name \"tcp\"", ask_other_fabric },
		{ "domain name \"kfab1\"", ask_other_domain },
	};
	struct fi_info *hints, *info = NULL;
	size_t i;

	NEED_DEVICE(self->have_dev);

	/* The hints the cases start from do match... */
	hints = kfab_hints();
	ASSERT_NE(NULL, hints);
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	fi_freeinfo(info);
	fi_freeinfo(hints);

	/* ...and each single unsupported request makes them fail. */
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		info = NULL;
		hints = kfab_hints();
		ASSERT_NE(NULL, hints);
		cases[i].ask(hints);
		EXPECT_EQ(-FI_ENODATA, fi_getinfo(API_VERSION, NULL, NULL, 0,
						  hints, &info))
			TH_LOG("hints asking for %s", cases[i].what);
		EXPECT_EQ(NULL, info);
		fi_freeinfo(hints);
	}
}

/* What endpoints made possible: hints that were refused before them. */
TEST_F(provider, getinfo_accepts_endpoint_hints)
{
	struct fi_info *hints, *info = NULL;

	NEED_DEVICE(self->have_dev);

	/* fi_pingpong -p kfab -e rdm -m tagged|msg asks exactly this. */
	hints = kfab_hints();
	ASSERT_NE(NULL, hints);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT | FI_MSG_PREFIX | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	/* The caps asked for, and the secondary caps of every domain. */
	EXPECT_EQ(FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV,
		  info->caps);
	EXPECT_EQ(0ULL, info->mode);
	EXPECT_EQ(0, info->domain_attr->mr_mode);
	fi_freeinfo(info);
	info = NULL;
	hints->caps = FI_MSG;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_MSG | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV,
		  info->caps);
	fi_freeinfo(info);
	info = NULL;

	/* Open MPI's mtl: tagged, directed receives, completions, a tclass. */
	hints->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM |
		      FI_DIRECTED_RECV;
	hints->tx_attr->op_flags = FI_COMPLETION;
	hints->rx_attr->op_flags = FI_COMPLETION;
	hints->tx_attr->tclass = FI_TC_BULK_DATA;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_COMPLETION, info->tx_attr->op_flags);
	EXPECT_EQ(FI_COMPLETION, info->rx_attr->op_flags);
	EXPECT_EQ(0xaaaaaaaaaaaaaaaaULL, info->ep_attr->mem_tag_format);
	fi_freeinfo(info);
	info = NULL;

	/* A tag layout of the application's own fits in 64 bits: echoed. */
	hints->ep_attr->mem_tag_format = 0x0000ffff0000ffffULL;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(0x0000ffff0000ffffULL, info->ep_attr->mem_tag_format);
	fi_freeinfo(info);
	info = NULL;
	hints->ep_attr->mem_tag_format = 0;

	/* Sizes up to the limits are echoed. */
	hints->tx_attr->size = 1;
	hints->rx_attr->size = KFAB_SQ_MAX_ENTRIES;
	hints->ep_attr->max_msg_size = 1;
	hints->tx_attr->inject_size = KFAB_INLINE_MAX;
	hints->tx_attr->iov_limit = KFAB_IOV_MAX;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(1U, info->tx_attr->size);
	EXPECT_EQ((size_t)KFAB_SQ_MAX_ENTRIES, info->rx_attr->size);
	fi_freeinfo(info);
	info = NULL;

	/* Shared receive contexts: one per endpoint, asked for and echoed. */
	hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	hints->domain_attr->max_ep_srx_ctx = 1;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_SHARED_CONTEXT, info->ep_attr->rx_ctx_cnt);
	EXPECT_EQ(1U, info->domain_attr->max_ep_srx_ctx);
	EXPECT_EQ(1U, info->ep_attr->tx_ctx_cnt);
	fi_freeinfo(info);
	info = NULL;
	hints->ep_attr->rx_ctx_cnt = 0;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(1U, info->ep_attr->rx_ctx_cnt);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* The module's max_objects, from sysfs; 0 when unreadable. */
static unsigned int max_objects_param(void)
{
	FILE *f = fopen("/sys/module/kfab/parameters/max_objects", "r");
	unsigned int v = 0;

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/*
 * Attributes that tell what kfab really is: named AVs (FI_SHARED_AV), the
 * tag bits the kernel matches, and object counts from the module's limit.
 */
TEST_F(provider, getinfo_attributes_are_the_modules)
{
	struct fi_info *hints, *info = NULL;
	unsigned int max;
	size_t objects;

	NEED_DEVICE(self->have_dev);
	max = max_objects_param();
	ASSERT_LT(1U, max) TH_LOG("no /sys/module/kfab/parameters/max_objects");
	objects = max - 1;	/* the domain is one of the file's objects */

	hints = kfab_hints();
	ASSERT_NE(NULL, hints);
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_TRUE(info->caps & FI_SHARED_AV);
	EXPECT_TRUE(info->domain_attr->caps & FI_SHARED_AV);
	/* All 64 tag bits, in libfabric's generic format. */
	EXPECT_EQ(0xaaaaaaaaaaaaaaaaULL, info->ep_attr->mem_tag_format);
	EXPECT_EQ(objects, info->domain_attr->cq_cnt);
	EXPECT_EQ(objects, info->domain_attr->ep_cnt);
	EXPECT_EQ(objects, info->domain_attr->cntr_cnt);
	EXPECT_EQ(objects, info->domain_attr->tx_ctx_cnt);
	EXPECT_EQ(objects, info->domain_attr->rx_ctx_cnt);
	EXPECT_EQ(1U, info->domain_attr->max_ep_srx_ctx);
	fi_freeinfo(info);
	info = NULL;

	/* FI_SHARED_AV asked for is served, as a cap or a domain cap. */
	hints->caps = FI_MSG | FI_SHARED_AV;
	hints->domain_attr->caps = FI_SHARED_AV;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_MSG | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV,
		  info->caps);
	fi_freeinfo(info);
	info = NULL;

	/* Any tag layout fits in 64 matched bits and is echoed back. */
	hints->ep_attr->mem_tag_format = 0xffff00000000ffffULL;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_EQ(0xffff00000000ffffULL, info->ep_attr->mem_tag_format);
	fi_freeinfo(info);
	info = NULL;

	/* Counts up to the module's limit are served, beyond it not. */
	hints->domain_attr->cq_cnt = objects;
	hints->domain_attr->ep_cnt = objects;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	fi_freeinfo(info);
	info = NULL;
	hints->domain_attr->ep_cnt = objects + 1;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(API_VERSION, NULL, NULL, 0, hints,
					  &info));
	EXPECT_EQ(NULL, info);
	hints->domain_attr->ep_cnt = 0;
	hints->domain_attr->cntr_cnt = objects + 1;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(API_VERSION, NULL, NULL, 0, hints,
					  &info));
	EXPECT_EQ(NULL, info);
	fi_freeinfo(hints);
}


/* ---- addresses: node, service, src_addr, dest_addr ---- */

/* A service @ep (or 0) of this machine (LOCAL) or any node (UNSPEC) */
static struct kfab_addr svc_addr(uint8_t family, uint64_t ep)
{
	return kfab_test_addr(family, NULL, 0, ep, 0);
}

/* A service @ep (or 0) of the node @ip */
static struct kfab_addr inet_svc(const char *ip, uint16_t port, uint64_t ep)
{
	return kfab_test_addr(KFAB_ADDR_INET, ip, port, ep, 0);
}

/* kfab's hints in address format @format */
static struct fi_info *hints_in(uint32_t format)
{
	struct fi_info *hints = kfab_hints();

	if (hints)
		hints->addr_format = format;
	return hints;
}

/* fi_getinfo() for kfab with @hints' addr_format: 0 or its error. */
static int getinfo(const char *node, const char *service, uint64_t flags,
		   uint32_t format, struct fi_info **info)
{
	struct fi_info *hints = hints_in(format);
	int rc;

	if (!hints)
		return -FI_ENOMEM;
	*info = NULL;
	rc = fi_getinfo(API_VERSION, node, service, flags, hints, info);
	fi_freeinfo(hints);
	return rc;
}

/* Is @buf of @len bytes exactly the address @want? */
static bool is_addr(const void *buf, size_t len, struct kfab_addr want)
{
	return buf && len == sizeof(want) && !memcmp(buf, &want, len);
}

/* Is @buf of @len bytes exactly the string @want, with its NUL? */
static bool is_str(const void *buf, size_t len, const char *want)
{
	return buf && len == strlen(want) + 1 && !memcmp(buf, want, len);
}

/* The endpoint's name, as a struct kfab_addr (family 0xff: none). */
static struct kfab_addr name_of(struct fid_ep *ep)
{
	struct kfab_addr a = { .family = 0xff };
	size_t len = sizeof(a);

	if (fi_getname(&ep->fid, &a, &len) || len != sizeof(a))
		a.family = 0xff;
	return a;
}

/*
 * fi_getinfo(node, service, FI_SOURCE): src_addr is what the endpoint is
 * opened on, so a service asked for is the endpoint's name.  No listener
 * in the VM's namespace: the name is of this machine (KFAB_ADDR_LOCAL).
 */
TEST_F(provider, getinfo_source_service_is_the_endpoint_name)
{
	struct kfab_test_fi a;
	struct kfab_addr name;
	struct fid_ep *ep2;
	void *src;

	NEED_DEVICE(self->have_dev);
	ASSERT_EQ(0, _test_fi_side_open_at(&a, NULL, "5", FI_SOURCE,
					   hints_in(FI_FORMAT_UNSPEC), false));
	EXPECT_EQ(FI_FORMAT_UNSPEC, (int)a.info->addr_format);
	EXPECT_TRUE(is_addr(a.info->src_addr, a.info->src_addrlen,
			    svc_addr(KFAB_ADDR_UNSPEC, 5)));
	EXPECT_EQ(NULL, a.info->dest_addr);
	EXPECT_EQ(0, a.info->dest_addrlen);
	name = svc_addr(KFAB_ADDR_LOCAL, 5);
	EXPECT_TRUE(is_addr(&name, sizeof(name), name_of(a.ep)));
	/* One endpoint per service; free again once it is closed */
	EXPECT_EQ(-FI_EADDRINUSE, fi_endpoint(a.domain, a.info, &ep2, NULL));
	EXPECT_EQ(0, fi_close(&a.ep->fid));
	ASSERT_EQ(0, fi_endpoint(a.domain, a.info, &a.ep, NULL));
	EXPECT_TRUE(is_addr(&name, sizeof(name), name_of(a.ep)));

	/* An src_addr that is no source address: the library says so */
	src = a.info->src_addr;
	((struct kfab_addr *)src)->incarnation = htobe32(1);
	EXPECT_EQ(-FI_EINVAL, fi_endpoint(a.domain, a.info, &ep2, NULL));
	((struct kfab_addr *)src)->incarnation = 0;
	a.info->src_addrlen--;
	EXPECT_EQ(-FI_EINVAL, fi_endpoint(a.domain, a.info, &ep2, NULL));
	EXPECT_EQ(0, _test_fi_close(&a));

	/* "local": this machine even with a listener */
	ASSERT_EQ(0, _test_fi_side_open_at(&a, "local", "6", FI_SOURCE,
					   kfab_hints(), false));
	EXPECT_TRUE(is_addr(a.info->src_addr, a.info->src_addrlen,
			    svc_addr(KFAB_ADDR_LOCAL, 6)));
	name = svc_addr(KFAB_ADDR_LOCAL, 6);
	EXPECT_TRUE(is_addr(&name, sizeof(name), name_of(a.ep)));
	EXPECT_EQ(0, _test_fi_close(&a));
	/* No service: a number of the module's */
	ASSERT_EQ(0, _test_fi_side_open_at(&a, "local", NULL, FI_SOURCE,
					   kfab_hints(), false));
	EXPECT_TRUE(is_addr(a.info->src_addr, a.info->src_addrlen,
			    svc_addr(KFAB_ADDR_LOCAL, 0)));
	name = name_of(a.ep);
	EXPECT_EQ(KFAB_ADDR_LOCAL, name.family);
	EXPECT_LT(KFAB_SERVICE_MAX, be64toh(name.ep));
	EXPECT_NE(0, name.incarnation);
	EXPECT_EQ(0, _test_fi_close(&a));

	/* A node address this namespace has no listener for */
	ASSERT_EQ(0, _test_fi_domain_open_at(&a, "10.0.0.1", "5", FI_SOURCE,
					     kfab_hints()));
	EXPECT_TRUE(is_addr(a.info->src_addr, a.info->src_addrlen,
			    inet_svc("10.0.0.1", KFAB_PORT_DEFAULT, 5)));
	EXPECT_EQ(-FI_EADDRNOTAVAIL, fi_endpoint(a.domain, a.info, &ep2,
						 NULL));
	EXPECT_EQ(0, _test_fi_close(&a));

	/* FI_SOURCE with neither node nor service: any address, any number */
	ASSERT_EQ(0, _test_fi_domain_open_at(&a, NULL, NULL, FI_SOURCE,
					     kfab_hints()));
	EXPECT_TRUE(is_addr(a.info->src_addr, a.info->src_addrlen,
			    svc_addr(KFAB_ADDR_UNSPEC, 0)));
	EXPECT_EQ(0, _test_fi_close(&a));
}

/* fi_getinfo(@node, @service, @flags) gives dest_addr @want, src_addr any */
static bool dest_is(const char *node, const char *service, uint64_t flags,
		    struct kfab_addr want)
{
	struct fi_info *info;
	bool ok;

	if (getinfo(node, service, flags, 0, &info))
		return false;
	ok = is_addr(info->dest_addr, info->dest_addrlen, want) &&
	     is_addr(info->src_addr, info->src_addrlen,
		     svc_addr(KFAB_ADDR_UNSPEC, 0));
	fi_freeinfo(info);
	return ok;
}

/* fi_getinfo(node, service, 0): dest_addr, and src_addr any. */
TEST_F(provider, getinfo_destination_from_node_and_service)
{
	struct kfab_addr want;
	struct fi_info *info;

	NEED_DEVICE(self->have_dev);
	EXPECT_TRUE(dest_is(NULL, "5", 0, svc_addr(KFAB_ADDR_LOCAL, 5)));
	EXPECT_TRUE(dest_is("local", "65535", 0,
			    svc_addr(KFAB_ADDR_LOCAL, 65535)));
	EXPECT_TRUE(dest_is("10.0.0.1", "5", 0,
			    inet_svc("10.0.0.1", KFAB_PORT_DEFAULT, 5)));
	EXPECT_TRUE(dest_is("10.0.0.1:9000", "5", 0,
			    inet_svc("10.0.0.1", 9000, 5)));
	EXPECT_TRUE(dest_is("[fd00::1]:9000", "1", 0,
			    inet_svc("fd00::1", 9000, 1)));
	EXPECT_TRUE(dest_is("fd00::1", "1", FI_NUMERICHOST,
			    inet_svc("fd00::1", KFAB_PORT_DEFAULT, 1)));
	want = kfab_test_addr(KFAB_ADDR_LOCAL, NULL, 0, 70000, 1);
	EXPECT_TRUE(dest_is("fi_kfab://local/70000.00000001", NULL, 0, want));
	EXPECT_TRUE(dest_is("fi_kfab://[fd00::2]/3", NULL, 0,
			    inet_svc("fd00::2", KFAB_PORT_DEFAULT, 3)));
	/* localhost, looked up: the loopback of either family */
	ASSERT_EQ(0, getinfo("localhost", "5", 0, 0, &info));
	ASSERT_NE(NULL, info->dest_addr);
	EXPECT_EQ(KFAB_ADDR_INET,
		  ((struct kfab_addr *)info->dest_addr)->family);
	fi_freeinfo(info);
}

/* Nodes and services that name nothing: -FI_ENODATA (fi_getinfo(3)). */
TEST_F(provider, getinfo_refuses_what_names_nothing)
{
	static const struct {
		const char *node, *service;
		uint64_t flags;
	} cases[] = {
		{ NULL, "0", 0 }, { NULL, "65536", 0 }, { NULL, "abc", 0 },
		{ NULL, "05", 0 }, { NULL, "-1", 0 }, { NULL, "", 0 },
		{ NULL, "0", FI_SOURCE }, { NULL, "http", FI_SOURCE },
		{ "local", NULL, 0 }, { "10.0.0.1", NULL, 0 },
		{ "fi_kfab://local/5", "5", 0 }, { "fi_kfab://junk", NULL, 0 },
		{ "fi_kfab://any/5", NULL, 0 },
		{ "fi_kfab://local/0", NULL, 0 },
		{ "fi_kfab://local/70000.00000001", NULL, FI_SOURCE },
		{ "fi_sockaddr_in://10.0.0.1:7471", NULL, 0 },
		{ "no-such-node.invalid", "5", 0 },
		{ "no-such-node.invalid", "5", FI_SOURCE },
		{ "localhost", "5", FI_NUMERICHOST },
		{ "0.0.0.0", "5", 0 }, { "::", "5", FI_SOURCE },
		{ "10", "5", 0 }, { "local:7471", "5", 0 },
		{ "10.0.0.1:0", "5", 0 }, { "[10.0.0.1]", "5", 0 },
	};
	struct fi_info *info;
	size_t i;

	NEED_DEVICE(self->have_dev);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		EXPECT_EQ(-FI_ENODATA, getinfo(cases[i].node, cases[i].service,
					       cases[i].flags, 0, &info)) {
			TH_LOG("node \"%s\" service \"%s\"%s",
			       cases[i].node ?: "(null)",
			       cases[i].service ?: "(null)",
			       cases[i].flags & FI_SOURCE ? " FI_SOURCE" : "");
		}
		EXPECT_EQ(NULL, info);
	}
}

/* hints->src_addr and dest_addr: checked, passed on, or ignored. */
TEST_F(provider, getinfo_checks_the_addresses_of_the_hints)
{
	struct kfab_addr src = svc_addr(KFAB_ADDR_LOCAL, 7);
	struct kfab_addr dest = svc_addr(KFAB_ADDR_LOCAL, 8);
	struct kfab_addr bad = kfab_test_addr(KFAB_ADDR_LOCAL, NULL, 0,
					      70000, 1);
	struct fi_info *hints, *info = NULL;

	NEED_DEVICE(self->have_dev);
	hints = kfab_hints();
	ASSERT_NE(NULL, hints);
	hints->src_addr = malloc(sizeof(src));
	hints->dest_addr = malloc(sizeof(dest));
	ASSERT_TRUE(hints->src_addr && hints->dest_addr);
	memcpy(hints->src_addr, &src, sizeof(src));
	memcpy(hints->dest_addr, &dest, sizeof(dest));
	hints->src_addrlen = sizeof(src);
	hints->dest_addrlen = sizeof(dest);
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_TRUE(is_addr(info->src_addr, info->src_addrlen, src));
	EXPECT_TRUE(is_addr(info->dest_addr, info->dest_addrlen, dest));
	fi_freeinfo(info);

	/* FI_SOURCE: the service wins over hints->src_addr. */
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, "9", FI_SOURCE, hints,
				&info));
	EXPECT_TRUE(is_addr(info->src_addr, info->src_addrlen,
			    svc_addr(KFAB_ADDR_UNSPEC, 9)));
	EXPECT_TRUE(is_addr(info->dest_addr, info->dest_addrlen, dest));
	fi_freeinfo(info);
	/* Without FI_SOURCE, node and service win over hints->dest_addr. */
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, "10", 0, hints, &info));
	EXPECT_TRUE(is_addr(info->src_addr, info->src_addrlen, src));
	EXPECT_TRUE(is_addr(info->dest_addr, info->dest_addrlen,
			    svc_addr(KFAB_ADDR_LOCAL, 10)));
	fi_freeinfo(info);

	/* What is no address of its kind, or of another length */
	hints->src_addrlen = sizeof(src) - 1;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(API_VERSION, NULL, NULL, 0, hints,
					  &info));
	hints->src_addrlen = sizeof(src);
	memcpy(hints->src_addr, &bad, sizeof(bad));	/* not a source */
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(API_VERSION, NULL, NULL, 0, hints,
					  &info));
	/* ...which FI_SOURCE ignores */
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, "9", FI_SOURCE, hints,
				&info));
	fi_freeinfo(info);
	memcpy(hints->src_addr, &src, sizeof(src));
	memcpy(hints->dest_addr, &bad, sizeof(bad));
	((struct kfab_addr *)hints->dest_addr)->ep = 0;	/* no endpoint */
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(API_VERSION, NULL, NULL, 0, hints,
					  &info));
	fi_freeinfo(hints);
}

/* ---- conformance: every answer, as fi_getinfo(3) describes it ---- */

/* Does @info carry @len bytes at @a exactly as @want does? */
static bool same_bytes(const void *a, size_t alen, const void *b, size_t blen)
{
	return alen == blen && (!alen || (a && b && !memcmp(a, b, alen)));
}

/* fi_tostr(FI_TYPE_INFO) of one answer (no next), in a malloc'd copy. */
static char *info_str(const struct fi_info *info)
{
	struct fi_info one = *info;

	one.next = NULL;
	return strdup(fi_tostr(&one, FI_TYPE_INFO));
}

/* Are @a and @b the same answer: fi_tostr and the address bytes? */
static bool same_info(const struct fi_info *a, const struct fi_info *b)
{
	char *sa = info_str(a), *sb = info_str(b);
	bool same = sa && sb && !strcmp(sa, sb) &&
		    same_bytes(a->src_addr, a->src_addrlen, b->src_addr,
			       b->src_addrlen) &&
		    same_bytes(a->dest_addr, a->dest_addrlen, b->dest_addr,
			       b->dest_addrlen);

	free(sa);
	free(sb);
	return same;
}

/* The questions whose every answer the conformance tests look at. */
static const struct {
	const char *node, *service;
	uint64_t flags;
	uint32_t format;	/* of the hints; ~0: no hints at all */
} questions[] = {
	{ NULL, NULL, 0, ~0U },
	{ NULL, NULL, 0, FI_FORMAT_UNSPEC },
	{ NULL, NULL, 0, FI_ADDR_STR },
	{ NULL, NULL, FI_SOURCE, FI_FORMAT_UNSPEC },
	{ NULL, "5", FI_SOURCE, FI_FORMAT_UNSPEC },
	{ NULL, "5", FI_SOURCE, FI_ADDR_STR },
	{ "local", "7", 0, FI_FORMAT_UNSPEC },
	{ "10.0.0.1", "5", 0, FI_ADDR_STR },
};

static int ask(size_t q, struct fi_info **info)
{
	*info = NULL;
	if (questions[q].format == ~0U)
		return fi_getinfo(API_VERSION, questions[q].node,
				  questions[q].service, questions[q].flags,
				  NULL, info);
	return getinfo(questions[q].node, questions[q].service,
		       questions[q].flags, questions[q].format, info);
}

#define QUESTION_LOG(q)							\
	TH_LOG("node \"%s\" service \"%s\" flags %#llx format %#x",	\
	       questions[q].node ?: "(null)",				\
	       questions[q].service ?: "(null)",			\
	       (unsigned long long)questions[q].flags, questions[q].format)

/*
 * fi_getinfo(3): "On output a provider shall return an address that
 * corresponds to the indicated fabric, domain, node, and/or service": with
 * nothing named, any address of this node and a number of the module's,
 * in the answer's addr_format; and fi_endpoint() opens on it.
 */
TEST_F(provider, getinfo_every_answer_has_a_src_addr)
{
	struct fi_info *info, *cur;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	size_t q;

	NEED_DEVICE(self->have_dev);
	for (q = 0; q < ARRAY_SIZE(questions); q++) {
		ASSERT_EQ(0, ask(q, &info)) QUESTION_LOG(q);
		for (cur = info; cur; cur = cur->next) {
			ASSERT_NE(NULL, cur->src_addr) QUESTION_LOG(q);
			if (cur->addr_format == FI_ADDR_STR) {
				EXPECT_EQ(0, strncmp("fi_kfab://",
						     cur->src_addr, 10));
				EXPECT_GT(cur->src_addrlen,
					  strnlen(cur->src_addr,
						  cur->src_addrlen));
				continue;
			}
			EXPECT_EQ(FI_FORMAT_UNSPEC, (int)cur->addr_format);
			EXPECT_EQ(sizeof(struct kfab_addr), cur->src_addrlen);
		}
		fi_freeinfo(info);
	}
	/* The endpoint of a plain answer opens at its src_addr. */
	ASSERT_EQ(0, ask(0, &info));
	for (cur = info; cur; cur = cur->next) {
		EXPECT_TRUE(is_addr(cur->src_addr, cur->src_addrlen,
				    svc_addr(KFAB_ADDR_UNSPEC, 0)));
		ASSERT_EQ(0, fi_fabric(cur->fabric_attr, &fabric, NULL));
		ASSERT_EQ(0, fi_domain(fabric, cur, &domain, NULL));
		if (cur->ep_attr->type == FI_EP_MSG) {
			struct fid_pep *pep;

			ASSERT_EQ(0, fi_passive_ep(fabric, cur, &pep, NULL));
			EXPECT_EQ(0, fi_close(&pep->fid));
		}
		ASSERT_EQ(0, fi_endpoint(domain, cur, &ep, NULL));
		EXPECT_EQ(0, fi_close(&ep->fid));
		EXPECT_EQ(0, fi_close(&domain->fid));
		EXPECT_EQ(0, fi_close(&fabric->fid));
	}
	fi_freeinfo(info);
}

/*
 * Every answer survives fi_dupinfo() whole, and given back as hints gets
 * itself back first: nothing kfab answers is something it refuses.
 */
TEST_F(provider, getinfo_answers_round_trip_dupinfo_and_hints)
{
	struct fi_info *info, *cur, *dup, *again;
	size_t q, n;

	NEED_DEVICE(self->have_dev);
	for (q = 0; q < ARRAY_SIZE(questions); q++) {
		ASSERT_EQ(0, ask(q, &info)) QUESTION_LOG(q);
		for (cur = info, n = 0; cur; cur = cur->next, n++) {
			dup = fi_dupinfo(cur);
			ASSERT_NE(NULL, dup);
			EXPECT_EQ(NULL, dup->next);
			EXPECT_TRUE(same_info(cur, dup)) {
				QUESTION_LOG(q);
				TH_LOG("answer %zu: fi_dupinfo differs", n);
			}
			again = NULL;
			EXPECT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, dup,
						&again)) {
				QUESTION_LOG(q);
				TH_LOG("answer %zu refused as hints", n);
			}
			if (again) {
				EXPECT_TRUE(same_info(cur, again)) {
					QUESTION_LOG(q);
					TH_LOG("answer %zu as hints: %s", n,
					       fi_tostr(again, FI_TYPE_INFO));
				}
				fi_freeinfo(again);
			}
			fi_freeinfo(dup);
		}
		fi_freeinfo(info);
	}
}

/* fi_tostr(FI_TYPE_INFO) names what kfab is, in libfabric's words. */
TEST_F(provider, getinfo_tostr_of_every_answer_is_sensible)
{
	static const char *const want[] = {
		"prov_name: kfab", "name: kfab0", "threading: FI_THREAD_SAFE",
		"FI_MSG", "FI_TAGGED", "mem_tag_format: 0xaaaaaaaaaaaaaaaa",
		"data_progress: FI_PROGRESS_MANUAL",
	};
	static const char *const types[] = {
		[FI_EP_RDM] = "type: FI_EP_RDM", [FI_EP_MSG] = "type: FI_EP_MSG",
		[FI_EP_DGRAM] = "type: FI_EP_DGRAM",
	};
	struct fi_info *info, *cur;
	size_t q, i;
	char *s;

	NEED_DEVICE(self->have_dev);
	for (q = 0; q < ARRAY_SIZE(questions); q++) {
		ASSERT_EQ(0, ask(q, &info)) QUESTION_LOG(q);
		for (cur = info; cur; cur = cur->next) {
			s = info_str(cur);
			ASSERT_NE(NULL, s);
			for (i = 0; i < ARRAY_SIZE(want); i++)
				EXPECT_NE(NULL, strstr(s, want[i]))
					TH_LOG("string %zu missing", i);
			ASSERT_GT(ARRAY_SIZE(types), cur->ep_attr->type);
			EXPECT_NE(NULL, strstr(s, types[cur->ep_attr->type]));
			EXPECT_NE(NULL, strstr(s, cur->addr_format ==
					       FI_ADDR_STR ?
					       "addr_format: FI_ADDR_STR" :
					       "addr_format: FI_FORMAT_UNSPEC"));
			if (cur->addr_format == FI_ADDR_STR)
				EXPECT_NE(NULL, strstr(s, "src_addr: fi_kfab://"));
			/* Nothing unnamed but the addresses tostr cannot print */
			EXPECT_EQ(NULL, strstr(s, "name: (null)"));
			EXPECT_EQ(NULL, strstr(s, "prov_name: (null)"));
			free(s);
		}
		fi_freeinfo(info);
	}
}

/*
 * FI_ADDR_STR: src_addr, dest_addr, fi_getname() and fi_setname() in the
 * string form; hints' addresses are strings too.
 */
TEST_F(provider, addr_str_names_endpoints_with_strings)
{
	const char *any8 = "fi_kfab://any/8", *local8 = "fi_kfab://local/8";
	struct fi_info *hints, *info;
	struct kfab_test_fi a;
	char name[128];
	size_t len;

	NEED_DEVICE(self->have_dev);
	ASSERT_EQ(0, getinfo(NULL, NULL, 0, FI_ADDR_STR, &info));
	EXPECT_EQ(FI_ADDR_STR, (int)info->addr_format);
	ASSERT_NE(NULL, info->src_addr);
	EXPECT_STREQ("fi_kfab://any/0", (char *)info->src_addr);
	/* Room for the longest name there is */
	EXPECT_LE(strlen("fi_kfab://[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535/18446744073709551615.ffffffff") + 1,
		  info->src_addrlen);
	fi_freeinfo(info);
	ASSERT_EQ(0, getinfo("10.0.0.1", "5", 0, FI_ADDR_STR, &info));
	EXPECT_TRUE(is_str(info->dest_addr, info->dest_addrlen,
			   "fi_kfab://10.0.0.1:7471/5"));
	fi_freeinfo(info);

	ASSERT_EQ(0, _test_fi_side_open_at(&a, NULL, "8", FI_SOURCE,
					   hints_in(FI_ADDR_STR), false));
	EXPECT_TRUE(is_str(a.info->src_addr, a.info->src_addrlen, any8));
	len = 0;
	EXPECT_EQ(-FI_ETOOSMALL, fi_getname(&a.ep->fid, NULL, &len));
	EXPECT_EQ(strlen(local8) + 1, len);
	len = 4;
	EXPECT_EQ(-FI_ETOOSMALL, fi_getname(&a.ep->fid, name, &len));
	EXPECT_STREQ("fi_", name);
	len = sizeof(name);
	ASSERT_EQ(0, fi_getname(&a.ep->fid, name, &len));
	EXPECT_STREQ(local8, name);
	EXPECT_EQ(strlen(local8) + 1, len);
	EXPECT_EQ(0, fi_setname(&a.ep->fid, name, len));
	EXPECT_EQ(0, fi_setname(&a.ep->fid, name, sizeof(name)));
	EXPECT_EQ(-FI_EADDRNOTAVAIL, fi_setname(&a.ep->fid,
						(char *)"fi_kfab://local/9",
						sizeof("fi_kfab://local/9")));
	EXPECT_EQ(-FI_EINVAL, fi_setname(&a.ep->fid, (char *)"junk", 5));
	EXPECT_EQ(-FI_EINVAL, fi_setname(&a.ep->fid, name, strlen(name)));
	EXPECT_EQ(-FI_EINVAL, fi_setname(&a.ep->fid, (char *)any8,
					 strlen(any8) + 1));
	EXPECT_EQ(0, _test_fi_close(&a));

	/* hints->src_addr as a string, checked and printed canonically */
	hints = hints_in(FI_ADDR_STR);
	ASSERT_NE(NULL, hints);
	hints->src_addr = strdup("fi_kfab://[FD00::1]/7");
	hints->src_addrlen = strlen(hints->src_addr) + 1;
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &info));
	EXPECT_TRUE(is_str(info->src_addr, info->src_addrlen,
			   "fi_kfab://[fd00::1]:7471/7"));
	fi_freeinfo(info);
	hints->src_addrlen--;	/* no NUL within it */
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(API_VERSION, NULL, NULL, 0, hints,
					  &info));
	fi_freeinfo(hints);
}

/*
 * The way libfabric programs find each other: a server opens its
 * endpoint on a service (FI_SOURCE), a client gets that service as
 * dest_addr, inserts it and sends; in both address formats.
 */
TEST_F(provider, a_client_reaches_a_service_through_dest_addr)
{
	static const uint32_t formats[] = { FI_FORMAT_UNSPEC, FI_ADDR_STR };
	struct kfab_test_fi server, client;
	struct fi_cq_tagged_entry e;
	uint64_t sent, got;
	fi_addr_t to;
	size_t f;

	NEED_DEVICE(self->have_dev);
	for (f = 0; f < ARRAY_SIZE(formats); f++) {
		ASSERT_EQ(0, _test_fi_side_open_at(&server, NULL, "11",
						   FI_SOURCE,
						   hints_in(formats[f]), true));
		ASSERT_EQ(0, _test_fi_side_open_at(&client, "local", "11", 0,
						   hints_in(formats[f]), true));
		ASSERT_EQ(1, fi_av_insert(client.av,
					  formats[f] == FI_ADDR_STR ?
					  (void *)&client.info->dest_addr :
					  client.info->dest_addr,
					  1, &to, 0, NULL));
		got = 0;
		sent = 0x6b666162 + f;
		ASSERT_EQ(0, fi_recv(server.ep, &got, sizeof(got), NULL,
				     FI_ADDR_UNSPEC, NULL));
		ASSERT_EQ(0, fi_send(client.ep, &sent, sizeof(sent), NULL, to,
				     NULL));
		EXPECT_EQ(1, kfab_test_wait_cq(server.cq, client.cq, &e, NULL,
					       NULL, 10000));
		EXPECT_EQ(sent, got);
		EXPECT_EQ(1, kfab_test_wait_cq(client.cq, server.cq, &e, NULL,
					       NULL, 10000));
		EXPECT_EQ(0, _test_fi_close(&client));
		EXPECT_EQ(0, _test_fi_close(&server));
	}
}

/* Bring up this namespace's loopback (a new network namespace has it down). */
static int loopback_up(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc = -1;

	if (sock < 0)
		return -1;
	if (!ioctl(sock, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(sock, SIOCSIFFLAGS, &ifr);
	}
	close(sock);
	return rc;
}

/* KFAB_IOC_NET_LISTEN on @a (or remove it): 0 or -errno. */
static int net_listen(const struct kfab_addr *a, bool remove)
{
	struct kfab_net_listen l = {
		.size = sizeof(l),
		.flags = remove ? KFAB_NET_LISTEN_REMOVE : 0,
		.addr = *a,
	};
	int fd = kfab_open(), rc;

	if (fd < 0)
		return -errno;
	rc = kfab_ioctl(fd, KFAB_IOC_NET_LISTEN, &l);
	close(fd);
	return rc;
}

/*
 * In a network namespace with a listener, the namespace is a node: a
 * service asked for with FI_SOURCE is named by the listener's address, and
 * a client that names that node and service reaches it (on this machine,
 * the kernel's local path).  "local" still gives an address of this
 * machine alone.
 */
TEST_F(provider, a_node_with_a_listener_names_its_services)
{
	struct kfab_addr lo = inet_svc("127.0.0.1", 7471, 0), name;
	struct kfab_test_fi server, client;
	struct fi_cq_tagged_entry e;
	uint64_t sent = 0x6e6f6465, got = 0;
	char str[128];
	fi_addr_t to;
	size_t len;

	NEED_DEVICE(self->have_dev);
	if (unshare(CLONE_NEWNET) || loopback_up())
		SKIP(return, "no network namespace of our own: %s",
		     strerror(errno));
	ASSERT_EQ(0, net_listen(&lo, false));

	ASSERT_EQ(0, _test_fi_side_open_at(&server, NULL, "12", FI_SOURCE,
					   kfab_hints(), true));
	name = inet_svc("127.0.0.1", 7471, 12);
	EXPECT_TRUE(is_addr(&name, sizeof(name), name_of(server.ep)));
	/* The same with the node named, and as a string */
	ASSERT_EQ(0, _test_fi_side_open_at(&client, "127.0.0.1", "12", 0,
					   hints_in(FI_ADDR_STR), false));
	EXPECT_TRUE(is_str(client.info->dest_addr, client.info->dest_addrlen,
			   "fi_kfab://127.0.0.1:7471/12"));
	len = sizeof(str);
	ASSERT_EQ(0, fi_getname(&client.ep->fid, str, &len));
	EXPECT_EQ(0, strncmp("fi_kfab://127.0.0.1:7471/", str, 25)) {
		TH_LOG("%s", str);
	}
	EXPECT_EQ(0, _test_fi_close(&client));

	ASSERT_EQ(0, _test_fi_side_open_at(&client, "127.0.0.1", "12", 0,
					   kfab_hints(), true));
	EXPECT_TRUE(is_addr(client.info->dest_addr, client.info->dest_addrlen,
			    name));
	ASSERT_EQ(1, fi_av_insert(client.av, client.info->dest_addr, 1, &to, 0,
				  NULL));
	ASSERT_EQ(0, fi_recv(server.ep, &got, sizeof(got), NULL,
			     FI_ADDR_UNSPEC, NULL));
	ASSERT_EQ(0, fi_send(client.ep, &sent, sizeof(sent), NULL, to, NULL));
	EXPECT_EQ(1, kfab_test_wait_cq(server.cq, client.cq, &e, NULL, NULL,
				       10000));
	EXPECT_EQ(sent, got);
	EXPECT_EQ(1, kfab_test_wait_cq(client.cq, server.cq, &e, NULL, NULL,
				       10000));
	EXPECT_EQ(0, _test_fi_close(&client));

	/* "local": this machine alone, listener or not */
	ASSERT_EQ(0, _test_fi_side_open_at(&client, "local", "13", FI_SOURCE,
					   kfab_hints(), false));
	name = svc_addr(KFAB_ADDR_LOCAL, 13);
	EXPECT_TRUE(is_addr(&name, sizeof(name), name_of(client.ep)));
	EXPECT_EQ(0, _test_fi_close(&client));
	/* A listener's node with another port is another node */
	ASSERT_EQ(0, _test_fi_domain_open_at(&client, "127.0.0.1:7472", "14",
					     FI_SOURCE, kfab_hints()));
	EXPECT_EQ(-FI_EADDRNOTAVAIL, fi_endpoint(client.domain, client.info,
						 &client.ep, NULL));
	client.ep = NULL;
	EXPECT_EQ(0, _test_fi_close(&client));
	EXPECT_EQ(0, _test_fi_close(&server));
	EXPECT_EQ(0, net_listen(&lo, true));
}

/* ---- fabrics and domains ---- */

FIXTURE(fabric) {
	struct fi_info *info;
	struct fid_fabric *fabric;	/* NULL without the device */
};

/*
 * Without the device the setup leaves ->fabric NULL and every test SKIPs:
 * a SKIP in the setup of this harness version would still run the test.
 */
FIXTURE_SETUP(fabric)
{
	struct fi_info *hints;

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	if (!have_device())
		return;

	hints = kfab_hints();
	ASSERT_NE(NULL, hints);
	ASSERT_EQ(0, fi_getinfo(API_VERSION, NULL, NULL, 0, hints,
				&self->info));
	fi_freeinfo(hints);
	ASSERT_EQ(0, fi_fabric(self->info->fabric_attr, &self->fabric, NULL));
}

FIXTURE_TEARDOWN(fabric)
{
	if (self->fabric)
		EXPECT_EQ(0, fi_close(&self->fabric->fid));
	fi_freeinfo(self->info);
}

TEST_F(fabric, fabric_open_close)
{
	struct fi_fabric_attr attr;
	struct fid_fabric *second;
	int ctx, fds;

	NEED_DEVICE(self->fabric);
	EXPECT_EQ((size_t)FI_CLASS_FABRIC, self->fabric->fid.fclass);
	EXPECT_EQ(API_VERSION, self->fabric->api_version);

	/* Each fabric is one open file of the device, gone on close. */
	fds = count_fds();
	ASSERT_EQ(0, fi_fabric(self->info->fabric_attr, &second, &ctx));
	EXPECT_NE(self->fabric, second);
	EXPECT_EQ(&ctx, second->fid.context);
	EXPECT_EQ(fds + 1, count_fds());
	ASSERT_EQ(0, fi_close(&second->fid));
	EXPECT_EQ(fds, count_fds());

	ASSERT_EQ(0, fi_close(&self->fabric->fid));
	self->fabric = NULL;
	EXPECT_EQ(fds - 1, count_fds());

	/* Another fabric's name is not kfab's to open. */
	attr = *self->info->fabric_attr;
	attr.name = "tcp";
	EXPECT_EQ(-FI_ENODATA, fi_fabric(&attr, &second, NULL));
	EXPECT_EQ(fds - 1, count_fds());
}

TEST_F(fabric, domain_open_close)
{
	struct fid_domain *domain;
	int ctx;

	NEED_DEVICE(self->fabric);

	ASSERT_EQ(0, fi_domain(self->fabric, self->info, &domain, &ctx));
	EXPECT_EQ((size_t)FI_CLASS_DOMAIN, domain->fid.fclass);
	EXPECT_EQ(&ctx, domain->fid.context);
	EXPECT_EQ(0, fi_close(&domain->fid));

	/*
	 * fi_domain2() without flags is fi_domain(); FI_PEER needs the
	 * owner's fi_peer_domain_context (selftests/kfab_peer).
	 */
	ASSERT_EQ(0, fi_domain2(self->fabric, self->info, &domain, 0, NULL));
	EXPECT_EQ(0, fi_close(&domain->fid));
	EXPECT_EQ(-FI_EINVAL, fi_domain2(self->fabric, self->info, &domain,
					 FI_PEER, NULL));
	EXPECT_EQ(-FI_EBADFLAGS, fi_domain2(self->fabric, self->info, &domain,
					    FI_PEER_TRANSFER, NULL));
}

TEST_F(fabric, domain_open_checks_info)
{
	struct fid_domain *domain;
	struct fi_info *info;

	NEED_DEVICE(self->fabric);

	EXPECT_EQ(-FI_EINVAL, fi_domain(self->fabric, NULL, &domain, NULL));

	info = fi_dupinfo(self->info);
	ASSERT_NE(NULL, info);

	/* A domain name that is not kfab's. */
	free(info->domain_attr->name);
	info->domain_attr->name = strdup("kfab1");
	EXPECT_EQ(-FI_ENODATA, fi_domain(self->fabric, info, &domain, NULL));

	/* Something kfab does not offer. */
	free(info->domain_attr->name);
	info->domain_attr->name = NULL;
	info->caps |= FI_RMA;
	EXPECT_EQ(-FI_ENODATA, fi_domain(self->fabric, info, &domain, NULL));

	/* No domain name means kfab's. */
	info->caps = self->info->caps;
	ASSERT_EQ(0, fi_domain(self->fabric, info, &domain, NULL));
	EXPECT_EQ(0, fi_close(&domain->fid));
	fi_freeinfo(info);
}

TEST_F(fabric, domain_close_before_fabric_enforced)
{
	struct fid_domain *domain, *other;

	NEED_DEVICE(self->fabric);

	ASSERT_EQ(0, fi_domain(self->fabric, self->info, &domain, NULL));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->fabric->fid));

	/* The refused close changed nothing: the fabric still works. */
	ASSERT_EQ(0, fi_domain(self->fabric, self->info, &other, NULL));
	EXPECT_EQ(0, fi_close(&other->fid));
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->fabric->fid));

	/* Children first, then the parent. */
	EXPECT_EQ(0, fi_close(&domain->fid));
	EXPECT_EQ(0, fi_close(&self->fabric->fid));
	self->fabric = NULL;
}

TEST_F(fabric, many_domains)
{
	struct fid_domain *domains[NR_DOMAINS];
	int i, j;

	NEED_DEVICE(self->fabric);

	for (i = 0; i < NR_DOMAINS; i++)
		ASSERT_EQ(0, fi_domain(self->fabric, self->info, &domains[i],
				       NULL))
			TH_LOG("domain %d", i);
	for (i = 0; i < NR_DOMAINS; i++)
		for (j = i + 1; j < NR_DOMAINS; j++)
			ASSERT_NE(domains[i], domains[j]);

	/* Out of order: odd ones, then even ones; busy until the last. */
	for (i = 1; i < NR_DOMAINS; i += 2)
		ASSERT_EQ(0, fi_close(&domains[i]->fid)) TH_LOG("domain %d", i);
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->fabric->fid));
	for (i = 0; i < NR_DOMAINS; i += 2)
		ASSERT_EQ(0, fi_close(&domains[i]->fid)) TH_LOG("domain %d", i);

	EXPECT_EQ(0, fi_close(&self->fabric->fid));
	self->fabric = NULL;
}

struct domain_churn {
	struct fid_fabric *fabric;
	struct fi_info *info;
	int failures;
};

static void *domain_churn(void *arg)
{
	struct domain_churn *c = arg;
	struct fid_domain *domains[NR_DOMAINS / 4];
	int round, i;

	for (round = 0; round < 8; round++) {
		for (i = 0; i < NR_DOMAINS / 4; i++)
			if (fi_domain(c->fabric, c->info, &domains[i], NULL)) {
				c->failures++;
				return NULL;
			}
		for (i = 0; i < NR_DOMAINS / 4; i++)
			c->failures += !!fi_close(&domains[i]->fid);
	}
	return NULL;
}

TEST_F(fabric, domains_from_many_threads)
{
	struct domain_churn churn[4];
	pthread_t threads[4];
	int i;

	NEED_DEVICE(self->fabric);

	for (i = 0; i < 4; i++) {
		churn[i] = (struct domain_churn){ self->fabric, self->info, 0 };
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, domain_churn,
					    &churn[i]));
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(threads[i], NULL));
		EXPECT_EQ(0, churn[i].failures) TH_LOG("thread %d", i);
	}

	/* Every count came back down: the fabric closes. */
	EXPECT_EQ(0, fi_close(&self->fabric->fid));
	self->fabric = NULL;
}

/*
 * Every member of each op table, by name.  The static asserts stop the
 * build when libfabric's headers grow a table, so a new member cannot
 * slip past this list.
 */
typedef void (*fn_t)(void);
_Static_assert(sizeof(struct fi_ops) == sizeof(size_t) + 6 * sizeof(fn_t),
	       "struct fi_ops changed: update the checks below");
_Static_assert(sizeof(struct fi_ops_fabric) == sizeof(size_t) + 6 * sizeof(fn_t),
	       "struct fi_ops_fabric changed: update the checks below");
_Static_assert(sizeof(struct fi_ops_domain) == sizeof(size_t) + 11 * sizeof(fn_t),
	       "struct fi_ops_domain changed: update the checks below");
_Static_assert(sizeof(struct fi_ops_mr) == sizeof(size_t) + 3 * sizeof(fn_t),
	       "struct fi_ops_mr changed: update the checks below");
_Static_assert(sizeof(struct fi_ops_eq) == sizeof(size_t) + 5 * sizeof(fn_t),
	       "struct fi_ops_eq changed: update the checks below");

#define EXPECT_OP(ops, type, member) \
	EXPECT_TRUE((ops)->member != NULL) TH_LOG(#type "." #member " is NULL")

#define EXPECT_FI_OPS(ops)						\
	do {								\
		EXPECT_EQ(sizeof(struct fi_ops), (ops)->size);		\
		EXPECT_OP(ops, fi_ops, close);				\
		EXPECT_OP(ops, fi_ops, bind);				\
		EXPECT_OP(ops, fi_ops, control);			\
		EXPECT_OP(ops, fi_ops, ops_open);			\
		EXPECT_OP(ops, fi_ops, tostr);				\
		EXPECT_OP(ops, fi_ops, ops_set);			\
	} while (0)

TEST_F(fabric, ops_tables_fully_populated)
{
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid *dfid;
	struct fi_ops_fabric *fops;
	struct fi_ops_domain *dops;
	struct fi_ops_mr *mops;
	struct fi_ops_eq *eops;
	struct fid_eq *eq;
	struct fi_eq_attr eq_attr = { .size = 16 };
	struct fi_wait_attr wait_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr;
	struct fid_cq *cq;
	struct fi_poll_attr poll_attr = { 0 };
	struct fi_atomic_attr atomic_attr;
	struct fi_collective_attr coll_attr;
	struct fi_mr_attr mr_attr = { 0 };
	struct fid_mr *mr, *mr2, *mr3;
	struct iovec iov;
	char buf[64];
	void *out = NULL;

	NEED_DEVICE(self->fabric);
	ASSERT_EQ(0, fi_domain(self->fabric, self->info, &domain, NULL));

	/* The fabric's tables. */
	EXPECT_FI_OPS(self->fabric->fid.ops);
	fops = self->fabric->ops;
	EXPECT_EQ(sizeof(struct fi_ops_fabric), fops->size);
	EXPECT_OP(fops, fi_ops_fabric, domain);
	EXPECT_OP(fops, fi_ops_fabric, passive_ep);
	EXPECT_OP(fops, fi_ops_fabric, eq_open);
	EXPECT_OP(fops, fi_ops_fabric, wait_open);
	EXPECT_OP(fops, fi_ops_fabric, trywait);
	EXPECT_OP(fops, fi_ops_fabric, domain2);

	/* An EQ's tables (selftests/kfab_eq tests what they do). */
	ASSERT_EQ(0, fi_eq_open(self->fabric, &eq_attr, &eq, NULL));
	EXPECT_FI_OPS(eq->fid.ops);
	eops = eq->ops;
	EXPECT_EQ(sizeof(struct fi_ops_eq), eops->size);
	EXPECT_OP(eops, fi_ops_eq, read);
	EXPECT_OP(eops, fi_ops_eq, readerr);
	EXPECT_OP(eops, fi_ops_eq, write);
	EXPECT_OP(eops, fi_ops_eq, sread);
	EXPECT_OP(eops, fi_ops_eq, strerror);
	EXPECT_EQ(-FI_ENOSYS, fi_open_ops(&eq->fid, "kfab_none", 0, &out,
					  NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_control(&eq->fid, FI_ENABLE, NULL));
	EXPECT_EQ(0, fi_close(&eq->fid));

	/* The domain's tables. */
	EXPECT_FI_OPS(domain->fid.ops);
	dops = domain->ops;
	EXPECT_EQ(sizeof(struct fi_ops_domain), dops->size);
	EXPECT_OP(dops, fi_ops_domain, av_open);
	EXPECT_OP(dops, fi_ops_domain, cq_open);
	EXPECT_OP(dops, fi_ops_domain, endpoint);
	EXPECT_OP(dops, fi_ops_domain, scalable_ep);
	EXPECT_OP(dops, fi_ops_domain, cntr_open);
	EXPECT_OP(dops, fi_ops_domain, poll_open);
	EXPECT_OP(dops, fi_ops_domain, stx_ctx);
	EXPECT_OP(dops, fi_ops_domain, srx_ctx);
	EXPECT_OP(dops, fi_ops_domain, query_atomic);
	EXPECT_OP(dops, fi_ops_domain, query_collective);
	EXPECT_OP(dops, fi_ops_domain, endpoint2);
	mops = domain->mr;
	EXPECT_EQ(sizeof(struct fi_ops_mr), mops->size);
	EXPECT_OP(mops, fi_ops_mr, reg);
	EXPECT_OP(mops, fi_ops_mr, regv);
	EXPECT_OP(mops, fi_ops_mr, regattr);

	/* A passive endpoint is FI_EP_MSG's (kfab_cm.c), not RDM's. */
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_passive_ep(self->fabric, self->info,
						 (struct fid_pep **)&out,
						 NULL));
	/* Wait sets exist: selftests/kfab_wait. */
	wait_attr.flags = 1;
	EXPECT_EQ(-FI_EBADFLAGS, fi_wait_open(self->fabric, &wait_attr,
					      (struct fid_wait **)&out));
	/* fi_trywait() asks each object; none given, nothing is pending. */
	EXPECT_EQ(0, fi_trywait(self->fabric, NULL, 0));
	EXPECT_EQ(-FI_EINVAL, fi_trywait(self->fabric, NULL, 1));
	/* A domain has no wait object to block on. */
	dfid = &domain->fid;
	EXPECT_EQ(-FI_EINVAL, fi_trywait(self->fabric, &dfid, 1));
	EXPECT_EQ(-FI_ENOSYS, fi_open_ops(&self->fabric->fid, "kfab_none", 0,
					  &out, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_control(&self->fabric->fid, FI_GETWAIT, &out));

	/* The AV's tables. */
	ASSERT_EQ(0, fi_av_open(domain, &av_attr, &av, NULL));
	EXPECT_FI_OPS(av->fid.ops);
	EXPECT_EQ(sizeof(struct fi_ops_av), av->ops->size);
	EXPECT_OP(av->ops, fi_ops_av, insert);
	EXPECT_OP(av->ops, fi_ops_av, insertsvc);
	EXPECT_OP(av->ops, fi_ops_av, insertsym);
	EXPECT_OP(av->ops, fi_ops_av, remove);
	EXPECT_OP(av->ops, fi_ops_av, lookup);
	EXPECT_OP(av->ops, fi_ops_av, straddr);
	EXPECT_OP(av->ops, fi_ops_av, av_set);
	EXPECT_EQ(-FI_ENOSYS, av->ops->av_set(av, NULL,
					      (struct fid_av_set **)&out, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_control(&av->fid, FI_GETWAIT, &out));
	EXPECT_EQ(-FI_ENOSYS, fi_open_ops(&av->fid, "kfab_none", 0, &out,
					  NULL));
	/* An AV has no wait object to block on. */
	dfid = &av->fid;
	EXPECT_EQ(-FI_EINVAL, fi_trywait(self->fabric, &dfid, 1));
	EXPECT_EQ(0, fi_close(&av->fid));
	out = NULL;
	/*
	 * Endpoints exist (selftests/kfab_ep tests their tables);
	 * FI_PEER_TRANSFER needs its context (selftests/kfab_peer).
	 */
	EXPECT_EQ(-FI_EINVAL, fi_endpoint2(domain, self->info,
					   (struct fid_ep **)&out,
					   FI_PEER_TRANSFER, NULL));
	/* Scalable endpoints exist: selftests/kfab_sep. */
	EXPECT_EQ(-FI_EINVAL, fi_scalable_ep(domain, NULL,
					     (struct fid_ep **)&out, NULL));
	/* Poll sets exist: selftests/kfab_poll. */
	poll_attr.flags = 1;
	EXPECT_EQ(-FI_EBADFLAGS, fi_poll_open(domain, &poll_attr,
					      (struct fid_poll **)&out));
	/* Shared transmit contexts exist (kfab_ep, pair.stx_*). */
	EXPECT_EQ(-FI_EINVAL, fi_stx_context(domain, self->info->tx_attr,
					     NULL, NULL));
	/* Shared receive contexts exist (selftests/kfab_srx tests them). */
	ASSERT_EQ(0, fi_srx_context(domain, self->info->rx_attr,
				    (struct fid_ep **)&out, NULL));
	EXPECT_EQ(FI_CLASS_SRX_CTX, ((struct fid_ep *)out)->fid.fclass);
	EXPECT_EQ(0, fi_close(&((struct fid_ep *)out)->fid));
	out = NULL;
	EXPECT_EQ(-FI_ENOSYS, fi_query_atomic(domain, FI_INT32, FI_SUM,
					      &atomic_attr, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_query_collective(domain, FI_BARRIER,
						  &coll_attr, 0));
	/* Registrations work (kfab_ep tests them); their tables are full. */
	ASSERT_EQ(0, fi_mr_reg(domain, buf, sizeof(buf), FI_SEND, 0, 1, 0,
			       &mr, NULL));
	EXPECT_FI_OPS(mr->fid.ops);
	iov.iov_base = buf;
	iov.iov_len = sizeof(buf);
	ASSERT_EQ(0, fi_mr_regv(domain, &iov, 1, FI_SEND, 0, 2, 0, &mr2,
				NULL));
	mr_attr.mr_iov = &iov;
	mr_attr.iov_count = 1;
	mr_attr.access = FI_SEND;
	mr_attr.requested_key = 3;
	ASSERT_EQ(0, fi_mr_regattr(domain, &mr_attr, 0, &mr3));
	EXPECT_EQ(-FI_EBUSY, fi_close(&domain->fid));
	EXPECT_EQ(0, fi_close(&mr->fid));
	EXPECT_EQ(0, fi_close(&mr2->fid));
	EXPECT_EQ(0, fi_close(&mr3->fid));
	EXPECT_EQ(-FI_ENOSYS, fi_domain_bind(domain, &self->fabric->fid, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_open_ops(&domain->fid, "kfab_none", 0, &out,
					  NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_set_ops(&domain->fid, "kfab_none", 0, NULL,
					 NULL));
	EXPECT_EQ(NULL, out);

	/* CQs and counters exist: their tables are full too. */
	ASSERT_EQ(0, fi_cq_open(domain, &cq_attr, &cq, NULL));
	EXPECT_FI_OPS(cq->fid.ops);
	EXPECT_EQ(sizeof(struct fi_ops_cq), cq->ops->size);
	EXPECT_OP(cq->ops, fi_ops_cq, read);
	EXPECT_OP(cq->ops, fi_ops_cq, readfrom);
	EXPECT_OP(cq->ops, fi_ops_cq, readerr);
	EXPECT_OP(cq->ops, fi_ops_cq, sread);
	EXPECT_OP(cq->ops, fi_ops_cq, sreadfrom);
	EXPECT_OP(cq->ops, fi_ops_cq, signal);
	EXPECT_OP(cq->ops, fi_ops_cq, strerror);
	EXPECT_EQ(-FI_ENOSYS, fi_control(&cq->fid, FI_GETOPSFLAG, NULL));
	ASSERT_EQ(0, fi_cntr_open(domain, &cntr_attr, &cntr, NULL));
	EXPECT_FI_OPS(cntr->fid.ops);
	EXPECT_EQ(sizeof(struct fi_ops_cntr), cntr->ops->size);
	EXPECT_OP(cntr->ops, fi_ops_cntr, read);
	EXPECT_OP(cntr->ops, fi_ops_cntr, readerr);
	EXPECT_OP(cntr->ops, fi_ops_cntr, add);
	EXPECT_OP(cntr->ops, fi_ops_cntr, set);
	EXPECT_OP(cntr->ops, fi_ops_cntr, wait);
	EXPECT_OP(cntr->ops, fi_ops_cntr, adderr);
	EXPECT_OP(cntr->ops, fi_ops_cntr, seterr);
	EXPECT_EQ(-FI_EBUSY, fi_close(&domain->fid));
	EXPECT_EQ(0, fi_close(&cntr->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));

	EXPECT_EQ(0, fi_close(&domain->fid));
}

/* ---- <kfab/kfab.h> ---- */

TEST_F(fabric, abi_version_via_extension)
{
	struct kfab_query query = { .size = sizeof(query) };
	struct kfab_abi_info abi;
	int fd;

	NEED_DEVICE(self->fabric);

	memset(&abi, 0xa5, sizeof(abi));
	ASSERT_EQ(0, kfab_query(self->fabric, &abi));
	EXPECT_EQ(sizeof(abi), abi.size);
	EXPECT_EQ((uint32_t)KFAB_ABI_VERSION, abi.abi_version);
	EXPECT_NE(0U, abi.max_objects);
	EXPECT_LE(sizeof(struct kfab_query), abi.max_ioctl_size);

	/* The same numbers the device gives when asked directly. */
	fd = open(kfab_dev(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, KFAB_IOC_QUERY, &query));
	close(fd);
	EXPECT_EQ(query.abi_version, abi.abi_version);
	EXPECT_EQ(query.features, abi.features);
	EXPECT_EQ(query.max_objects, abi.max_objects);
	EXPECT_EQ(query.max_ioctl_size, abi.max_ioctl_size);
	EXPECT_EQ(query.module_version, abi.module_version);
}

TEST_F(fabric, abi_info_extension_checks_its_struct)
{
	struct {
		struct kfab_abi_info info;
		uint32_t newer[3];
	} big;
	struct kfab_abi_info abi;
	int i;

	NEED_DEVICE(self->fabric);

	EXPECT_EQ(-FI_EINVAL, kfab_query(self->fabric, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_get_val(&self->fabric->fid,
					 KFAB_FABRIC_ABI_INFO, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_get_val(&self->fabric->fid,
					 (int)(FI_PROV_SPECIFIC | 0x1234), &abi));

	/* Too short to hold even the ABI version; absurdly long. */
	abi.size = sizeof(abi.size);
	EXPECT_EQ(-FI_EINVAL, fi_get_val(&self->fabric->fid,
					 KFAB_FABRIC_ABI_INFO, &abi));
	abi.size = 1U << 20;
	EXPECT_EQ(-FI_E2BIG, fi_get_val(&self->fabric->fid,
					KFAB_FABRIC_ABI_INFO, &abi));

	/* An older caller's struct: nothing past its end is written. */
	memset(&abi, 0xa5, sizeof(abi));
	abi.size = offsetof(struct kfab_abi_info, features);
	ASSERT_EQ(0, fi_get_val(&self->fabric->fid, KFAB_FABRIC_ABI_INFO,
				&abi));
	EXPECT_EQ((uint32_t)KFAB_ABI_VERSION, abi.abi_version);
	EXPECT_EQ(0xa5a5a5a5U, abi.features);
	EXPECT_EQ(0xa5a5a5a5U, abi.module_version);

	/* A newer caller's struct: what kfab does not know reads as zero. */
	memset(&big, 0xa5, sizeof(big));
	big.info.size = sizeof(big);
	ASSERT_EQ(0, fi_get_val(&self->fabric->fid, KFAB_FABRIC_ABI_INFO,
				&big));
	EXPECT_EQ(sizeof(big), big.info.size);
	EXPECT_EQ((uint32_t)KFAB_ABI_VERSION, big.info.abi_version);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0U, big.newer[i]);
}

TEST_HARNESS_MAIN
