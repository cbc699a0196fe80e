#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# dkms add/build/remove of the release tarball (`make dist`, unpacked with
# no .git) against the installed Debian headers, as a user of the tarball
# would run it.  Prints TAP.
# Usage: tests/host/dkms.sh [KVER]   (default: `make print-kdir`'s, 6.1)
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
kver=${1:-$(make -s -C "$root" --no-print-directory print-kdir | cut -d/ -f4)}
ver=$("$root/scripts/version.sh") || exit 1
n=0
fail=0
t() { # t DESC CMD...: one TAP line for CMD's status
	local d=$1
	shift
	n=$((n + 1))
	if "$@" >>"$log" 2>&1; then
		echo "ok $n - dkms: $d"
	else
		echo "not ok $n - dkms: $d"
		tail -n 15 "$log" | sed 's/^/# /'
		fail=1
	fi
}

if ! command -v dkms >/dev/null; then
	echo "not ok 1 - dkms: dkms is not installed (scripts/deps.sh installs it)"
	echo "1..1"
	exit 1
fi
mkdir -p "$root/out"
log=$root/out/dkms.log
[ -z "${1:-}" ] || log=$root/out/dkms-$kver.log
: >"$log"
tmp=$(mktemp -d)
cleanup() {
	dkms remove "kiwi/$ver" --all >/dev/null 2>&1
	rm -rf "/usr/src/kiwi-$ver" "$tmp"
}
trap cleanup EXIT
cleanup

src=$tmp/kiwi-$ver
t "make dist, unpacked" sh -c "'$root/scripts/mkdist.sh' '$tmp' &&
	tar -xzf '$tmp/kiwi_$ver.orig.tar.gz' -C '$tmp' && [ ! -e '$src/.git' ]"
t "add" dkms add "$src"
t "build against $kver" dkms build "kiwi/$ver" -k "$kver"
n=$((n + 1))
built=$(find "/var/lib/dkms/kiwi/$ver/$kver" -name 'kiwi.ko*' 2>/dev/null | head -n1)
if [ -n "$built" ] && modinfo "$built" | grep -q "^vermagic: *$kver "; then
	echo "ok $n - dkms: built kiwi.ko has vermagic $kver"
else
	echo "not ok $n - dkms: built kiwi.ko has vermagic $kver (found '${built}')"
	fail=1
fi
t "remove" dkms remove "kiwi/$ver" --all
echo "1..$n"
exit $fail
