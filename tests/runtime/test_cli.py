"""CLI surfaces that need no Spark: plugins, validate, the demo's lake, help and errors."""

import json

from ingest.registry import PluginKind
from tests.conftest import cli, cli_here


def test_plugins_list_shows_every_kind():
    r = cli("plugins", "list")
    assert r.returncode == 0, r.stderr
    kinds = {line.split("  ")[0].strip() for line in r.stdout.splitlines()[2:]}
    assert kinds == {k.label for k in PluginKind}
    assert "org.apache.kafka.connect.json.JsonConverter" in r.stdout
    listed = json.loads(cli("plugins", "list", "--json").stdout)
    assert {"type": "sink", "class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "alias": "FileStreamSink", "version": "0.1.0"} in listed


def test_plugins_config_prints_the_configdef():
    r = cli("plugins", "config", "FileStreamSource")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines()[3:] if line.strip()}
    assert {"name", "connector.class", "tasks.max", "file", "topic", "batch.size"} <= set(rows)
    assert "(required)" in rows["topic"] and "INT" in rows["tasks.max"]
    keys = {k["name"]: k for k in json.loads(cli("plugins", "config", "JsonConverter", "--json").stdout)}
    assert keys["schemas.enable"]["default"] == "true"
    r = cli("plugins", "config", "NoSuchThing")
    assert r.returncode == 2 and "unknown plugin 'NoSuchThing'" in r.stderr


def test_validate_accepts_the_books_configs(tmp_path, worker_file):
    f = tmp_path / "json-sink-config.json"
    f.write_text(json.dumps({"name": "file-json-sink",
                             "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                             "tasks.max": "1", "topics": "topic-to-export-with-converters",
                             "file": "/tmp/json-sink.out",
                             "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                             "value.converter.schemas.enable": "false"}))
    r = cli("validate", str(f), worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert "is valid" in r.stdout


def test_properties_connector_file(tmp_path, worker_file):
    f = tmp_path / "source.properties"
    f.write_text("name=props-source\nconnector.class=FileStreamSource\nfile=/etc/hostname\ntopic=t\ntasks.max=1\n")
    assert cli("connectors", "create", str(f), worker=worker_file).returncode == 0
    got = json.loads(cli("connectors", "get", "props-source", worker=worker_file).stdout)
    assert got["config"]["topic"] == "t" and got["type"] == "source"
    assert got["tasks"] == [{"connector": "props-source", "task": 0}]


def test_unexpected_errors_are_one_line_without_debug(tmp_path, worker_file):
    r = cli("offsets", "alter", "x", str(tmp_path / "missing.json"), worker=worker_file)
    assert r.returncode == 2 and "file not found" in r.stderr and "Traceback" not in r.stderr


def test_demo_moves_new_rows_once(tmp_path):
    """The main job: new SQLite rows -> topic (JDBC source) -> objects in the local bucket (S3 sink)."""
    lake = tmp_path / "lake"
    first = cli("demo", "--lake", str(lake), worker=None)
    assert first.returncode == 0, first.stderr
    assert "demo-jdbc-source task 0: batch 1 committed 3 records" in first.stdout
    assert "demo-s3-sink task 0: batch 1 committed 3 records" in first.stdout
    second = cli_here("demo", "--lake", str(lake))  # the first is the README's command as a process
    assert second.returncode == 0, second.stderr
    assert "demo-s3-sink task 0: batch 2 committed 3 records" in second.stdout
    bucket = lake / "demo" / "objects" / "demo-bucket" / "topics" / "demo-kafka_books" / "partition=0"
    objects = sorted(p.name for p in bucket.iterdir())
    assert objects == ["demo-kafka_books+0+0000000000.json", "demo-kafka_books+0+0000000003.json"]
    lines = [json.loads(line) for name in objects for line in (bucket / name).read_text().splitlines()]
    assert [r["id"] for r in lines] == [1, 2, 3, 4, 5, 6] and lines[0]["title"] == "Kafka Connect"
    assert '"kafka_offset": 6' in second.stdout and '"incrementing": 6' in second.stdout


def test_a_lease_directory_that_cannot_be_made_is_named(tmp_path, lake):
    from tests.conftest import write_worker

    (tmp_path / "plain-file").write_text("")
    worker = write_worker(tmp_path / "w.properties", lake, **{"lake.locks.dir": str(tmp_path / "plain-file" / "locks")})
    f = tmp_path / "fs.json"
    f.write_text(json.dumps({"name": "fs", "connector.class": "FileStreamSource", "file": "/etc/hostname",
                             "topic": "t"}))
    assert cli("connectors", "create", str(f), worker=worker).returncode == 0
    r = cli("run", "fs", worker=worker)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "cannot take the lease of connector 'fs' task 0" in r.stderr and "lake.locks.dir" in r.stderr
