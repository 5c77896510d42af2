"""Sweep-line segmentation against the O(n^2) reference."""

from __future__ import annotations

import numpy as np
import pytest
from _timeline_cases import traces
from hypothesis import given, settings
from naive import naive_exposure, naive_segments

from interfpred import InterfpredError, Trace, build_timeline


def _segments(tl):
    return [(tl.device_names[tl.seg_device[s]], float(tl.seg_start[s]), float(tl.seg_end[s]),
             frozenset(tl.running_set(s).tolist())) for s in range(tl.n_segments)]


@settings(max_examples=150, deadline=None)
@given(traces())
def test_segments_and_exposure_match_naive(trace):
    tl = build_timeline(trace)
    args = (trace.device, trace.start_ms, trace.end_ms)
    assert _segments(tl) == naive_segments(*args)
    for i in range(len(trace)):
        got = [(d, c.tolist()) for d, c in tl.exposure(i)]
        assert got == naive_exposure(*args, i)
    # CSR invariants: each member entry belongs to exactly one execution's list.
    assert tl.exec_ptr[-1] == len(tl.seg_members) == tl.seg_ptr[-1]
    assert np.all(tl.seg_end > tl.seg_start)


@settings(max_examples=40, deadline=None)
@given(traces(grid=False, max_n=10))
def test_segments_match_naive_continuous_times(trace):
    assert _segments(build_timeline(trace)) == naive_segments(trace.device, trace.start_ms, trace.end_ms)


def test_row_order_does_not_matter():
    rng = np.random.default_rng(0)
    n = 300
    start = np.round(rng.uniform(0, 50, n), 1)
    t = Trace(id=np.arange(n), device=rng.choice(["x", "y"], n), model=["m"] * n, batch_size=[1] * n,
              start_ms=start, end_ms=start + np.round(rng.uniform(0, 5, n), 1))
    perm = rng.permutation(n)
    a, b = build_timeline(t), build_timeline(t.take(perm))
    assert _segments(a) == [(g, s, e, frozenset(int(perm[j]) for j in m))
                            for g, s, e, m in _segments(b)]


def test_touching_and_zero_length():
    t = Trace(id=[1, 2, 3, 4], device=["g"] * 4, model=["m"] * 4, batch_size=[1] * 4,
              start_ms=[0.0, 2.0, 2.0, 1.0], end_ms=[2.0, 3.0, 2.0, 1.0])
    tl = build_timeline(t)
    assert _segments(tl) == [("g", 0.0, 2.0, frozenset({0})), ("g", 2.0, 3.0, frozenset({1}))]
    assert tl.exposure(2) == [] and tl.exposure(3) == []


def test_empty_trace_and_bad_arguments():
    empty = Trace(id=[], device=[], model=[], batch_size=[], start_ms=[], end_ms=[])
    tl = build_timeline(empty)
    assert tl.n_segments == 0 and tl.n_executions == 0 and tl.exec_ptr.tolist() == [0]
    with pytest.raises(InterfpredError, match="expected a Trace"):
        build_timeline({"start_ms": [0.0]})
    with pytest.raises(InterfpredError, match="segment 0 does not exist"):
        tl.running_set(0)
    with pytest.raises(InterfpredError, match="row 3 does not exist"):
        tl.segments_of(3)


def test_arrays_are_read_only():
    t = Trace(id=[1], device=["g"], model=["m"], batch_size=[1], start_ms=[0.0], end_ms=[1.0])
    tl = build_timeline(t)
    with pytest.raises(ValueError):
        tl.seg_start[0] = 5.0


def test_trace_codes_factorise_names_once():
    t = Trace(id=[1, 2, 3, 4], device=["z", "a", "z", "m"], model=["r", "q", "q", "r"], batch_size=[1] * 4,
              start_ms=[0.0] * 4, end_ms=[1.0] * 4)
    names, codes = t.codes("device")
    assert names == ("a", "m", "z") and codes.tolist() == [2, 0, 2, 1]
    assert t.codes("device")[1] is codes                     # cached
    assert t.codes("model") == (("q", "r"), t.codes("model")[1]) and t.codes("model")[1].tolist() == [1, 0, 0, 1]
    with pytest.raises(InterfpredError, match="not 'id'"):
        t.codes("id")
    with pytest.raises(ValueError):
        codes[0] = 5


def test_both_sweeps_stop_at_the_first_launch_over_the_limit():
    """The sweep that stores segments and the one that folds features share their event step: both
    stop at the first execution whose launch makes more than ``max_running`` run at once, even when
    several start at that instant."""
    from interfpred.features import compiled_maps
    from interfpred.features._sweep import sweep

    # rows 0, 1 run from 0; rows 2, 3, 4 all start at 1.0: with max_running 3, row 3 is the first over
    start = np.array([0.0, 0.0, 1.0, 1.0, 1.0])
    end = np.array([5.0, 5.0, 4.0, 4.0, 4.0])
    gcode = np.zeros(5, dtype=np.int64)
    so = np.lexsort((start, gcode)).astype(np.int64)
    eo = np.lexsort((end, gcode)).astype(np.int64)
    *segments, stop = sweep(gcode, start, end, so, eo, 5, 3, 10**6)
    assert stop == 3
    assert len(segments[0]) == 1                      # only the segment [0, 1) of rows 0 and 1 is kept
    dem = np.full((5, 3), 0.1)
    out, fold_stop = compiled_maps.sweep_features(gcode, start, end, so, eo, dem, 0, 0, np.array([0], dtype=np.int64),
                                                  np.array([0.0]), 3)
    assert fold_stop == 3
    # with room for all five, neither stops
    assert sweep(gcode, start, end, so, eo, 5, 5, 10**6)[-1] == -1
    assert compiled_maps.sweep_features(gcode, start, end, so, eo, dem, 0, 0, np.array([0], dtype=np.int64),
                                        np.array([0.0]), 5)[1] == -1
    # the membership limit stops the storing sweep at the last launch before it is passed
    assert sweep(gcode, start, end, so, eo, 5, 5, 4)[-1] == 4
