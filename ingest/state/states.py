"""Connector and task states, as Kafka Connect names them: here, apart from the state tables, so that what
only needs their names (the command line's parser, a client of the worker) imports no table code."""

from __future__ import annotations

UNASSIGNED, RUNNING, PAUSED, FAILED, RESTARTING, STOPPED = (
    "UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "RESTARTING", "STOPPED")
TARGET_STATES = (RUNNING, PAUSED, STOPPED)
CONNECTOR_TASK = -1
"""The `task` value of the connector's own status row."""
