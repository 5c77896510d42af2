"""The dense RLS step's covariance update: correction and stabilising pseudo-observation in one pass
(``correct_and_observe``, what EntityRLS's joint covariance runs) beside the two passes it replaces
(``rank_one_correct`` then ``pseudo_observe``), at several parameter counts. Both give the same bits
(checked here before timing); the ratio is two passes / one pass (> 1: the one pass is faster).

Run from the repository root: ``python benchmarks/bench_rls_step.py``.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from interfpred._core.jit import njit  # noqa: E402
from interfpred.predictors._linear_buffers import correct_and_observe, pseudo_observe, rank_one_correct  # noqa: E402


@njit
def two_passes(w, P, z, m, ps, gain, inv_den, inv_lam, jj, target, rho, reps):
    for _ in range(reps):
        rank_one_correct(w, 0, P, 0, ps, z, 0, m, gain, inv_den, inv_lam)
        pseudo_observe(w, 0, P, 0, ps, z, 0, m, jj, target, rho)


@njit
def one_pass(w, P, z, m, ps, gain, inv_den, inv_lam, jj, target, rho, reps, c):
    for _ in range(reps):
        correct_and_observe(w, 0, P, 0, ps, z, 0, m, gain, inv_den, inv_lam, jj, target, rho, c)


def main() -> None:
    print(f"{'parameters':>10}  {'two passes':>11}  {'one pass':>9}  ratio")
    for m, cap in ((64, 128), (200, 256), (400, 512)):
        rng = np.random.default_rng(0)
        A = rng.random((cap, cap))
        P0 = (A @ A.T / cap + np.eye(cap)).reshape(-1)
        z0, w0 = rng.random(cap), rng.random(cap)
        args = (m, cap, 0.01, 0.5, 1.0 / 0.995, 3, 0.2, 0.003)
        Pa, Pb, wa, wb = P0.copy(), P0.copy(), w0.copy(), w0.copy()
        two_passes(wa, Pa, z0.copy(), *args, 1)
        one_pass(wb, Pb, z0.copy(), *args, 1, np.empty(cap))
        assert np.array_equal(Pa, Pb) and np.array_equal(wa, wb), "one pass must equal two passes to the bit"
        reps = max(1, int(4e7 / m ** 2))
        ta = tb = float("inf")
        for _ in range(5):
            P = P0.copy()
            t = time.perf_counter()
            two_passes(w0.copy(), P, z0.copy(), *args, reps)
            ta = min(ta, time.perf_counter() - t)
            P = P0.copy()
            t = time.perf_counter()
            one_pass(w0.copy(), P, z0.copy(), *args, reps, np.empty(cap))
            tb = min(tb, time.perf_counter() - t)
        print(f"{m:>10}  {1e6 * ta / reps:>8.2f} us  {1e6 * tb / reps:>6.2f} us  {ta / tb:.2f}x")


if __name__ == "__main__":
    main()
