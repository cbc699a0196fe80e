#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Memory benchmark (`make bench-memory`, issue 15 point 6): the kernel
# memory an idle connected QP costs, and a registered page, for kiwi and
# siw, beside an idle TCP connection (a benchmark: it passes or fails
# nothing).
#
# One VM boot without slub_debug (its red zones and tracking would be
# counted as the objects' own).  veth0 198.18.0.1 (init_net, client) <->
# veth1 198.18.0.2 (netns "kb", server); RDMA links kb0 and kb1 on them.
# Each round, per configuration in an order turned by one per round:
#   qp   tests/verbs/build/qp-hold opens N connections (16 send and 16
#        receive WRs, one SGE, all on one CQ per process) for N = SMALL
#        and N = LARGE, and /proc/meminfo is read once every connection
#        on both ends is established (after dropping the reclaimable
#        caches).  Per QP = (value at LARGE - value at SMALL) /
#        (2 * (LARGE - SMALL)): both ends are in this guest, and the
#        fixed costs (process, PD, CQ, listener) cancel out.  Slab is
#        where a QP's own state lives; VmallocUsed holds the rings that
#        the provider maps into the process.
#   mr   qp-hold mr registers MR_MIB MiB of touched anonymous memory;
#        per page = (Slab + VmallocUsed with the MR - without) / pages.
#   tcp  the same N idle TCP connections (python sockets), no RDMA: the
#        socket's own share of a QP's figure.
# CSV in tests/bench/out/memory-<date>.csv, medians in
# Documentation/benchmarks.md (tests/bench/memory-report.py).  The target
# (issue 15): at most 16 KiB of slab per QP beyond its rings.
#
# Usage (on the host, after `make module provider` and
# `make -C tests/verbs`):
#   tests/bench/memory.sh [--runs N] [--no-doc]
# Defaults: 3 rounds, SMALL 50, LARGE 500 (KIWI_MEM_SMALL, KIWI_MEM_LARGE),
# MR_MIB 256 (KIWI_MEM_MR_MIB); KIWI_MEM_CONFIGS a subset of "kiwi siw tcp".
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

. "$here/bench-lib.sh"
runs=3
bench_parse_args memory.sh "runs" "$@"
small=${KIWI_MEM_SMALL:-50}
large=${KIWI_MEM_LARGE:-500}
mr_mib=${KIWI_MEM_MR_MIB:-256}
configs=${KIWI_MEM_CONFIGS:-kiwi siw tcp}
ns=kb
srv_ip=198.18.0.2
hold=$root/tests/verbs/build/qp-hold

# ---------------------------------------------------------------- guest side

# meminfo: "Slab SUnreclaim VmallocUsed" in kB, the reclaimable caches
# dropped first so that dentries and inodes of the run do not count.
meminfo() {
	sync
	echo 3 > /proc/sys/vm/drop_caches
	sleep 1
	# the caches too, for the per-cache breakdown (slab_breakdown)
	[ -z "${slab_snap:-}" ] || cp /proc/slabinfo "$slab_snap"
	awk '/^(Slab|SUnreclaim|VmallocUsed):/ { v[$1] = $2 }
	     END { print v["Slab:"], v["SUnreclaim:"], v["VmallocUsed:"] }' \
		/proc/meminfo
}

# wait_line FILE TEXT SECONDS [PID]: FILE has a line starting with TEXT;
# fails after SECONDS, or once PID (the process writing FILE) has gone.
wait_line() {
	local end=$((SECONDS + $3))
	until grep -q "^$2" "$1" 2>/dev/null; do
		[ $SECONDS -lt $end ] || return 1
		[ -z "${4:-}" ] || kill -0 "$4" 2>/dev/null ||
			grep -q "^$2" "$1" 2>/dev/null || return 1
		sleep 0.5
	done
}

port_seq=0

# hold_conns CONFIG N PORT: N connections to PORT held; prints meminfo
# while they are.  A fresh PORT per set, so that no 4-tuple of the last
# set is reused.
hold_conns() {
	local c=$1 n=$2 port=$3 srv cli m rc=0 prog=("$hold")
	[ "$c" = tcp ] && prog=(python3 "$tcp_hold")
	ip netns exec $ns "${prog[@]}" server $srv_ip $port "$n" \
		> /tmp/mem-srv.out 2>&1 &
	srv=$!
	wait_line /tmp/mem-srv.out "server: listening" 30 $srv || rc=1
	"${prog[@]}" client $srv_ip $port "$n" > /tmp/mem-cli.out 2>&1 &
	cli=$!
	if [ $rc = 0 ] && wait_line /tmp/mem-cli.out "client: established" 900 $cli &&
		wait_line /tmp/mem-srv.out "server: established" 60 $srv; then
		m=$(meminfo)
	else
		echo "memory.sh: $c with $n connections failed:" >&2
		cat /tmp/mem-srv.out /tmp/mem-cli.out >&2
		rc=1
	fi
	# the server's end closes first, so TIME_WAIT stays on its side: the
	# client's next set binds the source ports rdma_cm picks, and on 6.1
	# a port held in TIME_WAIT fails that bind (EADDRINUSE), even with
	# SO_REUSEADDR
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	sleep 1
	kill $cli 2>/dev/null
	wait $cli 2>/dev/null
	[ $rc = 0 ] && echo "$m"
	return $rc
}

# slab_breakdown R CONFIG OLD NEW: the caches that grew by 32 bytes or
# more per QP between two /proc/slabinfo copies, to "$csv.slabs" (which
# objects a QP's figure is made of; merged caches show under one name).
slab_breakdown() {
	awk -v r="$1" -v c="$2" -v d=$((2 * (large - small))) '
		FNR == 1 { f++ }
		FNR <= 2 { next }
		f == 1 { old[$1] = $3 * $4 }
		f == 2 { g = ($3 * $4 - old[$1]) / d
			 if (g >= 32) printf "%s,%s,%s,%d,%.2f\n", r, c, $1, $4, g }' \
		"$3" "$4" | sort -t, -k5 -rn >> "$csv.slabs"
}

# qp_round R CONFIG: the per-QP (per-socket for tcp) figures of one round.
qp_round() {
	local r=$1 c=$2 a b p=$((21000 + port_seq))
	port_seq=$((port_seq + 2))
	if a=$(slab_snap=/tmp/mem-slab.0 hold_conns "$c" "$small" $p) &&
		b=$(slab_snap=/tmp/mem-slab.1 hold_conns "$c" "$large" $((p + 1))); then
		slab_breakdown "$r" "$c" /tmp/mem-slab.0 /tmp/mem-slab.1
		set -- $a $b
		awk -v r="$r" -v c="$c" -v d=$((2 * (large - small))) \
			-v s0="$1" -v u0="$2" -v v0="$3" -v s1="$4" -v u1="$5" -v v1="$6" \
			'BEGIN { printf "%s,%s,slab_per_qp,%.2f,KiB\n", r, c, (s1 - s0) / d
				 printf "%s,%s,unreclaim_per_qp,%.2f,KiB\n", r, c, (u1 - u0) / d
				 printf "%s,%s,vmalloc_per_qp,%.2f,KiB\n", r, c, (v1 - v0) / d }' \
			>> "$csv"
	else
		echo "$r,$c,slab_per_qp,fail,KiB" >> "$csv"
	fi
}

# mr_round R CONFIG: kernel bytes per registered page.
mr_round() {
	local r=$1 c=$2 a b pid
	a=$(meminfo)
	"$hold" mr kb0 "$mr_mib" > /tmp/mem-mr.out 2>&1 &
	pid=$!
	if wait_line /tmp/mem-mr.out "mr: registered" 120 $pid; then
		b=$(meminfo)
		set -- $a $b
		awk -v r="$r" -v c="$c" -v p=$((mr_mib * 256)) \
			-v s0="$1" -v v0="$3" -v s1="$4" -v v1="$6" \
			'BEGIN { printf "%s,%s,bytes_per_page,%.2f,B\n", r, c,
				 ((s1 + v1) - (s0 + v0)) * 1024 / p }' >> "$csv"
	else
		cat /tmp/mem-mr.out >&2
		echo "$r,$c,bytes_per_page,fail,B" >> "$csv"
	fi
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
}

links_add() {
	nvmf_provider_load "$1" &&
	rdma link add kb0 type "$1" netdev veth0 &&
	ip netns exec $ns rdma link add kb1 type "$1" netdev veth1 &&
	wait_for 10 grep -q ACTIVE /sys/class/infiniband/kb0/ports/1/state &&
	wait_for 10 ip netns exec $ns \
		grep -q ACTIVE /sys/class/infiniband/kb1/ports/1/state
}

links_del() {
	[ -e /sys/class/infiniband/kb0 ] && rdma link del kb0
	ip netns exec $ns rdma link del kb1 2>/dev/null
	wait_for 10 test ! -e /sys/class/infiniband/kb0
}

guest_main() {
	. "$root/tests/cases/lib/lib.sh"
	. "$root/tests/cases/lib/nvmeof-lib.sh"
	local r c
	tcp_hold=/tmp/mem-tcp-hold.py
	cat > "$tcp_hold" <<'PY'
import signal, socket, sys
mode, addr, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
held = []
if mode == "server":
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(1024)
    print("server: listening", flush=True)
    while len(held) < n:
        held.append(ls.accept()[0])
else:
    for i in range(n):
        held.append(socket.create_connection((addr, port)))
print("%s: established %d" % (mode, n), flush=True)
signal.sigwait([signal.SIGTERM, signal.SIGINT])
PY
	ulimit -n 4096
	ulimit -l unlimited
	echo "round,config,test,value,unit" > "$csv"
	echo "round,config,cache,object_size,bytes_per_qp" > "$csv.slabs"
	{
		echo "# kernel $(uname -r)"
		echo "# guest cpus $(nproc)"
		echo "# cmdline $(cat /proc/cmdline)"
		echo "# connections $small and $large, MR $mr_mib MiB"
	} >> "$csv.meta"
	grep -q slub_debug /proc/cmdline &&
		echo "memory.sh: warning: slub_debug is on, slab figures include its overhead" >&2
	veth_ns_setup $ns || { echo "memory.sh: network setup failed" >&2; exit 1; }
	kiwi_load || exit 1
	kiwi_provider_env
	for r in $(seq 1 "$runs"); do
		for c in $(bench_order "$r" $configs); do
			if [ "$c" != tcp ]; then
				links_add "$c" || { echo "memory.sh: $c links failed" >&2; continue; }
				mr_round "$r" "$c"
			fi
			qp_round "$r" "$c"
			[ "$c" != tcp ] && links_del
			echo "memory.sh: round $r $c: $(grep "^$r,$c," "$csv" | cut -d, -f3,4 | tr '\n' ' ')"
		done
	done
	ip netns del $ns 2>/dev/null
	veth_teardown
	kiwi_counts_zero || echo "memory.sh: kiwi objects left over" >&2
}

if [ $guest = 1 ]; then
	guest_main
	exit 0
fi

# ----------------------------------------------------------------- host side
[ -x "$hold" ] || { echo "memory.sh: build $hold first (make -C tests/verbs)" >&2; exit 1; }
bench_host_start memory
KIWI_VM_SLUB_DEBUG=off KIWI_MEM_CONFIGS=$configs KIWI_MEM_SMALL=$small KIWI_MEM_LARGE=$large \
	KIWI_MEM_MR_MIB=$mr_mib "$root/tests/vm/vm-run.sh" \
	--timeout $((runs * 1800 + 300)) -- \
	bash "$root/tests/bench/memory.sh" --runs "$runs" --guest "$csv"
bench_vm_done memory.sh $?
python3 "$here/memory-report.py" "$csv" "$root/Documentation/benchmarks.md" \
	"$doc" "$(sed -n 's/^# kernel //p' "$csv.meta")" "$runs" \
	"$(bench_rev "driver changes" drivers userspace)" "$small" "$large" "$mr_mib"
