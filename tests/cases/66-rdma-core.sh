#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 600
#
# rdma-core's own test suite (Debian's python3-pyverbs running the tests/
# directory of rdma-core's source, run_tests.py) on a kiwi device over
# veth0, when KIWI_RDMA_CORE_TESTS names that tests directory; its release
# must match the installed pyverbs (v44.0 for Debian 12's 44.0).  Skipped,
# with the reason, when the variable is unset.  Asserts that the run
# reaches its summary with 0 failures and 0 errors and prints the counts
# (ok, skipped, failed, errors); kiwi's object counts are zero afterwards.
# Not part of the repository: rdma-core's tests are fetched by whoever
# runs this (Documentation/testing.md).
. "$(dirname "$0")/lib/lib.sh"

dir=${KIWI_RDMA_CORE_TESTS:-}
py=/usr/bin/python3	# Debian's, where python3-pyverbs is installed

if [ -z "$dir" ]; then
	tap_skip "rdma-core run_tests.py on kiwi" \
		"KIWI_RDMA_CORE_TESTS unset (rdma-core's tests/ directory)"
	tap_done
fi
if [ ! -f "$dir/run_tests.py" ]; then
	tap_fail "KIWI_RDMA_CORE_TESTS=$dir holds run_tests.py"
	tap_done
fi
if ! "$py" -c 'import pyverbs.device' 2>/dev/null; then
	tap_fail "pyverbs importable by $py (python3-pyverbs)"
	tap_done
fi

# The whole run's output stays in the work tree (git-ignored), one file
# per kernel, for reading each test's verdict and skip reason.
out=$KIWI_ROOT/tests/vm/out/rdma-core/run_tests-$(uname -r).log
mkdir -p "${out%/*}" || { tap_fail "${out%/*} writable"; tap_done; }
cleanup() {
	rdma link del kiwi0 2>/dev/null
	veth_teardown
}
trap cleanup EXIT

kiwi_provider_env
tap_check "setup: kiwi0 on veth0" eval \
	'kiwi_load && veth_setup && rdma link add kiwi0 type kiwi netdev veth0'
tap_check "kiwi0's port is active" \
	wait_for 20 sh -c 'ibv_devinfo -d kiwi0 | grep -q PORT_ACTIVE'

# No bytecode beside the sources (the host's root is read-only here).
# The case's own time limit is the guard against a hang.
(cd /tmp && PYTHONDONTWRITEBYTECODE=1 "$py" "$dir/run_tests.py" \
	--dev kiwi0 -v) > "$out" 2>&1
rc=$?

# unittest's last lines: "Ran N tests in Ts", then "OK (skipped=S)" or
# "FAILED (failures=F, errors=E, skipped=S)".
ran=$(sed -n 's/^Ran \([0-9][0-9]*\) tests\? in .*/\1/p' "$out" | tail -n1)
verdict=$(grep -E '^(OK|FAILED)( \(.*\))?$' "$out" | tail -n1)
count() {
	local n
	# "(" or ", " before the name: "failures" is not "expected failures"
	n=$(printf '%s\n' "$verdict" |
		sed -n "s/.*\((\|, \)$1=\([0-9][0-9]*\).*/\2/p")
	echo "${n:-0}"
}
failed=$(count failures)
errors=$(count errors)
skipped=$(count skipped)
xfail=$(count 'expected failures')
xpass=$(count 'unexpected successes')

if [ -n "$ran" ] && [ -n "$verdict" ]; then
	tap_ok "run_tests.py --dev kiwi0 ran to its summary ($ran tests, status $rc)"
else
	tap_fail "run_tests.py --dev kiwi0 ran to its summary (status $rc)"
	tap_diag "$(tail -n 40 "$out")"
	tap_done
fi
okn=$((ran - failed - errors - skipped - xfail - xpass))
counts="ok $okn, skipped $skipped, failed $failed, errors $errors"
[ "$xfail$xpass" = 00 ] ||
	counts="$counts, expected failures $xfail, unexpected successes $xpass"
if [ "$failed" = 0 ] && [ "$errors" = 0 ] && [ "$rc" = 0 ]; then
	tap_ok "rdma-core tests: 0 failures, 0 errors ($counts)"
else
	tap_fail "rdma-core tests: 0 failures, 0 errors ($counts)"
	# Each failing test's report: from its ===== header to the next.
	tap_diag "$(sed -n '/^=\{20,\}$/,$p' "$out" | head -n 300)"
fi
tap_diag "the whole output: ${out#"$KIWI_ROOT"/}"

tap_check "rdma link del kiwi0" rdma link del kiwi0
tap_check "kiwi object counts back to zero" kiwi_counts_zero
tap_done
