"""Held-out splits of measurement rows, and the accuracy of a predictor on one of them.

Splitting by run keeps every row's features exact (they depend only on its own run);
leave-one-model-out holds a model out of training entirely, as the batch measured and as a
co-runner.

Examples
--------
>>> from interfpred.data.datasets import gavel_v100
>>> [f.label for f in run_folds(gavel_v100(), "pair", repeats=2)]
['seed 0', 'seed 1']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from interfpred._core.limits import check_limit
from interfpred.constants import E4_TRAIN_SHARE
from interfpred.data.measurements import Measurements
from interfpred.errors import InterfpredError
from interfpred.evaluation.baselines import call
from interfpred.evaluation.metrics import mape, ratio_error, under_share
from interfpred.evaluation.prequential import prequential_runs
from interfpred.features import Extractor, FeatureMatrix
from interfpred.predictors import BasePredictor

__all__ = ["Fold", "FoldFitter", "fit_fold", "fold_error", "fold_rows", "held_out_mape", "held_out_mapes", "leave_one_model_out", "run_folds", "split_by_run"]


#: How a fold's predictor is fitted: ``fitter(fold)`` returns a predictor fitted on ``fold.train``.
FoldFitter = Callable[["Fold"], BasePredictor]


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
    >>> from interfpred.data.datasets import gavel_v100
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
    >>> from interfpred.data.datasets import gavel_v100
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
        check_limit("REPEATS_MAX", repeats, "repeats")  # every fold is built before the first runs
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InterfpredError(f"seed {seed!r} must be a non-negative integer")
        return [split_by_run(measurements, train_share=train_share, seed=seed + i) for i in range(repeats)]
    if split == "model":
        folds = leave_one_model_out(measurements)
        if not folds:
            raise InterfpredError("leave-one-model-out needs at least two models with runs apart")
        return folds
    raise InterfpredError(f"split {split!r} is not one of pair, model")


def held_out_mape(fm: FeatureMatrix, extractor: Extractor, run_code: np.ndarray, predictor: BasePredictor,
                  fold: Fold, *, online: bool = False, fitter: FoldFitter | None = None,
                  metric: str = "mape") -> float:
    """MAPE of latency on ``fold.test`` of a fresh clone of ``predictor`` fitted on ``fold.train``.

    ``metric``: ``"mape"``, or ``"ratio"`` for :func:`~interfpred.evaluation.metrics.ratio_error`
    (what the configuration search scores by).

    ``online``: after fitting, the test runs are predicted prequentially (:func:`prequential_runs`).
    ``fitter``: how the fold's predictor is fitted instead (``fitter(fold)`` returns a predictor of
    its own, fitted on ``fold.train``; a validation of several candidates shares fits through it).

    Examples
    --------
    >>> from interfpred import TimeWeighted
    >>> from interfpred.data.datasets import gavel_v100
    >>> from interfpred.features.measurement_features import measurement_features
    >>> m = gavel_v100(); ex = TimeWeighted(feature_map="shares")
    >>> fm = measurement_features(ex, m)
    >>> fold = split_by_run(m, seed=0)
    >>> from interfpred.predictors import make_predictor
    >>> nothing = held_out_mape(fm, ex, m.run_code, make_predictor("no_interference"), fold)
    >>> pair = held_out_mape(fm, ex, m.run_code, make_predictor("pair_mean"), fold)
    >>> bool(pair < nothing)
    True
    """
    p, test = _fitted(fm, predictor, fold, fitter)
    return _mape(fm, extractor, run_code, p, test, online=online, metric=metric)


def held_out_mapes(fm: FeatureMatrix, extractor: Extractor, run_code: np.ndarray, predictor: BasePredictor,
                   fold: Fold, *, fitter: FoldFitter | None = None, metric: str = "mape") -> tuple[float, float]:
    """(prequential, frozen) :func:`held_out_mape` of one clone fitted once on ``fold.train``
    (``fitter`` as for :func:`held_out_mape`).

    The frozen predictions come first (predicting leaves the fitted state as it is), then the
    prequential pass learns from the test runs: the pair equals two calls of
    :func:`held_out_mape` at the cost of one fit.

    Examples
    --------
    >>> from interfpred import TimeWeighted
    >>> from interfpred.data.datasets import gavel_v100
    >>> from interfpred.features.measurement_features import measurement_features
    >>> from interfpred.predictors import make_predictor
    >>> m = gavel_v100(); ex = TimeWeighted(feature_map="shares")
    >>> fm = measurement_features(ex, m); fold = split_by_run(m, seed=0); p = make_predictor("rls")
    >>> both = held_out_mapes(fm, ex, m.run_code, p, fold)
    >>> both == (held_out_mape(fm, ex, m.run_code, p, fold, online=True), held_out_mape(fm, ex, m.run_code, p, fold))
    True
    """
    p, test = _fitted(fm, predictor, fold, fitter)
    frozen = _mape(fm, extractor, run_code, p, test, online=False, metric=metric)
    return _mape(fm, extractor, run_code, p, test, online=True, metric=metric), frozen


def fold_rows(fold: Fold) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) row indices of ``fold`` (masks turned into indices; test in its order)."""
    train, test = (np.flatnonzero(r) if np.asarray(r).dtype == bool else np.asarray(r) for r in fold[1:])
    return train, test


def fit_fold(fm: FeatureMatrix, predictor: BasePredictor, fold: Fold) -> BasePredictor:
    """A clone of ``predictor``, declared for the rows' target, fitted on ``fold.train`` of ``fm``."""
    p = predictor.with_target(fm.target).clone()   # declared for the rows' target (a predictor may fit to suit it)
    train, _ = fold_rows(fold)
    ent = fm.entities
    call(p, "fit", fm.X[train], fm.y[train], entities=None if ent is None else ent.take(train))
    return p


def _fitted(fm: FeatureMatrix, predictor: BasePredictor, fold: Fold,
            fitter: FoldFitter | None = None) -> tuple[BasePredictor, np.ndarray]:
    p = fit_fold(fm, predictor, fold) if fitter is None else fitter(fold)
    return p, fold_rows(fold)[1]


def _mape(fm: FeatureMatrix, extractor: Extractor, run_code: np.ndarray, p: BasePredictor,
          test: np.ndarray, *, online: bool, metric: str = "mape") -> float:
    ent_test = None if fm.entities is None else fm.entities.take(test)
    if online:
        pred = prequential_runs(p, fm.X[test], fm.y[test], np.asarray(run_code)[test], entities=ent_test)
    else:
        pred = np.asarray(call(p, "predict", fm.X[test], entities=ent_test), dtype=np.float64)
    lat = np.asarray(extractor.latency_from_target(pred, fm.solo_ms[test]), dtype=np.float64)
    return fold_error(lat, fm.latency_ms[test], metric)


def fold_error(predicted: np.ndarray, observed: np.ndarray, metric: str) -> float:
    """One fold's error of latency: ``"mape"``, ``"ratio"`` (:func:`~interfpred.evaluation.metrics.ratio_error`)
    or ``"under"`` (the share of rows under-predicted by more than ``UNDER_PREDICTION_FACTOR``)."""
    if metric == "ratio":
        return ratio_error(predicted, observed)
    if metric == "under":
        return under_share(predicted, observed)
    if metric != "mape":
        raise InterfpredError(f"metric {metric!r} is not one of mape, ratio, under")
    return mape(predicted, observed)
