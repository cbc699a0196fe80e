#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 600
#
# The data path from user space, kiwi to kiwi across the veth pair with the
# server in its own network namespace, MPA CRC off and required: rping
# (Send, RDMA Read, RDMA Write; -V compares every ping buffer) with small
# messages and with messages spanning several FPDUs, then perftest's
# ib_write_bw, ib_read_bw and ib_send_bw (-R: rdma_cm).  Both sides must
# exit 0, and kiwi's object counts return to zero afterwards.
. "$(dirname "$0")/lib.sh"

ns=kiwidp
srv_ip=198.18.0.2

cleanup() {
	ip netns pids $ns 2>/dev/null | xargs -r kill 2>/dev/null
	ip netns exec $ns rdma link del kiwidp1 2>/dev/null
	rdma link del kiwidp0 2>/dev/null
	ip netns del $ns 2>/dev/null
	veth_teardown
}

setup() {
	kiwi_load &&
	veth_setup &&
	ip netns add $ns &&
	ip link set veth1 netns $ns &&
	ip netns exec $ns ip addr add $srv_ip/24 dev veth1 &&
	ip netns exec $ns ip link set veth1 up &&
	ip netns exec $ns ip link set lo up &&
	rdma link add kiwidp0 type kiwi netdev veth0 &&
	ip netns exec $ns rdma link add kiwidp1 type kiwi netdev veth1
}

set_crc() {
	echo "$1" > /sys/class/infiniband/kiwidp0/mpa_crc &&
	echo "$1" > /sys/class/infiniband/kiwidp1/mpa_crc
}

# rping COUNT SIZE: server in the namespace, client verifies every buffer.
rping_pair() {
	local count=$1 size=$2 srv rc try
	ip netns exec $ns timeout 120 rping -s -a $srv_ip -C "$count" \
		-S "$size" -V > /tmp/dp-rping-srv.log 2>&1 &
	srv=$!
	# the server may take a while to listen on a loaded host: retry
	for try in 1 2 3 4 5 6; do
		sleep 2
		timeout 120 rping -c -a $srv_ip -C "$count" -S "$size" -V -v \
			> /tmp/dp-rping-cli.log 2>&1
		rc=$?
		grep -q 'REJECTED, error -111' /tmp/dp-rping-cli.log || break
	done
	wait $srv || rc=1
	cat /tmp/dp-rping-srv.log /tmp/dp-rping-cli.log
	[ $rc -eq 0 ] || return 1
	# one line per verified ping
	[ "$(grep -c '^ping data: ' /tmp/dp-rping-cli.log)" -eq "$count" ]
}

# perftest TOOL: bandwidth test over rdma_cm, both sides must succeed.
perf_pair() {
	local tool=$1 srv rc
	ip netns exec $ns timeout 120 "$tool" -R -d kiwidp1 -n 50 -s 65536 \
		> /tmp/dp-perf-srv.log 2>&1 &
	srv=$!
	sleep 3
	timeout 120 "$tool" -R -d kiwidp0 -n 50 -s 65536 $srv_ip \
		> /tmp/dp-perf-cli.log 2>&1
	rc=$?
	wait $srv || rc=1
	tail -n 3 /tmp/dp-perf-cli.log
	[ $rc -eq 0 ] && grep -q '^ 65536 ' /tmp/dp-perf-cli.log
}

cleanup
tap_check "setup: kiwi devices on both ends of the veth, server in a netns" setup
kiwi_provider_env

for crc in off required; do
	tap_check "mpa_crc=$crc on both devices" set_crc $crc
	tap_check "rping 64 B x 10, verified (crc $crc)" rping_pair 10 64
	tap_check "rping 6000 B x 5, several FPDUs, verified (crc $crc)" \
		rping_pair 5 6000
	for t in ib_write_bw ib_read_bw ib_send_bw; do
		tap_check "$t -R 64 KiB x 50 (crc $crc)" perf_pair $t
	done
done

cleanup
tap_check "object counts back to zero" kiwi_counts_zero
tap_done
