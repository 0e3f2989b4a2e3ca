"""The oracle corpus: cases run through Kafka's own classes (tests/oracle/java) and through lakeconnect.

A case is a JSON object. "chain" cases: a connector config (`transforms`, `predicates`, `key.converter`,
`value.converter`, `header.converter` and their settings, exactly as Kafka Connect takes them), a key
schema and a value schema in JsonConverter's schema JSON (None: schemaless), and records whose keys and
values are JsonConverter payloads. "filesource" cases: a file's bytes; "filesink" cases: records a
FileStreamSinkTask prints. Generated, not stored: `cases()` is the whole corpus.
"""

from __future__ import annotations

import itertools
from functools import cache

from tests.oracle.builders import (
    ORDER, ORDER_ROWS, SCHEMALESS_ROWS, T, P, _records, chain, one, prim, struct, timestamp,
)
from tests.oracle.corpus_converters import converter_cases
from tests.oracle.corpus_files import file_cases

KEY = prim("int64")


def _both(case_id: str, config: dict, schema_rows=ORDER_ROWS, schemaless_rows=SCHEMALESS_ROWS, key=None) -> list[dict]:
    """The same config on records with a schema (ORDER, key int64) and on schemaless maps (key the id)."""
    key = key or (lambda row: row["id"])
    return [chain(f"{case_id}/schema", config, ORDER, _records(schema_rows, key), KEY),
            chain(f"{case_id}/schemaless", config, None, _records(schemaless_rows, key), None)]


def _value_and_key(name: str, cls: str, settings: dict, rows=ORDER_ROWS) -> list[dict]:
    """`cls$Key` and `cls$Value` in one chain, on ORDER keys and values, then on schemaless maps."""
    config = {"transforms": "k,v", "transforms.k.type": f"{T}{cls}$Key", "transforms.v.type": f"{T}{cls}$Value",
              **{f"transforms.{label}.{k}": v for label in "kv" for k, v in settings.items()}}
    slug = f"{name}/{_slug(settings)}"
    return [chain(f"{slug}/schema", config, ORDER, _records(rows, lambda row: row), ORDER),
            chain(f"{slug}/schemaless", config, None, _records(SCHEMALESS_ROWS, lambda row: row), None)]


def _slug(settings: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in settings.items()) or "defaults"


def transform_cases() -> list[dict]:
    out: list[dict] = []
    # Cast
    for spec in ("id:string,qty:int8,price:float32,ratio:float64,small:int64,mid:int32",
                 "paid:int32,small:boolean,price:boolean,name:boolean",
                 "amount:float64,amount:string", "day:string,at:string,clock:string,blob:string",
                 "address:string", "tags:string,attrs:string", "price:int32,ratio:int16,id:float32",
                 "name:int32", "nope:int32", "id:uuid"):
        out += _value_and_key("Cast", "Cast", {"spec": spec})
    out += _both("Cast/replace.null.with.default=false",
                 one("t", f"{T}Cast$Value", {"spec": "qty:string", "replace.null.with.default": "false"}))
    for target in ("string", "int32", "float64", "boolean", "int8"):
        config = {"transforms": "k,v", "transforms.k.type": f"{T}Cast$Key", "transforms.k.spec": target,
                  "transforms.v.type": f"{T}Cast$Value", "transforms.v.spec": target}
        pairs = (((prim("int64"), [1, -7, 300]), (prim("string"), ["12", "true", "x"])),
                 ((prim("float64", True), [1.5, None, -2.0]), (prim("boolean"), [True, False, True])))
        for (key_schema, keys), (schema, values) in pairs:
            records = [{**r, "key": k} for r, k in zip(_records(values), keys)]
            out.append(chain(f"Cast/whole/{key_schema['type']},{schema['type']}->{target}", config, schema, records,
                             key_schema))
        out.append(chain(f"Cast/whole-schemaless/->{target}", config, None,
                         [{**r, "key": 3} for r in _records([1, "12", 2.5, True, "x"])], None))
    # DropHeaders
    for names in ("source", "retries,empty", "missing"):
        out += _both(f"DropHeaders/{names}", one("t", f"{T}DropHeaders", {"headers": names}))
    # ExtractField
    for settings in ({"field": "name"}, {"field": "address"}, {"field": "qty"}, {"field": "missing"},
                     {"field": "address.city", "field.syntax.version": "V2"},
                     {"field": "address.city"}, {"field": "address.nope", "field.syntax.version": "V2"}):
        out += _value_and_key("ExtractField", "ExtractField", settings)
    # Flatten
    nested = struct("n.Outer", ("a", prim("int32")), ("inner", struct("n.Inner", ("b", prim("string", True)),
                    ("deep", struct(None, ("c", prim("boolean", True)), optional=True)), optional=True)),
                    ("list", prim("string", True)))
    nested_rows = [{"a": 1, "inner": {"b": "x", "deep": {"c": True}}, "list": "l"},
                   {"a": 2, "inner": None, "list": None}, {"a": 3, "inner": {"b": None, "deep": None}, "list": "m"}]
    for settings in ({}, {"delimiter": "_"}, {"delimiter": "->"}):
        out += _value_and_key("Flatten", "Flatten", settings)
    out.append(chain("Flatten/nested", one("t", f"{T}Flatten$Value", {}), nested, _records(nested_rows, 1), KEY))
    out.append(chain("Flatten/nested-schemaless", one("t", f"{T}Flatten$Value", {}), None,
                     _records(nested_rows, 1), KEY))
    # HeaderFrom
    for settings in ({"fields": "name,qty", "headers": "n,q", "operation": "copy"},
                     {"fields": "id,address,tags", "headers": "i,a,t", "operation": "move"},
                     {"fields": "price,paid,amount,day", "headers": "p,b,m,d", "operation": "copy"},
                     {"fields": "missing", "headers": "m", "operation": "copy"},
                     {"fields": "name", "headers": "a,b", "operation": "copy"},
                     {"fields": "qty", "headers": "q", "operation": "move", "replace.null.with.default": "false"}):
        out += _value_and_key("HeaderFrom", "HeaderFrom", settings)
    # HoistField
    out += _value_and_key("HoistField", "HoistField", {"field": "wrapped"})
    out.append(chain("HoistField/primitive", one("t", f"{T}HoistField$Value", {"field": "w"}), prim("string", True),
                     _records(["a", None, "c"], 1), KEY))
    # InsertField
    for settings in ({"topic.field": "t", "partition.field": "p", "timestamp.field": "ts"},
                     {"static.field": "origin", "static.value": "db1"},
                     {"topic.field": "t!", "partition.field": "p?", "timestamp.field": "ts!"},
                     {"offset.field": "o"}, {"static.field": "name", "static.value": "dup"},
                     {"topic.field": "t", "replace.null.with.default": "false"}):
        out += _value_and_key("InsertField", "InsertField", settings)
    out.append(chain("InsertField/tombstone", one("t", f"{T}InsertField$Value", {"topic.field": "t"}),
                     ORDER, [{**r, "value": None} for r in _records(ORDER_ROWS[:1], 1)], KEY))
    # InsertHeader: several in one chain; then literals Kafka's parser changes ("007" is the int8 7, written "7")
    for name, literals in (
            ("several", {"h": "v", "source": "42", "x": "[1,2]", "y": "true", "z": "{\"a\":1}", "n": "1.5", "e": ""}),
            ("parsed", {"a": "007", "b": "1.50", "c": "[1, 2]", "d": "null", "e": " true ", "f": "2024-13-01",
                        "g": "-0"})):
        config = {"transforms": ",".join(f"i{i}" for i in range(len(literals)))}
        for i, (header, literal) in enumerate(literals.items()):
            config |= {f"transforms.i{i}.type": f"{T}InsertHeader", f"transforms.i{i}.header": header,
                       f"transforms.i{i}.value.literal": literal}
        out += _both(f"InsertHeader/{name}", config)
    # MaskField
    for settings in ({"fields": "name,qty,price,ratio,small,mid,paid"}, {"fields": "blob,amount,day,at,clock"},
                     {"fields": "address,tags,attrs"}, {"fields": "name,created", "replacement": "***"},
                     {"fields": "qty,id", "replacement": "7"}, {"fields": "price", "replacement": "x"},
                     {"fields": "amount", "replacement": "1.5"}, {"fields": "missing"}):
        out += _value_and_key("MaskField", "MaskField", settings)
    # RegexRouter
    for settings in ({"regex": "orders", "replacement": "sales"}, {"regex": "(.*)rd(.*)", "replacement": "$2-$1"},
                     {"regex": "o", "replacement": "0"}, {"regex": "x(.*)", "replacement": "y"},
                     {"regex": "(?<first>o)(.*)", "replacement": "${first}_$2"}):
        out += _both(f"RegexRouter/{_slug(settings)}", one("t", f"{T}RegexRouter", settings))
    # ReplaceField
    for settings in ({"exclude": "name,blob"}, {"include": "id,name,address"}, {"renames": "name:full_name,id:key"},
                     {"include": "id,qty", "renames": "qty:quantity"}, {"exclude": "missing"},
                     {"renames": "name:n", "replace.null.with.default": "false"}, {"renames": "bad"}):
        out += _value_and_key("ReplaceField", "ReplaceField", settings)
    # SetSchemaMetadata
    for settings in ({"schema.name": "shop.Renamed"}, {"schema.version": "7"},
                     {"schema.name": "x.Y", "schema.version": "2"}):
        out += _value_and_key("SetSchemaMetadata", "SetSchemaMetadata", settings)
    # TimestampConverter
    for settings in ({"field": "at", "target.type": "string", "format": "yyyy-MM-dd HH:mm:ss.SSS"},
                     {"field": "at", "target.type": "unix"}, {"field": "at", "target.type": "Date"},
                     {"field": "at", "target.type": "Time"},
                     {"field": "day", "target.type": "Timestamp"}, {"field": "day", "target.type": "unix"},
                     {"field": "clock", "target.type": "unix"},
                     {"field": "created", "target.type": "Timestamp", "format": "yyyy-MM-dd HH:mm:ss"},
                     {"field": "created", "target.type": "unix", "format": "yyyy-MM-dd HH:mm:ss"},
                     {"field": "created", "target.type": "Date", "format": "yyyy-MM-dd HH:mm:ss"},
                     {"field": "epoch", "target.type": "Timestamp"},
                     {"field": "epoch", "target.type": "Timestamp", "unix.precision": "seconds"},
                     {"field": "epoch", "target.type": "string", "format": "EEE, d MMM yyyy HH:mm:ss Z",
                      "unix.precision": "microseconds"},
                     {"field": "at", "target.type": "unix", "unix.precision": "nanoseconds"},
                     {"field": "created", "target.type": "Timestamp", "format": "dd/MM/yyyy"},
                     {"field": "name", "target.type": "Timestamp"},
                     {"field": "at", "target.type": "string"},
                     {"field": "qty", "target.type": "string", "format": "yyyy",
                      "replace.null.with.default": "false"}):
        out += _value_and_key("TimestampConverter", "TimestampConverter", settings)
    for target in ("string", "unix", "Date", "Time", "Timestamp"):
        settings = {"target.type": target, "format": "yyyy-MM-dd'T'HH:mm:ss"}
        config = {"transforms": "k,v", **{f"transforms.{label}.{k}": v for label in "kv" for k, v in settings.items()},
                  "transforms.k.type": f"{T}TimestampConverter$Key",
                  "transforms.v.type": f"{T}TimestampConverter$Value"}
        records = [{**r, "key": k} for r, k in zip(_records(["2022-06-26T09:04:50", "1970-01-01T00:00:00", None]),
                                                   [1656234290123, None, -86_400_001])]
        out.append(chain(f"TimestampConverter/whole/->{target}", config, prim("string", True), records,
                         timestamp(True)))
        out.append(chain(f"TimestampConverter/whole-schemaless/->{target}", config, None,
                         [{**r, "key": 1656234290123} for r in _records(["2022-06-26T09:04:50", 0])], None))
    # TimestampRouter
    for settings in ({}, {"topic.format": "${topic}_${timestamp}", "timestamp.format": "yyyy-MM-dd'T'HH"},
                     {"topic.format": "static", "timestamp.format": "yyyy"},
                     {"topic.format": "${timestamp}/${topic}/${timestamp}", "timestamp.format": "EEE MMM"}):
        out += _both(f"TimestampRouter/{_slug(settings)}", one("t", f"{T}TimestampRouter", settings))
    out.append(chain("TimestampRouter/no-timestamp", one("t", f"{T}TimestampRouter"), ORDER,
                     [{**r, "timestamp": None} for r in _records(ORDER_ROWS[:1], 1)], KEY))
    # ValueToKey
    for settings in ({"fields": "id"}, {"fields": "name,address,qty"}, {"fields": "missing"},
                     {"fields": "qty", "replace.null.with.default": "false"}):
        out += _both(f"ValueToKey/{_slug(settings)}", one("t", f"{T}ValueToKey", settings))
    # Chains: several transforms, the book's shapes.
    two = {"transforms": "v2k,extract,route", "transforms.v2k.type": f"{T}ValueToKey", "transforms.v2k.fields": "id",
           "transforms.extract.type": f"{T}ExtractField$Key", "transforms.extract.field": "id",
           "transforms.route.type": f"{T}RegexRouter", "transforms.route.regex": "(.*)",
           "transforms.route.replacement": "prefix-$1"}
    out += _both("chain/v2k-extract-route", two)
    flat = {"transforms": "flatten,mask,cast", "transforms.flatten.type": f"{T}Flatten$Value",
            "transforms.flatten.delimiter": "_", "transforms.mask.type": f"{T}MaskField$Value",
            "transforms.mask.fields": "address_city", "transforms.cast.type": f"{T}Cast$Value",
            "transforms.cast.spec": "address_zip:string"}
    out += _both("chain/flatten-mask-cast", flat)
    return out


def predicate_cases() -> list[dict]:
    out = []
    predicates = {
        "TopicNameMatches/orders": (f"{P}TopicNameMatches", {"pattern": "ord.*"}),
        "TopicNameMatches/partial": (f"{P}TopicNameMatches", {"pattern": "ord"}),
        "HasHeaderKey/source": (f"{P}HasHeaderKey", {"name": "source"}),
        "HasHeaderKey/empty": (f"{P}HasHeaderKey", {"name": "empty"}),
        "RecordIsTombstone": (f"{P}RecordIsTombstone", {}),
    }
    rows = ORDER_ROWS[:2] + [None]
    topics = ["orders", "other", "orders"]
    for (name, (cls, settings)), negate in itertools.product(predicates.items(), ("false", "true")):
        config = {"predicates": "p", "predicates.p.type": cls, **{f"predicates.p.{k}": v for k, v in settings.items()},
                  "transforms": "insert,route,filter",
                  "transforms.insert.type": f"{T}InsertField$Value", "transforms.insert.static.field": "s",
                  "transforms.insert.static.value": "v", "transforms.route.type": f"{T}RegexRouter",
                  "transforms.route.regex": "(.*)", "transforms.route.replacement": "$1-routed",
                  "transforms.filter.type": f"{T}Filter"}
        config |= {f"transforms.{t}.{k}": v for t in ("insert", "route", "filter")
                   for k, v in (("predicate", "p"), ("negate", negate))}
        config["transforms.filter.negate"] = "true" if negate == "false" else "false"
        records = [{**r, "topic": t} for r, t in zip(_records(rows, 1), topics)]
        out.append(chain(f"predicate/{name}/negate={negate}", config, ORDER, records, KEY))
    out.append(chain("predicate/undeclared", {"transforms": "t", "transforms.t.type": f"{T}Filter",
                                              "transforms.t.predicate": "nope"}, ORDER,
                     _records(ORDER_ROWS[:1], 1), KEY))
    out.append(chain("predicate/filter-without-predicate", one("t", f"{T}Filter"), ORDER, _records(ORDER_ROWS, 1), KEY))
    return out


@cache
def cases() -> tuple[dict, ...]:
    """The whole corpus; ids are unique."""
    out = [{**c, "suite": "transforms"} for c in itertools.chain(transform_cases(), predicate_cases())]
    out += [{**c, "suite": "converters"} for c in converter_cases()]
    out += [{**c, "suite": "filestream"} for c in file_cases()]
    ids = [c["id"] for c in out]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    return tuple(out)


def of_kind(kind: str) -> list[dict]:
    return [c for c in cases() if c["kind"] == kind]


def of_suite(suite: str) -> list[str]:
    """The ids of a test file's cases: transforms (and predicates), converters, filestream."""
    return [c["id"] for c in cases() if c["suite"] == suite]


def case(case_id: str) -> dict:
    return next(c for c in cases() if c["id"] == case_id)
