#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the reference siw driver (not shipped by Debian's kernel) from
# Debian's linux-source tarball, for the kernel the test VM boots
# (KIWI_KVER: 6.1 by default, or 6.12; see tests/vm/kernel.sh).
#
#   build-siw.sh         tests/vm/out/siw/siw.ko, siw as Debian's source has it
#   build-siw.sh --crc   tests/vm/out/siw-crc/siw.ko, the same source with its
#                        compile-time mpa_crc_required set to true: siw in
#                        Linux 6.1 and 6.12 has no module parameter for CRC,
#                        so the CRC-on reference (siw to siw with CRC) needs it
# For a kernel other than 6.1 both go to out/kernel/<version>/ instead.
#
# Sources go to tests/vm/out/siw-src (siw-crc-src), git-ignored: siw's
# sources are never part of kiwi.  Runs on the host, before the VM boots.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
name=siw
case "${1:-}" in
"") ;;
--crc) name=siw-crc ;;
*) echo "usage: $0 [--crc]" >&2; exit 2 ;;
esac
# The kernel the VM boots (KIWI_KVER, tests/vm/kernel.sh).
. "$here/kernel.sh" || exit 1
kv=$kiwi_kv
kdir=$kiwi_kdir
tarball=$kiwi_tarball
src=$kiwi_siw_dir/$name-src
dst=$kiwi_siw_dir/$name/siw.ko
[ -d "$kdir" ] || { echo "build-$name: no headers at $kdir (linux-headers-$kv)" >&2; exit 1; }
[ -f "$tarball" ] || { echo "build-$name: no $tarball (linux-source-$kiwi_series)" >&2; exit 1; }

# Up to date when built for this kernel from this tarball.
stamp="$kv $(stat -c %Y "$tarball") $(stat -c %Y "$kdir/Makefile" 2>/dev/null)"
[ "$name" = siw ] || stamp="$stamp crc"
if [ -f "$dst" ] && [ -f "$dst.stamp" ] && [ "$(cat "$dst.stamp")" = "$stamp" ]; then
	exit 0
fi

echo "build-$name: building siw.ko for $kv from $(basename "$tarball")"
rm -rf "$src"
mkdir -p "$src" "$(dirname "$dst")"
top=$(basename "$tarball" .tar.xz)
tar -xJf "$tarball" -C "$src" --strip-components=5 \
	"$top/drivers/infiniband/sw/siw"
[ -f "$src/Makefile" ] || { echo "build-$name: siw not found in $tarball" >&2; exit 1; }
if [ "$name" = siw-crc ]; then
	grep -q '^const bool mpa_crc_required;' "$src/siw_main.c" || {
		echo "build-$name: siw_main.c has no 'const bool mpa_crc_required;'" >&2
		exit 1
	}
	sed -i 's/^const bool mpa_crc_required;/const bool mpa_crc_required = true;/' \
		"$src/siw_main.c"
fi

make -s -C "$kdir" M="$src" CONFIG_RDMA_SIW=m modules
cp "$src/siw.ko" "$dst.tmp"
mv -f "$dst.tmp" "$dst"
echo "$stamp" > "$dst.stamp"
echo "build-$name: $dst"
