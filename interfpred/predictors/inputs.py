"""Conversion and validation of what predictors receive: rows, targets, weights, entities,
hyperparameters and saved states.

Every check raises :class:`~interfpred.errors.InterfpredError` (a ``ValueError``) naming what
was wrong, before any state changes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from interfpred._core.schema import check_predictor_file, check_schema_version
from interfpred.constants import FEATURE_ABS_MAX, MODEL_STATE_ABS_MAX, TARGET_ABS_MAX
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError

__all__ = ["as_rows", "as_targets", "as_weights", "check_learnable", "check_positive", "check_flag",
           "check_entities", "check_state_header", "state_array", "state_count", "is_integer", "NDARRAY", "F64"]

#: The compiled single-row paths take exactly one float64 numpy row; the guard that picks them,
#: ``type(X) is NDARRAY and X.dtype is F64 and X.ndim == 1``, is written once, in
#: :meth:`BasePredictor.predict <interfpred.predictors.base.BasePredictor.predict>` and ``update``.
NDARRAY = np.ndarray
F64 = np.dtype(np.float64)


def is_integer(v: Any) -> bool:
    """Whether ``v`` is an integer (Python or numpy), and not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def as_rows(X: Any, *, width: int | None, name: str = "X") -> tuple[np.ndarray, bool]:
    """Convert ``X`` to a C-contiguous float64 (n, d) array; also say whether it was one row.

    Raises InterfpredError on non-numeric input, wrong dimensionality, NaN/inf or a width
    other than ``width`` (when given).  The result never aliases a caller's array that we
    would later write to (predictors only read it).

    Examples
    --------
    >>> as_rows([1.0, 2.0], width=2)
    (array([[1., 2.]]), True)
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
    if not np.isfinite(arr).all():   # one wording whatever the form (one row, rows, a list)
        r, c = np.argwhere(~np.isfinite(arr))[0]
        raise InterfpredError(f"{name} contains {arr[r, c]} at row {r}, column {c}; features must be finite")
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


def as_weights(sample_weight: Any, n: int) -> np.ndarray | None:
    """Validate row weights: None, or (n,) finite values >= 0 that are not all zero."""
    if sample_weight is None:
        return None
    try:
        w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InterfpredError(f"sample_weight must be numeric, got {type(sample_weight).__name__}") from None
    if w.shape != (n,):
        raise InterfpredError(f"sample_weight has {w.size} values, X has {n} rows")
    if not np.isfinite(w).all() or (w < 0).any() or (n and not (w > 0).any()):
        raise InterfpredError("sample_weight must be finite, >= 0 and not all zero")
    return w


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
    if X.size and np.abs(X).max() > FEATURE_ABS_MAX:
        r, c = np.argwhere(np.abs(X) > FEATURE_ABS_MAX)[0]
        raise InterfpredError(f"X[{r}, {c}] = {X[r, c]:g} is beyond +-{FEATURE_ABS_MAX:g}; refused as non-physical "
                              "(the state is unchanged)")
    if y.size and np.abs(y).max() > TARGET_ABS_MAX:
        i = int(np.argmax(np.abs(y) > TARGET_ABS_MAX))
        raise InterfpredError(f"y[{i}] = {y[i]:g} is beyond +-{TARGET_ABS_MAX:g}; a slowdown or rate that large is "
                              "non-physical (a glitched timer?); refused, the state is unchanged")


def check_positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """Validate a numeric hyperparameter; returns it as float.

    Examples
    --------
    >>> check_positive("delta", 2)
    2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InterfpredError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InterfpredError(f"{name} must be finite and {bound}, got {value!r}")
    return v


def check_target(value: Any) -> str | None:
    """Validate the ``target`` hyperparameter: None (rows of bare arrays) or one of ``TARGETS``.

    Examples
    --------
    >>> check_target("rate"), check_target(None)
    ('rate', None)
    """
    from interfpred.constants import TARGETS

    if value is not None and (not isinstance(value, str) or value not in TARGETS):
        raise InterfpredError(f"target must be None or one of {', '.join(map(repr, TARGETS))}, got {value!r}")
    return value


def check_flag(owner: Any, *names: str) -> None:
    """Refuse a hyperparameter of ``owner`` among ``names`` that is not True or False."""
    for name in names:
        if not isinstance(getattr(owner, name), (bool, np.bool_)):
            raise InterfpredError(f"{name} must be True or False, got {getattr(owner, name)!r}")


def check_entities(entities: Any, n: int) -> Entities | None:
    """``entities`` (None, or an :class:`~interfpred.data.entities.Entities` table of ``n`` rows), checked."""
    if entities is None:
        return None
    if not isinstance(entities, Entities):
        raise InterfpredError(f"entities must be an Entities table or None, got {type(entities).__name__}")
    if len(entities) != n:
        raise InterfpredError(f"entities has {len(entities)} rows, X has {n}")
    return entities


def check_state_header(state: Any, *, source: str = "state") -> None:
    """Refuse a predictor state that is not a dict following the predictor file's format and version."""
    if not isinstance(state, dict):
        raise InterfpredError(f"{source}: expected a JSON object, got {type(state).__name__}")
    check_predictor_file(state, source=source)
    check_schema_version(state, source=source)
    check_state_numbers(state, source=source)


def check_state_numbers(state: Any, *, source: str = "state") -> None:
    """Refuse a saved state holding a number that no fitted predictor holds: non-finite, or larger in
    magnitude than ``MODEL_STATE_ABS_MAX`` (a corrupted file; the latency clamp would hide it, a model
    with weights of 1e300 predicting exactly 1.0 everywhere). The message names the number's place.

    Examples
    --------
    >>> check_state_numbers({"state": {"coef": [0.5, 1e300]}}, source="m.json")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: m.json: state.coef[1] is 1e+300, not a finite number within +-1e+30 (MODEL_STATE_ABS_MAX): a corrupted model file
    """
    stack: list[tuple[Any, str]] = [(state, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in value.items())
        elif isinstance(value, list):
            for i, v in enumerate(value):  # a loop of float checks: a million numbers in well under a second
                if isinstance(v, (dict, list)):
                    stack.append((v, f"{where}[{i}]"))
                elif _is_number(v) and not _magnitude(v) <= MODEL_STATE_ABS_MAX:
                    _refuse_number(v, f"{where}[{i}]", source)
        elif _is_number(value) and not _magnitude(value) <= MODEL_STATE_ABS_MAX:
            _refuse_number(value, where, source)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _magnitude(x: float) -> float:
    try:
        return abs(float(x))  # NaN stays NaN: it compares False with any bound
    except OverflowError:     # an integer beyond float's range
        return math.inf


def _refuse_number(value: float, where: str, source: str) -> None:
    shown = f"{value:g}" if isinstance(value, float) else f"an integer of {len(str(abs(value)))} digits"
    raise InterfpredError(f"{source}: {where} is {shown}, not a finite number within +-{MODEL_STATE_ABS_MAX:g} "
                          "(MODEL_STATE_ABS_MAX): a corrupted model file")


def state_array(state: dict[str, Any], key: str, length: int) -> np.ndarray:
    """A float64 array of exactly ``length`` finite values from a state dict (a copy)."""
    arr = np.asarray(state[key], dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] != length:
        raise InterfpredError(f"state {key!r} has shape {arr.shape}, expected ({length},)")
    if not np.isfinite(arr).all():
        raise InterfpredError(f"state {key!r} contains non-finite values")
    return arr.copy()


def state_count(state: dict[str, Any], key: str) -> int:
    """An integer count >= 0 from a state dict; 0 when the key is missing (files written before it existed)."""
    n = state.get(key, 0)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InterfpredError(f"state {key!r} is {n!r}; expected an integer >= 0")
    return n
