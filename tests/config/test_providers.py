import pytest

from ingest.config.providers import ConfigResolver
from ingest.errors import ConfigError
from ingest.registry import default_registry


def test_env_file_and_directory_providers(tmp_path, monkeypatch):
    monkeypatch.setenv("DB_PASSWORD", "from-env")
    props = tmp_path / "secrets.properties"
    props.write_text("db.user=alice\n")
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "token").write_text("t0k3n")
    resolved = ConfigResolver(default_registry(), {}).resolve({
        "a": "${env:DB_PASSWORD}", "b": f"${{file:{props}:db.user}}", "c": f"${{directory:{secrets_dir}:token}}",
        "d": "plain", "e": "jdbc:mysql://h/db?user=${env:DB_PASSWORD}"})
    assert resolved == {"a": "from-env", "b": "alice", "c": "t0k3n", "d": "plain", "e": "jdbc:mysql://h/db?user=from-env"}


def test_unresolvable_references_are_all_reported_without_values(tmp_path, monkeypatch):
    monkeypatch.delenv("NOPE", raising=False)
    with pytest.raises(ConfigError) as e:
        ConfigResolver(default_registry(), {}).resolve({
            "a": "${env:NOPE}", "b": "${vault:x:y}", "c": f"${{file:{tmp_path}/missing.properties:k}}"})
    assert [p.key for p in e.value.problems] == ["a", "b", "c"]
    assert "unknown config provider 'vault'" in str(e.value)


def test_worker_declared_provider_with_params(tmp_path, monkeypatch):
    monkeypatch.setenv("ALLOWED_X", "1")
    monkeypatch.setenv("SECRET_Y", "2")
    worker = {"config.providers": "myenv",
              "config.providers.myenv.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
              "config.providers.myenv.param.allowlist.pattern": "ALLOWED_.*"}
    r = ConfigResolver(default_registry(), worker)
    assert r.resolve({"a": "${myenv:ALLOWED_X}"}) == {"a": "1"}
    with pytest.raises(ConfigError, match="no key 'SECRET_Y'"):
        r.resolve({"a": "${myenv:SECRET_Y}"})


def test_validated_setup_never_prints_secrets(monkeypatch):
    from ingest.config.connector import validate_connector
    from ingest.config.worker import load_worker
    from ingest.runtime.secrets import scrub

    monkeypatch.setenv("TOPIC_FROM_ENV", "pr1vate-topic")
    setup = validate_connector({"name": "x", "connector.class": "FileStreamSource", "file": "/tmp/f",
                                "topic": "${env:TOPIC_FROM_ENV}",
                                "producer.override.sasl.jaas.config": "password=hunter2",
                                "key.converter.secret.token": "tok3n"},
                               load_worker(None, {"file.connectors.enable": "true"}), default_registry())
    text = repr(setup)
    assert "hunter2" not in text and "tok3n" not in text and "pr1vate-topic" not in text
    assert scrub("writing to pr1vate-topic failed") == "writing to [hidden] failed"


def test_resolved_value_in_a_type_error_is_scrubbed(monkeypatch):
    from ingest.config.connector import validate_connector
    from ingest.config.worker import load_worker
    from ingest.runtime.secrets import scrub

    monkeypatch.setenv("TASKS_FROM_ENV", "t0p-s3cret")
    with pytest.raises(ConfigError) as e:
        validate_connector({"name": "x", "connector.class": "FileStreamSource", "file": "/tmp/f", "topic": "t",
                            "tasks.max": "${env:TASKS_FROM_ENV}"},
                           load_worker(None, {"file.connectors.enable": "true"}), default_registry())
    assert "t0p-s3cret" not in scrub(str(e.value))
    assert "tasks.max: expected an integer" in scrub(str(e.value))
