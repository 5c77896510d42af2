"""numba kernels of EntityRLS's entity tables (private): the pair hash table, lookups of what a
row names for the first time, and the pairwise terms of a running set.

``ptab`` (cap, 3) int64 is an open-addressing hash table of (own entity, co-runner entity,
parameter index of their pair term) with linear probing; cap is a power of two, empty slots
hold -1 and the caller keeps it at most half full. Other arrays as in ``_entity_kernels``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["count_missing", "pair_del", "pair_get", "pair_missing", "pair_put", "pairwise_terms", "row_missing"]

@njit(cache=True)
def pair_get(ptab, eo, ec):
    """Parameter index of the pair term (eo, ec), or -1."""
    mask = ptab.shape[0] - 1
    i = ((eo * 73856093) ^ (ec * 19349663)) & mask
    while True:
        a = ptab[i, 0]
        if a < 0:
            return -1
        if a == eo and ptab[i, 1] == ec:
            return ptab[i, 2]
        i = (i + 1) & mask


@njit(cache=True)
def pair_put(ptab, eo, ec, p):
    """Insert (eo, ec) -> p (the caller keeps the table at most half full)."""
    mask = ptab.shape[0] - 1
    i = ((eo * 73856093) ^ (ec * 19349663)) & mask
    while ptab[i, 0] >= 0 and not (ptab[i, 0] == eo and ptab[i, 1] == ec):
        i = (i + 1) & mask
    ptab[i, 0] = eo
    ptab[i, 1] = ec
    ptab[i, 2] = p


@njit(cache=True)
def pair_del(ptab, eo, ec):
    """Remove (eo, ec), which must be the most recent insertion on its probe chain."""
    mask = ptab.shape[0] - 1
    i = ((eo * 73856093) ^ (ec * 19349663)) & mask
    while ptab[i, 0] >= 0:
        if ptab[i, 0] == eo and ptab[i, 1] == ec:
            ptab[i, 0] = -1
            ptab[i, 1] = -1
            ptab[i, 2] = -1
            return
        i = (i + 1) & mask


@njit(cache=True)
def pair_missing(ptab, vmap, own, indptr, co):
    """(own entity, co entity) of every co-runner entry whose pair is unknown (-1 where an entity is)."""
    n = co.shape[0]
    out = np.full((n, 2), -1, dtype=np.int64)
    k = 0
    for i in range(own.shape[0]):
        eo = vmap[own[i]]
        for j in range(indptr[i], indptr[i + 1]):
            ec = vmap[co[j]]
            if eo >= 0 and ec >= 0 and pair_get(ptab, eo, ec) < 0:
                out[k, 0] = eo
                out[k, 1] = ec
                k += 1
    return out[:k]


@njit(cache=True)
def row_missing(etab, ptab, vmap, own, co, want_pairs):
    eo = vmap[own]
    if eo < 0:
        return True
    for j in range(co.shape[0]):
        ec = vmap[co[j]]
        if ec < 0 or (want_pairs and pair_get(ptab, eo, ec) < 0):
            return True
    return False


@njit(cache=True)
def count_missing(etab, ptab, vmap, own, indptr, co, want_pairs):
    """How many of the rows' entities (or, with ``want_pairs``, their pairs) are not known yet."""
    miss = 0
    for i in range(own.shape[0]):
        eo = vmap[own[i]]
        if eo < 0:
            miss += 1
        for j in range(indptr[i], indptr[i + 1]):
            ec = vmap[co[j]]
            if ec < 0 or want_pairs and eo >= 0 and pair_get(ptab, eo, ec) < 0:
                miss += 1
    return miss


@njit(cache=True)
def pairwise_terms(g, est, etab, ptab, ids, S, M):
    """Entity part of each member's prediction in a running set of entities ``ids`` (-1: unknown).

    ``S[a]``: sensitivity of member a (applied with ``min(1, number of co-runners)``);
    ``M[a, b]``: what member b adds to member a's prediction when they run together
    (aggressiveness of b, pair term (a, b), latent factors u[a] . v[b]); ``M[a, a] = 0``.
    """
    k = ids.shape[0]
    off = int(g[1]) if g[13] > 0.0 else 0
    mu = est[0]
    r = int(g[12])
    for a in range(k):
        ea = ids[a]
        S[a] = 0.0
        if ea >= 0 and etab[ea, 0] >= 0:
            S[a] = mu[off + etab[ea, 0]]
        for b in range(k):
            M[a, b] = 0.0
            eb = ids[b]
            if a == b or eb < 0:
                continue
            v = 0.0
            if etab[eb, 1] >= 0:
                v += mu[off + etab[eb, 1]]
            if ea >= 0:
                pp = pair_get(ptab, ea, eb)
                if pp >= 0:
                    v += mu[off + pp]
                ub = etab[ea, 2]
                vb = etab[eb, 3]
                if ub >= 0 and vb >= 0:
                    for q in range(r):
                        v += mu[ub + q] * mu[vb + q]
            M[a, b] = v
