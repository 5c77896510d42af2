"""The RLS rank-one kernels against plain numpy: the correction, the stabilising pseudo-observation,
and the two in one pass (which must equal the two passes to the bit)."""

from __future__ import annotations

import numpy as np
import pytest

from interfpred._core.jit import njit
from interfpred.predictors._linear_buffers import correct_and_observe, pseudo_observe, rank_one_correct


@njit
def _two_passes(w, P, z, m, ps, gain, inv_den, inv_lam, jj, target, rho):
    rank_one_correct(w, 0, P, 0, ps, z, 0, m, gain, inv_den, inv_lam)
    pseudo_observe(w, 0, P, 0, ps, z, 0, m, jj, target, rho)


def _case(seed: int, m: int, cap: int):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((cap, cap))
    P = A @ A.T / cap + np.eye(cap)
    z = rng.standard_normal(cap)
    w = rng.standard_normal(cap)
    jj = int(rng.integers(m))
    scal = (float(rng.normal()), float(rng.uniform(0.1, 2.0)), 1.0 / float(rng.uniform(0.9, 1.0)), jj,
            float(rng.normal()), float(rng.uniform(0.0, 0.5)))
    return P, z, w, scal


def _numpy_reference(P, z, w, m, gain, inv_den, inv_lam, jj, target, rho):
    P, w = P.copy(), w.copy()
    zm = z[:m]
    w[:m] += zm * gain
    P[:m, :m] = (P[:m, :m] - np.outer(zm, zm) * inv_den) * inv_lam
    col = P[:m, jj].copy()
    den2 = 1.0 + rho * P[jj, jj]
    w[:m] += col * ((target - w[jj]) * rho / den2)
    P[:m, :m] -= np.outer(col, col) * (rho / den2)
    return P, w


@pytest.mark.parametrize("seed,m,cap", [(0, 1, 1), (1, 5, 8), (2, 37, 64), (3, 64, 64), (4, 130, 256)])
def test_one_pass_equals_two_passes_to_the_bit_and_numpy(seed, m, cap):
    P, z, w, (gain, inv_den, inv_lam, jj, target, rho) = _case(seed, m, cap)
    Pa, wa, za = P.reshape(-1).copy(), w.copy(), z.copy()
    _two_passes(wa, Pa, za, m, cap, gain, inv_den, inv_lam, jj, target, rho)
    Pb, wb, zb = P.reshape(-1).copy(), w.copy(), z.copy()
    correct_and_observe(wb, 0, Pb, 0, cap, zb, 0, m, gain, inv_den, inv_lam, jj, target, rho, np.empty(m))
    assert np.array_equal(Pa, Pb) and np.array_equal(wa, wb)
    assert np.array_equal(zb, z)        # the gain direction is left as it was
    Pr, wr = _numpy_reference(P, z, w, m, gain, inv_den, inv_lam, jj, target, rho)
    np.testing.assert_allclose(Pb.reshape(cap, cap), Pr, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(wb, wr, rtol=1e-12, atol=1e-12)
    # entries outside the m x m block are untouched
    untouched = np.ones((cap, cap), dtype=bool)
    untouched[:m, :m] = False
    assert np.array_equal(Pb.reshape(cap, cap)[untouched], P[untouched])
