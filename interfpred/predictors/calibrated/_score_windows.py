"""Compiled score windows of :class:`~interfpred.predictors.calibrated.estimator.Calibrated` (private).

One calibration group is one row of a float64 state array, laid out as

    [0] pos     next slot of the ring buffer
    [1] count   scores held in the window (<= window)
    [2] seen    scores ever pushed into this group
    [3] frozen  1 once the window of a ``fixed`` calibration is final (fit, or a full window)
    [4 : 4+L]           tau: the level each calibrated level currently uses (ACI), L levels
    [4+L : 4+2L]        theta: the current score threshold of each level
    [4+2L : 4+3L]       hits: how many pushed scores were <= the threshold in force before them
    [4+3L : 4+3L+W]     ring: the last W scores in arrival order
    [4+3L+W : 4+3L+2W]  sorted: the same scores, ascending

Nothing here validates; the public methods do.
"""

from __future__ import annotations

import numpy as np

from interfpred._core.jit import njit
from interfpred.predictors.calibrated.conformal import conformal_rank

POS = 0       # slots of a group row, as above
COUNT = 1
SEEN = 2
FROZEN = 3
HEADER = 4

METHOD_ACI = 0
METHOD_SPLIT = 1
METHOD_FIXED = 2
#: ``method`` hyperparameter -> code.
METHOD_CODES = {"aci": METHOD_ACI, "split": METHOD_SPLIT, "fixed": METHOD_FIXED}


def row_size(n_levels: int, window: int) -> int:
    """Floats per group row."""
    return HEADER + 3 * n_levels + 2 * window


@njit(cache=True)
def _threshold(row, so, cnt, tau):
    """Split-conformal score quantile at level ``tau`` of the ``cnt`` sorted scores at ``row[so:]``: the
    score of rank :func:`~interfpred.predictors.calibrated.conformal.conformal_rank`; no score gives 0.
    """
    if cnt == 0:
        return 0.0
    return row[so + conformal_rank(cnt, tau) - 1]


@njit(cache=True)
def _refresh(state, g, levels, n_levels, window, method):
    """Recompute the thresholds of group ``g`` from its window."""
    row = state[g]
    cnt = int(row[COUNT])
    so = HEADER + 3 * n_levels + window
    for li in range(n_levels):
        tau = row[HEADER + li] if method == METHOD_ACI else levels[li]
        row[HEADER + n_levels + li] = _threshold(row, so, cnt, tau)


@njit(cache=True)
def push(state, g, s, levels, par):
    """Push score ``s`` into group ``g``: coverage count, ACI step, window update, thresholds.

    ``par`` is ``[gamma, tau_lo, tau_hi, method]`` (see :func:`params`). ACI (Gibbs & Candes
    2021) per level: ``tau <- tau + gamma (level - [s <= theta])`` with ``theta`` the threshold in
    force before ``s``, kept in ``[tau_lo, tau_hi]``.
    """
    gamma = par[0]
    tau_lo = par[1]
    tau_hi = par[2]
    method = int(par[3])
    n_levels = levels.shape[0]
    window = (state.shape[1] - HEADER - 3 * n_levels) // 2
    row = state[g]
    to = HEADER
    th = HEADER + n_levels
    hi = HEADER + 2 * n_levels
    for li in range(n_levels):
        ok = 1.0 if s <= row[th + li] else 0.0
        row[hi + li] += ok
        if method == METHOD_ACI:
            t = row[to + li] + gamma * (levels[li] - ok)
            row[to + li] = min(max(t, tau_lo), tau_hi)
    row[SEEN] += 1.0
    if method == METHOD_FIXED and row[FROZEN] != 0.0:
        return
    ro = HEADER + 3 * n_levels
    so = ro + window
    pos = int(row[POS])
    cnt = int(row[COUNT])
    # j: insertion point of ``s`` after every score <= s
    lo_i, hi_i = 0, cnt
    while lo_i < hi_i:
        mid = (lo_i + hi_i) // 2
        if row[so + mid] <= s:
            lo_i = mid + 1
        else:
            hi_i = mid
    j = lo_i
    if cnt == window:
        # replace one copy of the oldest score by ``s`` with a single shift between the two places
        old = row[ro + pos]
        lo_i, hi_i = 0, cnt
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            if row[so + mid] < old:
                lo_i = mid + 1
            else:
                hi_i = mid
        i = lo_i
        if i < j:
            for k in range(i, j - 1):
                row[so + k] = row[so + k + 1]
            row[so + j - 1] = s
        else:
            for k in range(i, j, -1):
                row[so + k] = row[so + k - 1]
            row[so + j] = s
        cnt -= 1
    else:
        for k in range(cnt, j, -1):
            row[so + k] = row[so + k - 1]
        row[so + j] = s
    row[ro + pos] = s
    pos += 1
    if pos == window:
        pos = 0
    row[POS] = pos
    row[COUNT] = cnt + 1
    if method == METHOD_FIXED and cnt + 1 == window:
        row[FROZEN] = 1.0
    _refresh(state, g, levels, n_levels, window, method)


@njit(cache=True)
def push_many(state, groups, scores, levels, par):
    """``push`` each score into the global group 0 and into its own group (when > 0)."""
    everyone = np.int64(0)      # not a literal 0, which would compile push (and _refresh) apart from Python's calls
    for i in range(scores.shape[0]):
        push(state, everyone, scores[i], levels, par)
        if groups[i] > 0:
            push(state, groups[i], scores[i], levels, par)


def params(gamma: float, tau_lo: float, tau_hi: float, method: int) -> np.ndarray:
    """The compiled functions' parameter vector ``[gamma, tau_lo, tau_hi, method]``."""
    return np.array([gamma, tau_lo, tau_hi, float(method)])


@njit(cache=True)
def refresh_all(state, levels, window, method):
    """Recompute every group's thresholds (after fit, or a change of method on load)."""
    n_levels = levels.shape[0]
    for g in range(state.shape[0]):
        _refresh(state, g, levels, n_levels, window, method)


def new_state(n_groups: int, levels: np.ndarray, window: int) -> np.ndarray:
    """Zeroed state rows with every level's tau at its nominal value."""
    n_levels = levels.shape[0]
    state = np.zeros((n_groups, row_size(n_levels, window)))
    state[:, HEADER:HEADER + n_levels] = levels
    return state
