"""Runs sent to a long-running worker (`lakeconnect worker`) instead of run in this process.

`lakeconnect run` and Airflow's tasks send a run here when $LAKECONNECT_WORKER_URL or the worker config's
`worker.url` names a worker. The run's log lines, batch reports and exit code come back as the worker's
run stream (ingest/runtime/runs.py) and are shown as an in-process run shows them. This module imports no
Spark, Arrow or pandas: a delegating command costs an interpreter's start and a few small imports.

Exit codes are the CLI's: 0, 2 (bad input: an unknown connector, a bad request, a URL that is not a
worker), 3 (the task is already running), 75 (retriable: the worker is down, busy or shutting down, or
stopped during the run, whose batch the next run resumes) and 1.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from ingest.config.configdef import redact_url

WORKER_URL_ENV = "LAKECONNECT_WORKER_URL"
CA_FILE_ENV = "LAKECONNECT_WORKER_CA_FILE"
CONNECT_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 120.0
"""Seconds without a line from the worker before the client gives up on it (the worker sends a blank line
every `ingest.rest.server.HEARTBEAT_S` seconds while a batch is quiet)."""
NDJSON = "application/x-ndjson"
EXIT_BAD_INPUT, EXIT_CONCURRENT, EXIT_RETRIABLE = 2, 3, 75
MAX_LINE = 1 << 20


def worker_url(worker_file: str | None) -> str | None:
    """The worker runs go to: $LAKECONNECT_WORKER_URL (empty: none, run here), else `worker.url`."""
    if WORKER_URL_ENV in os.environ:
        return os.environ[WORKER_URL_ENV].strip() or None
    from ingest.config.worker import WORKER_URL, load_worker

    return load_worker(worker_file)[WORKER_URL] or None


@dataclass
class RemoteRun:
    """What a delegated run gave: its exit code and error line, and its reports as `--json` prints them."""

    exit_code: int = 0
    error: str | None = None
    reports: list[dict[str, Any]] = field(default_factory=list)


def run_remote(url: str, name: str, *, task: int | None = None, until_caught_up: bool = False,
               skip_missing_task: bool = False, on_log: Callable[[str], None],
               on_result: Callable[[dict[str, Any], str], None]) -> RemoteRun:
    """Asks the worker at `url` for a run of connector `name` and follows it to its end. `on_log(line)` gets
    each log line, `on_result(report, summary)` each batch report (or the not-run notice)."""
    shown = redact_url(url)
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host or port is None:
        return RemoteRun(EXIT_BAD_INPUT, f"the worker URL '{shown[:200]}' is not http://HOST:PORT or "
                                         f"https://HOST:PORT; fix ${WORKER_URL_ENV} or worker.url")
    if parts.scheme == "https":
        context = ssl.create_default_context(cafile=os.environ.get(CA_FILE_ENV) or None)
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(host, port, timeout=CONNECT_TIMEOUT_S,
                                                                             context=context)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=CONNECT_TIMEOUT_S)
    body = json.dumps({"task": task, "until_caught_up": until_caught_up, "skip_missing_task": skip_missing_task})
    headers = {"Content-Type": "application/json", "Accept": NDJSON}
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
    try:
        connection.request("POST", f"/connectors/{quote(name, safe='')}/runs", body=body, headers=headers)
        response = connection.getresponse()
    except (OSError, http.client.HTTPException) as e:
        connection.close()
        return RemoteRun(EXIT_RETRIABLE, f"the worker at {shown} is not reachable ({_reason(e)}); nothing was run. "
                                         f"Start it (`lakeconnect worker`), or unset ${WORKER_URL_ENV} and "
                                         "worker.url to run in this process")
    try:
        if response.status != 200 or not response.getheader("Content-Type", "").startswith(NDJSON):
            return _refusal(response, shown, name)
        if connection.sock is not None:
            connection.sock.settimeout(IDLE_TIMEOUT_S)
        return _follow(response, shown, on_log, on_result)
    finally:
        connection.close()


def _follow(response: http.client.HTTPResponse, shown: str, on_log: Callable[[str], None],
            on_result: Callable[[dict[str, Any], str], None]) -> RemoteRun:
    result = RemoteRun()
    try:
        while True:
            line = response.readline(MAX_LINE)
            if not line:
                break
            if not line.strip():
                continue  # the worker's heartbeat
            try:
                event = json.loads(line)
                if not isinstance(event, dict):
                    raise ValueError("not an object")
            except ValueError:
                return RemoteRun(EXIT_BAD_INPUT, f"the worker at {shown} sent a line that is not JSON; is it a "
                                                 "lakeconnect worker?")
            if "log" in event:
                on_log(str(event["log"]))
            elif "report" in event:
                result.reports.append(event["report"])
                on_result(event["report"], str(event.get("summary", "")))
            elif "not_run" in event:
                on_result(event["not_run"], str(event.get("summary", "")))
            elif "exit_code" in event:
                code, error = event["exit_code"], event.get("error")
                if not isinstance(code, int) or isinstance(code, bool) or not isinstance(error, (str, type(None))):
                    return RemoteRun(EXIT_BAD_INPUT, f"the worker at {shown} ended the run with an exit code that is "
                                                     "not one; is it a lakeconnect worker?")
                result.exit_code, result.error = code, error
                return result
    except (OSError, http.client.HTTPException) as e:
        reason = _reason(e)
    else:
        reason = "the stream ended"
    return RemoteRun(EXIT_RETRIABLE, f"the worker at {shown} stopped answering during the run ({reason}); what "
                                     "was committed stays committed and the next run resumes the batch",
                     result.reports)


def _refusal(response: http.client.HTTPResponse, shown: str, name: str) -> RemoteRun:
    """A run the worker did not start: Kafka Connect's error JSON, or an answer that is not a worker's."""
    text = response.read(64 * 1024)
    message = None
    try:
        found = json.loads(text)
        if isinstance(found, dict) and isinstance(found.get("message"), str):
            message = found["message"]
    except ValueError:
        pass
    status = response.status
    kind = response.getheader("Content-Type", "none").split(";")[0][:100]
    if message is None or (status == 404 and message.startswith("HTTP 404")) or status == 200:
        return RemoteRun(EXIT_BAD_INPUT, f"the worker URL {shown} answered HTTP {status} ({kind}), not a run: it "
                                         "is not a lakeconnect worker (`lakeconnect rest` and Kafka Connect run no "
                                         f"batches); fix ${WORKER_URL_ENV} or worker.url")
    if status == 404 and message.startswith("this REST server runs no batches"):
        return RemoteRun(EXIT_BAD_INPUT, f"the REST server at {shown} runs no batches (it is `lakeconnect rest`); "
                                         f"point ${WORKER_URL_ENV} or worker.url at a `lakeconnect worker`")
    if status == 404:
        return RemoteRun(EXIT_BAD_INPUT, f"connector '{name}' not found by the worker at {shown} ({message}); "
                                         "create it with `lakeconnect connectors create FILE`")
    if status in (401, 403):
        return RemoteRun(EXIT_BAD_INPUT, f"the worker at {shown} refused the request (HTTP {status}: {message}); "
                                         "give its user and password in the URL (http://USER:PASSWORD@HOST:PORT)")
    if status == 409:
        return RemoteRun(EXIT_CONCURRENT, message)
    if status in (429, 503) or status >= 500:
        return RemoteRun(EXIT_RETRIABLE, f"the worker at {shown} did not start the run (HTTP {status}: {message})")
    return RemoteRun(EXIT_BAD_INPUT, f"the worker at {shown} refused the run (HTTP {status}): {message}")


def _reason(e: BaseException) -> str:
    if isinstance(e, socket.timeout):
        return "no answer in time"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return type(e).__name__
