"""The four state stores: connector configs, offsets, status and runs, each a Delta table under
`<lake.root>/_connect/<name>`. Names come from the worker config so connectors can share or reuse them.
Beside the status table, `<status>-topic-resets` records when each connector's active topics were reset.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ingest.errors import StateError
from ingest.state.tables import TS, StateTable, canonical_json, eq, now
from ingest.state import states

# The states, where the tables' users have always found them.
UNASSIGNED, RUNNING, PAUSED, FAILED, RESTARTING, STOPPED = (
    states.UNASSIGNED, states.RUNNING, states.PAUSED, states.FAILED, states.RESTARTING, states.STOPPED)
TARGET_STATES, CONNECTOR_TASK = states.TARGET_STATES, states.CONNECTOR_TASK


def state_uri(lake_root: str, name: str) -> str:
    return f"{lake_root.rstrip('/')}/_connect/{name}"


class ConfigStore(StateTable):
    """Connector configs, versioned; a deletion is a row with `deleted` set. Configs are kept as given,
    with `${provider:…}` references unresolved, and shown with secrets masked."""

    schema = pa.schema([
        ("connector", pa.string()), ("version", pa.int64()), ("config", pa.string()),
        ("target_state", pa.string()), ("deleted", pa.bool_()), ("written_at", TS),
    ])

    def get(self, name: str) -> dict[str, Any] | None:
        rows = self.latest(["connector"], eq("connector", name))
        if not rows or rows[0]["deleted"]:
            return None
        row = rows[0]
        return {"name": name, "version": row["version"], "config": json.loads(row["config"]),
                "target_state": row["target_state"]}

    def list(self) -> list[str]:
        return sorted(r["connector"] for r in self.latest(["connector"]) if not r["deleted"])

    def _next_version(self, name: str) -> int:
        versions = self.read(eq("connector", name), columns=["version"]).column("version").to_pylist()
        return max(versions, default=0) + 1

    def put(self, name: str, config: Mapping[str, str], target_state: str | None = None) -> int:
        current = self.get(name)
        state = target_state or (current["target_state"] if current else RUNNING)
        version = self._next_version(name)
        self.append([{"connector": name, "version": version, "config": json.dumps(dict(config)),
                      "target_state": state, "deleted": False, "written_at": now()}])
        return version

    def set_target_state(self, name: str, state: str) -> None:
        current = self.require(name)
        self.put(name, current["config"], state)

    def delete(self, name: str) -> None:
        self.require(name)
        self.append([{"connector": name, "version": self._next_version(name), "config": "{}",
                      "target_state": STOPPED, "deleted": True, "written_at": now()}])

    def require(self, name: str) -> dict[str, Any]:
        found = self.get(name)
        if found is None:
            known = ", ".join(self.list()) or "none"
            raise StateError(f"connector '{name}' not found (known connectors: {known}); "
                             "create it with `lakeconnect connectors create FILE`")
        return found


@dataclass(frozen=True)
class OffsetEntry:
    partition: dict[str, Any]
    offset: dict[str, Any] | None
    written_at: Any = None


class OffsetStore(StateTable):
    """Kafka Connect's offsets: key `[connector, source partition]` -> source offset (null = reset).

    Sink connectors keep their topic-partition offsets under the group name `connect-<name>`, with
    partition `{"kafka_topic", "kafka_partition"}` and offset `{"kafka_offset"}` as KIP-875 prints them.
    """

    schema = pa.schema([
        ("connector", pa.string()), ("partition", pa.string()), ("offset", pa.string()),
        ("task", pa.int32()), ("batch_id", pa.int64()), ("written_at", TS),
    ])

    def committed(self, connector: str) -> dict[str, OffsetEntry]:
        """Latest offset per partition (partition JSON text -> entry); reset partitions are left out."""
        out = {}
        for row in self.latest(["partition"], eq("connector", connector)):
            if row["offset"] is not None:
                out[row["partition"]] = OffsetEntry(json.loads(row["partition"]), json.loads(row["offset"]),
                                                    row["written_at"])
        return out

    def commit(self, connector: str, offsets: Mapping[str, Any], *, task: int, batch_id: int,
               app_id: str | None = None) -> bool:
        """Write partition -> offset (None resets it). Idempotent per `(app_id, batch_id)`."""
        ts = now()
        rows = [{"connector": connector, "partition": canonical_json(p) if not isinstance(p, str) else p,
                 "offset": None if o is None else canonical_json(o), "task": task, "batch_id": batch_id,
                 "written_at": ts} for p, o in offsets.items()]
        return self.append(rows, app_id=app_id, version=batch_id if app_id else None)


class StatusStore(StateTable):
    """Connector and task states with the error trace of a failure (secrets masked before writing)."""

    schema = pa.schema([
        ("connector", pa.string()), ("task", pa.int32()), ("state", pa.string()), ("trace", pa.string()),
        ("worker_id", pa.string()), ("written_at", TS),
    ])

    def set(self, connector: str, task: int, state: str, trace: str | None = None, worker_id: str = "") -> None:
        self.append([{"connector": connector, "task": task, "state": state, "trace": trace,
                      "worker_id": worker_id, "written_at": now()}])

    def get(self, connector: str) -> dict[int, dict[str, Any]]:
        return {r["task"]: r for r in self.latest(["task"], eq("connector", connector))}


class TopicResetStore(StateTable):
    """When each connector's set of active topics (KIP-558) was last emptied: the set is the topics of its
    batches committed since (the runs table's stats name them), so a reset is one row, not a rewrite."""

    schema = pa.schema([("connector", pa.string()), ("written_at", TS)])

    def reset(self, connector: str) -> None:
        self.append([{"connector": connector, "written_at": now()}])

    def last(self, connector: str) -> Any:
        """The time of the connector's last reset (a UTC datetime), or None."""
        rows = self.latest(["connector"], eq("connector", connector))
        return rows[0]["written_at"] if rows else None


# Run states
PLANNED, COMMITTED, EMPTY, ABANDONED, FAILED_RUN = "PLANNED", "COMMITTED", "EMPTY", "ABANDONED", "FAILED"


class RunStore(StateTable):
    """One row per batch state change: PLANNED (intent persisted), then COMMITTED, FAILED or ABANDONED;
    EMPTY for a poll that found nothing. A PLANNED batch with no later row is resumed by the next run."""

    schema = pa.schema([
        ("connector", pa.string()), ("task", pa.int32()), ("batch_id", pa.int64()), ("state", pa.string()),
        ("plan", pa.string()), ("stats", pa.string()), ("error", pa.string()),
        ("started_at", TS), ("ended_at", TS), ("written_at", TS),
    ])

    def history(self, connector: str, task: int | None = None) -> list[dict[str, Any]]:
        rows = self.latest(["task", "batch_id"], eq("connector", connector))
        if task is not None:
            rows = [r for r in rows if r["task"] == task]
        return sorted(rows, key=lambda r: (r["task"], r["batch_id"], r["written_at"]))

    def last(self, connector: str, task: int) -> dict[str, Any] | None:
        rows = [r for r in self.history(connector, task) if r["state"] != EMPTY]
        return rows[-1] if rows else None

    def record(self, connector: str, task: int, batch_id: int, state: str, *, plan: Any = None,
               stats: Mapping[str, Any] | None = None, error: str | None = None, started_at=None) -> None:
        ts = now()
        self.append([{"connector": connector, "task": task, "batch_id": batch_id, "state": state,
                      "plan": None if plan is None else json.dumps(plan), "stats": json.dumps(dict(stats or {})),
                      "error": error, "started_at": started_at or ts,
                      "ended_at": None if state == PLANNED else ts, "written_at": ts}])


@dataclass
class Stores:
    configs: ConfigStore
    offsets: OffsetStore
    status: StatusStore
    runs: RunStore

    @classmethod
    def open(cls, lake_root: str, *, configs: str, offsets: str, status: str, runs: str,
             storage_options: Mapping[str, str] | None = None) -> Stores:
        so = storage_options or {}
        return cls(ConfigStore(state_uri(lake_root, configs), so), OffsetStore(state_uri(lake_root, offsets), so),
                   StatusStore(state_uri(lake_root, status), so), RunStore(state_uri(lake_root, runs), so))
