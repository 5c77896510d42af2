"""The calibrated latency bound of an affine model, in the form the compiled projection takes.

:func:`bounded` moves a member's prediction ``m`` to its bound ``m + u * theta``: ``u`` is a
relative scale ``max(|m|, min_scale)`` or the predictive standard deviation of an RLS under the sum
combine, which :func:`std_pattern_vectors` writes as a quadratic form in the running set's totals,
so a segment costs O(1) per member. :func:`~interfpred.serving.projection.affine.project_into`
(the one projection loop, mean or bound) calls them. Nothing here validates its input: the
projector passes arrays it built.
"""

from __future__ import annotations

import numpy as np

from interfpred._core.jit import njit
from interfpred.features.compiled_maps import (
    MAP_DESCRIPTIONS,
    MAP_TERMS,
    MAP_WIDTH,
    N_RESOURCES,
    N_TERM_KINDS,
    TERM_EXCESS,
    TERM_KIND,
    TERM_N_OTHERS,
    TERM_OTHER,
    TERM_OWN,
    TERM_PRODUCT,
    TERM_RESOURCE,
    TERM_TOTAL,
)
from interfpred.predictors.calibrated.conformal import relative_scale, std_scale

__all__ = ["BOUND_MEAN", "BOUND_RELATIVE", "BOUND_STD", "N_PATTERN_VECTORS", "PATTERN_SLOTS", "Z_PAIR_J", "Z_PAIR_L", "bounded",
           "std_gram", "std_member", "std_pattern_vectors"]

#: Bound modes of :func:`~interfpred.serving.projection.affine.project_into`: the point prediction, a relative-scale bound, a std-scale bound.
BOUND_MEAN = 0
BOUND_RELATIVE = 1
BOUND_STD = 2
#: Pattern vectors of the std-scale bound (see :func:`std_pattern_vectors`): A, D_r, C_r, B_r, N.
_VA = 0
_VD = 1
_VC = 4
_VB = 7
_VN = 10
N_PATTERN_VECTORS = 11
#: The pattern vectors each term kind of a map's description enters (sum combine): rows
#: (vector, whether it is one per resource, coefficient), vector -1 unused. A member's row is
#: ``a + sum_r T_r b_r + n b_N`` with ``a = A + sum_r me_r D_r - sum_r me_r**2 C_r`` and
#: ``b_r = B_r + me_r C_r``: own me_r is D_r; the others' T_r - me_r is B_r - D_r; the product
#: me_r (T_r - me_r) is C_r; the total T_r is B_r; the excess, over capacity, T_r - 1 is B_r - A
#: (else 0: no entry); the co-runner count is N.
_ENTRIES_BY_KIND = {
    TERM_OWN: ((_VD, 1, 1),),
    TERM_OTHER: ((_VD, 1, -1), (_VB, 1, 1)),
    TERM_PRODUCT: ((_VC, 1, 1),),
    TERM_TOTAL: ((_VB, 1, 1),),
    TERM_EXCESS: ((_VB, 1, 1), (_VA, 0, -1)),     # when the total is over capacity
    TERM_N_OTHERS: ((_VN, 0, 1),),
}
_TERM_ENTRIES = np.full((N_TERM_KINDS, max(map(len, _ENTRIES_BY_KIND.values())), 3), -1, dtype=np.int64)
for _kind, _rows in _ENTRIES_BY_KIND.items():
    _TERM_ENTRIES[_kind, :len(_rows)] = _rows
_TERM_ENTRIES.flags.writeable = False


def _pattern_slots() -> int:
    """The most ``(index, value)`` pairs a pattern vector of a built-in map holds (an intercept and
    every total over capacity): the width of the tables :func:`std_pattern_vectors` fills."""
    most = 0
    for desc in MAP_DESCRIPTIONS.values():
        count = np.zeros(N_PATTERN_VECTORS, dtype=np.int64)
        count[_VA] = 1
        for kind, r in desc:
            for vec, per_resource, _ in _TERM_ENTRIES[kind]:
                if vec >= 0:
                    count[vec + (r if per_resource else 0)] += 1
        most = max(most, int(count.max()))
    return most


#: Width of the ``(index, value)`` tables of :func:`std_pattern_vectors`.
PATTERN_SLOTS = _pattern_slots()
#: Pairs (j, l), j <= l, of the five set quantities z = (1, T_sm, T_l2, T_dram, n_others).
Z_PAIR_J = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4], dtype=np.int64)
Z_PAIR_L = np.array([0, 1, 2, 3, 4, 1, 2, 3, 4, 2, 3, 4, 3, 4, 4], dtype=np.int64)


@njit(cache=True, inline="always")
def bounded(p, mode, theta, sd, min_scale):
    """A point prediction ``p`` -> the calibrated bound ``p + u * theta`` (``mode`` says which scale ``u``)."""
    if mode == BOUND_RELATIVE:
        return p + relative_scale(p, min_scale) * theta
    if mode == BOUND_STD:
        return p + std_scale(p, sd, min_scale) * theta
    return p


@njit(cache=True)
def std_pattern_vectors(map_id, d, has_intercept, pattern, vidx, vval):
    """The vectors (in the predictor's augmented row space ``[phi, 1]``) that write a member's row
    as ``a + sum_r T_r b_r + n b_N`` under the sum combine, with ``a = A + sum_r me_r D_r -
    sum_r me_r**2 C_r``, ``b_r = B_r + me_r C_r`` and ``b_N = N``; ``T_r`` the set's total demand
    and ``n`` the co-runner count, read from the map's description (``_TERM_ENTRIES``).
    ``pattern`` bit r says the total of resource r exceeds capacity, so that its excess is
    ``T_r - 1`` (else 0). Written as up to ``PATTERN_SLOTS`` ``(index, value)`` pairs per vector,
    in column order, into ``vidx``/``vval`` (index -1: unused)."""
    vidx[:] = -1
    vval[:] = 0.0
    if has_intercept:
        vidx[_VA, 0] = d
        vval[_VA, 0] = 1.0
    for f in range(MAP_WIDTH[map_id]):
        kind = MAP_TERMS[map_id, f, TERM_KIND]
        r = MAP_TERMS[map_id, f, TERM_RESOURCE]
        if kind == TERM_EXCESS and not (pattern >> r) & 1:
            continue
        for e in range(_TERM_ENTRIES.shape[1]):
            vec = _TERM_ENTRIES[kind, e, 0]
            if vec < 0:
                continue
            u = vec + r if _TERM_ENTRIES[kind, e, 1] else vec
            a = 0
            while vidx[u, a] >= 0:
                a += 1
            vidx[u, a] = f
            vval[u, a] = _TERM_ENTRIES[kind, e, 2]


@njit(cache=True)
def std_gram(P, vidx, vval, gram):
    """``gram[u, v] = V_u' P V_v`` of the pattern vectors (their used pairs come first in each row)."""
    cnt = np.zeros(N_PATTERN_VECTORS, dtype=np.int64)
    for u in range(N_PATTERN_VECTORS):
        while cnt[u] < vidx.shape[1] and vidx[u, cnt[u]] >= 0:
            cnt[u] += 1
    for u in range(N_PATTERN_VECTORS):
        for v in range(u, N_PATTERN_VECTORS):
            acc = 0.0
            for a in range(cnt[u]):
                i = vidx[u, a]
                for c in range(cnt[v]):
                    acc += vval[u, a] * vval[v, c] * P[i, vidx[v, c]]
            gram[u, v] = acc
            gram[v, u] = acc


@njit(cache=True)
def std_member(gram, m0, m1, m2, y, ca, out):
    """The quadratic form of one member with own demand (m0, m1, m2) in z: its 15 coefficients over
    the pairs ``Z_PAIR_J, Z_PAIR_L`` (off-diagonal ones doubled) into ``out``."""
    ca[0] = 1.0
    ca[1] = m0
    ca[2] = m1
    ca[3] = m2
    ca[4] = -m0 * m0
    ca[5] = -m1 * m1
    ca[6] = -m2 * m2
    for v in range(N_PATTERN_VECTORS):
        acc = 0.0
        for u in range(7):
            acc += gram[v, u] * ca[u]
        y[v] = acc
    g00 = 0.0
    for u in range(7):
        g00 += ca[u] * y[u]
    out[0] = g00
    ms = (m0, m1, m2)
    for r in range(N_RESOURCES):
        out[1 + r] = 2.0 * (y[_VB + r] + ms[r] * y[_VC + r])
    out[4] = 2.0 * y[_VN]
    k = 5
    for r in range(N_RESOURCES):
        for s in range(r, N_RESOURCES):
            v = (gram[_VB + r, _VB + s] + ms[s] * gram[_VB + r, _VC + s] + ms[r] * gram[_VC + r, _VB + s]
                 + ms[r] * ms[s] * gram[_VC + r, _VC + s])
            out[k] = v if r == s else 2.0 * v
            k += 1
        out[k] = 2.0 * (gram[_VB + r, _VN] + ms[r] * gram[_VC + r, _VN])
        k += 1
    out[14] = gram[_VN, _VN]
