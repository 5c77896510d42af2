"""Tracker events a real scheduler sends: cancels, late completions, strict argument types, the time horizon."""

from __future__ import annotations

import math

import numpy as np
import pytest
from doubles import Opaque

from interfpred import RLS, ColocationTracker, InterfpredError, OfflineLinear
from interfpred.constants import TIME_HORIZON_MS, TIME_RESOLUTION_MS
from interfpred.sim.zoo import zoo_profiles

MODELS = ("resnet50", "vgg19", "yolov8n", "roberta_base")


def frozen():
    """A fixed model (learns nothing), so two trackers fed the same events agree on every rate."""
    X = np.random.default_rng(0).random((40, 16))
    return OfflineLinear().fit(X, 1.0 - 0.2 * X[:, 15])


def snap(tr):
    now = tr.now if tr.now is not None else 0.0
    return tr.running, tr.now, tr.remaining_ms(), tr.predict_finish(now)


# ---------------------------------------------------------------------------- cancel
def test_cancel_drops_without_learning_and_co_runners_still_met_it():
    prof = zoo_profiles("l4")
    p = RLS()
    tr = ColocationTracker(prof, p)
    ref = ColocationTracker(prof, RLS(), learn=False)
    for t_ in (tr, ref):
        t_.start("x", "resnet50", 8, 0.0)
        t_.start("y", "vgg19", 4, 1.0)
    tr.cancel("y", 3.0)
    ref.finish("y", 3.0)
    assert tr.running == ["x"] and p.n_seen_ == 0
    assert tr.remaining_ms() == ref.remaining_ms()
    got, want = tr.finish("x", 9.0), ref.finish("x", 9.0)
    assert np.array_equal(got.x, want.x)          # x counts y beside it for [1, 3], as it met it
    alone = ColocationTracker(prof, RLS())
    alone.start("x", "resnet50", 8, 0.0)
    assert not np.array_equal(got.x, alone.finish("x", 9.0).x)
    assert p.n_seen_ == 1                         # only x was learned


def test_cancel_defaults_to_the_latest_event_and_refuses_like_finish():
    tr = ColocationTracker(zoo_profiles("l4"), RLS())
    tr.start("x", "resnet50", 8, 0.0)
    tr.start("y", "vgg19", 4, 2.0)
    tr.cancel("x")
    assert tr.running == ["y"] and tr.now == 2.0
    before = snap(tr)
    for call, msg in [(lambda: tr.cancel("x"), "cancel of id 'x' refused: it is not running"),
                      (lambda: tr.cancel("y", 1.0), "before the latest event"),
                      (lambda: tr.cancel("y", "3"), "not a number"),
                      (lambda: tr.cancel("y", math.inf), "not finite")]:
        with pytest.raises(InterfpredError, match=msg):
            call()
        assert snap(tr) == before


# ---------------------------------------------------------------------------- late completions
def _events(seed, n=40):
    """Random starts and finishes on one device, in time order: (kind, id, t, model, batch)."""
    rng = np.random.default_rng(seed)
    t, running, out = 0.0, [], []
    for i in range(n):
        t += float(rng.exponential(2.0))
        if running and (len(running) >= 4 or rng.random() < 0.45):
            out.append(("finish", running.pop(int(rng.integers(len(running)))), t, None, None))
        else:
            running.append(i)
            out.append(("start", i, t, MODELS[i % 4], int(rng.integers(1, 9))))
    return out


def _feed(tr, events):
    res = {}
    for kind, i, t, model, batch in events:
        if kind == "start":
            tr.start(i, model, batch, t)
        else:
            res[i] = tr.finish(i, t)
    return res


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("opaque", [False, True])
def test_late_finish_equals_in_order_arrival(seed, opaque):
    """A finish reported after later events (within the window) leaves the tracker as in-order arrival would:
    the late execution's features, every still-running execution's features and the projection, to the bit."""
    prof = zoo_profiles("l4")
    events = _events(seed)
    fins = [j for j, e in enumerate(events) if e[0] == "finish"]
    j = fins[len(fins) // 2]                 # this finish is reported late, after `lag` later events
    lag = 3
    late_order = events[:j] + events[j + 1: j + 1 + lag] + [events[j]] + events[j + 1 + lag:]
    window = late_order[j + lag - 1][2] - events[j][2] + 1e-9
    wrap = Opaque if opaque else (lambda p: p)
    in_order = ColocationTracker(prof, wrap(frozen()))
    late = ColocationTracker(prof, wrap(frozen()), late_window_ms=window)
    _feed(in_order, events[: j + 1 + lag])
    got = _feed(late, late_order[: j + 1 + lag])
    want_id = events[j][1]
    in_order_res = _feed(ColocationTracker(prof, wrap(frozen())), events[: j + 1])[want_id]
    assert np.array_equal(got[want_id].x, in_order_res.x)
    assert got[want_id].latency_ms == in_order_res.latency_ms
    assert late.running == in_order.running and late.now == in_order.now
    assert late.remaining_ms() == pytest.approx(in_order.remaining_ms(), rel=1e-12)
    t = late.now
    assert late.predict_finish(t) == pytest.approx(in_order.predict_finish(t), rel=1e-12)
    # the executions still running when the late finish arrived are learned from exactly as in order
    rest = events[j + 1 + lag:]
    a, b = _feed(late, rest), _feed(in_order, rest)
    assert a.keys() == b.keys()
    for i in a:
        assert np.array_equal(a[i].x, b[i].x), i


def test_late_finish_replays_the_entities_of_an_entity_predictor():
    """A predictor learning per-model terms gets the same entity rows from a late finish as from in-order events."""
    from interfpred import EntityRLS

    class Recorder(EntityRLS):
        def update(self, X, y, *, entities=None):
            self.rows = [*getattr(self, "rows", []), entities.row(0)]
            return super().update(X, y, entities=entities)

    prof = zoo_profiles("l4")
    late, in_order = Recorder(), Recorder()
    a = ColocationTracker(prof, late, late_window_ms=10.0)
    b = ColocationTracker(prof, in_order)
    for tr in (a, b):
        tr.start("x", "vgg19", 4, 0.0)
        tr.start("y", "resnet50", 8, 1.0)
    a.start("z", "yolov8n", 1, 4.0)
    a.finish("y", 3.0)                     # late: z (from 4.0) never met y
    b.finish("y", 3.0)
    b.start("z", "yolov8n", 1, 4.0)
    for tr in (a, b):
        tr.finish("x", 9.0)
        tr.finish("z", 10.0)
    assert late.rows == in_order.rows and len(late.rows) == 3


def test_late_finish_rules():
    prof = zoo_profiles("l4")
    tr = ColocationTracker(prof, RLS(), late_window_ms=2.0)
    tr.start("x", "resnet50", 8, 0.0)
    tr.start("y", "vgg19", 4, 5.0)
    tr.start("z", "vgg19", 4, 6.0)
    before = snap(tr)
    for call, msg in [(lambda: tr.finish("x", 3.5), r"is 2.5 ms before the latest event at 6.0, more than late_window_ms=2.0"),
                      (lambda: tr.finish("z", 5.5), "before its start at 6.0"),
                      (lambda: tr.cancel("x", 1.0), "more than late_window_ms")]:
        with pytest.raises(InterfpredError, match=msg):
            call()
        assert snap(tr) == before
    res = tr.finish("x", 4.5)                   # before y and z started: it never met them
    assert res.latency_ms == 4.5 and tr.now == 6.0 and sorted(tr.running) == ["y", "z"]
    alone = ColocationTracker(prof, RLS())
    alone.start("x", "resnet50", 8, 0.0)
    assert np.array_equal(res.x, alone.finish("x", 4.5).x)
    # a late cancel: y stopped at 5.5, so z (from 6.0) never met it
    tr.cancel("y", 5.5)
    solo_z = ColocationTracker(prof, RLS())
    solo_z.start("z", "vgg19", 4, 6.0)
    assert np.array_equal(tr.finish("z", 9.0).x, solo_z.finish("z", 9.0).x)


def test_late_window_zero_keeps_events_in_order():
    tr = ColocationTracker(zoo_profiles("l4"), RLS())
    tr.start("x", "resnet50", 8, 0.0)
    tr.start("y", "vgg19", 4, 5.0)
    with pytest.raises(InterfpredError, match=r"time 4.0 is before the latest event at 5.0 \(late_window_ms=0"):
        tr.finish("x", 4.0)


def test_late_finish_before_the_oldest_event_remembered_is_refused(monkeypatch):
    import interfpred.serving.tracker as tracker_module
    monkeypatch.setattr(tracker_module, "TRACKER_LATE_MAX_EVENTS", 3)
    tr = ColocationTracker(zoo_profiles("l4"), RLS(), late_window_ms=100.0)
    tr.start("x", "resnet50", 8, 0.0)
    for i in range(4):
        tr.start(i, "yolov8n", 1, 1.0 + i)
    with pytest.raises(InterfpredError, match="before the oldest event remembered at 1.0"):
        tr.finish("x", 0.5)
    assert tr.finish("x", 2.5).latency_ms == 2.5   # after the oldest one kept (2.0): replayed


def test_failed_late_finish_leaves_everything_as_before():
    class Flaky:
        def __init__(self):
            self.inner, self.fail = frozen(), False

        def predict(self, X):
            if self.fail:
                raise RuntimeError("predictor down")
            return self.inner.predict(X)

        def update(self, X, y):
            pass

    p = Flaky()
    tr = ColocationTracker(zoo_profiles("l4"), p, late_window_ms=10.0)
    tr.start("x", "resnet50", 8, 0.0)
    tr.start("y", "vgg19", 4, 2.0)
    tr.start("z", "vgg19", 4, 3.0)
    before = snap(tr)
    p.fail = True
    with pytest.raises(RuntimeError, match="predictor down"):
        tr.finish("x", 1.0)
    p.fail = False
    assert snap(tr) == before
    assert tr.finish("x", 1.0).latency_ms == 1.0 and sorted(tr.running) == ["y", "z"]


def test_late_window_is_checked():
    prof = zoo_profiles("l4")
    for bad in (-1.0, math.inf, math.nan, True, "5"):
        with pytest.raises(InterfpredError, match="late_window_ms"):
            ColocationTracker(prof, RLS(), late_window_ms=bad)
    assert ColocationTracker(prof, RLS(), late_window_ms=3).late_window_ms == 3.0


# ---------------------------------------------------------------------------- advance
def test_advance_moves_the_clock_and_changes_no_feature():
    prof = zoo_profiles("l4")
    a, b = ColocationTracker(prof, RLS()), ColocationTracker(prof, RLS())
    for tr in (a, b):
        tr.start("x", "resnet50", 8, 0.0)
        tr.start("y", "vgg19", 4, 1.0)
    a.advance(4.0)
    assert a.now == 4.0 and a.remaining_ms() == b.remaining_ms(4.0)
    with pytest.raises(InterfpredError, match="before the latest event at 4.0"):
        a.start("z", "vgg19", 4, 3.0)
    with pytest.raises(InterfpredError, match="advance refused: time 2.0 is before"):
        a.advance(2.0)
    for tr in (a, b):
        tr.start("z", "yolov8n", 1, 5.0)
    assert np.array_equal(a.finish("x", 7.0).x, b.finish("x", 7.0).x)
    assert np.array_equal(a.finish("z", 8.0).x, b.finish("z", 8.0).x)


# ---------------------------------------------------------------------------- strict types, horizon
def test_strict_argument_types_everywhere():
    tr = ColocationTracker(zoo_profiles("l4"), RLS())
    tr.start(1, "resnet50", 8, 1.0)
    before = snap(tr)
    bad = [
        (lambda: tr.start(2, "vgg19", 4, "3"), r"time '3' is not a number \(a str\)"),
        (lambda: tr.start(2, "vgg19", 4, True), r"time True is not a number \(a bool\)"),
        (lambda: tr.start(2, "vgg19", True, 3.0), "batch_size True is a bool"),
        (lambda: tr.start(2, "vgg19", 2.5, 3.0), "batch_size 2.5 is not a positive integer"),
        (lambda: tr.start(2, "vgg19", "4", 3.0), "batch_size '4' is a str"),
        (lambda: tr.start(2, "vgg19", 0, 3.0), "batch_size 0 is not a positive integer"),
        (lambda: tr.start(2, "vgg19", 2**25, 3.0), "larger than MAX_BATCH_SIZE"),
        (lambda: tr.start(2, "vgg19", 10**400, 3.0), "larger than MAX_BATCH_SIZE"),
        (lambda: tr.start(2, "vgg19", 4, 3.0, share=10**400), "is not an MPS"),
        (lambda: tr.start(2, "vgg19", 4, 3.0, share=True), "share True is not an MPS"),
        (lambda: tr.start(2, "vgg19", 4, 3.0, share=0.0), "share 0.0 is not an MPS"),
        (lambda: tr.finish(1, "5"), "not a number"),
        (lambda: tr.finish(1, np.bool_(True)), "not a number"),
        (lambda: tr.what_if([(2, "vgg19", 2.5)], 3.0), "what_if candidate 2 refused: batch_size 2.5"),
        (lambda: tr.what_if([(2, "vgg19", False)], 3.0), "batch_size False is a bool"),
        (lambda: tr.what_if([], "3"), "what_if refused: time '3' is not a number"),
        (lambda: tr.predict_finish(True), "not a number"),
        (lambda: tr.remaining_ms("2"), "remaining_ms refused: time '2' is not a number"),
        (lambda: tr.advance(None), "not a number"),
        (lambda: tr.candidate_demand(2, "vgg19", 1.5), "batch_size 1.5"),
        (lambda: tr.what_if([], 3.0, quantile="0.5"), "quantile '0.5' is not a number"),
        (lambda: tr.what_if([], 3.0, quantile=True), "quantile True is not a number"),
    ]
    for call, msg in bad:
        with pytest.raises(InterfpredError, match=msg):
            call()
        assert snap(tr) == before
    # what the trace reader accepts is accepted: ints of any kind and integral floats
    tr.start(2, "vgg19", np.int64(4), np.float32(2.0))
    tr.start(3, "vgg19", 4.0, 3)
    assert tr.what_if([(4, "yolov8n", np.int32(1))], np.int64(3))[4] > 3


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, 3e307, -3e307, 2 * TIME_HORIZON_MS, 10**400])
def test_times_beyond_the_horizon_are_refused_in_every_method(bad):
    tr = ColocationTracker(zoo_profiles("l4"), RLS())
    tr.start(1, "resnet50", 8, 1.0)
    before = snap(tr)
    for call in (lambda: tr.start(2, "vgg19", 4, bad), lambda: tr.finish(1, bad), lambda: tr.cancel(1, bad),
                 lambda: tr.what_if([], bad), lambda: tr.predict_finish(bad), lambda: tr.remaining_ms(bad),
                 lambda: tr.advance(bad)):
        with pytest.raises(InterfpredError, match="not finite|beyond TIME_HORIZON_MS"):
            call()
        assert snap(tr) == before


def test_huge_time_no_longer_wedges_the_tracker():
    """3e307 was accepted and made every later feature inf ("X contains inf"): refused now, and the tracker goes on."""
    p = RLS()
    tr = ColocationTracker(zoo_profiles("l4"), p)
    tr.start(1, "resnet50", 8, 0.0)
    tr.start(2, "vgg19", 4, 1.0)
    with pytest.raises(InterfpredError, match="beyond TIME_HORIZON_MS"):
        tr.finish(2, 3e307)
    with pytest.raises(InterfpredError, match="beyond TIME_HORIZON_MS"):
        tr.start(3, "vgg19", 4, 3e307)
    for i, t in ((2, 6.0), (1, 9.0)):
        res = tr.finish(i, t)
        assert res.learned and np.isfinite(res.x).all()
    assert p.n_seen_ == 2


def test_the_horizon_keeps_the_time_resolution_and_finite_features():
    # The largest float64 around which neighbours are at most TIME_RESOLUTION_MS apart, within a factor 2.
    assert np.spacing(TIME_HORIZON_MS) <= TIME_RESOLUTION_MS < np.spacing(2 * TIME_HORIZON_MS)
    tr = ColocationTracker(zoo_profiles("l4"), RLS())
    tr.start(1, "resnet50", 8, -TIME_HORIZON_MS)
    tr.start(2, "vgg19", 4, 1.8e12)                # an epoch-ms clock
    r2 = tr.finish(2, 1.8e12 + 7.5)
    assert r2.latency_ms == pytest.approx(7.5, abs=TIME_RESOLUTION_MS) and np.isfinite(r2.x).all()
    r1 = tr.finish(1, TIME_HORIZON_MS)
    assert r1.latency_ms == 2 * TIME_HORIZON_MS and np.isfinite(r1.x).all()


# ---------------------------------------------------------------------------- FinishResult
def test_relative_error_sign_and_zero_length():
    prof = zoo_profiles("l4")
    tr = ColocationTracker(prof, RLS())       # fresh: predicts solo speed
    solo = prof.lookup("resnet50", 8).solo_ms
    tr.start(1, "resnet50", 8, 0.0)
    slow = tr.finish(1, 2 * solo)             # took twice its prediction: under-predicted, negative
    assert slow.relative_error == pytest.approx((slow.predicted_latency_ms - slow.latency_ms) / slow.latency_ms)
    assert slow.relative_error == pytest.approx(-0.5)
    tr.start(2, "resnet50", 8, 100.0)
    zero = tr.finish(2, 100.0)
    assert zero.latency_ms == 0.0 and math.isnan(zero.relative_error) and not zero.learned
