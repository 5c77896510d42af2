"""Fitting a trace split across Parquet files: one process against Dask on 2 worker processes.

The trace: ``--n`` executions on 8 GPUs (the workload of bench_timeline.py on each), dealt
round-robin in launch order into ``--files`` Parquet files, so every file holds every GPU. Both
runs partition by GPU, compute TimeWeighted rich-map features per partition and merge the
predictor's sufficient statistics (RLS with forgetting 1, and the three baselines); the two
fitted models must agree (printed). Each run happens in a fresh process, after a warm-up fit on a
small trace (first use of pyarrow and of the compiled kernels in every process), and the peak RSS of the
process (one-process run) or of each worker (Dask) is printed beside the wall time.

Goal (no fixed number): Dask on 2 workers faster than one process, with each worker
holding only its partitions.

Run: python benchmarks/bench_dask.py [--n 10000000] [--files 8] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

GPUS = 8


def _make(n: int, files: int, folder: str) -> None:
    _write(n, files, folder, "trace")
    _write(8 * 2000, files, folder, "warmup")


def _write(n: int, files: int, folder: str, name: str) -> None:
    from bench_timeline import make_profiles, make_trace

    from interfpred import Trace
    from interfpred.data.columnar import write_profiles
    from interfpred.model.distributed import write_device_files

    rng = np.random.default_rng(0)
    write_profiles(make_profiles(rng), os.path.join(folder, "profiles.parquet"))
    parts = []
    for g in range(GPUS):
        t = make_trace(n // GPUS, rng)
        parts.append(Trace(id=t.id + g * (n // GPUS), device=np.full(len(t), f"gpu{g}"), model=t.model,
                           batch_size=t.batch_size, start_ms=t.start_ms, end_ms=t.end_ms))
    write_device_files(Trace.concat(parts), os.path.join(folder, name), files=files)


def _fit(folder: str, workers: int) -> dict:
    from interfpred.data.columnar import read_profiles
    from interfpred.model.distributed import (
        connect,
        fit_partitions,
        trace_files,
        trace_partitions,
    )
    from interfpred.model.interference import InterferenceModel

    prof = read_profiles(os.path.join(folder, "profiles.parquet"))
    files = trace_files(os.path.join(folder, "trace"))
    warm = trace_files(os.path.join(folder, "warmup"))

    def model():
        return InterferenceModel({"feature_map": "rich", "aggregation": "time_weighted"},
                                 {"kind": "rls", "params": {"forgetting": 1.0}})

    report: dict = {}
    if workers == 0:
        fit_partitions(trace_partitions(warm), prof, model())      # first use of pyarrow, numba caches
        model = model()
        t0 = time.perf_counter()
        fit_partitions(trace_partitions(files), prof, model, report=report)
        wall = time.perf_counter() - t0
        rss = {"this process": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    else:
        with connect(n_workers=workers) as client:
            for _ in range(2):   # first use in every worker (tasks may land on either)
                fit_partitions(trace_partitions(warm, client=client), prof, model(), client=client)
            model = model()
            t0 = time.perf_counter()
            fit_partitions(trace_partitions(files, client=client), prof, model, client=client, report=report)
            wall = time.perf_counter() - t0
        per_pid: dict = {}
        for r in report.values():
            per_pid[r["pid"]] = max(per_pid.get(r["pid"], 0.0), r["peak_rss_mb"])
        rss = {f"worker {i}": v for i, v in enumerate(per_pid.values())}
    return {"wall": wall, "rss_mb": rss, "coef": model.predictor.coef_.tolist(),
            "rows": sum(r["rows"] for r in report.values())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--stage", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage == "make":
        _make(args.n, args.files, args.folder)
        return
    if args.stage == "fit":
        print(json.dumps(_fit(args.folder, args.workers)))
        return
    folder = tempfile.mkdtemp(prefix="bench-dask-")
    me = [sys.executable, __file__, "--folder", folder, "--n", str(args.n), "--files", str(args.files)]
    t0 = time.perf_counter()
    subprocess.run([*me, "--stage", "make"], check=True)
    print(f"wrote {args.n:,} executions on {GPUS} GPUs into {args.files} Parquet files "
          f"({sum(os.path.getsize(os.path.join(folder, 'trace', f)) for f in os.listdir(os.path.join(folder, 'trace'))) / 2**20:.0f} MiB) "
          f"in {time.perf_counter() - t0:.1f} s")
    runs = {}
    for label, w in (("one process", 0), (f"Dask, {args.workers} worker processes", args.workers)):
        out = subprocess.run([*me, "--stage", "fit", "--workers", str(w)], check=True, capture_output=True, text=True)
        runs[label] = json.loads(out.stdout.strip().splitlines()[-1])
    width = max(len(k) for k in runs)
    print(f"{'run':<{width}}  wall s  peak RSS MB")
    for label, r in runs.items():
        print(f"{label:<{width}}  {r['wall']:6.2f}  " + ", ".join(f"{k} {v:.0f}" for k, v in r["rss_mb"].items()))
    a, b = runs.values()
    diff = float(np.max(np.abs(np.array(a["coef"]) - np.array(b["coef"])) / np.maximum(1.0, np.abs(a["coef"]))))
    speed = a["wall"] / b["wall"]
    print(f"\nrows fitted: {a['rows']:,} and {b['rows']:,}; max relative coefficient difference {diff:.1e}")
    print(f"goal Dask on {args.workers} workers faster than one process: measured x{speed:.2f}  "
          f"{'met' if speed > 1 else 'NOT met'}")


if __name__ == "__main__":
    main()
