"""Latency bounds for frozen predictions, calibrated on cross-fitted residuals of the training rows.

A bound calibrated online (adaptive conformal inference, :class:`~interfpred.Calibrated`) is
right for a learner updated after every observation; read frozen (``predict`` and ``evaluate``
without ``--online``), the model errs more than the learner it was calibrated on, and the bound
covers less than its level. :func:`cross_fit_bounds` calibrates the frozen use instead, in the
way of split conformal and CV+: the training rows are cut into ``folds`` grouped folds (whole
measurement runs, or blocks of consecutive trace rows, never split), the predictor is fitted
on all folds but one and scores the held-out one without learning, ``s = (y - m(x)) / |m(x)|``,
and the bound at level ``q`` is ``m(x) + |m(x)| * theta_q`` with ``theta_q`` the conformal
quantile of those scores (the ``ceil((n + 1) q)``-th smallest of ``n``). A row involving a model
the training rows never saw (as the batch measured or as a co-runner) is a cold start, and its
prediction errs more: those rows get *cold* thresholds, from scores of every training model held
out in turn (each model's rows predicted by a fit on the rows that do not involve it).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.random((600, 2)); y = (1.0 + X @ [1.0, 0.5]) * np.exp(0.1 * rng.standard_normal(600))
>>> from interfpred.features import FeatureMatrix
>>> fm = FeatureMatrix(X, ("a", "b"), y, "slowdown", np.ones(600), y)
>>> from interfpred.predictors import make_predictor
>>> fb = cross_fit_bounds(make_predictor("rls"), fm, np.arange(600) // 10, (0.1, 0.9))
>>> fb.levels, fb.n_scores, bool(fb.thresholds[0] < 0 < fb.thresholds[1])
((0.1, 0.9), 600, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interfpred.constants import CALIBRATED_MIN_SCALE, CROSS_FIT_FOLDS, SELECTION_SEED, SELECTION_TRACE_BLOCK
from interfpred.data.entities import Entities
from interfpred.data.measurements import Measurements
from interfpred.errors import InterfpredError
from interfpred.evaluation import call
from interfpred.features import FeatureMatrix
from interfpred.features.entity_features import parent_entities
from interfpred.predictors import BasePredictor

__all__ = ["FrozenBounds", "cross_fit_bounds", "grouped_fold_ids", "involvement", "model_entities", "row_groups",
           "take_rows"]


def take_rows(fm: FeatureMatrix, rows: np.ndarray) -> FeatureMatrix:
    """The feature rows ``rows`` (indices, in that order) of ``fm``, entities included."""
    ent = fm.entities
    return FeatureMatrix(fm.X[rows], fm.names, fm.y[rows], fm.target, fm.solo_ms[rows], fm.latency_ms[rows],
                         None if ent is None else ent.take(rows))


def model_entities(fm: FeatureMatrix, predictor: BasePredictor) -> Entities | None:
    """The rows' entities by model, whatever key the predictor asked for (model and batch size: their models)."""
    ent = fm.entities
    if ent is not None and getattr(predictor, "entity", "model") == "model_batch":
        return parent_entities(ent)
    return ent


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


def _scale(mean: np.ndarray) -> np.ndarray:
    return np.maximum(np.abs(mean), CALIBRATED_MIN_SCALE)


def _conformal(scores: np.ndarray, level: float) -> float:
    """The split-conformal threshold at ``level``: the ceil((n+1)q)-th smallest score (upper levels), or
    the floor((n+1)q)-th (lower levels), clipped to the scores seen."""
    s = np.sort(scores)
    n = len(s)
    k = math.ceil((n + 1) * level) if level >= 0.5 else math.floor((n + 1) * level)
    return float(s[min(max(k, 1), n) - 1])


@dataclass(frozen=True)
class FrozenBounds:
    """Score thresholds for frozen bounds, one per level: ``m + |m| * threshold``.

    Attributes
    ----------
    levels
        Target levels, ascending (each quantile and its complement).
    thresholds
        The conformal threshold of the cross-fitted scores per level.
    folds
        Grouped folds the scores came from.
    n_scores
        Out-of-sample scores behind the thresholds (every training row once).
    cold_thresholds
        Thresholds per level for rows that involve a model outside ``seen`` (empty: none).
    seen
        The models of the training rows.
    """

    levels: tuple[float, ...]
    thresholds: tuple[float, ...]
    folds: int
    n_scores: int
    cold_thresholds: tuple[float, ...] = ()
    seen: tuple[str, ...] = ()

    def threshold(self, level: float, *, cold: bool = False) -> float:
        """The threshold at ``level`` (a calibrated level), else an InterfpredError naming those there are."""
        ths = self.cold_thresholds if cold and self.cold_thresholds else self.thresholds
        for lv, th in zip(self.levels, ths):
            if abs(lv - level) < 1e-9:
                return th
        raise InterfpredError(f"quantile {level!r} is not calibrated; calibrated levels: "
                              + ", ".join(f"{v:g}" for v in self.levels))

    def cold_rows(self, entities: Entities | None) -> np.ndarray:
        """(n,) bool: the rows that involve a model outside :attr:`seen` (all False without entities)."""
        if entities is None or not self.cold_thresholds:
            return np.zeros(0 if entities is None else len(entities), dtype=bool)
        seen = set(self.seen)
        unseen = np.array([name not in seen for name in entities.names], dtype=bool)
        return (involvement(entities) & unseen).any(axis=1) if unseen.any() else np.zeros(len(entities), bool)

    def bound(self, mean: np.ndarray, level: float, cold: np.ndarray | None = None) -> np.ndarray:
        """The target bound at ``level`` around point predictions ``mean`` (``cold`` rows: cold thresholds)."""
        m = np.asarray(mean, dtype=np.float64)
        th = np.full(m.shape, self.threshold(level))
        if cold is not None and cold.any():
            th[cold] = self.threshold(level, cold=True)
        return m + _scale(m) * th

    def to_state(self) -> dict[str, Any]:
        """JSON-able dict (the model file's ``frozen_bounds``)."""
        return {"levels": list(self.levels), "thresholds": list(self.thresholds), "folds": self.folds,
                "n_scores": self.n_scores, "cold_thresholds": list(self.cold_thresholds), "seen": list(self.seen)}

    @classmethod
    def from_state(cls, state: dict[str, Any], *, source: str = "state") -> FrozenBounds:
        """Rebuild from :meth:`to_state` (levels ascending in (0, 1), one finite threshold each)."""
        levels = tuple(float(v) for v in state["levels"])
        th = tuple(float(v) for v in state["thresholds"])
        cold = tuple(float(v) for v in state.get("cold_thresholds", ()))
        if cold and (len(cold) != len(th) or not all(math.isfinite(t) for t in cold)):
            raise InterfpredError(f"{source}: frozen_bounds cold_thresholds {list(cold)} must be one finite "
                                  f"value per level ({len(levels)})")
        if (len(levels) != len(th) or not levels or any(not 0.0 < v < 1.0 for v in levels)
                or list(levels) != sorted(levels) or not all(math.isfinite(t) for t in th)):
            raise InterfpredError(f"{source}: frozen_bounds needs ascending levels in (0, 1) and one finite "
                                  f"threshold each, got levels {list(levels)} and thresholds {list(th)}")
        return cls(levels, th, int(state["folds"]), int(state["n_scores"]), cold,
                   tuple(str(v) for v in state.get("seen", ())))


def cross_fit_bounds(predictor: BasePredictor, fm: FeatureMatrix, groups: np.ndarray, levels: Sequence[float], *,
                     folds: int = CROSS_FIT_FOLDS, seed: int = SELECTION_SEED) -> FrozenBounds:
    """Thresholds of frozen bounds at ``levels`` from grouped K-fold residuals of ``predictor`` on ``fm``.

    Each fold is predicted by a fresh clone of ``predictor`` fitted on the other folds, without
    learning; with fewer groups than ``folds``, as many folds as groups (at least two).
    """
    groups = np.asarray(groups)
    if len(groups) != len(fm):
        raise InterfpredError(f"groups has {len(groups)} entries for {len(fm)} feature rows")
    k = min(folds, len(np.unique(groups)))
    ids = grouped_fold_ids(groups, k, seed=seed)
    ent = fm.entities

    def held_out(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        p = predictor.clone()
        call(p, "fit", fm.X[train], fm.y[train], entities=None if ent is None else ent.take(train))
        mean = np.asarray(call(p, "predict", fm.X[test], entities=None if ent is None else ent.take(test)),
                          dtype=np.float64).reshape(-1)
        return (fm.y[test] - mean) / _scale(mean)

    scores = np.empty(len(fm))
    for f in range(k):
        test = np.flatnonzero(ids == f)
        scores[test] = held_out(np.flatnonzero(ids != f), test)
    lv = tuple(sorted(float(v) for v in levels))
    by_model = model_entities(fm, predictor)
    cold: list[np.ndarray] = []
    if by_model is not None and len(by_model.names) >= 2:
        inv = involvement(by_model)
        for j in range(len(by_model.names)):
            test = np.flatnonzero(inv[:, j])
            if len(test) and len(test) <= len(fm) - 2:
                cold.append(held_out(np.flatnonzero(~inv[:, j]), test))
    cold_th = tuple(_conformal(np.concatenate(cold), v) for v in lv) if cold else ()
    seen = tuple(by_model.names) if by_model is not None else ()
    return FrozenBounds(lv, tuple(_conformal(scores, v) for v in lv), k, len(scores), cold_th, seen)
