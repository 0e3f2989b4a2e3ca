"""Kafka's `org.apache.kafka.connect.json.JsonConverter`, as Spark column expressions.

With `schemas.enable` (the default) a record is `{"schema":<schema JSON>,"payload":<value JSON>}`; without,
just the value JSON. Both directions produce and accept exactly Kafka's bytes. Reading groups records by
their embedded schema (one small distinct query on the driver) and returns one DataFrame per schema;
without schemas, values become a VARIANT column (Kafka's schemaless Map/List/primitive values).
Common records are written and read by Java expressions in one pass (`_json_fast`, `_json_fast_read`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.converters._common import (
    RecordAndHeaderConverter, bad_records, data_type, map_header_values, null_bytes, parse_settings,
    raise_first_bad, utf8_bytes,
)
from connectors.converters._json_fast import available as json_fast_available
from connectors.converters._json_fast import field_spec, json_record
from connectors.converters._json_fast_read import UNSURE, payload_spec, schema_text, schema_text_of, with_defaults
from connectors.converters._json_fast_read import available as json_read_available
from connectors.converters._json_fast_read import payload as json_payload
from connectors.converters._json_read import JsonOptions, with_connect_value
from connectors.converters._json_write import json_text, render, spark_type_problem
from ingest.api import DECLINED, NOT_READ, Converter, HeaderConverter
from ingest.config.configdef import ConfigDef, Importance, Type, ValidString
from ingest.errors import DataError
from ingest.records.schema import (
    BASE64, NUMERIC, OPTIONAL_STRING_SCHEMA, STRING_SCHEMA, ConnectSchema, from_spark_type,
)
from ingest.spark import SessionCache

SCHEMAS_ENABLE = "schemas.enable"
SCHEMAS_CACHE_SIZE = "schemas.cache.size"
DECIMAL_FORMAT = "decimal.format"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"

SERIALIZATION_ERROR = "Converting byte[] to Kafka Connect data failed due to serialization error: malformed JSON"
ENVELOPE_ERROR = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional '
    "fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter "
    "configuration."
)
DUPLICATE_KEYS_ERROR = (
    "Converting byte[] to Kafka Connect data failed: a JSON object has duplicate keys. Kafka keeps the last "
    "value; Spark's VARIANT refuses them unless spark.sql.variant.allowDuplicateKeys=true (then the last wins)"
)
_BAD = "\u0000"  # marks a bad record's key in the distinct-schema query; no schema text starts with it
_TEXT, _PARSED, _ENVELOPE, _PAYLOAD, _CORRUPT, _KEY, _FAST_KEY, _FAST = (
    f"__lakeconnect_{n}" for n in ("text", "parsed", "envelope", "payload", "corrupt", "key", "fast_key", "fast"))
_EXPRESSIONS = SessionCache()  # a value's bytes, per (column, Spark type, schema, settings)
# Jackson's defaults, as Kafka's ObjectMapper has them: no single quotes, no NaN/Infinity tokens.
STRICT_JSON = {"allowSingleQuotes": "false", "allowNonNumericNumbers": "false"}


class JsonConverter(RecordAndHeaderConverter, Converter, HeaderConverter):
    """JSON values, with their Connect schema embedded (`schemas.enable=true`) or schemaless."""

    aliases = ("org.apache.kafka.connect.json.JsonConverter",)

    def __init__(self, configs: Mapping[str, Any] | None = None, is_key: bool = False):
        Converter.__init__(self, configs or {}, is_key)
        settings = parse_settings(type(self), self.configs)
        self.schemas_enable: bool = settings[SCHEMAS_ENABLE]
        self.options = JsonOptions(settings[DECIMAL_FORMAT].upper(), settings[REPLACE_NULL_WITH_DEFAULT])
        # Schema texts seen in records are parsed once each, up to schemas.cache.size of them.
        self._schema_of = functools.lru_cache(maxsize=max(settings[SCHEMAS_CACHE_SIZE], 0))(ConnectSchema.from_json)

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (
            ConfigDef()
            .define(SCHEMAS_ENABLE, Type.BOOLEAN, True, importance=Importance.HIGH, group="Schemas",
                    doc="Include schemas within each of the serialized values and keys.")
            .define(SCHEMAS_CACHE_SIZE, Type.INT, 1000, importance=Importance.HIGH, group="Schemas",
                    doc="The maximum number of schemas that can be cached in this converter instance.")
            .define(DECIMAL_FORMAT, Type.STRING, BASE64, ValidString.of(BASE64, NUMERIC, case_insensitive=True),
                    Importance.LOW, group="Serialization",
                    doc="Controls which format this converter will serialize decimals in. This value is case "
                        "insensitive and can be either 'BASE64' (default) or 'NUMERIC'")
            .define(REPLACE_NULL_WITH_DEFAULT, Type.BOOLEAN, True, importance=Importance.LOW, group="Serialization",
                    doc="Whether to replace fields that have a default value and that are null to the default "
                        "value. When set to true, the default value is used, otherwise null is used.")
        )

    # --- keys and values ---------------------------------------------------------------------------

    def from_connect_record(self, df: DataFrame, column: str, schema: ConnectSchema | None) -> DataFrame:
        """Serialise `column`. A null value is a tombstone: null bytes, as Kafka writes a null value
        without a schema (a record value's null in lakeconnect is always a tombstone)."""
        dtype = data_type(df, column)
        if isinstance(dtype, T.NullType):
            return df.withColumn(column, null_bytes())
        schema_text = "null" if schema is None else schema.to_json_text(self.options.decimal_format)
        # The expression depends on nothing else: a connector's next batch of the same table reuses it.
        key = ("JsonConverter", column, dtype.json(), schema_text, self.options, self.schemas_enable,
               json_fast_available())
        return df.withColumn(column, _EXPRESSIONS.get(df.sparkSession, key, lambda: self._bytes(
            F.col(column), column, dtype, schema, schema_text)))

    def from_connect_optimistic(self, df: DataFrame, column: str, schema: ConnectSchema | None) -> DataFrame | None:
        """The Java writer alone (see `_json_fast`), without the general expressions it hands records back to:
        a fraction of the query for Spark to analyse, optimise and generate code for (60-80 ms a batch of a
        table row). A record it hands back fails the query with `DECLINED`. None where records would be
        handed back routinely: a nullable field whose schema has a default written in place of null."""
        if schema is None or not json_fast_available():
            return None
        dtype = data_type(df, column)
        spec = field_spec(dtype, schema, self.options)
        if spec is None or spark_type_problem(dtype, schema) or _nullable_with_default(dtype, schema, self.options):
            return None
        schema_text = schema.to_json_text(self.options.decimal_format)
        prefix, suffix = (f'{{"schema":{schema_text},"payload":', "}") if self.schemas_enable else ("", "")
        key = ("JsonConverter.optimistic", column, dtype.json(), schema_text, self.options, self.schemas_enable)

        def build() -> Column:
            value = F.col(column)
            data = F.coalesce(json_record(value, spec, prefix, suffix), F.raise_error(F.lit(DECLINED)))
            return F.when(value.isNull(), null_bytes()).otherwise(data)

        return df.withColumn(column, _EXPRESSIONS.get(df.sparkSession, key, build))

    def _bytes(self, value: Column, column: str, dtype: T.DataType, schema: ConnectSchema | None,
               schema_text: str) -> Column:
        if schema is None:
            is_null, payload = self._schemaless_payload(value, dtype)
        else:
            problem = spark_type_problem(dtype, schema)
            if problem:
                raise DataError(f"JsonConverter cannot write column '{column}' with its schema: {problem}")
            is_null, payload = value.isNull(), render(value, schema, self.options, top=True)
        text = self._wrap_envelope(F.lit(schema_text), payload) if self.schemas_enable else payload
        data = utf8_bytes(text)
        spec = None if schema is None else field_spec(dtype, schema, self.options)
        if spec is not None and json_fast_available():  # the same bytes, in one pass (see _json_fast)
            prefix, suffix = (f'{{"schema":{schema_text},"payload":', "}") if self.schemas_enable else ("", "")
            data = F.coalesce(json_record(value, spec, prefix, suffix), data)
        return F.when(is_null, null_bytes()).otherwise(data)

    def to_connect_record(self, df: DataFrame, column: str) -> list[tuple[ConnectSchema | None, DataFrame]]:
        """Parse `column`; one (schema, DataFrame) per distinct embedded schema (none for no records).
        Bad JSON raises DataError naming the first bad record."""
        raw = df[column]
        if not self.schemas_enable:
            staged = df.withColumn(_TEXT, self._text(raw))
            staged = staged.withColumn(_PARSED, F.try_parse_json(F.col(_TEXT)))
            raise_first_bad(staged, self._reason(raw, F.col(_TEXT)), _fix_for_bad_json())
            return [(None, _drop_staged(staged.withColumn(column, self._schemaless_value(raw, F.col(_PARSED)))))]
        # One pass per record finds the schema texts (a small distinct on the driver) and bad records. The
        # text is made only where a record needs it (see to_connect_optimistic), not as a column of its own.
        fast = json_read_available()
        text = self._text(raw)
        keyed = _with_schema_key(df, raw, fast, text)
        texts = _schema_texts(keyed)
        if _BAD in texts:
            raise_first_bad(df, self._reason(raw, text), _fix_for_bad_json())
        groups: dict[ConnectSchema | None, list[str]] = {}
        for t in texts:  # texts that differ only in spacing or key order are the same schema
            groups.setdefault(None if t is None else self._parse_schema(keyed, t), []).append(t)
        out = []
        for schema, members in groups.items():
            part = df
            if len(groups) > 1:  # with one schema (the usual case) every record belongs to it: no filter
                # False, never null, for other records: Spark may push a filter on the value (a sink skipping
                # null values) into this one, and reads the value wherever this is not false.
                key = F.col(_KEY)
                part = keyed.where(key.isNull() if schema is None else F.coalesce(key.isin(members), F.lit(False)))
            if schema is None:  # tombstones, and envelopes whose schema is null
                part = part.withColumn(_PAYLOAD, _payload(text))
                part = part.withColumn(column, self._schemaless_value(raw, F.col(_PAYLOAD)))
            else:
                part = self._with_value(part, column, raw, schema, fast)
            out.append((schema, _drop_staged(part)))
        return out

    def to_connect_optimistic(self, df: DataFrame, column: str,
                              first: Any = NOT_READ) -> list[tuple[ConnectSchema, DataFrame]] | None:
        """`to_connect_record` for a batch whose records all embed the schema of its first: that record alone
        is read first, not every record, and each record is checked against it in the query that reads the
        values. A record with another schema text, a null schema or no value fails that query with
        `DECLINED`. None where a batch would decline at once (its first record) or the Java reader is not
        loaded. `first`: that record's bytes, read by the caller (`Converter.to_connect_optimistic`)."""
        if not self.schemas_enable or not json_read_available():
            return None
        raw = df[column]
        # No _TEXT column: made for every record, its UTF-8 check and copy cost as much as reading the
        # payload; the few records the Java scan is unsure of make their text where they need it.
        keyed = _with_schema_key(df, raw, True, self._text(raw))
        text = UNSURE if first is NOT_READ else schema_text_of(df.sparkSession, first)
        if text == UNSURE:  # only the strict reading knows this record's schema: ask Spark for it
            rows = keyed.select(_KEY).limit(1).collect()
            text = rows[0][0] if rows else None
        if text is None or text == _BAD:
            return None
        try:
            schema = self._schema_of(text)
        except DataError:  # the general reading names the record and the problem
            return None
        part = self._with_value(keyed, column, raw, schema, True)
        same = F.coalesce(F.col(_KEY) == F.lit(text), F.lit(False))
        part = part.withColumn(column, F.when(same, F.col(column)).otherwise(F.raise_error(F.lit(DECLINED))))
        return [(schema, _drop_staged(part))]

    def record_errors(self, df: DataFrame, column: str) -> Column:
        return self._reason(df[column], self._text(df[column]))

    def header_errors(self, headers: Column) -> Column:
        def reason(b: Column) -> Column:
            text = self._text(b)
            return F.coalesce(self._reason(b, text),
                              F.when(b.isNotNull() & F.try_parse_json(text).isNull(), F.lit(DUPLICATE_KEYS_ERROR)))

        bad = F.filter(headers, lambda h: reason(h["value"]).isNotNull())
        return F.when(F.size(bad) > 0, F.concat(F.lit("header '"), bad[0]["key"], F.lit("': "),
                                                reason(bad[0]["value"])))

    def bad_records(self, df: DataFrame, column: str) -> DataFrame:
        """The records `to_connect` would reject, with an `error` column: for a dead letter queue."""
        staged = df.withColumn(_TEXT, self._text(df[column]))
        return _drop_staged(bad_records(staged, self._reason(df[column], F.col(_TEXT))))

    def _parse_schema(self, keyed: DataFrame, text: str) -> ConnectSchema:
        """The schema embedded as `text`; an invalid one raises DataError naming a record that carries it."""
        try:
            return self._schema_of(text)
        except DataError as e:
            carries = F.col(_KEY) == F.lit(text)
            raise_first_bad(keyed, F.when(carries, F.lit(f"invalid schema in the record: {e}")),
                            "fix the schema its producer embeds")
            raise

    def _with_value(self, part: DataFrame, column: str, raw: Column, schema: ConnectSchema, fast: bool) -> DataFrame:
        """`part` with `column` read as values of `schema`: by the Java reader where it applies (see
        `_json_fast_read`), by the general expressions for every record it hands back."""
        spec = payload_spec(schema, self.options) if fast else None
        if spec is None:
            part = part.withColumn(_PAYLOAD, _payload(self._text(raw)))
            return with_connect_value(part, column, F.col(_PAYLOAD), schema, self.options)
        part = part.withColumn(_FAST, json_payload(raw, spec))
        handled = F.col(_FAST)["handled"]
        # The general path parses nothing for the records Java read (a null text parses to null at once).
        # Its text is made here, not taken from _TEXT, which Spark would otherwise make for every record.
        part = part.withColumn(_PAYLOAD, _payload(F.when(handled, F.lit(None)).otherwise(self._text(raw))))
        value = with_defaults(F.col(_FAST)["value"], schema, self.options)
        return with_connect_value(part, column, F.col(_PAYLOAD), schema, self.options, fast=(handled, value))

    # --- headers (values are strings in lakeconnect's record layout) --------------------------------

    def from_connect_header(self, headers: Column) -> Column:
        """A header value is a Connect string (ConnectHeaders.addString: STRING_SCHEMA, or the optional
        string schema for null), written like any value with that schema."""
        def convert(v: Column) -> Column:
            payload = json_text(v)
            if not self.schemas_enable:
                return utf8_bytes(payload)
            schema = F.when(v.isNull(), F.lit(OPTIONAL_STRING_SCHEMA.to_json_text())).otherwise(
                F.lit(STRING_SCHEMA.to_json_text()))
            return utf8_bytes(self._wrap_envelope(schema, payload))

        return map_header_values(headers, convert)

    def to_connect_header(self, headers: Column) -> Column:
        """Header bytes to a string: a JSON string's text, any other JSON value as its compact JSON."""
        def convert(b: Column) -> Column:
            text = self._text(b)
            parsed = F.try_parse_json(text)
            reason = F.coalesce(self._reason(b, text), F.when(parsed.isNull(), F.lit(DUPLICATE_KEYS_ERROR)))
            payload = F.variant_get(parsed, "$.payload", "variant") if self.schemas_enable else parsed
            value = (F.when(F.is_variant_null(payload), F.lit(None))
                     .when(F.schema_of_variant(payload) == F.lit("STRING"), F.variant_get(payload, "$", "string"))
                     .otherwise(F.to_json(payload)))
            return (F.when(b.isNull(), F.lit(None))
                    .when(reason.isNotNull(), F.raise_error(F.concat(F.lit("header value: "), reason)))
                    .otherwise(value))

        return map_header_values(headers, convert)

    # --- pieces --------------------------------------------------------------------------------------

    @staticmethod
    def _wrap_envelope(schema_text: Column, payload: Column) -> Column:
        return F.concat(F.lit('{"schema":'), schema_text, F.lit(',"payload":'), payload, F.lit("}"))

    def _schemaless_payload(self, value: Column, dtype: T.DataType) -> tuple[Column, Column]:
        """(is null, JSON text) of a value without a schema: a VARIANT as its JSON, any other Spark
        value as the schema its type implies would write it."""
        if isinstance(dtype, T.VariantType):
            # A JSON null read without a schema is Kafka's null value: a tombstone again.
            return value.isNull() | F.is_variant_null(value), F.to_json(value)
        try:
            implied = from_spark_type(dtype, optional=True)
        except ValueError as e:
            raise DataError(f"JsonConverter cannot write a schemaless {dtype.simpleString()}: {e}") from e
        return value.isNull(), render(value, implied, self.options, top=True)

    @staticmethod
    def _text(raw: Column) -> Column:
        # Jackson rejects malformed UTF-8; try_validate_utf8 gives null for it, which parses to null.
        return F.try_validate_utf8(raw.cast(T.StringType()))

    def _reason(self, raw: Column, text: Column) -> Column:
        """Why a record cannot be read, as Kafka would say it (null when it can be read)."""
        reason = F.when(raw.isNull(), F.lit(None))
        envelope = _envelope(text)
        if not self.schemas_enable:
            unparsed = (F.length(raw) > 0) & F.try_parse_json(text).isNull()
            return (reason.when(unparsed & envelope.isNotNull(), F.lit(DUPLICATE_KEYS_ERROR))
                    .when(unparsed, F.lit(SERIALIZATION_ERROR)))
        # Jackson accepts duplicate keys (the last wins), parse_json does not: valid if either parser says so.
        well_formed = envelope.isNotNull() | F.try_parse_json(text).isNotNull()
        # Empty bytes: Jackson reads a MissingNode, which is not an envelope (schemaless: a null value).
        strict = (reason.when(F.length(raw) == 0, F.lit(ENVELOPE_ERROR))
                  .when(~well_formed, F.lit(SERIALIZATION_ERROR))
                  .when(~_is_envelope(envelope), F.lit(ENVELOPE_ERROR)))
        if json_read_available():
            # A record the Java scan is sure of is a well-formed envelope: only the others are parsed here.
            return F.when(schema_text(raw).eqNullSafe(F.lit(UNSURE)), strict)
        return strict

    @staticmethod
    def _schemaless_value(raw: Column, parsed: Column) -> Column:
        """Kafka's schemaless value as a VARIANT; JSON null, empty bytes and null bytes are a null value."""
        return F.when(raw.isNull() | parsed.isNull() | F.is_variant_null(parsed), F.lit(None)).otherwise(parsed)


def _nullable_with_default(data_type: T.DataType, schema: ConnectSchema, options: JsonOptions) -> bool:
    """Whether a nullable field of `data_type` (at any depth) has a default that replaces its nulls."""
    if not isinstance(data_type, T.StructType) or schema.type != "struct":
        return False
    for spark_field, field in zip(data_type.fields, schema.fields):
        if spark_field.nullable and field.schema.default is not None and options.replace_null_with_default:
            return True
        if _nullable_with_default(spark_field.dataType, field.schema, options):
            return True
    return False


def _schema_texts(keyed: DataFrame) -> list[str | None]:
    """The distinct values of _KEY. A batch nearly always carries one schema: its smallest and largest
    text, and whether any is null, tell that in one aggregate of three values per task; a full distinct,
    which hashes and copies every record's schema text, runs only when they differ (the pass over 300,000
    records of one schema: 0.93 s instead of 1.56)."""
    key = F.col(_KEY)
    low, high, nulls = keyed.select(F.min(key), F.max(key), F.max(key.isNull())).first()
    if low == high:  # one text (or none) besides nulls; an empty batch gives no row's values at all
        return [t for t in (low,) if t is not None] + ([None] if nulls else [])
    return [r[0] for r in keyed.select(_KEY).distinct().collect()]


def _with_schema_key(staged: DataFrame, raw: Column, fast: bool, text: Column) -> DataFrame:
    """`staged` with column _KEY: each record's embedded schema text, null for a tombstone or a null schema,
    _BAD for a record that is not an envelope. With `fast`, the Java scan gives the raw text of most
    records; only those it is unsure of (UNSURE) are parsed the strict way, whose key they then get.
    `text`: the records' text (`JsonConverter._text`)."""
    if not fast:
        keyed = staged.withColumn(_ENVELOPE, _envelope(text))
        return keyed.withColumn(_KEY, _strict_key(raw, F.col(_ENVELOPE)))
    keyed = staged.withColumn(_FAST_KEY, schema_text(raw))
    unsure = F.col(_FAST_KEY).eqNullSafe(F.lit(UNSURE))
    keyed = keyed.withColumn(_ENVELOPE, F.when(unsure, _envelope(text)))
    return keyed.withColumn(_KEY, F.when(unsure, _strict_key(raw, F.col(_ENVELOPE))).otherwise(F.col(_FAST_KEY)))


def _strict_key(raw: Column, envelope: Column) -> Column:
    return F.when(raw.isNull(), F.lit(None)).when(~_is_envelope(envelope), F.lit(_BAD)).otherwise(envelope["schema"])


def _envelope(text: Column) -> Column:
    """The top-level members of a JSON object, each value as its JSON text (null for malformed JSON or a
    non-object). Spark's JSON reader, made as strict as Jackson; duplicate keys: the last wins."""
    return F.from_json(text, "map<string,string>", STRICT_JSON)


def _payload(text: Column) -> Column:
    """The envelope's payload as a VARIANT (the conversion's one parse). A record corrupt here whose envelope
    parses is a VARIANT refusing duplicate keys: fail rather than read a null. A malformed record gives null:
    the checks before (`_reason`) fail or set it aside, and Spark may evaluate this for it all the same (a
    sink's filter on the value, combined with the tolerance filter, has no order of evaluation)."""
    options = {**STRICT_JSON, "columnNameOfCorruptRecord": _CORRUPT}
    parsed = F.from_json(text, f"struct<payload:variant,{_CORRUPT}:string>", options)
    duplicate_keys = parsed[_CORRUPT].isNotNull() & _envelope(text).isNotNull()
    return F.when(duplicate_keys, F.raise_error(F.lit(DUPLICATE_KEYS_ERROR))).otherwise(parsed["payload"])


def _is_envelope(envelope: Column) -> Column:
    # Spark's map keeps a duplicate key twice; Jackson's ObjectNode keeps it once: count distinct keys.
    keys = F.array_distinct(F.map_keys(envelope))
    exact = (F.size(keys) == 2) & F.array_contains(keys, "schema") & F.array_contains(keys, "payload")
    return F.coalesce(exact, F.lit(False))


def _drop_staged(df: DataFrame) -> DataFrame:
    return df.drop(_TEXT, _PARSED, _ENVELOPE, _PAYLOAD, _CORRUPT, _KEY, _FAST_KEY, _FAST)


def _fix_for_bad_json() -> str:
    return ("fix the producer of this topic, set schemas.enable=false if its values are plain JSON, "
            "or route bad records to a dead letter queue")
