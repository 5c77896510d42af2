"""Speed of predict/update, ours and peers', as one table (used by benchmarks/ and ``interfpred bench``).

Times are microseconds per sample, the best of ``repeats`` runs, for single-row calls through
the public API and for batches of 1,000 rows; each ratio is against RLS at the same width
(> 1: slower than RLS).  Peers: river ``LinearRegression.learn_one``/``predict_one``,
scikit-learn ``SGDRegressor.partial_fit``/``predict`` and padasip ``FilterRLS.adapt``/``predict``
(padasip has no batch API beyond a Python loop: its batch column is ``run``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interfpred._core.limits import check_limit
from interfpred._core.params import parse_param
from interfpred.constants import BENCH_MAX_WIDTH
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.evaluation.text_tables import Column, text_table
from interfpred.predictors.base import BasePredictor
from interfpred.predictors.registry import make_predictor

__all__ = ["BenchRow", "run_bench", "format_bench", "first_call_seconds", "missing_peers", "parse_param"]

BATCH = 1000


@dataclass
class BenchRow:
    """One line of the table: microseconds per sample (NaN where not applicable)."""

    name: str
    d: int
    predict_one: float
    update_one: float
    predict_batch: float
    update_batch: float


def _best(fn: Callable[[], Any], reps: int, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best / reps * 1e6


def _data(d: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    return X, 1.0 + X @ rng.normal(size=d) * 0.1 + 0.01 * rng.normal(size=n)


def _row_loops(predict: Callable[[Any], Any], update: Callable[[Any, Any], Any], rows: Sequence[Any],
               targets: Sequence[Any], *, target_first: bool = False) -> tuple[Callable[[], None], Callable[[], None]]:
    """Two timed loops over single rows: ``predict(x)`` each, and ``update(x, t)`` each
    (``update(t, x)`` with ``target_first``, padasip's order)."""

    def p1() -> None:
        for x in rows:
            predict(x)

    def u1() -> None:
        for x, t in zip(rows, targets):
            update(x, t)

    def u1_target_first() -> None:
        for x, t in zip(rows, targets):
            update(t, x)

    return p1, (u1_target_first if target_first else u1)


#: Entities of the benchmark rows of predictors that use them: this many models, 1-2 co-runners per row.
BENCH_ENTITIES = 50


def _bench_entities(n: int, seed: int = 0) -> Entities:
    rng = np.random.default_rng(seed)
    names = [f"model-{i}" for i in range(BENCH_ENTITIES)]
    own = rng.integers(0, BENCH_ENTITIES, n)
    co = [{names[j]: 1.0 for j in rng.choice(BENCH_ENTITIES, int(rng.integers(1, 3)), replace=False)}
          for _ in range(n)]
    return Entities.from_lists([names[i] for i in own], co)


def _ours(p: BasePredictor, d: int, n: int, repeats: int) -> BenchRow:
    if p.tags.uses_entities:
        return _ours_entities(p, d, n, repeats)
    X, y = _data(d, max(n, BATCH))
    if not p.tags.learns_online:  # frozen: update is refused, so only predict is timed
        p.predict(X[:10])
        rows = [X[i].copy() for i in range(n)]
        Xf = X[:BATCH].copy()
        return BenchRow(name=repr(p), d=d, predict_one=_best(lambda: [p.predict(x) for x in rows], n, repeats),
                        update_one=np.nan, predict_batch=_best(lambda: p.predict(Xf), BATCH, repeats),
                        update_batch=np.nan)
    p.update(X[:10], y[:10])  # allocate and compile (or load from cache)
    rows = [X[i].copy() for i in range(n)]
    ys = [float(v) for v in y[:n]]
    predict, update = p.predict, p.update
    p1, u1 = _row_loops(predict, update, rows, ys)
    Xb, yb = X[:BATCH].copy(), y[:BATCH].copy()
    return BenchRow(
        name=repr(p), d=d,
        predict_one=_best(p1, n, repeats),
        update_one=_best(u1, n, repeats),
        predict_batch=_best(lambda: predict(Xb), BATCH, repeats),
        update_batch=_best(lambda: update(Xb, yb), BATCH, repeats),
    )


def _ours_entities(p: Any, d: int, n: int, repeats: int) -> BenchRow:
    """As ``_ours``, every row with its entities (BENCH_ENTITIES models, all seen in the warm-up)."""
    m = max(n, BATCH)
    X, y = _data(d, m)
    ent = _bench_entities(m)
    p.update(X, y, entities=ent)  # allocate, compile, create every entity and pair of the rows
    rows = [X[i].copy() for i in range(n)]
    ys = [float(v) for v in y[:n]]
    ents = ent.split_rows()[:n]
    predict, update = p.predict, p.update

    def p1() -> None:
        for x, e in zip(rows, ents):
            predict(x, entities=e)

    def u1() -> None:
        for x, t, e in zip(rows, ys, ents):
            update(x, t, entities=e)

    Xb, yb, eb = X[:BATCH].copy(), y[:BATCH].copy(), ent.take(np.arange(BATCH))
    return BenchRow(
        name=repr(p) + f" +{BENCH_ENTITIES} entities", d=d,
        predict_one=_best(p1, n, repeats),
        update_one=_best(u1, n, repeats),
        predict_batch=_best(lambda: predict(Xb, entities=eb), BATCH, repeats),
        update_batch=_best(lambda: update(Xb, yb, entities=eb), BATCH, repeats),
    )


def _river(d: int, n: int, repeats: int) -> BenchRow | None:
    try:
        from river import linear_model
    except ImportError:  # pragma: no cover
        return None
    X, y = _data(d, max(n, BATCH))
    m = linear_model.LinearRegression()
    dicts = [dict(enumerate(row)) for row in X[:n].tolist()]
    ys = y[:n].tolist()
    for x, t in zip(dicts[:10], ys[:10]):
        m.learn_one(x, t)
    p1, u1 = _row_loops(m.predict_one, m.learn_one, dicts, ys)
    return BenchRow("river LinearRegression", d, _best(p1, n, repeats), _best(u1, n, repeats), np.nan, np.nan)


def _sklearn(d: int, n: int, repeats: int) -> BenchRow | None:
    try:
        from sklearn.linear_model import SGDRegressor
    except ImportError:  # pragma: no cover
        return None
    X, y = _data(d, max(n, BATCH))
    m = SGDRegressor(random_state=0)
    m.partial_fit(X[:10], y[:10])
    k = max(1, min(n, 300))  # partial_fit costs ~100s of us per call: fewer reps
    rows = [X[i:i + 1] for i in range(k)]
    ys = [y[i:i + 1] for i in range(k)]
    Xb, yb = X[:BATCH], y[:BATCH]
    p1, u1 = _row_loops(m.predict, m.partial_fit, rows, ys)
    return BenchRow("sklearn SGDRegressor", d, _best(p1, k, repeats), _best(u1, k, repeats),
                    _best(lambda: m.predict(Xb), BATCH, repeats), _best(lambda: m.partial_fit(Xb, yb), BATCH, repeats))


def _padasip(d: int, n: int, repeats: int) -> BenchRow | None:
    try:
        import padasip as pa
    except ImportError:
        return None
    X, y = _data(d, max(n, BATCH))
    f = pa.filters.FilterRLS(d, mu=0.995, eps=0.01, w="zeros")
    rows = [X[i].copy() for i in range(n)]
    ys = [float(v) for v in y[:n]]
    p1, u1 = _row_loops(f.predict, f.adapt, rows, ys, target_first=True)
    Xb, yb = X[:BATCH].copy(), y[:BATCH].copy()
    # FilterRLS.run(d, x) is its batch API (a Python loop); predicting a batch is a matrix product
    return BenchRow("padasip FilterRLS", d, _best(p1, n, repeats), _best(u1, n, repeats),
                    _best(lambda: Xb @ f.w, BATCH, repeats), _best(lambda: f.run(yb, Xb), BATCH, repeats))


def run_bench(
    ds: Sequence[int] = (6, 12, 24),
    predictors: Sequence[BasePredictor] | None = None,
    *,
    n: int = 20_000,
    repeats: int = 3,
    peers: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[BenchRow]:
    """Measure every predictor (default: RLS, OnlineSGD, OfflineLinear, gpulets) and the peers.

    ``progress``, when given, is called before each width with ``"width k of N (d=...)"``.

    Examples
    --------
    >>> from interfpred import RLS
    >>> rows = run_bench(ds=[3], predictors=[RLS()], n=50, repeats=1, peers=False)
    >>> rows[0].name, rows[0].d
    ('RLS()', 3)
    """
    if n < 1:
        raise InterfpredError(f"n must be >= 1, got {n}")
    check_limit("CALLS_MAX", int(n), "calls (n)")  # before the n-row input is allocated
    for d in ds:
        if int(d) < 1:
            raise InterfpredError(f"d must be >= 1, got {d}")
        if int(d) > BENCH_MAX_WIDTH:
            raise InterfpredError(f"d {d} is larger than BENCH_MAX_WIDTH={BENCH_MAX_WIDTH} (RLS keeps a d x d "
                                  f"covariance: d={d} would need {8.0 * int(d) ** 2 * 2 / 2**30:.3g} GiB)")
    rows: list[BenchRow] = []
    for k, d in enumerate(ds, start=1):
        if progress is not None:
            progress(f"width {k} of {len(ds)} (d={int(d)})" + ("" if k == 1 else f", {len(rows)} rows measured"))
        chosen = list(predictors) if predictors is not None else [
            make_predictor("rls"), make_predictor("online_sgd"), make_predictor("offline_linear"),
        ]
        if predictors is None and d == 4:
            chosen.append(make_predictor("gpulets"))
        for p in chosen:
            q = p.clone()
            if q.tags.fixed_width is not None and q.tags.fixed_width != d:
                continue
            if not q.tags.learns_online:
                X, y = _data(d, 50)
                q.fit(X, y)
            rows.append(_ours(q, int(d), n, repeats))
        if peers:
            for fn in (_river, _sklearn, _padasip):
                r = fn(int(d), n, repeats)
                if r is not None:
                    rows.append(r)
    return rows


def missing_peers() -> list[str]:
    """Peer libraries (pip names) the benchmark compares against that are not installed (rows skipped).

    Examples
    --------
    >>> isinstance(missing_peers(), list)
    True
    """
    import importlib.util

    peers = (("river", "river"), ("sklearn", "scikit-learn"), ("padasip", "padasip"))
    return [pip for module, pip in peers if importlib.util.find_spec(module) is None]


def format_bench(rows: Sequence[BenchRow]) -> str:
    """The table as text: each time (microseconds per call) and its ratio against RLS at the same width
    (``-`` where a peer cannot run it)."""
    ref: dict[int, BenchRow] = {}
    for r in rows:
        if r.name.startswith("RLS(") and r.d not in ref:
            ref[r.d] = r
    cols = ("predict_one", "update_one", "predict_batch", "update_batch")
    header: list[str | Column] = ["predictor", "d"]
    for c in cols:
        header += [Column(c, unit="us", spec=".3f"), Column("x RLS", spec=".1f")]
    body: list[list[object]] = []
    for r in rows:
        cells: list[object] = [r.name, r.d]
        for c in cols:
            v = getattr(r, c)
            base = getattr(ref[r.d], c) if r.d in ref else np.nan
            ratio = v / base if base and np.isfinite(v) and np.isfinite(base) else np.nan
            cells += [v, ratio] if np.isfinite(v) else [np.nan, np.nan]
        body.append(cells)
    return text_table(header, body)


def first_call_seconds(p: BasePredictor | None = None, d: int = 6) -> float:
    """Seconds of the first update + predict of a fresh predictor in this process.

    With numba's on-disk cache warm this is the cache load; the very first run on a machine
    (or after a change to the kernels) includes compilation.
    """
    p = make_predictor("rls") if p is None else p.clone()
    X, y = _data(d, 2)
    t = time.perf_counter()
    p.update(X[0], float(y[0]))
    p.update(X, y)
    p.predict(X[0])
    p.predict(X)
    return time.perf_counter() - t
