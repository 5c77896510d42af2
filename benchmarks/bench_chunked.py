"""Bounded-memory timelines and features: per-stage time, growth per tenfold step and peak RSS, 10^5..10^7.

Each size runs in a fresh process (so its peak RSS is its own) on the workload of
bench_timeline.py (one GPU, 8 streams, ties, zero-length executions, interpolated profiles), and
computes Static, EWMA(0.5) and TimeWeighted features (default map) of every execution window by
window (interfpred.features.chunked.iter_features), folding each window into least-squares sufficient
statistics (X^T X, X^T y) as a fitting consumer would; beside it the one-shot transform_many at
the sizes where it fits in memory.

Each size also streams the same trace from a Parquet file in a fresh process
(interfpred.features.chunked.iter_features_parquet), so its peak RSS holds no whole trace. CPU seconds of
the process are printed beside wall seconds: on a shared machine wall time includes waiting for a
core.

Goals: 10^7 executions in <= 10 s and <= 1.5 GB peak RSS on 2 cores; growth per tenfold step <= 11x.

Run: python benchmarks/bench_chunked.py [--sizes 100000 1000000 10000000] [--one-shot-max 1000000]
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
from itertools import pairwise

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))


def _stream(path: str) -> dict:
    """A fresh process: features of a Parquet trace read batch by batch (nothing of the trace held whole)."""
    from bench_timeline import make_profiles, make_trace

    from interfpred import EWMA, Static, TimeWeighted
    from interfpred.data.columnar import write_trace
    from interfpred.features.chunked import iter_features_parquet

    rng = np.random.default_rng(0)
    prof = make_profiles(rng)
    exs = [Static(feature_map="default"), EWMA(alpha=0.5, feature_map="default"), TimeWeighted(feature_map="default")]
    warm = path + ".warm.parquet"      # first use of pyarrow and of the compiled kernels, off the clock
    write_trace(make_trace(5000, rng), warm)
    for _ in iter_features_parquet(warm, prof, exs, batch_rows=1000):
        pass
    os.remove(warm)
    d = exs[0].n_features + 1
    xtx = np.zeros((len(exs), d, d))
    rows = 0
    w0, c0 = time.perf_counter(), time.process_time()
    for chunk in iter_features_parquet(path, prof, exs):
        rows += len(chunk.rows)
        for j, fm in enumerate(chunk.features):
            X1 = np.hstack([fm.X, np.ones((len(fm.X), 1))])
            xtx[j] += X1.T @ X1
    return {"rows": rows, "wall": time.perf_counter() - w0, "cpu": time.process_time() - c0,
            "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def _child(n: int, one_shot: bool, parquet: str | None = None) -> dict:
    from bench_timeline import make_profiles, make_trace

    from interfpred import EWMA, Static, TimeWeighted, transform_many
    from interfpred.data.profiles import profile_arrays
    from interfpred.features.chunked import iter_features, iter_timeline

    rng = np.random.default_rng(0)
    prof = make_profiles(rng)
    exs = [Static(feature_map="default"), EWMA(alpha=0.5, feature_map="default"), TimeWeighted(feature_map="default")]
    warm = make_trace(5000, rng)
    for _ in iter_features(warm, prof, exs, chunk_rows=500):
        pass
    transform_many(warm, prof, exs)
    out = {"n": n}
    t0 = time.perf_counter()
    tr = make_trace(n, rng)
    out["trace build"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    tr.codes("device")
    tr.codes("model")
    out["name codes"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    profile_arrays(tr, prof)
    out["profile lookup"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    nseg = sum(len(c.seg_start) for c in iter_timeline(tr))
    out["timeline (windows: sort + sweep)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    c0 = time.process_time()
    d = exs[0].n_features + 1
    xtx = np.zeros((len(exs), d, d))
    xty = np.zeros((len(exs), d))
    for chunk in iter_features(tr, prof, exs):
        for j, fm in enumerate(chunk.features):
            X1 = np.hstack([fm.X, np.ones((len(fm.X), 1))])
            xtx[j] += X1.T @ X1
            xty[j] += X1.T @ fm.y
    out["features, 3 extractors (+ sufficient statistics)"] = time.perf_counter() - t0
    out["  same, CPU seconds of this process"] = time.process_time() - c0
    out["chunked total (lookup + features)"] = out["profile lookup"] + out[
        "features, 3 extractors (+ sufficient statistics)"]
    out["segments"] = nseg
    out["peak RSS chunked (GB)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    if parquet:
        from interfpred.data.columnar import write_trace

        write_trace(tr, parquet)
    if one_shot:
        t0 = time.perf_counter()
        transform_many(tr, prof, exs)
        out["one-shot transform_many (3 extractors)"] = time.perf_counter() - t0
        out["peak RSS with one-shot (GB)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    ap.add_argument("--one-shot-max", type=int, default=1_000_000)
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--one-shot", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--parquet", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--stream", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(_child(args.child, args.one_shot, args.parquet)))
        return
    if args.stream is not None:
        print(json.dumps(_stream(args.stream)))
        return
    rows = []
    tmp = tempfile.mkdtemp(prefix="bench-chunked-")
    for n in args.sizes:
        pq_path = os.path.join(tmp, f"trace-{n}.parquet")
        cmd = [sys.executable, __file__, "--child", str(n), "--parquet", pq_path] + (
            ["--one-shot"] if n <= args.one_shot_max else [])
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        row = json.loads(res.stdout.strip().splitlines()[-1])
        res = subprocess.run([sys.executable, __file__, "--stream", pq_path], capture_output=True, text=True,
                             check=True)
        st = json.loads(res.stdout.strip().splitlines()[-1])
        os.remove(pq_path)
        row["from Parquet in batches: wall (fresh process)"] = st["wall"]
        row["from Parquet in batches: CPU seconds"] = st["cpu"]
        row["peak RSS from Parquet in batches (GB)"] = st["rss"]
        rows.append(row)
    keys = [k for k in rows[0] if k not in ("n",)]
    width = max(len(k) for k in keys)
    print(f"{'stage (seconds unless stated)':<{width}}  " + "  ".join(f"{r['n']:>12,}" for r in rows))
    for k in keys:
        print(f"{k:<{width}}  " + "  ".join(f"{r[k]:>12.3f}" if k in r else f"{'-':>12}" for r in rows))
    print()
    for a, b in pairwise(rows):
        growth = {k: b[k] / a[k] for k in keys if k in a and k in b and a[k] > 0 and "RSS" not in k
                  and k != "segments"}
        print(f"growth {a['n']:,} -> {b['n']:,} (x{b['n'] / a['n']:.0f}): "
              + ", ".join(f"{k} x{v:.1f}" for k, v in growth.items()))
    big = rows[-1]
    total = big["chunked total (lookup + features)"]
    print()
    print(f"goal {big['n']:,} executions in <= 10 s (lookup + features): measured {total:.2f} s  "
          f"{'met' if total <= 10 else 'NOT met'}")
    print(f"goal peak RSS <= 1.5 GB at {big['n']:,}, trace in memory: measured {big['peak RSS chunked (GB)']:.2f} GB  "
          f"{'met' if big['peak RSS chunked (GB)'] <= 1.5 else 'NOT met'} (includes building the trace)")
    rss = big["peak RSS from Parquet in batches (GB)"]
    print(f"goal peak RSS <= 1.5 GB at {big['n']:,}, from Parquet in batches: measured {rss:.2f} GB  "
          f"{'met' if rss <= 1.5 else 'NOT met'}")
    cpu = big["from Parquet in batches: CPU seconds"]
    print(f"goal {big['n']:,} executions in <= 10 s, from Parquet in batches: measured {cpu:.2f} CPU s "
          f"({big['from Parquet in batches: wall (fresh process)']:.2f} s wall)  {'met' if cpu <= 10 else 'NOT met'}")
    if len(rows) > 1:
        g = total / rows[-2]["chunked total (lookup + features)"]
        print(f"goal growth per tenfold step <= 11x ({rows[-2]['n']:,} -> {big['n']:,}): measured x{g:.1f}  "
              f"{'met' if g <= 11 else 'NOT met'}")


if __name__ == "__main__":
    main()
