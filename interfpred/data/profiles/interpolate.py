"""Linear interpolation of one (gpu, model)'s profiled rows, in batch size and then in MPS share.

Plain functions over the rows' arrays; :meth:`ProfileTable.lookup` and
:meth:`ProfileTable.lookup_arrays <interfpred.ProfileTable.lookup_arrays>` validate their
arguments and call them.

Examples
--------
>>> import numpy as np
>>> rows = {"solo_ms": np.array([1.0, 3.0]), "sm": np.array([0.1, 0.3]),
...         "l2": np.array([0.2, 0.2]), "dram": np.array([0.1, 0.5])}
>>> interpolate_batch(np.array([1, 3]), rows, np.array([2.0]), extrapolate=False,
...                   model="m", gpu="l4", share=100.0)["solo_ms"]
array([2.])
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from interfpred.constants import DEFAULT_SHARE, PROFILE_COLUMNS, PROFILE_EXTRAPOLATE_MIN_SOLO_SHARE, RESOURCES
from interfpred.errors import InterfpredError

__all__ = ["NUMERIC", "interpolate_batch", "interpolate_group", "lerp"]

#: The interpolated columns: solo latency and the three throughputs.
NUMERIC = tuple(c for c in PROFILE_COLUMNS if c not in ("gpu", "model", "batch_size"))


def lerp(v0: np.ndarray, v1: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``(1 - w) v0 + w v1`` that reproduces each end exactly (a missing value at the other end stays out)."""
    mid = (1.0 - w) * v0 + w * v1
    return np.where(w == 0.0, v0, np.where(w == 1.0, v1, mid))


def interpolate_group(batch: np.ndarray, share: np.ndarray, values: Mapping[str, np.ndarray], b: np.ndarray,
                      s: np.ndarray, *, extrapolate: bool, model: str, gpu: str) -> dict[str, np.ndarray]:
    """Values at batch sizes ``b`` and shares ``s`` from the rows of one (gpu, model).

    The rows (``batch``, ``share``, ``values``) are sorted by (share, batch size). Linear in
    batch size at each profiled share, then linear in share between the two around it (the
    nearest pair outside); ``model`` and ``gpu`` only serve error messages.
    """
    levels, starts = np.unique(share, return_index=True)
    bounds = [*starts, len(share)]
    if not extrapolate and np.any((s < levels[0]) | (s > levels[-1])):
        bad = s[(s < levels[0]) | (s > levels[-1])][0]
        raise InterfpredError(
            f"share {bad:g} of model {model!r} on gpu {gpu!r} is outside the profiled shares "
            f"{', '.join(f'{v:g}' for v in levels)}; profile it, or pass extrapolate=True to use the nearest")

    def at_level(k: int, bb: np.ndarray) -> dict[str, np.ndarray]:
        lo, hi = bounds[k], bounds[k + 1]
        return interpolate_batch(batch[lo:hi], {key: v[lo:hi] for key, v in values.items()}, bb,
                                 extrapolate=extrapolate, model=model, gpu=gpu, share=float(share[lo]))

    if len(levels) == 1:
        return at_level(0, b)
    j = np.clip(np.searchsorted(levels, s, side="right") - 1, 0, len(levels) - 2)
    w = np.clip((s - levels[j]) / (levels[j + 1] - levels[j]), 0.0, 1.0)
    res = {k: np.empty(b.shape) for k in NUMERIC}
    for k in np.unique(j):
        idx = np.flatnonzero(j == k)
        v0 = at_level(k, b[idx])
        v1 = at_level(k + 1, b[idx])
        for key in NUMERIC:
            res[key][idx] = lerp(v0[key], v1[key], w[idx])
    return res


def interpolate_batch(batch: np.ndarray, values: Mapping[str, np.ndarray], b: np.ndarray, *, extrapolate: bool,
                      model: str, gpu: str, share: float) -> dict[str, np.ndarray]:
    """Values at batch sizes ``b`` from rows of one (gpu, model, share), sorted by batch size.

    Outside the profiled sizes: an error, or with ``extrapolate`` the line through the two
    nearest (throughputs clipped to [0, 1], latency kept positive). ``model``, ``gpu`` and
    ``share`` only serve error messages.
    """
    bs = batch.astype(np.float64)
    if not extrapolate:
        out = (b < bs[0]) | (b > bs[-1])
        if np.any(out):
            bad = b[out][0]
            at = "" if share == DEFAULT_SHARE else f" at share {share:g}"
            raise InterfpredError(
                f"batch size {bad:g} of model {model!r} on gpu {gpu!r}{at} is outside the "
                f"profiled range {int(bs[0])}..{int(bs[-1])}; pass extrapolate=True to extend it linearly")
    res: dict[str, np.ndarray] = {}
    if len(bs) == 1:
        for k in NUMERIC:
            res[k] = np.full(b.shape, values[k][0])
        return res
    # Index of the left neighbour, clamped so points outside use the outermost pair.
    j = np.clip(np.searchsorted(bs, b, side="right") - 1, 0, len(bs) - 2)
    b0, b1 = bs[j], bs[j + 1]
    w = (b - b0) / (b1 - b0)
    for k in NUMERIC:
        v = values[k]
        res[k] = lerp(v[j], v[j + 1], w)
    if extrapolate:
        for k in RESOURCES:
            res[k] = np.clip(res[k], 0.0, 1.0)
        # Keep latency positive: never below the smallest profiled latency's fraction.
        res["solo_ms"] = np.maximum(res["solo_ms"], np.min(values["solo_ms"]) * PROFILE_EXTRAPOLATE_MIN_SOLO_SHARE)
    return res
