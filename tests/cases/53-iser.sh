#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 1500
# timeout-full: 3000
#
# iSER over kiwi: the LIO iSCSI target (configfs) with a portal that serves
# iSCSI/TCP and, switched on beside it, iSER (ib_isert) on the same address
# and port, exporting a ramdisk; open-iscsi's initiator logs in through its
# "iser" interface (ib_iser).  Both ends in init_net on nvmeof-lib's veth
# pair with crossed routes, so the bytes cross the veth.
#
# LIO's iSER portal listens on the address and port its TCP portal already
# holds.  kiwi, like siw, listens with a host TCP socket, so that collides
# (EADDRINUSE) unless the iWARP port mapper moves the RDMA listener to a
# port of its own: the target's device has port_map on and iwpmd runs; the
# initiator's iwpmd asks the target's (here the same daemon) for the
# mapped port.  Checked: enabling iSER fails with port_map off and works
# with it on, the TCP portal keeps serving (sendtargets discovery and an
# iSCSI/TCP login beside the iSER session), the session is iSER, fio random
# writes with crc32c verify read back, with tx_direct on the target's
# posts went out from isert's own context (posts_direct), logout and login
# again keep the data, the bytes crossed the veth, and everything goes
# away with kiwi's object counts back to zero.  Then, under fio: the
# target's device deleted, and kiwi removed (both devices, rmmod): the
# initiator fails the I/O back once its replacement timeout (15 s) passes
# and logs out; with KIWI_FULL=1 also the initiator's device deleted, and
# the portal's iSER switched off (established sessions carry on, new
# logins are refused).  Last, a new session reads the first part's data
# back.
#
# Pairings "initiator:target": kiwi:kiwi by default; KIWI_FULL=1 adds a
# siw initiator (siw leaves its ports unmapped, but its iw_cm still asks
# iwpmd for the target's mapped port).  A siw target cannot work: it cannot
# have its ports mapped (IW_F_NO_PORT_MAP), so its listener collides with
# LIO's TCP portal; checked as such under KIWI_FULL=1.
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/nvmeof-lib.sh"
. "$(dirname "$0")/lib/iser-lib.sh"

full=${KIWI_FULL:-0}
if [ "$full" = 1 ]; then
	size=16M
	pairs=${KIWI_ISER_PAIRS:-"kiwi:kiwi siw:kiwi kiwi:siw"}
else
	size=4M
	pairs=${KIWI_ISER_PAIRS:-"kiwi:kiwi"}
fi

# --- the case -----------------------------------------------------------------

# listening ADDR PORT: a TCP listener on exactly that address and port.
listening() {
	ss -Htln "src $1:$2" | grep -q .
}

cleanup() {
	iscsi_stop
	lio_teardown > /dev/null 2>&1
	iwpmd_stop
	nvmf_links_del > /dev/null 2>&1
	nvmf_net_teardown > /dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 143' TERM INT

nvmf_dmesg_mark
tap_check "veth pair with cross-wired routes" nvmf_net_setup
tap_check "LIO target $ISER_IQN: ${ISER_MB} MiB ramdisk, portal $NVMF_TGT_IP:$ISER_PORT" \
	lio_setup
tap_check "LIO's iSCSI/TCP portal listens on $NVMF_TGT_IP:$ISER_PORT" \
	wait_for 10 listening "$NVMF_TGT_IP" $ISER_PORT
tap_check "iwpmd, the iWARP port mapper, runs" iwpmd_start
tap_check "iscsid runs" iscsi_start

for p in $pairs; do
	ini=${p%:*} tgt=${p#*:}
	lab="$ini initiator, $tgt target"
	tap_diag "--- $lab"
	tap_check "$lab: $ini link $NVMF_HOST_DEV on $NVMF_HOST_NETDEV" \
		nvmf_link_add $NVMF_HOST_DEV "$ini" $NVMF_HOST_NETDEV || continue
	tap_check "$lab: $tgt link $NVMF_TGT_DEV on $NVMF_TGT_NETDEV" \
		nvmf_link_add $NVMF_TGT_DEV "$tgt" $NVMF_TGT_NETDEV || {
		nvmf_links_del > /dev/null 2>&1
		continue
	}
	tap_check "$lab: iw_cm registered with iwpmd, iwpmd held meanwhile" \
		iwpmd_register $NVMF_HOST_IP
	if [ "$tgt" = siw ]; then
		# siw's listener takes the host TCP port LIO already has
		tap_check_fails "$lab: iSER on the portal fails (siw cannot map its port)" \
			lio_iser 1
		lio_iser 0 > /dev/null 2>&1
		tap_check "$lab: links removed" nvmf_links_del
		continue
	fi
	# kiwi as siw: its listener collides with LIO's TCP portal
	echo 0 > /sys/class/infiniband/$NVMF_TGT_DEV/port_map
	tap_check_fails "$lab: with port_map off, iSER on the portal fails" \
		lio_iser 1
	lio_iser 0 > /dev/null 2>&1
	tap_check "$lab: port_map on for $NVMF_TGT_DEV" \
		sh -c "echo 1 > /sys/class/infiniband/$NVMF_TGT_DEV/port_map &&
			[ \$(cat /sys/class/infiniband/$NVMF_TGT_DEV/port_map) = 1 ]"
	tap_check "$lab: iSER on the portal beside iSCSI/TCP" lio_iser 1 ||
		{ cat /tmp/iwpmd.log; dmesg | tail -n 20; }
	tap_check "$lab: the TCP portal still listens on $ISER_PORT" \
		listening "$NVMF_TGT_IP" $ISER_PORT
	tap_check "$lab: sendtargets discovery over the TCP portal" iscsi_discover
	b0=$(nvmf_veth_bytes)
	tap_check "$lab: login through the iser interface" iscsi_login iser
	tap_check "$lab: the session is iSER" iscsi_session_is iser
	tap_check "$lab: its connection is a QP on $NVMF_HOST_DEV" \
		sh -c "rdma resource show qp link $NVMF_HOST_DEV/1 | grep -q 'type RC'"
	dev=
	wait_for 30 iscsi_disk > /dev/null && dev=$(iscsi_disk)
	tap_check "$lab: LUN 0 as a block device (${dev:-none})" test -n "$dev"
	# kernel posts from contexts that may sleep send there (off by default)
	echo 1 > /sys/kernel/debug/kiwi/tx_direct
	tap_check "$lab: fio 4 KiB random writes + crc32c verify ($size)" \
		nvmf_fio_verify iser4k "$dev" $size 4k
	tap_check "$lab: fio 4-256 KiB random writes + crc32c verify ($size)" \
		nvmf_fio_verify isermix "$dev" $size 4k-256k --offset=$((ISER_MB / 2))M
	# isert posts from work items, which may sleep
	tap_check "$lab: with tx_direct, the target's posts sent from isert's context (posts_direct)" \
		posts_direct_moved $NVMF_TGT_DEV
	b1=$(nvmf_veth_bytes)
	# both jobs write and read back; fio's random block sizes may leave
	# part of the second unwritten: ask for half the sizes each way
	min=$((${size%M} * 1048576))
	nvmf_veth_crossed "$lab: the I/O crossed the veth" "$b0" "$b1" $min
	tap_check "$lab: logout" iscsi_logout iser
	tap_check "$lab: no session left" \
		sh -c 'iscsiadm -m session > /dev/null 2>&1; [ $? = 21 ]'
	# the TCP portal serves an iSCSI/TCP initiator, and sees the data
	tap_check "$lab: login over iSCSI/TCP (same portal)" iscsi_login default
	tap_check "$lab: that session is TCP" iscsi_session_is tcp
	dev=
	wait_for 30 iscsi_disk > /dev/null && dev=$(iscsi_disk)
	tap_check "$lab: the data read back over iSCSI/TCP" \
		nvmf_fio_reverify iser4k "$dev" $size 4k
	tap_check "$lab: logout (TCP)" iscsi_logout default
	tap_check "$lab: login through iser again" iscsi_login iser
	dev=
	wait_for 30 iscsi_disk > /dev/null && dev=$(iscsi_disk)
	tap_check "$lab: the data read back over iSER after a new login" \
		nvmf_fio_reverify isermix "$dev" $size 4k-256k --offset=$((ISER_MB / 2))M
	tap_check "$lab: logout" iscsi_logout iser
	tap_check "$lab: iSER off on the portal" lio_iser 0
	tap_check "$lab: links removed" nvmf_links_del
	if [ "$ini" = kiwi ] || [ "$tgt" = kiwi ]; then
		tap_check "$lab: kiwi object counts back to zero" \
			wait_for 10 kiwi_counts_zero
	fi
done

# --- taken away under I/O (kiwi to kiwi) ---------------------------------------
# Each step: a session with fio writing, then the portal's iSER listener,
# the target's device, the initiator's device or the module goes away.
# The initiator must give the I/O back with errors once its replacement
# timeout (15 s) passes, never hang; then everything is set up again and
# a login reads the data of the first part back.

FIO_PID=
fio_bg() {
	fio --name=load --filename="$1" --direct=1 --ioengine=libaio \
		--rw=randwrite --bs=64k --size=8M --iodepth=8 --time_based \
		--runtime=600 --offset=24M > /tmp/iser-load.out 2>&1 &
	FIO_PID=$!
}

# fio_ends SECONDS: the load ended (with errors, since its disk went).
fio_ends() {
	local end=$((SECONDS + $1))
	while kill -0 "$FIO_PID" 2>/dev/null; do
		[ $SECONDS -lt $end ] || { kill -9 "$FIO_PID"; return 1; }
		sleep 1
	done
	wait "$FIO_PID"
	echo "fio exit status $?: $(grep -m1 -o 'err=[^:]*' /tmp/iser-load.out)"
}

# fio_carries_on "TX0 RX0": fio still runs, and 1 MiB more crossed the
# veth since that nvmf_veth_bytes snapshot.
fio_carries_on() {
	kill -0 "$FIO_PID" || { echo "fio has ended"; return 1; }
	nvmf_io_moving "$1" 1048576
}

# set_up: kiwi links, port_map, iSER on, a session through iser, its disk
set_up() {
	nvmf_link_add $NVMF_HOST_DEV kiwi $NVMF_HOST_NETDEV &&
	nvmf_link_add $NVMF_TGT_DEV kiwi $NVMF_TGT_NETDEV &&
	echo 1 > /sys/class/infiniband/$NVMF_TGT_DEV/port_map &&
	lio_iser 1 && iscsi_login iser && wait_for 30 iscsi_disk > /dev/null &&
	DISK=$(iscsi_disk)
}

# under_io LABEL: set up (fails if that did), then fio writing in the
# background (tests both)
under_io() {
	local b0
	tap_check "$1: set up, a session over iSER" set_up || return
	b0=$(nvmf_veth_bytes)
	fio_bg "$DISK"
	tap_check "$1: fio is writing (1 MiB over the veth within 30 s)" \
		nvmf_wait 30 nvmf_io_moving "$b0" 1048576
	return 0
}

# taken_away LABEL CMD...: under fio, CMD; fio ends within 120 s; the
# session is logged out (or gone) within 60 s; then all is torn down.
taken_away() {
	local lab=$1
	shift
	under_io "$lab" || return
	tap_check "$lab" "$@"
	tap_check "$lab: the I/O fails back within 120 s" fio_ends 120
	tap_check "$lab: logout returns within 60 s" \
		timeout 60 iscsiadm -m node -T "$ISER_IQN" -u
	lio_iser 0 > /dev/null 2>&1
	nvmf_links_del > /dev/null 2>&1
	kiwi_unload > /dev/null 2>&1
	tap_check "$lab: kiwi unloads afterwards" test ! -d /sys/module/kiwi
}

# login_retries N: iscsid retries a failed first login N times (iser node).
login_retries() {
	iscsiadm -m node -T "$ISER_IQN" -p "$NVMF_TGT_IP:$ISER_PORT" -I iser \
		-o update -n node.session.initial_login_retry_max -v "$1" \
		> /dev/null 2>&1
}

# The portal's iSER listener going leaves established sessions alone (LIO
# stops listening only): the I/O carries on, and a new login is refused.
portal_removed() {
	local lab="iSER removed from the portal under I/O" b0
	under_io "$lab" || return
	tap_check "$lab: iSER off on the portal" lio_iser 0
	# a while without the listener: the session must not notice
	b0=$(nvmf_veth_bytes)
	sleep 10
	tap_check "$lab: the session's I/O carries on (fio runs, 1 MiB more crossed)" \
		fio_carries_on "$b0"
	kill "$FIO_PID" 2>/dev/null
	tap_check "$lab: fio stops when told" fio_ends 60
	tap_check "$lab: logout returns within 60 s" \
		timeout 60 iscsiadm -m node -T "$ISER_IQN" -u
	# iscsid retries a refused login initial_login_retry_max times (8
	# by default, with a 15 s login timeout: 120 s, this check's very
	# limit); a killed iscsiadm leaves iscsid trying, and the next login
	# then finds "session exists".  Two retries give up well within it.
	login_retries 2
	tap_check_fails "$lab: a new login through iser is refused" \
		timeout 120 iscsiadm -m node -T "$ISER_IQN" \
		-p "$NVMF_TGT_IP:$ISER_PORT" -I iser --login
	login_retries 8
	timeout 60 iscsiadm -m node -T "$ISER_IQN" -u > /dev/null 2>&1
	nvmf_links_del > /dev/null 2>&1
	kiwi_unload > /dev/null 2>&1
	tap_check "$lab: kiwi unloads afterwards" test ! -d /sys/module/kiwi
}

# Default: the target's device and the module taken away; KIWI_FULL=1
# also the portal's iSER listener and the initiator's device.
if [ "${KIWI_ISER_TEARDOWN:-1}" = 1 ]; then
	[ "$full" = 1 ] && portal_removed
	taken_away "rdma link del of the target's device under I/O" \
		rdma link del $NVMF_TGT_DEV
	[ "$full" = 1 ] && taken_away "rdma link del of the initiator's device under I/O" \
		rdma link del $NVMF_HOST_DEV
	taken_away "rmmod kiwi under I/O" \
		sh -c "rdma link del $NVMF_HOST_DEV && rdma link del $NVMF_TGT_DEV && rmmod kiwi"
	tap_check "after all that: set up, a session over iSER" set_up &&
		tap_check "the data of the first part reads back" \
			nvmf_fio_reverify iser4k "$DISK" $size 4k
	timeout 60 iscsiadm -m node -T "$ISER_IQN" -u > /dev/null 2>&1
	lio_iser 0 > /dev/null 2>&1
	tap_check "links removed" nvmf_links_del
	tap_check "kiwi object counts back to zero" wait_for 10 kiwi_counts_zero
fi

tap_check "iscsid stopped, node records removed" iscsi_stop
tap_check "LIO target removed" lio_teardown
tap_check "no iwpmd left running" iwpmd_stop
tap_check "no kernel warnings in dmesg" nvmf_dmesg_clean
tap_done
