"""Persistent measuring workers: processes that build their workload instances once, then run windows.

The parent side, :class:`ProcessHosts`, starts one worker process per host group (see
:func:`interfpred.measure.backend.layout`) with the group's environment, and speaks JSON lines
with it over the worker's standard input and output. The worker side, :func:`serve`, builds each
instance, answers ``ready``, then runs one window per ``run`` command: every instance named runs
in its own thread, all starting at the same instant of the system-wide monotonic clock (the
parent sends it), so members in different processes start together. A worker's own output and
errors go to a log file, never into the protocol. A worker whose parent is gone sees its input
close and exits.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, Protocol

from interfpred.constants import MEASURE_ANSWER_GRACE_S, MEASURE_READY_TIMEOUT_S, MEASURE_START_LEAD_S
from interfpred.errors import InterfpredError
from interfpred.measure.backend import HostGroup, MemberResult
from interfpred.measure.spec import Workload, parse_workload

__all__ = ["Instance", "ProcessHosts", "serve"]

class Instance(Protocol):
    """A worker's built workload instance."""

    graph: bool
    note: str | None

    def window(self, t_start: float, t_end: float, margin_s: float, context: Mapping[str, Any]) -> MemberResult:
        """Run back to back from ``t_start`` to ``t_end`` (monotonic seconds); measure the middle."""
        ...


def _tail(path: str, n: int = 3) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = [ln.strip() for ln in fh.read().splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


class _Worker:
    def __init__(self, command: Sequence[str], group: HostGroup, mechanism: str, log_path: str) -> None:
        env = {**os.environ, **group.env}
        self.group = group
        self.log_path = log_path
        self.log = open(log_path, "ab")  # noqa: SIM115 - held for the worker's life
        self.proc = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     env=env, text=True, bufsize=1)
        self.answers: queue.Queue[dict | None] = queue.Queue()
        self.hung = False      # it let a deadline pass: killed at close instead of waited for
        self.reader = threading.Thread(target=self._read, daemon=True, name=f"measure-{group.instances[0]}")
        self.reader.start()
        self.send({"cmd": "init", "mechanism": mechanism,
                   "instances": [[k, w.label] for k, w in zip(group.instances, group.workloads)]})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.answers.put(json.loads(line))
            except ValueError:
                continue
        self.answers.put(None)

    def send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the answer (none) says the worker is gone

    def answer(self, timeout_s: float, what: str) -> dict:
        try:
            msg = self.answers.get(timeout=timeout_s)
        except queue.Empty:
            self.hung = True
            raise InterfpredError(f"the worker of {', '.join(self.group.instances)} did not answer {what} within "
                                  f"{timeout_s:.0f} s (its log: {self.log_path})") from None
        if msg is None:
            code = self.proc.wait()
            raise InterfpredError(f"the worker of {', '.join(self.group.instances)} exited (status {code}) before "
                                  f"answering {what}: {_tail(self.log_path) or 'no output'} (log: {self.log_path})")
        if "error" in msg:
            raise InterfpredError(f"the worker of {', '.join(self.group.instances)} failed {what}: {msg['error']}")
        return msg

    def close(self) -> None:
        self.send({"cmd": "quit"})
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            if self.hung:
                raise subprocess.TimeoutExpired(self.proc.args, 0)
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.log.close()


class ProcessHosts:
    """The workers of one mechanism's host groups (see the module docstring); a context manager that closes them.

    ``command`` starts one worker (it runs :func:`serve`); ``log_dir`` receives one log per worker.
    ``context`` adds, to every run command, what a worker may need beside its own instances (the
    simulated device reads the members' workloads and shares from it).
    """

    def __init__(self, command: Sequence[str], groups: Sequence[HostGroup], mechanism: str, log_dir: str, *,
                 ready_timeout_s: float = MEASURE_READY_TIMEOUT_S) -> None:
        os.makedirs(log_dir, exist_ok=True)
        self.mechanism = mechanism
        self.graphs: dict[str, bool] = {}
        self.notes: list[str] = []
        self._workers: list[_Worker] = []
        self._where: dict[str, _Worker] = {}
        try:
            for i, g in enumerate(groups):
                w = _Worker(command, g, mechanism, os.path.join(log_dir, f"worker-{mechanism}-{i:02d}.log"))
                self._workers.append(w)
                for k in g.instances:
                    self._where[k] = w
            deadline = time.monotonic() + ready_timeout_s
            for w in self._workers:
                msg = w.answer(max(0.0, deadline - time.monotonic()), "ready (building its workloads)")
                self.graphs.update({k: bool(v) for k, v in msg["ready"].items()})
                self.notes += [str(n) for n in msg.get("notes", [])]
        except BaseException:
            self.close()
            raise

    def run(self, instances: Sequence[str], window_s: float, margin_s: float,
            context: Mapping[str, Any] | None = None) -> dict[str, MemberResult]:
        """Run ``instances`` together for ``window_s`` seconds; one result per instance."""
        t_start = time.monotonic() + MEASURE_START_LEAD_S
        t_end = t_start + window_s
        by_worker: dict[int, list[str]] = {}
        for k in instances:
            by_worker.setdefault(id(self._where[k]), []).append(k)
        workers = [w for w in self._workers if id(w) in by_worker]
        for w in workers:
            w.send({"cmd": "run", "instances": by_worker[id(w)], "t_start": t_start, "t_end": t_end,
                    "margin_s": margin_s, "context": dict(context or {})})
        out: dict[str, MemberResult] = {}
        for w in workers:
            left = t_end + MEASURE_ANSWER_GRACE_S - time.monotonic()
            msg = w.answer(max(1.0, left), "a run")
            out.update({k: MemberResult.from_dict(v) for k, v in msg["done"].items()})
        return out

    def close(self) -> None:
        """Stop every worker (each finishes the window it is in, if any)."""
        for w in self._workers:
            w.close()
        self._workers = []

    def __enter__(self) -> ProcessHosts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(build: Callable[[str, Workload, str], Instance], stdin: IO[str] | None = None,
          stdout: IO[str] | None = None) -> None:
    """A worker's loop: ``init`` builds each instance with ``build(key, workload, mechanism)``; ``run``
    measures a window; ``quit`` (or the end of the input) returns. The protocol uses the real standard
    output; anything else the process prints goes to standard error."""
    if stdout is None:
        stdout = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints cannot corrupt the protocol
    stdin = sys.stdin if stdin is None else stdin

    def say(msg: dict) -> None:
        stdout.write(json.dumps(msg) + "\n")
        stdout.flush()

    instances: dict[str, Instance] = {}
    for line in stdin:
        msg = json.loads(line)
        cmd = msg.get("cmd")
        if cmd == "quit":
            return
        try:
            if cmd == "init":
                for key, label in msg["instances"]:
                    instances[key] = build(key, parse_workload(label), msg["mechanism"])
                say({"ready": {k: i.graph for k, i in instances.items()},
                     "notes": [i.note for i in instances.values() if i.note]})
            elif cmd == "run":
                say({"done": _run_window(instances, msg)})
            else:
                say({"error": f"unknown command {cmd!r}"})
        except Exception as exc:  # the parent reports it in one line; the traceback goes to the worker's log
            traceback.print_exc(file=sys.stderr)
            say({"error": f"{type(exc).__name__}: {exc}".replace("\n", " ")})


def _run_window(instances: Mapping[str, Instance], msg: Mapping[str, Any]) -> dict[str, dict]:
    keys = list(msg["instances"])
    results: dict[str, MemberResult] = {}
    errors: list[BaseException] = []

    def one(k: str) -> None:
        try:
            results[k] = instances[k].window(msg["t_start"], msg["t_end"], msg["margin_s"], msg.get("context", {}))
        except BaseException as exc:  # re-raised in the worker's main thread below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(k,)) for k in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return {k: results[k].as_dict() for k in keys}
