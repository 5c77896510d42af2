"""Hyperparameters given as text, ``name=value``, as on the command line's ``--param``.

Examples
--------
>>> parse_params(["forgetting=0.99", "standardize=true"])
{'forgetting': 0.99, 'standardize': True}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from interfpred.errors import InterfpredError

__all__ = ["parse_param", "parse_params"]


def parse_param(text: str) -> tuple[str, Any]:
    """``"k=v"`` -> (k, v) with v parsed as int, float, bool, None or kept as a string.

    Examples
    --------
    >>> parse_param("forgetting=0.99"), parse_param("standardize=true"), parse_param("schedule=nlms")
    (('forgetting', 0.99), ('standardize', True), ('schedule', 'nlms'))
    """
    if "=" not in text:
        raise InterfpredError(f"--param {text!r} must look like name=value")
    k, v = text.split("=", 1)
    low = v.strip().lower()
    value: Any
    if low in ("true", "false"):
        value = low == "true"
    elif low in ("none", "null"):
        value = None
    else:
        try:
            value = int(v)
        except ValueError:
            try:
                value = float(v)
            except ValueError:
                value = v
    return k.strip(), value


def parse_params(texts: Iterable[str]) -> dict[str, Any]:
    """Several ``"k=v"`` texts as one keyword dict (a later value of a name wins)."""
    return dict(parse_param(t) for t in texts)
