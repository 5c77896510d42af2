"""A SYNTHETIC model zoo: solo profiles of six models, made up, of plausible magnitude.

Nothing here was measured on a GPU. The six models are named after those in Zhao & Georgantas
(2026) and each is defined by a handful of documented parameters (:data:`ZOO_MODELS`, with the
hardware factors of :data:`ZOO_HARDWARE` per GPU): latency flat then linear in batch size, SM and
L2 throughput rising and saturating, DRAM throughput from bytes moved per unit time. Batch sizes
are every integer 1..32; every row carries ``source=synthetic``. docs/simulator.md gives the
formulas and the table.

Examples
--------
>>> zoo = zoo_profiles("l4")
>>> zoo.models
('convnext_b', 'resnet50', 'roberta_base', 'vgg19', 'vit_b16', 'yolov8n')
>>> p = zoo.lookup("roberta_base", 1)
>>> p.dram > p.sm, p.extra["source"]
(True, 'synthetic')
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from interfpred.constants import SIM_DEFAULT_GPU
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.sim.contention import GPU_PRESETS

__all__ = ["ZOO_MODELS", "ZOO_HARDWARE", "ZOO_BATCH_SIZES", "PAPER_BATCH_SIZES", "PAPER_HETERO_BATCHES",
           "PAPER_HETERO_WEIGHTS", "PAPER_NEW_MODELS", "PAPER_TRAIN_MODELS", "zoo_profiles"]

#: E2's training models and the models that only appear at test time.
PAPER_TRAIN_MODELS = ("resnet50", "vgg19", "roberta_base", "vit_b16")
PAPER_NEW_MODELS = ("convnext_b", "yolov8n")
#: Batch sizes of the homogeneous sets (uniform over these).
PAPER_BATCH_SIZES = (1, 2, 4, 8, 16)
#: Test set 3's heterogeneous batch-size ranges (uniform over each inclusive range) and load shares.
PAPER_HETERO_BATCHES = {
    "resnet50": (1, 32), "vgg19": (1, 8), "convnext_b": (1, 16),
    "roberta_base": (8, 32), "vit_b16": (1, 32), "yolov8n": (16, 32),
}
PAPER_HETERO_WEIGHTS = {
    "resnet50": 3.0, "vgg19": 1.0, "convnext_b": 1.0, "roberta_base": 2.0, "vit_b16": 1.0, "yolov8n": 2.0,
}

#: Profiled batch sizes: every integer from 1 to 32.
ZOO_BATCH_SIZES = tuple(range(1, 33))

#: Parameters per model (L4 values).  t0: ms at tiny batch; per_sample: ms per extra sample in
#: the linear regime; knee: batch size where latency turns linear; sm_max, b_half: SM
#: saturation level and half-saturation batch; l2_lo, l2_hi: L2 throughput at tiny and huge
#: batch; weight_mb: DRAM traffic per batch (weights, fp16 with re-reads); act_mb: DRAM traffic
#: per sample (activations).
_ZOO_PARAMS = ("t0", "per_sample", "knee", "sm_max", "b_half", "l2_lo", "l2_hi", "weight_mb", "act_mb")
ZOO_MODELS: dict[str, dict[str, float]] = {m: dict(zip(_ZOO_PARAMS, row)) for m, row in {
    #               t0   per_sample knee sm_max b_half l2_lo l2_hi weight_mb act_mb
    "resnet50":     (2.8, 0.85,      4.0, 0.85,  3.0,   0.25, 0.45, 50.0,     25.0),
    "vgg19":        (4.0, 2.90,      2.0, 0.92,  1.5,   0.30, 0.50, 280.0,    60.0),
    "convnext_b":   (6.5, 3.30,      3.0, 0.85,  2.5,   0.30, 0.50, 178.0,    70.0),
    "roberta_base": (3.8, 1.15,      6.0, 0.80,  6.0,   0.40, 0.55, 420.0,    12.0),
    "vit_b16":      (4.2, 1.80,      5.0, 0.82,  5.0,   0.35, 0.55, 330.0,    20.0),
    "yolov8n":      (3.2, 1.30,      3.0, 0.60,  8.0,   0.35, 0.50, 6.0,      120.0),
}.items()}

#: Hardware factors per GPU applied to :data:`ZOO_MODELS`.  launch: factor on t0; compute: factor
#: on per_sample; fill: factor on b_half (a bigger GPU needs bigger batches to fill); sm_scale:
#: factor on sm_max; bandwidth_mb_per_ms: DRAM bandwidth (L4: 300 GB/s, A100-40GB: 1555 GB/s,
#: V100: 900 GB/s; the V100's fp16 tensor throughput is the L4's, its 80 SMs need larger batches).
ZOO_HARDWARE: dict[str, dict[str, float]] = {
    "l4":   dict(launch=1.0, compute=1.0, fill=1.0, sm_scale=1.0, bandwidth_mb_per_ms=300.0),
    "a100": dict(launch=0.75, compute=0.40, fill=2.0, sm_scale=0.95, bandwidth_mb_per_ms=1555.0),
    "v100": dict(launch=1.0, compute=1.0, fill=1.4, sm_scale=1.0, bandwidth_mb_per_ms=900.0),
}


def _model_rows(name: str, hw: dict[str, float], batch: np.ndarray, dram_cap: float) -> dict[str, np.ndarray]:
    p = ZOO_MODELS[name]
    t0 = p["t0"] * hw["launch"]
    per = p["per_sample"] * hw["compute"]
    solo = t0 + per * batch ** 2 / (batch + p["knee"])
    fill = batch / (batch + p["b_half"] * hw["fill"])
    sm = p["sm_max"] * hw["sm_scale"] * fill
    l2 = p["l2_lo"] + (p["l2_hi"] - p["l2_lo"]) * fill
    dram = (p["weight_mb"] + p["act_mb"] * batch) / (solo * hw["bandwidth_mb_per_ms"])
    # A solo run never exceeds what the GPU delivers under overlap either (see GpuSpec).
    dram = np.minimum(dram, dram_cap)
    return {"solo_ms": np.round(solo, 6), "sm": np.round(sm, 6), "l2": np.round(l2, 6),
            "dram": np.round(dram, 6)}


def zoo_profiles(gpu: str = SIM_DEFAULT_GPU) -> ProfileTable:
    """The synthetic zoo's profiles on one GPU preset, as a :class:`ProfileTable`.

    Parameters
    ----------
    gpu
        ``"l4"``, ``"a100"`` or ``"v100"``.  The table's ``gpu`` column holds this name, so the simulator
        finds the profiles under its :class:`~interfpred.sim.contention.GpuSpec` name.

    Returns
    -------
    ProfileTable
        Six models x batch sizes 1..32, with an extra column ``source`` = ``synthetic``.

    Examples
    --------
    >>> t = zoo_profiles("a100")
    >>> len(t), t.gpus, t.batch_sizes("vgg19")[-1]
    (192, ('a100',), 32)
    >>> zoo_profiles("a100").lookup("vgg19", 8).solo_ms < zoo_profiles("l4").lookup("vgg19", 8).solo_ms
    True
    >>> zoo_profiles("h100")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: no synthetic zoo profiles for gpu 'h100'; known: a100, l4, v100
    """
    if gpu not in ZOO_HARDWARE:
        raise InterfpredError(f"no synthetic zoo profiles for gpu {gpu!r}; known: {', '.join(sorted(ZOO_HARDWARE))}")
    hw = ZOO_HARDWARE[gpu]
    cap = GPU_PRESETS[gpu].capacity_dram
    batch = np.asarray(ZOO_BATCH_SIZES, dtype=np.float64)
    cols: dict[str, list] = {k: [] for k in ("gpu", "model", "batch_size", "solo_ms", "sm", "l2", "dram")}
    for name in ZOO_MODELS:
        rows = _model_rows(name, hw, batch, cap)
        cols["gpu"] += [gpu] * len(batch)
        cols["model"] += [name] * len(batch)
        cols["batch_size"] += list(ZOO_BATCH_SIZES)
        for k in ("solo_ms", "sm", "l2", "dram"):
            cols[k] += rows[k].tolist()
    n = len(cols["gpu"])
    return ProfileTable.from_columns(**cast(dict[str, Any], cols), extra={"source": ["synthetic"] * n})


def zoo_markdown(gpu: str = SIM_DEFAULT_GPU, batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)) -> str:
    """The zoo as a Markdown table (used to render docs/simulator.md).

    Examples
    --------
    >>> print(zoo_markdown("l4", (1,)).splitlines()[2])
    | convnext_b | 1 | 7.325 | 0.243 | 0.357 | 0.113 |
    """
    t = zoo_profiles(gpu)
    lines = ["| model | batch | solo_ms | sm | l2 | dram |", "|---|---:|---:|---:|---:|---:|"]
    for m in t.models:
        for b in batch_sizes:
            p = t.lookup(m, b)
            lines.append(f"| {m} | {b} | {p.solo_ms:.3f} | {p.sm:.3f} | {p.l2:.3f} | {p.dram:.3f} |")
    return "\n".join(lines)
