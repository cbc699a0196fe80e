#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 300
# timeout-full: 600
#
# The kernel-bypass fast path, kiwi to kiwi across the veth pair with the
# server's device in its own network namespace: tests/verbs/build/fastpath
# connects QPs with librdmacm in one process and checks doorbell elision
# (kiwi's debugfs doorbell counter), inline data, posting from several
# threads on one QP, RQ and SRQ, two QPs on one SRQ and completion events
# through a channel.  MPA CRC off; with KIWI_FULL=1 also required (the
# fast path does not depend on it, the engine's framing does).  Its TAP
# lines are re-numbered into this script's; kiwi's object counts return
# to zero.
. "$(dirname "$0")/lib/lib.sh"

bin=$KIWI_ROOT/tests/verbs/build/fastpath
ns=kiwifp
srv_ip=198.18.0.2

cleanup() {
	rdma_pair_teardown $ns kiwifp1 kiwifp0
}

setup() {
	kiwi_load &&
	rdma_pair_setup $ns kiwifp0 kiwi kiwifp1 kiwi
}

set_crc() {
	set_mpa_crc "$1" kiwifp0 kiwifp1
}

tap_built "$bin" || tap_done
cleanup
tap_check "setup: kiwi devices on both ends of the veth, server in a netns" setup
# rdma_cm's first resolve to a neighbour not yet known can wait out its
# timeout (the ARP reply comes before the request is queued): know it first
tap_check "the server's address answers a ping (its neighbour known)" \
	ping -c 1 -W 10 $srv_ip
kiwi_provider_env

crcs=off
[ "${KIWI_FULL:-0}" = 1 ] && crcs="off required"
for crc in $crcs; do
	tap_check "mpa_crc=$crc on both devices" set_crc $crc
	KIWI_FP_SHAPE_DEV=veth0 \
		tap_program "crc $crc" 240 "$bin" $ns $srv_ip kiwifp0 kiwifp1
done

# A kiwi.ko without the doorbell method (older than the provider): the
# shim refuses the method as ib_uverbs would, and libkiwi rings with
# POST_SEND instead; the same checks must pass.
legacy=$KIWI_ROOT/tests/verbs/build/libdb-legacy.so
# the devices keep the loop's last mpa_crc setting
crc=${crcs##* }
log=/tmp/kiwifp-db-legacy.log
rm -f $log
if [ -f "$legacy" ]; then
	KIWI_FP_SHAPE_DEV=veth0 LD_PRELOAD=$legacy KIWI_DB_LEGACY_LOG=$log \
		tap_program "crc $crc, doorbell by POST_SEND" 240 "$bin" $ns \
		$srv_ip kiwifp0 kiwifp1
	tap_check "the POST_SEND run went through the shim (its method refused)" \
		grep -qx refused $log
else
	tap_fail "tests/verbs/build/libdb-legacy.so built"
fi

cleanup
tap_check "object counts back to zero" kiwi_counts_zero
tap_done
