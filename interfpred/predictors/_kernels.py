"""numba kernels of the online predictors (private).

Every kernel works on one flat float64 *state buffer* per predictor, so a call passes few
arguments (numba's dispatch cost grows with the number of array arguments).  Single-row
kernels validate their own input (width, finiteness) and return a status code *before*
touching the state, which is cheaper than validating in Python on the hot path.

Status codes: ``OK`` = 0, ``BAD_WIDTH`` = 1, ``BAD_X`` = 2 (NaN/inf in X), ``BAD_Y`` = 3
(NaN/inf in y), ``NOT_PD`` = 4 (the innovation variance f + x'Px is not finite and
positive: the covariance has wound up or lost definiteness; the update is refused),
``X_RANGE`` = 5 (a feature beyond ``FEATURE_ABS_MAX``), ``Y_RANGE`` = 6 (a target beyond
``TARGET_ABS_MAX``), ``NONFINITE`` = 7 (the update would make the state non-finite, or the
covariance's diagonal non-positive; the state is restored).

RLS buffer layout (``m`` = number of weights = d + fit_intercept)::

    [0] n_seen   [1] m   [2] d   [3] forgetting   [4] c = (1-f)/delta with stabilisation, else 0
    [5] noise variance estimate   [6] 1/delta   [7] next coordinate of the stabilising pseudo-observation
    then w (m), w0 (m), P (m*m, covariance, kept exactly symmetric), scratch (m)

SGD buffer layout::

    [0] n_seen   [1] m   [2] d   [3] learning_rate   [4] schedule code   [5] power_t
    [6] standardize flag   [7] eps
    then w (m), G (m, AdaGrad accumulator), mean (d), M2 (d, Welford sums of squares)
"""

from __future__ import annotations

import math

import numpy as np

from interfpred._jit import njit
from interfpred.constants import FEATURE_ABS_MAX, TARGET_ABS_MAX

OK = 0
BAD_WIDTH = 1
BAD_X = 2
BAD_Y = 3
NOT_PD = 4
X_RANGE = 5
Y_RANGE = 6
NONFINITE = 7

RLS_HEADER = 8
SGD_HEADER = 8

SCHED_CONSTANT = 0
SCHED_INVSCALING = 1
SCHED_NLMS = 2
SCHED_ADAGRAD = 3


def status_error(status: int, row: int | None = None, *, kind: str = "RLS") -> Exception:
    """The :class:`~interfpred.errors.InterfpredError` for a kernel's status code (not OK)."""
    from interfpred.errors import InterfpredError

    where = "" if row is None else f" (row {row})"
    if status == BAD_WIDTH:
        return InterfpredError("X has the wrong number of features")
    if status == BAD_X:
        return InterfpredError(f"X contains NaN or inf{where}; features must be finite")
    if status == BAD_Y:
        return InterfpredError(f"y contains NaN or inf{where}; targets must be finite")
    if status == X_RANGE:
        return InterfpredError(f"X has a feature beyond +-{FEATURE_ABS_MAX:g}{where}; refused as non-physical "
                               "(the state is unchanged)")
    if status == Y_RANGE:
        return InterfpredError(f"y is beyond +-{TARGET_ABS_MAX:g}{where}; a slowdown or rate that large is "
                               "non-physical (a glitched timer?); refused, the state is unchanged")
    if status == NONFINITE and kind != "RLS":
        return InterfpredError(f"{kind} update would make the learned state non-finite{where}; refused, the "
                               "state is unchanged (reduce the learning rate or check the input's scale)")
    return InterfpredError(
        f"RLS covariance wound up or lost positive definiteness, or the state would become non-finite{where}; "
        "the update was refused (use stabilize=True, the default, to prevent windup; check the input's scale)")


# ----------------------------------------------------------------------------- RLS


@njit(cache=True)
def _rls_step(buf, m, x, y):
    """One RLS step on a validated row (covariance form, O(m^2), no square roots).

    1. data: z = P x; w += z e / (f + x'P x); P = (P - (z z') / (f + x'P x)) / f
    2. stabilisation (if c > 0): a pseudo-observation "w_j = w0_j" with weight rho = m c,
       j cycling over the coordinates, i.e. R += rho e_j e_j' by Sherman-Morrison.
    Returns OK, or NOT_PD (state then unchanged) if x'P x is not finite and positive.
    """
    d = int(buf[2])
    lam = buf[3]
    c = buf[4]
    wo = RLS_HEADER
    w0o = wo + m
    po = w0o + m
    zo = po + m * m
    # z = P x~ (scratch), q = x~' P x~, a-priori error e
    q = 0.0
    yhat = 0.0
    for i in range(m):
        s = 0.0
        for k in range(d):
            s += buf[po + i * m + k] * x[k]
        if m > d:
            s += buf[po + i * m + d]
        buf[zo + i] = s
        xi = x[i] if i < d else 1.0
        q += xi * s
        yhat += buf[wo + i] * xi
    den = lam + q
    if not (den > 0.0 and den < np.inf):
        return NOT_PD
    e = y - yhat
    g = e / den
    inv_den = 1.0 / den
    inv_lam = 1.0 / lam
    # Full rows, not a triangle: (z_i z_j) == (z_j z_i) exactly in IEEE arithmetic, so P stays
    # exactly symmetric while the inner loop runs over contiguous memory.
    for i in range(m):
        zi = buf[zo + i]
        buf[wo + i] += zi * g
        row = po + i * m
        for j in range(m):
            buf[row + j] = (buf[row + j] - (zi * buf[zo + j]) * inv_den) * inv_lam
    n = buf[0] + 1.0
    buf[0] = n
    if c > 0.0:
        jj = int(buf[7])
        rho = m * c
        pjj = buf[po + jj * m + jj]
        den2 = 1.0 + rho * pjj
        r = (buf[w0o + jj] - buf[wo + jj]) * rho / den2
        for i in range(m):
            buf[zo + i] = buf[po + i * m + jj]
        sc = rho / den2
        for i in range(m):
            zi = buf[zo + i]
            buf[wo + i] += zi * r
            row = po + i * m
            for j in range(m):
                buf[row + j] -= (zi * buf[zo + j]) * sc
        jj += 1
        buf[7] = 0.0 if jj == m else float(jj)
    # exponentially weighted noise variance of the normalised a-priori error
    a = 1.0 - lam
    if a < 1.0 / n:
        a = 1.0 / n
    buf[5] += a * (e * e * lam / den - buf[5])
    return OK


@njit(cache=True)
def _rls_quad(buf, m, x, fi):
    """x~' P x~."""
    d = m - fi
    po = RLS_HEADER + 2 * m
    q = 0.0
    for i in range(m):
        xi = x[i] if i < d else 1.0
        s = 0.0
        for k in range(m):
            xk = x[k] if k < d else 1.0
            s += buf[po + i * m + k] * xk
        q += xi * s
    return q


@njit(cache=True)
def _check_row(buf, x, y):
    """Status of one row against the state's width (buf[2]): width, then finiteness of x and y."""
    d = int(buf[2])
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
    return OK


@njit(cache=True)
def _rls_state_ok(buf, m):
    """Whether w, P and the noise estimate are finite and P's diagonal positive."""
    if not math.isfinite(buf[5]):
        return False
    wo = RLS_HEADER
    po = wo + 2 * m
    for i in range(m):
        if not math.isfinite(buf[wo + i]):
            return False
        if not buf[po + i * m + i] > 0.0:
            return False
    for k in range(m * m):
        if not math.isfinite(buf[po + k]):
            return False
    return True


@njit(cache=True)
def rls_update_one(buf, x, y):
    """Validate one row (width, finiteness) then update; status code."""
    status = _check_row(buf, x, y)
    if status != OK:
        return status
    m = int(buf[1])
    saved = buf.copy()
    status = _rls_step(buf, m, x, y)
    if status == OK and not _rls_state_ok(buf, m):
        status = NONFINITE
    if status != OK:
        buf[:] = saved
    return status


@njit(cache=True)
def _check_rows(X, y):
    """``OK``, or ``status * 2**32 + row`` for the first row with a NaN/inf in X or y."""
    for r in range(X.shape[0]):
        for i in range(X.shape[1]):
            if not math.isfinite(X[r, i]):
                return BAD_X * 4294967296 + r
        if not math.isfinite(y[r]):
            return BAD_Y * 4294967296 + r
        for i in range(X.shape[1]):
            if abs(X[r, i]) > FEATURE_ABS_MAX:
                return X_RANGE * 4294967296 + r
        if abs(y[r]) > TARGET_ABS_MAX:
            return Y_RANGE * 4294967296 + r
    return OK


@njit(cache=True)
def rls_update_many(buf, X, y):
    """Validate all rows first (state untouched on refusal), then update row by row.

    Returns ``status * 2**32 + row`` packed in an int (row of the first bad value)."""
    m = int(buf[1])
    n = X.shape[0]
    status = _check_rows(X, y)
    if status != OK:
        return status
    for r in range(n):
        st = _rls_step(buf, m, X[r], y[r])
        if st == OK and not _rls_state_ok(buf, m):
            st = NONFINITE
        if st != OK:
            return st * 4294967296 + r
    return OK


@njit(cache=True)
def linear_predict_one(buf, x, header):
    """w . x~ for one row; NaN if the width is wrong (the caller diagnoses)."""
    m = int(buf[1])
    d = int(buf[2])
    if x.shape[0] != d:
        return np.nan
    s = 0.0
    for i in range(d):
        s += buf[header + i] * x[i]
    if m > d:
        s += buf[header + d]
    return s


@njit(cache=True)
def linear_predict_many(buf, X, header, out):
    m = int(buf[1])
    d = int(buf[2])
    for r in range(X.shape[0]):
        s = 0.0
        for i in range(d):
            s += buf[header + i] * X[r, i]
        if m > d:
            s += buf[header + d]
        out[r] = s


@njit(cache=True)
def rls_quad_many(buf, X, out):
    m = int(buf[1])
    fi = m - int(buf[2])
    for r in range(X.shape[0]):
        out[r] = _rls_quad(buf, m, X[r], fi)


# ----------------------------------------------------------------------------- SGD


@njit(cache=True)
def _sgd_features(buf, m, d, x, z):
    """z <- standardised x (if asked) with the intercept column appended."""
    std = buf[6] != 0.0
    n = buf[0]
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
    n = buf[0] + 1.0
    buf[0] = n
    if buf[6] != 0.0:  # Welford update of the running mean and variance, before the step
        for i in range(d):
            delta = x[i] - buf[mo + i]
            buf[mo + i] += delta / n
            buf[so + i] += delta * (x[i] - buf[mo + i])
    _sgd_features(buf, m, d, x, z)
    yhat = 0.0
    for i in range(m):
        yhat += buf[wo + i] * z[i]
    g = 2.0 * (yhat - y)  # derivative of (y - yhat)^2
    lr = buf[3]
    sched = int(buf[4])
    eps = buf[7]
    if sched == SCHED_CONSTANT:
        for i in range(m):
            buf[wo + i] -= lr * g * z[i]
    elif sched == SCHED_INVSCALING:
        eta = lr / n ** buf[5]
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
    status = _check_row(buf, x, y)
    if status != OK:
        return status
    m = int(buf[1])
    d = int(buf[2])
    z = np.empty(m)
    saved = buf.copy()
    _sgd_step(buf, m, d, x, y, z)
    if not _sgd_state_ok(buf):
        buf[:] = saved
        return NONFINITE
    return OK


@njit(cache=True)
def sgd_update_many(buf, X, y):
    """Validate all rows, then update; ``status * 2**32 + row`` (the caller restores the state)."""
    m = int(buf[1])
    d = int(buf[2])
    n = X.shape[0]
    status = _check_rows(X, y)
    if status != OK:
        return status
    z = np.empty(m)
    for r in range(n):
        _sgd_step(buf, m, d, X[r], y[r], z)
        if not _sgd_state_ok(buf):
            return NONFINITE * 4294967296 + r
    return OK


@njit(cache=True)
def sgd_predict_one(buf, x):
    m = int(buf[1])
    d = int(buf[2])
    if x.shape[0] != d:
        return np.nan
    z = np.empty(m)
    _sgd_features(buf, m, d, x, z)
    s = 0.0
    for i in range(m):
        s += buf[SGD_HEADER + i] * z[i]
    return s


@njit(cache=True)
def sgd_predict_many(buf, X, out):
    m = int(buf[1])
    d = int(buf[2])
    z = np.empty(m)
    for r in range(X.shape[0]):
        _sgd_features(buf, m, d, X[r], z)
        s = 0.0
        for i in range(m):
            s += buf[SGD_HEADER + i] * z[i]
        out[r] = s


# ----------------------------------------------------------------------------- dispatch-free entry points

from numba import types as _t  # noqa: E402

_BUF = _t.Array(_t.float64, 1, "C")
_ROW = _t.Array(_t.float64, 1, "A")  # any strides: safe for every float64 1-d array
_ENTRY_SPECS = {
    "rls_update_one": (rls_update_one, (_BUF, _ROW, _t.float64)),
    "sgd_update_one": (sgd_update_one, (_BUF, _ROW, _t.float64)),
    "linear_predict_one": (linear_predict_one, (_BUF, _ROW, _t.int64)),
    "sgd_predict_one": (sgd_predict_one, (_BUF, _ROW)),
}


class _Entries:
    """Compiled single-row kernels called without numba's per-call type dispatch.

    Attribute ``name`` is the compiled entry point of kernel ``name`` for (C-contiguous
    float64 buffer, float64 1-d row of any strides, scalar); it is compiled (or loaded from
    numba's on-disk cache) on first access.  Callers must pass exactly those types: the public
    methods check ``type(X) is ndarray``, ``X.dtype is float64``, ``X.ndim == 1`` and a float
    ``y`` before taking this path, and fall back to the validated generic path otherwise.
    """

    def __getattr__(self, name: str):
        if name not in _ENTRY_SPECS:
            raise AttributeError(name)
        disp, sig = _ENTRY_SPECS[name]
        disp.compile(sig)
        ep = disp.overloads[sig].entry_point
        setattr(self, name, ep)
        return ep


FAST = _Entries()
