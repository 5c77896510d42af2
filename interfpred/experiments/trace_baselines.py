"""Trivial predictors every accuracy number of the experiments stands beside.

Three baselines of slowdown, fitted on training rows of a trace and then frozen:

* ``no interference``: slowdown 1 (latency = solo latency);
* ``global mean``: the mean slowdown of the training rows;
* ``per-pair mean``: the mean slowdown of the training rows with the same key
  (model, batch size, sorted models running beside it at launch), falling back to the mean of
  the same (model, batch size), then of the same model, then the global mean when a key was
  never seen (so on models new at test time it is the global mean).

Examples
--------
>>> from interfpred import Trace
>>> t = Trace(id=[0, 1, 2], gpu=["g"] * 3, model=["a", "b", "a"], batch_size=[1, 1, 1],
...           start_ms=[0.0, 0.0, 10.0], end_ms=[2.0, 3.0, 11.0], solo_ms=[1.0, 1.0, 1.0])
>>> launch_keys(t)
[('a', 1, ('b',)), ('b', 1, ('a',)), ('a', 1, ())]
>>> p = baseline_slowdowns(t, slice(0, 2), t, slice(2, 3), t.latency_ms / t.solo_ms)
>>> {k: [float(x) for x in v] for k, v in p.items()}
{'no interference': [1.0], 'global mean': [2.5], 'per-pair mean': [2.0]}
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from interfpred.timeline import build_timeline
from interfpred.trace import Trace

__all__ = ["BASELINES", "launch_keys", "baseline_slowdowns"]

#: Baseline names, in table order.
BASELINES = ("no interference", "global mean", "per-pair mean")


def launch_keys(trace: Trace) -> list[tuple[str, int, tuple[str, ...]]]:
    """(model, batch size, sorted co-runner models at launch) of every trace row."""
    tl = build_timeline(trace)
    model = trace.model.astype(str)
    out = []
    for i in range(len(trace)):
        segs = tl.exec_segments[tl.exec_ptr[i]:tl.exec_ptr[i + 1]]
        others: tuple[str, ...] = ()
        if segs.size:
            s = int(segs[0])
            mem = tl.seg_members[tl.seg_ptr[s]:tl.seg_ptr[s + 1]]
            others = tuple(sorted(model[mem[mem != i]].tolist()))
        out.append((str(model[i]), int(trace.batch_size[i]), others))
    return out


def baseline_slowdowns(train: Trace, train_rows: slice, test: Trace, test_rows: slice,
                       train_slowdown: np.ndarray) -> dict[str, np.ndarray]:
    """Predicted slowdowns of ``test[test_rows]`` by each baseline fitted on ``train[train_rows]``.

    ``train_slowdown`` is the observed slowdown of every row of ``train`` (only ``train_rows`` are read).
    """
    ktr = launch_keys(train)[train_rows]
    kte = launch_keys(test)[test_rows] if test is not train else launch_keys(train)[test_rows]
    y = np.asarray(train_slowdown, dtype=np.float64)[train_rows]
    glob = float(y.mean()) if y.size else 1.0
    sums: dict[object, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for k, v in zip(ktr, y):
        for key in (k, k[:2], k[0]):
            acc = sums[key]
            acc[0] += v
            acc[1] += 1.0
    pair = np.empty(len(kte))
    for i, k in enumerate(kte):
        for key in (k, k[:2], k[0]):
            if key in sums:
                pair[i] = sums[key][0] / sums[key][1]
                break
        else:
            pair[i] = glob
    n = len(kte)
    return {"no interference": np.ones(n), "global mean": np.full(n, glob), "per-pair mean": pair}
