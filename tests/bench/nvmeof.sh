#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NVMe-oF benchmark, kiwi to kiwi against siw to siw (a benchmark, not a
# test: it passes or fails nothing).  One VM boot; rounds alternate the two
# providers (kiwi first in odd rounds, siw first in even ones, so that a
# drift in the host's load hits both alike).  Each run: RDMA links on both
# ends of the veth pair, nvme connect to the nvmet target (nvmeof-lib.sh),
# then fio with the page cache bypassed:
#   rand4k: 4 KiB random read, iodepth 32, 1 job       -> IOPS
#   seq128k: 128 KiB sequential read, iodepth 16, 1 job -> MiB/s
# The medians over the rounds and the kiwi/siw ratio are printed, kept as
# CSV in tests/bench/out/ and written into Documentation/benchmarks.md.
#
# Usage (on the host, after `make module`):
#   tests/bench/nvmeof.sh [--runs N] [--runtime SEC] [--no-doc]
# Defaults: 5 rounds, 10 s per fio run (plus 2 s ramp).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

runs=5
runtime=10
doc=1
guest=0
csv=
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift ;;
	--runtime) runtime=$2; shift ;;
	--no-doc) doc=0 ;;
	--guest) guest=1; csv=$2; shift ;;
	-h|--help) sed -n '3,20p' "$0"; exit 0 ;;
	*) echo "nvmeof.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

# ---------------------------------------------------------------- guest side
guest_main() {
	. "$root/tests/cases/lib.sh"
	. "$root/tests/cases/nvmeof-lib.sh"
	local r p order bdev
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
		if [ $((r % 2)) = 1 ]; then order="kiwi siw"; else order="siw kiwi"; fi
		for p in $order; do
			one_run "$r" "$p"
		done
	done
	nvmf_nullb_teardown
	nvmf_net_teardown
}

# fio_json FILE: "iops bw_bytes" of the read side of fio's JSON output.
fio_json() {
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
r = j["jobs"][0]["read"]
if j["jobs"][0].get("error"):
	sys.exit(1)
print("%.1f %.0f" % (r["iops"], r["bw_bytes"]))
' "$1"
}

one_run() {
	local r=$1 p=$2 v t0=$SECONDS
	if ! { nvmf_link_add $NVMF_HOST_DEV "$p" veth0 &&
		nvmf_link_add $NVMF_TGT_DEV "$p" veth1 &&
		nvmf_nvmet_setup && nvmf_connect; } > /tmp/bench-setup.out 2>&1; then
		echo "bench: round $r $p: setup/connect failed:" >&2
		sed 's/^/  /' /tmp/bench-setup.out >&2
		echo "$r,$p,rand4k,fail,iops" >> "$csv"
		echo "$r,$p,seq128k,fail,MiB/s" >> "$csv"
		teardown_run
		return
	fi
	NVMF_DEV=$(nvmf_ns_bdev)
	fio --name=rand4k --filename="$NVMF_DEV" --direct=1 --ioengine=libaio \
		--rw=randread --bs=4k --iodepth=32 --numjobs=1 \
		--time_based --runtime="$runtime" --ramp_time=2 \
		--size=$((NVMF_SIZE_MB))M --output-format=json \
		--output=/tmp/bench-fio.json > /dev/null 2>&1
	if v=$(fio_json /tmp/bench-fio.json); then
		set -- $v
		echo "$r,$p,rand4k,$1,iops" >> "$csv"
	else
		echo "$r,$p,rand4k,fail,iops" >> "$csv"
	fi
	fio --name=seq128k --filename="$NVMF_DEV" --direct=1 --ioengine=libaio \
		--rw=read --bs=128k --iodepth=16 --numjobs=1 \
		--time_based --runtime="$runtime" --ramp_time=2 \
		--size=$((NVMF_SIZE_MB))M --output-format=json \
		--output=/tmp/bench-fio.json > /dev/null 2>&1
	if v=$(fio_json /tmp/bench-fio.json); then
		set -- $v
		echo "$r,$p,seq128k,$(awk -v b="$2" 'BEGIN { printf "%.2f", b / 1048576 }'),MiB/s" >> "$csv"
	else
		echo "$r,$p,seq128k,fail,MiB/s" >> "$csv"
	fi
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
[ -f "$root/kiwi.ko" ] || { echo "nvmeof.sh: build kiwi.ko first (make module)" >&2; exit 1; }
"$root/tests/vm/build-siw.sh" || exit 1
mkdir -p "$here/out"
stamp=$(date -u +%Y%m%d-%H%M%S)
csv=$here/out/nvmeof-$stamp.csv
rm -f "$csv" "$csv.meta"
# per run: about 4 setup/teardown steps and two fio runs, slow under TCG
tmo=$((runs * 2 * (2 * (runtime + 2) + 120) + 300))
"$root/tests/vm/vm-run.sh" --timeout "$tmo" -- \
	bash "$root/tests/bench/nvmeof.sh" --runs "$runs" --runtime "$runtime" \
	--guest "$csv"
rc=$?
[ -s "$csv" ] || { echo "nvmeof.sh: no results (vm-run status $rc)" >&2; exit 1; }
[ $rc = 0 ] || echo "nvmeof.sh: warning: vm-run exited with status $rc" >&2

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
kernel=$(sed -n 's/^# kernel //p' "$csv.meta")
python3 - "$csv" "$root/Documentation/benchmarks.md" "$doc" "$cpu" \
	"$kernel" "$runs" "$runtime" \
	"$(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- drivers || echo ' with uncommitted driver changes'), kiwi.ko built $(date -u -r "$root/kiwi.ko" '+%H:%M UTC')" \
	"$(awk '{ print $1 }' /proc/loadavg)" <<'EOF'
import csv, statistics, sys, datetime, re
path, docpath, dodoc, cpu, kernel, runs, runtime, rev, load = sys.argv[1:]
rows = list(csv.DictReader(open(path)))
tests = [("rand4k", "4 KiB random read", "IOPS"),
         ("seq128k", "128 KiB sequential read", "MiB/s")]
res = {}
for t, _, _ in tests:
	for p in ("kiwi", "siw"):
		vals = [r["value"] for r in rows if r["test"] == t and r["provider"] == p]
		ok = [float(v) for v in vals if v != "fail"]
		res[t, p] = (ok, len(vals) - len(ok))
lines = []
lines.append("| test | kiwi median | siw median | kiwi/siw | kiwi runs | siw runs |")
lines.append("|---|---:|---:|---:|---|---|")
for t, desc, unit in tests:
	k, kf = res[t, "kiwi"]
	s, sf = res[t, "siw"]
	km = statistics.median(k) if k else None
	sm = statistics.median(s) if s else None
	ratio = "%.2f" % (km / sm) if km and sm else "n/a"
	fmt = (lambda x: "%.0f" % x) if unit == "IOPS" else (lambda x: "%.1f" % x)
	def runs_txt(v, f):
		txt = " ".join(fmt(x) for x in v)
		if f:
			txt += (" " if txt else "") + "(%d failed)" % f
		return txt
	lines.append("| %s (%s) | %s | %s | %s | %s | %s |" % (
		desc, unit, fmt(km) if km is not None else "failed",
		fmt(sm) if sm is not None else "failed", ratio,
		runs_txt(k, kf), runs_txt(s, sf)))
table = "\n".join(lines)
print(table)
if dodoc != "1":
	sys.exit(0)
date = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
section = """<!-- nvmeof-results-begin -->
Latest run: %s, kiwi at %s, guest kernel %s, host CPU %s
(host load average %s when it ended).
QEMU TCG (no KVM), 2 vCPUs shared by host and target: absolute numbers
are those of an emulator; only the ratio, from alternating runs in one
boot, means anything.  %s rounds per provider, %s s per fio run after a
2 s ramp; raw values per run in the last two columns (CSV in
tests/bench/out/).

%s
<!-- nvmeof-results-end -->""" % (date, rev, kernel, cpu, load, runs, runtime, table)
doc = open(docpath).read()
doc, n = re.subn(r"<!-- nvmeof-results-begin -->.*<!-- nvmeof-results-end -->",
                 lambda m: section, doc, flags=re.S)
if n != 1:
	sys.exit("benchmarks.md has no nvmeof-results markers")
open(docpath, "w").write(doc)
print("results written to %s" % docpath)
EOF
