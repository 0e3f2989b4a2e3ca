"""Fixtures for the converter tests: converters made through the registry (Spark: tests/conftest.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import pytest

from ingest.api import Converter
from ingest.registry import PluginKind, default_registry


@pytest.fixture(scope="session", autouse=True)
def utc_process():
    # PySpark turns timestamps into naive datetimes in the Python process's zone: keep it UTC, as the session.
    os.environ["TZ"] = "UTC"
    time.tzset()


@pytest.fixture(scope="session")
def registry():
    return default_registry()


@pytest.fixture(scope="module")
def schema_registry(tmp_path_factory):
    """The URL of a Schema Registry API: a worker's REST server (its `/registry`) on a lake of its own."""
    from tests.conftest import write_worker
    from tests.rest.test_rest_api import Rest

    base = tmp_path_factory.mktemp("registry")
    (base / "lake").mkdir()
    server = Rest(write_worker(base / "worker.properties", base / "lake"))
    yield server.url + "/registry"
    server.stop()


@pytest.fixture
def make(registry):
    """make(name, configs=None, is_key=False): a converter found by any of its names (entry points)."""

    def build(name: str, configs: Mapping[str, Any] | None = None, is_key: bool = False) -> Any:
        info = registry.get(PluginKind.CONVERTER, name)
        if issubclass(info.cls, Converter):
            return info.cls(configs=dict(configs or {}), is_key=is_key)
        return info.cls(configs=dict(configs or {}))

    return build
