"""Compiled row drivers of :class:`~interfpred.predictors.entity_rls.estimator.EntityRLS`: validate and learn
or predict rows, one at a time or in batches, over the state of :mod:`interfpred.predictors.entity_rls._entity_steps`.

Row input (CSR as in :class:`~interfpred.data.entities.Entities`): ``own`` (n,) vocabulary indices,
``indptr`` (n + 1,), ``co`` and ``w`` (nnz,); ``has_ent`` 0 when the caller gave no entities.
Batch drivers return ``OK`` or ``status * ROW_FACTOR + row`` (:mod:`interfpred.predictors._status`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types as nbt

from interfpred._core.jit import CompiledEntries, njit
from interfpred.predictors._linear_buffers import rls_predict_one, rls_update_one
from interfpred.predictors._status import BAD_X, MISSING, OK, ROW_FACTOR
from interfpred.predictors.entity_rls._entity_steps import (
    ENT_ALONE_IS_SOLO,
    ENT_LOG_TARGET,
    ENT_N_FULL,
    ENT_RANK,
    EST_INFO,
    EST_MEAN,
    EST_PRIOR_INFO,
    EST_PRIOR_MEAN,
    N_FEATURES,
    N_SEEN,
    blocks_step,
    blocks_value,
    check_entity_row,
    full_step,
    full_value,
    row_terms,
)
from interfpred.predictors.entity_rls._tables import count_missing, row_missing

__all__ = ["check_rows", "update_rows", "predict_rows", "update_one", "predict_one", "prequential_rows", "prequential_runs",
           "FAST"]


@njit(cache=True)
def _scratch(indptr, n, r):
    """Scratch of the entity terms for rows of at most the longest co-runner list among ``n``:
    (idx, h, vb, vw); sized ``2 + 4 K + r (1 + K)`` for ``K`` co-runners."""
    kmax = 0
    for i in range(n):
        k = indptr[i + 1] - indptr[i]
        kmax = max(kmax, k)
    size = 2 + 4 * kmax + r * (1 + kmax)
    return np.empty(size, dtype=np.int64), np.empty(size), np.empty(kmax + 1, dtype=np.int64), np.empty(kmax + 1)


@njit(cache=True)
def check_rows(g, X, y):
    """``OK``, or ``status * ROW_FACTOR + row`` of the first row refused by ``check_entity_row``."""
    for i in range(X.shape[0]):
        st = check_entity_row(g, X[i], y[i])
        if st != OK:
            return st * ROW_FACTOR + i
    return OK


@njit(cache=True)
def update_rows(g, est, P, etab, ptab, vmap, X, y, own, indptr, co, w, has_ent):
    """Validate every row, then learn them in order.

    Returns ``OK`` or ``status * ROW_FACTOR + row`` of the first refused row; rows before it are learned
    (the caller restores its snapshot).
    """
    n = X.shape[0]
    st = check_rows(g, X, y)
    if st != OK:
        return st
    mu, info, r0, t0 = est[EST_MEAN], est[EST_INFO], est[EST_PRIOR_INFO], est[EST_PRIOR_MEAN]
    r = int(g[ENT_RANK])
    full = g[ENT_N_FULL] > 0.0
    idx, h, vb, vw = _scratch(indptr, n if has_ent else 0, r)
    size = idx.shape[0]
    tmu = np.empty(size)
    tvar = np.empty(size)
    th = np.empty(size)
    tix = np.empty(size, dtype=np.int64)
    z = np.empty(2 * mu.shape[0] if full else 1)     # the gain direction, then the column full_step observes
    for i in range(n):
        L, ub, K, alone = 0, -1, 0, 0
        if has_ent:
            L, ub, K, alone = row_terms(g, etab, ptab, vmap, own[i], indptr[i], indptr[i + 1], co, w, idx, h, vb, vw)
        if alone and g[ENT_ALONE_IS_SOLO] != 0.0:
            g[N_SEEN] += 1.0  # seen; nothing to learn: a lone batch runs at its solo speed
            continue
        yi = math.log(y[i]) if g[ENT_LOG_TARGET] != 0.0 else y[i]
        if full:
            st = full_step(g, mu, P, r0, t0, X[i], yi, idx, h, L, z)
        else:
            st = blocks_step(g, mu, info, r0, X[i], yi, idx, h, L, ub, vb, vw, K, tmu, tvar, th, tix)
        if st != OK:
            return st * ROW_FACTOR + i
    return OK


@njit(cache=True)
def predict_rows(g, est, etab, ptab, vmap, X, own, indptr, co, w, has_ent, out):
    """Predictions of rows of the right width into ``out``; ``BAD_X`` if one holds NaN/inf (else OK)."""
    n = X.shape[0]
    for i in range(n):
        for k in range(X.shape[1]):
            if not math.isfinite(X[i, k]):
                return BAD_X
    mu = est[EST_MEAN]
    r = int(g[ENT_RANK])
    full = g[ENT_N_FULL] > 0.0
    idx, h, vb, vw = _scratch(indptr, n if has_ent else 0, r)
    for i in range(n):
        L, ub, K, alone = 0, -1, 0, 0
        if has_ent:
            L, ub, K, alone = row_terms(g, etab, ptab, vmap, own[i], indptr[i], indptr[i + 1], co, w, idx, h, vb, vw)
        if alone and g[ENT_ALONE_IS_SOLO] != 0.0:
            out[i] = 1.0
            continue
        if full:
            s = full_value(g, mu, X[i], idx, h, L)
        else:
            s = blocks_value(g, mu, X[i], idx, h, L, ub, vb, vw, K, r)
        out[i] = math.exp(s) if g[ENT_LOG_TARGET] != 0.0 else s
    return OK


@njit(cache=True)
def update_one(g, est, P, etab, ptab, vmap, x, y, own, co, w, create):
    """One row (``own`` -1: no entities): ``MISSING`` if ``create`` and it names something new
    (nothing changed; the caller creates it and calls again), else validate and learn."""
    st = check_entity_row(g, x, y)
    if st != OK:
        return st
    if own >= 0 and create > 0 and row_missing(etab, ptab, vmap, own, co, create > 1):
        return MISSING
    r = int(g[ENT_RANK])
    K0 = co.shape[0]
    size = 2 + 4 * K0 + r * (1 + K0)
    # two scratch allocations, sliced (each allocation costs about as much as the arithmetic)
    iscr = np.empty(2 * size + K0 + 1, dtype=np.int64)
    fscr = np.empty(4 * size + K0 + 1)
    idx, tix, vb = iscr[:size], iscr[size:2 * size], iscr[2 * size:]
    h, tmu, tvar, th, vw = (fscr[:size], fscr[size:2 * size], fscr[2 * size:3 * size], fscr[3 * size:4 * size],
                            fscr[4 * size:])
    L, ub, K, alone = 0, -1, 0, 0
    if own >= 0:
        L, ub, K, alone = row_terms(g, etab, ptab, vmap, own, 0, K0, co, w, idx, h, vb, vw)
    if alone and g[ENT_ALONE_IS_SOLO] != 0.0:
        g[N_SEEN] += 1.0
        return OK
    yi = math.log(y) if g[ENT_LOG_TARGET] != 0.0 else y
    if g[ENT_N_FULL] > 0.0:
        z = np.empty(2 * est.shape[1])
        return full_step(g, est[EST_MEAN], P, est[EST_PRIOR_INFO], est[EST_PRIOR_MEAN], x, yi, idx, h, L, z)
    return blocks_step(g, est[EST_MEAN], est[EST_INFO], est[EST_PRIOR_INFO], x, yi, idx, h, L, ub, vb, vw, K, tmu, tvar, th, tix)


@njit(cache=True)
def predict_one(g, est, etab, ptab, vmap, x, own, co, w):
    """One row's prediction (``own`` -1: no entities); NaN for a wrong width or a NaN/inf feature."""
    d = int(g[N_FEATURES])
    if x.shape[0] != d:
        return np.nan
    for k in range(d):
        if not math.isfinite(x[k]):
            return np.nan
    r = int(g[ENT_RANK])
    K0 = co.shape[0]
    size = 2 + 4 * K0 + r * (1 + K0)
    iscr = np.empty(size + K0 + 1, dtype=np.int64)
    fscr = np.empty(size + K0 + 1)
    idx, vb, h, vw = iscr[:size], iscr[size:], fscr[:size], fscr[size:]
    L, ub, K, alone = 0, -1, 0, 0
    if own >= 0:
        L, ub, K, alone = row_terms(g, etab, ptab, vmap, own, 0, K0, co, w, idx, h, vb, vw)
    if alone and g[ENT_ALONE_IS_SOLO] != 0.0:
        return 1.0
    if g[ENT_N_FULL] > 0.0:
        s = full_value(g, est[EST_MEAN], x, idx, h, L)
    else:
        s = blocks_value(g, est[EST_MEAN], x, idx, h, L, ub, vb, vw, K, r)
    return math.exp(s) if g[ENT_LOG_TARGET] != 0.0 else s


@njit(cache=True)
def prequential_rows(g, est, P, etab, ptab, vmap, X, y, own, indptr, co, w, start, create, evidence, bbuf,
                     blend, backoff_evidence, scale, out):
    """From row ``start`` on: predict each row into ``out``, then learn it, as ``predict`` then ``update``
    do row by row (:func:`predict_one` and :func:`update_one`, and with ``blend`` the backoff: an RLS
    state ``bbuf`` blended in with weight ``1 - min(1, evidence / backoff_evidence)``, scaled by
    ``scale``, then taught the row with the evidence counted), with the same arithmetic.

    Stops before a row that names something new (``create`` as for :func:`update_one`) or that is
    refused, and returns its index (the caller takes it row by row); ``X.shape[0]`` when every row
    is done; ``-1 - i`` when the backoff refused row ``i`` after the entity model learned it.
    """
    n = X.shape[0]
    alone_solo = g[ENT_ALONE_IS_SOLO] != 0.0
    for i in range(start, n):
        lo, hi = indptr[i], indptr[i + 1]
        cw = co[lo:hi]
        ww = w[lo:hi]
        x = X[i]
        o = own[i]
        if create > 0 and row_missing(etab, ptab, vmap, o, cw, create > 1):
            return i
        if check_entity_row(g, x, y[i]) != OK:
            return i
        v = predict_one(g, est, etab, ptab, vmap, x, o, cw, ww)
        wsum = 0.0
        for k in range(hi - lo):
            wsum += ww[k]
        alone = not wsum > 0.0
        e0 = vmap[o, 0]
        e1 = vmap[o, 1]
        if blend:
            ev = max(evidence[e0] if e0 >= 0 else 0.0, evidence[e1] if e1 >= 0 else 0.0)
            a = min(1.0, ev / backoff_evidence)
            if a < 1.0 and v == v and not (alone_solo and alone):
                v = a * v + (1.0 - a) * scale * rls_predict_one(bbuf, x)
        if v - v != 0.0:
            return i
        out[i] = v
        if update_one(g, est, P, etab, ptab, vmap, x, y[i], o, cw, ww, 0) != OK:
            return i
        if blend and not (alone_solo and alone):
            if e0 >= 0:
                evidence[e0] += 1.0
            if e1 >= 0:
                evidence[e1] += 1.0
            if rls_update_one(bbuf, x, y[i]) != OK:
                return -1 - i
    return n


@njit(cache=True)
def prequential_runs(g, est, P, etab, ptab, vmap, X, y, own, indptr, co, w, order, bounds, need, evidence, bbuf,
                     blend, backoff_evidence, scale, out):
    """Run after run (rows ``order[bounds[r]:bounds[r + 1]]``): predict every row of the run into ``out``
    with what the runs before taught, then learn the run's rows in order, then count their evidence
    and teach the backoff (an RLS state ``bbuf``; ``blend`` as for :func:`prequential_rows`): what
    ``predict`` then ``update`` of the whole run do, with the same arithmetic. Every entity the rows
    name must exist already; with the joint covariance, ``need[i]`` is the number of parameters it
    holds when row ``i`` is learned (those created later are left out of the steps until then).
    Returns -1, or the run at which a row was refused (the caller restores its state and takes the
    runs one by one, which words the refusal)."""
    alone_solo = g[ENT_ALONE_IS_SOLO] != 0.0
    for r in range(bounds.shape[0] - 1):
        a0, a1 = bounds[r], bounds[r + 1]
        for q in range(a0, a1):
            i = order[q]
            if check_entity_row(g, X[i], y[i]) != OK:
                return r
        for q in range(a0, a1):
            i = order[q]
            lo, hi = indptr[i], indptr[i + 1]
            v = predict_one(g, est, etab, ptab, vmap, X[i], own[i], co[lo:hi], w[lo:hi])
            if blend:
                wsum = 0.0
                for k in range(lo, hi):
                    wsum += w[k]
                e0 = vmap[own[i], 0]
                e1 = vmap[own[i], 1]
                ev = max(evidence[e0] if e0 >= 0 else 0.0, evidence[e1] if e1 >= 0 else 0.0)
                a = min(1.0, ev / backoff_evidence)
                if a < 1.0 and not (alone_solo and not wsum > 0.0):
                    v = a * v + (1.0 - a) * scale * rls_predict_one(bbuf, X[i])
            out[i] = v
        for q in range(a0, a1):
            i = order[q]
            lo, hi = indptr[i], indptr[i + 1]
            if need[i] > g[ENT_N_FULL]:
                g[ENT_N_FULL] = need[i]
            if update_one(g, est, P, etab, ptab, vmap, X[i], y[i], own[i], co[lo:hi], w[lo:hi], 0) != OK:
                return r
        if blend:
            # each learned row's evidence, then the backoff learns it (the two are independent, so one
            # pass gives what the loop's evidence-then-backoff passes give)
            for q in range(a0, a1):
                i = order[q]
                wsum = 0.0
                for k in range(indptr[i], indptr[i + 1]):
                    wsum += w[k]
                if alone_solo and not wsum > 0.0:
                    continue
                e0 = vmap[own[i], 0]
                e1 = vmap[own[i], 1]
                if e0 >= 0:
                    evidence[e0] += 1.0
                if e1 >= 0:
                    evidence[e1] += 1.0
                if rls_update_one(bbuf, X[i], y[i]) != OK:
                    return r
    return -1


_F1 = nbt.Array(nbt.float64, 1, "C")
_F2 = nbt.Array(nbt.float64, 2, "C")
_F2A = nbt.Array(nbt.float64, 2, "A")
_I1 = nbt.Array(nbt.int64, 1, "C")
_I2 = nbt.Array(nbt.int64, 2, "C")
_ROW = nbt.Array(nbt.float64, 1, "A")

#: Compiled drivers called without numba's per-call type dispatch (exact argument types only; see
#: :func:`interfpred._core.jit.compiled_entry`).
FAST = CompiledEntries({
    "update_rows": (update_rows, (_F1, _F2, _F2, _I2, _I2, _I2, _F2A, _F1, _I1, _I1, _I1, _F1, nbt.int64)),
    "predict_rows": (predict_rows, (_F1, _F2, _I2, _I2, _I2, _F2A, _I1, _I1, _I1, _F1, nbt.int64, _F1)),
    "update_one": (update_one, (_F1, _F2, _F2, _I2, _I2, _I2, _ROW, nbt.float64, nbt.int64, _I1, _F1, nbt.int64)),
    "predict_one": (predict_one, (_F1, _F2, _I2, _I2, _I2, _ROW, nbt.int64, _I1, _F1)),
    "count_missing": (count_missing, (_I2, _I2, _I2, _I1, _I1, _I1, nbt.boolean)),
    "prequential_runs": (prequential_runs, (_F1, _F2, _F2, _I2, _I2, _I2, _F2A, _F1, _I1, _I1, _I1, _F1, _I1, _I1,
                                            _I1, _F1, _F1, nbt.boolean, nbt.float64, nbt.float64, _F1)),
    "prequential_rows": (prequential_rows, (_F1, _F2, _F2, _I2, _I2, _I2, _F2A, _F1, _I1, _I1, _I1, _F1, nbt.int64,
                                            nbt.int64, _F1, _F1, nbt.boolean, nbt.float64, nbt.float64, _F1)),
})
