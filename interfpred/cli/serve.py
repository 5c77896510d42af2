"""``interfpred serve``: a fleet of trackers as an HTTP service and a kube-scheduler extender (docs/serve.md)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any

from interfpred.constants import SERVE_DEFAULT_HOST, SERVE_DEFAULT_PORT, SERVE_MAX_BODY_BYTES, SERVE_SNAPSHOT_EVERY
from interfpred.errors import InterfpredError

__all__ = ["add_serve", "run_serve"]

#: The packages the service runs on (the ``serve`` extra).
SERVE_PACKAGES = ("starlette", "uvicorn", "prometheus_client")


def add_serve(sub: Any) -> None:
    """Declare the ``serve`` subcommand."""
    p = sub.add_parser("serve", help="serve a fleet's what-if answers over HTTP, and as a kube-scheduler extender",
                       description="Hold one tracker per device of a fleet description, warm-started from a model "
                                   "file, and answer what_if, start, finish, cancel and choose_device as JSON over "
                                   "HTTP, and kube-scheduler's extender filter and prioritize calls. Starts, "
                                   "finishes and cancels are journaled in --state (fsynced before they are "
                                   "acknowledged) and replayed when the service starts again. Needs "
                                   "interfpred[serve].")
    p.add_argument("--model-file", dest="model_file", metavar="FILE", required=True,
                   help="model file written by 'interfpred fit' (each device learns on its own copy)")
    p.add_argument("--fleet", required=True, metavar="FILE",
                   help="fleet description (JSON: profiles, devices with node, device and gpu)")
    p.add_argument("--state", required=True, metavar="DIR",
                   help="state folder: snapshot and journal (created if missing; one server at a time)")
    p.add_argument("--host", default=SERVE_DEFAULT_HOST,
                   help=f"address to listen on (default {SERVE_DEFAULT_HOST}; any other than loopback needs "
                        "--token-file or --tls-client-ca)")
    p.add_argument("--port", type=int, default=SERVE_DEFAULT_PORT,
                   help=f"port (default {SERVE_DEFAULT_PORT}; 0 takes a free one, printed on stderr)")
    p.add_argument("--token-file", dest="token_file", metavar="FILE",
                   help="file holding the bearer token every request must carry (Authorization: Bearer ...)")
    p.add_argument("--tls-cert", dest="tls_cert", metavar="FILE", help="server certificate (PEM): serve HTTPS")
    p.add_argument("--tls-key", dest="tls_key", metavar="FILE", help="the certificate's private key (PEM)")
    p.add_argument("--tls-client-ca", dest="tls_client_ca", metavar="FILE",
                   help="CA (PEM) whose certificates clients must present: mutual TLS")
    p.add_argument("--max-body-bytes", dest="max_body_bytes", type=int, default=SERVE_MAX_BODY_BYTES,
                   help=f"largest request body (default {SERVE_MAX_BODY_BYTES})")
    p.add_argument("--snapshot-every", dest="snapshot_every", type=int, default=SERVE_SNAPSHOT_EVERY,
                   help=f"journal records between snapshots (default {SERVE_SNAPSHOT_EVERY})")
    p.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """Run ``serve`` until interrupted."""
    missing = [m for m in SERVE_PACKAGES if importlib.util.find_spec(m) is None]
    if missing:
        raise InterfpredError(f"interfpred serve needs {', '.join(missing)}: pip install \"interfpred[serve]\"")
    if not 0 <= args.port <= 65535:
        raise InterfpredError(f"--port {args.port} must be in 0..65535")
    if args.max_body_bytes < 1024:
        raise InterfpredError(f"--max-body-bytes {args.max_body_bytes} must be at least 1024")
    if args.snapshot_every < 1:
        raise InterfpredError(f"--snapshot-every {args.snapshot_every} must be at least 1")
    from interfpred.serving.service.app import check_exposure, read_token, run_server
    from interfpred.serving.service.core import open_service

    token = None if args.token_file is None else read_token(args.token_file)
    check_exposure(args.host, token is not None, args.tls_cert, args.tls_key, args.tls_client_ca)
    service = open_service(args.model_file, args.fleet, args.state, snapshot_every=args.snapshot_every)

    def announce(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    run_server(service, host=args.host, port=args.port, token=token, tls_cert=args.tls_cert, tls_key=args.tls_key,
               tls_client_ca=args.tls_client_ca, max_body_bytes=args.max_body_bytes, announce=announce)
    return 0
