"""The record pipeline between a connector and a topic: transforms and predicates, then converters
(source side), or converters then transforms (sink side). Column expressions over whole batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.api import NOT_READ, Converter, HeaderConverter, Predicate, Transform
from ingest.config.connector import ConnectorSetup
from ingest.errors import DataError
from ingest.records import (
    ERROR, HEADERS, KEY, OFFSET, PARTITION, RECORD_COLUMNS, SCOPE, SEQ, TIMESTAMP, TIMESTAMP_TYPE, TOPIC, VALUE,
    RecordBatch,
)
from ingest.runtime.tolerance import (
    HEADER_CONVERTER, KEY_CONVERTER, ORIGIN, TRANSFORMATION, VALUE_CONVERTER, ErrorPolicy, fill_class, guard, mark,
)
from ingest.spark import SessionCache

_EXPRESSIONS = SessionCache(64)
TOPIC_COLUMNS = ("partition", "key", "value", "headers", "timestamp", "seq", "key_schema_id", "value_schema_id")


def plugin_class_name(plugin: Any) -> str:
    """The class name Kafka would report for a plugin: its Kafka class name when it has one."""
    cls = plugin if isinstance(plugin, type) else type(plugin)
    for alias in getattr(cls, "aliases", ()) or ():
        if "." in alias:
            return alias
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass
class Pipeline:
    key_converter: Converter
    value_converter: Converter
    header_converter: HeaderConverter
    transforms: list[tuple[str, Transform, Predicate | None, bool]]
    policy: ErrorPolicy = field(default_factory=ErrorPolicy)

    @classmethod
    def build(cls, setup: ConnectorSetup) -> Pipeline:
        def converter(p, is_key):
            return p.info.cls(p.settings, is_key)

        predicates = {label: p.info.cls(p.config) for label, p in setup.predicates.items()}
        transforms = [(label, t.info.cls(t.config), predicates.get(pred) if pred else None, negate)
                      for label, t, pred, negate in setup.transforms]
        return cls(converter(setup.key_converter, True), converter(setup.value_converter, False),
                   setup.header_converter.info.cls(setup.header_converter.settings), transforms,
                   ErrorPolicy.from_config(setup.config))

    # --- transforms --------------------------------------------------------------------------------

    def transform(self, batches: list[RecordBatch]) -> list[RecordBatch]:
        """Apply the chain in order; a transform with a predicate only touches the records it matches.

        A record that fails a transform keeps its first failure in the ERROR column; later transforms
        never drop it, and the runtime handles it as `errors.*` say (from ERROR and ORIGIN).
        """
        if self.transforms:  # a transform may route or drop records anywhere: the topics must be looked up
            batches = [replace(b, topics=None, counts=None) for b in batches]
            if self.policy.tolerate and self.policy.log_include_messages:
                # Kafka logs a failed source record as it was polled, before the chain changed it.
                batches = [b if ORIGIN in b.df.columns else b.with_df(b.df.withColumn(ORIGIN, F.struct(
                    F.col(TOPIC).alias(TOPIC), F.col(PARTITION).alias(PARTITION), F.col(KEY).alias(KEY),
                    F.col(VALUE).alias(VALUE)))) for b in batches]
        for _label, transform, predicate, negate in self.transforms:
            out: list[RecordBatch] = []
            for batch in batches:
                out.extend(self._apply(transform, predicate, negate, batch))
            batches = out
        return batches

    def _apply(self, transform: Transform, predicate: Predicate | None, negate: bool,
               batch: RecordBatch) -> list[RecordBatch]:
        if predicate is None:
            return [self._apply_one(transform, batch)]
        matches = F.coalesce(predicate.test(batch), F.lit(False))
        if negate:
            matches = ~matches
        if transform.scoped:
            # One pass: the transform changes only the records in scope, when their shape stays.
            scoped = self._apply_one(transform, batch.with_df(batch.df.withColumn(SCOPE, matches)))
            if _same_shape(batch, scoped):
                return [scoped.with_df(scoped.df.drop(SCOPE))]
        # The shape changes (or the transform cannot scope itself): records in scope become their own batch.
        return [self._apply_one(transform, batch.with_df(batch.df.filter(matches))),
                batch.with_df(batch.df.filter(~matches))]

    def _apply_one(self, transform: Transform, batch: RecordBatch) -> RecordBatch:
        name = plugin_class_name(transform)
        try:
            out = self.policy.retrying(lambda: transform.apply(batch), TRANSFORMATION, f"transform {name}")
        except DataError as e:  # a problem with the whole batch (its schema): every record in scope fails
            out = batch.fail_all(str(e), exception=e.exception_class, executing_class=name)
        return out.with_df(fill_class(out.df, name))

    # --- converters --------------------------------------------------------------------------------

    def serialise(self, batch: RecordBatch, schema_ids: tuple[Any, Any] = (None, None),
                  optimistic: bool = False, topics: Sequence[str] | None = None) -> DataFrame:
        """Connect records -> the topic table's byte columns. `schema_ids`: the key's and the value's schema
        ids, each a number, None or an int column. `optimistic`: take the converters' plans for the usual
        records where they have one (`Converter.from_connect_optimistic`): the query then fails with
        `DECLINED` on a record that needs the general plan."""
        df = batch.df
        topics = topics if topics is not None else batch.topics
        data = {}
        for stage, converter, column, schema in ((KEY_CONVERTER, self.key_converter, KEY, batch.key_schema),
                                                 (VALUE_CONVERTER, self.value_converter, VALUE, batch.value_schema)):
            data[column] = F.col(column).cast("binary")
            if schema is None and isinstance(df.schema[column].dataType, T.NullType):
                # No key (or value) at all: every converter writes null for null, and a typed null literal
                # lets Spark prune what depends on it (the key's partition hash).
                data[column] = F.lit(None).cast("binary")
                continue
            try:
                converted = converter.from_connect_optimistic(df, column, schema) if optimistic else None
                df = converted if converted is not None else converter.from_connect_for(df, column, schema, topics)
            except DataError as e:  # the converter cannot write this schema: say which stage, for errors.*
                raise e.in_stage(stage, plugin_class_name(converter)) from e
        converter = self.header_converter
        # These columns depend on the header converter and its settings only: built once per Spark session.
        key = ("serialised", plugin_class_name(converter), repr(sorted(converter.configs.items())))
        topic, partition, headers, timestamp, seq = _EXPRESSIONS.get(df.sparkSession, key, lambda: (
            F.col(TOPIC), F.col(PARTITION).cast("int"), converter.from_connect_header(F.col(HEADERS)).alias(HEADERS),
            F.col(TIMESTAMP).cast("timestamp"), F.col(SEQ).cast("long")))
        key_id, value_id = (i if isinstance(i, Column) else F.lit(i).cast("int") for i in schema_ids)
        return df.select(topic, partition, data[KEY].alias(KEY), data[VALUE].alias(VALUE), headers, timestamp, seq,
                         key_id.alias("key_schema_id"), value_id.alias("value_schema_id"))

    def deserialise(self, df: DataFrame, optimistic: bool = False,
                    first: dict[str, bytes | None] | None = None) -> tuple[list[RecordBatch], DataFrame | None]:
        """A topic's byte rows (with `topic`) -> Connect record batches, one per (key, value) schema pair,
        and (with `errors.tolerance=all`) the records no converter could read, marked with their failure.
        `optimistic`: take the converters' plans for a batch of one schema where they have one
        (`Converter.to_connect_optimistic`): a query of the batches then fails with `DECLINED` on a record
        of another schema. `first`: the key and value bytes of one record of `df`, where the caller could
        read them without Spark (`TopicTable.first_record`); else one record is read from `df`.

        Every record keeps its consumed coordinates (and, when failures are tolerated, its bytes) in
        ORIGIN, for error messages and the dead letter queue.
        """
        first = (first if first is not None else self._first_record(df)) if optimistic else {}
        origin = [F.col(TOPIC).alias(TOPIC), F.col(PARTITION).alias(PARTITION), F.col(OFFSET).alias(OFFSET),
                  F.col(TIMESTAMP).alias(TIMESTAMP)]
        if self.policy.tolerate:
            origin += [F.col(KEY).alias(KEY), F.col(VALUE).alias(VALUE), F.col(HEADERS).alias(HEADERS)]
        df = df.withColumn(ORIGIN, F.struct(*origin))
        failed = None
        checks = [(HEADER_CONVERTER, self.header_converter, self.header_converter.header_errors(F.col(HEADERS))),
                  (KEY_CONVERTER, self.key_converter, self.key_converter.record_errors(df, KEY)),
                  (VALUE_CONVERTER, self.value_converter, self.value_converter.record_errors(df, VALUE))]
        checks = [c for c in checks if c[2] is not None]
        if checks:  # records no converter can read fail here, named by stage and class
            for stage, plugin, reason in checks:
                df = mark(df, stage, plugin_class_name(plugin), reason)
            if self.policy.tolerate:
                failed = df.filter(F.col(ERROR).isNotNull())
                df = df.filter(F.col(ERROR).isNull()).drop(ERROR)
            else:  # the first one stops the task when the batch is evaluated, before anything is written
                df = guard(df).drop(ERROR)
        df = df.withColumn(HEADERS, self.header_converter.to_connect_header(F.col(HEADERS)))
        df = df.withColumn(SEQ, F.col(OFFSET))
        batches = []
        def read(converter, frame: DataFrame, column: str) -> list[tuple[Any, DataFrame]]:
            pairs = converter.to_connect_optimistic(frame, column, first.get(column, NOT_READ)) if optimistic else None
            return pairs if pairs is not None else converter.to_connect(frame, column)

        for key_schema, keyed in read(self.key_converter, df, KEY):
            for value_schema, valued in read(self.value_converter, keyed, VALUE):
                cols = [TOPIC, PARTITION, OFFSET, KEY, VALUE, HEADERS, TIMESTAMP, TIMESTAMP_TYPE, SEQ, ORIGIN]
                batches.append(RecordBatch(valued.select(*cols), key_schema, value_schema))
        return batches, failed


    def plans_by_first_record(self) -> list[str]:
        """The columns (key, value) whose converter plans an optimistic read by one record of the batch."""
        return [column for column, converter in ((KEY, self.key_converter), (VALUE, self.value_converter))
                if type(converter).to_connect_optimistic is not Converter.to_connect_optimistic]

    def _first_record(self, df: DataFrame) -> dict[str, Any]:
        """The key and value bytes of one consumed record, for the converters' optimistic plans, read from
        the batch as consumed: a query of a few rows, where the converters' checked frame would be a plan
        of every check to optimise (0.4 s of a 300,000-record batch). Only for converters that use it."""
        wanted = self.plans_by_first_record()
        if not wanted:
            return {}
        rows = df.select(*wanted).limit(1).collect()
        return {column: (bytes(rows[0][column]) if rows and rows[0][column] is not None else None)
                for column in wanted}


def _same_shape(before: RecordBatch, after: RecordBatch) -> bool:
    """Same schemas and the same Spark type in every record column."""
    if before.key_schema != after.key_schema or before.value_schema != after.value_schema:
        return False
    types = {f.name: f.dataType for f in before.df.schema.fields}
    return all(types.get(f.name, f.dataType) == f.dataType for f in after.df.schema.fields
               if f.name in RECORD_COLUMNS)


def union_all(frames: list[DataFrame]) -> DataFrame:
    """One DataFrame of `frames` (by column name), as a balanced tree of unions: a chain of a thousand
    would be a plan a thousand levels deep, slow for Spark to analyse."""
    frames = list(frames)
    while len(frames) > 1:
        frames = [frames[i].unionByName(frames[i + 1]) if i + 1 < len(frames) else frames[i]
                  for i in range(0, len(frames), 2)]
    return frames[0]
