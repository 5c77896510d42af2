"""Chunked timelines and features: equal to the one-shot computation to the bit, for any window size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred import (
    EWMA,
    InterfpredError,
    Static,
    TimeWeighted,
    Trace,
    build_timeline,
    transform_many,
)
from interfpred.features import CustomMap
from interfpred.features.chunked import iter_features, iter_timeline, transform_chunked
from interfpred.sim.workload import mix_scenario
from interfpred.sim.zoo import zoo_profiles

PROF = zoo_profiles("l4")


def _trace(n, seed, gpus=2, grid=0.5):
    """Random executions on a coarse time grid: ties of starts and ends, zero-length rows."""
    rng = np.random.default_rng(seed)
    start = np.round(rng.uniform(0, n * 0.7, n) / grid) * grid
    dur = np.round(rng.exponential(3.0, n) / grid) * grid
    dur[rng.random(n) < 0.05] = 0.0
    return Trace(id=rng.permutation(n), device=rng.choice([f"g{i}" for i in range(gpus)], n),
                 model=rng.choice(PROF.models, n), batch_size=rng.choice([1, 2, 4, 8, 16, 32], n),
                 start_ms=start, end_ms=start + dur)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 160), seed=st.integers(0, 10_000), chunk=st.integers(1, 40), gpus=st.integers(1, 3),
       feature_map=st.sampled_from(["default", "rich", "gpulets"]), combine=st.sampled_from(["sum", "max"]))
def test_features_equal_the_one_shot_computation_to_the_bit(n, seed, chunk, gpus, feature_map, combine):
    tr = _trace(n, seed, gpus)
    kw = {"feature_map": feature_map, "combine": combine, "target": "slowdown"}   # zero-length rows too
    exs = [Static(**kw), EWMA(alpha=0.3, **kw), TimeWeighted(**kw)]
    want = transform_many(tr, PROF, exs)
    got = transform_chunked(tr, PROF, exs, chunk_rows=chunk)
    for g, w in zip(got, want):
        # Bit-identity with the one-shot sweep is the documented property of the chunked path.
        assert np.array_equal(g.X, w.X)
        assert np.array_equal(g.y, w.y)
    rows = np.concatenate([c.rows for c in iter_features(tr, PROF, exs, chunk_rows=chunk)])
    assert np.array_equal(np.sort(rows), np.arange(n))          # every row exactly once


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 120), seed=st.integers(0, 10_000), chunk=st.integers(1, 30), gpus=st.integers(1, 3))
def test_timeline_chunks_hold_the_one_shot_segments(n, seed, chunk, gpus):
    tr = _trace(n, seed, gpus)
    tl = build_timeline(tr)
    chunks = list(iter_timeline(tr, chunk_rows=chunk))
    seg_start = np.concatenate([c.seg_start for c in chunks]) if chunks else np.empty(0)
    seg_end = np.concatenate([c.seg_end for c in chunks]) if chunks else np.empty(0)
    assert np.array_equal(seg_start, tl.seg_start) and np.array_equal(seg_end, tl.seg_end)
    sets = [sorted(c.seg_members[c.seg_ptr[s]:c.seg_ptr[s + 1]].tolist()) for c in chunks
            for s in range(len(c.seg_start))]
    assert sets == [sorted(tl.running_set(s).tolist()) for s in range(tl.n_segments)]
    assert [c.device for c in chunks] == sorted(c.device for c in chunks)


def test_a_simulated_trace_in_many_windows():
    sc = mix_scenario(["vgg19", "resnet50", "yolov8n"], rho=0.9, executions=3000, seed=3, n_devices=2)
    tr = sc.traces["trace"]
    ex = TimeWeighted(feature_map="rich", target="rate")
    chunks = list(iter_features(tr, sc.profiles, [ex], chunk_rows=100))
    assert len(chunks) >= 30 and sum(c.n_segments for c in chunks) == build_timeline(tr).n_segments
    got = transform_chunked(tr, sc.profiles, [ex], chunk_rows=100)[0]
    assert np.array_equal(got.X, ex.transform(tr, sc.profiles).X)


def test_refusals():
    tr = _trace(20, 0)
    with pytest.raises(InterfpredError, match="chunk_rows"):
        list(iter_features(tr, PROF, [TimeWeighted()], chunk_rows=0))
    with pytest.raises(InterfpredError, match="one map and combine"):
        list(iter_features(tr, PROF, [TimeWeighted(feature_map="default"), Static(feature_map="rich")]))
    custom = CustomMap(lambda me, others: np.array([me[0]]), ["sm"])
    with pytest.raises(InterfpredError, match="built-in maps"):
        list(iter_features(tr, PROF, [TimeWeighted(feature_map=custom)]))
    with pytest.raises(InterfpredError, match="zero latency"):
        list(iter_features(tr, PROF, [TimeWeighted(target="rate")]))
    with pytest.raises(InterfpredError, match="expected a Trace"):
        list(iter_timeline([1, 2]))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 150), seed=st.integers(0, 10_000), batch=st.integers(1, 40), gpus=st.integers(1, 3),
       combine=st.sampled_from(["sum", "max"]))
def test_parquet_batches_equal_the_one_shot_computation_to_the_bit(tmp_path_factory, n, seed, batch, gpus, combine):
    from interfpred.data.columnar import write_trace
    from interfpred.features.chunked import iter_features_parquet

    tr = _trace(n, seed, gpus)
    tr = tr.take(np.argsort(tr.start_ms, kind="stable"))          # a trace file is in launch order
    path = tmp_path_factory.mktemp("pq") / "t.parquet"
    write_trace(tr, path)
    kw = {"combine": combine, "target": "slowdown"}   # zero-length rows too
    exs = [Static(**kw), EWMA(alpha=0.6, **kw), TimeWeighted(**kw)]
    want = transform_many(tr, PROF, exs)
    got = [np.full_like(w.X, np.nan) for w in want]
    seen = np.zeros(n, dtype=int)
    for chunk in iter_features_parquet(str(path), PROF, exs, batch_rows=batch):
        seen[chunk.rows] += 1
        for j, fm in enumerate(chunk.features):
            got[j][chunk.rows] = fm.X
            assert np.array_equal(fm.y, want[j].y[chunk.rows])
    assert np.all(seen == 1)
    for g, w in zip(got, want):
        assert np.array_equal(g, w.X)      # bit-identity is the documented property


def test_parquet_batches_must_be_in_launch_order(tmp_path):
    from interfpred.data.columnar import write_trace
    from interfpred.features.chunked import iter_features_parquet

    tr = _trace(50, 1, 1)
    write_trace(tr.take(np.argsort(-tr.start_ms, kind="stable")), tmp_path / "rev.parquet")
    with pytest.raises(InterfpredError, match="rev.parquet: row 1: start_ms .* the file must be in launch order"):
        list(iter_features_parquet(str(tmp_path / "rev.parquet"), PROF, [TimeWeighted()], batch_rows=10))


def test_chunks_and_timelines_name_the_device():
    tr = Trace(id=[1, 2, 3], device=["b", "a", "b"], model=["m"] * 3, batch_size=[1] * 3,
               start_ms=[0.0, 0.0, 1.0], end_ms=[2.0, 1.0, 3.0])
    assert [c.device for c in iter_timeline(tr)] == ["a", "b"]
    tl = build_timeline(tr)
    assert tl.device_names == ("a", "b")
    assert tl.exec_device.tolist() == [1, 0, 1]
    assert tl.seg_device.tolist() == [0, 1, 1, 1]   # a: [0, 1); b: [0, 1), [1, 2), [2, 3)
