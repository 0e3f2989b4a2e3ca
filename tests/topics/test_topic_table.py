"""Topics as Delta tables: creation, partitioning, dense offsets, idempotent appends, reads."""

from __future__ import annotations

import threading

import pytest
from deltalake import DeltaTable

from ingest.errors import ConfigError, DataError, StateError
from ingest.topics import TopicTable, list_topics, partition_for_key


def _records(spark, n, start=0, keyed=True, partition=None):
    key = "cast(concat('key-', cast(id % 17 as string)) as binary)" if keyed else "cast(null as binary)"
    part = "cast(null as int)" if partition is None else f"cast({partition} as int)"
    return spark.range(start, start + n, 1, 3).selectExpr(
        f"{key} as key",
        "cast(concat('value-', cast(id as string)) as binary) as value",
        "id as seq",
        f"{part} as partition",
        "cast(null as timestamp) as timestamp",
    )


def _all(topic):
    return topic.read().orderBy("partition", "offset").collect()


def test_create_describe_exists(tmp_path):
    t = TopicTable(str(tmp_path), "orders")
    assert not t.exists()
    d = t.create(3, {"cleanup.policy": "compact", "retention.ms": 1000})
    assert (d.name, d.partitions) == ("orders", 3)
    assert d.configs == {"cleanup.policy": "compact", "retention.ms": "1000"}
    assert d.end_offsets == {0: 0, 1: 0, 2: 0} and d.start_offsets == {0: 0, 1: 0, 2: 0}
    assert t.exists() and DeltaTable(t.uri).metadata().partition_columns == ["partition"]
    assert DeltaTable(t.uri).version() == 0  # metadata and table in one commit
    with pytest.raises(StateError, match="already exists"):
        t.create(3)
    assert t.create(5, if_not_exists=True).partitions == 3  # as Kafka's --if-not-exists
    TopicTable(str(tmp_path), "b.c_d-1").create(1)
    assert list_topics(str(tmp_path)) == ["b.c_d-1", "orders"]


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "spaces no", "x" * 250, "ünï"])
def test_illegal_names(tmp_path, name):
    with pytest.raises(ConfigError, match="topic name"):
        TopicTable(str(tmp_path), name)


def test_missing_topic_and_partition_count_mismatch(spark, tmp_path):
    t = TopicTable(str(tmp_path), "orders")
    with pytest.raises(StateError, match="topic 'orders' does not exist"):
        t.append(_records(spark, 3), app_id="c", version=1)
    t.create(3)
    with pytest.raises(StateError, match="topic 'orders' has 3 partitions; this writer expects 2"):
        t.append(_records(spark, 3), app_id="c", version=1, partitions=2)
    with pytest.raises(DataError, match=r"topic 'orders' has 3 partitions; record partition 5 is outside \[0, 3\)"):
        t.append(_records(spark, 3, partition=5), app_id="c", version=1)
    assert DeltaTable(t.uri).version() == 0  # nothing committed
    with pytest.raises(DataError, match="not bytes"):
        t.append(spark.range(2).selectExpr("named_struct('a', id) as key", "id as seq"), app_id="c", version=1)


def test_auto_create(spark, tmp_path):
    t = TopicTable(str(tmp_path), "auto")
    r = t.append(_records(spark, 10), app_id="c", version=1, auto_create=True, partitions=2)
    assert t.describe().partitions == 2 and r.count == 10


def test_keyed_records_land_in_murmur2_partitions(spark, tmp_path):
    t = TopicTable(str(tmp_path), "keyed")
    t.create(6)
    t.append(_records(spark, 300), app_id="c", version=1)
    rows = _all(t)
    assert len(rows) == 300
    assert {r.partition for r in rows} == set(range(6))
    for r in rows:
        assert r.partition == partition_for_key(bytes(r.key), 6)


def test_values_are_written_without_dictionary_keys_with_one(spark, tmp_path):
    """Record values rarely repeat: Parquet dictionary pages for them would be tried and dropped on
    every file, so values never get one (even these, which repeat). Keys (often few, repeated) may."""
    import pyarrow.parquet as pq

    t = TopicTable(str(tmp_path), "enc")
    t.create(1)
    records = spark.range(0, 2000, 1, 1).selectExpr(
        "cast(concat('key-', cast(id % 3 as string)) as binary) as key",
        "cast(concat('value-', cast(id % 5 as string)) as binary) as value", "id as seq")
    t.append(records, app_id="c", version=1)
    files = [f for f in DeltaTable(t.uri).file_uris() if f.endswith(".parquet")]
    assert files
    for f in files:
        meta = pq.ParquetFile(f).metadata
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]  # headers have key/value leaves too
        encodings = {name: set(meta.row_group(0).column(i).encodings) for i, name in enumerate(names)}
        assert not any("DICTIONARY" in e for e in encodings["value"]), encodings["value"]
        assert any("DICTIONARY" in e for e in encodings["key"]), encodings["key"]


def test_dense_offsets_in_seq_order_across_appends(spark, tmp_path):
    t = TopicTable(str(tmp_path), "dense")
    t.create(4)
    results = [
        t.append(_records(spark, 120, start=0), app_id="c", version=1),
        t.append(_records(spark, 7, start=1000, keyed=False), app_id="c", version=2),
        t.append(_records(spark, 50, start=2000, partition=2), app_id="c", version=3),
        t.append(_records(spark, 33, start=3000), app_id="c", version=4),
    ]
    rows = _all(t)
    assert len(rows) == 210 == sum(r.count for r in results)
    by_partition: dict[int, list] = {}
    for r in rows:
        by_partition.setdefault(r.partition, []).append(r)
    ends = t.describe().end_offsets
    for p, prs in by_partition.items():
        assert [r.offset for r in prs] == list(range(len(prs)))  # dense, gap-free from 0
        seqs = [int(r.value.decode().split("-")[1]) for r in prs]
        assert seqs == sorted(seqs)  # offsets follow seq
        assert ends[p] == len(prs)
    # each append reports its own dense ranges, continuing from the previous end
    assert results[2].partitions[2].count == 50 and set(results[2].partitions) == {2}
    assert results[2].partitions[2].first == results[1].partitions.get(2, results[0].partitions[2]).last + 1
    unkeyed = [r for r in rows if r.key is None]
    assert len(unkeyed) == 7 and all(0 <= r.partition < 4 for r in unkeyed)


def test_unkeyed_records_spread_evenly_even_with_strided_positions(spark, tmp_path):
    t = TopicTable(str(tmp_path), "spread")
    t.create(4)
    # Byte offsets of equal-length lines: every seq is a multiple of 56.
    df = spark.range(4000).selectExpr("cast(null as binary) as key", "cast(id as string) as value",
                                      "id * 56 as seq")
    result = t.append(df, app_id="s", version=1)
    counts = {p: r.count for p, r in result.partitions.items()}
    assert set(counts) == {0, 1, 2, 3}
    assert all(800 <= c <= 1200 for c in counts.values()), counts


def test_idempotent_append(spark, tmp_path):
    t = TopicTable(str(tmp_path), "idem")
    t.create(2)
    first = t.append(_records(spark, 40), app_id="c", version=9)
    assert first is not None and first.count == 40 and first.table_version == 1
    assert t.append(_records(spark, 40), app_id="c", version=9) is None
    assert t.append(_records(spark, 40), app_id="c", version=8) is None
    assert len(_all(t)) == 40 and DeltaTable(t.uri).version() == 1
    assert first.end_offsets == t.describe().end_offsets == {p: r.last + 1 for p, r in first.partitions.items()}


def test_read_ranges(spark, tmp_path):
    t = TopicTable(str(tmp_path), "ranges")
    t.create(2)
    t.append(_records(spark, 20, partition=0), app_id="c", version=1)
    t.append(_records(spark, 20, start=100, partition=1), app_id="c", version=2)
    t.append(_records(spark, 20, start=200, partition=0), app_id="c", version=3)
    got = sorted((r.partition, r.offset) for r in t.read({0: (15, 25), 1: (0, 3)}).collect())
    assert got == [(0, o) for o in range(15, 25)] + [(1, 0), (1, 1), (1, 2)]
    assert t.read({0: (5, 5)}).count() == 0
    assert t.read({}).count() == 0
    df = t.read({1: (19, 100)})
    assert df.columns[0] == "topic" and [(r.topic, r.offset) for r in df.collect()] == [("ranges", 19)]
    with pytest.raises(StateError, match="has 2 partitions"):
        t.read({2: (0, 1)})


def test_first_record_is_read_from_the_file_holding_it(spark, tmp_path):
    t = TopicTable(str(tmp_path), "first")
    t.create(2)
    t.append(_records(spark, 20, partition=1), app_id="c", version=1)
    t.append(_records(spark, 20, start=100, partition=1), app_id="c", version=2)
    # The lowest partition with records in its range; the record at the range's start (offset 25 is the
    # second append's sixth record, id 105), in the second file.
    assert t.first_record({1: (25, 40), 0: (3, 3)}) == {"key": b"key-3", "value": b"value-105"}
    assert [bytes(r.value) for r in t.read({1: (25, 26)}).collect()] == [b"value-105"]
    assert t.first_record({0: (0, 0)}) is None  # no records asked for
    assert t.first_record({0: (0, 5)}) is None  # none there: the caller asks Spark, which finds none either
    import glob
    import os

    for f in glob.glob(f"{t.uri}/**/*.parquet", recursive=True):  # unreadable files: Spark's read will say so
        os.truncate(f, 10)
    assert t.first_record({1: (25, 40)}) is None


def test_headers_timestamps_and_schema_ids(spark, tmp_path):
    t = TopicTable(str(tmp_path), "rich")
    t.create(1)
    df = spark.sql(
        "select cast('k' as binary) key, cast(null as binary) value, 0L seq, "
        "array(named_struct('key', 'h', 'value', 'v')) headers, "
        "timestamp'2024-01-02 03:04:05.678901' timestamp, 7 value_schema_id"
    )
    t.append(df, app_id="c", version=1)
    (r,) = _all(t)
    assert r.value is None  # a tombstone
    assert [(h.key, bytes(h.value)) for h in r.headers] == [("h", b"v")]
    assert str(r.timestamp) == "2024-01-02 03:04:05.678000"  # Kafka timestamps are milliseconds
    assert r.timestamp_type == "CreateTime" and r.value_schema_id == 7 and r.key_schema_id is None


def test_log_append_time(spark, tmp_path):
    t = TopicTable(str(tmp_path), "lat")
    t.create(1, {"message.timestamp.type": "LogAppendTime"})
    t.append(_records(spark, 2), app_id="c", version=1)
    assert {r.timestamp_type for r in _all(t)} == {"LogAppendTime"}


def test_concurrent_appends_never_share_offsets(spark, tmp_path):
    t = TopicTable(str(tmp_path), "busy")
    t.create(2)
    errors = []

    def writer(app):
        try:
            for v in range(1, 4):
                TopicTable(str(tmp_path), "busy").append(_records(spark, 15, start=app * 1000 + v * 100), app_id=f"w{app}", version=v)
        except Exception as e:  # collected and asserted on below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    rows = _all(t)
    assert len(rows) == 90
    for p in (0, 1):
        offsets = [r.offset for r in rows if r.partition == p]
        assert offsets == list(range(len(offsets)))


def test_empty_append_commits_and_advances_the_transaction(spark, tmp_path):
    t = TopicTable(str(tmp_path), "quiet")
    t.create(2)
    r = t.append(_records(spark, 0), app_id="c", version=1)
    assert r is not None and r.count == 0 and r.partitions == {}
    assert DeltaTable(t.uri).transaction_version("c") == 1
    assert t.describe().end_offsets == {0: 0, 1: 0}


def test_end_offsets_of_files_without_statistics(spark, tmp_path):
    import os
    import time as _time

    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake.transaction import AddAction

    from ingest.topics import TOPIC_SCHEMA

    t = TopicTable(str(tmp_path), "nostats")
    t.create(1)
    t.append(_records(spark, 5), app_id="c", version=1)
    # a file committed by another tool, without statistics: offsets 5..7
    schema = pa.schema([f for f in TOPIC_SCHEMA if f.name != "partition"])
    offsets = pa.array([5, 6, 7], pa.int64())
    data = pa.table({f.name: offsets if f.name == "offset" else pa.nulls(3, f.type) for f in schema}, schema=schema)
    os.makedirs(os.path.join(t.uri, "partition=0"), exist_ok=True)
    pq.write_table(data, os.path.join(t.uri, "partition=0", "other.parquet"))
    size = os.path.getsize(os.path.join(t.uri, "partition=0", "other.parquet"))
    dt = DeltaTable(t.uri)
    dt.create_write_transaction(
        [AddAction("partition=0/other.parquet", size, {"partition": "0"}, int(_time.time() * 1000), True, '{"numRecords":3}')],
        "append",
        dt.schema(),
        partition_by=["partition"],
    )
    assert t.describe().end_offsets == {0: 8}
    assert t.first_record({0: (6, 8)}) is None  # no statistics name offset 6's file: Spark reads it instead
    assert t.first_record({0: (4, 8)})["value"] == b"value-4"
    r = t.append(_records(spark, 2, start=100), app_id="c", version=2)
    assert (r.partitions[0].first, r.partitions[0].last) == (8, 9)


def _numbered_rows(topic):
    """{partition: [seq of each offset, in offset order]}, and the check that offsets are dense from 0."""
    by_partition: dict[int, list[int]] = {}
    for r in _all(topic):
        by_partition.setdefault(r.partition, []).append((r.offset, int(r.value.decode().split("-")[1])))
    out = {}
    for p, pairs in by_partition.items():
        assert [o for o, _ in pairs] == list(range(len(pairs))), p
        out[p] = [s for _, s in pairs]
    return out


def _expected(keys_and_seqs, n):
    """What one ordered pass gives: each partition's seqs in ascending order."""
    out: dict[int, list[int]] = {}
    for key, seq in keys_and_seqs:
        out.setdefault(partition_for_key(key, n), []).append(seq)
    return {p: sorted(s) for p, s in out.items()}


def _spread(spark, seqs, parts):
    """Records with these seqs, in this order, over `parts` Spark partitions (contiguous slices)."""
    rows = [(f"key-{s % 17}".encode(), f"value-{s}".encode(), s) for s in seqs]
    return spark.sparkContext.parallelize(rows, parts).toDF("key binary, value binary, seq long")


@pytest.mark.parametrize("jvm", [True, False], ids=["jvm_position", "sorted_index"])
@pytest.mark.parametrize("shape", ["sorted", "shuffled_within_partitions", "interleaved_across_partitions",
                                   "one_task_sorted", "one_task_shuffled"])
def test_offsets_follow_seq_whichever_way_they_are_numbered(spark, tmp_path, monkeypatch, shape, jvm):
    """Spark partitions holding disjoint seq ranges are numbered in parallel: as they arrive when sorted,
    after a sort within each Spark partition when not. Ranges that interleave across Spark partitions need
    one global order. Every way gives what one ordered pass over the batch would; so does the path without
    lakeconnect's Java position function (always sorted, records numbered by their index)."""
    import random

    from ingest.topics import many, numbering
    from ingest.topics import table as T

    if not jvm:
        for module in (numbering, T, many):
            monkeypatch.setattr(module, "position_function", lambda: False)
    counts = []
    real_count = T.TopicTable._count
    monkeypatch.setattr(T.TopicTable, "_count", lambda self, *a: counts.append(1) or real_count(self, *a))

    seqs = list(range(0, 3000, 3))
    rng = random.Random(5)
    if shape == "shuffled_within_partitions":
        slices = [seqs[i:i + 250] for i in range(0, len(seqs), 250)]
        for s in slices:
            rng.shuffle(s)
        seqs = [x for s in slices for x in s]
    elif shape in ("interleaved_across_partitions", "one_task_shuffled"):
        rng.shuffle(seqs)
    t = TopicTable(str(tmp_path), "numbered")
    t.create(3)
    result = t.append(_spread(spark, seqs, 1 if shape.startswith("one_task") else 4), app_id="c", version=1)
    assert result.count == len(seqs)
    assert bool(counts) != (jvm and shape.startswith("one_task"))  # one task numbers without a count first
    got = _numbered_rows(t)
    assert got == _expected([(f"key-{s % 17}".encode(), s) for s in seqs], 3)
    more = list(range(5000, 5300))  # a second batch continues every partition's offsets
    t.append(_spread(spark, more, 2), app_id="c", version=2)
    assert _numbered_rows(t) == _expected([(f"key-{s % 17}".encode(), s) for s in seqs + more], 3)


def test_one_spark_partition_is_answered_from_the_plan_as_spark_runs_it(spark):
    """Whether a batch is one Spark partition (numbered by one task without a count) agrees with the RDD
    Spark runs, for narrow plans over one or several partitions, a cached batch, a union and a coalesce; a
    global sort (an exchange) counts as several. A narrow plan over several partitions is answered from its
    leaves, before any of its generated code is compiled."""
    from pyspark.sql import functions as F

    from ingest.topics.numbering import one_spark_partition

    cached = spark.range(0, 100, 1, 3).persist()
    cached.count()
    wide = [(F.col("id") + i).alias(f"c{i}") for i in range(5)]
    plans = {  # name: (plan, one partition?)
        "narrow over 4": (spark.range(0, 100, 1, 4).select(*wide).filter("c1 > 3"), False),
        "narrow over 1": (spark.range(0, 100, 1, 1).select(*wide).filter("c1 > 3"), True),
        "cached, exploded": (cached.select("id", F.posexplode(F.array(F.lit(1), F.lit(2)))), False),
        "union of 1 and 2": (spark.range(0, 10, 1, 1).union(spark.range(0, 10, 1, 2)), False),
        "coalesced": (spark.range(0, 100, 1, 4).select(*wide).coalesce(1), True),
        "sorted within one": (spark.range(0, 100, 1, 1).sortWithinPartitions(F.col("id").desc()), True),
    }
    try:
        for name, (df, one) in plans.items():
            assert one_spark_partition(df) is one, name
            assert (df.rdd.getNumPartitions() == 1) is one, name
        # An exchange (adaptive: its partitions are known once it has run) counts as several.
        assert one_spark_partition(spark.range(0, 100, 1, 4).orderBy(F.col("id").desc())) is False
        # The shortcut: a narrow plan over 4 partitions is answered without compiling its generated code
        # (Spark counts compilations; a unique expression keeps Spark's code cache from answering instead).
        compiled = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
        df = spark.range(0, 100, 1, 4).select(*wide, (F.col("id") * 7919 + 104729).alias("unique"))
        before = compiled.getCount()
        assert one_spark_partition(df) is False
        assert compiled.getCount() == before
        df._jdf.queryExecution().executedPlan().execute()  # what the answer otherwise costs
        assert compiled.getCount() > before
    finally:
        cached.unpersist()


@pytest.mark.parametrize("change", [-1, +1], ids=["a_record_more", "a_record_less"])
def test_a_batch_that_changes_between_count_and_write_is_numbered_again_in_order(spark, tmp_path, monkeypatch, change):
    """The parallel write recomputes the batch after counting it; a source that then reads other records
    (here: counts that no longer match, as after rows were inserted or deleted in between) fails that
    write before its commit (a record more: in the task; a record less: in the check of the written
    files), leaves no file behind, and the batch is numbered again in one ordered pass."""
    from ingest.topics import table as T

    real_count = T.TopicTable._count
    seen = []

    def count_then_change(self, staged, n, base):
        counted = real_count(self, staged, n, base)
        for slot, c in enumerate(counted.slots["count"]):
            if c is not None:
                seen.append(slot)
                counted.slots["count"][slot] = c + change if len(seen) == 1 else c
        for p in counted.expected:
            counted.expected[p] += change if p == seen[0] % n else 0
        return counted

    real_in_order = T.TopicTable._number_in_order
    ordered = []

    def in_order(self, *args):
        ordered.append(True)
        return real_in_order(self, *args)

    monkeypatch.setattr(T.TopicTable, "_count", count_then_change)
    monkeypatch.setattr(T.TopicTable, "_number_in_order", in_order)
    seqs = list(range(400))
    t = TopicTable(str(tmp_path), "moved")
    t.create(2)
    t.append(_spread(spark, seqs, 3), app_id="c", version=1)
    assert seen, "the parallel path was not taken"
    assert ordered, "the changed batch was committed from the parallel write"
    assert _numbered_rows(t) == _expected([(f"key-{s % 17}".encode(), s) for s in seqs], 2)
    assert _files_on_disk(t) == _committed_files(t)  # the abandoned write left nothing


def _committed_files(t) -> set[str]:
    import pyarrow as pa

    return set(pa.table(DeltaTable(t.uri).get_add_actions(flatten=True)).column("path").to_pylist())


def _files_on_disk(t) -> set[str]:
    import os

    return {os.path.relpath(os.path.join(d, f), t.uri) for d, _, fs in os.walk(t.uri) for f in fs
            if "_delta_log" not in d and not f.startswith((".", "_"))}


def _unkeyed(spark, seqs, parts):
    rows = [(f"value-{s}".encode(), s) for s in seqs]
    return spark.sparkContext.parallelize(rows, parts).toDF("value binary, seq long")


@pytest.mark.parametrize("counts", [(250, 250, 250, None), (250, 250, 250, 250)], ids=["last_unknown", "all_known"])
def test_a_sources_counts_number_the_batch_without_counting_it(spark, tmp_path, monkeypatch, counts):
    """A source that knows how many records each Spark partition holds (a read in key ranges the database
    counted) spares the topic its own pass over the batch; the offsets are those of one ordered pass."""
    from ingest.topics import table as T

    counted = []
    real_count = T.TopicTable._count
    monkeypatch.setattr(T.TopicTable, "_count", lambda self, *a: counted.append(1) or real_count(self, *a))
    asked = []
    t = TopicTable(str(tmp_path), "hinted")
    t.create(1)
    t.append(_unkeyed(spark, list(range(0, 2000, 2)), 4), app_id="c", version=1,
             counts=lambda: asked.append(1) or counts)
    assert asked == [1] and counted == []
    assert _numbered_rows(t) == {0: list(range(0, 2000, 2))}
    t.append(_unkeyed(spark, list(range(5000, 5100)), 2), app_id="c", version=2, counts=lambda: (50, None))
    assert _numbered_rows(t) == {0: list(range(0, 2000, 2)) + list(range(5000, 5100))}


@pytest.mark.parametrize("counts", [(249, 250, 250, None), (251, 250, 250, None), (250, 250, 250, 249)],
                         ids=["one_less", "one_more", "last_wrong"])
def test_wrong_counts_from_a_source_are_caught_before_the_commit(spark, tmp_path, monkeypatch, counts):
    """Counts that do not match what the write reads (rows changed between the count and the read) fail
    that write before anything is committed, and the topic counts the batch itself."""
    from ingest.topics import table as T

    counted = []
    real_count = T.TopicTable._count
    monkeypatch.setattr(T.TopicTable, "_count", lambda self, *a: counted.append(1) or real_count(self, *a))
    t = TopicTable(str(tmp_path), "hinted")
    t.create(1)
    result = t.append(_unkeyed(spark, list(range(1000)), 4), app_id="c", version=1, counts=lambda: counts)
    assert counted == [1]
    assert result.count == 1000 and _numbered_rows(t) == {0: list(range(1000))}
    assert _files_on_disk(t) == _committed_files(t)  # the refused write left nothing
