"""Atomic file and folder output shared by every writer in the library.

Files are written to a temporary file in the destination folder and renamed over the
target, so a reader never sees a half-written file and a crash leaves the old one intact.
Folders (``reproduce``, ``simulate``) are written into a temporary sibling which replaces
the target only once complete (:func:`temp_folder`, :func:`replace_folder`).

Temporary names carry the writer's process id, a random nonce and a token,
``.<name>.<pid>.<nonce>-<token>.tmp`` and, while a folder is being swapped, ``...old``; the
token is a keyed hash of the target's name, the pid, the nonce and the kind, so the library
recognises exactly the names it made.  A writer killed at any point (even with ``kill -9``)
leaves them behind; the next write to the same target removes the leftovers of dead processes
and, if the kill fell between the two renames of a folder swap, first puts the old folder back
at the target's path (:func:`recover`).  A user's file that only looks like such a name is
never touched.  Writers refuse an output that is the current folder, one above it, or a device
or other special file (:func:`check_replaceable`).
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import hashlib
import hmac
import io
import json
import math
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from typing import IO

from interfpred._core.limits import check_limit, json_depth, limit, limit_error
from interfpred.constants import MODEL_FILE_MAX_BYTES, MODEL_FILE_MAX_DEPTH
from interfpred.errors import InputError, InterfpredError

__all__ = ["atomic_open", "atomic_write_text", "check_regular_file", "check_replaceable", "csv_rows", "headed_csv_rows", "read_json", "read_text", "scan_text_file",
           "staged_files", "staged_folder",
           "recover", "replace_folder", "temp_folder"]


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (on this machine)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


#: Key of the token in every temporary name (a user file of that shape lacks a valid token).
_TOKEN_KEY = b"interfpred.atomic.v1"


def _token(base: str, pid: int, nonce: str, kind: str) -> str:
    """The check token of a temporary name: keyed hash of the target's name, the pid, a nonce and the kind."""
    msg = "\x00".join((base, str(pid), nonce, kind)).encode("utf-8", "surrogateescape")
    return hashlib.blake2s(msg, key=_TOKEN_KEY, digest_size=8).hexdigest()


#: Longest file name (bytes) on the file systems written to, and the most a temporary name adds to
#: its stem: two dots, a pid (up to 20 digits), a 12-digit nonce, a 16-digit token and the kind.
_NAME_MAX = 255
_TEMP_OVERHEAD = 60


def _stem(base: str) -> str:
    """The target's name as its temporary names start: ``base`` itself, or when that would make a name
    longer than any file system allows, its first characters and a hash of the whole name."""
    raw = base.encode("utf-8", "surrogateescape")
    if len(raw) + _TEMP_OVERHEAD <= _NAME_MAX:
        return base
    digest = hashlib.blake2s(raw, key=_TOKEN_KEY, digest_size=8).hexdigest()
    head = raw[:_NAME_MAX - _TEMP_OVERHEAD - len(digest) - 1].decode("utf-8", "ignore")
    return f"{head}~{digest}"


def _temp_name(base: str, kind: str) -> str:
    """A fresh temporary name for target ``base``: ``.<stem>.<pid>.<nonce>-<token>.<kind>`` (:func:`_stem`)."""
    pid, nonce = os.getpid(), secrets.token_hex(6)
    return f".{_stem(base)}.{pid}.{nonce}-{_token(base, pid, nonce, kind)}.{kind}"


def _leftovers(path: str) -> list[tuple[str, int, str]]:
    """(full path, pid, "tmp" or "old") of the temporary siblings of ``path`` this library made.

    A sibling counts only when its name carries the token :func:`_temp_name` computed for exactly
    this target, pid, nonce and kind: a user's file or folder that merely looks like a temporary
    name (``.out.json.999999.old``) is never touched.
    """
    folder, base = os.path.split(os.path.abspath(path))
    prefix = f".{_stem(base)}."
    out: list[tuple[str, int, str]] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    for name in names:
        if not name.startswith(prefix):
            continue
        parts = name[len(prefix):].split(".")
        if len(parts) != 3 or parts[2] not in ("tmp", "old") or not parts[0].isdigit():
            continue
        nonce, _, token = parts[1].partition("-")
        pid, kind = int(parts[0]), parts[2]
        if len(nonce) == 12 and hmac.compare_digest(token, _token(base, pid, nonce, kind)):
            out.append((os.path.join(folder, name), pid, kind))
    return out


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


def check_replaceable(path: str | os.PathLike[str], what: str = "output") -> str:
    """Refuse an output path that replacing (``--force``) or writing over would be wrong for; return it absolute.

    Refused: the current folder, any folder above it, the filesystem root (``--out .``, ``--out ''``,
    ``--out ..``), and anything existing that is not a regular file or a folder (a device such as
    ``/dev/full``, a FIFO, a socket).  Every writer of the library calls this first; the CLI's
    ``--force`` handling may call it too.

    Examples
    --------
    >>> check_replaceable(".")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: output ... is the current folder or one above it; refusing to replace it
    """
    raw = os.fspath(path)
    full = os.path.abspath(raw) if raw else os.getcwd()
    real = os.path.realpath(full)
    cwd = os.path.realpath(os.getcwd())
    if real == os.path.dirname(real) or os.path.commonpath([real, cwd]) == real:
        raise InterfpredError(f"{what} {raw or repr(raw)} ({real}) is the current folder or one above it; refusing "
                              "to replace it")
    try:
        st = os.lstat(full)
    except OSError:
        return full  # absent (or its folder is not one): the write itself reports it
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(full)
        except OSError:
            return full  # a dangling link: replaced like a file
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise InterfpredError(f"{what} {raw} is a device, FIFO or socket, not a regular file or folder; refusing "
                              "to write over it")
    return full


def recover(path: str | os.PathLike[str]) -> None:
    """Clean up after writers of ``path`` that were killed: restore or remove their leftovers.

    If ``path`` is missing and a dead writer's ``.old`` sibling exists (a kill between the two
    renames of a folder swap), it is renamed back to ``path``; every other leftover of a dead
    process is removed.  Only names carrying this library's token for ``path`` count as
    leftovers (see :func:`_leftovers`); leftovers of live processes are never touched.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / ".out.999999999.old").mkdir()         # a user's folder: no token, left alone
    >>> recover(folder / "out")
    >>> sorted(p.name for p in folder.iterdir())
    ['.out.999999999.old']
    """
    path = os.path.abspath(os.fspath(path))
    stale = [(p, pid, kind) for p, pid, kind in _leftovers(path) if not _alive(pid)]
    for p, _pid, kind in sorted(stale, key=lambda e: e[2] != "old"):
        if kind == "old" and not os.path.lexists(path):
            with contextlib.suppress(OSError):
                os.rename(p, path)
                continue
        _remove(p)


def _mktemp(folder: str, base: str, *, directory: bool) -> tuple[int | None, str]:
    """Create a fresh temporary file (opened, mode 0600) or folder (mode 0700) named for ``base``."""
    while True:
        tmp = os.path.join(folder, _temp_name(base, "tmp"))
        try:
            if directory:
                os.mkdir(tmp, 0o700)
                return None, tmp
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600), tmp
        except FileExistsError:
            continue


def temp_folder(out: str | os.PathLike[str]) -> str:
    """A fresh temporary sibling folder of ``out`` to write into, after :func:`recover` of ``out``.

    ``out`` must pass :func:`check_replaceable`.  An unwritable parent raises ``PermissionError``
    naming ``out``'s folder, not the temporary name.
    """
    out = check_replaceable(out)
    recover(out)
    folder, base = os.path.split(out)
    try:
        return _mktemp(folder, base, directory=True)[1]
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, folder) from None


@contextlib.contextmanager
def staged_folder(out: str | os.PathLike[str], *, what: str = "output") -> Iterator[str]:
    """Write a folder in a fresh sibling, then put it at ``out`` as a whole (see :func:`replace_folder`).

    Yields the temporary folder's path. When the block completes, the folder is made readable
    (mode 755) and replaces ``out``; when it raises, the partial folder is removed and ``out`` is
    left as it was. A parent that cannot hold the temporary folder raises
    :class:`~interfpred.errors.InterfpredError` naming ``what`` and ``out``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "report"
    >>> with staged_folder(out) as tmp:
    ...     _ = (pathlib.Path(tmp) / "a.txt").write_text("a")
    >>> sorted(p.name for p in out.iterdir())
    ['a.txt']
    """
    check_replaceable(out, what)
    try:
        tmp = temp_folder(out)
    except OSError as exc:
        raise InterfpredError(f"cannot write {what} {os.fspath(out)}: {exc.strerror or exc}") from None
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        replace_folder(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise


def replace_folder(tmp: str | os.PathLike[str], out: str | os.PathLike[str]) -> None:
    """Move the complete folder ``tmp`` to ``out``, replacing an existing ``out`` as a whole.

    The old ``out`` stays in place until ``tmp`` is complete; it is then renamed to
    ``.<name>.<pid>.old``, ``tmp`` renamed to ``out`` and the old one removed. A failure between
    the renames puts the old one back; a kill there is repaired by the next :func:`recover`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "report"
    >>> out.mkdir(); _ = (out / "old.txt").write_text("old")
    >>> tmp = temp_folder(out); _ = (pathlib.Path(tmp) / "new.txt").write_text("new")
    >>> replace_folder(tmp, out)
    >>> sorted(p.name for p in out.parent.iterdir()), sorted(p.name for p in out.iterdir())
    (['report'], ['new.txt'])
    """
    out = check_replaceable(out)
    tmp = os.fspath(tmp)
    if not os.path.lexists(out):
        os.rename(tmp, out)
        return
    folder, base = os.path.split(out)
    old = os.path.join(folder, _temp_name(base, "old"))
    os.rename(out, old)
    try:
        os.rename(tmp, out)
    except BaseException:
        os.rename(old, out)
        raise
    _remove(old)


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
    full = check_replaceable(path)
    if os.path.isdir(full):
        raise InterfpredError(f"output {path} is a folder, not a file; refusing to write over it")
    folder, base = os.path.split(full)
    recover(path)
    try:
        fd_or_none, tmp = _mktemp(folder, base, directory=False)
        assert fd_or_none is not None
        fd = fd_or_none
    except OSError as exc:  # name the target, not the hidden temporary file
        raise type(exc)(exc.errno, exc.strerror, path) from None
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
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise type(exc)(exc.errno, exc.strerror, path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def staged_files(paths: Sequence[str | os.PathLike[str]], whats: Sequence[str] | None = None) -> Iterator[list[str]]:
    """Write several files all or nothing: each is written beside its target, then all replace theirs.

    Yields one path per target, inside a fresh temporary sibling folder of it and with the target's
    own name (a writer that picks the format by suffix sees the same suffix). When the block
    completes, every staged file replaces its target (an existing target is kept, hard-linked, until
    all are in place, and put back if a later one fails); when the block raises, nothing is
    replaced. The temporary folders are removed either way, and a killed run's are removed by the
    next write (:func:`recover`). ``whats`` names the targets in refusals (``--out``,
    ``--profiles-out``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.csv").write_text("old")
    >>> try:
    ...     with staged_files([folder / "a.csv", folder / "b.csv"]) as (a, b):
    ...         _ = pathlib.Path(a).write_text("new")
    ...         raise ValueError("the second file cannot be made")
    ... except ValueError:
    ...     pass
    >>> sorted(p.name for p in folder.iterdir()), (folder / "a.csv").read_text()
    (['a.csv'], 'old')
    >>> with staged_files([folder / "a.csv", folder / "b.csv"]) as (a, b):
    ...     _ = pathlib.Path(a).write_text("new"); _ = pathlib.Path(b).write_text("b")
    >>> (folder / "a.csv").read_text(), (folder / "b.csv").read_text()
    ('new', 'b')
    """
    names = list(whats) if whats is not None else ["output"] * len(paths)
    targets = [check_replaceable(p, w) for p, w in zip(paths, names)]
    for raw, full, what in zip(paths, targets, names):
        if os.path.isdir(full):
            raise InterfpredError(f"{what} {os.fspath(raw)} is a folder, not a file; refusing to write over it")
    if len(set(targets)) != len(targets):
        raise InterfpredError(f"{' and '.join(names)} name the same file: give one file each")
    folders: list[str] = []
    try:
        for full in targets:
            folders.append(temp_folder(full))
        staged = [os.path.join(f, os.path.basename(t)) for f, t in zip(folders, targets)]
        try:
            yield staged
        except (InterfpredError, OSError) as exc:  # name the target, never the temporary file
            raise _renamed(exc, staged, [os.fspath(p) for p in paths]) from None
        for s, raw, what in zip(staged, paths, names):
            if not os.path.isfile(s):
                raise InterfpredError(f"{what} {os.fspath(raw)}: nothing was written")
        done: list[tuple[str, str | None]] = []
        try:
            for s, full, folder in zip(staged, targets, folders):
                backup = None
                if os.path.lexists(full):
                    backup = os.path.join(folder, ".old")
                    os.link(full, backup, follow_symlinks=False)
                    with contextlib.suppress(OSError):
                        os.chmod(s, os.stat(full).st_mode & 0o7777)  # keep the replaced file's mode
                else:
                    umask = os.umask(0)
                    os.umask(umask)
                    os.chmod(s, 0o666 & ~umask)
                os.replace(s, full)
                done.append((full, backup))
        except BaseException:
            for full, backup in reversed(done):  # put back what was replaced before the failure
                with contextlib.suppress(OSError):
                    if backup is None:
                        os.unlink(full)
                    else:
                        os.replace(backup, full)
            raise
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def _renamed(exc: BaseException, staged: Sequence[str], paths: Sequence[str]) -> BaseException:
    """``exc`` with every staged path in its message (or ``filename``) replaced by its target's path."""
    def swap(text: str) -> str:
        for s, p in zip(staged, paths):
            text = text.replace(s, p)
        return text

    if isinstance(exc, OSError):
        if isinstance(exc.filename, str):
            exc.filename = swap(exc.filename)
        return exc
    renamed = swap(str(exc))
    return exc if renamed == str(exc) else InterfpredError(renamed)


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
    size = check_regular_file(path, what)
    check_limit("INPUT_MAX_BYTES", size, f"{what} of", path=path)
    cap = limit("INPUT_MAX_BYTES")
    parts: list[str] = []
    total = 0
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:  # a UTF-8 byte-order mark is dropped
            while True:  # in blocks: a NUL (a binary file) is refused at its block, not after reading it all
                block = fh.read(_READ_BLOCK)
                if not block:
                    break
                if "\x00" in block:
                    raise InputError(f"contains NUL bytes: a binary file, not {what}", path=path)
                total += len(block)
                if total > cap:  # the file grew while being read
                    raise InputError(f"larger than INPUT_MAX_BYTES={cap} (raise it with the environment "
                                     "variable INTERFPRED_INPUT_MAX_BYTES)", path=path)
                parts.append(block)
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file (is it a binary file?)", path=path) from None
    text = "".join(parts)
    return text


#: Characters read per block by :func:`read_text`.
_READ_BLOCK = 1 << 20


def scan_text_file(path: str | os.PathLike[str], what: str = "a CSV") -> bool:
    """Check a text input without keeping it: a regular file within ``INPUT_MAX_BYTES``, valid UTF-8, with no
    NUL byte.

    Refuses exactly what :func:`read_text` refuses for size, encoding and NUL bytes (so a fast
    reader that calls this first rejects the same files) and returns whether the file holds a
    carriage return (old Mac or mixed line endings), which some fast parsers count differently.
    """
    size = check_regular_file(path, what)
    check_limit("INPUT_MAX_BYTES", size, f"{what} of", path=path)
    has_cr = False
    decoder = codecs.getincrementaldecoder("utf-8")()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(_READ_BLOCK)
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError:
                raise InputError("not a UTF-8 text file (is it a binary file?)", path=path) from None
            if not block:
                return has_cr
            if b"\x00" in block:
                raise InputError(f"contains NUL bytes: a binary file, not {what}", path=path)
            has_cr = has_cr or b"\r" in block


def check_regular_file(path: str | os.PathLike[str], what: str = "file") -> int:
    """Raise :class:`InputError` unless ``path`` is a regular file (not a FIFO, device or folder).

    Returns its size in bytes.  Opening a FIFO blocks until a writer appears, so every reader
    of user-named paths checks first.

    Examples
    --------
    >>> import secrets
    >>> import tempfile
    >>> check_regular_file(tempfile.mkdtemp(), "a manifest")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: ...: is a directory, not a manifest
    """
    st = os.stat(path)  # FileNotFoundError / PermissionError name the path
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"is a directory, not {what}", path=path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"is not a regular file (a FIFO, socket or device), not {what}", path=path)
    return st.st_size


class csv_rows:  # lower case: used like csv.reader
    r"""``csv.reader`` over ``text`` whose errors are :class:`InputError` naming the file and line.

    A leading UTF-8 byte-order mark is dropped and lone carriage returns count as line breaks
    (old Mac line endings); a field longer than the csv module's limit (131,072 characters), or
    any other malformed CSV, is one clean error instead of ``_csv.Error``.

    Examples
    --------
    >>> rows = csv_rows("\ufeffa,b\r1,2\r", path="t.csv")
    >>> list(rows), rows.line_num
    ([['a', 'b'], ['1', '2']], 2)
    >>> list(csv_rows("a\n" + "x" * 200_000 + "\n", path="t.csv"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: t.csv line 2: not a readable CSV: field larger than field limit (131072)
    """

    def __init__(self, text: str, *, path: str | os.PathLike[str] | None = None) -> None:
        text = text.removeprefix("\ufeff")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self._reader = csv.reader(io.StringIO(text))
        self._path = path

    @property
    def line_num(self) -> int:
        """Line number of the last row read (1-based), as ``csv.reader.line_num``."""
        return self._reader.line_num

    def __iter__(self) -> csv_rows:
        return self

    def __next__(self) -> list[str]:
        try:
            return next(self._reader)
        except csv.Error as exc:
            raise InputError(f"not a readable CSV: {exc}", path=self._path, line=self._reader.line_num) from None


def headed_csv_rows(path: str | os.PathLike[str], header: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    r"""(line, stripped fields) of every non-empty row of a CSV file whose first line must be ``header``.

    The file is read by :func:`read_text` (size, encoding and NUL checks) and parsed by
    :class:`csv_rows`; a wrong header or a row of another width is an :class:`InputError` naming
    the file and line.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = f.write_text("a,b\n 1 ,2\n\n3,4\n")
    >>> headed_csv_rows(f, ("a", "b"))
    [(2, ['1', '2']), (4, ['3', '4'])]
    >>> _ = f.write_text("a,b\n1\n")
    >>> headed_csv_rows(f, ("a", "b"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: ...t.csv line 2: 1 fields, expected 2 (a, b)
    """
    rows = csv_rows(read_text(path), path=path)
    first = next(rows, [])
    if tuple(h.strip() for h in first) != tuple(header):
        raise InputError(f"header {first} is not {','.join(header)}", path=path, line=1)
    out = []
    for fields in rows:
        if not fields:
            continue
        if len(fields) != len(header):
            raise InputError(f"{len(fields)} fields, expected {len(header)} ({', '.join(header)})",
                             path=path, line=rows.line_num)
        out.append((rows.line_num, [f.strip() for f in fields]))
    return out


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
    max_digits = limit("JSON_INT_MAX_DIGITS")

    def parse_int(literal: str) -> int:
        if len(literal.lstrip("-")) > max_digits:
            raise limit_error("JSON_INT_MAX_DIGITS", f"of {len(literal.lstrip('-'))} digits", "an integer",
                              path=path)
        return int(literal)

    try:
        value = json.loads(text, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        raise InterfpredError(f"{os.fspath(path)} line {exc.lineno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise InterfpredError(f"{os.fspath(path)}: JSON nested too deeply; at most {max_depth} levels "
                              "are accepted") from None
    depth = json_depth(value)
    if depth > max_depth:
        raise InterfpredError(f"{os.fspath(path)}: JSON nested {depth} levels deep; at most {max_depth} "
                              "are accepted")
    return value


def json_ready(obj: object) -> object:
    """``obj`` with every non-finite float (NaN, infinities) replaced by None, through dicts and lists:
    JSON has no NaN, so a missing figure is written as null.

    Examples
    --------
    >>> json_ready({"mape": float("nan"), "rows": [1.5, float("inf")], "n": 3})
    {'mape': None, 'rows': [1.5, None], 'n': 3}
    """
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [json_ready(v) for v in obj]
    return obj
