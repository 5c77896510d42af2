"""numba kernels of :class:`~interfpred.predictors.entity_rls.EntityRLS` (private).

State (see entity_rls.py for the model)::

    g   header (EH floats) then, in "blocks" mode, w (m), w0 (m), P (m*m), scratch z (m)
        [0] n_seen [1] m [2] d [3] forgetting [4] (1-f)/delta with stabilisation, else 0
        [5] noise variance [6] 1/delta [7] next stabilised coordinate [8] entity_forgetting
        [9] stabilise flag [10] log-target flag [11] alone-is-solo flag [12] rank
        [13] "full": number of parameters N (global + entity) [14] marginal population flag
    est (4, cap) rows: mu, the parameter means (blocks: entity parameters; full: every parameter,
        the m global weights first); info, each entity parameter's information 1/variance
        (blocks only); r0, each parameter's prior information; t0, its prior mean (full only)
    P2  (cap, cap) joint covariance (full mode only)
    etab (E, 4) int64: parameter index of each entity's sensitivity, aggressiveness, first
        latent factor u, first latent factor v (-1: none)
    ptab (cap, 3) int64: open-addressing hash table (own entity, co-runner entity, parameter index
        of their pair term), linear probing, cap a power of two, empty slots -1, at most half full
    vmap (V, 2) int64: entity index and parent entity index ("model" of "model@batch") of each
        name of the caller's vocabulary (-1: unknown, or no parent)

Row input (CSR as in :class:`~interfpred.entities.Entities`): ``own`` (n,) vocabulary indices,
``indptr`` (n + 1,), ``co`` and ``w`` (nnz,); ``has_ent`` 0 when the caller gave no entities.
Status codes as in ``_kernels`` plus ``BAD_LOG`` (a target <= 0 with a log target) and
``MISSING`` (a row names an entity not created yet; nothing changed).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types as _t

from interfpred._jit import njit
from interfpred.constants import FEATURE_ABS_MAX, TARGET_ABS_MAX
from interfpred.predictors._entity_tables import count_missing, pair_get, row_missing
from interfpred.predictors._kernels import BAD_WIDTH, BAD_X, BAD_Y, NOT_PD, OK, X_RANGE, Y_RANGE

BAD_LOG = 10
MISSING = 11
EH = 16


@njit(cache=True)
def _check(g, x, y):
    d = int(g[2])
    if x.shape[0] != d:
        return BAD_WIDTH
    for i in range(d):
        if not math.isfinite(x[i]):
            return BAD_X
    if not math.isfinite(y):
        return BAD_Y
    for i in range(d):
        if abs(x[i]) > FEATURE_ABS_MAX:
            return X_RANGE
    if abs(y) > TARGET_ABS_MAX:
        return Y_RANGE
    if g[10] != 0.0 and not y > 0.0:
        return BAD_LOG
    return OK


@njit(cache=True)
def _add(etab, e, col, hv, idx, h, L):
    if e >= 0 and etab[e, col] >= 0:
        idx[L] = etab[e, col]
        h[L] = hv
        return L + 1
    return L


@njit(cache=True)
def _add_pair(ptab, a, b, hv, idx, h, L):
    if a >= 0 and b >= 0:
        pp = pair_get(ptab, a, b)
        if pp >= 0:
            idx[L] = pp
            h[L] = hv
            return L + 1
    return L


@njit(cache=True)
def _terms(g, etab, ptab, vmap, own_v, lo, hi, co, w, idx, h, vb, vw):
    """Fill the linear entity terms of one row: idx/h (count returned as L), and the factor
    terms: own factor base (returned) and co-runner factor bases vb / weights vw (count K).

    ``vmap[v]`` is (entity, parent entity) of vocabulary name v (-1: unknown or none): a name
    ``"model@batch"`` also gets the terms of ``"model"`` (and the pair of parents).
    Returns (L, ubase, K, alone); ``alone`` is 1 when the row has no co-runner weight.
    """
    tot = 0.0
    for j in range(lo, hi):
        tot += w[j]
    alone = 1 if tot == 0.0 else 0
    eo = vmap[own_v, 0]
    po = vmap[own_v, 1]
    hs = min(1.0, tot)
    L = _add(etab, eo, 0, hs, idx, h, 0)
    L = _add(etab, po, 0, hs, idx, h, L)
    K = 0
    ub = etab[eo, 2] if eo >= 0 else -1
    for j in range(lo, hi):
        ec = vmap[co[j], 0]
        pc = vmap[co[j], 1]
        L = _add(etab, ec, 1, w[j], idx, h, L)
        L = _add(etab, pc, 1, w[j], idx, h, L)
        L = _add_pair(ptab, eo, ec, w[j], idx, h, L)
        L = _add_pair(ptab, po, pc, w[j], idx, h, L)
        if ec >= 0 and etab[ec, 3] >= 0:
            vb[K] = etab[ec, 3]
            vw[K] = w[j]
            K += 1
    return L, ub, K, alone


# ----------------------------------------------------------------------------- blocks mode
@njit(cache=True)
def _blocks_value(g, mu, x, idx, h, L, ub, vb, vw, K, r):
    d = int(g[2])
    s = 0.0
    for i in range(d):
        s += g[EH + i] * x[i]
    s += g[EH + d]
    for j in range(L):
        s += h[j] * mu[idx[j]]
    if ub >= 0:
        for k in range(r):
            v = 0.0
            for c in range(K):
                v += vw[c] * mu[vb[c] + k]
            s += mu[ub + k] * v
    return s


@njit(cache=True)
def _blocks_step(g, mu, info, r0, x, y, idx, h, L, ub, vb, vw, K, tmu, tvar, th, tix):
    """One decoupled joint Kalman step; returns OK or NOT_PD (state then unchanged)."""
    m = int(g[1])
    d = int(g[2])
    lam = g[3]
    c = g[4]
    lame = g[8]
    stab = g[9] != 0.0
    r = int(g[12])
    wo = EH
    w0o = wo + m
    po = w0o + m
    zo = po + m * m
    # global block: z = P x~, q = x~' P x~, prediction
    q = 0.0
    yhat = 0.0
    for i in range(m):
        s = 0.0
        for k in range(d):
            s += g[po + i * m + k] * x[k]
        s += g[po + i * m + d]
        g[zo + i] = s
        xi = x[i] if i < d else 1.0
        q += xi * s
        yhat += g[wo + i] * xi
    # touched entity parameters after their per-touch forgetting (not yet written back)
    n_t = 0
    for j in range(L):
        p = idx[j]
        tix[n_t] = p
        th[n_t] = h[j]
        n_t += 1
    if ub >= 0 and r > 0:
        for k in range(r):
            tix[n_t] = ub + k
            n_t += 1
        for cc in range(K):
            for k in range(r):
                tix[n_t] = vb[cc] + k
                n_t += 1
    for t in range(n_t):
        p = tix[t]
        R = info[p]
        if stab:
            Rt = lame * R + (1.0 - lame) * r0[p]
            tmu[t] = lame * R * mu[p] / Rt
        else:
            Rt = lame * R
            tmu[t] = mu[p]
        tvar[t] = 1.0 / Rt
    yg = yhat
    for t in range(L):
        yhat += th[t] * tmu[t]
    if ub >= 0 and r > 0:
        # bilinear term, linearised: d/du_k = V_k, d/dv[c]_k = w_c u_k
        for k in range(r):
            v = 0.0
            for cc in range(K):
                v += vw[cc] * tmu[L + r + cc * r + k]
            th[L + k] = v
            yhat += tmu[L + k] * v
        for cc in range(K):
            for k in range(r):
                th[L + r + cc * r + k] = vw[cc] * tmu[L + k]
    marginal = g[14] != 0.0
    ent = 0.0
    for t in range(n_t):
        ent += lam * th[t] * th[t] * tvar[t]
    den = lam + q if marginal else lam + q + ent
    den_e = lam + ent if marginal else den
    if not (den > 0.0 and den < np.inf and den_e > 0.0 and den_e < np.inf):
        return NOT_PD
    # joint: one innovation for every part; marginal: g learns y as if the entity terms were noise
    # (the population model), the entity terms learn what g, after this row, still leaves
    e = y - yg if marginal else y - yhat
    gain = e / den
    inv_den = 1.0 / den
    inv_lam = 1.0 / lam
    for i in range(m):
        zi = g[zo + i]
        g[wo + i] += zi * gain
        row = po + i * m
        for j in range(m):
            g[row + j] = (g[row + j] - (zi * g[zo + j]) * inv_den) * inv_lam
    if marginal:
        e_e = y - (yhat + q * gain)
        gain_e = e_e / den_e
        inv_den_e = 1.0 / den_e
    else:
        gain_e = gain
        inv_den_e = inv_den
    for t in range(n_t):
        p = tix[t]
        kv = lam * tvar[t] * th[t]
        mu[p] = tmu[t] + kv * gain_e
        var = tvar[t] - kv * th[t] * tvar[t] * inv_den_e
        info[p] = 1.0 / var
    n = g[0] + 1.0
    g[0] = n
    if c > 0.0:
        jj = int(g[7])
        rho = m * c
        pjj = g[po + jj * m + jj]
        den2 = 1.0 + rho * pjj
        rr = (g[w0o + jj] - g[wo + jj]) * rho / den2
        for i in range(m):
            g[zo + i] = g[po + i * m + jj]
        sc = rho / den2
        for i in range(m):
            zi = g[zo + i]
            g[wo + i] += zi * rr
            row = po + i * m
            for j in range(m):
                g[row + j] -= (zi * g[zo + j]) * sc
        jj += 1
        g[7] = 0.0 if jj == m else float(jj)
    a = 1.0 - lam
    a = max(a, 1.0 / n)
    g[5] += a * (e * e * lam / den - g[5])
    return OK


# ----------------------------------------------------------------------------- full mode
@njit(cache=True)
def _full_value(g, mu, x, idx, h, L):
    m = int(g[1])
    d = int(g[2])
    s = 0.0
    for i in range(d):
        s += mu[i] * x[i]
    s += mu[d]
    for j in range(L):
        s += h[j] * mu[m + idx[j]]
    return s


@njit(cache=True)
def _full_step(g, mu, P, r0, t0, x, y, idx, h, L, z):
    """Exact RLS over every parameter (dense joint covariance); OK or NOT_PD (state unchanged)."""
    m = int(g[1])
    d = int(g[2])
    N = int(g[13])
    lam = g[3]
    q = 0.0
    yhat = _full_value(g, mu, x, idx, h, L)
    for i in range(N):
        s = 0.0
        for k in range(d):
            s += P[i, k] * x[k]
        s += P[i, d]
        for j in range(L):
            s += P[i, m + idx[j]] * h[j]
        z[i] = s
    for k in range(d):
        q += x[k] * z[k]
    q += z[d]
    for j in range(L):
        q += h[j] * z[m + idx[j]]
    den = lam + q
    if not (den > 0.0 and den < np.inf):
        return NOT_PD
    e = y - yhat
    gain = e / den
    inv_den = 1.0 / den
    inv_lam = 1.0 / lam
    for i in range(N):
        zi = z[i]
        mu[i] += zi * gain
        for j in range(N):
            P[i, j] = (P[i, j] - (zi * z[j]) * inv_den) * inv_lam
    n = g[0] + 1.0
    g[0] = n
    if g[9] != 0.0 and lam < 1.0:
        jj = int(g[7])
        if jj >= N:
            jj = 0
        rho = N * (1.0 - lam) * r0[jj]
        den2 = 1.0 + rho * P[jj, jj]
        rr = (t0[jj] - mu[jj]) * rho / den2
        for i in range(N):
            z[i] = P[i, jj]
        sc = rho / den2
        for i in range(N):
            zi = z[i]
            mu[i] += zi * rr
            for j in range(N):
                P[i, j] -= (zi * z[j]) * sc
        jj += 1
        g[7] = 0.0 if jj >= N else float(jj)
    a = 1.0 - lam
    a = max(a, 1.0 / n)
    g[5] += a * (e * e * lam / den - g[5])
    return OK


# ----------------------------------------------------------------------------- drivers
@njit(cache=True)
def _max_touched(indptr, n, r):
    kmax = 0
    for i in range(n):
        k = indptr[i + 1] - indptr[i]
        kmax = max(kmax, k)
    return 2 + 4 * kmax + r * (1 + kmax), kmax


@njit(cache=True)
def check_rows(g, X, y):
    """``OK``, or ``status * 2**32 + row`` of the first row refused by ``_check``."""
    for i in range(X.shape[0]):
        st = _check(g, X[i], y[i])
        if st != OK:
            return st * 4294967296 + i
    return OK


@njit(cache=True)
def update_rows(g, est, P, etab, ptab, vmap, X, y, own, indptr, co, w, has_ent):
    """Validate every row, then learn them in order.

    Returns ``OK`` or ``status * 2**32 + row`` of the first refused row; rows before it are learned
    (the caller restores its snapshot).
    """
    n = X.shape[0]
    st = check_rows(g, X, y)
    if st != OK:
        return st
    mu, info, r0, t0 = est[0], est[1], est[2], est[3]
    r = int(g[12])
    full = g[13] > 0.0
    size, kmax = _max_touched(indptr, n if has_ent else 0, r)
    idx = np.empty(size, dtype=np.int64)
    h = np.empty(size)
    vb = np.empty(kmax + 1, dtype=np.int64)
    vw = np.empty(kmax + 1)
    tmu = np.empty(size)
    tvar = np.empty(size)
    th = np.empty(size)
    tix = np.empty(size, dtype=np.int64)
    z = np.empty(mu.shape[0] if full else 1)
    for i in range(n):
        L, ub, K, alone = 0, -1, 0, 0
        if has_ent:
            L, ub, K, alone = _terms(g, etab, ptab, vmap, own[i], indptr[i], indptr[i + 1], co, w, idx, h, vb, vw)
        if alone and g[11] != 0.0:
            g[0] += 1.0  # seen; nothing to learn: a lone batch runs at its solo speed
            continue
        yi = math.log(y[i]) if g[10] != 0.0 else y[i]
        if full:
            st = _full_step(g, mu, P, r0, t0, X[i], yi, idx, h, L, z)
        else:
            st = _blocks_step(g, mu, info, r0, X[i], yi, idx, h, L, ub, vb, vw, K, tmu, tvar, th, tix)
        if st != OK:
            return st * 4294967296 + i
    return OK


@njit(cache=True)
def predict_rows(g, est, etab, ptab, vmap, X, own, indptr, co, w, has_ent, out):
    """Predictions of rows of the right width into ``out``; ``BAD_X`` if one holds NaN/inf (else OK)."""
    n = X.shape[0]
    for i in range(n):
        for k in range(X.shape[1]):
            if not math.isfinite(X[i, k]):
                return BAD_X
    mu = est[0]
    r = int(g[12])
    full = g[13] > 0.0
    size, kmax = _max_touched(indptr, n if has_ent else 0, r)
    idx = np.empty(size, dtype=np.int64)
    h = np.empty(size)
    vb = np.empty(kmax + 1, dtype=np.int64)
    vw = np.empty(kmax + 1)
    for i in range(n):
        L, ub, K, alone = 0, -1, 0, 0
        if has_ent:
            L, ub, K, alone = _terms(g, etab, ptab, vmap, own[i], indptr[i], indptr[i + 1], co, w, idx, h, vb, vw)
        if alone and g[11] != 0.0:
            out[i] = 1.0
            continue
        if full:
            s = _full_value(g, mu, X[i], idx, h, L)
        else:
            s = _blocks_value(g, mu, X[i], idx, h, L, ub, vb, vw, K, r)
        out[i] = math.exp(s) if g[10] != 0.0 else s
    return OK


@njit(cache=True)
def update_one(g, est, P, etab, ptab, vmap, x, y, own, co, w, create):
    """One row (``own`` -1: no entities): ``MISSING`` if ``create`` and it names something new
    (nothing changed; the caller creates it and calls again), else validate and learn."""
    st = _check(g, x, y)
    if st != OK:
        return st
    if own >= 0 and create > 0 and row_missing(etab, ptab, vmap, own, co, create > 1):
        return MISSING
    r = int(g[12])
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
        L, ub, K, alone = _terms(g, etab, ptab, vmap, own, 0, K0, co, w, idx, h, vb, vw)
    if alone and g[11] != 0.0:
        g[0] += 1.0
        return OK
    yi = math.log(y) if g[10] != 0.0 else y
    if g[13] > 0.0:
        z = np.empty(est.shape[1])
        return _full_step(g, est[0], P, est[2], est[3], x, yi, idx, h, L, z)
    return _blocks_step(g, est[0], est[1], est[2], x, yi, idx, h, L, ub, vb, vw, K, tmu, tvar, th, tix)


@njit(cache=True)
def predict_one(g, est, etab, ptab, vmap, x, own, co, w):
    """One row's prediction (``own`` -1: no entities); NaN for a wrong width or a NaN/inf feature."""
    d = int(g[2])
    if x.shape[0] != d:
        return np.nan
    for k in range(d):
        if not math.isfinite(x[k]):
            return np.nan
    r = int(g[12])
    K0 = co.shape[0]
    size = 2 + 4 * K0 + r * (1 + K0)
    iscr = np.empty(size + K0 + 1, dtype=np.int64)
    fscr = np.empty(size + K0 + 1)
    idx, vb, h, vw = iscr[:size], iscr[size:], fscr[:size], fscr[size:]
    L, ub, K, alone = 0, -1, 0, 0
    if own >= 0:
        L, ub, K, alone = _terms(g, etab, ptab, vmap, own, 0, K0, co, w, idx, h, vb, vw)
    if alone and g[11] != 0.0:
        return 1.0
    if g[13] > 0.0:
        s = _full_value(g, est[0], x, idx, h, L)
    else:
        s = _blocks_value(g, est[0], x, idx, h, L, ub, vb, vw, K, r)
    return math.exp(s) if g[10] != 0.0 else s


# ----------------------------------------------------------------------------- dispatch-free entry points
_F1 = _t.Array(_t.float64, 1, "C")
_F2 = _t.Array(_t.float64, 2, "C")
_F2A = _t.Array(_t.float64, 2, "A")
_I1 = _t.Array(_t.int64, 1, "C")
_I2 = _t.Array(_t.int64, 2, "C")
_ROW = _t.Array(_t.float64, 1, "A")
_ENTRY_SPECS = {
    "update_rows": (update_rows, (_F1, _F2, _F2, _I2, _I2, _I2, _F2A, _F1, _I1, _I1, _I1, _F1, _t.int64)),
    "predict_rows": (predict_rows, (_F1, _F2, _I2, _I2, _I2, _F2A, _I1, _I1, _I1, _F1, _t.int64, _F1)),
    "update_one": (update_one, (_F1, _F2, _F2, _I2, _I2, _I2, _ROW, _t.float64, _t.int64, _I1, _F1, _t.int64)),
    "predict_one": (predict_one, (_F1, _F2, _I2, _I2, _I2, _ROW, _t.int64, _I1, _F1)),
    "count_missing": (count_missing, (_I2, _I2, _I2, _I1, _I1, _I1, _t.boolean)),
}


class _Entries:
    """Compiled kernels called without numba's per-call type dispatch (exact argument types only)."""

    def __getattr__(self, name: str):
        if name not in _ENTRY_SPECS:
            raise AttributeError(name)
        disp, sig = _ENTRY_SPECS[name]
        disp.compile(sig)
        ep = disp.overloads[sig].entry_point
        setattr(self, name, ep)
        return ep


FAST = _Entries()
