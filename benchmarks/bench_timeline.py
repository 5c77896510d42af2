"""Benchmark: segmentation and the three extractors from 10^4 to 10^6 executions.

The workload: one GPU with 8 streams, each running executions back to back with random gaps,
so at most 8 run at once; times on a 0.01 ms grid, so ties occur; six models with profiles at
batch sizes 1..32 and batch sizes drawn from 1..32 (interpolated lookups). Beside it, the
plain-Python O(n^2) reference of tests/naive.py on a smaller trace.

The figure it ends on: the three extractors (Static, EWMA, TimeWeighted, the exact time-weighted
exposure) of 10^6 executions in one pass (``transform_many`` with no stored timeline, profile
lookup included), in wall and CPU seconds (on a shared machine the wall time includes the waits
for a core), against the goal of 2 s and beside its peer in the same run, the three extractors
one after another.

Run from the repository root:  python benchmarks/bench_timeline.py [--max-n 1000000] [--naive-n 20000]
Timings are the best of --repeat runs after a warm-up (numba compilation is not counted).

``--concurrency 8 60`` instead: 20,000 executions (``--executions``) on one device with exactly
that many always running (back-to-back streams), each size in fresh processes: peak RSS and wall
time of the feature build ``interfpred fit`` does (features and entities) and of the whole
``python -m interfpred fit`` command (after a warm-up run, so the numba cache is loaded, not
compiled). ``--base DIR`` runs the same measurements with the interfpred of DIR (an export of
another commit) beside this checkout's and prints the ratios.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
#: Which interfpred the --concurrency children import (set by the parent for --base).
CODE = os.environ.get("INTERFPRED_BENCH_CODE", ROOT)
sys.path.insert(0, CODE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from interfpred import EWMA, ProfileTable, Static, TimeWeighted, Trace, build_timeline  # noqa: E402
from interfpred.data.profiles import profile_arrays
from interfpred.features import transform_many  # noqa: E402

MODELS = ("resnet50", "vgg19", "convnext_b", "roberta_base", "vit_b16", "yolov8n")
BATCHES = (1, 2, 4, 8, 16, 32)


def make_profiles(rng: np.random.Generator) -> ProfileTable:
    cols = {k: [] for k in ("gpu", "model", "batch_size", "solo_ms", "sm", "l2", "dram")}
    for m in MODELS:
        base = rng.uniform(0.5, 3.0)
        for b in BATCHES:
            cols["gpu"].append("l4")
            cols["model"].append(m)
            cols["batch_size"].append(b)
            cols["solo_ms"].append(base * (1 + 0.3 * b))
            for r in ("sm", "l2", "dram"):
                cols[r].append(min(1.0, rng.uniform(0.05, 0.4) * (1 + np.log2(b) / 5)))
    return ProfileTable.from_columns(**cols)


def make_trace(n: int, rng: np.random.Generator, streams: int = 8) -> Trace:
    per = -(-n // streams)
    dur = np.round(rng.exponential(3.0, (streams, per)) + 0.01, 2)
    gap = np.round(rng.exponential(1.0, (streams, per)), 2)
    gap[rng.random((streams, per)) < 0.2] = 0.0             # back to back: an end meets a start
    start = np.cumsum(np.concatenate([np.zeros((streams, 1)), (dur + gap)[:, :-1]], axis=1), axis=1)
    start, dur = start.ravel()[:n], dur.ravel()[:n]
    dur[rng.random(n) < 0.001] = 0.0                         # a few zero-length executions
    order = np.argsort(start, kind="stable")
    return Trace(id=np.arange(n), device=np.full(n, "l4"), model=rng.choice(MODELS, n),
                 batch_size=rng.integers(1, 33, n), start_ms=start[order], end_ms=(start + dur)[order])


def make_concurrent_trace(n: int, overlap: int, rng: np.random.Generator) -> Trace:
    """``n`` executions on one device in ``overlap`` back-to-back streams: exactly ``overlap`` run at
    every instant until the first stream runs dry."""
    per = -(-n // overlap)
    dur = np.round(rng.exponential(3.0, (overlap, per)) + 0.01, 2)
    start = np.cumsum(np.concatenate([np.zeros((overlap, 1)), dur[:, :-1]], axis=1), axis=1)
    start, dur = start.ravel()[:n], dur.ravel()[:n]
    order = np.argsort(start, kind="stable")
    return Trace(id=np.arange(n), device=np.full(n, "l4"), model=rng.choice(MODELS, n),
                 batch_size=rng.integers(1, 33, n), start_ms=start[order], end_ms=(start + dur)[order])


def _features_child(trace_csv: str, prof_csv: str) -> None:
    """A fresh process: the features and entities ``interfpred fit`` builds (default model), timed."""
    import json
    import resource

    from interfpred.data.columnar import read_trace
    from interfpred.model.interference import InterferenceModel
    from interfpred.predictors import make_predictor

    prof = ProfileTable.from_csv(prof_csv)
    tr = read_trace(trace_csv)
    model = InterferenceModel(None, make_predictor("rls"))
    model.features(tr.take(np.arange(min(len(tr), 200))), prof)          # warm-up: numba cache
    t0 = time.perf_counter()
    fm = model.features(tr, prof)
    wall = time.perf_counter() - t0
    print(json.dumps({"wall": wall, "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                      "rows": len(fm)}))


def _measure(code: str, argv: list[str]) -> tuple[float, float, str]:
    """Run ``python argv`` importing interfpred from ``code``: (wall s, peak RSS GB, stdout)."""
    import subprocess

    env = dict(os.environ, INTERFPRED_BENCH_CODE=code, PYTHONPATH=code)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *argv], cwd=code, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        return wall, usage.ru_maxrss / 2**20, f"FAILED (exit {proc.returncode})"
    return wall, usage.ru_maxrss / 2**20, out


def concurrency(overlaps: list[int], n: int, base: str | None) -> None:
    """The --concurrency report (see the module docstring)."""
    import json
    import tempfile

    codes = [("this checkout", ROOT)] + ([("base", os.path.abspath(base))] if base else [])
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        prof_csv = os.path.join(tmp, "profiles.csv")
        make_profiles(rng).to_csv(prof_csv)
        make_concurrent_trace(500, 8, rng).to_csv(os.path.join(tmp, "warm.csv"))
        traces = {}
        for k in overlaps:
            traces[k] = os.path.join(tmp, f"trace{k}.csv")
            make_concurrent_trace(n, k, np.random.default_rng(k)).to_csv(traces[k])
        res: dict[tuple[str, int], dict[str, float]] = {}
        for label, code in codes:
            fit = ["-m", "interfpred", "fit", "--profiles", prof_csv, "--out", os.path.join(tmp, "m.json"), "--trace"]
            _measure(code, fit + [os.path.join(tmp, "warm.csv")])             # loads or compiles the numba cache
            for k in overlaps:
                _, _, out = _measure(code, [os.path.join(ROOT, "benchmarks", "bench_timeline.py"), "--features-child",
                                            traces[k], prof_csv])
                feat = json.loads(out) if out.startswith("{") else {"wall": float("nan"), "rss_gb": float("nan")}
                wall, rss, out = _measure(code, fit + [traces[k]])
                failed = out.startswith("FAILED")
                res[(label, k)] = {"feat_s": feat["wall"], "feat_gb": feat["rss_gb"],
                                   "fit_s": float("nan") if failed else wall, "fit_gb": rss}
                r = res[(label, k)]
                print(f"{label:>14} {n} executions, {k:>3} always running: features {r['feat_s']:7.2f} s "
                      f"{r['feat_gb']:6.2f} GB peak RSS | fit {r['fit_s']:7.2f} s {r['fit_gb']:6.2f} GB peak RSS"
                      + ("  (fit failed)" if failed else ""), flush=True)
    lo, hi = min(overlaps), max(overlaps)
    for label, _ in codes:
        a, b = res[(label, lo)], res[(label, hi)]
        print(f"{label}: fit at {hi} / at {lo}: x{b['fit_s'] / a['fit_s']:.2f} time, x{b['fit_gb'] / a['fit_gb']:.2f} "
              f"peak RSS; features x{b['feat_s'] / a['feat_s']:.2f} time (goal at {hi}: fit <= 1 GB, <= 3x the time "
              f"at {lo})")
    if base:
        for k in overlaps:
            a, b = res[("base", k)], res[("this checkout", k)]
            print(f"{k:>3} always running, base / this checkout: fit x{a['fit_s'] / b['fit_s']:.2f} time, "
                  f"x{a['fit_gb'] / b['fit_gb']:.2f} peak RSS; features x{a['feat_s'] / b['feat_s']:.2f} time, "
                  f"x{a['feat_gb'] / b['feat_gb']:.2f} peak RSS")


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def best_wall_cpu(fn, repeat: int) -> tuple[float, float]:
    """Best wall and best CPU seconds of ``fn`` over ``repeat`` runs: on a shared machine the wall time
    includes the waits for a core, the CPU time does not."""
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-n", type=int, default=1_000_000)
    ap.add_argument("--naive-n", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stages", action="store_true",
                    help="instead: per-stage time, growth and peak RSS at 10^5, 10^6 and 10^7 executions of the "
                         "bounded-memory (windowed) path, each size in a fresh process (bench_chunked.py)")
    ap.add_argument("--concurrency", type=int, nargs="+", metavar="K",
                    help="instead: features and fit of --executions executions with K always running, K = 8 60 ...")
    ap.add_argument("--executions", type=int, default=20_000)
    ap.add_argument("--base", metavar="DIR", help="with --concurrency: also measure the interfpred of DIR")
    ap.add_argument("--features-child", nargs=2, metavar=("TRACE", "PROFILES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.features_child:
        _features_child(*args.features_child)
        return
    if args.concurrency:
        concurrency(args.concurrency, args.executions, args.base)
        return
    if args.stages:
        sys.path.insert(0, os.path.dirname(__file__))
        import bench_chunked

        sys.argv = [bench_chunked.__file__]
        bench_chunked.main()
        return
    rng = np.random.default_rng(0)
    prof = make_profiles(rng)
    dm = "default"    # the three default-map extractors the timings name, and the rich map beside them
    # target="slowdown": the workload keeps a few zero-length executions, whose rate is undefined (the
    # features, which are what is timed, do not depend on the target)
    tg = "slowdown"
    extractors = {"static": Static(feature_map=dm, target=tg), "ewma(0.5)": EWMA(alpha=0.5, feature_map=dm, target=tg),
                  "time_weighted": TimeWeighted(feature_map=dm, target=tg),
                  "tw rich": TimeWeighted(feature_map="rich", target=tg)}

    # warm-up (compiles or loads the numba cache)
    small = make_trace(1000, rng)
    for ex in extractors.values():
        ex.transform(small, prof)
    transform_many(small, prof, list(extractors.values()))

    sizes = [n for n in (10_000, 100_000, 1_000_000, 10_000_000) if n <= args.max_n]
    print(f"{'n':>10} {'max run':>7} {'segments':>9} {'lookup s':>9} {'segment s':>10} "
          + " ".join(f"{k + ' s':>14}" for k in extractors) + f" {'3 extractors':>13} {'total s':>9}"
          + f" {'3 shared s':>11} {'total shared':>13} {'one pass s':>11} {'one pass cpu':>13}")
    rows = []
    for n in sizes:
        tr = make_trace(n, rng)
        tl = build_timeline(tr)
        t_lookup = best(lambda: profile_arrays(tr, prof), args.repeat)
        t_seg = best(lambda: build_timeline(tr), args.repeat)
        t_ex = {k: best(lambda ex=ex: ex.transform(tr, prof, timeline=tl), args.repeat) for k, ex in extractors.items()}
        three = t_ex["static"] + t_ex["ewma(0.5)"] + t_ex["time_weighted"]
        trio = [extractors["static"], extractors["ewma(0.5)"], extractors["time_weighted"]]
        t_many = best(lambda: transform_many(tr, prof, trio, timeline=tl), args.repeat)
        total = t_seg + three
        # the library's default: one sweep over the trace's events for the three, no stored timeline
        t_pass, c_pass = best_wall_cpu(lambda: transform_many(tr, prof, trio), args.repeat)
        t_sep, c_sep = best_wall_cpu(lambda: [ex.transform(tr, prof) for ex in trio], args.repeat)
        rows.append((n, total, t_seg + t_many, t_pass, c_pass, t_sep, c_sep))
        print(f"{n:>10} {int(tl.seg_count.max()):>7} {tl.n_segments:>9} {t_lookup:>9.3f} {t_seg:>10.3f} "
              + " ".join(f"{t_ex[k]:>14.3f}" for k in extractors) + f" {three:>13.3f} {total:>9.3f}"
              + f" {t_many:>11.3f} {t_seg + t_many:>13.3f} {t_pass:>11.3f} {c_pass:>13.3f}")
    print("(each extractor's time includes its profile lookup; 'total' = segmentation + the three default-map "
          "extractors one after another, the workload the issue names; 'shared' = the same three through "
          "transform_many over the stored timeline; 'one pass' = transform_many(trace, profiles, three) with no "
          "timeline, one sweep over the events that segments and folds the three at once, profile lookup included: "
          "wall and CPU seconds)")
    for (n0, t0, s0, p0, *_), (n1, t1, s1, p1, *_) in zip(rows, rows[1:]):
        print(f"growth {n0:>9} -> {n1:>9}: x{n1 / n0:.0f} executions, x{t1 / t0:.2f} time (shared: x{s1 / s0:.2f}, "
              f"one pass: x{p1 / p0:.2f})")
    if rows and rows[-1][0] == 1_000_000:
        _, total, shared, t_pass, c_pass, t_sep, c_sep = rows[-1]
        print(f"10^6 executions, the three extractors (static, EWMA, exact time-weighted exposure): one pass "
              f"{t_pass:.3f} s wall, {c_pass:.3f} s CPU (goal <= 2 s); peer in this run, the three extractors one "
              f"after another from the trace: {t_sep:.3f} s wall, {c_sep:.3f} s CPU, ratio x{t_sep / t_pass:.2f} wall, "
              f"x{c_sep / c_pass:.2f} CPU; segmentation + three over the stored timeline: {total:.3f} s, shared "
              f"{shared:.3f} s")

    if args.naive_n:
        from naive import naive_features

        tr = make_trace(args.naive_n, rng)
        dem, _ = profile_arrays(tr, prof)
        t0 = time.perf_counter()
        ref = naive_features(tr.device.tolist(), tr.start_ms.tolist(), tr.end_ms.tolist(), dem.tolist(),
                             aggregation="time_weighted")
        t_naive = time.perf_counter() - t0
        fast = best(lambda: TimeWeighted(feature_map="default", target=tg).transform(tr, prof), args.repeat)
        err = float(np.max(np.abs(np.array(ref) - TimeWeighted(feature_map="default", target=tg).transform(tr, prof).X)))
        print(f"\nO(n^2) plain-Python reference (time_weighted, default map) on {args.naive_n} executions: "
              f"{t_naive:.2f} s; interfpred (segmentation + extractor): {fast:.4f} s; ratio x{t_naive / fast:.0f}; "
              f"max |difference| {err:.1e}")


if __name__ == "__main__":
    main()
