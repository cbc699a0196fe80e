#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The report of a tests/bench/nvmeof-wire.sh run: fio's figures, CPU
per I/O from the host's count of both vCPU threads, and per-round ratios
kiwi/NVMe-TCP and kiwi/siw with a bootstrap 95 % interval.

    nvmeof-wire-report.py [--doc BENCHMARKS_MD] RUN_DIR

RUN_DIR holds meta, load, and per boot boot-N/ with each guest's rows
(A.runs, B.runs), fio's JSON of each run (A.fio-ID.json), the mark files
(ROLE.clk-ID) and the host's samples of the vCPU threads (host.cpu:
wire-hostcpu.py).  Writes RUN_DIR/runs.csv (every run's figures) and
prints the tables; with --doc, replaces the nvmeof-wire-results section
of BENCHMARKS_MD.  The clock mapping, the host's CPU samples, the
bootstrap and the run's header are wire-report.py's.  Python's standard
library only.
"""
import argparse
import csv
import glob
import importlib
import json
import os
import statistics
import sys

from bench_report import doc_section

wr = importlib.import_module("wire-report")

MIB = 1 << 20
MIN_SPAN = 1.0
CONFIGS = ("kiwi", "siw", "tcp")
# name, what, unit of the figure
TESTS = [("rand4k-read", "4 KiB random read, iodepth 32", "IOPS"),
         ("seq128k-read", "128 KiB sequential read, iodepth 16", "MiB/s"),
         ("seq128k-write", "128 KiB sequential write, iodepth 16", "MiB/s")]
UNIT = {t: u for t, _, u in TESTS}
# the targets (kiwi over NVMe/TCP, per round): test, field, kind,
# target; "ge": met when the interval's lower end >= target, "le": when
# its upper end <= target
TARGETS = [("rand4k-read", "value", "ge", 1.0),
           ("rand4k-read", "cpu", "le", 1.0),
           ("seq128k-read", "value", "ge", 1.0),
           ("seq128k-write", "value", "ge", 1.0)]


def fio_side(path, test):
    """fio's JSON of one run: (its read or write side, the end of the
    run in epoch seconds of the guest's clock), None if unreadable or
    the job failed"""
    try:
        j = json.load(open(path))
    except (OSError, ValueError):
        return None
    job = j["jobs"][0]
    if job.get("error"):
        return None
    return job["write" if test.endswith("write") else "read"], \
        j["timestamp_ms"] / 1000.0


def analyse(run_dir):
    out = []
    for bd in sorted(glob.glob(os.path.join(run_dir, "boot-*")),
                     key=lambda p: int(p.rsplit("-", 1)[1])):
        rows = {g: wr.read_rows(os.path.join(bd, g + ".runs")) for g in "AB"}
        clk = wr.load_clock(bd, "A")
        hc = wr.load_hostcpu(os.path.join(bd, "host.cpu"))
        for ra in rows["A"]:
            key = (ra["boot"], ra["round"], ra["config"], ra["test"])
            rb = [r for r in rows["B"]
                  if (r["boot"], r["round"], r["config"], r["test"]) == key]
            res = {"boot": int(ra["boot"]), "round": int(ra["round"]),
                   "config": ra["config"], "test": ra["test"],
                   "value": None, "span": None, "cpu": None,
                   "cpu_a": None, "cpu_b": None, "wire": None, "why": ""}
            out.append(res)
            if ra["status"] != "ok":
                res["why"] = "failed"
                continue
            rid = "b%s-r%s-%s-%s" % key
            f = fio_side(os.path.join(bd, "A.fio-%s.json" % rid), ra["test"])
            if f is None:
                res["why"] = "no fio result"
                continue
            side, end = f
            span = side["runtime"] / 1000.0
            ios = side["total_ios"]
            res["span"] = span
            if span < MIN_SPAN or ios <= 0:
                res["why"] = "short"
                continue
            res["value"] = (side["iops"] if UNIT[ra["test"]] == "IOPS"
                            else side["bw_bytes"] / MIB)
            # the receiver's NIC over the whole fio run (ramp included)
            # against the bytes fio counted: over 1 when the data
            # crossed the wire
            recv = None
            if ra["test"].endswith("write"):
                if rb and rb[-1]["rx"]:
                    recv = int(rb[-1]["rx"])
            elif ra["rx"]:
                recv = int(ra["rx"])
            if recv is not None and side["io_bytes"] > 0:
                res["wire"] = recv / side["io_bytes"]
            # fio's counted span on the host's clock: it ends at fio's
            # end (timestamp_ms), the guest's clock mapped by the mark
            # of the run's start
            h = clk.get(ra["t0"])
            if h is None:
                res["why"] = "no clock mark"
                continue
            h1 = end + h - float(ra["t0"])
            h0 = h1 - span
            cpu = {}
            for g in "AB":
                t0 = wr.host_ticks(hc, g, h0)
                t1 = wr.host_ticks(hc, g, h1)
                if t0 is None or t1 is None:
                    break
                cpu[g] = (t1 - t0) / wr.HOST_HZ / ios * 1e6
            if len(cpu) == 2:
                res["cpu_a"], res["cpu_b"] = cpu["A"], cpu["B"]
                res["cpu"] = cpu["A"] + cpu["B"]
    return out


def val(runs, config, test):
    return {(r["boot"], r["round"]): r for r in runs
            if r["config"] == config and r["test"] == test and
            r["value"] is not None}


def med(runs, config, test, field):
    v = [r[field] for r in val(runs, config, test).values()
         if r[field] is not None]
    return statistics.median(v) if v else None


def ratios(num, den, field):
    return [num[k][field] / den[k][field] for k in sorted(set(num) & set(den))
            if num[k][field] is not None and den[k][field]]


def fmt(x, nd=0):
    return "-" if x is None else ("%%.%df" % nd) % x


def build(runs):
    lines = ["| test | kiwi | CPU | siw | CPU | NVMe/TCP | CPU |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for t, what, unit in TESTS:
        cells = []
        for c in CONFIGS:
            v = med(runs, c, t, "value")
            cells += [fmt(v, 0 if unit == "IOPS" else 1),
                      fmt(med(runs, c, t, "cpu"))]
        lines.append("| %s (%s; CPU us per I/O) | %s |" % (
            what, unit, " | ".join(cells)))
    table1 = "\n".join(lines)

    lines = ["| ratio (per round) | rounds | geometric mean [95 % interval] "
             "| target | |", "|---|---:|---:|---:|---|"]
    verdicts = []

    def row(label, rs, target=None, kind=""):
        tg = ""
        if kind == "ge":
            tg = ">= %.2f (interval)" % target
        elif kind == "le":
            tg = "<= %.2f (interval)" % target
        if not rs:
            lines.append("| %s | 0 | - | %s | no data |" % (label, tg))
            if kind:
                verdicts.append((label, "no data"))
            return
        g, lo, hi = wr.bootstrap(rs)
        v = ""
        if kind == "ge":
            v = "met" if lo >= target else "not met"
        elif kind == "le":
            v = "met" if hi <= target else "not met"
        lines.append("| %s | %d | %.2f [%.2f, %.2f] | %s | %s |" % (
            label, len(rs), g, lo, hi, tg, v))
        if v:
            verdicts.append((label, v))

    tgt = {(t, f): (k, x) for t, f, k, x in TARGETS}
    for other, oname in (("tcp", "NVMe/TCP"), ("siw", "siw")):
        for t, what, unit in TESTS:
            for field, fname in (("value", unit), ("cpu", "CPU per I/O")):
                k, x = tgt.get((t, field), ("", None)) if other == "tcp" \
                    else ("", None)
                row("kiwi/%s, %s, %s" % (oname, what, fname),
                    ratios(val(runs, "kiwi", t), val(runs, other, t), field),
                    x, k)
    table2 = "\n".join(lines)

    why = {}
    for r in runs:
        if r["value"] is None:
            why[r["why"]] = why.get(r["why"], 0) + 1
    notes = "runs: %d, of them left out: %s" % (
        len(runs), ", ".join("%d %s" % (n, w) for w, n in sorted(why.items()))
        or "none")
    spans = [r["span"] for r in runs if r["value"] is not None]
    if spans:
        notes += "; fio's counted span %.1f-%.1f s" % (min(spans), max(spans))
    nocpu = sum(1 for r in runs if r["value"] is not None and r["cpu"] is None)
    if nocpu:
        notes += "; %d runs without a host CPU figure" % nocpu
    ws = [r["wire"] for r in runs if r["wire"] is not None]
    if ws:
        notes += ("; the receiver's NIC bytes over the whole fio run (ramp "
                  "included) / the bytes fio counted: %.2f-%.2f"
                  % (min(ws), max(ws)))
    return table1, table2, notes, verdicts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc")
    ap.add_argument("run_dir")
    a = ap.parse_args()
    runs = analyse(a.run_dir)
    meta = wr.read_meta(a.run_dir)
    rt = {}
    for line in open(os.path.join(a.run_dir, "meta")):
        f = line.split()
        if len(f) == 3 and f[1] in ("runtime", "ramp"):
            rt[f[1]] = f[2]
    with open(os.path.join(a.run_dir, "runs.csv"), "w") as f:
        w = csv.writer(f)
        w.writerow(["boot", "round", "config", "test", "value", "span_s",
                    "cpu_us_per_io", "cpu_a", "cpu_b", "wire_over_fio",
                    "left_out"])
        for r in runs:
            w.writerow([r["boot"], r["round"], r["config"], r["test"],
                        fmt(r["value"], 2), fmt(r["span"], 2),
                        fmt(r["cpu"], 1), fmt(r["cpu_a"], 1),
                        fmt(r["cpu_b"], 1), fmt(r["wire"], 2), r["why"]])
    t1, t2, notes, verdicts = build(runs)
    g = meta["guest"]
    cmdline = g.get("cmdline", "")
    debug = [o for o in ("slub_debug", "panic_on_warn") if o in cmdline]
    pins = ", ".join("%s %s on host CPU %s" % (p[0], " ".join(p[1:3]), p[-1])
                     for p in meta["pins"][:2])
    head = ("Run of %s to %s (%s), %d boots x %s rounds, fio %s s after a "
            "%s s ramp; kiwi %s; guests: kernel %s, %s vCPU each%s, %s; %s, "
            "%s; host CPU %s; %s."
            % (meta.get("start", "?"), meta.get("end", "?"),
               meta.get("duration", "?"),
               len({r["boot"] for r in runs if r["value"] is not None}),
               meta.get("runs", "?"), rt.get("runtime", "?"),
               rt.get("ramp", "?"), meta.get("kiwi", "?"),
               g.get("kernel", "?"), g.get("cpus", "?"),
               " (" + pins + ")" if pins else "",
               "debug options: " + ", ".join(debug) if debug else
               "no slub_debug, no panic_on_warn",
               g.get("fio", "?"), g.get("nvme-cli", "?"),
               meta.get("host cpu", "?"), wr.host_txt(meta)))
    loads = meta["loads"]
    busy = (float(meta.get("host load at start", "0").split()[0]) >= 1.5 or
            any(q > 2 for _, q in loads))
    if busy:
        head = ("**Not of record: the host was not quiet** (other guests "
                "ran beside the bench's two, or the load was 1.5 or more).  "
                + head)
    print(head)
    print()
    print(t1)
    print()
    print(t2)
    print()
    print(notes)
    print("CSV: %s" % os.path.join(a.run_dir, "runs.csv"))
    if a.doc:
        doc_section(a.doc, "nvmeof-wire", """%s

Medians over all rounds: fio's IOPS or MiB/s on A; CPU is both vCPU
threads' time as the host counted it over fio's counted span, in
microseconds per I/O (a 4 KiB or a 128 KiB one):

%s

Per-round ratios, each round's runs paired (geometric mean, percentile
bootstrap over the rounds' ratios, seed %d, %d resamples); a target is
met only when the interval clears it:

%s

%s.""" % (head, t1, wr.SEED, wr.RESAMPLES, t2,
          notes[0].upper() + notes[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
