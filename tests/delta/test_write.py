"""write_dataframe: one commit per write, idempotent by app transaction, crash-safe, evolving schemas."""

from __future__ import annotations

import datetime as dt
import glob
import json
import os

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import types as T

import ingest.delta.write as write_mod
from ingest.delta import read_table
from ingest.errors import StateError


@pytest.fixture(params=["arrow", "spark"])
def engine(request):
    return request.param


@pytest.fixture
def write(engine):
    """write_dataframe with one engine: every test here runs with both."""

    def _write(*args, **kwargs):
        return write_mod.write_dataframe(*args, files=write_mod.FileOptions(engine=engine), **kwargs)

    return _write


def _rows(spark, n, start=0, partitions=4):
    return spark.range(start, start + n, 1, partitions).selectExpr(
        "id",
        "cast(id % 3 as int) as p",
        "concat('name-', cast(id as string)) as name",
        "timestamp_micros(1700000000000000 + id * 1001) as ts",
    )


def _log_entries(path, version):
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_one_commit_for_all_task_files(spark, tmp_path, write):
    uri = str(tmp_path / "t")
    r = write(_rows(spark, 1000), uri, app_id="app", version=1)
    assert r is not None and r.version == 0 and r.num_records == 1000
    assert r.num_files == 4  # one per Spark task, all in the one commit below
    entries = _log_entries(uri, 0)
    adds = [e["add"] for e in entries if "add" in e]
    assert len(adds) == 4 and sum(json.loads(a["stats"])["numRecords"] for a in adds) == 1000
    assert [e["txn"] for e in entries if "txn" in e] == [{"appId": "app", "version": 1}]

    r2 = write(_rows(spark, 500, start=1000), uri, app_id="app", version=2)
    assert r2.version == 1
    table = DeltaTable(uri)
    assert len(table.history()) == 2 and table.version() == 1
    assert table.transaction_version("app") == 2
    assert read_table(spark, uri).count() == 1500


def test_retried_version_is_a_noop(spark, tmp_path, write):
    uri = str(tmp_path / "t")
    df = _rows(spark, 300)
    assert write(df, uri, app_id="app", version=7) is not None
    assert write(df, uri, app_id="app", version=7) is None
    assert write(df, uri, app_id="app", version=3) is None  # older versions too
    assert len(DeltaTable(uri).history()) == 1
    assert read_table(spark, uri).count() == 300
    # another app's version 7 is its own transaction
    assert write(df, uri, app_id="other", version=7) is not None
    assert read_table(spark, uri).count() == 600


def test_crash_between_file_writes_and_commit(spark, tmp_path, monkeypatch, write):
    uri = str(tmp_path / "t")
    write(_rows(spark, 100), uri, app_id="app", version=1)
    real_commit = write_mod.commit_files
    written = []

    def crash(plan, files, **kw):
        written.extend(files)
        raise KeyboardInterrupt("killed before the commit")

    monkeypatch.setattr(write_mod, "commit_files", crash)
    with pytest.raises(KeyboardInterrupt):
        write(_rows(spark, 50, start=100), uri, app_id="app", version=2)
    assert written and all(os.path.exists(os.path.join(uri, f.path)) for f in written)  # orphans on disk
    assert DeltaTable(uri).transaction_version("app") == 1
    assert read_table(spark, uri).count() == 100  # orphans are in no add action: invisible

    monkeypatch.setattr(write_mod, "commit_files", real_commit)
    r = write(_rows(spark, 50, start=100), uri, app_id="app", version=2)
    assert r is not None and not {f.path for f in r.files} & {f.path for f in written}
    ids = [row.id for row in read_table(spark, uri).select("id").collect()]
    assert sorted(ids) == list(range(150))  # exactly one copy of the retried rows
    assert write(_rows(spark, 50, start=100), uri, app_id="app", version=2) is None


def test_crash_before_first_commit_leaves_no_table(spark, tmp_path, monkeypatch, write):
    uri = str(tmp_path / "t")
    def crash(plan, files, **kw):
        raise RuntimeError("killed before the commit")

    monkeypatch.setattr(write_mod, "commit_files", crash)
    with pytest.raises(RuntimeError):
        write(_rows(spark, 10), uri, app_id="app", version=1)
    assert glob.glob(os.path.join(uri, "**", "*.parquet"), recursive=True)
    with pytest.raises(StateError, match="no Delta table"):
        read_table(spark, uri)
    monkeypatch.undo()
    assert write(_rows(spark, 10), uri, app_id="app", version=1).version == 0
    assert read_table(spark, uri).count() == 10


def test_overwrite_and_reads_ignore_removed_files(spark, tmp_path, write):
    uri = str(tmp_path / "t")
    first = write(_rows(spark, 100), uri, app_id="app", version=1)
    second = write(_rows(spark, 10, start=1000), uri, app_id="app", version=2, mode="overwrite")
    assert second.version == 1
    assert all(os.path.exists(os.path.join(uri, f.path)) for f in first.files)  # still on disk
    ids = sorted(r.id for r in read_table(spark, uri).select("id").collect())
    assert ids == list(range(1000, 1010))
    assert read_table(spark, uri, version=0).count() == 100  # time travel


def test_partitioned_table_with_awkward_values(spark, tmp_path, write, engine):
    uri = str(tmp_path / "t")
    df = spark.createDataFrame(
        [(1, "a b/%=x", 10), (2, None, 11), (3, "", 12), (4, "plain", 13), (5, "plain", 14)],
        "id long, region string, n int",
    ).repartition(3)
    r = write(df, uri, app_id="app", version=1, partition_by=["region"])
    assert DeltaTable(uri).metadata().partition_columns == ["region"]
    values = {f.partition_values["region"] for f in r.files}
    assert values == {"a b/%=x", None, "plain"}  # '' is null, as Delta reads it
    dirs = {os.path.basename(os.path.dirname(f.path)) for f in r.files}
    escaped = "region=a%20b%2F%25%3Dx" if engine == "arrow" else "region=a b%2F%25%3Dx"  # Spark's escaping
    assert dirs == {"region=__HIVE_DEFAULT_PARTITION__", escaped, "region=plain"}
    back = {(row.id, row.region) for row in read_table(spark, uri).collect()}
    assert back == {(1, "a b/%=x"), (2, None), (3, None), (4, "plain"), (5, "plain")}
    pruned = read_table(spark, uri, partition_filters=[("region", "=", "plain")])
    assert sorted(row.id for row in pruned.collect()) == [4, 5]


def test_integer_partitions_are_read_by_one_scan_from_the_files_directories(spark, tmp_path, monkeypatch, write):
    """Integer partition values named by the files' directories: one scan, each file's values from its path;
    a file whose directory disagrees with the log (or names no value) has the log's values read instead."""
    import ingest.delta.read as read_mod

    uri = str(tmp_path / "t")
    df = spark.range(0, 200, 1, 2).selectExpr("id", "cast(id % 20 as int) as p", "id * 2 as v", "id % 3 as q")
    write(df, uri, app_id="app", version=1, partition_by=["p", "q"])
    expected = sorted((r.id, r.p, r.v, r.q) for r in df.collect())

    def read(**kw):
        out = read_table(spark, uri, **kw)
        return out._jdf.queryExecution().executedPlan().toString(), sorted((r.id, r.p, r.v, r.q) for r in out.collect())

    plan, rows = read()
    assert "Union" not in plan and "Join" not in plan and plan.count("FileScan") == 1 and rows == expected
    _, rows = read(partition_filters=[("p", "in", [3, 4])])
    assert rows == [r for r in expected if r[1] in (3, 4)]
    files = read_mod.active_files(DeltaTable(uri), uri)
    types = {"p": T.IntegerType(), "q": T.LongType()}
    assert read_mod._partition_directories(uri, files, ["p", "q"], types) == {"p": 1, "q": 0}
    moved = [(path, {**values, "p": values["p"] + 1}) if i == 0 else (path, values)
             for i, (path, values) in enumerate(files)]
    assert read_mod._partition_directories(uri, moved, ["p", "q"], types) is None
    assert read_mod._partition_directories(uri, files, ["p", "q"], {**types, "q": T.StringType()}) is None
    monkeypatch.setattr(read_mod, "_partition_directories", lambda *a: None)
    plan, rows = read()
    assert "Union" in plan and rows == expected


def test_many_partitions_read_by_file_join(spark, tmp_path, monkeypatch, write):
    import ingest.delta.read as read_mod

    uri = str(tmp_path / "t")
    df = spark.range(0, 200, 1, 2).selectExpr("id", "cast(id % 20 as int) as p", "id * 2 as v")
    write(df, uri, app_id="app", version=1, partition_by=["p"])
    expected = sorted((r.id, r.p, r.v) for r in df.collect())
    monkeypatch.setattr(read_mod, "_partition_directories", lambda *a: None)  # values as a log-only table has them
    union = sorted((r.id, r.p, r.v) for r in read_table(spark, uri).collect())
    monkeypatch.setattr(read_mod, "UNION_LIMIT", 0)
    joined_df = read_table(spark, uri)
    assert "BroadcastHashJoin" in joined_df._jdf.queryExecution().executedPlan().toString()
    joined = sorted((r.id, r.p, r.v) for r in joined_df.collect())
    assert union == expected and joined == expected


def test_partitioning_of_existing_table_is_kept(spark, tmp_path, write):
    uri = str(tmp_path / "t")
    write(_rows(spark, 30), uri, app_id="a", version=1, partition_by=["p"])
    r = write(_rows(spark, 30, start=30), uri, app_id="a", version=2)  # no partition_by: table's
    assert all(set(f.partition_values) == {"p"} for f in r.files)
    with pytest.raises(StateError, match=r"partitioned by \['p'\], not \['name'\]"):
        write(_rows(spark, 3), uri, app_id="a", version=3, partition_by=["name"])


def test_schema_evolution_adds_columns(spark, tmp_path, write):
    uri = str(tmp_path / "t")
    write(spark.range(5).selectExpr("id", "'x' as a"), uri, app_id="app", version=1)
    with pytest.raises(StateError, match=r"lacks; write with schema_mode='merge'"):
        write(spark.range(5, 8).selectExpr("id", "'y' as a", "1.5 as b"), uri, app_id="app", version=2, schema_mode=None)
    r = write(spark.range(5, 8).selectExpr("id", "'y' as a", "1.5d as b"), uri, app_id="app", version=2)
    assert r is not None
    assert [f.name for f in DeltaTable(uri).schema().fields] == ["id", "a", "b"]
    rows = {row.id: row.b for row in read_table(spark, uri).collect()}
    assert rows == {0: None, 1: None, 2: None, 3: None, 4: None, 5: 1.5, 6: 1.5, 7: 1.5}
    # a write lacking a column is fine: it reads as null
    write(spark.range(8, 9).selectExpr("id"), uri, app_id="app", version=3)
    assert read_table(spark, uri).where("id = 8").collect()[0].a is None


def test_conflicting_type_is_a_state_error_and_commits_nothing(spark, tmp_path, write):
    uri = str(tmp_path / "t")
    write(spark.range(3).selectExpr("id", "'x' as a"), uri, app_id="app", version=1)
    with pytest.raises(StateError, match=r"column 'a' is \"string\" in the table but \"integer\" in the data"):
        write(spark.range(3).selectExpr("id", "1 as a"), uri, app_id="app", version=2)
    assert DeltaTable(uri).version() == 0 and DeltaTable(uri).transaction_version("app") == 1


def test_stats_in_add_actions(spark, tmp_path, write, engine):
    uri = str(tmp_path / "t")
    df = spark.createDataFrame(
        [(1, "b", 1.5, dt.datetime(2024, 1, 1, 0, 0, 0, 1500, tzinfo=dt.timezone.utc)),
         (5, None, -2.0, dt.datetime(2024, 1, 2, 3, 4, 5, 999001, tzinfo=dt.timezone.utc)),
         (3, "a", None, None)],
        "id long, s string, x double, ts timestamp",
    ).coalesce(1)
    write(df, uri, app_id="app", version=1)
    (add,) = [e["add"] for e in _log_entries(uri, 0) if "add" in e]
    stats = json.loads(add["stats"])
    assert stats["numRecords"] == 3
    # float bounds from Spark's footers are left out (writers disagree on NaN)
    floats = ({"x": -2.0}, {"x": 1.5}) if engine == "arrow" else ({}, {})
    assert stats["minValues"] == {"id": 1, "s": "a", "ts": "2024-01-01T00:00:00.001Z", **floats[0]}
    # timestamp maxima round up to the millisecond: a bound, never below the true maximum
    assert stats["maxValues"] == {"id": 5, "s": "b", "ts": "2024-01-02T03:04:06.000Z", **floats[1]}
    assert stats["nullCount"] == {"id": 0, "s": 1, "x": 1, "ts": 1}
    actions = pa.table(DeltaTable(uri).get_add_actions(flatten=True))
    assert actions.column("num_records").to_pylist() == [3] and actions.column("max.id").to_pylist() == [5]


def test_timestamps_are_utc_microseconds(spark, tmp_path, write):
    uri = str(tmp_path / "t")
    ts = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
    spark.createDataFrame([(ts,)], "ts timestamp").createOrReplaceTempView("tsv")
    write(spark.table("tsv"), uri, app_id="app", version=1)
    assert json.loads(DeltaTable(uri).schema().to_json())["fields"][0]["type"] == "timestamp"
    assert read_table(spark, uri).collect()[0].ts == ts  # session time zone is UTC
    arrow = DeltaTable(uri).to_pyarrow_table()
    assert arrow.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert arrow.column("ts")[0].as_py() == ts.replace(tzinfo=dt.timezone.utc)


def test_empty_dataframe_still_commits(spark, tmp_path, write):
    uri = str(tmp_path / "t")
    empty = _rows(spark, 0)
    r = write(empty, uri, app_id="app", version=1, partition_by=["p"])
    assert r.version == 0 and r.files == ()
    assert DeltaTable(uri).transaction_version("app") == 1
    back = read_table(spark, uri)
    assert back.count() == 0 and back.columns == ["id", "p", "name", "ts"]
    r = write(empty, uri, app_id="app", version=2)
    assert r.version == 1 and DeltaTable(uri).transaction_version("app") == 2


def test_columns_selection(spark, tmp_path, write):
    uri = str(tmp_path / "t")
    write(_rows(spark, 10), uri, app_id="app", version=1, partition_by=["p"])
    df = read_table(spark, uri, columns=["name", "p"])
    assert df.columns == ["name", "p"] and df.count() == 10
    with pytest.raises(StateError, match="no column"):
        read_table(spark, uri, columns=["nope"])


def test_opaque_and_unfiltered_columns_with_either_engine(spark, tmp_path):
    """`opaque` reaches both writers (Spark's per-column Parquet options, pyarrow's lists): no dictionary
    and no min/max statistics for those columns, both for the others; Delta's own statistics stay.
    `unfiltered` columns keep their dictionary and lose their statistics; zstd for a file with opaque
    columns."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    from ingest.delta import FileOptions, write_dataframe

    df = spark.range(0, 1000, 1, 1).selectExpr("cast(id % 3 as string) as a", "cast(id % 3 as string) as b",
                                               "cast(id % 2 as string) as c")
    for engine in ("spark", "arrow"):
        uri = str(tmp_path / engine)
        write_dataframe(df, uri, app_id="t", version=1, files=FileOptions(engine=engine, opaque=("b",), unfiltered=("c",)))
        for f in DeltaTable(uri).file_uris():
            meta = pq.ParquetFile(f).metadata
            enc = {meta.schema.column(i).path: meta.row_group(0).column(i).encodings for i in range(meta.num_columns)}
            assert any("DICTIONARY" in e for e in enc["a"]), (engine, enc)
            assert not any("DICTIONARY" in e for e in enc["b"]), (engine, enc)
            stats = {meta.schema.column(i).path: meta.row_group(0).column(i).statistics for i in range(meta.num_columns)}
            assert stats["a"] is not None and stats["a"].has_min_max, (engine, stats)
            assert stats["b"] is None or not stats["b"].has_min_max, (engine, stats)
            assert any("DICTIONARY" in e for e in enc["c"]), (engine, enc)
            assert stats["c"] is None or not stats["c"].has_min_max, (engine, stats)
            assert {meta.row_group(0).column(i).compression for i in range(meta.num_columns)} == {"ZSTD"}
        added = pa.table(DeltaTable(uri).get_add_actions(flatten=True)).to_pydict()
        assert added["num_records"] == [1000], (engine, added)
