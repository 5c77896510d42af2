"""FeatureMatrix: the features and target of every row, as an extractor computes them.

Examples
--------
>>> import numpy as np
>>> fm = FeatureMatrix(X=np.zeros((2, 3)), names=("a", "b", "c"), y=np.ones(2), target="slowdown",
...                    solo_ms=np.ones(2), latency_ms=np.ones(2))
>>> len(fm), fm.entities is None
(2, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError

__all__ = ["FeatureMatrix"]


@dataclass(frozen=True, eq=False)
class FeatureMatrix:
    """Features and target of every execution of a trace, in the trace's row order.

    Attributes
    ----------
    X
        (n, d) float64 features.
    names
        The d feature names.
    y
        (n,) target: slowdown ``latency / solo_ms`` or rate ``solo_ms / latency``.
    target
        ``"slowdown"`` or ``"rate"``.
    solo_ms
        (n,) the profile's solo latency of each row (what ``y`` is relative to).
    latency_ms
        (n,) observed latency ``end_ms - start_ms``.
    entities
        Which models each row involves (:class:`~interfpred.data.entities.Entities`), for
        predictors that learn per-model terms; None when the extractor did not compute them.
    """

    X: np.ndarray
    names: tuple[str, ...]
    y: np.ndarray
    target: str
    solo_ms: np.ndarray
    latency_ms: np.ndarray
    entities: Entities | None = None

    def __len__(self) -> int:
        return self.X.shape[0]


def refuse_zero_latency(targets: Iterable[str], latency: np.ndarray, where: Callable[[int], str]) -> None:
    """Refuse a row of zero latency when a target is ``"rate"`` (``solo / 0`` is undefined).

    ``where(i)`` names row ``i`` in the message (``"row 3 (id 7)"``, ``"trace.csv line 4 (id 3)"``).
    """
    if "rate" in set(targets) and latency.size and np.any(latency <= 0):
        i = int(np.flatnonzero(latency <= 0)[0])
        raise InterfpredError(f"{where(i)} has zero latency: its rate solo_ms / latency is undefined; "
                              "drop zero-length executions or use target='slowdown'")
