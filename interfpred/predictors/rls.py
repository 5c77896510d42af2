"""Recursive least squares with exponential forgetting and stabilised (anti-windup) forgetting.

The estimate after t observations minimises ``sum_i f**(t-i) (y_i - w.x_i)**2 + (w - w0)' Q_t (w - w0)``
with ``f`` the ``forgetting``, ``w0`` the prior (zero weights, intercept at the prior slowdown
1.0) and ``Q_t`` the prior's information. Plain RLS (``stabilize=False``) forgets the prior like
the data, so the covariance of a feature that idles at zero grows as ``f**-t`` ("windup");
stabilised forgetting (the default) puts back what forgetting removed from the prior as one
cyclic rank-one pseudo-observation per step (Kulhavy's stabilised forgetting), which keeps
``P <= delta f**-(m-1) I`` for ever. The derivation, the bound and the soak test are in
docs/predictors.md ("RLS windup and the remedy"); the exact closed form of both variants is
tests/naive.py's ``naive_ew_ridge``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from interfpred.constants import PRIOR_SLOWDOWN, RLS_DELTA, RLS_FORGETTING, RLS_MAX_DELTA
from interfpred.errors import InterfpredError
from interfpred.predictors import _linear_buffers as K
from interfpred.predictors.flat_state import FlatStatePredictor
from interfpred.predictors.inputs import check_flag, check_positive, check_target

__all__ = ["RLS"]

_FAST = K.FAST
_H = K.RLS_HEADER


class RLS(FlatStatePredictor):
    """Recursive least squares with exponential forgetting (numba kernel).

    Parameters
    ----------
    forgetting
        Weight decay per observation, in (0, 1]; 1 is ordinary (growing-window) least squares.
        The effective memory is about ``1 / (1 - forgetting)`` observations.
    delta
        Initial covariance scale, ``P0 = delta * I``; large values mean a weak prior.
    fit_intercept
        Append a constant feature; its weight starts at the prior slowdown 1.0.
    stabilize
        Stabilised forgetting (see the module docstring and docs/predictors.md): keeps the covariance bounded by
        about ``delta * I`` when features sit at zero for long stretches.  ``False`` gives plain RLS
        (exactly padasip's ``FilterRLS``), which winds up on such streams.

    ``predict(X, return_std=True)`` also returns ``sqrt(s2 * (1 + x~^T P x~))`` per row, with ``s2`` an
    exponentially weighted estimate of the noise variance and ``P`` the covariance (``PRIOR_STD`` when
    fresh).

    Examples
    --------
    >>> import numpy as np
    >>> rls = RLS(forgetting=0.99)
    >>> rls.predict([0.2, 0.3])            # fresh: the prior
    1.0
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((200, 2))
    >>> rls.update(X, 1.0 + 2.0 * X[:, 0] - X[:, 1])
    >>> round(rls.predict([0.5, 0.5]), 3)
    1.5
    >>> mean, std = rls.predict(np.array([[0.5, 0.5]]), return_std=True)
    """

    kind = "rls"
    tags = replace(FlatStatePredictor.tags, is_linear=True, predicts_std=True, mergeable=True)
    _learn_rows = K.rls_update_many
    _contract_params = [{}, {"forgetting": 0.9, "delta": 10.0}, {"fit_intercept": False, "forgetting": 1.0}]

    def __init__(
        self,
        *,
        forgetting: float = RLS_FORGETTING,
        delta: float = RLS_DELTA,
        fit_intercept: bool = True,
        stabilize: bool = True,
        target: str | None = None,
    ) -> None:
        self.forgetting = forgetting
        self.delta = delta
        self.fit_intercept = fit_intercept
        self.stabilize = stabilize
        self.target = check_target(target)
        self._check_params()
        self._buf = None
        self._d = None

    def _check_params(self) -> None:
        f = check_positive("forgetting", self.forgetting)
        if f > 1.0:
            raise InterfpredError(f"forgetting must be in (0, 1], got {self.forgetting!r}")
        if check_positive("delta", self.delta) > RLS_MAX_DELTA:
            raise InterfpredError(f"delta must be at most {RLS_MAX_DELTA:g} (a larger prior covariance overflows "
                                  f"in the first update), got {self.delta!r}")
        check_flag(self, "fit_intercept", "stabilize")

    def _layout(self, d: int) -> tuple[int, int]:
        m = d + int(bool(self.fit_intercept))
        return m, _H + 3 * m + m * m

    def _header(self, buf: np.ndarray) -> None:
        f = float(self.forgetting)
        buf[K.RLS_FORGETTING] = f
        buf[K.RLS_STAB] = (1.0 - f) / float(self.delta) if self.stabilize else 0.0
        buf[K.RLS_INV_DELTA] = 1.0 / float(self.delta)

    def _allocate(self, d: int) -> None:
        self._check_params()
        m, size = self._layout(d)
        buf = np.zeros(size)
        buf[K.N_WEIGHTS], buf[K.N_FEATURES] = m, d
        wo, w0o, po, _ = K.rls_offsets(_H, m)
        if self.fit_intercept:
            buf[wo + d] = PRIOR_SLOWDOWN
            buf[w0o + d] = PRIOR_SLOWDOWN
        buf[po:po + m * m].reshape(m, m)[np.diag_indices(m)] = float(self.delta)
        self._adopt(buf, d)

    def _predict_rows(self, X: np.ndarray, entities: Any = None) -> np.ndarray:
        out = np.empty(X.shape[0])
        K.linear_predict_many(self._buf, X, _H, out)
        return out

    # -- the compiled single-row paths (BasePredictor.predict/update dispatch to them) -----------
    @classmethod
    def _fast_paths(cls) -> tuple[Any, Any]:
        return _FAST.rls_predict_one, _FAST.rls_update_one

    def _std_one(self, x: np.ndarray) -> float:
        buf = self._buf
        assert buf is not None    # only called on a fitted predictor
        q = np.empty(1)           # the batch kernel on a (1, d) view
        K.rls_quad_many(buf, x.reshape(1, -1), q)
        return math.sqrt(buf[K.RLS_NOISE_VAR] * (1.0 + q[0]))

    def _std_rows(self, X: np.ndarray) -> np.ndarray:
        """``sqrt(s2 * (1 + x~^T P x~))``, with ``s2`` an exponentially weighted estimate of the noise
        variance and ``P`` the covariance (``predict(X, return_std=True)``)."""
        buf = self._buf
        assert buf is not None
        q = np.empty(X.shape[0])
        K.rls_quad_many(buf, X, q)
        return np.sqrt(buf[K.RLS_NOISE_VAR] * (1.0 + q))

    # -- fleet learning -------------------------------------------------------------------
    def _prior_information(self, n: int) -> np.ndarray:
        """Diagonal of the information the prior (and, when stabilised, the cyclic pseudo-observations)
        holds after ``n`` updates: ``f**n / delta`` plus ``rho f**(n - i)`` on coordinate ``(i - 1) mod m``."""
        m = self._m()
        f = float(self.forgetting)
        diag = np.full(m, f ** n / float(self.delta))
        c = (1.0 - f) / float(self.delta) if self.stabilize else 0.0
        if c > 0.0 and n > 0:
            ages = np.arange(n - 1, -1, -1, dtype=np.float64)   # step i = 1..n has age n - i
            np.add.at(diag, np.arange(n) % m, m * c * f ** ages)
        return diag

    def merge(self, other: RLS) -> RLS:
        """Absorb what ``other`` learned (another GPU of the same type), in information form; returns self.

        With ``R = P^-1`` the information and ``R w`` its weighted targets, each model holds its
        prior's part plus its data's part; the merged model keeps this model's prior and adds
        ``other``'s data part: ``R = R_self + R_other - Pi_other`` and
        ``R w = R_self w_self + R_other w_other - Pi_other w0``, where ``Pi_other`` is the
        (diagonal) information of ``other``'s prior after its ``n_seen_`` updates.

        **Exact** with ``forgetting=1``: the merged weights equal one RLS fed both streams (in
        any order; to rounding). **With forgetting < 1** each observation keeps the weight it has in
        its own stream, ``forgetting ** (later rows on its own GPU)``: the merge is exact for
        that per-device ageing, which is not what one RLS fed the interleaved stream would hold
        (that depends on the interleaving, which neither side knows). ``n_seen_`` becomes the
        sum, so the prior part of a model that was itself merged is then approximated by that of
        a model that saw as many rows (negligible once ``n_seen_`` is many times
        ``1 / (1 - forgetting)``). The noise variance is the count-weighted mean.

        Raises
        ------
        InterfpredError
            ``other`` is not an RLS with the same hyperparameters and width; nothing changes.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.random((100, 2)); y = 1.0 + X @ [2.0, -1.0] + 0.01 * rng.normal(size=100)
        >>> a = RLS(forgetting=1.0); a.update(X[:60], y[:60])
        >>> b = RLS(forgetting=1.0); b.update(X[60:], y[60:])
        >>> both = RLS(forgetting=1.0); both.update(X, y)
        >>> bool(np.allclose(a.merge(b).coef_, both.coef_, rtol=1e-9, atol=1e-12)), a.n_seen_
        (True, 100)
        """
        if not isinstance(other, RLS):
            raise InterfpredError(f"merge needs an RLS, got {type(other).__name__}")
        mine, theirs = self.get_params(), other.get_params()
        if mine != theirs:
            raise InterfpredError(f"merge needs the same hyperparameters: {mine} vs {theirs}")
        obuf = other._buf   # the same class: its layout is this one's
        d_other = other.n_features_in_
        if obuf is None or d_other is None or other.n_seen_ == 0:
            return self
        if self._buf is None:
            self._allocate(d_other)
        if self._d != d_other:
            raise InterfpredError(f"merge needs the same width: {self._d} features vs {d_other}")
        m = self._m()
        wo, w0o, po, _ = K.rls_offsets(_H, m)
        buf = self._buf
        assert buf is not None
        w0 = buf[w0o:w0o + m]
        Ra = np.linalg.inv(buf[po:po + m * m].reshape(m, m))
        Rb = np.linalg.inv(obuf[po:po + m * m].reshape(m, m))
        pib = self._prior_information(other.n_seen_)
        R = Ra + Rb
        R[np.diag_indices(m)] -= pib
        eta = Ra @ buf[wo:wo + m] + Rb @ obuf[wo:wo + m] - pib * w0
        R = 0.5 * (R + R.T)
        try:
            P = np.linalg.inv(R)
        except np.linalg.LinAlgError:
            raise InterfpredError("merge refused: the merged information matrix is singular") from None
        P = 0.5 * (P + P.T)
        w = P @ eta
        if not (np.all(np.isfinite(P)) and np.all(np.isfinite(w)) and np.all(np.diag(P) > 0.0)):
            raise InterfpredError("merge refused: the merged covariance is not positive definite")
        na, nb = self.n_seen_, other.n_seen_
        buf[wo:wo + m] = w
        buf[po:po + m * m] = P.reshape(-1)
        noise = K.RLS_NOISE_VAR
        buf[noise] = (na * buf[noise] + nb * obuf[noise]) / (na + nb)
        buf[K.N_SEEN] = na + nb
        if self.stabilize and float(self.forgetting) < 1.0:
            buf[K.RLS_CYCLE] = float((na + nb) % m)   # the cycle of a model that saw as many rows
        return self

    # -- read-only views of the state -------------------------------------------------------
    def _m(self) -> int:
        assert self._buf is not None
        return int(self._buf[K.N_WEIGHTS])

    @property
    def compiled_state(self) -> np.ndarray | None:
        """The flat float64 state the compiled steps read and write in place (None before fit/update):
        not a copy. For a predictor that runs this RLS inside its own compiled loop (EntityRLS's
        backoff); anything else reads ``coef_``, ``intercept_`` and ``covariance_``.

        Examples
        --------
        >>> RLS().compiled_state is None, RLS().fit([[0.0], [1.0]], [1.0, 2.0]).compiled_state.dtype
        (True, dtype('float64'))
        """
        return self._buf

    @property
    def coef_(self) -> np.ndarray:
        """Feature weights (copy)."""
        if self._buf is None or self._d is None:
            raise AttributeError("coef_ is not available before fit/update")
        return self._buf[_H:_H + self._d].copy()

    @property
    def intercept_(self) -> float:
        """Intercept (0.0 when ``fit_intercept`` is false)."""
        if self._buf is None or self._d is None:
            raise AttributeError("intercept_ is not available before fit/update")
        return float(self._buf[_H + self._d]) if self.fit_intercept else 0.0

    @property
    def covariance_(self) -> np.ndarray:
        """The covariance ``P`` (m, m), m = d + fit_intercept: symmetric positive definite (copy)."""
        if self._buf is None:
            raise AttributeError("covariance_ is not available before fit/update")
        m = self._m()
        _, _, po, _ = K.rls_offsets(_H, m)
        return self._buf[po:po + m * m].reshape(m, m).copy()

    @property
    def noise_var_(self) -> float:
        """The exponentially weighted noise variance ``s2`` of ``predict(X, return_std=True)``."""
        if self._buf is None:
            raise AttributeError("noise_var_ is not available before fit/update")
        return float(self._buf[K.RLS_NOISE_VAR])

    @property
    def information_(self) -> np.ndarray:
        """The information matrix ``R = P^-1``."""
        return np.linalg.inv(self.covariance_)

    # -- persistence ----------------------------------------------------------------------
    def _set_state(self, state: dict[str, Any], d: int) -> None:
        buf, m = self._read_buffer(state, d)
        cycle, noise = buf[K.RLS_CYCLE], buf[K.RLS_NOISE_VAR]
        if not (0 <= cycle < m and float(cycle).is_integer()):
            raise InterfpredError(f"state buffer has a bad cycle position {cycle}")
        if not noise >= 0:
            raise InterfpredError(f"state buffer has a negative noise variance {noise}")
        _, _, po, _ = K.rls_offsets(_H, m)
        P = buf[po:po + m * m].reshape(m, m)
        if not (np.diag(P) > 0).all() or not np.array_equal(P, P.T):
            raise InterfpredError("state covariance is not symmetric with a positive diagonal")
        self._adopt(buf, d)  # hyperparameters in the header follow the file's params
