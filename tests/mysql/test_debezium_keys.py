"""The Debezium keys production connector JSON carries: accepted with Debezium's values and defaults; a
value asking for what the connector does not do is an error naming the key and what it supports (never a
silent difference from Debezium's events); keys nobody declares are warnings. Validation only: no server."""

from __future__ import annotations

import pytest

from ingest.config.connector import validate_connector
from ingest.config.worker import load_worker
from ingest.errors import ConfigError, Problem
from ingest.registry import default_registry

BASE = {"name": "inventory", "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "database.hostname": "db.internal", "database.port": "3306", "database.user": "debezium",
        "database.password": "dbz", "database.server.id": "184054", "topic.prefix": "dbserver1",
        "database.include.list": "inventory",
        "schema.history.internal.kafka.bootstrap.servers": "kafka:9092",
        "schema.history.internal.kafka.topic": "schema-changes.inventory"}

# What production configs set, at values the connector implements (Debezium's defaults, mostly spelled out).
PRODUCTION = {
    "decimal.handling.mode": "precise", "time.precision.mode": "adaptive_time_microseconds",
    "bigint.unsigned.handling.mode": "long", "binary.handling.mode": "bytes", "snapshot.locking.mode": "minimal",
    "snapshot.include.collection.list": "", "snapshot.select.statement.overrides": "",
    "skipped.operations": "t", "provide.transaction.metadata": "false", "database.ssl.mode": "preferred",
    "database.ssl.truststore": "/etc/kafka/truststore.jks", "database.ssl.truststore.password": "changeit",
    "signal.enabled.channels": "source", "event.processing.failure.handling.mode": "fail",
    "include.schema.comments": "false", "column.propagate.source.type": "", "datatype.propagate.source.type": "",
    "inconsistent.schema.handling.mode": "fail", "connect.timeout.ms": "30000", "database.initial.statements": "",
    "max.queue.size": "8192", "poll.interval.ms": "500", "gtid.source.includes": "", "gtid.source.excludes": "",
    "snapshot.fetch.size": "10000", "max.queue.size.in.bytes": "0",
    "owner.team": "payments", "ticket": "DATA-1234", "snapshot.mod": "initial",
}


def _validate(extra):
    worker = load_worker(None, {"lake.allowed.paths": "/etc/kafka"})  # where BASE's trust store is
    return validate_connector({**BASE, **extra}, worker, default_registry())


def test_a_production_config_validates_with_warnings_only_for_keys_nobody_declares():
    setup = _validate(PRODUCTION)
    assert setup.warnings == [
        Problem("owner.team", "not a known configuration key, ignored"),
        Problem("ticket", "not a known configuration key, ignored"),
        Problem("snapshot.mod", "not a known configuration key, ignored; did you mean 'snapshot.mode'?"),
    ]
    assert "changeit" not in repr(setup.config)  # the trust store's password is a password


@pytest.mark.parametrize(("key", "value", "supported"), [
    ("snapshot.locking.mode", "minimal_percona", "supports 'minimal' or 'extended' or 'none'"),
    ("schema.name.adjustment.mode", "avro", "supports 'none'"),
    ("database.initial.statements", "SET @token = 'hunter2'", "supports an empty value"),
])
def test_a_value_asking_for_what_is_not_built_names_the_key_and_what_is_supported(key, value, supported):
    with pytest.raises(ConfigError) as e:
        _validate({key: value})
    assert [p.key for p in e.value.problems] == [key]
    message = e.value.problems[0].message
    assert "asks for what this connector does not do yet" in message and supported in message, message
    assert "remove the key or set a supported value" in message
    assert "hunter2" not in message  # free text is not echoed


@pytest.mark.parametrize(("extra", "problems"), [
    ({"signal.enabled.channels": "source,jmx"},
     [("signal.enabled.channels", "jmx: a batch connector has no JMX MBean to receive signals; remove jmx")]),
    ({"signal.enabled.channels": "file", "signal.data.collection": "inventory.signals"},
     [("signal.enabled.channels", "file: the file channel is not supported; remove file")]),
    ({"signal.enabled.channels": "source,kafka"},
     [("signal.kafka.bootstrap.servers", "is required when signal.enabled.channels lists kafka: set the brokers"),
      ("signal.data.collection", "is required when signal.enabled.channels lists kafka: an incremental snapshot "
                                 "writes its watermark rows into the signalling table")]),
])
def test_a_signal_channel_that_cannot_be_used_is_an_error_saying_what_to_do(extra, problems):
    with pytest.raises(ConfigError) as e:
        _validate(extra)
    assert [(p.key, p.message[:len(m)]) for p, (_, m) in zip(e.value.problems, problems)] == problems, \
        e.value.problems
    assert len(e.value.problems) == len(problems)


def test_the_kafka_signal_channel_takes_debeziums_keys_and_defaults():
    setup = _validate({"signal.enabled.channels": "source,kafka", "signal.data.collection": "inventory.signals",
                       "signal.kafka.bootstrap.servers": "kafka:9092", "signal.kafka.poll.timeout.ms": "100",
                       "signal.consumer.security.protocol": "PLAINTEXT"})
    assert setup.warnings == []
    from connectors.mysql import config as C
    from connectors.mysql.kafka_signals import consumer_settings

    assert C.signal_topic(setup.config) == "dbserver1-signal" and setup.config[C.SIGNAL_KAFKA_GROUP] == "kafka-signal"
    settings = consumer_settings(setup.config)
    assert {k: settings[k] for k in ("bootstrap.servers", "group.id", "security.protocol")} == {
        "bootstrap.servers": "kafka:9092", "group.id": "kafka-signal", "security.protocol": "PLAINTEXT"}


def test_a_value_debezium_does_not_know_is_refused_with_debeziums_values():
    with pytest.raises(ConfigError, match=r"decimal.handling.mode: invalid value 'exact'; expected one of: "
                                          r"precise, double, string"):
        _validate({"decimal.handling.mode": "exact"})
    # Debezium 2.x's MySQL connector refuses time.precision.mode=adaptive too
    with pytest.raises(ConfigError, match=r"time.precision.mode: invalid value 'adaptive'; expected one of: "
                                          r"adaptive_time_microseconds, connect"):
        _validate({"time.precision.mode": "adaptive"})


@pytest.mark.parametrize(("value", "message"), [
    ("c,x,t", "unknown operation 'x'; expected a list of c, u, d and t, or none"),
    ("truncate", "unknown operation 'truncate'; expected a list of c, u, d and t, or none"),
])
def test_skipped_operations_are_checked(value, message):
    with pytest.raises(ConfigError) as e:
        _validate({"skipped.operations": value})
    assert len(e.value.problems) == 1 and str(e.value.problems[0]).startswith(f"skipped.operations: {message}")


@pytest.mark.parametrize("value", ["none", "c,u", "t", "c,u,d,t"])
def test_skipped_operations_take_debeziums_letters_truncate_included(value):
    assert _validate({"skipped.operations": value}).warnings == []


def test_values_are_case_insensitive_as_debeziums_enumerations():
    assert _validate({"decimal.handling.mode": "PRECISE", "snapshot.locking.mode": "None"}).warnings == []


@pytest.mark.parametrize(("key", "values"), [
    ("decimal.handling.mode", ("precise", "double", "string")),
    ("binary.handling.mode", ("bytes", "base64", "base64-url-safe", "hex")),
    ("bigint.unsigned.handling.mode", ("long", "precise")),
    ("time.precision.mode", ("adaptive_time_microseconds", "connect")),
    ("include.schema.comments", ("false", "true")),
    ("column.propagate.source.type", ("", r"inventory\.orders\.(id|total)", r"a\.b\.c,.*\.price")),
    ("datatype.propagate.source.type", ("", r".+\.DECIMAL", r"inventory\.orders\.VARCHAR,.+\.INT UNSIGNED")),
    ("database.ssl.mode", ("disabled", "preferred", "required", "verify_ca", "verify_identity")),
    ("snapshot.locking.mode", ("minimal", "extended", "none")),
    ("gtid.source.includes", ("", "3e11fa47-71ca-11e1-9e33-c80aa9429562", "3E11FA47-.*,a1b2.*")),
    ("gtid.source.excludes", ("", "3e11fa47-71ca-11e1-9e33-c80aa9429562")),
])
def test_every_value_debezium_has_for_these_is_implemented(key, values):
    for value in values:  # what they write is compared with Debezium's in tests/mysql/test_debezium_oracle.py
        assert _validate({key: value}).warnings == []


@pytest.mark.parametrize(("extra", "message"), [
    ({"snapshot.select.statement.overrides": "inventory.orders"},
     "names inventory.orders, but snapshot.select.statement.overrides.inventory.orders (the SELECT its snapshot "
     "reads) is not set"),
    ({"snapshot.select.statement.overrides": "inventory.orders",
      "snapshot.select.statement.overrides.inventory.orders": "DELETE FROM inventory.orders"},
     "snapshot.select.statement.overrides.inventory.orders must be a SELECT statement"),
    ({"snapshot.select.statement.overrides": "orders", "snapshot.select.statement.overrides.orders": "SELECT 1"},
     "'orders' is not <database>.<table>"),
])
def test_select_overrides_name_their_statement(extra, message):
    with pytest.raises(ConfigError) as e:
        _validate(extra)
    assert [str(p) for p in e.value.problems] == [f"snapshot.select.statement.overrides: {message}"]


def test_a_select_override_is_accepted_with_its_statement():
    setup = _validate({"snapshot.select.statement.overrides": "inventory.orders",
                       "snapshot.select.statement.overrides.inventory.orders":
                           "SELECT * FROM inventory.orders WHERE deleted = 0;"})
    assert setup.warnings == []
