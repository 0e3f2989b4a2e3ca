"""The oracle's fixtures: Kafka's answers for the whole corpus, computed once per test session."""

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
    """Kafka's answer to every case of the corpus, by case id (one JVM, about five seconds)."""
    why = oracle.missing()
    if why:
        pytest.fail(why, pytrace=False)  # never a skip: a missing oracle must not pass as "fidelity proven"
    return oracle.run(list(cases()))


@pytest.fixture(scope="session")
def lakeconnect_answers(spark, kafka_answers) -> dict:
    """lakeconnect's answer to every chain case, by case id (a few Spark jobs for the whole corpus)."""
    from tests.oracle import lakeconnect
    from tests.oracle.corpus import of_kind

    failing = {i for i, a in kafka_answers.items() if any("error" in r for r in a.get("records", []))}
    return lakeconnect.run(spark, of_kind("chain"), failing)
