"""Runs at once in one worker: different connectors' runs go on side by side up to `worker.runs.max`, more
wait in a queue of `worker.runs.queue.max` and beyond it are refused (exit 75); a worker stopped with
SIGTERM ends its runs' streams saying so (exit 75), and what they planned resumes in the next run.

A run is held in the middle by the test holding a MariaDB table's write lock (`LOCK TABLES ... WRITE`): the
JDBC source's plan waits for it, as it would for a long transaction of the database's.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
import uuid

import pymysql
import pytest

from tests.conftest import REPO, cli_here, run_here, write_worker
from tests.worker.conftest import WORKER_URL_ENV, WorkerProcess

pytestmark = [pytest.mark.slow, pytest.mark.services]


@pytest.fixture
def locked_table(services):
    """(JDBC URL of a fresh MariaDB database with table `held` of 5 rows, lock(), unlock())."""
    from sqlalchemy.engine import make_url

    admin = make_url(services["LAKECONNECT_TEST_MARIADB_URL"])
    name = f"lc_worker_{uuid.uuid4().hex[:10]}"
    connect = dict(host=admin.host, port=admin.port, user=admin.username, password=admin.password or "",
                   autocommit=True)
    with pymysql.connect(**connect) as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"CREATE TABLE {name}.held (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.execute(f"INSERT INTO {name}.held VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d'),(5,'e')")
    holder = pymysql.connect(**connect, database=name)
    base = services["LAKECONNECT_TEST_MARIADB_JDBC"].rsplit("/", 1)[0]

    def lock():
        with holder.cursor() as cur:
            cur.execute("LOCK TABLES held WRITE")

    def unlock():
        with holder.cursor() as cur:
            cur.execute("UNLOCK TABLES")

    yield f"{base}/{name}", lock, unlock
    unlock()
    holder.close()
    with pymysql.connect(**connect) as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE {name}")


def _connector(worker_file, name: str, url: str, table: str, **extra: str) -> None:
    path = worker_file.parent / f"{name}.json"
    path.write_text(json.dumps({"name": name, "config": {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "connection.url": url,
        "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": table, "topic.prefix": f"{name}-",
        **extra}}))
    assert cli_here("connectors", "create", str(path), worker=worker_file).returncode == 0


def _sqlite(path, rows: int) -> str:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, str(i)) for i in range(1, rows + 1)])
    con.commit()
    con.close()
    return f"jdbc:sqlite:{path}"


def _start_run(worker: WorkerProcess, name: str) -> subprocess.Popen:
    """A delegating `lakeconnect run NAME --json` in the background."""
    env = {**__import__("os").environ, WORKER_URL_ENV: worker.url}
    return subprocess.Popen([sys.executable, "-m", "ingest", "--worker", str(worker.worker_file), "run", name, "--json"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _runs(worker: WorkerProcess, name: str) -> list[dict]:
    with urllib.request.urlopen(f"{worker.url}/connectors/{name}/runs", timeout=60) as r:
        return json.loads(r.read())


def _until(condition, what: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_runs_of_other_connectors_go_on_queue_and_are_refused_beyond_the_queue(tmp_path, locked_table):
    jdbc, lock, unlock = locked_table
    worker_file = write_worker(tmp_path / "worker.properties", tmp_path / "lake",
                               **{"worker.runs.max": "2", "worker.runs.queue.max": "1"})
    _connector(worker_file, "held", jdbc, "held")
    for name in ("free", "waiting", "refused"):
        _connector(worker_file, name, _sqlite(tmp_path / f"{name}.db", 3), "t")
    worker = WorkerProcess(worker_file)
    try:
        lock()
        held = _start_run(worker, "held")
        _until(lambda: [r for r in _runs(worker, "held") if r["state"] == "RUNNING"], "the held run to start")
        # a second run slot: another connector's run goes on while the first waits for its table
        free = worker.run("run", "free", "--json")
        assert free.returncode == 0 and json.loads(free.stdout)["records"] == 3, free.stderr
        assert held.poll() is None
        # both slots taken (a second held run of the same connector would be refused by its lease: exit 3)
        second = _start_run(worker, "held")
        assert second.wait(120) == 3 and "already running" in second.stderr.read()
        # hold a second slot with a run that waits for the same lock, on another connector
        _connector(worker_file, "held2", jdbc, "held")
        held2 = _start_run(worker, "held2")
        _until(lambda: [r for r in _runs(worker, "held2") if r["state"] == "RUNNING"], "the second held run")
        waiting = _start_run(worker, "waiting")
        _until(lambda: [r for r in _runs(worker, "waiting") if r["state"] == "QUEUED"], "a queued run")
        refused = worker.run("run", "refused")
        assert refused.returncode == 75, refused.stderr
        assert "HTTP 429" in refused.stderr and "worker.runs.queue.max=1" in refused.stderr
        unlock()
        outs = {name: (p.wait(120), p.stdout.read(), p.stderr.read())
                for name, p in (("held", held), ("held2", held2), ("waiting", waiting))}
        for name, (code, out, err) in outs.items():
            assert code == 0, f"{name}: {err}"
            assert json.loads(out)["records"] == (5 if name.startswith("held") else 3)
        assert "queued behind 1 run(s)" in outs["waiting"][2]
        assert [r["state"] for r in _runs(worker, "refused")] == []
    finally:
        unlock()
        worker.close()


def test_a_worker_stopped_during_a_run_ends_its_stream_and_the_next_run_goes_on(tmp_path, locked_table):
    jdbc, lock, unlock = locked_table
    worker_file = write_worker(tmp_path / "worker.properties", tmp_path / "lake",
                               **{"worker.shutdown.timeout.ms": "2000"})
    _connector(worker_file, "held", jdbc, "held")
    worker = WorkerProcess(worker_file)
    try:
        lock()
        run = _start_run(worker, "held")
        _until(lambda: [r for r in _runs(worker, "held") if r["state"] == "RUNNING"], "the run to start")
        started = time.monotonic()
        assert worker.stop(signal.SIGTERM) == 0, worker.log()
        assert time.monotonic() - started < 30
        assert run.wait(60) == 75
        err = run.stderr.read()
        assert "the worker shut down during this run's batch" in err and "the next run resumes the batch" in err
        assert "worker stopping: no new runs" in worker.log()
    finally:
        unlock()
        worker.close()
    (report,) = run_here(worker_file, "held")
    assert report.records == 5


def test_a_run_until_caught_up_stops_after_its_batch_when_asked(tmp_path):
    worker_file = write_worker(tmp_path / "worker.properties", tmp_path / "lake")
    _connector(worker_file, "src", _sqlite(tmp_path / "src.db", 4), "t")
    assert [r.outcome for r in run_here(worker_file, "src", until_caught_up=True, stop=lambda: True)] == ["COMMITTED"]
    con = sqlite3.connect(tmp_path / "src.db")
    con.execute("INSERT INTO t VALUES (5, '5')")
    con.commit()
    con.close()
    assert [r.outcome for r in run_here(worker_file, "src", until_caught_up=True)] == ["COMMITTED", "EMPTY"]


def test_a_runs_secrets_stay_out_of_its_stream_its_history_and_the_worker_log(tmp_path, locked_table):
    """The database refuses the connector's user, and its message names the user, who is also the password:
    the run's error, its log lines, the worker's list of runs and its own log all show `[hidden]` instead."""
    jdbc, _, _ = locked_table
    secret = f"wk-{uuid.uuid4().hex[:12]}"
    worker_file = write_worker(tmp_path / "worker.properties", tmp_path / "lake")
    _connector(worker_file, "denied", jdbc, "held", **{"connection.user": secret, "connection.password": secret,
                                                       "connection.attempts": "1"})
    worker = WorkerProcess(worker_file)
    try:
        done = worker.run("run", "denied")
        runs = json.dumps(_runs(worker, "denied"))
    finally:
        worker.close()
    assert done.returncode != 0 and "error: " in done.stderr
    assert "[hidden]" in done.stderr + runs
    for text in (done.stdout, done.stderr, runs, worker.log()):
        assert secret not in text
