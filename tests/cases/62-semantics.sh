#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 420
# timeout-full: 2100
#
# Verbs semantics from user space, kiwi to kiwi across the veth pair with
# the server end in a network namespace: tests/verbs/build/semantics runs
# every scenario (SQ full, local protection errors, remote access
# violations and the error completions, events, QP states and disconnects
# they bring at both ends, Writes and Reads that a QP's access flags deny
# or allow, a Read into a sink without remote write (refused as iWARP
# RNICs refuse it with the device's rnic_strict 1, the default, read as
# siw reads it with 0: Documentation/rnic-compat.md), posts beyond a
# QP's (SRQ's) own SGE and inline caps refused with EINVAL and such WQEs
# written into the mapped rings completed in error (group qpcaps,
# rnic-compat.md), zero-length
# operations, the SGE limits, what the storage
# protocols ask of the device (its limits, a QP of 840 send WRs and 6
# SGEs filled in one chain, the IRD/ORD a listener is offered), 64 MiB
# messages, a child process killed in the middle of a stream, send queue
# completions in posting order behind Reads and zero-copy Writes).  Its
# TAP lines are renumbered into this script's.  Afterwards kiwi's object
# counts are zero.  The completion order is checked again with siw as the
# responder (kiwi is the requester).  KIWI_FULL=1 adds a run with MPA CRC
# required, the 32 MiB refused Write, and the remote access scenarios
# against siw as the responder (siw sends the Terminates).  Then the
# process scribbles on its own mapped rings (seeded; 20 s, and four more
# seeds for 2 minutes each with KIWI_FULL=1) while rping -V runs between
# the same devices in other processes, which must not notice.  Then
# random verbs call sequences from several processes (verbs-fuzz, 15 s;
# four more seeds for 2 minutes each with KIWI_FULL=1).
. "$(dirname "$0")/lib/lib.sh"

ns=kiwisem
bin=$KIWI_ROOT/tests/verbs/build/semantics
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cleanup() {
	ip netns pids $ns 2>/dev/null | xargs -r kill -9 2>/dev/null
	rdma_pair_teardown $ns kiwisem1 siwsem1 kiwisem0
}

# setup TYPE: kiwi on veth0, TYPE (kiwi or siw) on veth1 in the namespace
setup() {
	local peer=kiwisem1
	[ "$1" = siw ] && peer=siwsem1
	kiwi_load &&
	{ [ "$1" != siw ] || siw_load; } &&
	rdma_pair_setup $ns kiwisem0 kiwi $peer "$1"
}

set_crc() {
	set_mpa_crc "$1" kiwisem0 kiwisem1
}

# run LABEL ARGS...: the program's TAP, renumbered; a crash or a missing
# plan fails too.
run() {
	local label=$1
	shift
	tap_program "$label" 600 "$bin" -c 198.18.0.1 -s 198.18.0.2 \
		-n /var/run/netns/$ns "$@"
}

kiwi_provider_env
tap_built "$bin" || tap_done

cleanup
tap_check "setup: kiwi on both ends of the veth, server in a netns" \
	setup kiwi
run kiwi -p 20886
if [ -n "${KIWI_FULL:-}" ]; then
	tap_check "mpa_crc=required on both devices" set_crc required
	run "kiwi crc" -p 20887 -t access,zero,sge,large -L
	set_crc off
fi

# ringfuzz SEED SECS: the process scribbles on its own rings (semantics -t
# ringfuzz) while rping -V loops between the same two devices in other
# processes; every rping run must pass: only the fuzzing process's QPs
# may break.
ringfuzz() {
	local seed=$1 secs=$2 pass=0 fail=0 rc
	rm -f "$tmp/stop" "$tmp/rping.log"
	(
		while [ ! -e "$tmp/stop" ]; do
			ip netns exec $ns timeout 120 rping -s -a 198.18.0.2 \
				-p 20890 -C 10 -S 1000 -V > /dev/null 2>&1 &
			sp=$!
			wait_for 60 sh -c 'ip netns exec '$ns' ss -ltn | grep -q ":20890 "' ||
				true
			if timeout 120 rping -c -a 198.18.0.2 -p 20890 -C 10 \
				-S 1000 -V > /dev/null 2>&1 && wait $sp; then
				echo pass >> "$tmp/rping.log"
			else
				echo fail >> "$tmp/rping.log"
				wait $sp
			fi
		done
	) &
	local loop=$!
	run "kiwi ringfuzz seed $seed" -p 20889 -t ringfuzz -S "$seed" -D "$secs"
	touch "$tmp/stop"
	wait $loop
	pass=$(grep -c pass "$tmp/rping.log" 2>/dev/null)
	fail=$(grep -c fail "$tmp/rping.log" 2>/dev/null)
	if [ "${pass:-0}" -ge 1 ] && [ "${fail:-0}" -eq 0 ]; then
		tap_ok "rping -V between the same devices during the fuzzing: $pass runs passed"
	else
		tap_fail "rping -V between the same devices during the fuzzing: ${pass:-0} passed, ${fail:-0} failed"
	fi
}
ringfuzz 1 20
if [ -n "${KIWI_FULL:-}" ]; then
	for seed in 2 3 4 5; do
		ringfuzz "$seed" 120
	done
fi

# vfuzz SEED SECS: random sequences of verbs calls on kiwisem0 through
# ib_uverbs (tests/verbs/build/verbs-fuzz), from 3 processes that run to
# the end and 3 killed halfway; every call returns success or a verb's
# errno, no process crashes, the object counts return to zero.
vfuzz() {
	tap_program "verbs-fuzz seed $1" $(($2 + 180)) \
		"$KIWI_ROOT/tests/verbs/build/verbs-fuzz" -d kiwisem0 -S "$1" \
		-D "$2" -P 3
}
vfuzz 1 15
if [ -n "${KIWI_FULL:-}" ]; then
	for seed in 2 3 4 5; do
		vfuzz "$seed" 120
	done
fi

cleanup
tap_check "object counts back to zero" kiwi_counts_zero

# kiwi's trace of the peer-to-peer exchange: when siw is slow to see the
# RTR, the trace tells whether kiwi sent it only after the Reply came
# (lib.sh's trace_events: flipped between groups, no connection live)
tr=$KIWI_TR
rtr_events="kiwi/kiwi_mpa_rep_rcvd kiwi/kiwi_rtr_sent"
rtr_trace_on() {
	trace_events 0 $rtr_events
	echo 0 > $tr/tracing_on
	echo > $tr/trace
	trace_events 1 $rtr_events
	echo 1 > $tr/tracing_on
}
rtr_trace_off() {
	echo 0 > $tr/tracing_on
	cp $tr/trace "$KIWI_TMP_TRACE"
	trace_events 0 $rtr_events
	echo > $tr/trace
}
# rtr_after_reply: every kiwi_rtr_sent of a QP comes after a
# kiwi_mpa_rep_rcvd of that QP (the trace is in time order), and there
# was at least one
rtr_after_reply() {
	awk '/kiwi_mpa_rep_rcvd: qp / { for (i = 1; i < NF; i++)
			if ($i == "qp") rep[$(i + 1)] = 1 }
	     /kiwi_rtr_sent: qp / { for (i = 1; i < NF; i++)
			if ($i == "qp") { n++; if (!rep[$(i + 1)]) bad++ } }
	     END { printf "%d RTRs sent, %d before their Reply\n", n, bad
		   exit !(n > 0 && bad == 0) }' "$KIWI_TMP_TRACE"
}
KIWI_TMP_TRACE=$(mktemp)

# kiwi requester, siw responder: the SQ's completions in posting order
# (group order); with KIWI_FULL=1 the remote access violations too
tap_check "setup: kiwi requester, siw responder" setup siw
if [ -n "${KIWI_FULL:-}" ]; then
	rtr_trace_on
	run "siw responder" -p 20888 -t order,access -P siw -L
	rtr_trace_off
	tap_check "siw responder: kiwi sent each RTR after the MPA Reply arrived (trace)" \
		rtr_after_reply
else
	run "siw responder" -p 20888 -t order -P siw
fi
cleanup
siw_unload
tap_check "object counts back to zero after the siw run" kiwi_counts_zero
rm -f "$KIWI_TMP_TRACE"
tap_done
