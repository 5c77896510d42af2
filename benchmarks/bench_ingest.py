"""Ingest speed: read_kernels on a generated 1,000,000-row ncu details page vs a bare csv.reader pass.

The floor is the cheapest possible Python read of the same file: ``for row in csv.reader(fh): pass``.
The goal is read_kernels within 3x of that floor.  Run: ``python benchmarks/bench_ingest.py [rows]``.
The page imitates ``ncu --set full --csv`` of 2024+: 20-column header, metric rows ending after 16
fields, rule rows, long kernel names, profiler lines before and after; 40 rows per kernel.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout
from interfpred.data.ingest import profile_from_kernels, read_kernels  # noqa: E402

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
          '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name",'
          '"Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"')
SOL = [("DRAM Frequency", "hz", "3995313115.40"), ("SM Frequency", "hz", "1239496049.13"),
       ("Elapsed Cycles", "cycle", "508757"), ("Memory Throughput", "%", "21.68"),
       ("DRAM Throughput", "%", "{dram}"), ("Duration", "ns", "{dur}"),
       ("L1/TEX Cache Throughput", "%", "23.23"), ("L2 Cache Throughput", "%", "{l2}"),
       ("SM Active Cycles", "cycle", "462,061.91"), ("Compute (SM) Throughput", "%", "{sm}")]
OTHER = [("Launch Statistics", "Block Size", "", "384"), ("Launch Statistics", "Grid Size", "", "288"),
         ("Launch Statistics", "Registers Per Thread", "register/thread", "168"),
         ("Launch Statistics", "Threads", "thread", "110,592"), ("Launch Statistics", "Waves Per SM", "", "1.89"),
         ("Occupancy", "Theoretical Occupancy", "%", "18.75"), ("Occupancy", "Achieved Occupancy", "%", "15.53"),
         ("Occupancy", "Block Limit SM", "block", "32"), ("Occupancy", "Block Limit Registers", "block", "1"),
         ("Memory Workload Analysis", "Memory Throughput", "byte/s", "59,120,012,345.00"),
         ("Memory Workload Analysis", "L1/TEX Hit Rate", "%", "n/a"),
         ("Memory Workload Analysis", "L2 Hit Rate", "%", "88.12"),
         ("Compute Workload Analysis", "Executed Ipc Active", "inst/cycle", "1.21"),
         ("Compute Workload Analysis", "SM Busy", "%", "31.40"),
         ("Scheduler Statistics", "One or More Eligible", "%", "24.10"),
         ("Scheduler Statistics", "Issued Warp Per Scheduler", "", "0.24"),
         ("Warp State Statistics", "Warp Cycles Per Issued Instruction", "cycle", "49.68"),
         ("Instruction Statistics", "Executed Instructions", "inst", "12,345,678"),
         ("GPU and Memory Workload Distribution", "Average SM Active Cycles", "cycle", "462061.91"),
         ("GPU and Memory Workload Distribution", "Total SM Elapsed Cycles", "cycle", "77331064"),
         ("PM Sampling", "Maximum Buffer Size", "byte", "1,048,576"),
         ("PM Sampling", "Dropped Samples", "sample", "0"),
         ("Source Counters", "Branch Instructions", "inst", "98,304"),
         ("Source Counters", "Branch Efficiency", "%", "100")]
RULE = ('"{section}","","","","{rule}","OPT","This workload exhibits low compute throughput and memory '
        'bandwidth utilization relative to the peak performance of this device.","global","50"')
ROWS_PER_KERNEL = len(SOL) + len(OTHER) + 6


def generate(path: str, rows: int) -> int:
    """Write a details page with about ``rows`` table rows; returns the exact row count."""
    kernels = max(1, rows // ROWS_PER_KERNEL)
    written = 0
    with open(path, "w", newline="") as fh:
        fh.write("==PROF== Connected to process 371693 (/opt/bench/bin/model_server)\n")
        fh.write("==WARNING== Note: Running with uncontrolled GPU clocks.\n")
        fh.write(HEADER + "\n")
        for k in range(kernels):
            name = f"void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_{k % 97}_128x128_32x3_nn_align4>"
            pre = (f'"{k}","371693","model_server","127.0.0.1","{name}","1","{7 + k % 3}","(384, 1, 1)",'
                   f'"({k % 64 + 1}, 32, 1)","0","10.0",')
            vals = {"dram": f"{(k * 7) % 100 + 0.5:.2f}", "l2": f"{(k * 13) % 100 + 0.25:.2f}",
                    "sm": f"{(k * 29) % 100:.2f}", "dur": f"{(k % 5000) * 100 + 2720:,}"}
            out = []
            for label, unit, v in SOL:
                out.append(f'{pre}"GPU Speed Of Light Throughput","{label}","{unit}","{v.format(**vals)}",\n')
            out.append(pre + RULE.format(section="SpeedOfLight", rule="SOLBottleneck") + "\n")
            for section, label, unit, v in OTHER:
                out.append(f'{pre}"{section}","{label}","{unit}","{v}",\n')
            for rule in ("LaunchConfiguration", "AchievedOccupancy", "WorkloadImbalance", "CPIStall", "IssueSlotUtilization"):
                out.append(pre + RULE.format(section="Rules", rule=rule) + "\n")
            fh.write("".join(out))
            written += len(out)
        fh.write("==PROF== Disconnected from process 371693\n")
    return written


def bare_csv(path: str) -> int:
    n = 0
    with open(path, newline="") as fh:
        for _ in csv.reader(fh):
            n += 1
    return n


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="Ingest a generated details page with read_kernels and "
                                     "compare with a bare csv.reader pass over the same file.")
    parser.add_argument("rows", nargs="?", type=int, default=1_000_000, help="metric rows (default 10^6)")
    parser.add_argument("repeat", nargs="?", type=int, default=2, help="best of N (default 2)")
    args = parser.parse_args(argv[1:])
    rows, repeat = args.rows, args.repeat
    folder = tempfile.mkdtemp(prefix="bench_ingest_")
    path = os.path.join(folder, "details.csv")
    t0 = time.perf_counter()
    n = generate(path, rows)
    gen_s = time.perf_counter() - t0
    size_mb = os.path.getsize(path) / 2**20
    try:
        t_csv = best_of(lambda: bare_csv(path), repeat)
        holder = {}
        t_ingest = best_of(lambda: holder.__setitem__("t", read_kernels(path)), repeat)
        kernels = holder["t"]
        prof = profile_from_kernels(kernels, gpu="b200", model="bench", batch_size=1)
    finally:
        os.unlink(path)
        os.rmdir(folder)
    print(f"details page: {n:,} rows, {len(kernels):,} kernels, {size_mb:.0f} MiB (generated in {gen_s:.1f} s); "
          f"best of {repeat}; cpus={os.cpu_count()}, load={os.getloadavg()[0]:.2f}")
    print(f"{'reader':<28}{'seconds':>10}{'rows/s':>14}{'x floor':>10}")
    print(f"{'csv.reader pass (floor)':<28}{t_csv:>10.2f}{n / t_csv:>14,.0f}{1.0:>10.2f}")
    print(f"{'interfpred read_kernels':<28}{t_ingest:>10.2f}{n / t_ingest:>14,.0f}{t_ingest / t_csv:>10.2f}")
    print(f"goal: read_kernels within 3x of the floor -> {'met' if t_ingest <= 3 * t_csv else 'NOT met'}")
    print(f"profile: solo_ms={prof.solo_ms:.3f} sm={prof.sm:.4f} l2={prof.l2:.4f} dram={prof.dram:.4f}")


if __name__ == "__main__":
    main(sys.argv)
