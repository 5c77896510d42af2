"""Predictors behind one predict/update API (see :mod:`interfpred.predictors.base` and docs/predictors.md).

Importing this package registers every built-in predictor kind, here and nowhere else. The
facades (:class:`RiverFacade`, :class:`SklearnFacade`) import river and scikit-learn (about a
second), so they are loaded on first use.
"""

from interfpred.predictors.base import BasePredictor, FrozenPredictor, LinearForm, Predictor
from interfpred.predictors.baselines import GlobalMean, NoInterference, PairMean
from interfpred.predictors.calibrated.estimator import Calibrated
from interfpred.predictors.entity_rls.estimator import EntityRLS
from interfpred.predictors.gpulets import GpuletsModel, gpulets_utilisation
from interfpred.predictors.linear import OfflineLinear
from interfpred.predictors.registry import (
    PredictorSpec,
    load_predictor,
    make_predictor,
    predictor_from_state,
    register,
    registered,
)
from interfpred.predictors.rls import RLS
from interfpred.predictors.sgd import OnlineSGD
from interfpred.predictors.tags import PredictorTags, get_tags
from interfpred.predictors.wrappers import RiverRegressor, SklearnRegressor

__all__ = [
    "BasePredictor",
    "Calibrated",
    "EntityRLS",
    "FrozenPredictor",
    "GlobalMean",
    "NoInterference",
    "PairMean",
    "GpuletsModel",
    "LinearForm",
    "OfflineLinear",
    "OnlineSGD",
    "gpulets_utilisation",
    "Predictor",
    "PredictorSpec",
    "PredictorTags",
    "RLS",
    "RiverFacade",
    "RiverRegressor",
    "SklearnFacade",
    "SklearnRegressor",
    "get_tags",
    "load_predictor",
    "make_predictor",
    "predictor_from_state",
    "register",
    "registered",
]

# The built-in kinds, registered in one place.
for _cls in (RLS, OnlineSGD, OfflineLinear, GpuletsModel, EntityRLS, NoInterference, GlobalMean, PairMean,
             Calibrated, RiverRegressor, SklearnRegressor):
    register(_cls)
del _cls

_FACADES = ("RiverFacade", "SklearnFacade")


def __getattr__(name: str):
    # The facades import scikit-learn and river (about a second): load them on first use.
    if name in _FACADES:
        from interfpred.predictors import facades

        return getattr(facades, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
