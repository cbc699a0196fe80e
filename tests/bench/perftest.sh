#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Verbs benchmark (`make bench`): perftest kiwi to kiwi and siw to siw, each
# with MPA CRC off and on, against plain TCP (iperf3, sockperf) on the same
# veth pair.  A benchmark, not a test: it passes or fails nothing.
#
# One VM boot.  veth0 198.18.0.1 (init_net, client) <-> veth1 198.18.0.2
# (netns "kb", server), so every byte crosses the veth.  Each round runs
# every configuration once, in an order that turns round by round so a
# drift in the host's load hits all alike:
#   kiwi      kiwi to kiwi, mpa_crc=off on both devices
#   kiwi-crc  kiwi to kiwi, mpa_crc=required on both devices
#   siw       Debian's siw to siw (no CRC: 6.1 siw only mirrors a request)
#   siw-crc   CRC-asking siw (tests/bench/build-siw-crc.sh) on both ends
#   tcp       iperf3 (bandwidth, -l SIZE) and sockperf ping-pong (latency);
#             iperf3 again with client and server pinned to one vCPU
#             (tcp_bw_1cpu), where kiwi's inline receive path puts both
#             ends' work
#   kiwi-inline  kiwi with rx_defer=0 and rresp_defer=0 (every arrival
#             placed in the softirq, every Read answered from the CPU
#             its Request came on): the A/B of the receive deferral,
#             bandwidth only
#   kiwi-deferN  kiwi with rx_defer=N, for choosing the default (only
#             through KIWI_BENCH_CONFIGS; not in the report's tables)
#   kiwi-rrespN  kiwi with rresp_defer=N, the same way
#   kiwi-fpduN  kiwi with mpa_fpdu_max=N on both devices (FPDUs of up
#             to N bytes; 0: one MSS), the same way
#   kiwi-dbwrite  kiwi with the provider ringing the SQ doorbell by
#             the legacy POST_SEND command (tests/verbs/build/
#             libdb-legacy.so), the A/B of the doorbell method, the same way
#   NAME-rps  any of these with receive packet steering over all vCPUs
#             on both veths (rps_cpus), the same way
# Per configuration: ib_write_bw, ib_send_bw, ib_read_bw at the bandwidth
# sizes, ib_write_bw -q 8 (write_bw_q8: eight QPs) at 64 KiB and 1 MiB,
# and ib_write_lat at the latency sizes (perftest -R, rdma_cm, -n
# iterations; -D reports nothing useful under TCG).  Bandwidth is
# perftest's "BW average" in MiB/s, latency its t_typical (the median
# one-way time, half a round trip) in microseconds, as sockperf's median.
# A run whose client printed perftest's clock warning ("Correlation
# coefficient r^2 ... < 0.9": its calibration of the cycle counter failed
# under TCG and it divided by a frequency of 0) is recorded as "clock",
# not as a figure; any other 0 is a failure.
#
# Output: every run in tests/bench/out/perftest-<date>.csv, the medians
# and ratios as a table (tests/bench/perftest-report.py), a PNG plot
# (gnuplot), the summary in Documentation/benchmarks.md and the plot as
# Documentation/bench-perftest.png (not with --no-doc or --quick).
#
# Usage (on the host, after `make module provider`):
#   tests/bench/perftest.sh [--runs N] [--lat-runs M] [--quick] [--no-doc]
# Default 5 rounds, aimed at 30-40 minutes on a quiet host (a round of a
# smaller matrix took 15 minutes at load 17).  Rounds N+1 to M (default
# 15) measure only the latency target's size, ib_write_lat and sockperf
# at 64 B, in every configuration that has them: siw's own spread there
# is as wide as the gap the target asks for, so its median takes more
# rounds than the bandwidth's (a few minutes more).  --quick (or
# KIWI_BENCH_QUICK=1): 2 rounds at 64 KiB / 64 B only, a few minutes.
# The body is one compound command, read whole before it runs, so that
# editing this file cannot change a run that is under way.
{
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

. "$here/bench-lib.sh"
quick=${KIWI_BENCH_QUICK:-0}
lat_runs=15
bench_parse_args perftest.sh "runs lat-runs quick" "$@"

# Sizes per test.  Every perftest run costs seconds of process start and
# connection setup under TCG, whatever its size, so the matrix is what
# fits the time: ib_write_bw at five sizes, Send and Read at three.
if [ "$quick" = 1 ]; then
	write_sizes="65536"
	sr_sizes="65536"
	lat_sizes="64 65536"
	q8_sizes="65536"
	[ "$runs" = 5 ] && runs=2
	lat_runs=$runs
	doc=0
else
	write_sizes="4096 16384 65536 262144 1048576"
	sr_sizes="4096 65536 1048576"
	lat_sizes="64 1024 4096 65536"
	q8_sizes="65536 1048576"
fi
configs="kiwi siw tcp kiwi-crc siw-crc kiwi-inline"
rlat_sizes=
bw_bytes=16777216
# Other sizes (ib_write_bw and iperf3; ib_send_bw and ib_read_bw;
# ib_write_bw -q 8; ib_write_lat and sockperf), fewer configurations, another volume per
# bandwidth run: for experiments, or a smaller matrix on a loaded host.
# The documentation is then left alone (perftest-report.py --doc can
# still record such a run, saying so).
# KIWI_BENCH_RLAT_SIZES adds ib_read_lat at those sizes (none by default).
# A size list set but empty leaves those tests out (KIWI_BENCH_WRITE_SIZES=
# KIWI_BENCH_SR_SIZES= KIWI_BENCH_Q8_SIZES= KIWI_BENCH_LAT_SIZES=64: many
# rounds of latency alone).
if [ -n "${KIWI_BENCH_WRITE_SIZES+x}${KIWI_BENCH_SR_SIZES+x}${KIWI_BENCH_LAT_SIZES+x}${KIWI_BENCH_Q8_SIZES+x}${KIWI_BENCH_CONFIGS:-}${KIWI_BENCH_BW_BYTES:-}${KIWI_BENCH_RLAT_SIZES:-}" ]; then
	write_sizes=${KIWI_BENCH_WRITE_SIZES-$write_sizes}
	sr_sizes=${KIWI_BENCH_SR_SIZES-$sr_sizes}
	lat_sizes=${KIWI_BENCH_LAT_SIZES-$lat_sizes}
	q8_sizes=${KIWI_BENCH_Q8_SIZES-$q8_sizes}
	configs=${KIWI_BENCH_CONFIGS:-$configs}
	rlat_sizes=${KIWI_BENCH_RLAT_SIZES:-}
	bw_bytes=${KIWI_BENCH_BW_BYTES:-$bw_bytes}
	doc=0
fi
# the latency target's size, alone in the rounds after --runs
lat_extra_size=64
[ "$lat_runs" -gt "$runs" ] || lat_runs=$runs
[[ " $lat_sizes " == *" $lat_extra_size "* ]] || lat_runs=$runs
ns=kb
cli_ip=198.18.0.1
srv_ip=198.18.0.2

# ---------------------------------------------------------------- guest side

# bw_iters SIZE: 16 MiB per run, at least 5 (perftest's minimum) and at
# most 5000 messages: long enough that connection setup and the last
# completions weigh little in perftest's average.
bw_iters() {
	local n=$((bw_bytes / $1))
	[ $n -gt 5000 ] && n=5000
	[ $n -lt 5 ] && n=5
	echo $n
}

lat_iters() {
	if [ "$1" -ge 16384 ]; then echo 100; else echo 300; fi
}

# listening PORT: some socket listens on PORT in either namespace (the
# iWARP listeners are kernel TCP sockets).
listening() {
	{ ss -Hltn "sport = :$1"; ip netns exec $ns ss -Hltn "sport = :$1"; } 2>/dev/null |
		grep -q .
}

wait_listening() {
	local end=$((SECONDS + 30))
	while ! listening "$1"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}

guest_cleanup() {
	ip netns pids $ns 2>/dev/null | xargs -r kill 2>/dev/null
	links_del
	ip netns del $ns 2>/dev/null
	veth_teardown
}

net_setup() {
	veth_setup &&
	ip netns add $ns &&
	ip link set veth1 netns $ns &&
	ip netns exec $ns ip addr add $srv_ip/24 dev veth1 &&
	ip netns exec $ns ip link set veth1 up &&
	ip netns exec $ns ip link set lo up
}

links_del() {
	[ -e /sys/class/infiniband/kb0 ] && rdma link del kb0
	[ -e /sys/class/infiniband/kb1 ] && ip netns exec $ns rdma link del kb1
	nvmf_wait 10 test ! -e /sys/class/infiniband/kb0 &&
		nvmf_wait 10 test ! -e /sys/class/infiniband/kb1
}

# links_add CONFIG: kb0 on veth0 and kb1 on veth1 (from inside the netns).
links_add() {
	local prov crc= type d defer= rresp= fpdu=
	case $1 in
	kiwi) prov=kiwi crc=off ;;
	kiwi-inline) prov=kiwi crc=off defer=0 rresp=0 ;;
	kiwi-defer[0-9]*) prov=kiwi crc=off defer=${1#kiwi-defer} ;;
	kiwi-rresp[0-9]*) prov=kiwi crc=off rresp=${1#kiwi-rresp} ;;
	kiwi-fpdu[0-9]*) prov=kiwi crc=off fpdu=${1#kiwi-fpdu} ;;
	kiwi-dbwrite) prov=kiwi crc=off ;;
	kiwi-crc) prov=kiwi crc=required ;;
	siw) prov=siw ;;
	siw-crc) prov=siwcrc ;;
	esac
	nvmf_provider_load $prov || return 1
	if [ $prov = kiwi ]; then
		# the module's default unless the configuration says otherwise
		[ -n "$rx_defer0" ] ||
			rx_defer0=$(cat /sys/kernel/debug/kiwi/rx_defer)
		echo "${defer:-$rx_defer0}" > /sys/kernel/debug/kiwi/rx_defer ||
			return 1
		[ -n "$rresp0" ] ||
			rresp0=$(cat /sys/kernel/debug/kiwi/rresp_defer)
		echo "${rresp:-$rresp0}" > /sys/kernel/debug/kiwi/rresp_defer ||
			return 1
	fi
	type=$(nvmf_provider_type $prov)
	rdma link add kb0 type "$type" netdev veth0 &&
	ip netns exec $ns rdma link add kb1 type "$type" netdev veth1 || return 1
	for d in kb0 kb1; do
		nvmf_wait 10 test -e /sys/class/infiniband/$d || return 1
		if [ -n "$crc" ]; then
			echo $crc > /sys/class/infiniband/$d/mpa_crc || return 1
			[ "$(cat /sys/class/infiniband/$d/mpa_crc)" = $crc ] || return 1
		fi
		if [ -n "$fpdu" ]; then
			echo "$fpdu" > /sys/class/infiniband/$d/mpa_fpdu_max ||
				return 1
		fi
		nvmf_wait 10 grep -q ACTIVE /sys/class/infiniband/$d/ports/1/state ||
			return 1
	done
}

rx_defer0=
rresp0=

# A fresh port per perftest run, so that no listener meets the TIME_WAIT
# of the run before it.
port_seq=0

# The measuring functions below run in the script's shell (a subshell
# would lose port_seq) and leave their number in val.
val=
perf_times=

# perf_run TOOL SIZE ITERS FIELD [ARGS...]: perftest's FIELD'th column of
# the client's result line (4: BW average MiB/s, 5: t_typical usec).
perf_run() {
	local tool=$1 size=$2 iters=$3 field=$4 port srv rc v t0 t1 t2
	shift 4
	port=$((20000 + port_seq % 5000))
	port_seq=$((port_seq + 1))
	ip netns exec $ns timeout 120 "$tool" -R -F -d kb1 -p $port \
		-s "$size" -n "$iters" "$@" > /tmp/pb-srv.log 2>&1 &
	srv=$!
	t0=$EPOCHREALTIME
	if ! wait_listening $port; then
		kill $srv 2>/dev/null
		wait $srv
		echo "perftest.sh: $tool server not listening on $port" >&2
		sed 's/^/  srv: /' /tmp/pb-srv.log >&2
		return 1
	fi
	t1=$EPOCHREALTIME
	timeout 120 "$tool" -R -F -d kb0 -p $port -s "$size" -n "$iters" \
		"$@" $srv_ip > /tmp/pb-cli.log 2>&1
	rc=$?
	t2=$EPOCHREALTIME
	[ $rc = 0 ] || kill $srv 2>/dev/null
	wait $srv || rc=1
	# where the time of a run goes: server start, client, server exit
	perf_times=$(awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$EPOCHREALTIME" \
		'BEGIN { printf "listen %.1f s, client %.1f s, server exit %.1f s", b - a, c - b, d - c }')
	v=$(awk -v s="$size" -v f="$field" '$1 == s && NF >= f { print $f; exit }' \
		/tmp/pb-cli.log)
	# perftest's cycle counter calibration failed: its figure is not one
	if [ $rc = 0 ] && grep -q 'Correlation coefficient r^2' /tmp/pb-cli.log &&
	   [[ $v =~ ^0+(\.0+)?$ ]]; then
		echo "perftest.sh: $tool -s $size: perftest's clock calibration failed (BW $v)" >&2
		val=clock
		return 0
	fi
	# any other 0 is a failure, not a figure
	[[ $v =~ ^0+(\.0+)?$ ]] && v="$v (zero)"
	if [ $rc != 0 ] || ! [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
		echo "perftest.sh: $tool -s $size failed (status $rc, value '$v')" >&2
		tail -n 5 /tmp/pb-srv.log | sed 's/^/  srv: /' >&2
		tail -n 20 /tmp/pb-cli.log | sed 's/^/  cli: /' >&2
		# what the devices and the kernel saw of it (a failed connect:
		# the MPA and timeout counters, rdma_cm's and kiwi's messages);
		# per link, since one device without counters (siw) fails the
		# whole listing
		for d in kb0 kb1; do
			rdma statistic show link $d/1 2>&1 | sed "s/^/  stat $d: /" >&2
		done
		dmesg | tail -n 15 | sed 's/^/  dmesg: /' >&2
		return 1
	fi
	val=$v
}

# record ROUND CONFIG TEST SIZE UNIT CMD...: one CSV row, "fail" when CMD
# fails or leaves no number in val, "clock" for perftest's clock failure.
record() {
	local r=$1 c=$2 t=$3 s=$4 u=$5 t0=$SECONDS
	shift 5
	val=
	"$@" || val=
	[ "$val" = clock ] || [[ $val =~ ^[0-9]+(\.[0-9]+)?$ ]] || val=fail
	echo "$r,$c,$t,$s,$val,$u" >> "$csv"
	echo "perftest.sh: round $r $c $t $s: $val $u ($((SECONDS - t0)) s${perf_times:+: $perf_times})"
	perf_times=
}

rdma_config() {
	local r=$1 c=$2 s t
	if ! links_add "${c%-rps}" > /tmp/pb-setup.log 2>&1; then
		echo "perftest.sh: round $r $c: link setup failed:" >&2
		sed 's/^/  /' /tmp/pb-setup.log >&2
		links_del > /dev/null 2>&1
		return
	fi
	# every perftest process of this configuration rings the old way
	if [ "${c%-rps}" = kiwi-dbwrite ]; then
		[ -f "$root/tests/verbs/build/libdb-legacy.so" ] || {
			echo "perftest.sh: build tests/verbs first (kiwi-dbwrite)" >&2
			links_del > /dev/null 2>&1
			return
		}
		export LD_PRELOAD=$root/tests/verbs/build/libdb-legacy.so
	fi
	for s in $write_sizes; do
		record "$r" "$c" write_bw "$s" MiB/s \
			perf_run ib_write_bw "$s" "$(bw_iters "$s")" 4
	done
	for s in $sr_sizes; do
		for t in send read; do
			record "$r" "$c" ${t}_bw "$s" MiB/s \
				perf_run ib_${t}_bw "$s" "$(bw_iters "$s")" 4
		done
	done
	for s in $q8_sizes; do
		record "$r" "$c" write_bw_q8 "$s" MiB/s \
			perf_run ib_write_bw "$s" "$(bw_iters "$s")" 4 -q 8
	done
	# the deferral's A/B: bandwidth only, latency stays inline anyway
	case ${c%-rps} in
	kiwi-inline|kiwi-defer*|kiwi-rresp*|kiwi-fpdu*) ;;
	*)
		for s in $lat_sizes; do
			record "$r" "$c" write_lat "$s" usec \
				perf_run ib_write_lat "$s" "$(lat_iters "$s")" 5
		done ;;
	esac
	# Read latency, only when asked for (KIWI_BENCH_RLAT_SIZES): where a
	# Read Request's Responses are sent from
	for s in $rlat_sizes; do
		record "$r" "$c" read_lat "$s" usec \
			perf_run ib_read_lat "$s" "$(lat_iters "$s")" 5
	done
	unset LD_PRELOAD
	links_del > /dev/null 2>&1 ||
		echo "perftest.sh: round $r $c: links did not go away" >&2
}

# iperf3_run SIZE [CPU [STREAMS]]: MiB/s received, 2 s of writes of SIZE
# bytes; with CPU, client and server both pinned to that CPU ("" for
# neither); STREAMS parallel connections of one iperf3 process (-P), as
# ib_write_bw -q 8 is one process over eight QPs.
iperf3_run() {
	local srv rc pin=() par=()
	[ -n "${2:-}" ] && pin=(taskset -c "$2")
	[ -n "${3:-}" ] && par=(-P "$3")
	ip netns exec $ns timeout 60 "${pin[@]}" iperf3 -s -1 -B $srv_ip -p 5201 \
		> /tmp/pb-iperf-srv.log 2>&1 &
	srv=$!
	wait_listening 5201 || { kill $srv; wait $srv; return 1; }
	timeout 60 "${pin[@]}" iperf3 -c $srv_ip -p 5201 -l "$1" -t 2 -J \
		"${par[@]}" > /tmp/pb-iperf.json 2> /tmp/pb-iperf.err
	rc=$?
	wait $srv || rc=1
	[ $rc = 0 ] || { cat /tmp/pb-iperf.err >&2; return 1; }
	val=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print("%.2f" % (j["end"]["sum_received"]["bits_per_second"] / 8 / 1048576))
' /tmp/pb-iperf.json)
}

# sockperf_run SIZE: median one-way latency (half a round trip, usec) of a
# 2 s TCP ping-pong.  sockperf waits in epoll (a wakeup per message) where
# perftest spins on its buffer; spinning sockets (--nonblocked) were
# tried and came out slower still under TCG on a loaded host.
sockperf_run() {
	timeout 60 sockperf pp --tcp -i $srv_ip -p 11111 \
		-m "$1" -t 2 \
		> /tmp/pb-sockperf.log 2>&1 || {
		tail -n 5 /tmp/pb-sockperf.log >&2
		return 1
	}
	val=$(awk '/percentile 50\.000 =/ { print $NF; exit }' /tmp/pb-sockperf.log)
}

# tcp_config ROUND [NAME]: iperf3 and sockperf, recorded as NAME (tcp)
tcp_config() {
	local r=$1 n=${2:-tcp} s srv
	for s in $write_sizes; do
		record "$r" "$n" tcp_bw "$s" MiB/s iperf3_run "$s"
		record "$r" "$n" tcp_bw_1cpu "$s" MiB/s iperf3_run "$s" 0
	done
	# TCP's own scaling over eight connections, beside ib_write_bw -q 8
	for s in $q8_sizes; do
		record "$r" "$n" tcp_bw_p8 "$s" MiB/s iperf3_run "$s" "" 8
	done
	ip netns exec $ns sockperf sr --tcp -i $srv_ip \
		-p 11111 -m 65536 \
		> /tmp/pb-sockperf-srv.log 2>&1 &
	srv=$!
	if wait_listening 11111; then
		for s in $lat_sizes; do
			record "$r" "$n" tcp_lat "$s" usec sockperf_run "$s"
		done
	else
		cat /tmp/pb-sockperf-srv.log >&2
	fi
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
}

# rps_set MASK: receive packet steering on both veths' receive queues
# (0: off, the default).  With it, what arrives on a veth is queued to
# the CPU its flow hashes to instead of the sending CPU's backlog.
rps_set() {
	echo "$1" > /sys/class/net/veth0/queues/rx-0/rps_cpus &&
	ip netns exec $ns sh -c "echo $1 > /sys/class/net/veth1/queues/rx-0/rps_cpus"
}

guest_main() {
	. "$root/tests/cases/lib/lib.sh"
	. "$root/tests/cases/lib/nvmeof-lib.sh"
	local r c t0
	echo "round,config,test,size,value,unit" > "$csv"
	{
		echo "# kernel $(uname -r)"
		echo "# guest cpus $(nproc)"
		echo "# debug $(grep -oE '(slub_debug|panic_on_warn)=[^ ]*' /proc/cmdline | tr '\n' ' ' | grep . || echo none)"
		echo "# perftest $(ib_write_bw --version 2>&1 | sed -n 's/^Version: //p')"
		echo "# matrix ib_write_bw/iperf3 $write_sizes; ib_send_bw, ib_read_bw $sr_sizes; ib_write_bw -q 8 $q8_sizes; ib_write_lat/sockperf $lat_sizes; $((bw_bytes / 1048576)) MiB per bandwidth run (at most 5000 messages)"
		echo "# lat_runs $lat_runs"
		echo "# lat_extra_size $lat_extra_size"
	} >> "$csv.meta"
	guest_cleanup
	net_setup || { echo "perftest.sh: network setup failed" >&2; exit 1; }
	kiwi_load || exit 1
	kiwi_provider_env
	# libibverbs dlopens every provider named in /etc/libibverbs.d at
	# each start, about a second per process over the guest's 9p root;
	# only siw's (kiwi comes through RDMAV_DRIVERS).  The guest's own
	# mount, gone with the VM.
	if [ -f /etc/libibverbs.d/siw.driver ]; then
		cp /etc/libibverbs.d/siw.driver /tmp/pb-siw.driver &&
		mount -t tmpfs -o size=1m pb-verbs /etc/libibverbs.d &&
		cp /tmp/pb-siw.driver /etc/libibverbs.d/siw.driver
	fi
	for r in $(seq 1 "$lat_runs"); do
		# past --runs: the latency target's size alone (the matrix
		# above went into the meta file already)
		if [ "$r" -gt "$runs" ]; then
			write_sizes= sr_sizes= q8_sizes= rlat_sizes=
			lat_sizes=$lat_extra_size
		fi
		for c in $(bench_order "$r" $configs); do
			# the A/B configurations measure no latency
			if [ "$r" -gt "$runs" ]; then
				case ${c%-rps} in
				kiwi-inline|kiwi-defer*|kiwi-rresp*|kiwi-fpdu*)
					continue ;;
				esac
			fi
			t0=$SECONDS
			case $c in
			*-rps) rps_set "$(printf '%x' $(((1 << $(nproc)) - 1)))" ;;
			esac
			if [ "${c%-rps}" = tcp ]; then
				tcp_config "$r" "$c"
			else
				rdma_config "$r" "$c"
			fi
			rps_set 0
			echo "perftest.sh: round $r $c done in $((SECONDS - t0)) s," \
				"$(grep -c "^$r,$c,.*,fail," "$csv") failed," \
				"$(grep -c "^$r,$c,.*,clock," "$csv") perftest clock failures;" \
				"TCP retransmits so far: $(nstat -az TcpRetransSegs 2>/dev/null |
				awk '/^TcpRetransSegs/ { print $2 }')"
		done
	done
	guest_cleanup
	kiwi_counts_zero || echo "perftest.sh: kiwi objects left over" >&2
}

if [ $guest = 1 ]; then
	guest_main
	exit 0
fi

# ----------------------------------------------------------------- host side
[ -e "$root/userspace/build/libkiwi-rdmav34.so" ] ||
	{ echo "perftest.sh: build the provider first (make provider)" >&2; exit 1; }
for t in ib_write_bw iperf3 sockperf gnuplot; do
	command -v $t > /dev/null ||
		{ echo "perftest.sh: $t missing (scripts/deps.sh)" >&2; exit 1; }
done
bench_host_start perftest
"$here/build-siw-crc.sh" || exit 1
load0=$(awk '{ print $1 }' /proc/loadavg)
# the host's load while the VM runs: other work on the host slows the
# emulated CPUs unevenly, so it goes with the results
while sleep 30; do awk '{ print $1 }' /proc/loadavg; done > "$csv.load" &
sampler=$!
# generous: a full round takes about 7 minutes on an idle host
tmo=$((runs * 1200 + (lat_runs - runs) * 300 + 600))
[ "$quick" = 1 ] && tmo=$((runs * 400 + 300))
KIWI_BENCH_QUICK=$quick "$root/tests/vm/vm-run.sh" --timeout "$tmo" -- \
	bash "$root/tests/bench/perftest.sh" --runs "$runs" \
	--lat-runs "$lat_runs" --guest "$csv"
rc=$?
kill $sampler 2> /dev/null
wait $sampler 2> /dev/null
bench_vm_done perftest.sh $rc
{
	echo "# runs $runs"
	# vm-run.sh pins only where it may use as many host CPUs as vCPUs
	if [ "$KIWI_VM_PIN" != 0 ] && [ "$(nproc)" -ge "${KIWI_VM_CPUS:-2}" ]; then
		echo "# vcpu_threads pinned"
	else
		echo "# vcpu_threads unpinned"
	fi
	echo "# host cpu $(bench_cpu)"
	echo "# host load $load0 at start, $(awk '{ print $1 }' /proc/loadavg) at end$(sort -n "$csv.load" |
		awk '{ v[NR] = $1 } END { if (NR) printf "; min %s, median %s, max %s over the run", v[1], v[int((NR + 1) / 2)], v[NR] }')"
	echo "# kiwi $(bench_rev changes drivers userspace)"
	echo "# date $(date -u '+%Y-%m-%d %H:%M UTC')"
} >> "$csv.meta"
args=()
[ $doc = 1 ] && args+=(--doc "$root/Documentation/benchmarks.md" \
	--doc-png "$root/Documentation/bench-perftest.png")
python3 "$here/perftest-report.py" "${args[@]}" "$csv"
exit
}
