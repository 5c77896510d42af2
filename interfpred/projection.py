"""Fluid what-if projection under an affine model, with the running set's sums updated incrementally.

A projection answers "when does each member of this running set finish?" when every member
progresses at its predicted rate (fraction of solo speed) and the rates change only when a
member finishes. Under an affine predictor ``p = b + w . phi`` and a built-in feature map, the
prediction of member ``i`` in a running set with per-resource totals ``T`` and ``k`` members is

    p_i = c_i + sum_r h_ir * o_ir + G(T, k)

where ``c_i`` and ``h_i`` depend on member ``i`` only (computed once per call), ``o_ir`` is what
the others put on resource ``r`` (``T_r - me_r`` for the ``sum`` combine, the largest other for
``max``) and ``G`` holds the set-wide terms of the rich map (total pressure, its excess over
capacity, co-runner count), computed once per segment. When a member finishes, the totals lose
its (fixed-point, exact) demand and, for ``max``, it leaves a per-resource linked list kept in
decreasing order; nothing is recomputed from scratch.

**Cost.** Sorting for ``max`` is O(k log k) once; each projected segment costs a handful of
flops per member still running (the rate and time-to-finish of each), and there are at most k
segments, so a call is O(k log k + k^2) with a small constant instead of ``k`` full map
evaluations of ``d`` features per segment. Every member's rate changes at every completion, so
a segment cannot be cheaper than one pass over the members still running.

**Same answers.** The totals are the exact fixed-point sums of the per-segment map, the
completion rule is the same (members within ``rtol`` of the earliest finish together), and only
the order of the additions inside one prediction differs from evaluating the map and the dot
product: results agree with the per-segment computation to rounding (a few ulps).

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
from typing import NamedTuple

import numpy as np

from interfpred._jit import njit
from interfpred._timeline_kernels import (
    COMBINE_MAX,
    MAP_DEFAULT,
    MAP_GPULETS,
    MAP_RICH,
    n_features,
    quantize,
)
from interfpred.constants import TRACKER_FINISH_RTOL, TRACKER_MAX_RATE, TRACKER_MIN_RATE
from interfpred.errors import InterfpredError

__all__ = ["COMBINE_CODES", "MAP_CODES", "ProjectionInputs", "project_affine", "project_affine_unchecked", "project_stacked_unchecked"]

#: Feature map and combine names -> the codes the kernels take.
MAP_CODES = {"default": MAP_DEFAULT, "gpulets": MAP_GPULETS, "rich": MAP_RICH}
COMBINE_CODES = {"sum": 0, "max": COMBINE_MAX}

_INV_SCALE = 2.0 ** -50
_NONFINITE = ("projection refused: a predicted rate or remaining work is not finite "
              "(the predictor's weights overflow on this running set)")


@njit(cache=True)
def _kernel(dem, rem, t0, map_id, combine_id, w, b, pred_lo, is_rate, rmin, rmax, rtol, end):
    """Projected completion of every member of ``dem`` (n, 3) with remaining work ``rem`` into ``end``.

    Returns 0, or 1 when a rate or a remaining work is not finite (a NaN prediction): every
    segment then retires at least one member, so the loop is bounded by n whatever the weights.
    """
    n = dem.shape[0]
    if n == 0:
        return 0
    dq = quantize(dem)
    c = np.empty(n)
    h = np.zeros((n, 3))
    tot = np.zeros(3, dtype=np.int64)
    for i in range(n):
        if map_id == MAP_GPULETS:
            c[i] = b + w[0] * dem[i, 1] + w[1] * dem[i, 2]
            h[i, 1] = w[2]
            h[i, 2] = w[3]
        else:
            c[i] = b + w[0] * dem[i, 0] + w[1] * dem[i, 1] + w[2] * dem[i, 2]
            for r in range(3):
                h[i, r] = w[3 + r]
                if map_id == MAP_RICH:
                    h[i, r] += w[6 + r] * dem[i, r]
        for r in range(3):
            tot[r] += dq[i, r]
    # For the max combine: per resource, members in decreasing demand as a doubly linked list.
    use_max = combine_id == COMBINE_MAX
    nl = n + 1 if use_max else 1
    nxt = np.full((3, nl), -1, dtype=np.int64)
    prv = np.full((3, nl), -1, dtype=np.int64)
    head = np.full(3, -1, dtype=np.int64)
    if use_max:
        for r in range(3):
            order = np.argsort(-dem[:, r], kind="mergesort")
            head[r] = order[0]
            for a in range(n):
                i = order[a]
                prv[r, i] = order[a - 1] if a > 0 else -1
                nxt[r, i] = order[a + 1] if a + 1 < n else -1
    idx = np.arange(n)
    work = rem.copy()
    rate = np.empty(n)
    taus = np.empty(n)
    na = n
    t = t0
    top1 = np.zeros(3)
    top2 = np.zeros(3)
    while na > 0:
        g = 0.0
        if map_id == MAP_RICH:
            for r in range(3):
                total = tot[r] * _INV_SCALE
                g += w[9 + r] * total + w[12 + r] * max(0.0, total - 1.0)
            g += w[15] * (na - 1.0)
        if use_max:
            for r in range(3):
                i1 = head[r]
                top1[r] = dem[i1, r]
                i2 = nxt[r, i1]
                top2[r] = dem[i2, r] if i2 >= 0 else 0.0
        tmin = np.inf
        t0s = tot[0]
        t1s = tot[1]
        t2s = tot[2]
        for a in range(na):
            i = idx[a]
            p = c[i] + g
            if na > 1:
                if use_max:
                    o0 = top2[0] if dem[i, 0] == top1[0] else top1[0]
                    o1 = top2[1] if dem[i, 1] == top1[1] else top1[1]
                    o2 = top2[2] if dem[i, 2] == top1[2] else top1[2]
                else:
                    o0 = (t0s - dq[i, 0]) * _INV_SCALE
                    o1 = (t1s - dq[i, 1]) * _INV_SCALE
                    o2 = (t2s - dq[i, 2]) * _INV_SCALE
                p += h[i, 0] * o0 + h[i, 1] * o1 + h[i, 2] * o2
            p = max(p, pred_lo)
            if is_rate:
                v = p
            elif p > 0.0:
                v = 1.0 / p
            else:
                v = rmax
            v = min(max(v, rmin), rmax)
            rate[a] = v
            tau = work[i] / v
            if not (v > 0.0 and tau >= 0.0 and tau < np.inf):  # NaN fails every comparison
                return 1
            taus[a] = tau
            tmin = min(tmin, tau)
        t_new = t + tmin
        lim = tmin * (1.0 + rtol)
        keep = 0
        for a in range(na):
            i = idx[a]
            if taus[a] <= lim:
                end[i] = t_new
                for r in range(3):
                    tot[r] -= dq[i, r]
                    if use_max:
                        pi = prv[r, i]
                        ni = nxt[r, i]
                        if pi >= 0:
                            nxt[r, pi] = ni
                        else:
                            head[r] = ni
                        if ni >= 0:
                            prv[r, ni] = pi
            else:
                work[i] -= rate[a] * tmin
                idx[keep] = i
                rate[keep] = rate[a]
                keep += 1
        if keep == na:  # nothing retired: impossible with finite rates, but never loop for ever
            return 1
        na = keep
        t = t_new
    return 0


@njit(cache=True)
def _stacked(dem, rem, n, t, W, B, LO, use, map_id, combine_id, is_rate, rmin, rmax, rtol, end):
    """One projection per row block ``g`` where ``use[g]``: members ``dem[g, :n[g]]`` under ``W[g]``."""
    for g in range(dem.shape[0]):
        m = n[g]
        if use[g] and m > 0:
            status = _kernel(dem[g, :m], rem[g, :m], t, map_id, combine_id, W[g], B[g], LO[g], is_rate, rmin, rmax,
                             rtol, end[g, :m])
            if status != 0:
                return status
    return 0


def project_stacked_unchecked(dem: np.ndarray, rem: np.ndarray, n: np.ndarray, t: float, W: np.ndarray,
                              B: np.ndarray, LO: np.ndarray, use: np.ndarray, map_id: int, combine_id: int,
                              is_rate: bool, rmin: float, rmax: float, end: np.ndarray,
                              rtol: float = TRACKER_FINISH_RTOL) -> None:
    """Many projections in one compiled call, in blocks of fixed capacity (a fleet's GPUs): block ``g``
    is ``dem[g, :n[g]]`` (G, C, 3) with ``rem[g, :n[g]]`` under ``W[g]``, ``B[g]``, ``LO[g]``; blocks
    with ``use[g]`` false are skipped. Writes ``end[g, :n[g]]`` (G, C)."""
    if _stacked(dem, rem, n, float(t), W, B, LO, use, map_id, combine_id, is_rate, rmin, rmax, rtol, end) != 0:
        raise InterfpredError(_NONFINITE)


def project_affine_unchecked(dem: np.ndarray, rem: np.ndarray, t: float, map_id: int, combine_id: int,
                             w: np.ndarray, b: float, pred_lo: float, is_rate: bool, rmin: float, rmax: float,
                             rtol: float = TRACKER_FINISH_RTOL) -> np.ndarray:
    """:func:`project_affine` on codes, without checks (the tracker's hot path): C-contiguous float64 inputs."""
    end = np.empty(dem.shape[0])
    if _kernel(dem, rem, t, map_id, combine_id, w, b, pred_lo, is_rate, rmin, rmax, rtol, end) != 0:
        raise InterfpredError(_NONFINITE)
    return end


def project_affine(dem, rem, t: float, weights, intercept: float, *, feature_map: str = "rich",
                   combine: str = "sum", target: str = "rate", pred_lo: float = -math.inf,
                   min_rate: float = TRACKER_MIN_RATE, max_rate: float = TRACKER_MAX_RATE) -> np.ndarray:
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
        Clamp of the rates.

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
    if not (0.0 < rmin <= rmax < math.inf):
        raise InterfpredError(f"need 0 < min_rate <= max_rate < inf, got {min_rate!r}, {max_rate!r}")
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
