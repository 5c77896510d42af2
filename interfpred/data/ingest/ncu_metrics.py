"""What Nsight Compute prints, and how its values become the library's units.

The metric labels and names each quantity may go by (best first), the launch columns' labels and
names, the identity columns, time, percent and byte units, NVTX stacks, and the pieces both CSV
page readers share: number parsing, row checks and the assembly of a
:class:`~interfpred.data.ingest.KernelTable`. Every refusal is an
:class:`NcuFormatError` naming the file and the line. Formats: docs/profiling.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable

import numpy as np

from interfpred.constants import KERNEL_LAUNCH_COLUMNS, NCU_PERCENT_TOLERANCE
from interfpred.data.ingest.kernel_table import KernelTable
from interfpred.data.ingest.ncu_log import scan_ncu_log
from interfpred.errors import InputError

__all__ = [
    "NcuFormatError", "QUANTITIES", "QUANTITY_LABEL", "METRIC_ALIASES", "METRIC_PRIORITY", "NO_PRIORITY",
    "DETAILS_ONLY", "LAUNCH_SLOTS", "LAUNCH_ALIASES", "LAUNCH_PRIORITY", "identity_name", "nvtx_innermost",
    "parse_number", "convert_metric", "convert_launch", "launch_table", "is_kernel_id", "skip_or_refuse_row", "require_columns",
    "table_from_rows",
]


class NcuFormatError(InputError):
    """An Nsight Compute file that cannot be read: the path, the line and what was wrong.

    Examples
    --------
    >>> raise NcuFormatError("Duration 0 ns is not positive", path="report.csv", line=12)
    Traceback (most recent call last):
    ...
    interfpred.data.ingest.ncu_metrics.NcuFormatError: report.csv line 12: Duration 0 ns is not positive
    """


# ---------------------------------------------------------------------------------- metrics
#: The four quantities, in the order of KernelTable's columns.
QUANTITIES = ("duration", "sm", "l2", "dram")
QUANTITY_LABEL = {
    "duration": "Duration", "sm": "Compute (SM) Throughput",
    "l2": "L2 Cache Throughput", "dram": "DRAM Throughput",
}

# Metric labels (``--print-metric-name label``, the default) and names, best first.  A kernel
# takes the best one present; older speed-of-light names only count where nothing newer is.
METRIC_ALIASES: dict[str, tuple[str, ...]] = {
    "duration": (
        "Duration", "gpu__time_duration.sum", "gpu__time_duration",
    ),
    "sm": (
        "Compute (SM) Throughput", "Compute (SM) [%]", "SM [%]", "SOL SM",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm__sol_pct", "sm__throughput.avg.pct",
    ),
    "l2": (
        "L2 Cache Throughput", "L2 Cache [%]", "SOL L2", "SOL L2 Cache",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "lts__t_sectors.avg.pct_of_peak_sustained_elapsed", "ltc__sol_pct", "lts__sol_pct",
    ),
    "dram": (
        "DRAM Throughput", "DRAM [%]", "SOL DRAM", "SOL FB",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "fbpa__sol_pct", "dram__sol_pct",
    ),
}
#: metric label or name -> (quantity index, priority: lower is better)
METRIC_PRIORITY: dict[str, tuple[int, int]] = {
    alias: (q, p) for q, name in enumerate(QUANTITIES) for p, alias in enumerate(METRIC_ALIASES[name])
}
NO_PRIORITY = 1 << 30

# ---------------------------------------------------------------------------------- launch columns
#: What a launch row may carry: the KernelTable launch columns, then the three parts of the shared
#: memory per block (driver, dynamic, static) that the details page lists instead of their sum.
LAUNCH_SLOTS = (*KERNEL_LAUNCH_COLUMNS, "shared_mem_driver", "shared_mem_dynamic", "shared_mem_static")
_SHARED_PARTS = (LAUNCH_SLOTS.index("shared_mem_driver"), LAUNCH_SLOTS.index("shared_mem_dynamic"),
                 LAUNCH_SLOTS.index("shared_mem_static"))
_SHARED_SLOTS = {KERNEL_LAUNCH_COLUMNS.index("shared_mem_per_block"), *_SHARED_PARTS}
_OCCUPANCY_SLOT = KERNEL_LAUNCH_COLUMNS.index("theoretical_occupancy")
# Details-page labels (sections "Launch Statistics" and "Occupancy") and metric names, best first.
LAUNCH_ALIASES: dict[str, tuple[str, ...]] = {
    "grid_blocks": ("Grid Size", "launch__grid_size"),
    "block_threads": ("Block Size", "launch__block_size"),
    "waves_per_sm": ("Waves Per SM", "launch__waves_per_multiprocessor"),
    "registers_per_thread": ("Registers Per Thread", "launch__registers_per_thread"),
    "shared_mem_per_block": ("launch__shared_mem_per_block",),
    "occupancy_limit_blocks": ("Block Limit SM", "launch__occupancy_limit_blocks"),
    "occupancy_limit_registers": ("Block Limit Registers", "launch__occupancy_limit_registers"),
    "occupancy_limit_shared_mem": ("Block Limit Shared Mem", "launch__occupancy_limit_shared_mem"),
    "occupancy_limit_warps": ("Block Limit Warps", "launch__occupancy_limit_warps"),
    "sm_count": ("# SMs", "launch__sm_count"),
    "theoretical_occupancy": ("Theoretical Occupancy", "sm__maximum_warps_per_active_cycle_pct"),
    "shared_mem_driver": ("Driver Shared Memory Per Block", "launch__shared_mem_per_block_driver"),
    "shared_mem_dynamic": ("Dynamic Shared Memory Per Block", "launch__shared_mem_per_block_dynamic"),
    "shared_mem_static": ("Static Shared Memory Per Block", "launch__shared_mem_per_block_static"),
}
#: label or metric name -> (launch slot index, priority: lower is better)
LAUNCH_PRIORITY: dict[str, tuple[int, int]] = {
    alias: (q, p) for q, name in enumerate(LAUNCH_SLOTS) for p, alias in enumerate(LAUNCH_ALIASES[name])
}
# Byte units (ncu scales by 1000 unless told --print-units base), per block or not.
_BYTE_UNITS = {"": 1.0, "byte": 1.0, "bytes": 1.0, "B": 1.0, "Kbyte": 1e3, "KB": 1e3, "Mbyte": 1e6, "MB": 1e6,
               "Gbyte": 1e9, "GB": 1e9, "Kibyte": 1024.0, "KiB": 1024.0, "Mibyte": 1024.0**2, "MiB": 1024.0**2}

# Duration units, long (older ncu) and short (2022 on), to milliseconds: value * factor / divisor.
# Dividing by 1e6 gives the double nearest to 734944 ns in ms (0.734944); multiplying by 1e-6 does not.
_TIME_UNITS = {
    "ns": (1.0, 1e6), "nsecond": (1.0, 1e6), "nanosecond": (1.0, 1e6),
    "us": (1.0, 1e3), "usecond": (1.0, 1e3), "microsecond": (1.0, 1e3), "µs": (1.0, 1e3),
    "ms": (1.0, 1.0), "msecond": (1.0, 1.0), "millisecond": (1.0, 1.0),
    "s": (1e3, 1.0), "second": (1e3, 1.0),
}
_PERCENT_UNITS = {"%": 0.01}
_MISSING = {"n/a", "N/A", "", "-"}

# Identity columns of both pages, to KernelTable column names.
_IDENTITY = {
    "ID": "id", "Process ID": "process_id", "Process Name": "process_name",
    "Host Name": "host_name", "Kernel Name": "name", "Kernel Time": "kernel_time",
    "Context": "context", "Stream": "stream", "Block Size": "block_size", "Grid Size": "grid_size",
    "Device": "device", "CC": "cc",
}
DETAILS_ONLY = {"Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name",
                 "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"}


def identity_name(header: str) -> str | None:
    if header in _IDENTITY:
        return _IDENTITY[header]
    if "Push/Pop_Range" in header:
        return "nvtx"
    if "Start/Stop_Range" in header:
        return "nvtx_start_stop"
    return None


_NVTX_SEGMENT = re.compile(r'"([^"]*)"')


def nvtx_innermost(value: str) -> str:
    """The innermost NVTX range name in an ncu ``--nvtx`` column value ('' when none).

    ncu prints the push/pop stack of the launching thread as the thread id followed by one
    quoted ``domain:range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg`` entry per level,
    outermost first.

    Examples
    --------
    >>> nvtx_innermost('7  "<default domain>:model:none:none:none:none:none:none"  '
    ...                '"<default domain>:batch_8:none:none:none:none:none:none" ')
    'batch_8'
    >>> nvtx_innermost('<default domain>:bs 4:none:none:none:none:none:none')
    'bs 4'
    >>> nvtx_innermost('')
    ''
    """
    segments = _NVTX_SEGMENT.findall(value)
    if not segments:
        text = value.strip()
        segments = [text] if ":" in text else []
    if not segments:
        return ""
    parts = segments[-1].split(":")
    if len(parts) >= 8:
        return ":".join(parts[1:-6])
    return parts[1] if len(parts) > 1 else parts[0]


def require_columns(header: list[str], names: Iterable[str], path: str, line: int) -> dict[str, int]:
    """Column positions of ``names`` in ``header``; refuse a header that lacks any."""
    missing = [n for n in names if n not in header]
    if missing:
        raise NcuFormatError(
            f"unknown layout: header lacks {', '.join(missing)}; header is {','.join(header)}",
            path=path, line=line)
    return {n: header.index(n) for n in names}


def parse_number(text: str) -> float | None:
    """float of an ncu value; None for n/a; ValueError when not a number."""
    try:
        v = float(text)
    except ValueError:
        t = text.strip()
        if t in _MISSING:
            return None
        v = float(t.replace(",", ""))  # thousands separators: "2,720.00"
    if not math.isfinite(v):
        raise ValueError(text)
    return v


def convert_metric(q: int, label: str, unit: str, text: str, path: str, line: int | None) -> float | None:
    """Value of quantity ``q`` in the library's units (ms or fraction); None when n/a."""
    try:
        v = parse_number(text)
    except ValueError:
        raise NcuFormatError(f"{label} value {text!r} is not a number", path=path, line=line) from None
    u = unit.strip()
    if q == 0:
        scale = _TIME_UNITS.get(u) or _TIME_UNITS.get(u.lower())
        if scale is None:
            raise NcuFormatError(
                f"{label} has unit {unit!r}, which is not a time unit (expected ns/us/ms/s or "
                "nsecond/usecond/msecond/second)", path=path, line=line)
        if v is None:
            raise NcuFormatError(f"{label} is {text!r}: every kernel needs a duration", path=path, line=line)
        if v <= 0:
            raise NcuFormatError(f"{label} {text} {u} is not positive: a kernel takes time",
                                 path=path, line=line)
        return v * scale[0] / scale[1]
    factor = _PERCENT_UNITS.get(u)
    if factor is None:
        raise NcuFormatError(f"{label} has unit {unit!r}; a throughput is a percentage ('%')",
                             path=path, line=line)
    if v is None:
        return None
    if v < 0 or v > 100.0 + NCU_PERCENT_TOLERANCE:
        raise NcuFormatError(f"{label} {text}% is outside 0..100", path=path, line=line)
    return min(v, 100.0) * factor


def convert_launch(slot: int, label: str, unit: str, text: str, path: str, line: int | None) -> float | None:
    """Value of launch slot ``slot`` (:data:`LAUNCH_SLOTS`): bytes for shared memory, a fraction for
    the theoretical occupancy, the plain number otherwise; None for n/a.

    Examples
    --------
    >>> convert_launch(LAUNCH_SLOTS.index("shared_mem_driver"), "Driver Shared Memory Per Block",
    ...                "Kbyte/block", "1.02", "r.csv", 9)
    1020.0
    >>> convert_launch(0, "launch__grid_size", "", "12,544", "r.csv", 9)
    12544.0
    """
    try:
        v = parse_number(text)
    except ValueError:
        raise NcuFormatError(f"{label} value {text!r} is not a number", path=path, line=line) from None
    if v is None:
        return None
    if v < 0:
        raise NcuFormatError(f"{label} {text} is negative; a launch setting is a count or size >= 0",
                             path=path, line=line)
    u = unit.strip()
    if slot == _OCCUPANCY_SLOT:
        if u not in _PERCENT_UNITS:
            raise NcuFormatError(f"{label} has unit {unit!r}; an occupancy is a percentage ('%')",
                                 path=path, line=line)
        if v > 100.0 + NCU_PERCENT_TOLERANCE:
            raise NcuFormatError(f"{label} {text}% is outside 0..100", path=path, line=line)
        return min(v, 100.0) * _PERCENT_UNITS[u]
    if slot in _SHARED_SLOTS:
        factor = _BYTE_UNITS.get(u.split("/")[0].strip())
        if factor is None:
            raise NcuFormatError(f"{label} has unit {unit!r}, which is not a size in bytes (expected byte, "
                                 "Kbyte, Mbyte, optionally per block)", path=path, line=line)
        return v * factor
    return v


def launch_table(launch: np.ndarray, first_rows: list[list[str]], header: list[str]) -> dict[str, np.ndarray]:
    """The KernelTable launch columns of ``launch`` (n, len(LAUNCH_SLOTS)), NaN where unknown.

    Shared memory per block is the reported total, else the sum of the parts reported; the grid
    and block sizes fall back on the identity columns "Grid Size" / "Block Size" ("(2, 64, 1)").
    """
    out = {k: np.ascontiguousarray(launch[:, i]) for i, k in enumerate(KERNEL_LAUNCH_COLUMNS)}
    parts = launch[:, list(_SHARED_PARTS)]
    any_part = ~np.isnan(parts).all(axis=1)
    shared = out["shared_mem_per_block"].copy()
    fill = np.isnan(shared) & any_part
    shared[fill] = np.nansum(parts[fill], axis=1)
    out["shared_mem_per_block"] = shared
    for col, ident in (("grid_blocks", "Grid Size"), ("block_threads", "Block Size")):
        if ident not in header or not np.isnan(out[col]).any():
            continue
        i = header.index(ident)
        values = out[col].copy()
        for k in np.flatnonzero(np.isnan(values)):
            row = first_rows[k]
            values[k] = _dims_product(row[i] if i < len(row) else "")
        out[col] = values
    return out


# "(2, 64, 1)", with thousands separators in some ncu versions: "(2,048, 1, 1)"
_DIMS = re.compile(r"^\(\s*(\d{1,3}(?:,\d{3})+|\d+)\s*,\s*(\d{1,3}(?:,\d{3})+|\d+)\s*,"
                   r"\s*(\d{1,3}(?:,\d{3})+|\d+)\s*\)$")


def _dims_product(text: str) -> float:
    """x * y * z of an identity cell such as "(2, 64, 1)"; NaN when it is not one.

    Examples
    --------
    >>> _dims_product("(2, 64, 1)"), _dims_product("(2,048, 1, 1)"), _dims_product("")
    (128.0, 2048.0, nan)
    """
    m = _DIMS.match(text.strip())
    if m is None:
        return math.nan
    x, y, z = (int(g.replace(",", "")) for g in m.groups())
    return float(x * y * z)


def is_kernel_id(text: str) -> bool:
    """Whether a first cell is a kernel ID (digits): a table row, not ncu's or the program's output."""
    return text.strip().isdigit()


def skip_or_refuse_row(row: list[str], lo: int, hi: int, path: str, line: int) -> None:
    """A row whose length does not fit the table: skip non-CSV lines, refuse broken rows."""
    if not row or len(row) == 1 or not is_kernel_id(row[0]):
        return  # blank line, ==PROF==/==WARNING== or the application's own output
    if len(row) < lo:
        raise NcuFormatError(f"row has {len(row)} fields; a row of this table has at least {lo} "
                             "(a truncated line?)", path=path, line=line)
    raise NcuFormatError(f"row has {len(row)} fields; the header has {hi}", path=path, line=line)


def table_from_rows(values: np.ndarray, first_rows: list[list[str]], first_lines: list[int],
                    header: list[str], path: str, found_metrics: Callable[[], list[str]],
                    launch: np.ndarray | None = None) -> KernelTable:
    """The :class:`KernelTable` of parsed launches: ``values`` (n, 4) in :data:`QUANTITIES` order.

    ``first_rows``/``first_lines`` are each launch's first CSV row and its line; a NaN value
    (no usable metric) is refused, listing ``found_metrics()`` (called only then). ``launch``
    (n, len(:data:`LAUNCH_SLOTS`)) holds the launch values read, NaN where absent. ncu's log lines
    in ``path`` tell whether the report was cut short (:func:`~interfpred.data.ingest.ncu_log.scan_ncu_log`).
    """
    name_col = header.index("Kernel Name")
    missing = np.isnan(values)
    if missing.any():
        k, q = (int(x) for x in np.argwhere(missing)[0])
        qname = QUANTITIES[q]
        found = found_metrics()
        shown = ", ".join(found[:40]) + (f" ... ({len(found)} in all)" if len(found) > 40 else "")
        raise NcuFormatError(
            f"kernel {first_rows[k][name_col]!r} (ID {first_rows[k][0]}) has no usable "
            f"{QUANTITY_LABEL[qname]} metric (n/a or absent); expected one of "
            f"{', '.join(METRIC_ALIASES[qname])} (profile with --section SpeedOfLight); metrics found: "
            f"{shown or 'none'}", path=path, line=first_lines[k])
    identity: dict[str, np.ndarray] = {}
    for i, h in enumerate(header):
        key = identity_name(h)
        if key is None or key == "name" or key in identity:
            continue
        identity[key] = np.array([r[i] if i < len(r) else "" for r in first_rows], dtype=str)
    if "nvtx" in identity:
        identity["nvtx_range"] = np.array([nvtx_innermost(v) for v in identity["nvtx"]], dtype=str)
    names = np.array([r[name_col] for r in first_rows], dtype=str)
    if launch is None:
        launch = np.full((len(first_rows), len(LAUNCH_SLOTS)), np.nan)
    return KernelTable(name=names, duration_ms=np.ascontiguousarray(values[:, 0]),
                       sm=np.ascontiguousarray(values[:, 1]), l2=np.ascontiguousarray(values[:, 2]),
                       dram=np.ascontiguousarray(values[:, 3]),
                       lines=np.asarray(first_lines, dtype=np.int64), identity=identity, path=path,
                       launch=launch_table(launch, first_rows, header), truncation=scan_ncu_log(path))

