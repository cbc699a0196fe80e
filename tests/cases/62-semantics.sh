#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 420
# timeout-full: 900
#
# Verbs semantics from user space, kiwi to kiwi across the veth pair with
# the server end in a network namespace: tests/verbs/build/semantics runs
# every scenario (SQ full, local protection errors, remote access
# violations and the error completions, events, QP states and disconnects
# they bring at both ends, zero-length operations, the SGE limits, 64 MiB
# messages, a child process killed in the middle of a stream).  Its TAP
# lines are renumbered into this script's.  Afterwards kiwi's object
# counts are zero.  KIWI_FULL=1 adds a run with MPA CRC required, the
# 32 MiB refused Write, and the remote access scenarios against siw as the
# responder (kiwi is the requester, siw sends the Terminates).
. "$(dirname "$0")/lib.sh"

ns=kiwisem
bin=$KIWI_ROOT/tests/verbs/build/semantics
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cleanup() {
	ip netns pids $ns 2>/dev/null | xargs -r kill -9 2>/dev/null
	ip netns exec $ns rdma link del kiwisem1 2>/dev/null
	ip netns exec $ns rdma link del siwsem1 2>/dev/null
	rdma link del kiwisem0 2>/dev/null
	ip netns del $ns 2>/dev/null
	veth_teardown
}

# setup TYPE: kiwi on veth0, TYPE (kiwi or siw) on veth1 in the namespace
setup() {
	local peer=kiwisem1
	[ "$1" = siw ] && peer=siwsem1
	kiwi_load &&
	{ [ "$1" != siw ] || siw_load; } &&
	veth_setup &&
	ip netns add $ns &&
	ip link set veth1 netns $ns &&
	ip netns exec $ns ip addr add 198.18.0.2/24 dev veth1 &&
	ip netns exec $ns ip link set veth1 up &&
	ip netns exec $ns ip link set lo up &&
	rdma link add kiwisem0 type kiwi netdev veth0 &&
	ip netns exec $ns rdma link add $peer type "$1" netdev veth1
}

set_crc() {
	echo "$1" > /sys/class/infiniband/kiwisem0/mpa_crc &&
	echo "$1" > /sys/class/infiniband/kiwisem1/mpa_crc
}

# run LABEL ARGS...: the program's TAP, renumbered; a crash or a missing
# plan fails too.
run() {
	local label=$1 rc
	shift
	timeout 600 "$bin" -c 198.18.0.1 -s 198.18.0.2 \
		-n /var/run/netns/$ns "$@" > "$tmp/out" 2>&1
	rc=$?
	if tap_relay "$label: " "$tmp/out" && [ "$rc" -eq 0 ]; then
		tap_ok "$label: semantics exits 0 with a plan"
	else
		tap_fail "$label: semantics exits 0 with a plan (status $rc)"
	fi
}

kiwi_provider_env
if [ -x "$bin" ]; then
	tap_ok "test program built"
else
	tap_fail "test program built (make -C tests/verbs)"
	tap_done
fi

cleanup
tap_check "setup: kiwi on both ends of the veth, server in a netns" \
	setup kiwi
run kiwi -p 20886
if [ -n "${KIWI_FULL:-}" ]; then
	tap_check "mpa_crc=required on both devices" set_crc required
	run "kiwi crc" -p 20887 -t access,zero,sge,large -L
	set_crc off
fi
cleanup
tap_check "object counts back to zero" kiwi_counts_zero

if [ -n "${KIWI_FULL:-}" ]; then
	tap_check "setup: kiwi requester, siw responder" setup siw
	run "siw responder" -p 20888 -t access -P siw -L
	cleanup
	siw_unload
	tap_check "object counts back to zero after the siw run" \
		kiwi_counts_zero
fi
tap_done
