"""Tables on an S3-compatible store (moto_server on loopback, its own process: delta-rs calls hold
the GIL, so an in-process server thread could never answer them)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from ingest.delta import FileOptions, append_arrow, read_arrow, read_table, write_dataframe
from ingest.errors import StateError
from ingest.topics import TopicTable

MOTO = os.path.join(os.path.dirname(sys.executable), "moto_server")


@pytest.fixture(scope="module")
def s3_options():
    if not os.path.exists(MOTO) and not shutil.which("moto_server"):
        pytest.skip("moto_server is not installed")
    boto3 = pytest.importorskip("boto3")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [MOTO if os.path.exists(MOTO) else "moto_server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        creds = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "region_name": "us-east-1"}
        boto3.client("s3", endpoint_url=endpoint, **creds).create_bucket(Bucket="lake")
        yield {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
            "conditional_put": "etag",
        }
    finally:
        proc.terminate()
        proc.wait(10)


def test_arrow_state_table_on_s3(s3_options):
    uri = "s3://lake/state/offsets"
    r = append_arrow(uri, pa.table({"k": ["a", "b"], "p": [1, 2]}), app_id="x", version=1, partition_by=["p"], storage_options=s3_options)
    assert r.version == 0 and r.num_files == 2
    assert append_arrow(uri, pa.table({"k": ["a"], "p": [1]}), app_id="x", version=1, storage_options=s3_options) is None
    assert sorted(read_arrow(uri, storage_options=s3_options).column("k").to_pylist()) == ["a", "b"]


def test_spark_write_and_read_on_s3(spark, s3_options):
    uri = "s3://lake/tables/events"
    df = spark.range(0, 500, 1, 3).selectExpr("id", "cast(id % 4 as int) as p", "concat('e', cast(id as string)) as s")
    with pytest.raises(StateError, match="local tables only"):
        write_dataframe(df, uri, app_id="a", version=1, partition_by=["p"], storage_options=s3_options,
                        files=FileOptions(engine="spark"))
    r = write_dataframe(df, uri, app_id="a", version=1, partition_by=["p"], storage_options=s3_options)
    assert r.num_records == 500
    assert write_dataframe(df, uri, app_id="a", version=1, storage_options=s3_options) is None
    write_dataframe(spark.range(500, 510).selectExpr("id", "1 as p", "'x' as s", "true as flag"), uri, app_id="a", version=2, storage_options=s3_options)
    back = read_table(spark, uri, storage_options=s3_options)
    assert back.columns == ["id", "p", "s", "flag"]
    rows = back.collect()
    assert sorted(r.id for r in rows) == list(range(510))
    assert all(r.p == r.id % 4 for r in rows if r.id < 500) and {r.flag for r in rows if r.id < 500} == {None}
    pruned = read_table(spark, uri, partition_filters=[("p", "=", 3)], storage_options=s3_options)
    assert sorted(r.id for r in pruned.collect()) == [i for i in range(500) if i % 4 == 3]


def test_topic_on_s3(spark, s3_options):
    t = TopicTable("s3://lake", "remote-topic", storage_options=s3_options)
    t.create(2)
    df = spark.range(0, 30, 1, 2).selectExpr("cast(cast(id as string) as binary) key", "cast('v' as binary) value", "id seq")
    r = t.append(df, app_id="c", version=1)
    assert r.count == 30
    rows = t.read(spark=spark).collect()
    for p in (0, 1):
        assert sorted(x.offset for x in rows if x.partition == p) == list(range(r.partitions[p].count))
    # One record read on the driver through the object store, as a sink's converters plan by it.
    at = {(x.partition, x.offset): (bytes(x.key), bytes(x.value)) for x in rows}
    first = t.first_record({1: (2, 5), 0: (0, 0)})  # partition 0's range is empty
    assert (first["key"], first["value"]) == at[(1, 2)]


def test_topics_and_maintenance_targets_of_a_remote_lake_are_listed(s3_options):
    from ingest.maintenance import discover
    from ingest.topics import list_topics

    root = "s3://lake/listed"
    assert list_topics(root, s3_options) == []  # nothing under topics/ yet
    for name in ("orders", "a.b-c"):
        TopicTable(root, name, storage_options=s3_options).create(2)
    # A directory without a Delta log under topics/ is not a topic.
    import boto3

    boto3.client("s3", endpoint_url=s3_options["AWS_ENDPOINT_URL"], aws_access_key_id="test",
                 aws_secret_access_key="test", region_name="us-east-1").put_object(
        Bucket="lake", Key="listed/topics/stray/readme.txt", Body=b"not a table")
    assert list_topics(root, s3_options) == ["a.b-c", "orders"]
    targets = discover(root, None, ["connect-offsets"], storage_options=s3_options)
    assert [(t.kind, t.uri) for t in targets] == [("topic", f"{root}/topics/a.b-c"), ("topic", f"{root}/topics/orders"),
                                                  ("state", f"{root}/_connect/connect-offsets")]
    with pytest.raises(StateError, match="cannot list the topics under s3://lake/listed/topics"):
        list_topics(root, {**s3_options, "AWS_ENDPOINT_URL": "http://127.0.0.1:1"})


def test_a_connector_runs_on_an_object_store_lake_with_a_local_lease_directory(s3_options, tmp_path):
    """A FileStream source on an s3:// lake: its run lease lives in lake.locks.dir (an object store cannot
    hold a flock); a run killed after its write and run again writes every line once; a second run while
    one holds the lease stops with exit 3; without lake.locks.dir the run says what to set."""
    import fcntl
    import json

    from tests.conftest import cli, cli_here, write_worker

    storage = {f"lake.storage.{k}": v for k, v in s3_options.items()}
    worker = write_worker(tmp_path / "worker.properties", "s3://lake/run-lake", **storage,
                          **{"lake.locks.dir": str(tmp_path / "locks")})
    source = tmp_path / "in.txt"
    source.write_text("one\ntwo\nthree\n")
    spec = tmp_path / "fs.json"
    spec.write_text(json.dumps({"name": "fs", "connector.class": "FileStreamSource", "file": str(source),
                                "topic": "lines"}))
    assert cli_here("connectors", "create", str(spec), worker=worker).returncode == 0
    killed = cli("run", "fs", worker=worker, env={"LAKECONNECT_CRASH_AT": "write"})
    assert killed.returncode == 137, killed.stderr
    assert cli("run", "fs", worker=worker).returncode == 0
    consumed = cli_here("topics", "consume", "lines", "--from-beginning", worker=worker)
    assert consumed.stdout.split() == ["one", "two", "three"], consumed.stderr

    lock = tmp_path / "locks" / "fs.task-0.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        refused = cli("run", "fs", worker=worker)
    assert refused.returncode == 3 and "connector 'fs' task 0 is already running" in refused.stderr

    no_dir = write_worker(tmp_path / "no-dir.properties", "s3://lake/run-lake", **storage)
    r = cli("run", "fs", worker=no_dir)
    assert r.returncode != 0 and "set lake.locks.dir in the worker config" in r.stderr and "Traceback" not in r.stderr
