"""Error handling as Kafka Connect's `errors.*` settings say (KIP-298, KIP-610), over whole batches.

A record that fails a stage (a converter, a transform, the sink) carries its failure in the `ERROR`
column instead of stopping the job. At the end of the pipeline the failed records are handled once:

- `errors.tolerance=none`: the task fails on the first failed record, naming it, before anything of
  the batch is written or committed; the next run reads the same records again (at-least-once, and
  exactly-once with the batch protocol).
- `errors.tolerance=all`: failed records are skipped, logged when `errors.log.enable` is set (with
  their coordinates, or contents for source records, only when `errors.log.include.messages` is),
  and for sinks written to `errors.deadletterqueue.topic.name` with the original key, value and
  headers, plus Kafka's `__connect.errors.*` headers when `errors.deadletterqueue.context.headers.enable`.

`errors.retry.timeout` and `errors.retry.delay.max.ms` govern how long an operation that raises
`RetriableError` is tried again (Kafka's RetryWithToleranceOperator backoff: 300 ms, doubling, capped).
A whole-batch operation whose retries run out fails the task: a batch is never skipped silently.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ingest.config.configdef import Config
from ingest.config.connector import (DLQ_CONTEXT_HEADERS, DLQ_REPLICATION, DLQ_TOPIC, ERRORS_TOLERANCE, LOG_ENABLE,
                                     LOG_INCLUDE_MESSAGES, RETRY_DELAY_MAX_MS, RETRY_TIMEOUT, common_config_def)
from ingest.errors import DATA_EXCEPTION, DataError, LakeConnectError, RetriableError
from ingest.records import ERROR, HEADERS, OFFSET, PARTITION, SCOPE, SEQ, TIMESTAMP, TOPIC

T = TypeVar("T")

# The records `guard` was given inside `run_guarded`'s operation: when the batch fails, the error names
# the first failed record among them, not the one whose Spark task happened to fail first.
_GUARDED: ContextVar[list[DataFrame] | None] = ContextVar("guarded", default=None)

# Kafka's ErrorHandlingMetrics / Stage names, used in logs and in the __connect.errors.stage header.
KEY_CONVERTER = "KEY_CONVERTER"
VALUE_CONVERTER = "VALUE_CONVERTER"
HEADER_CONVERTER = "HEADER_CONVERTER"
TRANSFORMATION = "TRANSFORMATION"
TASK_PUT = "TASK_PUT"
TASK_POLL = "TASK_POLL"
KAFKA_PRODUCE = "KAFKA_PRODUCE"
KAFKA_CONSUME = "KAFKA_CONSUME"

HEADER_PREFIX = "__connect.errors."
RETRIES_DELAY_MIN_MS = 300
MARKER = "lakeconnect-record-failed: "
"""Starts the message a failed record raises inside Spark, so the driver can find it in the exception."""

ORIGIN = "__lc_origin"
"""Sink side: the consumed record as read from the topic (coordinates, and bytes for a dead letter queue)."""
INTERNAL_COLUMNS = (ERROR, SCOPE, ORIGIN)

log = logging.getLogger("lakeconnect.errors")


class ToleranceExceeded(DataError):
    """A record failed and `errors.tolerance=none`: the task stops, nothing of the batch is committed."""


def _default(key: str) -> Any:
    return common_config_def("sink").keys[key].default  # a sink declares every errors.* key


@dataclass(frozen=True)
class ErrorPolicy:
    """The connector's `errors.*` settings. Defaults are the ConfigDef's (ingest/config/connector.py)."""

    tolerance: str = _default(ERRORS_TOLERANCE)
    retry_timeout_ms: int = _default(RETRY_TIMEOUT)
    retry_delay_max_ms: int = _default(RETRY_DELAY_MAX_MS)
    log_enable: bool = _default(LOG_ENABLE)
    log_include_messages: bool = _default(LOG_INCLUDE_MESSAGES)
    dlq_topic: str = _default(DLQ_TOPIC)
    dlq_context_headers: bool = _default(DLQ_CONTEXT_HEADERS)
    dlq_replication_factor: int = _default(DLQ_REPLICATION)

    @classmethod
    def from_config(cls, config: Config) -> ErrorPolicy:
        """The policy a connector's config sets; a key its kind does not declare (a source has no dead letter
        queue) keeps its default."""
        keys = {"tolerance": ERRORS_TOLERANCE, "retry_timeout_ms": RETRY_TIMEOUT,
                "retry_delay_max_ms": RETRY_DELAY_MAX_MS, "log_enable": LOG_ENABLE,
                "log_include_messages": LOG_INCLUDE_MESSAGES, "dlq_topic": DLQ_TOPIC,
                "dlq_context_headers": DLQ_CONTEXT_HEADERS, "dlq_replication_factor": DLQ_REPLICATION}
        settings = {field: config[key] for field, key in keys.items() if key in config}
        if settings.get("dlq_topic") is None:
            settings.pop("dlq_topic", None)  # set to null: no dead letter queue
        return cls(**settings)

    @property
    def tolerate(self) -> bool:
        return self.tolerance == "all"

    # --- retries -----------------------------------------------------------------------------------

    def retrying(self, operation: Callable[[], T], stage: str, what: str,
                 sleep: Callable[[float], None] = time.sleep) -> T:
        """Run `operation`; while it raises RetriableError, try again with Kafka's backoff until
        `errors.retry.timeout` (ms; -1 = forever, 0 = no retries) has passed. The last error is raised."""
        deadline = None if self.retry_timeout_ms < 0 else time.monotonic() + self.retry_timeout_ms / 1000
        attempt = 0
        while True:
            attempt += 1
            try:
                return operation()
            except RetriableError as e:
                delay_ms = min(RETRIES_DELAY_MIN_MS * 2 ** (attempt - 1), self.retry_delay_max_ms)
                if deadline is not None and time.monotonic() + delay_ms / 1000 > deadline:
                    if self.retry_timeout_ms:
                        raise RetriableError(f"{what} ({stage}) still failing after {attempt} attempts within "
                                             f"errors.retry.timeout={self.retry_timeout_ms} ms: {e}") from e
                    raise
                log.warning(f"{what} ({stage}) failed, attempt {attempt}; retrying in {delay_ms} ms: {e}")
                sleep(delay_ms / 1000)


# --- failed records --------------------------------------------------------------------------------


def has_errors(df: DataFrame) -> bool:
    return ERROR in df.columns


def mark(df: DataFrame, stage: str, executing_class: str, reason: Column,
         exception: str = DATA_EXCEPTION) -> DataFrame:
    """Records whose `reason` is not null failed `stage` (first failure wins)."""
    error = F.when(reason.isNotNull(), F.struct(
        F.lit(stage).alias("stage"), F.lit(executing_class).alias("class"), F.lit(exception).alias("exception"),
        reason.cast("string").alias("message")))
    return df.withColumn(ERROR, F.coalesce(F.col(ERROR), error) if ERROR in df.columns else error)


def fill_class(df: DataFrame, executing_class: str) -> DataFrame:
    """Errors a plugin marked without naming its class get the class of the stage that ran."""
    if ERROR not in df.columns:
        return df
    # The error column named once, as a lambda's argument (see `guard`): five names of it, copied down the
    # chain by a pushed-down filter, made the plan five times bigger at every transform.
    def filled(e: Column) -> Column:
        return F.when(e.isNotNull(), F.struct(
            e["stage"].alias("stage"), F.coalesce(e["class"], F.lit(executing_class)).alias("class"),
            e["exception"].alias("exception"), e["message"].alias("message")))

    return df.withColumn(ERROR, F.transform(F.array(F.col(ERROR)), filled)[0])


def describe_record(df: DataFrame) -> Column:
    """Which record, as text inside Spark: the consumed record's coordinates (sinks) or the source
    record's topic and position in its read (sources)."""
    if ORIGIN in df.columns:
        o = F.col(ORIGIN)
        return F.concat(F.lit("the record at topic '"), o[TOPIC], F.lit("', partition "),
                        o[PARTITION].cast("string"), F.lit(", offset "), o[OFFSET].cast("string"))
    parts = [F.lit("the source record ")]
    if SEQ in df.columns:
        parts += [F.lit("#"), F.col(SEQ).cast("string"), F.lit(" ")]
    parts += [F.lit("for topic '"), F.col(TOPIC), F.lit("'")]
    return F.concat(*parts)


def failure_text(df: DataFrame, error: Column | None = None) -> Column:
    e = F.col(ERROR) if error is None else error
    return F.concat(F.lit(MARKER), F.lit("stage "), e["stage"], F.lit(" ("), F.coalesce(e["class"], F.lit("?")),
                    F.lit(") failed on "), describe_record(df), F.lit(": "), e["exception"], F.lit(": "),
                    F.coalesce(e["message"], F.lit("null")))


def guard(df: DataFrame) -> DataFrame:
    """`errors.tolerance=none`: any failed record raises inside Spark when the batch is written, so the
    job fails before the commit. No extra pass over the data."""
    if ERROR not in df.columns:
        return df
    # The check names the error column once, as a lambda's argument. Spark pushes a filter down through the
    # projections, each column it names replaced by its expression once per use, and the error column's
    # is every converter's check of the record: named five times, it made plans of MiB that took seconds to
    # compile and ship, and parsed each record's JSON many times over in the filter.
    def check(e: Column) -> Column:
        return F.when(e.isNotNull(), F.raise_error(failure_text(df, e))).otherwise(F.lit(True))

    watching = _GUARDED.get()
    if watching is not None:
        watching.append(df)

    return df.filter(F.transform(F.array(F.col(ERROR)), check)[0])


def first_failure(frames: Iterable[DataFrame]) -> str | None:
    """The failure text of the first failed consumed record of `frames`, in the order a Kafka Connect
    sink task meets them: by topic, partition and offset.

    Spark runs a batch's tasks side by side, so the record that `guard` raised on first is whichever task
    got there first; a Connect task fails on the first failed record of its partition. This query runs
    only once a batch has failed, and reads the one row it needs. Source records are left out: reading
    them again would mean asking the source system again."""
    first = None
    for df in frames:
        if ERROR not in df.columns or ORIGIN not in df.columns:
            continue
        order = [F.col(ORIGIN)[TOPIC], F.col(ORIGIN)[PARTITION], F.col(ORIGIN)[OFFSET]]
        # Named once through a lambda, as in `guard`, so the error column's expression is not copied.
        text = F.transform(F.array(F.col(ERROR)),
                           lambda e: F.when(e.isNotNull(), failure_text(df, e)))[0]
        keyed = df.select(F.struct(*[o.alias(f"k{i}") for i, o in enumerate(order)]).alias("k"), text.alias("t"))
        rows = keyed.filter(F.col("t").isNotNull()).orderBy("k").limit(1).collect()
        if rows and (first is None or tuple(rows[0]["k"]) < first[0]):
            first = (tuple(rows[0]["k"]), rows[0]["t"])
    return None if first is None else first[1]


def _detail(text: str) -> str | None:
    at = text.find(MARKER)
    if at < 0:
        return None
    detail = text[at + len(MARKER):]
    return re.split(r"\s+SQLSTATE: |\n", detail, maxsplit=1)[0].strip()


def tolerance_failure(exc: BaseException, connector: str, task: int,
                      frames: Iterable[DataFrame] = ()) -> ToleranceExceeded | None:
    """The clean error for a Spark failure raised by `guard` (None when `exc` is something else), naming
    the first failed record of `frames` when they are given."""
    detail = _detail(str(exc))
    if detail is None:
        return None
    try:
        first = first_failure(frames)
    except Exception:  # the batch's own failure is the one to report
        first = None
    if first:
        detail = _detail(first) or detail
    return ToleranceExceeded(
        f"Tolerance exceeded in error handler: task {task} of connector '{connector}' stopped because {detail}. "
        f"Nothing of this batch was committed. Fix the record or the configuration, or set errors.tolerance=all "
        f"(with errors.deadletterqueue.topic.name for a sink) to route failed records aside, then run again")


def run_guarded(operation: Callable[[], T], connector: str, task: int, frames: Iterable[DataFrame] = ()) -> T:
    """Run an operation that evaluates guarded records; a failed record becomes ToleranceExceeded, naming
    the first failed record of `frames` (the records before `guard`) when they are given."""
    watching = _GUARDED.set([])  # the records `guard` checks inside the operation
    try:
        return operation()
    except LakeConnectError:
        raise
    except Exception as e:  # Spark's own exception types vary with the session kind
        failure = tolerance_failure(e, connector, task, [*frames, *_GUARDED.get()])
        if failure is None:
            raise
        raise failure from None
    finally:
        _GUARDED.reset(watching)


def split(df: DataFrame, keep: tuple[str, ...] = ()) -> tuple[DataFrame, DataFrame | None]:
    """(records that did not fail, records that failed) of a batch, internal columns but `keep` dropped from
    the first."""
    if ERROR not in df.columns:
        return df, None
    return strip(df.filter(F.col(ERROR).isNull()), keep), df.filter(F.col(ERROR).isNotNull())


def strip(df: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
    return df.drop(*[c for c in INTERNAL_COLUMNS if c in df.columns and c not in keep])


def log_failed(policy: ErrorPolicy, failed: DataFrame, connector: str, task: int, sink: bool) -> int:
    """Log each failed record as Kafka's LogReporter does (streamed, never collected whole); the count."""
    count = 0
    cols = [ERROR] + [c for c in (ORIGIN, TOPIC, PARTITION, SEQ, "key", "value") if c in failed.columns]
    rows: Iterable[Any] = failed.select(*cols).toLocalIterator() if policy.log_enable else ()
    for row in rows:
        count += 1
        log.error(log_line(policy, row, connector, task, sink))
    if not policy.log_enable:
        count = failed.count()
    return count


def log_line(policy: ErrorPolicy, row: Any, connector: str, task: int, sink: bool) -> str:
    e = row[ERROR]
    text = (f"Error encountered in task {connector}-{task}. Executing stage '{e['stage']}' with class "
            f"'{e['class']}'")
    if policy.log_include_messages:
        if sink and ORIGIN in row:
            o = row[ORIGIN]
            ts = o[TIMESTAMP]
            millis = "" if ts is None else f", timestamp={int(ts.timestamp() * 1000)}, timestampType=CreateTime"
            text += (f", where consumed record is {{topic='{o[TOPIC]}', partition={o[PARTITION]}, "
                     f"offset={o[OFFSET]}{millis}}}")
        elif not sink:
            record = row[ORIGIN] if ORIGIN in row else row  # as polled, when the pipeline kept it
            text += (f", where source record is = SourceRecord{{topic='{record[TOPIC]}', "
                     f"kafkaPartition={record[PARTITION]}, key={render_value(record['key'])}, "
                     f"value={render_value(record['value'])}}}")
    return f"{text}. {e['exception']}: {e['message']}"


def render_value(value: Any) -> str:
    """A Connect value as Kafka's toString shows it in a log line: Struct{a=1}, {k=v}, [x, y], text."""
    if value is None:
        return "null"
    if hasattr(value, "toPython"):  # a VARIANT: schemaless JSON
        value = value.toPython()
    if hasattr(value, "asDict"):
        fields = value.asDict(recursive=False)
        return "Struct{" + ",".join(f"{k}={render_value(v)}" for k, v in fields.items() if v is not None) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={render_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def dead_letters(failed: DataFrame, connector: str, task: int, context_headers: bool) -> DataFrame:
    """Kafka's DeadLetterQueueReporter: the consumed record's key, value, headers and timestamp, with the
    `__connect.errors.*` context headers appended when asked. Partition left to the DLQ topic."""
    o = F.col(ORIGIN)
    headers = F.coalesce(o[HEADERS], F.array().cast("array<struct<key:string,value:binary>>"))
    if context_headers:
        e = F.col(ERROR)

        def h(name: str, value: Column) -> Column:
            return F.struct(F.lit(HEADER_PREFIX + name).alias("key"), value.cast("string").cast("binary").alias("value"))

        trace = F.concat(e["exception"], F.lit(": "), F.coalesce(e["message"], F.lit("null")),
                         F.lit("\n\tat "), F.coalesce(e["class"], F.lit("?")), F.lit(" ("), e["stage"], F.lit(")"))
        extra = [h("topic", o[TOPIC]), h("partition", o[PARTITION]), h("offset", o[OFFSET]),
                 h("connector.name", F.lit(connector)), h("task.id", F.lit(str(task))), h("stage", e["stage"]),
                 h("class.name", e["class"]), h("exception.class.name", e["exception"])]
        message = h("exception.message", e["message"])
        extra_array = F.array(*extra, h("exception.stacktrace", trace))
        extra_array = F.when(e["message"].isNull(), extra_array).otherwise(
            F.array(*extra, message, h("exception.stacktrace", trace)))
        headers = F.concat(headers, extra_array)
    return failed.select(
        F.lit(None).cast("int").alias(PARTITION), o["key"].alias("key"), o["value"].alias("value"),
        headers.alias(HEADERS), o[TIMESTAMP].alias(TIMESTAMP), o[OFFSET].alias(SEQ),
        F.lit(None).cast("int").alias("key_schema_id"), F.lit(None).cast("int").alias("value_schema_id"))
