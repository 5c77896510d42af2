"""Tables of a model's predictions, one row per execution or per measurement row.

CSV, or Parquet / Arrow for a ``.parquet`` / ``.arrow`` path (needs pyarrow); written
atomically. With quantiles (a model whose predictor is :class:`~interfpred.Calibrated`), one
more column per quantile ``q``, ``latency_q<q>_ms``: the latency bound at ``q``.
"""

from __future__ import annotations

import csv
import os
from typing import TYPE_CHECKING

import numpy as np

from interfpred._core.atomic import atomic_open
from interfpred.data.columnar import check_finite_columns, format_of, write_predictions_table
from interfpred.data.measurements import Measurements
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace

if TYPE_CHECKING:
    from interfpred.model.interference import InterferenceModel

__all__ = ["MEASUREMENT_PREDICTION_COLUMNS", "PREDICTION_COLUMNS", "write_measurement_predictions",
           "write_predictions"]

#: Columns of the predictions CSV written for measurements.
MEASUREMENT_PREDICTION_COLUMNS = ("run", "member", "model", "batch_size", "share", "predicted_latency_ms",
                                  "predicted_slowdown", "observed_latency_ms")
#: Columns of the predictions CSV written for a trace.
PREDICTION_COLUMNS = ("id", "predicted_latency_ms", "predicted_slowdown", "observed_latency_ms")


def write_predictions(model: InterferenceModel, trace: Trace, profiles: ProfileTable,
                      path: str | os.PathLike[str], *, quantiles: tuple[float, ...] = ()) -> int:
    """Write ``id, predicted_latency_ms, predicted_slowdown, observed_latency_ms`` per execution (atomically).

    CSV, or Parquet / Arrow for a ``.parquet`` / ``.arrow`` path (needs pyarrow). With
    ``quantiles`` (a model whose predictor is :class:`~interfpred.Calibrated`), one more column
    per quantile ``q``, ``latency_q<q>_ms``: the latency bound at ``q``.
    Returns the number of rows written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from interfpred.sim.workload import mix_scenario
    >>> sc = mix_scenario(["vgg19"], rho=0.8, executions=50, seed=0)
    >>> from interfpred.model.interference import InterferenceModel
    >>> model = InterferenceModel().fit(sc.traces["trace"], sc.profiles)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pred.csv"
    >>> write_predictions(model, sc.traces["trace"], sc.profiles, path)
    50
    >>> path.read_text().splitlines()[0]
    'id,predicted_latency_ms,predicted_slowdown,observed_latency_ms'
    """
    fm = model.features(trace, profiles)
    lat = model.latency_from_features(fm)
    bounds = [model.latency_from_features(fm, quantile=q) for q in quantiles]
    qcols = tuple(f"latency_q{float(q):g}_ms" for q in quantiles)
    check_finite_columns(dict(zip(PREDICTION_COLUMNS[1:] + qcols, (lat, lat / fm.solo_ms, fm.latency_ms, *bounds))),
                         path)
    if format_of(path) != "csv":      # Parquet or Arrow by suffix (needs pyarrow)
        return write_predictions_table(dict(zip(PREDICTION_COLUMNS + qcols, (trace.id, lat, lat / fm.solo_ms,
                                                                               fm.latency_ms, *bounds))), path)
    ids = trace.id.tolist()
    with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(PREDICTION_COLUMNS + qcols)
        w.writerows(zip(ids, map(repr, lat.tolist()), map(repr, (lat / fm.solo_ms).tolist()),
                        map(repr, fm.latency_ms.tolist()), *(map(repr, b.tolist()) for b in bounds)))
    return len(ids)


def write_measurement_predictions(model: InterferenceModel, measurements: Measurements,
                                  profiles: ProfileTable | None, path: str | os.PathLike[str], *,
                                  quantiles: tuple[float, ...] = ()) -> int:
    """Write ``run, member, model, batch_size, share, predicted_latency_ms, predicted_slowdown,
    observed_latency_ms`` per measurement row (atomically); returns the number of rows.

    ``member`` tells a run's rows apart (a model paired with itself gives two rows alike otherwise):
    the measurements' ``member`` label where they have one, else the row's position in its run
    (0, 1, ...).

    With ``quantiles`` (a :class:`~interfpred.Calibrated` predictor), one more column per quantile
    ``q``, ``latency_q<q>_ms``: the latency bound at ``q``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from interfpred.data.datasets import gavel_v100
    >>> from interfpred.model.interference import InterferenceModel
    >>> m = gavel_v100()
    >>> model = InterferenceModel().fit(measurements=m)
    >>> model.extractor.feature_map       # chosen by validation among the maps these counters allow
    'shares'
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
    >>> write_measurement_predictions(model, m, None, path)
    660
    >>> path.read_text().splitlines()[0]
    'run,member,model,batch_size,share,predicted_latency_ms,predicted_slowdown,observed_latency_ms'
    """
    fm = model.features(profiles=profiles, measurements=measurements)
    lat = model.latency_from_features(fm)
    bounds = [model.latency_from_features(fm, quantile=q) for q in quantiles]
    qcols = tuple(f"latency_q{float(q):g}_ms" for q in quantiles)
    member = measurements.member if measurements.member is not None else _positions_in_run(measurements.run_code)
    check_finite_columns(dict(zip(MEASUREMENT_PREDICTION_COLUMNS[5:] + qcols, (lat, lat / fm.solo_ms, fm.latency_ms,
                                                                               *bounds))), path)
    if format_of(path) != "csv":      # Parquet or Arrow by suffix (needs pyarrow)
        cols = (measurements.run, member, measurements.model, measurements.batch_size, measurements.share, lat,
                lat / fm.solo_ms, fm.latency_ms, *bounds)
        return write_predictions_table(dict(zip(MEASUREMENT_PREDICTION_COLUMNS + qcols, cols)), path)
    with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(MEASUREMENT_PREDICTION_COLUMNS + qcols)
        w.writerows(zip(measurements.run.tolist(), member.tolist(), measurements.model.tolist(), measurements.batch_size.tolist(),
                        map(repr, measurements.share.tolist()), map(repr, lat.tolist()),
                        map(repr, (lat / fm.solo_ms).tolist()), map(repr, fm.latency_ms.tolist()),
                        *(map(repr, b.tolist()) for b in bounds)))
    return len(lat)


def _positions_in_run(run_code: np.ndarray) -> np.ndarray:
    """Each row's position among the rows of its run (0, 1, ...), in row order."""
    order = np.argsort(run_code, kind="stable")
    codes = np.asarray(run_code)[order]
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    pos = np.arange(len(codes)) - np.repeat(starts, np.diff(np.r_[starts, len(codes)]))
    out = np.empty(len(codes), dtype=np.int64)
    out[order] = pos
    return out
