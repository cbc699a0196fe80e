#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Run each libFuzzer target for N seconds; one TAP line per target.
# Any crash, leak, UB report or timeout is a failure; its input is kept
# in build/findings/.
set -u
B=$1 SECS=$2
shift 2
n=0 fail=0
for t in "$@"; do
	n=$((n + 1))
	mkdir -p "$B/corpus/$t" "$B/findings"
	log="$B/$t.log"
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	"$B/$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$B/findings/$t-" \
		"$B/corpus/$t" "corpus/$t" > "$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n1 | cut -d' ' -f2)
	if [ $rc -eq 0 ] && ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' "$log"; then
		echo "ok $n - $t: ${runs:-?} inputs in ${SECS} s, ${cov:-?} coverage points, no finding"
	else
		echo "not ok $n - $t: finding (exit $rc), see tests/fuzz/$log and $B/findings/"
		grep -E 'ERROR|runtime error|SUMMARY' "$log" | head -n 5 | sed 's/^/# /'
		fail=1
	fi
done
echo "1..$n"
exit $fail
