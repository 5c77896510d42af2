"""Bridges to river and scikit-learn, both ways.

* :class:`RiverRegressor` and :class:`SklearnRegressor` make *any* river or scikit-learn
  regressor usable as an interfpred predictor (same predict/update contract, prior before
  learning, validated input, save/load).
* :class:`RiverFacade` and :class:`SklearnFacade` make *our* predictors usable inside river
  (``learn_one``/``predict_one`` on dicts, pipelines) and scikit-learn (``fit``/``predict``/
  ``partial_fit``, ``clone``, pipelines, grid search).  Both pass their library's own
  estimator-check suite (tests/test_adapters.py).

Adapters' state files embed the wrapped object pickled (base64) inside the JSON. Unpickling
runs code named by the file, so loading such a state is refused unless the caller passes
``trusted=True`` (CLI ``--trust-model-file``); native predictors never use pickle.
"""

from __future__ import annotations

import base64
import pickle
from typing import Any

import numpy as np

from interfpred.constants import PRIOR_SLOWDOWN, SCHEMA_VERSION
from interfpred.errors import InterfpredError
from interfpred.predictors.base import BasePredictor, register, registered

__all__ = ["RiverRegressor", "SklearnRegressor", "RiverFacade", "SklearnFacade"]


def _default_predictor() -> BasePredictor:
    from interfpred.predictors.rls import RLS

    return RLS()


class _WrappedPredictor(BasePredictor):
    """Shared persistence of the wrappers: the wrapped estimator travels pickled in the JSON."""

    stores_pickle = True

    def _get_state(self) -> dict[str, Any]:
        return {"pickle": base64.b64encode(pickle.dumps(self)).decode("ascii")}

    def _set_state(self, state: dict[str, Any], d: int | None) -> None:
        obj = pickle.loads(base64.b64decode(state["pickle"]))
        if type(obj) is not type(self) or obj._d != d:
            raise InterfpredError("restored object does not match kind or width")
        self.__dict__.update(obj.__dict__)

    def to_state(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": self.kind,
            "params": {},
            "n_features_in": self._d,
            "state": self._get_state(),
        }

    @classmethod
    def from_state(cls, state: Any, *, source: str = "state", trusted: bool = False) -> BasePredictor:
        """Restore a wrapped model; refused unless ``trusted`` (the state is a pickle, which runs code)."""
        from interfpred.schema import check_predictor_file

        if not isinstance(state, dict):
            raise InterfpredError(f"{source}: expected a JSON object, got {type(state).__name__}")
        check_predictor_file(state, source=source)
        if state.get("schema_version") != SCHEMA_VERSION:
            raise InterfpredError(f"{source}: missing or unsupported schema_version")
        if not trusted:
            raise InterfpredError(
                f"{source}: holds a pickled {state.get('kind')} model, and loading a pickle runs any code the "
                "file contains; refused. Load it only if you wrote the file yourself: pass trusted=True "
                "(CLI: --trust-model-file)")
        if cls is not BasePredictor and cls is not _WrappedPredictor and state.get("kind") != cls.kind:
            raise InterfpredError(f"{source}: holds a predictor of kind {state.get('kind')!r}, not {cls.kind!r}")
        target = registered().get(str(state.get("kind"))) if cls in (BasePredictor, _WrappedPredictor) else cls
        if target is None or not issubclass(target, _WrappedPredictor):
            raise InterfpredError(f"{source}: restored object does not match kind or width")
        obj = target.__new__(target)  # the whole object comes from the pickle, not from params
        try:
            obj._set_state(state["state"], state.get("n_features_in"))
        except InterfpredError as exc:
            raise InterfpredError(f"{source}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - any corruption is bad input here
            raise InterfpredError(f"{source}: cannot restore the wrapped estimator: {exc!r}") from None
        return obj


@register
class RiverRegressor(_WrappedPredictor):
    """Any river regressor as an interfpred predictor.

    Rows become dicts ``{0: x0, 1: x1, ...}``; ``update`` calls ``learn_one`` row by row on a
    clone of ``model`` (the argument itself is never trained).

    Examples
    --------
    >>> from river import linear_model
    >>> p = RiverRegressor(model=linear_model.LinearRegression())
    >>> p.predict([0.5, 0.5])
    1.0
    >>> p.update([[0.5, 0.5]], [2.0])
    >>> p.n_seen_
    1
    """

    kind = "river"

    @staticmethod
    def _test_models() -> list[dict[str, Any]]:
        from river import linear_model, optim

        return [{"model": linear_model.LinearRegression(optimizer=optim.SGD(0.05), intercept_lr=0.05)}]

    def __init__(self, *, model: Any = None) -> None:
        self.model = model
        self._check_params()
        self._est: Any = None
        self._d = None
        self._n = 0

    def _check_params(self) -> None:
        if self.model is not None and not (hasattr(self.model, "learn_one") and hasattr(self.model, "predict_one")):
            raise InterfpredError(f"model must be a river regressor (learn_one/predict_one), got {self.model!r}")

    def _allocate(self, d: int) -> None:
        if self.model is None:
            from river import linear_model

            self._est = linear_model.LinearRegression()
        else:
            self._est = self.model.clone()
        self._d = d
        self._n = 0

    def _learn(self, X: np.ndarray, y: np.ndarray) -> None:
        est = self._est
        for row, t in zip(X.tolist(), y.tolist()):
            est.learn_one(dict(enumerate(row)), t)
        self._n += X.shape[0]

    def _predict_rows(self, X: np.ndarray) -> np.ndarray:
        if self._n == 0:
            return np.full(X.shape[0], PRIOR_SLOWDOWN)
        est = self._est
        return np.array([float(est.predict_one(dict(enumerate(row)))) for row in X.tolist()])

    @property
    def n_seen_(self) -> int:
        """Number of observations learned."""
        return self._n


@register
class SklearnRegressor(_WrappedPredictor):
    """Any scikit-learn regressor as an interfpred predictor.

    ``fit`` fits a clone of ``estimator``; ``update`` calls ``partial_fit`` when the estimator
    has it (``learns_online`` is then true) and otherwise raises
    :class:`~interfpred.errors.FrozenPredictorError`, like :class:`~interfpred.OfflineLinear`.

    Examples
    --------
    >>> from sklearn.linear_model import SGDRegressor
    >>> p = SklearnRegressor(estimator=SGDRegressor(random_state=0))
    >>> p.learns_online
    True
    >>> p.predict([0.5])
    1.0
    """

    kind = "sklearn"

    @staticmethod
    def _test_models() -> list[dict[str, Any]]:
        from sklearn.linear_model import Ridge, SGDRegressor

        return [{"estimator": SGDRegressor(random_state=0, learning_rate="constant", eta0=0.05, shuffle=False)},
                {"estimator": Ridge(alpha=1e-3)}]

    def __init__(self, *, estimator: Any = None) -> None:
        self.estimator = estimator
        self._check_params()
        self._est: Any = None
        self._d = None
        self._fitted = False

    def _check_params(self) -> None:
        if self.estimator is not None and not (hasattr(self.estimator, "fit") and hasattr(self.estimator, "predict")):
            raise InterfpredError(f"estimator must be a scikit-learn regressor, got {self.estimator!r}")

    @property
    def learns_online(self) -> bool:  # type: ignore[override]
        """True when the estimator has ``partial_fit``."""
        return self.estimator is None or hasattr(self.estimator, "partial_fit")

    def _allocate(self, d: int) -> None:
        from sklearn.base import clone
        from sklearn.linear_model import SGDRegressor

        self._est = SGDRegressor() if self.estimator is None else clone(self.estimator)
        self._d = d
        self._fitted = False

    def _fit_rows(self, X: np.ndarray, y: np.ndarray) -> None:
        if X.shape[0] == 0:
            raise InterfpredError("fit needs at least one row")
        self._est.fit(X, y)
        self._fitted = True

    def _learn(self, X: np.ndarray, y: np.ndarray) -> None:
        if self.learns_online and X.shape[0]:
            self._est.partial_fit(X, y)
            self._fitted = True

    def update(self, X: Any, y: Any) -> None:
        """``partial_fit`` on the rows (or validate and learn nothing without it)."""
        if not self.learns_online:
            from interfpred.errors import FrozenPredictorError
            from interfpred.predictors.base import as_rows, as_targets

            Xa, single = as_rows(X, width=self._d)
            as_targets(y, Xa.shape[0], single)
            raise FrozenPredictorError(
                f"{type(self.estimator).__name__} has no partial_fit, so update() cannot learn online; refit "
                "with fit(X, y) on all the data, or wrap an estimator with partial_fit (SGDRegressor)")
        BasePredictor.update(self, X, y)

    def _predict_rows(self, X: np.ndarray) -> np.ndarray:
        if not self._fitted:
            return np.full(X.shape[0], PRIOR_SLOWDOWN)
        return np.asarray(self._est.predict(X), dtype=np.float64).reshape(-1)


# ----------------------------------------------------------------------------- facades

try:  # river is a core dependency, but keep the module importable without it
    from river import base as _river_base

    _RiverRegressorBase: Any = _river_base.Regressor
except ImportError:  # pragma: no cover
    _RiverRegressorBase = object


class RiverFacade(_RiverRegressorBase):
    """An interfpred predictor inside river: ``learn_one(x: dict, y)`` / ``predict_one(x)``.

    The feature order is fixed by the keys of the first ``learn_one`` (sorted); a feature
    missing from a later dict counts as 0 (river's sparse convention) and a feature never seen
    at the first call is ignored, so the predictor's width stays fixed.

    Parameters
    ----------
    predictor
        The interfpred predictor to train (cloned, never trained itself); default ``RLS()``.

    Examples
    --------
    >>> from interfpred import RLS
    >>> model = RiverFacade(predictor=RLS(forgetting=0.99))
    >>> model.predict_one({"l2": 0.3, "dram": 0.2})
    1.0
    >>> model.learn_one({"l2": 0.3, "dram": 0.2}, 1.4)
    >>> round(model.predict_one({"l2": 0.3, "dram": 0.2}), 2)
    1.4
    """

    def __init__(self, predictor: BasePredictor | None = None) -> None:
        self.predictor = predictor
        self._model: BasePredictor | None = None
        self._features: tuple | None = None

    @classmethod
    def _unit_test_params(cls):
        from interfpred.predictors.rls import RLS
        from interfpred.predictors.sgd import OnlineSGD

        yield {"predictor": RLS(forgetting=0.99)}
        yield {"predictor": OnlineSGD(standardize=True)}

    def _vector(self, x: dict) -> np.ndarray:
        features = self._features or ()
        out = np.zeros(len(features))
        for i, k in enumerate(features):
            v = x.get(k, 0.0)
            out[i] = v if v is not None else 0.0
        return out

    def learn_one(self, x: dict, y: float) -> None:
        """Learn one observation; a frozen (offline) predictor is refused with FrozenPredictorError."""
        if not getattr(self.predictor or _default_predictor(), "learns_online", True):
            from interfpred.errors import FrozenPredictorError

            raise FrozenPredictorError(
                f"RiverFacade needs an online predictor; {type(self.predictor).__name__} is frozen and "
                "cannot learn_one (use RLS or OnlineSGD)")
        if self._features is None:
            try:
                features = tuple(sorted(x))
            except TypeError:
                features = tuple(x)
            model = (self.predictor or _default_predictor()).clone()
            model.update(np.array([float(x[k]) for k in features]), float(y))
            self._features, self._model = features, model
            return
        assert self._model is not None  # set together with _features
        self._model.update(self._vector(x), float(y))

    def predict_one(self, x: dict) -> float:
        if self._model is None:
            return PRIOR_SLOWDOWN
        return float(self._model.predict(self._vector(x)))


try:
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.utils.metaestimators import available_if
except ImportError:  # pragma: no cover
    BaseEstimator = RegressorMixin = object

    def available_if(check: Any) -> Any:
        return lambda fn: fn


def _learns_online(facade: Any) -> bool:
    """Whether the facade's predictor learns online (``partial_fit`` exists only then)."""
    p = facade.predictor if facade.predictor is not None else _default_predictor()
    return bool(getattr(p, "learns_online", True))


class SklearnFacade(RegressorMixin, BaseEstimator):
    """An interfpred predictor as a scikit-learn regressor (fit / predict / partial_fit).

    ``fit`` trains a fresh clone of ``predictor``; ``partial_fit`` keeps learning so the facade
    works in pipelines, ``clone``, grid search and out-of-core loops. A frozen predictor
    (``OfflineLinear``, ``GpuletsModel``) has no ``partial_fit`` here, as scikit-learn's own
    offline estimators have none.

    Parameters
    ----------
    predictor
        The interfpred predictor (default ``RLS()``); its hyperparameters are reachable as
        ``predictor__<name>`` in ``set_params`` / grid search.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from interfpred import RLS
    >>> X = np.arange(20.0).reshape(10, 2); y = X @ [1.0, 2.0] + 1.0
    >>> pipe = make_pipeline(StandardScaler(), SklearnFacade(predictor=RLS(forgetting=1.0, delta=1e6)))
    >>> np.round(pipe.fit(X, y).predict(X[:2]), 3)
    array([3., 9.])
    """

    def __init__(self, predictor: BasePredictor | None = None) -> None:
        self.predictor = predictor

    def _new_model(self) -> BasePredictor:
        return (self.predictor if self.predictor is not None else _default_predictor()).clone()

    def fit(self, X: Any, y: Any) -> SklearnFacade:
        from sklearn.utils.validation import validate_data

        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        model = self._new_model()
        model.fit(X, y)
        self.model_ = model
        return self

    @available_if(_learns_online)
    def partial_fit(self, X: Any, y: Any) -> SklearnFacade:
        """Keep learning from more rows (only offered when the predictor learns online)."""
        from sklearn.utils.validation import validate_data

        first = not hasattr(self, "model_")
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, reset=first)
        model = self._new_model() if first else self.model_
        model.update(X, y)
        self.model_ = model
        return self

    def predict(self, X: Any) -> np.ndarray:
        from sklearn.utils.validation import check_is_fitted, validate_data

        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return np.asarray(self.model_.predict(X), dtype=np.float64)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        params = {"predictor": self.predictor}
        if deep and self.predictor is not None:
            for k, v in self.predictor.get_params().items():
                params[f"predictor__{k}"] = v
        return params

    def set_params(self, **params: Any) -> SklearnFacade:
        nested = {k.split("__", 1)[1]: v for k, v in params.items() if k.startswith("predictor__")}
        if "predictor" in params:
            self.predictor = params["predictor"]
        others = set(params) - {"predictor"} - {f"predictor__{k}" for k in nested}
        if others:
            raise InterfpredError(f"invalid parameter(s) {sorted(others)} for SklearnFacade")
        if nested:
            base = self.predictor if self.predictor is not None else _default_predictor()
            self.predictor = type(base)(**{**base.get_params(), **nested})
        return self

    def __sklearn_clone__(self) -> SklearnFacade:
        return type(self)(predictor=None if self.predictor is None else self.predictor.clone())
