"""Feature maps: their names, the integer codes of maps, combines and aggregations, and CustomMap.

A feature map φ(me, co-runners) turns one execution's demands ``(sm, l2, dram)`` (fractions of
peak) and those of the executions beside it at one instant into a vector. The built-in maps
(``default``, ``gpulets``, ``rich``, ``shares``) run as compiled (numba) code; a
:class:`CustomMap` runs any Python function on a slower path. docs/concepts.md describes every
map and the temporal aggregations.

Examples
--------
>>> feature_names("gpulets")
('l2_me', 'dram_me', 'l2_other', 'dram_other')
>>> aggregation_name("time_weighted")
'time_weighted'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from interfpred.constants import AGGREGATIONS, FEATURE_MAPS, MAX_RUNNING_SET, MODEL_DEFAULT_EXTRACTOR, RESOURCES
from interfpred.errors import InterfpredError
from interfpred.features import compiled_maps as _k

__all__ = ["CustomMap", "aggregation_name", "feature_names"]

#: Integer code of each built-in map; ``"shares"`` runs the default map on share demands.
MAP_IDS = {"default": _k.MAP_DEFAULT, "gpulets": _k.MAP_GPULETS, "rich": _k.MAP_RICH, "shares": _k.MAP_DEFAULT,
           "corunners": _k.MAP_CORUNNERS}
#: Integer code of each combine.
COMBINE_IDS = {"sum": _k.COMBINE_SUM, "max": _k.COMBINE_MAX}
#: Integer code of each temporal aggregation, by its canonical name.
AGG_IDS = {"static": _k.AGG_STATIC, "ewma": _k.AGG_EWMA, "time_weighted": _k.AGG_TIME_WEIGHTED}
#: The two MPS share features (``shares=True`` appends them to a counter map).
SHARE_NAMES = ("share_me", "share_other")
#: The share features are the default map (sum combine) over demands ``[share, 1, 0]``: these of
#: its columns are share_me (own sm), share_other (the others' sm) and n_others (the others' l2).
SHARE_COLUMNS = tuple(int(_k.TERM_COLUMN[_k.MAP_DEFAULT, kind, r]) for kind, r in
                      ((_k.TERM_OWN, _k.SM), (_k.TERM_OTHER, _k.SM), (_k.TERM_OTHER, _k.L2)))


def aggregation_name(name: Any) -> str:
    """The name of a temporal aggregation, checked: ``static``, ``ewma`` or ``time_weighted``.

    Examples
    --------
    >>> aggregation_name("ewma")
    'ewma'
    >>> aggregation_name("time-weighted")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: aggregation 'time-weighted' is not one of static, ewma, time_weighted
    """
    if not isinstance(name, str) or name not in AGG_IDS:
        raise InterfpredError(f"aggregation {name!r} is not one of {', '.join(AGGREGATIONS)}")
    return str(name)


def feature_names(feature_map: str = dict(MODEL_DEFAULT_EXTRACTOR)["feature_map"]) -> tuple[str, ...]:
    """Names of the columns a built-in feature map produces (default: ``MODEL_DEFAULT_EXTRACTOR``'s map),
    in column order, read from the map's description (each column a term kind and a resource).

    Examples
    --------
    >>> feature_names("gpulets")
    ('l2_me', 'dram_me', 'l2_other', 'dram_other')
    >>> len(feature_names("rich"))
    16
    """
    if feature_map not in MAP_IDS:
        raise InterfpredError(f"feature_map {feature_map!r} is not one of {', '.join(FEATURE_MAPS)}")
    if feature_map == "shares":
        return (*SHARE_NAMES, _k.TERM_NAMES[_k.TERM_N_OTHERS])
    return tuple(_k.TERM_NAMES[kind].format(r=RESOURCES[r] if r >= 0 else "")
                 for kind, r in _k.MAP_DESCRIPTIONS[MAP_IDS[feature_map]])


class CustomMap:
    """A user-supplied feature map in plain Python (evaluated on a slower path).

    Parameters
    ----------
    func
        ``func(me, others) -> array-like (d,)`` with ``me`` of shape (3,) and ``others`` of
        shape (k, 3), columns ``sm, l2, dram``; ``others`` arrives sorted by rows, so a result
        never depends on the order events arrived in.
    names
        The d feature names.

    Examples
    --------
    >>> from interfpred import Static
    >>> m = CustomMap(lambda me, others: [me[2] * others[:, 2].sum()], names=["dram_product"])
    >>> Static(feature_map=m).map_instant([0.1, 0.2, 0.5], [[0.3, 0.3, 0.4]])
    array([0.2])
    """

    def __init__(self, func: Callable[[np.ndarray, np.ndarray], Any], names: Sequence[str]) -> None:
        if not callable(func):
            raise InterfpredError(f"CustomMap needs a callable, got {type(func).__name__}")
        self.func = func
        self.names = tuple(str(n) for n in names)
        if not self.names:
            raise InterfpredError("CustomMap needs at least one feature name")

    def __call__(self, me: np.ndarray, others: np.ndarray) -> np.ndarray:
        if len(others) > 1:
            others = others[np.lexsort(others.T[::-1])]
        out = np.asarray(self.func(me, others), dtype=np.float64).reshape(-1)
        if out.shape != (len(self.names),):
            raise InterfpredError(
                f"custom feature map returned {out.size} values, its names say {len(self.names)}")
        return out

    def __repr__(self) -> str:
        return f"CustomMap({getattr(self.func, '__name__', 'func')}, names={list(self.names)})"


def as_demand(x: Any, name: str, two_d: bool) -> np.ndarray:
    """``x`` as checked demands: (3,) ``[sm, l2, dram]`` or, with ``two_d``, (k, 3), in [0, 1]."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InterfpredError(f"{name} must be numeric [sm, l2, dram] values") from None
    if two_d:
        if a.ndim == 1 and a.size == 0:
            a = a.reshape(0, 3)
        if a.ndim != 2 or a.shape[1] != 3:
            raise InterfpredError(f"{name} has shape {a.shape}, expected (k, 3) columns sm, l2, dram")
        if a.shape[0] > MAX_RUNNING_SET:
            raise InterfpredError(f"{name} has {a.shape[0]} rows, more than MAX_RUNNING_SET={MAX_RUNNING_SET}")
    elif a.shape != (3,):
        raise InterfpredError(f"{name} has shape {a.shape}, expected (3,) [sm, l2, dram]")
    if not np.all((a >= 0.0) & (a <= 1.0)):
        raise InterfpredError(f"{name} holds a value outside [0, 1] (throughputs are fractions of peak): "
                              f"{a.tolist()}")
    return np.ascontiguousarray(a)
