"""A flat connector file (the connector's keys, no "name") is named after the file by `lakeconnect connectors
create|update|apply|validate`: `jdbc-source-inc.json` is connector `jdbc-source-inc`, unless --name is given."""

from __future__ import annotations

import json

import pytest

from ingest.cli.commands import _connector_file
from ingest.config.loader import load_connector_file
from ingest.errors import ConfigError
from tests.conftest import cli, write_worker

FLAT = {"connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
        "connection.url": "jdbc:sqlite:inventory.db", "mode": "bulk", "topic.prefix": "mysql-inc-"}


def test_a_flat_file_is_named_after_the_file(tmp_path):
    flat = tmp_path / "jdbc-source-inc.json"
    flat.write_text(json.dumps(FLAT))
    assert _connector_file(str(flat)) == ("jdbc-source-inc", {**FLAT, "name": "jdbc-source-inc"})
    assert _connector_file(str(flat), "books")[0] == "books"  # --name wins
    props = tmp_path / "jdbc-source-inc.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in FLAT.items()))
    assert _connector_file(str(props))[0] == "jdbc-source-inc"
    named = tmp_path / "other-file.json"
    named.write_text(json.dumps({"name": "mysql-source-inc", "config": FLAT}))
    assert _connector_file(str(named))[0] == "mysql-source-inc"  # the file's own name wins
    with pytest.raises(ConfigError, match="missing required configuration"):
        load_connector_file(flat)  # a connectors directory's files (Airflow's DAGs) must name their connector


def test_a_file_name_that_is_no_connector_name_is_refused(tmp_path):
    bad = tmp_path / "..json"
    bad.write_text(json.dumps(FLAT))
    with pytest.raises(ConfigError) as e:
        _connector_file(str(bad))
    assert "its file name gives '.'" in str(e.value) and "--name" in str(e.value)
    assert _connector_file(str(bad), "ok")[0] == "ok"
    named = tmp_path / "...json"  # a file with a name of its own needs none from its file name
    named.write_text(json.dumps({"name": "fine", "config": FLAT}))
    assert _connector_file(str(named))[0] == "fine"


def test_the_walk_through_creates_a_flat_file(tmp_path):
    """The JDBC page's walk-through, `lakeconnect connectors create jdbc-source-inc.json`, with the file flat."""
    (tmp_path / "lake").mkdir()
    worker = write_worker(tmp_path / "worker.properties", tmp_path / "lake")
    (tmp_path / "inventory.db").write_bytes(b"")
    flat = tmp_path / "jdbc-source-inc.json"
    flat.write_text(json.dumps({**FLAT, "connection.url": f"jdbc:sqlite:{tmp_path / 'inventory.db'}"}))
    r = cli("connectors", "create", str(flat), worker=worker)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Created connector jdbc-source-inc"
    r = cli("connectors", "create", str(flat), "--name", "jdbc-source-copy", worker=worker)
    assert r.returncode == 0, r.stderr
    r = cli("connectors", "list", "--json", worker=worker)
    assert sorted(json.loads(r.stdout)) == ["jdbc-source-copy", "jdbc-source-inc"]
    bad = tmp_path / "bad\u0007name.json"
    bad.write_text(flat.read_text())
    r = cli("connectors", "create", str(bad), worker=worker)
    assert r.returncode == 2 and "must not contain control characters" in r.stderr and "Traceback" not in r.stderr
    assert sorted(json.loads(cli("connectors", "list", "--json", worker=worker).stdout)) == [
        "jdbc-source-copy", "jdbc-source-inc"]
