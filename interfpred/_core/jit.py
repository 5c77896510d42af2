"""``njit`` for every numba kernel of interfpred: cached on disk outside the package, never an import failure.

Where the compiled code is cached
---------------------------------
numba's own ``cache=True`` writes next to the source, into the installed package's
``__pycache__`` folders. Files written there after installation are not in the installer's
record: ``pip uninstall`` leaves them behind, and a folder left holding only them is taken by
Python for a namespace package that hides a later editable install of interfpred. So
interfpred's kernels never cache inside the package. They cache in:

1. ``NUMBA_CACHE_DIR`` when it is set (numba's own setting, honoured as numba honours it);
2. otherwise the per-user cache folder :func:`cache_dir` (``$XDG_CACHE_HOME/interfpred/numba``,
   ``~/.cache/interfpred/numba`` when ``XDG_CACHE_HOME`` is unset; ``~/Library/Caches`` on
   macOS, ``%LOCALAPPDATA%`` on Windows);
3. nowhere, when that folder cannot be created or written (a read-only home, a locked-down
   container): kernels then compile on first use in every process (slower start, same
   results), with one ``RuntimeWarning`` per process.

Other packages' numba functions are not affected: the cache folder is set only while
interfpred's own kernels are decorated.

Several processes may share the cache folder (a process pool, Dask workers, two commands at once).
numba's cache is safe to read concurrently, but two processes compiling one kernel for different
signatures at the same moment can both pick the same data file name, and the index then points
one signature at the other's machine code. So compiling a cached kernel holds an inter-process
lock (``fcntl.flock`` on a file under ``<cache folder>/locks``, one per kernel; without ``fcntl``,
on Windows, none): a process that waits for it then loads what the other compiled instead of
compiling it again.

Usage: write every kernel exactly as with numba, importing ``njit`` from here::

    from interfpred._core.jit import njit

    @njit(cache=True)
    def _kernel(x):
        ...

    @njit(cache=True, inline="always")
    def _helper(x):
        ...

Bare ``@njit`` and explicit signatures (``@njit("f8(f8)", cache=True)``) work too; options
other than ``cache`` are passed to numba unchanged.

Examples
--------
>>> @njit(inline="always")
... def _twice(x):
...     return 2.0 * x
>>> _twice(1.5)
3.0
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numba
import numba.core.config
import numpy as np

__all__ = ["njit", "compiled_entry", "CompiledEntries", "CACHE_WARNING", "cache_dir", "read_only"]

#: Start of the warning issued (once per process) when kernels cannot be cached on disk.
CACHE_WARNING = "numba cannot cache interfpred's compiled kernels on disk"

_warned = False
_lock = threading.Lock()
#: The cache folder chosen for this process: unset until the first cached kernel, then a path or None.
_chosen: list[str | None] = []


def cache_dir() -> Path:
    """The per-user folder interfpred's compiled kernels are cached in when ``NUMBA_CACHE_DIR`` is unset.

    ``$XDG_CACHE_HOME/interfpred/numba`` (``~/.cache/interfpred/numba`` without it) on Linux and
    other Unix systems, ``~/Library/Caches/interfpred/numba`` on macOS,
    ``%LOCALAPPDATA%\\interfpred\\numba`` on Windows. The folder is created on first use.

    Examples
    --------
    >>> cache_dir().parts[-2:]
    ('interfpred', 'numba')
    """
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "interfpred" / "numba"


def _numba_setting() -> str:
    """numba's cache folder setting (``NUMBA_CACHE_DIR``; empty when unset)."""
    return str(getattr(numba.core.config, "CACHE_DIR", "") or "")


def _writable_folder(path: Path) -> str | None:
    """``path`` as a string when it can be created and written, else None."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except (OSError, RuntimeError):  # RuntimeError: Path.home() without a home
        return None
    return str(path)


def _choose_cache_folder() -> str | None:
    """Where this process caches interfpred's kernels (None: nowhere), chosen once."""
    with _lock:
        if not _chosen:
            if _numba_setting():
                _chosen.append(_writable_folder(Path(_numba_setting())))
            else:
                try:
                    folder = _writable_folder(cache_dir())
                except RuntimeError:  # no home folder to resolve
                    folder = None
                _chosen.append(folder)
        return _chosen[0]


@contextmanager
def _numba_cache_folder(folder: str) -> Iterator[None]:
    """numba's cache folder set to ``folder`` while one kernel is decorated, then restored."""
    with _lock:
        before = _numba_setting()
        setattr(numba.core.config, "CACHE_DIR", folder)  # noqa: B010 - numba's config module is untyped
        try:
            yield
        finally:
            setattr(numba.core.config, "CACHE_DIR", before)  # noqa: B010


def _warn_once(reason: object) -> None:
    global _warned
    with _lock:
        if _warned:
            return
        _warned = True
    warnings.warn(f"{CACHE_WARNING} ({reason}); compiling them without a cache in this process. Set "
                  "NUMBA_CACHE_DIR to a writable folder to cache them.", RuntimeWarning, stacklevel=4)


try:
    import fcntl
except ImportError:  # Windows: no inter-process lock (see the module docstring)
    fcntl = None  # type: ignore[assignment]

#: Kernels whose compile lock this process holds (numba compiles one kernel at a time per process,
#: under its own lock, and a kernel's compile may nest another's): held -> depth.
_held: dict[str, int] = {}


@contextmanager
def _compile_lock(path: str) -> Iterator[None]:
    """The inter-process lock of one kernel's compile (re-entrant inside this process)."""
    if fcntl is None or path in _held:
        _held[path] = _held.get(path, 0) + 1
        try:
            yield
        finally:
            _held[path] -= 1
            if not _held[path]:
                del _held[path]
        return
    try:
        fh = open(path, "a+b")  # noqa: SIM115 - held for the duration of the compile
    except OSError:  # the lock folder went away or is not writable: compile unlocked, as numba does
        yield
        return
    with fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        _held[path] = 1
        try:
            yield
        finally:
            del _held[path]
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _lock_path(folder: str, func: Callable[..., Any]) -> str | None:
    """The lock file of ``func``'s compile under ``folder`` (None when the lock folder cannot be made)."""
    locks = Path(folder) / "locks"
    try:
        locks.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    where = f"{getattr(func, '__code__', None) and func.__code__.co_filename}"
    tag = hashlib.sha1(where.encode("utf-8", "replace")).hexdigest()[:12]
    return str(locks / f"{func.__module__}.{func.__qualname__}.{tag}.lock")


def _guard_compile(dispatcher: Any, path: str) -> None:
    """Make every compile of ``dispatcher`` (a call with new types, or a kernel calling it) hold its lock."""
    inner = dispatcher.compile

    def compile(sig: Any) -> Any:
        with _compile_lock(path):
            return inner(sig)

    dispatcher.compile = compile


def _decorate(func: Callable[..., Any], sig: tuple[Any, ...], options: dict[str, Any]) -> Any:
    if options.get("cache"):
        folder = _choose_cache_folder()
        if folder is not None:
            try:
                with _numba_cache_folder(folder):
                    dispatcher = numba.njit(*sig, **options)(func)
                path = _lock_path(folder, func)
                if path is not None:
                    _guard_compile(dispatcher, path)
                return dispatcher
            except RuntimeError as exc:
                if "no locator available" not in str(exc):
                    raise
                _warn_once(exc)
        else:
            _warn_once(f"no writable cache folder: {_numba_setting() or cache_dir()}")
        options = {**options, "cache": False}
    return numba.njit(*sig, **options)(func)


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` whose ``cache=True`` falls back to no caching (one warning) when numba cannot cache.

    Examples
    --------
    >>> @njit
    ... def _add(a, b):
    ...     return a + b
    >>> _add(1, 2)
    3
    """
    if len(args) == 1 and callable(args[0]) and not isinstance(args[0], str) and not options:
        return _decorate(args[0], (), {})
    if args and callable(args[0]) and not isinstance(args[0], str):
        return _decorate(args[0], args[1:], options)

    def decorator(func: Callable[..., Any]) -> Any:
        return _decorate(func, args, options)

    return decorator


def compiled_entry(dispatcher: Any, signature: tuple[Any, ...]) -> Callable[..., Any]:
    """The compiled function of ``dispatcher`` for ``signature``, called without numba's type dispatch.

    A numba dispatcher resolves its argument types on every call (a few hundred nanoseconds);
    kernels called once per row on a hot path skip that by calling the compiled entry point of
    one exact signature directly. This compiles ``signature`` (or loads it from numba's on-disk
    cache) and returns that entry point, read from numba's internal ``overloads`` table. When a
    numba release no longer offers it, the dispatcher itself is returned: the same results, at
    the cost of the dispatch.

    Callers must then pass exactly the types of ``signature`` (no conversion happens on this
    path): check them in Python before taking it.

    Parameters
    ----------
    dispatcher
        A function decorated with :func:`njit`.
    signature
        A tuple of numba types, one per argument.

    Examples
    --------
    >>> from numba import types
    >>> @njit
    ... def _scale(x, k):
    ...     return x * k
    >>> fast = compiled_entry(_scale, (types.float64, types.float64))
    >>> fast(1.5, 2.0)
    3.0
    """
    dispatcher.compile(signature)
    try:
        return dispatcher.overloads[signature].entry_point
    except (AttributeError, KeyError, TypeError):  # numba's internals moved: dispatch as usual
        return dispatcher


class CompiledEntries:
    """Entry points (:func:`compiled_entry`) of several kernels, each compiled on first access.

    ``specs`` maps an attribute name to ``(dispatcher, signature)``; reading the attribute
    compiles that kernel for that signature (or loads it from numba's cache) once, and later
    reads are plain attribute lookups.

    Examples
    --------
    >>> from numba import types
    >>> @njit
    ... def _neg(x):
    ...     return -x
    >>> fast = CompiledEntries({"neg": (_neg, (types.float64,))})
    >>> fast.neg(2.0)
    -2.0
    """

    def __init__(self, specs: dict[str, tuple[Any, tuple[Any, ...]]]) -> None:
        self._specs = specs

    def __getattr__(self, name: str) -> Any:
        specs = self.__dict__.get("_specs", {})
        if name not in specs:
            raise AttributeError(name)
        entry = compiled_entry(*specs[name])
        setattr(self, name, entry)
        return entry


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a``, for a kernel that other callers give read-only arrays.

    numba compiles a kernel once per distinct set of argument types, and an array's type
    includes whether it is writable: a kernel called with a trace's (read-only) columns on one
    path and with fresh (writable) arrays on another compiles twice, doubling its first-use
    time. Passing views of one kind on every path compiles it once. The view shares ``a``'s
    memory; ``a`` itself stays writable.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros(3)
    >>> v = read_only(a)
    >>> v.flags.writeable, a.flags.writeable, np.shares_memory(a, v)
    (False, True, True)
    """
    v = a.view()
    v.flags.writeable = False
    return v
