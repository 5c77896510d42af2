"""EntityRLS: closed form, kernels against the plain reference, shrinkage, alone-is-solo, persistence, soak."""

import copy
import math
import pickle

import numpy as np
import pytest
from naive import naive_entity_blocks

from interfpred import RLS, Entities, EntityRLS, InterfpredError, load_predictor
from interfpred.constants import ENTITY_FACTOR_INIT

NAMES = ["resnet50", "vgg19", "bert", "yolo"]


def _stream(n, seed=0, d=3, alone_share=0.0, names=NAMES):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    sens = dict(zip(names, rng.normal(0.0, 0.3, len(names))))
    aggr = dict(zip(names, rng.normal(0.0, 0.3, len(names))))
    own, co, y = [], [], []
    for i in range(n):
        o = names[int(rng.integers(len(names)))]
        if rng.random() < alone_share:
            c = {}
        else:
            k = int(rng.integers(1, 3))
            c = {names[j]: float(rng.choice([0.5, 1.0])) for j in rng.choice(len(names), k, replace=False)}
        own.append(o)
        co.append(c)
        tot = sum(c.values())
        y.append(1.0 if tot == 0 else 1.2 + X[i] @ np.linspace(0.2, 0.6, d) + sens[o]
                 + sum(w * aggr[k] for k, w in c.items()) + 0.01 * rng.normal())
    return X, np.array(y), Entities.from_lists(own, co)


def _design(X, ent, names, pairs):
    """Dense design [x, 1, s (per name), a (per name), p (per pair)] of the linear model."""
    n = X.shape[0]
    cols = {("s", s): i for i, s in enumerate(names)}
    cols.update({("a", s): len(names) + i for i, s in enumerate(names)})
    cols.update({("p",) + pr: 2 * len(names) + i for i, pr in enumerate(pairs)})
    H = np.zeros((n, len(cols)))
    for i in range(n):
        own, co = ent.row(i)
        H[i, cols[("s", own)]] = min(1.0, sum(co.values()))
        for c, w in co.items():
            H[i, cols[("a", c)]] += w
            H[i, cols[("p", own, c)]] += w
    return np.hstack([X, np.ones((n, 1)), H])


def test_full_covariance_equals_batch_generalised_ridge():
    X, y, ent = _stream(60, seed=1)
    p = EntityRLS(covariance="full", population="joint", log_target=False, forgetting=1.0, sensitivity_var=0.2,
                  aggressiveness_var=0.3, pair_var=0.05)
    for i in range(30):
        p.update(X[i], float(y[i]), entities=ent.take([i]))
    p.update(X[30:], y[30:], entities=ent.take(np.arange(30, 60)))
    names = list(p.entities_)
    pairs = list(p.pair_terms_)
    H = _design(X, ent, names, pairs)
    d = X.shape[1]
    q0 = np.concatenate([np.full(d + 1, 1.0 / p.delta), np.full(len(names), 1 / 0.2), np.full(len(names), 1 / 0.3),
                         np.full(len(pairs), 1 / 0.05)])
    theta0 = np.zeros(H.shape[1])
    theta0[d] = 1.0
    theta = np.linalg.solve(H.T @ H + np.diag(q0), H.T @ y + q0 * theta0)
    np.testing.assert_allclose(p.coef_, theta[:d], rtol=0, atol=1e-9)
    assert abs(p.intercept_ - theta[d]) < 1e-9
    terms = p.entity_terms_
    for i, s in enumerate(names):
        assert abs(terms[s]["sensitivity"] - theta[d + 1 + i]) < 1e-9
        assert abs(terms[s]["aggressiveness"] - theta[d + 1 + len(names) + i]) < 1e-9
    for i, pr in enumerate(pairs):
        assert abs(p.pair_terms_[pr] - theta[d + 1 + 2 * len(names) + i]) < 1e-9
    np.testing.assert_allclose(p.predict(X, entities=ent), H @ theta, rtol=0, atol=1e-9)


def test_blocks_without_entities_is_rls():
    rng = np.random.default_rng(3)
    X = rng.random((500, 4))
    y = 1.0 + X @ np.array([0.3, -0.2, 0.5, 0.1]) + 0.01 * rng.normal(size=500)
    a = EntityRLS(forgetting=0.97, population="joint", log_target=False, covariance="blocks").fit(X[:100], y[:100])
    b = RLS(forgetting=0.97).fit(X[:100], y[:100])
    for x, t in zip(X[100:], y[100:]):
        a.update(x, float(t))
        b.update(x, float(t))
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("rank, log_target, population", [(0, False, "joint"), (2, False, "joint"),
                                                          (3, True, "marginal"), (0, False, "marginal")])
def test_blocks_kernel_matches_plain_reference(rank, log_target, population):
    X, y, ent = _stream(150, seed=4, alone_share=0.1)
    kw = dict(forgetting=0.98, delta=50.0, entity_forgetting=0.99, sensitivity_var=0.2, aggressiveness_var=0.1,
              pair_var=0.05, factor_var=0.3, rank=rank, log_target=log_target, seed=7, population=population)
    p = EntityRLS(stabilize=False, tune_priors=False, covariance="blocks", **kw).fit(X, y, entities=ent)

    def init(e):
        return np.random.default_rng([7, e]).normal(0.0, ENTITY_FACTOR_INIT * math.sqrt(0.3), 2 * rank)

    ref = naive_entity_blocks([(X[i], y[i]) + ent.row(i) for i in range(len(y))], d=3, forgetting=0.98, delta=50.0,
                              entity_forgetting=0.99, variances=(0.2, 0.1, 0.05, 0.3), rank=rank,
                              seed_factors=init, log_target=log_target, population=population)
    Xt, _, et = _stream(40, seed=5)
    expected = [ref(Xt[i], *et.row(i)) for i in range(40)]
    np.testing.assert_allclose(p.predict(Xt, entities=et), expected, rtol=1e-10, atol=1e-10)


def test_unseen_entity_predicts_exactly_the_population_model_without_backoff():
    X, y, ent = _stream(300, seed=2)
    for rank in (0, 2):
        p = EntityRLS(rank=rank, log_target=False, backoff_evidence=0.0).fit(X, y, entities=ent)
        x = X[:5]
        unseen = Entities.from_lists(["never"] * 5, [{"seen-nowhere": 1.0}] * 5)
        g = x @ p.coef_ + p.intercept_
        np.testing.assert_allclose(p.predict(x, entities=unseen), g, rtol=1e-15, atol=0)
        np.testing.assert_allclose(p.predict(x, entities=unseen), p.predict(x), rtol=1e-15, atol=0)


def _learned(ent):
    """Rows EntityRLS learns with alone_is_solo: those with a co-runner."""
    return np.array([sum(ent.row(i)[1].values()) > 0 for i in range(len(ent))])


@pytest.mark.parametrize("log_target", [False, True])
def test_unseen_model_backs_off_to_the_features_only_rls_of_the_same_rows(log_target):
    X, y, ent = _stream(300, seed=2)
    p = EntityRLS(log_target=log_target).fit(X, y, entities=ent)
    keep = _learned(ent)
    backoff = RLS(forgetting=p.forgetting, delta=p.delta).fit(X[keep], y[keep])
    x = X[:5]
    unseen = Entities.from_lists(["never"] * 5, [{ent.names[0]: 1.0}] * 5)   # a known co-runner, an unseen model
    np.testing.assert_allclose(p.predict(x, entities=unseen), backoff.predict(x), rtol=1e-12)
    for i in range(5):   # the compiled single-row path agrees
        assert p.predict(x[i], entities=unseen.take([i])) == pytest.approx(backoff.predict(x[i]), rel=1e-12)


def test_a_new_models_terms_take_over_as_its_evidence_accrues():
    X, y, ent = _stream(300, seed=2)
    p = EntityRLS(log_target=False, backoff_evidence=4.0, tune_priors=False).fit(X, y, entities=ent)
    off = EntityRLS(log_target=False, backoff_evidence=0.0, tune_priors=False).fit(X, y, entities=ent)
    x = np.array([0.3, 0.6, 0.2])
    row = Entities.from_lists(["newbie"], [{ent.names[0]: 1.0}])
    weights = []
    for n in range(6):
        A, _, _ = p.backoff_terms(["newbie"])
        weights.append(float(A[0]))
        if n == 5:
            break
        for q in (p, off):
            q.update(x, 2.0, entities=row)
    assert weights == [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]
    # evidence complete: the entity model alone, exactly as without the backoff
    assert p.predict(x, entities=row) == pytest.approx(off.predict(x, entities=row), rel=1e-12)


def test_backoff_state_round_trips_and_old_states_are_refused(tmp_path):
    X, y, ent = _stream(200, seed=3)
    p = EntityRLS().fit(X, y, entities=ent)
    q = EntityRLS.from_state(p.to_state())
    unseen = Entities.from_lists(["never"] * 5, [{ent.names[0]: 1.0}] * 5)
    np.testing.assert_array_equal(q.predict(X[:5], entities=unseen), p.predict(X[:5], entities=unseen))
    state = p.to_state()
    del state["state"]["backoff"]
    with pytest.raises(InterfpredError, match="no backoff model"):
        EntityRLS.from_state(state)


def _mape_of_latency(rate_true, rate_pred):
    return float(np.mean(np.abs(rate_true / np.clip(rate_pred, 0.01, 1.0) - 1.0)))


@pytest.mark.parametrize("target", ["rate", "slowdown"])
def test_a_declared_target_scales_the_backoff_to_the_least_latency_error_on_the_fitted_rows(target):
    # rates of models unlike each other: the mean across them errs high in percent of latency
    rng = np.random.default_rng(4)
    names = [f"m{i}" for i in range(6)]
    own = rng.choice(names, 400)
    ent = Entities.from_lists(own, [{names[(names.index(o) + 1) % 6]: 1.0} for o in own])
    X = rng.random((400, 2))
    rate = np.clip(np.array([0.15, 0.5, 0.8, 0.85, 0.9, 0.95])[[names.index(o) for o in own]]
                   + 0.02 * rng.standard_normal(400), 0.05, 1.0)
    y = rate if target == "rate" else 1.0 / rate
    plain = EntityRLS(backoff_scale=False, target=target)
    plain.fit(X, y, entities=ent)
    scaled = EntityRLS(target=target)
    scaled.fit(X, y, entities=ent)
    assert plain.backoff_scale_ == 1.0 and scaled.backoff_scale_ != 1.0
    unseen = Entities.from_lists(["never"] * 400, [{"m0": 1.0}] * 400)
    to_rate = (lambda v: v) if target == "rate" else (lambda v: 1.0 / v)
    before = _mape_of_latency(rate, to_rate(plain.predict(X, entities=unseen)))
    after = _mape_of_latency(rate, to_rate(scaled.predict(X, entities=unseen)))
    assert after < before
    # the chosen factor is at least as good as any of a fine grid on those rows (the backoff's own rows)
    base = plain.predict(X, entities=unseen)
    losses = [_mape_of_latency(rate, to_rate(k * base)) for k in 1.002 ** np.arange(-700, 701)]
    assert after <= min(losses) + 1e-6
    # the seen models keep the entity model's predictions; every path applies the same factor
    seen = ent.take(np.arange(5))
    np.testing.assert_array_equal(scaled.predict(X[:5], entities=seen), plain.predict(X[:5], entities=seen))
    A, w, b = scaled.backoff_terms(["never"])
    assert A[0] == 0.0
    np.testing.assert_allclose(b + X[:5] @ w, scaled.predict(X[:5], entities=unseen.take(np.arange(5))), rtol=1e-12)
    assert scaled.predict(X[0], entities=unseen.take([0])) == pytest.approx(float(b + X[0] @ w), rel=1e-12)
    # kept through the state; a state without it (or a bad one) is refused
    q = EntityRLS.from_state(scaled.to_state())
    assert q.backoff_scale_ == scaled.backoff_scale_
    np.testing.assert_array_equal(q.predict(X[:5], entities=unseen.take(np.arange(5))),
                                  scaled.predict(X[:5], entities=unseen.take(np.arange(5))))
    for bad in (None, 0.0, float("nan"), True):
        state = scaled.to_state()
        state["state"]["backoff_scale"] = bad
        with pytest.raises(InterfpredError, match="backoff_scale"):
            EntityRLS.from_state(state)


def test_without_a_declared_target_the_backoff_is_unscaled_and_clones_keep_the_declaration():
    X, y, ent = _stream(200, seed=3)
    assert EntityRLS().fit(X, y, entities=ent).backoff_scale_ == 1.0     # bare arrays: no target known
    p = EntityRLS(target="rate")
    assert p.clone().target == "rate" and p.get_params()["target"] == "rate"
    fitted = EntityRLS().fit(X, y, entities=ent)
    declared = fitted.with_target("rate")      # a copy keeps what it learned
    assert fitted.target is None and declared.target == "rate" and declared.n_seen_ == fitted.n_seen_


def test_shrinkage_one_observation_moves_less_than_a_hundred():
    X, y, ent = _stream(400, seed=6)
    p = EntityRLS(log_target=False, tune_priors=False).fit(X, y, entities=ent)
    x = np.array([0.5, 0.5, 0.5])
    g = float(x @ p.coef_ + p.intercept_)
    moved = {}
    for n in (1, 100):
        q = pickle.loads(pickle.dumps(p))
        e = Entities.from_lists([f"new{n}"], [{"resnet50": 1.0}])
        for _ in range(n):
            q.update(x, g + 1.0, entities=e)
        moved[n] = q.predict(x, entities=e) - q.predict(x)    # the new entity's own terms
    assert 0.0 < moved[1] < moved[100] < 1.0 + 1e-9
    assert moved[1] < 0.5 * moved[100]


def test_alone_is_solo_and_teaches_nothing():
    X, y, ent = _stream(200, seed=8)
    p = EntityRLS(log_target=True).fit(X, y, entities=ent)
    alone = Entities.from_lists(["resnet50", "brand-new"], [{}, {"vgg19": 0.0}])
    assert p.predict(X[:2], entities=alone).tolist() == [1.0, 1.0]
    before = p.predict(X, entities=ent)
    p.update(X[:2], np.array([5.0, 7.0]), entities=alone)
    np.testing.assert_array_equal(p.predict(X, entities=ent), before)
    assert p.n_seen_ == 202
    off = EntityRLS(alone_is_solo=False).fit(X, y, entities=ent)
    assert off.predict(X[0], entities=alone.take([0])) != 1.0


def test_log_target_refuses_non_positive_targets_unchanged():
    X, y, ent = _stream(50, seed=9)
    p = EntityRLS(log_target=True).fit(X, y, entities=ent)
    state = pickle.dumps(p)
    with pytest.raises(InterfpredError, match="log_target"):
        p.update(X[0], -1.0, entities=Entities.from_lists(["zz"], [{"yy": 1.0}]))
    with pytest.raises(InterfpredError, match="log_target"):
        p.update(X[:2], np.array([1.0, 0.0]), entities=ent.take([0, 1]))
    assert pickle.dumps(p) == state


def test_save_load_round_trip_with_unicode_names(tmp_path):
    names = ["résnet-50", "模型", "vgg19 ✓"]
    X, y, ent = _stream(120, seed=10, names=names)
    for params in ({"rank": 2}, {"covariance": "full", "population": "joint"}):
        p = EntityRLS(**params).fit(X, y, entities=ent)
        path = tmp_path / "p.json"
        p.save(path)
        assert "模型" in path.read_text(encoding="utf-8") or "\\u6a21" in path.read_text(encoding="utf-8")
        q = load_predictor(path)
        assert q.entities_ == p.entities_ and q.pair_terms_ == p.pair_terms_
        np.testing.assert_array_equal(q.predict(X, entities=ent), p.predict(X, entities=ent))
        q.update(X[:10], y[:10], entities=ent.take(np.arange(10)))
        p.update(X[:10], y[:10], entities=ent.take(np.arange(10)))
        np.testing.assert_array_equal(q.predict(X, entities=ent), p.predict(X, entities=ent))


def test_bad_parameters_are_refused():
    for kw, needle in (({"rank": 2, "covariance": "full"}, "rank"), ({"covariance": "dense"}, "covariance"),
                       ({"pair_var": -1.0}, "pair_var"), ({"entity_forgetting": 1.5}, "entity_forgetting"),
                       ({"rank": 99}, "rank"), ({"covariance": "full", "population": "marginal"}, "population='joint'"),
                       ({"population": "mixed"}, "population")):
        with pytest.raises(InterfpredError, match=needle):
            EntityRLS(**kw)


def test_soak_with_entities_that_appear_once_stays_finite():
    """A shorter version of benchmarks/soak_entity_rls.py (10**7 updates)."""
    rng = np.random.default_rng(11)
    p = EntityRLS(forgetting=0.95, entity_forgetting=0.9, rank=2)
    x = np.zeros(4)
    for i in range(20_000):
        x[:] = 0.0
        x[i % 4] = rng.random()                      # one feature active at a time
        if i % 10 == 0:
            e = Entities.from_lists([f"once-{i}"], [{f"gone-{i}": 1.0}])
        else:
            e = Entities.from_lists([NAMES[i % 4]], [{NAMES[(i // 4) % 4]: 1.0}])
        p.update(x, 1.0 + x.sum() + 0.01 * rng.normal(), entities=e)
    assert np.isfinite(p.coef_).all() and np.isfinite(p.intercept_)
    vals = np.array([v for t in p.entity_terms_.values() for v in t.values()] + list(p.pair_terms_.values()))
    assert np.isfinite(vals).all() and np.abs(vals).max() < 10.0
    assert len(p.entities_) == 4 + 2 * 2000


def _hier_stream(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    leaves = ["m@1", "m@8", "n@1", "n@4", "o@2"]
    own = [leaves[i] for i in rng.integers(0, 5, n)]
    co = [{leaves[j]: float(rng.choice([0.5, 1.0]))} for j in rng.integers(0, 5, n)]
    y = 1.1 + 0.3 * X[:, 0] + np.array([0.2 * (o[0] == "m") + 0.1 * (c.get("n@4", 0)) for o, c in zip(own, co)])
    return X, y + 0.01 * rng.normal(size=n), Entities.from_lists(own, co)


def test_hierarchy_full_covariance_equals_batch_generalised_ridge():
    X, y, ent = _hier_stream(80, 12)
    p = EntityRLS(covariance="full", population="joint", log_target=False, forgetting=1.0, sensitivity_var=0.2,
                  aggressiveness_var=0.3, pair_var=0.05)
    p.update(X, y, entities=ent)
    names, pairs = list(p.entities_), list(p.pair_terms_)
    assert {"m", "n", "o"} <= set(names) and ("m", "n") in pairs
    cols = {("s", s): i for i, s in enumerate(names)}
    cols.update({("a", s): len(names) + i for i, s in enumerate(names)})
    cols.update({("p",) + pr: 2 * len(names) + i for i, pr in enumerate(pairs)})
    H = np.zeros((len(y), len(cols)))
    for i in range(len(y)):
        own, co = ent.row(i)
        tot = sum(co.values())
        for o in (own, own.split("@")[0]):
            H[i, cols[("s", o)]] += min(1.0, tot)
        for c, w in co.items():
            for k in (("a", c), ("a", c.split("@")[0]), ("p", own, c), ("p", own.split("@")[0], c.split("@")[0])):
                H[i, cols[k]] += w
    H = np.hstack([X, np.ones((len(y), 1)), H])
    q0 = np.concatenate([np.full(3, 1.0 / p.delta), np.full(len(names), 1 / 0.2), np.full(len(names), 1 / 0.3),
                         np.full(len(pairs), 1 / 0.05)])
    theta0 = np.zeros(H.shape[1])
    theta0[2] = 1.0
    theta = np.linalg.solve(H.T @ H + np.diag(q0), H.T @ y + q0 * theta0)
    np.testing.assert_allclose(p.predict(X, entities=ent), H @ theta, rtol=0, atol=1e-9)
    for i, s in enumerate(names):
        assert abs(p.entity_terms_[s]["sensitivity"] - theta[3 + i]) < 1e-9


def test_unseen_batch_size_of_a_known_model_starts_from_the_model():
    X, y, ent = _hier_stream(300, 13)
    p = EntityRLS(log_target=False).fit(X, y, entities=ent)
    x = np.array([0.5, 0.5])
    t, pt = p.entity_terms_, p.pair_terms_
    g = float(x @ p.coef_ + p.intercept_)
    new = Entities.from_lists(["m@64"], [{"n@4": 1.0}])       # m known, m@64 never seen
    expect = g + t["m"]["sensitivity"] + t["n@4"]["aggressiveness"] + t["n"]["aggressiveness"] + pt[("m", "n")]
    assert abs(p.predict(x, entities=new) - expect) < 1e-12
    flat = EntityRLS(hierarchy=False).fit(X, y, entities=ent)
    assert "m" not in flat.entities_
    S, M = p.pairwise_terms(["m@64", "n@4"])
    assert abs(g + S[0] + M[0, 1] - expect) < 1e-12


def test_tune_priors_chooses_on_the_fit_rows_and_is_saved(tmp_path):
    from interfpred.constants import ENTITY_VAR_SCALES
    from interfpred.predictors.entity_rls.tuning import select_prior_variances

    X, y, ent = _hier_stream(200, 14)
    p = EntityRLS(tune_priors=True).fit(X, y, entities=ent)
    best, scores = select_prior_variances(X, y, ent, params={**p.get_params(), "tune_priors": False,
                                                             "covariance": "blocks"})
    assert p.prior_variances_ == best and len(scores) == len(ENTITY_VAR_SCALES) ** 2
    assert min(s for _, s in scores) <= dict((tuple(v.items()), s) for v, s in scores)[
        tuple({k: getattr(EntityRLS(), k) for k in best}.items())]
    assert p.sensitivity_var == EntityRLS().sensitivity_var            # the hyperparameter is unchanged
    p.save(tmp_path / "p.json")
    q = EntityRLS.load(tmp_path / "p.json")
    assert q.prior_variances_ == best
    np.testing.assert_array_equal(q.predict(X, entities=ent), p.predict(X, entities=ent))


def test_a_repeated_prior_search_is_answered_from_memory_and_the_backoff_shares_it(monkeypatch):
    from interfpred.predictors.entity_rls import tuning

    X, y, ent = _hier_stream(120, 21)
    params = {**EntityRLS().get_params(), "tune_priors": False, "covariance": "blocks"}
    runs = []
    real = tuning.validation_error
    monkeypatch.setattr(tuning, "validation_error", lambda *a, **k: runs.append(1) or real(*a, **k))
    first = tuning.select_prior_variances(X, y, ent, params=params, target="slowdown")
    n = len(runs)
    assert n == len(tuning.ENTITY_VAR_SCALES) ** 2
    again = tuning.select_prior_variances(X.copy(), y.copy(), ent, params=dict(params), target="slowdown")
    assert again == first and len(runs) == n                 # remembered: the same answer, nothing run
    again[0]["pair_var"] = -1.0                              # a copy: the memory keeps its own
    assert tuning.select_prior_variances(X, y, ent, params=params, target="slowdown") == first
    y2 = y.copy()
    y2[-1] *= 1.01
    tuning.select_prior_variances(X, y2, ent, params=params, target="slowdown")
    assert len(runs) == 2 * n                                # one target changed: searched again
    tuning.select_prior_variances(X, y, ent, params=params, target="rate")
    assert len(runs) == 3 * n
    # the backoff does not enter the search: predictors that differ only in it tune alike
    got = {b: EntityRLS(backoff=b, target="slowdown").fit(X, y, entities=ent).prior_variances_
           for b in ("rls", "global_mean", "no_interference")}
    assert got["global_mean"] == got["rls"] == got["no_interference"]


def test_auto_covariance_is_exact_while_small_then_keeps_only_blocks(monkeypatch, tmp_path):
    import interfpred.predictors.entity_rls._store as store

    monkeypatch.setattr(store, "ENTITY_FULL_MAX_PARAMS", 30)
    X, y, ent = _stream(200, seed=15, names=[f"m{i}" for i in range(8)])
    auto = EntityRLS(population="joint", tune_priors=False)
    full = EntityRLS(population="joint", tune_priors=False, covariance="full")
    i, Xt, et = 0, X[:20], ent.take(np.arange(20))
    while True:                  # the joint covariance of every parameter (exact, as "full") up to 30
        if auto.n_seen_ and auto.covariance_.shape[0] == 4 + len(auto.entity_priors_):
            np.testing.assert_allclose(auto.predict(Xt, entities=et), full.predict(Xt, entities=et), rtol=1e-9)
        elif auto.n_seen_:
            break
        for p in (auto, full):
            p.update(X[i], float(y[i]), entities=ent.take([i]))
        i += 1
    assert 5 < i < 200
    assert auto.covariance_.shape == (4, 4) and auto.entity_variances_.shape == (len(auto.entity_priors_),)
    loop = pickle.loads(pickle.dumps(auto))
    auto.update(X[i:], y[i:], entities=ent.take(np.arange(i, 200)))
    for j in range(i, 200):
        loop.update(X[j], float(y[j]), entities=ent.take([j]))
    np.testing.assert_allclose(auto.predict(X, entities=ent), loop.predict(X, entities=ent), rtol=1e-12)
    auto.save(tmp_path / "a.json")
    np.testing.assert_array_equal(EntityRLS.load(tmp_path / "a.json").predict(X, entities=ent),
                                  auto.predict(X, entities=ent))


@pytest.mark.parametrize("full_max", [30, 10_000])    # through the switch from joint to blocks, and without
@pytest.mark.parametrize("backoff", ["rls", "global_mean"])
def test_one_batch_learns_to_the_bit_what_rows_one_by_one_do(monkeypatch, full_max, backoff):
    import interfpred.predictors.entity_rls._store as store

    monkeypatch.setattr(store, "ENTITY_FULL_MAX_PARAMS", full_max)
    # new names keep appearing mid-stream, so a batch is learned in spans between first sights
    X, y, ent = _stream(160, seed=21, names=[f"m{i}" for i in range(9)])
    batch = EntityRLS(population="joint", tune_priors=False, covariance="auto", backoff=backoff)
    rows = EntityRLS(population="joint", tune_priors=False, covariance="auto", backoff=backoff)
    batch.update(X[:3], y[:3], entities=ent.take(np.arange(3)))
    rows.update(X[:3], y[:3], entities=ent.take(np.arange(3)))
    batch.update(X[3:], y[3:], entities=ent.take(np.arange(3, 160)))
    for j in range(3, 160):
        rows.update(X[j], float(y[j]), entities=ent.take([j]))
    assert batch.to_state() == rows.to_state()
    np.testing.assert_array_equal(batch.predict(X, entities=ent), rows.predict(X, entities=ent))


def test_a_refused_batch_names_its_row_and_leaves_the_state_as_it_was():
    X, y, ent = _stream(40, seed=22)
    p = EntityRLS(population="joint", tune_priors=False, covariance="full").fit(X[:10], y[:10],
                                                                                 entities=ent.take(np.arange(10)))
    before = p.to_state()
    bad = y[10:].copy()
    bad[7] = np.nan
    with pytest.raises(InterfpredError, match="7"):
        p.update(X[10:], bad, entities=ent.take(np.arange(10, 40)))
    assert p.to_state() == before


@pytest.mark.parametrize("backoff", ["global_mean", "no_interference", "rls"])
@pytest.mark.parametrize("target", ["rate", "slowdown"])
def test_refit_backoff_is_a_fresh_fit_with_that_backoff(backoff, target):
    X, y, ent = _stream(120, seed=23, names=[f"m{i}" for i in range(6)], alone_share=0.2)
    kw = {"tune_priors": False, "target": target, "alone_is_solo": True}
    p = EntityRLS(**kw).fit(X, y, entities=ent)
    before = p.to_state()
    q = p.refit_backoff(backoff, X, y, entities=ent)
    fresh = EntityRLS(**kw, backoff=backoff).fit(X, y, entities=ent)
    assert q.to_state() == fresh.to_state() and q.backoff_scale_ == fresh.backoff_scale_
    assert p.to_state() == before        # the original is left as it was
    Xn, yn, en = _stream(30, seed=24, names=[f"m{i}" for i in range(4, 9)])     # new models: the backoff speaks
    np.testing.assert_array_equal(q.predict(Xn, entities=en), fresh.predict(Xn, entities=en))
    with pytest.raises(InterfpredError, match="tune_priors"):
        EntityRLS(target=target).fit(X, y, entities=ent).refit_backoff(backoff, X, y, entities=ent)


@pytest.mark.parametrize("params", [
    {"target": "slowdown"},
    {"target": "rate", "covariance": "full", "population": "joint"},
    {"covariance": "blocks", "rank": 2, "backoff_evidence": 3.0},
    {"alone_is_solo": False, "backoff_evidence": 0.0, "log_target": False},
    {"backoff": "global_mean", "target": "slowdown"},
    {"hierarchy": False, "pair_var": 0.0, "entity_forgetting": 0.98},
])
def test_compiled_prequential_run_equals_predict_then_update_row_by_row(params):
    # what the prior search runs on its held-out tail: the same predictions and the same state, to the bit,
    # as the public predict then update of each row (new entities and lone rows arrive mid-run)
    X1, y1, e1 = _stream(120, seed=31, alone_share=0.2)
    X2, y2, e2 = _stream(120, seed=32, alone_share=0.2, names=NAMES + ["late1", "late2"])    # new models
    X, y = np.vstack([X1, X2]), np.concatenate([y1, y2])
    rows_of = [e1.row(i) for i in range(120)] + [e2.row(i) for i in range(120)]
    ent = Entities.from_lists([o for o, _ in rows_of], [c for _, c in rows_of])
    p = EntityRLS(tune_priors=False, **params).fit(X[:120], y[:120], entities=ent.take(np.arange(120)))
    q = copy.deepcopy(p)
    tail = ent.take(np.arange(120, 240))
    got = p.learn_rows(np.ascontiguousarray(X[120:]), np.ascontiguousarray(y[120:]), tail)
    rows = tail.split_rows()
    want = np.empty(120)
    for j in range(120):
        want[j] = q.predict(X[120 + j], entities=rows[j])
        q.update(X[120 + j], float(y[120 + j]), entities=rows[j])
    assert np.array_equal(got, want)
    assert p.to_state() == q.to_state()
    # creating every new entity first (what the prior search does): the same predictions where that
    # is exact (decoupled covariance, no latent factors), ignored elsewhere
    r = EntityRLS(tune_priors=False, **params).fit(X[:120], y[:120], entities=ent.take(np.arange(120)))
    assert np.array_equal(r.learn_rows(np.ascontiguousarray(X[120:]), np.ascontiguousarray(y[120:]), tail,
                                         create_first=True), want)


@pytest.mark.parametrize("params", [
    {"target": "rate", "covariance": "blocks"},
    {"covariance": "blocks", "backoff_evidence": 3.0, "alone_is_solo": False},
    {"covariance": "blocks", "backoff": "no_interference", "hierarchy": False},
    {"covariance": "blocks", "log_target": False, "backoff_evidence": 0.0},
    {"covariance": "blocks", "rank": 2},                  # latent factors: the loop
    {"target": "slowdown"},                                 # the joint covariance, all along
    {"target": "rate", "covariance": "full", "backoff_evidence": 2.0},
])
def test_learn_runs_equals_the_loop_of_predict_then_update(params):
    # runs of two or three rows, new models and pairs among them, lone rows: the same predictions to the
    # bit, and afterwards the same predictions everywhere (the same learned values)
    from interfpred.predictors.base import BasePredictor

    X1, y1, e1 = _stream(120, seed=41, alone_share=0.2)
    X2, y2, e2 = _stream(150, seed=42, alone_share=0.2, names=NAMES + ["late1", "late2"])
    X, y = np.vstack([X1, X2]), np.concatenate([y1, y2])
    rows_of = [e1.row(i) for i in range(120)] + [e2.row(i) for i in range(150)]
    ent = Entities.from_lists([o for o, _ in rows_of], [c for _, c in rows_of])
    p = EntityRLS(tune_priors=False, **params).fit(X[:120], y[:120], entities=ent.take(np.arange(120)))
    q = copy.deepcopy(p)
    test = np.arange(120, 270)
    rng = np.random.default_rng(5)
    cuts = np.sort(rng.choice(np.arange(1, 150), 60, replace=False))
    runs = [test[a:b] for a, b in zip([0, *cuts], [*cuts, 150])]
    runs = [runs[i] for i in rng.permutation(len(runs))]
    Xc, yc = np.ascontiguousarray(X), np.ascontiguousarray(y)
    got = p.learn_runs(Xc, yc, runs, entities=ent)[test]
    want = BasePredictor.learn_runs(q, Xc, yc, runs, entities=ent)[test]
    assert np.array_equal(got, want)
    assert p.to_state() == q.to_state()


def test_learn_runs_refusal_leaves_the_state_and_raises_as_update():
    from interfpred.errors import InterfpredError

    X, y, ent = _stream(80, seed=43)
    p = EntityRLS(tune_priors=False, covariance="blocks").fit(X[:40], y[:40], entities=ent.take(np.arange(40)))
    before = p.to_state()
    y_bad = y.copy()
    y_bad[60] = -1.0
    runs = [np.arange(40, 50), np.arange(50, 65), np.arange(65, 80)]
    with pytest.raises(InterfpredError):
        p.learn_runs(np.ascontiguousarray(X), y_bad, runs, entities=ent)
    q = EntityRLS(tune_priors=False, covariance="blocks").fit(X[:40], y[:40], entities=ent.take(np.arange(40)))
    q.learn_runs(np.ascontiguousarray(X), y_bad, runs[:1], entities=ent)      # the loop learned the first run
    assert p.to_state() == q.to_state() and before != p.to_state()


def test_learn_runs_where_the_joint_covariance_gives_way_to_blocks_is_the_loop(monkeypatch):
    import interfpred.predictors.entity_rls._store as store
    from interfpred.predictors.base import BasePredictor

    monkeypatch.setattr(store, "ENTITY_FULL_MAX_PARAMS", 70)
    X, y, ent = _stream(200, seed=44, names=[f"m{i}" for i in range(9)])
    p = EntityRLS(tune_priors=False, population="joint").fit(X[:30], y[:30], entities=ent.take(np.arange(30)))
    assert p._is_full()                        # still the joint covariance
    q = copy.deepcopy(p)
    runs = [np.arange(a, min(a + 3, 200)) for a in range(30, 200, 3)]
    got = p.learn_runs(np.ascontiguousarray(X), y, runs, entities=ent)
    want = BasePredictor.learn_runs(q, np.ascontiguousarray(X), y, runs, entities=ent)
    assert np.array_equal(got[30:], want[30:]) and p.to_state() == q.to_state()
    assert not p._is_full()                    # blocks by the end


def test_learn_runs_refuses_non_physical_rows_as_update_does():
    from interfpred.errors import InterfpredError
    from interfpred.predictors.base import BasePredictor

    X, y, ent = _stream(60, seed=45)
    y_big = y.copy()
    y_big[50] = 5000.0
    runs = [np.arange(30, 45), np.arange(45, 60)]
    p = EntityRLS(tune_priors=False, covariance="blocks").fit(X[:30], y[:30], entities=ent.take(np.arange(30)))
    q = copy.deepcopy(p)
    with pytest.raises(InterfpredError, match="non-physical"):
        p.learn_runs(np.ascontiguousarray(X), y_big, runs, entities=ent)
    with pytest.raises(InterfpredError, match="non-physical"):
        BasePredictor.learn_runs(q, np.ascontiguousarray(X), y_big, runs, entities=ent)
    assert p.to_state() == q.to_state()


def test_learn_rows_refuses_what_it_cannot_take():
    from interfpred.errors import InterfpredError

    X, y, ent = _stream(20, seed=46)
    with pytest.raises(InterfpredError, match="needs a fitted EntityRLS"):
        EntityRLS().learn_rows(X, y, ent)
    p = EntityRLS(tune_priors=False).fit(X[:10], y[:10], entities=ent.take(np.arange(10)))
    with pytest.raises(InterfpredError, match=r"needs X \(n, 3\), y \(n,\) and entities of n rows"):
        p.learn_rows(X[10:], y[10:], ent)                  # entities of 20 rows for 10
    with pytest.raises(InterfpredError, match="needs X"):
        p.learn_rows(X[10:, :2], y[10:], ent.take(np.arange(10, 20)))


def test_projection_terms_are_kept_while_the_model_is_the_same_and_follow_it_when_it_learns():
    X, y, ent = _stream(300, seed=11)
    p = EntityRLS().fit(X[:200], y[:200], entities=ent.take(np.arange(200)))
    names = ("resnet50", "vgg19", "bert", "unseen")
    first = p.projection_terms(names)
    assert p.projection_terms(names) is first                     # kept: the same tuple
    assert p.projection_terms(list(names)) is first               # the same names in another sequence
    w, b, S, M, A, w2, b2 = first
    assert np.array_equal(w, p.coef_) and b == p.intercept_
    assert all(np.array_equal(x, z) for x, z in zip((S, M), p.pairwise_terms(list(names))))
    assert np.array_equal(A, p.backoff_terms(list(names))[0]) and A[3] == 0.0
    assert not any(a.flags.writeable for a in (w, S, M, A, w2))
    p.update(X[200:210], y[200:210], entities=ent.take(np.arange(200, 210)))
    after = p.projection_terms(names)
    assert after is not first and not np.array_equal(after[3], M)        # learned: read again
    assert np.array_equal(after[3], p.pairwise_terms(list(names))[1])
    fresh = pickle.loads(pickle.dumps(p))                         # a copy keeps no memo: the same terms
    assert all(np.array_equal(x, z) for x, z in zip(after[::2], fresh.projection_terms(names)[::2]))
