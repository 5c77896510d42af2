"""Model families of the phase-structured simulator: Orion's real operator tables, and the synthetic zoo.

**orion**: seven inference passes measured operator by operator on a V100-16GB by Orion (Strati et
al., EuroSys 2024; MIT licence, shipped in ``interfpred/data/datasets/orion/`` with its notice), with
demands *derived* from each operator's roofline class and SM occupancy, and other batch sizes
scaled from the file's. **synthetic**: the synthetic zoo (:mod:`interfpred.sim.zoo`), each
(model, batch) one operator with the profile's demands. Both carry hidden per-model factors
(:func:`interfpred.sim.operators.draw_hidden`). docs/simulator.md gives the derivation and the
scaling rules.

Examples
--------
>>> z = orion_zoo(batch_sizes=(4,), max_phases=0)
>>> z.models
('bert', 'efficientnet', 'mobilenetv2', 'resnet101', 'resnet50', 'retinanet', 'transformer_xl')
>>> len(z.program("resnet50", 4)), round(z.program("resnet50", 4).solo_ms, 3)
(175, 6.498)
>>> max(len(p) for p in orion_zoo(batch_sizes=(4,)).programs.values())
32
"""

from __future__ import annotations

import csv
import functools
import io
import os
from importlib import resources
from typing import Any

import numpy as np

from interfpred._core.atomic import atomic_open
from interfpred.constants import (
    ORION_DEMANDS,
    ORION_MIN_OP_MS,
    ORION_SMS,
    SIM_DEFAULT_GPU,
    SIM_MAX_PHASES,
    SIM_PHASED_DEFAULT_GPU,
    SIM_TRUTHS,
)
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.sim.contention import GpuSpec
from interfpred.sim.operators import PhaseZoo, Program, draw_hidden
from interfpred.sim.zoo import (
    PAPER_HETERO_BATCHES,
    PAPER_HETERO_WEIGHTS,
    PAPER_NEW_MODELS,
    PAPER_TRAIN_MODELS,
    ZOO_BATCH_SIZES,
    zoo_profiles,
)

__all__ = ["default_gpu", "ORION_MODELS", "ORION_TRAIN_MODELS", "ORION_NEW_MODELS", "ORION_HETERO_BATCHES", "ORION_HETERO_WEIGHTS",
           "OrionTable", "read_orion_csv", "read_operator_table", "write_operator_table", "to_orion_csv",
           "operator_demands", "scale_operators", "orion_zoo", "synthetic_phase_zoo", "phase_zoo", "scenario_family",
           "paper_sets"]

#: Shipped tables: model -> (file, batch size of the measured pass).
ORION_MODELS: dict[str, tuple[str, int]] = {
    "bert": ("bert_b2.csv", 2), "efficientnet": ("efficientnet_b4.csv", 4),
    "mobilenetv2": ("mobilenetv2_b4.csv", 4), "resnet101": ("resnet101_b4.csv", 4),
    "resnet50": ("resnet50_b4.csv", 4), "retinanet": ("retinanet_b4.csv", 4),
    "transformer_xl": ("transformer_xl_b4.csv", 4),
}
#: The paper scenario on the orion family: training models, models new at test time, and test
#: set 3's batch-size ranges and load shares (all seven models).
ORION_TRAIN_MODELS = ("resnet50", "mobilenetv2", "bert", "transformer_xl")
ORION_NEW_MODELS = ("efficientnet", "retinanet")
ORION_HETERO_BATCHES = {"resnet50": (1, 32), "mobilenetv2": (8, 32), "bert": (1, 8), "transformer_xl": (1, 16),
                        "efficientnet": (1, 16), "retinanet": (1, 4), "resnet101": (1, 32)}
ORION_HETERO_WEIGHTS = {"resnet50": 3.0, "mobilenetv2": 2.0, "bert": 1.0, "transformer_xl": 1.0,
                        "efficientnet": 1.0, "retinanet": 1.0, "resnet101": 2.0}

_COLUMNS = ("op", "name", "kind", "sm_usage", "duration_ns")
_ORION_COLUMNS = ("Name", "Profile", "Memory_footprint", "SM_usage", "Duration")


class OrionTable:
    """One pass's operators as the tables give them: name, class, SMs needed, duration (ns).

    Examples
    --------
    >>> t = read_orion_csv(io.StringIO("Name,Profile,Memory_footprint,SM_usage,Duration\\nConv,1,0,98,100480\\n"))
    >>> t.kind.tolist(), t.sm_usage.tolist(), t.duration_ns.tolist()
    ([1], [98], [100480])
    """

    def __init__(self, name: list[str], kind: Any, sm_usage: Any, duration_ns: Any) -> None:
        self.name = list(name)
        self.kind = np.asarray(kind, dtype=np.int64)
        self.sm_usage = np.asarray(sm_usage, dtype=np.int64)
        self.duration_ns = np.asarray(duration_ns, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.name)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, OrionTable) and self.name == other.name
                and all(np.array_equal(getattr(self, k), getattr(other, k)) for k in ("kind", "sm_usage", "duration_ns")))


def _rows(fh, columns: tuple[str, ...], where: str) -> list[dict[str, str]]:
    reader = csv.DictReader(fh)
    if tuple(reader.fieldnames or ()) != columns:
        raise InterfpredError(f"{where}: header {reader.fieldnames} is not {list(columns)}")
    return list(reader)


def _table(rows: list[dict[str, str]], keys: tuple[str, str, str, str], where: str) -> OrionTable:
    name_k, kind_k, sm_k, dur_k = keys
    try:
        t = OrionTable([r[name_k] for r in rows], [int(r[kind_k]) for r in rows], [int(r[sm_k]) for r in rows],
                       [int(r[dur_k]) for r in rows])
    except (ValueError, TypeError) as exc:
        raise InterfpredError(f"{where}: {exc}") from None
    if len(t) == 0:
        raise InterfpredError(f"{where}: no operators")
    for i in range(len(t)):
        if t.kind[i] not in (-1, 0, 1):
            raise InterfpredError(f"{where} line {i + 2}: class {int(t.kind[i])} is not 1, 0 or -1")
        if t.sm_usage[i] < 1 or t.duration_ns[i] < 1:
            raise InterfpredError(f"{where} line {i + 2}: SMs {int(t.sm_usage[i])} and duration "
                                  f"{int(t.duration_ns[i])} ns must be positive")
    return t


def _read_rows(path_or_file, columns: tuple[str, ...]) -> tuple[list[dict[str, str]], str]:
    """The rows of a path or an open text file with ``columns``, and a name for messages."""
    where = getattr(path_or_file, "name", None) or str(path_or_file)
    if isinstance(path_or_file, str | os.PathLike):
        with open(path_or_file, newline="", encoding="utf-8") as fh:
            return _rows(fh, columns, where), where
    return _rows(path_or_file, columns, where), where


def read_orion_csv(path_or_file) -> OrionTable:
    """Read one of Orion's original per-operator CSVs (Name, Profile, Memory_footprint, SM_usage, Duration)."""
    rows, where = _read_rows(path_or_file, _ORION_COLUMNS)
    return _table(rows, ("Name", "Profile", "SM_usage", "Duration"), where)


def to_orion_csv(table: OrionTable) -> str:
    """The table in Orion's original layout (the inverse of :func:`read_orion_csv`; footprint is 0 there)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(_ORION_COLUMNS)
    for i in range(len(table)):
        w.writerow([table.name[i], int(table.kind[i]), 0, int(table.sm_usage[i]), int(table.duration_ns[i])])
    return buf.getvalue()


def write_operator_table(table: OrionTable, path: str | os.PathLike[str]) -> None:
    """Write the shipped layout (op, name, kind, sm_usage, duration_ns), atomically."""
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(_COLUMNS)
        for i in range(len(table)):
            w.writerow([i, table.name[i], int(table.kind[i]), int(table.sm_usage[i]), int(table.duration_ns[i])])


def read_operator_table(path_or_file) -> OrionTable:
    """Read a table in the shipped layout; the ``op`` column must count 0, 1, 2, ..."""
    rows, where = _read_rows(path_or_file, _COLUMNS)
    for i, r in enumerate(rows):
        if r["op"] != str(i):
            raise InterfpredError(f"{where} line {i + 2}: op {r['op']!r}, expected {i}")
    return _table(rows, ("name", "kind", "sm_usage", "duration_ns"), where)


@functools.cache
def _shipped(model: str) -> OrionTable:
    fname, _ = ORION_MODELS[model]
    path = resources.files("interfpred") / "data" / "datasets" / "orion" / fname
    return read_operator_table(io.StringIO(path.read_text(encoding="utf-8"), newline=""))


def operator_demands(kind: np.ndarray, sm_usage: np.ndarray, n_sms: int = ORION_SMS) -> np.ndarray:
    """Derived ``(sm, l2, dram)`` per operator from its class and the SMs its grid needs.

    Examples
    --------
    >>> operator_demands(np.array([1, 0]), np.array([80.0, 98.0])).round(3).tolist()
    [[0.85, 0.45, 0.2], [0.184, 0.337, 0.49]]
    """
    u = np.asarray(sm_usage, dtype=np.float64)
    occ = u / (n_sms * np.ceil(u / n_sms))
    base = np.array([ORION_DEMANDS[int(k)] for k in np.asarray(kind)]).reshape(-1, 3)
    return occ[:, None] * base


def scale_operators(table: OrionTable, b0: int, batch_size: int, n_sms: int = ORION_SMS) -> Program:
    """The program of a pass measured at batch ``b0``, at ``batch_size`` (module docstring's rule).

    Examples
    --------
    >>> t = OrionTable(["Conv"], [1], [160], [1_000_000])
    >>> [round(float(scale_operators(t, 4, b).duration_ms[0]), 3) for b in (1, 4, 8)]
    [0.5, 1.0, 2.0]
    """
    if not isinstance(batch_size, int | np.integer) or batch_size < 1:
        raise InterfpredError(f"batch_size {batch_size!r} must be a positive integer")
    u0 = table.sm_usage.astype(np.float64)
    u = np.maximum(1.0, u0 * batch_size / b0)
    d0 = table.duration_ns / 1e6
    d = np.maximum(ORION_MIN_OP_MS, d0 * np.maximum(1.0, u / n_sms) / np.maximum(1.0, u0 / n_sms))
    if batch_size == b0:
        d = d0
    return Program(d, operator_demands(table.kind, u, n_sms), table.kind)


@functools.lru_cache(maxsize=16)
def orion_zoo(gpu: str = SIM_PHASED_DEFAULT_GPU, *, batch_sizes: tuple[int, ...] = ZOO_BATCH_SIZES,
              max_phases: int = SIM_MAX_PHASES) -> PhaseZoo:
    """The orion family on the V100 it was measured on (cached per arguments).

    Parameters
    ----------
    gpu
        Only ``"v100"``: the durations are the V100's.
    batch_sizes
        Batch sizes to build programs for (default 1..32).
    max_phases
        Phase bound of the reduction; 0 keeps every operator.
    """
    if gpu != SIM_PHASED_DEFAULT_GPU:
        raise InterfpredError(f"the orion zoo was measured on a v100, not {gpu!r}; use --gpu v100 or --zoo synthetic")
    bs = tuple(int(b) for b in batch_sizes)
    if not bs or min(bs) < 1:
        raise InterfpredError(f"batch_sizes {batch_sizes!r} must be positive integers")
    progs = {(m, b): scale_operators(_shipped(m), b0, b) for m, (_, b0) in ORION_MODELS.items() for b in bs}
    zoo = PhaseZoo.from_programs("orion", gpu, progs, hidden={m: draw_hidden(m) for m in ORION_MODELS})
    return zoo.reduced(int(max_phases))


@functools.lru_cache(maxsize=8)
def synthetic_phase_zoo(gpu: str = SIM_DEFAULT_GPU) -> PhaseZoo:
    """The synthetic zoo as one-operator programs with hidden factors (see the module docstring).

    Examples
    --------
    >>> z = synthetic_phase_zoo("l4")
    >>> len(z.program("vgg19", 8)), round(z.program("vgg19", 8).solo_ms, 3)
    (1, 22.56)
    """
    t = zoo_profiles(gpu)
    progs = {}
    for m, b, s, sm, l2, dr in zip(t.column("model"), t.column("batch_size"), t.column("solo_ms"), t.column("sm"),
                                   t.column("l2"), t.column("dram")):
        progs[(str(m), int(b))] = Program([float(s)], [[float(sm), float(l2), float(dr)]], [-1])
    return PhaseZoo.from_programs("synthetic", gpu, progs, hidden={m: draw_hidden(m) for m in t.models})


def default_gpu(truth: str, zoo: str | None = None) -> str:
    """The simulated GPU preset used when none is named, for ``simulate`` and ``reproduce`` alike.

    The V100 Orion's operator tables (and the real measurements) come from, for the phase-structured
    truth or the orion family; the fluid truth's synthetic zoo keeps its L4.

    >>> default_gpu("phases"), default_gpu("fluid"), default_gpu("fluid", "orion")
    ('v100', 'l4', 'v100')
    """
    return SIM_PHASED_DEFAULT_GPU if truth == "phases" or zoo == "orion" else SIM_DEFAULT_GPU


def phase_zoo(gpu: str, zoo: str | None = None, *, max_phases: int = SIM_MAX_PHASES) -> PhaseZoo:
    """A family by name: ``"orion"`` or ``"synthetic"``; None picks orion on a v100, synthetic elsewhere.

    Examples
    --------
    >>> phase_zoo("l4").family, phase_zoo("v100").family
    ('synthetic', 'orion')
    >>> phase_zoo("l4", "resnets")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: unknown zoo 'resnets'; known: orion, synthetic
    """
    if zoo is None:
        zoo = "orion" if gpu == SIM_PHASED_DEFAULT_GPU else "synthetic"
    if zoo == "orion":
        return orion_zoo(gpu, max_phases=max_phases)
    if zoo == "synthetic":
        return synthetic_phase_zoo(gpu)
    raise InterfpredError(f"unknown zoo {zoo!r}; known: orion, synthetic")


def scenario_family(spec: GpuSpec, truth: str, zoo: str | PhaseZoo | None,
                 profiles: ProfileTable | None) -> tuple[ProfileTable, PhaseZoo | None, str]:
    """Profiles, the model family the phase-structured truth runs (None: the fluid truth) and
    the family's name.  The fluid truth on a phase family runs that family's profiles (each pass's
    time-averaged demand, no hidden factors)."""
    if truth not in SIM_TRUTHS:
        raise InterfpredError(f"unknown truth {truth!r}; known: {', '.join(SIM_TRUTHS)}")
    if truth == "fluid":
        if zoo is None or zoo == "synthetic":
            return (zoo_profiles(spec.name) if profiles is None else profiles), None, "synthetic"
        if profiles is not None:
            raise InterfpredError("pass either profiles or a zoo, not both")
        pz = zoo if isinstance(zoo, PhaseZoo) else phase_zoo(spec.name, zoo)
        return pz.profiles(), None, pz.family
    if profiles is not None:
        raise InterfpredError("profiles apply to the fluid truth; under truth 'phases' pass a zoo")
    pz = zoo if isinstance(zoo, PhaseZoo) else phase_zoo(spec.name, zoo)
    if pz.gpu != spec.name:
        raise InterfpredError(f"zoo built for gpu {pz.gpu!r} cannot run on gpu {spec.name!r}")
    return pz.profiles(), pz, pz.family


def paper_sets(family: str):
    """(train, new, every, test-3 batch ranges, test-3 weights) of a family."""
    if family == "orion":
        return (list(ORION_TRAIN_MODELS), list(ORION_NEW_MODELS), sorted(ORION_MODELS), ORION_HETERO_BATCHES,
                ORION_HETERO_WEIGHTS)
    train, new = list(PAPER_TRAIN_MODELS), list(PAPER_NEW_MODELS)
    return train, new, train + new, PAPER_HETERO_BATCHES, PAPER_HETERO_WEIGHTS
