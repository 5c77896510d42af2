"""E4 coverage: calibrated latency bounds on real co-location measurements (Gavel's V100 pairs).

The real pairs of :func:`interfpred.data.datasets.gavel_v100` in two online settings of E4 (split by
run; a stream with a new model halfway): coverage of the 0.9 and 0.99 latency bounds pooled over
every test row of every fold, for a point predictor wrapped three ways (ACI, ACI with per-model
groups, the fixed split-conformal bound) beside the quantile baseline. docs/results.md describes
the protocol with its tables.

Examples
--------
>>> import pathlib, tempfile
>>> from interfpred.experiments.report import ReproduceContext
>>> sec = run_e4_coverage(ReproduceContext(pathlib.Path(tempfile.mkdtemp()), executions=500))
>>> sec.title
'E4 coverage: calibrated latency bounds on real pairs (Gavel V100)'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from interfpred.constants import (
    CALIBRATED_WARMUP,
    COVERAGE_GOAL_SLACK,
    E4_QUICK_REPEATS,
    E4_REPEATS,
    FROZEN_COVERAGE_SLACK,
)
from interfpred.data.datasets import gavel_v100
from interfpred.evaluation import call, run_folds
from interfpred.evaluation.coverage import (
    baseline_bounds,
    coverage_rows,
    prequential_bounds,
    run_stamps,
)
from interfpred.evaluation.tables import markdown_table, text_table
from interfpred.experiments.bounds import COVERAGE_QUANTILES, COVERAGE_TOLERANCE
from interfpred.experiments.real import new_model_streams
from interfpred.experiments.report import ReproduceContext, Section
from interfpred.features import FeatureMatrix, TimeWeighted
from interfpred.features.measurement_features import measurement_features
from interfpred.model.crossfit import cross_fit_bounds, model_entities, take_rows
from interfpred.predictors import Calibrated, make_predictor, registered

__all__ = ["run_e4_coverage"]

_WRAPS = (("ACI", {"method": "aci"}), ("ACI, per-model groups", {"method": "aci", "groups": "entity"}),
          ("fixed split (fitted on train)", {"method": "fixed"}),
          ("frozen, cross-fitted (what predict serves)", {"method": "cross-fit"}))
_COLUMNS = ("split by run", "stream, new model halfway")


def _point_predictors() -> list[tuple[str, str]]:
    kinds = [("RLS", "rls"), ("pair mean", "pair_mean"), ("EntityRLS", "entity_rls")]
    return [(label, k) for label, k in kinds if k in registered()]


def _fold_bounds(fm: Any, codes: np.ndarray, models: np.ndarray, kind: str, wrap: dict[str, Any], fold: Any,
                 quantiles: Sequence[float]) -> tuple[dict[str, np.ndarray], dict, dict]:
    train, test = (np.flatnonzero(r) if np.asarray(r).dtype == bool else np.asarray(r) for r in fold[1:])
    ent = fm.entities
    rows = {"obs": fm.latency_ms[test], "solo": fm.solo_ms[test], "model": models[test]}
    if wrap["method"] == "cross-fit":
        return rows, _frozen_bounds(fm, codes, kind, train, test, quantiles), {}
    cal = Calibrated(kind, quantiles=tuple(quantiles), scale="relative", **wrap)
    cal.fit(fm.X[train], fm.y[train], entities=None if ent is None else ent.take(train))
    start, end = run_stamps(codes[test])
    _, bounds = prequential_bounds(cal, fm.X[test], fm.y[test], fm.solo_ms[test], "slowdown", quantiles,
                                   start_ms=start, end_ms=end, entities=None if ent is None else ent.take(test))
    base = baseline_bounds(cal.train_quantiles_ or {}, fm.solo_ms[test], "slowdown", quantiles)
    return rows, bounds, base


def _frozen_bounds(fm: FeatureMatrix, codes: np.ndarray, kind: str, train: np.ndarray, test: np.ndarray,
                   quantiles: Sequence[float]) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """Frozen bounds of the test rows: thresholds cross-fitted on the training runs, as ``fit`` makes them."""
    tr, te = take_rows(fm, train), take_rows(fm, test)
    p = make_predictor(kind)
    levels = sorted({float(q) for q in quantiles} | {1.0 - float(q) for q in quantiles})
    fb = cross_fit_bounds(p, tr, codes[train], levels)
    fitted = p.clone()
    call(fitted, "fit", tr.X, tr.y, entities=tr.entities)
    mean = np.asarray(call(fitted, "predict", te.X, entities=te.entities), dtype=np.float64)
    cold = fb.cold_rows(model_entities(te, p))
    return {float(q): (fb.bound(mean, 1.0 - float(q), cold) * te.solo_ms, fb.bound(mean, float(q), cold) * te.solo_ms)
            for q in quantiles}


def _pool(parts: list[tuple[dict, dict, dict]], quantiles: Sequence[float]) -> tuple[list, list, list]:
    obs = np.concatenate([p[0]["obs"] for p in parts])
    solo = np.concatenate([p[0]["solo"] for p in parts])
    models = np.concatenate([p[0]["model"] for p in parts])
    pooled = {q: tuple(np.concatenate([p[1][q][j] for p in parts]) for j in (0, 1)) for q in quantiles}
    base = ({q: tuple(np.concatenate([p[2][q][j] for p in parts]) for j in (0, 1)) for q in quantiles}
            if all(p[2] for p in parts) else {})
    per_fold = [coverage_rows(p[0]["obs"], p[0]["solo"], p[1]) for p in parts]
    return (coverage_rows(obs, solo, pooled, groups=models),
            coverage_rows(obs, solo, base, groups=models) if base else [], per_fold)


def run_e4_coverage(ctx: ReproduceContext, quantiles: Sequence[float] = COVERAGE_QUANTILES) -> Section:
    """Coverage of calibrated bounds on Gavel's real pairs, beside fixed split conformal and the quantile baseline."""
    m = gavel_v100()
    small = ctx.executions is not None          # the tests' size knob: a few splits
    repeats = 3 if small else (E4_QUICK_REPEATS if ctx.quick else E4_REPEATS)
    fm = measurement_features(TimeWeighted(feature_map="shares", target="slowdown"), m, None)
    codes, models = np.asarray(m.run_code), np.asarray(m.model).astype(str)
    folds = {_COLUMNS[0]: run_folds(m, "pair", repeats=repeats, seed=ctx.seed),
             _COLUMNS[1]: new_model_streams(m, seed=ctx.seed)}
    results: dict[str, Any] = {}
    per_model: list[dict[str, Any]] = []
    table = []
    for plabel, kind in _point_predictors():
        for wlabel, wrap in _WRAPS:
            label = f"{plabel}, {wlabel}"
            ctx.progress(f"E4 coverage: {label}")
            results[label] = {}
            for col, fl in folds.items():
                parts = [_fold_bounds(fm, codes, models, kind, wrap, f, quantiles) for f in fl]
                overall, base, per_fold = _pool(parts, quantiles)
                results[label][col] = {"pooled": [r for r in overall if r["group"] == "all"],
                                       "fold_coverage": {f"{q:g}": [r["coverage"] for fr in per_fold for r in fr
                                                                    if r["quantile"] == q] for q in quantiles}}
                per_model += [{**r, "method": label, "column": col} for r in overall if r["group"] != "all"]
                if wlabel == "ACI" and plabel == _point_predictors()[0][0]:
                    results.setdefault("quantile baseline", {})[col] = {
                        "pooled": [r for r in base if r["group"] == "all"], "fold_coverage": {}}
    results["quantile baseline"] = results.pop("quantile baseline")      # last row
    header = ["method"] + [f"{c} q={q:g}" for c in _COLUMNS for q in quantiles]

    def cells(label: str, field: str) -> list[object]:
        out: list[object] = [label]
        for c in _COLUMNS:
            for q in quantiles:
                r = next(r for r in results[label][c]["pooled"] if r["quantile"] == q)
                fc = results[label][c]["fold_coverage"].get(f"{q:g}")
                v = r[field]
                out.append(f"{v:.4f} ({min(fc):.2f}-{max(fc):.2f})" if field == "coverage" and fc else v)
        return out

    table = [cells(label, "coverage") for label in results]
    scores = [cells(label, "interval_score") for label in results]
    misses = [(label, c, q, r["coverage"]) for label in results if label != "quantile baseline" and "ACI" in label
              for c in _COLUMNS for r in results[label][c]["pooled"] for q in [r["quantile"]]
              if abs(r["coverage"] - q) > COVERAGE_TOLERANCE + COVERAGE_GOAL_SLACK]
    verdict = ("Goal met: every ACI bound within 2 points of nominal (pooled) in both columns." if not misses else
               "Goal NOT met (ACI within 2 points of nominal, pooled): " +
               "; ".join(f"{a} / {c} q={q:g}: {v:.4f}" for a, c, q, v in misses) + ".")
    frozen_misses = [(label, c, q, r["coverage"]) for label in results if "cross-fitted" in label
                     for c in _COLUMNS for r in results[label][c]["pooled"] for q in [r["quantile"]]
                     if abs(r["coverage"] - q) > FROZEN_COVERAGE_SLACK]
    verdict += (" Frozen cross-fitted bounds within 3 points of nominal (pooled): "
                + ("met." if not frozen_misses else "NOT met: " + "; ".join(
                    f"{a} / {c} q={q:g}: {v:.4f}" for a, c, q, v in frozen_misses) + "."))
    intro = (f"Real measurements: {len(m)} rows of {m.n_runs} Gavel V100 pair runs. Features: MPS shares and "
             "co-runner count (no counters), target slowdown, relative scores. Split by run: "
             f"{len(folds[_COLUMNS[0]])} seeded 70/30 splits; stream: {len(folds[_COLUMNS[1]])} streams, one per "
             "model, fitted on the first half. The training rows are the warm-up (at least "
             f"{CALIBRATED_WARMUP}); coverage is pooled over every test row of every fold, in brackets the range "
             "over folds. Interval score in slowdown units (lower is better). Per-model groups need "
             "100 scores of a model before its own threshold is used; fit scores only the last quarter of the "
             "training rows (about 115, spread over the models) and a fold's test rows add a few dozen per "
             "model, so a model's group seldom gets there and the row then mostly equals plain ACI. The frozen, "
             "cross-fitted rows predict the test rows without learning, with thresholds from 5-fold residuals by "
             "run inside the training rows (cold thresholds, from each training model held out in turn, for rows "
             "that involve a model the training runs lack): the bounds `predict` and `evaluate` without `--online` "
             "serve.")
    md = "\n\n".join([intro, "Coverage:", markdown_table(header, table), "Interval score:",
                      markdown_table(header, scores), verdict])
    terminal = "\n".join(["coverage (pooled; range over folds)", text_table(header, table), "",
                          "interval score", text_table(header, scores), "", verdict])
    data = {"rows": len(m), "runs": m.n_runs, "quantiles": list(quantiles), "results": results,
            "per_model": per_model, "goal": {"met": not misses, "misses": [list(x) for x in misses],
                     "frozen_misses": [list(x) for x in frozen_misses]}}
    return Section(title="E4 coverage: calibrated latency bounds on real pairs (Gavel V100)", markdown=md,
                   terminal=terminal, data=data)
