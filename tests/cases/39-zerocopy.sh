#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 900
# timeout-full: 1200
#
# Zero-copy transmit (Documentation/datapath.md "Zero copy"), kiwi to kiwi
# across the veth (the server's device in its own namespace, so every
# byte crosses the wire).
#
# Reuse: zc-reuse (tests/verbs) sends 256 messages from 16 buffers in
# turn, every fourth signaled, and rewrites the buffers of each completed
# WR (and of the unsignaled ones before it) at once with a later sequence
# number; the server checks that every message carries its own in every
# word.  Pages go to TCP by reference (tx_zcopy_bytes grows by at least
# half of what was sent) and a WR completes only once the peer's TCP
# acknowledged its bytes; completing when TCP takes them fails this
# (the client rewrites pages TCP has yet to transmit).  64 KiB messages
# with CRC off and required (a user QP's Sends go by reference with CRC
# too), and 4 KiB ones (below tx_zcopy_min: copied; with CRC into kiwi's
# own pages with the CRC in the same pass, tx_crc_copy_bytes, and none
# CRC'd in a pass of its own, tx_crc_pass_bytes 0).
#
# Teardown with zero-copy Sends in flight: the client's egress dropped
# (netem loss 100%), so TCP holds 64 Sends of 64 KiB by reference and no
# ACK comes (tx_zcopy_held > 0); then the QP destroyed, the MR
# deregistered first, the process killed, the client's device removed.
# Each time tx_zcopy_held returns to 0, no TCP socket toward the server
# keeps bytes queued (nor so pages), and the held completions are flushed
# (slub_debug, panic_on_warn); kiwi's object counts are zero at the end.
. "$(dirname "$0")/lib/lib.sh"

ns=kiwizc
srv_ip=198.18.0.2
prog=$KIWI_ROOT/tests/verbs/build/zc-reuse
dbg=/sys/kernel/debug/kiwi
tmp=$(mktemp -d)

cleanup() {
	ip netns pids $ns 2>/dev/null | xargs -r kill -9 2>/dev/null
	[ -n "$cli" ] && kill -9 "$cli" 2>/dev/null
	tc qdisc del dev veth0 root 2>/dev/null
	rdma_pair_teardown $ns kiwizc1 kiwizc0
}
trap 'cleanup; rm -rf "$tmp"' EXIT

setup() {
	kiwi_load &&
	rdma_pair_setup $ns kiwizc0 kiwi kiwizc1 kiwi
}

zc_bytes() { cat $dbg/tx_zcopy_bytes; }
zc_held() { cat $dbg/tx_zcopy_held; }
held_zero() { [ "$(zc_held)" = 0 ]; }
held_some() { [ "$(zc_held)" -gt 0 ]; }

# reuse_pair N SIZE DEPTH SIGNAL PORT MINZC MAXZC: the server checks every
# message; between MINZC and MAXZC bytes went by reference.
reuse_pair() {
	local n=$1 size=$2 depth=$3 sig=$4 port=$5 minzc=$6 maxzc=$7 srv rc z0 z
	z0=$(zc_bytes)
	ip netns exec $ns timeout 150 "$prog" server $srv_ip $port $n $size \
		> $tmp/srv.log 2>&1 &
	srv=$!
	wait_alive 60 $srv tcp_listening $ns $port
	timeout 150 "$prog" client $srv_ip $port $n $size $depth $sig \
		> $tmp/cli.log 2>&1
	rc=$?
	wait $srv || rc=1
	z=$(($(zc_bytes) - z0))
	cat $tmp/srv.log $tmp/cli.log
	echo "bytes by reference: $z (want $minzc to $maxzc)"
	[ $rc -eq 0 ] && [ "$(grep -c '^ok ' $tmp/srv.log)" -eq 4 ] &&
		[ $z -ge $minzc ] && [ $z -le $maxzc ] && wait_for 30 held_zero
}

# teardown_pair ACTION PORT: 64 Sends of 64 KiB held by reference behind a
# dropped wire, then ACTION; nothing stays held.
teardown_pair() {
	local act=$1 port=$2 srv rc=0
	rm -f $tmp/go $tmp/act
	ip netns exec $ns timeout 300 "$prog" server $srv_ip $port 64 65536 \
		> $tmp/srv.log 2>&1 &
	srv=$!
	wait_alive 60 $srv tcp_listening $ns $port || return 1
	"$prog" hold $srv_ip $port 64 65536 $act $tmp > $tmp/cli.log 2>&1 &
	cli=$!
	wait_alive 60 $cli grep -q '^# connected' $tmp/cli.log || rc=1
	tc qdisc add dev veth0 root netem loss 100% || rc=1
	touch $tmp/go
	wait_alive 60 $cli grep -q '^# posted' $tmp/cli.log || rc=1
	if ! wait_for 30 held_some; then
		echo "nothing held by reference"
		rc=1
	fi
	echo "held by reference before $act: $(zc_held) bytes"
	touch $tmp/act
	case $act in
	destroy|dereg)
		wait_for 60 pid_gone $cli || rc=1
		wait $cli || rc=1
		;;
	kill)
		kill -9 $cli
		wait $cli 2>/dev/null
		;;
	remove)
		rdma link del kiwizc0 || rc=1
		kill -9 $cli
		wait $cli 2>/dev/null
		;;
	esac
	cli=
	# well within the 30 s TCP user timeout that would end it anyway
	wait_for 10 held_zero || rc=1
	echo "held by reference after $act: $(zc_held) bytes"
	# and TCP holds none of the pages either: its socket is gone or empty
	wait_for 10 tcp_sendq_empty $port || rc=1
	tc qdisc del dev veth0 root
	# the dropped wire lost ARP too: a resolution it left pending fails
	# later and fails the next pair's SYN with it (EHOSTUNREACH)
	ip neigh flush dev veth0
	kill -9 $srv 2>/dev/null
	wait $srv 2>/dev/null
	cat $tmp/cli.log
	if [ $act = remove ]; then
		rdma link add kiwizc0 type kiwi netdev veth0 || rc=1
	fi
	# the client's connection and QP are gone once the server's is
	wait_for 60 kiwi_count_qps_zero || rc=1
	return $rc
}

kiwi_count_qps_zero() { [ "$(kiwi_count qps)" = 0 ]; }

# tcp_sendq_empty PORT: no TCP socket here toward PORT has bytes queued
tcp_sendq_empty() {
	ss -Htn "dport = :$1" | awk '{ print } $3 != 0 { bad = 1 } END { exit bad }'
}

cleanup
tap_check "setup: kiwi devices on both ends of the veth, server in a netns" setup
kiwi_provider_env
tap_built "$prog"

for crc in off required; do
	tap_check "mpa_crc=$crc on both devices" \
		set_mpa_crc $crc kiwizc0 kiwizc1
	tap_check "256 x 64 KiB Sends from 16 rewritten buffers: each arrives as sent, by reference (crc $crc)" \
		reuse_pair 256 65536 16 4 7371 $((256 * 65536 / 2)) $((256 * 65536))
	c0=$(crc_pass_counts kiwizc0 kiwizc1)
	tap_check "256 x 4 KiB Sends from 16 rewritten buffers: each arrives as sent, copied (crc $crc)" \
		reuse_pair 256 4096 16 4 7372 0 0
	tap_check "the 4 KiB Sends copied with their CRC in one pass, none CRC'd apart (crc $crc)" \
		crc_one_pass $crc $((256 * 4096)) "$c0" kiwizc0 kiwizc1
	tap_diag "tx_crc_copy_bytes tx_crc_pass_bytes, both devices, before the 4 KiB Sends: $c0; after: $(crc_pass_counts kiwizc0 kiwizc1)"
done
set_mpa_crc off kiwizc0 kiwizc1

port=7380
for act in destroy dereg kill remove; do
	port=$((port + 1))
	tap_check "64 x 64 KiB Sends held by reference, then $act: nothing stays held" \
		teardown_pair $act $port
done

cleanup
tap_check "object counts back to zero" kiwi_counts_zero
tap_done
