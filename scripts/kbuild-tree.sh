#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Make DIR a build tree of kiwi.ko for Kbuild's M=: the Kbuild file and
# every kernel source as a symbolic link to the work tree, so that objects
# for a second kernel never overwrite those in the work tree (Kbuild before
# 6.13 writes an external module's objects next to its sources).
# Usage: scripts/kbuild-tree.sh DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: $0 DIR}
mkdir -p "$dir"
# Links to sources that are gone would still be compiled (Kbuild's wildcard).
find "$dir" -type l -delete
ln -s "$root/Kbuild" "$dir/Kbuild"
cd "$root"
for f in drivers/kiwi/*.[ch] drivers/kiwi/*/*.[ch] include/uapi/*.h; do
	mkdir -p "$dir/$(dirname "$f")"
	ln -s "$root/$f" "$dir/$f"
done
