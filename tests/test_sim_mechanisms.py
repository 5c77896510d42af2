"""Sharing mechanisms in the simulator: MPS unchanged, MIG instances isolated, time-slicing serialised."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred.data.profiles import Profile, ProfileTable
from interfpred.errors import InterfpredError
from interfpred.sim import MigInstance, get_gpu_spec, simulate, simulate_mechanism

QUIET = get_gpu_spec("a100", sigma=0.0)


def twins(solo_ms: float = 10.0, names: tuple[str, ...] = ("a", "b", "c")) -> ProfileTable:
    """Identical profiles under several names (contexts that differ only by name)."""
    return ProfileTable.from_profiles([Profile(gpu="a100", model=m, batch_size=1, solo_ms=solo_ms, sm=0.5, l2=0.3,
                                               dram=0.3) for m in names])


def workload(n: int = 60, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    model = rng.choice(["resnet50", "vgg19", "yolov8n"], size=n)
    batch = rng.choice([1, 4, 8], size=n)
    return model, batch, np.cumsum(rng.exponential(3.0, size=n))


# ------------------------------------------------------------------------------------------------ MPS
def test_mps_is_the_engine_unchanged() -> None:
    model, batch, time = workload()
    a = simulate_mechanism(model, batch, time, mechanism="mps", spec="a100", seed=5)
    b = simulate(model, batch, time, spec="a100", seed=5)
    for col in ("start_ms", "end_ms", "solo_ms"):
        assert np.array_equal(getattr(a.trace, col), getattr(b.trace, col))


def test_mps_matches_a_fixed_value() -> None:
    # Two twins (sm 0.8, l2 0.4, dram 0.3, 4 ms alone) launched together on the l4 preset, no noise. By hand:
    # L2 pollution makes dram 0.3 (1 + 0.4 * 0.4) = 0.348; the SMs saturate first, 2 r 0.8 = 1, r = 0.625;
    # the overhead of one co-runner divides by 1.03: r = 0.60680; each ends at 4 / r = 6.592 ms.
    twin = ProfileTable.from_profiles([Profile(gpu="l4", model="t", batch_size=1, solo_ms=4.0, sm=0.8, l2=0.4,
                                               dram=0.3)])
    r = simulate_mechanism(["t", "t"], [1, 1], [0.0, 0.0], mechanism="mps", spec=get_gpu_spec("l4", sigma=0.0),
                           profiles=twin)
    assert r.trace.end_ms.tolist() == pytest.approx([4.0 * 1.03 / 0.625] * 2, rel=1e-12)
    assert round(float(r.trace.end_ms[0]), 4) == 6.592


# ------------------------------------------------------------------------------------------------ MIG
def test_mig_instances_do_not_interfere_exactly() -> None:
    layout = [MigInstance(0, "4g@0", 56 / 98, 0.5, processes=2), MigInstance(0, "3g@4", 42 / 98, 0.5, processes=2)]
    model, batch, time = workload(80)
    inst = (np.arange(80) % 2).astype(np.int64)
    both = simulate_mechanism(model, batch, time, mechanism="mig", layout=layout, instance=inst, spec=QUIET)
    mine = inst == 0
    alone = simulate_mechanism(model[mine], batch[mine], time[mine], mechanism="mig", layout=layout,
                               instance=inst[mine], spec=QUIET)    # no noise: the same work without instance 1
    keep = both.trace.device == "gpu0/4g@0"
    assert keep.sum() == mine.sum()
    assert np.array_equal(both.trace.end_ms[keep][np.argsort(both.trace.id[keep])],
                          alone.trace.end_ms[np.argsort(alone.trace.id)])
    assert np.any(both.slowdown > 1.01)      # inside an instance batches do interfere
    assert set(both.trace.device.tolist()) == {"gpu0/4g@0", "gpu0/3g@4"}


def test_mig_runs_slower_alone_in_a_small_instance_and_interferes_inside_it() -> None:
    small = [MigInstance(0, "1g@0", 14 / 98, 1 / 8, processes=2)]
    r = simulate_mechanism(["vgg19"], [16], [0.0], mechanism="mig", layout=small, instance=[0], spec=QUIET)
    full = simulate_mechanism(["vgg19"], [16], [0.0], mechanism="mps", spec=QUIET)
    assert r.trace.latency_ms[0] > 3 * full.trace.latency_ms[0]
    assert r.trace.solo_ms[0] == pytest.approx(r.trace.latency_ms[0])     # solo_ms is the time in the instance
    two = simulate_mechanism(["vgg19"] * 2, [16] * 2, [0.0, 0.0], mechanism="mig", layout=small, instance=[0, 0],
                             spec=QUIET)
    assert np.all(two.trace.latency_ms > r.trace.latency_ms[0])


def test_one_whole_gpu_instance_is_mps() -> None:
    model, batch, time = workload(40)
    whole = [MigInstance(0, "7g@0", 1.0, 1.0, processes=QUIET.max_concurrency)]
    a = simulate_mechanism(model, batch, time, mechanism="mig", layout=whole, instance=np.zeros(40, dtype=int),
                           spec=QUIET, seed=2)
    b = simulate(model, batch, time, spec=QUIET, seed=2)
    assert np.array_equal(a.trace.end_ms, b.trace.end_ms)


@pytest.mark.parametrize("kwargs, match", [
    ({}, "needs layout"),
    ({"layout": [MigInstance(0, "x", 0.6, 0.5), MigInstance(0, "y", 0.6, 0.5)], "instance": [0]}, "more than the whole"),
    ({"layout": [MigInstance(0, "x", 0.5, 0.5)], "instance": [1]}, "indices into layout"),
    ({"layout": [MigInstance(0, "x", 0.0, 0.5)], "instance": [0]}, "fractions in"),
    ({"layout": [MigInstance(0, "x", 0.5, 0.5)], "instance": [0], "device": ["gpu1"]}, "pass instance, not device"),
])
def test_mig_refuses_bad_layouts(kwargs: dict, match: str) -> None:
    with pytest.raises(InterfpredError, match=match):
        simulate_mechanism(["vgg19"], [1], [0.0], mechanism="mig", spec="a100", **kwargs)


# ------------------------------------------------------------------------------------------------ time-slicing
def test_time_slicing_alone_runs_at_solo_speed() -> None:
    r = simulate_mechanism(["a"], [1], [0.0], mechanism="time_slicing", spec=QUIET, profiles=twins())
    assert r.trace.end_ms.tolist() == [10.0]


@pytest.mark.parametrize("switch", [0.0, 0.05, 0.3])
def test_two_equal_contexts_take_twice_as_long_plus_the_switches(switch: float) -> None:
    # quantum 2 ms, 10 ms of work each: a runs 5 slices, b 5, with a switch between every two slices
    r = simulate_mechanism(["a", "b"], [1, 1], [0.0, 0.0], mechanism="time_slicing", spec=QUIET, profiles=twins(),
                           quantum_ms=2.0, switch_ms=switch)
    end = dict(zip(r.trace.model.tolist(), r.trace.end_ms.tolist()))
    assert end["a"] == pytest.approx(18.0 + 8 * switch, rel=1e-12)
    assert end["b"] == pytest.approx(20.0 + 9 * switch, rel=1e-12)


def test_latency_grows_with_the_busy_contexts() -> None:
    lat = []
    for k in (1, 2, 3):
        names = ["a", "b", "c"][:k]
        r = simulate_mechanism(names, [1] * k, [0.0] * k, mechanism="time_slicing", spec=QUIET, profiles=twins(),
                               switch_ms=0.0)
        lat.append(float(r.trace.latency_ms.max()))
    assert lat == pytest.approx([10.0, 20.0, 30.0])


def test_one_context_overlaps_its_own_batches_as_mps_does() -> None:
    r = simulate_mechanism(["vgg19", "vgg19"], [8, 8], [0.0, 1.0], mechanism="time_slicing", spec=QUIET)
    m = simulate(["vgg19", "vgg19"], [8, 8], [0.0, 1.0], spec=QUIET)
    assert np.allclose(r.trace.end_ms, m.trace.end_ms, rtol=1e-9)


def test_time_slicing_is_deterministic_and_every_batch_finishes() -> None:
    model, batch, time = workload(120)
    a = simulate_mechanism(model, batch, time, mechanism="time_slicing", spec="a100", seed=4)
    b = simulate_mechanism(model, batch, time, mechanism="time_slicing", spec="a100", seed=4)
    assert np.array_equal(a.trace.end_ms, b.trace.end_ms)
    assert np.all(np.isfinite(a.trace.end_ms)) and np.all(a.trace.end_ms > a.trace.start_ms)
    assert np.all(a.slowdown >= 1.0 - 1e-9)


@pytest.mark.parametrize("kwargs, match", [
    ({"mechanism": "streams"}, "is not one of"),
    ({"mechanism": "time_slicing", "quantum_ms": 0.0}, "quantum_ms"),
    ({"mechanism": "time_slicing", "switch_ms": -1.0}, "switch_ms"),
    ({"mechanism": "mps", "instance": [0]}, "mechanism 'mig' only"),
])
def test_bad_arguments_are_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(InterfpredError, match=match):
        simulate_mechanism(["vgg19"], [1], [0.0], spec="a100", **kwargs)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.1, 20.0), min_size=1, max_size=4), st.floats(0.2, 5.0),
       st.one_of(st.just(0.0), st.floats(0.01, 0.5)))
def test_time_slicing_keeps_the_gpu_busy_but_for_the_switches(works, quantum, switch):
    # one batch per context, all at 0: the GPU runs one batch at full speed at a time, so the last one ends
    # after all the work plus one switch per change of context
    names = ["a", "b", "c", "d"][:len(works)]
    prof = ProfileTable.from_profiles([Profile(gpu="a100", model=m, batch_size=1, solo_ms=w, sm=0.5, l2=0.3,
                                               dram=0.3) for m, w in zip(names, works)])
    r = simulate_mechanism(names, [1] * len(names), [0.0] * len(names), mechanism="time_slicing", spec=QUIET,
                           profiles=prof, quantum_ms=quantum, switch_ms=switch)
    end = dict(zip(r.trace.model.tolist(), r.trace.end_ms.tolist()))
    assert all(end[m] >= w - 1e-9 for m, w in zip(names, works))
    last = max(end.values())
    slices = sum(max(1, int(np.ceil(w / quantum - 1e-9))) for w in works)
    if switch == 0.0:
        assert last == pytest.approx(sum(works), rel=1e-9)
    else:
        switches = (last - sum(works)) / switch
        assert switches == pytest.approx(round(switches), abs=1e-6)
        assert len(works) - 1 <= round(switches) <= slices - 1


def test_one_arrival_stream_runs_under_every_mechanism():
    from interfpred.sim import phase_zoo, poisson_arrivals, simulate_arrivals

    a = poisson_arrivals(["resnet50", "vgg19"], rho=0.8, executions=120, spec="a100", seed=2)
    mps = simulate_arrivals(a, spec="a100", seed=2)
    assert np.array_equal(simulate_arrivals(a, spec="a100", seed=2, mechanism="mps").trace.end_ms, mps.trace.end_ms)
    ts = simulate_arrivals(a, spec="a100", seed=2, mechanism="time_slicing")
    halves = [MigInstance(0, "4g@0", 56 / 98, 0.5, processes=2), MigInstance(0, "3g@4", 42 / 98, 0.5, processes=2)]
    mig = simulate_arrivals(a, spec="a100", seed=2, mechanism="mig", layout=halves,
                            instance=(a.model == "vgg19").astype(int))
    for r in (ts, mig):
        assert sorted(r.trace.id.tolist()) == sorted(a.id.tolist())
        assert np.array_equal(np.sort(r.arrival_ms), np.sort(a.time_ms))
    assert set(mig.trace.device[mig.trace.model == "vgg19"].tolist()) == {"gpu0/3g@4"}
    with pytest.raises(InterfpredError, match="phase-structured truth runs under mechanism 'mps' only"):
        simulate_arrivals(a, spec="a100", mechanism="time_slicing", zoo=phase_zoo("a100", "synthetic"))
