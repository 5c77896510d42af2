"""Extractors: a feature map evaluated per segment, aggregated over an execution's timeline.

An extractor is three choices: a **feature map** (:mod:`interfpred.features.maps`), a
**temporal aggregation** over the segments an execution meets (:class:`Static`: the map at
launch; :class:`EWMA`: smoothed over arrivals and departures; :class:`TimeWeighted`: the
duration-weighted mean over every segment) and a **target** (``"slowdown"`` or its inverse
``"rate"``, relative to the profile's solo latency). docs/concepts.md explains each choice.

Examples
--------
>>> ex = EWMA(alpha=0.2, feature_map="gpulets", combine="max")
>>> ex.map_instant([0.5, 0.2, 0.1], [[0.1, 0.6, 0.3]])
array([0.2, 0.1, 0.6, 0.3])
>>> ex.compiled_spec.alpha, ex.get_spec()["aggregation"]
(0.2, 'ewma')
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from interfpred._core.targets import latency_from_prediction
from interfpred.constants import (
    COMBINES,
    DEFAULT_EWMA_ALPHA,
    FEATURE_MAPS,
    MAP_COUNTERS,
    MODEL_DEFAULT_EXTRACTOR,
    RESOURCES,
    TARGETS,
)
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.features import compiled_maps as _k
from interfpred.features.batch import batch_features
from interfpred.features.maps import AGG_IDS, COMBINE_IDS, MAP_IDS, SHARE_NAMES, CustomMap, as_demand, feature_names
from interfpred.features.matrix import FeatureMatrix
from interfpred.features.timeline import Timeline

__all__ = ["EWMA", "Extractor", "CompiledSpec", "Static", "TimeWeighted"]

#: The map, combine and target every extractor takes when none is named: ``MODEL_DEFAULT_EXTRACTOR``'s.
_DEFAULT: dict[str, str] = dict(MODEL_DEFAULT_EXTRACTOR)


class CompiledSpec(NamedTuple):
    """How the compiled kernels run an extractor: the codes of its map, combine and aggregation.

    ``map_id`` is -1 for a :class:`CustomMap` (which runs in Python); ``alpha`` is the EWMA
    weight (0 for the other aggregations). Streaming state, the tracker and the chunked reader
    pass these to the kernels instead of re-deriving them.

    Examples
    --------
    >>> EWMA(alpha=0.2).compiled_spec.alpha
    0.2
    """

    map_id: int
    combine_id: int
    agg_id: int
    alpha: float


class Extractor:
    """Base of the three extractors: a feature map, a temporal aggregation and a target.

    Use :class:`Static`, :class:`EWMA` or :class:`TimeWeighted`, or
    :func:`~interfpred.features.make_extractor`.

    Parameters
    ----------
    feature_map
        ``"default"``, ``"gpulets"``, ``"rich"``, ``"shares"`` or a :class:`CustomMap`.
    combine
        ``"sum"`` or ``"max"``: how co-runners' demands make the "other" features.
    target
        ``"slowdown"`` or ``"rate"``.
    shares
        Append the MPS share features ``share_me, share_other`` to a built-in counter map.

    What is not named is ``MODEL_DEFAULT_EXTRACTOR``'s (rich map, combine sum, target rate, no
    share features), the defaults of :func:`~interfpred.features.make_extractor` and of
    ``InterferenceModel()`` too, so an extractor built by hand learns what the model learns.

    Examples
    --------
    >>> Static()
    Static(feature_map='rich', combine='sum', target='rate')
    """

    aggregation: str = ""

    def __init__(self, *, feature_map: str | CustomMap = _DEFAULT["feature_map"], combine: str = _DEFAULT["combine"],
                 target: str = _DEFAULT["target"], shares: bool = False) -> None:
        if not isinstance(shares, (bool, np.bool_)):
            raise InterfpredError(f"shares must be True or False, got {shares!r}")
        if shares and (isinstance(feature_map, CustomMap) or feature_map == "shares"):
            raise InterfpredError("shares=True appends the share features to a built-in counter map "
                                  "(default, gpulets, rich); the 'shares' map already holds them")
        self.shares = bool(shares)
        if isinstance(feature_map, CustomMap):
            self._map_id = -1
        elif isinstance(feature_map, str) and feature_map in MAP_IDS:
            self._map_id = MAP_IDS[feature_map]
        else:
            raise InterfpredError(
                f"feature_map {feature_map!r} is not one of {', '.join(FEATURE_MAPS)} or a CustomMap")
        if combine not in COMBINE_IDS:
            raise InterfpredError(f"combine {combine!r} is not one of {', '.join(COMBINES)}")
        if target not in TARGETS:
            raise InterfpredError(f"target {target!r} is not one of {', '.join(TARGETS)}")
        self.feature_map = feature_map
        self.combine = combine
        self.target = target
        self._combine_id = COMBINE_IDS[combine]

    # ------------------------------------------------------------------ description
    @property
    def _agg_alpha(self) -> float:
        return 0.0

    @property
    def compiled_spec(self) -> CompiledSpec:
        """The codes the compiled kernels take for this extractor (see :class:`CompiledSpec`)."""
        return CompiledSpec(self._map_id, self._combine_id, AGG_IDS[self.aggregation], self._agg_alpha)

    @property
    def names(self) -> tuple[str, ...]:
        """The feature names, in column order."""
        if isinstance(self.feature_map, CustomMap):
            return self.feature_map.names
        return feature_names(self.feature_map) + (SHARE_NAMES if self.shares else ())

    @property
    def uses_shares(self) -> bool:
        """True when the features depend on MPS shares (the ``shares`` map or ``shares=True``)."""
        return self.shares or self.feature_map == "shares"

    @property
    def counters(self) -> tuple[str, ...]:
        """The profile counters this extractor's map needs (a CustomMap: all three)."""
        if isinstance(self.feature_map, CustomMap):
            return RESOURCES
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
        """True when the map runs as compiled code (not a CustomMap)."""
        return self._map_id >= 0

    def get_spec(self) -> dict[str, Any]:
        """A JSON-able description that :func:`~interfpred.features.make_extractor` turns back into this.

        Examples
        --------
        >>> EWMA(alpha=0.2, feature_map="rich", target="rate").get_spec()
        {'aggregation': 'ewma', 'alpha': 0.2, 'feature_map': 'rich', 'combine': 'sum', 'target': 'rate'}
        """
        if not self.is_builtin:
            raise InterfpredError("an extractor with a CustomMap cannot be described as a spec")
        spec = {"aggregation": self.aggregation, "alpha": self._spec_alpha(), "feature_map": self.feature_map,
                "combine": self.combine, "target": self.target}
        if self.shares:
            spec["shares"] = True
        return spec

    def _spec_alpha(self) -> float | None:
        return None

    def __repr__(self) -> str:
        extra = f"alpha={self._spec_alpha()}, " if self._spec_alpha() is not None else ""
        tail = ", shares=True" if self.shares else ""
        return (f"{type(self).__name__}({extra}feature_map={self.feature_map!r}, "
                f"combine={self.combine!r}, target={self.target!r}{tail})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Extractor):
            return NotImplemented
        return (type(self) is type(other) and self.compiled_spec.alpha == other.compiled_spec.alpha
                and self.feature_map == other.feature_map and self.combine == other.combine
                and self.target == other.target and self.shares == other.shares)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._spec_alpha(), str(self.feature_map), self.combine, self.target))

    # ------------------------------------------------------------------ instant maps
    def map_instant(self, me: Any, others: Any) -> np.ndarray:
        """The feature map of one execution ``me`` (3,) beside ``others`` (k, 3), k >= 0.

        Examples
        --------
        >>> Static(feature_map="default").map_instant([0.5, 0.2, 0.1], [[0.1, 0.1, 0.1], [0.2, 0.3, 0.4]])
        array([0.5, 0.2, 0.1, 0.3, 0.4, 0.5])
        """
        self._refuse_shares("map_instant")
        me_a = as_demand(me, "me", two_d=False)
        oth = as_demand(others, "others", two_d=True)
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
        >>> Static(feature_map="default", combine="max").map_running_set([[0.5, 0.2, 0.1], [0.1, 0.6, 0.3]])
        array([[0.5, 0.2, 0.1, 0.1, 0.6, 0.3],
               [0.1, 0.6, 0.3, 0.5, 0.2, 0.1]])
        """
        self._refuse_shares("map_running_set")
        if not check:
            return self._map_set_unchecked(demands)
        dem = as_demand(demands, "demands", two_d=True)
        return self._map_set_unchecked(dem)

    def map_counters(self, demands: Any) -> np.ndarray:
        """The counter part of the map of every member of a running set ``demands`` (k, 3): (k, d).

        For an extractor with ``shares=True`` these are the columns before the two share
        features; for the others, the whole map (as :meth:`map_running_set`). The ``shares`` map
        has no counter part.

        Examples
        --------
        >>> Static(feature_map="gpulets", shares=True).map_counters([[0.5, 0.2, 0.1], [0.1, 0.6, 0.3]])
        array([[0.2, 0.1, 0.6, 0.3],
               [0.6, 0.3, 0.2, 0.1]])
        """
        if self.feature_map == "shares":
            raise InterfpredError("the 'shares' map has no counter part")
        return self._map_set_unchecked(as_demand(demands, "demands", two_d=True))

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
            A :class:`~interfpred.features.timeline.Timeline` already built for this trace, to share
            segmentation between several extractors; built here when omitted.
        extrapolate
            Passed to the profile lookup (batch sizes outside the profiled range).
        entities
            Also fill :attr:`FeatureMatrix.entities`, keyed ``"model"`` or ``"model_batch"``
            (:func:`interfpred.features.entity_features.trace_entities`, aggregated like the features).

        Examples
        --------
        >>> from interfpred import ProfileTable, Trace
        >>> prof = ProfileTable.from_columns(gpu=["l4"] * 2, model=["a", "b"], batch_size=[1, 1],
        ...     solo_ms=[2.0, 4.0], sm=[0.5, 0.25], l2=[0.5, 0.5], dram=[0.25, 0.5])
        >>> tr = Trace(id=[1, 2], device=["l4"] * 2, model=["a", "b"], batch_size=[1, 1],
        ...            start_ms=[0.0, 1.0], end_ms=[4.0, 6.0])
        >>> fm = TimeWeighted(feature_map="gpulets").transform(tr, prof)
        >>> fm.names
        ('l2_me', 'dram_me', 'l2_other', 'dram_other')
        >>> fm.X[0]          # row 0 was alone for 1 ms, beside b for 3 ms
        array([0.5  , 0.25 , 0.375, 0.375])
        >>> fm.y             # rates (the default target): 2 / 4 and 4 / 5
        array([0.5, 0.8])

        Raises
        ------
        InterfpredError
            A row without a profile, or a zero-latency row with ``target="rate"``.
        """
        return batch_features(trace, profiles, [self], timeline=timeline, extrapolate=extrapolate,
                              entities=entities)[0]

    # ------------------------------------------------------------------ target
    def target_from_latency(self, latency_ms: Any, solo_ms: Any) -> np.ndarray:
        """The target of observed latencies: slowdown ``latency / solo`` or rate ``solo / latency``."""
        lat = np.asarray(latency_ms, dtype=np.float64)
        solo = np.asarray(solo_ms, dtype=np.float64)
        return lat / solo if self.target == "slowdown" else solo / lat

    def latency_from_target(self, pred: Any, solo_ms: Any) -> np.ndarray | float:
        """Turn a predicted target back into latency (ms), clamped as on every prediction path.

        ``solo_ms / rate``, the rate clamped to ``[PREDICTED_RATE_MIN, PREDICTED_RATE_MAX]`` by
        :func:`interfpred._core.targets.latency_from_prediction` (for a slowdown target the
        rate is ``1 / pred``): a prediction never gives a latency below solo, and a rate at or
        below zero means "very slow", not a negative latency.

        Examples
        --------
        >>> TimeWeighted(target="rate").latency_from_target([0.5, 1.0], [4.0, 4.0])
        array([8., 4.])
        >>> Static(target="slowdown").latency_from_target(1.5, 2.0)
        3.0
        >>> Static(target="slowdown").latency_from_target(0.5, 2.0)   # a slowdown below 1 is clamped to 1
        2.0
        """
        out = latency_from_prediction(pred, solo_ms, self.target)
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
    >>> EWMA(alpha=0.8).alpha
    0.8
    """

    aggregation = "ewma"

    def __init__(self, *, alpha: float = DEFAULT_EWMA_ALPHA, feature_map: str | CustomMap = _DEFAULT["feature_map"],
                 combine: str = _DEFAULT["combine"], target: str = _DEFAULT["target"], shares: bool = False) -> None:
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
    >>> TimeWeighted().target     # the default target
    'rate'
    """

    aggregation = "time_weighted"
