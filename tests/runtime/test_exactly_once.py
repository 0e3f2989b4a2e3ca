"""Kill the process after every step of a batch in turn, run again, and compare with a run that never
crashed.

The kill is real: the fault-injection switch ends a CLI process with os._exit (no cleanup, no finally),
as `kill -9` would, at the named step of the batch protocol. The runs that are not killed are made in
this process (tests/conftest.py `run_here` says why).
"""

import json
from pathlib import Path

import pytest

from ingest.runtime.faults import SINK_STEPS, SOURCE_STEPS
from ingest.runtime.lease import Lease
from tests.conftest import cli, cli_here, kill_at_each_step, run_here, write_worker
from tests.runtime.helpers import topic_commits, topic_rows

LINES = [f"line {i} " + "x" * (i % 7) for i in range(500)]


def _setup_source(tmp_path: Path, tag: str):
    lake = tmp_path / tag / "lake"
    lake.mkdir(parents=True)
    worker = write_worker(tmp_path / tag / "worker.properties", lake)
    source = tmp_path / tag / "source.txt"
    source.write_text("\n".join(LINES[:300]) + "\n")
    config = tmp_path / tag / "c.json"
    config.write_text(json.dumps({"name": "src", "connector.class": "FileStreamSource", "file": str(source),
                                  "topic": "lines", "topic.creation.default.partitions": "3"}))
    assert cli_here("connectors", "create", str(config), worker=worker).returncode == 0
    return lake, worker, source


def _source_state(lake: Path, worker: Path):
    offsets = json.loads(cli_here("offsets", "list", "src", worker=worker).stdout)["offsets"]
    for o in offsets:
        o["partition"]["filename"] = Path(o["partition"]["filename"]).name
    return topic_rows(lake, "lines"), offsets


@pytest.fixture(scope="module")
def source_baseline(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("baseline")
    lake, worker, source = _setup_source(tmp, "clean")
    run_here(worker, "src")
    with open(source, "a") as f:
        f.write("\n".join(LINES[300:]) + "\n")
    run_here(worker, "src")
    return _source_state(lake, worker), topic_commits(lake, "lines")


def test_source_killed_after_each_step_of_a_batch(tmp_path, source_baseline):
    """The second batch (it appends to a topic the first made) killed after every step in turn."""
    expected, expected_commits = source_baseline
    lake, worker, source = _setup_source(tmp_path, "crash")
    run_here(worker, "src")
    with open(source, "a") as f:
        f.write("\n".join(LINES[300:]) + "\n")
    kill_at_each_step(worker, "src", SOURCE_STEPS)
    assert not run_here(worker, "src")[0].resumed  # killed after "done": the batch was complete
    _check_source(lake, worker, expected, expected_commits)


def test_source_killed_around_the_first_commit_of_a_topic(tmp_path, source_baseline):
    """The first batch, which creates the topic, killed after the steps around its first commit."""
    expected, expected_commits = source_baseline
    lake, worker, source = _setup_source(tmp_path, "crash")
    kill_at_each_step(worker, "src", ["plan", "write", "commit"])
    assert run_here(worker, "src")[0].resumed
    with open(source, "a") as f:
        f.write("\n".join(LINES[300:]) + "\n")
    run_here(worker, "src")
    _check_source(lake, worker, expected, expected_commits)


def _check_source(lake: Path, worker: Path, expected, expected_commits) -> None:
    assert _source_state(lake, worker) == expected
    assert topic_commits(lake, "lines") == expected_commits
    rows = expected[0]
    assert len(rows) == len(LINES) and len({(r[0], r[1]) for r in rows}) == len(LINES)


def _setup_sink(tmp_path: Path, tag: str, spark):
    """The topic `events` (3 partitions) with 200 keyed records, made in this process, and the sink."""
    from ingest.topics import TopicTable

    lake = tmp_path / tag / "lake"
    lake.mkdir(parents=True)
    worker = write_worker(tmp_path / tag / "worker.properties", lake)
    topic = TopicTable(str(lake), "events")
    topic.create(3)
    rows = [(f"k{i % 11}".encode(), f"value {i}".encode(), i) for i in range(200)]
    topic.append(spark.createDataFrame(rows, "key binary, value binary, seq long"), app_id="producer", version=1)
    out = tmp_path / tag / "sink.out"
    config = tmp_path / tag / "c.json"
    config.write_text(json.dumps({"name": "snk", "connector.class": "FileStreamSink", "topics": "events",
                                  "file": str(out)}))
    assert cli_here("connectors", "create", str(config), worker=worker).returncode == 0
    return lake, worker, out


@pytest.fixture(scope="module")
def sink_baseline(tmp_path_factory, spark):
    tmp = tmp_path_factory.mktemp("sinkbase")
    lake, worker, out = _setup_sink(tmp, "clean", spark)
    run_here(worker, "snk")
    return out.read_text(), json.loads(cli_here("offsets", "list", "snk", worker=worker).stdout)


def test_sink_killed_after_each_step_of_a_batch(tmp_path, spark, sink_baseline):
    expected_file, expected_offsets = sink_baseline
    lake, worker, out = _setup_sink(tmp_path, "crash", spark)
    kill_at_each_step(worker, "snk", SINK_STEPS)
    assert not run_here(worker, "snk")[0].resumed  # killed after "done": the batch was complete
    assert out.read_text() == expected_file
    assert json.loads(cli_here("offsets", "list", "snk", worker=worker).stdout) == expected_offsets
    assert len(expected_file.splitlines()) == 200


def test_second_concurrent_run_refuses_cleanly(tmp_path):
    lake, worker, source = _setup_source(tmp_path, "busy")
    lease = Lease(str(lake), "src.task-0").acquire("test")
    try:
        r = cli("run", "src", worker=worker)
    finally:
        lease.release()
    assert r.returncode == 3
    assert "already running" in r.stderr and "Traceback" not in r.stderr
    assert not (lake / "topics" / "lines").exists()
    assert cli_here("run", "src", worker=worker).returncode == 0
