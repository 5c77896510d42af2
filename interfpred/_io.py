"""Atomic file output shared by every writer in the library.

Files are written to a temporary file in the destination folder and renamed over the
target, so a reader never sees a half-written file and a crash leaves the old one intact.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO

__all__ = ["atomic_open", "atomic_write_text", "check_regular_file", "read_json", "read_text"]


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", **kwargs) -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success rename it over ``path``.

    On an exception inside the block the temporary file is removed and ``path`` is untouched.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_open(target) as fh:
    ...     _ = fh.write("hello")
    >>> target.read_text()
    'hello'
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix="-" + os.path.basename(path), dir=folder)
    try:
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates files 0600; give the result the mode a plain open() would have
        # (or keep the mode of the file being replaced).
        try:
            perm = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            perm = 0o666 & ~umask
        os.chmod(tmp, perm)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "state.json"
    >>> atomic_write_text(target, "{}")
    >>> target.read_text()
    '{}'
    """
    with atomic_open(path, "w", encoding=encoding, newline="") as fh:
        fh.write(text)


def read_text(path: str | os.PathLike[str], what: str = "a CSV") -> str:
    """Read a whole UTF-8 text file, refusing binary files with an :class:`InputError`.

    ``what`` names the expected content in the message ("a CSV", "a manifest CSV").

    Examples
    --------
    >>> import pathlib, tempfile
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "bin.csv"
    >>> _ = target.write_bytes(b"a,b\\x00")
    >>> read_text(target)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: ...bin.csv: contains NUL bytes: a binary file, not a CSV
    """
    from interfpred.errors import InputError

    check_regular_file(path, what)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            text = fh.read()
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file (is it a binary file?)", path=path) from None
    if "\x00" in text:
        raise InputError(f"contains NUL bytes: a binary file, not {what}", path=path)
    return text


def _json_depth(obj: object) -> int:
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


def check_regular_file(path: str | os.PathLike[str], what: str = "file") -> int:
    """Raise :class:`InputError` unless ``path`` is a regular file (not a FIFO, device or folder).

    Returns its size in bytes.  Opening a FIFO blocks until a writer appears, so every reader
    of user-named paths checks first.

    Examples
    --------
    >>> import tempfile
    >>> check_regular_file(tempfile.mkdtemp(), "a manifest")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: ...: is a directory, not a manifest
    """
    import stat

    from interfpred.errors import InputError

    st = os.stat(path)  # FileNotFoundError / PermissionError name the path
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"is a directory, not {what}", path=path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"is not a regular file (a FIFO, socket or device), not {what}", path=path)
    return st.st_size


def read_json(path: str | os.PathLike[str], *, max_bytes: int | None = None, max_depth: int | None = None) -> object:
    """Parse a JSON file; invalid JSON is an :class:`InterfpredError` naming the file and line.

    ``max_bytes`` and ``max_depth`` (defaults :data:`~interfpred.constants.MODEL_FILE_MAX_BYTES`
    and :data:`~interfpred.constants.MODEL_FILE_MAX_DEPTH`) refuse a file that is too large
    (before reading it) or nested too deeply; non-regular files (FIFOs) are refused too.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "m.json"
    >>> _ = target.write_text('{"a": 1, oops}')
    >>> read_json(target)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: ...m.json line 1: not valid JSON: Expecting property name enclosed in double quotes
    >>> _ = target.write_text("[" * 40 + "]" * 40)
    >>> read_json(target)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: ...m.json: JSON nested 40 levels deep; at most 32 are accepted
    """
    import json

    from interfpred.constants import MODEL_FILE_MAX_BYTES, MODEL_FILE_MAX_DEPTH
    from interfpred.errors import InterfpredError

    max_bytes = MODEL_FILE_MAX_BYTES if max_bytes is None else max_bytes
    max_depth = MODEL_FILE_MAX_DEPTH if max_depth is None else max_depth
    size = check_regular_file(path, "a JSON file")
    if size > max_bytes:
        raise InterfpredError(f"{os.fspath(path)}: {size} bytes is larger than the {max_bytes} bytes accepted "
                              "for a model or predictor file")
    with open(path, encoding="utf-8") as fh:
        try:
            text = fh.read(max_bytes + 1)
        except UnicodeDecodeError:
            raise InterfpredError(f"{os.fspath(path)}: not a UTF-8 JSON file (is it a binary file?)") from None
    if len(text) > max_bytes:  # the file grew while being read
        raise InterfpredError(f"{os.fspath(path)}: larger than the {max_bytes} bytes accepted")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InterfpredError(f"{os.fspath(path)} line {exc.lineno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise InterfpredError(f"{os.fspath(path)}: JSON nested too deeply; at most {max_depth} levels "
                              "are accepted") from None
    depth = _json_depth(value)
    if depth > max_depth:
        raise InterfpredError(f"{os.fspath(path)}: JSON nested {depth} levels deep; at most {max_depth} "
                              "are accepted")
    return value
