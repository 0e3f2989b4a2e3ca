"""Commit rules without Spark: state tables through Arrow, races, errors."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from ingest.delta import append_arrow, read_arrow
from ingest.delta._commit import commit_files, plan_write
from ingest.delta._files import write_files
from ingest.delta.read import read_table
from ingest.errors import RetriableError, StateError


def _offsets(n, start=0):
    return pa.table({"connector": ["c"] * n, "seq": pa.array(range(start, start + n), pa.int64())})


def _staged(uri, data, **kw):
    """Plan and write files for `data` without committing: a writer about to commit."""
    plan = plan_write(uri, data.schema, **kw)
    return plan, write_files(data.to_batches(), plan.file_spec())


def test_append_arrow_is_idempotent_and_fast(tmp_path):
    uri = str(tmp_path / "offsets")
    assert append_arrow(uri, _offsets(3), app_id="runner", version=1).version == 0
    assert append_arrow(uri, _offsets(3), app_id="runner", version=1) is None
    times = []
    for v in range(2, 7):
        t = time.perf_counter()
        append_arrow(uri, _offsets(1, start=v * 10), app_id="runner", version=v)
        times.append(time.perf_counter() - t)
    assert sorted(times)[len(times) // 2] < 0.2
    assert read_arrow(uri).num_rows == 8
    got = read_arrow(uri, filter=pc.field("seq") >= 40, columns=["seq"])
    assert got.column_names == ["seq"] and sorted(got.column("seq").to_pylist()) == [40, 50, 60]
    assert DeltaTable(uri).transaction_version("runner") == 6


def test_read_arrow_missing(tmp_path):
    assert read_arrow(str(tmp_path / "none"), missing_ok=True) is None
    with pytest.raises(StateError, match=r"no Delta table at .*none.*write to the table first"):
        read_arrow(str(tmp_path / "none"))


def test_concurrent_blind_appends_both_land(tmp_path):
    uri = str(tmp_path / "t")
    append_arrow(uri, _offsets(1))
    plan_a, files_a = _staged(uri, _offsets(2, 100), app_id="a", version=1)
    plan_b, files_b = _staged(uri, _offsets(3, 200), app_id="b", version=1)
    assert commit_files(plan_a, files_a).version == 1
    assert commit_files(plan_b, files_b).version == 2  # lost the race for version 1, committed on 2
    assert read_arrow(uri).num_rows == 6


def test_twin_commit_of_same_app_version_is_a_noop(tmp_path):
    uri = str(tmp_path / "t")
    append_arrow(uri, _offsets(1))
    plan_a, files_a = _staged(uri, _offsets(2, 100), app_id="a", version=5)
    plan_b, files_b = _staged(uri, _offsets(2, 100), app_id="a", version=5)
    assert commit_files(plan_a, files_a) is not None
    assert commit_files(plan_b, files_b) is None
    assert read_arrow(uri).num_rows == 3


def test_racing_overwrite_is_retriable(tmp_path):
    uri = str(tmp_path / "t")
    append_arrow(uri, _offsets(1))
    plan, files = _staged(uri, _offsets(2, 100), mode="overwrite", app_id="o", version=1)
    append_arrow(uri, _offsets(1, 50))  # lands first
    with pytest.raises(RetriableError, match="moved from version 0 to 1"):
        commit_files(plan, files)
    assert read_arrow(uri).num_rows == 2  # nothing overwritten


def test_pinned_write_refuses_a_moved_table(tmp_path):
    uri = str(tmp_path / "t")
    append_arrow(uri, _offsets(1))
    plan, files = _staged(uri, _offsets(1, 10), expected_version=0)
    append_arrow(uri, _offsets(1, 20))
    with pytest.raises(RetriableError, match="moved from version 0 to 1"):
        commit_files(plan, files)
    with pytest.raises(RetriableError):
        append_arrow(uri, _offsets(1), expected_version=0)
    assert append_arrow(uri, _offsets(1, 30), expected_version=1).version == 2
    with pytest.raises(RetriableError):
        append_arrow(uri, _offsets(1), expected_version=-1)  # -1: the table must not exist yet


def test_corrupt_log_is_a_state_error(tmp_path, spark):
    uri = str(tmp_path / "t")
    append_arrow(uri, _offsets(2))
    with open(os.path.join(uri, "_delta_log", f"{0:020d}.json"), "w") as f:
        f.write("{not json")
    with pytest.raises(StateError, match=r"cannot be loaded.*_delta_log"):
        read_arrow(uri)
    with pytest.raises(StateError, match="cannot be loaded"):
        append_arrow(uri, _offsets(1), app_id="a", version=1)
    with pytest.raises(StateError, match="cannot be loaded"):
        read_table(spark, uri)


def test_missing_version_is_a_state_error(tmp_path):
    uri = str(tmp_path / "t")
    append_arrow(uri, _offsets(2))
    with pytest.raises(StateError, match="no readable version 9 .latest is 0"):
        read_arrow(uri, version=9)


def test_argument_errors(tmp_path):
    uri = str(tmp_path / "t")
    with pytest.raises(ValueError, match="app_id and version go together"):
        append_arrow(uri, _offsets(1), app_id="a")
    with pytest.raises(ValueError, match="mode must be"):
        append_arrow(uri, _offsets(1), mode="upsert")
    with pytest.raises(ValueError, match="partition column 'nope'"):
        append_arrow(uri, _offsets(1), partition_by=["nope"])


def test_nanosecond_timestamps_are_stored_as_microseconds(tmp_path):
    uri = str(tmp_path / "t")
    ts = pa.array([1_700_000_000_123_456_789], pa.timestamp("ns", tz="UTC"))
    append_arrow(uri, pa.table({"ts": ts}))
    got = read_arrow(uri)
    assert got.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert got.column("ts").cast(pa.int64()).to_pylist() == [1_700_000_000_123_456]


def test_concurrent_creators_all_land(tmp_path):
    import threading

    uri = str(tmp_path / "t")
    errors = []

    def create(i):
        try:
            append_arrow(uri, pa.table({"i": [i]}), app_id=f"w{i}", version=1)
        except Exception as e:  # collected and asserted on below
            errors.append(e)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert sorted(read_arrow(uri).column("i").to_pylist()) == list(range(6))
    assert DeltaTable(uri).version() == 5
