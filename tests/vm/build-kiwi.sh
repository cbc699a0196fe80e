#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build kiwi.ko for the kernel the test VM boots (KIWI_KVER, see
# tests/vm/kernel.sh) and print its path.  For the default 6.1 kernel that
# is `make module` in the work tree (./kiwi.ko); for another kernel the
# module is built in out/kernel/<version>/tree, a tree of links to the
# sources (scripts/kbuild-tree.sh), and copied to out/kernel/<version>/.
# Any compiler warning fails the build, W=1's (-Wextra) included: testing.md
# promises a warning-free kiwi.ko on both kernels and this is where the
# suite builds it.  The flags are part of Kbuild's command line, so a tree
# built without them is recompiled, never passed on its old objects.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/kernel.sh" || exit 1
[ -d "$kiwi_kdir" ] || { echo "build-kiwi: no headers at $kiwi_kdir (linux-headers-$kiwi_kv)" >&2; exit 1; }
if [ "$kiwi_kiwi_ko" = "$root/kiwi.ko" ]; then
	make -C "$root" module KVER="$kiwi_kv" W=1 KCFLAGS=-Werror >&2
else
	tree=$(dirname "$kiwi_kiwi_ko")/tree
	"$root/scripts/kbuild-tree.sh" "$tree"
	make -C "$kiwi_kdir" M="$tree" W=1 KCFLAGS=-Werror modules >&2
	cp "$tree/kiwi.ko" "$kiwi_kiwi_ko.tmp"
	mv -f "$kiwi_kiwi_ko.tmp" "$kiwi_kiwi_ko"
fi
echo "$kiwi_kiwi_ko"
