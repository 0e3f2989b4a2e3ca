"""`lakeconnect topics …`: Kafka's console tools over the worker's topics (Delta tables or a Kafka cluster).

`produce` reads one record per line from stdin (`--property parse.key=true` splits key and value at
`key.separator`, a tab by default); `consume` prints one record per line, key and value decoded as text
(`print.key=true` prints `key<TAB>value`, `null` for a null value), like kafka-console-consumer.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import uuid

from ingest.config.worker import LAKE_ROOT, load_worker, spark_settings, storage_options
from ingest.errors import ConfigError, Problem

PRODUCE_CHUNK = 100_000


def _properties(pairs: list[str] | None) -> dict[str, str]:
    props: dict[str, str] = {}
    problems = []
    for p in pairs or []:
        key, sep, value = p.partition("=")
        if not sep:
            problems.append(Problem("--property", f"expected key=value, got '{p}'"))
            continue
        props[key.strip()] = value.encode().decode("unicode_escape")
    if problems:
        raise ConfigError(problems)
    return props


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


def cmd_produce(args) -> int:
    import pyarrow as pa

    props = _properties(args.property)
    parse_key = props.get("parse.key", "false").lower() == "true"
    sep = props.get("key.separator", "\t")
    table, worker = _topic(args)
    if not table.exists():
        table.create(args.partitions, if_not_exists=True)
        print(f"[topic {args.topic} created with {args.partitions} partition(s)]", file=sys.stderr)
    spark = _spark(worker)
    run_id = uuid.uuid4().hex
    total = 0
    lines = (line.rstrip("\n").rstrip("\r") for line in sys.stdin)
    seq = 0
    while True:
        chunk = list(itertools.islice(lines, PRODUCE_CHUNK))
        if not chunk:
            break
        keys, values, problems = [], [], []
        for i, line in enumerate(chunk):
            if parse_key:
                key, found, value = line.partition(sep)
                if not found:
                    problems.append(Problem(None, f"line {total + i + 1}: no key separator {sep!r} found "
                                                  f"(parse.key=true); nothing from this chunk was written"))
                    continue
                keys.append(key.encode())
            else:
                keys.append(None)
                value = line
            values.append(value.encode())
        if problems:
            raise ConfigError(problems[:10])
        now = int(time.time() * 1000)
        arrow = pa.table({
            "partition": pa.nulls(len(values), pa.int32()), "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "headers": pa.nulls(len(values), pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
            "timestamp": pa.array([now] * len(values), pa.timestamp("ms", tz="UTC")),
            "seq": pa.array(range(seq, seq + len(values)), pa.int64()),
        })
        seq += len(values)
        df = spark.createDataFrame(arrow)
        table.append(df, app_id=f"console-producer-{run_id}", version=total // PRODUCE_CHUNK + 1)
        total += len(values)
    print(f"Produced {total} records to {args.topic}", file=sys.stderr)
    return 0


def _text(b) -> str:
    return "null" if b is None else bytes(b).decode("utf-8", errors="replace")


def cmd_consume(args) -> int:
    from pyspark.sql import functions as F

    props = _properties(args.property)
    print_key = props.get("print.key", "false").lower() == "true"
    print_partition = props.get("print.partition", "false").lower() == "true"
    print_offset = props.get("print.offset", "false").lower() == "true"
    sep = props.get("key.separator", "\t")
    table, worker = _topic(args)
    d = table.describe()
    if args.partition is not None and not 0 <= args.partition < d.partitions:
        raise ConfigError([Problem("--partition", f"topic {args.topic} has partitions 0..{d.partitions - 1}")])
    parts = [args.partition] if args.partition is not None else list(range(d.partitions))
    ranges = {}
    for p in parts:
        start = d.start_offsets.get(p, 0) if (args.from_beginning or args.offset is not None) else d.end_offsets.get(p, 0)
        if args.offset is not None:
            start = max(start, args.offset)
        ranges[p] = (start, d.end_offsets.get(p, 0))
    count = 0
    if any(e > s for s, e in ranges.values()):
        _spark(worker)
        df = table.read({p: r for p, r in ranges.items() if r[1] > r[0]})
        rows = df.select("partition", "offset", "key", "value").orderBy(F.col("partition"), F.col("offset"))
        out = sys.stdout
        for row in rows.toLocalIterator():
            if args.max_messages is not None and count >= args.max_messages:
                break
            parts_ = []
            if print_partition:
                parts_.append(f"Partition:{row['partition']}")
            if print_offset:
                parts_.append(f"Offset:{row['offset']}")
            if print_key:
                parts_.append(_text(row["key"]))
            parts_.append(_text(row["value"]))
            out.write(sep.join(parts_) + "\n")
            count += 1
        out.flush()
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
    p.add_argument("--max-messages", type=int)
    p.set_defaults(func=cmd_consume)
