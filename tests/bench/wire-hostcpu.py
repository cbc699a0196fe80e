#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""On the host, beside a perftest-wire.sh boot: the CPU time of each
guest's vCPU thread, every 0.1 s, until killed.

    wire-hostcpu.py OUT NAME TID [NAME TID ...]

Each line of OUT: "time NAME ticks [NAME ticks ...]", time as the epoch
seconds of the host's clock, ticks the thread's utime + stime (USER_HZ)
from /proc/TID/stat.  What a vCPU costs the host, whether the guest ran,
waited for its thread to be scheduled or emulated a device: a guest's
own /proc/stat cannot tell the last two apart from work.
"""
import sys
import time


def ticks(f):
    f.seek(0)
    # the fields after the command name, which has spaces ("CPU 0/TCG")
    rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def main():
    out = sys.argv[1]
    pairs = list(zip(sys.argv[2::2], sys.argv[3::2]))
    files = [(n, open("/proc/%s/stat" % t)) for n, t in pairs]
    with open(out, "w", buffering=1) as f:
        nxt = time.time()
        while True:
            try:
                v = " ".join("%s %d" % (n, ticks(h)) for n, h in files)
            except (OSError, IndexError, ValueError):
                return  # a guest has gone
            f.write("%.4f %s\n" % (time.time(), v))
            nxt += 0.1
            time.sleep(max(0.0, nxt - time.time()))


if __name__ == "__main__":
    main()
