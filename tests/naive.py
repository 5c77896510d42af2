"""Plain-Python reference implementations that the library's fast paths are checked against.

Shared file: each area appends its own clearly named functions; do not rewrite others'.
"""

from __future__ import annotations

# ---------------------------------------------------------------- ingest (issue 2)


def naive_profile_numbers(durations_ms, sm, l2, dram, iterations=1):
    """(solo_ms, sm, l2, dram) of a list of kernel launches: summed time / iterations and
    duration-weighted means, one launch at a time."""
    total = 0.0
    acc = [0.0, 0.0, 0.0]
    for d, a, b, c in zip(durations_ms, sm, l2, dram):
        total += d
        acc[0] += d * a
        acc[1] += d * b
        acc[2] += d * c
    return total / iterations, acc[0] / total, acc[1] / total, acc[2] / total


def naive_details_page(path_or_lines):
    """Read an ncu ``--page details`` CSV the slow obvious way: pivot every metric row into a
    dict per (Process ID, ID), keeping all metrics as (unit, value text) pairs."""
    import csv

    if isinstance(path_or_lines, str):
        with open(path_or_lines, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    else:
        lines = list(path_or_lines)
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    rows = list(csv.reader(lines[start:]))
    header = rows[0]
    kernels: dict = {}
    for row in rows[1:]:
        if len(row) < header.index("Metric Value") + 1 or not row[0].isdigit():
            continue
        rec = dict(zip(header, row))
        key = (rec.get("Process ID", ""), rec["ID"])
        k = kernels.setdefault(key, {"name": rec["Kernel Name"], "metrics": {}})
        if rec["Metric Name"]:
            k["metrics"].setdefault(rec["Metric Name"], (rec["Metric Unit"], rec["Metric Value"]))
    return list(kernels.values())
