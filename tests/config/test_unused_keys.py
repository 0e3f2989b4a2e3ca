"""Keys nothing declares: accepted and ignored, as Kafka Connect accepts them ("was supplied but isn't a
known config"), and shown as warnings, a likely typo with the declared key it resembles. Declared keys keep
their strict validation."""

import json

import pytest

from ingest.config.connector import validate_connector
from ingest.config.worker import load_worker
from ingest.errors import ConfigError, Problem
from ingest.registry import default_registry
from tests.conftest import cli_here

FILE_SOURCE = {"name": "f", "connector.class": "FileStreamSource", "file": "/tmp/in.txt", "topic": "t"}


def _validate(config):
    worker = load_worker(None, {"file.connectors.enable": "true"})
    return validate_connector(config, worker, default_registry())


def test_a_key_nobody_declares_is_a_warning_not_an_error():
    setup = _validate({**FILE_SOURCE, "owner.team": "payments", "ticket": "DATA-1234", "topik": "x",
                       "transforms": "route", "transforms.route.type": "RegexRouter",
                       "transforms.route.regex": "t", "transforms.route.replacment": "u",
                       "transforms.route.replacement": "u"})
    assert setup.warnings == [
        Problem("owner.team", "not a known configuration key, ignored"),
        Problem("ticket", "not a known configuration key, ignored"),
        Problem("topik", "not a known configuration key, ignored; did you mean 'topic'?"),
        Problem("transforms.route.replacment",
                "not a known configuration key, ignored; did you mean 'replacement'?"),
    ]
    assert "owner.team" not in setup.config  # ignored: nothing reads it
    assert setup.config["topic"] == "t"


def test_declared_keys_stay_strict_and_the_warnings_come_with_the_errors():
    with pytest.raises(ConfigError) as e:
        _validate({**FILE_SOURCE, "tasks.max": "two", "owner.team": "payments"})
    assert [p.key for p in e.value.problems] == ["tasks.max"]
    assert e.value.warnings == [Problem("owner.team", "not a known configuration key, ignored")]
    assert "warning: owner.team: not a known configuration key, ignored" in str(e.value)


def test_converters_ignore_what_they_do_not_know_without_a_warning():
    """Kafka's converters ignore unknown settings (the book sets schemas.enable on ByteArrayConverter)."""
    setup = _validate({**FILE_SOURCE, "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
                       "value.converter.schemas.enable": "false"})
    assert setup.warnings == []


def test_validate_create_and_the_run_log_say_which_keys_were_ignored(tmp_path, worker_file):
    source = tmp_path / "in.txt"
    source.write_text("one\ntwo\n")
    config = tmp_path / "f.json"
    config.write_text(json.dumps({"name": "f", "config": {**FILE_SOURCE, "file": str(source),
                                                           "owner.team": "payments", "topik": "x"}}))
    r = cli_here("validate", str(config), worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert "warning: owner.team: not a known configuration key, ignored" in r.stdout
    assert "warning: topik: not a known configuration key, ignored; did you mean 'topic'?" in r.stdout
    r = cli_here("connectors", "create", str(config), worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert "WARNING [f] topik: not a known configuration key, ignored; did you mean 'topic'?" in r.stderr
    r = cli_here("run", "f", worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert "WARNING [f] owner.team: not a known configuration key, ignored" in r.stderr
    assert "f task 0: batch 1 committed 2 records" in r.stdout, r.stdout


def test_a_key_with_control_characters_cannot_forge_a_log_line():
    import logging

    from ingest.runtime.worker import _warn_unused

    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger("lakeconnect")
    logger.addHandler(handler)
    try:
        _warn_unused("f", _validate({**FILE_SOURCE, "owner\n[2026-01-01] ERROR forged": "x"}))
    finally:
        logger.removeHandler(handler)
    assert lines == ["[f] owner\\n[2026-01-01] ERROR forged: not a known configuration key, ignored"]
