"""Airflow's tasks sending their runs to a long-running worker (LAKECONNECT_WORKER_URL): the connector's
DAG runs by `dag.test()`, its task streams the worker's log lines and reports into the task log, and a
worker that is down is a failure Airflow retries."""

from __future__ import annotations

import sqlite3

import pytest

from tests.worker.conftest import WorkerProcess

pytestmark = [pytest.mark.slow]


def _books(db, *ids: int) -> None:
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE IF NOT EXISTS books (id INTEGER PRIMARY KEY, title TEXT NOT NULL)")
    con.executemany("INSERT INTO books VALUES (?, ?)", [(i, f"book {i}") for i in ids])
    con.commit()
    con.close()


def test_a_dag_task_runs_on_the_worker_and_a_worker_that_is_down_is_retried(project, airflow_db, caplog,
                                                                            monkeypatch):
    from ingest.orchestration.airflow_dags import (AirflowFailException, CliFailure, airflow_error,
                                                   run_on_worker)

    db = project.root / "books.db"
    _books(db, 1, 2, 3)
    project.connector("books-jdbc", **{
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
        "connection.url": f"jdbc:sqlite:{db}", "mode": "incrementing", "incrementing.column.name": "id",
        "table.whitelist": "books", "topic.prefix": "dagw-", "poll.interval.ms": "60000"})
    assert project.cli("connectors", "apply", str(project.connectors / "books-jdbc.json")).returncode == 0
    worker = WorkerProcess(project.worker)
    try:
        monkeypatch.setenv("LAKECONNECT_WORKER_URL", worker.url)
        dag = project.dags()["lakeconnect__books-jdbc"]
        caplog.clear()
        run = dag.test()
        assert run.state == "success", {ti.task_id: ti.state for ti in run.get_task_instances()}
        messages = "\n".join(r.getMessage() for r in caplog.records)
        assert f"(on the worker at {worker.url})" in messages
        assert "[books-jdbc|task-0] task 0: batch 1 committed 3 records" in messages  # the worker's log line
        assert '"outcome": "COMMITTED"' in messages
        assert "batch 1 committed 3 records" in worker.log()  # and the batch ran there
    finally:
        worker.close()
    # the worker is gone: the task's failure is retried
    try:
        run_on_worker(worker.url, "books-jdbc", 0, True, echo=lambda line: None)
    except CliFailure as failure:
        assert failure.code == 75 and "is not reachable" in str(failure)
        assert not isinstance(airflow_error(failure, "run"), AirflowFailException)
    else:
        raise AssertionError("a run on a stopped worker succeeded")
