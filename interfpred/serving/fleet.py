"""Placement over several devices: one :class:`~interfpred.serving.tracker.ColocationTracker` per device, deadlines.

A *device* is one GPU instance (``"gpu0"``); the trackers' ``gpu`` is the GPU *type* their
profiles describe (``"l4"``). :meth:`Fleet.choose_device` answers "on which device can this batch
start now so that it, and everything already running, is projected to finish by its deadline?"
(each running execution's deadline is recorded when it starts). A device is feasible when it runs
fewer than ``max_running`` executions and every projected end ``e`` meets its deadline ``D`` with the safety margin, ``t + (e - t) * (1 +
margin) <= D``; among feasible devices the one where the launch adds the least projected latency
wins, ties (within ``FLEET_TIE_RTOL``) going to the least loaded device
(:mod:`interfpred.serving.placement`; docs/embedding.md); :meth:`Fleet.start` refuses a launch on a
device already running ``max_running``. Each device keeps its own clock; :attr:`Fleet.now` is the
latest of them and :meth:`Fleet.advance` brings the others forward. Every refusal reads
``Fleet.<method>: [device 'gpu0': ]reason``. Every public method holds one re-entrant lock.

Examples
--------
>>> from interfpred import RLS
>>> from interfpred.sim.zoo import zoo_profiles
>>> fleet = Fleet.from_profiles(zoo_profiles("l4"), lambda: RLS().fit([[0.0] * 16, [1.0] * 16], [1.0, 0.5]),
...                           devices=["gpu0", "gpu1"])   # a toy model: the more pressure, the slower
>>> fleet.start("gpu0", "r1", "vgg19", 8, 0.0, deadline=100.0)
>>> fleet.choose_device(("c1", "resnet50", 4), deadline=50.0, t=1.0)   # gpu1 is idle: no delay to others
'gpu1'
>>> fleet.choose_device(("c1", "resnet50", 4), deadline=0.5, t=1.0)
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: Fleet.choose_device: deadline 0.5 is before t 1.0 (a deadline in the past)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from interfpred.constants import FLEET_MARGIN, FLEET_TIE_RTOL, QUANTILE_LEVEL_ATOL, TRACKER_LATE_WINDOW_MS
from interfpred.data.frames import as_profiles
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import check_batch_size
from interfpred.errors import InterfpredError
from interfpred.features import Extractor
from interfpred.features.running_set import is_real_number, time_reason
from interfpred.predictors import get_tags
from interfpred.serving.placement import PlacementCache, added_latency, least_added_latency, meets_deadlines
from interfpred.serving.tracker import ColocationTracker, FinishResult

__all__ = ["Fleet"]



def _check_hashable(id: Any, method: str) -> None:
    """An execution id must be hashable (it keys the running set)."""
    try:
        hash(id)
    except TypeError:
        raise InterfpredError(f"Fleet.{method}: id {id!r} is not hashable; ids are numbers or strings") from None


def _check_bounds(device: str, tracker: ColocationTracker, quantile: float) -> None:
    """Refuse a tracker whose predictor cannot give the latency bound at ``quantile`` (before any placement)."""
    p = tracker.predictor
    if not get_tags(p).gives_bounds:
        raise InterfpredError(f"quantile {quantile:g}: the tracker of device {device!r} holds {type(p).__name__}, "
                              "which gives no quantiles; wrap its predictor in interfpred.Calibrated(..., "
                              f"quantiles=({quantile:g},)) or pass quantile=None")
    levels = np.asarray(p.levels_, dtype=np.float64)   # tags.gives_bounds says it has them
    if not (np.abs(levels - quantile) < QUANTILE_LEVEL_ATOL).any():
        known = ", ".join(f"{v:g}" for v in levels)
        raise InterfpredError(f"quantile {quantile:g}: the Calibrated predictor of device {device!r} calibrates "
                              f"the levels {known}, not {quantile:g}; build it with quantiles=({quantile:g},)")


class Fleet:
    """Several devices (GPU instances), one tracker each, with deadline-aware placement.

    Parameters
    ----------
    trackers
        Device name -> its :class:`ColocationTracker` (distinct objects).
    margin
        Safety margin on projected remaining times (see the module docstring), >= 0.
    max_running
        Most executions a device may run at once (None: only the trackers' own limit).
    quantile
        Project at the trackers' latency bound at this quantile instead of the mean (their
        predictors must be :class:`~interfpred.Calibrated` with this quantile among their
        ``quantiles``, checked here); None: the mean.

    Examples
    --------
    >>> from interfpred import RLS, ColocationTracker
    >>> from interfpred.sim.zoo import zoo_profiles
    >>> prof = zoo_profiles("l4")
    >>> fleet = Fleet({"a": ColocationTracker(prof, RLS()), "b": ColocationTracker(prof, RLS())}, max_running=1)
    >>> fleet.start("a", 1, "vgg19", 4, 0.0, deadline=80.0)
    >>> fleet.start("b", 2, "vgg19", 4, 0.0, deadline=80.0)
    >>> fleet.choose_device((3, "yolov8n", 1), 60.0, 1.0) is None     # both full
    True
    """

    def __init__(self, trackers: Mapping[str, ColocationTracker], *, margin: float = FLEET_MARGIN,
                 max_running: int | None = None, quantile: float | None = None) -> None:
        if not isinstance(trackers, Mapping) or not trackers:
            raise InterfpredError("trackers must be a non-empty mapping device name -> ColocationTracker")
        seen: set[int] = set()
        for name, tr in trackers.items():
            if not isinstance(tr, ColocationTracker):
                raise InterfpredError(f"tracker of device {name!r} is a {type(tr).__name__}, not a ColocationTracker")
            if id(tr) in seen:
                raise InterfpredError(f"device {name!r} shares its tracker with another device; give each its own")
            seen.add(id(tr))
        if time_reason(margin) is not None or margin < 0:   # a finite real number (not a bool, str or 10**400)
            raise InterfpredError(f"margin {margin!r} must be a finite number >= 0")
        m = float(margin)
        if max_running is not None and (isinstance(max_running, bool) or not isinstance(max_running, int)
                                        or max_running < 1):
            raise InterfpredError(f"max_running {max_running!r} must be a positive integer or None")
        self._trackers = dict(trackers)
        self.margin = m
        self.max_running = max_running
        if quantile is not None and not (is_real_number(quantile) and 0.0 < float(quantile) < 1.0):
            raise InterfpredError(f"quantile {quantile!r} must be a number in (0, 1) or None")
        self.quantile = None if quantile is None else float(quantile)
        if self.quantile is not None:
            for name, tr in self._trackers.items():
                _check_bounds(name, tr, self.quantile)
        self._where: dict[Any, tuple[str, float]] = {}   # running id -> (device, deadline)
        # the latest device clock, kept by every event (clocks only move forward)
        self._clock_max = max((tr.now for tr in self._trackers.values() if tr.now is not None), default=-math.inf)
        self._lock = threading.RLock()
        # per-device projections between events, for choose_device; a device's own predictor changes only
        # on its own finish, so its weights are kept with its block
        self._placement = PlacementCache(own_predictors=len({id(tr.predictor) for tr in self._trackers.values()})
                                         == len(self._trackers))

    @classmethod
    def from_profiles(cls, profiles: ProfileTable, predictor_factory: Callable[[], Any], *,
                      devices: Sequence[str], extractor: Extractor | None = None, gpu: str | None = None,
                      shared_predictor: bool = False, late_window_ms: float = TRACKER_LATE_WINDOW_MS,
                      **kwargs: Any) -> Fleet:
        """A fleet of identical devices named ``devices``, each with a tracker on ``profiles``.

        ``predictor_factory()`` builds each tracker's predictor (or one shared by all when
        ``shared_predictor``: the fleet then learns one model from every device; use it from one
        thread). ``gpu`` picks the profile table's GPU type and ``late_window_ms`` is every
        tracker's (:class:`ColocationTracker`); other keywords go to :class:`Fleet`.
        """
        names = list(devices)
        if not names or len(set(names)) != len(names):
            raise InterfpredError(f"devices {names!r} must be distinct names, at least one")
        profiles = as_profiles(profiles)
        shared = predictor_factory() if shared_predictor else None
        trackers = {d: ColocationTracker(profiles, shared if shared is not None else predictor_factory(), extractor,
                                         gpu=gpu, late_window_ms=late_window_ms) for d in names}
        return cls(trackers, **kwargs)

    # ------------------------------------------------------------------ reading
    @property
    def trackers(self) -> dict[str, ColocationTracker]:
        """Device name -> tracker (a copy of the mapping)."""
        return dict(self._trackers)

    @property
    def devices(self) -> tuple[str, ...]:
        """Device names in the order ties are broken."""
        return tuple(self._trackers)

    @property
    def now(self) -> float | None:
        """The fleet's clock: the latest of the devices' clocks (each its latest event), ms; None before any event.

        Each device keeps its own clock, so clocks may diverge (events are stamped by whoever
        saw them). An event on a device may not be stamped before that device's clock (a late
        finish or cancel within its tracker's ``late_window_ms`` excepted); a question
        (:meth:`choose_device`, :meth:`assess`) at ``t`` needs ``t`` at or after the clock of
        every device it asks, so ``t >= now``. :meth:`advance` brings lagging clocks forward.
        """
        with self._lock:
            clocks = [tr.now for tr in self._trackers.values() if tr.now is not None]
            return max(clocks) if clocks else None

    def where(self, id: Any) -> str | None:
        """The device running ``id``, or None."""
        _check_hashable(id, "where")
        entry = self._where.get(id)
        return None if entry is None else entry[0]

    def deadline(self, id: Any) -> float:
        """The deadline recorded for running ``id``."""
        _check_hashable(id, "deadline")
        if id not in self._where:
            raise InterfpredError(f"Fleet.deadline: id {id!r} is not running on this fleet")
        return self._where[id][1]

    def _deadline_or_none(self, id: Any) -> float | None:
        entry = self._where.get(id)
        return None if entry is None else entry[1]

    # ------------------------------------------------------------------ checks (one wording: Fleet.<method>: ...)
    @staticmethod
    def _fail(method: str, reason: str, device: str | None = None) -> InterfpredError:
        where = "" if device is None else f"device {device!r}: "
        return InterfpredError(f"Fleet.{method}: {where}{reason}")

    def _check_time(self, t: Any, method: str, devices: Sequence[str] = ()) -> float:
        """``t`` by the trackers' time rule, and not before the clock of any of ``devices``."""
        reason = time_reason(t)
        if reason is not None:
            raise self._fail(method, reason)
        tf = float(t)
        if len(devices) > 1 and tf >= self._clock_max:     # at or after every clock: no device to ask
            return tf
        for name in devices:
            reason = time_reason(t, self._trackers[name].now)
            if reason is not None:
                raise self._fail(method, reason, name)
        return tf

    def _moved(self, device: str) -> None:
        """After an event on ``device``: its placement block is stale, and its clock may be the latest."""
        self._placement.invalidate(device)
        now = self._trackers[device].now
        if now is not None and now > self._clock_max:
            self._clock_max = now

    def _check_deadline(self, deadline: Any, tf: float, method: str) -> float:
        """A deadline: ``inf`` (none) or a time by the trackers' rule, not before ``tf``."""
        if not is_real_number(deadline):
            raise self._fail(method, f"deadline {deadline!r} is not a number (a {type(deadline).__name__})")
        if deadline != deadline:
            raise self._fail(method, f"deadline {deadline!r} is NaN")
        if deadline != math.inf:
            reason = time_reason(deadline)
            if reason is not None:
                raise self._fail(method, reason.replace("time", "deadline", 1))
        d = float(deadline)
        if d < tf:
            raise self._fail(method, f"deadline {d!r} is before t {tf!r} (a deadline in the past)")
        return d

    def _check_candidate(self, candidate: Any, method: str) -> tuple[Any, str, int]:
        """``(id, model, batch_size)``: a triple with a hashable id not running here and a batch size by the rule."""
        if not isinstance(candidate, (tuple, list)) or len(candidate) != 3:
            raise self._fail(method, f"candidate {candidate!r} must be (id, model, batch_size)")
        cid, model, batch = candidate
        try:
            entry = self._where.get(cid)
        except TypeError:
            raise self._fail(method, f"candidate id {cid!r} is not hashable") from None
        if entry is not None:
            raise self._fail(method, f"candidate id {cid!r} is already running", entry[0])
        try:
            return cid, model, check_batch_size(batch, f"candidate {cid!r}")
        except InterfpredError as exc:
            raise self._fail(method, str(exc)) from None

    def _tracker(self, device: Any, method: str) -> ColocationTracker:
        try:
            return self._trackers[device]
        except (KeyError, TypeError):
            raise self._fail(method, f"unknown device {device!r}; devices: {', '.join(self._trackers)}") from None

    @contextmanager
    def _on(self, method: str, device: str) -> Iterator[None]:
        """A tracker's refusal, reworded to name the fleet method and the device."""
        try:
            yield
        except InterfpredError as exc:
            raise self._fail(method, str(exc), device) from None

    # ------------------------------------------------------------------ events
    def start(self, device: str, id: Any, model: str, batch_size: int, t: float, *,
              deadline: float = math.inf) -> None:
        """Launch ``id`` on ``device`` at ``t`` with its ``deadline`` (ms; default none).

        Raises
        ------
        InterfpredError
            Unknown device, id running anywhere in the fleet, ``t`` not a time or before the
            device's clock, deadline before ``t``, the device running ``max_running`` already,
            or whatever the tracker refuses; nothing changes.
        """
        with self._lock:
            tr = self._tracker(device, "start")
            tf = self._check_time(t, "start", (device,))
            d = self._check_deadline(deadline, tf, "start")
            try:
                entry = self._where.get(id)
            except TypeError:
                raise self._fail("start", f"id {id!r} is not hashable") from None
            if entry is not None:
                raise self._fail("start", f"id {id!r} is already running", entry[0])
            if self.max_running is not None and len(tr) >= self.max_running:
                raise self._fail("start", f"{len(tr)} executions running, the most is max_running="
                                          f"{self.max_running}", device)
            with self._on("start", device):
                tr.start(id, model, batch_size, tf)
            self._where[id] = (device, d)
            self._moved(device)

    def _running_entry(self, id: Any, method: str) -> tuple[str, float]:
        try:
            entry = self._where.get(id)
        except TypeError:
            entry = None
        if entry is None:
            raise self._fail(method, f"id {id!r} is not running on this fleet")
        return entry

    def finish(self, id: Any, t: float) -> FinishResult:
        """``id`` finished at ``t``: its tracker learns; returns the tracker's :class:`FinishResult`.

        ``t`` may be late by the device's tracker's ``late_window_ms``
        (:meth:`ColocationTracker.finish`).
        """
        with self._lock:
            device = self._running_entry(id, "finish")[0]
            self._check_time(t, "finish")
            with self._on("finish", device):
                res = self._trackers[device].finish(id, t)
            del self._where[id]
            self._moved(device)
            return res

    def cancel(self, id: Any, t: float | None = None) -> None:
        """``id`` left its device at ``t`` (default: the device's clock) without a usable latency
        (cancelled, OOM-killed): dropped, nothing learned (:meth:`ColocationTracker.cancel`)."""
        with self._lock:
            device = self._running_entry(id, "cancel")[0]
            if t is not None:
                self._check_time(t, "cancel")
            with self._on("cancel", device):
                self._trackers[device].cancel(id, t)
            del self._where[id]
            self._moved(device)

    def advance(self, t: float) -> None:
        """Bring every device's clock that is before ``t`` to ``t`` (ms); clocks at or after ``t`` stay.

        Afterwards :attr:`now` is at least ``t`` and a question at ``t`` is answered by every
        device. Each device's move is :meth:`ColocationTracker.advance` (atomic per device).
        """
        with self._lock:
            tf = self._check_time(t, "advance")
            for name, tr in self._trackers.items():
                if tr.now is None or tr.now < tf:
                    with self._on("advance", name):
                        tr.advance(tf)
                    self._moved(name)

    # ------------------------------------------------------------------ placement
    def assess(self, device: str, candidate: tuple[Any, str, int], deadline: float,
               t: float) -> tuple[bool, float]:
        """Whether ``candidate`` may start on ``device`` at ``t`` and the projected latency it adds.

        Returns ``(feasible, added_ms)``; ``added_ms`` is computed even when infeasible (inf
        when the device is full).
        """
        with self._lock:
            tr = self._tracker(device, "assess")
            tf = self._check_time(t, "assess", (device,))
            d = self._check_deadline(deadline, tf, "assess")
            cand = self._check_candidate(candidate, "assess")
            with self._on("assess", device):
                return self._assess(tr, cand, d, tf)

    def _assess(self, tr: ColocationTracker, candidate: tuple[Any, str, int], d: float,
                t: float) -> tuple[bool, float]:
        cid = candidate[0]
        if self.max_running is not None and len(tr) >= self.max_running:
            return False, math.inf
        q = self.quantile
        with_c = tr.what_if([candidate], t) if q is None else tr.what_if([candidate], t, quantile=q)
        base = (tr.predict_finish(t) if q is None else tr.predict_finish(t, quantile=q)) if len(tr) else {}
        ends_with = [with_c[rid] for rid in base]
        ok = meets_deadlines(t, [with_c[cid], *ends_with], [d, *(self._where[rid][1] for rid in base)], self.margin)
        return ok, added_latency(t, with_c[cid], ends_with, base.values())

    def assess_all(self, candidate: tuple[Any, str, int], deadline: float, t: float) -> dict[str, tuple[bool, float]]:
        """:meth:`assess` on every device at once: device name -> ``(feasible, added_ms)``, in :attr:`devices` order.

        The devices whose trackers take the compiled projection are assessed together in one call
        (:class:`~interfpred.serving.placement.PlacementCache`), the others one by one; the answers equal
        :meth:`assess` per device to the bit. ``t`` must be at or after every device's clock
        (:attr:`now`). Nothing changes.

        Examples
        --------
        >>> from interfpred import RLS
        >>> from interfpred.sim.zoo import zoo_profiles
        >>> fleet = Fleet.from_profiles(zoo_profiles("l4"), RLS, devices=["gpu0", "gpu1"], max_running=1)
        >>> fleet.start("gpu0", "r1", "vgg19", 8, 0.0)
        >>> {g: ok for g, (ok, _) in fleet.assess_all(("c1", "resnet50", 4), 50.0, 1.0).items()}
        {'gpu0': False, 'gpu1': True}
        """
        with self._lock:
            tf = self._check_time(t, "assess_all", tuple(self._trackers))
            d = self._check_deadline(deadline, tf, "assess_all")
            return self._assess_every(self._check_candidate(candidate, "assess_all"), d, tf, "assess_all")

    def _assess_every(self, cand: tuple[Any, str, int], d: float, tf: float,
                      method: str) -> dict[str, tuple[bool, float]]:
        # The vectorised path projects means; bounds at a quantile take each tracker's own path.
        try:
            fast = {} if self.quantile is not None else self._placement.assess_all(
                self._trackers, self._deadline_or_none, cand, d, tf, margin=self.margin,
                max_running=self.max_running)
        except InterfpredError:
            fast = {}   # a device refuses the candidate: the loop below names it
        out = {}
        for name, tr in self._trackers.items():
            if name in fast:
                out[name] = fast[name]
            else:
                with self._on(method, name):
                    out[name] = self._assess(tr, cand, d, tf)
        return out

    def choose_device(self, candidate: tuple[Any, str, int], deadline: float, t: float) -> str | None:
        """The name of the device where ``candidate`` (``(id, model, batch_size)``) should start at
        ``t``, or None.

        None when no device is projected to finish the candidate by ``deadline`` (``inf``: no
        deadline) and every running execution by its own; among feasible devices, the least
        added projected latency (module docstring). Nothing changes; call :meth:`start` to launch.

        Raises
        ------
        InterfpredError
            ``t`` not a time (``inf`` included) or before a device's clock (``t >= now``,
            :attr:`now`), ``deadline`` before ``t``, a candidate that is not ``(id, model,
            batch_size)`` or whose id is already running, or a candidate without a profile;
            the message names the method and the device.
        """
        with self._lock:
            tf = self._check_time(t, "choose_device", tuple(self._trackers))
            d = self._check_deadline(deadline, tf, "choose_device")
            cand = self._check_candidate(candidate, "choose_device")
            every = self._assess_every(cand, d, tf, "choose_device")
            return self.best_device([(name, added) for name, (ok, added) in every.items() if ok], tf)

    def best_device(self, feasible: Sequence[tuple[str, float]], t: float) -> str | None:
        """The placement rule over feasible ``(device, added_ms)`` options: the least added latency
        (ties within ``FLEET_TIE_RTOL``) and among ties the least loaded device (fewest running,
        then least remaining solo work at ``t``, then the first listed); None when there are none.

        >>> from interfpred import RLS
        >>> from interfpred.sim.zoo import zoo_profiles
        >>> fleet = Fleet.from_profiles(zoo_profiles("l4"), RLS, devices=["gpu0", "gpu1"])
        >>> fleet.start("gpu0", "r1", "vgg19", 8, 0.0)
        >>> fleet.best_device([("gpu0", 5.0), ("gpu1", 5.0)], 1.0), fleet.best_device([], 1.0)
        ('gpu1', None)
        """
        with self._lock:
            tied = least_added_latency(feasible, tie_rtol=FLEET_TIE_RTOL)
            if len(tied) <= 1:
                return tied[0] if tied else None
            # Ties (an untrained model sees no interference anywhere) go to the least loaded device:
            # fewest running executions, then least remaining solo work, then the first listed.
            trs = self._trackers
            return min(tied, key=lambda g: (len(trs[g]), sum(trs[g].remaining_ms(t).values())))

    def __repr__(self) -> str:
        return f"Fleet(devices={list(self._trackers)}, running={len(self._where)}, margin={self.margin})"
