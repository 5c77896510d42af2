"""Old keyword spellings kept working for one release, with a ``DeprecationWarning``.

Examples
--------
>>> import warnings
>>> @renamed_keywords(gpu="spec")
... def f(*, spec="l4"):
...     return spec
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     f(gpu="a100"), str(caught[0].message)
('a100', 'f(gpu=...) is deprecated; use spec=... (the old spelling goes in the next release)')
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from interfpred.errors import InterfpredError

__all__ = ["renamed_attribute", "renamed_keywords"]

F = TypeVar("F", bound=Callable[..., Any])


def renamed_keywords(**renames: str) -> Callable[[F], F]:
    """Decorate a function so that each old keyword (``old="new"``) still works and warns.

    Passing both spellings raises :class:`~interfpred.errors.InterfpredError`. A call that uses
    only the new spellings costs one set test.
    """
    old_names = frozenset(renames)

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if kwargs and not old_names.isdisjoint(kwargs):
                for old in old_names.intersection(kwargs):
                    new = renames[old]
                    if new in kwargs:
                        raise InterfpredError(f"{func.__name__}() got both {old}= and {new}=; "
                                              f"pass only {new}= ({old}= is its deprecated spelling)")
                    warnings.warn(f"{func.__name__}({old}=...) is deprecated; use {new}=... (the old spelling "
                                  "goes in the next release)", DeprecationWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


class renamed_attribute:  # noqa: N801 - used like ``property``
    """A read-only attribute kept under its old name for one release: reading it warns, then
    returns the attribute ``new``.

    Examples
    --------
    >>> import warnings
    >>> class Run:
    ...     device = "gpu0"
    ...     gpu = renamed_attribute("device")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     Run().gpu, str(caught[0].message)
    ('gpu0', 'Run.gpu is deprecated; use Run.device (the old name goes in the next release)')
    """

    def __init__(self, new: str) -> None:
        self.new = new
        self.old = ""
        self.owner = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.old, self.owner = name, owner.__name__
        self.__doc__ = f"Deprecated name of ``{self.new}``."

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        warnings.warn(f"{self.owner}.{self.old} is deprecated; use {self.owner}.{self.new} (the old name goes in "
                      "the next release)", DeprecationWarning, stacklevel=2)
        return getattr(obj, self.new)
