#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""In a benchmark guest: the NIC's byte counters and the guest's CPU time,
every INTERVAL seconds, until killed.

    wire-sampler.py NIC INTERVAL OUT

Each line of OUT: "time rx_bytes tx_bytes busy_ticks total_ticks" (time
as the epoch seconds bash's $EPOCHREALTIME gives, ticks of /proc/stat's
"cpu" line in USER_HZ).  One process for the whole boot: python starts in
seconds under TCG, which a process per run would add to every run, while
a sample costs well under a millisecond of the guest's one vCPU.
wire-report.py finds each run's transfer in these samples, so the rate
and the CPU time are those of the bytes' own span, not of process start
and connection setup around them.
"""
import sys
import time


def main():
    nic, interval, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    stat = "/sys/class/net/%s/statistics/" % nic
    rxf = open(stat + "rx_bytes")
    txf = open(stat + "tx_bytes")
    procf = open("/proc/stat")
    with open(out, "w", buffering=1) as f:
        nxt = time.time()
        while True:
            t = time.time()
            rxf.seek(0)
            txf.seek(0)
            procf.seek(0)
            rx = rxf.read().strip()
            tx = txf.read().strip()
            # user nice system idle iowait irq softirq steal ...
            v = [int(x) for x in procf.readline().split()[1:9]]
            busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
            f.write("%.4f %s %s %d %d\n" % (t, rx, tx, busy, sum(v)))
            # a fixed grid, so a slow sample does not shift the rest;
            # after a stall (the vCPU busy elsewhere), a new grid rather
            # than a burst of samples to catch up
            nxt += interval
            now = time.time()
            if nxt < now:
                nxt = now + interval
            time.sleep(nxt - now)


if __name__ == "__main__":
    main()
