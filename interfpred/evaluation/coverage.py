"""Coverage of latency bounds: how often the truth fell below a bound, and what the bound cost.

A calibrated predictor (:class:`~interfpred.Calibrated`) gives quantiles of its *target*;
these helpers turn them into latency bounds and score them. For a ``slowdown`` target the
latency quantile ``q`` is the slowdown quantile ``q`` times the solo latency; for a ``rate``
target it is the solo latency over the rate quantile ``1 - q`` (latency falls as rate rises).

For each quantile ``q`` the central interval ``[L, U]`` runs from the latency quantile ``1 - q``
to ``q``. Reported per quantile (and per model):

* ``coverage``: share of executions whose observed latency is at most ``U`` (nominal ``q``);
* ``width``: mean ``(U - L) / solo`` (slowdown units);
* ``interval_score``: the mean interval score of ``[L, U]`` at level ``alpha = 2 (1 - q)``
  (Gneiting & Raftery 2007), ``(U - L) + 2/alpha (L - y)+ + 2/alpha (y - U)+``, in slowdown units:
  lower is better, and it punishes both wide bounds and misses.

Examples
--------
>>> import numpy as np
>>> obs = np.array([10.0, 12.0, 30.0])
>>> rows = coverage_rows(obs, np.full(3, 10.0), {0.9: (np.full(3, 9.0), np.full(3, 20.0))})
>>> rows[0]["coverage"], round(rows[0]["width"], 3)
(0.6667, 1.1)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from interfpred._core.targets import latency_from_prediction
from interfpred.constants import BOUNDARY_RTOL
from interfpred.errors import InterfpredError
from interfpred.evaluation.prequential import feedback_schedule
from interfpred.predictors import get_tags

__all__ = ["baseline_bounds", "check_quantile", "coverage_rows", "latency_bounds", "prequential_bounds", "run_stamps",
           "target_level"]


def target_level(q: float, target: str) -> float:
    """The target quantile behind latency quantile ``q``: ``q`` for slowdown, ``1 - q`` for rate.

    >>> target_level(0.9, "slowdown"), round(target_level(0.9, "rate"), 12)
    (0.9, 0.1)
    """
    if target not in ("slowdown", "rate"):
        raise InterfpredError(f"target {target!r} must be 'slowdown' or 'rate'")
    return round(float(q), 12) if target == "slowdown" else round(1.0 - float(q), 12)


def check_quantile(quantile: Any) -> float:
    """``quantile`` as a float in (0, 1), else an :class:`InterfpredError` naming it.

    >>> check_quantile("0.9")
    0.9
    >>> check_quantile(1.0)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: quantile 1.0 must be in (0, 1)
    """
    try:
        q = float(quantile)
    except (TypeError, ValueError):
        raise InterfpredError(f"quantile {quantile!r} must be a number in (0, 1)") from None
    if not 0.0 < q < 1.0:
        raise InterfpredError(f"quantile {quantile!r} must be in (0, 1)")
    return q


def _check_quantiles(quantiles: Sequence[float]) -> list[float]:
    out = [check_quantile(q) for q in quantiles]
    if not out:
        raise InterfpredError("give at least one quantile")
    return out


def _bounds_call(predictor: Any, X: np.ndarray, level: float, kw: dict[str, Any], q: float) -> np.ndarray:
    try:
        return np.asarray(predictor.predict(X, quantile=level, **kw), dtype=np.float64).reshape(-1)
    except InterfpredError as exc:
        raise InterfpredError(f"latency quantile {q:g} needs target quantile {level:g}: {exc}") from None
    except TypeError:
        raise InterfpredError(f"predictor {type(predictor).__name__} gives no quantiles; wrap it in "
                              "interfpred.Calibrated (CLI: interfpred fit --calibrate aci)") from None


def latency_bounds(predictor: Any, X: np.ndarray, solo_ms: np.ndarray, target: str, quantiles: Sequence[float],
                   *, entities: Any = None) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """``{q: (L, U)}`` latency bounds (ms) of rows ``X`` from a quantile predictor, without learning."""
    solo = np.asarray(solo_ms, dtype=np.float64)
    kw = {"entities": entities} if entities is not None and get_tags(predictor).uses_entities else {}
    out = {}
    for q in _check_quantiles(quantiles):
        hi = latency_from_prediction(_bounds_call(predictor, X, target_level(q, target), kw, q), solo, target)
        lo = latency_from_prediction(_bounds_call(predictor, X, target_level(1.0 - q, target), kw, q), solo, target)
        out[q] = (np.minimum(lo, hi), np.maximum(lo, hi))
    return out


def prequential_bounds(predictor: Any, X: np.ndarray, y: np.ndarray, solo_ms: np.ndarray, target: str,
                       quantiles: Sequence[float], *, start_ms: np.ndarray | None = None,
                       end_ms: np.ndarray | None = None, entities: Any = None,
                       on_row: Callable[[int], None] | None = None) -> tuple[np.ndarray, dict[float, tuple]]:
    """Point latency and ``{q: (L, U)}`` of every row, each made before its row was learned.

    With ``start_ms``/``end_ms`` the feedback is delayed as in a live system: row ``i`` is
    predicted with what finished at or before its launch. ``predictor`` is updated in place (its
    calibration learns even when its point predictions are frozen). ``entities`` (an
    :class:`~interfpred.data.entities.Entities` table of the rows) reach a predictor that uses them.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    solo = np.asarray(solo_ms, dtype=np.float64)
    qs = _check_quantiles(quantiles)
    n = X.shape[0]
    levels = sorted({target_level(q, target) for q in qs} | {target_level(1.0 - q, target) for q in qs})
    mean = np.empty(n)
    raw = {lv: np.empty(n) for lv in levels}
    rows = list(X)
    ys = y.tolist()
    order_l, learned = feedback_schedule(start_ms, end_ms, n)
    predict, update = predictor.predict, predictor.update
    if entities is not None and get_tags(predictor).uses_entities:
        ents = [entities.take([i]) for i in range(n)]
        kws = [{"entities": e} for e in ents]
    else:
        kws = [{}] * n
    j = 0
    for i in range(n):
        while j < learned[i]:
            k = order_l[j]
            update(rows[k], ys[k], **kws[k])
            j += 1
        kw = kws[i]
        mean[i] = predict(rows[i], **kw)
        for lv in levels:
            raw[lv][i] = predict(rows[i], quantile=lv, **kw)
        if on_row is not None:
            on_row(i)
    out = {}
    for q in qs:
        hi = latency_from_prediction(raw[target_level(q, target)], solo, target)
        lo = latency_from_prediction(raw[target_level(1.0 - q, target)], solo, target)
        out[q] = (np.minimum(lo, hi), np.maximum(lo, hi))
    return latency_from_prediction(mean, solo, target), out


def run_stamps(run_code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Launch and finish stamps that make :func:`prequential_bounds` take measurement runs whole.

    Runs in the order they first appear: every member of run ``k`` launches at ``k`` and finishes
    at ``k + 0.5``, so it is bounded with what the runs before it taught, and learned before the next.

    >>> start, end = run_stamps(np.array([7, 7, 3, 3, 9]))
    >>> start.tolist(), end.tolist()
    ([0.0, 0.0, 1.0, 1.0, 2.0], [0.5, 0.5, 1.5, 1.5, 2.5])
    """
    _, first, inv = np.unique(np.asarray(run_code), return_index=True, return_inverse=True)
    rank = np.empty(first.size)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    pos = rank[inv.reshape(-1)]
    return pos, pos + 0.5


def baseline_bounds(train_quantiles: Mapping[float, float], solo_ms: np.ndarray, target: str,
                    quantiles: Sequence[float]) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """The trivial bounds: the empirical quantiles of the training targets, times (or over) the solo latency.

    >>> b = baseline_bounds({0.1: 1.0, 0.9: 2.0}, np.array([5.0]), "slowdown", [0.9])
    >>> b[0.9][0].tolist(), b[0.9][1].tolist()
    ([5.0], [10.0])
    """
    solo = np.asarray(solo_ms, dtype=np.float64)
    tq = {round(float(k), 12): float(v) for k, v in train_quantiles.items()}
    out = {}
    for q in _check_quantiles(quantiles):
        try:
            a, b = tq[target_level(q, target)], tq[target_level(1.0 - q, target)]
        except KeyError:
            raise InterfpredError(f"no training quantile for level {q}; known: {sorted(tq)}") from None
        hi = latency_from_prediction(np.full(solo.shape, a), solo, target)
        lo = latency_from_prediction(np.full(solo.shape, b), solo, target)
        out[q] = (np.minimum(lo, hi), np.maximum(lo, hi))
    return out


def coverage_rows(observed_ms: np.ndarray, solo_ms: np.ndarray, bounds: Mapping[float, tuple[np.ndarray, ...]],
                  *, groups: np.ndarray | None = None, skip: int = 0) -> list[dict[str, Any]]:
    """Coverage, mean width and interval score per quantile, overall and per group (rows from ``skip`` on).

    Returns dicts ``{"quantile", "group", "n", "coverage", "lower_coverage", "width",
    "interval_score"}``; ``group`` is ``"all"`` for the overall row. Figures are rounded to 4 digits.
    """
    obs = np.asarray(observed_ms, dtype=np.float64)[skip:]
    solo = np.asarray(solo_ms, dtype=np.float64)[skip:]
    if obs.size == 0:
        raise InterfpredError("no rows to score after the warm-up")
    names = [("all", np.ones(obs.size, dtype=bool))]
    if groups is not None:
        g = np.asarray(groups)[skip:]
        names += [(str(m), g == m) for m in sorted(set(g.tolist()))]
    out = []
    for q, (lo, hi) in bounds.items():
        lo = np.asarray(lo, dtype=np.float64)[skip:] / solo
        hi = np.asarray(hi, dtype=np.float64)[skip:] / solo
        y = obs / solo
        alpha = 2.0 * (1.0 - q)
        score = (hi - lo) + 2.0 / alpha * (np.maximum(lo - y, 0.0) + np.maximum(y - hi, 0.0))
        for name, mask in names:
            if not mask.any():
                continue
            out.append({"quantile": q, "group": name, "n": int(mask.sum()),
                        "coverage": round(float(np.mean(y[mask] <= hi[mask] * (1 + BOUNDARY_RTOL))), 4),
                        "lower_coverage": round(float(np.mean(y[mask] >= lo[mask] * (1 - BOUNDARY_RTOL))), 4),
                        "width": round(float(np.mean(hi[mask] - lo[mask])), 4),
                        "interval_score": round(float(np.mean(score[mask])), 4)})
    return out
