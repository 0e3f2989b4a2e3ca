"""Converter cases of the oracle corpus: every schema type through every converter and its settings."""

from __future__ import annotations

import itertools

from tests.oracle.builders import (
    BOOLEAN, BYTES, JSON, NUMBERS, ORDER, ORDER_ROWS, SCHEMALESS_ROWS, SIMPLE_HEADER, STRING, T, array, b64, chain,
    date, dec, decimal, map_, one, prim, struct, time, timestamp,
)

# (name, schema, payloads): every schema type, optional or not, with defaults, nulls and edge values.
SAMPLES = [
    ("int8", prim("int8"), [0, -128, 127]),
    ("int16", prim("int16", True), [-32768, None, 32767]),
    ("int32", prim("int32"), [2147483647, -2147483648, 0]),
    ("int64", prim("int64", True), [9223372036854775807, -9223372036854775808, None]),
    ("float32", prim("float32"), [1.5, -2.5, 3.4028235e38, 1e-45, 0.1]),
    ("float64", prim("float64", True), [0.1, 1e21, 1e-7, -2.5e-300, None, 100.0]),
    ("boolean", prim("boolean"), [True, False]),
    ("string", prim("string", True), ["plain", "", "quote\" back\\ nl\n tab\t", "ünï ☃ 😀", "\u0001", None]),
    ("bytes", prim("bytes", True), [b64(b"\x00\xff\x10"), b64(b""), None]),
    ("int32-default", prim("int32", True, default=42), [7, None]),
    ("string-default", prim("string", True, default="dflt"), ["x", None]),
    ("required-null", prim("string"), [None]),
    ("decimal", decimal(2, True), [dec(12345), dec(-1), dec(0), dec(10**30), None]),
    ("decimal-scale0", decimal(0), [dec(7), dec(-128)]),
    ("decimal-default", decimal(3, True) | {"default": dec(1500)}, [dec(1), None]),
    ("date", date(True), [0, 19631, -25567, None]),
    ("time", time(), [0, 45296789, 86399999]),
    ("timestamp", timestamp(True), [0, 1656234290123, -1, 253402300799999, None]),
    ("struct", ORDER, ORDER_ROWS),
    # Float fields of a struct take the one-pass Java writer: its Float/Double.toString at notation switch points.
    ("struct-floats", struct("s.Floats", ("f", prim("float32", True)), ("d", prim("float64", True))),
     [{"f": 3.4028235e38, "d": 1e21}, {"f": 1e-45, "d": 1e-7}, {"f": None, "d": -2.5e-300},
      {"f": 0.001, "d": 1e-3}, {"f": 1e7, "d": 9999999.0}, {"f": 0.1, "d": None}]),
    ("struct-optional", struct("s.Opt", ("a", prim("int32", True)), optional=True), [{"a": 1}, {"a": None}, None]),
    ("struct-defaults", struct("s.Def", ("a", prim("int32", True, default=5)), ("b", prim("string", True, default="z")),
                               ("c", date(True) | {"default": 10})), [{"a": None, "b": None, "c": None},
                                                                      {"a": 1, "b": "y", "c": 3}]),
    ("struct-nested", struct("s.Outer", ("inner", struct("s.Inner", ("deep", struct(None, ("x", prim("float64")))))),
                             ("n", prim("int16"))), [{"inner": {"deep": {"x": 1.0}}, "n": 1}]),
    ("array-int", array(prim("int32", True), True), [[1, None, 3], [], None]),
    ("array-struct", array(struct("s.Item", ("k", prim("string")))), [[{"k": "a"}, {"k": "b"}]]),
    ("array-array", array(array(prim("float32"))), [[[1.5], [], [2.25, 3.0]]]),
    ("map-string", map_(prim("string"), prim("int64", True)), [{"a": 1, "b": None}, {}]),
    ("map-int-key", map_(prim("int32"), prim("string")), [[[1, "one"], [2, "two"]]]),
    ("map-struct-value", map_(prim("string"), struct("s.V", ("v", prim("boolean")))), [{"k": {"v": True}}]),
    ("map-decimal", map_(prim("string"), decimal(1, True)), [{"k": dec(15), "n": None}]),
]
SCHEMALESS = [
    ("schemaless-map", SCHEMALESS_ROWS + [{"nested": {"list": [1, [2, 3], {"x": None}]}, "big": 12345678901234}]),
    ("schemaless-scalars", ["text", 1, -2, 2.5, True, False, [1, "a"], {}, 1e21, 0.1]),
]


ALL = struct("s.All", *[(name, schema if schema["type"] != "struct" else {**schema, "optional": True})
                         for name, schema, _ in SAMPLES if name != "required-null"])
"""One struct with a field of every sample: a converter setting meets every type in one case."""
ALL_ROWS = [{name: payloads[i % len(payloads)] for name, _, payloads in SAMPLES if name != "required-null"}
            for i in range(6)]
# The samples each record converter is tried on, as key and value of one case.
PAIRS = [("int8", "int16"), ("int32", "int64"), ("float32", "float64"), ("string", "boolean"), ("bytes", "decimal"),
         ("date", "timestamp"), ("struct-optional", "array-int")]


def converter_cases() -> list[dict]:
    out = []
    samples = {name: (schema, payloads) for name, schema, payloads in SAMPLES}
    # JsonConverter: every setting on a struct of every type; every top-level type with the defaults.
    for enable, fmt, replace in itertools.product(("true", "false"), ("BASE64", "NUMERIC"), ("true", "false")):
        config = {"value.converter": JSON, "value.converter.schemas.enable": enable,
                  "value.converter.decimal.format": fmt, "value.converter.replace.null.with.default": replace,
                  "key.converter": JSON, "key.converter.schemas.enable": enable, "key.converter.decimal.format": fmt,
                  "key.converter.replace.null.with.default": replace}
        slug = f"schemas.enable={enable},decimal.format={fmt},replace.null.with.default={replace}"
        out.append(chain(f"JsonConverter/all-types/{slug}", config, ALL,
                         [_record(r, key=r["int32-default"], i=i) for i, r in enumerate(ALL_ROWS)],
                         samples["int32-default"][0]))
        out.append(chain(f"JsonConverter/defaults/{slug}", config, samples["struct-defaults"][0],
                         [_record(p, i=i) for i, p in enumerate(samples["struct-defaults"][1])], None))
    for name, schema, payloads in SAMPLES:
        out.append(chain(f"JsonConverter/{name}", {"value.converter": JSON, "key.converter": JSON}, schema,
                         [_record(p, key=p if schema["type"] != "struct" else None, i=i)
                          for i, p in enumerate(payloads)], schema if schema["type"] != "struct" else None))
    for (name, payloads), enable in itertools.product(SCHEMALESS, ("true", "false")):
        config = {"value.converter": JSON, "value.converter.schemas.enable": enable,
                  "key.converter": JSON, "key.converter.schemas.enable": enable}
        out.append(chain(f"JsonConverter/{name}/schemas.enable={enable}", config, None,
                         [_record(p, key=p, i=i) for i, p in enumerate(payloads)], None))
    out.append(chain("JsonConverter/tombstone", {"value.converter": JSON}, ORDER,
                     [_record(None, i=0), _record(ORDER_ROWS[0], i=1)], None))
    # StringConverter, ByteArrayConverter and the number converters: pairs of samples as key and value.
    others = {"StringConverter": STRING, "ByteArrayConverter": BYTES, "BooleanConverter": BOOLEAN,
              **{f"{n}Converter": c for n, c in NUMBERS.items()}}
    for (cname, cls), (key_name, value_name) in itertools.product(others.items(), PAIRS):
        (key_schema, keys), (value_schema, values) = samples[key_name], samples[value_name]
        records = [_record(v, key=k, i=i) for i, (k, v) in enumerate(itertools.zip_longest(keys, values))]
        out.append(chain(f"{cname}/{key_name},{value_name}", {"value.converter": cls, "key.converter": cls},
                         value_schema, records, key_schema))
    for cname, cls in others.items():
        out.append(chain(f"{cname}/schemaless", {"value.converter": cls, "key.converter": cls}, None,
                         [_record(p, key=p, i=i) for i, p in enumerate(SCHEMALESS[1][1] + [None])], None))
    out.append(chain("StringConverter/encoding", {"value.converter": STRING,
                                                  "value.converter.converter.encoding": "ISO-8859-1",
                                                  "key.converter": STRING}, prim("string"),
                     [_record("café", i=0)], None))
    # Header converters: the headers the transforms make, with their schemas.
    literals = ("text", "42", "-3.5", "true", "[1,2]", "{\"a\":\"b\"}", "2022-06-26", "9999999999999", "")
    inserts = {"transforms": ",".join(f"i{i}" for i in range(len(literals)))}
    for i, literal in enumerate(literals):
        inserts |= {f"transforms.i{i}.type": f"{T}InsertHeader", f"transforms.i{i}.header": f"h{i}",
                    f"transforms.i{i}.value.literal": literal}
    for hname, hcls in (("SimpleHeaderConverter", SIMPLE_HEADER), ("JsonConverter", JSON),
                        ("StringConverter", STRING)):
        base = {"header.converter": hcls}
        out.append(chain(f"header/{hname}/strings", base, prim("int32"),
                         [{**_record(1, i=0), "headers": [["a", "x"], ["b", None], ["c", ""], ["d", "1"]]}], None))
        fields = "id,name,qty,price,ratio,small,paid,blob,amount,day,at,clock,address,tags,attrs"
        out.append(chain(f"header/{hname}/HeaderFrom", {**base, **one("h", f"{T}HeaderFrom$Value", {
            "fields": fields, "headers": fields, "operation": "copy"})}, ORDER,
            [_record(r, i=i) for i, r in enumerate(ORDER_ROWS)], None))
        out.append(chain(f"header/{hname}/HeaderFrom-schemaless", {**base, **one("h", f"{T}HeaderFrom$Value", {
            "fields": "id,name,price,paid,address,tags", "headers": "id,name,price,paid,address,tags",
            "operation": "copy"})}, None, [_record(r, i=i) for i, r in enumerate(SCHEMALESS_ROWS)], None))
        out.append(chain(f"header/{hname}/InsertHeader", {**base, **inserts}, prim("int32"), [_record(1, i=0)], None))
    out += read_cases()
    return out


# Header texts SimpleHeaderConverter.toConnectHeader reads (Values.parseString): every inference and its edges.
HEADER_TEXTS = [
    # integers of each width, and past a long
    "0", "7", "-128", "127", "128", "-129", "32767", "32768", "-32769", "2147483647", "2147483648", "-2147483649",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809", "99999999999999999999999", "007", "+5",
    "-0", "1_000", "0x1F", "١٢", "5 apples", "12,5", "1:2",
    # floats and decimals
    "1.5", "-2.25", "1.50", "1.0", "0.1", "3.4028235E38", "3.5E38", "1e10", "1E+3", "1e-7", "2.5e-300", "1e400",
    "-1e400", "1.7976931348623157E309", ".5", "5.", "1.2.3", "NaN", "Infinity", "-", "+", "1e",
    # exponents a billion digits long once written out: no integer, known without writing them
    "1e-100000000", "-1e-300000000", "0e19", "-0e99", "0E+20", "[0e20]", "{0e20:1}", "1e19", "1e18",
    # booleans and null
    "true", "false", " true ", "\ttrue", "TRUE", "True", "true}", "true,false", "null", " null ", "NULL", "nul",
    # strings, blanks, quotes
    "", " ", "   ", "\t", "plain", " padded ", "\"quoted\"", "\"", "'single'", "a:b", "a,b", "{", "[", "]", "}",
    "x]", "ünï ☃ 😀", "back\\slash",
    # arrays: typed, widened, mixed, nested, null elements, malformed
    "[]", "[ ]", "[1,2,3]", "[1, 2, 3]", "[1,300]", "[1,70000]", "[1,1.5]", "[1.5,2.5e300]", "[1,1e400]",
    "[true,false]", "[\"a\",\"b\"]", "[\"a\", 1]", "[1,\"a\"]", "[a,b]", "[1,null]", "[null]", "[null,null]",
    "[[1,2],[3]]", "[[1],[\"a\"]]", "[[]]", "[{\"a\":1}]", "[1,,2]", "[1,2", "[1 2]", "[1,2]x", "[,]", "[1,]",
    "[\"2024-01-31\",\"12:30:00.000Z\"]", "[2024-01-31]", "[\"2024-01-31\", 5]", "[true,1]", "[1.0,2]",
    "[ 1 , 2 ]", " [1]", "[1] ", "[\"a,b\",\"c:d\"]", "[\"esc\\\"q\"]", "[-1,+2]",
    # maps
    "{}", "{\"a\":1}", "{\"a\":1,\"b\":2.5}", "{\"a\":1, \"a\":2}", "{1:\"one\",2:\"two\"}",
    "{\"a\":null}", "{\"a\":null,\"b\":1}", "{null:1}", "{\"a\":[1,2],\"b\":{\"c\":true}}",
    "{\"a\" 1}", "{\"a\":1", "{:1}", "{\"a\":}", "{\"k\":\"v\",}", "{a:1}", "{\"x\":\"2024-01-31\"}",
    "{ \"a\" : 1 }", "{1:2,3.5:4}", "{\"a\":1,\"b\":\"x\"}", "{true:1}",
    # dates, times, timestamps (lenient SimpleDateFormat in UTC)
    "2024-01-31", "1970-01-01", "2024-13-01", "2024-02-30", "2024-01-3x", "1969-12-31", "0001-01-01",
    "12:30:00.000Z", "00:00:00.000Z", "23:59:59.999Z", "25:00:00.000Z", "12:30:00.000X", "12\\:30\\:00.000Z",
    "2024-01-31T12:30:00.000Z", "2024-01-31T00:00:00.000Z", "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.001Z",
    "2024-01-31T12:30:00Z", "2024-01-31 12:30:00.000Z", "\"2024-01-31\"", "2024-01-31,x", "12:30", "1234567890",
]


def read_cases() -> list[dict]:
    """Topic bytes read back as a sink task reads them (Kafka's toConnectData / toConnectHeader)."""
    out = []
    texts = HEADER_TEXTS
    for i in range(0, len(texts), 20):  # a record of 20 headers each, and one whose headers are all null
        out.append(_read(f"read/SimpleHeaderConverter/texts-{i // 20}", {"header.converter": SIMPLE_HEADER},
                         [{"headers": [[f"h{j}", b64(t.encode())] for j, t in enumerate(texts[i:i + 20])]}]))
    out.append(_read("read/SimpleHeaderConverter/null-and-none", {"header.converter": SIMPLE_HEADER},
                     [{"headers": [["n", None], ["dup", b64(b"1")], ["dup", b64(b"x")]]}, {"headers": []}]))
    boolean = {"key.converter": BOOLEAN, "value.converter": BOOLEAN, "header.converter": BOOLEAN}
    good = [{"key": b64(b"\x01"), "value": b64(b"\x00"), "headers": [["b", b64(b"\x01")], ["n", None]]},
            {"key": None, "value": b64(b"\x01"), "headers": []}, {"key": b64(b"\x00"), "value": None}]
    out.append(_read("read/BooleanConverter/good", boolean, good))
    for name, data in (("empty", b""), ("two-bytes", b"\x01\x00"), ("byte-2", b"\x02"), ("byte-ff", b"\xff"),
                       ("text-true", b"true"), ("byte-80", b"\x80")):
        out.append(_read(f"read/BooleanConverter/value-{name}", boolean,
                         [{"key": None, "value": b64(data)}, {"key": None, "value": b64(b"\x01")}]))
        out.append(_read(f"read/BooleanConverter/header-{name}", boolean,
                         [{"key": None, "value": b64(b"\x01"), "headers": [["h", b64(data)]]}]))
    # BooleanConverter on the write side: booleans, and every other schema (Kafka refuses them).
    for name, schema, payloads in SAMPLES:
        if name in ("boolean", "int8", "string", "struct-optional", "decimal", "date"):
            config = {"value.converter": BOOLEAN, "key.converter": BOOLEAN, "header.converter": BOOLEAN}
            out.append(chain(f"BooleanConverter/write-{name}", config, schema,
                             [_record(p, key=True, i=i) for i, p in enumerate(payloads)], prim("boolean", True)))
    return out


def _read(case_id: str, config: dict, records: list[dict]) -> dict:
    full = {"key.converter": BYTES, "value.converter": BYTES, **config}
    return {"id": case_id, "kind": "read", "config": full,
            "records": [{"topic": "conv", "key": None, "value": None, "headers": [], **r} for r in records]}


def _record(value, key=None, i=0) -> dict:
    return {"topic": "conv", "partition": 0, "key": key, "value": value, "headers": [], "timestamp": 1000 + i}
