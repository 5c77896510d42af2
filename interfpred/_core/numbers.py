"""One strict reader of integers and numbers given as text: files' cells, options, dataset suffixes.

Python's own readers accept more than a person means: ``int("8_29")`` and ``float("8_29")`` are
829, ``int("８２９")`` (full-width digits) and ``int("٨٢٩")`` (Arabic-Indic) are 829 too,
``"²".isdigit()`` is True while ``int("²")`` fails, and ``int()`` of a literal over 4,300 digits
raises a ``ValueError`` about a limit the user never set. Every integer or number a user gives
as text is read here instead: ASCII digits only (an optional sign, a decimal point and an
exponent for numbers), at most :data:`~interfpred.constants.NUMBER_MAX_CHARS` characters, no
``_``, no other script, no ``nan`` or ``inf``; the value is then checked against its bounds. A
refusal is one :class:`~interfpred.errors.InputError` naming what was read, its text and, for a
file, the path and line.

Examples
--------
>>> parse_int("32", "batch_size", lo=1)
32
>>> parse_int("²", "partition", lo=1, path="d.csv", line=2)
Traceback (most recent call last):
...
interfpred.errors.InputError: d.csv line 2: partition '²' is not an integer (ASCII digits 0-9, at most 40 characters)
>>> parse_float("1e3", "rate_rps", lo=0.0, lo_open=True)
1000.0
>>> parse_float("8_29", "rate_rps")
Traceback (most recent call last):
...
interfpred.errors.InputError: rate_rps '8_29' is not a number (ASCII digits, an optional sign, point and exponent, at most 40 characters)
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable

from interfpred.constants import NUMBER_MAX_CHARS
from interfpred.errors import InputError

__all__ = ["check_range", "float_option", "int_option", "is_int_text", "parse_float", "parse_int"]

_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
#: The largest magnitude an integer read here may have (an int64 column holds it).
_INT_ABS_MAX = 2**63 - 1


def is_int_text(text: str) -> bool:
    """True when ``text`` (surrounding blanks ignored) is what :func:`parse_int` reads: ASCII digits, a sign.

    Examples
    --------
    >>> is_int_text("12"), is_int_text("²"), is_int_text("1_2"), is_int_text("９")
    (True, False, False, False)
    """
    t = text.strip()
    return len(t) <= NUMBER_MAX_CHARS and _INT.fullmatch(t) is not None


def _shown(text: str) -> str:
    return repr(text if len(text) <= NUMBER_MAX_CHARS else text[:NUMBER_MAX_CHARS] + "...")


def parse_int(text: str, what: str, *, lo: int | None = None, hi: int | None = None,
              path: str | os.PathLike[str] | None = None, line: int | None = None) -> int:
    """``text`` (surrounding blanks ignored) as an int in [``lo``, ``hi``], or an :class:`InputError`.

    ``what`` names the value in the message (a column, an option).

    Examples
    --------
    >>> parse_int(" 7 ", "gpus", lo=1, hi=8)
    7
    >>> parse_int("9", "gpus", lo=1, hi=8)
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: gpus 9 must be an integer in [1, 8]
    """
    t = text.strip() if isinstance(text, str) else ""
    if not isinstance(text, str) or len(t) > NUMBER_MAX_CHARS or _INT.fullmatch(t) is None:
        raise InputError(f"{what} {_shown(str(text))} is not an integer (ASCII digits 0-9, at most "
                         f"{NUMBER_MAX_CHARS} characters)", path=path, line=line)
    value = int(t)
    low = -_INT_ABS_MAX if lo is None else lo
    high = _INT_ABS_MAX if hi is None else hi
    if not low <= value <= high:
        bounds = f">= {low}" if hi is None else f"in [{low}, {high}]"
        raise InputError(f"{what} {value} must be an integer {bounds}", path=path, line=line)
    return value


def parse_float(text: str, what: str, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
                path: str | os.PathLike[str] | None = None, line: int | None = None) -> float:
    """``text`` as a finite float in [``lo``, ``hi``] (``(lo, hi]`` with ``lo_open``), or an :class:`InputError`.

    Examples
    --------
    >>> parse_float("0.5", "quantum_ms", lo=0.0, lo_open=True)
    0.5
    >>> parse_float("1e999", "quantum_ms")
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: quantum_ms '1e999' is not a finite number
    >>> parse_float("0", "quantum_ms", lo=0.0, lo_open=True)
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: quantum_ms 0 must be a number > 0
    """
    t = text.strip() if isinstance(text, str) else ""
    if not isinstance(text, str) or len(t) > NUMBER_MAX_CHARS or _FLOAT.fullmatch(t) is None:
        raise InputError(f"{what} {_shown(str(text))} is not a number (ASCII digits, an optional sign, point and "
                         f"exponent, at most {NUMBER_MAX_CHARS} characters)", path=path, line=line)
    value = float(t)
    if not math.isfinite(value):
        raise InputError(f"{what} {_shown(t)} is not a finite number", path=path, line=line)
    check_range(value, what, lo=lo, hi=hi, lo_open=lo_open, path=path, line=line)
    return value


def check_range(value: float, what: str, *, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, path: str | os.PathLike[str] | None = None, line: int | None = None) -> float:
    """``value`` if it is finite and within [``lo``, ``hi``] (``(lo, hi]`` with ``lo_open``), else an :class:`InputError`.

    Examples
    --------
    >>> check_range(1e300, "switch_ms", lo=0.0, hi=1e3)
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: switch_ms 1e+300 must be a number in [0, 1000]
    """
    below = lo is not None and (value <= lo if lo_open else value < lo)
    above = hi is not None and value > hi
    if not math.isfinite(value) or below or above:
        low = "" if lo is None else f"{'>' if lo_open else '>='} {lo:g}"
        if hi is None:
            bounds = low or "finite"
        elif lo is None:
            bounds = f"<= {hi:g}"
        else:
            bounds = f"in {'(' if lo_open else '['}{lo:g}, {hi:g}]"
        raise InputError(f"{what} {value:g} must be a number {bounds}", path=path, line=line)
    return value


def int_option(*, lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` reading an option's value with :func:`parse_int` (a refusal is argparse's one line,
    naming the option)."""
    def read(text: str) -> int:
        try:
            return parse_int(text, "", lo=lo, hi=hi)
        except InputError as exc:  # argparse names the option: "argument --gpus: '２' is not an integer ..."
            raise argparse.ArgumentTypeError(exc.message.lstrip()) from None

    read.__name__ = "integer"
    return read


def float_option(*, lo: float | None = None, hi: float | None = None,
                 lo_open: bool = False) -> Callable[[str], float]:
    """An argparse ``type`` reading an option's value with :func:`parse_float`."""
    def read(text: str) -> float:
        try:
            return parse_float(text, "", lo=lo, hi=hi, lo_open=lo_open)
        except InputError as exc:
            raise argparse.ArgumentTypeError(exc.message.lstrip()) from None

    read.__name__ = "number"
    return read
