"""Nsight Compute output to kernel tables and solo profiles.

:func:`read_kernels` reads what ``ncu`` prints or saves (``--csv`` output of the ``details``
page in every header generation, the ``raw`` page, or a binary ``.ncu-rep`` report through the
optional ``ncu-report`` package) into a :class:`KernelTable`: one row per kernel launch with its
name, duration in milliseconds and the SM, L2 and DRAM throughputs as fractions of peak.
:func:`profile_from_kernels` sums those launches into one :class:`~interfpred.Profile`.

Every refusal is an :class:`NcuFormatError` (an :class:`~interfpred.InputError`) that names the
file and the line of the offending value.

Examples
--------
>>> import pathlib, tempfile
>>> text = '''==PROF== Connected to process 42 (/usr/bin/python3)
... "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
... "0","42","python3","127.0.0.1","gemm","1","7","(256, 1, 1)","(80, 1, 1)","0","8.9","GPU Speed Of Light Throughput","DRAM Throughput","%","40.00"
... "0","42","python3","127.0.0.1","gemm","1","7","(256, 1, 1)","(80, 1, 1)","0","8.9","GPU Speed Of Light Throughput","Duration","usecond","2.00"
... "0","42","python3","127.0.0.1","gemm","1","7","(256, 1, 1)","(80, 1, 1)","0","8.9","GPU Speed Of Light Throughput","L2 Cache Throughput","%","20.00"
... "0","42","python3","127.0.0.1","gemm","1","7","(256, 1, 1)","(80, 1, 1)","0","8.9","GPU Speed Of Light Throughput","Compute (SM) Throughput","%","60.00"
... ==PROF== Disconnected from process 42
... '''
>>> path = pathlib.Path(tempfile.mkdtemp()) / "run.csv"
>>> _ = path.write_text(text)
>>> kernels = read_kernels(path)
>>> len(kernels), str(kernels.name[0]), float(kernels.duration_ms[0]), float(kernels.dram[0])
(1, 'gemm', 0.002, 0.4)
>>> profile_from_kernels(kernels, gpu="l4", model="toy", batch_size=1).sm
0.6
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from pydantic import ValidationError

from interfpred.constants import NCU_PERCENT_TOLERANCE, NCU_SNIFF_BYTES, PROFILE_SIGNIFICANT_DIGITS
from interfpred.errors import InputError, InterfpredError
from interfpred.profiles import Profile

__all__ = ["NcuFormatError", "KernelTable", "read_kernels", "profile_from_kernels", "nvtx_innermost"]


class NcuFormatError(InputError):
    """An Nsight Compute file that cannot be read: the path, the line and what was wrong.

    Examples
    --------
    >>> raise NcuFormatError("Duration 0 ns is not positive", path="run.csv", line=12)
    Traceback (most recent call last):
    ...
    interfpred.ingest.ncu.NcuFormatError: run.csv line 12: Duration 0 ns is not positive
    """


# ---------------------------------------------------------------------------------- metrics
# The four quantities, in the order of KernelTable's columns.
_QUANTITIES = ("duration", "sm", "l2", "dram")
_QUANTITY_LABEL = {
    "duration": "Duration", "sm": "Compute (SM) Throughput",
    "l2": "L2 Cache Throughput", "dram": "DRAM Throughput",
}

# Metric labels (``--print-metric-name label``, the default) and names, best first.  A kernel
# takes the best one present; older speed-of-light names only count where nothing newer is.
_ALIASES: dict[str, tuple[str, ...]] = {
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
_WANTED: dict[str, tuple[int, int]] = {
    alias: (q, p) for q, name in enumerate(_QUANTITIES) for p, alias in enumerate(_ALIASES[name])
}
_NO_PRIORITY = 1 << 30

# Duration units, long (older ncu) and short (2022 on), to milliseconds.
_TIME_UNITS = {
    "ns": 1e-6, "nsecond": 1e-6, "nanosecond": 1e-6,
    "us": 1e-3, "usecond": 1e-3, "microsecond": 1e-3, "µs": 1e-3,
    "ms": 1.0, "msecond": 1.0, "millisecond": 1.0,
    "s": 1e3, "second": 1e3,
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
_DETAILS_ONLY = {"Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name",
                 "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"}


def _identity_name(header: str) -> str | None:
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


# ---------------------------------------------------------------------------------- table
class KernelTable:
    """One row per kernel launch read from an Nsight Compute file, as numpy columns.

    ``name``, ``duration_ms`` (float64, > 0), ``sm``, ``l2``, ``dram`` (float64 fractions of peak in
    [0, 1]) and ``lines`` (the line of each launch's first row in the file, 0 when unknown) are
    always there; the identity columns the file had (``id``, ``process_id``, ``process_name``,
    ``host_name``, ``kernel_time``, ``context``, ``stream``, ``block_size``, ``grid_size``,
    ``device``, ``cc``, ``nvtx``, ``nvtx_range`` ...) are string arrays read by :meth:`column`.

    Examples
    --------
    >>> t = KernelTable.from_columns(name=["a", "b"], duration_ms=[1.0, 3.0], sm=[0.2, 0.6],
    ...                              l2=[0.1, 0.1], dram=[0.5, 0.1], identity={"stream": ["7", "7"]})
    >>> len(t), t.identity_columns, t.column("stream").tolist()
    (2, ('stream',), ['7', '7'])
    >>> t.filter(kernel="^b").name.tolist()
    ['b']
    """

    def __init__(self, *, name: np.ndarray, duration_ms: np.ndarray, sm: np.ndarray,
                 l2: np.ndarray, dram: np.ndarray, lines: np.ndarray,
                 identity: dict[str, np.ndarray], path: str | None) -> None:
        # Internal constructor: arrays already validated (read_kernels / from_columns).
        self._name = name
        self._num = {"duration_ms": duration_ms, "sm": sm, "l2": l2, "dram": dram}
        self._lines = lines
        self._identity = identity
        self._path = path
        for arr in (name, lines, *self._num.values(), *identity.values()):
            arr.setflags(write=False)

    @classmethod
    def from_columns(cls, *, name: Sequence[str], duration_ms: Sequence[float] | np.ndarray,
                     sm: Sequence[float] | np.ndarray, l2: Sequence[float] | np.ndarray,
                     dram: Sequence[float] | np.ndarray,
                     identity: Mapping[str, Sequence[str]] | None = None,
                     lines: Sequence[int] | None = None, path: str | os.PathLike[str] | None = None,
                     ) -> KernelTable:
        """Build a table from equal-length columns, checking every value."""
        name_a = np.asarray(list(name), dtype=object).astype(str)
        n = len(name_a)
        try:
            num = {k: np.asarray(v, dtype=np.float64).reshape(-1) for k, v in
                   (("duration_ms", duration_ms), ("sm", sm), ("l2", l2), ("dram", dram))}
            lines_a = (np.zeros(n, dtype=np.int64) if lines is None
                       else np.asarray(lines, dtype=np.int64).reshape(-1))
        except (TypeError, ValueError) as exc:
            raise InterfpredError(f"kernel columns must be numeric: {exc}") from None
        ident = {k: np.asarray(list(v), dtype=object).astype(str) for k, v in (identity or {}).items()}
        for k, v in [*num.items(), ("lines", lines_a), *ident.items()]:
            if len(v) != n:
                raise InterfpredError(f"column {k} has {len(v)} rows, name has {n}")
        d = num["duration_ms"]
        bad = np.flatnonzero(~np.isfinite(d) | (d <= 0))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"duration_ms {float(d[i])!r} of kernel {str(name_a[i])!r} must be positive and finite",
                             path=path, line=int(lines_a[i]) or i + 1)
        for r in ("sm", "l2", "dram"):
            v = num[r]
            bad = np.flatnonzero(~np.isfinite(v) | (v < 0) | (v > 1))
            if bad.size:
                i = int(bad[0])
                raise InputError(f"{r} {float(v[i])!r} of kernel {str(name_a[i])!r} must be a fraction of peak in [0, 1]",
                                 path=path, line=int(lines_a[i]) or i + 1)
        return cls(name=name_a, lines=lines_a, identity=ident,
                   path=None if path is None else os.fspath(path), **num)

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self._name)

    def __repr__(self) -> str:
        total = float(self._num["duration_ms"].sum())
        src = f", path={self._path!r}" if self._path else ""
        return f"KernelTable({len(self)} kernels, {total:.6g} ms in all{src})"

    @property
    def name(self) -> np.ndarray:
        """Kernel names (read-only string array)."""
        return self._name

    @property
    def duration_ms(self) -> np.ndarray:
        """Kernel durations in milliseconds."""
        return self._num["duration_ms"]

    @property
    def sm(self) -> np.ndarray:
        """Compute (SM) throughput, fraction of peak."""
        return self._num["sm"]

    @property
    def l2(self) -> np.ndarray:
        """L2 cache throughput, fraction of peak."""
        return self._num["l2"]

    @property
    def dram(self) -> np.ndarray:
        """DRAM throughput, fraction of peak."""
        return self._num["dram"]

    @property
    def lines(self) -> np.ndarray:
        """Line of each launch's first row in the source file (0 when unknown)."""
        return self._lines

    @property
    def path(self) -> str | None:
        """The file the table was read from, if any."""
        return self._path

    @property
    def identity_columns(self) -> tuple[str, ...]:
        """Names of the identity columns present (process, stream, NVTX range, device ...)."""
        return tuple(self._identity)

    def column(self, name: str) -> np.ndarray:
        """One column by name: a numeric column, ``name``, ``lines`` or an identity column."""
        fixed = {"name": self._name, "lines": self._lines, **self._num}
        if name in fixed:
            return fixed[name]
        if name in self._identity:
            return self._identity[name]
        raise KeyError(f"no column {name!r}; columns are {', '.join([*fixed, *self._identity])}")

    def take(self, index: np.ndarray | Sequence[int] | Sequence[bool]) -> KernelTable:
        """The rows at ``index`` (integer positions or a boolean mask), as a new table."""
        idx = np.asarray(index)
        if idx.dtype == bool and len(idx) != len(self):
            raise InterfpredError(f"mask has {len(idx)} entries, the table has {len(self)} rows")
        return KernelTable(name=self._name[idx], lines=self._lines[idx],
                           identity={k: v[idx] for k, v in self._identity.items()},
                           path=self._path, **{k: v[idx] for k, v in self._num.items()})

    def filter(self, *, kernel: str | None = None, nvtx: str | None = None) -> KernelTable:
        """Launches whose name matches regex ``kernel`` and whose NVTX stack matches ``nvtx``.

        Both are searched (:func:`re.search`), so a plain substring works.
        """
        mask = np.ones(len(self), dtype=bool)
        if kernel is not None:
            rx = _compile(kernel, "kernel_filter")
            mask &= np.fromiter((rx.search(s) is not None for s in self._name), bool, len(self))
        if nvtx is not None:
            if "nvtx" not in self._identity:
                raise InterfpredError(
                    "nvtx filter given but the file has no NVTX column (profile with ncu --nvtx)")
            rx = _compile(nvtx, "nvtx_filter")
            mask &= np.fromiter((rx.search(s) is not None for s in self._identity["nvtx"]), bool,
                                len(self))
        return self.take(mask)


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InterfpredError(f"{what} {pattern!r} is not a valid regular expression: {exc}") from None


# ---------------------------------------------------------------------------------- profile
def profile_from_kernels(kernels: KernelTable, *, gpu: str, model: str, batch_size: int,
                         iterations: int = 1, kernel_filter: str | None = None,
                         nvtx_filter: str | None = None) -> Profile:
    """Sum the kernel launches of one profiled run into a solo :class:`~interfpred.Profile`.

    ``solo_ms`` is the summed kernel time divided by ``iterations`` (the number of batches the
    profiled run executed); the throughputs are duration-weighted means over the launches.
    Every number is rounded to ``PROFILE_SIGNIFICANT_DIGITS`` significant digits (more than
    Nsight prints), so a percentage of 10.877 becomes 0.10877, not 0.10876999999999999.
    ``kernel_filter`` and ``nvtx_filter`` (regular expressions, searched) keep only matching
    launches, e.g. one batch size's NVTX range of a run that profiled several.

    Examples
    --------
    >>> t = KernelTable.from_columns(name=["a", "b"], duration_ms=[1.0, 3.0], sm=[0.2, 0.6],
    ...                              l2=[0.1, 0.1], dram=[0.5, 0.1])
    >>> p = profile_from_kernels(t, gpu="l4", model="m", batch_size=8, iterations=2)
    >>> p.solo_ms, p.sm, p.dram
    (2.0, 0.5, 0.2)
    """
    if not isinstance(kernels, KernelTable):
        raise InterfpredError(f"kernels must be a KernelTable, got {type(kernels).__name__}")
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations <= 0:
        raise InterfpredError(f"iterations {iterations!r} must be a positive integer")
    selected = kernels
    if kernel_filter is not None or nvtx_filter is not None:
        selected = kernels.filter(kernel=kernel_filter, nvtx=nvtx_filter)
    where = f" in {kernels.path}" if kernels.path else ""
    if len(selected) == 0:
        if len(kernels) == 0:
            raise InterfpredError(f"no kernel launches{where}")
        raise InterfpredError(
            f"no kernel launch{where} matches kernel_filter={kernel_filter!r} nvtx_filter={nvtx_filter!r} "
            f"({len(kernels)} launches, e.g. {str(kernels.name[0])!r})")
    d = selected.duration_ms
    total = float(d.sum())
    # Nsight prints at most about 7 significant digits: keep PROFILE_SIGNIFICANT_DIGITS, dropping the
    # float noise of the unit conversion and the weighted mean (0.10876999999999999 -> 0.10877).
    digits = PROFILE_SIGNIFICANT_DIGITS
    values = {r: float(f"{float(np.clip(np.dot(d, selected.column(r)) / total, 0.0, 1.0)):.{digits}g}")
              for r in ("sm", "l2", "dram")}
    try:
        return Profile(gpu=gpu, model=model, batch_size=batch_size,
                       solo_ms=float(f"{total / int(iterations):.{digits}g}"), **values)
    except ValidationError as exc:
        parts = [f"{'.'.join(map(str, e['loc']))} {e.get('input')!r}: {e['msg']}" for e in exc.errors()]
        raise InterfpredError("invalid profile: " + "; ".join(parts)) from None


# ---------------------------------------------------------------------------------- reading
def read_kernels(path: str | os.PathLike[str]) -> KernelTable:
    """Read the kernel launches of an Nsight Compute file.

    Accepts ``ncu --csv`` output of the ``details`` page (every header generation, with or
    without ``--nvtx``, rule columns, metric labels or names) and the ``raw`` page, with any
    non-CSV lines before and after the table, or a binary ``.ncu-rep`` report (needs the
    ``ncu-report`` package: ``pip install "interfpred[ncu]"``).

    Raises
    ------
    NcuFormatError
        With the file and line, for anything that is not a readable Nsight Compute table.

    Examples
    --------
    >>> from importlib.resources import files
    >>> t = read_kernels(files("interfpred") / "data" / "examples" / "superbenchmark_cublaslt_b200_details.log")
    >>> round(float(t.duration_ms[0]) * 1e6), float(t.l2[0])
    (406240, 0.1512)
    """
    path_s = os.fspath(path)
    if os.path.exists(path_s):  # a FIFO or device would block or never end
        import stat

        mode = os.stat(path_s).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise NcuFormatError("is not a regular file (a FIFO, socket or device)", path=path_s)
    if path_s.lower().endswith(".ncu-rep"):
        return _read_report(path_s)
    try:
        with open(path_s, "rb") as fh:
            head = fh.read(NCU_SNIFF_BYTES)
    except IsADirectoryError:
        raise NcuFormatError("is a directory, not an Nsight Compute file", path=path_s) from None
    if not head.strip():
        raise NcuFormatError("empty file: expected ncu --csv output", path=path_s)
    if b"\x00" in head:
        raise NcuFormatError(
            "binary file given as CSV (NUL bytes); for an .ncu-rep report name it *.ncu-rep, "
            "or export CSV with: ncu --import report.ncu-rep --csv --page details > run.csv",
            path=path_s)
    try:
        with open(path_s, encoding="utf-8", errors="replace", newline="") as fh:
            return _read_csv(fh, path_s)
    except csv.Error as exc:
        line = getattr(exc, "_ncu_line", None)
        raise NcuFormatError(f"not valid CSV: {exc}", path=path_s, line=line) from None


def _looks_like_header(line: str) -> bool:
    s = line.lstrip("\ufeff \t")
    return s.startswith('"ID",') or s.startswith("ID,")


def _read_csv(fh, path: str) -> KernelTable:
    lineno = 0
    header_line = None
    for text in fh:
        lineno += 1
        if _looks_like_header(text):
            header_line = text
            break
    if header_line is None:
        if lineno == 0:
            raise NcuFormatError("empty file: expected ncu --csv output", path=path)
        raise NcuFormatError(
            f"unknown layout: none of the {lineno} lines is an Nsight Compute CSV header "
            '(a line starting "ID","Process ID",...); was ncu run with --csv?', path=path)
    header = next(csv.reader([header_line.lstrip("\ufeff \t")]))
    header = [h.strip() for h in header]
    reader = csv.reader(fh)
    if "Metric Name" in header and "Metric Value" in header:
        return _read_details(reader, header, lineno, path)
    if "Metric Name" in header:
        raise NcuFormatError(
            "unknown layout: a metric table without a 'Metric Value' column (a --print-summary "
            f"page?); export the details page (ncu --csv --page details). Header: {','.join(header)}",
            path=path, line=lineno)
    metrics = [h for h in header if _identity_name(h) is None and h not in _DETAILS_ONLY]
    if "Kernel Name" in header and metrics:
        return _read_raw(reader, header, lineno, path)
    raise NcuFormatError(
        "unknown layout: expected the details page (Metric Name/Metric Unit/Metric Value columns) "
        f"or the raw page (one column per metric); header is {','.join(header)}",
        path=path, line=lineno)


def _require_columns(header: list[str], names: Iterable[str], path: str, line: int) -> dict[str, int]:
    missing = [n for n in names if n not in header]
    if missing:
        raise NcuFormatError(
            f"unknown layout: header lacks {', '.join(missing)}; header is {','.join(header)}",
            path=path, line=line)
    return {n: header.index(n) for n in names}


def _parse_number(text: str) -> float | None:
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


def _convert(q: int, label: str, unit: str, text: str, path: str, line: int | None) -> float | None:
    """Value in the library's units (ms or fraction); None when n/a."""
    try:
        v = _parse_number(text)
    except ValueError:
        raise NcuFormatError(f"{label} value {text!r} is not a number", path=path, line=line) from None
    u = unit.strip()
    if q == 0:
        factor = _TIME_UNITS.get(u) or _TIME_UNITS.get(u.lower())
        if factor is None:
            raise NcuFormatError(
                f"{label} has unit {unit!r}, which is not a time unit (expected ns/us/ms/s or "
                "nsecond/usecond/msecond/second)", path=path, line=line)
        if v is None:
            raise NcuFormatError(f"{label} is {text!r}: every kernel needs a duration", path=path, line=line)
        if v <= 0:
            raise NcuFormatError(f"{label} {text} {u} is not positive: a kernel takes time",
                                 path=path, line=line)
        return v * factor
    factor = _PERCENT_UNITS.get(u)
    if factor is None:
        raise NcuFormatError(f"{label} has unit {unit!r}; a throughput is a percentage ('%')",
                             path=path, line=line)
    if v is None:
        return None
    if v < 0 or v > 100.0 + NCU_PERCENT_TOLERANCE:
        raise NcuFormatError(f"{label} {text}% is outside 0..100", path=path, line=line)
    return min(v, 100.0) * factor


def _is_id(text: str) -> bool:
    return text.strip().isdigit()


def _odd_row(row: list[str], lo: int, hi: int, path: str, line: int) -> None:
    """A row whose length does not fit the table: skip non-CSV lines, refuse broken rows."""
    if not row or len(row) == 1 or not _is_id(row[0]):
        return  # blank line, ==PROF==/==WARNING== or the application's own output
    if len(row) < lo:
        raise NcuFormatError(f"row has {len(row)} fields; a row of this table has at least {lo} "
                             "(a truncated line?)", path=path, line=line)
    raise NcuFormatError(f"row has {len(row)} fields; the header has {hi}", path=path, line=line)


def _read_details(reader, header: list[str], offset: int, path: str) -> KernelTable:
    cols = _require_columns(header, ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"),
                            path, offset)
    iid, iname, iunit, ivalue = cols["ID"], cols["Metric Name"], cols["Metric Unit"], cols["Metric Value"]
    ipid = header.index("Process ID") if "Process ID" in header else iid
    lo = max(iid, iname, iunit, ivalue, ipid, cols["Kernel Name"]) + 1
    hi = len(header) + 1  # a trailing comma after the last column is tolerated
    wanted = _WANTED
    nan = math.nan
    first_rows: list[list[str]] = []
    first_lines: list[int] = []
    states: list[list[float]] = []  # per kernel: 4 values then 4 priorities
    index: dict[tuple[str, str], int] = {}
    last_id = last_pid = None
    state: list[float] = []
    convert = _convert
    try:
        for row in reader:
            n = len(row)
            if n < lo or n > hi:
                _odd_row(row, lo, len(header), path, offset + reader.line_num)
                continue
            rid = row[iid]
            if rid != last_id or row[ipid] != last_pid:
                last_id, last_pid = rid, row[ipid]
                k = index.get((rid, last_pid))
                if k is None:
                    if not _is_id(rid):
                        _odd_row(row, lo, len(header), path, offset + reader.line_num)
                        last_id = None
                        continue
                    index[(rid, last_pid)] = len(states)
                    state = [nan, nan, nan, nan, _NO_PRIORITY, _NO_PRIORITY, _NO_PRIORITY, _NO_PRIORITY]
                    states.append(state)
                    first_rows.append(row)
                    first_lines.append(offset + reader.line_num)
                else:
                    state = states[k]
            m = row[iname]
            if m in wanted:
                q, p = wanted[m]
                if p < state[4 + q]:
                    v = convert(q, m, row[iunit], row[ivalue], path, offset + reader.line_num)
                    if v is not None:
                        state[q] = v
                        state[4 + q] = p
    except csv.Error as exc:
        exc._ncu_line = offset + reader.line_num  # type: ignore[attr-defined]
        raise
    if not states:
        raise NcuFormatError("no kernel rows after the header: did ncu profile any kernel?",
                             path=path, line=offset)
    values = np.array([s[:4] for s in states], dtype=np.float64)
    return _finish(values, first_rows, first_lines, header, path,
                   lambda: _details_metric_names(path, iname, offset))


def _details_metric_names(path: str, iname: int, offset: int) -> list[str]:
    """Distinct metric names of a details page (second pass, only for error messages)."""
    seen: dict[str, None] = {}
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        for _ in range(offset):
            next(fh, None)
        try:
            for row in csv.reader(fh):
                if len(row) > iname and row[iname] and _is_id(row[0]):
                    seen.setdefault(row[iname])
        except csv.Error:
            pass
    return list(seen)


def _read_raw(reader, header: list[str], offset: int, path: str) -> KernelTable:
    _require_columns(header, ("ID", "Kernel Name"), path, offset)
    ident_idx = [i for i, h in enumerate(header) if _identity_name(h) is not None]
    units = None
    for units in reader:
        if units and any(c.strip() for c in units):
            break
    units_line = offset + reader.line_num
    if not units or any(units[i].strip() for i in ident_idx if i < len(units)):
        raise NcuFormatError(
            "raw page without its units row (the row after the header, with empty identity "
            "columns and one unit per metric)", path=path, line=units_line)
    units = units + [""] * (len(header) - len(units))
    # For each quantity the candidate columns, best first.
    cands: list[list[int]] = []
    for q, _qname in enumerate(_QUANTITIES):
        present = sorted((_WANTED[h][1], i) for i, h in enumerate(header) if _WANTED.get(h, (-1,))[0] == q)
        cands.append([i for _, i in present])
    lo = max([max(ident_idx)] + [c for cs in cands for c in cs]) + 1
    hi = len(header) + 1
    nan = math.nan
    first_rows: list[list[str]] = []
    first_lines: list[int] = []
    values: list[list[float]] = []
    try:
        for row in reader:
            n = len(row)
            line = offset + reader.line_num
            if n < lo or n > hi or not _is_id(row[0]):
                _odd_row(row, lo, len(header), path, line)
                continue
            vals = [nan, nan, nan, nan]
            for q in range(4):
                for i in cands[q]:
                    v = _convert(q, header[i], units[i], row[i], path, line)
                    if v is not None:
                        vals[q] = v
                        break
            values.append(vals)
            first_rows.append(row)
            first_lines.append(line)
    except csv.Error as exc:
        exc._ncu_line = offset + reader.line_num  # type: ignore[attr-defined]
        raise
    if not values:
        raise NcuFormatError("no kernel rows after the units row: did ncu profile any kernel?",
                             path=path, line=units_line)
    metric_names = [h for h in header if _identity_name(h) is None]
    return _finish(np.array(values, dtype=np.float64), first_rows, first_lines, header, path,
                   lambda: metric_names)


def _finish(values: np.ndarray, first_rows: list[list[str]], first_lines: list[int],
            header: list[str], path: str, found_metrics) -> KernelTable:
    name_col = header.index("Kernel Name")
    missing = np.isnan(values)
    if missing.any():
        k, q = (int(x) for x in np.argwhere(missing)[0])
        qname = _QUANTITIES[q]
        found = found_metrics()
        shown = ", ".join(found[:40]) + (f" ... ({len(found)} in all)" if len(found) > 40 else "")
        raise NcuFormatError(
            f"kernel {first_rows[k][name_col]!r} (ID {first_rows[k][0]}) has no usable "
            f"{_QUANTITY_LABEL[qname]} metric (n/a or absent); expected one of "
            f"{', '.join(_ALIASES[qname])} (profile with --section SpeedOfLight); metrics found: "
            f"{shown or 'none'}", path=path, line=first_lines[k])
    identity: dict[str, np.ndarray] = {}
    for i, h in enumerate(header):
        key = _identity_name(h)
        if key is None or key == "name" or key in identity:
            continue
        identity[key] = np.array([r[i] if i < len(r) else "" for r in first_rows], dtype=str)
    if "nvtx" in identity:
        identity["nvtx_range"] = np.array([nvtx_innermost(v) for v in identity["nvtx"]], dtype=str)
    names = np.array([r[name_col] for r in first_rows], dtype=str)
    return KernelTable(name=names, duration_ms=np.ascontiguousarray(values[:, 0]),
                       sm=np.ascontiguousarray(values[:, 1]), l2=np.ascontiguousarray(values[:, 2]),
                       dram=np.ascontiguousarray(values[:, 3]),
                       lines=np.asarray(first_lines, dtype=np.int64), identity=identity, path=path)


# ---------------------------------------------------------------------------------- .ncu-rep
_INSTALL_HINT = 'reading .ncu-rep reports needs the ncu-report package: pip install "interfpred[ncu]"'


def _read_report(path: str) -> KernelTable:
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    try:
        import ncu_report  # optional dependency, imported only when a report is read
    except ImportError:
        raise NcuFormatError(_INSTALL_HINT + " (or export CSV: ncu --import report.ncu-rep --csv "
                             "--page details > run.csv)", path=path) from None
    try:
        ctx = ncu_report.load_report(path)
    except Exception as exc:  # the binding raises its own types
        raise NcuFormatError(f"ncu_report could not load the report: {exc}", path=path) from None
    n_ranges = ctx.num_ranges()
    if n_ranges == 0:
        raise NcuFormatError("the report has zero ranges: nothing was profiled, or not a valid .ncu-rep "
                             "file (ncu_report loads unreadable files as empty reports)", path=path)
    names: list[str] = []
    values: list[list[float]] = []
    ident: dict[str, list[str]] = {"range": [], "id": []}
    for r in range(n_ranges):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            label = f"range {r} kernel {a}"
            vals = [math.nan] * 4
            for q, qname in enumerate(_QUANTITIES):
                for alias in _ALIASES[qname]:
                    if " " in alias or "[" in alias:
                        continue  # labels are not metric names in a report
                    metric = action.metric_by_name(alias)
                    if metric is None:
                        continue
                    unit = metric.unit() if hasattr(metric, "unit") else ("nsecond" if q == 0 else "%")
                    v = _convert(q, alias, unit or ("nsecond" if q == 0 else "%"),
                                 repr(float(metric.as_double())), path, None)
                    if v is not None:
                        vals[q] = v
                        break
            for q, qname in enumerate(_QUANTITIES):
                if math.isnan(vals[q]):
                    raise NcuFormatError(
                        f"{label} ({action.name()!r}) has no {_QUANTITY_LABEL[qname]} metric; expected "
                        f"one of {', '.join(_ALIASES[qname])} (profile with --section SpeedOfLight)",
                        path=path)
            names.append(str(action.name()))
            values.append(vals)
            ident["range"].append(str(r))
            ident["id"].append(str(len(names) - 1))
    if not names:
        raise NcuFormatError(f"the report's {n_ranges} range(s) hold no kernel launches", path=path)
    arr = np.array(values, dtype=np.float64)
    return KernelTable.from_columns(name=names, duration_ms=arr[:, 0], sm=arr[:, 1], l2=arr[:, 2],
                                    dram=arr[:, 3], identity=ident, path=path)
