#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NVMe-oF benchmark in one guest (`make bench-nvmeof-shared`; the run of
# record is two guests on one wire, nvmeof-wire.sh), kiwi to kiwi against
# siw to siw and against NVMe/TCP (nvmet-tcp target, nvme-tcp host) on the
# same namespace and path (a benchmark, not a test: it passes or fails
# nothing).  One VM boot; each
# round runs the three in an order rotated by one per round, so that a
# drift in the host's load hits all alike.  Each run: RDMA links on both
# ends of the veth pair (none for tcp), nvme connect to the nvmet target
# (nvmeof-lib.sh, NVMF_TRTYPE rdma or tcp; the crossed routes send TCP
# across the veth as they do iWARP), then fio with the page cache
# bypassed:
#   rand4k: 4 KiB random read, iodepth 32, 1 job       -> IOPS
#   seq128k: 128 KiB sequential read, iodepth 16, 1 job -> MiB/s
# The medians over the rounds and the ratios kiwi/TCP and kiwi/siw are
# printed, kept as CSV in tests/bench/out/ and written into
# Documentation/benchmarks.md (its nvmeof-results section).
#
# Usage (on the host, after `make module`):
#   tests/bench/nvmeof.sh [--runs N] [--runtime SEC] [--no-doc]
# Defaults: 5 rounds, 10 s per fio run (plus 2 s ramp).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

. "$here/bench-lib.sh"
bench_parse_args nvmeof.sh "runs runtime" "$@"

# ---------------------------------------------------------------- guest side
guest_main() {
	. "$root/tests/cases/lib/lib.sh"
	. "$root/tests/cases/lib/nvmeof-lib.sh"
	local r p bdev
	nvmf_trap_cleanup
	echo "round,provider,test,value,unit" > "$csv"
	{
		echo "# kernel $(uname -r)"
		echo "# guest cpus $(nproc)"
	} >> "$csv.meta"
	nvmf_net_setup || { echo "bench: network setup failed" >&2; exit 1; }
	nvmf_nullb_setup || { echo "bench: null_blk setup failed" >&2; exit 1; }
	# Written once, so that reads return stored data rather than the
	# zeros of never-written pages.
	dd if=/dev/urandom of="$NVMF_BDEV" bs=1M count="$NVMF_SIZE_MB" \
		oflag=direct status=none || exit 1
	kiwi_load || exit 1
	siw_load || exit 1
	for r in $(seq 1 "$runs"); do
		for p in $(bench_order "$r" kiwi siw tcp); do
			one_run "$r" "$p"
		done
	done
	nvmf_nullb_teardown
	nvmf_net_teardown
}

one_run() {
	local r=$1 p=$2 t0=$SECONDS
	if [ "$p" = tcp ]; then NVMF_TRTYPE=tcp; else NVMF_TRTYPE=rdma; fi
	if ! { { [ "$p" = tcp ] ||
		 { nvmf_link_add $NVMF_HOST_DEV "$p" veth0 &&
		   nvmf_link_add $NVMF_TGT_DEV "$p" veth1; }; } &&
		nvmf_nvmet_setup && nvmf_connect; } > /tmp/bench-setup.out 2>&1; then
		echo "bench: round $r $p: setup/connect failed:" >&2
		sed 's/^/  /' /tmp/bench-setup.out >&2
		echo "$r,$p,rand4k,fail,iops" >> "$csv"
		echo "$r,$p,seq128k,fail,MiB/s" >> "$csv"
		teardown_run
		return
	fi
	NVMF_DEV=$(nvmf_ns_bdev)
	bench_fio_csv "$r,$p" iops rand4k "$NVMF_DEV" randread 4k 32 "$NVMF_SIZE_MB"
	bench_fio_csv "$r,$p" MiB/s seq128k "$NVMF_DEV" read 128k 16 "$NVMF_SIZE_MB"
	teardown_run
	echo "bench: round $r $p done in $((SECONDS - t0)) s: $(tail -n 2 "$csv" | tr '\n' ' ')"
	# TCP trouble on the veth (retransmissions) would explain a slow run
	echo "bench: TCP so far: $(nstat -az TcpRetransSegs TcpExtTCPLostRetransmit 2>/dev/null |
		awk '/^Tcp/ { printf "%s %s ", $1, $2 }')"
}

teardown_run() {
	nvmf_disconnect > /dev/null 2>&1
	nvmf_nvmet_teardown > /dev/null 2>&1
	nvmf_links_del > /dev/null 2>&1
}

if [ $guest = 1 ]; then
	guest_main
	exit 0
fi

# ----------------------------------------------------------------- host side
bench_host_start nvmeof
# per run: about 4 setup/teardown steps and two fio runs, slow under TCG
tmo=$((runs * 3 * (2 * (runtime + 2) + 120) + 300))
"$root/tests/vm/vm-run.sh" --timeout "$tmo" -- \
	bash "$root/tests/bench/nvmeof.sh" --runs "$runs" --runtime "$runtime" \
	--guest "$csv"
bench_vm_done nvmeof.sh $?

python3 "$here/nvmeof-report.py" "$csv" "$root/Documentation/benchmarks.md" \
	"$doc" "$(bench_cpu)" "$(sed -n 's/^# kernel //p' "$csv.meta")" \
	"$runs" "$runtime" "$(bench_rev "driver changes" drivers)" \
	"$(awk '{ print $1 }' /proc/loadavg)"
