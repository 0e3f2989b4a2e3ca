"""The S3 sink connector's configuration: Confluent's keys (kafka-connect-s3 10.5), verbatim, with its
defaults. The object store's keys live in connectors/storage/store_config.py; each partitioner and format
declares its own (`config_def`), merged here through the registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ingest.config.configdef import ConfigDef, Importance, Range, Type, ValidString
from ingest.config.connector import ERRORS_TOLERANCE
from ingest.config.settings import Settings, setting
from ingest.errors import Problem
from ingest.registry import PluginKind, default_registry

FORMAT_CLASS = "format.class"
FLUSH_SIZE = "flush.size"
ROTATE_INTERVAL_MS = "rotate.interval.ms"
ROTATE_SCHEDULE_INTERVAL_MS = "rotate.schedule.interval.ms"
TOPICS_DIR = "topics.dir"
DIRECTORY_DELIM = "directory.delim"
FILE_DELIM = "file.delim"
ZERO_PAD_WIDTH = "filename.offset.zero.pad.width"
PARTITIONER_CLASS = "partitioner.class"
BEHAVIOR_ON_NULL_VALUES = "behavior.on.null.values"
STORE_KAFKA_KEYS = "store.kafka.keys"
STORE_KAFKA_HEADERS = "store.kafka.headers"
KEYS_FORMAT_CLASS = "keys.format.class"
HEADERS_FORMAT_CLASS = "headers.format.class"
SCHEMA_COMPATIBILITY = "schema.compatibility"
APPEND_LATE_DATA = "append.late.data"

DEFAULT_PARTITIONER = "io.confluent.connect.storage.partitioner.DefaultPartitioner"
AVRO_FORMAT = "io.confluent.connect.s3.format.avro.AvroFormat"
NULL_BEHAVIORS = ("ignore", "fail")


def s3_sink_config_def() -> ConfigDef:
    """Every key of the connector: its own, the object store's, and those every installed partitioner and
    format declares (as Confluent's S3SinkConnectorConfig holds the partitioners' and formats' keys)."""
    from connectors.storage.store_config import store_config_def

    definition = (
        ConfigDef()
        .define(FORMAT_CLASS, Type.CLASS, importance=Importance.HIGH, group="Connector",
                doc="The format class to use when writing data to the store: JsonFormat, AvroFormat, "
                    "ParquetFormat or ByteArrayFormat (Confluent's class names or the short ones).")
        .define(FLUSH_SIZE, Type.INT, validator=Range.at_least(1), importance=Importance.HIGH, group="Connector",
                doc="Number of records written to store before invoking file commits.")
        .define(ROTATE_INTERVAL_MS, Type.LONG, -1, importance=Importance.HIGH, group="Connector",
                doc="The time interval in milliseconds to invoke file commits, measured on the records' "
                    "timestamps (time-based partitioners only): a file is committed when a record's timestamp "
                    "is this much later than the first record's of the file, or falls into another encoded "
                    "partition.")
        .define(ROTATE_SCHEDULE_INTERVAL_MS, Type.LONG, -1, importance=Importance.MEDIUM, group="Connector",
                doc="The time interval in milliseconds to periodically invoke file commits, on the wall clock "
                    "(aligned to the day in `timezone`). Not exactly-once: which records an object holds depends "
                    "on when the batches run.")
        .define(TOPICS_DIR, Type.STRING, "topics", importance=Importance.HIGH, group="Storage",
                doc="Top level directory to store the data ingested from Kafka.")
        .define(DIRECTORY_DELIM, Type.STRING, "/", importance=Importance.MEDIUM, group="Storage",
                doc="Directory delimiter pattern.")
        .define(FILE_DELIM, Type.STRING, "+", importance=Importance.MEDIUM, group="Storage",
                doc="File delimiter pattern.")
        .define(ZERO_PAD_WIDTH, Type.INT, 10, Range.at_least(0), Importance.LOW, group="Storage",
                doc="Width to zero-pad offsets in store's filenames if offsets are too short in order to "
                    "provide fixed-width filenames that can be ordered by simple lexicographic sorting.")
        .define(PARTITIONER_CLASS, Type.CLASS, DEFAULT_PARTITIONER, importance=Importance.HIGH, group="Partitioner",
                doc="The partitioner to use when writing data to the store: DefaultPartitioner, "
                    "FieldPartitioner, TimeBasedPartitioner, DailyPartitioner, HourlyPartitioner or "
                    "FieldAndTimeBasedPartitioner.")
        .define(BEHAVIOR_ON_NULL_VALUES, Type.STRING, "fail", ValidString.of(*NULL_BEHAVIORS, case_insensitive=True),
                Importance.LOW, group="Connector",
                doc="How to handle records with a null value (i.e. Kafka tombstone records): 'ignore' skips "
                    "them, 'fail' stops the task.")
        .define(STORE_KAFKA_KEYS, Type.BOOLEAN, False, importance=Importance.LOW, group="Connector",
                doc="Enable or disable writing keys to storage, in objects of their own (`.keys`).")
        .define(STORE_KAFKA_HEADERS, Type.BOOLEAN, False, importance=Importance.LOW, group="Connector",
                doc="Enable or disable writing headers to storage, in objects of their own (`.headers`).")
        .define(KEYS_FORMAT_CLASS, Type.CLASS, AVRO_FORMAT, importance=Importance.LOW, group="Connector",
                doc="The format class to use when writing keys to the store.")
        .define(HEADERS_FORMAT_CLASS, Type.CLASS, AVRO_FORMAT, importance=Importance.LOW, group="Connector",
                doc="The format class to use when writing headers to the store.")
        .define(SCHEMA_COMPATIBILITY, Type.STRING, "NONE", ValidString.of("NONE", case_insensitive=True),
                Importance.HIGH, group="Schema",
                doc="The schema compatibility rule to use when the connector is observing schema changes. Only "
                    "NONE: a record whose value schema differs from its object's commits the open objects.")
        .define(APPEND_LATE_DATA, Type.BOOLEAN, False, importance=Importance.LOW, group="Partitioner",
                doc="With rotate.interval.ms, write a record whose timestamp is earlier than its object's first "
                    "record's into the open object instead of rotating.")
        .merge(store_config_def())
    )
    registry = default_registry()
    for kind in (PluginKind.PARTITIONER, PluginKind.FORMAT):
        for info in registry.plugins(kind):
            definition = definition.merge(info.cls.config_def())
    return definition


@dataclass(frozen=True)
class S3SinkSettings(Settings):
    """The keys the S3 sink and its compaction read, typed (the store's, partitioners' and formats' keys are
    read by the store, partitioner and format the sink builds)."""

    partitioner_class: str = setting(PARTITIONER_CLASS)
    format_class: str = setting(FORMAT_CLASS)
    keys_format_class: str = setting(KEYS_FORMAT_CLASS)
    headers_format_class: str = setting(HEADERS_FORMAT_CLASS)
    store_keys: bool = setting(STORE_KAFKA_KEYS)
    store_headers: bool = setting(STORE_KAFKA_HEADERS)
    null_values: str = setting(BEHAVIOR_ON_NULL_VALUES, str.lower)
    flush_size: int = setting(FLUSH_SIZE)
    rotate_interval_ms: int = setting(ROTATE_INTERVAL_MS)
    rotate_schedule_interval_ms: int = setting(ROTATE_SCHEDULE_INTERVAL_MS)
    topics_dir: str = setting(TOPICS_DIR)
    directory_delim: str = setting(DIRECTORY_DELIM)
    file_delim: str = setting(FILE_DELIM)
    zero_pad_width: int = setting(ZERO_PAD_WIDTH)
    append_late_data: bool = setting(APPEND_LATE_DATA)
    tolerate: bool = setting(ERRORS_TOLERANCE, lambda v: (v or "none") == "all")


def check(values: dict[str, Any]) -> list[Problem]:
    """What the connector refuses beyond single keys."""
    from connectors.storage.store_config import check_config

    problems: list[Problem] = list(check_config(values))
    if values.get(ROTATE_INTERVAL_MS, -1) == 0:
        problems.append(Problem(ROTATE_INTERVAL_MS, "must be positive, or -1 to turn it off"))
    if values.get(ROTATE_SCHEDULE_INTERVAL_MS, -1) == 0:
        problems.append(Problem(ROTATE_SCHEDULE_INTERVAL_MS, "must be positive, or -1 to turn it off"))
    return problems
