"""Confluent's S3 sink connector (`io.confluent.connect.s3.S3SinkConnector`) as a batch job.

A batch reads each assigned topic partition from its committed offset to its end, turns every record
into what its objects need (the encoded partition, the format's payload of value, key and headers) with
Spark, then writes the objects on the executors, one Spark task per group of topic partitions, through
Confluent's per-partition state machine (connectors/s3/writer.py). The offsets committed are those
after the last record of a committed object; the rest is read again next time.

Exactly once: object names hold the offset of their first record, and with a deterministic
configuration (Default or Field partitioner, or a time-based one with the Record or RecordField
extractor; rotation by flush.size and rotate.interval.ms) the same records always make the same
objects, so a batch run again after a crash overwrites its objects with the same bytes. The batch's
clock is fixed when it is planned, so even the wall clock gives a resumed batch the same objects.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from connectors.s3 import config as C
from connectors.s3.writer import (
    ENC, ERR, HEADER_PAYLOAD, KEY_PAYLOAD, OUTPUT_DDL, TAG, TS, Part, WriterPlan, value_column, write_partitions,
)
from ingest.api import OffsetAndMetadata, SinkConnector, SinkTask, TopicRange
from ingest.config.configdef import ConfigDef
from ingest.errors import ConfigError, from_executor
from ingest.records import HEADERS, KEY, OFFSET, PARTITION, TOPIC, VALUE, RecordBatch
from ingest.registry import PluginKind, default_registry

NOW_MS = "now_ms"
CLOCK_SKEW_ENV = "LAKECONNECT_CLOCK_SKEW_MS"
NEXT_ROTATION = "next.scheduled.rotation.ms"
SEEN_UNTIL = "read.until.offset"


def _plugin(kind: PluginKind, key: str, config) -> Any:
    info = default_registry().get(kind, config[key], key=key)
    return info.cls(config)


def deterministic(config) -> list[str]:
    """Why a configuration does not give exactly-once objects (empty when it does)."""
    from connectors.storage.timebased import TIMESTAMP_EXTRACTOR_CLASS_CONFIG as TIMESTAMP_EXTRACTOR

    reasons = []
    settings = C.S3SinkSettings.from_config(config)
    partitioner = default_registry().find(PluginKind.PARTITIONER, settings.partitioner_class)
    if partitioner is not None and _time_based(partitioner.cls, config) and \
            (config[TIMESTAMP_EXTRACTOR] or "").lower() == "wallclock":
        reasons.append(f"{TIMESTAMP_EXTRACTOR}=Wallclock puts records in time partitions by when the batch runs")
    if settings.rotate_schedule_interval_ms > 0:
        reasons.append(f"{C.ROTATE_SCHEDULE_INTERVAL_MS} commits objects by the wall clock")
    return reasons


def _time_based(cls: type, config) -> bool:
    """Whether the partitioner puts records in time buckets: it gives a `time_partitioning` (the contract's
    sign of one, whoever wrote it)."""
    try:
        return cls(config).time_partitioning is not None
    except ConfigError:  # a partitioner its config does not satisfy: validation says why
        return False


class S3SinkConnector(SinkConnector):
    """Writes topics to S3 (or any S3-compatible store, or a local directory) as objects, exactly once."""

    aliases = ("io.confluent.connect.s3.S3SinkConnector", "S3Sink")
    settings_class = C.S3SinkSettings

    @classmethod
    def config_def(cls) -> ConfigDef:
        return C.s3_sink_config_def()

    def validate(self) -> list[str]:
        messages = [str(p) for p in C.check(dict(self.config))]
        for kind, key in ((PluginKind.PARTITIONER, C.PARTITIONER_CLASS), (PluginKind.FORMAT, C.FORMAT_CLASS),
                          (PluginKind.FORMAT, C.KEYS_FORMAT_CLASS), (PluginKind.FORMAT, C.HEADERS_FORMAT_CLASS)):
            if kind is PluginKind.FORMAT and key != C.FORMAT_CLASS and not self.config[
                    C.STORE_KAFKA_KEYS if key == C.KEYS_FORMAT_CLASS else C.STORE_KAFKA_HEADERS]:
                continue
            try:
                _plugin(kind, key, self.config)
            except ConfigError as e:
                messages += [str(p) for p in e.problems]
        try:
            _store(self.config)
        except ConfigError as e:
            messages += [str(p) for p in e.problems]
        return list(dict.fromkeys(messages))  # the store checks its keys again (check_config) when it is made

    def paths(self) -> list[tuple[str, str]]:
        from urllib.parse import unquote, urlsplit

        from connectors.storage.store_config import S3_BUCKET, STORE_URL
        from ingest.config.paths import normalized, within

        url = (self.config[STORE_URL] or "").strip()
        if not url.startswith("file:"):
            return []
        root = unquote(urlsplit(url).path) or "."
        bucket = os.path.join(root, self.config[S3_BUCKET] or "")
        return [(STORE_URL, root)] + ([] if within(normalized(bucket), normalized(root)) else [(S3_BUCKET, bucket)])

    def warnings(self) -> list[str]:
        reasons = deterministic(self.config)
        if not reasons:
            return []
        return [f"not exactly-once: {r}; objects may differ if a batch is run again" for r in reasons]

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Topic partitions are dealt to the tasks by the runtime; every task has the same config.
        return [{} for _ in range(max(1, max_tasks))]

    @staticmethod
    def compact(worker, name: str, **options) -> dict[str, Any]:
        """Merge the small objects of closed partitions (connectors/s3/compaction.py)."""
        # Imported here, not on top: compaction loads the state stores (deltalake), which a sink batch does
        # not need. Compaction does not import this module: it is told which class an S3 sink's is.
        from connectors.s3.compaction import compact

        return compact(worker, name, S3SinkConnector, **options)


def _store(config):
    from connectors.storage.store import from_config

    return from_config(config)


class S3SinkTask(SinkTask):
    def __init__(self, config, context):
        super().__init__(config, context)
        self.settings = C.S3SinkSettings.from_config(config)
        self._next: dict[tuple[str, int], OffsetAndMetadata] = {}

    def prepare(self, ranges: list[TopicRange]) -> dict[str, Any]:
        # The batch's clock: a batch run again after a crash sees the same time as its first run.
        # LAKECONNECT_CLOCK_SKEW_MS moves it (replaying batches as of another time; tests of scheduled rotation).
        skew = int(os.environ.get(CLOCK_SKEW_ENV) or 0)
        return {NOW_MS: int(time.time() * 1000) + skew}

    def put(self, batches: list[RecordBatch], ranges: list[TopicRange], prepared: dict[str, Any],
            batch_id: int) -> None:
        config = self.config
        store = _store(config)
        store.check()
        partitioner = _plugin(PluginKind.PARTITIONER, C.PARTITIONER_CLASS, config)
        value_format = _plugin(PluginKind.FORMAT, C.FORMAT_CLASS, config)
        kinds = [("v", value_format, VALUE)]
        if self.settings.store_keys:
            kinds.append((KEY_PAYLOAD, _plugin(PluginKind.FORMAT, C.KEYS_FORMAT_CLASS, config), KEY))
        if self.settings.store_headers:
            kinds.append((HEADER_PAYLOAD, _plugin(PluginKind.FORMAT, C.HEADERS_FORMAT_CLASS, config), HEADERS))
        self._abort_incomplete(store, ranges)

        frames, schemas = [], {"v": {}, KEY_PAYLOAD: {}, HEADER_PAYLOAD: {}}
        value_tags: dict[Any, int] = {}
        formats = {column: fmt for column, fmt, _ in kinds}
        for batch in batches:
            tag = value_tags.setdefault(batch.value_schema, len(value_tags))
            schemas["v"][tag] = value_format.view(batch.value_schema, False, False)
            if KEY_PAYLOAD in formats:
                schemas[KEY_PAYLOAD].setdefault(tag, formats[KEY_PAYLOAD].view(batch.key_schema, True, False))
            if HEADER_PAYLOAD in formats:
                schemas[HEADER_PAYLOAD][tag] = formats[HEADER_PAYLOAD].view(None, False, True)
            frames.append(self._records(batch, tag, partitioner, kinds))
        # A partition none of whose records reached the writer (all filtered, tolerated failures or ignored
        # tombstones) holds nothing back: its position moves past the batch, else every run would read (and
        # send to the dead letter queue) the same records again. The writer's positions replace these.
        self._next = {(r.topic, r.partition): OffsetAndMetadata(r.end, None) for r in ranges if r.end > r.start}
        if not frames:
            return
        df = frames[0]
        for f in frames[1:]:
            df = df.unionByName(f, allowMissingColumns=True)
        suffix = getattr(store, "extension_suffix", "")
        from connectors.storage.formats import extension

        names = {"v": "", KEY_PAYLOAD: ".keys", HEADER_PAYLOAD: ".headers"}
        parts = tuple(Part(column, fmt, names[column] + extension(fmt, suffix), schemas.get(column, {}))
                      for column, fmt, _ in kinds)
        plan = self._plan(store, parts, partitioner, prepared, ranges)
        width = max(1, min(len(ranges), self.context.spark.sparkContext.defaultParallelism * 2))
        ordered = df.repartition(width, TOPIC, PARTITION).sortWithinPartitions(TOPIC, PARTITION, OFFSET)
        try:
            rows = ordered.mapInArrow(write_partitions(plan), OUTPUT_DDL).collect()
        except Exception as e:  # a record the writer refused fails the task on an executor: say which
            raise from_executor(e, "writing objects") from None
        errant = []
        starts = {(r.topic, r.partition): r.start for r in ranges}
        ends = {(r.topic, r.partition): r.end for r in ranges}
        for r in rows:
            if r["kind"] == "position":
                tp = (r[TOPIC], r[PARTITION])
                meta = ({NEXT_ROTATION: r["next_rotation"], SEEN_UNTIL: ends[tp]}
                        if r["next_rotation"] is not None else None)
                self._next[tp] = OffsetAndMetadata(r[OFFSET] if r[OFFSET] >= 0 else starts[tp], meta)
            elif r["kind"] == "errant":
                errant.append(r)
        self.context.log.info(f"committed {sum(1 for r in rows if r['kind'] == 'object')} object set(s) "
                              f"holding {sum(r['records'] for r in rows if r['kind'] == 'object')} records")
        for batch in self._errant(batches, errant):
            self.context.report(batch)

    def pre_commit(self, ranges: list[TopicRange]) -> dict[tuple[str, int], OffsetAndMetadata]:
        return dict(self._next)

    # --- helpers ---------------------------------------------------------------------------------------

    def _records(self, batch: RecordBatch, tag: int, partitioner, kinds) -> DataFrame:
        """The writer's input columns for one batch (see connectors/s3/writer.py)."""
        df = batch.df
        nulls = df[VALUE].isNull()
        if self.settings.null_values == "ignore":  # Confluent skips them before its writer sees them
            df = df.filter(~nulls)
            batch = batch.with_df(df)
        enc = partitioner.encode(batch)
        ts = partitioner.timestamp(batch)
        errors = [F.when(df[VALUE].isNull(), F.lit(
            f"Null valued records are not writeable with current {C.BEHAVIOR_ON_NULL_VALUES} 'settings' (fail); "
            f"set {C.BEHAVIOR_ON_NULL_VALUES}=ignore to skip tombstones"))]
        part_errors = partitioner.errors(batch)
        if part_errors is not None:
            errors.append(part_errors)
        if partitioner.time_partitioning is not None and ts is not None:
            from connectors.storage.timebased import missing_timestamp_message

            message = missing_timestamp_message(partitioner.time_partitioning.extractor)
            errors.append(F.when(ts.isNull(), F.lit(message)))
        out = df.select(
            F.col(TOPIC), F.col(PARTITION).cast("int").alias(PARTITION), F.col(OFFSET).cast("long").alias(OFFSET),
            (enc if enc is not None else F.lit(None).cast("string")).alias(ENC),
            (ts if ts is not None else F.lit(None).cast("long")).cast("long").alias(TS),
            F.lit(tag).alias(TAG), F.coalesce(*errors).alias(ERR),
            *[F.col(source).alias(f"__{column}") for column, _, source in kinds],
        )
        for column, fmt, source in kinds:
            name = value_column(tag) if column == "v" else column
            schema = {VALUE: batch.value_schema, KEY: batch.key_schema, HEADERS: None}[source]
            out = fmt.payload(out.withColumnRenamed(f"__{column}", name), name, schema, is_key=source == KEY)
        return out

    def _plan(self, store, parts, partitioner, prepared, ranges: list[TopicRange]) -> WriterPlan:
        s = self.settings
        schedule_zone = None
        if s.rotate_schedule_interval_ms > 0:
            from connectors.storage.joda import zone
            from connectors.storage.timebased import TIMEZONE_CONFIG

            schedule_zone = zone(self.config[TIMEZONE_CONFIG] or "UTC")
        return WriterPlan(
            store=store, parts=parts, flush_size=s.flush_size, rotate_interval_ms=s.rotate_interval_ms,
            rotate_schedule_interval_ms=s.rotate_schedule_interval_ms, topics_dir=s.topics_dir,
            directory_delim=s.directory_delim, file_delim=s.file_delim, zero_pad_width=s.zero_pad_width,
            now_ms=int(prepared.get(NOW_MS) or time.time() * 1000),
            time_partitioning=partitioner.time_partitioning, schedule_zone=schedule_zone,
            append_late_data=s.append_late_data, tolerate=s.tolerate,
            next_rotation={f"{r.topic}-{r.partition}": int(r.metadata[NEXT_ROTATION]) for r in ranges
                           if r.metadata and r.metadata.get(NEXT_ROTATION) is not None},
            seen_until={f"{r.topic}-{r.partition}": int(r.metadata[SEEN_UNTIL]) for r in ranges
                        if r.metadata and r.metadata.get(SEEN_UNTIL) is not None},
        )

    def _abort_incomplete(self, store, ranges: list[TopicRange]) -> None:
        """Uploads a crashed batch left unfinished, of this task's topic partitions only (other tasks may be
        writing theirs under the same directories)."""
        d, f = self.settings.directory_delim, self.settings.file_delim
        for topic in sorted({r.topic for r in ranges}):
            mine = {r.partition for r in ranges if r.topic == topic}
            name = re.compile(re.escape(f"{topic}{f}") + r"(\d+)" + re.escape(f))
            prefix = f"{self.settings.topics_dir}{d}{topic}{d}"

            def ours(key: str, name=name, mine=mine) -> bool:
                m = name.match(key.rsplit(d, 1)[-1])
                return m is not None and int(m.group(1)) in mine

            aborted = store.abort_incomplete(prefix, ours)
            if aborted:
                self.context.log.info(f"aborted {len(aborted)} upload(s) left unfinished by an earlier run")

    def _errant(self, batches: list[RecordBatch], errant: list) -> list[RecordBatch]:
        """Records the writer refused (errors.tolerance=all), marked with their reason for the runtime."""
        if not errant:
            return []
        from ingest.runtime.tolerance import mark

        keys = {(r[TOPIC], r[PARTITION], r[OFFSET]): r["message"] for r in errant}
        out = []
        for batch in batches:
            coords = F.concat_ws(":", F.col(TOPIC), F.col(PARTITION).cast("string"), F.col(OFFSET).cast("string"))
            wanted = [f"{t}:{p}:{o}" for t, p, o in keys]
            messages = F.create_map(*[x for k, m in keys.items() for x in (F.lit(f"{k[0]}:{k[1]}:{k[2]}"), F.lit(m))])
            df = batch.df.filter(coords.isin(wanted))
            out.append(batch.with_df(mark(df, "TASK_PUT", "io.confluent.connect.s3.S3SinkTask", messages[coords])))
        return out


S3SinkConnector.task_class = S3SinkTask
