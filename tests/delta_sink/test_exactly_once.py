"""Kill the Delta table sink after every step of a batch in turn, and between its table commits; run
again; the tables and offsets must be those of a run that never crashed.

The batch is the second of the connector: its MERGE rewrites files the first batch wrote, into two
tables (two topics), so a crash can fall after the new files are written (`delta-files`) or between
the two tables' commits (`delta-commit`). The kill is real (os._exit in a CLI process); the run after
it is made in this process, to spare a JVM start.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from deltalake import DeltaTable

from connectors.delta_sink.sink import FILES_WRITTEN, TABLE_COMMITTED
from ingest.runtime.faults import SINK_STEPS
from tests.conftest import write_worker
from tests.crash_kit import Scenario, check_exactly_once, clean_state
from tests.delta_sink._support import committed_offsets, make_worker, produce, sink_config, worker_of
from tests.delta_sink.test_debezium import FIRST, SECOND

TOPICS = ("inventory.customers", "inventory.archive")
# In the order a batch reaches them: the first table's files are written and committed inside `put`.
CRASHES = [*SINK_STEPS[:4], FILES_WRITTEN, TABLE_COMMITTED, *SINK_STEPS[4:]]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, spark) -> Path:
    """A lake after the first batch, with the second batch's records in the topics."""
    root = tmp_path_factory.mktemp("delta-eo")
    worker_file = make_worker(root)
    for topic in TOPICS:
        produce(spark, worker_file, topic, FIRST)
    worker = worker_of(worker_file)
    worker.create("cdc", sink_config("cdc", topics=",".join(TOPICS), **{
        "insert.mode": "upsert", "pk.mode": "record_key"}))
    worker.run("cdc")
    for topic in TOPICS:
        produce(spark, worker_file, topic, SECOND, version=2)
    return root / "lake"


def _copy(prepared: Path, root: Path) -> Path:
    shutil.copytree(prepared, root / "lake")
    return write_worker(root / "worker.properties", root / "lake")


def _state(worker_file: Path):
    lake = Path(worker_of(worker_file).lake_root)
    tables = {}
    for topic in TOPICS:
        dt = DeltaTable(str(lake / "tables" / topic))
        rows = sorted(tuple(r.values()) for r in dt.to_pyarrow_table().to_pylist())
        tables[topic] = (rows, dt.version(), dt.transaction_version("connect-cdc:task-0"))
    return tables, committed_offsets(worker_file, "cdc")


def _finish(worker_file: Path, name: str) -> list:
    reports = worker_of(worker_file).run(name)
    assert not reports[0].resumed  # killed after "done": the batch was complete
    return reports


def _scenario(prepared: Path) -> Scenario:
    """Killed after every step in turn, each run resuming the batch the one before left (the run after
    the kill between the two tables' commits finds the first table done and writes the second)."""
    return Scenario("cdc", lambda root: _copy(prepared, root), _state, CRASHES, finish=_finish)


@pytest.fixture(scope="module")
def baseline(prepared, tmp_path_factory):
    state = clean_state(replace(_scenario(prepared), finish=lambda w, name: worker_of(w).run(name)),
                        tmp_path_factory.mktemp("delta-eo-clean"))
    assert all(len(rows) == 5 for rows, _, _ in state[0].values())
    return state


def test_killed_after_each_step_then_run_again(tmp_path, prepared, baseline):
    check_exactly_once(_scenario(prepared), tmp_path, baseline)


def test_a_long_running_worker_killed_after_each_step_then_run_again(tmp_path, prepared, baseline):
    check_exactly_once(_scenario(prepared), tmp_path, baseline, through_worker=True)
