"""A sink whose committed offset falls below its topic's log start (the records were removed by retention
before it read them): an error by default, or `consumer.override.auto.offset.reset` = earliest / latest, as
a Kafka consumer's, which skip the removed offsets with a warning and count them in the run's stats."""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest

from ingest.errors import StateError
from ingest.topics import TopicTable
from ingest.topics.cleanup import clean_topic
from tests.delta_sink._support import committed_offsets, order, sink_config, table_rows, worker_of

BASE = 1_700_000_000_000
HOUR = 3_600_000
RESET = "consumer.override.auto.offset.reset"


def _produce(spark, worker, ids: range, ts_ms: int, version: int) -> None:
    topic = TopicTable(worker.lake_root, "orders")
    stamp = dt.datetime.fromtimestamp(ts_ms / 1000, dt.timezone.utc)
    rows = [(order(i, f"book {i}", i).encode(), i, stamp) for i in ids]
    topic.append(spark.createDataFrame(rows, "value binary, seq long, timestamp timestamp"), app_id="test",
                 version=version)


def _behind_the_log_start(spark, worker_file, **config: str):
    """A sink that read offsets 0..2 of `orders`, then retention removed 0..5: log start 6, end 8."""
    worker = worker_of(worker_file)
    TopicTable(worker.lake_root, "orders").create(1, {"retention.ms": str(HOUR)})
    _produce(spark, worker, range(0, 3), BASE, version=1)
    worker.create("lake", sink_config(topics="orders", **config))
    assert worker.run("lake")[0].records == 3
    _produce(spark, worker, range(3, 6), BASE, version=2)
    _produce(spark, worker, range(6, 8), BASE + 2 * HOUR, version=3)
    cleaned = clean_topic(TopicTable(worker.lake_root, "orders"), now_ms=BASE + 2 * HOUR)
    assert cleaned.start_offsets == {0: 6}
    return worker


def _last_stats(worker) -> dict:
    return json.loads(worker.stores.runs.history("lake")[-1]["stats"])


def _ids(worker_file) -> list[int]:
    return [r[0] for r in table_rows(worker_file, "orders")]


def test_by_default_the_sink_stops_and_names_the_choice(spark, worker_file):
    worker = _behind_the_log_start(spark, worker_file)
    with pytest.raises(StateError) as e:
        worker.run("lake")
    message = str(e.value)
    assert "at offset 3 of orders-0, before its log start 6" in message
    assert f"{RESET}" in message and "earliest" in message and "latest" in message
    assert committed_offsets(worker_file, "lake") == {("orders", 0): 3} and _ids(worker_file) == [0, 1, 2]


def test_earliest_continues_from_the_log_start(spark, worker_file, caplog):
    worker = _behind_the_log_start(spark, worker_file, **{RESET: "earliest"})
    with caplog.at_level(logging.WARNING):
        report = worker.run("lake")[0]
    assert report.records == 2 and _ids(worker_file) == [0, 1, 2, 6, 7]
    assert any("orders-0" in r.getMessage() and "skipping 3 offset(s)" in r.getMessage() for r in caplog.records)
    assert _last_stats(worker)["records_lost_to_retention"] == 3
    assert committed_offsets(worker_file, "lake") == {("orders", 0): 8}
    assert worker.run("lake")[0].outcome == "EMPTY"


def test_latest_skips_to_the_end_and_keeps_what_comes_next(spark, worker_file, caplog):
    worker = _behind_the_log_start(spark, worker_file, **{RESET: "LATEST"})
    with caplog.at_level(logging.WARNING):
        report = worker.run("lake")[0]
    assert report.outcome == "COMMITTED" and report.records == 0
    assert any("orders-0" in r.getMessage() and "skipping 5 offset(s)" in r.getMessage() for r in caplog.records)
    assert _last_stats(worker)["records_lost_to_retention"] == 5
    # The skip is committed: records appended afterwards are delivered, not skipped again.
    assert committed_offsets(worker_file, "lake") == {("orders", 0): 8}
    _produce(spark, worker, range(8, 10), BASE + 2 * HOUR, version=4)
    assert worker.run("lake")[0].records == 2 and _ids(worker_file) == [0, 1, 2, 8, 9]
    assert _last_stats(worker)["records_lost_to_retention"] == 0
