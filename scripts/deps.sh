#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Install what building and testing kiwi needs on Debian 12 (as root).
# Quiet and idempotent: does nothing when everything is present.
# Two kernels: Debian 12's own 6.1, and the newest 6.12 that apt lists
# (linux-image-6.12.N+deb12-amd64-unsigned from Debian 12's security archive,
# the series of Debian 13), each with its headers and linux-source.
set -euo pipefail

pkgs=(
	build-essential make gcc clang libclang-rt-14-dev sparse dkms kmod
	linux-image-amd64 linux-headers-amd64 linux-source-6.1
	linux-source-6.12 dwarves
	libelf-dev flex bison bc xz-utils cpio
	qemu-system-x86 busybox-static iproute2
	rdma-core libibverbs-dev librdmacm-dev ibverbs-utils ibverbs-providers
	rdmacm-utils perftest python3-pyverbs
	libfabric-bin qperf openmpi-bin libopenmpi3 python3-mpi4py
	nvme-cli nfs-kernel-server nfs-common rpcbind ksmbd-tools cifs-utils fio iperf3 sockperf gnuplot-nox gcovr python3 iputils-ping
	debhelper dh-dkms lintian mmdebstrap
	open-iscsi
)

# 6.12.N: whichever is installed (newest), else the newest apt knows.
# (dpkg-query fails when no such package is known at all: not an error.)
v612=$({ dpkg-query -W -f='${Package} ${Status}\n' \
	'linux-image-6.12.*+deb12-amd64-unsigned' 2>/dev/null || true; } | sed -n 's/^linux-image-\(6\.12\.[0-9]*\)+deb12-amd64-unsigned .* ok installed$/\1/p' |
	sort -V | tail -n1)
if [ -z "$v612" ]; then
	[ "$(id -u)" != 0 ] || apt-get update -qq
	v612=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' |
		sed -n 's/^linux-image-\(6\.12\.[0-9]*\)+deb12-amd64-unsigned .*/\1/p' |
		sort -V | tail -n1)
	[ -n "$v612" ] || {
		echo "kiwi: apt lists no linux-image-6.12.*+deb12-amd64-unsigned (is bookworm-security in sources.list?)" >&2
		exit 1
	}
fi
# linux-headers-*-amd64 brings its -common and linux-kbuild.
pkgs+=("linux-image-$v612+deb12-amd64-unsigned" "linux-headers-$v612+deb12-amd64")

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "kiwi: missing packages: ${missing[*]} (run as root to install)" >&2
	exit 1
fi
echo "kiwi: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
