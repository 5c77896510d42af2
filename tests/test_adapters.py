"""AsRiver and AsSklearn pass river's and scikit-learn's own estimator-check suites; FromRiver and FromSklearn
behave as predictors."""

import numpy as np
import pytest

from interfpred import RLS, OfflineLinear, OnlineSGD
from interfpred.predictors.as_peers import AsRiver, AsSklearn
from interfpred.predictors.from_peers import FromRiver, FromSklearn

river_checks = pytest.importorskip("river.checks")
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

RIVER_MODELS = [AsRiver(**params) for params in AsRiver._unit_test_params()]


def _river_cases():
    for model in RIVER_MODELS:
        for check in river_checks.yield_checks(model):
            yield pytest.param(model, check, id=f"{model.predictor!r}-{check.__name__}")


@pytest.mark.parametrize("model,check", list(_river_cases()))
def test_river_estimator_checks(model, check):
    check(model.clone())


SKLEARN_ESTIMATORS = [
    AsSklearn(),
    AsSklearn(predictor=OnlineSGD(standardize=True, learning_rate=0.5)),   # one pass must fit these rows (R² > 0.5)
    AsSklearn(predictor=OfflineLinear(ridge=1e-3)),
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
    grid = GridSearchCV(make_pipeline(StandardScaler(), AsSklearn(predictor=RLS())),
                        {"assklearn__predictor__forgetting": [0.9, 1.0]}, cv=3)
    grid.fit(X, y)
    assert grid.best_params_["assklearn__predictor__forgetting"] == 1.0
    assert grid.score(X, y) > 0.999
    facade = AsSklearn(predictor=RLS(forgetting=1.0))
    for chunk in np.array_split(np.arange(200), 10):
        facade.partial_fit(X[chunk], y[chunk])
    np.testing.assert_allclose(facade.predict(X[:5]), y[:5], atol=1e-2)


def test_river_facade_in_pipeline():
    from river import preprocessing

    model = preprocessing.StandardScaler() | AsRiver(predictor=RLS())
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
    for p in (FromRiver(model=linear_model.LinearRegression(optimizer=optim.SGD(0.05))),
              FromSklearn(estimator=SGDRegressor(learning_rate="constant", eta0=0.05, random_state=0))):
        p.update(X, y)
        assert np.mean((p.predict(X) - y) ** 2) < 0.01


def test_as_river_and_as_sklearn():
    p = RLS(forgetting=0.9)
    r, s = p.as_river(), p.as_sklearn()
    assert isinstance(r, AsRiver) and repr(r.predictor) == repr(p) and r.predictor is not p
    assert isinstance(s, AsSklearn) and s.get_params()["predictor__forgetting"] == 0.9


def test_wrapped_state_round_trip_and_refusals(tmp_path):
    import numpy as np
    from river import linear_model

    from interfpred import load_predictor
    from interfpred.errors import InterfpredError
    from interfpred.predictors.from_peers import FromRiver
    from interfpred.predictors.registry import predictor_from_state

    p = FromRiver(model=linear_model.LinearRegression())
    p.update(np.array([[1.0, 2.0], [0.5, 0.0]]), np.array([2.0, 1.0]))
    path = tmp_path / "river.json"
    p.save(path)
    q = load_predictor(path, trusted=True)
    assert type(q) is FromRiver and q.predict([1.0, 1.0]) == pytest.approx(p.predict([1.0, 1.0]))
    state = p.to_state()
    with pytest.raises(InterfpredError, match="cannot restore the wrapped estimator"):
        predictor_from_state({**state, "state": {"pickle": "not base64!"}}, trusted=True)
    with pytest.raises(InterfpredError, match="does not match kind or width"):
        predictor_from_state({**state, "n_features_in": 5}, source="f.json", trusted=True)
    with pytest.raises(InterfpredError, match="does not match kind or width"):
        predictor_from_state({**state, "kind": "sklearn"}, source="f.json", trusted=True)


class _Boom:
    """Unpickling this object would create a marker file: the proof that code ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickled_state_is_refused_unless_trusted(tmp_path):
    import base64
    import json
    import pickle

    from interfpred import InterferenceModel, load_model, load_predictor
    from interfpred.errors import InterfpredError
    from interfpred.predictors.from_peers import FromSklearn

    marker = tmp_path / "code-ran"
    evil = {"schema_version": 1, "kind": "sklearn", "params": {}, "n_features_in": 2,
            "state": {"pickle": base64.b64encode(pickle.dumps(_Boom(str(marker)))).decode("ascii")}}
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(evil))
    with pytest.raises(InterfpredError, match="runs any code.*trusted=True.*--trust-model-file"):
        load_predictor(path)
    model = InterferenceModel({"aggregation": "static", "feature_map": "gpulets"}, "rls").to_state()
    model["predictor"] = evil
    mpath = tmp_path / "evil-model.json"
    mpath.write_text(json.dumps(model))
    with pytest.raises(InterfpredError, match="pickled sklearn model"):
        load_model(mpath)
    assert not marker.exists()
    # a trusted wrapped model round-trips; a native one never needs trust
    from sklearn.linear_model import Ridge

    good = FromSklearn(estimator=Ridge()).fit([[0.0, 1.0], [1.0, 0.0]], [1.0, 2.0])
    good.save(tmp_path / "ridge.json")
    assert load_predictor(tmp_path / "ridge.json", trusted=True).predict([0.0, 1.0]) == pytest.approx(
        good.predict([0.0, 1.0]))


def test_cli_refuses_pickled_model_unless_trusted(tmp_path, capsys):
    import json

    from sklearn.linear_model import Ridge

    from interfpred.cli import main
    from interfpred.model.interference import InterferenceModel
    from interfpred.predictors.from_peers import FromSklearn
    from interfpred.sim.workload import mix_scenario, write_scenario

    sc = mix_scenario(["vgg19"], rho=0.8, executions=60, seed=0)
    write_scenario(sc, tmp_path / "sim")
    m = InterferenceModel({"aggregation": "static", "feature_map": "gpulets"}, FromSklearn(estimator=Ridge()))
    m.fit(sc.traces["trace"], sc.profiles).save(tmp_path / "m.json")
    args = ["evaluate", "--model-file", str(tmp_path / "m.json"), "--profiles", str(tmp_path / "sim" / "profiles.csv"),
            "--trace", str(tmp_path / "sim" / "trace.csv")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--trust-model-file" in err and "m.json" in err
    assert main([*args, "--trust-model-file"]) == 0
    json.loads((tmp_path / "m.json").read_text())
