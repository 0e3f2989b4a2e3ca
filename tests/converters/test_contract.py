"""The converter contract, run by every converter plugin found through the registry's entry points: a converter
the suite has no sample for fails it (add the sample to EXPECTED), so none escapes it."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from ingest.api import Converter, HeaderConverter
from ingest.config.configdef import ConfigDef
from ingest.records import schema as S
from ingest.registry import PluginKind, default_registry
from tests.converters.helpers import assert_no_python, values

# Kafka's classes and, for each record converter, a column it can write and read back.
_STORAGE, _CONVERTERS = "org.apache.kafka.connect.storage.", "org.apache.kafka.connect.converters."
EXPECTED = {
    "JsonConverter": ("org.apache.kafka.connect.json.JsonConverter", "string", ["a", None], S.OPTIONAL_STRING_SCHEMA),
    "StringConverter": (_STORAGE + "StringConverter", "string", ["a", None], S.OPTIONAL_STRING_SCHEMA),
    "ByteArrayConverter": (_CONVERTERS + "ByteArrayConverter", "binary", [b"a", None], S.OPTIONAL_BYTES_SCHEMA),
    "BooleanConverter": (_CONVERTERS + "BooleanConverter", "boolean", [True, False, None], S.OPTIONAL_BOOLEAN_SCHEMA),
    "ShortConverter": (_CONVERTERS + "ShortConverter", "smallint", [1, None], S.OPTIONAL_INT16_SCHEMA),
    "IntegerConverter": (_CONVERTERS + "IntegerConverter", "int", [1, None], S.OPTIONAL_INT32_SCHEMA),
    "LongConverter": (_CONVERTERS + "LongConverter", "bigint", [1, None], S.OPTIONAL_INT64_SCHEMA),
    "FloatConverter": (_CONVERTERS + "FloatConverter", "float", [1.5, None], S.OPTIONAL_FLOAT32_SCHEMA),
    "DoubleConverter": (_CONVERTERS + "DoubleConverter", "double", [1.5, None], S.OPTIONAL_FLOAT64_SCHEMA),
    "SimpleHeaderConverter": (_STORAGE + "SimpleHeaderConverter", None, None, None),
    "AvroConverter": ("io.confluent.connect.avro.AvroConverter", "string", ["a", None], S.OPTIONAL_STRING_SCHEMA),
}
NEEDS_REGISTRY = {"AvroConverter"}
NULL_IS_TOMBSTONE = {"JsonConverter", "AvroConverter"}  # a null value is read back as a tombstone (no schema)  # configured with `schema.registry.url` (the worker's own registry API)
CONVERTERS = sorted(info.name for info in default_registry().plugins(PluginKind.CONVERTER))


@pytest.fixture
def configured(request, make):
    """configured(name): the converter with the least settings it needs."""

    def build(name: str, **kwargs):
        settings = {"schema.registry.url": request.getfixturevalue("schema_registry")} if name in NEEDS_REGISTRY else {}
        return make(name, {**settings, **kwargs.pop("configs", {})}, **kwargs)

    return build


@pytest.mark.parametrize("name", CONVERTERS)
def test_every_installed_converter_is_in_the_suite(name):
    assert name in EXPECTED, f"converter {name} has no sample here: add its Kafka class and a column to EXPECTED"


def test_every_kafka_converter_is_installed(registry):
    names = {info.name for info in registry.plugins(PluginKind.CONVERTER)}
    assert set(EXPECTED) <= names


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_found_by_every_name_kafka_accepts(registry, name):
    kafka_class = EXPECTED[name][0]
    info = registry.get(PluginKind.CONVERTER, name)
    assert info.aliases[0] == kafka_class
    simple = kafka_class.rsplit(".", 1)[1]
    for alias in (kafka_class, simple, simple[: -len("Converter")]):
        assert registry.get(PluginKind.CONVERTER, alias).cls is info.cls, alias


@pytest.mark.parametrize("name", CONVERTERS)
def test_declares_its_settings(registry, configured, name):
    cls = registry.get(PluginKind.CONVERTER, name).cls
    assert isinstance(cls.config_def(), ConfigDef)
    if name not in NEEDS_REGISTRY:
        cls.config_def().parse({})  # every setting has a default
    configured(name, configs={"some.unknown.key": "x"})  # unknown keys are ignored, as Kafka's converters ignore them


@pytest.mark.parametrize("name", [n for n in CONVERTERS if n not in EXPECTED or EXPECTED[n][1]])
def test_record_round_trip(spark, configured, name):
    _, ddl, sample, schema = EXPECTED[name]
    df = spark.createDataFrame([("t", i, v) for i, v in enumerate(sample)], f"topic string, seq bigint, value {ddl}")
    converter = configured(name)
    assert isinstance(converter, Converter)
    written = converter.from_connect(df, "value", schema)
    assert written.schema["value"].dataType.simpleString() == "binary"
    assert written.columns == df.columns
    groups = converter.to_connect(written, "value")
    read = {s: d for s, d in groups}
    tombstone = name in NULL_IS_TOMBSTONE
    assert set(read) == ({schema, None} if tombstone else {schema})
    assert sorted(values(read[schema].orderBy("seq")), key=str) == sorted(
        [v for v in sample if v is not None or not tombstone], key=str)
    assert_no_python(written)


@pytest.mark.parametrize("name", [n for n in CONVERTERS  # AvroConverter is no header converter, as in Kafka
                                  if issubclass(default_registry().get(PluginKind.CONVERTER, n).cls, HeaderConverter)])
def test_header_round_trip(spark, configured, name):
    converter = configured(name)
    text = "true" if name == "BooleanConverter" else "12"  # a header this converter can write
    df = spark.createDataFrame([([("k", text), ("n", None)],)], "headers array<struct<key:string,value:string>>")
    written = df.select(converter.from_connect_header(F.col("headers")).alias("headers"))
    back = written.select(converter.to_connect_header(F.col("headers")).alias("headers"))
    expected = "12.0" if name in ("FloatConverter", "DoubleConverter") else text
    assert [(h.key, h.value) for h in back.collect()[0].headers] == [("k", expected), ("n", None)]
    assert_no_python(back)


def test_the_plan_check_would_see_a_python_udf(spark):
    df = spark.createDataFrame([(1,)], "value int")
    with pytest.raises(AssertionError):
        assert_no_python(df.select(F.udf(lambda v: v, "int")("value").alias("value")))
