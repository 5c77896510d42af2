"""The projection's state on a device's running set: each member's remaining solo work and the rates it runs at.

A what-if projection starts from the running executions' remaining solo work (ms at solo speed).
:class:`RemainingWork` keeps it as a column of the device's
:class:`~interfpred.features.running_set.RunningSet` and keeps it current through the set's
hooks: a new execution starts with all of its solo work left, and whenever the clock moves the
work done since the last event is taken off at the rates the running set was predicted to run
at, floored at ``TRACKER_MIN_REMAINING`` of the solo latency (an execution that outlives its
projection is never "done" before it finishes). The predicted rates are a value of the set,
computed once per running set (lazily) and forgotten when an execution starts or leaves; so
the set's snapshot and restore undo all of it with the rest of the device's state.

Examples
--------
>>> import numpy as np
>>> from interfpred.features.running_set import RunningSet
>>> rs = RunningSet()
>>> work = RemainingWork(rs, lambda: np.full(len(rs), 0.5))      # everything at half speed
>>> _ = rs.add("x", "a", 1, (0.5, 0.5, 0.25), 2.0)
>>> work.rates()
array([0.5])
>>> rs.move_clock(0.0)
>>> rs.move_clock(1.0)            # 1 ms at half speed: 0.5 ms of solo work done
>>> work.at(1.0).tolist(), work.at(2.0).tolist()
([1.5], [1.0])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from interfpred._core.jit import njit
from interfpred.constants import TRACKER_MIN_REMAINING
from interfpred.features.running_set import RunningSet

__all__ = ["RemainingWork"]

#: The column of remaining solo work (ms) and the value of the current rates on the running set.
_REM, _RATES = "rem", "rates"


class RemainingWork:
    """Remaining solo work of the members of ``running_set``, integrated at the rates ``rates_of`` predicts.

    Parameters
    ----------
    running_set
        The device's running set; this registers a column, a value and its hooks on it.
    rates_of
        ``rates_of()``: the clamped predicted rates (k,) of the running set as it is now (called at
        most once per running set, when the rates are first needed; it may raise, before anything
        changes).
    """

    def __init__(self, running_set: RunningSet, rates_of: Callable[[], np.ndarray]) -> None:
        self._set = running_set
        self._rates_of = rates_of
        running_set.register(_REM, ())
        running_set.register_value(_RATES, None)
        running_set.on_clock(self._integrate)
        running_set.on_add(self._added)
        running_set.on_remove(self._removed)

    def rates(self) -> np.ndarray:
        """The predicted rates (k,) of the current running set (computed when first asked; do not change it)."""
        values = self._set.values
        rates = values[_RATES]
        if rates is None:
            rates = values[_RATES] = self._rates_of()
        return rates

    def current(self) -> np.ndarray:
        """(k,) remaining solo work at the latest event, ms (a view: copy it to keep it)."""
        return self._set.column(_REM)[: len(self._set)]

    def at(self, t: float, rates: np.ndarray | None = None) -> np.ndarray:
        """(k,) remaining solo work at ``t`` (not before the latest event), integrated at ``rates`` (default:
        the current ones) and floored; a new array."""
        rs = self._set
        k = len(rs)
        rem = rs.column(_REM)[:k].copy()
        now = rs.now
        if k and now is not None and t > now:
            rem -= (self.rates() if rates is None else rates) * (t - now)
            np.maximum(rem, TRACKER_MIN_REMAINING * rs.solo[:k], out=rem)
        return rem

    def inputs(self, t: float, n: int) -> tuple[np.ndarray, np.ndarray]:
        """A projection's inputs for the running set and ``n - k`` more members: new arrays ``dem`` (n, 3)
        and ``rem`` (n,) whose first k rows are the running set's demands and :meth:`at` ``t`` (the rest
        for the caller to fill), in one compiled pass.

        >>> from interfpred.features.running_set import RunningSet
        >>> rs = RunningSet()
        >>> work = RemainingWork(rs, lambda: np.full(len(rs), 0.5))
        >>> _ = rs.add("x", "a", 1, (0.5, 0.5, 0.25), 2.0)
        >>> rs.move_clock(0.0)
        >>> dem, rem = work.inputs(1.0, 2)
        >>> dem[:1].tolist(), rem[:1].tolist(), rem[:1].tolist() == work.at(1.0).tolist()
        ([[0.5, 0.5, 0.25]], [1.5], True)
        """
        rs = self._set
        k = len(rs)
        dem = np.empty((n, 3))
        rem = np.empty(n)
        if k:
            now = rs.now
            dt = t - now if now is not None and t > now else 0.0
            _fill_inputs(rs.demand, rs.column(_REM), self.rates() if dt > 0.0 else rs.solo, rs.solo, k, dt,
                         TRACKER_MIN_REMAINING, dem, rem)
        return dem, rem

    def _integrate(self, old: float | None, new: float) -> None:
        """The clock moves from ``old`` to ``new``, before the event changes the set: the work done up to
        ``new`` at the current rates (the event's caller computed them first) is taken off."""
        rs = self._set
        k = len(rs)
        if k and old is not None and new > old:
            rem = rs.column(_REM)[:k]
            rem -= self.rates() * (new - old)
            np.maximum(rem, TRACKER_MIN_REMAINING * rs.solo[:k], out=rem)

    def _added(self, a: int) -> None:
        """Slot ``a`` starts with all of its solo work left; the running set has new rates."""
        rs = self._set
        rs.column(_REM)[a] = rs.solo[a]
        rs.values[_RATES] = None

    def _removed(self, a: int) -> None:
        """An execution leaves: the running set has new rates."""
        self._set.values[_RATES] = None


@njit(cache=True)
def _fill_inputs(demand, rem0, rates, solo, k, dt, floor, dem, rem):
    """``dem[:k] = demand[:k]``; ``rem[:k]`` the remaining work ``dt`` ms on at ``rates``, floored at ``floor``
    times the solo latency (``dt`` 0: as it is). The arithmetic of :meth:`RemainingWork.at`, to the bit."""
    for a in range(k):
        dem[a, 0] = demand[a, 0]
        dem[a, 1] = demand[a, 1]
        dem[a, 2] = demand[a, 2]
    for a in range(k):
        r = rem0[a]
        if dt > 0.0:
            r = r - rates[a] * dt
            f = floor * solo[a]
            r = f if r < f else r          # NaN stays NaN, as np.maximum keeps it
        rem[a] = r
