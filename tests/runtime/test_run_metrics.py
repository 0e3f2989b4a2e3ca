"""Per-batch metrics in the runs table, as Kafka Connect's task metrics (ch. 9) count them, shown by
`lakeconnect connectors status NAME --runs N`: records, bytes, lag, time per step. The killed run is a
CLI process; the others are made in this process (tests/conftest.py `run_here`)."""

import json

from tests.conftest import cli, run_here
from tests.runtime.test_filestream_e2e import _create


def _runs(worker, name, n=10):
    r = cli("connectors", "status", name, "--runs", str(n), worker=worker)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["runs"]


def test_source_and_sink_metrics(tmp_path, lake, worker_file):
    source, sink = tmp_path / "source.txt", tmp_path / "sink.out"
    source.write_text("one\ntwo\nthree\n")
    _create(worker_file, tmp_path, "src", {"connector.class": "FileStreamSource", "file": str(source), "topic": "t"})
    _create(worker_file, tmp_path, "snk", {"connector.class": "FileStreamSink", "topics": "t", "file": str(sink)})
    run_here(worker_file, "src")
    [committed] = _runs(worker_file, "src")  # one row per batch: its latest state
    assert committed["state"] == "COMMITTED" and committed["batch_id"] == 1
    assert {k: committed[k] for k in ("records_read", "records_written", "records_skipped", "topics")} == {
        "records_read": 3, "records_written": 3, "records_skipped": 0, "topics": ["t"]}
    assert committed["bytes_written"] > 0
    assert set(committed["timings_ms"]) == {"plan", "read", "transform", "convert", "write", "commit"}
    assert committed["latency_ms"] == round(sum(committed["timings_ms"].values()), 1)

    # A sink batch planned over 3 records is killed; 2 more records arrive; the resumed batch commits its
    # 3 and leaves 2 behind: its lag.
    r = cli("run", "snk", worker=worker_file, env={"LAKECONNECT_CRASH_AT": "put"})
    assert r.returncode == 137
    with open(source, "a") as f:
        f.write("four\nfive\n")
    run_here(worker_file, "src")
    run_here(worker_file, "snk")
    done = _runs(worker_file, "snk")[-1]
    assert {k: done[k] for k in ("state", "records_read", "records_written", "records_failed", "lag_records")} == {
        "state": "COMMITTED", "records_read": 3, "records_written": 3, "records_failed": 0, "lag_records": 2}
    run_here(worker_file, "snk")
    assert _runs(worker_file, "snk")[-1]["lag_records"] == 0
    assert sink.read_text().splitlines() == ["one", "two", "three", "four", "five"]
    assert len(_runs(worker_file, "snk", 2)) == 2
