import pytest

from ingest.config.worker import load_worker, parse_worker
from ingest.errors import ConfigError

CONVERTERS = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "value.converter": "org.apache.kafka.connect.storage.StringConverter"}


def test_defaults_and_repo_file():
    w = load_worker("conf/worker.properties")
    assert w["lake.root"] == "./lake"
    assert w["offset.storage.topic"] == "connect-offsets"
    assert w["file.connectors.enable"] is False


def test_converters_are_required_as_on_msk():
    with pytest.raises(ConfigError) as e:
        parse_worker({})
    assert {p.key for p in e.value.problems} == {"key.converter", "value.converter"}


def test_blocked_keys_and_client_properties_name_the_rule():
    with pytest.raises(ConfigError) as e:
        parse_worker({**CONVERTERS, "plugin.path": "/x", "ssl.keystore.location": "/k", "producer.acks": "all",
                      "producer.linger.ms": "5", "consumer.max.poll.records": "10", "consumer.group.id": "g",
                      "lake.rot": "/typo"})
    by_key = {p.key: p.message for p in e.value.problems}
    assert set(by_key) == {"plugin.path", "ssl.keystore.location", "producer.linger.ms", "consumer.group.id", "lake.rot"}
    assert "blocked key" in by_key["plugin.path"]
    assert "starting with 'ssl.'" in by_key["ssl.keystore.location"]
    assert "producer.acks" in by_key["producer.linger.ms"]


def test_worker_from_environment(tmp_path, monkeypatch):
    f = tmp_path / "w.properties"
    f.write_text("lake.root=/data/lake\nkey.converter=StringConverter\nvalue.converter=StringConverter\n")
    monkeypatch.setenv("LAKECONNECT_WORKER", str(f))
    assert load_worker()["lake.root"] == "/data/lake"
