"""The ``raw`` page of ``ncu --csv``: one row per kernel launch, one column per metric.

The row after the header carries the units. Besides the four quantities, the ``launch__*`` columns
(grid and block size, waves per SM, registers, shared memory, occupancy limits, SM count) are kept
where the page has them. Formats: docs/profiling.md.
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
    QUANTITIES,
    NcuFormatError,
    convert_launch,
    convert_metric,
    identity_name,
    is_kernel_id,
    require_columns,
    skip_or_refuse_row,
    table_from_rows,
)

__all__ = ["read_raw_page"]


def read_raw_page(reader, header: list[str], offset: int, path: str) -> KernelTable:
    """Kernel launches of a raw page; ``reader`` is a :func:`csv.reader` past the header, which
    sat on line ``offset`` of ``path``; the units row comes next.
    """
    require_columns(header, ("ID", "Kernel Name"), path, offset)
    ident_idx = [i for i, h in enumerate(header) if identity_name(h) is not None]
    units = None
    for units in reader:
        if units and any(c.strip() for c in units):
            break
    units_line = offset + reader.line_num
    if not units or any(units[i].strip() for i in ident_idx if i < len(units)):
        raise NcuFormatError(
            "raw page without its units row (the row after the header, with empty identity "
            "columns and one unit per metric)", path=path, line=units_line)
    units = units + [""] * (len(header) - len(units))
    # For each quantity the candidate columns, best first.
    cands: list[list[int]] = []
    for q, _qname in enumerate(QUANTITIES):
        present = sorted((METRIC_PRIORITY[h][1], i) for i, h in enumerate(header) if METRIC_PRIORITY.get(h, (-1,))[0] == q)
        cands.append([i for _, i in present])
    # The same for each launch slot; identity columns ("Grid Size" "(2, 64, 1)") are not metrics.
    launch_cands: list[tuple[int, list[int]]] = []
    for q in range(len(LAUNCH_SLOTS)):
        present = sorted((LAUNCH_PRIORITY[h][1], i) for i, h in enumerate(header)
                         if identity_name(h) is None and LAUNCH_PRIORITY.get(h, (-1,))[0] == q)
        if present:
            launch_cands.append((q, [i for _, i in present]))
    lo = max([max(ident_idx)] + [c for cs in cands for c in cs]) + 1
    hi = len(header) + 1
    nan = math.nan
    first_rows: list[list[str]] = []
    first_lines: list[int] = []
    values: list[list[float]] = []
    launches: list[list[float]] = []
    try:
        for row in reader:
            n = len(row)
            line = offset + reader.line_num
            # every field of the header, or one more that is empty (a trailing comma): a ragged row
            # is refused even when the columns read happen to be present
            ragged = n != len(header) and not (n == hi and not row[-1].strip())
            if n < lo or n > hi or ragged or not is_kernel_id(row[0]):
                skip_or_refuse_row(row, len(header) if n >= lo else lo, len(header), path, line)
                continue
            vals = [nan, nan, nan, nan]
            for q in range(4):
                for i in cands[q]:
                    v = convert_metric(q, header[i], units[i], row[i], path, line)
                    if v is not None:
                        vals[q] = v
                        break
            launch = [nan] * len(LAUNCH_SLOTS)
            for q, cols in launch_cands:
                for i in cols:
                    v = convert_launch(q, header[i], units[i], row[i], path, line)
                    if v is not None:
                        launch[q] = v
                        break
            values.append(vals)
            launches.append(launch)
            first_rows.append(row)
            first_lines.append(line)
    except csv.Error as exc:
        raise NcuFormatError(f"not valid CSV: {exc}", path=path, line=offset + reader.line_num) from None
    if not values:
        raise NcuFormatError("no kernel rows after the units row: did ncu profile any kernel?",
                             path=path, line=units_line)
    metric_names = [h for h in header if identity_name(h) is None]
    return table_from_rows(np.array(values, dtype=np.float64), first_rows, first_lines, header, path,
                           lambda: metric_names, launch=np.array(launches, dtype=np.float64))

