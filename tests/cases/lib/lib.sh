# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Helpers for the test cases that run inside the VM (tests/vm/vm-run.sh).
# Source it from a case script:  . "$(dirname "$0")/lib/lib.sh"
#
# TAP: tap_ok DESC, tap_fail DESC, tap_skip DESC REASON, tap_check DESC
# CMD..., tap_check_fails DESC CMD..., tap_check_err DESC REGEX CMD...,
# tap_diag TEXT, tap_relay PREFIX FILE, tap_done.
# Setup: kiwi_load, kiwi_unload, siw_load, siw_unload, veth_setup,
# veth_ns_setup, veth_ns_move, veth_teardown, rdma_pair_setup,
# rdma_pair_teardown, kiwi_counts_zero,
# kiwi_provider_env.  Waiting: wait_for SECONDS CMD..., wait_alive SECONDS
# PID CMD..., pid_gone PID, tcp_listening NS PORT.

: "${KIWI_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}"
export KIWI_ROOT
KIWI_KO=${KIWI_KO:-$KIWI_ROOT/kiwi.ko}
KIWI_SIW_KO=${KIWI_SIW_KO:-$KIWI_ROOT/tests/vm/out/siw/siw.ko}
KIWI_PROVIDER_DIR=${KIWI_PROVIDER_DIR:-$KIWI_ROOT/userspace/build}
KIWI_OBJECTS=/sys/kernel/debug/kiwi/objects

_tap_n=0
_tap_failed=0

tap_diag() {
	printf '%s\n' "$@" | sed 's/^/# /'
}

tap_ok() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n - $*"
}

tap_fail() {
	_tap_n=$((_tap_n + 1))
	_tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n - $*"
}

# tap_skip DESC REASON: a test that cannot run here, "ok N - DESC # SKIP
# REASON" (TAP's directive: harnesses count it as a skip, not a pass).
tap_skip() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n - $1 # SKIP $2"
}

# The tap_check* helpers run CMD in the current shell (not a subshell), so
# a function they check may set variables for the rest of the script; its
# output goes to a file and is shown only on failure.
_tap_out=
_tap_run() {
	[ -n "$_tap_out" ] || _tap_out=$(mktemp /tmp/tap-out.XXXXXX)
	"$@" > "$_tap_out" 2>&1
}

# tap_check DESC CMD...: ok when CMD succeeds; its output is shown on failure.
tap_check() {
	local desc=$1 outp rc
	shift
	_tap_run "$@"
	rc=$?
	outp=$(cat "$_tap_out")
	if [ $rc -eq 0 ]; then
		tap_ok "$desc"
	else
		tap_fail "$desc"
		tap_diag "command: $*" "exit status: $rc"
		[ -n "$outp" ] && printf '%s\n' "$outp" | head -n 40 | sed 's/^/#   /'
	fi
	return $rc
}

# tap_check_fails DESC CMD...: ok when CMD fails (exits non-zero).
tap_check_fails() {
	local desc=$1 outp rc
	shift
	_tap_run "$@"
	rc=$?
	outp=$(cat "$_tap_out")
	if [ $rc -ne 0 ]; then
		tap_ok "$desc"
		return 0
	fi
	tap_fail "$desc"
	tap_diag "command unexpectedly succeeded: $*"
	[ -n "$outp" ] && printf '%s\n' "$outp" | head -n 40 | sed 's/^/#   /'
	return 1
}

# tap_check_err DESC REGEX CMD...: ok when CMD fails and its output matches
# the extended regular expression REGEX (an error message, an errno name).
tap_check_err() {
	local desc=$1 re=$2 outp rc
	shift 2
	_tap_run "$@"
	rc=$?
	outp=$(cat "$_tap_out")
	if [ $rc -ne 0 ] && printf '%s\n' "$outp" | grep -qiE -- "$re"; then
		tap_ok "$desc"
		return 0
	fi
	tap_fail "$desc"
	tap_diag "command: $*" "exit status: $rc, expected failure matching /$re/"
	[ -n "$outp" ] && printf '%s\n' "$outp" | head -n 40 | sed 's/^/#   /'
	return 1
}

# tap_done: print the plan and exit non-zero if any test failed (or none ran).
tap_done() {
	[ -n "$_tap_out" ] && rm -f "$_tap_out"
	echo "1..$_tap_n"
	[ "$_tap_n" -gt 0 ] || { tap_diag "no tests ran"; exit 1; }
	[ "$_tap_failed" -eq 0 ] || exit 1
	exit 0
}

# Load the modules a .ko depends on (modinfo knows them) plus the RDMA core
# the tests use, so that insmod cannot fail for a missing symbol.
_kiwi_modprobe_deps() {
	local ko=$1 m
	modprobe -a ib_core ib_uverbs iw_cm rdma_cm rdma_ucm || return 1
	for m in $(modinfo -F depends "$ko" 2>/dev/null | tr ',' ' '); do
		modprobe "$m" || return 1
	done
}

# In a test guest (booted with panic_on_warn, not a benchmark's), CRC
# copies hold the vector registers per FPDU as they do on a CPU with
# AVX-512 (debugfs crc_run_hold): the emulated CPU has none, and the
# suite then checks that nothing sleeps while they are held.
kiwi_load() {
	[ -d /sys/module/kiwi ] && return 0
	[ -f "$KIWI_KO" ] || { echo "kiwi_load: $KIWI_KO not built" >&2; return 1; }
	_kiwi_modprobe_deps "$KIWI_KO" || return 1
	insmod "$KIWI_KO" || return 1
	if grep -qw panic_on_warn=1 /proc/cmdline; then
		echo Y > /sys/kernel/debug/kiwi/crc_run_hold || return 1
	fi
}

kiwi_unload() {
	[ -d /sys/module/kiwi ] || return 0
	rmmod kiwi
}

siw_load() {
	[ -d /sys/module/siw ] && return 0
	[ -f "$KIWI_SIW_KO" ] || {
		echo "siw_load: $KIWI_SIW_KO missing (tests/vm/build-siw.sh)" >&2
		return 1
	}
	_kiwi_modprobe_deps "$KIWI_SIW_KO" || return 1
	insmod "$KIWI_SIW_KO"
}

siw_unload() {
	[ -d /sys/module/siw ] || return 0
	rmmod siw
}

# veth0 198.18.0.1/24 <-> veth1 198.18.0.2/24, both up; recreated if present.
veth_setup() {
	modprobe veth || return 1
	ip link del veth0 2>/dev/null
	ip link add veth0 type veth peer name veth1 || return 1
	ip addr add 198.18.0.1/24 dev veth0 &&
	ip addr add 198.18.0.2/24 dev veth1 &&
	ip link set veth0 up &&
	ip link set veth1 up
}

# veth_ns_setup NS: veth_setup, then veth_ns_move NS: two ends whose
# traffic must cross the veth.
veth_ns_setup() {
	veth_setup && veth_ns_move "$1"
}

# veth_ns_move NS: veth1 moved into a new network namespace NS with
# 198.18.0.2/24 (a move drops its addresses), up, and NS's loopback up.
veth_ns_move() {
	ip netns add "$1" &&
	ip link set veth1 netns "$1" &&
	ip netns exec "$1" ip addr add 198.18.0.2/24 dev veth1 &&
	ip netns exec "$1" ip link set veth1 up &&
	ip netns exec "$1" ip link set lo up
}

veth_teardown() {
	ip link del veth0 2>/dev/null
	return 0
}

# rdma_pair_setup NS DEV0 TYPE0 DEV1 TYPE1: veth_ns_setup NS, then the RDMA
# device DEV0 of TYPE0 (kiwi, siw) on veth0 here and DEV1 of TYPE1 on veth1
# in NS: two ends whose traffic must cross the veth.
rdma_pair_setup() {
	veth_ns_setup "$1" &&
	rdma link add "$2" type "$3" netdev veth0 &&
	ip netns exec "$1" rdma link add "$4" type "$5" netdev veth1
}

# rdma_pair_teardown NS DEV...: each DEV that exists deleted (in NS or
# here), then NS and the veth; what is missing is no error.  The processes
# in NS are the caller's to end first.
rdma_pair_teardown() {
	local ns=$1 d
	shift
	for d in "$@"; do
		ip netns exec "$ns" rdma link del "$d" 2>/dev/null ||
			rdma link del "$d" 2>/dev/null
	done
	ip netns del "$ns" 2>/dev/null
	veth_teardown
}

# kiwi_count NAME: one of kiwi's debugfs object counts (qps, mrs, ceps...)
kiwi_count() {
	awk -v n="$1" '$1 == n { print $2 }' "$KIWI_OBJECTS"
}

# Every "name count" line of kiwi's debugfs object counters must be 0.
kiwi_counts_zero() {
	local name count bad=0 lines=0
	[ -r "$KIWI_OBJECTS" ] || { echo "kiwi_counts_zero: no $KIWI_OBJECTS" >&2; return 1; }
	while read -r name count _; do
		[ -n "$name" ] || continue
		lines=$((lines + 1))
		if [ "$count" != 0 ]; then
			echo "kiwi_counts_zero: $name = $count" >&2
			bad=1
		fi
	done < "$KIWI_OBJECTS"
	[ "$lines" -gt 0 ] || { echo "kiwi_counts_zero: $KIWI_OBJECTS is empty" >&2; return 1; }
	return $bad
}

# set_mpa_crc POLICY DEV...: each kiwi device's MPA CRC policy for new
# connections (off, preferred, required).
set_mpa_crc() {
	local pol=$1 d
	shift
	for d in "$@"; do
		echo "$pol" > "/sys/class/infiniband/$d/mpa_crc" || return 1
	done
}

# crc_pass_counts DEV...: "COPY PASS", the sums over the DEVs of their
# tx_crc_copy_bytes (payload copied into kiwi's pages with its CRC in the
# same pass) and tx_crc_pass_bytes (payload CRC'd in a pass of its own)
crc_pass_counts() {
	local d c=0 p=0 hw
	for d in "$@"; do
		hw=/sys/class/infiniband/$d/ports/1/hw_counters
		c=$((c + $(cat $hw/tx_crc_copy_bytes)))
		p=$((p + $(cat $hw/tx_crc_pass_bytes)))
	done
	echo "$c $p"
}

# crc_one_pass CRC MINCOPY "COPY0 PASS0" DEV...: since COPY0 PASS0
# (crc_pass_counts), no payload byte was CRC'd in a pass apart from its
# copy, and with CRC (CRC not "off") at least MINCOPY bytes were copied
# with it into kiwi's pages, none without CRC.
crc_one_pass() {
	local crc=$1 min=$2 c0 p0 c p
	read -r c0 p0 <<< "$3"
	shift 3
	read -r c p <<< "$(crc_pass_counts "$@")"
	c=$((c - c0))
	p=$((p - p0))
	echo "tx_crc_copy_bytes +$c, tx_crc_pass_bytes +$p (crc $crc, want copy >= $min)"
	[ $p -eq 0 ] || return 1
	if [ "$crc" = off ]; then
		[ $c -eq 0 ]
	else
		[ $c -ge "$min" ]
	fi
}

# Let libibverbs find kiwi's provider from the build tree when it is not
# installed (rdma-core honours RDMAV_DRIVERS for an absolute path prefix).
kiwi_provider_env() {
	if [ -e "$KIWI_PROVIDER_DIR/libkiwi-rdmav34.so" ]; then
		export RDMAV_DRIVERS=$KIWI_PROVIDER_DIR/libkiwi
	fi
}

# wait_for SECONDS CMD...: poll CMD until it succeeds (netdev events, device
# removal and disconnects are asynchronous); the last try speaks, so that a
# failure shows why.  SECONDS times KIWI_TIMEOUT_SCALE, as the cases' own
# limits (a busy host).
wait_for() {
	local end=$((SECONDS + $1 * ${KIWI_TIMEOUT_SCALE:-1}))
	shift
	while ! "$@" > /dev/null 2>&1; do
		[ $SECONDS -lt $end ] || { "$@"; return 1; }
		sleep 0.2
	done
}

# wait_alive SECONDS PID CMD...: wait_for CMD, giving up as soon as the
# process PID has gone (a server that died will never listen).
wait_alive() {
	local end=$((SECONDS + $1 * ${KIWI_TIMEOUT_SCALE:-1})) pid=$2
	shift 2
	while ! "$@" > /dev/null 2>&1; do
		if ! kill -0 "$pid" 2> /dev/null || [ $SECONDS -ge $end ]; then
			"$@"
			return
		fi
		sleep 0.2
	done
}

# pid_gone PID: process PID has exited (for wait_for).
pid_gone() {
	! kill -0 "$1" 2> /dev/null
}

# trace_events VALUE EVENT...: VALUE (0 or 1) into each event's enable
# file under $KIWI_TR (EVENT: a system, "kiwi", or one event,
# "kiwi/kiwi_rtr_sent"), tracefs mounted if need be.  record-cmd goes off
# first: with it on, enabling the first event and disabling the last also
# patch the scheduler's sched_switch tracepoint, a site both vCPUs run all
# the time, and TCG may let a vCPU keep running a stale translation of a
# site being patched: it traps on the int3 for ever after the patch ended
# (an RCU stall with the vCPU in asm_exc_int3 at __schedule, its memory
# holding the restored NOP; tests/cases/09-trace-flip.sh).  The events' own
# sites are patched all the same, so cases flip them while that code is
# idle.
KIWI_TR=/sys/kernel/tracing
trace_events() {
	local v=$1 e
	shift
	[ -d $KIWI_TR/events ] || mount -t tracefs nodev $KIWI_TR 2>/dev/null
	[ -d $KIWI_TR/events ] || { echo "no tracefs at $KIWI_TR"; return 1; }
	echo 0 > $KIWI_TR/options/record-cmd || return 1
	for e in "$@"; do
		[ -f "$KIWI_TR/events/$e/enable" ] ||
			{ echo "no trace event $e"; return 1; }
		echo "$v" > "$KIWI_TR/events/$e/enable" || return 1
	done
}

# tcp_listening NS PORT: something listens on TCP port PORT in network
# namespace NS ("" for this one).  kiwi listens with kernel sockets, so a
# server has returned from rdma_listen() once this holds (for wait_for).
tcp_listening() {
	${1:+ip netns exec "$1"} ss -Htln "sport = :$2" | grep -q .
}

# tap_relay PREFIX FILE: renumber the TAP of a test program (saved in FILE)
# into this case's, each description after PREFIX; comment lines pass, other
# output becomes diagnostics.  Succeeds only if FILE holds a plan line, so a
# program that crashed half-way is noticed.
tap_relay() {
	local prefix=$1 file=$2 line plan=0
	while IFS= read -r line; do
		case $line in
		"ok "*) tap_ok "$prefix${line#ok * - }" ;;
		"not ok "*) tap_fail "$prefix${line#not ok * - }" ;;
		1..*) plan=1 ;;
		"#"*) printf '%s\n' "$line" ;;
		*) tap_diag "$line" ;;
		esac
	done < "$file"
	[ "$plan" = 1 ]
}

# tap_built PROGRAM: a test, ok when the C test program (tests/verbs) is built.
tap_built() {
	tap_check "${1##*/} is built (make -C tests/verbs)" test -x "$1"
}

# tap_program LABEL SECONDS CMD...: run a C test program (killed after
# SECONDS), relay its TAP with "LABEL: " before each description, then one
# test of its own: it exits 0 and printed its plan (a crash half-way has
# none).
tap_program() {
	local label=$1 tmo=$2 out rc
	shift 2
	out=$(mktemp /tmp/tap-program.XXXXXX)
	timeout "$tmo" "$@" > "$out" 2>&1
	rc=$?
	if tap_relay "$label: " "$out" && [ "$rc" -eq 0 ]; then
		tap_ok "$label: ${1##*/} exits 0 with a plan"
	else
		tap_fail "$label: ${1##*/} exits 0 with a plan (status $rc)"
	fi
	rm -f "$out"
}
