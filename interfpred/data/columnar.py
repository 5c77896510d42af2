"""Columnar I/O: traces, profiles, measurements and predictions as Parquet, Arrow and pandas DataFrames.

Everything here needs pyarrow (and pandas for DataFrames), the optional extra
``pip install 'interfpred[parquet]'``; without it the functions raise
:class:`~interfpred.errors.InterfpredError` naming the extra. :func:`read_trace`,
:func:`write_trace`, :func:`read_profiles` and the other readers and writers pick the format
from the suffix (``.parquet``/``.pq``, ``.arrow``/``.feather``, anything else CSV) and write
atomically. Formats, fallbacks and speed: docs/scale.md ("Columnar files").

Examples
--------
>>> import pathlib, tempfile
>>> from interfpred.sim.workload import mix_scenario
>>> tr = mix_scenario(["vgg19"], rho=0.5, executions=20).traces["trace"]
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
>>> write_trace(tr, path)
>>> read_trace(path) == tr
True
>>> trace_to_frame(tr).columns.tolist()[:4]
['id', 'device', 'model', 'batch_size']
"""

from __future__ import annotations

import csv
import os
from typing import Any

import numpy as np

from interfpred._core.arrow import check_column_types, have_pyarrow, read_table_checked, require_pyarrow, write_csv
from interfpred._core.atomic import atomic_open, scan_text_file
from interfpred.constants import (
    COLUMNAR_SUFFIXES,
    CSV_BLOCK_BYTES,
    PROFILE_COLUMNS,
    TRACE_COLUMNS,
    TRACE_OPTIONAL_COLUMNS,
)
from interfpred.data.measurements import Measurements, check_measurement_columns
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InputError, InterfpredError

__all__ = [
    "check_finite_columns",
    "format_of",
    "have_pyarrow",
    "profiles_from_frame",
    "profiles_to_frame",
    "read_measurements",
    "read_profiles",
    "read_trace",
    "trace_from_arrow",
    "trace_from_frame",
    "trace_to_arrow",
    "trace_to_frame",
    "write_measurements",
    "write_predictions_table",
    "write_profiles",
    "write_trace",
    "write_trace_csv",
]



def _text_column(values: Any, column: str, path: Any) -> np.ndarray:
    """An extra column as text; binary cells must be UTF-8 (refused with the column and row, not a traceback)."""
    arr = np.asarray(values)
    if arr.dtype.kind != "S" and not (arr.dtype == object and any(isinstance(v, bytes) for v in arr.tolist())):
        return arr.astype(str)
    out = []
    for i, v in enumerate(arr.tolist()):
        if isinstance(v, bytes):
            try:
                v = v.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"column {column} holds bytes that are not UTF-8 text ({v[:20]!r})", path=path,
                                 line=i + 1) from None
        out.append(str(v))
    return np.array(out, dtype=str)


def _pa(what: str):
    return require_pyarrow(what)


def format_of(path: str | os.PathLike[str]) -> str:
    """``"parquet"``, ``"arrow"`` or ``"csv"`` from a path's suffix.

    Examples
    --------
    >>> format_of("a/b.PARQUET"), format_of("x.feather"), format_of("t.csv")
    ('parquet', 'arrow', 'csv')
    """
    low = os.fspath(path).lower()
    for fmt, suffixes in COLUMNAR_SUFFIXES.items():
        if low.endswith(suffixes):
            return fmt
    return "csv"


# ---------------------------------------------------------------------------- generic tables
def _read_table(path: str | os.PathLike[str], fmt: str, what: str, columns: list[str] | None = None):
    _pa(f"reading {what} {os.fspath(path)}")
    if not os.path.exists(path):
        raise InterfpredError(f"{os.fspath(path)}: no such file")
    return read_table_checked(path, fmt, what, columns=columns)


def _write_table(table: Any, path: str | os.PathLike[str], fmt: str) -> None:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        with atomic_open(path, "wb") as fh:
            pq.write_table(table, fh)
    elif fmt == "arrow":
        from pyarrow import feather

        with atomic_open(path, "wb") as fh:
            feather.write_feather(table, fh, compression="uncompressed")
    else:
        write_csv(table, path)


def _strings(col: Any) -> np.ndarray:
    """A pyarrow string or dictionary column as a numpy unicode array (through its dictionary: fast)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    col = col.unify_dictionaries() if hasattr(col, "unify_dictionaries") else col
    chunks = col.chunks if hasattr(col, "chunks") else [col]
    if not chunks:
        return np.array([], dtype=str)
    names = np.asarray(chunks[0].dictionary.cast(pa.string()).to_numpy(zero_copy_only=False), dtype=str)
    idx = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in chunks])
    return names[idx]


# ---------------------------------------------------------------------------- traces
def trace_to_arrow(trace: Trace):
    """The trace as a ``pyarrow.Table`` (its CSV columns, ``solo_ms``/``share`` when present)."""
    pa = _pa("trace_to_arrow")
    cols = trace.columns()
    names = [c for c in (*TRACE_COLUMNS, *TRACE_OPTIONAL_COLUMNS) if c in cols]
    out = {}
    for c in names:
        if c in ("device", "model"):
            labels, codes = trace.codes(c)
            out[c] = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(list(labels),
                                                                                                pa.string()))
        else:
            out[c] = pa.array(cols[c])
    return pa.table(out)


def trace_from_arrow(table: Any, *, path: str | os.PathLike[str] | None = None,
                     _first_line: int | None = None) -> Trace:
    """A :class:`Trace` from a ``pyarrow.Table`` with the CSV's columns (extra columns ignored).

    ``_first_line``: the table was read from the CSV file ``path`` whose row i is on line
    ``_first_line + i``; later messages about a row then name the file and line.
    """
    pa = _pa("trace_from_arrow")
    where = f"{os.fspath(path)}: " if path is not None else ""
    missing = [c for c in TRACE_COLUMNS if c not in table.column_names]
    if missing:
        raise InterfpredError(f"{where}missing column(s) {', '.join(missing)}; columns are "
                              f"{','.join(table.column_names)}")
    id_type = table.column("id").type
    text_id = pa.types.is_string(id_type) or pa.types.is_large_string(id_type) or (
        pa.types.is_dictionary(id_type) and pa.types.is_string(id_type.value_type))
    check_column_types(table, path=path, strings=("device", "model", *(("id",) if text_id else ())),
                       numbers=("batch_size", "start_ms", "end_ms", *TRACE_OPTIONAL_COLUMNS,
                                *(() if text_id else ("id",))))
    cols: dict[str, Any] = {}
    for c in (*TRACE_COLUMNS, *TRACE_OPTIONAL_COLUMNS):
        if c not in table.column_names:
            continue
        col = table.column(c)
        if c in ("device", "model") or (c == "id" and not pa.types.is_integer(col.type)):
            cols[c] = _strings(col)
        else:
            try:
                cols[c] = col.to_numpy() if c == "id" else np.asarray(col.cast(pa.float64()).to_numpy(),
                                                                      dtype=np.float64)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise InterfpredError(f"{where}column {c} has type {col.type}, expected numbers") from None
    if _first_line is not None and path is not None:
        cols["_path"] = path
        cols["_lines"] = range(_first_line, _first_line + table.num_rows)
    try:
        return Trace(**cols)
    except InterfpredError as exc:
        raise InterfpredError(f"{where}{exc}") from None


def trace_to_frame(trace: Trace):
    """The trace as a pandas DataFrame (one row per execution)."""
    return trace_to_arrow(trace).to_pandas()


def trace_from_frame(frame: Any) -> Trace:
    """A :class:`Trace` from a pandas DataFrame with the CSV's columns; errors name the 0-based row.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"id": [1, 2], "device": "gpu0", "model": "vgg19", "batch_size": [4, 8],
    ...                    "start_ms": [0.0, 1.0], "end_ms": [5.0, 0.5]})
    >>> trace_from_frame(df)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: row 1 (id 2): end_ms 0.5 is before start_ms 1.0
    """
    pa = _pa("trace_from_frame")
    return trace_from_arrow(pa.Table.from_pandas(frame, preserve_index=False))


def _read_trace_csv_fast(path: str | os.PathLike[str]) -> Trace | None:
    """pyarrow's CSV reader for a clean trace with integer ids; None when it cannot read the file
    that way (the caller then falls back to the standard reader, whose errors name the line)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    with open(path, "rb") as fh:
        header = fh.readline().decode("utf-8", "replace").rstrip("\r\n").split(",")
    if any(h != h.strip() or not h for h in header) or any(c not in header for c in TRACE_COLUMNS) or (
            len(set(header)) != len(header)):
        return None                           # the standard reader names the problem (or strips the blanks)
    wanted = [c for c in (*TRACE_COLUMNS, *TRACE_OPTIONAL_COLUMNS) if c in header]
    label = pa.dictionary(pa.int32(), pa.string())
    types = {c: pa.int64() if c == "id" else label if c in ("device", "model") else pa.float64() for c in wanted}
    try:
        table = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
            include_columns=wanted, column_types=types, strings_can_be_null=False, quoted_strings_can_be_null=False),
            # No blank lines and no line breaks inside cells: row i is then on line i + 2.
            parse_options=pcsv.ParseOptions(newlines_in_values=False, ignore_empty_lines=False),
            read_options=pcsv.ReadOptions(block_size=CSV_BLOCK_BYTES))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
        return None                           # string ids, bad cells, ragged rows: the standard reader
    for c in ("device", "model"):
        col = table.column(c)
        for chunk in col.chunks:
            d = chunk.dictionary
            if len(d) and pc.any(pc.not_equal(d, pc.utf8_trim_whitespace(d))).as_py():
                return None                   # cells with blanks: the standard reader strips them
            if len(d) and pc.max(pc.binary_length(d)).as_py() > csv.field_size_limit():
                return None                   # a field the standard reader refuses: it names the line
    try:
        return trace_from_arrow(table, path=path, _first_line=2)
    except InterfpredError:
        return None


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read a trace from CSV, Parquet or Arrow (by suffix; see the module docstring).

    Raises
    ------
    InterfpredError
        Unreadable file, missing columns, or an invalid execution (CSV errors name the line).
    """
    fmt = format_of(path)
    if fmt != "csv":
        return trace_from_arrow(_read_table(path, fmt, "a trace"), path=path)
    # Size, NUL bytes and carriage returns first, as Trace.from_csv would refuse or count them: the
    # fast reader then only sees files both readers read alike (tests/test_fuzz.py checks they agree).
    has_cr = scan_text_file(path, "a CSV")
    if have_pyarrow() and not has_cr:
        fast = _read_trace_csv_fast(path)
        if fast is not None:
            return fast
    return Trace.from_csv(path)


def write_trace_csv(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write the trace as CSV with pyarrow's writer (same columns as ``Trace.to_csv``), atomically."""
    trace.to_csv(path, engine="pyarrow")


def write_trace(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write the trace as CSV, Parquet or Arrow (by suffix), atomically."""
    fmt = format_of(path)
    if fmt == "csv":
        trace.to_csv(path)     # pyarrow's writer when installed, else the standard library
        return
    _write_table(trace_to_arrow(trace), path, fmt)


# ---------------------------------------------------------------------------- profiles
def profiles_to_frame(profiles: ProfileTable):
    """The profile table as a pandas DataFrame: the tidy CSV's columns, ``share``, then any extra
    columns (missing counters as NaN)."""
    import pandas as pd

    names = [*PROFILE_COLUMNS, "share", *profiles.extra_columns]
    return pd.DataFrame({c: np.array(profiles.column(c)) for c in names})


def profiles_from_frame(frame: Any, *, path: str | os.PathLike[str] | None = None) -> ProfileTable:
    """A :class:`ProfileTable` from a DataFrame with the tidy CSV's columns, validated like the CSV
    (errors name the 1-based row; other columns are kept as extra text columns).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"gpu": ["l4"], "model": ["a"], "batch_size": [1], "solo_ms": [2.0],
    ...                    "sm": [0.5], "l2": [0.25], "dram": [0.125]})
    >>> profiles_from_frame(df).lookup("a", 1).solo_ms
    2.0
    >>> profiles_from_frame(df.assign(sm=[1.5]))
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: row 1: sm 1.5 must be a fraction of peak in [0, 1] (divide Nsight's % by 100), or empty if not measured
    """
    names = [str(c) for c in frame.columns]
    missing = [c for c in ("gpu", "model", "batch_size", "solo_ms") if c not in names]
    if missing:
        where = f"{os.fspath(path)}: " if path is not None else ""
        raise InterfpredError(f"{where}missing column(s) {', '.join(missing)}; columns are {','.join(names)}")

    def num(c: str):
        return None if c not in names else np.asarray(frame[c], dtype=np.float64)

    extra: dict[str, Any] = {c: _text_column(frame[c], c, path) for c in names
                             if c not in (*PROFILE_COLUMNS, "share")}
    gpu: Any = np.asarray(frame["gpu"])
    model: Any = np.asarray(frame["model"])
    return ProfileTable.from_columns(
        gpu=gpu, model=model, batch_size=num("batch_size"),
        solo_ms=num("solo_ms"), sm=num("sm"), l2=num("l2"), dram=num("dram"), share=num("share"), extra=extra,
        path=path, lines=list(range(1, len(frame) + 1)))


def read_profiles(path: str | os.PathLike[str]) -> ProfileTable:
    """Read a profile table from CSV, Parquet or Arrow (by suffix)."""
    fmt = format_of(path)
    if fmt == "csv":
        return ProfileTable.from_csv(path)
    table = _read_table(path, fmt, "profiles")
    check_column_types(table, path=path, strings=("gpu", "model"),
                       numbers=("batch_size", "solo_ms", "sm", "l2", "dram", "share"),
                       nullable=("sm", "l2", "dram", "share"), flat=True)
    return profiles_from_frame(table.to_pandas(), path=path)


def write_profiles(profiles: ProfileTable, path: str | os.PathLike[str]) -> None:
    """Write a profile table as CSV, Parquet or Arrow (by suffix), atomically."""
    fmt = format_of(path)
    if fmt == "csv":
        profiles.to_csv(path)
        return
    pa = _pa(f"writing {os.fspath(path)}")
    _write_table(pa.Table.from_pandas(profiles_to_frame(profiles), preserve_index=False), path, fmt)


# ---------------------------------------------------------------------------- measurements
def read_measurements(path: str | os.PathLike[str]) -> Measurements:
    """Read measurement runs from CSV, Parquet or Arrow (by suffix)."""
    fmt = format_of(path)
    if fmt == "arrow":
        table = _read_table(path, fmt, "measurements")
        check_measurement_columns(table, path)
        return Measurements.from_frame(table.to_pandas(), path=path)
    return Measurements.read(path)


def write_measurements(measurements: Measurements, path: str | os.PathLike[str]) -> None:
    """Write measurement runs as CSV, Parquet or Arrow (by suffix), atomically."""
    fmt = format_of(path)
    if fmt == "arrow":
        pa = _pa(f"writing {os.fspath(path)}")
        _write_table(pa.Table.from_pandas(measurements.to_frame(), preserve_index=False), path, fmt)
    else:
        measurements.write(path)


# ---------------------------------------------------------------------------- predictions
def check_finite_columns(columns: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Refuse to write ``path`` when a float column holds inf or NaN (naming the column and the 1-based row).

    Examples
    --------
    >>> check_finite_columns({"predicted_latency_ms": [1.0, float("inf")]}, "p.csv")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: predicted_latency_ms is inf in row 2: not a finite number; p.csv was not written
    """
    for k, v in columns.items():
        arr = np.asarray(v)
        if arr.dtype.kind == "f" and arr.size and not np.isfinite(arr).all():
            row = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise InterfpredError(f"{k} is {float(arr[row])!r} in row {row + 1}: not a finite number; "
                                  f"{os.fspath(path)} was not written")


def write_predictions_table(columns: dict[str, Any], path: str | os.PathLike[str]) -> int:
    """Write named prediction columns (equal lengths) as CSV, Parquet or Arrow (by suffix); returns rows.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "pred.parquet"
    >>> write_predictions_table({"id": [1, 2], "predicted_latency_ms": [3.5, 4.25]}, p)
    2
    >>> import pandas as pd
    >>> pd.read_parquet(p)["predicted_latency_ms"].tolist()
    [3.5, 4.25]
    """
    pa = _pa(f"writing {os.fspath(path)}")
    check_finite_columns(columns, path)
    table = pa.table({k: pa.array(np.asarray(v)) for k, v in columns.items()})
    _write_table(table, path, format_of(path))
    return table.num_rows
