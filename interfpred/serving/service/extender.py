"""The kube-scheduler extender protocol (``k8s.io/kube-scheduler/extender/v1``), field for field.

kube-scheduler POSTs an ``ExtenderArgs`` to ``<urlPrefix>/<filterVerb>`` and
``<urlPrefix>/<prioritizeVerb>``: ``{"Pod": {...}, "Nodes": {"items": [{"metadata": {"name": ...}},
...]}, "NodeNames": null}``, or with ``nodeCacheCapable: true`` the names alone,
``{"Pod": {...}, "Nodes": null, "NodeNames": ["node-a", ...]}``. Filter answers an
``ExtenderFilterResult`` in the same form (``Nodes`` or ``NodeNames``, the other null) with
``FailedNodes``, ``FailedAndUnresolvableNodes`` (node -> one-line reason) and ``Error``;
prioritize answers a ``HostPriorityList``, ``[{"Host": "node-a", "Score": 7}, ...]`` with scores
from 0 to 10.

The pod names its batch in annotations: :data:`~interfpred.constants.SERVE_ANNOTATION_MODEL`
(``interfpred.io/model``), :data:`~interfpred.constants.SERVE_ANNOTATION_BATCH`
(``interfpred.io/batch-size``) and :data:`~interfpred.constants.SERVE_ANNOTATION_SLO`
(``interfpred.io/slo-ms``). A pod without the model annotation is not interfpred's to judge: every
node passes and scores 0. A node passes the filter when one of its devices can start the batch now
with it and everything running there projected to meet their deadlines
(:meth:`~interfpred.Fleet.assess_all`); a node the fleet does not describe, or a pod whose
annotations cannot be read, is unresolvable. Prioritize scores each node by the least projected
latency the batch adds on one of its feasible devices (the placement rule of
:meth:`~interfpred.Fleet.choose_device`): the best node 10, another ``10 * best / its own`` rounded
down, an infeasible node 0.

Examples
--------
>>> req = parse_extender_args({"Pod": {"metadata": {"uid": "u1", "annotations": {
...     "interfpred.io/model": "resnet50", "interfpred.io/batch-size": "4", "interfpred.io/slo-ms": "20"}}},
...     "Nodes": None, "NodeNames": ["n1", "n2"]})
>>> req.node_names, req.batch
(['n1', 'n2'], BatchRequest(id='u1', model='resnet50', batch_size=4, slo_ms=20.0))
>>> filter_result(req, {"n1"}, {"n2": "no"}, {})
{'Nodes': None, 'NodeNames': ['n1'], 'FailedNodes': {'n2': 'no'}, 'FailedAndUnresolvableNodes': {}, 'Error': ''}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from interfpred.constants import (
    SERVE_ANNOTATION_BATCH,
    SERVE_ANNOTATION_MODEL,
    SERVE_ANNOTATION_SLO,
    SERVE_MAX_NAME_CHARS,
    SERVE_MAX_NODES,
    TIME_HORIZON_MS,
)
from interfpred.errors import InterfpredError

__all__ = ["BatchRequest", "ExtenderRequest", "NodeJudgement", "filter_result", "judge_nodes", "parse_extender_args",
           "priorities"]

MAX_SCORE = 10


class BatchRequest(NamedTuple):
    """What a pod's annotations ask: its id (the pod's UID), model, batch size and latency SLO (ms)."""

    id: str
    model: str
    batch_size: int
    slo_ms: float


class ExtenderRequest(NamedTuple):
    """A parsed ``ExtenderArgs``."""

    #: The candidate node names, in the request's order.
    node_names: list[str]
    #: The ``Nodes.items`` objects when the request carried them (nodeCacheCapable false), else None.
    node_items: list[dict[str, Any]] | None
    #: The pod's batch, or None when the pod carries no model annotation (not interfpred's to judge).
    batch: BatchRequest | None
    #: Why the annotations cannot be read (every node then fails as unresolvable), or None.
    annotation_error: str | None


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > SERVE_MAX_NAME_CHARS:
        raise InterfpredError(f"{what} must be a non-empty string of at most {SERVE_MAX_NAME_CHARS} characters")
    return value


def _batch(meta: Mapping[str, Any], annotations: Mapping[str, Any]) -> BatchRequest:
    uid = meta.get("uid")
    if not uid:
        uid = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
    pid = _name(uid, "Pod.metadata.uid")
    model = _name(annotations.get(SERVE_ANNOTATION_MODEL), f"annotation {SERVE_ANNOTATION_MODEL}")
    raw_b, raw_s = annotations.get(SERVE_ANNOTATION_BATCH), annotations.get(SERVE_ANNOTATION_SLO)
    if not isinstance(raw_b, str) or not raw_b.isascii() or not raw_b.isdigit() or len(raw_b) > 9 or int(raw_b) < 1:
        raise InterfpredError(f"annotation {SERVE_ANNOTATION_BATCH} {raw_b!r} must be a positive integer")
    try:
        slo = float(raw_s) if isinstance(raw_s, str) and len(raw_s) <= 32 else math.nan
    except ValueError:
        slo = math.nan
    if not (0.0 < slo <= TIME_HORIZON_MS):
        raise InterfpredError(f"annotation {SERVE_ANNOTATION_SLO} {raw_s!r} must be a latency in ms, > 0")
    return BatchRequest(pid, model, int(raw_b), slo)


def parse_extender_args(body: Any) -> ExtenderRequest:
    """An ``ExtenderArgs`` JSON value, checked; a malformed one raises :class:`InterfpredError` (one line).

    Exactly one of ``Nodes`` and ``NodeNames`` is set, as kube-scheduler sends it; node names are
    distinct; at most ``SERVE_MAX_NODES``.
    """
    if not isinstance(body, dict):
        raise InterfpredError(f"ExtenderArgs must be a JSON object, got {type(body).__name__}")
    unknown = set(body) - {"Pod", "Nodes", "NodeNames"}
    if unknown:
        raise InterfpredError(f"ExtenderArgs has unknown field {sorted(unknown)[0]!r}")
    pod = body.get("Pod")
    if not isinstance(pod, dict):
        raise InterfpredError("ExtenderArgs.Pod must be a Pod object")
    meta = pod.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise InterfpredError("Pod.metadata must be an object")
    annotations = meta.get("annotations")
    if annotations is None:
        annotations = {}
    if not isinstance(annotations, dict):
        raise InterfpredError("Pod.metadata.annotations must be an object")
    nodes, names = body.get("Nodes"), body.get("NodeNames")
    items: list[dict[str, Any]] | None = None
    if (nodes is None) == (names is None):
        raise InterfpredError("ExtenderArgs must carry exactly one of Nodes and NodeNames")
    if nodes is not None:
        if not isinstance(nodes, dict):
            raise InterfpredError("ExtenderArgs.Nodes must be a NodeList object")
        raw = nodes.get("items")
        raw = [] if raw is None else raw
        if not isinstance(raw, list) or not all(isinstance(n, dict) for n in raw):
            raise InterfpredError("ExtenderArgs.Nodes.items must be a list of Node objects")
        items = raw
        names = []
        for i, n in enumerate(items):
            m = n.get("metadata")
            names.append(_name(m.get("name") if isinstance(m, dict) else None, f"Nodes.items[{i}].metadata.name"))
    if not isinstance(names, list):
        raise InterfpredError("ExtenderArgs.NodeNames must be a list of node names")
    if len(names) > SERVE_MAX_NODES:
        raise InterfpredError(f"{len(names)} nodes, more than SERVE_MAX_NODES={SERVE_MAX_NODES}")
    for i, n in enumerate(names):
        _name(n, f"NodeNames[{i}]")
    if len(set(names)) != len(names):
        raise InterfpredError("a node is named twice")
    if annotations.get(SERVE_ANNOTATION_MODEL) is None:
        return ExtenderRequest(names, items, None, None)
    try:
        return ExtenderRequest(names, items, _batch(meta, annotations), None)
    except InterfpredError as exc:
        return ExtenderRequest(names, items, None, str(exc))


class NodeJudgement(NamedTuple):
    """What :func:`judge_nodes` found: the passing nodes, the failed ones with a reason, each feasible node's
    least added latency (ms)."""

    passing: set[str]
    failed: dict[str, str]
    unresolvable: dict[str, str]
    best_added: dict[str, float]


def judge_nodes(req: ExtenderRequest, nodes: Mapping[str, list[str]],
                assess_all: Callable[[tuple[str, str, int], float, float], Mapping[str, tuple[bool, float]]],
                t: float) -> NodeJudgement:
    """Judge every node of ``req`` at ``t``: ``nodes`` maps a node to its devices, ``assess_all`` is
    :meth:`~interfpred.Fleet.assess_all` (candidate, deadline, t). A candidate the fleet refuses (no
    profile for its model) fails every node as unresolvable, with the fleet's reason."""
    names = req.node_names
    if req.annotation_error is not None:
        return NodeJudgement(set(), {}, {n: f"interfpred: {req.annotation_error}" for n in names}, {})
    if req.batch is None:
        return NodeJudgement(set(names), {}, {}, {})
    b = req.batch
    unknown = {n: "interfpred: node has no device in the fleet description" for n in names if n not in nodes}
    asked = [n for n in names if n in nodes]
    if not asked:
        return NodeJudgement(set(), {}, unknown, {})
    try:
        every = assess_all((b.id, b.model, b.batch_size), t + b.slo_ms, t)
    except InterfpredError as exc:
        return NodeJudgement(set(), {}, {**unknown, **{n: f"interfpred: {exc}" for n in asked}}, {})
    passing: set[str] = set()
    failed: dict[str, str] = {}
    best: dict[str, float] = {}
    for n in asked:
        ok = [every[d][1] for d in nodes[n] if every[d][0]]
        if ok:
            passing.add(n)
            best[n] = min(ok)
        else:
            failed[n] = (f"interfpred: on none of its {len(nodes[n])} devices would the batch and its "
                         f"co-runners meet their latency SLOs")
    return NodeJudgement(passing, failed, unknown, best)


def filter_result(req: ExtenderRequest, passing: set[str], failed: Mapping[str, str],
                  unresolvable: Mapping[str, str], error: str = "") -> dict[str, Any]:
    """An ``ExtenderFilterResult`` in the request's form: the passing nodes in request order."""
    keep = [n for n in req.node_names if n in passing]
    out: dict[str, Any] = {"Nodes": None, "NodeNames": None, "FailedNodes": dict(failed),
                           "FailedAndUnresolvableNodes": dict(unresolvable), "Error": error}
    if req.node_items is None:
        out["NodeNames"] = keep
    else:
        out["Nodes"] = {"metadata": {}, "items": [it for it, n in zip(req.node_items, req.node_names) if n in passing]}
    return out


def priorities(names: list[str], best_added: Mapping[str, float]) -> list[dict[str, Any]]:
    """A ``HostPriorityList``: ``best_added`` holds each feasible node's least added latency (ms).

    >>> priorities(["a", "b", "c"], {"a": 4.0, "b": 5.0})
    [{'Host': 'a', 'Score': 10}, {'Host': 'b', 'Score': 8}, {'Host': 'c', 'Score': 0}]
    """
    least = min(best_added.values(), default=math.inf)
    out = []
    for n in names:
        a = best_added.get(n)
        if a is None:
            score = 0
        elif a <= least or least <= 0:
            score = MAX_SCORE
        else:
            score = max(1, min(MAX_SCORE, math.floor(MAX_SCORE * least / a)))   # feasible nodes score at least 1
        out.append({"Host": n, "Score": score})
    return out
