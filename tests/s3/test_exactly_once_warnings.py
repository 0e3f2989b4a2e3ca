"""The S3 sink says when a configuration does not give exactly-once objects: records put in time partitions
by the wall clock, whichever time-based partitioner does it (the built-in ones or another package's)."""

from __future__ import annotations

import pytest

import connectors.s3.sink as s3_sink
from ingest.api import Partitioner
from ingest.config.connector import validate_connector
from ingest.config.worker import load_worker
from ingest.registry import PluginKind, Registry


class WeeklyPartitioner(Partitioner):
    """Another package's time-based partitioner: it gives a time partitioning, as the contract asks."""

    def encode(self, batch):
        return None

    @property
    def time_partitioning(self):
        return "weeks"


class TenantPartitioner(Partitioner):
    """Another package's partitioner that is not time-based."""

    def encode(self, batch):
        return None


@pytest.fixture
def registry(monkeypatch):
    registry = Registry({PluginKind.PARTITIONER: {"WeeklyPartitioner": WeeklyPartitioner,
                                                  "TenantPartitioner": TenantPartitioner}})
    monkeypatch.setattr(s3_sink, "default_registry", lambda: registry)
    return registry


def _warnings(registry, tmp_path, **config) -> list[str]:
    raw = {"name": "s3", "connector.class": "S3SinkConnector", "topics": "t", "s3.bucket.name": "b",
           "format.class": "JsonFormat", "flush.size": "3", "store.url": (tmp_path / "lake" / "objects").as_uri(),
           **config}
    setup = validate_connector(raw, load_worker(None, {"lake.root": str(tmp_path / "lake")}), registry)
    return setup.info.cls(setup.config).warnings()


@pytest.mark.parametrize("partitioner, extractor, warned", [
    ("TimeBasedPartitioner", "Wallclock", True),
    ("TimeBasedPartitioner", "Record", False),
    ("WeeklyPartitioner", "Wallclock", True),
    ("WeeklyPartitioner", "RecordField", False),
    ("TenantPartitioner", "Wallclock", False),
    ("DefaultPartitioner", "Wallclock", False),
])
def test_the_wall_clock_in_time_partitions_is_said(registry, tmp_path, partitioner, extractor, warned):
    config = {"partitioner.class": partitioner, "timestamp.extractor": extractor}
    if partitioner == "TimeBasedPartitioner":
        config.update({"path.format": "'day'=YYYY-MM-dd", "partition.duration.ms": "86400000", "locale": "en",
                       "timezone": "UTC"})
    if extractor == "RecordField":
        config["timestamp.field"] = "ts"
    warnings = _warnings(registry, tmp_path, **config)
    expected = ["not exactly-once: timestamp.extractor=Wallclock puts records in time partitions by when the batch "
                "runs; objects may differ if a batch is run again"]
    assert warnings == (expected if warned else []), warnings
