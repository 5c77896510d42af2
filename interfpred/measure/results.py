"""From a campaign's results log to the tables it writes: measurement runs and solo repetitions.

Each member of a run becomes one measurement row (the format ``interfpred fit --measurements``
reads): ``observed_ms`` is its throughput-based time in the run and ``solo_ms`` the median of its
solo windows under the same mechanism (before, between and after the runs). Extra columns keep
the rest: ``mechanism``, ``partition`` (MIG instance), ``processes`` (processes sharing the GPU
in the run), ``dtype``, ``solo_exec_ms``, ``exec_ms`` and ``exec_p90_ms`` (CUDA-event times,
median and 90th percentile), ``batches`` (batches counted), ``solo_spread_pct`` (the spread of
its solo windows, (max - min) / median in percent) and ``graph`` (1: each batch a captured CUDA
graph, 0: eager). The solo table has one row per (mechanism, solo instance) with every solo
window's time and their spread.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from interfpred.data.measurements import Measurements
from interfpred.measure.spec import Plan, Workload

__all__ = ["SoloStats", "measurement_table", "model_names", "solo_stats", "solo_table_text"]

#: Columns of the solo table.
SOLO_COLUMNS = ("mechanism", "gpu", "model", "batch_size", "dtype", "share", "partition", "instance", "windows",
                "solo_ms", "min_ms", "max_ms", "spread_pct", "exec_ms", "graph")


def model_names(workloads: Sequence[Workload]) -> dict[str, str]:
    """The ``model`` column of each workload label: its model name, with ``_DTYPE`` appended when the
    campaign measures that name in more than one data type (they are different models to a predictor).

    Examples
    --------
    >>> from interfpred.measure.spec import parse_workload
    >>> model_names([parse_workload("a:1"), parse_workload("a:2:fp32"), parse_workload("b:1")])
    {'a:1:fp16': 'a_fp16', 'a:2:fp32': 'a_fp32', 'b:1:fp16': 'b'}
    """
    dtypes: dict[str, set[str]] = {}
    for w in workloads:
        dtypes.setdefault(w.name, set()).add(w.dtype)
    return {w.label: w.name if len(dtypes[w.name]) == 1 else f"{w.name}_{w.dtype}" for w in workloads}


@dataclass(frozen=True)
class SoloStats:
    """The solo windows of one instance under one mechanism: throughput-based times, their median and spread."""

    times_ms: tuple[float, ...]
    exec_ms: tuple[float, ...]

    @property
    def median_ms(self) -> float:
        """Median throughput-based time."""
        return float(statistics.median(self.times_ms))

    @property
    def spread_pct(self) -> float:
        """(max - min) / median, percent."""
        return 100.0 * (max(self.times_ms) - min(self.times_ms)) / self.median_ms


def solo_stats(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], SoloStats]:
    """``(mechanism, instance) -> SoloStats`` over the solo windows in ``records``, in log order."""
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in records:
        if r.get("type") == "window" and r["kind"] == "solo":
            (inst, res), = r["results"].items()
            times.setdefault((r["mechanism"], inst), []).append((float(res["observed_ms"]), float(res["exec_ms"])))
    return {k: SoloStats(tuple(t for t, _ in v), tuple(e for _, e in v)) for k, v in times.items()}


def _share(mechanism: str, w: Workload, shares: Mapping[str, float]) -> float:
    return float(shares.get(w.label, 100.0)) if mechanism == "mps" else 100.0


def measurement_table(plan: Plan, records: Sequence[Mapping[str, Any]], *, gpu: str, shares: Mapping[str, float],
                      partitions: Sequence[str]) -> Measurements | None:
    """The measurement runs of the run windows in ``records`` whose members all have a solo time; None when none.

    ``shares`` maps a workload label to its MPS share, ``partitions`` names the MIG instances in
    order (copy ``i`` ran in the ``i``-th).
    """
    solo = solo_stats(records)
    names = model_names(plan.workloads)
    cols: dict[str, list[Any]] = {c: [] for c in ("run", "gpu", "model", "batch_size", "share", "solo_ms",
                                                  "observed_ms", "member")}
    extra: dict[str, list[Any]] = {c: [] for c in ("mechanism", "partition", "processes", "dtype", "solo_exec_ms",
                                                   "exec_ms", "exec_p90_ms", "batches", "solo_spread_pct", "graph")}
    for r in records:
        if r.get("type") != "window" or r["kind"] != "run":
            continue
        mech = r["mechanism"]
        members = list(r["members"])
        stats = [solo.get((mech, plan.solo_instance(mech, m))) for m in members]
        if any(s is None for s in stats):
            continue
        for i, (m, s) in enumerate(zip(members, stats)):
            assert s is not None
            w = plan.workload(m)
            res = r["results"][m]
            copy = int(m.rpartition("#")[2])
            cols["run"].append(f"{mech}-{r['phase']}")
            cols["gpu"].append(gpu)
            cols["model"].append(names[w.label])
            cols["batch_size"].append(w.batch_size)
            cols["share"].append(_share(mech, w, shares))
            cols["solo_ms"].append(s.median_ms)
            cols["observed_ms"].append(float(res["observed_ms"]))
            cols["member"].append(str(i))
            extra["mechanism"].append(mech)
            extra["partition"].append(partitions[copy] if mech == "mig" else "")
            extra["processes"].append(str(len(members)) if mech in ("time_slicing", "mps") else "1")
            extra["dtype"].append(w.dtype)
            extra["solo_exec_ms"].append(repr(float(statistics.median(s.exec_ms))))
            extra["exec_ms"].append(repr(float(res["exec_ms"])))
            extra["exec_p90_ms"].append(repr(float(res["exec_p90_ms"])))
            extra["batches"].append(str(int(res["batches"])))
            extra["solo_spread_pct"].append(f"{s.spread_pct:.4g}")
            extra["graph"].append("1" if r.get("graphs", {}).get(m, True) else "0")
    if not cols["run"]:
        return None
    return Measurements.from_columns(run=cols["run"], gpu=cols["gpu"], model=cols["model"],
                                     batch_size=cols["batch_size"], share=cols["share"], solo_ms=cols["solo_ms"],
                                     observed_ms=cols["observed_ms"], member=cols["member"], extra=extra)


def solo_table_text(plan: Plan, records: Sequence[Mapping[str, Any]], *, gpu: str, shares: Mapping[str, float],
                    partitions: Sequence[str]) -> str:
    """The solo table (``SOLO_COLUMNS``) as CSV text."""
    names = model_names(plan.workloads)
    graphs: dict[tuple[str, str], bool] = {}
    for r in records:
        if r.get("type") == "window" and r["kind"] == "solo":
            graphs.update({(r["mechanism"], k): bool(v) for k, v in r.get("graphs", {}).items()})
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(SOLO_COLUMNS)
    for (mech, inst), s in solo_stats(records).items():
        wl = plan.workload(inst)
        copy = int(inst.rpartition("#")[2])
        w.writerow([mech, gpu, names[wl.label], wl.batch_size, wl.dtype, f"{_share(mech, wl, shares):g}",
                    partitions[copy] if mech == "mig" else "", inst, len(s.times_ms), repr(s.median_ms),
                    repr(min(s.times_ms)), repr(max(s.times_ms)), f"{s.spread_pct:.4g}",
                    repr(float(statistics.median(s.exec_ms))), int(graphs.get((mech, inst), True))])
    return out.getvalue()
