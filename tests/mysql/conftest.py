"""The book's `inventory` database for the CDC tests of this directory, and the binlog's row metadata each
test runs with.

Debezium needs no more than `binlog_format=ROW` and `binlog_row_image=FULL`, and so the tests run against
the server's default `binlog_row_metadata` (MariaDB's NO_LOG: the binlog carries column types, no names),
where the connector knows the columns from its schema history alone. Tests marked `both_row_metadata` run
once more with FULL, where the binlog's own names and types are checked against the history."""

import pymysql
import pytest

from tests.mysql._cdc import inventory, settings  # noqa: F401 (a fixture, registered by being here)

ROW_METADATA = ("NO_LOG", "FULL")


def pytest_generate_tests(metafunc):
    if "row_metadata" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_row_metadata"):
        metafunc.parametrize("row_metadata", ROW_METADATA, indirect=True)


@pytest.fixture(autouse=True)
def row_metadata(request, services):
    """The worker's MariaDB writes this binlog_row_metadata for the test (a global, read as each event is
    written); NO_LOG, the server's default, unless the test is one of the FULL runs."""
    value = getattr(request, "param", ROW_METADATA[0])
    _set(services, value)
    yield value
    if value != ROW_METADATA[0]:
        _set(services, ROW_METADATA[0])  # the server's default again, for whatever runs next


def _set(services, value: str) -> None:
    conn = pymysql.connect(**settings(services), autocommit=True)
    try:
        conn.cursor().execute(f"SET GLOBAL binlog_row_metadata={value}")
    finally:
        conn.close()
