"""The ``details`` page of ``ncu --csv``: one row per (kernel launch, metric).

Every header generation is read: with or without ``--nvtx`` and rule columns, metric labels or
names, long or short units. Besides the four quantities, the "Launch Statistics" and "Occupancy"
sections' values (grid and block size, waves per SM, registers, shared memory, block limits,
theoretical occupancy) are kept where the page has them. Formats: docs/profiling.md.
"""

from __future__ import annotations

import csv
import math

import numpy as np

from interfpred.data.ingest.kernel_table import KernelTable
from interfpred.data.ingest.ncu_metrics import (
    LAUNCH_PRIORITY,
    LAUNCH_SLOTS,
    METRIC_PRIORITY,
    NO_PRIORITY,
    NcuFormatError,
    convert_launch,
    convert_metric,
    is_kernel_id,
    require_columns,
    skip_or_refuse_row,
    table_from_rows,
)

__all__ = ["read_details_page"]


def read_details_page(reader, header: list[str], offset: int, path: str) -> KernelTable:
    """Kernel launches of a details page; ``reader`` is a :func:`csv.reader` past the header,
    which sat on line ``offset`` of ``path``.

    For each launch (ID and process) and quantity the best metric present counts, in
    :data:`~interfpred.data.ingest.ncu_metrics.METRIC_PRIORITY` order; likewise for the launch
    values in :data:`~interfpred.data.ingest.ncu_metrics.LAUNCH_PRIORITY` order.
    """
    cols = require_columns(header, ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"),
                           path, offset)
    iid, iname, iunit, ivalue = cols["ID"], cols["Metric Name"], cols["Metric Unit"], cols["Metric Value"]
    ipid = header.index("Process ID") if "Process ID" in header else iid
    lo = max(iid, iname, iunit, ivalue, ipid, cols["Kernel Name"]) + 1
    hi = len(header) + 1  # a trailing comma after the last column is tolerated
    wanted = METRIC_PRIORITY
    launch_wanted = LAUNCH_PRIORITY
    n_slots = len(LAUNCH_SLOTS)
    nan = math.nan
    first_rows: list[list[str]] = []
    first_lines: list[int] = []
    states: list[list[float]] = []  # per kernel: 4 values then 4 priorities
    launches: list[list[float]] = []  # per kernel: one value per launch slot, then their priorities
    index: dict[tuple[str, str], int] = {}
    last_id = last_pid = None
    state: list[float] = []
    launch: list[float] = []
    convert = convert_metric
    try:
        for row in reader:
            n = len(row)
            if n < lo or n > hi:
                skip_or_refuse_row(row, lo, len(header), path, offset + reader.line_num)
                continue
            rid = row[iid]
            if rid != last_id or row[ipid] != last_pid:
                last_id, last_pid = rid, row[ipid]
                k = index.get((rid, last_pid))
                if k is None:
                    if not is_kernel_id(rid):
                        skip_or_refuse_row(row, lo, len(header), path, offset + reader.line_num)
                        last_id = None
                        continue
                    index[(rid, last_pid)] = len(states)
                    state = [nan, nan, nan, nan, NO_PRIORITY, NO_PRIORITY, NO_PRIORITY, NO_PRIORITY]
                    states.append(state)
                    launch = [nan] * n_slots + [NO_PRIORITY] * n_slots
                    launches.append(launch)
                    first_rows.append(row)
                    first_lines.append(offset + reader.line_num)
                else:
                    state = states[k]
                    launch = launches[k]
            m = row[iname]
            if m in wanted:
                q, p = wanted[m]
                if p < state[4 + q]:
                    v = convert(q, m, row[iunit], row[ivalue], path, offset + reader.line_num)
                    if v is not None:
                        state[q] = v
                        state[4 + q] = p
            elif m in launch_wanted:
                q, p = launch_wanted[m]
                if p < launch[n_slots + q]:
                    v = convert_launch(q, m, row[iunit], row[ivalue], path, offset + reader.line_num)
                    if v is not None:
                        launch[q] = v
                        launch[n_slots + q] = p
    except csv.Error as exc:
        raise NcuFormatError(f"not valid CSV: {exc}", path=path, line=offset + reader.line_num) from None
    if not states:
        raise NcuFormatError("no kernel rows after the header: did ncu profile any kernel?",
                             path=path, line=offset)
    values = np.array([s[:4] for s in states], dtype=np.float64)
    launch_values = np.array([s[:n_slots] for s in launches], dtype=np.float64).reshape(len(launches), n_slots)
    return table_from_rows(values, first_rows, first_lines, header, path,
                           lambda: _details_metric_names(path, iname, offset), launch=launch_values)


def _details_metric_names(path: str, iname: int, offset: int) -> list[str]:
    """Distinct metric names of a details page (second pass, only for error messages)."""
    seen: dict[str, None] = {}
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        for _ in range(offset):
            next(fh, None)
        try:
            for row in csv.reader(fh):
                if len(row) > iname and row[iname] and is_kernel_id(row[0]):
                    seen.setdefault(row[iname])
        except csv.Error:
            pass
    return list(seen)

