"""The three baselines every accuracy number stands beside, and passing entities to a predictor.

The baselines are no interference, the global mean and the per-pair mean, computed on the same
rows in the same run as the model they are shown beside. Predictors that learn per-model terms
set ``tags.uses_entities``; :func:`call` passes them the rows'
:class:`~interfpred.data.entities.Entities` and every other predictor never sees it.

Examples
--------
>>> import numpy as np
>>> from interfpred.data.entities import Entities
>>> X = np.zeros((4, 1)); y = np.array([2.0, 1.0, 2.0, 1.0])
>>> ent = Entities.from_lists(["a", "b", "a", "b"], [{"b": 1.0}, {"a": 1.0}] * 2)
>>> base = fit_baselines(X, y, entities=ent)
>>> {k: call(p, "predict", X[:2], entities=ent.take([0, 1])).tolist() for k, p in base.items()}
{'no_interference': [1.0, 1.0], 'global_mean': [1.5, 1.5], 'pair_mean': [2.0, 1.0]}
"""

from __future__ import annotations

from typing import Any

import numpy as np

from interfpred.constants import BASELINE_KINDS
from interfpred.data.entities import Entities
from interfpred.predictors import BasePredictor, make_predictor

__all__ = ["BASELINE_LABELS", "call", "fit_baselines", "make_baselines"]

#: How tables name the baselines.
BASELINE_LABELS = {"no_interference": "baseline: no interference", "global_mean": "baseline: global mean",
                   "pair_mean": "baseline: pair mean"}


def call(predictor: BasePredictor, method: str, *args: Any, entities: Entities | None = None, **kwargs: Any) -> Any:
    """``predictor.<method>(*args)``, adding ``entities=`` only for predictors with ``tags.uses_entities``."""
    if entities is not None and predictor.tags.uses_entities:
        kwargs["entities"] = entities
    return getattr(predictor, method)(*args, **kwargs)


def make_baselines(target: str | None = None) -> dict[str, BasePredictor]:
    """Fresh ``no_interference``, ``global_mean`` and ``pair_mean`` predictors (declared for ``target``), in that order."""
    return {kind: make_predictor(kind, target=target) for kind in BASELINE_KINDS}


def fit_baselines(X: np.ndarray, y: np.ndarray, *, entities: Entities | None = None,
                  sample_weight: Any = None, target: str | None = None) -> dict[str, BasePredictor]:
    """The three baselines fitted on the rows ``X``, ``y`` (pair mean keyed by ``entities``; weighted
    means with ``sample_weight``), declared for ``target``."""
    out = make_baselines(target)
    extra = {} if sample_weight is None else {"sample_weight": sample_weight}
    for p in out.values():
        call(p, "fit", X, y, entities=entities, **extra)
    return out
