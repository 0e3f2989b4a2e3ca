"""errors.tolerance, the dead letter queue and error logs, end to end in real processes (the book ch. 4).

A sink reads a topic holding poison records (bytes that are not JSON for a JsonConverter); with
`errors.tolerance=none` the task fails naming the first one and commits nothing; with `all` the good
records reach the sink, the poison ones go to the dead letter queue with Kafka's `__connect.errors.*`
headers, and a crash at any step of such a batch converges on the state of a run that never crashed.
"""

import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.conftest import cli, cli_here, run_here, write_worker
from tests.crash_kit import kill_at_each_step
from tests.runtime.helpers import topic_rows

VALUES = ['{"a":1}', "not json", '{"a":2}', "{broken", '{"a":3}']


def _setup(tmp_path: Path, tag: str, **errors: str):
    lake = tmp_path / tag / "lake"
    lake.mkdir(parents=True)
    worker = write_worker(tmp_path / tag / "worker.properties", lake)
    assert cli_here("topics", "create", "events", "--partitions", "1", worker=worker).returncode == 0
    # Two appends, so the poison records (offsets 1 and 3) sit in two files that Spark reads in two tasks
    # side by side: the task must still fail on offset 1, the first, as a Connect task would.
    for part in (VALUES[:3], VALUES[3:]):
        r = cli_here("topics", "produce", "events", worker=worker, stdin="".join(v + "\n" for v in part))
        assert r.returncode == 0, r.stderr
    out = tmp_path / tag / "sink.out"
    config = tmp_path / tag / "c.json"
    config.write_text(json.dumps({
        "name": "snk", "connector.class": "FileStreamSink", "topics": "events", "file": str(out),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
        **errors}))
    r = cli_here("connectors", "create", str(config), worker=worker)
    assert r.returncode == 0, r.stderr
    return lake, worker, out


DLQ = {"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "events-dlq",
       "errors.deadletterqueue.context.headers.enable": "true", "errors.log.enable": "true",
       "errors.log.include.messages": "true"}


def _dlq(lake: Path) -> list[dict]:
    rows = DeltaTable(str(lake / "topics" / "events-dlq")).to_pyarrow_table(
        columns=["partition", "offset", "key", "value", "headers"]).to_pylist()
    for r in rows:
        r["headers"] = {h["key"]: h["value"].decode() for h in r["headers"]}
    return sorted(rows, key=lambda r: r["offset"])


def _offsets(worker: Path):
    return json.loads(cli_here("offsets", "list", "snk", worker=worker).stdout)["offsets"]


def test_tolerance_none_fails_naming_the_record_and_commits_nothing(tmp_path):
    lake, worker, out = _setup(tmp_path, "none")
    r = cli("run", "snk", worker=worker)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert "offset 1" in r.stderr and "malformed JSON" in r.stderr, r.stderr
    assert _offsets(worker) == []
    assert not (lake / "topics" / "events-dlq").exists()


def test_tolerance_all_routes_poison_records_to_the_dead_letter_queue(tmp_path):
    lake, worker, out = _setup(tmp_path, "dlq", **DLQ)
    r = cli("run", "snk", worker=worker)
    assert r.returncode == 0, r.stderr
    assert out.read_text().splitlines() == ["{a=1}", "{a=2}", "{a=3}"]
    letters = _dlq(lake)
    assert [(x["offset"], x["value"]) for x in letters] == [(0, b"not json"), (1, b"{broken")]
    h = letters[0]["headers"]
    assert h["__connect.errors.topic"] == "events"
    assert h["__connect.errors.partition"] == "0"
    assert h["__connect.errors.offset"] == "1"
    assert h["__connect.errors.connector.name"] == "snk"
    assert h["__connect.errors.task.id"] == "0"
    assert h["__connect.errors.stage"] == "VALUE_CONVERTER"
    assert h["__connect.errors.class.name"] == "org.apache.kafka.connect.json.JsonConverter"
    assert h["__connect.errors.exception.class.name"] == "org.apache.kafka.connect.errors.DataException"
    assert "malformed JSON" in h["__connect.errors.exception.message"]
    assert letters[1]["headers"]["__connect.errors.offset"] == "3"
    # Kafka's LogReporter line, with the consumed record's coordinates (include.messages).
    assert ("Error encountered in task snk-0. Executing stage 'VALUE_CONVERTER' with class "
            "'org.apache.kafka.connect.json.JsonConverter', where consumed record is {topic='events', "
            "partition=0, offset=1, timestamp=") in r.stderr
    assert [o["offset"] for o in _offsets(worker)] == [{"kafka_offset": 5}]
    status = json.loads(cli_here("connectors", "status", "snk", worker=worker).stdout)
    assert status["tasks"][0]["state"] == "RUNNING"


def test_without_context_headers_the_record_keeps_only_its_own(tmp_path):
    lake, worker, out = _setup(tmp_path, "plain", **{**DLQ, "errors.deadletterqueue.context.headers.enable": "false",
                                                     "errors.log.include.messages": "false"})
    r = cli("run", "snk", worker=worker)
    assert r.returncode == 0, r.stderr
    assert [x["headers"] for x in _dlq(lake)] == [{}, {}]
    # Logged, but without the record: its coordinates and contents only with errors.log.include.messages.
    assert ("Error encountered in task snk-0. Executing stage 'VALUE_CONVERTER' with class "
            "'org.apache.kafka.connect.json.JsonConverter'. ") in r.stderr
    assert "consumed record" not in r.stderr and "not json" not in r.stderr


@pytest.fixture(scope="module")
def dlq_baseline(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dlqbase")
    lake, worker, out = _setup(tmp, "clean", **DLQ)
    run_here(worker, "snk")
    return out.read_text(), _dlq(lake), _offsets(worker)


def test_crash_with_dead_letters_converges(tmp_path, dlq_baseline):
    expected_file, expected_dlq, expected_offsets = dlq_baseline
    lake, worker, out = _setup(tmp_path, "crash", **DLQ)
    kill_at_each_step(worker, "snk", ["put", "write"])  # after the sink wrote; after the dead letters
    assert run_here(worker, "snk")[0].resumed  # the run after the kills is made in this process
    assert out.read_text() == expected_file
    assert _dlq(lake) == expected_dlq
    assert _offsets(worker) == expected_offsets


def test_dead_letter_topic_cannot_be_consumed_by_the_same_sink(tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    worker = write_worker(tmp_path / "worker.properties", lake)
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"name": "snk", "connector.class": "FileStreamSink", "topics": "events,events-dlq",
                                  "file": str(tmp_path / "o"), **DLQ}))
    r = cli_here("validate", str(config), worker=worker)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "errors.deadletterqueue.topic.name" in r.stderr + r.stdout


def _source(tmp_path: Path, **errors: str):
    lake = tmp_path / "lake"
    lake.mkdir()
    worker = write_worker(tmp_path / "worker.properties", lake)
    source = tmp_path / "numbers.txt"
    source.write_text("1\nseven\n3\n")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({
        "name": "src", "connector.class": "FileStreamSource", "file": str(source), "topic": "numbers",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "transforms": "toInt", "transforms.toInt.type": "org.apache.kafka.connect.transforms.Cast$Value",
        "transforms.toInt.spec": "int32", **errors}))
    assert cli_here("connectors", "create", str(config), worker=worker).returncode == 0
    return lake, worker


def test_source_transform_failure_stops_the_task_before_any_write(tmp_path):
    lake, worker = _source(tmp_path)
    r = cli("run", "src", worker=worker)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "Tolerance exceeded in error handler" in r.stderr
    assert "TRANSFORMATION" in r.stderr and "org.apache.kafka.connect.transforms.Cast$Value" in r.stderr, r.stderr
    assert "topic 'numbers'" in r.stderr
    assert not (lake / "topics" / "numbers").exists()
    assert json.loads(cli_here("offsets", "list", "src", worker=worker).stdout)["offsets"] == []


def test_source_tolerates_skips_and_logs_failed_records(tmp_path):
    lake, worker = _source(tmp_path, **{"errors.tolerance": "all", "errors.log.enable": "true",
                                        "errors.log.include.messages": "true"})
    r = cli("run", "src", worker=worker)
    assert r.returncode == 0, r.stderr
    values = sorted(json.loads(v)["payload"] for (_p, _o, _k, v, _h) in topic_rows(lake, "numbers"))
    assert values == [1, 3]
    assert ("Error encountered in task src-0. Executing stage 'TRANSFORMATION' with class "
            "'org.apache.kafka.connect.transforms.Cast$Value', where source record is = SourceRecord{"
            "topic='numbers'") in r.stderr
    assert "value=seven" in r.stderr
    assert "1 failed records set aside" in r.stdout + r.stderr
