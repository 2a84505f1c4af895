// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-bench-mem: the kernel memory a provider's objects cost, and the
 * user memory it pins, per object, through the public libfabric API (it
 * runs over any provider; only a provider whose objects live in the kernel,
 * kfab, has anything to show).  tools/kfab-bench runs it in the bench
 * guest, where nothing else runs.
 *
 *   kfab-bench-mem -p PROV [-n N] [-l N]
 *
 * Each stage opens N objects (-n, default 1000, fewer where the provider's
 * queues are shorter), reads the kernel's memory before and after, prints
 * the difference per object, and closes what it opened:
 *
 *   endpoint     idle endpoints (AV and CQs shared, enabled, nothing posted)
 *   recv-8       receives of 8 bytes posted on one endpoint
 *   recv-4k      receives of 4 KiB (each its own page)
 *   unexp-8      8-byte sends to an endpoint with no receive posted, from
 *                another endpoint of this process: unexpected messages
 *   unexp-1m     1 MiB sends the same way (-l of them, default 16): large
 *                messages in flight, waiting for a receive
 *
 * "Kernel memory" is, when the process runs in a cgroup (v2) of its own
 * with the memory controller, slab_reclaimable + slab_unreclaimable +
 * vmalloc + percpu of its memory.stat: the bytes of every object
 * allocated with __GFP_ACCOUNT on its behalf (kfab charges its objects,
 * rings, buffers and per-CPU counters so), counted per object, with
 * nothing else of the machine in it; memory.stat is read 2.1 s after the
 * stage, past the kernel's periodic flush of its per-CPU counters.
 * Otherwise it is Slab + VmallocUsed + Percpu of /proc/meminfo, which
 * counts slab pages, not objects (a stage that reuses objects an earlier
 * one freed shows less than it uses), and the rest of the machine too.
 * "Pinned" is VmPin of /proc/self/status (what the provider pinned
 * against RLIMIT_MEMLOCK).
 * First a line "mem: source memcg PATH" or "mem: source meminfo", then
 * one line per stage:
 *
 *   mem: endpoint 1000 kernel 5321 B/obj pinned 0 B/obj
 *
 * and, after every stage, a line "mem: after-close STAGE kernel B" with
 * what is left over the first reading, taken before anything was opened
 * (in bytes, not per object; the domain, AV and CQ stay open until the
 * last stage, "all"): close must give everything back.  Exit status 0, or 1 with the reason.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

static const char *prov;
static unsigned int nobj = 1000, nlarge = 16;

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static long long base_kb;	/* kernel memory at the start */
static char memstat[PATH_MAX];	/* our cgroup's memory.stat, or "" */

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kfab-bench-mem: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void fi_die(const char *what, ssize_t ret)
{
	die("%s: %s (%zd)", what, fi_strerror((int)-ret), ret);
}

/* The value of @key (in kB) in @file, a /proc file of "Key: N kB" lines. */
static long long proc_kb(const char *file, const char *key)
{
	size_t klen = strlen(key);
	char line[256];
	long long v = -1;
	FILE *f = fopen(file, "r");

	if (!f)
		die("%s: %s", file, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = atoll(line + klen + 1);
			break;
		}
	fclose(f);
	if (v < 0)
		die("no %s in %s", key, file);
	return v;
}

/* The value of @key in memory.stat ("key bytes" lines), in bytes. */
static long long memstat_bytes(const char *key)
{
	size_t klen = strlen(key);
	char line[256];
	long long v = -1;
	FILE *f = fopen(memstat, "r");

	if (!f)
		die("%s: %s", memstat, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			v = atoll(line + klen + 1);
			break;
		}
	fclose(f);
	if (v < 0)
		die("no %s in %s", key, memstat);
	return v;
}

/* Our cgroup's memory.stat, if we have a cgroup v2 of our own with it. */
static void find_memstat(void)
{
	char line[PATH_MAX], *path = NULL;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			path = line + 3;
			break;
		}
	fclose(f);
	if (!path || !strcmp(path, "/"))
		return;		/* the root cgroup has no memory.stat */
	if (snprintf(memstat, sizeof(memstat), "/sys/fs/cgroup%.*s/memory.stat",
		     (int)(sizeof(memstat) - 64), path) >= (int)sizeof(memstat) ||
	    access(memstat, R_OK))
		memstat[0] = '\0';
}

struct snap {
	long long kernel_kb, pinned_kb;
};

static struct snap snap(void)
{
	struct snap s;

	if (memstat[0]) {
		usleep(2100000);	/* the periodic flush of the counters */
		s.kernel_kb = (memstat_bytes("slab_reclaimable") +
			       memstat_bytes("slab_unreclaimable") +
			       memstat_bytes("vmalloc") +
			       memstat_bytes("percpu")) / 1024;
	} else {
		/* Let RCU-freed objects go (close frees some so). */
		usleep(20000);
		s.kernel_kb = proc_kb("/proc/meminfo", "Slab") +
			      proc_kb("/proc/meminfo", "VmallocUsed") +
			      proc_kb("/proc/meminfo", "Percpu");
	}
	s.pinned_kb = proc_kb("/proc/self/status", "VmPin");
	return s;
}

static void print(const char *stage, unsigned int n, struct snap a,
		  struct snap b)
{
	if (!n) {
		printf("mem: %s 0 n/a (nothing could be posted)\n", stage);
		return;
	}
	printf("mem: %s %u kernel %lld B/obj pinned %lld B/obj\n", stage, n,
	       (b.kernel_kb - a.kernel_kb) * 1024 / n,
	       (b.pinned_kb - a.pinned_kb) * 1024 / n);
	fflush(stdout);
}

static void after_close(const char *stage)
{
	struct snap s = snap();

	printf("mem: after-close %s kernel %lld B\n", stage,
	       (s.kernel_kb - base_kb) * 1024);
	fflush(stdout);
}

static void open_domain(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = { .type = FI_AV_UNSPEC, .count = 4 };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_NONE };
	int ret;

	if (!hints)
		die("fi_allocinfo failed");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED |
				      FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(prov);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		fi_die("fi_getinfo", ret);
	if (info->domain_attr->mr_mode & FI_MR_LOCAL)
		die("provider %s wants FI_MR_LOCAL: not measured", prov);
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (ret)
		fi_die("fi_fabric", ret);
	ret = fi_domain(fabric, info, &domain, NULL);
	if (ret)
		fi_die("fi_domain", ret);
	ret = fi_av_open(domain, &av_attr, &av, NULL);
	if (ret)
		fi_die("fi_av_open", ret);
	cq_attr.size = 2 * (size_t)nobj + 64;
	ret = fi_cq_open(domain, &cq_attr, &cq, NULL);
	if (ret)
		fi_die("fi_cq_open", ret);
}

static struct fid_ep *open_ep(void)
{
	struct fid_ep *ep;
	int ret;

	ret = fi_endpoint(domain, info, &ep, NULL);
	if (ret)
		fi_die("fi_endpoint", ret);
	ret = fi_ep_bind(ep, &av->fid, 0) ?:
	      fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ?:
	      fi_enable(ep);
	if (ret)
		fi_die("fi_ep_bind/fi_enable", ret);
	return ep;
}

static void close_fid(struct fid *fid)
{
	int ret = fi_close(fid);

	if (ret)
		fi_die("fi_close", ret);
}

/* Read and drop what the CQ holds (errors too: cancelled receives). */
static void drain_cq(void)
{
	struct fi_cq_entry e[64];
	ssize_t n;

	do {
		n = fi_cq_read(cq, e, 64);
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(cq, &err, 0);
			n = 1;
		}
	} while (n > 0);
}

static void stage_endpoints(void)
{
	struct fid_ep **eps = calloc(nobj, sizeof(*eps));
	struct snap a, b;
	unsigned int i;

	if (!eps)
		die("out of memory");
	a = snap();
	for (i = 0; i < nobj; i++)
		eps[i] = open_ep();
	b = snap();
	print("endpoint", nobj, a, b);
	for (i = 0; i < nobj; i++)
		close_fid(&eps[i]->fid);
	free(eps);
	after_close("endpoint");
}

/* Post up to @n receives of @size bytes, each into its own buffer. */
static unsigned int post_recvs(struct fid_ep *ep, char *bufs, size_t size,
			       unsigned int n, struct fi_context2 *ctx)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct iovec iov = { .iov_base = bufs + (size_t)i * size,
				     .iov_len = size };
		struct fi_msg m = { .msg_iov = &iov, .iov_count = 1,
				    .addr = FI_ADDR_UNSPEC,
				    .context = &ctx[i] };
		ssize_t ret = fi_recvmsg(ep, &m, 0);

		if (ret == -FI_EAGAIN)
			break;
		if (ret)
			fi_die("fi_recvmsg", ret);
	}
	return i;
}

static void stage_recvs(const char *stage, size_t size)
{
	unsigned int n = nobj;
	struct fi_context2 *ctx;
	struct fid_ep *ep;
	struct snap a, b;
	char *bufs;

	if (n > info->rx_attr->size)
		n = info->rx_attr->size;
	bufs = aligned_alloc(4096, ((size_t)n * size + 4095) & ~4095UL);
	ctx = calloc(n, sizeof(*ctx));
	if (!bufs || !ctx)
		die("out of memory");
	memset(bufs, 0, (size_t)n * size);
	ep = open_ep();
	a = snap();
	n = post_recvs(ep, bufs, size, n, ctx);
	b = snap();
	print(stage, n, a, b);
	close_fid(&ep->fid);
	drain_cq();
	free(bufs);
	free(ctx);
	after_close(stage);
}

/*
 * Send up to @n messages of @size from one buffer to a new endpoint that
 * posts nothing: they wait there (or at the sender) unexpected.
 */
static void stage_unexpected(const char *stage, size_t size, unsigned int n)
{
	struct fid_ep *rx = open_ep(), *tx = open_ep();
	struct fi_context2 *ctx;
	char name[256];
	size_t len = sizeof(name);
	fi_addr_t dest;
	unsigned int i;
	struct snap a, b;
	char *buf;
	int ret;

	if (n > info->tx_attr->size)
		n = info->tx_attr->size;
	buf = aligned_alloc(4096, (size + 4095) & ~4095UL);
	ctx = calloc(n, sizeof(*ctx));
	if (!buf || !ctx)
		die("out of memory");
	memset(buf, 0x3c, size);
	ret = fi_getname(&rx->fid, name, &len);
	if (ret)
		fi_die("fi_getname", ret);
	if (fi_av_insert(av, name, 1, &dest, 0, NULL) != 1)
		die("fi_av_insert failed");
	a = snap();
	for (i = 0; i < n; i++) {
		struct iovec iov = { .iov_base = buf, .iov_len = size };
		struct fi_msg m = { .msg_iov = &iov, .iov_count = 1,
				    .addr = dest, .context = &ctx[i] };

		ret = fi_sendmsg(tx, &m, 0);
		if (ret == -FI_EAGAIN)
			break;
		if (ret)
			fi_die("fi_sendmsg", ret);
	}
	drain_cq();		/* sends that completed: their memory counts */
	b = snap();
	print(stage, i, a, b);
	close_fid(&tx->fid);
	close_fid(&rx->fid);
	drain_cq();
	fi_av_remove(av, &dest, 1, 0);	/* the AV is small: reuse it */
	free(buf);
	free(ctx);
	after_close(stage);
}

static unsigned int num(const char *s, unsigned int max)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (*s == '\0' || *end || v < 1 || v > max)
		die("bad number %s (1..%u)", s, max);
	return v;
}

int main(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "p:n:l:h")) != -1) {
		switch (c) {
		case 'p': prov = optarg; break;
		case 'n': nobj = num(optarg, 100000); break;
		case 'l': nlarge = num(optarg, 1024); break;
		case 'h':
			printf("usage: kfab-bench-mem -p PROV [-n N] [-l N]\n");
			return 0;
		default:
			return 1;
		}
	}
	if (!prov || optind != argc)
		die("usage: kfab-bench-mem -p PROV [-n N] [-l N]");
	find_memstat();
	if (memstat[0])
		printf("mem: source memcg %s\n", memstat);
	else
		printf("mem: source meminfo\n");
	base_kb = snap().kernel_kb;	/* before anything is open */
	open_domain();
	stage_endpoints();
	stage_recvs("recv-8", 8);
	stage_recvs("recv-4k", 4096);
	stage_unexpected("unexp-8", 8, nobj);
	stage_unexpected("unexp-1m", 1 << 20, nlarge);
	close_fid(&cq->fid);
	close_fid(&av->fid);
	close_fid(&domain->fid);
	close_fid(&fabric->fid);
	fi_freeinfo(info);
	after_close("all");
	return 0;
}
