"""A Spark master that does not answer: the run fails fast with a clear message and loses nothing."""

from __future__ import annotations

import json
import socket
import time

from tests.conftest import cli, write_worker


def test_an_unreachable_master_fails_fast_and_the_batch_runs_later(tmp_path, lake):
    """A master that is down: exit 75 within seconds (not Spark's minute of retries and a Java trace), the
    task FAILED with the reason, nothing written; the same batch runs once the worker points at a master."""
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "in.txt").write_text("one\ntwo\n")
    source = tmp_path / "fs.json"
    source.write_text(json.dumps({"name": "fs", "connector.class": "FileStreamSource",
                                  "file": str(tmp_path / "in.txt"), "topic": "lines"}))
    down = write_worker(tmp_path / "down.properties", lake, **{"spark.master": f"spark://127.0.0.1:{port}"})
    assert cli("connectors", "create", str(source), worker=down).returncode == 0
    started = time.monotonic()
    r = cli("run", "fs", worker=down)
    assert r.returncode == 75 and time.monotonic() - started < 30, r.stderr
    assert f"the Spark master spark://127.0.0.1:{port} (spark.master in the worker config) is unreachable" in r.stderr
    assert "Traceback" not in r.stderr and "Py4J" not in r.stderr
    status = json.loads(cli("connectors", "status", "fs", worker=down).stdout)
    assert status["tasks"][0]["state"] == "FAILED" and "is unreachable" in status["tasks"][0]["trace"]
    assert not (lake / "topics" / "lines").exists()

    up = write_worker(tmp_path / "up.properties", lake)
    assert cli("run", "fs", worker=up).returncode == 0
    lines = cli("topics", "consume", "lines", "--from-beginning", worker=up)
    assert lines.stdout.split() == ["one", "two"]
