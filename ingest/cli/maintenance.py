"""`lakeconnect maintenance run`: retention, compaction and upkeep of the lake's topic and state tables.

Exit codes: 0 when every table was maintained; 75 when every failure was a race another run can win
(a batch or another maintenance run committed meanwhile: nothing lost, run again); 1 otherwise.
"""

from __future__ import annotations

import argparse
import json

from ingest.config.worker import (
    CONFIGS_TABLE,
    LAKE_ROOT,
    OFFSET_STORAGE_TOPIC,
    RUNS_TABLE,
    STATUS_TABLE,
    TOPIC_BACKEND,
    load_worker,
    spark_settings,
    storage_options,
)
from ingest.config.configdef import secret_values
from ingest.errors import ConfigError, Problem
from ingest.config import secrets

RETRY_EXIT_CODE = 75


def _operations(value: str | None) -> tuple[str, ...]:
    from ingest.maintenance import OPERATIONS

    if not value:
        return OPERATIONS
    ops = tuple(o.strip() for o in value.split(",") if o.strip())
    unknown = [o for o in ops if o not in OPERATIONS]
    if unknown or not ops:
        raise ConfigError([Problem("--only", f"unknown operation(s) {unknown or [value]}; a comma-separated list of "
                                             f"{', '.join(OPERATIONS)}")])
    return ops


def cmd_run(args) -> int:
    from ingest.maintenance import CLEAN, Maintainer, Settings, discover, summary

    worker = load_worker(args.worker)
    secrets.register(secret_values(worker.originals))
    settings = Settings(operations=_operations(args.only), target_file_bytes=args.target_file_mb * 2**20,
                        vacuum_retention_hours=args.vacuum_retention_hours,
                        log_retention_hours=args.log_retention_hours,
                        history_retention_hours=args.history_retention_hours)
    settings.check()
    lake = str(worker[LAKE_ROOT]).rstrip("/")
    kafka = worker[TOPIC_BACKEND] == "kafka"
    if kafka and args.topic:
        raise ConfigError([Problem("--topic", "this worker's topics live in Kafka (topic.backend=kafka), whose "
                                              "brokers apply retention and compaction; maintain state tables only")])
    topics = [] if kafka or args.state_only else (args.topic or None)
    state = [worker[n] for n in (CONFIGS_TABLE, OFFSET_STORAGE_TOPIC, STATUS_TABLE, RUNS_TABLE)]
    targets = discover(lake, topics, state, include_state=not args.topics_only,
                       storage_options=storage_options(worker) or None)
    spark = None
    if CLEAN in settings.operations and any(t.kind == "topic" for t in targets):
        from ingest.spark import get_spark

        spark = get_spark(spark_settings(worker))
    reports = Maintainer(lake, storage_options(worker) or None, settings, spark=spark).run(targets)
    if args.json:
        for r in reports:
            print(json.dumps(r.to_json(), sort_keys=True, default=str))
    else:
        print(summary(reports) or "no tables to maintain")
    failed = [r for r in reports if r.error]
    if not failed:
        return 0
    return RETRY_EXIT_CODE if all(r.retriable for r in failed) else 1


def register(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("maintenance", help="topic retention and compaction, small-file merging, checkpoints, "
                                           "vacuum and state history").add_subparsers(dest="action", metavar="ACTION",
                                                                                     required=True)
    p = m.add_parser("run", help="maintain every topic and state table of the lake (or those named)")
    p.add_argument("--topic", action="append", metavar="NAME", help="only this topic (repeatable; default: every "
                   "topic of the lake)")
    p.add_argument("--topics-only", action="store_true", help="leave the state tables alone")
    p.add_argument("--state-only", action="store_true", help="leave the topics alone")
    p.add_argument("--only", metavar="OPS", help="comma-separated operations: clean (topic retention and compaction), "
                   "history (state tables' old rows), compact (merge small files), checkpoint (and old log "
                   "entries), vacuum (unreferenced files); default all")
    p.add_argument("--target-file-mb", type=int, default=128, help="size of merged files (default 128)")
    p.add_argument("--vacuum-retention-hours", type=int, default=168,
                   help="files unreferenced for this long are deleted; must outlast the longest batch "
                        "(default 168, at least 1)")
    p.add_argument("--log-retention-hours", type=float, default=None,
                   help="Delta log entries older than this are removed after a checkpoint; sets the table's "
                        "delta.logRetentionDuration (default: leave it, 30 days unless set)")
    p.add_argument("--history-retention-hours", type=float, default=168.0,
                   help="state rows younger than this are all kept; of older ones the newest per key (default 168)")
    p.add_argument("--json", action="store_true", help="one JSON report per table")
    p.set_defaults(func=cmd_run)
