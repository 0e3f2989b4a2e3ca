"""Debezium's transforms over change events, as column expressions: ExtractNewRecordState ("unwrap") and
ByLogicalTableRouter. Behaviour follows Debezium 2.3 (`io.debezium.transforms`).

A Debezium change event's value is an envelope struct (`before`, `after`, `source`, `op`, `ts_ms`,
`transaction`) whose schema name ends with `.Envelope`; `before`/`after` are optional structs named
`<prefix>.<db>.<table>.Value`. Schema change and heartbeat events have other schemas and pass through.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.transforms._support import java_class_of, list_setting, require_struct
from connectors.transforms.headers import CrossCheckedConfigDef, append_headers, header_array, header_text
from ingest.api import Transform
from ingest.config.configdef import ConfigDef, Importance, Type, ValidRegex, ValidString
from ingest.errors import DATA_EXCEPTION, DataError, Problem
from ingest.records import HEADERS, KEY, TOPIC, VALUE, RecordBatch
from ingest.records.schema import OPTIONAL_STRING_SCHEMA, STRING_SCHEMA, ConnectSchema, Field

ENVELOPE_SUFFIX = ".Envelope"
BEFORE, AFTER, SOURCE, OPERATION, TIMESTAMP, TRANSACTION = "before", "after", "source", "op", "ts_ms", "transaction"
DELETED_FIELD = "__deleted"
METADATA_FIELD_PREFIX = "__"
PURPOSE = "source field insertion"
ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"
NULL_POINTER = "java.lang.NullPointerException"
SCHEMA_BUILDER = "org.apache.kafka.connect.errors.SchemaBuilderException"
# TransactionMonitor's keys: an unqualified field of these names lives in the `transaction` block.
TRANSACTION_KEYS = ("id", "total_order", "data_collection_order")


def is_envelope(schema: ConnectSchema | None) -> bool:
    """SmtManager.isValidEnvelope: a value schema whose name ends with `.Envelope`."""
    return schema is not None and schema.name is not None and schema.name.endswith(ENVELOPE_SUFFIX)


def _error(message: str, exception: str) -> DataError:
    return DataError(message, exception_class=exception)


def _java_split(text: str, separator: str) -> list[str]:
    """Java's String.split (limit 0): trailing empty strings are removed."""
    parts = text.split(separator)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return [] if parts == [""] and text != "" else parts


# --- ExtractNewRecordState ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldReference:
    """ExtractNewRecordState.FieldReference: `op`, `source.ts_ms`, `transaction.id`, `lsn:LSN`, ... as
    (hosting struct or None for the envelope itself, field, name of the new field or header)."""

    struct: str | None
    field: str
    new_field: str

    @classmethod
    def parse(cls, prefix: str, spec: str) -> FieldReference:
        parts = _java_split(spec, ":")
        splits = _java_split(parts[0], ".") if parts else []
        if not splits or len(parts) > 2:
            raise ValueError(f"Unexpected field name: {spec}")
        field = splits[0] if len(splits) == 1 else splits[1]
        struct = _determine_struct(field) if len(splits) == 1 else splits[0]
        if len(parts) == 2:
            return cls(struct, field, prefix + parts[1])
        return cls(struct, field, prefix + (field if len(splits) == 1 else f"{struct}_{field}"))

    def resolve(self, envelope: ConnectSchema) -> tuple[ConnectSchema | None, str | None, str | None]:
        """(schema of the referenced field, problem, exception class) against an envelope schema."""
        parent = envelope
        if self.struct is not None:
            host = envelope.field(self.struct)
            if host is None:
                return None, f"No field '{self.struct}' in the envelope schema {envelope.name}", NULL_POINTER
            parent = host.schema
            if parent.type != "struct":
                return None, "Cannot look up fields on non-struct type", DATA_EXCEPTION
        found = parent.field(self.field)
        if found is None:
            return None, f"Unexpected field name: {self.field}", ILLEGAL_ARGUMENT
        return found.schema, None, None

    def value(self, envelope: Column) -> Column:
        """getValue: the field of the hosting struct (null when the struct is null, e.g. no transaction)."""
        host = envelope if self.struct is None else envelope[self.struct]
        return host[self.field]


def _determine_struct(field: str) -> str | None:
    if field in (OPERATION, TIMESTAMP):
        return None
    return TRANSACTION if field in TRANSACTION_KEYS else SOURCE


def _field_references(key: str, value: Any) -> str | None:
    for spec in list_setting(value):
        try:
            FieldReference.parse("", spec)
        except ValueError as e:
            return str(e)
    return None


def _optional_copy(schema: ConnectSchema) -> ConnectSchema:
    """FieldReference.getSchema: the field's schema basics, optional, without its default."""
    return replace(schema, optional=True, default=None)


def _struct_schema(basis: ConnectSchema, fields: list[tuple[str, ConnectSchema]], optional: bool) -> ConnectSchema:
    """A struct with `basis`'s name, version, doc and parameters and the given fields."""
    names = [n for n, _ in fields]
    duplicate = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if duplicate is not None:
        raise _error(f"Cannot create field because of field name duplication {duplicate}", SCHEMA_BUILDER)
    return ConnectSchema("struct", optional, basis.name, basis.version, basis.doc, basis.parameters,
                         fields=tuple(Field(n, i, s) for i, (n, s) in enumerate(fields)))


@dataclass(frozen=True)
class _Resolved:
    """A FieldReference checked against the batch's envelope schema."""

    ref: FieldReference
    schema: ConnectSchema | None
    problem: str | None
    exception: str | None


class ExtractNewRecordState(Transform):
    """Debezium's `ExtractNewRecordState` (2.3): a change event becomes the row state it carries.

    - create/update/read (`after` set): the value becomes `after`, plus the `add.fields`; the topic
      becomes `after.<route.by.field>` when that is set and not null.
    - delete (`after` null): `delete.handling.mode` `drop` (default) drops it; `rewrite` gives `before`
      plus the `add.fields` and `__deleted` = "true" (then creates/updates get `__deleted` = "false");
      `none` gives a null value (a tombstone), on `before.<route.by.field>`'s topic when routed.
    - truncate (`before` and `after` null): dropped.
    - tombstones (null values): dropped with `drop.tombstones` (default true), else passed on, with a
      header `<prefix>op` = "d" when `add.headers` names `op`.
    - `add.headers` adds headers (as text, see `header_text`) from the envelope to every change event.
    - records that are not envelopes (no schema, or a value schema whose name does not end with
      `.Envelope`: heartbeats, schema changes) pass unchanged; their tombstones are still handled.

    The value schema is Debezium's: a copy of `after`'s schema (name, version, doc, parameters; not
    optional, as `SchemaUtil.copySchemaBasics` makes it) with each added field as an optional copy of its
    schema, then `__deleted` (optional string) in `rewrite` mode. A batch has one value schema, so the
    null values of `none`-mode deletes carry that schema too (Debezium gives them `after`'s own schema).
    A field named in `add.fields`/`add.headers` that the envelope lacks fails the records Debezium would
    fail, with its message (`Unexpected field name: x`).
    """

    aliases = ("io.debezium.transforms.ExtractNewRecordState",)
    scoped = True

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (ConfigDef()
                .define("drop.tombstones", Type.BOOLEAN, True, importance=Importance.LOW,
                        doc="Debezium by default generates a tombstone record to enable Kafka compaction after a "
                            "delete record was generated. This record is usually filtered out to avoid duplicates as "
                            "a delete record is converted to a tombstone record, too")
                .define("delete.handling.mode", Type.STRING, "drop",
                        ValidString.of("drop", "rewrite", "none", case_insensitive=True), importance=Importance.MEDIUM,
                        doc="How to handle delete records. Options are: none - records are passed,drop - records are "
                            "removed (the default),rewrite - __deleted field is added to records.")
                .define("route.by.field", Type.STRING, "", importance=Importance.LOW,
                        doc="The column which determines how the events will be routed, the value will replace the "
                            "topic name.")
                .define("add.fields.prefix", Type.STRING, METADATA_FIELD_PREFIX, importance=Importance.LOW,
                        doc="Adds this prefix to each field listed.")
                .define("add.fields", Type.LIST, [], _field_references, importance=Importance.LOW,
                        doc="Adds each field listed, prefixed with __ (or __<struct>_ if the struct is specified). "
                            "Example: 'version,connector,source.ts_ms' would add __version, __connector and "
                            "__source_ts_ms fields. Optionally one can also map new field name like "
                            "version:VERSION,connector:CONNECTOR,source.ts_ms:EVENT_TIMESTAMP.Please note that the "
                            "new field name is case-sensitive.")
                .define("add.headers.prefix", Type.STRING, METADATA_FIELD_PREFIX, importance=Importance.LOW,
                        doc="Adds this prefix listed to each header.")
                .define("add.headers", Type.LIST, [], _field_references, importance=Importance.LOW,
                        doc="Adds each field listed to the header,  __ (or __<struct>_ if the struct is specified). "
                            "Example: 'version,connector,source.ts_ms' would add __version, __connector and "
                            "__source_ts_ms fields. Optionally one can also map new field name like "
                            "version:VERSION,connector:CONNECTOR,source.ts_ms:EVENT_TIMESTAMP.Please note that the "
                            "new field name is case-sensitive."))

    # --- settings -----------------------------------------------------------------------------------

    @property
    def drop_tombstones(self) -> bool:
        return self.config["drop.tombstones"]

    @property
    def mode(self) -> str:
        return self.config["delete.handling.mode"].strip().lower()

    @property
    def route_by_field(self) -> str | None:
        return self.config["route.by.field"] or None

    def _references(self, setting: str) -> list[FieldReference]:
        prefix = self.config[f"{setting}.prefix"]
        return [FieldReference.parse(prefix, spec) for spec in list_setting(self.config[setting])]

    # --- the transform --------------------------------------------------------------------------------

    def apply(self, batch: RecordBatch) -> RecordBatch:
        tombstone = F.col(VALUE).isNull()
        envelope = batch.value_schema
        if not is_envelope(envelope):
            return self._tombstones_only(batch, tombstone)
        require_struct(envelope, "field extraction")
        for name in (AFTER, BEFORE):  # Kafka's ExtractField on a struct without the field
            if envelope.field(name) is None:
                raise _error(f"Unknown field: {name}", ILLEGAL_ARGUMENT)
        row_schema = require_struct(envelope.field(AFTER).schema, PURPOSE)
        if self.mode == "rewrite" and envelope.field(BEFORE).schema != row_schema:
            raise DataError(f"The 'before' and 'after' schemas of {envelope.name} differ: one batch cannot hold both "
                            "as rewritten values")
        headers = [self._resolve(r, envelope) for r in self._references("add.headers")]
        fields = [self._resolve(r, envelope) for r in self._references("add.fields")]
        value_schema = self._value_schema(row_schema, [f for f in fields if f.problem is None])

        value = F.col(VALUE)
        after, before = value[AFTER], value[BEFORE]
        live = ~tombstone
        change = live & after.isNotNull()
        delete = live & after.isNull() & before.isNotNull()
        truncate = live & after.isNull() & before.isNull()

        # Failures in Debezium's order: headers, then routing, then the added fields.
        for r in headers:
            if r.problem:
                batch = batch.fail(live, r.problem, exception=r.exception)
        route_problem = self._route_problem(row_schema)
        if route_problem:
            batch = batch.fail(change | delete, route_problem)
        reaches_fields = change | (delete & F.lit(self.mode == "rewrite"))
        for r in fields:
            if r.problem:
                batch = batch.fail(reaches_fields, r.problem, exception=r.exception)

        batch = batch.drop((tombstone & F.lit(self.drop_tombstones)) | truncate | (delete & F.lit(self.mode == "drop")))
        columns = {
            HEADERS: self._headers(batch, headers, tombstone),
            VALUE: self._value(after, before, change, delete, row_schema, fields),
        }
        if self.route_by_field and not route_problem:
            columns[TOPIC] = self._topic(after, before, change, delete)
        return batch.set(columns).with_schemas(value_schema=value_schema)

    def _tombstones_only(self, batch: RecordBatch, tombstone: Column) -> RecordBatch:
        """Not an envelope: only Debezium's tombstone handling (it runs before the envelope check)."""
        if self.drop_tombstones:
            return batch.drop(tombstone)
        entries = self._tombstone_headers()
        return batch.set({HEADERS: append_headers(batch, entries, where=tombstone)}) if entries else batch

    def _tombstone_headers(self) -> list[tuple[str, Column]]:
        """makeHeaders for a tombstone: only `op` gives a header, "d"."""
        return [(r.new_field, F.lit("d")) for r in self._references("add.headers") if r.field == OPERATION]

    @staticmethod
    def _resolve(ref: FieldReference, envelope: ConnectSchema) -> _Resolved:
        return _Resolved(ref, *ref.resolve(envelope))

    def _value_schema(self, row_schema: ConnectSchema, fields: list[_Resolved]) -> ConnectSchema:
        columns = [(f.name, f.schema) for f in row_schema.fields]
        columns += [(r.ref.new_field, _optional_copy(r.schema)) for r in fields]
        if self.mode == "rewrite":
            columns.append((DELETED_FIELD, OPTIONAL_STRING_SCHEMA))
        return _struct_schema(row_schema, columns, optional=False)

    def _route_problem(self, row_schema: ConnectSchema) -> str | None:
        """Struct.getString's checks on `route.by.field`."""
        name = self.route_by_field
        if name is None:
            return None
        found = row_schema.field(name)
        if found is None:
            return f"{name} is not a valid field name"
        if found.schema.type != "string":
            return f"Field '{name}' is not of type STRING"
        return None

    def _topic(self, after: Column, before: Column, change: Column, delete: Column) -> Column:
        topic, name = F.col(TOPIC), self.route_by_field
        routed = F.when(change, F.coalesce(after[name], topic))
        if self.mode == "none":  # in rewrite mode Debezium rewrites the original record, losing the route
            routed = routed.when(delete, F.coalesce(before[name], topic))
        return routed.otherwise(topic)

    def _headers(self, batch: RecordBatch, headers: list[_Resolved], tombstone: Column) -> Column:
        value = F.col(VALUE)
        data_type = batch.df.schema[VALUE].dataType
        live = [(r.ref.new_field, header_text(r.ref.value(value), _spark_type(data_type, r.ref), r.schema))
                for r in headers if r.problem is None]
        dead = [] if self.drop_tombstones else self._tombstone_headers()
        if not live and not dead:
            return F.col(HEADERS)
        return append_headers(batch, F.when(tombstone, header_array(dead)).otherwise(header_array(live)))

    def _value(self, after: Column, before: Column, change: Column, delete: Column, row_schema: ConnectSchema,
               fields: list[_Resolved]) -> Column:
        envelope = F.col(VALUE)
        added = [(r.ref.new_field, r.ref.value(envelope)) for r in fields if r.problem is None]

        def row(state: Column, deleted: str) -> Column:
            columns = [state[f.name].alias(f.name) for f in row_schema.fields]
            columns += [c.alias(n) for n, c in added]
            if self.mode == "rewrite":
                columns.append(F.lit(deleted).alias(DELETED_FIELD))
            return F.struct(*columns)

        out = F.when(change, row(after, "false"))
        if self.mode == "rewrite":
            out = out.when(delete, row(before, "true"))
        return out


def _spark_type(envelope_type: T.DataType, ref: FieldReference) -> T.DataType:
    host = envelope_type if ref.struct is None else envelope_type[ref.struct].dataType
    return host[ref.field].dataType


# --- ByLogicalTableRouter ----------------------------------------------------------------------------


KEY_FIELD_NAME = "key.field.name"
KEY_FIELD_REGEX = "key.field.regex"
KEY_FIELD_REPLACEMENT = "key.field.replacement"


class RequiredValue:
    """Debezium's Field.isRequired: a value that is not blank."""

    def __call__(self, key: str, value: Any) -> str | None:
        return "A value is required" if value is None or not str(value).strip() else None

    def describe(self) -> str:
        return "non-blank string"


class _RequiredRegex(ValidRegex):
    def __call__(self, key: str, value: Any) -> str | None:
        return RequiredValue()(key, value) or super().__call__(key, value)


def _key_field_replacement(values: Mapping[str, Any]) -> list[Problem]:
    """ByLogicalTableRouter.validateKeyFieldReplacement."""
    regex = (values.get(KEY_FIELD_REGEX) or "").strip()
    replacement = (values.get(KEY_FIELD_REPLACEMENT) or "").strip()
    if regex and not replacement:
        return [Problem(KEY_FIELD_REPLACEMENT, f"{KEY_FIELD_REPLACEMENT} must be non-empty if {KEY_FIELD_REGEX} is set.")]
    return []


def adjust_schema_name(name: str, mode: str) -> str:
    """Debezium's SchemaNameAdjuster: `avro` replaces each character an Avro full name cannot hold with `_`,
    `avro_unicode` with `_uXXXX` (and `_` itself, its escape character); `none` leaves the name as it is."""
    if mode == "none" or not name:
        return name
    unicode = mode == "avro_unicode"

    def first_ok(c: str) -> bool:
        return ("a" <= c <= "z") or ("A" <= c <= "Z") or (c == "_" and not unicode)

    def replacement(c: str) -> str:
        if not unicode:
            return "_"
        digits = format(ord(c), "x")
        return "_u" + ("00" + digits if len(digits) <= 2 else digits)

    units = name.encode("utf-16-be")  # Java iterates UTF-16 code units
    chars = [units[i:i + 2].decode("utf-16-be", "surrogatepass") for i in range(0, len(units), 2)]
    out = []
    for i, c in enumerate(chars):
        ok = first_ok(c) if i == 0 else (first_ok(c) or c == "." or "0" <= c <= "9")
        out.append(c if ok else replacement(c))
    return "".join(out)


class ByLogicalTableRouter(Transform):
    """Debezium's `ByLogicalTableRouter` (2.3): routes the events of several physical tables to one topic.

    A record whose topic fully matches `topic.regex` goes to `topic.replacement` (Java regex, `$1` refers
    to a group); other records, and records whose new topic would be empty, pass unchanged. With
    `key.enforce.uniqueness` (default true) the key struct gains the field `key.field.name`
    (`__dbz__physicalTableIdentifier`, a required string) holding the original topic, or
    `key.field.regex`/`key.field.replacement` applied to it. As Debezium's updateKeySchema /
    updateEnvelopeSchema: the key schema is renamed `<new topic>.Key`, an envelope value schema
    `<new topic>.Envelope` and its `before`/`after` schemas `<new topic>.Value`, each name adjusted as
    `schema.name.adjustment.mode` says; tombstones and values that are not envelopes keep their schema.
    A key that is not a Struct fails (`Only Struct objects supported for [Updating schema]`); a null key
    stays null (Debezium also gives it no key schema; here it carries the batch's routed key schema).

    A batch holds one key schema and one value schema while these names depend on the new topic: the
    batch's topics are looked up once (one small distinct query when the batch does not know them) and,
    when its records would get different schemas (different new topics, or some routed and some not),
    the whole batch fails with a DataError that says so. Scope the transform with a `TopicNameMatches`
    predicate to route such topics separately. `logical.table.cache.size` is accepted; nothing here
    needs its cache.
    """

    aliases = ("io.debezium.transforms.ByLogicalTableRouter",)
    scoped = True

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (CrossCheckedConfigDef(_key_field_replacement)
                .define("topic.regex", Type.STRING, validator=_RequiredRegex(), importance=Importance.LOW,
                        doc="The regex used for extracting the name of the logical table from the original topic name.")
                .define("topic.replacement", Type.STRING, validator=RequiredValue(), importance=Importance.LOW,
                        doc="The replacement string used in conjunction with topic.regex. This will be used to create "
                            "the new topic name.")
                .define("key.enforce.uniqueness", Type.BOOLEAN, True, importance=Importance.LOW,
                        doc="Augment each record's key with a field denoting the source topic. This field "
                            "distinguishes records coming from different physical tables which may otherwise have "
                            "primary/unique key conflicts. If the source tables are guaranteed to have globally "
                            "unique keys then this may be set to false to disable key rewriting.")
                .define(KEY_FIELD_REGEX, Type.STRING, None, ValidRegex(), importance=Importance.LOW,
                        doc="The regex used for extracting the physical table identifier from the original topic "
                            "name. Now that multiple physical tables can share a topic, the event's key may need to "
                            "be augmented to include fields other than just those for the record's primary/unique "
                            "key, since these are not guaranteed to be unique across tables. We need some identifier "
                            "added to the key that distinguishes the different physical tables.")
                .define(KEY_FIELD_NAME, Type.STRING, "__dbz__physicalTableIdentifier", importance=Importance.LOW,
                        doc="Each record's key schema will be augmented with this field name. The purpose of this "
                            "field is to distinguish the different physical tables that can now share a single "
                            "topic. Make sure not to configure a field name that is at risk of conflict with "
                            "existing key schema field names.")
                .define(KEY_FIELD_REPLACEMENT, Type.STRING, None, importance=Importance.LOW,
                        doc="The replacement string used in conjunction with key.field.regex. This will be used to "
                            "create the physical table identifier in the record's key.")
                .define("schema.name.adjustment.mode", Type.STRING, "none",
                        ValidString.of("none", "avro", "avro_unicode", case_insensitive=True),
                        importance=Importance.LOW,
                        doc="Specify how the message key schema names derived from the resulting topic name should be "
                            "adjusted for compatibility with the message converter used by the connector, "
                            "including:'avro' replaces the characters that cannot be used in the Avro type name with "
                            "underscore (default)'none' does not apply any adjustment")
                .define("logical.table.cache.size", Type.INT, 16, importance=Importance.LOW,
                        doc="The size used for holding the max entries in LRUCache. The cache will keep the old/new "
                            "schema for logical table key and value, also cache the derived key and topic regex "
                            "result for improving the source record transformation."))

    # --- expressions ----------------------------------------------------------------------------------

    def _new_topic(self) -> Column:
        """determineNewTopic: the replacement when the whole topic matches, else null (Java regex, as Spark's)."""
        pattern = f"^(?:{self.config['topic.regex']})$"
        topic = F.col(TOPIC)
        return F.when(topic.rlike(pattern), F.regexp_replace(topic, pattern, self.config["topic.replacement"]))

    def _physical_table(self) -> Column:
        """updateKey's identifier: the old topic, or key.field.regex/replacement applied to it when it matches."""
        topic = F.col(TOPIC)
        regex = (self.config[KEY_FIELD_REGEX] or "").strip()
        if not regex:
            return topic
        pattern = f"^(?:{self.config[KEY_FIELD_REGEX]})$"
        replaced = F.regexp_replace(topic, pattern, self.config[KEY_FIELD_REPLACEMENT])
        return F.when(topic.rlike(pattern), replaced).otherwise(topic)

    def _adjust(self, name: str) -> str:
        return adjust_schema_name(name, self.config["schema.name.adjustment.mode"].strip().lower())

    # --- schemas --------------------------------------------------------------------------------------

    def _key_schema(self, key_schema: ConnectSchema | None, new_topic: str) -> ConnectSchema | None:
        """updateKeySchema (a key that is not a struct is failed record by record, its schema kept)."""
        if key_schema is None or key_schema.type != "struct":
            return key_schema
        fields = [(f.name, f.schema) for f in key_schema.fields]
        if self.config["key.enforce.uniqueness"]:
            fields.append((self.config[KEY_FIELD_NAME], STRING_SCHEMA))
        return replace(_struct_schema(key_schema, fields, key_schema.optional), name=self._adjust(new_topic + ".Key"))

    def _value_schema(self, value_schema: ConnectSchema | None, new_topic: str) -> ConnectSchema | None:
        """updateEnvelopeSchema: envelopes renamed, their before/after schemas renamed; other values as they are."""
        if not is_envelope(value_schema) or value_schema.type != "struct":
            return value_schema
        before = value_schema.field(BEFORE)
        if before is None:
            raise _error(f"The envelope schema {value_schema.name} has no '{BEFORE}' field", NULL_POINTER)
        row = replace(before.schema, name=self._adjust(new_topic + ".Value"), default=None)
        fields = [(f.name, row if f.name in (BEFORE, AFTER) else f.schema) for f in value_schema.fields]
        envelope = _struct_schema(value_schema, fields, value_schema.optional)
        return replace(envelope, name=self._adjust(new_topic + ENVELOPE_SUFFIX))

    def _routes(self, batch: RecordBatch) -> dict[str, str | None]:
        """Old topic -> new topic (None: not routed) for the topics of the records in scope."""
        if batch.topics is not None:
            topics = batch.df.sparkSession.createDataFrame([(t,) for t in batch.topics], f"{TOPIC} string")
        else:
            topics = batch.df.filter(batch.active()).select(TOPIC).distinct()
        rows = topics.select(F.col(TOPIC), self._new_topic().alias("new")).collect()
        return {row[0]: (row[1] or None) for row in rows}

    # --- the transform --------------------------------------------------------------------------------

    def apply(self, batch: RecordBatch) -> RecordBatch:
        routes = self._routes(batch)
        new_topics = sorted({t for t in routes.values() if t})
        if not new_topics:
            return batch
        outcomes = {t: (self._key_schema(batch.key_schema, t), self._value_schema(batch.value_schema, t))
                    for t in new_topics}
        if any(new is None for new in routes.values()):
            outcomes[None] = (batch.key_schema, batch.value_schema)
        if len(set(outcomes.values())) > 1:
            unrouted = sorted(old for old, new in routes.items() if new is None)
            raise DataError(
                f"ByLogicalTableRouter: the records of this batch would get different key/value schemas (new topics "
                f"{new_topics}{', unrouted topics ' + str(unrouted) if unrouted else ''}); a batch holds one key "
                "schema and one value schema. Give this transform a TopicNameMatches predicate per logical table "
                "so that each runs on records that share their new topic.")
        key_schema, value_schema = outcomes[new_topics[0]]
        new_topic = self._new_topic()
        routed = F.coalesce(new_topic != F.lit(""), F.lit(False))
        batch = self._fail_unstructured_keys(batch, routed)
        columns = {TOPIC: F.when(routed, new_topic).otherwise(F.col(TOPIC))}
        if key_schema is not batch.key_schema and key_schema is not None and self.config["key.enforce.uniqueness"]:
            key = F.col(KEY)
            extended = F.struct(*[key[f.name].alias(f.name) for f in batch.key_schema.fields],
                                self._physical_table().alias(self.config[KEY_FIELD_NAME]))
            columns[KEY] = F.when(key.isNull(), F.lit(None)).otherwise(extended)
        return batch.set(columns).with_schemas(key_schema=key_schema, value_schema=value_schema)

    def _fail_unstructured_keys(self, batch: RecordBatch, routed: Column) -> RecordBatch:
        """requireStruct(record.key(), "Updating schema") for the non-null keys of routed records."""
        key = F.col(KEY)
        key_type = batch.df.schema[KEY].dataType
        if batch.key_schema is None and isinstance(key_type, T.VariantType):
            message = F.concat(F.lit("Only Struct objects supported for [Updating schema], found: "),
                               F.coalesce(java_class_of(key), F.lit("null")))
            return batch.fail(routed & key.isNotNull(), message)
        if batch.key_schema is not None and batch.key_schema.type != "struct":
            try:
                require_struct(batch.key_schema, "Updating schema")
            except DataError as e:
                return batch.fail(routed & key.isNotNull(), str(e))
        return batch
