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
    worker = {"config.providers": "env,file,directory", "config.providers.file.param.allowed.paths": str(tmp_path),
              "config.providers.directory.param.allowed.paths": str(tmp_path)}
    resolved = ConfigResolver(default_registry(), worker).resolve({
        "a": "${env:DB_PASSWORD}", "b": f"${{file:{props}:db.user}}", "c": f"${{directory:{secrets_dir}:token}}",
        "d": "plain", "e": "jdbc:mysql://h/db?user=${env:DB_PASSWORD}"})
    assert resolved == {"a": "from-env", "b": "alice", "c": "t0k3n", "d": "plain",
                        "e": "jdbc:mysql://h/db?user=from-env"}


def test_unresolvable_references_are_all_reported_without_values(tmp_path, monkeypatch):
    monkeypatch.delenv("NOPE", raising=False)
    with pytest.raises(ConfigError) as e:
        ConfigResolver(default_registry(), {"config.providers": "env,file",
                                            "config.providers.file.param.allowed.paths": str(tmp_path)}).resolve({
            "a": "${env:NOPE}", "b": "${vault:x:y}", "c": f"${{file:{tmp_path}/missing.properties:k}}"})
    assert [p.key for p in e.value.problems] == ["a", "b", "c"]
    assert "unknown config provider 'vault': the worker declares env, file" in str(e.value)


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
    from ingest.config.secrets import scrub

    monkeypatch.setenv("TOPIC_FROM_ENV", "pr1vate-topic")
    setup = validate_connector({"name": "x", "connector.class": "FileStreamSource", "file": "/tmp/f",
                                "topic": "${env:TOPIC_FROM_ENV}",
                                "producer.override.sasl.jaas.config": "password=hunter2",
                                "key.converter.secret.token": "tok3n"},
                               load_worker(None, {"file.connectors.enable": "true", "config.providers": "env"}),
                               default_registry())
    text = repr(setup)
    assert "hunter2" not in text and "tok3n" not in text and "pr1vate-topic" not in text
    assert scrub("writing to pr1vate-topic failed") == "writing to [hidden] failed"


def test_a_resolved_value_in_a_type_error_is_never_shown(monkeypatch):
    from ingest.config.connector import validate_connector
    from ingest.config.worker import load_worker

    monkeypatch.setenv("TASKS_FROM_ENV", "t0p-s3cret")
    with pytest.raises(ConfigError) as e:
        validate_connector({"name": "x", "connector.class": "FileStreamSource", "file": "/tmp/f", "topic": "t",
                            "tasks.max": "${env:TASKS_FROM_ENV}"},
                           load_worker(None, {"file.connectors.enable": "true", "config.providers": "env"}),
                           default_registry())
    assert "t0p-s3cret" not in str(e.value)
    assert ("tasks.max: the value ${env:TASKS_FROM_ENV} resolves to one that is not valid here (not shown: it comes "
            "from a config provider)") in str(e.value)


def test_only_the_workers_providers_and_only_below_their_allowed_paths(tmp_path, monkeypatch):
    """Kafka's worker declares the providers connectors may use, and KIP-993's allowed.paths limits the file
    and directory providers; here a provider declared without allowed.paths reads nothing, and only regular
    files of at most 1 MiB are read (a FIFO would block, /dev/zero never end)."""
    import os

    monkeypatch.setenv("HOME_GUESS", "x")
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "db.properties").write_text("password=pw\n")
    (secrets_dir / "big.properties").write_text("k=" + "x" * 2**20 + "\n")
    os.mkfifo(secrets_dir / "fifo.properties")
    (tmp_path / "outside.properties").write_text("password=not-yours\n")
    (secrets_dir / "link.properties").symlink_to(tmp_path / "outside.properties")

    def problem(worker: dict, value: str) -> str:
        with pytest.raises(ConfigError) as e:
            ConfigResolver(default_registry(), worker).resolve({"k": value})
        return e.value.problems[0].message

    assert "unknown config provider 'env': the worker declares none" in problem({}, "${env:HOME_GUESS}")
    assert "unknown config provider 'file'" in problem({"config.providers": "env"}, f"${{file:{tmp_path}/x:k}}")
    declared = {"config.providers": "file,directory"}
    assert "allows this provider no path" in problem(declared, f"${{file:{secrets_dir}/db.properties:password}}")
    limited = dict(declared, **{"config.providers.file.param.allowed.paths": str(secrets_dir),
                                "config.providers.directory.param.allowed.paths": str(secrets_dir)})
    resolver = ConfigResolver(default_registry(), limited)
    assert resolver.resolve({"k": f"${{file:{secrets_dir}/db.properties:password}}"}) == {"k": "pw"}
    for value, words in ((f"${{file:{tmp_path}/outside.properties:password}}", "outside the provider's allowed"),
                         (f"${{file:{secrets_dir}/../outside.properties:password}}", "outside the provider's allowed"),
                         (f"${{file:{secrets_dir}/link.properties:password}}", "outside the provider's allowed"),
                         ("${file:/etc/shadow:root}", "outside the provider's allowed"),
                         (f"${{file:{secrets_dir}/fifo.properties:k}}", "is not a regular file"),
                         (f"${{file:{secrets_dir}/big.properties:k}}", "larger than 1048576 bytes"),
                         ("${directory:/etc:passwd}", "outside the provider's allowed")):
        message = problem(limited, value)
        assert words in message and "not-yours" not in message, (value, message)
