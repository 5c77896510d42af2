"""Tests of InterferenceModel.update row by row (interfpred.model.stream): each row learned in its context."""

from __future__ import annotations

import numpy as np
import pytest

from interfpred import InterferenceModel, Measurements
from interfpred.data.datasets import gavel_v100
from interfpred.errors import FrozenPredictorError, InterfpredError
from interfpred.features import default_extractor
from interfpred.model.stream import UpdateStream
from interfpred.sim.workload import mix_scenario


@pytest.fixture(scope="module")
def sim():
    sc = mix_scenario(["resnet50", "vgg19", "vit_b16"], rho=0.9, executions=1200, seed=3)
    tr = sc.traces["trace"]
    return tr.take(np.arange(100)), tr.take(np.arange(100, 1200)), sc.profiles


@pytest.fixture(scope="module")
def gavel():
    runs = gavel_v100()
    return runs.take(runs.run_code < 110), runs.take(runs.run_code >= 110)


def _relative_gap(a: float, b: float) -> float:
    return abs(a - b) / b


@pytest.mark.parametrize("predictor", [None, "rls"])
def test_one_row_trace_updates_learn_what_one_block_does(sim, predictor):
    train, stream, prof = sim
    one = InterferenceModel(None, predictor).fit(train, prof)
    block = InterferenceModel(None, predictor).fit(train, prof)
    before = one.evaluate(stream, prof).summary.mape
    block.update(stream, prof)
    block.flush()
    for i in range(len(stream)):
        one.update(stream.take([i]), prof)
    assert one.n_pending >= 1          # the last execution waits for a row starting after its end
    one.flush()
    assert one.n_pending == 0
    got, want = one.evaluate(stream, prof).summary.mape, block.evaluate(stream, prof).summary.mape
    assert want < 0.8 * before         # the block teaches something, so a stream that learns nothing fails
    assert _relative_gap(got, want) <= 0.10


@pytest.mark.parametrize("predictor", [None, "rls"])
def test_one_row_measurement_updates_learn_what_one_block_does(gavel, predictor):
    train, stream = gavel
    one = InterferenceModel(None, predictor).fit(measurements=train)
    block = InterferenceModel(None, predictor).fit(measurements=train)
    block.update(measurements=stream)
    block.flush()
    for i in range(len(stream)):
        one.update(measurements=stream.take([i]))
    one.flush()
    got, want = one.evaluate(measurements=stream).summary.mape, block.evaluate(measurements=stream).summary.mape
    assert _relative_gap(got, want) <= 0.10
    assert one.predictor.to_state() == block.predictor.to_state()    # the same rows, runs in the same order


def test_stream_hands_over_every_row_with_its_block_features(sim):
    _, stream, prof = sim
    ex = default_extractor()
    want = ex.transform(stream, prof)
    s, got = UpdateStream(), {}
    rng = np.random.default_rng(0)
    cuts = np.unique(np.r_[0, rng.integers(1, len(stream), 60), len(stream)])
    for lo, hi in zip(cuts[:-1], cuts[1:]):   # blocks of random sizes, one row to dozens
        ready, runs = s.add(trace=stream.take(np.arange(lo, hi)))
        assert runs == []
        if ready is not None:
            context, rows = ready
            fm = ex.transform(context, prof)
            got.update({context.id[r].item(): fm.X[r] for r in rows})
    context, rows = s.flush()[0]
    fm = ex.transform(context, prof)
    got.update({context.id[r].item(): fm.X[r] for r in rows})
    assert sorted(got) == sorted(stream.id.tolist())
    for i, key in enumerate(stream.id.tolist()):
        np.testing.assert_allclose(got[key], want.X[i], rtol=1e-12, atol=1e-12)


def test_runs_wait_for_their_end():
    m = Measurements.from_columns(run=["a", "a", "a", "b", "b"], gpu=["g"] * 5, model=["x", "y", "z", "x", "y"],
                                  batch_size=[1] * 5, solo_ms=[1.0] * 5, observed_ms=[2.0, 3.0, 4.0, 1.5, 1.5])
    s = UpdateStream()
    assert [len(s.add(measurements=m.take([i]))[1]) for i in range(4)] == [0, 0, 0, 1]
    ready = s.add(measurements=m.take([4]))[1]
    assert ready == [] and s.n_pending == 2
    (learned,) = s.flush()[1]
    assert learned.run.tolist() == ["b", "b"]


def test_rows_that_cannot_be_placed_are_refused_in_one_line(sim, gavel):
    train, stream, prof = sim
    m = InterferenceModel(None, "rls").fit(train, prof)
    m.update(stream.take([5]), prof)
    state = m.predictor.to_state()
    with pytest.raises(InterfpredError, match=r"starts at .* before the latest start .* start order per device") as e:
        m.update(stream.take([2]), prof)
    assert "\n" not in str(e.value) and "ColocationTracker" in str(e.value)
    assert m.predictor.to_state() == state and m.n_pending == 1

    g_train, g_stream = gavel
    runs = InterferenceModel(None, "rls").fit(measurements=g_train)
    first = g_stream.run == g_stream.run[0]
    other = np.flatnonzero(~first)[0]
    runs.update(measurements=g_stream.take([np.flatnonzero(first)[0]]))
    runs.update(measurements=g_stream.take([other]))        # another run begins: the first is learned
    late = np.flatnonzero(first)[1]
    with pytest.raises(InterfpredError, match=r"was learned already .* pass a run's members in one call") as e:
        runs.update(measurements=g_stream.take([late]))
    assert "\n" not in str(e.value)


def test_update_refuses_without_profiles_and_frozen(sim):
    train, stream, prof = sim
    m = InterferenceModel(None, "rls").fit(train, prof)
    with pytest.raises(InterfpredError, match="needs profiles"):
        m.update(stream.take([0]))
    off = InterferenceModel(None, "offline_linear").fit(train, prof)
    with pytest.raises(FrozenPredictorError, match="frozen"):
        off.update(stream.take([0]), prof)
    assert off.n_pending == 0


def test_fit_forgets_waiting_rows(sim):
    train, stream, prof = sim
    m = InterferenceModel(None, "rls").fit(train, prof)
    m.update(stream.take([0, 1]), prof)
    assert m.n_pending > 0
    m.fit(train, prof)
    assert m.n_pending == 0 and m.flush() == 0


def test_a_refused_block_leaves_the_stream_as_it_was():
    m = Measurements.from_columns(run=["a", "a", "b"], gpu=["g"] * 3, model=["x", "y", "x"], batch_size=[1] * 3,
                                  solo_ms=[1.0] * 3, observed_ms=[2.0, 3.0, 1.5])
    s = UpdateStream()
    s.add(measurements=m.take([0]))
    again = Measurements.from_columns(run=["b", "a"], gpu=["g"] * 2, model=["y", "x"], batch_size=[1] * 2,
                                      solo_ms=[1.0] * 2, observed_ms=[1.5, 2.0])
    with pytest.raises(InterfpredError, match="duplicate member"):   # run a holds model x already
        s.add(measurements=again)
    assert s.n_pending == 1
    runs = s.add(measurements=m.take([1, 2]))[1]                      # run a is still open, and not closed
    assert [r.run.tolist() for r in runs] == [["a", "a"]]
