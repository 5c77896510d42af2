"""Who ran beside each execution of a trace when it launched: the key of a per-pair mean.

A per-pair baseline predicts an execution's slowdown from earlier executions of the same model
beside the same co-runners.  On a trace, the co-runners known when an execution launches are those
already running then (later arrivals are not known yet), so the experiments key each row by its
model and the models running at its launch, and hand that to entity-aware predictors
(:class:`~interfpred.predictors.baselines.PairMean`) as an :class:`~interfpred.data.entities.Entities`
table.

Examples
--------
>>> from interfpred import Trace
>>> t = Trace(id=[0, 1, 2], device=["g"] * 3, model=["a", "b", "a"], batch_size=[1, 1, 1],
...           start_ms=[0.0, 0.0, 10.0], end_ms=[2.0, 3.0, 11.0], solo_ms=[1.0, 1.0, 1.0])
>>> launch_keys(t)
[('a', ('b',)), ('b', ('a',)), ('a', ())]
>>> launch_entities(t).pair_keys() == launch_keys(t)
True
"""

from __future__ import annotations

from collections import Counter

from interfpred.data.entities import Entities
from interfpred.data.trace import Trace
from interfpred.features.timeline import build_timeline

__all__ = ["launch_entities", "launch_keys"]


def _co_at_launch(trace: Trace) -> list[list[str]]:
    tl = build_timeline(trace)
    model = trace.model.astype(str)
    out = []
    for i in range(len(trace)):
        segs = tl.exec_segments[tl.exec_ptr[i]:tl.exec_ptr[i + 1]]
        others: list[str] = []
        if segs.size:
            s = int(segs[0])
            mem = tl.seg_members[tl.seg_ptr[s]:tl.seg_ptr[s + 1]]
            others = model[mem[mem != i]].tolist()
        out.append(others)
    return out


def launch_keys(trace: Trace) -> list[tuple[str, tuple[str, ...]]]:
    """(model, sorted distinct co-runner models at launch) of every trace row."""
    return [(str(m), tuple(sorted(set(co)))) for m, co in zip(trace.model.tolist(), _co_at_launch(trace))]


def launch_entities(trace: Trace) -> Entities:
    """Each row's model and the models running at its launch (weight: how many of each)."""
    co = [dict(Counter(c)) for c in _co_at_launch(trace)]
    return Entities.from_lists([str(m) for m in trace.model.tolist()], co)
