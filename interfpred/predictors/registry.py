"""The registry of predictor kinds: build a predictor by name or spec, restore one from its state.

The package (:mod:`interfpred.predictors`) registers the built-in predictors in one place when it
is imported; :func:`register` adds your own. This module knows no predictor class itself.

Examples
--------
>>> from interfpred.predictors import make_predictor, PredictorSpec
>>> make_predictor("rls", forgetting=0.99)
RLS(forgetting=0.99)
>>> make_predictor(PredictorSpec(kind="rls", params={"forgetting": 0.9}))
RLS(forgetting=0.9)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from interfpred._core.atomic import read_json
from interfpred.errors import InterfpredError
from interfpred.predictors.inputs import check_state_header

if TYPE_CHECKING:
    from interfpred.predictors.base import BasePredictor

__all__ = ["PredictorSpec", "register", "registered", "lookup", "make_predictor", "predictor_from_state",
           "load_predictor"]

_REGISTRY: dict[str, type[BasePredictor]] = {}


def register(cls: type[BasePredictor]) -> type[BasePredictor]:
    """Add a predictor class to the registry under ``cls.kind`` (usable as a class decorator)."""
    _REGISTRY[cls.kind] = cls
    return cls


def registered() -> dict[str, type[BasePredictor]]:
    """The registry: kind -> class (a copy).

    Examples
    --------
    >>> sorted(registered())
    ['calibrated', 'entity_rls', 'global_mean', 'gpulets', 'kernel_blocking', 'no_interference', 'offline_linear', 'online_sgd',
     'pair_mean', 'river', 'rls', 'sklearn']
    """
    return dict(_REGISTRY)


def lookup(kind: Any, *, source: str = "kind") -> type[BasePredictor]:
    """The class registered under ``kind``; ``source`` names where the kind came from in the error."""
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
    cls = lookup(kind)
    allowed = cls.param_names()
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise InterfpredError(
            f"unknown parameter(s) {', '.join(unknown)} for predictor {kind!r}; known: {', '.join(allowed)}")
    return cls(**params)


def predictor_from_state(state: Any, *, source: str = "state", trusted: bool = False) -> BasePredictor:
    """Rebuild any predictor from its :meth:`~interfpred.predictors.base.BasePredictor.to_state` dict
    (dispatch on the kind it records).

    ``trusted`` as in :func:`load_predictor`.
    """
    check_state_header(state, source=source)
    target = lookup(state.get("kind"), source=source)
    return target.from_state(state, source=source, trusted=trusted)


def load_predictor(path: str | os.PathLike[str], *, trusted: bool = False) -> BasePredictor:
    """Read any saved predictor, dispatching on the kind recorded in the file.

    Native predictors (RLS, OnlineSGD, OfflineLinear, GpuletsModel, ...) are stored as plain
    numbers and are safe to load from anywhere.  Wrapped river and scikit-learn models
    (``kind`` ``"river"`` or ``"sklearn"``) are stored pickled, and unpickling runs whatever
    code the file names: they are refused unless ``trusted=True``, which you should pass only
    for files you wrote yourself.  Files are validated against
    :class:`~interfpred._core.schema.PredictorFile` and capped in size and nesting first.

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
    return predictor_from_state(read_json(path), source=os.fspath(path), trusted=trusted)
