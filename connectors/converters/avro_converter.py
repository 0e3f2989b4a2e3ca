"""Confluent's `io.confluent.connect.avro.AvroConverter`, as Spark column expressions over a Schema Registry.

Writing: the Connect schema becomes the Avro schema Confluent's AvroData builds (`connectors.storage.avro_schema`),
registered (or looked up) once per subject in the process; each value is Confluent's wire format, the magic
byte 0, the schema id in four big-endian bytes and the Avro binary encoding, written by Spark's own Avro
function (`to_avro`, from the spark-avro jar) on the executors. Reading: the distinct schema ids of the batch
(one small query), each writer schema fetched once, values decoded by `from_avro` and reshaped to the Connect
schema AvroData's `toConnectSchema` gives (`_avro_connect`). No record passes through Python.

Subjects follow `key.subject.name.strategy` / `value.subject.name.strategy`: Confluent's TopicNameStrategy
(`<topic>-key|value`, the default), RecordNameStrategy (the record's full name) or TopicRecordNameStrategy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.converters._avro_connect import (UnionEncoder, from_avro_output, has_union, spark_facing,
                                                 to_avro_input, to_connect_schema)
from connectors.converters._common import data_type, null_bytes, parse_settings
from connectors.converters._registry_client import RegistryClient, RegistryRefused
from connectors.storage.avro_schema import avro_schema, avro_schema_text
from ingest.api import Converter
from ingest.cache import BoundedSet
from ingest.config.configdef import ConfigDef, Importance, Password, Type, ValidString
from ingest.errors import ConfigError, DataError, Problem
from ingest.jvm import session_key
from ingest.records import TOPIC
from ingest.records.schema import ConnectSchema
from ingest.schema_registry.avro_schemas import ParsedSchema, incompatibilities

SCHEMA_REGISTRY_URL = "schema.registry.url"
CREDENTIALS_SOURCE = "basic.auth.credentials.source"
USER_INFO = "basic.auth.user.info"
AUTO_REGISTER = "auto.register.schemas"
USE_LATEST = "use.latest.version"
LATEST_STRICT = "latest.compatibility.strict"
KEY_STRATEGY = "key.subject.name.strategy"
VALUE_STRATEGY = "value.subject.name.strategy"
CONNECT_META_DATA = "connect.meta.data"
ENHANCED = "enhanced.avro.schema.support"
_STRATEGIES = {
    "io.confluent.kafka.serializers.subject.TopicNameStrategy": "topic",
    "io.confluent.kafka.serializers.subject.RecordNameStrategy": "record",
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy": "topic_record",
}
_PACKAGE = "io.confluent.kafka.serializers.subject."
MAGIC = b"\x00"
UNKNOWN_MAGIC = "Unknown magic byte!"
_ID = "__lakeconnect_avro_id"


class AvroConverter(Converter):
    """Avro values in Confluent's wire format, their schemas in a Schema Registry."""

    aliases = ("io.confluent.connect.avro.AvroConverter",)

    def __init__(self, configs: Mapping[str, Any] | None = None, is_key: bool = False):
        Converter.__init__(self, configs or {}, is_key)
        settings = parse_settings(type(self), self.configs)
        user_info = settings[USER_INFO] or settings.get("schema.registry." + USER_INFO)
        if isinstance(user_info, Password):
            user_info = user_info.value
        prefix = "key.converter." if is_key else "value.converter."
        self.client = RegistryClient.of(settings[SCHEMA_REGISTRY_URL] or [], settings[CREDENTIALS_SOURCE],
                                        str(user_info or ""), prefix + USER_INFO)
        self.auto_register = settings[AUTO_REGISTER]
        self.use_latest = settings[USE_LATEST]
        self.latest_strict = settings[LATEST_STRICT]
        self.meta = settings[CONNECT_META_DATA]
        strategy = str(settings[KEY_STRATEGY if is_key else VALUE_STRATEGY])
        full = strategy if "." in strategy else _PACKAGE + strategy
        if full not in _STRATEGIES:
            raise ConfigError([Problem(prefix + (KEY_STRATEGY if is_key else VALUE_STRATEGY),
                                       f"'{strategy}' is not supported; expected one of "
                                       f"{', '.join(s.rsplit('.', 1)[1] for s in _STRATEGIES)}")])
        self.strategy = _STRATEGIES[full]
        self.enhanced = settings[ENHANCED]

    @classmethod
    def config_def(cls) -> ConfigDef:
        d = ConfigDef()
        d.define(SCHEMA_REGISTRY_URL, Type.LIST, importance=Importance.HIGH,
                 doc="Comma-separated list of URLs for Schema Registry instances that can be used to register or "
                     "look up schemas.")
        d.define(CREDENTIALS_SOURCE, Type.STRING, "URL", ValidString.of("URL", "USER_INFO"),
                 Importance.MEDIUM, doc="Specify how to pick the credentials for the Basic Auth header: URL or "
                                        "USER_INFO (Confluent's SASL_INHERIT is not supported).")
        d.define(USER_INFO, Type.PASSWORD, "", importance=Importance.MEDIUM,
                 doc="Specify the user info for the Basic Auth in the form of {username}:{password}.")
        d.define("schema.registry." + USER_INFO, Type.PASSWORD, "", importance=Importance.MEDIUM,
                 doc="Specify the user info for the Basic Auth in the form of {username}:{password}.")
        d.define(AUTO_REGISTER, Type.BOOLEAN, True, importance=Importance.MEDIUM,
                 doc="Specify if the Serializer should attempt to register the Schema with Schema Registry.")
        d.define(USE_LATEST, Type.BOOLEAN, False, importance=Importance.LOW,
                 doc="Specify if the Serializer should use the latest subject version for serialization "
                     "(with auto.register.schemas=false).")
        d.define(LATEST_STRICT, Type.BOOLEAN, True, importance=Importance.LOW,
                 doc="Only use the latest subject version when it can read the records' own schema.")
        names = [*_STRATEGIES, *(s.rsplit(".", 1)[1] for s in _STRATEGIES)]
        for key in (KEY_STRATEGY, VALUE_STRATEGY):
            d.define(key, Type.STRING, _PACKAGE + "TopicNameStrategy", ValidString.of(*names), Importance.MEDIUM,
                     doc="Determines how to construct the subject name under which the schema is registered.")
        d.define("max.schemas.per.subject", Type.INT, 1000, importance=Importance.LOW, doc="Maximum number of "
                 "schemas to create or cache locally.")
        d.define("normalize.schemas", Type.BOOLEAN, False, importance=Importance.LOW, doc="Accepted; schemas are "
                 "kept in Avro's canonical text whatever it says.")
        d.define(CONNECT_META_DATA, Type.BOOLEAN, True, importance=Importance.LOW,
                 doc="Toggle for enabling/disabling connect converter to add its meta data to the output schema.")
        d.define(ENHANCED, Type.BOOLEAN, False, importance=Importance.LOW,
                 doc="Toggle for enabling/disabling enhanced avro schema support: Enum symbol preservation and "
                     "Package Name awareness.")
        d.define("schemas.cache.config", Type.INT, 1000, importance=Importance.LOW,
                 doc="Size of the converted schemas cache.")
        return d

    # --- writing -----------------------------------------------------------------------------------

    def from_connect(self, df: DataFrame, column: str, schema: ConnectSchema | None) -> DataFrame:
        return self.from_connect_for(df, column, schema, None)

    def from_connect_for(self, df: DataFrame, column: str, schema: ConnectSchema | None,
                         topics: Sequence[str] | None) -> DataFrame:
        dtype = data_type(df, column)
        if isinstance(dtype, T.NullType):
            return df.withColumn(column, null_bytes())
        to_avro = _spark_avro(df).to_avro  # before any registry call: a session without it fails first
        if schema is None:
            raise DataError("AvroConverter needs a schema: schemaless values (no schema, e.g. JsonConverter with "
                            "schemas.enable=false upstream) cannot be written as Avro; use JsonConverter")
        tree = avro_schema(schema, connect_meta_data=self.meta, enhanced=self.enhanced)
        text = avro_schema_text(schema, connect_meta_data=self.meta, enhanced=self.enhanced)
        if topics is None:
            topics = [r[0] for r in df.select(TOPIC).distinct().collect()]
        writers = {t: self._writer(self._subject(t, tree), text, tree) for t in topics}
        if not writers:
            return df.withColumn(column, null_bytes())
        value = F.col(column)
        shaped = to_avro_input(value, schema, enhanced=self.enhanced)
        # one expression per writer schema (the records' own, or with use.latest.version each subject's latest)
        by_writer: dict[str, tuple[Any, list[str], int]] = {}
        for t, (schema_id, writer) in writers.items():
            by_writer.setdefault(json.dumps(writer) + f"#{schema_id}", (writer, [], schema_id))[1].append(t)
        data = None
        for writer, members, schema_id in by_writer.values():
            if has_union(schema):  # Spark's to_avro cannot write them: the encoding is composed around them
                body = UnionEncoder(writer, to_avro, enhanced=self.enhanced).encode(value, schema)
            else:
                body = to_avro(shaped, json.dumps(spark_facing(writer)))
            encoded = F.concat(F.lit(MAGIC + schema_id.to_bytes(4, "big")), body)
            if len(by_writer) == 1:
                data = encoded
            else:
                test = F.col(TOPIC).isin(members)
                data = F.when(test, encoded) if data is None else data.when(test, encoded)
        return df.withColumn(column, F.when(value.isNull(), null_bytes()).otherwise(data))

    def _subject(self, topic: str, tree: Any) -> str:
        part = "key" if self.is_key else "value"
        if self.strategy == "topic":
            return f"{topic}-{part}"
        if not isinstance(tree, dict) or tree.get("type") != "record":
            raise DataError(f"the {part} schema is not a record, so RecordNameStrategy and TopicRecordNameStrategy "
                            "have no name for its subject; use TopicNameStrategy")
        name = tree["name"] if "namespace" not in tree else f"{tree['namespace']}.{tree['name']}"
        return name if self.strategy == "record" else f"{topic}-{name}"

    def _writer(self, subject: str, text: str, tree: Any) -> tuple[int, Any]:
        """The schema id the values carry and the Avro schema they are written with, chosen as Confluent's
        serializer chooses: registered (auto.register.schemas, the default), else the subject's latest version
        (use.latest.version; with latest.compatibility.strict it must be able to read the records' own schema),
        else the records' own schema looked up."""
        try:
            if self.auto_register:
                return self.client.register(subject, text), tree
            if self.use_latest:
                schema_id, _, latest = self.client.latest(subject)
                if latest != text and self.latest_strict:
                    problems = incompatibilities("BACKWARD", ParsedSchema(latest), [(ParsedSchema(text), None)])
                    if problems:
                        raise DataError(f"use.latest.version: the latest schema of subject '{subject}' cannot read "
                                        f"the records' schema ({'; '.join(problems[:1])}); register a compatible "
                                        "one, or set latest.compatibility.strict=false to disable this check")
                return schema_id, json.loads(latest)
            return self.client.lookup(subject, text)[0], tree
        except RegistryRefused as e:
            if e.status == 409:
                raise DataError(f"the Schema Registry refused the schema for subject '{subject}': {e}") from None
            if e.code in (40401, 40403) and not self.auto_register:
                raise DataError(f"subject '{subject}' of the Schema Registry does not have this schema, and "
                                "auto.register.schemas=false: register it first, or set "
                                "auto.register.schemas=true") from None
            raise DataError(f"the Schema Registry refused subject '{subject}' (HTTP {e.status}, error code "
                            f"{e.code}): {e}") from None

    # --- reading -----------------------------------------------------------------------------------

    def record_errors(self, df: DataFrame, column: str) -> Column:
        """A value without the magic byte, or whose schema id the registry does not know (one small query for
        the batch's ids; each id asked of the registry once per process)."""
        _spark_avro(df)
        value = F.col(column)
        framed = (F.length(value) >= 5) & (F.substring(value, 1, 1) == F.lit(MAGIC))
        ids = [r[0] for r in df.select(F.when(framed, _schema_id(value)).alias(_ID)).distinct().collect()
               if r[0] is not None]
        unknown = [i for i in ids if self._known(int(i)) is None]
        reason = F.when(value.isNull(), F.lit(None).cast("string")).when(
            ~framed, F.lit(f"Converting byte[] to Kafka Connect data failed due to serialization error: "
                           f"{UNKNOWN_MAGIC}"))
        for i in unknown:
            reason = reason.when(_schema_id(value) == F.lit(int(i)), F.lit(
                f"Converting byte[] to Kafka Connect data failed due to serialization error: Error retrieving Avro "
                f"{'key' if self.is_key else 'value'} schema for id {i}: Schema {i} not found; error code: 40403"))
        return reason

    def _known(self, schema_id: int) -> str | None:
        try:
            return self.client.schema(schema_id)
        except RegistryRefused as e:
            if e.status == 404:
                return None
            raise

    def to_connect(self, df: DataFrame, column: str) -> list[tuple[ConnectSchema | None, DataFrame]]:
        value = F.col(column)
        tagged = df.withColumn(_ID, F.when(value.isNull(), F.lit(None)).otherwise(_schema_id(value)))
        pairs = [(r[0], r[1]) for r in tagged.select(TOPIC, _ID).distinct().collect()]
        out: list[tuple[ConnectSchema | None, DataFrame]] = []
        if any(i is None for _, i in pairs):
            out.append((None, tagged.filter(F.col(_ID).isNull()).drop(_ID).withColumn(column, F.lit(None))))
        groups: dict[ConnectSchema, list[tuple[str, int]]] = {}
        trees: dict[int, Any] = {}
        for topic, schema_id in pairs:
            if schema_id is None:
                continue
            text = self._writer_schema(int(schema_id))
            trees[int(schema_id)] = json.loads(text)
            version = self._version(topic, trees[int(schema_id)], text)
            schema = to_connect_schema(trees[int(schema_id)], version, connect_meta_data=self.meta,
                                       enhanced=self.enhanced)
            groups.setdefault(schema, []).append((topic, int(schema_id)))
        from_avro = _spark_avro(df).from_avro
        for schema, members in groups.items():
            frames = []
            for schema_id in sorted({i for _, i in members}):
                topics = [t for t, i in members if i == schema_id]
                part = tagged.filter((F.col(_ID) == schema_id) & F.col(TOPIC).isin(topics))
                decoded = from_avro(F.expr(f"substring(`{column}`, 6)"), json.dumps(spark_facing(trees[schema_id])),
                                    {"mode": "FAILFAST"})
                part = part.withColumn(_ID, decoded)  # decoded once, reshaped from the column
                frames.append(part.withColumn(column, from_avro_output(F.col(_ID), schema)).drop(_ID))
            frame = frames[0]
            for more in frames[1:]:
                frame = frame.unionByName(more)
            out.append((schema, frame))
        return out

    def _writer_schema(self, schema_id: int) -> str:
        try:
            return self.client.schema(schema_id)
        except RegistryRefused as e:
            raise DataError(f"Error retrieving Avro {'key' if self.is_key else 'value'} schema for id {schema_id}: "
                            f"{e}") from None

    def _version(self, topic: str, tree: Any, text: str) -> int | None:
        """The registry's version of the writer schema under the record's subject, which AvroData gives the
        Connect schema when the Avro schema has no connect.version; None when the subject does not have it."""
        if isinstance(tree, dict) and "connect.version" in tree:
            return None
        try:
            return self.client.lookup(self._subject(topic, tree), text)[1]
        except (RegistryRefused, DataError):
            return None


def _schema_id(value: Column) -> Column:
    """The four bytes after the magic byte, as the big-endian id they are."""
    return F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long")


# Sessions (ingest.jvm.session_key) known to have spark-avro: a process has one, or a few made by newSession().
_CHECKED: BoundedSet[tuple[int, str]] = BoundedSet(64)


def _spark_avro(df: DataFrame):
    """pyspark's Avro functions, once the session is known to have Spark's spark-avro jar (their expressions are
    in it; the functions themselves are in Spark's SQL API jar, which every session has); else a ConfigError
    saying how to add it."""
    import pyspark
    from pyspark.sql.avro import functions

    session = df.sparkSession
    key = session_key(session)  # not id(session): a Python object's id is reused once it is collected
    if key not in _CHECKED:
        try:
            loader = session._jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
            session._jvm.java.lang.Class.forName("org.apache.spark.sql.avro.CatalystDataToAvro", False, loader)
        except Exception:  # noqa: BLE001 - Py4J raises its own error for a missing class
            raise ConfigError([Problem("value.converter", "AvroConverter needs Spark's Avro functions (the spark-avro "
                                       "jar): run `make setup`, which fetches it into .jars/spark-avro/, or set "
                                       "spark.jars.packages=org.apache.spark:spark-avro_2.13:"
                                       f"{pyspark.__version__} in the worker's Spark settings")]) from None
        _CHECKED.add(key)
    return functions
