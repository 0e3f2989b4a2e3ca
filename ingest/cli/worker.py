"""`lakeconnect worker`: a long-running process that holds one warm Spark session, serves the REST API and
runs the batches asked of it (`POST /connectors/{name}/runs`), until SIGTERM or Ctrl-C.

`lakeconnect run` and Airflow's tasks send their runs here when $LAKECONNECT_WORKER_URL or `worker.url`
names it (ingest/cli/delegate.py), so a scheduled poll costs what its data costs, not a JVM's start.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time

from ingest.cli.rest import add_server_arguments, server_options
from ingest.rest.listener import DEFAULT_LISTENER

log = logging.getLogger("lakeconnect")
FAIR = {"spark.scheduler.mode": "FAIR"}


def cmd_worker(args) -> int:
    from urllib.parse import urlsplit

    from ingest.config.worker import (RUNS_MAX, RUNS_QUEUE_MAX, SHUTDOWN_TIMEOUT_MS, WORKER_URL, load_worker,
                                      worker_path)
    from ingest.config.loader import load_properties_file
    from ingest.rest.app import ConnectApi
    from ingest.rest.server import RestServer
    from ingest.runtime.runs import RunService
    from ingest.runtime.worker import Worker

    path = worker_path(args.worker)
    given = load_properties_file(path) if path is not None else {}
    # Runs of different connectors share the session's cores fairly, each connector a scheduler pool.
    config = load_worker(args.worker, overrides={} if "spark.scheduler.mode" in given else FAIR)
    url = args.listen or config[WORKER_URL] or DEFAULT_LISTENER
    # worker.url may carry the user and password clients send: the server listens on its scheme, host and port
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        listen = f"{parts.scheme}://{parts.hostname or '127.0.0.1'}:{parts.port}" if parts.port is not None else url
    except ValueError:  # not a port: parse_listener below says what is expected
        listen = url
    options = server_options(args, listen)
    base = Worker(config)
    max_runs = config[RUNS_MAX] or 2 * (os.cpu_count() or 1)
    grace = config[SHUTDOWN_TIMEOUT_MS] / 1000
    fatal: list[str] = []
    server: RestServer | None = None

    def on_fatal(message: str) -> None:
        fatal.append(message)
        if server is not None:
            server.shutdown()

    runs = RunService(lambda: Worker(config, base.registry, base.stores), max_runs=max_runs, max_queued=config[RUNS_QUEUE_MAX],
                      on_fatal=on_fatal)

    def on_exit() -> None:
        log.info("worker stopping: no new runs; waiting up to %g s for the batches in progress", grace)
        threading.Thread(target=runs.stop, args=(grace,), name="worker-stop", daemon=True).start()

    server = RestServer(ConnectApi(base, runs), listen, shutdown_timeout=grace + 5, on_exit=on_exit, **options)
    threading.Thread(target=_warm_up, args=(base,), name="warm-up", daemon=True).start()
    auth = "basic authentication" if options["credentials"] else "no authentication"
    print(f"Worker listening on {server.url} ({auth}; {max_runs} runs at once); Ctrl-C stops it", flush=True)
    # uvicorn sends the signal that stopped it again once it has: SIGTERM then ends the command as Ctrl-C does
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    if fatal:
        print(f"error: {fatal[0]}", file=sys.stderr)
        return 1
    print("Worker stopped", file=sys.stderr)
    return 0


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _warm_up(worker) -> None:
    """Starts the Spark session and runs a first small job, so the first run does not pay for them."""
    started = time.perf_counter()
    try:
        spark = worker.spark()
        spark.range(1000).selectExpr("sum(id)").collect()
        spark.range(10).toArrow()
    except Exception as e:  # noqa: BLE001 - the first run meets the same failure and reports it
        log.warning("the worker's Spark session did not start: %s", str(e).splitlines()[0][:300] if str(e) else e)
        return
    log.info("Spark session ready in %.1f s (%s)", time.perf_counter() - started, spark.sparkContext.master)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worker", help="a long-running worker: one warm Spark session runs every batch asked of it "
                                      "over the REST API (lakeconnect run and Airflow delegate to it)")
    add_server_arguments(p, None, f"http://HOST:PORT or https://HOST:PORT to listen on (default: the worker config's "
                                  f"worker.url, else {DEFAULT_LISTENER})")
    p.set_defaults(func=cmd_worker)
