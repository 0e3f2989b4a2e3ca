"""Small state tables through delta-rs and Arrow on the driver, no Spark: offsets, status, schemas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from ingest.delta._commit import WriteResult, commit_files, plan_write
from ingest.delta._files import write_files
from ingest.delta._table import first_line, normalize_uri, open_table, require_table
from ingest.errors import StateError


def append_arrow(
    table_uri: str,
    data: pa.Table | pa.RecordBatch,
    *,
    app_id: str | None = None,
    version: int | None = None,
    partition_by: Sequence[str] = (),
    mode: str = "append",
    schema_mode: str | None = "merge",
    storage_options: Mapping[str, str] | None = None,
    commit_metadata: Mapping[str, Any] | None = None,
    expected_version: int | None = None,
    table: DeltaTable | None = None,
) -> WriteResult | None:
    """Commit `data` to the table in one commit; same rules as `write_dataframe`.

    With `app_id`/`version`, a version already committed is a no-op returning None. `table`: the table
    opened before (a state table's), brought up to date instead of loaded again.
    """
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    plan = plan_write(
        table_uri,
        data.schema,
        partition_by=tuple(partition_by),
        mode=mode,
        schema_mode=schema_mode,
        app_id=app_id,
        version=version,
        storage_options=storage_options,
        expected_version=expected_version,
        table=table,
    )
    if plan is None:
        return None
    files = write_files(data.to_batches(), plan.file_spec())
    return commit_files(plan, files, commit_metadata=commit_metadata)


def read_arrow(
    table_uri: str,
    *,
    filter: ds.Expression | list | None = None,
    columns: Sequence[str] | None = None,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    missing_ok: bool = False,
) -> pa.Table | None:
    """The table's rows (those matching `filter`, a pyarrow expression or DNF tuples) as Arrow.

    A missing table is a StateError, or None with `missing_ok` (state not written yet).
    """
    uri = normalize_uri(table_uri)
    if missing_ok:
        dt = open_table(uri, storage_options, version)
        if dt is None:
            return None
    else:
        dt = require_table(uri, storage_options, version)
    try:
        return dt.to_pyarrow_table(columns=list(columns) if columns is not None else None, filters=filter)
    except (DeltaError, OSError) as e:
        raise StateError(f"cannot read Delta table at {uri}: {first_line(e)}") from e
