#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build kiwi's two Debian packages, kiwi-dkms and ibverbs-provider-kiwi, with
# debian/ (debhelper, dh_dkms) from a copy of the tree's files, then run
# lintian on them.  Prints TAP; exits non-zero on a failed build or a
# lintian error (warnings are shown, not fatal).
#
#   scripts/mkdeb.sh [--root DIR] [OUTDIR]
#
# OUTDIR defaults to out/deb.  With --root, the build runs chrooted in DIR (a
# root made by tests/vm/mkroot.sh), so that the provider is built against
# that Debian release's rdma-core: Debian 13's packages come from there.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
chroot_dir=
if [ "${1:-}" = --root ]; then
	chroot_dir=$(cd "$2" && pwd) || exit 2
	shift 2
fi
out=${1:-$top/out/deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)

n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - deb: $*"; }
notok() { n=$((n + 1)); echo "not ok $n - deb: $*"; fail=1; }
finish() { echo "1..$n"; exit $fail; }

if ver=$("$top/scripts/version.sh") && dver=$("$top/scripts/version.sh" --debian); then
	ok "version $ver, Debian $dver (dkms.conf and debian/changelog agree)"
else
	notok "version (scripts/version.sh)"
	finish
fi

# The tree's source files (scripts/srcfiles.sh: git's list in a checkout,
# else what is there but build products), nothing built.
if [ -n "$chroot_dir" ]; then
	bdir=$chroot_dir/tmp/kiwi-deb
else
	bdir=$out/build
fi
rm -rf "$bdir"
src=$bdir/kiwi-$ver
mkdir -p "$src"
if ! (cd "$top" && scripts/srcfiles.sh | xargs -0 cp --parents -t "$src"); then
	notok "copy the source files into $src"
	rm -rf "$bdir"
	finish
fi
log=$out/build.log
if [ -n "$chroot_dir" ]; then
	# /proc for the compiler and dpkg; the root stays as mkroot.sh left it
	# but for /tmp/kiwi-deb, removed below.
	mount -t proc proc "$chroot_dir/proc" || { notok "mount proc in $chroot_dir"; finish; }
	chroot "$chroot_dir" /bin/sh -c \
		"cd /tmp/kiwi-deb/kiwi-$ver && dpkg-buildpackage -us -uc -b" >"$log" 2>&1
	rc=$?
	umount "$chroot_dir/proc"
else
	(cd "$src" && dpkg-buildpackage -us -uc -b) >"$log" 2>&1
	rc=$?
fi
if [ $rc = 0 ]; then
	ok "dpkg-buildpackage"
else
	notok "dpkg-buildpackage (log: $log)"
	tail -n 20 "$log" | sed 's/^/# /'
	rm -rf "$bdir"
	finish
fi
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
mv "$bdir"/*.deb "$bdir"/*.buildinfo "$bdir"/*.changes "$out"/
rm -rf "$bdir"
for p in kiwi-dkms ibverbs-provider-kiwi; do
	f=$(ls "$out/${p}_${dver}_"*.deb 2>/dev/null | head -n1)
	if [ -n "$f" ]; then ok "$(basename "$f")"; else notok "no $p package"; fi
done

# lintian on the host: its checks, not the build root's, judge both builds.
if ! command -v lintian >/dev/null; then
	notok "lintian is not installed (scripts/deps.sh installs it)"
	finish
fi
lintian --tag-display-limit 0 "$out"/*.changes >"$out/lintian.log" 2>&1
sed 's/^/# /' "$out/lintian.log"
if grep -q '^E: ' "$out/lintian.log"; then
	notok "lintian reports errors"
else
	ok "lintian: no error ($(grep -c '^W: ' "$out/lintian.log") warnings)"
fi
finish
