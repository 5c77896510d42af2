"""The facades pass river's and scikit-learn's own estimator-check suites; wrappers behave as predictors."""

import numpy as np
import pytest

from interfpred import RLS, OfflineLinear, OnlineSGD
from interfpred.predictors.adapters import RiverFacade, RiverRegressor, SklearnFacade, SklearnRegressor

river_checks = pytest.importorskip("river.checks")
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

RIVER_MODELS = [RiverFacade(**params) for params in RiverFacade._unit_test_params()]


def _river_cases():
    for model in RIVER_MODELS:
        for check in river_checks.yield_checks(model):
            yield pytest.param(model, check, id=f"{model.predictor!r}-{check.__name__}")


@pytest.mark.parametrize("model,check", list(_river_cases()))
def test_river_estimator_checks(model, check):
    check(model.clone())


SKLEARN_ESTIMATORS = [
    SklearnFacade(),
    SklearnFacade(predictor=OnlineSGD(standardize=True)),
    SklearnFacade(predictor=OfflineLinear(ridge=1e-3)),
]


# No check needs sklearn's expected-failed mechanism: all of them pass for these three.
@parametrize_with_checks(SKLEARN_ESTIMATORS)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_sklearn_facade_in_pipeline_and_grid_search():
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    X = rng.random((200, 3))
    y = 1.0 + X @ [1.0, 2.0, 3.0]
    grid = GridSearchCV(make_pipeline(StandardScaler(), SklearnFacade(predictor=RLS())),
                        {"sklearnfacade__predictor__forgetting": [0.9, 1.0]}, cv=3)
    grid.fit(X, y)
    assert grid.best_params_["sklearnfacade__predictor__forgetting"] == 1.0
    assert grid.score(X, y) > 0.999
    facade = SklearnFacade(predictor=RLS(forgetting=1.0))
    for chunk in np.array_split(np.arange(200), 10):
        facade.partial_fit(X[chunk], y[chunk])
    np.testing.assert_allclose(facade.predict(X[:5]), y[:5], atol=1e-2)


def test_river_facade_in_pipeline():
    from river import preprocessing

    model = preprocessing.StandardScaler() | RiverFacade(predictor=RLS())
    rng = np.random.default_rng(1)
    for _ in range(500):
        x = {"a": rng.random(), "b": rng.random()}
        model.learn_one(x, 1.0 + x["a"] - 2 * x["b"])
    assert model.predict_one({"a": 0.5, "b": 0.25}) == pytest.approx(1.0, abs=0.01)


def test_wrappers_learn():
    from river import linear_model, optim
    from sklearn.linear_model import SGDRegressor

    rng = np.random.default_rng(2)
    X = rng.random((2000, 2))
    y = 1.0 + X @ [1.0, -1.0]
    for p in (RiverRegressor(model=linear_model.LinearRegression(optimizer=optim.SGD(0.05))),
              SklearnRegressor(estimator=SGDRegressor(learning_rate="constant", eta0=0.05, random_state=0))):
        p.update(X, y)
        assert np.mean((p.predict(X) - y) ** 2) < 0.01


def test_as_river_and_as_sklearn():
    p = RLS(forgetting=0.9)
    r, s = p.as_river(), p.as_sklearn()
    assert isinstance(r, RiverFacade) and repr(r.predictor) == repr(p) and r.predictor is not p
    assert isinstance(s, SklearnFacade) and s.get_params()["predictor__forgetting"] == 0.9


def test_wrapped_state_round_trip_and_refusals(tmp_path):
    import numpy as np
    from river import linear_model

    from interfpred import load_predictor
    from interfpred.errors import InterfpredError
    from interfpred.predictors.adapters import RiverRegressor
    from interfpred.predictors.base import predictor_from_state

    p = RiverRegressor(model=linear_model.LinearRegression())
    p.update(np.array([[1.0, 2.0], [0.5, 0.0]]), np.array([2.0, 1.0]))
    path = tmp_path / "river.json"
    p.save(path)
    q = load_predictor(path)
    assert type(q) is RiverRegressor and q.predict([1.0, 1.0]) == p.predict([1.0, 1.0])
    state = p.to_state()
    with pytest.raises(InterfpredError, match="cannot restore the wrapped estimator"):
        predictor_from_state({**state, "state": {"pickle": "not base64!"}})
    with pytest.raises(InterfpredError, match="does not match kind or width"):
        predictor_from_state({**state, "n_features_in": 5}, source="f.json")
    with pytest.raises(InterfpredError, match="does not match kind or width"):
        predictor_from_state({**state, "kind": "sklearn"}, source="f.json")
