"""Records inside a job: Spark DataFrames with Kafka Connect's record fields, Connect schemas alongside.

A `RecordBatch` is one DataFrame whose rows share a key schema and a value schema (one table, one
topic). Columns (Connect form, before conversion on the source side, after it on the sink side):

    topic      string, not null
    partition  int, null = let the topic's partitioner choose (murmur2 of the key bytes, or round-robin)
    key        the Spark type of `key_schema` (null type when there is no key)
    value      the Spark type of `value_schema`; null = tombstone
    headers    array<struct<key: string, value: string>>, may be null
    timestamp  timestamp, null = the write time
    seq        long, the record's position in its source read; offsets follow it within a partition

Sink-side batches also carry `offset` (long) and `timestamp_type` (string) read from the topic.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ingest.records.schema import ConnectSchema

TOPIC = "topic"
PARTITION = "partition"
KEY = "key"
VALUE = "value"
HEADERS = "headers"
TIMESTAMP = "timestamp"
SEQ = "seq"
OFFSET = "offset"
TIMESTAMP_TYPE = "timestamp_type"

RECORD_COLUMNS = (TOPIC, PARTITION, KEY, VALUE, HEADERS, TIMESTAMP, SEQ)


@dataclass(frozen=True)
class RecordBatch:
    """Records that share one key schema and one value schema (None = schemaless or absent)."""

    df: DataFrame
    key_schema: ConnectSchema | None
    value_schema: ConnectSchema | None
    topics: tuple[str, ...] | None = None
    """The topics of the records when the source knows them without a query (None: unknown)."""

    def with_df(self, df: DataFrame) -> RecordBatch:
        return replace(self, df=df)
