"""Incremental affine projection: same answers as the per-segment definition, every map and combine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_feature_map, naive_tracker_projection

from interfpred import InterfpredError
from interfpred.serving.projection.affine import COMBINE_CODES, MAP_CODES, project_affine, project_stacked_unchecked

WIDTH = {"default": 6, "gpulets": 4, "rich": 16}


def _rate_fn(w, b, feature_map, combine, target, rmin=0.01, rmax=1.0):
    def rates(dems):
        out = []
        for a, me in enumerate(dems):
            phi = naive_feature_map(me, dems[:a] + dems[a + 1:], feature_map, combine)
            p = b + sum(wi * fi for wi, fi in zip(w, phi))
            r = p if target == "rate" else (1.0 / p if p > 0 else rmax)
            out.append(min(max(r, rmin), rmax))
        return out
    return rates


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 24), seed=st.integers(0, 10_000), feature_map=st.sampled_from(list(WIDTH)),
       combine=st.sampled_from(["sum", "max"]), target=st.sampled_from(["rate", "slowdown"]),
       ties=st.booleans())
def test_matches_the_per_segment_definition(n, seed, feature_map, combine, target, ties):
    rng = np.random.default_rng(seed)
    dem = rng.random((n, 3))
    if ties:  # repeated demands: the worst other of a copy of the largest is the copy
        dem = np.round(dem * 2) / 2
    rem = rng.uniform(0.5, 20.0, n)
    if ties:
        rem = np.round(rem)
    w = rng.normal(0.0, 0.2, WIDTH[feature_map])
    b = 1.0 if target == "rate" else 1.2
    got = project_affine(dem, rem, 3.0, w, b, feature_map=feature_map, combine=combine, target=target)
    cands = [(i, list(dem[i]), rem[i]) for i in range(n)]
    want = naive_tracker_projection([], 3.0, cands, _rate_fn(w, b, feature_map, combine, target))
    for i in range(n):
        assert got[i] == pytest.approx(want[i], rel=1e-9, abs=1e-9)


def test_stacked_blocks_equal_one_call_per_block():
    rng = np.random.default_rng(4)
    n = np.array([3, 0, 5, 1], dtype=np.int64)
    dem = rng.random((4, 6, 3))
    rem = rng.uniform(1.0, 5.0, (4, 6))
    W = rng.normal(0.0, 0.1, (4, 16))
    B = np.full(4, 0.9)
    LO = np.full(4, -np.inf)
    use = np.array([True, True, True, False])
    end = np.full((4, 6), -1.0)
    project_stacked_unchecked(dem, rem, n, 2.0, W, B, LO, use, MAP_CODES["rich"], COMBINE_CODES["sum"], True,
                              0.01, 1.0, end)
    for g in range(3):
        if n[g]:
            one = project_affine(dem[g, :n[g]], rem[g, :n[g]], 2.0, W[g], B[g])
            # The same compiled projection on the same rows: identical to the bit (documented property).
            assert np.array_equal(end[g, :n[g]], one)
    assert np.all(end[3] == -1.0) and np.all(end[0, 3:] == -1.0)   # skipped blocks and rows untouched


def test_clamps_and_clip():
    # A prediction below the minimum rate is clamped; a negative slowdown means "no slowdown".
    end = project_affine([[0.1, 0.1, 0.1]], [1.0], 0.0, [0.0] * 16, -5.0, min_rate=0.5)
    assert end[0] == pytest.approx(2.0)
    end = project_affine([[0.1, 0.1, 0.1]], [1.0], 0.0, [0.0] * 16, -5.0, target="slowdown")
    assert end[0] == pytest.approx(1.0)
    end = project_affine([[0.1, 0.1, 0.1]], [1.0], 0.0, [0.0] * 16, -5.0, target="slowdown", pred_lo=4.0)
    assert end[0] == pytest.approx(4.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"dem": [[0.5, 2.0, 0.1]]}, "fractions"),
    ({"rem": [0.0]}, "remaining work"),
    ({"rem": [1.0, 2.0]}, "2 values for 1"),
    ({"weights": [0.0] * 6}, "6 values"),
    ({"feature_map": "nope"}, "feature_map"),
    ({"combine": "mean"}, "combine"),
    ({"target": "speed"}, "target"),
    ({"t": float("nan")}, "finite"),
])
def test_bad_input(kwargs, match):
    args = {"dem": [[0.5, 0.5, 0.5]], "rem": [1.0], "t": 0.0, "weights": [0.0] * 16, "intercept": 1.0}
    args.update(kwargs)
    with pytest.raises(InterfpredError, match=match):
        project_affine(args.pop("dem"), args.pop("rem"), args.pop("t"), args.pop("weights"), args.pop("intercept"),
                       **args)
