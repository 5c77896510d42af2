"""EntityRLS: a throughput-feature model plus each model's own sensitivity and aggressiveness, online.

A row whose own entity is ``m`` and whose co-runners ``c`` ran beside it with weights ``w_c``
(:class:`~interfpred.data.entities.Entities`) is predicted as

    f = g(phi) + s[m] min(1, sum_c w_c) + sum_c w_c (a[c] + p[m, c]) + <u[m], sum_c w_c v[c]>

(``exp(f)`` with ``log_target``): the population model ``g`` of the features, then zero-mean
entity terms with Gaussian priors (sensitivity, aggressiveness, pair residual, optional latent
factors), each learned by one joint Kalman (RLS) step per observation, in an exact ("full") or a
decoupled ("blocks") covariance.

Fitted jointly with the entity terms, ``g`` no longer carries alone what generalises across
models, so a row whose own model has little evidence backs off to a features-only :class:`RLS`
(on the target itself) learned beside it from the same rows: with ``n`` observations of the
row's own model (of its parent model, if more), the prediction is ``a * entity model + (1 - a) *
backoff`` with ``a = min(1, n / backoff_evidence)``; as the model's data accrue its terms take over.
Across models the spread is wide and a latency's percentage error is asymmetric in the rate
(predicting half the true rate errs by 100 %, twice it by 50 %), so ``fit`` scales the backoff by
the factor that minimises the mean absolute percentage error of latency of its own predictions
on the fitted rows (``backoff_scale``), for the target the predictor is declared for
(``target``, which the :class:`~interfpred.InterferenceModel` holding it declares). The model, the update modes, forgetting and the accuracy on real
pairs are described in docs/predictors.md ("Per-model terms: entities and EntityRLS").
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import Any

import numpy as np

from interfpred._core.targets import rate_from_prediction
from interfpred.constants import (
    ENTITY_AGGRESSIVENESS_VAR,
    ENTITY_BACKOFF_EVIDENCE,
    ENTITY_BACKOFF_SCALE_RANGE,
    ENTITY_BACKOFF_SCALE_ROWS,
    ENTITY_BACKOFF_SCALE_STEP,
    ENTITY_BACKOFF_SCALE_STEPS,
    ENTITY_BACKOFF_SCALE_TIE_RTOL,
    ENTITY_BACKOFFS,
    ENTITY_FACTOR_VAR,
    ENTITY_FORGETTING,
    ENTITY_MAX_RANK,
    ENTITY_PAIR_VAR,
    ENTITY_SENSITIVITY_VAR,
    ENTITY_TUNE_MIN_ROWS,
    FEATURE_ABS_MAX,
    PRIOR_SLOWDOWN,
    RLS_DELTA,
    RLS_FORGETTING,
    TARGET_ABS_MAX,
)
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.predictors._status import MISSING, OK, split_code, status_error
from interfpred.predictors.base import BasePredictor
from interfpred.predictors.baselines import GlobalMean, NoInterference
from interfpred.predictors.entity_rls import _entity_steps as EK
from interfpred.predictors.entity_rls import _rows as ER
from interfpred.predictors.entity_rls._store import EntityStore
from interfpred.predictors.entity_rls.tuning import select_prior_variances
from interfpred.predictors.inputs import as_rows, as_targets, check_flag, check_learnable, check_positive, check_target
from interfpred.predictors.rls import RLS

__all__ = ["EntityRLS"]

_EH = EK.ENT_HEADER
_FAST = ER.FAST
_NO_I = np.zeros(0, dtype=np.int64)
_NO_V = np.zeros((0, 2), dtype=np.int64)
_VARS = ("sensitivity_var", "aggressiveness_var", "pair_var", "factor_var")
_NO_F = np.zeros(0)
_NO_F2 = np.zeros((1, 1))
_PTR0 = np.zeros(2, dtype=np.int64)
_OWN0 = np.zeros(1, dtype=np.int64)


def _weighted_median(v: np.ndarray, w: np.ndarray) -> float:
    order = np.argsort(v, kind="stable")
    c = np.cumsum(w[order])
    return float(v[order][min(int(np.searchsorted(c, 0.5 * c[-1])), v.size - 1)])


def _latency_scale(y: np.ndarray, pred: np.ndarray, is_rate: bool) -> float:
    """The factor in ``ENTITY_BACKOFF_SCALE_RANGE`` that minimises the mean absolute percentage error of latency
    of ``factor * pred`` against ``y`` (rates with ``is_rate``, else slowdowns; both clamped as predictions are).

    Latency is proportional to 1 / rate, so a row's error is ``|rate / predicted rate - 1|``, which is
    ``w |u - v|`` in ``u = 1 / factor`` (rates) or ``u = factor`` (slowdowns): unclamped, the optimum is a
    weighted median, exact. The clamp is then honoured by comparing the clamped error at that optimum, at
    1 % steps around it and at 1 (ties keep the factor nearest 1). At most ``ENTITY_BACKOFF_SCALE_ROWS``
    rows, evenly spaced, are used.

    Examples
    --------
    >>> y = np.array([0.2, 0.9, 0.9, 0.9])        # rates: one model far slower than the rest
    >>> round(_latency_scale(y, np.full(4, y.mean()), True), 3)    # the mean (0.725) errs high in percent
    1.241
    """
    ok = np.isfinite(y) & np.isfinite(pred) & (y > 0) & (pred > 0)
    if not ok.any():
        return 1.0
    y, pred = y[ok], pred[ok]
    if y.size > ENTITY_BACKOFF_SCALE_ROWS:
        keep = np.linspace(0, y.size - 1, ENTITY_BACKOFF_SCALE_ROWS).astype(np.int64)
        y, pred = y[keep], pred[keep]
    target = "rate" if is_rate else "slowdown"
    true = rate_from_prediction(y, target)     # observations clamped as predictions are
    if is_rate:        # |true / (k pred) - 1| = (true / pred) |1/k - pred / true|
        k0 = 1.0 / _weighted_median(pred / true, true / pred)
    else:              # |true k pred - 1| = (true pred) |k - 1 / (true pred)|
        k0 = _weighted_median(1.0 / (true * pred), true * pred)
    lo, hi = ENTITY_BACKOFF_SCALE_RANGE
    steps = np.arange(-ENTITY_BACKOFF_SCALE_STEPS, ENTITY_BACKOFF_SCALE_STEPS + 1)
    cands = np.unique(np.clip(np.concatenate([k0 * ENTITY_BACKOFF_SCALE_STEP ** steps, [1.0]]), lo, hi))

    def loss(k: float) -> float:
        rate = rate_from_prediction(k * pred, target)
        return float(np.abs(true / rate - 1.0).mean())

    losses = np.array([loss(float(k)) for k in cands])
    best = np.flatnonzero(losses <= losses.min() * (1.0 + ENTITY_BACKOFF_SCALE_TIE_RTOL))
    return float(cands[best[np.argmin(np.abs(np.log(cands[best])))]])


def _error(status: int, row: int | None, d: Any, n_features: int | None = None) -> InterfpredError:
    return status_error(status, row=row, model="EntityRLS", n_features=n_features, width=d)


class EntityRLS(EntityStore, BasePredictor):
    """Throughput-feature RLS plus per-model sensitivity, aggressiveness, pair and latent terms.

    Parameters
    ----------
    forgetting
        Forgetting of the global weights per observation, in (0, 1] (as :class:`~interfpred.RLS`).
    delta
        Prior variance of the global weights (weak: the population model is learned from data).
    entity_forgetting
        Forgetting of each entity term per observation that touches it, in (0, 1].
    sensitivity_var, aggressiveness_var, pair_var, factor_var
        Prior variances of the entity terms relative to the observation noise variance (``1 / var``
        is the term's ridge penalty); 0 turns that family of terms off.
    rank
        Rank of the latent factors ``u, v`` (0 = none), at most ``ENTITY_MAX_RANK``.
    log_target
        Learn ``log y`` and predict ``exp`` of the model (default: interference is multiplicative and
        real slowdowns span orders of magnitude; targets must then be positive). False learns ``y``.
    alone_is_solo
        A row with entities and no co-runner predicts exactly 1.0 and teaches nothing.
    entity_terms
        False ignores the entity terms (the ablation: ``g(phi)`` with the same target and
        alone-is-solo rule).
    covariance
        ``"auto"`` (exact while small, then blocks), ``"blocks"`` (decoupled, fast) or ``"full"``
        (exact joint RLS, rank 0, ``O(N^2)`` per update for ``N`` parameters).
    stabilize
        Stabilised forgetting of every part (see the module docstring).
    seed
        Seed of the latent factors' initial values (with each entity's order of first sight).
    entity
        What an entity is when the library computes entities for this predictor (an
        :class:`~interfpred.InterferenceModel`, a :class:`~interfpred.ColocationTracker`):
        ``"model"`` or ``"model_batch"`` (model and batch size, named ``"model@batch"``).
    population
        ``"joint"`` (default): one innovation for all parts (the mixed-model posterior; exact with
        the joint covariance); ``"marginal"``: ``g`` learns as the feature-only model (the
        population model, to the bit) and the entity terms learn the residual it leaves.
    hierarchy
        A name ``"parent@child"`` (such as ``"resnet50@8"``) also gets the terms of ``"parent"``,
        so a batch size never seen of a known model starts from that model's terms, and pairs of
        parents share what every batch size of them taught.
    backoff_evidence
        Observations of a row's own model after which the entity model alone predicts it (before:
        blended with the features-only backoff, weight ``1 - n / backoff_evidence``); 0 turns the
        backoff off. Rows predicted without entities use the entity model's ``g`` alone.
    backoff
        What serves rows of little evidence (models never seen): ``"rls"``, a features-only
        :class:`~interfpred.RLS` learned beside the entity model from the same rows;
        ``"global_mean"``, the running mean of the target (with ``backoff_scale``, the constant
        least wrong in percent); or ``"no_interference"`` (solo speed, never scaled). ``fit`` with
        no configuration named chooses it by the error on held-out models.
    backoff_scale
        ``fit`` multiplies the backoff's predictions by the factor (in ``ENTITY_BACKOFF_SCALE_RANGE``)
        that minimises the mean absolute percentage error of latency of the backoff on the fitted
        rows, when the predictor is declared for a target (``target``: ``"rate"`` or
        ``"slowdown"``); the factor is kept in ``backoff_scale_`` (1 otherwise, and with ``update``
        alone). A point prediction for a model never seen is then the value least wrong in
        percent, not the mean across models. False keeps the factor at 1.
    tune_priors
        ``fit`` (with entities, at least 8 rows) first chooses the prior variances by validation on
        its own rows (the last quarter, prequentially; see :mod:`interfpred.predictors.entity_rls.tuning`),
        scaling the variances given here; the choice is kept in ``prior_variances_`` (the
        hyperparameters are not changed). ``update`` alone uses the given variances. The search
        runs with the first backoff (``"rls"``) whatever ``backoff`` is: the variances are the
        entity model's, and predictors that differ only in their backoff share them (the
        configuration search scores several backoffs on one tuning).

    Examples
    --------
    >>> import numpy as np
    >>> from interfpred.data.entities import Entities
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((400, 2))
    >>> own = rng.choice(["a", "b"], 400)
    >>> ent = Entities.from_lists(own, [{"b": 1.0} if o == "a" else {"a": 1.0} for o in own])
    >>> y = 1.0 + X[:, 0] + np.where(own == "a", 0.3, -0.1)
    >>> p = EntityRLS(forgetting=1.0).fit(X, y, entities=ent)
    >>> one = Entities.from_lists(["a", "new"], [{"b": 1.0}, {"b": 1.0}])
    >>> np.round(p.predict(np.array([[0.5, 0.5], [0.5, 0.5]]), entities=one), 1)   # a learned; new = g(phi)
    array([1.8, 1.7])
    >>> p.predict(np.array([0.5, 0.5]), entities=Entities.from_lists(["a"], [{}]))    # alone: solo
    1.0
    """

    kind = "entity_rls"
    tags = replace(BasePredictor.tags, uses_entities=True, pairwise_terms=True)
    _contract_params = [{}, {"log_target": False, "rank": 2, "forgetting": 0.99},
                    {"covariance": "full", "population": "joint", "log_target": False},
                    {"population": "joint", "tune_priors": True}, {"entity_terms": False, "alone_is_solo": False}]

    def __init__(
        self,
        *,
        forgetting: float = RLS_FORGETTING,
        delta: float = RLS_DELTA,
        entity_forgetting: float = ENTITY_FORGETTING,
        sensitivity_var: float = ENTITY_SENSITIVITY_VAR,
        aggressiveness_var: float = ENTITY_AGGRESSIVENESS_VAR,
        pair_var: float = ENTITY_PAIR_VAR,
        factor_var: float = ENTITY_FACTOR_VAR,
        rank: int = 0,
        log_target: bool = True,
        alone_is_solo: bool = True,
        entity_terms: bool = True,
        covariance: str = "auto",
        stabilize: bool = True,
        seed: int = 0,
        entity: str = "model_batch",
        population: str = "joint",
        hierarchy: bool = True,
        tune_priors: bool = True,
        backoff_evidence: float = ENTITY_BACKOFF_EVIDENCE,
        backoff: str = "rls",
        backoff_scale: bool = True,
        target: str | None = None,
    ) -> None:
        self.forgetting = forgetting
        self.delta = delta
        self.entity_forgetting = entity_forgetting
        self.sensitivity_var = sensitivity_var
        self.aggressiveness_var = aggressiveness_var
        self.pair_var = pair_var
        self.factor_var = factor_var
        self.rank = rank
        self.log_target = log_target
        self.alone_is_solo = alone_is_solo
        self.entity_terms = entity_terms
        self.covariance = covariance
        self.stabilize = stabilize
        self.seed = seed
        self.entity = entity
        self.population = population
        self.hierarchy = hierarchy
        self.tune_priors = tune_priors
        self.backoff_evidence = backoff_evidence
        self.backoff = backoff
        self.backoff_scale = backoff_scale
        self.target = check_target(target)
        self._check_params()
        self._g: np.ndarray | None = None
        self._d = None
        self._scale = 1.0

    def _check_params(self) -> None:
        for name in ("forgetting", "entity_forgetting"):
            v = check_positive(name, getattr(self, name))
            if v > 1.0:
                raise InterfpredError(f"{name} must be in (0, 1], got {getattr(self, name)!r}")
        check_positive("delta", self.delta)
        check_positive("backoff_evidence", self.backoff_evidence, allow_zero=True)
        for name in ("sensitivity_var", "aggressiveness_var", "pair_var", "factor_var"):
            check_positive(name, getattr(self, name), allow_zero=True)
        check_flag(self, "log_target", "alone_is_solo", "entity_terms", "stabilize", "hierarchy", "tune_priors",
                   "backoff_scale")
        for name, hi in (("rank", ENTITY_MAX_RANK), ("seed", 2**63 - 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v <= hi:
                raise InterfpredError(f"{name} must be an integer in [0, {hi}], got {v!r}")
        if self.entity not in ("model", "model_batch"):
            raise InterfpredError(f"entity must be 'model' or 'model_batch', got {self.entity!r}")
        self.tags = replace(type(self).tags, entity_key=self.entity, entity_terms=bool(self.entity_terms),
                            tunes_priors=bool(self.tune_priors))   # what an entity is, for every caller
        if self.backoff not in ENTITY_BACKOFFS:
            raise InterfpredError(f"backoff must be one of {', '.join(map(repr, ENTITY_BACKOFFS))}, got {self.backoff!r}")
        if self.population not in ("marginal", "joint"):
            raise InterfpredError(f"population must be 'marginal' or 'joint', got {self.population!r}")
        if self.covariance not in ("auto", "blocks", "full"):
            raise InterfpredError(f"covariance must be 'auto', 'blocks' or 'full', got {self.covariance!r}")
        if self.covariance == "full" and self.rank:
            raise InterfpredError(f"covariance='full' is exact RLS for the linear terms only; rank {self.rank!r} "
                                  "needs covariance='blocks'")
        if self.covariance == "full" and self.population != "joint":
            raise InterfpredError("covariance='full' is the exact joint solution: it needs population='joint'")

    # ------------------------------------------------------------------ state
    def _allocate(self, d: int, full: bool | None = None) -> None:
        self._check_params()
        m = d + 1
        if full is None:  # "auto" starts exact (joint covariance) unless latent factors need blocks
            full = self.covariance == "full" or (self.covariance == "auto" and not self.rank)
        size = _EH + (0 if full else 3 * m + m * m)
        g = np.zeros(size)
        g[EK.N_WEIGHTS], g[EK.N_FEATURES] = m, d
        f = float(self.forgetting)
        g[EK.RLS_FORGETTING] = f
        g[EK.RLS_STAB] = (1.0 - f) / float(self.delta) if self.stabilize else 0.0
        g[EK.RLS_INV_DELTA] = 1.0 / float(self.delta)
        g[EK.ENT_FORGETTING] = float(self.entity_forgetting)
        g[EK.ENT_STABILIZE] = float(bool(self.stabilize))
        g[EK.ENT_LOG_TARGET] = float(bool(self.log_target))
        g[EK.ENT_ALONE_IS_SOLO] = float(bool(self.alone_is_solo))
        g[EK.ENT_RANK] = float(self.rank)
        g[EK.ENT_MARGINAL] = float(self.population == "marginal")
        b0 = 0.0 if self.log_target else PRIOR_SLOWDOWN
        cap = 16
        if full:
            g[EK.ENT_N_FULL] = m
            self._est = np.zeros((4, m + cap))
            self._est[EK.EST_MEAN, d] = self._est[EK.EST_PRIOR_MEAN, d] = b0
            self._est[EK.EST_PRIOR_INFO, :m] = 1.0 / float(self.delta)
            self._P = np.zeros((m + cap, m + cap))
            self._P[np.arange(m), np.arange(m)] = float(self.delta)
        else:
            g[_EH + d] = b0
            g[_EH + m + d] = b0
            g[_EH + 2 * m:_EH + 2 * m + m * m].reshape(m, m)[np.diag_indices(m)] = float(self.delta)
            self._est = np.zeros((4, cap))
            self._P = _NO_F2
        self._g = g
        self._np = 0
        self._names: list[str] = []
        self._eid: dict[str, int] = {}
        self._etab = np.full((8, 4), -1, dtype=np.int64)
        self._ptab = np.full((16, 3), -1, dtype=np.int64)
        self._n_pairs = 0
        self._d = d
        self._var = {k: float(getattr(self, k)) for k in _VARS}
        self._create = (1 + int(self.pair_var > 0)) if self.entity_terms else 0
        self._evidence = np.zeros(8)
        self._backoff = self._new_backoff()
        self._scale = 1.0
        self._reset_cache()

    def _new_backoff(self) -> RLS | GlobalMean | NoInterference:
        if self.backoff == "rls":
            return RLS(forgetting=self.forgetting, delta=self.delta, stabilize=self.stabilize)
        return GlobalMean() if self.backoff == "global_mean" else NoInterference()

    # ------------------------------------------------------------------ the API
    def _fit_rows(self, X: np.ndarray, y: np.ndarray, *, sample_weight: Any, entities: Entities | None) -> None:
        ent = entities
        tuned = self._tune(X, y, ent)
        if tuned is not None:
            self._var = tuned
            self._create = (1 + int(self._var["pair_var"] > 0)) if self.entity_terms else 0
        self._learn(X, y, ent)
        self._fit_scale(X, y, ent)

    def _tune(self, X: np.ndarray, y: np.ndarray, ent: Entities | None) -> dict[str, float] | None:
        """The prior variances ``tune_priors`` chooses on these rows (None: no tuning applies)."""
        if not (self.tune_priors and ent is not None and self.entity_terms and X.shape[0] >= ENTITY_TUNE_MIN_ROWS):
            return None
        # the search runs with the decoupled covariance (fast); the fit uses the chosen variances with
        # the configured one
        params = {**self.get_params(), "tune_priors": False, "backoff": ENTITY_BACKOFFS[0],
                  "covariance": "blocks" if self.covariance == "auto" else self.covariance}
        best, _ = select_prior_variances(X, y, ent, params=params, target=self.target)   # its latency error
        return {k: float(v) for k, v in best.items()}

    def tuned_prior_variances(self, X: Any, y: Any, *, entities: Any = None) -> dict[str, float]:
        """The prior variances ``fit`` on these rows learns with (``prior_variances_`` after it), without
        fitting: those ``tune_priors`` chooses, else the hyperparameters. The state is not touched.

        Examples
        --------
        >>> ent = Entities.from_lists(list("abcabcabca"), [{"b": 1.0}, {"c": 1.0}, {"a": 1.0}] * 3 + [{"b": 1.0}])
        >>> X, y = [[0.1 * i] for i in range(10)], [1.1 + 0.05 * i for i in range(10)]
        >>> p = EntityRLS(target="slowdown")
        >>> p.tuned_prior_variances(X, y, entities=ent) == p.fit(X, y, entities=ent).prior_variances_
        True
        """
        self._check_params()
        Xa, single = as_rows(X, width=self.tags.fixed_width)
        ya = as_targets(y, Xa.shape[0], single)
        ent = self._entities_arg(entities, Xa.shape[0])
        check_learnable(Xa, ya)
        tuned = self._tune(Xa, ya, ent)
        return tuned if tuned is not None else {k: float(getattr(self, k)) for k in _VARS}

    def _fit_scale(self, X: np.ndarray, y: np.ndarray, ent: Entities | None) -> None:
        if self.backoff_scale and self._backs_off and self.target is not None and self.backoff != "no_interference":
            keep = self._learned_rows(ent) if ent is not None else np.ones(X.shape[0], dtype=bool)
            if keep.any():
                self._scale = _latency_scale(y[keep], self._backoff.predict(X[keep]), self.target == "rate")

    def refit_backoff(self, backoff: str, X: Any, y: Any, *, entities: Entities | None = None) -> EntityRLS:
        """A copy of this predictor, fitted with ``tune_priors`` off on ``X, y, entities``, with ``backoff``
        in place of its own: what ``fit`` with that backoff learns, to the bit, at the cost of the backoff
        alone (the entity model never reads its backoff). A validation that scores several backoffs
        fits the entity model once.

        Examples
        --------
        >>> ent = Entities.from_lists(["a", "b", "a"], [{"b": 1.0}, {"a": 1.0}, {"b": 0.5}])
        >>> X, y = [[0.1], [0.2], [0.3]], [1.2, 1.4, 1.1]
        >>> p = EntityRLS(tune_priors=False, target="slowdown").fit(X, y, entities=ent)
        >>> q = p.refit_backoff("global_mean", X, y, entities=ent)
        >>> fresh = EntityRLS(tune_priors=False, target="slowdown", backoff="global_mean").fit(X, y, entities=ent)
        >>> q.to_state() == fresh.to_state(), p.backoff
        (True, 'rls')
        """
        if self.tune_priors or self._g is None:
            raise InterfpredError("refit_backoff needs a predictor fitted with tune_priors=False")
        if backoff not in ENTITY_BACKOFFS:
            raise InterfpredError(f"backoff must be one of {', '.join(map(repr, ENTITY_BACKOFFS))}, got {backoff!r}")
        Xa = np.ascontiguousarray(X, dtype=np.float64)
        ya = np.ascontiguousarray(y, dtype=np.float64)
        if Xa.ndim != 2 or ya.shape != (Xa.shape[0],) or (entities is not None and len(entities) != len(ya)):
            raise InterfpredError(f"need X (n, d), y (n,) and entities of n rows; got X {Xa.shape}, y {ya.shape}")
        out = copy.deepcopy(self)
        out.backoff = backoff
        out._backoff, out._scale = out._new_backoff(), 1.0
        if out._backs_off:
            keep = out._learned_rows(entities) if entities is not None else np.ones(Xa.shape[0], dtype=bool)
            if keep.any():
                out._backoff.update(Xa[keep], ya[keep])
        out._fit_scale(Xa, ya, entities)
        return out

    # -- the compiled single-row paths (BasePredictor.predict/update dispatch to them) -----------
    def _update_one(self, x: np.ndarray, y: float, entities: Any) -> int:
        """Entities named for the first time are created; any refusal leaves the state unchanged."""
        g = self._g
        if entities is None:
            st = _FAST.update_one(g, self._est, self._P, self._etab, self._ptab, _NO_V, x, y, -1, _NO_I, _NO_F, 0)
            if st == OK:
                self._learned_one(x, y, None)
            return st
        if type(entities) is not Entities or entities.own.shape[0] != 1:
            return -1
        vmap = (self._vmap if entities.names is self._vm_key and self._vm_n == len(self._names)
                else self._vmap_for(entities))
        own = int(entities.own[0])
        st = _FAST.update_one(g, self._est, self._P, self._etab, self._ptab, vmap, x, y, own, entities.co,
                              entities.weight, self._create)
        if st == MISSING:  # nothing changed yet: create what is new, then learn
            mark = (len(self._names), self._np, self._n_pairs)
            self._create_missing(entities)
            st = _FAST.update_one(self._g, self._est, self._P, self._etab, self._ptab,
                                  self._vmap_for(entities), x, y, own, entities.co, entities.weight, 0)
            if st:
                self._rollback(*mark)
        if st == OK:
            self._learned_one(x, y, entities)
        return st

    def _predict_one(self, x: np.ndarray, entities: Any) -> float:
        """Unknown entities contribute 0; NaN (a refused row) takes the checked path."""
        if entities is None:
            return _FAST.predict_one(self._g, self._est, self._etab, self._ptab, _NO_V, x, -1, _NO_I, _NO_F)
        if type(entities) is not Entities or entities.own.shape[0] != 1:
            return math.nan
        vmap = (self._vmap if entities.names is self._vm_key and self._vm_n == len(self._names)
                else self._vmap_for(entities))
        own = int(entities.own[0])
        v = _FAST.predict_one(self._g, self._est, self._etab, self._ptab, vmap, x, own, entities.co, entities.weight)
        if self.backoff_evidence > 0 and self.entity_terms:
            a = self._weight_of(vmap[own])
            if a < 1.0 and v == v and not (self.alone_is_solo and not entities.weight.sum() > 0.0):
                v = a * v + (1.0 - a) * self._scale * self._backoff.predict(x)
        return v

    def learn_runs(self, X: np.ndarray, y: np.ndarray, runs: list[np.ndarray], *,
                   entities: Entities | None = None) -> np.ndarray:
        """:meth:`BasePredictor.learn_runs` in one compiled call, with the same numbers, for a fitted
        predictor without latent factors, given entities and (if it blends one in) a fitted RLS backoff.

        Every entity and pair the rows name is created first, in the order the loop creates them (run
        by run; with the joint covariance row by row): a new parameter starts at 0, as an unknown one
        counts, so no prediction changes; with the decoupled covariance a parameter changes only when a
        row touches it, and the joint covariance takes each new parameter into its steps when the loop
        would have created it.
        The predictions and the state are those of the loop to the bit. Anything else (latent factors,
        a joint covariance that would give way to blocks on the way, other backoffs) runs the loop, as
        does a refused row after the state is restored (the loop raises as ``update`` does).

        Examples
        --------
        >>> ent = Entities.from_lists(list("abab"), [{"b": 1.0}, {"a": 1.0}] * 2)
        >>> p = EntityRLS(tune_priors=False).fit([[0.1], [0.2]], [1.2, 1.4], entities=ent.take([0, 1]))
        >>> q = copy.deepcopy(p)
        >>> X, y, runs = np.array([[0.1], [0.2], [0.3], [0.1]]), np.array([1.2, 1.4, 1.3, 1.2]), [np.arange(2), np.arange(2, 4)]
        >>> bool((p.learn_runs(X, y, runs, entities=ent) == BasePredictor.learn_runs(q, X, y, runs, entities=ent)).all())
        True
        """
        if not self._runs_compile(X, y, runs, entities):
            return super().learn_runs(X, y, runs, entities=entities)
        assert entities is not None
        out = np.empty(X.shape[0])
        done = 0
        while done < len(runs):
            k = self._compiled_runs(X, y, runs[done:], entities, out)
            if k == 0:      # this run turns the joint covariance into blocks: by the loop, then on compiled
                rows = runs[done]
                out[rows] = super().learn_runs(X, y, [rows], entities=entities)[rows]
                k = 1
            done += k
        return out

    def _runs_compile(self, X: np.ndarray, y: np.ndarray, runs: list[np.ndarray], entities: Entities | None) -> bool:
        """Whether :meth:`learn_runs` can run compiled (its docstring says when)."""
        backoff = self._backoff
        if runs and X.ndim == 2 and X.size and y.ndim == 1:
            rows = np.concatenate(runs)
            Xr, yr = X[rows], y[rows]
            # what update refuses as non-physical (check_learnable): the loop words it
            if not (np.abs(Xr).max() <= FEATURE_ABS_MAX and np.abs(yr).max() <= TARGET_ABS_MAX):
                return False
        return not (entities is None or self._g is None or not self.entity_terms
                    or (int(self.rank) and self._var["factor_var"] > 0) or not runs
                    or (self._backs_off and not (isinstance(backoff, RLS) and backoff.compiled_state is not None))
                    or X.dtype != np.float64 or not X.flags.c_contiguous or y.dtype != np.float64
                    or not y.flags.c_contiguous or X.ndim != 2 or X.shape[1] != self._d)

    def _compiled_runs(self, X: np.ndarray, y: np.ndarray, runs: list[np.ndarray], entities: Entities,
                       out: np.ndarray) -> int:
        """The first runs of ``runs`` learned compiled into ``out``: how many (all, or those before the run
        whose entities turn the joint covariance into blocks; 0 when that is the first). A refused row
        restores the state and runs the loop over ``runs``, which raises as ``update`` does."""
        assert self._g is not None       # fitted (_runs_compile)
        saved = self._snapshot()
        need = np.zeros(X.shape[0], dtype=np.int64)
        if self._is_full():
            # created as the loop creates them, row by row; each row learns with the parameters made by then
            start = int(self._g[EK.ENT_N_FULL])
            one = entities.split_rows()
            for r, rows in enumerate(runs):
                for i in rows.tolist():
                    self._create_missing(one[i])
                    if not self._is_full():        # the joint covariance gave way to blocks in run r
                        self._restore(saved)
                        if r == 0:
                            return 0
                        saved = self._snapshot()
                        runs = runs[:r]
                        for rows2 in runs:
                            for i2 in rows2.tolist():
                                self._create_missing(one[i2])
                                need[i2] = int(self._g[EK.ENT_N_FULL])
                        break
                    need[i] = int(self._g[EK.ENT_N_FULL])
                else:
                    continue
                break
            self._g[EK.ENT_N_FULL] = start
        else:
            for rows in runs:      # as the loop creates them: a run's at once
                self._create_missing(entities.take(rows))
        order = np.concatenate(runs).astype(np.int64, copy=False)
        bounds = np.zeros(len(runs) + 1, dtype=np.int64)
        bounds[1:] = np.cumsum([len(r) for r in runs])
        blend = bool(self._backs_off)
        bbuf = self._backoff.compiled_state if blend else _NO_F
        bad = int(_FAST.prequential_runs(self._g, self._est, self._P, self._etab, self._ptab,
                                         self._vmap_for(entities), X, y, entities.own, entities.indptr,
                                         entities.co, entities.weight, order, bounds, need, self._evidence, bbuf,
                                         blend, float(self.backoff_evidence), float(self._scale), out))
        if bad >= 0:       # a refused row: as the loop, which words it
            self._restore(saved)
            got = super().learn_runs(X, y, runs, entities=entities)
            out[order] = got[order]
            return len(runs)
        if self._is_full():
            self._g[EK.ENT_N_FULL] = max(int(self._g[EK.ENT_N_FULL]), int(need.max()))
        return len(runs)

    def learn_rows(self, X: np.ndarray, y: np.ndarray, ent: Entities, *, create_first: bool = False) -> np.ndarray:
        """Predict each row, then learn it, in order: what ``predict`` then ``update`` give row by row, to
        the bit, for a fitted predictor on checked float64 rows ``X`` (n, d), ``y`` (n,) and entities.

        Rows that name nothing new run in one compiled call (:func:`~interfpred.predictors.entity_rls._rows.
        prequential_rows`, the RLS backoff's blend and learning included); a row that names something
        new, or that a step refuses, goes through ``predict`` and ``update`` (which create, or word the
        refusal), and the compiled run goes on after it.

        ``create_first`` creates every entity and pair the rows name before the first row, where that
        changes no prediction: with the decoupled covariance (an entity parameter changes only when a
        row touches it) and no latent factors (a new parameter starts at 0, as an unknown one counts).
        The predictions are then the same to the bit and the whole run is one compiled call; the state
        holds the same values, its parameters numbered in another order. Elsewhere it is ignored.

        Examples
        --------
        >>> ent = Entities.from_lists(list("abab"), [{"b": 1.0}, {"a": 1.0}] * 2)
        >>> p = EntityRLS(tune_priors=False).fit([[0.1], [0.2]], [1.2, 1.4], entities=ent.take([0, 1]))
        >>> q = copy.deepcopy(p)
        >>> got = p.learn_rows(np.array([[0.3], [0.1]]), np.array([1.3, 1.2]), ent.take([2, 3]))
        >>> want = [q.predict(np.array([0.3]), entities=ent.take([2])), 0.0]
        >>> q.update(np.array([0.3]), 1.3, entities=ent.take([2]))
        >>> want[1] = q.predict(np.array([0.1]), entities=ent.take([3]))
        >>> got.tolist() == want
        True
        """
        if self._g is None:
            raise InterfpredError("learn_rows needs a fitted EntityRLS; call fit or update first")
        if (not isinstance(X, np.ndarray) or X.ndim != 2 or X.shape[1] != self._d or not isinstance(y, np.ndarray)
                or y.shape != (X.shape[0],) or not isinstance(ent, Entities) or len(ent) != X.shape[0]):
            raise InterfpredError(f"learn_rows needs X (n, {self._d}), y (n,) and entities of n rows; got X "
                                  f"{getattr(X, 'shape', type(X).__name__)}, y {getattr(y, 'shape', type(y).__name__)}, "
                                  f"{type(ent).__name__}")
        n = X.shape[0]
        out = np.empty(n)
        if (create_first and self._g is not None and self.entity_terms and not self._is_full()
                and not (int(self.rank) and self._var["factor_var"] > 0)):
            self._create_missing(ent)
        rows = ent.split_rows()
        backoff = self._backoff
        blend = bool(self._backs_off)
        bbuf = backoff.compiled_state if isinstance(backoff, RLS) else None
        fast = ((bbuf is not None or not blend) and X.dtype == np.float64 and X.flags.c_contiguous
                and y.dtype == np.float64 and y.flags.c_contiguous)
        i = 0
        while i < n:
            if fast:
                j = int(_FAST.prequential_rows(self._g, self._est, self._P, self._etab, self._ptab,
                                               self._vmap_for(ent), X, y, ent.own, ent.indptr, ent.co, ent.weight,
                                               i, self._create, self._evidence, _NO_F if bbuf is None else bbuf,
                                               blend, float(self.backoff_evidence), float(self._scale), out))
                if j < 0:                  # the entity model learned row -1 - j; its backoff refused it
                    backoff.update(X[-1 - j], float(y[-1 - j]))
                    i = -j
                    continue
                if j >= n:
                    break
                i = j
            out[i] = self.predict(X[i], entities=rows[i])
            self.update(X[i], float(y[i]), entities=rows[i])
            i += 1
        return out

    # -- the backoff: a features-only RLS beside the entity model, for rows of little evidence ---
    @property
    def _backs_off(self) -> bool:
        return bool(self.entity_terms) and self.backoff_evidence > 0

    @property
    def backoff_scale_(self) -> float:
        """The factor ``fit`` chose for the backoff's predictions (1 before, or without a declared target)."""
        return self._scale

    def _weight_of(self, ids: np.ndarray) -> float:
        """Weight of the entity model for a row whose own (entity, parent) ids are ``ids``."""
        ev = self._evidence
        e0, e1 = ids[0], ids[1]
        n = max(ev[e0] if e0 >= 0 else 0.0, ev[e1] if e1 >= 0 else 0.0)
        return min(1.0, float(n) / float(self.backoff_evidence))

    def _weights(self, ent: Entities) -> np.ndarray:
        """Weight of the entity model for every row of ``ent`` (its own model's evidence)."""
        return self._weights_of(self._vmap_for(ent)[ent.own])

    def _weights_of(self, ids: np.ndarray) -> np.ndarray:
        """Weight of the entity model for rows whose own (entity, parent) ids are ``ids`` (k, 2)."""
        ev = np.where(ids >= 0, self._evidence[np.maximum(ids, 0)], 0.0).max(axis=1)
        return np.minimum(1.0, ev / float(self.backoff_evidence))

    def _learned_rows(self, ent: Entities) -> np.ndarray:
        """Which rows of ``ent`` the entity model learns (all but lone rows with ``alone_is_solo``)."""
        if not self.alone_is_solo:
            return np.ones(len(ent), dtype=bool)
        rows = np.repeat(np.arange(len(ent)), np.diff(ent.indptr))
        return np.bincount(rows, weights=ent.weight, minlength=len(ent)) > 0.0

    def _learned(self, X: np.ndarray, y: np.ndarray, ent: Entities | None) -> None:
        """After the entity model learned rows: count each own model's evidence, teach the backoff."""
        if not self._backs_off:
            return
        if ent is None:
            self._backoff.update(X, y)
            return
        keep = self._learned_rows(ent)
        if not keep.any():
            return
        ids = self._vmap_for(ent)[ent.own[keep]].reshape(-1)
        ids = ids[ids >= 0]
        np.add.at(self._evidence, ids, 1.0)
        self._backoff.update(X[keep], y[keep])

    def _learned_one(self, x: np.ndarray, y: float, ent: Entities | None) -> None:
        if not self._backs_off:
            return
        if ent is not None:
            if self.alone_is_solo and not ent.weight.sum() > 0.0:
                return
            for e in self._vmap_for(ent)[int(ent.own[0])].tolist():
                if e >= 0:
                    self._evidence[e] += 1.0
        self._backoff.update(x, y)

    def backoff_terms(self, names: Any) -> tuple[np.ndarray, np.ndarray, float]:
        """The backoff inside a running set of entities ``names`` (k,): ``A`` (k,) the weight of the
        entity model for each member, and the backoff's weights ``w`` (d,) and intercept ``b``.

        Member ``a`` of a running set predicts ``A[a] * entity model + (1 - A[a]) * (b + w . phi_a)``
        (1.0 for a member alone with ``alone_is_solo``), as :meth:`predict` does; ``w`` and ``b``
        include ``backoff_scale_``.

        Examples
        --------
        >>> p = EntityRLS(backoff_evidence=2.0).fit([[0.0], [0.0]], [1.5, 1.5], entities=Entities.from_lists(
        ...     ["a", "b"], [{"b": 1.0}, {"a": 1.0}]))
        >>> A, w, b = p.backoff_terms(["a", "new"])
        >>> A.tolist()
        [0.5, 0.0]
        """
        names = tuple(map(str, names))
        d = 0 if self._d is None else self._d
        if self._g is None or not self._backs_off:
            return np.ones(len(names)), np.zeros(d), PRIOR_SLOWDOWN
        memo = getattr(self, "_weight_memo", None)
        key = (names, len(self._names), id(self._evidence))
        if memo is not None and memo[0] == key and EK.same_values(memo[1], self._evidence):
            A = memo[2]           # each entity's evidence unchanged since the last ask
        else:
            A = self._weights_of(self._ids_cached(names))
            A.flags.writeable = False
            self._weight_memo = (key, self._evidence.copy(), A)
        if self._backoff.n_features_in_ is None:
            return A, np.zeros(d), PRIOR_SLOWDOWN
        return A, self._scale * self._backoff.coef_, self._scale * self._backoff.intercept_

    def _run_update(self, X: np.ndarray, y: np.ndarray, ent: Entities | None) -> int:
        if ent is None:
            own, ptr, co, w, vmap, has = (_OWN0 if X.shape[0] == 1 else np.zeros(X.shape[0], dtype=np.int64),
                                          _PTR0 if X.shape[0] == 1 else np.zeros(X.shape[0] + 1, dtype=np.int64),
                                          _NO_I, _NO_F, _NO_V, 0)
        else:
            own, ptr, co, w, vmap, has = ent.own, ent.indptr, ent.co, ent.weight, self._vmap_for(ent), 1
        return int(_FAST.update_rows(self._g, self._est, self._P, self._etab,
                                     self._ptab, vmap, X, y, own, ptr, co, w, has))

    def _learn(self, X: np.ndarray, y: np.ndarray, ent: Entities | None = None,
               saved: dict[str, Any] | None = None) -> None:
        """Learn the rows; any refusal restores ``saved`` (taken here when not given: the state before)."""
        if saved is None:
            saved = self._snapshot()
        if ent is not None and self.entity_terms and self._is_full() and X.shape[0] > 1:
            # the joint covariance forgets per observation: create each entity at its first row (one
            # snapshot for all the rows: a refusal anywhere restores the state before the first). The
            # rows between two that name something new learn in one call (one Kalman step per row, in
            # order, exactly as one by one)
            bad = int(ER.check_rows(self._g, X, y))
            if bad != OK:
                raise _error(*split_code(bad), self._d)
            want_pairs = self._var["pair_var"] > 0
            start = 0
            for i, r in enumerate(ent.split_rows()):
                if _FAST.count_missing(self._etab, self._ptab, self._vmap_for(r), r.own, r.indptr, r.co, want_pairs):
                    if i > start:
                        self._learn_span(X, y, ent, start, i, saved)
                    self._create_missing(r)
                    start = i
            self._learn_span(X, y, ent, start, X.shape[0], saved)
            return
        if ent is not None and self.entity_terms:
            self._create_missing(ent)
        code = self._run_update(X, y, ent)
        if code != OK:
            self._restore(saved)
            raise _error(*split_code(code), self._d)
        try:
            self._learned(X, y, ent)
        except InterfpredError:
            self._restore(saved)
            raise

    def _learn_span(self, X: np.ndarray, y: np.ndarray, ent: Entities, lo: int, hi: int,
                    saved: dict[str, Any]) -> None:
        """Learn rows ``lo:hi`` that name nothing new (the joint-covariance path); a refusal restores ``saved``."""
        Xs, ys, es = X[lo:hi], y[lo:hi], ent.take(np.arange(lo, hi))
        code = self._run_update(Xs, ys, es)
        if code != OK:
            self._restore(saved)
            status, row = split_code(code)
            raise _error(status, lo + row, self._d)
        try:
            self._learned(Xs, ys, es)
        except InterfpredError:
            self._restore(saved)
            raise

    def _predict_rows(self, X: np.ndarray, entities: Entities | None = None) -> np.ndarray:
        out = np.empty(X.shape[0])
        self._run_predict(X, entities, out)
        if entities is not None and self._backs_off and X.shape[0]:
            a = self._weights(entities)
            low = np.flatnonzero((a < 1.0) & self._learned_rows(entities))
            if low.size:
                out[low] = a[low] * out[low] + (1.0 - a[low]) * self._scale * self._backoff.predict(X[low])
        return out

    def _run_predict(self, X: np.ndarray, ent: Entities | None, out: np.ndarray) -> int:
        if ent is None:
            n = X.shape[0]
            own, ptr, co, w, vmap, has = (_OWN0 if n == 1 else np.zeros(n, dtype=np.int64),
                                          _PTR0 if n == 1 else np.zeros(n + 1, dtype=np.int64), _NO_I, _NO_F,
                                          _NO_V, 0)
        else:
            own, ptr, co, w, vmap, has = ent.own, ent.indptr, ent.co, ent.weight, self._vmap_for(ent), 1
        return _FAST.predict_rows(self._g, self._est, self._etab, self._ptab, vmap, X, own, ptr, co, w, has, out)

    def projection_terms(self, names: Any) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray,
                                                     np.ndarray, float]:
        """Everything a what-if projection reads of this predictor beside entities ``names`` (k,), in one call:
        ``(w, b, S, M, A, w2, b2)``.

        ``w`` and ``b`` are the population model's weights and intercept (``coef_`` and ``intercept_``;
        before any row, no weights and the prior); ``S`` and ``M`` are :meth:`pairwise_terms`; ``A``, ``w2``
        and ``b2`` are :meth:`backoff_terms`. The arrays are read-only. The answer is kept while the
        names and every value it was read from are the same (a tracker asks for the same entities in
        every what-if between two events), so asking again costs one comparison of the model's state:
        pass the same tuple of names to make the names' comparison free.

        Examples
        --------
        >>> p = EntityRLS(pair_var=0.0).fit([[0.0], [1.0]], [1.5, 1.2], entities=Entities.from_lists(
        ...     ["a", "b"], [{"b": 1.0}, {"a": 1.0}]))
        >>> w, b, S, M, A, w2, b2 = p.projection_terms(("a", "b"))
        >>> bool(np.array_equal(M, p.pairwise_terms(["a", "b"])[1])), p.projection_terms(("a", "b"))[3] is M
        (True, True)
        """
        memo = getattr(self, "_terms_memo", None)
        state = self._terms_state()
        if memo is not None and (memo[0] is names or memo[0] == names) and memo[1] == state:
            return memo[2]
        key = names if isinstance(names, tuple) and all(type(s) is str for s in names) else tuple(map(str, names))
        if memo is not None and memo[0] == key and memo[1] == state:
            self._terms_memo = (names, memo[1], memo[2])
            return memo[2]
        d = 0 if self._d is None else self._d
        if self._g is None:
            w, b = np.zeros(d), (0.0 if self.log_target else PRIOR_SLOWDOWN)
        else:
            w, b = self.coef_, self.intercept_
        S, M = self.pairwise_terms(key)
        A, w2, b2 = self.backoff_terms(key)
        w2 = np.array(w2, dtype=np.float64)
        for a in (w, w2):
            a.flags.writeable = False
        out = (w, float(b), S, M, A, w2, float(b2))
        self._terms_memo = (names, state, out)
        return out

    def _terms_state(self) -> tuple[Any, ...]:
        """What :meth:`projection_terms` depends on, as a value to compare: the bytes of the compact header
        and weights ``g``, of the entity means, the evidence and the backoff's state (equal bytes: the
        same state, NaN included), and the sizes and identities of the tables."""
        g = self._g
        if g is None:
            return (None,)
        boff = self._backoff.compiled_state if self._backs_off else None
        return (g.tobytes(), self._est[EK.EST_MEAN].tobytes(), self._evidence.tobytes(),
                b"" if boff is None else boff.tobytes(), id(g), id(self._est), id(self._etab), id(self._ptab),
                id(self._backoff), len(self._names), self._np, self._d, self._scale)

    def pairwise_terms(self, names: Any) -> tuple[np.ndarray, np.ndarray]:
        """The entity part of predictions beside entities ``names`` (k,).

        Returns ``S`` (k,) and ``M`` (k, k): in a running set where a batch of ``names[a]`` runs beside
        batches of ``names[b]`` (each co-runner with weight 1, two batches of one entity too), its
        model value is ``g(phi_a) + S[a] min(1, co-runners) + sum over the co-runners of M[a, b]``
        (before ``exp`` with ``log_target``; a batch alone predicts 1.0 with ``alone_is_solo``).
        ``M[a, a]`` is what a second batch of the same entity adds. A tracker's what-if projection
        uses this to predict every projected segment without building entity tables, asking once per
        distinct entity. Unknown names give 0.

        Examples
        --------
        >>> p = EntityRLS(pair_var=0.0).fit([[0.0], [0.0]], [1.5, 1.5], entities=Entities.from_lists(
        ...     ["a", "b"], [{"b": 1.0}, {"a": 1.0}]))
        >>> S, M = p.pairwise_terms(["a", "b", "new"])
        >>> M.shape, float(M[0, 2]), float(M[2, 2])
        ((3, 3), 0.0, 0.0)
        """
        names = tuple(map(str, names))
        k = len(names)
        if self._g is None or not self.entity_terms:
            return np.zeros(k), np.zeros((k, k))
        g, est = self._g, self._est
        key = (names, len(self._names), id(est), id(self._etab), id(self._ptab), g[EK.N_WEIGHTS],
               g[EK.ENT_N_FULL], g[EK.ENT_RANK])
        memo = getattr(self, "_pair_memo", None)
        # the terms are a function of the entity means and tables: kept while the means are the same (a
        # tracker asks for the same entities in every what-if between two finishes)
        if memo is not None and memo[0] == key and EK.same_values(memo[1], est[EK.EST_MEAN]):
            return memo[2], memo[3]
        S, M = np.zeros(k), np.zeros((k, k))
        EK.pairwise_terms(g, est, self._etab, self._ptab, self._ids_cached(names), S, M)
        S.flags.writeable = False
        M.flags.writeable = False
        self._pair_memo = (key, est[EK.EST_MEAN].copy(), S, M)
        return S, M

