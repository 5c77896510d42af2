"""The batch computation behind ``Extractor.transform`` and ``transform_many``: one pass per map.

Profiles are looked up once; extractors with the same built-in map and combine evaluate the map
once per (segment, member) in one numba call and fold it into every aggregation in the same pass.
Without a given timeline that call sweeps the trace's start and end events and folds each segment
as it opens, holding only the running set (memory O(executions + running set) at any
concurrency); with one, it folds the timeline's stored segments, to the same bits. A
:class:`~interfpred.features.maps.CustomMap` runs in Python over the stored segments; the MPS share
features are the default map over share demands.

Examples
--------
>>> from interfpred import ProfileTable, Static, TimeWeighted, Trace
>>> prof = ProfileTable.from_columns(gpu=["v100"], model=["m"], batch_size=[4], solo_ms=[1.0],
...     sm=[0.5], l2=[0.25], dram=[0.5])
>>> tr = Trace(id=[7, 8], device=["v100"] * 2, model=["m"] * 2, batch_size=[4, 4], start_ms=[0.0, 2.0],
...            end_ms=[4.0, 3.0])
>>> [m.X[0, 3:].tolist() for m in batch_features(tr, prof, [Static(feature_map="default"),
...                                                     TimeWeighted(feature_map="default")])]
[[0.0, 0.0, 0.0], [0.125, 0.0625, 0.125]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from interfpred.constants import MAX_RUNNING_SET
from interfpred.data.counters import checked_demands
from interfpred.data.frames import as_profiles, as_trace
from interfpred.data.profiles import ProfileTable, profile_arrays
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.features import compiled_maps as _k
from interfpred.features.entity_features import trace_entities
from interfpred.features.maps import SHARE_COLUMNS
from interfpred.features.matrix import FeatureMatrix, refuse_zero_latency
from interfpred.features.timeline import Timeline, event_orders, refuse_crowd, trace_segments

if TYPE_CHECKING:
    from interfpred.features.extractors import Extractor

__all__ = ["batch_features"]


def custom_features(ex: Extractor, segments: tuple[np.ndarray, ...], dem: np.ndarray) -> np.ndarray:
    """Aggregated features (n, d) of an extractor with a CustomMap, folded like the kernels do."""
    seg_start, seg_end, seg_ptr, members = segments
    spec = ex.compiled_spec
    n, d = dem.shape[0], ex.n_features
    out = np.zeros((n, d))
    wsum = np.zeros(n)
    seen = np.zeros(n, dtype=bool)
    for s in range(len(seg_start)):
        idx = members[seg_ptr[s]:seg_ptr[s + 1]]
        dur = float(seg_end[s] - seg_start[s])
        phis = ex.map_running_set(dem[idx], check=False)
        for a, i in enumerate(idx):
            _k.fold(out[i], phis[a], not seen[i], dur, spec.agg_id, spec.alpha)
            wsum[i] = wsum[i] + dur if seen[i] else dur
            seen[i] = True
    for i in range(n):
        if not seen[i]:
            out[i] = ex.map_running_set(dem[i:i + 1], check=False)[0]
        elif spec.agg_id == _k.AGG_TIME_WEIGHTED:
            out[i] = out[i] / wsum[i]
    return out


def batch_features(trace: Trace, profiles: ProfileTable, exs: Sequence[Extractor], *, timeline: Timeline | None = None,
                   extrapolate: bool = False, entities: str | None = None) -> list[FeatureMatrix]:
    """Features of every row of ``trace`` for each extractor of ``exs`` (already checked to be extractors).

    The arguments are those of :func:`~interfpred.features.transform_many`; each result equals
    that extractor's own ``transform`` to the bit.
    """
    trace, profiles = as_trace(trace), as_profiles(profiles)
    dem, solo = profile_arrays(trace, profiles, extrapolate=extrapolate)
    dem = checked_demands(exs, dem, trace.model)
    latency = np.asarray(trace.end_ms - trace.start_ms, dtype=np.float64)
    refuse_zero_latency((ex.target for ex in exs), latency, trace.where)
    seg: tuple[np.ndarray, ...] | None = None
    if timeline is not None:
        seg = trace_segments(trace, timeline)
        if len(seg[2]) > 1 and int(np.diff(seg[2]).max()) > MAX_RUNNING_SET:
            raise InterfpredError(f"more than MAX_RUNNING_SET={MAX_RUNNING_SET} executions run at once on one GPU")
    else:
        _, gcode = trace.codes("device")
        start = np.ascontiguousarray(trace.start_ms, dtype=np.float64)
        end = np.ascontiguousarray(trace.end_ms, dtype=np.float64)
        so, eo = event_orders(gcode, start, end)

    def fold(d: np.ndarray, map_id: int, combine_id: int, js: list[int]) -> np.ndarray:
        """The built-in map over demands ``d`` for the aggregations of ``exs[js]``: (len(js), n, width)."""
        agg_ids = np.array([exs[j].compiled_spec.agg_id for j in js], dtype=np.int64)
        alphas = np.array([exs[j].compiled_spec.alpha for j in js], dtype=np.float64)
        if seg is not None:
            return _k.features(*seg, d, map_id, combine_id, agg_ids, alphas)
        out, stop = _k.sweep_features(gcode, start, end, so, eo, d, map_id, combine_id, agg_ids, alphas,
                                      MAX_RUNNING_SET)
        refuse_crowd(stop, gcode, start, end)
        return out

    X: list[np.ndarray | None] = [None] * len(exs)
    groups: dict[tuple[int, int], list[int]] = {}
    custom_seg = seg
    for j, ex in enumerate(exs):
        if ex.is_builtin:
            groups.setdefault(ex.compiled_spec[:2], []).append(j)
        else:
            if custom_seg is None:
                custom_seg = trace_segments(trace)
            X[j] = custom_features(ex, custom_seg, dem)
    for (map_id, combine_id), js in groups.items():
        out = fold(dem, map_id, combine_id, js)
        for row, j in enumerate(js):
            X[j] = out[row]
    share_js = [j for j, ex in enumerate(exs) if ex.uses_shares]
    if share_js:
        # The share features are the default map (sum) over demands [share, 1, 0] (SHARE_COLUMNS:
        # sm_me is the batch's share, sm_other the sum of its co-runners', l2_other their count);
        # the same kernel aggregates them over the timeline exactly like every other feature.
        frac = np.full(len(trace), 1.0) if trace.share is None else trace.share / 100.0
        sdem = np.ascontiguousarray(np.column_stack([frac, np.ones(len(trace)), np.zeros(len(trace))]))
        out = fold(sdem, _k.MAP_DEFAULT, _k.COMBINE_SUM, share_js)
        for row, j in enumerate(share_js):
            block = out[row][:, list(SHARE_COLUMNS)]
            X[j] = block if exs[j].feature_map == "shares" else np.hstack([cast(np.ndarray, X[j]), block[:, :2]])
    results = []
    for ex, x in zip(exs, X):
        assert x is not None  # every extractor's features were computed above
        ent = None
        if entities is not None:
            ent = trace_entities(trace, ex.aggregation, alpha=ex.compiled_spec.alpha, key=entities)
        results.append(FeatureMatrix(X=x, names=ex.names, y=ex.target_from_latency(latency, solo), target=ex.target,
                                     solo_ms=solo, latency_ms=latency, entities=ent))
    return results
