"""pandas DataFrames wherever a Trace, ProfileTable or Measurements is taken.

Every public entry point that takes a trace, a profile table or measurements passes it through
one of :func:`as_trace`, :func:`as_profiles` or :func:`as_measurements`: the library's own
object is returned as it is; a pandas DataFrame with the CSV's columns is converted, validated
exactly as the CSV reader validates (errors name the row); anything else is refused with an
error that says what is accepted. pandas is not imported here: a DataFrame is recognised by
its type's module, so the core works without pandas installed.

Examples
--------
>>> import pandas as pd
>>> df = pd.DataFrame({"gpu": ["l4"], "model": ["a"], "batch_size": [1], "solo_ms": [2.0]})
>>> as_profiles(df).lookup("a", 1).solo_ms
2.0
>>> as_trace([1, 2])
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: trace: expected a Trace or a pandas DataFrame with columns id,device,model,batch_size,start_ms,end_ms, got list
"""

from __future__ import annotations

from typing import Any

from interfpred.constants import PROFILE_COLUMNS, TRACE_COLUMNS
from interfpred.data.measurements import Measurements
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError

__all__ = ["as_measurements", "as_profiles", "as_trace", "is_data_frame"]


def is_data_frame(obj: object) -> bool:
    """Whether ``obj`` is a pandas DataFrame (checked without importing pandas)."""
    cls = type(obj)
    return cls.__name__ == "DataFrame" and cls.__module__.split(".")[0] == "pandas"


def _refuse(what: str, expected: str, columns: tuple[str, ...], obj: object) -> InterfpredError:
    return InterfpredError(f"{what}: expected {expected} or a pandas DataFrame with columns "
                           f"{','.join(columns)}, got {type(obj).__name__}")


def as_trace(obj: Any, *, what: str = "trace") -> Trace:
    """``obj`` as a :class:`Trace`: a Trace as it is, a DataFrame with the trace CSV's columns converted.

    Converting a DataFrame needs pyarrow (``pip install 'interfpred[parquet]'``).
    """
    if isinstance(obj, Trace):
        return obj
    if is_data_frame(obj):
        from interfpred.data.columnar import trace_from_frame

        try:
            return trace_from_frame(obj)
        except InterfpredError as exc:
            raise InterfpredError(f"{what} (DataFrame): {exc}") from None
    raise _refuse(what, "a Trace", TRACE_COLUMNS, obj)


def as_profiles(obj: Any, *, what: str = "profiles") -> ProfileTable:
    """``obj`` as a :class:`ProfileTable`: a table as it is, a DataFrame with the profile CSV's columns converted."""
    if isinstance(obj, ProfileTable):
        return obj
    if is_data_frame(obj):
        from interfpred.data.columnar import profiles_from_frame

        try:
            return profiles_from_frame(obj)
        except InterfpredError as exc:
            raise InterfpredError(f"{what} (DataFrame): {exc}") from None
    raise _refuse(what, "a ProfileTable", PROFILE_COLUMNS[:4], obj)


def as_measurements(obj: Any, *, what: str = "measurements") -> Measurements:
    """``obj`` as :class:`Measurements`: as they are, or a DataFrame with the measurement CSV's columns converted."""
    if isinstance(obj, Measurements):
        return obj
    if is_data_frame(obj):
        try:
            return Measurements.from_frame(obj)
        except InterfpredError as exc:
            raise InterfpredError(f"{what} (DataFrame): {exc}") from None
    raise _refuse(what, "Measurements", ("run", "gpu", "model", "batch_size", "solo_ms", "observed_ms"), obj)
