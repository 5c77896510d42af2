"""Compiled rates and fluid projection of a predictor with per-entity terms (the tracker's entity fast path).

Package-internal. A predictor with entity terms (such as :class:`~interfpred.EntityRLS`) predicts,
for member ``a`` of a running set of ``na``, ``g(b + w . phi_a + S[a] min(1, na - 1) + sum_c M[a, c])``
with ``g`` the exponential under a log target (the identity otherwise), and 1 for a member alone
when the predictor says so (``alone_is_solo``). ``S`` and ``M`` come from the predictor's
``pairwise_terms(names)``. A member of little evidence blends in the predictor's features-only
backoff: ``A[a] * (the above) + (1 - A[a]) * (b2 + w2 . phi_a)``, with ``A``, ``w2`` and ``b2``
from ``backoff_terms(names)``.
"""

from __future__ import annotations

import math

import numpy as np

from interfpred._core.jit import njit
from interfpred._core.targets import to_rate
from interfpred.features.compiled_maps import map_running_set
from interfpred.serving.projection.bounds import BOUND_RELATIVE, bounded
from interfpred.serving.projection.generic import NONFINITE, advance

__all__ = ["entity_project", "entity_rates"]


@njit(cache=True)
def entity_rates(dem, idx, na, map_id, combine_id, w, b, S, M, A, w2, b2, log_target, alone_solo, is_rate, rmin,
                 rmax, sub, out, theta, min_scale):
    """Rates of members ``idx[:na]`` of ``dem`` running together into ``out[:na]`` (``sub``: (n, 3) scratch).

    A member with ``A[i] < 1`` blends its entity prediction with the features-only backoff
    ``b2 + w2 . phi`` as ``EntityRLS.predict`` does. With ``theta`` non-empty ((n,), or one value for
    every member), each prediction ``p`` then becomes the relative-scale calibrated bound
    ``p + max(|p|, min_scale) * theta[i]``."""
    for a in range(na):
        i = idx[a]
        sub[a, 0] = dem[i, 0]
        sub[a, 1] = dem[i, 1]
        sub[a, 2] = dem[i, 2]
    phi = map_running_set(sub[:na], map_id, combine_id)
    d = w.shape[0]
    h = 1.0 if na > 1 else 0.0
    bound = theta.shape[0] > 0
    per_row = theta.shape[0] > 1
    for a in range(na):
        i = idx[a]
        if na == 1 and alone_solo:
            p = 1.0
            if bound:
                p = bounded(p, BOUND_RELATIVE, theta[i if per_row else 0], 0.0, min_scale)
            out[a] = to_rate(p, is_rate, rmin, rmax)
            continue
        p = b + S[i] * h
        for j in range(d):
            p += w[j] * phi[a, j]
        for c in range(na):
            p += M[i, idx[c]]
        if log_target:
            p = math.exp(p)
        if A[i] < 1.0:
            q = b2
            for j in range(d):
                q += w2[j] * phi[a, j]
            p = A[i] * p + (1.0 - A[i]) * q
        if bound:
            p = bounded(p, BOUND_RELATIVE, theta[i if per_row else 0], 0.0, min_scale)
        out[a] = to_rate(p, is_rate, rmin, rmax)


@njit(cache=True)
def entity_project(dem, rem, t0, map_id, combine_id, w, b, S, M, A, w2, b2, log_target, alone_solo, is_rate, rmin,
                   rmax, rtol, end, theta, min_scale):
    """Fluid projection of ``dem`` (n, 3) with remaining work ``rem`` under the entity terms, into ``end``.

    Returns 0, or :data:`~interfpred.serving.projection.generic.NONFINITE` when a rate or a remaining
    work is not finite. ``theta`` and ``min_scale``: as in :func:`entity_rates`.
    """
    n = dem.shape[0]
    idx = np.arange(n)
    r = rem.copy()
    sub = np.empty((n, 3))
    rate = np.empty(n)
    taus = np.empty(n)
    retired = np.empty(n, dtype=np.int64)
    na = n
    t = t0
    while na > 0:
        entity_rates(dem, idx, na, map_id, combine_id, w, b, S, M, A, w2, b2, log_target, alone_solo, is_rate, rmin,
                     rmax, sub, rate, theta, min_scale)
        na, t, _ = advance(idx, na, r, rate, taus, t, rtol, end, retired)
        if na < 0:
            return NONFINITE
    return 0
