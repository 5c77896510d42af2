"""Online linear regression by stochastic gradient descent on the squared error (numba kernel).

Schedules (``schedule=``), and why each is offered:

``"nlms"`` (default)
    Normalised LMS: ``w += learning_rate * e * x / (eps + |x|^2)`` with ``e = y - w.x``.  The
    step is invariant to the scale of the features, and stable for any ``0 < learning_rate < 2``,
    so one default works for throughputs in [0, 1] and for raw counts alike; this is the
    workhorse of adaptive filtering and needs no tuning per data set.
``"constant"``
    ``w -= learning_rate * 2 (w.x - y) x``: plain SGD on ``(y - w.x)^2``, the same update as
    river's ``LinearRegression(optimizer=SGD(lr), intercept_lr=lr)`` (a reference test checks
    it).  Tracks drift at a fixed rate; needs a rate matched to the feature scale.
``"invscaling"``
    ``learning_rate / t**power_t`` (scikit-learn's SGDRegressor default): converges on a
    stationary stream, but adapts ever more slowly to a changed workload.
``"adagrad"``
    Per-weight rates ``learning_rate / sqrt(sum of squared gradients)``: robust to features of
    very different scales and sparsity (idle co-runner features are often zero).

``standardize=True`` rescales each feature online by its running mean and standard deviation
(Welford), updated before each step, as river's ``StandardScaler | LinearRegression``
pipeline does.  The intercept starts at the prior slowdown 1.0.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from interfpred.constants import (
    PRIOR_SLOWDOWN,
    SGD_EPS,
    SGD_LEARNING_RATE,
    SGD_MAX_LEARNING_RATE,
    SGD_POWER_T,
    SGD_SCHEDULE,
    SGD_STANDARDIZE,
)
from interfpred.errors import InterfpredError
from interfpred.predictors import _sgd_steps as K
from interfpred.predictors.flat_state import FlatStatePredictor
from interfpred.predictors.inputs import check_flag, check_positive, check_target

__all__ = ["OnlineSGD", "SCHEDULES"]

SCHEDULES = {
    "constant": K.SCHED_CONSTANT,
    "invscaling": K.SCHED_INVSCALING,
    "nlms": K.SCHED_NLMS,
    "adagrad": K.SCHED_ADAGRAD,
}
_H = K.SGD_HEADER
_FAST = K.FAST


class OnlineSGD(FlatStatePredictor):
    """Online least-squares regression by SGD (see the module docstring for the schedules).

    Parameters
    ----------
    learning_rate
        Step size (for ``"nlms"``: the normalised step, stable in (0, 2)).
    schedule
        ``"nlms"``, ``"constant"``, ``"invscaling"`` or ``"adagrad"``.
    standardize
        Standardise features online by their running mean and standard deviation.
    fit_intercept
        Learn an intercept (starting at the prior slowdown 1.0).
    power_t
        Exponent of ``"invscaling"``.

    References
    ----------
    ``"invscaling"`` is the inverse-scaling schedule of scikit-learn's ``SGDRegressor``,
    ``eta = eta0 / t**power_t`` (here ``eta0`` is ``learning_rate``): F. Pedregosa et al.,
    "Scikit-learn: Machine Learning in Python", JMLR 12 (2011), 2825-2830, and its
    ``SGDRegressor`` documentation. ``"adagrad"`` is the diagonal AdaGrad of J. Duchi, E. Hazan
    and Y. Singer, "Adaptive Subgradient Methods for Online Learning and Stochastic
    Optimization", JMLR 12 (2011), 2121-2159. ``"nlms"`` is the normalised LMS filter of
    adaptive signal processing: S. Haykin, *Adaptive Filter Theory*, Prentice Hall.

    Examples
    --------
    >>> import numpy as np
    >>> sgd = OnlineSGD()
    >>> sgd.predict([0.1, 0.2])
    1.0
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((3000, 2))
    >>> sgd.update(X, 1.0 + X[:, 0] + 2 * X[:, 1])
    >>> round(sgd.predict([0.5, 0.5]), 2)
    2.5
    """

    kind = "online_sgd"
    tags = replace(FlatStatePredictor.tags, is_linear=True)
    _learn_rows = K.sgd_update_many
    _contract_params = [
        {},
        {"schedule": "constant", "learning_rate": 0.05},
        {"schedule": "adagrad", "learning_rate": 0.5, "standardize": True},
        {"schedule": "invscaling", "learning_rate": 0.1, "fit_intercept": False, "standardize": False},
    ]

    def __init__(
        self,
        *,
        learning_rate: float = SGD_LEARNING_RATE,
        schedule: str = SGD_SCHEDULE,
        standardize: bool = SGD_STANDARDIZE,
        fit_intercept: bool = True,
        power_t: float = SGD_POWER_T,
        target: str | None = None,
    ) -> None:
        self.learning_rate = learning_rate
        self.schedule = schedule
        self.standardize = standardize
        self.fit_intercept = fit_intercept
        self.power_t = power_t
        self.target = check_target(target)
        self._check_params()
        self._buf = None
        self._d = None

    def _check_params(self) -> None:
        if check_positive("learning_rate", self.learning_rate) > SGD_MAX_LEARNING_RATE:
            raise InterfpredError(f"learning_rate must be at most {SGD_MAX_LEARNING_RATE:g}, got {self.learning_rate!r}")
        check_positive("power_t", self.power_t, allow_zero=True)
        if self.schedule not in SCHEDULES:
            raise InterfpredError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        check_flag(self, "standardize", "fit_intercept")

    def _layout(self, d: int) -> tuple[int, int]:
        m = d + int(bool(self.fit_intercept))
        return m, _H + 2 * m + 2 * d

    def _header(self, buf: np.ndarray) -> None:
        buf[K.SGD_RATE] = float(self.learning_rate)
        buf[K.SGD_SCHEDULE] = SCHEDULES[self.schedule]
        buf[K.SGD_POWER_T] = float(self.power_t)
        buf[K.SGD_STANDARDIZE] = 1.0 if self.standardize else 0.0
        buf[K.SGD_EPSILON] = SGD_EPS

    def _allocate(self, d: int) -> None:
        self._check_params()
        m, size = self._layout(d)
        buf = np.zeros(size)
        buf[K.N_WEIGHTS], buf[K.N_FEATURES] = m, d
        if self.fit_intercept:
            buf[_H + d] = PRIOR_SLOWDOWN
        self._adopt(buf, d)

    def _predict_rows(self, X: np.ndarray, entities: Any = None) -> np.ndarray:
        out = np.empty(X.shape[0])
        K.sgd_predict_many(self._buf, X, out)
        return out

    # -- the compiled single-row paths (BasePredictor.predict/update dispatch to them) -----------
    @classmethod
    def _fast_paths(cls) -> tuple[Any, Any]:
        return _FAST.sgd_predict_one, _FAST.sgd_update_one

    @property
    def coef_(self) -> np.ndarray:
        """Weights in the original feature units (copy)."""
        if self._buf is None:
            raise AttributeError("coef_ is not available before fit/update")
        w, _ = self._unscaled()
        return w

    @property
    def intercept_(self) -> float:
        """Intercept in the original feature units (0.0 without ``fit_intercept``)."""
        if self._buf is None:
            raise AttributeError("intercept_ is not available before fit/update")
        return self._unscaled()[1]

    def _unscaled(self) -> tuple[np.ndarray, float]:
        buf, d = self._buf, self._d
        assert buf is not None and d is not None  # callers check that the predictor is fitted
        m = int(buf[K.N_WEIGHTS])
        wo, _, mo, so = K.sgd_offsets(m, d)
        w = buf[wo:wo + d].copy()
        b = float(buf[wo + d]) if m > d else 0.0
        n = buf[K.N_SEEN]
        if self.standardize and n > 0:
            mean = buf[mo:mo + d]
            var = buf[so:so + d] / n
            sd = np.sqrt(var)
            scale = np.divide(1.0, sd, out=np.zeros(d), where=sd > 0)
            w = w * scale
            b -= float(np.dot(w, mean))
        return w, b

    def _set_state(self, state: dict[str, Any], d: int) -> None:
        buf, m = self._read_buffer(state, d)
        _, go, mo, so = K.sgd_offsets(m, d)
        if (buf[go:mo] < 0).any() or (buf[so:] < 0).any():
            raise InterfpredError("state buffer has negative sums of squares")
        self._adopt(buf, d)
