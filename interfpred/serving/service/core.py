"""The service's state: a :class:`~interfpred.Fleet` built from a model file and a fleet description, made durable.

:class:`FleetService` answers what the library answers (``what_if``, ``choose_device``,
``assess_all``) and applies ``start``, ``finish`` and ``cancel`` to the fleet, journaling each
one (:class:`~interfpred.serving.service.journal.Journal`) before it returns, so whatever it has
acknowledged survives a crash. Each device has its own copy of the model's predictor, learning from
its own finishes.

Replay is exact because the fleet is deterministic: the same events from the same learned state
give the same state. The snapshot keeps, for each device, its predictor and clock as they were the
last time the device ran nothing (nothing else is left on an idle device), and the events on it
since; on start each device is rebuilt from that and the events are replayed, then the log's. A
device that never becomes idle keeps its events since it last was (they are in every snapshot).

Every time is in ms on the service's clock: wall time since the state folder was created, or
later if a caller stamped an event later; a request may give its own ``t``.

Examples
--------
>>> import tempfile
>>> from interfpred import InterferenceModel
>>> from interfpred.sim.zoo import zoo_profiles
>>> from interfpred.serving.service.spec import FleetSpec
>>> spec = FleetSpec.model_validate({"profiles": "-", "devices": [{"node": "n1", "device": "gpu0", "gpu": "l4"}]})
>>> svc = FleetService(spec, InterferenceModel().to_state(), zoo_profiles("l4"), tempfile.mkdtemp())
>>> svc.start("n1/gpu0", "a", "vgg19", 8, t=0.0, deadline=100.0)
>>> round(svc.what_if("n1/gpu0", [("b", "resnet50", 4)], t=1.0)["b"], 3)
5.5
>>> svc.close()
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from interfpred.constants import SERVE_SNAPSHOT_EVERY
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.model.interference import InterferenceModel
from interfpred.serving.fleet import Fleet
from interfpred.serving.service.journal import Journal
from interfpred.serving.service.spec import FleetSpec
from interfpred.serving.tracker import ColocationTracker, FinishResult

__all__ = ["SNAPSHOT_FORMAT", "FleetService", "ServiceUnavailable", "open_service"]

SNAPSHOT_FORMAT = "interfpred-serve-state"
SNAPSHOT_VERSION = 1


class ServiceUnavailable(InterfpredError):
    """The journal could not be written: the service refuses every event until it is restarted."""


class FleetService:
    """A fleet, its journal and its clock.

    Parameters
    ----------
    spec
        The fleet description.
    model_state
        The model file's contents (``InterferenceModel.to_state()``); each device gets its own copy.
    profiles
        The solo profiles of every GPU type the devices have.
    state_dir
        The journal's folder (created if missing); its snapshot and log are replayed.
    clock
        Wall time in seconds (default ``time.time``); the service's clock is ms since the
        folder's first start.
    snapshot_every
        Journal records between two snapshots.
    """

    def __init__(self, spec: FleetSpec, model_state: dict[str, Any], profiles: ProfileTable,
                 state_dir: str | os.PathLike[str], *, clock: Callable[[], float] = time.time,
                 snapshot_every: int = SERVE_SNAPSHOT_EVERY) -> None:
        self.spec = spec
        self.profiles = profiles
        self._wall = clock
        self.snapshot_every = int(snapshot_every)
        self._lock = threading.RLock()
        self.journal = Journal(state_dir)
        snapshot, records = self.journal.open()
        try:
            self._build(snapshot, model_state)
            self.replayed = self._replay(records)
            if snapshot is None:
                self.snapshot()          # the epoch and the devices are on disk from the first start
        except BaseException:
            self.journal.close()
            raise
        self.broken: str | None = None
        self.finished: list[FinishResult] = []   # the latest finishes (for metrics), cleared by the reader

    # ------------------------------------------------------------------ building and replay
    def _build(self, snapshot: dict[str, Any] | None, model_state: dict[str, Any]) -> None:
        names = self.spec.device_names()
        if snapshot is None:
            self.epoch = float(self._wall())
            self.seq = 0
            idle: dict[str, dict[str, Any]] = {name: {"model": model_state, "clock": None, "seq": 0} for name in names}
            pending: list[dict[str, Any]] = []
        else:
            if snapshot.get("format") != SNAPSHOT_FORMAT or snapshot.get("version") != SNAPSHOT_VERSION:
                raise InterfpredError(f"{self.journal.folder}: snapshot is not a {SNAPSHOT_FORMAT} version "
                                      f"{SNAPSHOT_VERSION}")
            idle = snapshot["devices"]
            if sorted(idle) != sorted(names):
                raise InterfpredError(f"{self.journal.folder}: the snapshot's devices differ from the fleet "
                                      "description's; start with a new state folder to change the fleet")
            self.epoch = float(snapshot["epoch"])
            self.seq = int(snapshot["seq"])
            pending = snapshot["pending"]
        by_name = {d.name: d for d in self.spec.devices}
        self.models: dict[str, InterferenceModel] = {}
        trackers = {}
        for name in names:
            model = InterferenceModel.from_state(idle[name]["model"], source=f"model of device {name!r}")
            tr = ColocationTracker.from_model(model, self.profiles, gpu=by_name[name].gpu,
                                              late_window_ms=self.spec.late_window_ms)
            if idle[name]["clock"] is not None:
                tr.advance(idle[name]["clock"])
            self.models[name] = model
            trackers[name] = tr
        self.fleet = Fleet(trackers, margin=self.spec.margin, max_running=self.spec.max_running)
        self._trackers = self.fleet.trackers     # the mapping never changes; Fleet.trackers copies it
        # the latest device clock, kept by every event (a clock only moves forward), read on every request
        self._latest = self.fleet.now
        self._idle: dict[str, dict[str, Any]] = {name: dict(idle[name]) for name in names}
        self._pending: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for rec in pending:
            self._apply(rec)

    def _replay(self, records: Sequence[dict[str, Any]]) -> int:
        n = 0
        for rec in records:
            if rec["seq"] > self.seq:
                self._apply(rec)
                self.seq = rec["seq"]
                n += 1
        return n

    def _apply(self, rec: dict[str, Any]) -> FinishResult | None:
        """Apply one journal record to the fleet and keep the device's events since it was idle."""
        op, dev = rec["op"], rec["device"]
        res = None
        if op == "start":
            self.fleet.start(dev, rec["id"], rec["model"], rec["batch_size"], rec["t"],
                             deadline=math.inf if rec["deadline"] is None else rec["deadline"])
        elif op == "finish":
            res = self.fleet.finish(rec["id"], rec["t"])
        elif op == "cancel":
            self.fleet.cancel(rec["id"], rec["t"])
        else:
            raise InterfpredError(f"journal record {rec.get('seq')}: unknown op {op!r}")
        self._note(rec)
        return res

    def _note(self, rec: dict[str, Any]) -> None:
        """Keep the device's state as it was when last idle, and its events since."""
        dev = rec["device"]
        tr = self._trackers[dev]
        if tr.now is not None and (self._latest is None or tr.now > self._latest):
            self._latest = tr.now
        if len(tr) == 0:      # idle: the predictor and the clock are the whole state
            self._idle[dev] = {"model": self.models[dev].to_state(), "clock": tr.now, "seq": rec["seq"]}
            self._pending[dev] = []
        else:
            self._pending[dev].append(rec)

    # ------------------------------------------------------------------ clock and journal
    def now(self) -> float:
        """The service's clock, ms: wall time since the state folder's first start, never before the fleet's."""
        wall = (float(self._wall()) - self.epoch) * 1000.0
        latest = self._latest
        return wall if latest is None or wall >= latest else latest

    def _time(self, t: float | None) -> float:
        return self.now() if t is None else t

    def _event(self, rec: dict[str, Any], apply: Callable[[], Any]) -> Any:
        """Apply an event (refused: nothing changes), journal it, then acknowledge it."""
        with self._lock:
            if self.broken is not None:
                raise ServiceUnavailable(f"the journal failed ({self.broken}); restart the service")
            out = apply()
            rec["seq"] = self.seq + 1
            try:
                self.journal.append(rec)
            except OSError as exc:
                self.broken = f"{type(exc).__name__}: {exc}"
                raise ServiceUnavailable(f"the journal failed ({self.broken}); restart the service") from None
            self.seq += 1
            self._note(rec)
            if self.seq % self.snapshot_every == 0:
                self.snapshot()
            return out

    def snapshot(self) -> None:
        """Write the snapshot (and empty the log)."""
        with self._lock:
            pending = sorted((r for recs in self._pending.values() for r in recs), key=lambda r: r["seq"])
            self.journal.write_snapshot({"format": SNAPSHOT_FORMAT, "version": SNAPSHOT_VERSION, "epoch": self.epoch,
                                         "seq": self.seq, "devices": self._idle, "pending": pending})

    def close(self) -> None:
        """Snapshot and release the state folder."""
        with self._lock:
            if self.broken is None and self.journal.is_open:
                self.snapshot()
            self.journal.close()

    # ------------------------------------------------------------------ events
    def start(self, device: str, id: str, model: str, batch_size: int, *, t: float | None = None,
              deadline: float | None = None) -> None:
        """:meth:`Fleet.start`, journaled (``deadline`` None: none)."""
        with self._lock:
            tf = self._time(t)
            rec = {"op": "start", "device": device, "id": id, "model": model, "batch_size": batch_size,
                   "t": tf, "deadline": deadline}
            self._event(rec, lambda: self.fleet.start(device, id, model, batch_size, tf,
                                                      deadline=math.inf if deadline is None else deadline))

    def finish(self, id: str, *, t: float | None = None) -> FinishResult:
        """:meth:`Fleet.finish`, journaled."""
        with self._lock:
            device = self._device_of(id, "finish")
            tf = self._time(t)
            res: FinishResult = self._event({"op": "finish", "device": device, "id": id, "t": tf},
                                            lambda: self.fleet.finish(id, tf))
            self.finished.append(res)
            del self.finished[:-1000]
            return res

    def cancel(self, id: str, *, t: float | None = None) -> None:
        """:meth:`Fleet.cancel`, journaled."""
        with self._lock:
            device = self._device_of(id, "cancel")
            tr = self._trackers[device]
            tf = (tr.now if tr.now is not None else 0.0) if t is None else t
            self._event({"op": "cancel", "device": device, "id": id, "t": tf}, lambda: self.fleet.cancel(id, tf))

    def _device_of(self, id: str, method: str) -> str:
        device = self.fleet.where(id)
        if device is None:
            raise InterfpredError(f"Fleet.{method}: id {id!r} is not running on this fleet")
        return device

    # ------------------------------------------------------------------ questions
    def what_if(self, device: str, candidates: Sequence[tuple[str, str, int]], *,
                t: float | None = None) -> dict[str, float]:
        """The device's tracker's :meth:`~ColocationTracker.what_if` (``t`` default: the clock)."""
        with self._lock:
            tr = self._trackers.get(device) if isinstance(device, str) else None
            if tr is None:
                raise InterfpredError(f"what_if: unknown device {device!r}")
            return tr.what_if(candidates, self._time(t))

    def choose_device(self, candidate: tuple[str, str, int], deadline: float | None, *,
                      t: float | None = None) -> str | None:
        """:meth:`Fleet.choose_device` (``deadline`` None: none)."""
        with self._lock:
            return self.fleet.choose_device(candidate, math.inf if deadline is None else deadline, self._time(t))

    def assess_all(self, candidate: tuple[str, str, int], deadline: float, t: float) -> dict[str, tuple[bool, float]]:
        """:meth:`Fleet.assess_all`."""
        with self._lock:
            return self.fleet.assess_all(candidate, deadline, t)

    def devices(self) -> dict[str, dict[str, Any]]:
        """Device -> its running ids and clock."""
        with self._lock:
            return {name: {"running": list(tr.running), "now": tr.now} for name, tr in self._trackers.items()}


def open_service(model_file: str | os.PathLike[str], fleet_file: str | os.PathLike[str],
                 state_dir: str | os.PathLike[str], **options: Any) -> FleetService:
    """A :class:`FleetService` from a model file (``interfpred fit``), a fleet description and a state folder.

    The model file is read as JSON only (a model wrapping a pickled estimator is refused). Other
    keywords go to :class:`FleetService`.
    """
    from interfpred._core.atomic import read_json
    from interfpred.data.columnar import read_profiles
    from interfpred.serving.service.spec import read_fleet_spec

    spec, profiles_path = read_fleet_spec(fleet_file)
    state = read_json(model_file)
    if not isinstance(state, dict):
        raise InterfpredError(f"{os.fspath(model_file)}: not a model file")
    InterferenceModel.from_state(state, source=os.fspath(model_file))   # refused here, before the folder is touched
    return FleetService(spec, state, read_profiles(profiles_path), state_dir, **options)
