"""Planning and committing a write: the driver side, shared by Spark writes and Arrow state writes.

A write is planned against the table's current snapshot (is this (app_id, version) already
committed? which partitioning, which schema?), its files are written by whoever holds the data, and
then ONE delta-rs commit adds them all, carrying the app transaction. Each commit attempt is made
against a fresh snapshot with delta-rs's own retries off, so the committed version is known exactly
and nothing is rebased behind our back:

- a blind append that loses a race is re-checked (did a twin commit our app transaction? then ours
  is a no-op) and committed again on the new snapshot, a bounded number of times;
- an overwrite, or a write pinned to `expected_version` (topics: offsets were computed from it),
  raises RetriableError instead: rebasing either would change what it means. Only maintenance's
  commits (file merges, and retention and compaction, which keep every offset) may come between a
  pinned append and its version; a pinned rewrite (one that removes files) accepts none.

A process that dies after writing files and before committing leaves orphan files only: they are in
no add action, so readers never see them, and the retried batch writes and commits new ones.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

from ingest.delta._files import DataFile, FileSpec
from ingest.delta._table import (
    first_line,
    compare_schemas,
    delta_schema_of_arrow,
    is_local,
    merged_schema,
    normalize_uri,
    open_table,
    refresh_table,
    storage_opts,
    transaction_version,
    writable_arrow_schema,
)
from ingest.errors import RetriableError, StateError

MODES = ("append", "overwrite")
SCHEMA_MODES = (None, "merge", "overwrite")
MAX_COMMIT_ATTEMPTS = 6
MAINTENANCE_KEY = "lakeconnect.maintenance"
"""Commit metadata key of maintenance's commits (retention, compaction, file merging): they keep every
offset a pinned append computed, so such an append may land after them."""
MAX_TOLERATED_COMMITS = 100
PARTITION_TYPES = ("int", "string", "date", "timestamp", "bool")


@dataclass(frozen=True)
class WriteResult:
    """One committed write: the table version it created and the files it added."""

    table_uri: str
    version: int
    files: tuple[DataFile, ...]

    @property
    def num_records(self) -> int:
        return sum(f.num_records for f in self.files)

    @property
    def num_files(self) -> int:
        return len(self.files)

    @property
    def num_bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass(frozen=True)
class WritePlan:
    table_uri: str
    storage_options: dict[str, str] | None
    schema: pa.Schema
    partition_by: tuple[str, ...]
    mode: str
    schema_mode: str | None
    app_id: str | None
    version: int | None
    expected_version: int | None
    table: DeltaTable | None = field(default=None, compare=False, repr=False)
    """The table as the plan saw it: the commit brings it up to date instead of loading the log again."""

    def file_spec(self) -> FileSpec:
        return FileSpec(
            table_uri=self.table_uri,
            local=is_local(self.table_uri),
            schema=self.schema,
            partition_by=self.partition_by,
            version=self.version or 0,
            storage_options=self.storage_options,
        )


def partition_kind(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_boolean(t):
        return "bool"
    return None


def _check_args(mode: str, schema_mode: str | None, app_id: str | None, version: int | None) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if schema_mode not in SCHEMA_MODES:
        raise ValueError(f"schema_mode must be one of {SCHEMA_MODES}, not {schema_mode!r}")
    if schema_mode == "overwrite" and mode != "overwrite":
        raise ValueError("schema_mode='overwrite' needs mode='overwrite'")
    if (app_id is None) != (version is None):
        raise ValueError("app_id and version go together: give both (idempotent write) or neither")
    if version is not None and version < 0:
        raise ValueError(f"version must be >= 0, not {version}")


def _table_partitioning(dt: DeltaTable, uri: str, requested: tuple[str, ...], schema: pa.Schema) -> tuple[str, ...]:
    existing = tuple(dt.metadata().partition_columns)
    if requested and requested != existing:
        raise StateError(
            f"Delta table at {uri} is partitioned by {list(existing)}, not {list(requested)}; write with "
            "the table's partitioning (or partition_by=()), or write to a new table."
        )
    missing = [c for c in existing if c not in schema.names]
    if missing:
        raise StateError(f"data written to {uri} lacks its partition column(s) {missing}")
    return existing


def _schema_for_commit(dt: DeltaTable, uri: str, schema: pa.Schema, mode: str, schema_mode: str | None):
    """(schema to commit, columns to add first). StateError when the data cannot go in the table."""
    table_schema = dt.schema()
    incoming = delta_schema_of_arrow(schema)
    if mode == "overwrite" and schema_mode == "overwrite":
        return incoming, []
    new, conflicts = compare_schemas(table_schema, incoming)
    if conflicts:
        raise StateError(
            f"data does not fit Delta table at {uri}: " + "; ".join(conflicts) + ". Changing a column's "
            "type is not supported: cast the column to the table's type, or write to a new table."
        )
    if new and schema_mode is None:
        raise StateError(
            f"data has column(s) {[f.name for f in new]} that Delta table at {uri} lacks; write with "
            "schema_mode='merge' to add them."
        )
    if mode == "overwrite":
        return merged_schema(table_schema, new), []
    return table_schema, new


def plan_write(
    table_uri: str,
    schema: pa.Schema,
    *,
    partition_by: tuple[str, ...] | list[str] = (),
    mode: str = "append",
    schema_mode: str | None = "merge",
    app_id: str | None = None,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    expected_version: int | None = None,
    table: DeltaTable | None = None,
) -> WritePlan | None:
    """The plan of a write of data with `schema`, or None when (app_id, version) is already committed.
    `table`: the table at `table_uri` opened before, brought up to date instead of loaded again."""
    _check_args(mode, schema_mode, app_id, version)
    uri = normalize_uri(table_uri)
    schema = writable_arrow_schema(schema)
    partition_by = tuple(partition_by)
    dt = refresh_table(table, uri, storage_options)
    if dt is None:
        if expected_version is not None and expected_version >= 0:
            raise StateError(f"no Delta table at {uri}, but the write expects its version {expected_version}")
    else:
        if app_id is not None and _committed(transaction_version(dt, app_id), version):
            return None
        partition_by = _table_partitioning(dt, uri, partition_by, schema)
        _, new = _schema_for_commit(dt, uri, schema, mode, schema_mode)
        if new and expected_version is not None:
            raise StateError(f"cannot add columns {[f.name for f in new]} to {uri} in a write pinned to a version")
        if expected_version is not None and dt.version() != expected_version and not _only_maintenance(dt, expected_version):
            raise RetriableError(
                f"Delta table at {uri} moved from version {expected_version} to {dt.version()} before the "
                "write; plan the batch again."
            )
    if mode == "overwrite" and expected_version is None:
        # An overwrite replaces what it saw: a commit landing in between makes it retriable.
        expected_version = dt.version() if dt is not None else -1
    for col in partition_by:
        if col not in schema.names:
            raise ValueError(f"partition column {col!r} is not a column of the data ({schema.names})")
        if partition_kind(schema.field(col).type) is None:
            raise ValueError(
                f"partition column {col!r} has type {schema.field(col).type}; partition by one of "
                f"{PARTITION_TYPES} columns"
            )
    return WritePlan(
        uri, storage_opts(storage_options), schema, partition_by, mode, schema_mode, app_id, version, expected_version,
        dt,
    )


def _commit_properties(plan: WritePlan, commit_metadata: Mapping[str, Any] | None,
                       app_transactions: Sequence[tuple[str, int]] = ()) -> CommitProperties:
    txns = [Transaction(plan.app_id, plan.version)] if plan.app_id is not None else []
    txns += [Transaction(app_id, version) for app_id, version in app_transactions]
    return CommitProperties(
        custom_metadata=dict(commit_metadata) if commit_metadata else None,
        max_commit_retries=0,
        app_transactions=txns or None,
    )


def _only_maintenance(dt: DeltaTable, since: int) -> bool:
    """Whether every commit after version `since` is maintenance that changed no offset a pinned write
    computed: a file merge (OPTIMIZE, by any engine: it changes no data) or a commit of this project's
    maintenance (retention and compaction keep offsets, recording the log start and end they leave).
    When a commit cannot be read (its log file already cleaned up) the answer is no."""
    moved = dt.version() - since
    if moved <= 0 or moved > MAX_TOLERATED_COMMITS:
        return False
    try:
        entries = dt.history(moved)
    except (DeltaError, OSError, ValueError):
        return False
    if sorted(e.get("version", -1) for e in entries) != list(range(since + 1, dt.version() + 1)):
        return False
    return all(e.get("operation") == "OPTIMIZE" or MAINTENANCE_KEY in e for e in entries)


def _committed(txn_version: int | None, version: int | None) -> bool:
    return txn_version is not None and version is not None and txn_version >= version


def _already_committed(plan: WritePlan, dt: DeltaTable | None) -> bool:
    if plan.app_id is None or dt is None:
        return False
    return _committed(transaction_version(dt, plan.app_id), plan.version)


def commit_files(
    plan: WritePlan,
    files: list[DataFile],
    *,
    commit_metadata: Mapping[str, Any] | None = None,
    removes: Sequence[DataFile] = (),
    app_transactions: Sequence[tuple[str, int]] = (),
) -> WriteResult | None:
    """ONE commit adding `files`, with the plan's app transaction; None if a twin committed it first.

    `removes`: files of the snapshot at `plan.expected_version` that the same commit removes (a rewrite:
    MERGE). Only a write pinned to the version it read may remove files: a rewrite computed from one
    snapshot cannot be rebased onto another without reading it again.

    `app_transactions`: more `(app_id, version)` pairs the same commit records, beside the plan's own: facts
    about the table that must survive its files (a topic's log start and end offsets after a clean). They
    are recorded, not checked: the plan's app transaction alone decides whether the write is a retry.
    """
    if removes and plan.expected_version is None:
        raise ValueError("removing files needs expected_version: the snapshot the rewrite was computed from")
    now_ms = int(time.time() * 1000)
    adds: list[AddAction | RemoveAction] = [
        AddAction(f.path, f.size, f.partition_values, now_ms, True, f.stats) for f in files]
    adds += [RemoveAction(f.path, True, now_ms, f.size, dict(f.partition_values)) for f in removes]
    uri = plan.table_uri
    lost = 0  # races lost so far: back off before trying again
    seen = plan.table  # the first attempt brings the plan's table up to date; later ones load it afresh
    for _ in range(MAX_COMMIT_ATTEMPTS):
        if lost:
            time.sleep(min(0.05 * 2**lost, 1.0))
        dt, seen = refresh_table(seen, uri, plan.storage_options), None
        if dt is None and removes:
            raise RetriableError(f"Delta table at {uri} disappeared while a rewrite of its files was written")
        if dt is None:
            try:
                create_table_with_add_actions(
                    uri,
                    delta_schema_of_arrow(plan.schema),
                    adds,
                    mode="error",
                    partition_by=list(plan.partition_by),
                    storage_options=plan.storage_options,
                    commit_properties=_commit_properties(plan, commit_metadata, app_transactions),
                )
                return WriteResult(uri, 0, tuple(files))
            except DeltaError as e:
                if isinstance(e, CommitFailedError) or "already exists" in str(e):
                    if plan.expected_version is not None:
                        raise RetriableError(f"Delta table at {uri} was created by a concurrent writer") from e
                    lost += 1
                    continue  # a concurrent writer created the table: commit onto it
                raise StateError(f"cannot create Delta table at {uri}: {first_line(e)}") from e
        if _already_committed(plan, dt):
            return None
        if plan.expected_version is not None and dt.version() != plan.expected_version and (
                removes or plan.mode == "overwrite" or not _only_maintenance(dt, plan.expected_version)):
            raise RetriableError(
                f"Delta table at {uri} moved from version {plan.expected_version} to {dt.version()} "
                "during the write; the batch will be planned again."
            )
        partition_by = _table_partitioning(dt, uri, plan.partition_by, plan.schema)
        schema, new = _schema_for_commit(dt, uri, plan.schema, plan.mode, plan.schema_mode)
        if new:
            # Delta-rs ignores the schema of an append, so new columns are added in a commit of their
            # own first. Harmless alone: nullable columns that old files read as null.
            try:
                dt.alter.add_columns(new)
            except (CommitFailedError, DeltaError) as e:
                if isinstance(e, CommitFailedError) or "already exists" in str(e).lower():
                    lost += 1
                    continue
                raise StateError(f"cannot add columns {[f.name for f in new]} to {uri}: {first_line(e)}") from e
            continue
        try:
            dt.create_write_transaction(
                adds,
                plan.mode,
                schema,
                partition_by=list(partition_by),
                commit_properties=_commit_properties(plan, commit_metadata, app_transactions),
            )
            return WriteResult(uri, dt.version() + 1, tuple(files))
        except CommitFailedError as e:
            if _already_committed(plan, open_table(uri, plan.storage_options)):
                return None
            if plan.mode == "overwrite" or removes:
                raise RetriableError(
                    f"a concurrent commit to {uri} raced this {plan.mode} at version {dt.version() + 1}; "
                    "the batch must be tried again."
                ) from e
            lost += 1
        except DeltaError as e:
            raise StateError(f"cannot commit to Delta table at {uri}: {first_line(e)}") from e
    raise RetriableError(
        f"gave up committing to {uri} after {MAX_COMMIT_ATTEMPTS} attempts lost to concurrent writers; "
        "the batch will be tried again."
    )


def add_columns(
    table_uri: str,
    schema: pa.Schema,
    storage_options: Mapping[str, str] | None = None,
) -> list[str]:
    """Add the columns of `schema` that the table lacks (nullable), in a commit of their own, before a
    write pinned to a version (which cannot change the schema itself). StateError when a column's type
    differs from the table's. The names added; none when the table does not exist yet."""
    uri = normalize_uri(table_uri)
    schema = writable_arrow_schema(schema)
    for _ in range(MAX_COMMIT_ATTEMPTS):
        dt = open_table(uri, storage_options)
        if dt is None:
            return []
        _, new = _schema_for_commit(dt, uri, schema, "append", "merge")
        if not new:
            return []
        try:
            dt.alter.add_columns(new)
            return [f.name for f in new]
        except (CommitFailedError, DeltaError) as e:
            if isinstance(e, CommitFailedError) or "already exists" in str(e).lower():
                continue  # a concurrent commit: look again
            raise StateError(f"cannot add columns {[f.name for f in new]} to {uri}: {first_line(e)}") from e
    raise RetriableError(f"gave up adding columns to {uri} after {MAX_COMMIT_ATTEMPTS} attempts lost to "
                         "concurrent writers; the batch will be tried again.")
