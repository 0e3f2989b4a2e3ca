"""Topic configs (Kafka's names, defaults and checks): set at creation, changed later with
`topics alter`, given by a source's `topic.creation.default.*` keys; a compacted topic refuses records
without a key, as Kafka's broker does."""

from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable

from ingest.config.topic_configs import topic_configs
from ingest.errors import ConfigError, DataError
from ingest.topics import TopicTable
from tests.conftest import cli, cli_here


def _records(spark, n, keyed=True):
    key = "cast(concat('k', cast(id % 3 as string)) as binary)" if keyed else \
        "if(id = 2, cast(null as binary), cast('k' as binary))"
    return spark.range(0, n, 1, 2).selectExpr(f"{key} as key", "cast(cast(id as string) as binary) as value",
                                              "id as seq")


def test_kafka_defaults_and_checks():
    values = topic_configs("t", {"cleanup.policy": "compact,delete", "retention.ms": "-1", "segment.bytes": "1024"})
    assert values["cleanup.policy"] == ["compact", "delete"] and values["retention.ms"] == -1
    defaults = topic_configs("t", {})
    assert (defaults["retention.ms"], defaults["retention.bytes"], defaults["delete.retention.ms"],
            defaults["min.compaction.lag.ms"], defaults["cleanup.policy"]) == (604_800_000, -1, 86_400_000, 0, ["delete"])
    with pytest.raises(ConfigError) as e:
        topic_configs("orders", {"retention.ms": "-2", "retention.bytes": "lots", "cleanup.policy": "compacted",
                                 "retention.hours": "1", "delete.retention.ms": "-1"})
    assert sorted(p.key for p in e.value.problems) == [
        "cleanup.policy", "delete.retention.ms", "retention.bytes", "retention.hours", "retention.ms"]
    text = str(e.value)
    assert "topic 'orders'" in text and "value -2 must be at least -1" in text
    assert "Unknown topic config name: retention.hours" in text and "expected one of: delete, compact" in text
    with pytest.raises(ConfigError, match="conflict: min.compaction.lag.ms 10 is larger than max.compaction.lag.ms 5"):
        topic_configs("t", {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})


def test_create_refuses_bad_configs_and_creates_nothing(tmp_path):
    t = TopicTable(str(tmp_path), "orders")
    with pytest.raises(ConfigError, match="retention.ms: value -5 must be at least -1"):
        t.create(2, {"retention.ms": "-5"})
    assert not t.exists()


def test_alter_sets_and_deletes_configs_in_one_commit(tmp_path):
    t = TopicTable(str(tmp_path), "orders")
    t.create(2, {"retention.ms": "1000"})
    before = DeltaTable(t.uri).version()
    assert t.alter_configs({"retention.bytes": "2048", "retention.ms": "5000"}) == {
        "retention.bytes": "2048", "retention.ms": "5000"}
    assert t.alter_configs({}, ["retention.ms"]) == {"retention.bytes": "2048"}
    assert t.describe().configs == {"retention.bytes": "2048"} and t.describe().partitions == 2
    assert DeltaTable(t.uri).version() == before + 2
    meta = json.loads(DeltaTable(t.uri).metadata().description)["lakeconnect.topic"]
    assert meta == {"partitions": 2, "configs": {"retention.bytes": "2048"}}
    with pytest.raises(ConfigError, match="retention.bytes: value -7"):
        t.alter_configs({"retention.bytes": "-7"})
    assert t.describe().configs == {"retention.bytes": "2048"} and DeltaTable(t.uri).version() == before + 2


def test_compaction_needs_keys(spark, tmp_path):
    t = TopicTable(str(tmp_path), "events")
    t.create(1)
    t.append(_records(spark, 5, keyed=False), app_id="a", version=1)
    with pytest.raises(ConfigError, match=r"holds 1 record\(s\) without a key"):
        t.alter_configs({"cleanup.policy": "compact"})
    assert t.describe().configs == {}

    keyed = TopicTable(str(tmp_path), "customers")
    keyed.create(2)
    keyed.append(_records(spark, 6), app_id="a", version=1)
    keyed.alter_configs({"cleanup.policy": "compact"})
    version = DeltaTable(keyed.uri).version()
    with pytest.raises(DataError, match=r"Compacted topic cannot accept message without key \(record seq 2\): "
                                        r"topic 'customers' has cleanup.policy=compact"):
        keyed.append(_records(spark, 4, keyed=False), app_id="a", version=2)
    assert DeltaTable(keyed.uri).version() == version and sum(keyed.end_offsets().values()) == 6  # nothing written


def test_cli_alter_and_describe(tmp_path, worker_file):
    assert cli_here("topics", "create", "orders", "--partitions", "2", "--config", "retention.ms=1000",
               worker=worker_file).returncode == 0
    r = cli_here("topics", "alter", "orders", "--add-config", "cleanup.policy=compact,delete", "--add-config",
            "delete.retention.ms=60000", "--delete-config", "retention.ms", worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert "Completed updating config for topic orders." in r.stdout
    d = cli_here("topics", "describe", "orders", worker=worker_file)
    assert "\tConfigs: cleanup.policy=compact,delete,delete.retention.ms=60000\n" in d.stdout
    bad = cli_here("topics", "alter", "orders", "--add-config", "retention.ms=-9", worker=worker_file)
    assert bad.returncode == 2 and "retention.ms: value -9 must be at least -1" in bad.stderr
    assert "Traceback" not in bad.stderr
    nothing = cli_here("topics", "alter", "orders", worker=worker_file)
    assert nothing.returncode == 2 and "nothing to change" in nothing.stderr
    created = cli_here("topics", "create", "x", "--config", "retention.ms=-3", worker=worker_file)
    assert created.returncode == 2 and "value -3 must be at least -1" in created.stderr


def test_a_source_creates_its_topics_with_topic_creation_default_configs(tmp_path, worker_file, lake):
    src = tmp_path / "in.txt"
    src.write_text("a\nb\n")
    config = {"name": "files", "connector.class": "FileStreamSource", "file": str(src), "topic": "lines",
              "topic.creation.default.partitions": "2", "topic.creation.default.retention.ms": "3600000",
              "topic.creation.default.cleanup.policy": "delete", "topic.creation.default.replication.factor": "3"}
    path = tmp_path / "files.json"
    path.write_text(json.dumps({**config, "topic.creation.default.retention.bytes": "-4"}))
    bad = cli_here("connectors", "create", str(path), worker=worker_file)
    assert bad.returncode == 2 and "topic.creation.default.retention.bytes: value -4 must be at least -1" in bad.stderr
    path.write_text(json.dumps(config))
    assert cli_here("connectors", "create", str(path), worker=worker_file).returncode == 0
    r = cli("run", "files", worker=worker_file)
    assert r.returncode == 0, r.stderr
    d = TopicTable(str(lake), "lines").describe()
    assert d.partitions == 2 and d.configs == {"cleanup.policy": "delete", "retention.ms": "3600000"}


def test_configs_stored_before_they_were_checked_can_be_fixed(tmp_path):
    t = TopicTable(str(tmp_path), "old")
    t.create(1)
    meta = {"lakeconnect.topic": {"partitions": 1, "configs": {"retention.ms": "-9", "cleanup.policy": "compact"}}}
    DeltaTable(t.uri).alter.set_table_description(json.dumps(meta))
    with pytest.raises(ConfigError, match="retention.ms: value -9 must be at least -1"):
        t.alter_configs({"retention.bytes": "100"})
    assert t.alter_configs({}, ["retention.ms"]) == {"cleanup.policy": "compact"}
