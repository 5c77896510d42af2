"""Measure co-location runs on a real GPU with PyTorch and write an interfpred measurements CSV.

Each member of a run is its own process (so each can have its own MPS share, set through
``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` before CUDA starts). Every member is first timed alone,
then all are launched together: each warms up, waits at a barrier, and loops for ``--seconds``
timing every iteration with CUDA events; the median iteration time is ``solo_ms`` / ``observed_ms``.
Each run is repeated ``--repeats`` times (one measurement row per member and repetition).

    # MPS daemon first when shares are below 100: nvidia-cuda-mps-control -d
    python examples/measure_pairs.py --member resnet50:8:50 --member vgg19:4:50 --out pairs.csv
    interfpred fit --measurements pairs.csv --out model.json

Needs torch with CUDA (and torchvision for its model names); without them it exits with a
message. The CSV writer (:func:`write_measurements_csv`) needs neither.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from interfpred import InterfpredError, Measurements

EXIT_NO_GPU = 2


@dataclass(frozen=True)
class Member:
    """One model of a run: torchvision name, batch size, MPS share (percent)."""

    model: str
    batch_size: int
    share: float = 100.0

    @classmethod
    def parse(cls, text: str) -> Member:
        """``name:batch[:share]``, e.g. ``resnet50:8:50``."""
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise InterfpredError(f"member {text!r}: expected name:batch_size[:share]")
        try:
            return cls(parts[0], int(parts[1]), float(parts[2]) if len(parts) == 3 else 100.0)
        except ValueError:
            raise InterfpredError(f"member {text!r}: batch size and share must be numbers") from None


def write_measurements_csv(rows: Sequence[dict], path: str) -> Measurements:
    """Validate ``rows`` (dicts with run, gpu, model, batch_size, share, solo_ms, observed_ms, member)
    as interfpred measurements and write them as CSV, atomically; returns the table."""
    cols = {k: [r[k] for r in rows] for k in ("run", "gpu", "model", "batch_size", "share", "solo_ms",
                                               "observed_ms", "member")}
    m = Measurements.from_columns(**cols)
    m.to_csv(path)
    return m


def _worker(member: Member, seconds: float, warmup: int, barrier, out) -> None:  # pragma: no cover - needs a GPU
    import os

    os.environ["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = f"{member.share:g}"
    import torch
    import torchvision

    model = getattr(torchvision.models, member.model)().cuda().eval()
    x = torch.randn(member.batch_size, 3, 224, 224, device="cuda")
    with torch.inference_mode():
        for _ in range(warmup):
            model(x)
        torch.cuda.synchronize()
        barrier.wait()
        times, pairs = [], []
        import time

        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            model(x)
            b.record()
            pairs.append((a, b))
            if len(pairs) >= 50:
                torch.cuda.synchronize()
                times += [p.elapsed_time(q) for p, q in pairs]
                pairs = []
        torch.cuda.synchronize()
        times += [p.elapsed_time(q) for p, q in pairs]
        barrier.wait()  # nobody stops early: every member keeps running until all have measured
    out.put((member, statistics.median(times)))


def _time_together(members: Sequence[Member], seconds: float, warmup: int) -> list[float]:  # pragma: no cover
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(len(members)), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(m, seconds, warmup, barrier, out)) for m in members]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    by_member: dict[Member, list[float]] = {}
    for m, t in results:
        by_member.setdefault(m, []).append(t)
    return [by_member[m].pop() for m in members]


def main(argv: Sequence[str] | None = None) -> int:
    """Measure the members alone and together; write the CSV."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--member", action="append", required=True, help="name:batch_size[:share], once per member")
    p.add_argument("--gpu", default=None, help="GPU name to record (default: torch's device name)")
    p.add_argument("--seconds", type=float, default=5.0, help="measurement window per run (default 5)")
    p.add_argument("--warmup", type=int, default=50, help="warm-up iterations per member (default 50)")
    p.add_argument("--repeats", type=int, default=3, help="repetitions of each run (default 3)")
    p.add_argument("--out", required=True, help="measurements CSV to write")
    args = p.parse_args(argv)
    try:
        members = [Member.parse(t) for t in args.member]
    except InterfpredError as exc:
        print(f"measure_pairs: {exc}", file=sys.stderr)
        return EXIT_NO_GPU
    try:
        import torch
    except ImportError:
        print("measure_pairs: PyTorch is not installed; it needs torch with CUDA (and torchvision) on a GPU "
              "machine. The rest of interfpred does not.", file=sys.stderr)
        return EXIT_NO_GPU
    if not torch.cuda.is_available():  # pragma: no cover - needs torch
        print("measure_pairs: no CUDA device is visible to PyTorch; run it on a GPU machine.", file=sys.stderr)
        return EXIT_NO_GPU
    gpu = args.gpu or torch.cuda.get_device_name(0).replace(" ", "_")  # pragma: no cover
    rows = []  # pragma: no cover
    for rep in range(args.repeats):  # pragma: no cover
        solo = [_time_together([m], args.seconds, args.warmup)[0] for m in members]
        together = _time_together(members, args.seconds, args.warmup)
        for i, (m, s, t) in enumerate(zip(members, solo, together)):
            rows.append({"run": f"run-{rep}", "gpu": gpu, "model": m.model, "batch_size": m.batch_size,
                         "share": m.share, "solo_ms": s, "observed_ms": t, "member": str(i)})
    table = write_measurements_csv(rows, args.out)  # pragma: no cover
    print(f"wrote {args.out}: {len(table)} rows, {table.n_runs} runs", file=sys.stderr)  # pragma: no cover
    return 0  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
