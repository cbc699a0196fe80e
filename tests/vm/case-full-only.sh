#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# case-full-only.sh CASE: succeeds if CASE has a "# full-only" line in its
# first 12 lines, i.e. runs only with KIWI_FULL=1 (guest-suite.sh, and
# run-tests.sh, which then does not expect it).  No pipe: run-tests.sh runs
# under pipefail.
exec awk 'FNR > 12 { exit 1 } /^# full-only/ { found = 1; exit } END { exit !found }' "$1"
