#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 600
#
# Verbs objects through libibverbs and libkiwi on a kiwi0 link over veth0:
# the provider loads on Debian's libibverbs (ibv_devinfo), then
# tests/verbs/build/verbs-objects creates and destroys every object, checks
# attributes, limits, errno values and ring contents, and kills a child that
# holds objects.  Its TAP lines are re-numbered into this script's.  While a
# process holds objects, `rdma resource show' lists them; afterwards, and
# once the link is gone, kiwi's object counts are zero.  QPs created and
# destroyed in a loop under `rdma resource show qp -dd' loops (the dump
# must not read a destroyed QP's rings), and connected QPs destroyed in
# cm-cycle's connect/disconnect cycles under the same dumps (the dump must
# not read a destroyed QP's receive state).
. "$(dirname "$0")/lib/lib.sh"

bin=$KIWI_ROOT/tests/verbs/build/verbs-objects
tmp=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null; rm -rf "$tmp"' EXIT

kiwi_provider_env
if [ -n "${RDMAV_DRIVERS:-}" ]; then
	tap_ok "provider found in the build tree"
else
	tap_fail "provider found in the build tree (make provider)"
fi
tap_built "$bin"

tap_check "kiwi.ko loads" kiwi_load
tap_check "veth pair is up" veth_setup
tap_check "rdma link add kiwi0 type kiwi netdev veth0" \
	rdma link add kiwi0 type kiwi netdev veth0

info=$(ibv_devinfo -v -d kiwi0 2>&1)
if printf '%s\n' "$info" | grep -qE 'hca_id:[[:space:]]+kiwi0' &&
	printf '%s\n' "$info" | grep -qE 'transport:[[:space:]]+iWARP' &&
	printf '%s\n' "$info" | grep -qE 'state:[[:space:]]+PORT_ACTIVE'; then
	tap_ok "ibv_devinfo -v -d kiwi0: iWARP, port active (libkiwi)"
	tap_diag "$(printf '%s\n' "$info" | grep -E 'hca_id|transport|node_guid|sys_image_guid|max_qp:|max_cqe|state:|link_layer|GID\[')"
else
	tap_fail "ibv_devinfo -v -d kiwi0: iWARP, port active (libkiwi)"
	tap_diag "$info"
fi

# A kernel of another kiwi ABI version is refused, with a clear message.
skew=$KIWI_ROOT/tests/verbs/build/libabi-skew.so
out=$(LD_PRELOAD=$skew ibv_devinfo -d kiwi0 2>&1)
rc=$?
if [ -f "$skew" ] && [ $rc -ne 0 ] && printf '%s\n' "$out" |
	grep -qE 'kiwi ABI version [0-9]+ but this provider supports only [0-9]+'; then
	tap_ok "libkiwi refuses a kernel of another kiwi ABI version"
else
	tap_fail "libkiwi refuses a kernel of another kiwi ABI version (status $rc)"
	tap_diag "$out"
fi
# shellcheck disable=SC2016 # awk fields, not shell variables
tap_check "kiwi object counts: no context left by the refusal" \
	awk '$1 != "devices" && $2 != 0 { bad = 1 } END { exit bad }' \
	"$KIWI_OBJECTS"

# The C program's TAP, renumbered; a crash or a missing plan fails too.
if [ -x "$bin" ]; then
	tap_program verbs 480 "$bin" -d kiwi0 -n veth0
fi

# A process holding objects: rdma resource show lists them.
hold_pid=
if [ -x "$bin" ] && mkfifo "$tmp/in"; then
	"$bin" --hold -d kiwi0 < "$tmp/in" > "$tmp/hold" 2>&1 &
	hold_pid=$!
	exec 3> "$tmp/in"
	# until it is ready, or gone
	wait_for 30 sh -c "grep -q '^ready' '$tmp/hold' || ! kill -0 $hold_pid"
fi
read -r _ pid qpn qpn2 < <(grep '^ready' "$tmp/hold" 2>/dev/null)
if [ -n "${pid:-}" ]; then
	tap_ok "a process holds PD, CQs, MR, SRQ and two QPs"
	res=$(rdma resource show 2>&1)
	sum=$(printf '%s\n' "$res" | grep -E '^[0-9]+: kiwi0: ')
	miss=
	for want in "pd 1" "cq 2" "qp 2" "mr 1" "ctx 1"; do
		printf '%s\n' "$sum" | grep -qE " $want( |\$)" ||
			miss="$miss [$want]"
	done
	if [ -n "$sum" ] && [ -z "$miss" ]; then
		tap_ok "rdma resource show counts pd 1 cq 2 qp 2 mr 1 ctx 1"
	else
		tap_fail "rdma resource show counts pd 1 cq 2 qp 2 mr 1 ctx 1 (missing$miss)"
		tap_diag "$res"
	fi
	res=$(rdma resource show qp link kiwi0 2>&1)
	for q in "$qpn" "$qpn2"; do
		if printf '%s\n' "$res" |
			grep -qE "lqpn $q .*type RC.* pid $pid "; then
			tap_ok "rdma resource show qp lists QP $q of pid $pid"
		else
			tap_fail "rdma resource show qp lists QP $q of pid $pid"
			tap_diag "$res"
		fi
	done
	for t in pd cq mr; do
		res=$(rdma resource show "$t" dev kiwi0 2>&1)
		if printf '%s\n' "$res" | grep -qE " pid $pid "; then
			tap_ok "rdma resource show $t lists pid $pid's"
		else
			tap_fail "rdma resource show $t lists pid $pid's"
			tap_diag "$res"
		fi
	done
else
	tap_fail "a process holds PD, CQs, MR, SRQ and two QPs"
	[ -f "$tmp/hold" ] && tap_diag "$(cat "$tmp/hold")"
fi
exec 3>&-
if [ -n "$hold_pid" ]; then
	wait "$hold_pid"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		tap_ok "holder releases its objects and exits 0"
	else
		tap_fail "holder releases its objects and exits 0 (status $rc)"
	fi
fi

# Ring memory is charged to the process's memory cgroup: a process holding
# 8 CQs of 65536 entries (2 MiB of ring each) uses at least 12 MiB more
# of its cgroup than one holding none.  (vmalloc memory is not charged
# unless asked for: before, the difference was the process's own only,
# well under 1 MiB.  Not the full 16 MiB: memory.current moves in per-CPU
# batches of charge and with the process's own pages, so a difference of
# 16 MiB less a page was seen.)
# rings_usage N: memory.current of a cgroup whose one process holds N.
rings_usage() {
	local cg=/sys/fs/cgroup/kiwi-rings n=$1 use
	mkdir -p "$cg" || return 1
	rm -f "$tmp/rin" "$tmp/rout"
	mkfifo "$tmp/rin" || return 1
	sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" --rings "$3" -d kiwi0' \
		sh "$cg" "$bin" "$n" < "$tmp/rin" > "$tmp/rout" 2>&1 &
	local pid=$!
	exec 4> "$tmp/rin"
	wait_for 30 sh -c "grep -q '^ready $n\$' '$tmp/rout' || ! kill -0 $pid"
	use=$(cat "$cg/memory.current")
	grep -q "^ready $n\$" "$tmp/rout" || use=
	exec 4>&-
	wait "$pid"
	rmdir "$cg"
	[ -n "$use" ] && echo "$use"
}
if [ -x "$bin" ]; then
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	u0=$(rings_usage 0)
	u8=$(rings_usage 8)
	if [ -n "$u0" ] && [ -n "$u8" ] &&
		[ $((u8 - u0)) -ge $((12 * 1024 * 1024)) ]; then
		tap_ok "ring memory is charged to the memory cgroup (8 CQs of 2 MiB: +$(( (u8 - u0) / 1024 )) KiB)"
	else
		tap_fail "ring memory is charged to the memory cgroup (without: ${u0:-?} B, with 8 CQs of 2 MiB: ${u8:-?} B)"
		tap_diag "$(cat "$tmp/rout" 2>/dev/null)"
	fi
fi

# Ring memory counts against RLIMIT_MEMLOCK, as pinned MR pages do: a
# process without CAP_IPC_LOCK under `ulimit -l 65536` (64 MiB) creating
# CQs of the largest size (2 MiB and a page of ring each) gets ENOMEM
# before 64 MiB of rings, and once it destroyed them it can create as
# many again.  Before, such a process created 64 of them (128 MiB).  With
# CAP_IPC_LOCK (root) the limit does not apply: 40 (80 MiB) are made.
# memlock_run CAPS N: "made M errno E" and "again K errno E" of verbs-objects
# --memlock N under a 64 MiB RLIMIT_MEMLOCK; CAPS "drop" drops CAP_IPC_LOCK.
memlock_run() {
	local drop=()
	[ "$1" = drop ] && drop=(setpriv --bounding-set -ipc_lock --inh-caps -ipc_lock)
	bash -c 'ulimit -l 65536 && exec "$@"' sh "${drop[@]}" \
		"$bin" --memlock "$2" -d kiwi0
}
if [ -x "$bin" ]; then
	out=$(memlock_run drop 64 2>&1)
	made=$(echo "$out" | sed -n 's/^made \([0-9]*\) errno \([0-9]*\)$/\1 \2/p')
	again=$(echo "$out" | sed -n 's/^again \([0-9]*\) errno \([0-9]*\)$/\1 \2/p')
	read -r m e <<< "$made"
	if [ "${e:-}" = 12 ] && [ "$m" -ge 28 ] && [ "$m" -le 31 ]; then
		tap_ok "without CAP_IPC_LOCK, RLIMIT_MEMLOCK 64 MiB: CQ $((m + 1)) of 2 MiB fails with ENOMEM"
	else
		tap_fail "without CAP_IPC_LOCK, RLIMIT_MEMLOCK 64 MiB: a CQ of 2 MiB fails with ENOMEM before 64 MiB (made ${m:-?} of 64, errno ${e:-?})"
		tap_diag "$out"
	fi
	if [ -n "$made" ] && [ "$again" = "${made%% *} 0" ]; then
		tap_ok "after destroying them, as many CQs are created again ($again)"
	else
		tap_fail "after destroying them, as many CQs are created again (made ${made:-?}, again ${again:-?})"
		tap_diag "$out"
	fi
	out=$(memlock_run keep 40 2>&1)
	if echo "$out" | grep -q '^made 40 errno 0$'; then
		tap_ok "with CAP_IPC_LOCK, RLIMIT_MEMLOCK 64 MiB does not limit rings (40 CQs, 80 MiB)"
	else
		tap_fail "with CAP_IPC_LOCK, RLIMIT_MEMLOCK 64 MiB does not limit rings (40 CQs)"
		tap_diag "$out"
	fi
fi

# Resource dumps racing QP destruction: ib_core untracks a QP only after
# destroy_qp, so a dump may look at a QP whose rings are being freed.  Two
# dump loops run while a process creates and destroys QPs with WRs posted.
if [ -x "$bin" ]; then
	"$bin" --churn 20 -d kiwi0 > "$tmp/churn" 2>&1 &
	churn_pid=$!
	# one rdma process runs many dumps (rdma -batch), two of them at once
	yes 'resource show qp link kiwi0' | head -n 100000 > "$tmp/dumps"
	dumps=0
	while kill -0 "$churn_pid" 2>/dev/null; do
		timeout 5 rdma -dd -force -batch "$tmp/dumps" > /dev/null 2>&1 &
		timeout 5 rdma -dd -force -batch "$tmp/dumps" > /dev/null 2>&1
		wait $!
		dumps=$((dumps + 2))
	done
	wait "$churn_pid"
	rc=$?
	if [ "$rc" -eq 0 ] && grep -qE '^churn [1-9]' "$tmp/churn"; then
		tap_ok "QPs created and destroyed under resource dumps: $(cat "$tmp/churn"), $dumps batches of dumps"
	else
		tap_fail "QPs created and destroyed under resource dumps (status $rc)"
		tap_diag "$(cat "$tmp/churn")"
	fi
fi

# Connected QPs destroyed under resource dumps: a QP that carried a
# connection has its engines' state (txs, and rxs inside it) until destroy
# frees it, and the dump reads rxs->active.  cm-cycle's client connects,
# disconnects and destroys QPs on kiwi0; its server runs on kiwi1, on veth1
# in a namespace (the bytes cross the veth).  No Send is ever in flight,
# so a dump showing rx_send_active 1 read freed (poisoned) memory.
cyc=$KIWI_ROOT/tests/verbs/build/cm-cycle
ncyc=${KIWI_DUMP_CYCLES:-40}
if [ -x "$cyc" ] && veth_ns_move vobj &&
	ip netns exec vobj rdma link add kiwi1 type kiwi netdev veth1; then
	ip netns exec vobj timeout 600 "$cyc" server 198.18.0.2 21400 "$ncyc" \
		> "$tmp/cs" 2>&1 &
	sp=$!
	wait_alive 60 $sp tcp_listening vobj 21400
	timeout 600 "$cyc" client 198.18.0.2 21400 "$ncyc" > "$tmp/cc" 2>&1 &
	cp=$!
	yes 'resource show qp' | head -n 100000 > "$tmp/dumps"
	dumps=0
	: > "$tmp/stale"
	while kill -0 "$cp" 2>/dev/null; do
		timeout 5 rdma -dd -force -batch "$tmp/dumps" 2>/dev/null |
			grep 'drv_rx_send_active 1' >> "$tmp/stale" &
		timeout 5 rdma -dd -force -batch "$tmp/dumps" 2>/dev/null |
			grep 'drv_rx_send_active 1' >> "$tmp/stale"
		wait $!
		dumps=$((dumps + 2))
	done
	wait "$cp"
	crc=$?
	wait "$sp"
	src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		tap_ok "connected QPs destroyed under resource dumps: $(cat "$tmp/cc")"
	else
		tap_fail "connected QPs destroyed under resource dumps (client $crc, server $src)"
		tap_diag "$(cat "$tmp/cc" "$tmp/cs")"
	fi
	if [ ! -s "$tmp/stale" ]; then
		tap_ok "no dump read a destroyed QP's receive state ($dumps batches of dumps)"
	else
		tap_fail "no dump read a destroyed QP's receive state ($dumps batches of dumps)"
		tap_diag "$(head -n 3 "$tmp/stale")"
	fi
	ip netns exec vobj rdma link del kiwi1
else
	tap_fail "connected QPs destroyed under resource dumps: set-up (cm-cycle, kiwi1 in a namespace)"
fi

res=$(rdma resource show qp link kiwi0 2>&1)
if printf '%s\n' "$res" | grep -q lqpn; then
	tap_fail "no QPs left on kiwi0"
	tap_diag "$res"
else
	tap_ok "no QPs left on kiwi0"
fi

tap_check "rdma link delete kiwi0" rdma link delete kiwi0
tap_check "kiwi object counts are all zero" kiwi_counts_zero
veth_teardown
ip netns del vobj 2>/dev/null
tap_done
