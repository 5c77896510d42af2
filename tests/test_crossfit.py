"""Novelty-conditional frozen bounds: categories, thresholds, the fallback, the model file, coverage on Gavel."""

from __future__ import annotations

import json

import numpy as np
import pytest

from interfpred import InterferenceModel, load_model
from interfpred.data.datasets import gavel_v100
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.evaluation import run_folds
from interfpred.evaluation.validation import involvement
from interfpred.experiments.model_coverage import evaluate_coverage
from interfpred.features import FeatureMatrix
from interfpred.model.crossfit import (
    NOVELTY_CATEGORIES,
    FrozenBounds,
    cross_fit_bounds,
    novelty,
    take_rows,
)
from interfpred.predictors import Calibrated, make_predictor

LEVELS = (0.1, 0.9)


@pytest.fixture(scope="module")
def gavel():
    return gavel_v100()


def _pairs(n_runs: int = 240, seed: int = 0) -> tuple[FeatureMatrix, np.ndarray]:
    """Pair runs of four models whose slowdown depends on both: a new model is a real cold start."""
    rng = np.random.default_rng(seed)
    names = ["a", "b", "c", "d"]
    effect = {"a": 1.0, "b": 1.5, "c": 2.5, "d": 4.0}
    own, co, y, groups = [], [], [], []
    for r in range(n_runs):
        i, j = rng.choice(4, 2, replace=False)
        for me, other in ((names[i], names[j]), (names[j], names[i])):
            own.append(me)
            co.append({other: 1.0})
            y.append((effect[me] + 0.5 * effect[other]) * np.exp(0.05 * rng.standard_normal()))
            groups.append(r)
    y = np.asarray(y)
    X = np.ones((len(y), 1))
    fm = FeatureMatrix(X, ("x",), y, "slowdown", np.ones(len(y)), y, Entities.from_lists(own, co))
    return fm, np.asarray(groups)


def test_novelty_marks_rows_with_an_unseen_own_model_or_co_runner():
    ent = Entities.from_lists(["a", "b", "c", "a"], [{"b": 1.0}, {"c": 1.0}, {}, {}])
    assert novelty(ent, ["a", "b"]).tolist() == [0, 1, 1, 0]
    assert novelty(ent, ["a", "b", "c"]).tolist() == [0, 0, 0, 0]
    assert novelty(None, ["a"]).tolist() == []


def test_cross_fit_gives_each_category_its_scores_and_cold_rows_the_wider_bound():
    fm, groups = _pairs()
    fb = cross_fit_bounds(make_predictor("pair_mean"), fm, groups, LEVELS)
    assert fb.seen == ("a", "b", "c", "d")
    warm, cold = fb.category_scores
    # every model is in every fold's training runs: all scores of the folds by run are warm; each
    # model held out in turn adds a cold score for every row that involves it (two models a row)
    assert warm == len(fm) and cold == 2 * len(fm)
    assert fb.threshold(0.9, 0) == fb.category_thresholds[0][1]
    assert fb.threshold(0.9, 1) == fb.category_thresholds[1][1] > 3 * fb.threshold(0.9, 0) > 0
    assert fb.threshold(0.1, 1) < fb.threshold(0.1, 0) < 0
    ent = Entities.from_lists(["a", "e", "b"], [{"b": 1.0}, {"a": 1.0}, {"e": 1.0}])
    cats = fb.categories(ent)
    assert cats.tolist() == [0, 1, 1]
    up = fb.bound(np.full(3, 2.0), 0.9, cats)
    assert up[0] == pytest.approx(2.0 + 2.0 * fb.threshold(0.9, 0))
    assert up[1] == up[2] == pytest.approx(2.0 + 2.0 * fb.threshold(0.9, 1)) and up[1] > up[0]


def test_seen_models_are_those_of_the_rows_not_the_vocabulary():
    # rows taken from a larger table keep its vocabulary: a model without rows there is still unseen
    fm, groups = _pairs()
    without_d = np.flatnonzero(~involvement(fm.entities)[:, fm.entities.names.index("d")])
    fb = cross_fit_bounds(make_predictor("pair_mean"), take_rows(fm, without_d), groups[without_d], LEVELS)
    assert "d" in fm.entities.names and fb.seen == ("a", "b", "c")
    cats = fb.categories(fm.entities)
    assert cats.astype(bool).tolist() == involvement(fm.entities)[:, fm.entities.names.index("d")].tolist()


def test_a_category_with_too_few_scores_falls_back_to_the_pooled_thresholds():
    fm, groups = _pairs(n_runs=60)
    fb = cross_fit_bounds(make_predictor("pair_mean"), fm, groups, LEVELS, min_scores=10 ** 6)
    assert fb.category_thresholds == ((), ()) and fb.category_scores == (len(fm), 2 * len(fm))
    for c in range(len(NOVELTY_CATEGORIES)):
        assert fb.threshold(0.9, c) == fb.thresholds[1]
    assert fb.bound(np.array([2.0, 2.0]), 0.9, np.array([0, 1])).tolist() == [2.0 + 2.0 * fb.thresholds[1]] * 2
    # two models, every run pairs both: no model can be held out, so no cold score at all
    two = Entities.from_lists(["a", "b"] * 30, [{"b": 1.0}, {"a": 1.0}] * 30)
    fm2 = FeatureMatrix(np.ones((60, 1)), ("x",), fm.y[:60], "slowdown", np.ones(60), fm.y[:60], two)
    fb2 = cross_fit_bounds(make_predictor("pair_mean"), fm2, np.arange(60) // 2, LEVELS)
    assert fb2.category_scores == (60, 0) and fb2.category_thresholds[1] == ()
    assert fb2.threshold(0.9, 1) == fb2.thresholds[1]


def test_frozen_bounds_refuse_fields_that_disagree():
    fm, groups = _pairs(n_runs=60)
    state = cross_fit_bounds(make_predictor("pair_mean"), fm, groups, LEVELS).to_state()
    assert FrozenBounds.from_state(state).to_state() == state
    bad = [
        ({"categories": {"warm": state["categories"]["warm"]}}, "must be exactly warm, cold"),
        ({"categories": {**state["categories"], "cold": {"n_scores": 3, "thresholds": [0.1, 0.2]}}},
         "fewer than min_scores"),
        ({"categories": {**state["categories"], "cold": {"n_scores": 500, "thresholds": [0.1]}}},
         "one finite value per level"),
        ({"categories": {**state["categories"], "cold": {"n_scores": 500, "thresholds": [0.3, 0.2]}}},
         "non-decreasing"),
        ({"categories": {**state["categories"], "warm": {"n_scores": 10 ** 6, "thresholds": [0.1, 0.2]}}},
         "more than"),
        ({"seen": ["a", "a"]}, "names a model twice"),
        ({"levels": [0.9, 0.1]}, "ascending levels"),
    ]
    for change, message in bad:
        with pytest.raises(InterfpredError, match=f"m.json: .*{message}"):
            FrozenBounds.from_state({**state, **change}, source="m.json")


def test_model_file_keeps_the_categories_and_its_reader_checks_them(tmp_path, gavel):
    fold = run_folds(gavel, "model", repeats=1)[3]             # Recommendation held out
    train, test = gavel.take(np.flatnonzero(fold.train)), gavel.take(np.flatnonzero(fold.test))
    model = InterferenceModel({"feature_map": "shares", "target": "slowdown"},
                              Calibrated("pair_mean", quantiles=(0.9,), scale="relative")).fit(measurements=train)
    fb = model.frozen_bounds
    assert fb is not None and fold.label not in fb.seen and len(fb.seen) == len(gavel.models) - 1
    path = tmp_path / "m.json"
    model.save(path)
    again = load_model(path)
    assert again.frozen_bounds == fb
    # a row of the held-out model (or beside it) is cold: the wider bound, from the cold thresholds
    fm = model.features(measurements=test)
    mean = model.predictor.predict(fm.X, entities=fm.entities)
    up = model.predict_slowdown(measurements=test, quantile=0.9)
    assert np.allclose(up, mean + np.abs(mean) * fb.threshold(0.9, 1), rtol=1e-12)
    assert fb.threshold(0.9, 1) > fb.threshold(0.9, 0)
    warm_fm = model.features(measurements=train)
    warm_mean = model.predictor.predict(warm_fm.X, entities=warm_fm.entities)
    assert np.allclose(model.predict_slowdown(measurements=train, quantile=0.9),
                       warm_mean + np.abs(warm_mean) * fb.threshold(0.9, 0), rtol=1e-12)
    state = json.loads(path.read_text())
    state["frozen_bounds"]["categories"]["cold"]["thresholds"] = [1.0]
    path.write_text(json.dumps(state))
    with pytest.raises(InterfpredError, match="m.json: frozen_bounds category 'cold' thresholds"):
        load_model(path)
    del state["frozen_bounds"]["categories"]
    path.write_text(json.dumps(state))
    with pytest.raises(InterfpredError, match="m.json: frozen_bounds.categories"):
        load_model(path)


def test_frozen_bound_covers_new_models_at_0_9_leaving_one_model_out_on_gavel(gavel):
    hits, n = 0.0, 0
    for fold in run_folds(gavel, "model", repeats=1):
        train, test = gavel.take(np.flatnonzero(fold.train)), gavel.take(np.flatnonzero(fold.test))
        model = InterferenceModel({"feature_map": "shares", "target": "slowdown"},
                                  Calibrated("pair_mean", quantiles=(0.9,), scale="relative"))
        ev = evaluate_coverage(model.fit(measurements=train), None, None, [0.9], measurements=test)
        r = next(r for r in ev.rows if r["group"] == "all" and r["method"] == "model")
        hits += r["coverage"] * r["n"]
        n += r["n"]
    assert abs(hits / n - 0.9) <= 0.03, hits / n


# ---------------------------------------------------------------------------- one conformal rank, one score scale
def _exact_rank(n, level):
    """The conformal rank in exact arithmetic of the decimal level (no rounding at all)."""
    import math
    from fractions import Fraction

    x = (n + 1) * Fraction(str(level))
    k = math.ceil(x) if level >= 0.5 else math.floor(x)
    return min(max(k, 1), n)


def test_the_conformal_rank_is_the_exact_one_at_the_boundary_where_the_bare_ceiling_is_not():
    from interfpred.predictors.calibrated.conformal import conformal_rank

    levels = (0.05, 0.1, 0.2, 0.29, 0.3, 0.7, 0.8, 0.9, 0.95, 0.99)
    bare_misses = 0
    for n in range(1, 120):
        for q in levels:
            assert conformal_rank(n, q) == _exact_rank(n, q), (n, q)
            import math
            bare = math.ceil((n + 1) * q) if q >= 0.5 else math.floor((n + 1) * q)
            bare_misses += min(max(bare, 1), n) != _exact_rank(n, q)
    assert conformal_rank(19, 0.9) == 18 and conformal_rank(99, 0.29) == 29   # (n + 1) q an integer
    assert bare_misses > 0     # the unfuzzed rank (20 * 0.9 = 18.000000000000004 -> 19) is off there


def test_frozen_bounds_and_the_calibrated_window_take_the_same_rank_and_scale():
    from interfpred.model.crossfit import _conformal, _scale

    rng = np.random.default_rng(3)
    scores = rng.standard_normal(19)
    cal = Calibrated(make_predictor("no_interference"), quantiles=(0.9,), method="split", window=19)
    cal.update(np.zeros((19, 1)), 1.0 + scores)   # the prediction is 1: score = y - 1, scale max(|1|, min) = 1
    want = np.sort((1.0 + scores) - 1.0)[17]                                          # rank 18 of 19
    assert cal.thresholds()[0.9] == _conformal((1.0 + scores) - 1.0, 0.9) == want
    m = np.array([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(_scale(m), [2.0, 1e-6, 3.0])
    assert _scale(np.float64(-2.0)).shape == ()
