"""Latency bounds for frozen predictions, calibrated on cross-fitted residuals of the training rows.

A bound calibrated online (adaptive conformal inference, :class:`~interfpred.Calibrated`) is
right for a learner updated after every observation; read frozen (``predict`` and ``evaluate``
without ``--online``), the model errs more than the learner it was calibrated on, and the bound
covers less than its level. :func:`cross_fit_bounds` calibrates the frozen use instead, in the
way of split conformal and CV+: the training rows are cut into ``folds`` grouped folds (whole
measurement runs, or blocks of consecutive trace rows, never split), the predictor is fitted
on all folds but one and scores the held-out one without learning, ``s = (y - m(x)) / |m(x)|``,
and the bound at level ``q`` is ``m(x) + |m(x)| * theta_q`` with ``theta_q`` the conformal
quantile of those scores (the ``ceil((n + 1) q)``-th smallest of ``n``).

The thresholds are *novelty-conditional* (Mondrian conformal): a row is ``"warm"`` when every
model it involves (as the batch measured or as a co-runner) was in the rows the predictor was
fitted on, else ``"cold"``, a cold start, whose prediction errs far more; each category has
thresholds from scores of its own kind. Warm scores are those of the folds by run whose model
and co-runners the other folds hold; cold scores come from a second cross-fit, each training
model held out in turn (every row involving it predicted by a fit on the rows that do not),
plus any row of the folds by run whose model the other folds lack. A category with fewer than
``CROSS_FIT_MIN_CATEGORY_SCORES`` scores uses the pooled thresholds (every row's score from the
folds by run). At predict time a row's category comes from the models of the training rows
(:attr:`FrozenBounds.seen`, kept in the model file), whatever the predictor.

Splitting the cold rows further (own model never seen, against own model seen beside a co-runner
never seen) was measured on Gavel's V100 pairs and kept out: each part's thresholds then come
from fewer models and the pooled coverage of new-model rows fell (EntityRLS, leave one model out,
0.888 to 0.825 at 0.9).

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
>>> fb.category_scores                       # no entities: every score is warm, no cold one
(600, 0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interfpred.constants import (
    CALIBRATED_MIN_SCALE,
    CROSS_FIT_FOLDS,
    CROSS_FIT_MIN_CATEGORY_SCORES,
    QUANTILE_LEVEL_ATOL,
    SELECTION_SEED,
)
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.evaluation import call
from interfpred.evaluation.validation import grouped_fold_ids, involvement
from interfpred.features import FeatureMatrix
from interfpred.features.entity_features import parent_entities
from interfpred.predictors import BasePredictor
from interfpred.predictors.calibrated.conformal import conformal_rank, relative_scales

__all__ = ["NOVELTY_CATEGORIES", "FrozenBounds", "cross_fit_bounds", "model_entities", "novelty", "take_rows"]

#: Novelty categories of frozen bounds, in code order: every model of the row seen at fit, or not.
NOVELTY_CATEGORIES = ("warm", "cold")


def take_rows(fm: FeatureMatrix, rows: np.ndarray) -> FeatureMatrix:
    """The feature rows ``rows`` (indices, in that order) of ``fm``, entities included."""
    ent = fm.entities
    return FeatureMatrix(fm.X[rows], fm.names, fm.y[rows], fm.target, fm.solo_ms[rows], fm.latency_ms[rows],
                         None if ent is None else ent.take(rows))


def model_entities(fm: FeatureMatrix, predictor: BasePredictor) -> Entities | None:
    """The rows' entities by model, whatever key the predictor asked for (model and batch size: their models)."""
    ent = fm.entities
    if ent is not None and predictor.tags.entity_key == "model_batch":
        return parent_entities(ent)
    return ent


def _scale(mean: np.ndarray) -> np.ndarray:
    m = np.asarray(mean, dtype=np.float64)
    return relative_scales(np.ascontiguousarray(m.reshape(-1)), CALIBRATED_MIN_SCALE).reshape(m.shape)


def _conformal(scores: np.ndarray, level: float) -> float:
    """The split-conformal threshold at ``level``: the score of rank :func:`conformal_rank` (the
    ceil((n+1)q)-th smallest for upper levels, the floor((n+1)q)-th for lower ones, clipped to the scores)."""
    s = np.sort(scores)
    return float(s[conformal_rank(len(s), float(level)) - 1])


def novelty(entities: Entities | None, seen: Sequence[str]) -> np.ndarray:
    """(n,) int8 novelty code per row (index into :data:`NOVELTY_CATEGORIES`): 1 when the row involves
    an entity outside ``seen`` (as its own or as a co-runner), else 0; all 0 without entities.

    Examples
    --------
    >>> ent = Entities.from_lists(["a", "b", "c"], [{"b": 1.0}, {"c": 1.0}, {}])
    >>> novelty(ent, ["a", "b"]).tolist()
    [0, 1, 1]
    """
    if entities is None:
        return np.zeros(0, dtype=np.int8)
    known = set(seen)
    unseen = np.array([name not in known for name in entities.names], dtype=bool)
    if not unseen.any():
        return np.zeros(len(entities), dtype=np.int8)
    return (involvement(entities) & unseen).any(axis=1).astype(np.int8)


def _check_levels(levels: Sequence[float], th: Sequence[float], what: str) -> None:
    """Refuse thresholds that are not one finite value per level, non-decreasing with the level."""
    if (len(th) != len(levels) or not all(math.isfinite(t) for t in th)
            or any(b < a for a, b in zip(th, th[1:]))):
        raise InterfpredError(f"frozen_bounds {what} {list(th)} must be one finite value per level "
                              f"({len(levels)}), non-decreasing with the level")


@dataclass(frozen=True)
class FrozenBounds:
    """Score thresholds for frozen bounds, one per level: ``m + |m| * threshold``.

    Attributes
    ----------
    levels
        Target levels, ascending (each quantile and its complement).
    thresholds
        The pooled thresholds per level: the conformal quantile of every training row's score from
        the folds by run (what a category with too few scores of its own uses).
    folds
        Grouped folds the scores came from.
    n_scores
        Out-of-sample scores behind the pooled thresholds (every training row once).
    seen
        The models the training rows involve (own or co-runner), sorted: a row involving any other is cold.
    category_scores
        Scores behind each category of :data:`NOVELTY_CATEGORIES` (empty: no categories, all rows pooled).
    category_thresholds
        Per category, its thresholds per level, or ``()`` when it has fewer than ``min_scores`` scores.
    min_scores
        Fewest scores a category needs for thresholds of its own.
    """

    levels: tuple[float, ...]
    thresholds: tuple[float, ...]
    folds: int
    n_scores: int
    seen: tuple[str, ...] = ()
    category_scores: tuple[int, ...] = ()
    category_thresholds: tuple[tuple[float, ...], ...] = ()
    min_scores: int = CROSS_FIT_MIN_CATEGORY_SCORES

    def __post_init__(self) -> None:
        """Refuse fields that disagree: an InterfpredError naming the offending values."""
        lv = self.levels
        if not lv or any(not 0.0 < v < 1.0 for v in lv) or list(lv) != sorted(set(lv)):
            raise InterfpredError(f"frozen_bounds needs distinct ascending levels in (0, 1), "
                                  f"got {list(lv)}")
        _check_levels(lv, self.thresholds, "thresholds")
        if self.folds < 2 or self.n_scores < 1 or self.min_scores < 1:
            raise InterfpredError(f"frozen_bounds needs folds >= 2, n_scores >= 1 and min_scores >= 1, "
                                  f"got {self.folds}, {self.n_scores} and {self.min_scores}")
        if len(set(self.seen)) != len(self.seen):
            raise InterfpredError(f"frozen_bounds seen {list(self.seen)} names a model twice")
        if not self.category_scores and not self.category_thresholds:
            return
        if len(self.category_scores) != len(NOVELTY_CATEGORIES) or \
                len(self.category_thresholds) != len(NOVELTY_CATEGORIES):
            raise InterfpredError(f"frozen_bounds categories must be {', '.join(NOVELTY_CATEGORIES)}, "
                                  f"each with its scores and thresholds")
        if self.category_scores[0] > self.n_scores:
            raise InterfpredError(f"frozen_bounds has {self.category_scores[0]} warm scores, more than "
                                  f"the {self.n_scores} scores of the folds by run")
        for name, n, th in zip(NOVELTY_CATEGORIES, self.category_scores, self.category_thresholds):
            if n < 0:
                raise InterfpredError(f"frozen_bounds category {name!r} has {n} scores")
            if n < self.min_scores:
                if th:
                    raise InterfpredError(f"frozen_bounds category {name!r} has {n} scores, fewer than "
                                          f"min_scores {self.min_scores}, and yet thresholds {list(th)}")
            else:
                _check_levels(lv, th, f"category {name!r} thresholds")

    def threshold(self, level: float, category: int | None = None) -> float:
        """The threshold at ``level`` (a calibrated level) for a category code (None: pooled); a
        category without thresholds of its own gives the pooled one. Else an InterfpredError."""
        ths = self.thresholds
        if category is not None and self.category_thresholds and self.category_thresholds[category]:
            ths = self.category_thresholds[category]
        for lv, th in zip(self.levels, ths):
            if abs(lv - level) < QUANTILE_LEVEL_ATOL:
                return th
        raise InterfpredError(f"quantile {level!r} is not calibrated; calibrated levels: "
                              + ", ".join(f"{v:g}" for v in self.levels))

    def categories(self, entities: Entities | None) -> np.ndarray:
        """(n,) int8 novelty code per row of ``entities`` (by model) against :attr:`seen`; all warm when
        the model was fitted without entities."""
        if entities is None or not self.seen:
            return np.zeros(0 if entities is None else len(entities), dtype=np.int8)
        return novelty(entities, self.seen)

    def bound(self, mean: np.ndarray, level: float, categories: np.ndarray | None = None) -> np.ndarray:
        """The target bound at ``level`` around point predictions ``mean``, each row at its category's
        threshold (``categories`` from :meth:`categories`; None or empty: pooled)."""
        m = np.asarray(mean, dtype=np.float64)
        pooled = self.threshold(level)
        if categories is None or not len(categories) or not self.category_thresholds:
            th = np.full(m.shape, pooled)
        else:
            th = np.array([self.threshold(level, c) for c in range(len(NOVELTY_CATEGORIES))])[categories]
        return m + _scale(m) * th

    def to_state(self) -> dict[str, Any]:
        """JSON-able dict (the model file's ``frozen_bounds``)."""
        cats = {name: {"n_scores": n, "thresholds": list(th)}
                for name, n, th in zip(NOVELTY_CATEGORIES, self.category_scores, self.category_thresholds)}
        return {"levels": list(self.levels), "thresholds": list(self.thresholds), "folds": self.folds,
                "n_scores": self.n_scores, "seen": list(self.seen), "min_scores": self.min_scores,
                "categories": cats}

    @classmethod
    def from_state(cls, state: dict[str, Any], *, source: str = "state") -> FrozenBounds:
        """Rebuild from :meth:`to_state`; fields that disagree are refused naming ``source``."""
        cats = state["categories"]
        if cats and set(cats) != set(NOVELTY_CATEGORIES):
            raise InterfpredError(f"{source}: frozen_bounds categories {sorted(cats)} must be exactly "
                                  f"{', '.join(NOVELTY_CATEGORIES)}")
        try:
            return cls(tuple(float(v) for v in state["levels"]), tuple(float(v) for v in state["thresholds"]),
                       int(state["folds"]), int(state["n_scores"]), tuple(str(v) for v in state.get("seen", ())),
                       tuple(int(cats[c]["n_scores"]) for c in NOVELTY_CATEGORIES) if cats else (),
                       tuple(tuple(float(v) for v in cats[c]["thresholds"]) for c in NOVELTY_CATEGORIES)
                       if cats else (), int(state["min_scores"]))
        except InterfpredError as exc:
            raise InterfpredError(f"{source}: {exc}") from None


def cross_fit_bounds(predictor: BasePredictor, fm: FeatureMatrix, groups: np.ndarray, levels: Sequence[float], *,
                     folds: int = CROSS_FIT_FOLDS, seed: int = SELECTION_SEED,
                     min_scores: int = CROSS_FIT_MIN_CATEGORY_SCORES) -> FrozenBounds:
    """Novelty-conditional thresholds of frozen bounds at ``levels`` from cross-fitted residuals of
    ``predictor`` on ``fm`` (see the module's description).

    Each fold by run is predicted by a fresh clone of ``predictor`` fitted on the other folds, without
    learning; with fewer groups than ``folds``, as many folds as groups (at least two). Then each model
    the rows involve (by model, whatever entity key the predictor uses) is held out in turn: every row
    involving it is predicted by a clone fitted on the rest (skipped when fewer than two rows remain).
    A category with fewer than ``min_scores`` scores gets no thresholds of its own (the pooled ones).
    """
    groups = np.asarray(groups)
    if len(groups) != len(fm):
        raise InterfpredError(f"groups has {len(groups)} entries for {len(fm)} feature rows")
    k = min(folds, len(np.unique(groups)))
    ids = grouped_fold_ids(groups, k, seed=seed)
    ent = fm.entities
    by_model = model_entities(fm, predictor)
    inv = None if by_model is None else involvement(by_model)

    def held_out(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores of ``test`` by a fit on ``train``, and their novelty against ``train``'s models."""
        p = predictor.clone()
        call(p, "fit", fm.X[train], fm.y[train], entities=None if ent is None else ent.take(train))
        mean = np.asarray(call(p, "predict", fm.X[test], entities=None if ent is None else ent.take(test)),
                          dtype=np.float64).reshape(-1)
        if inv is None:
            code = np.zeros(len(test), dtype=np.int8)
        else:
            unseen = ~inv[train].any(axis=0)
            code = (inv[test] & unseen).any(axis=1).astype(np.int8)
        return (fm.y[test] - mean) / _scale(mean), code

    scores = np.empty(len(fm))
    codes = np.zeros(len(fm), dtype=np.int8)
    for f in range(k):
        test = np.flatnonzero(ids == f)
        scores[test], codes[test] = held_out(np.flatnonzero(ids != f), test)
    lv = tuple(sorted(float(v) for v in levels))
    cold = [scores[codes == 1]]
    if inv is not None:
        for j in np.flatnonzero(inv.any(axis=0)):
            test = np.flatnonzero(inv[:, j])
            if len(test) <= len(fm) - 2:
                cold.append(held_out(np.flatnonzero(~inv[:, j]), test)[0])
    pools = (scores[codes == 0], np.concatenate(cold))
    cat_th = tuple(tuple(_conformal(s, v) for v in lv) if len(s) >= min_scores else () for s in pools)
    seen = [] if by_model is None or inv is None else np.asarray(by_model.names)[inv.any(axis=0)].tolist()
    return FrozenBounds(lv, tuple(_conformal(scores, v) for v in lv), k, len(scores), tuple(sorted(map(str, seen))),
                        tuple(len(s) for s in pools), cat_th, min_scores)
