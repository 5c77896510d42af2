"""An interference model (:class:`InterferenceModel`): an extractor, a predictor and a target,
fitted, evaluated, saved and loaded as one file; the tables of its predictions."""

from interfpred.model.contention import kernel_contention_model
from interfpred.model.interference import Evaluation, InterferenceModel, load_model

__all__ = ["Evaluation", "InterferenceModel", "kernel_contention_model", "load_model"]
