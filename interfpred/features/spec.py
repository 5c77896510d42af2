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

from interfpred.constants import DEFAULT_EWMA_ALPHA
from interfpred.errors import InterfpredError
from interfpred.features.extractors import EWMA, Extractor, Static, TimeWeighted
from interfpred.features.maps import aggregation_name

__all__ = ["SPEC_KEYS", "make_extractor"]

#: The keys of an extractor spec.
SPEC_KEYS = ("aggregation", "alpha", "feature_map", "combine", "target", "shares")
_CLASSES: dict[str, type[Extractor]] = {"static": Static, "ewma": EWMA, "time_weighted": TimeWeighted}


def make_extractor(spec: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Extractor:
    """Build an extractor from a spec dict (as :meth:`Extractor.get_spec` writes) and/or keywords.

    Keys: ``aggregation`` in {static, ewma, time_weighted} (default time_weighted), ``alpha``
    (EWMA only; default ``DEFAULT_EWMA_ALPHA``), ``feature_map`` in {default, gpulets, rich,
    shares} or a :class:`~interfpred.features.maps.CustomMap`, ``combine`` in {sum, max}, ``target`` in {slowdown, rate}, ``shares``. Keywords
    override the dict.

    Examples
    --------
    >>> make_extractor({"aggregation": "ewma", "alpha": 0.2, "feature_map": "gpulets"})
    EWMA(alpha=0.2, feature_map='gpulets', combine='sum', target='slowdown')
    >>> e = TimeWeighted(feature_map="rich", target="rate")
    >>> make_extractor(e.get_spec()) == e
    True
    """
    merged: dict[str, Any] = dict(spec or {})
    merged.update(kwargs)
    unknown = sorted(set(merged) - set(SPEC_KEYS))
    if unknown:
        raise InterfpredError(f"unknown extractor key(s) {', '.join(unknown)}; expected {', '.join(SPEC_KEYS)}")
    agg = aggregation_name(merged.get("aggregation", "time_weighted"))
    common = {"feature_map": merged.get("feature_map", "default"), "combine": merged.get("combine", "sum"),
              "target": merged.get("target", "slowdown"), "shares": merged.get("shares", False)}
    alpha = merged.get("alpha")
    if agg == "ewma":
        return EWMA(alpha=DEFAULT_EWMA_ALPHA if alpha is None else alpha, **common)
    if alpha is not None:
        raise InterfpredError(f"alpha {alpha!r} is only meaningful for aggregation 'ewma', not {agg!r}")
    return _CLASSES[agg](**common)
