"""KernelBlocking: interference under spatial sharing as SM blocking, per co-runner, learned online.

When batches share a GPU's SMs, a batch of many short kernels waits, kernel by kernel, for the
SMs a co-runner's long kernel holds. Each co-runner adds its own waiting, so a row whose own
entity is ``m`` and whose co-runners ``c`` ran beside it with weights ``w_c`` (the mean number
running beside it) is predicted as

    slowdown = 1 + sum_c w_c exp(eta_c),
    eta_c = b + <w, x> + k * rate[m] + h * hold[c] + s[m] + a[c] + p[m, c]

where ``rate[m]`` is the log of ``m``'s kernels per millisecond of solo time and ``hold[c]`` the
log of ``c``'s longest kernel (the kernel terms of
:mod:`interfpred.features.kernel_terms`, read from ``entities.covariates``); with ``k = h = 1``
the excess is the first-order physics ``kernels x hold / solo``. ``x`` are the extractor's
features, ``s[m]`` a per-model sensitivity, ``a[c]`` a per-model aggressiveness and ``p[m, c]``
a residual of the pair (``m`` beside ``c``) for the pairs learned from. Everything
is learned jointly in log slowdown under Gaussian priors (``k`` and ``h`` around 1, the rest
around 0; a model's terms vary as much as those of the models learned from, at most ``entity_var``): ``fit`` finds the posterior mode by damped Gauss-Newton, ``update`` takes one
extended Kalman step per row (the model linearised at the current estimate), with exponential
``forgetting`` of old evidence. A model never seen is predicted from its kernel terms alone
(cold start); one without a profile from the mean kernel terms of those known. Rows given
without ``entities`` are read as beside one co-runner of those mean terms, named by none (the
features alone then speak).

The sum over co-runners is what makes three or four co-runners add up as they do on a real GPU;
a model that adds the co-runners' terms in log space (multiplying their slowdowns) mispredicts
exactly those runs.

Examples
--------
>>> import numpy as np
>>> from interfpred.data.entities import Entities
>>> ent = Entities.from_lists(["a", "b", "a", "c"], [{"b": 1.0}, {"a": 1.0}, {"c": 1.0}, {"a": 1.0}])
>>> p = KernelBlocking(target="slowdown").fit(np.zeros((4, 1)), [9.0, 1.2, 3.0, 1.1], entities=ent)
>>> round(float(p.predict(np.zeros(1), entities=ent.take([0]))), 2) > 5.0   # a suffers beside b
True
>>> p.n_entities_, p.n_seen_
(3, 4)
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from interfpred.constants import (
    BLOCKING_COEF_VAR,
    BLOCKING_ENTITY_VAR,
    BLOCKING_FIT_ITERATIONS,
    BLOCKING_INTERCEPT_VAR,
    BLOCKING_MAX_ENTITIES,
    BLOCKING_MAX_PAIRS,
    BLOCKING_MIN_ENTITY_VAR,
    BLOCKING_NOISE_VAR,
    BLOCKING_PAIR_VAR,
    BLOCKING_UNDER_WEIGHT,
    ENTITY_FORGETTING,
    PREDICTED_RATE_MIN,
)
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.predictors.base import BasePredictor
from interfpred.predictors.inputs import check_flag, check_positive, check_target

__all__ = ["BlockingTerms", "KernelBlocking"]


class BlockingTerms(NamedTuple):
    """:meth:`KernelBlocking.blocking_terms`: the feature weights and intercept of each exponent, the
    exponentials of the pairs' other terms (k, k), whether the predictor predicts rates, and the cap
    of each exponent."""

    weights: np.ndarray
    intercept: float
    pair: np.ndarray
    rates: bool
    cap: float

#: Kernel terms per entity (log kernel rate of the batch, log longest kernel as a co-runner).
_NCOV = 2
#: The largest exponent taken (slowdowns beyond the predicted clamp gain nothing).
_ETA_MAX = math.log(1.0 / PREDICTED_RATE_MIN) + 1.0


class KernelBlocking(BasePredictor):
    """Slowdown as the sum of each co-runner's SM blocking, with per-model terms (module docstring).

    Parameters
    ----------
    noise_var
        Variance of an observation's log slowdown around the model.
    entity_var
        Prior variance of each model's sensitivity and aggressiveness (log scale); once fitted, a
        model without rows takes the spread of the learned terms instead, if smaller.
    pair_var
        Prior variance of each pair's residual term (log scale).
    coef_var
        Prior variance of the feature weights and of the two kernel-term coefficients.
    forgetting
        Exponential forgetting of old evidence per learned row, in (0, 1] (1: none).
    under_weight
        How much more an under-prediction weighs than an over-prediction of the same size (in log
        slowdown), in ``fit`` and in each ``update``: a scheduler that trusts an under-prediction
        admits a batch that then misses its SLO, so the model learns an expectile above the
        median. 1 is plain least squares.
    predict_mean
        Predict the expected slowdown ``exp(mean + variance / 2)`` of the log-normal whose
        variance is the predictive variance (the parameters' uncertainty on this row plus
        ``noise_var``) instead of ``exp(mean)``. Larger where the model knows less; off by default
        (on real H200 runs it over-predicts models never seen more than ``under_weight`` does).
    target
        ``"slowdown"`` or ``"rate"``: what the rows' targets are (the model declares it).
    """

    kind = "kernel_blocking"
    tags = replace(BasePredictor.tags, uses_entities=True, entity_terms=True, entity_covariates=True,
                   entity_key="model_batch", own_map="corunners", blocking_terms=True,
                   target_free=True)
    _contract_params = [{}, {"forgetting": 0.99, "entity_var": 0.5, "under_weight": 1.0}]

    def __init__(self, *, noise_var: float = BLOCKING_NOISE_VAR, entity_var: float = BLOCKING_ENTITY_VAR,
                 pair_var: float = BLOCKING_PAIR_VAR, coef_var: float = BLOCKING_COEF_VAR,
                 forgetting: float = ENTITY_FORGETTING, under_weight: float = BLOCKING_UNDER_WEIGHT,
                 predict_mean: bool = False, target: str | None = None) -> None:
        self.noise_var = noise_var
        self.entity_var = entity_var
        self.pair_var = pair_var
        self.coef_var = coef_var
        self.forgetting = forgetting
        self.under_weight = under_weight
        self.predict_mean = predict_mean
        self.target = check_target(target)
        self._check_params()
        self._d = None

    def _check_params(self) -> None:
        check_positive("noise_var", self.noise_var)
        check_positive("entity_var", self.entity_var)
        check_positive("pair_var", self.pair_var)
        check_positive("coef_var", self.coef_var)
        check_flag(self, "predict_mean")
        if check_positive("under_weight", self.under_weight) < 1.0:
            raise InterfpredError(f"under_weight must be >= 1, got {self.under_weight!r}")
        f = check_positive("forgetting", self.forgetting)
        if f > 1.0:
            raise InterfpredError(f"forgetting must be in (0, 1], got {self.forgetting!r}")

    # -- state ---------------------------------------------------------------------------------
    def _allocate(self, d: int) -> None:
        self._d = d
        self._names: list[str] = []
        self._index: dict[str, int] = {}
        # the per-model and per-pair terms after the global ones, in the order they were added:
        # ("s", model), ("a", model), ("p", model, co-runner) -> position in theta
        self._keys: list[tuple[str, ...]] = []
        self._pos: dict[tuple[str, ...], int] = {}
        self._cov = np.zeros((0, _NCOV))
        self._center = np.zeros(_NCOV)
        self._new_var = float(self.entity_var)
        self._lookup_memo: tuple[Any, ...] | None = None
        self._terms_memo: tuple[Any, ...] | None = None
        # what the targets learned are (rates or slowdowns), fixed with the state: declaring a target
        # later (with_target) labels the predictions, it does not change them
        self._rates = self.target == "rate"
        g = self._n_global
        self._theta = self._prior_mean(g)
        self._P = np.diag(self._prior_var(g))
        self._n = 0

    @property
    def _n_global(self) -> int:
        assert self._d is not None
        return 1 + self._d + _NCOV

    def _prior_mean(self, g: int) -> np.ndarray:
        m = np.zeros(g)
        m[g - _NCOV:] = 1.0          # the first-order physics: kernels x hold / solo
        return m

    def _prior_var(self, g: int) -> np.ndarray:
        v = np.full(g, float(self.coef_var))
        v[0] = BLOCKING_INTERCEPT_VAR
        return v

    @property
    def n_seen_(self) -> int:
        """Rows learned."""
        if self._d is None:
            raise AttributeError("n_seen_: not fitted")
        return self._n

    @property
    def n_entities_(self) -> int:
        """Models (entities) with their own terms."""
        if self._d is None:
            raise AttributeError("n_entities_: not fitted")
        return len(self._names)

    @property
    def coef_(self) -> np.ndarray:
        """The feature weights, then the coefficients of the kernel rate and of the kernel hold."""
        if self._d is None:
            raise AttributeError("coef_: not fitted")
        return self._theta[1:self._n_global].copy()

    @property
    def intercept_(self) -> float:
        """``b``: the log excess slowdown per co-runner at zero features and kernel terms."""
        if self._d is None:
            raise AttributeError("intercept_: not fitted")
        return float(self._theta[0])

    def entity_terms(self) -> dict[str, tuple[float, float]]:
        """``{name: (sensitivity, aggressiveness)}`` learned so far (log scale).

        Examples
        --------
        >>> from interfpred.data.entities import Entities
        >>> p = KernelBlocking().fit(np.zeros((1, 1)), [2.0], entities=Entities.from_lists(["a"], [{"b": 1.0}]))
        >>> sorted(p.entity_terms())
        ['a', 'b']
        """
        return {n: (float(self._theta[self._pos[("s", n)]]), float(self._theta[self._pos[("a", n)]]))
                for n in self._names}

    @property
    def n_pairs_(self) -> int:
        """Pairs (model beside co-runner) with a residual term of their own."""
        if self._d is None:
            raise AttributeError("n_pairs_: not fitted")
        return sum(1 for k in self._keys if k[0] == "p")

    def _add_term(self, key: tuple[str, ...], var: float) -> None:
        n = self._theta.size
        self._pos[key] = n
        self._keys.append(key)
        self._theta = np.concatenate([self._theta, np.zeros(1)])
        P = np.zeros((n + 1, n + 1))
        P[:n, :n] = self._P
        P[n, n] = var
        self._P = P

    def _add_pairs(self, entities: Entities) -> None:
        """A residual term for every (model, co-runner) pair of the rows learned from (up to the cap)."""
        names = entities.names
        for i in range(len(entities)):
            own = names[int(entities.own[i])]
            for j in range(int(entities.indptr[i]), int(entities.indptr[i + 1])):
                key = ("p", own, names[int(entities.co[j])])
                if entities.weight[j] > 0.0 and key not in self._pos and self.n_pairs_ < BLOCKING_MAX_PAIRS:
                    self._add_term(key, float(self.pair_var))

    def _add_names(self, entities: Entities) -> None:
        """Give every name of ``entities`` its terms (prior), and remember the covariates it brings."""
        cov = entities.covariates
        self._cov = self._cov.copy()      # a new array whenever it may change (predictions memoise on it)
        for k, name in enumerate(entities.names):
            j = self._index.get(name)
            if j is None:
                if len(self._names) >= BLOCKING_MAX_ENTITIES:
                    continue        # beyond the cap a model is served by its kernel terms alone
                j = self._index[name] = len(self._names)
                self._names.append(name)
                self._cov = np.vstack([self._cov, np.full((1, _NCOV), np.nan)])
                self._add_term(("s", name), self._new_var)
                self._add_term(("a", name), self._new_var)
            if cov is not None and cov.shape[1] >= _NCOV and np.isfinite(cov[k, :_NCOV]).all():
                self._cov[j] = cov[k, :_NCOV]

    def _covariates(self, names: tuple[str, ...], cov: np.ndarray | None) -> np.ndarray:
        """(len(names), 2) kernel terms of ``names``: those given (``cov``, one row per name), else remembered,
        else the mean of the known ones (0 when none is known)."""
        known = self._cov[np.isfinite(self._cov).all(axis=1)] if len(self._names) else np.zeros((0, _NCOV))
        fill = known.mean(axis=0) if known.shape[0] else np.zeros(_NCOV)
        out = np.tile(fill, (len(names), 1))
        for k, name in enumerate(names):
            if cov is not None and cov.shape[1] >= _NCOV and np.isfinite(cov[k, :_NCOV]).all():
                out[k] = cov[k, :_NCOV]
                continue
            j = self._index.get(name)
            if j is not None and np.isfinite(self._cov[j]).all():
                out[k] = self._cov[j]
        return out

    # -- the model -----------------------------------------------------------------------------
    def _design(self, X: np.ndarray, entities: Entities | None) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per row: the parameter indices of each co-runner's exponent, their values' multipliers and the weights.

        Row i gives ``(cols (m, q), vals (m, q), w (m,))`` for its ``m`` co-runners: ``eta_c = theta[cols[c]] @
        vals[c]``, the global terms first, then the own sensitivity, the co-runner's aggressiveness and the
        pair's residual (a column of -1 for a term not held).
        """
        assert self._d is not None
        n, d = X.shape
        g = self._n_global
        out = []
        if entities is None:
            # no names: one co-runner of the typical kernel terms (the centre), features only
            cols = np.full((1, g + 3), -1, dtype=np.int64)
            cols[0, :g] = np.arange(g)
            for i in range(n):
                vals = np.zeros((1, g + 3))
                vals[0, 0] = 1.0
                vals[0, 1:1 + d] = X[i]
                out.append((cols, vals, np.ones(1)))
            return out
        cov = self._covariates(entities.names, entities.covariates)
        pos = self._pos
        sens = np.array([pos.get(("s", nm), -1) for nm in entities.names], dtype=np.int64)
        aggr = np.array([pos.get(("a", nm), -1) for nm in entities.names], dtype=np.int64)
        names = entities.names
        base_cols = np.arange(g, dtype=np.int64)
        for i in range(n):
            lo, hi = int(entities.indptr[i]), int(entities.indptr[i + 1])
            co = entities.co[lo:hi]
            w = entities.weight[lo:hi]
            keep = w > 0.0
            co, w = co[keep], w[keep]
            m = co.size
            own = int(entities.own[i])
            cols = np.empty((m, g + 3), dtype=np.int64)
            vals = np.empty((m, g + 3))
            cols[:, :g] = base_cols
            vals[:, 0] = 1.0
            vals[:, 1:1 + d] = X[i]
            vals[:, 1 + d] = cov[own, 0] - self._center[0]
            vals[:, 2 + d] = cov[co, 1] - self._center[1]
            cols[:, g] = sens[own]
            cols[:, g + 1] = aggr[co]
            cols[:, g + 2] = [pos.get(("p", names[own], names[c]), -1) for c in co.tolist()]
            vals[:, g:] = 1.0
            out.append((cols, vals, w))
        return out

    def _eta(self, theta: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> np.ndarray:
        t = np.where(cols >= 0, theta[np.maximum(cols, 0)], 0.0)
        return np.minimum((t * vals).sum(axis=1), _ETA_MAX)

    def _log_slowdown(self, theta: np.ndarray, row: tuple[np.ndarray, np.ndarray, np.ndarray],
                      grad: bool) -> tuple[float, np.ndarray | None]:
        cols, vals, w = row
        if w.size == 0:
            return 0.0, (np.zeros(theta.size) if grad else None)
        e = w * np.exp(self._eta(theta, cols, vals))
        excess = float(e.sum())
        h = math.log1p(excess)
        if not grad:
            return h, None
        J = np.zeros(theta.size)
        scale = e / (1.0 + excess)
        ok = cols >= 0
        np.add.at(J, cols[ok], (vals * scale[:, None])[ok])
        return h, J

    def _log_targets(self, y: np.ndarray) -> np.ndarray:
        s = 1.0 / y if self._rates else y
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(np.maximum(s, 1.0))

    def _log_slowdowns(self, X: np.ndarray, entities: Entities) -> np.ndarray:
        """log slowdown of every row at the current parameters, over all (row, co-runner) pairs at once:
        what :meth:`_log_slowdown` gives row by row, without building each row's design (the tracker
        asks this once per projected segment)."""
        assert self._d is not None
        d = self._d
        th = self._theta
        own_terms, co_terms, pair = self._vocabulary_terms(entities.names, entities.covariates)
        counts = np.diff(entities.indptr)
        row = np.repeat(np.arange(X.shape[0]), counts)
        co, w = entities.co, entities.weight
        own = entities.own[row]
        base = th[0] + X @ th[1:1 + d]
        eta = base[row] + own_terms[own] + co_terms[co] + pair[own, co]
        e = np.where(w > 0.0, w * np.exp(np.minimum(eta, _ETA_MAX)), 0.0)
        return np.log1p(np.bincount(row, weights=e, minlength=X.shape[0]))

    def _vocabulary_terms(self, names: tuple[str, ...],
                          covariates: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per name of ``entities``' vocabulary, the exponent's terms beside a co-runner that do not depend on
        the features: as the batch (kernel rate and sensitivity), as the co-runner (kernel hold and
        aggressiveness), and per pair (own, co-runner); looked up once while the parameters stay the same (a
        tracker asks with one vocabulary for every segment of a projection)."""
        assert self._d is not None
        d = self._d
        th = self._theta
        memo = self._lookup_memo
        key = (id(self._theta), id(self._cov), names, None if covariates is None else covariates.tobytes())
        if memo is None or memo[0] != key:
            cov = self._covariates(names, covariates)
            pos = self._pos
            sens = np.array([th[pos[("s", nm)]] if ("s", nm) in pos else 0.0 for nm in names])
            aggr = np.array([th[pos[("a", nm)]] if ("a", nm) in pos else 0.0 for nm in names])
            pair = np.zeros((len(names), len(names)))
            at = {nm: k for k, nm in enumerate(names)}
            for k in self._keys:
                if k[0] == "p" and k[1] in at and k[2] in at:
                    pair[at[k[1]], at[k[2]]] = th[pos[k]]
            own_terms = th[1 + d] * (cov[:, 0] - self._center[0]) + sens
            co_terms = th[2 + d] * (cov[:, 1] - self._center[1]) + aggr
            # (the arrays the key names are held, so their ids cannot be reused while the memo lives)
            memo = self._lookup_memo = (key, own_terms, co_terms, pair, (self._theta, self._cov))
        return memo[1], memo[2], memo[3]

    def blocking_terms(self, names: Any) -> BlockingTerms | None:
        """The model inside a running set of models ``names`` (k,), for the compiled what-if projection.

        Member ``a`` predicts the slowdown ``1 + sum_{c != a} exp(min(b + w . phi_a + log pair[a, c],
        cap))`` (1 alone), its inverse for a predictor of rates, as :meth:`predict` does with the
        running set's entities; ``phi_a`` is the member's row of the feature map. None where that is
        not the prediction (``predict_mean``) or before ``fit``.

        Examples
        --------
        >>> from interfpred.data.entities import Entities
        >>> p = KernelBlocking(target="slowdown").fit(np.zeros((2, 1)), [2.0, 3.0],
        ...     entities=Entities.from_lists(["a", "b"], [{"b": 1.0}, {"a": 1.0}]))
        >>> t = p.blocking_terms(["a", "b"])
        >>> x = np.ones((2, 1))                                   # one co-runner each
        >>> s = 1.0 + np.exp(t.intercept + x @ t.weights) * t.pair[[0, 1], [1, 0]]
        >>> bool(np.allclose(s, p.predict(x, entities=Entities.from_lists(["a", "b"], [{"b": 1.0}, {"a": 1.0}]))))
        True
        """
        if self._d is None or self.predict_mean:
            return None
        names = tuple(str(s) for s in names)
        memo = self._terms_memo
        key = (names, id(self._theta), id(self._cov), bool(self._rates))
        if memo is not None and memo[0] == key:
            return memo[1]
        own_terms, co_terms, pair = self._vocabulary_terms(names, None)
        if len(set(names)) != len(names):          # repeated names: their rows and columns repeat
            at: dict[str, int] = {}
            u = np.array([at.setdefault(nm, len(at)) for nm in names], dtype=np.int64)
            own_terms, co_terms, pair = own_terms[u], co_terms[u], pair[np.ix_(u, u)]
        with np.errstate(over="ignore"):
            M = np.exp(own_terms[:, None] + co_terms[None, :] + pair)
        th = self._theta
        M.flags.writeable = False
        terms = BlockingTerms(th[1:1 + self._d].copy(), float(th[0]), M, bool(self._rates), _ETA_MAX)
        # (theta and the kernel terms are new arrays whenever they change, and the memo holds them)
        self._terms_memo = (key, terms, (self._theta, self._cov))
        return terms

    def _predict_rows(self, X: np.ndarray, entities: Entities | None = None) -> np.ndarray:
        if entities is not None and not self.predict_mean:
            s = np.exp(self._log_slowdowns(X, entities))
            return 1.0 / s if self._rates else s
        rows = self._design(X, entities)
        s = np.empty(len(rows))
        for i, r in enumerate(rows):
            if not self.predict_mean:
                s[i] = math.exp(self._log_slowdown(self._theta, r, False)[0])
                continue
            h, J = self._log_slowdown(self._theta, r, True)
            assert J is not None
            var = float(J @ self._P @ J) + (self.noise_var if r[2].size else 0.0)
            s[i] = math.exp(h + 0.5 * var)
        return 1.0 / s if self._rates else s

    def _fit_rows(self, X: np.ndarray, y: np.ndarray, *, sample_weight: np.ndarray | None,
                  entities: Entities | None) -> None:
        """The posterior mode by damped Gauss-Newton, and its covariance (the inverse Hessian)."""
        if entities is not None:
            self._add_names(entities)
            self._add_pairs(entities)
        known = self._cov[np.isfinite(self._cov).all(axis=1)]
        # kernel terms centred on the fitted models' mean: the intercept is then the typical model's, and the
        # coefficients' uncertainty does not swell every prediction by the terms' distance from zero
        self._center = known.mean(axis=0) if known.shape[0] else np.zeros(_NCOV)
        rows = self._design(X, entities)
        t = self._log_targets(y)
        mu = self._theta.copy()
        prec = 1.0 / np.diag(self._P)
        theta = mu.copy()
        sig2 = float(self.noise_var)
        kappa = float(self.under_weight)

        def loss_grad(th: np.ndarray, need: bool) -> tuple[float, np.ndarray | None, np.ndarray | None]:
            r = np.empty(len(rows))
            J = np.zeros((len(rows), th.size)) if need else None
            for i, row in enumerate(rows):
                h, j = self._log_slowdown(th, row, need)
                r[i] = t[i] - h
                if need:
                    assert J is not None and j is not None
                    J[i] = j
            dev = th - mu
            wr = np.where(r > 0.0, kappa, 1.0)
            return float(r @ (wr * r) / sig2 + dev @ (prec * dev)), r, J

        lam = 1e-3
        loss, r, J = loss_grad(theta, True)
        for _ in range(BLOCKING_FIT_ITERATIONS):
            assert r is not None and J is not None
            wr = np.where(r > 0.0, kappa, 1.0)
            H = (J.T * wr) @ J / sig2 + np.diag(prec)
            gvec = J.T @ (wr * r) / sig2 - prec * (theta - mu)
            step = np.linalg.solve(H + lam * np.diag(np.diag(H)), gvec)
            cand = theta + step
            new_loss, _, _ = loss_grad(cand, False)
            if new_loss < loss:
                theta = cand
                lam = max(lam / 3.0, 1e-9)
                done = loss - new_loss < 1e-10 * (1.0 + loss)
                loss, r, J = loss_grad(theta, True)
                if done:
                    break
            else:
                lam *= 10.0
                if lam > 1e8:
                    break
        assert J is not None
        assert r is not None
        wr = np.where(r > 0.0, kappa, 1.0)
        H = (J.T * wr) @ J / sig2 + np.diag(prec)
        P = np.linalg.inv(H)
        self._theta = theta
        # Empirical Bayes for the models without rows: their terms' variance is the spread of the terms
        # learned from rows (at most the prior's), so a model never seen is predicted as uncertain as
        # the models seen turned out to be, not as the prior allowed
        g = self._n_global
        seen = np.zeros(theta.size, dtype=bool)
        for cols, _, w in rows:
            if w.size:
                model_cols = cols[:, g:g + 2]
                seen[model_cols[model_cols >= 0]] = True
        ent_idx = np.array([self._pos[k] for k in self._keys if k[0] != "p"], dtype=np.int64)
        learned = ent_idx[seen[ent_idx]]
        if learned.size:
            self._new_var = float(min(self.entity_var, max(BLOCKING_MIN_ENTITY_VAR, np.mean(theta[learned] ** 2))))
        unseen = ent_idx[~seen[ent_idx]]
        P[unseen, unseen] = self._new_var
        self._theta = theta
        self._P = 0.5 * (P + P.T)
        self._n = len(rows)

    def _learn(self, X: np.ndarray, y: np.ndarray, entities: Entities | None = None) -> None:
        """One extended Kalman step per row, in order (the model linearised at the current estimate)."""
        theta, P = self._theta.copy(), self._P.copy()
        names = (list(self._names), dict(self._index), self._cov.copy(), list(self._keys), dict(self._pos))
        try:
            if entities is not None:
                self._add_names(entities)
            t = self._log_targets(y)
            sig2 = float(self.noise_var)
            lam = float(self.forgetting)
            for i in range(X.shape[0]):
                # a row's new pair joins when the row is learned (not before: forgetting would inflate its prior
                # on every earlier row), so a block learns what its rows one by one would
                one = None if entities is None else entities.take([i])
                if one is not None:
                    self._add_pairs(one)
                row = self._design(X[i:i + 1], one)[0]
                h, J = self._log_slowdown(self._theta, row, True)
                assert J is not None
                PJ = self._P @ J
                e = t[i] - h
                s = float(J @ PJ) + (sig2 / float(self.under_weight) if e > 0.0 else sig2)
                k = PJ / s
                self._theta = self._theta + k * e
                P_new = (self._P - np.outer(k, PJ)) / lam
                self._P = 0.5 * (P_new + P_new.T)
                self._n += 1
            if not (np.isfinite(self._theta).all() and np.isfinite(self._P).all()):
                raise InterfpredError("KernelBlocking: the update made the state non-finite; rows refused")
        except BaseException:
            self._theta, self._P = theta, P
            self._names, self._index, self._cov, self._keys, self._pos = names
            raise

    # -- persistence ---------------------------------------------------------------------------
    def _get_state(self) -> dict[str, Any]:
        return {"names": list(self._names), "terms": [list(k) for k in self._keys], "covariates": [[float(v) if math.isfinite(v) else None for v in row] for row in self._cov.tolist()],
                "center": self._center.tolist(), "new_var": self._new_var, "rates": self._rates,
                "theta": self._theta.tolist(), "P": self._P.tolist(), "n_seen": self._n}

    def _set_state(self, state: dict[str, Any], d: int) -> None:
        self._allocate(d)
        try:
            names = [str(n) for n in state["names"]]
            keys = [tuple(str(v) for v in k) for k in state["terms"]]
            cov = np.array([[np.nan if v is None else float(v) for v in row] for row in state["covariates"]],
                           dtype=np.float64).reshape(len(names), _NCOV)
            theta = np.asarray(state["theta"], dtype=np.float64)
            P = np.asarray(state["P"], dtype=np.float64)
            center = np.asarray(state["center"], dtype=np.float64).reshape(_NCOV)
            new_var = float(state["new_var"])
            rates = state["rates"]
            if not isinstance(rates, bool):
                raise TypeError(f"rates {rates!r} is not true or false")
            n = int(state["n_seen"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InterfpredError(f"kernel_blocking state is malformed: {exc}") from None
        size = self._n_global + len(keys)
        bad = [k for k in keys if not ((len(k) == 2 and k[0] in "sa" and k[1] in names)
                                       or (len(k) == 3 and k[0] == "p" and k[1] in names and k[2] in names))]
        if bad or len(set(keys)) != len(keys):
            raise InterfpredError(f"kernel_blocking state: terms {bad[:3] or 'repeated'} do not name its entities")
        if theta.shape != (size,) or P.shape != (size, size) or n < 0:
            raise InterfpredError(f"kernel_blocking state: theta {theta.shape} and P {P.shape} do not fit "
                                  f"{len(names)} entities and {d} features")
        if not (np.isfinite(theta).all() and np.isfinite(P).all() and np.isfinite(center).all()
                and math.isfinite(new_var) and new_var > 0.0) or np.isinf(cov).any():
            raise InterfpredError("kernel_blocking state holds a non-finite value")
        if len(set(names)) != len(names):
            raise InterfpredError("kernel_blocking state: entity names must be distinct")
        self._names = names
        self._index = {nm: k for k, nm in enumerate(names)}
        self._keys = keys
        self._pos = {k: self._n_global + i for i, k in enumerate(keys)}
        self._cov, self._theta, self._P, self._n, self._center, self._new_var = cov, theta, P, n, center, new_var
        self._rates = rates
