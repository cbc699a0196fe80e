#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make install DESTDIR=...` puts the module, the provider and its driver
# file where libibverbs and modprobe look for them.  Prints TAP.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
kver=$(make -s -C "$root" --no-print-directory print-kdir | cut -d/ -f4)
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
mkdir -p "$root/out"
fail=0
n=1
if make -C "$root" install DESTDIR="$dest" >"$root/out/install.log" 2>&1; then
	echo "ok $n - install: make install DESTDIR= succeeds"
else
	tail -n 15 "$root/out/install.log" | sed 's/^/# /'
	echo "not ok $n - install: make install DESTDIR= succeeds"
	fail=1
fi
for f in "lib/modules/$kver/updates/kiwi.ko" \
	 "usr/lib/x86_64-linux-gnu/libibverbs/libkiwi-rdmav34.so" \
	 "etc/libibverbs.d/kiwi.driver"; do
	n=$((n + 1))
	if [ -f "$dest/$f" ]; then
		echo "ok $n - install: /$f installed"
	else
		echo "not ok $n - install: /$f installed"
		fail=1
	fi
done
n=$((n + 1))
if grep -qx 'driver kiwi' "$dest/etc/libibverbs.d/kiwi.driver" 2>/dev/null; then
	echo "ok $n - install: kiwi.driver names the kiwi provider"
else
	echo "not ok $n - install: kiwi.driver names the kiwi provider"
	fail=1
fi
echo "1..$n"
exit $fail
