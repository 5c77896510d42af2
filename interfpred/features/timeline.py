"""Co-location timelines: sweep-line segmentation of a trace, per device.

A **segment** is a maximal interval during which the set of executions running on one device
does not change. Executions occupy half-open intervals ``[start_ms, end_ms)``, so a
zero-length execution has no segment at all. :func:`build_timeline` sweeps the sorted start
and end events in compiled (numba) code and returns a :class:`Timeline` of flat CSR arrays;
docs/concepts.md describes the layout and the conventions.

Examples
--------
>>> from interfpred import Trace
>>> t = Trace(id=[1, 2, 3], device=["g"] * 3, model=["m"] * 3, batch_size=[1] * 3,
...           start_ms=[0.0, 2.0, 5.0], end_ms=[4.0, 5.0, 6.0])
>>> tl = build_timeline(t)
>>> tl.seg_start, tl.seg_end
(array([0., 2., 4., 5.]), array([2., 4., 5., 6.]))
>>> [sorted(tl.running_set(s).tolist()) for s in range(tl.n_segments)]
[[0], [0, 1], [1], [2]]
>>> tl.exposure(1)
[(2.0, array([0])), (1.0, array([], dtype=int64))]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interfpred.constants import MAX_RUNNING_SET, TIMELINE_MAX_MEMBERS
from interfpred.data.frames import as_trace
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.features._sweep import exec_csr, sweep

__all__ = ["Timeline", "build_timeline"]


@dataclass(frozen=True, eq=False)
class Timeline:
    """Segments of every device of a trace and each execution's exposure (flat CSR arrays).

    Attributes
    ----------
    device_names
        The distinct device names, sorted; ``exec_device`` and ``seg_device`` index into it.
    exec_device
        (n,) int64: device code of each execution (trace row).
    seg_device, seg_start, seg_end
        (m,) int64 / float64: device code and interval ``[seg_start, seg_end)`` of each segment,
        sorted by (device, time).
    seg_ptr, seg_members
        (m + 1,) and (M,) int64: running set of segment ``s`` is
        ``seg_members[seg_ptr[s]:seg_ptr[s + 1]]`` (trace rows, in no particular order).
    exec_ptr, exec_segments
        (n + 1,) and (M,) int64: the segments of execution ``i`` in time order are
        ``exec_segments[exec_ptr[i]:exec_ptr[i + 1]]``; empty for a zero-length execution.

    Examples
    --------
    >>> from interfpred import Trace
    >>> t = Trace(id=[7, 8], device=["a", "b"], model=["m", "m"], batch_size=[1, 1],
    ...           start_ms=[0.0, 0.0], end_ms=[1.0, 1.0])
    >>> build_timeline(t).n_segments      # two devices: nobody shares
    2
    """

    device_names: tuple[str, ...]
    exec_device: np.ndarray
    seg_device: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    seg_ptr: np.ndarray
    seg_members: np.ndarray
    exec_ptr: np.ndarray
    exec_segments: np.ndarray

    @property
    def n_executions(self) -> int:
        """Number of executions (trace rows)."""
        return len(self.exec_device)

    @property
    def n_segments(self) -> int:
        """Number of (non-empty) segments over all devices."""
        return len(self.seg_start)

    @property
    def seg_duration(self) -> np.ndarray:
        """(m,) duration of each segment, ms."""
        return self.seg_end - self.seg_start

    @property
    def seg_count(self) -> np.ndarray:
        """(m,) number of executions running in each segment."""
        return np.diff(self.seg_ptr)

    def running_set(self, s: int) -> np.ndarray:
        """Trace rows running during segment ``s``."""
        if not 0 <= s < self.n_segments:
            raise InterfpredError(f"segment {s} does not exist; there are {self.n_segments}")
        return self.seg_members[self.seg_ptr[s]:self.seg_ptr[s + 1]]

    def segments_of(self, i: int) -> np.ndarray:
        """The segments execution (trace row) ``i`` meets, in time order."""
        if not 0 <= i < self.n_executions:
            raise InterfpredError(f"row {i} does not exist; the trace has {self.n_executions} rows")
        return self.exec_segments[self.exec_ptr[i]:self.exec_ptr[i + 1]]

    def exposure(self, i: int) -> list[tuple[float, np.ndarray]]:
        """Co-location timeline of row ``i``: ``(duration, co-runner rows)`` per segment.

        A convenience view built in Python; bulk work reads the CSR arrays directly.
        """
        out = []
        for s in self.segments_of(i):
            mem = self.running_set(int(s))
            out.append((float(self.seg_end[s] - self.seg_start[s]), np.sort(mem[mem != i])))
        return out


def _order(gcode: np.ndarray, times: np.ndarray, single_gpu: bool) -> np.ndarray:
    if single_gpu:
        if times.size < 2 or bool(np.all(times[1:] >= times[:-1])):
            return np.arange(times.size, dtype=np.int64)
        return np.argsort(times, kind="stable").astype(np.int64)
    return np.lexsort((times, gcode)).astype(np.int64)


def event_orders(gcode: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The executions of positive length ordered by (device, start) and by (device, end): the
    ``so`` and ``eo`` every compiled sweep takes. Package-internal."""
    n = len(start)
    live = np.flatnonzero(end > start)
    single = n == 0 or bool(np.all(gcode == gcode[0]))
    g = gcode[live]
    return live[_order(g, start[live], single)], live[_order(g, end[live], single)]


def refuse_crowd(stop: int, gcode: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
    """Raise for the row ``stop`` at which a sweep stopped (nothing when it is -1): more than
    MAX_RUNNING_SET executions at once, else more than TIMELINE_MAX_MEMBERS memberships stored."""
    if stop < 0:
        return
    running = int(np.count_nonzero((gcode == gcode[stop]) & (start <= start[stop]) & (end > start[stop])))
    if running > MAX_RUNNING_SET:
        raise InterfpredError(
            f"row {stop}: {running} executions run at once on one device at {float(start[stop])!r} ms, more than "
            f"MAX_RUNNING_SET={MAX_RUNNING_SET} (are start_ms/end_ms in milliseconds?)")
    raise InterfpredError(
        f"row {stop}: the timeline would hold more than TIMELINE_MAX_MEMBERS={TIMELINE_MAX_MEMBERS} "
        "(segment, execution) pairs; split the trace into shorter windows")


def segment_arrays(gcode: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
    """Segmentation of raw arrays (already validated): ``(seg_device, seg_start, seg_end, seg_ptr,
    seg_members)``. Package-internal, shared with the feature and entity computations."""
    so, eo = event_orders(gcode, start, end)
    *arrays, stop = sweep(gcode, start, end, so, eo, len(start), MAX_RUNNING_SET, TIMELINE_MAX_MEMBERS)
    refuse_crowd(stop, gcode, start, end)
    return tuple(arrays)


def trace_segments(trace: Trace, timeline: Timeline | None = None) -> tuple[np.ndarray, ...]:
    """``(seg_start, seg_end, seg_ptr, seg_members)`` of ``trace``: from ``timeline`` when given
    (it must have been built from this trace), else segmented here.

    Examples
    --------
    >>> from interfpred import Trace
    >>> t = Trace(id=[1, 2], device=["g"] * 2, model=["m"] * 2, batch_size=[1] * 2,
    ...           start_ms=[0.0, 1.0], end_ms=[2.0, 3.0])
    >>> [a.tolist() for a in trace_segments(t)[:3]]
    [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [0, 1, 3, 4]]
    """
    if timeline is not None:
        if not isinstance(timeline, Timeline) or timeline.n_executions != len(trace):
            raise InterfpredError("timeline was not built from this trace (row counts differ)")
        return timeline.seg_start, timeline.seg_end, timeline.seg_ptr, timeline.seg_members
    _, gcode = trace.codes("device")
    return segment_arrays(gcode, np.ascontiguousarray(trace.start_ms), np.ascontiguousarray(trace.end_ms))[1:]


def build_timeline(trace: Trace) -> Timeline:
    """Segment every device of ``trace`` with a sweep line (O(n log n)).

    Parameters
    ----------
    trace
        The executions; rows may be in any order, and several devices are segmented separately.

    Returns
    -------
    Timeline
        Segments with their running sets, and per execution its segments, as CSR arrays
        indexed by trace row.

    Examples
    --------
    >>> from interfpred import Trace
    >>> t = Trace(id=[1, 2, 3], device=["g"] * 3, model=["m"] * 3, batch_size=[1] * 3,
    ...           start_ms=[0.0, 1.0, 1.0], end_ms=[1.0, 3.0, 1.0])
    >>> tl = build_timeline(t)            # 1 ends where 2 starts; 3 has zero length
    >>> tl.n_segments, tl.segments_of(2).size
    (2, 0)
    """
    trace = as_trace(trace, what="build_timeline")
    names, gcode = trace.codes("device")
    start = np.ascontiguousarray(trace.start_ms, dtype=np.float64)
    end = np.ascontiguousarray(trace.end_ms, dtype=np.float64)
    seg_device, seg_start, seg_end, seg_ptr, members = segment_arrays(gcode, start, end)
    exec_ptr, exec_segments = exec_csr(seg_ptr, members, len(trace))
    arrays = (gcode.copy(), seg_device, seg_start, seg_end, seg_ptr, members, exec_ptr, exec_segments)
    for a in arrays:
        a.setflags(write=False)
    return Timeline(names, *arrays)
