"""Features and entities at high concurrency (30 to 100 executions always overlapping on a device).

The one-shot path folds each segment inside the event sweep and never stores the timeline; these
properties hold it to the plain-Python definitions (tests/naive.py), to the stored-timeline fold
and to the chunked path, on crowded devices with ties and zero-length executions.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_features, naive_trace_entities

from interfpred import EWMA, Static, TimeWeighted, Trace, build_timeline, transform_many
from interfpred.data.profiles import profile_arrays
from interfpred.features.chunked import transform_chunked
from interfpred.features.entity_features import trace_entities
from interfpred.sim.zoo import zoo_profiles

PROF = zoo_profiles("l4")
MODELS = PROF.models[:4]


def _crowded(streams: int, per: int, seed: int, gpus: int, grid: bool) -> Trace:
    """``streams`` back-to-back streams per device, ``per`` executions each, all running at once
    over [0.5, 1) and about as many most of the time; on a 0.5 ms grid (ties of starts and ends) or
    not; plus a few zero-length executions."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {"device": [], "start": [], "end": []}
    for g in range(gpus):
        dur = rng.exponential(3.0, (streams, per)) + 1.0
        offset = rng.uniform(0, 0.5, (streams, 1))
        if grid:
            dur = np.round(dur * 2) / 2
            offset = np.round(offset * 2) / 2
        start = offset + np.cumsum(np.concatenate([np.zeros((streams, 1)), dur[:, :-1]], axis=1), axis=1)
        zero = rng.uniform(0, start.max(), streams // 10 + 1)
        if grid:
            zero = np.round(zero * 2) / 2
        cols["device"] += [f"g{g}"] * (start.size + zero.size)
        cols["start"] += start.ravel().tolist() + zero.tolist()
        cols["end"] += (start + dur).ravel().tolist() + zero.tolist()
    n = len(cols["start"])
    return Trace(id=rng.permutation(n), device=cols["device"], model=rng.choice(MODELS, n),
                 batch_size=rng.choice([1, 2, 4, 8, 16, 32], n), start_ms=cols["start"], end_ms=cols["end"])


crowds = st.builds(_crowded, streams=st.integers(30, 100), per=st.integers(2, 4), seed=st.integers(0, 10_000),
                   gpus=st.integers(1, 2), grid=st.booleans())
# the plain-Python reference is O(n^2 k): one device, two executions per stream
small_crowds = st.builds(_crowded, streams=st.integers(30, 100), per=st.just(2), seed=st.integers(0, 10_000),
                         gpus=st.just(1), grid=st.booleans())
maps = st.sampled_from(["default", "rich", "gpulets"])
combines = st.sampled_from(["sum", "max"])


def _extractors(feature_map: str, combine: str, alpha: float) -> list:
    kw = {"feature_map": feature_map, "combine": combine, "target": "slowdown"}   # the crowds hold zero-length rows
    return [Static(**kw), EWMA(alpha=alpha, **kw), TimeWeighted(**kw)]


@settings(max_examples=8, deadline=None)
@given(tr=small_crowds, feature_map=maps, combine=combines, alpha=st.floats(0.0, 1.0))
def test_features_match_the_plain_definitions(tr, feature_map, combine, alpha):
    assert int(build_timeline(tr).seg_count.max()) >= 30         # the case this file is about
    exs = _extractors(feature_map, combine, alpha)
    got = transform_many(tr, PROF, exs)
    dem, _ = profile_arrays(tr, PROF)
    for ex, fm in zip(exs, got):
        ref = naive_features(tr.device.tolist(), tr.start_ms.tolist(), tr.end_ms.tolist(), dem.tolist(),
                             feature_map=feature_map, combine=combine, aggregation=ex.aggregation,
                             alpha=getattr(ex, "alpha", None))
        # the kernels sum demands in fixed point (exact in any order); the reference in floats
        np.testing.assert_allclose(fm.X, np.array(ref), rtol=1e-9, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(tr=crowds, feature_map=maps, combine=combines, chunk=st.integers(1, 200))
def test_sweep_stored_timeline_and_chunks_agree_to_the_bit(tr, feature_map, combine, chunk):
    exs = _extractors(feature_map, combine, 0.4)
    swept = transform_many(tr, PROF, exs)
    stored = transform_many(tr, PROF, exs, timeline=build_timeline(tr))
    chunked = transform_chunked(tr, PROF, exs, chunk_rows=chunk)
    for a, b, c in zip(swept, stored, chunked):
        assert np.array_equal(a.X, b.X)
        assert np.array_equal(a.X, c.X)
    for ex, fm in zip(exs, swept):      # each extractor alone: the same bits as in the group
        assert np.array_equal(ex.transform(tr, PROF).X, fm.X)


@settings(max_examples=10, deadline=None)
@given(tr=small_crowds, aggregation=st.sampled_from(["static", "ewma", "time_weighted"]), alpha=st.floats(0.05, 1.0))
def test_entities_match_the_plain_definitions(tr, aggregation, alpha):
    ent = trace_entities(tr, aggregation, alpha=alpha)
    ref = naive_trace_entities(tr, aggregation, alpha)
    for i in range(len(tr)):
        own, co = ent.row(i)
        assert own == ref[i][0]
        assert sorted(co) == sorted(ref[i][1])
        for k, v in co.items():
            assert abs(v - ref[i][1][k]) <= 1e-12 * max(1.0, abs(v))


def test_entity_weights_of_a_crowd_are_counts():
    # 50 executions of one model over [0, 4) and 50 of another over [0, 2): every weight is a count
    n = 100
    tr = Trace(id=list(range(n)), device=["g"] * n, model=["a"] * 50 + ["b"] * 50, batch_size=[1] * n,
               start_ms=[0.0] * n, end_ms=[4.0] * 50 + [2.0] * 50)
    assert trace_entities(tr, "static").row(0) == ("a", {"a": 49.0, "b": 50.0})
    assert trace_entities(tr, "time_weighted").row(0) == ("a", {"a": 49.0, "b": 25.0})
    assert trace_entities(tr, "ewma", alpha=0.5).row(0) == ("a", {"a": 49.0, "b": 25.0})
    assert trace_entities(tr, "time_weighted").row(99) == ("b", {"a": 50.0, "b": 49.0})


def test_more_than_the_running_set_limit_is_refused_at_the_launch_that_crosses_it():
    from interfpred import InterfpredError
    from interfpred.constants import MAX_RUNNING_SET

    n = MAX_RUNNING_SET + 50
    tr = Trace(id=np.arange(n), device=["l4"] * n, model=[MODELS[0]] * n, batch_size=[1] * n,
               start_ms=np.arange(n, dtype=float), end_ms=np.full(n, 1e7))
    crossed = f"row {MAX_RUNNING_SET}: {MAX_RUNNING_SET + 1} executions run at once"
    with pytest.raises(InterfpredError, match=crossed):
        TimeWeighted().transform(tr, PROF)
    with pytest.raises(InterfpredError, match=crossed):
        trace_entities(tr, "ewma")
    with pytest.raises(InterfpredError, match=f"more than MAX_RUNNING_SET={MAX_RUNNING_SET} .* at {float(MAX_RUNNING_SET)!r} ms"):
        transform_chunked(tr, PROF, [TimeWeighted()])
