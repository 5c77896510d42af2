"""Building blocks of ``interfpred reproduce``: the run context, report sections, tables.

Each experiment is a function ``run_eN(ctx: ReproduceContext) -> Section``; the reproduce
driver runs them in order, prints each section's terminal text and writes ``report.md``.

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ReproduceContext", "Section", "format_cell", "markdown_table", "text_table"]


def _silent(message: str) -> None:
    """Default progress sink: say nothing."""


@dataclass
class ReproduceContext:
    """What every experiment receives.

    Attributes
    ----------
    out_dir
        Folder the experiment writes its figures into (it exists already).
    seed
        Seed of every random choice in the run.
    quick
        Smaller traces, for the README's first command and CI (<= 60 s in all).
    progress
        Called with a short message at the start of each long step.
    gpu
        Simulated GPU preset (``interfpred.sim.contention``), ``"v100"`` by default.
    executions
        Executions per simulated set; None means the size ``quick`` implies (tests set it small).
    truth
        Ground truth of the simulated scenario: ``"phases"`` (operator phases and hidden per-model
        factors, the default) or ``"fluid"`` (one demand vector per execution).
    zoo
        Model family under ``truth="phases"`` (``"orion"``, ``"synthetic"``); None: orion on a
        v100, synthetic elsewhere.
    cache
        Shared between the sections of one run (a simulated scenario is built once).
    """

    out_dir: Path
    seed: int = 0
    quick: bool = False
    progress: Callable[[str], None] = _silent
    gpu: str = "v100"
    executions: int | None = None
    truth: str = "phases"
    zoo: str | None = None
    cache: dict = field(default_factory=dict)


@dataclass
class Section:
    """One experiment's contribution to the report.

    Attributes
    ----------
    title
        Heading of the section in report.md.
    markdown
        Body in Markdown (tables, text); figures are referenced by file name relative to out_dir.
    terminal
        Plain text printed to the terminal (the tables).
    figures
        File names (relative to out_dir) the experiment wrote.
    data
        JSON-able numbers behind the tables, for results.json and tests.
    """

    title: str
    markdown: str
    terminal: str
    figures: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)


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
