#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 1200
# timeout-full: 3000
#
# NFS over RDMA on kiwi: knfsd listening on the rdma port 20049 and the
# kernel NFS client mounting with proto=rdma, across a veth pair with
# crossed routes (nvmeof-lib.sh, nfs-lib.sh), for server/client pairings of
# kiwi and the reference siw and NFS versions 3 and 4.2.  Each pairing:
# mount; a file created (the first NFSACL call of NFSv3, which once hung on
# kiwi); fio random writes with crc32c verify headers by direct I/O; a file
# tree copied and compared after the client's cache is dropped; the bytes
# crossed the veth; with a kiwi client, the server's Send with Invalidate
# seen by xprtrdma as remote invalidation of the RPC's MR (its trace
# event); with a kiwi server and tx_direct on, its posts ran in knfsd's
# threads (posts_direct); the server restarted (rpc.nfsd 0, then the rdma
# port again) under the mounted client, which then writes and reads back a
# new file; unmount; server and links removed; kiwi's object counts at
# zero.
#
# KIWI_FULL=1: every pairing of kiwi/siw server x kiwi/siw client x v3/v4.2
# and more data.  KIWI_NFS_PAIRS="server:client:vers ..." runs only those
# (development).
#
# KIWI_NFS_LISTEN_FAIL=rdmacm|tcp: instead, the reproducer of a 6.1
# svcrdma bug (Documentation/storage.md): when knfsd's rdma listener cannot
# be created, svc_rdma_create() puts the half-made transport and
# __svc_rdma_free() calls rdma_destroy_id(NULL) on a workqueue: the guest
# panics on 6.1 (6.12 checks for a missing cm_id).  "rdmacm": the port is
# held by another rdma_cm listener (rping on a siw device), so kiwi is not
# involved; "tcp": a TCP listener holds 198.18.0.2:20049, so the
# kiwi device on veth1 fails the wildcard listen (as any iWARP provider
# whose listening socket cannot bind).  Expect a panic on 6.1: opt-in.
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/nvmeof-lib.sh"
. "$(dirname "$0")/lib/nfs-lib.sh"

full=${KIWI_FULL:-0}
if [ "$full" = 1 ]; then
	fsize=32M
	NFS_EXPORT_MB=160
else
	fsize=4M
fi
# 4 KiB direct I/O costs most under TCG (one RPC each way per block)
f4k=$fsize
[ "$full" = 1 ] || f4k=1M

if [ -n "${KIWI_NFS_PAIRS:-}" ]; then
	pairs=$KIWI_NFS_PAIRS
elif [ "$full" = 1 ]; then
	pairs="siw:siw:3 siw:siw:4.2 kiwi:kiwi:3 kiwi:kiwi:4.2
	       kiwi:siw:3 kiwi:siw:4.2 siw:kiwi:3 siw:kiwi:4.2"
else
	# two pairings keep the default run's share near 5 minutes: kiwi on
	# both ends (NFSv3, whose first NFSACL call once hung) and kiwi
	# against siw (NFSv4.2); the rest is under KIWI_FULL
	pairs="kiwi:kiwi:3 siw:kiwi:4.2"
fi

# listen_fail HOW: see KIWI_NFS_LISTEN_FAIL above.
listen_fail() {
	local hold rc
	case $1 in
	rdmacm)
		# librdmacm wants a device: siw's, not kiwi's
		nvmf_link_add $NVMF_TGT_DEV siw veth1 || return 1
		rping -s -a 0.0.0.0 -p $NFS_PORT > /tmp/nfs-rping.log 2>&1 &
		hold=$!
		wait_for 20 sh -c "rdma res show cm_id | grep -q ':$NFS_PORT '" || {
			cat /tmp/nfs-rping.log
			return 1
		} ;;
	tcp)
		nvmf_link_add $NVMF_TGT_DEV kiwi veth1 || return 1
		python3 -c 'import socket, sys, time
s = socket.socket(); s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
time.sleep(600)' $NFS_SRV_IP $NFS_PORT &
		hold=$!
		wait_for 20 tcp_listening "" $NFS_PORT || return 1 ;;
	*) echo "KIWI_NFS_LISTEN_FAIL: rdmacm or tcp" >&2; return 1 ;;
	esac
	rdma res show cm_id
	echo "rdma $NFS_PORT" > $NFSD_FS/portlist
	rc=$?
	echo "portlist write: status $rc (the listener could not be made)"
	# __svc_rdma_free() runs from a workqueue: give it time
	sleep 10
	kill $hold
	wait $hold 2> /dev/null
	[ $rc != 0 ]
}

if [ -n "${KIWI_NFS_LISTEN_FAIL:-}" ]; then
	trap nfs_cleanup_all EXIT
	nvmf_dmesg_mark
	tap_check "veth pair with cross-wired routes" nvmf_net_setup
	tap_check "rpcbind and rpc.mountd running" nfs_daemons_start
	tap_check "knfsd's rdma listener fails ($KIWI_NFS_LISTEN_FAIL), the kernel survives" \
		listen_fail "$KIWI_NFS_LISTEN_FAIL"
	rpc.nfsd 0
	nvmf_links_del
	tap_check "no kernel warnings in dmesg" nvmf_dmesg_clean
	tap_done
fi

trap nfs_cleanup_all EXIT
trap 'exit 143' TERM INT
nvmf_dmesg_mark
tap_check "veth pair with cross-wired routes" nvmf_net_setup
tap_check "rpcbind and rpc.mountd running, /var/lib/nfs writable" \
	nfs_daemons_start

tree=/tmp/nfs-tree
tap_check "a file tree to copy" nfs_tree_make $tree

cleanup_pairing() {
	nfs_umount_force
	rpc.nfsd 0 > /dev/null 2>&1
	nfs_unexport
	nvmf_links_del > /dev/null 2>&1
}

# restart_and_use: the server goes away under the mounted client and comes
# back on the same port; the client must get on with a new file.
restart_io() {
	head -c 200000 /dev/urandom > /tmp/nfs-after &&
	cp /tmp/nfs-after $NFS_MNT/after-restart &&
	sync && echo 3 > /proc/sys/vm/drop_caches &&
	cmp /tmp/nfs-after $NFS_MNT/after-restart &&
	cmp $tree/a/b/one-mib $NFS_MNT/tree/a/b/one-mib
}


# reminv_on / reminv_seen: the client's remotely invalidated MRs, by
# xprtrdma's trace event.  svcrdma answers with Send with Invalidate
# naming the rkey of the RPC's chunks; the client's frwr_reminv() fires
# the event only when its receive completed with IB_WC_WITH_INVALIDATE and
# that rkey is one of the RPC's MRs.
NFS_TR=$KIWI_TR	# lib.sh's trace_events flips the event
reminv_on() {
	trace_events 0 rpcrdma/xprtrdma_mr_reminv &&
	echo 0 > $NFS_TR/tracing_on &&
	echo > $NFS_TR/trace &&
	trace_events 1 rpcrdma/xprtrdma_mr_reminv &&
	echo 1 > $NFS_TR/tracing_on
}

reminv_seen() {
	local n
	echo 0 > $NFS_TR/tracing_on
	trace_events 0 rpcrdma/xprtrdma_mr_reminv
	n=$(grep -c "xprtrdma_mr_reminv:" $NFS_TR/trace)
	echo > $NFS_TR/trace
	echo "$n MRs remotely invalidated"
	[ "$n" -gt 0 ]
}

# run_pairing SERVER CLIENT VERS
run_pairing() {
	local s=$1 c=$2 v=$3 label ok=1 b0 b1 tx rx min
	label="$s server <- $c client, NFSv$v"

	step "$label: RDMA links on both ends" \
		eval "nvmf_link_add $NVMF_TGT_DEV $s veth1 &&
		      nvmf_link_add $NVMF_HOST_DEV $c veth0" || ok=0
	[ $ok = 1 ] && { step "$label: export, knfsd on rdma $NFS_PORT" \
		eval "nfs_export && nfs_server_start" || ok=0; }
	[ $ok = 1 ] && { step "$label: mount proto=rdma" \
		nfs_bounded 120 nfs_mount "$v" || ok=0; }
	if [ $ok = 1 ]; then
		b0=$(nvmf_veth_bytes)
		# NFSv3's first create asks NFSACL (GETACL) first
		step "$label: create a file" \
			nfs_bounded 90 sh -c "echo kiwi > $NFS_MNT/first && sync" ||
			ok=0
	fi
	if [ $ok = 1 ]; then
		[ "$c" = kiwi ] && reminv_on
		# kernel posts from contexts that may sleep send there (off by
		# default): on, so that the data checks run through it
		[ -d /sys/module/kiwi ] &&
			echo 1 > /sys/kernel/debug/kiwi/tx_direct
		step "$label: fio 4 KiB random write + crc32c verify ($f4k)" \
			nfs_bounded 600 nvmf_fio_verify v4k $NFS_MNT/fio-4k "$f4k" 4k \
				--ioengine=psync
		step "$label: fio 4-512 KiB random write + crc32c verify ($fsize)" \
			nfs_bounded 600 nvmf_fio_verify vmix $NFS_MNT/fio-mix "$fsize" \
				4k-512k --ioengine=psync
		step "$label: a file tree copied and compared" \
			nfs_bounded 600 eval "cp -a $tree $NFS_MNT/tree &&
				nfs_tree_check $tree $NFS_MNT/tree"
		[ "$c" = kiwi ] &&
			tap_check "$label: the server's Send with Invalidate completes at the kiwi client with IB_WC_WITH_INVALIDATE and the MR's rkey" \
				reminv_seen
		# knfsd's threads post svcrdma's Writes and replies, and may
		# sleep (tx_direct)
		[ "$s" = kiwi ] &&
			tap_check "$label: with tx_direct, the server's posts sent from knfsd's threads (posts_direct)" \
				posts_direct_moved $NVMF_TGT_DEV
		b1=$(nvmf_veth_bytes)
		min=$((${fsize%M} * 1048576))
		nvmf_veth_crossed "$label: the I/O crossed the veth" "$b0" "$b1" $min
		step "$label: server stopped under the mount (rpc.nfsd 0)" \
			nfs_bounded 120 nfs_server_stop
		step "$label: server started again on rdma $NFS_PORT" \
			nfs_server_start
		step "$label: the client writes and reads after the restart" \
			nfs_bounded 240 restart_io
		step "$label: unmount" nfs_bounded 120 nfs_umount
		step "$label: server stopped" nfs_bounded 120 nfs_server_stop
	fi
	cleanup_pairing
	pairing_gone "$label" "mount, export and links" nfs_mounted "$s" "$c"
}

for p in $pairs; do
	IFS=: read -r s c v <<< "$p"
	t0=$SECONDS
	run_pairing "$s" "$c" "$v"
	tap_diag "pairing $p took $((SECONDS - t0)) s"
done

nfs_daemons_stop
nvmf_net_teardown
tap_check "kiwi unloads" kiwi_unload
siw_unload
tap_check "no kernel warnings in dmesg" nvmf_dmesg_clean
tap_done
