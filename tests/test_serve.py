"""``interfpred serve``: the endpoints answer as the library does, the journal replays exactly, refusals change nothing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("prometheus_client")

from _serve_fixtures import MODELS, close, reference_fleet, write_inputs  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from interfpred.cli import main  # noqa: E402
from interfpred.serving.service.app import create_app  # noqa: E402
from interfpred.serving.service.core import open_service  # noqa: E402


class Clock:
    """A wall clock the test moves (seconds)."""

    def __init__(self) -> None:
        self.s = 1000.0

    def __call__(self) -> float:
        return self.s


@pytest.fixture(scope="module", params=["rls", "entity_rls"])
def inputs(request, tmp_path_factory):
    return write_inputs(tmp_path_factory.mktemp(f"serve_{request.param}"), predictor=request.param)


def _client(svc, **kw):
    return TestClient(create_app(svc, **kw), raise_server_exceptions=True)


def _drive(rng, client, ref, t, running, nxt, check):
    """One random event on both the service (over HTTP) and the reference fleet; questions compared to 1e-9."""
    devices = ref.devices
    t += float(rng.uniform(0.5, 15.0))
    if running and rng.random() < 0.45:
        victim = running.pop(int(rng.integers(len(running))))
        if rng.random() < 0.1:
            assert client.post("/v1/cancel", json={"id": victim, "t": t}).status_code == 200
            ref.cancel(victim, t)
        else:
            r = client.post("/v1/finish", json={"id": victim, "t": t})
            assert r.status_code == 200, r.text
            want = ref.finish(victim, t)
            got = r.json()
            assert close(got["predicted_latency_ms"], want.predicted_latency_ms)
            assert close(got["latency_ms"], want.latency_ms) and got["learned"] == want.learned
    else:
        dev = devices[int(rng.integers(len(devices)))]
        model, batch = MODELS[int(rng.integers(len(MODELS)))], int(rng.integers(1, 17))
        deadline = t + float(rng.uniform(20.0, 400.0))
        body = {"device": dev, "id": f"x{nxt}", "model": model, "batch_size": batch, "t": t, "deadline": deadline}
        r = client.post("/v1/start", json=body)
        try:
            ref.start(dev, f"x{nxt}", model, batch, t, deadline=deadline)
        except Exception:
            assert r.status_code == 422, r.text        # full device: refused alike
        else:
            assert r.status_code == 200, r.text
            running.append(f"x{nxt}")
        nxt += 1
    if check:
        cand = {"id": "cand", "model": MODELS[int(rng.integers(len(MODELS)))], "batch_size": int(rng.integers(1, 17))}
        for dev in devices:
            got = client.post("/v1/what_if", json={"device": dev, "candidates": [cand], "t": t}).json()["ends"]
            want = ref.trackers[dev].what_if([(cand["id"], cand["model"], cand["batch_size"])], t)
            assert list(got) == list(want)
            assert all(close(got[k], want[k]) for k in want)
        deadline = t + float(rng.uniform(10.0, 200.0))
        got = client.post("/v1/choose_device", json={"candidate": cand, "deadline": deadline, "t": t}).json()
        assert got["device"] == ref.choose_device((cand["id"], cand["model"], cand["batch_size"]), deadline, t)
    return t, nxt


def test_endpoints_answer_as_the_library_and_a_restart_replays(inputs, tmp_path):
    model_file, fleet_file = inputs
    ref = reference_fleet(model_file, fleet_file)
    state = tmp_path / "state"
    rng = np.random.default_rng(5)
    t, nxt, running = 0.0, 0, []
    for life in range(4):        # three restarts: two crashes (no snapshot) and a clean one; snapshots every 13
        svc = open_service(model_file, fleet_file, state, clock=Clock(), snapshot_every=13)
        client = _client(svc)
        devs = client.get("/v1/devices").json()["devices"]
        assert {d: sorted(v["running"]) for d, v in devs.items()} == {d: sorted(tr.running)
                                                                    for d, tr in ref.trackers.items()}
        for step in range(40):
            t, nxt = _drive(rng, client, ref, t, running, nxt, check=step % 4 == 0 or step == 0)
        if life == 2:
            svc.close()
        else:
            svc.journal.close()       # a crash: nothing written after the last acknowledged event
    assert nxt > 60


def test_refused_requests_change_nothing(inputs, tmp_path):
    model_file, fleet_file = inputs
    svc = open_service(model_file, fleet_file, tmp_path / "state", clock=Clock())
    token = b"s3cret-token-0123456789"
    client = _client(svc, token=token, max_body_bytes=4096)
    auth = {"Authorization": "Bearer " + token.decode()}
    assert client.post("/v1/start", json={"device": "node-0/gpu0", "id": "a", "model": "vgg19", "batch_size": 8,
                                          "t": 1.0}, headers=auth).status_code == 200
    log = tmp_path / "state" / "log.jsonl"
    before = (client.get("/v1/devices", headers=auth).json()["devices"], log.read_bytes())
    good = {"device": "node-0/gpu0", "id": "b", "model": "vgg19", "batch_size": 8, "t": 2.0}   # would start
    rng = np.random.default_rng(0)
    bad: list[tuple[str, object, dict]] = [
        ("/v1/start", good, {}),                                             # no token
        ("/v1/start", good, {"Authorization": "Bearer wrong"}),
        ("/v1/start", good, {"Authorization": token.decode()}),              # not "Bearer ..."
        ("/v1/start", b"{", auth), ("/v1/start", b"", auth), ("/v1/start", b"\xff\xfe", auth),
        ("/v1/start", b"[" * 5000 + b"]" * 5000, auth), ("/v1/start", b"[" * 70 + b"]" * 70, auth),
        ("/v1/start", b'{"t": NaN}', auth), ("/v1/start", b"x" * 5000, auth),
        ("/v1/start", {**good, "device": "node-9/gpu0"}, auth), ("/v1/start", {**good, "model": "zz"}, auth),
        ("/v1/start", {**good, "batch_size": True}, auth), ("/v1/start", {**good, "batch_size": "8"}, auth),
        ("/v1/start", {**good, "batch_size": 2.5}, auth), ("/v1/start", {**good, "id": "a"}, auth),
        ("/v1/start", {**good, "t": 0.5}, auth), ("/v1/start", {**good, "deadline": 1.0}, auth),
        ("/v1/start", {**good, "extra": 1}, auth), ("/v1/start", {**good, "id": ""}, auth),
        ("/v1/start", {**good, "t": 1e300}, auth), ("/v1/start", [good], auth),
        ("/v1/finish", {"id": "zz", "t": 3.0}, auth), ("/v1/finish", {"id": "a", "t": -1.0}, auth),
        ("/v1/cancel", {"id": 7}, auth), ("/v1/what_if", {"device": "node-0/gpu0", "candidates": "x"}, auth),
        ("/v1/what_if", {"device": "nope", "candidates": [], "t": 5.0}, auth),
        ("/v1/what_if", {"device": "node-0/gpu0", "t": 5.0,
                         "candidates": [{"id": "a", "model": "vgg19", "batch_size": 1}]}, auth),
        ("/v1/choose_device", {"candidate": {"id": "c", "model": "vgg19", "batch_size": 1}, "t": 0.0}, auth),
        ("/extender/filter", {"Pod": {}, "Nodes": None, "NodeNames": None}, auth),
        ("/extender/filter", {"Pod": {}, "NodeNames": [1]}, auth),
        ("/extender/prioritize", {"Pod": [], "NodeNames": []}, auth),
        ("/extender/filter", {"Pod": {}, "NodeNames": ["n"] * 2}, auth),
        ("/extender/filter", {"Pod": {}, "NodeNames": [f"n{i}" for i in range(5001)]}, auth),
    ]
    while len(bad) < 1000:        # random mutations of a good body: wrong types, missing and unknown fields
        body = dict(good)
        key = str(rng.choice([*good, "zz"]))
        choice = int(rng.integers(6))
        if choice == 0 and key in body:
            body.pop(key)
            if key == "t":
                body["batch_size"] = 0
        else:
            body[key] = [None, [], {}, "x" * 300, -1, 10**30][choice % 6]
        if key == "t" and choice == 1:
            body[key] = "1"
        bad.append(("/v1/start", body, auth))
    for path, body, headers in bad:
        kw = {"content": body} if isinstance(body, bytes) else {"json": body}
        r = client.post(path, headers=headers, **kw)
        assert 400 <= r.status_code < 500, (path, body, r.status_code, r.text)
        assert r.text.count("\n") == 1 and r.text.strip(), r.text     # one line
    assert (client.get("/v1/devices", headers=auth).json()["devices"], log.read_bytes()) == before
    assert client.get("/healthz").status_code == 200                   # the probe needs no token
    assert client.get("/metrics").status_code == 401
    assert client.get("/nope", headers=auth).status_code == 404
    svc.close()


def test_metrics(inputs, tmp_path):
    model_file, fleet_file = inputs
    svc = open_service(model_file, fleet_file, tmp_path / "state", clock=Clock())
    client = _client(svc)
    client.post("/v1/start", json={"device": "node-1/gpu0", "id": "a", "model": "vgg19", "batch_size": 8, "t": 1.0})
    client.post("/v1/start", json={"device": "node-1/gpu0", "id": "b", "model": "resnet50", "batch_size": 4, "t": 2.0})
    client.post("/v1/finish", json={"id": "a", "t": 40.0})
    text = client.get("/metrics").text
    assert 'interfpred_running_batches{device="node-1/gpu0"} 1.0' in text
    assert 'interfpred_running_batches{device="node-0/gpu0"} 0.0' in text
    assert 'interfpred_request_seconds_count{endpoint="start"} 2.0' in text
    assert "interfpred_finish_relative_error_count 1.0" in text
    assert 'interfpred_responses_total{endpoint="finish",status="200"} 1.0' in text
    svc.close()


def test_state_folder_is_held_by_one_server(inputs, tmp_path):
    from interfpred.errors import InterfpredError

    model_file, fleet_file = inputs
    svc = open_service(model_file, fleet_file, tmp_path / "state")
    with pytest.raises(InterfpredError, match="another interfpred serve holds this state folder"):
        open_service(model_file, fleet_file, tmp_path / "state")
    svc.close()
    open_service(model_file, fleet_file, tmp_path / "state").close()


def test_journal_refuses_damage_but_drops_a_torn_tail(inputs, tmp_path):
    from interfpred.errors import InterfpredError

    model_file, fleet_file = inputs
    svc = open_service(model_file, fleet_file, tmp_path / "s")
    for i in range(3):
        svc.start("node-0/gpu0", f"a{i}", "vgg19", 4, t=float(i))
    svc.journal.close()
    log = tmp_path / "s" / "log.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines) + lines[2][:20])                 # torn: dropped, file cut back
    svc = open_service(model_file, fleet_file, tmp_path / "s")
    assert sorted(svc.devices()["node-0/gpu0"]["running"]) == ["a0", "a1", "a2"]
    svc.journal.close()
    assert log.read_bytes() == b"".join(lines)
    log.write_bytes(lines[0] + lines[1].replace(b'"a1"', b'"b1"') + lines[2])     # CRC fails mid-file
    with pytest.raises(InterfpredError, match="line 2: damaged"):
        open_service(model_file, fleet_file, tmp_path / "s")


def test_snapshot_of_a_different_fleet_is_refused(inputs, tmp_path):
    from interfpred.errors import InterfpredError

    model_file, fleet_file = inputs
    open_service(model_file, fleet_file, tmp_path / "s").close()
    spec = json.loads(fleet_file.read_text())
    spec["devices"] = spec["devices"][:1]
    other = fleet_file.parent / "fleet_small.json"
    other.write_text(json.dumps(spec))
    with pytest.raises(InterfpredError, match="devices differ"):
        open_service(model_file, other, tmp_path / "s")


def test_cli_without_the_extra_says_how_to_install(monkeypatch, capsys, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a))
    assert main(["serve", "--model-file", "m.json", "--fleet", "f.json", "--state", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'pip install "interfpred[serve]"' in err[0]
    assert not (tmp_path / "s").exists()


def test_cli_refuses_an_exposed_address_without_a_token(inputs, capsys, tmp_path):
    model_file, fleet_file = inputs
    argv = ["serve", "--model-file", str(model_file), "--fleet", str(fleet_file), "--state", str(tmp_path / "s")]
    assert main([*argv, "--host", "0.0.0.0"]) == 2
    assert "is not loopback: give --token-file" in capsys.readouterr().err
    short = tmp_path / "token"
    short.write_text("abc\n")
    assert main([*argv, "--host", "0.0.0.0", "--token-file", str(short)]) == 2
    assert "16 to 4096 printable ASCII" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
    assert main([*argv, "--tls-client-ca", "ca.pem"]) == 2
    assert "--tls-client-ca needs --tls-cert" in capsys.readouterr().err


def test_clock_defaults(inputs, tmp_path):
    """Requests without ``t`` are stamped on the service's clock: ms since the folder's first start."""
    model_file, fleet_file = inputs
    clock = Clock()
    svc = open_service(model_file, fleet_file, tmp_path / "s", clock=clock)
    client = _client(svc)
    clock.s += 0.25
    r = client.post("/v1/start", json={"device": "node-0/gpu0", "id": "a", "model": "vgg19", "batch_size": 8})
    assert r.json()["t"] == pytest.approx(250.0)
    svc.close()
    clock.s += 1.0
    svc = open_service(model_file, fleet_file, tmp_path / "s", clock=clock)       # the epoch survives a restart
    assert svc.now() == pytest.approx(1250.0)
    assert math.isinf(svc.fleet.deadline("a"))
    svc.close()


def test_a_body_without_length_is_cut_at_the_limit(inputs, tmp_path):
    """A chunked body (no Content-Length) is counted as it arrives and refused once over the limit."""
    model_file, fleet_file = inputs
    svc = open_service(model_file, fleet_file, tmp_path / "state", clock=Clock())
    client = _client(svc, max_body_bytes=2048)

    def chunks(n):
        yield b'{"device": "node-0/gpu0", "id": "'
        for _ in range(n):
            yield b"a" * 100
        yield b'", "model": "vgg19", "batch_size": 8, "t": 1.0}'

    r = client.post("/v1/start", content=chunks(40))
    assert r.status_code == 413 and r.text == "request body over 2048 bytes\n"
    r = client.post("/v1/start", content=chunks(1))
    assert r.status_code == 200, r.text
    assert svc.seq == 1
    svc.close()
