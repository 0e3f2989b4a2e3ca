"""Kafka's retention and compaction applied to topic tables (`clean_topic`): what goes, what stays, and
offsets that never move (log start and end offsets survive the records that held them)."""

from __future__ import annotations

import datetime as dt
import json
import random

import pytest
from deltalake import DeltaTable

from ingest.errors import ConfigError, StateError
from ingest.topics import TopicTable
from ingest.topics.cleanup import clean_topic

BASE = 1_700_000_000_000  # a clock in ms: record timestamps and `now_ms` are offsets from it
SECOND = 1000


def _ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _append(spark, topic: TopicTable, records, version: int = 1):
    """Append (partition, key, value, timestamp ms) records, in this order, with their own timestamps."""
    rows = [(p, _bytes(k), _bytes(v), i, _ts(ms)) for i, (p, k, v, ms) in enumerate(records)]
    df = spark.createDataFrame(rows, "partition int, key binary, value binary, seq long, timestamp timestamp")
    return topic.append(df, app_id="producer", version=version)


def _topic(tmp_path, spark, configs, partitions=1) -> TopicTable:
    topic = TopicTable(str(tmp_path), "events", spark=spark)
    topic.create(partitions, configs)
    return topic


def _records(topic: TopicTable) -> list[tuple]:
    """(partition, offset, key, value, timestamp ms) of every record a reader sees."""
    return sorted((r.partition, r.offset, None if r.key is None else r.key.decode(),
                   None if r.value is None else r.value.decode(), int(r.timestamp.timestamp() * 1000))
                  for r in topic.read().collect())


def _offsets(topic: TopicTable) -> tuple[dict[int, int], dict[int, int]]:
    d = topic.describe()
    return d.start_offsets, d.end_offsets


# --- a reference model of Kafka's rules, one record per segment ---------------------------------------


def kafka_clean(log: dict[int, list[tuple]], start: dict[int, int], end: dict[int, int], configs: dict[str, str],
                now: int) -> tuple[dict[int, list[tuple]], dict[int, int]]:
    """What Kafka's cleaner and retention leave of `log` ({partition: [(offset, key, value, ts)] by offset}),
    and the log start offsets after: compaction first (when in the policy), then deletion."""
    policy = configs.get("cleanup.policy", "delete").split(",")
    retention_ms = int(configs.get("retention.ms", 604_800_000))
    retention_bytes = int(configs.get("retention.bytes", -1))
    delete_retention_ms = int(configs.get("delete.retention.ms", 86_400_000))
    lag_ms = int(configs.get("min.compaction.lag.ms", 0))
    left, starts = {}, dict(start)
    for p, records in log.items():
        survivors = list(records)
        if "compact" in policy and survivors:
            # The dirty section ends at the first record too young to clean, and before the active segment.
            first_uncleanable = survivors[-1][0]
            for offset, _, _, ts in survivors:
                if ts > now - lag_ms:
                    first_uncleanable = min(first_uncleanable, offset)
                    break
            offset_map = {}
            for offset, key, _, _ in survivors:
                if offset < first_uncleanable:
                    offset_map[key] = offset
            survivors = [r for r in survivors if r[0] >= first_uncleanable
                         or (offset_map[r[1]] == r[0] and not (r[2] is None and r[3] < now - delete_retention_ms))]
        if "delete" in policy:
            gone = 0
            if retention_ms != -1:
                while gone < len(survivors) and survivors[gone][3] < now - retention_ms:
                    gone += 1
            if retention_bytes != -1:
                size = sum(len(k or "") + len(v or "") for _, k, v, _ in survivors[gone:])
                while gone < len(survivors) and size > retention_bytes:
                    size -= len(survivors[gone][1] or "") + len(survivors[gone][2] or "")
                    gone += 1
            if gone:
                starts[p] = survivors[gone][0] if gone < len(survivors) else end[p]
            survivors = survivors[gone:]
        left[p] = survivors
    return left, starts


def _as_log(records: list[tuple], partitions: int) -> dict[int, list[tuple]]:
    log = {p: [] for p in range(partitions)}
    for p, offset, key, value, ts in sorted(records):
        log[p].append((offset, key, value, ts))
    return log


# --- retention ------------------------------------------------------------------------------------------


def test_time_retention_removes_the_expired_prefix_and_offsets_stay(tmp_path, spark):
    topic = _topic(tmp_path, spark, {"retention.ms": str(60 * SECOND)}, partitions=2)
    # Partition 0: offsets 0..5; offset 3 is fresh, so the expired offset 4 after it stays (a prefix only).
    ages = {0: [0, 10, 20, 90, 30, 95], 1: [0, 5]}
    _append(spark, topic, [(p, f"k{i}", f"v{p}-{i}", BASE + s * SECOND) for p, secs in ages.items()
                           for i, s in enumerate(secs)])
    version = DeltaTable(topic.uri).version()

    now = BASE + 100 * SECOND  # records older than BASE + 40 s have expired
    result = clean_topic(topic, now_ms=now)
    assert result.removed == {0: 3, 1: 2} and result.records_removed == 5
    assert result.start_offsets == {0: 3, 1: 2} and result.table_version == version + 1
    assert _offsets(topic) == ({0: 3, 1: 2}, {0: 6, 1: 2})
    assert [(p, o) for p, o, *_ in _records(topic)] == [(0, 3), (0, 4), (0, 5)]
    assert topic.read({0: (0, 6), 1: (0, 2)}).count() == 3
    commit = DeltaTable(topic.uri).history(1)[0]
    assert commit["lakeconnect.maintenance"] == "retention"

    # Everything expires: the partitions are empty, their offsets are not reset.
    assert clean_topic(topic, now_ms=now + 3600 * SECOND).removed == {0: 3}
    assert _offsets(topic) == ({0: 6, 1: 2}, {0: 6, 1: 2})
    assert _records(topic) == []
    # Appends go on numbering from the old end offsets.
    result = _append(spark, topic, [(0, "a", "x", now), (1, "b", "y", now)], version=2)
    assert {p: (r.first, r.last) for p, r in result.partitions.items()} == {0: (6, 6), 1: (2, 2)}
    assert _offsets(topic) == ({0: 6, 1: 2}, {0: 7, 1: 3})
    assert [(p, o) for p, o, *_ in _records(topic)] == [(0, 6), (1, 2)]


def test_retention_bytes_keeps_the_newest_records_within_the_limit(tmp_path, spark):
    topic = _topic(tmp_path, spark, {"retention.bytes": "25", "retention.ms": "-1"})
    # Each record is len(key) + len(value) = 2 + 8 = 10 bytes; a tombstone counts its key only (2 bytes).
    records = [(0, f"k{i}", f"value-0{i}", BASE) for i in range(5)] + [(0, "kt", None, BASE)]
    _append(spark, topic, records)
    result = clean_topic(topic, now_ms=BASE)
    # 52 bytes: offsets 0, 1 and 2 go (42, 32, then 22 <= 25); 3, 4 and the tombstone stay.
    assert result.removed == {0: 3} and result.start_offsets == {0: 3}
    assert [o for _, o, *_ in _records(topic)] == [3, 4, 5]
    assert _offsets(topic) == ({0: 3}, {0: 6})
    assert clean_topic(topic, now_ms=BASE).table_version is None


# --- compaction -----------------------------------------------------------------------------------------


def test_compaction_keeps_the_latest_record_of_each_key_with_its_offset(tmp_path, spark):
    topic = _topic(tmp_path, spark, {"cleanup.policy": "compact", "min.compaction.lag.ms": str(60 * SECOND)})
    now = BASE + 1000 * SECOND
    old, young = now - 120 * SECOND, now - 30 * SECOND
    records = [(0, "a", "a0", old), (0, "b", "b0", old), (0, "a", "a1", old), (0, "c", "c0", old),
               (0, "b", "b1", old),
               (0, "a", "a2", young), (0, "a", "a3", old),  # from the first young record on, nothing is cleaned
               (0, "c", "c1", old), (0, "c", "c2", old)]
    _append(spark, topic, records)
    result = clean_topic(topic, now_ms=now)
    assert result.removed == {0: 2} and result.start_offsets == {0: 0}
    kept = [(o, k, v) for _, o, k, v, _ in _records(topic)]
    assert kept == [(2, "a", "a1"), (3, "c", "c0"), (4, "b", "b1"), (5, "a", "a2"), (6, "a", "a3"), (7, "c", "c1"),
                    (8, "c", "c2")]
    # Offset 0 is gone, but compaction does not move the log start; the end stays too.
    assert _offsets(topic) == ({0: 0}, {0: 9})
    assert DeltaTable(topic.uri).history(1)[0]["lakeconnect.maintenance"] == "compaction"

    # Later, all are old enough; the last record (the active segment) is still never cleaned.
    result = clean_topic(topic, now_ms=now + 3600 * SECOND)
    assert [(o, k, v) for _, o, k, v, _ in _records(topic)] == [(4, "b", "b1"), (6, "a", "a3"), (7, "c", "c1"),
                                                                (8, "c", "c2")]
    assert result.removed == {0: 3} and _offsets(topic) == ({0: 0}, {0: 9})
    # The offsets outlive a checkpoint (app transactions are part of it).
    DeltaTable(topic.uri).create_checkpoint()
    assert _offsets(topic) == ({0: 0}, {0: 9})


def test_tombstones_go_only_after_delete_retention(tmp_path, spark):
    topic = _topic(tmp_path, spark, {"cleanup.policy": "compact", "delete.retention.ms": str(3600 * SECOND)})
    _append(spark, topic, [(0, "a", "a0", BASE), (0, "b", "b0", BASE), (0, "a", None, BASE + SECOND),
                           (0, "z", "last", BASE + 2 * SECOND)])
    # The tombstone is the latest of key a: a0 goes at once, the tombstone only an hour after it was written.
    assert clean_topic(topic, now_ms=BASE + 60 * SECOND).removed == {0: 1}
    assert [(o, k, v) for _, o, k, v, _ in _records(topic)] == [(1, "b", "b0"), (2, "a", None), (3, "z", "last")]
    assert clean_topic(topic, now_ms=BASE + 3600 * SECOND).table_version is None  # not yet older than 1 h
    assert clean_topic(topic, now_ms=BASE + 3602 * SECOND).removed == {0: 1}
    assert [(o, k, v) for _, o, k, v, _ in _records(topic)] == [(1, "b", "b0"), (3, "z", "last")]
    assert _offsets(topic) == ({0: 0}, {0: 4})


def test_compact_and_delete_together(tmp_path, spark):
    topic = _topic(tmp_path, spark, {"cleanup.policy": "compact,delete", "retention.ms": str(100 * SECOND)})
    # offsets:                  0 (expired)       1 (expired)          2 (fresh)             3 (fresh, last)
    _append(spark, topic, [(0, "a", "a0", BASE), (0, "b", "b0", BASE), (0, "a", "a1", BASE + 200 * SECOND),
                           (0, "b", "b1", BASE + 200 * SECOND)])
    result = clean_topic(topic, now_ms=BASE + 250 * SECOND)
    # Compaction removes a0 (a1 is newer); retention then removes b0, the expired prefix of what is left.
    assert result.removed == {0: 2} and result.start_offsets == {0: 2}
    assert [(o, k) for _, o, k, *_ in _records(topic)] == [(2, "a"), (3, "b")]
    assert _offsets(topic) == ({0: 2}, {0: 4})
    assert DeltaTable(topic.uri).history(1)[0]["lakeconnect.maintenance"] == "compaction,retention"


# --- idempotence, interruptions, bad input ---------------------------------------------------------------


def test_a_second_clean_at_the_same_time_commits_nothing(tmp_path, spark):
    topic = _topic(tmp_path, spark, {"cleanup.policy": "compact,delete", "retention.ms": str(100 * SECOND)})
    _append(spark, topic, [(0, f"k{i % 3}", f"v{i}", BASE + i * 30 * SECOND) for i in range(10)])
    now = BASE + 200 * SECOND
    first = clean_topic(topic, now_ms=now)
    assert first.records_removed > 0 and first.table_version is not None
    records, version = _records(topic), DeltaTable(topic.uri).version()
    second = clean_topic(topic, now_ms=now)
    assert (second.table_version, second.removed, second.files_removed, second.files_added) == (None, {}, 0, 0)
    assert second.start_offsets == first.start_offsets
    assert DeltaTable(topic.uri).version() == version and _records(topic) == records


def test_a_clean_interrupted_before_its_commit_changes_nothing(tmp_path, spark, monkeypatch):
    import ingest.delta.write
    import ingest.topics.cleanup

    topic = _topic(tmp_path, spark, {"cleanup.policy": "compact"})
    _append(spark, topic, [(0, f"k{i % 2}", f"v{i}", BASE) for i in range(6)])
    records, offsets, version = _records(topic), _offsets(topic), DeltaTable(topic.uri).version()

    def killed(*args, **kwargs):
        raise RuntimeError("process killed before the commit")

    monkeypatch.setattr(ingest.delta.write, "commit_files", killed)
    monkeypatch.setattr(ingest.topics.cleanup, "commit_files", killed)
    with pytest.raises(RuntimeError, match="killed"):
        clean_topic(topic, now_ms=BASE + SECOND)
    assert DeltaTable(topic.uri).version() == version
    assert _records(topic) == records and _offsets(topic) == offsets

    monkeypatch.undo()
    assert clean_topic(topic, now_ms=BASE + SECOND).removed == {0: 3}  # the same clean, run again, completes
    assert [(o, v) for _, o, _, v, _ in _records(topic)] == [(3, "v3"), (4, "v4"), (5, "v5")]


def test_bad_input_is_named(tmp_path, spark):
    with pytest.raises(StateError, match="topic 'events' does not exist"):
        clean_topic(TopicTable(str(tmp_path), "events"), now_ms=BASE)
    topic = _topic(tmp_path, spark, {"retention.ms": "1000"})
    # Configs stored before they were checked (an older version, another tool): clean names the bad key.
    table = DeltaTable(topic.uri)
    description = json.loads(table.metadata().description)
    description["lakeconnect.topic"]["configs"]["retention.ms"] = "soon"
    table.alter.set_table_description(json.dumps(description))
    with pytest.raises(ConfigError, match="retention.ms"):
        clean_topic(topic, now_ms=BASE)


# --- against the model ------------------------------------------------------------------------------------


def test_readers_see_what_kafkas_rules_leave(tmp_path, spark):
    configs = {"cleanup.policy": "compact,delete", "retention.ms": str(200 * SECOND), "retention.bytes": "70",
               "delete.retention.ms": str(50 * SECOND), "min.compaction.lag.ms": str(30 * SECOND)}
    topic = _topic(tmp_path, spark, configs, partitions=2)
    rng = random.Random(9)
    written = []
    clock = BASE
    for i in range(60):
        clock += rng.randint(0, 20) * SECOND
        ts = clock - rng.choice([0, 0, 0, 60]) * SECOND  # now and then an older timestamp: not monotonic
        value = None if rng.random() < 0.15 else f"v{i}"
        written.append((i % 2, f"k{rng.randint(0, 5)}", value, ts))
    _append(spark, topic, written[:40])
    _append(spark, topic, written[40:], version=2)  # two appends: cleaning spans several files
    records = _records(topic)
    start, end = _offsets(topic)
    for now in (clock - 300 * SECOND, clock - 100 * SECOND, clock + 60 * SECOND):
        expected, expected_start = kafka_clean(_as_log(records, 2), start, end, configs, now)
        result = clean_topic(topic, now_ms=now)
        assert result.records_removed == len(records) - sum(map(len, expected.values())) > 0
        records = _records(topic)
        start, end = _offsets(topic)
        assert _as_log(records, 2) == expected, f"clean at now={now}"
        assert start == expected_start and end == {0: 30, 1: 30}
