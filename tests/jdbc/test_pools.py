"""A process keeps one connection pool per database and login between batches, as Kafka Connect's JDBC
source keeps its connection between polls; on the private MariaDB and the machine's PostgreSQL."""

from __future__ import annotations

import pytest

from connectors.jdbc import discovery
from connectors.jdbc.dialects import parse_jdbc_url
from connectors.jdbc.discovery import connect, release
from ingest.errors import ConfigError

_SESSION = {"mariadb": "SELECT CONNECTION_ID()", "postgres": "SELECT pg_backend_pid()"}


def _session(engine, kind: str) -> int:
    with engine.connect() as conn:
        return conn.exec_driver_sql(_SESSION[kind]).scalar()


def test_the_next_batch_gets_the_same_pool_and_session(database):
    kind, jdbc, _, _, services = database
    url = parse_jdbc_url(jdbc)
    prefix = "LAKECONNECT_TEST_MARIADB_" if kind == "mariadb" else "LAKECONNECT_TEST_POSTGRES_"
    user, password = services[prefix + "USER"], services.get(prefix + "PASSWORD") or None
    first = connect(url, user, password, attempts=1)
    session = _session(first, kind)
    release(first)  # the batch is over: the pool stays open
    again = connect(url, user, password, attempts=1)
    assert again is first and _session(again, kind) == session
    release(again)


def test_a_refused_login_keeps_no_pool_and_pools_are_bounded(services, monkeypatch):
    """On the private MariaDB, whose logins the test controls."""
    url = parse_jdbc_url(services["LAKECONNECT_TEST_MARIADB_JDBC"])
    before = dict(discovery._POOLS)
    with pytest.raises(ConfigError, match="refused the login") as e:
        connect(url, "nobody_here", "not-the-password", attempts=1)
    assert "not-the-password" not in str(e.value)
    assert dict(discovery._POOLS) == before
    monkeypatch.setattr(discovery, "_POOLS_KEPT", 1)
    kept = connect(url, services["LAKECONNECT_TEST_MARIADB_USER"], None, attempts=1)
    assert list(discovery._POOLS.values()) == [kept]  # the older pools were closed
