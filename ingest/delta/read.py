"""Delta table -> Spark DataFrame, from the snapshot's file list (never a directory listing: files
removed from the log stay on disk until vacuumed, and orphans of crashed writes never leave it)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
from deltalake.exceptions import DeltaError

from ingest.delta._files import DataFile
from ingest.delta._table import (
    first_line,
    is_local,
    normalize_uri,
    require_table,
    spark_schema_of_delta,
)
from ingest.errors import StateError

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from pyspark.sql import Column, DataFrame, SparkSession

# Up to this many partition-value combinations, one scan per combination with the values as
# literals; beyond it, one scan joined to a small (file -> values) table.
UNION_LIMIT = 64
_FILE_COL = "__lakeconnect_file"
_PLAIN_KEY = re.compile(r"[A-Za-z0-9._=-]+/[A-Za-z0-9._-]+")


def active_files(
    dt: DeltaTable, table_uri: str, partition_filters: Any = None
) -> list[tuple[str, dict[str, Any]]]:
    """(absolute path, typed partition values) of every file in the snapshot passing the filters."""
    try:
        actions = pa.table(dt.get_add_actions(flatten=False))
        selected = set(dt.file_uris(file_pruning_predicate=partition_filters)) if partition_filters else None
    except (DeltaError, OSError, ValueError) as e:
        raise StateError(f"cannot list the files of Delta table at {table_uri}: {first_line(e)}") from e
    paths = actions.column("path").to_pylist()
    parts = actions.column("partition").to_pylist() if "partition" in actions.column_names else [None] * len(paths)
    out = []
    for path, values in zip(paths, parts):
        # The log holds URL-encoded paths, relative to the root unless absolute.
        decoded = unquote(path)
        full = decoded if "://" in decoded or decoded.startswith("/") else f"{table_uri}/{decoded}"
        if selected is not None and full not in selected:
            continue
        out.append((full, values or {}))
    return out


def snapshot_files(dt: DeltaTable, table_uri: str) -> list[DataFile]:
    """Every file of the snapshot as the log holds it (path relative to the root unless absolute, not
    URL-encoded; partition values in the log's string form), with its statistics (`minValues`,
    `maxValues`, `numRecords` JSON; dates and timestamps as text): what a rewrite removes."""
    from ingest.delta._files import partition_value_string

    try:
        actions = pa.table(dt.get_add_actions(flatten=False)).to_pylist()
    except (DeltaError, OSError, ValueError) as e:
        raise StateError(f"cannot list the files of Delta table at {table_uri}: {first_line(e)}") from e
    out = []
    for a in actions:
        values = {k: partition_value_string(v) for k, v in (a.get("partition") or {}).items()}
        stats = json.dumps({"numRecords": a["num_records"], "minValues": a.get("min") or {},
                            "maxValues": a.get("max") or {}}, default=str)
        out.append(DataFile(unquote(a["path"]), a["size_bytes"], values, a["num_records"] or 0, stats))
    return out


def file_name(path: str) -> str:
    """The last part of a data file's path: what `read_table(file_column=...)` gives each row."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def read_table(
    spark: SparkSession,
    table_uri: str,
    *,
    version: int | None = None,
    columns: Sequence[str] | None = None,
    partition_filters: Any = None,
    storage_options: Mapping[str, str] | None = None,
    files: Sequence[str] | None = None,
    file_column: str | None = None,
) -> DataFrame:
    """The table (at `version`, default latest) as a DataFrame with the table's schema.

    `partition_filters` prunes files (delta-rs tuple filters such as `[("partition", "in", [0, 2])]`
    or a SQL predicate string); filters on data columns prune by file statistics only, so filter rows
    afterwards too. Local tables are scanned by Spark's Parquet reader; tables on object stores by
    Python tasks through delta-rs's object store (Spark has no Hadoop object-store jars here).

    `files`: read only these files of the snapshot (their log paths, as `snapshot_files` gives them).
    `file_column`: add a string column with each row's file name (`file_name` of its path; writers name
    files with a uuid, so a name is unique in a table): how a MERGE finds the files holding its keys.
    """
    from pyspark.sql import functions as F

    uri = normalize_uri(table_uri)
    dt = require_table(uri, storage_options, version)
    schema = spark_schema_of_delta(dt.schema())
    names = schema.fieldNames()
    if columns is not None:
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise StateError(f"Delta table at {uri} has no column(s) {unknown}; its columns are {names}")
    partition_cols = list(dt.metadata().partition_columns)
    only = files
    files = active_files(dt, uri, partition_filters)
    if only is not None:
        absolute = {p if "://" in p or p.startswith("/") else f"{uri}/{p}" for p in only}
        files = [f for f in files if f[0] in absolute]
    wanted = list(columns) if columns is not None else names
    if file_column is not None:
        if file_column in names:
            raise ValueError(f"file_column {file_column!r} is a column of Delta table at {uri}")
        from pyspark.sql.types import StringType, StructField

        schema = schema.__class__([*schema.fields, StructField(file_column, StringType(), True)])
        wanted = [*wanted, file_column]
    if not files:
        return spark.createDataFrame([], schema).select(*[F.col(f"`{c}`") for c in wanted])
    if not is_local(uri):
        return _remote_scan(spark, uri, schema, files, storage_options, file_column).select(
            *[F.col(f"`{c}`") for c in wanted])
    data_schema = schema.__class__([f for f in schema.fields
                                    if f.name not in partition_cols and f.name != file_column])
    reader = spark.read.schema(data_schema).option("mergeSchema", "false")
    # Spark gives each row's file as a URI (percent-encoded): its last part is the file's name as written,
    # for the plain names writers give (checked by the caller where it matters).
    name_col = [F.substring_index(F.col("_metadata.file_path"), "/", -1).alias(file_column)] if file_column else []
    if not partition_cols:
        scan = reader.parquet(*[p for p, _ in files])
        return scan.select(*[F.col(f"`{c}`") for c in data_schema.names], *name_col).select(
            *[F.col(f"`{c}`") for c in wanted])

    types = {f.name: f.dataType for f in schema.fields}
    data_cols = [F.col(f"`{f.name}`") for f in data_schema.fields]
    depths = _partition_directories(uri, files, partition_cols, types)
    if depths is not None:
        # One scan, each file's partition values taken from its path (a constant of the file's batches), where
        # a scan per value, unioned, made a plan that grew with the values. Spark's own partition discovery
        # refuses the writers' layout (`w-<writer>/partition=<p>/`: several roots).
        file_path = F.col("_metadata.file_path")

        def value(c: str) -> Column:
            directory = F.substring_index(F.substring_index(file_path, "/", -(depths[c] + 2)), "/", 1)
            return F.substring(directory, len(c) + 2, 1 << 16).cast(types[c]).alias(c)

        scan = reader.parquet(*[p for p, _ in files])
        return scan.select(*data_cols, *[value(c) for c in partition_cols], *name_col).select(
            *[F.col(f"`{c}`") for c in wanted])
    groups: dict[tuple, list[str]] = defaultdict(list)
    for path, values in files:
        groups[tuple(values.get(c) for c in partition_cols)].append(path)
    if len(groups) <= UNION_LIMIT or not _names_unique_and_plain(files):
        scans = [
            reader.parquet(*paths).select(
                *data_cols, *[F.lit(v).cast(types[c]).alias(c) for c, v in zip(partition_cols, key)], *name_col
            )
            for key, paths in groups.items()
        ]
        df = reduce(lambda a, b: a.unionByName(b), scans)
    else:
        df = _joined_scan(spark, reader, files, partition_cols, types, file_column)
    return df.select(*[F.col(f"`{c}`") for c in wanted])


def _partition_directories(uri: str, files: list[tuple[str, dict[str, Any]]], partition_cols: list[str],
                           types: Mapping[str, Any]) -> dict[str, int] | None:
    """Where every file's path names its partition values, the depth of each column's `col=value` directory
    above the file (0: the file's own directory), the same for every file; else None. Integer columns only
    (their text needs no escaping and reads back exactly), no nulls: the layout of the writers here
    (Spark's and delta-rs's), checked against the log's values for each file."""
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    if not all(isinstance(types[c], (ByteType, ShortType, IntegerType, LongType)) for c in partition_cols):
        return None
    prefix = f"{uri}/"
    depths: dict[str, int] | None = None
    for path, values in files:
        if not path.startswith(prefix) or any(values.get(c) is None for c in partition_cols):
            return None
        found: dict[str, tuple[int, str]] = {}
        for depth, directory in enumerate(reversed(path[len(prefix):].split("/")[:-1])):
            name, eq, text = directory.partition("=")
            if eq and name in partition_cols and name not in found:
                found[name] = (depth, text)
        if {c: t for c, (_, t) in found.items()} != {c: str(int(values[c])) for c in partition_cols}:
            return None
        these = {c: d for c, (d, _) in found.items()}
        if depths is None:
            depths = these
        elif these != depths:
            return None
    return depths


def _remote_scan(spark, uri, schema, files, storage_options, file_column=None) -> DataFrame:
    from ingest.delta._source import partition_strings, read_remote_files

    prefix = f"{uri}/"
    relative = []
    for path, values in files:
        if not path.startswith(prefix):
            raise StateError(f"Delta table at {uri} lists a file outside the table ({path}); cannot read it remotely")
        relative.append((path[len(prefix):], partition_strings(values)))
    return read_remote_files(spark, uri, schema, relative, storage_options, file_column)


def _join_key(path: str) -> str:
    """A file's parent directory and name: unique in a table (a uuid in the name or the directory)."""
    return "/".join(path.rsplit("/", 2)[-2:])


def _names_unique_and_plain(files: list[tuple[str, dict[str, Any]]]) -> bool:
    keys = [_join_key(p) for p, _ in files]
    return len(set(keys)) == len(keys) and all(_PLAIN_KEY.fullmatch(k) for k in keys)


def _joined_scan(spark, reader, files, partition_cols, types, file_column=None) -> DataFrame:
    """One scan of many files, partition values joined on by file from a broadcast table.

    The join key is the file's parent directory and name, which the caller checked are unique and
    need no escaping: Spark reports paths in its own URI form, so whole paths would not compare.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    scan = reader.parquet(*[p for p, _ in files]).withColumn(
        _FILE_COL, F.substring_index(F.col("_metadata.file_path"), "/", -2)
    )
    rows = [
        (_join_key(p), *[None if values.get(c) is None else str(values[c]) for c in partition_cols])
        for p, values in files
    ]
    lookup_schema = StructType(
        [StructField(_FILE_COL, StringType(), False)] + [StructField(c, StringType(), True) for c in partition_cols]
    )
    lookup = spark.createDataFrame(rows, lookup_schema).select(
        _FILE_COL, *[F.col(c).cast(types[c]).alias(c) for c in partition_cols]
    )
    if file_column:
        scan = scan.withColumn(file_column, F.substring_index(F.col(_FILE_COL), "/", -1))
    return scan.join(F.broadcast(lookup), _FILE_COL, "inner").drop(_FILE_COL)
