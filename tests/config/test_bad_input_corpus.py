"""The bad-input corpus (`tests/config/bad_input/`, from a security review; its README says how each case
fared then): every malformed connector config, properties file and worker config gets a clear error naming
the key or line, exit code 2 from the CLI and HTTP 400 from the REST API, no traceback, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import cli

CORPUS = Path(__file__).parent / "bad_input"
CONNECTOR_CASES = sorted(p.name for p in CORPUS.glob("c*.*"))
WORKER_CASES = sorted(p.name for p in CORPUS.glob("w*.properties"))

# What each error must say: the key (or line) at fault. A connector case not listed must still fail cleanly.
NAMES = {
    "c01_empty.json": "empty",
    "c02_malformed.json": "malformed JSON",
    "c03_array.json": "JSON object",
    "c04_missing_class.json": "connector.class",
    "c05_unknown_class.json": "connector.class",
    "c06_tasks_string.json": "tasks.max",
    "c07_tasks_negative.json": "tasks.max",
    "c08_tasks_huge.json": "tasks.max",
    "c09_tasks_float.json": "tasks.max",
    "c10_bad_topics_regex.json": "topics.regex",
    "c11_cron_out_of_range.json": "lakeconnect.schedule",
    "c12_cron_words.json": "lakeconnect.schedule",
    "c13_empty_name.json": "name",  # an empty name in the file is refused, not replaced by the file's name
    "c14_name_slash.json": "name",
    "c15_duplicate_keys.json": "duplicate key 'mode'",
    "c17_nested_object.json": "expected a string value",
    "c19_bad_jdbc_url.json": "connection.url",
    "c20_bad_mode.json": "mode",
    "c21_negative_poll.json": "poll.interval.ms",
    "c24_router_bad_regex.json": "regex",
    "c26_unknown_converter.json": "converter",
    "c27_s3_no_bucket.json": "s3.bucket.name",
    "c28_s3_flush_zero.json": "flush.size",
    "c29_s3_ftp_store.json": "store.url",
    "c30_bad_unicode_escape.properties": "line 1",
    "c32_mysql_pw_metachar.json": None,  # valid: a password is no regex (it fails later, at the database)
    "c33_mysql_bad_include_regex.json": "include.list",
    "c34_bad_timezone.json": "db.timezone",
    "c36_bad_tolerance.json": "errors.tolerance",
    "c38_delta_empty_path.json": "path",
    "c39_filestream_disabled.json": "file.connectors.enable",
    "c40_missing_secret_file.json": "connection.password: unknown config provider 'file'",
    "c41_unknown_provider.json": "provider",
    "c44_offsets_table_traversal.json": "offsets.storage.topic",
    "c45_deep_nesting.json": "nested",
    "c46_huge_int_literal.json": "number",
    "c48_batch_max_rows_zero.json": "batch.max.rows",
    "c49_name_too_long.json": "at most 200 characters",
    "c50_name_dotdot.json": "must not be '.' or '..'",
    "c51_tasks_over_bound.json": "tasks.max: value 5000 must be no more than 1024",
    "c52_offsets_table_slash.json": "offsets.storage.topic: 'a/b' is not a valid table name",
    "c53_lone_surrogate.json": "lone surrogate",
    "c54_name_line_separator.json": "must be printable",
    "c55_too_many_keys.json": "a connector config has at most 1000 keys",
    "c56_huge_value.json": "query: a value has at most 65536 characters, this one 70000",
    "c57_mysql_bad_propagate_regex.json": "column.propagate.source.type: 'inventory.t.(price' is not a regular",
    "c58_s3_store_outside_lake.json": "store.url: /etc/lakeconnect-store is outside the lake",
    "c59_s3_bucket_traversal.json": "s3.bucket.name:",
    "c60_delta_path_outside_lake.json": "delta.table.path: /etc/lakeconnect/ is outside the lake",
    "c61_delta_path_other_bucket.json": "delta.table.path: s3://someone-elses-bucket/tables/ is outside the lake",
    "c62_sqlite_outside_lake.json": "connection.url: /etc/lakeconnect.db is outside the lake",
    "c63_delta_table_dotdot.json": "table.name.format: '..' is not a table name",
    "c31_no_name.properties": None,  # a file without a name is named after the file, as `--name` would name it
    "w01_no_converters.properties": "key.converter: missing required configuration",
    "w02_blocked_key.properties": "group.id",
    "w03_bad_boolean.properties": "file.connectors.enable",
    "w04_unknown_lake_key.properties": "lake.rooot",
    "w05_unknown_provider_class.properties": "config.providers.v.class: unknown config provider",
    "w06_non_utf8.properties": "not UTF-8",
    "w07_bad_backend.properties": "topic.backend",
    "w08_bad_maintenance_cron.properties": "maintenance.schedule",
    "w09_blocked_prefix.properties": "ssl.keystore.location",
    "w10_bad_override_policy.properties": "lake.client.config.override.policy",
    "w11_state_table_traversal.properties": "offset.storage.topic: '../../outside' is not a valid table name",
    "w12_cron_hour_out_of_range.properties": "maintenance.schedule: '0 25 * * *' is not a valid cron expression",
}


def _localise(text: str, tmp: Path) -> str:
    """The corpus's relative paths (`x.db`, `store`) inside this test's directory."""
    return text.replace("jdbc:sqlite:x.db", f"jdbc:sqlite:{tmp / 'x.db'}").replace("file://store",
                                                                                   (tmp / "store").as_uri())


def _worker(tmp: Path) -> Path:
    """The corpus's worker, its lake in this test's directory, which it allows (`x.db`, `store` are there)."""
    worker = tmp / "worker.properties"
    base = (CORPUS / "worker.properties").read_text()
    worker.write_text(base.replace("lake.root=lake", f"lake.root={tmp / 'lake'}\nlake.allowed.paths={tmp}"))
    return worker


def _clean_failure(r, name: str) -> None:
    assert r.returncode == 2, (name, r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr and "unexpected failure" not in r.stderr, (name, r.stderr)
    assert r.stderr.strip(), name


@pytest.mark.parametrize("name", CONNECTOR_CASES)
def test_connector_configs_fail_clearly_and_write_nothing(tmp_path, name):
    case = tmp_path / name
    raw = (CORPUS / name).read_bytes()
    try:
        case.write_text(_localise(raw.decode("utf-8"), tmp_path))
    except UnicodeDecodeError:  # the non-UTF-8 case stays as it is
        case.write_bytes(raw)
    worker = _worker(tmp_path)
    expected = NAMES.get(name, "")
    r = cli("connectors", "create", str(case), worker=worker)
    if expected is None:
        assert r.returncode == 0, (name, r.stderr)
        return
    _clean_failure(r, name)
    assert expected.lower() in r.stderr.lower(), (name, r.stderr)
    assert not (tmp_path / "lake" / "_connect" / "connect-configs").exists(), name


@pytest.mark.parametrize("name", WORKER_CASES)
def test_worker_configs_fail_clearly(tmp_path, name):
    raw = (CORPUS / name).read_bytes()
    worker = tmp_path / "worker.properties"
    worker.write_bytes(raw.replace(b"lake.root=lake", f"lake.root={tmp_path / 'lake'}".encode()))
    r = cli("connectors", "list", worker=worker)
    if name == "worker.properties":
        assert r.returncode == 0, r.stderr
        return
    _clean_failure(r, name)
    assert NAMES[name] in r.stderr, (name, r.stderr)
    assert not (tmp_path / "lake" / "_connect").exists(), name


def test_the_rest_api_refuses_each_case_with_a_400(tmp_path):
    from tests.rest.test_rest_api import Rest

    server = Rest(_worker(tmp_path))
    try:
        for name in CONNECTOR_CASES:
            if not name.endswith(".json") or NAMES.get(name, "") is None:
                continue
            raw = (CORPUS / name).read_bytes()
            try:
                body = _localise(raw.decode("utf-8"), tmp_path).encode("utf-8")
            except UnicodeDecodeError:
                body = raw
            status, error = server.call("POST", "/connectors", raw=body)  # the file as `curl -d @file` sends it
            assert status == 400, (name, status, error)
            assert isinstance(error, dict) and error["error_code"] == 400 and error["message"], (name, error)
        assert server.call("GET", "/connectors") == (200, [])
    finally:
        log = server.stop()
    assert "Traceback" not in log
