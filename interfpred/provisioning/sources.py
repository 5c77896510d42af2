"""What ``plan`` and ``advise`` run on: one set of GPU names, and profiles from any table they are given.

Both commands name a GPU by its kind (:func:`~interfpred.provisioning.mig.gpu_kind`: ``a100-40gb``,
``a100-80gb``, ``h100-80gb``, ``h200-141gb``, or a simulator preset without MIG such as ``l4``),
and both refuse a GPU the profiles were not measured on with the same one-line message
(:func:`~interfpred.provisioning.mig.check_same_gpu`). :func:`advise_inputs` turns what ``advise``
is given into the simulated GPU and the solo profiles it simulates:

* no profiles: the simulator's synthetic zoo on the preset of that kind (``a100-40gb`` and
  ``a100-80gb`` use the ``a100`` preset);
* a profile table (solo latency, SM / L2 / DRAM throughput; ``dataset:h200_streams`` ships one):
  the GPU it was measured on, with the preset's contention constants when the kind has a preset
  and the simulator's defaults otherwise;
* a table of MIG x MPS configurations (``dataset:parvagpu_a100``, the one ``plan`` reads):
  :func:`profiles_from_configs` derives solo profiles from it.

Examples
--------
>>> spec, prof = advise_inputs(None, "a100-80gb")
>>> spec.name, prof.gpus, spec.theta == get_gpu_spec("a100").theta
('a100-80gb', ('a100-80gb',), True)
>>> advise_inputs(None, "h100-80gb")
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: gpu 'h100-80gb': the synthetic zoo has profiles for a100-40gb, a100-80gb, l4, v100 only; give --profiles measured on h100-80gb
"""

from __future__ import annotations

import numpy as np

from interfpred.constants import ADVISE_DEFAULT_GPU
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.provisioning.mig import check_same_gpu, gpu_kind
from interfpred.provisioning.plan import ConfigTable
from interfpred.sim import GPU_PRESETS, GpuSpec, get_gpu_spec
from interfpred.sim.zoo import zoo_profiles

__all__ = ["ZOO_PRESETS", "advise_inputs", "profiles_from_configs"]

#: The simulator preset (its contention constants and synthetic zoo) of each GPU kind that has one.
ZOO_PRESETS = {"a100-40gb": "a100", "a100-80gb": "a100", "l4": "l4", "v100": "v100"}


def _relabel(profiles: ProfileTable, kind: str, *, every: bool = False) -> ProfileTable:
    """The rows of ``profiles`` measured on ``kind`` (by :func:`gpu_kind`; ``every``: all rows, of one GPU by
    another name), their ``gpu`` column written as ``kind``."""
    if all(g == kind for g in profiles.gpus):
        return profiles
    idx = (np.arange(len(profiles)) if every else
           np.flatnonzero([gpu_kind(g) == kind for g in profiles.column("gpu").tolist()]))

    def col(name: str) -> list:
        return np.asarray(profiles.column(name))[idx].tolist()

    return ProfileTable.from_columns(gpu=[kind] * len(idx), model=col("model"), batch_size=col("batch_size"),
                                     solo_ms=col("solo_ms"), sm=col("sm"), l2=col("l2"), dram=col("dram"),
                                     share=col("share"),
                                     extra={c: [str(v) for v in col(c)] for c in profiles.extra_columns})


def profiles_from_configs(table: ConfigTable, gpu: str | None = None) -> ProfileTable:
    """Solo profiles from a MIG x MPS table: each model's batches on the whole GPU, one process.

    ``solo_ms`` is the latency of the configuration of the most GPCs with one process. The table
    holds no throughput counters, so one demand stands for them: how much of the GPU one batch
    keeps busy, read from how its own copies share the whole GPU under MPS. ``p`` copies of a
    batch of demand ``u`` run at ``min(1, 1 / (p u))`` of solo speed in the simulator's fluid
    truth, so ``u = max_p latency(p) / (p latency(1))`` over ``p >= 2`` (1, the whole GPU, when the
    table has one process only);
    it is written as the SM throughput, with L2 and DRAM left at 0 (the simulator then contends
    on SMs alone).

    Examples
    --------
    >>> t = ConfigTable.from_rows([("a", 7, 8, 1, 10.0), ("a", 7, 8, 2, 12.0), ("a", 7, 8, 3, 18.0)],
    ...                           ).rescaled(1.0, "a100-80gb")
    >>> p = profiles_from_configs(t)
    >>> p.lookup("a", 8).solo_ms, p.lookup("a", 8).sm, p.gpus
    (10.0, 0.6, ('a100-80gb',))
    """
    kind = gpu_kind(gpu or (table.gpus[0] if len(table.gpus) == 1 else ADVISE_DEFAULT_GPU))
    rows: list[tuple[str, int, float, float]] = []
    for model in table.models:
        keys = [k for k in table.latency_ms if k[0] == model]
        top = max(k[1] for k in keys)
        for b in sorted({k[2] for k in keys if k[1] == top and k[3] == 1}):
            solo = table.latency_ms[(model, top, b, 1)]
            ratios = [table.latency_ms[k] / (k[3] * solo) for k in keys if k[1] == top and k[2] == b and k[3] > 1]
            rows.append((model, b, solo, float(min(1.0, max(ratios, default=1.0)))))
    if not rows:
        raise InterfpredError("the configurations hold no batch of one process: no solo profile to derive")
    return ProfileTable.from_columns(gpu=[kind] * len(rows), model=[r[0] for r in rows],
                                     batch_size=[r[1] for r in rows], solo_ms=[r[2] for r in rows],
                                     sm=[r[3] for r in rows], l2=[0.0] * len(rows), dram=[0.0] * len(rows))


def advise_inputs(profiles: ProfileTable | ConfigTable | None, gpu: str | GpuSpec | None
                  ) -> tuple[GpuSpec, ProfileTable]:
    """The simulated GPU and the profiles ``advise`` runs on (see the module); refusals are one line.

    ``gpu`` None means the profiles' own GPU (or ``ADVISE_DEFAULT_GPU`` for the zoo); a
    :class:`~interfpred.sim.GpuSpec` is taken as given, its profiles looked up under its name.
    """
    if isinstance(gpu, GpuSpec):
        spec = gpu
        if isinstance(profiles, ConfigTable):
            profiles = profiles_from_configs(profiles, spec.name)
        return spec, (zoo_profiles(spec.name) if profiles is None else profiles)
    if profiles is None:
        kind = gpu_kind(gpu or ADVISE_DEFAULT_GPU)
        if kind not in ZOO_PRESETS:
            raise InterfpredError(f"gpu {gpu!r}: the synthetic zoo has profiles for {', '.join(sorted(ZOO_PRESETS))} "
                                  f"only; give --profiles measured on {kind}")
        preset = ZOO_PRESETS[kind]
        return get_gpu_spec(preset).model_copy(update={"name": kind}), _relabel(zoo_profiles(preset), kind, every=True)
    measured = profiles.gpus
    if not measured:
        raise InterfpredError("the profiles name no GPU: give profiles with a gpu column")
    kinds = sorted({gpu_kind(g) for g in measured})
    if gpu is None:
        if len(kinds) > 1:
            raise InterfpredError(f"the profiles hold several GPUs ({', '.join(kinds)}): give --gpu")
        kind = kinds[0]
    else:
        check_same_gpu(gpu, measured, what="advise")
        kind = gpu_kind(gpu)
    if isinstance(profiles, ConfigTable):
        profiles = profiles_from_configs(profiles, kind)
    physics = GPU_PRESETS[ZOO_PRESETS[kind]] if kind in ZOO_PRESETS else GpuSpec(name=kind)
    return physics.model_copy(update={"name": kind}), _relabel(profiles, kind)
