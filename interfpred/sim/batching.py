"""Requests through batching instances: each model's Poisson arrivals, batches filled, queued and executed.

:func:`simulate_batching` checks a deployment end to end, request by request. Each model's
requests arrive as a Poisson process at its rate and are sent to one of its instances at random,
each instance with probability its rate over the model's (so each instance sees a Poisson process
at its own rate). An instance dispatches a batch when it holds ``batch_size`` requests (no
timeout); full batches wait first come first served for the instance's ``processes`` processes,
each running one batch at a time, and a batch runs ``latency_ms * exp(exec_sigma * Z)`` (``Z``
standard normal, drawn per batch). A request's latency is its batch's end minus its own arrival;
the requests left in a batch that never fills (at most ``batch_size - 1`` per instance, at the
end of the window) are not counted. The instances start empty. Seeded: the same inputs give the
same figures.

Examples
--------
>>> inst = [BatchingInstance("a", 8, 1, 10.0, 400.0), BatchingInstance("b", 1, 2, 5.0, 100.0)]
>>> r = simulate_batching(inst, {"a": 60.0, "b": 20.0}, exec_sigma=0.1, requests=5003, seed=0)
>>> {m: round(a, 4) for m, a in r.attainment.items()}
{'a': 1.0, 'b': 1.0}
>>> r.requests
{'a': 5000, 'b': 5003}
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from interfpred.errors import InterfpredError

__all__ = ["BatchingInstance", "BatchingResult", "simulate_batching"]


@dataclass(frozen=True)
class BatchingInstance:
    """One instance: its model, batch size, processes, median batch latency (ms) and the rate sent to it (requests/s)."""

    model: str
    batch_size: int
    processes: int
    latency_ms: float
    rate_rps: float


@dataclass(frozen=True)
class BatchingResult:
    """Per model: the share of counted requests within the SLO, their p99 latency (ms) and how many were counted."""

    attainment: Mapping[str, float]
    p99_ms: Mapping[str, float]
    requests: Mapping[str, int]


def _batch_ends(ready: np.ndarray, work: np.ndarray, processes: int) -> np.ndarray:
    """End of each batch: first come first served on ``processes`` servers, batch ``k`` ready at ``ready[k]``."""
    if processes == 1:      # Lindley's recursion in closed form: end_k = C_k + max_{j<=k}(ready_j - C_{j-1})
        done = np.cumsum(work)
        return done + np.maximum.accumulate(ready - (done - work))
    free = [0.0] * processes
    end = np.empty(len(ready))
    for k in range(len(ready)):
        start = max(heapq.heappop(free), float(ready[k]))
        end[k] = start + float(work[k])
        heapq.heappush(free, end[k])
    return end


def simulate_batching(instances: Sequence[BatchingInstance], slo_ms: Mapping[str, float], *, exec_sigma: float,
                      requests: int, seed: int) -> BatchingResult:
    """Simulate ``requests`` requests of every model through its instances; figures per model (see the module).

    A model with no instance, or whose instances are sent no rate, is refused: it would serve nothing.
    """
    if requests < 1:
        raise InterfpredError(f"requests {requests!r} must be a positive integer")
    rng = np.random.default_rng(seed)
    by_model: dict[str, list[BatchingInstance]] = {}
    for inst in instances:
        by_model.setdefault(inst.model, []).append(inst)
    attain, p99, counted = {}, {}, {}
    for model, slo in slo_ms.items():
        mine = by_model.get(model, [])
        rates = np.array([i.rate_rps for i in mine], dtype=np.float64)
        if not mine or not (rates.sum() > 0 and math.isfinite(rates.sum())):
            raise InterfpredError(f"model {model}: no instance is sent its requests")
        total = float(rates.sum())
        arrive = np.cumsum(rng.exponential(1000.0 / total, size=requests))
        where = rng.choice(len(mine), size=requests, p=rates / total)
        latencies = []
        for k, inst in enumerate(mine):
            mine_t = arrive[where == k]
            full = len(mine_t) // inst.batch_size * inst.batch_size
            mine_t = mine_t[:full]
            if not full:
                continue
            ready = mine_t[inst.batch_size - 1::inst.batch_size]
            work = inst.latency_ms * np.exp(exec_sigma * rng.standard_normal(len(ready)))
            ends = _batch_ends(ready, work, inst.processes)
            latencies.append(np.repeat(ends, inst.batch_size) - mine_t)
        lat = np.concatenate(latencies) if latencies else np.empty(0)
        counted[model] = int(lat.size)
        attain[model] = float(np.mean(lat <= slo)) if lat.size else 0.0
        p99[model] = float(np.percentile(lat, 99)) if lat.size else math.inf
    return BatchingResult(attain, p99, counted)
