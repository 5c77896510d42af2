"""Compiled state buffers of the linear predictors (RLS, OfflineLinear): their layout, row checks,
prediction, and the RLS rank-one step that EntityRLS shares.

Every compiled function works on one flat float64 *state buffer* per predictor, so a call passes
few arguments (numba's dispatch cost grows with the number of array arguments). Single-row
entry points validate their own input (width, finiteness, range) and return a status code
(:mod:`interfpred.predictors._status`) *before* touching the state, which is cheaper than
validating in Python on the hot path. Each header slot has a name below, defined once; no
function or class indexes a buffer with a bare number.

The RLS rank-one step (:func:`rank_one_correct`, :func:`pseudo_observe`, :func:`noise_update`;
on a flat buffer :func:`rls_correct` and :func:`rls_finish_row`) works on arrays and offsets,
so RLS runs it on its buffer and EntityRLS on its global block or its joint covariance, with the
same arithmetic.

Small helpers are inlined into the functions that call them (``inline="always"``); whole steps
are not (inlining a step into its driver's loop measured 1.6x slower at d = 24).

Every linear buffer starts with ``N_SEEN``, ``N_WEIGHTS`` (``m`` = d + fit_intercept) and
``N_FEATURES`` (``d``); the weights follow its header (``LINEAR_HEADER``, ``RLS_HEADER``).

RLS buffer: header (``RLS_HEADER`` slots), then w (m), w0 (m, the prior mean), P (m*m, the
covariance, kept exactly symmetric), scratch z (m).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types as nbt

from interfpred._core.jit import CompiledEntries, njit
from interfpred.constants import FEATURE_ABS_MAX, TARGET_ABS_MAX
from interfpred.predictors._status import BAD_WIDTH, BAD_X, BAD_Y, NONFINITE, NOT_PD, OK, ROW_FACTOR, X_RANGE, Y_RANGE

# -- slots of every linear buffer
N_SEEN = 0          # observations learned
N_WEIGHTS = 1       # m = d + fit_intercept
N_FEATURES = 2      # d
#: OfflineLinear's buffer: the three slots above, then w (m).
LINEAR_HEADER = 3

# -- RLS header (EntityRLS's header starts with the same slots)
RLS_FORGETTING = 3  # forgetting factor f
RLS_STAB = 4        # c = (1 - f) / delta with stabilised forgetting, else 0
RLS_NOISE_VAR = 5   # exponentially weighted noise variance estimate
RLS_INV_DELTA = 6   # 1 / delta
RLS_CYCLE = 7       # next coordinate of the stabilising pseudo-observation
RLS_HEADER = 8


@njit(cache=True, inline="always")
def rls_offsets(header, m):
    """Offsets of w, w0, P and the scratch z in an RLS block that starts at ``header``."""
    return header, header + m, header + 2 * m, header + 2 * m + m * m


# ----------------------------------------------------------------------------- input checks


@njit(cache=True)
def check_row(buf, x, y):
    """Status of one row against the buffer's width: width, then finiteness and range of x and y."""
    d = int(buf[N_FEATURES])
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
def check_rows(X, y):
    """``OK``, or ``status * ROW_FACTOR + row`` for the first row with a NaN/inf or out-of-range value."""
    for r in range(X.shape[0]):
        for i in range(X.shape[1]):
            if not math.isfinite(X[r, i]):
                return BAD_X * ROW_FACTOR + r
        if not math.isfinite(y[r]):
            return BAD_Y * ROW_FACTOR + r
        for i in range(X.shape[1]):
            if abs(X[r, i]) > FEATURE_ABS_MAX:
                return X_RANGE * ROW_FACTOR + r
        if abs(y[r]) > TARGET_ABS_MAX:
            return Y_RANGE * ROW_FACTOR + r
    return OK


# ----------------------------------------------------------------------------- the RLS step (shared)


@njit(cache=True, inline="always")
def rls_prepare(buf, m, d, x, wo, po, zo):
    """z = P x~ into the scratch, and (x~' P x~, w . x~) for the RLS block at offsets wo, po, zo."""
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
    return q, yhat


@njit(cache=True, inline="always")
def rank_one_correct(w, wo, P, po, ps, z, zo, m, gain, inv_den, inv_lam):
    """The RLS data correction over m coordinates: w += z gain; P = (P - z z' / den) / f.

    ``w[wo:wo + m]`` are the weights, ``z[zo:zo + m]`` the gain direction P x~, and row i of the
    covariance starts at ``P[po + i * ps]`` (``ps`` the row stride; P, w and z may be one buffer).
    Full rows, not a triangle: (z_i z_j) == (z_j z_i) exactly in IEEE arithmetic, so P stays
    exactly symmetric while the inner loop runs over contiguous memory.
    """
    for i in range(m):
        zi = z[zo + i]
        w[wo + i] += zi * gain
        row = po + i * ps
        for j in range(m):
            P[row + j] = (P[row + j] - (zi * z[zo + j]) * inv_den) * inv_lam


@njit(cache=True, inline="always")
def pseudo_observe(w, wo, P, po, ps, z, zo, m, jj, target, rho):
    """Stabilised forgetting: a pseudo-observation "w_jj = target" of weight ``rho`` (Sherman-Morrison),
    on the layout of :func:`rank_one_correct` (``z`` is scratch)."""
    den2 = 1.0 + rho * P[po + jj * ps + jj]
    r = (target - w[wo + jj]) * rho / den2
    for i in range(m):
        z[zo + i] = P[po + i * ps + jj]
    sc = rho / den2
    for i in range(m):
        zi = z[zo + i]
        w[wo + i] += zi * r
        row = po + i * ps
        for j in range(m):
            P[row + j] -= (zi * z[zo + j]) * sc


@njit(cache=True)
def correct_and_observe(w, wo, P, po, ps, z, zo, m, gain, inv_den, inv_lam, jj, target, rho, c):
    """:func:`rank_one_correct`, then :func:`pseudo_observe` of "w_jj = target" of weight ``rho``, in
    one pass over P instead of two (the covariance is read and written once per row).

    The same arithmetic, operation by operation: ``c`` (m,) first receives column ``jj`` of the
    corrected covariance, computed exactly as the correction computes it, and each corrected entry
    is then observed before it is stored. The result equals the two passes to the bit.
    """
    zj = z[zo + jj]
    for i in range(m):
        c[i] = (P[po + i * ps + jj] - (z[zo + i] * zj) * inv_den) * inv_lam
    den2 = 1.0 + rho * c[jj]
    r = (target - (w[wo + jj] + zj * gain)) * rho / den2
    sc = rho / den2
    for i in range(m):
        zi = z[zo + i]
        ci = c[i]
        w[wo + i] = (w[wo + i] + zi * gain) + ci * r
        row = po + i * ps
        for j in range(m):
            P[row + j] = (P[row + j] - (zi * z[zo + j]) * inv_den) * inv_lam - (ci * c[j]) * sc


@njit(cache=True, inline="always")
def rls_correct(buf, m, wo, po, zo, gain, inv_den, inv_lam):
    """:func:`rank_one_correct` of the RLS block of ``buf`` at offsets wo, po, zo."""
    rank_one_correct(buf, wo, buf, po, m, buf, zo, m, gain, inv_den, inv_lam)


@njit(cache=True, inline="always")
def rls_stabilise(buf, m, wo, w0o, po, zo, c):
    """Stabilised forgetting of the RLS block of ``buf``: :func:`pseudo_observe` of "w_j = w0_j" with
    weight rho = m c, j cycling over the coordinates (``RLS_CYCLE``)."""
    jj = int(buf[RLS_CYCLE])
    pseudo_observe(buf, wo, buf, po, m, buf, zo, m, jj, buf[w0o + jj], m * c)
    jj += 1
    buf[RLS_CYCLE] = 0.0 if jj == m else float(jj)


@njit(cache=True, inline="always")
def noise_update(buf, lam, n, e, den):
    """Exponentially weighted noise variance of the normalised a-priori error ``e``."""
    a = 1.0 - lam
    if a < 1.0 / n:
        a = 1.0 / n
    buf[RLS_NOISE_VAR] += a * (e * e * lam / den - buf[RLS_NOISE_VAR])


@njit(cache=True, inline="always")
def rls_finish_row(buf, m, wo, w0o, po, zo, c, lam, e, den):
    """What follows the data correction of a row in the RLS block of ``buf``: count the row, run the
    stabilising pseudo-observation (``c > 0``), update the noise estimate from the error ``e``."""
    n = buf[N_SEEN] + 1.0
    buf[N_SEEN] = n
    if c > 0.0:
        rls_stabilise(buf, m, wo, w0o, po, zo, c)
    noise_update(buf, lam, n, e, den)


# ----------------------------------------------------------------------------- RLS


@njit(cache=True)
def _rls_step(buf, m, x, y):
    """One RLS step on a validated row (covariance form, O(m^2), no square roots).

    1. data: z = P x; w += z e / (f + x'P x); P = (P - (z z') / (f + x'P x)) / f
    2. stabilisation (if c > 0): a pseudo-observation "w_j = w0_j" with weight rho = m c,
       j cycling over the coordinates, i.e. R += rho e_j e_j' by Sherman-Morrison.
    Returns OK, or NOT_PD (state then unchanged) if x'P x is not finite and positive.
    """
    d = int(buf[N_FEATURES])
    lam = buf[RLS_FORGETTING]
    c = buf[RLS_STAB]
    wo, w0o, po, zo = rls_offsets(RLS_HEADER, m)
    q, yhat = rls_prepare(buf, m, d, x, wo, po, zo)
    den = lam + q
    if not (den > 0.0 and den < np.inf):
        return NOT_PD
    e = y - yhat
    rls_correct(buf, m, wo, po, zo, e / den, 1.0 / den, 1.0 / lam)
    rls_finish_row(buf, m, wo, w0o, po, zo, c, lam, e, den)
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
def _rls_state_ok(buf, m):
    """Whether the noise estimate, w and P are finite and P's diagonal positive."""
    if not math.isfinite(buf[RLS_NOISE_VAR]):
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
    status = check_row(buf, x, y)
    if status != OK:
        return status
    m = int(buf[N_WEIGHTS])
    saved = buf.copy()
    status = _rls_step(buf, m, x, y)
    if status == OK and not _rls_state_ok(buf, m):
        status = NONFINITE
    if status != OK:
        buf[:] = saved
    return status


@njit(cache=True)
def rls_update_many(buf, X, y):
    """Validate all rows first (state untouched on refusal), then update row by row.

    Returns ``status * ROW_FACTOR + row`` (row of the first refusal), or OK."""
    m = int(buf[N_WEIGHTS])
    n = X.shape[0]
    status = check_rows(X, y)
    if status != OK:
        return status
    for r in range(n):
        st = _rls_step(buf, m, X[r], y[r])
        if st == OK and not _rls_state_ok(buf, m):
            st = NONFINITE
        if st != OK:
            return st * ROW_FACTOR + r
    return OK


@njit(cache=True, inline="always")
def linear_value(buf, m, d, x, header):
    s = 0.0
    for i in range(d):
        s += buf[header + i] * x[i]
    if m > d:
        s += buf[header + d]
    return s


@njit(cache=True)
def linear_predict_one(buf, x, header):
    """w . x~ for one row, w at ``header``; NaN if the width is wrong (the caller diagnoses)."""
    m = int(buf[N_WEIGHTS])
    d = int(buf[N_FEATURES])
    if x.shape[0] != d:
        return np.nan
    return linear_value(buf, m, d, x, header)


@njit(cache=True)
def linear_predict_many(buf, X, header, out):
    """w . x~ for every row into ``out``, w at ``header``."""
    m = int(buf[N_WEIGHTS])
    d = int(buf[N_FEATURES])
    for r in range(X.shape[0]):
        out[r] = linear_value(buf, m, d, X[r], header)


@njit(cache=True)
def rls_quad_many(buf, X, out):
    """x~' P x~ for every row into ``out``."""
    m = int(buf[N_WEIGHTS])
    fi = m - int(buf[N_FEATURES])
    for r in range(X.shape[0]):
        out[r] = _rls_quad(buf, m, X[r], fi)


# ----------------------------------------------------------------------------- dispatch-free entry points

#: Types of the single-row entry points: a C-contiguous float64 buffer, a float64 row of any strides.
BUF_TYPE = nbt.Array(nbt.float64, 1, "C")
ROW_TYPE = nbt.Array(nbt.float64, 1, "A")

#: Compiled single-row entry points called without numba's per-call type dispatch (see
#: :func:`interfpred._core.jit.compiled_entry`): callers check ``type(X) is ndarray``, float64,
#: ``X.ndim == 1`` and a float ``y`` first, and take the validated generic path otherwise.
@njit(cache=True)
def rls_predict_one(buf, x):
    """:func:`linear_predict_one` of an RLS buffer (weights after ``RLS_HEADER``)."""
    return linear_predict_one(buf, x, RLS_HEADER)


@njit(cache=True)
def offline_predict_one(buf, x):
    """:func:`linear_predict_one` of an OfflineLinear buffer (weights after ``LINEAR_HEADER``)."""
    return linear_predict_one(buf, x, LINEAR_HEADER)


FAST = CompiledEntries({
    "rls_update_one": (rls_update_one, (BUF_TYPE, ROW_TYPE, nbt.float64)),
    "rls_predict_one": (rls_predict_one, (BUF_TYPE, ROW_TYPE)),
    "offline_predict_one": (offline_predict_one, (BUF_TYPE, ROW_TYPE)),
})
