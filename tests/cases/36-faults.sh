#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 600
# timeout-full: 1500
#
# Network faults under kiwi connections, kiwi to kiwi across the veth (the
# server end's device in its own namespace, so every byte crosses the
# veth).  tc netem on both ends (loss, delay, reordering, duplication,
# then a rate limit): rping -V still moves its bytes intact.  A TCP reset
# of the connection (ss -K), and the path going down for longer than the
# device's TCP user timeout, busy (rping) and idle (liveness, which only
# keepalive can judge): each end's consumer is told (an error completion
# or a CM event), its receives are flushed, within a bound the settings
# give.  A path down for less than the user timeout costs nothing.  The
# peer's namespace deleted mid-transfer: the client is told and nothing
# hangs.  The settings' sysfs files refuse bad values.  kiwi's object
# counts are zero afterwards.
#
# perftest (ib_write_bw -R) through the same lossy path completes.
# KIWI_FULL=1 adds: the same netem runs against siw both ways (rping, and
# ib_write_bw, ib_read_bw and ib_send_bw each way), and the
# default settings (30 s user timeout) against a path down 5 s (survives)
# and 60 s (told within 45 s).
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/nvmeof-lib.sh"
. "$(dirname "$0")/lib/apps-lib.sh"

ns=kiwiflt
live=$KIWI_ROOT/tests/verbs/build/liveness
tmp=$(mktemp -d)

cleanup() {
	ip netns pids $ns 2>/dev/null | xargs -r kill -9 2>/dev/null
	pkill -9 -x rping 2>/dev/null
	pkill -9 -x liveness 2>/dev/null
	rdma_pair_teardown $ns kiwiflt1 siwflt1 kiwiflt0 siwflt0
}
trap 'cleanup; rm -rf "$tmp"' EXIT

# setup A B: device types on veth0 (here) and veth1 (in the namespace)
setup() {
	cleanup
	rdma_pair_setup $ns "${1}flt0" "$1" "${2}flt1" "$2"
}

# knobs DEV USER_TIMEOUT_MS KEEPALIVE_S [NS]
knobs() {
	local d=/sys/class/infiniband/$1
	${4:+ip netns exec $4} sh -c "echo $2 > $d/tcp_user_timeout_ms &&
		echo $3 > $d/tcp_keepalive_s"
}

netem_on() {
	tc qdisc add dev veth0 root netem "$@" &&
	ip netns exec $ns tc qdisc add dev veth1 root netem "$@"
}

netem_off() {
	tc qdisc del dev veth0 root 2>/dev/null
	ip netns exec $ns tc qdisc del dev veth1 root 2>/dev/null
	return 0
}

# rping_pair PORT COUNT SIZE: client here, server in the namespace, -V;
# both must exit 0.
rping_pair() {
	local port=$1 sp rc
	ip netns exec $ns timeout 300 rping -s -a 198.18.0.2 -p "$port" \
		-C "$2" -S "$3" -V > "$tmp/rps.log" 2>&1 &
	sp=$!
	if ! wait_for 30 tcp_listening $ns "$port"; then
		echo "no listener on $port; server: $(cat "$tmp/rps.log")"
		return 1
	fi
	timeout 300 rping -c -a 198.18.0.2 -p "$port" -C "$2" -S "$3" -V \
		> "$tmp/rpc.log" 2>&1
	rc=$?
	wait $sp || rc=1
	[ $rc -eq 0 ] || { tail -n 3 "$tmp/rpc.log" "$tmp/rps.log"; return 1; }
}

# rping_told STATUS LOG ELAPSED_MS BOUND_MS: an rping cut off by a fault
# exits 0 after a DISCONNECT event or non-zero after an error completion,
# never by timeout(1), and within the bound; and the fault met a live
# transfer (rping_bg found it moving), else an rping that never got going
# would pass for one that was told
rping_told() {
	[ "$bg_moving" = 1 ] ||
		{ echo "the fault met no live transfer: $(cat "$tmp/moving")"; return 1; }
	[ "$1" != 124 ] && [ "$3" -le "$4" ] &&
	{ [ "$1" != 0 ] || grep -q "DISCONNECT EVENT" "$2"; } ||
	{ tail -n 3 "$2"; return 1; }
}

# rping_up PORT: the client's connection to PORT is established (kiwi's
# socket is a kernel socket, visible to ss), so a fault hits a transfer
# and not the connection set-up
rping_up() {
	wait_for 60 sh -c "ss -Htn state established dport = :$1 | grep -q ."
}

# rx_bytes: what the client's device kiwiflt0 has received (its counter)
rx_bytes() {
	cat /sys/class/infiniband/kiwiflt0/ports/1/hw_counters/rx_bytes
}

# rx_grown BYTES MIN: kiwiflt0 received MIN bytes more than BYTES
rx_grown() {
	[ $(($(rx_bytes) - $1)) -ge "$2" ] ||
		{ echo "kiwiflt0 received $(($(rx_bytes) - $1)) bytes, want $2"; return 1; }
}

# rping_bg LIMIT PORT COUNT [-V]: an rping pair of 16 KiB pings in the
# background (server in the namespace, pid in sp; client here, pid in cp),
# each killed after LIMIT seconds; returns once the client's connection is
# established and has moved a few pings (64 KiB), so that a fault hits
# the transfer and not the set-up: bg_moving 1 then, else 0 (and the checks
# of what the fault did fail)
rping_bg() {
	local lim=$1 port=$2 n=$3 v=${4:-} rx0
	bg_moving=0
	rx0=$(rx_bytes)
	ip netns exec $ns timeout "$lim" rping -s -a 198.18.0.2 -p "$port" \
		-C "$n" -S 16384 $v > "$tmp/rps.log" 2>&1 &
	sp=$!
	wait_for 30 tcp_listening $ns "$port"
	timeout "$lim" rping -c -a 198.18.0.2 -p "$port" -C "$n" -S 16384 $v \
		> "$tmp/rpc.log" 2>&1 &
	cp=$!
	if { rping_up "$port" && wait_for 30 rx_grown "$rx0" 65536; } \
		> "$tmp/moving" 2>&1; then
		bg_moving=1
	else
		tap_diag "rping on port $port: no transfer under way" "$(cat "$tmp/moving")"
	fi
}

now_ms() {
	date +%s%3N
}

# live_start PORT: an idle liveness pair, server in the namespace
live_start() {
	rm -f "$tmp"/ready.* "$tmp"/live.*
	ip netns exec $ns "$live" server 198.18.0.2 "$1" "$tmp/ready.s" 120 \
		> "$tmp/live.s" 2>&1 &
	lsp=$!
	wait_for 30 tcp_listening $ns "$1" || return 1
	"$live" client 198.18.0.2 "$1" "$tmp/ready.c" 120 > "$tmp/live.c" 2>&1 &
	lcp=$!
	wait_for 30 test -e "$tmp/ready.c" -a -e "$tmp/ready.s" && return
	# what each end got to, and what the devices saw (TAP diagnostics)
	echo "server: $(cat "$tmp/live.s")"
	echo "client: $(cat "$tmp/live.c")"
	kill -0 $lsp 2>/dev/null && echo "server still running"
	kill -0 $lcp 2>/dev/null && echo "client still running"
	echo "kiwiflt0: $(dev_counters /sys/class/infiniband/kiwiflt0)"
	echo "kiwiflt1: $(ip netns exec $ns sh -c "$(declare -f dev_counters);
		dev_counters /sys/class/infiniband/kiwiflt1")"
	echo "kiwi cm: $(tr '\n' ' ' < /sys/kernel/debug/kiwi/cm)"
	echo "here: $(ss -Htan "( sport = :$1 or dport = :$1 )" | tr -s ' ' | tr '\n' ';')"
	echo "ns: $(ip netns exec $ns ss -Htan "( sport = :$1 or dport = :$1 )" |
		tr -s ' ' | tr '\n' ';')"
	echo "neigh: $(ip neigh show dev veth0 | tr '\n' ';')"
	return 1
}

# path_answers: the peer answers ping within 30 s.  A new connection's
# address resolution sends ARP three times, about 1 s apart, and does not
# try again before its timeout ends it (RDMA_CM_EVENT_ADDR_ERROR): after
# an outage the path must carry IP again before the next connect, and a
# path that does not is its own failure, not kiwi's.
path_answers() {
	wait_for 30 ping -c 1 -W 1 198.18.0.2
}

# dev_counters DIR: the port's state and the device's non-zero counters
dev_counters() {
	local f v out
	out="port $(cat "$1/ports/1/state" 2>/dev/null)"
	for f in "$1"/ports/1/hw_counters/*; do
		v=$(cat "$f" 2>/dev/null) || continue
		[ "$v" != 0 ] && out="$out ${f##*/}=$v"
	done
	echo "$out"
}

# live_told SIDE T0 BOUND_MS: that end exited 0 (told, every receive
# flushed) within BOUND_MS of T0
live_told() {
	local pid=$lsp f=$tmp/live.s told
	[ "$1" = client ] && { pid=$lcp; f=$tmp/live.c; }
	wait "$pid" || { cat "$f"; return 1; }
	told=$(awk '/^told/ { print $2 }' "$f")
	[ -n "$told" ] || { cat "$f"; return 1; }
	echo "$1: $(cat "$f"), $((told - $2)) ms after the fault"
	[ $((told - $2)) -le "$3" ]
}

kiwi_load || exit 1
modprobe sch_netem 2>/dev/null
kiwi_provider_env

tap_check "set-up: kiwi on veth0, kiwi on veth1 in a namespace" setup kiwi kiwi
d0=/sys/class/infiniband/kiwiflt0
tap_check "defaults: TCP user timeout 30000 ms, keepalive after 30 s" \
	sh -c "[ \$(cat $d0/tcp_user_timeout_ms) = 30000 ] &&
		[ \$(cat $d0/tcp_keepalive_s) = 30 ]"
tap_check_err "tcp_user_timeout_ms refuses 'soon'" "Invalid argument" \
	bash -c "echo soon > $d0/tcp_user_timeout_ms"
tap_check_err "tcp_user_timeout_ms refuses more than 10 minutes" \
	"Numerical result out of range" \
	bash -c "echo 600001 > $d0/tcp_user_timeout_ms"
tap_check_err "tcp_keepalive_s refuses more than TCP allows" \
	"Numerical result out of range" bash -c "echo 32768 > $d0/tcp_keepalive_s"

# netem: every byte still arrives, in order, once
tap_check "netem loss 2%, delay 2 ms, reorder 25%, duplicate 2% on both ends" \
	netem_on loss 2% delay 2ms reorder 25% 50% duplicate 2%
tap_check "rping -V, 200 x 16 KiB through the lossy path" \
	rping_pair 20960 200 16384
netem_off
tap_check "netem rate 40 Mbit/s on both ends" netem_on rate 40mbit
tap_check "rping -V, 40 x 60000 B through the rate limit" \
	rping_pair 20961 40 60000
netem_off

# a TCP reset: both ends told at once
knobs kiwiflt0 4000 2
knobs kiwiflt1 4000 2 $ns
tap_check "idle connection up (user timeout 4 s, keepalive 2 s)" \
	live_start 20962
t0=$(now_ms)
tap_check "ss -K resets the client's TCP connection" \
	ss -K dst 198.18.0.2 dport = :20962
# ss itself is slow under TCG (seconds): the bound counts from its end
tss=$(($(now_ms) - t0))
tap_diag "ss -K took $tss ms"
tap_check "ss -K: the client is told, receives flushed, within 3 s" \
	live_told client "$t0" $((tss + 3000))
tap_check "ss -K: the server is told, receives flushed, within 3 s" \
	live_told server "$t0" $((tss + 3000))
tap_diag "ss -K: client $(cat "$tmp/live.c"); server $(cat "$tmp/live.s"); fault at $t0"

# outage_survived SECS PORT COUNT DOWN DESC: rping -V (COUNT pings, limit
# SECS) with the path down for DOWN seconds once it moves data; a TAP
# test, ok when rping was still running when the path came back and both
# ends then exit 0.
outage_survived() {
	local mid=0 crc=0 src=0
	rping_bg "$1" "$2" "$3" -V
	ip netns exec $ns ip link set veth1 down
	sleep "$4"
	ip netns exec $ns ip link set veth1 up
	kill -0 $cp 2>/dev/null && mid=1
	wait $cp || crc=$?
	wait $sp || src=$?
	# bg_moving: the outage met a live transfer
	tap_check "$5" \
		sh -c "test $bg_moving$mid$crc$src = 1100 || { tail -n 3 $tmp/rpc.log $tmp/rps.log $tmp/moving; false; }"
}

# path_down_under_rping LIMIT PORT: a busy rping pair (rping_bg), then the
# path down (veth1) until both have ended: crc and src their exit
# statuses, t0 when the path went, t1 and t2 when client and server ended.
path_down_under_rping() {
	rping_bg "$1" "$2" 100000
	ip netns exec $ns ip link set veth1 down
	t0=$(now_ms)
	wait $cp
	crc=$?
	t1=$(now_ms)
	wait $sp
	src=$?
	t2=$(now_ms)
}

# the path down for less than the user timeout: nothing lost
knobs kiwiflt0 8000 2
knobs kiwiflt1 8000 2 $ns
outage_survived 300 20963 3000 1.5 \
	"path down 1.5 s under rping -V (user timeout 8 s): both exit 0"

# the path down for longer: a busy connection is told by the user timeout
knobs kiwiflt0 4000 2
knobs kiwiflt1 4000 2 $ns
path_down_under_rping 300 20964
tap_diag "busy path down: client rping exit $crc after $((t1 - t0)) ms, server exit $src after $((t2 - t0)) ms" \
	"client: $(tail -n 3 "$tmp/rpc.log" | tr '\n' ' ')" \
	"server: $(tail -n 3 "$tmp/rps.log" | tr '\n' ' ')"
tap_check "path down under rping (user timeout 4 s): client told within 12 s" \
	rping_told "$crc" "$tmp/rpc.log" $((t1 - t0)) 12000
tap_check "path down under rping: server told within 12 s" \
	rping_told "$src" "$tmp/rps.log" $((t2 - t0)) 12000
ip netns exec $ns ip link set veth1 up
tap_check "path back up: ping answered" path_answers

# idle: only keepalive notices (2 s idle, probes 1 s apart, 4 s timeout)
tap_check "idle connection up" live_start 20965
ip netns exec $ns ip link set veth1 down
t0=$(now_ms)
tap_check "path down, idle: the client is told by keepalive within 12 s" \
	live_told client "$t0" 12000
tap_check "path down, idle: the server is told by keepalive within 12 s" \
	live_told server "$t0" 12000
tap_diag "idle: client $(cat "$tmp/live.c"); server $(cat "$tmp/live.s"); fault at $t0"
ip netns exec $ns ip link set veth1 up

if [ -n "${KIWI_FULL:-}" ]; then
	# the defaults against real outages
	knobs kiwiflt0 30000 30
	knobs kiwiflt1 30000 30 $ns
	outage_survived 600 20966 4000 5 \
		"defaults: path down 5 s under rping -V: both exit 0"

	tap_check "defaults: idle connection up" live_start 20967
	path_down_under_rping 600 20968
	left=$((60000 - (t2 - t0)))
	[ $left -gt 0 ] && sleep $((left / 1000))
	ip netns exec $ns ip link set veth1 up
	tap_diag "defaults, path down 60 s: rping client told after $((t1 - t0)) ms, server after $((t2 - t0)) ms"
	tap_check "defaults: path down 60 s under rping: client told within 45 s" \
		rping_told "$crc" "$tmp/rpc.log" $((t1 - t0)) 45000
	tap_check "defaults: path down 60 s under rping: server told within 45 s" \
		rping_told "$src" "$tmp/rps.log" $((t2 - t0)) 45000
	tap_check "defaults: path down 60 s, idle: client told within 65 s" \
		live_told client "$t0" 65000
	tap_check "defaults: path down 60 s, idle: server told within 65 s" \
		live_told server "$t0" 65000
fi

# the peer's namespace deleted mid-transfer (veth0 goes with its peer)
tap_check "path back up again: ping answered" path_answers
rping_bg 300 20969 100000
ip netns pids $ns | xargs -r kill -9
ip netns del $ns
t0=$(now_ms)
wait $cp
crc=$?
t1=$(now_ms)
tap_diag "namespace deleted: client rping exit $crc after $((t1 - t0)) ms"
tap_check "peer's namespace deleted: the client is told within 12 s" \
	rping_told "$crc" "$tmp/rpc.log" $((t1 - t0)) 12000
wait $sp
tap_check "the peer's kiwi device went with its netdev" \
	wait_for 30 sh -c '! rdma link show | grep -q kiwiflt1'

if [ -n "${KIWI_FULL:-}" ] && siw_load; then
	for pair in "kiwi siw" "siw kiwi"; do
		set -- $pair
		tap_check "set-up: $1 here, $2 in the namespace" setup "$1" "$2"
		tap_check "$1 to $2: netem loss 2%, delay, reorder, duplicate" \
			netem_on loss 2% delay 2ms reorder 25% 50% duplicate 2%
		tap_check "$1 client to $2 server: rping -V, 200 x 16 KiB" \
			rping_pair 20970 200 16384
		netem_off
	done
	cleanup
	siw_unload
fi

# perftest through the lossy path (apps-lib's namespace and devices)
perf_lossy() {
	local c=$1 s=$2 tool
	shift 2
	tap_check "perftest set-up: $c client, $s server (apps-lib)" \
		apps_setup "$c" "$s" off || return 1
	tap_check "netem loss 2%, delay, reorder, duplicate on both ends" \
		sh -c "tc qdisc add dev veth0 root netem loss 2% delay 2ms \
			reorder 25% 50% duplicate 2% &&
		ip netns exec $APPS_NS tc qdisc add dev veth1 root netem \
			loss 2% delay 2ms reorder 25% 50% duplicate 2%"
	for tool in "$@"; do
		tap_check "$c to $s through the lossy path: $tool -R -n 200 -s 65536" \
			apps_perf "$tool" 200 -s 65536
	done
	apps_teardown
}

cleanup
if [ -n "${KIWI_FULL:-}" ] && siw_load; then
	for pair in "kiwi kiwi" "kiwi siw" "siw kiwi"; do
		perf_lossy $pair ib_write_bw ib_read_bw ib_send_bw
	done
	siw_unload
else
	perf_lossy kiwi kiwi ib_write_bw
fi

tap_check "object counts back to zero" wait_for 30 kiwi_counts_zero
tap_done
