# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NFS over RDMA helpers for the case 52-nfs.  Source lib.sh and
# nvmeof-lib.sh first: the network is nvmeof-lib's (veth0 198.18.0.1, the
# client's RDMA link "nvh0"; veth1 198.18.0.2, the server's link "nvt0";
# both in init_net with crossed routes, so the bytes cross the veth).
#
# The server: knfsd with one transport, "rdma 20049" in
# /proc/fs/nfsd/portlist (a wildcard rdma_cm listener: every RDMA device
# of the namespace is asked to listen), exporting a tmpfs; rpcbind and
# rpc.mountd in user space (mountd answers the kernel's export-cache
# upcalls for every version, and NFSv3's MOUNT over TCP).  The guest's
# root is read-only: /var/lib/nfs is a tmpfs of the case's own, the
# export and the mount point are under /run.
# The client: mount -t nfs -o proto=rdma,port=20049,vers=3|4.2.  NFSv3
# mounts with nolock: NLM needs rpc.statd (and its state directory and
# notifications), which exercise no RDMA; the locks stay local.

NFS_SRV_IP=$NVMF_TGT_IP
NFS_EXPORT=/run/kiwi-nfs/export
NFS_MNT=/run/kiwi-nfs/mnt
NFS_PORT=20049
NFS_STATE=/var/lib/nfs
NFSD_FS=/proc/fs/nfsd
NFS_LOG=/tmp/nfs-daemons.log
# who may mount: nvmeof-lib's veth subnet (the two-host bench sets its own)
NFS_CLIENTS=${NFS_CLIENTS:-198.18.0.0/24}

# nfs_daemons_start: nfsd's filesystem, a writable state directory,
# rpcbind and rpc.mountd (once per case).
nfs_daemons_start() {
	modprobe -a nfsd nfs nfsv3 nfsv4 rpcrdma || return 1
	mountpoint -q $NFSD_FS || mount -t nfsd nfsd $NFSD_FS || return 1
	mountpoint -q $NFS_STATE || mount -t tmpfs -o size=16m nfsstate $NFS_STATE ||
		return 1
	mkdir -p $NFS_STATE/rpc_pipefs $NFS_STATE/v4recovery $NFS_STATE/sm \
		$NFS_STATE/sm.bak /run/rpcbind || return 1
	: > $NFS_STATE/etab
	: > $NFS_STATE/rmtab
	mountpoint -q $NFS_STATE/rpc_pipefs ||
		mount -t rpc_pipefs sunrpc $NFS_STATE/rpc_pipefs || return 1
	: > $NFS_LOG
	rpcbind -f -w >> $NFS_LOG 2>&1 &
	NFS_RPCBIND_PID=$!
	wait_for 20 sh -c 'rpcinfo -p 127.0.0.1 > /dev/null' || return 1
	rpc.mountd -F -N 2 >> $NFS_LOG 2>&1 &
	NFS_MOUNTD_PID=$!
	wait_for 30 sh -c 'rpcinfo -p 127.0.0.1 | grep -q mountd'
}

nfs_daemons_stop() {
	local p
	for p in ${NFS_MOUNTD_PID:-} ${NFS_RPCBIND_PID:-}; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	NFS_MOUNTD_PID=
	NFS_RPCBIND_PID=
	mountpoint -q $NFS_STATE/rpc_pipefs && umount $NFS_STATE/rpc_pipefs
	mountpoint -q $NFS_STATE && umount $NFS_STATE
	return 0
}

# nfs_export: a tmpfs, exported to $NFS_CLIENTS.  fsid=0: a tmpfs has
# no UUID to name it by (the fsid keeps its handles valid across a server
# restart), and it is NFSv4's root: the guest's / is 9p, which cannot be
# exported, so no pseudo-root could lead down to /run.  NFSv3 mounts its
# path, NFSv4 "/".
nfs_export() {
	mkdir -p $NFS_EXPORT || return 1
	mountpoint -q $NFS_EXPORT ||
		mount -t tmpfs -o size=${NFS_EXPORT_MB:-96}m kiwinfs $NFS_EXPORT ||
		return 1
	exportfs -o rw,no_root_squash,no_subtree_check,insecure,fsid=0 \
		"$NFS_CLIENTS:$NFS_EXPORT"
}

nfs_unexport() {
	exportfs -u "$NFS_CLIENTS:$NFS_EXPORT" 2>/dev/null
	exportfs -f 2>/dev/null
	mountpoint -q $NFS_EXPORT && umount $NFS_EXPORT
	return 0
}

# nfs_server_start [TRANSPORT PORT]: knfsd on that one transport (rdma
# $NFS_PORT unless told; the storage bench also asks for tcp 2049).
# NFSv4's grace and lease periods at their minimum (10 s), so that a
# restart's grace period costs seconds, not the default 90; they can only
# be set while nfsd is down.
nfs_server_start() {
	local xprt=${1:-rdma} p=${2:-$NFS_PORT}
	echo 10 > $NFSD_FS/nfsv4gracetime &&
	echo 10 > $NFSD_FS/nfsv4leasetime &&
	echo "-2 +3 +4 +4.1 +4.2" > $NFSD_FS/versions &&
	echo "$xprt $p" > $NFSD_FS/portlist &&
	echo 4 > $NFSD_FS/threads || return 1
	grep -q "^$xprt" $NFSD_FS/portlist
}

# nfs_server_stop: "rpc.nfsd 0": no threads, which shuts the service and
# its listener and connections down.
nfs_server_stop() {
	rpc.nfsd 0 && [ "$(cat $NFSD_FS/threads)" = 0 ]
}

nfs_server_listening() {
	grep -q "^rdma $NFS_PORT" $NFSD_FS/portlist
}

# nfs_mount VERS [PROTO PORT]: proto=rdma, port $NFS_PORT unless told
nfs_mount() {
	local proto=${2:-rdma} path=/ opts
	opts=proto=$proto,port=${3:-$NFS_PORT},vers=$1
	[ "$1" = 3 ] && opts=$opts,nolock && path=$NFS_EXPORT
	mkdir -p $NFS_MNT || return 1
	mount -t nfs -o "$opts" $NFS_SRV_IP:$path $NFS_MNT || return 1
	# the mount is the transport asked for
	grep " $NFS_MNT nfs" /proc/mounts | grep -q "proto=$proto" || {
		grep " $NFS_MNT " /proc/mounts
		return 1
	}
}

nfs_mounted() { mountpoint -q $NFS_MNT; }

nfs_umount() {
	umount $NFS_MNT
}

# umount_force MNT: a failed pairing's mount must not keep the case hung
# (NFS's here, SMB's in 54-smb).
umount_force() {
	local pid
	mountpoint -q "$1" || return 0
	umount -f "$1" 2>/dev/null &
	pid=$!
	_nfs_gone_within 60 $pid || umount -l "$1" 2>/dev/null
	return 0
}

nfs_umount_force() { umount_force $NFS_MNT; }

# step DESC CMD...: tap_check, and how long it took (TCG is slow: where
# the time goes is worth seeing).
step() {
	local t=$SECONDS rc
	tap_check "$@"
	rc=$?
	tap_diag "  $((SECONDS - t)) s"
	return $rc
}

# nfs_bounded SECONDS CMD...: CMD in the background; if it still runs after
# SECONDS, what it waits for (its kernel stack, the QPs, the kernel log)
# is printed before it is killed, and the check fails.
nfs_bounded() {
	local secs=$1 pid end
	shift
	"$@" &
	pid=$!
	end=$((SECONDS + secs))
	while kill -0 $pid 2>/dev/null && [ $SECONDS -lt $end ]; do
		sleep 0.5
	done
	if kill -0 $pid 2>/dev/null; then
		echo "nfs_bounded: '$*' still runs after $secs s; its tasks' stacks:"
		nfs_hang_report $pid
		pkill -KILL -P $pid 2>/dev/null
		kill -KILL $pid 2>/dev/null
		# a task stuck in D (an RPC whose MR is never released)
		# outlives SIGKILL: do not wait for it for good
		_nfs_gone_within 20 $pid || echo "nfs_bounded: $pid survives SIGKILL"
		return 124
	fi
	wait $pid
}

_nfs_gone_within() {
	local end=$((SECONDS + $1))
	while kill -0 "$2" 2>/dev/null; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.5
	done
	wait "$2" 2>/dev/null
	return 0
}

nfs_hang_report() {
	local p c
	for p in $1 $(pgrep -P "$1") $(pgrep -P "$(pgrep -P "$1" | head -n1)" 2>/dev/null); do
		c=$(cat /proc/$p/comm 2>/dev/null) || continue
		echo "--- $p $c ($(awk '{print $3}' /proc/$p/stat 2>/dev/null))"
		cat /proc/$p/stack 2>/dev/null
	done
	echo "--- rdma res show qp"
	rdma res show qp 2>&1
	echo "--- kernel log"
	dmesg | tail -n 20
}

# nfs_tree_make DIR: a tree of small and large files, links and an empty
# directory: inline and chunked (RDMA Read/Write) NFS transfers both.
nfs_tree_make() {
	local d=$1 i
	rm -rf "$d" && mkdir -p "$d/a/b/c" "$d/empty" || return 1
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
		head -c $((i * 997)) /dev/urandom > "$d/a/small$i" || return 1
	done
	head -c 1048576 /dev/urandom > "$d/a/b/one-mib" &&
	head -c 300001 /dev/urandom > "$d/a/b/c/odd" &&
	head -c 65536 /dev/zero > "$d/a/zeros" &&
	ln -s b/one-mib "$d/a/link" &&
	ln "$d/a/small1" "$d/a/b/hard1" &&
	chmod 600 "$d/a/small2" &&
	cp -a /usr/share/doc/fio "$d/doc-fio" 2>/dev/null
	return 0
}

# nfs_tree_check SRC DST: DST equals SRC as read back from the server (the
# client's page cache dropped first, so the reads cross the wire).
nfs_tree_check() {
	sync && echo 3 > /proc/sys/vm/drop_caches && diff -r "$1" "$2"
}

# nfs_cleanup_all: for an EXIT trap.
nfs_cleanup_all() {
	nfs_umount_force
	[ -d $NFSD_FS ] && [ -e $NFSD_FS/threads ] && rpc.nfsd 0 2>/dev/null
	nfs_unexport
	nfs_daemons_stop
	nvmf_cleanup_all
}

# pairing_gone LABEL WHAT MOUNTED S C: after a pairing of server S and
# client C nothing of it is left: MOUNTED (a command) fails, both RDMA
# links are gone and, when kiwi was one of the ends, its object counts are
# back to zero.
pairing_gone() {
	local label=$1 what=$2 mounted=$3 s=$4 c=$5
	tap_check "$label: $what gone" eval \
		"! $mounted && [ ! -e /sys/class/infiniband/$NVMF_HOST_DEV ] &&
		 [ ! -e /sys/class/infiniband/$NVMF_TGT_DEV ]"
	if [ "$s" = kiwi ] || [ "$c" = kiwi ]; then
		tap_check "$label: kiwi object counts back to zero" \
			nvmf_wait 30 kiwi_counts_zero
	fi
}
