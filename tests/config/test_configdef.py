import pytest

from ingest.config.configdef import (HIDDEN, ConfigDef, Importance, Password, Range, Type, ValidRegex, ValidString,
                                     mask, secret_values)
from ingest.errors import ConfigError


def definition() -> ConfigDef:
    return (ConfigDef()
            .define("connection.url", Type.STRING, importance=Importance.HIGH, doc="JDBC URL.")
            .define("connection.password", Type.PASSWORD, None)
            .define("batch.max.rows", Type.INT, 100, Range.at_least(1))
            .define("mode", Type.STRING, "bulk", ValidString.of("bulk", "incrementing"))
            .define("validate.non.null", Type.BOOLEAN, True)
            .define("table.whitelist", Type.LIST, "")
            .define("pattern", Type.STRING, None, ValidRegex())
            .allow_prefix("key.converter."))


def test_parses_typed_values_and_defaults():
    c = definition().parse({"connection.url": "jdbc:sqlite:x.db", "batch.max.rows": "5",
                            "validate.non.null": "FALSE", "table.whitelist": "a, b", "key.converter.x": "1"})
    assert c["batch.max.rows"] == 5
    assert c["validate.non.null"] is False
    assert c["table.whitelist"] == ["a", "b"]
    assert c["mode"] == "bulk"
    assert c.with_prefix("key.converter.") == {"x": "1"}


def test_every_problem_is_reported_per_key():
    with pytest.raises(ConfigError) as e:
        definition().parse({"batch.max.rows": "zero", "mode": "fast", "validate.non.null": "yes",
                            "pattern": "([a-z", "batch.max.row": "1"})
    keys = {p.key for p in e.value.problems}
    assert keys == {"connection.url", "batch.max.rows", "mode", "validate.non.null", "pattern", "batch.max.row"}
    text = str(e.value)
    assert "did you mean 'batch.max.rows'" in text
    assert "expected one of: bulk, incrementing" in text
    assert "missing required configuration" in text


def test_range_validator():
    with pytest.raises(ConfigError, match="batch.max.rows: value 0 must be at least 1"):
        definition().parse({"connection.url": "u", "batch.max.rows": "0"})


def test_passwords_never_print():
    c = definition().parse({"connection.url": "u", "connection.password": "s3cret!"})
    assert isinstance(c["connection.password"], Password)
    assert c.secret("connection.password") == "s3cret!"
    for text in (repr(c), str(c["connection.password"]), repr(c.masked()), str(c.masked())):
        assert "s3cret!" not in text
    assert c.masked()["connection.password"] == HIDDEN


def test_mask_keeps_provider_references_and_hides_secret_looking_keys():
    shown = mask({"connection.password": "${file:/run/secrets.properties:pw}", "producer.override.sasl.jaas.config": "x y",
                  "topic": "t"})
    assert shown["connection.password"] == "${file:/run/secrets.properties:pw}"
    assert shown["producer.override.sasl.jaas.config"] == HIDDEN
    assert shown["topic"] == "t"


def test_passwords_in_urls_are_masked_and_known_to_the_scrubber():
    raw = {"value.converter.schema.registry.url": "http://u:p%40ss@h1:8081,https://v:pw2@h2:8081/registry",
           "connection.url": "jdbc:sqlserver://h:1433;databaseName=d;password=pw3;user=x",
           "store.url": "http://h:9000/bucket", "db": "postgresql://alice@h/db", "query": "password=plain text",
           "connection.password": "pw4", "other.url": "${file:/run/s.properties:url}"}
    shown = mask(raw)
    assert shown["value.converter.schema.registry.url"] == ("http://u:[hidden]@h1:8081,"
                                                           "https://v:[hidden]@h2:8081/registry")
    assert shown["connection.url"] == "jdbc:sqlserver://h:1433;databaseName=d;password=[hidden];user=x"
    assert shown["store.url"] == raw["store.url"] and shown["db"] == raw["db"] and shown["query"] == raw["query"]
    assert shown["other.url"] == raw["other.url"] and shown["connection.password"] == HIDDEN
    assert sorted(secret_values(raw)) == ["p%40ss", "pw2", "pw3", "pw4"]


def test_int_overflow_is_an_error():
    with pytest.raises(ConfigError, match="does not fit in a int"):
        definition().parse({"connection.url": "u", "batch.max.rows": str(2**40)})
