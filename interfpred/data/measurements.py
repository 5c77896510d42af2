"""Measurements: steady-state co-location runs, one row per member.

A *measurement run* is how interference is usually measured: 1..N models are launched together
on one GPU and kept running, each timed alone (``solo_ms``) and together (``observed_ms``), so
every member co-ran with every other member for its whole duration. A run of one member is a
solo measurement. Columns: ``run, gpu, model, batch_size, share, solo_ms, observed_ms`` and an
optional ``member`` (labels for several copies of one model in a run); ``share`` is the MPS
active thread percentage in (0, 100], 100 when absent. Instead of ``solo_ms, observed_ms`` a
file may give rates, ``solo_throughput, observed_throughput`` (units per second, such as steps/s
or requests/s), stored as milliseconds per unit (``1000 / rate``): the slowdown is the same.
Any further columns are kept as strings.

Examples
--------
>>> m = Measurements.from_columns(run=["r1", "r1", "r2"], gpu=["v100"] * 3, model=["a", "b", "a"],
...     batch_size=[8, 4, 8], solo_ms=[10.0, 5.0, 10.0], observed_ms=[15.0, 6.0, 10.0])
>>> len(m), m.n_runs, m.slowdown.tolist(), m.share.tolist()
(3, 2, [1.5, 1.2, 1.0], [100.0, 100.0, 100.0])
>>> m.co_runners(0)
[1]
>>> m.take([2]).run.tolist()
['r2']
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from interfpred._core.arrow import check_column_types, read_table_checked
from interfpred._core.atomic import atomic_open, csv_rows, read_text
from interfpred.constants import (
    DEFAULT_SHARE,
    LATENCY_MIN_MS,
    MAX_BATCH_SIZE,
    MEASUREMENT_COLUMNS,
    MEASUREMENT_OPTIONAL_COLUMNS,
    MEASUREMENT_THROUGHPUT_COLUMNS,
    MS_PER_S,
)
from interfpred.data.sharing import sharing_key_problem
from interfpred.errors import InputError, InterfpredError

__all__ = ["Measurements", "check_measurement_columns"]


def _fail(message: str, path: Any, lines: Sequence[int] | None, i: int) -> None:
    line = lines[i] if lines is not None else i + 1
    raise InputError(message, path=path, line=line)


class Measurements:
    """Columnar steady-state co-location runs with validation (see the module docstring).

    Build it with :meth:`from_columns`, :meth:`from_csv`, :meth:`from_frame`, :meth:`from_parquet`
    or :meth:`read`. Rows keep their given order; a run's members need not be adjacent.

    Raises
    ------
    InputError
        A bad row, located by file and line (or row number, 1-based, for in-memory columns):
        a missing or non-numeric value, ``batch_size`` not a positive integer, ``share`` outside
        (0, 100], a latency that is not finite or below ``LATENCY_MIN_MS`` (1 ns), a run spanning two GPUs, or a
        duplicate member (the same model, batch size and share twice in one run without
        distinct ``member`` labels, or the same ``member`` label twice).
    """

    def __init__(self, cols: dict[str, np.ndarray], extra: dict[str, np.ndarray]) -> None:
        # Internal: use the from_* builders, which validate.
        self._cols = cols
        self._extra = extra
        for arr in (*cols.values(), *extra.values()):
            arr.setflags(write=False)
        names, inverse = np.unique(cols["run"], return_inverse=True)
        self._run_names = tuple(str(r) for r in names)
        self._run_code = inverse.reshape(-1).astype(np.int64)
        order = np.argsort(self._run_code, kind="stable")
        self._run_order = order
        self._run_ptr = np.searchsorted(self._run_code[order], np.arange(len(names) + 1))

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_columns(cls, *, run: Sequence[Any], gpu: Sequence[str], model: Sequence[str],
                     batch_size: Sequence[Any], solo_ms: Sequence[Any] | None = None,
                     observed_ms: Sequence[Any] | None = None, share: Sequence[Any] | None = None,
                     member: Sequence[Any] | None = None, solo_throughput: Sequence[Any] | None = None,
                     observed_throughput: Sequence[Any] | None = None,
                     extra: Mapping[str, Sequence[Any]] | None = None,
                     path: str | os.PathLike[str] | None = None,
                     lines: Sequence[int] | None = None) -> Measurements:
        """Build from equal-length columns, validating every row.

        Give ``solo_ms`` and ``observed_ms``, or ``solo_throughput`` and ``observed_throughput``.
        ``path`` and ``lines`` only serve error messages (the file readers pass them).

        Examples
        --------
        >>> m = Measurements.from_columns(run=[1, 1], gpu=["g"] * 2, model=["a", "b"], batch_size=[1, 1],
        ...     solo_throughput=[50.0, 20.0], observed_throughput=[25.0, 20.0])
        >>> m.solo_ms.tolist(), m.slowdown.tolist()
        ([20.0, 50.0], [2.0, 1.0])
        >>> Measurements.from_columns(run=[1], gpu=["g"], model=["a"], batch_size=[1], share=[120],
        ...     solo_ms=[1.0], observed_ms=[1.0])
        Traceback (most recent call last):
        ...
        interfpred.errors.InputError: row 1: share 120.0 must be an MPS active thread percentage in (0, 100]
        """
        lat_form = solo_ms is not None or observed_ms is not None
        rate_form = solo_throughput is not None or observed_throughput is not None
        if lat_form == rate_form or (lat_form and (solo_ms is None or observed_ms is None)) or (
                rate_form and (solo_throughput is None or observed_throughput is None)):
            raise InputError("give solo_ms and observed_ms, or solo_throughput and observed_throughput "
                             "(one form, both columns)", path=path)
        n = len(run)
        raw: dict[str, Any] = {"run": run, "gpu": gpu, "model": model, "batch_size": batch_size,
                               "share": [DEFAULT_SHARE] * n if share is None else share}
        if lat_form:
            raw.update(solo_ms=solo_ms, observed_ms=observed_ms)
        else:
            raw.update(solo_throughput=solo_throughput, observed_throughput=observed_throughput)
        if member is not None:
            raw["member"] = member
        for name, col in [*raw.items(), *(extra or {}).items()]:
            if len(col) != n:
                raise InputError(f"column {name} has {len(col)} rows, run has {n}", path=path)
        cols: dict[str, np.ndarray] = {}
        for name in ("run", "gpu", "model", "member"):
            if name in raw:
                texts = [str(v).strip() if v is not None else "" for v in raw[name]]
                for i, text in enumerate(texts):  # numpy would drop a trailing NUL without a word
                    if "\x00" in text:
                        _fail(f"{name} {text!r} holds a NUL byte", path, lines, i)
                arr = np.array(texts, dtype=str)
                if n:
                    bad = np.flatnonzero(np.char.str_len(arr) == 0)
                    if bad.size:
                        _fail(f"{name} is empty", path, lines, int(bad[0]))
                cols[name] = arr.astype(str) if n else np.empty(0, dtype=str)
        nums: dict[str, np.ndarray] = {}
        for name in ("batch_size", "share", "solo_ms", "observed_ms", *MEASUREMENT_THROUGHPUT_COLUMNS):
            if name not in raw:
                continue
            out = np.empty(n, dtype=np.float64)
            for i, v in enumerate(raw[name]):
                try:
                    out[i] = float(v)
                except (TypeError, ValueError):
                    _fail(f"{name} {v!r} is not a number", path, lines, i)
            nums[name] = out
        checks = [
            ("batch_size", lambda v: ~np.isfinite(v) | (v <= 0) | (v != np.round(v)) | (v > MAX_BATCH_SIZE),
             f"must be a positive integer at most MAX_BATCH_SIZE={MAX_BATCH_SIZE}"),
            ("share", lambda v: ~np.isfinite(v) | (v <= 0) | (v > 100),
             "must be an MPS active thread percentage in (0, 100]"),
        ]
        for name in ("solo_ms", "observed_ms", *MEASUREMENT_THROUGHPUT_COLUMNS):
            if name.endswith("_ms"):
                checks.append((name, lambda v: ~np.isfinite(v) | ~(v >= LATENCY_MIN_MS),
                               f"must be a positive finite latency in ms, at least LATENCY_MIN_MS={LATENCY_MIN_MS:g}"))
            else:
                checks.append((name, lambda v: ~np.isfinite(v) | (v <= 0), "must be a positive finite rate "
                                                                            "(units per second)"))
        first = None
        for name, test, expected in checks:
            if name in nums:
                bad = np.flatnonzero(test(nums[name]))
                if bad.size and (first is None or bad[0] < first[0]):
                    first = (int(bad[0]), f"{name} {float(nums[name][bad[0]])!r} {expected}")
        if first is not None:
            _fail(first[1], path, lines, first[0])
        if rate_form:
            for name, rate in (("solo_ms", "solo_throughput"), ("observed_ms", "observed_throughput")):
                given = nums.pop(rate)
                with np.errstate(over="ignore", divide="ignore"):
                    nums[name] = MS_PER_S / given
                bad = np.flatnonzero(~np.isfinite(nums[name]) | ~(nums[name] >= LATENCY_MIN_MS))
                if bad.size:
                    _fail(f"{rate} {float(given[bad[0]])!r} gives latency {float(nums[name][bad[0]])!r} ms, not a "
                          f"finite number of at least LATENCY_MIN_MS={LATENCY_MIN_MS:g}", path, lines, int(bad[0]))
        with np.errstate(over="ignore", divide="ignore", under="ignore"):
            slowdown = nums["observed_ms"] / nums["solo_ms"]
        bad = np.flatnonzero(~np.isfinite(slowdown) | (slowdown <= 0))
        if bad.size:
            _fail(f"observed_ms / solo_ms = {float(slowdown[bad[0]])!r} is not a positive finite slowdown",
                  path, lines, int(bad[0]))
        cols.update(nums)
        cols["batch_size"] = nums["batch_size"].astype(np.int64)
        _check_runs(cols, path, lines)
        extra_a = {}
        for k, v in (extra or {}).items():
            if k in (*MEASUREMENT_COLUMNS, *MEASUREMENT_OPTIONAL_COLUMNS, *MEASUREMENT_THROUGHPUT_COLUMNS):
                raise InputError(f"extra column {k!r} clashes with a measurement column", path=path)
            extra_a[str(k)] = np.array(["" if x is None else str(x) for x in v], dtype=str) if n else np.empty(0, str)
        problem = sharing_key_problem(extra_a)
        if problem is not None:
            _fail(problem[1], path, lines, problem[0])
        return cls(cols, extra_a)

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str]) -> Measurements:
        """Read a measurements CSV; errors name the file and line.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.csv"
        >>> _ = p.write_text("run,gpu,model,batch_size,solo_ms,observed_ms\\n1,g,a,1,2.0,3.0\\n1,g,b,1,2.0,-1\\n")
        >>> Measurements.from_csv(p)
        Traceback (most recent call last):
        ...
        interfpred.errors.InputError: ...m.csv line 3: observed_ms -1.0 must be a positive finite latency in ms, at least LATENCY_MIN_MS=1e-06
        """
        reader = csv_rows(read_text(path), path=path)
        header = next((row for row in reader if row and any(c.strip() for c in row)), None)
        if header is None:
            raise InputError("empty file: expected a header " + ",".join(MEASUREMENT_COLUMNS), path=path)
        header = [h.strip() for h in header]
        dupes = sorted({h for h in header if header.count(h) > 1})
        if dupes:
            raise InputError(f"duplicate column(s) {', '.join(dupes)}", path=path, line=reader.line_num)
        rate = all(c in header for c in MEASUREMENT_THROUGHPUT_COLUMNS) and "solo_ms" not in header
        need = ["run", "gpu", "model", "batch_size",
                *(MEASUREMENT_THROUGHPUT_COLUMNS if rate else ("solo_ms", "observed_ms"))]
        missing = [c for c in need if c not in header]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)}; header is {','.join(header)} "
                             f"(expected {','.join(MEASUREMENT_COLUMNS)}, share and member optional)",
                             path=path, line=reader.line_num)
        cols: dict[str, list[str]] = {h: [] for h in header}
        lines: list[int] = []
        for row in reader:
            if not row or not any(c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise InputError(f"has {len(row)} fields, the header has {len(header)}", path=path,
                                 line=reader.line_num)
            lines.append(reader.line_num)
            for h, cell in zip(header, row):
                cols[h].append(cell.strip())
        known = set(need) | {"share", "member"}
        share: list[Any] | None = None
        if "share" in cols:
            share = [c if c != "" else DEFAULT_SHARE for c in cols["share"]]
        kw = {k: cols[k] for k in need}
        return cls.from_columns(**kw, share=share, member=cols.get("member"),
                                extra={h: cols[h] for h in header if h not in known}, path=path, lines=lines)

    @classmethod
    def from_frame(cls, frame: Any, *, path: str | os.PathLike[str] | None = None) -> Measurements:
        """Build from a pandas DataFrame with the CSV's columns (errors name the 1-based row).

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"run": [1, 1], "gpu": "g", "model": ["a", "b"], "batch_size": 1,
        ...                    "solo_ms": [1.0, 2.0], "observed_ms": [1.5, 2.0]})
        >>> Measurements.from_frame(df).to_frame()["share"].tolist()
        [100.0, 100.0]
        """
        cols = {str(c): frame[c].tolist() for c in frame.columns}
        known = set(MEASUREMENT_COLUMNS) | set(MEASUREMENT_OPTIONAL_COLUMNS) | set(MEASUREMENT_THROUGHPUT_COLUMNS)
        for c in ("run", "gpu", "model", "batch_size"):
            if c not in cols:
                raise InputError(f"missing column {c}; columns are {', '.join(cols)}", path=path)
        return cls.from_columns(**{k: v for k, v in cols.items() if k in known},
                                extra={k: v for k, v in cols.items() if k not in known}, path=path)

    @classmethod
    def from_parquet(cls, path: str | os.PathLike[str]) -> Measurements:
        """Read a Parquet file with the CSV's columns (needs pyarrow); errors name the row."""
        table = read_table_checked(path, "parquet", "measurements")
        check_measurement_columns(table, path)
        return cls.from_frame(table.to_pandas(), path=path)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Measurements:
        """Read a ``.parquet``/``.pq`` file with :meth:`from_parquet`, anything else as CSV."""
        if os.fspath(path).lower().endswith((".parquet", ".pq")):
            return cls.from_parquet(path)
        return cls.from_csv(path)

    # ------------------------------------------------------------------ output
    def to_frame(self) -> Any:
        """The table as a pandas DataFrame (``member`` and extra columns included when present)."""
        import pandas as pd

        return pd.DataFrame(self.columns())

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the table as CSV (full float precision), atomically."""
        cols = self.columns()
        with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(list(cols))
            w.writerows(zip(*[a.tolist() if a.dtype.kind in "iuU" else [repr(float(x)) for x in a]
                              for a in cols.values()]))

    def to_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write the table as Parquet (needs pyarrow), atomically."""
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:  # pragma: no cover
            raise InterfpredError("writing Parquet needs pyarrow: pip install 'interfpred[parquet]'") from None
        table = pa.table(self.columns())
        with atomic_open(path, "wb") as fh:
            pq.write_table(table, fh)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write Parquet for a ``.parquet``/``.pq`` path, CSV otherwise."""
        if os.fspath(path).lower().endswith((".parquet", ".pq")):
            self.to_parquet(path)
        else:
            self.to_csv(path)

    # ------------------------------------------------------------------ access
    def columns(self) -> dict[str, np.ndarray]:
        """All columns in file order (``member`` and extras only when present)."""
        order = [*MEASUREMENT_COLUMNS, *(c for c in MEASUREMENT_OPTIONAL_COLUMNS if c in self._cols)]
        return {**{c: self._cols[c] for c in order}, **self._extra}

    def __len__(self) -> int:
        return len(self._cols["run"])

    def __repr__(self) -> str:
        return f"Measurements({len(self)} rows, {self.n_runs} runs, models={list(self.models)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Measurements):
            return NotImplemented
        a, b = self.columns(), other.columns()
        return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)

    run = property(lambda self: self._cols["run"], doc="Run label per row (str).")
    gpu = property(lambda self: self._cols["gpu"], doc="GPU per row.")
    model = property(lambda self: self._cols["model"], doc="Model per row.")
    batch_size = property(lambda self: self._cols["batch_size"], doc="Batch size per row (int64).")
    share = property(lambda self: self._cols["share"], doc="MPS active thread percentage per row, (0, 100].")
    solo_ms = property(lambda self: self._cols["solo_ms"], doc="Latency measured alone, ms.")
    observed_ms = property(lambda self: self._cols["observed_ms"], doc="Latency measured in the run, ms.")
    member = property(lambda self: self._cols.get("member"), doc="Member labels, or None.")

    @property
    def slowdown(self) -> np.ndarray:
        """Observed / solo latency per row."""
        return self.observed_ms / self.solo_ms

    @property
    def n_runs(self) -> int:
        """Number of distinct runs."""
        return len(self._run_names)

    @property
    def run_names(self) -> tuple[str, ...]:
        """Distinct run labels, sorted."""
        return self._run_names

    @property
    def run_code(self) -> np.ndarray:
        """Per row, the index of its run in :attr:`run_names`."""
        return self._run_code

    @property
    def models(self) -> tuple[str, ...]:
        """Distinct models, sorted."""
        return tuple(str(m) for m in np.unique(self.model))

    @property
    def extra_columns(self) -> tuple[str, ...]:
        """Columns kept beyond the measurement columns."""
        return tuple(self._extra)

    def run_members(self, run_index: int) -> np.ndarray:
        """Row indices of the members of run ``run_index`` (into :attr:`run_names`), in row order."""
        return self._run_order[self._run_ptr[run_index]:self._run_ptr[run_index + 1]]

    def co_runners(self, i: int) -> list[int]:
        """Row indices of the other members of row ``i``'s run."""
        return [int(j) for j in self.run_members(int(self._run_code[i])) if j != i]

    def run_slices(self) -> tuple[np.ndarray, np.ndarray]:
        """``(order, ptr)``: rows sorted by run, and offsets of each run in that order."""
        return self._run_order, self._run_ptr

    def take(self, rows: Any) -> Measurements:
        """The selected rows (index array or boolean mask), as a new table.

        Selecting part of a run keeps only those members (their co-runner rows are gone), so
        split by run (:meth:`runs_mask`) when features must stay exact.
        """
        idx = np.arange(len(self))[np.asarray(rows)]
        return Measurements({k: v[idx] for k, v in self._cols.items()}, {k: v[idx] for k, v in self._extra.items()})

    def runs_mask(self, runs: Any) -> np.ndarray:
        """Boolean row mask of the runs named (labels) in ``runs``.

        Examples
        --------
        >>> m = Measurements.from_columns(run=["a", "a", "b"], gpu=["g"] * 3, model=["x", "y", "x"],
        ...     batch_size=[1, 1, 1], solo_ms=[1.0] * 3, observed_ms=[2.0] * 3)
        >>> m.runs_mask(["b"]).tolist(), m.take(m.runs_mask(["a"])).n_runs
        ([False, False, True], 1)
        """
        return np.isin(self.run, np.asarray([str(r) for r in runs], dtype=str))

    @staticmethod
    def concat(tables: Sequence[Measurements]) -> Measurements:
        """Rows of several tables one after another; equal run labels are one run.

        Examples
        --------
        >>> a = Measurements.from_columns(run=["r"], gpu=["g"], model=["x"], batch_size=[1], solo_ms=[1.0],
        ...     observed_ms=[1.5])
        >>> b = Measurements.from_columns(run=["r"], gpu=["g"], model=["y"], batch_size=[1], solo_ms=[1.0],
        ...     observed_ms=[1.2])
        >>> both = Measurements.concat([a, b])
        >>> both.n_runs, both.co_runners(0)
        (1, [1])
        """
        if not tables:
            raise InterfpredError("concat needs at least one table")
        parts = [t.columns() for t in tables]
        keys = [set(c) - set(t.extra_columns) for c, t in zip(parts, tables)]
        if any(k != keys[0] for k in keys):
            raise InterfpredError("cannot concat tables with and without a member column")
        extras = list(dict.fromkeys(k for t in tables for k in t.extra_columns))
        cols = {k: np.concatenate([c[k] for c in parts]) for k in keys[0]}
        extra = {k: np.concatenate([c.get(k, np.full(len(t), "", dtype=str)) for c, t in zip(parts, tables)])
                 for k in extras}
        _check_runs(cols, None, None)
        return Measurements(cols, extra)


def check_measurement_columns(table: Any, path: str | os.PathLike[str] | None) -> None:
    """Refuse a ``pyarrow.Table`` of measurements whose columns have the wrong kind or hold nulls.

    ``run`` may be text or integers; ``gpu``, ``model`` and ``member`` must be text; the numeric
    columns numbers; only ``share`` and ``member`` may be null (not given).
    """
    import pyarrow as pa

    run_text = "run" in table.column_names and not pa.types.is_integer(table.column("run").type)
    check_column_types(table, path=path, strings=("gpu", "model", "member", *(("run",) if run_text else ())),
                       numbers=("batch_size", "solo_ms", "observed_ms", "share", *MEASUREMENT_THROUGHPUT_COLUMNS,
                                *(() if run_text else ("run",))),
                       nullable=("share", "member"), flat=True)


def _check_runs(cols: dict[str, np.ndarray], path: Any, lines: Sequence[int] | None) -> None:
    """Refuse a run spanning two GPUs and duplicate member rows (located at the later row)."""
    first_gpu: dict[str, tuple[str, int]] = {}
    seen: dict[tuple, int] = {}
    member = None if cols.get("member") is None else cols["member"].tolist()
    model = cols["model"].tolist()
    where = (lambda i: f"line {lines[i]}") if lines is not None else (lambda i: f"row {i + 1}")
    for i, (r, g) in enumerate(zip(cols["run"].tolist(), cols["gpu"].tolist())):
        g0 = first_gpu.setdefault(r, (g, i))
        if g0[0] != g:
            _fail(f"run {r!r} spans two GPUs: {g!r} here, {g0[0]!r} at {where(g0[1])}", path, lines, i)
        if member is not None:
            key: tuple = (r, member[i])
            what = f"member {member[i]!r}"
        else:
            key = (r, model[i], int(cols["batch_size"][i]), float(cols["share"][i]))
            what = f"model {key[1]!r} at batch_size {key[2]} and share {key[3]:g}"
        if key in seen:
            hint = "" if member is not None else " (label copies of one model with a member column)"
            _fail(f"duplicate member: run {r!r} already has {what} at {where(seen[key])}{hint}", path, lines, i)
        seen[key] = i
