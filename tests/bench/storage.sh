#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Storage benchmark (a benchmark, not a test: it passes or fails nothing):
# iSER against iSCSI over TCP, and NFS over RDMA against NFS over TCP, the
# RDMA ones over kiwi and over the reference siw.  One VM boot, both ends
# in init_net on nvmeof-lib's veth pair with crossed routes (the bytes
# cross the veth), the same backstore and path for every transport:
#   iSCSI: LIO (configfs), a ramdisk LUN; open-iscsi's initiator through
#          the "iser" interface (ib_iser) or "default" (iscsi_tcp)
#   NFS:   knfsd exporting a tmpfs, NFSv4.2, mounted with proto=rdma (port
#          20049) or proto=tcp (2049); the file is written on the server
# Rounds rotate the order of the three transports (kiwi, siw, tcp), so
# that a drift in the host's load hits all alike.  Each run: links (RDMA
# only), login or mount, then fio with the page cache bypassed:
#   rand4k:   4 KiB random read, iodepth 32     -> IOPS
#   seqrd128k: 128 KiB sequential read, iodepth 16  -> MiB/s
#   seqwr128k: 128 KiB sequential write, iodepth 16 -> MiB/s
# then logout or unmount, links removed.  Medians over the rounds, the
# ratios kiwi/TCP and kiwi/siw, CSV and PNG in tests/bench/out/, the
# table in Documentation/benchmarks.md.
#
# LIO gives every iSER portal a TCP twin on the same address and port,
# and an iWARP listener is a host TCP socket: they collide unless the port
# mapper moves the RDMA listener (kiwi's port_map).  siw cannot have its
# port mapped, so the RDMA runs (kiwi's too, alike) use a second portal,
# port 3262, whose TCP twin is made from a scratch network namespace where
# nobody reaches it (LIO's socket lives in its creator's namespace); the
# TCP runs use the first portal, 3260.
#
# Usage (on the host, after `make module`):
#   tests/bench/storage.sh [--runs N] [--runtime SEC] [--ramp SEC] [--no-doc]
# Defaults: 5 rounds, 10 s per fio run after a 2 s ramp.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

. "$here/bench-lib.sh"
bench_parse_args storage.sh "runs runtime ramp" "$@"

BENCH_MB=64
TRANSPORTS="kiwi siw tcp"

# ---------------------------------------------------------------- guest side


# fio_all ROUND PROTO TRANSPORT FILE: the three jobs, into the CSV
fio_all() {
	local row=$1,$2,$3 f=$4
	bench_fio_csv "$row" IOPS rand4k "$f" randread 4k 32 $BENCH_MB
	bench_fio_csv "$row" MiB/s seqrd128k "$f" read 128k 16 $BENCH_MB
	bench_fio_csv "$row" MiB/s seqwr128k "$f" write 128k 16 $BENCH_MB
}

fail_run() {
	local r=$1 pr=$2 t=$3 x
	echo "bench: round $r $pr $t: set-up failed:" >&2
	sed 's/^/  /' /tmp/bench-setup.out >&2
	for x in rand4k,IOPS seqrd128k,MiB/s seqwr128k,MiB/s; do
		echo "$r,$pr,$t,${x%,*},fail,${x#*,}" >> "$csv"
	done
}

links_add() {
	nvmf_link_add $NVMF_HOST_DEV "$1" $NVMF_HOST_NETDEV &&
		nvmf_link_add $NVMF_TGT_DEV "$1" $NVMF_TGT_NETDEV
}

# The second portal ($NP2) and its TCP twin out of the way (see the top).
HIDE_NS=kiwibenchhide
ISER_PORT2=3262
NP2=	# under $TPG, once iser-lib.sh is sourced
portal2_setup() {
	ip netns add $HIDE_NS &&
	ip netns exec $HIDE_NS sysctl -qw net.ipv4.ip_nonlocal_bind=1 &&
	nsenter --net=/var/run/netns/$HIDE_NS mkdir "$NP2" &&
	! ss -Htln "src $NVMF_TGT_IP:$ISER_PORT2" | grep -q .
}

portal2_iser() {
	echo "$1" > "$NP2/iser" && [ "$(cat "$NP2/iser")" = "$1" ]
}

portal2_teardown() {
	[ -e "$NP2/iser" ] && [ "$(cat "$NP2/iser")" = 1 ] && echo 0 > "$NP2/iser"
	[ -d "$NP2" ] && rmdir "$NP2"
	ip netns del $HIDE_NS 2>/dev/null
	return 0
}

# siw's iSER runs: three of them so far (2026-12-04 and -05) ended with the
# target's siw QP reporting a fatal error mid-fio, then LIO warning in
# iscsit_release_cmd(), which panic_on_warn turns into a panic that took
# the whole bench with it.  kiwi is not on that path (both ends are siw).
# So siw's runs go without panic_on_warn, and a run during which the
# kernel warned counts as failed, its figures dropped; vm-run.sh still
# reports the warning at the end.
siw_warn_begin() {
	SIW_DMESG=$(dmesg | wc -l)
	# back to what the guest booted with afterwards (the benchmarks boot
	# without panic_on_warn: bench-lib.sh)
	SIW_POW=$(cat /proc/sys/kernel/panic_on_warn)
	echo 0 > /proc/sys/kernel/panic_on_warn
}

siw_warn_end() {
	local r=$1 pr=$2
	echo "${SIW_POW:-1}" > /proc/sys/kernel/panic_on_warn
	dmesg | tail -n +$((SIW_DMESG + 1)) | grep -q 'WARNING:' || return 0
	echo "bench: round $r $pr siw: the kernel warned; the run counts as failed:" >&2
	dmesg | tail -n +$((SIW_DMESG + 1)) | grep -B2 -A3 'WARNING:' | head -n 20 >&2
	sed -i "s/^$r,$pr,siw,\([a-z0-9]*\),[^,]*,/$r,$pr,siw,\1,fail,/" "$csv"
}

iscsi_run() {
	local r=$1 t=$2 iface=iser port=$ISER_PORT2 dev t0=$SECONDS
	[ "$t" = tcp ] && iface=default port=$ISER_PORT
	[ "$t" = siw ] && siw_warn_begin
	if ! {
		if [ "$t" != tcp ]; then links_add "$t" && portal2_iser 1; fi &&
		iscsi_login $iface $port &&
		iscsi_session_is "$([ "$t" = tcp ] && echo tcp || echo iser)" &&
		wait_for 30 iscsi_disk > /dev/null; } > /tmp/bench-setup.out 2>&1; then
		fail_run "$r" iscsi "$t"
	else
		dev=$(iscsi_disk)
		fio_all "$r" iscsi "$t" "$dev"
	fi
	{
		iscsi_logout $iface $port
		[ "$t" = tcp ] || { portal2_iser 0; nvmf_links_del; }
	} > /dev/null 2>&1
	[ "$t" = siw ] && siw_warn_end "$r" iscsi
	echo "bench: round $r iscsi $t done in $((SECONDS - t0)) s: $(tail -n 3 "$csv" | tr '\n' ' ')"
}

nfs_run() {
	local r=$1 t=$2 xprt=rdma port=$NFS_PORT t0=$SECONDS
	[ "$t" = tcp ] && xprt=tcp port=2049
	if ! {
		if [ "$t" != tcp ]; then links_add "$t"; fi &&
		nfs_server_start $xprt $port &&
		nfs_mount 4.2 $xprt $port; } > /tmp/bench-setup.out 2>&1; then
		fail_run "$r" nfs "$t"
	else
		fio_all "$r" nfs "$t" $NFS_MNT/bench.dat
	fi
	{
		nfs_umount_force
		rpc.nfsd 0
		[ "$t" = tcp ] || nvmf_links_del
	} > /dev/null 2>&1
	echo "bench: round $r nfs $t done in $((SECONDS - t0)) s: $(tail -n 3 "$csv" | tr '\n' ' ')"
}

guest_cleanup() {
	iscsi_stop
	portal2_teardown
	lio_teardown > /dev/null 2>&1
	nfs_cleanup_all > /dev/null 2>&1
}

guest_main() {
	. "$root/tests/cases/lib/lib.sh"
	. "$root/tests/cases/lib/nvmeof-lib.sh"
	. "$root/tests/cases/lib/iser-lib.sh"
	. "$root/tests/cases/lib/nfs-lib.sh"
	local r t
	NP2=$TPG/np/$NVMF_TGT_IP:$ISER_PORT2
	ISER_MB=$BENCH_MB
	NFS_EXPORT_MB=$((BENCH_MB + 32))
	trap guest_cleanup EXIT
	echo "round,proto,transport,test,value,unit" > "$csv"
	{
		echo "# kernel $(uname -r)"
		echo "# guest cpus $(nproc)"
		# KIWI_VM_SLUB_DEBUG=off on the host boots the guest without it
		echo "# slub_debug $(sed -n 's/.*slub_debug=\([^ ]*\).*/\1/p' /proc/cmdline | grep . || echo off)"
	} >> "$csv.meta"
	nvmf_net_setup || { echo "bench: network setup failed" >&2; exit 1; }
	kiwi_load && siw_load || exit 1

	# iSCSI: the ramdisk, the TCP portal (3260), the RDMA portal (3262)
	lio_setup || { echo "bench: LIO setup failed" >&2; exit 1; }
	modprobe ib_isert || exit 1
	portal2_setup || { echo "bench: second portal failed" >&2; exit 1; }
	iscsi_start || { echo "bench: iscsid failed" >&2; exit 1; }
	# discovery over TCP only: through the iser interface open-iscsi
	# would discover over iSER, and no RDMA link exists yet
	wait_for 10 sh -c "ss -Htln 'src $NVMF_TGT_IP:$ISER_PORT' | grep -q ." &&
	iscsiadm -m discovery -t st -p "$NVMF_TGT_IP:$ISER_PORT" -I default |
		grep -q "$ISER_IQN" || { echo "bench: discovery failed" >&2; exit 1; }
	# the iser interface's record for the RDMA portal
	iscsiadm -m node -o new -T "$ISER_IQN" -p "$NVMF_TGT_IP:$ISER_PORT2" \
		-I iser > /dev/null || { echo "bench: iser node record failed" >&2; exit 1; }
	for r in $(seq 1 "$runs"); do
		for t in $(bench_order "$r" $TRANSPORTS); do
			iscsi_run "$r" "$t"
		done
	done
	iscsi_stop
	portal2_teardown
	lio_teardown > /dev/null 2>&1

	# NFS: a tmpfs export holding the file, written once on the server
	nfs_daemons_start && nfs_export || { echo "bench: NFS setup failed" >&2; exit 1; }
	dd if=/dev/urandom of=$NFS_EXPORT/bench.dat bs=1M count=$BENCH_MB \
		status=none || exit 1
	for r in $(seq 1 "$runs"); do
		for t in $(bench_order "$r" $TRANSPORTS); do
			nfs_run "$r" "$t"
		done
	done
	nfs_cleanup_all > /dev/null 2>&1
	trap - EXIT
}

if [ $guest = 1 ]; then
	guest_main
	exit 0
fi

# ----------------------------------------------------------------- host side
bench_host_start storage
png=$here/out/storage-$stamp.png
# per run: links, login or mount (slow under TCG) and three fio jobs
tmo=$((runs * 6 * (3 * (runtime + ramp + 5) + 150) + 600))
"$root/tests/vm/vm-run.sh" --timeout "$tmo" -- \
	bash "$root/tests/bench/storage.sh" --runs "$runs" --runtime "$runtime" \
	--ramp "$ramp" --guest "$csv"
bench_vm_done storage.sh $?

python3 "$here/storage-report.py" "$csv" "$png" \
	"$root/Documentation/benchmarks.md" "$doc" "$(bench_cpu)" \
	"$(sed -n 's/^# kernel //p' "$csv.meta")" "$runs" "$runtime" "$ramp" \
	"$(bench_rev "driver changes" drivers)" "$(awk '{ print $1 }' /proc/loadavg)"
