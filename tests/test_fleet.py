"""Fleet: deadline-aware placement over several trackers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from interfpred import ColocationTracker, Fleet, InterfpredError, OfflineLinear
from interfpred.sim.zoo import zoo_profiles


def slow_pairs():
    """A model: every co-runner costs 20% of the rate (exactly linear in n_others)."""
    X = np.random.default_rng(0).random((40, 16))
    return OfflineLinear().fit(X, 1.0 - 0.2 * X[:, 15])


def make(margin=0.0, max_running=None):
    return Fleet.from_profiles(zoo_profiles("l4"), slow_pairs, devices=["g0", "g1"], margin=margin, max_running=max_running)


def test_choose_device_respects_every_deadline():
    prof = zoo_profiles("l4")
    s_r = prof.lookup("vgg19", 8).solo_ms
    s_c = prof.lookup("resnet50", 4).solo_ms
    fleet = make()
    # g0 runs r with a deadline it only meets alone; g1 runs q with a loose one
    fleet.start("g0", "r", "vgg19", 8, 0.0, deadline=s_r * 1.01)
    fleet.start("g1", "q", "vgg19", 8, 0.0, deadline=1e4)
    assert fleet.choose_device(("c", "resnet50", 4), deadline=1e4, t=0.0) == "g1"
    # the candidate's own deadline: with one co-runner it runs at 0.8 -> needs s_c / 0.8 (while q runs)
    assert fleet.choose_device(("c", "resnet50", 4), deadline=s_c * 1.2, t=0.0) is None
    assert fleet.choose_device(("c", "resnet50", 4), deadline=s_c * 1.26, t=0.0) == "g1"
    # a margin makes the same question infeasible
    fleet2 = make(margin=0.1)
    fleet2.start("g1", "q", "vgg19", 8, 0.0, deadline=1e4)
    fleet2.start("g0", "r", "vgg19", 8, 0.0, deadline=s_r * 1.01)
    assert fleet2.choose_device(("c", "resnet50", 4), deadline=s_c * 1.26, t=0.0) is None


def test_least_added_latency_wins():
    fleet = make()
    fleet.start("g0", "big", "vgg19", 32, 0.0, deadline=1e5)
    fleet.start("g1", "small", "yolov8n", 1, 0.0, deadline=1e5)
    t = 0.5
    # both feasible: the candidate delays "small" less than "big" (it ends sooner), so g1
    added = {g: fleet.assess(g, ("c", "resnet50", 8), 1e5, t)[1] for g in fleet.devices}
    assert added["g1"] < added["g0"]
    assert fleet.choose_device(("c", "resnet50", 8), 1e5, t) == "g1"
    # and the number is what the tracker projects
    tr = fleet.trackers["g1"]
    w = tr.what_if([("c", "resnet50", 8)], t)
    b = tr.predict_finish(t)
    assert added["g1"] == pytest.approx((w["c"] - t) + (w["small"] - b["small"]))


def test_max_running_and_finish():
    fleet = make(max_running=1)
    fleet.start("g0", 1, "vgg19", 4, 0.0, deadline=100.0)
    assert fleet.choose_device((2, "vgg19", 4), 100.0, 0.0) == "g1"
    fleet.start("g1", 2, "vgg19", 4, 0.0, deadline=100.0)
    assert fleet.choose_device((3, "vgg19", 4), 100.0, 0.0) is None
    res = fleet.finish(1, 12.0)
    assert res.execution.id == 1 and fleet.where(1) is None
    assert fleet.choose_device((3, "vgg19", 4), 100.0, 12.0) == "g0"
    assert fleet.deadline(2) == 100.0


def _snap(fleet):
    return ({g: (tr.running, tr.now, tr.remaining_ms()) for g, tr in fleet.trackers.items()},
            {i: (fleet.where(i), fleet.deadline(i)) for tr in fleet.trackers.values() for i in tr.running})


def test_bad_input_leaves_fleet_unchanged():
    fleet = make()
    fleet.start("g0", 1, "vgg19", 4, 1.0, deadline=100.0)
    before = _snap(fleet)
    for call, msg in [
        (lambda: fleet.choose_device((2, "vgg19", 4), deadline=0.5, t=1.0), "deadline in the past"),
        (lambda: fleet.choose_device((1, "vgg19", 4), deadline=50.0, t=1.0), "already running"),
        (lambda: fleet.choose_device((2, "nope", 4), deadline=50.0, t=1.0), "no profile"),
        (lambda: fleet.choose_device((2, "vgg19", 4), deadline=50.0, t=0.5), "before the latest event"),
        (lambda: fleet.choose_device(5, deadline=50.0, t=1.0), "must be"),
        (lambda: fleet.start("g9", 2, "vgg19", 4, 1.0), "unknown device"),
        (lambda: fleet.start("g1", 1, "vgg19", 4, 1.0), "already running"),
        (lambda: fleet.start("g1", 2, "vgg19", 4, 2.0, deadline=1.0), "deadline in the past"),
        (lambda: fleet.start("g1", 2, "nope", 4, 2.0), "no profile"),
        (lambda: fleet.finish(9, 2.0), "not running"),
        (lambda: fleet.finish(1, 0.0), "before the latest event"),
        (lambda: fleet.choose_device((2, "vgg19", 4), deadline=math.nan, t=1.0), "NaN"),
    ]:
        with pytest.raises(InterfpredError, match=msg):
            call()
        assert _snap(fleet) == before


def test_constructor_checks():
    prof = zoo_profiles("l4")
    tr = ColocationTracker(prof, slow_pairs())
    with pytest.raises(InterfpredError, match="shares its tracker"):
        Fleet({"a": tr, "b": tr})
    with pytest.raises(InterfpredError, match="non-empty"):
        Fleet({})
    with pytest.raises(InterfpredError, match="margin"):
        Fleet({"a": tr}, margin=-1)
    shared = Fleet.from_profiles(prof, slow_pairs, devices=["a", "b"], shared_predictor=True)
    assert shared.trackers["a"].predictor is shared.trackers["b"].predictor


def test_devices_and_profile_gpu_keywords():
    prof = zoo_profiles("l4")
    fleet = Fleet.from_profiles(prof, slow_pairs, devices=["d0", "d1"], gpu="l4")
    assert fleet.devices == ("d0", "d1")
    assert all(tr.gpu == "l4" for tr in fleet.trackers.values())
    fleet.start("d1", 1, "vgg19", 8, 0.0)
    assert fleet.where(1) == "d1"
    ok, added = fleet.assess(device="d0", candidate=(2, "resnet50", 4), deadline=1e5, t=1.0)
    assert ok and added >= 0.0


def test_devices_are_required_and_gpu_names_only_the_gpu_type():
    prof = zoo_profiles("l4")
    with pytest.raises(TypeError, match="devices"):
        Fleet.from_profiles(prof, slow_pairs)
    with pytest.raises(TypeError):
        Fleet.from_profiles(prof, slow_pairs, ["d0"])          # devices by keyword only
    fleet = Fleet.from_profiles(prof, slow_pairs, devices=["d0", "d1"])
    with pytest.raises(TypeError, match="gpu"):
        fleet.start(gpu="d1", id=1, model="vgg19", batch_size=8, t=0.0)
    with pytest.raises(TypeError, match="gpu"):
        fleet.assess(gpu="d0", candidate=(2, "resnet50", 4), deadline=1e5, t=1.0)
    assert fleet.where(1) is None


def test_a_quantile_fleet_refuses_trackers_without_that_bound_at_construction():
    from interfpred import RLS, Calibrated

    prof = zoo_profiles("l4")
    with pytest.raises(InterfpredError, match=r"device 'b' holds RLS, which gives no quantiles; wrap .*Calibrated"):
        Fleet({"a": ColocationTracker(prof, Calibrated(RLS(), quantiles=(0.99,))),
               "b": ColocationTracker(prof, RLS())}, quantile=0.99)
    with pytest.raises(InterfpredError, match=r"calibrates the levels 0.1, 0.9, not 0.99; build it with quantiles"):
        Fleet({"a": ColocationTracker(prof, Calibrated(RLS(), quantiles=(0.9,)))}, quantile=0.99)
    fleet = Fleet({"a": ColocationTracker(prof, Calibrated(RLS(), quantiles=(0.9, 0.99)))}, quantile=0.99)
    assert fleet.choose_device((1, "yolov8n", 1), 1e6, 0.0) == "a"
    assert Fleet({"a": ColocationTracker(prof, RLS())}).quantile is None     # the mean needs no bounds
