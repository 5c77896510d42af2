"""Offline (least-squares / ridge) linear regression, frozen after ``fit``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from interfpred.errors import InterfpredError
from interfpred.predictors import _linear_buffers as K
from interfpred.predictors.base import FrozenPredictor
from interfpred.predictors.inputs import check_flag, check_positive, check_target, state_array, state_count

_FAST = K.FAST
_H = K.LINEAR_HEADER

__all__ = ["OfflineLinear"]


class OfflineLinear(FrozenPredictor):
    """Linear regression fitted once, offline (scikit-learn underneath); frozen afterwards.

    ``ridge = 0`` is ordinary least squares (``LinearRegression``), otherwise ``Ridge(alpha=ridge)``
    (the intercept is not penalised).  ``update`` raises
    :class:`~interfpred.errors.FrozenPredictorError` instead of learning: this is the static
    model of the paper, whose error grows when the workload changes.

    Parameters
    ----------
    ridge
        L2 penalty on the weights, >= 0.
    fit_intercept
        Learn an intercept.

    Examples
    --------
    >>> import numpy as np
    >>> lin = OfflineLinear()
    >>> lin.predict([0.5])                 # unfitted: the prior
    1.0
    >>> _ = lin.fit([[0.0], [1.0], [2.0]], [1.0, 3.0, 5.0])
    >>> lin.predict([[3.0]])
    array([7.])
    >>> lin.update([[3.0]], [0.0])         # frozen: refused, never silently ignored
    Traceback (most recent call last):
    ...
    interfpred.errors.FrozenPredictorError: OfflineLinear is frozen: update() cannot learn online; refit with fit(X, y) on all the data, or use an online predictor (rls, online_sgd)
    >>> lin.predict([3.0])
    7.0
    """

    kind = "offline_linear"
    #: ``fit`` takes ``sample_weight`` (weighted least squares).
    tags = replace(FrozenPredictor.tags, is_linear=True, supports_weights=True, mergeable=True)
    _contract_params = [{}, {"ridge": 1.0}, {"fit_intercept": False}]

    def __init__(self, *, ridge: float = 0.0, fit_intercept: bool = True, target: str | None = None) -> None:
        self.ridge = ridge
        self.fit_intercept = fit_intercept
        self.target = check_target(target)
        self._check_params()
        self._coef: np.ndarray | None = None
        self._intercept = 0.0
        self._n = 0
        self._d = None
        self._buf: np.ndarray | None = None  # LINEAR_HEADER slots, coef, intercept: the compiled single-row path

    def _check_params(self) -> None:
        check_positive("ridge", self.ridge, allow_zero=True)
        check_flag(self, "fit_intercept")

    def _allocate(self, d: int) -> None:
        self._check_params()
        self._coef = np.zeros(d)
        self._intercept = 0.0
        self._n = 0
        self._d = d
        self._pack()

    def _fit_rows(self, X: np.ndarray, y: np.ndarray, *, sample_weight: np.ndarray | None,
                  entities: Any) -> None:
        if X.shape[0] == 0:
            raise InterfpredError("fit needs at least one row")
        from sklearn.linear_model import LinearRegression, Ridge  # imported on use: sklearn is slow to import

        if self.ridge == 0:
            est = LinearRegression(fit_intercept=bool(self.fit_intercept))
        else:
            est = Ridge(alpha=float(self.ridge), fit_intercept=bool(self.fit_intercept))
        est.fit(X, y, sample_weight=sample_weight)
        self._coef = np.ascontiguousarray(est.coef_, dtype=np.float64).reshape(-1)
        self._intercept = float(est.intercept_) if self.fit_intercept else 0.0
        self._n = X.shape[0]
        self._pack()

    def _pack(self) -> None:
        assert self._coef is not None
        d = self._coef.shape[0]
        buf = np.zeros(_H + d + 1)
        buf[K.N_SEEN], buf[K.N_WEIGHTS], buf[K.N_FEATURES] = self._n, d + 1, d
        buf[_H:_H + d] = self._coef
        buf[_H + d] = self._intercept
        self._bind_fast_paths()
        self._buf = buf

    @classmethod
    def _fast_paths(cls) -> tuple[Any, Any]:
        return _FAST.offline_predict_one, None

    def _predict_rows(self, X: np.ndarray, entities: Any = None) -> np.ndarray:
        return X @ self._coef + self._intercept

    @property
    def coef_(self) -> np.ndarray:
        """Fitted weights (copy)."""
        if self._coef is None:
            raise AttributeError("coef_ is not available before fit")
        return self._coef.copy()

    @property
    def intercept_(self) -> float:
        """Fitted intercept."""
        if self._coef is None:
            raise AttributeError("intercept_ is not available before fit")
        return self._intercept

    @property
    def n_seen_(self) -> int:
        """Rows the last ``fit`` learned from (0 before fit)."""
        return self._n

    def _get_state(self) -> dict[str, Any]:
        assert self._coef is not None  # only called on a fitted predictor
        return {"coef": self._coef.tolist(), "intercept": self._intercept, "n_seen": self._n}

    def _set_state(self, state: dict[str, Any], d: int) -> None:
        coef = state_array(state, "coef", d)
        intercept = float(state["intercept"])
        if not np.isfinite(intercept):
            raise InterfpredError(f"intercept {intercept} must be finite")
        n = state_count(state, "n_seen")
        self._coef, self._intercept, self._n, self._d = coef, intercept, n, d
        self._pack()
