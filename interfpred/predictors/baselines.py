"""The three baselines every accuracy number is shown beside (docs/predictors.md).

:class:`NoInterference` (slowdown 1, always), :class:`GlobalMean` (the running mean of every
target) and :class:`PairMean` (the running mean per model and co-runner models, read from an
:class:`~interfpred.data.entities.Entities` table) follow the contract of every predictor and ignore
the feature values, so a model that loses to one of them has learned less than a table of averages.
Each one's ``merge(other)`` absorbs what a copy learned on other rows (another GPU), exactly: the
merged means are those of one baseline fed both sets of rows, to rounding.

Examples
--------
>>> import numpy as np
>>> from interfpred.data.entities import Entities
>>> X = np.zeros((4, 2)); y = np.array([2.0, 4.0, 1.5, 3.0])
>>> ent = Entities.from_lists(["a", "a", "b", "a"], [{"b": 1.0}, {"b": 1.0}, {"a": 1.0}, {"c": 1.0}])
>>> NoInterference().fit(X, y).predict(X[0])
1.0
>>> GlobalMean().fit(X, y).predict(X[0])
2.625
>>> pm = PairMean().fit(X, y, entities=ent)
>>> new = Entities.from_lists(["a", "a", "z"], [{"b": 1.0}, {"z": 1.0}, {}])
>>> pm.predict(np.zeros((3, 2)), entities=new).tolist()   # pair, then the model's, then the global mean
[3.0, 3.0, 2.625]
"""

from __future__ import annotations

import abc
from dataclasses import replace
from typing import Any

import numpy as np

from interfpred.constants import PRIOR_SLOWDOWN
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.predictors.base import BasePredictor
from interfpred.predictors.inputs import check_target

__all__ = ["GlobalMean", "NoInterference", "PairMean"]


def _merge_mean(a: list, b: list) -> list:
    """Two running ``[mean, count, weight sum]`` accumulators as one (the weighted mean of both)."""
    if b[2] == 0:
        return list(a)
    if a[2] == 0:
        return list(b)
    w = a[2] + b[2]
    return [a[0] + (b[0] - a[0]) * (b[2] / w), a[1] + b[1], w]


def _finite_count(state: dict[str, Any], key: str) -> list:
    """``[mean, count, weight sum]`` from a state entry."""
    vals = list(state[key])
    if len(vals) != 3:
        raise InterfpredError(f"state {key!r} holds {vals!r}; expected [mean, count, weight sum]")
    mean, n, wsum = float(vals[0]), int(vals[1]), float(vals[2])
    if not np.isfinite(mean) or n < 0 or not np.isfinite(wsum) or wsum < 0:
        raise InterfpredError(f"state {key!r} holds {vals!r}; expected a finite mean, a count and a weight sum >= 0")
    return [mean, n, wsum]


class _Baseline(BasePredictor):
    """What the three baselines share: the checks of ``merge``."""

    def _merge_ready(self, other: Any) -> bool:
        """Check that ``other`` can be merged into this one (the same class and hyperparameters, the same
        width once both have one) and take its width if this one has none; False when ``other`` has
        no width (it has seen no rows)."""
        if type(other) is not type(self):
            raise InterfpredError(f"merge needs a {type(self).__name__}, got {type(other).__name__}")
        mine, theirs = self.get_params(), other.get_params()
        if mine != theirs:
            raise InterfpredError(f"merge needs the same hyperparameters: {mine} vs {theirs}")
        d_other = other.n_features_in_
        if d_other is None:
            return False
        if self._d is None:
            self._allocate(d_other)
        if self._d != d_other:
            raise InterfpredError(f"merge needs the same width: {self._d} features vs {d_other}")
        return True


class _Constant(_Baseline):
    """A baseline whose prediction does not depend on the features: zero weights and a constant."""

    @abc.abstractmethod
    def _constant(self) -> float:
        """The prediction, whatever the features."""

    @property
    def coef_(self) -> np.ndarray:
        """Zero weights, one per feature: the prediction never depends on the features."""
        if self._d is None:
            raise AttributeError("coef_ is not available before fit/update")
        return np.zeros(self._d)

    @property
    def intercept_(self) -> float:
        """The constant prediction."""
        if self._d is None:
            raise AttributeError("intercept_ is not available before fit/update")
        return self._constant()


class NoInterference(_Constant):
    """Predicts slowdown 1 (no interference) for every row; learns nothing.

    ``update`` validates its input and learns nothing (``tags.learns_online`` is False).

    Examples
    --------
    >>> NoInterference().fit([[0.3], [0.9]], [1.4, 2.0]).predict([[5.0]])
    array([1.])
    """

    kind = "no_interference"
    #: ``fit`` takes ``sample_weight`` (and learns nothing from it either).
    tags = replace(BasePredictor.tags, learns_online=False, supports_weights=True, baseline=True, mergeable=True)

    def __init__(self, *, target: str | None = None) -> None:
        self.target = check_target(target)
        self._d = None

    def _allocate(self, d: int) -> None:
        self._d = d

    def _learn(self, X: np.ndarray, y: np.ndarray, entities: Any = None) -> None:
        """Nothing to learn: the prediction is slowdown 1 whatever the data (``fit`` and ``update`` only
        check the rows and fix the width)."""

    def _predict_rows(self, X: np.ndarray, entities: Any = None) -> np.ndarray:
        return np.full(X.shape[0], PRIOR_SLOWDOWN)

    def _constant(self) -> float:
        return PRIOR_SLOWDOWN

    def merge(self, other: NoInterference) -> NoInterference:
        """Absorb another copy (nothing to absorb: it learns nothing); checks it and takes its width
        if this one has none yet; returns self.

        Examples
        --------
        >>> NoInterference().merge(NoInterference().fit([[0.0]], [2.0])).n_features_in_
        1
        """
        self._merge_ready(other)
        return self

    @property
    def n_seen_(self) -> int:
        """Always 0: this baseline learns nothing from the rows it is given."""
        return 0

    def _get_state(self) -> dict[str, Any]:
        return {}

    def _set_state(self, state: dict[str, Any], d: int) -> None:
        self._d = d


class GlobalMean(_Constant):
    """The running mean of every target learned; the prior (1.0) before any.

    Examples
    --------
    >>> g = GlobalMean()
    >>> g.update([[0.0], [0.0]], [2.0, 4.0])
    >>> g.predict([1.0]), g.n_seen_
    (3.0, 2)
    """

    kind = "global_mean"
    #: ``fit`` takes ``sample_weight`` (a weighted mean).
    tags = replace(BasePredictor.tags, supports_weights=True, baseline=True, mergeable=True)

    def __init__(self, *, target: str | None = None) -> None:
        self.target = check_target(target)
        self._d = None
        self._mean = PRIOR_SLOWDOWN
        self._n = 0
        self._w = 0.0

    def _allocate(self, d: int) -> None:
        self._d = d
        self._mean, self._n, self._w = PRIOR_SLOWDOWN, 0, 0.0

    def _fit_rows(self, X: np.ndarray, y: np.ndarray, *, sample_weight: np.ndarray | None, entities: Any) -> None:
        self._accumulate(y, sample_weight)

    def _learn(self, X: np.ndarray, y: np.ndarray, entities: Any = None) -> None:
        self._accumulate(y, None)

    def _accumulate(self, y: np.ndarray, w: np.ndarray | None) -> None:
        acc: list[Any] = [self._mean, self._n, self._w]
        for i, t in enumerate(y.tolist()):
            _push(acc, t, 1.0 if w is None else float(w[i]))
        self._mean, self._n, self._w = float(acc[0]), int(acc[1]), float(acc[2])

    def _predict_rows(self, X: np.ndarray, entities: Any = None) -> np.ndarray:
        return np.full(X.shape[0], self._mean if self._n else PRIOR_SLOWDOWN)

    @property
    def mean_(self) -> float:
        """The running mean (the prior before any target)."""
        return self._mean if self._n else PRIOR_SLOWDOWN

    @property
    def n_seen_(self) -> int:
        """Targets learned since the last fit."""
        return self._n

    def _constant(self) -> float:
        return self.mean_

    def merge(self, other: GlobalMean) -> GlobalMean:
        """Absorb what ``other`` learned (the same hyperparameters; another GPU's rows); returns self.

        The merged mean is the weighted mean of both, as one baseline fed both sets of rows.

        Raises
        ------
        InterfpredError
            ``other`` is not a GlobalMean with the same hyperparameters and width; nothing changes.

        Examples
        --------
        >>> a = GlobalMean().fit([[0.0], [0.0]], [2.0, 4.0])
        >>> a.merge(GlobalMean().fit([[0.0]], [6.0])).mean_, a.n_seen_
        (4.0, 3)
        """
        if self._merge_ready(other):
            self._mean, self._n, self._w = _merge_mean([self._mean, self._n, self._w],
                                                       [other._mean, other._n, other._w])
        return self

    def _get_state(self) -> dict[str, Any]:
        return {"mean": [self._mean, self._n, self._w]}

    def _set_state(self, state: dict[str, Any], d: int) -> None:
        self._mean, self._n, self._w = _finite_count(state, "mean")
        self._d = d


class PairMean(_Baseline):
    """Running mean per (model, sorted co-runner models); else the model's mean; else the global mean.

    Rows are keyed by :meth:`Entities.pair_keys` of the ``entities=`` table given to ``fit``,
    ``update`` and ``predict`` (one entry per row). Without a table it learns and predicts the
    global mean only. State grows with the distinct keys seen (bounded by the models deployed),
    not with the stream.

    Examples
    --------
    >>> from interfpred.data.entities import Entities
    >>> ent = Entities.from_lists(["a", "b"], [{"b": 1.0}, {"a": 1.0}])
    >>> p = PairMean()
    >>> p.update([[0.0], [0.0]], [2.0, 1.2], entities=ent)
    >>> p.predict([0.0], entities=ent.take([1]))
    1.2
    >>> p.n_pairs_, p.n_models_
    (2, 2)
    """

    kind = "pair_mean"
    #: ``fit`` takes ``sample_weight`` (weighted means).
    tags = replace(BasePredictor.tags, uses_entities=True, supports_weights=True, entity_terms=True, baseline=True,
                   mergeable=True)

    def __init__(self, *, target: str | None = None) -> None:
        self.target = check_target(target)
        self._d = None
        self._global = [PRIOR_SLOWDOWN, 0, 0.0]
        self._models: dict[str, list] = {}
        self._pairs: dict[tuple[str, tuple[str, ...]], list] = {}

    # -- learning --------------------------------------------------------------------------------
    def _fit_rows(self, X: np.ndarray, y: np.ndarray, *, sample_weight: np.ndarray | None,
                  entities: Entities | None) -> None:
        self._learn_keys(y, None if entities is None else entities.pair_keys(), sample_weight)

    def _learn(self, X: np.ndarray, y: np.ndarray, entities: Entities | None = None) -> None:
        self._learn_keys(y, None if entities is None else entities.pair_keys())

    def _learn_keys(self, y: np.ndarray, keys: list | None, w: np.ndarray | None = None) -> None:
        for i, t in enumerate(y.tolist()):
            wi = 1.0 if w is None else float(w[i])
            if wi == 0.0:
                continue
            _push(self._global, t, wi)
            if keys is not None:
                own, co = keys[i]
                _push(self._models.setdefault(own, [0.0, 0, 0.0]), t, wi)
                _push(self._pairs.setdefault((own, co), [0.0, 0, 0.0]), t, wi)

    def _allocate(self, d: int) -> None:
        self._d = d
        self._global = [PRIOR_SLOWDOWN, 0, 0.0]
        self._models, self._pairs = {}, {}

    def _predict_rows(self, X: np.ndarray, entities: Entities | None = None) -> np.ndarray:
        g = self._global[0] if self._global[1] else PRIOR_SLOWDOWN
        if entities is None:
            return np.full(X.shape[0], g)
        out = np.empty(X.shape[0])
        for i, key in enumerate(entities.pair_keys()):
            hit = self._pairs.get(key) or self._models.get(key[0])
            out[i] = hit[0] if hit else g
        return out

    def merge(self, other: PairMean) -> PairMean:
        """Absorb what ``other`` learned (the same hyperparameters; another GPU's rows); returns self.

        Every global, per-model and per-pair mean becomes the weighted mean of both sides' (a key
        only one side saw keeps that side's); keys this one lacks come after its own, in
        ``other``'s order.

        Raises
        ------
        InterfpredError
            ``other`` is not a PairMean with the same hyperparameters and width; nothing changes.

        Examples
        --------
        >>> from interfpred.data.entities import Entities
        >>> a = PairMean().fit([[0.0]], [2.0], entities=Entities.from_lists(["a"], [{"b": 1.0}]))
        >>> b = PairMean().fit([[0.0], [0.0]], [4.0, 3.0], entities=Entities.from_lists(["a", "c"], [{"b": 1.0}, {}]))
        >>> a.merge(b).predict([[0.0]] * 2, entities=Entities.from_lists(["a", "c"], [{"b": 1.0}, {}])).tolist()
        [3.0, 3.0]
        >>> a.n_pairs_, a.n_seen_
        (2, 3)
        """
        if self._merge_ready(other):
            self._global = _merge_mean(self._global, other._global)
            for k, acc in other._models.items():
                self._models[k] = _merge_mean(self._models.get(k, [0.0, 0, 0.0]), acc)
            for key, acc in other._pairs.items():
                self._pairs[key] = _merge_mean(self._pairs.get(key, [0.0, 0, 0.0]), acc)
        return self

    @property
    def n_pairs_(self) -> int:
        """Distinct (model, co-runner set) keys learned."""
        return len(self._pairs)

    @property
    def n_models_(self) -> int:
        """Distinct own models learned."""
        return len(self._models)

    @property
    def n_seen_(self) -> int:
        """Targets learned since the last fit."""
        return int(self._global[1])

    @property
    def coef_(self) -> np.ndarray:
        """Not defined: the pair mean has no feature weights (its predictions are per-pair and
        per-model means, :attr:`n_pairs_` and :attr:`n_models_` of them); raises AttributeError."""
        raise AttributeError("PairMean has no coef_: it predicts running means per (model, co-runners) key, "
                             "not a function of the features")

    @property
    def intercept_(self) -> float:
        """Not defined, as :attr:`coef_` (the global mean it falls back to is not an intercept);
        raises AttributeError."""
        raise AttributeError("PairMean has no intercept_: it predicts running means per (model, co-runners) key, "
                             "not a function of the features")

    # -- persistence -----------------------------------------------------------------------------
    def _get_state(self) -> dict[str, Any]:
        return {"global": list(self._global),
                "models": [[k, *acc] for k, acc in self._models.items()],
                "pairs": [[own, list(co), *acc] for (own, co), acc in self._pairs.items()]}

    def _set_state(self, state: dict[str, Any], d: int) -> None:
        glob = _finite_count(state, "global")
        models = {str(k[0]): _finite_count({"v": k[1:]}, "v") for k in state["models"]}
        pairs = {(str(k[0]), tuple(str(c) for c in k[1])): _finite_count({"v": k[2:]}, "v") for k in state["pairs"]}
        self._global, self._models, self._pairs, self._d = glob, models, pairs, d


def _push(acc: list, t: float, w: float = 1.0) -> None:
    """Add target ``t`` with weight ``w`` to a running ``[mean, count, weight sum]``."""
    if w <= 0.0:
        return
    acc[1] += 1
    acc[2] += w
    acc[0] += w * (t - acc[0]) / acc[2]
