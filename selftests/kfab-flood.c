// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-flood: many senders, one receiver, every message checked
 * (selftests/kfab_net runs it on the netns bed; Documentation/testing.rst).
 *
 *   kfab-flood recv NODE SERVICE --senders N --count M [--hold S] [--small 1]
 *		[--short 1]
 *   kfab-flood send NODE SERVICE --id I --count M [--window W] [--small 1]
 *		[--go FILE]
 *
 * The receiver is the well-known service SERVICE of NODE
 * (fi_getinfo(NODE, SERVICE, FI_SOURCE)); each sender finds it by the
 * same names (fi_getinfo(NODE, SERVICE, 0): dest_addr).  Sender I sends M
 * tagged messages, tag I, of sizes that cycle through eager and pulled
 * ones; each carries a header (sender, sequence number, length) and a
 * payload computed from them.  The receiver takes them with receives that
 * match any tag and checks that it gets each message exactly once, intact,
 * and, since kfab promises FI_ORDER_SAS, that each sender's messages took
 * the receives in the order they were sent (comp_order is FI_ORDER_NONE:
 * a pulled message completes after an eager one sent after it, so the
 * order checked is the order the receives were posted in, not the order
 * they complete in).
 * With --short every receive is FLOOD_SHORT bytes, small enough for its
 * message to come in the completion (KFAB_CQ_PAYLOAD_MAX): each message
 * longer than that is cut short (FI_ETRUNC, olen), and what did arrive,
 * pulled or eager, is checked.
 * With --hold it posts nothing for S seconds first: the senders must be
 * held back by credits, not buffered without bound, and lose nothing
 * (--small: eager sizes only, the ones whose bytes a receiving node holds;
 * --window: sends in flight per sender, a power of two, the size of its
 * submission ring too, so that they can ask for far more than the
 * credit).  A sender with --go touches its buffers, says "ready"
 * and waits for FILE to exist before it sends, so that the test can take
 * the machine's memory when nothing was sent yet.  Exit 0 when all N * M
 * arrived; 1 with a reason otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_tagged.h>

#include "kfab_test.h"

#define FLOOD_MAGIC 0x666c6f6f64ULL	/* "flood" */
#define FLOOD_RECVS 64			/* receives posted at once */
#define FLOOD_TIMEOUT 600		/* seconds, for everything */

/* Sizes the messages cycle through: eager (<= 16 KiB) and pulled. */
static const size_t flood_sizes[] = {
	40, 100, 4096, 16384, 16385, 70000, 1 << 20, 1000,
};
/* --small: eager ones only, most of them as large as eager goes. */
static const size_t flood_small_sizes[] = { 16384, 16000, 8192, 16384 };
#define FLOOD_MAX (1 << 20)
#define FLOOD_SMALL_MAX 16384
/* --short: a receive's length, the header and a little payload. */
#define FLOOD_SHORT 48

static bool flood_small, flood_short;

struct flood_hdr {
	uint64_t magic;
	uint64_t sender;
	uint64_t seq;
	uint64_t len;
};

struct flood {
	struct kfab_test_fi fi;
	time_t deadline;
};

static void die(const char *what, int ret)
{
	fprintf(stderr, "kfab-flood: %s: %s\n", what,
		ret < 0 ? fi_strerror(-ret) : "failed");
	exit(1);
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static size_t flood_size(uint64_t seq)
{
	if (flood_small)
		return flood_small_sizes[seq % ARRAY_LEN(flood_small_sizes)];
	return flood_sizes[seq % ARRAY_LEN(flood_sizes)];
}

static size_t flood_max(void)
{
	return flood_small ? FLOOD_SMALL_MAX : FLOOD_MAX;
}

/* The payload byte at @i of message (@sender, @seq). */
static uint8_t flood_byte(uint64_t sender, uint64_t seq, size_t i)
{
	return (uint8_t)(sender * 131 + seq * 7 + i * 13 + (i >> 8));
}

static void flood_fill(uint8_t *buf, uint64_t sender, uint64_t seq)
{
	struct flood_hdr h = {
		.magic = FLOOD_MAGIC, .sender = sender, .seq = seq,
		.len = flood_size(seq),
	};
	size_t i;

	memcpy(buf, &h, sizeof(h));
	for (i = sizeof(h); i < h.len; i++)
		buf[i] = flood_byte(sender, seq, i);
}

static void flood_open(struct flood *f, const char *node, const char *svc,
		       uint64_t flags, unsigned int window)
{
	struct fi_info *hints = kfab_test_hints();
	int ret;

	if (!hints)
		die("fi_allocinfo", -FI_ENOMEM);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_REMOTE_COMM;
	/* A submission ring that holds the whole window. */
	hints->tx_attr->size = window;
	ret = _test_fi_side_open_at(&f->fi, node, svc, flags, hints, true);
	if (ret)
		die("opening the endpoint (the service is taken?)", ret);
	f->deadline = time(NULL) + FLOOD_TIMEOUT;
}

/*
 * One completion, or 0 when none is there; an error completion dies,
 * but for a receive cut short under --short: then *@olen says by how much
 * (0 for any other completion).
 */
static int flood_poll(struct flood *f, struct fi_cq_tagged_entry *e,
		      size_t *olen)
{
	struct fi_cq_err_entry err = { 0 };
	ssize_t n;

	*olen = 0;
	if (time(NULL) > f->deadline)
		die("timed out", -FI_ETIMEDOUT);
	n = fi_cq_read(f->fi.cq, e, 1);
	if (n == 1)
		return 1;
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL && fi_cq_readerr(f->fi.cq, &err, 0) == 1 &&
	    flood_short && err.err == FI_ETRUNC && (err.flags & FI_RECV)) {
		*e = (struct fi_cq_tagged_entry){
			.op_context = err.op_context, .flags = err.flags,
			.len = err.len, .buf = err.buf, .tag = err.tag,
		};
		*olen = err.olen;
		return 1;
	}
	if (n == -FI_EAVAIL) {
		fprintf(stderr, "kfab-flood: error completion: %s (%d)\n",
			fi_strerror(err.err), err.err);
		exit(1);
	}
	die("fi_cq_read", (int)n);
	return -1;
}

static int flood_send(struct flood *f, uint64_t id, uint64_t count,
		      unsigned int window, const char *go)
{
	uint8_t *bufs = calloc(window, flood_max());
	uintptr_t *free_slots = calloc(window, sizeof(*free_slots));
	uint64_t seq = 0, done = 0, eagain = 0;
	unsigned int nfree = window;
	struct fi_cq_tagged_entry e;
	fi_addr_t dest;
	uintptr_t slot;
	size_t olen;
	int ret;

	if (!bufs || !free_slots)
		die("calloc", -FI_ENOMEM);
	for (slot = 0; slot < window; slot++) {
		free_slots[slot] = slot;
		memset(bufs + slot * flood_max(), 0xa5, flood_max());
	}
	if (fi_av_insert(f->fi.av, f->fi.info->dest_addr, 1, &dest, 0, NULL) != 1)
		die("fi_av_insert (the receiver's address)", -FI_EINVAL);
	if (go) {
		printf("sender %" PRIu64 " ready\n", id);
		fflush(stdout);
		while (access(go, F_OK)) {
			if (time(NULL) > f->deadline)
				die("no go", -FI_ETIMEDOUT);
			usleep(20000);
		}
	}
	/* Each send owns its buffer (its context) until it completes. */
	while (done < count) {
		if (seq < count && nfree) {
			slot = free_slots[nfree - 1];
			flood_fill(bufs + slot * flood_max(), id, seq);
			ret = fi_tsend(f->fi.ep, bufs + slot * flood_max(),
				       flood_size(seq),
				       NULL, dest, id, (void *)slot);
			if (!ret) {
				nfree--;
				seq++;
				continue;
			}
			if (ret != -FI_EAGAIN)
				die("fi_tsend", ret);
			eagain++;
		}
		if (flood_poll(f, &e, &olen)) {
			free_slots[nfree++] = (uintptr_t)e.op_context;
			done++;
		} else {
			usleep(100);
		}
	}
	printf("sender %" PRIu64 ": %" PRIu64 " sent, %" PRIu64
	       " times FI_EAGAIN\n", id, count, eagain);
	free(free_slots);
	free(bufs);
	return 0;
}

/*
 * Message @len bytes in @buf (@olen more cut off), tag @tag, took the
 * receive posted @post-th: @post_of[sender * @count + seq] records it, once.
 */
static void flood_check(const uint8_t *buf, size_t len, size_t olen,
			uint64_t tag, uint64_t senders, uint64_t count,
			uint64_t post, uint64_t *post_of)
{
	struct flood_hdr h;
	size_t i;

	if (len < sizeof(h))
		die("a message shorter than its header", -FI_EINVAL);
	memcpy(&h, buf, sizeof(h));
	if (h.magic != FLOOD_MAGIC || h.sender >= senders || h.seq >= count ||
	    h.sender != tag || h.len != len + olen ||
	    h.len != flood_size(h.seq) ||
	    (flood_short && len != (h.len < FLOOD_SHORT ? h.len : FLOOD_SHORT))) {
		fprintf(stderr, "kfab-flood: a bad header: sender %" PRIu64
			" tag %" PRIu64 " seq %" PRIu64 " len %" PRIu64
			" (got %zu, %zu cut off)\n", h.sender, tag, h.seq,
			h.len, len, olen);
		exit(1);
	}
	if (post_of[h.sender * count + h.seq]) {
		fprintf(stderr, "kfab-flood: sender %" PRIu64 ": message %"
			PRIu64 " twice\n", h.sender, h.seq);
		exit(1);
	}
	post_of[h.sender * count + h.seq] = post;
	for (i = sizeof(h); i < len; i++)
		if (buf[i] != flood_byte(h.sender, h.seq, i)) {
			fprintf(stderr, "kfab-flood: sender %" PRIu64
				" message %" PRIu64 ": byte %zu differs\n",
				h.sender, h.seq, i);
			exit(1);
		}
}

/* FI_ORDER_SAS: each sender's messages took the receives in order. */
static void flood_check_order(uint64_t senders, uint64_t count,
			      const uint64_t *post_of)
{
	uint64_t s, seq;

	for (s = 0; s < senders; s++)
		for (seq = 1; seq < count; seq++)
			if (post_of[s * count + seq] <
			    post_of[s * count + seq - 1]) {
				fprintf(stderr, "kfab-flood: sender %" PRIu64
					": message %" PRIu64 " matched before "
					"message %" PRIu64 "\n", s, seq,
					seq - 1);
				exit(1);
			}
}

/* Post receive @i, the @post-th receive posted. */
static void flood_post(struct flood *f, uint8_t *bufs, uintptr_t i,
		       uint64_t *posted, uint64_t *post)
{
	size_t len = flood_short ? FLOOD_SHORT : flood_max();
	int ret;

	posted[i] = ++*post;
	/* What a receive left of an earlier message must not pass for this. */
	memset(bufs + i * flood_max(), 0, len);
	ret = fi_trecv(f->fi.ep, bufs + i * flood_max(), len, NULL,
		       FI_ADDR_UNSPEC, 0, ~0ULL, (void *)i);
	if (ret)
		die("fi_trecv", ret);
}

static int flood_recv(struct flood *f, uint64_t senders, uint64_t count,
		      unsigned int hold)
{
	uint8_t *bufs = calloc(FLOOD_RECVS, flood_max());
	uint64_t *post_of = calloc(senders * count, sizeof(*post_of));
	uint64_t posted[FLOOD_RECVS], post = 0;
	uint64_t got = 0, total = senders * count;
	struct fi_cq_tagged_entry e;
	size_t olen;
	uintptr_t i;

	if (!bufs || !post_of)
		die("calloc", -FI_ENOMEM);
	printf("receiver ready\n");
	fflush(stdout);
	/* Nothing posted: what comes waits, as unexpected or held back. */
	sleep(hold);
	for (i = 0; i < FLOOD_RECVS; i++)
		flood_post(f, bufs, i, posted, &post);
	while (got < total) {
		if (!flood_poll(f, &e, &olen)) {
			usleep(50);
			continue;
		}
		if (!(e.flags & FI_RECV))
			die("a completion that is not a receive", -FI_EOTHER);
		i = (uintptr_t)e.op_context;
		flood_check(bufs + i * flood_max(), e.len, olen, e.tag,
			    senders, count, posted[i], post_of);
		got++;
		flood_post(f, bufs, i, posted, &post);
	}
	flood_check_order(senders, count, post_of);
	printf("received %" PRIu64 " messages from %" PRIu64
	       " senders: each once, intact%s, matched in each sender's order\n",
	       got, senders, flood_short ? " as far as it fit" : "");
	free(post_of);
	free(bufs);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kfab-flood recv NODE SERVICE --senders N --count M [--hold S] [--small 1] [--short 1]\n"
		"       kfab-flood send NODE SERVICE --id I --count M [--window W] [--small 1] [--go FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t senders = 0, count = 0, id = 0;
	unsigned int hold = 0, window = 16;
	const char *go = NULL;
	struct flood f = { 0 };
	bool recv;
	int i;

	if (argc < 4)
		usage();
	recv = !strcmp(argv[1], "recv");
	if (!recv && strcmp(argv[1], "send"))
		usage();
	for (i = 4; i + 1 < argc; i += 2) {
		uint64_t v = strtoull(argv[i + 1], NULL, 0);

		if (!strcmp(argv[i], "--senders"))
			senders = v;
		else if (!strcmp(argv[i], "--count"))
			count = v;
		else if (!strcmp(argv[i], "--id"))
			id = v;
		else if (!strcmp(argv[i], "--hold"))
			hold = (unsigned int)v;
		else if (!strcmp(argv[i], "--window") && v && v <= 4096 &&
			 !(v & (v - 1)))
			window = (unsigned int)v;
		else if (!strcmp(argv[i], "--small"))
			flood_small = v;
		else if (!strcmp(argv[i], "--short") && recv)
			flood_short = v;
		else if (!strcmp(argv[i], "--go"))
			go = argv[i + 1];
		else
			usage();
	}
	if (i != argc || !count || (recv && !senders))
		usage();
	flood_open(&f, argv[2], argv[3], recv ? FI_SOURCE : 0, window);
	if (recv)
		return flood_recv(&f, senders, count, hold);
	return flood_send(&f, id, count, window, go);
}
