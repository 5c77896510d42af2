"""Shared evaluation pieces: passing entities, the baselines, prequential runs over feature rows.

Every accuracy number interfpred prints stands beside the three baselines (no interference,
global mean, per-pair mean) computed on the same rows in the same run; this module holds what
the model, the CLI and the experiments share to do that.

Predictors that learn per-model terms set ``uses_entities``; :func:`call` passes them the
rows' :class:`~interfpred.entities.Entities` and every other predictor never sees it.

Examples
--------
>>> import numpy as np
>>> from interfpred.entities import Entities
>>> X = np.zeros((4, 1)); y = np.array([2.0, 1.0, 2.0, 1.0])
>>> ent = Entities.from_lists(["a", "b", "a", "b"], [{"b": 1.0}, {"a": 1.0}] * 2)
>>> base = fit_baselines(X, y, entities=ent)
>>> {k: call(p, "predict", X[:2], entities=ent.take([0, 1])).tolist() for k, p in base.items()}
{'no_interference': [1.0, 1.0], 'global_mean': [1.5, 1.5], 'pair_mean': [2.0, 1.0]}
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from interfpred.constants import BASELINE_KINDS, E4_TRAIN_SHARE
from interfpred.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.experiments.metrics import mape
from interfpred.features import Extractor, FeatureMatrix
from interfpred.measurements import Measurements
from interfpred.predictors import BasePredictor, make_predictor

__all__ = ["BASELINE_LABELS", "Fold", "call", "fit_baselines", "held_out_mape", "leave_one_model_out", "make_baselines",
           "prequential_entities", "prequential_runs", "run_folds", "split_by_run"]

#: How tables name the baselines.
BASELINE_LABELS = {"no_interference": "baseline: no interference", "global_mean": "baseline: global mean",
                   "pair_mean": "baseline: pair mean"}


def call(predictor: BasePredictor, method: str, *args: Any, entities: Entities | None = None, **kwargs: Any) -> Any:
    """``predictor.<method>(*args)``, adding ``entities=`` only for predictors with ``uses_entities``."""
    if entities is not None and getattr(predictor, "uses_entities", False):
        kwargs["entities"] = entities
    return getattr(predictor, method)(*args, **kwargs)


def make_baselines() -> dict[str, BasePredictor]:
    """Fresh ``no_interference``, ``global_mean`` and ``pair_mean`` predictors, in that order."""
    return {kind: make_predictor(kind) for kind in BASELINE_KINDS}


def fit_baselines(X: np.ndarray, y: np.ndarray, *, entities: Entities | None = None,
                  sample_weight: Any = None) -> dict[str, BasePredictor]:
    """The three baselines fitted on the rows ``X``, ``y`` (pair mean keyed by ``entities``; weighted
    means with ``sample_weight``)."""
    out = make_baselines()
    extra = {} if sample_weight is None else {"sample_weight": sample_weight}
    for p in out.values():
        call(p, "fit", X, y, entities=entities, **extra)
    return out


def prequential_runs(predictor: BasePredictor, X: np.ndarray, y: np.ndarray, run_code: np.ndarray, *,
                     entities: Entities | None = None) -> np.ndarray:
    """Online evaluation over measurement runs taken in the order they first appear.

    Every member of a run is predicted with what was learned from the runs before it, then the
    whole run is learned (its members finish together). An offline predictor only predicts.

    Examples
    --------
    >>> from interfpred import RLS
    >>> X = np.ones((4, 1)); y = np.array([2.0, 2.0, 2.0, 2.0])
    >>> prequential_runs(RLS(), X, y, np.array([0, 0, 1, 1])).round(2)
    array([1., 1., 2., 2.])
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    codes = np.asarray(run_code)
    n = X.shape[0]
    if y.shape != (n,) or codes.shape != (n,):
        raise InterfpredError(f"X has {n} rows, y {y.shape}, run_code {codes.shape}; expected one per row")
    if entities is not None and len(entities) != n:
        raise InterfpredError(f"entities has {len(entities)} rows, X has {n}")
    if not predictor.learns_online:
        return np.asarray(call(predictor, "predict", X, entities=entities), dtype=np.float64).reshape(-1)
    _, first = np.unique(codes, return_index=True)
    out = np.empty(n)
    for code in codes[np.sort(first)]:
        rows = np.flatnonzero(codes == code)
        ent = None if entities is None else entities.take(rows)
        out[rows] = call(predictor, "predict", X[rows], entities=ent)
        call(predictor, "update", X[rows], y[rows], entities=ent)
    return out


def prequential_entities(predictor: Any, X: np.ndarray, y: np.ndarray, *, start_ms: Any = None,
                         end_ms: Any = None, entities: Entities) -> np.ndarray:
    """Prequential evaluation (predict, then learn) of an entity-aware predictor, each row with its entities.

    With ``start_ms`` and ``end_ms`` a row is predicted with what the rows finished by its launch
    taught; without them each row is learned right after it is predicted.
    """
    n = X.shape[0]
    one = [entities.take([i]) for i in range(n)]
    if not predictor.learns_online:
        return np.asarray(predictor.predict(X, entities=entities), dtype=np.float64)
    out = np.empty(n)
    if start_ms is None:
        for i in range(n):
            out[i] = predictor.predict(X[i], entities=one[i])
            predictor.update(X[i], float(y[i]), entities=one[i])
        return out
    start = np.asarray(start_ms, dtype=np.float64)
    end = np.asarray(end_ms, dtype=np.float64)
    if start.shape != (n,) or end.shape != (n,):
        raise InterfpredError(f"start_ms and end_ms must have {n} values")
    order = np.argsort(end, kind="stable")
    learned = np.searchsorted(end[order], start, side="right")
    j = 0
    for i in range(n):
        while j < learned[i]:
            k = int(order[j])
            predictor.update(X[k], float(y[k]), entities=one[k])
            j += 1
        out[i] = predictor.predict(X[i], entities=one[i])
    return out


class Fold(NamedTuple):
    """One held-out split of measurement rows: boolean masks, or index arrays (test rows in the order
    they are to be predicted)."""

    label: str
    train: np.ndarray
    test: np.ndarray


def split_by_run(measurements: Measurements, *, train_share: float = E4_TRAIN_SHARE, seed: int = 0) -> Fold:
    """A seeded split of whole runs: ``train_share`` of the runs train, the rest test.

    Splitting by run keeps every row's features exact (they depend only on its own run).

    Examples
    --------
    >>> from interfpred.datasets import gavel_v100
    >>> m = gavel_v100()
    >>> f = split_by_run(m, seed=1)
    >>> int(f.train.sum()), int(f.test.sum()), bool((f.train ^ f.test).all())
    (462, 198, True)
    """
    if not 0.0 < train_share < 1.0:
        raise InterfpredError(f"train_share {train_share!r} must be in (0, 1)")
    rng = np.random.default_rng(seed)
    runs = rng.permutation(measurements.n_runs)
    k = round(train_share * measurements.n_runs)
    train = np.isin(measurements.run_code, runs[:k])
    return Fold(f"seed {seed}", train, ~train)


def leave_one_model_out(measurements: Measurements) -> list[Fold]:
    """One fold per model: test on every run that involves it, train on the runs that do not.

    The held-out model is never seen in training, neither as the batch measured nor as a
    co-runner. Models whose removal leaves no training run are skipped.

    Examples
    --------
    >>> from interfpred.datasets import gavel_v100
    >>> [f.label for f in leave_one_model_out(gavel_v100())][:3]
    ['A3C', 'CycleGAN', 'LM']
    """
    codes = measurements.run_code
    folds = []
    for model in measurements.models:
        involved = np.unique(codes[measurements.model == model])
        test = np.isin(codes, involved)
        if test.all():
            continue
        folds.append(Fold(model, ~test, test))
    return folds


def run_folds(measurements: Measurements, split: str, *, repeats: int, seed: int = 0,
              train_share: float = E4_TRAIN_SHARE) -> list[Fold]:
    """``split="pair"``: ``repeats`` seeded splits by run; ``split="model"``: leave-one-model-out."""
    if split == "pair":
        if not isinstance(repeats, int) or repeats < 1:
            raise InterfpredError(f"repeats {repeats!r} must be a positive integer")
        return [split_by_run(measurements, train_share=train_share, seed=seed + i) for i in range(repeats)]
    if split == "model":
        folds = leave_one_model_out(measurements)
        if not folds:
            raise InterfpredError("leave-one-model-out needs at least two models with runs apart")
        return folds
    raise InterfpredError(f"split {split!r} is not one of pair, model")


def held_out_mape(fm: FeatureMatrix, extractor: Extractor, run_code: np.ndarray, predictor: BasePredictor,
                  fold: Fold, *, online: bool = False) -> float:
    """MAPE of latency on ``fold.test`` of a fresh clone of ``predictor`` fitted on ``fold.train``.

    ``online``: after fitting, the test runs are predicted prequentially (:func:`prequential_runs`).

    Examples
    --------
    >>> from interfpred import TimeWeighted
    >>> from interfpred.datasets import gavel_v100
    >>> from interfpred.run_features import measurement_features
    >>> m = gavel_v100(); ex = TimeWeighted(feature_map="shares")
    >>> fm = measurement_features(ex, m)
    >>> fold = split_by_run(m, seed=0)
    >>> nothing = held_out_mape(fm, ex, m.run_code, make_predictor("no_interference"), fold)
    >>> pair = held_out_mape(fm, ex, m.run_code, make_predictor("pair_mean"), fold)
    >>> bool(pair < nothing)
    True
    """
    p = predictor.clone()
    train, test = (np.flatnonzero(r) if np.asarray(r).dtype == bool else np.asarray(r) for r in fold[1:])
    ent = fm.entities
    ent_train = None if ent is None else ent.take(train)
    ent_test = None if ent is None else ent.take(test)
    call(p, "fit", fm.X[train], fm.y[train], entities=ent_train)
    if online:
        pred = prequential_runs(p, fm.X[test], fm.y[test], np.asarray(run_code)[test], entities=ent_test)
    else:
        pred = np.asarray(call(p, "predict", fm.X[test], entities=ent_test), dtype=np.float64)
    lat = np.asarray(extractor.latency_from_target(pred, fm.solo_ms[test]), dtype=np.float64)
    return mape(lat, fm.latency_ms[test])
