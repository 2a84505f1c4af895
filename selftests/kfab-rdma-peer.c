// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-rdma-peer: a hostile RDMA peer for kfab's RDMA engine
 * (Documentation/net.rst "The RDMA engine"), driven by
 * selftests/kfab-rdma-fuzz.
 *
 *     kfab-rdma-peer HOST PORT
 *
 * Makes one rdma_cm connection (RDMA_PS_TCP, as kfab_rdma.ko listens) to
 * a kfab listener, then posts what standard input says, one command a
 * line, raw bytes after the line:
 *
 *     send LEN          a SEND of the LEN bytes that follow
 *     imm HEX LEN       the same, with immediate data HEX
 *     flood N LEN       N SENDs of the LEN bytes that follow, at once
 *     wait MS           wait for every SEND to complete and for the other
 *                       side to drop the connection, MS at most; prints
 *                       "dropped" or "open"
 *
 * It prints "connected" (or "refused ERRNO" and exits 0) first, and
 * disconnects at the end of its input.  A SEND takes one of the other
 * side's posted receive buffers; the hardware holds back what finds none
 * (receiver not ready), as kfab's own sender is.  The registration of its
 * buffers allows remote reads, so a descriptor may also point at them.
 *
 * Why C and not Python's pyverbs (python3-pyverbs): pyverbs' CMID posts
 * SENDs on its own QP only without immediate data, and kfab_rdma's
 * descriptors are SENDs with immediate data; librdmacm's rdma_create_ep()
 * gives the QP itself.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define SLOT_SIZE	(80 * 1024)	/* more than kfab's 64 KiB buffers */
#define SLOTS		64		/* SENDs in flight at most */

static struct rdma_cm_id *id;
static struct rdma_event_channel *ch;
static struct ibv_mr *mr;
static char *bufs;
static unsigned int posted, done_sends;
static int dropped;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Did a CM event say the connection ended?  Waits @ms at most. */
static void cm_poll(int ms)
{
	struct rdma_cm_event *ev;
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	if (dropped || poll(&p, 1, ms) <= 0)
		return;
	if (rdma_get_cm_event(ch, &ev))
		return;
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
	    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
	    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
		dropped = 1;
	rdma_ack_cm_event(ev);
}

/* Reap send completions; errors mean the QP is done for. */
static void reap(void)
{
	struct ibv_wc wc[16];
	int i, n;

	while ((n = ibv_poll_cq(id->send_cq, 16, wc)) > 0)
		for (i = 0; i < n; i++) {
			done_sends++;
			if (wc[i].status != IBV_WC_SUCCESS)
				dropped = 1;
		}
}

/* Wait until at most @left SENDs are in flight, or @deadline. */
static int drain_to(unsigned int left, long deadline)
{
	for (;;) {
		reap();
		if (posted - done_sends <= left)
			return 0;
		if (now_ms() > deadline)
			return -1;
		cm_poll(1);
	}
}

static int post(const char *data, size_t len, int with_imm, uint32_t imm)
{
	char *slot = bufs + (posted % SLOTS) * SLOT_SIZE;
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot, .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (len > SLOT_SIZE)
		return -1;
	/* A slot is free once the SEND that used it completed. */
	if (drain_to(SLOTS - 1, now_ms() + 60000))
		return -1;
	memcpy(slot, data, len);
	wr.imm_data = htonl(imm);
	wr.wr_id = posted;
	if (ibv_post_send(id->qp, &wr, &bad))
		return -1;
	posted++;
	return 0;
}

static char *read_bytes(size_t len)
{
	char *p = malloc(len ? len : 1);

	if (!p || fread(p, 1, len, stdin) != len) {
		free(p);
		return NULL;
	}
	return p;
}

static int do_wait(int ms)
{
	long deadline = now_ms() + ms;

	while (!dropped && now_ms() < deadline) {
		reap();
		cm_poll(10);
	}
	printf("%s\n", dropped ? "dropped" : "open");
	fflush(stdout);
	return 0;
}

static int run(void)
{
	char line[128], *data;
	unsigned long n, len, imm;
	int rc = 0;

	while (!rc && fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "send %lu", &len) == 1 &&
		    (data = read_bytes(len))) {
			if (!dropped && post(data, len, 0, 0))
				dropped = 1;
			free(data);
		} else if (sscanf(line, "imm %lx %lu", &imm, &len) == 2 &&
			   (data = read_bytes(len))) {
			if (!dropped && post(data, len, 1, imm))
				dropped = 1;
			free(data);
		} else if (sscanf(line, "flood %lu %lu", &n, &len) == 2 &&
			   (data = read_bytes(len))) {
			while (n-- && !dropped)
				if (post(data, len, 0, 0))
					dropped = 1;
			free(data);
		} else if (sscanf(line, "wait %lu", &n) == 1) {
			do_wait(n);
		} else {
			fprintf(stderr, "kfab-rdma-peer: bad command: %s", line);
			rc = 2;
		}
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = SLOTS, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param param = {
		.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 3, .rnr_retry_count = 7,
	};
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: kfab-rdma-peer HOST PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rdma_getaddrinfo(argv[1], argv[2], &hints, &res)) {
		perror("rdma_getaddrinfo");
		return 1;
	}
	if (rdma_create_ep(&id, res, NULL, &attr)) {
		perror("rdma_create_ep");
		return 1;
	}
	rdma_freeaddrinfo(res);
	bufs = calloc(SLOTS, SLOT_SIZE);
	mr = bufs ? ibv_reg_mr(id->pd, bufs, (size_t)SLOTS * SLOT_SIZE,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ)
		  : NULL;
	if (!mr) {
		perror("ibv_reg_mr");
		return 1;
	}
	if (rdma_connect(id, &param)) {
		printf("refused %d\n", errno);
		return 0;
	}
	/* From now on the connection's events come to @ch. */
	ch = rdma_create_event_channel();
	if (!ch || rdma_migrate_id(id, ch)) {
		perror("rdma_migrate_id");
		return 1;
	}
	printf("connected\n");
	rc = run();
	if (!dropped)
		rdma_disconnect(id);
	drain_to(0, now_ms() + 10000);
	ibv_dereg_mr(mr);
	rdma_destroy_ep(id);
	rdma_destroy_event_channel(ch);
	free(bufs);
	printf("done: %u sends posted, %s\n", posted,
	       dropped ? "dropped by the other side" : "closed by us");
	return rc;
}
