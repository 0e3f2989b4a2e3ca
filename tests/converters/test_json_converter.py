"""JsonConverter: Kafka's exact bytes both ways, grouping by embedded schema, schemaless VARIANTs, bad records."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.errors import ConfigError, DataError
from ingest.records import schema as S
from ingest.records.schema import ConnectSchema
from tests.converters.helpers import assert_no_python, column_bytes, values

KAFKA_CLASS = "org.apache.kafka.connect.json.JsonConverter"


def frame(spark, schema: ConnectSchema, rows, coordinates: bool = False):
    """A DataFrame with a `value` column of `schema`'s Spark type (and topic/partition/offset if asked)."""
    fields = [T.StructField("value", schema.to_spark_type(), True)]
    if coordinates:
        fields = [T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
                  T.StructField("offset", T.LongType()), *fields]
        rows = [("books", 0, i, v) for i, v in enumerate(rows)]
    else:
        rows = [(v,) for v in rows]
    return spark.createDataFrame(rows, T.StructType(fields))


def binary_frame(spark, payloads, coordinates=None):
    if coordinates is None:
        return spark.createDataFrame([(p,) for p in payloads], "value binary")
    return spark.createDataFrame([(*c, p) for c, p in zip(coordinates, payloads)],
                                 "topic string, partition int, offset long, value binary")


def text_of(data: list[bytes | None]) -> list[str | None]:
    return [None if d is None else d.decode("utf-8") for d in data]


# --- writing: Kafka's bytes ----------------------------------------------------------------------


def test_the_books_filestream_lines(spark, make):
    lines = ["This is a string", "Another string", "A third string", "The final string"]
    out = make(KAFKA_CLASS).from_connect(frame(spark, S.STRING_SCHEMA, lines), "value", S.STRING_SCHEMA)
    # The book prints a space after the comma; Kafka writes none.
    assert column_bytes(out) == [
        f'{{"schema":{{"type":"string","optional":false}},"payload":"{line}"}}'.encode() for line in lines]


BOOKS = S.struct("books", ("id", S.INT32_SCHEMA), ("title", S.OPTIONAL_STRING_SCHEMA),
                 ("published", S.OPTIONAL_INT64_SCHEMA))
BOOKS_JSON = ('{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},'
              '{"type":"string","optional":true,"field":"title"},{"type":"int64","optional":true,"field":"published"}],'
              '"optional":false,"name":"books"}')


def test_struct_with_required_and_optional_fields(spark, make):
    df = frame(spark, BOOKS, [(1, "Kafka Connect", 1693526400000), (2, None, None)])
    out = make("JsonConverter").from_connect(df, "value", BOOKS)
    assert text_of(column_bytes(out)) == [
        '{"schema":' + BOOKS_JSON + ',"payload":{"id":1,"title":"Kafka Connect","published":1693526400000}}',
        '{"schema":' + BOOKS_JSON + ',"payload":{"id":2,"title":null,"published":null}}',  # nulls are written
    ]
    plain = make("JsonConverter", {"schemas.enable": "false"}).from_connect(df, "value", BOOKS)
    assert text_of(column_bytes(plain))[1] == '{"id":2,"title":null,"published":null}'


@pytest.mark.parametrize("schema, value, payload", [
    # The cases of Kafka's JsonConverterTest (*ToJson), with the payloads Kafka writes.
    (S.BOOLEAN_SCHEMA, True, "true"),
    (S.INT8_SCHEMA, 12, "12"),
    (S.INT16_SCHEMA, 12, "12"),
    (S.INT32_SCHEMA, 12, "12"),
    (S.INT64_SCHEMA, 4398046511104, "4398046511104"),
    (S.FLOAT32_SCHEMA, 12.34, "12.34"),
    (S.FLOAT64_SCHEMA, 12.34, "12.34"),
    (S.FLOAT64_SCHEMA, 1.0, "1.0"),
    (S.FLOAT64_SCHEMA, 1e20, "1.0E20"),
    (S.FLOAT64_SCHEMA, float("nan"), '"NaN"'),
    (S.BYTES_SCHEMA, b"test-string", '"dGVzdC1zdHJpbmc="'),
    (S.STRING_SCHEMA, "test-string", '"test-string"'),
    (S.STRING_SCHEMA, 'quote " back \\ tab \t é \u0001', '"quote \\" back \\\\ tab \\t é \\u0001"'),
    (S.array(S.INT32_SCHEMA), [1, 2, 3], "[1,2,3]"),
    (S.map_(S.STRING_SCHEMA, S.INT32_SCHEMA), {"key1": 12, "key2": 15}, '{"key1":12,"key2":15}'),
    (S.map_(S.INT32_SCHEMA, S.INT32_SCHEMA), {1: 12, 2: 15}, "[[1,12],[2,15]]"),
    (S.decimal(2), Decimal("1.56"), '"AJw="'),
    (S.decimal(2), Decimal("-1.29"), '"/38="'),
    (S.DATE_SCHEMA, dt.date(1970, 1, 1) + dt.timedelta(days=10000), "10000"),
    (S.TIME_SCHEMA, 14400000, "14400000"),
    (S.TIMESTAMP_SCHEMA, dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=4000000001), "4000000001"),
])
def test_each_type_is_written_as_kafka_writes_it(spark, make, schema, value, payload):
    out = make("JsonConverter").from_connect(frame(spark, schema, [value]), "value", schema)
    assert text_of(column_bytes(out)) == ['{"schema":' + schema.to_json_text() + ',"payload":' + payload + "}"]


def test_decimal_numeric_format(spark, make):
    schema = S.decimal(2, 10)
    df = frame(spark, schema, [Decimal("1.56"), Decimal("1.00"), Decimal("-0.05")])
    converter = make("JsonConverter", {"decimal.format": "numeric", "schemas.enable": "false"})
    out = converter.from_connect(df, "value", schema)
    assert text_of(column_bytes(out)) == ["1.56", "1.00", "-0.05"]  # scale kept: exact BigDecimals


def test_nested_map_with_non_string_keys_inside_struct(spark, make):
    schema = S.struct("s", ("m", S.map_(S.DATE_SCHEMA, S.array(S.decimal(1)), optional=True)),
                      ("n", S.OPTIONAL_STRING_SCHEMA))
    value = ({dt.date(1970, 1, 2): [Decimal("1.5"), Decimal("-0.1")]}, "x")
    out = make("JsonConverter", {"schemas.enable": "false"}).from_connect(frame(spark, schema, [value, (None, None)]),
                                                                        "value", schema)
    assert text_of(column_bytes(out)) == ['{"m":[[1,["Dw==","/w=="]]],"n":"x"}', '{"m":null,"n":null}']


def test_null_value_is_a_tombstone(spark, make):
    df = frame(spark, S.OPTIONAL_STRING_SCHEMA, [None, "x"])
    for configs in ({}, {"schemas.enable": "false"}):
        written = make("JsonConverter", configs).from_connect(df, "value", S.OPTIONAL_STRING_SCHEMA)
        assert column_bytes(written)[0] is None
    nothing = spark.createDataFrame([(None,)], "value void")
    assert column_bytes(make("JsonConverter").from_connect(nothing, "value", None)) == [None]


def test_null_fields_take_their_default_unless_told_not_to(spark, make):
    schema = S.struct("s", ("n", S.OPTIONAL_INT32_SCHEMA.with_default(42)),
                      ("d", S.date(True).with_default(dt.date(1970, 1, 3))))
    df = frame(spark, schema, [(None, None), (7, dt.date(1970, 1, 1))])
    plain = {"schemas.enable": "false"}
    assert text_of(column_bytes(make("JsonConverter", plain).from_connect(df, "value", schema))) == [
        '{"n":42,"d":2}', '{"n":7,"d":0}']
    keep_nulls = make("JsonConverter", {**plain, "replace.null.with.default": "false"})
    assert text_of(column_bytes(keep_nulls.from_connect(df, "value", schema)))[0] == '{"n":null,"d":null}'


def test_required_field_without_value_fails_as_kafka_does(spark, make):
    schema = S.struct("s", ("n", S.INT32_SCHEMA))
    df = spark.createDataFrame([((None,),)], "value struct<n:int>")
    out = make("JsonConverter").from_connect(df, "value", schema)
    with pytest.raises(Exception, match="null value for field that is required and has no default value"):
        out.collect()


def test_column_that_cannot_hold_the_schema_is_rejected(spark, make):
    df = spark.createDataFrame([(1,)], "value bigint")
    with pytest.raises(DataError, match="cannot hold int32"):
        make("JsonConverter").from_connect(df, "value", S.INT32_SCHEMA)


def test_from_connect_is_column_expressions(spark, make):
    df = frame(spark, BOOKS, [(1, "a", 2)])
    out = make("JsonConverter").from_connect(df, "value", BOOKS)
    assert_no_python(out)
    rich = S.struct("r", ("d", S.decimal(2, 20)), ("t", S.TIMESTAMP_SCHEMA),
                    ("m", S.map_(S.INT32_SCHEMA, S.BYTES_SCHEMA)))
    assert_no_python(make("JsonConverter").from_connect(frame(spark, rich, []), "value", rich))


# --- reading ----------------------------------------------------------------------------------------


def every_type_schema() -> ConnectSchema:
    inner = S.struct("inner", ("a", S.OPTIONAL_INT8_SCHEMA), ("b", S.array(S.OPTIONAL_STRING_SCHEMA, optional=True)),
                     optional=True)
    return S.struct(
        "every",
        ("i8", S.INT8_SCHEMA), ("i16", S.OPTIONAL_INT16_SCHEMA), ("i32", S.OPTIONAL_INT32_SCHEMA),
        ("i64", S.OPTIONAL_INT64_SCHEMA), ("f32", S.OPTIONAL_FLOAT32_SCHEMA), ("f64", S.OPTIONAL_FLOAT64_SCHEMA),
        ("bool", S.OPTIONAL_BOOLEAN_SCHEMA), ("str", S.OPTIONAL_STRING_SCHEMA), ("bin", S.OPTIONAL_BYTES_SCHEMA),
        ("date", S.date(True)), ("time", S.time(True)), ("ts", S.timestamp(True)),
        ("dec", S.decimal(3, 38, optional=True)), ("small_dec", S.decimal(0, 5, optional=True)),
        ("arr", S.array(S.OPTIONAL_INT64_SCHEMA, optional=True)),
        ("smap", S.map_(S.STRING_SCHEMA, S.OPTIONAL_FLOAT64_SCHEMA, optional=True)),
        ("imap", S.map_(S.INT64_SCHEMA, S.array(S.date(True)), optional=True)),
        ("inner", inner),
        ("inners", S.array(inner, optional=True)),
        ("defaulted", S.OPTIONAL_STRING_SCHEMA.with_default("dflt")),
    )


def every_type_rows():
    full = (
        -128, 32767, -2147483648, 9223372036854775807, 1.5, -2.25e-300, True, "héllo \"json\"", b"\x00\xff\x10",
        dt.date(2023, 9, 1), 45296789, dt.datetime(2023, 9, 1, 12, 34, 56, 789000),
        Decimal("-12345678901234567890123456789012345.678"), Decimal("99999"),
        [1, None, -3], {"a": 1.0, "b": None}, {5: [dt.date(1970, 1, 1), None]},
        (7, ["x", None]), [(1, []), None], "set",
    )
    empty = (0, *([None] * 19))
    return [full, empty]


@pytest.mark.parametrize("configs", [{}, {"decimal.format": "NUMERIC"}])
def test_round_trip_of_every_type(spark, make, configs):
    schema = every_type_schema()
    converter = make("JsonConverter", configs)
    written = converter.from_connect(frame(spark, schema, every_type_rows(), coordinates=True), "value", schema)
    [(read_schema, read)] = converter.to_connect(written, "value")
    assert read_schema == schema
    rows = values(read.orderBy("offset"))
    expected = list(every_type_rows())
    expected[1] = (*expected[1][:-1], "dflt")  # the null took its default on the way out
    assert [tuple(r) if r is not None else None for r in rows] == [tuple(_rowify(v)) for v in expected]
    assert read.schema["value"].dataType.simpleString() == schema.to_spark_type().simpleString()
    again = converter.from_connect(read.orderBy("offset"), "value", read_schema)
    assert column_bytes(again) == column_bytes(written.orderBy("offset"))


def _rowify(row):
    # Spark gives nested structs back as Rows: compare them as tuples.
    out = []
    for v in row:
        if isinstance(v, tuple):
            v = tuple(v)
        out.append(v)
    return out


def test_reading_kafka_written_records(spark, make):
    records = [
        b'{"schema":{"type":"struct","fields":[{"field":"field1","type":"boolean"},'
        b'{"field":"field2","type":"string"}]},"payload":{"field1":true,"field2":"string"}}',
        b'{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
        b'"parameters": { "scale": "2" } }, "payload": "AJw=" }',
        b'{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,'
        b'"parameters":{"scale":"2"}},"payload":1.56}',
        b'{"schema":{"type":"map","keys":{"type":"int32"},"values":{"type":"string"}},"payload":[[1,"a"],[2,"b"]]}',
        b'{"schema":{"type":"int64","name":"org.apache.kafka.connect.data.Timestamp","version":1},'
        b'"payload":4000000001}',
    ]
    groups = make("JsonConverter").to_connect(binary_frame(spark, records), "value")
    found = {schema.type + (schema.name or ""): values(df) for schema, df in groups}
    assert found["struct"] == [(True, "string")]
    assert found["bytesorg.apache.kafka.connect.data.Decimal"] == [Decimal("1.56"), Decimal("1.56")]
    assert found["map"] == [{1: "a", 2: "b"}]
    assert found["int64org.apache.kafka.connect.data.Timestamp"] == [dt.datetime(1970, 2, 16, 7, 6, 40, 1000)]
    assert len(groups) == 4  # the two decimal texts are one schema


def test_records_are_grouped_by_schema_with_tombstones_apart(spark, make):
    a = b'{"schema":{"type":"string","optional":false},"payload":"x"}'
    a_spaced = b'{"schema": {"optional": false, "type": "string"}, "payload": "y"}'
    b = b'{"schema":{"type":"int32","optional":true},"payload":null}'
    df = binary_frame(spark, [a, b, None, a_spaced], [("t", 0, i) for i in range(4)])
    groups = {schema: df for schema, df in make("JsonConverter").to_connect(df, "value")}
    assert set(groups) == {S.STRING_SCHEMA, S.OPTIONAL_INT32_SCHEMA, None}
    assert sorted(values(groups[S.STRING_SCHEMA])) == ["x", "y"]
    assert values(groups[S.OPTIONAL_INT32_SCHEMA]) == [None]
    assert values(groups[None]) == [None] and values(groups[None], "offset") == [2]


def test_schemaless_json_becomes_a_variant(spark, make):
    converter = make("JsonConverter", {"schemas.enable": "false"})
    df = binary_frame(spark, [b'{"greeting":"hello"}', b'[1,2.5,"x"]', b"42", b"null", None, b""])
    [(schema, read)] = converter.to_connect(df, "value")
    assert schema is None
    assert isinstance(read.schema["value"].dataType, T.VariantType)
    greeting = read.select(F.variant_get("value", "$.greeting", "string").alias("g")).collect()[0].g
    assert greeting == "hello"
    # JSON null, null bytes and empty bytes are Kafka's null value; written back they are tombstones.
    assert column_bytes(converter.from_connect(read, "value", None)) == [
        b'{"greeting":"hello"}', b'[1,2.5,"x"]', b"42", None, None, None]
    enveloped = make("JsonConverter").from_connect(read, "value", None)
    assert column_bytes(enveloped)[0] == b'{"schema":null,"payload":{"greeting":"hello"}}'


def test_envelope_with_null_schema_is_schemaless(spark, make):
    df = binary_frame(spark, [b'{"schema":null,"payload":{"a":1}}'])
    [(schema, read)] = make("JsonConverter").to_connect(df, "value")
    assert schema is None and read.select(F.to_json("value")).collect()[0][0] == '{"a":1}'


def test_malformed_json_raises_naming_the_first_bad_record(spark, make):
    df = binary_frame(spark, [b'{"greeting":"hello"}', b"foo", b'{"a"', b"\xff"],
                      [("greetings", 1, 17), ("greetings", 1, 18), ("greetings", 0, 40), ("greetings", 1, 20)])
    converter = make("JsonConverter", {"schemas.enable": "false"})
    with pytest.raises(DataError) as caught:
        converter.to_connect(df, "value")
    message = str(caught.value)
    assert "Converting byte[] to Kafka Connect data failed due to serialization error" in message
    assert "topic 'greetings', partition 0, offset 40" in message
    bad = converter.bad_records(df, "value")
    assert sorted(values(bad, "offset")) == [18, 20, 40]
    assert set(values(bad, "error")) == {
        "Converting byte[] to Kafka Connect data failed due to serialization error: malformed JSON"}


def test_plain_json_with_schemas_enabled_says_how_to_fix_it(spark, make):
    df = binary_frame(spark, [b'{"greeting":"hello"}'], [("greetings", 0, 3)])
    with pytest.raises(DataError, match="set schemas.enable=false") as caught:
        make("JsonConverter").to_connect(df, "value")
    assert 'requires "schema" and "payload" fields' in str(caught.value)
    assert "offset 3" in str(caught.value)
    extra = binary_frame(spark, [b'{"schema":null,"payload":1,"x":2}'])
    assert values(make("JsonConverter").bad_records(extra, "value"), "error")[0].startswith("JsonConverter with")


def test_to_connect_is_column_expressions(spark, make):
    written = make("JsonConverter").from_connect(frame(spark, BOOKS, [(1, "a", 2)]), "value", BOOKS)
    [(_, read)] = make("JsonConverter").to_connect(written, "value")
    assert_no_python(read)


def test_settings(make):
    converter = make("Json", {"decimal.format": "numeric", "schemas.enable": "false", "schemas.cache.size": "5"})
    assert converter.options.decimal_format == "NUMERIC" and converter.schemas_enable is False
    with pytest.raises(ConfigError, match="decimal.format"):
        make("JsonConverter", {"decimal.format": "HEX"})
    with pytest.raises(ConfigError, match="schemas.enable"):
        make("JsonConverter", {"schemas.enable": "yes"})
    keys = make("JsonConverter").config_def().keys
    assert {k: v.default for k, v in keys.items()} == {
        "schemas.enable": True, "schemas.cache.size": 1000, "decimal.format": "BASE64",
        "replace.null.with.default": True}


# --- headers ------------------------------------------------------------------------------------------


def test_headers_are_json_strings(spark, make):
    df = spark.createDataFrame([([("k", "v"), ("n", None)],)], "headers array<struct<key:string,value:string>>")
    converter = make("JsonConverter")
    written = df.select(converter.from_connect_header(F.col("headers")).alias("headers"))
    [row] = written.collect()
    assert [(h.key, bytes(h.value)) for h in row.headers] == [
        ("k", b'{"schema":{"type":"string","optional":false},"payload":"v"}'),
        ("n", b'{"schema":{"type":"string","optional":true},"payload":null}')]
    back = written.select(converter.to_connect_header(F.col("headers")).alias("headers")).collect()[0].headers
    assert [(h.key, h.value) for h in back] == [("k", "v"), ("n", None)]
    plain = make("JsonConverter", {"schemas.enable": "false"})
    [row] = df.select(plain.from_connect_header(F.col("headers")).alias("h")).collect()
    assert [bytes(h.value) for h in row.h] == [b'"v"', b"null"]


def test_jackson_leniency_and_strictness_are_kept(spark, make):
    # Kafka's ObjectMapper: duplicate keys (the last wins) and trailing content are accepted;
    # single quotes and NaN tokens are not.
    ok = [b'{"schema":{"type":"int32","optional":false},"payload":1,"payload":2}',
          b'{"schema":{"type":"int32","optional":false},"payload":3} trailing']
    [(schema, read)] = make("JsonConverter").to_connect(binary_frame(spark, ok), "value")
    assert schema == S.INT32_SCHEMA and sorted(values(read)) == [2, 3]
    for bad in (b"{'schema':null,'payload':1}", b'{"schema":null,"payload":NaN}'):
        with pytest.raises(DataError, match="serialization error"):
            make("JsonConverter").to_connect(binary_frame(spark, [bad], [("t", 0, 0)]), "value")


def test_an_invalid_embedded_schema_names_its_record(spark, make):
    df = binary_frame(spark, [b'{"schema":{"type":"int32"},"payload":1}', b'{"schema":{"type":"float64"},"payload":1}'],
                      [("t", 0, 0), ("t", 0, 1)])
    with pytest.raises(DataError, match="Unknown schema type: float64") as caught:
        make("JsonConverter").to_connect(df, "value")
    assert "offset 1" in str(caught.value)


def test_nested_duplicate_keys_fail_loudly_unless_spark_accepts_them(spark, make):
    df = binary_frame(spark, [b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":true,"field":"a"}],'
                              b'"optional":true},"payload":{"a":1,"a":2}}'])
    [(_, read)] = make("JsonConverter").to_connect(df, "value")
    key = "spark.sql.variant.allowDuplicateKeys"
    before = spark.conf.get(key)
    try:
        spark.conf.set(key, "false")
        with pytest.raises(Exception, match="duplicate keys"):
            read.collect()
        spark.conf.set(key, "true")  # then Kafka's rule: the last value wins
        assert values(read) == [(2,)]
    finally:
        spark.conf.set(key, before)
    plain = make("JsonConverter", {"schemas.enable": "false"})
    spark.conf.set(key, "false")
    try:
        with pytest.raises(DataError, match="duplicate keys"):
            plain.to_connect(binary_frame(spark, [b'{"a":1,"a":2}'], [("t", 0, 0)]), "value")
    finally:
        spark.conf.set(key, before)


def test_jvm_decimal_bytes_are_used_and_match_kafka_and_the_expression(spark):
    """Decimal values become Kafka's bytes through lakeconnect's Java function (built by the set-up); it
    gives BigInteger.toByteArray of the unscaled value, as the pure-Spark expression and Kafka do, at the
    sign-byte edges and at 38 digits."""
    from connectors.converters._decimal import JVM_CLASS, decimal_to_bytes, expression_decimal_to_bytes
    from ingest.records.schema import decimal_to_bytes as kafka_bytes

    plan = spark.range(1).select(decimal_to_bytes(F.lit(Decimal("1.00"))))._jdf.queryExecution()
    assert JVM_CLASS.rsplit(".", 1)[1] in plan.analyzed().toString() or "lakeconnect_decimal_bytes" in str(plan.analyzed())
    for precision, scale in ((10, 2), (18, 0), (38, 3)):
        edges = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 2**63 - 1, -2**63,
                 2**63, -2**63 - 1, 10**precision - 1, -(10**precision - 1)]
        unscaled = [u for u in edges if abs(u) < 10**precision] + [12345, -98765]
        values = [Decimal(f"{u}E-{scale}") for u in unscaled] + [None]
        df = spark.createDataFrame([(v,) for v in values], f"d decimal({precision},{scale})")
        rows = df.select(decimal_to_bytes(F.col("d")).alias("jvm"), expression_decimal_to_bytes(F.col("d")).alias("expr")).collect()
        expected = [None if v is None else kafka_bytes(v, scale) for v in values]
        assert [None if r.jvm is None else bytes(r.jvm) for r in rows] == expected, (precision, scale)
        assert [None if r.expr is None else bytes(r.expr) for r in rows] == expected, (precision, scale)
