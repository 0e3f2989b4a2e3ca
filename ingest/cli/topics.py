"""`lakeconnect topics …`: Kafka's console tools over the worker's topics (Delta tables or a Kafka cluster).

`produce` reads one record per line from stdin, split by kafka-console-producer's `--property` settings
(parse.key, key.separator, parse.headers, null.marker, …); `consume` prints each record as
kafka-console-consumer's default formatter does (print.key, print.timestamp, print.headers, …). The
properties and their parsing are in `ingest.cli.console`.
"""

from __future__ import annotations

import argparse
import io
import itertools
import sys
import time
import uuid

from ingest.cli.console import (
    FORMATTER_PROPERTIES, READER_PROPERTIES, ConsumedRecord, LineReader, ProducedLine, RecordFormatter, read_lines,
    tool_properties, write_all,
)
from ingest.config.worker import LAKE_ROOT, OFFSET_STORAGE_TOPIC, load_worker, spark_settings, storage_options
from ingest.errors import ConfigError, DataError, Problem

PRODUCE_CHUNK = 100_000


def _context(args):
    worker = load_worker(args.worker)
    return str(worker[LAKE_ROOT]).rstrip("/"), storage_options(worker) or None, worker


def _backend(args):
    """The worker's topics: Delta tables under the lake, or its Kafka cluster (`topic.backend`), written
    to as Kafka's console producer does (no transactions)."""
    from ingest.topics.backend import open_topics

    lake, so, worker = _context(args)
    return open_topics(worker.originals, lake, so, transactional=False), worker


def _topic(args):
    topics, worker = _backend(args)
    return topics.topic(args.topic), worker


def _spark(worker):
    from ingest.spark import get_spark

    return get_spark(spark_settings(worker))


def _pairs(flag: str, given: list[str] | None) -> dict[str, str]:
    """NAME=VALUE arguments (a value may hold commas: cleanup.policy=compact,delete)."""
    pairs, problems = {}, []
    for c in given or []:
        k, sep, v = c.partition("=")
        if not sep or not k.strip():
            problems.append(Problem(flag, f"expected name=value, got '{c}'"))
        pairs[k.strip()] = v.strip()
    if problems:
        raise ConfigError(problems)
    return pairs


def cmd_create(args) -> int:
    configs = _pairs("--config", args.config)
    table, _ = _topic(args)
    table.create(args.partitions, configs, if_not_exists=args.if_not_exists,
                 replication_factor=args.replication_factor, replication_key="--replication-factor")
    print(f"Created topic {args.topic}.")
    return 0


def cmd_alter(args) -> int:
    updates = _pairs("--add-config", args.add_config)
    if not updates and not args.delete_config:
        raise ConfigError([Problem("--add-config", "nothing to change: give --add-config NAME=VALUE or "
                                                   "--delete-config NAME")])
    table, _ = _topic(args)
    configs = table.alter_configs(updates, args.delete_config or [])
    print(f"Completed updating config for topic {args.topic}.")
    print("Configs: " + ",".join(f"{k}={v}" for k, v in sorted(configs.items())))
    return 0


def cmd_list(args) -> int:
    topics, _ = _backend(args)
    for t in topics.names():
        print(t)
    return 0


def cmd_describe(args) -> int:
    table, _ = _topic(args)
    d = table.describe()
    configs = ",".join(f"{k}={v}" for k, v in sorted(d.configs.items()))
    print(f"Topic: {d.name}\tPartitionCount: {d.partitions}\tConfigs: {configs}")
    for p in range(d.partitions):
        print(f"\tTopic: {d.name}\tPartition: {p}\tStartOffset: {d.start_offsets.get(p, 0)}"
              f"\tEndOffset: {d.end_offsets.get(p, 0)}")
    return 0


def _stdin():
    """stdin as UTF-8 text, undecodable bytes replaced, line ends kept for `read_lines` (as Java reads it)."""
    binary = getattr(sys.stdin, "buffer", None)
    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline="") if binary else sys.stdin


def _parsed_chunk(reader: LineReader, lines, before: int) -> list[ProducedLine]:
    """The next lines' records (up to PRODUCE_CHUNK); `before` lines were written. A malformed line fails the
    chunk before any of it is written: nothing at all when the input is one chunk."""
    records, problems = [], []
    for i, line in enumerate(itertools.islice(lines, PRODUCE_CHUNK)):
        try:
            records.append(reader.parse(line, before + i + 1))
        except DataError as e:
            problems.append(Problem(None, str(e)))
    if problems:
        written = ("nothing was written" if before == 0 else
                   f"the records of lines 1-{before} were written, nothing from line {before + 1} on")
        shown = problems[:10] + ([Problem(None, f"… and {len(problems) - 10} more malformed lines")]
                                 if len(problems) > 10 else [])
        raise ConfigError(shown + [Problem(None, f"{written}; fix the lines (or set --property ignore.error=true "
                                                 f"to take a line without its separator whole) and run again")])
    return records


def cmd_produce(args) -> int:
    """kafka-console-producer: one record per stdin line, split as Kafka's LineMessageReader splits it."""
    import pyarrow as pa

    from ingest.topics.layout import HEADER_TYPE

    reader = LineReader(tool_properties(READER_PROPERTIES, args.property, "kafka-console-producer"))
    lines = read_lines(_stdin())
    chunk = _parsed_chunk(reader, lines, 0)  # before the topic is created: a bad line leaves nothing behind
    table, worker = _topic(args)
    if not table.exists():
        table.create(args.partitions, if_not_exists=True)
        print(f"[topic {args.topic} created with {args.partitions} partition(s)]", file=sys.stderr)
    spark = _spark(worker) if chunk else None
    run_id = uuid.uuid4().hex
    total = 0
    while chunk:
        now = int(time.time() * 1000)
        arrow = pa.table({
            "partition": pa.nulls(len(chunk), pa.int32()),
            "key": pa.array([r.key for r in chunk], pa.binary()),
            "value": pa.array([r.value for r in chunk], pa.binary()),
            "headers": pa.array([None if r.headers is None else [{"key": k, "value": v} for k, v in r.headers]
                                 for r in chunk], pa.list_(HEADER_TYPE)),
            "timestamp": pa.array([now] * len(chunk), pa.timestamp("ms", tz="UTC")),
            "seq": pa.array(range(total, total + len(chunk)), pa.int64()),
        })
        # one app transaction per chunk: a chunk is written once, whatever retries the append makes
        table.append(spark.createDataFrame(arrow), app_id=f"console-producer-{run_id}",
                     version=total // PRODUCE_CHUNK + 1)
        total += len(chunk)
        chunk = _parsed_chunk(reader, lines, total)
    print(f"Produced {total} records to {args.topic}", file=sys.stderr)
    return 0


def _group_positions(topics, worker, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    """The group's committed positions in `topic`, as a sink connector finds its own (`connect-<name>`): the
    lake's offsets table, then the Kafka cluster's group where another client moved it."""
    committed = {e.partition["kafka_partition"]: e.offset["kafka_offset"]
                 for e in _offsets_table(worker).committed(group).values()
                 if e.partition.get("kafka_topic") == topic and "kafka_offset" in (e.offset or {})}
    for (_, p), found in topics.group_positions(group, [(topic, p) for p in partitions]).items():
        if p not in committed or not found.ours:
            committed[p] = found.offset
    return committed


def _commit_group(topics, worker, group: str, topic: str, positions: dict[int, int]) -> None:
    """The group's next positions, where `_group_positions` reads them (the lake's table, and the Kafka
    cluster's group on that backend), as kafka-console-consumer's auto-commit leaves them when it exits."""
    from ingest.state.tables import canonical_json

    _offsets_table(worker).commit(group, {canonical_json({"kafka_partition": p, "kafka_topic": topic}):
                                          {"kafka_offset": o} for p, o in positions.items()}, task=0, batch_id=0)
    topics.commit_group(group, {(topic, p): o for p, o in positions.items()})


def _offsets_table(worker):
    from ingest.state.stores import OffsetStore, state_uri

    return OffsetStore(state_uri(str(worker[LAKE_ROOT]), worker[OFFSET_STORAGE_TOPIC]), storage_options(worker) or {})


def cmd_consume(args) -> int:
    """kafka-console-consumer over the records there are now: printed as Kafka's DefaultMessageFormatter
    prints them; with --group, from the group's committed positions and committing where it stopped."""
    from pyspark.sql import functions as F

    formatter = RecordFormatter(tool_properties(FORMATTER_PROPERTIES, args.property, "kafka-console-consumer"))
    if args.group is not None and (args.partition is not None or args.offset is not None):
        raise ConfigError([Problem("--group", "cannot be given with --partition or --offset, as "
                                              "kafka-console-consumer refuses them: a group's consumer reads every "
                                              "partition from the group's positions; drop one of them")])
    topics, worker = _backend(args)
    table = topics.topic(args.topic)
    d = table.describe()
    if args.partition is not None and not 0 <= args.partition < d.partitions:
        raise ConfigError([Problem("--partition", f"topic {args.topic} has partitions 0..{d.partitions - 1}")])
    parts = [args.partition] if args.partition is not None else list(range(d.partitions))
    committed = _group_positions(topics, worker, args.group, args.topic, parts) if args.group is not None else {}
    ranges = {}
    for p in parts:
        first, end = d.start_offsets.get(p, 0), d.end_offsets.get(p, 0)
        if first <= committed.get(p, -1) <= end:
            start = committed[p]
        else:  # no position, or one outside the log: auto.offset.reset, earliest with --from-beginning
            start = first if (args.from_beginning or args.offset is not None) else end
        if args.offset is not None:
            start = max(start, args.offset)
        ranges[p] = (start, end)
    # Kafka's loop: `while (count < max || max == -1)`; -1 (or none) is no limit, another negative one prints nothing
    limit = None if args.max_messages in (None, -1) else max(args.max_messages, 0)
    positions = {p: s for p, (s, _) in ranges.items()}
    count = 0
    if limit != 0 and any(e > s for s, e in ranges.values()):
        _spark(worker)
        rows = table.read({p: r for p, r in ranges.items() if r[1] > r[0]}).select(
            "partition", "offset", F.expr("unix_millis(timestamp)").alias("timestamp"), "timestamp_type",
            "key", "value", "headers").orderBy(F.col("partition"), F.col("offset"))
        if limit is not None:
            rows = rows.limit(limit)

        def formatted():
            nonlocal count
            for row in rows.toLocalIterator():
                positions[row["partition"]] = row["offset"] + 1
                count += 1
                yield formatter.format(ConsumedRecord(
                    row["partition"], row["offset"], row["timestamp"], row["timestamp_type"], row["key"],
                    row["value"], [(h["key"], h["value"]) for h in row["headers"] or []]))

        write_all(sys.stdout, formatted())
    if args.group is not None:
        _commit_group(topics, worker, args.group, args.topic, positions)
    print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("topics", help="topic tables, like Kafka's console tools").add_subparsers(
        dest="action", metavar="ACTION", required=True)
    p = t.add_parser("create", help="create a topic with a partition count")
    p.add_argument("topic"), p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--config", action="append", metavar="NAME=VALUE"), p.add_argument("--if-not-exists", action="store_true")
    p.add_argument("--replication-factor", type=int, default=-1,
                   help="replicas of each partition on a Kafka cluster (default -1: the broker's default)")
    p.set_defaults(func=cmd_create)
    p = t.add_parser("alter", help="set or remove topic configs (retention.ms, cleanup.policy, ...), as "
                                   "kafka-configs --alter does")
    p.add_argument("topic"), p.add_argument("--add-config", action="append", metavar="NAME=VALUE")
    p.add_argument("--delete-config", action="append", metavar="NAME")
    p.set_defaults(func=cmd_alter)
    p = t.add_parser("list", help="list topics")
    p.set_defaults(func=cmd_list)
    p = t.add_parser("describe", help="partitions and offsets of a topic")
    p.add_argument("topic")
    p.set_defaults(func=cmd_describe)
    p = t.add_parser("produce", help="records from stdin, one per line")
    p.add_argument("topic"), p.add_argument("--property", action="append", metavar="NAME=VALUE")
    p.add_argument("--partitions", type=int, default=1, help="partitions when the topic is created (default 1)")
    p.set_defaults(func=cmd_produce)
    p = t.add_parser("consume", help="print records, one per line")
    p.add_argument("topic"), p.add_argument("--from-beginning", action="store_true")
    p.add_argument("--property", action="append", metavar="NAME=VALUE")
    p.add_argument("--partition", type=int), p.add_argument("--offset", type=int)
    p.add_argument("--max-messages", type=int, help="print at most N records (-1: no limit), then exit")
    p.add_argument("--group", help="consumer group: start from its committed positions (else as --from-beginning "
                                   "says) and commit where consume stopped")
    p.set_defaults(func=cmd_consume)
