"""Any river or scikit-learn regressor as an interfpred predictor (kinds ``river`` and ``sklearn``):
:class:`FromRiver` and :class:`FromSklearn` (the other direction is :mod:`.as_peers`).

Same predict/update contract as every predictor, prior before learning, validated input,
save/load. Their state files embed the wrapped object pickled (base64) inside the JSON.
Unpickling runs code named by the file, so loading such a state is refused unless the caller
passes ``trusted=True`` (CLI ``--trust-model-file``); native predictors never use pickle.
river and scikit-learn are imported when a wrapper is first used, not with this module.
"""

from __future__ import annotations

import base64
import pickle
from dataclasses import replace
from typing import Any

import numpy as np

from interfpred.constants import PRIOR_SLOWDOWN, SCHEMA_VERSION
from interfpred.errors import FrozenPredictorError, InterfpredError
from interfpred.predictors.base import BasePredictor
from interfpred.predictors.inputs import as_rows, as_targets, check_flag, check_state_header, check_target

__all__ = ["FromRiver", "FromSklearn"]


class _FromPeer(BasePredictor):
    """Shared persistence of the wrappers: the wrapped estimator travels pickled in the JSON."""

    tags = replace(BasePredictor.tags, stores_pickle=True)

    def _get_state(self) -> dict[str, Any]:
        return {"pickle": base64.b64encode(pickle.dumps(self)).decode("ascii")}

    def _set_state(self, state: dict[str, Any], d: int | None) -> None:
        obj = pickle.loads(base64.b64decode(state["pickle"]))
        if type(obj) is not type(self) or obj.n_features_in_ != d:
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
        check_state_header(state, source=source)
        if not trusted:
            raise InterfpredError(
                f"{source}: holds a pickled {state.get('kind')} model, and loading a pickle runs any code the "
                "file contains; refused. Load it only if you wrote the file yourself: pass trusted=True "
                "(CLI: --trust-model-file)")
        if state.get("kind") != cls.kind:
            raise InterfpredError(f"{source}: holds a predictor of kind {state.get('kind')!r}, not {cls.kind!r}")
        obj = cls.__new__(cls)  # the whole object comes from the pickle, not from params
        try:
            obj._set_state(state["state"], state.get("n_features_in"))
        except InterfpredError as exc:
            raise InterfpredError(f"{source}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - any corruption is bad input here
            raise InterfpredError(f"{source}: cannot restore the wrapped estimator: {exc!r}") from None
        return obj


class FromRiver(_FromPeer):
    """Any river regressor as an interfpred predictor.

    Rows become dicts ``{0: x0, 1: x1, ...}``; ``update`` calls ``learn_one`` row by row on a
    clone of ``model`` (the argument itself is never trained). Without a ``model`` the wrapper
    learns river's ``preprocessing.StandardScaler() | linear_model.LinearRegression()``: the
    scaler standardises each feature online, so the default's SGD steps do not depend on the
    features' units (a plain ``LinearRegression`` diverges on features in the hundreds, such as
    MPS shares in percent or a co-runner count).

    Examples
    --------
    >>> from river import linear_model
    >>> p = FromRiver(model=linear_model.LinearRegression())
    >>> p.predict([0.5, 0.5])
    1.0
    >>> p.update([[0.5, 0.5]], [2.0])
    >>> p.n_seen_
    1
    """

    kind = "river"

    @classmethod
    def contract_params(cls) -> list[dict[str, Any]]:
        """A river ``LinearRegression`` with a constant SGD step (river is imported on use)."""
        from river import linear_model, optim

        return [{"model": linear_model.LinearRegression(optimizer=optim.SGD(0.05), intercept_lr=0.05)}]

    def __init__(self, *, model: Any = None, target: str | None = None) -> None:
        self.model = model
        self.target = check_target(target)
        self._check_params()
        self._est: Any = None
        self._d = None
        self._n = 0

    def _check_params(self) -> None:
        if self.model is not None and not (hasattr(self.model, "learn_one") and hasattr(self.model, "predict_one")):
            raise InterfpredError(f"model must be a river regressor (learn_one/predict_one), got {self.model!r}")

    def _allocate(self, d: int) -> None:
        if self.model is None:
            from river import linear_model, preprocessing

            self._est = preprocessing.StandardScaler() | linear_model.LinearRegression()
        else:
            self._est = self.model.clone()
        self._d = d
        self._n = 0

    def _learn(self, X: np.ndarray, y: np.ndarray, entities: Any = None) -> None:
        est = self._est
        for row, t in zip(X.tolist(), y.tolist()):
            est.learn_one(dict(enumerate(row)), t)
        self._n += X.shape[0]

    def _predict_rows(self, X: np.ndarray, entities: Any = None) -> np.ndarray:
        if self._n == 0:
            return np.full(X.shape[0], PRIOR_SLOWDOWN)
        est = self._est
        return np.array([float(est.predict_one(dict(enumerate(row)))) for row in X.tolist()])

    @property
    def n_seen_(self) -> int:
        """Number of observations learned."""
        return self._n


class FromSklearn(_FromPeer):
    """Any scikit-learn regressor as an interfpred predictor.

    ``fit`` fits a clone of ``estimator`` (default: ``SGDRegressor(random_state=0)``, so two fits of the same rows agree); ``update`` calls
    ``partial_fit`` when the estimator has it (``tags.learns_online`` is then true) and otherwise
    raises :class:`~interfpred.errors.FrozenPredictorError`, like :class:`~interfpred.OfflineLinear`.

    With ``standardize`` (default) the wrapper keeps a ``StandardScaler`` beside the estimator:
    ``fit`` fits it on the rows, ``update`` first extends it with ``partial_fit`` (running mean
    and variance, as river's ``StandardScaler``), and the estimator only ever sees standardised
    rows, so an SGD step does not depend on the features' units (``SGDRegressor`` on raw rows
    diverges on features in the hundreds); ``update`` then learns row by row, so that a batch
    learns exactly as its rows one at a time would. ``standardize=False`` passes rows as they are.

    Examples
    --------
    >>> from sklearn.linear_model import SGDRegressor
    >>> p = FromSklearn(estimator=SGDRegressor(random_state=0))
    >>> p.tags.learns_online
    True
    >>> p.predict([0.5])
    1.0
    """

    kind = "sklearn"

    @classmethod
    def contract_params(cls) -> list[dict[str, Any]]:
        """An ``SGDRegressor`` (online) and a ``Ridge`` (frozen); scikit-learn is imported on use."""
        from sklearn.linear_model import Ridge, SGDRegressor

        return [{"estimator": SGDRegressor(random_state=0, learning_rate="constant", eta0=0.05, shuffle=False)},
                {"estimator": Ridge(alpha=1e-3), "standardize": False}]

    def __init__(self, *, estimator: Any = None, standardize: bool = True, target: str | None = None) -> None:
        self.estimator = estimator
        self.standardize = standardize
        self.target = check_target(target)
        self._check_params()
        # online exactly when the estimator has partial_fit
        self.tags = replace(type(self).tags, learns_online=estimator is None or hasattr(estimator, "partial_fit"))
        self._est: Any = None
        self._d = None
        self._fitted = False

    def _check_params(self) -> None:
        if self.estimator is not None and not (hasattr(self.estimator, "fit") and hasattr(self.estimator, "predict")):
            raise InterfpredError(f"estimator must be a scikit-learn regressor, got {self.estimator!r}")
        check_flag(self, "standardize")

    def _allocate(self, d: int) -> None:
        from sklearn.base import clone
        from sklearn.linear_model import SGDRegressor
        from sklearn.preprocessing import StandardScaler

        self._est = SGDRegressor(random_state=0) if self.estimator is None else clone(self.estimator)
        self._scaler = StandardScaler() if self.standardize else None
        self._d = d
        self._fitted = False

    def _scaled(self, X: np.ndarray) -> np.ndarray:
        return X if self._scaler is None else self._scaler.transform(X)

    def _fit_rows(self, X: np.ndarray, y: np.ndarray, *, sample_weight: Any, entities: Any) -> None:
        if X.shape[0] == 0:
            raise InterfpredError("fit needs at least one row")
        if self._scaler is not None:
            self._scaler.fit(X)
        self._est.fit(self._scaled(X), y)
        self._fitted = True

    def _learn(self, X: np.ndarray, y: np.ndarray, entities: Any = None) -> None:
        if self.tags.learns_online and X.shape[0]:
            if self._scaler is None:
                self._est.partial_fit(X, y)
            else:  # row by row, the scaler first (as river's StandardScaler): a batch learns as its rows would
                for i in range(X.shape[0]):
                    self._scaler.partial_fit(X[i:i + 1])
                    self._est.partial_fit(self._scaler.transform(X[i:i + 1]), y[i:i + 1])
            self._fitted = True

    def update(self, X: Any, y: Any, *, entities: Any = None) -> None:
        """``partial_fit`` on the rows (or validate and learn nothing without it)."""
        if not self.tags.learns_online:
            Xa, single = as_rows(X, width=self._d)
            as_targets(y, Xa.shape[0], single)
            self._entities_arg(entities, Xa.shape[0])
            raise FrozenPredictorError(
                f"{type(self.estimator).__name__} has no partial_fit, so update() cannot learn online; refit "
                "with fit(X, y) on all the data, or wrap an estimator with partial_fit (SGDRegressor)")
        BasePredictor.update(self, X, y, entities=entities)

    def _predict_rows(self, X: np.ndarray, entities: Any = None) -> np.ndarray:
        if not self._fitted:
            return np.full(X.shape[0], PRIOR_SLOWDOWN)
        return np.asarray(self._est.predict(self._scaled(X)), dtype=np.float64).reshape(-1)
