"""The test services started by tests/services/up.sh behave as the rest of the suite assumes."""

from __future__ import annotations

import os
import time
import uuid
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.services


# --- MariaDB ------------------------------------------------------------------------------------------

def _mariadb_settings(url: str) -> dict:
    u = urlsplit(url)
    return {"host": u.hostname, "port": u.port, "user": u.username or "root",
            "password": u.password or ""}


def test_mariadb_binlog_is_row_full_and_readable(mariadb_url):
    import pymysql
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    settings = _mariadb_settings(mariadb_url)
    db = urlsplit(mariadb_url).path.lstrip("/")
    conn = pymysql.connect(host=settings["host"], port=settings["port"], user=settings["user"],
                           password=settings["password"], database=db, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW VARIABLES WHERE Variable_name IN "
                        "('log_bin', 'binlog_format', 'binlog_row_image', 'binlog_row_metadata')")
            assert dict(cur.fetchall()) == {
                "log_bin": "ON", "binlog_format": "ROW",
                "binlog_row_image": "FULL", "binlog_row_metadata": "NO_LOG",  # MariaDB's default
            }
            table = f"svc_check_{uuid.uuid4().hex[:8]}"
            cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, note VARCHAR(40))")
            # With is_mariadb=True, pymysqlreplication ignores log_file/log_pos: start by GTID instead.
            cur.execute("SELECT @@gtid_binlog_pos")
            (gtid,) = cur.fetchone()
            cur.execute(f"INSERT INTO {table} VALUES (1, 'hello binlog')")

        stream = BinLogStreamReader(
            connection_settings=settings,
            server_id=4_000_000_000 + os.getpid() % 100_000,  # unique among replicas of this server
            is_mariadb=True,
            auto_position=gtid,
            blocking=False,
            only_events=[WriteRowsEvent],
            only_schemas=[db],
            only_tables=[table],
        )
        try:
            # At NO_LOG the binlog names no column (the library calls them UNKNOWN_COL0, ...): the values, in order
            rows = [list(row["values"].values()) for event in stream for row in event.rows]
        finally:
            stream.close()
        assert rows == [[1, "hello binlog"]]
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {table}")
        conn.close()


def test_each_cdc_worker_gets_a_mariadb_of_its_own(monkeypatch):
    """The CDC tests' pytest workers (tests/services/pytest.sh) each get their own binlog server: gw0 the
    first instance, gw1 the second, both answering with binary logging on, on different ports."""
    import pymysql

    from tests.services.fixtures import SERVICES_ENV, _worker_mariadb, read_env_file

    env = read_env_file(SERVICES_ENV)
    seen = []
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        mine = _worker_mariadb(env)
        settings = _mariadb_settings(mine["LAKECONNECT_TEST_MARIADB_URL"])
        assert settings["port"] == int(mine["LAKECONNECT_TEST_MARIADB_PORT"])
        assert mine["LAKECONNECT_TEST_MARIADB_JDBC"].startswith(f"jdbc:mysql://127.0.0.1:{settings['port']}/")
        conn = pymysql.connect(**settings, autocommit=True)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT @@port, @@log_bin, @@datadir")
                seen.append(cur.fetchone())
        finally:
            conn.close()
    assert seen[0][0] == int(env["LAKECONNECT_TEST_MARIADB_PORT"]) and seen[1][0] != seen[0][0]
    assert seen[0][1] == seen[1][1] == 1 and seen[0][2] != seen[1][2]


def test_the_tls_mariadb_takes_tls_only_with_up_shs_certificate(services):
    import ssl

    import pymysql

    port, stores = int(services["LAKECONNECT_TEST_MARIADB_TLS_PORT"]), services["LAKECONNECT_TEST_TLS_DIR"]
    with pytest.raises(pymysql.MySQLError, match="insecure transport|Access denied"):
        pymysql.connect(host="127.0.0.1", port=port, user="root", ssl_disabled=True)
    ctx = ssl.create_default_context(cafile=os.path.join(stores, "ca.pem"))  # the host name checked too
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", ssl=ctx)
    try:
        cur = conn.cursor()
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        assert cur.fetchone()[1]
        cur.execute("SELECT @@log_bin, @@binlog_format, @@require_secure_transport")
        assert cur.fetchone() == (1, "ROW", 1)
    finally:
        conn.close()
    other = ssl.create_default_context(cafile=os.path.join(stores, "other-ca.pem"))
    with pytest.raises(pymysql.MySQLError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        pymysql.connect(host="127.0.0.1", port=port, user="root", ssl=other)


# --- PostgreSQL -----------------------------------------------------------------------------------------

def test_postgres_answers(postgres_url):
    import sqlalchemy as sa

    engine = sa.create_engine(postgres_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT current_database()")).scalar() == "lakeconnect_test"
            assert conn.execute(sa.text("SHOW server_version_num")).scalar()
    finally:
        engine.dispose()


# --- S3 (moto) ------------------------------------------------------------------------------------------

def test_s3_multipart_and_conditional_put(s3_endpoint):
    import boto3
    from botocore.exceptions import ClientError

    s3 = boto3.client("s3", endpoint_url=s3_endpoint)
    bucket = f"svc-check-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)

    # multipart upload: a 5 MiB part + a small last part
    key = "dir/object.bin"
    part1, part2 = b"a" * (5 * 1024 * 1024), b"tail"
    mpu = s3.create_multipart_upload(Bucket=bucket, Key=key)
    parts = []
    for number, body in enumerate((part1, part2), start=1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=mpu["UploadId"], PartNumber=number, Body=body)
        parts.append({"PartNumber": number, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=mpu["UploadId"],
                                 MultipartUpload={"Parts": parts})
    obj = s3.get_object(Bucket=bucket, Key=key)
    assert obj["ContentLength"] == len(part1) + len(part2)
    assert obj["ETag"].strip('"').endswith("-2")

    # moto enforces the 5 MiB minimum for all parts but the last
    small = s3.create_multipart_upload(Bucket=bucket, Key="too-small")
    small_parts = []
    for number in (1, 2):
        r = s3.upload_part(Bucket=bucket, Key="too-small", UploadId=small["UploadId"],
                           PartNumber=number, Body=b"x")
        small_parts.append({"PartNumber": number, "ETag": r["ETag"]})
    with pytest.raises(ClientError) as too_small:
        s3.complete_multipart_upload(Bucket=bucket, Key="too-small", UploadId=small["UploadId"],
                                     MultipartUpload={"Parts": small_parts})
    assert too_small.value.response["Error"]["Code"] == "EntityTooSmall"

    # conditional create: first put wins, second gets 412 PreconditionFailed
    s3.put_object(Bucket=bucket, Key="marker", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as exists:
        s3.put_object(Bucket=bucket, Key="marker", Body=b"second", IfNoneMatch="*")
    assert exists.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert exists.value.response["Error"]["Code"] == "PreconditionFailed"
    assert s3.get_object(Bucket=bucket, Key="marker")["Body"].read() == b"first"
    # ... and on completing a multipart upload over an existing key
    again = s3.create_multipart_upload(Bucket=bucket, Key=key)
    etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=again["UploadId"], PartNumber=1,
                          Body=b"other")["ETag"]
    with pytest.raises(ClientError) as exists_mpu:
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=again["UploadId"],
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]},
                                     IfNoneMatch="*")
    assert exists_mpu.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert s3.head_object(Bucket=bucket, Key=key)["ContentLength"] == len(part1) + len(part2)


# --- Kafka (a real broker, KRaft) --------------------------------------------------------------------

def test_kafka_topics_and_round_trip(kafka_bootstrap):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10)
    assert len(md.brokers) == 1
    assert len(md.topics["orders"].partitions) == 5
    assert len(md.topics["topic-to-export"].partitions) == 1

    topic, key, value = "orders", uuid.uuid4().hex.encode(), b'{"id": 1}'
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    delivered = []
    producer.produce(topic, key=key, value=value, on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert producer.flush(10) == 0
    [(err, msg)] = delivered
    assert err is None
    partition, offset = msg.partition(), msg.offset()

    consumer = Consumer({
        "bootstrap.servers": kafka_bootstrap,
        "group.id": f"svc-check-{uuid.uuid4().hex}",
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    found = None
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while found is None and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None and m.key() == key:
                found = m
        assert found is not None, "message not consumed back within 20 s"
        assert (found.partition(), found.offset(), found.value()) == (partition, offset, value)
        assignment = consumer.assignment()
        assert {tp.partition for tp in assignment} == set(range(5))
    finally:
        consumer.close()


def test_kafka_creates_topics_through_the_admin_api_and_never_on_first_use(kafka):
    from confluent_kafka import KafkaError, Producer

    topic = kafka.unique_topic("svc-check")
    kafka.create_topic(topic, 7, {"cleanup.policy": "compact"})
    md = kafka.admin().list_topics(timeout=10)
    assert sorted(md.topics[topic].partitions) == list(range(7))
    kafka.create_topic(topic, 7)  # the same request again is fine, another partition count is not
    with pytest.raises(RuntimeError, match="already exists with 7 partitions"):
        kafka.create_topic(topic, 3)

    # auto.create.topics.enable=false, as on most production clusters: a producer cannot create one
    missing = kafka.unique_topic("svc-missing")
    errors = []
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "message.timeout.ms": 3000})
    producer.produce(missing, b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert [e.code() for e in errors] in ([KafkaError.UNKNOWN_TOPIC_OR_PART], [KafkaError._MSG_TIMED_OUT])
    assert missing not in kafka.admin().list_topics(timeout=10).topics
