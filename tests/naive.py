"""Plain numpy / plain Python reference implementations that kernels are checked against."""

from __future__ import annotations

import numpy as np


# --- predictors (issue 4) -------------------------------------------------------------------------------------------
def naive_ew_ridge(X, y, *, forgetting, delta, w0, stabilize):
    """Closed-form exponentially weighted ridge regression, the RLS target.

    Minimises sum_i f**(t-i) (y_i - w.x_i)^2 + (w - w0)^T Q (w - w0) with Q = I/delta when
    ``stabilize`` (stabilised forgetting) and Q = f**t I/delta for plain RLS (the prior decays
    like the data).  X already includes any constant column.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    t, m = X.shape
    weights = forgetting ** np.arange(t - 1, -1, -1, dtype=float)
    Q = np.eye(m) / delta * (1.0 if stabilize else forgetting**t)
    A = X.T @ (weights[:, None] * X) + Q
    b = X.T @ (weights * y) + Q @ w0
    return np.linalg.solve(A, b), A


def naive_sgd_constant(X, y, *, learning_rate, intercept_init=1.0):
    """Plain-Python SGD on (y - w.x - b)^2 with a constant rate, weights and intercept alike."""
    w = [0.0] * len(X[0])
    b = intercept_init
    for x, t in zip(X, y):
        yhat = sum(wi * xi for wi, xi in zip(w, x)) + b
        g = 2.0 * (yhat - t)
        b -= learning_rate * g
        w = [wi - learning_rate * g * xi for wi, xi in zip(w, x)]
    return np.array(w), b


def naive_nlms(X, y, *, learning_rate, eps, intercept_init=1.0):
    """Plain-Python normalised LMS with an appended constant feature."""
    m = len(X[0]) + 1
    w = [0.0] * (m - 1) + [intercept_init]
    for x, t in zip(X, y):
        z = list(x) + [1.0]
        e = t - sum(wi * zi for wi, zi in zip(w, z))
        nrm = eps + sum(zi * zi for zi in z)
        w = [wi + learning_rate * e * zi / nrm for wi, zi in zip(w, z)]
    return np.array(w)
