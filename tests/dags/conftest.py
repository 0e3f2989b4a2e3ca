"""Airflow for the DAG tests: a private AIRFLOW_HOME with a SQLite metadata database, migrated once per
session (`airflow db migrate`, about 5 s), and the project's dags/ as the DAGs folder.

Airflow reads its settings when first imported, so the environment is set when this file is loaded, before
any test module imports `airflow`.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO, cli, write_worker

AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="lakeconnect-airflow-"))
atexit.register(shutil.rmtree, AIRFLOW_HOME, True)
os.environ.update({
    "AIRFLOW_HOME": str(AIRFLOW_HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
})


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """The migrated metadata database (once per session)."""
    done = subprocess.run([str(Path(sys.executable).with_name("airflow")), "db", "migrate"], capture_output=True,
                          text=True, timeout=300, env=os.environ.copy())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    from airflow import settings

    settings.configure_orm()  # the engine was made before the tables existed; pools must see them
    return AIRFLOW_HOME / "airflow.db"


class Project:
    """A lake, its worker file and a connectors directory, as the DAG file finds them through the env."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch, **worker: str):
        self.root = root
        self.lake = root / "lake"
        self.lake.mkdir(exist_ok=True)
        self.worker = write_worker(root / "worker.properties", self.lake, **worker)
        self.connectors = root / "connectors"
        self.connectors.mkdir(exist_ok=True)
        monkeypatch.setenv("LAKECONNECT_WORKER", str(self.worker))
        monkeypatch.setenv("LAKECONNECT_CONNECTORS_DIR", str(self.connectors))
        monkeypatch.setenv("LAKECONNECT_PYTHON", sys.executable)

    def connector(self, name: str, **config: str) -> Path:
        path = self.connectors / f"{name}.json"
        path.write_text(json.dumps({"name": name, "config": config}, indent=2))
        return path

    def cli(self, *args: str, env: dict[str, str] | None = None):
        return cli(*args, worker=self.worker, env=env)

    def dags(self) -> dict:
        from ingest.orchestration.airflow_dags import build_dags

        return build_dags()


@pytest.fixture
def project(tmp_path, monkeypatch) -> Project:
    return Project(tmp_path, monkeypatch)
