"""A transform from outside this repository, installed with pip and found by its entry point."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli, write_worker
from tests.runtime.helpers import topic_rows

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "lakeconnect-example-transform"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> str:
    """The example plugin pip-installed into its own directory, as a user installs a plugin."""
    target = tmp_path_factory.mktemp("plugin-site")
    source = tmp_path_factory.mktemp("plugin-src") / PLUGIN.name  # a copy: the build leaves files beside it
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                        str(source)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return str(target)


def _env(plugin_path: str) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([plugin_path, os.environ.get("PYTHONPATH", "")])}


def test_installed_transform_is_listed_and_runs(tmp_path, lake, plugin_path):
    worker = write_worker(tmp_path / "worker.properties", lake)
    env = _env(plugin_path)
    listed = cli("plugins", "list", worker=worker, env=env)
    assert listed.returncode == 0 and "com.example.transforms.UpperCaseField" in listed.stdout, listed.stderr

    source = tmp_path / "in.txt"
    source.write_text("hello\nworld\n")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"name": "src", "connector.class": "FileStreamSource", "file": str(source),
                                  "topic": "lines", "transforms": "shout",
                                  "transforms.shout.type": "com.example.transforms.UpperCaseField"}))
    assert cli("connectors", "create", str(config), worker=worker, env=env).returncode == 0
    r = cli("run", "src", worker=worker, env=env)
    assert r.returncode == 0, r.stderr
    assert sorted(row[3] for row in topic_rows(lake, "lines")) == [b"HELLO", b"WORLD"]

    # Without the plugin on the path the same connector is refused with the name it could not find.
    r = cli("run", "src", worker=worker)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "com.example.transforms.UpperCaseField" in r.stderr
