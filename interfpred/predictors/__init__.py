"""Predictors behind one predict/update API (see :mod:`interfpred.predictors.base`)."""

from interfpred.predictors.base import (
    BasePredictor,
    Predictor,
    PredictorSpec,
    load_predictor,
    make_predictor,
    predictor_from_state,
    register,
    registered,
)
from interfpred.predictors.baselines import GlobalMean, NoInterference, PairMean
from interfpred.predictors.calibrated import Calibrated
from interfpred.predictors.entity_rls import EntityRLS
from interfpred.predictors.gpulets import GpuletsModel, gpulets_utilisation
from interfpred.predictors.linear import OfflineLinear
from interfpred.predictors.rls import RLS
from interfpred.predictors.sgd import OnlineSGD

__all__ = [
    "BasePredictor",
    "Calibrated",
    "EntityRLS",
    "GlobalMean",
    "NoInterference",
    "PairMean",
    "GpuletsModel",
    "OfflineLinear",
    "OnlineSGD",
    "gpulets_utilisation",
    "Predictor",
    "PredictorSpec",
    "RLS",
    "RiverFacade",
    "RiverRegressor",
    "SklearnFacade",
    "SklearnRegressor",
    "load_predictor",
    "make_predictor",
    "predictor_from_state",
    "register",
    "registered",
]


_ADAPTERS = ("RiverFacade", "RiverRegressor", "SklearnFacade", "SklearnRegressor")


def __getattr__(name: str):
    # The adapters import scikit-learn and river (about a second): load them on first use.
    if name in _ADAPTERS:
        from interfpred.predictors import adapters

        return getattr(adapters, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
