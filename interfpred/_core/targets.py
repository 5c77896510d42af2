"""The one conversion of a prediction into a rate, a slowdown or a latency, with the one clamp.

A predictor predicts its extractor's target: a ``slowdown`` (latency / solo latency) or a ``rate``
(its inverse, the fraction of solo speed). Every path that turns a prediction into a slowdown or
a latency (:meth:`~interfpred.InterferenceModel.predict_latency` and ``evaluate``, the folds and
the experiments, the tracker's finish and its what-if projections, compiled or not, the fleet)
goes through :func:`to_rate`: the prediction becomes a rate clamped to
``[PREDICTED_RATE_MIN, PREDICTED_RATE_MAX]`` = [0.01, 1], so a predicted slowdown is never below 1
(no co-location makes a batch faster than alone) nor above 100, whichever target was learned.
A slowdown at or below zero is nonsense and reads as "no slowdown"; a rate at or below zero as
"as slow as the clamp allows". NaN stays NaN.

Examples
--------
>>> rate_from_prediction([0.5, 1.2, -1.0], "rate").tolist()
[0.5, 1.0, 0.01]
>>> slowdown_from_prediction([0.8, 1.5, 0.0], "slowdown").tolist()
[1.0, 1.5, 1.0]
>>> latency_from_prediction([0.5, 2.0], [4.0, 4.0], "rate").tolist()
[8.0, 4.0]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from interfpred._core.jit import njit
from interfpred.constants import PREDICTED_RATE_MAX, PREDICTED_RATE_MIN, TARGETS
from interfpred.errors import InterfpredError

__all__ = ["clamp_rates", "latency_from_prediction", "observed_slowdown", "observed_target", "rate_from_prediction",
           "slowdown_from_prediction", "to_rate"]


@njit(cache=True, inline="always")
def to_rate(p, is_rate, rmin, rmax):
    """A prediction -> a rate clamped to ``[rmin, rmax]`` (for a slowdown, its inverse); NaN stays NaN."""
    if p != p:
        return p
    if is_rate:
        r = p
    elif p > 0.0:
        r = 1.0 / p
    else:
        r = rmax  # a slowdown <= 0 is nonsense; treat it as "no slowdown"
    r = max(r, rmin)
    r = min(r, rmax)
    return r


@njit(cache=True)
def clamp_rates(pred, is_rate, rmin, rmax):
    """:func:`to_rate` of every value of the 1-d array ``pred`` (a new array)."""
    out = np.empty(pred.shape[0])
    for a in range(pred.shape[0]):
        out[a] = to_rate(pred[a], is_rate, rmin, rmax)
    return out


def rate_from_prediction(pred: Any, target: str) -> np.ndarray:
    """Predictions of ``target`` (``"slowdown"`` or ``"rate"``) as rates in ``[PREDICTED_RATE_MIN, PREDICTED_RATE_MAX]``.

    Returns an array of the shape of ``pred`` (a 0-d array for a scalar).
    """
    if target not in TARGETS:
        raise InterfpredError(f"target {target!r} is not one of {', '.join(TARGETS)}")
    p = np.asarray(pred, dtype=np.float64)
    flat = clamp_rates(np.ascontiguousarray(p.reshape(-1)), target == "rate", PREDICTED_RATE_MIN,
                       PREDICTED_RATE_MAX)
    return np.asarray(flat).reshape(p.shape)


def slowdown_from_prediction(pred: Any, target: str) -> np.ndarray:
    """Predictions of ``target`` as slowdowns: ``1 / rate_from_prediction``, so in [1, 1 / PREDICTED_RATE_MIN]."""
    return 1.0 / rate_from_prediction(pred, target)


def latency_from_prediction(pred: Any, solo_ms: Any, target: str) -> np.ndarray:
    """Predictions of ``target`` as latencies (ms): ``solo_ms / rate_from_prediction``."""
    return np.asarray(solo_ms, dtype=np.float64) / rate_from_prediction(pred, target)


def observed_target(latency_ms: Any, solo_ms: Any, target: str) -> Any:
    """What a finished execution teaches, in ``target``: ``latency / solo`` (slowdown) or ``solo / latency``
    (rate; inf for a latency of 0). Observations are not clamped: they are what happened.

    Examples
    --------
    >>> observed_target(8.0, 4.0, "slowdown"), observed_target(8.0, 4.0, "rate")
    (2.0, 0.5)
    """
    if target not in TARGETS:
        raise InterfpredError(f"target {target!r} is not one of {', '.join(TARGETS)}")
    if isinstance(latency_ms, float) and isinstance(solo_ms, float):   # one finished execution: no array
        if target == "slowdown":
            return latency_ms / solo_ms if solo_ms != 0.0 else math.inf
        return solo_ms / latency_ms if latency_ms > 0.0 else math.inf
    lat, solo = np.asarray(latency_ms, dtype=np.float64), np.asarray(solo_ms, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = lat / solo if target == "slowdown" else np.where(lat > 0, solo / np.where(lat > 0, lat, 1.0), np.inf)
    return float(out) if out.ndim == 0 else out


def observed_slowdown(y: Any, target: str) -> Any:
    """An observed value of ``target`` as a slowdown (``1 / y`` for a rate; 0 stays 0), not clamped.

    Examples
    --------
    >>> observed_slowdown(0.5, "rate"), observed_slowdown(2.0, "slowdown")
    (2.0, 2.0)
    """
    if target not in TARGETS:
        raise InterfpredError(f"target {target!r} is not one of {', '.join(TARGETS)}")
    if isinstance(y, float):                      # one observation (the tracker's finish): no array
        return 1.0 / y if target == "rate" and y > 0.0 else y
    v = np.asarray(y, dtype=np.float64)
    if target == "rate":
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(v > 0, 1.0 / np.where(v > 0, v, 1.0), v)
    return float(v) if v.ndim == 0 else v
