"""A standalone Airflow (scheduler, DAG processor, triggerer and API server: `airflow standalone`) started
on 127.0.0.1 with the project's DAGs folder; a DAG run triggered with conf over Airflow's REST API, as a
user or another system does. A bad conf is refused by the API and changes nothing."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(url: str, method: str = "GET", body: dict | None = None, token: str | None = None):
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def _trigger(dag: str, conf: dict, token: str):
    """POST a DAG run. Standalone keeps Airflow's state in SQLite: the API server's audit-log insert can wait
    out SQLite's 5 s busy timeout while the scheduler writes, and answers 500 "Database error"; that is
    Airflow's lock, not the request's fault, so the request is made again."""
    for _ in range(5):
        status, body = _call(f"{dag}/dagRuns", "POST", {"logical_date": None, "conf": conf}, token)
        detail = body.get("detail") if isinstance(body, dict) else None
        if not (status == 500 and isinstance(detail, dict) and detail.get("reason") == "Database error"):
            break
        time.sleep(2)
    return status, body


def _until(what: str, check, timeout: float, proc: subprocess.Popen, log: Path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"airflow standalone exited: {log.read_text()[-3000:]}"
        try:
            found = check()
        except (OSError, urllib.error.URLError):
            found = None
        if found:
            return found
        time.sleep(2)
    raise AssertionError(f"{what} not within {timeout} s; last log lines:\n{log.read_text()[-3000:]}")


@pytest.mark.slow
def test_trigger_with_conf_over_the_rest_api(project, tmp_path):
    project.connector("pause-me", **{"connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                                     "connection.url": f"jdbc:sqlite:{tmp_path}/none.db", "mode": "bulk",
                                     "topic.prefix": "pm-", "table.whitelist": "t"})
    port = _free_port()
    home = tmp_path / "airflow-home"
    home.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "AIRFLOW_HOME": str(home),
           "AIRFLOW__API__HOST": "127.0.0.1", "AIRFLOW__API__PORT": str(port),
           "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
           "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",  # a token without a password: test only
           "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5"}
    log = tmp_path / "standalone.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(Path(sys.executable).with_name("airflow")), "standalone"], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _until("the API server", lambda: _call(f"{base}/api/v2/monitor/health")[0] == 200, 240, proc, log)
        token = _call(f"{base}/auth/token")[1]["access_token"]
        dag = f"{base}/api/v2/dags/lakeconnect__pause-me"
        _until("the connector's DAG", lambda: _call(dag, token=token)[0] == 200, 120, proc, log)

        status, refused = _trigger(dag, {"action": 5}, token)
        assert status == 400 and "Invalid input for param action" in refused["detail"], refused
        assert project.cli("connectors", "list").stdout.strip() == ""  # nothing was changed

        status, run = _trigger(dag, {"action": "pause"}, token)
        assert status == 200 and run["conf"] == {"action": "pause"}, run
        url = f"{dag}/dagRuns/{urllib.request.quote(run['dag_run_id'])}"
        state = _until("the run's end", lambda: (s := _call(url, token=token)[1]["state"]) in ("success", "failed")
                       and s, 240, proc, log)
        assert state == "success", log.read_text()[-3000:]
        status = json.loads(project.cli("connectors", "status", "pause-me").stdout)
        assert status["connector"]["state"] == "PAUSED"
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    """Every process standalone started: some (the API server's workers) leave its process group."""
    import psutil

    family = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    os.killpg(proc.pid, signal.SIGTERM)
    for pid in family:
        try:
            psutil.Process(pid).terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs([p for p in map(_process, family) if p], timeout=30)
    for p in alive:
        p.kill()
    proc.wait(timeout=30)


def _process(pid: int):
    import psutil

    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None
