"""Rows that arrive a few at a time, held until the context they ran in is known.

A row's features depend on what ran beside it: a measurement row's co-runners are the other
members of its run, a trace row's are the executions that overlapped it on its device. When rows
reach :meth:`~interfpred.InterferenceModel.update` one at a time, that context is spread over
several calls. :class:`UpdateStream` keeps the rows seen so far that a later row may still need,
and hands a row over for learning once its context is complete:

- a **measurement row** waits until its run is over: a row of another run on the same GPU arrives
  (runs on one GPU are measured one after another), or :meth:`UpdateStream.flush` is called;
- a **trace row** ``[start, end)`` waits until a row on its device starting at or after ``end``
  arrives: rows on a device come in start order (a trace's order), so every execution that
  overlapped it has been seen by then.

A row that would change the context of a row already learned is refused: a member of a run that
is over, or a trace row starting before the latest start already seen on its device.

Examples
--------
>>> import numpy as np
>>> from interfpred import Measurements
>>> s = UpdateStream()
>>> rows = Measurements.from_columns(run=["r1", "r1", "r2"], gpu=["g"] * 3, model=["a", "b", "a"],
...     batch_size=[8, 4, 8], solo_ms=[10.0, 5.0, 10.0], observed_ms=[15.0, 6.0, 10.0])
>>> [[m.run.tolist() for m in s.add(measurements=rows.take([i]))[1]] for i in range(3)]   # r1 ends as r2 begins
[[], [], [['r1', 'r1']]]
>>> s.n_pending, [m.run.tolist() for m in s.flush()[1]]
(1, [['r2']])
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from interfpred.constants import STREAM_CLOSED_RUNS_KEPT
from interfpred.data.measurements import Measurements
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError

__all__ = ["UpdateStream"]

#: What :meth:`UpdateStream.add` and :meth:`UpdateStream.flush` hand over: a trace of context rows with
#: the indices of the rows to learn in it (or None), then complete runs to learn, oldest first.
Ready = tuple[tuple[Trace, np.ndarray] | None, list[Measurements]]


class UpdateStream:
    """The context of rows given to ``update`` a few at a time (see the module docstring).

    State is bounded: per device the executions that can still overlap a waiting or future row,
    per GPU the open run, and the labels of the last ``STREAM_CLOSED_RUNS_KEPT`` runs learned (a
    member of an older run is no longer recognised as late).
    """

    def __init__(self) -> None:
        self._trace: Trace | None = None           # rows kept for context, waiting ones included
        self._waiting: np.ndarray = np.zeros(0, dtype=bool)
        self._latest_start: dict[str, float] = {}  # per device
        self._open: dict[str, Measurements] = {}   # per GPU: the run whose members still arrive
        self._closed: OrderedDict[str, str] = OrderedDict()   # run label -> the run that closed it
        self._just_closed: list[str] = []                      # closed by the call under way (undone if refused)

    @property
    def n_pending(self) -> int:
        """Rows seen but not yet handed over for learning (their context may still grow)."""
        return int(self._waiting.sum()) + sum(len(m) for m in self._open.values())

    def add(self, trace: Trace | None = None, measurements: Measurements | None = None) -> Ready:
        """Take new rows; return those whose context is now complete.

        Raises
        ------
        InterfpredError
            A row that would change a learned row's context (nothing is taken then).
        """
        if trace is not None and len(trace):
            self._check_trace(trace)
        if measurements is not None and len(measurements):
            self._check_runs(measurements)
        saved = (self._trace, self._waiting, dict(self._latest_start), dict(self._open))
        self._just_closed = []
        try:
            ready_trace = None if trace is None or not len(trace) else self._add_trace(trace)
            runs = [] if measurements is None or not len(measurements) else self._add_runs(measurements)
        except BaseException:   # a refused row (a duplicate member, ids seen before) leaves the stream as it was
            self._trace, self._waiting, self._latest_start, self._open = saved
            for run in self._just_closed:
                self._closed.pop(run, None)
            raise
        return ready_trace, runs

    def flush(self) -> Ready:
        """Hand over every waiting row with the context seen so far (the stream ends), and forget it."""
        ready = None
        if self._trace is not None and self._waiting.any():
            ready = (self._trace, np.flatnonzero(self._waiting))
        runs = list(self._open.values())
        self._just_closed = []
        for m in runs:
            self._remember_closed(str(m.run[0]), "flush")
        self._trace, self._waiting = None, np.zeros(0, dtype=bool)
        self._latest_start.clear()
        self._open.clear()
        return ready, runs

    # ------------------------------------------------------------------ trace rows
    def _check_trace(self, trace: Trace) -> None:
        for dev in np.unique(trace.device):
            seen = self._latest_start.get(str(dev))
            if seen is None:
                continue
            rows = np.flatnonzero(trace.device == dev)
            i = int(rows[np.argmin(trace.start_ms[rows])])
            if trace.start_ms[i] < seen:
                raise InterfpredError(
                    f"{trace.where(i)} on device {str(dev)!r} starts at {trace.start_ms[i]:g} ms, before the latest "
                    f"start already seen there ({seen:g} ms), so the executions it overlapped may be learned "
                    "without it: pass trace rows in start order per device (as a trace is sorted), rows that "
                    "overlap in one call, or feed a live GPU to ColocationTracker (start, then finish)")

    def _add_trace(self, trace: Trace) -> tuple[Trace, np.ndarray] | None:
        if self._trace is None:
            kept, waiting = trace, np.ones(len(trace), dtype=bool)
        else:
            try:
                kept = Trace.concat([self._trace, trace])
            except InterfpredError as exc:
                raise InterfpredError(f"these trace rows do not continue the ones seen before: {exc}") from None
            waiting = np.concatenate([self._waiting, np.ones(len(trace), dtype=bool)])
        for dev in np.unique(trace.device):
            on = trace.device == dev
            self._latest_start[str(dev)] = max(self._latest_start.get(str(dev), -np.inf),
                                               float(trace.start_ms[on].max()))
        latest = np.array([self._latest_start[str(d)] for d in kept.device], dtype=np.float64)
        complete = waiting & (kept.end_ms <= latest)
        ready = (kept, np.flatnonzero(complete)) if complete.any() else None
        waiting = waiting & ~complete
        # keep what can still overlap a waiting row or a future one (future rows start at or after `latest`)
        horizon = latest.copy()
        for dev in np.unique(kept.device):
            on = kept.device == dev
            if (waiting & on).any():
                horizon[on] = min(float(latest[on][0]), float(kept.start_ms[waiting & on].min()))
        keep = waiting | (kept.end_ms > horizon)
        self._trace = kept.take(keep) if keep.any() else None
        self._waiting = waiting[keep]
        return ready

    # ------------------------------------------------------------------ measurement rows
    def _check_runs(self, measurements: Measurements) -> None:
        for i, run in enumerate(measurements.run):
            closer = self._closed.get(str(run))
            if closer is not None:
                what = "flush()" if closer == "flush" else f"run {closer!r} began on its GPU"
                raise InterfpredError(
                    f"row {i} (run {str(run)!r}, model {measurements.model[i]!r}): run {str(run)!r} was learned "
                    f"already (when {what}), so this member would come after its co-runners were learned "
                    "without it: pass a run's members in one call or one after another, before the next run "
                    "on that GPU")

    def _add_runs(self, measurements: Measurements) -> list[Measurements]:
        done = []
        first_row: dict[str, int] = {}
        for i, run in enumerate(measurements.run):
            first_row.setdefault(str(run), i)
        fresh = []
        for run, i in first_row.items():     # members of a run still open join it first, wherever they come
            gpu = str(measurements.gpu[i])
            current = self._open.get(gpu)
            if current is not None and str(current.run[0]) == run:
                self._open[gpu] = Measurements.concat([current, measurements.take(measurements.run == run)])
            else:
                fresh.append((run, gpu))
        for run, gpu in fresh:               # then new runs, in the order their first member arrived
            part = measurements.take(measurements.run == run)
            current = self._open.get(gpu)
            if current is not None:
                done.append(current)
                self._remember_closed(str(current.run[0]), run)
            self._open[gpu] = part
        return done

    def _remember_closed(self, run: str, closer: str) -> None:
        self._closed[run] = closer
        self._just_closed.append(run)
        while len(self._closed) > STREAM_CLOSED_RUNS_KEPT:
            self._closed.popitem(last=False)
