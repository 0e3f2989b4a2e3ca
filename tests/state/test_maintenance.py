"""Table maintenance (`ingest.maintenance`, `lakeconnect maintenance run`) on real Delta tables and Spark:
merged files, checkpoints, vacuum and state history keep every record, offset and app transaction, and
batches committing meanwhile are neither lost nor refused."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from ingest.delta._commit import commit_files, plan_write
from ingest.delta._files import write_files
from ingest.delta.read import snapshot_files
from ingest.errors import ConfigError, RetriableError, StateError
from ingest.maintenance import (
    CHECKPOINT,
    CLEAN,
    COMPACT,
    HISTORY,
    VACUUM,
    Maintainer,
    Settings,
    Target,
    compact_history,
    discover,
)
from ingest.state.stores import COMMITTED, PLANNED, Stores, state_uri
from ingest.topics import TopicTable
from ingest.topics._lock import lake_lock
from tests.conftest import cli

UPKEEP = (COMPACT, CHECKPOINT, VACUUM)


def _records(spark, start, n):
    return spark.range(start, start + n, 1, 1).selectExpr(
        "cast(concat('k', cast(id % 7 as string)) as binary) as key",
        "cast(concat('v', cast(id as string)) as binary) as value", "id as seq",
        "cast(null as int) as partition", "cast(null as timestamp) as timestamp")


def _rows(topic):
    return sorted((r.partition, r.offset, bytes(r.key), bytes(r.value)) for r in topic.read().collect())


def _settings(*ops, **kw):
    return Settings(operations=ops, vacuum_retention_hours=0, log_retention_hours=0, allow_short_vacuum=True, **kw)


def _stores(lake):
    return Stores.open(str(lake), configs="connect-configs", offsets="connect-offsets", status="connect-status",
                       runs="connect-runs")


def test_topic_upkeep_keeps_records_and_offsets_and_shrinks_storage(spark, lake):
    topic = TopicTable(str(lake), "orders", spark=spark)
    topic.create(2)
    for batch in range(12):
        topic.append(_records(spark, batch * 5, 5), app_id="src:task-0", version=batch + 1)
    before, ends = _rows(topic), topic.end_offsets()
    files = len(DeltaTable(topic.uri).file_uris())
    report = Maintainer(str(lake), None, _settings(*UPKEEP)).maintain(Target("topic", "orders", topic.uri))
    assert report.error is None, report.error
    assert report.done[COMPACT]["files_removed"] == files and report.files_after == 2  # one per partition
    assert report.done[CHECKPOINT]["log_entries_removed"] >= 12
    assert report.done[VACUUM]["files_deleted"] >= files
    assert _rows(topic) == before and topic.end_offsets() == ends
    assert report.stored_bytes < 1.5 * report.live_bytes + 20_000  # checkpoint and last log entry
    # App transactions survive the checkpoint and the log cleanup: a retried batch is still a no-op,
    assert topic.append(_records(spark, 0, 5), app_id="src:task-0", version=12) is None
    # and the next batch numbers on from the old end offsets.
    result = topic.append(_records(spark, 60, 5), app_id="src:task-0", version=13)
    assert sum(result.end_offsets.values()) == sum(ends.values()) + 5


def test_maintenance_applies_retention_and_offsets_stay(spark, lake):
    topic = TopicTable(str(lake), "hourly", spark=spark)
    topic.create(2, {"retention.ms": "3600000"})
    for batch in range(4):
        topic.append(_records(spark, batch * 5, 5), app_id="src:task-0", version=batch + 1)
    ends = topic.end_offsets()
    later = time.time() + 2 * 3600  # every record is two hours old
    report = Maintainer(str(lake), None, _settings(CLEAN, *UPKEEP), spark=spark, now=later).maintain(
        Target("topic", "hourly", topic.uri))
    assert report.error is None, report.error
    assert report.done[CLEAN]["records_removed"] == 20 and report.files_after == 0
    d = topic.describe()
    assert d.end_offsets == ends and d.start_offsets == ends and topic.read().count() == 0
    result = topic.append(_records(spark, 20, 5), app_id="src:task-0", version=5)
    assert {p: part.first for p, part in result.partitions.items()} == {p: ends[p] for p in result.partitions}


def test_a_pinned_append_lands_after_maintenance_but_not_after_another_batch(lake):
    uri = str(lake / "t")
    data = pa.table({"a": pa.array([1, 2], pa.int64())})
    for v in range(3):
        commit_files(p := plan_write(uri, data.schema, app_id="w", version=v + 1),
                     write_files(data.to_batches(), p.file_spec()))
    pinned = DeltaTable(uri).version()
    plan = plan_write(uri, data.schema, app_id="w", version=10, expected_version=pinned)
    DeltaTable(uri).optimize.compact()  # a merge of files by any engine changes no data
    # A checkpoint keeps the log entries a pinned write reads back to see what came in between.
    Maintainer(str(lake), None, Settings(operations=(CHECKPOINT,))).maintain(Target("state", "x", uri))
    assert commit_files(plan, write_files(data.to_batches(), plan.file_spec())) is not None
    assert DeltaTable(uri).to_pyarrow_table().num_rows == 8

    pinned = DeltaTable(uri).version()
    plan = plan_write(uri, data.schema, app_id="w", version=11, expected_version=pinned)
    commit_files(p := plan_write(uri, data.schema), write_files(data.to_batches(), p.file_spec()))  # a batch
    with pytest.raises(RetriableError, match="moved from version"):
        commit_files(plan, write_files(data.to_batches(), plan.file_spec()))

    # A rewrite (files removed) computed from one version accepts no commit in between, maintenance included.
    dt_ = DeltaTable(uri)
    plan = plan_write(uri, data.schema, expected_version=dt_.version())
    removes = snapshot_files(dt_, uri)
    DeltaTable(uri).optimize.compact()
    with pytest.raises(RetriableError, match="moved from version"):
        commit_files(plan, write_files(data.to_batches(), plan.file_spec()), removes=removes)


def test_state_history_keeps_the_newest_row_per_key_and_recent_rows(lake):
    stores = _stores(lake)
    for batch in range(1, 21):
        stores.offsets.commit("jdbc", {json.dumps({"table": t}): {"id": batch * 10 + t} for t in range(3)},
                              task=0, batch_id=batch, app_id="jdbc:task-0")
        stores.runs.record("jdbc", 0, batch, PLANNED, plan={"b": batch})
        stores.runs.record("jdbc", 0, batch, COMMITTED, plan={"b": batch})
        stores.status.set("jdbc", 0, "RUNNING")
    stores.runs.record("jdbc", 0, 21, PLANNED, plan={"b": 21})  # a batch in flight
    stores.configs.put("jdbc", {"connector.class": "x", "v": "1"})
    stores.configs.put("jdbc", {"connector.class": "x", "v": "2"})
    committed, last, status, config = (stores.offsets.committed("jdbc"), stores.runs.last("jdbc", 0),
                                       stores.status.get("jdbc"), stores.configs.get("jdbc"))
    later = time.time() + 30 * 24 * 3600  # every row is a month old
    targets = [t for t in discover(str(lake), [], []) if t.kind == "state"]
    assert sorted(t.name for t in targets) == ["connect-configs", "connect-offsets", "connect-runs", "connect-status"]
    reports = {r.name: r for r in Maintainer(str(lake), None, _settings(HISTORY), now=later).run(targets)}
    assert all(r.error is None for r in reports.values())
    assert reports["connect-offsets"].done[HISTORY] == {"rows_before": 60, "rows_after": 3, "files_removed": 20,
                                                       "files_added": 1}
    assert reports["connect-runs"].done[HISTORY]["rows_after"] == 1  # the batch in flight
    assert reports["connect-configs"].done[HISTORY]["rows_after"] == 1
    # The stores that read the tables before keep the rows of files they read, and drop those of files
    # maintenance removed: they see what fresh stores see.
    for stores in (stores, _stores(lake)):
        assert stores.offsets.committed("jdbc") == committed
        assert stores.runs.last("jdbc", 0) == last and stores.status.get("jdbc") == status
        assert stores.configs.get("jdbc") == config
        assert stores.offsets.read().num_rows == 3 and len(stores.offsets._files) == 1
    # The offsets' app transaction is in the log, not in the rows: batch 20 is still a no-op.
    assert not stores.offsets.commit("jdbc", {"p": {"id": 0}}, task=0, batch_id=20, app_id="jdbc:task-0")
    # Rows inside the window are all kept.
    again = Maintainer(str(lake), None, _settings(HISTORY)).run(targets)
    assert all(r.done[HISTORY] is None for r in again)


def test_history_rewrite_racing_a_batch_loses_nothing(lake, monkeypatch):
    stores = _stores(lake)
    for batch in range(1, 4):
        stores.offsets.commit("c", {'"p"': {"n": batch}}, task=0, batch_id=batch, app_id="c:task-0")
    import ingest.maintenance as m

    real = m.commit_files
    raced = []

    def racing(plan, files, **kw):
        if not raced:  # a batch commits between the rewrite's read and its commit
            raced.append(stores.offsets.commit("c", {'"q"': {"n": 9}}, task=0, batch_id=4, app_id="c:task-0"))
        return real(plan, files, **kw)

    monkeypatch.setattr(m, "commit_files", racing)
    uri = state_uri(str(lake), "connect-offsets")
    with pytest.raises(RetriableError, match="moved from version"):
        compact_history(uri, ("connector", "partition"), 2**62, None)
    report = Maintainer(str(lake), None, _settings(HISTORY)).maintain(Target("state", "connect-offsets", uri))
    assert report.error is None and report.done[HISTORY]["rows_after"] == 4
    assert {p: e.offset for p, e in _stores(lake).offsets.committed("c").items()} == {'"p"': {"n": 3}, '"q"': {"n": 9}}


def test_a_table_another_run_is_maintaining_is_left_to_it(lake):
    stores = _stores(lake)
    stores.status.set("c", 0, "RUNNING")
    target = Target("state", "connect-status", state_uri(str(lake), "connect-status"))
    with lake_lock(str(lake), "maintenance-state-connect-status"):
        report = Maintainer(str(lake), None, _settings(HISTORY)).maintain(target)
    assert report.retriable and "another maintenance run is working on state 'connect-status'" in report.error


def test_settings_refuse_a_vacuum_window_that_could_delete_a_batch_in_flight():
    with pytest.raises(ConfigError, match="--vacuum-retention-hours: must be at least 1"):
        Settings(vacuum_retention_hours=0).check()
    with pytest.raises(ConfigError, match=r"--history-retention-hours: must be 0 or more hours, not -1"):
        Settings(history_retention_hours=-1).check()


def test_cli_maintains_the_lake_and_reports_bad_flags(lake, worker_file):
    stores = _stores(lake)
    for b in range(1, 6):
        stores.offsets.commit("c", {'"p"': {"n": b}}, task=0, batch_id=b)
    old = time.time() - 7200
    orphan = lake / "_connect" / "connect-offsets" / "part-crashed-batch.parquet"
    orphan.write_bytes(b"PAR1")  # a file a batch wrote before it crashed, two hours ago
    os.utime(orphan, (old, old))
    done = cli("maintenance", "run", "--state-only", "--vacuum-retention-hours", "1", "--json", worker=worker_file)
    assert done.returncode == 0, done.stderr
    reports = {r["name"]: r for r in map(json.loads, done.stdout.splitlines())}
    # Recent rows are all kept; the five one-row files of five batches become one.
    assert reports["connect-offsets"]["done"]["history"] == {"rows_before": 5, "rows_after": 5, "files_removed": 5,
                                                             "files_added": 1}
    assert reports["connect-offsets"]["files_after"] == 1 and reports["connect-runs"]["files_after"] == 0
    assert reports["connect-offsets"]["done"]["vacuum"]["files_deleted"] == 1 and not orphan.exists()
    assert _stores(lake).offsets.committed("c")['"p"'].offset == {"n": 5}

    bad = cli("maintenance", "run", "--vacuum-retention-hours", "0", worker=worker_file)
    assert bad.returncode == 2 and "--vacuum-retention-hours: must be at least 1" in bad.stderr
    assert "Traceback" not in bad.stderr
    bad = cli("maintenance", "run", "--only", "defrag", worker=worker_file)
    assert bad.returncode == 2 and "--only: unknown operation(s) ['defrag']" in bad.stderr


def test_a_failure_report_never_shows_a_secret(lake, monkeypatch):
    from ingest.config import secrets

    secrets.register(["s3cr3t-key-value"])
    _stores(lake).status.set("c", 0, "RUNNING")

    def failing(self, target):
        raise StateError("store said: denied for key s3cr3t-key-value")

    monkeypatch.setattr(Maintainer, "_compact", failing)
    target = Target("state", "connect-status", state_uri(str(lake), "connect-status"))
    report = Maintainer(str(lake), None, _settings(COMPACT)).maintain(target)
    assert "denied for key" in report.error and "s3cr3t-key-value" not in report.error
