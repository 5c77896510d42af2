"""Compiled rates and fluid projection of a predictor with per-entity pair terms (the tracker's entity fast path).

Package-internal. Two kinds of predictor read as ``lin_a = b + w . phi_a`` over a built-in map plus a
matrix ``M`` of what each co-runner ``c`` adds for member ``a``:

* :data:`PAIRWISE_ENTITY` (:class:`~interfpred.EntityRLS`): member ``a`` of a running set of
  ``na`` predicts ``g(lin_a + S[a] min(1, na - 1) + sum_c M[a, c])``, with ``g`` the exponential
  under a log target (the identity otherwise), and 1 for a member alone when the predictor says so
  (``alone_is_solo``). ``S`` and ``M`` come from the predictor's ``pairwise_terms(names)``. A member
  of little evidence blends in the features-only backoff: ``A[a] * (the above) + (1 - A[a]) *
  (b2 + w2 . phi_a)``, with ``A``, ``w2`` and ``b2`` from ``backoff_terms(names)``.
* :data:`PAIRWISE_BLOCKING` (:class:`~interfpred.KernelBlocking`): the slowdown ``1 + exp(lin_a)
  sum_c M[a, c]`` (``M[a, c]`` the exponential of the pair's terms), 1 alone; its inverse for a
  predictor of rates. ``w``, ``b`` and ``M`` come from ``blocking_terms(names)``.

The projection evaluates the map's affine form (:mod:`interfpred.serving.projection.affine`) and
keeps each member's pair sum ``sum_c M[a, c]`` over the members still running, taking a member's
column out when it finishes (summed again exactly where that subtraction cancels): O(k^2) for a
running set of k, equal to evaluating every segment from scratch to rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from interfpred._core.jit import njit
from interfpred._core.targets import to_rate
from interfpred.features.compiled_maps import (
    COMBINE_MAX,
    DRAM,
    L2,
    SM,
    affine_set,
    affine_terms,
    others_sum,
    quantize,
    worst_other,
)
from interfpred.serving.projection.affine import demand_lists, member_terms, retire, step_buffers, top_two
from interfpred.serving.projection.bounds import BOUND_RELATIVE, bounded
from interfpred.serving.projection.generic import NONFINITE, advance

__all__ = ["PAIRWISE_BLOCKING", "PAIRWISE_ENTITY", "PairwiseInputs", "pairwise_project", "pairwise_project_stacked",
           "pairwise_rates"]

#: Kinds of pair terms (module docstring).
PAIRWISE_ENTITY = 0
PAIRWISE_BLOCKING = 1
#: A pair sum left smaller than this fraction of what a finish took out of it is summed again exactly
#: (the subtraction would have cancelled most of its digits).
_CANCEL = 1e-4


@njit(cache=True)
def blocking_excess(lin, msum, i, M, u, idx, na, rowmax, rowmin, eta_max):
    """The blocking kind's excess slowdown ``sum_c exp(min(lin + log M[i, c], eta_max))`` over the
    co-runners ``idx[:na]``: ``exp(lin) * msum`` where no term can reach the cap (``rowmax[i]``: the
    largest ``log M[i, c]`` of the set), the cap times the co-runners where every term does
    (``rowmin[i]``: the smallest), else summed term by term."""
    if lin + rowmax[i] <= eta_max:
        return math.exp(lin) * msum if msum > 0.0 else 0.0
    if lin + rowmin[i] >= eta_max:
        return (na - 1) * math.exp(eta_max)
    v = 0.0
    ui = u[i]
    for c in range(na):
        j = idx[c]
        if j != i:
            v += math.exp(min(lin + math.log(M[ui, u[j]]), eta_max))
    return v


@njit(cache=True)
def pair_sums(M, u, idx, na, msum, rowmax, rowmin):
    """Each running member's sum of ``M`` over its co-runners (``M[i, i]`` is never read) and the logs of
    the largest and the smallest (the blocking kind's ``rowmax`` and ``rowmin``; -inf for 0)."""
    for a in range(na):
        i = idx[a]
        ui = u[i]
        v = 0.0
        top = 0.0
        low = np.inf
        for c in range(na):
            if c != a:
                m = M[ui, u[idx[c]]]
                v += m
                top = max(top, m)
                low = min(low, m)
        msum[i] = v
        rowmax[i] = math.log(top) if top > 0.0 else -np.inf
        rowmin[i] = math.log(low) if low > 0.0 else -np.inf


@njit(cache=True)
def drop_pairs(M, u, idx, keep, retired, nret, msum):
    """Take the ``nret`` finished members' columns out of the pair sums of the ``keep`` still running."""
    for a in range(keep):
        i = idx[a]
        ui = u[i]
        v = msum[i]
        big = 0.0
        for j in range(nret):
            m = M[ui, u[retired[j]]]
            v -= m
            big = max(big, abs(m))
        if abs(v) < _CANCEL * big:
            v = 0.0
            for c in range(keep):
                if c != a:
                    v += M[ui, u[idx[c]]]
        msum[i] = v


@njit(cache=True)
def pairwise_project(dem, rem, t0, map_id, combine_id, kind, w, b, u, S, M, A, w2, b2, eta_max, log_target,
                     alone_solo, pred_rates, is_rate, rmin, rmax, rtol, end, theta, min_scale, first_rates):
    """Fluid projection of ``dem`` (n, 3) with remaining work ``rem`` under pair terms of ``kind``, into ``end``.

    Member ``i`` is entity ``u[i]`` of the terms ``S``, ``M`` and ``A`` (per entity, not per member).

    Returns 0, or :data:`~interfpred.serving.projection.generic.NONFINITE` when a rate or a remaining
    work is not finite. With ``theta`` non-empty ((n,), or one value for every member), each
    prediction ``p`` becomes the relative-scale calibrated bound ``p + max(|p|, min_scale) * theta[i]``.
    ``pred_rates``: the predictor predicts rates (the blocking kind turns its slowdown into one);
    ``eta_max``: the cap of each of the blocking kind's exponents ``lin + log M[a, c]``. With
    ``first_rates`` of n values, the rates of the first segment (all members together) are written
    there and nothing is projected (:func:`pairwise_rates`).
    """
    n = dem.shape[0]
    if n == 0:
        return 0
    dq = quantize(dem)
    terms, w_others = affine_terms(w, map_id)
    c, h, tot = member_terms(dem, dq, terms, b)
    blend = kind == PAIRWISE_ENTITY and A.shape[0] > 0 and A.min() < 1.0
    terms2, w_others2 = affine_terms(w2, map_id)
    c2, h2, _ = member_terms(dem, dq, terms2, b2)
    use_max = combine_id == COMBINE_MAX
    nxt, prv, head = demand_lists(dem, use_max)
    idx, retired, work, rate, taus, top1, top2 = step_buffers(rem)
    msum = np.empty(n)
    rowmax = np.empty(n)
    rowmin = np.empty(n)
    pair_sums(M, u, idx, n, msum, rowmax, rowmin)
    per_row = theta.shape[0] > 1
    bound = theta.shape[0] > 0
    blocking = kind == PAIRWISE_BLOCKING
    na = n
    t = t0
    while na > 0:
        g = affine_set(terms, w_others, tot, na)
        g2 = affine_set(terms2, w_others2, tot, na) if blend else 0.0
        if use_max:
            top_two(dem, head, nxt, top1, top2)
        many = na > 1
        for a in range(na):
            i = idx[a]
            lin = c[i] + g
            o0 = o1 = o2 = 0.0
            if many:
                if use_max:
                    o0 = worst_other(dem[i, SM], top1[SM], top2[SM])
                    o1 = worst_other(dem[i, L2], top1[L2], top2[L2])
                    o2 = worst_other(dem[i, DRAM], top1[DRAM], top2[DRAM])
                else:
                    o0 = others_sum(tot, dq, i, SM)
                    o1 = others_sum(tot, dq, i, L2)
                    o2 = others_sum(tot, dq, i, DRAM)
                lin += h[i, SM] * o0 + h[i, L2] * o1 + h[i, DRAM] * o2
            if blocking:
                slow = 1.0 + blocking_excess(lin, msum[i], i, M, u, idx, na, rowmax, rowmin, eta_max) if many else 1.0
                p = 1.0 / slow if pred_rates else slow
            elif not many and alone_solo:
                p = 1.0
            else:
                p = lin + msum[i] + S[u[i]] if many else lin
                if log_target:
                    p = math.exp(p)
                if blend and A[u[i]] < 1.0:
                    lin2 = c2[i] + g2 + h2[i, SM] * o0 + h2[i, L2] * o1 + h2[i, DRAM] * o2
                    p = A[u[i]] * p + (1.0 - A[u[i]]) * lin2
            if bound:
                p = bounded(p, BOUND_RELATIVE, theta[i if per_row else 0], 0.0, min_scale)
            rate[a] = to_rate(p, is_rate, rmin, rmax)
        if first_rates.shape[0] == n:
            first_rates[:] = rate[:n]
            return 0
        keep, t, nret = advance(idx, na, work, rate, taus, t, rtol, end, retired)
        if keep < 0:
            return NONFINITE
        retire(retired, nret, dq, tot, use_max, prv, nxt, head)
        drop_pairs(M, u, idx, keep, retired, nret, msum)
        na = keep
    return 0


@njit(cache=True)
def pairwise_rates(dem, map_id, combine_id, kind, w, b, u, S, M, A, w2, b2, eta_max, log_target, alone_solo,
                   pred_rates, is_rate, rmin, rmax, out, theta, min_scale):
    """Clamped rates of every member of the running set ``dem`` (k, 3) into ``out[:k]``: the first
    segment of :func:`pairwise_project` (same arguments)."""
    k = dem.shape[0]
    pairwise_project(dem, np.ones(k), 0.0, map_id, combine_id, kind, w, b, u, S, M, A, w2, b2, eta_max, log_target,
                     alone_solo, pred_rates, is_rate, rmin, rmax, 0.0, np.empty(k), theta, min_scale, out[:k])


@njit(cache=True)
def pairwise_project_stacked(dem, rem, n, t0, use, map_id, combine_id, kind, W, B, U, S, M, A, W2, B2, ETA,
                             log_target, alone_solo, pred_rates, is_rate, rmin, rmax, rtol, end, status):
    """Many :func:`pairwise_project` calls in one (a fleet's GPUs): block ``g`` is ``dem[g, :n[g]]``
    (G, C, 3) with ``rem[g, :n[g]]``, its members' entities ``U[g, :n[g]]`` in its own terms ``S[g]``,
    ``M[g]``, ``A[g]``, ``W[g]``, ``B[g]``, ``W2[g]``, ``B2[g]``, ``ETA[g]`` (padded to the widest block:
    ``A`` with 1, the rest never read); blocks with ``use[g]`` false are skipped. Writes ``end[g, :n[g]]``
    and ``status[g]`` (0, or :data:`~interfpred.serving.projection.generic.NONFINITE`)."""
    no = np.empty(0)
    for g in range(n.shape[0]):
        if use[g]:
            k = n[g]
            status[g] = pairwise_project(dem[g, :k], rem[g, :k], t0, map_id, combine_id, kind, W[g], B[g], U[g, :k],
                                         S[g], M[g], A[g], W2[g], B2[g], ETA[g], log_target, alone_solo, pred_rates,
                                         is_rate, rmin, rmax, rtol, end[g, :k], no, 0.0, no)


class PairwiseInputs(NamedTuple):
    """A tracker's running set as a vectorised pair-term projection reads it (see
    ``ColocationTracker.pairwise_inputs``).

    Remaining work at a time ``t >= t0`` is ``max(rem - rates * (t - t0), TRACKER_MIN_REMAINING * solo)``.
    ``terms(names)`` gives the pair-term model's arguments for a running set of entities ``names``
    (``(map_id, combine_id, kind, w, b, u, S, M, A, w2, b2, eta_max, log_target, alone_solo,
    pred_rates, is_rate, min_rate, max_rate)``, as :func:`pairwise_project` takes them after ``t0``), or
    None where the predictor cannot give them now; ``entity_name(model, batch_size)`` names a candidate's
    entity.
    """

    ids: tuple
    dem: np.ndarray
    solo: np.ndarray
    rem: np.ndarray
    rates: np.ndarray
    t0: float
    now: float | None
    names: list[str]
    terms: Callable[[list[str]], tuple | None]
    entity_name: Callable[[Any, Any], str]
