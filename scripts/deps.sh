#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Install what building and testing kiwi needs on Debian 12 (as root).
# Quiet and idempotent: does nothing when everything is present.
set -euo pipefail

pkgs=(
	build-essential make gcc clang libclang-rt-14-dev sparse dkms kmod
	linux-image-amd64 linux-headers-amd64 linux-source-6.1
	libelf-dev flex bison bc xz-utils cpio
	qemu-system-x86 busybox-static iproute2
	rdma-core libibverbs-dev librdmacm-dev ibverbs-utils ibverbs-providers
	rdmacm-utils perftest
	nvme-cli fio iperf3 sockperf gnuplot-nox gcovr python3
)

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
