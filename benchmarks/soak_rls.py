"""Soak: 10,000,000 RLS updates at forgetting 0.99 with one of six features active.

Checks that the weights and covariance stay finite and the covariance symmetric positive
definite (and bounded by delta * I, the stabilised-forgetting guarantee); for contrast runs
plain RLS (stabilize=False) at forgetting 0.95 and reports when its covariance overflows.
Run: ``python benchmarks/soak_rls.py [--n 10000000]``.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from interfpred import RLS  # noqa: E402

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    rls = RLS(forgetting=0.99)
    t0 = time.perf_counter()
    done = 0
    while done < a.n:
        k = min(a.chunk, a.n - done)
        X = np.zeros((k, 6))
        X[:, 0] = rng.random(k)
        rls.update(X, 1.0 + 0.5 * X[:, 0] + 0.01 * rng.normal(size=k))
        done += k
        P = rls.covariance_
        ev = np.linalg.eigvalsh(P)
        ok = np.isfinite(P).all() and np.isfinite(rls.coef_).all() and ev.min() > 0 and np.array_equal(P, P.T)
        print(f"{done:>11,d} updates  finite+SPD={ok}  eig(P) in [{ev.min():.3g}, {ev.max():.3g}]  "
              f"coef0={rls.coef_[0]:.4f}  {time.perf_counter() - t0:.1f}s", flush=True)
        if not ok:
            sys.exit(1)
    assert np.linalg.eigvalsh(rls.covariance_).max() <= rls.delta * rls.forgetting ** -6
    plain = RLS(forgetting=0.95, stabilize=False)
    X = np.zeros((20_000, 6))
    X[:, 0] = rng.random(20_000)
    y = 1.0 + 0.5 * X[:, 0]
    for i in range(20_000):
        try:
            plain.update(X[i], float(y[i]))
        except ValueError as exc:
            print(f"contrast: plain RLS (forgetting 0.95) refused update {i + 1:,d}: {exc}")
            break
    print(f"soak passed: {a.n:,d} updates ({a.n / (time.perf_counter() - t0) / 1e6:.2f} M updates/s)")
