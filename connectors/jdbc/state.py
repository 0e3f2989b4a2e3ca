"""The JDBC source's own state for its two opt-in extras, in Delta tables beside the connector's offsets.

- `keys`: the primary keys of a table as each poll saw them (`lakeconnect.detect.deletes`), one snapshot
  per batch, tagged `__lc_snapshot` (the batch's plan time, also in its offset). A key in the previous
  snapshot and not in this one was deleted.
- `late`: the rows each poll read inside the look-back window (`lakeconnect.late.rows.window.ms`), tagged
  `__lc_batch` (the batch's plan time) and `__lc_until` (its high-water mark). A row staged by an earlier
  batch with the same key and timestamp was emitted already.

A batch stages what it read in ONE commit carrying `(app_id, version = the batch's plan time)`, then
builds its records from the staged copy, never from a second query. A batch run again after a crash finds
its commit there, writes nothing, and reads back exactly the rows the first try staged: the same records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ingest.delta.read import read_table
from ingest.delta.write import write_dataframe
from ingest.state.stores import state_uri
from ingest.state.tables import canonical_json

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ingest.api import TaskContext

SNAPSHOT = "__lc_snapshot"
BATCH = "__lc_batch"
UNTIL = "__lc_until"
TS = "__lc_ts"


class TableState:
    """One state table of one source partition of one connector."""

    def __init__(self, context: TaskContext, partition: Mapping[str, Any], kind: str):
        digest = hashlib.sha256(canonical_json(dict(partition)).encode()).hexdigest()[:16]
        self.uri = state_uri(context.lake_root, f"jdbc-source/{context.connector}/{kind}-{digest}")
        self.app_id = f"{context.connector}:{kind}:{digest}"
        self.context = context
        self.options = dict(context.storage_options) or None

    def stage(self, df: DataFrame, version: int) -> None:
        """Append `df` once for `version` (a no-op when that version, or a later one, is there already)."""
        write_dataframe(df, self.uri, app_id=self.app_id, version=version, storage_options=self.options)

    def read(self) -> DataFrame:
        return read_table(self.context.spark, self.uri, storage_options=self.options)

    def prune(self, predicate: str) -> None:
        """Forget rows no batch can need again (each staged file holds one batch: whole files go)."""
        from deltalake import DeltaTable

        table = DeltaTable(self.uri, storage_options=self.options)
        metrics = table.delete(predicate)
        if metrics.get("num_deleted_rows"):
            table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
