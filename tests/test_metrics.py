"""Tests of the accuracy metrics against direct definitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred.errors import InterfpredError
from interfpred.evaluation import metrics


def test_against_direct_definitions():
    rng = np.random.default_rng(0)
    obs = rng.uniform(1, 3, 500)
    pred = obs * rng.uniform(0.5, 1.7, 500)
    err = np.abs(pred - obs) / obs
    s = metrics.accuracy_summary(pred, obs)
    assert s.n == 500
    assert s.mse == pytest.approx(np.mean((pred - obs) ** 2))
    assert s.mape == pytest.approx(err.mean())
    assert s.within_10 == pytest.approx(np.mean(err <= 0.1))
    assert s.within_20 == pytest.approx(np.mean(err <= 0.2))
    assert s.p90 == pytest.approx(np.quantile(err, 0.9))
    assert s.beyond_60 == pytest.approx(np.mean(err > 0.6))
    assert s.under == pytest.approx(np.mean(obs > 1.5 * pred))
    assert set(s.as_dict()) >= {"mse", "mape", "within_10", "p99"}


def test_errors_on_bad_input():
    with pytest.raises(InterfpredError, match="predicted has 2 values, observed has 3"):
        metrics.mse([1, 2], [1, 2, 3])
    with pytest.raises(InterfpredError, match="zero predictions"):
        metrics.mape([], [])
    with pytest.raises(InterfpredError, match="non-finite"):
        metrics.mape([np.nan], [1.0])
    with pytest.raises(InterfpredError, match="zeros"):
        metrics.mape([1.0], [0.0])
    with pytest.raises(InterfpredError, match="tolerance"):
        metrics.share_within([1.0], [1.0], -0.1)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0.1, 100), st.floats(0.1, 100)), min_size=1, max_size=50))
def test_cdf_is_monotone_and_ends_at_one(pairs):
    pred, obs = zip(*pairs)
    x, f = metrics.relative_error_cdf(pred, obs)
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(f) > 0)
    assert f[-1] == 1.0
    assert metrics.share_within(pred, obs, float(x[-1])) == 1.0
