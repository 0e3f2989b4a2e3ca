"""SimpleHeaderConverter: header values as UTF-8 strings both ways (the default header.converter)."""

from __future__ import annotations

from pyspark.sql import functions as F

from tests.converters.helpers import assert_no_python

KAFKA_CLASS = "org.apache.kafka.connect.storage.SimpleHeaderConverter"


def test_header_values_round_trip_as_utf8(spark, make):
    df = spark.createDataFrame([([("trace", "abc-123"), ("note", "héllo 😀"), ("empty", ""), ("none", None)],), (None,)],
                               "headers array<struct<key:string,value:string>>")
    converter = make(KAFKA_CLASS)
    written = df.select(converter.from_connect_header(F.col("headers")).alias("headers"))
    rows = written.collect()
    assert [(h.key, None if h.value is None else bytes(h.value)) for h in rows[0].headers] == [
        ("trace", b"abc-123"), ("note", "héllo 😀".encode()), ("empty", b""), ("none", None)]
    assert rows[1].headers is None
    back = written.select(converter.to_connect_header(F.col("headers")).alias("headers"))
    assert back.collect() == df.collect()
    assert_no_python(back)


def test_found_by_its_short_names(registry):
    from ingest.registry import PluginKind

    for name in ("SimpleHeaderConverter", "SimpleHeader", KAFKA_CLASS):
        assert registry.get(PluginKind.CONVERTER, name).name == "SimpleHeaderConverter"
