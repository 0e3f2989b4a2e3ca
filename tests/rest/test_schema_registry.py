"""The lake as a Schema Registry: the REST server's `/registry` resources driven by confluent-kafka's own
`SchemaRegistryClient`, `AvroSerializer` and `AvroDeserializer` (the registry clients Python users run),
and by plain HTTP calls where the answer's exact shape matters, against a `lakeconnect rest` process and the
lake's `_schemas` Delta table."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext
from deltalake import DeltaTable

from tests.conftest import write_worker
from tests.rest.test_rest_api import Rest

USER_V1 = json.dumps({"type": "record", "name": "User", "namespace": "com.example", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}, indent=2)
# a field with a default: readers of v2 read v1's data (BACKWARD), v1's readers ignore it (FORWARD)
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "com.example", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "email", "type": ["null", "string"], "default": None}]})
# a field without a default: v3 cannot read v1's or v2's data
USER_V3 = json.dumps({"type": "record", "name": "User", "namespace": "com.example", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})


@pytest.fixture
def registry(tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    server = Rest(write_worker(tmp_path / "worker.properties", lake))
    yield server
    server.stop()


def _client(rest: Rest) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": rest.url + "/registry"})


def _error(call) -> SchemaRegistryError:
    with pytest.raises(SchemaRegistryError) as e:
        call()
    return e.value


def test_register_look_up_and_read_back_with_the_python_client(registry, tmp_path):
    client = _client(registry)
    first = client.register_schema("users-value", Schema(USER_V1, "AVRO"))
    assert client.register_schema("users-value", Schema(USER_V1, "AVRO")) == first  # idempotent
    # the same schema under another subject keeps its id; ids are the registry's, not a subject's
    other = SchemaRegistryClient({"url": registry.url + "/registry"})
    assert other.register_schema("orders-value", Schema(USER_V1, "AVRO")) == first
    second = other.register_schema("users-value", Schema(USER_V2, "AVRO"))
    assert second == first + 1

    # the canonical text Avro's Schema.toString() prints, whatever the spacing sent
    canonical = ('{"type":"record","name":"User","namespace":"com.example","fields":[{"name":"id","type":"long"},'
                 '{"name":"name","type":"string"}]}')
    assert other.get_schema(first).schema_str == canonical
    latest = other.get_latest_version("users-value")
    assert (latest.version, latest.schema_id, latest.subject) == (2, second, "users-value")
    assert other.get_version("users-value", 1).schema.schema_str == canonical
    found = other.lookup_schema("users-value", Schema(USER_V1, "AVRO"))
    assert (found.version, found.schema_id) == (1, first)
    assert other.get_subjects() == ["orders-value", "users-value"]
    assert other.get_versions("users-value") == [1, 2]

    status, body = registry.call("GET", f"/registry/schemas/ids/{first}")
    assert (status, body) == (200, {"schema": canonical})
    status, body = registry.call("GET", "/registry/subjects/users-value/versions/latest")
    assert status == 200 and body == {"subject": "users-value", "version": 2, "id": second,
                                      "schema": other.get_schema(second).schema_str}
    status, body = registry.call("GET", "/registry/subjects/users-value/versions/1/schema")
    assert (status, body) == (200, json.loads(canonical))
    status, body = registry.call("GET", f"/registry/schemas/ids/{first}/versions")
    assert body == [{"subject": "orders-value", "version": 1}, {"subject": "users-value", "version": 1}]

    # kept in the lake: another server on the same lake answers the same
    registry.stop()
    again = Rest(tmp_path / "worker.properties")
    try:
        assert _client(again).get_latest_version("users-value").schema_id == second
        rows = DeltaTable(str(tmp_path / "lake" / "_connect" / "_schemas")).to_pyarrow_table().to_pylist()
        assert {(r["subject"], r["version"], r["id"]) for r in rows} == {
            ("users-value", 1, first), ("orders-value", 1, first), ("users-value", 2, second)}
    finally:
        again.stop()


def test_compatibility_levels_as_the_registry_checks_them(registry):
    client = _client(registry)
    client.register_schema("users-value", Schema(USER_V1, "AVRO"))
    assert client.get_compatibility() == "BACKWARD"  # the registry's default
    # BACKWARD: v3 adds a field without a default, so it cannot read v1's records
    assert client.test_compatibility("users-value", Schema(USER_V3, "AVRO")) is False
    status, body = registry.call("POST", "/registry/compatibility/subjects/users-value/versions/latest?verbose=true",
                                 {"schema": USER_V3})
    assert status == 200 and body["is_compatible"] is False
    assert body["messages"][0] == ("{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'age' "
                                   "at path '/fields/2' in the new schema has no default value and is missing in "
                                   "the old schema', additionalInfo:'age'}")
    assert body["messages"][1:] == ["{oldSchemaVersion: 1}", "{oldSchema: '" + client.get_schema(1).schema_str + "'}",
                                    "{validateFields: 'false', compatibility: 'BACKWARD'}"]
    e = _error(lambda: client.register_schema("users-value", Schema(USER_V3, "AVRO")))
    assert (e.http_status_code, e.error_code) == (409, 409)
    assert e.error_message.startswith('Schema being registered is incompatible with an earlier schema for subject '
                                      '"users-value", details: [{errorType:\'READER_FIELD_MISSING_DEFAULT_VALUE\'')
    assert client.get_versions("users-value") == [1]  # nothing registered

    # per subject: NONE lets it in; the global level stays
    assert client.set_compatibility("users-value", "NONE") == {"compatibility": "NONE"}
    assert client.get_compatibility("users-value") == "NONE" and client.get_compatibility() == "BACKWARD"
    assert client.register_schema("users-value", Schema(USER_V3, "AVRO")) == 2
    # FORWARD_TRANSITIVE: every earlier version must read the new schema's data, newest first. Version 2
    # (USER_V3) needs `age`, which USER_V2 lacks: refused, naming version 2.
    client.set_compatibility("users-value", "FORWARD_TRANSITIVE")
    e = _error(lambda: client.register_schema("users-value", Schema(USER_V2, "AVRO")))
    assert e.http_status_code == 409 and "{oldSchemaVersion: 2}" in e.error_message
    assert "compatibility: 'FORWARD_TRANSITIVE'" in e.error_message
    client.set_compatibility("users-value", "FULL")
    status, body = registry.call("DELETE", "/registry/config/users-value")
    assert (status, body) == (200, {"compatibilityLevel": "FULL"})
    status, body = registry.call("GET", "/registry/config/users-value")
    assert (status, body["error_code"]) == (404, 40408)
    status, body = registry.call("GET", "/registry/config/users-value?defaultToGlobal=true")
    assert (status, body) == (200, {"compatibilityLevel": "BACKWARD"})
    status, body = registry.call("PUT", "/registry/config", {"compatibility": "SIDEWAYS"})
    assert (status, body["error_code"]) == (422, 42203)


def test_deletes_soft_then_hard_and_the_error_codes(registry):
    client = _client(registry)
    v1 = client.register_schema("users-value", Schema(USER_V1, "AVRO"))
    client.register_schema("users-value", Schema(USER_V2, "AVRO"))
    assert client.delete_version("users-value", 1) == 1
    assert client.get_versions("users-value") == [2]
    status, body = registry.call("GET", "/registry/subjects/users-value/versions?deleted=true")
    assert body == [1, 2]
    # a soft-deleted schema stays readable by id: records written with it still decode
    assert client.get_schema(v1).schema_str
    e = _error(lambda: client.delete_version("users-value", 2, permanent=True))
    assert (e.http_status_code, e.error_code) == (404, 40407)
    assert client.delete_subject("users-value") == [2]
    assert client.get_subjects() == []
    e = _error(lambda: client.get_latest_version("users-value"))
    assert (e.http_status_code, e.error_code) == (404, 40401)
    assert e.error_message == "Subject 'users-value' not found."
    assert client.delete_subject("users-value", permanent=True) == [1, 2]
    status, body = registry.call("GET", "/registry/subjects/users-value/versions?deleted=true")
    assert (status, body["error_code"]) == (404, 40401)
    # registering again after a hard delete starts the subject at version 1; the schema gets its old id back,
    # and a schema never registered gets a new one: ids are never handed to another schema
    assert client.register_schema("users-value", Schema(USER_V1, "AVRO")) == v1
    assert client.get_versions("users-value") == [1]
    assert client.register_schema("other-value", Schema(USER_V3, "AVRO")) == v1 + 2

    for path, code in (("/registry/schemas/ids/999", 40403), ("/registry/subjects/users-value/versions/7", 40402),
                       ("/registry/subjects/nobody/versions", 40401)):
        status, body = registry.call("GET", path)
        assert (status, body["error_code"]) == (404, code), path
    status, body = registry.call("GET", "/registry/subjects/users-value/versions/first")
    assert (status, body["error_code"]) == (422, 42202)
    for request, words in (({"schema": '{"type": "record", "name": "R"}'}, "Invalid schema"),
                           ({"schema": "{not json"}, "not JSON"),
                           ({"schema": '{"type": "object"}', "schemaType": "JSON"}, "AVRO schemas only"),
                           ({"schema": '{"type":"array","items":' * 5000 + '"int"' + "}" * 5000}, "nested too deeply")):
        status, body = registry.call("POST", "/registry/subjects/bad-value/versions", request)
        assert (status, body["error_code"]) == (422, 42201) and words in body["message"], body
    status, body = registry.call("POST", "/registry/subjects/users-value", {"schema": USER_V3})
    assert (status, body["error_code"]) == (404, 40403)


def test_the_python_serializer_and_deserializer_through_the_lake(registry):
    client = _client(registry)
    schema = json.dumps({"type": "record", "name": "Payment", "namespace": "shop", "fields": [
        {"name": "id", "type": "string"}, {"name": "amount", "type": "double"},
        {"name": "note", "type": ["null", "string"], "default": None}]})
    serialize = AvroSerializer(client, schema)  # auto.register.schemas, TopicNameStrategy: payments-value
    context = SerializationContext("payments", MessageField.VALUE)
    data = serialize({"id": "p-1", "amount": 12.5, "note": None}, context)
    schema_id = client.get_latest_version("payments-value").schema_id
    assert data[:5] == b"\x00" + schema_id.to_bytes(4, "big")  # Confluent's wire format
    fresh = SchemaRegistryClient({"url": registry.url + "/registry"})  # no cache: the schema comes by id
    assert AvroDeserializer(fresh)(data, context) == {"id": "p-1", "amount": 12.5, "note": None}


def test_the_python_clients_other_calls(registry):
    from confluent_kafka.schema_registry import ConfigCompatibilityLevel, ServerConfig

    client = _client(registry)
    first = client.register_schema_full_response("users-value", Schema(USER_V1, "AVRO"))
    assert first.schema_id == 1  # the registry answers {"id": …}, which every client version reads
    client.register_schema("orders-value", Schema(USER_V1, "AVRO"))
    client.register_schema("users-value", Schema(USER_V2, "AVRO"))
    assert client.get_subjects_by_schema_id(1) == ["orders-value", "users-value"]
    assert [(v.subject, v.version) for v in client.get_schema_versions(1)] == [("orders-value", 1),
                                                                              ("users-value", 1)]
    # against every version (BACKWARD_TRANSITIVE's question), whatever the subject's level
    assert client.test_compatibility_all_versions("users-value", Schema(USER_V3, "AVRO")) is False
    assert client.test_compatibility_all_versions("users-value", Schema(USER_V2, "AVRO")) is True
    assert client.get_config().compatibility_level is ConfigCompatibilityLevel.BACKWARD
    client.set_config("users-value", ServerConfig(compatibility_level=ConfigCompatibilityLevel.FULL))
    assert client.get_config("users-value").compatibility_level is ConfigCompatibilityLevel.FULL
    assert client.delete_config("users-value").compatibility_level is ConfigCompatibilityLevel.FULL
    e = _error(lambda: client.get_config("users-value"))
    assert (e.http_status_code, e.error_code) == (404, 40408)
    e = _error(lambda: client.delete_config("users-value"))  # nothing set: Confluent's answer, 40401
    assert (e.http_status_code, e.error_code) == (404, 40401)
    assert client.get_schema_types() == ["AVRO"] and client.get_referenced_by("users-value", 1) == []
    assert client.get_contexts() == ["."]
    assert client.get_mode("users-value") == client.get_global_mode() == "READWRITE"
    assert client.update_mode("users-value", "READWRITE") == "READWRITE"
    e = _error(lambda: client.update_mode("users-value", "READONLY"))
    assert (e.http_status_code, e.error_code) == (422, 42205) and "always READWRITE" in e.error_message
    e = _error(lambda: client.update_mode("users-value", "SIDEWAYS"))
    assert (e.http_status_code, e.error_code) == (422, 42204)
    # a soft-deleted version is still there for a client that asks for deleted ones
    client.delete_version("users-value", 1)
    e = _error(lambda: client.get_version("users-value", 1))
    assert (e.http_status_code, e.error_code) == (404, 40402)
    assert client.get_version("users-value", 1, deleted=True).schema_id == 1
