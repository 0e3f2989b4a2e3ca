"""Opening Delta tables with errors from the project's family, and schema conversions.

Schemas travel in three forms: Spark's StructType (the DataFrame), Arrow (what executors write) and
Delta's (the log). Delta's JSON schema *is* Spark's StructType JSON, so Delta -> Spark is lossless.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import pyarrow as pa
from deltalake import DeltaTable
from deltalake import Field as DeltaField
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import DeltaError, DeltaProtocolError, TableNotFoundError

from ingest.errors import StateError

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


def normalize_uri(table_uri: str | os.PathLike[str]) -> str:
    """Local paths become absolute paths (no scheme); URIs with a scheme are kept as given."""
    uri = os.fspath(table_uri)
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return os.path.abspath(parsed.path).rstrip("/") or "/"
    if parsed.scheme and len(parsed.scheme) > 1:  # "C:" style drive letters are local
        return uri.rstrip("/")
    return os.path.abspath(uri).rstrip("/") or "/"


def is_local(table_uri: str) -> bool:
    scheme = urlparse(table_uri).scheme
    return not scheme or scheme == "file" or len(scheme) == 1


def storage_opts(storage_options: Mapping[str, str] | None) -> dict[str, str] | None:
    return {str(k): str(v) for k, v in storage_options.items()} if storage_options else None


def first_line(e: BaseException) -> str:
    """delta-rs messages may carry a Rust backtrace after the first line."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def open_table(
    table_uri: str,
    storage_options: Mapping[str, str] | None = None,
    version: int | None = None,
) -> DeltaTable | None:
    """The table at `table_uri`, or None when there is none. A log that cannot be read is a StateError."""
    try:
        return DeltaTable(table_uri, version=version, storage_options=storage_opts(storage_options))
    except TableNotFoundError:
        return None
    except (DeltaError, DeltaProtocolError, OSError, ValueError) as e:
        if version is not None:
            latest = open_table(table_uri, storage_options)
            if latest is not None:
                raise StateError(
                    f"Delta table at {table_uri} has no readable version {version} (latest is "
                    f"{latest.version()}): {first_line(e)}. Read a version listed by its history."
                ) from e
        raise StateError(
            f"Delta table at {table_uri} cannot be loaded: {first_line(e)}. Its _delta_log may be "
            "corrupt or unreadable; check the files under _delta_log (and the storage credentials "
            "of remote lakes)."
        ) from e


def refresh_table(dt: DeltaTable | None, uri: str, storage_options: Mapping[str, str] | None) -> DeltaTable | None:
    """`dt` brought up to date (it reads only the commits since its version), or the table loaded afresh.
    A load reads the log from its last checkpoint, up to 100 commits: 3 to 10 ms a table, several tables a
    batch. `dt` is reused only for a local table whose log still holds the commit `dt` reached: a table
    moved aside (and perhaps created again) in the meantime is loaded afresh, so no commit lands on a log
    it does not continue. Remote tables are always loaded afresh."""
    if dt is not None and is_local(uri):
        try:
            dt.update_incremental()
            if os.path.exists(os.path.join(uri, "_delta_log", f"{dt.version():020d}.json")):
                return dt
        except (DeltaError, DeltaProtocolError, OSError, ValueError):
            pass
    return open_table(uri, storage_options)


def require_table(
    table_uri: str,
    storage_options: Mapping[str, str] | None = None,
    version: int | None = None,
    what: str = "Delta table",
) -> DeltaTable:
    dt = open_table(table_uri, storage_options, version)
    if dt is None:
        raise StateError(
            f"no {what} at {table_uri}: nothing has been written there yet. Check the lake root and "
            "table name, or write to the table first (writes create it)."
        )
    return dt


def transaction_version(dt: DeltaTable, app_id: str) -> int | None:
    try:
        return dt.transaction_version(app_id)
    except (DeltaError, OSError) as e:
        raise StateError(f"cannot read app transaction {app_id!r} of {dt.table_uri}: {first_line(e)}") from e


# --- schemas -------------------------------------------------------------------------------------


def arrow_schema_of_spark(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark hands to `mapInArrow` for `schema` (UTC timestamps, small var types)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def spark_schema_of_delta(schema: DeltaSchema) -> StructType:
    from pyspark.sql.types import StructType

    return StructType.fromJson(json.loads(schema.to_json()))


def writable_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` as written to a table: top-level columns nullable (so later writers may leave them
    out or null), nanosecond timestamps as microseconds (Delta stores microseconds)."""
    fields = []
    for f in schema:
        t = f.type
        if pa.types.is_timestamp(t) and t.unit != "us":
            t = pa.timestamp("us", tz=t.tz)
        elif pa.types.is_large_string(t) or pa.types.is_string_view(t):
            t = pa.string()
        elif pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
            t = pa.binary()
        fields.append(pa.field(f.name, t, nullable=True, metadata=f.metadata))
    return pa.schema(fields, metadata=schema.metadata)


def delta_schema_of_arrow(schema: pa.Schema) -> DeltaSchema:
    try:
        return DeltaSchema.from_arrow(schema)
    except Exception as e:  # delta-rs raises a bare Exception for types Delta has no name for
        raise StateError(f"columns {schema.names} cannot be stored in a Delta table: {first_line(e)}") from e


def _type_shape(t: Any) -> Any:
    """A Delta type (JSON form) without nullability or metadata, for comparing column types."""
    if isinstance(t, dict):
        return {k: _type_shape(v) for k, v in t.items() if k not in ("nullable", "containsNull", "valueContainsNull", "metadata")}
    if isinstance(t, list):
        return [_type_shape(v) for v in t]
    return t


def field_type_shape(field: DeltaField) -> Any:
    return _type_shape(json.loads(field.to_json())["type"])


def compare_schemas(table: DeltaSchema, incoming: DeltaSchema) -> tuple[list[DeltaField], list[str]]:
    """(columns of `incoming` the table lacks, conflicts between the two) by column name."""
    existing = {f.name: f for f in table.fields}
    lowered = {name.lower(): name for name in existing}
    new: list[DeltaField] = []
    conflicts: list[str] = []
    for f in incoming.fields:
        old = existing.get(f.name)
        if old is None:
            if f.name.lower() in lowered:
                conflicts.append(f"column {f.name!r} differs only in case from the table's {lowered[f.name.lower()]!r}")
            else:
                new.append(DeltaField(f.name, f.type, nullable=True, metadata=f.metadata))
            continue
        if field_type_shape(old) != field_type_shape(f):
            conflicts.append(
                f"column {f.name!r} is {json.dumps(field_type_shape(old))} in the table but "
                f"{json.dumps(field_type_shape(f))} in the data"
            )
    return new, conflicts


def merged_schema(table: DeltaSchema, new_fields: list[DeltaField]) -> DeltaSchema:
    return DeltaSchema(list(table.fields) + list(new_fields))
