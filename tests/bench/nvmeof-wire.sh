#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The NVMe-oF benchmark of record (`make bench-nvmeof`): two guests on one
# virtual wire, the kernel's NVMe-oF host on A and its target on B, kiwi
# to kiwi, siw to siw and NVMe/TCP, paired round by round, over several
# boots.  A benchmark, not a test: it passes nothing.
#
#   tests/bench/nvmeof-wire.sh [--boots N] [--runs N] [--runtime SEC]
#                              [--ramp SEC] [--quick] [--no-doc]
#
# Per boot, the layout of perftest-wire.sh: two TCG guests of the same
# kernel (KIWI_KVER, 6.1 by default), one vCPU each, A's vCPU thread
# pinned to host CPU 0 and B's to host CPU 1, no slub_debug, no
# panic_on_warn; one virtio-net NIC each on the bench wire (bench-lib.sh:
# macvtaps with a NIC's offloads, or with KIWI_WB_WIRE=socket
# tests/vm/two-host.sh's socket netdev), A 10.9.0.1, B 10.9.0.2.  B holds a
# memory-backed null_blk disk (nvmeof-lib.sh, 64 MiB, filled from
# /dev/urandom once per boot) and exports it as one namespace through
# nvmet; A connects with the kernel's host and runs fio on the namespace.
# Each round runs every configuration once, the order turning by one per
# round:
#   kiwi  nvme-rdma on A to nvmet-rdma on B, kiwi devices, mpa_crc=off
#   siw   the same over siw (tests/vm/build-siw.sh)
#   tcp   nvme-tcp on A to nvmet-tcp on B
# and in each, fio (libaio, --direct=1, one job, --runtime after --ramp):
#   rand4k-read    4 KiB random read, iodepth 32     -> IOPS
#   seq128k-read   128 KiB sequential read, iodepth 16  -> MiB/s
#   seq128k-write  128 KiB sequential write, iodepth 16 -> MiB/s
#
# What is counted (tests/bench/nvmeof-wire-report.py): fio's own figures
# on A, over its counted span (after the ramp; at least 1 s, or the run
# is left out); CPU per I/O is both vCPU threads' time as the host counts
# it (wire-hostcpu.py) over that span, found on the host's clock from
# fio's end time and the mark files (perftest-wire.sh's mark), over the
# I/Os fio counted in it.  Each guest's NIC byte counters around each fio
# run show the data crossed the wire.  A configuration that fails ends
# its boot (both guests dump their state first: ROLE.fail-ID).
#
# Default 3 boots of 3 rounds, 10 s per fio run after a 2 s ramp.
# --quick (KIWI_BENCH_QUICK=1): one boot, one round, 3 s after 1 s, for
# developing the bench; its numbers mean nothing.  Results:
# tests/bench/out/nvmeof-wire-<date>/ (per boot both guests' rows, fio's
# JSON, the host's CPU samples), the report (per-round ratios with a
# bootstrap 95 % interval) and, unless --no-doc or --quick,
# Documentation/benchmarks.md's table of record.
# The body is one compound command, read whole before it runs.
{
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

. "$here/bench-lib.sh"
boots=3
runs=3
quick=${KIWI_BENCH_QUICK:-0}
guest_dir=
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--boots) boots=$2; shift 2 ;;
	--guest-dir) guest_dir=$2; shift 2 ;;
	*) args+=("$1"); shift ;;
	esac
done
bench_parse_args nvmeof-wire.sh "runs runtime ramp quick" "${args[@]}"
[[ $boots =~ ^[1-9][0-9]*$ ]] || { echo "nvmeof-wire.sh: --boots wants a number" >&2; exit 2; }
if [ "$quick" = 1 ]; then
	boots=1 runs=1 runtime=3 ramp=1 doc=0
fi
# a subset, to chase one configuration (never a table of record):
# KIWI_NW_CONFIGS="kiwi tcp", KIWI_NW_TESTS="rand4k-read"
[ -n "${KIWI_NW_CONFIGS:-}${KIWI_NW_TESTS:-}" ] && doc=0

# ---------------------------------------------------------------- guest side
if [ -n "$guest_dir" ]; then
. "$root/tests/cases/lib/lib.sh"
. "$root/tests/cases/lib/nvmeof-lib.sh"
role=${KIWI_NW_ROLE:?}
boot=${KIWI_NW_BOOT:?}
dir=$guest_dir
case $role in
A) peer=B me=10.9.0.1 them=10.9.0.2 ;;
B) peer=A me=10.9.0.2 them=10.9.0.1 ;;
esac
# the target's address, as nvmf_nvmet_setup and nvmf_connect use it
NVMF_TGT_IP=10.9.0.2
dev=nw0
gone=0
# a configuration of this boot failed (fio_one, run_config)
failed=0
configs=${KIWI_NW_CONFIGS:-kiwi siw tcp}
# NAME:RW:BS:IODEPTH
tests="rand4k-read:randread:4k:32 seq128k-read:read:128k:16 seq128k-write:write:128k:16"
if [ -n "${KIWI_NW_TESTS:-}" ]; then
	t=
	for x in $tests; do
		[[ " $KIWI_NW_TESTS " == *" ${x%%:*} "* ]] && t+=" $x"
	done
	tests=$t
fi
rows=$dir/$role.runs
[ -e "$rows" ] || echo "boot,round,config,test,t0,t1,rx,tx,status" > "$rows"

trap ': > "$dir/$role.exit"' EXIT

# wsync NAME [SECONDS]: both guests got here (perftest-wire.sh's): 1 when
# the peer did not come in time, 2 when it is gone (then at once ever after)
wsync() {
	local end=$((SECONDS + ${2:-600}))
	[ $gone = 0 ] || return 2
	: > "$dir/$role.$1"
	while [ ! -e "$dir/$peer.$1" ]; do
		if [ -e "$dir/$peer.exit" ] || [ -e "$dir/abort" ]; then
			echo "nvmeof-wire: $peer is gone at $1" >&2
			gone=1
			return 2
		fi
		[ $SECONDS -lt $end ] || { echo "nvmeof-wire: no $peer at $1" >&2; return 1; }
		sleep 0.1
	done
}

put() {
	printf '%s\n' "$2" > "$dir/$role.$1.tmp" && mv -f "$dir/$role.$1.tmp" "$dir/$role.$1"
}

get() {
	cat "$dir/$peer.$1" 2>/dev/null
}

nic_of_mac() {
	local n
	for n in /sys/class/net/*; do
		[ "$(cat "$n/address")" = "${KIWI_VM_MAC:?}" ] && { basename "$n"; return 0; }
	done
	return 1
}

wire_up() {
	modprobe virtio_net || return 1
	wait_for 30 nic_of_mac || return 1
	nic=$(nic_of_mac)
	ip addr add "$me/24" dev "$nic" && ip link set "$nic" up
}

# mark NAME: now, on this guest's clock, also written to a file of the
# shared directory, whose modification time the host's clock gives
# (perftest-wire.sh's): the report maps fio's end onto the host's samples
# of the vCPU threads' CPU time with it.
mark() {
	now=$EPOCHREALTIME
	echo "$now" > "$dir/$role.clk-$1"
}

# fail_dump ID: this guest's view of a run or configuration that failed
# (both guests write one): sockets, RDMA links and resources, the
# neighbour, NVMe controllers, a ping of the peer, the kernel log's end
fail_dump() {
	{
		echo "== $role $1 failed, $(date -u +%T)"
		ss -tanpe
		rdma link
		rdma -dd res show cm_id
		ip neigh
		nvme list-subsys
		ping -c 2 -W 5 "$them"
		dmesg | tail -n 80
	} > "$dir/$role.fail-$1" 2>&1
}

# nic_bytes: "rx tx" of the wire's NIC
nic_bytes() {
	echo "$(cat /sys/class/net/$nic/statistics/rx_bytes)" \
		"$(cat /sys/class/net/$nic/statistics/tx_bytes)"
}

# fio_one ROUND CONFIG SPEC: one fio run (SPEC NAME:RW:BS:IODEPTH), A
# running it on the namespace, B waiting; both write a row with their
# NIC's bytes over the run.  fio's JSON goes to the shared directory
# (A.fio-ID.json), for the report.
fio_one() {
	local r=$1 c=$2 name rw bs qd id t0 t1 b0 b1 st=ok
	IFS=: read -r name rw bs qd <<< "$3"
	id=b$boot-r$r-$c-$name
	wsync "$id-plan" || return
	mark "$id-0"; t0=$now
	b0=$(nic_bytes)
	if [ $role = A ]; then
		# bounded: a controller that is lost fails its I/O only after
		# nvme connect's --ctrl-loss-tmo
		timeout $((runtime + ramp + 300)) \
			fio --name="$name" --filename="$NVMF_DEV" --direct=1 \
			--ioengine=libaio --rw="$rw" --bs="$bs" --iodepth="$qd" \
			--numjobs=1 --time_based --runtime="$runtime" \
			--ramp_time="$ramp" --size="$NVMF_SIZE_MB"M \
			--output-format=json --output="$dir/A.fio-$id.json" \
			> /tmp/nw-fio.err 2>&1 ||
			{ st=fail; tail -n 5 /tmp/nw-fio.err >&2; }
		b1=$(nic_bytes)
		mark "$id-1"; t1=$now
		put "$id-st" $st
		wsync "$id-done" || st=fail
	else
		wsync "$id-done" $((runtime + ramp + 600)) || st=fail
		b1=$(nic_bytes)
		mark "$id-1"; t1=$now
		[ "$(get "$id-st")" = ok ] || st=fail
	fi
	[ $st = ok ] || { failed=1; fail_dump "$id"; }
	set -- $b0 $b1
	echo "$boot,$r,$c,$name,$t0,$t1,$(($3 - $1)),$(($4 - $2)),$st" >> "$rows"
}

# fail_rows ROUND CONFIG: a configuration that did not come up
fail_rows() {
	local x
	for x in $tests; do
		echo "$boot,$1,$2,${x%%:*},,,,,fail" >> "$rows"
	done
}

# run_config ROUND CONFIG: B's target and A's host for CONFIG, the fio
# runs, then both gone again
run_config() {
	local r=$1 c=$2 id=b$boot-r$1-$2 prov= crc= ok=1 x
	case $c in
	kiwi) prov=kiwi crc=off NVMF_TRTYPE=rdma ;;
	siw) prov=siw NVMF_TRTYPE=rdma ;;
	tcp) NVMF_TRTYPE=tcp ;;
	esac
	if [ -n "$prov" ]; then
		nvmf_link_add $dev $prov "$nic" $crc > /tmp/nw-up.log 2>&1 || ok=0
	fi
	if [ $role = B ] && [ $ok = 1 ]; then
		{ nvmf_nvmet_setup && wait_for 60 tcp_listening "" $NVMF_PORT; } \
			>> /tmp/nw-up.log 2>&1 || ok=0
	fi
	[ $ok = 1 ] || { echo "nvmeof-wire: $c: $role's set-up failed" >&2; cat /tmp/nw-up.log >&2; }
	put "$id-upok" $ok
	wsync "$id-up" || return
	if [ $role = A ]; then
		if [ $ok = 1 ] && [ "$(get "$id-upok")" = 1 ]; then
			# keep-alive every 30 s, not the default 5: on a busy
			# TCG host a keep-alive's round trip can take longer
			# than 5 s, and the controller is then torn down in the
			# middle of a run; a lost controller gets one
			# reconnect (under TCG a failing one can take a minute)
			# rather than 60, and then fails its I/O
			nvmf_connect --keep-alive-tmo=30 --ctrl-loss-tmo=10 \
				--reconnect-delay=10 \
				> /tmp/nw-conn.log 2>&1 || ok=0
			[ $ok = 1 ] || { echo "nvmeof-wire: $c: nvme connect failed" >&2; cat /tmp/nw-conn.log >&2; }
		else
			ok=0
		fi
		put "$id-connok" $ok
	fi
	wsync "$id-conn" || return
	[ $role = B ] && [ "$(get "$id-connok")" != 1 ] && ok=0
	if [ $ok = 1 ]; then
		for x in $tests; do
			[ $gone = 0 ] || break
			fio_one "$r" "$c" "$x"
		done
	else
		failed=1
		fail_dump "$id"
		fail_rows "$r" "$c"
	fi
	[ $role = A ] && bounded "$c: nvme disconnect" nvmf_disconnect
	wsync "$id-disc"
	[ $role = B ] && bounded "$c: nvmet teardown" nvmf_nvmet_teardown
	if [ -e /sys/class/infiniband/$dev ]; then
		bounded "$c: rdma link del" rdma link del $dev &&
			wait_for 10 test ! -e /sys/class/infiniband/$dev ||
			echo "nvmeof-wire: $c: $dev did not go away" >&2
	fi
	# either side's failure ends the boot on both
	put "$id-failed" $failed
	wsync "$id-end"
	[ "$(get "$id-failed")" = 1 ] && failed=1
}

# bounded WHAT CMD...: CMD, waited for 120 s at most; a teardown step of
# a wedged target (siw: rmdir of the nvmet port blocked for ever) is left
# behind and ends the boot
bounded() {
	local what=$1 pid
	shift
	"$@" > /tmp/nw-down.log 2>&1 &
	pid=$!
	if ! wait_for 120 pid_gone $pid; then
		echo "nvmeof-wire: $what hangs; the boot ends" >&2
		failed=1
		return 1
	fi
	wait $pid && return 0
	echo "nvmeof-wire: $what failed" >&2
	cat /tmp/nw-down.log >&2
	failed=1
	return 1
}

nvmf_dmesg_mark
wire_up || { echo "nvmeof-wire: no NIC" >&2; exit 1; }
kiwi_load || exit 1
if [ $role = B ]; then
	nvmf_nullb_setup || { echo "nvmeof-wire: null_blk set-up failed" >&2; exit 1; }
	# written once, so that reads return stored data rather than the
	# zeros of never-written pages
	dd if=/dev/urandom of="$NVMF_BDEV" bs=1M count="$NVMF_SIZE_MB" \
		oflag=direct status=none || exit 1
fi
{
	echo "kernel $(uname -r)"
	echo "cpus $(nproc)"
	echo "cmdline $(cat /proc/cmdline)"
	echo "fio $(fio --version)"
	echo "nvme-cli $(nvme version | head -n 1)"
	echo "runtime $runtime"
	echo "ramp $ramp"
	echo "size_mb $NVMF_SIZE_MB"
} > "$dir/$role.meta"
wsync wire 900 || exit 1
ping -c 3 -W 10 "$them" > /dev/null || echo "nvmeof-wire: no ping to $them" >&2
for r in $(seq 1 "$runs"); do
	for c in $(bench_order "$r" $configs); do
		[ $gone = 0 ] || break
		t0=$SECONDS
		run_config "$r" $c
		echo "nvmeof-wire: boot $boot round $r $c: $((SECONDS - t0)) s"
		# a target left wedged (siw: nvmet_sq_destroy waiting for
		# ever in nvmet-wq after a lost keep-alive) fails every later
		# connection of the boot, NVMe/TCP's too: the next boot
		# starts afresh
		if [ $failed = 1 ]; then
			echo "nvmeof-wire: boot $boot ends after round $r $c failed"
			break 2
		fi
	done
done
# after a failure nvmet may be wedged (a configfs rmdir blocked for
# ever): unloading would block too, and the guest is thrown away anyway
if [ $failed = 0 ]; then
	[ $role = B ] && nvmf_nullb_teardown
	modprobe -r nvme-rdma nvme-tcp nvmet-rdma nvmet-tcp 2>/dev/null
	rmmod kiwi siw 2>/dev/null
fi
nvmf_dmesg_clean || echo "nvmeof-wire: kernel warnings in dmesg" >&2
wsync end 300
exit 0
fi

# ----------------------------------------------------------------- host side
for t in fio nvme; do
	command -v $t > /dev/null ||
		{ echo "nvmeof-wire.sh: $t missing (scripts/deps.sh)" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "nvmeof-wire.sh: needs 2 host CPUs" >&2; exit 1; }
ko=$("$root/tests/vm/kernel.sh" kiwi_ko) || exit 1
[ -f "$ko" ] || { echo "nvmeof-wire.sh: $ko missing (make module; for 6.12 tests/vm/build-kiwi.sh)" >&2; exit 1; }
bench_host_start nvmeof-wire
# the wire (bench-lib.sh): a macvtap pair with a real NIC's offloads, or
# KIWI_WB_WIRE=socket for QEMU's socket netdev
wire=${KIWI_WB_WIRE:-tap}
case $wire in tap|socket) ;; *) echo "nvmeof-wire.sh: KIWI_WB_WIRE is tap or socket" >&2; exit 2 ;; esac
out=${csv%.csv}
mkdir -p "$out"
# what the guests are and how they run: no debug options, one vCPU each,
# each on a host CPU of its own (perftest-wire.sh)
export KIWI_VM_SLUB_DEBUG=off KIWI_VM_PANIC_ON_WARN=0 KIWI_VM_CPUS=1
unset KIWI_KO KIWI_SIW_KO KIWI_VM_NET KIWI_VM_MAC KIWI_VM_PIN
{
	echo "# boots $boots"
	echo "# runs $runs"
	echo "# runtime $runtime"
	echo "# ramp $ramp"
	echo "# quick $quick"
	echo "# host cpu $(bench_cpu)"
	echo "# host cpus $(nproc)"
	echo "# kiwi $(bench_rev changes drivers)"
	echo "# start $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "# wire $wire"
	echo "# host load at start $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# other qemu guests at start $(pgrep -c -f qemu-system)"
} > "$out/meta"
while sleep 30; do echo "$(cut -d' ' -f1 /proc/loadavg) $(pgrep -c -f qemu-system)"; done > "$out/load" &
sampler=$!
trap 'kill $sampler ${pa:-} ${pb:-} ${hs:-} 2>/dev/null; wire_tap_down $$; exit 130' INT TERM HUP
# wire_guest ROLE HOSTCPU WIRE MAC: one guest of boot $b in $bd, its vCPU on
# HOSTCPU, its NIC on WIRE: a macvtap's device (tap) or the socket
# netdev's listen= or connect=
wire_guest() {
	local net=socket,$3 fd=/dev/null
	[ $wire = tap ] && net=tap,fd=7 fd=$3
	KIWI_VM_PIN_CPUS=$2 KIWI_VM_NET="$net" \
		KIWI_VM_MAC=52:54:00:4b:0c:$4 KIWI_NW_ROLE=$1 KIWI_NW_BOOT=$b \
		KIWI_BENCH_QUICK=$quick "$root/tests/vm/vm-run.sh" --timeout $tmo \
		--run-dir-file "$bd/$1.rundir" -- bash tests/bench/nvmeof-wire.sh \
		--runs "$runs" --runtime "$runtime" --ramp "$ramp" \
		--guest-dir "$bd" > "$bd/$1.out" 2> "$bd/$1.err" 7<> "$fd"
}

t_start=$SECONDS
# per configuration: set-up, connect and teardown (a minute or two under
# TCG) and three fio runs
tmo=$((runs * 3 * (3 * (runtime + ramp + 30) + 180) + 600))
for b in $(seq 1 "$boots"); do
	bd=$out/boot-$b
	mkdir -p "$bd"
	wire_start wire_guest 52:54:00:4b:0c || exit 1
	# the vCPU threads' CPU time, once vm-run.sh has pinned both
	end=$((SECONDS + 600))
	until [ -f "$(cat "$bd/A.rundir" 2>/dev/null)/pin" ] &&
		[ -f "$(cat "$bd/B.rundir" 2>/dev/null)/pin" ]; do
		kill -0 $pa 2>/dev/null && kill -0 $pb 2>/dev/null &&
			[ $SECONDS -lt $end ] || break
		sleep 0.2
	done
	python3 "$here/wire-hostcpu.py" "$bd/host.cpu" \
		A "$(awk '{ print $3; exit }' "$(cat "$bd/A.rundir")/pin")" \
		B "$(awk '{ print $3; exit }' "$(cat "$bd/B.rundir")/pin")" &
	hs=$!
	tail -n +1 -F --pid=$pa "$bd/A.out" 2>/dev/null | grep --line-buffered '^nvmeof-wire' &
	while kill -0 $pa 2>/dev/null && kill -0 $pb 2>/dev/null; do
		sleep 1
	done
	echo "one guest stopped" > "$bd/abort"
	wait $pa; ra=$?
	wait $pb; rb=$?
	kill $hs 2>/dev/null
	wait $hs 2>/dev/null
	for g in A B; do
		rd=$(cat "$bd/$g.rundir" 2>/dev/null)
		[ -n "$rd" ] && [ -f "$rd/pin" ] && sed "s/^/$g /" "$rd/pin" >> "$bd/pin"
	done
	[ $wire = tap ] && wire_tap_down $$ "$bd/wire.stats"
	echo "nvmeof-wire.sh: boot $b done at $((SECONDS - t_start)) s (vm-run A $ra, B $rb)"
	[ $ra = 0 ] && [ $rb = 0 ] || { echo "nvmeof-wire.sh: boot $b: see $bd/A.err, $bd/B.err" >&2; tail -n 20 "$bd/A.err" "$bd/B.err" >&2; }
done
kill $sampler 2>/dev/null
{
	echo "# end $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "# duration $(((SECONDS - t_start) / 60)) min"
	echo "# host load at end $(cut -d' ' -f1-3 /proc/loadavg)"
} >> "$out/meta"
rargs=()
[ "$doc" = 1 ] && rargs+=(--doc "$root/Documentation/benchmarks.md")
python3 "$here/nvmeof-wire-report.py" "${rargs[@]}" "$out"
exit
}
