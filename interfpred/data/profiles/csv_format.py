"""The tidy profile CSV: ``gpu,model,batch_size,solo_ms,sm,l2,dram[,share]`` plus any extra columns.

:func:`read_profile_columns` parses the text into the columns
:meth:`ProfileTable.from_columns <interfpred.ProfileTable.from_columns>` validates;
:func:`write_profile_csv` writes a table back. File layout: docs/data.md.
"""

from __future__ import annotations

import csv
import math
import os
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from interfpred._core.atomic import csv_rows
from interfpred.constants import DEFAULT_SHARE, PROFILE_COLUMNS, RESOURCES
from interfpred.data.profiles.interpolate import NUMERIC
from interfpred.errors import InputError

if TYPE_CHECKING:
    from interfpred.data.profiles.table import ProfileTable

__all__ = ["read_profile_columns", "write_profile_csv"]


def read_profile_columns(text: str, *, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The keyword arguments of ``ProfileTable.from_columns`` for a profile CSV's text.

    A counter column (``sm``, ``l2``, ``dram``) may be absent or empty in a row (NaN, never
    zero); an empty ``share`` is 100. Errors name ``path`` and the line.

    Examples
    --------
    >>> cols = read_profile_columns("gpu,model,batch_size,solo_ms,sm\\nl4,m,2,1.5,\\n")
    >>> cols["batch_size"], cols["sm"], cols["l2"], cols["lines"]
    ([2.0], [nan], None, [2])
    """
    reader = csv_rows(text, path=path)
    header = None
    for header in reader:
        if header and any(h.strip() for h in header):
            break
    if not header:
        raise InputError("empty file: expected a header " + ",".join(PROFILE_COLUMNS), path=path)
    header = [h.strip() for h in header]
    missing = [c for c in PROFILE_COLUMNS if c not in header and c not in RESOURCES]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}; header is {','.join(header)}",
                         path=path, line=reader.line_num)
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise InputError(f"duplicate column(s) {', '.join(dupes)}", path=path, line=reader.line_num)
    cols: dict[str, list[str]] = {h: [] for h in header}
    lines: list[int] = []
    for row in reader:
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(f"has {len(row)} fields, the header has {len(header)}",
                             path=path, line=reader.line_num)
        lines.append(reader.line_num)
        for h, cell in zip(header, row):
            cols[h].append(cell.strip())
    numeric: dict[str, Any] = {}
    for name in ("batch_size", *NUMERIC, "share"):
        if name not in cols:
            numeric[name] = None
            continue
        values = []
        for cell, line in zip(cols[name], lines):
            if cell == "" and name in (*RESOURCES, "share"):
                values.append(DEFAULT_SHARE if name == "share" else math.nan)
                continue
            try:
                value = float(cell)
            except ValueError:
                raise InputError(f"{name} {cell!r} is not a number", path=path, line=line) from None
            if name in RESOURCES and not math.isfinite(value):  # "not measured" is an empty cell, not "nan"
                raise InputError(f"{name} {cell!r} is not a finite number (leave the cell empty if not "
                                 "measured)", path=path, line=line)
            values.append(value)
        numeric[name] = values
    return {"gpu": cols["gpu"], "model": cols["model"], **numeric,
            "extra": {h: cols[h] for h in header if h not in (*PROFILE_COLUMNS, "share")},
            "path": path, "lines": lines}


def write_profile_csv(table: ProfileTable, fh: IO[str]) -> None:
    """Write ``table`` to the open text file ``fh`` (a ``share`` column only when a share is not 100)."""
    writer = csv.writer(fh, lineterminator="\n")
    extra_names = list(table.extra_columns)
    share = table.column("share")
    with_share = bool(np.any(share != DEFAULT_SHARE))
    gpu, model, batch = table.column("gpu"), table.column("model"), table.column("batch_size")
    num = [table.column(k) for k in NUMERIC]
    extra = [table.column(k) for k in extra_names]
    writer.writerow([*PROFILE_COLUMNS, *(["share"] if with_share else []), *extra_names])
    for i in range(len(table)):
        writer.writerow([
            gpu[i], model[i], int(batch[i]),
            *("" if math.isnan(v[i]) else repr(float(v[i])) for v in num),
            *([repr(float(share[i]))] if with_share else []),
            *(e[i] for e in extra),
        ])
