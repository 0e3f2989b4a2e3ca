"""FileStreamSink: writes each record's value as a line of a file, as Kafka's example sink does
(`String.valueOf(value)`, so a schemaless map prints as `{greeting=hello}`).

Exactly once: the file's size is recorded in the plan; a batch first truncates the file back to that
size, so a batch written again after a crash replaces its own partial output instead of adding to it.
"""

from __future__ import annotations

import heapq
import os
import sys
from typing import Any

from ingest.api import SinkConnector, SinkTask, TopicRange
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.errors import FatalError
from ingest.records import OFFSET, PARTITION, TOPIC, VALUE, RecordBatch

from connectors.file.javastr import java_string

FILE = "file"


class FileStreamSinkConnector(SinkConnector):
    """Writes record values from topics to a file, one per line."""

    aliases = ("org.apache.kafka.connect.file.FileStreamSinkConnector",)
    worker_flag = "file.connectors.enable"

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef().define(FILE, Type.STRING, None, importance=Importance.HIGH,
                                  doc="Destination filename. If not specified, the standard output will be used.")


class FileStreamSinkTask(SinkTask):
    def prepare(self, ranges: list[TopicRange]) -> dict[str, Any]:
        path = self.config[FILE]
        return {"size": os.path.getsize(path) if path and os.path.exists(path) else 0}

    def put(self, batches: list[RecordBatch], ranges: list[TopicRange], prepared: dict[str, Any], batch_id: int) -> None:
        lines = self._lines(batches)
        path = self.config[FILE]
        if not path:
            for line in lines:
                sys.stdout.write(line + "\n")
            sys.stdout.flush()
            return
        try:
            with open(path, "ab") as f:
                f.truncate(prepared["size"])
                for line in lines:
                    f.write(line.encode("utf-8") + b"\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise FatalError(f"cannot write {path}: {e.strerror}; check the path and permissions") from None

    @staticmethod
    def _lines(batches: list[RecordBatch]):
        """Values in (topic, partition, offset) order, streamed partition by partition (no collect)."""
        def stream(batch: RecordBatch):
            ordered = batch.df.select(TOPIC, PARTITION, OFFSET, VALUE).orderBy(TOPIC, PARTITION, OFFSET)
            for row in ordered.toLocalIterator():
                yield (row[0], row[1], row[2]), java_string(row[3], batch.value_schema)

        for _, line in heapq.merge(*(stream(b) for b in batches), key=lambda item: item[0]):
            yield line


FileStreamSinkConnector.task_class = FileStreamSinkTask
