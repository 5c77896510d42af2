"""What a model's kernels say about interference under spatial sharing: two terms per entity.

When batches share a GPU's SMs (MPS, several CUDA streams), the largest effect is kernel
granularity: a batch made of many short kernels waits, kernel by kernel, for the SMs that a
co-runner's long kernel holds, while the long kernel barely notices. Two numbers of a solo
profile's kernel rows carry that:

- ``log_kernel_rate``: log of the batch's kernels per millisecond of solo time (``kernels /
  solo_ms``): how often the batch asks for SMs, so how often it can be made to wait;
- ``log_kernel_hold``: log of how long this model, as a co-runner, holds the SMs a kernel of
  another batch waits for: its mean residual kernel time ``kernel_residual_ms`` (``E[d^2] / 2E[d]``,
  what a kernel arriving at a random instant waits for the running one to end) times the share of
  each SM its kernels occupy (``kernel_occupancy``, their theoretical occupancy weighted by
  duration: a kernel of one small block per SM leaves room beside it, one of full SMs does not).

The first-order physics is an excess slowdown ``kernels x hold / solo_ms`` per co-runner, whose
log is the sum of the two terms; :class:`~interfpred.predictors.KernelBlocking` learns its
coefficients and per-model corrections. The terms come from the optional kernel columns of a
profile table (``kernels``, ``kernel_sum_ms``, ``kernel_residual_ms``, ``kernel_occupancy``,
``truncated``; written by ``interfpred ingest``). A profile without them gives NaN (unknown),
never zero; one without ``kernel_occupancy`` takes the median of the models that have it (1
when none has).

A batch size that was not profiled takes the kernel count of the nearest profiled batch size of
its model (a network launches the same kernels whatever the batch) and its hold scaled by the
ratio of solo times. A report that ncu cut short (``truncated`` 1) undercounts kernels;
its count is scaled by ``solo_ms / kernel_sum_ms`` when the solo time is known.

Examples
--------
>>> from interfpred import ProfileTable
>>> prof = ProfileTable.from_columns(gpu=["h200"] * 2, model=["bert", "triad"], batch_size=[8, 1],
...     solo_ms=[0.71, 0.74], sm=[None] * 2, l2=[None] * 2, dram=[None] * 2,
...     extra={"kernels": ["108", "1"], "kernel_sum_ms": ["0.78", "0.735"],
...            "kernel_residual_ms": ["0.0043", "0.3675"], "kernel_occupancy": ["0.39", "1.0"],
...            "truncated": ["0", "0"]})
>>> cov = kernel_covariates(["bert@8", "triad@1", "vgg@4"], prof, {"bert@8": 0.71, "triad@1": 0.74})
>>> np.round(np.exp(cov), 4).tolist()     # kernels per ms, hold in ms; vgg unknown
[[152.1127, 0.0017], [1.3514, 0.3675], [nan, nan]]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from interfpred.data.entities import Entities
from interfpred.data.profiles import ProfileTable

__all__ = ["KERNEL_COVARIATES", "kernel_covariates", "has_kernel_terms", "with_kernel_covariates"]

#: The covariates, in column order.
KERNEL_COVARIATES = ("log_kernel_rate", "log_kernel_hold")
#: The profile columns they are read from.
KERNEL_COLUMNS = ("kernels", "kernel_residual_ms")


def has_kernel_terms(profiles: ProfileTable | None) -> bool:
    """Whether ``profiles`` carries kernel columns for at least one row."""
    if profiles is None or not all(c in profiles.extra_columns for c in KERNEL_COLUMNS):
        return False
    return bool(np.isfinite(_floats(profiles.column("kernels"))).any())


def _floats(col: np.ndarray) -> np.ndarray:
    out = np.full(len(col), np.nan)
    for i, v in enumerate(col.tolist()):
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f) and f > 0.0:
            out[i] = f
    return out


def _split(name: str) -> tuple[str, float | None]:
    model, sep, batch = name.rpartition("@")
    if not sep:
        return name, None
    try:
        return model, float(batch)
    except ValueError:
        return name, None


def kernel_covariates(names: Sequence[str], profiles: ProfileTable | None,
                      solo_ms: Mapping[str, float] | None = None) -> np.ndarray:
    """``(len(names), 2)`` :data:`KERNEL_COVARIATES` of each entity name (``"model"`` or ``"model@batch"``).

    ``solo_ms`` maps a name to its measured solo latency (ms), which, where given, replaces the
    profile's. Unknown (no profile with kernel columns for the model): NaN.
    """
    out = np.full((len(names), len(KERNEL_COVARIATES)), np.nan)
    if not has_kernel_terms(profiles):
        return out
    assert profiles is not None
    model_col = np.asarray(profiles.column("model")).astype(str)
    batch_col = np.asarray(profiles.column("batch_size"), dtype=np.float64)
    share_col = np.asarray(profiles.column("share"), dtype=np.float64)
    solo_col = np.asarray(profiles.column("solo_ms"), dtype=np.float64)
    kernels = _floats(profiles.column("kernels"))
    hold = _floats(profiles.column("kernel_residual_ms"))
    occ = (_floats(profiles.column("kernel_occupancy")) if "kernel_occupancy" in profiles.extra_columns
           else np.full(len(kernels), np.nan))
    occ = np.minimum(occ, 1.0)
    occ_fill = float(np.nanmedian(occ)) if np.isfinite(occ).any() else 1.0
    ksum = (_floats(profiles.column("kernel_sum_ms")) if "kernel_sum_ms" in profiles.extra_columns
            else np.full(len(kernels), np.nan))
    cut = (np.array([str(v).strip() == "1" for v in profiles.column("truncated").tolist()])
           if "truncated" in profiles.extra_columns else np.zeros(len(kernels), dtype=bool))
    solo_ms = dict(solo_ms or {})
    for i, name in enumerate(names):
        model, batch = _split(str(name))
        rows = np.flatnonzero((model_col == model) & np.isfinite(kernels) & np.isfinite(hold))
        if rows.size == 0:
            continue
        # the profiled batch size nearest in log scale, unpartitioned shares first
        want = batch if batch is not None else float(np.median(batch_col[rows]))
        r = int(rows[np.lexsort((np.abs(np.log(batch_col[rows]) - math.log(want)), share_col[rows] != 100.0))[0]])
        prof_name = f"{model}@{batch_col[r]:g}" if batch is not None else model
        solo_prof = solo_ms.get(prof_name, solo_col[r])
        n = kernels[r]
        if cut[r] and np.isfinite(ksum[r]) and ksum[r] < solo_prof:
            n *= solo_prof / ksum[r]       # the report holds only part of the batch
        solo = solo_ms.get(str(name), solo_prof * (want / batch_col[r]) if batch is not None else solo_prof)
        if not (solo > 0.0 and math.isfinite(solo)):
            continue
        out[i, 0] = math.log(n / solo)
        share = occ[r] if np.isfinite(occ[r]) else occ_fill
        out[i, 1] = math.log(hold[r] * share * solo / solo_prof)
    return out


def with_kernel_covariates(entities: Entities, solo_ms: np.ndarray, profiles: ProfileTable | None) -> Entities:
    """``entities`` with the kernel terms of every name (:func:`kernel_covariates`), each name's solo
    latency the median of its rows' (``solo_ms``, aligned with the rows); unchanged without kernel terms."""
    if not has_kernel_terms(profiles):
        return entities
    solo: dict[str, float] = {}
    own = np.asarray(entities.own)
    solo_a = np.asarray(solo_ms, dtype=np.float64)
    for k, name in enumerate(entities.names):
        mine = solo_a[own == k]
        if mine.size:
            solo[name] = float(np.median(mine))
    return entities.with_covariates(kernel_covariates(entities.names, profiles, solo))
