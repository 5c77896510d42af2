"""Hypothesis strategies shared by the timeline, features and streaming tests."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from interfpred import ProfileTable, Trace

MODELS = ("a", "b", "c")


@st.composite
def profile_tables(draw, gpus=("g0",)):
    """Profiles of MODELS at batch sizes 1 and 4 (2 and 3 interpolate) on each gpu."""
    frac = st.floats(0.0, 1.0, allow_nan=False, width=32)
    cols = {k: [] for k in ("gpu", "model", "batch_size", "solo_ms", "sm", "l2", "dram")}
    for g in gpus:
        for m in MODELS:
            for b in (1, 4):
                cols["gpu"].append(g)
                cols["model"].append(m)
                cols["batch_size"].append(b)
                cols["solo_ms"].append(draw(st.floats(0.5, 10.0, width=32)))
                for r in ("sm", "l2", "dram"):
                    cols[r].append(draw(frac))
    return ProfileTable.from_columns(**cols)


@st.composite
def traces(draw, max_n=12, gpus=("g0", "g1"), grid=True):
    """Random traces with many ties (times on a coarse grid) and zero-length executions."""
    n = draw(st.integers(0, max_n))
    if grid:
        t = st.integers(0, 8).map(lambda k: k * 0.5)
        d = st.integers(0, 6).map(lambda k: k * 0.5)
    else:
        t = st.floats(0.0, 100.0, allow_nan=False)
        d = st.one_of(st.just(0.0), st.floats(0.0, 30.0, allow_nan=False))
    start = np.array([draw(t) for _ in range(n)], dtype=float)
    dur = np.array([draw(d) for _ in range(n)], dtype=float)
    return Trace(
        id=np.arange(100, 100 + n),
        device=[draw(st.sampled_from(gpus)) for _ in range(n)],
        model=[draw(st.sampled_from(MODELS)) for _ in range(n)],
        batch_size=[draw(st.integers(1, 4)) for _ in range(n)],
        start_ms=start,
        end_ms=start + dur,
    )
