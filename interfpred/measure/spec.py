"""What a measuring campaign runs: workloads given as text, and the plan of windows built from them.

A **workload** is ``NAME:BATCH_SIZE[:DTYPE]``. ``NAME`` is a torchvision classification model
(``resnet50``, ``vit_b_16``) or a callable of the user's, ``module:function`` or
``path/to/file.py:function``, that builds one batch: ``function(batch_size, dtype, device)``
returns a function of no arguments that runs one batch on preallocated inputs. ``DTYPE`` is
``fp16`` (the default), ``bf16`` or ``fp32``.

A **plan** lists every *window* of a campaign: each is one stretch of time in which one or several
workload *instances* run back to back, either one alone (a solo window) or several together (a
run). For each mechanism it holds, in order: every workload's solo window (before), the runs in a
seeded shuffled order with the solo windows again halfway (between), and the solo windows once
more (after). Every window has a stable key, so a campaign that was interrupted knows which are
done. An instance is ``LABEL#COPY``: a self pair needs two copies of one workload, and under MIG
the member in position ``i`` of a run is the copy bound to the ``i``-th MIG instance.

Examples
--------
>>> w = parse_workload("resnet50:8")
>>> w.name, w.batch_size, w.dtype, w.kind, w.label
('resnet50', 8, 'fp16', 'torchvision', 'resnet50:8:fp16')
>>> parse_workload("my_models:build_bert:4:bf16").kind
'callable'
>>> parse_workload("resnet50:eight")
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: workload 'resnet50:eight': 'eight' is not a batch size (NAME:BATCH_SIZE[:DTYPE], e.g. resnet50:8 or resnet50:8:fp16)
>>> plan = build_plan([parse_workload("a:1"), parse_workload("b:2")], ["streams"])
>>> [w.kind for w in plan.windows]
['solo', 'solo', 'run', 'run', 'solo', 'solo', 'run', 'solo', 'solo']
>>> [w.members for w in plan.windows if w.kind == "run"]
[('a:1:fp16#0', 'b:2:fp16#0'), ('b:2:fp16#0', 'b:2:fp16#1'), ('a:1:fp16#0', 'a:1:fp16#1')]
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import os
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from interfpred.constants import (
    MAX_BATCH_SIZE,
    MEASURE_DEFAULT_DTYPE,
    MEASURE_DTYPES,
    MEASURE_MAX_MEMBERS,
    MEASURE_MAX_WORKLOADS,
    MEASURE_MECHANISMS,
)
from interfpred.errors import InterfpredError

__all__ = ["Plan", "Window", "Workload", "build_plan", "instance_workload", "parse_set", "parse_workload",
           "resolve_callable"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
#: Characters a workload may not hold: they separate instances, members and sets in window keys and options.
_RESERVED = set("#+|,= \t\n\r")
_FORM = "NAME:BATCH_SIZE[:DTYPE], e.g. resnet50:8 or resnet50:8:fp16"


@dataclass(frozen=True)
class Workload:
    """One workload: a model (torchvision name, or ``module:function``) at one batch size and data type.

    ``kind`` is ``torchvision`` or ``callable``; ``target`` is the model name or the ``module:function``
    text; ``label`` the canonical spec ``NAME:BATCH_SIZE:DTYPE``, the workload's name in window keys.
    """

    kind: str
    target: str
    batch_size: int
    dtype: str

    @property
    def name(self) -> str:
        """The model's name: the torchvision name, or the callable's function name."""
        return self.target.rsplit(":", 1)[-1]

    @property
    def label(self) -> str:
        """``NAME:BATCH_SIZE:DTYPE`` with the full target (``module:function`` for a callable)."""
        return f"{self.target}:{self.batch_size}:{self.dtype}"


def parse_workload(text: str) -> Workload:
    """A :class:`Workload` from ``NAME:BATCH_SIZE[:DTYPE]`` (see the module docstring); refuses bad text
    with one line naming it."""
    def bad(why: str) -> InterfpredError:
        return InterfpredError(f"workload {text!r}: {why}")

    if not isinstance(text, str) or not text.strip():
        raise bad(f"is empty; give {_FORM}")
    reserved = sorted(c for c in set(text) if c in _RESERVED or not c.isprintable())
    if reserved:
        raise bad(f"holds {reserved[0]!r}, which a workload may not hold ({_FORM})")
    parts = text.split(":")
    dtype = MEASURE_DEFAULT_DTYPE
    if len(parts) >= 3 and parts[-1] in MEASURE_DTYPES:
        dtype = parts.pop()
    elif len(parts) >= 3 and not parts[-1].isdigit() and parts[-2].isdigit():
        raise bad(f"data type {parts[-1]!r} is not one of {', '.join(MEASURE_DTYPES)}")
    if len(parts) < 2:
        raise bad(f"no batch size ({_FORM})")
    size_text = parts.pop()
    if not (size_text.isascii() and size_text.isdigit()):
        raise bad(f"{size_text!r} is not a batch size ({_FORM})")
    batch_size = int(size_text)
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise bad(f"batch size {batch_size} must be in 1..{MAX_BATCH_SIZE}")
    if len(parts) == 1:
        if not _IDENT.match(parts[0]):
            raise bad(f"{parts[0]!r} is not a model name (a torchvision name such as resnet50, or module:function)")
        return Workload("torchvision", parts[0], batch_size, dtype)
    if len(parts) == 2:
        module, function = parts
        if not (module.endswith(".py") or _MODULE.match(module)):
            raise bad(f"{module!r} is neither a module name (pkg.mod) nor a Python file (path/to/file.py)")
        if not _IDENT.match(function):
            raise bad(f"{function!r} is not a function name")
        return Workload("callable", f"{module}:{function}", batch_size, dtype)
    raise bad(f"too many ':' ({_FORM}; a callable is module:function:BATCH_SIZE[:DTYPE])")


def resolve_callable(target: str) -> Callable[..., Any]:
    """The function a callable workload names: ``module:function`` imported, or ``file.py:function``
    loaded from that file (relative to the working folder). Refuses, in one line, a module or file
    that cannot be loaded and a name that is not a function there.

    Examples
    --------
    >>> resolve_callable("os.path:join")("a", "b") == os.path.join("a", "b")
    True
    >>> resolve_callable("no_such_module_xyz:f")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: workload callable 'no_such_module_xyz:f': cannot import module 'no_such_module_xyz' (ModuleNotFoundError: No module named 'no_such_module_xyz')
    """
    module_name, _, function = target.rpartition(":")
    try:
        if module_name.endswith(".py"):
            if not os.path.isfile(module_name):
                raise InterfpredError(f"workload callable {target!r}: no file {module_name}")
            stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(module_name))[0])
            spec = importlib.util.spec_from_file_location(f"interfpred_workload_{stem}", module_name)
            if spec is None or spec.loader is None:
                raise InterfpredError(f"workload callable {target!r}: cannot load {module_name}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except InterfpredError:
        raise
    except Exception as exc:  # the user's module failed to import: say so in one line
        raise InterfpredError(f"workload callable {target!r}: cannot import module {module_name!r} "
                              f"({type(exc).__name__}: {exc})".replace("\n", " ")) from None
    fn = getattr(module, function, None)
    if not callable(fn):
        raise InterfpredError(f"workload callable {target!r}: {module_name} has no function {function!r}")
    return fn


def parse_set(text: str, workloads: Sequence[Workload]) -> tuple[Workload, ...]:
    """The workloads of a chosen run, given as specs joined by ``,`` (each must be one of ``workloads``).

    Examples
    --------
    >>> ws = [parse_workload("a:1"), parse_workload("b:2")]
    >>> [w.label for w in parse_set("a:1,b:2,a:1", ws)]
    ['a:1:fp16', 'b:2:fp16', 'a:1:fp16']
    >>> parse_set("a:1,c:1", ws)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: --set 'a:1,c:1': workload 'c:1:fp16' is not among the --workload given (a:1:fp16, b:2:fp16)
    """
    known = {w.label: w for w in workloads}
    out = []
    items = text.split(",")
    if len(items) < 2 or len(items) > MEASURE_MAX_MEMBERS:
        raise InterfpredError(f"--set {text!r}: a run has 2..{MEASURE_MAX_MEMBERS} members joined by ','")
    for item in items:
        w = parse_workload(item)
        if w.label not in known:
            raise InterfpredError(f"--set {text!r}: workload {w.label!r} is not among the --workload given "
                                  f"({', '.join(known)})")
        out.append(known[w.label])
    return tuple(out)


def instance_workload(instance: str) -> tuple[str, int]:
    """``(label, copy)`` of an instance key ``LABEL#COPY``.

    Examples
    --------
    >>> instance_workload("resnet50:8:fp16#1")
    ('resnet50:8:fp16', 1)
    """
    label, _, copy = instance.rpartition("#")
    return label, int(copy)


@dataclass(frozen=True)
class Window:
    """One window of a plan: ``kind`` ``solo`` (one member) or ``run``; ``phase`` ``before``, ``between`` or
    ``after`` for a solo window, the run's index among its mechanism's runs for a run."""

    mechanism: str
    kind: str
    phase: str
    members: tuple[str, ...]

    @property
    def key(self) -> str:
        """Stable identity of the window: ``mechanism|kind|phase|member+member...``."""
        return f"{self.mechanism}|{self.kind}|{self.phase}|{'+'.join(self.members)}"


@dataclass(frozen=True)
class Plan:
    """Every window of a campaign in the order they run, and the instances each mechanism hosts."""

    workloads: tuple[Workload, ...]
    mechanisms: tuple[str, ...]
    windows: tuple[Window, ...]
    instances: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def workload(self, instance: str) -> Workload:
        """The workload of an instance key."""
        label, _ = instance_workload(instance)
        return next(w for w in self.workloads if w.label == label)

    def solo_instance(self, mechanism: str, instance: str) -> str:
        """The instance whose solo windows give ``instance``'s solo time under ``mechanism``: itself under
        MIG (each copy runs in its own MIG instance), else the workload's copy 0."""
        if mechanism == "mig":
            return instance
        return f"{instance_workload(instance)[0]}#0"


def _members(run: Sequence[Workload], mechanism: str) -> tuple[str, ...]:
    """Instance keys of a run: the k-th occurrence of a workload is copy k; under MIG position i is copy i."""
    seen: dict[str, int] = {}
    out = []
    for i, w in enumerate(run):
        copy = i if mechanism == "mig" else seen.get(w.label, 0)
        seen[w.label] = seen.get(w.label, 0) + 1
        out.append(f"{w.label}#{copy}")
    return tuple(out)


def build_plan(workloads: Sequence[Workload], mechanisms: Sequence[str], *, sets: Sequence[Sequence[Workload]] = (),
               self_pairs: bool = True, seed: int = 0, mig_slots: int | None = None) -> Plan:
    """The windows of a campaign: per mechanism, solo before, runs (every pair, the self pairs when
    ``self_pairs``, then ``sets``) shuffled by ``seed`` with solo between at the halfway point, solo after.

    ``mig_slots`` is the number of MIG instances given (MIG only): a run may not have more members.
    Refuses duplicate workloads, unknown mechanisms and a campaign of fewer than two workloads with
    nothing to pair.
    """
    ws = tuple(workloads)
    if not ws:
        raise InterfpredError("give at least one --workload")
    if len(ws) > MEASURE_MAX_WORKLOADS:
        raise InterfpredError(f"{len(ws)} workloads: at most MEASURE_MAX_WORKLOADS={MEASURE_MAX_WORKLOADS}")
    labels = [w.label for w in ws]
    dup = next((lab for lab in labels if labels.count(lab) > 1), None)
    if dup is not None:
        raise InterfpredError(f"workload {dup!r} is given twice")
    names: dict[str, str] = {}
    for w in ws:  # one model name, one target: resnet50 from torchvision and a callable named resnet50 collide
        if names.setdefault(w.name, w.target) != w.target:
            raise InterfpredError(f"workloads {names[w.name]!r} and {w.target!r} share the model name {w.name!r}; "
                                  "rename one function")
    if not mechanisms:
        raise InterfpredError("give at least one mechanism")
    for m in mechanisms:
        if m not in MEASURE_MECHANISMS:
            raise InterfpredError(f"mechanism {m!r} is not one of {', '.join(MEASURE_MECHANISMS)}")
    if len(set(mechanisms)) != len(mechanisms):
        raise InterfpredError(f"mechanisms {', '.join(mechanisms)} name one twice")
    runs: list[tuple[Workload, ...]] = [tuple(p) for p in itertools.combinations(ws, 2)]
    if self_pairs:
        runs += [(w, w) for w in ws]
    seen = {tuple(sorted(w.label for w in r)) for r in runs}
    for s in sets:
        key = tuple(sorted(w.label for w in s))
        if len(s) < 2:
            raise InterfpredError("a chosen set needs at least two members")
        if key not in seen:
            seen.add(key)
            runs.append(tuple(s))
    if not runs:
        raise InterfpredError("one workload without self pairs makes no run: give two or more --workload")
    windows: list[Window] = []
    instances: dict[str, tuple[str, ...]] = {}
    for mech in mechanisms:
        if mech == "mig":
            need = max(len(r) for r in runs)
            if mig_slots is None or mig_slots < need:
                raise InterfpredError(f"under mig each member of a run needs its own MIG instance: the largest run "
                                      f"has {need} members, {mig_slots or 0} MIG instances were given (--mig-instance)")
        order = list(range(len(runs)))
        random.Random(seed).shuffle(order)
        mech_runs = [_members(runs[i], mech) for i in order]
        hosted = sorted({m for r in mech_runs for m in r}, key=hosted_order(labels))
        solo = hosted if mech == "mig" else [f"{lab}#0" for lab in labels]
        instances[mech] = tuple(sorted(set(hosted) | set(solo), key=hosted_order(labels)))

        def solos(phase: str, mech: str = mech, solo: Sequence[str] = solo) -> list[Window]:
            return [Window(mech, "solo", phase, (k,)) for k in solo]

        half = (len(mech_runs) + 1) // 2
        windows += solos("before")
        windows += [Window(mech, "run", f"{i:03d}", r) for i, r in enumerate(mech_runs[:half])]
        windows += solos("between")
        windows += [Window(mech, "run", f"{i + half:03d}", r) for i, r in enumerate(mech_runs[half:])]
        windows += solos("after")
    return Plan(ws, tuple(mechanisms), tuple(windows), instances)


def hosted_order(labels: Sequence[str]) -> Callable[[str], tuple[int, int]]:
    """Sort key of instance keys: the workloads' given order, then the copy."""
    def key(instance: str) -> tuple[int, int]:
        label, copy = instance_workload(instance)
        return labels.index(label), copy
    return key
