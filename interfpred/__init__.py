"""interfpred: predict GPU co-location interference for ML inference batches, and keep learning.

The public names, nothing else; see docs/ for the guide.

Names are imported on first use (``interfpred.RLS`` imports the predictors, numba included,
the first time it is read), so ``import interfpred`` and the command line's ``--help`` stay
fast. ``from interfpred import RLS`` works as usual.

Examples
--------
>>> import interfpred
>>> interfpred.RLS.__module__
'interfpred.predictors.rls'
>>> "RLS" in dir(interfpred)
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from interfpred._version import __version__

# Public name -> the module that defines it. Add one line per new public name.
_LAZY: dict[str, str] = {
    "InterfpredError": "interfpred.errors",
    "InputError": "interfpred.errors",
    "Entities": "interfpred.entities",
    "EntityRLS": "interfpred.predictors",
    "Measurements": "interfpred.measurements",
    "datasets": "interfpred.datasets",
    "Profile": "interfpred.profiles",
    "ProfileTable": "interfpred.profiles",
    "Trace": "interfpred.trace",
    "KernelTable": "interfpred.ingest",
    "NcuFormatError": "interfpred.ingest",
    "read_kernels": "interfpred.ingest",
    "profile_from_kernels": "interfpred.ingest",
    "OfflineLinear": "interfpred.predictors",
    "OnlineSGD": "interfpred.predictors",
    "RLS": "interfpred.predictors",
    "Calibrated": "interfpred.predictors",
    "GpuletsModel": "interfpred.predictors",
    "make_predictor": "interfpred.predictors",
    "PredictorSpec": "interfpred.predictors",
    "load_predictor": "interfpred.predictors",
    "Timeline": "interfpred.timeline",
    "build_timeline": "interfpred.timeline",
    "Extractor": "interfpred.extractors",
    "Static": "interfpred.extractors",
    "EWMA": "interfpred.extractors",
    "TimeWeighted": "interfpred.extractors",
    "CustomMap": "interfpred.feature_maps",
    "FeatureMatrix": "interfpred.feature_matrix",
    "make_extractor": "interfpred.extractor_spec",
    "transform_many": "interfpred.features",
    "TimelineState": "interfpred.streaming",
    "FinishedExecution": "interfpred.streaming",
    "RunningExecution": "interfpred.streaming",
    "ColocationTracker": "interfpred.tracker",
    "FinishResult": "interfpred.streaming",
    "Fleet": "interfpred.fleet",
    "InterferenceModel": "interfpred.model",
    "load_model": "interfpred.model",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'interfpred' has no attribute {name!r}")
    imported = importlib.import_module(module)
    value = imported if module == f"interfpred.{name}" else getattr(imported, name)
    globals()[name] = value  # later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


if TYPE_CHECKING:  # static type checkers and IDEs see the real names
    from interfpred import datasets
    from interfpred.entities import Entities
    from interfpred.errors import InputError, InterfpredError
    from interfpred.extractor_spec import make_extractor
    from interfpred.extractors import EWMA, Extractor, Static, TimeWeighted
    from interfpred.feature_maps import CustomMap
    from interfpred.feature_matrix import FeatureMatrix
    from interfpred.features import transform_many
    from interfpred.fleet import Fleet
    from interfpred.ingest import KernelTable, NcuFormatError, profile_from_kernels, read_kernels
    from interfpred.measurements import Measurements
    from interfpred.model import InterferenceModel, load_model
    from interfpred.predictors import (
        RLS,
        Calibrated,
        EntityRLS,
        GpuletsModel,
        OfflineLinear,
        OnlineSGD,
        PredictorSpec,
        load_predictor,
        make_predictor,
    )
    from interfpred.profiles import Profile, ProfileTable
    from interfpred.streaming import FinishedExecution, FinishResult, RunningExecution, TimelineState
    from interfpred.timeline import Timeline, build_timeline
    from interfpred.trace import Trace
    from interfpred.tracker import ColocationTracker
