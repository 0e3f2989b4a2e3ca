"""The "spark" engine: Spark's own Parquet writer makes the files, delta-rs commits them.

Measured here (2 cores), Spark's row -> Arrow conversion for a Python writer costs the JVM more CPU
than Spark's whole native Parquet write, so for local tables this engine is the fast path. Spark
writes into a fresh directory `<table>/w-<version>-<uuid>/` (hive-style partition directories under
it); the driver lists only that directory, reads each file's footer for Delta statistics (small
reads, never the data) and takes the partition values from the directories Spark named for them.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

import pyarrow.parquet as pq

from ingest.delta._files import NULL_PARTITION_DIR, ZSTD_LEVEL, DataFile, codec, footer_stats
from ingest.errors import StateError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ingest.delta._commit import WritePlan

TIMESTAMP_CONF = "spark.sql.parquet.outputTimestampType"
STAGE_PREFIX = "w-"  # the directory of one write: w-<version>-<uuid>
TIMESTAMP_MICROS = "TIMESTAMP_MICROS"  # Delta's timestamp; Spark's default INT96 is not


def write_native(df: DataFrame, plan: WritePlan, opaque: tuple[str, ...] = (),
                 single_partition: Mapping[str, str] | None = None, unfiltered: tuple[str, ...] = ()
                 ) -> list[DataFile]:
    """Spark writes the files, the driver describes them. With `single_partition` (every row's partition
    values, known to the caller), Spark writes them straight into that partition's directory: no
    partitioning, so no sort of the rows by partition."""
    spark = df.sparkSession
    # Set for good, never restored: one value whoever sets it, so runs on several threads of a shared session
    # may all set it at once (ingest.spark's sessions start with it; a session from elsewhere keeps it after).
    if spark.conf.get(TIMESTAMP_CONF) != TIMESTAMP_MICROS:
        spark.conf.set(TIMESTAMP_CONF, TIMESTAMP_MICROS)
    stage = f"{STAGE_PREFIX}{plan.version or 0:05d}-{uuid.uuid4().hex}"
    stage_dir = os.path.join(plan.table_uri, stage)
    target, partition_by = stage_dir, plan.partition_by
    if partition_by and single_partition is not None:
        missing = [c for c in partition_by if c not in single_partition]
        if missing:
            raise ValueError(f"single_partition lacks the partition column(s) {missing}")
        target = os.path.join(stage_dir, *(f"{c}={quote(str(single_partition[c]), safe='')}" for c in partition_by))
        df, partition_by = df.drop(*partition_by), ()
    writer = df.write.option("compression", codec(opaque))
    if opaque:
        writer = writer.option("parquet.compression.codec.zstd.level", str(ZSTD_LEVEL))
    for column in opaque:  # Parquet's per-column settings: no dictionary, no min/max statistics
        writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
    for column in opaque + unfiltered:
        writer = writer.option(f"parquet.column.statistics.enabled#{column}", "false")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    try:
        writer.parquet(target)
        return _describe_files(plan, stage_dir)
    except BaseException:
        shutil.rmtree(stage_dir, ignore_errors=True)  # referenced by nothing: safe to drop
        raise


def _describe_files(plan: WritePlan, stage_dir: str) -> list[DataFile]:
    file_schema = plan.file_spec().file_schema
    files = []
    for directory, _, names in os.walk(stage_dir):
        for name in names:
            if not name.endswith(".parquet") or name.startswith((".", "_")):
                continue
            full = os.path.join(directory, name)
            meta = pq.read_metadata(full)
            if meta.num_rows == 0:
                continue  # Spark writes an empty file for an empty input: nothing to add
            rel = os.path.relpath(full, plan.table_uri)
            values = _partition_values(os.path.relpath(directory, stage_dir), plan.partition_by, rel)
            files.append(DataFile(rel, os.path.getsize(full), values, meta.num_rows, footer_stats(meta, file_schema)))
    return files


def _partition_values(subdir: str, partition_by: tuple[str, ...], path: str) -> dict[str, str | None]:
    parts = [] if subdir in ("", ".") else subdir.split(os.sep)
    if len(parts) != len(partition_by):
        raise StateError(f"Spark wrote {path}, outside the expected partition directories {list(partition_by)}")
    values: dict[str, str | None] = {}
    for col, part in zip(partition_by, parts):
        name, sep, raw = part.partition("=")
        if not sep or unquote(name) != col:
            raise StateError(f"Spark wrote {path}: directory {part!r} is not a partition of {col!r}")
        value = unquote(raw)
        values[col] = None if value in (NULL_PARTITION_DIR, "") else value
    return values
