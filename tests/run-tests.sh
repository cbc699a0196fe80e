#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# kiwi's test suite (README's test command, `make test`):
#   deps    scripts/deps.sh
#   build   kiwi.ko (tests/vm/build-kiwi.sh: W=1, warnings are errors), make
#           provider, make -C tests/verbs and tests/adversary (-Wall -Wextra
#           -Werror in their Makefiles)
#   unit    make -C tests/unit test
#   fuzz    make -C tests/fuzz run FUZZ_SECONDS=30
#   host/*  every executable tests/host/*.sh
#   bench   tests/vm/selftest.sh: the VM bench reports failures it must
#   vm      tests/vm/build-siw.sh, then ONE QEMU boot running every
#           tests/cases/[0-9]*.sh in order (tests/vm/guest-suite.sh); each
#           must be listed in tests/cases/EXPECTED and executable, a
#           full-only one counts as skipped outside KIWI_FULL=1
# All of that is on Debian 12's 6.1 kernel.  Then the same tree on the 6.12
# series (Debian 13's), every line prefixed "6.12/":
#   6.12/build   kiwi.ko for 6.12 (tests/vm/build-kiwi.sh, as for 6.1), the
#                reference siw
#   6.12/host/*  sparse, checkpatch and DKMS against the 6.12 headers
#   6.12/*       ONE boot of 6.12 running the cases of KIWI_612_CASES: by
#                default the subset below, "all" for every case (make
#                test-6.12-full), "none" for no 6.12 pass at all
#   two-host     tests/vm/two-host.sh: a 6.1 guest and a 6.12 guest on one
#                virtual Ethernet wire, kiwi and siw across it (a subset;
#                KIWI_FULL=1 all of it); only when both kernels ran above,
#                KIWI_TWO_HOST=0 leaves it out
# KIWI_SUITE_KERNELS="6.12" leaves out the 6.1 unit, fuzz, host and VM
# stages (make test-6.12-full).
# Every TAP line is prefixed with its stage or case name.  A stage that is
# missing, exits non-zero, or prints no TAP result adds a "not ok" line.
# The failures are listed again before the last line, which is
# "N passed, N failed, N skipped" over all ok / not ok
# lines, an "ok ... # SKIP" line counting as skipped, not passed; the exit
# status is non-zero if anything failed.  KIWI_FULL=1 reaches the cases.
# FUZZ_SECONDS overrides the fuzzing time per target; KIWI_CASES_DIR another
# directory of VM cases (for testing the bench itself).
# The body is one compound command, read whole before it runs, so that
# editing this file cannot change a run that is under way.
{
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
logs=$root/tests/vm/out/suite/$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$logs"
# keep the newest 20 suite logs
ls -1dt "$root"/tests/vm/out/suite/*/ 2>/dev/null | tail -n +21 | xargs -r rm -rf
all=$logs/all.tap
: > "$all"
t0=$(date +%s)
fuzz_seconds=${FUZZ_SECONDS:-30}
# The 6.12 pass of the default run: one case of each kind that touches the
# kernel API (devices, verbs objects, data path, kernel ULP, mapped rings),
# about 20 minutes on a loaded host.  KIWI_612_CASES=all runs every case.
default_612_cases="00-bench-sanity 05-siw-reference 10-device-lifecycle
	12-device-removal 20-verbs-objects 35-datapath 50-nvmeof 60-fastpath"
cases_612=${KIWI_612_CASES:-$default_612_cases}
kernels=${KIWI_SUITE_KERNELS:-6.1 6.12}
[ "$cases_612" = none ] && kernels=${kernels//6.12/}
# The 6.1 stages boot the default kernel whatever the caller's KIWI_KVER.
unset KIWI_KVER

# The suite's time budget in seconds: CI kills a run at 90 minutes, so the
# default run stops itself at 85, still printing its summary with what it
# did not run.  0: none (the fuller targets, which take hours).
if [ -n "${KIWI_FULL:-}" ] || [ "$cases_612" = all ]; then
	budget=${KIWI_SUITE_BUDGET:-0}
else
	budget=${KIWI_SUITE_BUDGET:-5100}
fi

# left: seconds of the budget left, less a minute for the summary (a large
# number without a budget)
left() {
	[ "$budget" -gt 0 ] || { echo 999999; return; }
	echo $((budget - ($(date +%s) - t0) - 60))
}

# say LINE: print a line of the suite's output and keep it for the count.
say() {
	printf '%s\n' "$1"
	printf '%s\n' "$1" >> "$all"
}

# diag_tail FILE: the end of a log, as TAP comments.
diag_tail() {
	tail -n "${2:-25}" "$1" | sed 's/^/#   /'
}

# step STAGE DESC CMD...: one ok/not ok line for a command; its output goes
# to a log that is shown (its end) only when it fails.
step() {
	local stage=$1 desc=$2 log rc
	shift 2
	if [ "$(left)" -le 0 ]; then
		say "$stage: not ok - $desc: not run, the suite's time budget (${budget}s) is spent"
		return 1
	fi
	log=$logs/$(echo "$stage-$desc" | tr -c 'A-Za-z0-9_.-' '_').log
	"$@" > "$log" 2>&1 < /dev/null
	rc=$?
	if [ $rc -eq 0 ]; then
		say "$stage: ok - $desc"
	else
		say "$stage: not ok - $desc (exit status $rc; log $log)"
		diag_tail "$log"
	fi
	return $rc
}

# tap_stage STAGE TIMEOUT CMD...: run a command whose output is TAP; its TAP
# lines are shown prefixed, everything else goes to the log only.
tap_stage() {
	local stage=$1 tmo=$2 log rc results plan l
	shift 2
	l=$(left)
	if [ "$l" -le 0 ]; then
		say "$stage: not ok - not run: the suite's time budget (${budget}s) is spent"
		return
	fi
	[ "$tmo" -le "$l" ] || tmo=$l
	log=$logs/$(echo "$stage" | tr -c 'A-Za-z0-9_.-' '_').log
	echo "# $stage: $*"
	timeout -k 10 "$tmo" "$@" < /dev/null 2>&1 | tee "$log" |
		awk -v p="$stage" '/^(ok|not ok)([ \t]|$)|^1\.\.[0-9]+|^#|^Bail out!/ {
			print p ": " $0; fflush() }' | tee -a "$all"
	rc=${PIPESTATUS[0]}
	results=$(grep -cE '^(ok|not ok)([ 	]|$)' "$log")
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$log" | tail -n1)
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		say "$stage: not ok - timed out after ${tmo}s (log $log)"
		diag_tail "$log" 10
	elif [ $rc -ne 0 ]; then
		say "$stage: not ok - exit status $rc (log $log)"
		diag_tail "$log" 15
	fi
	if [ "$results" -eq 0 ]; then
		say "$stage: not ok - printed no TAP results (log $log)"
		[ $rc -eq 0 ] && diag_tail "$log" 15
	elif [ -z "$plan" ]; then
		say "$stage: not ok - printed no TAP plan (log $log)"
	elif [ "$plan" != "$results" ]; then
		say "$stage: not ok - plan 1..$plan but $results results"
	fi
}

# missing STAGE WHAT: a stage that cannot run yet is a failure, not a skip.
missing() {
	say "$1: not ok - $2 does not exist yet: stage cannot run"
}

echo "# kiwi test suite, logs in $logs"

# --- dependencies and build ---------------------------------------------
step deps "scripts/deps.sh" ./scripts/deps.sh
step build "kiwi.ko, warnings are errors (tests/vm/build-kiwi.sh)" tests/vm/build-kiwi.sh
step build "make provider" make provider
if [ -f tests/verbs/Makefile ]; then
	step build "make -C tests/verbs" make -C tests/verbs
	step build "make -C tests/adversary" make -C tests/adversary
else
	echo "# build: no tests/verbs/Makefile, no C verbs tests to build"
fi

# serial_trouble FILE: a dead or stalled guest's serial log from the first
# line kernel-bad.ere matches (its first trouble and the stacks after),
# else its end; printable characters only.
serial_trouble() {
	local first
	first=$(grep -naE "$(<tests/vm/kernel-bad.ere)" "$1" | head -n 1 | cut -d: -f1)
	if [ -n "$first" ]; then
		tail -n +"$((first > 5 ? first - 5 : 1))" "$1" | head -n 80
	else
		tail -n 40 "$1"
	fi | tr -cd '\11\12\40-\176'
}

# vm_stage PREFIX CASES_DIR: ONE boot running every executable
# CASES_DIR/[0-9]*.sh (guest-suite.sh), each case's lines as "PREFIXcase:",
# then the checks of what the guest did not finish and of the kernel log.
vm_stage() {
	local pfx=$1 dir=$2 c n total vmlog vrc rundir serial died aborted bad
	local clipped
	local cases=()
	total=0
	for c in "$dir"/[0-9]*.sh; do
		[ -e "$c" ] || continue
		n=$(basename "$c" .sh)
		# a case that cannot run is a failure, never a silent skip
		if [ ! -x "$c" ]; then
			say "$pfx$n: not ok - not executable: not run"
			continue
		fi
		# guest-suite.sh runs a "# full-only" case only with KIWI_FULL=1:
		# counted as skipped, so that the summary says so
		if [ "${KIWI_FULL:-0}" != 1 ] && tests/vm/case-full-only.sh "$c"; then
			say "$pfx$n: ok # SKIP in the fuller target only (make test-full)"
			continue
		fi
		cases+=("$n")
		total=$((total + $(tests/vm/case-timeout.sh "$c") + 20))
	done

	if [ ${#cases[@]} -eq 0 ]; then
		missing "${pfx}vm" "$dir/[0-9]*.sh"
		return
	fi
	# within the suite's budget: the cases the boot does not reach are
	# then listed below as not run
	clipped=
	if [ "$total" -gt "$(left)" ]; then
		total=$(left)
		clipped=1
		if [ "$total" -le 0 ]; then
			for n in "${cases[@]}"; do
				say "$pfx$n: not ok - not run: the suite's time budget (${budget}s) is spent"
			done
			return
		fi
	fi
	echo "# ${pfx}vm: one boot for ${#cases[@]} cases: ${cases[*]} (limit ${total}s)"
	vmlog=$logs/${pfx//\//-}vm.log
	KIWI_CASES_DIR=$dir tests/vm/vm-run.sh --timeout "$total" \
		--run-dir-file "$logs/${pfx//\//-}vm.rundir" \
		-- bash tests/vm/guest-suite.sh 2> "$logs/${pfx//\//-}vm-run.err" |
		tee "$vmlog" | while IFS= read -r l; do
			case "$l" in
			"=== "*) echo "# $pfx$l" ;;
			"# "*) say "# $pfx${l#\# }" ;;
			*) say "$pfx$l" ;;
			esac
		done
	vrc=${PIPESTATUS[0]}
	rundir=$(cat "$logs/${pfx//\//-}vm.rundir" 2>/dev/null)
	serial=${rundir:+$rundir/serial.log}
	[ -s "$logs/${pfx//\//-}vm-run.err" ] &&
		sed "s/^/# /" "$logs/${pfx//\//-}vm-run.err" | head -n 40

	# Cases the guest did not finish: the one it died in, and the rest.
	died=
	aborted=$(sed -n 's/^=== abort //p' "$vmlog" | head -n1)
	for n in "${cases[@]}"; do
		if grep -q "^=== end $n " "$vmlog" || [ "$n" = "$aborted" ]; then
			[ "$n" = "$aborted" ] && died=$n
			continue
		fi
		if grep -q "^=== begin $n " "$vmlog"; then
			died=$n
			if [ "$vrc" = 124 ] && [ -n "$clipped" ]; then
				say "$pfx$n: not ok - stopped by the suite's time budget (${budget}s) during this case (serial log $serial)"
			elif [ "$vrc" = 124 ]; then
				say "$pfx$n: not ok - the guest hung during this case and was killed (serial log $serial)"
			else
				say "$pfx$n: not ok - the guest died during this case (vm-run status $vrc; serial log $serial)"
			fi
		else
			say "$pfx$n: not ok - not run: the run stopped earlier${died:+ (in $died)}"
		fi
	done

	# The kernel log of the whole boot, including what no case owned.
	bad=$(<tests/vm/kernel-bad.ere)
	if [ -n "$serial" ] && [ -f "$serial" ]; then
		if grep -qaE "$bad" "$serial"; then
			say "${pfx}vm: not ok - the kernel log is clean (serial log $serial)"
			grep -aE "$bad" "$serial" | head -n 10 | sed 's/^/#   /'
		else
			say "${pfx}vm: ok - the kernel log is clean"
		fi
	else
		say "${pfx}vm: not ok - the VM did not start (see $logs/${pfx//\//-}vm-run.err)"
	fi
}

if [[ " $kernels " == *" 6.1 "* ]]; then
# --- host stages ------------------------------------------------------------
if [ -f tests/unit/Makefile ]; then
	tap_stage unit 900 make -s -C tests/unit test
else
	missing unit tests/unit/Makefile
fi
if [ -f tests/fuzz/Makefile ]; then
	tap_stage fuzz 1200 make -s -C tests/fuzz run FUZZ_SECONDS="$fuzz_seconds"
else
	missing fuzz tests/fuzz/Makefile
fi
for h in tests/host/*.sh; do
	[ -e "$h" ] || continue
	[ -x "$h" ] || { echo "# host: $h is not executable, not run"; continue; }
	tap_stage "host/$(basename "$h" .sh)" 900 "$h"
done

# --- the VM -------------------------------------------------------------------
# The bench first proves that it reports every kind of failure.
tap_stage bench 900 tests/vm/selftest.sh
step vm "build the reference siw.ko (tests/vm/build-siw.sh)" tests/vm/build-siw.sh
# The full matrix also pairs kiwi with a siw that asks for CRC, and runs
# 54-smb (Debian builds cifs and ksmbd without SMB Direct).
if [ -n "${KIWI_FULL:-}" ]; then
	step vm "build cifs.ko and ksmbd.ko with SMB Direct (tests/vm/build-smb.sh)" \
		tests/vm/build-smb.sh
	step vm "build the CRC-asking siw.ko (tests/bench/build-siw-crc.sh)" \
		tests/bench/build-siw-crc.sh
fi

# tests/cases/EXPECTED names every case: one deleted or renamed by mistake
# fails here instead of vanishing from the count.
if [ -z "${KIWI_CASES_DIR:-}" ]; then
	while IFS= read -r n; do
		[ -n "$n" ] && [ ! -e "tests/cases/$n.sh" ] &&
			say "vm/$n: not ok - listed in tests/cases/EXPECTED, missing"
	done < tests/cases/EXPECTED
	for c in tests/cases/[0-9]*.sh; do
		n=$(basename "$c" .sh)
		grep -qxF "$n" tests/cases/EXPECTED ||
			say "vm/$n: not ok - not listed in tests/cases/EXPECTED"
	done
fi
vm_stage "" "${KIWI_CASES_DIR:-tests/cases}"
fi

# --- the same tree on 6.12 ------------------------------------------------------
if [[ " $kernels " == *" 6.12 "* ]]; then
	export KIWI_KVER=6.12
	if kv612=$(tests/vm/kernel.sh kv 2>&1); then
	echo "# 6.12: kernel $kv612"
	step 6.12/build "kiwi.ko, warnings are errors (tests/vm/build-kiwi.sh)" \
		tests/vm/build-kiwi.sh
	tap_stage 6.12/host/check 900 tests/host/check.sh "/lib/modules/$kv612/build"
	tap_stage 6.12/host/dkms 900 tests/host/dkms.sh "$kv612"
	step 6.12/build "the reference siw.ko (tests/vm/build-siw.sh)" \
		tests/vm/build-siw.sh
	# for 54-smb and for the full two-host run's SMB Direct on the 6.12 guest
	if [ -n "${KIWI_FULL:-}" ]; then
		step 6.12/build "cifs.ko and ksmbd.ko with SMB Direct (tests/vm/build-smb.sh)" \
			tests/vm/build-smb.sh
	fi
	if [ -n "${KIWI_FULL:-}" ]; then
		step 6.12/build "the CRC-asking siw.ko (tests/bench/build-siw-crc.sh)" \
			tests/bench/build-siw-crc.sh
	fi
	# The chosen cases, as links beside a link to the cases' libraries
	# (they source "$(dirname "$0")/lib/...").
	dir612=$logs/cases-6.12
	cdir=$(cd "${KIWI_CASES_DIR:-$root/tests/cases}" && pwd)
	mkdir -p "$dir612"
	[ -d "$cdir/lib" ] && ln -sfn "$cdir/lib" "$dir612/lib"
	for c in "$cdir"/*.sh; do
		n=$(basename "$c" .sh)
		case "$n" in
		[0-9]*) if [ "$cases_612" != all ] &&
				! [[ " $(echo $cases_612) " == *" $n "* ]]; then
				say "6.12/$n: ok # SKIP not in the 6.12 subset of this target (KIWI_612_CASES; make test-6.12-full runs it)"
				continue
			fi ;;
		esac
		ln -sf "$c" "$dir612/"
	done
	for n in $cases_612; do
		[ "$n" = all ] || [ -e "$dir612/$n.sh" ] ||
			say "6.12/$n: not ok - no such case in ${KIWI_CASES_DIR:-tests/cases}"
	done
	vm_stage 6.12/ "$dir612"
	else
		say "6.12: not ok - a 6.12 kernel is installed (scripts/deps.sh): $kv612"
	fi
	unset KIWI_KVER
fi

# --- two hosts on one wire, 6.1 and 6.12 ----------------------------------------
# Needs what both passes built (kiwi.ko and siw.ko for each kernel).
if [[ " $kernels " == *" 6.1 "* ]] && [[ " $kernels " == *" 6.12 "* ]] &&
	[ "${KIWI_TWO_HOST:-1}" != 0 ]; then
	if [ -n "${KIWI_FULL:-}" ]; then
		tap_stage two-host 14400 tests/vm/two-host.sh
	else
		tap_stage two-host 2400 tests/vm/two-host.sh
	fi
fi

# A skip ("ok N - DESC # SKIP REASON") is counted as such, not as a pass.
skipped=$(grep -cE '^[^ ]+: ok( .*)?#[[:space:]]*[Ss][Kk][Ii][Pp]' "$all")
passed=$(( $(grep -cE '^[^ ]+: ok( |$)' "$all") - skipped ))
failed=$(grep -cE '^[^ ]+: not ok( |$)' "$all")
echo "# suite took $(( $(date +%s) - t0 ))s; logs in $logs"
# Repeat the failures at the end: a CI log is often read from its tail.
# Then, for the first few failing stages or cases, their own diagnostics
# (the case's "# NAME:" lines: its dmesg) and, where the guest died, the
# end of its serial log: what a reader of the tail needs to start.
if [ "$failed" -gt 0 ]; then
	echo "# the failures:"
	grep -E '^[^ ]+: not ok( |$)' "$all" | head -n 40 | sed 's/^/#   /'
	# the first few failures again, each with the diagnostics its case
	# printed under it (what a tap_check's command said)
	echo "# the first failures with their diagnostics:"
	awk '/^[^ ]+: not ok( |$)/ {
		show = n++ < 6 ? 12 : 0; st = $1
		if (show) print "#   " $0
		next
	}
	$1 == st && show > 0 && $2 == "#" { print "#   " $0; show--; next }
	$1 == st { show = 0 }' "$all"
	grep -E '^[^ ]+: not ok( |$)' "$all" | sed 's/: not ok.*//' | uniq |
		head -n 3 | while IFS= read -r st; do
		echo "# --- diagnostics of $st (last 30 lines):"
		grep -F "# $st: " "$all" | tail -n 30
	done
	grep -oE '(the guest (died|hung)|stopped by .*) during this case .*serial log [^)]+' "$all" |
		sed 's/.*serial log //' | sort -u | head -n 2 | while IFS= read -r f; do
		[ -f "$f" ] || continue
		echo "# --- $f, from its first trouble:"
		serial_trouble "$f" | sed 's/^/#   /'
	done
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
exit
}
