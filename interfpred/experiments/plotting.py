"""matplotlib for the experiments' figures, imported only when a figure is drawn.

Examples
--------
>>> try:
...     plt = pyplot()
... except InterfpredError as exc:
...     plt = None
...     assert "plot" in str(exc)
"""

from __future__ import annotations

from typing import Any

from interfpred.errors import InterfpredError

__all__ = ["pyplot"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (no display needed).

    Raises
    ------
    InterfpredError
        matplotlib is not installed (``pip install "interfpred[plot]"``, the ``plot`` extra).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InterfpredError('drawing figures needs matplotlib: pip install "interfpred[plot]" '
                              "(the plot extra)") from None
    return plt
