"""Extractor specs: the JSON-able dict ``Extractor.get_spec`` writes and :func:`make_extractor` reads.

Keys: ``aggregation`` (``static``, ``ewma``, ``time_weighted``), ``alpha`` (EWMA only),
``feature_map``, ``combine``, ``target`` and ``shares``.

Examples
--------
>>> make_extractor({"aggregation": "static", "feature_map": "gpulets"}).get_spec()["feature_map"]
'gpulets'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interfpred.constants import MODEL_DEFAULT_EXTRACTOR
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.features.extractors import EWMA, Extractor, Static, TimeWeighted
from interfpred.features.maps import aggregation_name
from interfpred.features.matrix import FeatureMatrix

__all__ = ["SPEC_KEYS", "default_extractor", "make_extractor", "training_rows"]

#: The keys of an extractor spec.
SPEC_KEYS = ("aggregation", "alpha", "feature_map", "combine", "target", "shares")
_CLASSES: dict[str, type[Extractor]] = {"static": Static, "ewma": EWMA, "time_weighted": TimeWeighted}


def make_extractor(spec: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Extractor:
    """Build an extractor from a spec dict (as :meth:`Extractor.get_spec` writes) and/or keywords.

    Keys: ``aggregation`` in {static, ewma, time_weighted}, ``alpha`` (EWMA only; default
    ``DEFAULT_EWMA_ALPHA``), ``feature_map`` in {default, gpulets, rich, shares} or a
    :class:`~interfpred.features.maps.CustomMap`, ``combine`` in {sum, max}, ``target`` in
    {slowdown, rate}, ``shares`` (default False). Keywords override the dict. A key not named
    takes its value from ``MODEL_DEFAULT_EXTRACTOR`` (time_weighted, rich, sum, rate), as the
    extractor classes do, so ``make_extractor({})`` is :func:`default_extractor`.

    Examples
    --------
    >>> make_extractor({"aggregation": "ewma", "alpha": 0.2, "feature_map": "gpulets"})
    EWMA(alpha=0.2, feature_map='gpulets', combine='sum', target='rate')
    >>> make_extractor({}) == default_extractor()
    True
    >>> e = TimeWeighted(feature_map="rich", target="rate")
    >>> make_extractor(e.get_spec()) == e
    True
    """
    merged: dict[str, Any] = dict(spec or {})
    merged.update(kwargs)
    unknown = sorted(set(merged) - set(SPEC_KEYS))
    if unknown:
        raise InterfpredError(f"unknown extractor key(s) {', '.join(unknown)}; expected {', '.join(SPEC_KEYS)}")
    agg = aggregation_name(merged.get("aggregation", dict(MODEL_DEFAULT_EXTRACTOR)["aggregation"]))
    # what is not named is left to the class, whose defaults are MODEL_DEFAULT_EXTRACTOR's
    common = {k: merged[k] for k in ("feature_map", "combine", "target", "shares") if k in merged}
    alpha = merged.get("alpha")
    if agg == "ewma":
        return EWMA(**common) if alpha is None else EWMA(alpha=alpha, **common)
    if alpha is not None:
        raise InterfpredError(f"alpha {alpha!r} is only meaningful for aggregation 'ewma', not {agg!r}")
    return _CLASSES[agg](**common)


def default_extractor() -> Extractor:
    """The extractor of ``InterferenceModel()``, ``interfpred fit`` and ``ColocationTracker`` when none is given.

    ``MODEL_DEFAULT_EXTRACTOR``: time-weighted exposure over the rich map, target rate (the best
    configuration of the reproduction).

    Examples
    --------
    >>> default_extractor()
    TimeWeighted(feature_map='rich', combine='sum', target='rate')
    """
    return make_extractor(dict(MODEL_DEFAULT_EXTRACTOR))


def training_rows(trace: Trace, profiles: ProfileTable, extractor: Extractor | None = None, *,
                  entities: str | None = None, extrapolate: bool = False) -> FeatureMatrix:
    """Rows to fit a predictor a :class:`~interfpred.ColocationTracker` will serve: features and target.

    ``fm.X`` are the features and ``fm.y`` the target of every finished execution of ``trace``,
    in the convention of ``extractor`` (default :func:`default_extractor`, the tracker's own), so
    ``predictor.fit(fm.X, fm.y)`` and ``ColocationTracker(profiles, predictor, extractor)`` agree.
    A predictor built without ``target=`` does not know which target it learns (one an
    :class:`~interfpred.InterferenceModel` holds is declared for its extractor's), so pass the
    same ``extractor`` to both, or declare it: ``RLS(target=extractor.target)``.
    ``entities`` (``"model"`` or ``"model_batch"``) adds the rows' entities for predictors that
    learn per-model terms; ``extrapolate`` is passed to the profile lookup.

    Examples
    --------
    >>> import numpy as np
    >>> from interfpred.sim.workload import mix_scenario
    >>> from interfpred import RLS, ColocationTracker
    >>> sc = mix_scenario(["resnet50", "vgg19"], rho=0.9, executions=200, seed=1)
    >>> fm = training_rows(sc.traces["trace"], sc.profiles)
    >>> fm.X.shape[1], bool(np.allclose(fm.y, fm.solo_ms / fm.latency_ms))   # rich map; y is the rate
    (16, True)
    >>> tracker = ColocationTracker(sc.profiles, RLS().fit(fm.X, fm.y))
    """
    ex = default_extractor() if extractor is None else extractor
    if not isinstance(ex, Extractor):
        raise InterfpredError(f"extractor must be an Extractor, got {type(ex).__name__}")
    return ex.transform(trace, profiles, extrapolate=extrapolate, entities=entities)
