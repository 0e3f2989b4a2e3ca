"""One Spark job appending to many topics (`append_topics`): the same topics as appends one at a time, each
topic's commit its own and exactly once, and whatever the job cannot take left to `TopicTable.append`."""

from __future__ import annotations

import os

import pytest
from deltalake import DeltaTable

import ingest.topics.many as many
from ingest.errors import DataError
from ingest.topics import TopicTable
from ingest.topics.many import append_topics

COLUMNS = ["partition", "offset", "timestamp_type", "key", "value", "headers", "key_schema_id", "value_schema_id"]
# name, partitions, configs
TOPICS = [("plain", 1, {}), ("keyed3", 3, {}), ("log-time", 2, {"message.timestamp.type": "LogAppendTime"}),
          ("compacted", 1, {"cleanup.policy": "compact"}), ("empty", 1, {})]


def _batch(spark, name: str, start: int, n: int, *, reverse: bool = False, spark_partitions: int = 1):
    """`n` records of topic `name` from seq `start` (keyed, but for "plain"); `reverse`: they come in
    descending seq order."""
    key = "cast(null as binary)" if name == "plain" else "cast(concat('k', cast(id % 5 as string)) as binary)"
    df = spark.range(start, start + n, 1, spark_partitions).selectExpr(
        f"{key} as key", f"cast(concat('{name}-', cast(id as string)) as binary) as value", "id as seq",
        "cast(7 as int) as value_schema_id")
    return df.orderBy(df.seq.desc()).coalesce(1) if reverse else df


def _topics(lake):
    out = []
    for name, partitions, configs in TOPICS:
        t = TopicTable(str(lake), name)
        t.create(partitions, configs, if_not_exists=True)
        out.append(t)
    return out


def _content(t: TopicTable):
    return sorted(tuple(r) for r in t.read().select(*COLUMNS).collect())


def _sizes(name):
    return 0 if name == "empty" else 12


def test_the_topics_are_those_appends_one_at_a_time_give(spark, tmp_path):
    together, alone = _topics(tmp_path / "together"), _topics(tmp_path / "alone")
    for version, start in ((1, 0), (2, 100)):  # the second batch continues each partition's offsets
        items = [(t, _batch(spark, t.name, start, _sizes(t.name), reverse=t.name == "keyed3")) for t in together]
        results, left = append_topics(items, app_id="src:task-0", version=version)
        assert left == []
        for t, (name, _, _) in zip(alone, TOPICS):
            single = t.append(_batch(spark, name, start, _sizes(name)), app_id="src:task-0", version=version)
            mine = results[[x.name for x in together].index(name)]
            assert mine.count == single.count and mine.end_offsets == single.end_offsets, name
    for a, b in zip(together, alone):
        assert _content(a) == _content(b), a.name
        assert a.describe().end_offsets == b.describe().end_offsets
        history = DeltaTable(a.uri).history()
        assert sum(1 for h in history if h.get("lakeconnect.topic") == a.name) == 2  # a commit per topic per batch
    # offsets follow seq within each partition, as a single append's do
    rows = together[1].read().orderBy("partition", "offset").select("partition", "value").collect()
    for p in range(3):
        seqs = [int(r.value.decode().split("-")[1]) for r in rows if r.partition == p]
        assert seqs == sorted(seqs)
    # a retried batch is a no-op for every topic
    again = [(t, _batch(spark, t.name, 100, _sizes(t.name))) for t in together]
    results, left = append_topics(again, app_id="src:task-0", version=2)
    assert left == [] and all(r is None for r in results.values())
    assert [_content(t) for t in together] == [_content(t) for t in alone]


def test_records_of_many_spark_partitions_are_numbered_in_seq_order(spark, tmp_path):
    topics = [TopicTable(str(tmp_path), f"t{i}") for i in range(3)]
    for t in topics:
        t.create(1)
    items = [(t, _batch(spark, "plain", 0, 30, spark_partitions=4).repartition(3)) for t in topics]
    results, left = append_topics(items, app_id="a", version=1)
    assert left == [] and all(r.count == 30 for r in results.values())
    for t in topics:
        rows = t.read().orderBy("offset").collect()
        assert [r.offset for r in rows] == list(range(30))
        assert [r.value.decode() for r in rows] == [f"plain-{i}" for i in range(30)]


def test_a_topic_that_moves_before_its_commit_is_left_to_a_single_append(spark, tmp_path, monkeypatch):
    topics = _topics(tmp_path)
    real = many.commit_files
    moved = topics[0]

    def racing_commit(plan, files, **kw):
        if plan.table_uri == moved.uri:  # another writer appends to this topic first
            moved.append(_batch(spark, "plain", 500, 2), app_id="other", version=1)
        return real(plan, files, **kw)

    monkeypatch.setattr(many, "commit_files", racing_commit)
    items = [(t, _batch(spark, t.name, 0, _sizes(t.name))) for t in topics]
    results, left = append_topics(items, app_id="a", version=1)
    assert left == [0] and sorted(results) == [1, 2, 3, 4]
    on_disk = {os.path.relpath(os.path.join(d, f), moved.uri) for d, _, fs in os.walk(moved.uri)
               for f in fs if f.endswith(".parquet")}
    in_table = {os.path.relpath(u.removeprefix("file://"), moved.uri) for u in DeltaTable(moved.uri).file_uris()}
    assert on_disk == in_table and len(on_disk) == 1  # the job's file for it was removed: no orphan
    monkeypatch.setattr(many, "commit_files", real)
    moved.append(items[0][1], app_id="a", version=1)
    assert [r.value.decode() for r in moved.read().orderBy("offset").collect()] == \
        ["plain-500", "plain-501"] + [f"plain-{i}" for i in range(12)]


def test_a_failing_job_commits_nothing_and_the_single_append_names_the_topic(spark, tmp_path):
    topics = _topics(tmp_path)
    items = [(t, _batch(spark, "plain" if t.name == "compacted" else t.name, 0, 3)) for t in topics]
    results, left = append_topics(items, app_id="a", version=1)
    assert results == {} and left == [0, 1, 2, 3, 4]
    assert all(DeltaTable(t.uri).version() == 0 for t in topics)  # created, nothing appended
    with pytest.raises(DataError, match="topic 'compacted' has cleanup.policy=compact"):
        topics[3].append(items[3][1], app_id="a", version=1)


def test_topics_beyond_a_jobs_share_go_in_further_jobs(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(many, "JOB_TOPICS", 2)
    jobs = []
    real = many._write
    monkeypatch.setattr(many, "_write", lambda planned, *a: jobs.append(len(planned)) or real(planned, *a))
    topics = [TopicTable(str(tmp_path), f"t{i}") for i in range(5)]
    for t in topics:
        t.create(1)
    results, left = append_topics([(t, _batch(spark, "plain", 0, 4)) for t in topics], app_id="a", version=1)
    assert left == [] and jobs == [2, 2, 1]
    for t in topics:
        assert [(r.offset, r.value.decode()) for r in t.read().orderBy("offset").collect()] == \
            [(i, f"plain-{i}") for i in range(4)]
