"""UpperCaseField: upper-case one string field of the record value (or the whole value when `field` is
empty) — an example of a custom single message transform for lakeconnect.

Configure it as you would a Kafka transform, by entry-point name or by the class name in `aliases`:

    "transforms": "shout",
    "transforms.shout.type": "com.example.transforms.UpperCaseField",
    "transforms.shout.field": "title"

What a transform needs (see lakeconnect's `ingest/api.py` and `connectors/transforms/_support.py`):
- `config_def()`: its settings, validated when the connector is validated;
- `apply(batch)`: Spark column expressions over the whole batch, never per-record Python. Change records
  with `batch.set`, `drop` and `fail` (they honour predicates and records that failed earlier), and
  return the schema that follows with `with_schemas`;
- a problem with a record: `batch.fail(condition, message)` (errors.tolerance decides); a problem with the
  whole batch's schema: raise `DataError`.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import functions as F

from ingest.api import Transform
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.errors import DataError
from ingest.records import VALUE, RecordBatch
from ingest.records.schema import ConnectSchema


class UpperCaseField(Transform):
    """Upper-case the string field `field` of the value (schema'd structs and schemaless maps)."""

    aliases = ("com.example.transforms.UpperCaseField",)
    version = "1.0.0"
    scoped = True  # changes records only through batch.set/fail: a predicate can scope it in one pass

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef().define("field", Type.STRING, "", importance=Importance.HIGH,
                                  doc="The string field to upper-case; empty for the whole value.")

    def apply(self, batch: RecordBatch) -> RecordBatch:
        name = self.config["field"]
        value, schema = F.col(VALUE), batch.value_schema
        if schema is None:  # schemaless: the value is a VARIANT (Kafka's Map)
            if not name:
                text = F.try_variant_get(value, "$", "string")
                return batch.set({VALUE: F.when(text.isNull(), value).otherwise(F.upper(text).cast("variant"))})
            members = F.try_variant_get(value, "$", "map<string,variant>")
            bad = value.isNotNull() & members.isNull()
            batch = batch.fail(bad, "UpperCaseField needs a Map value when there is no schema")
            upper = F.transform_values(members, lambda k, v: F.when(
                (k == F.lit(name)) & F.try_variant_get(v, "$", "string").isNotNull(),
                F.upper(F.try_variant_get(v, "$", "string")).cast("variant")).otherwise(v))
            return batch.set({VALUE: F.when(members.isNull(), value).otherwise(F.to_variant_object(upper))})
        if not name:
            _require_string(schema, "the value")
            return batch.set({VALUE: F.upper(value)})
        if schema.type != "struct" or schema.field(name) is None:
            raise DataError(f"UpperCaseField: the value has no field '{name}'")
        _require_string(schema.field(name).schema, f"field '{name}'")
        fields = [F.upper(value[f.name]).alias(f.name) if f.name == name else value[f.name].alias(f.name)
                  for f in schema.fields]
        return batch.set({VALUE: F.when(value.isNull(), value).otherwise(F.struct(*fields))})


def _require_string(schema: ConnectSchema, what: str) -> None:
    if replace(schema, optional=False, default=None).type != "string":
        raise DataError(f"UpperCaseField: {what} is {schema.type}, not a string")
