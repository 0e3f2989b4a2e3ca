"""The book's `inventory` database for the CDC tests of this directory, and the binlog's row metadata each
test runs with.

Debezium needs no more than `binlog_format=ROW` and `binlog_row_image=FULL`, and so the tests run against
the server's default `binlog_row_metadata` (MariaDB's NO_LOG: the binlog carries column types, no names),
where the connector knows the columns from its schema history alone. Tests marked `both_row_metadata` run
once more with FULL, where the binlog's own names and types are checked against the history.

LAKECONNECT_TEST_ROW_METADATA=FULL (or MINIMAL, MySQL 8's default) runs every test of the directory at that
setting instead of NO_LOG: `LAKECONNECT_TEST_ROW_METADATA=FULL make test PYTEST_ARGS=tests/mysql`."""

import os

import pymysql
import pytest

from tests.mysql._cdc import inventory, settings  # noqa: F401 (a fixture, registered by being here)

SERVER_DEFAULT = "NO_LOG"
_CHOSEN = os.environ.get("LAKECONNECT_TEST_ROW_METADATA", SERVER_DEFAULT).upper()
if _CHOSEN not in ("NO_LOG", "MINIMAL", "FULL"):
    raise pytest.UsageError(f"LAKECONNECT_TEST_ROW_METADATA={_CHOSEN!r}: expected NO_LOG, MINIMAL or FULL")
ROW_METADATA = (_CHOSEN, "FULL") if _CHOSEN != "FULL" else (SERVER_DEFAULT, "FULL")


def pytest_generate_tests(metafunc):
    if "row_metadata" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_row_metadata"):
        metafunc.parametrize("row_metadata", ROW_METADATA, indirect=True)


@pytest.fixture(autouse=True)
def row_metadata(request, services):
    """The worker's MariaDB writes this binlog_row_metadata for the test (a global, read as each event is
    written); NO_LOG, the server's default (or LAKECONNECT_TEST_ROW_METADATA), unless the test is one of
    the FULL runs."""
    value = getattr(request, "param", _CHOSEN)
    if value == "FULL" and request.node.get_closest_marker("history_only") and not hasattr(request, "param"):
        value = SERVER_DEFAULT  # the test is about the binlog without column names
    _set(services, value)
    yield value
    if value != SERVER_DEFAULT:
        _set(services, SERVER_DEFAULT)  # the server's default again, for whatever runs next


def _set(services, value: str) -> None:
    conn = pymysql.connect(**settings(services), autocommit=True)
    try:
        conn.cursor().execute(f"SET GLOBAL binlog_row_metadata={value}")
    finally:
        conn.close()
