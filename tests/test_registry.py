import ast
from pathlib import Path

import pytest

from ingest.errors import ConfigError
from ingest.registry import PluginKind, default_registry

ROOT = Path(__file__).resolve().parents[1]


def test_every_kind_has_plugins():
    registry = default_registry()
    for kind in PluginKind:
        assert registry.plugins(kind), f"no {kind.label} plugin installed"
    assert not registry.broken, registry.broken


@pytest.mark.parametrize("name", [
    "org.apache.kafka.connect.file.FileStreamSinkConnector", "FileStreamSinkConnector", "FileStreamSink",
    "org.apache.kafka.connect.file FileStreamSinkConnector",  # as the book prints it
])
def test_kafka_aliases(name):
    assert default_registry().get_connector(name).name == "FileStreamSink"


def test_unknown_plugin_lists_known_ones():
    with pytest.raises(ConfigError) as e:
        default_registry().get(PluginKind.TRANSFORM, "com.example.Nope", key="transforms.x.type")
    assert e.value.problems[0].key == "transforms.x.type"
    assert "org.apache.kafka.connect.transforms.RegexRouter" in str(e.value)


def test_runtime_never_imports_plugins():
    offenders = []
    for path in (ROOT / "ingest").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] == "connectors"]
    assert offenders == []
