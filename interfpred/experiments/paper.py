"""The paper's two experiments on the simulator, with interfpred's best configuration beside them.

Both run on :func:`interfpred.sim.workload.paper_scenario` (see docs/simulator.md and
docs/results.md); the scenario, the configurations and their choice on training data are in
:mod:`interfpred.experiments.selection`.

**E1, co-location dynamics** (:func:`run_e1`): gpulets' four inputs aggregated five ways (Static,
EWMA(0.2, 0.5, 0.8), TimeWeighted), each learned by OfflineLinear and by prequential RLS on the
``train`` set split 75/25; relative-error CDF and accuracy figures. **E2, workload change**
(:func:`run_e2`): OfflineLinear, OnlineSGD and RLS fitted on 75 % of ``train``, then run on the
held-out quarter and test sets 1-3; MSE of slowdown and MAPE of latency. Step sizes and
interfpred's best configuration (the extra row of both tables) are chosen on training data only.
docs/results.md describes both protocols with their tables.

Examples
--------
>>> import pathlib, tempfile
>>> from interfpred.experiments.report import ReproduceContext
>>> ctx = ReproduceContext(out_dir=pathlib.Path(tempfile.mkdtemp()), executions=600)
>>> section = run_e1(ctx)
>>> section.title
'E1: co-location dynamics'
>>> sorted(section.data["rows"][0])[:3]
['aggregation', 'beyond_60_%', 'map']
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from interfpred.constants import (
    ACCURACY_WITHIN_10,
    ACCURACY_WITHIN_20,
    BASELINE_KINDS,
    E1_GOAL_WITHIN_10,
    REPRODUCE_EWMA_ALPHAS,
)
from interfpred.evaluation import (
    BASELINE_LABELS,
    Column,
    accuracy_summary,
    mape,
    markdown_table,
    mse,
    relative_error_cdf,
    text_table,
)
from interfpred.experiments.plotting import NO_MPL, pyplot
from interfpred.experiments.report import ReproduceContext, Section
from interfpred.experiments.selection import (
    RLS_GRID,
    SCORES_HEADER,
    SGD_GRID,
    Config,
    best_config,
    entity_configs,
    run_config,
    scenario_features,
    scenario_for,
    scores_table,
    select,
    train_cut,
)
from interfpred.features import EWMA, Extractor, FeatureMatrix, Static, TimeWeighted
from interfpred.sim.workload import Scenario

__all__ = ["E2_SETS", "PAPER_E2_MSE", "Config", "run_e1", "run_e2", "scenario_for"]

#: The paper's reported MSE of slowdown (Zhao & Georgantas 2026): offline on seen models, and on test set 2.
PAPER_E2_MSE = {"offline_seen": 0.0355, "offline_test2": 0.5480, "sgd_test2": 0.4311, "rls_test2": 0.3467}
#: Columns of E2: the held-out quarter of the train set, then the three test sets.
E2_SETS = ("held-out", "test1", "test2", "test3")
_SET_LABELS = {"held-out": "held-out (seen)", "test1": "test 1 (load)", "test2": "test 2 (new models)",
               "test3": "test 3 (mixed)"}
_PAPER_MAP = "gpulets"
#: The paper learns slowdown (the library's default target is the rate).
_PAPER_TARGET = "slowdown"
_E2_ALPHA = 0.5
#: Keys of E1's rows shown in percent, and their columns (relative errors of latency, shares of executions).
_E1_PERCENT_KEYS = ("within_10_%", "within_20_%", "median_%", "p90_%", "p99_%", "beyond_60_%", "under_1.5x_%")
_E1_PERCENT_COLUMNS = (Column("within 10 %", unit="% of rows"), Column("within 20 %", unit="% of rows"),
                       Column("median error", unit="%"), Column("p90 error", unit="%"),
                       Column("p99 error", unit="%"), Column("beyond 60 %", unit="% of rows"),
                       Column("under-predicted > 1.5x", unit="% of rows"))
#: E1's goal in percent of executions within 10 % (the constant is a fraction).
_E1_GOAL_WITHIN_10_PCT = 100 * E1_GOAL_WITHIN_10


# ---------------------------------------------------------------------------- E1
def _e1_extractors() -> list[tuple[str, Extractor]]:
    out: list[tuple[str, Extractor]] = [("Static", Static(feature_map=_PAPER_MAP, target=_PAPER_TARGET))]
    out += [(f"EWMA({a})", EWMA(alpha=a, feature_map=_PAPER_MAP, target=_PAPER_TARGET)) for a in REPRODUCE_EWMA_ALPHAS]
    out.append(("TimeWeighted", TimeWeighted(feature_map=_PAPER_MAP, target=_PAPER_TARGET)))
    return out


_METHODS = (("OfflineLinear", "offline_linear"), ("RLS", "rls"))


def run_e1(ctx: ReproduceContext) -> Section:
    """E1, co-location dynamics: five aggregations x {OfflineLinear, RLS}, plus the best configuration.

    Writes ``e1_cdf.png`` into ``ctx.out_dir`` when matplotlib is installed.
    """
    t0 = time.perf_counter()
    sc = scenario_for(ctx)
    tr = sc.traces["train"]
    n = len(tr)
    cut = train_cut(n)
    ctx.progress(f"E1: features of {n} executions; choosing interfpred's best configuration on training rows")
    best, best_scores = best_config(ctx)
    named = _e1_extractors()
    fms = scenario_features(ctx, "train", [ex for _, ex in named] + [best.extractor])
    test_rows = slice(cut, n)
    obs_lat = fms[0].latency_ms[test_rows]
    solo = fms[0].solo_ms[test_rows]
    obs_sd = obs_lat / solo
    ctx.progress(f"E1: fitting on {cut} executions, testing on {n - cut}")
    rows: list[dict[str, Any]] = []
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    entries: list[tuple[str, Extractor, FeatureMatrix, str, str | Config]] = [
               (label, ex, fm, mlabel, kind) for (label, ex), fm in zip(named, fms[:-1])
               for mlabel, kind in _METHODS]
    entries.append(("interfpred best", best.extractor, fms[-1], "RLS", best.kind))
    ent_cfg, ent_abl, _ = entity_configs(ctx)
    entries.append(("interfpred best", best.extractor, fms[-1], "EntityRLS", ent_cfg))
    entries.append(("interfpred best", best.extractor, fms[-1], "EntityRLS, no entity terms", ent_abl))
    # The baselines on the same rows, same protocol (they ignore the features).
    entries += [(BASELINE_LABELS[k], named[-1][1], fms[len(named) - 1], "-", k) for k in BASELINE_KINDS]
    for label, ex, fm, mlabel, kind in entries:
        if isinstance(kind, Config):
            cfg = kind
        else:
            params = best.params if label == "interfpred best" else ()
            cfg = Config(ex, kind, params)
        lat = run_config(cfg, fm, slice(0, cut), fm, test_rows, tr.start_ms, tr.end_ms)
        s = accuracy_summary(lat / solo, obs_sd)
        rows.append({"aggregation": label, "method": mlabel, "map": ex.feature_map, "target": ex.target,
                     **s.as_percent_dict()})
        curves[f"{label} / {mlabel}"] = relative_error_cdf(lat, obs_lat)
    header: list[str | Column] = ["features", "method", *_E1_PERCENT_COLUMNS, "MSE of slowdown"]
    table = [[r["aggregation"], r["method"], *(r[k] for k in _E1_PERCENT_KEYS), r["mse"]] for r in rows]
    figures, fig_note = _plot_e1(ctx, curves)
    paper_rows = rows[:2 * len(named)]
    w10 = {(r["aggregation"], r["method"]): r["within_10_%"] for r in paper_rows}
    patterns = {}
    for kind_label, _ in _METHODS:
        by_agg = {a: w10[(a, kind_label)] for a, _ in named}
        patterns[f"static_worst_{kind_label}"] = bool(by_agg["Static"] <= min(by_agg.values()))
        patterns[f"timeweighted_best_{kind_label}"] = bool(by_agg["TimeWeighted"] >= max(by_agg.values()))
    best_row = rows[2 * len(named)]
    goal = {"best_within_10_%": best_row["within_10_%"], "target_%": _E1_GOAL_WITHIN_10_PCT,
            "met": bool(best_row["within_10_%"] >= _E1_GOAL_WITHIN_10_PCT)}
    md = [
        f"Trace: the `train` set of the paper scenario ({n} executions; models "
        f"{', '.join(sorted(set(tr.model.tolist())))}; moderate load), split in launch order: the first "
        f"{cut} to fit, the last {n - cut} to test. Features: gpulets' inputs "
        "(`l2_me, dram_me, l2_other, dram_other`, co-runners summed), target slowdown, aggregated five ways. "
        "OfflineLinear is fitted once and frozen; RLS is fitted on the same rows, then runs prequentially "
        "over the test rows (predict at launch, learn at finish). Errors are relative errors of latency; "
        "figures in percent; MSE is of slowdown. The three baselines (no interference; running global mean; running mean per "
        "model and set of co-runner models running at its launch, falling back to the model's mean, then the "
        "global mean, for a key not seen yet) "
        "run the same way on the same rows.",
        "",
        markdown_table(header, table),
        "",
        f"**interfpred best** = {best.label()}, chosen by prequential MAPE on a validation split inside the "
        "training rows (the test rows played no part):",
        "",
        markdown_table(SCORES_HEADER, scores_table(best_scores, best)),
        "",
        f"**EntityRLS** = {ent_cfg.label()}: the same features plus each model's learned sensitivity, "
        "aggressiveness and per-pair terms (entities: the models each execution met, aggregated like the "
        "features), its forgetting and log target chosen the same way; **EntityRLS, no entity terms** is "
        "the same predictor with the entity terms turned off (the ablation).",
        "",
    ]
    md += [f"![Relative-error CDF, E1]({f})" for f in figures] + ([fig_note] if fig_note else [])
    md += ["", _e1_findings(patterns, goal)]
    terminal = text_table(header, table) + f"\n(interfpred best = {best.label()})"
    data = {"executions": n, "train_rows": cut, "test_rows": n - cut, "rows": rows, "patterns": patterns,
            "goal": goal, "best": {"label": best.label(), "extractor": best.extractor.get_spec(),
                                   "predictor": best.kind, "params": dict(best.params)},
            "selection": [{"candidate": c.label(), "validation_mape_%": 100 * s} for c, s in best_scores],
            "runtime_s": time.perf_counter() - t0}
    return Section(title="E1: co-location dynamics", markdown="\n".join(md), terminal=terminal,
                   figures=figures, data=data)


def _yes(b: bool) -> str:
    return "yes" if b else "**no**"


def _findings(title: str, items: list[str]) -> str:
    """The findings paragraph: a title line, then one bullet per item."""
    return "\n".join([title, "", *(f"- {item}" for item in items)])


def _e1_findings(patterns: dict[str, bool], goal: dict[str, Any]) -> str:
    return _findings("Paper patterns and goals (by share within 10 %):", [
        f"Static worst: OfflineLinear {_yes(patterns['static_worst_OfflineLinear'])}, "
        f"RLS {_yes(patterns['static_worst_RLS'])}",
        f"TimeWeighted best of the five: OfflineLinear {_yes(patterns['timeweighted_best_OfflineLinear'])}, "
        f"RLS {_yes(patterns['timeweighted_best_RLS'])}",
        f"interfpred best within 10 %: {goal['best_within_10_%']:.1f} % of executions "
        f"(goal >= {goal['target_%']:g} %: {_yes(goal['met'])})",
    ])


def _plot_e1(ctx: ReproduceContext, curves: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[list[str], str]:
    plt = pyplot()
    if plt is None:
        return [], NO_MPL
    ctx.progress("E1: drawing the relative-error CDF")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, method in zip(axes, ("OfflineLinear", "RLS")):
        for name, (x, f) in curves.items():
            label, m = name.split(" / ")
            if label == "interfpred best":
                if m == "RLS":
                    ax.plot(100 * x, f, color="black", lw=2.2, ls="--", label="interfpred best")
                elif m == "EntityRLS":
                    ax.plot(100 * x, f, color="tab:red", lw=1.8, ls="-.", label="EntityRLS (best extractor)")
            elif m == method:
                ax.plot(100 * x, f, lw=1.5, label=label)
        ax.set_xlim(0, 80)
        ax.set_ylim(0, 1.0)
        for within in (ACCURACY_WITHIN_10, ACCURACY_WITHIN_20):    # the errors the within figures count
            ax.axvline(100 * within, color="grey", lw=0.6, ls=":")
        ax.set_xlabel("relative error of latency (%)")
        ax.set_title(f"gpulets features, {method}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("share of executions (CDF)")
    axes[1].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    name = "e1_cdf.png"
    fig.savefig(ctx.out_dir / name, dpi=110)
    plt.close(fig)
    return [name], ""


# ---------------------------------------------------------------------------- E2
def _e2_configs(ctx: ReproduceContext) -> list[tuple[str, Config, list[tuple[Config, float]]]]:
    ex = EWMA(alpha=_E2_ALPHA, feature_map=_PAPER_MAP, target=_PAPER_TARGET)
    offline = Config(ex, "offline_linear")
    # the paper's SGD: plain normalised steps on the raw features (the library's default standardises them)
    sgd, sgd_scores = select(ctx, "sgd", [Config(ex, "online_sgd", (("learning_rate", lr), ("standardize", False)))
                                          for lr in SGD_GRID])
    rls, rls_scores = select(ctx, "rls", [Config(ex, "rls", (("forgetting", f),)) for f in RLS_GRID])
    best, best_scores = best_config(ctx)
    ent_cfg, ent_abl, ent_scores = entity_configs(ctx)
    return [("Offline linear", offline, []), ("Online SGD", sgd, sgd_scores), ("RLS", rls, rls_scores),
            ("interfpred best", best, best_scores), ("EntityRLS", ent_cfg, ent_scores),
            ("EntityRLS, no entity terms", ent_abl, [])] + [(BASELINE_LABELS[k], Config(ex, k), [])
                                                            for k in BASELINE_KINDS]


def run_e2(ctx: ReproduceContext) -> Section:
    """E2, workload change: offline vs online SGD vs RLS (+ best) on the held-out split and test sets 1-3."""
    t0 = time.perf_counter()
    sc = scenario_for(ctx)
    tr = sc.traces["train"]
    cut = train_cut(len(tr))
    ctx.progress("E2: choosing step sizes on a validation split of the train set")
    configs = _e2_configs(ctx)
    extractors = list(dict.fromkeys(c.extractor for _, c, _ in configs))
    results: dict[str, dict[str, dict[str, float]]] = {}
    errors: dict[str, dict[str, np.ndarray]] = {s: {} for s in E2_SETS}
    variance: dict[str, float] = {}
    for label, _cfg, _ in configs:
        results[label] = {}
    for set_name in E2_SETS:
        src = "train" if set_name == "held-out" else set_name
        trace = sc.traces[src]
        rows = slice(cut, len(trace)) if set_name == "held-out" else slice(0, len(trace))
        ctx.progress(f"E2: {set_name} ({rows.stop - rows.start} executions), prequential")
        fms = dict(zip(extractors, scenario_features(ctx, src, extractors)))
        train_by = dict(zip(extractors, scenario_features(ctx, "train", extractors)))
        for label, cfg, _ in configs:
            fm = fms[cfg.extractor]
            lat = run_config(cfg, train_by[cfg.extractor], slice(0, cut), fm, rows, trace.start_ms, trace.end_ms)
            obs = fm.latency_ms[rows]
            solo = fm.solo_ms[rows]
            results[label][set_name] = {"mse": mse(lat / solo, obs / solo), "mape_%": 100 * mape(lat, obs),
                                        "n": int(obs.size)}
            if label not in BASELINE_LABELS.values():
                errors[set_name][label] = np.abs(lat - obs) / obs
            variance[set_name] = float(np.var(obs / solo))
    cols = [_SET_LABELS[s] for s in E2_SETS]
    mse_rows = [[label] + [results[label][s]["mse"] for s in E2_SETS] for label, _, _ in configs]
    mse_rows.append(["(variance of observed slowdown)"] + [variance[s] for s in E2_SETS])
    figures, fig_note = _plot_e2(ctx, errors, sc)
    mape_rows = [[label] + [results[label][s]["mape_%"] for s in E2_SETS] for label, _, _ in configs]
    mape_cols = [Column(c, unit="%") for c in cols]
    off, sgd, rls = (results[k]["test2"]["mse"] for k in ("Offline linear", "Online SGD", "RLS"))
    best_t2 = results["interfpred best"]["test2"]["mse"]
    patterns = {
        "offline_degrades_on_test2": bool(off > results["Offline linear"]["held-out"]["mse"]),
        "rls_beats_sgd_on_test2": bool(rls < sgd),
        "sgd_beats_offline_on_test2": bool(sgd < off),
    }
    goal = {"best_test2_mse": best_t2, "offline_test2_mse": off, "ratio": best_t2 / off if off > 0 else None,
            "target_ratio": 1 / 3, "met": bool(best_t2 <= off / 3)}
    chosen = "; ".join(f"{label}: {cfg.label()}" for label, cfg, _ in configs if label not in BASELINE_LABELS.values())
    sel_rows = [[c.label(), s, "chosen" if c == cfg else ""] for _, cfg, scores in configs[1:3] + configs[4:5]
                for c, s in scores]
    md = [
        "Each learner is fitted on the first 75 % of the `train` set (four models, moderate load) and then run, "
        "from that trained state, on the held-out last 25 % (models seen in training), test set 1 (same models, "
        f"light then stress load), test set 2 (new models {' and '.join(sorted(set(sc.traces['test2'].model.tolist())))}) "
        f"and test set 3 (all {len(set(sc.traces['test3'].model.tolist()))} models, "
        "heterogeneous batch sizes and loads). Online learners run prequentially: each execution is predicted "
        "at its launch with what finished before it, and learned from once it has finished. The offline model "
        "only predicts. Paper rows use the paper's co-location features (gpulets' inputs smoothed by EWMA(0.5), "
        "target slowdown); step sizes were chosen on training data. The three baselines are fitted on the same "
        "rows and run the same way (the global and pair means keep learning).",
        "",
        "MSE of slowdown:",
        "",
        markdown_table(["method"] + cols, mse_rows),
        "",
        "The last row is the variance of the observed slowdown in each set: the MSE of always predicting "
        "the set's mean, so MSEs of different sets compare only relative to it.",
        "",
        "MAPE of latency (%):",
        "",
        markdown_table(["method", *mape_cols], mape_rows),
        "",
        f"Configurations: {chosen}.",
        "",
        "Step sizes by validation MAPE (prequential, inside the training rows):",
        "",
        markdown_table(SCORES_HEADER, sel_rows),
        "",
        _e2_findings(patterns, goal),
        "",
    ]
    md += [f"![Rolling relative error along the test sets, E2]({f})" for f in figures] + (
        [fig_note] if fig_note else [])
    terminal = "\n".join(["MSE of slowdown", text_table(["method"] + cols, mse_rows), "",
                          "MAPE of latency (%)", text_table(["method", *mape_cols], mape_rows)])
    data = {"results": results, "slowdown_variance": variance, "patterns": patterns, "goal": goal,
            "configs": {label: {"label": cfg.label(), "extractor": cfg.extractor.get_spec(), "predictor": cfg.kind,
                                "params": dict(cfg.params)} for label, cfg, _ in configs},
            "paper_mse": PAPER_E2_MSE, "runtime_s": time.perf_counter() - t0}
    return Section(title="E2: workload change", markdown="\n".join(md), terminal=terminal, figures=figures,
                   data=data)


def _plot_e2(ctx: ReproduceContext, errors: dict[str, dict[str, np.ndarray]],
             sc: Scenario) -> tuple[list[str], str]:
    plt = pyplot()
    if plt is None:
        return [], NO_MPL
    ctx.progress("E2: drawing the rolling error along the test sets")
    sets = [s for s in E2_SETS if s != "held-out"]
    fig, axes = plt.subplots(1, len(sets), figsize=(13, 3.8), sharey=True)
    top = 0.0
    for ax, s in zip(axes, sets):
        n = len(next(iter(errors[s].values())))
        w = max(10, n // 50)
        for label, err in errors[s].items():
            roll = 100 * np.convolve(err, np.ones(w) / w, mode="valid")   # percent
            top = max(top, float(roll.max()) if roll.size else 0.0)
            ax.plot(np.arange(roll.size) + w, roll, lw=1.2, label=label,
                    **({"color": "black", "ls": "--"} if label == "interfpred best" else {}))
        for ph in sc.sets.get(s, {}).get("phases", [])[1:]:
            ax.axvline(ph["first_id"] - sc.sets[s]["phases"][0]["first_id"], color="grey", lw=0.6, ls=":")
        ax.set_title(_SET_LABELS[s])
        ax.set_xlabel(f"execution (launch order; mean over {w})")
        ax.grid(alpha=0.3)
    axes[0].set_ylim(0, 1.05 * top if top > 0 else 100.0)
    axes[0].set_ylabel("relative error of latency (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    name = "e2_rolling.png"
    fig.savefig(ctx.out_dir / name, dpi=110)
    plt.close(fig)
    return [name], ""


def _e2_findings(patterns: dict[str, bool], goal: dict[str, Any]) -> str:
    ratio = 'undefined (offline MSE 0)' if goal['ratio'] is None else format(goal['ratio'], '.3f')
    return _findings("Paper patterns and goals on test set 2 (MSE of slowdown):", [
        f"offline model degrades on new models (test 2 worse than held-out): "
        f"{_yes(patterns['offline_degrades_on_test2'])}",
        f"RLS beats SGD: {_yes(patterns['rls_beats_sgd_on_test2'])}; SGD beats offline: "
        f"{_yes(patterns['sgd_beats_offline_on_test2'])}",
        f"interfpred best / offline = {ratio} (goal <= 1/3: {_yes(goal['met'])})",
    ])
