"""The one validation interfpred's choices use: folds by run, held-out models, a held-out tail.

Every choice made by validation inside training rows (the configuration ``fit`` chooses, the
default fit of the real-data experiment, the paper experiments' hyperparameters) builds its
folds here and scores them with :func:`~interfpred.evaluation.folds.held_out_mape`:

- :func:`warm_folds`: grouped folds by run (whole measurement runs, or blocks of consecutive trace
  rows, :func:`row_groups`), each predicted prequentially by a clone fitted on the others (the
  models it meets were seen);
- :func:`held_out_model_folds`: models held out entirely, as the batch measured and as a
  co-runner (:func:`involvement`), predicted prequentially and frozen (models never seen);
- :func:`tail_fold`: the last share of rows in time order, predicted after fitting on the rest.

:func:`validation_scores` gives the three errors of latency of one predictor (the ratio error by default), and
:func:`within_one_se` the one-standard-error comparison of two candidates' folds by run.

Examples
--------
>>> import numpy as np
>>> [f.label for f in warm_folds(np.repeat(np.arange(6), 2), 3, seed=0)]
['fold 0', 'fold 1', 'fold 2']
>>> f = tail_fold(10, 0.3)
>>> f.train.tolist(), f.test.tolist()
([0, 1, 2, 3, 4, 5, 6], [7, 8, 9])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from interfpred._core.splits import tail_cut
from interfpred.constants import SELECTION_METRIC, SELECTION_SEED, SELECTION_TIE_RTOL, SELECTION_TRACE_BLOCK
from interfpred.data.entities import Entities
from interfpred.data.measurements import Measurements
from interfpred.errors import InterfpredError
from interfpred.evaluation.folds import Fold, FoldFitter, held_out_mape, held_out_mapes
from interfpred.features import FeatureMatrix
from interfpred.predictors import BasePredictor

__all__ = ["grouped_fold_ids", "held_out_model_folds", "involvement", "row_groups", "tail_fold", "validation_scores",
           "warm_folds", "within_one_se"]


def involvement(ent: Entities) -> np.ndarray:
    """(n, names) bool: row i involves entity j, as its own or as a co-runner."""
    n = len(ent)
    out = np.zeros((n, len(ent.names)), dtype=bool)
    out[np.arange(n), ent.own] = True
    out[np.repeat(np.arange(n), np.diff(ent.indptr)), ent.co] = True
    return out


def row_groups(n_trace_rows: int, measurements: Measurements | None, *,
               block: int = SELECTION_TRACE_BLOCK) -> np.ndarray:
    """A group id per feature row (trace rows first, then measurement rows), kept whole by every fold.

    Trace rows in blocks of ``block`` consecutive executions; measurement rows by run.

    Examples
    --------
    >>> row_groups(5, None, block=2).tolist()
    [0, 0, 1, 1, 2]
    """
    parts = [np.arange(n_trace_rows, dtype=np.int64) // max(1, block)]
    if measurements is not None:
        offset = int(parts[0][-1]) + 1 if n_trace_rows else 0
        parts.append(np.asarray(measurements.run_code, dtype=np.int64) + offset)
    return np.concatenate(parts)


def grouped_fold_ids(groups: np.ndarray, folds: int, *, seed: int = SELECTION_SEED) -> np.ndarray:
    """Fold id (0 to ``folds - 1``) per row: the distinct groups shuffled (seeded), dealt round the folds.

    Examples
    --------
    >>> ids = grouped_fold_ids(np.array([0, 0, 1, 1, 2, 2]), 3)
    >>> sorted(set(ids.tolist())), bool((ids[0::2] == ids[1::2]).all())
    ([0, 1, 2], True)
    """
    uniq, inverse = np.unique(np.asarray(groups), return_inverse=True)
    if folds < 2 or len(uniq) < folds:
        raise InterfpredError(f"{folds} grouped folds need at least {max(folds, 2)} groups (runs or trace blocks), "
                              f"got {len(uniq)}")
    order = np.random.default_rng(seed).permutation(len(uniq))
    fold_of_group = np.empty(len(uniq), dtype=np.int64)
    fold_of_group[order] = np.arange(len(uniq)) % folds
    return fold_of_group[inverse.reshape(-1)]


def warm_folds(groups: np.ndarray, n_folds: int, seed: int = SELECTION_SEED) -> list[Fold]:
    """Up to ``n_folds`` grouped folds (none with fewer than 2 groups), test rows in group order."""
    k = min(n_folds, len(np.unique(groups)))
    out = []
    if k >= 2:
        ids = grouped_fold_ids(groups, k, seed=seed)
        for f in range(k):
            test = np.flatnonzero(ids == f)
            out.append(Fold(f"fold {f}", ids != f, test[np.argsort(groups[test], kind="stable")]))
    return out


def held_out_model_folds(entities: Entities | None, n_models: int, seed: int = SELECTION_SEED) -> list[Fold]:
    """Up to ``n_models`` folds, each holding one model out entirely (seeded choice; at least 3 models,
    and at least 2 training rows left).

    Examples
    --------
    >>> ent = Entities.from_lists(list("abcabc"), [{"b": 1.0}, {"c": 1.0}, {"a": 1.0}, {}, {}, {}])
    >>> sorted((f.label, f.test.tolist()) for f in held_out_model_folds(ent, 3))   # as measured or as co-runner
    [('a', [0, 2, 3]), ('b', [0, 1, 4]), ('c', [1, 2, 5])]
    """
    out: list[Fold] = []
    if entities is None or len(entities.names) < 3:
        return out
    involves = involvement(entities)
    rng = np.random.default_rng(seed)
    for j in rng.permutation(len(entities.names))[:n_models]:
        test = involves[:, j]
        if test.any() and (~test).sum() >= 2:
            out.append(Fold(entities.names[j], ~test, np.flatnonzero(test)))
    return out


def tail_fold(n: int, share: float) -> Fold:
    """Rows ``[0, cut)`` train and ``[cut, n)`` test, the test share ``share`` of ``n`` rows in time order
    (at least one row each side)."""
    cut = tail_cut(n, share)
    return Fold("tail", np.arange(cut), np.arange(cut, n))


def validation_scores(fm: FeatureMatrix, ex: Any, groups: np.ndarray, p: BasePredictor, warm: list[Fold],
                      cold: list[Fold], *, fitter: FoldFitter | None = None, metric: str = SELECTION_METRIC
                      ) -> tuple[tuple[float, float, float], np.ndarray]:
    """(warm, cold prequential, cold frozen) errors of latency of ``p`` (``metric``: ``"ratio"``, the error of
    the ratio either way, by default; or ``"mape"``), and the warm error of each fold by run
    (nan where there are no folds of a kind). ``fitter(fold)``, when given, fits each fold's predictor
    (see :func:`~interfpred.evaluation.folds.held_out_mape`).

    Examples
    --------
    >>> from interfpred import TimeWeighted
    >>> from interfpred.data.datasets import gavel_v100
    >>> from interfpred.features.measurement_features import measurement_features
    >>> from interfpred.predictors import make_predictor
    >>> m = gavel_v100(); ex = TimeWeighted(feature_map="shares"); fm = measurement_features(ex, m)
    >>> groups = row_groups(0, m)
    >>> (w, co, cf), per_fold = validation_scores(fm, ex, groups, make_predictor("pair_mean"),
    ...                                           warm_folds(groups, 3), held_out_model_folds(fm.entities, 2))
    >>> per_fold.shape, bool(w < cf)          # models seen are easier than models held out
    ((3,), True)
    """
    per_fold = np.array([held_out_mape(fm, ex, groups, p, f, online=True, fitter=fitter, metric=metric)
                         for f in warm])
    w = float(per_fold.mean()) if warm else np.nan
    both = np.array([held_out_mapes(fm, ex, groups, p, f, fitter=fitter, metric=metric)
                     for f in cold]).reshape(-1, 2)   # one fit per fold
    co, cf = (float(v) for v in both.mean(axis=0)) if cold else (np.nan, np.nan)
    return (w, co, cf), per_fold


def within_one_se(per_fold: np.ndarray, best: np.ndarray) -> bool:
    """Whether a warm score is within one standard error of the best one: the mean of the paired
    per-fold differences at most their standard error (the one-standard-error rule; with one fold,
    whether it is no worse). Differences within ``SELECTION_TIE_RTOL`` of the best score are ties:
    scores equal but for rounding are within.

    Examples
    --------
    >>> within_one_se(np.array([0.21, 0.19, 0.22]), np.array([0.20, 0.20, 0.20]))
    True
    >>> within_one_se(np.array([0.30, 0.31, 0.29]), np.array([0.20, 0.20, 0.20]))
    False
    >>> within_one_se(np.array([0.2, 0.1, 0.3]) + 1e-16, np.array([0.2, 0.1, 0.3]))     # rounding: a tie
    True
    """
    d = np.asarray(per_fold) - np.asarray(best)
    if not d.size or not np.isfinite(d).all():
        return False
    tie = SELECTION_TIE_RTOL * float(np.abs(np.asarray(best)).mean())
    if d.size < 2:
        return bool(d.mean() <= tie)
    return bool(d.mean() <= d.std(ddof=1) / np.sqrt(d.size) + tie)
