"""Building blocks of ``interfpred reproduce``: the run context and report sections.

Each experiment is a function ``run_eN(ctx: ReproduceContext) -> Section``; the reproduce
driver runs them in order, prints each section's terminal text and writes ``report.md``. The
table helpers live in :mod:`interfpred.evaluation.text_tables`.

An experiment whose work falls into independent pieces is a :class:`SplitSection`: its
``parts(ctx)`` lists them (:class:`Part`, each a module-level function with picklable
arguments) and ``assemble(ctx, results)`` builds the section from their results, in order. Run
with several worker processes, the driver spreads every section's parts over them; run alone,
the section is called like any other. Either way the parts compute the same numbers.

Examples
--------
>>> Section("E0 example", "terminal text", "markdown text").title
'E0 example'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interfpred.constants import SIM_PHASED_DEFAULT_GPU

__all__ = ["Part", "ReproduceContext", "Section", "SplitSection"]


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


@dataclass(frozen=True)
class Part:
    """One independent piece of a section's work: ``fn(ctx, *args)``.

    ``fn`` is a module-level function and ``args`` are picklable, so the piece can run in a
    worker process (with that worker's own :class:`ReproduceContext`); ``cost`` is its rough
    share of the run's time, for scheduling the longest pieces first (it changes no result).
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    cost: float = 1.0

    def run(self, ctx: ReproduceContext) -> Any:
        return self.fn(ctx, *self.args)


@dataclass(frozen=True)
class SplitSection:
    """A section computed as independent :class:`Part` s, then assembled (see the module docstring).

    Calling it runs the parts in order in this process, then ``assemble``: what the driver does
    when it runs alone.

    Examples
    --------
    >>> def _square(ctx, k):
    ...     return k * k
    >>> def _parts(ctx):
    ...     return [Part(_square, (k,)) for k in range(3)]
    >>> def _assemble(ctx, results):
    ...     return Section("E0 squares", str(results), str(results))
    >>> e0 = SplitSection("run_e0", _parts, _assemble)
    >>> e0(ReproduceContext(out_dir=Path("."))).terminal, e0.__name__
    ('[0, 1, 4]', 'run_e0')
    """

    name: str
    parts: Callable[[ReproduceContext], Sequence[Part]]
    assemble: Callable[[ReproduceContext, list[Any]], Section]

    @property
    def __name__(self) -> str:  # named like the section functions beside it
        return self.name

    def __call__(self, ctx: ReproduceContext) -> Section:
        return self.assemble(ctx, [p.run(ctx) for p in self.parts(ctx)])
