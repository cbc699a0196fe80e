#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# A release as a new user gets it: `make dist`, the tarball unpacked in a
# directory with no .git, `make deb` there.  Both packages build and
# lintian reports no error (scripts/mkdeb.sh's own TAP, relayed), and they
# hold what the tarball's sources say they should: every file of its
# drivers/ and include/, Kbuild, Makefile and dkms.conf under
# /usr/src/kiwi-<version>, kiwi-links and its unit, the provider and its
# driver file.  Installing them in a guest is `make test-deb`
# (tests/vm/deb-test.sh).  Prints TAP.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - dist: $*"; }
notok() { n=$((n + 1)); echo "not ok $n - dist: $*"; fail=1; }
finish() { echo "1..$n"; exit $fail; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! ver=$("$root/scripts/version.sh") || ! dver=$("$root/scripts/version.sh" --debian); then
	notok "the version (scripts/version.sh)"
	finish
fi
tarball=$tmp/kiwi_$ver.orig.tar.gz
if make -s -C "$root" --no-print-directory dist >/dev/null 2>"$tmp/dist.err" &&
	cp "$root/out/kiwi_$ver.orig.tar.gz" "$tarball"; then
	ok "make dist wrote out/kiwi_$ver.orig.tar.gz"
else
	sed 's/^/# /' "$tmp/dist.err"
	notok "make dist wrote out/kiwi_$ver.orig.tar.gz"
	finish
fi
# Every entry under kiwi-<version>/, none of what git ignores.
bad=$(tar -tzf "$tarball" | grep -v "^kiwi-$ver/" | head -n3)
junk=$(tar -tzf "$tarball" | grep -E '\.(o|ko|so|cmd)$|/out/|/\.git/' | head -n3)
if [ -z "$bad" ] && [ -z "$junk" ]; then
	ok "every file under kiwi-$ver/, no build product"
else
	notok "every file under kiwi-$ver/, no build product: ${bad}${junk}"
fi

mkdir "$tmp/user"
tar -xzf "$tarball" -C "$tmp/user"
src=$tmp/user/kiwi-$ver
if [ -f "$src/debian/changelog" ] && [ -f "$src/dkms.conf" ] &&
	[ ! -e "$src/.git" ] && ! git -C "$src" rev-parse 2>/dev/null; then
	ok "unpacked: debian/changelog and dkms.conf, no git repository"
else
	notok "unpacked: debian/changelog and dkms.conf, no git repository"
	finish
fi

# make deb in the unpacked tree, its TAP relayed under our numbering.
make -s -C "$src" --no-print-directory deb >"$tmp/deb.log" 2>&1
rc=$?
while IFS= read -r l; do
	case $l in
	"ok "*) ok "make deb: ${l#ok * - deb: }" ;;
	"not ok "*) notok "make deb: ${l#not ok * - deb: }" ;;
	"#"*) echo "$l" ;;
	esac
done <"$tmp/deb.log"
if [ $rc != 0 ]; then
	notok "make deb in the unpacked tarball exits $rc"
	tail -n 20 "$tmp/deb.log" | sed 's/^/#   /'
	finish
fi

# has DEB PATH...: each PATH is in the package's file list.
has() {
	local deb=$1 p missing=
	shift
	dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's,^\./,/,' >"$tmp/list"
	for p in "$@"; do
		grep -qxF "$p" "$tmp/list" || missing="$missing $p"
	done
	[ -z "$missing" ] || { echo "# missing:$missing"; return 1; }
}
dkms_deb=$src/out/deb/kiwi-dkms_${dver}_all.deb
prov_deb=$src/out/deb/ibverbs-provider-kiwi_${dver}_amd64.deb
mapfile -t ksrc < <(cd "$src" && find drivers include -type f | sort)
if [ "${#ksrc[@]}" -gt 10 ] &&
	has "$dkms_deb" "${ksrc[@]/#//usr/src/kiwi-$ver/}" \
		"/usr/src/kiwi-$ver/Kbuild" "/usr/src/kiwi-$ver/Makefile" \
		"/usr/src/kiwi-$ver/dkms.conf"; then
	ok "kiwi-dkms: the tarball's ${#ksrc[@]} files of drivers/ and include/, Kbuild, Makefile, dkms.conf in /usr/src/kiwi-$ver"
else
	notok "kiwi-dkms: the tarball's ${#ksrc[@]} files of drivers/ and include/, Kbuild, Makefile, dkms.conf in /usr/src/kiwi-$ver"
fi
if has "$dkms_deb" /usr/libexec/kiwi/kiwi-links /etc/kiwi/links \
	/lib/systemd/system/kiwi-links.service \
	/lib/systemd/system/kiwi-links@.service \
	/lib/udev/rules.d/60-kiwi-links.rules; then
	ok "kiwi-dkms: kiwi-links, /etc/kiwi/links, kiwi-links.service and kiwi-links@.service, its udev rule"
else
	notok "kiwi-dkms: kiwi-links, /etc/kiwi/links, kiwi-links.service and kiwi-links@.service, its udev rule"
fi
if has "$prov_deb" /usr/lib/x86_64-linux-gnu/libibverbs/libkiwi-rdmav34.so \
	/etc/libibverbs.d/kiwi.driver; then
	ok "ibverbs-provider-kiwi: libkiwi-rdmav34.so and kiwi.driver"
else
	notok "ibverbs-provider-kiwi: libkiwi-rdmav34.so and kiwi.driver"
fi
finish
