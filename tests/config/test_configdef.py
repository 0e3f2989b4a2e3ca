import re

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
    with pytest.raises(ConfigError, match="out of range for a 32-bit integer"):
        definition().parse({"connection.url": "u", "batch.max.rows": str(2**40)})


def test_schedules_are_checked_field_by_field():
    from ingest.config.schedule import valid_schedule

    for good in ("0 3 * * *", "*/15 0-23/2 1,15 JAN-MAR MON-FRI", "0 0 L * *", "0 0 * * 5#3", "@daily", "none"):
        assert valid_schedule("k", good) is None, good
    for bad, words in (("61 25 * * *", "minute field '61' has 61, outside 0-59"),
                       ("0 3 * * 8", "day-of-week field '8' has 8, outside 0-7"),
                       ("0 3 * * */0", "invalid step '/0'"), ("0 3 32 * *", "outside 1-31"),
                       ("0 3 * FOO *", "'FOO', which is not a number or a name"),
                       ("every night", "neither a cron expression")):
        assert words in valid_schedule("k", bad), bad


def test_table_names_stay_inside_their_directory():
    from ingest.config.configdef import valid_table_name

    assert valid_table_name("k", "connect-offsets") is None and valid_table_name("k", "a.b_c-1") is None
    for bad in ("../../../..escaped", "..", ".", "a/b", "", "x" * 250, "a b"):
        assert "is not a valid table name" in valid_table_name("k", bad), bad


def test_json_bodies_are_refused_with_a_reason():
    from ingest.config.loader import parse_json

    for text, words in (('{"mode": "bulk", "mode": "timestamp"}', "duplicate key 'mode'"),
                        ("[" * 100_000, "nested more than 64 levels deep"),
                        ("[" * 70 + "]" * 70, "nested more than 64 levels deep"),
                        ('{"n": ' + "9" * 5000 + "}", "more than 4300 digits"),
                        ('{"s": "\\ud800"}', "lone surrogate"), (b'{"s": "\xff"}', "not UTF-8"),
                        ('{"a": 1', "malformed JSON at line 1")):
        with pytest.raises(ValueError, match=re.escape(words)):
            parse_json(text)
    assert parse_json('{"a": [1, {"b": "\\u00e9"}]}') == {"a": [1, {"b": "é"}]}


def test_a_malformed_unicode_escape_in_a_properties_file_names_its_line():
    from ingest.config.loader import parse_properties

    assert parse_properties("a=\\u00e9\\tb\nc=x\\\n  y\n", source="s") == {"a": "é\tb", "c": "xy"}
    with pytest.raises(ConfigError, match=r"line 3: malformed \\uxxxx escape '\\u12zz'"):
        parse_properties("# comment\nconnector.class=JdbcSource\nname=esc\\u12zz\n", source="s")
