"""Trace: a columnar table of executions (what ran where and when).

Columns: ``id, device, model, batch_size, start_ms, end_ms`` and optionally ``solo_ms`` and
``share`` (the MPS active thread percentage each execution ran under, in (0, 100]; 100 when absent).
A *device* is one GPU instance (``"gpu0"``); the GPU *type* (``"l4"``) is what a
:class:`~interfpred.data.profiles.ProfileTable` calls ``gpu``. Rows keep the order they were given in
(the simulator produces them sorted by start); several devices may share one trace, and
timelines are computed per device.

Examples
--------
>>> t = Trace(id=[1, 2], device=["g0", "g0"], model=["resnet50", "vgg19"], batch_size=[8, 4],
...           start_ms=[0.0, 1.0], end_ms=[5.0, 7.5])
>>> len(t), t.latency_ms
(2, array([5. , 6.5]))
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from interfpred._core.arrow import have_pyarrow, require_pyarrow, write_csv
from interfpred._core.atomic import atomic_open, csv_rows, read_text
from interfpred.constants import MAX_BATCH_SIZE, MAX_INT64, TRACE_COLUMNS, TRACE_FEW_NAMES, TRACE_OPTIONAL_COLUMNS
from interfpred.errors import InputError, InterfpredError

__all__ = ["Trace", "bad_batch_size", "check_batch_size"]


def bad_batch_size(batch: np.ndarray) -> tuple[int, str] | None:
    """The first batch size in ``batch`` (float64) that breaks the rule, with why; None when all keep it.

    The rule, for a trace file and a live tracker alike: a positive integer (``8`` or ``8.0``) no
    larger than ``MAX_BATCH_SIZE``.

    >>> bad_batch_size(np.array([8.0, 2.5])), bad_batch_size(np.array([1.0, 4.0]))
    ((1, 'batch_size 2.5 is not a positive integer'), None)
    """
    bad = np.flatnonzero(~np.isfinite(batch) | (batch <= 0) | (batch != np.round(batch)))
    if bad.size:
        return int(bad[0]), f"batch_size {float(batch[bad[0]]):g} is not a positive integer"
    bad = np.flatnonzero(batch > MAX_BATCH_SIZE)
    if bad.size:
        return int(bad[0]), f"batch_size {float(batch[bad[0]]):g} is larger than MAX_BATCH_SIZE={MAX_BATCH_SIZE}"
    return None


def check_batch_size(value: Any, what: str) -> int:
    """One batch size as an int, refused (``what`` names the call) by the rule of :func:`bad_batch_size`.

    An ``int`` (or numpy integer) or an integral float; not a bool, a string or ``2.5``.

    >>> check_batch_size(8, "start of id 1"), check_batch_size(np.int64(4), "x"), check_batch_size(2.0, "x")
    (8, 4, 2)
    >>> check_batch_size(True, "start of id 1")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: start of id 1 refused: batch_size True is a bool, not a positive integer
    """
    if type(value) is int and 0 < value <= MAX_BATCH_SIZE:   # the common case, without numpy
        return value
    if isinstance(value, (bool, np.bool_)):
        raise InterfpredError(f"{what} refused: batch_size {value!r} is a bool, not a positive integer")
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise InterfpredError(f"{what} refused: batch_size {value!r} is a {type(value).__name__}, "
                              "not a positive integer")
    if isinstance(value, (int, np.integer)) and value > MAX_BATCH_SIZE:   # also an int too large for a float
        raise InterfpredError(f"{what} refused: batch_size {value} is larger than MAX_BATCH_SIZE={MAX_BATCH_SIZE}")
    bad = bad_batch_size(np.array([float(value)]))
    if bad is not None:
        raise InterfpredError(f"{what} refused: {bad[1]}")
    return int(value)


def _few_codes(arr: np.ndarray, limit: int = TRACE_FEW_NAMES) -> tuple[tuple[str, ...], np.ndarray] | None:
    """Factorise a column with at most ``limit`` distinct names by whole-array comparisons (one
    vectorised pass per name, no Python loop over rows); None when it has more."""
    n = len(arr)
    first = np.full(n, -1, dtype=np.int64)
    names: list[str] = []
    pos = 0
    while pos < n:
        if len(names) == limit:
            return None
        name = arr[pos]
        first[arr == name] = len(names)
        names.append(str(name))
        open_ = first[pos:] < 0
        nxt = int(np.argmax(open_))     # the first row still without a code (no index array of them all)
        pos = pos + nxt if open_[nxt] else n
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    return tuple(names[i] for i in order), (rank[first] if names else first)


class Trace:
    """Columnar executions with validation.

    Parameters
    ----------
    id
        Unique execution ids: integers, or strings when a CSV's ids are not all integers.
    device, model
        Names (strings): the device (GPU instance) each execution ran on, and its model.
    batch_size
        Positive integers.
    start_ms, end_ms
        Finite times in milliseconds, ``end_ms >= start_ms``.
    solo_ms
        Optional solo latency per execution (the simulator records its noisy solo work).
    share
        Optional MPS active thread percentage per execution, in (0, 100]; None means 100 for all.

    Raises
    ------
    InterfpredError
        On duplicate ids, non-finite times, end before start, bad batch sizes or
        columns of different lengths; the message names the row (0-based) and id.
    """

    def __init__(
        self,
        *,
        id: Sequence | np.ndarray,
        device: Sequence[str] | np.ndarray,
        model: Sequence[str] | np.ndarray,
        batch_size: Sequence[int] | np.ndarray,
        start_ms: Sequence[float] | np.ndarray,
        end_ms: Sequence[float] | np.ndarray,
        solo_ms: Sequence[float] | np.ndarray | None = None,
        share: Sequence[float] | np.ndarray | None = None,
        _lines: Sequence[int] | None = None,
        _path: str | os.PathLike[str] | None = None,
    ) -> None:
        ids = np.asarray(id)
        if ids.dtype.kind not in "iu":
            ids = ids.astype(str)
        else:
            if ids.dtype.kind == "u" and ids.size and int(ids.max()) > MAX_INT64:
                raise InterfpredError(f"id {int(ids.max())} does not fit in a 64-bit signed integer; pass ids as "
                                      "strings")
            ids = ids.astype(np.int64)
        n = len(ids)
        for name, col in (("id", id), ("device", device), ("model", model)):
            # numpy drops a trailing NUL without a word: look at the text before converting
            if not (isinstance(col, np.ndarray) and col.dtype.kind in "iuU"):
                nul_at = next((i for i, v in enumerate(col) if isinstance(v, str) and "\x00" in v), None)
                if nul_at is not None:
                    at = f"line {_lines[nul_at]}" if _lines is not None else f"row {nul_at}"
                    raise InterfpredError(f"{os.fspath(_path) + ': ' if _path is not None else ''}{at}: {name} "
                                          f"{col[nul_at]!r} holds a NUL byte")
        device_a = np.asarray(device).astype(str)
        model_a = np.asarray(model).astype(str)
        try:
            batch_f = np.asarray(batch_size, dtype=np.float64)
            start = np.ascontiguousarray(start_ms, dtype=np.float64)
            end = np.ascontiguousarray(end_ms, dtype=np.float64)
            solo = None if solo_ms is None else np.ascontiguousarray(solo_ms, dtype=np.float64)
            share_a = None if share is None else np.ascontiguousarray(share, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InterfpredError(f"trace columns batch_size/start_ms/end_ms/solo_ms must be numeric: {exc}") from None
        cols = {"id": ids, "device": device_a, "model": model_a, "batch_size": batch_f, "start_ms": start, "end_ms": end}
        if solo is not None:
            cols["solo_ms"] = solo
        if share_a is not None:
            cols["share"] = share_a
        for name, arr in cols.items():
            if arr.ndim != 1 or len(arr) != n:
                raise InterfpredError(f"trace column {name} has shape {arr.shape}, expected ({n},) like id")

        def where(i: int) -> tuple[str, int | None]:
            if _lines is not None:
                return f"id {ids[i].item()}", _lines[i]
            return f"row {i} (id {ids[i].item()})", None

        def fail(i: int, msg: str) -> None:
            label, line = where(i)
            if _path is not None:
                raise InputError(msg, path=_path, line=line)
            raise InterfpredError(f"{label}: {msg}")

        for name, arr in (("start_ms", start), ("end_ms", end)):
            bad = np.flatnonzero(~np.isfinite(arr))
            if bad.size:
                fail(int(bad[0]), f"{name} {float(arr[bad[0]])!r} is not a finite time")
        bad = np.flatnonzero(end < start)
        if bad.size:
            i = int(bad[0])
            fail(i, f"end_ms {float(end[i])!r} is before start_ms {float(start[i])!r}")
        bad_batch = bad_batch_size(batch_f)
        if bad_batch is not None:
            fail(*bad_batch)
        if solo is not None:
            bad = np.flatnonzero(~np.isfinite(solo) | (solo <= 0))
            if bad.size:
                fail(int(bad[0]), f"solo_ms {float(solo[bad[0]])!r} is not a positive finite latency")
        if share_a is not None:
            bad = np.flatnonzero(~np.isfinite(share_a) | (share_a <= 0) | (share_a > 100))
            if bad.size:
                fail(int(bad[0]), f"share {float(share_a[bad[0]])!r} is not an MPS active thread percentage in (0, 100]")
        for name, arr in (("device", device_a), ("model", model_a)):
            bad = np.flatnonzero(np.char.str_len(arr) == 0) if n else np.array([], dtype=int)
            if bad.size:
                fail(int(bad[0]), f"{name} is empty")
        if n:
            order = np.argsort(ids, kind="stable")
            dup = np.flatnonzero(ids[order][1:] == ids[order][:-1])
            if dup.size:
                first, second = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
                other = f"line {_lines[first]}" if _lines is not None else f"row {first}"
                fail(second, f"duplicate id {ids[second].item()!r} (first seen at {other})")
        self._cols = {**cols, "batch_size": batch_f.astype(np.int64)}
        # Where each row came from (a CSV reader passes them), for messages about a row later on.
        self._path = None if _path is None else os.fspath(_path)
        self._lines = None if _lines is None else (_lines if isinstance(_lines, range) else list(_lines))
        for arr in self._cols.values():
            arr.setflags(write=False)
        self._codes: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}

    # ------------------------------------------------------------------ columns
    @property
    def id(self) -> np.ndarray:
        """Execution ids (int64, or str)."""
        return self._cols["id"]

    @property
    def device(self) -> np.ndarray:
        """Device (GPU instance) name per execution."""
        return self._cols["device"]

    @property
    def model(self) -> np.ndarray:
        """Model name per execution."""
        return self._cols["model"]

    @property
    def batch_size(self) -> np.ndarray:
        """Batch size per execution (int64)."""
        return self._cols["batch_size"]

    @property
    def start_ms(self) -> np.ndarray:
        """Launch time per execution, ms."""
        return self._cols["start_ms"]

    @property
    def end_ms(self) -> np.ndarray:
        """Observed end time per execution, ms."""
        return self._cols["end_ms"]

    @property
    def solo_ms(self) -> np.ndarray | None:
        """Recorded solo latency per execution, or None when the trace has none."""
        return self._cols.get("solo_ms")

    @property
    def share(self) -> np.ndarray | None:
        """MPS active thread percentage per execution, or None when the trace has none (100 for all)."""
        return self._cols.get("share")

    @property
    def latency_ms(self) -> np.ndarray:
        """Observed latency, ``end_ms - start_ms``."""
        return self.end_ms - self.start_ms

    @property
    def devices(self) -> tuple[str, ...]:
        """The distinct devices, sorted."""
        return tuple(str(g) for g in np.unique(self.device))

    def __len__(self) -> int:
        return len(self._cols["id"])

    def __repr__(self) -> str:
        return f"Trace({len(self)} executions, devices={list(self.devices)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trace):
            return NotImplemented
        theirs = other.columns()
        if self._cols.keys() != theirs.keys():
            return False
        return all(np.array_equal(self._cols[k], theirs[k]) for k in self._cols)

    def codes(self, column: str) -> tuple[tuple[str, ...], np.ndarray]:
        """Factorise a name column (``"device"`` or ``"model"``): its distinct values, sorted, and an
        int64 code per row indexing them. Computed once per trace (a trace is immutable).

        Examples
        --------
        >>> t = Trace(id=[1, 2, 3], device=["b", "a", "b"], model=["m"] * 3, batch_size=[1] * 3,
        ...           start_ms=[0.0] * 3, end_ms=[1.0] * 3)
        >>> t.codes("device")
        (('a', 'b'), array([1, 0, 1]))
        """
        if column not in ("device", "model"):
            raise InterfpredError(f"codes() factorises 'device' or 'model', not {column!r}")
        if column not in self._codes:
            fast = _few_codes(self._cols[column])
            if fast is not None:
                fast[1].setflags(write=False)
                self._codes[column] = fast
                return fast
            seen: dict[str, int] = {}
            first = np.fromiter((seen.setdefault(x, len(seen)) for x in self._cols[column].tolist()),
                                dtype=np.int64, count=len(self))
            names = list(seen)
            order = sorted(range(len(names)), key=names.__getitem__)
            rank = np.empty(len(names), dtype=np.int64)
            rank[order] = np.arange(len(names))
            codes = rank[first] if len(names) else first
            codes.setflags(write=False)
            self._codes[column] = (tuple(names[i] for i in order), codes)
        return self._codes[column]

    def columns(self) -> dict[str, np.ndarray]:
        """All columns as a dict of read-only arrays."""
        return dict(self._cols)

    def where(self, i: int) -> str:
        """Where row ``i`` came from, for messages: ``"trace.csv line 7 (id 6)"`` or ``"row 5 (id 6)"``.

        Examples
        --------
        >>> Trace(id=[4], device=["g"], model=["m"], batch_size=[1], start_ms=[0.0], end_ms=[1.0]).where(0)
        'row 0 (id 4)'
        """
        label = f"id {self.id[i].item()!r}" if self.id.dtype.kind == "U" else f"id {self.id[i].item()}"
        if self._path is not None and self._lines is not None:
            return f"{self._path} line {self._lines[i]} ({label})"
        return f"row {i} ({label})"

    def take(self, index: np.ndarray | Sequence[int] | slice) -> Trace:
        """A new trace with the selected rows (an index array, boolean mask or slice).

        Examples
        --------
        >>> t = Trace(id=[1, 2, 3], device=["g"] * 3, model=["m"] * 3, batch_size=[1] * 3,
        ...           start_ms=[0.0, 1.0, 2.0], end_ms=[1.0, 2.0, 3.0])
        >>> t.take(t.start_ms >= 1.0).id
        array([2, 3])
        """
        cols: dict[str, Any] = {k: v[index] for k, v in self._cols.items()}
        return Trace(**cols)

    def sorted(self) -> Trace:
        """The same executions ordered by (start_ms, end_ms), stable."""
        return self.take(np.lexsort((self.end_ms, self.start_ms)))

    @staticmethod
    def concat(traces: Sequence[Trace]) -> Trace:
        """Rows of several traces, one after another (ids must stay unique)."""
        if not traces:
            raise InterfpredError("concat needs at least one trace")
        each = [t.columns() for t in traces]
        keys = set(each[0])
        for c in each[1:]:
            if set(c) != keys:
                raise InterfpredError("cannot concat traces with and without solo_ms (or share)")
        ids = [t.id for t in traces]
        if len({a.dtype.kind for a in ids}) > 1:
            ids = [a.astype(str) for a in ids]
        cols: dict[str, Any] = {k: np.concatenate([c[k] for c in each]) for k in keys if k != "id"}
        return Trace(id=np.concatenate(ids), **cols)

    # ------------------------------------------------------------------ CSV
    @classmethod
    def from_csv(cls, path: str | os.PathLike[str]) -> Trace:
        """Read a trace CSV with columns ``id,device,model,batch_size,start_ms,end_ms[,solo_ms][,share]``.

        Extra columns are ignored. Errors name the file and line.
        """
        text = read_text(path)
        reader = csv_rows(text, path=path)
        header = next((row for row in reader if row and any(c.strip() for c in row)), None)
        if header is None:
            raise InputError("empty file: expected a header " + ",".join(TRACE_COLUMNS), path=path)
        header = [h.strip() for h in header]
        dupes = sorted({h for h in header if header.count(h) > 1})
        if dupes:
            raise InputError(f"duplicate column(s) {', '.join(dupes)}", path=path, line=reader.line_num)
        missing = [c for c in TRACE_COLUMNS if c not in header]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)}; header is {','.join(header)}",
                             path=path, line=reader.line_num)
        wanted = [c for c in (*TRACE_COLUMNS, *TRACE_OPTIONAL_COLUMNS) if c in header]
        pos = {c: header.index(c) for c in wanted}
        raw: dict[str, list[str]] = {c: [] for c in wanted}
        lines: list[int] = []
        for row in reader:
            if not row or not any(c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise InputError(f"has {len(row)} fields, the header has {len(header)}",
                                 path=path, line=reader.line_num)
            lines.append(reader.line_num)
            for c in wanted:
                raw[c].append(row[pos[c]].strip())
        parsed: dict[str, np.ndarray] = {}
        for c in ("batch_size", "start_ms", "end_ms", *(c for c in TRACE_OPTIONAL_COLUMNS if c in raw)):
            out = np.empty(len(lines), dtype=np.float64)
            for i, cell in enumerate(raw[c]):
                try:
                    out[i] = float(cell)
                except ValueError:
                    raise InputError(f"{c} {cell!r} is not a number", path=path, line=lines[i]) from None
            parsed[c] = out
        try:
            ints = [int(x) for x in raw["id"]]
        except ValueError:
            ints = None
        if ints is not None and all(-MAX_INT64 - 1 <= v <= MAX_INT64 for v in ints):
            ids = np.array(ints, dtype=np.int64)
        else:  # not all integers, or too large for int64: keep them exactly, as strings
            ids = np.array(raw["id"], dtype=str)
        return cls(id=ids, device=np.array(raw["device"], dtype=str), model=np.array(raw["model"], dtype=str),
                   **parsed, _lines=lines, _path=path)

    def to_csv(self, path: str | os.PathLike[str], *, engine: str = "auto") -> None:
        """Write the trace as CSV, atomically; floats are written with full precision.

        ``engine``: ``"pyarrow"`` (its writer, several times faster), ``"python"`` (the standard
        library) or ``"auto"`` (pyarrow when installed). Both read back to the same trace.
        """
        if engine not in ("auto", "pyarrow", "python"):
            raise InterfpredError(f"engine {engine!r} must be 'auto', 'pyarrow' or 'python'")
        cols = [c for c in (*TRACE_COLUMNS, *TRACE_OPTIONAL_COLUMNS) if c in self._cols]
        if engine == "pyarrow" or (engine == "auto" and have_pyarrow()):
            pa = require_pyarrow("Trace.to_csv(engine='pyarrow')")
            table: dict = {}
            for c in cols:
                if c in ("device", "model"):
                    labels, codes = self.codes(c)
                    table[c] = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)),
                                                              pa.array(list(labels), pa.string()))
                else:
                    table[c] = pa.array(self._cols[c])
            write_csv(pa.table(table), path)
            return
        with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(cols)
            arrays = [self._cols[c] for c in cols]
            rendered = [a.tolist() if a.dtype.kind in "iuU" else [repr(float(x)) for x in a] for a in arrays]
            writer.writerows(zip(*rendered))
