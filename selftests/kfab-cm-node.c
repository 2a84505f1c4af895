// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-cm-node: a connection (FI_EP_MSG) between two nodes, and how it
 * ends (selftests/kfab_net runs it on the netns bed).
 *
 *   kfab-cm-node server FILE kill|shutdown
 *	a passive endpoint, its address (hex) into FILE, its pid into
 *	FILE.pid; accepts one connection, then FILE.up.  "kill": waits to
 *	be killed.  "shutdown": once FILE.go exists, fi_shutdown(), then
 *	waits for FILE.done before it exits.
 *   kfab-cm-node server FILE multirecv
 *	the same, but once connected posts one FI_MULTI_RECV buffer of
 *	1024 bytes (FI_OPT_MIN_MULTI_RECV 200) before FILE.up, then takes
 *	the client's three 300-byte messages into it: each completion
 *	points at its place, the third (124 bytes left) has FI_MULTI_RECV;
 *	then FILE.done.
 *   kfab-cm-node client FILE multirecv
 *	connects, waits for FILE.up, sends the three messages, waits for
 *	FILE.done.
 *   kfab-cm-node client FILE LIMIT_MS
 *	connects to the address in FILE; once FILE.go exists (the caller
 *	killed the server, or asked it to shut down), sleeps on the EQ's
 *	wait fd (fi_trywait, poll) until FI_SHUTDOWN comes, which must be
 *	within LIMIT_MS; then a send is -FI_ENOTCONN; FILE.done.
 *
 * Exit 0, or 1 with a reason.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "kfab_test.h"

#define TIMEOUT_MS	60000
#define CM_DATA_MAX	256

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_eq *eq;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static int die(const char *what, int rc)
{
	fprintf(stderr, "kfab-cm-node: %s: %d (%s)\n", what, rc,
		fi_strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static void ok(const char *what, int rc)
{
	if (rc)
		die(what, rc);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void touch(const char *file, const char *suffix, const char *text)
{
	char name[4096], tmp[4200];
	FILE *f;

	snprintf(name, sizeof(name), "%s%s", file, suffix);
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	f = fopen(tmp, "w");
	if (!f)
		die("fopen", -FI_EIO);
	fputs(text, f);
	fclose(f);
	if (rename(tmp, name))
		die("rename", -FI_EIO);
}

static void wait_file(const char *file, const char *suffix)
{
	char name[4096];
	int tries;

	snprintf(name, sizeof(name), "%s%s", file, suffix);
	for (tries = 0; tries < TIMEOUT_MS / 10; tries++) {
		if (!access(name, F_OK))
			return;
		usleep(10000);
	}
	die(name, -FI_ETIMEDOUT);
}

static struct fi_info *msg_info(void)
{
	struct fi_info *hints = fi_allocinfo(), *info;

	if (!hints)
		die("hints", -FI_ENOMEM);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	ok("fi_getinfo", fi_getinfo(KFAB_TEST_FI_VERSION, NULL, NULL, 0,
				    hints, &info));
	fi_freeinfo(hints);
	return info;
}

static void side_fabric(struct side *s, struct fi_info *info)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };

	s->info = info;
	ok("fi_fabric", fi_fabric(info->fabric_attr, &s->fabric, NULL));
	ok("fi_eq_open", fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL));
}

static void side_ep(struct side *s, struct fi_info *info)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };

	ok("fi_domain", fi_domain(s->fabric, info, &s->domain, NULL));
	ok("fi_cq_open", fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
	ok("fi_endpoint", fi_endpoint(s->domain, info, &s->ep, NULL));
	ok("fi_ep_bind", fi_ep_bind(s->ep, &s->eq->fid, 0));
	ok("fi_ep_bind", fi_ep_bind(s->ep, &s->cq->fid,
				    FI_TRANSMIT | FI_RECV));
	ok("fi_enable", fi_enable(s->ep));
}

/* The next event within @ms: its number (FI_*), or die. */
static uint32_t next_event(struct fid_eq *eq, struct fi_eq_cm_entry *entry,
			   size_t len, int ms)
{
	uint32_t event;
	ssize_t n;

	n = fi_eq_sread(eq, &event, entry, len, ms, 0);
	if (n < 0)
		die("fi_eq_sread", (int)n);
	return event;
}

#define MR_LEN		1024
#define MR_MIN		200
#define MR_MSG		300
#define MR_COUNT	3

/* A completion of @cq within TIMEOUT_MS, or die. */
static void next_completion(struct fid_cq *cq, struct fi_cq_data_entry *e)
{
	struct fi_cq_err_entry err = { 0 };
	long end = now_ms() + TIMEOUT_MS;
	ssize_t n;

	do {
		n = fi_cq_read(cq, e, 1);
		if (n == 1)
			return;
		if (n == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1)
			die("error completion", -err.err);
		if (n != -FI_EAGAIN)
			die("fi_cq_read", (int)n);
	} while (now_ms() < end);
	die("no completion in time", -FI_ETIMEDOUT);
}

/* Server: one multi-receive buffer takes the client's messages. */
static void multi_recv_take(struct side *srv, const char *file)
{
	static char buf[MR_LEN];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	struct fi_cq_data_entry e;
	size_t min = MR_MIN;
	int i, ctx;

	ok("FI_OPT_MIN_MULTI_RECV",
	   fi_setopt(&srv->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
		     &min, sizeof(min)));
	msg.context = &ctx;
	ok("fi_recvmsg(FI_MULTI_RECV)",
	   (int)fi_recvmsg(srv->ep, &msg, FI_MULTI_RECV));
	touch(file, ".up", "");
	for (i = 0; i < MR_COUNT; i++) {
		next_completion(srv->cq, &e);
		if (e.op_context != &ctx || e.len != MR_MSG ||
		    e.buf != buf + i * MR_MSG)
			die("a completion not at its place", -FI_EOTHER);
		if (!!(e.flags & FI_MULTI_RECV) != (i == MR_COUNT - 1))
			die("FI_MULTI_RECV not on the last completion only",
			    -FI_EOTHER);
		if (buf[i * MR_MSG] != 'a' + i ||
		    buf[(i + 1) * MR_MSG - 1] != 'a' + i)
			die("a message not intact", -FI_EOTHER);
	}
	printf("# %d messages in one FI_MULTI_RECV buffer, released at the last\n",
	       MR_COUNT);
	touch(file, ".done", "");
}

/* Client: the messages, each sent once the one before it completed. */
static void multi_recv_send(struct side *cli, const char *file)
{
	struct fi_cq_data_entry e;
	char out[MR_MSG];
	int i;

	wait_file(file, ".up");
	for (i = 0; i < MR_COUNT; i++) {
		memset(out, 'a' + i, sizeof(out));
		ok("fi_send", (int)fi_send(cli->ep, out, sizeof(out), NULL, 0,
					   NULL));
		next_completion(cli->cq, &e);
	}
	wait_file(file, ".done");
}

static int do_server(const char *file, const char *mode)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX];
	struct fi_eq_cm_entry *entry = (void *)buf;
	struct side lsn = { 0 }, srv = { 0 };
	unsigned char name[64];
	size_t len = sizeof(name);
	struct fid_pep *pep;
	char hex[256], pid[32];
	size_t i;

	side_fabric(&lsn, msg_info());
	ok("fi_passive_ep", fi_passive_ep(lsn.fabric, lsn.info, &pep, NULL));
	ok("fi_pep_bind", fi_pep_bind(pep, &lsn.eq->fid, 0));
	ok("fi_listen", fi_listen(pep));
	ok("fi_getname", fi_getname(&pep->fid, name, &len));
	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", name[i]);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	touch(file, ".pid", pid);
	touch(file, "", hex);

	if (next_event(lsn.eq, entry, sizeof(buf), TIMEOUT_MS) != FI_CONNREQ)
		die("not a connection request", -FI_EOTHER);
	side_fabric(&srv, entry->info);
	side_ep(&srv, entry->info);
	ok("fi_accept", fi_accept(srv.ep, NULL, 0));
	if (next_event(srv.eq, entry, sizeof(buf), TIMEOUT_MS) != FI_CONNECTED)
		die("not connected", -FI_EOTHER);
	if (!strcmp(mode, "multirecv")) {
		multi_recv_take(&srv, file);
		return 0;
	}
	touch(file, ".up", "");
	if (!strcmp(mode, "kill")) {
		for (;;)
			pause();
	}
	wait_file(file, ".go");
	ok("fi_shutdown", fi_shutdown(srv.ep, 0));
	wait_file(file, ".done");
	return 0;
}

/* Sleep on the EQ's wait fd until an event is there: the event. */
static uint32_t sleep_for_event(struct side *s, struct fi_eq_cm_entry *entry,
				size_t len, long deadline)
{
	struct fid *fids[1] = { &s->eq->fid };
	struct pollfd pfd = { .events = POLLIN };
	uint32_t event;
	ssize_t n;

	ok("FI_GETWAIT", fi_control(&s->eq->fid, FI_GETWAIT, &pfd.fd));
	while (now_ms() < deadline) {
		n = fi_eq_read(s->eq, &event, entry, len, 0);
		if (n >= 0)
			return event;
		if (n != -FI_EAGAIN)
			die("fi_eq_read", (int)n);
		if (fi_trywait(s->fabric, fids, 1))
			continue;
		if (poll(&pfd, 1, (int)(deadline - now_ms())) < 0)
			die("poll", -FI_EIO);
	}
	die("no event in time", -FI_ETIMEDOUT);
	return 0;
}

static int do_client(const char *file, const char *mode)
{
	long limit = atol(mode);
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX];
	struct fi_eq_cm_entry *entry = (void *)buf;
	struct side cli = { 0 };
	unsigned char name[64];
	unsigned int byte;
	size_t len = 0;
	long t0, took;
	FILE *f;

	wait_file(file, "");
	f = fopen(file, "r");
	if (!f)
		die("fopen", -FI_EIO);
	while (len < sizeof(name) && fscanf(f, "%2x", &byte) == 1)
		name[len++] = (unsigned char)byte;
	fclose(f);
	side_fabric(&cli, msg_info());
	side_ep(&cli, cli.info);
	ok("fi_connect", fi_connect(cli.ep, name, NULL, 0));
	if (next_event(cli.eq, entry, sizeof(buf), TIMEOUT_MS) != FI_CONNECTED)
		die("not connected", -FI_EOTHER);
	if (!strcmp(mode, "multirecv")) {
		multi_recv_send(&cli, file);
		return 0;
	}
	/* No EQ reads until the server is gone or going. */
	wait_file(file, ".go");
	t0 = now_ms();
	if (sleep_for_event(&cli, entry, sizeof(buf), t0 + TIMEOUT_MS) !=
	    FI_SHUTDOWN)
		die("not FI_SHUTDOWN", -FI_EOTHER);
	took = now_ms() - t0;
	printf("# FI_SHUTDOWN %ld ms after the server went\n", took);
	if (entry->fid != &cli.ep->fid)
		die("FI_SHUTDOWN of another fid", -FI_EOTHER);
	if (took > limit)
		die("FI_SHUTDOWN came too late", -FI_ETIMEDOUT);
	if (fi_send(cli.ep, "x", 2, NULL, 0, NULL) != -FI_ENOTCONN)
		die("a send after FI_SHUTDOWN is not -FI_ENOTCONN", -FI_EOTHER);
	touch(file, ".done", "");
	ok("fi_close(ep)", fi_close(&cli.ep->fid));
	ok("fi_close(cq)", fi_close(&cli.cq->fid));
	ok("fi_close(domain)", fi_close(&cli.domain->fid));
	ok("fi_close(eq)", fi_close(&cli.eq->fid));
	ok("fi_close(fabric)", fi_close(&cli.fabric->fid));
	fi_freeinfo(cli.info);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server") &&
	    (!strcmp(argv[3], "kill") || !strcmp(argv[3], "shutdown") ||
	     !strcmp(argv[3], "multirecv")))
		return do_server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "client") &&
	    (atol(argv[3]) > 0 || !strcmp(argv[3], "multirecv")))
		return do_client(argv[2], argv[3]);
	fprintf(stderr, "usage: kfab-cm-node server FILE kill|shutdown|multirecv\n"
			"       kfab-cm-node client FILE LIMIT_MS|multirecv\n");
	return 2;
}
