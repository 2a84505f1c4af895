// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The internal EQ API that other libshim objects call (libshim/internal.h:
 * shim_eq_from_fid, shim_eq_post, shim_eq_post_err, shim_eq_bind,
 * shim_eq_unbind), on the host, without a device.
 *
 * libkfab.so exports none of these, so this program is linked with
 * libshim/eq.c and libshim/enosys.c themselves and opens its EQs on a
 * struct shim_fabric of its own that no device backs: an EQ needs nothing
 * of its fabric but the counter and lock of open EQs and the API version.
 * What only the public API can show (fi_eq(3) behaviour, wait objects)
 * is in shim_eq.c.
 */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#include <rdma/fi_eq.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

/* prov.c is not linked: the logging macros need the provider struct. */
struct fi_provider shim_prov = {
	.name = SHIM_PROV_NAME,
	.version = KFAB_PROV_VERSION,
	.fi_version = FI_VERSION(1, 17),
};

/* ring.c is not linked either: no endpoint, so no lazy ring to ring. */
void shim_lazy_flush(void)
{
}

void shim_lazy_sleep_begin(void)
{
}

void shim_lazy_sleep_end(void)
{
}

static struct fi_eq_entry entry_of(uint64_t data)
{
	return (struct fi_eq_entry){ .data = data };
}

static bool fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

FIXTURE(internal) {
	struct shim_fabric fab;
	struct fid_eq *eq_fid;		/* size 2, FI_WRITE, FI_WAIT_FD */
	struct shim_eq *eq;
};

FIXTURE_SETUP(internal)
{
	struct fi_eq_attr attr = { .size = 2, .flags = FI_WRITE,
				   .wait_obj = FI_WAIT_FD };

	memset(&self->fab, 0, sizeof(self->fab));
	ASSERT_EQ(0, pthread_mutex_init(&self->fab.lock, NULL));
	self->fab.fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	self->fab.fabric_fid.api_version = FI_VERSION(1, 17);
	self->fab.fd = -1;
	ASSERT_EQ(0, shim_eq_open(&self->fab.fabric_fid, &attr, &self->eq_fid,
				  NULL));
	self->eq = shim_eq_from_fid(&self->eq_fid->fid);
	ASSERT_NE(NULL, self->eq);
}

FIXTURE_TEARDOWN(internal)
{
	if (self->eq_fid)
		EXPECT_EQ(0, fi_close(&self->eq_fid->fid));
	EXPECT_EQ(0U, self->fab.eq_cnt);
	pthread_mutex_destroy(&self->fab.lock);
}

TEST_F(internal, from_fid_knows_kfab_eqs_only)
{
	struct fid other = { .fclass = FI_CLASS_EQ };

	EXPECT_EQ((void *)self->eq, (void *)self->eq_fid);	/* first member */
	EXPECT_EQ(NULL, shim_eq_from_fid(NULL));
	EXPECT_EQ(NULL, shim_eq_from_fid(&self->fab.fabric_fid.fid));
	/* An EQ of another provider. */
	other.ops = self->eq_fid->fid.ops + 1;
	EXPECT_EQ(NULL, shim_eq_from_fid(&other));
}

TEST_F(internal, fabric_counts_its_eqs)
{
	EXPECT_EQ(1U, self->fab.eq_cnt);
	ASSERT_EQ(0, fi_close(&self->eq_fid->fid));
	self->eq_fid = NULL;
	EXPECT_EQ(0U, self->fab.eq_cnt);
}

TEST_F(internal, provider_posts_are_kept_beyond_size)
{
	struct fi_eq_entry e;
	uint32_t event;
	int fd, i;

	ASSERT_EQ(0, fi_control(&self->eq_fid->fid, FI_GETWAIT, &fd));

	/* The application fills the EQ (size 2)... */
	for (i = 0; i < 2; i++) {
		e = entry_of(i);
		ASSERT_EQ((ssize_t)sizeof(e),
			  fi_eq_write(self->eq_fid, FI_NOTIFY, &e, sizeof(e), 0));
	}
	e = entry_of(99);
	EXPECT_EQ(-FI_EAGAIN, fi_eq_write(self->eq_fid, FI_NOTIFY, &e,
					  sizeof(e), 0));

	/* ...but kfab's own events are never refused. */
	for (i = 2; i < 12; i++) {
		e = entry_of(i);
		ASSERT_EQ(0, shim_eq_post(self->eq, FI_AV_COMPLETE, &e,
					  sizeof(e)));
	}
	/* Still full for the application until it drains below size. */
	EXPECT_EQ(-FI_EAGAIN, fi_eq_write(self->eq_fid, FI_NOTIFY, &e,
					  sizeof(e), 0));

	for (i = 0; i < 12; i++) {
		EXPECT_TRUE(fd_readable(fd));
		ASSERT_EQ((ssize_t)sizeof(e),
			  fi_eq_read(self->eq_fid, &event, &e, sizeof(e), 0));
		EXPECT_EQ((uint64_t)i, e.data);
		EXPECT_EQ(i < 2 ? (uint32_t)FI_NOTIFY : (uint32_t)FI_AV_COMPLETE,
			  event);
	}
	EXPECT_FALSE(fd_readable(fd));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->eq_fid, &event, &e, sizeof(e),
					 0));
	e = entry_of(12);
	EXPECT_EQ((ssize_t)sizeof(e),
		  fi_eq_write(self->eq_fid, FI_NOTIFY, &e, sizeof(e), 0));
}

TEST_F(internal, post_copies_the_event)
{
	struct fi_eq_entry e = entry_of(7), out;
	uint32_t event;

	ASSERT_EQ(0, shim_eq_post(self->eq, FI_MR_COMPLETE, &e, sizeof(e)));
	e.data = 8;
	ASSERT_EQ((ssize_t)sizeof(out),
		  fi_eq_read(self->eq_fid, &event, &out, sizeof(out), 0));
	EXPECT_EQ(7U, out.data);
	EXPECT_EQ((uint32_t)FI_MR_COMPLETE, event);

	/* An event without data. */
	ASSERT_EQ(0, shim_eq_post(self->eq, FI_NOTIFY, NULL, 0));
	EXPECT_EQ(0, fi_eq_read(self->eq_fid, &event, NULL, 0, 0));
}

TEST_F(internal, post_err_copies_entry_and_err_data)
{
	struct fi_eq_err_entry err = {
		.fid = &self->eq_fid->fid,
		.context = &err,
		.data = 3,
		.err = FI_ETIMEDOUT,
		.prov_errno = ETIMEDOUT,
	};
	struct fi_eq_err_entry out;
	char *data = strdup("the AV insert of address 3 timed out");
	size_t len = strlen(data) + 1;
	char copy[64];

	ASSERT_NE(NULL, data);
	strcpy(copy, data);
	err.err_data = data;
	err.err_data_size = len;
	ASSERT_EQ(0, shim_eq_post_err(self->eq, &err));
	/* The caller's buffer and struct may go at once. */
	memset(data, 0, len);
	free(data);
	memset(&err, 0, sizeof(err));

	EXPECT_EQ(-FI_EAVAIL, fi_eq_read(self->eq_fid, NULL, NULL, 0, 0));
	memset(&out, 0, sizeof(out));
	ASSERT_EQ((ssize_t)sizeof(out), fi_eq_readerr(self->eq_fid, &out, 0));
	EXPECT_EQ(&self->eq_fid->fid, out.fid);
	EXPECT_EQ(3U, out.data);
	EXPECT_EQ(FI_ETIMEDOUT, out.err);
	EXPECT_EQ(ETIMEDOUT, out.prov_errno);
	EXPECT_EQ(len, out.err_data_size);
	ASSERT_NE(NULL, out.err_data);
	EXPECT_STREQ(copy, (char *)out.err_data);
	EXPECT_STREQ(fi_strerror(ETIMEDOUT),
		     fi_eq_strerror(self->eq_fid, out.prov_errno,
				    out.err_data, NULL, 0));

	/* Without err_data; beyond size like any provider event. */
	err.err = FI_EIO;
	ASSERT_EQ(0, shim_eq_post_err(self->eq, &err));
	ASSERT_EQ(0, shim_eq_post_err(self->eq, &err));
	ASSERT_EQ(0, shim_eq_post_err(self->eq, &err));
	/*
	 * @out is reused as the last call left it: its err_data is kfab's
	 * buffer, not the application's, so nothing is copied into it.
	 */
	ASSERT_EQ((ssize_t)sizeof(out), fi_eq_readerr(self->eq_fid, &out, 0));
	EXPECT_EQ(FI_EIO, out.err);
	EXPECT_EQ(NULL, out.err_data);
	EXPECT_EQ(0U, out.err_data_size);
	/* The two left are freed by close (valgrind: no leak). */
}

TEST_F(internal, post_rejects_bad_arguments)
{
	EXPECT_EQ(-FI_EINVAL, shim_eq_post(NULL, FI_NOTIFY, NULL, 0));
	EXPECT_EQ(-FI_EINVAL, shim_eq_post(self->eq, FI_NOTIFY, NULL, 8));
	EXPECT_EQ(-FI_EINVAL, shim_eq_post_err(self->eq, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(self->eq_fid, NULL, NULL, 0, 0));
}

TEST_F(internal, close_is_busy_while_bound)
{
	struct fi_eq_entry e = entry_of(1);

	shim_eq_bind(self->eq);
	shim_eq_bind(self->eq);
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->eq_fid->fid));
	/* The refused close changed nothing. */
	ASSERT_EQ(0, shim_eq_post(self->eq, FI_NOTIFY, &e, sizeof(e)));
	EXPECT_EQ(1U, self->fab.eq_cnt);
	shim_eq_unbind(self->eq);
	EXPECT_EQ(-FI_EBUSY, fi_close(&self->eq_fid->fid));
	shim_eq_unbind(self->eq);
	EXPECT_EQ(0, fi_close(&self->eq_fid->fid));
	self->eq_fid = NULL;
}

struct poster {
	struct shim_eq *eq;
	int count;
	int failures;
};

static void *poster_thread(void *arg)
{
	struct poster *p = arg;
	struct fi_eq_entry e;
	int i;

	usleep(100 * 1000);
	for (i = 0; i < p->count; i++) {
		e = entry_of(i);
		p->failures += !!shim_eq_post(p->eq, FI_AV_COMPLETE, &e,
					      sizeof(e));
	}
	return NULL;
}

TEST_F(internal, post_from_another_thread_wakes_sread)
{
	static const enum fi_wait_obj objs[] = {
		FI_WAIT_FD, FI_WAIT_UNSPEC, FI_WAIT_MUTEX_COND, FI_WAIT_YIELD,
	};
	struct fi_eq_attr attr = { .size = 4 };
	struct poster p = { .count = 50 };
	struct fid_eq *eq_fid;
	struct fi_eq_entry e;
	pthread_t thread;
	size_t k;
	int i;

	for (k = 0; k < ARRAY_SIZE(objs); k++) {
		attr.wait_obj = objs[k];
		ASSERT_EQ(0, shim_eq_open(&self->fab.fabric_fid, &attr, &eq_fid,
					  NULL));
		p.eq = shim_eq_from_fid(&eq_fid->fid);
		p.failures = 0;
		ASSERT_EQ(0, pthread_create(&thread, NULL, poster_thread, &p));
		/* 50 events through an EQ of size 4: none refused or lost. */
		for (i = 0; i < p.count; i++) {
			ASSERT_EQ((ssize_t)sizeof(e),
				  fi_eq_sread(eq_fid, NULL, &e, sizeof(e),
					      10000, 0))
				TH_LOG("wait_obj %d, event %d", objs[k], i);
			EXPECT_EQ((uint64_t)i, e.data);
		}
		ASSERT_EQ(0, pthread_join(thread, NULL));
		EXPECT_EQ(0, p.failures);
		EXPECT_EQ(0, fi_close(&eq_fid->fid));
	}
}

TEST_HARNESS_MAIN
