"""Reference tests of the predictors: closed forms, peer libraries, golden values, bad input, windup."""

import json
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_ew_ridge, naive_nlms, naive_sgd_constant

from interfpred import RLS, GpuletsModel, OfflineLinear, OnlineSGD, PredictorSpec, load_predictor, make_predictor
from interfpred.constants import GPULETS_RTX2080TI, PRIOR_SLOWDOWN, SGD_EPS
from interfpred.errors import InterfpredError
from interfpred.predictors import gpulets_utilisation


def _data(n=80, d=4, seed=0, noise=0.05):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = 1.0 + X @ rng.normal(size=d) + noise * rng.normal(size=n)
    return X, y


# ----------------------------------------------------------------------------- RLS


@pytest.mark.parametrize("stabilize", [True, False])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("forgetting", [1.0, 0.97, 0.8])
def test_rls_equals_closed_form_ew_ridge(stabilize, fit_intercept, forgetting):
    X, y = _data()
    delta = 5.0
    rls = RLS(forgetting=forgetting, delta=delta, fit_intercept=fit_intercept, stabilize=stabilize)
    rls.update(X, y)
    Xt = np.column_stack([X, np.ones(len(X))]) if fit_intercept else X
    w0 = np.zeros(Xt.shape[1])
    if fit_intercept:
        w0[-1] = PRIOR_SLOWDOWN
    w, A = naive_ew_ridge(Xt, y, forgetting=forgetting, delta=delta, w0=w0, stabilize=stabilize)
    got = np.append(rls.coef_, rls.intercept_) if fit_intercept else rls.coef_
    np.testing.assert_allclose(got, w, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(rls.covariance_, np.linalg.inv(A), rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(rls.information_, A, rtol=1e-6, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 40),
    d=st.integers(1, 5),
    forgetting=st.floats(0.6, 1.0),
    seed=st.integers(0, 2**16),
)
def test_rls_matches_closed_form_property(n, d, forgetting, seed):
    X, y = _data(n=n, d=d, seed=seed)
    rls = RLS(forgetting=forgetting, delta=10.0)
    for x, t in zip(X, y):
        rls.update(x, float(t))
    Xt = np.column_stack([X, np.ones(n)])
    w0 = np.append(np.zeros(d), 1.0)
    w, _ = naive_ew_ridge(Xt, y, forgetting=forgetting, delta=10.0, w0=w0, stabilize=True)
    np.testing.assert_allclose(np.append(rls.coef_, rls.intercept_), w, rtol=1e-6, atol=1e-7)


def test_rls_equals_padasip_filter_rls():
    pa = pytest.importorskip("padasip")
    X, y = _data(n=300, d=5, seed=3)
    f, delta = 0.98, 50.0
    ref = pa.filters.FilterRLS(5, mu=f, eps=1.0 / delta, w="zeros")
    ours = RLS(forgetting=f, delta=delta, fit_intercept=False, stabilize=False)
    for x, t in zip(X, y):
        assert ours.predict(x) == pytest.approx(float(ref.predict(x)), rel=1e-9, abs=1e-9) or ours.n_seen_ == 0
        ref.adapt(t, x)
        ours.update(x, float(t))
    np.testing.assert_allclose(ours.coef_, ref.w, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours.covariance_, ref.R, rtol=1e-6, atol=1e-9)


def test_rls_return_std():
    X, y = _data(n=500, noise=0.1)
    rls = RLS(forgetting=0.999)
    mean0, std0 = rls.predict(X[:3], return_std=True)
    assert np.all(mean0 == 1.0) and np.all(std0 > 0)
    rls.update(X, y)
    mean, std = rls.predict(X[:50], return_std=True)
    np.testing.assert_array_equal(mean, rls.predict(X[:50]))
    assert np.all(std > 0.05) and np.all(std < 0.2), std  # close to the noise level 0.1
    m1, s1 = rls.predict(X[0], return_std=True)
    assert isinstance(m1, float) and s1 == pytest.approx(std[0])


def _idle_stream(n, seed=0):
    """One of six features active, the rest idle at exactly zero."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n, 6))
    X[:, 0] = rng.random(n)
    return X, 1.0 + 0.5 * X[:, 0] + 0.01 * rng.normal(size=n)


def test_plain_rls_winds_up_and_stabilised_does_not():
    X, y = _idle_stream(20_000)
    plain = RLS(forgetting=0.95, stabilize=False)
    plain.update(X[:13_000], y[:13_000])
    assert np.isfinite(plain.covariance_).all()
    before = plain.covariance_
    # idle directions' covariance grows as 0.95**-t * delta and overflows after ~13,700 updates:
    # the kernel refuses the update that would use it, and the refused batch changes nothing
    with pytest.raises(InterfpredError, match=r"wound up.*row \d+"):
        plain.update(X[13_000:], y[13_000:])
    assert plain.n_seen_ == 13_000 and np.array_equal(plain.covariance_, before)
    for i in range(13_000, 20_000):
        try:
            plain.update(X[i], float(y[i]))
        except InterfpredError:
            break
    assert 13_500 < plain.n_seen_ < 14_000
    stable = RLS(forgetting=0.95)
    stable.update(X, y)
    P = stable.covariance_
    assert np.isfinite(P).all() and np.array_equal(P, P.T)
    bound = stable.delta * stable.forgetting ** -(P.shape[0] - 1)
    assert np.linalg.eigvalsh(P).min() > 0 and np.linalg.eigvalsh(P).max() <= bound
    assert stable.predict(np.array([0.5, 0, 0, 0, 0, 0])) == pytest.approx(1.25, abs=0.01)


def test_rls_soak_small():
    """A smaller version of benchmarks/soak_rls.py: 200k updates, forgetting 0.99, one of six active."""
    X, y = _idle_stream(200_000, seed=1)
    rls = RLS(forgetting=0.99)
    rls.update(X, y)
    P = rls.covariance_
    assert np.array_equal(P, P.T)
    assert np.isfinite(P).all() and np.linalg.eigvalsh(rls.covariance_).min() > 0
    assert np.isfinite(rls.coef_).all()


def test_rls_bad_params():
    for kw in ({"forgetting": 0.0}, {"forgetting": 1.5}, {"forgetting": float("nan")}, {"delta": -1.0},
               {"delta": 0.0}, {"forgetting": "x"}, {"fit_intercept": "yes"}):
        with pytest.raises(InterfpredError, match=next(iter(kw))):
            RLS(**kw)


def test_refused_single_row_messages():
    rls = RLS().fit(*_data(n=10, d=3))
    with pytest.raises(InterfpredError, match="4 features.*fitted with 3"):
        rls.update(np.zeros(4), 1.0)
    with pytest.raises(InterfpredError, match="finite"):
        rls.update(np.array([0.0, np.nan, 0.0]), 1.0)
    with pytest.raises(InterfpredError, match="y"):
        rls.update(np.zeros(3), float("inf"))
    with pytest.raises(InterfpredError, match="numeric"):
        rls.update(["a", "b", "c"], 1.0)
    with pytest.raises(InterfpredError, match="y has shape"):
        rls.update(np.zeros((2, 3)), [1.0])


# ----------------------------------------------------------------------------- SGD


def test_sgd_constant_equals_river_linear_regression():
    pytest.importorskip("river")
    import river.linear_model
    import river.optim

    X, y = _data(n=300, d=3, seed=4)
    lr = 0.05
    ref = river.linear_model.LinearRegression(
        optimizer=river.optim.SGD(lr), intercept_lr=lr, intercept_init=1.0, l2=0.0)
    ours = OnlineSGD(schedule="constant", learning_rate=lr, standardize=False)
    for x, t in zip(X, y):
        xd = {i: v for i, v in enumerate(x)}
        assert ours.predict(x) == pytest.approx(ref.predict_one(xd), rel=1e-10, abs=1e-12) or ours.n_seen_ == 0
        ref.learn_one(xd, t)
        ours.update(x, float(t))
    np.testing.assert_allclose(ours.coef_, [ref.weights[i] for i in range(3)], rtol=1e-10)
    assert ours.intercept_ == pytest.approx(ref.intercept, rel=1e-10)


def test_sgd_steps_match_naive():
    X, y = _data(n=100, d=3, seed=5)
    w, b = naive_sgd_constant(X.tolist(), y.tolist(), learning_rate=0.03)
    s = OnlineSGD(schedule="constant", learning_rate=0.03, standardize=False)
    s.update(X, y)
    np.testing.assert_allclose(s.coef_, w, rtol=1e-12)
    assert s.intercept_ == pytest.approx(b, rel=1e-12)
    wn = naive_nlms(X.tolist(), y.tolist(), learning_rate=0.5, eps=SGD_EPS)
    s = OnlineSGD(learning_rate=0.5, standardize=False)
    s.update(X, y)
    np.testing.assert_allclose(np.append(s.coef_, s.intercept_), wn, rtol=1e-12)


def test_sgd_standardize_matches_river_pipeline():
    pytest.importorskip("river")
    import river.linear_model
    import river.optim
    import river.preprocessing

    rng = np.random.default_rng(6)
    X = rng.random((200, 3)) * [1.0, 100.0, 0.01]
    y = 1.0 + X @ [1.0, 0.01, 50.0]
    lr = 0.01
    ref = river.preprocessing.StandardScaler() | river.linear_model.LinearRegression(
        optimizer=river.optim.SGD(lr), intercept_lr=lr, intercept_init=1.0, l2=0.0)
    ours = OnlineSGD(schedule="constant", learning_rate=lr, standardize=True)
    for x, t in zip(X, y):
        xd = {i: v for i, v in enumerate(x)}
        ref.learn_one(xd, t)
        ours.update(x, float(t))
    xs = X[-20:]
    np.testing.assert_allclose(ours.predict(xs), [ref.predict_one({i: v for i, v in enumerate(x)}) for x in xs],
                               rtol=1e-9)


@pytest.mark.parametrize("schedule", ["nlms", "constant", "invscaling", "adagrad"])
def test_sgd_schedules_learn(schedule):
    X, y = _data(n=4000, d=3, seed=7, noise=0.0)
    rate = {"nlms": 0.5, "constant": 0.05, "invscaling": 0.2, "adagrad": 0.5}[schedule]
    s = OnlineSGD(schedule=schedule, learning_rate=rate)
    s.update(X, y)
    assert np.mean((s.predict(X[-500:]) - y[-500:]) ** 2) < 0.05 * np.var(y)


def test_sgd_bad_params():
    with pytest.raises(InterfpredError, match="schedule"):
        OnlineSGD(schedule="cosine")
    with pytest.raises(InterfpredError, match="learning_rate"):
        OnlineSGD(learning_rate=-1)


# ----------------------------------------------------------------------------- OfflineLinear


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_offline_linear_equals_lstsq(fit_intercept):
    X, y = _data(n=50, d=4, seed=8)
    lin = OfflineLinear(fit_intercept=fit_intercept).fit(X, y)
    A = np.column_stack([X, np.ones(50)]) if fit_intercept else X
    sol, *_ = np.linalg.lstsq(A, y, rcond=None)
    np.testing.assert_allclose(lin.coef_, sol[:4], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lin.predict(X), A @ sol, rtol=1e-9)


def test_offline_linear_ridge_and_frozen():
    X, y = _data(n=50, d=4, seed=9)
    lin = OfflineLinear(ridge=2.0).fit(X, y)
    Xc, yc = X - X.mean(0), y - y.mean()
    w = np.linalg.solve(Xc.T @ Xc + 2.0 * np.eye(4), Xc.T @ yc)
    np.testing.assert_allclose(lin.coef_, w, rtol=1e-9)
    before = lin.predict(X)
    from interfpred.errors import FrozenPredictorError

    with pytest.raises(FrozenPredictorError):
        lin.update(X, y * 10)
    np.testing.assert_array_equal(lin.predict(X), before)
    assert not lin.tags.learns_online


# ----------------------------------------------------------------------------- gpulets

RESNET = {4: (23.02484696516914, 43.9120672383918), 8: (25.804610379945494, 51.32452611818465),
          16: (26.780005182643528, 58.42497335853165)}
BERT = {4: (14.006191661801928, 30.31561936214498), 8: (16.251708451540086, 30.201366343901302)}
VGG = {8: (32.05999721101224, 56.68343269048246), 16: (30.520814400745177, 60.8393803005258)}


@pytest.mark.parametrize("me,other,expected", [
    ((RESNET, 12, 50), (BERT, 6, 50), 1.0750815746440552),
    ((VGG, 8, 70), (RESNET, 4, 30), 1.1225876555584005),
    ((BERT, 5, 100), (VGG, 12, 100), 1.295152399292195),
])
def test_gpulets_golden(me, other, expected):
    g = GpuletsModel(coefficients=GPULETS_RTX2080TI, clip=False)
    u_me, u_other = gpulets_utilisation(*me), gpulets_utilisation(*other)
    assert abs(g.interference(u_me, u_other) - expected) <= 1e-12
    x = np.array([u_me[0], u_me[1], u_other[0], u_other[1]])
    assert abs(g.predict(x) - expected) <= 1e-12
    assert GpuletsModel(coefficients=GPULETS_RTX2080TI).predict(x) == pytest.approx(max(expected, 1.0), rel=1e-12, abs=1e-12)


def test_gpulets_fit_recovers_coefficients():
    rng = np.random.default_rng(10)
    X = rng.random((60, 4))
    c = np.array(GPULETS_RTX2080TI)
    y = c[0] * X[:, 0] + c[1] * X[:, 2] + c[2] * X[:, 1] + c[3] * X[:, 3] + c[4]
    g = GpuletsModel(clip=False).fit(X, y)
    np.testing.assert_allclose(g.coefficients_, c, rtol=1e-9)


def test_gpulets_declared_for_the_rate_learns_the_rate_and_refuses_published_slowdown_coefficients():
    rng = np.random.default_rng(11)
    X = rng.random((60, 4))
    rate = 0.9 - 0.3 * X[:, 1] - 0.2 * X[:, 3]
    g = GpuletsModel(target="rate")
    g.fit(X, rate)
    np.testing.assert_allclose(g.predict(X), rate, rtol=1e-9)      # not clipped up to 1
    assert g.linear_form().lower == -np.inf
    slow = GpuletsModel(target="slowdown")
    assert slow.fit(X, 1.0 / rate).linear_form().lower == 1.0
    published = GpuletsModel(coefficients=GPULETS_RTX2080TI, target="rate")
    with pytest.raises(InterfpredError, match="predict a slowdown"):
        published.predict(X[0])


def test_gpulets_utilisation_errors():
    with pytest.raises(InterfpredError, match="batch size 16"):
        gpulets_utilisation(BERT, 12, 50)
    with pytest.raises(InterfpredError, match="partition"):
        gpulets_utilisation(BERT, 4, 0)
    assert gpulets_utilisation(VGG, 16, 100) == pytest.approx((0.30520814400745177, 0.608393803005258))


# ----------------------------------------------------------------------------- registry and files


def test_registry_and_spec():
    assert make_predictor("rls", forgetting=0.99).get_params()["forgetting"] == 0.99
    spec = PredictorSpec.model_validate_json('{"kind": "online_sgd", "params": {"schedule": "adagrad"}}')
    assert make_predictor(spec).schedule == "adagrad"
    with pytest.raises(InterfpredError, match="unknown predictor kind 'lms'"):
        make_predictor("lms")
    with pytest.raises(InterfpredError, match="unknown parameter.*mu"):
        make_predictor("rls", mu=0.9)


def test_load_refuses_other_kind_version_width(tmp_path):
    path = tmp_path / "rls.json"
    RLS().fit(*_data(n=10, d=3)).save(path)
    with pytest.raises(InterfpredError, match="kind 'rls', not 'online_sgd'"):
        OnlineSGD.load(path)
    state = json.loads(path.read_text())
    bad = dict(state, schema_version=99)
    (tmp_path / "v.json").write_text(json.dumps(bad))
    with pytest.raises(InterfpredError, match="schema_version 99"):
        load_predictor(tmp_path / "v.json")
    bad = dict(state, n_features_in=5)
    (tmp_path / "w.json").write_text(json.dumps(bad))
    with pytest.raises(InterfpredError, match="w.json"):
        load_predictor(tmp_path / "w.json")
    (tmp_path / "f.json").write_text(json.dumps(dict(state, params={"forgetting": 5.0})))
    with pytest.raises(InterfpredError, match="f.json: bad parameters for 'rls': forgetting"):
        load_predictor(tmp_path / "f.json")
    (tmp_path / "j.json").write_text("{\n oops")
    with pytest.raises(InterfpredError, match="j.json line 2"):
        load_predictor(tmp_path / "j.json")
    assert isinstance(load_predictor(path), RLS)


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "p.json"
    RLS().save(path)
    before = path.read_text()
    p = RLS().fit(*_data(n=10, d=3))
    monkeypatch.setattr(json, "dumps", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError):
        p.save(path)
    assert path.read_text() == before
    assert [f.name for f in tmp_path.iterdir()] == ["p.json"]


def test_pickle_keeps_learning():
    X, y = _data(n=30, d=3)
    p = RLS().fit(X, y)
    q = pickle.loads(pickle.dumps(p))
    p.update(X, y)
    q.update(X, y)
    np.testing.assert_array_equal(p.coef_, q.coef_)


@pytest.mark.parametrize("make", [lambda: RLS(), lambda: OnlineSGD(standardize=True), lambda: OfflineLinear()])
def test_fast_single_row_path_handles_strided_and_odd_types(make):
    X, y = _data(n=40, d=3, seed=11)
    a, b = make().fit(X, y), make().fit(X, y)
    wide = np.zeros((40, 6))
    wide[:, ::2] = X
    for i in range(40):
        row = wide[i, ::2]  # strided view
        assert not row.flags.c_contiguous
        assert a.predict(row) == b.predict(X[i].copy())
        if a.tags.learns_online:  # a frozen predictor refuses update (tested in its own test)
            a.update(row, np.float64(y[i]))
            b.update(X[i].tolist(), float(y[i]))  # the generic (list) path
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    with pytest.raises(InterfpredError):
        a.update(np.zeros(3, dtype=np.float32) * np.nan, 1.0)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
