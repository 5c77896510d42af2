"""Placement over several devices: one :class:`~interfpred.serving.tracker.ColocationTracker` per device, deadlines.

A *device* is one GPU instance (``"gpu0"``); the trackers' ``gpu`` is the GPU *type* their
profiles describe (``"l4"``). :meth:`Fleet.choose_device` answers "on which device can this batch
start now so that it, and everything already running, is projected to finish by its deadline?"
(each running execution's deadline is recorded when it starts). A device is feasible when it runs
fewer than ``max_running`` executions and every projected end ``e`` meets its deadline ``D`` with the safety margin, ``t + (e - t) * (1 +
margin) <= D``; among feasible devices the one where the launch adds the least projected latency
wins, ties (within ``FLEET_TIE_RTOL``) going to the least loaded device
(:mod:`interfpred.serving.placement`; docs/embedding.md). Every public method holds one re-entrant lock.

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
interfpred.errors.InterfpredError: choose_device refused: deadline 0.5 is before t 1.0 (a deadline in the past)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from interfpred.constants import FLEET_MARGIN, FLEET_TIE_RTOL
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.features import Extractor
from interfpred.serving.placement import PlacementCache, added_latency, least_added_latency, meets_deadlines
from interfpred.serving.streaming import FinishResult
from interfpred.serving.tracker import ColocationTracker

__all__ = ["Fleet"]



def _check_hashable(id: Any) -> None:
    """An execution id must be hashable (it keys the running set)."""
    try:
        hash(id)
    except TypeError:
        raise InterfpredError(f"id {id!r} is not hashable; ids are numbers or strings") from None

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
        predictors must be :class:`~interfpred.Calibrated`); None: the mean.

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
        try:
            m = float(margin)
        except (TypeError, ValueError):
            raise InterfpredError(f"margin {margin!r} must be a number >= 0") from None
        if not (math.isfinite(m) and m >= 0):
            raise InterfpredError(f"margin {margin!r} must be a finite number >= 0")
        if max_running is not None and (not isinstance(max_running, int) or max_running < 1):
            raise InterfpredError(f"max_running {max_running!r} must be a positive integer or None")
        self._trackers = dict(trackers)
        self.margin = m
        self.max_running = max_running
        if quantile is not None and not (isinstance(quantile, (int, float)) and 0.0 < float(quantile) < 1.0):
            raise InterfpredError(f"quantile {quantile!r} must be a number in (0, 1) or None")
        self.quantile = None if quantile is None else float(quantile)
        self._where: dict[Any, tuple[str, float]] = {}   # running id -> (device, deadline)
        self._lock = threading.RLock()
        self._placement = PlacementCache()   # per-device projections between events, for choose_device

    @classmethod
    def from_profiles(cls, profiles: ProfileTable, predictor_factory: Callable[[], Any], *,
                      devices: Sequence[str], extractor: Extractor | None = None, gpu: str | None = None,
                      shared_predictor: bool = False, **kwargs: Any) -> Fleet:
        """A fleet of identical devices named ``devices``, each with a tracker on ``profiles``.

        ``predictor_factory()`` builds each tracker's predictor (or one shared by all when
        ``shared_predictor``: the fleet then learns one model from every device; use it from one
        thread). ``gpu`` picks the profile table's GPU type; other keywords go to :class:`Fleet`.
        """
        names = list(devices)
        if not names or len(set(names)) != len(names):
            raise InterfpredError(f"devices {names!r} must be distinct names, at least one")
        shared = predictor_factory() if shared_predictor else None
        trackers = {d: ColocationTracker(profiles, shared if shared is not None else predictor_factory(), extractor,
                                         gpu=gpu) for d in names}
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

    def where(self, id: Any) -> str | None:
        """The device running ``id``, or None."""
        _check_hashable(id)
        entry = self._where.get(id)
        return None if entry is None else entry[0]

    def deadline(self, id: Any) -> float:
        """The deadline recorded for running ``id``."""
        _check_hashable(id)
        if id not in self._where:
            raise InterfpredError(f"id {id!r} is not running on this fleet")
        return self._where[id][1]

    def _deadline_or_none(self, id: Any) -> float | None:
        entry = self._where.get(id)
        return None if entry is None else entry[1]

    # ------------------------------------------------------------------ events
    def _check_deadline(self, deadline: Any, t: Any, what: str) -> float:
        try:
            d, tf = float(deadline), float(t)
        except (TypeError, ValueError):
            raise InterfpredError(f"{what} refused: deadline {deadline!r} and t {t!r} must be numbers") from None
        if math.isnan(d) or math.isnan(tf):
            raise InterfpredError(f"{what} refused: deadline {deadline!r} / t {t!r} is NaN")
        if d < tf:
            raise InterfpredError(f"{what} refused: deadline {deadline!r} is before t {t!r} (a deadline in the past)")
        return d

    def _tracker(self, device: Any, what: str) -> ColocationTracker:
        try:
            return self._trackers[device]
        except (KeyError, TypeError):
            raise InterfpredError(f"{what} refused: unknown device {device!r}; devices: "
                                  f"{', '.join(self._trackers)}") from None

    def start(self, device: str, id: Any, model: str, batch_size: float, t: float, *,
              deadline: float = math.inf) -> None:
        """Launch ``id`` on ``device`` at ``t`` with its ``deadline`` (ms; default none).

        Raises
        ------
        InterfpredError
            Unknown device, id running anywhere in the fleet, deadline before ``t``, or whatever
            the tracker refuses; nothing changes.
        """
        with self._lock:
            what = f"start of id {id!r}"
            tr = self._tracker(device, what)
            d = self._check_deadline(deadline, t, what)
            try:
                running = id in self._where
            except TypeError:
                raise InterfpredError(f"{what} refused: an id must be hashable") from None
            if running:
                raise InterfpredError(f"{what} refused: it is already running on device {self._where[id][0]!r}")
            tr.start(id, model, batch_size, t)
            self._where[id] = (device, d)
            self._placement.invalidate(device)

    def finish(self, id: Any, t: float) -> FinishResult:
        """``id`` finished at ``t``: its tracker learns; returns the tracker's :class:`FinishResult`."""
        with self._lock:
            try:
                entry = self._where.get(id)
            except TypeError:
                entry = None
            if entry is None:
                raise InterfpredError(f"finish of id {id!r} refused: it is not running on this fleet")
            self._placement.invalidate(entry[0])
            res = self._trackers[entry[0]].finish(id, t)
            del self._where[id]
            return res

    # ------------------------------------------------------------------ placement
    def assess(self, device: str, candidate: tuple[Any, str, float], deadline: float,
               t: float) -> tuple[bool, float]:
        """Whether ``candidate`` may start on ``device`` at ``t`` and the projected latency it adds.

        Returns ``(feasible, added_ms)``; ``added_ms`` is computed even when infeasible (inf
        when the device is full).
        """
        with self._lock:
            tr = self._tracker(device, "assess")
            d = self._check_deadline(deadline, t, "assess")
            return self._assess(tr, candidate, d, float(t))

    def _assess(self, tr: ColocationTracker, candidate: tuple[Any, str, float], d: float,
                t: float) -> tuple[bool, float]:
        try:
            cid = candidate[0]
        except (TypeError, IndexError, KeyError):
            raise InterfpredError(f"candidate {candidate!r} must be (id, model, batch_size)") from None
        if self.max_running is not None and len(tr) >= self.max_running:
            return False, math.inf
        q = self.quantile
        with_c = tr.what_if([candidate], t) if q is None else tr.what_if([candidate], t, quantile=q)
        base = (tr.predict_finish(t) if q is None else tr.predict_finish(t, quantile=q)) if len(tr) else {}
        ends_with = [with_c[rid] for rid in base]
        ok = meets_deadlines(t, [with_c[cid], *ends_with], [d, *(self._where[rid][1] for rid in base)], self.margin)
        return ok, added_latency(t, with_c[cid], ends_with, base.values())

    def choose_device(self, candidate: tuple[Any, str, float], deadline: float, t: float) -> str | None:
        """The name of the device where ``candidate`` (``(id, model, batch_size)``) should start at
        ``t``, or None.

        None when no device is projected to finish the candidate by ``deadline`` and every running
        execution by its own; among feasible devices, the least added projected latency (module
        docstring). Nothing changes; call :meth:`start` to launch.

        Raises
        ------
        InterfpredError
            ``deadline`` before ``t``, a candidate id already running, a candidate without a
            profile, or ``t`` before a tracker's latest event.
        """
        with self._lock:
            d = self._check_deadline(deadline, t, "choose_device")
            try:
                cid = candidate[0]
                running = cid in self._where
            except (TypeError, IndexError, KeyError):
                raise InterfpredError(f"choose_device refused: candidate {candidate!r} must be (id, model, batch_size) "
                                      "with a hashable id") from None
            if running:
                raise InterfpredError(f"choose_device refused: candidate id {cid!r} is already running on device "
                                      f"{self._where[cid][0]!r}")
            # The vectorised path projects means; bounds at a quantile take each tracker's own path.
            fast = {} if self.quantile is not None else self._placement.assess_all(
                self._trackers, self._deadline_or_none, candidate, d, float(t), margin=self.margin,
                max_running=self.max_running)
            feasible = []
            for name, tr in self._trackers.items():
                ok, added = fast[name] if name in fast else self._assess(tr, candidate, d, float(t))
                if ok:
                    feasible.append((name, added))
            tied = least_added_latency(feasible, tie_rtol=FLEET_TIE_RTOL)
            if len(tied) <= 1:
                return tied[0] if tied else None
            # Ties (an untrained model sees no interference anywhere) go to the least loaded device:
            # fewest running executions, then least remaining solo work, then the first listed.
            trs = self._trackers
            return min(tied, key=lambda g: (len(trs[g]), sum(trs[g].remaining_ms(float(t)).values())))

    def __repr__(self) -> str:
        return f"Fleet(devices={list(self._trackers)}, running={len(self._where)}, margin={self.margin})"
