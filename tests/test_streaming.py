"""TimelineState (streaming): the naive features of tests/naive.py, and exactly the batch extractors' values."""

from __future__ import annotations

import numpy as np
import pytest
from _timeline_cases import profile_tables, traces
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_features

from interfpred import EWMA, CustomMap, InterfpredError, ProfileTable, Static, TimelineState, TimeWeighted, Trace
from interfpred.data.profiles import profile_arrays
from interfpred.features import feature_names


def _replay(trace, prof, ex, gpu, rng):
    """Feed one GPU's executions as events in time order, ties in random order."""
    rows = np.flatnonzero(trace.device == gpu)
    events = []
    for i in rows:
        r1, r2 = rng.random(), rng.random()
        s, e = float(trace.start_ms[i]), float(trace.end_ms[i])
        if s == e:
            r1, r2 = min(r1, r2), max(r1, r2)
        events.append((s, r1, 0, i))
        events.append((e, r2, 1, i))
    events.sort()
    state = TimelineState(ex, prof, gpu=gpu)
    out = {}
    for t, _, kind, i in events:
        if kind == 0:
            state.start(int(trace.id[i]), str(trace.model[i]), int(trace.batch_size[i]), t)
        else:
            done = state.finish(int(trace.id[i]), t)
            assert done.id == int(trace.id[i])
            out[i] = done
    assert len(state) == 0
    return out


def _extractors():
    cm = CustomMap(lambda me, o: [me[1] * o[:, 1].sum(), float(len(o))], names=["l2_prod", "n"])
    out = [cm]
    for m in ("default", "gpulets", "rich"):
        for c in ("sum", "max"):
            out.append((m, c))
    return out


@settings(max_examples=30, deadline=None)
@given(traces(gpus=("g0",)), profile_tables(gpus=("g0",)), st.integers(0, 2**32 - 1))
def test_streaming_matches_the_naive_features(trace, prof, seed):
    rng = np.random.default_rng(seed)
    dem, _ = profile_arrays(trace, prof)
    for spec in _extractors()[1:]:
        kw = {"feature_map": spec[0], "combine": spec[1], "target": "slowdown"}
        for ex in (Static(**kw), EWMA(alpha=0.35, **kw), TimeWeighted(**kw)):
            ref = naive_features(trace.device, trace.start_ms, trace.end_ms, dem, ex.feature_map, ex.combine,
                                 ex.aggregation, ex.compiled_spec.alpha)
            for i, done in _replay(trace, prof, ex, "g0", rng).items():
                np.testing.assert_allclose(done.x, ref[i], rtol=1e-9, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(traces(gpus=("g0",)), profile_tables(gpus=("g0",)), st.integers(0, 2**32 - 1))
def test_streaming_equals_batch_exactly(trace, prof, seed):
    rng = np.random.default_rng(seed)
    for spec in _extractors():
        kw = {"feature_map": spec} if isinstance(spec, CustomMap) else {"feature_map": spec[0], "combine": spec[1]}
        kw["target"] = "slowdown"     # the traces hold zero-length rows, whose rate batch features refuse
        for ex in (Static(**kw), EWMA(alpha=0.35, **kw), EWMA(alpha=1.0, **kw), TimeWeighted(**kw)):
            fm = ex.transform(trace, prof)
            got = _replay(trace, prof, ex, "g0", rng)
            for i, done in got.items():
                np.testing.assert_array_equal(done.x, fm.X[i])
                assert done.y == fm.y[i] and done.solo_ms == fm.solo_ms[i]


@settings(max_examples=25, deadline=None)
@given(traces(gpus=("g0", "g1")), profile_tables(gpus=("g0", "g1")), st.integers(0, 2**32 - 1))
def test_one_state_per_gpu_equals_batch_on_a_multi_gpu_trace(trace, prof, seed):
    rng = np.random.default_rng(seed)
    for ex in (EWMA(alpha=0.6, feature_map="rich", combine="max", target="slowdown"),   # zero-length rows too
               TimeWeighted(feature_map="gpulets", target="slowdown")):
        fm = ex.transform(trace, prof)
        got = {}
        for g in ("g0", "g1"):
            got.update(_replay(trace, prof, ex, g, rng))
        assert sorted(got) == list(range(len(trace)))
        for i, done in got.items():
            np.testing.assert_array_equal(done.x, fm.X[i])
            assert done.solo_ms == fm.solo_ms[i]


def _prof():
    return ProfileTable.from_columns(gpu=["g"] * 3, model=["a", "a", "b"], batch_size=[1, 4, 1],
                                     solo_ms=[1.0, 4.0, 2.0], sm=[0.2, 0.5, 0.3], l2=[0.1, 0.4, 0.2],
                                     dram=[0.3, 0.6, 0.1])


def _snapshot(st_):
    return (st_.now, [(r.id, r.start_ms, r.elapsed_ms, r.demand.tolist()) for r in st_.running_executions()],
            st_.demands(), len(st_), list(st_.running))


def test_refused_events_leave_state_unchanged():
    st_ = TimelineState(TimeWeighted(), _prof())
    st_.start("x", "a", 2, 1.0)
    st_.start("y", "b", 1, 2.0)
    before = _snapshot(st_)
    bad = [
        (lambda: st_.finish("nope", 3.0), "finish of id 'nope' refused: it is not running"),
        (lambda: st_.start("x", "a", 1, 3.0), "start of id 'x' refused: that id is already running"),
        (lambda: st_.start("z", "a", 1, 1.5), "time 1.5 is before the latest event at 2.0"),
        (lambda: st_.finish("y", 0.5), "finish of id 'y' refused: time 0.5 is before"),
        (lambda: st_.start("z", "nomodel", 1, 3.0), "no profile for model 'nomodel'"),
        (lambda: st_.start("z", "a", 9, 3.0), "batch size 9 .* outside the profiled range"),
        (lambda: st_.start("z", "a", 1, float("nan")), "time nan is not finite"),
        (lambda: st_.start("z", "a", 1, "soon"), "time 'soon' is not a number"),
        (lambda: st_.start(["list"], "a", 1, 3.0), "an id must be hashable"),
        (lambda: st_.finish(["list"], 3.0), "is not running"),
    ]
    for call, msg in bad:
        with pytest.raises(InterfpredError, match=msg):
            call()
        after = _snapshot(st_)
        assert after[:2] == before[:2] and after[4:] == before[4:]
        np.testing.assert_array_equal(after[2], before[2])
        np.testing.assert_array_equal(after[3], before[3])
    # The state still works and gives what an untouched state gives.
    ref = TimelineState(TimeWeighted(), _prof())
    ref.start("x", "a", 2, 1.0)
    ref.start("y", "b", 1, 2.0)
    np.testing.assert_array_equal(st_.finish("x", 5.0).x, ref.finish("x", 5.0).x)


def test_finish_before_start_and_reuse_of_an_id():
    st_ = TimelineState(Static(), _prof())
    with pytest.raises(InterfpredError, match="running: none"):
        st_.finish(1, 0.0)
    st_.start(1, "a", 1, 0.0)
    st_.finish(1, 1.0)
    st_.start(1, "b", 1, 1.0)          # a new execution may reuse a finished id
    assert [r.model for r in st_.running_executions()] == ["b"]


def test_running_and_growth():
    st_ = TimelineState(EWMA(alpha=0.5, feature_map="rich"), _prof())
    for k in range(20):                   # beyond the initial capacity of 8
        st_.start(k, "a", 1 + k % 4, float(k))
    rs = st_.running_executions()
    assert [r.id for r in rs] == list(range(20))
    assert rs[3].elapsed_ms == 16.0 and rs[3].batch_size == 4.0 and rs[3].solo_ms == 4.0
    assert st_.demands().shape == (20, 3)
    done = st_.finish(0, 25.0)
    assert done.latency_ms == 25.0 and done.x.shape == (16,) and done.x[15] > 0
    assert 0 not in st_ and 19 in st_


def test_constructor_checks():
    with pytest.raises(InterfpredError, match="must be an Extractor"):
        TimelineState("static", _prof())
    two = _prof().merge(ProfileTable.from_columns(gpu=["h"], model=["a"], batch_size=[1], solo_ms=[1.0],
                                                  sm=[0.1], l2=[0.1], dram=[0.1]))
    with pytest.raises(InterfpredError, match="pass gpu="):
        TimelineState(Static(), two)
    with pytest.raises(InterfpredError, match="gpu 'q' has no profiles"):
        TimelineState(Static(), two, gpu="q")
    assert TimelineState(Static(), two, gpu="h").extractor == Static()


def test_zero_length_rate_is_infinite_in_streaming():
    st_ = TimelineState(Static(target="rate"), _prof())
    st_.start(1, "a", 1, 2.0)
    assert st_.finish(1, 2.0).y == float("inf")


def test_one_long_stream_matches_batch():
    rng = np.random.default_rng(11)
    n = 2000
    start = np.sort(rng.uniform(0, 500, n))
    tr = Trace(id=np.arange(n), device=["g0"] * n, model=rng.choice(["a", "b", "c"], n),
               batch_size=rng.integers(1, 5, n), start_ms=start, end_ms=start + rng.exponential(2.0, n))
    prof = ProfileTable.from_columns(
        gpu=["g0"] * 6, model=["a", "a", "b", "b", "c", "c"], batch_size=[1, 4] * 3,
        solo_ms=rng.uniform(1, 5, 6), sm=rng.uniform(0, 1, 6), l2=rng.uniform(0, 1, 6), dram=rng.uniform(0, 1, 6))
    for ex in (TimeWeighted(feature_map="rich", combine="max", target="rate"), EWMA(alpha=0.2, feature_map="gpulets")):
        fm = ex.transform(tr, prof)
        got = _replay(tr, prof, ex, "g0", rng)
        X = np.array([got[i].x for i in range(n)])
        np.testing.assert_array_equal(X, fm.X)
        assert fm.names == feature_names(ex.feature_map)


def test_running_gives_the_ids_and_running_executions_the_records():
    st_ = TimelineState(Static(), _prof())
    st_.start("x", "a", 1, 0.0)
    st_.start("y", "b", 1, 1.0)
    st_.finish("x", 2.0)
    assert st_.running == ["y"]                   # the ids, as ColocationTracker.running
    st_.running.append("z")                       # a copy: the state is not changed through it
    assert st_.running == ["y"]
    records = st_.running_executions()
    assert [(r.id, r.model) for r in records] == [("y", "b")] and records[0].start_ms == pytest.approx(1.0)
