"""Compiled kernels of the fluid what-if projection: rate clamp, one projection step, affine rates and projection.

Package-internal. Every projection in interfpred (the tracker's compiled and Python paths, the
affine projection of :mod:`interfpred.serving.projection`, the E3 oracle's ground-truth projection) turns
predictions into rates with :func:`to_rate` (or :func:`clamp_rates` on an array) and advances the
running set one segment at a time with :func:`advance`. No kernel validates its input.
"""

from __future__ import annotations

import numpy as np

from interfpred._core.jit import njit
from interfpred.features._timeline_kernels import COMBINE_MAX, MAP_GPULETS, MAP_RICH, map_running_set, quantize

__all__ = ["NONFINITE", "advance", "affine_rates", "all_finite", "clamp_rates", "project_affine_kernel",
           "project_stacked_kernel", "to_rate"]

#: Status of a projection kernel when a rate or a remaining work is not finite.
NONFINITE = 1

_INV_SCALE = 2.0 ** -50


@njit(cache=True)
def all_finite(a):
    """Whether every value of the 1-d array ``a`` is finite (cheaper than numpy on a handful of values)."""
    for v in a:
        if not np.isfinite(v):
            return False
    return True


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


@njit(cache=True)
def advance(idx, na, work, rate, taus, t, rtol, end, retired):
    """One segment of a fluid projection.

    Members ``idx[:na]`` (indices into ``work`` and ``end``) run at ``rate[:na]`` (aligned with
    ``idx``) until the earliest finishes; those within relative ``rtol`` of it finish together
    (their end time is written to ``end`` and their indices to ``retired``); the others lose
    ``rate * elapsed`` of their remaining ``work``; ``idx`` is compacted in place, order kept.
    ``taus`` is scratch of at least ``na`` values.

    Returns ``(kept, t_new, n_retired)``; ``kept`` is -1 when a rate or a time to finish is not
    finite or not positive (a NaN fails every comparison), so every step retires someone.
    """
    tmin = np.inf
    for a in range(na):
        v = rate[a]
        tau = work[idx[a]] / v
        if not (v > 0.0 and tau >= 0.0 and tau < np.inf):
            return -1, t, 0
        taus[a] = tau
        tmin = min(tmin, tau)
    t_new = t + tmin
    lim = tmin * (1.0 + rtol)
    keep = 0
    nret = 0
    for a in range(na):
        i = idx[a]
        if taus[a] <= lim:
            end[i] = t_new
            retired[nret] = i
            nret += 1
        else:
            work[i] -= rate[a] * tmin
            idx[keep] = i
            keep += 1
    if keep == na:  # nothing retired: impossible with finite rates, but never loop for ever
        return -1, t, 0
    return keep, t_new, nret


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
def project_affine_kernel(dem, rem, t0, map_id, combine_id, w, b, pred_lo, is_rate, rmin, rmax, rtol, end):
    """Projected completion of every member of ``dem`` (n, 3) with remaining work ``rem`` into ``end``.

    The running set's sums are updated as members finish (see :mod:`interfpred.serving.projection`).
    Returns 0, or :data:`NONFINITE` when a rate or a remaining work is not finite.
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
    ibuf = np.empty(2 * n, dtype=np.int64)   # members still running, then those retired by a step
    idx = ibuf[:n]
    retired = ibuf[n:]
    for i in range(n):
        idx[i] = i
    fbuf = np.empty(3 * n + 6)                 # remaining work, rates, times to finish, top two per resource
    work = fbuf[:n]
    work[:] = rem
    rate = fbuf[n:2 * n]
    taus = fbuf[2 * n:3 * n]
    top1 = fbuf[3 * n:3 * n + 3]
    top2 = fbuf[3 * n + 3:]
    na = n
    t = t0
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
            rate[a] = to_rate(max(p, pred_lo), is_rate, rmin, rmax)
        keep, t, nret = advance(idx, na, work, rate, taus, t, rtol, end, retired)
        if keep < 0:
            return NONFINITE
        for j in range(nret):
            i = retired[j]
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
        na = keep
    return 0


@njit(cache=True)
def project_stacked_kernel(dem, rem, n, t, W, B, LO, use, map_id, combine_id, is_rate, rmin, rmax, rtol, end):
    """One projection per row block ``g`` where ``use[g]``: members ``dem[g, :n[g]]`` under ``W[g]``."""
    for g in range(dem.shape[0]):
        m = n[g]
        if use[g] and m > 0:
            status = project_affine_kernel(dem[g, :m], rem[g, :m], t, map_id, combine_id, W[g], B[g], LO[g],
                                           is_rate, rmin, rmax, rtol, end[g, :m])
            if status != 0:
                return status
    return 0
