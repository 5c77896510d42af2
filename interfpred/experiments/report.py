"""Building blocks of ``interfpred reproduce``: the run context and report sections.

Each experiment is a function ``run_eN(ctx: ReproduceContext) -> Section``; the reproduce
driver runs them in order, prints each section's terminal text and writes ``report.md``. The
table helpers live in :mod:`interfpred.evaluation.text_tables`.

Examples
--------
>>> Section("E0 example", "terminal text", "markdown text").title
'E0 example'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from interfpred.constants import SIM_PHASED_DEFAULT_GPU

__all__ = ["ReproduceContext", "Section"]


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
    gpu: str = SIM_PHASED_DEFAULT_GPU
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
