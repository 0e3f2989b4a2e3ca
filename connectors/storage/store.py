"""Object stores of the S3 sink: Amazon S3 (or any S3-compatible endpoint) and the local filesystem.

Configured with the keys of Confluent's S3 sink (10.5) and storage-common: `s3.*`, `aws.*`, `store.url`,
`storage.class`. `store.url` picks the store: unset or `http(s)://…` is S3 (the endpoint), `file:` is a
directory on the local filesystem (the embedded default), where object `k` of bucket `b` is the file
`<dir>/b/k`.

Contracts every store keeps:
- A store is small and picklable (it is shipped to Spark executors): it holds settings; S3 clients are
  built lazily, once per process. Its repr, str and error messages never show a secret.
- `upload(key)` returns an `Upload`: nothing is visible until `commit()`, then the whole object is, at
  once (S3: one PutObject or a completed multipart upload; local: `os.replace` of a hidden temp file).
  `abort()` leaves nothing behind. A crashed writer may leave an incomplete upload or temp file;
  `abort_incomplete(prefix)` removes them.
- Failures are classified: `RetriableError` (the store did not answer well `s3.part.retries` + 1 times:
  run the batch again), `ConfigError` naming the key to fix, `FatalError` for the rest.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import logging
import os
import random
import re
import secrets
import threading
import time
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlsplit

from ingest.config.configdef import HIDDEN, ConfigDef, Importance, NonEmptyString, Password, Range, Type, ValidString
from ingest.errors import ConfigError, FatalError, LakeConnectError, Problem, RetriableError

log = logging.getLogger(__name__)
T = TypeVar("T")

S3_BUCKET = "s3.bucket.name"
S3_REGION = "s3.region"
AWS_ACCESS_KEY_ID = "aws.access.key.id"
AWS_SECRET_ACCESS_KEY = "aws.secret.access.key"
CREDENTIALS_PROVIDER_CLASS = "s3.credentials.provider.class"
STORE_URL = "store.url"
STORAGE_CLASS = "storage.class"
SSEA = "s3.ssea.name"
SSE_CUSTOMER_KEY = "s3.sse.customer.key"
SSE_KMS_KEY_ID = "s3.sse.kms.key.id"
ACL_CANNED = "s3.acl.canned"
PROXY_URL = "s3.proxy.url"
PROXY_USER = "s3.proxy.user"
PROXY_PASSWORD = "s3.proxy.password"
PART_SIZE = "s3.part.size"
PART_RETRIES = "s3.part.retries"
RETRY_BACKOFF_MS = "s3.retry.backoff.ms"
COMPRESSION_TYPE = "s3.compression.type"
COMPRESSION_LEVEL = "s3.compression.level"
EXPECT_CONTINUE = "s3.http.send.expect.continue"
PATH_STYLE = "s3.path.style.access.enabled"

S3_STORAGE_CLASS = "io.confluent.connect.s3.storage.S3Storage"
DEFAULT_CREDENTIALS_PROVIDER = "com.amazonaws.auth.DefaultAWSCredentialsProviderChain"
PART_SIZE_MIN, PART_SIZE_MAX = 5 * 1024 * 1024, 2**31 - 1
MAX_BACKOFF_S = 30.0
"""Cap of one retry's wait (Confluent's SDK caps it at 24 h; a batch is better retried whole by then)."""

# The AWS SDK for Java's provider classes (v1, and v2 as newer Confluent releases name them) and the
# botocore credential sources that do the same; None stands for botocore's whole default chain.
_PROFILE_SOURCES = ("assume-role", "shared-credentials-file", "custom-process", "config-file", "sso")
CREDENTIALS_PROVIDERS: dict[str, tuple[str, ...] | None] = {
    DEFAULT_CREDENTIALS_PROVIDER: None,
    "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider": None,
    "com.amazonaws.auth.EnvironmentVariableCredentialsProvider": ("env",),
    "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider": ("env",),
    "com.amazonaws.auth.profile.ProfileCredentialsProvider": _PROFILE_SOURCES,
    "software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider": _PROFILE_SOURCES,
    "com.amazonaws.auth.WebIdentityTokenCredentialsProvider": ("assume-role-with-web-identity",),
    "software.amazon.awssdk.auth.credentials.WebIdentityTokenFileCredentialsProvider": ("assume-role-with-web-identity",),
    "com.amazonaws.auth.ContainerCredentialsProvider": ("container-role",),
    "software.amazon.awssdk.auth.credentials.ContainerCredentialsProvider": ("container-role",),
    "com.amazonaws.auth.InstanceProfileCredentialsProvider": ("iam-role",),
    "software.amazon.awssdk.auth.credentials.InstanceProfileCredentialsProvider": ("iam-role",),
    "com.amazonaws.auth.EC2ContainerCredentialsProviderWrapper": ("container-role", "iam-role"),
}
CANNED_ACLS = ("private", "public-read", "public-read-write", "authenticated-read", "log-delivery-write",
               "bucket-owner-read", "bucket-owner-full-control", "aws-exec-read")
SSE_S3, SSE_KMS = "AES256", "aws:kms"


# --- configuration -----------------------------------------------------------------------------


@cache
def _aws_regions() -> tuple[str, ...]:
    import botocore.session

    session = botocore.session.get_session()
    regions = {r for p in session.get_available_partitions() for r in session.get_available_regions("s3", p)}
    return tuple(sorted(regions))


class _RegionValidator:
    def __call__(self, key: str, value: Any) -> str | None:
        if value is not None and value.strip().lower() not in _aws_regions():
            return f"'{value}' is not an AWS region; expected one of: {', '.join(_aws_regions())}"
        return None

    def describe(self) -> str:
        return "an AWS region (us-west-2, eu-central-1, ...)"


class _PartRange:
    def __call__(self, key: str, value: Any) -> str | None:
        if value is not None and value < PART_SIZE_MIN:
            return f"Part size must be at least: {PART_SIZE_MIN} bytes (5MB)"
        return None

    def describe(self) -> str:
        return f"[{PART_SIZE_MIN},...,{PART_SIZE_MAX}]"


class _CredentialsProviderValidator:
    _WHY_NOT = {
        "com.amazonaws.auth.SystemPropertiesCredentialsProvider": "there are no Java system properties here",
        "io.confluent.connect.s3.auth.AwsAssumeRoleCredentialsProvider": "assuming a role is not supported here",
    }

    def __call__(self, key: str, value: Any) -> str | None:
        if value is None or value in CREDENTIALS_PROVIDERS:
            return None
        why = self._WHY_NOT.get(value, "it is not an AWS SDK credentials provider this connector knows")
        names = ", ".join(sorted({c.rsplit(".", 1)[1] for c in CREDENTIALS_PROVIDERS}))
        return (f"'{value}' cannot be used: {why}; use one of the AWS SDK's {names} (by class name), "
                f"or set {AWS_ACCESS_KEY_ID} and {AWS_SECRET_ACCESS_KEY}")

    def describe(self) -> str:
        return "an AWS SDK credentials provider class: " + ", ".join(CREDENTIALS_PROVIDERS)


def store_config_def() -> ConfigDef:
    """The object store's keys, as Confluent's S3 sink declares them (plus `file:` store URLs)."""
    return (
        ConfigDef()
        .define(S3_BUCKET, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
                doc="The S3 Bucket.", group="S3")
        .define(S3_REGION, Type.STRING, "us-west-2", _RegionValidator(), Importance.MEDIUM,
                doc="The AWS region to be used the connector.", group="S3")
        .define(PART_SIZE, Type.INT, 25 * 1024 * 1024, _PartRange(), Importance.HIGH,
                doc="The Part Size in S3 Multi-part Uploads.", group="S3")
        .define(CREDENTIALS_PROVIDER_CLASS, Type.CLASS, DEFAULT_CREDENTIALS_PROVIDER,
                _CredentialsProviderValidator(), Importance.LOW,
                doc="Credentials provider or provider chain to use for authentication to AWS. By default the "
                    "connector uses ``DefaultAWSCredentialsProviderChain``.", group="S3")
        .define(AWS_ACCESS_KEY_ID, Type.STRING, "", importance=Importance.HIGH,
                doc="The AWS access key ID used to authenticate personal AWS credentials such as IAM credentials. "
                    f"Use only if you do not wish to authenticate by using a credentials provider class via "
                    f"``{CREDENTIALS_PROVIDER_CLASS}``", group="S3")
        .define(AWS_SECRET_ACCESS_KEY, Type.PASSWORD, None, importance=Importance.HIGH,
                doc="The secret access key used to authenticate personal AWS credentials such as IAM credentials. "
                    f"Use only if you do not wish to authenticate by using a credentials provider class via "
                    f"``{CREDENTIALS_PROVIDER_CLASS}``", group="S3")
        .define(SSEA, Type.STRING, "", ValidString.of("", SSE_S3, SSE_KMS), Importance.LOW,
                doc="The S3 Server Side Encryption Algorithm.", group="S3")
        .define(SSE_CUSTOMER_KEY, Type.PASSWORD, None, importance=Importance.LOW,
                doc="The S3 Server Side Encryption Customer-Provided Key (SSE-C).", group="S3")
        .define(SSE_KMS_KEY_ID, Type.STRING, "", importance=Importance.LOW,
                doc="The name of the AWS Key Management Service (AWS-KMS) key to be used for server side "
                    "encryption of the S3 objects. No encryption is used when no key is provided, but it is "
                    f"enabled when ``{SSE_KMS}`` is specified as encryption algorithm with a valid key name.",
                group="S3")
        .define(ACL_CANNED, Type.STRING, None, ValidString.of(*CANNED_ACLS), Importance.LOW,
                doc="An S3 canned ACL header value to apply when writing objects.", group="S3")
        .define(COMPRESSION_TYPE, Type.STRING, "none", ValidString.of("none", "gzip"), Importance.LOW,
                doc="Compression type for files written to S3. Applied when using JsonFormat or ByteArrayFormat. "
                    "Available values: none, gzip.", group="S3")
        .define(COMPRESSION_LEVEL, Type.INT, -1, Range.between(-1, 9), Importance.LOW,
                doc="Compression level for files written to S3. Applied when using JsonFormat or "
                    "ByteArrayFormat. -1 for system default, or [0,...,9] for levels between no compression "
                    "and best compression.", group="S3")
        .define(PART_RETRIES, Type.INT, 3, Range.at_least(0), Importance.MEDIUM,
                doc="Maximum number of retry attempts for failed requests. Zero means no retries. Here every "
                    "request is tried at most this many times more, on 5xx answers, throttling, timeouts and "
                    "dropped connections.", group="S3")
        .define(RETRY_BACKOFF_MS, Type.LONG, 200, Range.at_least(0), Importance.LOW,
                doc="How long to wait in milliseconds before attempting the first retry of a failed S3 request. "
                    "Upon a failure, this connector may wait up to twice as long as the previous wait, up to the "
                    "maximum number of retries. This avoids retrying in a tight loop under failure scenarios.",
                group="S3")
        .define(PROXY_URL, Type.STRING, "", importance=Importance.LOW,
                doc="S3 Proxy settings encoded in URL syntax. This property is meant to be used only if you need "
                    "to access S3 through a proxy.", group="S3")
        .define(PROXY_USER, Type.STRING, None, importance=Importance.LOW,
                doc=f"S3 Proxy User. This property is meant to be used only if you need to access S3 through a "
                    f"proxy. Using ``{PROXY_USER}`` instead of embedding the username and password in "
                    f"``{PROXY_URL}`` allows the password to be hidden in the logs.", group="S3")
        .define(PROXY_PASSWORD, Type.PASSWORD, None, importance=Importance.LOW,
                doc=f"S3 Proxy Password. This property is meant to be used only if you need to access S3 through "
                    f"a proxy. Using ``{PROXY_PASSWORD}`` instead of embedding the username and password in "
                    f"``{PROXY_URL}`` allows the password to be hidden in the logs.", group="S3")
        .define(EXPECT_CONTINUE, Type.BOOLEAN, True, importance=Importance.LOW,
                doc="Enable or disable use of the HTTP/1.1 handshake using EXPECT: 100-CONTINUE during "
                    "multi-part upload. If true, the client will wait for a 100 (CONTINUE) response before "
                    "sending the request body. Else, the client uploads the entire request body without "
                    "checking if the server is willing to accept the request.", group="S3")
        .define(PATH_STYLE, Type.BOOLEAN, True, importance=Importance.LOW,
                doc="Specifies whether or not to enable path style access to the bucket used by the connector",
                group="S3")
        .define(STORE_URL, Type.STRING, None, importance=Importance.HIGH,
                doc="Store's connection URL, if applicable. Here: an S3-compatible endpoint (http(s)://host:port), "
                    "or file:///absolute/dir or file:relative/dir to keep the objects on the local filesystem, "
                    "bucket b's object k at <dir>/b/k.", group="Storage")
        .define(STORAGE_CLASS, Type.CLASS, S3_STORAGE_CLASS, ValidString.of(S3_STORAGE_CLASS), Importance.HIGH,
                doc="The underlying storage layer.", group="Storage")
    )


def check_config(values: Mapping[str, Any]) -> list[Problem]:
    """What the store refuses beyond single keys (call with the typed values of `store_config_def`)."""
    problems: list[Problem] = []
    plain = {k: (v.value if isinstance(v, Password) else v) for k, v in values.items()}
    key_id, secret = (plain.get(AWS_ACCESS_KEY_ID) or "").strip(), plain.get(AWS_SECRET_ACCESS_KEY) or ""
    if bool(key_id) != bool(secret):
        missing, given = (AWS_SECRET_ACCESS_KEY, AWS_ACCESS_KEY_ID) if key_id else (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)
        problems.append(Problem(missing, f"is required with {given}: set both, or neither to use "
                                         f"{CREDENTIALS_PROVIDER_CLASS}"))
    ssea = plain.get(SSEA) or ""
    customer_key = plain.get(SSE_CUSTOMER_KEY) or ""
    if customer_key:
        if ssea != SSE_S3:
            problems.append(Problem(SSE_CUSTOMER_KEY, f"is only used with {SSEA}={SSE_S3}; set that or remove it"))
        elif _customer_key(customer_key) is None:
            problems.append(Problem(SSE_CUSTOMER_KEY, "must be the base64 encoding of a 256-bit key (32 bytes)"))
    if plain.get(SSE_KMS_KEY_ID) and ssea != SSE_KMS:
        problems.append(Problem(SSE_KMS_KEY_ID, f"is only used with {SSEA}={SSE_KMS}; set that or remove it"))
    url = (plain.get(STORE_URL) or "").strip()
    if url and not url.startswith("file:"):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problems.append(Problem(STORE_URL, "must be an http(s)://host[:port] endpoint, file:///absolute/dir or "
                                               "file:relative/dir"))
    elif url and urlsplit(url).netloc not in ("", "localhost"):
        problems.append(Problem(STORE_URL, "a file: URL names a local directory: file:///absolute/dir or "
                                           "file:relative/dir, without a host"))
    proxy = (plain.get(PROXY_URL) or "").strip()
    if proxy and not urlsplit(proxy).hostname:
        problems.append(Problem(PROXY_URL, "must be a URL such as http://proxy.example.com:3128"))
    return problems


def _customer_key(text: str) -> bytes | None:
    """The raw 256-bit SSE-C key from its base64 form (as the AWS SDK's SSECustomerKey(String) takes it)."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except ValueError:
        return None
    return raw if len(raw) == 32 else None


# --- uploads -----------------------------------------------------------------------------------


class Upload(ABC):
    """One object being written: `write()` bytes, then `commit()` (all or nothing) or `abort()`.

    As a context manager it commits on a clean exit and aborts when an exception leaves the block.
    Not thread-safe. `bytes_written` counts the bytes given to `write()` (before compression).
    """

    def __init__(self, key: str, compression_level: int | None):
        self.key = key
        self.bytes_written = 0
        # gzip framing (wbits 16+15), as java.util.zip.GZIPOutputStream writes it in Confluent's sink
        self._gzip = None if compression_level is None else zlib.compressobj(compression_level, zlib.DEFLATED, 31)
        self._state = "open"

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._state != "open":
            raise ValueError(f"upload of {self.key} is {self._state}: it takes no more data")
        view = memoryview(data)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        self.bytes_written += view.nbytes
        if self._gzip is not None:
            view = memoryview(self._gzip.compress(view))
        if view.nbytes:
            self._guarded(self._write_raw, view)

    def commit(self) -> None:
        """Make the object visible, whole. A second commit does nothing; a commit after abort fails."""
        if self._state == "committed":
            return
        if self._state != "open":
            raise ValueError(f"upload of {self.key} was aborted: it cannot be committed")
        if self._gzip is not None:
            tail = self._gzip.flush()
            if tail:
                self._guarded(self._write_raw, memoryview(tail))
        self._guarded(self._commit_raw)
        self._state = "committed"

    def abort(self) -> None:
        """Drop what was written; the object (or its previous version) stays as it was. Idempotent."""
        if self._state == "open":
            self._state = "aborted"
            self._abort_raw()

    def _guarded(self, step: Callable[..., None], *args: Any) -> None:
        try:
            step(*args)
        except BaseException:
            self._state = "aborted"
            try:
                self._abort_raw()
            except Exception as e:  # the first failure is the one to report; abort_incomplete cleans up
                log.warning("could not clean up the failed upload of %s: %s", self.key, e)
            raise

    def __enter__(self) -> Upload:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    @abstractmethod
    def _write_raw(self, data: memoryview) -> None: ...

    @abstractmethod
    def _commit_raw(self) -> None: ...

    @abstractmethod
    def _abort_raw(self) -> None: ...


# --- stores ------------------------------------------------------------------------------------


class ObjectStore(ABC):
    """A bucket of objects. See the module docstring for the contracts every store keeps."""

    bucket: str
    compression_level: int | None  # None: no compression; else gzip at this level

    @staticmethod
    def from_config(config: Mapping[str, Any], *, read_timeout: float = 60.0) -> ObjectStore:
        """The store a validated config of `store_config_def()`'s keys names (`store.url` picks it).

        `read_timeout`: seconds an S3 request may wait for an answer (botocore's default, 60).
        """
        problems = check_config(config)
        if problems:
            raise ConfigError(problems)
        secret = config[AWS_SECRET_ACCESS_KEY]
        level = None if config[COMPRESSION_TYPE] == "none" else config[COMPRESSION_LEVEL]
        url = (config[STORE_URL] or "").strip()
        if url.startswith("file:"):
            return LocalStore(str(Path(unquote(urlsplit(url).path)).absolute()), config[S3_BUCKET], level)
        proxy_url, proxy_user, proxy_password = _proxy(config)
        ssea, customer_key = config[SSEA], config[SSE_CUSTOMER_KEY]
        return S3Store(_S3Settings(
            bucket=config[S3_BUCKET], region=config[S3_REGION].strip().lower(),
            endpoint=url or configured_endpoint(),
            access_key_id=config[AWS_ACCESS_KEY_ID].strip() or None,
            secret_access_key=secret if secret and secret.value else None,
            credentials_provider=config[CREDENTIALS_PROVIDER_CLASS],
            sse="SSE-C" if ssea == SSE_S3 and customer_key and customer_key.value else ssea or None,
            sse_customer_key=customer_key if customer_key and customer_key.value else None,
            sse_kms_key_id=config[SSE_KMS_KEY_ID] or None, acl=config[ACL_CANNED] or None,
            proxy_url=proxy_url, proxy_user=proxy_user, proxy_password=proxy_password,
            part_size=config[PART_SIZE], part_retries=config[PART_RETRIES],
            retry_backoff_s=config[RETRY_BACKOFF_MS] / 1000, compression_level=level,
            expect_continue=config[EXPECT_CONTINUE], path_style=config[PATH_STYLE], read_timeout=read_timeout,
        ))

    @property
    def extension_suffix(self) -> str:
        """What the caller appends to object names: '.gz' when the store gzips them (as Confluent does)."""
        return "" if self.compression_level is None else ".gz"

    @abstractmethod
    def url(self, key: str = "") -> str:
        """Where object `key` is, for messages: s3://bucket/key, or a local path."""

    @abstractmethod
    def check(self) -> None:
        """The bucket exists and the credentials work; else ConfigError naming the key to fix."""

    @abstractmethod
    def upload(self, key: str) -> Upload:
        """Start writing object `key`: nothing is visible before the upload's commit()."""

    @abstractmethod
    def abort_incomplete(self, prefix: str, match: Callable[[str], bool] | None = None) -> list[str]:
        """Remove the incomplete uploads (S3) / temp files (local) under `prefix` that crashed writers left
        (only those whose object key `match` accepts, when given).

        Returns the key of each one removed, sorted. Call it only while no writer of those keys runs
        (under the connector's lease, before a batch writes): it cannot tell a live upload from a dead one.
        """

    @abstractmethod
    def list(self, prefix: str) -> list[str]:
        """Every object key under `prefix`, sorted."""

    @abstractmethod
    def list_info(self, prefix: str) -> list[tuple[str, int, int]]:
        """(key, size in bytes, last modified in epoch ms) of every object under `prefix`, sorted by key."""

    @abstractmethod
    def read(self, key: str) -> bytes:
        """The bytes of object `key`, as stored (still compressed when the store compresses)."""

    @abstractmethod
    def delete(self, keys: Iterable[str]) -> None:
        """Delete these objects; keys that do not exist are ignored."""


def configured_endpoint(env: Mapping[str, str] | None = None) -> str | None:
    """The S3 endpoint the AWS environment variables name (AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL,
    unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true), read where the store is made: on the driver.

    The store travels to Spark's executors inside the batch's plan and opens its clients there, where
    these variables are not set unless the cluster sets them too; left to botocore, the driver's checks
    would reach the endpoint and the executors' writes would go to AWS.
    """
    env = os.environ if env is None else env
    if str(env.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "")).strip().lower() == "true":
        return None
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        value = str(env.get(name) or "").strip()
        if value:
            return value
    return None


def _proxy(config: Mapping[str, Any]) -> tuple[str | None, str | None, Password | None]:
    """The proxy URL without credentials, and its user and password (the keys win over the URL's)."""
    url = (config[PROXY_URL] or "").strip()
    if not url:
        return None, None, None
    parts = urlsplit(url)
    scheme = "http" if parts.scheme.lower() == "http" else "https"  # as Confluent's S3ProxyConfig
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
    user = config[PROXY_USER] or (unquote(parts.username) if parts.username else None)
    password = config[PROXY_PASSWORD]
    if not (password and password.value) and parts.password:
        password = Password(unquote(parts.password))
    return f"{scheme}://{netloc}", user, password if password and password.value else None


# --- S3 ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _S3Settings:
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


_clients: dict[tuple[int, _S3Settings], Any] = {}
_clients_lock = threading.Lock()

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

    def __init__(self, settings: _S3Settings):
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
        return {"SSECustomerAlgorithm": SSE_S3, "SSECustomerKey": _customer_key(self._s.sse_customer_key.value)}

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
        _check_key(key)
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


def _new_client(s: _S3Settings):
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


# --- local filesystem --------------------------------------------------------------------------

_TEMP = re.compile(r"^\.(?P<name>.+)\.[0-9a-f]{16}\.incomplete$")
"""Temp files of uploads in progress: `.<name>.<16 hex>.incomplete`, next to the object they become."""


def _check_key(key: str) -> None:
    # keys become paths on the local store: no way out of the bucket, nothing a path cannot hold
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in key:
        raise ValueError(f"invalid object key {key!r}: it needs non-empty '/'-separated names, none '.' or '..'")


class LocalStore(ObjectStore):
    """Objects as files: bucket b's object k is `<root>/b/k`. Commits are `os.replace` of a hidden temp file."""

    def __init__(self, root: str, bucket: str, compression_level: int | None = None):
        self.root = root
        self.bucket = bucket
        self.compression_level = compression_level

    def __repr__(self) -> str:
        compression = "none" if self.compression_level is None else "gzip"
        return f"LocalStore(root={self.root!r}, bucket={self.bucket!r}, compression={compression!r})"

    __str__ = __repr__

    @property
    def _dir(self) -> Path:
        return Path(self.root) / self.bucket

    def path(self, key: str) -> Path:
        _check_key(key)
        return self._dir / key

    def url(self, key: str = "") -> str:
        return str(self._dir / key)

    def check(self) -> None:
        root = Path(self.root)
        if not root.is_dir():
            raise ConfigError([Problem(STORE_URL, f"directory {root} does not exist: create it or fix {STORE_URL}")])
        if not self._dir.is_dir():
            raise ConfigError([Problem(S3_BUCKET, f"bucket directory {self._dir} does not exist: create it "
                                                  f"(mkdir -p {self._dir}) or fix {S3_BUCKET}")])
        if not os.access(self._dir, os.W_OK | os.X_OK):
            raise ConfigError([Problem(STORE_URL, f"bucket directory {self._dir} is not writable by this user")])

    def upload(self, key: str) -> Upload:
        return _LocalUpload(self, key)

    def _files(self, prefix: str):
        """(key, path, is a temp file) of every file under prefix."""
        if ".." in prefix.split("/"):
            raise ValueError(f"invalid prefix {prefix!r}: no '..' in it")
        base = self._dir / prefix.rpartition("/")[0]  # the deepest directory the prefix names
        for dirpath, _, filenames in os.walk(base):
            rel = Path(dirpath).relative_to(self._dir).as_posix()
            for name in filenames:
                temp = _TEMP.match(name)
                key = (f"{rel}/" if rel != "." else "") + (temp["name"] if temp else name)
                if key.startswith(prefix):
                    yield key, Path(dirpath) / name, temp is not None

    def abort_incomplete(self, prefix: str, match: Callable[[str], bool] | None = None) -> list[str]:
        found = []
        for key, path, temp in list(self._files(prefix)):
            if temp and (match is None or match(key)):
                path.unlink(missing_ok=True)
                log.info("removed the temp file of an incomplete upload of %s: %s", key, path)
                found.append(key)
        return sorted(found)

    def list(self, prefix: str) -> list[str]:
        return sorted(key for key, _, temp in self._files(prefix) if not temp)

    def list_info(self, prefix: str) -> list[tuple[str, int, int]]:
        out = []
        for key, path, temp in self._files(prefix):
            if not temp:
                st = path.stat()
                out.append((key, st.st_size, int(st.st_mtime * 1000)))
        return sorted(out)

    def read(self, key: str) -> bytes:
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            raise FatalError(f"object {key} does not exist in {self._dir}") from None

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.path(key).unlink(missing_ok=True)


class _LocalUpload(Upload):
    def __init__(self, store: LocalStore, key: str):
        super().__init__(key, store.compression_level)
        self._target = store.path(key)
        try:
            self._target.parent.mkdir(parents=True, exist_ok=True)
            self._temp = self._target.with_name(f".{self._target.name}.{secrets.token_hex(8)}.incomplete")
            self._file = open(self._temp, "xb")
        except OSError as e:
            raise self._error("create", e) from None

    def _error(self, op: str, e: OSError) -> LakeConnectError:
        if isinstance(e, PermissionError):
            return ConfigError([Problem(STORE_URL, f"cannot {op} {self._target}: {e.strerror}; fix the "
                                                   f"directory's permissions or {STORE_URL}")])
        return RetriableError(f"cannot {op} {self._target}: {e.strerror or e}; check the filesystem (space, "
                              f"health), then run the batch again")

    def _write_raw(self, data: memoryview) -> None:
        try:
            self._file.write(data)
        except OSError as e:
            raise self._error("write", e) from None

    def _commit_raw(self) -> None:
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self._temp, self._target)
            directory = os.open(self._target.parent, os.O_RDONLY)  # make the rename itself durable
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as e:
            raise self._error("commit", e) from None

    def _abort_raw(self) -> None:
        self._file.close()
        self._temp.unlink(missing_ok=True)
