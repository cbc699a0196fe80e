#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 600
# timeout-full: 900
#
# Removing a kiwi device that processes hold: a verbs program with PD, CQ,
# MR and QP and its rings mapped (tests/verbs/device-removal), an
# `rping -s -P' server listening, and a connected rping pair in the middle
# of its transfer.  Three ways: `rdma link del', `rmmod kiwi' and, with
# KIWI_FULL=1, deleting the netdev under the device.  Each time the
# removal completes within $RM_LIMIT seconds per device, the program sees
# IBV_EVENT_DEVICE_FATAL, finds every later post failing and every poll
# empty, destroys its objects, closes the device and exits 0; the rpings
# exit (with an error) instead of hanging; kiwi's object counts return to
# zero and the kernel log stays clean.  Documentation/module.md, "Removal
# while processes hold the device".
. "$(dirname "$0")/lib/lib.sh"

PROG=$KIWI_ROOT/tests/verbs/build/device-removal
# seconds a device's removal may take (rmmod removes both devices in
# turn: twice that); KIWI_TIMEOUT_SCALE stretches it on a busy host
RM_LIMIT=$((${KIWI_RM_LIMIT:-20} * ${KIWI_TIMEOUT_SCALE:-1}))
# what a process may take to notice and exit once the device is gone
EXIT_LIMIT=30
tmp=/tmp/devrm
mkdir -p $tmp
sysib=/sys/class/infiniband
BAD=$(<"$KIWI_ROOT/tests/vm/kernel-bad.ere")
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	rdma link del kiwi0 2>/dev/null
	rdma link del kiwi1 2>/dev/null
	veth_teardown
}
trap cleanup EXIT

dmesg_mark() { DMESG_LINE=$(dmesg | wc -l); }
dmesg_clean() {
	local out
	out=$(dmesg | tail -n +"$((DMESG_LINE + 1))" |
		grep -E -- "$BAD|kiwi.*leaked")
	[ -z "$out" ] && return 0
	printf '%s\n' "$out" | head -n 20
	return 1
}
ceps() { awk '$1 == "ceps" { print $2 }' "$KIWI_OBJECTS" 2>/dev/null; }
ceps_at_least() { [ "$(ceps)" -ge "$1" ] 2>/dev/null; }
lines_at_least() { [ "$(grep -c "$2" "$1" 2>/dev/null)" -ge "$3" ]; }

# setup: kiwi0 on veth0 (198.18.0.1), kiwi1 on veth1 (198.18.0.2)
setup() {
	kiwi_load && veth_setup &&
		rdma link add kiwi0 type kiwi netdev veth0 &&
		rdma link add kiwi1 type kiwi netdev veth1 &&
		wait_for 10 grep -q ACTIVE $sysib/kiwi1/ports/1/state &&
		wait_for 10 grep -q ACTIVE $sysib/kiwi0/ports/1/state
}

# cut_short STATUS LOG: an rping of 1,000,000 pings stopped before its end.
# It exits non-zero when the device goes (DEVICE_REMOVAL, a failed post),
# but 0 when it saw its connection DISCONNECTED first (rping's own rule:
# "wait for ... state 10", then success).  Which comes first for the end
# whose device goes second is a race: rmmod removes both devices, and the
# first removal closes the other end's connection.
cut_short() {
	[ "$1" != hung ] || return 1
	[ "$1" != 0 ] || grep -q "state 10\$" "$2"
}

# holders TAG: on kiwi1, (a) the verbs program waiting for async events,
# (b) `rping -s -P' listening on 7201, (c) rping -C 1000000 from kiwi0 to
# a server on kiwi1 port 7202, seen moving data (-v lines) before return.
holders() {
	local t=$1
	rm -f $tmp/$t.*
	# shellcheck disable=SC2086
	DONE_FILE=$tmp/$t.done
	timeout -k 5 120 stdbuf -oL "$PROG" kiwi1 $tmp/$t.ready 90 \
		"$DONE_FILE" > $tmp/$t.prog 2>&1 &
	PROG_PID=$!
	rping -s -P -a 198.18.0.2 -p 7201 > $tmp/$t.rps 2>&1 &
	RPS_PID=$!
	rping -s -a 198.18.0.2 -p 7202 -C 1000000 -S 4096 > $tmp/$t.srv 2>&1 &
	SRV_PID=$!
	PIDS+=("$PROG_PID" "$RPS_PID" "$SRV_PID")
	wait_for 30 test -e $tmp/$t.ready || { cat $tmp/$t.prog; return 1; }
	wait_for 30 tcp_listening "" 7201 || { cat $tmp/$t.rps; return 1; }
	wait_for 30 tcp_listening "" 7202 || { cat $tmp/$t.srv; return 1; }
	stdbuf -oL rping -c -v -a 198.18.0.2 -p 7202 -C 1000000 -S 4096 \
		> $tmp/$t.cli 2>&1 &
	CLI_PID=$!
	PIDS+=("$CLI_PID")
	# two listeners, the client's connection and the accepted one, and
	# pings going through it
	wait_for 30 ceps_at_least 4 &&
		wait_for 30 lines_at_least $tmp/$t.cli 'ping data' 20 ||
		{ cat $KIWI_OBJECTS; tail -n 5 $tmp/$t.cli $tmp/$t.srv; return 1; }
}

# reap PID SECONDS: wait for PID to exit; STATUS is its exit status, or
# "hung" (then it is killed) if it still runs after SECONDS.
reap() {
	local end=$((SECONDS + $2))
	while kill -0 "$1" 2>/dev/null; do
		if [ $SECONDS -ge $end ]; then
			kill -9 "$1" 2>/dev/null
			wait "$1" 2>/dev/null
			STATUS=hung
			return 1
		fi
		sleep 0.2
	done
	wait "$1" 2>/dev/null
	STATUS=$?
}

# timed_removal DESC WAITCMD CMD...: run CMD (in the background: on a
# kernel that waits for the holders it blocks in D state, where no signal
# reaches it), then WAITCMD until it holds; ok if CMD succeeded and WAITCMD
# held within RM_LIMIT seconds.  If not, the holders are killed so that
# the removal can end, and the check fails.
timed_removal() {
	local desc=$1 waitcmd=$2 start rc=done took p
	shift 2
	start=$(date +%s%N)
	"$@" > $tmp/rm.log 2>&1 &
	local rpid=$!
	while kill -0 $rpid 2>/dev/null; do
		took=$((($(date +%s%N) - start) / 1000000))
		[ $took -lt $((RM_LIMIT * 1000)) ] || { rc=hung; break; }
		sleep 0.1
	done
	local cmd_ms=
	if [ $rc = done ]; then
		wait $rpid
		rc=$?
		cmd_ms=$((($(date +%s%N) - start) / 1000000))
		# the verbs program checks what follows removal from now on
		touch "$DONE_FILE"
		# wait_for scales its limit itself; RM_LIMIT is scaled already
		if [ $rc = 0 ] && wait_for "$((RM_LIMIT / ${KIWI_TIMEOUT_SCALE:-1}))" $waitcmd; then
			took=$((($(date +%s%N) - start) / 1000000))
			if [ $took -le $((RM_LIMIT * 1000)) ]; then
				tap_ok "$desc: done in $took ms (the command $cmd_ms ms)"
				return 0
			fi
		fi
	fi
	took=$((($(date +%s%N) - start) / 1000000))
	tap_fail "$desc within ${RM_LIMIT} s"
	tap_diag "status $rc after $took ms (the command ${cmd_ms:-did not end}${cmd_ms:+ ms}); killing the holders" \
		"$(cat $tmp/rm.log)" "$(ls $sysib; cat $KIWI_OBJECTS)"
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	# a blocked removal ends once its holders are gone
	wait $rpid
	wait_for 60 $waitcmd
	return 1
}

# after_removal TAG: what each holder saw.
after_removal() {
	local t=$1
	if reap "$PROG_PID" $EXIT_LIMIT && [ "$STATUS" = 0 ]; then
		tap_ok "$t: the verbs program exits 0"
	else
		tap_fail "$t: the verbs program exits 0 (status $STATUS)"
	fi
	# its own checks: the event, failing posts, destroys, close
	tap_relay "$t: " $tmp/$t.prog || tap_fail "$t: the program's TAP is complete"
	reap "$RPS_PID" $EXIT_LIMIT
	if [ "$STATUS" != hung ] && [ "$STATUS" != 0 ]; then
		tap_ok "$t: rping -s -P exits with an error (status $STATUS)"
	else
		tap_fail "$t: rping -s -P exits with an error (status $STATUS)"
		tap_diag "$(tail -n 5 $tmp/$t.rps)"
	fi
	reap "$SRV_PID" $EXIT_LIMIT
	local s=$STATUS
	reap "$CLI_PID" $EXIT_LIMIT
	if cut_short "$s" $tmp/$t.srv && cut_short "$STATUS" $tmp/$t.cli; then
		tap_ok "$t: the rping pair stops mid-transfer: an error or DISCONNECTED (server $s, client $STATUS)"
	else
		tap_fail "$t: the rping pair stops mid-transfer: an error or DISCONNECTED (server $s, client $STATUS)"
		tap_diag "$(tail -n 3 $tmp/$t.srv)" "$(tail -n 3 $tmp/$t.cli)"
	fi
	PIDS=()
}

kiwi_provider_env
ulimit -l unlimited
[ -x "$PROG" ] || { tap_fail "$PROG is built"; tap_done; }

# --- rdma link del ------------------------------------------------------------
dmesg_mark
tap_check "link del: kiwi0 and kiwi1 on a veth pair" setup
tap_check "link del: the holders are up and the rping pair is moving data" holders del
timed_removal "rdma link del kiwi1 while held" "test ! -e $sysib/kiwi1" \
	rdma link del kiwi1
after_removal del
rdma link del kiwi0 2>/dev/null
tap_check "link del: object counts back to zero" wait_for 15 kiwi_counts_zero
tap_check "link del: kernel log clean" dmesg_clean
veth_teardown

# --- the netdev under the device deleted ------------------------------------------
# The same unregistration as rdma link del, queued by kiwi's netdev
# notifier: a minute or two under TCG, so in the long run only.
if [ "${KIWI_FULL:-0}" = 1 ]; then
	dmesg_mark
	tap_check "netdev del: kiwi0 and kiwi1 on a veth pair" setup
	tap_check "netdev del: the holders are up and the rping pair is moving data" holders netdev
	# deleting veth1 deletes its peer veth0 too: both devices go
	timed_removal "ip link del veth1 while kiwi1 is held" \
		"test ! -e $sysib/kiwi1 -a ! -e $sysib/kiwi0" ip link del veth1
	after_removal netdev
	tap_check "netdev del: object counts back to zero" wait_for 15 kiwi_counts_zero
	tap_check "netdev del: kernel log clean" dmesg_clean
fi

# --- rmmod kiwi ------------------------------------------------------------------
dmesg_mark
tap_check "rmmod: kiwi0 and kiwi1 on a veth pair" setup
tap_check "rmmod: the holders are up and the rping pair is moving data" holders rmmod
# kiwi takes no module reference for an open device: rmmod unregisters
# the devices, which disassociates their users, and the module goes
RM_LIMIT=$((RM_LIMIT * 2)) timed_removal "rmmod kiwi (two devices) while kiwi1 is held" \
	"test ! -d /sys/module/kiwi" rmmod kiwi
after_removal rmmod
tap_check "rmmod: kernel log clean, no object reported leaked" dmesg_clean
tap_check "rmmod: kiwi.ko loads again" kiwi_load
tap_check "rmmod: object counts zero after the reload" kiwi_counts_zero
tap_check "rmmod: kiwi.ko unloads" kiwi_unload
tap_done
