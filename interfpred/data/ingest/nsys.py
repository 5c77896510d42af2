"""Nsight Systems SQLite exports (``nsys export --type sqlite``) to GPU operations, launches and ranges.

Every schema generation from 2020 on reads alike: tables are created only when the report holds
such events (a report without memory copies has no CUPTI_ACTIVITY_KIND_MEMCPY), columns come and go
(``greenContextId``, ``mangledName``), the exporter's version sits in EXPORT_META_DATA (to 2023) or
META_DATA_EXPORT (since), names are ids into StringIds, and an NVTX range's name is the ``text``
column or the registered string ``textId`` points at. Columns are looked up by name, never by
position, and only the ones below are read:

* CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET: ``start``, ``end`` (ns), ``deviceId``, ``correlationId``,
  ``globalPid``; kernels' ``shortName`` (or ``demangledName``) through StringIds;
* CUPTI_ACTIVITY_KIND_RUNTIME: ``start``, ``end``, ``globalTid``, ``correlationId``; a kernel's
  ``correlationId`` can match two rows (``cudaLaunchKernel`` and its ``cudaLaunchKernel_v7000``
  twin), which count as one launch;
* NVTX_EVENTS: push/pop and start/end ranges (``eventType`` 59, 60, 70, 71) with an ``end``,
  ``globalTid``, ``text`` / ``textId``.

A process is ``(globalPid >> 24) & 0xFFFFFF`` (of ``globalTid`` for API calls and ranges):
correlation ids are unique within one process, so a report with several processes (MPS clients,
a merged export) joins each kernel to its own process's launch. A device is named ``gpu<deviceId>``.
A binary report (``.nsys-rep``, ``.qdrep``) is refused with the export command to run.

Examples
--------
>>> import sqlite3, tempfile, pathlib
>>> db = pathlib.Path(tempfile.mkdtemp()) / "tiny.sqlite"
>>> con = sqlite3.connect(db)
>>> _ = con.executescript('''
... CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
... INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'cudaLaunchKernel');
... CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT,
...     correlationId INT, globalPid INT, demangledName INT, shortName INT);
... INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000000, 5000000, 0, 7, 9, 16777216, 1, 1);
... CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, globalTid INT, correlationId INT, nameId INT);
... INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000000, 1100000, 16777217, 9, 2);
... CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, globalTid INT);
... INSERT INTO NVTX_EVENTS VALUES (900000, 1200000, 59, 'resnet50:8', 16777217);''')
>>> con.commit(); con.close()
>>> t = read_nsys(db)
>>> t.device.tolist(), t.model.tolist(), t.batch_size.tolist(), t.start_ms.tolist(), t.end_ms.tolist()
(['gpu0'], ['resnet50'], [8], [2.0], [5.0])
>>> read_nsys(db, kernels=True).model.tolist()
['gemm']
"""

from __future__ import annotations

import os
import pathlib
import sqlite3
from typing import Any

import numpy as np

from interfpred._core.atomic import check_regular_file
from interfpred.constants import NSYS_RANGE_EVENT_TYPES, NSYS_REPORT_MAGIC
from interfpred.data.ingest.batch_names import NamePattern
from interfpred.data.ingest.gpu_ranges import (
    CaptureFormatError,
    CaptureReport,
    GpuOps,
    Launches,
    Ranges,
    executions_from_kernels,
    executions_from_ranges,
)
from interfpred.data.trace import Trace

__all__ = ["SQLITE_MAGIC", "read_nsys", "read_nsys_tables", "refuse_nsys_report"]

#: First bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"
_KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
_RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
_MEMORY = ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
_NVTX = "NVTX_EVENTS"
_META = ("META_DATA_EXPORT", "EXPORT_META_DATA")
_PID = "((({col}) >> 24) & 16777215)"  # the process of a serialized GlobalId
_NS_PER_MS = 1e6


def refuse_nsys_report(path: str | os.PathLike[str]) -> CaptureFormatError:
    """The error for a binary Nsight Systems report, with the command that exports it to SQLite."""
    p = pathlib.Path(path)
    return CaptureFormatError(f"is an Nsight Systems report, which is read through its SQLite export: run "
                              f"'nsys export --type sqlite --output {p.with_suffix('.sqlite')} {p}' and pass the "
                              ".sqlite file", path=path)


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in con.execute(f'PRAGMA table_info("{table}")')}


def _require(path: Any, table: str, have: set[str], *names: str) -> None:
    missing = [n for n in names if n not in have]
    if missing:
        raise CaptureFormatError(f"table {table} has no column {', '.join(missing)} (not an Nsight Systems export "
                                 "this reader knows)", path=path)


def _version(con: sqlite3.Connection, tables: set[str]) -> str | None:
    for meta in _META:
        if meta in tables and {"name", "value"} <= _columns(con, meta):
            rows = dict(con.execute(f'SELECT name, value FROM "{meta}"').fetchall())
            product, schema = rows.get("EXPORT_PRODUCT_VERSION"), rows.get("EXPORT_SCHEMA_VERSION")
            if product or schema:
                return f"{product or '?'} (schema {schema or '?'})"
    return None


def _ops(con: sqlite3.Connection, path: Any, tables: set[str]) -> GpuOps:
    parts: list[tuple[np.ndarray, ...]] = []
    strings = "StringIds" in tables
    for table in (_KERNEL, *_MEMORY):
        if table not in tables:
            continue
        have = _columns(con, table)
        _require(path, table, have, "start", "end", "deviceId")
        corr = "t.correlationId" if "correlationId" in have else "-1"
        pid = _PID.format(col="t.globalPid") if "globalPid" in have else "0"
        join = ""
        if table == _KERNEL:
            col = next((c for c in ("shortName", "demangledName", "name") if c in have), None)
            if col is None:
                raise CaptureFormatError(f"table {table} has no kernel name column (shortName, demangledName)",
                                         path=path)
            if strings and col != "name":
                name, join = f"COALESCE(s.value, CAST(t.{col} AS TEXT))", f"LEFT JOIN StringIds s ON s.id = t.{col}"
            else:
                name = f"CAST(t.{col} AS TEXT)"
        else:
            name = "'memcpy'" if table.endswith("MEMCPY") else "'memset'"
        rows = con.execute(f'SELECT t.start, t.end, t.deviceId, {pid}, COALESCE({corr}, -1), {name} '
                           f'FROM "{table}" t {join}').fetchall()
        if not rows:
            continue
        start, end, dev, proc, cor, nm = zip(*rows)
        parts.append((np.asarray(start, dtype=np.float64) / _NS_PER_MS, np.asarray(end, dtype=np.float64) / _NS_PER_MS,
                      np.array([f"gpu{d}" for d in dev]), np.asarray(proc, dtype=np.int64),
                      np.asarray(cor, dtype=np.int64), np.array([str(n) for n in nm]),
                      np.full(len(rows), table == _KERNEL)))
    if not parts:
        return GpuOps(np.empty(0), np.empty(0), np.empty(0, dtype=str), np.empty(0, dtype=np.int64),
                      np.empty(0, dtype=np.int64), np.empty(0, dtype=str), np.empty(0, dtype=bool))
    cols = [np.concatenate(c) for c in zip(*parts)]
    return GpuOps(*cols)


def _launches(con: sqlite3.Connection, path: Any, tables: set[str]) -> Launches:
    if _RUNTIME not in tables:
        raise CaptureFormatError(f"has no {_RUNTIME} table, so no kernel can be matched to the range that launched "
                                 "it (profile with --trace=cuda,nvtx, or pass --kernels)", path=path)
    have = _columns(con, _RUNTIME)
    _require(path, _RUNTIME, have, "start", "end", "globalTid", "correlationId")
    rows = con.execute(f'SELECT start, end, globalTid, {_PID.format(col="globalTid")}, correlationId FROM "{_RUNTIME}" '
                       "WHERE correlationId IS NOT NULL AND globalTid IS NOT NULL").fetchall()
    arr = np.array(rows, dtype=np.int64).reshape(-1, 5)
    return Launches(start_ms=arr[:, 0] / _NS_PER_MS, end_ms=arr[:, 1] / _NS_PER_MS, thread=arr[:, 2],
                    process=arr[:, 3], correlation=arr[:, 4])


def _ranges(con: sqlite3.Connection, path: Any, tables: set[str]) -> Ranges:
    if _NVTX not in tables:
        raise CaptureFormatError(f"has no {_NVTX} table: the report holds no NVTX ranges (profile with "
                                 "--trace=cuda,nvtx, or pass --kernels to make each kernel an execution)", path=path)
    have = _columns(con, _NVTX)
    _require(path, _NVTX, have, "start", "end", "eventType", "globalTid")
    if "text" not in have and "textId" not in have:
        raise CaptureFormatError(f"table {_NVTX} has neither a text nor a textId column", path=path)
    text = "n.text" if "text" in have else "NULL"
    join = ""
    if "textId" in have and "StringIds" in tables:
        text, join = f"COALESCE({text}, s.value)", "LEFT JOIN StringIds s ON s.id = n.textId"
    types = ", ".join(str(t) for t in NSYS_RANGE_EVENT_TYPES)
    rows = con.execute(f"SELECT n.start, n.end, n.globalTid, COALESCE({text}, '') FROM \"{_NVTX}\" n {join} "
                       f"WHERE n.end IS NOT NULL AND n.eventType IN ({types}) AND n.globalTid IS NOT NULL "
                       "ORDER BY n.start").fetchall()
    if not rows:
        return Ranges(np.empty(0), np.empty(0), np.empty(0, dtype=np.int64), np.empty(0, dtype=str))
    start, end, tid, name = zip(*rows)
    return Ranges(start_ms=np.asarray(start, dtype=np.float64) / _NS_PER_MS,
                  end_ms=np.asarray(end, dtype=np.float64) / _NS_PER_MS,
                  thread=np.asarray(tid, dtype=np.int64), name=np.array([str(n) for n in name]))


def _open(path: str | os.PathLike[str]) -> sqlite3.Connection:
    check_regular_file(path, "an Nsight Systems SQLite export")
    with open(path, "rb") as fh:
        head = fh.read(len(NSYS_REPORT_MAGIC))
    if head.startswith(NSYS_REPORT_MAGIC) or pathlib.Path(path).suffix.lower() in (".nsys-rep", ".qdrep"):
        raise refuse_nsys_report(path)
    if not head.startswith(SQLITE_MAGIC):
        raise CaptureFormatError("is not an SQLite database (an Nsight Systems export starts with "
                                 "'SQLite format 3')", path=path)
    uri = pathlib.Path(path).resolve().as_uri() + "?mode=ro"
    try:
        return sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise CaptureFormatError(f"cannot be opened as an SQLite export: {exc}", path=path) from None


def read_nsys_tables(path: str | os.PathLike[str], *, kernels: bool = False
                     ) -> tuple[GpuOps, Launches | None, Ranges | None, str | None]:
    """GPU operations, launches and ranges of an export, and its version (None when not recorded).

    With ``kernels`` the launches and ranges are not read (None).

    Raises
    ------
    CaptureFormatError
        A binary report, a file that is not SQLite or not an Nsight Systems export, a damaged
        database, or a table without a column the reader needs; the message names the file.
    """
    con = _open(path)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        known = {_KERNEL, _RUNTIME, _NVTX, "StringIds", *_MEMORY, *_META}
        if not tables & known:
            raise CaptureFormatError("is an SQLite database but not an Nsight Systems export (none of its tables "
                                     f"is {_KERNEL}, {_NVTX} or StringIds)", path=path)
        version = _version(con, tables)
        ops = _ops(con, path, tables)
        if len(ops.start_ms) == 0:
            raise CaptureFormatError(f"holds no GPU operation (no rows in {_KERNEL} or the MEMCPY/MEMSET tables): "
                                     "profile with CUDA tracing on (nsys profile --trace=cuda,nvtx)", path=path)
        if kernels:
            return ops, None, None, version
        return ops, _launches(con, path, tables), _ranges(con, path, tables), version
    except sqlite3.Error as exc:
        raise CaptureFormatError(f"cannot be read as an SQLite export: {exc}", path=path) from None
    finally:
        con.close()


def read_nsys(path: str | os.PathLike[str], *, kernels: bool = False, pattern: NamePattern | None = None,
              batch_size: int = 1, strict: bool = False, report: CaptureReport | None = None) -> Trace:
    """A :class:`~interfpred.data.trace.Trace` from an Nsight Systems SQLite export.

    One execution per NVTX range whose name parses as a batch (the convention of
    :mod:`~interfpred.data.ingest.batch_names`, or ``pattern``), projected onto the GPU
    (:mod:`~interfpred.data.ingest.gpu_ranges`); with ``kernels``, one per CUDA kernel instead
    (model = the kernel's short name, batch size ``batch_size``). ``report`` is filled in.
    """
    report = CaptureReport(source="Nsight Systems export") if report is None else report
    ops, launches, ranges, report.version = read_nsys_tables(path, kernels=kernels)
    if kernels:
        return executions_from_kernels(path, ops, batch_size=batch_size, report=report)
    assert launches is not None and ranges is not None
    return executions_from_ranges(path, ranges, launches, ops, pattern=pattern, strict=strict, report=report)
