"""The vectorisable exponential against numpy's, over its whole range and at its edges."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred._core.vmath import EXP_ARG_MAX, EXP_ARG_MIN, exp_into


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units in the last place between positive normal doubles."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


def test_within_one_ulp_of_numpy_over_the_whole_range():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(EXP_ARG_MIN, EXP_ARG_MAX, 200_000), rng.uniform(-1.0, 1.0, 100_000),
                        np.arange(-708.0, 709.0, 0.5), np.log(2.0) * np.arange(-1021, 1023) / 2.0])
    out = np.empty_like(x)
    exp_into(x, out, x.shape[0])
    assert _ulps(out, np.exp(x)).max() <= 1


def test_exact_where_the_answer_is_exact():
    x = np.array([0.0, -0.0])
    out = np.empty(2)
    exp_into(x, out, 2)
    assert out.tolist() == [1.0, 1.0]


def test_nan_stays_nan_and_the_argument_is_clamped():
    x = np.array([np.nan, -np.inf, np.inf, -1e300, 1e300, -745.0, 710.0])
    out = np.empty(7)
    exp_into(x, out, 7)
    assert np.isnan(out[0])
    edge = np.empty(2)
    exp_into(np.array([EXP_ARG_MIN, EXP_ARG_MAX]), edge, 2)
    assert out[1] == out[3] == out[5] == edge[0]
    assert out[2] == out[4] == out[6] == edge[1]
    assert _ulps(edge, np.exp([EXP_ARG_MIN, EXP_ARG_MAX])).max() <= 1
    assert np.isfinite(out[1:]).all()


def test_only_the_first_n_are_written_and_in_place_works():
    x = np.array([1.0, 2.0, 3.0])
    out = np.full(3, -1.0)
    exp_into(x, out, 2)
    assert out[2] == -1.0
    exp_into(x, x, 3)
    assert _ulps(x, np.exp([1.0, 2.0, 3.0])).max() <= 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=EXP_ARG_MIN, max_value=EXP_ARG_MAX), min_size=1, max_size=40))
def test_any_argument_in_range_is_within_one_ulp(values):
    x = np.array(values)
    out = np.empty_like(x)
    exp_into(x, out, x.shape[0])
    assert _ulps(out, np.exp(x)).max() <= 1
