# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# What the benchmarks (nvmeof.sh, storage.sh, perftest.sh) share: their
# options, the host side's set-up and its check of the VM's results, the
# revision the results go with, and fio's figures inside the guest.
# Sourced; the caller has set root (the work tree) and here (tests/bench).

# The defaults of the options below: 5 rounds, fio runs of 10 s after a
# 2 s ramp, the results written into Documentation/benchmarks.md.
runs=5
runtime=10
# The guest's vCPU threads pinned, one host CPU each (tests/vm/vm-run.sh):
# unpinned, spells in which one vCPU runs everything at two thirds of its
# speed were several times more frequent (Documentation/benchmarks.md).
# KIWI_VM_PIN=0 for the old way.
export KIWI_VM_PIN=${KIWI_VM_PIN:-1}
# Measured without debug options: slub_debug slows every allocation (and
# not all paths alike), panic_on_warn would end a bench on a warning that
# vm-run.sh reports anyway.  KIWI_VM_SLUB_DEBUG=FZPU KIWI_VM_PANIC_ON_WARN=1
# to measure with them.
export KIWI_VM_SLUB_DEBUG=${KIWI_VM_SLUB_DEBUG:-off}
export KIWI_VM_PANIC_ON_WARN=${KIWI_VM_PANIC_ON_WARN:-0}
ramp=2
quick=0
doc=1
guest=0
csv=

# bench_order ROUND ITEMS...: ITEMS rotated left by ROUND - 1, so that
# each round starts with the next configuration and a drift in the host's
# load hits all of them alike.
bench_order() {
	local r=$1 n i out=
	shift
	n=$#
	for i in $(seq 0 $((n - 1))); do
		out="$out ${@:$(((r - 1 + i) % n + 1)):1}"
	done
	echo $out
}

# bench_parse_args NAME OPTIONS ARGS...: the options of benchmark NAME:
# those of OPTIONS (from --runs N, --lat-runs N, --runtime SEC, --ramp
# SEC, --quick) and always --no-doc, --guest CSV (the script's own run
# inside the VM) and -h (the script's header comment).  Sets runs,
# lat_runs, runtime, ramp, quick, doc (0 for --no-doc), guest (1 for
# --guest) and csv.
bench_parse_args() {
	local name=$1 opts=" $2 " v
	shift 2
	while [ $# -gt 0 ]; do
		case $1 in
		--runs|--lat-runs|--runtime|--ramp)
			[[ $opts == *" ${1#--} "* ]] || break
			[[ ${2:-} =~ ^[0-9]+$ ]] ||
				{ echo "$name: $1 wants a number" >&2; exit 2; }
			v=${1#--}
			printf -v "${v//-/_}" '%s' "$2"
			shift ;;
		--quick)
			[[ $opts == *" quick "* ]] || break
			quick=1 ;;
		--no-doc) doc=0 ;;
		--guest) guest=1; csv=$2; shift ;;
		-h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2' "$0"; exit 0 ;;
		*) break ;;
		esac
		shift
	done
	[ $# = 0 ] || { echo "$name: unknown argument $1" >&2; exit 2; }
}

# bench_host_start NAME: on the host, before the VM: kiwi.ko and the
# reference siw.ko are built; csv (tests/bench/out/NAME-<date>.csv, with
# its .meta beside it) and stamp are set for this run.
bench_host_start() {
	[ -f "$root/kiwi.ko" ] ||
		{ echo "${0##*/}: build kiwi.ko first (make module)" >&2; exit 1; }
	"$root/tests/vm/build-siw.sh" || exit 1
	mkdir -p "$here/out"
	stamp=$(date -u +%Y%m%d-%H%M%S)
	csv=$here/out/$1-$stamp.csv
	rm -f "$csv" "$csv.meta"
}

# bench_vm_done NAME STATUS: the VM (vm-run.sh's exit status STATUS) left
# results in csv; a non-zero status with results is only a warning.
bench_vm_done() {
	[ -s "$csv" ] ||
		{ echo "$1: no results (vm-run status $2)" >&2; exit 1; }
	[ "$2" = 0 ] || echo "$1: warning: vm-run exited with status $2" >&2
}

# bench_cpu: the host's CPU model.
bench_cpu() {
	sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1
}

# bench_rev WHAT PATH...: the revision the results go with, "with
# uncommitted WHAT" when PATHs differ from it, and when kiwi.ko was built.
bench_rev() {
	local what=$1
	shift
	echo "$(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff \
		--quiet HEAD -- "$@" || echo " with uncommitted $what"), kiwi.ko built $(date -u -r "$root/kiwi.ko" '+%H:%M UTC')"
}

# bench_fio NAME FILE RW BS DEPTH SIZE_MB: in the guest, one fio job with
# the page cache bypassed, $runtime s after $ramp s; prints "IOPS MiB/s"
# of its read or (RW write) write side, fails if fio or the job did.
bench_fio() {
	local rw=$3 side=read
	[ "$rw" = write ] && side=write
	fio --name="$1" --filename="$2" --direct=1 --ioengine=libaio \
		--rw="$rw" --bs="$4" --iodepth="$5" --numjobs=1 \
		--time_based --runtime="$runtime" --ramp_time="$ramp" \
		--size="$6"M --output-format=json \
		--output=/tmp/bench-fio.json > /dev/null 2>&1 || return 1
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
if j.get("error"):
	sys.exit(1)
r = j[sys.argv[2]]
print("%.1f %.2f" % (r["iops"], r["bw_bytes"] / 1048576))
' /tmp/bench-fio.json "$side"
}

# bench_fio_csv FIELDS UNIT NAME FILE RW BS DEPTH SIZE_MB: bench_fio, its
# IOPS (UNIT IOPS or iops) or MiB/s appended to csv as the row
# "FIELDS,NAME,VALUE,UNIT", VALUE "fail" if the job failed.
bench_fio_csv() {
	local fields=$1 unit=$2 name=$3 v
	shift 2
	if v=$(bench_fio "$@"); then
		set -- $v
		case $unit in
		IOPS|iops) v=$1 ;;
		*) v=$2 ;;
		esac
	else
		v=fail
	fi
	echo "$fields,$name,$v,$unit" >> "$csv"
}

# The wire between two bench guests (KIWI_WB_WIRE).  "tap", the default:
# a veth pair on the host, each end under a macvtap in passthru mode that
# one guest's QEMU opens with its vnet header, so virtio-net offers
# checksum offload, scatter-gather and TSO/GRO-sized frames both ways, as
# a real NIC does; nothing else is on it (no bridge, no address, no IPv6).
# "socket": QEMU's socket netdev (two-host.sh's wire), which has no vnet
# header and so no offloads: each guest checksums every segment in
# software and, without scatter-gather, copies paged data into linear
# frames before the NIC sees it.
#
# wire_tap_up TAG MAC_A MAC_B: makes the pair; sets wire_dev_a and
# wire_dev_b to the macvtaps' character devices.
wire_tap_up() {
	local t=$1 g mac idx dev
	ip link add "kwv${t}a" type veth peer name "kwv${t}b" || return 1
	for g in a b; do
		[ $g = a ] && mac=$2 || mac=$3
		sysctl -qw "net.ipv6.conf.kwv$t$g.disable_ipv6=1"
		ip link add link "kwv$t$g" name "kwm$t$g" address "$mac" \
			type macvtap mode passthru || return 1
		sysctl -qw "net.ipv6.conf.kwm$t$g.disable_ipv6=1"
		# a slow guest's QEMU reads late: a queue to absorb a burst
		ip link set "kwm$t$g" txqueuelen 10000 &&
			ip link set "kwv$t$g" up && ip link set "kwm$t$g" up || return 1
		idx=$(cat "/sys/class/net/kwm$t$g/ifindex")
		dev=/dev/tap$idx
		# without udev, the node from the macvtap's own major:minor
		[ -c "$dev" ] || mknod "$dev" c $(tr ':' ' ' \
			< "/sys/class/net/kwm$t$g/macvtap/tap$idx/dev") || return 1
		eval "wire_dev_$g=\$dev"
	done
}

# wire_tap_down TAG [FILE]: removes the pair, first writing its devices'
# counters (drops) to FILE
wire_tap_down() {
	local d
	if [ -n "${2:-}" ]; then
		for d in "kwv${1}a" "kwv${1}b" "kwm${1}a" "kwm${1}b"; do
			ip -s link show "$d"
		done > "$2" 2>&1
	fi
	ip link del "kwm${1}a" 2> /dev/null
	ip link del "kwm${1}b" 2> /dev/null
	ip link del "kwv${1}a" 2> /dev/null
}

# wire_start GUEST MAC_PREFIX: both guests of a boot on the wire $wire
# (tap or socket), started with GUEST ROLE HOSTCPU WIRE MAC (WIRE: the
# macvtap's device, or the socket netdev's listen=/connect=); sets pa, pb
wire_start() {
	local port end
	if [ "$wire" = tap ]; then
		wire_tap_down $$
		wire_tap_up $$ "$2:01" "$2:02" || {
			echo "${0##*/}: no macvtap wire (KIWI_WB_WIRE=socket runs without)" >&2
			wire_tap_down $$
			return 1
		}
		$1 A 0 "$wire_dev_a" 01 &
		pa=$!
		$1 B 1 "$wire_dev_b" 02 &
		pb=$!
		return 0
	fi
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	$1 A 0 "listen=127.0.0.1:$port" 01 &
	pa=$!
	# B connects once A's QEMU listens
	end=$((SECONDS + 600))
	while ! ss -Htln "sport = :$port" | grep -q . && kill -0 $pa 2>/dev/null &&
		[ $SECONDS -lt $end ]; do
		sleep 0.2
	done
	$1 B 1 "connect=127.0.0.1:$port" 02 &
	pb=$!
}
