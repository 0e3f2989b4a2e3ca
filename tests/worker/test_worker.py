"""The long-running worker, end to end: `lakeconnect worker` as a process with its own Spark JVM, and
`lakeconnect run` processes sending it their runs (LAKECONNECT_WORKER_URL), on a JDBC source over SQLite.

What a run through the worker must give is what the same run in its own process gives: the reports, the
exit codes (2, 3, 75, 1), the log lines; and what one process per run made safe must hold in one long
process: a failing connector leaves the worker serving, a config change is read by the next run.
"""

from __future__ import annotations

import http.server
import json
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import REPO, cli_here, write_worker
from tests.worker.conftest import WorkerProcess, delegated

pytestmark = [pytest.mark.slow]


def _books(db, n: int, start: int = 0) -> None:
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE IF NOT EXISTS books (id INTEGER PRIMARY KEY, title TEXT NOT NULL)")
    con.executemany("INSERT INTO books (id, title) VALUES (?, ?)", [(i, f"title {i}") for i in range(start, start + n)])
    con.commit()
    con.close()


def _more(db, n: int) -> None:
    """`n` rows after the table's last (the connector reads rows above its offset only)."""
    con = sqlite3.connect(db)
    last = con.execute("SELECT COALESCE(MAX(id), 0) FROM books").fetchone()[0]
    con.close()
    _books(db, n, start=last + 1)


def _source(db, **extra: str) -> dict[str, str]:
    return {"connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
            "connection.url": f"jdbc:sqlite:{db}", "mode": "incrementing", "incrementing.column.name": "id",
            "table.whitelist": "books", "topic.prefix": "w-", **extra}


def _create(worker_file, name: str, config: dict[str, str], action: str = "create") -> None:
    path = worker_file.parent / f"{name}.json"
    path.write_text(json.dumps({"name": name, "config": config}))
    done = cli_here("connectors", action, str(path), worker=worker_file)
    assert done.returncode == 0, done.stderr


def _call(url: str, method: str, path: str, body: bytes | None = None,
          content_type: str = "application/json") -> tuple[int, str, bytes]:
    request = urllib.request.Request(url + path, data=body, method=method, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def _reports(stdout: str) -> list[dict]:
    """The JSON reports a `run --json` printed, without what differs from one run to the next (timings)."""
    out = []
    for line in stdout.splitlines():
        report = json.loads(line)
        report.pop("timings_ms", None)
        out.append(report)
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(worker process, worker file, SQLite file): a worker with its own JVM, as a user runs it."""
    root = tmp_path_factory.mktemp("served")
    worker_file = write_worker(root / "worker.properties", root / "lake")
    db = root / "books.db"
    _books(db, 100)
    _create(worker_file, "books", _source(db))
    worker = WorkerProcess(worker_file, own_jvm=True)
    yield worker, worker_file, db
    code = worker.stop()
    assert code == 0, worker.log()[-3000:]


def test_a_run_through_the_worker_gives_what_a_run_in_its_own_process_gives(served, tmp_path):
    worker, worker_file, db = served
    # the same connector on another lake, run in this process (`lakeconnect run` without a worker)
    other = write_worker(tmp_path / "worker.properties", tmp_path / "lake")
    other_db = tmp_path / "books.db"
    _books(other_db, 100)
    _create(other, "books", _source(other_db))
    for more in (0, 7, 0):
        _books(db, more, start=1000 + more)
        _books(other_db, more, start=1000 + more)
        remote = worker.run("run", "books", "--json", "--until-caught-up")
        here = cli_here("run", "books", "--json", "--until-caught-up", worker=other)
        assert remote.returncode == here.returncode == 0, remote.stderr + here.stderr
        assert _reports(remote.stdout) == _reports(here.stdout)
        # the log lines are the run's, as the CLI prints them
        assert "[books|task-0] task 0:" in remote.stderr
    text = worker.run("run", "books")
    assert text.returncode == 0 and text.stdout == "books task 0: nothing new\n"
    offsets = [cli_here("offsets", "list", "books", worker=w).stdout for w in (worker_file, other)]
    assert offsets[0] == offsets[1] and '"incrementing": 1013' in offsets[0]


def test_the_delegating_command_imports_no_spark_arrow_or_pandas(served):
    worker, worker_file, _ = served
    probe = ("import sys; from ingest.cli import main; code = main(sys.argv[1:]); "
             "heavy = [m for m in ('pyspark', 'pyarrow', 'pandas', 'deltalake', 'uvicorn') if m in sys.modules]; "
             "print('HEAVY', heavy, code)")
    done = subprocess.run([sys.executable, "-c", probe, "--worker", str(worker_file), "run", "books"], cwd=REPO,
                          env={**__import__("os").environ, "LAKECONNECT_WORKER_URL": worker.url},
                          capture_output=True, text=True, timeout=120)
    assert "HEAVY [] 0" in done.stdout, done.stdout + done.stderr


def test_a_paused_connector_is_not_run_and_the_run_says_so(served):
    worker, worker_file, db = served
    assert cli_here("connectors", "pause", "books", worker=worker_file).returncode == 0
    try:
        _more(db, 3)
        done = worker.run("run", "books", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"connector": "books", "task": None, "outcome": "NOT_RUN",
                                           "target_state": "PAUSED", "reason": "connector is PAUSED"}
        assert "connector is PAUSED; nothing to do" in done.stderr
    finally:
        assert cli_here("connectors", "resume", "books", worker=worker_file).returncode == 0
    done = worker.run("run", "books", "--json")
    assert json.loads(done.stdout)["records"] == 3


def test_an_unknown_connector_is_a_404_and_exit_code_2(served):
    worker, worker_file, _ = served
    done = worker.run("run", "nope")
    assert done.returncode == 2
    assert "connector 'nope' not found by the worker" in done.stderr and "Traceback" not in done.stderr
    status, kind, body = _call(worker.url, "POST", "/connectors/nope/runs", b"{}")
    assert (status, json.loads(body)) == (404, {"error_code": 404, "message": "Connector nope not found"})


def test_a_second_run_of_a_running_task_is_refused_with_exit_code_3(served):
    from ingest.runtime.batches import task_lease

    worker, worker_file, _ = served
    lease = task_lease(str(worker_file.parent / "lake"), "books", 0, None).acquire("the test's hold")
    try:
        done = worker.run("run", "books")
    finally:
        lease.release()
    assert done.returncode == 3, done.stderr
    assert "connector 'books' task 0 is already running" in done.stderr
    assert worker.run("run", "books").returncode == 0  # and the worker goes on


def test_a_config_change_is_read_by_the_next_run_without_a_restart(served):
    worker, worker_file, db = served
    _create(worker_file, "books", _source(db, **{"topic.prefix": "w2-"}), action="update")
    try:
        _more(db, 4)
        done = worker.run("run", "books", "--json")
        assert done.returncode == 0, done.stderr
        # the offsets are the table's: the new rows, into the new topic
        assert {k: json.loads(done.stdout)[k] for k in ("records", "topics")} == {"records": 4, "topics": ["w2-books"]}
    finally:
        _create(worker_file, "books", _source(db), action="update")


def test_failing_runs_and_bad_configs_leave_the_worker_serving(served):
    worker, worker_file, db = served
    _create(worker_file, "broken", _source(db, **{"table.whitelist": "no_such_table"}))
    bad = worker.run("run", "broken")
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.count("error: ") == 1 and "no_such_table" in bad.stderr and "Traceback" not in bad.stderr
    # a database file that is not one
    (worker_file.parent / "garbled.db").write_bytes(b"not a database")
    _create(worker_file, "garbled", _source(worker_file.parent / "garbled.db"))
    garbled = worker.run("run", "garbled")
    assert garbled.returncode != 0 and "error: " in garbled.stderr
    assert worker.run("run", "books").returncode == 0
    status, _, body = _call(worker.url, "GET", "/connectors/broken/runs")
    runs = json.loads(body)
    assert status == 200 and runs[-1]["state"] == "FAILED" and runs[-1]["exit_code"] == 2
    assert "no_such_table" in runs[-1]["error"]


def test_recent_runs_are_listed_with_their_reports(served):
    worker, _, db = served
    _more(db, 2)
    assert worker.run("run", "books").returncode == 0
    status, kind, body = _call(worker.url, "GET", "/connectors/books/runs?limit=1")
    runs = json.loads(body)
    assert status == 200 and kind.startswith("application/json") and len(runs) == 1
    (last,) = runs
    assert last["state"] == "SUCCEEDED" and last["exit_code"] == 0 and last["task"] is None
    assert [r["records"] for r in last["reports"]] == [2]
    assert last["started_at"] <= last["ended_at"]
    assert _call(worker.url, "GET", "/connectors/books/runs?limit=0")[0] == 400


@pytest.mark.parametrize("body, content_type, status, message", [
    (b"[1]", "application/json", 400, "expected {"),
    (b'{"task": -1}', "application/json", 400, "task must be a task number"),
    (b'{"task": "0"}', "application/json", 400, "task must be a task number"),
    (b'{"until_caught_up": "yes"}', "application/json", 400, "until_caught_up must be true or false"),
    (b'{"tasks": 1}', "application/json", 400, "unknown field 'tasks'"),
    (b"{not json", "application/json", 400, "request body"),
    (b"{}", "text/plain", 415, "must be JSON"),
])
def test_bad_run_requests_are_refused_and_run_nothing(served, body, content_type, status, message):
    worker, _, _ = served
    before = json.loads(_call(worker.url, "GET", "/connectors/books/runs")[2])
    got, kind, answer = _call(worker.url, "POST", "/connectors/books/runs", body, content_type)
    assert got == status and message in json.loads(answer)["message"]
    assert json.loads(_call(worker.url, "GET", "/connectors/books/runs")[2]) == before


@pytest.mark.parametrize("listen", ["http://127.0.0.1:abc", "ftp://x", "http://127.0.0.1:99999"])
def test_a_listener_that_is_not_one_is_refused_before_anything_starts(worker_file, listen):
    done = cli_here("worker", "--listen", listen, worker=worker_file)
    assert done.returncode == 2 and "listeners: expected http://HOST:PORT" in done.stderr, done.stderr
    assert "unexpected failure" not in done.stderr


class _NotAWorker(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        payload = b"<html>hello</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_a_worker_url_that_answers_something_else_or_nothing(served, worker_file):
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotAWorker)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        done = delegated(worker_file, f"http://127.0.0.1:{other.server_address[1]}", "run", "books")
    finally:
        other.shutdown()
    assert done.returncode == 2 and "is not a lakeconnect worker" in done.stderr and "text/html" in done.stderr
    # the plain REST server runs no batches
    rest = subprocess.Popen([sys.executable, "-m", "ingest", "--worker", str(served[1]), "rest", "--listen",
                             "http://127.0.0.1:0"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        url = rest.stdout.readline().split("listening on ")[1].split()[0]
        done = delegated(served[1], url, "run", "books")
    finally:
        rest.terminate()
        rest.wait(30)
    assert done.returncode == 2 and "runs no batches (it is `lakeconnect rest`)" in done.stderr
    # nobody listening: retriable
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = delegated(worker_file, f"http://user:pw-s3cret@127.0.0.1:{port}", "run", "books")
    assert done.returncode == 75 and "is not reachable" in done.stderr and "nothing was run" in done.stderr
    assert "pw-s3cret" not in done.stderr
    done = delegated(worker_file, "ftp://127.0.0.1:1", "run", "books")
    assert done.returncode == 2 and "is not http://HOST:PORT" in done.stderr


def _health(url: str) -> dict:
    status, kind, body = _call(url, "GET", "/health")
    assert status == 200
    return json.loads(body)


def test_health_and_many_runs_leave_threads_open_files_and_queues_flat(served):
    """A short soak (the 10,000-run one is tests/bench/bench_worker.py --soak): threads, open files and
    Spark's listener queues do not grow with runs; memory is the benchmark's to show. Each count is taken
    after 11 s without a run: the Delta library's runtime (tokio) starts threads for blocking work as a
    batch needs them, up to 512, and ends each after 10 s idle."""
    from ingest.cli.delegate import run_remote

    worker, _, db = served

    def poll(n: int) -> None:
        for i in range(n):
            if i % 10 == 0:
                _more(db, 3)
            result = run_remote(worker.url, "books", on_log=lambda line: None, on_result=lambda r, s: None)
            assert result.exit_code == 0, result.error

    poll(20)  # the run threads and Spark's own pools come into being
    time.sleep(11)
    before = _health(worker.url)
    assert before["status"] == "healthy" and before["worker"]["runs"] == {"running": 0, "queued": 0, "max": 4,
                                                                        "queue_max": 1000}
    poll(150)
    time.sleep(11)
    after = _health(worker.url)
    process, jvm = (before["worker"]["process"], after["worker"]["process"]), (before["worker"]["jvm"],
                                                                             after["worker"]["jvm"])
    assert process[1]["threads"] <= process[0]["threads"] + 2, (before, after)
    assert process[1]["open_files"] <= process[0]["open_files"] + 2, (before, after)
    assert process[1]["arrow_bytes"] <= process[0]["arrow_bytes"] + 2**20, (before, after)  # no batch's buffers kept
    # Spark's cached pools (task launch, block manager, result getters) start threads as jobs need them and end
    # them after 60 s idle; one kept per run would add 150
    assert jvm[1]["threads"] <= jvm[0]["threads"] + 100, (before, after)
    assert all(size < 1000 for size in jvm[1]["listener_queues"].values()), after


@pytest.mark.parametrize("stream, message", [
    (b"[1]\n", "sent a line that is not JSON"),
    (b'{"exit_code": "0"}\n', "exit code that is not one"),
    (b'{"log": "half"}\n', "stopped answering during the run"),
])
def test_a_server_that_streams_something_else_gets_a_clear_error(worker_file, stream, message):
    """What answers the runs call is not trusted: a stream that is not a worker's ends in one error line."""
    class Streams(_NotAWorker):
        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(stream)))
            self.end_headers()
            self.wfile.write(stream)

    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Streams)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        done = delegated(worker_file, f"http://127.0.0.1:{other.server_address[1]}", "run", "books")
    finally:
        other.shutdown()
    assert done.returncode in (2, 75) and message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("error: ") == 1
