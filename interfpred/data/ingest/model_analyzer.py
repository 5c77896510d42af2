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
pooled. A file given twice is read once; two solo measurements of the same key, or two runs of
the same name, that disagree (another latency, other members) are refused with both values named,
and identical ones count once. Every field is checked: batch sizes, concurrencies, instance counts
and maximum batch sizes are integers (``1.5`` or ``Infinity`` is refused, not truncated), and a
latency is a finite number of milliseconds of at least :data:`~interfpred.constants.LATENCY_MIN_MS` (1 ns) and within
:data:`~interfpred.constants.TIME_HORIZON_MS` (``true`` is not a latency).

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

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from interfpred._core.atomic import check_regular_file, csv_rows, read_text
from interfpred._core.limits import parse_capture_json, read_capture_bytes
from interfpred.constants import (
    LATENCY_MIN_MS,
    MODEL_ANALYZER_DEFAULT_LATENCY,
    MODEL_ANALYZER_LATENCIES,
    TIME_HORIZON_MS,
)
from interfpred.data.ingest.capture_checks import check_int, check_name
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


#: Largest batch size, concurrency, instance count or maximum batch size accepted (an int32).
_COUNT_MAX = 2**31 - 1


def _count(value: Any, what: str, path: str, where: str, *, lo: int = 1) -> int:
    return check_int(value, what, path, where, lo=lo, hi=_COUNT_MAX)


def _latency(value: Any, path: str, where: str, line: int | None = None) -> float:
    """A latency in ms: a finite number in [LATENCY_MIN_MS, TIME_HORIZON_MS] (never a bool or text)."""
    ok = not isinstance(value, bool) and isinstance(value, (int, float))
    if ok:
        value = float(value)
        ok = math.isfinite(value) and LATENCY_MIN_MS <= value <= TIME_HORIZON_MS
    if not ok:
        raise InputError(f"{where} has latency {value!r}, not a finite number of ms in [LATENCY_MIN_MS="
                         f"{LATENCY_MIN_MS:g}, {TIME_HORIZON_MS:.4g}]", path=path, line=line)
    return float(value)


def _instances(config: dict, path: str, where: str) -> int:
    groups = config.get("instanceGroup") or config.get("instance_group") or []
    if not isinstance(groups, list):
        raise CaptureFormatError(f"{where} has instanceGroup {str(groups)[:40]!r}, not a list", path=path)
    total = sum(_count(g.get("count", 1), "instance count", path, where) for g in groups if isinstance(g, dict))
    return total or 1  # Triton's default: one instance (per GPU)


def _value(items: Any, tag: str, path: str, where: str) -> float | None:
    for item in items or []:
        if isinstance(item, list) and len(item) == 2 and item[0] == tag and isinstance(item[1], dict):
            return _latency(item[1].get("_value"), path, where)
    return None


def _from_ckpt(path: str, doc: Any, latency: str) -> list[MeasuredModel]:
    tag = MODEL_ANALYZER_LATENCIES[latency]
    try:
        results = doc["ResultManager.results"]["_results"]
        gpus = doc.get("MetricsManager.gpus") or {}
    except (KeyError, TypeError, AttributeError):
        raise CaptureFormatError("is JSON but not a Model Analyzer checkpoint (no ResultManager.results)",
                                 path=path) from None
    if not isinstance(gpus, dict):
        raise CaptureFormatError(f"has MetricsManager.gpus of type {type(gpus).__name__}, not an object of GPUs by "
                                 "UUID", path=path)
    names = {check_name(str(u), path, "MetricsManager.gpus"): check_name(str(g.get("name", u)), path,
                                                                         f"GPU {str(u)[:40]!r}")
             for u, g in gpus.items() if isinstance(g, dict)}
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
                    concs = [_count(m["_model_specific_pa_params"]["concurrency-range"], "concurrency-range", path,
                                    f"measurement of {variant_key}") for m in members]
                    run = f"{variant_key} c={','.join(map(str, concs))}"
                    for cfg, mem, conc in zip(configs, members, concs):
                        model_cfg = (cfg.get("_model_config_variant") or {}).get("model_config") \
                            or cfg.get("_model_config") or {}
                        where = f"measurement of {str(cfg['_model_name'])[:60]!r} in {variant_key}"
                        value = _value(mem.get("_non_gpu_data"), tag, path, where)
                        if value is None:
                            raise CaptureFormatError(f"{where} has no {tag}", path=path)
                        out.append(MeasuredModel(
                            run=check_name(run, path, where), members=len(members), gpu=check_name(gpu, path, where),
                            model=check_name(str(cfg["_model_name"]), path, where),
                            batch_size=_count(mem["_model_specific_pa_params"]["batch-size"], "batch-size", path,
                                              where),
                            concurrency=conc, instances=_instances(model_cfg, path, where),
                            max_batch_size=_count(model_cfg.get("maxBatchSize", 0), "maxBatchSize", path, where,
                                                  lo=0),
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


def _csv_int(text: str, what: str, path: str, line: int, *, lo: int = 1) -> int:
    """An integer cell in [lo, 2**31 - 1]: decimal digits only (``1.5``, ``1e3`` and ``²`` are refused)."""
    t = text.strip()
    body = t[1:] if t[:1] in "+-" else t
    if not (body.isascii() and body.isdigit()) or len(body) > 10 or not lo <= int(t) <= _COUNT_MAX:
        raise InputError(f"column {what} has {text[:40]!r}, not an integer in [{lo}, {_COUNT_MAX}]", path=path,
                         line=line)
    return int(t)


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
                count = sum(_csv_int(part.split(":")[0], "Instance Group", path, line)
                            for part in inst[k].split("/") if part.strip())
                out.append(MeasuredModel(run=run, members=n, gpu=gpu, model=models[k],
                                         batch_size=_csv_int(get["Batch"][k], "Batch", path, line),
                                         concurrency=_csv_int(get["Concurrency"][k], "Concurrency", path, line),
                                         instances=count or 1,
                                         max_batch_size=_csv_int(mbs[k], "Max Batch Size", path, line, lo=0),
                                         latency_ms=_latency(float(get[col][k]), path, f"column {col!r}", line),
                                         path=path))
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
        what = "a Model Analyzer checkpoint"
        try:
            doc = parse_capture_json(read_capture_bytes(p, what), p, what)
        except InputError as exc:
            raise CaptureFormatError(exc.message, path=exc.path, line=exc.line) from None
        got = _from_ckpt(p, doc, latency)
        if gpu is not None:
            got = [MeasuredModel(**{**m.__dict__, "gpu": gpu}) for m in got]
        return got
    return _from_csv(p, latency, gpu)


def _same(m: MeasuredModel) -> tuple:
    """What two copies of one member must share (everything but the file)."""
    return m.gpu, m.model, m.batch_size, m.concurrency, m.instances, m.max_batch_size, m.latency_ms


def _shown(members: list[MeasuredModel]) -> str:
    return ", ".join(f"{m.model} {m.latency_ms!r} ms" for m in members[:4])


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
    seen: set[str] = set()
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:  # the same file given twice holds nothing new
            continue
        seen.add(real)
        here: dict[str, list[MeasuredModel]] = {}
        for m in read_model_analyzer_file(path, latency=latency, gpu=gpu):
            if m.members == 1:
                ref = solo.setdefault(m.solo_key, m)
                if ref.latency_ms != m.latency_ms:
                    raise InputError(f"two solo measurements of {m.model} at batch size {m.batch_size}, client "
                                     f"concurrency {m.concurrency}, {m.instances} instance(s), max batch size "
                                     f"{m.max_batch_size} on {m.gpu} disagree: {ref.latency_ms!r} ms (in "
                                     f"{ref.path}) and {m.latency_ms!r} ms; pass only the one to use", path=m.path)
            else:
                here.setdefault(m.run, []).append(m)
        for run, members in here.items():
            if run not in runs:
                runs[run] = members
            elif [_same(a) for a in runs[run]] != [_same(b) for b in members]:
                raise InputError(f"run {run!r} is also in {runs[run][0].path} with other members or latencies "
                                 f"({_shown(runs[run])} there, {_shown(members)} here); pass only one of them",
                                 path=members[0].path)
    if not runs:
        raise CaptureFormatError("holds no concurrent measurement (profile with "
                                 "--run-config-profile-models-concurrently-enable)",
                                 path=", ".join(os.fspath(p) for p in paths))
    cols: dict[str, list[Any]] = {k: [] for k in ("run", "gpu", "model", "batch_size", "solo_ms", "observed_ms",
                                                   "concurrency", "instances", "max_batch_size")}
    for run, members in runs.items():
        for m in members:
            found = solo.get(m.solo_key)
            if found is None:
                raise InputError(f"no solo measurement of {m.model} at batch size {m.batch_size}, client concurrency "
                                 f"{m.concurrency}, {m.instances} instance(s), max batch size {m.max_batch_size} on "
                                 f"{m.gpu} (member of run {run!r}): pass the checkpoint or CSV that measured it alone",
                                 path=m.path)
            for k, v in (("run", run), ("gpu", m.gpu), ("model", m.model), ("batch_size", m.batch_size),
                         ("solo_ms", found.latency_ms), ("observed_ms", m.latency_ms), ("concurrency", m.concurrency),
                         ("instances", m.instances), ("max_batch_size", m.max_batch_size)):
                cols[k].append(v)
    extra = {k: cols[k] for k in ("concurrency", "instances", "max_batch_size")}
    return Measurements.from_columns(run=cols["run"], gpu=cols["gpu"], model=cols["model"],
                                     batch_size=cols["batch_size"], solo_ms=cols["solo_ms"],
                                     observed_ms=cols["observed_ms"], extra=extra)
