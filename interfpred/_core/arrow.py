"""pyarrow at the bottom of the I/O stack: availability, a clear error naming the extra, a fast CSV writer.

Imported by the readers and writers of every table; imports nothing from interfpred but the
atomic writer and the errors, so it may sit below all of them.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from interfpred._core.atomic import atomic_open
from interfpred.errors import InterfpredError

__all__ = ["EXTRA_HINT", "check_column_types", "have_pyarrow", "read_table_checked", "require_pyarrow", "write_csv"]

#: How to install what this module needs.
EXTRA_HINT = "pip install 'interfpred[parquet]'"


def have_pyarrow() -> bool:
    """Whether pyarrow can be imported (the ``parquet`` extra).

    Examples
    --------
    >>> isinstance(have_pyarrow(), bool)
    True
    """
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def require_pyarrow(what: str) -> Any:
    """The pyarrow module, or :class:`InterfpredError` saying ``what`` needs it and how to install it."""
    try:
        import pyarrow as pa
    except ImportError:
        raise InterfpredError(f"{what} needs pyarrow: {EXTRA_HINT}") from None
    return pa


def write_csv(table: Any, path: str | os.PathLike[str]) -> None:
    """Write a ``pyarrow.Table`` as CSV with pyarrow's writer, atomically.

    The header is plain (``a,b,c``); string cells are quoted only when some cell of the table
    needs it (a comma, quote or line break). Floats are written with the shortest text that
    reads back to the same double.
    """
    pa = require_pyarrow("writing CSV with pyarrow")
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    plain = True
    for col in table.columns:
        if pa.types.is_dictionary(col.type):
            col = col.chunk(0).dictionary if col.num_chunks == 1 else col.cast(pa.string())
        if pa.types.is_string(col.type) and len(col) and pc.any(pc.match_substring_regex(col, '[,"\r\n]')).as_py():
            plain = False
    opts = pcsv.WriteOptions(include_header=False, quoting_style="none" if plain else "needed")
    with atomic_open(path, "wb") as fh:
        fh.write((",".join(table.column_names) + "\n").encode("utf-8"))
        pcsv.write_csv(table, fh, opts)


def read_table_checked(path: str | os.PathLike[str], fmt: str, what: str, *,
                       columns: list[str] | None = None) -> Any:
    """Read a Parquet (``fmt="parquet"``) or Arrow/Feather file as a ``pyarrow.Table``, bounded and checked.

    The file must be a regular file; its row count is read from the metadata and checked against
    ``INPUT_MAX_ROWS`` *before* any column is decoded (a few MB of Parquet can hold billions of
    constant rows), and duplicate column names are refused.  Errors are one
    :class:`~interfpred.errors.InputError` naming the file.
    """
    from interfpred._core.atomic import check_regular_file
    from interfpred._core.limits import check_limit
    from interfpred.errors import InputError

    pa = require_pyarrow(f"reading {what} {os.fspath(path)}")
    check_regular_file(path, f"{what} ({fmt})")
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(path).metadata
            rows, names = meta.num_rows, list(meta.schema.to_arrow_schema().names)
        else:
            import pyarrow.ipc as ipc

            try:
                reader = ipc.open_file(path)
                rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
                names = list(reader.schema.names)
            except pa.ArrowInvalid:  # Feather version 1 or a stream: let feather read it
                from pyarrow import feather

                table = feather.read_table(path, columns=columns, memory_map=True)
                rows, names = table.num_rows, list(table.column_names)
        check_limit("INPUT_MAX_ROWS", int(rows), f"{what} with rows", path=path)
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise InputError(f"duplicate column(s) {', '.join(dupes)}", path=path)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path, columns=columns)
        from pyarrow import feather

        return feather.read_table(path, columns=columns)
    except (pa.ArrowInvalid, pa.ArrowKeyError, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError) as exc:
        raise InputError(f"cannot read it as {fmt}: {exc}", path=path) from None
    except OSError as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            raise
        raise InputError(f"cannot read it as {fmt}: {exc}", path=path) from None


def check_column_types(table: Any, *, path: str | os.PathLike[str] | None, strings: tuple[str, ...] = (),
                       numbers: tuple[str, ...] = (), nullable: tuple[str, ...] = (), flat: bool = False) -> None:
    """Refuse a column of the wrong kind or with nulls, naming the file and the column.

    ``strings`` must be text (string, or a dictionary of strings) without NUL bytes, ``numbers``
    integers or floats (booleans are not numbers); nulls are refused except in ``nullable``
    columns (where a null means "not given"; such a column may be null throughout).  Absent
    columns are skipped.  With ``flat``, every other column (kept as an extra text column) must
    hold scalars too: lists, structs and maps are refused.
    """
    from interfpred.errors import InputError

    pa = require_pyarrow("checking a table")
    t = pa.types
    if flat:
        for name in table.column_names:
            typ = table.column(name).type
            if t.is_nested(typ) or (t.is_dictionary(typ) and t.is_nested(typ.value_type)):
                raise InputError(f"column {name} has type {typ}; every column must hold scalars", path=path)
    for name in (*strings, *numbers):
        if name not in table.column_names:
            continue
        col = table.column(name)
        typ = col.type
        if name in nullable and (t.is_null(typ) or col.null_count == len(col)):
            continue  # not given in any row
        if t.is_null(typ) or (len(col) and col.null_count == len(col)):
            raise InputError(f"column {name} is null in every row", path=path)
        if col.null_count and name not in nullable:
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise InputError(f"column {name} is null in row {row + 1}; every row needs a value", path=path)
        if name in strings:
            inner = typ.value_type if t.is_dictionary(typ) else typ
            if not (t.is_string(inner) or t.is_large_string(inner)):
                raise InputError(f"column {name} has type {typ}, expected text", path=path)
            import pyarrow.compute as pc

            values = col.dictionary if hasattr(col, "dictionary") else col
            if t.is_dictionary(typ):
                values = pa.chunked_array([c.dictionary for c in col.chunks], inner)
            if len(values) and pc.any(pc.match_substring(values, "\x00")).as_py():
                raise InputError(f"column {name} holds a NUL byte", path=path)
        else:
            if not (t.is_integer(typ) or t.is_floating(typ)):
                raise InputError(f"column {name} has type {typ}, expected numbers", path=path)
