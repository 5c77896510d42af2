"""Fleet events a real scheduler sends: its clock, cancels, late finishes, max_running on start, one error wording."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from interfpred import RLS, Fleet, InterfpredError, OfflineLinear
from interfpred.constants import TIME_HORIZON_MS
from interfpred.sim.zoo import zoo_profiles


def slow_pairs():
    X = np.random.default_rng(0).random((40, 16))
    return OfflineLinear().fit(X, 1.0 - 0.2 * X[:, 15])


def make(**kw):
    return Fleet.from_profiles(zoo_profiles("l4"), slow_pairs, devices=["gpu0", "gpu1"], **kw)


def snap(fleet):
    return ({g: (tr.running, tr.now, tr.remaining_ms()) for g, tr in fleet.trackers.items()},
            {i: (fleet.where(i), fleet.deadline(i)) for tr in fleet.trackers.values() for i in tr.running},
            fleet.now)


def test_now_is_the_latest_device_clock_and_advance_brings_the_others_forward():
    fleet = make()
    assert fleet.now is None
    fleet.start("gpu0", 1, "vgg19", 4, 5.0)
    fleet.start("gpu1", 2, "vgg19", 4, 3.0)
    assert fleet.now == 5.0
    # gpu1's clock is behind: an event on it may still be stamped 4.0, a question must be at >= now
    fleet.start("gpu1", 3, "yolov8n", 1, 4.0)
    with pytest.raises(InterfpredError,
                       match=r"^Fleet.choose_device: device 'gpu0': time 4.5 is before the latest event at 5.0$"):
        fleet.choose_device(("c", "vgg19", 4), 100.0, 4.5)
    fleet.advance(6.0)
    assert [tr.now for tr in fleet.trackers.values()] == [6.0, 6.0] and fleet.now == 6.0
    fleet.advance(2.0)                        # clocks at or after t stay
    assert fleet.now == 6.0
    with pytest.raises(InterfpredError, match="^Fleet.start: device 'gpu1': time 5.0 is before the latest event at 6.0$"):
        fleet.start("gpu1", 4, "vgg19", 4, 5.0)
    assert fleet.choose_device(("c", "vgg19", 4), 1e4, 6.0) in fleet.devices


def test_advance_changes_no_feature():
    a, b = make(), make()
    for f in (a, b):
        f.start("gpu0", 1, "vgg19", 4, 0.0)
        f.start("gpu0", 2, "resnet50", 8, 1.0)
    a.advance(3.0)
    for f in (a, b):
        f.start("gpu0", 3, "yolov8n", 1, 4.0)
    assert np.array_equal(a.finish(1, 20.0).x, b.finish(1, 20.0).x)


def test_start_enforces_max_running_like_choose_device():
    fleet = make(max_running=1)
    fleet.start("gpu0", 1, "vgg19", 4, 0.0, deadline=100.0)
    assert fleet.choose_device((2, "vgg19", 4), 100.0, 0.0) == "gpu1"
    before = snap(fleet)
    with pytest.raises(InterfpredError, match=r"^Fleet.start: device 'gpu0': 1 executions running, the most is "
                                              r"max_running=1$"):
        fleet.start("gpu0", 2, "vgg19", 4, 0.0)
    assert snap(fleet) == before
    fleet.cancel(1)
    fleet.start("gpu0", 2, "vgg19", 4, 0.0)      # room again
    assert fleet.where(2) == "gpu0"


def test_cancel_drops_without_learning():
    prof = zoo_profiles("l4")
    fleet = Fleet.from_profiles(prof, RLS, devices=["gpu0"])
    fleet.start("gpu0", "x", "vgg19", 4, 0.0, deadline=50.0)
    fleet.start("gpu0", "y", "resnet50", 8, 1.0)
    fleet.cancel("y", 2.0)
    assert fleet.where("y") is None and fleet.trackers["gpu0"].running == ["x"]
    assert fleet.trackers["gpu0"].predictor.n_seen_ == 0
    with pytest.raises(InterfpredError, match="^Fleet.cancel: id 'y' is not running on this fleet$"):
        fleet.cancel("y")
    with pytest.raises(InterfpredError, match="^Fleet.deadline: id 'y' is not running"):
        fleet.deadline("y")
    assert fleet.finish("x", 9.0).learned


def test_late_finish_through_the_fleet():
    fleet = make(late_window_ms=3.0)
    fleet.start("gpu0", "x", "vgg19", 4, 0.0)
    fleet.start("gpu0", "y", "vgg19", 4, 5.0)
    assert fleet.finish("x", 4.0).latency_ms == 4.0 and fleet.where("x") is None
    fleet.start("gpu0", "z", "vgg19", 4, 9.0)
    with pytest.raises(InterfpredError, match="^Fleet.finish: device 'gpu0': finish of id 'y' refused: time 5.5 is "
                                              "3.5 ms before the latest event at 9.0, more than late_window_ms=3.0$"):
        fleet.finish("y", 5.5)
    assert fleet.where("y") == "gpu0"


def test_one_error_wording_names_the_method_and_the_device():
    fleet = make()
    fleet.start("gpu0", 1, "vgg19", 4, 5.0, deadline=100.0)
    before = snap(fleet)
    for call, msg in [
        (lambda: fleet.choose_device(("c", "roberta_base"), 10.0, 6.0),
         r"^Fleet.choose_device: candidate \('c', 'roberta_base'\) must be \(id, model, batch_size\)$"),
        (lambda: fleet.choose_device("c", 10.0, 6.0), "^Fleet.choose_device: candidate 'c' must be"),
        (lambda: fleet.choose_device(([1], "vgg19", 4), 10.0, 6.0), r"^Fleet.choose_device: candidate id \[1\] is not hashable"),
        (lambda: fleet.choose_device((1, "vgg19", 4), 10.0, 6.0),
         "^Fleet.choose_device: device 'gpu0': candidate id 1 is already running$"),
        (lambda: fleet.choose_device(("c", "vgg19", 2.5), 10.0, 6.0),
         "^Fleet.choose_device: candidate 'c' refused: batch_size 2.5 is not a positive integer$"),
        (lambda: fleet.choose_device(("c", "nope", 4), 10.0, 6.0),
         "^Fleet.choose_device: device 'gpu0': what_if candidate 'c' refused: no profile"),
        (lambda: fleet.choose_device(("c", "vgg19", 4), math.inf, math.inf),
         "^Fleet.choose_device: time inf is not finite$"),
        (lambda: fleet.choose_device(("c", "vgg19", 4), 10.0, "6"), r"^Fleet.choose_device: time '6' is not a number"),
        (lambda: fleet.choose_device(("c", "vgg19", 4), "10", 6.0), r"^Fleet.choose_device: deadline '10' is not a number"),
        (lambda: fleet.choose_device(("c", "vgg19", 4), True, 6.0), r"^Fleet.choose_device: deadline True is not a number"),
        (lambda: fleet.choose_device(("c", "vgg19", 4), 3e307, 6.0), "^Fleet.choose_device: deadline 3e\\+307 is beyond"),
        (lambda: fleet.choose_device(("c", "vgg19", 4), 10.0, 3e307), "^Fleet.choose_device: time 3e\\+307 is beyond"),
        (lambda: fleet.choose_device(("c", "vgg19", 4), 10**400, 6.0), "^Fleet.choose_device: deadline 1000.* is beyond"),
        (lambda: fleet.choose_device(("c", "vgg19", 4), -math.inf, 6.0), "^Fleet.choose_device: deadline -inf is not finite"),
        (lambda: fleet.assess("gpu0", ("c", "vgg19", 4), 10.0, 4.0),
         "^Fleet.assess: device 'gpu0': time 4.0 is before the latest event at 5.0$"),
        (lambda: fleet.assess("gpu9", ("c", "vgg19", 4), 10.0, 6.0), "^Fleet.assess: unknown device 'gpu9'"),
        (lambda: fleet.start("gpu1", 2, "vgg19", True, 6.0), "^Fleet.start: device 'gpu1': start of id 2 refused: "
                                                            "batch_size True is a bool"),
        (lambda: fleet.start("gpu1", 2, "vgg19", 4, 6.0, deadline=1.0), "^Fleet.start: deadline 1.0 is before t 6.0"),
        (lambda: fleet.start("gpu1", 1, "vgg19", 4, 6.0), "^Fleet.start: device 'gpu0': id 1 is already running$"),
        (lambda: fleet.start("gpu0", 2, "vgg19", 4, 4.0),
         "^Fleet.start: device 'gpu0': time 4.0 is before the latest event at 5.0$"),
        (lambda: fleet.finish(1, 3e307), "^Fleet.finish: time 3e\\+307 is beyond TIME_HORIZON_MS"),
        (lambda: fleet.finish(1, 4.0), "^Fleet.finish: device 'gpu0': finish of id 1 refused: time 4.0 is before"),
        (lambda: fleet.finish(7, 6.0), "^Fleet.finish: id 7 is not running on this fleet$"),
        (lambda: fleet.cancel(1, math.nan), "^Fleet.cancel: time nan is not finite$"),
        (lambda: fleet.advance(2 * TIME_HORIZON_MS), "^Fleet.advance: time .* is beyond TIME_HORIZON_MS"),
        (lambda: fleet.advance(False), r"^Fleet.advance: time False is not a number \(a bool\)$"),
    ]:
        with pytest.raises(InterfpredError, match=msg):
            call()
        assert snap(fleet) == before


def test_choose_device_with_no_deadline_raises_no_warning():
    fleet = make()
    fleet.start("gpu0", 1, "vgg19", 4, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fleet.choose_device(("c", "vgg19", 4), math.inf, 1.0) == "gpu1"
        assert fleet.assess("gpu0", ("c", "vgg19", 4), math.inf, 1.0)[0]


def test_constructor_types_are_strict():
    prof = zoo_profiles("l4")
    for kw, msg in [({"margin": "0.1"}, "margin '0.1'"), ({"margin": True}, "margin True"),
                    ({"margin": 10**400}, "margin 1000"), ({"margin": -0.5}, "margin -0.5"),
                    ({"max_running": True}, "max_running True"), ({"max_running": 2.0}, "max_running 2.0"),
                    ({"quantile": "0.5"}, "quantile '0.5'"), ({"late_window_ms": "1"}, "late_window_ms '1'")]:
        with pytest.raises(InterfpredError, match=msg):
            Fleet.from_profiles(prof, RLS, devices=["gpu0"], **kw)
    assert Fleet.from_profiles(prof, RLS, devices=["gpu0"], margin=np.float64(0.1), max_running=2).margin == 0.1
