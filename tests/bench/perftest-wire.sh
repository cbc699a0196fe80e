#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The verbs benchmark of record (`make bench`): two guests on one virtual
# wire, kiwi to kiwi, siw to siw, kiwi to siw and iperf3, paired round by
# round, over several boots.  A benchmark, not a test: it passes nothing.
#
#   tests/bench/perftest-wire.sh [--boots N] [--runs N] [--quick] [--no-doc]
#
# Per boot, two TCG guests of the same kernel (KIWI_KVER, 6.1 by default),
# one vCPU each, A's vCPU thread pinned to host CPU 0 and B's to host CPU
# 1, no slub_debug, no panic_on_warn; one virtio-net NIC each on a QEMU
# socket netdev (tests/vm/two-host.sh's wire): A 10.9.0.1 is the client,
# B 10.9.0.2 the server, each kernel with only its own device, so every
# byte crosses the wire and each side's work runs on its own host CPU, as
# on two machines.  Each round runs every configuration once, the order
# turning by one per round:
#   kiwi      kiwi to kiwi, mpa_crc=off
#   siw       siw to siw (tests/vm/build-siw.sh)
#   kiwi-siw  A kiwi (mpa_crc=off) to B siw: ib_write_bw at 64 KiB only
#   tcp       iperf3 with its default write size, and again with -Z
# perftest over rdma_cm (-R), a fresh port per run: ib_write_bw,
# ib_send_bw, ib_read_bw at 64 KiB and 1 MiB, ib_write_lat at 64 B; and
# the connection rate: tests/verbs/cm-cycle in kiwi and siw (connect,
# a message each way (the client's first), disconnect, one connection after the
# other), tcp-cycle's same steps over plain TCP in tcp.
#
# What is counted (tests/bench/wire-report.py): both guests sample their
# NIC's byte counters and /proc/stat every 0.1 s (wire-sampler.py).  A
# bandwidth is the receiver's: the bytes its NIC took in over the span in
# which data flowed (partial first and last samples left out; at least
# 1 s), scaled by the run's payload over all its received bytes (headers,
# setup).  perftest's own BW (the sender's clock) is kept beside it; iperf3's
# figure is its receiver-side one.  CPU time is both guests' busy time
# over that span: seconds per GiB, or microseconds per operation for
# latency.  Latency is perftest's t_typical (half the median round trip).
# A connection rate is the client's connections per second by its own
# clock, its CPU both vCPU threads' time over each guest's run.
# Message counts are chosen per run from the previous run's rate so each
# transfer lasts about 4 s (a first, shorter run calibrates).
#
# Default 3 boots of 3 rounds (9 paired rounds): about 40 minutes on a
# 2-CPU host with one other guest running (13-14 minutes a boot).
# --quick (KIWI_BENCH_QUICK=1): one boot, one round, 64 KiB and 64 B
# only, for developing the bench (2-6 minutes); its numbers mean nothing.
# Results: tests/bench/out/wire-<date>/ (both guests' rows and samples per
# boot), the report (wire-report.py: per-round ratios with a bootstrap
# 95 % interval) and, unless --no-doc or --quick, Documentation/
# benchmarks.md's table of record.
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
bench_parse_args perftest-wire.sh "runs quick" "${args[@]}"
[[ $boots =~ ^[1-9][0-9]*$ ]] || { echo "perftest-wire.sh: --boots wants a number" >&2; exit 2; }
if [ "$quick" = 1 ]; then
	boots=1 runs=1 doc=0
fi
# a subset, to chase one configuration (never a table of record):
# KIWI_WB_CONFIGS="kiwi", KIWI_WB_TESTS="write", KIWI_WB_SIZES="65536",
# KIWI_WB_LAT=0, KIWI_WB_CM=0 (no connection rate); and kiwi's A/B
# variants beside kiwi (variant_switches:
# KIWI_WB_CONFIGS="kiwi kiwi-inline kiwi-copy"), reported as ratios to kiwi
# KIWI_WB_SIW_DEBUG=1: siw's dynamic debug on, each guest's kernel log
# kept as ROLE.dmesg (siw's connect failures in cm-cycle, benchmarks.md)
[ -n "${KIWI_WB_CONFIGS:-}${KIWI_WB_TESTS:-}${KIWI_WB_SIZES:-}${KIWI_WB_LAT:-}${KIWI_WB_CM:-}" ] && doc=0

# ---------------------------------------------------------------- guest side
if [ -n "$guest_dir" ]; then
. "$root/tests/cases/lib/lib.sh"
. "$root/tests/cases/lib/nvmeof-lib.sh"
role=${KIWI_WB_ROLE:?}
boot=${KIWI_WB_BOOT:?}
dir=$guest_dir
case $role in
A) peer=B me=10.9.0.1 them=10.9.0.2 ;;
B) peer=A me=10.9.0.2 them=10.9.0.1 ;;
esac
gate_lib=$root/tests/verbs/build/libconnect-gate.so
dev=wb0
gone=0
if [ "$quick" = 1 ]; then
	bw_sizes="65536"
else
	bw_sizes="65536 1048576"
fi
bw_sizes=${KIWI_WB_SIZES:-$bw_sizes}
configs=${KIWI_WB_CONFIGS:-kiwi siw kiwi-siw tcp}
bw_tests=${KIWI_WB_TESTS:-write send read}

# seconds of transfer per run: long enough that the part between the
# first and the last samples is well over 1 s
want_s=4
rows=$dir/$role.runs
[ -e "$rows" ] || echo "boot,round,config,test,size,iters,t0,t1,value,status" > "$rows"

trap ': > "$dir/$role.exit"' EXIT

# wsync NAME: both guests got here (two-host-guest.sh's th_sync): 1 when
# the peer did not come in time, 2 when it is gone (then at once ever after)
wsync() {
	local end=$((SECONDS + ${2:-600}))
	[ $gone = 0 ] || return 2
	: > "$dir/$role.$1"
	while [ ! -e "$dir/$peer.$1" ]; do
		if [ -e "$dir/$peer.exit" ] || [ -e "$dir/abort" ]; then
			echo "perftest-wire: $peer is gone at $1" >&2
			gone=1
			return 2
		fi
		[ $SECONDS -lt $end ] || { echo "perftest-wire: no $peer at $1" >&2; return 1; }
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

# est KEY [VALUE]: the rate (MiB/s, or operations/s) the last run of KEY
# reached, shared by every boot of this run (the directory above the
# boot's), so a later boot needs no calibration
est() {
	if [ $# = 2 ]; then
		echo "$2" > "$dir/../est.$1"
	else
		cat "$dir/../est.$1" 2>/dev/null
	fi
}

# iters_for KEY SIZE LAT: messages for want_s seconds at KEY's last rate;
# without one, a calibration run of few messages
iters_for() {
	local e
	e=$(est "$1")
	if [ -z "$e" ]; then
		if [ "$3" = 1 ]; then echo 300; else echo $(((16777216 + $2 - 1) / $2)); fi
		return
	fi
	awk -v e="$e" -v s="$2" -v w="$want_s" -v lat="$3" 'BEGIN {
		n = lat ? e * w : e * 1048576 * w / s
		n = int(n); if (n < 20) n = 20; if (n > 200000) n = 200000; print n }'
}

port_seq=0

# mark NAME: now, on this guest's clock, also written to a file of the
# shared directory, whose modification time the host's clock gives:
# wire-report.py maps each run onto the host's samples of the vCPU
# threads' CPU time (wire-hostcpu.py) with it.
mark() {
	now=$EPOCHREALTIME
	echo "$now" > "$dir/$role.clk-$1"
	# TCP's counters at each end of a run: retransmits and timeouts
	awk '/^Tcp:/ { getline; print "RetransSegs " $13 }
	     /^TcpExt:/ { split($0, k); getline; for (i = 2; i <= NF; i++)
		if (k[i] == "TCPTimeouts") print k[i], $i }' /proc/net/snmp /proc/net/netstat \
		> "$dir/$role.tcp-$1" 2> /dev/null
}

# sampled_past T: the sampler has a sample later than T (+ one interval)
sampled_past() {
	awk -v t="$1" 'END { exit !($1 > t + 0.1) }' /tmp/wb-samples
}

# span COL T0 T1: of this guest's samples between T0 and T1, on counter
# COL (2 rx, 3 tx): "bytes seconds total" of the transfer's intervals
# strictly inside it and the counter's growth over the run, as
# wire-report.py counts them (ACTIVE there)
span() {
	wait_for 5 sampled_past "$3"
	awk -v c="$1" -v a="$2" -v b="$3" '
		$1 >= a - 0.1 && $1 <= b + 0.1 && (n == 0 || $1 - t[n - 1] >= 0.05) { t[n] = $1; v[n] = $c; n++ }
		END {
			if (n < 4) { print "0 0 0"; exit }
			pk = 0
			for (i = 0; i < n - 1; i++) {
				r[i] = (v[i + 1] - v[i]) / (t[i + 1] - t[i])
				if (r[i] > pk) pk = r[i]
			}
			# the first active interval to the last, pauses and all
			f = -1
			for (i = 0; i < n - 1; i++)
				if (pk > 0 && r[i] >= 0.25 * pk) { if (f < 0) f = i; l = i }
			if (f < 0 || l - f < 2) { print "0 0 " v[n - 1] - v[0]; exit }
			printf "%d %.3f %d\n", v[l] - v[f + 1], t[l] - t[f + 1], v[n - 1] - v[0]
		}' /tmp/wb-samples
}

# stall_dump ID: this guest's view of a run that did not end in time
# (both guests write one): the QPs with kiwi's engine state, the TCP
# sockets, kiwi's counters and debugfs, blocked tasks.
stall_dump() {
	{
		echo "== $role $1 stalled, $(date -u +%T)"
		rdma -dd res show qp
		rdma -dd res show cm_id
		ss -tnmie
		grep -H . /sys/class/infiniband/$dev/ports/1/hw_counters/* \
			/sys/kernel/debug/kiwi/* 2>/dev/null
		echo w > /proc/sysrq-trigger
		dmesg | tail -n 150
	} > "$dir/$role.stall-$1" 2>&1
	echo "perftest-wire: $role: $1 stalled: $dir/$role.stall-$1" >&2
}

# bounded SEC ID CMD...: CMD, stopped after SEC s, its stall dumped first
bounded() {
	local sec=$1 id=$2 pid end
	shift 2
	"$@" &
	pid=$!
	end=$((SECONDS + sec))
	while kill -0 $pid 2>/dev/null; do
		if [ $SECONDS -ge $end ]; then
			stall_dump "$id"
			kill $pid
			break
		fi
		sleep 1
	done
	wait $pid
}

# perf ROUND CONFIG TOOL SIZE: one perftest run, B serving, A the client;
# both write a row (their own clock's start and end of the run).  The
# message count comes from the last rate of this configuration, test and
# size; A checks the run's transfer on its own NIC, and a run whose
# transfer lasted under 1.5 s (the first, calibrating run, or a rate that
# changed) is run again, longer, up to three times.
perf() {
	local r=$1 c=$2 tool=$3 size=$4 test key iters id port rc t0 t1 v st ta
	local lat=0 gate col try=1 sp least=0
	test=${tool#ib_}
	case $tool in *_lat) lat=1 ;; esac
	# A's counter that carries the data
	case $test in read_bw|*_lat) col=2 ;; *) col=3 ;; esac
	key=$c-$test-$size
	id=b$boot-r$r-$key
	port=$((20000 + (boot * 1000 + port_seq) % 10000))
	port_seq=$((port_seq + 1))
	while :; do
		gate=$dir/gate-$id
		if [ $role = A ]; then
			iters=$(iters_for "$key" "$size" $lat)
			[ "$iters" -ge $least ] || iters=$least
			put "$id-iters" "$iters"
			wsync "$id-plan" || return
		else
			wsync "$id-plan" || return
			iters=$(get "$id-iters")
		fi
		if [ $role = B ]; then
			rm -f "$gate"
			mark "$id-0"; t0=$now
			bounded 300 "$id" env LD_PRELOAD="$gate_lib" \
				KIWI_LISTEN_GATE="$gate" \
				KIWI_LISTEN_GATE_SKIP=1 "$tool" -R -F -d $dev \
				-p $port -s "$size" -n "$iters" > /tmp/wb-srv.log 2>&1 &
			local spid=$!
			wait_alive 60 $spid tcp_listening "" $port
			wsync "$id-listen"
			wait $spid
			rc=$?
			mark "$id-1"; t1=$now
			cp /tmp/wb-cyc-srv.log "$dir/$role.$id.log"
			wsync "$id-done"
			[ $rc = 0 ] && st=ok || { st=fail; tail -n 5 /tmp/wb-srv.log >&2; }
			[ "$(get "$id-again")" = 1 ] && st=cal
			echo "$boot,$r,$c,$test,$size,$iters,$t0,$t1,,$st" >> "$rows"
			[ $st = cal ] || return 0
		else
			wsync "$id-listen"
			mark "$id-0"; t0=$now
			bounded 300 "$id" env LD_PRELOAD="$gate_lib" \
				KIWI_CONNECT_GATE="$gate" KIWI_CONNECT_GATE_SKIP=1 \
				"$tool" -R -F -d $dev -p $port -s "$size" \
				-n "$iters" "$them" > /tmp/wb-cli.log 2>&1
			rc=$?
			mark "$id-1"; t1=$now
			v=$(awk -v s="$size" -v f=$((lat ? 5 : 4)) '$1 == s && NF >= f { print $f; exit }' /tmp/wb-cli.log)
			st=ok
			[ $rc = 0 ] || { st=fail; tail -n 8 /tmp/wb-cli.log >&2; }
			[[ $v =~ ^[0-9.]+$ ]] || v=
			if [ $rc = 0 ]; then
				sp=$(span $col "$t0" "$t1")
				# the rate of this transfer (payload MiB/s, or
				# operations/s) sizes the next run of its kind; for
				# latency perftest's mean round trip (t_avg) says it
				set -- $sp
				ta=$(awk -v s="$size" '$1 == s && NF >= 6 { print $6; exit }' /tmp/wb-cli.log)
				if [ $lat = 1 ] && awk -v a="${ta:-0}" 'BEGIN { exit !(a > 0) }'; then
					est "$key" "$(awk -v a="$ta" 'BEGIN { printf "%.1f\n", 1e6 / (2 * a) }')"
				elif awk -v d="$2" -v t="$3" 'BEGIN { exit !(d > 0 && t > 0) }'; then
					est "$key" "$(awk -v b=$1 -v d=$2 -v t=$3 -v n=$iters -v s=$size -v lat=$lat 'BEGIN {
						p = n * b / t / d; printf "%.1f\n", lat ? p : p * s / 1048576 }')"
				else
					# too short to see: ten times as many
					est "$key" "$(awk -v n=$iters -v s=$size -v lat=$lat -v w=$want_s 'BEGIN {
						printf "%.1f\n", lat ? n * 10 / w : n * 10 * s / 1048576 / w }')"
				fi
				# too short: again, with at least twice the messages
				awk -v d="$2" 'BEGIN { exit !(d < 1.5) }' && [ $try -lt 3 ] &&
					st=cal least=$((iters * 2))
			fi
			[ $st = cal ] && put "$id-again" 1 || put "$id-again" 0
			wsync "$id-done"
			echo "$boot,$r,$c,$test,$size,$iters,$t0,$t1,$v,$st" >> "$rows"
			[ $st = cal ] || return 0
		fi
		# again, under rendezvous names of its own
		try=$((try + 1))
		id=b$boot-r$r-$key-$try
		port=$((port + 5000))
	done
}

# cycles ROUND CONFIG: the connection rate, B serving, A connecting and
# disconnecting one connection after the other: cm-cycle over rdma_cm
# (a message each way, the client's first) for kiwi and siw, tcp-cycle
# (connect, a byte each way, close) for plain TCP; the figure is A's
# connections per second.  The count aims at want_s seconds at the last
# rate; without one, a first run of 20 calibrates.
# peer_done_or_gone NAME PID: the peer reached NAME, or process PID ended
peer_done_or_gone() {
	[ -e "$dir/$peer.$1" ] || ! kill -0 "$2" 2> /dev/null
}

cycles() {
	local r=$1 c=$2 key=$2-cm_cycle id port n prog rc t0 t1 v st try=1 spid
	local calib=0
	# the client speaks first and the server answers (cm-cycle.c, "ping")
	local mode=ping
	prog=$root/tests/verbs/build/cm-cycle
	[ $c = tcp ] && prog=$root/tests/verbs/build/tcp-cycle mode=
	while :; do
		id=b$boot-r$r-$key-$try
		port=$((20000 + (boot * 1000 + port_seq) % 10000))
		port_seq=$((port_seq + 1))
		if [ $role = A ]; then
			# operations for want_s seconds at the last rate
			# (iters_for), or a calibration of 20 without one
			calib=1 n=20
			[ -n "$(est "$key")" ] && calib=0 n=$(iters_for "$key" 0 1)
			put "$id-iters" "$n"
			wsync "$id-plan" || return
		else
			wsync "$id-plan" || return
			n=$(get "$id-iters")
		fi
		if [ $role = B ]; then
			mark "$id-0"; t0=$now
			bounded 300 "$id" "$prog" server $me $port "$n" $mode \
				> /tmp/wb-cyc-srv.log 2>&1 &
			spid=$!
			wait_alive 60 $spid tcp_listening "" $port
			wsync "$id-listen"
			# a client that gave up leaves the server waiting for
			# connections that never come: stop it 10 s after A is
			# done (it has all it will get by then)
			wait_for 600 peer_done_or_gone "$id-done" $spid
			wait_for 10 pid_gone $spid || { pkill -P $spid; kill $spid; }
			wait $spid
			rc=$?
			mark "$id-1"; t1=$now
			cp /tmp/wb-cyc-srv.log "$dir/$role.$id.log"
			wsync "$id-done"
			[ $rc = 0 ] && st=ok || { st=fail; tail -n 5 /tmp/wb-cyc-srv.log >&2; }
			[ "$(get "$id-again")" = 1 ] && st=cal
			echo "$boot,$r,$c,cm_cycle,0,$n,$t0,$t1,,$st" >> "$rows"
		else
			wsync "$id-listen"
			mark "$id-0"; t0=$now
			bounded 300 "$id" "$prog" client $them $port "$n" $mode \
				> /tmp/wb-cyc-cli.log 2>&1
			rc=$?
			mark "$id-1"; t1=$now
			cp /tmp/wb-cyc-cli.log "$dir/$role.$id.log"
			v=$(awk '/^client: cycles/ && $5 == 0 && $7 > 0 {
				printf "%.2f\n", $3 * 1000 / $7 }' /tmp/wb-cyc-cli.log)
			st=ok
			[ $rc = 0 ] && [ -n "$v" ] || { st=fail v=; tail -n 5 /tmp/wb-cyc-cli.log >&2; }
			[ -n "$v" ] && est "$key" "$v"
			[ $st = ok ] && [ $calib = 1 ] && st=cal
			[ $st = cal ] && put "$id-again" 1 || put "$id-again" 0
			wsync "$id-done"
			echo "$boot,$r,$c,cm_cycle,0,$n,$t0,$t1,$v,$st" >> "$rows"
		fi
		[ $st = cal ] || return 0
		try=$((try + 1))
	done
}

# iperf ROUND NAME ARGS...: iperf3 for 3 s, B serving, A sending; its
# receiver-side figure (MiB/s), and the payload both ends counted.
iperf() {
	local r=$1 name=$2 id rc t0 t1 v st=ok
	shift 2
	id=b$boot-r$r-$name
	if [ $role = B ]; then
		timeout 60 iperf3 -s -1 -B $me -p 5201 > /tmp/wb-iperf-srv.log 2>&1 &
		local spid=$!
		wait_alive 30 $spid tcp_listening "" 5201
		mark "$id-0"; t0=$now
		wsync "$id-listen"
		wait $spid || st=fail
		mark "$id-1"; t1=$now
		wsync "$id-done"
		echo "$boot,$r,tcp,$name,0,,$t0,$t1,,$st" >> "$rows"
	else
		wsync "$id-listen"
		mark "$id-0"; t0=$now
		timeout 60 iperf3 -c $them -p 5201 -t 3 -J "$@" > /tmp/wb-iperf.json 2> /tmp/wb-iperf.err
		rc=$?
		mark "$id-1"; t1=$now
		wsync "$id-done"
		# receiver-side rate, and the payload sent and received
		v=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["end"]
print("%.2f:%d:%d" % (j["sum_received"]["bits_per_second"] / 8 / 1048576,
                      j["sum_sent"]["bytes"], j["sum_received"]["bytes"]))
' /tmp/wb-iperf.json 2>/dev/null) || { st=fail; cat /tmp/wb-iperf.err >&2; }
		[ $rc = 0 ] || st=fail
		echo "$boot,$r,tcp,$name,0,${v#*:},$t0,$t1,${v%%:*},$st" >> "$rows"
	fi
}

# A/B variants of kiwi (KIWI_WB_CONFIGS="kiwi kiwi-copy"; never a run
# of record): each names the data-path switches it sets on both sides,
# SWITCH=VALUE, restored when the configuration ends.
variant_switches() {
	case $1 in
	kiwi-inline) echo rx_defer=0 rresp_defer=0 ;;
	kiwi-copy) echo tx_zcopy=N ;;
	esac
}

# a switch's file: debugfs, or a module parameter where it still is one
switch_file() {
	local f
	for f in /sys/kernel/debug/kiwi/$1 /sys/module/kiwi/parameters/$1; do
		[ -e "$f" ] && { echo "$f"; return 0; }
	done
	echo "perftest-wire: no switch $1" >&2
	return 1
}

restore=()

# config_up CONFIG: this side's provider and device for CONFIG
config_up() {
	local prov s f
	case $1:$role in
	kiwi:*|kiwi-siw:A|kiwi-*:*) prov=kiwi ;;
	siw:*|kiwi-siw:B) prov=siw ;;
	esac
	nvmf_link_add $dev $prov "$nic" "$([ $prov = kiwi ] && echo off)" ||
		return
	[ "${KIWI_WB_SIW_DEBUG:-0}" = 1 ] && echo 'module siw +p' > /sys/kernel/debug/dynamic_debug/control
	for s in $(variant_switches $1); do
		f=$(switch_file ${s%%=*}) || return
		restore+=("$f=$(cat "$f")")
		echo ${s#*=} > "$f" || return
	done
}

config_down() {
	local s
	for s in "${restore[@]}"; do
		echo "${s#*=}" > "${s%%=*}"
	done
	restore=()
	[ -e /sys/class/infiniband/$dev ] || return 0
	rdma link del $dev && wait_for 10 test ! -e /sys/class/infiniband/$dev
}

run_config() {
	local r=$1 c=$2 s t
	if [ $c = tcp ]; then
		iperf "$r" iperf3
		iperf "$r" iperf3-Z -Z
		[ "${KIWI_WB_CM:-1}" = 0 ] || cycles "$r" tcp
		return
	fi
	config_up $c > /tmp/wb-up.log 2>&1 || { echo "perftest-wire: $c: set-up failed" >&2; cat /tmp/wb-up.log >&2; }
	wsync "b$boot-r$r-$c-up" || return
	if [ $c = kiwi-siw ]; then
		perf "$r" $c ib_write_bw 65536
	else
		for s in $bw_sizes; do
			for t in $bw_tests; do
				perf "$r" $c ib_${t}_bw "$s"
			done
		done
		[ "${KIWI_WB_LAT:-1}" = 0 ] || perf "$r" $c ib_write_lat 64
		case $c in kiwi|siw) [ "${KIWI_WB_CM:-1}" = 0 ] || cycles "$r" $c ;; esac
	fi
	wsync "b$boot-r$r-$c-end"
	config_down || echo "perftest-wire: $c: $dev did not go away" >&2
}

nvmf_dmesg_mark
kiwi_provider_env
ulimit -l unlimited
wire_up || { echo "perftest-wire: no NIC" >&2; exit 1; }
# only siw's provider besides kiwi's (RDMAV_DRIVERS): libibverbs dlopens
# every one named in /etc/libibverbs.d at each start, a second per process
# over the guest's 9p root (perftest.sh)
if [ -f /etc/libibverbs.d/siw.driver ]; then
	cp /etc/libibverbs.d/siw.driver /tmp/wb-siw.driver &&
	mount -t tmpfs -o size=1m wb-verbs /etc/libibverbs.d &&
	cp /tmp/wb-siw.driver /etc/libibverbs.d/siw.driver
fi
kiwi_load || exit 1
python3 "$root/tests/bench/wire-sampler.py" "$nic" 0.1 /tmp/wb-samples &
sampler=$!
{
	echo "kernel $(uname -r)"
	echo "cpus $(nproc)"
	echo "cmdline $(cat /proc/cmdline)"
	echo "perftest $(ib_write_bw --version 2>&1 | sed -n 's/^Version: //p')"
	echo "iperf3 $(iperf3 --version | head -n 1)"
	echo "user_hz $(getconf CLK_TCK)"
} > "$dir/$role.meta"
wsync wire 900 || exit 1
ping -c 3 -W 10 "$them" > /dev/null || echo "perftest-wire: no ping to $them" >&2
for r in $(seq 1 "$runs"); do
	for c in $(bench_order "$r" $configs); do
		[ $gone = 0 ] || break
		t0=$SECONDS
		run_config "$r" $c
		echo "perftest-wire: boot $boot round $r $c: $((SECONDS - t0)) s"
	done
	cp /tmp/wb-samples "$dir/$role.samples"
done
kill $sampler
cp /tmp/wb-samples "$dir/$role.samples"
# the kernel's network counters since boot (retransmits) and the NIC's
# segmentation limits, for the record
nstat -asz > "$dir/$role.nstat" 2>&1
ip -d -s link show "$nic" > "$dir/$role.link" 2>&1
rmmod kiwi siw 2>/dev/null
[ "${KIWI_WB_SIW_DEBUG:-0}" = 1 ] && dmesg > "$dir/$role.dmesg"
nvmf_dmesg_clean || echo "perftest-wire: kernel warnings in dmesg" >&2
wsync end 300
exit 0
fi

# ----------------------------------------------------------------- host side
[ -e "$root/userspace/build/libkiwi-rdmav34.so" ] ||
	{ echo "perftest-wire.sh: build the provider first (make provider)" >&2; exit 1; }
[ -f "$root/tests/verbs/build/libconnect-gate.so" ] ||
	{ echo "perftest-wire.sh: build tests/verbs first (make -C tests/verbs)" >&2; exit 1; }
for t in ib_write_bw iperf3; do
	command -v $t > /dev/null ||
		{ echo "perftest-wire.sh: $t missing (scripts/deps.sh)" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "perftest-wire.sh: needs 2 host CPUs" >&2; exit 1; }
bench_host_start wire
wire=${KIWI_WB_WIRE:-tap}
case $wire in tap|socket) ;; *) echo "perftest-wire.sh: KIWI_WB_WIRE is tap or socket" >&2; exit 2 ;; esac
out=${csv%.csv}
mkdir -p "$out"
# what the guests are and how they run: no debug options, one vCPU each,
# each on a host CPU of its own
export KIWI_VM_SLUB_DEBUG=off KIWI_VM_PANIC_ON_WARN=0 KIWI_VM_CPUS=1
unset KIWI_KO KIWI_SIW_KO KIWI_VM_NET KIWI_VM_MAC KIWI_VM_PIN
{
	echo "# boots $boots"
	echo "# runs $runs"
	echo "# quick $quick"
	echo "# host cpu $(bench_cpu)"
	echo "# host cpus $(nproc)"
	echo "# kiwi $(bench_rev changes drivers userspace)"
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
# netdev's listen= or connect= (bench-lib.sh, wire_tap_up)
wire_guest() {
	local net=socket,$3 fd=/dev/null
	[ $wire = tap ] && net=tap,fd=7 fd=$3
	KIWI_VM_PIN_CPUS=$2 KIWI_VM_NET="$net" \
		KIWI_VM_MAC=52:54:00:4b:0b:$4 KIWI_WB_ROLE=$1 KIWI_WB_BOOT=$b \
		KIWI_BENCH_QUICK=$quick "$root/tests/vm/vm-run.sh" --timeout $tmo \
		--run-dir-file "$bd/$1.rundir" -- bash tests/bench/perftest-wire.sh \
		--runs "$runs" --guest-dir "$bd" > "$bd/$1.out" 2> "$bd/$1.err" \
		7<> "$fd"
}

t_start=$SECONDS
tmo=$((runs * 900 + 600))
[ "$quick" = 1 ] && tmo=1200
for b in $(seq 1 "$boots"); do
	bd=$out/boot-$b
	mkdir -p "$bd"
	wire_start wire_guest 52:54:00:4b:0b || exit 1
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
	tail -n +1 -F --pid=$pa "$bd/A.out" 2>/dev/null | grep --line-buffered '^perftest-wire' &
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
	echo "perftest-wire.sh: boot $b done at $((SECONDS - t_start)) s (vm-run A $ra, B $rb)"
	[ $ra = 0 ] && [ $rb = 0 ] || { echo "perftest-wire.sh: boot $b: see $bd/A.err, $bd/B.err" >&2; tail -n 20 "$bd/A.err" "$bd/B.err" >&2; }
done
kill $sampler 2>/dev/null
{
	echo "# end $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "# duration $(((SECONDS - t_start) / 60)) min"
	echo "# host load at end $(cut -d' ' -f1-3 /proc/loadavg)"
} >> "$out/meta"
rargs=()
[ "$doc" = 1 ] && rargs+=(--doc "$root/Documentation/benchmarks.md")
python3 "$here/wire-report.py" "${rargs[@]}" "$out"
exit
}
