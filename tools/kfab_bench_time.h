/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The clocks of make bench's programs (kfab-bench-rate, kfab-bench-copy):
 * wall time and the CPU time the process has spent, so that every figure
 * can carry its CPU cost beside it (Documentation/bench.rst).
 */
#ifndef KFAB_BENCH_TIME_H
#define KFAB_BENCH_TIME_H

#include <sys/resource.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* User and system time this process has spent, in microseconds. */
static inline double cpu_usec(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/*
 * A mark for tools/kfab-insn-count.so, which writes the guest's
 * instruction counts when one executes (a no-op otherwise): around each
 * timed repetition, so that a message's instructions can be counted.
 */
static inline void bench_mark(void)
{
#if defined(__x86_64__)
	__asm__ __volatile__(".byte 0x66, 0x87, 0xdb" ::: "memory");	/* xchg %bx,%bx */
#endif
}

/* The start of a run, before its first bench_mark(): xchg %cx,%cx. */
static inline void bench_mark_run(void)
{
#if defined(__x86_64__)
	__asm__ __volatile__(".byte 0x66, 0x87, 0xc9" ::: "memory");
#endif
}

#endif
