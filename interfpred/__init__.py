"""interfpred: predict GPU co-location interference for ML inference batches, and keep learning.

The public names, nothing else; see docs/ for the guide.
"""

from interfpred._version import __version__
from interfpred.errors import InputError, InterfpredError
from interfpred.entities import Entities
from interfpred.ingest import KernelTable, NcuFormatError, profile_from_kernels, read_kernels
from interfpred.profiles import Profile, ProfileTable
from interfpred.predictors import (
    RLS,
    Calibrated,
    GpuletsModel,
    OfflineLinear,
    OnlineSGD,
    PredictorSpec,
    load_predictor,
    make_predictor,
)
from interfpred.trace import Trace
from interfpred.measurements import Measurements
from interfpred.timeline import Timeline, build_timeline
from interfpred.features import (
    EWMA,
    CustomMap,
    Extractor,
    FeatureMatrix,
    Static,
    TimeWeighted,
    make_extractor,
    transform_many,
)
from interfpred.streaming import FinishedExecution, RunningExecution, TimelineState
from interfpred.tracker import ColocationTracker, FinishResult
from interfpred.fleet import Fleet
from interfpred.model import InterferenceModel, load_model
from interfpred import datasets

__all__ = [
    "Entities",
    "__version__",
    "InterfpredError",
    "InputError",
    "Profile",
    "ProfileTable",
    "Trace",
    "Measurements",
    "KernelTable",
    "NcuFormatError",
    "read_kernels",
    "profile_from_kernels",
    "OfflineLinear",
    "OnlineSGD",
    "RLS",
    "Calibrated",
    "GpuletsModel",
    "make_predictor",
    "PredictorSpec",
    "load_predictor",
    "Timeline",
    "build_timeline",
    "Extractor",
    "Static",
    "EWMA",
    "TimeWeighted",
    "CustomMap",
    "FeatureMatrix",
    "make_extractor",
    "transform_many",
    "TimelineState",
    "FinishedExecution",
    "RunningExecution",
    "ColocationTracker",
    "FinishResult",
    "Fleet",
    "InterferenceModel",
    "load_model",
    "datasets",
]
