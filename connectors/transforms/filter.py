"""Filter: drop records (Kafka's `org.apache.kafka.connect.transforms.Filter`), meant to be used with a
predicate, e.g. RecordIsTombstone to drop tombstones."""

from __future__ import annotations

from pyspark.sql import functions as F

from ingest.api import Transform
from ingest.config.configdef import ConfigDef
from ingest.records import RecordBatch


class Filter(Transform):
    """Drops all records, filtering them from subsequent transformations in the chain. This is intended
    to be used conditionally to filter out records matching (or not matching) a particular Predicate.

    As Kafka's Filter: `apply` returns null for every record it is given; with a predicate, only the
    records the predicate selects (records that failed an earlier stage are kept for error handling).
    """

    aliases = ("org.apache.kafka.connect.transforms.Filter",)
    scoped = True

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef()

    def apply(self, batch: RecordBatch) -> RecordBatch:
        return batch.drop(F.lit(True))
