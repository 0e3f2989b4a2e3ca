"""A topic's record layout, shared by every module that reads or writes topics: Kafka's record fields as
columns (`TOPIC_SCHEMA`), the names of the table's metadata and app transactions, and Kafka's rules for a
topic's name.
"""

from __future__ import annotations

import re

import pyarrow as pa

from ingest.errors import ConfigError

TOPICS_DIR = "topics"
META_KEY = "lakeconnect.topic"
LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
TIMESTAMP_TYPE_CONFIG = "message.timestamp.type"
# App transactions a clean records (see ingest/topics/cleanup.py), read back by `_offsets`: offsets are
# immutable, so a partition's log start and end offsets must outlive the files holding those records.
LOG_CLEANED_TXN = "lakeconnect.log-cleaned"
LOG_START_TXN = "lakeconnect.log-start."
LOG_END_TXN = "lakeconnect.log-end."

PARTITION, OFFSET, TIMESTAMP, TIMESTAMP_TYPE = "partition", "offset", "timestamp", "timestamp_type"
KEY, VALUE, HEADERS, KEY_SCHEMA_ID, VALUE_SCHEMA_ID = "key", "value", "headers", "key_schema_id", "value_schema_id"
SEQ = "seq"
TOPIC_COLUMNS = (PARTITION, OFFSET, TIMESTAMP, TIMESTAMP_TYPE, KEY, VALUE, HEADERS, KEY_SCHEMA_ID, VALUE_SCHEMA_ID)
HEADERS_DDL = "array<struct<key:string,value:binary>>"
HEADER_TYPE = pa.struct([("key", pa.string()), ("value", pa.binary())])
TOPIC_SCHEMA = pa.schema(
    [
        (PARTITION, pa.int32()),
        (OFFSET, pa.int64()),
        (TIMESTAMP, pa.timestamp("us", tz="UTC")),
        (TIMESTAMP_TYPE, pa.string()),
        (KEY, pa.binary()),
        (VALUE, pa.binary()),
        (HEADERS, pa.list_(pa.field("element", HEADER_TYPE))),
        (KEY_SCHEMA_ID, pa.int32()),
        (VALUE_SCHEMA_ID, pa.int32()),
    ]
)


def validate_topic_name(name: str) -> None:
    """Kafka's rules: 1..249 characters of [a-zA-Z0-9._-], and not '.' or '..'."""
    problem = None
    if not name:
        problem = "is empty"
    elif name in (".", ".."):
        problem = "cannot be '.' or '..'"
    elif len(name) > MAX_NAME_LENGTH:
        problem = f"is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}"
    elif not LEGAL_NAME.fullmatch(name):
        problem = "may only contain ASCII letters, digits, '.', '_' and '-'"
    if problem:
        raise ConfigError(f"topic name {name!r} {problem}")
