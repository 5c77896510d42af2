"""The rows a model learns from: features, target and entities of a trace and of measurements, for one predictor.

:func:`model_features` is what :meth:`~interfpred.InterferenceModel.features` computes, and what the
configuration search scores each candidate on, so both see the same rows.

Examples
--------
>>> from interfpred import TimeWeighted
>>> from interfpred.data.datasets import gavel_v100
>>> from interfpred.predictors import make_predictor
>>> fm = model_features(TimeWeighted(feature_map="shares"), make_predictor("entity_rls"), measurements=gavel_v100())
>>> len(fm), fm.entities.names[0]
(660, 'A3C@1')
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from interfpred.data.frames import as_measurements, as_profiles, as_trace
from interfpred.data.measurements import Measurements
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.features import Extractor, FeatureMatrix
from interfpred.features.kernel_terms import with_kernel_covariates
from interfpred.features.measurement_features import concat_features, measurement_features
from interfpred.predictors import get_tags

__all__ = ["as_inputs", "model_features"]


def as_inputs(trace: Any, profiles: Any, measurements: Any) -> tuple[Trace | None, ProfileTable | None,
                                                                  Measurements | None]:
    """The inputs as interfpred's own objects (pandas DataFrames converted); None stays None."""
    return (None if trace is None else as_trace(trace), None if profiles is None else as_profiles(profiles),
            None if measurements is None else as_measurements(measurements))


def model_features(extractor: Extractor, predictor: Any, trace: Any = None, profiles: Any = None, *,
                   measurements: Any = None) -> FeatureMatrix:
    """Features, target and entities of every execution of ``trace``, then every row of ``measurements``.

    Entities are keyed as the predictor's tags say (``entity_key``: ``"model"`` or
    ``"model_batch"``) when it uses entities, else by model (what the per-pair baseline groups by).
    """
    trace, profiles, measurements = as_inputs(trace, profiles, measurements)
    tags = get_tags(predictor)
    key = tags.entity_key if tags.uses_entities else "model"
    parts = []
    if trace is not None:
        if profiles is None:
            raise InterfpredError("a trace needs profiles (solo latency and counters per model)")
        parts.append(extractor.transform(trace, profiles, entities=key))
    if measurements is not None:
        parts.append(measurement_features(extractor, measurements, profiles, entity_key=key))
    if not parts:
        raise InterfpredError("give a trace (with profiles) or measurements")
    fm = parts[0] if len(parts) == 1 else concat_features(parts)
    # kernel terms for every name (a trace part comes without them; stacked with measurements, which
    # carry theirs, its names would otherwise stay unknown)
    if tags.entity_covariates and fm.entities is not None and (len(parts) > 1 or fm.entities.covariates is None):
        fm = replace(fm, entities=with_kernel_covariates(fm.entities, fm.solo_ms, profiles))
    return fm

