"""The S3 object store: objects in a bucket of Amazon S3 or of any S3-compatible endpoint, through botocore,
with the upload semantics of Confluent's S3 sink (one PutObject, or a multipart upload of `s3.part.size`
parts) and its retries (`s3.part.retries`, `s3.retry.backoff.ms`). connectors/storage/store.py builds
an `S3Store` from a config's keys (connectors/storage/store_config.py).

botocore is imported where it is used (building a client, reading its errors), not with this module, to
keep importing the stores cheap.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

from connectors.storage.objectstore import ObjectStore, Upload, check_key
from connectors.storage.store_config import (
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, CREDENTIALS_PROVIDER_CLASS, CREDENTIALS_PROVIDERS, PART_RETRIES,
    PROXY_PASSWORD, PROXY_URL, PROXY_USER, RETRY_BACKOFF_MS, S3_BUCKET, S3_REGION, SSE_CUSTOMER_KEY, SSE_KMS,
    SSE_KMS_KEY_ID, SSE_S3, STORE_URL, customer_key_bytes,
)
from ingest.cache import BoundedCache
from ingest.config.configdef import HIDDEN, Password
from ingest.errors import ConfigError, FatalError, LakeConnectError, Problem, RetriableError

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_BACKOFF_S = 30.0
"""Cap of one retry's wait (Confluent's SDK caps it at 24 h; a batch is better retried whole by then)."""


@dataclass(frozen=True)
class S3Settings:
    """What an `S3Store` holds: the config's keys as the store uses them (connectors/storage/store.py reads
    them). Secrets stay out of its repr."""

    bucket: str
    region: str
    endpoint: str | None
    access_key_id: str | None = field(repr=False)
    secret_access_key: Password | None = field(repr=False)
    credentials_provider: str
    sse: str | None  # None, "AES256" (SSE-S3), "SSE-C" or "aws:kms"
    sse_customer_key: Password | None = field(repr=False)
    sse_kms_key_id: str | None
    acl: str | None
    proxy_url: str | None
    proxy_user: str | None = field(repr=False)
    proxy_password: Password | None = field(repr=False)
    part_size: int
    part_retries: int
    retry_backoff_s: float
    compression_level: int | None
    expect_continue: bool
    path_style: bool
    read_timeout: float

    def secrets(self) -> list[str]:
        return [p.value for p in (self.secret_access_key, self.sse_customer_key, self.proxy_password) if p]


# (process, settings but the bucket) -> boto3 client. A client holds its own botocore session with the S3 service
# model and a connection pool, 13-15 MB measured: 16 distinct settings per process (about 200 MB); the least
# recently used beyond go (a connector that comes back builds its client again, 0.1-0.4 s, as each run did).
_clients: BoundedCache[tuple[int, S3Settings], Any] = BoundedCache(16)
_clients_lock = threading.Lock()  # one client built at a time: two threads of the same settings share one

# Errors S3 answers that a later attempt may not get; anything else from the server is permanent.
_TRANSIENT_CODES = {"InternalError", "ServiceUnavailable", "SlowDown", "Throttling", "ThrottlingException",
                    "RequestTimeout", "RequestTimeoutException", "RequestLimitExceeded", "BadDigest"}


class S3Store(ObjectStore):
    """Objects in an S3 bucket, through boto3's client (botocore), with Confluent's upload semantics.

    Retries: botocore's own are off (one attempt per call); each request — PutObject, each UploadPart,
    CompleteMultipartUpload, reads and lists — is tried up to `s3.part.retries` more times on 5xx,
    throttling, timeouts and dropped connections, waiting `s3.retry.backoff.ms` doubled at each retry
    (with jitter, at most MAX_BACKOFF_S). So a request is sent at most `s3.part.retries` + 1 times.
    """

    def __init__(self, settings: S3Settings):
        self._s = settings
        self.bucket = settings.bucket
        self.compression_level = settings.compression_level

    def __repr__(self) -> str:
        s = self._s
        credentials = "static" if s.access_key_id else s.credentials_provider.rsplit(".", 1)[-1]
        return (f"S3Store(bucket={s.bucket!r}, region={s.region!r}, endpoint={s.endpoint or 'AWS'!r}, "
                f"credentials={credentials!r}, sse={s.sse!r}, part_size={s.part_size}, "
                f"compression={'gzip' if s.compression_level is not None else 'none'!r}"
                + (f", proxy={s.proxy_url!r}" if s.proxy_url else "") + ")")

    __str__ = __repr__

    def url(self, key: str = "") -> str:
        return f"s3://{self.bucket}/{key}"

    # -- client and calls --

    def _client(self):
        # A forked process builds its own. The bucket is not part of a client (each call names it): the
        # connectors of one process writing to several buckets share a client, which takes 0.3-0.4 s to build.
        cache_key = (os.getpid(), dataclasses.replace(self._s, bucket=""))
        with _clients_lock:
            client = _clients.get(cache_key)
            if client is None:
                client = _clients[cache_key] = _new_client(self._s)
        return client

    def _call(self, op: str, key: str, fn: Callable[[], T],
              exhausted: Callable[[Exception, int], LakeConnectError] | None = None) -> T:
        """`fn()`, tried again on transient failures; other failures become classified errors."""
        from botocore.exceptions import BotoCoreError, ClientError

        attempts = self._s.part_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return fn()
            except (ClientError, BotoCoreError) as e:
                if not _transient(e):
                    raise self._permanent(op, key, e) from None
                if attempt == attempts:
                    raise (exhausted or self._exhausted(op, key))(e, attempts) from None
                wait = min(MAX_BACKOFF_S, self._s.retry_backoff_s * 2 ** (attempt - 1))
                wait = wait / 2 + random.random() * wait / 2
                log.warning("%s of %s failed (%s); attempt %d of %d in %.2fs", op, self.url(key),
                            self._describe(e), attempt + 1, attempts, wait)
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _exhausted(self, op: str, key: str) -> Callable[[Exception, int], LakeConnectError]:
        def error(e: Exception, attempts: int) -> LakeConnectError:
            where = self._s.endpoint or f"S3 in {self._s.region}"
            via = f" through the proxy {self._s.proxy_url}" if self._s.proxy_url else ""
            return RetriableError(
                f"{op} of {self.url(key)} failed {attempts} times, last: {self._describe(e)}; check that "
                f"{where} is reachable{via} and healthy, then run the batch again (or raise {PART_RETRIES} / "
                f"{RETRY_BACKOFF_MS})")
        return error

    def _permanent(self, op: str, key: str, e: Exception) -> LakeConnectError:
        """The error a person has to act on, naming the key to fix when there is one."""
        from botocore.exceptions import ClientError, CredentialRetrievalError, NoCredentialsError, \
            PartialCredentialsError

        s, what = self._s, f"{op} of {self.url(key)}"
        static = s.access_key_id is not None
        provider = s.credentials_provider.rsplit(".", 1)[-1]
        if isinstance(e, (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError)):
            return ConfigError([Problem(CREDENTIALS_PROVIDER_CLASS,
                                        f"{provider} found no usable AWS credentials ({self._describe(e)}); "
                                        f"make them available to it, or set {AWS_ACCESS_KEY_ID} and "
                                        f"{AWS_SECRET_ACCESS_KEY}")])
        if not isinstance(e, ClientError):
            return FatalError(f"{what} failed: {self._describe(e)}")
        code, status = _code(e), _status(e)
        if code == "NoSuchBucket":
            return ConfigError([Problem(S3_BUCKET, f"bucket '{s.bucket}' does not exist at "
                                                   f"{s.endpoint or 'S3 in ' + s.region}: create it or fix "
                                                   f"{S3_BUCKET}")])
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch"):
            if static:
                bad = AWS_ACCESS_KEY_ID if code == "InvalidAccessKeyId" else AWS_SECRET_ACCESS_KEY
                return ConfigError([Problem(bad, f"refused by the store ({code}): {self._describe(e)}")])
            return ConfigError([Problem(CREDENTIALS_PROVIDER_CLASS, f"the credentials {provider} found were "
                                                                    f"refused ({code}): {self._describe(e)}")])
        if code in ("AccessDenied", "AllAccessDisabled") or status == 403:
            return ConfigError([Problem(AWS_ACCESS_KEY_ID if static else CREDENTIALS_PROVIDER_CLASS,
                                        f"the credentials are not allowed {what} ({self._describe(e)}); grant "
                                        f"them s3:PutObject, s3:GetObject, s3:ListBucket, "
                                        f"s3:ListBucketMultipartUploads and s3:AbortMultipartUpload on bucket "
                                        f"'{s.bucket}', or use other credentials")])
        if status == 407:
            return ConfigError([Problem(PROXY_PASSWORD, f"the proxy {s.proxy_url} refused the credentials: check "
                                                        f"{PROXY_USER} and {PROXY_PASSWORD}")])
        if s.sse == SSE_KMS and (code.startswith("KMS") or "kms" in str(e).lower()):
            return ConfigError([Problem(SSE_KMS_KEY_ID, f"{what} failed: {self._describe(e)}")])
        if s.sse == "SSE-C" and ("customer" in str(e).lower() or "encryption" in str(e).lower()):
            return ConfigError([Problem(SSE_CUSTOMER_KEY, f"{what} failed: {self._describe(e)}")])
        if code in ("AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException"):
            return ConfigError([Problem(S3_REGION, f"bucket '{s.bucket}' is not in {s.region}: "
                                                   f"{self._describe(e)}")])
        if code == "NoSuchUpload":  # someone aborted it while it was written (abort_incomplete running?)
            return RetriableError(f"{what}: the multipart upload was aborted by someone else while it was "
                                  f"written; run the batch again once no other writer uses the prefix")
        return FatalError(f"{what} failed: {self._describe(e)}")

    def _describe(self, e: Exception) -> str:
        from botocore.exceptions import ClientError

        if isinstance(e, ClientError):
            text = f"HTTP {_status(e)} {_code(e)}: {e.response.get('Error', {}).get('Message', '')}".rstrip(": ")
        else:
            text = f"{type(e).__name__}: {e}"
        for secret in self._s.secrets():
            text = text.replace(secret, HIDDEN)
        return text

    # -- parameters --

    def _write_params(self) -> dict[str, Any]:
        """PutObject / CreateMultipartUpload: encryption and ACL, as Confluent's S3OutputStream sets them."""
        s, params = self._s, {}
        if s.acl:
            params["ACL"] = s.acl
        if s.sse == "SSE-C":
            params.update(self._sse_c())
        elif s.sse == SSE_KMS:
            params["ServerSideEncryption"] = SSE_KMS
            if s.sse_kms_key_id:
                params["SSEKMSKeyId"] = s.sse_kms_key_id
        elif s.sse == SSE_S3:
            params["ServerSideEncryption"] = SSE_S3
        return params

    def _sse_c(self) -> dict[str, Any]:
        """SSE-C headers every request on the object needs (UploadPart, Complete, Head, Get)."""
        if self._s.sse != "SSE-C":
            return {}
        return {"SSECustomerAlgorithm": SSE_S3, "SSECustomerKey": customer_key_bytes(self._s.sse_customer_key.value)}

    # -- the store --

    def check(self) -> None:
        from botocore.exceptions import ConnectionError as BotoConnectionError, ProxyConnectionError

        s = self._s

        def unreachable(e: Exception, attempts: int) -> LakeConnectError:
            if isinstance(e, ProxyConnectionError):
                return ConfigError([Problem(PROXY_URL, f"cannot reach the proxy {s.proxy_url}: {self._describe(e)}")])
            if isinstance(e, BotoConnectionError):
                key, where = (STORE_URL, s.endpoint) if s.endpoint else (S3_REGION, f"S3 in {s.region}")
                return ConfigError([Problem(key, f"cannot reach {where} ({self._describe(e)}); fix {key}, or the "
                                                 "network")])
            return self._exhausted("ListObjectsV2", "")(e, attempts)

        self._call("ListObjectsV2", "", lambda: self._client().list_objects_v2(Bucket=s.bucket, MaxKeys=1),
                   unreachable)

    def upload(self, key: str) -> Upload:
        check_key(key)
        return _S3Upload(self, key)

    def abort_incomplete(self, prefix: str, match: Callable[[str], bool] | None = None) -> list[str]:
        client, found = self._client(), []
        pages = self._call("ListMultipartUploads", prefix, lambda: list(
            client.get_paginator("list_multipart_uploads").paginate(Bucket=self.bucket, Prefix=prefix)))
        for page in pages:
            for u in page.get("Uploads", []):
                if match is not None and not match(u["Key"]):
                    continue
                self._abort(u["Key"], u["UploadId"])
                log.info("aborted the incomplete multipart upload of %s (started %s)", self.url(u["Key"]),
                         u.get("Initiated"))
                found.append(u["Key"])
        return sorted(found)

    def _abort(self, key: str, upload_id: str) -> None:
        from botocore.exceptions import ClientError

        def abort():
            try:
                self._client().abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
            except ClientError as e:
                if _code(e) != "NoSuchUpload":  # already gone: an earlier attempt did it
                    raise

        self._call("AbortMultipartUpload", key, abort)

    def list(self, prefix: str) -> list[str]:
        return [key for key, _, _ in self.list_info(prefix)]

    def list_info(self, prefix: str) -> list[tuple[str, int, int]]:
        client = self._client()
        pages = self._call("ListObjectsV2", prefix, lambda: [
            page for page in client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix, PaginationConfig={"PageSize": _LIST_PAGE_SIZE})])
        return sorted((o["Key"], int(o["Size"]), int(o["LastModified"].timestamp() * 1000))
                      for page in pages for o in page.get("Contents", []))

    def read(self, key: str) -> bytes:
        from botocore.exceptions import ClientError

        def get() -> bytes:
            try:
                return self._client().get_object(Bucket=self.bucket, Key=key, **self._sse_c())["Body"].read()
            except ClientError as e:
                if _code(e) in ("NoSuchKey", "404"):
                    raise FatalError(f"object {self.url(key)} does not exist") from None
                raise

        return self._call("GetObject", key, get)

    def delete(self, keys: Iterable[str]) -> None:
        keys = sorted(set(keys))
        for start in range(0, len(keys), 1000):  # DeleteObjects takes at most 1000 keys
            chunk = keys[start:start + 1000]
            answer = self._call("DeleteObjects", chunk[0], lambda: self._client().delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True}))
            if answer.get("Errors"):
                first = answer["Errors"][0]
                raise FatalError(f"could not delete {len(answer['Errors'])} objects, e.g. "
                                 f"{self.url(first['Key'])}: {first.get('Code')}: {first.get('Message')}")


_LIST_PAGE_SIZE = 1000


def _new_client(s: S3Settings):
    import botocore.credentials
    import botocore.handlers
    import botocore.session
    from botocore.config import Config

    session = botocore.session.get_session()
    sources = CREDENTIALS_PROVIDERS.get(s.credentials_provider)
    if s.access_key_id is None and sources is not None:
        resolver = botocore.credentials.create_credential_resolver(session)
        for method in [p.METHOD for p in resolver.providers if p.METHOD not in sources]:
            resolver.remove(method)
        session.register_component("credential_provider", resolver)
    proxies = None
    if s.proxy_url:
        auth = ""
        if s.proxy_user:
            auth = quote(s.proxy_user, safe="")
            auth += (":" + quote(s.proxy_password.value, safe="")) if s.proxy_password else ""
            auth += "@"
        scheme, rest = s.proxy_url.split("://", 1)
        proxies = {"http": f"{scheme}://{auth}{rest}", "https": f"{scheme}://{auth}{rest}"}
    config = Config(
        region_name=s.region,
        s3={"addressing_style": "path" if s.path_style else "auto"},
        retries={"mode": "standard", "total_max_attempts": 1},  # S3Store._call retries, once per request
        read_timeout=s.read_timeout,
        proxies=proxies,
        user_agent_extra="lakeconnect-s3-sink",
    )
    client = session.create_client(
        "s3", endpoint_url=s.endpoint, config=config, aws_access_key_id=s.access_key_id,
        aws_secret_access_key=s.secret_access_key.value if s.secret_access_key else None)
    if not s.expect_continue:  # else botocore sends `Expect: 100-continue` with every upload body
        client.meta.events.unregister("before-call.s3", botocore.handlers.add_expect_header)
    return client


def _code(e) -> str:
    return str(e.response.get("Error", {}).get("Code", ""))


def _status(e) -> int:
    return int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def _transient(e: Exception) -> bool:
    from botocore.exceptions import ChecksumError, ClientError, ConnectionError as BotoConnectionError, \
        FlexibleChecksumError, HTTPClientError, IncompleteReadError

    if isinstance(e, ClientError):
        return _status(e) >= 500 or _status(e) == 429 or _code(e) in _TRANSIENT_CODES
    return isinstance(e, (BotoConnectionError, HTTPClientError, IncompleteReadError, ChecksumError,
                          FlexibleChecksumError))


class _S3Upload(Upload):
    """Confluent's S3OutputStream, except that an object of at most one part is a single PutObject.

    Bytes collect in a buffer of `s3.part.size`; when it is full and more bytes come, it becomes the next
    part of a multipart upload (started then). So every part but the last has exactly `s3.part.size`
    bytes, and memory holds one part (plus its copy while it is sent).
    """

    def __init__(self, store: S3Store, key: str):
        super().__init__(key, store.compression_level)
        self._store = store
        self._buf = bytearray()
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []
        self._size = 0

    def _write_raw(self, data: memoryview) -> None:
        part_size = self._store._s.part_size
        while data.nbytes:
            if len(self._buf) == part_size:
                self._send_part()
            take = part_size - len(self._buf)
            self._buf += data[:take]
            data = data[take:]

    def _send_part(self) -> None:
        store, client, key = self._store, self._store._client(), self.key
        if self._upload_id is None:
            created = store._call("CreateMultipartUpload", key, lambda: client.create_multipart_upload(
                Bucket=store.bucket, Key=key, **store._write_params()))
            self._upload_id = created["UploadId"]
        number, data = len(self._parts) + 1, bytes(self._buf)
        self._buf = bytearray()
        answer = store._call(f"UploadPart {number}", key, lambda: client.upload_part(
            Bucket=store.bucket, Key=key, UploadId=self._upload_id, PartNumber=number, Body=data,
            **store._sse_c()))
        self._parts.append({"PartNumber": number, "ETag": answer["ETag"]})
        self._size += len(data)

    def _commit_raw(self) -> None:
        store, client, key = self._store, self._store._client(), self.key
        if self._upload_id is None:
            data, self._buf = bytes(self._buf), bytearray()
            store._call("PutObject", key, lambda: client.put_object(
                Bucket=store.bucket, Key=key, Body=data, **store._write_params()))
            return
        self._send_part()  # the last part: never empty, parts are only sent when more bytes follow them
        self._complete()

    def _complete(self) -> None:
        from botocore.exceptions import ClientError

        store, client, key = self._store, self._store._client(), self.key

        def complete() -> None:
            try:
                client.complete_multipart_upload(Bucket=store.bucket, Key=key, UploadId=self._upload_id,
                                                 MultipartUpload={"Parts": self._parts}, **store._sse_c())
            except ClientError as e:
                # an earlier attempt completed it but its answer was lost: the upload is gone, the object there
                if not (_code(e) == "NoSuchUpload" and self._landed()):
                    raise

        try:
            store._call("CompleteMultipartUpload", key, complete)
        except RetriableError:
            if not self._landed():
                raise
        self._upload_id = None

    def _landed(self) -> bool:
        """Is the object there, as this upload's parts make it? (S3's multipart ETag: md5 of part md5s.)"""
        from botocore.exceptions import BotoCoreError, ClientError

        store = self._store
        try:
            head = store._client().head_object(Bucket=store.bucket, Key=self.key, **store._sse_c())
        except (ClientError, BotoCoreError):
            return False
        if head.get("ContentLength") != self._size:
            return False
        digest = hashlib.md5(b"".join(bytes.fromhex(p["ETag"].strip('"')) for p in self._parts)).hexdigest()
        etag = head.get("ETag", "").strip('"')
        # encrypted parts' ETags are not MD5s on AWS: the part count and the size have to do then
        return etag == f"{digest}-{len(self._parts)}" or (
            store._s.sse in ("SSE-C", SSE_KMS) and etag.endswith(f"-{len(self._parts)}"))

    def _abort_raw(self) -> None:
        self._buf = bytearray()
        if self._upload_id is not None:
            upload_id, self._upload_id = self._upload_id, None
            try:
                self._store._abort(self.key, upload_id)
            except LakeConnectError as e:
                log.warning("could not abort the multipart upload of %s (%s); abort_incomplete removes it later",
                            self._store.url(self.key), e)
