"""The Spark <-> Delta bridge (DESIGN §2) and Arrow access to small state tables.

- `write_dataframe`: executors write the Parquet files (Spark's native writer for local tables,
  pyarrow in Python tasks otherwise), the driver makes ONE delta-rs commit of all of them carrying an
  app transaction `(app_id, version)`; a retried batch is a no-op.
- `read_table`: a DataFrame over the snapshot's file list, partition values from the add actions
  (Spark's Parquet reader for local tables, a Python DataSource for object stores).
- `merge_dataframe`: upserts and deletes by key (MERGE), computed by Spark: the files holding a key of
  the changes are rewritten and the new rows added, in ONE commit that removes the files it replaces.
- `append_arrow` / `read_arrow`: the same commit rules for small Arrow tables, without Spark.
"""

from ingest.delta._commit import WriteResult, add_columns
from ingest.delta._files import DataFile
from ingest.delta._table import normalize_uri, open_table, require_table, spark_schema_of_delta, transaction_version
from ingest.delta.arrow import append_arrow, read_arrow
from ingest.delta.merge import MergeResult, merge_dataframe
from ingest.delta.read import active_files, file_name, read_table, snapshot_files
from ingest.delta.write import CommitOptions, FileOptions, write_dataframe

__all__ = [
    "CommitOptions",
    "DataFile",
    "FileOptions",
    "MergeResult",
    "WriteResult",
    "active_files",
    "add_columns",
    "append_arrow",
    "file_name",
    "merge_dataframe",
    "normalize_uri",
    "open_table",
    "read_arrow",
    "read_table",
    "require_table",
    "snapshot_files",
    "spark_schema_of_delta",
    "transaction_version",
    "write_dataframe",
]
