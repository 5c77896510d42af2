"""ColocationTracker: fluid what-if projection, elapsed progress, learning, bad input."""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest
from doubles import Opaque
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_feature_map, naive_tracker_projection

from interfpred import (
    RLS,
    ColocationTracker,
    FinishedExecution,
    GpuletsModel,
    InterfpredError,
    OfflineLinear,
    OnlineSGD,
    ProfileTable,
    Static,
    TimeWeighted,
)
from interfpred.predictors import PredictorTags
from interfpred.sim.contention import GpuSpec
from interfpred.sim.engine import simulate_work
from interfpred.sim.zoo import zoo_profiles

EPS = 0.03
SPEC = GpuSpec(name="t", theta=0.0, epsilon=EPS, sigma=0.0)


class PerfectSM:
    """The true rate of SM-only executions: min(1, 1 / total sm) / (1 + eps * co-runners).

    With l2 = dram = 0 every execution is limited by the SMs alone, progressive filling gives
    them one common rate, and the rich map carries exactly its inputs (sm_total, n_others).
    """

    tags = PredictorTags(learns_online=False)

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        single = X.ndim == 1
        X = np.atleast_2d(X)
        r = np.minimum(1.0, 1.0 / X[:, 9]) / (1.0 + EPS * X[:, 15])
        return float(r[0]) if single else r

    def update(self, X, y):
        pass



def sm_profiles():
    return ProfileTable.from_columns(gpu=["t"] * 4, model=["a", "b", "c", "d"], batch_size=[1] * 4,
                                     solo_ms=[10.0, 6.0, 4.0, 1.0], sm=[0.6, 0.5, 0.3, 0.9],
                                     l2=[0.0] * 4, dram=[0.0] * 4)


def snapshot(tr):
    return (tr.running, tr.now, tr.remaining_ms(), tr.predict_finish(tr.now if tr.now is not None else 0.0),
            copy.deepcopy(tr.predictor.to_state()) if hasattr(tr.predictor, "to_state") else None)


# ---------------------------------------------------------------------------- ground truth
@pytest.mark.parametrize("fast", [False, True])
def test_perfect_predictor_reproduces_ground_truth(fast):
    prof = sm_profiles()
    # a at 0, d at 0.5 (short; finishes before the question), b at 1; question at 2.5: launch c.
    names = ["a", "d", "b", "c"]
    dem = np.array([[prof.lookup(m, 1).sm, 0.0, 0.0] for m in names])
    work = np.array([prof.lookup(m, 1).solo_ms for m in names])
    starts = np.array([0.0, 0.5, 1.0, 2.5])
    _, end = simulate_work(work, dem, starts, spec=SPEC, queue=False)
    assert end[1] < 2.5
    if fast:
        # In 1- and 2-sets without saturation the truth is linear in n_others: fit it exactly.
        rng = np.random.default_rng(0)
        ex = TimeWeighted(feature_map="rich", target="rate")
        rows, ys = [], []
        for _ in range(60):
            k = int(rng.integers(1, 3))
            d = np.zeros((k, 3))
            d[:, 0] = rng.uniform(0.05, 0.5, k)
            rows.append(ex.map_running_set(d))
            ys += [1.0 / (1.0 + EPS * (k - 1))] * k
        predictor = OfflineLinear().fit(np.vstack(rows), np.array(ys))
        # keep the question unsaturated and at most pairs: a alone, then with c
        tr = ColocationTracker(prof, predictor, ex)
        tr.start("a", "a", 1, 0.0)
        got = tr.what_if([("c", "c", 1)], 2.0)
        _, e2 = simulate_work([10.0, 4.0], [[0.6, 0, 0], [0.3, 0, 0]], [0.0, 2.0], spec=SPEC, queue=False)
        assert got == pytest.approx({"a": e2[0], "c": e2[1]}, rel=1e-9)
        return
    tr = ColocationTracker(prof, PerfectSM())
    tr.start("a", "a", 1, 0.0)
    tr.start("d", "d", 1, 0.5)
    tr.start("b", "b", 1, 1.0)
    tr.finish("d", float(end[1]))
    got = tr.what_if([("c", "c", 1)], 2.5)
    assert got == pytest.approx({"a": end[0], "b": end[2], "c": end[3]}, rel=1e-9)
    # and predict_finish before launching c agrees with the truth without c
    _, end3 = simulate_work(work[:3], dem[:3], starts[:3], spec=SPEC, queue=False)
    assert tr.predict_finish(2.5) == pytest.approx({"a": end3[0], "b": end3[2]}, rel=1e-9)


def test_elapsed_progress_counts():
    # Twins at full SM: each runs at 0.5 / (1 + eps). b (5 ms of work) finishes when a is half done.
    prof = ProfileTable.from_columns(gpu=["t"] * 2, model=["a", "b"], batch_size=[1, 1], solo_ms=[10.0, 5.0],
                                     sm=[1.0, 1.0], l2=[0.0, 0.0], dram=[0.0, 0.0])
    tr = ColocationTracker(prof, PerfectSM())
    tr.start("a", "a", 1, 0.0)
    tr.start("b", "b", 1, 0.0)
    t_b = 5.0 * 2.0 * (1 + EPS)
    assert tr.predict_finish(0.0)["b"] == pytest.approx(t_b)
    tr.finish("b", t_b)
    assert tr.remaining_ms()["a"] == pytest.approx(5.0)
    assert tr.predict_finish(t_b)["a"] == pytest.approx(t_b + 5.0)
    # an over-predicting model cannot push remaining work below the floor
    tr2 = ColocationTracker(prof, RLS())   # fresh: rate 1
    tr2.start("a", "a", 1, 0.0)
    assert tr2.remaining_ms(100.0)["a"] == pytest.approx(0.1)
    assert tr2.predict_finish(100.0)["a"] == pytest.approx(100.1)


def test_compiled_and_generic_paths_each_match_the_naive_projection():
    # The compiled affine projection and the generic one (one predict per segment, for a predictor the tracker
    # cannot read as affine) are each held to the plain-Python projection of tests/naive.py, never to each other.
    prof = zoo_profiles("l4")
    rng = np.random.default_rng(3)
    launches = [("resnet50", 8), ("vgg19", 2), ("yolov8n", 32)]
    q = [("x", "vit_b16", 4), ("y", "convnext_b", 1)]

    def check(p, ex, combine):
        history = []
        for i, (m, bs) in enumerate(launches):
            pr = prof.lookup(m, bs)
            history.append(("start", i, [pr.sm, pr.l2, pr.dram], pr.solo_ms, float(i)))
        cd = [(c, [prof.lookup(m, b).sm, prof.lookup(m, b).l2, prof.lookup(m, b).dram], prof.lookup(m, b).solo_ms)
              for c, m, b in q]
        for wrapped, compiled in ((p, True), (Opaque(p), False)):
            tr = ColocationTracker(prof, wrapped, ex)
            assert (tr.projection_inputs() is not None) is compiled
            for i, (m, bs) in enumerate(launches):
                tr.start(i, m, bs, float(i))
            want = naive_tracker_projection(history, 3.5, cd, _rate_fn(p, ex.feature_map, ex.target, tr.min_rate,
                                                                        tr.max_rate, combine))
            got = tr.what_if(q, 3.5)
            assert set(got) == set(want)
            for k in want:
                assert got[k] == pytest.approx(want[k], rel=1e-9), (compiled, k)

    for make in (lambda: RLS(), lambda: OnlineSGD(standardize=True), lambda: OfflineLinear()):
        p = make()
        X = rng.random((100, 16))
        p.fit(X, 0.9 - 0.2 * X[:, 9] + 0.1 * X[:, 1] - 0.05 * X[:, 15])
        for target in ("rate", "slowdown"):
            check(p, TimeWeighted(feature_map="rich", target=target), "sum")
    check(GpuletsModel(coefficients=(0.5, 0.8, 0.4, 0.3, 0.9)),
          Static(feature_map="gpulets", combine="max", target="slowdown"), "max")


# ---------------------------------------------------------------------------- property test
def _rate_fn(predictor, feature_map, target, lo, hi, combine="sum"):
    def rate_fn(demands):
        rows = [naive_feature_map(d, demands[:i] + demands[i + 1:], feature_map, combine)
                for i, d in enumerate(demands)]
        out = []
        for row in rows:
            p = float(predictor.predict(np.array(row)))
            r = p if target == "rate" else (1.0 / p if p > 0 else hi)
            out.append(min(hi, max(lo, r)))
        return out
    return rate_fn


_events = st.lists(st.tuples(st.booleans(), st.floats(0.0, 3.0), st.integers(0, 5), st.integers(1, 32)),
                   min_size=1, max_size=14)


@settings(max_examples=25, deadline=None)
@given(events=_events, target=st.sampled_from(["rate", "slowdown"]), seed=st.integers(0, 3),
       opaque=st.booleans())
def test_what_if_matches_naive_reference(events, target, seed, opaque):
    prof = zoo_profiles("l4")
    rng = np.random.default_rng(seed)
    X = rng.random((50, 16))
    base = 1.0 if target == "slowdown" else 0.9
    sign = 1.0 if target == "slowdown" else -1.0
    p = OfflineLinear().fit(X, base + sign * (0.3 * X[:, 9] + 0.1 * X[:, 14] + 0.05 * X[:, 15]))
    ex = TimeWeighted(feature_map="rich", target=target)
    tr = ColocationTracker(prof, Opaque(p) if opaque else p, ex)
    history = []
    t = 0.0
    nxt = 0
    models = prof.models
    for is_start, dt, mi, b in events:
        t += dt
        if is_start or not tr.running:
            tr.start(nxt, models[mi], b, t)
            pr = prof.lookup(models[mi], b)
            history.append(("start", nxt, [pr.sm, pr.l2, pr.dram], pr.solo_ms, t))
            nxt += 1
        else:
            victim = tr.running[mi % len(tr.running)]
            tr.finish(victim, t)
            history.append(("finish", victim, t))
    cands = [("c1", "vgg19", 4), ("c2", "yolov8n", 16)]
    cd = [(c, [prof.lookup(m, b).sm, prof.lookup(m, b).l2, prof.lookup(m, b).dram], prof.lookup(m, b).solo_ms)
          for c, m, b in cands]
    t_q = t + 0.7
    got = tr.what_if(cands, t_q)
    want = naive_tracker_projection(history, t_q, cd, _rate_fn(p, "rich", target, tr.min_rate, tr.max_rate))
    assert set(got) == set(want)
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------------------- no mutation, learning
def test_what_if_does_not_mutate():
    prof = zoo_profiles("l4")
    p = RLS()
    p.update(np.random.default_rng(0).random((20, 16)), np.full(20, 0.8))
    tr = ColocationTracker(prof, p)
    tr.start(1, "resnet50", 8, 0.0)
    tr.start(2, "vgg19", 4, 1.0)
    before = snapshot(tr)
    for _ in range(3):
        tr.what_if([(3, "yolov8n", 16), (4, "vit_b16", 2)], 5.0)
        tr.predict_finish(7.0)
        tr.remaining_ms(9.0)
    assert _same(snapshot(tr), before)


def _same(a, b):
    return all(np.array_equal(np.asarray(x, dtype=object), np.asarray(y, dtype=object)) if not isinstance(x, dict)
               else x == y for x, y in zip(a, b))


def test_learning_on_finish_changes_the_predictor():
    prof = zoo_profiles("l4")
    p = RLS()
    tr = ColocationTracker(prof, p)
    tr.start("x", "resnet50", 8, 0.0)
    tr.start("y", "vgg19", 8, 0.0)
    solo = prof.lookup("resnet50", 8).solo_ms
    res = tr.finish("x", 2.0 * solo)
    assert res.learned and p.n_seen_ == 1
    assert res.execution.y == pytest.approx(0.5)          # rate = solo / latency
    assert res.predicted_latency_ms == pytest.approx(solo)  # fresh RLS: rate 1
    assert res.relative_error == pytest.approx(-0.5)
    assert p.predict(res.execution.x) < 1.0                # learned towards 0.5
    frozen = RLS()
    tr2 = ColocationTracker(prof, frozen, learn=False)
    tr2.start("x", "resnet50", 8, 0.0)
    assert not tr2.finish("x", 3.0).learned and frozen.n_seen_ == 0
    # the projection uses what was learned
    tr3 = ColocationTracker(prof, p)
    tr3.start("z", "resnet50", 8, 0.0)
    assert tr3.predict_finish(0.0)["z"] > solo


def test_zero_length_execution_is_not_learned():
    p = RLS()
    tr = ColocationTracker(zoo_profiles("l4"), p)
    tr.start(1, "resnet50", 1, 3.0)
    res = tr.finish(1, 3.0)
    assert not res.learned and p.n_seen_ == 0


# ---------------------------------------------------------------------------- bad input
def test_bad_input_leaves_state_unchanged():
    prof = zoo_profiles("l4")
    p = RLS()
    p.update(np.random.default_rng(1).random((10, 16)), np.full(10, 0.9))
    tr = ColocationTracker(prof, p)
    tr.start(1, "resnet50", 8, 1.0)
    tr.start(2, "vgg19", 4, 2.0)
    before = snapshot(tr)
    bad = [
        (lambda: tr.start(1, "vgg19", 1, 3.0), "already running"),
        (lambda: tr.start(3, "vgg19", 1, 1.5), "before the latest event"),
        (lambda: tr.start(3, "nope", 1, 3.0), "no profile"),
        (lambda: tr.start(3, "vgg19", 99, 3.0), "vgg19"),
        (lambda: tr.start([3], "vgg19", 1, 3.0), "hashable"),
        (lambda: tr.start(3, "vgg19", 1, float("nan")), "not finite"),
        (lambda: tr.finish(7, 3.0), "not running"),
        (lambda: tr.finish(1, 0.5), "before the latest event"),
        (lambda: tr.finish([1], 3.0), "not running"),
        (lambda: tr.what_if([(3, "nope", 1)], 3.0), "no profile"),
        (lambda: tr.what_if([(1, "vgg19", 1)], 3.0), "already running"),
        (lambda: tr.what_if([(3, "vgg19", 1), (3, "vgg19", 2)], 3.0), "repeated"),
        (lambda: tr.what_if([(3, "vgg19")], 3.0), r"must be \(id, model, batch_size\)"),
        (lambda: tr.what_if(5, 3.0), "list of"),
        (lambda: tr.what_if([], 1.0), "before the latest event"),
        (lambda: tr.remaining_ms(0.0), "before the latest event"),
    ]
    for call, msg in bad:
        with pytest.raises(InterfpredError, match=msg):
            call()
        assert _same(snapshot(tr), before)
    # still fully usable afterwards
    tr.finish(1, 10.0)
    assert tr.running == [2]


def test_constructor_checks():
    prof = zoo_profiles("l4")
    with pytest.raises(InterfpredError, match="takes 4 features"):
        ColocationTracker(prof, GpuletsModel())      # rich map has 16
    with pytest.raises(InterfpredError, match="predict and update"):
        ColocationTracker(prof, object())
    with pytest.raises(InterfpredError, match="min_rate"):
        ColocationTracker(prof, RLS(), min_rate=0.0)
    two = ProfileTable.merge(zoo_profiles("l4"), zoo_profiles("a100")) if hasattr(ProfileTable, "merge") else None
    if two is not None:
        with pytest.raises(InterfpredError, match="pass gpu="):
            ColocationTracker(two, RLS())
        assert ColocationTracker(two, RLS(), gpu="a100").gpu == "a100"


def test_threads_share_one_tracker():
    # readers ask what-if questions while the owner feeds events: calls are serialised by the lock
    prof = zoo_profiles("l4")
    tr = ColocationTracker(prof, RLS())
    errors = []
    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                out = tr.what_if([("c", "vgg19", 2)], 1e6)
                assert "c" in out and all(v >= 1e6 for v in out.values())
        except (AssertionError, InterfpredError) as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for th in threads:
        th.start()
    for i in range(100):
        tr.start(i, "resnet50", 4, 2.0 * i)
        tr.finish(i, 2.0 * i + 1.0)
    stop.set()
    for th in threads:
        th.join()
    assert not errors and len(tr) == 0 and tr.predictor.n_seen_ == 100


def test_scheduler_loop_example_runs(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "scheduler_loop.py"
    spec = importlib.util.spec_from_file_location("scheduler_loop", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(batches=120, seed=1)
    assert out["met"] + out["missed"] + out["dropped"] == 120
    assert out["met"] > 60
    assert "met their deadline" in capsys.readouterr().out


def test_predictor_refitted_with_another_width_is_refused():
    p = RLS()
    tr = ColocationTracker(zoo_profiles("l4"), p)
    tr.start(1, "resnet50", 4, 0.0)
    p.fit(np.ones((3, 5)), np.ones(3))
    with pytest.raises(InterfpredError, match="another width"):
        tr.what_if([(2, "vgg19", 1)], 1.0)
    assert tr.running == [1]


def test_finish_result_reads_like_the_finished_execution():
    prof = ProfileTable.from_columns(gpu=["l4"], model=["a"], batch_size=[1], solo_ms=[2.0], sm=[0.5], l2=[0.5],
                                     dram=[0.25])
    tr = ColocationTracker(prof, RLS())
    tr.start("x", "a", 1, 0.0)
    res = tr.finish("x", 2.5)
    assert isinstance(res.execution, FinishedExecution)
    assert res.id == "x" and (res.solo_ms, res.latency_ms) == pytest.approx((2.0, 2.5))
    assert res.y == pytest.approx(0.8) and res.y == pytest.approx(res.execution.y)
    np.testing.assert_array_equal(res.x, res.execution.x)
    assert res.predicted_latency_ms == pytest.approx(2.0) and res.learned
