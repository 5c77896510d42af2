"""Features of traces: extractors, feature maps and the batch transform, in one namespace.

An extractor is a feature map φ(me, co-runners) evaluated on every segment of an execution's
timeline, a temporal aggregation of those values (:class:`Static`, :class:`EWMA`,
:class:`TimeWeighted`) and a target (slowdown or rate). The pieces live in
:mod:`interfpred.features.maps` (map names, :class:`CustomMap`), :mod:`interfpred.features.extractors`
(the extractor classes), :mod:`interfpred.features.matrix` (:class:`FeatureMatrix`) and
:mod:`interfpred.features.spec` (:func:`make_extractor`); the package gathers them and adds
:func:`transform_many`. docs/concepts.md explains maps, aggregations and targets.

Examples
--------
>>> ex = make_extractor({"aggregation": "ewma", "alpha": 0.2, "feature_map": "gpulets"})
>>> ex == EWMA(alpha=0.2, feature_map="gpulets"), feature_names("gpulets")[2:]
(True, ('l2_other', 'dram_other'))
"""

from __future__ import annotations

from collections.abc import Sequence

from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.features.batch import batch_features
from interfpred.features.extractors import EWMA, CompiledSpec, Extractor, Static, TimeWeighted
from interfpred.features.maps import CustomMap, feature_names
from interfpred.features.matrix import FeatureMatrix
from interfpred.features.spec import default_extractor, make_extractor, training_rows
from interfpred.features.timeline import Timeline

__all__ = [
    "CustomMap",
    "EWMA",
    "Extractor",
    "FeatureMatrix",
    "CompiledSpec",
    "Static",
    "TimeWeighted",
    "default_extractor",
    "feature_names",
    "make_extractor",
    "training_rows",
    "transform_many",
]


def transform_many(trace: Trace, profiles: ProfileTable, extractors: Sequence[Extractor], *,
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
    >>> cols = {"model": ["x", "y"], "batch_size": [2, 2]}
    >>> prof = ProfileTable.from_columns(gpu=["a100"] * 2, **cols, solo_ms=[1.0, 2.0], sm=[0.25, 0.5], l2=[0.25, 0.5], dram=[0.5, 0.25])
    >>> tr = Trace(id=[1, 2], device=["a100"] * 2, **cols, start_ms=[0.0, 3.0], end_ms=[4.0, 6.0])
    >>> s, e, t = transform_many(tr, prof, [Static(), EWMA(alpha=0.5), TimeWeighted()])
    >>> [float(m.X[0, 5]) for m in (s, e, t)]      # dram_other of row 0: y ran beside it for 1 of 4 ms
    [0.0, 0.125, 0.0625]
    """
    exs = list(extractors)
    if not exs:
        raise InterfpredError("transform_many needs at least one extractor")
    for ex in exs:
        if not isinstance(ex, Extractor):
            raise InterfpredError(f"expected Extractor objects, got {type(ex).__name__}")
    return batch_features(trace, profiles, exs, timeline=timeline, extrapolate=extrapolate, entities=entities)
