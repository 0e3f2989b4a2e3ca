"""JsonConverter's one-pass Java readers (`io.lakeconnect.JsonEnvelope` for the schema texts,
`io.lakeconnect.JsonPayload` for flat struct payloads): used where they apply, and every record reads as
the general expressions read it (which the other converter tests hold to Kafka's values), including
the records they hand back; every error is the same error."""

from __future__ import annotations

import base64
import datetime as dt
import json
import random

import pytest
from pyspark.sql import functions as F

import connectors.converters.json_converter as json_converter
from connectors.converters import _json_fast_read
from connectors.converters._json_read import JsonOptions
from ingest.errors import DataError
from ingest.records import schema as S
from tests.converters.helpers import executed_plan

KAFKA_CLASS = "org.apache.kafka.connect.json.JsonConverter"
CONFIGS = [{}, {"replace.null.with.default": "false"}, {"decimal.format": "NUMERIC"}]

# Every kind the Java reader handles; optional and required, with and without defaults.
WIDE = S.struct(
    "wide",
    ("l", S.OPTIONAL_INT64_SCHEMA), ("i", S.OPTIONAL_INT32_SCHEMA), ("h", S.OPTIONAL_INT16_SCHEMA),
    ("c", S.OPTIONAL_INT8_SCHEMA), ("b", S.OPTIONAL_BOOLEAN_SCHEMA), ("s", S.OPTIONAL_STRING_SCHEMA),
    ("y", S.OPTIONAL_BYTES_SCHEMA), ("d", S.date(True)), ("t", S.timestamp(True)), ("tm", S.time(True)),
    ("small", S.decimal(2, 10, optional=True)), ("big", S.decimal(0, 38, optional=True)),
    ("loose", S.decimal(3, optional=True)), ("f", S.OPTIONAL_FLOAT32_SCHEMA), ("g", S.OPTIONAL_FLOAT64_SCHEMA),
    ("dflt", S.OPTIONAL_INT32_SCHEMA.with_default(42)), ("sdflt", S.OPTIONAL_STRING_SCHEMA.with_default("dflt")),
    ("rdflt", S.INT16_SCHEMA.with_default(7)), ("req", S.INT64_SCHEMA),
    ('weird "name"\n é', S.OPTIONAL_STRING_SCHEMA),
)
SMALL = S.struct("small", ("id", S.INT32_SCHEMA), ("name", S.STRING_SCHEMA), optional=True)
STRINGS = ["", "plain", 'quote " and \\ backslash', "tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f",
           "é ü ß 漢字 😀", "\u2028\u2029", "/slash/", "a" * 300, "\ufffd", "\uffff"]
BOUNDS = {"l": 63, "i": 31, "h": 15, "c": 7, "rdflt": 15, "req": 63}


def envelope(schema_text: str, payload: str, rnd: random.Random | None = None, first: str = "schema") -> bytes:
    ws = (lambda: rnd.choice(["", "", " ", "\n", " \t\r\n "])) if rnd else (lambda: "")
    members = [f'{ws()}"schema"{ws()}:{ws()}{schema_text}{ws()}', f'{ws()}"payload"{ws()}:{ws()}{payload}{ws()}']
    if first != "schema":
        members.reverse()
    return f"{ws()}{{{','.join(members)}}}{ws()}".encode()


def json_string(s: str, rnd: random.Random) -> str:
    """`s` as a JSON string, escaped as some writer might: short escapes, \\uXXXX (pairs for astral
    characters), escaped slashes, or raw."""
    out = []
    for ch in s:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif code < 0x20 or rnd.random() < 0.08:
            short = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", "/": "\\/"}
            if ch in short and rnd.random() < 0.5:
                out.append(short[ch])
            elif code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04X}")
            else:
                out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def two_complement(n: int) -> bytes:
    length = max(1, (n + (n < 0)).bit_length() // 8 + 1)
    return n.to_bytes(length, "big", signed=True)


def decimal_text(unscaled: int, scale: int, rnd: random.Random) -> str:
    """Kafka's base64 bytes, or a number (both are read whatever decimal.format says), in varied forms."""
    form = rnd.random()
    if form < 0.5:
        return '"' + base64.b64encode(two_complement(unscaled)).decode() + '"'
    sign, digits = ("-" if unscaled < 0 else ""), str(abs(unscaled)).rjust(scale + 1, "0")
    if scale == 0:
        return sign + digits
    whole, frac = digits[:-scale], digits[-scale:]
    if form < 0.6:
        frac = frac.rstrip("0") or "0"  # fewer fraction digits than the scale
    if form < 0.65 and frac.strip("0") == "":
        return sign + whole  # an integer
    if form > 0.95:
        return f"{sign}{whole}.{frac}0"  # more fraction digits than the scale: rounded by Spark, handed back
    return f"{sign}{whole}.{frac}"


def float_text(rnd: random.Random, single: bool) -> str:
    choice = rnd.random()
    if choice < 0.3:
        import struct
        x = rnd.uniform(-1e6, 1e6) * 10 ** rnd.randint(-30, 30)
        if single:
            x = struct.unpack("f", struct.pack("f", x))[0]
        return repr(x)
    if choice < 0.5:
        return str(rnd.randint(-(2**60), 2**60))
    if choice < 0.7:  # more digits than either type holds, plain or with an exponent
        text = f"{rnd.choice(['', '-'])}{rnd.randint(0, 999)}.{rnd.randint(0, 10**30):030d}"
        return text if rnd.random() < 0.5 else text + rnd.choice(["e5", "E-7", "e+0"])
    return rnd.choice(["0", "0.0", "-0.0", "-0", "0e0", "-0e0", "1e-320", "4.9e-324", "3.4028235e38",
                       "1.4e-45", "1.00000005960464477539062500001e0", "1.00000005960464477539062500001",
                       "0.1", "1E2", "123456789012345678901234567890123456789012", "1e-50", "-1e-50",
                       "9007199254740993", "16777217"])


def wide_payload(rnd: random.Random, i: int) -> str:
    def maybe(value):
        return "null" if rnd.random() < 0.12 else value

    def integer(name):
        bits = BOUNDS.get(name, 31)
        v = rnd.choice([0, 1, -1, 2**bits - 1, -(2**bits), rnd.randint(-(2**bits), 2**bits - 1)])
        return "-0" if v == 0 and rnd.random() < 0.2 else str(v)

    fields = {
        "l": maybe(integer("l")), "i": maybe(integer("i")), "h": maybe(integer("h")), "c": maybe(integer("c")),
        "b": maybe(rnd.choice(["true", "false"])), "s": maybe(json_string(rnd.choice(STRINGS) + str(i), rnd)),
        "y": maybe('"' + base64.b64encode(bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 9)))).decode() + '"'),
        "d": maybe(str(rnd.randint(-719162, 2932896))),
        "t": maybe(str(rnd.choice([0, -1, 1, rnd.randint(-62135596800000, 253402300799999)]))),
        "tm": maybe(str(rnd.randint(0, 86_399_999))),
        "small": maybe(decimal_text(rnd.randint(-(10**10) + 1, 10**10 - 1), 2, rnd)),
        "big": maybe(decimal_text(rnd.choice([0, 1, -1, 127, 128, -128, -129, 2**63, -(2**63), 10**38 - 1,
                                              -(10**38) + 1, rnd.randint(-(10**37), 10**37)]), 0, rnd)),
        "loose": maybe(decimal_text(rnd.randint(-(10**20), 10**20), 3, rnd)),
        "f": maybe(float_text(rnd, True)), "g": maybe(float_text(rnd, False)),
        "dflt": maybe(integer("dflt")), "sdflt": maybe(json_string(rnd.choice(STRINGS), rnd)),
        "rdflt": integer("rdflt"), "req": integer("req"),
        'weird "name"\n é': maybe(json_string(rnd.choice(STRINGS), rnd)),
    }
    names = list(fields)
    for name in names:
        if name not in ("rdflt", "req") and rnd.random() < 0.05:
            del fields[name]  # a missing field reads as null
    if rnd.random() < 0.03:
        fields["unknown"] = "[1,{}]"  # Kafka ignores members that are not fields
    items = list(fields.items())
    if rnd.random() < 0.5:
        rnd.shuffle(items)
    return "{" + ",".join(f"{json_string(k, rnd)}:{v}" for k, v in items) + "}"


def wide_records(n: int = 600) -> list[bytes | None]:
    rnd = random.Random(11)
    compact, spaced = WIDE.to_json_text(), json.dumps(WIDE.to_json(), indent=1, ensure_ascii=False)
    small_text = SMALL.to_json_text()
    records: list[bytes | None] = []
    for i in range(n):
        pick = rnd.random()
        if pick < 0.75:
            text = compact if rnd.random() < 0.8 else spaced
            records.append(envelope(text, wide_payload(rnd, i), rnd, rnd.choice(["schema", "payload"])))
        elif pick < 0.85:
            payload = rnd.choice([f'{{"id":{i},"name":"n{i}"}}', "null", f'{{"name":"x","id":-{i}}}'])
            records.append(envelope(small_text, payload, rnd))
        elif pick < 0.9:
            records.append(envelope('{"type":"string","optional":false}', json_string(rnd.choice(STRINGS), rnd)))
        elif pick < 0.95:
            records.append(None)  # a tombstone
        else:
            records.append(envelope("null", '{"a":[1,2.5,"x"]}', rnd))
    return records


def frame(spark, records):
    return spark.createDataFrame([("t", 0, i, r) for i, r in enumerate(records)],
                                 "topic string, partition int, offset long, value binary")


def outcome(converter, df):
    """What reading `df` gives: the records' errors (`record_errors`, as the pipeline and the dead letter
    queue see them), then per schema its Spark type and rows (offset, value as JSON), or the error."""
    errors = [r[0] for r in df.select(converter.record_errors(df, "value")).collect()]
    return errors, _read(converter, df)


def _read(converter, df):
    try:
        groups = converter.to_connect(df, "value")
        return {schema: (part.schema["value"].dataType.json(),
                         sorted((r.offset, r.j) for r in part.select("offset", F.to_json(F.struct("value")).alias("j"))
                                .collect()))
                for schema, part in groups}
    except DataError as e:
        return ("DataError", str(e))
    except Exception as e:  # noqa: BLE001 - a Spark error raised while reading
        return (type(e).__name__, _message(e))


def _message(e: Exception) -> str:
    """A Spark error's message without the ids of its job, stage and task: the first line of Spark's own
    errors, the innermost cause of other Java exceptions."""
    java = getattr(e, "java_exception", None)
    if java is None or type(e).__name__ != "Py4JJavaError":
        return str(e).splitlines()[0]
    while java.getCause() is not None:
        java = java.getCause()
    return java.toString()


def both(monkeypatch, converter, df):
    """(fast, general) outcomes of reading `df`."""
    fast = outcome(converter, df)
    with monkeypatch.context() as m:
        m.setattr(json_converter, "json_read_available", lambda: False)
        general = outcome(converter, df)
    return fast, general


def handled(spark, spec: str, records: list[bytes]) -> list[bool]:
    assert _json_fast_read.available()
    df = spark.createDataFrame([(r,) for r in records], "value binary")
    return [r[0] for r in df.select(_json_fast_read.payload(F.col("value"), spec)["handled"]).collect()]


# --- whole batches ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("configs", CONFIGS)
def test_a_varied_batch_reads_as_the_general_expressions_read_it(spark, make, monkeypatch, configs):
    converter = make(KAFKA_CLASS, configs)
    records = wide_records()
    df = frame(spark, records)
    (fast_errors, fast), (general_errors, general) = both(monkeypatch, converter, df)
    assert fast_errors == general_errors == [None] * len(records)
    assert isinstance(fast, dict), fast
    assert set(fast) == {WIDE, SMALL, S.STRING_SCHEMA, None}
    for schema in fast:
        assert fast[schema][0] == general[schema][0], schema
        mismatched = [(f, g) for f, g in zip(fast[schema][1], general[schema][1]) if f != g]
        assert not mismatched, (schema, mismatched[:3])
        assert len(fast[schema][1]) == len(general[schema][1])
    # The Java reader did read the flat structs, and most of their records.
    groups = dict(converter.to_connect(df, "value"))
    assert "lakeconnect_json_payload" in executed_plan(groups[WIDE])
    assert "lakeconnect_json_payload" not in executed_plan(groups[S.STRING_SCHEMA])
    spec = _json_fast_read.payload_spec(WIDE, converter.options)
    wide = [r for r in records if r is not None and b'"wide"' in r]
    share = sum(handled(spark, spec, wide)) / len(wide)
    assert 0.3 < share < 0.95, share  # most, and not the ones it must hand back


def test_every_record_of_one_schema_is_read_by_java_when_it_can_be(spark, make, monkeypatch):
    converter = make(KAFKA_CLASS)
    rows = [envelope(SMALL.to_json_text(), f'{{"id":{i},"name":"n{i}"}}') for i in range(50)]
    df = frame(spark, rows)
    [(schema, read)] = converter.to_connect(df, "value")
    assert schema == SMALL and "lakeconnect_json_payload" in executed_plan(read)
    assert all(handled(spark, _json_fast_read.payload_spec(SMALL, converter.options), rows))
    fast, general = both(monkeypatch, converter, df)
    assert fast == general


# --- single values: handled or handed back, the same result either way ------------------------------------


def _one(kind: str) -> S.ConnectSchema:
    schemas = {
        "int8": S.OPTIONAL_INT8_SCHEMA, "int16": S.OPTIONAL_INT16_SCHEMA, "int32": S.OPTIONAL_INT32_SCHEMA,
        "int64": S.OPTIONAL_INT64_SCHEMA, "boolean": S.OPTIONAL_BOOLEAN_SCHEMA, "string": S.OPTIONAL_STRING_SCHEMA,
        "bytes": S.OPTIONAL_BYTES_SCHEMA, "date": S.date(True), "timestamp": S.timestamp(True),
        "decimal": S.decimal(2, 4, optional=True), "float32": S.OPTIONAL_FLOAT32_SCHEMA,  # decimal(4, 2)
        "float64": S.OPTIONAL_FLOAT64_SCHEMA, "required": S.INT32_SCHEMA,
    }
    return S.struct("one", ("v", schemas[kind]))


ONE_VALUES = [
    # (kind, payload value, read by Java)
    ("int8", "127", True), ("int8", "-128", True), ("int8", "128", False), ("int8", "-129", False),
    ("int8", "1.0", False), ("int8", "1e0", False), ("int8", '"5"', False), ("int8", "true", False),
    ("int16", "32767", True), ("int16", "-32769", False), ("int32", "-0", True), ("int32", "2147483648", False),
    ("int64", "9223372036854775807", True), ("int64", "-9223372036854775808", True),
    ("int64", "9223372036854775808", False), ("int64", "-9223372036854775809", False),
    ("int64", "123456789012345678901234567890", False),
    ("boolean", "true", True), ("boolean", '"true"', False), ("boolean", "1", False),
    ("string", '"\\u00e9\\n\\/"', True), ("string", "5", False), ("string", '"\\ud83d\\ude00"', False),
    ("string", '"\\uD800"', False), ("string", '""', True),
    ("bytes", '"QQ=="', True), ("bytes", '"QUI="', True), ("bytes", '""', True), ("bytes", '"QQ"', False),
    ("bytes", '"QR=="', False), ("bytes", '"Q\\/=="', False),
    ("date", "2147483647", True), ("date", "-2147483648", True), ("date", "2147483648", False),
    ("timestamp", "9223372036854775", True), ("timestamp", "-9223372036854775", True),
    ("timestamp", "9223372036854776", False), ("timestamp", "-9223372036854776", False),
    ("timestamp", "-9223372036854775808", False), ("timestamp", "1.5", False),
    ("decimal", '"AA=="', True), ("decimal", '"Jw8="', True), ("decimal", '"2PE="', True), ("decimal", '"AQ=="', True),
    ("decimal", '"D0I/"', False), ("decimal", '""', False), ("decimal", '"AAAAAAAAAAAAAAAAAAAAAAA="', False),
    ("decimal", "99.99", True), ("decimal", "-99.99", True), ("decimal", "99.9999", False), ("decimal", "100", False),
    ("decimal", "1.23456", False), ("decimal", "1.5e1", False), ("decimal", "-0.00", True), ("decimal", "7", True),
    ("decimal", "true", False),
    ("float32", "1.5", True), ("float32", "1.00000005960464477539062500001e0", False),
    ("float32", "1.00000005960464477539062500001", False), ("float32", "3.4028235e38", True),
    ("float32", "3.4028236e38", False), ("float32", "1e39", False), ("float32", "16777217", True), ("float32", "9007199791611905", False),
    ("float32", "-1e-50", True), ("float32", '"1.5"', False),
    ("float64", "0.1", True), ("float64", "-0.0", False), ("float64", "-0", False), ("float64", "-0e0", False),
    ("float64", "0e0", True), ("float64", "1e400", False), ("float64", "4.9e-324", True), ("float64", "1e-400", True),
    ("float64", "-1e-400", False), ("float64", "9007199254740993", True),
    ("float64", "123456789012345678901234567890123456789012", True), ("float64", '"NaN"', False),
    ("required", "1", True), ("required", "null", False),
    ("int32", "[1]", False), ("int32", "{}", False), ("int32", "01", False),
]


@pytest.mark.parametrize("kind, value, java", ONE_VALUES)
def test_each_value_reads_as_the_general_expressions_read_it(spark, make, monkeypatch, kind, value, java):
    schema = _one(kind)
    record = envelope(schema.to_json_text(), f'{{"v":{value}}}')
    converter = make(KAFKA_CLASS)
    assert handled(spark, _json_fast_read.payload_spec(schema, converter.options), [record]) == [java]
    fast, general = both(monkeypatch, converter, frame(spark, [record]))
    assert fast == general


@pytest.mark.parametrize("configs", CONFIGS)
@pytest.mark.parametrize("payload", [
    "null", "{}", '{"n":null}', '{"r":null}', '{"n":1}', '{"n":1,"r":2}', '{"r":3,"n":null,"r":4}', "[]", '"x"',
])
@pytest.mark.parametrize("optional", [True, False])
def test_nulls_defaults_and_missing_fields(spark, make, monkeypatch, configs, payload, optional):
    schema = S.struct("d", ("n", S.OPTIONAL_INT32_SCHEMA.with_default(42)), ("r", S.INT32_SCHEMA.with_default(7)),
                      optional=optional)
    fast, general = both(monkeypatch, make(KAFKA_CLASS, configs), frame(spark, [envelope(schema.to_json_text(), payload)]))
    assert fast == general


# --- records that are not what they seem: the same records read, the same errors raised ----------------------


GOOD = envelope(SMALL.to_json_text(), '{"id":1,"name":"a"}')


@pytest.mark.parametrize("record", [
    b"", b"   ", b"foo", b'{"a"', b"\xff", b'{"schema":null,"payload":"\xc3\x28"}', b'{"schema":null,"payload":"\xed\xa0\x80"}',
    b"[]", b"null", b"42", b'{"greeting":"hello"}', b'{"schema":null}', b'{"payload":1}',
    b'{"schema":null,"payload":1,"x":2}', b'{"schema":null,"payload":1,"schema":null}',
    b'{"schema":{"type":"int32","optional":false},"payload":1,"payload":2}',
    b'{"schema":{"type":"int32","optional":false},"payload":3} trailing', b'{"schema":{"type":"int32"},"payload":1}{}',
    b"{'schema':null,'payload':1}", b'{"schema":null,"payload":NaN}', b'{"sch\\u0065ma":null,"payload":1}',
    b'\xef\xbb\xbf{"schema":null,"payload":1}', b'{"schema":"abc","payload":1}', b'{"schema":5,"payload":1}',
    b'{"schema":[],"payload":1}', b'{"schema":{"type":"float64"},"payload":1}', b'{"schema":{},"payload":1}',
    b'{"schema":{"type":"int32","version":1.0},"payload":1}', b'{"schema":{"type":"int32","doc":"\\ud800"},"payload":1}',
    b'{"schema":{"type":"int32","doc":"a\\u0000\\n\\"b"},"payload":1}', b'{"schema":{"type":"int32","version":1e0},"payload":1}',
    b'{"schema":{"type":"int32","optional":true},"payload":null}',
    # Spark's map rewrites a fraction through a double (1.2345678901234567E19): a default the strict path reads so.
    b'{"schema":{"type":"struct","fields":[{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal",'
    b'"parameters":{"scale":"1"},"default":12345678901234567890.5,"field":"d"}]},"payload":{"d":null}}',
    b'{"schema":' + SMALL.to_json_text().encode() + b',"payload":{"id":1,"name":"a","id":2}}',
    b'{"schema":' + SMALL.to_json_text().encode() + b',"payload":{"id":1}}',
    b'{"schema":' + SMALL.to_json_text().encode() + b',"payload":{"id":1,"name":"\xf4\x90\x80\x80"}}',
    b'{"schema":' + SMALL.to_json_text().encode() + b',"payload":{"id":1,"name":"\x01"}}',
    b'{"schema":' + SMALL.to_json_text().encode() + b',"payload":{"id":1,"name":"\xef\xbf\xbe"}}',
    b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":true,"field":"a"}],"optional":true},'
    b'"payload":{"a":1,"a":2}}',
    b"[" * 70 + b"]" * 70,
    b'{"schema":null,"payload":' + b"[" * 70 + b"]" * 70 + b"}",
])
def test_unusual_records_read_or_fail_as_the_general_expressions(spark, make, monkeypatch, record):
    df = frame(spark, [GOOD, record, GOOD, None])
    fast, general = both(monkeypatch, make(KAFKA_CLASS), df)
    assert fast == general
    assert fast[0][0] is None and fast[0][2:] == [None, None]


@pytest.mark.parametrize("fast", [True, False])
def test_a_filter_on_the_value_sees_only_the_records_of_its_schema(spark, make, monkeypatch, fast):
    # A sink skipping null values filters on the converted column; Spark pushes that filter down into the
    # group's own, and must not read a tombstone or another schema's record as a value of this one.
    records = [GOOD, None, envelope("null", '{"a":1}'), envelope('{"type":"int32"}', "7"), GOOD]
    monkeypatch.setattr(json_converter, "json_read_available", lambda: fast)
    groups = dict(make(KAFKA_CLASS).to_connect(frame(spark, records), "value"))
    small = groups[SMALL]
    assert [r.offset for r in small.where(small["value"].isNotNull()).collect()] == [0, 4]


def test_the_schema_text_is_the_raw_member_or_unsure(spark):
    assert _json_fast_read.available()
    cases = {
        b'{"schema":{"type":"int32"},"payload":1}': '{"type":"int32"}',
        b' {\n"payload" : [1, {"a": 2.5}] ,"schema" : { "type" : "int32" , "x": [true, null, -0] } }\t':
            '{ "type" : "int32" , "x": [true, null, -0] }',
        b'{"schema":null,"payload":{"x":1}}': None,
        b'{"schema":{"doc":"\\u00e9 \\" \\n"},"payload":1}': '{"doc":"\\u00e9 \\" \\n"}',
        b'{"schema":{"version":1.5},"payload":1}': _json_fast_read.UNSURE,  # Spark rewrites the number's text
        b'{"schema":{"doc":"\\ud83d\\ude00"},"payload":1}': _json_fast_read.UNSURE,
        b'{"schema":{},"payload":1,"payload":1}': _json_fast_read.UNSURE,
        b'{"schema":{},"payload":1} x': _json_fast_read.UNSURE,
        b'{"schema":{},"payload":01}': _json_fast_read.UNSURE,
        b'{"schema":{},"payload":"\x7f\xc3"}': _json_fast_read.UNSURE,
        b"": _json_fast_read.UNSURE,
        None: None,
    }
    df = spark.createDataFrame([(k,) for k in cases], "value binary")
    got = [r[0] for r in df.select(_json_fast_read.schema_text(F.col("value"))).collect()]
    assert got == list(cases.values())
    # The same Java code on the driver, for the one record a batch is planned by.
    assert [_json_fast_read.schema_text_of(spark, k) for k in cases] == list(cases.values())


def test_the_optimistic_read_plans_by_the_record_it_is_given_or_reads_one(spark, make):
    """`first` (the runtime's read of one record) gives the schema without a Spark job; a record whose
    schema only the strict reading knows, or none given, has the converter read one from the batch."""
    from ingest.api import NOT_READ

    converter = make(KAFKA_CLASS)
    plain = envelope('{"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"}]}', '{"a":1}')
    unusual = envelope('{"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"}],"version":1.5}',
                       '{"a":2}')
    for records, first in (([plain], plain), ([unusual], unusual), ([plain], NOT_READ)):
        df = frame(spark, records)
        pairs = converter.to_connect_optimistic(df, "value", first)
        assert pairs is not None and [r.value.a for r in pairs[0][1].collect()] == [int(records[0][-3:-2])]
    # A null record or an empty batch: no optimistic plan (the general reading finds the schemas).
    assert converter.to_connect_optimistic(frame(spark, [None, plain]), "value", None) is None
    # The given record's schema is the plan's: another record of the batch declines the plan.
    from ingest.api import DECLINED

    other = envelope('{"type":"struct","fields":[{"type":"int32","optional":false,"field":"b"}]}', '{"b":1}')
    pairs = converter.to_connect_optimistic(frame(spark, [plain]), "value", other)
    assert [f.name for f in pairs[0][0].fields] == ["b"]
    with pytest.raises(Exception, match=DECLINED):
        pairs[0][1].collect()


@pytest.mark.parametrize("schema", [
    S.struct("nested", ("inner", S.struct("inner", ("a", S.INT32_SCHEMA)))),
    S.struct("arrays", ("a", S.array(S.INT32_SCHEMA))),
    S.struct("maps", ("m", S.map_(S.STRING_SCHEMA, S.INT32_SCHEMA))),
    S.struct("empty"),
    S.INT64_SCHEMA,
])
def test_other_shapes_take_the_general_expressions(schema):
    assert _json_fast_read.payload_spec(schema, JsonOptions("BASE64", True)) is None


def test_the_spec_says_what_each_field_is():
    epoch = dt.datetime(1970, 1, 1)
    schema = S.struct("s", ("a", S.INT32_SCHEMA), ("b", S.OPTIONAL_FLOAT64_SCHEMA), ("c", S.decimal(2)),
                      ("d", S.timestamp(True).with_default(epoch)), ("e\n", S.TIME_SCHEMA), optional=True)
    assert _json_fast_read.payload_spec(schema, JsonOptions("BASE64", True)) == (
        'n\ni x "a"\nd n "b"\nM38.2 x "c"\nT n "d"\ni x "e\\n"')
    # Without replace.null.with.default a default changes nothing; a struct's own default is the general path's.
    assert _json_fast_read.payload_spec(schema, JsonOptions("BASE64", False)).splitlines()[4] == 'T n "d"'
    defaulted = schema.with_default({"a": 1, "b": None, "c": None, "d": None, "e\n": 0})
    assert _json_fast_read.payload_spec(defaulted, JsonOptions("BASE64", True)).startswith("x\n")
