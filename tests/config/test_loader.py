import json

import pytest

from ingest.config.loader import load_connector_file, parse_properties
from ingest.errors import ConfigError


def test_flat_and_nested_json(tmp_path):
    flat = tmp_path / "sink-config.json"
    flat.write_text(json.dumps({"name": "file-sink", "tasks.max": 1, "topics": "t"}))
    assert load_connector_file(flat) == ("file-sink", {"name": "file-sink", "tasks.max": "1", "topics": "t"})
    nested = tmp_path / "post.json"
    nested.write_text(json.dumps({"name": "file-sink", "config": {"topics": "t", "enabled": True}}))
    assert load_connector_file(nested) == ("file-sink", {"topics": "t", "enabled": "true", "name": "file-sink"})


def test_malformed_json_names_line_and_column(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "name": "x",\n  "topics": \n}')
    with pytest.raises(ConfigError, match=r"malformed JSON at line 4, column 1") as e:
        load_connector_file(bad)
    assert e.value.exit_code == 2


def test_missing_name_and_nested_values(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"topics": ["a"]}))
    with pytest.raises(ConfigError) as e:
        load_connector_file(f)
    assert {p.key for p in e.value.problems} == {"topics", "name"}


def test_properties_syntax():
    props = parse_properties(
        "# comment\n! also\nname=file-source\nfile : /tmp/a b.txt\ntopic  spaced\n"
        "long=one,\\\n    two\nescaped=tab\\there\nkey\\=with\\:sep=v\nempty=\n", source="x")
    assert props == {"name": "file-source", "file": "/tmp/a b.txt", "topic": "spaced", "long": "one,two",
                     "escaped": "tab\there", "key=with:sep": "v", "empty": ""}


def test_properties_file(tmp_path):
    f = tmp_path / "c.properties"
    f.write_text("name=p\nconnector.class=FileStreamSource\n")
    assert load_connector_file(f) == ("p", {"name": "p", "connector.class": "FileStreamSource"})


def test_missing_file():
    with pytest.raises(ConfigError, match="file not found"):
        load_connector_file("/nonexistent/c.json")
