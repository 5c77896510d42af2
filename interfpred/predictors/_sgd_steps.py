"""Compiled learning steps and prediction of :class:`~interfpred.predictors.sgd.OnlineSGD`.

SGD buffer: the slots every linear buffer starts with (``N_SEEN``, ``N_WEIGHTS``,
``N_FEATURES``, from :mod:`interfpred.predictors._linear_buffers`), the SGD slots below, then w (m),
G (m, the AdaGrad accumulator), mean (d) and M2 (d, Welford sums of squares).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types as nbt

from interfpred._core.jit import CompiledEntries, njit
from interfpred.predictors._linear_buffers import (
    BUF_TYPE,
    N_FEATURES,
    N_SEEN,
    N_WEIGHTS,
    ROW_TYPE,
    check_row,
    check_rows,
)
from interfpred.predictors._status import NONFINITE, OK, ROW_FACTOR

SGD_RATE = 3        # learning_rate
SGD_SCHEDULE = 4    # schedule code (SCHED_*)
SGD_POWER_T = 5     # power_t of "invscaling"
SGD_STANDARDIZE = 6  # 1.0 to standardise features online, else 0.0
SGD_EPSILON = 7     # eps of "nlms" and "adagrad"
SGD_HEADER = 8

SCHED_CONSTANT = 0
SCHED_INVSCALING = 1
SCHED_NLMS = 2
SCHED_ADAGRAD = 3


def sgd_offsets(m: int, d: int) -> tuple[int, int, int, int]:
    """Offsets of w, G, the running means and the Welford sums in an SGD buffer."""
    return SGD_HEADER, SGD_HEADER + m, SGD_HEADER + 2 * m, SGD_HEADER + 2 * m + d


@njit(cache=True)
def _sgd_features(buf, m, d, x, z):
    """z <- standardised x (if asked) with the intercept column appended."""
    std = buf[SGD_STANDARDIZE] != 0.0
    n = buf[N_SEEN]
    mo = SGD_HEADER + 2 * m
    so = mo + d
    for i in range(d):
        if std:
            var = buf[so + i] / n if n > 0 else 0.0
            if var > 0.0:
                z[i] = (x[i] - buf[mo + i]) / math.sqrt(var)
            else:
                z[i] = 0.0 * x[i]  # stays NaN for a NaN/inf input, so callers can detect it
        else:
            z[i] = x[i]
    if m > d:
        z[d] = 1.0


@njit(cache=True)
def _sgd_step(buf, m, d, x, y, z):
    wo = SGD_HEADER
    go = wo + m
    mo = go + m
    so = mo + d
    n = buf[N_SEEN] + 1.0
    buf[N_SEEN] = n
    if buf[SGD_STANDARDIZE] != 0.0:  # Welford update of the running mean and variance, before the step
        for i in range(d):
            delta = x[i] - buf[mo + i]
            buf[mo + i] += delta / n
            buf[so + i] += delta * (x[i] - buf[mo + i])
    _sgd_features(buf, m, d, x, z)
    yhat = 0.0
    for i in range(m):
        yhat += buf[wo + i] * z[i]
    g = 2.0 * (yhat - y)  # derivative of (y - yhat)^2
    lr = buf[SGD_RATE]
    sched = int(buf[SGD_SCHEDULE])
    eps = buf[SGD_EPSILON]
    if sched == SCHED_CONSTANT:
        for i in range(m):
            buf[wo + i] -= lr * g * z[i]
    elif sched == SCHED_INVSCALING:
        eta = lr / n ** buf[SGD_POWER_T]
        for i in range(m):
            buf[wo + i] -= eta * g * z[i]
    elif sched == SCHED_NLMS:
        nrm = eps
        for i in range(m):
            nrm += z[i] * z[i]
        eta = lr / nrm
        for i in range(m):
            buf[wo + i] += eta * (y - yhat) * z[i]
    else:  # AdaGrad
        for i in range(m):
            gi = g * z[i]
            buf[go + i] += gi * gi
            buf[wo + i] -= lr * gi / (math.sqrt(buf[go + i]) + eps)


@njit(cache=True)
def _sgd_state_ok(buf):
    """Whether every learned value (weights, AdaGrad sums, running moments) is finite."""
    for k in range(SGD_HEADER, buf.shape[0]):
        if not math.isfinite(buf[k]):
            return False
    return True


@njit(cache=True)
def sgd_update_one(buf, x, y):
    """Validate one row then update; on a non-finite result restore the state; status code."""
    status = check_row(buf, x, y)
    if status != OK:
        return status
    m = int(buf[N_WEIGHTS])
    d = int(buf[N_FEATURES])
    z = np.empty(m)
    saved = buf.copy()
    _sgd_step(buf, m, d, x, y, z)
    if not _sgd_state_ok(buf):
        buf[:] = saved
        return NONFINITE
    return OK


@njit(cache=True)
def sgd_update_many(buf, X, y):
    """Validate all rows, then update; ``status * ROW_FACTOR + row`` (the caller restores the state)."""
    m = int(buf[N_WEIGHTS])
    d = int(buf[N_FEATURES])
    n = X.shape[0]
    status = check_rows(X, y)
    if status != OK:
        return status
    z = np.empty(m)
    for r in range(n):
        _sgd_step(buf, m, d, X[r], y[r], z)
        if not _sgd_state_ok(buf):
            return NONFINITE * ROW_FACTOR + r
    return OK


@njit(cache=True, inline="always")
def _sgd_value(buf, m, d, x, z):
    _sgd_features(buf, m, d, x, z)
    s = 0.0
    for i in range(m):
        s += buf[SGD_HEADER + i] * z[i]
    return s


@njit(cache=True)
def sgd_predict_one(buf, x):
    """One row's prediction; NaN if the width is wrong (the caller diagnoses)."""
    m = int(buf[N_WEIGHTS])
    d = int(buf[N_FEATURES])
    if x.shape[0] != d:
        return np.nan
    z = np.empty(m)
    return _sgd_value(buf, m, d, x, z)


@njit(cache=True)
def sgd_predict_many(buf, X, out):
    """Every row's prediction into ``out``."""
    m = int(buf[N_WEIGHTS])
    d = int(buf[N_FEATURES])
    z = np.empty(m)
    for r in range(X.shape[0]):
        out[r] = _sgd_value(buf, m, d, X[r], z)


#: Compiled single-row entry points (see :data:`interfpred.predictors._linear_buffers.FAST`).
FAST = CompiledEntries({
    "sgd_update_one": (sgd_update_one, (BUF_TYPE, ROW_TYPE, nbt.float64)),
    "sgd_predict_one": (sgd_predict_one, (BUF_TYPE, ROW_TYPE)),
})
