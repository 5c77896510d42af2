"""Field checks shared by the capture readers: ids, devices, times and names, refused in one line.

A capture is read into numpy arrays; each value is checked before it reaches one, so a damaged
field is an :class:`~interfpred.data.ingest.gpu_ranges.CaptureFormatError` naming the file, where
the value was (an SQLite table and row, a JSON event) and what was expected, never a wrong
trace: a time beyond :data:`~interfpred.constants.TIME_HORIZON_MS`, a device ordinal above
:data:`~interfpred.constants.CAPTURE_DEVICE_ID_MAX`, a name that cannot be written as UTF-8.

Examples
--------
>>> check_int(7.0, "correlation", "t.json", "event 'gemm'")
7
>>> check_int(float("nan"), "correlation", "t.json", "event 'gemm'")
Traceback (most recent call last):
...
interfpred.data.ingest.gpu_ranges.CaptureFormatError: t.json: event 'gemm' has correlation nan, not an integer in [-1, 9223372036854775807]
>>> device_name(3, "t.json", "event 'gemm'")
'gpu3'
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from interfpred._core.limits import check_limit
from interfpred.constants import CAPTURE_DEVICE_ID_MAX, CAPTURE_GPU_NAME_MAX, TIME_HORIZON_MS
from interfpred.data.ingest.gpu_ranges import CaptureFormatError

__all__ = ["check_int", "check_name", "check_names", "check_spans", "device_name", "gpu_type_name"]

#: First characters that make a spreadsheet read a CSV cell as a formula.
_FORMULA_STARTS = ("=", "+", "-", "@")

_INT64_MAX = 2**63 - 1


def check_int(value: Any, what: str, path: str | os.PathLike[str], where: str, *, lo: int = -1,
              hi: int = _INT64_MAX) -> int:
    """``value`` as an int in [lo, hi]: an int, or a float with an integral value; never a bool or text."""
    ok = not isinstance(value, bool) and isinstance(value, (int, float))
    if ok and isinstance(value, float):
        ok = math.isfinite(value) and value.is_integer()
    if not ok or not lo <= value <= hi:
        shown = repr(value) if not isinstance(value, (str, bytes)) else repr(value[:60])
        raise CaptureFormatError(f"{where} has {what} {shown}, not an integer in [{lo}, {hi}]", path=path)
    return int(value)


def device_name(value: Any, path: str | os.PathLike[str], where: str) -> str:
    """``gpu<ordinal>`` of a CUDA device ordinal in [0, CAPTURE_DEVICE_ID_MAX]."""
    return f"gpu{check_int(value, 'device', path, where, lo=0, hi=CAPTURE_DEVICE_ID_MAX)}"


def check_name(name: str, path: str | os.PathLike[str], where: str) -> str:
    """``name`` if it is at most NAME_MAX_CHARS long and encodes as UTF-8 (no lone surrogate)."""
    check_limit("NAME_MAX_CHARS", len(name), f"{where} has a name of characters", path=path)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CaptureFormatError(f"{where} has a name with a lone surrogate {name[exc.start]!r} at character "
                                 f"{exc.start}, not text", path=path) from None
    return name


def gpu_type_name(value: Any, path: str | os.PathLike[str], where: str) -> str:
    """A GPU type name from a capture (``"NVIDIA A100-SXM4-40GB"``), blanks around it removed, or a refusal.

    It becomes a profile's ``gpu`` cell and is printed, so it must be text of at most
    ``CAPTURE_GPU_NAME_MAX`` printable characters (no control character: an ANSI escape would
    reach the terminal), not start like a spreadsheet formula (``=``, ``+``, ``-``, ``@``) and not
    be empty. Bytes (an SQLite BLOB) are refused, not shown as ``b'...'``.

    Examples
    --------
    >>> gpu_type_name(" NVIDIA H200 ", "t.sqlite", "table TARGET_INFO_GPU device 0")
    'NVIDIA H200'
    >>> gpu_type_name("=cmd|' /C calc'!A0", "t.sqlite", "table TARGET_INFO_GPU device 0")
    Traceback (most recent call last):
    ...
    interfpred.data.ingest.gpu_ranges.CaptureFormatError: t.sqlite: table TARGET_INFO_GPU device 0 has the GPU name "=cmd|' /C calc'!A0", which starts like a spreadsheet formula
    """
    if not isinstance(value, str):
        raise CaptureFormatError(f"{where} has a GPU name of type {type(value).__name__}, not text", path=path)
    if len(value) > CAPTURE_GPU_NAME_MAX:
        raise CaptureFormatError(f"{where} has a GPU name of {len(value)} characters, longer than "
                                 f"CAPTURE_GPU_NAME_MAX={CAPTURE_GPU_NAME_MAX}", path=path)
    name = value.strip()
    bad = next((c for c in name if not c.isprintable() or "\ud800" <= c <= "\udfff"), None)
    if not name:
        raise CaptureFormatError(f"{where} has an empty GPU name", path=path)
    if bad is not None:
        raise CaptureFormatError(f"{where} has a GPU name holding the character {bad!r}, not printable text",
                                 path=path)
    if name.startswith(_FORMULA_STARTS):
        raise CaptureFormatError(f"{where} has the GPU name {name!r}, which starts like a spreadsheet formula",
                                 path=path)
    return name


def check_names(rows: int, longest: int, path: str | os.PathLike[str], what: str) -> None:
    """Refuse ``rows`` names of up to ``longest`` characters over NAME_MAX_CHARS or NAME_CELLS_MAX.

    Names are held in fixed-width arrays, ``rows x longest`` characters, so one long name among
    many rows costs as much as every name being that long: the budget is checked before the
    array is made.
    """
    check_limit("NAME_MAX_CHARS", longest, f"{what} has a name of characters", path=path)
    check_limit("NAME_CELLS_MAX", rows * longest, f"{what}: {rows} names of up to {longest} characters, in all",
                path=path)


def check_spans(start_ms: np.ndarray, end_ms: np.ndarray, path: str | os.PathLike[str], what: str,
                where: Any = None) -> None:
    """Refuse times that are not finite, beyond +-TIME_HORIZON_MS, or an end before its start.

    ``where(i)`` names row ``i`` in the message (default: ``row i+1``).
    """
    name = where if where is not None else (lambda i: f"row {i + 1}")
    with np.errstate(invalid="ignore"):
        for arr, col in ((start_ms, "start"), (end_ms, "end")):
            bad = np.flatnonzero(~(np.abs(arr) <= TIME_HORIZON_MS))
            if bad.size:
                i = int(bad[0])
                raise CaptureFormatError(f"{what} {name(i)} has {col} {float(arr[i])!r} ms, not a finite time "
                                         f"within +-{TIME_HORIZON_MS:.4g} ms", path=path)
        bad = np.flatnonzero(end_ms < start_ms)
    if bad.size:
        i = int(bad[0])
        raise CaptureFormatError(f"{what} {name(i)} ends at {float(end_ms[i])!r} ms, before its start "
                                 f"{float(start_ms[i])!r} ms", path=path)
