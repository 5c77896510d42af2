"""Plain-text and Markdown tables of figures, for the terminal and for reports.

Examples
--------
>>> print(markdown_table(["method", "MSE"], [["RLS", 0.1234567], ["SGD", 2]]))
| method | MSE |
|---|---|
| RLS | 0.1235 |
| SGD | 2 |
>>> print(text_table(["method", "MSE"], [["RLS", 0.1234567], ["SGD", 2]]))
method  MSE
------  ------
RLS     0.1235
SGD     2
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["format_cell", "markdown_table", "text_table"]


def format_cell(value: object, digits: int = 4) -> str:
    """Render one table cell: floats to ``digits`` significant digits, others with str().

    >>> format_cell(0.000123456), format_cell(12345.678), format_cell("x")
    ('0.0001235', '1.235e+04', 'x')
    """
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]], digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(format_cell(c, digits) for c in row) + " |")
    return "\n".join(lines)


def text_table(header: Sequence[str], rows: Sequence[Sequence[object]], digits: int = 4) -> str:
    """A plain-text table with aligned columns, for the terminal."""
    cells = [list(header)] + [[format_cell(c, digits) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    out = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells[1:]]
    return "\n".join(out)
