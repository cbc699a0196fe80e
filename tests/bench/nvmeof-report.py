#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Report of tests/bench/nvmeof.sh: medians per provider and test, the
# ratios kiwi/TCP (NVMe/TCP; target >= 1.0) and kiwi/siw, and the table
# between the nvmeof-results markers of Documentation/benchmarks.md.  A
# CSV without tcp rows (runs before NVMe/TCP was measured) gives n/a.
#
#   nvmeof-report.py CSV DOC DODOC CPU KERNEL RUNS RUNTIME REV LOAD

import csv
import datetime
import sys

from bench_report import doc_section, fmt, median, runs_txt, values

path, docpath, dodoc, cpu, kernel, runs, runtime, rev, load = sys.argv[1:]
rows = list(csv.DictReader(open(path)))
TESTS = [("rand4k", "4 KiB random read", "IOPS"),
         ("seq128k", "128 KiB sequential read", "MiB/s")]



def ratio(a, b):
    return a / b if a and b else None


lines = ["| test | kiwi median | siw median | NVMe/TCP median | kiwi/TCP "
         "(target >= 1.0) | kiwi/siw | kiwi runs | siw runs | TCP runs |",
         "|---|---:|---:|---:|---:|---:|---|---|---|"]
for test, desc, unit in TESTS:
    k, kf = values(rows, test=test, provider="kiwi")
    s, sf = values(rows, test=test, provider="siw")
    t, tf = values(rows, test=test, provider="tcp")
    km, sm, tm = median(k), median(s), median(t)
    kt = ratio(km, tm)
    kt_txt = ("%.2f %s" % (kt, "met" if kt >= 1.0 else "**not met** (%.0f%% short)"
                           % ((1 - kt) * 100)) if kt is not None else "n/a")
    ks = ratio(km, sm)
    lines.append("| %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        desc, unit, fmt(unit, km), fmt(unit, sm),
        fmt(unit, tm) if t or tf else "-", kt_txt,
        "%.2f" % ks if ks is not None else "n/a",
        runs_txt(unit, k, kf), runs_txt(unit, s, sf), runs_txt(unit, t, tf)))
table = "\n".join(lines)
print(table)
if dodoc != "1":
    sys.exit(0)
date = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
doc_section(docpath, "nvmeof", """Latest run: %s, kiwi at %s, guest kernel %s, host CPU %s
(host load average %s when it ended).
QEMU TCG (no KVM), 2 vCPUs shared by host and target: absolute numbers
are those of an emulator; only the ratios, from alternating runs in one
boot, mean anything.  %s rounds per provider, %s s per fio run after a
2 s ramp; raw values per run in the last three columns (CSV in
tests/bench/out/).

%s""" % (date, rev, kernel, cpu, load, runs, runtime, table))
