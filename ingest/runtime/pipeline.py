"""The record pipeline between a connector and a topic: transforms and predicates, then converters
(source side), or converters then transforms (sink side). Column expressions over whole batches.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ingest.api import Converter, HeaderConverter, Predicate, Transform
from ingest.config.connector import ConnectorSetup
from ingest.records import HEADERS, KEY, OFFSET, PARTITION, SEQ, TIMESTAMP, TIMESTAMP_TYPE, TOPIC, VALUE, RecordBatch

TOPIC_COLUMNS = ("partition", "key", "value", "headers", "timestamp", "seq", "key_schema_id", "value_schema_id")


@dataclass
class Pipeline:
    key_converter: Converter
    value_converter: Converter
    header_converter: HeaderConverter
    transforms: list[tuple[str, Transform, Predicate | None, bool]]

    @classmethod
    def build(cls, setup: ConnectorSetup) -> Pipeline:
        def converter(p, is_key):
            return p.info.cls(p.settings, is_key)

        predicates = {label: p.info.cls(p.config) for label, p in setup.predicates.items()}
        transforms = [(label, t.info.cls(t.config), predicates.get(pred) if pred else None, negate)
                      for label, t, pred, negate in setup.transforms]
        return cls(converter(setup.key_converter, True), converter(setup.value_converter, False),
                   setup.header_converter.info.cls(setup.header_converter.settings), transforms)

    def transform(self, batches: list[RecordBatch]) -> list[RecordBatch]:
        """Apply the chain in order; a transform with a predicate only touches the records it matches."""
        if self.transforms:  # a transform may route records anywhere: the topics must be looked up
            batches = [replace(b, topics=None) for b in batches]
        for _label, transform, predicate, negate in self.transforms:
            out: list[RecordBatch] = []
            for batch in batches:
                if predicate is None:
                    out.append(transform.apply(batch))
                    continue
                matches = F.coalesce(predicate.test(batch), F.lit(False))
                if negate:
                    matches = ~matches
                out.append(transform.apply(batch.with_df(batch.df.filter(matches))))
                out.append(batch.with_df(batch.df.filter(~matches)))
            batches = out
        return batches

    def serialise(self, batch: RecordBatch, schema_ids: tuple[Any, Any] = (None, None)) -> DataFrame:
        """Connect records -> the topic table's byte columns."""
        df = batch.df
        df = self.key_converter.from_connect(df, KEY, batch.key_schema)
        df = self.value_converter.from_connect(df, VALUE, batch.value_schema)
        df = df.withColumn(HEADERS, self.header_converter.from_connect_header(F.col(HEADERS)))
        key_id, value_id = schema_ids
        return df.select(
            F.col(TOPIC), F.col(PARTITION).cast("int"), F.col(KEY).cast("binary"), F.col(VALUE).cast("binary"),
            F.col(HEADERS), F.col(TIMESTAMP).cast("timestamp"), F.col(SEQ).cast("long"),
            F.lit(key_id).cast("int").alias("key_schema_id"), F.lit(value_id).cast("int").alias("value_schema_id"),
        )

    def deserialise(self, df: DataFrame) -> list[RecordBatch]:
        """A topic's byte rows (with `topic`) -> Connect record batches, one per (key, value) schema pair."""
        df = df.withColumn(HEADERS, self.header_converter.to_connect_header(F.col(HEADERS)))
        df = df.withColumn(SEQ, F.col(OFFSET))
        batches = []
        for key_schema, keyed in self.key_converter.to_connect(df, KEY):
            for value_schema, valued in self.value_converter.to_connect(keyed, VALUE):
                cols = [TOPIC, PARTITION, OFFSET, KEY, VALUE, HEADERS, TIMESTAMP, TIMESTAMP_TYPE, SEQ]
                batches.append(RecordBatch(valued.select(*cols), key_schema, value_schema))
        return batches


def union_all(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out
