"""The one running set of a device: slot storage, the device's clock, and the time rule every event obeys.

A :class:`RunningSet` keeps the ids of the running executions, the slot of each id, and per
slot its launch (model and batch size), a demand row ``[sm, l2, dram]``, a profile solo latency
and the extra columns that the objects sharing it register: the feature accumulators of
:class:`~interfpred.features.streaming.TimelineState`, the co-runner counts of
:class:`~interfpred.features.entity_features.RunningEntities`, the remaining work of the
tracker's projection. Slots ``0 .. len - 1`` are the running set in start order, except that
removing an execution moves the last slot into its place (swap remove), so per-slot arithmetic
stays a slice ``[:len]``. Capacity doubles when full. The set owns the device's clock
(:attr:`RunningSet.now`, moved by :meth:`RunningSet.move_clock`), calls the hooks the sharing
objects register when the clock moves, an execution starts or one leaves
(:meth:`RunningSet.on_clock`, :meth:`RunningSet.on_add`, :meth:`RunningSet.on_remove`), and
undoes an event that fails, or one that a late finish replays, for all of them at once
(:meth:`RunningSet.snapshot`, :meth:`RunningSet.restore`): no object that shares it keeps
state of its own that an event changes.

Examples
--------
>>> rs = RunningSet({"rem": ()})
>>> rs.add("x", "a", 1, (0.5, 0.25, 0.125), 2.0)
0
>>> rs.add("y", "b", 1, (0.25, 0.5, 0.5), 4.0)
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

__all__ = ["RunningSet", "RunningSetView", "check_share", "check_time", "grown", "is_real_number", "time_reason"]

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
    """Ids, slots, launches, demands, solo latencies and extra per-slot columns of a running set.

    Parameters
    ----------
    columns
        Extra per-slot columns: name -> trailing shape (``()`` for one value per slot, ``(d,)``
        for a row), or ``(shape, dtype)``; float64 by default. ``"model"`` (object),
        ``"batch_size"``, ``"demand"`` and ``"solo"`` always exist. New slots start at zero (False).

    Notes
    -----
    Every object that shares the set keeps its per-execution state in columns it registers
    (:meth:`register`, :meth:`widen`) and its per-device state in values it registers
    (:meth:`register_value`; a value is replaced, never changed in place), and reacts to the
    set's events through hooks: :meth:`on_clock` (the clock moves), :meth:`on_add` (an execution
    starts) and :meth:`on_remove` (one leaves). So :meth:`snapshot` and :meth:`restore` undo an
    event for all of them at once.

    The arrays (:attr:`demand`, :attr:`solo`, :meth:`column`) have the set's capacity as their
    first dimension; rows ``[:len(self)]`` are live. :meth:`add` may replace them by larger ones,
    so read them again after an ``add``. Nothing here validates ids or times: the owner does,
    before it changes anything.

    Examples
    --------
    >>> rs = RunningSet({"acc": (2,)})
    >>> rs.register("rem", ())
    >>> rs.register_value("events", 0)
    >>> rs.on_clock(lambda old, new: print(f"clock {old} -> {new}"))
    >>> rs.on_add(lambda a: print(f"slot {a} starts {rs.column('model')[a]}"))
    >>> rs.move_clock(1.0)
    clock None -> 1.0
    >>> saved = rs.snapshot()
    >>> _ = rs.add("x", "a", 8, (0.5, 0.25, 0.125), 2.0, rem=2.0)
    slot 0 starts a
    >>> rs.values["events"] = 1
    >>> rs.restore(saved)
    >>> len(rs), rs.now, rs.values["events"], sorted(rs.columns)
    (0, 1.0, 0, ['acc', 'batch_size', 'demand', 'model', 'rem', 'solo'])
    """

    __slots__ = ("_ids", "_tags", "_slot", "_cols", "_extra", "_dem", "_solo", "_model", "_batch", "_extra_arrays",
                 "_all_arrays", "_now", "_values", "_clock_hooks", "_add_hooks", "_remove_hooks", "_version")

    def __init__(self, columns: Mapping[str, Any] | None = None) -> None:
        cap = _INITIAL_CAPACITY
        self._ids: list[Any] = []
        self._tags: list[Any] = []
        self._slot: dict[Any, int] = {}
        self._cols: dict[str, np.ndarray] = {"model": np.zeros(cap, dtype=object), "batch_size": np.zeros(cap),
                                             "demand": np.zeros((cap, 3)), "solo": np.zeros(cap)}
        self._now: float | None = None
        self._version = 0
        self._values: dict[str, Any] = {}
        self._clock_hooks: list[Any] = []
        self._add_hooks: list[Any] = []
        self._remove_hooks: list[Any] = []
        for name, spec in (columns or {}).items():
            self._cols[name] = _column(cap, spec)
        self._extra = tuple(n for n in self._cols if n not in _BUILT_IN)
        self._sync()

    def register(self, name: str, spec: Any) -> None:
        """Add the per-slot column ``name`` (a trailing shape, or ``(shape, dtype)``, as the constructor
        takes them) for an object that shares the set; the running executions' values start at zero."""
        if name in self._cols:
            raise ValueError(f"the running set already has a column {name!r}")
        self._cols[name] = _column(self._dem.shape[0], spec)
        self._extra = tuple(n for n in self._cols if n not in _BUILT_IN)
        self._sync()

    def widen(self, name: str, width: int) -> np.ndarray:
        """The row column ``name`` with at least ``width`` entries per slot (new entries zero), widened in place
        of the old one when narrower (a vocabulary that grows); returns it."""
        arr = self._cols[name]
        if arr.shape[1] < width:
            out = np.zeros((arr.shape[0], width), dtype=arr.dtype)
            out[:, : arr.shape[1]] = arr
            self._cols[name] = arr = out
            self._sync()
        return arr

    def register_value(self, name: str, initial: Any) -> None:
        """Add the per-device value ``name`` (read and set through :attr:`values`), undone with the columns."""
        if name in self._values:
            raise ValueError(f"the running set already has a value {name!r}")
        self._values[name] = initial

    @property
    def values(self) -> dict[str, Any]:
        """The per-device values by name: set an entry to a new object, never change one in place (a
        snapshot keeps the objects themselves)."""
        return self._values

    # ------------------------------------------------------------------ the clock and the hooks
    @property
    def now(self) -> float | None:
        """Time of the device's latest event, ms (None before the first)."""
        return self._now

    def on_clock(self, hook: Any) -> None:
        """Call ``hook(old, new)`` every time :meth:`move_clock` moves the clock (``old`` None before the first
        event), before it moves and before the event changes the running set."""
        self._clock_hooks.append(hook)

    def on_add(self, hook: Any) -> None:
        """Call ``hook(slot)`` after every :meth:`add`, once the new slot holds its launch, demand and values."""
        self._add_hooks.append(hook)

    def on_remove(self, hook: Any) -> None:
        """Call ``hook(slot)`` at every :meth:`remove`, before the slot is dropped."""
        self._remove_hooks.append(hook)

    def move_clock(self, t: float) -> None:
        """Set the clock to ``t`` (the owner has checked it is not before :attr:`now`), after the hooks."""
        for hook in self._clock_hooks:
            hook(self._now, t)
        self._now = t

    # ------------------------------------------------------------------ undo
    def snapshot(self) -> tuple[Any, ...]:
        """What :meth:`restore` needs to put the set back as it is now (ids, slots, every column, every value,
        the clock)."""
        return (list(self._ids), list(self._tags), dict(self._slot), {n: a.copy() for n, a in self._cols.items()},
                self._now, dict(self._values))

    def restore(self, saved: tuple[Any, ...]) -> None:
        """Put the set back as it was at :meth:`snapshot` ``saved`` (which stays usable for another restore)."""
        ids, tags, slot, cols, now, values = saved
        self._ids = list(ids)
        self._tags = list(tags)
        self._slot = dict(slot)
        self._cols = {n: a.copy() for n, a in cols.items()}
        self._now = now
        self._values = dict(values)
        self._version += 1
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

    @property
    def version(self) -> int:
        """A count of the changes of membership (every add, remove and restore): equal versions of one set
        mean the same members in the same slots, so a reader can keep what it derived from them."""
        return self._version

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
        """The column ``name`` (capacity first)."""
        return self._cols[name]

    @property
    def columns(self) -> Mapping[str, np.ndarray]:
        """Every column by name, the built-in ones included (read it; do not add or remove entries)."""
        return self._cols

    # ------------------------------------------------------------------ changing
    def tag(self, a: int) -> Any:
        """What the owner attached to slot ``a`` when it was added (None if nothing)."""
        return self._tags[a]

    @property
    def tags(self) -> list[Any]:
        """The tags of the running executions in slot order (a copy)."""
        return self._tags[:]

    def add(self, id: Any, model: str, batch_size: float, demand: Any, solo: float, tag: Any = None,
            **values: Any) -> int:
        """Append running ``id`` (a launch of ``model`` at ``batch_size``) with its demand row, solo latency, an
        optional ``tag`` (any object) and the ``values`` of extra columns (by name; the others start at
        zero), then call the :meth:`on_add` hooks. Returns the new slot.
        """
        k = len(self._ids)
        if k == self._dem.shape[0]:
            self._grow()
        self._model[k] = model
        self._batch[k] = batch_size
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
        for hook in self._add_hooks:
            hook(k)
        self._version += 1              # after the hooks: nothing derived while they ran is kept
        return k

    def remove(self, id: Any) -> None:
        """Drop running ``id`` after the :meth:`on_remove` hooks: the last slot moves into its place."""
        a = self._slot[id]
        for hook in self._remove_hooks:
            hook(a)
        del self._slot[id]
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
        self._version += 1

    def _grow(self) -> None:
        cap = 2 * self._dem.shape[0]
        self._cols = {n: grown(a, cap) for n, a in self._cols.items()}
        self._sync()

    def _sync(self) -> None:
        """Point the shortcuts at the current arrays (after allocating, growing or restoring them)."""
        self._model = self._cols["model"]
        self._batch = self._cols["batch_size"]
        self._dem = self._cols["demand"]
        self._solo = self._cols["solo"]
        self._extra_arrays = tuple(self._cols[n] for n in self._extra)
        self._all_arrays = tuple(self._cols.values())

    def __repr__(self) -> str:
        return f"RunningSet(running={len(self._ids)}, columns={list(self._cols)})"


#: The columns every running set has (the rest are registered by the objects sharing it).
_BUILT_IN = frozenset({"model", "batch_size", "demand", "solo"})


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
