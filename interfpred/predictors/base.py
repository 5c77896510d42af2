"""The predictor contract and the shared base class.

Every predictor maps feature vectors to slowdowns behind one API::

    p = make_predictor("rls", forgetting=0.99)
    p.fit(X, y)          # optional offline training; resets state; returns self
    p.predict(X)         # (n, d) -> (n,) ; one row (d,) -> float
    p.update(X, y)       # learn: rows (n, d) with y (n,), or one row with a float

A fresh predictor predicts the prior :data:`~interfpred.constants.PRIOR_SLOWDOWN` (1.0,
which is also the prior of the ``rate`` target), so a scheduler never crashes on its first
call.  Bad input raises :class:`~interfpred.errors.InterfpredError` (a ``ValueError``)
naming what was wrong and leaves the state exactly as it was. The registry (build by name,
restore from a file) is :mod:`interfpred.predictors.registry`.

Examples
--------
>>> import numpy as np
>>> from interfpred.predictors import make_predictor
>>> p = make_predictor("rls", forgetting=0.99)
>>> p.predict(np.zeros(3))
1.0
"""

from __future__ import annotations

import abc
import copy
import inspect
import json
import math
import os
from dataclasses import replace
from typing import Any, ClassVar, NamedTuple, Protocol, TypeVar, runtime_checkable

import numpy as np

from interfpred._core.atomic import atomic_write_text, read_json
from interfpred.constants import PRIOR_SLOWDOWN, PRIOR_STD, SCHEMA_VERSION
from interfpred.data.entities import Entities
from interfpred.errors import FrozenPredictorError, InterfpredError
from interfpred.predictors.inputs import (
    F64,
    NDARRAY,
    as_rows,
    as_targets,
    as_weights,
    check_entities,
    check_learnable,
    check_state_header,
    check_target,
)
from interfpred.predictors.registry import predictor_from_state
from interfpred.predictors.tags import PredictorTags

__all__ = ["Predictor", "BasePredictor", "FrozenPredictor", "LinearForm"]


_P = TypeVar("_P", bound="BasePredictor")

#: Probe rows of :meth:`BasePredictor.linear_form` by width: the origin, then the unit rows.
_PROBES: dict[int, np.ndarray] = {}


class LinearForm(NamedTuple):
    """A predictor's prediction written as ``max(intercept + weights . x, lower)``.

    What :meth:`BasePredictor.linear_form` returns for predictors that are affine in their
    features (RLS, OnlineSGD, OfflineLinear, GpuletsModel): compiled consumers, such as the
    tracker's projection, evaluate it without calling the predictor.
    """

    weights: np.ndarray
    intercept: float
    lower: float


@runtime_checkable
class Predictor(Protocol):
    """What every predictor offers (structural type; :class:`BasePredictor` implements it)."""

    tags: PredictorTags

    @property
    def n_features_in_(self) -> int | None: ...

    def fit(self, X: Any, y: Any, *, sample_weight: Any = None, entities: Any = None) -> Predictor: ...

    def predict(self, X: Any, return_std: bool = False) -> Any: ...

    def update(self, X: Any, y: Any) -> None: ...

    def clone(self) -> Predictor: ...

    def get_params(self) -> dict[str, Any]: ...

    def as_river(self) -> Any: ...

    def as_sklearn(self) -> Any: ...

    def save(self, path: str | os.PathLike[str]) -> None: ...


class BasePredictor(abc.ABC):
    """Shared machinery: parameter introspection, input conversion, state files, cloning.

    Subclasses set :attr:`kind` and :attr:`tags`, declare keyword-only hyperparameters in
    ``__init__`` (stored under the same names) and implement ``_check_params``, ``_allocate(d)``,
    ``_predict_rows(X, entities)``, ``_get_state()`` and ``_set_state(state, d)``; online
    predictors also ``_learn(X, y, entities)``, frozen ones derive from :class:`FrozenPredictor`
    and ``_fit_rows(X, y, *, sample_weight, entities)``. A compiled single-row path is
    ``_predict_one``/``_update_one`` (and ``_std_one``/``_std_rows`` with ``tags.predicts_std``).
    Learned state is exposed by ``coef_``, ``intercept_`` and ``n_seen_``, which raise
    AttributeError (as scikit-learn's do) where the predictor has not learned them yet.
    """

    #: Registry name, also written into state files.
    kind: ClassVar[str] = ""
    #: What this predictor can do (:class:`~interfpred.predictors.tags.PredictorTags`); each class
    #: declares its own, ``replace``-ing its parent's.
    tags: PredictorTags = PredictorTags()
    #: Parameter sets the shared contract suite runs this predictor with (:meth:`contract_params`).
    _contract_params: ClassVar[list[dict[str, Any]]] = [{}]
    #: The ``target`` hyperparameter every predictor takes: what its rows' targets are
    #: (``"slowdown"`` or ``"rate"``), or None for bare arrays. Set in the constructor (or by
    #: :meth:`with_target`, which returns a copy); an :class:`~interfpred.InterferenceModel` holds
    #: its predictor declared for the extractor's target, and ``ColocationTracker`` refuses a
    #: predictor declared for another target than its extractor's.
    target: str | None = None

    _d: int | None = None
    #: The state buffer of predictors whose single-row path is a compiled entry point over it
    #: (None otherwise, or before the state exists), and that class's entry points:
    #: ``_fast_predict(buf, x) -> float`` (NaN: take the checked path) and ``_fast_update(buf, x, y)
    #: -> status`` (0: learned; anything else changed nothing). Class attributes, resolved once per
    #: class by :meth:`_bind_fast_paths`, so a call costs two attribute reads and no Python frame.
    _buf: np.ndarray | None = None
    _fast_predict: ClassVar[Any] = None
    _fast_update: ClassVar[Any] = None

    # -- parameters -------------------------------------------------------------------------
    @classmethod
    def param_names(cls) -> list[str]:
        """Names of the hyperparameters: the keyword-only arguments of ``__init__``."""
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]

    @classmethod
    def contract_params(cls) -> list[dict[str, Any]]:
        """Parameter sets the shared contract suite (:mod:`interfpred.evaluation.checks`) runs this predictor with."""
        return copy.deepcopy(cls._contract_params)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments, read back from the attributes of the same name."""
        return {name: getattr(self, name) for name in self.param_names()}

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        parts = []
        for name in self.param_names():
            value = getattr(self, name)
            default = sig.parameters[name].default
            if isinstance(value, np.ndarray) or value != default:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def clone(self) -> BasePredictor:
        """An untrained copy with the same hyperparameters (the ``target`` among them)."""
        return type(self)(**copy.deepcopy(self.get_params()))

    def with_target(self: _P, target: str) -> _P:
        """This predictor declared for ``target``: itself when it already is, else a copy with the
        ``target`` hyperparameter set (and what it learned kept); refused when declared for another.

        Examples
        --------
        >>> from interfpred.predictors import RLS
        >>> p = RLS()
        >>> p.with_target("rate").get_params()["target"], p.target
        ('rate', None)
        >>> RLS(target="slowdown").with_target("rate")
        Traceback (most recent call last):
        ...
        interfpred.errors.InterfpredError: RLS is declared for target 'slowdown', not 'rate'
        """
        check_target(target)
        if self.target == target:
            return self
        if self.target is not None:
            raise InterfpredError(f"{type(self).__name__} is declared for target {self.target!r}, not {target!r}")
        if "target" not in self.param_names():
            raise InterfpredError(f"{type(self).__name__} takes no target hyperparameter: every predictor declares "
                                  "'target: str | None = None' in its constructor")
        if not self.is_fitted_:
            return type(self)(**{**copy.deepcopy(self.get_params()), "target": target})
        out = copy.deepcopy(self)
        out._declare(target)
        return out

    def _declare(self, target: str) -> None:
        """Set the target of a copy made by :meth:`with_target` (wrappers declare what they wrap too)."""
        self.target = target

    def _check_params(self) -> None:
        """Refuse bad hyperparameters (predictors with any override this)."""

    # -- state ----------------------------------------------------------------------------
    @property
    def n_features_in_(self) -> int | None:
        """Number of features fixed by the first fit/update, or None before."""
        return self._d

    @property
    def is_fitted_(self) -> bool:
        """Whether any data has been learned (a fresh predictor predicts the prior)."""
        return self._d is not None

    @abc.abstractmethod
    def _allocate(self, d: int) -> None:
        """Allocate the fixed-size state for ``d`` features (first fit/update)."""

    def _learn(self, X: np.ndarray, y: np.ndarray, entities: Entities | None = None) -> None:
        """Learn from validated rows (and their entities); must leave the state unchanged if it raises.

        Online predictors implement it; the default refuses, as a frozen predictor does.
        """
        raise FrozenPredictorError(f"{type(self).__name__} cannot learn online")

    @abc.abstractmethod
    def _predict_rows(self, X: np.ndarray, entities: Entities | None = None) -> np.ndarray:
        """Predict validated rows of the fixed width (and their entities)."""

    @abc.abstractmethod
    def _get_state(self) -> dict[str, Any]:
        """The learned state as JSON-able values."""

    @abc.abstractmethod
    def _set_state(self, state: dict[str, Any], d: int) -> None:
        """Restore a state read by :meth:`_get_state`, already checked for width ``d``."""

    def _width(self) -> int | None:
        return self._d if self._d is not None else self.tags.fixed_width

    def linear_form(self) -> LinearForm | None:
        """The prediction as :class:`LinearForm`, now; None before any fit or when not affine.

        The default reads an affine predictor's weights by predicting the origin and the unit
        rows, which is exact for an affine model; predictors with a closed form override it.

        Examples
        --------
        >>> import numpy as np
        >>> from interfpred.predictors import RLS
        >>> p = RLS().fit(np.array([[0.0], [1.0], [2.0]]), np.array([1.0, 1.5, 2.0]))
        >>> form = p.linear_form()
        >>> [round(float(v), 6) for v in (*form.weights, form.intercept)], form.lower
        ([0.5, 1.0], -inf)
        """
        if not self.tags.is_linear or self._d is None:
            return None
        probe = _PROBES.get(self._d)
        if probe is None:   # the origin and the unit rows, built once per width (the tracker asks per event)
            probe = _PROBES[self._d] = np.vstack([np.zeros((1, self._d)), np.eye(self._d)])
            probe.flags.writeable = False
        vals = np.asarray(self._predict_rows(probe), dtype=np.float64)
        b = float(vals[0])
        return LinearForm(vals[1:] - b, b, -math.inf)

    # -- the API --------------------------------------------------------------------------
    def fit(self: _P, X: Any, y: Any, *, sample_weight: Any = None, entities: Any = None) -> _P:
        """Forget everything, then learn from ``X`` (n, d) and ``y`` (n,); returns self.

        ``sample_weight`` (n,) weighs the rows, for predictors with ``tags.supports_weights``;
        ``entities`` names the models of each row, for predictors with ``tags.uses_entities``.
        The others refuse them rather than silently learn something else.
        """
        Xa, single = as_rows(X, width=self.tags.fixed_width)
        n = Xa.shape[0]
        ya = as_targets(y, n, single)
        w = self._weights_arg(sample_weight, n)
        ent = self._entities_arg(entities, n)
        check_learnable(Xa, ya)
        saved = self.__dict__.copy()
        try:
            self._allocate(Xa.shape[1])
            self._fit_rows(Xa, ya, sample_weight=w, entities=ent)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        return self

    def _fit_rows(self, X: np.ndarray, y: np.ndarray, *, sample_weight: np.ndarray | None,
                  entities: Entities | None) -> None:
        """Learn validated rows into freshly allocated state (``fit``); by default as ``update`` does."""
        self._learn(X, y, entities)

    def _weights_arg(self, sample_weight: Any, n: int) -> np.ndarray | None:
        if sample_weight is not None and not self.tags.supports_weights:
            raise InterfpredError(f"{type(self).__name__} does not take sample_weight (tags.supports_weights "
                                  "is False); fit it without weights")
        return as_weights(sample_weight, n)

    def _entities_arg(self, entities: Any, n: int) -> Entities | None:
        if entities is not None and not self.tags.uses_entities:
            raise InterfpredError(f"{type(self).__name__} does not use entities (tags.uses_entities is False); "
                                  "call it without entities=")
        return check_entities(entities, n)

    # The single-row fast path, written once: one float64 numpy row (and a float target) goes
    # straight to the class's compiled entry point over ``_buf``, or else to the subclass's
    # ``_predict_one``/``_update_one`` hooks; anything else, and any row those refuse, takes the
    # checked path, which alone words the refusals. The guard is spelled inline, not as a helper,
    # because a Python call would cost about a third of a 0.3 us prediction.

    def predict(self, X: Any, return_std: bool = False, *, entities: Any = None) -> Any:
        """Predicted slowdowns: (n, d) -> (n,) array; one row (d,) -> float.

        ``return_std`` also returns the predictive standard deviations (a pair), for predictors
        with ``tags.predicts_std``; ``entities`` (one per row) only for predictors with
        ``tags.uses_entities``.
        """
        if type(X) is NDARRAY and X.dtype is F64 and X.ndim == 1:
            buf = self._buf
            if buf is not None and entities is None:
                r = self._fast_predict(buf, X)
            elif self._d is not None and (entities is None or self.tags.uses_entities):
                r = self._predict_one(X, entities)
            else:
                r = math.nan
            if r - r == 0.0:
                return (r, self._std_one(X)) if return_std else r
        return self._predict_checked(X, entities, return_std)

    def update(self, X: Any, y: Any, *, entities: Any = None) -> None:
        """Learn from rows ``X`` (n, d) with ``y`` (n,), or one row (d,) with a float.

        ``entities`` (one per row) only for predictors with ``tags.uses_entities``. Refused
        input raises :class:`~interfpred.errors.InterfpredError` and changes nothing.
        """
        if type(X) is NDARRAY and X.dtype is F64 and X.ndim == 1 and (type(y) is float or type(y) is np.float64):
            buf = self._buf
            if buf is not None and entities is None:
                if self._fast_update(buf, X, y) == 0:
                    return
            elif self._d is not None and (entities is None or self.tags.uses_entities):
                if self._update_one(X, y, entities) == 0:
                    return
        self._update_checked(X, y, entities)

    def learn_runs(self, X: np.ndarray, y: np.ndarray, runs: list[np.ndarray], *,
                   entities: Entities | None = None) -> np.ndarray:
        """Predict the rows of each run (``runs``: row indices, in the order the runs come) with what the
        runs before taught, then learn them (a run's members finish together); the predictions (n,).

        ``X`` and ``y`` are float64 arrays of every row and ``entities`` (one per row) is passed on only
        to a predictor with ``tags.uses_entities``. The loop of ``predict`` then ``update`` per run; a
        predictor may run it compiled, with the same numbers. Refused rows raise as ``update`` does.

        Examples
        --------
        >>> from interfpred.predictors import RLS
        >>> RLS().learn_runs(np.ones((4, 1)), np.full(4, 2.0), [np.array([0, 1]), np.array([2, 3])]).round(2)
        array([1., 1., 2., 2.])
        """
        use = entities if self.tags.uses_entities else None
        out = np.empty(X.shape[0])
        for rows in runs:
            ent = None if use is None else use.take(rows)
            out[rows] = self.predict(X[rows], entities=ent)
            self.update(X[rows], y[rows], entities=ent)
        return out

    @classmethod
    def _fast_paths(cls) -> tuple[Any, Any]:
        """``(predict, update)``: the compiled entry points over ``_buf`` of a predictor that keeps one
        (``update`` None for a frozen predictor, whose ``update`` refuses anyway)."""
        raise InterfpredError(f"{cls.__name__} has no compiled single-row path over a state buffer")

    def _bind_fast_paths(self) -> None:
        """Resolve this class's :meth:`_fast_paths` once (they compile, or load from numba's cache, on
        first use); called wherever ``_buf`` is set to a buffer."""
        cls = type(self)
        if "_fast_predict" not in cls.__dict__:   # per class: a subclass may name other entry points
            cls._fast_predict, cls._fast_update = cls._fast_paths()

    def _predict_one(self, x: np.ndarray, entities: Any) -> float:
        """One float64 row's prediction by a compiled path, or NaN to take the checked path (no
        such path, or a row it refuses: wrong width, NaN/inf, entities it cannot take)."""
        return math.nan

    def _update_one(self, x: np.ndarray, y: float, entities: Any) -> int:
        """Learn one float64 row by a compiled path: 0 when learned; anything else leaves the state
        unchanged and takes the checked path (no such path, or a row it refuses)."""
        return -1

    def _std_one(self, x: np.ndarray) -> float:
        """The predictive standard deviation of one row the compiled path just predicted (``tags.predicts_std``)."""
        return float(self._std_rows(x.reshape(1, -1))[0])

    def _std_rows(self, X: np.ndarray) -> np.ndarray:
        """Predictive standard deviations of validated rows of a fitted predictor (``tags.predicts_std``)."""
        raise InterfpredError(f"{type(self).__name__} declares tags.predicts_std but gives no standard deviations")

    def _predict_checked(self, X: Any, entities: Any, return_std: bool = False) -> Any:
        if return_std and not self.tags.predicts_std:
            raise InterfpredError(f"{type(self).__name__} gives no standard deviation (tags.predicts_std is False); "
                                  "call predict without return_std")
        Xa, single = as_rows(X, width=self._width())
        ent = self._entities_arg(entities, Xa.shape[0])
        if self._d is None:
            out = np.full(Xa.shape[0], PRIOR_SLOWDOWN)
        else:
            out = self._predict_rows(Xa, ent)
        mean = float(out[0]) if single else out
        if not return_std:
            return mean
        std = np.full(Xa.shape[0], PRIOR_STD) if self._d is None else self._std_rows(Xa)
        return (mean, float(std[0])) if single else (mean, std)

    def _update_checked(self, X: Any, y: Any, entities: Any) -> None:
        Xa, single = as_rows(X, width=self._width())
        ya = as_targets(y, Xa.shape[0], single)
        ent = self._entities_arg(entities, Xa.shape[0])
        check_learnable(Xa, ya)
        if self._d is None:
            self._allocate(Xa.shape[1])
        self._learn(Xa, ya, ent)

    # -- persistence ----------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        """A JSON-able dict with kind, schema version, parameters, width and learned state."""
        params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.get_params().items()}
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": self.kind,
            "params": params,
            "n_features_in": self._d,
            "state": None if self._d is None else self._get_state(),
        }

    @classmethod
    def from_state(cls, state: Any, *, source: str = "state", trusted: bool = False) -> BasePredictor:
        """Rebuild a predictor from :meth:`to_state`'s dict (checks format, kind, version and width).

        On a subclass the state must hold that kind; on ``BasePredictor`` itself any registered
        kind (as :func:`~interfpred.predictors.predictor_from_state`).

        ``trusted`` allows states of wrapped river / scikit-learn models, which are pickled and
        so run code from the file when restored (see :func:`load_predictor`).
        """
        if cls is BasePredictor:  # any kind: dispatch on the one recorded
            return predictor_from_state(state, source=source, trusted=trusted)
        check_state_header(state, source=source)
        kind = state.get("kind")
        if kind != cls.kind:
            raise InterfpredError(f"{source}: holds a predictor of kind {kind!r}, not {cls.kind!r}")
        params = state.get("params")
        if not isinstance(params, dict):
            raise InterfpredError(f"{source}: 'params' must be an object, got {params!r}")
        try:
            obj = cls(**params)
        except (TypeError, InterfpredError) as exc:
            raise InterfpredError(f"{source}: bad parameters for {kind!r}: {exc}") from None
        d = state.get("n_features_in")
        if d is not None:
            if not isinstance(d, int) or isinstance(d, bool) or d < 1:
                raise InterfpredError(f"{source}: n_features_in {d!r} must be a positive integer")
            fixed = obj.tags.fixed_width
            if fixed is not None and d != fixed:
                raise InterfpredError(f"{source}: n_features_in {d} but {kind!r} takes {fixed}")
            inner = state.get("state")
            if not isinstance(inner, dict):
                raise InterfpredError(f"{source}: 'state' must be an object for a fitted predictor")
            try:
                obj._set_state(inner, d)
            except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as exc:
                # any shape the state's reader did not expect (a string where a list of entries
                # belongs, a short entry) is a bad file, not a crash
                if isinstance(exc, InterfpredError):
                    raise InterfpredError(f"{source}: {exc}") from None
                raise InterfpredError(f"{source}: state does not match width {d}: {exc!r}") from None
        return obj

    def as_river(self) -> Any:
        """This predictor (a fresh clone) as a river regressor (:class:`~interfpred.predictors.as_peers.AsRiver`)."""
        from interfpred.predictors.as_peers import AsRiver  # imports river: loaded on first use

        return AsRiver(predictor=self.clone())

    def as_sklearn(self) -> Any:
        """This predictor (a fresh clone) as a scikit-learn regressor (:class:`~interfpred.predictors.as_peers.AsSklearn`)."""
        from interfpred.predictors.as_peers import AsSklearn  # imports scikit-learn: loaded on first use

        return AsSklearn(predictor=self.clone())

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the state as JSON (schema version, kind, width), atomically."""
        atomic_write_text(path, json.dumps(self.to_state(), allow_nan=False))

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, trusted: bool = False) -> BasePredictor:
        """Read a file written by :meth:`save` (refuses another kind, version or width);
        :func:`~interfpred.predictors.load_predictor` reads any kind.

        ``trusted=True`` is needed for wrapped river / scikit-learn models (pickled: see
        :func:`load_predictor`).
        """
        return cls.from_state(read_json(path), source=os.fspath(path), trusted=trusted)


class FrozenPredictor(BasePredictor):
    """A predictor fitted offline: ``update`` checks its input, then refuses with
    :class:`~interfpred.errors.FrozenPredictorError` instead of silently learning nothing.

    Subclasses implement ``_fit_rows`` (what ``fit`` learns).
    """

    tags = replace(BasePredictor.tags, learns_online=False)

    @abc.abstractmethod
    def _fit_rows(self, X: np.ndarray, y: np.ndarray, *, sample_weight: np.ndarray | None,
                  entities: Entities | None) -> None:
        """Learn from validated rows (``fit``)."""

    def update(self, X: Any, y: Any, *, entities: Any = None) -> None:
        """Refused: a frozen predictor learns nothing online.

        Raises
        ------
        FrozenPredictorError
            Always (after checking ``X`` and ``y``); refit with :meth:`fit` on all the data, or
            use an online predictor (:class:`~interfpred.RLS`, :class:`~interfpred.OnlineSGD`).
        """
        Xa, single = as_rows(X, width=self._width())
        as_targets(y, Xa.shape[0], single)
        self._entities_arg(entities, Xa.shape[0])
        raise FrozenPredictorError(
            f"{type(self).__name__} is frozen: update() cannot learn online; refit with fit(X, y) on all the data, "
            "or use an online predictor (rls, online_sgd)")
