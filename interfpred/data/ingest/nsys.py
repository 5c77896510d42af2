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
  ``globalTid``, ``text`` / ``textId``;
* GPU metrics sampling (``nsys profile --gpu-metrics-devices``), read only by
  :func:`read_nsys_gpu_metrics`: GPU_METRICS (``timestamp`` in ns, ``typeId``, ``metricId``,
  ``value`` in % of peak) and TARGET_INFO_GPU_METRICS (``metricId``, ``metricName``, and
  ``typeId`` where the export has it, metric ids being per GPU type).

A process is ``(globalPid >> 24) & 0xFFFFFF`` (of ``globalTid`` for API calls and ranges):
correlation ids are unique within one process, so a report with several processes (MPS clients,
a merged export) joins each kernel to its own process's launch. A device is named ``gpu<deviceId>``.
A binary report (``.nsys-rep``, ``.qdrep``) is refused with the export command to run.

A hostile file is refused before it costs time or memory: the database is opened read-only, a
table the reader needs that is a view or a virtual table (SQL the file would run) is refused,
each table's row count is checked against ``INPUT_MAX_ROWS`` and its names against
``NAME_MAX_CHARS`` / ``NAME_CELLS_MAX`` before its rows are fetched, and every column read is
typed: integer ids, times and devices (``deviceId`` in [0, CAPTURE_DEVICE_ID_MAX]), times within
the horizon; the message names the table and row.

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
from dataclasses import dataclass
from typing import Any

import numpy as np

from interfpred._core.atomic import check_regular_file
from interfpred._core.limits import check_limit
from interfpred.constants import (
    CAPTURE_DEVICE_ID_MAX,
    NSYS_GPU_METRIC_COUNTERS,
    NSYS_GPU_METRIC_DEVICE_MASK,
    NSYS_RANGE_EVENT_TYPES,
    NSYS_REPORT_MAGIC,
    TIME_HORIZON_MS,
)
from interfpred.data.ingest.batch_names import NamePattern
from interfpred.data.ingest.capture_checks import check_names, check_spans
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

__all__ = ["SQLITE_MAGIC", "GpuMetricSamples", "read_nsys", "read_nsys_gpu_metrics", "read_nsys_tables",
           "real_tables", "refuse_nsys_report"]

#: First bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"
_KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
_RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
_MEMORY = ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
_NVTX = "NVTX_EVENTS"
_META = ("META_DATA_EXPORT", "EXPORT_META_DATA")
_METRICS = "GPU_METRICS"
_METRIC_NAMES = "TARGET_INFO_GPU_METRICS"
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


_INTEGER = "typeof({c}) != 'integer'"
_HORIZON_NS = int(TIME_HORIZON_MS * _NS_PER_MS)
#: A time (ns): an integer within the tracker's horizon, an end not before its start.
_TIME = f"typeof({{c}}) != 'integer' OR {{c}} NOT BETWEEN -{_HORIZON_NS} AND {_HORIZON_NS}"
_END = f"{_TIME} OR {{c}} < start"
_TIME_TEXT = f"an integer time (ns) within +-{_HORIZON_NS:.4g}"
_DEVICE = f"typeof({{c}}) != 'integer' OR {{c}} NOT BETWEEN 0 AND {CAPTURE_DEVICE_ID_MAX}"
_NULL_OR_INTEGER = "{c} IS NOT NULL AND typeof({c}) != 'integer'"


def _shown(value: Any) -> str:
    if isinstance(value, (str, bytes)):
        return f"{type(value).__name__} {value[:40]!r}"
    return "NULL" if value is None else repr(value)


def _check(con: sqlite3.Connection, path: Any, table: str, checks: list[tuple[str, str, str]],
           where: str = "1", *, count_where: bool = False) -> int:
    """Rows of ``table`` (within INPUT_MAX_ROWS); refuse the first row whose column is bad.

    ``checks`` holds (column, SQL condition true for a bad value with ``{c}`` for the column,
    what was expected), applied to the rows ``where`` selects; with ``count_where`` only those
    rows count against the limit (a table of which a few columns' rows are read).
    """
    counted = f" WHERE ({where})" if count_where else ""
    rows = con.execute(f'SELECT count(*) FROM "{table}"{counted}').fetchone()[0]
    check_limit("INPUT_MAX_ROWS", int(rows), f"table {table} with rows", path=path)
    for col, bad, expected in checks:
        cond = bad.format(c=f'"{col}"')
        row = con.execute(f'SELECT rowid, "{col}" FROM "{table}" WHERE ({where}) AND ({cond}) LIMIT 1').fetchone()
        if row is not None:
            raise CaptureFormatError(f"table {table} row {row[0]} has {col} {_shown(row[1])}, not {expected}",
                                     path=path)
    return int(rows)


def real_tables(con: sqlite3.Connection, path: Any, known: set[str]) -> set[str]:
    """The ordinary tables; a known name that is a view or a virtual table is refused (its SQL would run)."""
    tables = set()
    for name, kind, sql in con.execute("SELECT name, type, sql FROM sqlite_master WHERE type IN ('table', 'view')"):
        virtual = kind == "table" and str(sql or "").lstrip().upper().startswith("CREATE VIRTUAL")
        if name in known and (kind == "view" or virtual):
            raise CaptureFormatError(f"has {name} as a {'view' if kind == 'view' else 'virtual table'}, not a table: "
                                     "an Nsight Systems export holds plain tables (a view or virtual table runs SQL "
                                     "from the file)", path=path)
        if kind == "table" and not virtual:
            tables.add(str(name))
    return tables


def _version(con: sqlite3.Connection, tables: set[str]) -> str | None:
    for meta in _META:
        if meta in tables and {"name", "value"} <= _columns(con, meta):
            rows = dict(con.execute(f'SELECT name, value FROM "{meta}" WHERE name IN '
                                    "('EXPORT_PRODUCT_VERSION', 'EXPORT_SCHEMA_VERSION') LIMIT 2").fetchall())
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
        checks = [("start", _TIME, _TIME_TEXT), ("end", _END, f"{_TIME_TEXT}, not before its start"),
                  ("deviceId", _DEVICE, f"a device ordinal in [0, {CAPTURE_DEVICE_ID_MAX}]")]
        if "correlationId" in have:
            checks.append(("correlationId", _NULL_OR_INTEGER, "an integer id"))
        if "globalPid" in have:
            checks.append(("globalPid", _INTEGER, "an integer id"))
        if table == _KERNEL:
            checks.append((str(col), "{c} IS NULL", "a kernel name (an id into StringIds)"))
        if _check(con, path, table, checks) == 0:
            continue
        count, longest = con.execute(f'SELECT count(*), max(length({name})) FROM "{table}" t {join}').fetchone()
        check_names(int(count), int(longest or 0), path, f"table {table}")
        rows = con.execute(f'SELECT t.start, t.end, t.deviceId, {pid}, COALESCE({corr}, -1), {name} '
                           f'FROM "{table}" t {join}').fetchall()
        if not rows:
            continue
        start, end, dev, proc, cor, nm = zip(*rows)
        n_rows = len(rows)
        del rows
        parts.append((np.asarray(start, dtype=np.float64) / _NS_PER_MS, np.asarray(end, dtype=np.float64) / _NS_PER_MS,
                      np.array([f"gpu{d}" for d in dev]), np.asarray(proc, dtype=np.int64),
                      np.asarray(cor, dtype=np.int64), np.array([str(n) for n in nm]),
                      np.full(n_rows, table == _KERNEL)))
    if not parts:
        return GpuOps(np.empty(0), np.empty(0), np.empty(0, dtype=str), np.empty(0, dtype=np.int64),
                      np.empty(0, dtype=np.int64), np.empty(0, dtype=str), np.empty(0, dtype=bool))
    cols = [np.concatenate(c) for c in zip(*parts)]
    ops = GpuOps(*cols)
    check_spans(ops.start_ms, ops.end_ms, path, "a GPU operation", lambda i: f"(row {i + 1} of the GPU tables)")
    return ops


def _launches(con: sqlite3.Connection, path: Any, tables: set[str]) -> Launches:
    if _RUNTIME not in tables:
        raise CaptureFormatError(f"has no {_RUNTIME} table, so no kernel can be matched to the range that launched "
                                 "it (profile with --trace=cuda,nvtx, or pass --kernels)", path=path)
    have = _columns(con, _RUNTIME)
    _require(path, _RUNTIME, have, "start", "end", "globalTid", "correlationId")
    valid = "correlationId IS NOT NULL AND globalTid IS NOT NULL"
    _check(con, path, _RUNTIME, [("start", _TIME, _TIME_TEXT), ("end", _END, f"{_TIME_TEXT}, not before its start"),
                                 ("globalTid", _INTEGER, "an integer id"),
                                 ("correlationId", _INTEGER, "an integer id")], where=valid)
    rows = con.execute(f'SELECT start, end, globalTid, {_PID.format(col="globalTid")}, correlationId FROM "{_RUNTIME}" '
                       "WHERE correlationId IS NOT NULL AND globalTid IS NOT NULL").fetchall()
    arr = np.array(rows, dtype=np.int64).reshape(-1, 5)
    del rows
    launches = Launches(start_ms=arr[:, 0] / _NS_PER_MS, end_ms=arr[:, 1] / _NS_PER_MS, thread=arr[:, 2],
                        process=arr[:, 3], correlation=arr[:, 4])
    check_spans(launches.start_ms, launches.end_ms, path, f"table {_RUNTIME}", lambda i: f"(call {i + 1})")
    return launches


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
    valid = f"end IS NOT NULL AND eventType IN ({types}) AND globalTid IS NOT NULL"
    _check(con, path, _NVTX, [("start", _TIME, _TIME_TEXT), ("end", _END, f"{_TIME_TEXT}, not before its start"),
                              ("globalTid", _INTEGER, "an integer id")], where=valid)
    count, longest = con.execute(f"SELECT count(*), max(length(COALESCE({text}, ''))) FROM \"{_NVTX}\" n {join} "
                                 f"WHERE n.end IS NOT NULL AND n.eventType IN ({types}) AND n.globalTid IS NOT NULL"
                                 ).fetchone()
    check_names(int(count), int(longest or 0), path, f"table {_NVTX}")
    rows = con.execute(f"SELECT n.start, n.end, n.globalTid, COALESCE({text}, '') FROM \"{_NVTX}\" n {join} "
                       f"WHERE n.end IS NOT NULL AND n.eventType IN ({types}) AND n.globalTid IS NOT NULL "
                       "ORDER BY n.start").fetchall()
    if not rows:
        return Ranges(np.empty(0), np.empty(0), np.empty(0, dtype=np.int64), np.empty(0, dtype=str))
    start, end, tid, name = zip(*rows)
    del rows
    ranges = Ranges(start_ms=np.asarray(start, dtype=np.float64) / _NS_PER_MS,
                    end_ms=np.asarray(end, dtype=np.float64) / _NS_PER_MS,
                    thread=np.asarray(tid, dtype=np.int64), name=np.array([str(n) for n in name]))
    check_spans(ranges.start_ms, ranges.end_ms, path, f"table {_NVTX}", lambda i: f"(range {i + 1} by start)")
    return ranges


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
        con = sqlite3.connect(uri, uri=True)
        con.execute("PRAGMA query_only = ON")
        con.execute("PRAGMA trusted_schema = OFF")  # no SQL function from the file's schema runs
        return con
    except sqlite3.Error as exc:
        raise CaptureFormatError(f"cannot be opened as an SQLite export: {exc}", path=path) from None


def read_nsys_tables(path: str | os.PathLike[str], *, kernels: bool = False
                     ) -> tuple[GpuOps, Launches | None, Ranges | None, str | None]:
    """GPU operations, launches and ranges of an export, and its version (None when not recorded).

    With ``kernels`` the ranges are not read (None), and the launches only when the export holds
    them (else None).

    Raises
    ------
    CaptureFormatError
        A binary report, a file that is not SQLite or not an Nsight Systems export, a damaged
        database, or a table without a column the reader needs; the message names the file.
    """
    con = _open(path)
    try:
        known = {_KERNEL, _RUNTIME, _NVTX, "StringIds", *_MEMORY, *_META}
        tables = real_tables(con, path, known)
        if not tables & known:
            raise CaptureFormatError("is an SQLite database but not an Nsight Systems export (none of its tables "
                                     f"is {_KERNEL}, {_NVTX} or StringIds)", path=path)
        version = _version(con, tables)
        ops = _ops(con, path, tables)
        if len(ops.start_ms) == 0:
            raise CaptureFormatError(f"holds no GPU operation (no rows in {_KERNEL} or the MEMCPY/MEMSET tables): "
                                     "profile with CUDA tracing on (nsys profile --trace=cuda,nvtx)", path=path)
        if kernels:   # the calls, when recorded, only to refuse a kernel starting before its launch
            return ops, (_launches(con, path, tables) if _RUNTIME in tables else None), None, version
        return ops, _launches(con, path, tables), _ranges(con, path, tables), version
    except sqlite3.Error as exc:
        raise CaptureFormatError(f"cannot be read as an SQLite export: {exc}", path=path) from None
    except UnicodeDecodeError as exc:  # a damaged schema or text cell
        raise CaptureFormatError(f"holds text that is not UTF-8 (byte {exc.object[exc.start:exc.start + 1]!r}): a "
                                 "damaged export", path=path) from None
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
        return executions_from_kernels(path, ops, batch_size=batch_size, report=report, launches=launches)
    assert launches is not None and ranges is not None
    return executions_from_ranges(path, ranges, launches, ops, pattern=pattern, strict=strict, report=report)


@dataclass(frozen=True)
class GpuMetricSamples:
    """GPU metrics samples of an export that feed a profile counter, one row per (device, time, counter).

    ``value`` is a fraction of peak in [0, 1] (the export's % divided by 100; the DRAM read and
    write bandwidths of one sample summed, capped at 1).
    """

    device: np.ndarray   # "gpu<ordinal>", as the trace names devices
    time_ms: np.ndarray
    counter: np.ndarray  # "sm" or "dram"
    value: np.ndarray

    @property
    def counters(self) -> tuple[str, ...]:
        """The counters sampled, sorted."""
        return tuple(sorted(set(self.counter.tolist())))


def _counter_of(name: str) -> str | None:
    base = name.split("[", 1)[0].strip().lower()
    return dict(NSYS_GPU_METRIC_COUNTERS).get(base)


def read_nsys_gpu_metrics(path: str | os.PathLike[str]) -> GpuMetricSamples | None:
    """The GPU metrics samples of an Nsight Systems export that feed profile counters; None without any.

    The export holds them when the capture ran with ``--gpu-metrics-devices``: GPU_METRICS has one
    row per (sample time, metric), TARGET_INFO_GPU_METRICS names the metrics. SM activity
    (``SMs Active``) feeds ``sm``, DRAM read plus write bandwidth feeds ``dram``
    (:data:`~interfpred.constants.NSYS_GPU_METRIC_COUNTERS`); the low byte of ``typeId`` is the
    device the sample was taken on (:data:`~interfpred.constants.NSYS_GPU_METRIC_DEVICE_MASK`).
    A capture without the tables, or whose metrics feed no counter, gives None: the counters
    stay missing.

    Only the samples of those metrics are checked and read, and only they count against
    ``INPUT_MAX_ROWS`` (a capture samples a dozen metrics or more at up to 10 kHz).

    Raises
    ------
    CaptureFormatError
        GPU_METRICS without TARGET_INFO_GPU_METRICS, a column missing, or a row (of a metric read)
        whose time, type id or value (a % of peak in [0, 100]) is not what the export writes; the
        message names the file, the table and the row.
    """
    con = _open(path)
    try:
        tables = real_tables(con, path, {_METRICS, _METRIC_NAMES})
        if _METRICS not in tables:
            return None
        if _METRIC_NAMES not in tables:
            raise CaptureFormatError(f"has a {_METRICS} table but no {_METRIC_NAMES} table naming its metrics "
                                     "(not an Nsight Systems export this reader knows)", path=path)
        have = _columns(con, _METRICS)
        _require(path, _METRICS, have, "timestamp", "typeId", "metricId", "value")
        names_have = _columns(con, _METRIC_NAMES)
        _require(path, _METRIC_NAMES, names_have, "metricId", "metricName")
        typed = "typeId" in names_have
        name_checks = [("metricId", _INTEGER, "an integer id"), ("metricName", "typeof({c}) != 'text'", "a name")]
        if typed:
            name_checks.append(("typeId", _INTEGER, "an integer id"))
        n_names = _check(con, path, _METRIC_NAMES, name_checks)
        longest = con.execute(f'SELECT max(length(metricName)) FROM "{_METRIC_NAMES}"').fetchone()[0]
        check_names(n_names, int(longest or 0), path, f"table {_METRIC_NAMES}")
        kind = "typeId" if typed else "NULL"
        feeds: dict[tuple[int | None, int], str] = {}
        named: dict[tuple[int | None, int], str] = {}
        for type_id, metric_id, name in con.execute(f'SELECT {kind}, metricId, metricName FROM "{_METRIC_NAMES}"'):
            key = (type_id, int(metric_id))
            if named.setdefault(key, str(name)) != str(name):  # one id, two metrics: its samples are neither
                raise CaptureFormatError(f"table {_METRIC_NAMES} names metric id {metric_id} twice, "
                                         f"{named[key]!r} and {str(name)!r}: a damaged export", path=path)
            counter = _counter_of(str(name))
            if counter is not None:
                feeds[key] = counter
        if not feeds:
            return None
        # only the samples of the metrics that feed a counter are checked, counted and read
        fed = f"metricId IN ({', '.join(sorted({str(m) for _, m in feeds}))})"
        _check(con, path, _METRICS, [
            ("timestamp", _TIME, _TIME_TEXT), ("typeId", _INTEGER, "an integer id"),
            ("value", "typeof({c}) NOT IN ('integer', 'real') OR {c} < 0 OR {c} > 100",
             "a number in [0, 100] (% of peak)")], where=fed, count_where=True)
        rows = con.execute(f'SELECT timestamp, typeId, metricId, value FROM "{_METRICS}" WHERE {fed}').fetchall()
    except sqlite3.Error as exc:
        raise CaptureFormatError(f"cannot be read as an SQLite export: {exc}", path=path) from None
    except UnicodeDecodeError as exc:
        raise CaptureFormatError(f"holds text that is not UTF-8 (byte {exc.object[exc.start:exc.start + 1]!r}): a "
                                 "damaged export", path=path) from None
    finally:
        con.close()
    keep = [(t, ty, feeds.get((ty if typed else None, m)), v) for t, ty, m, v in rows]
    keep = [r for r in keep if r[2] is not None]
    if not keep:
        return None
    t_ns, type_ids, counters, value = zip(*keep)
    device = np.array([f"gpu{int(ty) & NSYS_GPU_METRIC_DEVICE_MASK}" for ty in type_ids])
    t = np.asarray(t_ns, dtype=np.int64)
    c = np.array(counters)
    v = np.asarray(value, dtype=np.float64) / 100.0
    # one value per (device, time, counter): the DRAM read and write bandwidths of a sample add up
    order = np.lexsort((t, c, device))
    device, t, c, v = device[order], t[order], c[order], v[order]
    first = np.ones(len(t), dtype=bool)
    first[1:] = (device[1:] != device[:-1]) | (c[1:] != c[:-1]) | (t[1:] != t[:-1])
    starts = np.flatnonzero(first)
    return GpuMetricSamples(device=device[starts], time_ms=t[starts] / _NS_PER_MS, counter=c[starts],
                            value=np.minimum(np.add.reduceat(v, starts), 1.0))
