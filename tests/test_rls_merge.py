"""RLS.merge: information-form fleet learning, exact with forgetting 1, per-device ageing otherwise."""

from __future__ import annotations

import numpy as np
import pytest
from naive import naive_ew_ridge

from interfpred import RLS, InterfpredError


def _data(n, seed=0, d=3):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    return X, 0.9 - X @ np.array([0.2, 0.1, 0.05])[:d] + 0.01 * rng.normal(size=n)


@pytest.mark.parametrize("stabilize", [True, False])
def test_forgetting_one_equals_one_rls_on_both_streams(stabilize):
    X, y = _data(300)
    a = RLS(forgetting=1.0, stabilize=stabilize)
    b = RLS(forgetting=1.0, stabilize=stabilize)
    c = RLS(forgetting=1.0, stabilize=stabilize)
    a.update(X[:120], y[:120])
    b.update(X[120:250], y[120:250])
    c.update(X[250:], y[250:])
    one = RLS(forgetting=1.0, stabilize=stabilize)
    one.update(X, y)
    a.merge(b).merge(c)
    np.testing.assert_allclose(a.coef_, one.coef_, rtol=1e-9, atol=1e-12)
    assert a.intercept_ == pytest.approx(one.intercept_, rel=1e-9)
    np.testing.assert_allclose(a.covariance_, one.covariance_, rtol=1e-7, atol=1e-12)
    assert a.n_seen_ == 300
    assert np.array_equal(a.covariance_, a.covariance_.T)


@pytest.mark.parametrize("stabilize", [True, False])
def test_forgetting_below_one_keeps_per_device_ages(stabilize):
    f, delta = 0.97, 50.0
    X, y = _data(200, seed=1)
    Xa, ya, Xb, yb = X[:120], y[:120], X[120:], y[120:]
    a = RLS(forgetting=f, delta=delta, stabilize=stabilize)
    b = RLS(forgetting=f, delta=delta, stabilize=stabilize)
    a.update(Xa, ya)
    b.update(Xb, yb)
    w0 = np.array([0.0, 0.0, 0.0, 1.0])
    one = np.ones((len(Xa), 1))
    _, Ra = naive_ew_ridge(np.hstack([Xa, one]), ya, forgetting=f, delta=delta, w0=w0, stabilize=stabilize)
    wa, _ = naive_ew_ridge(np.hstack([Xa, one]), ya, forgetting=f, delta=delta, w0=w0, stabilize=stabilize)
    # b's data with its own ages, added to a's closed form
    Xb1 = np.hstack([Xb, np.ones((len(Xb), 1))])
    ages = f ** np.arange(len(Xb) - 1, -1, -1, dtype=float)
    R = Ra + Xb1.T @ (ages[:, None] * Xb1)
    eta = Ra @ wa + Xb1.T @ (ages * yb)
    want = np.linalg.solve(R, eta)
    a.merge(b)
    np.testing.assert_allclose(np.append(a.coef_, a.intercept_), want, rtol=1e-7, atol=1e-10)


def test_fresh_sides_and_refusals():
    X, y = _data(50)
    a = RLS(forgetting=1.0)
    b = RLS(forgetting=1.0)
    b.update(X, y)
    before = b.coef_.copy()
    b.merge(RLS(forgetting=1.0))                 # nothing learned on the other side: unchanged
    assert np.array_equal(b.coef_, before)
    a.merge(b)                                   # a fresh model takes the other's data part
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)
    with pytest.raises(InterfpredError, match="same hyperparameters"):
        a.merge(RLS(forgetting=0.9))
    wide = RLS(forgetting=1.0)
    wide.update(np.ones((3, 4)), np.ones(3))
    state = a.coef_.copy()
    with pytest.raises(InterfpredError, match="same width"):
        a.merge(wide)
    assert np.array_equal(a.coef_, state)
    with pytest.raises(InterfpredError, match="needs an RLS"):
        a.merge(object())
