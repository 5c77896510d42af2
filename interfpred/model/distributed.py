"""Fitting and evaluating on Dask: a trace in many Parquet files, partitioned by device, merged exactly.

Timelines are per device, so a trace split by GPU partitions exactly: each partition computes its
own features, and what it learns is merged: by each predictor's ``merge`` (exact for the baselines
and ``rls`` with ``forgetting=1``) or, for ``offline_linear``, as its rows' sufficient statistics;
predictors whose tags do not say ``mergeable`` are refused.
Prequential evaluation runs per device in parallel and gathers the per-row predictions, so every
figure is exact. See docs/scale.md for the merge of each predictor. Dask (``distributed``) and
pyarrow are the optional extra ``pip install 'interfpred[fleet]'``.

Examples
--------
>>> import pathlib, tempfile
>>> from interfpred.model.interference import InterferenceModel
>>> from interfpred.sim.workload import mix_scenario
>>> sc = mix_scenario(["vgg19", "resnet50"], rho=0.8, executions=400, seed=0, n_devices=2)
>>> paths = write_device_files(sc.traces["trace"], pathlib.Path(tempfile.mkdtemp()), files=2)
>>> parts = trace_partitions(paths)
>>> [p.device for p in parts]
['gpu0', 'gpu1']
>>> m = fit_partitions(parts, sc.profiles, InterferenceModel({"feature_map": "default"}, "offline_linear"))
>>> local = InterferenceModel({"feature_map": "default"}, "offline_linear").fit(sc.traces["trace"], sc.profiles)
>>> bool(np.allclose(m.predictor.coef_, local.predictor.coef_, rtol=1e-9, atol=1e-9))
True
"""

from __future__ import annotations

import glob
import logging
import os
import re
import resource
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from interfpred._core.arrow import require_pyarrow
from interfpred._core.limits import check_limit, limit
from interfpred.constants import BASELINE_KINDS, DASK_ADDRESS_MAX_CHARS, DASK_CONNECT_TIMEOUT_S
from interfpred.data.columnar import trace_from_arrow, write_trace
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.evaluation import accuracy_summary, call, fit_baselines, prequential
from interfpred.model.interference import Evaluation, InterferenceModel
from interfpred.predictors import OfflineLinear, get_tags, predictor_from_state, registered

__all__ = [
    "LinearStatistics",
    "TracePartition",
    "check_address",
    "connect",
    "evaluate_dask",
    "evaluate_partitions",
    "fit_dask",
    "fit_partitions",
    "read_partition",
    "trace_files",
    "trace_partitions",
    "write_device_files",
]

_FLEET_EXTRA = "pip install 'interfpred[fleet]'"


#: A scheduler address: optional tcp:// or tls://, a host name, IPv4 or bracketed IPv6, and a port.
_ADDRESS = re.compile(r"(?:(?P<scheme>tcp|tls)://)?(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?"
                      r"|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})", re.ASCII)


def _require_distributed():
    try:
        import distributed
    except ImportError:
        raise InterfpredError(f"Dask needs the distributed package: {_FLEET_EXTRA}") from None
    return distributed


# ---------------------------------------------------------------------------- partitions
class TracePartition(NamedTuple):
    """One device's executions: its name and the Parquet files that hold some of them."""

    device: str
    files: tuple[str, ...]


def trace_files(spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """Parquet files from a folder (its ``*.parquet``), a glob pattern, a file, or a list of those."""
    items = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    out: list[str] = []
    for item in items:
        p = os.fspath(item)
        if os.path.isdir(p):
            found = sorted(glob.glob(os.path.join(p, "*.parquet")) + glob.glob(os.path.join(p, "*.pq")))
        elif any(c in p for c in "*?["):
            found = sorted(glob.glob(p))
        else:
            found = [p] if os.path.exists(p) else []
        if not found:
            raise InterfpredError(f"{p}: no Parquet trace files there")
        out.extend(found)
    return out


def _check_device_column(path: str, names: Sequence[str]) -> None:
    """Raise unless a trace file has a ``device`` column."""
    if "device" not in names:
        raise InterfpredError(f"{path}: no device column (expected 'device')")


def _devices_of(path: str) -> list[str]:
    pa = require_pyarrow(f"reading {path}")
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        _check_device_column(path, pq.read_schema(path).names)
        col = pq.read_table(path, columns=["device"]).column("device")
    except (pa.ArrowInvalid, OSError, KeyError) as exc:
        raise InterfpredError(f"{path}: cannot read its device column as Parquet: {exc}") from None
    return sorted(str(v) for v in pc.unique(col.cast(pa.string())).to_pylist())


def trace_partitions(paths: Sequence[str], *, client: Any = None) -> list[TracePartition]:
    """One partition per device named in the files' ``device`` columns (devices in name order).

    With a Dask ``client`` the files are scanned by the workers.
    """
    paths = [os.fspath(p) for p in paths]
    lists = client.gather(client.map(_devices_of, paths, pure=False)) if client is not None else map(_devices_of, paths)
    where: dict[str, list[str]] = {}
    for path, devices in zip(paths, lists):
        for g in devices:
            where.setdefault(g, []).append(path)
    return [TracePartition(g, tuple(where[g])) for g in sorted(where)]


def read_partition(part: TracePartition) -> Trace:
    """The executions of ``part.device`` from its files, in launch order (ties by file, then row)."""
    pa = require_pyarrow("reading a trace partition")
    import pyarrow.parquet as pq

    for p in part.files:
        _check_device_column(p, pq.read_schema(p).names)
    tables = [pq.read_table(p, filters=[("device", "==", part.device)]) for p in part.files]
    tables = [t.select([c for c in t.column_names if c in tables[0].column_names]) for t in tables]
    table = pa.concat_tables(tables, promote_options="default")
    tr = trace_from_arrow(table, path=", ".join(part.files))
    order = np.argsort(tr.start_ms, kind="stable")
    return tr if np.all(order[1:] > order[:-1]) else tr.take(order)


def write_device_files(trace: Trace, folder: str | os.PathLike[str], *, files: int = 8) -> list[str]:
    """Write ``trace`` as ``files`` Parquet files (rows dealt round-robin in launch order), for tests
    and benchmarks of the partitioned path; returns their paths."""
    os.makedirs(folder, exist_ok=True)
    order = np.argsort(trace.start_ms, kind="stable")
    out = []
    for k in range(files):
        path = os.path.join(os.fspath(folder), f"part-{k:03d}.parquet")
        write_trace(trace.take(order[k::files]), path)
        out.append(path)
    return out


# ---------------------------------------------------------------------------- statistics
@dataclass
class LinearStatistics:
    """Weight, mean and centred co-moments of rows ``z = [x, y]``: enough for least squares.

    Merging two (Chan et al.'s pairwise update) is exact up to rounding and stable: it never
    forms uncentred sums, whose cancellation would lose digits.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.random((100, 2)), rng.random(100)
    >>> a = LinearStatistics.from_rows(X[:30], y[:30]).merge(LinearStatistics.from_rows(X[30:], y[30:]))
    >>> bool(np.allclose(a.m2, LinearStatistics.from_rows(X, y).m2, rtol=1e-12))
    True
    """

    weight: float
    mean: np.ndarray
    m2: np.ndarray

    @classmethod
    def from_rows(cls, X: np.ndarray, y: np.ndarray) -> LinearStatistics:
        z = np.column_stack([np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)])
        mean = z.mean(axis=0) if len(z) else np.zeros(z.shape[1])
        zc = z - mean
        return cls(float(len(z)), mean, zc.T @ zc)

    def merge(self, other: LinearStatistics) -> LinearStatistics:
        if other.weight == 0:
            return self
        if self.weight == 0:
            return other
        w = self.weight + other.weight
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.weight / w)
        m2 = self.m2 + other.m2 + np.outer(delta, delta) * (self.weight * other.weight / w)
        return LinearStatistics(w, mean, m2)

    def solve(self, *, ridge: float = 0.0, fit_intercept: bool = True) -> tuple[np.ndarray, float]:
        """Least-squares (ridge) weights and intercept, as scikit-learn's centred solution."""
        d = self.mean.shape[0] - 1
        if not fit_intercept:
            raw = self.m2 + self.weight * np.outer(self.mean, self.mean)
            A, b = raw[:d, :d], raw[:d, d]
        else:
            A, b = self.m2[:d, :d], self.m2[:d, d]
        A = A + ridge * np.eye(d)
        coef = np.linalg.lstsq(A, b, rcond=None)[0] if ridge == 0 else np.linalg.solve(A, b)
        intercept = float(self.mean[d] - self.mean[:d] @ coef) if fit_intercept else 0.0
        return coef, intercept


def _check_mergeable(model: InterferenceModel) -> None:
    if not get_tags(model.predictor).mergeable:
        kinds = ", ".join(k for k, c in sorted(registered().items()) if c.tags.mergeable)
        raise InterfpredError(f"fitting on partitions merges what each partition learned, which "
                              f"{model.predictor.kind!r} cannot (it learns sequentially); use one of {kinds}, "
                              "or fit in one process")


def _merged(into: Any, parts: list[dict]) -> Any:
    """``into`` with the saved states of copies fitted on disjoint rows merged into it, in order."""
    for st in parts:
        into.merge(predictor_from_state(st))
    return into


# ---------------------------------------------------------------------------- per-partition work
def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _fit_partition(part: TracePartition, profiles: ProfileTable, state: dict) -> dict:
    """On a worker: one device's features and what its rows teach each predictor (plain data back)."""
    t0 = time.perf_counter()
    model = InterferenceModel.from_state(state)
    trace = read_partition(part)
    t1 = time.perf_counter()
    fm = model.features(trace, profiles)
    t2 = time.perf_counter()
    out: dict[str, Any] = {"device": part.device, "n": len(fm), "d": fm.X.shape[1]}
    p = model.predictor
    if isinstance(p, OfflineLinear):     # least squares merges its rows' sufficient statistics
        out["linear"] = LinearStatistics.from_rows(fm.X, fm.y)
    else:                                # the others merge copies that learned one partition each
        fresh = p.clone()
        if len(fm):
            call(fresh, "update", fm.X, fm.y, entities=fm.entities)
        out["learned"] = fresh.to_state() if len(fm) else None
    # the baselines as the one-process fit makes them: the pair mean keyed by model, declared for the target
    out["baselines"] = ({k: b.to_state() for k, b in fit_baselines(fm.X, fm.y, entities=model.baseline_entities(fm),
                                                                    target=model.extractor.target).items()}
                        if len(fm) else {k: None for k in BASELINE_KINDS})
    out["peak_rss_mb"] = _peak_rss_mb()
    out["pid"] = os.getpid()
    out["seconds"] = {"read": t1 - t0, "features": t2 - t1, "learn": time.perf_counter() - t2}
    return out


def _evaluate_partition(part: TracePartition, profiles: ProfileTable, state: dict, online: bool) -> dict:
    """On a worker: predicted and observed slowdowns of one device, for the model and its baselines."""
    model = InterferenceModel.from_state(state)
    trace = read_partition(part)
    fm = model.features(trace, profiles)
    observed = fm.latency_ms / fm.solo_ms

    def run(p) -> np.ndarray:
        if not online:
            pred = np.asarray(call(p, "predict", fm.X, entities=fm.entities), dtype=np.float64)
        else:
            copy = predictor_from_state(p.to_state())
            pred = prequential(copy, fm.X, fm.y, start_ms=trace.start_ms, end_ms=trace.end_ms, entities=fm.entities)
        lat = np.asarray(model.extractor.latency_from_target(pred, fm.solo_ms), dtype=np.float64).reshape(-1)
        return lat / fm.solo_ms

    return {"device": part.device, "observed": observed, "solo": fm.solo_ms, "model": run(model.predictor),
            "baselines": {k: run(b) for k, b in model.baselines.items()}, "peak_rss_mb": _peak_rss_mb()}


# ---------------------------------------------------------------------------- merging
def _assemble(model: InterferenceModel, results: list[dict]) -> InterferenceModel:
    results = [r for r in results if r["n"]]
    if not results:
        raise InterfpredError("cannot fit on no rows")
    d = results[0]["d"]
    p = model.predictor
    if not isinstance(p, OfflineLinear):
        model.predictor = _merged(p.clone(), [r["learned"] for r in results])
    else:
        stats = results[0]["linear"]
        for r in results[1:]:
            stats = stats.merge(r["linear"])
        params = p.get_params()
        coef, intercept = stats.solve(ridge=float(params["ridge"]), fit_intercept=bool(params["fit_intercept"]))
        model.predictor = predictor_from_state({"schema_version": p.to_state()["schema_version"], "kind": p.kind,
                                                "params": p.get_params(), "n_features_in": d,
                                                "state": {"coef": coef.tolist(), "intercept": intercept}})
    model.baselines = {kind: _merged(predictor_from_state(results[0]["baselines"][kind]),
                                     [r["baselines"][kind] for r in results[1:]])
                       for kind in results[0]["baselines"]}
    return model


def _run(fn: Callable, parts: list[TracePartition], args: tuple, client: Any) -> list:
    if client is None:
        return [fn(part, *args) for part in parts]
    futures = client.map(fn, parts, *[[a] * len(parts) for a in args], pure=False)
    return client.gather(futures)


def fit_partitions(parts: Sequence[TracePartition], profiles: ProfileTable, model: InterferenceModel, *,
                   client: Any = None, report: dict | None = None) -> InterferenceModel:
    """Fit ``model`` on every partition and merge (in this process, or on a Dask ``client``); returns it.

    ``report`` (a dict), when given, receives per GPU the rows, the peak RSS (MB) and the process id
    of the worker that computed it, and its seconds spent reading, computing features and learning.
    """
    _check_mergeable(model)
    model.choose_map(profiles)
    results = _run(_fit_partition, list(parts), (profiles, model.to_state()), client)
    if report is not None:
        report.update({r["device"]: {"rows": r["n"], "peak_rss_mb": r["peak_rss_mb"], "pid": r["pid"],
                                  "seconds": r["seconds"]} for r in results})
    return _assemble(model, results)


def evaluate_partitions(parts: Sequence[TracePartition], profiles: ProfileTable, model: InterferenceModel, *,
                        online: bool = False, client: Any = None) -> Evaluation:
    """Accuracy of ``model`` over every partition beside its baselines (online: per-device prequential).

    Per-row predictions come back in partition order (GPU name, then launch order) and every figure
    is computed on all of them at once.
    """
    results = _run(_evaluate_partition, list(parts), (profiles, model.to_state(), bool(online)), client)
    if not results or not sum(len(r["observed"]) for r in results):
        raise InterfpredError("cannot evaluate on no rows")
    obs = np.concatenate([r["observed"] for r in results])
    solo = np.concatenate([r["solo"] for r in results])
    pred = np.concatenate([r["model"] for r in results])
    baselines = {k: accuracy_summary(np.concatenate([r["baselines"][k] for r in results]), obs)
                 for k in results[0]["baselines"]}
    return Evaluation(summary=accuracy_summary(pred, obs), predicted_latency_ms=pred * solo,
                      observed_latency_ms=obs * solo, online=bool(online), baselines=baselines)


# ---------------------------------------------------------------------------- Dask
def check_address(address: str) -> str:
    """A Dask scheduler address, ``tcp://host:port`` or ``tls://host:port`` (``host:port`` means tcp), or a
    one-line refusal.

    The host is a name or an IPv4 address of ASCII letters, digits, ``.`` and ``-``, or an IPv6
    address in brackets; the port an integer in [1, 65535]. Other schemes (``inproc://``, which
    only reaches a scheduler inside this process, ``file://``, ``ucx://``) and anything else are
    refused before a connection is tried.

    Examples
    --------
    >>> check_address("tcp://10.0.0.5:8786"), check_address("scheduler.local:8786")
    ('tcp://10.0.0.5:8786', 'tcp://scheduler.local:8786')
    >>> check_address("file:///etc/passwd")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: --dask 'file:///etc/passwd' is not a Dask scheduler address: give tcp://HOST:PORT or tls://HOST:PORT
    """
    text = address.strip()
    m = _ADDRESS.fullmatch(text) if len(text) <= DASK_ADDRESS_MAX_CHARS else None
    if m is None or not 1 <= int(m.group("port")) <= 65535:
        shown = repr(text if len(text) <= DASK_ADDRESS_MAX_CHARS else text[:DASK_ADDRESS_MAX_CHARS] + "...")
        raise InterfpredError(f"--dask {shown} is not a Dask scheduler address: give tcp://HOST:PORT or "
                              "tls://HOST:PORT")
    return f"{m.group('scheme') or 'tcp'}://{m.group('host')}:{int(m.group('port'))}"


@contextmanager
def connect(address: str | None = None, *, n_workers: int | None = None) -> Iterator[Any]:
    """A Dask ``distributed.Client``: to the scheduler at ``address`` (:func:`check_address`), or to a new
    ``LocalCluster`` of ``n_workers`` single-threaded worker processes (default: one per CPU core, at
    most ``DASK_WORKERS_MAX``), closed on exit.

    A local cluster keeps its scratch space and lock files in a temporary folder removed on exit.
    A scheduler that cannot be reached within ``DASK_CONNECT_TIMEOUT_S``, or that answers with
    something other than Dask's protocol, is a one-line :class:`InterfpredError`.
    """
    if address:
        address = check_address(address)
    elif n_workers is not None:
        if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)) or n_workers < 1:
            raise InterfpredError(f"--workers {n_workers!r} must be a positive integer")
        check_limit("DASK_WORKERS_MAX", int(n_workers), "--workers")
    distributed = _require_distributed()
    if address:
        try:
            client = distributed.Client(address, timeout=f"{DASK_CONNECT_TIMEOUT_S:g}s")
        except (OSError, TimeoutError) as exc:
            raise InterfpredError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - what answered is not a scheduler: its bytes decode to anything
            raise InterfpredError(f"the Dask scheduler at {address} did not answer as one "
                                  f"({type(exc).__name__})") from None
        try:
            yield client
        finally:
            client.close()
        return
    n = n_workers or min(os.cpu_count() or 1, limit("DASK_WORKERS_MAX"))
    import dask

    # every workspace of the cluster (workers, nanny, their lock files) inside one folder removed on exit
    with tempfile.TemporaryDirectory(prefix="interfpred-dask-") as scratch, \
            dask.config.set({"temporary-directory": scratch}), \
            distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                     silence_logs=logging.CRITICAL, local_directory=scratch) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def fit_dask(trace: Any, profiles: ProfileTable, model: InterferenceModel, *, address: str | None = None,
             n_workers: int | None = None, report: dict | None = None) -> InterferenceModel:
    """:func:`fit_partitions` of the Parquet files ``trace`` (see :func:`trace_files`) on Dask."""
    _check_mergeable(model)
    with connect(address, n_workers=n_workers) as client:
        parts = trace_partitions(trace_files(trace), client=client)
        return fit_partitions(parts, profiles, model, client=client, report=report)


def evaluate_dask(trace: Any, profiles: ProfileTable, model: InterferenceModel, *, online: bool = False,
                  address: str | None = None, n_workers: int | None = None) -> Evaluation:
    """:func:`evaluate_partitions` of the Parquet files ``trace`` on Dask."""
    with connect(address, n_workers=n_workers) as client:
        parts = trace_partitions(trace_files(trace), client=client)
        return evaluate_partitions(parts, profiles, model, online=online, client=client)
