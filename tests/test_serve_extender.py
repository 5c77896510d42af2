"""Contract tests of the kube-scheduler extender endpoints against the JSON shapes of k8s.io/kube-scheduler/extender/v1.

kube-scheduler marshals its Go structs with encoding/json, whose keys are the field names:
``ExtenderArgs{Pod *v1.Pod; Nodes *v1.NodeList; NodeNames *[]string}`` with exactly one of Nodes
(``nodeCacheCapable: false``: whole Node objects) and NodeNames (``nodeCacheCapable: true``) set
and the other ``null``. It decodes ``ExtenderFilterResult{Nodes, NodeNames, FailedNodes,
FailedAndUnresolvableNodes, Error}`` and ``HostPriorityList`` (``[{Host, Score}]``, Score in
[MinExtenderPriority, MaxExtenderPriority] = [0, 10]) from the replies.
"""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("starlette")

from _serve_fixtures import reference_fleet, write_inputs  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from interfpred.serving.service.app import create_app  # noqa: E402
from interfpred.serving.service.core import open_service  # noqa: E402

FILTER_RESULT_FIELDS = {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


def pod(uid: str, annotations: dict[str, str] | None) -> dict:
    """A Pod as kube-scheduler encodes it (v1.Pod: metadata, spec, status), as it arrives at an extender."""
    meta = {"name": f"infer-{uid}", "namespace": "serving", "uid": uid, "resourceVersion": "81234",
            "creationTimestamp": "2026-01-05T10:00:00Z", "labels": {"app": "infer"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "infer-7d9",
                                 "uid": "0b4c", "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}]}
    if annotations is not None:
        meta["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": '{"a": [1, {"b": "]"}]}',
                               **annotations}
    return {"metadata": meta,
            "spec": {"containers": [{"name": "server", "image": "nvcr.io/nvidia/tritonserver:24.05-py3",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"},
                                                   "requests": {"nvidia.com/gpu": "1", "cpu": "2"}},
                                     "terminationMessagePath": "/dev/termination-log",
                                     "imagePullPolicy": "IfNotPresent"}],
                     "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                     "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": True,
                     "preemptionPolicy": "PreemptLowerPriority",
                     "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                      "effect": "NoExecute", "tolerationSeconds": 300}],
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In",
                                                                      "values": ["l4"]}]}]}}}},
            "status": {"phase": "Pending", "qosClass": "Burstable"}}


def node(name: str) -> dict:
    """A Node as kube-scheduler encodes it inside the NodeList of ExtenderArgs.Nodes."""
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "991",
                         "creationTimestamp": "2025-12-01T00:00:00Z",
                         "labels": {"kubernetes.io/hostname": name, "gpu": "l4"},
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"],
                     "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "32", "memory": "263860352Ki", "nvidia.com/gpu": "2", "pods": "110"},
                       "allocatable": {"cpu": "31800m", "memory": "261658752Ki", "nvidia.com/gpu": "2",
                                       "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastHeartbeatTime": "2026-01-05T09:59:00Z",
                                       "lastTransitionTime": "2025-12-01T00:01:00Z", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.7"},
                                     {"type": "Hostname", "address": name}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                       "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.8.0",
                                    "osImage": "Ubuntu 24.04", "containerRuntimeVersion": "containerd://1.7.2",
                                    "kubeletVersion": "v1.31.2", "kubeProxyVersion": "v1.31.2",
                                    "operatingSystem": "linux", "architecture": "amd64"},
                       "images": [{"names": ["nvcr.io/nvidia/tritonserver@sha256:ab", "nvcr.io/x:24.05"],
                                   "sizeBytes": 15728640000}]}}


def extender_args(p: dict, names: list[str], node_cache_capable: bool) -> dict:
    """ExtenderArgs as kube-scheduler fills it for the extender's nodeCacheCapable setting."""
    if node_cache_capable:
        return {"Pod": p, "Nodes": None, "NodeNames": names}
    return {"Pod": p, "Nodes": {"metadata": {}, "items": [node(n) for n in names]}, "NodeNames": None}


ANN = {"interfpred.io/model": "vgg19", "interfpred.io/batch-size": "8", "interfpred.io/slo-ms": "120"}


class Clock:
    def __init__(self) -> None:
        self.s = 50.0

    def __call__(self) -> float:
        return self.s


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return write_inputs(tmp_path_factory.mktemp("extender"), nodes=4, per_node=2, max_running=2, margin=0.0)


@pytest.fixture
def served(inputs, tmp_path):
    """(client, service, reference fleet, clock) with node-0 full and node-1 busy."""
    model_file, fleet_file = inputs
    clock = Clock()
    svc = open_service(model_file, fleet_file, tmp_path / "s", clock=clock)
    ref = reference_fleet(model_file, fleet_file)
    client = TestClient(create_app(svc))
    t = 0.0
    for i, (dev, model, batch) in enumerate([("node-0/gpu0", "vgg19", 16), ("node-0/gpu0", "vit_b16", 16),
                                             ("node-0/gpu1", "vgg19", 16), ("node-0/gpu1", "vit_b16", 16),
                                             ("node-1/gpu0", "vgg19", 16), ("node-1/gpu1", "resnet50", 8)]):
        t += 1.0
        body = {"device": dev, "id": f"r{i}", "model": model, "batch_size": batch, "t": t, "deadline": t + 300.0}
        assert client.post("/v1/start", json=body).status_code == 200
        ref.start(dev, f"r{i}", model, batch, t, deadline=t + 300.0)
    clock.s += 0.010      # the extender asks at the service's clock: 10 ms after the epoch
    yield client, svc, ref, clock
    svc.close()


def _check_filter_shape(res: dict, node_cache_capable: bool) -> None:
    assert set(res) == FILTER_RESULT_FIELDS
    assert isinstance(res["Error"], str)
    for key in ("FailedNodes", "FailedAndUnresolvableNodes"):
        assert isinstance(res[key], dict) and all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in res[key].items())
        assert all("\n" not in v for v in res[key].values())
    if node_cache_capable:
        assert res["Nodes"] is None and isinstance(res["NodeNames"], list)
    else:
        assert res["NodeNames"] is None and isinstance(res["Nodes"]["items"], list)


def _names(res: dict) -> list[str]:
    return res["NodeNames"] if res["NodeNames"] is not None else [n["metadata"]["name"] for n in res["Nodes"]["items"]]


@pytest.mark.parametrize("node_cache_capable", [True, False])
def test_filter_and_prioritize_follow_the_library(served, node_cache_capable):
    client, svc, ref, clock = served
    names = ["node-3", "node-0", "node-1", "node-2", "node-x"]
    args = extender_args(pod("p-1", ANN), names, node_cache_capable)
    r = client.post("/extender/filter", json=args)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    res = r.json()
    _check_filter_shape(res, node_cache_capable)
    t = svc.now()
    assert t == pytest.approx(10.0)
    every = ref.assess_all(("p-1", "vgg19", 8), t + 120.0, t)
    want = [n for n in names[:4] if any(every[f"{n}/gpu{j}"][0] for j in range(2))]
    assert _names(res) == want and "node-0" not in want and len(want) >= 2
    if not node_cache_capable:       # the Node objects come back whole, as sent
        assert res["Nodes"]["items"] == [node(n) for n in want]
    assert set(res["FailedNodes"]) == set(names[:4]) - set(want)
    assert set(res["FailedAndUnresolvableNodes"]) == {"node-x"}
    r = client.post("/extender/prioritize", json=args)
    prio = r.json()
    assert [h["Host"] for h in prio] == names and all(set(h) == {"Host", "Score"} for h in prio)
    scores = {h["Host"]: h["Score"] for h in prio}
    assert all(isinstance(s, int) and 0 <= s <= 10 for s in scores.values())
    best = {n: min(every[f"{n}/gpu{j}"][1] for j in range(2) if every[f"{n}/gpu{j}"][0]) for n in want}
    top = min(best, key=best.get)
    assert scores[top] == 10 and scores["node-0"] == scores["node-x"] == 0
    assert all(scores[n] >= 1 for n in want)
    assert sorted(want, key=lambda n: -scores[n]) == sorted(want, key=lambda n: best[n]) or \
        len(set(scores[n] for n in want)) < len(want)          # ranks agree (up to equal rounded scores)
    assert svc.devices() == {d: {"running": tr.running, "now": tr.now} for d, tr in ref.trackers.items()}


@pytest.mark.parametrize("node_cache_capable", [True, False])
def test_pods_that_are_not_ours_or_cannot_be_read(served, node_cache_capable):
    client, svc, ref, clock = served
    names = ["node-2", "node-3"]
    res = client.post("/extender/filter", json=extender_args(pod("p-2", None), names, node_cache_capable)).json()
    _check_filter_shape(res, node_cache_capable)
    assert _names(res) == names and not res["FailedNodes"] and not res["FailedAndUnresolvableNodes"]
    prio = client.post("/extender/prioritize", json=extender_args(pod("p-2", None), names, node_cache_capable)).json()
    assert prio == [{"Host": "node-2", "Score": 0}, {"Host": "node-3", "Score": 0}]
    for bad, why in [({**ANN, "interfpred.io/batch-size": "eight"}, "batch-size 'eight' must be a positive integer"),
                     ({**ANN, "interfpred.io/slo-ms": "-3"}, "slo-ms '-3' must be a latency"),
                     ({**ANN, "interfpred.io/model": "bert"}, "no profile for model 'bert'")]:
        res = client.post("/extender/filter", json=extender_args(pod("p-3", bad), names, node_cache_capable)).json()
        _check_filter_shape(res, node_cache_capable)
        assert _names(res) == [] and set(res["FailedAndUnresolvableNodes"]) == set(names)
        assert all(why in v for v in res["FailedAndUnresolvableNodes"].values())


def test_a_pod_without_uid_and_go_nil_slices(served):
    client, svc, ref, clock = served
    p = pod("x", ANN)
    del p["metadata"]["uid"]
    args = {"Pod": p, "Nodes": {"metadata": {}, "items": None}, "NodeNames": None}   # Go's nil slice is null
    res = client.post("/extender/filter", json=args).json()
    assert res["Nodes"] == {"metadata": {}, "items": []} and res["NodeNames"] is None
    res = client.post("/extender/filter", json=extender_args(p, ["node-3"], True)).json()
    assert res["NodeNames"] == ["node-3"]


def test_malformed_extender_args_get_400(served):
    client, svc, ref, clock = served
    good = extender_args(pod("p", ANN), ["node-2"], True)
    cases = [{**good, "Nodes": {"items": []}},                    # both forms
             {"Pod": good["Pod"], "Nodes": None, "NodeNames": None},
             {**good, "NodeNames": "node-2"}, {**good, "Pod": None}, {**good, "Extra": 1},
             {"Pod": good["Pod"], "Nodes": {"items": [{"metadata": {}}]}, "NodeNames": None},
             {"Pod": {**good["Pod"], "metadata": {"annotations": ["x"]}}, "NodeNames": ["a"]}]
    before = copy.deepcopy(svc.devices())
    for body in cases:
        for verb in ("filter", "prioritize"):
            r = client.post(f"/extender/{verb}", json=body)
            assert r.status_code == 400 and r.text.count("\n") == 1, (body, r.text)
    assert svc.devices() == before


def test_prioritize_reuses_the_filter_only_while_nothing_happens(served):
    from interfpred.serving.service.extender import priorities

    client, svc, ref, clock = served
    names = ["node-1", "node-2", "node-3"]
    args = extender_args(pod("p-9", ANN), names, True)

    def expected():
        t = svc.now()
        every = ref.assess_all(("p-9", "vgg19", 8), t + 120.0, t)
        best = {n: min(every[f"{n}/gpu{j}"][1] for j in range(2) if every[f"{n}/gpu{j}"][0])
                for n in names if any(every[f"{n}/gpu{j}"][0] for j in range(2))}
        return priorities(names, best)

    client.post("/extender/filter", json=args)
    want = expected()
    clock.s += 0.2                  # later, nothing happened: the filter's assessment (at its time) is reused
    assert client.post("/extender/prioritize", json=args).json() == want
    for dev in ("node-2/gpu0", "node-2/gpu1"):   # node-2 gets busy: prioritize assesses again, at the new time
        t = svc.now()
        body = {"device": dev, "id": f"busy-{dev}", "model": "vit_b16", "batch_size": 16, "t": t, "deadline": t + 1e4}
        assert client.post("/v1/start", json=body).status_code == 200
        ref.start(dev, body["id"], "vit_b16", 16, t, deadline=t + 1e4)
    got = client.post("/extender/prioritize", json=args).json()
    assert got == expected() and got != want
