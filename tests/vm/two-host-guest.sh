#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# One end of the two-host bench, inside its guest (tests/vm/two-host.sh
# boots both): the wire's NIC up, then every pairing of KIWI_TH_PAIRS with
# this guest playing its side, in step with the peer.
#
#   KIWI_TH_ROLE   A (10.9.0.1) or B (10.9.0.2)
#   KIWI_TH_DIR    the run's directory in the work tree, which both guests
#                  mount over 9p: the rendezvous files live there
#   KIWI_TH_PAIRS  pairings "PA:CA:PB:CB:MTU:SERVER:TESTS", space separated:
#                  provider (kiwi|siw|siwcrc) and kiwi mpa_crc policy (or -)
#                  of A and of B, the MTU of both NICs, which side serves
#                  (A|B; the other is the client, NVMe host), and the tests,
#                  comma separated: rping (-V, 6000 B x 5: several FPDUs),
#                  rpingsmall (64 B x 10), rpingbig (20000 B x 3; more
#                  than two jumbo frames), write, read, send (perftest
#                  ib_*_bw -R), nvme (nvmet-rdma target, nvme-rdma host, fio
#                  crc32c verify), nfs and nfs3 (knfsd on rdma 20049, the
#                  client mounting NFSv4.2 or NFSv3 with proto=rdma: fio
#                  crc32c verify, a file tree copied and compared), iser
#                  (LIO's portal with iSER beside iSCSI/TCP, open-iscsi's
#                  iser interface; iwpmd on both hosts, port_map on the
#                  target's kiwi device: fio crc32c verify, read back after
#                  a new login), smb (ksmbd on SMB Direct's 5445, cifs
#                  mounting with rdma, the builds of build-smb.sh: fio
#                  crc32c verify, a file tree copied and compared on both
#                  sides), mpi and mpismall (Open MPI, 4 ranks, two on
#                  each host, mpirun on the client, launched on the server
#                  through mpi-rsh.sh: pml cm, mtl ofi, libfabric
#                  verbs;ofi_rxm on this pairing's devices; mpi-check.py's
#                  ping-pong 1 B to 4 MiB or to 64 KiB, every buffer
#                  compared, Allreduce, Alltoall and Bcast checked), mpitcp
#                  (the same job to 4 MiB over Open MPI's TCP BTL, the
#                  comparison), mpikill (a rank on the server killed with
#                  SIGKILL mid-run: mpirun ends the job, and both sides are
#                  left without rank, QP, cm_id, kiwi object or live TCP
#                  connection), netem (from there on, this side's NIC
#                  sends through tc netem: loss, delay with reordering,
#                  duplication and a rate limit; removed with the pairing)
#
# Each side prints TAP for what it sees: its exit statuses, the bytes its
# NIC counted, and on A, the MPA CRC bit of every connection as captured on
# its NIC.  Lines "=== KEY" start a section; two-host.sh merges both sides'
# sections.  The guests rendezvous through files: th_sync NAME creates
# ROLE.NAME and waits for PEER.NAME; every step calls the same syncs on both
# sides whatever failed, so that one failure does not stall the other.
# The body is one compound command, read whole before it runs.
{
. "$KIWI_ROOT/tests/cases/lib/lib.sh"
. "$KIWI_ROOT/tests/cases/lib/nvmeof-lib.sh"
. "$KIWI_ROOT/tests/cases/lib/nfs-lib.sh"
. "$KIWI_ROOT/tests/cases/lib/iser-lib.sh"
. "$KIWI_ROOT/tests/cases/lib/smb-lib.sh"
. "$KIWI_ROOT/tests/cases/lib/mpi-lib.sh"

role=${KIWI_TH_ROLE:?}
dir=${KIWI_TH_DIR:?}
case $role in
A) peer=B me=10.9.0.1 them=10.9.0.2 ;;
B) peer=A me=10.9.0.2 them=10.9.0.1 ;;
*) echo "two-host-guest: KIWI_TH_ROLE=$role: want A or B" >&2; exit 2 ;;
esac
gate_lib=$KIWI_ROOT/tests/verbs/build/libconnect-gate.so
# knfsd exports to the wire's subnet (nfs-lib.sh's default is the veth's)
NFS_CLIENTS=10.9.0.0/24
dev=th0
th_gone=0

th_exit() {
	: > "$dir/$role.exit"
}
trap th_exit EXIT

# th_sync NAME [SECONDS]: both sides got here (1: the peer did not come
# in time, 2: the peer is gone for good; every later sync returns 2 at once).
th_sync() {
	local name=$1 tmo=${2:-300} end
	[ $th_gone = 0 ] || return 2
	end=$((SECONDS + tmo))
	: > "$dir/$role.$name"
	while [ ! -e "$dir/$peer.$name" ]; do
		if [ -e "$dir/$peer.exit" ] || [ -e "$dir/abort" ]; then
			echo "th_sync $name: $peer is gone" >&2
			th_gone=1
			return 2
		fi
		if [ $SECONDS -ge $end ]; then
			echo "th_sync $name: $peer did not come within ${tmo}s" >&2
			return 1
		fi
		sleep 0.2
	done
}

# th_put KEY VALUE / th_get KEY: a value for the peer, the peer's value.
th_put() {
	printf '%s\n' "$2" > "$dir/$role.$1.tmp" && mv -f "$dir/$role.$1.tmp" "$dir/$role.$1"
}

th_get() {
	cat "$dir/$peer.$1" 2>/dev/null || echo none
}

# th_bytes: "tx rx" byte counters of the wire's NIC.
th_bytes() {
	nvmf_veth_bytes "$nic"
}

# th_nic: the name of the NIC with the wire's MAC (probed asynchronously).
th_nic() {
	local n
	for n in /sys/class/net/*; do
		[ "$(cat "$n/address")" = "${KIWI_VM_MAC:?}" ] || continue
		basename "$n"
		return 0
	done
	return 1
}

th_wire_up() {
	modprobe virtio_net || return 1
	wait_for 30 th_nic || { echo "no NIC with MAC $KIWI_VM_MAC"; ip link; return 1; }
	nic=$(th_nic)
	ip addr add "$me/24" dev "$nic" && ip link set "$nic" up
}

# th_mtu MTU: the NIC at MTU.
th_mtu() {
	ip link set "$nic" mtu "$1" || return 1
	[ "$(cat "/sys/class/net/$nic/mtu")" = "$1" ] || return 1
}

# th_ping_full MTU: a frame of MTU bytes that may not be fragmented
# reaches the peer and comes back (both NICs take it).
th_ping_full() {
	ping -c 2 -W 10 -M "do" -s $(($1 - 28)) "$them"
}

# --- steps: SIDE is server or client, ID names the step's rendezvous ------

# th_serve ID PORT PID DESC LOG: the server's side of a step, the server
# (PID, its output in LOG) already started: it listens on PORT, both sides
# meet at ID-listen, it ends, both meet at ID-done; its exit status is a test.
th_serve() {
	local id=$1 port=$2 pid=$3 desc=$4 log=$5 rc
	wait_for 60 tcp_listening "" "$port"
	th_sync "$id-listen"
	wait "$pid"
	rc=$?
	th_sync "$id-done"
	tap_check "$desc: server exits 0" test $rc = 0 ||
		tap_diag "$(tail -n 15 "$log")"
}

# rping SIDE ID SIZE COUNT: -V compares every buffer on the client.
step_rping() {
	local side=$1 id=$2 size=$3 count=$4 rc b0 b1 desc
	desc="rping -V $size B x $count"
	b0=$(th_bytes)
	if [ "$side" = server ]; then
		timeout 200 rping -s -a "$me" -C "$count" -S "$size" -V \
			> /tmp/th-rping.log 2>&1 &
		th_serve "$id" 7174 $! "$desc" /tmp/th-rping.log
	else
		th_sync "$id-listen"
		timeout 150 rping -c -a "$them" -C "$count" -S "$size" -V -v \
			> /tmp/th-rping.log 2>&1
		rc=$?
		th_sync "$id-done"
		if [ $rc = 0 ] && [ "$(grep -c '^ping data: ' /tmp/th-rping.log)" -eq "$count" ]; then
			tap_ok "$desc: client exits 0, every ping verified"
		else
			tap_fail "$desc: client exits 0 (status $rc), every ping verified"
			tap_diag "$(tail -n 15 /tmp/th-rping.log)"
		fi
	fi
	b1=$(th_bytes)
	# Per ping the server reads SIZE bytes from the client and writes
	# SIZE bytes back.
	nvmf_veth_crossed "$desc: crossed the wire" "$b0" "$b1" $((size * count)) $((size * count))
}

# perf SIDE ID TOOL: perftest over rdma_cm, 64 KiB x 50.  The gate (see
# 35-datapath.sh) is a file in the shared directory: the server's second
# rdma_listen() creates it, the client's second rdma_connect() waits for it.
step_perf() {
	local side=$1 id=$2 tool=$3 rc b0 b1 desc n=50 s=65536 tx rx
	local gate=$dir/gate-$id
	desc="$tool -R 64 KiB x $n"
	[ -f "$gate_lib" ] || echo "no $gate_lib (make -C tests/verbs)"
	b0=$(th_bytes)
	if [ "$side" = server ]; then
		rm -f "$gate"
		env LD_PRELOAD="$gate_lib" KIWI_LISTEN_GATE="$gate" \
			KIWI_LISTEN_GATE_SKIP=1 timeout 200 stdbuf -oL "$tool" -R -F \
			-d $dev -n $n -s $s > /tmp/th-perf.log 2>&1 &
		th_serve "$id" 18515 $! "$desc" /tmp/th-perf.log
	else
		th_sync "$id-listen"
		LD_PRELOAD=$gate_lib KIWI_CONNECT_GATE=$gate KIWI_CONNECT_GATE_SKIP=1 \
			timeout 150 stdbuf -oL "$tool" -R -F -d $dev -n $n -s $s \
			"$them" > /tmp/th-perf.log 2>&1
		rc=$?
		th_sync "$id-done"
		if [ $rc = 0 ] && grep -q '^ 65536 ' /tmp/th-perf.log; then
			tap_ok "$desc: client exits 0 with its report"
		else
			tap_fail "$desc: client exits 0 (status $rc) with its report"
			tap_diag "$(tail -n 15 /tmp/th-perf.log)"
		fi
	fi
	b1=$(th_bytes)
	# The payload goes client to server for write and send, server to
	# client for read.
	tx=0 rx=0
	case $tool/$side in
	ib_read_bw/server|ib_write_bw/client|ib_send_bw/client) tx=$((n * s)) ;;
	*) rx=$((n * s)) ;;
	esac
	nvmf_veth_crossed "$desc: crossed the wire" "$b0" "$b1" $tx $rx
}

# nvme SIDE ID: the server is the nvmet-rdma target, the client the
# nvme-rdma host, which writes with crc32c verify headers and reads back.
step_nvme() {
	local side=$1 id=$2 b0 b1 ok=1 min s4k=1M smix=4M
	[ "${KIWI_FULL:-0}" = 1 ] && s4k=4M smix=16M
	min=$(((${s4k%M} + ${smix%M}) * 1048576 / 2))
	b0=$(th_bytes)
	if [ "$side" = server ]; then
		NVMF_TGT_IP=$me
		tap_check "nvmet-rdma target on $me:$NVMF_PORT" nvmf_target_setup ||
			ok=0
		[ $ok = 1 ] && wait_for 60 tcp_listening "" $NVMF_PORT
		th_sync "$id-listen"
		th_sync "$id-done" 900
		b1=$(th_bytes)
		tap_check "nvmet target removed" nvmf_target_teardown
	else
		NVMF_TGT_IP=$them
		th_sync "$id-listen"
		tap_check "nvme connect to $them" nvmf_connect || ok=0
		if [ $ok = 1 ]; then
			tap_check "fio 4 KiB random write + crc32c verify ($s4k)" \
				nvmf_fio_verify v4k "$NVMF_DEV" $s4k 4k
			tap_check "fio 4-256 KiB random write + crc32c verify ($smix)" \
				nvmf_fio_verify vmix "$NVMF_DEV" $smix 4k-256k \
				--offset=$((NVMF_SIZE_MB / 2))M
			tap_check "nvme disconnect" nvmf_disconnect
		fi
		th_sync "$id-done" 900
		b1=$(th_bytes)
	fi
	# Both fio jobs write and read back (as in 50-nvmeof.sh: at least
	# half their sizes each way).
	nvmf_veth_crossed "NVMe-oF I/O: crossed the wire" "$b0" "$b1" $min $min
}

# nfs SIDE ID VERS: the server is knfsd on rdma $NFS_PORT exporting a tmpfs
# to the wire's subnet, the client mounts it with proto=rdma (NFSv3 or
# NFSv4.2), writes with crc32c verify, copies a file tree and compares it
# with the page cache dropped, unmounts.
step_nfs() {
	local side=$1 id=$2 vers=$3 b0 b1 ok=1 desc size=2M min
	desc="NFSv$vers over RDMA"
	b0=$(th_bytes)
	if [ "$side" = server ]; then
		tap_check "$desc: rpcbind, rpc.mountd, export, knfsd on rdma $NFS_PORT" \
			eval "nfs_daemons_start && nfs_export && nfs_server_start" ||
			ok=0
		[ $ok = 1 ] && { tap_check "$desc: the rdma listener on $NFS_PORT" \
			wait_for 60 tcp_listening "" $NFS_PORT || ok=0; }
		th_sync "$id-listen"
		th_sync "$id-done" 900
		b1=$(th_bytes)
		tap_check "$desc: knfsd stopped" nfs_bounded 120 nfs_server_stop
		nfs_unexport
		nfs_daemons_stop
	else
		NFS_SRV_IP=$them
		modprobe -a nfs nfsv3 nfsv4 rpcrdma
		th_sync "$id-listen"
		tap_check "$desc: mount $them proto=rdma" \
			nfs_bounded 120 nfs_mount "$vers" || ok=0
		if [ $ok = 1 ]; then
			nfs_tree_make /tmp/th-tree
			tap_check "$desc: fio 4-512 KiB random write + crc32c verify ($size)" \
				nfs_bounded 600 nvmf_fio_verify thnfs $NFS_MNT/fio "$size" \
				4k-512k --ioengine=psync
			tap_check "$desc: a file tree copied and compared" \
				nfs_bounded 600 eval "cp -a /tmp/th-tree $NFS_MNT/tree &&
					nfs_tree_check /tmp/th-tree $NFS_MNT/tree"
			tap_check "$desc: unmount" nfs_bounded 120 nfs_umount
		fi
		nfs_umount_force
		th_sync "$id-done" 900
		b1=$(th_bytes)
	fi
	# fio's random block sizes may leave part of its file unwritten: half
	# of it each way at least (the tree adds about 1.4 MiB each way)
	min=$((${size%M} * 1048576 / 2))
	nvmf_veth_crossed "$desc: crossed the wire" "$b0" "$b1" $min $min
}

# th_iser_mapped: the initiator's one connection to the target (the
# session's; discovery's has closed) is to another port than the portal's:
# the initiator's iwpmd learnt the mapped port from the target's.
th_iser_mapped() {
	ss -Htn state established "dst $them" | tee /tmp/th-iser-ss.log
	[ "$(grep -c . /tmp/th-iser-ss.log)" = 1 ] &&
		! grep -q "$them:$ISER_PORT\b" /tmp/th-iser-ss.log
}

# iser SIDE ID: the server is LIO's target (ramdisk LUN, a portal serving
# iSCSI/TCP with iSER switched on beside it), the client open-iscsi's
# initiator through the iser interface.  The iSER listener shares the TCP
# portal's address and port, so the target's device maps its port
# (port_map) and both hosts run iwpmd: the initiator's asks the target's
# for the mapped port over the wire (storage.md).
step_iser() {
	local side=$1 id=$2 b0 b1 ok=1 disk= size=2M min
	b0=$(th_bytes)
	tap_check "iSER: iwpmd runs" iwpmd_start || ok=0
	[ $ok = 1 ] && { tap_check "iSER: iw_cm registered with iwpmd, iwpmd held meanwhile" \
		iwpmd_register "$me" || ok=0; }
	if [ "$side" = server ]; then
		NVMF_TGT_IP=$me
		NP=$TPG/np/$me:$ISER_PORT
		[ $ok = 1 ] && { tap_check "iSER: LIO target, portal $me:$ISER_PORT" \
			lio_setup || ok=0; }
		if [ $ok = 1 ] && [ "$prov" = kiwi ]; then
			tap_check "iSER: port_map on $dev" \
				sh -c "echo 1 > /sys/class/infiniband/$dev/port_map"
		fi
		[ $ok = 1 ] && { tap_check "iSER: switched on beside iSCSI/TCP" \
			lio_iser 1 || ok=0; }
		th_sync "$id-listen"
		th_sync "$id-done" 900
		b1=$(th_bytes)
		tap_check "iSER: LIO target removed" lio_teardown
	else
		NVMF_TGT_IP=$them
		[ $ok = 1 ] && { tap_check "iSER: iscsid runs" iscsi_start || ok=0; }
		th_sync "$id-listen"
		[ $ok = 1 ] && { tap_check "iSER: sendtargets discovery over the TCP portal" \
			iscsi_discover || ok=0; }
		[ $ok = 1 ] && { tap_check "iSER: login through the iser interface" \
			iscsi_login iser || ok=0; }
		if [ $ok = 1 ]; then
			tap_check "iSER: the session is iSER" iscsi_session_is iser
			tap_check "iSER: its connection goes to the target's mapped port, not $ISER_PORT" \
				th_iser_mapped
			wait_for 30 iscsi_disk > /dev/null && disk=$(iscsi_disk)
			tap_check "iSER: LUN 0 as a block device (${disk:-none})" \
				test -n "$disk"
			tap_check "iSER: fio 4-256 KiB random write + crc32c verify ($size)" \
				nvmf_fio_verify thiser "$disk" $size 4k-256k
			tap_check "iSER: logout" iscsi_logout iser
			tap_check "iSER: login again" iscsi_login iser
			disk=
			wait_for 30 iscsi_disk > /dev/null && disk=$(iscsi_disk)
			tap_check "iSER: the data read back after the new login" \
				nvmf_fio_reverify thiser "$disk" $size 4k-256k
			tap_check "iSER: logout" iscsi_logout iser
		fi
		iscsi_stop
		th_sync "$id-done" 900
		b1=$(th_bytes)
	fi
	iwpmd_stop
	# fio wrote and read back at least half its size each way
	min=$((${size%M} * 1048576 / 2))
	nvmf_veth_crossed "iSER I/O: crossed the wire" "$b0" "$b1" $min $min
}

# th_smb_tree: the SMB step's tree, the same on both sides: the server
# compares its share with it (fixed contents, not random)
th_smb_tree() {
	local d=/tmp/th-smb-tree i
	rm -rf $d && mkdir -p $d/a/b $d/empty || return 1
	for i in 1 2 3 4 5 6 7 8; do
		seq 1 $((i * 700)) > $d/a/file$i || return 1
	done
	seq 1 200000 > $d/a/b/big && ln -s b/big $d/a/link
}

# smb SIDE ID: the server is ksmbd (build-smb.sh's module, Debian 13's
# ksmbd-tools) sharing a tmpfs on SMB Direct's port 5445 (the device exists
# before ksmbd starts, so it picks the iWARP port), the client cifs
# mounting with rdma: the mount is SMB Direct over this host's device, fio
# crc32c verify, a file tree copied and compared, unmount.
step_smb() {
	local side=$1 id=$2 b0 b1 ok=1 size=2M min
	b0=$(th_bytes)
	tap_check "SMB Direct: cifs.ko and ksmbd.ko with SMB Direct loaded ($KIWI_SMB_DIR)" \
		smb_modules_load || ok=0
	if [ "$side" = server ]; then
		[ $ok = 1 ] && { tap_check "SMB Direct: ksmbd listening on rdma $SMB_PORT ($(smb_tools_which))" \
			smb_server_start || ok=0; }
		th_sync "$id-listen"
		th_sync "$id-done" 900
		b1=$(th_bytes)
		[ $ok = 1 ] && tap_check "SMB Direct: the client's tree in the share" \
			smb_share_check /tmp/th-smb-tree $SMB_SHARE/tree
		tap_check "SMB Direct: ksmbd stopped" nfs_bounded 60 smb_server_stop
	else
		SMB_SRV_IP=$them
		th_sync "$id-listen"
		[ $ok = 1 ] && { tap_check "SMB Direct: mount //$them/kiwi -o rdma" \
			nfs_bounded 120 smb_mount || ok=0; }
		[ $ok = 1 ] && { tap_check "SMB Direct: the mount is SMB Direct over $dev" \
			smb_is_direct $dev || ok=0; }
		if [ $ok = 1 ]; then
			tap_check "SMB Direct: fio 4-512 KiB random write + crc32c verify ($size)" \
				nfs_bounded 600 nvmf_fio_verify thsmb $SMB_MNT/fio "$size" \
				4k-512k --ioengine=psync
			tap_check "SMB Direct: a file tree copied and compared" \
				nfs_bounded 600 eval "cp -a /tmp/th-smb-tree $SMB_MNT/tree &&
					nfs_tree_check /tmp/th-smb-tree $SMB_MNT/tree"
			tap_check "SMB Direct: unmount" nfs_bounded 120 umount $SMB_MNT
		fi
		smb_umount_force
		th_sync "$id-done" 900
		b1=$(th_bytes)
	fi
	tap_check "SMB Direct: cifs and ksmbd unload" smb_modules_unload
	# fio's random block sizes may leave part of its file unwritten: half
	# of it each way at least
	min=$((${size%M} * 1048576 / 2))
	nvmf_veth_crossed "SMB Direct: crossed the wire" "$b0" "$b1" $min $min
}

# th_mpi_hosts: Open MPI's --host for two ranks on each guest, the
# client's (mpirun's) first: ranks 0 and 1 here, 2 and 3 on the peer.
th_mpi_hosts() {
	echo "$me:2,$them:2"
}

# th_rdma_res KIND: the rdma resources of KIND (qp, cm_id) on this side's
# device, one a line (none: empty)
th_rdma_res() {
	rdma resource show "$1" link "$dev" | grep -w "link $dev/1"
}

# th_mpi_conns: this side's TCP connections to the peer that are
# established or half-closed by the peer (close-wait: this side never
# closed), "local peer" a line, sorted
th_mpi_conns() {
	ss -Htn state established state close-wait "dst $them" |
		awk '{ print $(NF - 1), $NF }' | sort
}

# th_kiwi_objects_as BEFORE: each of kiwi's object counts as in BEFORE
# (a copy of KIWI_OBJECTS taken before the job).  Not zero: a kernel
# consumer of an earlier step (NVMe-oF, iSER) leaves the CQs of ib_core's
# per-device CQ pool, which live until the device goes.
th_kiwi_objects_as() {
	awk 'NR == FNR { was[$1] = $2; next }
		$2 != was[$1] { print "kiwi:", $1, "=", $2, "(before the job", was[$1] ")"; bad = 1 }
		END { exit bad }' "$1" "$KIWI_OBJECTS"
}

# th_mpi_before: what th_mpi_clean compares with: TCP connections to the
# peer and kiwi's object counts (any CQ then present is named with its
# owner in the TAP, so that a count that is not the job's shows whose)
th_mpi_before() {
	th_mpi_conns > /tmp/th-mpi-conns
	[ "$prov" = kiwi ] || return 0
	cp "$KIWI_OBJECTS" /tmp/th-mpi-objects
	awk '$1 == "cqs" && $2 != 0 { f = 1 } END { exit !f }' /tmp/th-mpi-objects &&
		tap_diag "kiwi CQs before the job: $(grep -w cqs /tmp/th-mpi-objects); $(rdma resource show cq dev "$dev" 2>&1 | tr -s ' \n' ' ')"
	return 0
}

# th_mpi_clean: nothing of an MPI job left on this side: no rank or
# orted, no QP and no cm_id on the device, kiwi's object counts as
# before the job, no TCP connection to the peer but those before the job
# (earlier steps' daemons may hold some); th_mpi_before took both.
th_mpi_clean() {
	local bad=0
	mpi_left && bad=1
	th_rdma_res qp && bad=1
	th_rdma_res cm_id && bad=1
	if [ "$prov" = kiwi ]; then
		th_kiwi_objects_as /tmp/th-mpi-objects || bad=1
	fi
	th_mpi_conns | comm -13 /tmp/th-mpi-conns - | grep . && bad=1
	return $bad
}

# mpi SIDE ID TRANSPORT MAX: the 4-rank job of mpi-lib.sh (mpi-check.py
# check: ping-pong between rank 0 here and rank 3 there, 1 B to MAX
# bytes, every buffer compared; Allreduce, Alltoall, Bcast checked) over
# TRANSPORT: ofi (libfabric verbs;ofi_rxm on this pairing's devices) or
# tcp (Open MPI's TCP BTL).  The client runs mpirun, the server runs what
# mpirun's launcher sends it (mpi_exec_serve).  The ping-pong figures go
# to the TAP as comments and to mpi-<pairing>-TRANSPORT.txt in the run
# directory.
step_mpi() {
	local side=$1 id=$2 tr=$3 max=$4 rc b0 b1 spid desc np want m
	local log=$dir/mpi-$id.log ex=$dir/mpi-exec-$id
	desc="MPI over $tr ($prov), 4 ranks"
	[ "$tr" = ofi ] && desc="MPI over ofi verbs;ofi_rxm ($prov), 4 ranks"
	[ "$tr" = tcp ] && desc="MPI over the TCP BTL, 4 ranks"
	hostname "th-$role"
	th_mpi_before
	b0=$(th_bytes)
	if [ "$side" = server ]; then
		mpi_exec_serve "$ex" &
		spid=$!
		th_sync "$id-listen"
		th_sync "$id-done" 1000
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
	else
		th_sync "$id-listen"
		KIWI_MPI_EXEC_DIR=$ex MPI_TIMEOUT=900 \
			mpi_run "$tr" 10.9.0.0/24 "$(th_mpi_hosts)" "$log" check $max
		rc=$?
		th_sync "$id-done" 1000
		np=$(grep -c '^\[1,0\]<stdout>:pingpong ' "$log")
		# one line a power of two up to MAX
		want=0 m=1
		while [ $m -le "$max" ]; do want=$((want + 1)) m=$((m * 2)); done
		sed -n 's/^\[1,0\]<stdout>:pingpong /pingpong /p' "$log" \
			> "$dir/mpi-p$i-$tr.txt"
		tap_diag "$prov $tr: size B, half round trip us, MB/s" \
			"$(cat "$dir/mpi-p$i-$tr.txt")"
		if [ $rc = 0 ] && [ "$np" = $want ] &&
			grep -q '^\[1,0\]<stdout>:result: [1-9][0-9]* checks, 0 failed$' "$log"; then
			tap_ok "$desc: ping-pong 1 B..$max B verified, Allreduce, Alltoall, Bcast checked ($(sed -n 's/^\[1,0\]<stdout>:result: //p' "$log"))"
		else
			tap_fail "$desc: mpirun exits 0 (status $rc), $want ping-pong sizes ($np), every check passed"
			tap_diag "$(grep -v '^\[1,0\]<stdout>:pingpong ' "$log" | tail -n 40)"
		fi
	fi
	tap_check "$desc: nothing of the job left here" wait_for 60 th_mpi_clean
	b1=$(th_bytes)
	# ranks 0 and 3 ping-pong MAX bytes 4 times each way
	nvmf_veth_crossed "$desc: crossed the wire" "$b0" "$b1" $((4 * max)) $((4 * max))
}

# mpikill SIDE ID: the job of mpi-check.py loop (Allreduce and Bcast for
# ever) over ofi; once every rank is ready and the QPs are up, the server
# kills one of its ranks (SIGKILL) mid-run: mpirun ends the job and exits
# non-zero, and both sides are left clean (th_mpi_clean).
step_mpikill() {
	local side=$1 id=$2 rc spid mpid victim desc
	local log=$dir/mpikill-$id.log ex=$dir/mpi-exec-$id
	desc="MPI over ofi ($prov), a rank killed mid-run"
	hostname "th-$role"
	th_mpi_before
	if [ "$side" = server ]; then
		mpi_exec_serve "$ex" &
		spid=$!
		th_sync "$id-listen"
		th_sync "$id-ready" 600
		tap_check "$desc: QPs of the job in RTS on $dev" \
			eval "th_rdma_res qp | grep -w 'state RTS'"
		victim=$(pgrep -f '^/usr/bin/python3 .*mpi-check\.py loop' | head -n 1)
		tap_check "$desc: kill -9 a rank here (${victim:-none})" \
			kill -9 "${victim:-none}"
		th_sync "$id-killed"
		th_sync "$id-done" 300
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
	else
		th_sync "$id-listen"
		KIWI_MPI_EXEC_DIR=$ex MPI_TIMEOUT=400 \
			mpi_run ofi 10.9.0.0/24 "$(th_mpi_hosts)" "$log" loop &
		mpid=$!
		tap_check "$desc: 4 ranks ready" wait_alive 300 $mpid \
			eval "[ \$(grep -o '<stdout>:ready rank' $log | wc -l) = 4 ]" ||
			tap_diag "$(tail -n 30 "$log")"
		tap_check "$desc: QPs of the job in RTS on $dev" \
			eval "th_rdma_res qp | grep -w 'state RTS'"
		th_sync "$id-ready"
		th_sync "$id-killed"
		tap_check "$desc: mpirun ends within 120 s" wait_for 120 pid_gone $mpid
		# (if not, its time limit ends it)
		wait $mpid
		rc=$?
		tap_check "$desc: mpirun exits non-zero, a rank killed by signal 9 (status $rc)" \
			eval "[ $rc != 0 ] && [ $rc != 124 ] && grep -i 'signal 9' $log" ||
			tap_diag "$(tail -n 30 "$log")"
		th_sync "$id-done" 300
	fi
	tap_check "$desc: nothing of the job left here" wait_for 60 th_mpi_clean
}

# netem: this side's NIC sends through a lossy, reordering, duplicating,
# rate-limited qdisc (both sides apply it, so both directions suffer) until
# the pairing ends; th_netem_check: it did drop frames on the way.
TH_NETEM="delay 4ms 2ms loss 2% duplicate 1% reorder 5% 50% rate 400mbit"
step_netem() {
	modprobe sch_netem 2>/dev/null
	tap_check "tc netem on $nic: $TH_NETEM" \
		tc qdisc replace dev "$nic" root netem $TH_NETEM
}

th_netem_dropped() {
	tc -s qdisc show dev "$nic" | grep -o 'dropped [0-9]*' | head -n1 | cut -d' ' -f2
}

th_netem_end() {
	local d
	tc qdisc show dev "$nic" | grep -q netem || return 0
	d=$(th_netem_dropped)
	tap_diag "netem on $nic: $(tc -s qdisc show dev "$nic" | tr -s ' \n' ' ')"
	tap_check "netem dropped frames on $nic (${d:-none})" test "${d:-0}" -gt 0
	tap_check "netem removed from $nic" tc qdisc del dev "$nic" root
}

# run_pairing N SPEC
run_pairing() {
	local i=$1 pa ca pb cb mtu srv tests prov crc side t label want k
	local creq sreq ok=1 conn=0 la lb crcdesc= rejects=
	IFS=: read -r pa ca pb cb mtu srv tests <<< "$2"
	if [ $role = A ]; then prov=$pa crc=$ca; else prov=$pb crc=$cb; fi
	[ "$role" = "$srv" ] && side=server || side=client
	# CRC on the wire: either end's MPA Request or Reply asking for it
	# (nvmeof-lib's nvmf_requests_crc: initiator = host, responder = target).
	if [ "$srv" = A ]; then
		creq=$(nvmf_requests_crc "$pb" "$cb" host)
		sreq=$(nvmf_requests_crc "$pa" "$ca" target)
	else
		creq=$(nvmf_requests_crc "$pa" "$ca" host)
		sreq=$(nvmf_requests_crc "$pb" "$cb" target)
	fi
	want=$((creq | sreq))
	la=$pa lb=$pb
	[ "$ca" = - ] || la="$pa($ca)"
	[ "$cb" = - ] || lb="$pb($cb)"
	if [ "$srv" = A ]; then
		label="B $lb client -> A $la server"
	else
		label="A $la client -> B $lb server"
	fi
	label="$label, mtu $mtu, crc $want"
	echo "=== pairing $i: $label"
	tap_diag "pairing $i: $label; this side: $prov ${crc#-} ($side)"
	t0=$SECONDS

	if [ "$prov" = siwcrc ] && [ ! -f "$KIWI_SIW_CRC_KO" ]; then
		tap_fail "no $KIWI_SIW_CRC_KO (tests/vm/build-siw.sh --crc)"
		ok=0
	fi
	[ $ok = 1 ] && { tap_check "mtu $mtu" th_mtu "$mtu" || ok=0; }
	[ "$crc" = - ] || crcdesc=", mpa_crc $crc"
	[ $ok = 1 ] && { tap_check "$prov link $dev on $nic$crcdesc" \
		nvmf_link_add $dev "$prov" "$nic" "${crc#-}" || ok=0; }
	th_sync "p$i-up"
	# Without a peer, nothing to connect to: only clean up.
	[ $th_gone = 0 ] || { tap_fail "$peer came to pairing $i"; ok=0; tests=; }
	# A frame of the full MTU crosses unfragmented (both NICs agree).
	[ $ok = 1 ] && tap_check "a ${mtu} B frame reaches the peer unfragmented" \
		th_ping_full "$mtu"
	[ $role = A ] && nvmf_sniff_mark
	k=0
	for t in ${tests//,/ }; do
		[ $th_gone = 0 ] || break
		k=$((k + 1))
		case $t in
		rping) step_rping $side "p$i-$k" 6000 5; conn=1 ;;
		rpingsmall) step_rping $side "p$i-$k" 64 10; conn=1 ;;
		rpingbig) step_rping $side "p$i-$k" 20000 3; conn=1 ;;
		write|read|send) step_perf $side "p$i-$k" ib_${t}_bw; conn=1 ;;
		nvme) step_nvme $side "p$i-$k"; conn=1 ;;
		nfs) step_nfs $side "p$i-$k" 4.2; conn=1 ;;
		nfs3) step_nfs $side "p$i-$k" 3; conn=1 ;;
		iser) step_iser $side "p$i-$k"; conn=1 ;;
		smb) step_smb $side "p$i-$k"; conn=1 ;;
		mpi) step_mpi $side "p$i-$k" ofi 4194304; conn=1 rejects=rejects ;;
		mpismall) step_mpi $side "p$i-$k" ofi 65536; conn=1 rejects=rejects ;;
		mpitcp) step_mpi $side "p$i-$k" tcp 4194304 ;;
		mpikill) step_mpikill $side "p$i-$k"; conn=1 rejects=rejects ;;
		netem) step_netem ;;
		*) tap_fail "unknown test $t" ;;
		esac
	done
	th_sync "p$i-end"
	th_netem_end
	if [ $role = A ] && [ $conn = 1 ]; then
		tap_check "MPA Reply crc=$want on every connection (captured on $nic)" \
			nvmf_sniff_check $want $rejects
	fi
	tap_check "$dev removed" eval "rdma link del $dev &&
		nvmf_wait 10 test ! -e /sys/class/infiniband/$dev"
	if [ "$prov" = kiwi ]; then
		tap_check "kiwi object counts back to zero" nvmf_wait 10 kiwi_counts_zero
		tap_check "rmmod kiwi" rmmod kiwi
	else
		tap_check "rmmod siw" rmmod siw
		rm -f /run/nvmf-siw
	fi
	th_sync "p$i-gone"
	tap_diag "pairing $i took $((SECONDS - t0)) s"
}

echo "=== wire"
nvmf_dmesg_mark
kiwi_provider_env
kv=$(uname -r)
tap_diag "guest $role: kernel $kv, $me"
tap_check "virtio-net NIC up as $me" th_wire_up
tap_check "a file tree for SMB" th_smb_tree
# nvmeof-lib's MPA frame capture on the wire's NIC, started while the peer
# boots (python starts slowly under TCG)
[ $role = A ] && nvmf_sniff_launch "$nic"
th_put kver "$kv"
th_sync wire 600
tap_diag "peer $peer: kernel $(th_get kver)"
pkv=$(th_get kver)
tap_check "the peer runs another kernel series (${kv%.*-*} here, ${pkv%.*-*} there)" \
	test "${kv%.*-*}" != "${pkv%.*-*}"
tap_check "ping $them over the wire" ping -c 3 -W 10 "$them"
if [ $role = A ]; then
	tap_check "MPA frame capture on $nic" nvmf_sniff_ready 120
fi
th_sync sniff 300

i=0
for p in ${KIWI_TH_PAIRS:?}; do
	i=$((i + 1))
	[ $th_gone = 0 ] || break
	run_pairing $i "$p"
done

echo "=== end"
[ $th_gone = 0 ] || tap_fail "the peer ran to the end"
nvmf_sniff_stop
modprobe -r nvme-rdma nvmet-rdma 2>/dev/null
tap_check "no kernel warnings in dmesg" nvmf_dmesg_clean
th_sync end 300
tap_done
}
