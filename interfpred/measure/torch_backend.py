"""The GPU backend of ``interfpred measure``: PyTorch workers on CUDA, Nsight Compute for the profiles.

Needs ``torch`` with CUDA and ``torchvision`` (``pip install "interfpred[measure]"``); nothing
else in interfpred imports this module.

**Workers.** Each worker process (started as ``python -m interfpred.measure.torch_backend host``
with its layout's environment: an MPS share or a MIG instance) builds its instances once: the
workload's batch function on preallocated inputs, a few warm-up batches on the instance's own CUDA
stream, then the batch captured as one CUDA graph. A batch that cannot be captured (a callable
that synchronises with the host, a model with data-dependent control flow) runs eagerly, and the
campaign notes why. In a window every instance runs in its own thread, launching batches back to
back from the common start instant with at most ``MEASURE_QUEUE_DEPTH`` batches queued ahead, so
the GPU never waits for the host. A CUDA event is recorded before and after every batch:

- ``observed_ms`` (throughput based) is the CUDA-event time between the end of the first and the
  end of the last batch launched in the counted part of the window, over the batches between:
  the interval at which batches complete, including any wait before a batch's first kernel
  (time-slicing puts its waits there);
- ``exec_ms`` and ``exec_p90_ms`` are the median and 90th percentile of each counted batch's own
  start-to-end event time.

**Profiles.** ``ncu`` (Nsight Compute, on ``PATH``) runs ``python -m interfpred.measure.torch_backend
profile SPEC``, which builds the workload, runs warm-up batches, then one batch eagerly inside the
NVTX range ``interfpred_measure``; ncu profiles only the kernels inside it (``--nvtx-include``),
with the throughput and launch metrics interfpred's kernel-level columns need, on its raw CSV page.
Clocks are left as they are (``--clock-control none``), like every other GPU setting.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from interfpred.constants import MEASURE_IMAGE_SIDE, MEASURE_QUEUE_DEPTH, MEASURE_WARMUP_BATCHES
from interfpred.errors import InterfpredError
from interfpred.measure.backend import HostGroup, MemberResult, summarize_times
from interfpred.measure.hosts import ProcessHosts, serve
from interfpred.measure.spec import Workload, parse_workload, resolve_callable

__all__ = ["NCU_METRICS", "TorchBackend", "build_batch"]

#: What ncu collects per kernel: duration, the three throughputs, and the launch values of the kernel columns.
NCU_METRICS = (
    "gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "launch__grid_size", "launch__block_size", "launch__waves_per_multiprocessor", "launch__registers_per_thread",
    "launch__shared_mem_per_block", "launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps", "launch__sm_count",
    "sm__maximum_warps_per_active_cycle_pct",
)
#: The NVTX range around the profiled batch.
NVTX_RANGE = "interfpred_measure"
#: Input side of the torchvision models that need another than MEASURE_IMAGE_SIDE.
_IMAGE_SIDES = {"inception_v3": 299}


def _torch_dtype(name: str) -> Any:
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]


def build_batch(w: Workload, device: Any) -> Callable[[], Any]:
    """A function of no arguments that runs one batch of ``w`` on ``device`` (inputs allocated here, once)."""
    import torch

    torch.manual_seed(0)
    dtype = _torch_dtype(w.dtype)
    if w.kind == "torchvision":
        import torchvision

        net = torchvision.models.get_model(w.target, weights=None).to(device=device, dtype=dtype).eval()
        side = _IMAGE_SIDES.get(w.target, MEASURE_IMAGE_SIDE)
        x = torch.randn(w.batch_size, 3, side, side, device=device, dtype=dtype)

        def batch() -> Any:
            with torch.no_grad():
                return net(x)
        return batch
    fn = resolve_callable(w.target)(w.batch_size, dtype, device)
    if not callable(fn):
        raise InterfpredError(f"workload {w.label}: {w.target} returned {type(fn).__name__}, not a function that "
                              "runs one batch")
    return fn


class _Instance:
    """One workload instance in a worker: its stream, its batch, its captured graph (or eager, with a note)."""

    def __init__(self, key: str, w: Workload, mechanism: str) -> None:
        import torch

        self.key = key
        self.device = torch.device("cuda", 0)
        self.fn = build_batch(w, self.device)
        self.stream = torch.cuda.Stream(self.device)
        self.graph: bool = False
        self.note: str | None = None
        self._graph: Any = None
        torch.cuda.synchronize(self.device)   # weights and inputs were made on the default stream: ready first
        with torch.cuda.stream(self.stream):
            for _ in range(MEASURE_WARMUP_BATCHES):
                self.fn()
        torch.cuda.synchronize(self.device)
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=self.stream):
                self.fn()
            torch.cuda.synchronize(self.device)
            self._graph, self.graph = g, True
        except Exception as exc:  # any capture failure: the batch runs eagerly, and the campaign says why
            torch.cuda.synchronize(self.device)
            self.note = (f"{key} runs eagerly: its batch could not be captured as a CUDA graph "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
            with torch.cuda.stream(self.stream):
                self.fn()                     # the eager batch must still work
            torch.cuda.synchronize(self.device)

    def step(self) -> None:
        if self._graph is not None:
            self._graph.replay()
        else:
            self.fn()

    def window(self, t_start: float, t_end: float, margin_s: float, context: Mapping[str, Any]) -> MemberResult:
        import torch

        inflight: collections.deque = collections.deque()
        exec_ms: list[float] = []
        ends: list[Any] = []               # end events of the counted batches: first and latest kept

        def retire() -> None:
            a, b, counted = inflight.popleft()
            b.synchronize()
            if counted:
                exec_ms.append(a.elapsed_time(b))
                if len(ends) < 2:
                    ends.append(b)
                else:
                    ends[1] = b

        while time.monotonic() < t_start:
            time.sleep(0.0002)
        with torch.cuda.stream(self.stream):
            while True:
                now = time.monotonic()
                if now >= t_end:
                    break
                a = torch.cuda.Event(enable_timing=True)
                b = torch.cuda.Event(enable_timing=True)
                a.record(self.stream)
                self.step()
                b.record(self.stream)
                inflight.append((a, b, t_start + margin_s <= now <= t_end - margin_s))
                if len(inflight) > MEASURE_QUEUE_DEPTH:
                    retire()
            while inflight:
                retire()
        if len(exec_ms) < 2:
            raise InterfpredError(f"{self.key}: fewer than two batches in the counted part of the window; lengthen "
                                  "--window-s")
        observed = ends[0].elapsed_time(ends[1]) / (len(exec_ms) - 1)
        median, p90 = summarize_times(exec_ms)
        return MemberResult(len(exec_ms) - 1, float(observed), float(median), float(p90))


def _nvidia_smi_list() -> str:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        raise InterfpredError("nvidia-smi is not on PATH: cannot check the MIG instances given")
    try:
        return subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise InterfpredError(f"nvidia-smi -L failed: {exc}") from None


def mig_partitions(listing: str, uuids: Sequence[str]) -> list[str]:
    """The MIG profile of each UUID in ``nvidia-smi -L`` output ``listing``; refuses one that is not listed.

    Examples
    --------
    >>> text = ("GPU 0: NVIDIA H200 (UUID: GPU-1)\\n  MIG 3g.71gb     Device  0: (UUID: MIG-aa)\\n"
    ...         "  MIG 2g.35gb     Device  1: (UUID: MIG-bb)\\n")
    >>> mig_partitions(text, ["MIG-bb", "MIG-aa"])
    ['2g.35gb', '3g.71gb']
    """
    found = dict((u, p) for p, u in re.findall(r"MIG\s+(\S+)\s+Device\s+\d+:\s*\(UUID:\s*(MIG-[^)\s]+)\)", listing))
    out = []
    for u in uuids:
        if u not in found:
            raise InterfpredError(f"MIG instance {u} is not listed by nvidia-smi -L ({', '.join(found) or 'none is'}); "
                                  "make the instances first (interfpred never changes the GPU's settings)")
        out.append(found[u])
    return out


_PROBE = """
import json, torch, torchvision
ok = torch.cuda.is_available()
print(json.dumps({"available": ok, "name": torch.cuda.get_device_name(0) if ok else "",
                  "models": sorted(torchvision.models.list_models(module=torchvision.models))}))
"""


class TorchBackend:
    """PyTorch on the first visible CUDA GPU (see the module docstring).

    The campaign's own process never touches CUDA (it would be one more client of the GPU): the
    device is probed in a short-lived process, and only the workers hold CUDA contexts.
    """

    name = "cuda"

    def __init__(self) -> None:
        self._probed: dict[str, Any] | None = None

    def _probe(self) -> dict[str, Any]:
        if self._probed is None:
            try:
                out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300)
            except (OSError, subprocess.SubprocessError) as exc:
                raise InterfpredError(f"cannot start PyTorch to probe the GPU: {exc}") from None
            try:
                self._probed = dict(json.loads(out.stdout.strip().splitlines()[-1]))
            except (ValueError, IndexError):
                last = (out.stderr.strip().splitlines() or ["no output"])[-1]
                raise InterfpredError(f"cannot probe the GPU through PyTorch: {last}") from None
        return self._probed

    def gpu_name(self) -> str:
        """The device's name, spaces as underscores (``NVIDIA_H200``)."""
        return str(self._probe()["name"]).strip().replace(" ", "_")

    def check(self, workloads: Sequence[Workload], mechanisms: Sequence[str], mig_instances: Sequence[str],
              profiles: bool) -> None:
        """A CUDA device visible to PyTorch, torchvision names that exist, callables that load, ncu for profiles."""
        if profiles and shutil.which("ncu") is None:
            raise InterfpredError("Nsight Compute (ncu) is not on PATH: install it (or add its folder to PATH), or "
                                  "pass --no-profiles")
        probe = self._probe()
        if not probe["available"]:
            raise InterfpredError("no CUDA device is visible to PyTorch: run interfpred measure on a GPU machine "
                                  "(or try it with --device fake)")
        names = list(probe["models"])
        for w in workloads:
            if w.kind == "callable":
                resolve_callable(w.target)
            elif w.target not in names:
                raise InterfpredError(f"workload {w.label}: {w.target!r} is not a torchvision classification "
                                      f"model (e.g. {', '.join(names[:4])}); give module:function for others")

    def partitions(self, mig_instances: Sequence[str]) -> list[str]:
        """The MIG profile of each instance, from ``nvidia-smi -L``."""
        return mig_partitions(_nvidia_smi_list(), mig_instances)

    def open_hosts(self, mechanism: str, groups: Sequence[HostGroup], log_dir: str) -> ProcessHosts:
        """Worker processes on the GPU."""
        return ProcessHosts([sys.executable, "-m", "interfpred.measure.torch_backend", "host"], groups, mechanism,
                            log_dir)

    def profile_command(self, workload: Workload, report: str) -> list[str]:
        """ncu over one batch of ``workload`` in the NVTX range ``interfpred_measure``, raw CSV page."""
        ncu = shutil.which("ncu")
        if ncu is None:
            raise InterfpredError("Nsight Compute (ncu) is not on PATH: install it or pass --no-profiles")
        return [ncu, "--clock-control", "none", "--nvtx", "--nvtx-include", f"regex:{NVTX_RANGE}/",
                "--metrics", ",".join(NCU_METRICS), "--csv", "--page", "raw",
                sys.executable, "-m", "interfpred.measure.torch_backend", "profile", workload.label]


def _profile_one(label: str) -> None:
    """Warm up, then one eager batch inside the NVTX range (what ncu profiles)."""
    import torch

    w = parse_workload(label)
    device = torch.device("cuda", 0)
    fn = build_batch(w, device)
    for _ in range(MEASURE_WARMUP_BATCHES):
        fn()
    torch.cuda.synchronize(device)
    torch.cuda.nvtx.range_push(NVTX_RANGE)
    fn()
    torch.cuda.synchronize(device)
    torch.cuda.nvtx.range_pop()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m interfpred.measure.torch_backend host`` (a worker) or ``... profile SPEC`` (under ncu)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["host"]:
        serve(_Instance)
        return 0
    if args[:1] == ["profile"] and len(args) == 2:
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        _profile_one(args[1])
        return 0
    print("usage: python -m interfpred.measure.torch_backend host | profile SPEC", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
