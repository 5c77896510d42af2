"""Binary ``.ncu-rep`` reports, read through the optional ``ncu-report`` package.

Install it with ``pip install "interfpred[ncu]"``; without it a report is refused with that hint
and the command that exports CSV instead. Formats: docs/profiling.md.
"""

from __future__ import annotations

import math
import os

import numpy as np

from interfpred.data.ingest.kernel_table import KernelTable
from interfpred.data.ingest.ncu_metrics import (
    LAUNCH_ALIASES,
    LAUNCH_SLOTS,
    METRIC_ALIASES,
    QUANTITIES,
    QUANTITY_LABEL,
    NcuFormatError,
    convert_launch,
    convert_metric,
    launch_table,
)

__all__ = ["read_report"]

_INSTALL_HINT = 'reading .ncu-rep reports needs the ncu-report package: pip install "interfpred[ncu]"'


def read_report(path: str) -> KernelTable:
    """Kernel launches of a binary ``.ncu-rep`` report, one row per action of every range.

    The launch columns are read by metric name (``launch__grid_size`` ...) where the report has
    them. A report carries no ncu log, so whether it was cut short cannot be told.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    try:
        import ncu_report  # optional dependency, imported only when a report is read
    except ImportError:
        raise NcuFormatError(_INSTALL_HINT + " (or export CSV: ncu --import report.ncu-rep --csv "
                             "--page details > report.csv)", path=path) from None
    try:
        ctx = ncu_report.load_report(path)
    except Exception as exc:  # the binding raises its own types
        raise NcuFormatError(f"ncu_report could not load the report: {exc}", path=path) from None
    n_ranges = ctx.num_ranges()
    if n_ranges == 0:
        raise NcuFormatError("the report has zero ranges: nothing was profiled, or not a valid .ncu-rep "
                             "file (ncu_report loads unreadable files as empty reports)", path=path)
    names: list[str] = []
    values: list[list[float]] = []
    launches: list[list[float]] = []
    ident: dict[str, list[str]] = {"range": [], "id": []}
    for r in range(n_ranges):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            label = f"range {r} kernel {a}"
            vals = [math.nan] * 4
            for q, qname in enumerate(QUANTITIES):
                for alias in METRIC_ALIASES[qname]:
                    if " " in alias or "[" in alias:
                        continue  # labels are not metric names in a report
                    metric = action.metric_by_name(alias)
                    if metric is None:
                        continue
                    unit = metric.unit() if hasattr(metric, "unit") else ("nsecond" if q == 0 else "%")
                    v = convert_metric(q, alias, unit or ("nsecond" if q == 0 else "%"),
                                 repr(float(metric.as_double())), path, None)
                    if v is not None:
                        vals[q] = v
                        break
            for q, qname in enumerate(QUANTITIES):
                if math.isnan(vals[q]):
                    raise NcuFormatError(
                        f"{label} ({action.name()!r}) has no {QUANTITY_LABEL[qname]} metric; expected "
                        f"one of {', '.join(METRIC_ALIASES[qname])} (profile with --section SpeedOfLight)",
                        path=path)
            names.append(str(action.name()))
            values.append(vals)
            launches.append(_launch_values(action, path))
            ident["range"].append(str(r))
            ident["id"].append(str(len(names) - 1))
    if not names:
        raise NcuFormatError(f"the report's {n_ranges} range(s) hold no kernel launches", path=path)
    arr = np.array(values, dtype=np.float64)
    launch = launch_table(np.array(launches, dtype=np.float64), [], [])
    return KernelTable.from_columns(name=names, duration_ms=arr[:, 0], sm=arr[:, 1], l2=arr[:, 2],
                                    dram=arr[:, 3], identity=ident, path=path, launch=launch)


def _launch_values(action, path: str) -> list[float]:
    """One action's launch slots (:data:`LAUNCH_SLOTS`) by metric name, NaN where absent."""
    out = [math.nan] * len(LAUNCH_SLOTS)
    for q, slot in enumerate(LAUNCH_SLOTS):
        for alias in LAUNCH_ALIASES[slot]:
            if " " in alias:
                continue  # labels are not metric names in a report
            metric = action.metric_by_name(alias)
            if metric is None:
                continue
            unit = metric.unit() if hasattr(metric, "unit") else ""
            v = convert_launch(q, alias, unit or "", repr(float(metric.as_double())), path, None)
            if v is not None:
                out[q] = v
                break
    return out
