"""Which JDBC driver errors a run may pass when tried again (exit 75, retried by the DAG) and which need a
person (exit 1): the texts are the drivers' own, as Spark wraps them."""

from __future__ import annotations

import pytest

from connectors.jdbc.errors import transient_sql_error


@pytest.mark.parametrize("text", [
    "java.sql.SQLNonTransientConnectionException: (conn=42) Connection was killed",
    "org.postgresql.util.PSQLException: An I/O error occurred while sending to the backend.",
    "org.postgresql.util.PSQLException: FATAL: terminating connection due to administrator command",
    "Caused by: java.sql.SQLNonTransientConnectionException: unexpected end of stream, read 0 bytes from 4 "
    "(socket was closed by server)",
    "java.sql.SQLTransactionRollbackException: (conn=9) Deadlock found when trying to get lock",
    "org.postgresql.util.PSQLException: ERROR: could not serialize access  SQLState: 40001",
    "com.mysql.cj.jdbc.exceptions.CommunicationsException: Communications link failure",
    "java.sql.SQLRecoverableException: Connection reset",
])
def test_lost_connections_and_retry_requests_are_transient(text):
    assert transient_sql_error(text)


@pytest.mark.parametrize("text", [
    "java.sql.SQLSyntaxErrorException: (conn=3) You have an error in your SQL syntax",
    "java.sql.SQLException: (conn=5) row is broken",
    "java.sql.SQLTransientConnectionException: (conn=157) row is broken",  # MariaDB's SIGNAL SQLSTATE '45000'

    "org.postgresql.util.PSQLException: ERROR: row is broken  Where: PL/pgSQL function lc_check",
    "java.sql.SQLIntegrityConstraintViolationException: Duplicate entry",
    "org.postgresql.util.PSQLException: ERROR: permission denied for table kafka_books  SQLState: 42501",
])
def test_what_the_database_refuses_is_not(text):
    assert not transient_sql_error(text)
