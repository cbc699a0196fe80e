#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The report of a tests/bench/perftest-wire.sh run: figures counted at
the receiver, CPU time per GiB or per operation, and per-round ratios
with a bootstrap 95 % interval.

    wire-report.py [--doc BENCHMARKS_MD] RUN_DIR

RUN_DIR holds meta, and per boot boot-N/ with each guest's rows (A.runs,
B.runs), samples (A.samples, B.samples: wire-sampler.py) and meta.
Writes RUN_DIR/runs.csv (every run's figures) and prints the tables;
with --doc, replaces the perftest-results section of BENCHMARKS_MD.
Python's standard library only.
"""
import argparse
import csv
import glob
import math
import os
import random
import re
import statistics
import sys

from bench_report import doc_section

GIB = 1 << 30
MIB = 1 << 20
# a transfer is the intervals whose rate is at least this share of the
# run's peak: connection setup and perftest's own exchanges stay below it
ACTIVE = 0.25
MIN_SPAN = 1.0
HOST_HZ = os.sysconf("SC_CLK_TCK")
SEED = 40
RESAMPLES = 10000

BW_TESTS = [("write_bw", "ib_write_bw"), ("send_bw", "ib_send_bw"),
            ("read_bw", "ib_read_bw")]


def size_txt(s):
    if s >= MIB and s % MIB == 0:
        return "%d MiB" % (s // MIB)
    if s >= 1024 and s % 1024 == 0:
        return "%d KiB" % (s // 1024)
    return "%d B" % s


def load_samples(path):
    t, rx, tx, busy = [], [], [], []
    if not os.path.exists(path):
        return None
    for line in open(path):
        f = line.split()
        if len(f) != 5:
            continue
        t.append(float(f[0]))
        rx.append(int(f[1]))
        tx.append(int(f[2]))
        busy.append(int(f[3]))
    return {"t": t, "rx": rx, "tx": tx, "busy": busy}


def window(smp, t0, t1, col):
    """The transfer inside [t0, t1] on counter col: (bytes, seconds, busy
    ticks) of the intervals strictly inside it (the first and last active
    ones hold its start and end at unknown points), and the counter's
    growth over the whole run; None if the run is not in the samples."""
    t = smp["t"]
    # samples closer than half an interval to the one before (a sampler
    # catching up after a stall) say nothing about a rate
    idx = []
    for i in range(len(t)):
        if t0 - 0.1 <= t[i] <= t1 + 0.1 and (not idx or t[i] - t[idx[-1]] >= 0.05):
            idx.append(i)
    smp = {k: [smp[k][i] for i in idx] for k in smp}
    t = smp["t"]
    idx = list(range(len(t)))
    if len(idx) < 4:
        return None
    c = smp[col]
    b = smp["busy"]
    lo, hi = idx[0], idx[-1]
    rates = [(c[i + 1] - c[i]) / (t[i + 1] - t[i]) for i in range(lo, hi)]
    peak = max(rates)
    if peak <= 0:
        return None
    # from the first active interval to the last: the pauses between
    # (the host, TCG, the peer) are part of the transfer; connection
    # set-up moves too little to count as active
    act = [lo + k for k, r in enumerate(rates) if r >= ACTIVE * peak]
    a, z = act[0], act[-1]
    total = c[hi] - c[lo]
    if z - a < 2:
        return (0, 0.0, 0, total, t[lo], t[lo])
    return (c[z] - c[a + 1], t[z] - t[a + 1], b[z] - b[a + 1], total,
            t[a + 1], t[z])


def load_clock(bd, g):
    """{guest time as written: host time}: the mark files of guest g
    (perftest-wire.sh's mark), whose modification time is the host's"""
    res = {}
    for p in glob.glob(os.path.join(bd, g + ".clk-*")):
        try:
            res[open(p).read().strip()] = os.stat(p).st_mtime_ns / 1e9
        except OSError:
            pass
    return res


def load_hostcpu(path):
    """[(host time, {guest: ticks})] of wire-hostcpu.py"""
    res = []
    if not os.path.exists(path):
        return res
    for line in open(path):
        f = line.split()
        if len(f) >= 3 and len(f) % 2 == 1:
            res.append((float(f[0]), {f[i]: int(f[i + 1])
                                      for i in range(1, len(f), 2)}))
    return res


def host_ticks(hc, g, t):
    """guest g's vCPU thread's ticks at host time t, interpolated"""
    for i in range(1, len(hc)):
        if hc[i][0] >= t:
            t0, v0 = hc[i - 1][0], hc[i - 1][1][g]
            t1, v1 = hc[i][0], hc[i][1][g]
            if hc[i - 1][0] > t:
                return None
            return v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    return None


def directions(test):
    """the counter that carries the data, per guest"""
    if test == "read_bw":
        return {"A": "rx", "B": "tx"}
    if test.endswith("_lat"):
        return {"A": "rx", "B": "rx"}
    return {"A": "tx", "B": "rx"}


def read_rows(path):
    if not os.path.exists(path):
        return []
    return list(csv.DictReader(open(path)))


def analyse(run_dir):
    """One dict per good run of the client (A): figure of record, the
    tool's own, span, CPU per GiB or per operation."""
    out = []
    for bd in sorted(glob.glob(os.path.join(run_dir, "boot-*")),
                     key=lambda p: int(p.rsplit("-", 1)[1])):
        rows = {g: read_rows(os.path.join(bd, g + ".runs")) for g in "AB"}
        smp = {g: load_samples(os.path.join(bd, g + ".samples")) for g in "AB"}
        hz = 100
        clk = {g: load_clock(bd, g) for g in "AB"}
        hc = load_hostcpu(os.path.join(bd, "host.cpu"))
        m = os.path.join(bd, "A.meta")
        if os.path.exists(m):
            for line in open(m):
                if line.startswith("user_hz "):
                    hz = int(line.split()[1])
        for ra in rows["A"]:
            if ra["status"] == "cal":
                continue
            key = (ra["boot"], ra["round"], ra["config"], ra["test"],
                   ra["size"])
            rb = [r for r in rows["B"] if (r["boot"], r["round"], r["config"],
                                           r["test"], r["size"]) == key and
                  r["status"] != "cal"]
            res = {"boot": int(ra["boot"]), "round": int(ra["round"]),
                   "config": ra["config"], "test": ra["test"],
                   "size": int(ra["size"]), "tool": ra["value"],
                   "value": None, "span": None, "cpu": None, "nic": None,
                   "gcpu": None, "scpu": None,
                   "why": ""}
            out.append(res)
            if ra["status"] != "ok" or not rb or rb[-1]["status"] != "ok":
                res["why"] = "failed"
                continue
            rb = rb[-1]
            test = ra["test"]
            if test == "cm_cycle":
                cycle_figures(res, ra, rb, clk, hc)
                continue
            lat = test.endswith("_lat")
            iperf = test.startswith("iperf3")
            if iperf:
                sent, recvd = (int(x) for x in ra["iters"].split(":"))
                payload = {"A": sent, "B": recvd}
            else:
                n = int(ra["iters"])
                payload = {"A": n * res["size"], "B": n * res["size"]}
            w = {}
            for g, col in directions(test).items():
                r = rb if g == "B" else ra
                if smp[g] is None:
                    continue
                w[g] = window(smp[g], float(r["t0"]), float(r["t1"]), col)
            if len(w) < 2 or None in w.values():
                res["why"] = "no samples"
                continue
            recv = "A" if test in ("read_bw", "write_lat") else "B"
            nb, dt, _, tot = w[recv][:4]
            res["span"] = dt
            if dt < MIN_SPAN or tot <= 0:
                res["why"] = "short"
                continue
            # receiver's bytes, as payload: the run's payload over all it
            # received (frame, IP, TCP, MPA and DDP headers, set-up)
            nic = nb * payload[recv] / tot / dt / MIB
            res["nic"] = nic
            if lat:
                res["value"] = float(ra["value"]) if ra["value"] else None
                if res["value"] is None:
                    res["why"] = "no t_typical"
            elif iperf:
                res["value"] = float(ra["value"])
            else:
                res["value"] = nic
            # CPU per GiB (per operation): each guest's over its own
            # span of the transfer, as the host counted its vCPU thread
            # (cpu) and as the guest counted itself (gcpu)
            cpu, gcpu = 0.0, 0.0
            # the side whose payload leaves it: the Read's responder
            sender = "B" if test == "read_bw" else "A"
            for g in "AB":
                gb, gdt, busy, gtot, ts, te = w[g]
                r = rb if g == "B" else ra
                off = clk[g].get(r["t0"])
                h0 = h1 = None
                if off is not None:
                    off -= float(r["t0"])
                    h0 = host_ticks(hc, g, ts + off)
                    h1 = host_ticks(hc, g, te + off)
                if gdt <= 0 or gtot <= 0 or gb <= 0:
                    cpu = gcpu = None
                    break
                per = (int(ra["iters"]) * gb / gtot / 1e6 if lat else
                       gb * payload[g] / gtot / GIB)
                gcpu += busy / hz / per
                if cpu is not None and h0 is not None and h1 is not None:
                    cpu += (h1 - h0) / HOST_HZ / per
                    if g == sender and not lat:
                        res["scpu"] = (h1 - h0) / HOST_HZ / per
                else:
                    cpu = None
            res["cpu"] = cpu
            res["gcpu"] = gcpu
    return out


def cycle_figures(res, ra, rb, clk, hc):
    """A connection-rate run: A's connections per second (cm-cycle's or
    tcp-cycle's own count and clock), and both vCPU threads' CPU time
    over each guest's run, in ms per connection"""
    res["value"] = float(ra["value"]) if ra["value"] else None
    if res["value"] is None:
        res["why"] = "no rate"
        return
    n = int(ra["iters"])
    cpu = 0.0
    for g, r in (("A", ra), ("B", rb)):
        off = clk[g].get(r["t0"])
        end = clk[g].get(r["t1"])
        h0 = host_ticks(hc, g, off) if off is not None else None
        h1 = host_ticks(hc, g, end) if end is not None else None
        if h0 is None or h1 is None:
            return
        cpu += (h1 - h0) / HOST_HZ / n * 1000
    res["cpu"] = cpu


def gmean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


def bootstrap(v):
    """geometric mean of v and its percentile-bootstrap 95 % interval"""
    rnd = random.Random(SEED)
    n = len(v)
    est = sorted(gmean([v[rnd.randrange(n)] for _ in range(n)])
                 for _ in range(RESAMPLES))
    return gmean(v), est[int(0.025 * RESAMPLES)], est[int(0.975 * RESAMPLES) - 1]


def val(runs, config, test, size=None):
    return {(r["boot"], r["round"]): r for r in runs
            if r["config"] == config and r["test"] == test and
            (size is None or r["size"] == size) and r["value"] is not None}


def med(runs, config, test, size, field):
    v = [r[field] for r in val(runs, config, test, size).values()
         if r[field] is not None]
    return (statistics.median(v), len(v)) if v else (None, 0)


def ratios(num, den, field="value"):
    keys = sorted(set(num) & set(den))
    return [num[k][field] / den[k][field] for k in keys
            if num[k][field] is not None and den[k][field]]


def fmt(x, nd=0):
    if x is None:
        return "-"
    return ("%%.%df" % nd) % x


def build(runs, meta):
    lines = []
    n_all = len({(r["boot"], r["round"]) for r in runs})
    # figures: medians over all rounds of all boots
    lines.append("| test | size | kiwi | CPU | siw | CPU | kiwi to siw | CPU |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    sizes = sorted({r["size"] for r in runs if r["test"] == "write_bw"})
    for t, name in BW_TESTS:
        for s in sizes:
            cells = []
            for c in ("kiwi", "siw", "kiwi-siw"):
                v, n = med(runs, c, t, s, "value")
                cpu, _ = med(runs, c, t, s, "cpu")
                cells += [fmt(v, 1), fmt(cpu)] if v is not None else ["", ""]
            lines.append("| %s (MiB/s; CPU s/GiB) | %s | %s |" % (
                name, size_txt(s), " | ".join(cells)))
    for c_lat in [("write_lat", 64)]:
        t, s = c_lat
        cells = []
        for c in ("kiwi", "siw"):
            v, _ = med(runs, c, t, s, "value")
            cpu, _ = med(runs, c, t, s, "cpu")
            cells += [fmt(v, 1), fmt(cpu)]
        lines.append("| ib_write_lat (us; CPU us/op) | 64 B | %s | | |" % " | ".join(cells))
    cells = []
    for c in ("kiwi", "siw"):
        v, _ = med(runs, c, "cm_cycle", 0, "value")
        cpu, _ = med(runs, c, "cm_cycle", 0, "cpu")
        cells += [fmt(v, 1), fmt(cpu, 1)]
    lines.append("| connections (cm-cycle, per s; CPU ms/connection) | - | %s | | |"
                 % " | ".join(cells))
    for name, label in (("iperf3", "iperf3, default write size"),
                        ("iperf3-Z", "iperf3 -Z")):
        v, _ = med(runs, "tcp", name, 0, "value")
        cpu, _ = med(runs, "tcp", name, 0, "cpu")
        lines.append("| %s (MiB/s; CPU s/GiB) | - | %s | %s | | | | |" % (
            label, fmt(v, 1), fmt(cpu)))
    v, _ = med(runs, "tcp", "cm_cycle", 0, "value")
    cpu, _ = med(runs, "tcp", "cm_cycle", 0, "cpu")
    lines.append("| TCP connections (tcp-cycle, per s; CPU ms/connection) | - "
                 "| %s | %s | | | | |" % (fmt(v, 1), fmt(cpu, 1)))
    table1 = "\n".join(lines)

    lines = ["| ratio (per round) | rounds | geometric mean [95 % interval] "
             "| target | |", "|---|---:|---:|---:|---|"]
    verdicts = []

    def row(label, rs, target, kind):
        if not rs:
            lines.append("| %s | 0 | - | %s | no data |" % (label, target or ""))
            return
        g, lo, hi = bootstrap(rs)
        if kind == "ge":
            v = "met" if lo >= target else "not met"
            tg = ">= %.2f" % target
        elif kind == "le":
            v = "met" if g <= target and hi < 1.0 else "not met"
            tg = "<= %.2f, upper < 1.00" % target
        elif kind == "le-all":
            v = "met" if hi <= target else "not met"
            tg = "<= %.2f (interval)" % target
        else:
            v, tg = "", ""
        lines.append("| %s | %d | %.2f [%.2f, %.2f] | %s | %s |" % (
            label, len(rs), g, lo, hi, tg, v))
        if v:
            verdicts.append((label, v))

    ip = val(runs, "tcp", "iperf3", 0)
    ipz = val(runs, "tcp", "iperf3-Z", 0)
    for t, name in BW_TESTS:
        for s in sizes:
            k = val(runs, "kiwi", t, s)
            row("kiwi/iperf3, %s %s" % (name, size_txt(s)), ratios(k, ip),
                0.9, "ge")
    for t, name in BW_TESTS:
        for s in sizes:
            k = val(runs, "kiwi", t, s)
            row("kiwi/iperf3 -Z, %s %s" % (name, size_txt(s)),
                ratios(k, ipz), None, "")
    row("kiwi/siw, ib_write_lat 64 B", ratios(val(runs, "kiwi", "write_lat", 64),
                                              val(runs, "siw", "write_lat", 64)),
        0.95, "le")
    row("kiwi-to-siw / siw-to-siw, ib_write_bw 64 KiB",
        ratios(val(runs, "kiwi-siw", "write_bw", 65536),
               val(runs, "siw", "write_bw", 65536)), 2.0, "ge")
    row("kiwi/siw, connections per second (cm-cycle)",
        ratios(val(runs, "kiwi", "cm_cycle", 0), val(runs, "siw", "cm_cycle", 0)),
        1.0, "ge")
    row("kiwi/TCP, connections per second (cm-cycle / tcp-cycle)",
        ratios(val(runs, "kiwi", "cm_cycle", 0), val(runs, "tcp", "cm_cycle", 0)),
        None, "")
    for t, name in BW_TESTS:
        for s in sizes:
            row("kiwi/siw, %s %s" % (name, size_txt(s)),
                ratios(val(runs, "kiwi", t, s), val(runs, "siw", t, s)),
                None, "")
    # A/B variants of kiwi (perftest-wire.sh's variant_switches), against
    # kiwi in the same rounds
    for c in sorted({r["config"] for r in runs} -
                    {"kiwi", "siw", "kiwi-siw", "tcp"}):
        for t, name in BW_TESTS:
            for s in sizes:
                row("%s/kiwi, %s %s" % (c, name, size_txt(s)),
                    ratios(val(runs, c, t, s), val(runs, "kiwi", t, s)),
                    None, "")
        row("%s/kiwi, ib_write_lat 64 B" % c,
            ratios(val(runs, c, "write_lat", 64),
                   val(runs, "kiwi", "write_lat", 64)), None, "")
        # the sender's CPU per GiB, as the host counted its vCPU thread;
        # kiwi-copy is the copy path, so kiwi over it is zero copy's share
        for t, name in BW_TESTS:
            for s in sizes:
                if c == "kiwi-copy":
                    row("kiwi/kiwi-copy, sender CPU per GiB, %s %s" % (
                        name, size_txt(s)),
                        ratios(val(runs, "kiwi", t, s), val(runs, c, t, s),
                               "scpu"), 0.7, "le-all")
                else:
                    row("%s/kiwi, sender CPU per GiB, %s %s" % (
                        c, name, size_txt(s)),
                        ratios(val(runs, c, t, s), val(runs, "kiwi", t, s),
                               "scpu"), None, "")
    table2 = "\n".join(lines)
    bad = [r for r in runs if r["value"] is None]
    why = {}
    for r in bad:
        why[r["why"]] = why.get(r["why"], 0) + 1
    notes = "runs: %d, of them left out: %s" % (
        len(runs), ", ".join("%d %s" % (n, w) for w, n in sorted(why.items()))
        or "none")
    spans = [r["span"] for r in runs if r["span"]]
    if spans:
        notes += "; receiver's counted span %.1f-%.1f s (median %.1f)" % (
            min(spans), max(spans), statistics.median(spans))
    # the tool's own figure beside the receiver's: perftest's is the sender's
    rs = [float(r["tool"]) / r["value"] for r in runs
          if r["value"] and r["tool"] and not r["test"].endswith("_lat")
          and not r["test"].startswith("iperf3") and r["test"] != "cm_cycle"
          and float(r["tool"]) > 0]
    if rs:
        notes += ("; perftest's own BW (sender) / receiver's figure: median "
                  "%.2f (%.2f-%.2f)" % (statistics.median(rs), min(rs), max(rs)))
    rs = [r["nic"] / r["value"] for r in runs
          if r["value"] and r["nic"] and r["test"].startswith("iperf3")]
    if rs:
        notes += ("; iperf3: the NIC's count / iperf3's receiver figure: "
                  "median %.2f" % statistics.median(rs))
    return table1, table2, notes, verdicts, n_all


def read_meta(run_dir):
    meta = {}
    p = os.path.join(run_dir, "meta")
    if os.path.exists(p):
        for line in open(p):
            m = re.match(r"# (boots|runs|quick|host cpus|host cpu|kiwi|start|end|"
                         r"duration|host load at start|host load at end|"
                         r"other qemu guests at start) (.*)", line.rstrip())
            if m:
                meta[m.group(1)] = m.group(2)
    g = {}
    p = os.path.join(run_dir, "boot-1", "A.meta")
    if os.path.exists(p):
        for line in open(p):
            k, _, v = line.rstrip().partition(" ")
            g[k] = v
    meta["guest"] = g
    loads = []
    p = os.path.join(run_dir, "load")
    if os.path.exists(p):
        for line in open(p):
            f = line.split()
            if f:
                loads.append((float(f[0]), int(f[1]) if len(f) > 1 else 0))
    meta["loads"] = loads
    pins = []
    for p in sorted(glob.glob(os.path.join(run_dir, "boot-*", "pin"))):
        pins += [line.split() for line in open(p)]
    meta["pins"] = pins
    return meta


def host_txt(meta):
    loads = meta["loads"]
    txt = "host load %s at start" % meta.get("host load at start", "?").split()[0]
    if loads:
        v = sorted(l for l, _ in loads)
        txt += ", median %.2f and max %.2f over the run" % (
            v[len(v) // 2], v[-1])
        # this run's own two guests count as two
        other = max(q for _, q in loads) - 2
        txt += ("; no other QEMU guest on the host" if other <= 0 else
                "; up to %d other QEMU guests on the host" % other)
    return txt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc")
    ap.add_argument("run_dir")
    a = ap.parse_args()
    runs = analyse(a.run_dir)
    meta = read_meta(a.run_dir)
    with open(os.path.join(a.run_dir, "runs.csv"), "w") as f:
        w = csv.writer(f)
        w.writerow(["boot", "round", "config", "test", "size", "value",
                    "tool", "nic", "span_s", "cpu_host", "cpu_guest",
                    "left_out"])
        for r in runs:
            w.writerow([r["boot"], r["round"], r["config"], r["test"],
                        r["size"], fmt(r["value"], 2), r["tool"],
                        fmt(r["nic"], 2), fmt(r["span"], 2),
                        fmt(r["cpu"], 3), fmt(r["gcpu"], 3), r["why"]])
    t1, t2, notes, verdicts, n = build(runs, meta)
    g = meta["guest"]
    cmdline = g.get("cmdline", "")
    debug = [o for o in ("slub_debug", "panic_on_warn") if o in cmdline]
    pins = ", ".join("%s %s on host CPU %s" % (p[0], " ".join(p[1:3]), p[-1])
                     for p in meta["pins"][:2])
    head = ("Run of %s to %s (%s), %d boots x %s rounds; kiwi %s; guests: "
            "kernel %s, %s vCPU each%s, %s; perftest %s, %s; host CPU %s; %s."
            % (meta.get("start", "?"), meta.get("end", "?"),
               meta.get("duration", "?"),
               # the boots that left results (a run may be stopped early)
               len({r["boot"] for r in runs if r["value"] is not None}),
               meta.get("runs", "?"), meta.get("kiwi", "?"),
               g.get("kernel", "?"), g.get("cpus", "?"),
               " (" + pins + ")" if pins else "",
               "debug options: " + ", ".join(debug) if debug else
               "no slub_debug, no panic_on_warn",
               g.get("perftest", "?"), g.get("iperf3", "?"),
               meta.get("host cpu", "?"), host_txt(meta)))
    # a figure of record wants a quiet host: no other guest, load < 1.5
    loads = meta["loads"]
    busy = (float(meta.get("host load at start", "0").split()[0]) >= 1.5 or
            any(q > 2 for _, q in loads))
    if busy:
        head = ("**Not of record: the host was not quiet** (other guests "
                "ran beside the bench's two).  " + head)
    print(head)
    print()
    print(t1)
    print()
    print(t2)
    print()
    print(notes)
    print("CSV: %s" % os.path.join(a.run_dir, "runs.csv"))
    if a.doc:
        doc_section(a.doc, "perftest", """%s

Medians over all rounds; bandwidth as counted at the receiver (MiB/s),
latency as perftest's t_typical (half the median round trip, us); CPU is
both vCPU threads' time as the host counted it over the counted span, per
GiB moved or per round trip (perftest spins on its completion queue, so
latency's CPU is about two round trips); the iperf3 rows' figures stand
in the first two columns:

%s

Per-round ratios, each round's runs paired (geometric mean, percentile
bootstrap over the rounds' ratios, seed %d, %d resamples):

%s

%s.""" % (head, t1, SEED, RESAMPLES, t2, notes[0].upper() + notes[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
