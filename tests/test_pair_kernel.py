"""The compiled pair-term projection's own paths against each other: the vectorised segment of the
entity kind against the general one, and pair sums kept between questions against sums taken anew."""

import numpy as np
import pytest

from interfpred import ColocationTracker, EntityRLS, TimeWeighted
from interfpred.constants import TRACKER_FINISH_RTOL
from interfpred.serving.projection.entity import (
    keep_running_sums,
    pairwise_project,
    pairwise_rates,
    running_pair_sums,
)
from interfpred.serving.projection.generic import NONFINITE
from interfpred.sim.workload import mix_scenario
from interfpred.sim.zoo import zoo_profiles

_NO = np.empty(0)


@pytest.fixture(scope="module")
def model():
    sc = mix_scenario(["resnet50", "vgg19", "vit_b16"], rho=1.2, executions=600, seed=3)
    ex = TimeWeighted(feature_map="rich", target="rate")
    fm = ex.transform(sc.traces["trace"], sc.profiles, entities="model_batch")
    return EntityRLS(log_target=True, rank=2).fit(fm.X, fm.y, entities=fm.entities), ex


def _running_set(model, n, seed):
    p, ex = model
    tr = ColocationTracker(zoo_profiles("l4"), p, ex)
    rng = np.random.default_rng(seed)
    pool = [f"{m}@{b}" for m in ("resnet50", "vgg19", "vit_b16", "yolov8n") for b in range(1, 33)]
    seen = [s for s, a in zip(pool, p.backoff_terms(pool)[0]) if a == 1.0]    # no blend with the backoff
    assert len(seen) >= 10
    names = rng.choice(seen, n).tolist()
    dem = rng.uniform(0.05, 0.9, (n, 3))
    rem = rng.uniform(1.0, 50.0, n)
    return tr._proj, tr._proj.pairwise_args(names), dem, rem


def _project(args, dem, rem, theta=_NO, n_run=0, ms0=_NO):
    end = np.empty(dem.shape[0])
    status = pairwise_project(dem, rem, 3.0, *args, TRACKER_FINISH_RTOL, end, theta, 0.0, _NO, n_run, ms0)
    return status, end


@pytest.mark.parametrize("n", [1, 2, 3, 9, 40, 65])
def test_vectorised_segment_equals_the_general_path_to_the_bit(model, n):
    """A bound of zero width takes the general path (one loop per step, the exponential apart) and must
    give the same ends, and the same first rates, as the vectorised segment."""
    _, args, dem, rem = _running_set(model, n, n)
    assert args[2] == 0 and args[12] and args[8].min() == 1.0        # entity kind, log target, no blend
    fast, general = _project(args, dem, rem), _project(args, dem, rem, theta=np.zeros(1))
    assert fast[0] == general[0] == 0
    assert np.array_equal(fast[1], general[1])
    r_fast, r_general = np.empty(n), np.empty(n)
    pairwise_rates(dem, *args, r_fast, _NO, 0.0)
    pairwise_rates(dem, *args, r_general, np.zeros(1), 0.0)
    assert np.array_equal(r_fast, r_general)


@pytest.mark.parametrize("k", [0, 1, 2, 7, 64])
def test_kept_running_sums_give_the_ends_summed_anew(model, k):
    _, args, dem, rem = _running_set(model, 65, 1)
    M, u = args[7], args[5]
    e = int(u[:k].max()) + 1 if k else 0
    Mc, uc, ms0 = np.empty((e, e)), np.full(k, -1, dtype=np.int64), np.empty(k)
    assert keep_running_sums(M, u, k, Mc, uc, ms0) == (0 if k else 1, e)     # summed (none to sum for k = 0)
    assert keep_running_sums(M, u, k, Mc, uc, ms0) == (1, e)         # kept
    ref = np.empty(k)
    running_pair_sums(M, u[:k], ref)
    assert np.array_equal(ms0, ref)
    kept, anew = _project(args, dem, rem, n_run=k, ms0=ms0), _project(args, dem, rem, n_run=k)
    assert kept[0] == anew[0] == 0 and np.array_equal(kept[1], anew[1])
    np.testing.assert_allclose(kept[1], _project(args, dem, rem)[1], rtol=1e-12)   # summed in another order


def test_kept_running_sums_are_summed_again_when_a_term_or_an_entity_changes(model):
    _, args, _, _ = _running_set(model, 30, 2)
    M, u, k = args[7].copy(), args[5].copy(), 20
    e = int(u[:k].max()) + 1
    Mc, uc, ms0 = np.empty((e, e)), np.full(k, -1, dtype=np.int64), np.empty(k)
    keep_running_sums(M, u, k, Mc, uc, ms0)
    M[u[0], u[1]] += 0.25
    assert keep_running_sums(M, u, k, Mc, uc, ms0)[0] == 0
    ref = np.empty(k)
    running_pair_sums(M, u[:k], ref)
    assert np.array_equal(ms0, ref)
    M[e:, :] += 1.0                     # entities of candidates alone: the running set's sums stand
    assert keep_running_sums(M, u, k, Mc, uc, ms0)[0] == 1
    u2 = u.copy()
    u2[[0, 1]] = u2[[1, 0]]
    if u2[0] != u[0]:
        assert keep_running_sums(M, u2, k, Mc, uc, ms0)[0] == 0
    assert keep_running_sums(M, u, k + 1, Mc, uc, ms0)[0] == -1     # the buffers no longer fit: nothing written
    M[u[0], u[1]] = np.nan              # never equal to itself: summed at every question
    assert keep_running_sums(M, u, k, Mc, uc, ms0)[0] == 0
    assert keep_running_sums(M, u, k, Mc, uc, ms0)[0] == 0


def test_a_nan_term_is_refused_on_the_vectorised_path(model):
    _, args, dem, rem = _running_set(model, 12, 3)
    args = list(args)
    M = args[7].copy()
    M[args[5][0], args[5][1]] = np.nan
    args[7] = M
    assert _project(tuple(args), dem, rem)[0] == NONFINITE


def test_tracker_what_if_follows_the_model_as_it_learns(model):
    """What the projector keeps between questions (terms, running pair sums) is dropped when the
    model learns: the answers equal those of a projector that keeps nothing, at every step."""
    _, ex = model
    sc = mix_scenario(["resnet50", "vgg19", "vit_b16"], rho=1.2, executions=600, seed=3)
    fm = ex.transform(sc.traces["trace"], sc.profiles, entities="model_batch")
    p = EntityRLS(log_target=True, rank=2).fit(fm.X, fm.y, entities=fm.entities)   # this test's own
    tr = ColocationTracker(zoo_profiles("l4"), p, ex)
    models = ["resnet50", "vgg19", "vit_b16"]
    for i in range(12):
        tr.start(i, models[i % 3], 4, 0.1 * i)
    cand = [("c", "vgg19", 8)]
    for step in range(3):
        t = 2.0 + step
        got = tr.what_if(cand, t)
        assert got == _as_of(tr, cand, t)
        assert tr.what_if(cand, t) == got                          # asked again: the same answer
        assert tr.finish(step, t).learned                          # the model changes ...
    assert tr.what_if(cand, 5.0) == _as_of(tr, cand, 5.0)          # ... and the answers follow it
    assert p.projection_terms(tuple(tr._names())) is p.projection_terms(tuple(tr._names()))


def _as_of(tr, cand, t):
    """The same question through a projector that keeps nothing between questions."""
    from interfpred.serving.projection.projector import RunningSetProjector

    k = len(tr._set)
    dem = np.empty((k + 1, 3))
    dem[:k] = tr._set.demand[:k]
    rem = np.empty(k + 1)
    rem[:k] = tr._work.at(t)
    prof = tr._state.lookup_profile(cand[0][1], cand[0][2], "c")
    dem[k], rem[k] = prof[:3], prof[3]
    names = tr._names() + [tr._ents.entity_name(cand[0][1], cand[0][2])]
    proj = RunningSetProjector(tr._proj.predictor, tr._proj.extractor, entities=True)
    end = proj.project(dem, rem, t, names, None, k)
    return dict(zip([*tr._set.ids, "c"], end.tolist()))
