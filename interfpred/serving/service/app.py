"""The HTTP face of :class:`~interfpred.serving.service.core.FleetService` (Starlette; ``interfpred[serve]``).

Routes (every body JSON, every time in ms on the service's clock unless a request gives ``t``):

===========================  ===========================================================================
``POST /v1/start``           ``{"device", "id", "model", "batch_size", "t"?, "deadline"?}`` -> ``{"seq", "t"}``
``POST /v1/finish``          ``{"id", "t"?}`` -> ``{"id", "latency_ms", "predicted_latency_ms", ...}``
``POST /v1/cancel``          ``{"id", "t"?}`` -> ``{"seq", "t"}``
``POST /v1/what_if``         ``{"device", "candidates": [{"id", "model", "batch_size"}], "t"?}`` -> ``{"t", "ends"}``
``POST /v1/choose_device``   ``{"candidate": {"id", "model", "batch_size"}, "deadline"?, "t"?}`` -> ``{"t", "device"}``
``GET /v1/devices``          every device's running ids and clock
``POST /extender/filter``    kube-scheduler ``ExtenderArgs`` -> ``ExtenderFilterResult``
``POST /extender/prioritize``  ``ExtenderArgs`` -> ``HostPriorityList``
``GET /metrics``             Prometheus text: request latency, prediction error of finished batches, running
``GET /healthz``             ``ok`` (no token needed)
===========================  ===========================================================================

Every request but ``/healthz`` needs ``Authorization: Bearer <token>`` when the service has a token.
A body over ``max_body_bytes`` is refused with 413 before it is read; invalid JSON, nesting deeper
than ``SERVE_MAX_JSON_DEPTH``, a wrong field or type gets 400; a request the fleet refuses (unknown
device or model, a time before the device's clock, an id already running) 422; a missing or wrong
token 401. Each refusal is one line of text and changes nothing.
"""

from __future__ import annotations

import gc
import hmac
import importlib.util
import json
import math
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from interfpred._core.limits import json_depth
from interfpred.constants import (
    SERVE_MAX_BODY_BYTES,
    SERVE_MAX_CANDIDATES,
    SERVE_MAX_JSON_DEPTH,
    SERVE_MAX_NAME_CHARS,
    SERVE_REUSE_MS,
    TIME_HORIZON_MS,
)
from interfpred.errors import InterfpredError
from interfpred.serving.service.core import FleetService, ServiceUnavailable
from interfpred.serving.service.extender import filter_result, judge_nodes, parse_extender_args, priorities

__all__ = ["check_exposure", "create_app", "is_loopback", "read_token", "run_server"]

Name = Annotated[str, StringConstraints(min_length=1, max_length=SERVE_MAX_NAME_CHARS)]
Time = Annotated[float, Field(ge=-TIME_HORIZON_MS, le=TIME_HORIZON_MS, allow_inf_nan=False)]
Batch = Annotated[int, Field(ge=1, le=1_000_000)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class StartBody(_Body):
    device: Name
    id: Name
    model: Name
    batch_size: Batch
    t: Time | None = None
    deadline: Time | None = None


class EndBody(_Body):
    id: Name
    t: Time | None = None


class Candidate(_Body):
    id: Name
    model: Name
    batch_size: Batch

    def triple(self) -> tuple[str, str, int]:
        return (self.id, self.model, self.batch_size)


class WhatIfBody(_Body):
    device: Name
    candidates: list[Candidate] = Field(max_length=SERVE_MAX_CANDIDATES)
    t: Time | None = None


class ChooseBody(_Body):
    candidate: Candidate
    deadline: Time | None = None
    t: Time | None = None


class Refusal(Exception):
    """A request refused with an HTTP status and one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _one_line(text: str, limit: int = 500) -> str:
    return " ".join(text.split())[:limit]


def _json(obj: Any, status: int = 200) -> Response:
    return Response(json.dumps(obj, separators=(",", ":"), allow_nan=False), status_code=status,
                    media_type="application/json")


class _Metrics:
    """The service's Prometheus metrics in a registry of its own."""

    def __init__(self, service: FleetService) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.latency = Histogram("interfpred_request_seconds", "Request latency by endpoint", ["endpoint"],
                                 registry=self.registry,
                                 buckets=(1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.5, 1.0))
        self.responses = Counter("interfpred_responses", "Responses by endpoint and status", ["endpoint", "status"],
                                 registry=self.registry)
        self.error = Histogram("interfpred_finish_relative_error",
                               "|predicted - observed| / observed latency of finished batches (before learning)",
                               registry=self.registry,
                               buckets=(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0))
        service_ref = service

        class _Running:
            def collect(self) -> Any:
                g = GaugeMetricFamily("interfpred_running_batches", "Batches running per device", labels=["device"])
                for name, info in service_ref.devices().items():
                    g.add_metric([name], len(info["running"]))
                yield g

        self.registry.register(_Running())


def create_app(service: FleetService, *, token: bytes | None = None,
               max_body_bytes: int = SERVE_MAX_BODY_BYTES) -> Starlette:
    """The Starlette application serving ``service``; ``token`` (bytes) when requests must carry a bearer token."""
    metrics = _Metrics(service)
    expected = None if token is None else b"Bearer " + token

    async def body_of(request: Request) -> Any:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > max_body_bytes):
            raise Refusal(413, f"request body over {max_body_bytes} bytes")
        chunks = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body_bytes:
                raise Refusal(413, f"request body over {max_body_bytes} bytes")
            chunks.append(chunk)
        raw = b"".join(chunks)
        try:
            value = json.loads(raw, parse_constant=_reject_constant)
        except RecursionError:
            raise Refusal(400, f"JSON nested deeper than {SERVE_MAX_JSON_DEPTH}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise Refusal(400, f"invalid JSON: {_one_line(str(exc), 200)}") from None
        # (a body with no more brackets than the limit cannot nest deeper: most are not walked)
        if (isinstance(value, (dict, list)) and raw.count(b"{") + raw.count(b"[") > SERVE_MAX_JSON_DEPTH
                and json_depth(value) > SERVE_MAX_JSON_DEPTH):
            raise Refusal(400, f"JSON nested deeper than {SERVE_MAX_JSON_DEPTH}")
        return value

    async def parsed(request: Request, model: type[_Body]) -> Any:
        value = await body_of(request)
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            e = exc.errors()[0]
            where = ".".join(str(p) for p in e["loc"]) or "body"
            raise Refusal(400, f"{where}: {e['msg']}") from None

    def endpoint(name: str, open_: bool = False) -> Callable[[Callable[[Request], Awaitable[Response]]],
                                                             Callable[[Request], Awaitable[Response]]]:
        observe = metrics.latency.labels(name).observe
        counted: dict[int, Any] = {}      # status -> its counter's inc (labels looked up once)

        def wrap(fn: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
            async def handler(request: Request) -> Response:
                t0 = time.perf_counter()
                try:
                    if expected is not None and not open_:
                        got = request.headers.get("authorization", "").encode("latin-1", "replace")
                        if not hmac.compare_digest(got, expected):
                            raise Refusal(401, "missing or wrong bearer token")
                    response = await fn(request)
                except Refusal as exc:
                    response = PlainTextResponse(_one_line(str(exc)) + "\n", status_code=exc.status)
                except ServiceUnavailable as exc:
                    response = PlainTextResponse(_one_line(str(exc)) + "\n", status_code=503)
                except InterfpredError as exc:
                    response = PlainTextResponse(_one_line(str(exc)) + "\n", status_code=422)
                observe(time.perf_counter() - t0)
                inc = counted.get(response.status_code)
                if inc is None:
                    inc = counted[response.status_code] = metrics.responses.labels(name, str(response.status_code)).inc
                inc()
                return response
            return handler
        return wrap

    @endpoint("start")
    async def start(request: Request) -> Response:
        b = await parsed(request, StartBody)
        t = service.now() if b.t is None else b.t
        service.start(b.device, b.id, b.model, b.batch_size, t=t, deadline=b.deadline)
        return _json({"seq": service.seq, "t": t})

    @endpoint("finish")
    async def finish(request: Request) -> Response:
        b = await parsed(request, EndBody)
        res = service.finish(b.id, t=b.t)
        for r in service.finished:
            if math.isfinite(r.relative_error):
                metrics.error.observe(abs(r.relative_error))
        service.finished.clear()
        err = res.relative_error
        return _json({"id": b.id, "seq": service.seq, "latency_ms": res.latency_ms,
                      "predicted_latency_ms": res.predicted_latency_ms,
                      "relative_error": err if math.isfinite(err) else None, "learned": res.learned})

    @endpoint("cancel")
    async def cancel(request: Request) -> Response:
        b = await parsed(request, EndBody)
        service.cancel(b.id, t=b.t)
        return _json({"seq": service.seq})

    @endpoint("what_if")
    async def what_if(request: Request) -> Response:
        b = await parsed(request, WhatIfBody)
        t = service.now() if b.t is None else b.t
        return _json({"t": t, "ends": service.what_if(b.device, [c.triple() for c in b.candidates], t=t)})

    @endpoint("choose_device")
    async def choose_device(request: Request) -> Response:
        b = await parsed(request, ChooseBody)
        t = service.now() if b.t is None else b.t
        return _json({"t": t, "device": service.choose_device(b.candidate.triple(), b.deadline, t=t)})

    @endpoint("devices")
    async def devices(request: Request) -> Response:
        return _json({"now": service.now(), "seq": service.seq, "devices": service.devices()})

    nodes = service.spec.nodes()

    # kube-scheduler calls prioritize for a pod right after its filter: when no event came in between
    # (and within SERVE_REUSE_MS), prioritize reuses the filter's assessment, made at the filter's time.
    last: dict[str, Any] = {"key": None}

    def _judge(value: Any) -> Any:
        try:
            req = parse_extender_args(value)
        except InterfpredError as exc:
            raise Refusal(400, str(exc)) from None
        now = service.now()
        key = None if req.batch is None else (req.batch, service.seq)
        hit = key is not None and last["key"] == key and now - last["t"] <= SERVE_REUSE_MS

        def assess(cand: tuple[str, str, int], deadline: float, t: float) -> Any:
            if hit:
                return last["every"]
            every = service.assess_all(cand, deadline, t)
            last.update(key=key, t=t, every=every)
            return every

        return req, judge_nodes(req, nodes, assess, last["t"] if hit else now)

    @endpoint("filter")
    async def extender_filter(request: Request) -> Response:
        req, j = _judge(await body_of(request))
        return _json(filter_result(req, j.passing, j.failed, j.unresolvable))

    @endpoint("prioritize")
    async def extender_prioritize(request: Request) -> Response:
        req, j = _judge(await body_of(request))
        return _json(priorities(req.node_names, j.best_added))

    @endpoint("metrics")
    async def metrics_route(request: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @endpoint("healthz", open_=True)
    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok\n" if service.broken is None else f"broken: {service.broken}\n",
                                 status_code=200 if service.broken is None else 503)

    # (matched in order: the scheduler's calls first)
    routes = [Route("/extender/filter", extender_filter, methods=["POST"]),
              Route("/extender/prioritize", extender_prioritize, methods=["POST"]),
              Route("/v1/what_if", what_if, methods=["POST"]),
              Route("/v1/start", start, methods=["POST"]), Route("/v1/finish", finish, methods=["POST"]),
              Route("/v1/cancel", cancel, methods=["POST"]),
              Route("/v1/choose_device", choose_device, methods=["POST"]),
              Route("/v1/devices", devices, methods=["GET"]),
              Route("/metrics", metrics_route, methods=["GET"]), Route("/healthz", healthz, methods=["GET"])]

    async def not_found(request: Request, exc: Exception) -> Response:
        code = getattr(exc, "status_code", 404)
        return PlainTextResponse(f"{request.method} {request.url.path}: {'no such route' if code == 404 else 'method not allowed'}\n", status_code=code)

    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost``, ``127.0.0.0/8``, ``::1``).

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0"), is_loopback("localhost")
    (True, True, False, True)
    """
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: str) -> bytes:
    """The bearer token in file ``path``: its text without surrounding whitespace, printable ASCII, 16+ characters."""
    with open(path, "rb") as fh:
        raw = fh.read(4097)
    token = raw.strip()
    if len(raw) > 4096 or len(token) < 16 or not all(33 <= c < 127 for c in token):
        raise InterfpredError(f"{path}: a token is 16 to 4096 printable ASCII characters without spaces")
    return token


def check_exposure(host: str, has_token: bool, tls_cert: str | None, tls_key: str | None,
                   tls_client_ca: str | None) -> None:
    """Refuse a listening setup that would expose the service: any address but loopback needs a token or
    mutual TLS; a certificate needs its key; a client CA needs a certificate.

    >>> check_exposure("0.0.0.0", False, None, None, None)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: --host 0.0.0.0 is not loopback: give --token-file or mutual TLS (--tls-client-ca)
    """
    if (tls_cert is None) != (tls_key is None):
        raise InterfpredError("give both --tls-cert and --tls-key, or neither")
    if tls_client_ca is not None and tls_cert is None:
        raise InterfpredError("--tls-client-ca needs --tls-cert and --tls-key")
    if not is_loopback(host) and not has_token and tls_client_ca is None:
        raise InterfpredError(f"--host {host} is not loopback: give --token-file or mutual TLS (--tls-client-ca)")


def run_server(service: FleetService, *, host: str, port: int, token: bytes | None = None,
               tls_cert: str | None = None, tls_key: str | None = None, tls_client_ca: str | None = None,
               max_body_bytes: int = SERVE_MAX_BODY_BYTES, announce: Callable[[str], None] | None = None) -> None:
    """Serve ``service`` until SIGINT or SIGTERM, then snapshot and release its state folder.

    Any address but loopback needs ``token`` or mutual TLS (``tls_client_ca`` with ``tls_cert`` and
    ``tls_key``: clients must present a certificate that CA signed). ``port`` 0 takes a free port;
    ``announce`` receives the line naming the address once the socket listens.
    """
    import socket
    import ssl

    import uvicorn

    check_exposure(host, token is not None, tls_cert, tls_key, tls_client_ca)
    mtls = tls_client_ca is not None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    app = create_app(service, token=token, max_body_bytes=max_body_bytes)
    config = uvicorn.Config(app, lifespan="off", access_log=False, log_level="warning", timeout_keep_alive=30,
                            ssl_certfile=tls_cert, ssl_keyfile=tls_key, ssl_ca_certs=tls_client_ca,
                            ssl_cert_reqs=ssl.CERT_REQUIRED if mtls else ssl.CERT_NONE)
    server = uvicorn.Server(config)
    bound = sock.getsockname()[1]
    scheme = "https" if tls_cert else "http"
    if announce is not None:
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        announce(f"interfpred serve: listening on {scheme}://{shown}:{bound} ({len(service.fleet.devices)} devices, "
                 f"{service.replayed} journal events replayed)")
        missing = [m for m in ("httptools", "uvloop") if importlib.util.find_spec(m) is None]
        if missing:
            announce(f"interfpred serve: warning: uvicorn runs without {' and '.join(missing)}; on loopback each "
                     "request then took about 40x longer (44 ms against 1.1 ms for a start); pip install "
                     "'interfpred[serve]' brings them")
    # what was loaded (the model, the fleet, the replayed journal) lives as long as the server: move it out of
    # the collector's reach, so that a collection while serving scans only what requests allocate (the
    # collector's full passes over the fleet were the slowest requests)
    gc.collect()
    gc.freeze()
    try:
        server.run(sockets=[sock])
    finally:
        service.close()
        sock.close()
