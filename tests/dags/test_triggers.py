"""Manual triggers of a connector's DAG (`dag.test()` against the SQLite metadata database): the params
are checked before anything changes; pause, resume and reset act on the lake's config and offset stores.
None of these runs starts Spark: every action here stops before a batch, and maintenance of state tables
alone needs none."""

from __future__ import annotations

import json

import pytest


from ingest.orchestration.airflow_dags import AirflowException, AirflowFailException, check_trigger


def _file_source(project, name="src"):
    project.connector(name, **{"connector.class": "FileStreamSource", "file": str(project.root / "in.txt"),
                               "topic": "lines", "lakeconnect.schedule": "@hourly"})


def _state(project, name):
    from ingest.state.stores import ConfigStore

    return ConfigStore(str(project.lake / "_connect" / "connect-configs")).require(name)["target_state"]


def _offsets(project, name):
    from ingest.state.stores import OffsetStore

    committed = OffsetStore(str(project.lake / "_connect" / "connect-offsets")).committed(name).values()
    return [{"partition": e.partition, "offset": e.offset} for e in committed]


def _configs(project) -> list[dict]:
    from deltalake import DeltaTable

    return sorted(DeltaTable(str(project.lake / "_connect" / "connect-configs")).to_pyarrow_table().to_pylist(),
                  key=lambda r: r["version"])


def _states(dag_run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}


def test_bad_params_are_refused_with_a_message_before_anything_changes(project):
    from ingest.orchestration.specs import ConnectorSpec

    spec = ConnectorSpec("src", {"connector.class": "FileStreamSource", "topic": "t"})
    with pytest.raises(AirflowFailException, match="confirm set to 'src'. Nothing was changed"):
        check_trigger(spec, {"action": "reset_offsets", "confirm": "sr"})
    with pytest.raises(AirflowFailException, match="takes no incremental snapshot signals"):
        check_trigger(spec, {"action": "incremental_snapshot", "tables": ["db.t"]})
    with pytest.raises(AirflowFailException, match="tables is only for incremental_snapshot"):
        check_trigger(spec, {"action": "run_once", "tables": ["db.t"]})
    with pytest.raises(AirflowFailException, match="unknown action 'explode'"):
        check_trigger(spec, {"action": "explode"})
    cdc = ConnectorSpec("cdc", {"connector.class": "MySqlCdc", "signal.data.collection": "db.signals"})
    with pytest.raises(AirflowFailException, match=r"not such names: nodot"):
        check_trigger(cdc, {"action": "incremental_snapshot", "tables": ["nodot"]})
    # a comma would split one name in two on the CLI; a name longer than MySQL's 64 characters; too many
    with pytest.raises(AirflowFailException, match=r"without a comma \(not such names: db.a,b.c\)"):
        check_trigger(cdc, {"action": "incremental_snapshot", "tables": ["db.a,b.c"]})
    with pytest.raises(AirflowFailException, match=r"at most 64 characters"):
        check_trigger(cdc, {"action": "incremental_snapshot", "tables": ["db." + "t" * 65]})
    with pytest.raises(AirflowFailException, match=r"tables names 1001 tables; at most 1000"):
        check_trigger(cdc, {"action": "incremental_snapshot", "tables": [f"db.t{i}" for i in range(1001)]})
    assert check_trigger(cdc, {"action": "incremental_snapshot", "tables": ["db.t"]}) == "incremental_snapshot"
    assert check_trigger(spec, {"action": "reset_offsets", "confirm": "src"}) == "reset_offsets"
    assert not isinstance(AirflowFailException("x"), type(None)) and issubclass(AirflowFailException, AirflowException)


def test_unknown_params_are_accepted_with_a_warning(project, caplog):
    from ingest.orchestration.specs import ConnectorSpec

    spec = ConnectorSpec("src", {"connector.class": "FileStreamSource", "topic": "t"})
    with caplog.at_level("WARNING", logger="lakeconnect.airflow"):
        assert check_trigger(spec, {"action": "run_once", "acton": "pause"}) == "run_once"
    assert "trigger params 'acton' are not known here and are ignored" in caplog.text


def test_a_param_of_the_wrong_type_creates_no_run(project, airflow_db):
    from airflow.sdk.exceptions import ParamValidationError

    _file_source(project)
    dag = project.dags()["lakeconnect__src"]
    for conf in ({"tables": "db.t"}, {"action": "explode"}, {"confirm": 42}, {"tables": ["db.a,b.c"]},
                 {"tables": [f"db.t{i}" for i in range(1001)]}):
        with pytest.raises(ParamValidationError):
            dag.test(run_conf=conf)
    assert not (project.lake / "_connect").exists()  # not even the connector file was applied


def test_pause_resume_and_reset_with_confirmation(project, airflow_db):
    _file_source(project)
    dag = project.dags()["lakeconnect__src"]

    run = dag.test(run_conf={"action": "pause"})
    assert run.state == "success" and _states(run) == {"prepare": "success", "task-0": "skipped"}
    assert _state(project, "src") == "PAUSED"  # the file was applied (created), then paused

    # Offsets to reset, written the KIP-875 way (no batch, no Spark).
    offsets = project.root / "offsets.json"
    offsets.write_text(json.dumps({"offsets": [{"partition": {"filename": "in.txt"}, "offset": {"position": 7}}]}))
    assert project.cli("connectors", "stop", "src").returncode == 0
    assert project.cli("offsets", "alter", "src", str(offsets)).returncode == 0
    run = dag.test(run_conf={"action": "resume"})
    assert run.state == "success" and _state(project, "src") == "RUNNING"

    before = _configs(project)
    run = dag.test(run_conf={"action": "reset_offsets", "confirm": "wrong"})
    assert run.state == "failed" and _states(run) == {"prepare": "failed", "task-0": "upstream_failed"}
    assert _offsets(project, "src") == [{"partition": {"filename": "in.txt"}, "offset": {"position": 7}}]
    assert _configs(project) == before  # nothing changed

    run = dag.test(run_conf={"action": "reset_offsets", "confirm": "src"})
    assert run.state == "success", _states(run)
    assert _offsets(project, "src") == []
    assert _state(project, "src") == "RUNNING"  # stopped for the reset, then put back


def test_a_connector_gone_from_the_store_fails_clearly_and_changes_nothing(project, airflow_db, caplog):
    path = project.root / "stored.json"
    path.write_text(json.dumps({"name": "stored", "connector.class": "FileStreamSource",
                                "file": str(project.root / "in.txt"), "topic": "t"}))
    assert project.cli("connectors", "create", str(path)).returncode == 0
    dag = project.dags()["lakeconnect__stored"]  # a store-only connector has a DAG too
    assert dag.test(run_conf={"action": "pause"}).state == "success"  # Airflow knows the DAG now
    assert project.cli("connectors", "delete", "stored").returncode == 0  # gone before the next parse
    before = _configs(project)
    caplog.clear()
    run = dag.test(run_conf={"action": "pause"})
    assert run.state == "failed" and _states(run) == {"prepare": "failed", "task-0": "upstream_failed"}
    assert "error: connector 'stored' not found (known connectors: none)" in caplog.text
    assert _configs(project) == before


@pytest.mark.services
def test_incremental_snapshot_trigger_writes_the_signal_and_a_bad_table_writes_none(project, airflow_db, services,
                                                                                    caplog):
    import uuid

    import sqlalchemy as sa

    from tests.mysql._cdc import connector_config

    db = f"lc_dag_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(services["LAKECONNECT_TEST_MARIADB_URL"])
    with admin.begin() as c:
        c.exec_driver_sql(f"CREATE DATABASE {db}")
        c.exec_driver_sql(f"CREATE TABLE {db}.books (id INT PRIMARY KEY, title TEXT)")
        # a name with a backtick in it: the signal's INSERT quotes it as MariaDB quotes identifiers
        c.exec_driver_sql(f"CREATE TABLE {db}.`sig``nals` (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32), data TEXT)")
    try:
        project.connector("cdc", **connector_config(services, **{
            "database.include.list": db, "table.include.list": f"{db}.books", "topic.prefix": "dagcdc",
            "signal.data.collection": f"{db}.sig`nals", "lakeconnect.schedule": "none"}))
        dag = project.dags()["lakeconnect__cdc"]
        assert dag.schedule is None  # `none`: only when triggered

        # A table the connector does not capture: refused by the signal command, no row written.
        run = dag.test(run_conf={"action": "incremental_snapshot", "tables": [f"{db}.nope"]},
                       mark_success_pattern=r"task-\d+")
        assert run.state == "failed" and _states(run)["prepare"] == "failed"
        assert f"not captured <db>.<table> names: {db}.nope" in caplog.text
        with admin.begin() as c:
            assert c.exec_driver_sql(f"SELECT COUNT(*) FROM {db}.`sig``nals`").scalar() == 0

        # The batches themselves are not run here (tests/mysql owns the binlog): marked done.
        run = dag.test(run_conf={"action": "incremental_snapshot", "tables": [f"{db}.books"]},
                       mark_success_pattern=r"task-\d+")
        assert run.state == "success", _states(run)
        with admin.begin() as c:
            rows = c.exec_driver_sql(f"SELECT id, type, data FROM {db}.`sig``nals`").all()
        assert [(r[1], json.loads(r[2])) for r in rows] == [
            ("execute-snapshot", {"data-collections": [f"{db}.books"], "type": "incremental"})]
    finally:
        with admin.begin() as c:
            c.exec_driver_sql(f"DROP DATABASE {db}")
        admin.dispose()


def test_the_maintenance_dag_runs_maintenance_of_the_lake(project, airflow_db):
    from ingest.state.stores import OffsetStore

    offsets = OffsetStore(str(project.lake / "_connect" / "connect-offsets"))
    for batch in range(1, 5):
        offsets.commit("src", {'{"filename":"in.txt"}': {"position": batch}}, task=0, batch_id=batch)
    run = project.dags()["lakeconnect__maintenance"].test()
    assert run.state == "success" and _states(run) == {"maintain": "success"}
    # The four one-row files of four batches are one now, the offsets as they were.
    from deltalake import DeltaTable

    assert len(DeltaTable(offsets.uri).file_uris()) == 1
    assert _offsets(project, "src") == [{"partition": {"filename": "in.txt"}, "offset": {"position": 4}}]
