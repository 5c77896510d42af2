"""KernelBlocking and the kernel terms it reads: against plain references, on the real H200 runs, in the tracker."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_blocking_log_slowdown

from interfpred import ColocationTracker, InterferenceModel, ProfileTable, TimeWeighted
from interfpred.data.datasets import h200_profiles, h200_streams
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.evaluation.metrics import mape, ratio_error, under_share
from interfpred.experiments.real import split_scores
from interfpred.features.kernel_terms import kernel_covariates
from interfpred.features.measurement_features import measurement_features
from interfpred.model.selection import select_configuration
from interfpred.predictors import KernelBlocking, PredictorTags, make_predictor

SHARES = TimeWeighted(feature_map="corunners", target="rate")


@pytest.fixture(scope="module")
def h200():
    return h200_streams(), h200_profiles()


def _rows(h200, profiles=True):
    m, prof = h200
    return measurement_features(SHARES, m, prof if profiles else None, entity_key="model_batch")


def _state(p):
    return p.to_state()["state"]


def test_predictions_are_the_blocking_sum_over_co_runners(h200):
    fm = _rows(h200)
    p = KernelBlocking(target="rate").fit(fm.X, fm.y, entities=fm.entities)
    ref = np.exp(naive_blocking_log_slowdown(_state(p), fm.X, fm.entities))
    np.testing.assert_allclose(1.0 / p.predict(fm.X, entities=fm.entities), ref, rtol=1e-12)


def test_fit_is_the_mode_of_the_posterior(h200):
    """The objective (expectile of log slowdown plus the Gaussian priors) is flat at the fitted parameters."""
    fm = _rows(h200)
    p = KernelBlocking(target="rate").fit(fm.X, fm.y, entities=fm.entities)
    state = _state(p)
    t = np.log(1.0 / fm.y)
    g = 3 + fm.X.shape[1]
    mu = np.zeros(len(state["theta"]))
    mu[g - 2:g] = 1.0
    var = np.array([100.0] + [p.coef_var] * (g - 1) + [p.pair_var if k[0] == "p" else p.entity_var
                                                       for k in state["terms"]])

    def objective(theta):
        h = np.array(naive_blocking_log_slowdown({**state, "theta": theta}, fm.X, fm.entities))
        r = t - h
        w = np.where(r > 0.0, p.under_weight, 1.0)
        return float(np.sum(w * r * r) / p.noise_var + np.sum((theta - mu) ** 2 / var))

    theta = np.array(state["theta"])
    base = objective(theta)
    for k in range(theta.size):
        e = np.zeros(theta.size)
        e[k] = 1e-5
        grad = (objective(theta + e) - objective(theta - e)) / 2e-5
        assert abs(grad) < 1e-3 * max(1.0, base), (k, grad)


def test_update_is_one_extended_kalman_step_per_row(h200):
    """One row's update: gain P J / (J P J + noise), noise divided by under_weight when the row was under-predicted."""
    fm = _rows(h200)
    p = KernelBlocking(target="rate", forgetting=0.99).fit(fm.X[:60], fm.y[:60], entities=fm.entities.take(range(60)))
    for i in (60, 61, 100):
        ent = fm.entities.take([i])
        before = _state(p)
        # a pair (or model) the row brings is added first, at 0 with its prior variance
        probe = KernelBlocking.from_state(p.to_state())
        probe._add_names(ent)
        probe._add_pairs(ent)
        new = [k for k in probe.to_state()["state"]["terms"] if k not in before["terms"]]
        before = {**before, "terms": before["terms"] + new,
                  "theta": before["theta"] + [0.0] * len(new)}
        theta = np.array(before["theta"])
        P = np.zeros((theta.size, theta.size))
        n = len(_state(p)["theta"])
        P[:n, :n] = _state(p)["P"]
        for k, key in enumerate(new):
            P[n + k, n + k] = p.pair_var if key[0] == "p" else _state(p)["new_var"]
        h = naive_blocking_log_slowdown(before, fm.X[i:i + 1], ent)[0]
        J = np.empty(theta.size)
        for k in range(theta.size):
            e = np.zeros(theta.size)
            e[k] = 1e-6
            up = naive_blocking_log_slowdown({**before, "theta": (theta + e).tolist()}, fm.X[i:i + 1], ent)[0]
            down = naive_blocking_log_slowdown({**before, "theta": (theta - e).tolist()}, fm.X[i:i + 1], ent)[0]
            J[k] = (up - down) / 2e-6
        err = math.log(1.0 / fm.y[i]) - h
        noise = p.noise_var / (p.under_weight if err > 0 else 1.0)
        gain = P @ J / (J @ P @ J + noise)
        p.update(fm.X[i], float(fm.y[i]), entities=ent)
        after = _state(p)
        np.testing.assert_allclose(after["theta"], theta + gain * err, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(after["P"], (P - np.outer(gain, P @ J)) / 0.99, rtol=1e-6, atol=1e-8)


def test_one_row_updates_learn_a_new_pair(h200):
    fm = _rows(h200)
    m = h200[0]
    hold = np.isin(m.run, ["streams-12", "streams-19"])          # gemm beside gemm, triad beside gemm
    p = KernelBlocking(target="rate").fit(fm.X[~hold], fm.y[~hold], entities=fm.entities.take(np.flatnonzero(~hold)))
    rows = np.flatnonzero(hold)
    err = [mape(fm.solo_ms[rows] / p.predict(fm.X[rows], entities=fm.entities.take(rows)), fm.latency_ms[rows])]
    for _ in range(3):
        for i in rows:
            p.update(fm.X[i], float(fm.y[i]), entities=fm.entities.take([i]))
        err.append(mape(fm.solo_ms[rows] / p.predict(fm.X[rows], entities=fm.entities.take(rows)), fm.latency_ms[rows]))
    assert err[-1] < 0.5 * err[0] and err[-1] < 0.1, err


def test_state_round_trips_and_a_corrupt_one_is_refused(h200, tmp_path):
    fm = _rows(h200)
    p = KernelBlocking(target="rate").fit(fm.X, fm.y, entities=fm.entities)
    path = tmp_path / "p.json"
    p.save(path)
    q = KernelBlocking.load(path)
    bare = Entities.from_lists(["triad@1", "bert_base@8"], [{"bert_base@8": 1.0}, {"triad@1": 1.0}])
    X = np.array([[1.0]] * 2)
    # kernel terms remembered from the fit: rows without covariates are predicted the same
    np.testing.assert_array_equal(q.predict(X, entities=bare), p.predict(X, entities=bare))
    state = p.to_state()
    state["state"]["theta"][0] = float("inf")
    with pytest.raises(InterfpredError, match="theta.0. is inf, not a finite number"):
        KernelBlocking.from_state(state)
    for bad in ({"under_weight": 0.5}, {"forgetting": 1.5}, {"predict_mean": 1}):
        with pytest.raises(InterfpredError):
            KernelBlocking(**bad)


def test_h200_held_out_accuracy_beats_every_baseline(h200):
    """The thresholds the default fit is held to on the shipped H200 runs (20 splits by run; each model out)."""
    m, prof = h200
    p = make_predictor("kernel_blocking")
    pair = split_scores(SHARES, p, m, prof, split="pair", repeats=20)["methods"]
    model = split_scores(SHARES, p, m, prof, split="model", repeats=1)["methods"]
    without = split_scores(SHARES, p, m, None, split="pair", repeats=20)["methods"]
    assert pair[0]["mean"] <= 20.0 and pair[0]["under_1.5x_%"] <= 5.0
    assert model[0]["mean"] <= 30.0
    assert pair[0]["mean"] <= without[0]["mean"]
    for table in (pair, model):
        assert all(table[0]["mean"] < b["mean"] for b in table[1:])      # every baseline loses


def test_fit_chooses_kernel_blocking_on_the_h200_runs(h200):
    sel = select_configuration(None, h200[1], h200[0])
    assert sel.chosen.predictor == "kernel_blocking"
    # resnet50 at batch 64 was not profiled: counter maps were left out, and fit says so
    assert [w for w in sel.warnings()] == [w for w in sel.warnings() if "batch size 64 of model 'resnet50'" in w]
    assert len(sel.warnings()) == 1


def test_tracker_answers_as_predict(h200):
    """One model, one answer: the tracker's projected end of a batch beside another is its predicted latency."""
    m, prof = h200
    model = InterferenceModel(SHARES, KernelBlocking()).fit(measurements=m, profiles=prof)
    names, solo = [], []
    for k in range(len(m)):
        key = (str(m.model[k]), int(m.batch_size[k]))
        if key not in names:
            names.append(key)
            solo.append(float(m.solo_ms[k]))
    solo_prof = ProfileTable.from_columns(gpu=["h200"] * len(names), model=[n for n, _ in names],
                                          batch_size=[b for _, b in names], solo_ms=solo, sm=[None] * len(names),
                                          l2=[None] * len(names), dram=[None] * len(names))
    tr = ColocationTracker.from_model(model, solo_prof)
    tr.start("a", "triad", 1, 0.0)
    tr.start("b", "bert_base", 8, 0.0)
    ends = tr.what_if([], 0.0)
    ent = Entities.from_lists(["triad@1"], [{"bert_base@8": 1.0}])
    rate = model.predictor.predict(np.array([1.0]), entities=ent)
    triad_solo = solo[names.index(("triad", 1))]
    assert ends["a"] == pytest.approx(triad_solo / rate, rel=1e-9)
    assert ends["b"] > ends["a"]      # bert waits behind triad's kernel far longer than triad behind bert's


def test_kernel_terms_read_profiles_scale_cut_reports_and_leave_the_unknown_missing():
    prof = ProfileTable.from_columns(
        gpu=["g"] * 3, model=["a", "b", "c"], batch_size=[8, 1, 1], solo_ms=[1.0, 2.0, 1.0], sm=[None] * 3,
        l2=[None] * 3, dram=[None] * 3,
        extra={"kernels": ["100", "1", ""], "kernel_sum_ms": ["0.5", "2.0", ""], "kernel_residual_ms": ["0.01", "1.0", ""],
               "kernel_occupancy": ["0.5", "", ""], "truncated": ["1", "0", "0"]})
    cov = kernel_covariates(["a@8", "a@64", "b@1", "c@1", "d@1"], prof, {"a@8": 2.0, "a@64": 8.0})
    # a@8: a cut report of 100 kernels over 0.5 of the 2.0 ms batch: 400 kernels, 200 per ms
    assert cov[0, 0] == pytest.approx(math.log(200.0)) and cov[0, 1] == pytest.approx(math.log(0.01 * 0.5))
    # a@64 (never profiled): the same kernels over its own solo time, the hold scaled by the solo ratio
    assert cov[1, 0] == pytest.approx(math.log(400 / 8.0)) and cov[1, 1] == pytest.approx(math.log(0.01 * 0.5 * 4))
    # b: no occupancy, so the median of the known ones (0.5)
    assert cov[2, 1] == pytest.approx(math.log(1.0 * 0.5))
    assert np.isnan(cov[3:]).all()                                            # c: empty columns; d: no profile
    assert np.isnan(kernel_covariates(["a@8"], None)).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 100.0), st.floats(0.01, 100.0)), min_size=1, max_size=30))
def test_ratio_error_never_rewards_under_prediction(pairs):
    p = np.array([a for a, _ in pairs])
    o = np.array([b for _, b in pairs])
    assert ratio_error(p, o) >= mape(p, o) - 1e-12               # equal on over-predictions, larger below
    over = p >= o
    if over.all():
        assert ratio_error(p, o) == pytest.approx(mape(p, o))
    assert ratio_error(0.5 * o, o) == pytest.approx(ratio_error(2.0 * o, o))   # half and double cost the same
    assert under_share(p, o) == pytest.approx(np.mean(o > 1.5 * p))


class _Opaque:
    """A KernelBlocking the tracker cannot see through: every projected segment is one predict call."""

    def __init__(self, inner):
        self.inner = inner
        self.tags = PredictorTags(uses_entities=True, entity_key=inner.tags.entity_key, own_map="corunners")

    def predict(self, X, entities=None):
        return self.inner.predict(X, entities=entities)

    def update(self, X, y, entities=None):
        self.inner.update(X, y, entities=entities)


@pytest.mark.parametrize("target", ["rate", "slowdown"])
def test_compiled_what_if_equals_predicting_every_segment(h200, target, monkeypatch):
    """The tracker's compiled pair-term path (each member's blocking sum kept as members finish) gives
    the ends of predicting every projected segment from scratch, over 30 batches of the H200 models,
    also where a member's exponents reach the model's cap."""
    m, prof = h200
    ex = TimeWeighted(feature_map="corunners", target=target)
    model = InterferenceModel(ex, KernelBlocking()).fit(measurements=m, profiles=prof)
    p = model.predictor
    keys = sorted({(str(m.model[k]), int(m.batch_size[k]), float(m.solo_ms[k])) for k in range(len(m))})
    solo_prof = ProfileTable.from_columns(gpu=["h200"] * len(keys), model=[k[0] for k in keys],
                                          batch_size=[k[1] for k in keys], solo_ms=[k[2] for k in keys],
                                          sm=[None] * len(keys), l2=[None] * len(keys), dram=[None] * len(keys))
    rng = np.random.default_rng(2)
    members = [keys[int(j)] for j in rng.integers(0, len(keys), 30)]
    for cap in (False, True):
        if cap:       # one model far more aggressive than any seen: its co-runners' exponents pass the cap
            th = p._theta.copy()
            th[p._pos[("a", f"{members[0][0]}@{members[0][1]}")]] += 40.0
            p._theta = th
            bt = p.blocking_terms([f"{n}@{b}" for n, b, _ in members])
            assert (np.log(bt.pair) + bt.intercept).max() > bt.cap
        fast = ColocationTracker(solo_prof, p, ex)
        slow = ColocationTracker(solo_prof, _Opaque(p), ex)
        for tr in (fast, slow):
            for i, (name, batch, _) in enumerate(members):
                tr.start(i, name, batch, 0.01 * i)
        cand = [("c", members[3][0], members[3][1])]
        b = slow.what_if(cand, 1.0)
        monkeypatch.setattr(p, "predict", None)     # the compiled path never predicts a segment
        a = fast.what_if(cand, 1.0)
        monkeypatch.undo()
        assert list(a) == list(b)
        np.testing.assert_allclose(list(a.values()), list(b.values()), rtol=1e-9)
