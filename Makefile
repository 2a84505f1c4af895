# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# kfab top-level Makefile.
#
#   make            build kernel/kfab.ko, libshim, tools and selftests
#   make demo       install what is missing, boot a VM with kfab loaded and
#                   show `fi_info -p kfab` (README's first command)
#   make test       host tests (checkpatch, sparse, make install DESTDIR, the
#                   man pages, the packages' DKMS build), then the selftests
#                   in a VM on the stock Debian kernel (6.1, and 6.12) and on
#                   a debug kernel (KASAN, lockdep, kmemleak, UBSAN,
#                   failslab), built once and cached, and the packages
#                   installed, used and purged in a VM (6.1)
#   make test-6.12  only the stock VM suite on Debian's 6.12 kernel
#   make test-pair  the network test beds' long run: the two-guest bed's
#                   scenarios (tools/kfab-vm-pair), Open MPI between the
#                   guests, on the three kernels; the netns bed on 6.12
#                   and the debug kernel
#   make test-packages  the Debian packages installed, used and purged in
#                   a guest of each stock kernel (make test: 6.1 only)
#   make fuzz       the ioctl fuzzer for 10^6 operations on both kernels
#   make bench      kfab against shm (with and without CMA) and tcp in one
#                   VM, then kfab against tcp between two VMs: latency,
#                   bandwidth, message rate; build/bench/
#   make install    install what `make all man` built (DESTDIR, PREFIX,
#                   INSTALL_MOD_PATH; Documentation/install.rst); uninstall
#   make dkms       the module through DKMS, rebuilt for every new kernel
#   make deb        the Debian packages, into build/deb/
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

# Where `make install` puts things (Documentation/install.rst): PREFIX for
# everything but the modules, which go to INSTALL_MOD_PATH/lib/modules; both
# under DESTDIR.  Nothing is written outside DESTDIR when it is set (make
# test checks), and the live system's depmod and ldconfig only run without.
PREFIX   ?= /usr/local
DESTDIR  ?=
INSTALL_MOD_PATH ?= $(DESTDIR)
MULTIARCH := $(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
LIBDIR   ?= $(PREFIX)/lib/$(MULTIARCH)
INCLUDEDIR ?= $(PREFIX)/include
SBINDIR  ?= $(PREFIX)/sbin
MANDIR   ?= $(PREFIX)/share/man
DOCDIR   ?= $(PREFIX)/share/doc/kfab
# libfabric loads providers from FI_PROVIDER_PATH, or else from its own
# $libdir/libfabric (Debian: /usr/lib/x86_64-linux-gnu/libfabric): the
# provider is found without FI_PROVIDER_PATH only with PREFIX=/usr.
PROVDIR  ?= $(LIBDIR)/libfabric
# systemd and udev read these below /usr/lib and /usr/local/lib alike.
MODLOADDIR ?= $(PREFIX)/lib/modules-load.d
# The version of everything: the module's (kernel/kfab.h).
VERSION  := $(shell sed -n 's/^\#define KFAB_MODULE_VERSION_\(MAJOR\|MINOR\|PATCH\)[[:space:]]*//p' \
		kernel/kfab.h | paste -sd.)

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

# The RDMA engine (kfab_rdma.ko) where the kernel has rdma_cm, for KDIR.
KRDMA = $(if $(shell grep -qs '^CONFIG_INFINIBAND_ADDR_TRANS=y' \
		$(1)/include/config/auto.conf && echo y),CONFIG_KFAB_RDMA=m)

# Debian's 6.1 headers ship no vmlinux, which module BTF is made against:
# there, make none rather than have kbuild say so for every module.
KBUILD_ARGS = $(if $(wildcard $(KDIR)/vmlinux),,CONFIG_DEBUG_INFO_BTF_MODULES=)

export KFAB_CACHE

.PHONY: all module module-test module-test-6.12 test-6.12 test-pair test-packages mpi module-nokapi module-debug debug-kernel fuzz libshim tools selftests deps ksrc check \
	checkpatch sparse test demo bench install install-module install-user uninstall man dkms-src dkms \
	dkms-remove clean

all: module libshim tools selftests

module:
	$(MAKE) -C kernel KDIR=$(KDIR) modules

# copy-tree DIR: the module's sources, for a build outside kernel/
define copy-tree
	@mkdir -p $(1)/kernel $(1)/uapi/linux
	@cp -u $(filter-out %.mod.c,$(wildcard kernel/*.c)) kernel/*.h \
		kernel/Kbuild $(1)/kernel/
	@cp -u uapi/linux/*.h $(1)/uapi/linux/
endef

module-test:
	$(call copy-tree,$(KTEST_DIR))
	$(MAKE) -C $(KDIR) M=$(KTEST_DIR)/kernel $(KBUILD_ARGS) CONFIG_KFAB=m CONFIG_KFAB_KAPI=y CONFIG_KFAB_BLK=m CONFIG_KFAB_TEST=y \
		$(call KRDMA,$(KDIR)) modules

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
	d=$$(cat build/debug-kernel-dir)/build && \
	$(MAKE) -C $$d M=$(KDEBUG_DIR)/kernel \
		CONFIG_KFAB=m CONFIG_KFAB_KAPI=y CONFIG_KFAB_BLK=m CONFIG_KFAB_TEST=y \
		$$(grep -qs '^CONFIG_INFINIBAND_ADDR_TRANS=y' $$d/include/config/auto.conf && \
		   echo CONFIG_KFAB_RDMA=m) modules

libshim:
	$(MAKE) -C libshim

tools: libshim
	$(MAKE) -C tools

selftests: libshim ksrc
	$(MAKE) -C selftests KSFT_DIR=$(KSFT_DIR)

deps:
	tools/install-deps

# Man pages, roff from Markdown (pandoc): fi_kfab(7), kfabctl(8),
# kfab-blk-server(8), kfab_blk(4).
MAN_SRC := $(wildcard Documentation/*.[0-9].md)
MAN_OUT := $(patsubst Documentation/%.md,build/man/%,$(MAN_SRC))

man: $(MAN_OUT)

build/man/%: Documentation/%.md
	@mkdir -p $(dir $@)
	pandoc --standalone --from markdown --to man -o $@ $<

ksrc:
	@tools/ksrc

CHECKPATCH = perl $(KSRC)/scripts/checkpatch.pl --no-tree --strict --terse \
	--ignore FILE_PATH_CHANGES -f

# compat.h is where an out-of-tree module must test the kernel version;
# trace.h is written in TRACE_EVENT()'s layout, as the kernel's are.
checkpatch: ksrc
	$(CHECKPATCH) $(filter-out %.mod.c kernel/compat.h kernel/trace.h,\
		$(wildcard kernel/*.c kernel/*.h)) uapi/linux/kfab.h \
		uapi/linux/kfab_netlink.h
	$(CHECKPATCH) --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON \
		kernel/compat.h
	$(CHECKPATCH) --ignore PARENTHESIS_ALIGNMENT,OPEN_ENDED_LINE \
		kernel/trace.h

# In a tree of its own: a checker run never relinks the module the tests
# load.
SPARSE_DIR := $(CURDIR)/build/sparse$(KSUFFIX)

sparse:
	$(call copy-tree,$(SPARSE_DIR))
	$(MAKE) -C $(KDIR) M=$(SPARSE_DIR)/kernel $(KBUILD_ARGS) CONFIG_KFAB=m CONFIG_KFAB_KAPI=y CONFIG_KFAB_BLK=m CONFIG_KFAB_TEST=y \
		$(call KRDMA,$(KDIR)) C=2 CHECK=$(CURDIR)/tools/sparse-check CF="-Wsparse-error -Wsparse-all" modules

check: checkpatch sparse

test: deps
	$(MAKE) all man module-test module-test-6.12 module-debug deb mpi
	selftests/run-tests

# The stock VM suite on Debian's 6.12, in a guest booted from its image.
test-6.12: deps
	$(MAKE) all module-test-6.12 mpi
	tools/kfab-vm --kver 6.12 --module build/ktest-6.12/kernel/kfab.ko \
		--timeout 1500 -- selftests/vm-suite

# The two-guest bed's scenarios (selftests/pair), the long ones included,
# the netns bed on the other kernels and kfab_blk across nodes; make test
# runs the smoke test and the netns bed on the stock kernel.
test-pair: deps
	$(MAKE) all module-test module-test-6.12 module-debug mpi
	selftests/run-tests --pair-only

# The packages installed, used and purged in guests of both stock kernels
# (make test does 6.1 only, to stay short).
test-packages: deps
	$(MAKE) all deb
	selftests/run-tests --packages-only

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


# What install writes, relative to DESTDIR; uninstall removes exactly these.
MODDIR    = $(INSTALL_MOD_PATH)/lib/modules/$(KREL)/extra
UAPI_HDRS = $(notdir $(wildcard uapi/linux/*.h))
MAN_PAGES = $(notdir $(MAN_SRC:.md=))
INST_DIRS := LIBDIR=$(LIBDIR) INCLUDEDIR=$(INCLUDEDIR) PROVDIR=$(PROVDIR) \
	SBINDIR=$(SBINDIR) PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)

# depmod only where a kernel's whole module tree is (the live system, or an
# image's root as INSTALL_MOD_PATH), never in a staging directory: the
# target's packaging runs it there.
define depmod
	@if [ -e "$(INSTALL_MOD_PATH)/lib/modules/$(KREL)/modules.order" ]; then \
		echo depmod -b "$(or $(INSTALL_MOD_PATH),/)" $(KREL); \
		depmod -b "$(or $(INSTALL_MOD_PATH),/)" $(KREL); \
	else \
		echo "depmod skipped: no module tree of $(KREL) in $(or $(INSTALL_MOD_PATH),/)"; \
	fi
endef

# Installs what `make all man` built; run that first (install builds
# nothing, so that it writes only below DESTDIR).  install-module is the
# module, install-user everything else (what the Debian packages take; the
# module comes through DKMS there).
install: install-module install-user

install-module:
	@for f in kernel/kfab.ko kernel/kfab_blk.ko; do \
		[ -e $$f ] || { echo "install: no $$f: run make first" >&2; exit 1; }; \
	done
	$(MAKE) -C kernel KDIR=$(KDIR) INSTALL_MOD_PATH=$(INSTALL_MOD_PATH) \
		INSTALL_MOD_DIR=extra modules_install
	$(depmod)

install-user:
	@for f in libshim/libkfab.so.1 tools/kfabctl tools/kfab-blk-server \
		$(MAN_OUT); do \
		[ -e $$f ] || { echo "install: no $$f: run make all man first" >&2; exit 1; }; \
	done
	$(MAKE) -C libshim install $(INST_DIRS)
	$(MAKE) -C tools install $(INST_DIRS)
	install -d $(DESTDIR)$(INCLUDEDIR)/kfab/uapi/linux \
		$(DESTDIR)$(INCLUDEDIR)/kfab/kapi $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(MODLOADDIR) $(DESTDIR)$(DOCDIR)/examples
	install -m 0644 $(addprefix uapi/linux/,$(UAPI_HDRS)) \
		$(DESTDIR)$(INCLUDEDIR)/kfab/uapi/linux/
	install -m 0644 kernel/kfab_kapi.h $(DESTDIR)$(INCLUDEDIR)/kfab/kapi/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|; s|@PROVDIR@|$(PROVDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' dist/kfab.pc.in \
		>$(DESTDIR)$(LIBDIR)/pkgconfig/kfab.pc
	install -m 0644 dist/modules-load.d/kfab.conf $(DESTDIR)$(MODLOADDIR)/
	install -m 0644 dist/modprobe.d/kfab.conf \
		$(DESTDIR)$(DOCDIR)/examples/modprobe.d-kfab.conf
	install -m 0644 dist/udev/70-kfab.rules $(DESTDIR)$(DOCDIR)/examples/
	for m in $(MAN_PAGES); do \
		install -D -m 0644 build/man/$$m \
			$(DESTDIR)$(MANDIR)/man$${m##*.}/$$m || exit; \
	done
	[ -n "$(DESTDIR)" ] || ldconfig
	@[ "$(PROVDIR)" = "$$(pkg-config --variable=libdir libfabric)/libfabric" ] || \
		echo "install: libfabric finds kfab with FI_PROVIDER_PATH=$(PROVDIR)"

uninstall:
	rm -f $(MODDIR)/kfab.ko $(MODDIR)/kfab_blk.ko $(MODDIR)/kfab_rdma.ko
	-rmdir $(MODDIR) 2>/dev/null
	$(depmod)
	$(MAKE) -C libshim uninstall $(INST_DIRS)
	$(MAKE) -C tools uninstall $(INST_DIRS)
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/kfab/uapi/linux/,$(UAPI_HDRS)) \
		$(DESTDIR)$(INCLUDEDIR)/kfab/kapi/kfab_kapi.h \
		$(DESTDIR)$(LIBDIR)/pkgconfig/kfab.pc \
		$(DESTDIR)$(MODLOADDIR)/kfab.conf \
		$(DESTDIR)$(DOCDIR)/examples/modprobe.d-kfab.conf \
		$(DESTDIR)$(DOCDIR)/examples/70-kfab.rules \
		$(foreach m,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(m))
	-rmdir $(DESTDIR)$(INCLUDEDIR)/kfab/uapi/linux $(DESTDIR)$(INCLUDEDIR)/kfab/uapi \
		$(DESTDIR)$(INCLUDEDIR)/kfab/kapi $(DESTDIR)$(INCLUDEDIR)/kfab \
		$(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null
	[ -n "$(DESTDIR)" ] || ldconfig

# The module's source as DKMS takes it, in DESTDIR/usr/src/kfab-VERSION
# (the kfab-dkms package's content).  `make dkms` then registers, builds and
# installs it for the running kernel on this machine, and DKMS keeps it
# built for every kernel installed later (Documentation/install.rst).
DKMS_SRC = $(DESTDIR)/usr/src/kfab-$(VERSION)

dkms-src:
	install -d $(DKMS_SRC)/kernel $(DKMS_SRC)/uapi/linux
	install -m 0644 $(filter-out %.mod.c,$(wildcard kernel/*.c)) \
		kernel/*.h kernel/Kbuild kernel/Makefile $(DKMS_SRC)/kernel/
	install -m 0644 uapi/linux/*.h $(DKMS_SRC)/uapi/linux/
	install -m 0755 dist/dkms-post-build $(DKMS_SRC)/
	sed 's/#MODULE_VERSION#/$(VERSION)/' dkms.conf >$(DKMS_SRC)/dkms.conf

# The Debian packages (debian/), built with dpkg-buildpackage from a copy of
# the tree's files (its clean would empty build/), into build/deb/.
DEB_DIR := build/deb

deb:
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/kfab-$(VERSION)
	{ git ls-files -co --exclude-standard 2>/dev/null || \
	  find . -path ./build -prune -o -path ./.git -prune -o -type f -print; } | \
		tar -cf - -T - | tar -xf - -C $(DEB_DIR)/kfab-$(VERSION)
	cd $(DEB_DIR)/kfab-$(VERSION) && dpkg-buildpackage -b -us -uc -j2
	lintian --fail-on error $(DEB_DIR)/*.deb

dkms: dkms-src
	dkms add -m kfab -v $(VERSION)
	dkms install -m kfab -v $(VERSION)

dkms-remove:
	dkms remove -m kfab -v $(VERSION) --all
	rm -rf /usr/src/kfab-$(VERSION)

clean:
	-$(MAKE) -C kernel KDIR=$(KDIR) clean
	-$(MAKE) -C libshim clean
	-$(MAKE) -C tools clean
	-$(MAKE) -C selftests clean
	rm -rf build
