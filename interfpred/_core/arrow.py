"""pyarrow at the bottom of the I/O stack: availability, a clear error naming the extra, a fast CSV writer.

Imported by the readers and writers of every table; imports nothing from interfpred but the
atomic writer and the errors, so it may sit below all of them.
"""

from __future__ import annotations

import os
from typing import Any

from interfpred._core.atomic import atomic_open
from interfpred.errors import InterfpredError

__all__ = ["EXTRA_HINT", "have_pyarrow", "require_pyarrow", "write_csv"]

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
