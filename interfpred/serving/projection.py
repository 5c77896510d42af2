"""Fluid what-if projection under an affine model, with the running set's sums updated incrementally.

A projection answers "when does each member of this running set finish?" when every member
progresses at its predicted rate (fraction of solo speed) and the rates change only when a
member finishes. :func:`project_fluid` runs it for any rate function (one call per projected
segment); :func:`project_affine` is the compiled form for an affine predictor over a built-in
map, which updates the running set's per-resource sums as members finish instead of evaluating
the map again: O(k log k + k^2) with a small constant, equal to the per-segment computation to
rounding. docs/embedding.md explains the projection and its cost.

Examples
--------
>>> import numpy as np
>>> dem = np.array([[0.5, 0.5, 0.25], [0.25, 0.5, 0.5]])
>>> w = np.zeros(6); w[4] = -0.5                  # default map: rate falls with the others' L2
>>> project_affine(dem, np.array([1.0, 4.0]), 0.0, w, 1.0, feature_map="default")
array([1.33333333, 4.33333333])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from interfpred.constants import PREDICTED_RATE_MAX, PREDICTED_RATE_MIN, TRACKER_FINISH_RTOL
from interfpred.errors import InterfpredError
from interfpred.features.compiled_maps import COMBINE_MAX, COMBINE_SUM, MAP_DEFAULT, MAP_GPULETS, MAP_RICH, n_features
from interfpred.serving._fluid_projection import NONFINITE_MESSAGE, advance, project_affine_unchecked

__all__ = ["COMBINE_CODES", "MAP_CODES", "ProjectionInputs", "project_affine", "project_fluid"]

#: Feature map and combine names -> the codes the compiled projection takes.
MAP_CODES = {"default": MAP_DEFAULT, "gpulets": MAP_GPULETS, "rich": MAP_RICH}
COMBINE_CODES = {"sum": COMBINE_SUM, "max": COMBINE_MAX}


def project_fluid(rates_of: Callable[[np.ndarray], np.ndarray], rem: np.ndarray, t: float, *,
                  rtol: float = TRACKER_FINISH_RTOL,
                  refused: str = NONFINITE_MESSAGE) -> np.ndarray:
    """Projected completion times of members with remaining solo work ``rem`` (n,), from ``t``.

    ``rates_of(members)`` gives the rates (n_active,) of the members still running (indices
    into ``rem``, in their order) for one segment; the segment ends at the earliest completion
    (members within ``rtol`` of it finish together) and the next one's rates are asked for. An
    error with message ``refused`` is raised when a rate or a time to finish is not finite
    or not positive.

    Examples
    --------
    >>> project_fluid(lambda members: np.full(members.size, 0.5), np.array([1.0, 2.0]), 10.0)
    array([12., 14.])
    """
    r = np.array(rem, dtype=np.float64)
    n = r.shape[0]
    end = np.empty(n)
    idx = np.arange(n)
    taus = np.empty(n)
    retired = np.empty(n, dtype=np.int64)
    na = n
    tf = float(t)
    while na > 0:
        rate = np.ascontiguousarray(rates_of(idx[:na].copy()), dtype=np.float64)
        na, tf, _ = advance(idx, na, r, rate, taus, tf, rtol, end, retired)
        if na < 0:
            raise InterfpredError(refused)
    return end


def project_affine(dem, rem, t: float, weights, intercept: float, *, feature_map: str = "rich",
                   combine: str = "sum", target: str = "rate", pred_lo: float = -math.inf,
                   min_rate: float = PREDICTED_RATE_MIN, max_rate: float = PREDICTED_RATE_MAX) -> np.ndarray:
    """Projected completion times of a running set under the affine model ``intercept + weights . phi``.

    Parameters
    ----------
    dem
        Demands (n, 3): SM, L2 and DRAM throughput of each member alone, fractions of peak.
    rem
        Remaining solo work of each member (n,), ms at solo speed, > 0.
    t
        The time the projection starts, ms.
    weights, intercept
        The affine model over the feature map (``weights`` has the map's width).
    feature_map, combine
        A built-in map (``"default"``, ``"gpulets"``, ``"rich"``) and how co-runners combine.
    target
        ``"rate"``: the model predicts the rate; ``"slowdown"``: its inverse.
    pred_lo
        Lower clip of the prediction before it becomes a rate.
    min_rate, max_rate
        Clamp of the rates (default the clamp of every prediction path, ``PREDICTED_RATE_MIN``,
        ``PREDICTED_RATE_MAX``); ``max_rate`` at most ``PREDICTED_RATE_MAX``.

    Returns
    -------
    ndarray
        (n,) projected completion times, ms.

    Examples
    --------
    >>> project_affine([[0.5, 0.5, 0.5]], [2.0], 10.0, [0.0] * 16, 0.5)   # rate 0.5
    array([14.])
    >>> project_affine([[0.5, 0.5]], [2.0], 0.0, [0.0] * 16, 1.0)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: dem must have shape (n, 3), got (1, 2)
    """
    d = np.ascontiguousarray(dem, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] != 3:
        raise InterfpredError(f"dem must have shape (n, 3), got {d.shape}")
    if not np.all(np.isfinite(d)) or (d.size and (d.min() < 0.0 or d.max() > 1.0)):
        raise InterfpredError("dem must hold finite fractions in [0, 1]")
    r = np.ascontiguousarray(rem, dtype=np.float64).reshape(-1)
    if r.shape[0] != d.shape[0]:
        raise InterfpredError(f"rem has {r.shape[0]} values for {d.shape[0]} members")
    if not np.all(np.isfinite(r) & (r > 0.0)):
        raise InterfpredError("rem must hold finite remaining work > 0 ms")
    if feature_map not in MAP_CODES:
        raise InterfpredError(f"feature_map {feature_map!r} must be one of {', '.join(MAP_CODES)}")
    if combine not in COMBINE_CODES:
        raise InterfpredError(f"combine {combine!r} must be 'sum' or 'max'")
    if target not in ("rate", "slowdown"):
        raise InterfpredError(f"target {target!r} must be 'rate' or 'slowdown'")
    map_id = MAP_CODES[feature_map]
    w = np.ascontiguousarray(weights, dtype=np.float64).reshape(-1)
    if w.shape[0] != n_features(map_id):
        raise InterfpredError(f"weights has {w.shape[0]} values; the {feature_map!r} map has {n_features(map_id)}")
    b, lo, rmin, rmax, tf = (float(v) for v in (intercept, pred_lo, min_rate, max_rate, t))
    if not (math.isfinite(b) and np.all(np.isfinite(w)) and math.isfinite(tf)):
        raise InterfpredError("weights, intercept and t must be finite")
    if not (0.0 < rmin <= rmax <= PREDICTED_RATE_MAX):
        raise InterfpredError(f"need 0 < min_rate <= max_rate <= {PREDICTED_RATE_MAX} (no prediction is faster than "
                              f"solo), got {min_rate!r}, {max_rate!r}")
    return project_affine_unchecked(d, r, tf, map_id, COMBINE_CODES[combine], w, b, lo, target == "rate",
                                    rmin, rmax)


class ProjectionInputs(NamedTuple):
    """A tracker's running set as a vectorised projection reads it (see ``ColocationTracker.projection_inputs``).

    Remaining work at a time ``t >= t0`` is ``max(rem - rates * (t - t0), TRACKER_MIN_REMAINING * solo)``.
    """

    ids: tuple
    dem: np.ndarray
    solo: np.ndarray
    rem: np.ndarray
    rates: np.ndarray
    t0: float
    now: float | None
    weights: np.ndarray
    intercept: float
    pred_lo: float
    map_id: int
    combine_id: int
    is_rate: bool
    min_rate: float
    max_rate: float
