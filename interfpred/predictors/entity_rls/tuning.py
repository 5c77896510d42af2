"""Empirical Bayes for EntityRLS by validation: choose the prior variances on held-out training rows.

The prior variances of :class:`~interfpred.predictors.entity_rls.estimator.EntityRLS` say how far a model's
terms may stray from the population model before data pulls them; too small and the entity terms
learn nothing, too large and an entity seen twice is over-fitted. :func:`select_prior_variances`
picks them by the rule used everywhere in interfpred: on the *training* rows only, fit on the first
part, run prequentially (predict each row, then learn it) over the last ``validation_share`` of
them, and keep the grid point with the lowest relative latency error. The grid scales the defaults
of the two families together: the model-level terms (sensitivity and aggressiveness) by one factor
and the pair-level terms (pair residuals and latent factors) by another, each from
``ENTITY_VAR_SCALES``. Test rows must never be passed here.

The search is a pure function of its inputs, and a validated fit meets the same training rows more
than once (the configuration search tunes a candidate's priors, then the chosen one is fitted on the
same rows), so the last ``ENTITY_TUNE_MEMO`` searches are remembered by a digest of everything they
read (rows, targets, entities, parameters, grid, share, target); a repeated search returns a copy of
the remembered answer instead of running again.

Examples
--------
>>> import numpy as np
>>> from interfpred.data.entities import Entities
>>> rng = np.random.default_rng(0)
>>> X = rng.random((300, 2))
>>> own = rng.choice(["a", "b", "c"], 300)
>>> ent = Entities.from_lists(own, [{"a": 1.0}] * 300)
>>> y = 1.5 + 0.2 * X[:, 0] + np.where(own == "b", 0.4, 0.0)
>>> best, scores = select_prior_variances(X, y, ent, scales=(0.1, 1.0))
>>> sorted(best), len(scores)
(['aggressiveness_var', 'factor_var', 'pair_var', 'sensitivity_var'], 4)
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from interfpred._core.splits import tail_cut
from interfpred._core.targets import observed_slowdown, slowdown_from_prediction
from interfpred.constants import (
    ENTITY_TUNE_MEMO,
    ENTITY_TUNE_MIN_ROWS,
    ENTITY_TUNE_VALIDATION_SHARE,
    ENTITY_VAR_SCALES,
)
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.predictors.registry import make_predictor

__all__ = ["select_prior_variances", "validation_error"]

_VARIANCES = ("sensitivity_var", "aggressiveness_var", "pair_var", "factor_var")
_MODEL_LEVEL = ("sensitivity_var", "aggressiveness_var")   # scaled together; the pair-level ones by another factor
#: digest of a search's inputs -> its answer (the last ENTITY_TUNE_MEMO searches)
_MEMO: OrderedDict[bytes, tuple[dict[str, Any], list[tuple[dict[str, Any], float]]]] = OrderedDict()


def _digest(X: np.ndarray, y: np.ndarray, entities: Entities, params: Mapping[str, Any], scales: Sequence[float],
            validation_share: float, target: str | None) -> bytes:
    """A digest of everything :func:`select_prior_variances` reads."""
    h = hashlib.sha1()
    for a in (X, y, entities.own, entities.indptr, entities.co, entities.weight):
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    h.update(repr((entities.names, sorted(params.items()), tuple(float(s) for s in scales), float(validation_share),
                   target)).encode())
    return h.digest()


def _copy(answer: tuple[dict[str, Any], list[tuple[dict[str, Any], float]]]
          ) -> tuple[dict[str, Any], list[tuple[dict[str, Any], float]]]:
    best, scores = answer
    return dict(best), [(dict(v), e) for v, e in scores]


def validation_error(params: Mapping[str, Any], X: np.ndarray, y: np.ndarray, entities: Entities, *,
                     validation_share: float = ENTITY_TUNE_VALIDATION_SHARE, target: str | None = None) -> float:
    """Mean relative latency error of ``EntityRLS(**params)`` fitted on the first rows and run
    prequentially over the last ``validation_share`` of ``X, y, entities`` (in their order)."""
    n = X.shape[0]
    cut = tail_cut(n, validation_share)   # the held-out tail rule every validation uses
    p: Any = make_predictor("entity_rls", **params)   # an EntityRLS
    p.fit(X[:cut], y[:cut], entities=entities.take(np.arange(cut)))
    # predict each row, then learn it (what predict then update give row by row, to the bit, compiled)
    pred = p.learn_rows(np.ascontiguousarray(X[cut:]), np.ascontiguousarray(y[cut:]),
                          entities.take(np.arange(cut, n)), create_first=True)
    if target is None:     # bare arrays: the relative error of the value itself
        return float(np.mean(np.abs(pred / y[cut:] - 1.0)))
    # latency error through the one clamped conversion of a prediction (solo latency cancels)
    return float(np.mean(np.abs(slowdown_from_prediction(pred, target) / observed_slowdown(y[cut:], target) - 1.0)))


def select_prior_variances(X: Any, y: Any, entities: Entities, *, params: Mapping[str, Any] | None = None,
                           scales: Sequence[float] = ENTITY_VAR_SCALES,
                           validation_share: float = ENTITY_TUNE_VALIDATION_SHARE,
                           target: str | None = None) -> tuple[dict[str, Any], list[tuple[dict[str, Any], float]]]:
    """The prior variances of EntityRLS with the lowest validation error on training rows.

    Parameters
    ----------
    X, y, entities
        Training rows only, in time order (the last ``validation_share`` validate).
    params
        Other EntityRLS hyperparameters, kept fixed (their variances are the grid's base).
    scales
        Multipliers of the default variances tried for each family.
    validation_share
        Share of the rows held out for validation, in (0, 1).
    target
        ``"slowdown"`` or ``"rate"``: how the error is turned into a latency error (through the one
        clamped conversion); None (bare arrays): the relative error of the values themselves.

    Returns
    -------
    (dict, list)
        The chosen variances (to pass to ``EntityRLS`` with ``params``), and every grid point
        with its validation error.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],) or not isinstance(entities, Entities) or len(entities) != len(y):
        raise InterfpredError(f"need X (n, d), y (n,) and entities of n rows; got X {X.shape}, y {y.shape}, "
                              f"{type(entities).__name__}")
    if X.shape[0] < ENTITY_TUNE_MIN_ROWS:
        raise InterfpredError(f"select_prior_variances needs at least {ENTITY_TUNE_MIN_ROWS} training rows, "
                              f"got {X.shape[0]}")
    if not 0.0 < float(validation_share) < 1.0:
        raise InterfpredError(f"validation_share must be in (0, 1), got {validation_share!r}")
    if target not in (None, "slowdown", "rate"):
        raise InterfpredError(f"target must be None, 'slowdown' or 'rate', got {target!r}")
    base_p = dict(params or {})
    key = _digest(X, y, entities, base_p, scales, validation_share, target)
    if key in _MEMO:
        _MEMO.move_to_end(key)
        return _copy(_MEMO[key])
    base = make_predictor("entity_rls", **base_p)
    scores: list[tuple[dict[str, Any], float]] = []
    for a in scales:
        for b in scales:
            v = {name: getattr(base, name) * float(a if name in _MODEL_LEVEL else b) for name in _VARIANCES}
            err = validation_error({**base_p, **v}, X, y, entities, validation_share=validation_share, target=target)
            scores.append((v, err))
    best = min(scores, key=lambda s: s[1])[0]
    _MEMO[key] = _copy((best, scores))
    while len(_MEMO) > ENTITY_TUNE_MEMO:
        _MEMO.popitem(last=False)
    return best, scores
