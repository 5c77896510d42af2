"""The input limits of :data:`~interfpred.constants.LIMITS`, read with their environment override.

Every size or count taken from a user (a file's bytes, a table's rows, a declared ``window``,
``--executions``, ``--calls``, ``--repeats``) is checked here *before* anything is allocated for
it, and a refusal is one line naming the limit and how to raise it.

Examples
--------
>>> limit("REPEATS_MAX")
10000
>>> check_limit("REPEATS_MAX", 10**9, "--repeats")
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: --repeats 1000000000 is larger than REPEATS_MAX=10000 (raise it with the environment variable INTERFPRED_REPEATS_MAX)
"""

from __future__ import annotations

import os

from interfpred.constants import LIMIT_ENV_PREFIX, LIMITS
from interfpred.errors import InputError, InterfpredError

__all__ = ["check_limit", "limit", "limit_error"]


def limit(name: str) -> int:
    """The value of limit ``name``: ``INTERFPRED_<name>`` from the environment when set, else the default.

    A set variable that is not a positive integer is an :class:`InterfpredError` naming it.
    """
    if name not in LIMITS:
        raise KeyError(f"no limit {name!r}; limits are {', '.join(LIMITS)}")
    env = LIMIT_ENV_PREFIX + name
    text = os.environ.get(env)
    if text is None or not text.strip():
        return LIMITS[name]
    try:
        value = int(text.strip())
    except ValueError:
        raise InterfpredError(f"environment variable {env}={text!r} must be a positive integer") from None
    if value <= 0:
        raise InterfpredError(f"environment variable {env}={text!r} must be a positive integer")
    return value


def limit_error(name: str, value: object, what: str, *, path: str | os.PathLike[str] | None = None,
                line: int | None = None) -> InterfpredError:
    """The error for ``what`` = ``value`` over limit ``name`` (an :class:`InputError` when ``path`` is given)."""
    message = (f"{what} {value} is larger than {name}={limit(name)} (raise it with the environment variable "
               f"{LIMIT_ENV_PREFIX}{name})")
    if path is not None or line is not None:
        return InputError(message, path=path, line=line)
    return InterfpredError(message)


def check_limit(name: str, value: int, what: str, *, path: str | os.PathLike[str] | None = None,
                line: int | None = None) -> int:
    """``value`` if it is at most limit ``name``, else :func:`limit_error`; returns ``value``."""
    if value > limit(name):
        raise limit_error(name, value, what, path=path, line=line)
    return value
