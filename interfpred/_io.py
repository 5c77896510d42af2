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

__all__ = ["atomic_open", "atomic_write_text", "read_json", "read_text"]


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

    try:
        with open(path, newline="", encoding="utf-8") as fh:
            text = fh.read()
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file (is it a binary file?)", path=path) from None
    if "\x00" in text:
        raise InputError(f"contains NUL bytes: a binary file, not {what}", path=path)
    return text


def read_json(path: str | os.PathLike[str]) -> object:
    """Parse a JSON file; invalid JSON is an :class:`InterfpredError` naming the file and line.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "m.json"
    >>> _ = target.write_text('{"a": 1, oops}')
    >>> read_json(target)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: ...m.json line 1: not valid JSON: Expecting property name enclosed in double quotes
    """
    import json

    from interfpred.errors import InterfpredError

    with open(path, encoding="utf-8") as fh:
        try:
            return json.load(fh)
        except json.JSONDecodeError as exc:
            raise InterfpredError(f"{os.fspath(path)} line {exc.lineno}: not valid JSON: {exc.msg}") from None
        except UnicodeDecodeError:
            raise InterfpredError(f"{os.fspath(path)}: not a UTF-8 JSON file (is it a binary file?)") from None
