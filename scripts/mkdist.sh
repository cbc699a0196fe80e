#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make dist`: the release tarball kiwi_<version>.orig.tar.gz, the tree's
# source files (scripts/srcfiles.sh) under kiwi-<version>/, debian/
# included.  Unpacked, it builds as the git checkout does, without .git:
# `make`, `make deb`, `dkms add .`, and Debian's own way, dpkg-buildpackage
# next to the tarball (source format 3.0 (quilt)).
#
#   scripts/mkdist.sh [OUTDIR]     (default: out/)
#
# The archive is reproducible: sorted names, owner root, every mtime that
# of the newest debian/changelog entry, gzip without a timestamp.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
ver=$("$top/scripts/version.sh")
out=${1:-$top/out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tarball=$out/kiwi_$ver.orig.tar.gz
stamp=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Timestamp)

trap 'rm -f "$tarball.tmp"' EXIT
"$top/scripts/srcfiles.sh" | sort -z |
	tar -C "$top" -c --format=gnu --no-recursion --sort=name \
		--owner=0 --group=0 --numeric-owner --mtime="@$stamp" \
		--transform="s,^,kiwi-$ver/," --null -T - |
	gzip -n -9 > "$tarball.tmp"
mv "$tarball.tmp" "$tarball"
echo "$tarball"
