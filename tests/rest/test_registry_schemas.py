"""The registry's schema rules without a server: the canonical text (Avro's Java `Schema.toString()`) and
the compatibility levels, with the registry's wording."""

from __future__ import annotations

import json

import pytest

from ingest.schema_registry.avro_schemas import InvalidSchema, ParsedSchema, canonical, incompatibilities


def test_the_canonical_text_is_what_avros_schema_to_string_prints():
    # Reserved attributes in Java's order whatever order they came in, other properties as given, no spaces;
    # a named type in full once, then by its name relative to the enclosing namespace.
    text = json.dumps({
        "fields": [
            {"type": {"type": "record", "name": "Address", "fields": [
                {"default": "x", "type": "string", "name": "street", "order": "ascending", "doc": "d"}]},
             "name": "home"},
            {"name": "work", "type": "Address"},
            {"name": "other", "type": "elsewhere.Place", "aliases": ["old_other"]},
            {"name": "kind", "type": {"symbols": ["A", "B"], "type": "enum", "name": "Kind", "default": "A",
                                      "namespace": "elsewhere"}},
            {"name": "id", "type": {"type": "fixed", "size": 16, "name": "Id", "logicalType": "x"}},
            {"name": "n", "type": {"type": "int", "connect.type": "int16"}},
            {"name": "s", "type": {"type": "string"}},
        ],
        "connect.name": "com.example.User", "name": "User", "type": "record", "namespace": "com.example",
        "doc": "a user"}, indent=4)
    # `elsewhere.Place` is not defined: Avro refuses the schema
    with pytest.raises(InvalidSchema):
        canonical(text)
    text = text.replace('"elsewhere.Place"', '{"type": "record", "name": "Place", "namespace": "elsewhere", '
                                              '"fields": []}')
    assert canonical(text) == (
        '{"type":"record","name":"User","namespace":"com.example","doc":"a user","fields":['
        '{"name":"home","type":{"type":"record","name":"Address","fields":['
        '{"name":"street","type":"string","doc":"d","default":"x"}]}},'
        '{"name":"work","type":"Address"},'
        '{"name":"other","type":{"type":"record","name":"Place","namespace":"elsewhere","fields":[]},'
        '"aliases":["old_other"]},'
        '{"name":"kind","type":{"type":"enum","name":"Kind","namespace":"elsewhere","symbols":["A","B"],'
        '"default":"A"}},'
        '{"name":"id","type":{"type":"fixed","name":"Id","size":16,"logicalType":"x"}},'
        '{"name":"n","type":{"type":"int","connect.type":"int16"}},'
        '{"name":"s","type":"string"}],"connect.name":"com.example.User"}')
    assert ParsedSchema('"string"') == ParsedSchema('{"type": "string"}')
    assert canonical('["null", {"type": "long", "logicalType": "timestamp-millis"}]') == (
        '["null",{"type":"long","logicalType":"timestamp-millis"}]')


V1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
WITH_DEFAULT = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                           {"name": "b", "type": "string", "default": ""}]}
WITHOUT_DEFAULT = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                              {"name": "c", "type": "string"}]}
WIDER = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}


def _check(level: str, new: dict, *old: dict) -> list[str]:
    return incompatibilities(level, ParsedSchema(json.dumps(new)),
                             [(ParsedSchema(json.dumps(o)), i + 1) for i, o in enumerate(old)])


@pytest.mark.parametrize("level, new, old, ok", [
    ("BACKWARD", WITH_DEFAULT, [V1], True),  # a new field with a default reads old data
    ("BACKWARD", WITHOUT_DEFAULT, [V1], False),
    ("BACKWARD", WIDER, [V1], True),  # int promotes to long
    ("FORWARD", WIDER, [V1], False),  # an old int reader cannot read a long
    ("FORWARD", WITHOUT_DEFAULT, [V1], True),  # old readers skip the new field
    ("FULL", WITH_DEFAULT, [V1], True),
    ("FULL", WIDER, [V1], False),
    ("NONE", {"type": "string"}, [V1], True),
    # transitive levels look past the latest version
    ("BACKWARD", V1, [WITHOUT_DEFAULT, WIDER], False),  # long does not narrow to int
    ("BACKWARD", WIDER, [WITHOUT_DEFAULT, V1], True),  # only the latest (V1) counts
    ("BACKWARD_TRANSITIVE", WIDER, [WITHOUT_DEFAULT, V1], True),  # long reads both
    ("FORWARD_TRANSITIVE", V1, [WITH_DEFAULT, WITHOUT_DEFAULT], False),  # version 2 needs `c`
    ("FORWARD", V1, [WITHOUT_DEFAULT, WITH_DEFAULT], True),
])
def test_levels(level, new, old, ok):
    messages = _check(level, new, *old)
    assert (messages == []) is ok, messages
    if not ok:
        assert messages[-1] == f"{{validateFields: 'false', compatibility: '{level}'}}"


def test_a_transitive_refusal_names_the_newest_version_that_fails_and_the_words_are_the_registrys():
    messages = _check("FORWARD_TRANSITIVE", V1, WITHOUT_DEFAULT, WITH_DEFAULT, WITHOUT_DEFAULT)
    assert messages[0] == ("{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'c' at path "
                           "'/fields/1' in the old schema has no default value and is missing in the new schema', "
                           "additionalInfo:'c'}")
    assert messages[1] == "{oldSchemaVersion: 3}"
    enum = {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}
    messages = _check("BACKWARD", {**enum, "symbols": ["A"]}, enum)
    assert messages[0] == ("{errorType:'MISSING_ENUM_SYMBOLS', description:'The new schema is missing enum symbols "
                           "'[B, C]' at path '/symbols' in the old schema', additionalInfo:'[B, C]'}")
    messages = _check("BACKWARD", {"type": "array", "items": "string"}, {"type": "array", "items": "int"})
    assert messages[0] == ("{errorType:'TYPE_MISMATCH', description:'The type (path '/items') of a field in the new "
                           "schema does not match with the old schema', additionalInfo:'reader type: STRING not "
                           "compatible with writer type: INT'}")
