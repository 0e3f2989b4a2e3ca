"""What a JDBC driver's error means for a run: transient (a lost connection, a deadlock, a server restarting:
the run may pass when tried again) or not (a query or a row the database refuses: a person must look)."""

from __future__ import annotations

import re

# JDBC's classes of errors that may pass when tried again, a lost connection (SQLNonTransientConnection-
# Exception: SQLSTATE 08; MySQL's CommunicationsException) and the SQLSTATEs of the same: 08 (connection),
# 40001/40P01 (serialization failure, deadlock), 57P01-57P03 (PostgreSQL shutting down or not yet up), 70100
# (MariaDB: interrupted). Not SQLTransientConnectionException: MariaDB's Connector/J 2.x gives it to every
# SQLSTATE class it does not map, a row a function refuses with SIGNAL '45000' included.
_TRANSIENT_CLASSES = ("SQLTimeoutException", "SQLTransactionRollbackException", "SQLRecoverableException",
                      "SQLNonTransientConnectionException", "CommunicationsException")
_TRANSIENT_STATE = re.compile(r"(?:SQLState|SQL state|sqlstate)[:=\s]*['\"]?(08\w{3}|40001|40P01|57P0[123]|70100)",
                              re.IGNORECASE)
_TRANSIENT_TEXT = ("An I/O error occurred while sending to the backend", "This connection has been closed",
                   "Communications link failure", "Connection reset", "Broken pipe", "Connection was killed",
                   "terminating connection due to administrator command", "Socket closed",
                   "Connection refused", "socket was closed by server")


def transient_sql_error(text: str) -> bool:
    """Whether a JDBC driver's error (as Spark wraps it) may pass when tried again: a lost connection, a
    deadlock or a server restarting, not a query or a row the database refuses."""
    return (any(f".{c}" in text or text.startswith(c) for c in _TRANSIENT_CLASSES)
            or _TRANSIENT_STATE.search(text) is not None or any(t in text for t in _TRANSIENT_TEXT))


def transient_driver_error(e) -> bool:
    """A Python driver's error that may pass when tried again: a lost connection, a deadlock, a serialization
    failure, a lock not granted in time (pymysql's codes 1205, 1213, 2003, 2006, 2013; psycopg's SQLSTATEs 08xxx,
    40001, 40P01, 55P03, 57P0x; SQLite's "database is locked")."""
    orig = getattr(e, "orig", None)
    args = getattr(orig, "args", None) or (None,)
    sqlstate = getattr(orig, "sqlstate", None) or ""
    return (args[0] in (1205, 1213, 2003, 2006, 2013) or sqlstate[:2] == "08"
            or sqlstate in ("40001", "40P01", "55P03", "57P01", "57P02", "57P03") or "database is locked" in str(orig))


# What a JDBC driver's failure looks like inside Spark's error text.
DRIVER_ERRORS = ("java.sql.SQL", "SQLException", "PSQLException", "SQLiteException", "SQLSyntaxError")


def driver_message(e: Exception) -> str:
    """The JDBC driver's own message out of Spark's wrapped Java error (its innermost cause)."""
    lines = [line.strip() for line in str(e).splitlines()]
    causes = [line.split("Caused by: ", 1)[1] for line in lines if line.startswith("Caused by: ")]
    text = causes[-1] if causes else next((line for line in lines if "Exception:" in line), lines[0] if lines else "")
    return text.split("Exception: ", 1)[-1][:300]
