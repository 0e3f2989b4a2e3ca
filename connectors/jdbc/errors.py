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
