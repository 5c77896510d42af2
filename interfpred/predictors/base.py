"""The predictor contract, the shared base class and the registry.

Every predictor maps feature vectors to slowdowns behind one API::

    p = make_predictor("rls", forgetting=0.99)
    p.fit(X, y)          # optional offline training; resets state; returns self
    p.predict(X)         # (n, d) -> (n,) ; one row (d,) -> float
    p.update(X, y)       # learn: rows (n, d) with y (n,), or one row with a float

A fresh predictor predicts the prior :data:`~interfpred.constants.PRIOR_SLOWDOWN` (1.0,
which is also the prior of the ``rate`` target), so a scheduler never crashes on its first
call.  Bad input raises :class:`~interfpred.errors.InterfpredError` (a ``ValueError``)
naming what was wrong and leaves the state exactly as it was.

Examples
--------
>>> import numpy as np
>>> from interfpred.predictors import make_predictor, PredictorSpec
>>> p = make_predictor("rls", forgetting=0.99)
>>> p.predict(np.zeros(3))
1.0
>>> make_predictor(PredictorSpec(kind="rls", params={"forgetting": 0.9}))
RLS(forgetting=0.9)
"""

from __future__ import annotations

import abc
import copy
import inspect
import json
import math
import os
from typing import Any, ClassVar, NamedTuple, Protocol, cast, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from interfpred._io import atomic_write_text, read_json
from interfpred.constants import PRIOR_SLOWDOWN, SCHEMA_VERSION
from interfpred.errors import InterfpredError

__all__ = [
    "Predictor",
    "BasePredictor",
    "PredictorSpec",
    "register",
    "registered",
    "make_predictor",
    "load_predictor",
    "predictor_from_state",
    "LinearForm",
]

_NDARRAY = np.ndarray
_F64 = np.dtype(np.float64)


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

    learns_online: bool

    @property
    def n_features_in_(self) -> int | None: ...

    def fit(self, X: Any, y: Any) -> Predictor: ...

    def predict(self, X: Any) -> Any: ...

    def update(self, X: Any, y: Any) -> None: ...

    def clone(self) -> Predictor: ...

    def get_params(self) -> dict[str, Any]: ...

    def as_river(self) -> Any:
        """This predictor (a fresh clone) as a river regressor (:class:`~interfpred.predictors.adapters.RiverFacade`)."""
        from interfpred.predictors.adapters import RiverFacade

        return RiverFacade(predictor=cast("BasePredictor", self.clone()))

    def as_sklearn(self) -> Any:
        """This predictor (a fresh clone) as a scikit-learn regressor (:class:`~interfpred.predictors.adapters.SklearnFacade`)."""
        from interfpred.predictors.adapters import SklearnFacade

        return SklearnFacade(predictor=cast("BasePredictor", self.clone()))

    def save(self, path: str | os.PathLike[str]) -> None: ...


# ----------------------------------------------------------------------------- input checks


def as_rows(X: Any, *, width: int | None, name: str = "X") -> tuple[np.ndarray, bool]:
    """Convert ``X`` to a C-contiguous float64 (n, d) array; also say whether it was one row.

    Raises InterfpredError on non-numeric input, wrong dimensionality, NaN/inf or a width
    other than ``width`` (when given).  The result never aliases a caller's array that we
    would later write to (predictors only read it).
    """
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InterfpredError(f"{name} must be a numeric array, got {type(X).__name__}: {exc}") from None
    single = arr.ndim == 1
    if single:
        arr = arr.reshape(1, -1)
    elif arr.ndim != 2:
        raise InterfpredError(f"{name} is {arr.ndim}-dimensional; expected one row (d,) or rows (n, d)")
    if width is not None and arr.shape[1] != width:
        raise InterfpredError(f"{name} has {arr.shape[1]} features, but the predictor was fitted with {width}")
    if not np.isfinite(arr).all():
        r, c = np.argwhere(~np.isfinite(arr))[0]
        where = f"column {c}" if single else f"row {r}, column {c}"
        raise InterfpredError(f"{name} contains {arr[r, c]} at {where}; features must be finite")
    return np.ascontiguousarray(arr), single


def as_targets(y: Any, n: int, single: bool) -> np.ndarray:
    """Convert ``y`` to a float64 (n,) array matching ``n`` rows; finite values only."""
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InterfpredError(f"y must be numeric, got {type(y).__name__}: {exc}") from None
    if single and arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise InterfpredError(f"y has shape {arr.shape}, expected ({n},) to match {n} row(s) of X")
    if not np.isfinite(arr).all():
        i = int(np.argmin(np.isfinite(arr)))
        raise InterfpredError(f"y contains {arr[i]} at position {i}; targets must be finite")
    return np.ascontiguousarray(arr)


def check_learnable(X: np.ndarray, y: np.ndarray) -> None:
    """Refuse rows a predictor should not learn from: features beyond ``FEATURE_ABS_MAX`` or
    targets beyond ``TARGET_ABS_MAX`` (non-physical; they would overflow the learned state).

    Examples
    --------
    >>> check_learnable(np.array([[0.5]]), np.array([1e300]))
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: y[0] = 1e+300 is beyond +-1000; a slowdown or rate that large is non-physical (a glitched timer?); refused, the state is unchanged
    """
    from interfpred.constants import FEATURE_ABS_MAX, TARGET_ABS_MAX

    if X.size and np.abs(X).max() > FEATURE_ABS_MAX:
        r, c = np.argwhere(np.abs(X) > FEATURE_ABS_MAX)[0]
        raise InterfpredError(f"X[{r}, {c}] = {X[r, c]:g} is beyond +-{FEATURE_ABS_MAX:g}; refused as non-physical "
                              "(the state is unchanged)")
    if y.size and np.abs(y).max() > TARGET_ABS_MAX:
        i = int(np.argmax(np.abs(y) > TARGET_ABS_MAX))
        raise InterfpredError(f"y[{i}] = {y[i]:g} is beyond +-{TARGET_ABS_MAX:g}; a slowdown or rate that large is "
                              "non-physical (a glitched timer?); refused, the state is unchanged")


# ----------------------------------------------------------------------------- base class


class BasePredictor(abc.ABC):
    """Shared machinery: parameter introspection, input conversion, state files, cloning.

    Subclasses set :attr:`kind`, declare keyword-only hyperparameters in ``__init__`` (stored
    under the same names) and implement ``_check_params``, ``_allocate(d)``,
    ``_learn(X, y)``, ``_predict_rows(X)``, ``_get_state()`` and ``_set_state(state)``.
    """

    #: Registry name, also written into state files.
    kind: ClassVar[str] = ""
    #: Whether :meth:`update` learns (False for offline predictors, which are frozen).
    learns_online: ClassVar[bool] = True
    #: Fixed input width, if the predictor defines one (gpulets: 4); None means any.
    fixed_width: ClassVar[int | None] = None
    #: Whether ``fit``/``predict``/``update`` accept ``entities=`` (an
    #: :class:`~interfpred.entities.Entities` table naming the models each row involves).
    #: Callers pass entities only to predictors that set this; the others never see them.
    uses_entities: ClassVar[bool] = False
    #: Whether saved states hold a pickle (wrapped third-party models): loading them needs ``trusted=True``.
    stores_pickle: ClassVar[bool] = False
    #: Parameter sets the shared contract suite runs this predictor with.
    _test_params: ClassVar[list[dict[str, Any]]] = [{}]

    _d: int | None = None

    # -- parameters -------------------------------------------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments, read back from the attributes of the same name."""
        return {name: getattr(self, name) for name in self._param_names()}

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        parts = []
        for name in self._param_names():
            value = getattr(self, name)
            default = sig.parameters[name].default
            if isinstance(value, np.ndarray) or value != default:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def clone(self) -> BasePredictor:
        """An untrained copy with the same hyperparameters."""
        return type(self)(**copy.deepcopy(self.get_params()))

    def _check_params(self) -> None:  # pragma: no cover - overridden
        pass

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

    @abc.abstractmethod
    def _learn(self, X: np.ndarray, y: np.ndarray) -> None:
        """Learn from validated rows; must leave the state unchanged if it raises."""

    @abc.abstractmethod
    def _predict_rows(self, X: np.ndarray) -> np.ndarray:
        """Predict validated rows of the fixed width."""

    @abc.abstractmethod
    def _get_state(self) -> dict[str, Any]:
        """The learned state as JSON-able values."""

    @abc.abstractmethod
    def _set_state(self, state: dict[str, Any], d: int) -> None:
        """Restore a state read by :meth:`_get_state`, already checked for width ``d``."""

    def _width(self) -> int | None:
        return self._d if self._d is not None else self.fixed_width

    #: Whether predictions are affine in the features (then :meth:`linear_form` describes them).
    is_linear: ClassVar[bool] = False

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
        if not self.is_linear or self._d is None:
            return None
        d = self._d
        vals = np.asarray(self._predict_rows(np.vstack([np.zeros((1, d)), np.eye(d)])), dtype=np.float64)
        b = float(vals[0])
        return LinearForm(vals[1:] - b, b, -math.inf)

    # -- the API --------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> BasePredictor:
        """Forget everything, then learn from ``X`` (n, d) and ``y`` (n,); returns self."""
        Xa, single = as_rows(X, width=self.fixed_width)
        ya = as_targets(y, Xa.shape[0], single)
        check_learnable(Xa, ya)
        saved = self.__dict__.copy()
        try:
            self._allocate(Xa.shape[1])
            self._fit_rows(Xa, ya)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        return self

    def _fit_rows(self, X: np.ndarray, y: np.ndarray) -> None:
        self._learn(X, y)

    def update(self, X: Any, y: Any) -> None:
        """Learn from rows ``X`` (n, d) with ``y`` (n,), or one row (d,) with a float."""
        Xa, single = as_rows(X, width=self._width())
        ya = as_targets(y, Xa.shape[0], single)
        check_learnable(Xa, ya)
        if self._d is None:
            self._allocate(Xa.shape[1])
        self._learn(Xa, ya)

    def predict(self, X: Any) -> Any:
        """Predicted slowdowns: (n, d) -> (n,) array; one row (d,) -> float."""
        Xa, single = as_rows(X, width=self._width())
        if self._d is None:
            out = np.full(Xa.shape[0], PRIOR_SLOWDOWN)
        else:
            out = self._predict_rows(Xa)
        return float(out[0]) if single else out

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

        ``trusted`` allows states of wrapped river / scikit-learn models, which are pickled and
        so run code from the file when restored (see :func:`load_predictor`).
        """
        if not isinstance(state, dict):
            raise InterfpredError(f"{source}: expected a JSON object, got {type(state).__name__}")
        from interfpred.schema import check_predictor_file

        check_predictor_file(state, source=source)
        version = state.get("schema_version")
        if version != SCHEMA_VERSION:
            raise InterfpredError(
                f"{source}: schema_version {version!r} is not supported (this interfpred reads {SCHEMA_VERSION})")
        kind = state.get("kind")
        if cls is not BasePredictor and kind != cls.kind:
            raise InterfpredError(f"{source}: holds a predictor of kind {kind!r}, not {cls.kind!r}")
        target = _lookup(kind, source=source) if cls is BasePredictor else cls
        if cls is BasePredictor and _overrides_from_state(target):
            # predictors with their own state format
            return target.from_state(state, source=source, trusted=trusted)
        params = state.get("params")
        if not isinstance(params, dict):
            raise InterfpredError(f"{source}: 'params' must be an object, got {params!r}")
        try:
            obj = target(**params)
        except (TypeError, InterfpredError) as exc:
            raise InterfpredError(f"{source}: bad parameters for {kind!r}: {exc}") from None
        d = state.get("n_features_in")
        if d is not None:
            if not isinstance(d, int) or isinstance(d, bool) or d < 1:
                raise InterfpredError(f"{source}: n_features_in {d!r} must be a positive integer")
            if obj.fixed_width is not None and d != obj.fixed_width:
                raise InterfpredError(f"{source}: n_features_in {d} but {kind!r} takes {obj.fixed_width}")
            inner = state.get("state")
            if not isinstance(inner, dict):
                raise InterfpredError(f"{source}: 'state' must be an object for a fitted predictor")
            try:
                obj._set_state(inner, d)
            except (KeyError, TypeError, ValueError) as exc:
                if isinstance(exc, InterfpredError):
                    raise InterfpredError(f"{source}: {exc}") from None
                raise InterfpredError(f"{source}: state does not match width {d}: {exc!r}") from None
        return obj

    def as_river(self) -> Any:
        """This predictor (a fresh clone) as a river regressor (:class:`~interfpred.predictors.adapters.RiverFacade`)."""
        from interfpred.predictors.adapters import RiverFacade

        return RiverFacade(predictor=self.clone())

    def as_sklearn(self) -> Any:
        """This predictor (a fresh clone) as a scikit-learn regressor (:class:`~interfpred.predictors.adapters.SklearnFacade`)."""
        from interfpred.predictors.adapters import SklearnFacade

        return SklearnFacade(predictor=self.clone())

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the state as JSON (schema version, kind, width), atomically."""
        atomic_write_text(path, json.dumps(self.to_state(), allow_nan=False))

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, trusted: bool = False) -> BasePredictor:
        """Read a file written by :meth:`save` (refuses another kind, version or width).

        ``trusted=True`` is needed for wrapped river / scikit-learn models (pickled: see
        :func:`load_predictor`).
        """
        return cls.from_state(read_json(path), source=os.fspath(path), trusted=trusted)


def _overrides_from_state(target: type[BasePredictor]) -> bool:
    """Whether ``target`` (a subclass) has its own ``from_state`` (predictors with their own state format)."""
    mro = target.__mro__
    return any("from_state" in vars(k) for k in mro[:mro.index(BasePredictor)])


def _state_array(state: dict[str, Any], key: str, length: int) -> np.ndarray:
    """A float64 array of exactly ``length`` finite values from a state dict."""
    arr = np.asarray(state[key], dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] != length:
        raise InterfpredError(f"state {key!r} has shape {arr.shape}, expected ({length},)")
    if not np.isfinite(arr).all():
        raise InterfpredError(f"state {key!r} contains non-finite values")
    return arr.copy()


def check_positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """Validate a numeric hyperparameter; returns it as float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InterfpredError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InterfpredError(f"{name} must be finite and {bound}, got {value!r}")
    return v


# ----------------------------------------------------------------------------- registry

_REGISTRY: dict[str, type[BasePredictor]] = {}


def register(cls: type[BasePredictor]) -> type[BasePredictor]:
    """Class decorator adding a predictor to the registry under ``cls.kind``."""
    _REGISTRY[cls.kind] = cls
    return cls


def registered() -> dict[str, type[BasePredictor]]:
    """The registry: kind -> class (a copy).

    Examples
    --------
    >>> sorted(registered())
    ['calibrated', 'entity_rls', 'global_mean', 'gpulets', 'no_interference', 'offline_linear', 'online_sgd', 'pair_mean', 'river',
     'rls', 'sklearn']
    """
    _ensure_loaded()
    return dict(_REGISTRY)


def _ensure_loaded() -> None:
    import interfpred.predictors  # noqa: F401  (registers the built-in predictors)
    import interfpred.predictors.adapters  # noqa: F401  (registers the river / sklearn wrappers)


def _lookup(kind: Any, *, source: str = "kind") -> type[BasePredictor]:
    _ensure_loaded()
    if kind not in _REGISTRY:
        raise InterfpredError(f"{source}: unknown predictor kind {kind!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[kind]


class PredictorSpec(BaseModel):
    """A predictor as configuration (files, CLI): its kind and hyperparameters.

    Examples
    --------
    >>> PredictorSpec(kind="online_sgd", params={"learning_rate": 0.1}).build()
    OnlineSGD(learning_rate=0.1)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    params: dict[str, Any] = {}

    def build(self) -> BasePredictor:
        """The predictor this spec describes."""
        return make_predictor(self)


def make_predictor(kind: str | PredictorSpec | dict[str, Any], **params: Any) -> BasePredictor:
    """Build a registered predictor by name, from a :class:`PredictorSpec` or from its dict.

    Examples
    --------
    >>> make_predictor("rls", forgetting=0.99)
    RLS(forgetting=0.99)
    >>> make_predictor({"kind": "offline_linear", "params": {"ridge": 1.0}})
    OfflineLinear(ridge=1.0)
    """
    if isinstance(kind, dict):
        try:
            kind = PredictorSpec(**kind)
        except ValidationError as exc:
            raise InterfpredError(f"bad predictor spec: {exc.errors()[0]['msg']}") from None
    if isinstance(kind, PredictorSpec):
        params = {**kind.params, **params}
        kind = kind.kind
    cls = _lookup(kind)
    allowed = cls._param_names()
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise InterfpredError(
            f"unknown parameter(s) {', '.join(unknown)} for predictor {kind!r}; known: {', '.join(allowed)}")
    return cls(**params)


def predictor_from_state(state: dict[str, Any], *, source: str = "state", trusted: bool = False) -> BasePredictor:
    """Rebuild any predictor from its :meth:`BasePredictor.to_state` dict (dispatch on kind).

    ``trusted`` as in :func:`load_predictor`.
    """
    return BasePredictor.from_state(state, source=source, trusted=trusted)


def load_predictor(path: str | os.PathLike[str], *, trusted: bool = False) -> BasePredictor:
    """Read any saved predictor, dispatching on the kind recorded in the file.

    Native predictors (RLS, OnlineSGD, OfflineLinear, GpuletsModel) are stored as plain
    numbers and are safe to load from anywhere.  Wrapped river and scikit-learn models
    (``kind`` ``"river"`` or ``"sklearn"``) are stored pickled, and unpickling runs whatever
    code the file names: they are refused unless ``trusted=True``, which you should pass only
    for files you wrote yourself.  Files are validated against
    :class:`~interfpred.schema.PredictorFile` and capped in size and nesting first.

    Parameters
    ----------
    path
        The JSON file.
    trusted
        Allow a pickled wrapped model to be restored (runs code from the file).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from interfpred import RLS
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rls.json"
    >>> RLS(forgetting=0.9).fit([[1.0], [2.0]], [2.0, 3.0]).save(path)
    >>> load_predictor(path)
    RLS(forgetting=0.9)
    """
    return BasePredictor.load(path, trusted=trusted)
