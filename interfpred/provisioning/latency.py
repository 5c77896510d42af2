"""When a configuration meets a latency SLO: the whole latency of a request, or a share of the SLO for the batch.

A *configuration* serves one model in one MIG instance: batches of ``batch`` requests, run by
``processes`` MPS processes, each batch taking ``latency_ms`` (the measured table's figure). A
request's latency is the time from its arrival to the end of its batch, and the planner admits a
configuration at a request rate ``rate`` (requests/s sent to this instance) by one of two rules.

**End to end** (the default, :class:`LatencyRule` with ``max_exec_fraction=None``): the request
latency at ``percentile`` (default p99) is at most the SLO, under this queueing model:

* requests arrive at the instance as a Poisson process of rate ``rate``;
* a batch is dispatched when it holds exactly ``batch`` requests (no timeout, no partial batch), so
  the first request of a batch waits for ``batch - 1`` more arrivals: a Gamma(``batch - 1``,
  ``rate``) time, the longest *fill* any request of the batch sees;
* full batches queue first come first served for the ``processes`` processes, each running one
  batch at a time; a batch's execution time is ``latency_ms * exp(exec_sigma * Z)`` with ``Z``
  standard normal (the table's latency is the median);
* the queueing wait is that of a GI/G/c queue by the Allen-Cunneen approximation: the probability
  of waiting is Erlang C's, and a batch that waits waits an exponential time of mean
  ``(ca2 + cs2) / 2 / (processes / E[S] - rate / batch)``, with ``ca2 = 1 / batch`` (batches
  leave the fill one every ``batch`` Poisson arrivals: Erlang intervals) and ``cs2 =
  exp(exec_sigma**2) - 1``.

The request latency at the percentile is estimated as the sum of the three terms' percentiles
(the first request's fill, the wait, the execution): an upper estimate for these independent,
right-skewed delays, checked against Monte-Carlo in the tests and, for every plan, by simulating
the deployment (:func:`interfpred.sim.batching.simulate_batching`). A configuration has to be fed:
at a low rate its batches fill too slowly, at a high one its queue grows, so it is admitted on an
interval of rates ``[lo, hi]`` (:func:`admitted_rates`).

**Execution share** (``max_exec_fraction=F``): a configuration is admitted when its batch latency
is at most ``F`` times the SLO, at any rate up to its throughput (``processes * batch * 1000 /
latency_ms``); nothing is budgeted for the fill or the queue. ``F = 1`` is the rule of a planner
that only asks the batch to finish within the SLO; ParvaGPU admits batch latencies below 0.45 x the
SLO, leaving the rest for batch formation and queueing (``F = 0.45``).

Examples
--------
>>> rule = LatencyRule()
>>> round(float(request_latency_ms(10.0, 8, 1, 400.0, rule)), 2)   # fill + wait + execution at p99 (ms)
52.66
>>> lo, hi = admitted_rates([10.0], [8], [1], [60.0], rule)
>>> round(float(lo[0]), 1), round(float(hi[0]), 1)                 # requests/s this instance may be sent
(325.4, 718.5)
>>> admitted_rates([10.0], [8], [1], [60.0], LatencyRule(max_exec_fraction=0.45))
(array([0.]), array([800.]))
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaincinv, gammaln, ndtri

from interfpred.constants import PLAN_EXEC_SIGMA, PLAN_PERCENTILE
from interfpred.errors import InterfpredError

__all__ = ["LatencyRule", "admitted_rates", "request_latency_ms"]

#: Points of the rate grid the admitted interval is first looked for on, and bisection steps at each end.
_GRID = 256
_BISECT = 40


@dataclass(frozen=True)
class LatencyRule:
    """How a configuration is admitted: the end-to-end rule (``max_exec_fraction`` None) or an execution share.

    ``percentile`` in (0, 100) and ``exec_sigma`` >= 0 (the lognormal spread of a batch's execution
    time) define the end-to-end rule; ``max_exec_fraction`` in (0, 1] replaces it by "batch latency
    at most that fraction of the SLO".

    Examples
    --------
    >>> LatencyRule().describe()
    'request latency at p99 (batch fill + queueing + execution, lognormal sigma 0.1) within the SLO'
    >>> LatencyRule(max_exec_fraction=0.45).describe()
    'batch execution within 0.45 x the SLO (no fill or queueing budgeted)'
    >>> LatencyRule(percentile=100.0)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: percentile 100.0 must be a number in (0, 100)
    """

    percentile: float = PLAN_PERCENTILE
    exec_sigma: float = PLAN_EXEC_SIGMA
    max_exec_fraction: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.percentile) and 0.0 < self.percentile < 100.0):
            raise InterfpredError(f"percentile {self.percentile!r} must be a number in (0, 100)")
        if not (math.isfinite(self.exec_sigma) and 0.0 <= self.exec_sigma <= 3.0):
            raise InterfpredError(f"exec_sigma {self.exec_sigma!r} must be a number in [0, 3]")
        f = self.max_exec_fraction
        if f is not None and not (math.isfinite(f) and 0.0 < f <= 1.0):
            raise InterfpredError(f"max_exec_fraction {f!r} must be a number in (0, 1]")

    @property
    def end_to_end(self) -> bool:
        """True for the end-to-end rule."""
        return self.max_exec_fraction is None

    def describe(self) -> str:
        """The rule in one line, as plan prints it."""
        if self.max_exec_fraction is not None:
            return f"batch execution within {self.max_exec_fraction:g} x the SLO (no fill or queueing budgeted)"
        return (f"request latency at p{self.percentile:g} (batch fill + queueing + execution, lognormal sigma "
                f"{self.exec_sigma:g}) within the SLO")


def _erlang_c(servers: np.ndarray, load: np.ndarray) -> np.ndarray:
    """Erlang C: the probability an arrival waits, ``servers`` servers at offered load ``load`` (< servers).

    >>> round(float(_erlang_c(np.array(1.0), np.array(0.5))), 6), round(float(_erlang_c(np.array(2.0), np.array(1.0))), 6)
    (0.5, 0.333333)
    """
    log_a = np.log(np.maximum(load, 1e-300))
    head = np.zeros_like(load)
    for k in range(int(np.max(servers, initial=1))):
        head = head + np.where(k < servers, np.exp(k * log_a - gammaln(k + 1.0)), 0.0)
    last = np.exp(servers * log_a - gammaln(servers + 1.0)) / (1.0 - load / servers)
    return np.asarray(last / (head + last))


def request_latency_ms(latency_ms: np.ndarray | float, batch: np.ndarray | int, processes: np.ndarray | int,
                       rate_rps: np.ndarray | float, rule: LatencyRule) -> np.ndarray:
    """Request latency (ms) at ``rule.percentile`` of configurations fed ``rate_rps``, by the end-to-end model.

    Broadcasts over its array arguments; infinite where the processes cannot keep up (utilisation
    of at least 1) or the rate is not positive.
    """
    lat = np.asarray(latency_ms, dtype=np.float64)
    b = np.asarray(batch, dtype=np.float64)
    c = np.asarray(processes, dtype=np.float64)
    lam = np.asarray(rate_rps, dtype=np.float64) / 1000.0           # requests per ms
    lat, b, c, lam = np.broadcast_arrays(lat, b, c, lam)
    q = rule.percentile / 100.0
    sigma = rule.exec_sigma
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        fill = np.where(b > 1, gammaincinv(np.maximum(b - 1.0, 1.0), q) / lam, 0.0)
        mean_s = lat * math.exp(sigma * sigma / 2.0)
        lam_b = lam / b
        load = lam_b * mean_s
        ok = (lam > 0) & (load < c)
        wait_p = np.where(ok, _erlang_c(c, np.where(ok, load, 0.0)), 1.0)
        cs2 = math.expm1(sigma * sigma)
        mean_if_wait = (1.0 / b + cs2) / 2.0 / (c / mean_s - lam_b)
        wait = np.where(wait_p > 1.0 - q, mean_if_wait * np.log(wait_p / (1.0 - q)), 0.0)
        execution = lat * math.exp(sigma * float(ndtri(q)))
        out = fill + wait + execution
    return np.where(ok, out, np.inf)


def admitted_rates(latency_ms: np.ndarray | list[float], batch: np.ndarray | list[int],
                   processes: np.ndarray | list[int], slo_ms: np.ndarray | list[float],
                   rule: LatencyRule) -> tuple[np.ndarray, np.ndarray]:
    """The interval ``[lo, hi]`` of request rates (requests/s) at which each configuration meets its SLO.

    NaN on both ends where no rate is admitted. Under an execution-share rule the interval is
    ``[0, throughput]`` when the batch latency is within the share, else NaN. Under the end-to-end
    rule the rates are found on a grid of utilisations and refined by bisection at both ends (the
    latency is the sum of a fill time falling and a queueing wait rising with the rate, so the
    admitted rates form one interval).
    """
    lat = np.asarray(latency_ms, dtype=np.float64)
    b = np.asarray(batch, dtype=np.float64)
    c = np.asarray(processes, dtype=np.float64)
    slo = np.asarray(slo_ms, dtype=np.float64)
    cap = c * b * 1000.0 / lat                                   # throughput: utilisation 1
    if rule.max_exec_fraction is not None:
        fits = lat <= rule.max_exec_fraction * slo
        return np.where(fits, 0.0, np.nan), np.where(fits, cap, np.nan)
    cap_e2e = cap / math.exp(rule.exec_sigma ** 2 / 2.0)         # utilisation 1 at the mean execution time
    util = 1.0 - np.geomspace(1.0, 1e-6, _GRID)[::-1]            # ... 0.999999, dense near both ends
    util = np.unique(np.r_[np.geomspace(1e-6, 0.5, _GRID), util[util > 0.5]])
    rates = cap_e2e[:, None] * util[None, :]
    good = request_latency_ms(lat[:, None], b[:, None], c[:, None], rates, rule) <= slo[:, None]
    any_good = good.any(axis=1)
    first = np.argmax(good, axis=1)
    last = good.shape[1] - 1 - np.argmax(good[:, ::-1], axis=1)
    lo = np.full(len(lat), np.nan)
    hi = np.full(len(lat), np.nan)
    rows = np.flatnonzero(any_good)
    if rows.size:
        ok_lo = rates[rows, first[rows]]
        bad_lo = np.where(first[rows] > 0, rates[rows, np.maximum(first[rows] - 1, 0)], 0.0)
        ok_hi = rates[rows, last[rows]]
        bad_hi = np.where(last[rows] < len(util) - 1, rates[rows, np.minimum(last[rows] + 1, len(util) - 1)],
                          cap_e2e[rows])
        lo[rows] = _bisect(lat[rows], b[rows], c[rows], slo[rows], bad_lo, ok_lo, rule)
        hi[rows] = _bisect(lat[rows], b[rows], c[rows], slo[rows], bad_hi, ok_hi, rule)
        lo[rows] = np.where(b[rows] <= 1, 0.0, lo[rows])         # one request a batch: no fill, any rate feeds it
    return lo, hi


def _bisect(lat: np.ndarray, b: np.ndarray, c: np.ndarray, slo: np.ndarray, bad: np.ndarray, ok: np.ndarray,
            rule: LatencyRule) -> np.ndarray:
    """The admitted end between a refused rate ``bad`` and an admitted rate ``ok`` (kept admitted)."""
    bad, ok = bad.copy(), ok.copy()
    for _ in range(_BISECT):
        mid = (bad + ok) / 2.0
        fine = request_latency_ms(lat, b, c, mid, rule) <= slo
        ok = np.where(fine, mid, ok)
        bad = np.where(fine, bad, mid)
    return ok
