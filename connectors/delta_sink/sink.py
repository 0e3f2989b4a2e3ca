"""DeltaTableSink: topics into typed Delta tables, the way CDC data lands in a lake as queryable tables.

Each record becomes a row of its topic's table (connectors/delta_sink/rows.py): appended with its
Kafka coordinates (`insert.mode=insert`), or merged by primary key (`upsert`): per batch the latest
record of each key by (partition, offset) wins, and replaces or deletes the table's row of that key
(ingest.delta.merge_dataframe: Spark computes the rewrite, one delta-rs commit removes the files it
replaces and adds the new ones).

Exactly once: every table commit carries the app transaction `(connect-<name>:task-<n>, batch id)`.
A batch run again after a crash skips the tables whose commit landed and writes the others as the
first run would have: the records and the plan are the same, and so is the table they start from.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.delta_sink import config as C
from connectors.delta_sink.rows import (
    AFTER, DELETE, KEY_TEXT, MARKERS, ORDER_OFFSET, ORDER_PARTITION, ORDER_TOPIC, PROBLEM, SKIP, VALUE_COLUMN, Refused,
    DeltaSinkSettings, applies_envelope, key_text, rows,
)
from ingest.api import SinkConnector, SinkTask, TopicRange
from ingest.config.configdef import ConfigDef
from ingest.config.connector import TRANSFORMS
from ingest.delta import (
    CommitOptions, merge_dataframe, normalize_uri, open_table, spark_schema_of_delta, transaction_version, write_dataframe,
)
from ingest.errors import DataError, LakeConnectError, StateError
from ingest.records import OFFSET, PARTITION, TOPIC, RecordBatch
from ingest.runtime import faults

MARKER = "lakeconnect-delta-sink-refused: "
CHECKED = "__lc_checked"
FILES_WRITTEN = "delta-files"
"""Fault-injection point: a table's new files are written, its commit not made."""
TABLE_COMMITTED = "delta-commit"
"""Fault-injection point: one table's commit landed (the batch's other tables may not have)."""
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


class DeltaTableSinkConnector(SinkConnector):
    """Writes topics to Delta tables: appended records, or current rows by key (upserts, deletes,
    Debezium change events)."""

    aliases = ("io.lakeconnect.delta.DeltaTableSinkConnector", "DeltaTableSink")
    settings_class = DeltaSinkSettings

    @classmethod
    def config_def(cls) -> ConfigDef:
        return C.config_def()

    def validate(self) -> list[str]:
        return [str(p) for p in C.check(dict(self.config))]

    def paths(self) -> list[tuple[str, str]]:
        template = (self.config[C.DELTA_TABLE_PATH] or "").strip()
        return [(C.DELTA_TABLE_PATH, C.table_dir(template))] if template else []

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Topic partitions are dealt to the tasks by the runtime; the records of a key share a partition.
        return [{} for _ in range(max(1, max_tasks))]


class DeltaTableSinkTask(SinkTask):
    def put(self, batches: list[RecordBatch], ranges: list[TopicRange], prepared: dict[str, Any], batch_id: int):
        settings = DeltaSinkSettings.from_config(self.config)
        parts: dict[str, list[RecordBatch]] = defaultdict(list)
        for batch in batches:
            for topic, part in self._by_topic(batch, ranges):
                uri = normalize_uri(C.table_uri(self.config[C.DELTA_TABLE_PATH], self.context.lake_root,
                                                C.table_name(self.config[C.TABLE_NAME_FORMAT], topic), topic))
                if not settings.upsert and isinstance(part.df.schema["value"].dataType, T.NullType):
                    continue  # tombstones only: no row to append
                parts[uri].append(part)
        tables: dict[str, list[tuple[RecordBatch, DataFrame]]] = {}
        for uri, found in parts.items():
            schemaless = self._schemaless(uri, found)
            tables[uri] = []
            for part in found:
                try:
                    tables[uri].append((part, rows(part, settings, schemaless)))
                except Refused as e:
                    raise _refused(part, uri, str(e)) from None
        for uri in sorted(tables):
            try:
                self._write(uri, tables[uri], settings, batch_id)
            except LakeConnectError:
                raise
            except Exception as e:  # Spark's exception types vary with the session kind
                refused = _raised_in_spark(e)
                if refused is None:
                    raise
                raise refused from None
            faults.point(TABLE_COMMITTED)
        return []

    def _schemaless(self, uri: str, parts: list[RecordBatch]) -> bool:
        """Whether values without a schema make a `value` column (insert mode): unless the table's records
        have schemas (in this batch, or in the table's columns), when such values are tombstones."""
        if any(p.value_schema is not None for p in parts):
            return False
        dt = open_table(uri, self.context.storage_options)
        return dt is None or VALUE_COLUMN in dt.schema().to_arrow().names

    def _by_topic(self, batch: RecordBatch, ranges: list[TopicRange]):
        """(topic, records) of the batch per topic. A query finds the topics only when transforms may have
        renamed them (RegexRouter): else they are the topics read, and every topic goes to one table
        when the table's name and path do not depend on it."""
        templates = (self.config[C.TABLE_NAME_FORMAT], self.config[C.DELTA_TABLE_PATH] or C.TABLE_VAR)
        if not any(C.TOPIC_VAR in t for t in templates):
            yield "", batch
            return
        if batch.topics:
            topics = list(batch.topics)
        elif not self.config[TRANSFORMS]:
            topics = sorted({r.topic for r in ranges})
        else:
            topics = sorted(r[0] for r in batch.df.select(TOPIC).distinct().collect())
        for topic in topics:
            yield topic, batch if len(topics) == 1 else batch.with_df(batch.df.filter(F.col(TOPIC) == topic))

    # --- one table ---------------------------------------------------------------------------------

    def _write(self, uri: str, parts: list[tuple[RecordBatch, DataFrame]], settings: DeltaSinkSettings, batch_id: int):
        storage = self.context.storage_options
        app_id = self.context.app_id
        dt = open_table(uri, storage)
        if dt is not None:
            done = transaction_version(dt, app_id)
            if done is not None and done > batch_id:
                raise StateError(
                    f"Delta table at {uri} already holds batch {done} of {app_id}, but this run is at batch "
                    f"{batch_id}: the connector's run history was lost or belongs to another lake. Write to a "
                    f"new table (delta.table.path / table.name.format) or use another connector name.")
            if done == batch_id:
                self.context.log.info(f"Delta table {uri} already holds batch {batch_id}: skipped")
                return
        table_schema = spark_schema_of_delta(dt.schema()) if dt is not None else None
        target = self._target_schema(uri, parts, table_schema)
        keys = self._keys(uri, parts, settings)
        frames = [_conformed(frame, target) for _, frame in parts]
        records = frames[0]
        for f in frames[1:]:
            records = records.unionByName(f)
        records = _checked(records, uri).filter(~F.col(SKIP))
        columns = target.fieldNames()
        evolve = "merge" if self.config[C.AUTO_EVOLVE] or dt is None else None
        metadata = {"lakeconnect.connector": self.context.connector, "lakeconnect.task": self.context.task_id,
                    "lakeconnect.batch": batch_id}
        check = lambda files: faults.point(FILES_WRITTEN)  # noqa: E731
        if not settings.upsert:
            result = write_dataframe(records.select(*[F.col(f"`{c}`") for c in columns]), uri, app_id=app_id,
                                     version=batch_id, schema_mode=evolve, storage_options=storage,
                                     commit=CommitOptions(metadata=metadata, check_files=check))
            if result is not None:
                self.context.log.info(f"appended {result.num_records} rows to Delta table {uri} "
                                      f"(version {result.version})")
            return
        latest = Window.partitionBy(*[F.col(f"`{k}`") for k in keys]).orderBy(
            F.col(ORDER_PARTITION).desc(), F.col(ORDER_OFFSET).desc(), F.col(ORDER_TOPIC).desc())
        changes = (records.withColumn("__lc_rank", F.row_number().over(latest)).filter(F.col("__lc_rank") == 1)
                   .select(*[F.col(f"`{c}`") for c in columns], F.col(DELETE)))
        result = merge_dataframe(changes, uri, keys=keys, app_id=app_id, version=batch_id, delete=DELETE,
                                 schema_mode=evolve, storage_options=storage, commit_metadata=metadata,
                                 check_files=check)
        if result is not None:
            self.context.log.info(f"merged into Delta table {uri} (version {result.version}): "
                                  f"{len(result.removed)} file(s) rewritten, {result.rows_written} rows written")

    def _keys(self, uri: str, parts, settings: DeltaSinkSettings) -> list[str]:
        """The primary key's columns, the same for every batch of the table."""
        keys: list[str] | None = None
        for part, _ in parts:
            value_schema = part.value_schema
            row_schema = value_schema.field(AFTER).schema if applies_envelope(settings, value_schema) else value_schema
            names = settings.key_names(part.key_schema, row_schema)
            if keys is None or (not keys and names):
                keys = names
            elif names and names != keys:
                raise _refused(part, uri, f"its primary key columns {names} differ from those of other records "
                                          f"of the batch {keys}; set pk.fields to name the key columns")
        if settings.upsert and not keys:
            raise _refused(parts[0][0], uri, f"the records give no primary key column ({C.PK_MODE}="
                                             f"{settings.pk_mode}): record_key needs keys with a schema (a struct, "
                                             "or a primitive with one pk.fields name), record_value a struct value")
        return keys or []

    def _target_schema(self, uri: str, parts, table_schema: T.StructType | None) -> T.StructType:
        """The table's columns after this batch: the table's own, then new ones (auto.evolve); a field
        whose type does not fit its column is refused, naming a record that has it."""
        fields: dict[str, T.DataType] = {f.name: f.dataType for f in (table_schema.fields if table_schema else ())}
        lowered = {n.lower(): n for n in fields}
        evolve = self.config[C.AUTO_EVOLVE] or table_schema is None
        for part, frame in parts:
            for f in frame.schema.fields:
                if f.name in MARKERS:
                    continue
                have = fields.get(f.name)
                if have is None and f.name.lower() in lowered:
                    raise _refused(part, uri, f"field '{f.name}' differs only in case from the table's column "
                                              f"'{lowered[f.name.lower()]}' (Delta column names ignore case); "
                                              "rename it with a ReplaceField transform")
                if have is None:
                    if not evolve:
                        raise _refused(part, uri, f"field '{f.name}' ({f.dataType.simpleString()}) is not a column "
                                                  f"of the table; set {C.AUTO_EVOLVE}=true to add it as a nullable "
                                                  "column, or drop the field with a ReplaceField transform")
                    fields[f.name] = T.StringType() if isinstance(f.dataType, T.NullType) else f.dataType
                    lowered[f.name.lower()] = f.name
                elif not _fits(have, f.dataType):
                    raise _refused(part, uri, f"field '{f.name}' is {f.dataType.simpleString()} in the record but "
                                              f"{have.simpleString()} in the table, and a column's type cannot "
                                              "change. Cast the field back with a Cast transform (CastValue), or "
                                              "write to a new table (table.name.format / delta.table.path)")
        return T.StructType([T.StructField(n, t, True) for n, t in fields.items()])


DeltaTableSinkConnector.task_class = DeltaTableSinkTask


# --- helpers -------------------------------------------------------------------------------------------


def _shape(t: T.DataType) -> Any:
    """A type without nullability, for comparing a record's field with a table's column."""
    def strip(j: Any) -> Any:
        if isinstance(j, dict):
            return {k: strip(v) for k, v in j.items() if k not in ("nullable", "containsNull", "valueContainsNull",
                                                                      "metadata")}
        if isinstance(j, list):
            return [strip(v) for v in j]
        return j

    return strip(t.jsonValue())


def _fits(column: T.DataType, field: T.DataType) -> bool:
    """Whether values of `field` go into `column` without loss: the same type, a narrower integer, a
    float into a double, or nothing known (a null column)."""
    if isinstance(field, T.NullType) or _shape(column) == _shape(field):
        return True
    if isinstance(column, _INTEGRAL) and isinstance(field, _INTEGRAL):
        return _INTEGRAL.index(type(field)) <= _INTEGRAL.index(type(column))
    return isinstance(column, T.DoubleType) and isinstance(field, T.FloatType)


def _conformed(frame: DataFrame, target: T.StructType) -> DataFrame:
    present = set(frame.columns)
    return frame.select(
        *[(F.col(f"`{f.name}`").cast(f.dataType) if f.name in present else F.lit(None).cast(f.dataType)).alias(f.name)
          for f in target.fields],
        *[F.col(m) for m in MARKERS])


def _checked(records: DataFrame, uri: str) -> DataFrame:
    """The records, raising inside Spark on the first one with a problem (before anything is committed):
    the message names its topic, partition, offset and key."""
    message = F.concat(F.lit(MARKER), F.lit("cannot write the record at topic '"), F.col(ORDER_TOPIC),
                       F.lit("', partition "), F.col(ORDER_PARTITION).cast("string"), F.lit(", offset "),
                       F.col(ORDER_OFFSET).cast("string"), F.lit(" (key "), F.col(KEY_TEXT),
                       F.lit(f") to Delta table {uri}: "), F.col(PROBLEM))
    # The check is a column of a projection Spark cannot push a filter through (it holds a nondeterministic
    # expression), filtered on above it. A plain filter on the problem would be pushed down through the
    # projections to the converter's, with every column it names replaced by its expression: the records'
    # whole conversion, copied once per use, made MiB-sized plans that took seconds to compile and ship.
    ok = F.when(F.col(PROBLEM).isNotNull(), F.raise_error(message)).otherwise(F.spark_partition_id() >= 0)
    return records.withColumn(CHECKED, ok).filter(F.col(CHECKED)).drop(CHECKED)


def _raised_in_spark(e: Exception) -> DataError | None:
    text = str(e)
    at = text.find(MARKER)
    if at < 0:
        return None
    detail = re.split(r"\s+SQLSTATE: |\n", text[at + len(MARKER):], maxsplit=1)[0].strip()
    return DataError(f"{detail}. Nothing of this batch was committed to that table; it runs again from the same "
                     "offsets once the record or the configuration is fixed")


def _refused(part: RecordBatch, uri: str, reason: str) -> DataError:
    """A schema-level refusal, naming a record of the batch (the first one Spark gives)."""
    first = part.df.select(F.col(TOPIC), F.col(PARTITION), F.col(OFFSET), key_text(part.df)).limit(1).collect()
    where = (f"the record at topic '{first[0][0]}', partition {first[0][1]}, offset {first[0][2]} (key {first[0][3]})"
             if first else "the batch's records")
    return DataError(f"cannot write {where} to Delta table {uri}: {reason}. Nothing of this batch was committed "
                     "to that table; it runs again from the same offsets once the record or the configuration "
                     "is fixed")
