"""E5: the latency of N MPS processes of one model inside one MIG instance, leave-one-model-out.

On ParvaGPU's A100-80GB profiles (11 models, MIG instances of 1-7 GPCs, batch 1-256, 1-5
processes), each model in turn is held out: the predictors are fitted on the other ten models'
multi-process runs and predict every multi-process run of the held-out model from its solo
latencies alone (:mod:`interfpred.features.processes`). Beside them, in the same run on the same
rows: the linear-in-N baseline (slowdown ``1 + c (N - 1)``, one slope ``c`` fitted on the
training models), and the three usual baselines: no interference (slowdown 1), the global mean
slowdown of the training runs, and the per-pair mean (the pair is the model with its N - 1
co-runners; a held-out model was never seen, so it falls back to the training models' mean at
that N, the closest any pair mean can come).

Examples
--------
>>> scores = e5_errors()
>>> sorted(scores)[:2], len(scores["no interference"])
(['E5 (configuration-dependent slope)', 'global mean'], 1327)
>>> bool(scores["E5 (configuration-dependent slope)"].mean() < scores["linear in N"].mean())
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from interfpred._core.targets import latency_from_prediction
from interfpred.constants import ACCURACY_WITHIN_10, ACCURACY_WITHIN_20
from interfpred.data.datasets import parvagpu_a100
from interfpred.evaluation.text_tables import Column, markdown_table, text_table
from interfpred.experiments.report import ReproduceContext, Section
from interfpred.features.processes import ProcessFeatures, process_features
from interfpred.predictors import OfflineLinear

__all__ = ["E5_METHODS", "e5_errors", "e5_predictions", "run_e5"]

#: The rows of E5's table, the predictor first, then the linear-in-N baseline and the three baselines.
E5_METHODS = ("E5 (configuration-dependent slope)", "linear in N", "no interference", "global mean",
              "per-pair mean")


def _predict(f: ProcessFeatures, train: np.ndarray, test: np.ndarray) -> dict[str, np.ndarray]:
    """Predicted slowdowns of the test rows by every method, fitted on the train rows."""
    s = f.slowdown
    full = OfflineLinear(fit_intercept=False).fit(f.x[train], s[train] - 1.0)
    lin = OfflineLinear(fit_intercept=False).fit(f.x[train][:, :1], s[train] - 1.0)
    per_n = {int(n): float(s[train & (f.processes == n)].mean()) for n in np.unique(f.processes[test])}
    glob = float(s[train].mean())
    return {
        E5_METHODS[0]: 1.0 + np.asarray(full.predict(f.x[test])),
        E5_METHODS[1]: 1.0 + np.asarray(lin.predict(f.x[test][:, :1])),
        E5_METHODS[2]: np.ones(int(test.sum())),
        E5_METHODS[3]: np.full(int(test.sum()), glob),
        E5_METHODS[4]: np.array([per_n.get(int(n), glob) for n in f.processes[test]]),
    }


def e5_predictions(f: ProcessFeatures) -> dict[str, np.ndarray]:
    """Every method's predicted slowdown of each multi-process row, fitted without that row's model.

    Aligned with the rows of ``f``; NaN on single-process rows (nothing to predict there).
    """
    multi = f.processes >= 2
    out = {k: np.full(len(f.model), np.nan) for k in E5_METHODS}
    for model in sorted(set(f.model.tolist())):
        test = multi & (f.model == model)
        for k, v in _predict(f, multi & (f.model != model), test).items():
            out[k][test] = v
    return out


def e5_errors(f: ProcessFeatures | None = None) -> dict[str, np.ndarray]:
    """Relative latency errors of every method on the multi-process rows, each predicted with its model held out.

    Slowdowns become latencies through the one clamp every prediction path uses
    (:func:`~interfpred._core.targets.latency_from_prediction`).
    """
    f = process_features(parvagpu_a100()) if f is None else f
    multi = f.processes >= 2
    observed = f.observed_ms[multi]
    return {k: np.abs(latency_from_prediction(v[multi], f.solo_ms[multi], "slowdown") - observed) / observed
            for k, v in e5_predictions(f).items()}


def _row(label: str, e: np.ndarray) -> list[Any]:
    return [label, 100 * float(e.mean()), 100 * float(np.quantile(e, 0.5)), 100 * float(np.quantile(e, 0.9)),
            100 * float(np.mean(e <= ACCURACY_WITHIN_10)), 100 * float(np.mean(e <= ACCURACY_WITHIN_20))]


def run_e5(ctx: ReproduceContext) -> Section:
    """E5 on ParvaGPU's A100-80GB MIG x MPS profiles: the predictor beside the linear-in-N and usual baselines."""
    f = process_features(parvagpu_a100())
    n_models = len(set(f.model.tolist()))
    ctx.progress(f"E5: N processes in one MIG instance (ParvaGPU A100-80GB, {len(f.model)} runs, "
                 f"{n_models} models), leave-one-model-out")
    errors = e5_errors(f)
    header: list[str | Column] = ["method", Column("latency MAPE", unit="%"), Column("median error", unit="%"),
                                  Column("p90 error", unit="%"), Column("within 10 %", unit="% of rows"),
                                  Column("within 20 %", unit="% of rows")]
    rows = [_row(k, errors[k]) for k in E5_METHODS]
    n_rows = len(errors[E5_METHODS[0]])
    best_base = min(E5_METHODS[1:], key=lambda k: float(errors[k].mean()))
    verdict = ("beats" if errors[E5_METHODS[0]].mean() < errors[best_base].mean() else "loses to")
    intro = (f"Real measurements: ParvaGPU's A100-80GB profiles (SC'24, MIT licence), {len(f.model)} runs of "
             f"{n_models} models in MIG instances of 1, 2, 3, 4 and 7 GPCs, batch 1-256, 1-5 MPS processes of "
             f"one model per instance. Each model in turn is held out; the methods are fitted on the other "
             f"models' multi-process runs and predict every multi-process run of the held-out model ({n_rows} "
             "runs over all folds) from its solo latencies only. E5 is a linear model of the slowdown with a "
             "slope per extra process that depends on the configuration (batch saturation, GPC scaling, batch "
             "size and instance size, all read off solo latencies); the linear-in-N baseline has one slope for "
             "all. The per-pair mean falls back to the training models' mean at the same N (the held-out "
             f"model's pairs were never seen). E5 {verdict} the best baseline ({best_base}).")
    markdown = "\n".join([intro, "", markdown_table(header, rows, digits=3), ""])
    data = {"runs": int(len(f.model)), "models": n_models, "scored_rows": n_rows,
            "mape_%": {k: 100 * float(v.mean()) for k, v in errors.items()}, "features": list(f.names)}
    return Section(title="E5: N processes of one model in one MIG instance (ParvaGPU A100-80GB)",
                   markdown=markdown, terminal=text_table(header, rows, digits=3), data=data)
