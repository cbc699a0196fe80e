#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make test-deb`: kiwi's Debian packages on Debian 12 and on Debian 13, each
# in a guest that boots a root of that release (mkroot.sh, cached) with its
# own kernel, so that installing and purging never touches the host:
#   bookworm  the packages of `make deb` (built on this Debian 12 host),
#             Debian 12's 6.1 kernel and rdma-core 44
#   trixie    the same tree built in the Debian 13 root (rdma-core 56's
#             libibverbs, gcc 14), into out/deb/trixie; its 6.12 kernel
# Each runs tests/vm/deb-guest.sh (dpkg -i, DKMS build in the guest,
# autoload, ibv_devinfo, rping, /etc/kiwi/links applied by kiwi-links.service's
# command, then by systemd booting in the guest and by udev for a late
# netdev, dpkg --purge, nothing left).
#
#   tests/vm/deb-test.sh [bookworm] [trixie]     (default: both)
#
# Prints each step's TAP prefixed with the release, then "N passed, N
# failed, N skipped".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top" || exit 1
suites=${*:-bookworm trixie}
all=$(mktemp)
trap 'rm -f "$all"' EXIT

# run PREFIX CMD...: CMD's TAP lines, prefixed, counted; a failing CMD or
# one without results counts as a failure.
run() {
	local p=$1 log rc
	shift
	log=$(mktemp)
	"$@" < /dev/null > "$log" 2>&1
	rc=$?
	grep -E '^(ok|not ok|#)' "$log" | sed "s|^|$p: |" | tee -a "$all"
	if [ $rc != 0 ] && ! grep -q '^not ok' "$log"; then
		echo "$p: not ok - exit status $rc" | tee -a "$all"
		tail -n 20 "$log" | sed 's/^/#   /'
	fi
	grep -qE '^(ok|not ok)' "$log" ||
		echo "$p: not ok - no results" | tee -a "$all"
	rm -f "$log"
}

for s in $suites; do
	case "$s" in
	bookworm) debdir=out/deb ;;
	trixie) debdir=out/deb/trixie ;;
	*) echo "deb-test: unknown release $s (bookworm, trixie)" >&2; exit 2 ;;
	esac
	if ! root=$("$here/mkroot.sh" "$s"); then
		echo "$s: not ok - the $s root (tests/vm/mkroot.sh $s)" | tee -a "$all"
		continue
	fi
	if [ "$s" = bookworm ]; then
		run "$s/deb" scripts/mkdeb.sh "$debdir"
	else
		run "$s/deb" scripts/mkdeb.sh --root "$root" "$debdir"
	fi
	KIWI_VM_ROOT=$root run "$s/guest" \
		"$here/vm-run.sh" --timeout "${KIWI_DEB_TIMEOUT:-2400}" -- \
		bash tests/vm/deb-guest.sh "$top/$debdir"
done

# A skip ("ok N - DESC # SKIP REASON") is counted as such, not as a pass.
skipped=$(grep -cE '^[^ ]+: ok( .*)?#[[:space:]]*[Ss][Kk][Ii][Pp]' "$all")
passed=$(( $(grep -cE '^[^ ]+: ok( |$)' "$all") - skipped ))
failed=$(grep -cE '^[^ ]+: not ok( |$)' "$all")
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
