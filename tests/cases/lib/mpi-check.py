#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# An MPI job whose every result is checked, for the MPI tests (mpi-lib.sh),
# run by mpirun under mpi4py:
#
#   mpi-check.py check MAXBYTES   ping-pong between the first and the last
#                                 rank, 1 B to MAXBYTES by powers of two,
#                                 every buffer received compared with what
#                                 was sent; then Allreduce, Alltoall and
#                                 Bcast (each rank as root) at several sizes
#                                 (up to 2 MiB, 1 MiB, 1 MiB a rank, as
#                                 MAXBYTES allows), every result compared
#                                 with its value
#   mpi-check.py loop             ping-pong and Allreduce for ever, after
#                                 "ready" from every rank (for a rank to be
#                                 killed mid-run)
#
# check prints one line per size "pingpong SIZE LAT_US MB_S" (LAT_US half
# a round trip, averaged), one line per failed check "FAIL ...", then
# "result: N checks, M failed" from rank 0, and exits 1 if any failed.
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
checks = 0
failed = 0


def fail(what):
    global failed
    failed += 1
    print(f"FAIL rank {rank}: {what}", flush=True)


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        fail(what)


# pattern(n, seed): n bytes that differ with the seed and along the buffer
_base = bytes((i * 131 + (i >> 8) * 7 + 17) & 0xff for i in range(65536 + 251))


def pattern(n, seed):
    off = (seed * 37) % 251
    reps = n // 65536 + 1
    b = (_base[off:off + 65536] * reps)[:n]
    return b


def first_diff(a, b):
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b))


def pingpong(maxbytes):
    peer = size - 1 if rank == 0 else 0
    if rank not in (0, size - 1) or size < 2:
        return
    n = 1
    while n <= maxbytes:
        iters = 10 if n <= 65536 else 4 if n <= 1048576 else 3
        warm = 1
        recv = bytearray(n)
        t = 0.0
        for it in range(warm + iters):
            out = pattern(n, it * 2 + n)
            back = pattern(n, it * 2 + 1 + n)
            if rank == 0:
                t0 = MPI.Wtime()
                comm.Send([out, MPI.BYTE], dest=peer, tag=it)
                comm.Recv([recv, MPI.BYTE], source=peer, tag=it)
                t1 = MPI.Wtime()
                if it >= warm:
                    t += t1 - t0
                if recv != back:
                    fail(f"pingpong {n} B iteration {it}: reply differs "
                         f"at byte {first_diff(recv, back)}")
            else:
                comm.Recv([recv, MPI.BYTE], source=peer, tag=it)
                if recv != out:
                    fail(f"pingpong {n} B iteration {it}: ping differs "
                         f"at byte {first_diff(recv, out)}")
                comm.Send([back, MPI.BYTE], dest=peer, tag=it)
        global checks
        checks += warm + iters
        if rank == 0:
            lat = t / iters / 2
            print(f"pingpong {n} {lat * 1e6:.1f} {n / lat / 1e6:.2f}",
                  flush=True)
        n *= 2


def allreduce(count):
    import array
    a = array.array("q", (rank * 1000003 + i for i in range(count)))
    r = array.array("q", bytes(8 * count))
    comm.Allreduce([a, MPI.INT64_T], [r, MPI.INT64_T], op=MPI.SUM)
    s = size * (size - 1) // 2 * 1000003
    want = array.array("q", (s + size * i for i in range(count)))
    check(r == want, f"Allreduce SUM of {count} int64")
    m = array.array("q", bytes(8 * count))
    comm.Allreduce([a, MPI.INT64_T], [m, MPI.INT64_T], op=MPI.MAX)
    want = array.array("q", ((size - 1) * 1000003 + i for i in range(count)))
    check(m == want, f"Allreduce MAX of {count} int64")


def alltoall(block):
    out = b"".join(pattern(block, rank * 1000 + d) for d in range(size))
    recv = bytearray(block * size)
    comm.Alltoall([out, MPI.BYTE], [recv, MPI.BYTE])
    for s in range(size):
        got = recv[s * block:(s + 1) * block]
        check(got == pattern(block, s * 1000 + rank),
              f"Alltoall {block} B block from rank {s}")


def bcast(n):
    for root in range(size):
        want = pattern(n, 7919 * root + n)
        buf = bytearray(want) if rank == root else bytearray(n)
        comm.Bcast([buf, MPI.BYTE], root=root)
        check(buf == want, f"Bcast {n} B from root {root}")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "check"
    if mode == "check":
        maxbytes = int(sys.argv[2]) if len(sys.argv) > 2 else 4 << 20
        pingpong(maxbytes)
        comm.Barrier()
        # the largest collectives no larger than the largest ping
        for c in sorted({1, 1000, min(262144, maxbytes // 8)}):
            allreduce(c)
        for b in sorted({1, 4096, min(262144, maxbytes // 4)}):
            alltoall(b)
        for n in sorted({1, 65536, min(1 << 20, maxbytes)}):
            bcast(n)
        tot = comm.allreduce(checks, op=MPI.SUM)
        bad = comm.allreduce(failed, op=MPI.SUM)
        if rank == 0:
            print(f"result: {tot} checks, {bad} failed", flush=True)
        return 1 if bad or tot == 0 else 0
    if mode == "loop":
        comm.Barrier()
        print(f"ready rank {rank} of {size}", flush=True)
        it = 0
        while True:
            allreduce(1000)
            bcast(65536)
            if failed:
                return 1
            it += 1
            time.sleep(0.01)
    print(f"mpi-check.py: unknown mode {mode}", file=sys.stderr)
    return 2


sys.exit(main())
