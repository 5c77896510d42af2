"""Columnar I/O of traces: CSV (standard library and pyarrow), Parquet and Arrow, against pandas.

Goals: writing 10^6 trace rows >= 5x faster than the standard-library CSV writer; reading a 500k-row
trace CSV within 1.5x of ``pandas.read_csv``. Also prints Parquet and Arrow write/read times and
file sizes.

Run: python benchmarks/bench_io.py [--write-rows N] [--read-rows N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from interfpred import Trace
from interfpred.data.columnar import read_trace, write_trace, write_trace_csv


def synthetic_trace(n: int, seed: int = 0) -> Trace:
    """``n`` executions on 8 GPUs with simulator-like columns (times with full float precision)."""
    rng = np.random.default_rng(seed)
    start = np.cumsum(rng.exponential(0.5, n))
    models = np.array(["resnet50", "vgg19", "convnext_b", "roberta_base", "vit_b16", "yolov8n"])
    return Trace(id=np.arange(n), device=np.array([f"gpu{i}" for i in range(8)])[rng.integers(0, 8, n)],
                 model=models[rng.integers(0, 6, n)], batch_size=rng.integers(1, 33, n), start_ms=start,
                 end_ms=start + rng.uniform(1.0, 40.0, n), solo_ms=rng.uniform(1.0, 30.0, n))


def timed(fn, repeat=1):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write-rows", type=int, default=1_000_000)
    ap.add_argument("--read-rows", type=int, default=500_000)
    args = ap.parse_args()
    import pandas as pd

    tmp = tempfile.mkdtemp()
    rows = []
    tr = synthetic_trace(args.write_rows)
    p_std, p_pa = os.path.join(tmp, "std.csv"), os.path.join(tmp, "pa.csv")
    w_std, _ = timed(lambda: tr.to_csv(p_std, engine="python"))
    w_pa, _ = timed(lambda: write_trace_csv(tr, p_pa), 2)
    rows.append((f"write {len(tr):,} rows CSV, standard library", w_std))
    rows.append((f"write {len(tr):,} rows CSV, pyarrow writer", w_pa))
    for suffix in ("parquet", "arrow"):
        path = os.path.join(tmp, f"t.{suffix}")
        w, _ = timed(lambda path=path: write_trace(tr, path), 2)
        r, back = timed(lambda path=path: read_trace(path), 2)
        assert back == tr
        rows.append((f"write {len(tr):,} rows {suffix} ({os.path.getsize(path) / 2**20:.0f} MiB)", w))
        rows.append((f"read  {len(tr):,} rows {suffix}", r))
    assert read_trace(p_pa) == Trace.from_csv(p_std)

    small = synthetic_trace(args.read_rows, seed=1)
    path = os.path.join(tmp, "read.csv")
    write_trace_csv(small, path)
    r_pd, _ = timed(lambda: pd.read_csv(path), 3)
    r_std, _ = timed(lambda: Trace.from_csv(path))
    r_fast, back = timed(lambda: read_trace(path), 3)
    assert back == small
    rows.append((f"read {len(small):,} rows CSV, pandas.read_csv (peer)", r_pd))
    rows.append((f"read {len(small):,} rows CSV, Trace.from_csv (standard library)", r_std))
    rows.append((f"read {len(small):,} rows CSV, read_trace (pyarrow, validated)", r_fast))
    width = max(len(r[0]) for r in rows)
    print(f"{'operation':<{width}}  seconds")
    for name, s in rows:
        print(f"{name:<{width}}  {s:7.3f}")
    print()
    print(f"goal writing {len(tr):,} rows >= 5x faster than the standard library: measured "
          f"{w_std / w_pa:.1f}x  {'met' if w_std / w_pa >= 5 else 'NOT met'}")
    print(f"goal reading {len(small):,} rows within 1.5x of pandas.read_csv: measured {r_fast / r_pd:.2f}x  "
          f"{'met' if r_fast / r_pd <= 1.5 else 'NOT met'} (standard library: {r_std / r_pd:.1f}x)")


if __name__ == "__main__":
    main()
