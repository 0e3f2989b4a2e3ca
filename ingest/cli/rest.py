"""`lakeconnect rest`: Kafka Connect's REST API for this worker's lake, until interrupted; and the server
options `lakeconnect worker` shares."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from ingest.rest.listener import DEFAULT_LISTENER

CREDENTIALS_ENV = "LAKECONNECT_REST_CREDENTIALS"
TLS_KEY_PASSWORD_ENV = "LAKECONNECT_REST_TLS_KEY_PASSWORD"


def server_options(args, listen: str) -> dict[str, Any]:
    """RestServer's keyword arguments from the command's options, checked (ConfigError naming the flag)."""
    from ingest.errors import ConfigError, Problem
    from ingest.rest.guard import require_authentication
    from ingest.rest.server import Tls, load_credentials, parse_listener

    credentials_file = args.credentials or os.environ.get(CREDENTIALS_ENV)
    credentials = load_credentials(credentials_file) if credentials_file else None
    require_authentication(parse_listener(listen).host, bool(credentials))
    allowed = [h for h in (args.allowed_hosts or "").split(",") if h.strip()]
    if args.tls_key and not args.tls_cert:
        raise ConfigError([Problem("--tls-key", "a key without a certificate: give --tls-cert FILE too")])
    tls = Tls(args.tls_cert, args.tls_key, os.environ.get(TLS_KEY_PASSWORD_ENV)) if args.tls_cert else None
    if args.client_timeout <= 0:
        raise ConfigError([Problem("--client-timeout", f"expected a number of seconds above 0, got "
                                                       f"{args.client_timeout:g}")])
    return {"credentials": credentials, "allowed_hosts": allowed, "tls": tls, "client_timeout": args.client_timeout}


def cmd_rest(args) -> int:
    from ingest.runtime.worker import Worker
    from ingest.rest.app import ConnectApi
    from ingest.rest.server import RestServer

    options = server_options(args, args.listen)
    server = RestServer(ConnectApi(Worker.load(args.worker)), args.listen, **options)
    # SIGTERM (Airflow, systemd, a test) ends the server as Ctrl-C does: requests in flight finish.
    signal.signal(signal.SIGTERM, _interrupt)
    auth = "basic authentication" if options["credentials"] else "no authentication"
    print(f"REST API listening on {server.url} ({auth}); Ctrl-C stops it", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("REST API stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def add_server_arguments(p: argparse.ArgumentParser, listen_default: str | None, listen_help: str) -> None:
    p.add_argument("--listen", default=listen_default, metavar="LISTENER", help=listen_help)
    p.add_argument("--credentials", metavar="FILE",
                   help="require basic authentication: a file of user=password lines, as Kafka Connect's "
                        f"PropertyFileLoginModule reads (default: ${CREDENTIALS_ENV})")
    p.add_argument("--allowed-hosts", metavar="HOSTS",
                   help="comma-separated host names clients reach the server by, besides the one it listens on and "
                        "the loopback names (checked against each request's Host header; * for any)")
    p.add_argument("--tls-cert", metavar="FILE",
                   help="serve HTTPS (listen on https://HOST:PORT) with this PEM certificate, its chain after it")
    p.add_argument("--tls-key", metavar="FILE",
                   help="the certificate's PEM private key, if not in --tls-cert's file (an encrypted key's "
                        f"password: ${TLS_KEY_PASSWORD_ENV})")
    p.add_argument("--client-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="seconds a client may take to send a request's headers, or its body (default 30)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rest", help="serve Kafka Connect's REST API for this lake (runs stay with Airflow/the CLI)")
    add_server_arguments(p, DEFAULT_LISTENER,
                         f"http://HOST:PORT or https://HOST:PORT to listen on (default {DEFAULT_LISTENER}; 0.0.0.0 "
                         "for every interface)")
    p.set_defaults(func=cmd_rest)
