#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Print the time limit in seconds of a case script: its "# timeout: SEC"
# line within the first 10 lines, or with KIWI_FULL=1 its "# timeout-full:
# SEC" line when it has one; 300 without either.  KIWI_TIMEOUT_SCALE=N
# multiplies it (for a host busy with other work).
f=$1
get() {
	head -n 10 "$f" |
		sed -n "s/^#[[:space:]]*$1:[[:space:]]*\([0-9][0-9]*\).*/\1/p" |
		head -n1
}
t=
[ "${KIWI_FULL:-0}" = 1 ] && t=$(get timeout-full)
[ -n "$t" ] || t=$(get timeout)
scale=${KIWI_TIMEOUT_SCALE:-1}
case "$scale" in ''|*[!0-9]*) scale=1 ;; esac
echo $(( ${t:-300} * scale ))
