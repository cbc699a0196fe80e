#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the reference siw driver (not shipped by Debian's kernel) from
# Debian's linux-source tarball, for the kernel the test VM boots.
# Result: tests/vm/out/siw/siw.ko.  Sources go to tests/vm/out/siw-src,
# which is git-ignored: siw's sources are never part of kiwi.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=$here/out
src=$out/siw-src
dst=$out/siw/siw.ko

kernel=$(ls -1 /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n1)
[ -n "$kernel" ] || { echo "build-siw: no /boot/vmlinuz-*-amd64" >&2; exit 1; }
kv=${kernel#/boot/vmlinuz-}
kdir=/lib/modules/$kv/build
[ -d "$kdir" ] || { echo "build-siw: no headers at $kdir (linux-headers-$kv)" >&2; exit 1; }
tarball=$(ls -1 /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1)
[ -n "$tarball" ] || { echo "build-siw: no /usr/src/linux-source-*.tar.xz (linux-source-6.1)" >&2; exit 1; }

# Up to date when built for this kernel from this tarball.
stamp="$kv $(stat -c %Y "$tarball") $(stat -c %Y "$kdir/Makefile" 2>/dev/null)"
if [ -f "$dst" ] && [ -f "$dst.stamp" ] && [ "$(cat "$dst.stamp")" = "$stamp" ]; then
	exit 0
fi

echo "build-siw: building siw.ko for $kv from $(basename "$tarball")"
rm -rf "$src"
mkdir -p "$src" "$(dirname "$dst")"
top=$(basename "$tarball" .tar.xz)
tar -xJf "$tarball" -C "$src" --strip-components=5 \
	"$top/drivers/infiniband/sw/siw"
[ -f "$src/Makefile" ] || { echo "build-siw: siw not found in $tarball" >&2; exit 1; }

make -s -C "$kdir" M="$src" CONFIG_RDMA_SIW=m modules
cp "$src/siw.ko" "$dst.tmp"
mv -f "$dst.tmp" "$dst"
echo "$stamp" > "$dst.stamp"
echo "build-siw: $dst"
