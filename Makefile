# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# kiwi: software iWARP RDMA provider.
#
#   make                build kiwi.ko and libkiwi-rdmav34.so
#   make module         the kernel module only (KVER= or KDIR= to choose)
#   make provider       the libibverbs provider only
#   make install        install both (honours DESTDIR)
#   make dist           the release tarball out/kiwi_<version>.orig.tar.gz
#                       (version: dkms.conf's); unpacked, it builds
#                       without .git (make, make deb, dkms add .)
#   make deb            Debian packages kiwi-dkms and ibverbs-provider-kiwi
#                       into out/deb/, checked by lintian
#   make test-deb       install, use and purge them in guests booting
#                       Debian 12 and Debian 13 roots (tests/vm/deb-test.sh)
#   make check          sparse, checkpatch and the floors (scripts/layers.py)
#                       on the kernel sources
#   make unit           user-space unit tests of the wire protocol core
#   make fuzz           libFuzzer targets (FUZZ_SECONDS=N per target)
#   make bench-proto    user-space benchmark of the protocol core: 64 KiB
#                       messages framed and parsed, CRC on, against memcpy
#   make test           the test suite (README's test command): all of it on
#                       6.1, then the build, host checks and a subset of the
#                       VM cases on 6.12 (KIWI_612_CASES)
#   make test-full      the long matrices, 6.12 pass still the subset
#   make test-6.12-full every VM case on 6.12 with its long matrices
#   make test-two-host  two guests, 6.1 and 6.12, on one virtual wire: kiwi
#                       and siw across it (tests/vm/two-host.sh, a subset)
#   make test-two-host-full  every pairing, CRC, MTU and program (long)
#   make module-vm      kiwi.ko for the test VM's kernel, KIWI_KVER=6.1|6.12
#   make demo           boot the test VM and show kiwi devices
#   make bench          perftest kiwi vs siw vs iperf3, two guests on one wire (Documentation/benchmarks.md)
#   make bench-shared   perftest kiwi vs siw vs TCP in one guest, CRC off and on
#   make bench-nvmeof   NVMe-oF kiwi vs siw vs NVMe/TCP, two guests on one wire (Documentation/benchmarks.md)
#   make bench-nvmeof-shared  the same in one guest on a veth
#   make bench-storage  iSER and NFS over RDMA, kiwi and siw, against TCP
#                       (REPS=N rounds, default 5; Documentation/benchmarks.md)
#   make bench-memory   kernel memory per idle QP and per registered page,
#                       kiwi, siw and TCP sockets (Documentation/benchmarks.md)

# The running kernel's headers when they exist, else those of the test VM's
# default kernel (the newest 6.1, tests/vm/kernel.sh), else the newest
# installed: a development host with 6.1 and 6.12 builds for 6.1.
KVER ?= $(shell if [ -d /lib/modules/$$(uname -r)/build ]; then uname -r; \
	elif kv=$$(KIWI_KVER= tests/vm/kernel.sh kv 2>/dev/null) && \
		[ -d /lib/modules/$$kv/build ]; then echo $$kv; \
	else ls -1d /lib/modules/*/build 2>/dev/null | sort -V | tail -n1 | \
	cut -d/ -f4; fi)
KDIR ?= /lib/modules/$(KVER)/build
# Derive KVER from KDIR when only KDIR was given.
ifeq ($(origin KDIR),command line)
ifneq ($(origin KVER),command line)
KVER := $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
	$(KDIR)/include/generated/utsrelease.h 2>/dev/null)
endif
endif

PREFIX ?= /usr
LIBDIR ?= $(PREFIX)/lib/x86_64-linux-gnu
SYSCONFDIR ?= /etc
INSTALL_MOD_DIR ?= updates

.PHONY: all module provider install install-module install-provider clean print-kdir \
	check unit fuzz bench-proto bench bench-shared bench-nvmeof bench-nvmeof-shared bench-storage bench-memory test test-full demo \
	test-6.12-full module-vm test-two-host test-two-host-full two-host-deps \
	deb test-deb dist

all: module provider

module:
	@test -d "$(KDIR)" || { echo "kiwi: no kernel headers at $(KDIR); install linux-headers-$(KVER) or set KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

provider:
	$(MAKE) -C userspace

install: install-module install-provider

install-module: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_PATH=$(DESTDIR) \
		INSTALL_MOD_DIR=$(INSTALL_MOD_DIR) modules_install
	@if [ -z "$(DESTDIR)" ]; then depmod -a $(KVER); fi

install-provider: provider
	$(MAKE) -C userspace install DESTDIR=$(DESTDIR) LIBDIR=$(LIBDIR) \
		SYSCONFDIR=$(SYSCONFDIR)

check:
	./scripts/check.sh $(KDIR)

dist:
	./scripts/mkdist.sh

deb:
	./scripts/mkdeb.sh

test-deb:
	./tests/vm/deb-test.sh

unit:
	$(MAKE) -C tests/unit test

fuzz:
	$(MAKE) -C tests/fuzz run

bench-proto:
	$(MAKE) -C tests/unit bench

test:
	./tests/run-tests.sh

test-full:
	KIWI_FULL=1 ./tests/run-tests.sh

# Every case on 6.12 with its long matrices (the default run's 6.12 pass
# takes a subset), without the 6.1 VM pass.
test-6.12-full:
	KIWI_FULL=1 KIWI_612_CASES=all KIWI_SUITE_KERNELS=6.12 ./tests/run-tests.sh

# What both guests of the two-host bench load, built for each kernel.
two-host-deps: module provider
	$(MAKE) -C tests/verbs
	./tests/vm/build-siw.sh
	KIWI_KVER=6.12 ./tests/vm/build-kiwi.sh
	KIWI_KVER=6.12 ./tests/vm/build-siw.sh

test-two-host: two-host-deps
	./tests/vm/two-host.sh

test-two-host-full: two-host-deps
	./tests/vm/build-siw.sh --crc
	KIWI_KVER=6.12 ./tests/vm/build-siw.sh --crc
	./tests/vm/build-smb.sh
	KIWI_KVER=6.12 ./tests/vm/build-smb.sh
	KIWI_FULL=1 ./tests/vm/two-host.sh

module-vm:
	./tests/vm/build-kiwi.sh

demo:
	./tests/vm/demo.sh

# the verbs benchmark of record: perftest kiwi/siw against iperf3 between
# two guests on one wire, paired rounds over several boots;
# KIWI_BENCH_QUICK=1 for a short run, BENCH_ARGS=--no-doc to leave the docs
bench: module provider
	./scripts/deps.sh
	$(MAKE) -C tests/verbs
	./tests/bench/perftest-wire.sh $(BENCH_ARGS)

# the same tools in one guest, client and server sharing its two vCPUs
bench-shared: module provider
	./scripts/deps.sh
	./tests/bench/perftest.sh $(BENCH_ARGS)

# the NVMe-oF benchmark of record: fio on nvme-rdma (kiwi, siw) and nvme-tcp
# hosts in one guest against nvmet in another on one wire, paired rounds
# over several boots; KIWI_BENCH_QUICK=1 for a short run, BENCH_ARGS=--no-doc
# to leave the docs
bench-nvmeof: module
	./scripts/deps.sh
	./tests/bench/nvmeof-wire.sh $(BENCH_ARGS)

# the same comparison in one guest, host and target on a veth pair, rotating
# runs in one boot
bench-nvmeof-shared: module
	./tests/bench/nvmeof.sh $(BENCH_ARGS)

# iSER vs iSCSI/TCP and NFS/RDMA vs NFS/TCP, kiwi and siw, alternating runs
# in one boot; REPS rounds; BENCH_ARGS="--runtime 3 --ramp 1 --no-doc" for a
# quick try
REPS ?= 5
bench-storage: module
	./tests/bench/storage.sh --runs $(REPS) $(BENCH_ARGS)

# kernel memory per idle connected QP and per registered page, kiwi, siw, TCP
bench-memory: module provider
	./scripts/deps.sh
	$(MAKE) -C tests/verbs
	./tests/bench/memory.sh $(BENCH_ARGS)

print-kdir:
	@echo $(KDIR)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	-$(MAKE) -C userspace clean
	-$(MAKE) -C tests/unit clean
	-$(MAKE) -C tests/fuzz clean
