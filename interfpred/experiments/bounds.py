"""Calibrated latency bounds in the report: coverage on the workload-change sets, and the pair model of E3 (e).

**Coverage (E2 sets)** (:func:`run_coverage`): a :class:`~interfpred.Calibrated` RLS fitted on
75 % of ``train``, then bounding each workload-change set prequentially; coverage of the 0.9 and
0.99 latency bounds after a warm-up, beside the fixed and rolling split-conformal bounds, ACI with
per-model groups and the quantile baseline. The goal: ACI within 2 points of nominal on every set.
docs/results.md describes the protocol with its tables. :func:`simulate_pairs` and
:func:`fit_calibrated_pair_model` build the pair model of E3 policy (e).

Examples
--------
>>> import pathlib, tempfile
>>> from interfpred.experiments.report import ReproduceContext
>>> sec = run_coverage(ReproduceContext(pathlib.Path(tempfile.mkdtemp()), executions=500))
>>> sec.title
'Coverage of calibrated latency bounds (E2 sets)'
>>> sorted(sec.data["results"]["ACI"])
['held-out', 'test1', 'test2', 'test3']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from interfpred.constants import (
    CALIBRATED_WARMUP,
    COVERAGE_GOAL_SLACK,
    E3_BOUND_GOAL_ATTAINMENT,
    E3_BOUND_GOAL_GOODPUT_RATIO,
    E3_GOAL_TRACKER_AT_LEAST,
    E3_PAIR_BATCHES,
    REPRODUCE_TRAIN_SHARE,
)
from interfpred.data.entities import Entities
from interfpred.data.profiles import ProfileTable
from interfpred.evaluation.coverage import (
    baseline_bounds,
    coverage_rows,
    prequential_bounds,
)
from interfpred.evaluation.text_tables import markdown_table, text_table
from interfpred.experiments.paper import E2_SETS, scenario_for
from interfpred.experiments.report import ReproduceContext, Section
from interfpred.experiments.scheduling.pairs import simulate_pairs
from interfpred.features import TimeWeighted, transform_many
from interfpred.predictors import RLS, Calibrated
from interfpred.sim.contention import GpuSpec
from interfpred.sim.operators import HiddenFactors

__all__ = ["COVERAGE_QUANTILES", "fit_calibrated_pair_model", "run_coverage", "simulate_pairs"]

#: The latency quantiles whose coverage the report checks.
COVERAGE_QUANTILES = (0.9, 0.99)
#: Largest distance of observed from nominal coverage the calibrated bounds aim for.
COVERAGE_TOLERANCE = 0.02
_METHODS = (("ACI", "aci", "rls", "global"), ("ACI, per-model groups", "aci", "rls", "entity"),
            ("rolling split", "split", "rls", "global"),
            ("fixed split (fitted on train)", "fixed", "rls", "global"),
            ("fixed split, offline linear", "fixed", "offline_linear", "global"))
_SET_LABELS = {"held-out": "held-out", "test1": "test 1 (load)", "test2": "test 2 (new models)",
               "test3": "test 3 (mixed)"}


def _extractor() -> TimeWeighted:
    return TimeWeighted(feature_map="rich", target="slowdown")


def run_coverage(ctx: ReproduceContext, quantiles: Sequence[float] = COVERAGE_QUANTILES) -> Section:
    """Coverage of the calibrated bounds on the E2 sets, beside fixed split conformal and the quantile baseline."""
    sc = scenario_for(ctx)
    ex = _extractor()
    key = ("bounds_features", id(sc))
    if key not in ctx.cache:
        ctx.progress("coverage: time-weighted rich features of the E2 sets")
        names = ("train", "test1", "test2", "test3")
        ctx.cache[key] = dict(zip(names, (transform_many(sc.traces[s], sc.profiles, [ex])[0] for s in names)))
    fms = ctx.cache[key]
    train = fms["train"]
    cut = max(2, min(len(train) - 1, int(round(REPRODUCE_TRAIN_SHARE * len(train)))))
    own = {s: Entities.from_lists(np.asarray(sc.traces[s].model).tolist(), [{}] * len(fms[s])) for s in fms}
    fitted = {label: Calibrated(kind, quantiles=tuple(quantiles), method=m, groups=g).fit(
        train.X[:cut], train.y[:cut], entities=own["train"].take(np.arange(cut))) for label, m, kind, g in _METHODS}
    results: dict[str, dict[str, dict[str, Any]]] = {label: {} for label, _, _, _ in _METHODS}
    results["quantile baseline"] = {}
    per_model: dict[str, list[dict[str, Any]]] = {}
    for set_name in E2_SETS:
        src = "train" if set_name == "held-out" else set_name
        fm, trace = fms[src], sc.traces[src]
        rows = slice(cut, len(fm)) if set_name == "held-out" else slice(0, len(fm))
        n = rows.stop - rows.start
        skip = min(CALIBRATED_WARMUP, max(n - 1, 0))
        ctx.progress(f"coverage: {set_name} ({n} executions), prequential bounds")
        X, y, solo, obs = fm.X[rows], fm.y[rows], fm.solo_ms[rows], fm.latency_ms[rows]
        models = np.asarray(trace.model)[rows]
        ent = own[src].take(np.arange(rows.start, rows.stop))
        for label, _, _, _ in _METHODS:
            cal = Calibrated.from_state(fitted[label].to_state())
            _, bounds = prequential_bounds(cal, X, y, solo, "slowdown", quantiles, start_ms=trace.start_ms[rows],
                                           end_ms=trace.end_ms[rows], entities=ent)
            scored = coverage_rows(obs, solo, bounds, groups=models, skip=skip)
            results[label][set_name] = {f"{r['quantile']:g}": r for r in scored if r["group"] == "all"}
            per_model.setdefault(set_name, []).extend({**r, "method": label} for r in scored if r["group"] != "all")
        base = baseline_bounds(fitted["ACI"].train_quantiles_ or {}, solo, "slowdown", quantiles)
        scored = coverage_rows(obs, solo, base, groups=models, skip=skip)
        results["quantile baseline"][set_name] = {f"{r['quantile']:g}": r for r in scored if r["group"] == "all"}
        per_model[set_name].extend({**r, "method": "quantile baseline"} for r in scored if r["group"] != "all")
    goal = _goal(results["ACI"], quantiles)
    header = ["method"] + [f"{_SET_LABELS[s]} q={q:g}" for s in E2_SETS for q in quantiles]

    def table(field: str) -> list[list[object]]:
        return [[label] + [results[label][s][f"{q:g}"][field] for s in E2_SETS for q in quantiles]
                for label in results]

    worst = [[label] + [max(abs(r["coverage"] - q) for r in per_model[s] if r["method"] == label and r["quantile"] == q)
                        for s in E2_SETS for q in quantiles] for label in results]
    per_model_rows = [[s, r["group"], r["method"], f"{r['quantile']:g}", r["n"], r["coverage"], r["width"],
                       r["interval_score"]] for s in E2_SETS for r in per_model[s]]
    pm_header = ["set", "model", "method", "quantile", "n", "coverage", "width", "interval score"]
    setup = (f"Calibrated RLS (time-weighted rich map, target slowdown, scale "
             f"{fitted['ACI'].scale_!r}, window {fitted['ACI'].window}, gamma {fitted['ACI'].gamma:g}) fitted on "
             f"the first {cut} executions of `train`, then prequential over each set with delayed feedback; coverage "
             f"= share of executions whose latency is at most the bound, counted after the first {CALIBRATED_WARMUP} "
             "executions of each set. Width and interval score of the central interval [1-q, q], slowdown units. "
             "The fixed split-conformal bound uses the same online RLS with thresholds frozen after fit; "
             "the last fixed row freezes the point predictor too (offline linear).")
    md = "\n\n".join([setup, "Coverage:", markdown_table(header, table("coverage")),
                      "Mean width:", markdown_table(header, table("width")),
                      "Interval score (lower is better):", markdown_table(header, table("interval_score")),
                      "Largest distance of a model's coverage from nominal (per-model view of the same runs):",
                      markdown_table(header, worst), "Per model:", markdown_table(pm_header, per_model_rows), _verdict(goal)])
    terminal = "\n".join(["coverage", text_table(header, table("coverage")), "", "interval score",
                          text_table(header, table("interval_score")), "",
                          "largest distance of a model's coverage from nominal", text_table(header, worst), "",
                          _verdict(goal)])
    data = {"quantiles": list(quantiles), "warmup": CALIBRATED_WARMUP, "train_rows": cut, "results": results,
            "per_model": per_model, "worst_model_gap": {row[0]: row[1:] for row in worst}, "goal": goal,
            "config": {"scale": fitted["ACI"].scale_, "window": fitted["ACI"].window, "gamma": fitted["ACI"].gamma}}
    return Section(title="Coverage of calibrated latency bounds (E2 sets)", markdown=md, terminal=terminal, data=data)


def _goal(aci: dict[str, dict[str, Any]], quantiles: Sequence[float]) -> dict[str, Any]:
    misses = [{"set": s, "quantile": q, "coverage": aci[s][f"{q:g}"]["coverage"]}
              for s in aci for q in quantiles
              if abs(aci[s][f"{q:g}"]["coverage"] - q) > COVERAGE_TOLERANCE + COVERAGE_GOAL_SLACK]
    return {"tolerance": COVERAGE_TOLERANCE, "met": not misses, "misses": misses}


def _verdict(goal: dict[str, Any]) -> str:
    if goal["met"]:
        return f"Goal met: ACI coverage within {goal['tolerance'] * 100:g} points of nominal on every set."
    miss = "; ".join(f"{m['set']} q={m['quantile']:g}: {m['coverage']:.4f}" for m in goal["misses"])
    return f"Goal NOT met (ACI within {goal['tolerance'] * 100:g} points of nominal on every set): {miss}."


def fit_calibrated_pair_model(profiles: ProfileTable, spec: GpuSpec, *, seed: int = 0,
                              batches: tuple[int, ...] = E3_PAIR_BATCHES,
                              hidden: Mapping[str, HiddenFactors] | None = None, **params: Any) -> Calibrated:
    """A Calibrated RLS (time-weighted rich map, target rate) fitted on simulated pairs, for E3 policy (e).

    The pairs of :func:`simulate_pairs` (the pair data of
    :func:`interfpred.experiments.scheduling.experiment.fit_pair_models`). ``params`` go to :class:`Calibrated`.

    Examples
    --------
    >>> from interfpred.sim.zoo import zoo_profiles
    >>> from interfpred.sim.contention import get_gpu_spec
    >>> cal = fit_calibrated_pair_model(zoo_profiles("l4"), get_gpu_spec("l4"), batches=(1, 8))
    >>> cal.n_seen_ > 0
    True
    """
    res = simulate_pairs(profiles, spec, batches=batches, hidden=hidden, seed=seed)
    (tw,) = transform_many(res.trace, profiles, [TimeWeighted(feature_map="rich", target="rate")])
    order = np.random.default_rng(seed).permutation(len(tw))   # calibrate on a random quarter, not the last pairs
    return Calibrated(RLS(), **params).fit(tw.X[order], tw.y[order])


def bound_goal(results: dict[str, list[Any]], loads: Sequence[float]) -> dict[str, Any]:
    """E3 goal of policy (e) against (c): where (c) holds >= 99 %, (e) >= 99.9 % with goodput within 5 % of
    (c)'s; where (c) falls below 99 %, (e) at least as high as (c).

    ``results`` maps policy names (``"tracker"``, ``"calibrated"``) to per-load results with
    ``attainment`` and ``goodput_rps``.
    """
    rows = []
    for i, load in enumerate(loads):
        c, e = results["tracker"][i], results["calibrated"][i]
        ratio = e.goodput_rps / c.goodput_rps if c.goodput_rps > 0 else float("nan")
        regime = "c_meets_99" if c.attainment >= E3_GOAL_TRACKER_AT_LEAST else "beyond"
        met = ((e.attainment >= E3_BOUND_GOAL_ATTAINMENT and ratio >= E3_BOUND_GOAL_GOODPUT_RATIO)
               if regime == "c_meets_99" else e.attainment >= c.attainment)
        rows.append({"load": load, "regime": regime, "tracker": c.attainment, "calibrated": e.attainment,
                     "goodput_ratio": ratio, "met": bool(met)})
    return {"met": all(r["met"] for r in rows), "per_load": rows}


def bound_verdict(goal: dict[str, Any]) -> str:
    """One line per load on the goal of :func:`bound_goal`."""
    lines = [f"Policy (e) goal {'met' if goal['met'] else 'NOT met'} (where (c) >= {E3_GOAL_TRACKER_AT_LEAST:.0%}: "
             f"(e) >= {E3_BOUND_GOAL_ATTAINMENT:.1%} and goodput within {1 - E3_BOUND_GOAL_GOODPUT_RATIO:.0%} of (c); "
             "beyond: (e) >= (c)):"]
    for r in goal["per_load"]:
        where = f"(c) >= {E3_GOAL_TRACKER_AT_LEAST:.0%}" if r["regime"] == "c_meets_99" else "beyond"
        lines.append(f"- load {r['load']:g} ({where}): "
                     f"(c) {100 * r['tracker']:.2f} %, (e) {100 * r['calibrated']:.2f} %, goodput (e)/(c) "
                     f"{r['goodput_ratio']:.3f}"
                     f" -> {'met' if r['met'] else 'NOT met'}")
    return "\n".join(lines)
