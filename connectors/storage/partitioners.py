"""The partitioners of Confluent's storage connectors (`partitioner.class`): where a record's object goes.

Default and Field partitions are computed by Spark as string columns. The time-based ones give Spark
each record's timestamp; the executors put it in its time bucket and print the bucket with the
`path.format` (connectors/storage/timebased.py), once per bucket.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from ingest.api import Partitioner
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.errors import ConfigError, DataError, Problem
from ingest.records import PARTITION, VALUE, RecordBatch

PARTITION_FIELD_NAME = "partition.field.name"
DIRECTORY_DELIM = "directory.delim"
_FIELD_TYPES = ("int8", "int16", "int32", "int64", "string", "boolean")


class DefaultPartitioner(Partitioner):
    """Partitions by the record's Kafka partition: `partition=<N>`."""

    aliases = ("io.confluent.connect.storage.partitioner.DefaultPartitioner",
               "io.confluent.connect.storage.partition.DefaultPartitioner")  # the book's spelling

    def encode(self, batch: RecordBatch) -> Column:
        return F.concat(F.lit("partition="), F.col(PARTITION).cast("string"))


class FieldPartitioner(Partitioner):
    """Partitions by fields of the record value: `<field>=<value>` for each of `partition.field.name`,
    joined by `directory.delim`. Fields must be integers, strings or booleans of a struct value."""

    aliases = ("io.confluent.connect.storage.partitioner.FieldPartitioner",
               # the book spells the package these ways, and its configs must run unchanged
               "io.confluent.connect.storage.partitionner.FieldPartitioner",
               "io.confluent.connect.storage.partition.FieldPartitioner")

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef().define(
            PARTITION_FIELD_NAME, Type.LIST, [], importance=Importance.MEDIUM, group="Partitioner",
            doc="The name of the partitioning field when FieldPartitioner is used (several: comma-separated).")

    def __init__(self, config):
        super().__init__(config)
        if not config[PARTITION_FIELD_NAME]:
            raise ConfigError([Problem(PARTITION_FIELD_NAME, "is required by FieldPartitioner: the value field(s) "
                                                             "whose values name the objects' directories")])

    def encode(self, batch: RecordBatch) -> Column:
        return self._encoded(batch)[0]

    def errors(self, batch: RecordBatch) -> Column | None:
        return self._encoded(batch)[1]

    def _encoded(self, batch: RecordBatch) -> tuple[Column, Column | None]:
        schema = batch.value_schema
        fields = self.config[PARTITION_FIELD_NAME]
        if schema is None or schema.type != "struct":
            what = "schemaless" if schema is None else schema.type.upper()
            raise DataError(f"FieldPartitioner needs struct values with a schema, but the records' values are "
                            f"{what} (partition.field.name={','.join(fields)}); use a converter with schemas "
                            "(JsonConverter with schemas.enable=true) or another partitioner")
        parts, errors = [], []
        for name in fields:
            field = schema.field(name)
            if field is None:
                raise DataError(f"FieldPartitioner: the records' value has no field '{name}' (partition.field.name); "
                                f"its fields are {', '.join(f.name for f in schema.fields)}")
            if field.schema.type not in _FIELD_TYPES or field.schema.logical is not None:
                raise DataError(f"FieldPartitioner: field '{name}' is {field.schema.type.upper()}"
                                f"{' (' + field.schema.logical + ')' if field.schema.logical else ''}, which is not "
                                "supported as a partition key; use an integer, string or boolean field")
            value = F.col(VALUE).getField(name)
            if field.schema.type == "string":  # Java's "id=" + (String) null
                parts.append(F.concat(F.lit(f"{name}="), F.coalesce(value, F.lit("null"))))
            else:
                parts.append(F.concat(F.lit(f"{name}="), value.cast("string")))
                if field.schema.optional:
                    errors.append(F.when(value.isNull(), F.lit(f"FieldPartitioner: field '{name}' is null, which "
                                                               "names no partition; give it a value, or filter such "
                                                               "records out")))
        encoded = parts[0] if len(parts) == 1 else F.concat_ws(self.config[DIRECTORY_DELIM], *parts)
        return encoded, (F.coalesce(*errors) if errors else None)


class _TimeBased(Partitioner):
    """The time-based partitioners: the encoded partition is the record's time bucket, printed."""

    kind = "TimeBasedPartitioner"

    @classmethod
    def config_def(cls) -> ConfigDef:
        from connectors.storage.timebased import config_def

        return config_def()

    def __init__(self, config):
        super().__init__(config)
        from connectors.storage.timebased import PARTITIONER_CLASS_CONFIG, TimePartitioning

        # The class is known by now (whichever of its names the config used): its rules apply.
        self._time = TimePartitioning.from_config({**dict(config), PARTITIONER_CLASS_CONFIG: self.kind})

    def encode(self, batch: RecordBatch) -> Column | None:
        return None

    def timestamp(self, batch: RecordBatch) -> Column | None:
        return self._time.timestamp_column(batch)

    @property
    def time_partitioning(self):
        return self._time


class TimeBasedPartitioner(_TimeBased):
    """Partitions by the record's time: `path.format` printed at the start of its `partition.duration.ms`
    bucket, in `timezone` and `locale`."""

    aliases = ("io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
               "io.confluent.connect.storage.partition.TimeBasedPartitioner")  # the book's spelling


class DailyPartitioner(_TimeBased):
    """`'year'=YYYY/'month'=MM/'day'=dd`, one directory a day."""

    aliases = ("io.confluent.connect.storage.partitioner.DailyPartitioner",
               "io.confluent.connect.storage.partition.DailyPartitioner")  # the book's spelling
    kind = "DailyPartitioner"


class HourlyPartitioner(_TimeBased):
    """`'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH`, one directory an hour."""

    aliases = ("io.confluent.connect.storage.partitioner.HourlyPartitioner",
               "io.confluent.connect.storage.partition.HourlyPartitioner")  # the book's spelling
    kind = "HourlyPartitioner"


class FieldAndTimeBasedPartitioner(_TimeBased):
    """The Field partitioner's directories, then the time-based partitioner's:
    `<field>=<value>/<path.format at the bucket>`."""

    aliases = ("io.confluent.connect.storage.partitioner.FieldAndTimeBasedPartitioner",
               "FieldAndTimePartitioner")

    def __init__(self, config):
        super().__init__(config)
        self._fields = FieldPartitioner(config)

    def encode(self, batch: RecordBatch) -> Column:
        return self._fields.encode(batch)

    def errors(self, batch: RecordBatch) -> Column | None:
        return self._fields.errors(batch)
