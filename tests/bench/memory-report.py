#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Report of tests/bench/memory.sh: medians per configuration of the slab
# and vmalloc cost of an idle connected QP (an idle TCP socket for tcp),
# and of the kernel bytes per registered page; the table goes between the
# memory-results markers of Documentation/benchmarks.md.
#
#   memory-report.py CSV DOC DODOC KERNEL RUNS REV SMALL LARGE MR_MIB

import csv
import datetime
import sys

from bench_report import doc_section, median, values

path, docpath, dodoc, kernel, runs, rev, small, large, mr_mib = sys.argv[1:]
rows = list(csv.DictReader(open(path)))
CONFIGS = [("kiwi", "kiwi"), ("siw", "siw"), ("tcp", "TCP socket (no RDMA)")]
TESTS = [("slab_per_qp", "slab per QP (KiB)"),
         ("unreclaim_per_qp", "of which unreclaimable (KiB)"),
         ("vmalloc_per_qp", "vmalloc per QP: mapped rings (KiB)"),
         ("bytes_per_page", "kernel bytes per registered page")]


def cell(test, config):
    v, failed = values(rows, test=test, config=config)
    if not v and not failed:
        return "-", ""
    m = median(v)
    txt = "%.1f" % m if m is not None else "failed"
    runs_ = " ".join("%.1f" % x for x in v)
    if failed:
        runs_ += " (%d failed)" % failed
    return txt, runs_


lines = ["| figure | " + " | ".join(n for _, n in CONFIGS) + " | runs (" +
         ", ".join(c for c, _ in CONFIGS) + ") |",
         "|---|" + "---:|" * len(CONFIGS) + "---|"]
for test, desc in TESTS:
    cells = [cell(test, c) for c, _ in CONFIGS]
    lines.append("| %s | %s | %s |" % (
        desc, " | ".join(c[0] for c in cells),
        "; ".join(c[1] or "-" for c in cells)))
kq, _ = values(rows, test="slab_per_qp", config="kiwi")
km = median(kq)
verdict = ("kiwi's slab per QP %.1f KiB: target (at most 16 KiB beyond its "
           "rings) %s" % (km, "met" if km <= 16 else "**not met**")
           if km is not None else "kiwi's slab per QP: no figure")
table = "\n".join(lines)
print(table)
print(verdict)
if dodoc != "1":
    sys.exit(0)
date = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
doc_section(docpath, "memory", """Latest run: %s, kiwi at %s, guest kernel %s,
booted without slub_debug.  %s rounds; per QP = growth from %s to %s
connections (both ends in the guest) / (2 x %d); per page: one MR of %s
MiB.

%s

%s.""" % (date, rev, kernel, runs, small, large, int(large) - int(small),
          mr_mib, table, verdict))
