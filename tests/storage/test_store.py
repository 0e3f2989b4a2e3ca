"""The object stores: S3 against a private moto server (with IAM authentication on), the local one in a tmp dir.

Faults come from tests/services/faulty_proxy.py, between the store and moto.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import pickle
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

import connectors.storage.s3store as s3store_module
from connectors.storage.localstore import LocalStore
from connectors.storage.s3store import S3Store
from connectors.storage.store import from_config
from connectors.storage.store_config import CREDENTIALS_PROVIDERS, check_config, store_config_def
from ingest.config.configdef import Type
from ingest.errors import ConfigError, FatalError, RetriableError
from tests.services.faulty_proxy import FaultyProxy

REPO = Path(__file__).resolve().parents[2]
PART = 5 * 1024 * 1024  # the smallest part S3 (and moto) accepts
READ_TIMEOUT = 2.0  # in the tests of timeouts; the others wait 30 s, so that a slow machine does not fail them
DELAY = 3.5  # > READ_TIMEOUT
SECRET_KEY_TEXT = "aws.secret.access.key"


# --- services ------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Moto:
    url: str
    key_id: str
    secret: str
    admin: object  # a boto3 S3 client with valid credentials, for what the tests look at directly


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    """A private moto_server that checks credentials (IAM): its first 3 requests make the test user."""
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                                env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, f"moto_server did not start: {log.read_text()}"
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}"
        iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1", aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
                           aws_secret_access_key="unused-before-auth")
        iam.create_user(UserName="sink")
        iam.put_user_policy(UserName="sink", PolicyName="all", PolicyDocument='{"Version": "2012-10-17", "Statement": '
                            '[{"Effect": "Allow", "Action": "*", "Resource": "*"}]}')
        key = iam.create_access_key(UserName="sink")["AccessKey"]
        admin = boto3.client("s3", endpoint_url=url, region_name="us-west-2", aws_access_key_id=key["AccessKeyId"],
                             aws_secret_access_key=key["SecretAccessKey"], config=Config(s3={"addressing_style": "path"}))
        yield Moto(url, key["AccessKeyId"], key["SecretAccessKey"], admin)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def bucket(moto) -> str:
    name = f"t-{uuid.uuid4().hex[:12]}"
    moto.admin.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    return name


@pytest.fixture
def proxy(moto):
    with FaultyProxy(moto.url) as p:
        yield p


def s3_store(moto, bucket, keys: dict | None = None, *, url: str | None = None,
             read_timeout: float = 30.0) -> S3Store:
    raw = {"s3.bucket.name": bucket, "store.url": url or moto.url, "aws.access.key.id": moto.key_id,
           "aws.secret.access.key": moto.secret, "s3.part.size": str(PART), "s3.retry.backoff.ms": "10",
           **(keys or {})}
    store = from_config(store_config_def().parse(raw), read_timeout=read_timeout)
    assert isinstance(store, S3Store)
    return store


def local_store(root: Path, bucket: str = "bkt", keys: dict | None = None) -> LocalStore:
    raw = {"s3.bucket.name": bucket, "store.url": root.as_uri(), **(keys or {})}
    store = from_config(store_config_def().parse(raw))
    assert isinstance(store, LocalStore)
    return store


def incomplete_uploads(moto, bucket) -> list[str]:
    return [u["Key"] for u in moto.admin.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]


def write_in_chunks(upload, data: bytes, chunk: int = 1024 * 1024 + 7) -> None:
    view = memoryview(data)
    for start in range(0, len(data), chunk):
        upload.write(view[start:start + chunk])


# --- configuration ------------------------------------------------------------------------------


def test_config_defaults_are_confluents():
    definition = store_config_def()
    config = definition.parse({"s3.bucket.name": "bkt"})
    assert config["s3.region"] == "us-west-2"
    assert config["s3.part.size"] == 26214400
    assert config["s3.part.retries"] == 3
    assert config["s3.retry.backoff.ms"] == 200
    assert config["s3.compression.type"] == "none" and config["s3.compression.level"] == -1
    assert config["s3.credentials.provider.class"] == "com.amazonaws.auth.DefaultAWSCredentialsProviderChain"
    assert config["storage.class"] == "io.confluent.connect.s3.storage.S3Storage"
    assert config["s3.http.send.expect.continue"] is True and config["s3.path.style.access.enabled"] is True
    assert config["s3.ssea.name"] == "" and config["s3.acl.canned"] is None and config["store.url"] is None
    secret_keys = {k for k, key in definition.keys.items() if key.type is Type.PASSWORD}
    assert secret_keys == {"aws.secret.access.key", "s3.sse.customer.key", "s3.proxy.password"}
    assert definition.keys["s3.bucket.name"].required


def test_config_reports_every_bad_key_at_once():
    with pytest.raises(ConfigError) as e:
        store_config_def().parse({
            "s3.bucket.name": "bkt", "s3.part.size": "1000", "s3.ssea.name": "AES", "s3.region": "mars-1",
            "s3.credentials.provider.class": "com.example.MyProvider", "s3.acl.canned": "everyone",
            "s3.compression.type": "zstd", "s3.compression.level": "10", "s3.part.retries": "-1",
            "storage.class": "io.confluent.connect.hdfs.storage.HdfsStorage"})
    bad = {p.key for p in e.value.problems}
    assert bad == {"s3.part.size", "s3.ssea.name", "s3.region", "s3.credentials.provider.class", "s3.acl.canned",
                   "s3.compression.type", "s3.compression.level", "s3.part.retries", "storage.class"}
    assert "Part size must be at least: 5242880 bytes (5MB)" in str(e.value)


def test_config_accepts_the_aws_sdk_credentials_providers_and_refuses_others_clearly():
    for name in CREDENTIALS_PROVIDERS:
        store_config_def().parse({"s3.bucket.name": "bkt", "s3.credentials.provider.class": name})
    with pytest.raises(ConfigError) as e:
        store_config_def().parse({"s3.bucket.name": "bkt",
                                  "s3.credentials.provider.class": "com.amazonaws.auth.SystemPropertiesCredentialsProvider"})
    assert "no Java system properties" in str(e.value) and "EnvironmentVariableCredentialsProvider" in str(e.value)


def test_config_checks_across_keys_without_showing_secrets():
    short_key = base64.b64encode(b"sixteen-byte-key").decode()
    values = store_config_def().parse({
        "s3.bucket.name": "bkt", "aws.secret.access.key": "s3cr3t-value", "s3.ssea.name": "AES256",
        "s3.sse.customer.key": short_key, "s3.sse.kms.key.id": "alias/k", "store.url": "ftp://host/x",
        "s3.proxy.url": "not a url"})
    problems = check_config(values)
    assert {p.key for p in problems} == {"aws.access.key.id", "s3.sse.customer.key", "s3.sse.kms.key.id", "store.url",
                                         "s3.proxy.url"}
    with pytest.raises(ConfigError) as e:
        from_config(values)
    assert short_key not in str(e.value) and "s3cr3t-value" not in str(e.value)


# --- S3: uploads --------------------------------------------------------------------------------


def test_small_object_is_one_put_with_the_right_bytes(moto, bucket, proxy):
    store = s3_store(moto, bucket, url=proxy.url)
    data = os.urandom(PART)  # exactly one part: still a single PutObject
    upload = store.upload("topics/t/partition=0/t+0+0000000000.bin")
    write_in_chunks(upload, data)
    upload.commit()
    assert store.read("topics/t/partition=0/t+0+0000000000.bin") == data
    assert [r.op for r in proxy.requests if r.method != "GET"] == ["PutObject"]
    assert store.list("topics/") == ["topics/t/partition=0/t+0+0000000000.bin"]


def test_large_object_is_a_multipart_upload_of_part_size_parts(moto, bucket, proxy):
    store = s3_store(moto, bucket, url=proxy.url)
    data = os.urandom(2 * PART + 1000)
    upload = store.upload("big.bin")
    write_in_chunks(upload, data)
    upload.commit()
    assert store.read("big.bin") == data
    assert [r.body_size for r in proxy.seen("UploadPart")] == [PART, PART, 1000]
    assert len(proxy.seen("CreateMultipartUpload")) == 1 and len(proxy.seen("CompleteMultipartUpload")) == 1
    assert not proxy.seen("PutObject") and not incomplete_uploads(moto, bucket)
    head = moto.admin.head_object(Bucket=bucket, Key="big.bin")
    assert head["ETag"].strip('"').endswith("-3")


def test_nothing_is_visible_before_commit_and_nothing_is_left_after_abort(moto, bucket):
    store = s3_store(moto, bucket)
    small, big = store.upload("a/small"), store.upload("a/big")
    small.write(b"hello")
    big.write(os.urandom(PART + 1))  # the first part is sent: a multipart upload is open
    assert store.list("") == [] and incomplete_uploads(moto, bucket) == ["a/big"]
    small.abort()
    big.abort()
    big.abort()  # idempotent
    assert store.list("") == [] and incomplete_uploads(moto, bucket) == []
    with pytest.raises(ValueError):
        big.commit()
    with pytest.raises(ValueError):
        small.write(b"more")


def test_context_manager_commits_on_success_and_aborts_on_exception(moto, bucket):
    store = s3_store(moto, bucket)
    with store.upload("ok") as upload:
        upload.write(b"done")
    with pytest.raises(RuntimeError):
        with store.upload("failed") as upload:
            upload.write(os.urandom(PART + 1))
            raise RuntimeError("the writer failed")
    assert store.list("") == ["ok"] and store.read("ok") == b"done"
    assert incomplete_uploads(moto, bucket) == []


def test_upload_of_a_killed_writer_is_found_and_aborted(moto, bucket, tmp_path):
    store = s3_store(moto, bucket)
    pickled = tmp_path / "store.pickle"
    pickled.write_bytes(pickle.dumps(store))
    # a writer process that dies (as kill -9) after its first part: no abort, no cleanup
    child = ("import os, pickle, sys\n"
             "store = pickle.loads(open(sys.argv[1], 'rb').read())\n"
             "upload = store.upload(sys.argv[2])\n"
             f"upload.write(os.urandom({PART} + 10))\n"
             "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", child, str(pickled), "topics/t/partition=0/t+0+0000000042.bin"], cwd=REPO,
                   check=True, timeout=120)
    assert incomplete_uploads(moto, bucket) == ["topics/t/partition=0/t+0+0000000042.bin"]
    assert store.abort_incomplete("topics/u/") == []
    assert store.abort_incomplete("topics/t/") == ["topics/t/partition=0/t+0+0000000042.bin"]
    assert incomplete_uploads(moto, bucket) == [] and store.list("") == []


def test_list_pages_and_delete(moto, bucket, proxy, monkeypatch):
    monkeypatch.setattr(s3store_module, "_LIST_PAGE_SIZE", 2)
    store = s3_store(moto, bucket, url=proxy.url)
    for key in ["p/3", "p/1", "p/2", "p/10", "q/1"]:
        with store.upload(key) as upload:
            upload.write(key.encode())
    assert store.list("p/") == ["p/1", "p/10", "p/2", "p/3"]
    assert len(proxy.seen("ListObjectsV2")) == 2
    store.delete(["p/1", "p/2", "p/missing"])
    assert store.list("") == ["p/10", "p/3", "q/1"]


# --- S3: faults ---------------------------------------------------------------------------------

FAULTS = {
    "500": dict(kind="status", status=500),
    "503": dict(kind="status", status=503),
    "timeout": dict(kind="delay", delay=DELAY),
    "dropped": dict(kind="drop"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("op", ["UploadPart", "CompleteMultipartUpload", "CreateMultipartUpload", "PutObject"])
def test_each_fault_is_retried_and_the_object_is_right(moto, bucket, proxy, op, fault):
    store = s3_store(moto, bucket, url=proxy.url, read_timeout=READ_TIMEOUT if fault == "timeout" else 30.0)
    injected = proxy.inject(op, nth=2 if op == "UploadPart" else 1, **FAULTS[fault])
    data = os.urandom(100 if op == "PutObject" else 2 * PART + 5)
    with store.upload("k/obj") as upload:
        write_in_chunks(upload, data)
    assert injected.fired == 1
    assert store.read("k/obj") == data
    assert incomplete_uploads(moto, bucket) == []
    expected = {"UploadPart": 4, "CompleteMultipartUpload": 2, "CreateMultipartUpload": 2, "PutObject": 2}[op]
    assert len(proxy.seen(op)) == expected


@pytest.mark.parametrize("kind", ["drop", "delay"])
def test_a_lost_answer_to_complete_still_commits(moto, bucket, proxy, kind):
    """The server completed the upload, its answer never came: the retry finds the object there."""
    store = s3_store(moto, bucket, url=proxy.url, read_timeout=READ_TIMEOUT)
    injected = proxy.inject("CompleteMultipartUpload", kind, delay=DELAY, after_upstream=True)
    data = os.urandom(PART + 5)
    with store.upload("k/obj") as upload:
        upload.write(data)
    assert injected.fired == 1 and store.read("k/obj") == data
    assert incomplete_uploads(moto, bucket) == []


def test_complete_answered_no_such_upload_after_a_lost_answer_still_commits(moto, bucket, proxy):
    """As S3 answers a retried complete once the first one went through: the object is there, as written."""
    store = s3_store(moto, bucket, url=proxy.url)
    lost = proxy.inject("CompleteMultipartUpload", "drop", after_upstream=True)
    gone = proxy.inject("CompleteMultipartUpload", nth=2, status=404, code="NoSuchUpload")
    data = os.urandom(PART + 5)
    with store.upload("k/obj") as upload:
        upload.write(data)
    assert lost.fired == gone.fired == 1 and store.read("k/obj") == data
    assert [r.op for r in proxy.requests].count("HeadObject") == 1


def test_complete_answered_no_such_upload_without_the_object_fails(moto, bucket, proxy):
    """Someone else aborted the upload (abort_incomplete while writing): nothing is there, run again."""
    store = s3_store(moto, bucket, url=proxy.url)
    proxy.inject("CompleteMultipartUpload", status=404, code="NoSuchUpload")
    upload = store.upload("k/obj")
    upload.write(os.urandom(PART + 5))
    with pytest.raises(RetriableError, match="aborted by someone else"):
        upload.commit()
    assert store.list("") == [] and incomplete_uploads(moto, bucket) == []


@pytest.mark.parametrize("op", ["UploadPart", "CompleteMultipartUpload", "CreateMultipartUpload", "PutObject"])
def test_faults_beyond_the_retries_raise_a_retriable_error_and_leave_nothing(moto, bucket, proxy, op):
    store = s3_store(moto, bucket, {"s3.part.retries": "2"}, url=proxy.url)
    injected = proxy.inject(op, nth=2 if op == "UploadPart" else 1, times=3, status=503)
    upload = store.upload("k/doomed")
    with pytest.raises(RetriableError) as e:
        write_in_chunks(upload, os.urandom(100 if op == "PutObject" else 2 * PART + 5))
        upload.commit()
    message = str(e.value)
    assert "s3://" + bucket + "/k/doomed" in message and op in message and "3 times" in message
    assert "s3.part.retries" in message
    assert injected.fired == 3
    assert store.list("") == [] and incomplete_uploads(moto, bucket) == []
    with pytest.raises(ValueError):  # a failed upload takes no more data
        upload.write(b"x")


def test_permanent_errors_are_not_retried(moto, bucket, proxy):
    store = s3_store(moto, bucket, url=proxy.url)
    injected = proxy.inject("UploadPart", status=400, times=5)
    upload = store.upload("k/bad")
    with pytest.raises(FatalError, match="UploadPart 1 of s3://.*/k/bad failed: HTTP 400"):
        upload.write(os.urandom(PART + 1))
    assert injected.fired == 1 and incomplete_uploads(moto, bucket) == []


def test_faulty_proxy_runs_as_a_process_controlled_over_http(moto, bucket, tmp_path):
    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-m", "tests.services.faulty_proxy", "--upstream", moto.url,
                             "--port-file", str(port_file)], cwd=REPO, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        control = f"http://127.0.0.1:{port_file.read_text().strip()}/__faults__"
        fault = {"op": "PutObject", "kind": "status", "status": 503}
        urllib.request.urlopen(urllib.request.Request(control, json.dumps(fault).encode(), method="POST"))
        store = s3_store(moto, bucket, url=control.removesuffix("/__faults__"))
        with store.upload("k") as upload:
            upload.write(b"v")
        state = json.load(urllib.request.urlopen(control))
        assert state["faults"][0]["fired"] == 1
        assert [r["outcome"] for r in state["requests"] if r["op"] == "PutObject"] == ["503", "200"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert s3_store(moto, bucket).read("k") == b"v"


# --- S3: check, credentials, secrets --------------------------------------------------------------


def test_check_passes_on_a_good_config(moto, bucket):
    s3_store(moto, bucket).check()


def test_check_names_the_key_to_fix(moto, bucket):
    cases = [
        ({"s3.bucket.name": "no-such-bucket-here"}, "s3.bucket.name"),
        ({"aws.access.key.id": "AKIAAAAAAAAAAAAAAAAA"}, "aws.access.key.id"),
        ({"aws.secret.access.key": "wrong-secret-0123456789"}, "aws.secret.access.key"),
        ({"store.url": f"http://127.0.0.1:{_free_port()}", "s3.part.retries": "0"}, "store.url"),
    ]
    for keys, key_to_fix in cases:
        store = s3_store(moto, bucket, keys)
        with pytest.raises(ConfigError) as e:
            store.check()
        assert [p.key for p in e.value.problems] == [key_to_fix], str(e.value)
        assert "wrong-secret-0123456789" not in str(e.value) and moto.secret not in str(e.value)
        assert "Traceback" not in str(e.value) and e.value.__cause__ is None and e.value.__suppress_context__


def test_wrong_credentials_fail_an_upload_with_a_config_error(moto, bucket):
    store = s3_store(moto, bucket, {"aws.secret.access.key": "wrong-secret-0123456789"})
    upload = store.upload("k")
    upload.write(b"data")
    with pytest.raises(ConfigError) as e:
        upload.commit()
    assert e.value.problems[0].key == "aws.secret.access.key" and "wrong-secret" not in str(e.value)


def test_environment_credentials_provider(moto, bucket, monkeypatch):
    env_provider = {"s3.credentials.provider.class": "com.amazonaws.auth.EnvironmentVariableCredentialsProvider",
                    "aws.access.key.id": "", "aws.secret.access.key": ""}
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto.key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto.secret)
    store = s3_store(moto, bucket, env_provider)
    store.check()
    with store.upload("from-env") as upload:
        upload.write(b"x")
    other = f"t-{uuid.uuid4().hex[:12]}"
    moto.admin.create_bucket(Bucket=other, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    assert s3_store(moto, other, env_provider)._client() is store._client()  # a client serves every bucket
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setattr(s3store_module, "_clients", {})  # a new process: its client resolves credentials afresh
    with pytest.raises(ConfigError) as e:
        s3_store(moto, other, env_provider).check()
    assert e.value.problems[0].key == "s3.credentials.provider.class"


def test_repr_pickle_and_errors_never_show_secrets(moto, bucket):
    customer_key = base64.b64encode(os.urandom(32)).decode()
    store = s3_store(moto, bucket, {"s3.ssea.name": "AES256", "s3.sse.customer.key": customer_key,
                                    "s3.proxy.url": "http://proxyuser:url-pass-9876@127.0.0.1:1",
                                    "s3.part.retries": "0"})
    secrets_ = [moto.secret, customer_key, "url-pass-9876", moto.key_id]
    for text in (repr(store), str(store)):
        assert not any(s in text for s in secrets_), text
    with pytest.raises(ConfigError) as e:
        store.check()  # the proxy does not exist
    assert e.value.problems[0].key == "s3.proxy.url"
    assert not any(s in str(e.value) for s in secrets_), str(e.value)
    copy = pickle.loads(pickle.dumps(store))  # secrets travel to executors in the pickle
    assert repr(copy) == repr(store)


def test_pickled_store_is_small_and_works(moto, bucket):
    store = s3_store(moto, bucket)
    with store.upload("before") as upload:  # the client exists now; it must not travel
        upload.write(b"1")
    pickled = pickle.dumps(store)
    assert len(pickled) < 2000
    copy = pickle.loads(pickled)
    with copy.upload("after") as upload:
        upload.write(b"2")
    assert copy.list("") == ["after", "before"] and repr(copy) == repr(store)


def test_proxy_settings_reach_the_proxy(moto, bucket):
    with FaultyProxy(proxy_auth=("sink", "proxy-secret-42")) as forward:
        store = s3_store(moto, bucket, {"s3.proxy.url": forward.url, "s3.proxy.user": "sink",
                                        "s3.proxy.password": "proxy-secret-42"})
        with store.upload("via-proxy") as upload:
            upload.write(b"x")
        assert [r.outcome for r in forward.seen("PutObject")] == ["200"]
        wrong = s3_store(moto, bucket, {"s3.proxy.url": forward.url, "s3.proxy.user": "sink",
                                        "s3.proxy.password": "not-it"})
        with pytest.raises(ConfigError) as e:
            wrong.check()
        assert e.value.problems[0].key == "s3.proxy.password" and "not-it" not in str(e.value)
    assert store.read("via-proxy") == b"x"


# --- S3: encryption, ACL, compression, expect-continue -------------------------------------------


def test_sse_c_headers_reach_the_server(moto, bucket, proxy):
    raw = os.urandom(32)
    store = s3_store(moto, bucket, {"s3.ssea.name": "AES256", "s3.sse.customer.key": base64.b64encode(raw).decode()},
                     url=proxy.url)
    small, big = b"small", os.urandom(PART + 3)
    for key, data in (("small", small), ("big", big)):
        with store.upload(key) as upload:
            upload.write(data)
    assert store.read("small") == small and store.read("big") == big
    key_md5 = base64.b64encode(hashlib.md5(raw).digest()).decode()
    ops = ["PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "GetObject"]
    for request in [r for r in proxy.requests if r.op in ops]:
        assert request.headers["x-amz-server-side-encryption-customer-algorithm"] == "AES256", request
        assert request.headers["x-amz-server-side-encryption-customer-key-md5"] == key_md5
        assert "x-amz-server-side-encryption" not in request.headers
    assert {r.op for r in proxy.requests} >= set(ops)


def test_kms_encryption_reaches_the_server(moto, bucket):
    kms_key = "arn:aws:kms:us-west-2:123456789012:key/0b5c9d3e-0000-4000-8000-000000000000"
    store = s3_store(moto, bucket, {"s3.ssea.name": "aws:kms", "s3.sse.kms.key.id": kms_key})
    for key, size in (("small", 10), ("big", PART + 3)):
        with store.upload(key) as upload:
            upload.write(os.urandom(size))
        head = moto.admin.head_object(Bucket=bucket, Key=key)
        assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == kms_key


def test_sse_s3_and_canned_acl_reach_the_server(moto, bucket, proxy):
    store = s3_store(moto, bucket, {"s3.ssea.name": "AES256", "s3.acl.canned": "public-read"}, url=proxy.url)
    with store.upload("public") as upload:
        upload.write(b"x")
    assert moto.admin.head_object(Bucket=bucket, Key="public")["ServerSideEncryption"] == "AES256"
    assert proxy.seen("PutObject")[0].headers["x-amz-acl"] == "public-read"
    grants = moto.admin.get_object_acl(Bucket=bucket, Key="public")["Grants"]
    assert any(g["Grantee"].get("URI", "").endswith("/AllUsers") and g["Permission"] == "READ" for g in grants)


@pytest.mark.parametrize("expect", [True, False])
def test_expect_continue_follows_the_setting(moto, bucket, proxy, expect):
    store = s3_store(moto, bucket, {"s3.http.send.expect.continue": str(expect).lower()}, url=proxy.url)
    for key, size in (("small", 10), ("big", PART + 3)):
        with store.upload(key) as upload:
            upload.write(os.urandom(size))
    for request in proxy.seen("PutObject") + proxy.seen("UploadPart"):
        assert (request.headers.get("expect") == "100-continue") is expect


def test_gzip_output_decompresses_to_the_input(moto, bucket, tmp_path):
    text = b"".join(b'{"id": %d, "name": "record %d"}\n' % (i, i) for i in range(200_000))  # ~7 MB, compressible
    noise = os.urandom(PART + 100)  # incompressible: its gzip needs a multipart upload
    (tmp_path / "bkt").mkdir()
    stores = [s3_store(moto, bucket, {"s3.compression.type": "gzip", "s3.compression.level": "9"}),
              local_store(tmp_path, keys={"s3.compression.type": "gzip"})]
    for store in stores:
        assert store.extension_suffix == ".gz"
        for key, data in (("text.json.gz", text), ("noise.bin.gz", noise), ("empty.gz", b"")):
            with store.upload(key) as upload:
                write_in_chunks(upload, data, chunk=65536)
            assert gzip.decompress(store.read(key)) == data
        assert len(store.read("text.json.gz")) < len(text) // 5
    assert s3_store(moto, bucket).extension_suffix == ""


# --- the local store ------------------------------------------------------------------------------


def test_local_commit_is_atomic_and_temp_files_are_hidden(tmp_path):
    (tmp_path / "bkt").mkdir()
    store = local_store(tmp_path)
    store.check()
    key = "topics/t/partition=0/t+0+0000000000.json"
    target = tmp_path / "bkt" / key
    upload = store.upload(key)
    upload.write(b"part one, ")
    temps = list(target.parent.iterdir())
    assert len(temps) == 1 and temps[0].name.startswith(f".{target.name}.") and temps[0].name.endswith(".incomplete")
    assert not target.exists() and store.list("") == []
    upload.write(memoryview(b"part two"))
    upload.commit()
    assert target.read_bytes() == b"part one, part two" and store.read(key) == b"part one, part two"
    assert [p.name for p in target.parent.iterdir()] == [target.name]
    with store.upload(key) as upload:  # a new version replaces the old one whole
        upload.write(b"v2")
    assert store.read(key) == b"v2" and store.list("topics/") == [key]


def test_local_abort_and_abort_incomplete_remove_temp_files(tmp_path):
    (tmp_path / "bkt").mkdir()
    store = local_store(tmp_path)
    aborted = store.upload("a/x")
    aborted.write(b"gone")
    aborted.abort()
    assert list((tmp_path / "bkt" / "a").iterdir()) == []
    with store.upload("a/kept") as upload:
        upload.write(b"kept")
    crashed = store.upload("a/crashed")  # a writer that dies: its temp file stays
    crashed.write(b"half")
    del crashed
    other = store.upload("b/crashed")
    other.write(b"half")
    assert store.list("") == ["a/kept"]
    assert store.abort_incomplete("a/") == ["a/crashed"]
    assert sorted(p.name for p in (tmp_path / "bkt" / "a").iterdir()) == ["kept"]
    assert store.abort_incomplete("") == ["b/crashed"] and store.list("") == ["a/kept"]
    store.delete(["a/kept", "a/missing"])
    assert store.list("") == []


def test_local_check_names_the_key_to_fix(tmp_path):
    with pytest.raises(ConfigError) as e:
        local_store(tmp_path / "missing").check()
    assert e.value.problems[0].key == "store.url"
    with pytest.raises(ConfigError) as e:
        local_store(tmp_path, bucket="nobucket").check()
    assert e.value.problems[0].key == "s3.bucket.name" and "mkdir -p" in str(e.value)


def test_local_relative_url_and_bad_keys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = from_config(store_config_def().parse({"s3.bucket.name": "bkt", "store.url": "file:lake/s3"}))
    assert store.root == str(tmp_path / "lake" / "s3")
    for key in ("../escape", "/abs", "a//b", "a/./b", ""):
        with pytest.raises(ValueError):
            store.upload(key)
    with pytest.raises(FatalError, match="does not exist"):
        store.read("nothing")


def test_local_store_pickles(tmp_path):
    (tmp_path / "bkt").mkdir()
    store = local_store(tmp_path)
    copy = pickle.loads(pickle.dumps(store))
    with copy.upload("k") as upload:
        upload.write(b"v")
    assert store.read("k") == b"v" and repr(copy) == repr(store)
