"""Predictors behind one predict/update API (see :mod:`interfpred.predictors.base`)."""

from interfpred.predictors.adapters import RiverFacade, RiverRegressor, SklearnFacade, SklearnRegressor
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
from interfpred.predictors.gpulets import GpuletsModel, gpulets_utilisation
from interfpred.predictors.linear import OfflineLinear
from interfpred.predictors.rls import RLS
from interfpred.predictors.sgd import OnlineSGD

__all__ = [
    "BasePredictor",
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
