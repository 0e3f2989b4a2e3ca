"""Kafka's predicates: TopicNameMatches, HasHeaderKey, RecordIsTombstone, as boolean columns."""

from __future__ import annotations

from pyspark.sql import functions as F

from ingest.api import Predicate
from ingest.config.configdef import ConfigDef, Importance, NonEmptyString, Type, ValidRegex
from ingest.records import HEADERS, TOPIC, VALUE, RecordBatch


class TopicNameMatches(Predicate):
    """True for records whose topic name matches the regular expression `pattern`."""

    aliases = ("org.apache.kafka.connect.transforms.predicates.TopicNameMatches",)

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef().define("pattern", Type.STRING, validator=ValidRegex(), importance=Importance.MEDIUM,
                                  doc="A Java regular expression for matching against the name of a record's topic.")

    def test(self, batch: RecordBatch):
        return F.col(TOPIC).rlike(f"^(?:{self.config['pattern']})$")


class HasHeaderKey(Predicate):
    """True for records with at least one header with the configured name."""

    aliases = ("org.apache.kafka.connect.transforms.predicates.HasHeaderKey",)

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef().define("name", Type.STRING, validator=NonEmptyString(), importance=Importance.MEDIUM,
                                  doc="The header name.")

    def test(self, batch: RecordBatch):
        name = self.config["name"]
        return F.coalesce(F.exists(F.col(HEADERS), lambda h: h["key"] == F.lit(name)), F.lit(False))


class RecordIsTombstone(Predicate):
    """True for tombstones: records with a null value."""

    aliases = ("org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",)

    def test(self, batch: RecordBatch):
        return F.col(VALUE).isNull()
