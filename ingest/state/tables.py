"""Small state tables (offsets, configs, status, runs) read and written directly with delta-rs + Arrow.

Every table is append-only: a new row supersedes older rows with the same key ("latest wins"), and the
history stays for audit until maintenance compacts it. Appends go through the bridge's `append_arrow`
and may carry an app transaction `(app_id, version)`; an append whose version is already committed is
skipped, so a retried batch never writes its offsets twice.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError

from ingest.delta import append_arrow
from ingest.delta._table import is_local
from ingest.errors import StateError

TS = pa.timestamp("us", tz="UTC")


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def canonical_json(value: Any) -> str:
    """The one JSON text of a value: sorted keys, no spaces (so equal partitions compare equal)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


MERGE_FILES = 64
"""Once a table's files are kept as more than this many runs, they become one (their rows in the same order)."""


def _merged(ordered: list[tuple[tuple[str, ...], pa.Table]]) -> list[tuple[tuple[str, ...], pa.Table]]:
    """`ordered` (runs of files in the log's order), as one run when it has more than MERGE_FILES."""
    if len(ordered) <= MERGE_FILES:
        return ordered
    return [(tuple(p for paths, _ in ordered for p in paths),
             pa.concat_tables([rows for _, rows in ordered]).combine_chunks())]


class StateTable:
    """One Delta table of state rows with a fixed Arrow schema."""

    schema: pa.Schema

    def __init__(self, uri: str, storage_options: Mapping[str, str] | None = None):
        self.uri = uri
        self.storage_options = dict(storage_options or {})
        self._table: DeltaTable | None = None
        self._guard = threading.RLock()
        """Held while the cached table and files are read or replaced: the REST API reads one store from
        several threads."""
        self._files: dict[tuple[str, ...], pa.Table] = {}
        """The rows of the data files read so far, by their paths: files are never rewritten, only added and
        (by maintenance) removed, so a read only reads the files added since the last one. Runs of consecutive
        files are kept as one table (`MERGE_FILES`), since a long-running process would otherwise keep a small
        table, with its buffers, per commit of every poll."""

    def _load(self) -> DeltaTable | None:
        if self._table is not None:
            try:
                self._table.update_incremental()
                return self._table
            except (DeltaError, OSError):  # moved aside, or created again: load it afresh
                self._table = None
        try:
            self._table = DeltaTable(self.uri, storage_options=self.storage_options or None)
            return self._table
        except TableNotFoundError:
            return None
        except DeltaError as e:
            raise StateError(f"state table {self.uri} cannot be read ({e}); restore it from backup "
                             "or move it aside to start afresh (offsets would be lost)") from None
        except OSError as e:
            raise StateError(f"state table {self.uri} cannot be read: {e}") from None

    def append(self, rows: Iterable[Mapping[str, Any]], *, app_id: str | None = None, version: int | None = None,
               expected_version: int | None = None) -> bool:
        """Append rows in one commit; False (and nothing written) when `(app_id, version)` was already committed.
        `expected_version`: the table's version the rows were computed from (-1: no table yet); another
        commit since makes it a RetriableError."""
        data = pa.Table.from_pylist(list(rows), schema=self.schema)
        with self._guard:
            return append_arrow(self.uri, data, app_id=app_id, version=version, table=self._table,
                                storage_options=self.storage_options or None,
                                expected_version=expected_version) is not None

    def version(self) -> int:
        """The table's version as last read (-1: no table yet)."""
        with self._guard:
            table = self._load()
            return -1 if table is None else table.version()

    def read(self, filter: pa.compute.Expression | None = None, columns: list[str] | None = None) -> pa.Table:
        with self._guard:
            table = self._load()
            if table is None:
                return self.schema.empty_table() if columns is None else self.schema.empty_table().select(columns)
            try:
                rows = self._rows(table)
            except (DeltaError, OSError, pa.ArrowInvalid) as e:
                raise StateError(f"state table {self.uri} cannot be read ({e}); restore it from backup") from None
        if filter is not None:
            rows = rows.filter(filter)
        return rows if columns is None else rows.select(columns)

    def _rows(self, table: DeltaTable) -> pa.Table:
        """Every row of the table, in the order of its files. Without this cache every batch read every file
        the table had gathered since maintenance last compacted it: after 40 batches of one connector its
        runs (82 files) and offsets took 130 ms of the batch, 10 ms after one. A local table's files are
        listed from its log (0.05 ms; its Arrow dataset, which also builds each file's statistics, took 35)."""
        if is_local(self.uri):
            readers = {path: partial(pq.read_table, path) for path in table.file_uris()}
        else:
            dataset = table.to_pyarrow_dataset()
            readers = {f.path: partial(f.to_table, schema=dataset.schema) for f in dataset.get_fragments()}
        live = list(readers)
        position = {path: i for i, path in enumerate(live)}
        files: dict[tuple[str, ...], pa.Table] = {}
        covered: set[str] = set()
        for paths, rows in self._files.items():
            # a run of files still consecutive in the log: maintenance removed none and wrote none between
            at = [position.get(p) for p in paths]
            if None not in at and at == list(range(at[0], at[0] + len(at))):
                files[paths] = rows
                covered.update(paths)
        for path in live:
            if path not in covered:
                files[(path,)] = self._conform(readers[path]())
        ordered = sorted(files.items(), key=lambda item: position[item[0][0]])  # the log's order
        self._files = dict(_merged(ordered))
        return pa.concat_tables(self._files.values()) if self._files else self.schema.empty_table()

    def _conform(self, rows: pa.Table) -> pa.Table:
        """`rows` with this table's columns and types (a column the file lacks is null)."""
        return pa.table([rows.column(f.name).cast(f.type) if f.name in rows.column_names
                         else pa.nulls(rows.num_rows, f.type) for f in self.schema], schema=self.schema)

    def latest(self, key: list[str], filter: pa.compute.Expression | None = None) -> list[dict[str, Any]]:
        """The newest row per key (by `written_at`, then by position in the log), in Arrow: a key's whole
        history may be long (a batch a day for years)."""
        rows = self.read(filter)
        if rows.num_rows == 0:
            return []
        ordered = rows.append_column("_i", pa.array(range(rows.num_rows), pa.int64())).sort_by(
            [("written_at", "ascending"), ("_i", "ascending")])
        ordered = ordered.append_column("_pos", pa.array(range(ordered.num_rows), pa.int64()))
        newest = ordered.group_by(key, use_threads=False).aggregate([("_pos", "max")]).column("_pos_max")
        return ordered.take(pa.array(sorted(newest.to_pylist()), pa.int64())).drop_columns(["_i", "_pos"]).to_pylist()


def eq(column: str, value: Any) -> pc.Expression:
    return pc.field(column) == value
