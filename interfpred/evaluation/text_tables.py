"""The one table formatter: plain-text tables for the terminal, Markdown tables for reports.

Every table interfpred prints or writes (the reproduction's sections, ``fit``'s selection
report, ``evaluate``, ``plan``) goes through :func:`text_table` or :func:`markdown_table`. A
column is a plain name or a :class:`Column`, which carries the unit shown in the header and the
scale a value is shown at, so figures kept as fractions inside are shown in percent at the
edge: :func:`percent` is the column of a relative error or a share of rows. Numbers are right
aligned, text left aligned; a missing value (None, NaN) is shown as :data:`MISSING`.

Examples
--------
>>> rows = [["RLS", 0.1234567, 0.5], ["SGD", 2, float("nan")]]
>>> print(text_table(["method", "MSE", percent("MAPE")], rows))
method     MSE  MAPE (%)
------  ------  --------
RLS     0.1235        50
SGD          2         -
>>> print(markdown_table(["method", "MSE", percent("MAPE")], rows))
| method | MSE | MAPE (%) |
|---|---:|---:|
| RLS | 0.1235 | 50 |
| SGD | 2 | - |
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MISSING", "Column", "format_cell", "markdown_table", "percent", "text_table"]

#: How a missing value (None or NaN) is shown in a table.
MISSING = "-"
#: Significant digits of a float cell unless the column says otherwise.
DEFAULT_DIGITS = 4


@dataclass(frozen=True)
class Column:
    """One column of a table: its name, the unit the header shows, how its values are shown.

    Attributes
    ----------
    name
        Header text before the unit.
    unit
        Shown after the name in parentheses (``"MAPE (%)"``); empty for none.
    scale
        Numbers are multiplied by it when shown (100 turns a fraction into percent); the data
        passed in stays as it is.
    spec
        A format spec for numbers (``".2f"``); empty: ``digits`` significant digits.
    digits
        Significant digits when ``spec`` is empty; None: the table's.

    Examples
    --------
    >>> Column("latency", unit="ms").header, percent("within 10 %", spec=".1f").show(0.8123, 4)
    ('latency (ms)', '81.2')
    """

    name: str
    unit: str = ""
    scale: float = 1.0
    spec: str = ""
    digits: int | None = None

    @property
    def header(self) -> str:
        """The header cell: the name, then the unit in parentheses."""
        return f"{self.name} ({self.unit})" if self.unit else self.name

    def show(self, value: object, digits: int = DEFAULT_DIGITS) -> str:
        """One cell of this column."""
        if _is_number(value) and self.scale != 1.0:
            value = float(value) * self.scale  # type: ignore[arg-type]
        if self.spec and _is_number(value) and not _missing(value):
            return format(value, self.spec)
        return format_cell(value, self.digits if self.digits is not None else digits)


def percent(name: str, *, spec: str = "", digits: int | None = None) -> Column:
    """The column of a relative error or a share of rows: fractions in, percent shown, ``(%)`` in the header.

    >>> percent("MAPE").show(0.0612), percent("MAPE", spec=".2f").show(0.0612)
    ('6.12', '6.12')
    """
    return Column(name, unit="%", scale=100.0, spec=spec, digits=digits)


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _missing(value: object) -> bool:
    return value is None or (_is_number(value) and math.isnan(float(value)))  # type: ignore[arg-type]


def format_cell(value: object, digits: int = DEFAULT_DIGITS) -> str:
    """Render one table cell: floats to ``digits`` significant digits, None and NaN as :data:`MISSING`,
    others with str().

    >>> format_cell(0.000123456), format_cell(12345.678), format_cell("x"), format_cell(None)
    ('0.0001235', '1.235e+04', 'x', '-')
    """
    if _missing(value):
        return MISSING
    if _is_number(value) and not isinstance(value, numbers.Integral):
        return f"{float(value):.{digits}g}"  # type: ignore[arg-type]
    return str(value)


def _columns(header: Sequence[str | Column]) -> list[Column]:
    return [h if isinstance(h, Column) else Column(str(h)) for h in header]


def _cells(header: Sequence[str | Column], rows: Sequence[Sequence[object]],
           digits: int) -> tuple[list[Column], list[list[str]], list[bool]]:
    cols = _columns(header)
    body = []
    for i, row in enumerate(rows):
        if len(row) != len(cols):
            raise ValueError(f"table row {i} has {len(row)} cells for {len(cols)} columns")
        body.append([c.show(v, digits) for c, v in zip(cols, row)])
    # a column is numeric (right aligned) when every value present is a number
    numeric = [any(_is_number(r[j]) for r in rows)
               and all(_is_number(r[j]) or _missing(r[j]) for r in rows) for j in range(len(cols))]
    return cols, body, numeric


def markdown_table(header: Sequence[str | Column], rows: Sequence[Sequence[object]],
                   digits: int = DEFAULT_DIGITS) -> str:
    """A GitHub-flavoured Markdown table, numeric columns right aligned."""
    cols, body, numeric = _cells(header, rows, digits)
    lines = ["| " + " | ".join(c.header for c in cols) + " |",
             "|" + "".join("---:|" if num else "---|" for num in numeric)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def text_table(header: Sequence[str | Column], rows: Sequence[Sequence[object]],
               digits: int = DEFAULT_DIGITS) -> str:
    """A plain-text table with aligned columns for the terminal, numeric columns right aligned."""
    cols, body, numeric = _cells(header, rows, digits)
    cells = [[c.header for c in cols]] + body
    widths = [max(len(r[j]) for r in cells) for j in range(len(cols))]

    def line(r: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric)).rstrip()

    return "\n".join([line(cells[0]), "  ".join("-" * w for w in widths), *(line(r) for r in body)])
