// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-bench-copy: the copy rates that bound a one-copy provider, measured
 * where the providers run (tools/kfab-bench runs it in the bench guest):
 *
 *   kernel  read() of a file on tmpfs into a user buffer, the file in the
 *           page cache (hot), one thread: the rate at which the kernel
 *           copies into user memory (copy_to_user), as kfab's copy does;
 *   memcpy  user space memcpy() between two buffers, one thread, both hot.
 *
 *   kfab-bench-copy [-d DIR] [-t SECONDS] SIZE...
 *
 * For each SIZE (bytes, suffix k or m allowed) and each way it copies
 * SIZE bytes over and over for about -t seconds (default 0.5) after one
 * untimed pass, and prints
 *
 *   copy: kernel 1048576 1234.5 MB/sec 810 usec/MB
 *   copy: memcpy 1048576 2345.6 MB/sec 426 usec/MB
 *
 * MB are 10^6 bytes, as fi_pingpong's; usec/MB is the CPU time (user and
 * system, getrusage) per MB.  The file is DIR/kfab-bench-copy.PID (DIR
 * defaults to /dev/shm), removed at the end.  Exit status 0, or 1 with
 * the reason on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kfab_bench_time.h"

static const char *dir = "/dev/shm";
static double seconds = 0.5;
static char path[4096];

static void die(const char *what)
{
	fprintf(stderr, "kfab-bench-copy: %s: %s\n", what, strerror(errno));
	if (path[0])
		unlink(path);
	exit(1);
}



/* read() the whole of @fd (@size bytes) into @dst. */
static void read_all(int fd, char *dst, size_t size)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = pread(fd, dst + done, size - done, done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errno = n ? errno : EIO;
			die("read");
		}
		done += n;
	}
}

/* What one way of copying moved, and what it cost. */
struct result {
	double bytes, wall, cpu;
};

static void print(const char *way, size_t size, const struct result *r)
{
	double mb = r->bytes / 1e6;

	printf("copy: %s %zu %.1f MB/sec %.0f usec/MB\n", way, size,
	       mb / r->wall, r->cpu / mb);
	fflush(stdout);
}

static void measure_kernel(size_t size, char *dst)
{
	struct result r = { 0 };
	double t0, c0;
	int fd;

	snprintf(path, sizeof(path), "%s/kfab-bench-copy.%d", dir, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die(path);
	memset(dst, 0x5a, size);
	if (pwrite(fd, dst, size, 0) != (ssize_t)size)
		die("write");
	read_all(fd, dst, size);	/* untimed: faults the buffer in */
	t0 = now();
	c0 = cpu_usec();
	do {
		read_all(fd, dst, size);
		r.bytes += size;
	} while (now() - t0 < seconds);
	r.wall = now() - t0;
	r.cpu = cpu_usec() - c0;
	close(fd);
	unlink(path);
	path[0] = '\0';
	print("kernel", size, &r);
}

static void measure_memcpy(size_t size, char *dst, char *src)
{
	struct result r = { 0 };
	double t0, c0;

	memset(src, 0xa5, size);
	memcpy(dst, src, size);		/* untimed */
	t0 = now();
	c0 = cpu_usec();
	do {
		memcpy(dst, src, size);
		/* Keep the compiler from dropping a copy it can see through. */
		__asm__ __volatile__("" : : "r"(dst) : "memory");
		r.bytes += size;
	} while (now() - t0 < seconds);
	r.wall = now() - t0;
	r.cpu = cpu_usec() - c0;
	print("memcpy", size, &r);
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*s == '\0' || *end || v == 0 || v > (1ULL << 30)) {
		fprintf(stderr, "kfab-bench-copy: bad size %s (1 .. 1 GiB)\n",
			s);
		exit(1);
	}
	return v;
}

int main(int argc, char **argv)
{
	int c, i;

	while ((c = getopt(argc, argv, "d:t:h")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 't':
			seconds = atof(optarg);
			if (seconds <= 0 || seconds > 60) {
				fprintf(stderr, "kfab-bench-copy: bad -t %s\n",
					optarg);
				return 1;
			}
			break;
		case 'h':
			printf("usage: kfab-bench-copy [-d DIR] [-t SECONDS] SIZE...\n");
			return 0;
		default:
			return 1;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "usage: kfab-bench-copy [-d DIR] [-t SECONDS] SIZE...\n");
		return 1;
	}
	for (i = optind; i < argc; i++) {
		size_t size = parse_size(argv[i]);
		char *dst = aligned_alloc(4096, (size + 4095) & ~4095UL);
		char *src = aligned_alloc(4096, (size + 4095) & ~4095UL);

		if (!dst || !src)
			die("aligned_alloc");
		measure_kernel(size, dst);
		measure_memcpy(size, dst, src);
		free(dst);
		free(src);
	}
	return 0;
}
