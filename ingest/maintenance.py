"""Maintenance of the lake's own Delta tables: the topics and the connectors' state.

Every batch commits to its topics and to the state tables, and each commit adds small files and a log
entry: an hourly connector makes ~9,000 commits a year per topic. Maintenance keeps these tables small and
fast to plan against, and applies the topics' retention and compaction as Kafka's log cleaner does.
The operations, in the order they run on each table:

- `clean` (topics): `cleanup.policy` applied: records past `retention.ms` / `retention.bytes` removed,
  compacted topics keep the newest record of each key (`ingest.topics.cleanup.clean_topic`). Offsets never change.
- `history` (state tables): the offsets, configs, status and runs tables keep every row younger than
  the history window and, of the older rows, the newest of each key (latest wins), in one file.
- `compact`: small files merged into files of about `target_file_bytes` (delta-rs OPTIMIZE: the same
  rows, offsets and app transactions; a commit that changes no data).
- `vacuum`: files no table version within the retention window references are deleted, with the files
  of batches that crashed before their commit (the window is kept as Delta's
  `delta.deletedFileRetentionDuration`).
- `checkpoint`: a Delta checkpoint, then log entries older than the log retention removed (Delta's
  `delta.logRetentionDuration`, 30 days unless set here).

Safe while connectors run: a topic append is pinned to the table version its offsets were computed from,
and accepts commits of maintenance in between (`MAINTENANCE_KEY`); state appends are blind and commit on
whatever version they find; the history rewrite is pinned to the version it read and is retried when a
batch commits meanwhile, so no batch is lost. The vacuum window must outlast the longest batch: the files
of a batch are written before its commit, and a shorter window could delete them in flight.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError, DeltaError

from ingest.delta._commit import MAINTENANCE_KEY, commit_files, plan_write
from ingest.delta._files import write_files
from ingest.delta._table import first_line, is_local, normalize_uri, open_table
from ingest.delta.read import snapshot_files
from ingest.errors import ConfigError, LakeConnectError, Problem, RetriableError, StateError
from ingest.config import secrets
from ingest.state.stores import EMPTY, ConfigStore, OffsetStore, RunStore, StatusStore
from ingest.topics._lock import lake_lock

log = logging.getLogger("lakeconnect.maintenance")

CLEAN, HISTORY, COMPACT, CHECKPOINT, VACUUM = "clean", "history", "compact", "checkpoint", "vacuum"
OPERATIONS = (CLEAN, HISTORY, COMPACT, VACUUM, CHECKPOINT)
"""In the order they run: a checkpoint after vacuum keeps no record of the files vacuum deleted."""
DELTA_DEFAULT_VACUUM_HOURS = 168
MIN_VACUUM_HOURS = 1.0
LOG_RETENTION, DELETED_FILE_RETENTION = "delta.logRetentionDuration", "delta.deletedFileRetentionDuration"
HISTORY_ATTEMPTS = 4

# A state table is recognised by its columns; its key is what "latest wins" is per.
_STATE_KINDS: dict[tuple[str, ...], tuple[str, tuple[str, ...]]] = {
    tuple(ConfigStore.schema.names): ("configs", ("connector",)),
    tuple(OffsetStore.schema.names): ("offsets", ("connector", "partition")),
    tuple(StatusStore.schema.names): ("status", ("connector", "task")),
    tuple(RunStore.schema.names): ("runs", ("connector", "task")),
}


@dataclass(frozen=True)
class Settings:
    """What maintenance does. Hours may be fractional."""

    operations: tuple[str, ...] = OPERATIONS
    target_file_bytes: int = 128 * 2**20
    vacuum_retention_hours: float = 168.0
    log_retention_hours: float | None = None
    history_retention_hours: float = 168.0
    allow_short_vacuum: bool = False
    """Below MIN_VACUUM_HOURS only when no batch can be in flight (benchmarks, tests)."""

    def check(self) -> None:
        problems = []
        unknown = [o for o in self.operations if o not in OPERATIONS]
        if unknown:
            problems.append(Problem("--only", f"unknown operation(s) {unknown}; choose from {list(OPERATIONS)}"))
        if self.target_file_bytes < 1 << 20:
            problems.append(Problem("--target-file-mb", "must be at least 1 (MiB)"))
        if self.vacuum_retention_hours < 0 or (self.vacuum_retention_hours < MIN_VACUUM_HOURS
                                               and not self.allow_short_vacuum):
            problems.append(Problem("--vacuum-retention-hours", f"must be at least {MIN_VACUUM_HOURS:g}, not "
                                    f"{self.vacuum_retention_hours:g}: a batch writes its files before it commits "
                                    "them, and a shorter window could delete the files of a batch in flight. "
                                    "Use a window longer than your longest batch (Delta's default: 168)"))
        for name, value in (("--log-retention-hours", self.log_retention_hours),
                            ("--history-retention-hours", self.history_retention_hours)):
            if value is not None and value < 0:
                problems.append(Problem(name, f"must be 0 or more hours, not {value:g}"))
        if problems:
            raise ConfigError(problems)


@dataclass(frozen=True)
class Target:
    """One table to maintain: a topic or a state table."""

    kind: str  # "topic" or "state"
    name: str
    uri: str


@dataclass
class TableReport:
    kind: str
    name: str
    uri: str
    done: dict[str, Any] = field(default_factory=dict)
    files_before: int = 0
    files_after: int = 0
    live_bytes: int = 0
    stored_bytes: int | None = None
    error: str | None = None
    retriable: bool = False
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "uri": self.uri, "done": self.done,
                "files_before": self.files_before, "files_after": self.files_after, "live_bytes": self.live_bytes,
                "stored_bytes": self.stored_bytes, "error": self.error, "retriable": self.retriable, "seconds": round(self.seconds, 2)}


def _props(operation: str) -> CommitProperties:
    return CommitProperties(custom_metadata={MAINTENANCE_KEY: operation})


def discover(lake_root: str, topics: Sequence[str] | None, state_tables: Sequence[str],
             include_state: bool = True, storage_options: Mapping[str, str] | None = None) -> list[Target]:
    """The tables to maintain: the named topics (or every topic of the lake), then the state tables under
    `_connect` (every Delta table there on a local lake; the worker's four on a remote one)."""
    from ingest.topics.layout import TOPICS_DIR
    from ingest.topics.table import list_topics

    root = normalize_uri(lake_root)
    if topics is None:
        topics = list_topics(root, storage_options)
    out = [Target("topic", t, f"{root}/{TOPICS_DIR}/{t}") for t in topics]
    if not include_state:
        return out
    state_root = f"{root}/_connect"
    names = set(state_tables)
    if is_local(root) and os.path.isdir(state_root):
        for directory, subdirs, _ in os.walk(state_root):
            if "_delta_log" in subdirs:
                names.add(os.path.relpath(directory, state_root).replace(os.sep, "/"))
                subdirs.clear()
    out += [Target("state", n, f"{state_root}/{n}") for n in sorted(names)]
    return out


def _stored_bytes(uri: str) -> int | None:
    if not is_local(uri):
        return None
    total = 0
    for directory, _, files in os.walk(uri):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(directory, f))
            except OSError:
                pass
    return total


def _live(dt: DeltaTable) -> tuple[int, int]:
    acts = pa.table(dt.get_add_actions(flatten=True))
    return acts.num_rows, (pc.sum(acts.column("size_bytes")).as_py() or 0) if acts.num_rows else 0


def compact_history(uri: str, key: Sequence[str], cutoff_us: int, storage_options: Mapping[str, str] | None,
                    *, runs: bool = False) -> dict[str, int] | None:
    """Rewrite a state table to the rows written since `cutoff_us` plus, of the older ones, the newest
    per `key` (for runs: the newest that is not EMPTY, which is what the next batch's number follows).
    None when there is nothing to drop and at most one file. One commit pinned to the version read: a
    batch committing meanwhile makes it RetriableError, and its rows are not lost."""
    dt = open_table(uri, storage_options)
    if dt is None:
        return None
    version = dt.version()
    try:
        rows = dt.to_pyarrow_dataset().to_table()
    except (DeltaError, OSError, pa.ArrowInvalid) as e:
        raise StateError(f"state table {uri} cannot be read ({first_line(e)}); restore it from backup") from None
    files = snapshot_files(dt, uri)
    n = rows.num_rows
    if n == 0:
        return None
    pos = pa.array(range(n), pa.int64())
    ordered = rows.select(list(key) + ["written_at"]).append_column("_i", pos)
    recent = pc.greater_equal(pc.cast(rows.column("written_at"), pa.int64()), cutoff_us)
    candidates = ordered
    if runs:
        candidates = ordered.filter(pc.not_equal(rows.column("state"), EMPTY))
    newest = (candidates.sort_by([("written_at", "ascending"), ("_i", "ascending")])
              .append_column("_p", pa.array(range(candidates.num_rows), pa.int64())))
    best = newest.group_by(list(key), use_threads=False).aggregate([("_p", "max")]).column("_p_max")
    keep_latest = newest.column("_i").take(best).combine_chunks()
    mask = pc.or_(pc.fill_null(recent, False), pc.is_in(pos, value_set=keep_latest))
    kept = rows.filter(mask)
    if kept.num_rows == n and len(files) <= 1:
        return None
    plan = plan_write(uri, kept.schema, mode="append", schema_mode=None, storage_options=storage_options,
                      expected_version=version)
    written = write_files(kept.to_batches(), plan.file_spec()) if kept.num_rows else []
    commit_files(plan, written, removes=files, commit_metadata={MAINTENANCE_KEY: HISTORY})
    return {"rows_before": n, "rows_after": kept.num_rows, "files_removed": len(files), "files_added": len(written)}


def _retention_property(hours: float) -> str:
    return f"interval {round(hours * 3600)} seconds"


class Maintainer:
    def __init__(self, lake_root: str, storage_options: Mapping[str, str] | None, settings: Settings,
                 spark=None, now: float | None = None):
        settings.check()
        self.lake_root = normalize_uri(lake_root)
        self.storage_options = dict(storage_options) if storage_options else None
        self.settings = settings
        self.spark = spark
        self.now = now

    def run(self, targets: Sequence[Target]) -> list[TableReport]:
        return [self.maintain(t) for t in targets]

    def maintain(self, target: Target) -> TableReport:
        report = TableReport(target.kind, target.name, target.uri)
        started = time.monotonic()
        try:
            # Two maintainers of one table would undo each other's work; batches do not take this lock.
            with lake_lock(self.lake_root, f"maintenance-{target.kind}-{target.name.replace('/', '__')}",
                           timeout=0.5):
                self._maintain(target, report)
        except RetriableError as e:
            report.retriable = True
            report.error = (f"{e}" if "lock" not in str(e) else
                            f"another maintenance run is working on {target.kind} '{target.name}'; it was left "
                            "to that run: run again once it is done")
        except LakeConnectError as e:
            report.error = str(e)
        except (DeltaError, OSError) as e:
            report.error = f"{target.kind} '{target.name}': {first_line(e)}"
        report.seconds = time.monotonic() - started
        if report.error:  # a storage error may quote a configured value: never show a secret
            report.error = secrets.scrub(report.error)
            log.error("maintenance of %s '%s' failed: %s", target.kind, target.name, report.error)
        return report

    def _maintain(self, target: Target, report: TableReport) -> None:
        ops = self.settings.operations
        dt = open_table(target.uri, self.storage_options)
        if dt is None:
            if target.kind == "state":
                return  # not written yet (a worker whose connectors have not run)
            raise StateError(f"topic '{target.name}' does not exist (no table at {target.uri}): check its name "
                             "(`lakeconnect topics list`)")
        report.files_before = _live(dt)[0]
        if target.kind == "topic" and CLEAN in ops:
            report.done[CLEAN] = self._clean(target)
        if target.kind == "state" and HISTORY in ops:
            report.done[HISTORY] = self._history(target, dt)
        if COMPACT in ops:
            report.done[COMPACT] = self._compact(target)
        if VACUUM in ops:
            report.done[VACUUM] = self._vacuum(target)
        if CHECKPOINT in ops:
            report.done[CHECKPOINT] = self._checkpoint(target)
        report.files_after, report.live_bytes = _live(open_table(target.uri, self.storage_options))
        report.stored_bytes = _stored_bytes(target.uri)

    def _clean(self, target: Target) -> dict[str, Any] | None:
        from ingest.topics.cleanup import clean_topic
        from ingest.topics.table import TopicTable

        result = clean_topic(TopicTable(self.lake_root, target.name, self.storage_options, spark=self.spark),
                             now_ms=None if self.now is None else int(self.now * 1000), spark=self.spark)
        return result.to_json() if result.table_version is not None else None  # None: nothing to remove

    def _history(self, target: Target, dt: DeltaTable) -> dict[str, int] | None:
        kind = _STATE_KINDS.get(tuple(dt.schema().to_arrow().names))
        if kind is None:
            return None  # a connector's own state (JDBC watermarks, schema history): its owner decides
        name, key = kind
        now = self.now if self.now is not None else time.time()
        cutoff = int((now - self.settings.history_retention_hours * 3600) * 1_000_000)
        for attempt in range(HISTORY_ATTEMPTS):
            try:
                return compact_history(target.uri, key, cutoff, self.storage_options, runs=name == "runs")
            except RetriableError:
                if attempt == HISTORY_ATTEMPTS - 1:
                    raise RetriableError(f"state table '{target.name}': batches kept committing while its history "
                                         f"was rewritten ({HISTORY_ATTEMPTS} attempts); nothing was lost, run "
                                         "maintenance again") from None
                time.sleep(0.2 * 2**attempt)
        return None

    def _compact(self, target: Target) -> dict[str, Any] | None:
        dt = open_table(target.uri, self.storage_options)
        try:
            metrics = dt.optimize.compact(target_size=self.settings.target_file_bytes, commit_properties=_props(COMPACT))
        except CommitFailedError as e:
            raise RetriableError(f"{target.kind} '{target.name}': another process rewrote the files being merged "
                                 f"({first_line(e)}); nothing was lost, run maintenance again") from e
        if not metrics.get("numFilesRemoved"):
            return None
        return {"files_removed": metrics["numFilesRemoved"], "files_added": metrics["numFilesAdded"]}

    def _checkpoint(self, target: Target) -> dict[str, Any]:
        dt = open_table(target.uri, self.storage_options)
        hours = self.settings.log_retention_hours
        if hours is not None:
            wanted = _retention_property(hours)
            if dt.metadata().configuration.get(LOG_RETENTION) != wanted:
                dt.alter.set_table_properties({LOG_RETENTION: wanted},
                                              commit_properties=_props(CHECKPOINT))
                dt = open_table(target.uri, self.storage_options)
        dt.create_checkpoint()
        before = _log_entries(target.uri)
        dt.cleanup_metadata()
        after = _log_entries(target.uri)
        return {"version": dt.version(), **({"log_entries_removed": before - after} if before is not None else {})}

    def _vacuum(self, target: Target) -> dict[str, Any] | None:
        dt = open_table(target.uri, self.storage_options)
        hours = self.settings.vacuum_retention_hours
        # Delta's own name for the window: checkpoints keep the records of removed files this long.
        wanted, current = _retention_property(hours), dt.metadata().configuration.get(DELETED_FILE_RETENTION)
        if current != wanted and not (current is None and hours == DELTA_DEFAULT_VACUUM_HOURS):
            dt.alter.set_table_properties({DELETED_FILE_RETENTION: wanted}, commit_properties=_props(VACUUM))
            dt = open_table(target.uri, self.storage_options)
        try:
            deleted = dt.vacuum(retention_hours=int(hours), dry_run=False, enforce_retention_duration=False,
                                full=True, commit_properties=_props(VACUUM))
        except CommitFailedError as e:
            raise RetriableError(f"{target.kind} '{target.name}': vacuum lost a race ({first_line(e)}); run again") from e
        return {"files_deleted": len(deleted)} if deleted else None


def _log_entries(uri: str) -> int | None:
    path = os.path.join(uri, "_delta_log")
    if not is_local(uri) or not os.path.isdir(path):
        return None
    return sum(1 for f in os.listdir(path) if f.endswith(".json"))


def summary(reports: Sequence[TableReport]) -> str:
    lines = []
    for r in reports:
        done = ", ".join(f"{op} {json.dumps(v, sort_keys=True)}" for op, v in r.done.items() if v) or "nothing to do"
        size = f"{r.live_bytes / 2**20:.1f} MiB live" + (
            f", {r.stored_bytes / 2**20:.1f} MiB stored" if r.stored_bytes is not None else "")
        status = f"FAILED: {r.error}" if r.error else done
        lines.append(f"{r.kind} {r.name}: {r.files_before} -> {r.files_after} files ({size}); {status}")
    return "\n".join(lines)
