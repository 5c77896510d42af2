"""Read ParvaGPU's A100-80GB profiles (MIG instance x batch size x MPS processes), SLO sets and plans.

ParvaGPU (Lee et al., "ParvaGPU: Efficient Spatial GPU Sharing for Large-Scale DNN Inference in
Cloud Environments", SC 2024; MIT licence, MunQ-Lee/ParvaGPU_SC24 commit 5f3de1e) measured 11
inference models on an A100-80GB in every MIG instance size (1, 2, 3, 4 and 7 GPCs), at batch
sizes 1 to 256, with 1 to 5 MPS processes of the same model sharing the instance. The files are
shipped unchanged in ``parvagpu_a100/`` beside this module (licence in ``parvagpu_a100/LICENSE``):

- ``prof_data/<model>.csv``: ``Mig instance`` (GPCs), ``Batch size``, ``Workload Number`` (MPS
  processes), ``Throughput`` (requests/s of one process) and ``Latency`` (seconds, rounded to the
  millisecond);
- ``SLO/SLO_req_rate.csv`` and ``SLO/SLO_latency.csv``: six SLO sets, one row each, columns in
  the models' alphabetical order, ``N/A`` where a set does not serve a model; latency in ms;
- ``deployment/slo<k>.csv``: ParvaGPU's own plan for set k (``Num instance`` is the server,
  ``Num GPU`` the GPU within it, ``Placement`` the first MIG slice, ``Instance size`` in GPCs).

Rows with throughput and latency both ``0`` are configurations ParvaGPU did not run (728 of
2475: five processes in the smaller instances, large batches); they are left out, never read as
measurements. Latency is ``1000 * batch / throughput`` ms: the throughput column carries five
significant digits where the latency column is rounded to the millisecond (``0.013`` s for
13.44 ms), and the two agree within that rounding.

Examples
--------
>>> m = parvagpu_measurements()
>>> len(parvagpu_models()), m.n_runs, str(m.gpu[0])
(11, 1747, 'a100-80gb')
>>> sorted(set(m.columns()["partition"].tolist()))
['1', '2', '3', '4', '7']
>>> slo = parvagpu_slo(1)
>>> slo["bert"]
(19.0, 6434.0)
>>> len(slo), len(parvagpu_slo(2))
(6, 11)
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from interfpred._core.atomic import csv_rows, headed_csv_rows, read_text
from interfpred._core.numbers import is_int_text
from interfpred.data.measurements import Measurements
from interfpred.errors import InputError, InterfpredError

__all__ = ["PARVAGPU_DIR", "PARVAGPU_GPU", "PARVAGPU_SLO_SETS", "parvagpu_deployment", "parvagpu_measurements",
           "parvagpu_models", "parvagpu_slo"]

#: The shipped copy of ParvaGPU's files.
PARVAGPU_DIR = Path(__file__).with_name("parvagpu_a100")
#: The GPU every ParvaGPU profile was measured on.
PARVAGPU_GPU = "a100-80gb"
#: How many SLO sets ParvaGPU defines (numbered from 1).
PARVAGPU_SLO_SETS = 6
#: GPUs per server in ParvaGPU's plans (``Num GPU`` runs 0-7 within each ``Num instance``).
PARVAGPU_GPUS_PER_SERVER = 8

_PROFILE_HEADER = ("Mig instance", "Batch size", "Workload Number", "Throughput", "Latency")
_PLAN_HEADER = ("Num instance", "Num GPU", "Model", "Placement", "Instance size", "Batch size", "Num proc")


def _number(text: str, what: str, path: Path, line: int, *, integer: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{what} {text!r} is not a number", path=path, line=line) from None
    if not math.isfinite(value) or value <= 0 or (integer and value != int(value)):
        kind = "a positive integer" if integer else "a positive finite number"
        raise InputError(f"{what} {text!r} must be {kind}", path=path, line=line)
    return value


def _zero(text: str) -> bool:
    try:
        return float(text) == 0.0
    except ValueError:
        return False


def _index(text: str, what: str, path: Path, line: int) -> int:
    if not (is_int_text(text) and int(text) >= 0):
        raise InputError(f"{what} {text!r} must be an index (an integer, 0 or more)", path=path, line=line)
    return int(text)


def parvagpu_models(folder: Path = PARVAGPU_DIR) -> tuple[str, ...]:
    """The profiled models, alphabetical (the order of the SLO files' columns)."""
    names = tuple(sorted(p.stem for p in (Path(folder) / "prof_data").glob("*.csv")))
    if not names:
        raise InterfpredError(f"{Path(folder) / 'prof_data'}: no <model>.csv profiles")
    return names


def parvagpu_measurements(folder: Path = PARVAGPU_DIR) -> Measurements:
    """ParvaGPU's profiles as measurement runs: one run per (model, MIG size, batch, processes).

    A run of ``n`` processes has ``n`` members (labelled ``1..n``), each with ``observed_ms`` the
    measured latency of one process and ``solo_ms`` the latency of one process alone in an instance
    of the same size at the same batch size. Extra columns: ``mechanism`` (``mig``; processes share
    their instance through MPS), ``partition`` (GPCs of the instance) and ``processes``.
    """
    folder = Path(folder)
    cols: dict[str, Any] = {k: [] for k in ("run", "gpu", "model", "batch_size", "member", "solo_ms",
                                             "observed_ms", "mechanism", "partition", "processes")}
    for model in parvagpu_models(folder):
        path = folder / "prof_data" / f"{model}.csv"
        latency: dict[tuple[int, int, int], float] = {}
        skipped: set[tuple[int, int, int]] = set()
        for line, f in headed_csv_rows(path, _PROFILE_HEADER):
            gpcs, batch, procs = (int(_number(f[i], _PROFILE_HEADER[i], path, line, integer=True)) for i in range(3))
            key = (gpcs, batch, procs)
            if key in latency or key in skipped:
                raise InputError(f"duplicate row for {gpcs} GPCs, batch {batch}, {procs} processes",
                                 path=path, line=line)
            if _zero(f[3]) and _zero(f[4]):
                skipped.add(key)  # a configuration ParvaGPU did not run (0 and 0), never a measurement
                continue
            thr = _number(f[3], "Throughput", path, line)
            _number(f[4], "Latency", path, line)
            latency[key] = 1000.0 * batch / thr
        for (gpcs, batch, procs), ms in latency.items():
            solo = latency.get((gpcs, batch, 1))
            if solo is None:
                raise InputError(f"no single-process row for {gpcs} GPCs at batch {batch}", path=path)
            for member in range(1, procs + 1):
                for k, v in (("run", f"{model}/{gpcs}g/b{batch}/n{procs}"), ("gpu", PARVAGPU_GPU),
                             ("model", model), ("batch_size", batch), ("member", str(member)), ("solo_ms", solo),
                             ("observed_ms", ms), ("mechanism", "mig"), ("partition", str(gpcs)),
                             ("processes", str(procs))):
                    cols[k].append(v)
    extra = {k: cols.pop(k) for k in ("mechanism", "partition", "processes")}
    return Measurements.from_columns(**cols, extra=extra)


def _check_set(k: int) -> None:
    if not isinstance(k, int) or not 1 <= k <= PARVAGPU_SLO_SETS:
        raise InterfpredError(f"ParvaGPU SLO set {k!r} does not exist; sets are 1-{PARVAGPU_SLO_SETS}")


def parvagpu_slo(k: int, folder: Path = PARVAGPU_DIR) -> dict[str, tuple[float, float]]:
    """SLO set ``k`` (1-6): model -> (rate in requests/s, latency SLO in ms), served models only."""
    _check_set(k)
    folder = Path(folder)
    models = parvagpu_models(folder)
    values = []
    for name in ("SLO_req_rate.csv", "SLO_latency.csv"):
        path = folder / "SLO" / name
        rows = list(csv_rows(read_text(path), path=path))
        if len(rows) < k:
            raise InputError(f"{len(rows)} rows, SLO set {k} needs {k}", path=path)
        row = rows[k - 1]
        if len(row) != len(models):
            raise InputError(f"{len(row)} fields, expected one per model ({len(models)})", path=path, line=k)
        values.append([None if f.strip() == "N/A" else _number(f.strip(), m, path, k) for f, m in zip(row, models)])
    out = {}
    for model, rate, lat in zip(models, *values):
        if (rate is None) != (lat is None):
            raise InterfpredError(f"ParvaGPU SLO set {k}: {model} has a rate or a latency but not both")
        if rate is not None and lat is not None:
            out[model] = (rate, lat)
    return out


def parvagpu_deployment(k: int, folder: Path = PARVAGPU_DIR) -> list[dict[str, int | str]]:
    """ParvaGPU's own plan for SLO set ``k`` as deployment rows, as written in its file.

    Each row: ``gpu`` (servers numbered on: ``8 * Num instance + Num GPU``), ``model``,
    ``partition`` (GPCs), ``placement`` (first MIG slice), ``batch_size`` and ``processes``.
    """
    _check_set(k)
    path = Path(folder) / "deployment" / f"slo{k}.csv"
    out: list[dict[str, int | str]] = []
    for line, f in headed_csv_rows(path, _PLAN_HEADER):
        server, gpu, placement = (_index(f[i], _PLAN_HEADER[i], path, line) for i in (0, 1, 3))
        out.append({"gpu": PARVAGPU_GPUS_PER_SERVER * server + gpu, "model": f[2],
                    "partition": int(_number(f[4], "Instance size", path, line, integer=True)),
                    "placement": placement,
                    "batch_size": int(_number(f[5], "Batch size", path, line, integer=True)),
                    "processes": int(_number(f[6], "Num proc", path, line, integer=True))})
    return out
