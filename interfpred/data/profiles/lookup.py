"""Profile values of every execution of a trace: demands and solo latency per row."""

from __future__ import annotations

from typing import Any

import numpy as np

from interfpred.data.profiles.table import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError

__all__ = ["profile_arrays"]


def profile_arrays(trace: Trace, profiles: ProfileTable, *,
                   extrapolate: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Demands (n, 3) ``[sm, l2, dram]`` and profile solo latency (n,) of every trace row.

    The GPU type of each row: when every device name of the trace is a GPU type of the table
    (a trace whose devices are named after their type, such as ``"l4"``), the row's device
    name; otherwise the table's only GPU type (a table of several types then raises).
    A missing (model, batch size) raises :class:`InterfpredError` naming the row and id.

    Examples
    --------
    >>> from interfpred import ProfileTable, Trace
    >>> prof = ProfileTable.from_columns(gpu=["l4"] * 2, model=["a"] * 2, batch_size=[1, 3],
    ...     solo_ms=[1.0, 3.0], sm=[0.1, 0.3], l2=[0.2, 0.2], dram=[0.1, 0.5])
    >>> tr = Trace(id=[1], device=["g0"], model=["a"], batch_size=[2], start_ms=[0.0], end_ms=[4.0])
    >>> dem, solo = profile_arrays(tr, prof)
    >>> dem, solo
    (array([[0.2, 0.2, 0.3]]), array([2.]))
    """
    if not isinstance(trace, Trace):
        raise InterfpredError(f"expected a Trace, got {type(trace).__name__} (convert a DataFrame with "
                              "interfpred.data.frames.as_trace)")
    if not isinstance(profiles, ProfileTable):
        raise InterfpredError(f"expected a ProfileTable, got {type(profiles).__name__} (convert a DataFrame "
                              "with interfpred.data.frames.as_profiles)")
    if len(trace) == 0:
        return np.empty((0, 3)), np.empty(0)
    table_gpus = set(profiles.gpus)
    devices = set(trace.devices)
    if devices <= table_gpus:
        gpus: Any = trace.device
    elif len(table_gpus) == 1:
        gpus = None
    else:
        missing = sorted(devices - table_gpus)
        raise InterfpredError(
            f"the profile table holds gpus {', '.join(sorted(table_gpus))} but the trace runs on devices "
            f"{', '.join(missing)}, which are not GPU types of the table; give a table of one gpu, or name "
            "each device after its GPU type")
    # Look up each distinct (device, model, batch size) once, then scatter: string work stays
    # proportional to the distinct keys, not to the rows.
    gnames, gcode = trace.codes("device")
    mnames, mcode = trace.codes("model")
    batch = trace.batch_size
    key = (gcode * len(mnames) + mcode) * (int(batch.max()) + 1) + batch
    shares = trace.share
    if shares is not None:
        levels, scode = np.unique(shares, return_inverse=True)
        key = key * len(levels) + scode.reshape(-1)
    kmax = int(key.max())
    if kmax <= 4 * len(key) + 4096:      # dense keys: O(n) without sorting
        rep = np.full(kmax + 1, -1, dtype=np.int64)
        rep[key] = np.arange(len(key))
        first = rep[rep >= 0]
        pos = np.empty(kmax + 1, dtype=np.int64)
        pos[key[first]] = np.arange(len(first))
        inverse = pos[key]
    else:
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    try:
        vals = profiles.lookup_arrays(trace.model[first], batch[first],
                                      gpus=None if gpus is None else trace.device[first],
                                      shares=None if shares is None else shares[first], extrapolate=extrapolate)
    except InterfpredError:
        # Name the first row that fails.
        _, first = np.unique(key, return_index=True)
        for i in np.sort(first):
            try:
                profiles.lookup_arrays([trace.model[i]], [batch[i]], gpus=None if gpus is None else [trace.device[i]],
                                       shares=None if shares is None else [shares[i]], extrapolate=extrapolate)
            except InterfpredError as row_exc:
                raise InterfpredError(f"{trace.where(int(i))}: {row_exc}") from None
        raise
    vals = {k: v[inverse.reshape(-1)] for k, v in vals.items()}
    dem = np.column_stack([vals["sm"], vals["l2"], vals["dram"]]).astype(np.float64)
    return np.ascontiguousarray(dem), np.ascontiguousarray(vals["solo_ms"], dtype=np.float64)
