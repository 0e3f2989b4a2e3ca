"""Kill the process after every step of a batch in turn, run again, and compare with a run that never
crashed.

The kill is real: the fault-injection switch ends a CLI process with os._exit (no cleanup, no finally),
as `kill -9` would, at the named step of the batch protocol. The runs that are not killed are made in
this process (tests/conftest.py `run_here` says why).
"""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ingest.runtime.faults import SINK_STEPS, SOURCE_STEPS
from ingest.runtime.lease import Lease
from tests.conftest import cli, cli_here, run_here, write_worker
from tests.crash_kit import Scenario, check_exactly_once, clean_state, kill_at_each_step
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


def _source_at_second_batch(root: Path) -> Path:
    """A lake whose source has run its first batch, with the second batch's lines in the file."""
    _, worker, source = _setup_source(root, "lake")
    run_here(worker, "src")
    with open(source, "a") as f:
        f.write("\n".join(LINES[300:]) + "\n")
    return worker


def _source_scenario_state(worker: Path):
    lake = worker.parent / "lake"
    return _source_state(lake, worker), topic_commits(lake, "lines")


def _finish_complete(worker: Path, name: str) -> list:
    reports = run_here(worker, name)
    assert not reports[0].resumed  # killed after "done": the batch was complete
    return reports


# The second batch (it appends to a topic the first made) killed after every step in turn.
SOURCE = Scenario("src", _source_at_second_batch, _source_scenario_state, SOURCE_STEPS)


@pytest.fixture(scope="module")
def source_baseline(tmp_path_factory):
    return clean_state(SOURCE, tmp_path_factory.mktemp("baseline"))


def test_source_killed_after_each_step_of_a_batch(tmp_path, source_baseline):
    (rows, _), _ = check_exactly_once(replace(SOURCE, finish=_finish_complete), tmp_path, source_baseline)
    assert len(rows) == len(LINES) and len({(r[0], r[1]) for r in rows}) == len(LINES)


def test_source_in_a_long_running_worker_killed_after_each_step_of_a_batch(tmp_path, source_baseline):
    """The same kills, of a `lakeconnect worker` process running the batch a delegating `lakeconnect run` asked
    for; the run after them in this process."""
    check_exactly_once(replace(SOURCE, finish=_finish_complete), tmp_path, source_baseline, through_worker=True)


def test_source_killed_around_the_first_commit_of_a_topic(tmp_path, source_baseline):
    """The first batch, which creates the topic, killed after the steps around its first commit."""
    lake, worker, source = _setup_source(tmp_path, "lake")
    kill_at_each_step(worker, "src", ["plan", "write", "commit"], batch=1)
    assert run_here(worker, "src")[0].resumed
    with open(source, "a") as f:
        f.write("\n".join(LINES[300:]) + "\n")
    run_here(worker, "src")
    assert _source_scenario_state(worker) == source_baseline


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


def _sink_state(worker: Path):
    return (worker.parent / "sink.out").read_text(), json.loads(cli_here("offsets", "list", "snk", worker=worker).stdout)


def _sink_scenario(spark) -> Scenario:
    return Scenario("snk", lambda root: _setup_sink(root, "lake", spark)[1], _sink_state, SINK_STEPS,
                    finish=_finish_complete)


@pytest.fixture(scope="module")
def sink_baseline(tmp_path_factory, spark):
    return clean_state(_sink_scenario(spark), tmp_path_factory.mktemp("sinkbase"))


def test_sink_killed_after_each_step_of_a_batch(tmp_path, spark, sink_baseline):
    written, _ = check_exactly_once(_sink_scenario(spark), tmp_path, sink_baseline)
    assert len(written.splitlines()) == 200


def test_sink_in_a_long_running_worker_killed_after_each_step_of_a_batch(tmp_path, spark, sink_baseline):
    written, _ = check_exactly_once(_sink_scenario(spark), tmp_path, sink_baseline, through_worker=True)
    assert len(written.splitlines()) == 200


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
