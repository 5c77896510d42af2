"""Vectorised placement: every GPU's answer equals one what_if and one predict_finish on it, to the bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from doubles import Opaque

from interfpred import (
    RLS,
    ColocationTracker,
    Fleet,
    InterfpredError,
    OfflineLinear,
    OnlineSGD,
    TimeWeighted,
)
from interfpred.constants import FLEET_TIE_RTOL
from interfpred.serving.placement import PlacementCache
from interfpred.sim.zoo import zoo_profiles


def _fleet(max_running=None):
    prof = zoo_profiles("l4")
    rng = np.random.default_rng(3)
    X = rng.random((60, 16))
    shared = RLS(forgetting=0.99).fit(X, 1.0 - 0.2 * X[:, 9] - 0.05 * X[:, 15])
    off = OfflineLinear().fit(X, 1.2 + 0.3 * X[:, 10])
    trackers = {
        "a": ColocationTracker(prof, shared),
        "b": ColocationTracker(prof, shared),
        "c": ColocationTracker(prof, off, TimeWeighted(feature_map="rich", target="slowdown")),
        "d": ColocationTracker(prof, OnlineSGD(), TimeWeighted(feature_map="default", combine="max", target="rate")),
        "e": ColocationTracker(prof, Opaque(RLS())),
        "f": ColocationTracker(prof, shared),
    }
    return Fleet(trackers, margin=0.05, max_running=max_running)


@pytest.mark.parametrize("max_running", [None, 3])
def test_every_answer_equals_the_per_gpu_assessment(max_running):
    """Bit-identity with Fleet.assess (what_if + predict_finish per GPU) is the documented property."""
    fleet = _fleet(max_running)
    prof = zoo_profiles("l4")
    rng = np.random.default_rng(11)
    t = 0.0
    nxt = 0
    checked = 0
    cache = PlacementCache()          # kept beside the fleet's own, invalidated on the same events
    for step in range(120):
        t += float(rng.uniform(0.0, 2.0)) if step % 3 else 0.0
        running = [i for i in range(nxt) if fleet.where(i) is not None]
        if running and rng.random() < 0.4:
            victim = running[int(rng.integers(len(running)))]
            cache.invalidate(fleet.where(victim))
            fleet.finish(victim, t)   # the shared RLS learns
        else:
            g = fleet.devices[int(rng.integers(len(fleet.devices)))]
            if max_running is None or len(fleet.trackers[g]) < max_running:
                fleet.start(g, nxt, prof.models[int(rng.integers(6))], int(rng.integers(1, 33)), t,
                            deadline=t + float(rng.uniform(5.0, 200.0)))
                cache.invalidate(g)
                nxt += 1
        for _ in range(2):     # twice at one instant: the second call reuses the cached projections
            cand = ("cand", prof.models[int(rng.integers(6))], int(rng.integers(1, 33)))
            deadline = t + float(rng.uniform(5.0, 150.0))
            fast = cache.assess_all(fleet.trackers, fleet.deadline, cand, deadline, t, margin=fleet.margin,
                                    max_running=fleet.max_running)
            assert fast.get("e", (False, math.inf)) == (False, math.inf)   # not compiled unless full
            for g in fleet.devices:
                want = fleet.assess(g, cand, deadline, t)
                if g in fast:
                    assert fast[g] == want
                    checked += 1
            ok = {g: fleet.assess(g, cand, deadline, t)[1] for g in fleet.devices if fleet.assess(g, cand, deadline, t)[0]}
            best = None
            if ok:   # least added latency; ties go to the least loaded GPU (fewest running, least remaining work)
                least = min(ok.values())
                tied = [g for g, a in ok.items() if a <= least + FLEET_TIE_RTOL * abs(least)]
                best = min(tied, key=lambda g: (len(fleet.trackers[g]),
                                                sum(fleet.trackers[g].remaining_ms(t).values())))
            assert fleet.choose_device(cand, deadline, t) == best
    assert checked > 400


def test_errors_are_those_of_what_if():
    fleet = _fleet()
    fleet.start("a", 1, "vgg19", 8, 5.0, deadline=100.0)
    with pytest.raises(InterfpredError, match="what_if candidate 'c' refused: no profile for model 'zz'"):
        fleet.choose_device(("c", "zz", 4), 50.0, 6.0)
    with pytest.raises(InterfpredError, match="before the latest event"):
        fleet.choose_device(("c", "vgg19", 4), 50.0, 4.0)


def test_an_idle_fleet_and_a_full_one():
    cache = PlacementCache()
    trs = {g: ColocationTracker(zoo_profiles("l4"), RLS()) for g in ("x", "y")}
    res = cache.assess_all(trs, lambda i: None, ("c", "resnet50", 4), 100.0, 0.0, margin=0.0)
    solo = zoo_profiles("l4").lookup("resnet50", 4).solo_ms
    assert res["x"] == res["y"]
    assert res["x"][0] and res["x"][1] == pytest.approx(solo)
    trs["x"].start(1, "vgg19", 8, 0.0)
    cache.invalidate("x")
    res = cache.assess_all(trs, lambda i: None, ("c", "resnet50", 4), 100.0, 0.0, margin=0.0, max_running=1)
    assert res["x"] == (False, math.inf) and res["y"][0]


def test_placement_rule_helpers():
    from interfpred.serving.placement import added_latency, least_added_latency, meets_deadlines

    assert least_added_latency([]) == []
    assert least_added_latency([("a", 5.0), ("b", 4.0)]) == ["b"]
    assert least_added_latency([("a", 4.0 * (1 + 1e-12)), ("b", 4.0)], tie_rtol=1e-9) == ["a", "b"]
    assert added_latency(2.0, 7.0, [], []) == pytest.approx(5.0)
    assert added_latency(2.0, 7.0, [10.0, 12.0], [9.0, 11.5]) == pytest.approx(6.5)
    assert meets_deadlines(0.0, [10.0], [10.0 + 1e-9], 0.0)
    assert not meets_deadlines(0.0, [10.0], [10.0], 0.01)           # the margin scales the time from t
    assert meets_deadlines(5.0, [10.0], [10.06], 0.01) and not meets_deadlines(5.0, [10.0], [10.04], 0.01)


def test_invalidate_takes_the_device():
    cache = PlacementCache()
    trs = {g: ColocationTracker(zoo_profiles("l4"), RLS()) for g in ("x", "y")}
    cache.assess_all(trs, lambda i: None, ("c", "resnet50", 4), 100.0, 0.0, margin=0.0)
    trs["y"].start(1, "vgg19", 8, 0.0)
    cache.invalidate("y")
    res = cache.assess_all(trs, lambda i: None, ("c", "resnet50", 4), 100.0, 0.0, margin=0.0, max_running=1)
    assert res["y"] == (False, math.inf) and res["x"][0]
    trs["x"].start(2, "vgg19", 8, 0.0)
    cache.invalidate(device="x")
    res = cache.assess_all(trs, lambda i: None, ("c", "resnet50", 4), 100.0, 0.0, margin=0.0, max_running=1)
    assert res["x"] == res["y"] == (False, math.inf)
    with pytest.raises(TypeError):
        cache.invalidate(gpu="x")       # gpu= names a GPU type elsewhere, never a device


@pytest.mark.parametrize("max_running", [None, 2])
def test_devices_with_their_own_predictors_keep_weights_per_block(max_running):
    """Each device learning on its own predictor (as ``interfpred serve`` runs them): the weights kept with each
    block since its last event give Fleet.assess's answers to the bit, finish after finish."""
    prof = zoo_profiles("l4")
    rng = np.random.default_rng(4)
    X = rng.random((60, 16))
    y = 1.0 - 0.2 * X[:, 9] - 0.05 * X[:, 15]
    mixed = {g: ColocationTracker(prof, RLS(forgetting=0.99).fit(X, y)) for g in "abcd"}
    mixed["e"] = ColocationTracker(prof, OnlineSGD(), TimeWeighted(feature_map="default", combine="max", target="rate"))
    fleet = Fleet(mixed, margin=0.05, max_running=max_running)
    assert fleet._placement.own_predictors
    t, nxt, checked = 0.0, 0, 0
    for _ in range(150):
        t += float(rng.uniform(0.5, 6.0))
        running = [i for tr in fleet.trackers.values() for i in tr.running]
        if running and rng.random() < 0.45:
            fleet.finish(running[int(rng.integers(len(running)))], t)     # that device's predictor learns
        else:
            g = "abcde"[int(rng.integers(5))]
            if max_running is None or len(fleet.trackers[g]) < max_running:
                fleet.start(g, nxt, prof.models[int(rng.integers(6))], int(rng.integers(1, 33)), t,
                            deadline=t + float(rng.uniform(5.0, 200.0)))
                nxt += 1
        cand = ("cand", prof.models[int(rng.integers(6))], int(rng.integers(1, 33)))
        deadline = t + float(rng.uniform(5.0, 150.0))
        every = fleet.assess_all(cand, deadline, t)
        for g in fleet.devices:
            assert every[g] == fleet.assess(g, cand, deadline, t)
            checked += 1
    assert checked == 750


def _entity_fleet(kind: str, max_running):
    """Four devices, each with a pair-term predictor of its own (EntityRLS, Calibrated around it, or
    KernelBlocking), fitted on a simulated trace or on the H200 runs; their profiles and models."""
    from interfpred import Calibrated, EntityRLS, InterferenceModel, KernelBlocking, ProfileTable
    from interfpred.sim.workload import mix_scenario

    if kind == "blocking":
        from interfpred.data.datasets import h200_profiles, h200_streams

        m = h200_streams()
        ex = TimeWeighted(feature_map="corunners", target="slowdown")
        state = InterferenceModel(ex, KernelBlocking()).fit(measurements=m, profiles=h200_profiles()).to_state()
        keys = sorted({(str(m.model[k]), int(m.batch_size[k]), float(m.solo_ms[k])) for k in range(len(m))})
        prof = ProfileTable.from_columns(gpu=["h200"] * len(keys), model=[k[0] for k in keys],
                                         batch_size=[k[1] for k in keys], solo_ms=[k[2] for k in keys],
                                         sm=[None] * len(keys), l2=[None] * len(keys), dram=[None] * len(keys))
        kinds = [(k[0], k[1]) for k in keys]
    else:
        sc = mix_scenario(["resnet50", "vgg19", "vit_b16"], rho=1.2, executions=400, seed=3)
        ex = TimeWeighted(feature_map="rich", target="rate")
        pred = EntityRLS(log_target=True, rank=2) if kind == "entity" else Calibrated(EntityRLS(log_target=True))
        state = InterferenceModel(ex, pred).fit(sc.traces["trace"], sc.profiles).to_state()
        prof = zoo_profiles("l4")
        kinds = [(mdl, b) for mdl in ("resnet50", "vgg19", "vit_b16", "yolov8n") for b in (1, 4, 8, 16)]
    trackers = {g: ColocationTracker.from_model(InterferenceModel.from_state(state), prof) for g in "abcd"}
    return Fleet(trackers, margin=0.05, max_running=max_running), kinds


@pytest.mark.parametrize("kind,max_running", [("entity", None), ("entity", 3), ("calibrated", None),
                                               ("blocking", 4)])
def test_pair_term_devices_are_assessed_together_as_each_alone(kind, max_running):
    """Devices whose own predictor has pair terms take the stacked pair-term projection: every answer
    equals Fleet.assess on that device (its what_if and predict_finish) to the bit, event after event
    (each finish teaches that device's predictor), and twice at one instant (kept projections)."""
    fleet, kinds = _entity_fleet(kind, max_running)
    assert fleet._placement.own_predictors
    rng = np.random.default_rng(9)
    t, nxt, checked = 0.0, 0, 0
    for _ in range(60):
        t += float(rng.uniform(0.5, 6.0))
        running = [i for tr in fleet.trackers.values() for i in tr.running]
        if running and rng.random() < 0.4:
            fleet.finish(running[int(rng.integers(len(running)))], t)
        else:
            g = "abcd"[int(rng.integers(4))]
            if max_running is None or len(fleet.trackers[g]) < max_running:
                mdl, b = kinds[int(rng.integers(len(kinds)))]
                fleet.start(g, nxt, mdl, b, t, deadline=t + float(rng.uniform(5.0, 300.0)))
                nxt += 1
        for _ in range(2):
            mdl, b = kinds[int(rng.integers(len(kinds)))]
            cand, deadline = ("cand", mdl, b), t + float(rng.uniform(5.0, 300.0))
            stacked = fleet._placement.assess_all(fleet.trackers, fleet.deadline, cand, deadline, t,
                                                  margin=fleet.margin, max_running=max_running)
            assert set(stacked) == set(fleet.devices)         # none left to the one-by-one path
            for g in fleet.devices:
                assert stacked[g] == fleet.assess(g, cand, deadline, t)
                checked += 1
    assert checked == 480


def test_a_shared_pair_term_predictor_is_assessed_device_by_device():
    """A predictor shared by several devices learns from any of them: its terms cannot be kept per
    block, so those devices are left to the one-by-one path (which Fleet.assess_all takes for them)."""
    from interfpred import EntityRLS

    shared = EntityRLS()
    trs = {g: ColocationTracker(zoo_profiles("l4"), shared) for g in ("x", "y")}
    fleet = Fleet(trs)
    fleet.start("x", 1, "vgg19", 8, 0.0)
    assert not fleet._placement.own_predictors
    assert fleet._placement.assess_all(fleet.trackers, fleet.deadline, ("c", "resnet50", 4), 100.0, 1.0,
                                       margin=0.0) == {}
    every = fleet.assess_all(("c", "resnet50", 4), 100.0, 1.0)
    assert every == {g: fleet.assess(g, ("c", "resnet50", 4), 100.0, 1.0) for g in ("x", "y")}
