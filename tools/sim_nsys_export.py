"""Write a simulated trace as an Nsight Systems SQLite export (the tables and columns interfpred reads).

The shipped Nsight Systems exports hold no two batches running together, so they cannot show
interference. This script runs the simulator (a mix of models on one GPU at a load where batches
overlap, and where each model also runs alone now and then) and writes each execution the way
``nsys profile --trace=cuda,nvtx`` records it: an NVTX push/pop range ``MODEL:BATCH`` on the thread
that launched it, a ``cudaLaunchKernel`` inside the range, and one kernel on device 0 from the
execution's start to its end; each model is its own process (an MPS client), and
``TARGET_INFO_GPU`` names the simulated GPU. Times are the simulator's, in nanoseconds. The file is
simulated and says so in ``META_DATA_EXPORT``.

Run from the repository root::

    python tools/sim_nsys_export.py tests/data/capture/nsys_sim_colocated_v100.sqlite
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys

import numpy as np

from interfpred.sim.workload import mix_scenario

#: The mix: three models of the V100 zoo at batch size 4, first at a light load (most batches run alone:
#: their latencies give the solo profiles), then at a load where batches overlap.
MODELS = ("resnet50", "mobilenetv2", "efficientnet")
BATCH_SIZES = (4,)
PHASES = ((0.15, 300), (0.8, 500))  # (load, executions)
GAP_MS = 100.0
GPU_NAME = "Tesla V100-SXM2-16GB (simulated)"
_SCHEMA = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, cuDevice INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid INTEGER,
    correlationId INTEGER, nameId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT,
    globalTid INTEGER);
"""


def write_export(path: str, *, seed: int = 0) -> int:
    """Simulate the mix and write it to ``path`` (a new file); returns the number of executions."""
    parts, offset = [], 0.0
    for k, (rho, n) in enumerate(PHASES):
        t = mix_scenario(list(MODELS), rho=rho, executions=n, batch_sizes=list(BATCH_SIZES), spec="v100",
                         seed=seed + k).traces["trace"]
        parts.append((t, offset))
        offset += float(t.end_ms.max()) + GAP_MS
    model = np.concatenate([t.model for t, _ in parts])
    batch = np.concatenate([t.batch_size for t, _ in parts])
    start = np.concatenate([t.start_ms + off for t, off in parts])
    end = np.concatenate([t.end_ms + off for t, off in parts])
    con = sqlite3.connect(path)
    con.executescript(_SCHEMA)
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "cudaLaunchKernel"), (2, "sim_kernel")])
    con.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
                    [("EXPORT_PRODUCT_VERSION", "interfpred simulator"), ("EXPORT_SCHEMA_VERSION", "simulated")])
    con.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, 0)", (GPU_NAME,))
    pid = {m: i + 1 for i, m in enumerate(sorted(set(model.tolist())))}
    kernels, launches, ranges = [], [], []
    for i in range(len(model)):
        s_ns, e_ns = int(round(start[i] * 1e6)), int(round(end[i] * 1e6))
        gpid = pid[str(model[i])] << 24
        gtid = gpid + i + 1  # one launching thread per execution: ranges of one thread nest
        corr = i + 1
        ranges.append((s_ns - 20_000, s_ns + 5_000, 59, f"{model[i]}:{int(batch[i])}", gtid))
        launches.append((s_ns - 10_000, s_ns - 2_000, gtid, corr, 1))
        kernels.append((s_ns, e_ns, 0, 7, corr, gpid, 2, 2))
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?, ?)", kernels)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)", launches)
    con.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?)", ranges)
    con.commit()
    con.execute("VACUUM")
    con.close()
    return len(model)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="SQLite file to write (must not exist)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if os.path.exists(args.out):
        print(f"{args.out} exists: remove it first", file=sys.stderr)
        return 2
    n = write_export(args.out, seed=args.seed)
    print(f"wrote {args.out}: {n} executions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
