#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Medians, ratios, table, plot and summary of a tests/bench/perftest.sh run.

    perftest-report.py [--doc BENCHMARKS_MD --doc-png PNG] RUN.csv

RUN.csv has one row per measurement (round,config,test,size,value,unit;
value "fail" for a run that failed, "clock" for one whose perftest clock
calibration failed) and RUN.csv.meta '# key value' lines.
Prints the table of medians with the ratios kiwi/siw (CRC off and on) and
kiwi/TCP, writes RUN-medians.csv and RUN.png (gnuplot, perftest.gp next to
this script) and, with --doc, replaces the section between the
perftest-shared-results markers of BENCHMARKS_MD (the one-guest table)
and copies the plot to PNG.
Re-running it on an old CSV regenerates everything without a VM.
"""
import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys

from bench_report import doc_section

CONFIGS = ["kiwi", "siw", "kiwi-crc", "siw-crc", "tcp"]
BAD = ("fail", "clock")
# perftest test -> the TCP measurement it is compared with
TESTS = [("write_bw", "ib_write_bw", "tcp_bw"),
         ("send_bw", "ib_send_bw", "tcp_bw"),
         ("read_bw", "ib_read_bw", "tcp_bw"),
         ("write_lat", "ib_write_lat", "tcp_lat")]
TARGETS = [("write_bw", 65536), ("send_bw", 65536), ("read_bw", 65536),
           ("write_lat", 64)]


def size_txt(s):
    if s >= 1048576 and s % 1048576 == 0:
        return "%d MiB" % (s // 1048576)
    if s >= 1024 and s % 1024 == 0:
        return "%d KiB" % (s // 1024)
    return "%d B" % s


def is_lat(test):
    return test.endswith("_lat")


def fmt(v, test):
    if v is None:
        return "-"
    return "%.0f" % v if is_lat(test) or v >= 100 else "%.1f" % v


def load(path):
    rows = list(csv.DictReader(open(path)))
    meta = {}
    if os.path.exists(path + ".meta"):
        for line in open(path + ".meta"):
            m = re.match(r"# (\S+(?: cpus| cpu| load)?) (.*)", line.rstrip())
            if m:
                meta[m.group(1)] = m.group(2)
    return rows, meta


def medians(rows):
    """{(config, test, size): (median or None, ok runs, all runs)}"""
    vals = {}
    for r in rows:
        key = (r["config"], r["test"], int(r["size"]))
        vals.setdefault(key, []).append(r["value"])
    res = {}
    for key, v in vals.items():
        ok = [float(x) for x in v if x not in BAD]
        res[key] = (statistics.median(ok) if ok else None, len(ok), len(v))
    return res


def vcpu_txt(meta):
    """The guest's vCPU threads, as tests/vm/vm-run.sh left them."""
    v = meta.get("vcpu_threads")
    if v == "pinned":
        return " (their threads pinned to one host CPU each)"
    if v == "unpinned":
        return " (their threads not pinned)"
    return ""


def lat_rounds_txt(meta):
    """the latency-only rounds after the full ones, if any"""
    lr, sz = meta.get("lat_runs"), meta.get("lat_extra_size")
    if not lr or not sz or lr == meta.get("runs"):
        return ""
    return " (ib_write_lat and sockperf at %s: %s)" % (size_txt(int(sz)), lr)


def ratio(a, b):
    return a / b if a is not None and b else None


def rtxt(x):
    return "%.2f" % x if x is not None else "-"


def build_table(med, runs):
    sizes = {}
    for (c, t, s) in med:
        sizes.setdefault(t, set()).add(s)
    head = ("| test | size | kiwi | siw | kiwi/siw | kiwi CRC | siw CRC "
            "| kiwi/siw CRC | TCP | kiwi/TCP |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for test, name, tcptest in TESTS:
        unit = "us" if is_lat(test) else "MiB/s"
        for s in sorted(sizes.get(test, ())):
            cell = {}
            for c in CONFIGS:
                m, ok, n = med.get((c, tcptest if c == "tcp" else test, s),
                                   (None, 0, 0))
                txt = fmt(m, test)
                if n and ok < n:
                    txt += " (%d/%d)" % (ok, n)
                cell[c] = (m, txt)
            lines.append("| %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name, unit, size_txt(s), cell["kiwi"][1], cell["siw"][1],
                rtxt(ratio(cell["kiwi"][0], cell["siw"][0])),
                cell["kiwi-crc"][1], cell["siw-crc"][1],
                rtxt(ratio(cell["kiwi-crc"][0], cell["siw-crc"][0])),
                cell["tcp"][1],
                rtxt(ratio(cell["kiwi"][0], cell["tcp"][0]))))
    return "\n".join(lines)


def raw(rows, config, test, size):
    v = [r["value"] for r in rows if r["config"] == config and
         r["test"] == test and int(r["size"]) == size]
    return " ".join(x if x in BAD else "%.4g" % float(x) for x in v)


def paired(rows, a, b, test, size):
    """(median of per-round a/b, rounds a was lower, rounds) or None"""
    by = {}
    for r in rows:
        if (r["test"] == test and int(r["size"]) == size and
                r["config"] in (a, b) and r["value"] not in BAD):
            by.setdefault(r["round"], {})[r["config"]] = float(r["value"])
    rs = [v[a] / v[b] for v in by.values() if a in v and b in v and v[b]]
    if not rs:
        return None
    return (statistics.median(rs), sum(x < 1 for x in rs), len(rs))


def targets(med, rows):
    out = []
    for test, s in TARGETS:
        name = dict((t, n) for t, n, _ in TESTS)[test]
        for crc in ("", "-crc"):
            k = med.get(("kiwi" + crc, test, s), (None,))[0]
            w = med.get(("siw" + crc, test, s), (None,))[0]
            r = ratio(k, w)
            what = "%s %s, CRC %s" % (name, size_txt(s), "on" if crc else "off")
            runs = "runs: kiwi %s; siw %s" % (raw(rows, "kiwi" + crc, test, s),
                                             raw(rows, "siw" + crc, test, s))
            if r is None:
                out.append("- %s: no result (%s)" % (what, runs))
            elif is_lat(test):
                verdict = ("met" if r <= 1.0 else
                           "missed: kiwi %.0f%% slower" % ((r - 1) * 100))
                out.append("- %s: kiwi %.0f us, siw %.0f us, kiwi/siw %.2f "
                           "(target <= 1.00): %s (%s)" % (what, k, w, r,
                                                          verdict, runs))
            else:
                verdict = ("met" if r >= 1.0 else
                           "missed by %.0f%%" % ((1 - r) * 100))
                out.append("- %s: kiwi %.1f MiB/s, siw %.1f MiB/s, kiwi/siw "
                           "%.2f (target >= 1.00): %s (%s)" % (what, k, w, r,
                                                               verdict, runs))
    return "\n".join(out)


def m_of(med, c, t, s):
    return med.get((c, t, s), (None,))[0]


def pct_short(r, want):
    return "met" if r >= want else "missed by %.0f%%" % ((1 - r / want) * 100)


def issue15(med, rows, meta):
    """Issue 15's targets: kiwi against TCP, latency against siw and
    sockperf, -q 8 against -q 1, the receive deferral's A/B."""
    out = []
    for test, name, _ in TESTS[:3]:
        for s, want in ((4096, 0.6), (65536, 0.8), (1048576, 0.8)):
            k = m_of(med, "kiwi", test, s)
            t = m_of(med, "tcp", "tcp_bw", s)
            t1 = m_of(med, "tcp", "tcp_bw_1cpu", s)
            r = ratio(k, t)
            if r is None:
                continue
            out.append("- %s %s, CRC off: kiwi %.1f MiB/s, iperf3 %.1f MiB/s "
                       "(%s on one vCPU), kiwi/TCP %.2f (target >= %.1f): %s"
                       "; kiwi/TCP-one-vCPU %s" % (
                           name, size_txt(s), k, t, fmt(t1, test), r, want,
                           pct_short(r, want), rtxt(ratio(k, t1))))
    k = m_of(med, "kiwi", "write_lat", 64)
    w = m_of(med, "siw", "write_lat", 64)
    t = m_of(med, "tcp", "tcp_lat", 64)
    r = ratio(k, w)
    if r is not None:
        out.append("- ib_write_lat 64 B: kiwi %.1f us, siw %.1f us, kiwi/siw "
                   "%.2f (target <= 0.90): %s; sockperf %s us, kiwi/sockperf "
                   "%s (runs: kiwi %s; siw %s)" % (
                       k, w, r, "met" if r <= 0.9 else
                       "missed: %.0f%% above 0.9 x siw" % ((r / 0.9 - 1) * 100),
                       fmt(t, "write_lat"), rtxt(ratio(k, t)),
                       raw(rows, "kiwi", "write_lat", 64),
                       raw(rows, "siw", "write_lat", 64)))
        # a round's two runs are the closest in time: a slow spell of
        # the host is likelier to hit both than the medians show
        pr = paired(rows, "kiwi", "siw", "write_lat", 64)
        if pr:
            out.append("- ib_write_lat 64 B, round by round: median of the "
                       "kiwi/siw ratios %.2f, kiwi faster in %d of %d "
                       "rounds" % pr)
    cpus = int(meta.get("guest cpus", "2") or 2)
    want = 1.5 if cpus >= 4 else 1.0
    for s in sorted({s for (c, t, s) in med if t == "write_bw_q8"}):
        for c in ("kiwi", "kiwi-inline", "siw"):
            q8 = m_of(med, c, "write_bw_q8", s)
            q1 = m_of(med, c, "write_bw", s)
            r = ratio(q8, q1)
            if r is None:
                continue
            tgt = (" (target >= %.1f on %d vCPUs): %s" % (
                want, cpus, pct_short(r, want))) if c == "kiwi" else ""
            out.append("- %s ib_write_bw %s -q 8: %.1f MiB/s, -q 1 %.1f, "
                       "q8/q1 %.2f%s" % (c, size_txt(s), q8, q1, r, tgt))
        # TCP's own: one iperf3 process, eight connections against one
        p8 = m_of(med, "tcp", "tcp_bw_p8", s)
        p1 = m_of(med, "tcp", "tcp_bw", s)
        r = ratio(p8, p1)
        if r is not None:
            out.append("- tcp iperf3 %s -P 8: %.1f MiB/s, -P 1 %.1f, P8/P1 "
                       "%.2f" % (size_txt(s), p8, p1, r))
    for test, name, _ in TESTS[:3] + [("write_bw_q8", "ib_write_bw -q 8",
                                        None)]:
        for s in sorted({s for (c, t, s) in med
                         if c == "kiwi-inline" and t == test}):
            k = m_of(med, "kiwi", test, s)
            i = m_of(med, "kiwi-inline", test, s)
            if ratio(k, i) is not None:
                out.append("- rx_defer A/B, %s %s: kiwi %.1f MiB/s, "
                           "rx_defer=0 %.1f MiB/s, %.2f x" % (
                               name, size_txt(s), k, i, ratio(k, i)))
    clocks = sum(1 for r in rows if r["value"] == "clock")
    fails = sum(1 for r in rows if r["value"] == "fail")
    out.append("- runs recorded as perftest clock failures: %d; as failures: "
               "%d (of %d)" % (clocks, fails, len(rows)))
    return "\n".join(out)


def plot(med, base, png):
    here = os.path.dirname(os.path.abspath(__file__))
    files = {}
    for test, _, tcptest in TESTS:
        sizes = sorted({s for (c, t, s) in med if t == test})
        if not sizes:
            continue
        path = "%s-%s.dat" % (base, test)
        with open(path, "w") as f:
            f.write("# size " + " ".join(CONFIGS) + "\n")
            for s in sizes:
                v = []
                for c in CONFIGS:
                    m = med.get((c, tcptest if c == "tcp" else test, s),
                                (None,))[0]
                    v.append("%g" % m if m is not None else "NaN")
                f.write("%d %s\n" % (s, " ".join(v)))
        files[test] = path
    if len(files) != len(TESTS):
        print("plot: some tests have no data, no plot", file=sys.stderr)
        return False
    cmd = ["gnuplot", "-e", "outfile='%s'; %s" % (png, "; ".join(
        "%s='%s'" % (t, p) for t, p in files.items())),
        os.path.join(here, "perftest.gp")]
    if subprocess.call(cmd) != 0:
        print("plot: gnuplot failed", file=sys.stderr)
        return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc")
    ap.add_argument("--doc-png")
    ap.add_argument("csv")
    a = ap.parse_args()
    rows, meta = load(a.csv)
    med = medians(rows)
    runs = meta.get("runs", "?")
    table = build_table(med, runs)
    tg = targets(med, rows)
    i15 = issue15(med, rows, meta)
    base = a.csv[:-4] if a.csv.endswith(".csv") else a.csv
    with open(base + "-medians.csv", "w") as f:
        f.write("config,test,size,median,ok_runs,runs\n")
        for (c, t, s), (m, ok, n) in sorted(med.items()):
            f.write("%s,%s,%d,%s,%d,%d\n" % (c, t, s,
                    "%g" % m if m is not None else "fail", ok, n))
    print(table)
    print()
    print("Targets (medians):")
    print(tg)
    print()
    print("Issue 15 (medians):")
    print(i15)
    png = base + ".png"
    have_png = plot(med, base, png)
    if have_png:
        print("plot: %s" % png)
    print("CSV: %s, %s-medians.csv" % (a.csv, base))
    if not a.doc:
        return 0
    doc_section(a.doc, "perftest-shared", """Latest run: %s, kiwi at %s, guest kernel %s (debug options: %s), perftest %s, host CPU %s
(host load average %s).
QEMU TCG (no KVM), 2 vCPUs shared by client and server%s: absolute numbers
are an emulator's; only ratios from alternating runs in one boot mean
anything.  Medians of %s rounds%s; "(k/n)" marks a median of k good runs
out of n.  Bandwidth in MiB/s (perftest BW average, iperf3), latency in
microseconds (perftest t_typical, sockperf median; both half a round
trip).  kiwi/TCP compares kiwi with CRC off.  Sizes: %s.

%s

Targets:

%s

Issue 15's targets (kiwi CRC off; TCP one vCPU: iperf3 client and server
pinned to the same vCPU; rx_defer=0: kiwi-inline, every arrival placed in
the softirq and, with rresp_defer=0, every Read answered from there):

%s""" % (
        meta.get("date", "?"), meta.get("kiwi", "?"), meta.get("kernel", "?"),
        meta.get("debug", "slub_debug=FZPU panic_on_warn=1"),
        meta.get("perftest", "?"), meta.get("host cpu", "?"),
        meta.get("host load", "?"), vcpu_txt(meta), runs, lat_rounds_txt(meta),
        meta.get("matrix", "?"), table, tg, i15))
    if a.doc_png and have_png:
        if os.path.getsize(png) > 200 * 1024:
            print("plot larger than 200 KB, not copied to %s" % a.doc_png,
                  file=sys.stderr)
        else:
            shutil.copyfile(png, a.doc_png)
            print("plot copied to %s" % a.doc_png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
