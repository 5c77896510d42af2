"""The one running set of a device: slot storage, the device's clock, and the time rule every event obeys.

A :class:`RunningSet` keeps the ids of the running executions, the slot of each id, and per
slot a demand row ``[sm, l2, dram]``, a profile solo latency and the extra columns that the
objects sharing it register (feature accumulators for
:class:`~interfpred.features.streaming.TimelineState`, remaining work for the tracker, ...).
Slots ``0 .. len - 1`` are the running set in start order, except that removing an execution
moves the last slot into its place (swap remove), so per-slot arithmetic stays a slice
``[:len]``. Capacity doubles when full. The set owns the device's clock (:attr:`RunningSet.now`,
moved by :meth:`RunningSet.move_clock`, which first calls the hooks registered with
:meth:`RunningSet.on_clock`), and an event that fails is undone by the set itself
(:meth:`RunningSet.snapshot`, :meth:`RunningSet.restore`).

Examples
--------
>>> rs = RunningSet({"rem": ()})
>>> rs.add("x", (0.5, 0.25, 0.125), 2.0)
0
>>> rs.add("y", (0.25, 0.5, 0.5), 4.0)
1
>>> rs.remove("x")
>>> rs.ids, rs.slot("y"), rs.solo[: len(rs)].tolist()
(['y'], 0, [4.0])
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import numpy as np

from interfpred.constants import TIME_HORIZON_MS
from interfpred.errors import InterfpredError

__all__ = ["RunningSet", "RunningSetView", "check_share", "check_time", "grown", "is_real_number", "snapshot_state",
           "time_reason"]

#: Capacity of a fresh running set (doubles when full).
_INITIAL_CAPACITY = 8


def grown(arr: np.ndarray, cap: int) -> np.ndarray:
    """``arr`` copied into zeros of ``cap`` rows (same trailing shape and dtype): slot storage growth.

    >>> grown(np.array([[1.0, 2.0]]), 3)
    array([[1., 2.],
           [0., 0.],
           [0., 0.]])
    """
    out = np.zeros((cap, *arr.shape[1:]), dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


def is_real_number(value: Any) -> bool:
    """Whether ``value`` is a real number as every public method takes one: an int, a float or a numpy
    number, not a bool or a string.

    >>> is_real_number(2), is_real_number(np.float32(2.5)), is_real_number(True), is_real_number("2")
    (True, True, False, False)
    """
    if type(value) is float or type(value) is int:   # the common case, without the ABC check
        return True
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real)


def time_reason(t: Any, now: float | None = None) -> str | None:
    """Why ``t`` is refused as an event time, or None when it is one: a real number (not a bool or a
    string), finite, within ``TIME_HORIZON_MS`` of zero, and not before ``now`` (when given).

    Every time a tracker, a fleet or a timeline state is given passes this one rule.

    Examples
    --------
    >>> time_reason(3, 2.0) is None, time_reason("3"), time_reason(3e307)
    (True, "time '3' is not a number (a str)", 'time 3e+307 is beyond TIME_HORIZON_MS=4.5036e+12')
    """
    if not is_real_number(t):
        return f"time {t!r} is not a number (a {type(t).__name__})"
    try:
        tf = float(t)
    except OverflowError:   # an int too large for a float
        return f"time {t!r} is beyond TIME_HORIZON_MS={TIME_HORIZON_MS:g}"
    if not math.isfinite(tf):
        return f"time {t!r} is not finite"
    if abs(tf) > TIME_HORIZON_MS:
        return f"time {tf!r} is beyond TIME_HORIZON_MS={TIME_HORIZON_MS:g}"
    if now is not None and tf < now:
        return f"time {tf!r} is before the latest event at {now!r}"
    return None


def check_time(t: Any, what: str, now: float | None) -> float:
    """``t`` as a float event time, refused (``what`` names the event) by the rule of :func:`time_reason`.

    Examples
    --------
    >>> check_time(3, "start of id 1", 2.0)
    3.0
    >>> check_time(1.0, "start of id 1", 2.0)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: start of id 1 refused: time 1.0 is before the latest event at 2.0
    """
    reason = time_reason(t, now)
    if reason is not None:
        raise InterfpredError(f"{what} refused: {reason}")
    return float(t)


def check_share(share: Any, what: str) -> float:
    """``share`` as a float MPS active thread percentage in (0, 100], refused (``what`` names the call)
    otherwise: a bool, a string, NaN, 0 or 150 (the rule of a trace's share column).

    >>> check_share(50, "start of id 1")
    50.0
    >>> check_share(True, "start of id 1")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: start of id 1 refused: share True is not an MPS active thread percentage in (0, 100]
    """
    if is_real_number(share) and 0 < share <= 100:
        return float(share)
    raise InterfpredError(f"{what} refused: share {share!r} is not an MPS active thread percentage in (0, 100]")


class RunningSet:
    """Ids, slots, demands, solo latencies and extra per-slot columns of a running set.

    Parameters
    ----------
    columns
        Extra per-slot columns: name -> trailing shape (``()`` for one value per slot, ``(d,)``
        for a row), or ``(shape, dtype)``; float64 by default. ``"demand"`` and ``"solo"`` always
        exist. New slots start at zero (False).

    Notes
    -----
    The arrays (:attr:`demand`, :attr:`solo`, :meth:`column`) have the set's capacity as their
    first dimension; rows ``[:len(self)]`` are live. :meth:`add` may replace them by larger ones,
    so read them again after an ``add``. Nothing here validates ids or times: the owner does,
    before it changes anything.

    Examples
    --------
    >>> rs = RunningSet({"acc": (2,)})
    >>> rs.register("rem", ())
    >>> rs.on_clock(lambda old, new: print(f"clock {old} -> {new}"))
    >>> rs.move_clock(1.0)
    clock None -> 1.0
    >>> saved = rs.snapshot()
    >>> _ = rs.add("x", (0.5, 0.25, 0.125), 2.0, rem=2.0)
    >>> rs.restore(saved)
    >>> len(rs), rs.now, sorted(rs.columns)
    (0, 1.0, ['acc', 'demand', 'rem', 'solo'])
    """

    __slots__ = ("_ids", "_tags", "_slot", "_cols", "_extra", "_dem", "_solo", "_extra_arrays", "_all_arrays",
                 "_now", "_clock_hooks")

    def __init__(self, columns: Mapping[str, Any] | None = None) -> None:
        cap = _INITIAL_CAPACITY
        self._ids: list[Any] = []
        self._tags: list[Any] = []
        self._slot: dict[Any, int] = {}
        self._cols: dict[str, np.ndarray] = {"demand": np.zeros((cap, 3)), "solo": np.zeros(cap)}
        self._now: float | None = None
        self._clock_hooks: list[Any] = []
        for name, spec in (columns or {}).items():
            self._cols[name] = _column(cap, spec)
        self._extra = tuple(n for n in self._cols if n not in ("demand", "solo"))
        self._sync()

    def register(self, name: str, spec: Any) -> None:
        """Add the per-slot column ``name`` (a trailing shape, or ``(shape, dtype)``, as the constructor
        takes them) for an object that shares the set; the running executions' values start at zero."""
        if name in self._cols:
            raise ValueError(f"the running set already has a column {name!r}")
        self._cols[name] = _column(self._dem.shape[0], spec)
        self._extra = tuple(n for n in self._cols if n not in ("demand", "solo"))
        self._sync()

    # ------------------------------------------------------------------ the clock
    @property
    def now(self) -> float | None:
        """Time of the device's latest event, ms (None before the first)."""
        return self._now

    def on_clock(self, hook: Any) -> None:
        """Call ``hook(old, new)`` every time :meth:`move_clock` moves the clock (``old`` None before the first
        event), before it moves and before the event changes the running set."""
        self._clock_hooks.append(hook)

    def move_clock(self, t: float) -> None:
        """Set the clock to ``t`` (the owner has checked it is not before :attr:`now`), after the hooks."""
        for hook in self._clock_hooks:
            hook(self._now, t)
        self._now = t

    # ------------------------------------------------------------------ undo
    def snapshot(self) -> tuple[Any, ...]:
        """What :meth:`restore` needs to put the set back as it is now (ids, slots, every column, the clock)."""
        return (list(self._ids), list(self._tags), dict(self._slot), {n: a.copy() for n, a in self._cols.items()},
                self._now)

    def restore(self, saved: tuple[Any, ...]) -> None:
        """Put the set back as it was at :meth:`snapshot` ``saved`` (which stays usable for another restore)."""
        ids, tags, slot, cols, now = saved
        self._ids = list(ids)
        self._tags = list(tags)
        self._slot = dict(slot)
        self._cols = {n: a.copy() for n, a in cols.items()}
        self._now = now
        self._sync()

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, id: Any) -> bool:
        try:
            return id in self._slot
        except TypeError:
            return False

    @property
    def ids(self) -> list[Any]:
        """Ids of the running executions in slot order (a copy)."""
        return list(self._ids)

    def first_ids(self, n: int) -> list[Any]:
        """The ids of the first ``n`` slots (for error messages)."""
        return self._ids[:n]

    def slot(self, id: Any) -> int:
        """The slot of running ``id`` (KeyError when it is not running)."""
        return self._slot[id]

    @property
    def demand(self) -> np.ndarray:
        """(capacity, 3) demand rows; ``[:len(self)]`` are the running set's."""
        return self._dem

    @property
    def solo(self) -> np.ndarray:
        """(capacity,) profile solo latencies, ms."""
        return self._solo

    def column(self, name: str) -> np.ndarray:
        """The extra column ``name`` (capacity first)."""
        return self._cols[name]

    @property
    def columns(self) -> Mapping[str, np.ndarray]:
        """Every column by name, ``"demand"`` and ``"solo"`` included (read it; do not add or remove entries)."""
        return self._cols

    # ------------------------------------------------------------------ changing
    def tag(self, a: int) -> Any:
        """What the owner attached to slot ``a`` when it was added (None if nothing)."""
        return self._tags[a]

    @property
    def tags(self) -> list[Any]:
        """The tags of the running executions in slot order (a copy)."""
        return self._tags[:]

    def add(self, id: Any, demand: Any, solo: float, tag: Any = None, **values: Any) -> int:
        """Append running ``id`` with its demand row, solo latency, an optional ``tag`` (any object) and
        the ``values`` of extra columns (by name; the others start at zero). Returns the new slot.
        """
        k = len(self._ids)
        if k == self._dem.shape[0]:
            self._grow()
        self._dem[k] = demand
        self._solo[k] = solo
        for arr in self._extra_arrays:
            arr[k] = 0
        if values:
            cols = self._cols
            for name, v in values.items():
                cols[name][k] = v
        self._ids.append(id)
        self._tags.append(tag)
        self._slot[id] = k
        return k

    def remove(self, id: Any) -> None:
        """Drop running ``id``: the last slot moves into its place."""
        a = self._slot.pop(id)
        last = len(self._ids) - 1
        if a != last:
            for arr in self._all_arrays:
                arr[a] = arr[last]
            moved = self._ids[last]
            self._ids[a] = moved
            self._tags[a] = self._tags[last]
            self._slot[moved] = a
        self._ids.pop()
        self._tags.pop()

    def _grow(self) -> None:
        cap = 2 * self._dem.shape[0]
        self._cols = {n: grown(a, cap) for n, a in self._cols.items()}
        self._sync()

    def _sync(self) -> None:
        """Point the shortcuts at the current arrays (after allocating or growing them)."""
        self._dem = self._cols["demand"]
        self._solo = self._cols["solo"]
        self._extra_arrays = tuple(self._cols[n] for n in self._extra)
        self._all_arrays = tuple(self._cols.values())

    def __repr__(self) -> str:
        return f"RunningSet(running={len(self._ids)}, columns={list(self._cols)})"


def _column(cap: int, spec: Any) -> np.ndarray:
    """Zeros of ``cap`` rows for a column given as a trailing shape or ``(shape, dtype)``."""
    shape, dtype = spec if (len(spec) == 2 and not isinstance(spec[0], int)) else (spec, np.float64)
    return np.zeros((cap, *shape), dtype=dtype)


class RunningSetView(ABC):
    """What every object built on one device's :class:`RunningSet` answers the same way: the clock, the
    size, membership and the running ids, read from the set (the class using it gives ``running_set``)."""

    @property
    @abstractmethod
    def running_set(self) -> RunningSet:
        """The device's running set."""

    @property
    def now(self) -> float | None:
        """Time of the latest event, ms (None before the first)."""
        return self.running_set.now

    def __len__(self) -> int:
        return len(self.running_set)

    def __contains__(self, id: Any) -> bool:
        return id in self.running_set

    @property
    def running(self) -> list[Any]:
        """Ids of the running executions, in slot order (start order, except that a finish moves the last
        slot into the finished one's place)."""
        return self.running_set.ids


#: Kinds of attribute :func:`snapshot_state` copies (a running set is shared: it undoes itself).
_COPIED = frozenset({np.ndarray, list, dict, set})
#: (class, attribute count) -> names of the attributes holding arrays or containers.
_SNAPSHOT_NAMES: dict[tuple[type, int], tuple[str, ...]] = {}


def snapshot_state(obj: Any) -> dict[str, Any]:
    """A copy of ``obj``'s attributes deep enough to undo a failed event (arrays and containers copied; a
    :class:`RunningSet` is kept by reference, since it is shared and undone by its own
    :meth:`~RunningSet.restore`); ``obj.__dict__.update(snapshot)`` puts them back."""
    attrs = obj.__dict__
    key = (type(obj), len(attrs))
    names = _SNAPSHOT_NAMES.get(key)
    if names is None:
        names = _SNAPSHOT_NAMES[key] = tuple(k for k, v in attrs.items() if type(v) in _COPIED)
    out = attrs.copy()
    for k in names:
        v = out[k]
        if type(v) in _COPIED:
            out[k] = v.copy()
    return out
