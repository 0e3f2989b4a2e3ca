"""The registry's state: one append-only Delta table, `<lake>/_connect/_schemas`, as Confluent's registry
keeps its state in the `_schemas` topic: a row per schema version of a subject (soft- and hard-deleted
versions are later rows of the same key) and a row per compatibility setting (subject "" is the global
one). The newest row of a key wins.

Every change is one commit pinned to the table version it was decided on: two registrations racing from
two processes cannot take the same id or version; the loser decides again on the newer state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ingest.errors import RetriableError
from ingest.state.tables import TS, StateTable, now

SCHEMAS_TABLE = "_schemas"
SCHEMA, CONFIG = "SCHEMA", "CONFIG"
GLOBAL = ""
_ATTEMPTS = 20


@dataclass(frozen=True)
class Version:
    subject: str
    version: int
    id: int
    schema: str  # the canonical text
    schema_type: str
    references: str  # JSON list, "[]" without
    deleted: bool


@dataclass(frozen=True)
class State:
    """The registry as of one table version."""

    table_version: int
    versions: list[Version]  # every version not hard-deleted, by subject then version
    configs: dict[str, str]  # subject ("" = global) -> compatibility level
    ids: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """Every (schema, type, references) ever given an id, hard-deleted ones too: an id is never given to
    another schema, since records written with it may still be read."""

    def of(self, subject: str, deleted: bool = False) -> list[Version]:
        return [v for v in self.versions if v.subject == subject and (deleted or not v.deleted)]

    def by_id(self, schema_id: int) -> Version | None:
        found = [v for v in self.versions if v.id == schema_id]
        live = [v for v in found if not v.deleted]
        return (live or found or [None])[0]

    def id_of(self, schema: str, schema_type: str, references: str) -> int | None:
        return self.ids.get((schema, schema_type, references))

    def next_id(self) -> int:
        return max(self.ids.values(), default=0) + 1


class SchemaStore(StateTable):
    schema = pa.schema([
        ("kind", pa.string()), ("subject", pa.string()), ("version", pa.int32()), ("id", pa.int32()),
        ("schema_type", pa.string()), ("schema", pa.string()), ("references", pa.string()),
        ("deleted", pa.bool_()), ("purged", pa.bool_()), ("compatibility", pa.string()), ("written_at", TS),
    ])

    def state(self) -> State:
        table = self._load()
        if table is None:
            return State(-1, [], {})
        version = table.version()
        rows = sorted(self._rows(table).to_pylist(), key=lambda r: r["written_at"])  # stable: log order
        newest: dict[tuple[Any, ...], dict[str, Any]] = {}
        for row in rows:  # later rows win
            newest[(row["kind"], row["subject"], row["version"] if row["kind"] == SCHEMA else None)] = row
        versions = sorted((Version(r["subject"], r["version"], r["id"], r["schema"], r["schema_type"],
                                   r["references"] or "[]", bool(r["deleted"]))
                           for r in newest.values() if r["kind"] == SCHEMA and not r["purged"]),
                          key=lambda v: (v.subject, v.version))
        ids = {(r["schema"], r["schema_type"], r["references"] or "[]"): r["id"] for r in rows if r["kind"] == SCHEMA}
        configs = {r["subject"]: r["compatibility"] for r in newest.values()
                   if r["kind"] == CONFIG and r["compatibility"] is not None}
        return State(version, versions, configs, ids)

    def change(self, decide) -> Any:
        """Apply `decide(state) -> (rows, result)` atomically: the rows are committed only if the table has
        not moved since `state`; otherwise decide again on the newer state. Returns the result."""
        for _ in range(_ATTEMPTS):
            state = self.state()
            rows, result = decide(state)
            if not rows:
                return result
            stamped = [{"written_at": now(), "deleted": False, "purged": False, "references": None,
                        "compatibility": None, "version": None, "id": None, "schema_type": None, "schema": None,
                        **r} for r in rows]
            try:
                self.append(stamped, expected_version=state.table_version)
                return result
            except RetriableError:
                continue
        raise RetriableError(f"the schema registry's table {self.uri} kept changing under "
                             f"{_ATTEMPTS} attempts; try again")
