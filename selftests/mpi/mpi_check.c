// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpi_check: what an MPI library asks of its transport, checked byte by
 * byte.  Written for Open MPI's mtl ofi on kfab (selftests/kfab_mpi,
 * selftests/pair/mpi.py), but any MPI and any transport will do:
 *
 *  sizes       every size from 0 to 64 B, then 2^k - 1, 2^k and 2^k + 1 up
 *              to the largest (16 MiB), around the ring with MPI_Sendrecv,
 *              each buffer filled from (sender, size) and checked, the
 *              count too;
 *  any         each rank in turn receives MSGS messages from every other
 *              rank with MPI_ANY_SOURCE and MPI_ANY_TAG; sizes from 0 to
 *              96 KiB (eager and rendezvous mixed); each carries its
 *              sender, its sequence number and its tag, which must agree
 *              with the status and arrive in order per sender;
 *  probe       MPI_Probe, MPI_Iprobe and MPI_Mprobe/MPI_Mrecv of messages
 *              of unknown size and source, the count allocated from the
 *              probe;
 *  unexpected  every other rank sends first (MPI_Isend, small and large,
 *              tags in rising order), a barrier, and only then does the
 *              receiver post receives, by tag in falling order, so each
 *              matches out of the unexpected ones;
 *  collectives MPI_Bcast (up to the largest size, odd too), MPI_Reduce,
 *              MPI_Allreduce, MPI_Alltoall, MPI_Allgather, MPI_Barrier,
 *              each result checked.
 *
 * mpi_check [-m MAXBYTES] [-r REPEAT] [-n MSGS]; rank 0 prints one line,
 * "mpi_check: N ranks on H hosts, C checks ok" (or "FAILED: E errors"), and
 * every rank exits non-zero if any rank found an error.  What failed is on
 * stderr, from the rank that saw it.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ANY_MSG_MAX	(96 << 10)

static int rank, nranks;
static long errors, checks;

#define FAIL(...) do {						\
	fprintf(stderr, "mpi_check: rank %d: ", rank);		\
	fprintf(stderr, __VA_ARGS__);				\
	fputc('\n', stderr);					\
	errors++;						\
} while (0)

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "mpi_check: rank %d: no memory for %zu B\n",
			rank, n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

/* The bytes a buffer from @seed holds: differ per seed, offset and page. */
static inline unsigned char pattern(uint32_t seed, size_t i)
{
	return (unsigned char)(seed * 0x9e3779b1u >> 24) ^
	       (unsigned char)(i * 7 + (i >> 12) + seed);
}

static void fill(unsigned char *buf, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = pattern(seed, i);
}

/* Return: the first wrong byte's offset, or -1 if all @n are right. */
static long verify(const unsigned char *buf, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != pattern(seed, i))
			return (long)i;
	return -1;
}

static uint32_t seed_of(int sender, size_t n, int k)
{
	return (uint32_t)sender * 1000003u + (uint32_t)n * 31u + (uint32_t)k;
}

static void check_count(const MPI_Status *st, size_t n, const char *what)
{
	int count;

	MPI_Get_count(st, MPI_BYTE, &count);
	checks++;
	if (count != (int)n)
		FAIL("%s: %d B received, %zu sent", what, count, n);
}

static void check_data(const unsigned char *buf, size_t n, uint32_t seed,
		       const char *what)
{
	long bad = verify(buf, n, seed);

	checks++;
	if (bad >= 0)
		FAIL("%s: %zu B, byte %ld is 0x%02x, not 0x%02x", what, n, bad,
		     buf[bad], pattern(seed, (size_t)bad));
}

/* ---- sizes: around the ring ---- */

static void ring_one(unsigned char *sbuf, unsigned char *rbuf, size_t n,
		     int k)
{
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	MPI_Status st;
	char what[64];

	fill(sbuf, n, seed_of(rank, n, k));
	memset(rbuf, 0xee, n + 1);
	MPI_Sendrecv(sbuf, (int)n, MPI_BYTE, next, k, rbuf, (int)n + 1,
		     MPI_BYTE, prev, k, MPI_COMM_WORLD, &st);
	snprintf(what, sizeof(what), "ring from %d", prev);
	check_count(&st, n, what);
	check_data(rbuf, n, seed_of(prev, n, k), what);
	checks++;
	if (rbuf[n] != 0xee)
		FAIL("ring from %d: %zu B wrote past the message", prev, n);
}

static void test_sizes(size_t max, int k)
{
	unsigned char *sbuf = xmalloc(max + 1), *rbuf = xmalloc(max + 1);
	size_t n, p;

	for (n = 0; n <= 64 && n <= max; n++)
		ring_one(sbuf, rbuf, n, k);
	for (p = 128; p <= max; p *= 2) {
		ring_one(sbuf, rbuf, p - 1, k);
		ring_one(sbuf, rbuf, p, k);
		if (p + 1 <= max)
			ring_one(sbuf, rbuf, p + 1, k);
	}
	free(sbuf);
	free(rbuf);
}

/* ---- MPI_ANY_SOURCE, MPI_ANY_TAG, order per sender ---- */

struct any_hdr {
	int32_t sender;
	int32_t seq;
	int32_t tag;
};

static size_t any_size(int sender, int seq)
{
	static const size_t sizes[] = {
		sizeof(struct any_hdr), 100, 4096, 16384, 16385, 70000,
		ANY_MSG_MAX, 13, 1000, 65536,
	};

	return sizes[(unsigned int)(seq + sender) % (sizeof(sizes) /
						    sizeof(sizes[0]))];
}

static int any_tag(int sender, int seq)
{
	return (seq * 7 + sender * 3) % 1000;
}

static void any_send(int root, int msgs)
{
	unsigned char *buf = xmalloc(ANY_MSG_MAX);
	struct any_hdr h;
	int seq;

	for (seq = 0; seq < msgs; seq++) {
		size_t n = any_size(rank, seq);

		fill(buf, n, seed_of(rank, n, seq));
		h = (struct any_hdr){ rank, seq, any_tag(rank, seq) };
		memcpy(buf, &h, sizeof(h));
		MPI_Send(buf, (int)n, MPI_BYTE, root, h.tag, MPI_COMM_WORLD);
	}
	free(buf);
}

static void any_recv(int msgs)
{
	unsigned char *buf = xmalloc(ANY_MSG_MAX);
	int *next = calloc((size_t)nranks, sizeof(int));
	int i, total = msgs * (nranks - 1);

	if (!next)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (i = 0; i < total; i++) {
		struct any_hdr h;
		MPI_Status st;
		size_t n;

		MPI_Recv(buf, ANY_MSG_MAX, MPI_BYTE, MPI_ANY_SOURCE,
			 MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		memcpy(&h, buf, sizeof(h));
		checks++;
		if (h.sender != st.MPI_SOURCE || h.sender == rank ||
		    h.sender < 0 || h.sender >= nranks) {
			FAIL("any: status source %d, message says %d",
			     st.MPI_SOURCE, h.sender);
			continue;
		}
		checks++;
		if (h.seq != next[h.sender])
			FAIL("any: from %d message %d arrived when %d was due",
			     h.sender, h.seq, next[h.sender]);
		next[h.sender] = h.seq + 1;
		checks++;
		if (h.tag != st.MPI_TAG || h.tag != any_tag(h.sender, h.seq))
			FAIL("any: from %d message %d: status tag %d, carried %d, due %d",
			     h.sender, h.seq, st.MPI_TAG, h.tag,
			     any_tag(h.sender, h.seq));
		n = any_size(h.sender, h.seq);
		check_count(&st, n, "any");
		/* The header is checked: the pattern again where it was. */
		fill(buf, sizeof(h), seed_of(h.sender, n, h.seq));
		check_data(buf, n, seed_of(h.sender, n, h.seq), "any");
	}
	free(next);
	free(buf);
}

static void test_any(int msgs)
{
	int root;

	for (root = 0; root < nranks; root++) {
		if (rank == root)
			any_recv(msgs);
		else
			any_send(root, msgs);
		MPI_Barrier(MPI_COMM_WORLD);
	}
}

/* ---- probes: size and source learnt first ---- */

#define PROBE_MSGS	3

static size_t probe_size(int sender, int i)
{
	return (size_t)(sender + 1) * 1000 + (size_t)i * 30011;
}

/* Receive what @st announces, from the probe or its message handle. */
static void probe_take(MPI_Status *st, MPI_Message *msg, const char *what)
{
	int count, sender = st->MPI_SOURCE, i = st->MPI_TAG - 100;
	unsigned char *buf;
	MPI_Status rst;
	size_t n;

	MPI_Get_count(st, MPI_BYTE, &count);
	n = probe_size(sender, i);
	checks++;
	if (sender < 0 || sender >= nranks || i < 0 || i >= 3 * PROBE_MSGS ||
	    count != (int)n) {
		FAIL("%s: source %d tag %d count %d", what, sender,
		     st->MPI_TAG, count);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	buf = xmalloc((size_t)count);
	if (msg)
		MPI_Mrecv(buf, count, MPI_BYTE, msg, &rst);
	else
		MPI_Recv(buf, count, MPI_BYTE, sender, st->MPI_TAG,
			 MPI_COMM_WORLD, &rst);
	checks++;
	if (rst.MPI_SOURCE != sender || rst.MPI_TAG != st->MPI_TAG)
		FAIL("%s: probed %d/%d, received %d/%d", what, sender,
		     st->MPI_TAG, rst.MPI_SOURCE, rst.MPI_TAG);
	check_count(&rst, n, what);
	check_data(buf, n, seed_of(sender, n, i), what);
	free(buf);
}

static void probe_recv(void)
{
	int i, total = (nranks - 1) * PROBE_MSGS;
	MPI_Message msg;
	MPI_Status st;
	int flag;

	/* Each form takes PROBE_MSGS messages, whichever sender they are from. */
	for (i = 0; i < total; i++) {
		MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		probe_take(&st, NULL, "MPI_Probe");
	}
	for (i = 0; i < total; i++) {
		do
			MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
				   &flag, &st);
		while (!flag);
		probe_take(&st, NULL, "MPI_Iprobe");
	}
	for (i = 0; i < total; i++) {
		MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg,
			   &st);
		probe_take(&st, &msg, "MPI_Mprobe");
	}
	/* Nothing more is there. */
	MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
	checks++;
	if (flag)
		FAIL("MPI_Iprobe: a message from %d tag %d left over",
		     st.MPI_SOURCE, st.MPI_TAG);
}

static void test_probe(void)
{
	int root, i;

	for (root = 0; root < nranks; root++) {
		if (rank == root) {
			probe_recv();
		} else {
			/* One batch per probe form; each waits for its turn. */
			for (i = 0; i < 3 * PROBE_MSGS; i++) {
				size_t n = probe_size(rank, i);
				unsigned char *buf = xmalloc(n);

				fill(buf, n, seed_of(rank, n, i));
				MPI_Send(buf, (int)n, MPI_BYTE, root, 100 + i,
					 MPI_COMM_WORLD);
				free(buf);
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
}

/* ---- unexpected messages: sent before any receive is posted ---- */

#define UNEXP_MSGS	8

static size_t unexp_size(int sender, int i)
{
	/* Small ones and ones past every eager limit, odd and even. */
	return i % 2 ? (size_t)(i + 1) * 131072 + (size_t)sender :
		       (size_t)i * 17 + (size_t)sender;
}

static void test_unexpected(void)
{
	unsigned char *buf[UNEXP_MSGS];
	MPI_Request req[UNEXP_MSGS];
	int root, i;

	for (root = 0; root < nranks; root++) {
		if (rank != root) {
			for (i = 0; i < UNEXP_MSGS; i++) {
				size_t n = unexp_size(rank, i);

				buf[i] = xmalloc(n);
				fill(buf[i], n, seed_of(rank, n, i));
				MPI_Isend(buf[i], (int)n, MPI_BYTE, root,
					  200 + i, MPI_COMM_WORLD, &req[i]);
			}
		} else {
			/* Give every send time to reach this rank first. */
			usleep(200000);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == root) {
			int s;

			for (s = 0; s < nranks; s++) {
				if (s == root)
					continue;
				for (i = UNEXP_MSGS - 1; i >= 0; i--) {
					size_t n = unexp_size(s, i);
					unsigned char *r = xmalloc(n);
					MPI_Status st;

					MPI_Recv(r, (int)n, MPI_BYTE, s, 200 + i,
						 MPI_COMM_WORLD, &st);
					check_count(&st, n, "unexpected");
					check_data(r, n, seed_of(s, n, i),
						   "unexpected");
					free(r);
				}
			}
		} else {
			MPI_Waitall(UNEXP_MSGS, req, MPI_STATUSES_IGNORE);
			for (i = 0; i < UNEXP_MSGS; i++)
				free(buf[i]);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
}

/* ---- collectives ---- */

static void test_bcast(size_t max)
{
	static const size_t sizes[] = { 1, 7, 4096, 65537, 1 << 20, 3000001 };
	unsigned char *buf = xmalloc(max);
	unsigned int s;
	int root;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]) + 1; s++) {
		size_t n = s < sizeof(sizes) / sizeof(sizes[0]) ? sizes[s] :
			   max;

		if (n > max)
			continue;
		for (root = 0; root < nranks; root++) {
			if (rank == root)
				fill(buf, n, seed_of(root, n, 300));
			else
				memset(buf, 0, n);
			MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
			check_data(buf, n, seed_of(root, n, 300), "MPI_Bcast");
		}
	}
	free(buf);
}

static void test_reduce(void)
{
	enum { N = 100000 };
	long *in = xmalloc(N * sizeof(long)), *out = xmalloc(N * sizeof(long));
	long want;
	int root, i, bad;

	for (i = 0; i < N; i++)
		in[i] = (long)rank * N + i;
	for (root = 0; root < nranks; root++) {
		memset(out, 0, N * sizeof(long));
		MPI_Reduce(in, out, N, MPI_LONG, MPI_SUM, root,
			   MPI_COMM_WORLD);
		if (rank != root)
			continue;
		for (bad = -1, i = 0; i < N && bad < 0; i++) {
			want = (long)nranks * (nranks - 1) / 2 * N +
			       (long)nranks * i;
			if (out[i] != want)
				bad = i;
		}
		checks++;
		if (bad >= 0)
			FAIL("MPI_Reduce to %d: element %d wrong", root, bad);
	}
	MPI_Allreduce(in, out, N, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
	for (bad = -1, i = 0; i < N && bad < 0; i++)
		if (out[i] != (long)(nranks - 1) * N + i)
			bad = i;
	checks++;
	if (bad >= 0)
		FAIL("MPI_Allreduce: element %d wrong", bad);
	free(in);
	free(out);
}

static void test_alltoall(void)
{
	enum { PER = 50000 };	/* bytes to each rank */
	size_t all = (size_t)PER * nranks;
	unsigned char *s = xmalloc(all), *r = xmalloc(all);
	int peer;

	for (peer = 0; peer < nranks; peer++)
		fill(s + (size_t)peer * PER, PER, seed_of(rank, peer, 400));
	memset(r, 0, all);
	MPI_Alltoall(s, PER, MPI_BYTE, r, PER, MPI_BYTE, MPI_COMM_WORLD);
	for (peer = 0; peer < nranks; peer++)
		check_data(r + (size_t)peer * PER, PER,
			   seed_of(peer, rank, 400), "MPI_Alltoall");
	memset(r, 0, all);
	fill(s, PER, seed_of(rank, PER, 401));
	MPI_Allgather(s, PER, MPI_BYTE, r, PER, MPI_BYTE, MPI_COMM_WORLD);
	for (peer = 0; peer < nranks; peer++)
		check_data(r + (size_t)peer * PER, PER,
			   seed_of(peer, PER, 401), "MPI_Allgather");
	free(s);
	free(r);
}

static void test_barrier(void)
{
	double t;
	int i, early = 0, any_early;

	/*
	 * A rank that arrives 300 ms late holds everyone: nobody leaves the
	 * barrier within 100 ms of entering it (the first barrier lines the
	 * ranks up; the margin is for ranks that leave it late themselves).
	 */
	for (i = 0; i < 3; i++) {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == i % nranks)
			usleep(300000);
		t = MPI_Wtime();
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank != i % nranks && MPI_Wtime() - t < 0.1)
			early = 1;
		MPI_Allreduce(&early, &any_early, 1, MPI_INT, MPI_MAX,
			      MPI_COMM_WORLD);
		checks++;
		if (any_early && rank == 0)
			FAIL("MPI_Barrier: a rank left before rank %d came",
			     i % nranks);
		early = 0;
	}
}

static int count_hosts(void)
{
	char name[MPI_MAX_PROCESSOR_NAME], *all = NULL;
	int len, r, s, hosts = 0;

	memset(name, 0, sizeof(name));
	MPI_Get_processor_name(name, &len);
	if (rank == 0)
		all = xmalloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME);
	MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
		   MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank != 0)
		return 0;
	for (r = 0; r < nranks; r++) {
		for (s = 0; s < r; s++)
			if (!strcmp(all + (size_t)r * MPI_MAX_PROCESSOR_NAME,
				    all + (size_t)s * MPI_MAX_PROCESSOR_NAME))
				break;
		hosts += s == r;
	}
	free(all);
	return hosts;
}

int main(int argc, char **argv)
{
	size_t max = 16 << 20;
	int repeat = 1, msgs = 200, opt, k, hosts;
	long all_errors, all_checks;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((opt = getopt(argc, argv, "m:r:n:")) != -1) {
		switch (opt) {
		case 'm':
			max = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			repeat = atoi(optarg);
			break;
		case 'n':
			msgs = atoi(optarg);
			break;
		default:
			if (rank == 0)
				fprintf(stderr, "usage: mpi_check [-m MAXBYTES] [-r REPEAT] [-n MSGS]\n");
			MPI_Finalize();
			return 2;
		}
	}
	if (nranks < 2 || max < 64 || max > INT32_MAX - 1) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: needs 2 ranks or more and -m 64 to 2^31 - 2\n");
		MPI_Finalize();
		return 2;
	}

	for (k = 0; k < repeat; k++) {
		test_sizes(max, k);
		test_any(msgs);
		test_probe();
		test_unexpected();
		test_bcast(max);
		test_reduce();
		test_alltoall();
		test_barrier();
	}

	hosts = count_hosts();
	MPI_Allreduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	MPI_Reduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	if (rank == 0) {
		if (all_errors)
			printf("mpi_check: %d ranks on %d hosts FAILED: %ld errors in %ld checks\n",
			       nranks, hosts, all_errors, all_checks);
		else
			printf("mpi_check: %d ranks on %d hosts, %ld checks ok\n",
			       nranks, hosts, all_checks);
		fflush(stdout);
	}
	MPI_Finalize();
	return all_errors ? 1 : 0;
}
