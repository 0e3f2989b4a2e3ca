"""The FileStream pair end to end from the CLI: file -> topic -> file, offsets visible, as the book's ch. 3/7."""

import json

from tests.conftest import cli, cli_here
from tests.runtime.helpers import topic_rows


def _create(worker, tmp_path, name, config):
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps({"name": name, **config}))
    r = cli_here("connectors", "create", str(f), worker=worker)
    assert r.returncode == 0, r.stderr


def test_file_to_topic_to_file(tmp_path, lake, worker_file):
    source, sink = tmp_path / "source.txt", tmp_path / "sink.out"
    source.write_text("First record\nAnother record\nThird record\npartial")
    _create(worker_file, tmp_path, "file-source", {"connector.class": "FileStreamSource", "file": str(source),
                                                    "topic": "topic-to-export"})
    # The book's sink-config.json, with its space for a dot in the class name.
    _create(worker_file, tmp_path, "file-sink", {
        "connector.class": "org.apache.kafka.connect.file FileStreamSinkConnector", "tasks.max": "1",
        "topics": "topic-to-export", "file": str(sink),
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"})

    r = cli("run", "file-source", worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert "batch 1 committed 3 records" in r.stdout
    assert "[file-source|task-0]" in r.stderr  # Kafka Connect's log context
    r = cli("run", "file-sink", worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert sink.read_text() == "First record\nAnother record\nThird record\n"

    offsets = json.loads(cli_here("offsets", "list", "file-source", worker=worker_file).stdout)
    assert offsets == {"offsets": [{"partition": {"filename": str(source)}, "offset": {"position": 41}}]}
    offsets = json.loads(cli_here("offsets", "list", "file-sink", worker=worker_file).stdout)
    assert offsets == {"offsets": [{"partition": {"kafka_partition": 0, "kafka_topic": "topic-to-export"},
                                    "offset": {"kafka_offset": 3}}]}

    # The partial line completes; only the new line moves, once.
    with open(source, "a") as f:
        f.write(" now complete\n")
    assert cli("run", "file-source", worker=worker_file).returncode == 0
    assert cli("run", "file-sink", worker=worker_file).returncode == 0
    assert sink.read_text().splitlines() == ["First record", "Another record", "Third record", "partial now complete"]
    r = cli("run", "file-source", worker=worker_file)
    assert "nothing new" in r.stdout

    r = cli_here("topics", "consume", "topic-to-export", "--from-beginning", "--property", "print.key=true",
            worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["null\tFirst record", "null\tAnother record", "null\tThird record",
                                     "null\tpartial now complete"]
    status = json.loads(cli_here("connectors", "status", "file-source", worker=worker_file).stdout)
    assert status["connector"]["state"] == "RUNNING" and status["tasks"][0]["state"] == "RUNNING"


def test_json_converter_output_matches_the_book(tmp_path, lake, worker_file):
    source = tmp_path / "source.txt"
    source.write_text("This is a string\nAnother string\nA third string\nThe final string\n")
    _create(worker_file, tmp_path, "json-source", {
        "connector.class": "FileStreamSource", "file": str(source), "topic": "strings",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
    assert cli("run", "json-source", worker=worker_file).returncode == 0
    values = [row[3].decode() for row in topic_rows(lake, "strings")]
    assert values == [
        '{"schema":{"type":"string","optional":false},"payload":"This is a string"}',
        '{"schema":{"type":"string","optional":false},"payload":"Another string"}',
        '{"schema":{"type":"string","optional":false},"payload":"A third string"}',
        '{"schema":{"type":"string","optional":false},"payload":"The final string"}',
    ]


def test_json_sink_prints_maps_like_the_book(tmp_path, lake, worker_file):
    json_out, string_out = tmp_path / "json-sink.out", tmp_path / "string-sink.out"
    r = cli_here("topics", "create", "topic-to-export-with-converters", "--partitions", "1", worker=worker_file)
    assert r.returncode == 0, r.stderr
    r = cli_here("topics", "produce", "topic-to-export-with-converters", worker=worker_file, stdin='{"greeting":"hello"}\n')
    assert r.returncode == 0, r.stderr
    _create(worker_file, tmp_path, "file-json-sink", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "topics": "topic-to-export-with-converters", "file": str(json_out),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false"})
    _create(worker_file, tmp_path, "file-string-sink", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "topics": "topic-to-export-with-converters", "file": str(string_out),
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
    for name in ("file-json-sink", "file-string-sink"):
        r = cli("run", name, worker=worker_file)
        assert r.returncode == 0, r.stderr
    assert json_out.read_text() == "{greeting=hello}\n"
    assert string_out.read_text() == '{"greeting":"hello"}\n'


def test_file_connectors_need_the_worker_flag(tmp_path, lake):
    from tests.conftest import write_worker

    worker = write_worker(tmp_path / "w.properties", lake, **{"file.connectors.enable": "false"})
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"name": "s", "connector.class": "FileStreamSource", "file": "/etc/hostname", "topic": "t"}))
    r = cli_here("connectors", "create", str(f), worker=worker)
    assert r.returncode == 2
    assert "file.connectors.enable=true" in r.stderr
    assert "Traceback" not in r.stderr
