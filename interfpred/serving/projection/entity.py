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
from interfpred._core.vmath import exp_into, exp_one
from interfpred.features.compiled_maps import (
    COMBINE_MAX,
    DRAM,
    INV_SCALE,
    L2,
    N_RESOURCES,
    SM,
    TERM_EXCESS,
    TERM_TOTAL,
    affine_other_weight,
    affine_own,
    affine_set,
    affine_terms,
    quantize,
)
from interfpred.serving.projection.affine import demand_lists, member_terms, retire, top_two
from interfpred.serving.projection.bounds import BOUND_RELATIVE, bounded
from interfpred.serving.projection.generic import NONFINITE

__all__ = ["PAIRWISE_BLOCKING", "PAIRWISE_ENTITY", "PairwiseInputs", "pairwise_project", "pairwise_project_stacked",
           "pairwise_rates"]

#: Kinds of pair terms (module docstring).
PAIRWISE_ENTITY = 0
PAIRWISE_BLOCKING = 1
#: A pair sum left smaller than this fraction of what a finish took out of it is summed again exactly
#: (the subtraction would have cancelled most of its digits).
_CANCEL = 1e-4
#: :func:`fast_segments`' status when it wrote the first rates and projected nothing.
_RATES_WRITTEN = -1
#: The bits of +inf as an int64: a float at or above it, as its bits, is inf or a NaN.
_INF_BITS = np.array([np.inf]).view(np.int64)[0]


# Rows of the dense per-member scratch ``F`` (:func:`pairwise_project`): member ``a`` (the a-th still
# running) is column ``a`` of every row, so each step of a segment is one loop over contiguous memory.
# The first _NF_FAST rows are all that a member carries from one segment to the next on the fast path
# (:func:`entity_segment`): a finished member's column is overwritten in those alone.
_C, _H0, _H1, _H2, _Q0, _Q1, _Q2, _MS, _SS, _W, _R, _D0, _D1, _D2, _C2, _K0, _K1, _K2, _AA, _TH, _TAU, _P, _X, _X2, \
    _RMAX, _RMIN = range(26)
_NF_FAST = 11
_NF = 26
# Rows of the dense int scratch ``Fi``: the member's index in the inputs and its entity. (Its fixed-point demands
# are rows of ``F``: exact as floats, and the compiler converts no integers in the hot loops.)
_IX, _U = range(2)
_NI = 2


@njit(cache=True, inline="always")
def dense_affine(F, Fi, c, h0, h1, h2, out, na, g, tot, top1, top2, many, use_max):
    """``F[out, a] = F[c, a] + g + the others' demand weighed by F[h0..h2, a]`` for the ``na`` members
    (the others' demand 0 alone; the sum combine's from the fixed-point totals, the max combine's
    from the set's top two)."""
    if not many:
        for a in range(na):
            F[out, a] = F[c, a] + g
    elif use_max:
        t10, t11, t12 = top1[SM], top1[L2], top1[DRAM]
        t20, t21, t22 = top2[SM], top2[L2], top2[DRAM]
        for a in range(na):
            o0 = t20 if F[_D0, a] == t10 else t10
            o1 = t21 if F[_D1, a] == t11 else t11
            o2 = t22 if F[_D2, a] == t12 else t12
            F[out, a] = F[c, a] + g + F[h0, a] * o0 + F[h1, a] * o1 + F[h2, a] * o2
    else:
        s0, s1, s2 = float(tot[SM]), float(tot[L2]), float(tot[DRAM])
        for a in range(na):
            o0 = (s0 - F[_Q0, a]) * INV_SCALE
            o1 = (s1 - F[_Q1, a]) * INV_SCALE
            o2 = (s2 - F[_Q2, a]) * INV_SCALE
            F[out, a] = F[c, a] + g + F[h0, a] * o0 + F[h1, a] * o1 + F[h2, a] * o2


@njit(cache=True, inline="always")
def entity_exponents(F, Fi, M, na, g, tot, drop, ur):
    """The entity kind's exponent of every member beside others under the sum combine, into ``F[_P]``:
    its affine part, its pair sum and its sensitivity; first, when ``drop``, the entity ``ur`` of the one
    member the last step finished is taken out of every pair sum. Returns how many sums that left
    smaller than ``_CANCEL`` times what it took out (:func:`drop_pairs` sums them again)."""
    s0, s1, s2 = float(tot[SM]), float(tot[L2]), float(tot[DRAM])
    nfix = 0
    if drop:
        for a in range(na):
            m = M[Fi[_U, a], ur]
            ms = F[_MS, a] - m
            F[_MS, a] = ms
            nfix += abs(ms) < _CANCEL * abs(m)
            o0 = (s0 - F[_Q0, a]) * INV_SCALE
            o1 = (s1 - F[_Q1, a]) * INV_SCALE
            o2 = (s2 - F[_Q2, a]) * INV_SCALE
            F[_X, a] = F[_C, a] + g + F[_H0, a] * o0 + F[_H1, a] * o1 + F[_H2, a] * o2
            F[_P, a] = F[_X, a] + ms + F[_SS, a]
    else:
        for a in range(na):
            o0 = (s0 - F[_Q0, a]) * INV_SCALE
            o1 = (s1 - F[_Q1, a]) * INV_SCALE
            o2 = (s2 - F[_Q2, a]) * INV_SCALE
            F[_X, a] = F[_C, a] + g + F[_H0, a] * o0 + F[_H1, a] * o1 + F[_H2, a] * o2
            F[_P, a] = F[_X, a] + F[_MS, a] + F[_SS, a]
    return nfix


@njit(cache=True, error_model="numpy")
def fast_segments(F, Fbits, Fi, M, tot, dq, ret, end, first_rates, na, t, terms, w_others, is_rate, rmin, rmax, rtol):
    """The segments of :func:`pairwise_project` while more than one member runs, for the entity kind
    under a log target and the sum combine, with no backoff blend and no bound (the default model's
    what-if). Returns ``(status, na, t, elapsed, nret)`` for the general loop to go on from (status
    ``_RATES_WRITTEN``: the first rates are written, nothing projected; :data:`NONFINITE`: a rate or a
    time to finish is not finite).

    Every step is written out here, not called: a call that passes arrays, inlined or not, costs the
    compiled code reference counting on each of them at every segment, more than the arithmetic of
    some steps. Each step is a loop of its own with no branch and no reduction but an integer min or
    max, so the compiler vectorises it (one loop doing it all stays scalar):

    1. the entity of the one member the last segment finished is taken out of every pair sum (a
       gather into ``F[_X]``, the subtraction, and each sum's margin ``_CANCEL |m| - |sum|`` into
       ``F[_P]``, whose largest bits are positive exactly when a sum cancelled: :func:`drop_pairs`
       sums those again; a NaN says so too, and summing again keeps it);
    2. each member's exponent, its affine part, pair sum and sensitivity;
    3. its exponential;
    4. its rate (clamped, the inverse for a slowdown), its remaining work brought up to the segment's
       start and its time to finish, whose least bits and largest bits say the segment's end and
       whether every time is finite and positive (NaN, inf and a negative time fall outside
       ``[0, inf)``, which orders as its bits do).
    """
    n = F.shape[1]
    gone = ret[n:2 * n]
    gone_u = ret[2 * n:]
    bits = np.empty(1, dtype=np.int64)
    bits_f = bits.view(np.float64)
    elapsed = 0.0
    nret = 0
    while na > 1:
        g = 0.0
        for r in range(N_RESOURCES):
            total = tot[r] * INV_SCALE
            g += terms[TERM_TOTAL, r] * total + terms[TERM_EXCESS, r] * max(0.0, total - 1.0)
        g += w_others * (na - 1.0)
        if nret == 1:
            ur = gone_u[0]
            for a in range(na):
                F[_X, a] = M[Fi[_U, a], ur]
            for a in range(na):
                m = F[_X, a]
                ms = F[_MS, a] - m
                F[_MS, a] = ms
                F[_P, a] = _CANCEL * abs(m) - abs(ms)
            high = Fbits[_P, 0]
            for a in range(na):
                high = max(high, Fbits[_P, a])
            if high > 0:
                drop_pairs(M, F, Fi, na, gone_u, 1, True)
        elif nret > 1:
            drop_pairs(M, F, Fi, na, gone_u, nret, False)
        s0, s1, s2 = float(tot[SM]), float(tot[L2]), float(tot[DRAM])
        for a in range(na):
            o0 = (s0 - F[_Q0, a]) * INV_SCALE
            o1 = (s1 - F[_Q1, a]) * INV_SCALE
            o2 = (s2 - F[_Q2, a]) * INV_SCALE
            x = F[_C, a] + g + F[_H0, a] * o0 + F[_H1, a] * o1 + F[_H2, a] * o2
            F[_X, a] = x
            F[_P, a] = x + F[_MS, a] + F[_SS, a]
        for a in range(na):
            F[_P, a] = exp_one(F[_P, a])
        for a in range(na):
            p = F[_P, a]
            r = p if is_rate else 1.0 / p
            v = rmin if r < rmin else r         # NaN fails both tests and stays NaN
            v = rmax if v > rmax else v
            wk = F[_W, a] - F[_R, a] * elapsed
            F[_W, a] = wk
            F[_R, a] = v
            F[_TAU, a] = wk / v
        low = Fbits[_TAU, 0]
        high = low
        for a in range(na):
            b = Fbits[_TAU, a]
            low = min(low, b)
            high = max(high, b)
        if first_rates.shape[0] == n:
            for a in range(na):
                first_rates[Fi[_IX, a]] = F[_R, a]
            return _RATES_WRITTEN, na, t, elapsed, nret
        if low < 0 or high >= _INF_BITS:
            for a in range(na):
                v = F[_R, a]
                tau = F[_TAU, a]
                if not ((v > 0.0) & (tau >= 0.0) & (tau < np.inf)):
                    return NONFINITE, na, t, elapsed, nret
        # the segment: every member runs at its rate until the earliest finishes; those within relative
        # rtol of it finish together
        bits[0] = low
        tmin = bits_f[0]
        t_new = t + tmin
        bits_f[0] = tmin * (1.0 + rtol)
        lim = bits[0]
        nret = 0
        for a in range(na):                 # how many finish (a loop that vectorises) ...
            nret += Fbits[_TAU, a] <= lim
        if nret == 1:                       # ... the common case: the one whose time is the least
            a = 0
            while Fbits[_TAU, a] != low:
                a += 1
            ret[0] = a
        else:
            nret = 0
            for a in range(na):
                if Fbits[_TAU, a] <= lim:
                    ret[nret] = a
                    nret += 1
        for j in range(nret):
            i = Fi[_IX, ret[j]]
            end[i] = t_new
            gone[j] = i
            gone_u[j] = Fi[_U, ret[j]]
            for r in range(N_RESOURCES):
                tot[r] -= dq[i, r]
        for j in range(nret - 1, -1, -1):   # the last member takes each finished one's column, highest first
            p = ret[j]
            last = na - 1
            if p != last:
                for r in range(_NF_FAST):
                    F[r, p] = F[r, last]
                Fi[_IX, p] = Fi[_IX, last]
                Fi[_U, p] = Fi[_U, last]
            na = last
        elapsed = tmin
        t = t_new
    return 0, na, t, elapsed, nret


@njit(cache=True)
def blocking_excess(lin, a, F, Fi, M, na, eta_max):
    """The blocking kind's excess slowdown ``sum_c exp(min(lin + log M[a, c], eta_max))`` of member ``a``
    over its co-runners (the dense members ``:na``), where some term may reach the cap: the cap times
    the co-runners where every term does (``F[_RMIN, a]``, the smallest ``log M[a, c]``), else summed
    term by term."""
    if lin + F[_RMIN, a] >= eta_max:
        return (na - 1) * math.exp(eta_max)
    v = 0.0
    ua = Fi[_U, a]
    for c in range(na):
        if c != a:
            v += math.exp(min(lin + math.log(M[ua, Fi[_U, c]]), eta_max))
    return v


@njit(cache=True, error_model="numpy")
def running_pair_sums(M, u, out):
    """Each of ``len(u)`` members' sum of ``M[u[a], u[c]]`` over the others ``c``, into ``out``: what
    :func:`pairwise_project` takes as ``ms0`` for a running set (the same for every question until it
    changes)."""
    n = u.shape[0]
    for a in range(n):
        ua = u[a]
        v0 = 0.0
        v1 = 0.0
        for c in range(0, n - 1, 2):     # two partial sums: the loop is bound by its loads, not the adds
            v0 += M[ua, u[c]] if c != a else 0.0
            v1 += M[ua, u[c + 1]] if c + 1 != a else 0.0
        if n % 2 == 1 and n - 1 != a:
            v0 += M[ua, u[n - 1]]
        out[a] = v0 + v1


@njit(cache=True, error_model="numpy")
def keep_running_sums(M, u, k, Mc, uc, ms0):
    """The first ``k`` members' pair sums among themselves (:func:`running_pair_sums` of ``M`` and
    ``u[:k]``) in ``ms0``, kept from the last question where nothing they depend on changed.

    ``Mc`` and ``uc`` hold the block of ``M`` over those members' entities and their ``u`` when
    ``ms0`` was summed (``u`` numbers entities in order of first appearance, so theirs are the first
    ``e``). Returns ``(status, e)``: 1 when ``ms0`` held the sums already, 0 when they were summed
    again into it (and ``Mc``, ``uc`` refreshed), -1 when the buffers do not fit (``Mc`` must be
    ``(e, e)`` and ``uc`` and ``ms0`` ``(k,)``) and nothing was written. A NaN in the block never
    compares equal: such sums are summed at every question."""
    e = 0
    for a in range(k):
        e = max(e, u[a] + 1)
    if Mc.shape[0] != e or Mc.shape[1] != e or uc.shape[0] != k or ms0.shape[0] != k:
        return -1, e
    same = True
    for a in range(k):
        if u[a] != uc[a]:
            same = False
            break
    if same:
        for i in range(e):
            for j in range(e):
                if M[i, j] != Mc[i, j]:
                    same = False
            if not same:
                break
    if same:
        return 1, e
    for i in range(e):
        for j in range(e):
            Mc[i, j] = M[i, j]
    for a in range(k):
        uc[a] = u[a]
    running_pair_sums(Mc, uc, ms0)
    return 0, e


@njit(cache=True, error_model="numpy")
def pair_sums(M, F, Fi, na, blocking, n_run, ms0):
    """Each member's sum of ``M`` over its co-runners into ``F[_MS]`` (``M[a, a]`` never read) and, for the
    blocking kind, the logs of the largest and the smallest into ``F[_RMAX]``, ``F[_RMIN]`` (-inf for 0).

    The entity kind sums the first ``n_run`` members' terms among themselves first (as
    :func:`running_pair_sums` does: ``ms0`` when it holds them, ``(n_run,)``) and then adds what the
    others add to them, so every path that names the same running set gets the same sums to the bit."""
    n0 = min(n_run, na) if not blocking else 0
    if n0 > 0:
        if ms0.shape[0] == n0:
            for a in range(n0):
                F[_MS, a] = ms0[a]
        else:
            running_pair_sums(M, Fi[_U, :n0], F[_MS, :n0])
    for a in range(na):
        ua = Fi[_U, a]
        v0 = 0.0
        v1 = 0.0
        lo = n0 if a < n0 else 0
        for c in range(lo, na - 1, 2):
            v0 += M[ua, Fi[_U, c]] if c != a else 0.0
            v1 += M[ua, Fi[_U, c + 1]] if c + 1 != a else 0.0
        if (na - lo) % 2 == 1 and na - 1 != a:
            v0 += M[ua, Fi[_U, na - 1]]
        F[_MS, a] = (F[_MS, a] + (v0 + v1)) if a < n0 else v0 + v1
        if blocking:
            top = 0.0
            low = np.inf
            for c in range(na):
                if c != a:
                    m = M[ua, Fi[_U, c]]
                    top = max(top, m)
                    low = min(low, m)
            F[_RMAX, a] = math.log(top) if top > 0.0 else -np.inf
            F[_RMIN, a] = math.log(low) if low > 0.0 else -np.inf


@njit(cache=True, error_model="numpy")
def drop_pairs(M, F, Fi, keep, gone, nret, taken):
    """Take the ``nret`` finished members' entities ``gone[:nret]`` out of the pair sums of the ``keep``
    still running (already done when ``taken``); a sum left smaller than ``_CANCEL`` times what was taken
    out is summed again."""
    for a in range(keep):
        ua = Fi[_U, a]
        v = F[_MS, a]
        big = 0.0
        for j in range(nret):
            m = M[ua, gone[j]]
            if not taken:
                v -= m
            big = max(big, abs(m))
        if abs(v) < _CANCEL * big:
            v = 0.0
            for c in range(keep):
                if c != a:
                    v += M[ua, Fi[_U, c]]
        F[_MS, a] = v


@njit(cache=True, error_model="numpy")
def pairwise_project(dem, rem, t0, map_id, combine_id, kind, w, b, u, S, M, A, w2, b2, eta_max, log_target,
                     alone_solo, pred_rates, is_rate, rmin, rmax, rtol, end, theta, min_scale, first_rates, n_run, ms0):
    """Fluid projection of ``dem`` (n, 3) with remaining work ``rem`` under pair terms of ``kind``, into ``end``.

    Member ``i`` is entity ``u[i]`` of the terms ``S``, ``M`` and ``A`` (per entity, not per member).

    Returns 0, or :data:`~interfpred.serving.projection.generic.NONFINITE` when a rate or a remaining
    work is not finite. With ``theta`` non-empty ((n,), or one value for every member), each
    prediction ``p`` becomes the relative-scale calibrated bound ``p + max(|p|, min_scale) * theta[i]``.
    ``pred_rates``: the predictor predicts rates (the blocking kind turns its slowdown into one);
    ``eta_max``: the cap of each of the blocking kind's exponents ``lin + log M[a, c]``. With
    ``first_rates`` of n values, the rates of the first segment (all members together) are written
    there and nothing is projected (:func:`pairwise_rates`). The first ``n_run`` members are a running
    set (the rest are candidates): the entity kind sums their pair terms among themselves first, or
    takes those sums from ``ms0`` (``(n_run,)``, :func:`running_pair_sums`; empty: summed here), which
    saves summing them again at every question about the same running set (:func:`pair_sums`).

    The members still running are kept dense (a finished member's column takes the last one's), so
    every step of a segment is a loop over contiguous rows that the compiler vectorises, the
    exponential included (:func:`~interfpred._core.vmath.exp_into`). A member's remaining work is
    brought up to the segment's start in the loop that computes its rate.
    """
    n = dem.shape[0]
    if n == 0:
        return 0
    dq = quantize(dem)
    terms, w_others = affine_terms(w, map_id)
    blend = kind == PAIRWISE_ENTITY and A.shape[0] > 0 and A.min() < 1.0
    terms2, w_others2 = affine_terms(w2, map_id) if blend else (terms, 0.0)     # the backoff's, read when it blends
    c, h, tot = member_terms(dem, dq, terms, b)
    use_max = combine_id == COMBINE_MAX
    nxt, prv, head = demand_lists(dem, use_max)
    top1 = np.zeros(N_RESOURCES)
    top2 = np.zeros(N_RESOURCES)
    blocking = kind == PAIRWISE_BLOCKING
    fused = not (blocking or use_max)       # the entity kind's exponents in one pass, pair sums included
    bound = theta.shape[0] > 0
    fast = fused and log_target and not blend and not bound      # one vectorised loop a segment
    nkeep = _NF_FAST if fast else _NF      # the rows a member carries from one segment to the next
    per_row = theta.shape[0] > 1
    F = np.empty((_NF, n))
    Fbits = F.view(np.int64)                # a time to finish >= 0 orders as its bits do: an integer min
    bits = np.empty(1, dtype=np.int64)
    bits_f = bits.view(np.float64)
    Fi = np.empty((_NI, n), dtype=np.int64)
    ret = np.empty(3 * n, dtype=np.int64)
    gone = ret[n:2 * n]                     # finished members as indices into the inputs
    gone_u = ret[2 * n:]                    # ... their entities
    for i in range(n):
        Fi[_IX, i] = i
        Fi[_U, i] = u[i]
        F[_Q0, i] = dq[i, SM]           # exact: a fixed-point demand, and a set's sum of them, are < 2**53
        F[_Q1, i] = dq[i, L2]
        F[_Q2, i] = dq[i, DRAM]
        F[_C, i] = c[i]
        F[_H0, i] = h[i, SM]
        F[_H1, i] = h[i, L2]
        F[_H2, i] = h[i, DRAM]
        F[_D0, i] = dem[i, SM]
        F[_D1, i] = dem[i, L2]
        F[_D2, i] = dem[i, DRAM]
        F[_W, i] = rem[i]
        F[_R, i] = 0.0
        F[_TH, i] = theta[i if per_row else 0] if bound else 0.0
        if blocking:
            F[_SS, i] = 0.0
            F[_AA, i] = 1.0
        else:
            F[_SS, i] = S[u[i]]
            F[_AA, i] = A[u[i]] if blend else 1.0
        if blend:
            F[_C2, i] = affine_own(terms2, b2, dem[i, SM], dem[i, L2], dem[i, DRAM])
            F[_K0, i] = affine_other_weight(terms2, SM, dem[i, SM])
            F[_K1, i] = affine_other_weight(terms2, L2, dem[i, L2])
            F[_K2, i] = affine_other_weight(terms2, DRAM, dem[i, DRAM])
    pair_sums(M, F, Fi, n, blocking, n_run, ms0)
    P = F[_P]
    na = n
    t = t0
    elapsed = 0.0          # the last segment's length: remaining work is brought up to date with the rates
    nret = 0
    if fast and na > 1:
        status, na, t, elapsed, nret = fast_segments(F, Fbits, Fi, M, tot, dq, ret, end, first_rates, na, t, terms,
                                                     w_others, is_rate, rmin, rmax, rtol)
        if status != 0:
            return 0 if status == _RATES_WRITTEN else status
    while na > 0:
        many = na > 1
        g = affine_set(terms, w_others, tot, na)
        if fused and many:
            nfix = entity_exponents(F, Fi, M, na, g, tot, nret == 1, gone_u[0])
            if nfix > 0 or nret > 1:
                drop_pairs(M, F, Fi, na, gone_u, nret, nret == 1)
                for a in range(na):
                    P[a] = F[_X, a] + F[_MS, a] + F[_SS, a]
        else:
            if nret > 0:
                drop_pairs(M, F, Fi, na, gone_u, nret, False)
            if use_max:
                top_two(dem, head, nxt, top1, top2)
            dense_affine(F, Fi, _C, _H0, _H1, _H2, _X, na, g, tot, top1, top2, many, use_max)
            if not blocking:
                if many:
                    for a in range(na):
                        P[a] = F[_X, a] + F[_MS, a] + F[_SS, a]
                else:
                    P[0] = F[_X, 0]
        if blocking:
            if many:
                X = F[_X]
                exp_into(X, P, na)
                for a in range(na):
                    m = F[_MS, a]
                    P[a] = 1.0 + (P[a] * m if m > 0.0 else 0.0)
                for a in range(na):
                    lin = X[a]
                    if lin + F[_RMAX, a] > eta_max:     # some term reaches the cap
                        P[a] = 1.0 + blocking_excess(lin, a, F, Fi, M, na, eta_max)
            else:
                P[0] = 1.0
            if pred_rates:
                for a in range(na):
                    P[a] = 1.0 / P[a]
        elif not many and alone_solo:
            P[0] = 1.0
        else:
            if log_target:
                exp_into(P, P, na)
            if blend:
                if use_max:
                    top_two(dem, head, nxt, top1, top2)
                g2 = affine_set(terms2, w_others2, tot, na)
                dense_affine(F, Fi, _C2, _K0, _K1, _K2, _X2, na, g2, tot, top1, top2, many, use_max)
                for a in range(na):
                    wa = F[_AA, a]
                    if wa < 1.0:
                        P[a] = wa * P[a] + (1.0 - wa) * F[_X2, a]
        if bound:
            for a in range(na):
                P[a] = bounded(P[a], BOUND_RELATIVE, F[_TH, a], 0.0, min_scale)
        # every member's remaining work at the segment's start, its rate and its time to finish
        bad = 0
        for a in range(na):
            wk = F[_W, a] - F[_R, a] * elapsed
            F[_W, a] = wk
            v = to_rate(P[a], is_rate, rmin, rmax)
            tau = wk / v
            F[_R, a] = v
            F[_TAU, a] = tau
            bad += not ((v > 0.0) & (tau >= 0.0) & (tau < np.inf))    # a NaN fails every comparison
        if first_rates.shape[0] == n:
            for a in range(na):
                first_rates[Fi[_IX, a]] = F[_R, a]
            return 0
        if bad:
            return NONFINITE
        # one segment: every member runs at its rate until the earliest finishes; those within relative
        # rtol of it finish together
        low = Fbits[_TAU, 0]
        for a in range(na):
            low = min(low, Fbits[_TAU, a])
        bits[0] = low
        tmin = bits_f[0]
        t_new = t + tmin
        lim = tmin * (1.0 + rtol)
        bits_f[0] = lim
        lim_bits = bits[0]
        nret = 0
        for a in range(na):                 # how many finish with the first (a loop that vectorises) ...
            nret += Fbits[_TAU, a] <= lim_bits
        if nret == 1:                       # ... the common case: the one whose time is the least
            a = 0
            while Fbits[_TAU, a] != low:
                a += 1
            ret[0] = a
        else:
            nret = 0
            for a in range(na):
                if Fbits[_TAU, a] <= lim_bits:
                    ret[nret] = a
                    nret += 1
        if nret == 0:
            return NONFINITE
        for j in range(nret):
            i = Fi[_IX, ret[j]]
            end[i] = t_new
            gone[j] = i
            gone_u[j] = Fi[_U, ret[j]]
        retire(gone, nret, dq, tot, use_max, prv, nxt, head)
        for j in range(nret - 1, -1, -1):   # the last member takes each finished one's column, highest first
            p = ret[j]
            last = na - 1
            if p != last:
                for r in range(nkeep):
                    F[r, p] = F[r, last]
                for r in range(_NI):
                    Fi[r, p] = Fi[r, last]
            na = last
        elapsed = tmin
        t = t_new
    return 0


@njit(cache=True, error_model="numpy")
def pairwise_rates(dem, map_id, combine_id, kind, w, b, u, S, M, A, w2, b2, eta_max, log_target, alone_solo,
                   pred_rates, is_rate, rmin, rmax, out, theta, min_scale):
    """Clamped rates of every member of the running set ``dem`` (k, 3) into ``out[:k]``: the first
    segment of :func:`pairwise_project` (same arguments)."""
    k = dem.shape[0]
    pairwise_project(dem, np.ones(k), 0.0, map_id, combine_id, kind, w, b, u, S, M, A, w2, b2, eta_max, log_target,
                     alone_solo, pred_rates, is_rate, rmin, rmax, 0.0, np.empty(k), theta, min_scale, out[:k], k,
                     np.empty(0))


@njit(cache=True, error_model="numpy")
def pairwise_project_stacked(dem, rem, n, n_run, t0, use, map_id, combine_id, kind, W, B, U, S, M, A, W2, B2, ETA,
                             log_target, alone_solo, pred_rates, is_rate, rmin, rmax, rtol, end, status):
    """Many :func:`pairwise_project` calls in one (a fleet's GPUs): block ``g`` is ``dem[g, :n[g]]``
    (G, C, 3) with ``rem[g, :n[g]]``, of which the first ``n_run[g]`` are its running set, its
    members' entities ``U[g, :n[g]]`` in its own terms ``S[g]``,
    ``M[g]``, ``A[g]``, ``W[g]``, ``B[g]``, ``W2[g]``, ``B2[g]``, ``ETA[g]`` (padded to the widest block:
    ``A`` with 1, the rest never read); blocks with ``use[g]`` false are skipped. Writes ``end[g, :n[g]]``
    and ``status[g]`` (0, or :data:`~interfpred.serving.projection.generic.NONFINITE`)."""
    no = np.empty(0)
    for g in range(n.shape[0]):
        if use[g]:
            k = n[g]
            status[g] = pairwise_project(dem[g, :k], rem[g, :k], t0, map_id, combine_id, kind, W[g], B[g], U[g, :k],
                                         S[g], M[g], A[g], W2[g], B2[g], ETA[g], log_target, alone_solo, pred_rates,
                                         is_rate, rmin, rmax, rtol, end[g, :k], no, 0.0, no, n_run[g], no)


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
