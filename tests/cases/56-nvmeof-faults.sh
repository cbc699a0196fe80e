#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 600
# timeout-full: 900
#
# NVMe over Fabrics over kiwi on a bad network (setup in nvmeof-lib.sh:
# both ends in init_net, routes crossed so every byte crosses the veth).
# With tc netem on both veth ends (2 % loss, 2 ms delay, 25 % reordering,
# 2 % duplication), fio's random writes with crc32c verify read back
# intact.  Then the path goes dead (netem loss 100 %) for 10 s under a
# running fio verify, longer than the devices' TCP user timeout (3 s
# here): the kiwi connections fail, the host controller leaves "live",
# reconnects once the path is back, and the fio verify completes without
# an error.  Afterwards kiwi's object counts are zero and dmesg is clean.
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/nvmeof-lib.sh"

connect_opts="--reconnect-delay=2 --ctrl-loss-tmo=120"

netem() {
	tc qdisc replace dev veth0 root netem "$@" &&
	tc qdisc replace dev veth1 root netem "$@"
}

netem_off() {
	tc qdisc del dev veth0 root 2>/dev/null
	tc qdisc del dev veth1 root 2>/dev/null
	return 0
}

ctrl_live() { [ "$(nvmf_ctrl_state)" = live ]; }

links_up() {
	local d
	nvmf_link_add $NVMF_HOST_DEV kiwi veth0 &&
	nvmf_link_add $NVMF_TGT_DEV kiwi veth1 || return 1
	for d in $NVMF_HOST_DEV $NVMF_TGT_DEV; do
		echo 3000 > /sys/class/infiniband/$d/tcp_user_timeout_ms &&
		echo 2 > /sys/class/infiniband/$d/tcp_keepalive_s || return 1
	done
}

nvmf_trap_cleanup
trap 'netem_off; nvmf_cleanup_all' EXIT
nvmf_dmesg_mark
modprobe sch_netem 2>/dev/null
tap_check "veth pair with cross-wired routes" nvmf_net_setup
tap_check "kiwi devices, TCP user timeout 3 s, keepalive 2 s" links_up
tap_check "nvmet-rdma target on a null_blk namespace" nvmf_target_setup
tap_check "nvme-rdma host connects" nvmf_connect $connect_opts

tap_check "netem loss 2%, delay 2 ms, reorder 25%, duplicate 2% on both ends" \
	netem loss 2% delay 2ms reorder 25% 50% duplicate 2%
b0=$(nvmf_veth_bytes)
tap_check "fio randwrite 4 MiB, 16 KiB blocks, crc32c verify, through the lossy path" \
	nvmf_fio_verify lossy "$NVMF_DEV" 4M 16k
b1=$(nvmf_veth_bytes)
tap_check "its bytes crossed the veth (> 8 MiB both ways together)" \
	test $(( ${b1% *} + ${b1#* } - ${b0% *} - ${b0#* } )) -gt 8388608
netem_off

# a dead path for 10 s under I/O
b0=$(nvmf_veth_bytes)
fio --name=outage --filename="$NVMF_DEV" --direct=1 --ioengine=libaio \
	--rw=randwrite --bs=16k --size=8M --iodepth=8 --verify=crc32c \
	--do_verify=1 --verify_fatal=1 --randseed=4421 --verify_state_save=0 \
	--rate=2m > /tmp/nvmf-outage.out 2>&1 &
fp=$!
tap_check "outage: fio is writing (1 MiB over the veth within 30 s)" \
	nvmf_wait 30 nvmf_io_moving "$b0" 1048576
netem loss 100%
t0=$SECONDS
left=0
for i in $(seq 40); do
	ctrl_live || { left=$((SECONDS - t0)); break; }
	sleep 0.5
done
sleep $((10 - (SECONDS - t0) > 0 ? 10 - (SECONDS - t0) : 0))
netem_off
tap_diag "the controller left live ${left} s into the outage ($(nvmf_ctrl_state) at its end)"
tap_check "outage: the host controller left live (the connections failed)" \
	test "$left" -gt 0
tap_check "outage: the controller is live again within 60 s of the path" \
	nvmf_wait 60 ctrl_live
tap_diag "live again $((SECONDS - t0 - 10)) s after the path came back"
rc=0
wait $fp || rc=$?
tap_check "outage: the fio running through it completes and verifies (exit 0)" \
	sh -c "[ $rc -eq 0 ] || { tail -n 5 /tmp/nvmf-outage.out; false; }"

tap_check "disconnect" nvmf_disconnect
tap_check "target removed" nvmf_target_teardown
tap_check "devices removed" nvmf_links_del
netem_off
nvmf_net_teardown
tap_check "object counts back to zero" nvmf_wait 15 kiwi_counts_zero
tap_check "no kernel warnings in dmesg" nvmf_dmesg_clean
tap_done
