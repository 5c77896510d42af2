"""The sharing keys a profile or a measurement may carry beside ``share``: mechanism, partition, processes.

``mechanism`` is how the GPU was shared (``time_slicing``, ``mps``, ``mig``, or ``streams``: CUDA streams
of one process), ``partition`` the
MIG instance the batch ran in (GPCs such as ``3``, or a profile name such as ``3g.40gb``) and
``processes`` how many processes shared it (a positive integer). All three are text columns; an
empty cell, or no column, means unspecified: the behaviour of a table without them.

Examples
--------
>>> import numpy as np
>>> sharing_key_problem({"mechanism": np.array(["mig", "mps"]), "processes": np.array(["2", ""])}) is None
True
>>> sharing_key_problem({"mechanism": np.array(["mig", "MIG"])})
(1, "mechanism 'MIG' must be one of time_slicing, mps, mig, streams (or empty)")
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from interfpred._core.numbers import is_int_text
from interfpred.constants import MAX_PROCESSES, PROFILE_KEY_COLUMNS, SHARING_MECHANISMS

__all__ = ["sharing_key_problem"]


def sharing_key_problem(columns: Mapping[str, np.ndarray]) -> tuple[int, str] | None:
    """The first bad sharing-key cell among ``columns`` as (row index, message), or None when all are valid."""
    first: tuple[int, str] | None = None
    for name in PROFILE_KEY_COLUMNS:
        if name not in columns:
            continue
        for i, v in enumerate(np.asarray(columns[name]).astype(str).tolist()):
            if first is not None and i >= first[0]:
                break
            if name == "mechanism" and v not in ("", *SHARING_MECHANISMS):
                first = (i, f"mechanism {v!r} must be one of {', '.join(SHARING_MECHANISMS)} (or empty)")
            elif name == "processes" and v and not (is_int_text(v) and 1 <= int(v) <= MAX_PROCESSES):
                first = (i, f"processes {v!r} must be a positive integer (ASCII digits) up to MAX_PROCESSES={MAX_PROCESSES}, "
                            "or empty")
            elif name == "partition" and v != v.strip():
                first = (i, f"partition {v!r} has leading or trailing whitespace")
    return first
