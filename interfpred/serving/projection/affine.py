"""Compiled fluid what-if projection under an affine model over a built-in map.

:func:`project_affine` projects a running set under ``intercept + weights . phi``: instead of
evaluating the map again in every segment it evaluates the map's affine form
(:mod:`interfpred.features.compiled_maps`) and updates the running set's per-resource sums as
members finish: O(k log k + k^2) with a small constant, equal to the per-segment computation
to rounding. :func:`project_affine_unchecked` and :func:`project_stacked_unchecked` (many
running sets in one call, a fleet's devices) are the same on codes, without the checks: the
tracker's and the placement cache's hot paths. :func:`affine_rates` gives the rates of one
segment. :func:`project_into` is the one loop they run, at the point prediction or at a calibrated
bound of it (:mod:`interfpred.serving.projection.bounds`). Every prediction becomes a rate through :func:`interfpred._core.targets.to_rate`,
the one clamp of every prediction path; each segment is one :func:`~interfpred.serving.projection.generic.advance`.

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

from interfpred._core.jit import njit
from interfpred._core.targets import to_rate
from interfpred.constants import PREDICTED_RATE_MAX, PREDICTED_RATE_MIN, TRACKER_FINISH_RTOL
from interfpred.errors import InterfpredError
from interfpred.features.compiled_maps import (
    COMBINE_MAX,
    COMBINE_SUM,
    DRAM,
    L2,
    MAP_CORUNNERS,
    MAP_DEFAULT,
    MAP_GPULETS,
    MAP_RICH,
    N_RESOURCE_TERMS,
    N_RESOURCES,
    SM,
    TERM_COLUMN,
    TERM_EXCESS,
    affine_other_weight,
    affine_own,
    affine_set,
    affine_terms_into,
    map_running_set,
    n_features,
    others_sum,
    quantize_into,
    set_total,
    worst_other,
)
from interfpred.serving.projection.bounds import (
    BOUND_MEAN,
    BOUND_STD,
    N_PATTERN_VECTORS,
    PATTERN_SLOTS,
    Z_PAIR_J,
    Z_PAIR_L,
    bounded,
    std_gram,
    std_member,
    std_pattern_vectors,
)
from interfpred.serving.projection.generic import NONFINITE, NONFINITE_MESSAGE, advance

__all__ = ["COMBINE_CODES", "MAP_CODES", "ProjectionInputs", "affine_rates", "project_affine",
           "project_affine_into", "project_affine_unchecked", "project_into", "project_stacked_into", "project_stacked_unchecked"]

#: Feature map and combine names -> the codes the compiled projection takes.
MAP_CODES = {"default": MAP_DEFAULT, "gpulets": MAP_GPULETS, "rich": MAP_RICH, "corunners": MAP_CORUNNERS}
COMBINE_CODES = {"sum": COMBINE_SUM, "max": COMBINE_MAX}



# ------------------------------------------------------------------ the steps of the projection loop
# (project_into: the mean and every bound run this one loop; these steps are inlined into it)
@njit(cache=True, inline="always")
def member_terms(dem, dq, terms, b):
    """Per member its own terms ``c`` and the weights ``h`` of the others' demand; the set's fixed-point sums."""
    n = dem.shape[0]
    c = np.empty(n)
    h = np.empty((n, N_RESOURCES))
    tot = np.zeros(N_RESOURCES, dtype=np.int64)
    member_terms_into(dem, dq, terms, b, c, h, tot)
    return c, h, tot


@njit(cache=True, inline="always")
def member_terms_into(dem, dq, terms, b, c, h, tot):
    """:func:`member_terms` into ``c`` (n,), ``h`` (n, 3) and ``tot`` (3,)."""
    tot[:] = 0
    for i in range(dem.shape[0]):
        c[i] = affine_own(terms, b, dem[i, SM], dem[i, L2], dem[i, DRAM])
        for r in range(N_RESOURCES):
            h[i, r] = affine_other_weight(terms, r, dem[i, r])
            tot[r] += dq[i, r]


@njit(cache=True, inline="always")
def demand_lists(dem, use_max):
    """For the max combine: per resource, the members in decreasing demand as a doubly linked list
    (``nxt``, ``prv``, ``head``); placeholders otherwise."""
    nl = dem.shape[0] + 1 if use_max else 1
    nxt = np.full((N_RESOURCES, nl), -1, dtype=np.int64)
    prv = np.full((N_RESOURCES, nl), -1, dtype=np.int64)
    head = np.full(N_RESOURCES, -1, dtype=np.int64)
    demand_lists_into(dem, use_max, nxt, prv, head)
    return nxt, prv, head


@njit(cache=True, inline="always")
def demand_lists_into(dem, use_max, nxt, prv, head):
    """:func:`demand_lists` into ``nxt``, ``prv`` (3, n + 1) and ``head`` (3,) (left as they are for the sum combine)."""
    n = dem.shape[0]
    if use_max:
        for r in range(N_RESOURCES):
            order = np.argsort(-dem[:, r], kind="mergesort")
            head[r] = order[0]
            for a in range(n):
                i = order[a]
                prv[r, i] = order[a - 1] if a > 0 else -1
                nxt[r, i] = order[a + 1] if a + 1 < n else -1


@njit(cache=True, inline="always")
def step_buffers(rem):
    """The loop's scratch, in two allocations: members still running (all, in order) and those a step
    retires; remaining work (``rem``), rates, times to finish, and the top two demands per resource."""
    n = rem.shape[0]
    return step_views(rem, np.empty(2 * n, dtype=np.int64), np.empty(3 * n + 2 * N_RESOURCES))


@njit(cache=True, inline="always")
def step_views(rem, ibuf, fbuf):
    """:func:`step_buffers` as views of ``ibuf`` (2n int64) and ``fbuf`` (3n + 6)."""
    n = rem.shape[0]
    idx = ibuf[:n]
    retired = ibuf[n:2 * n]
    for i in range(n):
        idx[i] = i
    work = fbuf[:n]
    work[:] = rem
    rate = fbuf[n:2 * n]
    taus = fbuf[2 * n:3 * n]
    top1 = fbuf[3 * n:3 * n + N_RESOURCES]
    top2 = fbuf[3 * n + N_RESOURCES:3 * n + 2 * N_RESOURCES]
    return idx, retired, work, rate, taus, top1, top2


@njit(cache=True, inline="always")
def top_two(dem, head, nxt, top1, top2):
    """The largest two demands per resource of the members still running (max combine)."""
    for r in range(N_RESOURCES):
        i1 = head[r]
        top1[r] = dem[i1, r]
        i2 = nxt[r, i1]
        top2[r] = dem[i2, r] if i2 >= 0 else 0.0


@njit(cache=True, inline="always")
def retire(retired, nret, dq, tot, use_max, prv, nxt, head):
    """Take the ``nret`` members a step finished out of the set's sums and the demand lists."""
    for j in range(nret):
        i = retired[j]
        for r in range(N_RESOURCES):
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


@njit(cache=True)
def affine_rates(dem, map_id, combine_id, w, b, pred_lo, is_rate, rmin, rmax, out):
    """Rates of the running set ``dem`` (k, 3) under the affine model ``b + w . phi`` into ``out[:k]``."""
    k = dem.shape[0]
    if k == 0:
        return
    phi = map_running_set(dem, map_id, combine_id)
    d = w.shape[0]
    for a in range(k):
        p = b
        for j in range(d):
            p += w[j] * phi[a, j]
        if p == p:
            p = max(p, pred_lo)
        out[a] = to_rate(p, is_rate, rmin, rmax)



@njit(cache=True)
def project_into(dem, rem, t0, map_id, combine_id, w, b, pred_lo, mode, theta, P, s2, min_scale, is_rate, rmin, rmax,
                 rtol, end):
    """Projected completion of every member of ``dem`` (n, 3) with remaining work ``rem`` into ``end``, at the
    affine model's point prediction (``mode`` ``BOUND_MEAN``) or at a calibrated bound of it (``BOUND_RELATIVE``
    or ``BOUND_STD``). The running set's sums are updated as members finish (see the module docstring).
    Returns 0, or :data:`NONFINITE` when a rate or a remaining work is not finite.

    Member ``i``'s prediction ``m = max(b + w . phi, pred_lo)`` becomes ``m + u * theta[i]`` (``theta``
    (n,), or one value for every member) with
    ``u = max(|m|, min_scale)`` (``BOUND_RELATIVE``) or ``u = max(s, min_scale * max(|m|, 1))``
    with ``s = sqrt(s2 (1 + x' P x))``, ``x = [phi, 1]`` or ``phi`` by ``P``'s size
    (``BOUND_STD``, sum combine only). The std form writes ``x' P x`` as a quadratic form in the
    five set quantities (1, the three totals, the co-runner count), whose coefficients per member
    are computed once per pattern of resources over capacity, so a segment costs O(1) per member.
    """
    n = dem.shape[0]
    if n == 0:
        return 0
    use_std = mode == BOUND_STD
    ns = n if use_std else 0                # std-bound scratch, empty otherwise
    nv = N_PATTERN_VECTORS if use_std else 0
    std = (np.empty((ns, 15)), np.empty((nv, nv)), np.empty((nv, PATTERN_SLOTS), dtype=np.int64),
           np.empty((nv, PATTERN_SLOTS)), np.empty(nv), np.empty(nv), np.empty(15 if use_std else 0),
           np.empty(5 if use_std else 0))
    ibuf, fbuf = projection_scratch(n)
    return project_core(dem, rem, t0, map_id, combine_id, w, b, pred_lo, mode, theta, P, s2, min_scale, is_rate,
                        rmin, rmax, rtol, end, ibuf, fbuf, std)


@njit(cache=True)
def projection_scratch(n):
    """Scratch for :func:`project_core` of up to ``n`` members: one int64 and one float64 buffer."""
    return np.empty(_ISIZE_N * n + _ISIZE_1, dtype=np.int64), np.empty(_FSIZE_N * n + _FSIZE_1)


#: Scratch sizes of :func:`project_core` for n members: ``_ISIZE_N * n + _ISIZE_1`` int64 values (fixed-point
#: demands, the set's sums, the demand lists, members running and retired), ``_FSIZE_N * n + _FSIZE_1`` floats
#: (own terms, the others' weights, the step's work / rate / time, the top two demands, the map's terms).
_ISIZE_N = 3 + 2 * N_RESOURCES + 2
_ISIZE_1 = N_RESOURCES + 2 * N_RESOURCES + N_RESOURCES
_FSIZE_N = 1 + N_RESOURCES + 3
_FSIZE_1 = 2 * N_RESOURCES + N_RESOURCE_TERMS * N_RESOURCES


@njit(cache=True)
def project_core(dem, rem, t0, map_id, combine_id, w, b, pred_lo, mode, theta, P, s2, min_scale, is_rate, rmin,
                 rmax, rtol, end, ibuf, fbuf, std):
    """:func:`project_into` with its scratch given: ``ibuf``, ``fbuf`` from :func:`projection_scratch` of at
    least ``n`` members, and ``std`` the std bound's (empty arrays for the other modes)."""
    n = dem.shape[0]
    if n == 0:
        return 0
    gq, gram, vidx, vval, sy, sca, zz, z = std
    use_std = mode == BOUND_STD
    # views of the scratch (layout: projection_scratch)
    dq = ibuf[:3 * n].reshape((n, 3))
    tot = ibuf[3 * n:3 * n + N_RESOURCES]
    nl = n + 1
    o = 3 * n + N_RESOURCES
    nxt = ibuf[o:o + N_RESOURCES * nl].reshape((N_RESOURCES, nl))
    o += N_RESOURCES * nl
    prv = ibuf[o:o + N_RESOURCES * nl].reshape((N_RESOURCES, nl))
    o += N_RESOURCES * nl
    head = ibuf[o:o + N_RESOURCES]
    o += N_RESOURCES
    sbuf = ibuf[o:o + 2 * n]
    c = fbuf[:n]
    h = fbuf[n:n + N_RESOURCES * n].reshape((n, N_RESOURCES))
    o = (1 + N_RESOURCES) * n
    stepf = fbuf[o:o + 3 * n + 2 * N_RESOURCES]
    o += 3 * n + 2 * N_RESOURCES
    terms = fbuf[o:o + N_RESOURCE_TERMS * N_RESOURCES].reshape((N_RESOURCE_TERMS, N_RESOURCES))
    quantize_into(dem, dq)
    w_others = affine_terms_into(w, map_id, terms)
    member_terms_into(dem, dq, terms, b, c, h, tot)
    per_row = theta.shape[0] == n
    pattern = -1
    has_intercept = P.shape[0] > w.shape[0]
    use_max = combine_id == COMBINE_MAX
    demand_lists_into(dem, use_max, nxt, prv, head)
    idx, retired, work, rate, taus, top1, top2 = step_views(rem, sbuf, stepf)
    na = n
    t = t0
    while na > 0:
        g = affine_set(terms, w_others, tot, na)
        if use_max:
            top_two(dem, head, nxt, top1, top2)
        if use_std:
            z[0] = 1.0
            pat = 0
            for r in range(N_RESOURCES):
                z[1 + r] = set_total(tot, r)
                if TERM_COLUMN[map_id, TERM_EXCESS, r] >= 0 and z[1 + r] > 1.0:
                    pat |= 1 << r
            z[4] = na - 1.0
            for j in range(15):
                zz[j] = z[Z_PAIR_J[j]] * z[Z_PAIR_L[j]]
            if pat != pattern:               # the excess terms change form: new coefficients
                pattern = pat
                std_pattern_vectors(map_id, w.shape[0], has_intercept, pat, vidx, vval)
                std_gram(P, vidx, vval, gram)
                for a in range(na):
                    i = idx[a]
                    std_member(gram, dem[i, SM], dem[i, L2], dem[i, DRAM], sy, sca, gq[i])
        for a in range(na):
            i = idx[a]
            p = c[i] + g
            if na > 1:
                if use_max:
                    o0 = worst_other(dem[i, SM], top1[SM], top2[SM])
                    o1 = worst_other(dem[i, L2], top1[L2], top2[L2])
                    o2 = worst_other(dem[i, DRAM], top1[DRAM], top2[DRAM])
                else:
                    o0 = others_sum(tot, dq, i, SM)
                    o1 = others_sum(tot, dq, i, L2)
                    o2 = others_sum(tot, dq, i, DRAM)
                p += h[i, SM] * o0 + h[i, L2] * o1 + h[i, DRAM] * o2
            p = max(p, pred_lo)
            sd = 0.0
            if use_std:
                qf = 0.0
                for j in range(15):
                    qf += gq[i, j] * zz[j]
                sd = np.sqrt(s2 * (1.0 + qf))
            rate[a] = to_rate(bounded(p, mode, theta[i if per_row else 0], sd, min_scale), is_rate, rmin, rmax)
        keep, t, nret = advance(idx, na, work, rate, taus, t, rtol, end, retired)
        if keep < 0:
            return NONFINITE
        retire(retired, nret, dq, tot, use_max, prv, nxt, head)
        na = keep
    return 0


@njit(cache=True)
def project_affine_into(dem, rem, t0, map_id, combine_id, w, b, pred_lo, is_rate, rmin, rmax, rtol, end):
    """:func:`project_into` at the point prediction: 0, or :data:`NONFINITE`."""
    ibuf, fbuf = projection_scratch(dem.shape[0])
    none, none2, std = no_bound_args()
    return project_core(dem, rem, t0, map_id, combine_id, w, b, pred_lo, BOUND_MEAN, none, none2, 0.0, 0.0,
                        is_rate, rmin, rmax, rtol, end, ibuf, fbuf, std)


@njit(cache=True, inline="always")
def no_bound_args():
    """Empty arrays for the point prediction's unused bound arguments: ``theta``, ``P`` and the std scratch
    (views of two allocations)."""
    e = np.empty(0)
    ei = np.empty(0, dtype=np.int64)
    return e, e.reshape((0, 0)), (e.reshape((0, 15)), e.reshape((0, 0)), ei.reshape((0, PATTERN_SLOTS)),
                                  e.reshape((0, PATTERN_SLOTS)), e, e, e, e)


@njit(cache=True)
def project_stacked_into(dem, rem, n, t, W, B, LO, use, map_id, combine_id, is_rate, rmin, rmax, rtol, end):
    """One projection per row block ``g`` where ``use[g]``: members ``dem[g, :n[g]]`` under ``W[g]`` (one scratch
    for all)."""
    ibuf, fbuf = projection_scratch(dem.shape[1])
    none, none2, std = no_bound_args()
    for g in range(dem.shape[0]):
        m = n[g]
        if use[g] and m > 0:
            status = project_core(dem[g, :m], rem[g, :m], t, map_id, combine_id, W[g], B[g], LO[g], BOUND_MEAN, none,
                                  none2, 0.0, 0.0, is_rate, rmin, rmax, rtol, end[g, :m], ibuf, fbuf, std)
            if status != 0:
                return status
    return 0


def project_affine_unchecked(dem: np.ndarray, rem: np.ndarray, t: float, map_id: int, combine_id: int,
                             w: np.ndarray, b: float, pred_lo: float, is_rate: bool, rmin: float, rmax: float,
                             rtol: float = TRACKER_FINISH_RTOL) -> np.ndarray:
    """:func:`project_affine` on codes, without its checks (the tracker's hot
    path): C-contiguous float64 inputs. Raises :data:`NONFINITE_MESSAGE` when a rate is not finite."""
    end = np.empty(dem.shape[0])
    if project_affine_into(dem, rem, t, map_id, combine_id, w, b, pred_lo, is_rate, rmin, rmax, rtol, end) != 0:
        raise InterfpredError(NONFINITE_MESSAGE)
    return end


def project_stacked_unchecked(dem: np.ndarray, rem: np.ndarray, n: np.ndarray, t: float, W: np.ndarray,
                              B: np.ndarray, LO: np.ndarray, use: np.ndarray, map_id: int, combine_id: int,
                              is_rate: bool, rmin: float, rmax: float, end: np.ndarray,
                              rtol: float = TRACKER_FINISH_RTOL) -> None:
    """Many projections in one compiled call, in blocks of fixed capacity (a fleet's GPUs): block ``g``
    is ``dem[g, :n[g]]`` (G, C, 3) with ``rem[g, :n[g]]`` under ``W[g]``, ``B[g]``, ``LO[g]``; blocks
    with ``use[g]`` false are skipped. Writes ``end[g, :n[g]]`` (G, C); no checks."""
    if project_stacked_into(dem, rem, n, float(t), W, B, LO, use, map_id, combine_id, is_rate, rmin, rmax, rtol,
                            end) != 0:
        raise InterfpredError(NONFINITE_MESSAGE)



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

