"""Plain numpy / plain Python reference implementations that kernels are checked against."""

from __future__ import annotations

import numpy as np


# --- predictors (issue 4) -------------------------------------------------------------------------------------------
def naive_ew_ridge(X, y, *, forgetting, delta, w0, stabilize):
    """Closed-form exponentially weighted ridge regression, the RLS target.

    Minimises sum_i f**(t-i) [(y_i - w.x_i)^2 + rho (w_j(i) - w0_j(i))^2] + f**t (w - w0)' (w - w0) / delta
    with rho = m (1 - f) / delta and j(i) = (i - 1) mod m the stabilising pseudo-observation of
    step i (rho = 0 for plain RLS).  X already includes any constant column.  Returns the
    solution and the information matrix.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    t, m = X.shape
    weights = forgetting ** np.arange(t - 1, -1, -1, dtype=float)
    A = X.T @ (weights[:, None] * X) + forgetting**t * np.eye(m) / delta
    b = X.T @ (weights * y) + forgetting**t * np.asarray(w0) / delta
    if stabilize:
        rho = m * (1.0 - forgetting) / delta
        for i in range(t):
            j = i % m
            A[j, j] += weights[i] * rho
            b[j] += weights[i] * rho * w0[j]
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
