"""Bad input: one clear message listing every problem, exit code 2, nothing written, no traceback."""

import json


from tests.conftest import cli


def _file(tmp_path, text, name="c.json"):
    f = tmp_path / name
    f.write_text(text)
    return str(f)


def _check(r, *needles, code=2):
    assert r.returncode == code, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr


def test_malformed_json(tmp_path, worker_file, lake):
    r = cli("connectors", "create", _file(tmp_path, '{"name": "a",'), worker=worker_file)
    _check(r, "malformed JSON at line 1")
    assert not (lake / "_connect").exists()


def test_every_problem_at_once(tmp_path, worker_file, lake):
    config = {"name": "bad", "connector.class": "FileStreamSource", "tasks.max": "two", "topic": "t",
              "fiel": "/tmp/x", "transforms": "route,nolabel", "transforms.route.type": "RegexRouter",
              "transforms.route.regex": "([a-z", "transforms.route.replacement": "x",
              "value.converter": "com.example.NoSuchConverter", "key.converter.schemas.enable": "maybe",
              "key.converter": "org.apache.kafka.connect.json.JsonConverter"}
    r = cli("validate", _file(tmp_path, json.dumps(config)), worker=worker_file)
    _check(r, "tasks.max: expected an integer, got 'two'", "file: missing required configuration",
           "warning: fiel: not a known configuration key, ignored; did you mean 'file'?",
           "transforms.route.regex: invalid regular expression",
           "transforms.nolabel.type: missing required configuration",
           "value.converter: unknown converter 'com.example.NoSuchConverter'",
           "key.converter.schemas.enable: expected a boolean")
    assert not (lake / "_connect").exists()


def test_unknown_connector_lists_known(tmp_path, worker_file):
    r = cli("validate", _file(tmp_path, json.dumps({"name": "x", "connector.class": "com.acme.Nope"})),
            worker=worker_file)
    _check(r, "unknown connector class 'com.acme.Nope'", "org.apache.kafka.connect.file.FileStreamSourceConnector")


def test_unresolvable_reference_never_shows_values(tmp_path, worker_file, monkeypatch):
    secret_file = tmp_path / "secrets.properties"
    secret_file.write_text("other=hunter2\n")
    config = {"name": "x", "connector.class": "FileStreamSource", "topic": "t",
              "file": f"${{file:{secret_file}:path}}"}
    worker_file.write_text(worker_file.read_text() + f"config.providers=file\n"
                                                     f"config.providers.file.param.allowed.paths={tmp_path}\n")
    r = cli("validate", _file(tmp_path, json.dumps(config)), worker=worker_file)
    _check(r, f"cannot resolve ${{file:{secret_file}:path}}: no key 'path'")
    assert "hunter2" not in r.stderr + r.stdout


def test_bad_worker_config(tmp_path, lake):
    w = tmp_path / "w.properties"
    w.write_text(f"lake.root={lake}\nplugin.path=/opt\n")
    r = cli("connectors", "list", worker=w)
    _check(r, "key.converter: missing required configuration", "plugin.path: is not allowed")


def test_corrupt_state_table(tmp_path, worker_file, lake):
    config = _file(tmp_path, json.dumps({"name": "a", "connector.class": "FileStreamSource", "file": "/etc/hostname",
                                         "topic": "t"}))
    assert cli("connectors", "create", config, worker=worker_file).returncode == 0
    for log in (lake / "_connect" / "connect-configs" / "_delta_log").glob("*.json"):
        log.write_text("garbage")
    r = cli("connectors", "list", worker=worker_file)
    _check(r, "connect-configs cannot be read")


def test_offsets_need_a_stopped_connector(tmp_path, worker_file):
    config = _file(tmp_path, json.dumps({"name": "a", "connector.class": "FileStreamSource", "file": "/etc/hostname",
                                         "topic": "t"}))
    assert cli("connectors", "create", config, worker=worker_file).returncode == 0
    r = cli("offsets", "reset", "a", worker=worker_file)
    _check(r, "offsets can only be reset when it is STOPPED", "lakeconnect connectors stop a")


def test_topic_partition_count_conflict(tmp_path, worker_file):
    assert cli("topics", "create", "t3", "--partitions", "3", worker=worker_file).returncode == 0
    r = cli("topics", "create", "t3", "--partitions", "2", worker=worker_file)
    _check(r, "3 partitions")


def test_unknown_connector_name(worker_file):
    r = cli("run", "ghost", worker=worker_file)
    _check(r, "connector 'ghost' not found")


def test_names_that_would_share_an_airflow_dag_are_refused(tmp_path, worker_file, lake):
    def create(name: str):
        config = {"name": name, "connector.class": "FileStreamSource", "file": "/etc/hostname", "topic": "t"}
        return cli("connectors", "create", _file(tmp_path, json.dumps(config)), worker=worker_file)

    assert create("orders feed").returncode == 0
    _check(create("orders_feed"), "name: 'orders_feed' would have the Airflow DAG id 'lakeconnect__orders_feed', "
                                  "which is connector 'orders feed''s")
    _check(create("maintenance"), "which is the lake's maintenance DAG's")
    for name, words in (("x" * 201, "at most 200 characters, not 201"), ("..", "must not be '.' or '..'"),
                        ("a\u2028b", "must be printable")):
        _check(create(name), words)
    r = cli("connectors", "list", worker=worker_file)
    assert r.returncode == 0 and "orders feed" in r.stdout and "orders_feed" not in r.stdout
