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

__all__ = ["renamed_keywords"]

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
