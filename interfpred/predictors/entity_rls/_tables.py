"""Compiled entity tables of EntityRLS (private): the pair hash table, lookups of what a
row names for the first time.

``ptab`` (cap, 3) int64 is an open-addressing hash table of (own entity, co-runner entity,
parameter index of their pair term) with linear probing; cap is a power of two, empty slots
hold -1 and the caller keeps it at most half full. Other arrays as in ``_entity_steps``.
"""

from __future__ import annotations

import numpy as np

from interfpred._core.jit import njit

__all__ = ["count_missing", "pair_del", "pair_get", "pair_missing", "pair_put", "row_missing"]

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
    """(own entity, co entity) of every pair a row names whose term is unknown (leaves, then parents;
    -1 where an entity is unknown)."""
    n = co.shape[0]
    out = np.full((2 * n, 2), -1, dtype=np.int64)
    k = 0
    for i in range(own.shape[0]):
        for lvl in range(2):
            eo = vmap[own[i], lvl]
            for j in range(indptr[i], indptr[i + 1]):
                ec = vmap[co[j], lvl]
                if eo >= 0 and ec >= 0 and pair_get(ptab, eo, ec) < 0:
                    out[k, 0] = eo
                    out[k, 1] = ec
                    k += 1
    return out[:k]


@njit(cache=True)
def row_missing(etab, ptab, vmap, own, co, want_pairs):
    """Whether one row names an entity or (with ``want_pairs``) a pair not known yet.

    ``vmap[v, 1]`` is -2 for a name whose parent should exist but does not."""
    if vmap[own, 0] < 0 or vmap[own, 1] == -2:
        return True
    for j in range(co.shape[0]):
        c = co[j]
        if vmap[c, 0] < 0 or vmap[c, 1] == -2:
            return True
        if want_pairs:
            if pair_get(ptab, vmap[own, 0], vmap[c, 0]) < 0:
                return True
            if vmap[own, 1] >= 0 and vmap[c, 1] >= 0 and pair_get(ptab, vmap[own, 1], vmap[c, 1]) < 0:
                return True
    return False


@njit(cache=True)
def count_missing(etab, ptab, vmap, own, indptr, co, want_pairs):
    """How many rows name an entity or (with ``want_pairs``) a pair not known yet."""
    miss = 0
    for i in range(own.shape[0]):
        if row_missing(etab, ptab, vmap, own[i], co[indptr[i]:indptr[i + 1]], want_pairs):
            miss += 1
    return miss
