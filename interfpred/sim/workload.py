"""Simulated scenarios: the paper's E2 sets or one custom mix, and writing them to a folder.

A scenario is named traces (each from Poisson arrivals, :mod:`interfpred.sim.arrivals`, run
through an engine) and the profiles they were simulated from; see docs/simulator.md for the sets
and the ground truths.

Examples
--------
>>> sc = mix_scenario(["resnet50", "vgg19"], rho=0.5, executions=100, seed=1)
>>> list(sc.traces), len(sc.traces["trace"])
(['trace'], 100)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from interfpred._core.atomic import recover, staged_folder
from interfpred._core.limits import check_limit
from interfpred.constants import (
    SCHEMA_VERSION,
    SIM_DEFAULT_EXECUTIONS,
    SIM_DEFAULT_GPU,
    SIM_DEFAULT_TRUTH,
    SIM_HIDDEN_SEED,
    SIM_MIN_EXECUTIONS,
    SIM_RHO_LIGHT,
    SIM_RHO_MODERATE,
    SIM_RHO_STRESS,
)
from interfpred.data.columnar import write_profiles, write_trace
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.sim._executions import check_seed
from interfpred.sim.arrivals import Arrivals, BatchSpec, poisson_arrivals, simulate_arrivals
from interfpred.sim.contention import GpuSpec, get_gpu_spec
from interfpred.sim.operators import PhaseZoo
from interfpred.sim.orion import paper_sets, scenario_family
from interfpred.sim.zoo import PAPER_BATCH_SIZES

__all__ = ["Scenario", "check_scenario_out", "mix_scenario", "paper_scenario", "write_scenario"]


@dataclass(frozen=True)
class Scenario:
    """Named simulated traces and the profiles they were simulated from.

    Attributes
    ----------
    profiles
        The solo profiles (time averages of the programs under the phase-structured truth).
    spec
        The GPU type.
    traces
        Set name -> Trace (sorted by launch, ``solo_ms`` = noisy solo work).
    arrival_ms
        Set name -> arrival time per trace row.
    sets
        Set name -> description (phases with models, rho, batch sizes, first id, count).
    """

    profiles: ProfileTable
    spec: GpuSpec
    traces: dict[str, Trace]
    arrival_ms: dict[str, np.ndarray]
    sets: dict[str, dict] = field(default_factory=dict)
    seed: int | None = None
    zoo: PhaseZoo | None = None
    family: str = "synthetic"

    @property
    def source(self) -> str:
        """The label of the profiles' family (what their ``source`` column says)."""
        return "orion operators, derived demands" if self.family == "orion" else "synthetic"

    @property
    def truth(self) -> str:
        """``"phases"`` (operator-level truth on :attr:`zoo`) or ``"fluid"``."""
        return "fluid" if self.zoo is None else "phases"

    def manifest(self) -> dict:
        """A JSON-able description (what :func:`write_scenario` stores as scenario.json)."""
        source = self.source
        extra = {"zoo": self.family} if self.zoo is None else {"zoo": self.family, "max_phases": self.zoo.max_phases,
                                                                "hidden_seed": SIM_HIDDEN_SEED}
        return {"schema_version": SCHEMA_VERSION, "source": source, "truth": self.truth, **extra, "seed": self.seed,
                "gpu": self.spec.model_dump(), "sets": self.sets,
                "files": {"profiles": "profiles.csv", **{k: f"{k}.csv" for k in self.traces}}}


def _run_phases(name: str, phases: list[dict], *, spec: GpuSpec, profiles: ProfileTable, n_devices: int,
                first_id: int, seed: np.random.SeedSequence, zoo: PhaseZoo | None = None
                ) -> tuple[Trace, np.ndarray, dict]:
    arr_rng, noise_rng = (np.random.default_rng(s) for s in seed.spawn(2))
    parts: list[Arrivals] = []
    t0 = 0.0
    next_id = first_id
    described = []
    for ph in phases:
        a = poisson_arrivals(ph["models"], rho=ph["rho"], executions=ph["executions"], profiles=profiles,
                             spec=spec, batch_sizes=ph.get("batch_sizes"), weights=ph.get("weights"),
                             n_devices=n_devices, start_ms=t0, first_id=next_id, seed=arr_rng)
        parts.append(a)
        described.append({**{k: v for k, v in ph.items() if k != "batch_sizes"},
                          "batch_sizes": _describe_batches(ph.get("batch_sizes")),
                          "first_id": next_id, "start_ms": t0})
        if len(a):
            t0 = float(a.time_ms[-1])
        next_id += len(a)
    arrivals = Arrivals.concat(parts)
    res = simulate_arrivals(arrivals, spec=spec, profiles=profiles, seed=noise_rng, zoo=zoo)
    return res.trace, res.arrival_ms, {"name": name, "gpus": n_devices, "phases": described}


def _describe_batches(b) -> object:
    if b is None:
        return "all profiled"
    if isinstance(b, Mapping):
        return {str(k): (list(map(int, v)) if isinstance(v, Sequence | range | np.ndarray) else
                         {str(kk): float(vv) for kk, vv in v.items()} if isinstance(v, Mapping) else float(v))
                for k, v in b.items()}
    return [int(x) for x in b]


def _split(total: int, parts: int) -> list[int]:
    base = [total // parts] * parts
    for i in range(total % parts):
        base[i] += 1
    return base


def paper_scenario(spec: GpuSpec | str = SIM_DEFAULT_GPU, *, seed: int = 0, executions: int = SIM_DEFAULT_EXECUTIONS,
                   n_devices: int = 1, profiles: ProfileTable | None = None, truth: str = SIM_DEFAULT_TRUTH,
                   zoo: str | PhaseZoo | None = None) -> Scenario:
    """The paper's E2 sets, simulated on a model family.

    The synthetic family's sets are listed below; the orion family's use
    :data:`~interfpred.sim.orion.ORION_TRAIN_MODELS` (resnet50, mobilenetv2, bert, transformer_xl)
    for training and test 1, :data:`~interfpred.sim.orion.ORION_NEW_MODELS` (efficientnet,
    retinanet) for test 2, and all seven (with resnet101, seen nowhere else) for test 3.

    * ``train``: {resnet50, vgg19, roberta_base, vit_b16} at moderate load (rho 0.9), batch sizes
      uniform over 1, 2, 4, 8, 16 (experiments split it 75/25);
    * ``test1``: the same models, a light phase (rho 0.3) then a stress phase (rho 1.4), half each;
    * ``test2``: the new models {convnext_b, yolov8n} at moderate load, same batch sizes;
    * ``test3``: all six, heterogeneous batch sizes (a different range per model, 1..32 in all),
      unequal load shares, and loads light, moderate, stress, moderate in quarters.

    Parameters
    ----------
    spec
        GPU preset name or spec (profiles default to its synthetic zoo).
    seed
        Seed of everything (arrivals and noise; sets use independent child seeds).
    executions
        Executions per set (small values make quick traces; at least 4).
    n_devices
        Devices per set (GPUs ``gpu0..``), arrivals spread uniformly; rho is per device.
    profiles
        Override the zoo (must cover the six models on ``spec``; fluid truth only).
    truth
        ``"phases"`` (operator-level ground truth with hidden per-model factors) or ``"fluid"``
        (one demand vector per execution, the profile's).
    zoo
        Family: ``"orion"``, ``"synthetic"``, a :class:`~interfpred.sim.operators.PhaseZoo`, or None
        (under ``truth="phases"`` orion on a v100, else synthetic; under ``"fluid"`` synthetic).
        The fluid truth on the orion family runs its profiles (each pass's time-averaged demand,
        without the hidden factors): the phase structure and hidden factors removed, the rest equal.

    Examples
    --------
    >>> sc = paper_scenario("l4", seed=0, executions=400)
    >>> sorted(sc.traces), len(sc.traces["test3"])
    (['test1', 'test2', 'test3', 'train'], 400)
    >>> sorted(set(sc.traces["test2"].model.tolist()))
    ['convnext_b', 'yolov8n']
    """
    spec = get_gpu_spec(spec)
    profiles, pz, family = scenario_family(spec, truth, zoo, profiles)
    if not isinstance(executions, int | np.integer) or executions < SIM_MIN_EXECUTIONS:
        raise InterfpredError(f"executions {executions!r} must be an integer >= {SIM_MIN_EXECUTIONS} (executions per set)")
    check_limit("EXECUTIONS_MAX", int(executions), "executions")
    train, new, every, hetero_b, hetero_w = paper_sets(family)
    half = _split(executions, 2)
    quarter = _split(executions, 4)
    bs = list(PAPER_BATCH_SIZES)
    hetero = {m: list(range(lo, hi + 1)) for m, (lo, hi) in hetero_b.items()}
    plans = {
        "train": [dict(models=train, rho=SIM_RHO_MODERATE, executions=executions, batch_sizes=bs)],
        "test1": [dict(models=train, rho=SIM_RHO_LIGHT, executions=half[0], batch_sizes=bs),
                  dict(models=train, rho=SIM_RHO_STRESS, executions=half[1], batch_sizes=bs)],
        "test2": [dict(models=new, rho=SIM_RHO_MODERATE, executions=executions, batch_sizes=bs)],
        "test3": [dict(models=every, rho=r, executions=q, batch_sizes=hetero, weights=hetero_w)
                  for r, q in zip((SIM_RHO_LIGHT, SIM_RHO_MODERATE, SIM_RHO_STRESS, SIM_RHO_MODERATE), quarter)],
    }
    children = np.random.SeedSequence(check_seed(seed)).spawn(len(plans))
    traces, arrivals, sets = {}, {}, {}
    for i, (name, phases) in enumerate(plans.items()):
        trace, arr, desc = _run_phases(name, phases, spec=spec, profiles=profiles, n_devices=n_devices,
                                       first_id=i * 10 ** (len(str(executions)) + 1), seed=children[i], zoo=pz)
        traces[name], arrivals[name], sets[name] = trace, arr, desc
    return Scenario(profiles=profiles, spec=spec, traces=traces, arrival_ms=arrivals, sets=sets, seed=seed, zoo=pz,
                    family=family)


def mix_scenario(models: Sequence[str], *, rho: float, spec: GpuSpec | str = SIM_DEFAULT_GPU, seed: int = 0,
                 executions: int = SIM_DEFAULT_EXECUTIONS, batch_sizes: BatchSpec | None = None, n_devices: int = 1,
                 profiles: ProfileTable | None = None, truth: str = SIM_DEFAULT_TRUTH,
                 zoo: str | PhaseZoo | None = None) -> Scenario:
    """One set, ``trace``: the given models at one load (a custom workload); ``truth`` and ``zoo``
    as in :func:`paper_scenario`.

    Examples
    --------
    >>> sc = mix_scenario(["resnet50", "yolov8n"], rho=0.7, executions=50, batch_sizes=[1, 32])
    >>> list(sc.traces), sorted(set(sc.traces["trace"].batch_size.tolist()))
    (['trace'], [1, 32])
    """
    spec = get_gpu_spec(spec)
    profiles, pz, family = scenario_family(spec, truth, zoo, profiles)
    phases = [dict(models=list(models), rho=rho, executions=executions, batch_sizes=batch_sizes)]
    trace, arr, desc = _run_phases("trace", phases, spec=spec, profiles=profiles, n_devices=n_devices, first_id=0,
                                   seed=np.random.SeedSequence(check_seed(seed)), zoo=pz)
    return Scenario(profiles=profiles, spec=spec, traces={"trace": trace}, arrival_ms={"trace": arr},
                    sets={"trace": desc}, seed=seed, zoo=pz, family=family)


def check_scenario_out(out: str | os.PathLike[str], *, force: bool = False, format: str = "csv") -> str:
    """Refuse an output folder :func:`write_scenario` would refuse, before anything is simulated; returns its
    absolute path.

    Refused: ``out`` is a file; ``out`` is a non-empty folder and not ``force``; its parent folder does
    not exist; ``format`` is not ``"csv"`` or ``"parquet"``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> afile = pathlib.Path(tempfile.mkdtemp()) / "afile"
    >>> _ = afile.write_text("keep")
    >>> check_scenario_out(afile, force=True)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: output ...afile exists and is not a folder
    """
    out = os.path.abspath(os.fspath(out))
    recover(out)  # a run killed while replacing ``out`` left it aside: put it back first
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise InterfpredError(f"output {out} exists and is not a folder")
        if os.listdir(out) and not force:
            raise InterfpredError(f"output folder {out} exists and is not empty; pass --force (force=True) to replace it")
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise InterfpredError(f"parent folder {parent} of the output does not exist")
    if format not in ("csv", "parquet"):
        raise InterfpredError(f"format {format!r} must be 'csv' or 'parquet'")
    return out


def write_scenario(scenario: Scenario, out: str | os.PathLike[str], *, force: bool = False,
                   operators: bool = False, format: str = "csv") -> list[str]:
    """Write ``profiles.csv``, one ``<set>.csv`` per trace and ``scenario.json`` into ``out``.

    With ``operators`` (phase-structured truth only) also ``operators.csv``: the operator-level
    profile of every (model, batch size) the traces hold, one row per operator (or phase) with
    its solo ``duration_ms`` and demands ``sm, l2, dram``; the hidden per-model factors are not in it.
    ``format="parquet"`` writes the profiles and traces as ``.parquet`` files instead (needs
    pyarrow, the ``parquet`` extra); ``operators.csv`` stays CSV.

    The files are written into a temporary folder beside ``out`` which replaces it only once
    complete, so ``out`` is never left half-written; a run killed at any point leaves the old
    ``out`` (or a leftover the next run puts back and cleans up: :func:`interfpred._core.atomic.recover`).  An existing non-empty ``out`` is refused unless
    ``force`` (then it is replaced as a whole).  Returns the file names written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "sim"
    >>> write_scenario(mix_scenario(["vgg19"], rho=0.5, executions=10), out)
    ['profiles.csv', 'trace.csv', 'scenario.json']
    >>> write_scenario(mix_scenario(["vgg19"], rho=0.5, executions=10), out)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: output folder ... exists and is not empty; pass --force (force=True) to replace it
    """
    out = check_scenario_out(out, force=force, format=format)
    if operators and scenario.zoo is None:
        raise InterfpredError("an operator-level profile needs the phase-structured truth (truth 'phases')")
    names = [f"profiles.{format}", *(f"{k}.{format}" for k in scenario.traces),
             *(["operators.csv"] if operators else []), "scenario.json"]
    with staged_folder(out) as tmp:
        write_profiles(scenario.profiles, os.path.join(tmp, names[0]))
        if operators and scenario.zoo is not None:
            keys = {(str(m), int(b)) for t in scenario.traces.values() for m, b in zip(t.model, t.batch_size)}
            cols = scenario.zoo.operator_rows(keys)
            with open(os.path.join(tmp, "operators.csv"), "w", encoding="utf-8", newline="") as fh:
                fh.write(",".join(cols) + "\n")
                for row in zip(*cols.values()):
                    fh.write(",".join(repr(v) if isinstance(v, float) else str(v) for v in row) + "\n")
        for k, t in scenario.traces.items():
            write_trace(t, os.path.join(tmp, f"{k}.{format}"))
        with open(os.path.join(tmp, "scenario.json"), "w", encoding="utf-8") as fh:
            json.dump(scenario.manifest(), fh, indent=2, sort_keys=True)
            fh.write("\n")
    return names
