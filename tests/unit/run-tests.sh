#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Run the protocol core's unit tests: the TAP of the coverage build, one
# TAP line for the sanitizer build, one for line coverage; then the plan.
set -u
B=$1 TOP=$2 MIN=$3
fail=0
extra=0

rm -f "$B"/cov/*.gcda
out=$(KIWI_TAP_NOPLAN=1 "$B"/cov/test_proto)
rc=$?
echo "$out" | grep -v '^# .* passed, .* failed$'
n=$(echo "$out" | grep -cE '^(not )?ok ')
[ $rc -eq 0 ] || fail=1

n=$((n + 1))
if KIWI_TAP_NOPLAN=1 "$B"/san/test_proto > "$B"/san/out.tap 2>&1; then
	echo "ok $n - the same tests under ASan and UBSan: no finding"
else
	echo "not ok $n - the same tests under ASan and UBSan (see $B/san/out.tap)"
	fail=1
	extra=$((extra + 1))
fi

n=$((n + 1))
# gcovr replaces its output file (it would turn /dev/null into a plain file)
sum=$(cd "$TOP" && gcovr -r "$TOP" --object-directory "$TOP/tests/unit/$B/cov" \
	--filter 'drivers/kiwi/proto/' --print-summary \
	-o "$TOP/tests/unit/$B/cov/report.txt" 2>/dev/null |
	grep '^lines:')
pct=$(echo "$sum" | sed -n 's/^lines: \([0-9.]*\)%.*/\1/p')
echo "# coverage of drivers/kiwi/proto (gcov): $sum"
if [ -n "$pct" ] && awk -v p="$pct" -v m="$MIN" 'BEGIN { exit !(p >= m) }'; then
	echo "ok $n - line coverage ${pct}% >= ${MIN}%"
else
	echo "not ok $n - line coverage ${pct:-unknown}% >= ${MIN}%"
	fail=1
	extra=$((extra + 1))
fi
nf=$(( $(echo "$out" | grep -c '^not ok ') + extra ))
echo "# $((n - nf)) passed, $nf failed"
echo "1..$n"
exit $fail
