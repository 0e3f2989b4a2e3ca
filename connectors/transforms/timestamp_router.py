"""TimestampRouter: rename the topic from the original topic and the record timestamp (Kafka's
`org.apache.kafka.connect.transforms.TimestampRouter`)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from connectors.transforms.timestamp_converter import compile_pattern, floor_div, format_millis
from ingest.api import Transform
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.records import OFFSET, PARTITION, TIMESTAMP, TOPIC, RecordBatch


class TimestampPattern:
    """A `java.text.SimpleDateFormat` pattern; Java's IllegalArgumentException message when it is not one.
    (Kafka builds the format on the first record; a bad pattern is reported here, before any record.)"""

    def __call__(self, key: str, value: Any) -> str | None:
        if value is None:
            return None
        try:
            compile_pattern(value)
        except ValueError as e:
            return str(e)
        return None

    def describe(self) -> str:
        return "a java.text.SimpleDateFormat pattern"


class TimestampRouter(Transform):
    """Update the record's topic field as a function of the original topic value and the record timestamp.

    This is mainly useful for sink connectors, since the topic field is often used to determine the
    equivalent entity name in the destination system (e.g. database table or search index name).

    As Kafka's TimestampRouter: `${topic}` in `topic.format` becomes the topic, then `${timestamp}` the
    record timestamp formatted with `timestamp.format` (SimpleDateFormat, UTC). A record without a
    timestamp fails ("Timestamp missing on record: ...").
    """

    aliases = ("org.apache.kafka.connect.transforms.TimestampRouter",)
    scoped = True

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (ConfigDef()
                .define("topic.format", Type.STRING, "${topic}-${timestamp}", importance=Importance.HIGH,
                        doc="Format string which can contain <code>${topic}</code> and <code>${timestamp}</code> as "
                            "placeholders for the topic and timestamp, respectively.")
                .define("timestamp.format", Type.STRING, "yyyyMMdd", TimestampPattern(), importance=Importance.HIGH,
                        doc="Format string for the timestamp that is compatible with "
                            "<code>java.text.SimpleDateFormat</code>."))

    def __init__(self, config):
        super().__init__(config)
        self.topic_format: str = config["topic.format"]
        self.tokens = compile_pattern(config["timestamp.format"])

    def apply(self, batch: RecordBatch) -> RecordBatch:
        micros = F.unix_micros(F.col(TIMESTAMP))
        formatted = format_millis(self.tokens, floor_div(micros, 1000))
        # Pattern.LITERAL and Matcher.quoteReplacement: plain text replacements, topic first.
        topic = F.replace(F.replace(F.lit(self.topic_format), F.lit("${topic}"), F.col(TOPIC)),
                          F.lit("${timestamp}"), formatted)
        batch = batch.fail(F.col(TIMESTAMP).isNull(), self._missing(batch))
        return batch.set({TOPIC: F.when(F.col(TIMESTAMP).isNull(), F.col(TOPIC)).otherwise(topic)})

    @staticmethod
    def _missing(batch: RecordBatch):
        """Kafka's message names the record (ConnectRecord.toString); its key, value and headers are left out."""
        record = F.concat(F.lit("ConnectRecord{topic='"), F.col(TOPIC), F.lit("', kafkaPartition="),
                          F.coalesce(F.col(PARTITION).cast("string"), F.lit("null")), F.lit(", timestamp=null}"))
        if OFFSET in batch.df.columns:
            record = F.concat(F.lit("SinkRecord{kafkaOffset="), F.col(OFFSET).cast("string"), F.lit("} "), record)
        return F.concat(F.lit("Timestamp missing on record: "), record)
