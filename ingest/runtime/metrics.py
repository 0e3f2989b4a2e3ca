"""Kafka Connect's metrics (the book's ch. 9, Kafka's ConnectMetricsRegistry), computed from the lake's state
tables and written in Prometheus's text exposition format (0.0.4) for `GET /metrics`.

Names are what the Prometheus JMX exporter's Kafka Connect rules (Strimzi's, after jmx_exporter's
example_configs/kafka-connect.yml) make of Kafka's MBeans, so dashboards built for Kafka Connect read them:
`kafka.connect:type=source-task-metrics,connector=x,task=0` attribute `source-record-poll-total` is
`kafka_connect_source_task_source_record_poll_total{connector="x",task="0"}`. A batch system defines them
from its batches (docs/rest-api.md, "Metrics"); a metric lakeconnect cannot know is left out, never shown as 0.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import threading
from itertools import islice
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from ingest.config.connector import CONNECTOR_CLASS, TASKS_MAX
from ingest.state.stores import COMMITTED, CONNECTOR_TASK, RUNNING, STOPPED, UNASSIGNED, Stores
from ingest.state.tables import TS

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
RATE_WINDOW = dt.timedelta(minutes=15)
"""The window of the rates, averages and maxima: Kafka's is 2 samples of 30 s, which a connector run in batches
every few minutes would show as 0 most of the time; 15 minutes of batches' end times holds a few batches of a
connector scheduled every 5 minutes."""
MAX_CONNECTORS = 1000
"""Connectors whose series are shown (the first by name): each has some 30 series, and a scrape's size and time
must stay bounded however many connectors a lake holds. The worker's counts still count them all."""
MAX_TASKS = 10_000
"""Tasks whose series are shown, over all connectors (tasks.max may be up to 1024 each), for the same reason."""

_STEPS = ("plan", "read", "transform", "convert", "write", "put", "commit")
_POLL_STEPS = ("plan", "read", "transform", "convert", "write")
"""A source batch's steps up to its records written: Spark reads lazily, so reading the source cannot be timed
apart from writing the topics."""
_STATS = pa.schema([
    ("records_read", pa.int64()), ("records_written", pa.int64()), ("records_skipped", pa.int64()),
    ("records_failed", pa.int64()), ("records_dead_lettered", pa.int64()), ("errors_logged", pa.int64()),
    ("timings_ms", pa.struct([(step, pa.float64()) for step in _STEPS])),
])


@dataclass
class _Family:
    name: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    @property
    def type(self) -> str:
        return "counter" if self.name.endswith("_total") else "gauge"


class _Exposition:
    """Metric families in the order first named, each written once with its # HELP and # TYPE lines."""

    def __init__(self):
        self.families: dict[str, _Family] = {}

    def add(self, group: str, attribute: str, help: str, labels: Mapping[str, str], value: float) -> None:
        name = _name(group, attribute)
        family = self.families.setdefault(name, _Family(name, help))
        family.samples.append((dict(labels), value))

    def text(self) -> str:
        lines = []
        for f in self.families.values():
            lines.append(f"# HELP {f.name} {_escape_help(f.help)}")
            lines.append(f"# TYPE {f.name} {f.type}")
            for labels, value in f.samples:
                inner = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())
                lines.append(f"{f.name}{{{inner}}} {_number(value)}" if inner else f"{f.name} {_number(value)}")
        return "\n".join(lines) + "\n"


def _name(group: str, attribute: str) -> str:
    """The JMX exporter rules' name: `kafka_connect_<type less -metrics>_<attribute>`, the worker's group as
    `worker`, hyphens as underscores."""
    kind = "worker" if group == "connect-worker-metrics" else group.removesuffix("-metrics")
    return f"kafka_connect_{kind}_{attribute}".replace("-", "_")


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


@dataclass(frozen=True)
class _Connector:
    name: str
    kind: str  # source | sink | unknown
    class_name: str
    version: str
    target: str
    tasks: int  # the tasks it has (GET /connectors/{name}/tasks); none once STOPPED, as in Kafka


class Metrics:
    """The metrics one REST server serves. Counters count the batches committed since it started, as Kafka's count
    since the worker started (a restart starts them at 0, which Prometheus's rate() and increase() read as a counter
    reset): so maintenance pruning old runs never makes them go down, and a scrape reads only the runs rows written
    since the last one (and the rate window's), not the whole history. Thread-safe: scrapes come on several
    threads."""

    OVERLAP = dt.timedelta(minutes=5)
    """How far back each scrape reads again: a batch's row is visible once its Delta commit lands, which can be a
    little after the time it carries. A batch counted once is remembered this long and not counted again."""

    def __init__(self, stores: Stores, registry, started: dt.datetime | None = None):
        self.stores, self.registry = stores, registry
        self.started = started or dt.datetime.now(dt.timezone.utc)
        self._read_from = self.started
        self._totals: dict[tuple[str, int], dict[str, int]] = {}
        self._counted = pa.table({"connector": pa.array([], pa.string()), "task": pa.array([], pa.int32()),
                                  "batch_id": pa.array([], pa.int64()), "written_at": pa.array([], TS)})
        """The batches counted lately (written in the last OVERLAP and window): a scrape counts no other twice."""
        self._last_errors: dict[tuple[str, int], dt.datetime] = {}
        self._lock = threading.Lock()

    def text(self, now: dt.datetime | None = None) -> str:
        """The exposition of every metric lakeconnect can compute, for connectors as the state tables hold them."""
        now = now or dt.datetime.now(dt.timezone.utc)
        connectors = _connectors(self.stores, self.registry)
        shown = connectors[:MAX_CONNECTORS]
        statuses = {(r["connector"], r["task"]): r["state"] for r in self.stores.status.latest(["connector", "task"])}
        with self._lock:
            windowed = self._scrape({c.name for c in shown}, now)
            totals, last_errors = dict(self._totals), dict(self._last_errors)
        out = _Exposition()
        _worker_metrics(out, connectors, statuses)
        for c in shown:
            _connector_metrics(out, c, statuses)
        for c, task in islice(((c, task) for c in shown for task in range(c.tasks)), MAX_TASKS):
            _task_metrics(out, c, task, statuses, totals.get((c.name, task), {}), windowed.get((c.name, task), {}),
                          last_errors.get((c.name, task)))
        return out.text()

    def _scrape(self, names: set[str], now: dt.datetime) -> dict[tuple[str, int], dict[str, Any]]:
        """Adds the batches committed since the last scrape to the counters; returns the rate window's aggregates."""
        since = min(self._read_from - self.OVERLAP, now - RATE_WINDOW)
        table = _batch_table(self.stores, names, since)
        self._read_from = now
        keys = ["connector", "task"]
        if table.num_rows:
            started = pa.scalar(self.started, table.schema.field("written_at").type)
            fresh = table.filter(pc.greater_equal(table["written_at"], started)).join(
                self._counted.select(["connector", "task", "batch_id"]), ["connector", "task", "batch_id"],
                join_type="left anti", use_threads=False)
            sums = fresh.group_by(keys, use_threads=False).aggregate(
                [*((c, "sum") for c in _COUNTED[:-1]), ("read", "count")])
            for row in sums.to_pylist():  # one row per task
                total = self._totals.setdefault((row["connector"], row["task"]), dict.fromkeys(_COUNTED, 0))
                for column in _COUNTED[:-1]:
                    total[column] += row[f"{column}_sum"]
                total["batches"] += row["read_count"]
            failing = fresh.filter(pc.greater(fresh["errors"], 0))
            for row in failing.group_by(keys, use_threads=False).aggregate([("ended_at", "max")]).to_pylist():
                task = (row["connector"], row["task"])
                if task not in self._last_errors or row["ended_at_max"] > self._last_errors[task]:
                    self._last_errors[task] = row["ended_at_max"]
            self._counted = pa.concat_tables([self._counted, fresh.select(self._counted.column_names).cast(
                self._counted.schema)])
        horizon = pa.scalar(now - self.OVERLAP - RATE_WINDOW, TS)
        self._counted = self._counted.filter(pc.greater_equal(self._counted["written_at"], horizon))
        if not table.num_rows:
            return {}
        recent = table.filter(pc.greater_equal(table["ended_at"],
                                               pa.scalar(now - RATE_WINDOW, table.schema.field("ended_at").type)))
        return _rows(recent.group_by(keys, use_threads=False).aggregate(
            [("read", "sum"), ("written", "sum"), ("read", "mean"), ("read", "max"), ("poll_ms", "mean"),
             ("poll_ms", "max"), ("put_ms", "mean"), ("put_ms", "max"), ("commit_ms", "mean"), ("commit_ms", "max")]),
            keys)


_COUNTED = ("read", "written", "errors", "dead_lettered", "logged", "batches")
"""A task's counters: sums over its committed batches (the last: how many)."""


def _connectors(stores: Stores, registry) -> list[_Connector]:
    out = []
    for row in sorted(stores.configs.latest(["connector"]), key=lambda r: r["connector"]):
        if row["deleted"]:
            continue
        config = json.loads(row["config"])
        info = registry.find_connector(config.get(CONNECTOR_CLASS) or "")
        tasks = 0 if row["target_state"] == STOPPED else _tasks_max(config.get(TASKS_MAX))
        out.append(_Connector(row["connector"], info.cls.kind if info else "unknown",
                              info.class_name if info else str(config.get(CONNECTOR_CLASS) or ""),
                              (info.version or "") if info else "", row["target_state"], tasks))
    return out


def _tasks_max(value: Any) -> int:
    """As GET /connectors/{name} counts a connector's tasks (its config was validated when stored)."""
    try:
        return max(int(value or 1), 0)
    except (TypeError, ValueError):
        return 1


def _state(c: _Connector, task: int, statuses: Mapping[tuple[str, int], str]) -> str:
    """The state GET /connectors/{name}/status shows: a PAUSED or STOPPED target state wins over the last run's."""
    if c.target != RUNNING:
        return c.target
    return statuses.get((c.name, task), UNASSIGNED)


def _batch_table(stores: Stores, names: set[str], since: dt.datetime) -> pa.Table:
    """The committed batches of the connectors `names` whose runs row was written at `since` or later, one row
    each with what the counters and the window need. One read of the runs table (its files are cached), in Arrow."""
    runs = stores.runs.read(pc.field("state") == COMMITTED,
                            ["connector", "task", "batch_id", "stats", "ended_at", "written_at"])
    recent = pc.greater_equal(runs["written_at"], pa.scalar(since, runs.schema.field("written_at").type))
    shown = pc.is_in(runs["connector"], pa.array(sorted(names), pa.string()))
    runs = runs.filter(pc.and_(pc.and_(pc.greater_equal(runs["task"], 0), shown), recent))  # <0: compaction
    stats = _parse_stats(runs["stats"])
    timings = stats["timings_ms"]

    def step_sum(steps: Iterable[str]) -> pa.Array:
        total = None
        for step in steps:
            part = pc.fill_null(pc.struct_field(timings, step), 0.0)
            total = part if total is None else pc.add(total, part)
        return total

    zero = pa.scalar(0, pa.int64())
    errors = pc.add(pc.fill_null(stats["records_skipped"], zero), pc.fill_null(stats["records_failed"], zero))
    return pa.table({
        "connector": runs["connector"], "task": runs["task"], "batch_id": runs["batch_id"],
        "ended_at": runs["ended_at"], "written_at": runs["written_at"],
        "read": pc.fill_null(stats["records_read"], zero), "written": pc.fill_null(stats["records_written"], zero),
        "errors": errors, "dead_lettered": pc.fill_null(stats["records_dead_lettered"], zero),
        "logged": pc.fill_null(stats["errors_logged"], zero),
        "poll_ms": step_sum(_POLL_STEPS), "put_ms": pc.struct_field(timings, "put"),
        "commit_ms": pc.struct_field(timings, "commit"),
    })


def _parse_stats(column: pa.ChunkedArray) -> pa.Table:
    """The stats JSON of every row, parsed by Arrow's JSON reader in one pass (one object a line: json.dumps
    writes none with a newline inside); when a row is not what the runner writes, row by row, that row's
    numbers that are not numbers taken as absent, so one damaged row cannot fail every scrape."""
    texts = pc.fill_null(column, "{}").combine_chunks().cast(pa.large_string())
    if len(texts) == 0:
        return _STATS.empty_table()
    joined = pc.binary_join(pa.LargeListArray.from_arrays(pa.array([0, len(texts)], pa.int64()), texts),
                            pa.scalar("\n", pa.large_string()))
    body = joined[0].as_buffer()
    options = pajson.ParseOptions(explicit_schema=_STATS, unexpected_field_behavior="ignore")
    try:
        parsed = pajson.read_json(pa.BufferReader(body), parse_options=options,
                                  read_options=pajson.ReadOptions(use_threads=True, block_size=4 << 20))
        if parsed.num_rows == len(texts):  # a stats text with a newline inside would shift every later row
            return parsed
    except pa.ArrowInvalid:
        pass
    return pa.Table.from_pylist([_stats_row(t) for t in texts.to_pylist()], schema=_STATS)


def _stats_row(text: str) -> dict[str, Any]:
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    found = found if isinstance(found, dict) else {}

    def number(value: Any, kind: type) -> Any:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return kind(value) if ok else None

    timings = found.get("timings_ms") if isinstance(found.get("timings_ms"), dict) else {}
    row: dict[str, Any] = {f.name: number(found.get(f.name), int) for f in _STATS if f.name != "timings_ms"}
    row["timings_ms"] = {step: number(timings.get(step), float) for step in _STEPS}
    return row


def _rows(table: pa.Table, keys: list[str]) -> dict[tuple[str, int], dict[str, Any]]:
    """Aggregated rows by key: one per task, at most MAX_CONNECTORS connectors' tasks."""
    return {tuple(r[k] for k in keys): r for r in table.to_pylist()}


# --- the families ------------------------------------------------------------------------------------

_TASK_COUNTS = ("running", "paused", "failed", "unassigned", "restarting")


def _worker_metrics(out: _Exposition, connectors: list[_Connector], statuses) -> None:
    g = "connect-worker-metrics"
    out.add(g, "connector-count", "The number of connectors in the lake's configs table (every worker of a lake "
                                  "runs any of them).", {}, len(connectors))
    out.add(g, "task-count", "The number of tasks of the lake's connectors (tasks.max each; none for a STOPPED "
                             "one).", {}, sum(c.tasks for c in connectors))
    for c in connectors[:MAX_CONNECTORS]:
        labels = {"connector": c.name}
        states = [_state(c, t, statuses).lower() for t in range(c.tasks)]
        out.add(g, "connector-total-task-count", "The number of tasks of the connector.", labels, c.tasks)
        for state in _TASK_COUNTS:
            out.add(g, f"connector-{state}-task-count", f"The number of {state} tasks of the connector.", labels,
                    states.count(state))


def _connector_metrics(out: _Exposition, c: _Connector, statuses) -> None:
    g = "connector-metrics"
    # String attributes, as the exporter's rules show them: a series of value 1 with the value as a label.
    status = c.target if c.target != RUNNING else statuses.get((c.name, CONNECTOR_TASK), UNASSIGNED)
    out.add(g, "status", "The status of the connector. One of 'unassigned', 'running', 'paused', 'stopped', "
                         "'failed', or 'restarting'.", {"connector": c.name, "status": status.lower()}, 1)
    out.add(g, "connector-class", "The name of the connector class.",
            {"connector": c.name, "connector_class": c.class_name}, 1)
    out.add(g, "connector-type", "The type of the connector. One of 'source' or 'sink'.",
            {"connector": c.name, "connector_type": c.kind}, 1)
    if c.version:
        out.add(g, "connector-version", "The version of the connector class, as reported by the connector.",
                {"connector": c.name, "connector_version": c.version}, 1)


def _task_metrics(out: _Exposition, c: _Connector, task: int, statuses, total: Mapping[str, Any],
                  window: Mapping[str, Any], last_error: dt.datetime | None) -> None:
    labels = {"connector": c.name, "task": str(task)}
    seconds = RATE_WINDOW.total_seconds()
    per = f"over the batches that ended in the last {int(seconds // 60)} minutes"
    nan = float("nan")

    def avg(column: str) -> float:  # Kafka's Avg and Max are NaN with no sample in the window
        value = window.get(column)
        return nan if value is None else float(value)

    g = "connector-task-metrics"
    out.add(g, "status", "The status of the connector task. One of 'unassigned', 'running', 'paused', 'failed', or "
                         "'restarting'.", {**labels, "status": _state(c, task, statuses).lower()}, 1)
    out.add(g, "batch-size-avg", f"The average number of records in the task's batches, {per}.", labels,
            avg("read_mean"))
    out.add(g, "batch-size-max", f"The number of records in the task's largest batch, {per}.", labels,
            avg("read_max"))
    out.add(g, "offset-commit-avg-time-ms", f"The average time in milliseconds of the task's offset commits (a "
                                            f"batch's commit step), {per}.", labels, avg("commit_ms_mean"))
    out.add(g, "offset-commit-max-time-ms", f"The maximum time in milliseconds of the task's offset commits (a "
                                            f"batch's commit step), {per}.", labels, avg("commit_ms_max"))
    read, written = total.get("read", 0), total.get("written", 0)
    if c.kind == "source":
        g = "source-task-metrics"
        out.add(g, "source-record-poll-total", "The records polled (before transformation) by the task's committed "
                                               "batches.", labels, read)
        out.add(g, "source-record-poll-rate", f"Records polled (before transformation) per second, {per}.", labels,
                (window.get("read_sum") or 0) / seconds)
        out.add(g, "source-record-write-total", "The records the task's committed batches wrote to topics, after "
                                                "transformations.", labels, written)
        out.add(g, "source-record-write-rate", f"Records written to topics per second, {per}.", labels,
                (window.get("written_sum") or 0) / seconds)
        out.add(g, "poll-batch-avg-time-ms", f"The average time in milliseconds of a batch from plan to its records "
                                             f"written, {per}.", labels, avg("poll_ms_mean"))
        out.add(g, "poll-batch-max-time-ms", f"The maximum time in milliseconds of a batch from plan to its records "
                                             f"written, {per}.", labels, avg("poll_ms_max"))
    elif c.kind == "sink":
        g = "sink-task-metrics"
        out.add(g, "sink-record-read-total", "The records the task's committed batches read from topics, before "
                                             "transformations.", labels, read)
        out.add(g, "sink-record-read-rate", f"Records read from topics per second, {per}.", labels,
                (window.get("read_sum") or 0) / seconds)
        out.add(g, "put-batch-avg-time-ms", f"The average time in milliseconds of a batch's put, {per}.", labels,
                avg("put_ms_mean"))
        out.add(g, "put-batch-max-time-ms", f"The maximum time in milliseconds of a batch's put, {per}.", labels,
                avg("put_ms_max"))
        out.add(g, "offset-commit-completion-total", "The task's offset commits that completed: its committed "
                                                     "batches.", labels, total.get("batches", 0))
        out.add(g, "offset-commit-skip-total", "The task's offset commits received too late and skipped: none, a "
                                               "batch commits its offsets itself, synchronously.", labels, 0)
    g = "task-error-metrics"
    errors = total.get("errors", 0)
    out.add(g, "total-record-errors", "The records of the task's committed batches that failed and were "
                                      "tolerated (errors.tolerance=all).", labels, errors)
    out.add(g, "total-records-skipped", "The records the task's committed batches skipped for errors.", labels,
            errors)
    out.add(g, "total-errors-logged", "The errors the task logged (errors.log.enable=true).", labels,
            total.get("logged", 0))
    out.add(g, "deadletterqueue-produce-requests", "The records the task's committed batches wrote to the dead "
                                                   "letter queue (a sink's; a source task's is 0, as in Kafka).",
            labels, total.get("dead_lettered", 0))
    out.add(g, "last-error-timestamp", "The epoch timestamp in milliseconds of the end of the task's last batch "
                                       "that had a failed record; 0 if none.", labels,
            0 if last_error is None else int(last_error.timestamp() * 1000))
