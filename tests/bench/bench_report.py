# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# What the benchmarks' reports share (nvmeof-report.py, storage-report.py,
# perftest-report.py): the values of one cell of a CSV of runs, their
# formatting, and the results section of Documentation/benchmarks.md.

import re
import statistics
import sys


def values(rows, **match):
    """The good values of the rows matching every column=value given, as
    floats, and how many of them failed ("fail")."""
    vals = [r["value"] for r in rows
            if all(r[k] == v for k, v in match.items())]
    ok = [float(v) for v in vals if v != "fail"]
    return ok, len(vals) - len(ok)


def median(v):
    return statistics.median(v) if v else None


def fmt(unit, x):
    """IOPS as a whole number, anything else to a tenth; None: failed."""
    if x is None:
        return "failed"
    return "%.0f" % x if unit == "IOPS" else "%.1f" % x


def runs_txt(unit, v, failed):
    """Every good run's value, then how many failed."""
    txt = " ".join(fmt(unit, x) for x in v)
    if failed:
        txt += (" " if txt else "") + "(%d failed)" % failed
    return txt


def doc_section(docpath, name, body):
    """Replace what stands between the NAME-results markers of docpath
    with body."""
    begin = "<!-- %s-results-begin -->" % name
    end = "<!-- %s-results-end -->" % name
    section = "%s\n%s\n%s" % (begin, body, end)
    doc = open(docpath).read()
    doc, n = re.subn(re.escape(begin) + ".*" + re.escape(end),
                     lambda m: section, doc, flags=re.S)
    if n != 1:
        sys.exit("%s has no %s-results markers" % (docpath, name))
    open(docpath, "w").write(doc)
    print("results written to %s" % docpath)
