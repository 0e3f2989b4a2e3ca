"""DefaultPartitioner: objects grouped by Kafka partition, encoded `partition=<N>`."""

from __future__ import annotations

from pyspark.sql import functions as F

from ingest.api import Partitioner
from ingest.records import PARTITION, RecordBatch


class DefaultPartitioner(Partitioner):
    """Partitions by the record's Kafka partition: `partition=<N>`."""

    aliases = ("io.confluent.connect.storage.partitioner.DefaultPartitioner",)

    def encode(self, batch: RecordBatch):
        return F.concat(F.lit("partition="), F.col(PARTITION).cast("string"))
