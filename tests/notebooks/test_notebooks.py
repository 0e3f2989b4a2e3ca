"""The notebooks, executed headless in a real Jupyter kernel (nbclient + ipykernel) as a user runs them
from `notebooks/`: each on a fresh lake, the CDC one against the project's MariaDB with binary logging.
A cell that raises fails the test; the notebooks check their own results with asserts as well."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import REPO

NOTEBOOKS = REPO / "notebooks"


def _execute(name: str, monkeypatch, lake, **env: str):
    monkeypatch.setenv("LAKECONNECT_NOTEBOOK_LAKE", str(lake))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("LAKECONNECT_WORKER", raising=False)
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return notebook


def _text(notebook) -> str:
    out = []
    for cell in notebook.cells:
        for o in cell.get("outputs", []):
            out.append(o.get("text", "") + json.dumps(o.get("data", {})))
    return "\n".join(out)


def test_quickstart(monkeypatch, tmp_path):
    notebook = _execute("quickstart.ipynb", monkeypatch, tmp_path)
    text = _text(notebook)
    assert "books-source task 0: batch 1 committed 3 records" in text
    assert "image/png" in text  # the chart was drawn
    assert (tmp_path / "quickstart" / "throughput-and-lag.png").stat().st_size > 10_000
    assert "records, 503 wait for flush.size (3503 in the topic); first: topics/nb-kafka_books/partition=0/" in text
    assert "objects hold 3000 records" in text


@pytest.mark.serial  # reads the MariaDB binlog to its end, as the CDC tests do
def test_cdc(monkeypatch, tmp_path, services):
    notebook = _execute("cdc.ipynb", monkeypatch, tmp_path,
                        LAKECONNECT_NOTEBOOK_MYSQL_HOST=services["LAKECONNECT_TEST_MARIADB_HOST"],
                        LAKECONNECT_NOTEBOOK_MYSQL_PORT=services["LAKECONNECT_TEST_MARIADB_PORT"])
    text = _text(notebook)
    assert "ops: ['r', 'r', 'u', 'd', None]" in text
    assert "mirror: [(1001, 'sally@example.com')]" in text
