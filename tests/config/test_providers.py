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
