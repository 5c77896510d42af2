"""EntityRLS: recursive least squares on the features plus per-model and per-pair terms."""

from interfpred.predictors.entity_rls.estimator import EntityRLS

__all__ = ["EntityRLS"]
