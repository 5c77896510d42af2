"""E4 coverage: calibrated latency bounds on real co-location measurements (Gavel's V100 pairs).

The real pairs of :func:`interfpred.data.datasets.gavel_v100` in three settings of E4 (split by
run; leave one model out; a stream with a new model halfway): coverage of the 0.9 and 0.99 latency
bounds pooled over every test row of every fold, for a point predictor wrapped four ways (ACI, ACI
with per-model groups and the fixed split-conformal bound, online; the frozen bounds cross-fitted
inside the training rows, with cold thresholds for rows of a model the training rows lack, which
``predict`` serves) beside the quantile baseline. docs/results.md describes the protocol with its
tables.

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
from interfpred.evaluation.text_tables import markdown_table, text_table
from interfpred.evaluation.validation import involvement
from interfpred.experiments.bounds import COVERAGE_QUANTILES, COVERAGE_TOLERANCE
from interfpred.experiments.real import new_model_streams
from interfpred.experiments.report import ReproduceContext, Section
from interfpred.features import FeatureMatrix, TimeWeighted
from interfpred.features.measurement_features import measurement_features
from interfpred.model.crossfit import (
    NOVELTY_CATEGORIES,
    cross_fit_bounds,
    model_entities,
    novelty,
    take_rows,
)
from interfpred.predictors import Calibrated, make_predictor, registered

__all__ = ["run_e4_coverage"]

_WRAPS = (("ACI", {"method": "aci"}), ("ACI, per-model groups", {"method": "aci", "groups": "entity"}),
          ("fixed split (fitted on train)", {"method": "fixed"}),
          ("frozen, cross-fitted (what predict serves)", {"method": "cross-fit"}))
_COLUMNS = ("split by run", "leave one model out", "stream, new model halfway")


def _point_predictors() -> list[tuple[str, str]]:
    kinds = [("RLS", "rls"), ("pair mean", "pair_mean"), ("EntityRLS", "entity_rls")]
    return [(label, k) for label, k in kinds if k in registered()]


def _fold_bounds(fm: Any, codes: np.ndarray, models: np.ndarray, kind: str, wrap: dict[str, Any], fold: Any,
                 quantiles: Sequence[float]) -> tuple[dict[str, np.ndarray], dict, dict]:
    train, test = (np.flatnonzero(r) if np.asarray(r).dtype == bool else np.asarray(r) for r in fold[1:])
    ent = fm.entities
    rows = {"obs": fm.latency_ms[test], "solo": fm.solo_ms[test], "model": models[test],
            "novelty": _novelty(fm, train, test)}
    if wrap["method"] == "cross-fit":
        return rows, _frozen_bounds(fm, codes, kind, train, test, quantiles), {}
    # declared for the rows' target, as the model that would hold it is
    cal = Calibrated(kind, quantiles=tuple(quantiles), scale="relative", target=fm.target, **wrap)
    cal.fit(fm.X[train], fm.y[train], entities=None if ent is None else ent.take(train))
    start, end = run_stamps(codes[test])
    _, bounds = prequential_bounds(cal, fm.X[test], fm.y[test], fm.solo_ms[test], "slowdown", quantiles,
                                   start_ms=start, end_ms=end, entities=None if ent is None else ent.take(test))
    base = baseline_bounds(cal.train_quantiles_ or {}, fm.solo_ms[test], "slowdown", quantiles)
    return rows, bounds, base


def _novelty(fm: FeatureMatrix, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Novelty category name of each test row against the models of the training rows."""
    ent = fm.entities
    if ent is None:
        return np.full(len(test), NOVELTY_CATEGORIES[0])
    seen = np.asarray(ent.names)[involvement(ent.take(train)).any(axis=0)].tolist()
    return np.asarray(NOVELTY_CATEGORIES)[novelty(ent.take(test), seen)]


def _frozen_bounds(fm: FeatureMatrix, codes: np.ndarray, kind: str, train: np.ndarray, test: np.ndarray,
                   quantiles: Sequence[float]) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """Frozen bounds of the test rows: thresholds cross-fitted on the training runs, as ``fit`` makes them."""
    tr, te = take_rows(fm, train), take_rows(fm, test)
    p = make_predictor(kind, target=fm.target)
    levels = sorted({float(q) for q in quantiles} | {1.0 - float(q) for q in quantiles})
    fb = cross_fit_bounds(p, tr, codes[train], levels)
    fitted = p.clone()
    call(fitted, "fit", tr.X, tr.y, entities=tr.entities)
    mean = np.asarray(call(fitted, "predict", te.X, entities=te.entities), dtype=np.float64)
    cats = fb.categories(model_entities(te, p))
    return {float(q): (fb.bound(mean, 1.0 - float(q), cats) * te.solo_ms, fb.bound(mean, float(q), cats) * te.solo_ms)
            for q in quantiles}


def _pool(parts: list[tuple[dict, dict, dict]], quantiles: Sequence[float]) -> tuple[list, list, list, list]:
    obs = np.concatenate([p[0]["obs"] for p in parts])
    solo = np.concatenate([p[0]["solo"] for p in parts])
    models = np.concatenate([p[0]["model"] for p in parts])
    pooled = {q: tuple(np.concatenate([p[1][q][j] for p in parts]) for j in (0, 1)) for q in quantiles}
    base = ({q: tuple(np.concatenate([p[2][q][j] for p in parts]) for j in (0, 1)) for q in quantiles}
            if all(p[2] for p in parts) else {})
    per_fold = [coverage_rows(p[0]["obs"], p[0]["solo"], p[1]) for p in parts]
    nov = np.concatenate([p[0]["novelty"] for p in parts])
    by_novelty = [r for r in coverage_rows(obs, solo, pooled, groups=nov) if r["group"] != "all"]
    return (coverage_rows(obs, solo, pooled, groups=models),
            coverage_rows(obs, solo, base, groups=models) if base else [], per_fold, by_novelty)


def run_e4_coverage(ctx: ReproduceContext, quantiles: Sequence[float] = COVERAGE_QUANTILES) -> Section:
    """Coverage of calibrated bounds on Gavel's real pairs, beside fixed split conformal and the quantile baseline."""
    m = gavel_v100()
    small = ctx.executions is not None          # the tests' size knob: a few splits
    repeats = 3 if small else (E4_QUICK_REPEATS if ctx.quick else E4_REPEATS)
    fm = measurement_features(TimeWeighted(feature_map="shares", target="slowdown"), m, None)
    codes, models = np.asarray(m.run_code), np.asarray(m.model).astype(str)
    folds = {_COLUMNS[0]: run_folds(m, "pair", repeats=repeats, seed=ctx.seed),
             _COLUMNS[1]: run_folds(m, "model", repeats=1),
             _COLUMNS[2]: new_model_streams(m, seed=ctx.seed)}
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
                overall, base, per_fold, by_novelty = _pool(parts, quantiles)
                results[label][col] = {"pooled": [r for r in overall if r["group"] == "all"],
                                       "by_novelty": by_novelty,
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
    stream = _COLUMNS[2]
    nov_header = ["method"] + [f"{stream}, {cat} q={q:g}" for cat in NOVELTY_CATEGORIES for q in quantiles]
    nov_table = []
    for label in results:
        rs = results[label][stream].get("by_novelty")
        if not rs or ("ACI" not in label and "cross-fitted" not in label) or "groups" in label:
            continue
        nov_table.append([label] + [next((f"{r['coverage']:.4f} (n={r['n']})" for r in rs
                                          if r["group"] == cat and r["quantile"] == q), "-")
                                    for cat in NOVELTY_CATEGORIES for q in quantiles])
    misses = [(label, c, q, r["coverage"]) for label in results if label != "quantile baseline" and "ACI" in label
              for c in _COLUMNS for r in results[label][c]["pooled"] for q in [r["quantile"]]
              if abs(r["coverage"] - q) > COVERAGE_TOLERANCE + COVERAGE_GOAL_SLACK]
    verdict = ("Goal met: every ACI bound within 2 points of nominal (pooled) in every column." if not misses else
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
             f"{len(folds[_COLUMNS[0]])} seeded 70/30 splits; leave one model out: {len(folds[_COLUMNS[1]])} "
             "folds, each testing every run that involves the held-out model; stream: "
             f"{len(folds[_COLUMNS[2]])} streams, one per model, fitted on the first half. The training rows are the warm-up (at least "
             f"{CALIBRATED_WARMUP}); coverage is pooled over every test row of every fold, in brackets the range "
             "over folds. Interval score in slowdown units (lower is better). Per-model groups need "
             "100 scores of a model before its own threshold is used; fit scores only the last quarter of the "
             "training rows (about 115, spread over the models) and a fold's test rows add a few dozen per "
             "model, so a model's group seldom gets there and the row then mostly equals plain ACI. The frozen, "
             "cross-fitted rows predict the test rows without learning, with novelty-conditional thresholds "
             "cross-fitted inside the training rows: rows whose models the training runs all hold get thresholds "
             "from 5-fold residuals by run, rows that involve a model the training runs lack (own or co-runner) "
             "cold thresholds from each training model held out in turn; the bounds `predict` and `evaluate` "
             "without `--online` serve.")
    top = max(quantiles)
    worst = []
    for label in results:
        rs = [r for r in per_model if r["method"] == label and r["column"] == _COLUMNS[1] and r["quantile"] == top]
        if "cross-fitted" in label and rs:
            w = min(rs, key=lambda r: r["coverage"])
            worst.append(f"{label.split(',')[0]} {w['group']} {w['coverage']:.4f} of {w['n']}")
    verdict += (f" Lowest per-model coverage of the frozen bounds, {_COLUMNS[1]}, q={top:g} (rows by their own "
                "model): " + "; ".join(worst) + "." if worst else "")
    nov_intro = (f"Coverage by novelty of the test row on the stream ({NOVELTY_CATEGORIES[0]}: every model of the "
                 f"row is in the training runs; {NOVELTY_CATEGORIES[1]}: the new model is the row's own or its "
                 "co-runner; every test row of leave one model out is cold):")
    md = "\n\n".join([intro, "Coverage:", markdown_table(header, table), "Interval score:",
                      markdown_table(header, scores), nov_intro, markdown_table(nov_header, nov_table), verdict])
    terminal = "\n".join(["coverage (pooled; range over folds)", text_table(header, table), "",
                          "interval score", text_table(header, scores), "",
                          "coverage by novelty of the test row (stream)", text_table(nov_header, nov_table), "",
                          verdict])
    data = {"rows": len(m), "runs": m.n_runs, "quantiles": list(quantiles), "results": results,
            "per_model": per_model, "goal": {"met": not misses, "misses": [list(x) for x in misses],
                     "frozen_misses": [list(x) for x in frozen_misses]}}
    return Section(title="E4 coverage: calibrated latency bounds on real pairs (Gavel V100)", markdown=md,
                   terminal=terminal, data=data)
