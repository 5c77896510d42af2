"""The paper scenario of a reproduction run, learning configurations, and their choice on training data.

Both paper experiments (:mod:`interfpred.experiments.paper`) run on
:func:`interfpred.sim.workload.paper_scenario`, simulated once per run and shared through the
context's cache, as are the features of each set. Step sizes and interfpred's best configuration
are chosen by prequential MAPE on a validation split *inside* the training rows (fit on their
first two thirds, validate on the last third), never on a reported test set.

Examples
--------
>>> train_cut(100)
75
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interfpred.constants import REPRODUCE_EXECUTIONS, REPRODUCE_QUICK_EXECUTIONS, REPRODUCE_TRAIN_SHARE
from interfpred.evaluation import Column, call, mape, percent, prequential
from interfpred.evaluation.validation import tail_fold
from interfpred.experiments.launch_keys import launch_entities
from interfpred.experiments.report import ReproduceContext
from interfpred.features import Extractor, FeatureMatrix, TimeWeighted, transform_many
from interfpred.predictors import BasePredictor, make_predictor
from interfpred.sim.workload import Scenario, paper_scenario

__all__ = ["BEST_MAPS", "BEST_TARGETS", "Config", "RLS_GRID", "SCORES_HEADER", "SGD_GRID", "best_config", "entity_configs",
           "run_config", "scenario_features", "scenario_for", "scores_table", "select", "train_cut",
           "validation_mape"]

#: Step-size grids the online learners' hyperparameter is chosen from (on training data).
SGD_GRID = (0.5, 0.1, 0.02)
RLS_GRID = (0.99, 0.995, 0.999)
#: interfpred's candidate configurations (TimeWeighted exposure; map x target), learned by RLS.
BEST_MAPS = ("default", "rich")
BEST_TARGETS = ("slowdown", "rate")


@dataclass(frozen=True)
class Config:
    """A learning configuration: an extractor and a predictor kind with its parameters."""

    extractor: Extractor
    kind: str
    params: tuple[tuple[str, Any], ...] = ()

    def predictor(self) -> BasePredictor:
        """A fresh predictor of this configuration."""
        return make_predictor(self.kind, **dict(self.params))

    def label(self) -> str:
        """Short human-readable description."""
        ex = self.extractor
        agg = {"static": "Static", "ewma": f"EWMA({getattr(ex, 'alpha', '')})",
               "time_weighted": "TimeWeighted"}[ex.aggregation]
        params = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{agg}, {ex.feature_map} map, {ex.target} target, {self.kind}" + (f" ({params})" if params else "")


# ---------------------------------------------------------------------------- shared data
def scenario_for(ctx: ReproduceContext) -> Scenario:
    """The paper scenario of this run (simulated once, cached in ``ctx.cache``).

    Size: ``ctx.executions`` per set when given, else 5,000 with ``ctx.quick`` or 50,000.
    """
    n = ctx.executions or (REPRODUCE_QUICK_EXECUTIONS if ctx.quick else REPRODUCE_EXECUTIONS)
    key = ("paper_scenario", ctx.gpu, ctx.seed, n, ctx.truth, ctx.zoo)
    if key not in ctx.cache:
        what = f"fluid truth, {ctx.zoo or 'synthetic'} zoo" if ctx.truth == "fluid" else \
            f"phase truth, {ctx.zoo or ('orion' if ctx.gpu == 'v100' else 'synthetic')} zoo"
        ctx.progress(f"simulating the paper scenario: 4 sets x {n} executions on a simulated {ctx.gpu} GPU ({what})")
        ctx.cache[key] = paper_scenario(ctx.gpu, seed=ctx.seed, executions=n, truth=ctx.truth, zoo=ctx.zoo)
    return ctx.cache[key]


def scenario_features(ctx: ReproduceContext, set_name: str, extractors: Sequence[Extractor]) -> list[FeatureMatrix]:
    """Features of one set for several extractors, each computed once per run."""
    sc = scenario_for(ctx)
    store = ctx.cache.setdefault(("paper_features", id(sc)), {})
    missing = [ex for ex in dict.fromkeys(extractors) if (set_name, ex) not in store]
    if missing:
        # Entity-aware predictors (the per-pair mean) key each row by its model and the models
        # running at its launch, the co-runners known when it is predicted.
        ent = launch_entities(sc.traces[set_name])
        for ex, fm in zip(missing, transform_many(sc.traces[set_name], sc.profiles, missing)):
            store[(set_name, ex)] = fm if fm.entities is not None else dataclasses.replace(fm, entities=ent)
    return [store[(set_name, ex)] for ex in extractors]


def train_cut(n: int) -> int:
    """Rows ``[0, cut)`` of a set of ``n`` fit, the rest test (``REPRODUCE_TRAIN_SHARE``, at least 2 and 1)."""
    return max(2, min(n - 1, int(round(REPRODUCE_TRAIN_SHARE * n))))


def run_config(cfg: Config, fit: FeatureMatrix, rows_fit: slice, test: FeatureMatrix, rows_test: slice,
         start_ms: np.ndarray, end_ms: np.ndarray) -> np.ndarray:
    """Predicted latency of ``test[rows_test]`` after fitting on ``fit[rows_fit]`` (prequential if online).

    A predictor with ``tags.uses_entities`` also gets the rows' entities, when the features carry them.
    """
    p = cfg.predictor().with_target(fit.target)   # declared as a model holding it is (EntityRLS scales its backoff)
    ent_fit = None if fit.entities is None else fit.entities.take(np.arange(len(fit))[rows_fit])
    ent_test = None if test.entities is None else test.entities.take(np.arange(len(test))[rows_test])
    call(p, "fit", fit.X[rows_fit], fit.y[rows_fit], entities=ent_fit)
    pred = prequential(p, test.X[rows_test], test.y[rows_test], start_ms=start_ms[rows_test],
                       end_ms=end_ms[rows_test], entities=ent_test)
    return np.asarray(cfg.extractor.latency_from_target(pred, test.solo_ms[rows_test]), dtype=np.float64)


def validation_mape(ctx: ReproduceContext, cfg: Config) -> float:
    """Prequential MAPE on the last third of the training rows after fitting on the first two thirds."""
    sc = scenario_for(ctx)
    tr = sc.traces["train"]
    cut = train_cut(len(tr))
    inner = len(tail_fold(cut, 1.0 / 3.0).train)      # the validation's held-out tail rule
    (fm,) = scenario_features(ctx, "train", [cfg.extractor])
    lat = run_config(cfg, fm, slice(0, inner), fm, slice(inner, cut), tr.start_ms, tr.end_ms)
    return mape(lat, fm.latency_ms[inner:cut])


def select(ctx: ReproduceContext, name: str, candidates: Sequence[Config]) -> tuple[Config, list[tuple[Config, float]]]:
    """The candidate with the lowest validation MAPE (cached per run), and every score."""
    key = ("paper_select", name)
    if key not in ctx.cache:
        scores = [(c, validation_mape(ctx, c)) for c in candidates]
        best = min(scores, key=lambda cs: cs[1])[0]
        ctx.cache[key] = (best, scores)
    return ctx.cache[key]


def best_config(ctx: ReproduceContext) -> tuple[Config, list[tuple[Config, float]]]:
    """interfpred's best configuration (TimeWeighted, map x target, RLS), chosen on training data."""
    cands = [Config(TimeWeighted(feature_map=m, target=t), "rls") for m in BEST_MAPS for t in BEST_TARGETS]
    return select(ctx, "best", cands)


def entity_configs(ctx: ReproduceContext) -> tuple[Config, Config, list[tuple[Config, float]]]:
    """EntityRLS on interfpred's best extractor (its ``log_target`` chosen on training data, like the
    best configuration), and the same predictor without its entity terms (the ablation)."""
    best, _ = best_config(ctx)
    cands = [Config(best.extractor, "entity_rls", (("forgetting", f), ("log_target", lt)))
             for f in RLS_GRID for lt in (False, True)]
    chosen, scores = select(ctx, "entity_rls", cands)
    ablation = Config(chosen.extractor, "entity_rls", chosen.params + (("entity_terms", False),))
    return chosen, ablation, scores


#: Header of :func:`scores_table`'s rows: the MAPE (a fraction) is shown in percent.
SCORES_HEADER: list[str | Column] = ["candidate", percent("validation MAPE"), ""]


def scores_table(scores: Sequence[tuple[Config, float]], chosen: Config) -> list[list[object]]:
    """Table rows ``[candidate, validation MAPE (a fraction), "chosen" or ""]``, under :data:`SCORES_HEADER`."""
    return [[c.label(), s, "chosen" if c == chosen else ""] for c, s in scores]
