"""Extractors: a feature map evaluated per segment, aggregated over an execution's timeline.

An extractor is three choices (see docs/concepts.md):

**Feature map** φ(me, co-runners), evaluated on one running set at one instant. Demands are a
profile's ``(sm, l2, dram)`` throughputs as fractions of peak.

- ``"default"``: ``[sm_me, l2_me, dram_me, sm_other, l2_other, dram_other]``;
- ``"gpulets"``: ``[l2_me, dram_me, l2_other, dram_other]`` (gpulets' four inputs);
- ``"rich"``: the default six, the per-resource products ``me x other``, the total pressure
  per resource ``me + sum(others)``, its excess over capacity ``max(0, total - 1)`` and the
  co-runner count (16 features);
- ``"shares"``: ``[share_me, share_other, n_others]``: the MPS active thread share (fraction
  of 1) of the batch, the sum of its co-runners' shares and their count. It needs no hardware
  counter, so it works for profiles without ``sm``, ``l2`` or ``dram``.

``shares=True`` appends ``share_me, share_other`` to any built-in map. A map that needs a
counter the profiles lack (NaN: not measured) is refused, naming the counter and the maps
that work without it (:func:`supported_maps`); a missing counter never becomes a zero.

``combine`` says how the co-runners make one "other" value: ``"sum"`` (total pressure) or
``"max"`` (the worst co-runner, gpulets' choice); totals and excess are always sums. With no
co-runner every "other" value is 0. A user-supplied map (:class:`CustomMap`) is any Python
function ``f(me (3,), others (k, 3)) -> (d,)``, run on a slower path; ``others`` is then given
sorted by rows, so a result never depends on the order events arrived in.

**Temporal aggregation** over the segments an execution meets (:mod:`interfpred.timeline`):

- :class:`Static`: the map at launch (the first segment);
- :class:`EWMA`: start from the launch value; at each arrival or departure during the
  execution, ``smoothed = alpha * current + (1 - alpha) * smoothed``; ``alpha=0`` equals
  Static, ``alpha=1`` is the last running set seen;
- :class:`TimeWeighted`: the duration-weighted mean of the map over every segment (exact
  exposure). A zero-length execution has no segment: every aggregation gives the map of the
  execution alone.

**Target**: ``"slowdown"`` = observed latency / solo latency, or ``"rate"`` = its inverse.
The solo latency is the *profile's* (``ProfileTable.lookup_arrays``, interpolated between
profiled batch sizes), never the trace's optional ``solo_ms`` column: a predictor's output is
turned back into latency by multiplying the same profile latency a scheduler knows before
launch (:meth:`Extractor.latency_from_target`). A trace's ``solo_ms`` (the simulator's noisy
solo work) is unknown at prediction time, so training on it would be training on a quantity
that cannot be used later.

Profiles are looked up per GPU: with ``gpus=trace.gpu`` when the table holds every GPU of the
trace, or from the table's only GPU when it holds exactly one (profiles measured on one GPU
type used for every device of that type); otherwise it is an error.

Examples
--------
>>> import numpy as np
>>> from interfpred import ProfileTable, Trace
>>> prof = ProfileTable.from_columns(gpu=["l4"] * 2, model=["a", "b"], batch_size=[1, 1],
...     solo_ms=[2.0, 4.0], sm=[0.5, 0.25], l2=[0.5, 0.5], dram=[0.25, 0.5])
>>> tr = Trace(id=[1, 2], gpu=["l4"] * 2, model=["a", "b"], batch_size=[1, 1],
...            start_ms=[0.0, 1.0], end_ms=[4.0, 6.0])
>>> fm = TimeWeighted(feature_map="gpulets").transform(tr, prof)
>>> fm.names
('l2_me', 'dram_me', 'l2_other', 'dram_other')
>>> fm.X[0]          # row 0 was alone for 1 ms, beside b for 3 ms
array([0.5  , 0.25 , 0.375, 0.375])
>>> fm.y             # slowdowns: 4 / 2 and 5 / 4
array([2.  , 1.25])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import numpy as np

from interfpred import _timeline_kernels as _k
from interfpred.constants import (
    AGGREGATIONS,
    COMBINES,
    DEFAULT_EWMA_ALPHA,
    FEATURE_MAPS,
    MAP_COUNTERS,
    MAX_RUNNING_SET,
    MIN_PREDICTED_RATE,
    TARGETS,
)
from interfpred.counters import checked_demands
from interfpred.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.profiles import ProfileTable, profile_arrays
from interfpred.timeline import Timeline, segment_arrays
from interfpred.trace import Trace

__all__ = [
    "CustomMap",
    "EWMA",
    "Extractor",
    "FeatureMatrix",
    "Static",
    "TimeWeighted",
    "feature_names",
    "make_extractor",
    "profile_arrays",
    "transform_many",
]

_MAP_IDS = {"default": _k.MAP_DEFAULT, "gpulets": _k.MAP_GPULETS, "rich": _k.MAP_RICH,
            "shares": _k.MAP_DEFAULT}  # "shares" runs the default map on share demands (see _share_block)
_SHARE_NAMES = ("share_me", "share_other")
_COMBINE_IDS = {"sum": _k.COMBINE_SUM, "max": _k.COMBINE_MAX}
_AGG_IDS = {"static": _k.AGG_STATIC, "ewma": _k.AGG_EWMA, "time-weighted": _k.AGG_TIME_WEIGHTED}
_RES = ("sm", "l2", "dram")


def feature_names(feature_map: str = "default") -> tuple[str, ...]:
    """Names of the columns a built-in feature map produces.

    Examples
    --------
    >>> feature_names("gpulets")
    ('l2_me', 'dram_me', 'l2_other', 'dram_other')
    >>> len(feature_names("rich"))
    16
    """
    if feature_map not in _MAP_IDS:
        raise InterfpredError(f"feature_map {feature_map!r} is not one of {', '.join(FEATURE_MAPS)}")
    if feature_map == "gpulets":
        return ("l2_me", "dram_me", "l2_other", "dram_other")
    if feature_map == "shares":
        return (*_SHARE_NAMES, "n_others")
    base = tuple(f"{r}_me" for r in _RES) + tuple(f"{r}_other" for r in _RES)
    if feature_map == "default":
        return base
    return (base + tuple(f"{r}_me_x_other" for r in _RES) + tuple(f"{r}_total" for r in _RES)
            + tuple(f"{r}_excess" for r in _RES) + ("n_others",))


class CustomMap:
    """A user-supplied feature map in plain Python (evaluated on a slower path).

    Parameters
    ----------
    func
        ``func(me, others) -> array-like (d,)`` with ``me`` of shape (3,) and ``others`` of
        shape (k, 3), columns ``sm, l2, dram``; ``others`` arrives sorted by rows.
    names
        The d feature names.

    Examples
    --------
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


@dataclass(frozen=True, eq=False)
class FeatureMatrix:
    """Features and target of every execution of a trace, in the trace's row order.

    Attributes
    ----------
    X
        (n, d) float64 features.
    names
        The d feature names.
    y
        (n,) target: slowdown ``latency / solo_ms`` or rate ``solo_ms / latency``.
    target
        ``"slowdown"`` or ``"rate"``.
    solo_ms
        (n,) the profile's solo latency of each row (what ``y`` is relative to).
    latency_ms
        (n,) observed latency ``end_ms - start_ms``.
    entities
        Which models each row involves (:class:`~interfpred.entities.Entities`), for
        predictors that learn per-model terms; None when the extractor did not compute them.
    """

    X: np.ndarray
    names: tuple[str, ...]
    y: np.ndarray
    target: str
    solo_ms: np.ndarray
    latency_ms: np.ndarray
    entities: Entities | None = None

    def __len__(self) -> int:
        return self.X.shape[0]


def _as_demand(x: Any, name: str, two_d: bool) -> np.ndarray:
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


class KernelSpec(NamedTuple):
    """How the compiled kernels run an extractor: the codes of its map, combine and aggregation.

    ``map_id`` is -1 for a :class:`CustomMap` (which runs in Python); ``alpha`` is the EWMA
    weight (0 for the other aggregations). Streaming state, the tracker and the chunked reader
    pass these to the kernels instead of re-deriving them.

    Examples
    --------
    >>> EWMA(0.2).kernel_spec.alpha
    0.2
    """

    map_id: int
    combine_id: int
    agg_id: int
    alpha: float


class Extractor:
    """Base of the three extractors: a feature map, a temporal aggregation and a target.

    Use :class:`Static`, :class:`EWMA` or :class:`TimeWeighted`, or :func:`make_extractor`.

    Parameters
    ----------
    feature_map
        ``"default"``, ``"gpulets"``, ``"rich"`` or a :class:`CustomMap`.
    combine
        ``"sum"`` or ``"max"``: how co-runners' demands make the "other" features.
    target
        ``"slowdown"`` or ``"rate"``.
    """

    aggregation: str = ""

    def __init__(self, *, feature_map: str | CustomMap = "default", combine: str = "sum",
                 target: str = "slowdown", shares: bool = False) -> None:
        if not isinstance(shares, (bool, np.bool_)):
            raise InterfpredError(f"shares must be True or False, got {shares!r}")
        if shares and (isinstance(feature_map, CustomMap) or feature_map == "shares"):
            raise InterfpredError("shares=True appends the share features to a built-in counter map "
                                  "(default, gpulets, rich); the 'shares' map already holds them")
        self.shares = bool(shares)
        if isinstance(feature_map, CustomMap):
            self._map_id = -1
        elif isinstance(feature_map, str) and feature_map in _MAP_IDS:
            self._map_id = _MAP_IDS[feature_map]
        else:
            raise InterfpredError(
                f"feature_map {feature_map!r} is not one of {', '.join(FEATURE_MAPS)} or a CustomMap")
        if combine not in _COMBINE_IDS:
            raise InterfpredError(f"combine {combine!r} is not one of {', '.join(COMBINES)}")
        if target not in TARGETS:
            raise InterfpredError(f"target {target!r} is not one of {', '.join(TARGETS)}")
        self.feature_map = feature_map
        self.combine = combine
        self.target = target
        self._combine_id = _COMBINE_IDS[combine]

    # ------------------------------------------------------------------ description
    @property
    def _agg_alpha(self) -> float:
        return 0.0

    @property
    def kernel_spec(self) -> KernelSpec:
        """The codes the compiled kernels take for this extractor (see :class:`KernelSpec`)."""
        return KernelSpec(self._map_id, self._combine_id, _AGG_IDS[self.aggregation], self._agg_alpha)

    @property
    def names(self) -> tuple[str, ...]:
        """The feature names, in column order."""
        if isinstance(self.feature_map, CustomMap):
            return self.feature_map.names
        return feature_names(self.feature_map) + (_SHARE_NAMES if self.shares else ())

    @property
    def uses_shares(self) -> bool:
        """True when the features depend on MPS shares (the ``shares`` map or ``shares=True``)."""
        return self.shares or self.feature_map == "shares"

    @property
    def counters(self) -> tuple[str, ...]:
        """The profile counters this extractor's map needs (a CustomMap: all three)."""
        if isinstance(self.feature_map, CustomMap):
            return _RES
        return dict(MAP_COUNTERS)[self.feature_map]

    @property
    def n_features(self) -> int:
        """Number of features d."""
        return len(self.names)

    def _custom_map(self, me: np.ndarray, others: np.ndarray) -> np.ndarray:
        """Evaluate the CustomMap of a non-built-in extractor."""
        fm = self.feature_map
        assert isinstance(fm, CustomMap)
        return fm(me, others)

    @property
    def is_builtin(self) -> bool:
        """True when the map runs inside the numba kernels (not a CustomMap)."""
        return self._map_id >= 0

    def get_spec(self) -> dict[str, Any]:
        """A JSON-able description that :func:`make_extractor` turns back into this extractor.

        Examples
        --------
        >>> EWMA(0.2, feature_map="rich", target="rate").get_spec()
        {'aggregation': 'ewma', 'alpha': 0.2, 'map': 'rich', 'combine': 'sum', 'target': 'rate'}
        """
        if not self.is_builtin:
            raise InterfpredError("an extractor with a CustomMap cannot be described as a spec")
        spec = {"aggregation": self.aggregation, "alpha": self._spec_alpha(), "map": self.feature_map,
                "combine": self.combine, "target": self.target}
        if self.shares:
            spec["shares"] = True
        return spec

    def _spec_alpha(self) -> float | None:
        return None

    def __repr__(self) -> str:
        extra = f"{self._spec_alpha()}, " if self._spec_alpha() is not None else ""
        tail = ", shares=True" if self.shares else ""
        return (f"{type(self).__name__}({extra}feature_map={self.feature_map!r}, "
                f"combine={self.combine!r}, target={self.target!r}{tail})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Extractor):
            return NotImplemented
        return (type(self) is type(other) and self._spec_alpha() == other._spec_alpha()
                and self.feature_map == other.feature_map and self.combine == other.combine
                and self.target == other.target and self.shares == other.shares)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._spec_alpha(), str(self.feature_map), self.combine, self.target))

    # ------------------------------------------------------------------ instant maps
    def map_instant(self, me: Any, others: Any) -> np.ndarray:
        """The feature map of one execution ``me`` (3,) beside ``others`` (k, 3), k >= 0.

        Examples
        --------
        >>> Static().map_instant([0.5, 0.2, 0.1], [[0.1, 0.1, 0.1], [0.2, 0.3, 0.4]])
        array([0.5, 0.2, 0.1, 0.3, 0.4, 0.5])
        """
        self._refuse_shares("map_instant")
        me_a = _as_demand(me, "me", two_d=False)
        oth = _as_demand(others, "others", two_d=True)
        if not self.is_builtin:
            return self._custom_map(me_a, oth)
        return _k.map_instant(me_a, oth, self._map_id, self._combine_id)

    def map_running_set(self, demands: Any, *, check: bool = True) -> np.ndarray:
        """The map of every member of a running set ``demands`` (k, 3) against the others: (k, d).

        This is the fast path a tracker's what-if calls: one numba call, about 2 us for k = 8
        with ``check=False`` (about 8 us with the input checks). ``check=False`` is for callers
        that already hold a C-contiguous float64 (k, 3) array of values in [0, 1] with
        k <= MAX_RUNNING_SET (such as :meth:`TimelineState.demands`); other input is then
        undefined behaviour.

        Examples
        --------
        >>> Static(combine="max").map_running_set([[0.5, 0.2, 0.1], [0.1, 0.6, 0.3]])
        array([[0.5, 0.2, 0.1, 0.1, 0.6, 0.3],
               [0.1, 0.6, 0.3, 0.5, 0.2, 0.1]])
        """
        self._refuse_shares("map_running_set")
        if not check:
            return self._map_set_unchecked(demands)
        dem = _as_demand(demands, "demands", two_d=True)
        return self._map_set_unchecked(dem)

    def map_counters_unchecked(self, dem: np.ndarray) -> np.ndarray:
        """The counter part of the map of a running set ``dem`` (k, 3), without input checks.

        For an extractor with ``shares=True`` these are the columns before the two share
        features; for the others, the whole map. ``dem`` must be what ``map_running_set(...,
        check=False)`` accepts. The ``shares`` map has no counter part.
        """
        if self.feature_map == "shares":
            raise InterfpredError("the 'shares' map has no counter part")
        return self._map_set_unchecked(dem)

    def _refuse_shares(self, what: str) -> None:
        if self.uses_shares:
            raise InterfpredError(f"{what} takes counter demands only; an extractor with share features "
                                  f"({self!r}) is computed from traces or measurements that carry a share")

    def _map_set_unchecked(self, dem: np.ndarray) -> np.ndarray:
        if self.is_builtin:
            return _k.map_running_set(dem, self._map_id, self._combine_id)
        k = dem.shape[0]
        out = np.empty((k, self.n_features))
        for a in range(k):
            out[a] = self._custom_map(dem[a], np.delete(dem, a, axis=0))
        return out

    # ------------------------------------------------------------------ batch
    def transform(self, trace: Trace, profiles: ProfileTable, *, timeline: Timeline | None = None,
                  extrapolate: bool = False, entities: str | None = None) -> FeatureMatrix:
        """Features and target of every execution of ``trace``, in its row order.

        Parameters
        ----------
        trace
            The executions.
        profiles
            Their profiles (demands and solo latency; batch sizes interpolated).
        timeline
            A :class:`~interfpred.timeline.Timeline` already built for this trace, to share
            segmentation between several extractors; built here when omitted.
        extrapolate
            Passed to the profile lookup (batch sizes outside the profiled range).
        entities
            Also fill :attr:`FeatureMatrix.entities`, keyed ``"model"`` or ``"model_batch"``
            (:func:`interfpred.entity_features.trace_entities`, aggregated like the features).

        Raises
        ------
        InterfpredError
            A row without a profile, or a zero-latency row with ``target="rate"``.
        """
        return transform_many([self], trace, profiles, timeline=timeline, extrapolate=extrapolate,
                              entities=entities)[0]

    def _features(self, seg_start, seg_end, seg_ptr, members, dem) -> np.ndarray:
        agg_id = _AGG_IDS[self.aggregation]
        alpha = self._agg_alpha
        if self.is_builtin:
            return _k.features(seg_start, seg_end, seg_ptr, members, dem, self._map_id, self._combine_id,
                               np.array([agg_id], dtype=np.int64), np.array([alpha]))[0]
        n, d = dem.shape[0], self.n_features
        out = np.zeros((n, d))
        wsum = np.zeros(n)
        seen = np.zeros(n, dtype=bool)
        for s in range(len(seg_start)):
            idx = members[seg_ptr[s]:seg_ptr[s + 1]]
            dur = float(seg_end[s] - seg_start[s])
            phis = self._map_set_unchecked(dem[idx])
            for a, i in enumerate(idx):
                _k.fold(out[i], phis[a], not seen[i], dur, agg_id, alpha)
                wsum[i] = wsum[i] + dur if seen[i] else dur
                seen[i] = True
        for i in range(n):
            if not seen[i]:
                out[i] = self._custom_map(dem[i], np.empty((0, 3)))
            elif agg_id == _k.AGG_TIME_WEIGHTED:
                out[i] = out[i] / wsum[i]
        return out

    # ------------------------------------------------------------------ target
    def target_from_latency(self, latency_ms: Any, solo_ms: Any) -> np.ndarray:
        """The target of observed latencies: slowdown ``latency / solo`` or rate ``solo / latency``."""
        lat = np.asarray(latency_ms, dtype=np.float64)
        solo = np.asarray(solo_ms, dtype=np.float64)
        return lat / solo if self.target == "slowdown" else solo / lat

    def latency_from_target(self, pred: Any, solo_ms: Any) -> np.ndarray | float:
        """Turn a predicted target back into latency (ms).

        ``slowdown``: ``solo_ms * pred``; ``rate``: ``solo_ms / max(pred, MIN_PREDICTED_RATE)``
        (a predicted rate at or below zero means "very slow", not a negative latency).

        Examples
        --------
        >>> TimeWeighted(target="rate").latency_from_target([0.5, 1.0], [4.0, 4.0])
        array([8., 4.])
        >>> Static().latency_from_target(1.5, 2.0)
        3.0
        """
        p = np.asarray(pred, dtype=np.float64)
        solo = np.asarray(solo_ms, dtype=np.float64)
        if self.target == "slowdown":
            out = solo * p
        else:
            out = solo / np.maximum(p, MIN_PREDICTED_RATE)
        return float(out) if out.ndim == 0 else out


class Static(Extractor):
    """The map at the instant of launch (the paper's snapshot features).

    Examples
    --------
    >>> Static(feature_map="gpulets", combine="max").get_spec()["aggregation"]
    'static'
    """

    aggregation = "static"


class EWMA(Extractor):
    """The map smoothed over arrivals and departures: ``s = alpha * current + (1 - alpha) * s``.

    Starts from the launch value; ``alpha=0`` equals :class:`Static`, ``alpha=1`` keeps the
    last running set seen during the execution.

    Examples
    --------
    >>> EWMA(0.8).alpha
    0.8
    """

    aggregation = "ewma"

    def __init__(self, alpha: float = DEFAULT_EWMA_ALPHA, *, feature_map: str | CustomMap = "default",
                 combine: str = "sum", target: str = "slowdown", shares: bool = False) -> None:
        try:
            a = float(alpha)
        except (TypeError, ValueError):
            raise InterfpredError(f"alpha {alpha!r} must be a number in [0, 1]") from None
        if not 0.0 <= a <= 1.0:
            raise InterfpredError(f"alpha {alpha!r} must be in [0, 1]")
        super().__init__(feature_map=feature_map, combine=combine, target=target, shares=shares)
        self.alpha = a

    @property
    def _agg_alpha(self) -> float:
        return self.alpha

    def _spec_alpha(self) -> float | None:
        return self.alpha


class TimeWeighted(Extractor):
    """The duration-weighted mean of the map over every segment (exact exposure).

    Examples
    --------
    >>> TimeWeighted(target="rate").target
    'rate'
    """

    aggregation = "time-weighted"


def transform_many(extractors: Sequence[Extractor], trace: Trace, profiles: ProfileTable, *,
                   timeline: Timeline | None = None, extrapolate: bool = False,
                   entities: str | None = None) -> list[FeatureMatrix]:
    """:meth:`Extractor.transform` of several extractors over one trace, sharing the work.

    Profiles are looked up and the trace segmented once; extractors with the same built-in map
    and combine evaluate the map once per (segment, member) and fold it into every aggregation
    in the same pass. Each result equals that extractor's own ``transform`` to the bit. With
    ``entities`` (``"model"`` or ``"model_batch"``) each result also carries the rows' entities.

    Examples
    --------
    >>> from interfpred import ProfileTable, Trace
    >>> prof = ProfileTable.from_columns(gpu=["l4"] * 2, model=["a", "b"], batch_size=[1, 1],
    ...     solo_ms=[2.0, 4.0], sm=[0.5, 0.25], l2=[0.5, 0.5], dram=[0.25, 0.5])
    >>> tr = Trace(id=[1, 2], gpu=["l4"] * 2, model=["a", "b"], batch_size=[1, 1],
    ...            start_ms=[0.0, 1.0], end_ms=[4.0, 6.0])
    >>> s, e, t = transform_many([Static(), EWMA(0.5), TimeWeighted()], tr, prof)
    >>> [float(m.X[0, 5]) for m in (s, e, t)]      # dram_other of row 0
    [0.0, 0.25, 0.375]
    """
    exs = list(extractors)
    if not exs:
        raise InterfpredError("transform_many needs at least one extractor")
    for ex in exs:
        if not isinstance(ex, Extractor):
            raise InterfpredError(f"expected Extractor objects, got {type(ex).__name__}")
    dem, solo = profile_arrays(trace, profiles, extrapolate=extrapolate)
    dem = checked_demands(exs, dem, trace.model)
    latency = np.asarray(trace.end_ms - trace.start_ms, dtype=np.float64)
    if any(ex.target == "rate" for ex in exs) and len(trace) and np.any(latency <= 0):
        i = int(np.flatnonzero(latency <= 0)[0])
        raise InterfpredError(
            f"{trace.where(i)} has zero latency: its rate solo_ms / latency is undefined; "
            "drop zero-length executions or use target='slowdown'")
    if timeline is not None:
        if not isinstance(timeline, Timeline) or timeline.n_executions != len(trace):
            raise InterfpredError("timeline was not built from this trace (row counts differ)")
        seg = (timeline.seg_start, timeline.seg_end, timeline.seg_ptr, timeline.seg_members)
    else:
        _, gcode = trace.codes("gpu")
        sa = segment_arrays(gcode, np.ascontiguousarray(trace.start_ms), np.ascontiguousarray(trace.end_ms))
        seg = (sa[1], sa[2], sa[3], sa[4])
    if len(seg[2]) > 1 and int(np.diff(seg[2]).max()) > MAX_RUNNING_SET:
        raise InterfpredError(f"more than MAX_RUNNING_SET={MAX_RUNNING_SET} executions run at once on one GPU")
    X: list[np.ndarray | None] = [None] * len(exs)
    groups: dict[tuple[int, int], list[int]] = {}
    for j, ex in enumerate(exs):
        if ex.is_builtin:
            groups.setdefault((ex._map_id, ex._combine_id), []).append(j)
        else:
            X[j] = ex._features(*seg, dem)
    for (map_id, combine_id), js in groups.items():
        agg_ids = np.array([_AGG_IDS[exs[j].aggregation] for j in js], dtype=np.int64)
        alphas = np.array([exs[j]._agg_alpha for j in js], dtype=np.float64)
        out = _k.features(*seg, dem, map_id, combine_id, agg_ids, alphas)
        for row, j in enumerate(js):
            X[j] = out[row]
    share_js = [j for j, ex in enumerate(exs) if ex.uses_shares]
    if share_js:
        # The share features are the default map (sum) over demands [share, 1, 0]: sm_me is the
        # batch's share, sm_other the sum of its co-runners', l2_other their count; the same
        # kernel aggregates them over the timeline exactly like every other feature.
        frac = np.full(len(trace), 1.0) if trace.share is None else trace.share / 100.0
        sdem = np.ascontiguousarray(np.column_stack([frac, np.ones(len(trace)), np.zeros(len(trace))]))
        agg_ids = np.array([_AGG_IDS[exs[j].aggregation] for j in share_js], dtype=np.int64)
        alphas = np.array([exs[j]._agg_alpha for j in share_js], dtype=np.float64)
        out = _k.features(*seg, sdem, _k.MAP_DEFAULT, _k.COMBINE_SUM, agg_ids, alphas)
        for row, j in enumerate(share_js):
            block = out[row][:, [0, 3, 4]]
            X[j] = block if exs[j].feature_map == "shares" else np.hstack([cast(np.ndarray, X[j]), block[:, :2]])
    results = []
    for ex, x in zip(exs, X):
        assert x is not None  # every extractor's features were computed above
        y = latency / solo if ex.target == "slowdown" else solo / latency
        ent = None
        if entities is not None:
            from interfpred.entity_features import trace_entities

            ent = trace_entities(trace, ex.aggregation, alpha=ex._agg_alpha, key=entities, segments=seg)
        results.append(FeatureMatrix(X=x, names=ex.names, y=y, target=ex.target, solo_ms=solo, latency_ms=latency,
                                     entities=ent))
    return results


_CLASSES = {"static": Static, "ewma": EWMA, "time-weighted": TimeWeighted}
_SPEC_KEYS = ("aggregation", "alpha", "map", "combine", "target", "shares")


def make_extractor(spec: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Extractor:
    """Build an extractor from a spec dict (as :meth:`Extractor.get_spec` writes) and/or keywords.

    Keys: ``aggregation`` in {static, ewma, time-weighted} (default time-weighted), ``alpha``
    (EWMA only; default ``DEFAULT_EWMA_ALPHA``), ``map`` in {default, gpulets, rich} or a
    :class:`CustomMap` (``feature_map`` is accepted as an alias), ``combine`` in {sum, max},
    ``target`` in {slowdown, rate}. Keywords override the dict.

    Examples
    --------
    >>> make_extractor({"aggregation": "ewma", "alpha": 0.2, "map": "gpulets"})
    EWMA(0.2, feature_map='gpulets', combine='sum', target='slowdown')
    >>> e = TimeWeighted(feature_map="rich", target="rate")
    >>> make_extractor(e.get_spec()) == e
    True
    """
    merged: dict[str, Any] = dict(spec or {})
    merged.update(kwargs)
    if "feature_map" in merged:
        if "map" in merged and merged["map"] != merged["feature_map"]:
            raise InterfpredError("give the feature map once, as map or as feature_map")
        merged["map"] = merged.pop("feature_map")
    unknown = sorted(set(merged) - set(_SPEC_KEYS))
    if unknown:
        raise InterfpredError(f"unknown extractor key(s) {', '.join(unknown)}; expected {', '.join(_SPEC_KEYS)}")
    agg = merged.get("aggregation", "time-weighted")
    if agg not in _CLASSES:
        raise InterfpredError(f"aggregation {agg!r} is not one of {', '.join(AGGREGATIONS)}")
    common = {"feature_map": merged.get("map", "default"), "combine": merged.get("combine", "sum"),
              "target": merged.get("target", "slowdown"), "shares": merged.get("shares", False)}
    alpha = merged.get("alpha")
    if agg == "ewma":
        return EWMA(DEFAULT_EWMA_ALPHA if alpha is None else alpha, **common)
    if alpha is not None:
        raise InterfpredError(f"alpha {alpha!r} is only meaningful for aggregation 'ewma', not {agg!r}")
    return _CLASSES[agg](**common)
