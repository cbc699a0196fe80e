#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 600
#
# The data path from user space, kiwi to kiwi across the veth pair with the
# server in its own network namespace, MPA CRC off and required: rping
# (Send, RDMA Read, RDMA Write; -V compares every ping buffer) with small
# messages, an odd size (buffers not page aligned), messages spanning
# several FPDUs, then perftest's ib_write_bw, ib_read_bw and ib_send_bw
# (-R: rdma_cm).  Both sides must exit 0, and kiwi's object counts return
# to zero afterwards.  rping does not check the peer's advertised length
# against its own buffer: a server left at the default -S (64) must fail
# the client's -S 1000 Read into its 64 B MR with IB_WC_LOC_PROT_ERR (4),
# as siw does.  inline-burst (tests/verbs): 32 inline Sends of different
# lengths and bytes posted in one list arrive each with its own.  The type
# of service a client sets with rdma_cm (ucmatose -t) is read from the IP
# headers of the connection's segments captured on the veth, both ways.
# With CRC, the hw counters show no payload byte CRC'd in a pass apart
# from its copy (tx_crc_pass_bytes) and the Read Responses at least copied
# into kiwi's pages with their CRC (tx_crc_copy_bytes); without, neither;
# with kiwi's copy turned off (debugfs tx_crc_own N), tx_crc_pass_bytes
# counts rping's Reads and Writes.
. "$(dirname "$0")/lib/lib.sh"

ns=kiwidp
srv_ip=198.18.0.2

cleanup() {
	ip netns pids $ns 2>/dev/null | xargs -r kill 2>/dev/null
	rdma_pair_teardown $ns kiwidp1 kiwidp0
}

setup() {
	kiwi_load &&
	rdma_pair_setup $ns kiwidp0 kiwi kiwidp1 kiwi
}

set_crc() {
	set_mpa_crc "$1" kiwidp0 kiwidp1
}

# rping COUNT SIZE: server in the namespace, client verifies every buffer.
rping_pair() {
	local count=$1 size=$2 srv rc
	ip netns exec $ns timeout 120 rping -s -a $srv_ip -C "$count" \
		-S "$size" -V > /tmp/dp-rping-srv.log 2>&1 &
	srv=$!
	# a server on a loaded host may take a while to listen; its client
	# must not connect before
	wait_for 60 tcp_listening $ns 7174	# rping's port
	timeout 120 rping -c -a $srv_ip -C "$count" -S "$size" -V -v \
		> /tmp/dp-rping-cli.log 2>&1
	rc=$?
	wait $srv || rc=1
	cat /tmp/dp-rping-srv.log /tmp/dp-rping-cli.log
	[ $rc -eq 0 ] || return 1
	# one line per verified ping
	[ "$(grep -c '^ping data: ' /tmp/dp-rping-cli.log)" -eq "$count" ]
}

# crc_pass_seen: with tx_crc_own N and CRC on, rping 6000 B x 5 passes
# and its 5 Reads and 5 Writes of 6000 B are CRC'd in a pass of their
# own (tx_crc_pass_bytes), none copied with the CRC.
crc_pass_seen() {
	local own=/sys/kernel/debug/kiwi/tx_crc_own c0 p0 c p rc
	read -r c0 p0 <<< "$(crc_pass_counts kiwidp0 kiwidp1)"
	echo N > $own || return 1
	rping_pair 5 6000
	rc=$?
	echo Y > $own
	read -r c p <<< "$(crc_pass_counts kiwidp0 kiwidp1)"
	echo "tx_crc_copy_bytes +$((c - c0)), tx_crc_pass_bytes +$((p - p0))"
	[ $rc -eq 0 ] && [ $((p - p0)) -ge $((2 * 5 * 6000)) ] &&
		[ $((c - c0)) -eq 0 ]
}

# A server Read larger than its sink MR: a local protection error.
rping_short_sink() {
	local srv
	ip netns exec $ns timeout 60 rping -s -a $srv_ip -C 1 \
		> /tmp/dp-rping-srv.log 2>&1 &
	srv=$!
	wait_for 60 tcp_listening $ns 7174
	timeout 60 rping -c -a $srv_ip -C 1 -S 1000 -v \
		> /tmp/dp-rping-cli.log 2>&1
	wait $srv
	cat /tmp/dp-rping-srv.log /tmp/dp-rping-cli.log
	grep -q 'cq completion failed status 4' /tmp/dp-rping-srv.log
}

# 32 inline Sends in one post; the server checks each one's length and bytes.
inline_pair() {
	local ib=$KIWI_ROOT/tests/verbs/build/inline-burst srv rc
	[ -x "$ib" ] || { echo "no $ib (make -C tests/verbs)"; return 1; }
	ip netns exec $ns timeout 60 "$ib" server $srv_ip 7030 32 \
		> /tmp/dp-ib-srv.log 2>&1 &
	srv=$!
	wait_for 60 tcp_listening $ns 7030
	timeout 60 "$ib" client $srv_ip 7030 32 > /tmp/dp-ib-cli.log 2>&1
	rc=$?
	wait $srv || rc=1
	cat /tmp/dp-ib-srv.log /tmp/dp-ib-cli.log
	[ $rc -eq 0 ] && [ "$(grep -c '^ok ' /tmp/dp-ib-srv.log)" -eq 4 ]
}

# perftest TOOL: bandwidth test over rdma_cm, both sides must succeed.
#
# perftest -R makes two connections to the same port: one to exchange
# parameters, then, after a handshake on it, the data QPs'.  Its server
# creates the listener for the data QPs only after that handshake, while
# its client connects them right away (create_rdma_cm_connection()); a
# client that gets there first is refused (REJECTED, -111), and perftest's
# retry of that reuses the cm_ids it has just destroyed (a segfault in
# librdmacm).  So the client's second rdma_connect() waits until the
# server's second rdma_listen() has returned (libconnect-gate.so).
#
# -F: once the transfer is done, perftest converts cycles to seconds with
# a CPU frequency it samples (200 rdtsc/gettimeofday pairs, a linear
# fit); when the fit's r^2 is below 0.9, which a TCG guest on a loaded
# host produces now and then, it prints "Can't produce a report" and
# exits 1 unless -F is given (then its numbers are 0).  The bandwidth is
# not what this case checks; the transfer and both exit statuses are.
perf_pair() {
	local tool=$1 gate=/tmp/dp-perf-gate srv rc
	local lib=$KIWI_ROOT/tests/verbs/build/libconnect-gate.so
	[ -f "$lib" ] || { echo "no $lib (make -C tests/verbs)"; return 1; }
	rm -f $gate
	# line-buffered, so that an error stays next to what came before it
	ip netns exec $ns env LD_PRELOAD="$lib" KIWI_LISTEN_GATE=$gate \
		KIWI_LISTEN_GATE_SKIP=1 timeout 120 stdbuf -oL "$tool" -R -F \
		-d kiwidp1 -n 50 -s 65536 > /tmp/dp-perf-srv.log 2>&1 &
	srv=$!
	wait_for 60 tcp_listening $ns 18515	# perftest's port
	LD_PRELOAD=$lib KIWI_CONNECT_GATE=$gate KIWI_CONNECT_GATE_SKIP=1 \
		timeout 120 stdbuf -oL "$tool" -R -F -d kiwidp0 -n 50 -s 65536 \
		$srv_ip > /tmp/dp-perf-cli.log 2>&1
	rc=$?
	wait $srv || rc=$((rc + 100))
	# the verdict first (tap_check shows the first lines), both ends' ends
	echo "client status $((rc % 100)), server $([ $rc -ge 100 ] && echo failed || echo ok)"
	tail -n 8 /tmp/dp-perf-cli.log
	echo "--- server:"
	tail -n 8 /tmp/dp-perf-srv.log
	[ $rc -eq 0 ] && grep -q '^ 65536 ' /tmp/dp-perf-cli.log
}

# tos_capture PORT OUT: a raw socket on veth0 (the client's end) writes to
# OUT, once bound "ready", then a line for every IPv4 TCP segment to or
# from PORT: its direction (c2s, s2c), the IP header's TOS byte without
# its ECN bits (TCP's own) in hex, and "syn" on a SYN or SYN-ACK.
# Sets tos_cap to its pid.
tos_capture() {
	timeout 120 python3 - "$1" > "$2" 2>&1 <<'PY' &
import socket, struct, sys
port = int(sys.argv[1])
# ETH_P_ALL: a socket for one protocol sees only what the device takes
# in, not what it sends
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("veth0", 0))
print("ready", flush=True)
while True:
    frame = s.recv(65536)
    ip = frame[14:]
    if frame[12:14] != b"\x08\x00" or len(ip) < 20 or ip[9] != 6:
        continue
    tcp = ip[(ip[0] & 15) * 4:]
    sport, dport = struct.unpack("!HH", tcp[:4])
    way = "c2s" if dport == port else "s2c" if sport == port else None
    if way:
        iplen = struct.unpack("!H", ip[2:4])[0]
        data = iplen - (ip[0] & 15) * 4 - (tcp[12] >> 4) * 4
        kind = "syn" if tcp[13] & 2 else "data" if data > 0 else "ack"
        print(way, "%02x" % (ip[1] & 0xfc), kind, flush=True)
PY
	tos_cap=$!
}

# tos_pair TOS WANT: ucmatose (rdma_cm, 10 Sends each way) kiwi to kiwi
# across the namespaces, the client with -t TOS ("" for none), the server
# with none; every segment captured on the veth, both ways, must carry
# WANT, but for the server's SYN-ACK and at most one pure ACK before kiwi
# takes the accepted connection: the listener sends those, with its own
# TOS (00; cm.md "Type of service").
tos_pair() {
	local tos=$1 want=$2 cap=/tmp/dp-tos.cap srv rc bad early
	tos_capture 7471 $cap
	wait_for 30 grep -q '^ready' $cap || { cat $cap; return 1; }
	ip netns exec $ns timeout 60 ucmatose -b $srv_ip \
		> /tmp/dp-tos-srv.log 2>&1 &
	srv=$!
	wait_for 60 tcp_listening $ns 7471	# ucmatose's port
	timeout 60 ucmatose -s $srv_ip ${tos:+-t $tos} \
		> /tmp/dp-tos-cli.log 2>&1
	rc=$?
	wait $srv || rc=1
	kill $tos_cap 2>/dev/null
	wait $tos_cap 2>/dev/null
	echo "ucmatose status $rc; segments (direction tos count):"
	grep -v '^ready' $cap | sort | uniq -c
	[ $rc -eq 0 ] || { tail -n 5 /tmp/dp-tos-cli.log /tmp/dp-tos-srv.log; return 1; }
	bad=$(awk -v w="$want" '$1 == "c2s" && $2 != w ||
		$1 == "s2c" && $3 == "data" && $2 != w' $cap | wc -l)
	early=$(awk -v w="$want" '$1 == "s2c" && $3 == "ack" && $2 != w' $cap | wc -l)
	[ "$bad" -eq 0 ] && [ "$early" -le 1 ] &&
		[ "$(grep -c '^c2s' $cap)" -ge 5 ] &&
		[ "$(grep -c '^s2c [0-9a-f]* data$' $cap)" -ge 1 ] &&
		[ "$(grep -c '^s2c [0-9a-f]* \(ack\|data\)$' $cap)" -ge 5 ]
}

cleanup
tap_check "setup: kiwi devices on both ends of the veth, server in a netns" setup
kiwi_provider_env

for crc in off required; do
	tap_check "mpa_crc=$crc on both devices" set_crc $crc
	c0=$(crc_pass_counts kiwidp0 kiwidp1)
	r0=$(cat /sys/kernel/debug/kiwi/crc_runs)
	tap_check "rping 64 B x 10, verified (crc $crc)" rping_pair 10 64
	tap_check "rping 1000 B x 3, unaligned buffers (crc $crc)" \
		rping_pair 3 1000
	tap_check "rping 6000 B x 5, several FPDUs, verified (crc $crc)" \
		rping_pair 5 6000
	tap_check "32 inline Sends in one post, each arrives intact (crc $crc)" \
		inline_pair
	for t in ib_write_bw ib_read_bw ib_send_bw; do
		tap_check "$t -R 64 KiB x 50 (crc $crc)" perf_pair $t
	done
	# With CRC, what does not go by reference (rping's messages, the
	# inline Sends, ib_read_bw's Read Responses) is copied with its CRC
	# in the same pass; nothing is CRC'd in a pass of its own
	# (datapath.md "One pass per byte with CRC").
	tap_check "one pass per byte: no payload CRC'd apart from its copy, Read Responses copied with CRC (crc $crc)" \
		crc_one_pass $crc $((50 * 65536)) "$c0" kiwidp0 kiwidp1
	tap_diag "tx_crc_copy_bytes tx_crc_pass_bytes, both devices, before the crc $crc passes: $c0; after: $(crc_pass_counts kiwidp0 kiwidp1)"
	# With CRC, long copies hold the vector registers once per FPDU
	# (kiwi_load sets crc_run_hold in test guests, whose emulated CPU
	# has no AVX-512), and every byte above was verified meanwhile
	r1=$(cat /sys/kernel/debug/kiwi/crc_runs)
	if [ $crc = off ]; then
		tap_check "no CRC run without CRC ($r0 -> $r1)" test "$r1" = "$r0"
	else
		tap_check "CRC runs held per FPDU during the transfers ($r0 -> $r1)" \
			test "$r1" -ge $((r0 + 50))
	fi
done
# The counter sees a separate CRC pass: with kiwi's copy turned off
# (debugfs tx_crc_own N), rping's Reads and Writes are CRC'd apart.
tap_check "tx_crc_own N: rping 6000 B x 5 verified, its Read Responses and Writes counted in tx_crc_pass_bytes" \
	crc_pass_seen

tap_check "server at 64 B, client at 1000 B: Read fails with status 4" \
	rping_short_sink

# rdma_cm's type of service reaches the IP header of the connection, both
# ways: the initiator's own, and the responder's taken from it (as irdma
# and cxgb4 answer) when its listener set none.  Without -t all is 00.
tap_check "ucmatose without -t: TOS 00 on the wire both ways" tos_pair "" 00
tap_check "ucmatose -t 32: TOS 0x20 on the wire both ways" tos_pair 32 20
tap_check "ucmatose -t 0xb8 (DSCP EF): TOS 0xb8 on the wire both ways" \
	tos_pair 0xb8 b8

cleanup
tap_check "object counts back to zero" kiwi_counts_zero
tap_done
