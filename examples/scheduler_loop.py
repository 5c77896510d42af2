"""The smallest complete scheduler that embeds interfpred's ColocationTracker. Copy this file.

One GPU. Batches arrive with deadlines and wait in a FIFO queue. Whenever something happens
(an arrival or a completion) the scheduler launches the head of the queue *now* if the tracker
projects that it and every batch already running finish by their deadlines; otherwise the head
waits for the next completion. Every completion is reported back, and the tracker learns from
it (online RLS), so its projections improve as traffic flows.

There is no GPU here: ``SimulatedGpu`` runs batches under the library's ground-truth
contention model (synthetic zoo profiles). In a real system, replace it with your launch call
and your completion callback; the four tracker calls stay the same:

    tracker.start(id, model, batch_size, t)        # you launched a batch
    tracker.finish(id, t)                          # it completed (learns from it)
    tracker.what_if([(id, model, batch_size)], t)  # projected end times if you launched it now
    tracker.predict_finish(t)                      # projected end times of what runs

Run: ``python examples/scheduler_loop.py`` (about a second).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from interfpred import RLS, ColocationTracker, InterfpredError
from interfpred.sim.contention import get_gpu_spec, rates
from interfpred.sim.zoo import zoo_profiles

MAX_RUNNING = 4        # batches the GPU runs at once
SLO_FACTOR = 4.0       # deadline = arrival + SLO_FACTOR x solo latency of the batch


class SimulatedGpu:
    """Stand-in for a GPU: fluid execution at the ground-truth rates of the running set."""

    def __init__(self, profiles, gpu="l4", seed=0):
        self.profiles, self.spec = profiles, get_gpu_spec(gpu)
        self.rng = np.random.default_rng(seed)
        self.running = {}          # id -> [demand (3,), remaining solo work in ms]
        self.t = 0.0

    def launch(self, bid, model, batch_size, t):
        p = self.profiles.lookup(model, batch_size)
        work = p.solo_ms * math.exp(self.spec.sigma * self.rng.standard_normal())
        self.running[bid] = [np.array([p.sm, p.l2, p.dram]), work]

    def _rates(self):
        ids = list(self.running)
        return ids, rates(np.array([self.running[i][0] for i in ids]), self.spec) if ids else []

    def next_completion(self):
        ids, r = self._rates()
        return min((self.t + self.running[i][1] / x for i, x in zip(ids, r)), default=math.inf)

    def advance(self, t):
        """Run until ``t``; return the (id, end time) of batches that completed on the way."""
        done = []
        while self.running and self.next_completion() <= t:
            t_end = self.next_completion()
            ids, r = self._rates()
            for i, x in zip(ids, r):
                self.running[i][1] -= x * (t_end - self.t)
            self.t = t_end
            for i in ids:
                if self.running[i][1] <= 1e-9:
                    del self.running[i]
                    done.append((i, t_end))
        ids, r = self._rates()
        for i, x in zip(ids, r):
            self.running[i][1] -= x * (t - self.t)
        self.t = t
        return done


def main(batches: int = 300, seed: int = 0) -> dict:
    profiles = zoo_profiles("l4")
    tracker = ColocationTracker(profiles, RLS())       # default: time-weighted rich map, target rate
    gpu = SimulatedGpu(profiles, seed=seed)
    rng = np.random.default_rng(seed)

    # The workload: batches of random models and sizes, Poisson arrivals.
    arrivals = deque()
    t = 0.0
    for bid in range(batches):
        t += rng.exponential(6.0)
        model = str(rng.choice(profiles.models))
        size = int(rng.choice([1, 2, 4, 8]))
        arrivals.append((t, bid, model, size, t + SLO_FACTOR * profiles.lookup(model, size).solo_ms))

    queue, deadline, errors, met, missed, dropped = deque(), {}, [], 0, 0, 0
    t = 0.0
    while arrivals or queue or gpu.running:
        t = min(arrivals[0][0] if arrivals else math.inf, gpu.next_completion())
        for bid, t_end in gpu.advance(t):              # completions first: they free room
            result = tracker.finish(bid, t_end)        # learn from what really happened
            errors.append(abs(result.relative_error))
            met, missed = (met + 1, missed) if t_end <= deadline.pop(bid) else (met, missed + 1)
        while arrivals and arrivals[0][0] <= t:
            queue.append(arrivals.popleft()[1:])
        while queue and len(tracker) < MAX_RUNNING:
            bid, model, size, dl = queue[0]
            if dl < t + profiles.lookup(model, size).solo_ms:    # cannot make it even alone
                queue.popleft()
                dropped += 1
                continue
            try:
                ends = tracker.what_if([(bid, model, size)], t)
            except InterfpredError as exc:             # e.g. a model without a profile
                print(f"refusing batch {bid}: {exc}")
                queue.popleft()
                continue
            fits = all(ends[i] <= (dl if i == bid else deadline[i]) for i in ends)
            if not fits and len(tracker) > 0:
                break                                  # wait for a completion
            queue.popleft()
            tracker.start(bid, model, size, t)
            gpu.launch(bid, model, size, t)
            deadline[bid] = dl

    first, last = float(np.mean(errors[:50])), float(np.mean(errors[-50:]))
    summary = {"batches": batches, "met": met, "missed": missed, "dropped": dropped,
               "error_first_50": first, "error_last_50": last}
    print(f"{met} of {batches} batches met their deadline ({missed} late, {dropped} dropped)")
    print(f"tracker latency error: {first:.1%} over the first 50 batches, {last:.1%} over the last 50")
    return summary


if __name__ == "__main__":
    main()
