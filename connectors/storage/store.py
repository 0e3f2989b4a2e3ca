"""The object store a connector's config names (`from_config`): `store.url` unset or `http(s)://…` is S3
(connectors/storage/s3store.py), `file:` a directory on the local filesystem
(connectors/storage/localstore.py). The keys are in connectors/storage/store_config.py, the contracts every
store keeps in connectors/storage/objectstore.py.

The factory is a module of its own, not a method of `ObjectStore`: it needs both stores, and they need
`ObjectStore`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from connectors.storage.localstore import LocalStore
from connectors.storage.objectstore import ObjectStore
from connectors.storage.s3store import S3Settings, S3Store
from connectors.storage.store_config import (
    ACL_CANNED, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, COMPRESSION_LEVEL, COMPRESSION_TYPE,
    CREDENTIALS_PROVIDER_CLASS, EXPECT_CONTINUE, PART_RETRIES, PART_SIZE, PATH_STYLE, PROXY_PASSWORD, PROXY_URL,
    PROXY_USER, RETRY_BACKOFF_MS, S3_BUCKET, S3_REGION, SSE_CUSTOMER_KEY, SSE_KMS_KEY_ID, SSE_S3, SSEA, STORE_URL,
    check_config,
)
from ingest.config.configdef import Password
from ingest.errors import ConfigError


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
    return S3Store(S3Settings(
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
