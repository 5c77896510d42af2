"""Missing hardware counters: which feature maps the profiles support, and the refusal when one is absent.

A profile's ``sm``, ``l2`` or ``dram`` may be missing (not measured): it is NaN, never zero. A
feature map that needs a missing counter is refused here, naming the counter and the maps that
work without it; the maps' needs are :data:`~interfpred.constants.MAP_COUNTERS`.

Examples
--------
>>> import numpy as np
>>> from interfpred import TimeWeighted
>>> dem = np.array([[np.nan, 0.2, 0.1]])
>>> checked_demands([TimeWeighted(feature_map="gpulets")], dem, ["m"])
array([[0. , 0.2, 0.1]])
>>> checked_demands([TimeWeighted(feature_map="rich")], dem, ["m"])
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: feature map 'rich' needs the sm counter, ... without sm: gpulets, shares, corunners
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from interfpred.constants import MAP_COUNTERS, RESOURCES
from interfpred.errors import InterfpredError

__all__ = ["checked_demands", "supported_maps"]


def supported_maps(missing: Sequence[str]) -> tuple[str, ...]:
    """The built-in feature maps that need none of the ``missing`` counters.

    Examples
    --------
    >>> supported_maps(["sm"])
    ('gpulets', 'shares', 'corunners')
    >>> supported_maps([])
    ('default', 'rich', 'gpulets', 'shares', 'corunners')
    """
    return tuple(m for m, need in MAP_COUNTERS if not set(need) & set(missing))


def checked_demands(extractors: Sequence[Any], dem: np.ndarray, models: Any) -> np.ndarray:
    """Refuse an extractor whose map needs a counter that is NaN (not measured) in ``dem``.

    Returns ``dem`` with the unused missing counters set to 0 for the kernels (no map reads
    them), so the check is the only place a missing counter is ever looked at.
    """
    nan = np.isnan(dem)
    if not nan.any():
        return dem
    missing = [r for c, r in enumerate(RESOURCES) if nan[:, c].any()]
    for ex in extractors:
        for r in ex.counters:
            if r in missing:
                i = int(np.flatnonzero(nan[:, RESOURCES.index(r)])[0])
                works = ", ".join(supported_maps(missing)) or "none"
                raise InterfpredError(
                    f"feature map {ex.feature_map!r} needs the {r} counter, which the profile of model "
                    f"{str(models[i])!r} lacks (not measured); maps that work without "
                    f"{', '.join(missing)}: {works}")
    return np.ascontiguousarray(np.where(nan, 0.0, dem))
