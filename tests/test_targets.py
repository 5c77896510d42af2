"""One target and one clamp on every prediction path: model, evaluate, tracker, fleet, CLI and docs agree."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

from interfpred import (
    RLS,
    ColocationTracker,
    Fleet,
    InterferenceModel,
    InterfpredError,
    TimeWeighted,
    default_extractor,
    load_model,
    training_rows,
)
from interfpred._core.targets import latency_from_prediction, rate_from_prediction, slowdown_from_prediction
from interfpred.constants import MODEL_DEFAULT_EXTRACTOR, PREDICTED_RATE_MAX, PREDICTED_RATE_MIN
from interfpred.sim.workload import mix_scenario

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def scenario():
    sc = mix_scenario(["resnet50", "vgg19"], rho=1.1, executions=900, seed=3)
    trace = sc.traces["trace"]
    return trace.take(np.arange(600)), trace.take(np.arange(600, 900)), sc.profiles


def replay(tracker: ColocationTracker, trace) -> dict:
    """Every start and finish of ``trace`` through ``tracker`` in time order (finishes first at a tie);
    returns id -> the latency the tracker predicted at its finish."""
    events = [(float(s), 1, i) for i, s in enumerate(trace.start_ms)] + \
             [(float(e), 0, i) for i, e in enumerate(trace.end_ms)]
    out = {}
    for t, kind, i in sorted(events):
        if kind == 1:
            tracker.start(int(trace.id[i]), str(trace.model[i]), float(trace.batch_size[i]), t)
        else:
            out[int(trace.id[i])] = tracker.finish(int(trace.id[i]), t).predicted_latency_ms
    return out


@pytest.mark.parametrize("target", ["rate", "slowdown"])
def test_frozen_tracker_replay_gives_what_predict_writes(scenario, target):
    train, test, prof = scenario
    model = InterferenceModel(TimeWeighted(feature_map="rich", target=target), "rls").fit(train, prof)
    tracker = ColocationTracker.from_model(model, prof, learn=False)
    got = replay(tracker, test)
    want = model.predict_latency(test, prof)
    assert len(got) == len(test)
    np.testing.assert_allclose([got[int(i)] for i in test.id], want, rtol=1e-9, atol=0)
    assert (model.predict_slowdown(test, prof) >= 1.0 - 1e-12).all()   # never faster than the profile's solo


def test_tracker_refuses_a_predictor_fitted_for_another_target(scenario):
    train, _, prof = scenario
    model = InterferenceModel(TimeWeighted(feature_map="rich", target="slowdown"), "rls").fit(train, prof)
    assert model.predictor.target == model.predictor.get_params()["target"] == "slowdown"
    with pytest.raises(InterfpredError, match="declared for target 'slowdown'.*predicts 'rate'.*from_model"):
        ColocationTracker(prof, model.predictor)            # the default extractor's target is rate
    assert ColocationTracker.from_model(model, prof).extractor.target == "slowdown"
    again = InterferenceModel.from_state(model.to_state())  # a loaded model records it too
    assert again.predictor.target == "slowdown"
    with pytest.raises(InterfpredError, match="declared for target 'slowdown'"):
        ColocationTracker(prof, again.predictor, TimeWeighted(feature_map="rich", target="rate"))
    with pytest.raises(InterfpredError, match="declared for target 'slowdown' but the extractor's target is 'rate'"):
        InterferenceModel(TimeWeighted(feature_map="rich", target="rate"), model.predictor)


def test_training_rows_are_in_the_trackers_convention(scenario):
    train, test, prof = scenario
    fm = training_rows(train, prof)
    assert fm.X.shape == (len(train), default_extractor().n_features)
    np.testing.assert_allclose(fm.y, fm.solo_ms / train.latency_ms)   # the rate (profile solo / observed)
    predictor = RLS().fit(fm.X, fm.y)
    model = InterferenceModel(default_extractor(), "rls").fit(train, prof)
    tracker = ColocationTracker(prof, predictor, learn=False)
    got = replay(tracker, test)
    np.testing.assert_allclose([got[int(i)] for i in test.id], model.predict_latency(test, prof), rtol=1e-9)
    with pytest.raises(InterfpredError, match="extractor must be an Extractor"):
        training_rows(train, prof, "rate")


def test_the_clamp_is_identical_on_every_path(scenario):
    """A model predicting slowdown 0.5 (faster than solo) everywhere: every path reads slowdown 1."""
    train, test, prof = scenario
    fake = train.take(np.arange(len(train)))
    ex = TimeWeighted(feature_map="rich", target="slowdown")
    fm = ex.transform(fake, prof)
    model = InterferenceModel(ex, "global_mean")
    model.predictor.fit(fm.X, np.full(len(fm), 0.5))
    assert model.predictor.target == "slowdown"      # declared by the model holding it
    raw = model.predictor.predict(ex.transform(test, prof).X)
    assert np.allclose(raw, 0.5)
    np.testing.assert_array_equal(slowdown_from_prediction(raw, "slowdown"), 1.0)
    np.testing.assert_array_equal(model.predict_slowdown(test, prof), 1.0)
    ev_model = InterferenceModel(ex, "global_mean").fit(train, prof)   # evaluate needs fitted baselines
    ev_model.predictor.fit(fm.X, np.full(len(fm), 0.5))
    profile_solo = ex.transform(test, prof).solo_ms
    np.testing.assert_array_equal(ev_model.evaluate(test, prof).predicted_latency_ms, profile_solo)
    tracker = ColocationTracker.from_model(model, prof, learn=False)
    got = replay(tracker, test)
    np.testing.assert_allclose([got[int(i)] for i in test.id], profile_solo, rtol=1e-12)
    solo = prof.lookup("resnet50", 8).solo_ms
    t0 = float(test.end_ms.max())
    tracker.start("a", "vgg19", 8, t0)
    assert tracker.what_if([("b", "resnet50", 8)], t0)["b"] - t0 == pytest.approx(solo, rel=1e-12)
    fleet = Fleet({"g": ColocationTracker.from_model(model, prof, learn=False)})
    fleet.start("g", "a", "vgg19", 8, 0.0, deadline=1e9)
    ok, added = fleet.assess("g", ("b", "resnet50", 8), 1e9, 0.0)
    assert ok and added == pytest.approx(solo, rel=1e-9)   # the running one is not slowed either
    # and a rate model predicting faster than solo is clamped the same way
    np.testing.assert_array_equal(rate_from_prediction([1.7, 0.0, np.inf], "rate"),
                                  [PREDICTED_RATE_MAX, PREDICTED_RATE_MIN, PREDICTED_RATE_MAX])
    np.testing.assert_array_equal(latency_from_prediction([0.5, 1e9], [2.0, 2.0], "slowdown"),
                                  [2.0, 2.0 / PREDICTED_RATE_MIN])


def test_tracker_clamp_cannot_allow_faster_than_solo():
    from interfpred.sim.zoo import zoo_profiles
    with pytest.raises(InterfpredError, match="max_rate <= 1.0"):
        ColocationTracker(zoo_profiles("l4"), RLS(), max_rate=1.5)


def test_rate_from_prediction_refuses_an_unknown_target():
    with pytest.raises(InterfpredError, match="target 'latency' is not one of"):
        rate_from_prediction([1.0], "latency")


def test_default_target_is_the_same_in_fit_cli_tracker_docs_and_reproduction(tmp_path):
    from interfpred.cli import build_parser
    from interfpred.sim.zoo import zoo_profiles
    target = dict(MODEL_DEFAULT_EXTRACTOR)["target"]
    assert target == "rate"
    assert InterferenceModel().extractor.target == target
    assert ColocationTracker(zoo_profiles("l4"), RLS()).extractor.target == target
    args = build_parser().parse_args(["fit", "--trace", "t.csv", "--profiles", "p.csv", "--out", "m.json"])
    assert args.target is None   # not named: chosen by validation, falling back to the default on short data
    cli_doc = (ROOT / "docs" / "cli.md").read_text()
    assert f"[--target {target}|" in cli_doc and f"{target} target, RLS" in cli_doc
    results = (ROOT / "docs" / "results.md").read_text()
    chosen = re.search(r"\*\*interfpred best\*\* = TimeWeighted, rich map, (\w+) target", results)
    assert chosen and chosen.group(1) == target


def test_a_saved_default_model_serves_from_load(scenario, tmp_path):
    train, test, prof = scenario
    model = InterferenceModel().fit(train, prof)
    model.save(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    tracker = ColocationTracker(prof, loaded.predictor, learn=False)   # default extractor: same target
    got = replay(tracker, test)
    np.testing.assert_allclose([got[int(i)] for i in test.id], loaded.predict_latency(test, prof), rtol=1e-9)
