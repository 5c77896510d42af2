"""Compiled learning steps of :class:`~interfpred.predictors.entity_rls.estimator.EntityRLS`: the state
layout, the entity terms of a row, one learning step in each covariance mode, and the pairwise terms.

Both modes run the RLS rank-one step of :mod:`interfpred.predictors._linear_buffers` (data
correction, stabilising pseudo-observation, noise estimate): "blocks" on its global block,
"full" on the joint covariance of every parameter.

State (the model is in docs/predictors.md)::

    g   header (ENT_HEADER floats, slots named below; the first ones as RLS's) then, in "blocks"
        mode, the RLS block of the global weights: w (m), w0 (m), P (m*m), scratch z (m)
    est (4, cap) rows ``EST_*``: the parameter means (blocks: entity parameters; full: every
        parameter, the m global weights first), information, prior information and prior mean
    P2  (cap, cap) joint covariance (full mode only)
    etab (E, 4) int64: parameter index of each entity's terms, columns ``ETAB_*`` (-1: none)
    ptab the pair hash table of :mod:`interfpred.predictors.entity_rls._tables`
    vmap (V, 2) int64: entity index and parent entity index ("model" of "model@batch") of each
        name of the caller's vocabulary (-1: unknown, or no parent)

Status codes as in :mod:`interfpred.predictors._status`.
"""

from __future__ import annotations

import numpy as np

from interfpred._core.jit import njit
from interfpred.predictors._linear_buffers import (
    N_FEATURES,
    N_SEEN,
    N_WEIGHTS,
    RLS_CYCLE,
    RLS_FORGETTING,
    RLS_INV_DELTA,
    RLS_NOISE_VAR,
    RLS_STAB,
    check_row,
    correct_and_observe,
    linear_value,
    noise_update,
    rank_one_correct,
    rls_correct,
    rls_finish_row,
    rls_offsets,
    rls_prepare,
)
from interfpred.predictors._status import BAD_LOG, NOT_PD, OK
from interfpred.predictors.entity_rls._tables import pair_get

__all__ = ["N_SEEN", "N_WEIGHTS", "N_FEATURES", "RLS_FORGETTING", "RLS_STAB", "RLS_NOISE_VAR", "RLS_INV_DELTA",
           "RLS_CYCLE", "ENT_FORGETTING", "ENT_STABILIZE", "ENT_LOG_TARGET", "ENT_ALONE_IS_SOLO", "ENT_RANK",
           "ENT_N_FULL", "ENT_MARGINAL", "ENT_HEADER", "ENT_HYPER_SLOTS", "EST_MEAN", "EST_INFO",
           "EST_PRIOR_INFO", "EST_PRIOR_MEAN", "ETAB_SENSITIVITY", "ETAB_AGGRESSIVENESS", "ETAB_U", "ETAB_V",
           "check_entity_row", "row_terms",
           "blocks_value", "blocks_step", "full_value", "full_step", "pairwise_terms", "same_values"]

# -- EntityRLS header: N_SEEN .. RLS_CYCLE as in an RLS buffer, then
ENT_FORGETTING = 8      # entity_forgetting
ENT_STABILIZE = 9       # 1.0 with stabilised forgetting
ENT_LOG_TARGET = 10     # 1.0 when the model learns log y
ENT_ALONE_IS_SOLO = 11  # 1.0 when a row without co-runners predicts 1 and teaches nothing
ENT_RANK = 12           # rank of the latent factors
ENT_N_FULL = 13         # "full" mode: number of parameters N (global and entity); 0 in "blocks" mode
ENT_MARGINAL = 14       # 1.0 for population="marginal"
ENT_HEADER = 16
# -- rows of ``est``
EST_MEAN = 0        # mu: parameter means
EST_INFO = 1        # info: each entity parameter's information 1 / variance ("blocks" only)
EST_PRIOR_INFO = 2  # r0: each parameter's prior information
EST_PRIOR_MEAN = 3  # t0: each parameter's prior mean ("full" only)
# -- columns of ``etab``: the parameter index of each entity's terms (-1: none)
ETAB_SENSITIVITY = 0
ETAB_AGGRESSIVENESS = 1
ETAB_U = 2          # first latent factor u (own side)
ETAB_V = 3          # first latent factor v (co-runner side)

#: The slots that hold hyperparameters (rewritten from the parameters when a state is loaded).
ENT_HYPER_SLOTS = (RLS_FORGETTING, RLS_STAB, RLS_INV_DELTA, ENT_FORGETTING, ENT_STABILIZE, ENT_LOG_TARGET,
                   ENT_ALONE_IS_SOLO, ENT_RANK, ENT_MARGINAL)


@njit(cache=True)
def check_entity_row(g, x, y):
    """Status of one row: :func:`~interfpred.predictors._linear_buffers.check_row`, then a positive y for a log target."""
    st = check_row(g, x, y)
    if st != OK:
        return st
    if g[ENT_LOG_TARGET] != 0.0 and not y > 0.0:
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
def row_terms(g, etab, ptab, vmap, own_v, lo, hi, co, w, idx, h, vb, vw):
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
    L = _add(etab, eo, ETAB_SENSITIVITY, hs, idx, h, 0)
    L = _add(etab, po, ETAB_SENSITIVITY, hs, idx, h, L)
    K = 0
    ub = etab[eo, ETAB_U] if eo >= 0 else -1
    for j in range(lo, hi):
        ec = vmap[co[j], 0]
        pc = vmap[co[j], 1]
        L = _add(etab, ec, ETAB_AGGRESSIVENESS, w[j], idx, h, L)
        L = _add(etab, pc, ETAB_AGGRESSIVENESS, w[j], idx, h, L)
        L = _add_pair(ptab, eo, ec, w[j], idx, h, L)
        L = _add_pair(ptab, po, pc, w[j], idx, h, L)
        if ec >= 0 and etab[ec, ETAB_V] >= 0:
            vb[K] = etab[ec, ETAB_V]
            vw[K] = w[j]
            K += 1
    return L, ub, K, alone


# ----------------------------------------------------------------------------- blocks mode
@njit(cache=True)
def blocks_value(g, mu, x, idx, h, L, ub, vb, vw, K, r):
    s = linear_value(g, int(g[N_WEIGHTS]), int(g[N_FEATURES]), x, ENT_HEADER)
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
def blocks_step(g, mu, info, r0, x, y, idx, h, L, ub, vb, vw, K, tmu, tvar, th, tix):
    """One decoupled joint Kalman step; returns OK or NOT_PD (state then unchanged)."""
    m = int(g[N_WEIGHTS])
    d = int(g[N_FEATURES])
    lam = g[RLS_FORGETTING]
    c = g[RLS_STAB]
    lame = g[ENT_FORGETTING]
    stab = g[ENT_STABILIZE] != 0.0
    r = int(g[ENT_RANK])
    wo, w0o, po, zo = rls_offsets(ENT_HEADER, m)
    q, yhat = rls_prepare(g, m, d, x, wo, po, zo)   # global block: z = P x~, x~' P x~, prediction
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
    marginal = g[ENT_MARGINAL] != 0.0
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
    rls_correct(g, m, wo, po, zo, gain, inv_den, 1.0 / lam)
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
    rls_finish_row(g, m, wo, w0o, po, zo, c, lam, e, den)
    return OK


# ----------------------------------------------------------------------------- full mode
@njit(cache=True)
def full_value(g, mu, x, idx, h, L):
    m = int(g[N_WEIGHTS])
    d = int(g[N_FEATURES])
    s = 0.0
    for i in range(d):
        s += mu[i] * x[i]
    s += mu[d]
    for j in range(L):
        s += h[j] * mu[m + idx[j]]
    return s


@njit(cache=True)
def full_step(g, mu, P, r0, t0, x, y, idx, h, L, z):
    """Exact RLS over every parameter (dense joint covariance); OK or NOT_PD (state unchanged). ``z`` is
    scratch of at least twice the number of parameters."""
    m = int(g[N_WEIGHTS])
    d = int(g[N_FEATURES])
    N = int(g[ENT_N_FULL])
    lam = g[RLS_FORGETTING]
    q = 0.0
    yhat = full_value(g, mu, x, idx, h, L)
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
    ps = P.shape[1]
    Pf = P.reshape(P.shape[0] * ps)    # a view: row i of P starts at Pf[i * ps]
    n = g[N_SEEN] + 1.0
    g[N_SEEN] = n
    if g[ENT_STABILIZE] != 0.0 and lam < 1.0:
        # the correction and the stabilising pseudo-observation in one pass over P (bit-identical)
        jj = int(g[RLS_CYCLE])
        if jj >= N:
            jj = 0
        correct_and_observe(mu, 0, Pf, 0, ps, z, 0, N, e / den, 1.0 / den, 1.0 / lam, jj, t0[jj],
                            N * (1.0 - lam) * r0[jj], z[N:])
        jj += 1
        g[RLS_CYCLE] = 0.0 if jj >= N else float(jj)
    else:
        rank_one_correct(mu, 0, Pf, 0, ps, z, 0, N, e / den, 1.0 / den, 1.0 / lam)
    noise_update(g, lam, n, e, den)
    return OK


@njit(cache=True)
def pairwise_terms(g, est, etab, ptab, ids, S, M):
    """Entity part of each member's prediction beside entities ``ids`` (k, 2): entity and parent entity of
    each (-1: unknown or none).

    ``S[a]``: sensitivity of entity a (applied with ``min(1, number of co-runners)``);
    ``M[a, b]``: what one batch of entity b adds to a batch of entity a when they run together
    (aggressiveness of b, pair terms (a, b), latent factors u[a] . v[b]), also for ``a == b`` (two
    batches of one entity).
    """
    k = ids.shape[0]
    off = int(g[N_WEIGHTS]) if g[ENT_N_FULL] > 0.0 else 0
    mu = est[EST_MEAN]
    r = int(g[ENT_RANK])
    aggr = np.zeros(k)
    for b in range(k):
        for lvl in range(2):
            eb = ids[b, lvl]
            if eb >= 0 and etab[eb, ETAB_AGGRESSIVENESS] >= 0:
                aggr[b] += mu[off + etab[eb, ETAB_AGGRESSIVENESS]]
    for a in range(k):
        S[a] = 0.0
        for lvl in range(2):
            ea = ids[a, lvl]
            if ea >= 0 and etab[ea, ETAB_SENSITIVITY] >= 0:
                S[a] += mu[off + etab[ea, ETAB_SENSITIVITY]]
        for b in range(k):
            v = aggr[b]
            for lvl in range(2):
                ea = ids[a, lvl]
                eb = ids[b, lvl]
                if ea >= 0 and eb >= 0:
                    pp = pair_get(ptab, ea, eb)
                    if pp >= 0:
                        v += mu[off + pp]
            ea = ids[a, 0]
            eb = ids[b, 0]
            if ea >= 0 and eb >= 0:
                ub = etab[ea, ETAB_U]
                vb = etab[eb, ETAB_V]
                if ub >= 0 and vb >= 0:
                    for q in range(r):
                        v += mu[ub + q] * mu[vb + q]
            M[a, b] = v


@njit(cache=True)
def same_values(a, b):
    """Whether the 1-d arrays ``a`` and ``b`` hold the same values (cheaper than numpy on a few hundred)."""
    if a.shape[0] != b.shape[0]:
        return False
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True
