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
>>> from interfpred.predictors import Calibrated, PairMean
>>> cal = Calibrated(RLS())
>>> cal.tags.wraps, inner_predictor(cal).kind, inner_predictor(RLS()).kind
(True, 'rls', 'rls')
>>> PairMean().tags.baseline, PairMean().tags.mergeable, RLS().tags.baseline
(True, True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PredictorTags", "get_tags", "inner_predictor"]


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
    #: Whether it learns per-entity terms from ``entities=`` (a sensitivity and an aggressiveness
    #: per entity, or per-pair means); False for an ablation that turns them off, which then
    #: learns no entity by design.
    entity_terms: bool = False
    #: Whether it reads per-entity covariates (``Entities.covariates``: the kernel terms of each
    #: model's profile), which the model attaches to the rows' entities for it.
    entity_covariates: bool = False
    #: The feature map the configuration search always gives it (None: any the data support). KernelBlocking
    #: reads its physics from the entities' kernel terms and takes the co-runner count alone (``corunners``),
    #: so a model whose profile lacks throughput counters is still predicted, live in a tracker too.
    own_map: str | None = None
    #: Whether it exposes those terms to the compiled entity path of the what-if projection:
    #: ``pairwise_terms(names)`` and ``backoff_terms`` (besides ``coef_``, ``intercept_``,
    #: ``n_features_in_``, ``log_target`` and ``alone_is_solo``).
    pairwise_terms: bool = False
    #: Whether its model is the same whatever the target it is declared for (it learns one quantity,
    #: such as the log slowdown, and returns it in the target's form): the configuration search scores
    #: it on one target only.
    target_free: bool = False
    #: Whether it exposes its model inside a running set to that path as ``blocking_terms(names)``
    #: (a :class:`~interfpred.predictors.blocking.BlockingTerms`, or None where it cannot):
    #: :class:`~interfpred.KernelBlocking`.
    blocking_terms: bool = False
    #: Whether it wraps another predictor, ``predictor_``, whose point predictions it keeps
    #: (:class:`~interfpred.predictors.Calibrated`); :func:`inner_predictor` reads it.
    wraps: bool = False
    #: Whether it gives latency bounds at the quantile levels ``levels_`` (``predict(X,
    #: quantile=q)``), which the model cross-fits into frozen bounds.
    gives_bounds: bool = False
    #: Whether two copies fitted on disjoint rows combine exactly: by ``merge(other)`` (RLS, the
    #: baselines) or, for the offline least squares, by its rows' sufficient statistics. The fit
    #: on partitions (Dask) takes only these.
    mergeable: bool = False
    #: Whether ``fit`` tunes its prior variances on the rows (``prior_variances_``), which a
    #: validation then fixes once instead of tuning again in every fold.
    tunes_priors: bool = False
    #: Whether it is one of the baselines every accuracy number is shown beside (no
    #: interference, global mean, per-pair mean): it ignores the feature values by design.
    baseline: bool = False


#: The tags of an object that declares none.
DEFAULT_TAGS = PredictorTags()


def get_tags(predictor: Any) -> PredictorTags:
    """``predictor.tags``, or the defaults for an object that declares none."""
    return getattr(predictor, "tags", DEFAULT_TAGS)


def inner_predictor(predictor: Any) -> Any:
    """The predictor whose point predictions ``predictor`` gives: the wrapped one (``predictor_``)
    where the tags say it wraps one, else ``predictor`` itself."""
    return predictor.predictor_ if get_tags(predictor).wraps else predictor
