"""Plain-Python reference implementations that the library's fast paths are checked against.

Shared file: each area appends its own clearly named functions; do not rewrite others'.
"""

from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------- ingest (issue 2)


def naive_profile_numbers(durations_ms, sm, l2, dram, iterations=1):
    """(solo_ms, sm, l2, dram) of a list of kernel launches: summed time / iterations and
    duration-weighted means, one launch at a time."""
    total = 0.0
    acc = [0.0, 0.0, 0.0]
    for d, a, b, c in zip(durations_ms, sm, l2, dram):
        total += d
        acc[0] += d * a
        acc[1] += d * b
        acc[2] += d * c
    return total / iterations, acc[0] / total, acc[1] / total, acc[2] / total


def naive_details_page(path_or_lines):
    """Read an ncu ``--page details`` CSV the slow obvious way: pivot every metric row into a
    dict per (Process ID, ID), keeping all metrics as (unit, value text) pairs."""
    import csv

    if isinstance(path_or_lines, str):
        with open(path_or_lines, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    else:
        lines = list(path_or_lines)
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    rows = list(csv.reader(lines[start:]))
    header = rows[0]
    kernels: dict = {}
    for row in rows[1:]:
        if len(row) < header.index("Metric Value") + 1 or not row[0].isdigit():
            continue
        rec = dict(zip(header, row))
        key = (rec.get("Process ID", ""), rec["ID"])
        k = kernels.setdefault(key, {"name": rec["Kernel Name"], "metrics": {}})
        if rec["Metric Name"]:
            k["metrics"].setdefault(rec["Metric Name"], (rec["Metric Unit"], rec["Metric Value"]))
    return list(kernels.values())


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
