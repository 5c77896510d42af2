"""The library's own error types.

Every error interfpred raises on bad input is an :class:`InterfpredError`, which is a
:class:`ValueError`, so callers that already catch ``ValueError`` keep working.  Errors
about a file carry its path and, where known, the line number, and render them first:

>>> raise InputError("end_ms 3.2 is before start_ms 4.0", path="trace.csv", line=17)
Traceback (most recent call last):
...
interfpred.errors.InputError: trace.csv line 17: end_ms 3.2 is before start_ms 4.0
"""

from __future__ import annotations

import os

__all__ = ["InterfpredError", "InputError", "FrozenPredictorError"]


class InterfpredError(ValueError):
    """Base class of every error interfpred raises on bad input or bad state."""


class FrozenPredictorError(InterfpredError):
    """``update`` called on a predictor that cannot learn online (fitted offline, then frozen).

    Raised instead of silently keeping the old predictions: refit with ``fit`` on all the data,
    or use an online predictor (``RLS``, ``OnlineSGD``).
    """


#: Characters that break a line (``str.splitlines``), escaped in an InputError so it stays one line.
_LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


class InputError(InterfpredError):
    """Bad input read from a file (or a row of a table), located by path and line.

    Parameters
    ----------
    message
        What was wrong: the offending value and what was expected.
    path
        The file, if the input came from one.
    line
        1-based line number in that file (or row number for in-memory tables).
    """

    def __init__(
        self, message: str, *, path: str | os.PathLike[str] | None = None, line: int | None = None
    ) -> None:
        message = message.translate(_LINE_BREAKS)  # text quoted from a file may hold line breaks
        self.message = message
        self.path = None if path is None else os.fspath(path)
        self.line = line
        where = ""
        if self.path is not None and line is not None:
            where = f"{self.path} line {line}: "
        elif self.path is not None:
            where = f"{self.path}: "
        elif line is not None:
            where = f"row {line}: "
        super().__init__(where + message)
