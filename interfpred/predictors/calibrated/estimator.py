"""Calibrated quantiles of any predictor: online conformal bounds that keep their coverage under drift.

:class:`Calibrated` wraps a predictor and learns, from the residuals it observes on every
``update``, a threshold per requested quantile so that ``predict(X, quantile=q)`` is a bound
the target falls below with long-run frequency ``q``; point predictions are the wrapped
predictor's, unchanged. Each observation is scored before the wrapped predictor learns from it,
``s = (y - m(x)) / u(x)`` (``u`` the relative or the predictive-std scale), and the ``q`` bound
is ``m(x) + u(x) * theta_q`` with ``theta_q`` a split-conformal quantile of the last ``window``
scores, moved by adaptive conformal inference (``method="aci"``, Gibbs & Candes, NeurIPS 2021),
read at level ``q`` (``"split"``) or frozen after ``fit`` (``"fixed"``). Scores, methods,
levels, entity groups, what is guaranteed and the cost are described in docs/predictors.md
("Calibrated bounds").
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from interfpred._core.limits import check_limit
from interfpred.constants import (
    CALIBRATED_CALIBRATION_SHARE,
    CALIBRATED_GAMMA,
    CALIBRATED_GROUPINGS,
    CALIBRATED_METHOD,
    CALIBRATED_METHODS,
    CALIBRATED_MIN_GROUP,
    CALIBRATED_MIN_SCALE,
    CALIBRATED_QUANTILES,
    CALIBRATED_SCALES,
    CALIBRATED_TAU_RANGE,
    CALIBRATED_WINDOW,
    QUANTILE_LEVEL_ATOL,
)
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.predictors.base import BasePredictor
from interfpred.predictors.calibrated import _score_windows as K
from interfpred.predictors.calibrated.conformal import relative_scale, relative_scales, std_scale, std_scales
from interfpred.predictors.calibrated.state import CalibratedStateMixin
from interfpred.predictors.inputs import as_rows, as_targets, check_entities, check_target, is_integer
from interfpred.predictors.registry import PredictorSpec, make_predictor

__all__ = ["BoundForm", "Calibrated"]


class BoundForm(NamedTuple):
    """A :class:`Calibrated` bound at one level, as compiled consumers evaluate it without calling ``predict``.

    The bound of row ``i`` is ``m + u * theta[i]``, with ``m`` the point prediction of
    ``predictor`` and ``u`` the score scale: ``max(|m|, min_scale)`` when ``relative``, else
    ``max(s, min_scale * max(|m|, 1))`` with ``s`` the predictor's predictive standard
    deviation (``predict(X, return_std=True)``). ``theta`` holds each row's score threshold (its
    entity group's, or the global one), or one threshold for every row (length 1): with global
    groups, and before any calibration (then 0).
    """

    predictor: Any
    theta: np.ndarray
    relative: bool
    min_scale: float


def _levels(quantiles: tuple[float, ...]) -> np.ndarray:
    """Sorted distinct levels: every quantile and its complement."""
    vals = {round(q, 12) for q in quantiles} | {round(1.0 - q, 12) for q in quantiles}
    return np.array(sorted(vals), dtype=np.float64)


class Calibrated(CalibratedStateMixin, BasePredictor):
    """Conformal quantile bounds around any predictor, kept calibrated online.

    Parameters
    ----------
    predictor
        The wrapped predictor: an object, a registered kind (``"rls"``) or a spec dict; default
        :class:`~interfpred.RLS`. It is never modified: ``fit`` trains a clone, and the first
        ``update`` without ``fit`` copies it (a trained predictor keeps what it learned).
    quantiles
        Levels in (0, 1) to calibrate; each comes with its complement.
    method
        ``"aci"``, ``"split"`` or ``"fixed"`` (module docstring).
    window
        Scores kept per group.
    gamma
        ACI step size.
    scale
        ``"relative"``, ``"std"`` or ``"auto"`` (``"std"`` when the predictor has ``tags.predicts_std``).
    groups
        ``"global"``, or ``"entity"`` for per-entity (Mondrian) thresholds when entities are given.
    min_group
        Scores an entity group needs before its threshold is used.
    calibration_share
        Share of ``fit``'s rows scored out of sample.

    Examples
    --------
    >>> Calibrated("rls", quantiles=(0.99,), method="split")
    Calibrated(predictor='rls', quantiles=(0.99,), method='split')
    >>> Calibrated().predict([0.5, 0.5], quantile=0.9)          # fresh: the wrapped prior
    1.0
    >>> import numpy as np
    >>> from interfpred import RLS
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((3000, 2))
    >>> y = (1.0 + X @ [1.0, 0.5]) * np.exp(0.1 * rng.standard_normal(3000))
    >>> cal = Calibrated(RLS(), quantiles=(0.9,), scale="relative").fit(X[:1000], y[:1000])
    >>> hits = []
    >>> for x, t in zip(X[1000:], y[1000:]):
    ...     hits.append(t <= cal.predict(x, quantile=0.9))
    ...     cal.update(x, float(t))
    >>> bool(abs(np.mean(hits) - 0.9) < 0.02)
    True
    >>> bool(np.isclose(cal.predict(X[0]), cal.predictor_.predict(X[0])))   # point predictions are unchanged
    True
    """

    kind = "calibrated"
    #: It wraps a predictor (``predictor_``) and gives latency bounds at ``levels_``; the rest of its
    #: tags are its predictor's, set per instance.
    tags = replace(BasePredictor.tags, wraps=True, gives_bounds=True)
    _contract_params = [{}, {"method": "split", "window": 40}, {"predictor": "online_sgd", "method": "fixed"},
                    {"predictor": "online_sgd", "scale": "relative", "window": 30},
                    {"predictor": "pair_mean", "groups": "entity", "quantiles": (0.8,)}]

    def __init__(self, predictor: Any = None, *, quantiles: tuple[float, ...] = CALIBRATED_QUANTILES,
                 method: str = CALIBRATED_METHOD, window: int = CALIBRATED_WINDOW, gamma: float = CALIBRATED_GAMMA,
                 scale: str = "auto", groups: str = "global", min_group: int = CALIBRATED_MIN_GROUP,
                 calibration_share: float = CALIBRATED_CALIBRATION_SHARE, target: str | None = None) -> None:
        self.predictor = predictor
        self.target = check_target(target)
        try:
            self.quantiles = tuple(float(q) for q in quantiles)
        except (TypeError, ValueError):
            raise InterfpredError(f"quantiles must be a sequence of numbers in (0, 1), got {quantiles!r}") from None
        self.method = method
        self.window = window
        self.gamma = gamma
        self.scale = scale
        self.groups = groups
        self.min_group = min_group
        self.calibration_share = calibration_share
        self._check_params()
        self._template = self._build(predictor)
        if self.target is not None:    # the wrapped predictor learns the same target
            self._template = self._template.with_target(self.target)
        inner = self._template.tags
        # the calibration's capabilities are the wrapped predictor's, plus entities for per-entity groups
        self.tags = replace(type(self).tags, learns_online=inner.learns_online, fixed_width=inner.fixed_width,
                            uses_entities=self.groups == "entity" or inner.uses_entities,
                            entity_key=inner.entity_key, entity_terms=inner.entity_terms)
        self._online = bool(inner.learns_online)
        self._levels = _levels(self.quantiles)
        self._level_pos = {float(v): i for i, v in enumerate(self._levels.tolist())}
        self._th0 = K.HEADER + self._levels.shape[0]    # offset of the thresholds in a group row
        self._par = K.params(float(self.gamma), *CALIBRATED_TAU_RANGE, K.METHOD_CODES[self.method])
        self._reset()

    # ------------------------------------------------------------------ parameters
    @classmethod
    def param_names(cls) -> list[str]:
        """``predictor`` (positional) and the keyword-only hyperparameters."""
        return ["predictor", *super().param_names()]

    def _check_params(self) -> None:
        qs = self.quantiles
        if not qs or not all(math.isfinite(q) and 0.0 < q < 1.0 for q in qs):
            raise InterfpredError(f"quantiles must be numbers in (0, 1), at least one, got {qs!r}")
        for name, allowed in (("method", CALIBRATED_METHODS), ("scale", CALIBRATED_SCALES),
                              ("groups", CALIBRATED_GROUPINGS)):
            if getattr(self, name) not in allowed:
                raise InterfpredError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if not is_integer(self.window) or self.window < 2:
            raise InterfpredError(f"window must be an integer >= 2, got {self.window!r}")
        check_limit("WINDOW_MAX", int(self.window), "window")  # before the ring buffer is allocated
        if not is_integer(self.min_group) or self.min_group < 1:
            raise InterfpredError(f"min_group must be a positive integer, got {self.min_group!r}")
        for name in ("gamma", "calibration_share"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not 0.0 < v < 1.0:
                raise InterfpredError(f"{name} must be a number in (0, 1), got {v!r}")

    @staticmethod
    def _build(p: Any) -> BasePredictor:
        if p is None:
            return make_predictor("rls")
        if isinstance(p, (str, dict, PredictorSpec)):
            return make_predictor(p)
        if isinstance(p, BasePredictor):
            return p
        raise InterfpredError(f"predictor must be an interfpred predictor, a kind or a spec dict, got {p!r}")

    def clone(self) -> Calibrated:
        """An untrained copy: the same hyperparameters around an untrained clone of the predictor."""
        p = self.predictor
        params = {k: v for k, v in self.get_params().items() if k != "predictor"}
        return type(self)(p.clone() if isinstance(p, BasePredictor) else copy.deepcopy(p), **params)

    def _declare(self, target: str) -> None:
        """A copy declared for ``target`` declares the predictor it wraps, template and trained one alike."""
        self.target = target
        self._template = self._template.with_target(target)
        if self._inner is not None:
            self._inner = self._inner.with_target(target)

    # ------------------------------------------------------------------ state
    def _reset(self) -> None:
        self._inner: Any = None          # the trained wrapped predictor (None before fit/update)
        self._state: Any = None          # (groups, row) float array (None before fit/update)
        self._group_index: dict[str, int] = {}
        self._group_names: list[str] = []
        self._yq: np.ndarray | None = None
        self._scale_mode = self._resolve_scale()
        self._relative = self._scale_mode == "relative"
        self._d = None

    def _resolve_scale(self) -> str:
        if self.scale != "auto":
            return self.scale
        return "std" if self._template.tags.predicts_std else "relative"

    def _allocate(self, d: int) -> None:
        self._reset()
        self._state = K.new_state(1, self._levels, self.window)
        self._group_index = {}
        self._group_names = []
        self._d = d

    def _now(self) -> BasePredictor:
        return self._inner if self._inner is not None else self._template

    def _kw(self, ent: Entities | None) -> dict[str, Any]:
        return {"entities": ent} if ent is not None and self._template.tags.uses_entities else {}

    def _entities_arg(self, entities: Any, n: int) -> Entities | None:
        """Entities are taken whatever the tags: with global groups around a predictor that uses none,
        they are checked and unused."""
        return check_entities(entities, n)

    def _mean_scale(self, p: Any, X: np.ndarray, ent: Entities | None) -> tuple[np.ndarray, np.ndarray]:
        kw = self._kw(ent)
        if self._scale_mode == "std":
            mean, std = p.predict(X, return_std=True, **kw)
            mean = np.asarray(mean, dtype=np.float64).reshape(-1)
            std = np.ascontiguousarray(np.asarray(std, dtype=np.float64).reshape(-1))
            return mean, std_scales(np.ascontiguousarray(mean), std, CALIBRATED_MIN_SCALE)
        mean = np.asarray(p.predict(X, **kw), dtype=np.float64).reshape(-1)
        return mean, relative_scales(np.ascontiguousarray(mean), CALIBRATED_MIN_SCALE)

    def _row_groups(self, ent: Entities | None, n: int, *, create: bool) -> np.ndarray:
        """Group index per row (0: global); new entities get a group when ``create``."""
        out = np.zeros(n, dtype=np.int64)
        if ent is None or self.groups != "entity":
            return out
        for i, o in enumerate(ent.own.tolist()):
            name = ent.names[o]
            g = self._group_index.get(name)
            if g is None and create:
                self._group_names.append(name)
                g = self._group_index[name] = len(self._group_names)
                self._state = np.vstack([self._state, K.new_state(1, self._levels, self.window)])
            out[i] = 0 if g is None else g
        return out

    def _push(self, groups: np.ndarray, scores: np.ndarray, method: str | None = None) -> None:
        par = self._par if method is None else K.params(float(self.gamma), *CALIBRATED_TAU_RANGE,
                                                        K.METHOD_CODES[method])
        K.push_many(self._state, groups, scores, self._levels, par)

    # ------------------------------------------------------------------ the API
    def _fit_rows(self, X: np.ndarray, y: np.ndarray, *, sample_weight: Any, entities: Entities | None) -> None:
        """Calibrate on out-of-sample scores of the last rows, then fit the predictor on all."""
        ent = entities
        n = X.shape[0]
        n_cal = int(round(float(self.calibration_share) * n))
        m = n - n_cal
        if n_cal >= 1 and m >= 1:
            head = None if ent is None else ent.take(np.arange(m))
            tail = None if ent is None else ent.take(np.arange(m, n))
            aux = self._template.clone().fit(X[:m], y[:m], **self._kw(head))
            groups = self._row_groups(tail, n_cal, create=True)
            scores = self._prequential_scores(aux, X[m:], y[m:], tail)
            self._push(groups, scores, "split" if self.method == "fixed" else None)
            if self.method == "fixed":
                self._state[:, K.FROZEN] = 1.0
        self._inner = self._template.clone().fit(X, y, **self._kw(ent))
        self._yq = np.quantile(y, self._levels)

    def _prequential_scores(self, p: Any, X: np.ndarray, y: np.ndarray, ent: Entities | None) -> np.ndarray:
        """Scores of each row before ``p`` learns from it (``p`` is updated)."""
        n = X.shape[0]
        if not p.tags.learns_online:        # frozen: its predictions do not move, it is never updated
            mean, scale = self._mean_scale(p, X, ent)
            return (y - mean) / scale
        out = np.empty(n)
        ys = y.tolist()
        for i in range(n):
            e = None if ent is None else ent.take([i])
            mean, scale = self._mean_scale(p, X[i], e)
            out[i] = (ys[i] - mean[0]) / scale[0]
            p.update(X[i], ys[i], **self._kw(e))
        return out

    def update(self, X: Any, y: Any, *, entities: Any = None) -> None:
        """Score each row against the bounds in force, then let the wrapped predictor learn from it.

        Rows are taken in order (predict, then learn), so a batch equals a loop of single rows.
        Refused input raises :class:`~interfpred.errors.InterfpredError` and changes nothing.
        """
        BasePredictor.update(self, X, y, entities=entities)

    def _update_one(self, x: np.ndarray, y: float, entities: Any) -> int:
        inner = self._inner
        if entities is not None or inner is None or not y - y == 0.0:
            return -1                            # the checked path
        if self._relative:                       # predict validates x
            m = inner.predict(x)
            s = (y - m) / relative_scale(m, CALIBRATED_MIN_SCALE)
        else:
            m, sd = inner.predict(x, return_std=True)
            s = (y - m) / std_scale(m, sd, CALIBRATED_MIN_SCALE)
        if self._online:
            inner.update(x, y)                   # refuses atomically
        K.push(self._state, 0, s, self._levels, self._par)
        return 0

    def _update_checked(self, X: Any, y: Any, entities: Any) -> None:
        Xa, single = as_rows(X, width=self._width())
        ya = as_targets(y, Xa.shape[0], single)
        ent = self._entities_arg(entities, Xa.shape[0])
        # one row on a trained wrapper cannot fail after validation except inside the wrapped
        # predictor's own (atomic) update, so only batches and the first call need a snapshot
        saved = copy.deepcopy(self.__dict__) if (Xa.shape[0] > 1 or self._d is None) else None
        try:
            if self._d is None:
                self._allocate(Xa.shape[1])
                self._inner = copy.deepcopy(self._template)
            self._learn_rows(Xa, ya, ent)
        except BaseException:
            if saved is None:
                raise
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    def _learn_rows(self, X: np.ndarray, y: np.ndarray, ent: Entities | None) -> None:
        scores = self._prequential_scores(self._inner, X, y, ent)
        groups = self._row_groups(ent, X.shape[0], create=True)
        self._push(groups, scores)

    def _learn(self, X: np.ndarray, y: np.ndarray, entities: Entities | None = None) -> None:
        self._learn_rows(X, y, entities)

    def _level_index(self, quantile: Any) -> int:
        li = self._level_pos.get(quantile) if type(quantile) is float else None
        if li is not None:
            return li
        try:
            q = float(quantile)
        except (TypeError, ValueError):
            raise InterfpredError(f"quantile must be a number, got {quantile!r}") from None
        li = self._level_pos.get(round(q, 12))    # the levels are stored rounded (1 - 0.99 is 0.01)
        if li is not None:
            return li
        hit = np.flatnonzero(np.abs(self._levels - q) < QUANTILE_LEVEL_ATOL)
        if not hit.size:
            known = ", ".join(f"{v:g}" for v in self._levels)
            raise InterfpredError(f"quantile {quantile!r} is not calibrated; calibrated levels: {known} "
                                  "(set quantiles= when building the Calibrated wrapper; CLI: fit --quantiles)")
        return int(hit[0])

    def predict(self, X: Any, return_std: bool = False, *, quantile: float | None = None, entities: Any = None) -> Any:
        """Point predictions, or the bound at ``quantile`` (a calibrated level or its complement).

        Parameters
        ----------
        X
            One row (d,) or rows (n, d).
        return_std
            Refused (``tags.predicts_std`` is False): use ``quantile``.
        quantile
            None for the wrapped predictor's point prediction; else a level of ``quantiles`` or
            ``1 - level``: the returned target is at or above the truth with that long-run frequency.
        entities
            Own and co-runner entities of the rows (per-entity groups, or the wrapped predictor).

        Returns
        -------
        float for one row, else an (n,) array.
        """
        if return_std:
            raise InterfpredError("Calibrated gives bounds, not a standard deviation (tags.predicts_std is False); "
                                  "call predict(X, quantile=q)")
        if quantile is None:
            if entities is None:
                return self._now().predict(X)
            Xa, single = as_rows(X, width=self._width())
            ent = self._entities_arg(entities, Xa.shape[0])
            out = self._now().predict(Xa, **self._kw(ent))
            return float(np.asarray(out).reshape(-1)[0]) if single else out
        li = self._level_pos.get(quantile) if type(quantile) is float else None
        if li is None:
            li = self._level_index(quantile)
        state = self._state
        th = self._th0 + li
        if state is not None and entities is None:   # one global group: the wrapped predictor checks X
            if self._relative:
                m = self._inner.predict(X)
                if isinstance(m, float):             # one row
                    return m + relative_scale(m, CALIBRATED_MIN_SCALE) * state.item(0, th)
                return m + relative_scales(m, CALIBRATED_MIN_SCALE) * state[0, th]
            m, sd = self._inner.predict(X, return_std=True)
            if isinstance(m, float):
                return m + std_scale(m, sd, CALIBRATED_MIN_SCALE) * state.item(0, th)
            return m + std_scales(m, sd, CALIBRATED_MIN_SCALE) * state[0, th]
        Xa, single = as_rows(X, width=self._width())
        ent = self._entities_arg(entities, Xa.shape[0])
        mean, scale = self._mean_scale(self._now(), Xa, ent)
        if state is None:
            out = mean
        else:
            g = self._row_groups(ent, Xa.shape[0], create=False)
            if g.any():
                g = np.where(state[g, K.SEEN] >= self.min_group, g, 0)
            out = mean + scale * state[g, th]
        return float(out[0]) if single else out

    def bound_form(self, quantile: Any, names: list[str] | None = None) -> BoundForm:
        """The bound at ``quantile`` of rows whose own entities are ``names`` (one row when None), as :class:`BoundForm`.

        ``predict(X, quantile=quantile, entities=e)`` equals the form evaluated on ``X`` when
        ``names`` are the own entities of ``e`` (with global groups, any ``names`` of the same
        length give the same thresholds).

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.random((300, 2)); y = 1.0 + X @ [1.0, 0.5] + 0.05 * rng.standard_normal(300)
        >>> cal = Calibrated("online_sgd", quantiles=(0.9,)).fit(X, y)
        >>> form = cal.bound_form(0.9)
        >>> m = cal.predict(X[:1])
        >>> bound = m + np.maximum(np.abs(m), form.min_scale) * form.theta
        >>> bool(np.allclose(bound, cal.predict(X[:1], quantile=0.9), rtol=1e-12))
        True
        """
        li = self._level_index(quantile)
        state = self._state
        if state is None:
            theta = np.zeros(1)
        elif names is None or self.groups != "entity":
            theta = state[0, self._th0 + li:self._th0 + li + 1].copy()
        else:
            g = np.array([self._group_index.get(s, 0) for s in names], dtype=np.int64)
            g = np.where(state[g, K.SEEN] >= self.min_group, g, 0)
            theta = state[g, self._th0 + li]
        return BoundForm(self._now(), theta, self._relative, CALIBRATED_MIN_SCALE)

    def _predict_rows(self, X: np.ndarray, entities: Any = None) -> np.ndarray:
        return np.asarray(self._now().predict(X), dtype=np.float64)
