// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab-insn-count.so: a QEMU TCG plugin that counts the instructions the
 * guest executes, in the kernel and in user space, per vCPU, and writes
 * the totals whenever a guest program executes the marker instruction
 * (xchg %bx,%bx, kfab_bench_time.h's bench_mark()).
 *
 * Why: under TCG a kernel change of a few percent cannot be timed (a
 * module that differs only by where its code lies moves the message rate
 * by up to 15 %, Documentation/bench.rst); the instructions a message
 * costs do not move with the emulator's scheduling or the code's layout.
 *
 *   tools/kfab-vm --plugin tools/kfab-insn-count.so,out=FILE -- ...
 *
 * FILE gets one line per marker:
 *   mark SEQ kernel INSNS user INSNS cpus KERNEL0 USER0 KERNEL1 USER1 ...
 * (totals over every vCPU since boot, then each vCPU's), and a line "run" where a program
 * marks the start of a run (xchg %cx,%cx, bench_mark_run()), so that the
 * marks of a run that failed halfway are not taken for the next one's.
 * Kernel means a block that starts at a kernel address (x86-64: the
 * upper half).  With ",profile=on" each
 * mark is followed by the kernel blocks run since the previous one
 * (",profile=all": every block, user space's too):
 *   tb ADDRESS INSNS INSNS0 INSNS1 ...
 * (instructions executed in the block that starts there, in all and on
 * each vCPU), for a profile by function against the guest's
 * /proc/kallsyms.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * QEMU 7.2's plugin API (version 1): only what this plugin uses.  Debian
 * ships the plugin-enabled emulator but not its header.
 */
typedef uint64_t qemu_plugin_id_t;
typedef struct {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu, void *udata);
typedef void (*qemu_plugin_tb_trans_cb_t)(qemu_plugin_id_t id,
					  struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *udata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
					  qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags,
					  void *udata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags,
					    void *udata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    qemu_plugin_udata_cb_t cb, void *udata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
						 size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_VCPUS	64
#define KERNEL_BIT	(1ULL << 32)
#define KERNEL_START	0xffff800000000000ULL

static const uint8_t marker[] = { 0x66, 0x87, 0xdb };	/* xchg %bx,%bx */
static const uint8_t run_marker[] = { 0x66, 0x87, 0xc9 };	/* xchg %cx,%cx */

/* Each vCPU's thread writes only its own line: exact without atomics. */
static struct {
	uint64_t kernel;
	uint64_t user;
} __attribute__((aligned(64))) counts[MAX_VCPUS];

/* A translated kernel block, when profiling (never freed: few, small). */
struct block {
	uint64_t vaddr;
	uint64_t insns;
	struct block *next;
	struct {
		uint64_t runs;	/* by its vCPU only */
		uint64_t seen;	/* at the previous mark (under mark_lock) */
	} cpu[];		/* nr_vcpus */
};

static FILE *out;
static int nr_vcpus;
static uint64_t marks;
static int profile;	/* 0, 1 kernel blocks, 2 every block */
static struct block *blocks;	/* atomic push, read at marks */
static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_block(unsigned int vcpu, void *udata)
{
	uint64_t v = (uintptr_t)udata;

	if (vcpu >= (unsigned int)nr_vcpus)
		return;
	if (v & KERNEL_BIT)
		counts[vcpu].kernel += (uint32_t)v;
	else
		counts[vcpu].user += (uint32_t)v;
}

static void on_profiled_block(unsigned int vcpu, void *udata)
{
	struct block *b = udata;

	if (vcpu >= (unsigned int)nr_vcpus)
		return;
	if (b->vaddr >= KERNEL_START)
		counts[vcpu].kernel += b->insns;
	else
		counts[vcpu].user += b->insns;
	__atomic_store_n(&b->cpu[vcpu].runs, b->cpu[vcpu].runs + 1,
			 __ATOMIC_RELAXED);
}

/* The kernel blocks run since the previous mark (under mark_lock). */
static void print_profile(void)
{
	struct block *b = __atomic_load_n(&blocks, __ATOMIC_ACQUIRE);
	uint64_t runs[MAX_VCPUS], all;
	int i;

	for (; b; b = b->next) {
		all = 0;
		for (i = 0; i < nr_vcpus; i++) {
			runs[i] = __atomic_load_n(&b->cpu[i].runs,
						  __ATOMIC_RELAXED) - b->cpu[i].seen;
			b->cpu[i].seen += runs[i];
			all += runs[i];
		}
		if (!all)
			continue;
		fprintf(out, "tb %" PRIx64 " %" PRIu64, b->vaddr, all * b->insns);
		for (i = 0; i < nr_vcpus; i++)
			fprintf(out, " %" PRIu64, runs[i] * b->insns);
		fputc('\n', out);
	}
}

/* The others' counts are read as they run: stale by a block at most. */
static void on_marker(unsigned int vcpu, void *udata)
{
	uint64_t k[MAX_VCPUS], u[MAX_VCPUS], ka = 0, ua = 0;
	int i;

	(void)vcpu;
	(void)udata;
	for (i = 0; i < nr_vcpus; i++) {
		k[i] = __atomic_load_n(&counts[i].kernel, __ATOMIC_RELAXED);
		u[i] = __atomic_load_n(&counts[i].user, __ATOMIC_RELAXED);
		ka += k[i];
		ua += u[i];
	}
	pthread_mutex_lock(&mark_lock);
	fprintf(out, "mark %" PRIu64 " kernel %" PRIu64 " user %" PRIu64 " cpus",
		marks++, ka, ua);
	for (i = 0; i < nr_vcpus; i++)
		fprintf(out, " %" PRIu64 " %" PRIu64, k[i], u[i]);
	fputc('\n', out);
	if (profile)
		print_profile();
	fflush(out);
	pthread_mutex_unlock(&mark_lock);
}

static void on_run_marker(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	pthread_mutex_lock(&mark_lock);
	fputs("run\n", out);
	fflush(out);
	pthread_mutex_unlock(&mark_lock);
}

static bool profile_block(struct qemu_plugin_tb *tb, uint64_t start, size_t n)
{
	struct block *b = calloc(1, sizeof(*b) + nr_vcpus * sizeof(b->cpu[0]));

	if (!b)
		return false;
	b->vaddr = start;
	b->insns = n;
	b->next = __atomic_load_n(&blocks, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&blocks, &b->next, b, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_profiled_block,
					     QEMU_PLUGIN_CB_NO_REGS, b);
	return true;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t start = qemu_plugin_tb_vaddr(tb);
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	uint64_t v = n;

	(void)id;
	if (start >= KERNEL_START)
		v |= KERNEL_BIT;
	/* A block profiled counts itself; the others count by kind. */
	if (profile < ((v & KERNEL_BIT) ? 1 : 2) ||
	    !profile_block(tb, start, n))
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block,
						     QEMU_PLUGIN_CB_NO_REGS,
						     (void *)(uintptr_t)v);
	if (v & KERNEL_BIT)
		return;
	/* Only user space marks: the kernel has no business with it. */
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const void *data = qemu_plugin_insn_data(insn);

		if (qemu_plugin_insn_size(insn) != sizeof(marker))
			continue;
		if (!memcmp(data, marker, sizeof(marker)))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker,
							       QEMU_PLUGIN_CB_NO_REGS,
							       NULL);
		else if (!memcmp(data, run_marker, sizeof(run_marker)))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_run_marker,
							       QEMU_PLUGIN_CB_NO_REGS,
							       NULL);
	}
}

static void on_end(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	on_marker(0, NULL);
	if (out != stderr)
		fclose(out);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
			int argc, char **argv)
{
	int i;

	if (!info->system_emulation || strcmp(info->target_name, "x86_64")) {
		fprintf(stderr, "kfab-insn-count: x86_64 system emulation only\n");
		return 1;
	}
	nr_vcpus = info->system.max_vcpus;
	if (nr_vcpus < 1 || nr_vcpus > MAX_VCPUS) {
		fprintf(stderr, "kfab-insn-count: %d vCPUs (1 to %d)\n",
			nr_vcpus, MAX_VCPUS);
		return 1;
	}
	out = stderr;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			out = fopen(argv[i] + 4, "w");
			if (!out) {
				perror(argv[i] + 4);
				return 1;
			}
		} else if (!strcmp(argv[i], "profile=on")) {
			profile = 1;
		} else if (!strcmp(argv[i], "profile=all")) {
			profile = 2;
		} else {
			fprintf(stderr, "kfab-insn-count: unknown %s\n", argv[i]);
			return 1;
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_end, NULL);
	return 0;
}
