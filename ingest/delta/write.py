"""Spark DataFrame -> Delta table: executors write Parquet files, the driver makes one commit."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ingest.delta._commit import WritePlan, WriteResult, commit_files, partition_kind, plan_write
from ingest.delta._files import META_DDL, DataFile, write_task
from ingest.delta._native import STAGE_PREFIX, write_native
from ingest.delta._table import arrow_schema_of_spark
from ingest.errors import StateError

ENGINES = ("auto", "arrow", "spark")
# Partition values the "spark" engine takes from Spark's directory names: types whose string form
# there is Delta's own. Timestamps (formatted in the session time zone) go through "arrow".
_NATIVE_PARTITION_TYPES = ("int", "string", "date", "bool")

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class FileOptions:
    """How a write's Parquet files are made.

    `engine` picks who writes them: "arrow" (pyarrow in Python tasks fed by `mapInArrow`; any table URI),
    "spark" (Spark's native writer, local tables; statistics from the file footers) or "auto" (spark for local
    tables unless partitioned by a timestamp, else arrow).

    `opaque`: columns whose values rarely repeat and are never filtered on (a topic's record values),
    written without Parquet dictionary encoding (trying one and falling back costs time and saves
    nothing) and without min/max statistics (comparing every value with the running bounds costs more
    than the rest of the write when values share a long prefix, as JSON envelopes do).
    `unfiltered`: columns never filtered on, written without statistics but with their dictionary (a
    topic's timestamp type: Parquet copies a string value for every comparison with its bounds).

    `single_partition`: the values of the partition columns when the caller knows every row has them
    (the "spark" engine then writes without partitioning, so without sorting the rows by partition).
    """

    engine: str = "auto"
    opaque: tuple[str, ...] = ()
    unfiltered: tuple[str, ...] = ()
    single_partition: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, not {self.engine!r}")


@dataclass(frozen=True)
class CommitOptions:
    """What a write's one commit holds and checks beyond its files and its app transaction.

    `expected_version` pins the commit right after that table version (-1: the table must not exist yet);
    RetriableError otherwise. `remove`: files of the table (from `snapshot_files` at `expected_version`,
    which it needs) that the same commit removes: a rewrite such as a MERGE replaces them with the new files.
    `app_transactions`: more `(app_id, version)` pairs the commit records (see `commit_files`). `metadata`:
    the commit's info. `check_files` sees the written files before the commit; if it raises, nothing is
    committed and the files of a local table are removed (a remote table's are left unreferenced, for vacuum).
    """

    expected_version: int | None = None
    remove: tuple[DataFile, ...] = ()
    app_transactions: tuple[tuple[str, int], ...] = ()
    metadata: Mapping[str, Any] | None = None
    check_files: Callable[[list[DataFile]], None] | None = None

    def __post_init__(self) -> None:
        if self.remove and self.expected_version is None:
            raise ValueError("remove needs expected_version: the table version whose files are rewritten")


def write_dataframe(
    df: DataFrame,
    table_uri: str,
    *,
    app_id: str | None,
    version: int | None,
    partition_by: Sequence[str] = (),
    mode: str = "append",
    schema_mode: str | None = "merge",
    storage_options: Mapping[str, str] | None = None,
    files: FileOptions = FileOptions(),
    commit: CommitOptions = CommitOptions(),
    table: DeltaTable | None = None,
) -> WriteResult | None:
    """Write `df` to the Delta table at `table_uri` in ONE commit carrying `(app_id, version)`.

    Returns None, writing nothing, when the table already holds that app transaction at `version` or
    later: a retried batch is a no-op. Creates the table on first write (partitioned by
    `partition_by`; an existing table keeps its own partitioning). `mode="overwrite"` replaces every
    file. `schema_mode="merge"` adds new columns; None refuses them; "overwrite" (with
    mode="overwrite") replaces the schema. A column whose type differs from the table's is a
    StateError. Only small per-file metadata rows reach the driver; the data never does. `files`: how the
    Parquet files are made; `commit`: what the commit holds and checks besides them.

    `table`: the table at `table_uri` as the caller loaded it (a topic's, for its batch), brought up to date
    instead of loaded again (see `refresh_table`).

    `app_id=None, version=None`: a write that is not a retried batch (a maintenance rewrite, pinned to
    `commit.expected_version`).
    """
    plan = plan_write(
        table_uri,
        arrow_schema_of_spark(df.schema),
        partition_by=tuple(partition_by),
        mode=mode,
        schema_mode=schema_mode,
        app_id=app_id,
        version=version,
        storage_options=storage_options,
        expected_version=commit.expected_version,
        table=table,
    )
    if plan is None:
        return None
    if _pick_engine(files.engine, plan) == "spark":
        written = write_native(df, plan, files.opaque, files.single_partition, files.unfiltered)
    else:
        spec = replace(plan.file_spec(), opaque=files.opaque, unfiltered=files.unfiltered)
        rows = df.mapInArrow(partial(write_task, spec=spec), META_DDL).collect()
        written = [
            DataFile(r["path"], r["size"], json.loads(r["partition_values"]), r["num_records"], r["stats"])
            for r in rows
        ]
    if commit.check_files is not None:
        try:
            commit.check_files(written)
        except BaseException:
            _remove(plan, written)
            raise
    return commit_files(plan, written, commit_metadata=commit.metadata, removes=list(commit.remove),
                        app_transactions=commit.app_transactions)


def _remove(plan: WritePlan, files: list[DataFile]) -> None:
    """Delete written, uncommitted files of a local table: the native engine's whole staging directory, or
    else the files themselves."""
    if not plan.file_spec().local:
        return
    root = plan.table_uri
    for f in files:
        top = f.path.split("/", 1)[0]
        if top.startswith(STAGE_PREFIX) and "/" in f.path:
            shutil.rmtree(os.path.join(root, top), ignore_errors=True)
        else:
            try:
                os.remove(os.path.join(root, f.path))
            except FileNotFoundError:
                pass


def _pick_engine(engine: str, plan: WritePlan) -> str:
    local = plan.file_spec().local
    native_ok = all(partition_kind(plan.schema.field(c).type) in _NATIVE_PARTITION_TYPES for c in plan.partition_by)
    if engine == "spark":
        if not local:
            raise StateError(f"engine='spark' writes local tables only; {plan.table_uri} is remote (use 'arrow')")
        if not native_ok:
            raise StateError(f"engine='spark' cannot write tables partitioned by {list(plan.partition_by)} (use 'arrow')")
        return "spark"
    if engine == "auto":
        return "spark" if local and native_ok else "arrow"
    return "arrow"
