"""Our predictors as river and scikit-learn estimators (the other direction is :mod:`.from_peers`).

:class:`AsRiver` (``learn_one``/``predict_one`` on dicts, pipelines) and
:class:`AsSklearn` (``fit``/``predict``/``partial_fit``, ``clone``, pipelines, grid search)
wrap any interfpred predictor; both pass their library's own estimator-check suite
(tests/test_adapters.py). This module imports river and scikit-learn (about a second), so
:meth:`~interfpred.predictors.base.BasePredictor.as_river` and ``as_sklearn`` load it on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from interfpred.constants import PRIOR_SLOWDOWN
from interfpred.errors import FrozenPredictorError, InterfpredError
from interfpred.predictors.registry import make_predictor
from interfpred.predictors.tags import get_tags

if TYPE_CHECKING:
    from interfpred.predictors.base import BasePredictor

__all__ = ["AsRiver", "AsSklearn"]


def _default_predictor() -> BasePredictor:
    """The predictor a facade trains when given none: ``RLS()``."""
    return make_predictor("rls")


try:  # river is a core dependency, but keep the module importable without it
    from river import base as _river_base

    _RiverRegressorBase: Any = _river_base.Regressor
except ImportError:  # pragma: no cover
    _RiverRegressorBase = object


class AsRiver(_RiverRegressorBase):
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
    >>> model = AsRiver(predictor=RLS(forgetting=0.99))
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
        yield {"predictor": make_predictor("rls", forgetting=0.99)}
        yield {"predictor": make_predictor("online_sgd", standardize=True)}

    def _vector(self, x: dict) -> np.ndarray:
        features = self._features or ()
        out = np.zeros(len(features))
        for i, k in enumerate(features):
            v = x.get(k, 0.0)
            out[i] = v if v is not None else 0.0
        return out

    def learn_one(self, x: dict, y: float) -> None:
        """Learn one observation; a frozen (offline) predictor is refused with FrozenPredictorError."""
        if not get_tags(self.predictor or _default_predictor()).learns_online:
            raise FrozenPredictorError(
                f"AsRiver needs an online predictor; {type(self.predictor).__name__} is frozen and "
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
    return bool(get_tags(p).learns_online)


class AsSklearn(RegressorMixin, BaseEstimator):
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
    >>> pipe = make_pipeline(StandardScaler(), AsSklearn(predictor=RLS(forgetting=1.0, delta=1e6)))
    >>> np.round(pipe.fit(X, y).predict(X[:2]), 3)
    array([3., 9.])
    """

    def __init__(self, predictor: BasePredictor | None = None) -> None:
        self.predictor = predictor

    def _new_model(self) -> BasePredictor:
        return (self.predictor if self.predictor is not None else _default_predictor()).clone()

    def fit(self, X: Any, y: Any) -> AsSklearn:
        from sklearn.utils.validation import validate_data

        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        model = self._new_model()
        model.fit(X, y)
        self.model_ = model
        return self

    @available_if(_learns_online)
    def partial_fit(self, X: Any, y: Any) -> AsSklearn:
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

    def set_params(self, **params: Any) -> AsSklearn:
        nested = {k.split("__", 1)[1]: v for k, v in params.items() if k.startswith("predictor__")}
        if "predictor" in params:
            self.predictor = params["predictor"]
        others = set(params) - {"predictor"} - {f"predictor__{k}" for k in nested}
        if others:
            raise InterfpredError(f"invalid parameter(s) {sorted(others)} for AsSklearn")
        if nested:
            base = self.predictor if self.predictor is not None else _default_predictor()
            self.predictor = type(base)(**{**base.get_params(), **nested})
        return self

    def __sklearn_clone__(self) -> AsSklearn:
        return type(self)(predictor=None if self.predictor is None else self.predictor.clone())
