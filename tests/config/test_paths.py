"""Files a connector reads or writes of its own (a local store, a Delta table sink's tables, a SQLite file, a
trust store) stay inside the lake or below the worker's `lake.allowed.paths`: at create, update, validate
and at each run, after symlinks and `..` are resolved."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ingest.config.paths import normalized, path_problems, within
from tests.conftest import cli


def test_roots_and_prefixes(tmp_path):
    lake = tmp_path / "lake"
    assert path_problems([("k", str(lake / "a" / "b"))], str(lake), []) == []
    assert path_problems([("k", f"file://{lake}/store")], str(lake), []) == []
    [problem] = path_problems([("k", str(lake / ".." / "elsewhere"))], str(lake), [])
    assert problem.key == "k" and "is outside the lake" in problem.message and "lake.allowed.paths" in problem.message
    assert path_problems([("k", str(tmp_path / "elsewhere"))], str(lake), [str(tmp_path)]) == []
    # a sibling whose name starts like an allowed directory is not below it
    assert path_problems([("k", str(tmp_path / "lake2"))], str(lake), [])
    # object-store prefixes: below the lake's or an allowed prefix, by whole names
    assert not path_problems([("k", "s3://bucket/lake/tables/t")], "s3://bucket/lake", [])
    assert path_problems([("k", "s3://bucket/lake2/t")], "s3://bucket/lake", [])
    assert path_problems([("k", "s3://bucket/lake/../other")], "s3://bucket/lake", [])
    assert not path_problems([("k", "s3://exports/x")], "s3://bucket/lake", ["s3://exports"])
    assert path_problems([("k", str(lake))], "s3://bucket/lake", [])  # a local path is not below an s3 prefix
    assert path_problems([("k", "a\0b")], str(lake), [])[0].message == "a path must not contain a NUL character"
    # a password in a URI is not shown in the message
    [problem] = path_problems([("k", "s3://user:s3cr3t@other/t")], "s3://bucket/lake", [])
    assert "s3cr3t" not in problem.message and "s3://user:[hidden]@other/t" in problem.message
    assert within(normalized("s3://b/x/"), normalized("s3://b/x"))


def test_a_symlink_out_of_the_lake_is_followed(tmp_path):
    lake, outside = tmp_path / "lake", tmp_path / "outside"
    lake.mkdir()
    outside.mkdir()
    os.symlink(outside, lake / "door")
    [problem] = path_problems([("store.url", f"file://{lake}/door/store")], str(lake), [])
    assert "is outside the lake" in problem.message


def _worker(tmp_path: Path, allowed: str | None) -> Path:
    worker = tmp_path / "worker.properties"
    lines = [f"lake.root={tmp_path / 'lake'}", "key.converter=org.apache.kafka.connect.json.JsonConverter",
             "value.converter=org.apache.kafka.connect.json.JsonConverter"]
    if allowed is not None:
        lines.append(f"lake.allowed.paths={allowed}")
    worker.write_text("\n".join(lines) + "\n")
    return worker


def _connector(tmp_path: Path, name: str, config: dict) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"name": name, "config": config}))
    return path


@pytest.mark.parametrize("key, config", [
    ("connection.url", {"connector.class": "JdbcSource", "mode": "bulk", "topic.prefix": "p-",
                        "connection.url": "jdbc:sqlite:{data}/inventory.db"}),
    ("store.url", {"connector.class": "S3SinkConnector", "topics": "t", "s3.bucket.name": "b", "flush.size": "3",
                   "format.class": "io.confluent.connect.s3.format.json.JsonFormat", "store.url": "file://{data}"}),
    ("delta.table.path", {"connector.class": "DeltaTableSink", "topics": "t",
                          "delta.table.path": "{data}/tables/${{table}}"}),
    ("database.ssl.truststore", {"connector.class": "MySqlCdc", "database.hostname": "127.0.0.1",
                                 "database.user": "u", "database.password": "p", "database.server.id": "5",
                                 "topic.prefix": "db", "database.ssl.truststore": "{data}/trust.pem"}),
])
def test_local_paths_need_the_lake_or_the_allow_list(tmp_path, key, config):
    data = tmp_path / "data"
    config = {k: v.format(data=data) for k, v in config.items()}
    created = _connector(tmp_path, "c", config)
    r = cli("connectors", "create", str(created), worker=_worker(tmp_path, None))
    assert r.returncode == 2 and f"{key}: {data}" in r.stderr and "is outside the lake" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "lake" / "_connect" / "connect-configs").exists()
    # validate says the same; with the directory allowed the config is accepted
    r = cli("validate", str(created), worker=_worker(tmp_path, None))
    assert r.returncode == 2 and "is outside the lake" in r.stderr
    allowing = _worker(tmp_path, str(data))
    r = cli("connectors", "create", str(created), worker=allowing)
    assert r.returncode == 0, r.stderr
    # a run under a worker that no longer allows it is refused before anything is read or written
    r = cli("run", "c", worker=_worker(tmp_path, ""))
    assert r.returncode == 2 and "is outside the lake" in r.stderr, r.stderr


def test_inside_the_lake_needs_no_allow_list(tmp_path):
    lake = tmp_path / "lake"
    config = {"connector.class": "DeltaTableSink", "topics": "t", "delta.table.path": f"{lake}/exports/${{table}}"}
    r = cli("connectors", "create", str(_connector(tmp_path, "d", config)), worker=_worker(tmp_path, None))
    assert r.returncode == 0, r.stderr
