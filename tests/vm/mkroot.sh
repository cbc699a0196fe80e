#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build (once, then reuse) a Debian root for the packaging test: a guest
# that boots this root instead of the host's (vm-run.sh with KIWI_VM_ROOT)
# can dpkg -i and purge kiwi's packages without touching the host.
#
#   tests/vm/mkroot.sh bookworm|trixie     prints the root's path
#
# The root, tests/vm/out/roots/<suite> (git-ignored), holds the suite's own
# kernel (linux-image-amd64, booted from the root's /boot), its headers,
# dkms, rdma-core and the tools the case uses, systemd (not as init:
# deb-guest.sh boots it in a PID namespace of its own to see it start
# kiwi-links.service), and what building kiwi's packages in it needs
# (build-essential, debhelper, dh-dkms, libibverbs-dev).
# It is rebuilt when the list of packages changes.  Needs root, mmdebstrap
# (scripts/deps.sh) and a Debian mirror: KIWI_MIRROR, default
# http://deb.debian.org/debian.
set -euo pipefail

suite=${1:-}
case "$suite" in
bookworm|trixie) ;;
*) echo "usage: $0 bookworm|trixie" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/out/roots/$suite
mirror=${KIWI_MIRROR:-http://deb.debian.org/debian}

pkgs=(
	linux-image-amd64 linux-headers-amd64 initramfs-tools kmod busybox
	dkms gcc make libc6-dev
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils iproute2 procps
	systemd
	build-essential debhelper libibverbs-dev fakeroot
)
# Debian 12 ships dh_dkms in dkms (and a dh-dkms shim); 13 in dh-dkms only.
pkgs+=(dh-dkms)
# The root is rebuilt when what it should hold changes.
recipe="$suite ${pkgs[*]}"
if [ "$(cat "$dir/.kiwi-root-done" 2>/dev/null)" = "$recipe" ]; then
	echo "$dir"
	exit 0
fi
command -v mmdebstrap >/dev/null ||
	{ echo "mkroot: mmdebstrap is missing (scripts/deps.sh installs it)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "mkroot: needs root" >&2; exit 1; }

rm -rf "$dir" "$dir.tmp"
mkdir -p "$(dirname "$dir")"
echo "mkroot: building the $suite root in $dir (a few minutes)" >&2
# The guest boots the kernel with vm-run.sh's initramfs, never the root's:
# update-initramfs is diverted to true (it takes minutes under load).
# The guest writes into an overlay above this root, never into it.
mmdebstrap --variant=minbase --mode=root --quiet \
	--include="$(IFS=,; echo "${pkgs[*]}")" \
	--aptopt='APT::Install-Recommends "false"' \
	--essential-hook='chroot "$1" dpkg-divert --local --rename --divert /usr/sbin/update-initramfs.kiwi --add /usr/sbin/update-initramfs && ln -s /bin/true "$1/usr/sbin/update-initramfs"' \
	"$suite" "$dir.tmp" "deb $mirror $suite main" >&2
mv "$dir.tmp" "$dir"
echo "$recipe" > "$dir/.kiwi-root-done"
echo "$dir"
