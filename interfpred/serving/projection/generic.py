"""Fluid what-if projection for any predictor: one step, and the loop that asks for rates per segment.

A projection answers "when does each member of this running set finish?" when every member
progresses at its predicted rate (fraction of solo speed) and the rates change only when a
member finishes. :func:`advance` is one segment of it, compiled, and every projection in
interfpred runs it (the affine, bound and entity projections of this package, and the E3
oracle's ground-truth projection); :func:`project_fluid` runs the whole projection for any
rate function, one call per projected segment, which is the path of a predictor the compiled
projections cannot read. docs/embedding.md explains the projection and its cost.

Examples
--------
>>> project_fluid(lambda members: np.full(members.size, 0.5), np.array([1.0, 2.0]), 10.0)   # half speed
array([12., 14.])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from interfpred._core.jit import njit
from interfpred.constants import TRACKER_FINISH_RTOL
from interfpred.errors import InterfpredError

__all__ = ["NONFINITE", "NONFINITE_MESSAGE", "advance", "all_finite", "project_fluid"]

#: Status of a compiled projection when a rate or a remaining work is not finite.
NONFINITE = 1
#: The refusal raised for that status.
NONFINITE_MESSAGE = ("projection refused: a predicted rate or remaining work is not finite "
                     "(the predictor's weights overflow on this running set)")


@njit(cache=True)
def all_finite(a):
    """Whether every value of the 1-d array ``a`` is finite (cheaper than numpy on a handful of values)."""
    for v in a:
        if not np.isfinite(v):
            return False
    return True


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



def project_fluid(rates_of: Callable[[np.ndarray], np.ndarray], rem: np.ndarray, t: float, *,
                  rtol: float = TRACKER_FINISH_RTOL,
                  refused: str = NONFINITE_MESSAGE) -> np.ndarray:
    """Projected completion times of members with remaining solo work ``rem`` (n,), from ``t``.

    ``rates_of(members)`` gives the rates (n_active,) of the members still running (indices
    into ``rem``, in their order) for one segment; the segment ends at the earliest completion
    (members within ``rtol`` of it finish together) and the next one's rates are asked for. An
    error with message ``refused`` is raised when a rate or a time to finish is not finite
    or not positive.

    Examples
    --------
    >>> project_fluid(lambda members: np.full(members.size, 0.5), np.array([1.0, 2.0]), 10.0)
    array([12., 14.])
    """
    r = np.array(rem, dtype=np.float64)
    n = r.shape[0]
    end = np.empty(n)
    idx = np.arange(n)
    taus = np.empty(n)
    retired = np.empty(n, dtype=np.int64)
    na = n
    tf = float(t)
    while na > 0:
        rate = np.ascontiguousarray(rates_of(idx[:na].copy()), dtype=np.float64)
        na, tf, _ = advance(idx, na, r, rate, taus, tf, rtol, end, retired)
        if na < 0:
            raise InterfpredError(refused)
    return end

