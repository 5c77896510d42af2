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
    "Entities": "interfpred.data.entities",
    "EntityRLS": "interfpred.predictors",
    "KernelBlocking": "interfpred.predictors",
    "Measurements": "interfpred.data.measurements",
    "datasets": "interfpred.data.datasets",
    "plan": "interfpred.provisioning",
    "advise": "interfpred.provisioning",
    "validate_plan": "interfpred.provisioning",
    "Profile": "interfpred.data.profiles",
    "ProfileTable": "interfpred.data.profiles",
    "Trace": "interfpred.data.trace",
    "KernelTable": "interfpred.data.ingest",
    "NcuFormatError": "interfpred.data.ingest",
    "read_kernels": "interfpred.data.ingest",
    "profile_from_kernels": "interfpred.data.ingest",
    "OfflineLinear": "interfpred.predictors",
    "OnlineSGD": "interfpred.predictors",
    "RLS": "interfpred.predictors",
    "Calibrated": "interfpred.predictors",
    "GpuletsModel": "interfpred.predictors",
    "NoInterference": "interfpred.predictors",
    "GlobalMean": "interfpred.predictors",
    "PairMean": "interfpred.predictors",
    "FromRiver": "interfpred.predictors",
    "FromSklearn": "interfpred.predictors",
    "AsRiver": "interfpred.predictors",
    "AsSklearn": "interfpred.predictors",
    "make_predictor": "interfpred.predictors",
    "PredictorSpec": "interfpred.predictors",
    "load_predictor": "interfpred.predictors",
    "Timeline": "interfpred.features.timeline",
    "build_timeline": "interfpred.features.timeline",
    "Extractor": "interfpred.features.extractors",
    "Static": "interfpred.features.extractors",
    "EWMA": "interfpred.features.extractors",
    "TimeWeighted": "interfpred.features.extractors",
    "CustomMap": "interfpred.features.maps",
    "FeatureMatrix": "interfpred.features.matrix",
    "make_extractor": "interfpred.features.spec",
    "default_extractor": "interfpred.features.spec",
    "training_rows": "interfpred.features.spec",
    "transform_many": "interfpred.features",
    "TimelineState": "interfpred.features.streaming",
    "FinishedExecution": "interfpred.features.streaming",
    "RunningExecution": "interfpred.features.streaming",
    "ColocationTracker": "interfpred.serving.tracker",
    "FinishResult": "interfpred.serving.tracker",
    "Fleet": "interfpred.serving.fleet",
    "InterferenceModel": "interfpred.model.interference",
    "load_model": "interfpred.model.interference",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'interfpred' has no attribute {name!r}")
    imported = importlib.import_module(module)
    value = imported if module.rsplit(".", 1)[-1] == name else getattr(imported, name)
    globals()[name] = value  # later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


if TYPE_CHECKING:  # static type checkers and IDEs see the real names
    from interfpred.data import datasets
    from interfpred.data.entities import Entities
    from interfpred.data.ingest import KernelTable, NcuFormatError, profile_from_kernels, read_kernels
    from interfpred.data.measurements import Measurements
    from interfpred.data.profiles import Profile, ProfileTable
    from interfpred.data.trace import Trace
    from interfpred.errors import InputError, InterfpredError
    from interfpred.features import transform_many
    from interfpred.features.extractors import EWMA, Extractor, Static, TimeWeighted
    from interfpred.features.maps import CustomMap
    from interfpred.features.matrix import FeatureMatrix
    from interfpred.features.spec import default_extractor, make_extractor, training_rows
    from interfpred.features.streaming import FinishedExecution, RunningExecution, TimelineState
    from interfpred.features.timeline import Timeline, build_timeline
    from interfpred.model.interference import InterferenceModel, load_model
    from interfpred.predictors import (
        RLS,
        AsRiver,
        AsSklearn,
        Calibrated,
        EntityRLS,
        FromRiver,
        FromSklearn,
        GlobalMean,
        GpuletsModel,
        KernelBlocking,
        NoInterference,
        OfflineLinear,
        OnlineSGD,
        PairMean,
        PredictorSpec,
        load_predictor,
        make_predictor,
    )
    from interfpred.provisioning import advise, plan, validate_plan
    from interfpred.serving.fleet import Fleet
    from interfpred.serving.tracker import ColocationTracker, FinishResult
