"""Reading Delta data files on an object store into Spark: a Python DataSource over a file list.

Spark here has no Hadoop object-store jars, so remote files are read by Python tasks through the
object store delta-rs uses (`DeltaStorageHandler`, same storage options), one file per input
partition, yielding Arrow batches in the table's schema: partition columns as constants from the
add actions, columns a file lacks (added later by schema evolution) as nulls.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

FORMAT = "lakeconnect_delta_files"
BATCH_ROWS = 100_000
# Credentials travel as a DataSource option: a key matching spark.redaction.regex keeps them out of
# plans, the UI and logs.
STORAGE_OPTION = "storage.secret.options"


@dataclass
class FilePartition(InputPartition):
    path: str  # relative to the table root, decoded
    values: dict[str, str | None]  # partition values in the Delta log's string form


class DeltaFilesDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def reader(self, schema: StructType) -> DataSourceReader:
        return DeltaFilesReader(self.options, schema)


class DeltaFilesReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: StructType):
        self.table_uri = options["table_uri"]
        self.storage_options = json.loads(options.get(STORAGE_OPTION) or "{}") or None
        self.files = json.loads(options["files"])
        self.file_column = options.get("file_column") or None
        self.schema = schema

    def partitions(self) -> list[FilePartition]:
        return [FilePartition(path, values) for path, values in self.files]

    def read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.parquet as pq
        from deltalake.fs import DeltaStorageHandler
        from pyarrow.fs import PyFileSystem
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.schema, timezone="UTC")
        fs = PyFileSystem(DeltaStorageHandler(self.table_uri, self.storage_options))
        with fs.open_input_file(partition.path) as f:
            pf = pq.ParquetFile(f)
            present = set(pf.schema_arrow.names)
            data_cols = [c for c in target.names
                         if c in present and c not in partition.values and c != self.file_column]
            name = partition.path.rsplit("/", 1)[-1]
            for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=data_cols):
                n = batch.num_rows
                arrays = []
                for field in target:
                    if field.name == self.file_column:
                        arrays.append(pa.array([name] * n, field.type))
                    elif field.name in partition.values:
                        value = partition.values[field.name]
                        arrays.append(pa.array([value] * n, pa.string()).cast(field.type))
                    elif field.name in present:
                        arrays.append(batch.column(field.name).cast(field.type))
                    else:
                        arrays.append(pa.nulls(n, field.type))
                yield pa.RecordBatch.from_arrays(arrays, schema=target)


def read_remote_files(
    spark: SparkSession,
    table_uri: str,
    schema: StructType,
    files: list[tuple[str, dict[str, str | None]]],
    storage_options: Mapping[str, str] | None,
    file_column: str | None = None,
) -> DataFrame:
    """`file_column`, a string column of `schema`: each row's file name."""
    spark.dataSource.register(DeltaFilesDataSource)
    return (
        spark.read.format(FORMAT)
        .schema(schema)
        .option("table_uri", table_uri)
        .option(STORAGE_OPTION, json.dumps(dict(storage_options or {})))
        .option("files", json.dumps(files))
        .option("file_column", file_column or "")
        .load()
    )


def partition_strings(values: Mapping[str, Any]) -> dict[str, str | None]:
    from ingest.delta._files import partition_value_string

    return {k: partition_value_string(v) for k, v in values.items()}
