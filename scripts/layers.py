#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The floors of kiwi.ko, checked from the built objects' symbols.

Each folder of drivers/kiwi is a floor; a floor calls only the floors
below it, except through the seam (SEAM below, conn.h in the sources).
A call is an undefined symbol of one object that another object of the
module defines, so tracepoints and variables count as well as functions.
Prints TAP lines without numbers (scripts/check.sh numbers them):
  - no call from a lower floor to a higher one outside the seam;
  - no circle between folders (circles inside one folder are allowed);
  - no circle of more than MAX_CIRCLE files.
Usage: scripts/layers.py BUILD_DIR   (the M= tree holding drivers/kiwi/*.o)
"""
import os
import subprocess
import sys

# bottom-up; cm and verbs share a floor (they must still not form a circle)
FLOORS = {'proto': 0, 'core': 1, 'res': 2, 'engine': 3, 'cm': 4, 'verbs': 4,
          '.': 5}
# symbols a lower floor may call in a higher one: none, the engines reach
# the CM through qp->conn->ops (conn.h)
SEAM = set()
MAX_CIRCLE = 4


def objects(build):
    """The module's objects as Kbuild listed them (kiwi.mod), else all."""
    mod = os.path.join(build, 'kiwi.mod')
    if os.path.exists(mod):
        for o in open(mod).read().split():
            yield o if os.path.isabs(o) else os.path.join(build, o)
        return
    for d, _, files in os.walk(os.path.join(build, 'drivers', 'kiwi')):
        for f in sorted(files):
            if f.endswith('.o') and not f.endswith('.mod.o'):
                yield os.path.join(d, f)


def symbol(name):
    """A trace event's several symbols as one name."""
    for p in ('__SCK__tp_func_', '__SCT__tp_func_', '__tracepoint_',
              '__traceiter_'):
        if name.startswith(p):
            return 'trace:' + name[len(p):]
    return name


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = n[0]
        n[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = n[0]
                    n[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out


def main():
    top = os.path.join(sys.argv[1], 'drivers', 'kiwi')
    defs, undefs = {}, {}
    for o in objects(sys.argv[1]):
        name = os.path.relpath(o, top)[:-2] + '.c'
        nm = subprocess.run(['nm', o], capture_output=True, text=True,
                            check=True).stdout
        undefs[name] = set()
        for line in nm.splitlines():
            f = line.split()
            if len(f) == 2 and f[0] == 'U':
                undefs[name].add(symbol(f[1]))
            elif len(f) == 3 and f[1] in 'TDRBV':
                defs[symbol(f[2])] = name
    if not undefs:
        print('not ok - floors: no objects under %s' % top)
        return 1

    def floor(name):
        return os.path.dirname(name) or '.'

    fail = 0
    files, folders, up = {}, {}, []
    for user in sorted(undefs):
        for sym in sorted(undefs[user]):
            owner = defs.get(sym)
            if owner is None or owner == user:
                continue
            files.setdefault(user, set()).add(owner)
            fu, fo = floor(user), floor(owner)
            if fu == fo:
                continue
            folders.setdefault(fu, set()).add(fo)
            rank_u = FLOORS.get(fu)
            rank_o = FLOORS.get(fo)
            if rank_u is None or rank_o is None:
                up.append('%s: folder %s is not a floor (scripts/layers.py)'
                          % (sym, fu if rank_u is None else fo))
            elif rank_u < rank_o and sym not in SEAM:
                up.append('%s: %s calls up into %s' % (sym, user, owner))
    for u in up:
        print('# ' + u)
    print('%sok - floors: no call from a lower floor to a higher one '
          'outside the seam' % ('not ' if up else ''))
    fail |= bool(up)

    circles = [c for c in sccs(sorted(folders), folders) if len(c) > 1]
    for c in circles:
        print('# circle between folders: ' + ' '.join(c))
        for a in c:
            for b in sorted(folders.get(a, ())):
                if b in c:
                    syms = sorted(set(s for u in undefs if floor(u) == a
                                  for s in undefs[u]
                                  if s in defs and floor(defs[s]) == b))
                    print('#   %s -> %s: %s' % (a, b, ' '.join(syms)))
    print('%sok - floors: no circle between folders'
          % ('not ' if circles else ''))
    fail |= bool(circles)

    comps = sccs(sorted(undefs), files)
    big = max(comps, key=len)
    for c in comps:
        if len(c) > MAX_CIRCLE:
            print('# circle of %d files: %s' % (len(c), ' '.join(c)))
    print('%sok - floors: largest circle between files has %d files '
          '(at most %d): %s' % ('not ' if len(big) > MAX_CIRCLE else '',
                                len(big), MAX_CIRCLE, ' '.join(big)))
    fail |= len(big) > MAX_CIRCLE
    return fail


if __name__ == '__main__':
    sys.exit(main())
