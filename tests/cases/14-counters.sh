#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 600
#
# Operability (issue 11, points 1-3): kiwi's counters in `rdma statistic`,
# its trace events and its `rdma resource show qp -dd` fields.
#
# kc0 on veth0 (198.18.0.1) and kc1 on veth1 (198.18.0.2, in the network
# namespace kiwictr), so that every byte crosses the veth, kiwi to kiwi.
# Each step reads both devices' counters before and after known traffic
# and checks every counter's change (Documentation/operability.md):
#   inline-burst, 32 inline Sends of known lengths: payload bytes exactly
#     their sum on both ends, FPDUs 32 + the RTR, one MPA Request and one
#     Reply, 32 completions each side and none flushed, no Terminate
#   cm-reject: one Reply with R sent and received
#   rping -V, trace events on: the bytes and FPDUs one end sent are those
#     the other received; the trace shows QP state changes, the MPA
#     Request and Reply both ways, the RTR, WRs posted and completed
#   a live rping connection with CRC on: `rdma res show qp -dd` shows its
#     state, ORD/IRD, CRC, MPA revision and the transmit queue, and
#     `rdma res show cm_id -dd` the endpoints of both ends and the listener
#   the adversary's Send FPDU with a bad CRC (tests/adversary): one CRC
#     error and one LLP Terminate sent
#   a plain TCP listener that never answers the Request: one connect
#     timeout (connect_timeout_ms lowered to 1.5 s for it)
#   the engine's A/B switches (tx_direct, rx_defer,
#     rresp_defer, crc_copy, crc_avx512) are debugfs files at their
#     defaults, none a module parameter; crc_copy switches and refuses
#     a name it does not know
#   rping -V of 65000 B with rx_defer=1 (every arrival placed by rx_work):
#     rx_deferred moves on both ends, bytes conserved; with rx_defer=0 and
#     rresp_defer=0 neither it nor rresp_deferred moves.  The same two
#     runs check the FPDU size: longer than one MSS both ways with
#     mpa_fpdu_max at its default on both devices, at most one MSS both
#     ways once the initiator's is 0 (the two must agree)
#   the same rping at the default rx_defer and rresp_defer: the server's
#     65000-byte RDMA Reads arrive at kc0 in the softirq, which hands
#     their Responses to the engine on another CPU (rresp_deferred moves
#     on kc0 only)
. "$(dirname "$0")/lib/lib.sh"

ns=kiwictr
srv_ip=198.18.0.2
cli_ip=198.18.0.1
tmp=$(mktemp -d)
vpid=
spid=
old_timeout=
old_defer=
old_rresp=

# every counter kiwi reports (Documentation/operability.md)
names="tx_fpdus tx_bytes rx_fpdus rx_bytes crc_errors term_sent_rdmap
term_sent_ddp term_sent_llp term_rcvd_rdmap term_rcvd_ddp term_rcvd_llp
mpa_req_sent mpa_req_rcvd mpa_rep_sent mpa_rep_rcvd mpa_rej_sent
mpa_rej_rcvd connect_timeouts order_waits_expired connect_port_fallbacks
doorbells completions
completions_flushed rx_deferred rresp_deferred posts_direct
fastreg_wrs fastreg_remaps local_invalidations remote_invalidations fastreg_placed
tx_crc_copy_bytes tx_crc_pass_bytes"

cleanup() {
	for p in $vpid $spid; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	ip netns pids $ns 2>/dev/null | xargs -r kill 2>/dev/null
	[ -n "$old_timeout" ] &&
		echo "$old_timeout" > /sys/module/kiwi/parameters/connect_timeout_ms
	[ -n "$old_defer" ] &&
		echo "$old_defer" > /sys/kernel/debug/kiwi/rx_defer
	[ -n "$old_rresp" ] &&
		echo "$old_rresp" > /sys/kernel/debug/kiwi/rresp_defer
	trace_events 0 kiwi > /dev/null 2>&1
	rdma_pair_teardown $ns kc1 kc0
	rm -rf "$tmp"
}
trap cleanup EXIT

setup() {
	kiwi_load &&
	rdma_pair_setup $ns kc0 kiwi kc1 kiwi
}

# dev_ns DEV: the prefix that runs a command where DEV lives
dev_ns() {
	[ "$1" = kc1 ] && echo "ip netns exec $ns"
}

# snaps N: both devices' counters in one rdma call (each costs seconds
# under TCG), "name value" per line into $tmp/cN (kc0) and $tmp/sN (kc1)
snaps() {
	rdma statistic show > $tmp/stat-$1 || return 1
	split_link kc0 < $tmp/stat-$1 > $tmp/c$1 &&
	split_link kc1 < $tmp/stat-$1 > $tmp/s$1
}

split_link() {	# DEV: its line of `rdma statistic show`, as name value lines
	awk -v l="$1/1" '$1 == "link" && $2 == l {
		for (i = 3; i < NF; i += 2) print $i, $(i + 1) }' | grep .
}

# delta NAME BEFORE AFTER: the change of one counter between two snaps
delta() {
	local a b
	a=$(awk -v n="$1" '$1 == n { print $2 }' "$2")
	b=$(awk -v n="$1" '$1 == n { print $2 }' "$3")
	[ -n "$a" ] && [ -n "$b" ] || { echo "?"; return; }
	echo $((b - a))
}

# expect_deltas DEV BEFORE AFTER NAME=VALUE... (VALUE may be LO-HI); every
# counter not named must not have moved
expect_deltas() {
	local dev=$1 before=$2 after=$3 n d want lo hi bad=0
	shift 3
	for n in $names; do
		want=0
		for kv in "$@"; do
			[ "${kv%%=*}" = "$n" ] && want=${kv#*=}
		done
		d=$(delta "$n" "$before" "$after")
		lo=${want%-*}
		hi=${want#*-}
		if [ "$d" = "?" ] || [ "$d" -lt "$lo" ] || [ "$d" -gt "$hi" ]; then
			echo "$dev $n moved by $d, expected $want"
			bad=1
		fi
	done
	[ $bad = 0 ] || { echo "--- $dev before:"; cat "$before";
			  echo "--- $dev after:"; cat "$after"; }
	return $bad
}

all_listed() {
	local f n bad=0
	snaps L || { echo "no counters"; cat $tmp/stat-L; return 1; }
	for f in $tmp/cL $tmp/sL; do
		for n in $names; do
			grep -q "^$n [0-9]" $f || { echo "$f: missing $n"; bad=1; }
		done
		[ "$(wc -l < $f)" -eq "$(echo $names | wc -w)" ] ||
			{ echo "unexpected lines:"; cat $f; bad=1; }
	done
	return $bad
}

# sysfs hw_counters show what rdma statistic shows (no traffic meanwhile)
sysfs_agrees() {
	local n v bad=0
	snaps Y || return 1
	(cd /sys/class/infiniband/kc0/ports/1/hw_counters && grep . $names) \
		> $tmp/sys || return 1
	for n in $names; do
		v=$(sed -n "s/^$n://p" $tmp/sys)
		grep -q "^$n $v\$" $tmp/cY ||
			{ echo "$n: sysfs $v, rdma: $(grep "^$n " $tmp/cY)"; bad=1; }
	done
	return $bad
}

set_crc() {
	echo "$1" > /sys/class/infiniband/kc0/mpa_crc &&
	echo "$1" > /sys/class/infiniband/kc1/mpa_crc
}

# --- inline-burst: known payload ------------------------------------------
burst_n=32
burst_bytes=0
for i in $(seq 0 $((burst_n - 1))); do
	burst_bytes=$((burst_bytes + 1 + (i * 37) % 64))
done

inline_burst() {
	local ib=$KIWI_ROOT/tests/verbs/build/inline-burst rc
	[ -x "$ib" ] || { echo "no $ib (make -C tests/verbs)"; return 1; }
	ip netns exec $ns timeout 60 "$ib" server $srv_ip 7040 $burst_n \
		> $tmp/ib-srv.log 2>&1 &
	spid=$!
	wait_for 60 tcp_listening $ns 7040
	timeout 60 "$ib" client $srv_ip 7040 $burst_n > $tmp/ib-cli.log 2>&1
	rc=$?
	wait $spid || rc=1
	spid=
	cat $tmp/ib-srv.log $tmp/ib-cli.log
	[ $rc -eq 0 ] && [ "$(grep -c '^ok ' $tmp/ib-srv.log)" -eq 4 ]
}

# --- cm-reject: one rejecting Reply -----------------------------------------
reject_once() {
	local cr=$KIWI_ROOT/tests/verbs/build/cm-reject rc
	[ -x "$cr" ] || { echo "no $cr (make -C tests/verbs)"; return 1; }
	ip netns exec $ns timeout 60 "$cr" server $srv_ip 7041 10 \
		> $tmp/rej-srv.log 2>&1 &
	spid=$!
	wait_for 60 tcp_listening $ns 7041
	timeout 60 "$cr" client $srv_ip 7041 0 10 > $tmp/rej-cli.log 2>&1
	rc=$?
	wait $spid || rc=1
	spid=
	cat $tmp/rej-srv.log $tmp/rej-cli.log
	[ $rc -eq 0 ]
}

# --- rping ------------------------------------------------------------------
# rping_pair COUNT SIZE: the server in the namespace, -V on the client
rping_pair() {
	local rc
	ip netns exec $ns timeout 120 rping -s -a $srv_ip -C "$1" -S "$2" -V \
		> $tmp/rp-srv.log 2>&1 &
	spid=$!
	wait_for 60 tcp_listening $ns 7174
	timeout 120 rping -c -a $srv_ip -C "$1" -S "$2" -V -v \
		> $tmp/rp-cli.log 2>&1
	rc=$?
	wait $spid || rc=1
	spid=
	cat $tmp/rp-srv.log $tmp/rp-cli.log
	[ $rc -eq 0 ] && [ "$(grep -c '^ping data: ' $tmp/rp-cli.log)" -eq "$1" ]
}

# what one end sent, the other received: FPDUs and payload bytes
conserved() {
	local c0=$1 c1=$2 s0=$3 s1=$4 bad=0 a b
	for pair in "tx_fpdus rx_fpdus" "tx_bytes rx_bytes"; do
		set -- $pair
		a=$(delta "$1" "$c0" "$c1")
		b=$(delta "$2" "$s0" "$s1")
		echo "kc0 $1 +$a, kc1 $2 +$b"
		[ "$a" = "$b" ] && [ "$a" -gt 0 ] || bad=1
		a=$(delta "$1" "$s0" "$s1")
		b=$(delta "$2" "$c0" "$c1")
		echo "kc1 $1 +$a, kc0 $2 +$b"
		[ "$a" = "$b" ] && [ "$a" -gt 0 ] || bad=1
	done
	return $bad
}

# --- trace events -----------------------------------------------------------
# (lib.sh's trace_events: no scheduler site patched; flipped while no
# connection runs)
tr=$KIWI_TR
trace_on() {
	trace_events 0 kiwi &&
	echo 0 > $tr/tracing_on &&
	echo > $tr/trace &&
	echo 4096 > $tr/buffer_size_kb &&
	trace_events 1 kiwi &&
	echo 1 > $tr/tracing_on
}

trace_has() {	# EVENT [REGEX]: at least one such line
	grep -E " $1: .*${2:-}" $tmp/trace | head -n 2 | grep -q . ||
		{ echo "no $1 ${2:-} in the trace"; return 1; }
}

trace_check() {
	local bad=0
	trace_has kiwi_qp_state "INIT -> RTS" || bad=1
	trace_has kiwi_qp_state "-> ERR" || bad=1
	trace_has kiwi_mpa_req_sent "$cli_ip:[0-9]+ -> $srv_ip:7174 rev 2" || bad=1
	trace_has kiwi_mpa_req_rcvd "$srv_ip:7174 -> $cli_ip:[0-9]+ rev 2" || bad=1
	trace_has kiwi_mpa_rep_sent "rev 2 H" || bad=1
	trace_has kiwi_mpa_rep_rcvd "rev 2 H" || bad=1
	trace_has kiwi_rtr_sent || bad=1
	trace_has kiwi_rtr_rcvd || bad=1
	trace_has kiwi_wr_post "rq taken" || bad=1
	trace_has kiwi_wr_post "sq taken .* opcode 3 " || bad=1
	trace_has kiwi_wr_complete "status 0 " || bad=1
	[ $bad = 0 ] || head -n 40 $tmp/trace
	return $bad
}

# --- rdma res show qp -dd and cm_id -dd on a live connection ---------------
# has FILE FIELD-REGEX...: iproute2 prints driver fields as drv_<name>
has() {
	local f=$1 r
	shift
	for r in "$@"; do
		grep -qE "(^| )drv_$r( |$)" "$f" || { echo "no drv_$r in $f"; return 1; }
	done
}

# qp_rts: kc0's QP in RTS, as rdma res shows it (kept in $tmp/res)
qp_rts() {
	rdma resource show qp link kc0/1 -dd > $tmp/res 2>&1 &&
	grep -q 'drv_state RTS' $tmp/res
}

res_live() {
	local rc=1
	ip netns exec $ns timeout 60 rping -s -a $srv_ip -C 100000 -S 64 \
		> $tmp/rl-srv.log 2>&1 &
	spid=$!
	wait_for 60 tcp_listening $ns 7174
	timeout 60 rping -c -a $srv_ip -C 100000 -S 64 > $tmp/rl-cli.log 2>&1 &
	vpid=$!
	if wait_for 30 qp_rts; then
		rdma resource show cm_id link kc0/1 -dd > $tmp/cm0 2>&1
		$(dev_ns kc1) rdma resource show cm_id link kc1/1 -dd \
			> $tmp/cm1 2>&1
		# and as a user without CAP_NET_ADMIN
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
			rdma resource show qp link kc0/1 -dd > $tmp/res.nobody 2>&1
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
			rdma resource show cm_id link kc0/1 -dd > $tmp/cm0.nobody 2>&1
		rc=0
	fi
	kill -TERM $vpid 2>/dev/null
	wait $vpid
	wait $spid
	vpid=
	spid=
	cat $tmp/res
	[ $rc = 0 ]
}

# kiwi's own fields of the rping QP, the only one on kc0
res_qp_fields() {
	has $tmp/res 'state RTS' 'ord [0-9]+' 'ird [0-9]+' 'ord_max [1-9]' \
		'ird_max [1-9]' 'mpa_rev 2' 'mpa_crc 1' 'mpa_p2p 1' \
		'mpa_rtr [1-9]' 'mpa_fpdu_max 65535' 'tx_batch_unsent [0-9]+' \
		'sk_wmem_queued [0-9]+'
}

# a user without CAP_NET_ADMIN sees the QP and the cm_id, none of kiwi's
# fields (security.md: administrators only)
res_unprivileged() {
	cat $tmp/res.nobody $tmp/cm0.nobody
	grep -q 'lqpn' $tmp/res.nobody && grep -q 'state' $tmp/cm0.nobody &&
	! grep -q 'drv_' $tmp/res.nobody $tmp/cm0.nobody
}

# the client's connection on kc0; the server's listener and connection on kc1
res_cm_fields() {
	cat $tmp/cm0 $tmp/cm1
	has $tmp/cm0 'cep_state ESTABLISHED' 'mpa_rev 2' 'mpa_crc 1' \
		'mpa_p2p 1' 'ird [0-9]+' 'ord [1-9]' 'peer_ird [0-9]+' \
		'tcp_lport [1-9][0-9]*' &&
	has $tmp/cm1 'cep_state LISTEN' 'backlog [1-9][0-9]*' \
		'cep_state ESTABLISHED'
}

# --- the adversary's bad CRC ------------------------------------------------
adir=$KIWI_ROOT/tests/adversary
bad_crc() {
	local rc
	# the suite builds them on the host; a direct run may not have
	[ -x $adir/build/adversary ] && [ -x $adir/build/victim ] ||
		make -s -C $adir > $tmp/adv-build.log 2>&1
	[ -x $adir/build/adversary ] && [ -x $adir/build/victim ] ||
		{ cat $tmp/adv-build.log; echo "make -C tests/adversary"; return 1; }
	$adir/build/victim -a $cli_ip -p 7042 -d kc0 --info $tmp/vinfo \
		--recvs 4 --recv-len 1024 --ird 4 --ord 4 > $tmp/victim.log 2>&1 &
	vpid=$!
	wait_for 30 test -s $tmp/vinfo || { cat $tmp/victim.log; return 1; }
	ip netns exec $ns timeout 60 $adir/build/adversary -a $cli_ip -p 7042 \
		--victim-file $tmp/vinfo --crc on --kiwi-crc required \
		--kiwi-ird 4 --kiwi-ord 4 --tag crc --only bad-crc \
		--timeout 20 > $tmp/adv.tap 2>&1
	rc=$?
	cat $tmp/adv.tap
	[ $rc -eq 0 ] && grep -q '^ok ' $tmp/adv.tap && ! grep -q '^not ok' $tmp/adv.tap
}

# --- a connect timeout ----------------------------------------------------------
silent_peer_timeout() {
	local rc
	ip netns exec $ns timeout 30 python3 -c '
import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("'$srv_ip'", 7043))
s.listen(4)
time.sleep(25)' > $tmp/silent.log 2>&1 &
	spid=$!
	wait_for 30 tcp_listening $ns 7043
	timeout 30 rping -c -a $srv_ip -p 7043 -C 1 -v > $tmp/to-cli.log 2>&1
	rc=$?
	kill $spid 2>/dev/null
	wait $spid
	spid=
	cat $tmp/to-cli.log
	# rping must fail: nothing answered its Request
	[ $rc -ne 0 ]
}

# where the case's time goes (TCG is slow; the case should stay quick)
elapsed() {
	tap_diag "$1: ${SECONDS}s since the start"
}

# ============================================================================
tap_check "setup: kiwi devices kc0 and kc1 on the two ends of the veth" setup
kiwi_provider_env

tap_check "rdma statistic show: all $(echo $names | wc -w) counters for kc0/1 and kc1/1" \
	all_listed

elapsed "listing"
snaps 0
tap_check "inline-burst: $burst_n inline Sends ($burst_bytes bytes) kc0 -> kc1" \
	inline_burst
snaps 1
tap_check "kc0 (initiator): tx_bytes +$burst_bytes, tx_fpdus +$((burst_n + 1)) (the RTR), one Request sent, one Reply received, $burst_n completions, 1..$burst_n doorbells, nothing else" \
	expect_deltas kc0 $tmp/c0 $tmp/c1 tx_bytes=$burst_bytes \
	tx_fpdus=$((burst_n + 1)) mpa_req_sent=1 mpa_rep_rcvd=1 \
	completions=$burst_n doorbells=1-$burst_n
tap_check "kc1 (responder): rx_bytes +$burst_bytes, rx_fpdus +$((burst_n + 1)), one Request received, one Reply sent, $burst_n completions, nothing else" \
	expect_deltas kc1 $tmp/s0 $tmp/s1 rx_bytes=$burst_bytes \
	rx_fpdus=$((burst_n + 1)) mpa_req_rcvd=1 mpa_rep_sent=1 \
	completions=$burst_n
tap_check "hw_counters in sysfs show what rdma statistic shows" sysfs_agrees

elapsed "inline-burst"
tap_check "cm-reject: kc1's consumer rejects kc0's connection" reject_once
snaps 2
tap_check "kc0: one Request sent, one reject received, nothing else" \
	expect_deltas kc0 $tmp/c1 $tmp/c2 mpa_req_sent=1 mpa_rej_rcvd=1
tap_check "kc1: one Request received, one reject sent, nothing else" \
	expect_deltas kc1 $tmp/s1 $tmp/s2 mpa_req_rcvd=1 mpa_rej_sent=1

elapsed "cm-reject"
tap_check "trace events kiwi enabled ($tr)" trace_on
tap_check "rping -V 64 B x 3 kc0 -> kc1, traced" rping_pair 3 64
cat $tr/trace > $tmp/trace 2>/dev/null
trace_events 0 kiwi
snaps 3
tap_check "rping: FPDUs and bytes one end sent are what the other received" \
	conserved $tmp/c2 $tmp/c3 $tmp/s2 $tmp/s3
tap_check "rping: kc0 sent one Request and received one Reply; no reject, Terminate, CRC error or timeout" \
	expect_deltas kc0 $tmp/c2 $tmp/c3 mpa_req_sent=1 mpa_rep_rcvd=1 \
	tx_fpdus=1-100000 tx_bytes=1-100000000 rx_fpdus=1-100000 \
	rx_bytes=1-100000000 completions=1-100000 \
	completions_flushed=0-100 doorbells=1-100000
tap_check "trace: QP state changes, MPA Request and Reply both ways, RTR, WRs posted and completed" \
	trace_check

elapsed "rping traced"
tap_check "mpa_crc=required on both devices" set_crc required
tap_check "a live rping connection kc0 -> kc1 (CRC on) shows in rdma res show qp -dd" \
	res_live
tap_check "rdma res show qp -dd: kiwi's state, ORD/IRD, CRC on, MPA revision 2, peer-to-peer, RTR, tx queue" \
	res_qp_fields
tap_check "rdma res show cm_id -dd: the connection (ESTABLISHED, MPA, IRD/ORD, TCP port) on kc0, the listener and the connection on kc1" \
	res_cm_fields
tap_check "rdma res show qp and cm_id -dd as nobody: the objects, none of kiwi's fields" \
	res_unprivileged

elapsed "rdma res"
snaps 4
tap_check "adversary: a Send FPDU with a bad CRC gets its Terminate" bad_crc
kill -TERM $vpid 2>/dev/null; wait $vpid 2>/dev/null; vpid=
snaps 5
tap_check "kc0: crc_errors +1, term_sent_llp +1 (and the adversary's Request and Reply)" \
	expect_deltas kc0 $tmp/c4 $tmp/c5 crc_errors=1 term_sent_llp=1 \
	mpa_req_rcvd=1 mpa_rep_sent=1 rx_fpdus=0-10 rx_bytes=0-10000 \
	tx_fpdus=1-10 completions=0-20 completions_flushed=0-20
elapsed "adversary"
tap_check "mpa_crc=off on both devices" set_crc off

old_timeout=$(cat /sys/module/kiwi/parameters/connect_timeout_ms)
echo 1500 > /sys/module/kiwi/parameters/connect_timeout_ms
tap_check "rping to a TCP listener that never answers the MPA Request fails" \
	silent_peer_timeout
echo "$old_timeout" > /sys/module/kiwi/parameters/connect_timeout_ms
old_timeout=
snaps 6
tap_check "kc0: connect_timeouts +1, one Request sent, no Reply" \
	expect_deltas kc0 $tmp/c5 $tmp/c6 connect_timeouts=1 mpa_req_sent=1

elapsed "connect timeout"

# rx_defer=1: every arrival is placed by rx_work, none in the softirq;
# rx_defer=0: none by rx_work.  rping -V checks the bytes either way.
# rping_deltas A B [NAME=VALUE...]: what one rping connection kc0 -> kc1
# moves between snapshots A and B on both ends, and NAME=VALUE on both.
rping_deltas() {
	local a=$1 b=$2 some="tx_fpdus=1-100000 tx_bytes=1-100000000
		rx_fpdus=1-100000 rx_bytes=1-100000000 completions=1-100000
		completions_flushed=0-100 doorbells=0-100000"
	shift 2
	expect_deltas kc0 $tmp/c$a $tmp/c$b mpa_req_sent=1 mpa_rep_rcvd=1 \
		$some "$@" &&
	expect_deltas kc1 $tmp/s$a $tmp/s$b mpa_req_rcvd=1 mpa_rep_sent=1 \
		$some "$@"
}
# fpdu_sizes A B gt|le: payload bytes per FPDU that each end sent between
# snaps A and B, against one MSS of this veth (1448): above it (FPDUs
# longer than an MSS went out) or at most it
fpdu_sizes() {
	local a=$1 b=$2 cmp=$3 f n by bad=0
	for f in c s; do
		n=$(delta tx_fpdus $tmp/$f$a $tmp/$f$b)
		by=$(delta tx_bytes $tmp/$f$a $tmp/$f$b)
		echo "$f: $by payload bytes in $n FPDUs"
		[ "$n" -gt 0 ] || { bad=1; continue; }
		case $cmp in
		gt) [ $((by / n)) -gt 1448 ] || bad=1 ;;
		*) [ $((by / n)) -le 1448 ] || bad=1 ;;
		esac
	done
	return $bad
}
# ab_switches: each switch's debugfs value matches its pattern, and it is
# no module parameter (issue 41: A/B switches go to debugfs)
ab_switches() {
	local d=/sys/kernel/debug/kiwi f got bad=0
	for f in tx_direct:N rx_defer:16384 rresp_defer:4096 \
		 'crc_copy:onepass|split' 'crc_avx512:Y|N' crc_run_hold:Y; do
		got=$(cat "$d/${f%%:*}") || { bad=1; continue; }
		echo "${f%%:*} $got"
		printf '%s\n' "$got" | grep -Eqx "${f#*:}" || bad=1
		if [ -e "/sys/module/kiwi/parameters/${f%%:*}" ]; then
			echo "${f%%:*} is still a module parameter"
			bad=1
		fi
	done
	return $bad
}
tap_check "A/B switches in debugfs at their defaults, not module parameters" \
	ab_switches
# crc_switch: crc_copy takes split and back, refuses other names
crc_switch() {
	local f=/sys/kernel/debug/kiwi/crc_copy old
	old=$(cat $f) &&
	echo split > $f && [ "$(cat $f)" = split ] &&
	! echo fast > $f 2>/dev/null && [ "$(cat $f)" = split ] &&
	echo "$old" > $f && [ "$(cat $f)" = "$old" ]
}
tap_check "debugfs crc_copy switches to split and back, refuses other names" \
	crc_switch
old_defer=$(cat /sys/kernel/debug/kiwi/rx_defer)
echo 1 > /sys/kernel/debug/kiwi/rx_defer
tap_check "rx_defer=1: rping -V 65000 B x 5 kc0 -> kc1, placed by rx_work" \
	rping_pair 5 65000
snaps 7
tap_check "rx_defer=1: rx_deferred moved on both ends" \
	rping_deltas 6 7 rx_deferred=1-100000
tap_check "rx_defer=1: FPDUs and bytes one end sent are what the other received" \
	conserved $tmp/c6 $tmp/c7 $tmp/s6 $tmp/s7
tap_check "mpa_fpdu_max=65535 (the default) on both: FPDUs longer than one MSS both ways" \
	fpdu_sizes 6 7 gt
echo 0 > /sys/class/infiniband/kc0/mpa_fpdu_max
echo 0 > /sys/kernel/debug/kiwi/rx_defer
old_rresp=$(cat /sys/kernel/debug/kiwi/rresp_defer)
echo 0 > /sys/kernel/debug/kiwi/rresp_defer
tap_check "rx_defer=0 rresp_defer=0: rping -V 65000 B x 5 kc0 -> kc1, all in the softirq" \
	rping_pair 5 65000
snaps 8
tap_check "rx_defer=0 rresp_defer=0: rx_deferred and rresp_deferred still on both ends" \
	rping_deltas 7 8
echo "$old_rresp" > /sys/kernel/debug/kiwi/rresp_defer
old_rresp=
tap_check "mpa_fpdu_max=0 on the initiator only: FPDUs of at most one MSS both ways" \
	fpdu_sizes 7 8 le
echo 65535 > /sys/class/infiniband/kc0/mpa_fpdu_max
echo "$old_defer" > /sys/kernel/debug/kiwi/rx_defer
tap_check "rx_defer=$old_defer: rping -V 65000 B x 5 kc0 -> kc1" \
	rping_pair 5 65000
old_defer=
snaps 9
# rresp_deltas A B: kc0 answered the Reads from another CPU, kc1 read only
rresp_deltas() {
	local c s
	rping_deltas $1 $2 rx_deferred=0-100000 rresp_deferred=0-100000 ||
		return 1
	c=$(delta rresp_deferred $tmp/c$1 $tmp/c$2)
	s=$(delta rresp_deferred $tmp/s$1 $tmp/s$2)
	echo "rresp_deferred: kc0 +$c, kc1 +$s"
	[ "$c" -ge 1 ] && [ "$s" -eq 0 ]
}
tap_check "default rx_defer and rresp_defer: kc0's Read Responses sent from another CPU (rresp_deferred), none on kc1" \
	rresp_deltas 8 9
elapsed "rx_defer"
cleanup
trap - EXIT
tap_check "object counts back to zero" kiwi_counts_zero
tap_done
