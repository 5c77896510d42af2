"""Matplotlib for the reproduction's figures, when it is installed (the ``plot`` extra).

>>> plt = pyplot()
>>> plt is None or hasattr(plt, "subplots")
True
"""

from __future__ import annotations

from typing import Any

__all__ = ["NO_MPL", "pyplot"]

#: Markdown put where a figure would be when matplotlib is not installed.
NO_MPL = "_(figure skipped: matplotlib is not installed; `pip install \".[plot]\"` draws it)_"


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt
