"""Connector lifecycle and KIP-875 offsets: stop, alter, reset, resume; delete and re-create resumes."""

import json

from tests.conftest import cli, cli_here, write_worker
from tests.runtime.helpers import topic_rows


def _setup(tmp_path, lake, worker):
    source = tmp_path / "in.txt"
    source.write_text("a\nbb\nccc\n")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"name": "src", "connector.class": "FileStreamSource", "file": str(source),
                                  "topic": "t"}))
    assert cli_here("connectors", "create", str(config), worker=worker).returncode == 0
    return source, config


def _values(lake):
    return [r[3].decode() for r in sorted(topic_rows(lake, "t"), key=lambda r: r[1])]


def test_pause_stop_alter_reset_resume(tmp_path, lake, worker_file):
    source, _ = _setup(tmp_path, lake, worker_file)
    assert cli_here("connectors", "pause", "src", worker=worker_file).returncode == 0
    r = cli_here("run", "src", worker=worker_file)
    assert r.returncode == 0 and "not run (connector is PAUSED)" in r.stdout
    assert not (lake / "topics" / "t").exists()
    assert cli_here("connectors", "resume", "src", worker=worker_file).returncode == 0
    assert cli_here("run", "src", worker=worker_file).returncode == 0
    assert _values(lake) == ["a", "bb", "ccc"]

    assert cli_here("connectors", "stop", "src", worker=worker_file).returncode == 0
    body = tmp_path / "offsets.json"
    body.write_text(json.dumps({"offsets": [{"partition": {"filename": str(source)}, "offset": {"position": 2}}]}))
    r = cli_here("offsets", "alter", "src", str(body), worker=worker_file)
    assert r.returncode == 0, r.stderr
    listed = json.loads(cli_here("offsets", "list", "src", worker=worker_file).stdout)
    assert listed["offsets"] == [{"partition": {"filename": str(source)}, "offset": {"position": 2}}]
    assert cli_here("connectors", "resume", "src", worker=worker_file).returncode == 0
    assert cli_here("run", "src", worker=worker_file).returncode == 0
    assert _values(lake) == ["a", "bb", "ccc", "bb", "ccc"]

    assert cli_here("connectors", "stop", "src", worker=worker_file).returncode == 0
    assert cli_here("offsets", "reset", "src", worker=worker_file).returncode == 0
    assert json.loads(cli_here("offsets", "list", "src", worker=worker_file).stdout) == {"offsets": []}
    assert cli_here("connectors", "resume", "src", worker=worker_file).returncode == 0
    assert cli_here("run", "src", worker=worker_file).returncode == 0
    assert _values(lake) == ["a", "bb", "ccc", "bb", "ccc", "a", "bb", "ccc"]


def test_recreated_connector_resumes_from_shared_offsets(tmp_path, lake, worker_file):
    source, config = _setup(tmp_path, lake, worker_file)
    assert cli_here("run", "src", worker=worker_file).returncode == 0
    assert cli_here("connectors", "delete", "src", worker=worker_file).returncode == 0
    assert "src" not in cli_here("connectors", "list", worker=worker_file).stdout.split()
    with open(source, "a") as f:
        f.write("dddd\n")
    # A second worker with its own config store but the same offsets table, as MSK's offset.storage.topic.
    other = write_worker(tmp_path / "other.properties", lake, **{"lake.configs.table": "other-configs"})
    assert cli_here("connectors", "create", str(config), worker=other).returncode == 0
    assert cli_here("run", "src", worker=other).returncode == 0
    assert _values(lake) == ["a", "bb", "ccc", "dddd"]


def test_get_masks_secrets(tmp_path, worker_file):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"name": "s", "connector.class": "FileStreamSource", "file": "/etc/hostname",
                                  "topic": "t", "producer.override.sasl.jaas.config": "user=x password=hunter2"}))
    assert cli_here("connectors", "create", str(config), worker=worker_file).returncode == 0
    r = cli_here("connectors", "get", "s", worker=worker_file)
    assert "hunter2" not in r.stdout
    assert json.loads(r.stdout)["config"]["producer.override.sasl.jaas.config"] == "[hidden]"


def test_offsets_are_never_reset_silently(tmp_path, lake, worker_file):
    _setup(tmp_path, lake, worker_file)
    assert cli_here("run", "src", worker=worker_file).returncode == 0
    moved = write_worker(tmp_path / "moved.properties", lake, **{"offset.storage.topic": "fresh-offsets"})
    r = cli("run", "src", worker=moved)
    assert r.returncode == 2, r.stderr
    assert "has no offsets for it" in r.stderr and "lakeconnect offsets reset src" in r.stderr
    assert _values(lake) == ["a", "bb", "ccc"]
    for args in (("connectors", "stop", "src"), ("offsets", "reset", "src"), ("connectors", "resume", "src"),
                 ("run", "src")):
        r = cli_here(*args, worker=moved)
        assert r.returncode == 0, r.stderr
    assert _values(lake) == ["a", "bb", "ccc", "a", "bb", "ccc"]


def test_failure_shows_in_status_and_restart_clears_it(tmp_path, lake, worker_file):
    missing = tmp_path / "not-there.txt"
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"name": "broken", "connector.class": "FileStreamSource", "file": str(missing),
                                  "topic": "t"}))
    assert cli_here("connectors", "create", str(config), worker=worker_file).returncode == 0
    r = cli("run", "broken", worker=worker_file)
    assert r.returncode == 1 and "cannot read source file" in r.stderr and "Traceback" not in r.stderr
    status = json.loads(cli_here("connectors", "status", "broken", worker=worker_file).stdout)
    assert status["tasks"][0]["state"] == "FAILED"
    assert "cannot read source file" in status["tasks"][0]["trace"]
    r = cli_here("connectors", "restart", "broken", "--include-tasks", "--only-failed", worker=worker_file)
    assert r.returncode == 0, r.stderr
    status = json.loads(cli_here("connectors", "status", "broken", worker=worker_file).stdout)
    assert status["tasks"][0]["state"] == "UNASSIGNED" and "trace" not in status["tasks"][0]
    missing.write_text("now here\n")
    assert cli_here("run", "broken", worker=worker_file).returncode == 0
    status = json.loads(cli_here("connectors", "status", "broken", worker=worker_file).stdout)
    assert status["tasks"][0]["state"] == "RUNNING"


def test_values_from_providers_never_reach_errors_or_status(tmp_path, lake, worker_file):
    secret_path = str(tmp_path / "s3cr3t-location.txt")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"name": "sec", "connector.class": "FileStreamSource", "file": "${env:SRC_FILE}",
                                  "topic": "t"}))
    env = {"SRC_FILE": secret_path}
    worker_file.write_text(worker_file.read_text() + "config.providers=env\n")
    assert cli("connectors", "create", str(config), worker=worker_file, env=env).returncode == 0
    r = cli("run", "sec", worker=worker_file, env=env)
    assert r.returncode == 1
    assert "cannot read source file [hidden]" in r.stderr and "s3cr3t" not in r.stderr + r.stdout
    status = cli("connectors", "status", "sec", worker=worker_file, env=env).stdout
    assert "s3cr3t" not in status and "[hidden]" in status
    got = json.loads(cli("connectors", "get", "sec", worker=worker_file, env=env).stdout)
    assert got["config"]["file"] == "${env:SRC_FILE}"
