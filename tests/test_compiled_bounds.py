"""Calibrated means and bounds on the tracker's compiled paths: the same answers as predict, segment by segment."""

from __future__ import annotations

import numpy as np
import pytest
from naive import naive_feature_map

from interfpred import (
    RLS,
    Calibrated,
    ColocationTracker,
    Entities,
    EntityRLS,
    OfflineLinear,
    OnlineSGD,
    TimeWeighted,
)
from interfpred.serving.projection.generic import project_fluid
from interfpred.serving.projection.projector import set_entities
from interfpred.sim.zoo import zoo_profiles

PROF = zoo_profiles("l4")
MODELS = list(PROF.models)
BASES = {"rls": RLS, "rls_no_intercept": lambda: RLS(fit_intercept=False), "online_sgd": lambda: OnlineSGD(learning_rate=0.5, standardize=False),   # a fast learner: bounds bracket the mean
         "offline_linear": OfflineLinear}


def _rows(n, d, target, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    rate = 0.95 - 0.2 * X[:, -1] - 0.1 * X[:, 0] + 0.03 * rng.standard_normal(n)
    return X, (rate if target == "rate" else 1.0 / rate)


def _calibrated(base, d, target, entities=None, **params):
    X, y = _rows(400, d, target)
    cal = Calibrated(base, quantiles=(0.9,), window=50, **params)
    if isinstance(base, OfflineLinear):
        cal.fit(X, y, entities=entities)
    else:
        cal.update(X, y, entities=entities)
    return cal


def _tracker(cal, ex, k, seed=1):
    """``k`` executions started together at 0 (so what_if at 0 projects their whole solo work)."""
    tr = ColocationTracker(PROF, cal, ex)
    rng = np.random.default_rng(seed)
    runs = [(i, MODELS[int(rng.integers(6))], int(rng.choice([1, 4, 8, 16, 32]))) for i in range(k)]
    for i, model, batch in runs:
        tr.start(i, model, batch, 0.0)
    return tr, runs


def _reference(tr, cal, ex, runs, cands, quantile, *, rmin=0.01, rmax=1.0):
    """The projection by its definition: every segment's members through ``cal.predict`` (the Python path)."""
    members = [(m, b, tr.candidate_demand(i, m, b)) for i, m, b in list(runs) + cands]
    dem = [list(p[:3]) for _, _, p in members]
    rem = np.array([p[3] for _, _, p in members])
    level = None if quantile is None else (1.0 - quantile if ex.target == "rate" else quantile)

    def rates_of(idx):
        ds = [dem[i] for i in idx.tolist()]
        phi = np.array([naive_feature_map(ds[a], ds[:a] + ds[a + 1:], ex.feature_map, ex.combine)
                        for a in range(len(ds))])
        kw = {}
        if cal.tags.uses_entities:
            kw["entities"] = set_entities([members[i][0] for i in idx.tolist()])
        p = np.asarray(cal.predict(phi, quantile=level, **kw), dtype=np.float64).reshape(-1)
        r = p if ex.target == "rate" else np.where(p > 0, 1.0 / np.where(p > 0, p, 1.0), rmax)
        return np.clip(r, rmin, rmax)

    return project_fluid(rates_of, rem, 0.0)


def _count_predicts(monkeypatch):
    calls = [0]
    real = Calibrated.predict

    def counting(self, *args, **kwargs):
        calls[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Calibrated, "predict", counting)
    return calls


def _check(tr, cal, ex, runs, quantile, monkeypatch, *, compiled=True):
    cands = [("c", "vgg19", 8), ("d", "yolov8n", 4)]
    want = _reference(tr, cal, ex, runs, cands, quantile)
    calls = _count_predicts(monkeypatch)
    got = tr.what_if(cands, 0.0, quantile=quantile)
    monkeypatch.undo()
    np.testing.assert_allclose(list(got.values()), want, rtol=1e-9, atol=1e-9)
    assert (calls[0] == 0) == compiled, calls[0]
    return got


@pytest.mark.parametrize("base", list(BASES))
@pytest.mark.parametrize("feature_map", ["rich", "default", "gpulets"])
@pytest.mark.parametrize("target", ["rate", "slowdown"])
def test_affine_bounds_and_means_take_the_compiled_path(base, feature_map, target, monkeypatch):
    ex = TimeWeighted(feature_map=feature_map, target=target)
    cal = _calibrated(BASES[base](), ex.n_features, target)
    assert cal.scale_ == ("std" if base.startswith("rls") else "relative")
    for k in (1, 4, 12, 40):            # 40: every resource over capacity at first, then fewer
        tr, runs = _tracker(cal, ex, k, seed=k)
        hi = _check(tr, cal, ex, runs, 0.9, monkeypatch)
        lo = _check(tr, cal, ex, runs, 0.1, monkeypatch)
        mean = _check(tr, cal, ex, runs, None, monkeypatch)
        assert all(lo[i] <= mean[i] + 1e-12 and mean[i] <= hi[i] + 1e-12 for i in mean)


@pytest.mark.parametrize("combine", ["sum", "max"])
def test_relative_scale_around_rls_and_max_combine(combine, monkeypatch):
    ex = TimeWeighted(feature_map="rich", target="rate", combine=combine)
    cal = _calibrated(RLS(), ex.n_features, "rate", scale="relative")
    tr, runs = _tracker(cal, ex, 10)
    _check(tr, cal, ex, runs, 0.9, monkeypatch)


def test_std_scale_under_the_max_combine_takes_the_general_path(monkeypatch):
    ex = TimeWeighted(feature_map="rich", target="rate", combine="max")
    cal = _calibrated(RLS(), ex.n_features, "rate")
    tr, runs = _tracker(cal, ex, 10)
    _check(tr, cal, ex, runs, 0.9, monkeypatch, compiled=False)
    _check(tr, cal, ex, runs, None, monkeypatch)               # the mean stays compiled


def _entities(n, seed=0):
    rng = np.random.default_rng(seed)
    own = [MODELS[i] for i in rng.integers(0, 6, n)]
    return Entities.from_lists(own, [{MODELS[(i * 5) % 6]: 1.0, MODELS[i % 6]: 1.0} for i in range(n)])


@pytest.mark.parametrize("groups", ["global", "entity"])
@pytest.mark.parametrize("target", ["rate", "slowdown"])
def test_entity_predictor_bounds_take_the_compiled_entity_path(groups, target, monkeypatch):
    # the calibration data name models, so the wrapped EntityRLS keys entities by model (the tracker follows its tags)
    ex = TimeWeighted(feature_map="rich", target=target)
    cal = _calibrated(EntityRLS(entity="model"), ex.n_features, target, entities=_entities(400), groups=groups, min_group=5)
    if groups == "entity":
        assert cal.groups_ and len(set(cal.thresholds(g)[0.9] for g in cal.groups_)) > 1
    for k in (1, 6, 20):
        tr, runs = _tracker(cal, ex, k, seed=k)
        _check(tr, cal, ex, runs, 0.9, monkeypatch)
        _check(tr, cal, ex, runs, 0.1, monkeypatch)
        _check(tr, cal, ex, runs, None, monkeypatch)


def test_per_entity_thresholds_around_rls(monkeypatch):
    ex = TimeWeighted(feature_map="rich", target="rate")
    cal = _calibrated(RLS(), ex.n_features, "rate", entities=_entities(400, seed=3), groups="entity", min_group=5)
    assert len(set(cal.thresholds(g)[0.9] for g in cal.groups_)) > 1
    tr, runs = _tracker(cal, ex, 9)
    _check(tr, cal, ex, runs, 0.9, monkeypatch)
    _check(tr, cal, ex, runs, None, monkeypatch)


def test_fresh_and_uncalibrated_wrappers(monkeypatch):
    ex = TimeWeighted(feature_map="rich", target="rate")
    for cal in (Calibrated(RLS(), quantiles=(0.9,)), Calibrated(OnlineSGD(), quantiles=(0.9,))):
        tr, runs = _tracker(cal, ex, 5)
        _check(tr, cal, ex, runs, 0.9, monkeypatch)          # no scores yet: the bound is the prior
    trained = RLS()
    trained.update(*_rows(200, 16, "rate"))
    cal = Calibrated(trained, quantiles=(0.9,))              # a trained predictor, no calibration yet
    tr, runs = _tracker(cal, ex, 5)
    _check(tr, cal, ex, runs, 0.9, monkeypatch)


def test_a_predictor_that_cannot_be_compiled_takes_the_general_path(monkeypatch):
    ex = TimeWeighted(feature_map="rich", target="rate")
    cal = _calibrated("pair_mean", ex.n_features, "rate", entities=_entities(400), groups="entity", min_group=5)
    tr, runs = _tracker(cal, ex, 6)
    _check(tr, cal, ex, runs, 0.9, monkeypatch, compiled=False)
    _check(tr, cal, ex, runs, None, monkeypatch, compiled=False)


def test_bound_form_matches_predict():
    X, y = _rows(300, 16, "rate")
    ent = _entities(300)
    for base, groups in ((RLS(), "global"), (OnlineSGD(), "entity"), (RLS(), "entity")):
        cal = Calibrated(base, quantiles=(0.9,), groups=groups, min_group=5)
        cal.update(X, y, entities=ent)
        names = [ent.names[o] for o in ent.own.tolist()]
        form = cal.bound_form(0.9, names)
        p = form.predictor
        if form.relative:
            m = p.predict(X)
            u = np.maximum(np.abs(m), form.min_scale)
        else:
            m, s = p.predict(X, return_std=True)
            u = np.maximum(s, form.min_scale * np.maximum(np.abs(m), 1.0))
        np.testing.assert_allclose(m + u * form.theta, cal.predict(X, quantile=0.9, entities=ent), rtol=1e-12)
        assert form.theta.shape == ((300,) if groups == "entity" else (1,))
    assert cal.bound_form(1.0 - 0.9).theta[0] < 0 < cal.bound_form(0.9).theta[0]   # levels read rounded
