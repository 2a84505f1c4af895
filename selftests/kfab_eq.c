// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab's event queues (libshim/eq.c) through libfabric's public API, one
 * test per behaviour fi_eq(3) promises or fi_kfab(7) documents.
 *
 * An EQ needs a fabric, and a fabric needs /dev/kfab: on the host every
 * test SKIPs; in the VM, with kfab.ko loaded, everything runs.  As in
 * kfab_provider, FI_PROVIDER_PATH must name libshim/prov (the runner sets
 * it) and each test sets FI_PROVIDER=kfab before its first libfabric call.
 *
 * Events libshim posts itself (kfab_eq_post(), beyond attr->size) are not
 * reachable from here: they are tested through the objects that post them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <kfab/kfab.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

#define API_VERSION	((uint32_t)FI_VERSION(1, 17))

static const char *kfab_dev(void)
{
	const char *dev = getenv("FI_KFAB_DEV");

	return dev && *dev ? dev : "/dev/kfab";
}

static bool have_device(void)
{
	return !access(kfab_dev(), R_OK | W_OK);
}

#define NEED_DEVICE(fabric)						\
	do {								\
		if (!(fabric))						\
			SKIP(return, "%s absent: needs kfab.ko (VM)",	\
			     kfab_dev());				\
	} while (0)

/* A kfab fabric of API @version, or NULL (and no failure) without device. */
static struct fid_fabric *open_fabric(struct __test_metadata *_metadata,
				      uint32_t version)
{
	struct fi_info *hints, *info = NULL;
	struct fid_fabric *fabric = NULL;

	if (!have_device())
		return NULL;
	hints = fi_allocinfo();
	if (!hints)
		return NULL;
	hints->fabric_attr->prov_name = strdup("kfab");
	EXPECT_EQ(0, fi_getinfo(version, NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	if (!info)
		return NULL;
	EXPECT_EQ(0, fi_fabric(info->fabric_attr, &fabric, NULL));
	fi_freeinfo(info);
	return fabric;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether @fd polls readable right now. */
static bool fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

static struct fi_eq_entry entry_of(uint64_t data)
{
	return (struct fi_eq_entry){ .context = (void *)(uintptr_t)data,
				     .data = data };
}

/* ---- opening and closing ---- */

FIXTURE(eq) {
	struct fid_fabric *fabric;	/* NULL without the device */
	struct fid_eq *eq;		/* FI_WAIT_NONE, size 4, FI_WRITE */
};

FIXTURE_SETUP(eq)
{
	struct fi_eq_attr attr = { .size = 4, .flags = FI_WRITE,
				   .wait_obj = FI_WAIT_NONE };

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	self->fabric = open_fabric(_metadata, API_VERSION);
	if (self->fabric)
		ASSERT_EQ(0, fi_eq_open(self->fabric, &attr, &self->eq, NULL));
}

FIXTURE_TEARDOWN(eq)
{
	if (self->eq)
		EXPECT_EQ(0, fi_close(&self->eq->fid));
	if (self->fabric)
		EXPECT_EQ(0, fi_close(&self->fabric->fid));
}

TEST_F(eq, open_close)
{
	struct fi_eq_attr attr = { 0 };
	struct fid_eq *eq;
	enum fi_wait_obj wait_obj = FI_WAIT_FD;
	int ctx;

	NEED_DEVICE(self->fabric);

	/* All defaults: size 0 is kfab's default, FI_WAIT_NONE. */
	ASSERT_EQ(0, fi_eq_open(self->fabric, &attr, &eq, &ctx));
	EXPECT_EQ((size_t)FI_CLASS_EQ, eq->fid.fclass);
	EXPECT_EQ(&ctx, eq->fid.context);
	EXPECT_EQ(0, fi_control(&eq->fid, FI_GETWAITOBJ, &wait_obj));
	EXPECT_EQ(FI_WAIT_NONE, (int)wait_obj);
	EXPECT_EQ(0, fi_close(&eq->fid));

	/* Every table fully populated. */
	EXPECT_EQ(sizeof(struct fi_ops), self->eq->fid.ops->size);
	EXPECT_TRUE(self->eq->fid.ops->close && self->eq->fid.ops->bind &&
		    self->eq->fid.ops->control && self->eq->fid.ops->ops_open &&
		    self->eq->fid.ops->tostr && self->eq->fid.ops->ops_set);
	EXPECT_EQ(sizeof(struct fi_ops_eq), self->eq->ops->size);
	EXPECT_TRUE(self->eq->ops->read && self->eq->ops->readerr &&
		    self->eq->ops->write && self->eq->ops->sread &&
		    self->eq->ops->strerror);
}

TEST_F(eq, open_rejects_bad_arguments)
{
	struct fi_eq_attr attr = { .size = 4 };
	struct fid_eq *eq = NULL;

	NEED_DEVICE(self->fabric);

	EXPECT_EQ(-FI_EINVAL, fi_eq_open(self->fabric, NULL, &eq, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_eq_open(self->fabric, &attr, NULL, NULL));

	attr.wait_obj = (enum fi_wait_obj)99;
	EXPECT_EQ(-FI_EINVAL, fi_eq_open(self->fabric, &attr, &eq, NULL));
	attr.wait_obj = (enum fi_wait_obj)-1;
	EXPECT_EQ(-FI_EINVAL, fi_eq_open(self->fabric, &attr, &eq, NULL));

	/* FI_WAIT_SET without a kfab wait set (kfab_wait.c has them). */
	attr.wait_obj = FI_WAIT_SET;
	EXPECT_EQ(-FI_EINVAL, fi_eq_open(self->fabric, &attr, &eq, NULL));
	attr.wait_set = (struct fid_wait *)&attr;
	EXPECT_EQ(-FI_EINVAL, fi_eq_open(self->fabric, &attr, &eq, NULL));
	attr.wait_set = NULL;

	/* FI_WRITE and FI_AFFINITY are the flags fi_eq(3) defines. */
	attr.wait_obj = FI_WAIT_NONE;
	attr.flags = FI_READ;
	EXPECT_EQ(-FI_EBADFLAGS, fi_eq_open(self->fabric, &attr, &eq, NULL));
	attr.flags = FI_WRITE | (1ULL << 63);
	EXPECT_EQ(-FI_EBADFLAGS, fi_eq_open(self->fabric, &attr, &eq, NULL));
	EXPECT_EQ(NULL, eq);

	/* The signaling vector is a hint: accepted, ignored. */
	attr.flags = FI_WRITE | FI_AFFINITY;
	attr.signaling_vector = 12345;
	ASSERT_EQ(0, fi_eq_open(self->fabric, &attr, &eq, NULL));
	EXPECT_EQ(0, fi_close(&eq->fid));
}

TEST_F(eq, fabric_close_waits_for_eqs)
{
	NEED_DEVICE(self->fabric);

	EXPECT_EQ(-FI_EBUSY, fi_close(&self->fabric->fid));
	/* The refused close changed nothing. */
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->eq, NULL, NULL, 0, 0));
	ASSERT_EQ(0, fi_close(&self->eq->fid));
	self->eq = NULL;
	EXPECT_EQ(0, fi_close(&self->fabric->fid));
	self->fabric = NULL;
}

TEST_F(eq, close_drops_queued_events)
{
	struct fi_eq_attr attr = { .size = 64, .flags = FI_WRITE };
	struct fi_eq_entry e = entry_of(1);
	struct fi_eq_err_entry err = { .err = FI_EIO };
	char data[100] = "leak me if you can";
	struct fid_eq *eq;
	int i;

	NEED_DEVICE(self->fabric);

	ASSERT_EQ(0, fi_eq_open(self->fabric, &attr, &eq, NULL));
	for (i = 0; i < 10; i++)
		ASSERT_EQ((ssize_t)sizeof(e),
			  fi_eq_write(eq, FI_NOTIFY, &e, sizeof(e), 0));
	err.err_data = data;
	err.err_data_size = sizeof(data);
	ASSERT_EQ((ssize_t)sizeof(err),
		  fi_eq_write(eq, 0, &err, sizeof(err), KFAB_EQ_WRITE_ERR));
	/* Queued events are lost on close, as fi_eq(3) says (valgrind: no leak). */
	EXPECT_EQ(0, fi_close(&eq->fid));
}

/* ---- fi_eq_read, fi_eq_write ---- */

TEST_F(eq, read_empty_returns_eagain)
{
	struct fi_eq_entry e;
	uint32_t event = 0xdead;

	NEED_DEVICE(self->fabric);

	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->eq, &event, &e, sizeof(e), 0));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->eq, &event, &e, sizeof(e),
					 FI_PEEK));
	EXPECT_EQ(0xdeadU, event);
}

TEST_F(eq, write_then_read_in_order)
{
	struct fi_eq_entry in, out;
	uint32_t event;
	int i;

	NEED_DEVICE(self->fabric);

	for (i = 0; i < 3; i++) {
		in = entry_of(100 + i);
		EXPECT_EQ((ssize_t)sizeof(in),
			  fi_eq_write(self->eq, FI_NOTIFY + i, &in, sizeof(in),
				      0));
	}
	for (i = 0; i < 3; i++) {
		memset(&out, 0, sizeof(out));
		ASSERT_EQ((ssize_t)sizeof(out),
			  fi_eq_read(self->eq, &event, &out, sizeof(out), 0));
		EXPECT_EQ((uint32_t)(FI_NOTIFY + i), event);
		EXPECT_EQ((uint64_t)(100 + i), out.data);
		EXPECT_EQ((void *)(uintptr_t)(100 + i), out.context);
	}
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->eq, &event, &out, sizeof(out),
					 0));

	/* Event only, no buffer; a NULL event pointer is allowed too. */
	EXPECT_EQ(0, fi_eq_write(self->eq, FI_NOTIFY, NULL, 0, 0));
	EXPECT_EQ(0, fi_eq_read(self->eq, &event, NULL, 0, 0));
	EXPECT_EQ((uint32_t)FI_NOTIFY, event);
	in = entry_of(7);
	EXPECT_EQ((ssize_t)sizeof(in), fi_eq_write(self->eq, FI_MR_COMPLETE,
						   &in, sizeof(in), 0));
	EXPECT_EQ((ssize_t)sizeof(out), fi_eq_read(self->eq, NULL, &out,
						   sizeof(out), 0));
	EXPECT_EQ(7U, out.data);
}

TEST_F(eq, read_peek_leaves_the_event)
{
	struct fi_eq_entry in = entry_of(42), out;
	uint32_t event = 0;

	NEED_DEVICE(self->fabric);

	ASSERT_EQ((ssize_t)sizeof(in),
		  fi_eq_write(self->eq, FI_AV_COMPLETE, &in, sizeof(in), 0));
	memset(&out, 0, sizeof(out));
	EXPECT_EQ((ssize_t)sizeof(out),
		  fi_eq_read(self->eq, &event, &out, sizeof(out), FI_PEEK));
	EXPECT_EQ((uint32_t)FI_AV_COMPLETE, event);
	EXPECT_EQ(42U, out.data);
	/* Again: still there. */
	EXPECT_EQ((ssize_t)sizeof(out),
		  fi_eq_read(self->eq, &event, &out, sizeof(out), FI_PEEK));
	/* A read without FI_PEEK takes it. */
	memset(&out, 0, sizeof(out));
	EXPECT_EQ((ssize_t)sizeof(out),
		  fi_eq_read(self->eq, &event, &out, sizeof(out), 0));
	EXPECT_EQ(42U, out.data);
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->eq, &event, &out, sizeof(out),
					 FI_PEEK));
}

TEST_F(eq, read_len_too_small_returns_etoosmall)
{
	struct fi_eq_entry in = entry_of(9), out;
	uint32_t event;

	NEED_DEVICE(self->fabric);

	ASSERT_EQ((ssize_t)sizeof(in),
		  fi_eq_write(self->eq, FI_NOTIFY, &in, sizeof(in), 0));
	EXPECT_EQ(-FI_ETOOSMALL, fi_eq_read(self->eq, &event, &out,
					    sizeof(out) - 1, 0));
	EXPECT_EQ(-FI_ETOOSMALL, fi_eq_read(self->eq, &event, NULL, 0, 0));
	EXPECT_EQ(-FI_ETOOSMALL, fi_eq_read(self->eq, &event, &out, 1,
					    FI_PEEK));
	/* Nothing was lost: a big enough buffer gets it. */
	EXPECT_EQ((ssize_t)sizeof(out),
		  fi_eq_read(self->eq, &event, &out, sizeof(out) + 8, 0));
	EXPECT_EQ(9U, out.data);
}

TEST_F(eq, connection_data_is_cut_to_the_buffer)
{
	struct {
		struct fi_eq_cm_entry cm;
		char data[32];
	} in, out;
	uint32_t event;

	NEED_DEVICE(self->fabric);

	memset(&in, 0, sizeof(in));
	in.cm.fid = &self->eq->fid;
	strcpy(in.data, "0123456789abcdefghijklmnopqrstu");
	ASSERT_EQ((ssize_t)sizeof(in),
		  fi_eq_write(self->eq, FI_CONNECTED, &in, sizeof(in), 0));

	/* fi_eq(3): connection data is limited to the buffer... */
	EXPECT_EQ(-FI_ETOOSMALL, fi_eq_read(self->eq, &event, &out,
					    sizeof(in.cm) - 1, 0));
	memset(&out, 0, sizeof(out));
	EXPECT_EQ((ssize_t)(sizeof(in.cm) + 4),
		  fi_eq_read(self->eq, &event, &out, sizeof(in.cm) + 4, 0));
	EXPECT_EQ((uint32_t)FI_CONNECTED, event);
	EXPECT_EQ(&self->eq->fid, out.cm.fid);
	EXPECT_EQ(0, memcmp(out.data, "0123", 4));
	EXPECT_EQ(0, out.data[4]);
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->eq, &event, &out, sizeof(out),
					 0));
}

TEST_F(eq, read_and_write_reject_bad_arguments)
{
	struct fi_eq_entry e = entry_of(1);
	uint32_t event;

	NEED_DEVICE(self->fabric);

	EXPECT_EQ(-FI_EINVAL, fi_eq_write(self->eq, FI_NOTIFY, NULL,
					  sizeof(e), 0));
	EXPECT_EQ(-FI_ENOMEM, fi_eq_write(self->eq, FI_NOTIFY, &e, SIZE_MAX,
					  0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_eq_write(self->eq, FI_NOTIFY, &e,
					     sizeof(e), FI_PEEK));
	EXPECT_EQ(-FI_EBADFLAGS, fi_eq_write(self->eq, FI_NOTIFY, &e,
					     sizeof(e), 1ULL << 40));
	ASSERT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e), 0));
	EXPECT_EQ(-FI_EINVAL, fi_eq_read(self->eq, &event, NULL, sizeof(e),
					 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_eq_read(self->eq, &event, &e, sizeof(e),
					    FI_WRITE));
	EXPECT_EQ(-FI_EINVAL, fi_eq_readerr(self->eq, NULL, 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_eq_readerr(self->eq, NULL, 1ULL << 40));
	/* The refused calls took nothing. */
	EXPECT_EQ((ssize_t)sizeof(e), fi_eq_read(self->eq, &event, &e,
						 sizeof(e), 0));
}

TEST_F(eq, write_needs_fi_write)
{
	struct fi_eq_attr attr = { .size = 4 };
	struct fi_eq_entry e = entry_of(1);
	struct fid_eq *eq;

	NEED_DEVICE(self->fabric);

	/* fi_eq(3): without FI_WRITE the application may not write. */
	ASSERT_EQ(0, fi_eq_open(self->fabric, &attr, &eq, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_eq_write(eq, FI_NOTIFY, &e, sizeof(e), 0));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(eq, NULL, &e, sizeof(e), 0));
	EXPECT_EQ(0, fi_close(&eq->fid));
}

TEST_F(eq, write_until_full_then_eagain)
{
	struct fi_eq_err_entry err = { .err = FI_EIO };
	struct fi_eq_entry e;
	uint32_t event;
	int i;

	NEED_DEVICE(self->fabric);

	/* The fixture's EQ has size 4. */
	for (i = 0; i < 4; i++) {
		e = entry_of(i);
		ASSERT_EQ((ssize_t)sizeof(e),
			  fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e), 0))
			TH_LOG("event %d", i);
	}
	e = entry_of(4);
	EXPECT_EQ(-FI_EAGAIN, fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e),
					  0));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_write(self->eq, 0, &err, sizeof(err),
					  KFAB_EQ_WRITE_ERR));

	/* One read makes room for exactly one more. */
	ASSERT_EQ((ssize_t)sizeof(e), fi_eq_read(self->eq, &event, &e,
						 sizeof(e), 0));
	EXPECT_EQ(0U, e.data);
	e = entry_of(4);
	EXPECT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e), 0));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e),
					  0));

	/* Nothing was dropped: 1, 2, 3, 4 in order. */
	for (i = 1; i <= 4; i++) {
		ASSERT_EQ((ssize_t)sizeof(e),
			  fi_eq_read(self->eq, &event, &e, sizeof(e), 0));
		EXPECT_EQ((uint64_t)i, e.data);
	}
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->eq, &event, &e, sizeof(e), 0));
}

TEST_F(eq, default_size_is_256)
{
	struct fi_eq_attr attr = { .flags = FI_WRITE };
	struct fi_eq_entry e = entry_of(0);
	struct fid_eq *eq;
	int i;

	NEED_DEVICE(self->fabric);

	ASSERT_EQ(0, fi_eq_open(self->fabric, &attr, &eq, NULL));
	for (i = 0; i < 256; i++)
		ASSERT_EQ((ssize_t)sizeof(e),
			  fi_eq_write(eq, FI_NOTIFY, &e, sizeof(e), 0));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_write(eq, FI_NOTIFY, &e, sizeof(e), 0));
	EXPECT_EQ(0, fi_close(&eq->fid));
}

/* ---- errors: fi_eq_readerr ---- */

static const char err_blob[] = "kfab error details, 40 bytes long......";

static void write_err(struct __test_metadata *_metadata, struct fid_eq *eq,
		      int err, bool with_data)
{
	struct fi_eq_err_entry e = {
		.fid = &eq->fid,
		.context = (void *)(uintptr_t)err,
		.data = 1000 + err,
		.err = err,
		.prov_errno = EIO,
	};

	if (with_data) {
		e.err_data = (void *)err_blob;
		e.err_data_size = sizeof(err_blob);
	}
	ASSERT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(eq, 0, &e, sizeof(e), KFAB_EQ_WRITE_ERR));
}

TEST_F(eq, error_entry_makes_read_return_eavail)
{
	struct fi_eq_entry e = entry_of(1);
	struct fi_eq_err_entry err;
	uint32_t event;

	NEED_DEVICE(self->fabric);

	/* Empty: no error either. */
	memset(&err, 0, sizeof(err));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_readerr(self->eq, &err, 0));

	/* normal, error, normal: errors are reported in order. */
	ASSERT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e), 0));
	write_err(_metadata, self->eq, FI_ECANCELED, false);
	e = entry_of(2);
	ASSERT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e), 0));

	/* No error at the head: readerr has nothing. */
	EXPECT_EQ(-FI_EAGAIN, fi_eq_readerr(self->eq, &err, 0));
	ASSERT_EQ((ssize_t)sizeof(e), fi_eq_read(self->eq, &event, &e,
						 sizeof(e), 0));
	EXPECT_EQ(1U, e.data);

	EXPECT_EQ(-FI_EAVAIL, fi_eq_read(self->eq, &event, &e, sizeof(e), 0));
	EXPECT_EQ(-FI_EAVAIL, fi_eq_read(self->eq, &event, &e, sizeof(e),
					 FI_PEEK));

	/* FI_PEEK on readerr leaves it too. */
	memset(&err, 0, sizeof(err));
	EXPECT_EQ((ssize_t)sizeof(err), fi_eq_readerr(self->eq, &err, FI_PEEK));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(-FI_EAVAIL, fi_eq_read(self->eq, &event, &e, sizeof(e), 0));

	memset(&err, 0xa5, sizeof(err));
	err.err_data_size = 0;
	EXPECT_EQ((ssize_t)sizeof(err), fi_eq_readerr(self->eq, &err, 0));
	EXPECT_EQ(&self->eq->fid, err.fid);
	EXPECT_EQ((void *)(uintptr_t)FI_ECANCELED, err.context);
	EXPECT_EQ((uint64_t)(1000 + FI_ECANCELED), err.data);
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(EIO, err.prov_errno);
	EXPECT_EQ(NULL, err.err_data);
	EXPECT_EQ(0U, err.err_data_size);

	/* The error gone, the next event reads. */
	EXPECT_EQ(-FI_EAGAIN, fi_eq_readerr(self->eq, &err, 0));
	ASSERT_EQ((ssize_t)sizeof(e), fi_eq_read(self->eq, &event, &e,
						 sizeof(e), 0));
	EXPECT_EQ(2U, e.data);
}

TEST_F(eq, readerr_err_data_in_provider_buffer)
{
	struct fi_eq_err_entry err;
	char *first;

	NEED_DEVICE(self->fabric);

	write_err(_metadata, self->eq, FI_EIO, true);
	write_err(_metadata, self->eq, FI_ETIMEDOUT, true);

	/* err_data_size 0 on input: the provider's buffer. */
	memset(&err, 0, sizeof(err));
	ASSERT_EQ((ssize_t)sizeof(err), fi_eq_readerr(self->eq, &err, 0));
	EXPECT_EQ(FI_EIO, err.err);
	ASSERT_NE(NULL, err.err_data);
	EXPECT_NE((void *)err_blob, err.err_data);	/* a copy */
	EXPECT_EQ(sizeof(err_blob), err.err_data_size);
	EXPECT_EQ(0, memcmp(err.err_data, err_blob, sizeof(err_blob)));
	first = err.err_data;
	/* Still valid after other calls, until the next readerr. */
	EXPECT_EQ(-FI_EAVAIL, fi_eq_read(self->eq, NULL, NULL, 0, 0));
	EXPECT_EQ(0, memcmp(first, err_blob, sizeof(err_blob)));

	memset(&err, 0, sizeof(err));
	ASSERT_EQ((ssize_t)sizeof(err), fi_eq_readerr(self->eq, &err, 0));
	EXPECT_EQ(FI_ETIMEDOUT, err.err);
	ASSERT_NE(NULL, err.err_data);
	EXPECT_EQ(sizeof(err_blob), err.err_data_size);
	EXPECT_EQ(0, memcmp(err.err_data, err_blob, sizeof(err_blob)));
}

TEST_F(eq, readerr_err_data_into_app_buffer)
{
	struct fi_eq_err_entry err;
	char buf[sizeof(err_blob) + 16], small[8];

	NEED_DEVICE(self->fabric);

	write_err(_metadata, self->eq, FI_EIO, true);
	write_err(_metadata, self->eq, FI_EIO, true);
	write_err(_metadata, self->eq, FI_EIO, false);

	/* API >= 1.5 with a buffer: copied, err_data_size is what was copied. */
	memset(buf, 0x5a, sizeof(buf));
	memset(&err, 0, sizeof(err));
	err.err_data = buf;
	err.err_data_size = sizeof(buf);
	ASSERT_EQ((ssize_t)sizeof(err), fi_eq_readerr(self->eq, &err, 0));
	EXPECT_EQ(FI_EIO, err.err);
	EXPECT_EQ((void *)&buf[0], err.err_data);
	EXPECT_EQ(sizeof(err_blob), err.err_data_size);
	EXPECT_EQ(0, memcmp(buf, err_blob, sizeof(err_blob)));
	EXPECT_EQ(0x5a, buf[sizeof(err_blob)]);

	/* A smaller buffer: cut to its size. */
	memset(small, 0, sizeof(small));
	err.err_data = small;
	err.err_data_size = sizeof(small);
	ASSERT_EQ((ssize_t)sizeof(err), fi_eq_readerr(self->eq, &err, 0));
	EXPECT_EQ((void *)&small[0], err.err_data);
	EXPECT_EQ(sizeof(small), err.err_data_size);
	EXPECT_EQ(0, memcmp(small, err_blob, sizeof(small)));

	/* No error data: nothing copied. */
	err.err_data = buf;
	err.err_data_size = sizeof(buf);
	ASSERT_EQ((ssize_t)sizeof(err), fi_eq_readerr(self->eq, &err, 0));
	EXPECT_EQ((void *)&buf[0], err.err_data);
	EXPECT_EQ(0U, err.err_data_size);
}

TEST_F(eq, readerr_with_a_reused_struct)
{
	struct fi_eq_err_entry err;
	int i;

	NEED_DEVICE(self->fabric);

	for (i = 0; i < 3; i++)
		write_err(_metadata, self->eq, FI_EIO, true);

	/*
	 * The usual loop: one struct, zeroed once.  From the second call on
	 * its err_data is kfab's buffer of the call before, which is no
	 * buffer of the application's: nothing is copied into it.
	 */
	memset(&err, 0, sizeof(err));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ((ssize_t)sizeof(err),
			  fi_eq_readerr(self->eq, &err, 0)) TH_LOG("error %d", i);
		ASSERT_NE(NULL, err.err_data);
		EXPECT_EQ(sizeof(err_blob), err.err_data_size);
		EXPECT_EQ(0, memcmp(err.err_data, err_blob, sizeof(err_blob)));
	}
}

TEST(readerr_before_api_1_5_uses_provider_buffer)
{
	struct fi_eq_attr attr = { .size = 4, .flags = FI_WRITE };
	struct fid_fabric *fabric;
	struct fi_eq_err_entry err;
	struct fid_eq *eq;
	char buf[64];

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	fabric = open_fabric(_metadata, FI_VERSION(1, 4));
	NEED_DEVICE(fabric);
	EXPECT_EQ(FI_VERSION(1, 4), fabric->api_version);

	ASSERT_EQ(0, fi_eq_open(fabric, &attr, &eq, NULL));
	write_err(_metadata, eq, FI_EIO, true);
	memset(&err, 0, sizeof(err));
	memset(buf, 0, sizeof(buf));
	err.err_data = buf;
	err.err_data_size = sizeof(buf);
	ASSERT_EQ((ssize_t)sizeof(err), fi_eq_readerr(eq, &err, 0));
	/* Before 1.5 err_data_size is no input: the provider's buffer. */
	EXPECT_NE((void *)&buf[0], err.err_data);
	EXPECT_EQ(sizeof(err_blob), err.err_data_size);
	EXPECT_EQ(0, memcmp(err.err_data, err_blob, sizeof(err_blob)));
	EXPECT_EQ(0, buf[0]);
	EXPECT_EQ(0, fi_close(&eq->fid));
	EXPECT_EQ(0, fi_close(&fabric->fid));
}

TEST_F(eq, write_err_checks_its_entry)
{
	struct fi_eq_err_entry err = { .err = FI_EIO };

	NEED_DEVICE(self->fabric);

	EXPECT_EQ(-FI_EINVAL, fi_eq_write(self->eq, 0, &err, sizeof(err) - 1,
					  KFAB_EQ_WRITE_ERR));
	EXPECT_EQ(-FI_EINVAL, fi_eq_write(self->eq, 0, NULL, sizeof(err),
					  KFAB_EQ_WRITE_ERR));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_readerr(self->eq, &err, 0));
}

TEST_F(eq, strerror)
{
	char buf[64];
	const char *s;

	NEED_DEVICE(self->fabric);

	s = fi_eq_strerror(self->eq, EIO, NULL, NULL, 0);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ(fi_strerror(EIO), s);
	s = fi_eq_strerror(self->eq, FI_ETOOSMALL, NULL, buf, sizeof(buf));
	EXPECT_EQ((const char *)buf, s);
	EXPECT_STREQ(fi_strerror(FI_ETOOSMALL), buf);
	/* Cut to the buffer, terminated. */
	s = fi_eq_strerror(self->eq, EIO, NULL, buf, 4);
	EXPECT_EQ((const char *)buf, s);
	EXPECT_EQ(3U, strlen(buf));
}

/* ---- FI_WAIT_NONE: no waiting ---- */

TEST_F(eq, wait_none_has_no_wait_object)
{
	struct fi_eq_entry e;
	struct fid *fid;
	int fd = -1;

	NEED_DEVICE(self->fabric);

	EXPECT_EQ(-FI_ENOSYS, fi_eq_sread(self->eq, NULL, &e, sizeof(e), 0, 0));
	EXPECT_EQ(-FI_ENOSYS, fi_eq_sread(self->eq, NULL, &e, sizeof(e), 10,
					  0));
	EXPECT_EQ(-FI_ENOSYS, fi_control(&self->eq->fid, FI_GETWAIT, &fd));
	EXPECT_EQ(-1, fd);
	/* fi_trywait() on an object without a wait object. */
	fid = &self->eq->fid;
	EXPECT_EQ(-FI_EINVAL, fi_trywait(self->fabric, &fid, 1));
	EXPECT_EQ(-FI_ENOSYS, fi_control(&self->eq->fid, FI_ENABLE, NULL));
	EXPECT_EQ(-FI_EINVAL, fi_control(&self->eq->fid, FI_GETWAITOBJ, NULL));
	EXPECT_EQ(-FI_ENOSYS, fi_open_ops(&self->eq->fid, "kfab_none", 0,
					  (void **)&fid, NULL));
}

/* ---- waiting: fi_eq_sread, FI_GETWAIT, fi_trywait ---- */

FIXTURE(wait) {
	struct fid_fabric *fabric;	/* NULL without the device */
	struct fid_eq *eq;		/* size 1024, FI_WRITE */
};

FIXTURE_VARIANT(wait) {
	enum fi_wait_obj wait_obj;
};

FIXTURE_VARIANT_ADD(wait, unspec) { .wait_obj = FI_WAIT_UNSPEC };
FIXTURE_VARIANT_ADD(wait, fd) { .wait_obj = FI_WAIT_FD };
FIXTURE_VARIANT_ADD(wait, pollfd) { .wait_obj = FI_WAIT_POLLFD };
FIXTURE_VARIANT_ADD(wait, mutex_cond) { .wait_obj = FI_WAIT_MUTEX_COND };
FIXTURE_VARIANT_ADD(wait, yield) { .wait_obj = FI_WAIT_YIELD };

FIXTURE_SETUP(wait)
{
	struct fi_eq_attr attr = { .size = 1024, .flags = FI_WRITE,
				   .wait_obj = variant->wait_obj };

	ASSERT_EQ(0, setenv("FI_PROVIDER", "kfab", 1));
	self->fabric = open_fabric(_metadata, API_VERSION);
	if (self->fabric)
		ASSERT_EQ(0, fi_eq_open(self->fabric, &attr, &self->eq, NULL));
}

FIXTURE_TEARDOWN(wait)
{
	if (self->eq)
		EXPECT_EQ(0, fi_close(&self->eq->fid));
	if (self->fabric)
		EXPECT_EQ(0, fi_close(&self->fabric->fid));
}

/* The EQ's fd for FI_WAIT_FD and FI_WAIT_POLLFD, else -1. */
static int eq_fd(struct __test_metadata *_metadata, struct fid_eq *eq,
		 enum fi_wait_obj wait_obj)
{
	struct pollfd pfds[2];
	struct fi_wait_pollfd pollfd = { .nfds = 2, .fd = pfds };
	int fd = -1;

	if (wait_obj == FI_WAIT_FD) {
		EXPECT_EQ(0, fi_control(&eq->fid, FI_GETWAIT, &fd));
		return fd;
	}
	if (wait_obj == FI_WAIT_POLLFD) {
		EXPECT_EQ(0, fi_control(&eq->fid, FI_GETWAIT, &pollfd));
		EXPECT_EQ(1U, pollfd.nfds);
		EXPECT_EQ(POLLIN, pfds[0].events);
		return pfds[0].fd;
	}
	return -1;
}

struct writer {
	struct fid_eq *eq;
	int delay_ms;
	int count;
	uint64_t first;
	int failures;
};

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	struct fi_eq_entry e;
	int i;

	if (w->delay_ms)
		usleep(w->delay_ms * 1000);
	for (i = 0; i < w->count; i++) {
		e = entry_of(w->first + i);
		w->failures += fi_eq_write(w->eq, FI_NOTIFY, &e, sizeof(e), 0) !=
			       (ssize_t)sizeof(e);
	}
	return NULL;
}

TEST_F(wait, getwaitobj_reports_the_wait_object)
{
	enum fi_wait_obj wait_obj = FI_WAIT_NONE;

	NEED_DEVICE(self->fabric);
	EXPECT_EQ(0, fi_control(&self->eq->fid, FI_GETWAITOBJ, &wait_obj));
	EXPECT_EQ((int)variant->wait_obj, (int)wait_obj);
}

TEST_F(wait, getwait)
{
	struct fi_wait_pollfd pollfd = { 0 };
	struct fi_mutex_cond mc = { 0 };
	struct pollfd pfd;
	int fd = -1;

	NEED_DEVICE(self->fabric);

	EXPECT_EQ(-FI_EINVAL, fi_control(&self->eq->fid, FI_GETWAIT, NULL));
	switch (variant->wait_obj) {
	case FI_WAIT_FD:
		EXPECT_EQ(0, fi_control(&self->eq->fid, FI_GETWAIT, &fd));
		EXPECT_LE(0, fd);
		break;
	case FI_WAIT_POLLFD:
		/* Too small a list: -FI_ETOOSMALL and how many it needs. */
		EXPECT_EQ(-FI_ETOOSMALL, fi_control(&self->eq->fid, FI_GETWAIT,
						    &pollfd));
		EXPECT_EQ(1U, pollfd.nfds);
		EXPECT_EQ(-FI_EINVAL, fi_control(&self->eq->fid, FI_GETWAIT,
						 &pollfd));
		pollfd.fd = &pfd;
		EXPECT_EQ(0, fi_control(&self->eq->fid, FI_GETWAIT, &pollfd));
		EXPECT_EQ(1U, pollfd.nfds);
		EXPECT_LE(0, pfd.fd);
		EXPECT_EQ(POLLIN, pfd.events);
		break;
	case FI_WAIT_MUTEX_COND:
		EXPECT_EQ(0, fi_control(&self->eq->fid, FI_GETWAIT, &mc));
		EXPECT_NE(NULL, mc.mutex);
		EXPECT_NE(NULL, mc.cond);
		break;
	default:
		/* UNSPEC and YIELD: nothing to hand out. */
		EXPECT_EQ(-FI_ENOSYS, fi_control(&self->eq->fid, FI_GETWAIT,
						 &fd));
		EXPECT_EQ(-1, fd);
		break;
	}
}

TEST_F(wait, sread_returns_a_queued_event_at_once)
{
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_entry e = entry_of(5);
	uint32_t event = 0;

	NEED_DEVICE(self->fabric);

	ASSERT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(self->eq, FI_JOIN_COMPLETE, &e, sizeof(e), 0));
	memset(&e, 0, sizeof(e));
	EXPECT_EQ((ssize_t)sizeof(e), fi_eq_sread(self->eq, &event, &e,
						  sizeof(e), -1, FI_PEEK));
	EXPECT_EQ((ssize_t)sizeof(e), fi_eq_sread(self->eq, &event, &e,
						  sizeof(e), -1, 0));
	EXPECT_EQ((uint32_t)FI_JOIN_COMPLETE, event);
	EXPECT_EQ(5U, e.data);
	/* Errors first: sread says so too. */
	write_err(_metadata, self->eq, FI_EIO, false);
	EXPECT_EQ(-FI_EAVAIL, fi_eq_sread(self->eq, &event, &e, sizeof(e),
					  -1, 0));
	EXPECT_EQ(-FI_EAVAIL, fi_eq_sread(self->eq, &event, &e, sizeof(e),
					  0, 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_eq_sread(self->eq, &event, &e, sizeof(e),
					     0, FI_WRITE));
	EXPECT_EQ((ssize_t)sizeof(err), fi_eq_readerr(self->eq, &err, 0));

	/* A buffer too small for the event: as fi_eq_read, at once. */
	ASSERT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e), 0));
	EXPECT_EQ(-FI_ETOOSMALL, fi_eq_sread(self->eq, &event, &e, 1, -1, 0));
	EXPECT_EQ((ssize_t)sizeof(e), fi_eq_sread(self->eq, &event, &e,
						  sizeof(e), -1, 0));
}

TEST_F(wait, sread_timeout_zero_returns_at_once)
{
	struct fi_eq_entry e;
	int64_t t0;

	NEED_DEVICE(self->fabric);

	t0 = now_ms();
	EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(self->eq, NULL, &e, sizeof(e), 0, 0));
	EXPECT_GT(100, now_ms() - t0);
}

TEST_F(wait, sread_times_out)
{
	struct fi_eq_entry e;
	int64_t t0, dt;

	NEED_DEVICE(self->fabric);

	t0 = now_ms();
	EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(self->eq, NULL, &e, sizeof(e), 300,
					  0));
	dt = now_ms() - t0;
	EXPECT_LE(299, dt);
	/* About the timeout; a TCG guest on a loaded host is slow. */
	EXPECT_GT(1500, dt) TH_LOG("sread(300 ms) took %lld ms", (long long)dt);
}

TEST_F(wait, sread_is_woken_by_a_write_from_another_thread)
{
	struct writer w = { .eq = self->eq, .delay_ms = 200, .count = 1,
			    .first = 99 };
	struct fi_eq_entry e;
	pthread_t thread;
	uint32_t event;
	int64_t t0, dt;
	ssize_t ret;

	NEED_DEVICE(self->fabric);

	/* A finite timeout far away... */
	t0 = now_ms();
	ASSERT_EQ(0, pthread_create(&thread, NULL, writer_thread, &w));
	ret = fi_eq_sread(self->eq, &event, &e, sizeof(e), 20000, 0);
	dt = now_ms() - t0;
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ((ssize_t)sizeof(e), ret);
	EXPECT_EQ(99U, e.data);
	EXPECT_LE(150, dt);
	EXPECT_GT(5000, dt) TH_LOG("woken after %lld ms", (long long)dt);

	/* ...and none (the harness's timeout catches a sleeper never woken). */
	w.first = 100;
	t0 = now_ms();
	ASSERT_EQ(0, pthread_create(&thread, NULL, writer_thread, &w));
	ret = fi_eq_sread(self->eq, &event, &e, sizeof(e), -1, 0);
	dt = now_ms() - t0;
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ((ssize_t)sizeof(e), ret);
	EXPECT_EQ(100U, e.data);
	EXPECT_GT(5000, dt) TH_LOG("woken after %lld ms", (long long)dt);
}

TEST_F(wait, many_writers_one_sleeping_reader)
{
	struct writer w[4];
	pthread_t threads[4];
	bool seen[4 * 200] = { false };
	struct fi_eq_entry e;
	int i, got = 0;
	ssize_t ret;

	NEED_DEVICE(self->fabric);

	for (i = 0; i < 4; i++) {
		w[i] = (struct writer){ .eq = self->eq, .delay_ms = 10,
					.count = 200, .first = i * 200 };
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, writer_thread,
					    &w[i]));
	}
	while (got < 4 * 200) {
		ret = fi_eq_sread(self->eq, NULL, &e, sizeof(e), 5000, 0);
		ASSERT_EQ((ssize_t)sizeof(e), ret) TH_LOG("after %d events", got);
		ASSERT_GT(4 * 200, e.data);
		EXPECT_FALSE(seen[e.data]);
		seen[e.data] = true;
		got++;
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(threads[i], NULL));
		EXPECT_EQ(0, w[i].failures);
	}
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->eq, NULL, &e, sizeof(e), 0));
}

TEST_F(wait, trywait)
{
	struct fi_eq_entry e = entry_of(1);
	struct fid *fids[2];

	NEED_DEVICE(self->fabric);

	fids[0] = &self->eq->fid;
	EXPECT_EQ(0, fi_trywait(self->fabric, fids, 1));
	ASSERT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e), 0));
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(self->fabric, fids, 1));
	/* Peeking leaves it ready. */
	EXPECT_EQ((ssize_t)sizeof(e), fi_eq_read(self->eq, NULL, &e, sizeof(e),
						 FI_PEEK));
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(self->fabric, fids, 1));
	EXPECT_EQ((ssize_t)sizeof(e), fi_eq_read(self->eq, NULL, &e, sizeof(e),
						 0));
	EXPECT_EQ(0, fi_trywait(self->fabric, fids, 1));
	/* An error entry is something to read, too. */
	write_err(_metadata, self->eq, FI_EIO, false);
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(self->fabric, fids, 1));
	fids[1] = fids[0];
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(self->fabric, fids, 2));
}

TEST_F(wait, fd_is_readable_exactly_while_not_empty)
{
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_entry e = entry_of(1);
	struct epoll_event ev = { .events = EPOLLIN };
	int fd, ep, i;

	NEED_DEVICE(self->fabric);
	fd = eq_fd(_metadata, self->eq, variant->wait_obj);
	if (fd < 0)
		SKIP(return, "no fd for this wait object");

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));

	EXPECT_FALSE(fd_readable(fd));
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));
	for (i = 0; i < 3; i++)
		ASSERT_EQ((ssize_t)sizeof(e),
			  fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e), 0));
	EXPECT_TRUE(fd_readable(fd));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 0));
	EXPECT_EQ((uint32_t)EPOLLIN, ev.events & EPOLLIN);
	/* FI_PEEK takes nothing, fi_trywait reads nothing. */
	EXPECT_EQ((ssize_t)sizeof(e), fi_eq_read(self->eq, NULL, &e, sizeof(e),
						 FI_PEEK));
	EXPECT_TRUE(fd_readable(fd));
	for (i = 0; i < 3; i++) {
		EXPECT_TRUE(fd_readable(fd));
		ASSERT_EQ((ssize_t)sizeof(e),
			  fi_eq_read(self->eq, NULL, &e, sizeof(e), 0));
	}
	EXPECT_FALSE(fd_readable(fd));
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));

	/* An error entry counts. */
	write_err(_metadata, self->eq, FI_EIO, false);
	EXPECT_TRUE(fd_readable(fd));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 0));
	EXPECT_EQ((ssize_t)sizeof(err), fi_eq_readerr(self->eq, &err, 0));
	EXPECT_FALSE(fd_readable(fd));
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));
	close(ep);
}

struct fd_waiter {
	int fd;
	int ready;	/* poll() result */
};

static void *poll_thread(void *arg)
{
	struct fd_waiter *w = arg;
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };

	w->ready = poll(&pfd, 1, 10000);
	return NULL;
}

TEST_F(wait, fd_wakes_a_poller_on_write)
{
	struct fi_eq_entry e = entry_of(1);
	struct fd_waiter w;
	pthread_t thread;
	struct fid *fid = &self->eq->fid;

	NEED_DEVICE(self->fabric);
	w.fd = eq_fd(_metadata, self->eq, variant->wait_obj);
	if (w.fd < 0)
		SKIP(return, "no fd for this wait object");

	/* The fi_trywait() protocol: may block, then block in poll(). */
	ASSERT_EQ(0, fi_trywait(self->fabric, &fid, 1));
	ASSERT_EQ(0, pthread_create(&thread, NULL, poll_thread, &w));
	usleep(100 * 1000);
	ASSERT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e), 0));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	EXPECT_EQ(1, w.ready);
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(self->fabric, &fid, 1));
}

struct cond_waiter {
	struct fid_fabric *fabric;
	struct fid_eq *eq;
	struct fi_mutex_cond mc;
	int woken;
};

/* What an application does with FI_WAIT_MUTEX_COND's pair. */
static void *cond_thread(void *arg)
{
	struct cond_waiter *w = arg;
	struct fid *fid = &w->eq->fid;
	struct timespec deadline;
	int rounds = 0;

	pthread_mutex_lock(w->mc.mutex);
	while (!fi_trywait(w->fabric, &fid, 1) && rounds++ < 100) {
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += 1;
		pthread_cond_timedwait(w->mc.cond, w->mc.mutex, &deadline);
	}
	w->woken = rounds < 100;
	pthread_mutex_unlock(w->mc.mutex);
	return NULL;
}

TEST_F(wait, mutex_cond_is_signalled_on_write)
{
	struct fi_eq_entry e = entry_of(1);
	struct cond_waiter w = { .fabric = self->fabric, .eq = self->eq };
	pthread_t thread;
	int64_t t0;

	NEED_DEVICE(self->fabric);
	if (variant->wait_obj != FI_WAIT_MUTEX_COND)
		SKIP(return, "FI_WAIT_MUTEX_COND only");

	ASSERT_EQ(0, fi_control(&self->eq->fid, FI_GETWAIT, &w.mc));
	ASSERT_EQ(0, pthread_create(&thread, NULL, cond_thread, &w));
	usleep(100 * 1000);
	t0 = now_ms();
	ASSERT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(self->eq, FI_NOTIFY, &e, sizeof(e), 0));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	EXPECT_TRUE(w.woken);
	/* Woken by the broadcast, not by its 1 s timeout. */
	EXPECT_GT(900, now_ms() - t0);
}

TEST_HARNESS_MAIN
