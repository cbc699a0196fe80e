#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Static checks of the kernel sources: sparse (C=2), the floors of the
# module's objects (scripts/layers.py) and checkpatch.
# Prints TAP; exits non-zero when either finds anything in our sources.
# Usage: scripts/check.sh [KDIR]
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# the headers a plain `make` builds against: not those of a `make check
# KDIR=...` calling us, whose KDIR reaches sub-makes through MAKEFLAGS
default_kdir() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u KDIR \
		make -s -C "$root" --no-print-directory print-kdir
}
kdir=${1:-$(default_kdir)}
out=$root/out/check
mkdir -p "$out"

# checkpatch.pl is not in the headers package; take it from the linux-source
# of the same series as the headers (6.1, 6.12), else the newest one.
series=$(sed -n 's/^#define UTS_RELEASE "\([0-9]*\.[0-9]*\).*/\1/p' \
	"$kdir/include/generated/utsrelease.h" 2>/dev/null)
tarball=/usr/src/linux-source-$series.tar.xz
[ -n "$series" ] && [ -f "$tarball" ] ||
	tarball=$(ls -1 /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1)
if [ -z "$tarball" ]; then
	echo "not ok 1 - checkpatch: no /usr/src/linux-source-*.tar.xz (apt-get install linux-source)"
	echo "1..1"
	exit 1
fi
cp_dir=$out/checkpatch
[ "$tarball" = /usr/src/linux-source-6.1.tar.xz ] ||
	cp_dir=$out/checkpatch-$(basename "$tarball" .tar.xz)
if [ ! -x "$cp_dir/scripts/checkpatch.pl" ]; then
	top=$(basename "$tarball" .tar.xz)
	mkdir -p "$cp_dir"
	tar -xJf "$tarball" -C "$cp_dir" --strip-components=1 \
		"$top/scripts/checkpatch.pl" "$top/scripts/spelling.txt" \
		"$top/scripts/const_structs.checkpatch"
fi

n=0
fail=0
srcs=$(cd "$root" && ls drivers/kiwi/*.[ch] drivers/kiwi/*/*.[ch] \
	include/uapi/*.h 2>/dev/null)

# Headers other than `make`'s default (another kernel): build in a tree of
# links, so that the work tree keeps its objects for the default kernel.
m=$root
if [ "$(readlink -f "$kdir")" != "$(readlink -f "$(default_kdir)")" ]; then
	m=$out/tree-$(echo "$kdir" | tr -c 'A-Za-z0-9_.+-' '_')
	"$root/scripts/kbuild-tree.sh" "$m"
fi

n=$((n + 1))
make -C "$kdir" M="$m" C=2 modules >"$out/sparse.log" 2>&1
rc=$?
grep -E '(warning|error):' "$out/sparse.log" | grep -E "$m/(drivers|include)/" \
	>"$out/sparse.findings"
if [ $rc -eq 0 ] && [ ! -s "$out/sparse.findings" ]; then
	echo "ok $n - sparse (C=2) clean on kiwi sources ($kdir)"
else
	sed 's/^/# /' "$out/sparse.findings"
	[ $rc -ne 0 ] && tail -n 20 "$out/sparse.log" | sed 's/^/# /'
	echo "not ok $n - sparse (C=2) clean on kiwi sources ($kdir)"
	fail=1
fi

# The floors, from the objects the sparse build left (scripts/layers.py).
if [ $rc -eq 0 ]; then
	while IFS= read -r line; do
		case $line in
		"ok "* | "not ok "*)
			n=$((n + 1))
			echo "${line/ok - /ok $n - }"
			case $line in "not ok "*) fail=1 ;; esac
			;;
		*) echo "$line" ;;
		esac
	done < <(python3 "$root/scripts/layers.py" "$m")
else
	n=$((n + 1))
	echo "not ok $n - floors: no objects (the build failed)"
	fail=1
fi

n=$((n + 1))
(cd "$root" && perl "$cp_dir/scripts/checkpatch.pl" --no-tree --quiet \
	--show-types --terse -f $srcs --ignore FILE_PATH_CHANGES) \
	>"$out/checkpatch.log" 2>&1
if ! grep -qE '(ERROR|WARNING|CHECK):' "$out/checkpatch.log"; then
	echo "ok $n - checkpatch ($(basename "$tarball" .tar.xz)) clean on kiwi sources"
else
	grep -E '(ERROR|WARNING|CHECK):' "$out/checkpatch.log" | sed 's/^/# /'
	echo "not ok $n - checkpatch ($(basename "$tarball" .tar.xz)) clean on kiwi sources"
	fail=1
fi
echo "1..$n"
exit $fail
