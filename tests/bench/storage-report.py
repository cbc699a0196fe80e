#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Report of tests/bench/storage.sh: medians per protocol, transport and
# test, the ratios kiwi/TCP and kiwi/siw against the targets (kiwi at
# least equal to TCP and at least twice siw), a PNG (gnuplot) and the
# table between the storage-results markers of Documentation/benchmarks.md.
#
#   storage-report.py CSV PNG DOC DODOC CPU KERNEL RUNS RUNTIME RAMP REV LOAD

import csv
import datetime
import os
import subprocess
import sys
import tempfile

from bench_report import doc_section, fmt, median, runs_txt, values

(path, png, docpath, dodoc, cpu, kernel, runs, runtime, ramp, rev,
 load) = sys.argv[1:]

PROTOS = [("iscsi", "iSER", "iSCSI/TCP"), ("nfs", "NFS/RDMA", "NFS/TCP")]
TESTS = [("rand4k", "4 KiB random read", "IOPS"),
         ("seqrd128k", "128 KiB sequential read", "MiB/s"),
         ("seqwr128k", "128 KiB sequential write", "MiB/s")]

rows = list(csv.DictReader(open(path)))
# the guest's slub_debug (its allocation tracking weighs on every skb)
slub = "unknown"
if os.path.exists(path + ".meta"):
    for m in open(path + ".meta"):
        if m.startswith("# slub_debug "):
            slub = m.split()[2]

lines = ["| protocol | test | kiwi | siw | TCP | kiwi/TCP (target >= 1) "
         "| kiwi/siw (target >= 2) | runs kiwi; siw; TCP |",
         "|---|---|---:|---:|---:|---:|---:|---|"]
dat = []
for proto, rdma_name, tcp_name in PROTOS:
    for test, desc, unit in TESTS:
        med = {}
        raw = []
        for t in ("kiwi", "siw", "tcp"):
            v, f = values(rows, proto=proto, transport=t, test=test)
            med[t] = median(v)
            raw.append(runs_txt(unit, v, f))

        def ratio(a, b, target):
            if not med[a] or not med[b]:
                return "n/a"
            q = med[a] / med[b]
            return "%.2f %s" % (q, "met" if q >= target else "**not met**")
        lines.append("| %s | %s (%s) | %s | %s | %s | %s | %s | %s |" % (
            rdma_name + " / " + tcp_name, desc, unit,
            fmt(unit, med["kiwi"]), fmt(unit, med["siw"]),
            fmt(unit, med["tcp"]), ratio("kiwi", "tcp", 1),
            ratio("kiwi", "siw", 2), "; ".join(raw)))
        dat.append((proto, test, unit,
                    [med[t] for t in ("kiwi", "siw", "tcp")]))
table = "\n".join(lines)
print(table)

# The PNG: one panel per protocol and test, a bar per transport.
with tempfile.TemporaryDirectory() as tmp:
    gp = ["set terminal pngcairo size 1200,720 font 'DejaVu Sans,9'",
          "set output '%s'" % png,
          "set style data histograms",
          "set style histogram clustered gap 1",
          "set style fill solid 0.8 border -1",
          "set boxwidth 0.9",
          "set yrange [0:*]",
          "set offsets 0, 0, graph 0.15, 0",
          "set grid ytics",
          "set xtics format ''",
          "set key top right",
          "set multiplot layout 2,3 title 'iSER and NFS over RDMA "
          "(kiwi, siw) against TCP (QEMU TCG, medians)'"]
    for i, (proto, test, unit, med) in enumerate(dat):
        f = os.path.join(tmp, "%d.dat" % i)
        with open(f, "w") as o:
            # gnuplot draws no histogram without a point: a failed
            # transport is a bar of 0, and the title says so
            o.write("x %s\n" % " ".join(
                "0" if m is None else "%g" % m for m in med))
        name = dict((p, (a, b)) for p, a, b in PROTOS)[proto]
        desc = dict((t, d) for t, d, _ in TESTS)[test]
        miss = [t for t, m in zip(("kiwi", "siw", "TCP"), med) if m is None]
        gp.append("set title '%s / %s: %s%s'" % (
            name[0], name[1], desc.replace("sequential", "seq."),
            " (none: %s)" % ", ".join(miss) if miss else ""))
        gp.append("set ylabel '%s'" % unit)
        gp.append("plot '%s' u 2 t 'kiwi', '' u 3 t 'siw', "
                  "'' u 4 t 'TCP'" % f)
    gp.append("unset multiplot")
    script = os.path.join(tmp, "storage.gp")
    with open(script, "w") as o:
        o.write("\n".join(gp) + "\n")
    r = subprocess.run(["gnuplot", script], capture_output=True, text=True)
    if r.returncode:
        print("gnuplot failed: %s" % r.stderr.strip(), file=sys.stderr)
    else:
        print("plot written to %s" % png)

if dodoc != "1":
    sys.exit(0)
date = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
doc_section(docpath, "storage", """Latest run: %s, kiwi at %s, guest kernel %s (slub_debug %s),
host CPU %s (host load average %s when it ended).
QEMU TCG (no KVM), 2 vCPUs shared by initiator and target: absolute
numbers are those of an emulator; only the ratios, from alternating runs
in one boot, mean anything.  %s rounds per transport, %s s per fio run
after a %s s ramp; raw values per run in the last column (CSV and PNG in
tests/bench/out/).

%s""" % (date, rev, kernel, slub, cpu, load, runs, runtime, ramp, table))
