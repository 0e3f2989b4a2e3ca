"""Topics as Delta tables (DESIGN §3): Kafka's partitioning and offsets, and a schema registry."""

from ingest.topics.murmur2 import murmur2, murmur2_array, partition_column, partition_for_key, partitions_for_keys, to_positive
from ingest.topics.cleanup import CleanResult
from ingest.topics.schemas import RegisteredSchema, SchemaRegistry
from ingest.topics.layout import TOPIC_COLUMNS, TOPIC_SCHEMA, validate_topic_name
from ingest.topics.table import AppendResult, PartitionAppend, TopicDescription, TopicTable, list_topics

__all__ = [
    "TOPIC_COLUMNS",
    "TOPIC_SCHEMA",
    "AppendResult",
    "CleanResult",
    "PartitionAppend",
    "RegisteredSchema",
    "SchemaRegistry",
    "TopicDescription",
    "TopicTable",
    "list_topics",
    "murmur2",
    "murmur2_array",
    "partition_column",
    "partition_for_key",
    "partitions_for_keys",
    "to_positive",
    "validate_topic_name",
]
