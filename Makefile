# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# kfab top-level Makefile.
#
#   make            build kernel/kfab.ko, libshim, tools and selftests
#   make demo       install what is missing, boot a VM with kfab loaded and
#                   show `fi_info -p kfab` (README's first command)
#   make test       host tests, checkpatch, sparse, then the selftests in a VM
#                   on the stock Debian kernel (6.1, and 6.12) and on a debug
#                   kernel (KASAN, lockdep, kmemleak, UBSAN, failslab), built
#                   once and cached
#   make test-6.12  only the stock VM suite on Debian's 6.12 kernel
#   make test-pair  the network test beds' long run: the two-guest bed's
#                   scenarios (tools/kfab-vm-pair), Open MPI between the
#                   guests, on the three kernels; the netns bed on 6.12
#                   and the debug kernel
#   make fuzz       the ioctl fuzzer for 10^6 operations on both kernels
#   make bench      kfab against shm (with and without CMA) and tcp in one
#                   VM: latency, bandwidth, message rate; build/bench/
#   make install    install the module and the library on this host
#
# KVER is the kernel to build for: by default the Debian 6.1 headers that
# match the test VM's kernel (linux-headers-amd64); KVER=6.12 the headers of
# another Debian series (linux-headers-6.12-amd64); or any kernel release
# whose headers are installed (KVER=$(uname -r)).  tools/kver turns it into
# the release, KREL, once and only when a target needs it (it says why if
# it cannot); KDIR is that kernel's build tree.

KVER     ?=
KREL      = $(eval KREL := $(shell tools/kver $(KVER)))$(KREL)
KDIR     ?= $(firstword $(wildcard /usr/src/linux-headers-$(KREL)) \
		/lib/modules/$(KREL)/build)
KFAB_CACHE ?= /var/cache/kfab
PREFIX   ?= /usr/local
DESTDIR  ?=

# The kselftest harness and checkpatch come from Debian's linux-source-6.1,
# extracted (never copied into the tree) by tools/ksrc into the cache.
KSRC     ?= $(shell tools/ksrc --print-dir)
KSFT_DIR := $(KSRC)/tools/testing/selftests

# The test build of the module, with CONFIG_KFAB_TEST, lives apart from the
# production one so that `make` never produces a test-enabled kernel/kfab.ko.
# Builds for another KVER go beside it, as the other build trees below.
KSUFFIX := $(if $(KVER),-$(KVER))
KTEST_DIR := $(CURDIR)/build/ktest$(KSUFFIX)
# The same, built against the debug kernel's tree.
KDEBUG_DIR := $(CURDIR)/build/kdebug

# Debian's 6.1 headers ship no vmlinux, which module BTF is made against:
# there, make none rather than have kbuild say so for every module.
KBUILD_ARGS = $(if $(wildcard $(KDIR)/vmlinux),,CONFIG_DEBUG_INFO_BTF_MODULES=)

export KFAB_CACHE

.PHONY: all module module-test module-test-6.12 test-6.12 test-pair mpi module-nokapi module-debug debug-kernel fuzz libshim tools selftests deps ksrc check \
	checkpatch sparse test demo bench install clean

all: module libshim tools selftests

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel $(KBUILD_ARGS) CONFIG_KFAB=m CONFIG_KFAB_KAPI=y CONFIG_KFAB_BLK=m modules

# copy-tree DIR: the module's sources, for a build outside kernel/
define copy-tree
	@mkdir -p $(1)/kernel $(1)/uapi/linux
	@cp -u $(filter-out %.mod.c,$(wildcard kernel/*.c)) kernel/*.h \
		kernel/Kbuild $(1)/kernel/
	@cp -u uapi/linux/*.h $(1)/uapi/linux/
endef

module-test:
	$(call copy-tree,$(KTEST_DIR))
	$(MAKE) -C $(KDIR) M=$(KTEST_DIR)/kernel $(KBUILD_ARGS) CONFIG_KFAB=m CONFIG_KFAB_KAPI=y CONFIG_KFAB_BLK=m CONFIG_KFAB_TEST=y modules

# The test build for Debian's 6.12 (linux-headers-6.12-amd64), in
# build/ktest-6.12.
module-test-6.12:
	$(MAKE) module-test KVER=6.12

# Without CONFIG_KFAB_KAPI: a module for user space only, which must build
# (test-only code included) and export nothing.
NOKAPI_DIR := $(CURDIR)/build/nokapi$(KSUFFIX)

module-nokapi:
	$(call copy-tree,$(NOKAPI_DIR))
	$(MAKE) -C $(KDIR) M=$(NOKAPI_DIR)/kernel $(KBUILD_ARGS) CONFIG_KFAB=m CONFIG_KFAB_TEST=y modules
	@if grep -q . $(NOKAPI_DIR)/kernel/Module.symvers; then \
		echo "module-nokapi: exports symbols without CONFIG_KFAB_KAPI" >&2; \
		exit 1; \
	fi

# Builds the debug kernel first if it is not cached (minutes, once).
debug-kernel:
	@mkdir -p build
	tools/kfab-debug-kernel >build/debug-kernel-dir

module-debug: debug-kernel
	$(call copy-tree,$(KDEBUG_DIR))
	$(MAKE) -C $$(cat build/debug-kernel-dir)/build M=$(KDEBUG_DIR)/kernel \
		CONFIG_KFAB=m CONFIG_KFAB_KAPI=y CONFIG_KFAB_BLK=m CONFIG_KFAB_TEST=y modules

libshim:
	$(MAKE) -C libshim

tools: libshim
	$(MAKE) -C tools

selftests: libshim ksrc
	$(MAKE) -C selftests KSFT_DIR=$(KSFT_DIR)

deps:
	tools/install-deps

ksrc:
	@tools/ksrc

CHECKPATCH = perl $(KSRC)/scripts/checkpatch.pl --no-tree --strict --terse \
	--ignore FILE_PATH_CHANGES -f

# compat.h is where an out-of-tree module must test the kernel version.
checkpatch: ksrc
	$(CHECKPATCH) $(filter-out %.mod.c kernel/compat.h,\
		$(wildcard kernel/*.c kernel/*.h)) uapi/linux/kfab.h
	$(CHECKPATCH) --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON \
		kernel/compat.h

# In a tree of its own: a checker run never relinks the module the tests
# load.
SPARSE_DIR := $(CURDIR)/build/sparse$(KSUFFIX)

sparse:
	$(call copy-tree,$(SPARSE_DIR))
	$(MAKE) -C $(KDIR) M=$(SPARSE_DIR)/kernel $(KBUILD_ARGS) CONFIG_KFAB=m CONFIG_KFAB_KAPI=y CONFIG_KFAB_BLK=m CONFIG_KFAB_TEST=y \
		C=2 CHECK=$(CURDIR)/tools/sparse-check CF="-Wsparse-error -Wsparse-all" modules

check: checkpatch sparse

test: deps
	$(MAKE) all module-test module-test-6.12 module-debug mpi
	selftests/run-tests

# The stock VM suite on Debian's 6.12, in a guest booted from its image.
test-6.12: deps
	$(MAKE) all module-test-6.12 mpi
	tools/kfab-vm --kver 6.12 --module build/ktest-6.12/kernel/kfab.ko \
		--timeout 1500 -- selftests/vm-suite

# The two-guest bed's scenarios (selftests/pair), the long ones included,
# and the netns bed on the other kernels; make test runs the smoke test
# and the netns bed on the stock kernel.
test-pair: deps
	$(MAKE) all module-test module-test-6.12 module-debug mpi
	selftests/run-tests --pair-only

# The MPI programs of the tests (selftests/kfab_mpi, selftests/pair/mpi.py):
# mpi_ring for the launcher's checks, mpi_check for the transport's.  Not
# part of `all`: mpicc comes with libopenmpi-dev, which only these need.
MPI_PROGS := build/mpi/mpi_ring build/mpi/mpi_check

mpi: $(MPI_PROGS)

build/mpi/%: selftests/mpi/%.c
	@mkdir -p $(dir $@)
	mpicc -O2 -Wall -Wextra -Werror -o $@ $<

fuzz: deps
	$(MAKE) all module-test module-debug
	KFAB_FUZZ_OPS=1000000 selftests/run-tests --fuzz-only

# Not part of `make test`: numbers, not verdicts (Documentation/bench.rst).
bench: deps
	$(MAKE) all module-test
	tools/kfab-bench

demo: deps
	$(MAKE) all
	tools/kfab-vm -- sh -c 'tools/kfabctl info && echo && fi_info -p kfab'


install: module libshim
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel $(KBUILD_ARGS) CONFIG_KFAB=m CONFIG_KFAB_KAPI=y CONFIG_KFAB_BLK=m INSTALL_MOD_DIR=extra modules_install
	depmod -a $(KREL)
	$(MAKE) -C libshim install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	$(MAKE) -C tools install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	install -D -m 0644 uapi/linux/kfab.h $(DESTDIR)$(PREFIX)/include/linux/kfab.h
	[ -n "$(DESTDIR)" ] || ldconfig

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel clean
	-$(MAKE) -C libshim clean
	-$(MAKE) -C tools clean
	-$(MAKE) -C selftests clean
	rm -rf build
