"""dags/lakeconnect_dags.py as Airflow parses it: fast, without Spark, one DAG per connector (files and
config store) with its schedule, tasks and params, bad connectors left out with a reason; the exit codes of
failed runs mapped to retried and not retried; `lakeconnect export job`."""

from __future__ import annotations

import datetime as dt
import json
import logging
import subprocess
import sys

from tests.conftest import REPO


SECRET = "dag-s3cr3t-9f8e7d"

IMPORT_PROBE = """
import sys, time
import airflow.sdk  # the DAG processor has Airflow imported before it reads a DAG file
t = time.perf_counter()
import importlib.util
spec = importlib.util.spec_from_file_location("lakeconnect_dags", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
took = time.perf_counter() - t
print(took, "pyspark" in sys.modules, sorted(k for k in vars(module) if k.startswith("lakeconnect__")))
"""


def _connectors(project):
    project.connector("orders-jdbc", **{
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "2",
        "connection.url": f"jdbc:sqlite:{project.root / 'shop.db'}", "connection.password": SECRET,
        "mode": "incrementing", "incrementing.column.name": "id", "topic.prefix": "shop-",
        "poll.interval.ms": "300000"})
    project.connector("orders-s3", **{
        "connector.class": "io.confluent.connect.s3.S3SinkConnector", "tasks.max": "3",
        "topics": "shop-orders,shop-lines", "s3.bucket.name": "b", "aws.access.key.id": "test",
        "aws.secret.access.key": SECRET,
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat", "flush.size": "3"})
    project.connector("cdc", **{"connector.class": "io.debezium.connector.mysql.MySqlConnector",
                                "lakeconnect.schedule": "*/10 * * * *", "signal.data.collection": "inv.signals",
                                "lakeconnect.pool": "spark-drivers"})
    (project.connectors / "broken.json").write_text('{"name": "broken", "config": {')
    project.connector("typo", **{"connector.class": "FileStreamSource", "topic": "t",
                                 "lakeconnect.schedule": "every hour"})
    project.connector("badpool", **{"connector.class": "FileStreamSource", "topic": "t",
                                    "lakeconnect.pool": "two words"})


def test_the_dag_file_imports_in_under_a_second_without_spark(project):
    _connectors(project)
    stored = project.root / "stored.json"
    stored.write_text(json.dumps({"name": "stored-file", "connector.class": "FileStreamSource",
                                  "file": str(project.root / "in.txt"), "topic": "t"}))
    assert project.cli("connectors", "create", str(stored)).returncode == 0
    best = None
    for _ in range(2):  # the first import of a cold file cache may be slower; the DAG processor's are warm
        done = subprocess.run([sys.executable, "-c", IMPORT_PROBE, str(REPO / "dags" / "lakeconnect_dags.py")],
                              capture_output=True, text=True, timeout=120, cwd=project.root)
        assert done.returncode == 0, done.stderr[-3000:]
        took, spark, dags = done.stdout.strip().splitlines()[-1].split(" ", 2)
        best = min(best or 99.0, float(took))
        assert spark == "False"
        assert dags == str(["lakeconnect__cdc", "lakeconnect__maintenance", "lakeconnect__orders-jdbc",
                            "lakeconnect__orders-s3", "lakeconnect__stored-file"])
    assert best < 1.0, f"the DAG file took {best:.2f} s to import"


def test_dagbag_has_one_dag_per_connector_with_schedule_tasks_and_params(project, airflow_db, caplog):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk import Asset, AssetAny

    _connectors(project)
    with caplog.at_level(logging.WARNING, logger="lakeconnect.airflow"):
        bag = DagBag(dag_folder=str(REPO / "dags"), safe_mode=False)
    assert bag.import_errors == {}
    assert sorted(bag.dags) == ["lakeconnect__cdc", "lakeconnect__maintenance", "lakeconnect__orders-jdbc",
                                "lakeconnect__orders-s3"]
    maintenance = bag.dags["lakeconnect__maintenance"]
    assert maintenance.schedule == "0 3 * * *" and maintenance.task_ids == ["maintain"]
    assert maintenance.max_active_runs == 1 and not maintenance.catchup
    # Left out, each with its reason.
    assert "broken.json: invalid configuration" in caplog.text and "malformed JSON" in caplog.text
    assert "connector 'typo': lakeconnect.schedule: 'every hour' is neither a cron expression" in caplog.text
    assert "connector 'badpool': lakeconnect.pool: 'two words' is not an Airflow pool name" in caplog.text

    source, sink, cdc = (bag.dags[f"lakeconnect__{n}"] for n in ("orders-jdbc", "orders-s3", "cdc"))
    assert source.schedule == dt.timedelta(minutes=5)  # poll.interval.ms
    assert cdc.schedule == "*/10 * * * *"  # lakeconnect.schedule
    lake = project.lake.resolve().as_uri()
    assert sink.schedule == AssetAny(*[Asset(name=f"{lake}/topics/{t}", uri=f"{lake}/topics/{t}",
                                                              group="lakeconnect-topic")
                                                        for t in ("shop-orders", "shop-lines")])
    assert [sorted(d.task_ids) for d in (source, sink, cdc)] == [
        ["prepare", "task-0", "task-1"], ["prepare", "task-0", "task-1", "task-2"], ["prepare", "task-0"]]
    assert all(d.max_active_runs == 1 and not d.catchup for d in (source, sink, cdc))
    assert {t.task_id: t.retries for t in source.tasks} == {"prepare": 3, "task-0": 3, "task-1": 3}
    # Connectors sharing a machine share a pool: their run tasks take its slots; prepare needs none.
    assert {t.task_id: t.pool for t in cdc.tasks} == {"prepare": "default_pool", "task-0": "spark-drivers"}
    assert {t.pool for t in source.tasks} == {"default_pool"}
    params = source.params.dump()
    assert params == {"action": "until_caught_up", "confirm": "", "tables": []}
    assert source.params.get_param("action").schema["enum"] == [
        "until_caught_up", "run_once", "incremental_snapshot", "pause", "resume", "reset_offsets"]

    # No secret anywhere in what Airflow stores and shows of a DAG.
    from airflow.serialization.serialized_objects import DagSerialization

    for d in (source, sink):
        text = json.dumps(DagSerialization.to_dict(d), default=str)
        assert SECRET not in text and "aws.secret.access.key" not in text
        assert SECRET not in (d.doc_md or "")


def test_exit_codes_retriable_are_retried_the_others_not(project):
    from ingest.orchestration.airflow_dags import (AirflowException, AirflowFailException, CliFailure,
                                                   airflow_error, run_cli)
    from ingest.orchestration.specs import Environment

    for code, retried in ((75, True), (3, True), (-9, True), (1, False), (2, False)):
        error = airflow_error(CliFailure(code, "boom"), "the run")
        assert isinstance(error, AirflowException) and isinstance(error, AirflowFailException) is not retried

    # The real thing: a database that does not answer is a RetriableError (exit 75); an unknown connector is not.
    source = project.root / "down.json"
    source.write_text(json.dumps({
        "name": "down", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": "jdbc:postgresql://127.0.0.1:9/nothing", "connection.attempts": "1",
        "connection.user": "u", "connection.password": SECRET, "mode": "bulk", "topic.prefix": "x-"}))
    assert project.cli("connectors", "create", str(source)).returncode == 0
    environment = Environment.from_env()
    lines: list[str] = []
    try:
        run_cli(environment, "run", "down", "--task", "0", "--json", echo=lines.append)
    except CliFailure as failure:
        assert failure.code == 75, lines
        assert not isinstance(airflow_error(failure, "run"), AirflowFailException)
        assert "cannot connect to" in str(failure)
    else:
        raise AssertionError("the run succeeded")
    assert SECRET not in "\n".join(lines)
    try:
        run_cli(environment, "run", "nope", echo=lines.append)
    except CliFailure as failure:
        assert failure.code == 2 and "connector 'nope' not found" in str(failure)
        assert isinstance(airflow_error(failure, "run"), AirflowFailException)


def test_export_job_is_a_databricks_job_definition_without_secrets(project, tmp_path):
    from ingest.orchestration.databricks import quartz_cron

    _connectors(project)
    for name in ("orders-jdbc", "orders-s3"):
        created = project.cli("connectors", "create", str(project.connectors / f"{name}.json"))
        assert created.returncode == 0, created.stderr
    out = tmp_path / "job.json"
    r = project.cli("export", "job", "orders-jdbc", "--out", str(out), "--wheel", "/Volumes/main/libs/lc.whl",
                    "--worker-path", "/Volumes/main/conf/worker.properties")
    assert r.returncode == 0, r.stderr
    job = json.loads(out.read_text())
    assert job["name"] == "lakeconnect-orders-jdbc" and job["max_concurrent_runs"] == 1
    assert job["schedule"] == {"quartz_cron_expression": "0 0/5 * * * ?", "timezone_id": "UTC",
                               "pause_status": "UNPAUSED"}
    assert [t["task_key"] for t in job["tasks"]] == ["task-0", "task-1"]
    wheel_task = job["tasks"][1]["python_wheel_task"]
    assert wheel_task == {"package_name": "lakeconnect", "entry_point": "lakeconnect", "parameters": [
        "--worker", "/Volumes/main/conf/worker.properties", "run", "orders-jdbc", "--task", "1",
        "--skip-missing-task", "--until-caught-up"]}
    assert job["tasks"][0]["libraries"] == [{"whl": "/Volumes/main/libs/lc.whl"}]
    assert job["tasks"][0]["job_cluster_key"] == job["job_clusters"][0]["job_cluster_key"]
    assert SECRET not in out.read_text()

    r = project.cli("export", "job", "orders-s3")  # to stdout; a sink waiting on its topics has no schedule here
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)
    assert "schedule" not in job and len(job["tasks"]) == 3 and SECRET not in r.stdout
    assert "note: a sink that waits for its topics' new records" in r.stderr

    r = project.cli("export", "job", "missing")
    assert r.returncode == 2 and "connector 'missing' not found" in r.stderr

    assert quartz_cron("*/10 * * * *") == "0 */10 * * * ?"
    assert quartz_cron("0 6 * * 1-5") == "0 0 6 ? * 2-6"
    assert quartz_cron("@daily") == "0 0 0 * * ?"
    assert quartz_cron(dt.timedelta(seconds=5)) == "0/5 * * * * ?"
    assert quartz_cron(dt.timedelta(hours=6)) == "0 0 0/6 * * ?"
    assert quartz_cron(dt.timedelta(minutes=7)) is None
    assert quartz_cron("0 6 1 * 1") is None  # day of month AND weekday: Quartz cannot
