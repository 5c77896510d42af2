"""What a predictor can do, declared once per class: :class:`PredictorTags`.

Every predictor carries one frozen ``tags`` object (as scikit-learn's estimator tags), read by
the contract checks, the model, the tracker and the CLI instead of loose boolean attributes.
:func:`get_tags` reads it from any object with ``predict`` and ``update``, falling back to the
defaults for objects that declare none (a scheduler's own predictor).

Examples
--------
>>> from interfpred.predictors import RLS, OfflineLinear
>>> RLS().tags.learns_online, OfflineLinear().tags.learns_online
(True, False)
>>> get_tags(object()).is_linear
False
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PredictorTags", "get_tags"]


@dataclass(frozen=True)
class PredictorTags:
    """The capabilities of one predictor; the defaults describe a plain online regressor.

    Subclasses declare theirs with :func:`dataclasses.replace` of their parent's, e.g.
    ``tags = replace(BasePredictor.tags, is_linear=True)``.
    """

    #: Whether ``update`` learns (False for offline predictors, which are frozen).
    learns_online: bool = True
    #: Whether predictions are affine in the features (then ``linear_form()`` describes them).
    is_linear: bool = False
    #: Whether ``fit``/``predict``/``update`` take ``entities=`` (an
    #: :class:`~interfpred.data.entities.Entities` table naming the models each row involves);
    #: the others refuse them, so callers pass entities only where this is set.
    uses_entities: bool = False
    #: Whether ``fit`` takes ``sample_weight=`` (row weights); the others refuse them.
    supports_weights: bool = False
    #: Whether saved states hold a pickle (wrapped third-party models): loading them needs ``trusted=True``.
    stores_pickle: bool = False
    #: Fixed input width, if the predictor defines one (gpulets: 4); None means any.
    fixed_width: int | None = None
    #: Whether ``predict(X, return_std=True)`` also gives a predictive standard deviation per row
    #: (RLS); the others refuse ``return_std=True``.
    predicts_std: bool = False
    #: What an entity is for this predictor (with ``uses_entities``): ``"model"`` or
    #: ``"model_batch"`` (a model at one batch size). The model builds its rows' entities with
    #: this key; a wrapper (:class:`~interfpred.predictors.Calibrated`) carries its predictor's.
    entity_key: str = "model"


#: The tags of an object that declares none.
DEFAULT_TAGS = PredictorTags()


def get_tags(predictor: Any) -> PredictorTags:
    """``predictor.tags``, or the defaults for an object that declares none."""
    return getattr(predictor, "tags", DEFAULT_TAGS)
