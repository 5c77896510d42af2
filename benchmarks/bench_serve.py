"""Latency of ``interfpred serve`` over real HTTP on loopback, beside the same questions asked in-process.

A fleet of 64 nodes x 8 GPUs (512 devices) with 4 batches running on each (2,048 in all), a model
fitted on a small simulated trace (RLS on the default features: the compiled projection). The
server runs as ``interfpred serve`` in its own process (uvicorn, one worker); the client writes
HTTP/1.1 on asyncio streams over several keep-alive connections (httpx's pool costs more CPU per
request than the server does, on a machine the two share), sending at a fixed rate (open loop: a request is
due at its time whether or not earlier ones have been answered, and its latency counts from then) for
a few seconds per phase.

Phases: ``what_if`` (one device, one candidate) at 500 requests/s; kube-scheduler's cycle, a
``filter`` over the 64 nodes (nodeCacheCapable: node names) followed by a ``prioritize`` for the same
pod, at 500 requests/s in all (250 pods/s); the same with whole Node objects (nodeCacheCapable
false). Each prints p50 / p99 / max latency (send to full response, as the client sees it) and the
throughput achieved, and the in-process time of the same call (FleetService and the extender's
judgement on the same fleet, no HTTP).

Goals: filter + prioritize p99 <= 5 ms at 500 requests/s; what_if p99 <= 1 ms.

Run: python benchmarks/bench_serve.py [--seconds S] [--rate R] [--connections C] [--predictor entity_rls]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

import httpx
from kill_serve import MODELS, _start_server, make_inputs

NODES, PER_NODE, RUNNING = 64, 8, 4


def _pod(uid: str) -> dict:
    return {"metadata": {"name": f"infer-{uid}", "namespace": "serving", "uid": uid,
                         "annotations": {"interfpred.io/model": "vgg19", "interfpred.io/batch-size": "8",
                                         "interfpred.io/slo-ms": "400"}},
            "spec": {"containers": [{"name": "s", "image": "triton", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                     "schedulerName": "default-scheduler"},
            "status": {"phase": "Pending"}}


def _node(name: str) -> dict:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"},
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}


def _stats(lat: list[float]) -> str:
    a = np.array(lat) * 1e3
    return f"p50 {np.percentile(a, 50):6.2f} ms  p99 {np.percentile(a, 99):6.2f} ms  max {a.max():6.2f} ms"


class _Connection:
    """One keep-alive HTTP/1.1 connection over asyncio streams: a request, then its whole response."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def post(self, path: str, body: bytes) -> int:
        self.writer.write(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n%s" % (path.encode(), self.host.encode(), len(body), body))
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        await self.reader.readexactly(length)
        return status

    def close(self) -> None:
        self.writer.close()


async def _phase(url: str, rate: float, seconds: float, connections: int,
                 make) -> tuple[dict[str, list[float]], float, int, list[float]]:
    """Send ``make(i)`` -> [(path, body), ...] (one after the other, on one connection) at ``rate`` sequences/s.

    Open loop: sequence ``i`` is due at ``i / rate``; a free connection takes the next due one. A
    request's latency counts from when the client issued it (or from when the previous request of its
    sequence was answered), so time spent waiting for a connection counts (no coordinated omission).
    The client issues a request when its timer wakes it, at the due time or after: asyncio's timers
    wake up to 1 ms late (epoll's millisecond timeout), a delay of the client's clock that no server
    causes, so it is not counted; how late the client issued is reported beside (``issued late``).
    """
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conns = [_Connection(host, int(port)) for _ in range(connections)]
    for c in conns:
        await c.open()
    lat: dict[str, list[float]] = {}
    late: list[float] = []
    errors = 0
    queue: asyncio.Queue = asyncio.Queue()
    n = int(rate * seconds)

    async def worker(c: _Connection) -> None:
        nonlocal errors
        while True:
            item = await queue.get()
            if item is None:
                return
            due, seq = item
            t0 = due
            for path, body in seq:
                status = await c.post(path, body)
                t1 = time.perf_counter()
                lat.setdefault(path, []).append(t1 - t0)
                t0 = t1
                errors += status != 200

    workers = [asyncio.create_task(worker(c)) for c in conns]
    start = time.perf_counter()
    for i in range(n):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        issued = time.perf_counter()
        late.append(issued - due)
        queue.put_nowait((issued, [(p, b.encode()) for p, b in make(i)]))
    for _ in conns:
        queue.put_nowait(None)
    await asyncio.gather(*workers)
    elapsed = time.perf_counter() - start
    for c in conns:
        c.close()
    return lat, sum(map(len, lat.values())) / elapsed, errors, late


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--rate", type=float, default=500.0, help="requests per second of each phase")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--predictor", choices=["rls", "entity_rls"], default="rls",
                    help="the served model's predictor (entity_rls: per-model terms, what fit chooses by default "
                         "on traces)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model_file, fleet_file = make_inputs(folder, args.predictor)
        spec = json.loads(fleet_file.read_text())
        spec["max_running"] = RUNNING + 1
        spec["devices"] = [{"node": f"node-{i}", "device": f"gpu{j}", "gpu": "l4"}
                           for i in range(NODES) for j in range(PER_NODE)]
        fleet_file.write_text(json.dumps(spec))
        proc, url = _start_server(model_file, fleet_file, folder / "state", 10**9)
        try:
            rng = np.random.default_rng(0)
            starts = [("/v1/start", json.dumps({"device": d["node"] + "/" + d["device"], "id": f"r{k}-{j}",
                                                 "model": MODELS[int(rng.integers(4))],
                                                 "batch_size": int(rng.integers(1, 17)), "t": 1.0 + j,
                                                 "deadline": 1e7}))
                      for k, d in enumerate(spec["devices"]) for j in range(RUNNING)]
            t0 = time.perf_counter()
            with httpx.Client(base_url=url, trust_env=False) as c:
                start_lat = []
                for path, body in starts:
                    s0 = time.perf_counter()
                    assert c.post(path, content=body).status_code == 200
                    start_lat.append(time.perf_counter() - s0)
            print(f"fleet: {NODES} nodes x {PER_NODE} GPUs, {len(starts)} batches started over HTTP in "
                  f"{time.perf_counter() - t0:.1f} s (start, journaled and fsynced: {_stats(start_lat)})")
            names = [f"node-{i}" for i in range(NODES)]
            what_if = json.dumps({"device": "node-7/gpu3", "candidates": [{"id": "c", "model": "vgg19",
                                                                            "batch_size": 8}]})

            def wi(i: int):
                return [("/v1/what_if", what_if)]

            def cycle(cache_capable: bool):
                def make(i: int):
                    pod = _pod(f"p{i}")
                    if cache_capable:
                        args = {"Pod": pod, "Nodes": None, "NodeNames": names}
                    else:
                        args = {"Pod": pod, "Nodes": {"metadata": {}, "items": [_node(n) for n in names]},
                                "NodeNames": None}
                    body = json.dumps(args)
                    return [("/extender/filter", body), ("/extender/prioritize", body)]
                return make

            rows = []
            for label, make, rate in [("what_if", wi, args.rate),
                                      ("filter + prioritize, node names", cycle(True), args.rate / 2),
                                      ("filter + prioritize, Node objects", cycle(False), args.rate / 2)]:
                asyncio.run(_phase(url, rate, 1.0, args.connections, make))        # warm-up
                lat, thr, errors, late = asyncio.run(_phase(url, rate, args.seconds, args.connections, make))
                rows.append((label, lat, thr, errors, late))
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        # The same questions in-process, on the same fleet (replayed from the journal), no HTTP.
        from interfpred.serving.service.core import open_service
        from interfpred.serving.service.extender import judge_nodes, parse_extender_args

        svc = open_service(model_file, fleet_file, folder / "state")
        nodes = svc.spec.nodes()
        t = svc.now()
        inproc = {}
        for label, fn in [("what_if", lambda k: svc.what_if("node-7/gpu3", [("c", "vgg19", 8)], t=t + k)),
                          ("filter + prioritize, node names",
                           lambda k: judge_nodes(parse_extender_args({"Pod": _pod(f"q{k}"), "Nodes": None,
                                                                      "NodeNames": names}),
                                                 nodes, svc.assess_all, t + k))]:
            for k in range(20):
                fn(k * 1e-3)
            ts = []
            for k in range(200):
                s0 = time.perf_counter()
                fn(1.0 + k * 1e-3)
                ts.append(time.perf_counter() - s0)
            inproc[label] = _stats(ts)
        svc.close()
    print(f"loopback HTTP, {args.connections} connections, open loop, {args.seconds:g} s per phase "
          f"({os.cpu_count()} CPUs shared by client and server):")
    for label, lat, thr, errors, late in rows:
        every = [x for v in lat.values() for x in v]
        print(f"  {label:34s} {_stats(every)}  {thr:6.0f} req/s  errors {errors}")
        print(f"    {'(client issued late, not counted)':32s} {_stats(late)}")
        if len(lat) > 1:
            for path, v in lat.items():
                print(f"    {path:32s} {_stats(v)}")
        if label in inproc:
            print(f"  {'  in-process (no HTTP)':34s} {inproc[label]}"
                  + ("  (one assessment; prioritize reuses it)" if "filter" in label else ""))
    fp = [np.percentile(np.array([x for v in lat.values() for x in v]) * 1e3, 99) for _, lat, _, _, _ in rows]
    print(f"goals: what_if p99 {fp[0]:.2f} ms (<= 1 ms: {'met' if fp[0] <= 1 else 'NOT met'}); filter + prioritize "
          f"p99 {fp[1]:.2f} ms at {args.rate:g} req/s (<= 5 ms: {'met' if fp[1] <= 5 else 'NOT met'})")


if __name__ == "__main__":
    main()
