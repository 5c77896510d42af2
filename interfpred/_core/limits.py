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

import json
import os
import stat
import zlib

from interfpred.constants import LIMIT_ENV_PREFIX, LIMITS
from interfpred.errors import InputError, InterfpredError

__all__ = ["check_limit", "json_depth", "limit", "limit_error", "parse_capture_json", "read_capture_bytes"]

#: First bytes of a gzip file.
_GZIP_MAGIC = b"\x1f\x8b"
#: Bytes read or inflated per step by :func:`read_capture_bytes`.
_BLOCK = 1 << 20


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


def read_capture_bytes(path: str | os.PathLike[str], what: str) -> bytes:
    """The bytes of a capture file, inflated when it is gzip, within ``INPUT_MAX_BYTES`` / ``INFLATED_MAX_BYTES``.

    The file's size is checked before it is read, and a gzip stream is inflated in blocks that
    stop at ``INFLATED_MAX_BYTES``: a 4 MB file inflating to 4 GB is refused after 128 MB, not
    after 4 GB. A damaged or truncated gzip stream is an :class:`InputError` naming the file.

    Examples
    --------
    >>> import gzip, os, pathlib, tempfile
    >>> bomb = pathlib.Path(tempfile.mkdtemp()) / "bomb.json.gz"
    >>> _ = bomb.write_bytes(gzip.compress(b" " * 2**20))
    >>> os.environ["INTERFPRED_INFLATED_MAX_BYTES"] = "1000"
    >>> read_capture_bytes(bomb, "a trace")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: ...bomb.json.gz: a trace inflating to more than 1000 bytes is larger than INFLATED_MAX_BYTES=1000 (raise it with the environment variable INTERFPRED_INFLATED_MAX_BYTES)
    >>> del os.environ["INTERFPRED_INFLATED_MAX_BYTES"]
    >>> len(read_capture_bytes(bomb, "a trace"))
    1048576
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"is not a regular file, not {what}", path=path)
    check_limit("INPUT_MAX_BYTES", st.st_size, f"{what} of", path=path)
    cap_in = limit("INPUT_MAX_BYTES")
    with open(path, "rb") as fh:
        raw = fh.read(cap_in + 1)
    if len(raw) > cap_in:  # the file grew while being read
        raise limit_error("INPUT_MAX_BYTES", f"of more than {cap_in} bytes", what, path=path)
    if not raw.startswith(_GZIP_MAGIC):
        return raw
    cap = limit("INFLATED_MAX_BYTES")
    parts: list[bytes] = []
    total = 0
    data = raw
    try:
        while data:  # one gzip member after another, as gzip.decompress reads them
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            chunk = inflater.decompress(data, _BLOCK)
            while True:
                total += len(chunk)
                if total > cap:
                    raise limit_error("INFLATED_MAX_BYTES", f"inflating to more than {cap} bytes", what,
                                      path=path)
                parts.append(chunk)
                if inflater.eof or not inflater.unconsumed_tail and not chunk:
                    break
                chunk = inflater.decompress(inflater.unconsumed_tail, _BLOCK)
            if not inflater.eof:
                raise InputError(f"is a damaged or truncated gzip file, not {what}", path=path)
            data = inflater.unused_data.lstrip(b"\x00")
            if data and not data.startswith(_GZIP_MAGIC):
                raise InputError(f"is a gzip file with trailing garbage, not {what}", path=path)
    except zlib.error as exc:
        raise InputError(f"is a damaged gzip file, not {what}: {exc}", path=path) from None
    return b"".join(parts)


def json_depth(obj: object) -> int:
    """Deepest nesting of lists and dicts in a parsed JSON value (iterative: no recursion limit)."""
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in value if isinstance(v, (list, dict)))
    return deepest


def parse_capture_json(raw: bytes, path: str | os.PathLike[str], what: str) -> object:
    """Parse a capture's JSON text within ``JSON_MAX_CONTAINERS``, ``JSON_MAX_DEPTH`` and ``JSON_INT_MAX_DIGITS``.

    The containers are counted on the bytes before parsing; an integer literal longer than the
    digit limit is refused as the parser meets it (``int()`` of a 5000-digit literal is slow and
    then overflows every int64 column), and nesting too deep for the parser is refused, never a
    RecursionError. ``NaN`` and ``Infinity`` literals parse (to float); the fields that read them
    check their range. Invalid JSON or text that is not UTF-8 is an :class:`InputError` naming the
    file and line.

    Examples
    --------
    >>> parse_capture_json(b'{"a": [1, 2.5]}', "t.json", "a trace")
    {'a': [1, 2.5]}
    >>> parse_capture_json(b"[" * 100_000 + b"]" * 100_000, "t.json", "a trace")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: t.json: a trace nested more than 64 levels deep is larger than JSON_MAX_DEPTH=64 ...
    """
    containers = raw.count(b"{") + raw.count(b"[")
    check_limit("JSON_MAX_CONTAINERS", containers, f"{what} with objects and lists", path=path)
    max_depth = limit("JSON_MAX_DEPTH")
    max_digits = limit("JSON_INT_MAX_DIGITS")

    def parse_int(literal: str) -> int:
        digits = len(literal.lstrip("-"))
        if digits > max_digits:
            raise limit_error("JSON_INT_MAX_DIGITS", f"of {digits} digits", "an integer", path=path)
        return int(literal)

    too_deep = limit_error("JSON_MAX_DEPTH", f"nested more than {max_depth} levels deep", what, path=path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"is not UTF-8 text (byte {exc.start}), not {what}", path=path) from None
    del raw
    try:
        value = json.loads(text, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON (truncated?): {exc.msg} at column {exc.colno}", path=path,
                         line=exc.lineno) from None
    except RecursionError:
        raise too_deep from None
    if json_depth(value) > max_depth:
        raise too_deep
    return value
