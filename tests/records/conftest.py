"""Fixtures for the record model tests. Spark comes from tests/conftest.py (session-scoped, UTC)."""

from __future__ import annotations

import os
import time

import pytest


@pytest.fixture(scope="session", autouse=True)
def utc_process():
    # PySpark turns timestamps into naive datetimes in the Python process's zone: keep it UTC, as the session.
    os.environ["TZ"] = "UTC"
    time.tzset()
