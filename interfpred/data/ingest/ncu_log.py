"""ncu's own log lines in a CSV file, and what they say about the report being complete.

``ncu`` prints ``==PROF==``, ``==WARNING==`` and ``==ERROR==`` lines around its table. When it is
stopped before the profiled program ends (a time limit, a crash, a kill), the table holds only the
kernels profiled until then, which read as a batch that is too short. Such a report says so:
``==PROF== Trying to shutdown target application`` or an ``==ERROR==`` line, and no ``==PROF==
Disconnected from process`` line. :func:`scan_ncu_log` finds that evidence; a file without ncu's
log lines (or a binary report) cannot be checked and is taken as complete. Formats:
docs/profiling.md.

Examples
--------
>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "cut.csv"
>>> _ = path.write_text('==PROF== Connected to process 7\\n==PROF== Trying to shutdown target application\\n'
...                     '==ERROR== An error occurred while trying to profile.\\n"ID","Kernel Name"\\n')
>>> cut = scan_ncu_log(path)
>>> cut.line
2
>>> path.write_text('==PROF== Connected to process 7\\n==PROF== Disconnected from process 7\\n') > 0
True
>>> scan_ncu_log(path) is None
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from interfpred.constants import (
    NCU_LOG_DISCONNECTED,
    NCU_LOG_ERROR_PREFIX,
    NCU_LOG_PREFIX,
    NCU_LOG_QUOTE_CHARS,
    NCU_LOG_SHUTDOWN,
)
from interfpred.errors import InputError

__all__ = ["Truncation", "TruncatedReportError", "TruncatedReportWarning", "scan_ncu_log"]


@dataclass(frozen=True)
class Truncation:
    """Evidence that ncu stopped before the profiled program ended.

    ``line`` is the first line of evidence in the file, ``evidence`` the log lines quoted with
    their line numbers.

    Examples
    --------
    >>> Truncation(line=3, evidence="'==ERROR== An error occurred while trying to profile.' (line 3)").line
    3
    """

    line: int
    evidence: str


class TruncatedReportError(InputError):
    """A report ncu cut short, refused because it would read as a short batch."""


class TruncatedReportWarning(UserWarning):
    """A report ncu cut short was kept on request (its profile is marked ``truncated``)."""


def _quote(text: str) -> str:
    text = text.strip()
    if len(text) > NCU_LOG_QUOTE_CHARS:
        text = text[:NCU_LOG_QUOTE_CHARS] + "..."
    return repr(text)


def scan_ncu_log(path: str | os.PathLike[str]) -> Truncation | None:
    """The evidence that ncu stopped mid-run in the text file ``path``, or None.

    A report is cut short when one of its lines starts with ``==ERROR==`` or ``==PROF== Trying to
    shutdown`` and none starts with ``==PROF== Disconnected from process``. A file without such
    lines says nothing either way and gives None.
    """
    first_error: tuple[int, str] | None = None
    first_shutdown: tuple[int, str] | None = None
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        for lineno, text in enumerate(fh, start=1):
            s = text.lstrip("\ufeff \t")
            if not s.startswith(NCU_LOG_PREFIX):
                continue
            if s.startswith(NCU_LOG_DISCONNECTED):
                return None
            if first_error is None and s.startswith(NCU_LOG_ERROR_PREFIX):
                first_error = (lineno, s)
            elif first_shutdown is None and s.startswith(NCU_LOG_SHUTDOWN):
                first_shutdown = (lineno, s)
    found = sorted(x for x in (first_shutdown, first_error) if x is not None)
    if not found:
        return None
    quoted = ", ".join(f"{_quote(s)} (line {n})" for n, s in found)
    return Truncation(line=found[0][0],
                      evidence=f"{quoted}, and no {NCU_LOG_DISCONNECTED!r} line")
