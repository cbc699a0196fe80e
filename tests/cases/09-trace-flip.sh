#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 900
# full-only: minutes of flips under TCG, for what patching a site does to the bench
#
# The bench's trace events (lib.sh's trace_events) flipped as the cases
# flip them: kiwi's events on and off 50 times after each of three rping
# -V runs of 2,000 pings, kc0 -> kc1 across the veth (kc1 in the
# namespace kiwiflip), with the events recording during the next run.
# Every ping is verified and the guest stays alive (a stall panics it:
# vm-run.sh).
#
# Why a case: CI's run of 15fadec went silent in 14-counters when it
# turned kiwi's events off.  Patching a site that another vCPU is running
# can stall a TCG guest: the vCPU keeps trapping on the int3 of a patch
# that is over.  Seen here: with record-cmd on (the default), the first
# event enabled and the last disabled also patch the scheduler's
# sched_switch site, which every vCPU runs all the time: 2 boots of 2
# stalled within 20 flips under rping (RCU stall, vCPU in asm_exc_int3 at
# __schedule+0x1bd, its memory holding the restored NOP).  With
# record-cmd off but kiwi's own sites flipped under traffic: no stall in
# 90 flips on one boot, a stall at a tracepoint NOP in kiwi_rx_chunk (in
# the softirq, under rping's post) within a minute on the next.  So trace_events turns
# record-cmd off and the cases flip events only while no connection runs.
# KIWI_FLIP_UNDER_LOAD=1 flips during the rpings instead, and
# KIWI_FLIP_RECORD_CMD=1 keeps record-cmd on: each shows the stall.
. "$(dirname "$0")/lib/lib.sh"

ns=kiwiflip
srv_ip=198.18.0.2
tmp=$(mktemp -d)
spid=
cpid=

cleanup() {
	for p in $cpid $spid; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	trace_events 0 kiwi > /dev/null 2>&1
	echo 1 > $KIWI_TR/options/record-cmd 2>/dev/null
	rdma_pair_teardown $ns kc1 kc0
	rm -rf "$tmp"
}
trap cleanup EXIT

setup() {
	kiwi_load &&
	kiwi_provider_env &&
	rdma_pair_setup $ns kc0 kiwi kc1 kiwi &&
	trace_events 1 kiwi &&
	echo 4096 > $KIWI_TR/buffer_size_kb &&
	echo 1 > $KIWI_TR/tracing_on
}

# flip VALUE: kiwi's events on or off (KIWI_FLIP_RECORD_CMD=1: with
# record-cmd on, to show the stall)
flip() {
	if [ "${KIWI_FLIP_RECORD_CMD:-0}" = 1 ]; then
		echo 1 > $KIWI_TR/options/record-cmd &&
		echo "$1" > $KIWI_TR/events/kiwi/enable
	else
		trace_events "$1" kiwi
	fi
}

# flips N: N times on and off (left on), the rping's stop ending them
flips() {
	local i=0
	while [ $i -lt "$1" ]; do
		flip 0 && flip 1 || return 1
		i=$((i + 1))
		[ -n "$cpid" ] && ! kill -0 $cpid 2>/dev/null && break
		[ -n "$cpid" ] && sleep 0.2
	done
	nflips=$((nflips + i))
}

# flip_round: one rping of 2,000 verified pings, the events recording;
# then the flips (during it with KIWI_FLIP_UNDER_LOAD=1)
flip_round() {
	local rc n0=$nflips pings
	echo > $KIWI_TR/trace
	ip netns exec $ns timeout 600 rping -s -a $srv_ip -C 2000 -S 64 -V \
		> $tmp/srv.log 2>&1 &
	spid=$!
	wait_for 60 tcp_listening $ns 7174
	timeout 600 rping -c -a $srv_ip -C 2000 -S 64 -V -v > $tmp/cli.log 2>&1 &
	cpid=$!
	[ "${KIWI_FLIP_UNDER_LOAD:-0}" = 1 ] && flips 1000000
	wait $cpid
	rc=$?
	cpid=
	wait $spid || rc=1
	spid=
	[ "${KIWI_FLIP_UNDER_LOAD:-0}" = 1 ] || flips 50 || rc=1
	# rping -V stops at the first ping whose data differs: the last one
	# printed and a zero exit say that all went
	grep -q 'ping data: rdma-ping-1999:' $tmp/cli.log && pings=2000 || pings=0
	echo "$((nflips - n0)) flips; $pings pings verified;" \
		"$(grep -c 'kiwi_wr_complete:' $KIWI_TR/trace) completions traced"
	[ $rc -eq 0 ] && [ $nflips -gt $n0 ] &&
		[ "$pings" -eq 2000 ] &&
		grep -q 'kiwi_wr_complete:' $KIWI_TR/trace ||
		{ head -n 5 $tmp/cli.log; tail -n 5 $tmp/srv.log $tmp/cli.log; return 1; }
}

nflips=0
ulimit -l unlimited
tap_check "setup: kiwi devices kc0 and kc1 on the two ends of the veth, tracing on" setup ||
	{ tap_done; exit; }
for r in 1 2 3; do
	tap_check "round $r: 2,000 verified pings traced, then kiwi's trace events flipped 50 times" \
		flip_round
done
tap_check "record-cmd stays off through trace_events" \
	grep -qx 0 $KIWI_TR/options/record-cmd
cleanup
trap - EXIT
tap_check "object counts back to zero" kiwi_counts_zero
tap_done
