"""The oracle's fixtures: Kafka's answers for the whole corpus, computed once per test process."""

from __future__ import annotations

import os
import time

import pytest

from tests.oracle import oracle
from tests.oracle.corpus import cases


@pytest.fixture(scope="session", autouse=True)
def utc_process():
    # PySpark turns timestamps into naive datetimes in the Python process's zone: keep it UTC, as the session.
    os.environ["TZ"] = "UTC"
    time.tzset()


@pytest.fixture(scope="session")
def kafka_answers() -> dict:
    """Kafka's answer to every case of the corpus, by case id (one JVM, about four seconds)."""
    why = oracle.missing()
    if why:
        pytest.fail(why, pytrace=False)  # never a skip: a missing oracle must not pass as "fidelity proven"
    return oracle.run(list(cases()))
