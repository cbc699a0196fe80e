#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Report of tests/bench/nvmeof.sh: medians per provider and test, the
# ratio kiwi/siw, and the table between the nvmeof-results markers of
# Documentation/benchmarks.md.
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

lines = ["| test | kiwi median | siw median | kiwi/siw | kiwi runs | siw runs |",
         "|---|---:|---:|---:|---|---|"]
for test, desc, unit in TESTS:
    k, kf = values(rows, test=test, provider="kiwi")
    s, sf = values(rows, test=test, provider="siw")
    km, sm = median(k), median(s)
    ratio = "%.2f" % (km / sm) if km and sm else "n/a"
    lines.append("| %s (%s) | %s | %s | %s | %s | %s |" % (
        desc, unit, fmt(unit, km), fmt(unit, sm), ratio,
        runs_txt(unit, k, kf), runs_txt(unit, s, sf)))
table = "\n".join(lines)
print(table)
if dodoc != "1":
    sys.exit(0)
date = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
doc_section(docpath, "nvmeof", """Latest run: %s, kiwi at %s, guest kernel %s, host CPU %s
(host load average %s when it ended).
QEMU TCG (no KVM), 2 vCPUs shared by host and target: absolute numbers
are those of an emulator; only the ratio, from alternating runs in one
boot, means anything.  %s rounds per provider, %s s per fio run after a
2 s ramp; raw values per run in the last two columns (CSV in
tests/bench/out/).

%s""" % (date, rev, kernel, cpu, load, runs, runtime, table))
