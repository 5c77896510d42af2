"""Predictors behind one predict/update API (see :mod:`interfpred.predictors.base` and docs/predictors.md).

Importing this package registers every built-in predictor kind, here and nowhere else. Our
predictors as river / scikit-learn estimators (:class:`AsRiver`, :class:`AsSklearn`) import
river and scikit-learn (about a second), so they are loaded on first use.
"""

from interfpred.predictors.base import BasePredictor, FrozenPredictor, LinearForm, Predictor
from interfpred.predictors.baselines import GlobalMean, NoInterference, PairMean
from interfpred.predictors.blocking import KernelBlocking
from interfpred.predictors.calibrated.estimator import BoundForm, Calibrated
from interfpred.predictors.entity_rls.estimator import EntityRLS
from interfpred.predictors.from_peers import FromRiver, FromSklearn
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
from interfpred.predictors.tags import PredictorTags, get_tags, inner_predictor

__all__ = [
    "BasePredictor",
    "BoundForm",
    "Calibrated",
    "EntityRLS",
    "FrozenPredictor",
    "GlobalMean",
    "NoInterference",
    "PairMean",
    "GpuletsModel",
    "KernelBlocking",
    "LinearForm",
    "OfflineLinear",
    "OnlineSGD",
    "gpulets_utilisation",
    "Predictor",
    "PredictorSpec",
    "PredictorTags",
    "RLS",
    "AsRiver",
    "FromRiver",
    "AsSklearn",
    "FromSklearn",
    "get_tags",
    "inner_predictor",
    "load_predictor",
    "make_predictor",
    "predictor_from_state",
    "register",
    "registered",
]

# The built-in kinds, registered in one place.
for _cls in (RLS, OnlineSGD, OfflineLinear, GpuletsModel, EntityRLS, KernelBlocking, NoInterference, GlobalMean,
             PairMean, Calibrated, FromRiver, FromSklearn):
    register(_cls)
del _cls

_AS_PEERS = ("AsRiver", "AsSklearn")


def __getattr__(name: str):
    # AsRiver and AsSklearn import scikit-learn and river (about a second): load them on first use.
    if name in _AS_PEERS:
        from interfpred.predictors import as_peers

        return getattr(as_peers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
