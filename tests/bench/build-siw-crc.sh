#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build a second reference siw that asks for MPA CRC itself: tests/vm/out/
# siw-crc/siw.ko.  siw in Linux 6.1 has no module parameter for CRC (its
# mpa_crc_required and mpa_crc_strict are compile-time constants, false), so
# the CRC-on reference (siw to siw with CRC) needs this build.  It is
# Debian's siw source with that one constant set to true; the source stays
# in tests/vm/out/siw-crc-src, git-ignored.  Run it on the host, before
# booting the VM (the NVMe-oF cases skip what needs it when it is absent).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/tests/vm/out
src=$out/siw-crc-src
dst=$out/siw-crc/siw.ko

kernel=$(ls -1 /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n1)
[ -n "$kernel" ] || { echo "build-siw-crc: no /boot/vmlinuz-*-amd64" >&2; exit 1; }
kv=${kernel#/boot/vmlinuz-}
kdir=/lib/modules/$kv/build
[ -d "$kdir" ] || { echo "build-siw-crc: no headers at $kdir" >&2; exit 1; }
tarball=$(ls -1 /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1)
[ -n "$tarball" ] || { echo "build-siw-crc: no /usr/src/linux-source-*.tar.xz" >&2; exit 1; }

stamp="$kv $(stat -c %Y "$tarball") $(stat -c %Y "$kdir/Makefile" 2>/dev/null) crc"
if [ -f "$dst" ] && [ -f "$dst.stamp" ] && [ "$(cat "$dst.stamp")" = "$stamp" ]; then
	exit 0
fi

echo "build-siw-crc: building siw.ko (mpa_crc_required = true) for $kv"
rm -rf "$src"
mkdir -p "$src" "$(dirname "$dst")"
top=$(basename "$tarball" .tar.xz)
tar -xJf "$tarball" -C "$src" --strip-components=5 \
	"$top/drivers/infiniband/sw/siw"
grep -q '^const bool mpa_crc_required;' "$src/siw_main.c" || {
	echo "build-siw-crc: siw_main.c has no 'const bool mpa_crc_required;'" >&2
	exit 1
}
sed -i 's/^const bool mpa_crc_required;/const bool mpa_crc_required = true;/' \
	"$src/siw_main.c"
make -s -C "$kdir" M="$src" CONFIG_RDMA_SIW=m modules
cp "$src/siw.ko" "$dst.tmp"
mv -f "$dst.tmp" "$dst"
echo "$stamp" > "$dst.stamp"
echo "build-siw-crc: $dst"
