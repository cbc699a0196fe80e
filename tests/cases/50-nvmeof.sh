#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 900
# timeout-full: 2400
#
# NVMe over Fabrics over kiwi: an nvmet-rdma target exporting a memory-backed
# null_blk namespace and the kernel nvme-rdma host, across a veth pair (see
# nvmeof-lib.sh), for host/target pairings of kiwi and the reference siw,
# with MPA CRC off and on.  Each pairing: connect, the CRC negotiated as seen
# on the wire, fio random writes with crc32c verify headers read back and
# checked (4 KiB, and 4-256 KiB which takes RDMA Read/Write over several
# FPDUs), the bytes crossed the veth, disconnect, and everything removed.
# A kiwi end with CRC copies what it sends with the CRC in the same pass
# (hw counter tx_crc_copy_bytes) and CRCs no payload in a pass of its own
# (tx_crc_pass_bytes 0); without CRC both stay 0.
# Then disconnect/reconnect keeps the data, and kiwi unloads cleanly after
# disconnect with its object counts at zero.  siw to siw is the reference:
# it proves the case itself is right.
#
# KIWI_FULL=1: every pairing (kiwi/siw host x kiwi/siw target x CRC off/on,
# plus a kiwi target without CRC under a siw host that asks for it, and
# kiwi "preferred" against "off") and more data.
# KIWI_NVMF_PAIRS="h:hcrc:t:tcrc ..." runs only those pairings (development).
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/nvmeof-lib.sh"

full=${KIWI_FULL:-0}
# fio sizes: small 4 KiB I/Os cost most under TCG (about 10 ms each)
if [ "$full" = 1 ]; then
	size4k=8M
	size=32M
else
	size4k=1M
	size=4M
fi

# Pairings "host:host_crc:target:target_crc".  A kiwi CRC is its mpa_crc
# policy; siw asks for CRC never, siwcrc as the initiator (build-siw-crc.sh);
# both siws use CRC when the peer asks for it (RFC 5044 7.1.2).
if [ -n "${KIWI_NVMF_PAIRS:-}" ]; then
	pairs=$KIWI_NVMF_PAIRS
elif [ "$full" = 1 ]; then
	pairs="siw:-:siw:- siwcrc:-:siwcrc:-
	       kiwi:off:kiwi:off kiwi:required:kiwi:required
	       kiwi:preferred:kiwi:off kiwi:off:kiwi:preferred
	       kiwi:off:kiwi:required
	       kiwi:off:siw:- kiwi:required:siw:-
	       siw:-:kiwi:off siw:-:kiwi:preferred siw:-:kiwi:required
	       siwcrc:-:kiwi:off"
else
	pairs="siw:-:siw:-
	       kiwi:off:kiwi:off kiwi:required:kiwi:required
	       kiwi:required:siw:- siw:-:kiwi:off"
fi

nvmf_trap_cleanup
nvmf_dmesg_mark
tap_check "veth pair with cross-wired routes" nvmf_net_setup

tap_check "MPA frame capture on veth0" nvmf_sniff_start

cleanup_pairing() {
	nvmf_disconnect > /dev/null 2>&1
	nvmf_target_teardown > /dev/null 2>&1
	nvmf_links_del > /dev/null 2>&1
}

zc_bytes() {
	cat /sys/kernel/debug/kiwi/tx_zcopy_bytes 2>/dev/null || echo 0
}

# check_zcopy LABEL CRC Z0: a kiwi host serves the target's RDMA Reads
# (host writes of more than the in-capsule size) from the bio's pages:
# by page reference without CRC, copied with CRC (datapath.md).
check_zcopy() {
	local z=$(($(zc_bytes) - $3)) min=$((${size%M} * 1048576 / 4))
	if [ "$2" = 0 ] && [ $z -ge $min ]; then
		tap_ok "$1: Read Responses sent by page reference ($z bytes)"
	elif [ "$2" = 1 ] && [ $z = 0 ]; then
		tap_ok "$1: with CRC, Read Responses copied (0 bytes by reference)"
	else
		tap_fail "$1: Read Responses by reference: $z bytes with crc $2 (want >= $min without CRC, 0 with)"
	fi
}

# run_pairing HOST HCRC TARGET TCRC
run_pairing() {
	local h=$1 hc=$2 t=$3 tc=$4 want label b0 b1 tx rx min ok=1 st z0
	local hreq refused=0 want_pol d
	hreq=$(nvmf_requests_crc "$h" "$hc" host)
	want=$(( hreq | $(nvmf_requests_crc "$t" "$tc" target) ))
	# kiwi's "required" responder refuses a Request without C
	# (Documentation/cm.md): the connection must fail.
	[ "$t" = kiwi ] && [ "$tc" = required ] && [ "$hreq" = 0 ] && refused=1
	label=$h
	[ "$hc" = - ] || label="$label($hc)"
	label="$label host -> $t"
	[ "$tc" = - ] || label="$label($tc)"
	if [ $refused = 1 ]; then
		label="$label target, refused (CRC required)"
	else
		label="$label target, crc $want"
	fi
	want_pol=on
	[ "$want" = 1 ] || want_pol=off

	if [ "$h" = siwcrc ] || [ "$t" = siwcrc ]; then
		if [ ! -f "$KIWI_SIW_CRC_KO" ]; then
			tap_skip "$label" "no $KIWI_SIW_CRC_KO (tests/bench/build-siw-crc.sh)"
			return
		fi
	fi
	# One siw module at a time: siw and siwcrc cannot be mixed.
	if [ "$h" != kiwi ] && [ "$t" != kiwi ] && [ "$h" != "$t" ]; then
		tap_fail "$label: siw and siwcrc cannot be loaded together"
		return
	fi
	tap_check "$label: RDMA links on both ends" \
		eval "nvmf_link_add $NVMF_HOST_DEV $h veth0 ${hc#-} &&
		      nvmf_link_add $NVMF_TGT_DEV $t veth1 ${tc#-}" || ok=0
	[ $ok = 1 ] && { tap_check "$label: nvmet target on rdma port" \
		nvmf_target_setup || ok=0; }
	if [ $ok = 1 ] && [ $refused = 1 ]; then
		nvmf_sniff_mark
		tap_check_fails "$label: nvme connect fails" nvmf_connect
		tap_check "$label: MPA Reply with R and C (on the wire)" \
			nvmf_sniff_check_refused
		ok=0
	fi
	if [ $ok = 1 ]; then
		nvmf_sniff_mark
		b0=$(nvmf_veth_bytes)
		tap_check "$label: nvme connect" nvmf_connect || {
			ok=0
			tap_diag "kernel log:"
			nvmf_dmesg_since_mark | tail -n 15 | sed 's/^/#   /'
		}
		NVMF_DEV=$(nvmf_ns_bdev)
	fi
	if [ $ok = 1 ]; then
		st=$(nvmf_ctrl_state)
		if [ "$st" = live ] && [ -n "$NVMF_DEV" ]; then
			tap_ok "$label: controller $(nvmf_ctrl) live, namespace $NVMF_DEV"
		else
			tap_fail "$label: controller live (state $st)"
		fi
		z0=$(zc_bytes)
		tap_check "$label: fio 4 KiB random write + crc32c verify ($size4k)" \
			nvmf_fio_verify v4k "$NVMF_DEV" "$size4k" 4k
		tap_check "$label: fio 4-256 KiB random write + crc32c verify ($size)" \
			nvmf_fio_verify vmix "$NVMF_DEV" "$size" 4k-256k \
			--offset=$((NVMF_SIZE_MB / 2))M
		[ "$h" = kiwi ] && check_zcopy "$label" "$want" "$z0"
		[ "$h" = kiwi ] && tap_check \
			"$label: host's Read Responses and Sends: CRC in the copy's pass, none apart" \
			crc_one_pass "$want_pol" $((${size%M} * 1048576 / 4)) "0 0" \
			$NVMF_HOST_DEV
		[ "$t" = kiwi ] && tap_check \
			"$label: target's Writes and Sends: CRC in the copy's pass, none apart" \
			crc_one_pass "$want_pol" $((${size%M} * 1048576 / 4)) "0 0" \
			$NVMF_TGT_DEV
		for d in $NVMF_HOST_DEV:$h $NVMF_TGT_DEV:$t; do
			[ "${d#*:}" = kiwi ] && tap_diag "${d%:*}: tx_crc_copy_bytes tx_crc_pass_bytes $(crc_pass_counts ${d%:*})"
		done
		[ "$h" = kiwi ] && tap_check \
			"$label: host re-mapped its MRs (REG_MR), the target invalidated them, data placed into them" \
			frmr_used $NVMF_HOST_DEV host
		[ "$t" = kiwi ] && tap_check \
			"$label: target registered its Read sinks (REG_MR), Read Responses placed into them" \
			frmr_used $NVMF_TGT_DEV target
		tap_check "$label: MPA reply crc=$want on every queue (on the wire)" \
			nvmf_sniff_check $want
		b1=$(nvmf_veth_bytes)
		# Both fio jobs write and read back their data.  Loopback
		# would leave the veth counters near zero; ask for half the
		# sizes each way (with random block sizes fio stops when no
		# free range fits: 4-256 KiB over 4 MiB writes 2.5 MiB).
		min=$(((${size4k%M} + ${size%M}) * 1048576 / 2))
		nvmf_veth_crossed "$label: the I/O crossed the veth" "$b0" "$b1" $min
		tap_check "$label: nvme disconnect" nvmf_disconnect
	fi
	cleanup_pairing
	tap_check "$label: target and links removed" eval \
		"[ ! -d $NVMET_CFG/subsystems/$NVMF_NQN ] &&
		 [ ! -e /sys/class/infiniband/$NVMF_HOST_DEV ] &&
		 [ ! -e /sys/class/infiniband/$NVMF_TGT_DEV ]"
	if [ "$h" = kiwi ] || [ "$t" = kiwi ]; then
		tap_check "$label: kiwi object counts back to zero" \
			nvmf_wait 10 kiwi_counts_zero
	fi
}

# frmr_used DEV host|target: the fast-registration paths ran on DEV (hw
# counters since its link was added).  An NVMe-oF host maps each I/O's
# buffer into an MR of its pool with REG_MR (re-mapping the pool's MRs,
# more I/Os than the pool has MRs), the target's Writes land in them,
# and the target's response invalidates them (Send with Invalidate) or
# the host does (LOCAL_INV).  An iWARP target registers each Read's sink
# the same way (from a pool of its own, maybe larger than this I/O).
frmr_used() {
	local c=/sys/class/infiniband/$1/ports/1/hw_counters reg remap inv placed
	reg=$(cat $c/fastreg_wrs)
	remap=$(cat $c/fastreg_remaps)
	inv=$(( $(cat $c/remote_invalidations) + $(cat $c/local_invalidations) ))
	placed=$(cat $c/fastreg_placed)
	echo "$1: fastreg_wrs $reg fastreg_remaps $remap invalidations $inv fastreg_placed $placed"
	[ "$reg" -gt 0 ] && [ "$placed" -gt 0 ] &&
	{ [ "$2" = target ] || { [ "$remap" -gt 0 ] && [ "$inv" -gt 0 ]; }; }
}

for p in $pairs; do
	IFS=: read -r h hc t tc <<< "$p"
	t0=$SECONDS
	run_pairing "$h" "$hc" "$t" "$tc"
	tap_diag "pairing $p took $((SECONDS - t0)) s"
done

# reconnect PROVIDER: data written before a disconnect is read back intact
# after a reconnect, then the provider's module unloads (nothing holds it).
reconnect_and_unload() {
	local prov=$1 mod label ok=1
	mod=$(nvmf_provider_type "$prov")
	label="$prov -> $prov"
	tap_check "$label: links and target for reconnect" eval \
		"nvmf_link_add $NVMF_HOST_DEV $prov veth0 &&
		 nvmf_link_add $NVMF_TGT_DEV $prov veth1 &&
		 nvmf_target_setup && nvmf_connect" || ok=0
	NVMF_DEV=$(nvmf_ns_bdev)
	if [ $ok = 1 ]; then
		tap_check "$label: write 2 MiB with verify headers" \
			nvmf_fio_verify keep "$NVMF_DEV" 2M 16k
		tap_check "$label: disconnect removes the controller" nvmf_disconnect
		tap_check "$label: reconnect" nvmf_connect
		NVMF_DEV=$(nvmf_ns_bdev)
		tap_check "$label: data from before the disconnect verifies" \
			nvmf_fio_reverify keep "$NVMF_DEV" 2M 16k
		tap_check "$label: second disconnect" nvmf_disconnect
	fi
	cleanup_pairing
	if [ "$mod" = kiwi ]; then
		tap_check "$label: object counts zero after disconnect" \
			nvmf_wait 10 kiwi_counts_zero
	fi
	tap_check "$label: rmmod $mod after disconnect" rmmod "$mod"
	tap_check "$label: $mod reloads" nvmf_provider_load "$prov"
}

[ "$full" = 1 ] && reconnect_and_unload siw
reconnect_and_unload kiwi

# A user process naming a kernel QP's number in rdma_connect() (librdmacm
# passes conn_param.qp_num when its id has no QP of its own): nvme-rdma's
# QP for a target that never answers the MPA Request waits in INIT for
# connect_timeout_ms; the process's connect must be refused with EINVAL
# (semantics' "steal" child), not take that QP over.
steal_kernel_qp() {
	local lpid cpid qpn rc=0 bin=$KIWI_ROOT/tests/verbs/build/semantics
	local tmp_steal=/tmp/nvmf-steal.log
	nvmf_link_add $NVMF_HOST_DEV kiwi veth0 off || return 1
	nvmf_link_add $NVMF_TGT_DEV kiwi veth1 off || return 1
	local cto
	cto=$(cat /sys/module/kiwi/parameters/connect_timeout_ms)
	echo 30000 > /sys/module/kiwi/parameters/connect_timeout_ms
	# a TCP listener that accepts and never answers
	python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 4430)); s.listen(8); c = [s.accept()]; time.sleep(120)' \
		$NVMF_TGT_IP > /dev/null 2>&1 &
	lpid=$!
	wait_for 10 tcp_listening "" 4430 || { kill $lpid; return 1; }
	modprobe -a nvme-rdma nvme-fabrics
	nvme connect -t rdma -a $NVMF_TGT_IP -s 4430 -n nqn.2026-12.kiwi:steal \
		--hostnqn=$NVMF_HOSTNQN --hostid=$NVMF_HOSTID > $tmp_steal 2>&1 &
	cpid=$!
	# a kernel QP shows no pid (its comm is the creating module's,
	# rdma_cm for rdma_create_qp()); nvme-rdma's is the only one there
	wait_for 20 sh -c "rdma res show qp link $NVMF_HOST_DEV/1 | grep -q lqpn"
	qpn=$(rdma -j res show qp link $NVMF_HOST_DEV/1 | python3 -c '
import json, sys
for q in json.load(sys.stdin):
    if "pid" not in q and q.get("state") in ("INIT", "RTR"):
        print(q["lqpn"]); break')
	echo "nvme-rdma's QP: ${qpn:-none}"
	[ -n "$qpn" ] || { rdma -j res show qp; cat $tmp_steal; }
	if [ -n "$qpn" ]; then
		kiwi_provider_env
		"$bin" --child "steal:$qpn" -c $NVMF_HOST_IP -s $NVMF_TGT_IP \
			-p 4431 || rc=1
	else
		rc=1
	fi
	kill $lpid
	wait $lpid 2> /dev/null
	wait $cpid
	echo "$cto" > /sys/module/kiwi/parameters/connect_timeout_ms
	nvmf_links_del
	return $rc
}
tap_check "a user's rdma_connect() naming nvme-rdma's kernel QP fails with EINVAL" \
	steal_kernel_qp
tap_check "object counts zero after the refused takeover" nvmf_wait 10 kiwi_counts_zero

nvmf_sniff_stop
nvmf_finish
