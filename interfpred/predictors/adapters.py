"""Bridges to river and scikit-learn, both ways (the home of their import path).

* :class:`RiverRegressor` and :class:`SklearnRegressor` (:mod:`interfpred.predictors.wrappers`)
  make *any* river or scikit-learn regressor usable as an interfpred predictor.
* :class:`RiverFacade` and :class:`SklearnFacade` (:mod:`interfpred.predictors.facades`) make
  *our* predictors usable inside river and scikit-learn; importing them imports both libraries.
"""

from __future__ import annotations

from interfpred.predictors.facades import RiverFacade, SklearnFacade
from interfpred.predictors.wrappers import RiverRegressor, SklearnRegressor

__all__ = ["RiverRegressor", "SklearnRegressor", "RiverFacade", "SklearnFacade"]
