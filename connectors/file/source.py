"""FileStreamSource: each complete line of a file becomes a record with a string value.

Offsets as Kafka's: partition `{"filename": <file>}`, offset `{"position": <bytes read>}`. A batch reads
from the committed position to the last line end present at plan time, in chunks on Spark executors.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.api import PlannedRange, SourceConnector, SourcePlan, SourceTask
from ingest.config.configdef import ConfigDef, Importance, NonEmptyString, Range, Type
from ingest.errors import FatalError
from ingest.records import HEADERS, KEY, PARTITION, SEQ, TIMESTAMP, TOPIC, VALUE, RecordBatch
from ingest.records.schema import STRING_SCHEMA

FILE = "file"
TOPIC_KEY = "topic"
BATCH_SIZE = "batch.size"
CHUNK_BYTES = 32 * 1024 * 1024


class FileStreamSourceConnector(SourceConnector):
    """Reads lines from a file into a topic."""

    aliases = ("org.apache.kafka.connect.file.FileStreamSourceConnector",)
    worker_flag = "file.connectors.enable"

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (ConfigDef()
                .define(FILE, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
                        doc="Source filename.")
                .define(TOPIC_KEY, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
                        doc="The topic to publish data to.")
                .define(BATCH_SIZE, Type.INT, 2000, Range.at_least(1), Importance.LOW,
                        doc="Kafka's records per poll; accepted for compatibility: a batch here reads every "
                            "complete line present at plan time."))


class FileStreamSourceTask(SourceTask):
    def _partition(self) -> dict[str, Any]:
        return {"filename": self.config[FILE]}

    def plan(self, committed: Mapping[str, Any]) -> SourcePlan:
        # Here, not at the top: Spark's Python workers import this module to read the file's chunks, and
        # the state tables bring deltalake and pandas (half a second a worker) that they never use.
        from ingest.state.tables import canonical_json, now

        path = self.config[FILE]
        partition = self._partition()
        offset = committed.get(canonical_json(partition))
        start = int(offset["position"]) if offset else 0
        try:
            size = os.path.getsize(path)
        except OSError as e:
            raise FatalError(f"cannot read source file {path}: {e.strerror}; check the path and permissions") from None
        if size < start:
            raise FatalError(f"{path} is shorter ({size} bytes) than the committed position {start}: it was "
                             f"truncated or replaced; stop the connector and reset its offsets to read it again")
        end = _last_line_end(path, start, size)
        if end <= start:
            return SourcePlan(())
        return SourcePlan((PlannedRange(partition, {"position": start} if offset else None, {"position": end}),),
                          {"timestamp_ms": int(now().timestamp() * 1000)})

    def read(self, plan: SourcePlan) -> list[RecordBatch]:
        spark = self.context.spark
        rng = plan.ranges[0]
        start = rng.start["position"] if rng.start else 0
        chunks = _chunks(self.config[FILE], start, rng.end["position"])
        path = self.config[FILE]
        lines = (spark.createDataFrame(chunks, "start long, end long")
                 .repartition(max(1, len(chunks)))
                 .mapInArrow(lambda batches: _read_lines(path, batches), "seq long, value string"))
        df = lines.select(
            F.lit(self.config[TOPIC_KEY]).alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
            F.lit(None).cast("string").alias(KEY), F.col(VALUE),
            F.lit(None).cast(T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                                      T.StructField("value", T.StringType())]))).alias(HEADERS),
            (F.lit(plan.details["timestamp_ms"]) / 1000).cast("timestamp").alias(TIMESTAMP), F.col(SEQ))
        return [RecordBatch(df, None, STRING_SCHEMA, topics=(self.config[TOPIC_KEY],))]


FileStreamSourceConnector.task_class = FileStreamSourceTask


def _line_ends(data: bytes, final: bool) -> np.ndarray:
    """Offsets just after each line end in `data`, as Kafka's FileStreamSourceTask ends lines: at `\\n`,
    `\\r\\n` or a lone `\\r`. A `\\r` that is the last byte ends a line only when `final` (the data's end is
    known to be a line end); otherwise the next byte, not read yet, decides (Kafka waits for it too)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    newline = arr == 10
    lone_cr = (arr == 13) & ~np.append(newline[1:], False)
    if not final and len(arr) and arr[-1] == 13:
        lone_cr[-1] = False
    return np.flatnonzero(newline | lone_cr) + 1


def _last_line_end(path: str, start: int, size: int) -> int:
    """The offset just after the last line end in [start, size), or start when there is none."""
    block = 64 * 1024
    with open(path, "rb") as f:
        pos = size
        while pos > start:
            lo = max(start, pos - block)
            f.seek(lo)
            data = f.read(min(pos + 1, size) - lo)  # one byte more: whether a \r at the block's end is lone
            ends = _line_ends(data, final=False)
            ends = ends[ends <= pos - lo]
            if len(ends):
                return lo + int(ends[-1])
            pos = lo
    return start


def _chunks(path: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split [start, end) into chunks that each end just after a line end."""
    bounds = [start]
    with open(path, "rb") as f:
        nominal = start + CHUNK_BYTES
        while nominal < end:
            f.seek(nominal)
            rest = f.read(min(1024 * 1024, end - nominal))
            ends = _line_ends(rest, final=nominal + len(rest) == end)
            if not len(ends):
                break
            bounds.append(nominal + int(ends[0]))
            nominal = bounds[-1] + CHUNK_BYTES
    bounds = sorted(set(b for b in bounds if b < end)) + [end]
    return list(zip(bounds[:-1], bounds[1:]))


def _read_lines(path: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Split each chunk into lines with numpy and Arrow buffers: no Python loop over lines."""
    for batch in batches:
        for start, end in zip(batch.column("start").to_pylist(), batch.column("end").to_pylist()):
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read(end - start)
            ends = _line_ends(data, final=True)  # chunks end with a line end
            offsets = np.concatenate(([0], ends)).astype(np.int32)
            lines = pa.StringArray.from_buffers(len(ends), pa.py_buffer(offsets.tobytes()), pa.py_buffer(data))
            try:
                lines.validate(full=True)
            except pa.ArrowInvalid:  # not UTF-8: decode with replacement characters, as Java's decoder does
                lines = pa.array([data[a:b].decode("utf-8", errors="replace") for a, b in zip(offsets[:-1], ends)])
            values = pc.replace_substring_regex(lines, pattern="\r?\n$|\r$", replacement="")
            seqs = pa.array(offsets[:-1].astype(np.int64) + start, pa.int64())
            yield pa.RecordBatch.from_arrays([seqs, values], names=["seq", "value"])
