"""``njit`` for every numba kernel of interfpred: on-disk caching when possible, never an import failure.

numba's ``cache=True`` needs somewhere to write: the package's ``__pycache__`` folder, the
user's cache folder under HOME, or ``NUMBA_CACHE_DIR``. When none is writable (a read-only
install run by a user without a home folder, a locked-down container) numba refuses to
*decorate* the function ("cannot cache function ...: no locator available"), which would make
``import interfpred`` fail. This helper decorates with ``cache=True`` and, when numba finds no
cache locator, falls back to compiling without an on-disk cache, with one ``RuntimeWarning``
per process. Kernels then compile on first use in every process (slower start, same results).

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

import threading
import warnings
from collections.abc import Callable
from typing import Any

import numba

__all__ = ["njit", "compiled_entry", "CompiledEntries", "CACHE_WARNING"]

#: Start of the warning issued (once per process) when kernels cannot be cached on disk.
CACHE_WARNING = "numba cannot cache interfpred's compiled kernels on disk"

_warned = False
_lock = threading.Lock()


def _warn_once(exc: Exception) -> None:
    global _warned
    with _lock:
        if _warned:
            return
        _warned = True
    warnings.warn(f"{CACHE_WARNING} ({exc}); compiling them without a cache in this process. Set "
                  "NUMBA_CACHE_DIR to a writable folder to cache them.", RuntimeWarning, stacklevel=4)


def _decorate(func: Callable[..., Any], sig: tuple[Any, ...], options: dict[str, Any]) -> Any:
    if options.get("cache"):
        try:
            return numba.njit(*sig, **options)(func)
        except RuntimeError as exc:
            if "no locator available" not in str(exc):
                raise
            _warn_once(exc)
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
