"""Every registered predictor's defaults stay near the global mean on N-way rows of any feature scale.

Rows simulate measurement runs of 2 to 48 batches served together on one GPU (MPS allows 48
clients): features are the co-runner count, the batch's own share and the co-runners' summed
share, each multiplied by a drawn unit in [1, 1000] (percent, counts, bytes...). The slowdown
grows with the total share requested and the number of co-runners, with log-normal noise. Each
predictor with its defaults is fitted on the first half and then predicts the second half
prequentially (predict, then learn the row), as a serving system would; its MAPE must stay
within ``FACTOR`` times the global mean's on the same rows. A learner whose steps depend on the
features' units (plain SGD on raw rows) diverges here by orders of magnitude.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interfpred.predictors import make_predictor, registered

FACTOR = 2.0
N_ROWS = 240


def nway_rows(seed: int, max_corunners: int, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Features (n, 3) in the given units and slowdowns of simulated N-way runs."""
    rng = np.random.default_rng(seed)
    shares = np.array([10.0, 20.0, 25.0, 33.0, 50.0, 100.0])
    k = rng.integers(1, max_corunners + 1, N_ROWS).astype(float)
    me = rng.choice(shares, N_ROWS)
    others = np.array([rng.choice(shares, int(kk)).sum() for kk in k])
    slowdown = np.maximum(1.0, (me + others) / 100.0) * (1.0 + 0.03 * k) * np.exp(0.2 * rng.standard_normal(N_ROWS))
    X = np.column_stack([k, me / 100.0, others / 100.0]) * units
    return X, slowdown


def prequential_mape(kind: str, X: np.ndarray, y: np.ndarray) -> float:
    p = make_predictor(kind)
    width = p.tags.fixed_width
    if width is not None:  # a fixed counter layout (gpulets): the columns repeated to its width
        X = np.resize(X.T, (width, X.shape[0])).T.copy()
    half = X.shape[0] // 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's convergence warnings on a few rows
        p.fit(X[:half], y[:half])
        pred = np.empty(X.shape[0] - half)
        for i in range(half, X.shape[0]):
            pred[i - half] = p.predict(X[i])
            if p.tags.learns_online:
                p.update(X[i], float(y[i]))
    return float(np.mean(np.abs(pred - y[half:]) / y[half:]))


KINDS = sorted(registered())


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), max_corunners=st.integers(1, 47),
       units=st.lists(st.floats(1.0, 1000.0), min_size=3, max_size=3))
def test_defaults_stay_near_the_global_mean(kind: str, seed: int, max_corunners: int, units: list[float]) -> None:
    X, y = nway_rows(seed, max_corunners, np.asarray(units))
    reference = prequential_mape("global_mean", X, y)
    got = prequential_mape(kind, X, y)
    assert np.isfinite(got) and got <= FACTOR * reference, (
        f"{kind}: MAPE {100 * got:.1f} % vs global mean {100 * reference:.1f} % (limit x{FACTOR:g})")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), max_corunners=st.integers(1, 47),
       units=st.lists(st.floats(1.0, 1000.0), min_size=3, max_size=3))
def test_online_sgd_learns_the_rate_near_the_global_mean(seed: int, max_corunners: int, units: list[float]) -> None:
    """On the rate target (1 / slowdown), scored on latency through the one clamped conversion."""
    from interfpred._core.targets import latency_from_prediction

    X, y = nway_rows(seed, max_corunners, np.asarray(units))
    half = X.shape[0] // 2
    errs = {}
    for kind in ("online_sgd", "global_mean"):
        p = make_predictor(kind).fit(X[:half], 1.0 / y[:half])
        pred = np.empty(X.shape[0] - half)
        for i in range(half, X.shape[0]):
            pred[i - half] = p.predict(X[i])
            p.update(X[i], float(1.0 / y[i]))
        lat = latency_from_prediction(pred, np.ones(pred.shape[0]), "rate")
        errs[kind] = float(np.mean(np.abs(lat - y[half:]) / y[half:]))
    assert errs["online_sgd"] <= FACTOR * errs["global_mean"], errs


def test_the_rows_are_hard_for_unscaled_sgd() -> None:
    """The check can fail: scikit-learn's SGD on raw rows of these units diverges."""
    X, y = nway_rows(0, 47, np.array([1.0, 100.0, 1000.0]))
    bad = make_predictor("sklearn", standardize=False)
    good = make_predictor("sklearn")
    half = N_ROWS // 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad.fit(X[:half], y[:half])
        good.fit(X[:half], y[:half])
        err_bad = np.mean(np.abs(bad.predict(X[half:]) - y[half:]) / y[half:])
        err_good = np.mean(np.abs(good.predict(X[half:]) - y[half:]) / y[half:])
    assert err_bad > 100 * err_good
