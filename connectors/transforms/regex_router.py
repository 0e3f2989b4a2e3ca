"""RegexRouter: rename the topic when it matches a regular expression (Java regex, as Kafka's)."""

from __future__ import annotations

from pyspark.sql import functions as F

from ingest.api import Transform
from ingest.config.configdef import ConfigDef, Importance, Type, ValidRegex
from ingest.records import TOPIC, RecordBatch


class RegexRouter(Transform):
    """Update the record topic using the configured regular expression and replacement string."""

    aliases = ("org.apache.kafka.connect.transforms.RegexRouter",)
    scoped = True

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (ConfigDef()
                .define("regex", Type.STRING, validator=ValidRegex(), importance=Importance.HIGH,
                        doc="Regular expression to use for matching.")
                .define("replacement", Type.STRING, importance=Importance.HIGH,
                        doc="Replacement string ($1 refers to the first group)."))

    def apply(self, batch: RecordBatch) -> RecordBatch:
        # Kafka matches the whole topic (Matcher.matches), then replaces; Spark runs the same Java regex.
        pattern = f"^(?:{self.config['regex']})$"
        topic = F.col(TOPIC)
        renamed = F.when(topic.rlike(pattern), F.regexp_replace(topic, pattern, self.config["replacement"]))
        return batch.set({TOPIC: renamed.otherwise(topic)})
