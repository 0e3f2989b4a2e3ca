"""The object store's configuration: the keys of Confluent's S3 sink (10.5) and storage-common (`s3.*`,
`aws.*`, `store.url`, `storage.class`), declared as Confluent declares them (`store_config_def`), and what
the store refuses beyond single keys (`check_config`).

Both the sink's config (connectors/s3/config.py) and the stores read these keys; `store.url` picks the
store (connectors/storage/store.py): unset or `http(s)://…` is S3 (the endpoint), `file:` is a directory
on the local filesystem (the embedded default), where object `k` of bucket `b` is the file `<dir>/b/k`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from ingest.config.configdef import ConfigDef, Importance, NonEmptyString, Password, Range, Type, ValidString
from ingest.errors import Problem

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
    "software.amazon.awssdk.auth.credentials.WebIdentityTokenFileCredentialsProvider":
        ("assume-role-with-web-identity",),
    "com.amazonaws.auth.ContainerCredentialsProvider": ("container-role",),
    "software.amazon.awssdk.auth.credentials.ContainerCredentialsProvider": ("container-role",),
    "com.amazonaws.auth.InstanceProfileCredentialsProvider": ("iam-role",),
    "software.amazon.awssdk.auth.credentials.InstanceProfileCredentialsProvider": ("iam-role",),
    "com.amazonaws.auth.EC2ContainerCredentialsProviderWrapper": ("container-role", "iam-role"),
}
CANNED_ACLS = ("private", "public-read", "public-read-write", "authenticated-read", "log-delivery-write",
               "bucket-owner-read", "bucket-owner-full-control", "aws-exec-read")
SSE_S3, SSE_KMS = "AES256", "aws:kms"




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
        missing, given = ((AWS_SECRET_ACCESS_KEY, AWS_ACCESS_KEY_ID) if key_id
                          else (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY))
        problems.append(Problem(missing, f"is required with {given}: set both, or neither to use "
                                         f"{CREDENTIALS_PROVIDER_CLASS}"))
    ssea = plain.get(SSEA) or ""
    customer_key = plain.get(SSE_CUSTOMER_KEY) or ""
    if customer_key:
        if ssea != SSE_S3:
            problems.append(Problem(SSE_CUSTOMER_KEY, f"is only used with {SSEA}={SSE_S3}; set that or remove it"))
        elif customer_key_bytes(customer_key) is None:
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


def customer_key_bytes(text: str) -> bytes | None:
    """The raw 256-bit SSE-C key from its base64 form (as the AWS SDK's SSECustomerKey(String) takes it)."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except ValueError:
        return None
    return raw if len(raw) == 32 else None
