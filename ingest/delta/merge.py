"""MERGE by key into a Delta table: Spark computes the rewrite, delta-rs makes ONE commit (DESIGN §2).

`changes` holds at most one row per key: the row the table keeps for that key (an upsert) or, with its
`delete` column true, the key to remove. The driver never sees a row, only file names:

1. the snapshot's files that may hold a key of the changes (file statistics prune the others);
2. Spark finds those that do (their key columns semi-joined with the changes' keys; the distinct
   file names come back to the driver), unless they are small enough to rewrite them all;
3. Spark writes the new version of those files (their rows whose key is not in the changes) and the
   upserted rows as new Parquet files;
4. ONE commit, pinned to the snapshot read in 1, removes the files it rewrote, adds the new ones and
   carries the app transaction `(app_id, version)`.

A commit landing in between fails the pinned commit, and the MERGE is computed again on the new
snapshot (a bounded number of times): nothing is rebased blindly, so a concurrent writer's rows are
neither lost nor duplicated. A retried batch whose commit landed, or a twin's, is a no-op.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ingest.delta._commit import add_columns
from ingest.delta._files import DataFile
from ingest.delta._table import (
    arrow_schema_of_spark,
    normalize_uri,
    open_table,
    spark_schema_of_delta,
    transaction_version,
)
from ingest.delta.read import file_name, read_table, snapshot_files
from ingest.delta.write import CommitOptions, write_dataframe
from ingest.errors import RetriableError, StateError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

MAX_MERGE_ATTEMPTS = 4
REWRITE_WITHOUT_LOOKUP_BYTES = 16 << 20
"""Candidate files this small in all are rewritten without first looking for the ones holding a key."""
FILE_COLUMN = "__lakeconnect_merge_file"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._=-]+")
# Key types whose file statistics are exact enough to skip a file (strings: see _may_hold).
_PRUNABLE = ("ByteType", "ShortType", "IntegerType", "LongType", "StringType")


@dataclass(frozen=True)
class MergeResult:
    """One committed MERGE: the version it made, the files it added and the files it replaced."""

    table_uri: str
    version: int
    added: tuple[DataFile, ...]
    removed: tuple[DataFile, ...]

    @property
    def rows_written(self) -> int:
        return sum(f.num_records for f in self.added)

    @property
    def rows_replaced(self) -> int:
        return sum(f.num_records for f in self.removed)


def merge_dataframe(
    changes: DataFrame,
    table_uri: str,
    *,
    keys: Sequence[str],
    app_id: str,
    version: int,
    delete: str | None = None,
    schema_mode: str | None = "merge",
    storage_options: Mapping[str, str] | None = None,
    commit_metadata: Mapping[str, Any] | None = None,
    check_files: Callable[[list[DataFile]], None] | None = None,
) -> MergeResult | None:
    """Upsert the rows of `changes` (at most one per key; keys never null) into the table by `keys`,
    and remove the keys whose `delete` column is true, in ONE commit carrying `(app_id, version)`.

    None when nothing was written: the app transaction is already in the table (a retried batch), or
    `changes` is empty (or deletes only, and there is no table). A missing table is created from the
    upserts. `schema_mode="merge"` adds the columns the table lacks first (nullable, a commit of their
    own); None refuses them. A column whose type differs from the table's is a StateError. `changes` is
    evaluated once (persisted, or within the write when the table is small enough to rewrite whole): an
    error it raises surfaces before anything is committed. `check_files` as for `write_dataframe`.
    """
    from pyspark import StorageLevel

    uri = normalize_uri(table_uri)
    columns = [c for c in changes.columns if c != delete]
    missing = [k for k in keys if k not in columns]
    if not keys or missing:
        raise ValueError(f"keys {list(keys)} must be non-empty columns of the changes ({columns})")
    if delete is not None and delete not in changes.columns:
        raise ValueError(f"delete column {delete!r} is not a column of the changes")
    dt = open_table(uri, storage_options)
    if dt is not None and _committed(dt, app_id, version):
        return None

    def attempts(staged, bounds, upserted):
        for attempt in range(1, MAX_MERGE_ATTEMPTS + 1):
            try:
                return _merge_once(staged, uri, keys, columns, delete, bounds, upserted, app_id, version,
                                   schema_mode, storage_options, commit_metadata, check_files)
            except RetriableError:
                if attempt == MAX_MERGE_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    # A small table is rewritten whole, so nothing needs the changes before the write: they are computed
    # by the write's own job (its two uses of them read the one cached copy), not by a pass before it.
    small = dt is not None and sum(f.size for f in snapshot_files(dt, uri)) <= REWRITE_WITHOUT_LOOKUP_BYTES
    staged = changes.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        if small:
            return attempts(staged, {}, None)
        counts, bounds = _key_bounds(staged, keys, delete)  # the one pass that computes the changes
        if counts[0] == 0:
            return None
        return attempts(staged, bounds, counts[1])
    finally:
        staged.unpersist()


def _committed(dt, app_id: str, version: int) -> bool:
    done = transaction_version(dt, app_id)
    return done is not None and done >= version


def _key_bounds(staged: DataFrame, keys: Sequence[str], delete: str | None):
    """((changes, upserts), min and max of each prunable key column)."""
    from pyspark.sql import functions as F

    prunable = [k for k in keys if type(staged.schema[k].dataType).__name__ in _PRUNABLE]
    upsert = F.lit(True) if delete is None else ~F.coalesce(F.col(f"`{delete}`"), F.lit(False))
    aggs = [F.count(F.lit(1)).alias("n"), F.count_if(upsert).alias("u")]
    for i, k in enumerate(prunable):
        aggs += [F.min(F.col(f"`{k}`")).alias(f"lo{i}"), F.max(F.col(f"`{k}`")).alias(f"hi{i}")]
    row = staged.agg(*aggs).collect()[0]
    return (row["n"], row["u"]), {k: (row[f"lo{i}"], row[f"hi{i}"]) for i, k in enumerate(prunable)}


def _may_hold(f: DataFile, bounds: dict[str, tuple[Any, Any]]) -> bool:
    """False when the file's statistics prove it holds no key within `bounds`."""
    if not bounds or not f.stats:
        return True
    stats = json.loads(f.stats)
    lows, highs = stats.get("minValues") or {}, stats.get("maxValues") or {}
    for k, (lo, hi) in bounds.items():
        fmin, fmax = lows.get(k), highs.get(k)
        # A string minimum may be cut to a prefix (still a lower bound); a maximum may be cut too, and a
        # cut maximum is no upper bound: trust only those shorter than the 32 characters writers keep.
        if isinstance(fmax, str) and len(fmax) >= 32:
            fmax = None
        try:
            if fmin is not None and fmin > hi or fmax is not None and fmax < lo:
                return False
        except TypeError:  # statistics of another type than the column's: no pruning
            return True
    return True


def _conformed(df: DataFrame, columns: Sequence[str], table_schema, uri: str) -> DataFrame:
    """The rows in the table's column order and types; columns they lack are null."""
    from pyspark.sql import functions as F

    present = set(columns)
    extra = [c for c in columns if c not in table_schema.fieldNames()]
    if extra:
        raise StateError(f"columns {extra} are not in Delta table at {uri}; merge with schema_mode='merge' to add them")
    return df.select(*[
        (F.col(f"`{f.name}`").cast(f.dataType) if f.name in present else F.lit(None).cast(f.dataType)).alias(f.name)
        for f in table_schema.fields
    ])


def _merge_once(staged, uri, keys, columns, delete, bounds, upserted, app_id, version, schema_mode,
                storage_options, commit_metadata, check_files) -> MergeResult | None:
    from pyspark.sql import functions as F

    spark = staged.sparkSession
    upserts = staged if delete is None else staged.filter(~F.coalesce(F.col(f"`{delete}`"), F.lit(False)))
    upserts = upserts.select(*[F.col(f"`{c}`") for c in columns])
    dt = open_table(uri, storage_options)
    if dt is None and upserted == 0:  # deletes only: nothing to delete them from, no columns to create
        return None
    if dt is None:  # the first batch creates the table: nothing to replace
        result = write_dataframe(upserts, uri, app_id=app_id, version=version, schema_mode=schema_mode,
                                 storage_options=storage_options,
                                 commit=CommitOptions(expected_version=-1, metadata=commit_metadata,
                                                      check_files=check_files))
        return None if result is None else MergeResult(uri, result.version, result.files, ())
    if _committed(dt, app_id, version):
        return None
    if schema_mode == "merge" and add_columns(uri, arrow_schema_of_spark(upserts.schema), storage_options):
        dt = open_table(uri, storage_options)
    read_version = dt.version()
    table_schema = spark_schema_of_delta(dt.schema())
    rows = _conformed(upserts, columns, table_schema, uri)

    candidates = [f for f in snapshot_files(dt, uri) if _may_hold(f, bounds)]
    touched: list[DataFile] = []
    if candidates and sum(f.size for f in candidates) <= REWRITE_WITHOUT_LOOKUP_BYTES:
        touched = candidates  # rewriting them costs less than a job finding which hold a key
    elif candidates:
        by_name = _by_name(candidates, uri)
        changed_keys = staged.select(*[F.col(f"`{k}`") for k in keys])
        holders = read_table(spark, uri, version=read_version, columns=list(keys), storage_options=storage_options,
                             files=[f.path for f in candidates], file_column=FILE_COLUMN)
        hits = holders.join(changed_keys, list(keys), "left_semi").select(FILE_COLUMN).distinct().collect()
        touched = [by_name[r[0]] for r in hits]
    if touched:
        kept = read_table(spark, uri, version=read_version, storage_options=storage_options,
                          files=[f.path for f in touched])
        kept = kept.join(staged.select(*[F.col(f"`{k}`") for k in keys]), list(keys), "left_anti")
        rows = kept.unionByName(rows)
    result = write_dataframe(rows, uri, app_id=app_id, version=version, schema_mode=None,
                             storage_options=storage_options,
                             commit=CommitOptions(expected_version=read_version, remove=tuple(touched),
                                                  metadata=commit_metadata, check_files=check_files))
    return None if result is None else MergeResult(uri, result.version, result.files, tuple(touched))


def _by_name(files: list[DataFile], uri: str) -> dict[str, DataFile]:
    """Files by name: how rows name their file. Writers name files with a uuid, so names are unique."""
    out: dict[str, DataFile] = {}
    for f in files:
        name = file_name(f.path)
        if name in out or not _PLAIN_NAME.fullmatch(name):
            raise StateError(
                f"Delta table at {uri} has data files whose names are repeated or need escaping ({name!r}); "
                "a MERGE identifies files by name. Rewrite the table (e.g. copy it with an append) first."
            )
        out[name] = f
    return out
