"""Triton Model Analyzer results (checkpoints ``.ckpt`` and metrics CSVs) to measurement runs.

Model Analyzer measures each model configuration alone and, with
``--run-config-profile-models-concurrently-enable``, several models loaded and driven together on
one GPU. Every concurrent measurement becomes one run of :class:`~interfpred.data.measurements.Measurements`:
its members are the models measured together, each with its latency there (``observed_ms``) and
its latency alone (``solo_ms``) from a solo measurement of the same model, batch size and client
concurrency, with the same instance count and maximum batch size, on a GPU of the same name (another
card of the same model counts: cards are matched by name, not by UUID). A member without such a
solo measurement raises an error naming it. Results may come from several files (a concurrent
checkpoint and a solo one, as Model Analyzer writes them in separate runs): all given files are
pooled, and where two give the same solo key or the same run, the first file given wins.

The latency is the client-side one perf_analyzer reports, by default its average
(``perf_latency_avg``, ``latency="avg"``): a slowdown compares the mean time a batch takes, the
quantity interference models predict; a tail percentile (``"p90"``, ``"p95"``, ``"p99"``) mixes in the
noise of a few slow requests, and both latencies of a member then use it. Model Analyzer's
inference metrics CSV only holds p99 latency by default, so CSV input needs ``latency="p99"`` (or a CSV
with the ``Avg Latency (ms)`` column), and its GPU name (the CSV has none) from ``gpu``.
Client concurrency, instance count and maximum batch size are kept as extra columns.

Examples
--------
>>> import json, tempfile, pathlib
>>> def member(model, lat):
...     return {"_model_config_name": model, "_model_specific_pa_params": {"batch-size": 1, "concurrency-range": 2},
...             "_non_gpu_data": [["perf_latency_avg", {"_value": lat}], ["perf_latency_p99", {"_value": lat * 2}]]}
>>> def result(models, lats):
...     cfg = {"_model_run_configs": [{"_model_name": m, "_model_config": {"maxBatchSize": 8}} for m in models]}
...     return {"v": [cfg, {"k": {"_model_config_measurements": [member(m, x) for m, x in zip(models, lats)]}}]}
>>> ckpt = {"MetricsManager.gpus": {"GPU-1": {"name": "NVIDIA L4"}}, "ResultManager.results": {"_results": {
...     "a": result(["a"], [4.0]), "b": result(["b"], [2.0]), "a,b": result(["a", "b"], [6.0, 3.0])}}}
>>> path = pathlib.Path(tempfile.mkdtemp()) / "0.ckpt"
>>> _ = path.write_text(json.dumps(ckpt))
>>> m = read_model_analyzer([path])
>>> m.model.tolist(), m.solo_ms.tolist(), m.observed_ms.tolist(), m.gpu.tolist()[0]
(['a', 'b'], [4.0, 2.0], [6.0, 3.0], 'NVIDIA L4')
"""

from __future__ import annotations

import json
import os
import pathlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from interfpred._core.atomic import check_regular_file, csv_rows, read_text
from interfpred.constants import MODEL_ANALYZER_DEFAULT_LATENCY, MODEL_ANALYZER_LATENCIES
from interfpred.data.ingest.gpu_ranges import CaptureFormatError
from interfpred.data.measurements import Measurements
from interfpred.errors import InputError, InterfpredError

__all__ = ["MeasuredModel", "read_model_analyzer", "read_model_analyzer_file"]

#: Inference-metrics CSV column of each latency choice.
_CSV_LATENCY = {"avg": "Avg Latency (ms)", "p90": "p90 Latency (ms)", "p95": "p95 Latency (ms)",
                "p99": "p99 Latency (ms)"}
_PACKED = re.compile(r"\s*[-+0-9.eE]+\s*,\s*\[(?P<values>[^\]]*)\]\s*")  # "total, [a,b]"


@dataclass(frozen=True)
class MeasuredModel:
    """One model's latency in one Model Analyzer measurement (alone or beside others).

    ``run`` names the measurement (configuration variants and concurrencies); ``members`` is how
    many models it drove together; ``path`` is the file it came from.
    """

    run: str
    members: int
    gpu: str
    model: str
    batch_size: int
    concurrency: int
    instances: int
    max_batch_size: int
    latency_ms: float
    path: str

    @property
    def solo_key(self) -> tuple[str, str, int, int, int, int]:
        """What a solo measurement must share with a member to stand for it alone."""
        return self.gpu, self.model, self.batch_size, self.concurrency, self.instances, self.max_batch_size


def _instances(config: dict) -> int:
    groups = config.get("instanceGroup") or config.get("instance_group") or []
    total = sum(int(g.get("count", 1)) for g in groups if isinstance(g, dict))
    return total or 1  # Triton's default: one instance (per GPU)


def _value(items: Any, tag: str) -> float | None:
    for item in items or []:
        if isinstance(item, list) and len(item) == 2 and item[0] == tag and isinstance(item[1], dict):
            v = item[1].get("_value")
            return float(v) if isinstance(v, (int, float)) else None
    return None


def _from_ckpt(path: str, doc: Any, latency: str) -> list[MeasuredModel]:
    tag = MODEL_ANALYZER_LATENCIES[latency]
    try:
        results = doc["ResultManager.results"]["_results"]
        gpus = doc.get("MetricsManager.gpus") or {}
    except (KeyError, TypeError):
        raise CaptureFormatError("is JSON but not a Model Analyzer checkpoint (no ResultManager.results)",
                                 path=path) from None
    names = {str(u): str(g.get("name", u)) for u, g in gpus.items() if isinstance(g, dict)}
    out: list[MeasuredModel] = []
    try:
        for variants in results.values():
            for variant_key, pair in variants.items():
                run_config, measurements = pair
                configs = run_config["_model_run_configs"]
                for meas in measurements.values():
                    members = meas["_model_config_measurements"]
                    if len(members) != len(configs):
                        raise CaptureFormatError(f"measurement of {variant_key} has {len(members)} models, its run "
                                                 f"configuration {len(configs)}", path=path)
                    uuids = list(meas.get("_gpu_data") or names)
                    gpu = names.get(uuids[0], uuids[0]) if uuids else ""
                    concs = [int(m["_model_specific_pa_params"]["concurrency-range"]) for m in members]
                    run = f"{variant_key} c={','.join(map(str, concs))}"
                    for cfg, mem, conc in zip(configs, members, concs):
                        model_cfg = (cfg.get("_model_config_variant") or {}).get("model_config") \
                            or cfg.get("_model_config") or {}
                        value = _value(mem.get("_non_gpu_data"), tag)
                        if value is None:
                            raise CaptureFormatError(f"measurement of {cfg['_model_name']} in {variant_key} has no "
                                                     f"{tag}", path=path)
                        out.append(MeasuredModel(run=run, members=len(members), gpu=gpu, model=str(cfg["_model_name"]),
                                                 batch_size=int(mem["_model_specific_pa_params"]["batch-size"]),
                                                 concurrency=conc, instances=_instances(model_cfg),
                                                 max_batch_size=int(model_cfg.get("maxBatchSize", 0)),
                                                 latency_ms=value, path=path))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, InterfpredError):
            raise
        raise CaptureFormatError(f"Model Analyzer checkpoint has an unexpected layout ({type(exc).__name__}: "
                                 f"{exc})", path=path) from None
    return out


def _cells(text: str, n: int, what: str, path: str, line: int) -> list[str]:
    """Per-model values of a CSV cell: ``"a,b"`` or ``"total, [a,b]"`` (one per model)."""
    m = _PACKED.fullmatch(text)
    parts = [p.strip() for p in (m.group("values") if m else text).split(",")]
    if n == 1 and m is None:
        parts = [text.strip()]
    if len(parts) != n:
        raise InputError(f"column {what} has {len(parts)} values for {n} models ({text!r})", path=path, line=line)
    return parts


def _from_csv(path: str, latency: str, gpu: str | None) -> list[MeasuredModel]:
    rows = list(csv_rows(read_text(path, "a Model Analyzer metrics CSV"), path=path))
    if not rows:
        raise CaptureFormatError("is empty", path=path)
    header = [h.strip() for h in rows[0]]
    col = _CSV_LATENCY[latency]
    need = ["Model", "Batch", "Concurrency", "Model Config Path"]
    if any(h not in header for h in need) or not any("Latency" in h for h in header):
        raise CaptureFormatError("is not a Model Analyzer inference metrics CSV (needs columns Model, Batch, "
                                 "Concurrency, Model Config Path and a latency; the GPU metrics CSV holds no "
                                 "latency)", path=path)
    if col not in header:
        have = [k for k, v in _CSV_LATENCY.items() if v in header]
        raise CaptureFormatError(f"has no {col!r} column: choose a latency it holds (--latency "
                                 f"{' or '.join(have) or 'p99'})", path=path)
    if gpu is None:
        raise InterfpredError(f"{path}: a Model Analyzer metrics CSV does not name its GPU: pass --gpu NAME (the "
                              "name the checkpoints give, such as 'NVIDIA TITAN RTX')")
    at = {h: i for i, h in enumerate(header)}
    out: list[MeasuredModel] = []
    for line, row in enumerate(rows[1:], start=2):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(f"has {len(row)} fields, the header has {len(header)}", path=path, line=line)
        models = [m.strip() for m in row[at["Model"]].split(",")]
        n = len(models)
        get = {c: _cells(row[at[c]], n, c, path, line) for c in ("Batch", "Concurrency", "Model Config Path", col)}
        inst = _cells(row[at["Instance Group"]], n, "Instance Group", path, line) if "Instance Group" in at \
            else ["1"] * n
        mbs = _cells(row[at["Max Batch Size"]], n, "Max Batch Size", path, line) if "Max Batch Size" in at \
            else ["0"] * n
        try:
            run = f"{','.join(get['Model Config Path'])} c={','.join(get['Concurrency'])}"
            for k in range(n):
                count = sum(int(part.split(":")[0]) for part in inst[k].split("/") if part.strip())
                out.append(MeasuredModel(run=run, members=n, gpu=gpu, model=models[k],
                                         batch_size=int(get["Batch"][k]), concurrency=int(get["Concurrency"][k]),
                                         instances=count or 1, max_batch_size=int(mbs[k]),
                                         latency_ms=float(get[col][k]), path=path))
        except ValueError as exc:
            raise InputError(f"a value is not a number: {exc}", path=path, line=line) from None
    return out


def read_model_analyzer_file(path: str | os.PathLike[str], *, latency: str = MODEL_ANALYZER_DEFAULT_LATENCY,
                             gpu: str | None = None) -> list[MeasuredModel]:
    """Every model's latency in every measurement of one checkpoint or inference metrics CSV."""
    if latency not in MODEL_ANALYZER_LATENCIES:
        raise InterfpredError(f"latency {latency!r} must be one of {', '.join(MODEL_ANALYZER_LATENCIES)}")
    p = os.fspath(path)
    check_regular_file(p, "a Model Analyzer checkpoint or metrics CSV")
    with open(p, "rb") as fh:
        head = fh.read(64).lstrip()
    if head[:1] == b"{":
        try:
            doc = json.loads(pathlib.Path(p).read_bytes())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CaptureFormatError(f"is not valid JSON (truncated checkpoint?): {exc}", path=p) from None
        got = _from_ckpt(p, doc, latency)
        if gpu is not None:
            got = [MeasuredModel(**{**m.__dict__, "gpu": gpu}) for m in got]
        return got
    return _from_csv(p, latency, gpu)


def read_model_analyzer(paths: Sequence[str | os.PathLike[str]], *, latency: str = MODEL_ANALYZER_DEFAULT_LATENCY,
                        gpu: str | None = None) -> Measurements:
    """Measurement runs from Model Analyzer files (module docstring): one run per concurrent measurement.

    Parameters
    ----------
    paths
        Checkpoints (``.ckpt``) and inference metrics CSVs, pooled: concurrent measurements and the
        solo ones they are matched with may come from different files.
    latency
        ``"avg"`` (default), ``"p90"``, ``"p95"`` or ``"p99"``: the latency that becomes
        ``solo_ms`` and ``observed_ms``.
    gpu
        GPU name of every measurement; required for CSVs, which do not name it.

    Raises
    ------
    InterfpredError
        A file that is not Model Analyzer output, no concurrent measurement, or a member with no solo
        measurement to match; the message names the file.
    """
    if not paths:
        raise InterfpredError("give at least one Model Analyzer checkpoint or metrics CSV")
    solo: dict[tuple, MeasuredModel] = {}
    runs: dict[str, list[MeasuredModel]] = {}
    for path in paths:
        for m in read_model_analyzer_file(path, latency=latency, gpu=gpu):
            if m.members == 1:
                solo.setdefault(m.solo_key, m)
            elif m.run not in runs or runs[m.run][0].path == m.path:
                runs.setdefault(m.run, []).append(m)
    if not runs:
        raise CaptureFormatError("holds no concurrent measurement (profile with "
                                 "--run-config-profile-models-concurrently-enable)",
                                 path=", ".join(os.fspath(p) for p in paths))
    cols: dict[str, list[Any]] = {k: [] for k in ("run", "gpu", "model", "batch_size", "solo_ms", "observed_ms",
                                                   "concurrency", "instances", "max_batch_size")}
    for run, members in runs.items():
        for m in members:
            ref = solo.get(m.solo_key)
            if ref is None:
                raise InputError(f"no solo measurement of {m.model} at batch size {m.batch_size}, client concurrency "
                                 f"{m.concurrency}, {m.instances} instance(s), max batch size {m.max_batch_size} on "
                                 f"{m.gpu} (member of run {run!r}): pass the checkpoint or CSV that measured it alone",
                                 path=m.path)
            for k, v in (("run", run), ("gpu", m.gpu), ("model", m.model), ("batch_size", m.batch_size),
                         ("solo_ms", ref.latency_ms), ("observed_ms", m.latency_ms), ("concurrency", m.concurrency),
                         ("instances", m.instances), ("max_batch_size", m.max_batch_size)):
                cols[k].append(v)
    extra = {k: cols[k] for k in ("concurrency", "instances", "max_batch_size")}
    return Measurements.from_columns(run=cols["run"], gpu=cols["gpu"], model=cols["model"],
                                     batch_size=cols["batch_size"], solo_ms=cols["solo_ms"],
                                     observed_ms=cols["observed_ms"], extra=extra)
