"""Prequential ("test-then-train") evaluation: predict every row with what was learned so far, then learn it.

Three loops share one feedback schedule (:func:`feedback_schedule`): :func:`prequential` over
executions (each learned once it has finished), :func:`prequential_entities` for predictors that
learn per-entity terms, and :func:`prequential_runs` over measurement runs (members of a run
finish together).

Examples
--------
>>> from interfpred import RLS
>>> X = np.ones((3, 1)); y = np.array([2.0, 2.0, 2.0])
>>> prequential(RLS(), X, y).round(2)              # the prior, then what it learned
array([1., 2., 2.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.evaluation.baselines import call
from interfpred.predictors import BasePredictor

__all__ = ["feedback_schedule", "prequential", "prequential_entities", "prequential_runs"]


def feedback_schedule(start_ms: Any, end_ms: Any, n: int) -> tuple[list[int], list[int]]:
    """Finishing order and, per row, how many rows had finished by its launch (delayed feedback).

    Returns ``(order, learned)``: ``order`` lists the rows by finish time (ties in row order);
    row ``i`` is predicted after the first ``learned[i]`` rows of ``order`` were learned.
    Without times (``start_ms`` and ``end_ms`` None) each row is learned right after it is
    predicted: ``order`` is ``0..n-1`` and ``learned[i] = i``.

    Examples
    --------
    >>> feedback_schedule(np.array([0.0, 1.0, 5.0]), np.array([4.0, 6.0, 7.0]), 3)
    ([0, 1, 2], [0, 0, 1])
    """
    if start_ms is None:
        return list(range(n)), list(range(n))
    start = np.asarray(start_ms, dtype=np.float64)
    end = np.asarray(end_ms, dtype=np.float64)
    if start.shape != (n,) or end.shape != (n,):
        raise InterfpredError(f"start_ms and end_ms must have {n} values")
    order = np.argsort(end, kind="stable")
    # learned[i]: how many rows (in finishing order) have finished by row i's launch.
    return order.tolist(), np.searchsorted(end[order], start, side="right").tolist()


def prequential(predictor: BasePredictor, X: np.ndarray, y: np.ndarray, *, start_ms: np.ndarray | None = None,
                end_ms: np.ndarray | None = None, entities: Entities | None = None) -> np.ndarray:
    """Predict every row, then learn from it: the online ("test-then-train") evaluation.

    With ``start_ms`` and ``end_ms`` the feedback is delayed as in a live system: row ``i`` is
    predicted with everything learned from the rows that *finished* at or before its launch
    (rows are taken in their given order, which should be launch order). Without them each row
    is learned right after it is predicted. An offline predictor (``tags.learns_online`` false) only
    predicts, in one batch call. ``predictor`` is updated in place.

    Parameters
    ----------
    predictor
        Any interfpred predictor, fitted or fresh.
    X, y
        Features (n, d) and targets (n,), in launch order.
    start_ms, end_ms
        Launch and finish times (n,), for delayed feedback.
    entities
        The rows' entities (n rows), passed to a predictor with ``tags.uses_entities`` (one row at
        a time, as the features); other predictors never see them.

    Returns
    -------
    ndarray
        (n,) predictions, each made before its own row was learned.

    Examples
    --------
    >>> from interfpred import RLS
    >>> X = np.array([[1.0], [1.0], [1.0]]); y = np.array([2.0, 2.0, 2.0])
    >>> prequential(RLS(), X, y).round(2)              # the prior, then what it learned
    array([1., 2., 2.])
    >>> prequential(RLS(), X, y, start_ms=np.array([0.0, 1.0, 5.0]),
    ...             end_ms=np.array([4.0, 6.0, 7.0])).round(2)   # row 1 launched before row 0 finished
    array([1., 1., 2.])
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n = X.shape[0]
    if X.ndim != 2 or y.shape != (n,):
        raise InterfpredError(f"X has shape {X.shape} and y {y.shape}; expected (n, d) and (n,)")
    if (start_ms is None) != (end_ms is None):
        raise InterfpredError("give both start_ms and end_ms, or neither")
    if n == 0:
        return np.empty(0)
    if entities is not None and predictor.tags.uses_entities:
        if len(entities) != n:
            raise InterfpredError(f"entities has {len(entities)} rows, X has {n}")
        return prequential_entities(predictor, X, y, start_ms=start_ms, end_ms=end_ms, entities=entities)
    if not predictor.tags.learns_online:
        return np.asarray(predictor.predict(X), dtype=np.float64)
    out = np.empty(n)
    predict, update = predictor.predict, predictor.update
    rows = list(X)                     # row views, built once
    ys = y.tolist()                    # Python floats: the predictors' single-row fast path
    if start_ms is None:
        for i in range(n):
            out[i] = predict(rows[i])
            update(rows[i], ys[i])
        return out
    order, learned = feedback_schedule(start_ms, end_ms, n)
    j = 0
    for i in range(n):
        stop = learned[i]
        while j < stop:
            k = order[j]
            update(rows[k], ys[k])
            j += 1
        out[i] = predict(rows[i])
    return out


def prequential_entities(predictor: Any, X: np.ndarray, y: np.ndarray, *, start_ms: Any = None,
                         end_ms: Any = None, entities: Entities) -> np.ndarray:
    """Prequential evaluation (predict, then learn) of an entity-aware predictor, each row with its entities.

    With ``start_ms`` and ``end_ms`` a row is predicted with what the rows finished by its launch
    taught; without them each row is learned right after it is predicted.
    """
    n = X.shape[0]
    one = entities.split_rows()
    if not predictor.tags.learns_online:
        return np.asarray(predictor.predict(X, entities=entities), dtype=np.float64)
    out = np.empty(n)
    if start_ms is None:
        for i in range(n):
            out[i] = predictor.predict(X[i], entities=one[i])
            predictor.update(X[i], float(y[i]), entities=one[i])
        return out
    order, learned = feedback_schedule(start_ms, end_ms, n)
    j = 0
    for i in range(n):
        while j < learned[i]:
            k = order[j]
            predictor.update(X[k], float(y[k]), entities=one[k])
            j += 1
        out[i] = predictor.predict(X[i], entities=one[i])
    return out


def prequential_runs(predictor: BasePredictor, X: np.ndarray, y: np.ndarray, run_code: np.ndarray, *,
                     entities: Entities | None = None) -> np.ndarray:
    """Online evaluation over measurement runs taken in the order they first appear.

    Every member of a run is predicted with what was learned from the runs before it, then the
    whole run is learned (its members finish together). An offline predictor only predicts.

    Examples
    --------
    >>> from interfpred import RLS
    >>> X = np.ones((4, 1)); y = np.array([2.0, 2.0, 2.0, 2.0])
    >>> prequential_runs(RLS(), X, y, np.array([0, 0, 1, 1])).round(2)
    array([1., 1., 2., 2.])
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    codes = np.asarray(run_code)
    n = X.shape[0]
    if y.shape != (n,) or codes.shape != (n,):
        raise InterfpredError(f"X has {n} rows, y {y.shape}, run_code {codes.shape}; expected one per row")
    if entities is not None and len(entities) != n:
        raise InterfpredError(f"entities has {len(entities)} rows, X has {n}")
    if not predictor.tags.learns_online:
        return np.asarray(call(predictor, "predict", X, entities=entities), dtype=np.float64).reshape(-1)
    _, first = np.unique(codes, return_index=True)
    runs = [np.flatnonzero(codes == code) for code in codes[np.sort(first)]]
    return np.asarray(predictor.learn_runs(X, y, runs, entities=entities), dtype=np.float64)
