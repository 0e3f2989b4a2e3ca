"""Shared fixtures: the test services (tests/services/fixtures.py), one Spark session, fresh lakes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["tests.services.fixtures"]

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def spark():
    from ingest.spark import get_spark

    return get_spark({"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4"})


@pytest.fixture
def lake(tmp_path) -> Path:
    root = tmp_path / "lake"
    root.mkdir()
    return root


def write_worker(path: Path, lake: Path, **extra: str) -> Path:
    lines = {"lake.root": str(lake), "key.converter": "org.apache.kafka.connect.storage.StringConverter",
             "value.converter": "org.apache.kafka.connect.storage.StringConverter",
             "file.connectors.enable": "true", "spark.master": "local[2]", "spark.sql.shuffle.partitions": "4",
             **extra}
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return path


@pytest.fixture
def worker_file(tmp_path, lake) -> Path:
    return write_worker(tmp_path / "worker.properties", lake)


def cli(*args: str, worker: Path | None = None, env: dict[str, str] | None = None, stdin: str | None = None,
        timeout: int = 300) -> subprocess.CompletedProcess:
    """Run `python -m ingest` in a real process, as a user or a scheduler would."""
    argv = [sys.executable, "-m", "ingest"] + (["--worker", str(worker)] if worker else []) + list(args)
    full_env = {k: v for k, v in os.environ.items() if k != "LAKECONNECT_CRASH_AT"}
    full_env.update(env or {})
    return subprocess.run(argv, cwd=REPO, env=full_env, input=stdin, capture_output=True, text=True, timeout=timeout)
