"""Confluent Schema Registry's REST API, as the REST server serves it under `/registry`.

The calls registry clients make (Confluent's serializers and converters, confluent-kafka's
`SchemaRegistryClient`), with the registry's status codes, error codes and messages (`{"error_code": 40401,
"message": "Subject 'x' not found."}`), answered from the lake's `_schemas` table (`store.py`). Avro schemas
only: JSON Schema and Protobuf are refused with 42201, naming what is supported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from ingest.rest import routes
from ingest.schema_registry.avro_schemas import (
    AVRO, COMPATIBILITY_LEVELS, DEFAULT_COMPATIBILITY, InvalidSchema, ParsedSchema, incompatibilities,
)
from ingest.schema_registry.store import CONFIG, GLOBAL, SCHEMA, SchemaStore, State, Version

PREFIX = "/registry"
MAX_SCHEMA_CHARS = 1 << 20
"""Bigger schemas are refused (42209); the REST server refuses bodies over 16 MiB before this."""


class RegistryError(Exception):
    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


READWRITE = "READWRITE"
MODES = (READWRITE, "READONLY", "READONLY_OVERRIDE", "IMPORT")


def _subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def _version_not_found(version: Any) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def _schema_not_found(schema_id: Any = None) -> RegistryError:
    return RegistryError(404, 40403, "Schema not found" if schema_id is None else f"Schema {schema_id} not found")


def _invalid_version(version: str) -> RegistryError:
    return RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. Allowed "
                                     "values are between [1, 2^31-1] and the string \"latest\"")


def _flag(query: Mapping[str, list[str]], name: str) -> bool:
    return (query.get(name) or ["false"])[-1].lower() == "true"


class RegistryApi:
    """The resources; `handle` returns (status, body, raw): body is JSON-able, raw a text sent as it is."""

    def __init__(self, store: SchemaStore):
        self.store = store
        s, v = "/subjects/(?P<subject>[^/]+)", "/versions/(?P<version>[^/]+)"
        self._routes: list[tuple[str, re.Pattern[str], Callable[..., Any]]] = [
            (m, re.compile(p), h) for m, p, h in (
                ("GET", "", lambda **_: {}),
                ("GET", "/schemas/types", lambda **_: [AVRO]),
                ("GET", "/schemas/ids/(?P<schema_id>[^/]+)", self.schema_by_id),
                ("GET", "/schemas/ids/(?P<schema_id>[^/]+)/schema", self.raw_schema_by_id),
                ("GET", "/schemas/ids/(?P<schema_id>[^/]+)/subjects", self.subjects_of_id),
                ("GET", "/schemas/ids/(?P<schema_id>[^/]+)/versions", self.versions_of_id),
                ("GET", "/subjects", self.subjects),
                ("POST", s, self.lookup),
                ("DELETE", s, self.delete_subject),
                ("GET", s + "/versions", self.versions),
                ("POST", s + "/versions", self.register),
                ("GET", s + v, self.version),
                ("GET", s + v + "/schema", self.raw_version),
                ("DELETE", s + v, self.delete_version),
                ("GET", s + v + "/referencedby", lambda **_: []),
                ("POST", "/compatibility" + s + v, self.compatible_with_version),
                ("POST", "/compatibility" + s + "/versions", self.compatible_with_subject),
                ("GET", "/config", self.global_config),
                ("PUT", "/config", self.put_global_config),
                ("GET", "/config/(?P<subject>[^/]+)", self.subject_config),
                ("PUT", "/config/(?P<subject>[^/]+)", self.put_subject_config),
                ("DELETE", "/config/(?P<subject>[^/]+)", self.delete_subject_config),
                ("GET", "/mode", lambda **_: {"mode": READWRITE}),
                ("GET", "/mode/(?P<subject>[^/]+)", lambda **_: {"mode": READWRITE}),
                ("PUT", "/mode", self.put_mode),
                ("PUT", "/mode/(?P<subject>[^/]+)", self.put_mode),
                ("GET", "/contexts", lambda **_: ["."]),  # the default context only
            )]

    def handle(self, method: str, path: str, query: Mapping[str, list[str]],
               body: bytes) -> tuple[int, Any, str | None]:
        found = routes.find(self._routes, method, path[len(PREFIX):].rstrip("/"))
        if found == routes.NOT_ALLOWED:
            return 405, {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}, None
        if found == routes.NOT_FOUND:
            return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}, None
        handler, params = found
        try:
            result = handler(query=query, body=body, **params)
        except RegistryError as e:
            return e.status, {"error_code": e.code, "message": e.message}, None
        if isinstance(result, _Raw):
            return 200, None, result.text
        return 200, result, None

    # --- schemas by id -----------------------------------------------------------------------------

    def _by_id(self, schema_id: str) -> Version:
        if not re.fullmatch(r"-?[0-9]{1,10}", schema_id):
            raise RegistryError(404, 404, "HTTP 404 Not Found")
        found = self.store.state().by_id(int(schema_id))
        if found is None:
            raise _schema_not_found(schema_id)
        return found

    def schema_by_id(self, schema_id: str, **_) -> dict[str, Any]:
        return _schema_body(self._by_id(schema_id))

    def raw_schema_by_id(self, schema_id: str, **_) -> _Raw:
        return _Raw(self._by_id(schema_id).schema)

    def subjects_of_id(self, schema_id: str, query, **_) -> list[str]:
        self._by_id(schema_id)
        deleted = _flag(query, "deleted")
        return sorted({v.subject for v in self.store.state().versions
                       if v.id == int(schema_id) and (deleted or not v.deleted)})

    def versions_of_id(self, schema_id: str, query, **_) -> list[dict[str, Any]]:
        self._by_id(schema_id)
        deleted = _flag(query, "deleted")
        return [{"subject": v.subject, "version": v.version} for v in self.store.state().versions
                if v.id == int(schema_id) and (deleted or not v.deleted)]

    # --- subjects ----------------------------------------------------------------------------------

    def subjects(self, query, **_) -> list[str]:
        deleted = _flag(query, "deleted")
        prefix = (query.get("subjectPrefix") or [""])[-1]
        return sorted({v.subject for v in self.store.state().versions
                       if (deleted or not v.deleted) and v.subject.startswith(prefix)})

    def versions(self, subject: str, query, **_) -> list[int]:
        found = self.store.state().of(subject, deleted=_flag(query, "deleted"))
        if not found:
            raise _subject_not_found(subject)
        return [v.version for v in found]

    def _version(self, state: State, subject: str, version: str, deleted: bool = False) -> Version:
        number = _version_number(version)
        live = state.of(subject, deleted=deleted)
        if not state.of(subject, deleted=True):
            raise _subject_not_found(subject)
        if number == -1:
            if not live:
                raise _subject_not_found(subject)
            return live[-1]
        for v in live:
            if v.version == number:
                return v
        raise _version_not_found(number)

    def version(self, subject: str, version: str, query, **_) -> dict[str, Any]:
        return _version_body(self._version(self.store.state(), subject, version, _flag(query, "deleted")))

    def raw_version(self, subject: str, version: str, query, **_) -> _Raw:
        return _Raw(self._version(self.store.state(), subject, version, _flag(query, "deleted")).schema)

    def lookup(self, subject: str, body: bytes, query, **_) -> dict[str, Any]:
        parsed, schema_type, references = _request(body)
        state = self.store.state()
        deleted = _flag(query, "deleted")
        versions = state.of(subject, deleted=deleted)
        if not versions:
            raise _subject_not_found(subject)
        for v in reversed(versions):
            if v.schema == parsed.canonical and v.schema_type == schema_type and v.references == references:
                return _version_body(v)
        raise _schema_not_found()

    def register(self, subject: str, body: bytes, **_) -> dict[str, Any]:
        _check_subject(subject)
        parsed, schema_type, references = _request(body)

        def decide(state: State):
            live = state.of(subject)
            for v in live:
                if v.schema == parsed.canonical and v.schema_type == schema_type and v.references == references:
                    return [], {"id": v.id}
            level = _level(state, subject)
            previous = [(ParsedSchema(v.schema), v.version) for v in live if v.schema_type == AVRO]
            problems = incompatibilities(level, parsed, previous)
            if problems:
                raise RegistryError(409, 409, "Schema being registered is incompatible with an earlier schema for "
                                              f"subject \"{subject}\", details: [{', '.join(problems)}]")
            schema_id = state.id_of(parsed.canonical, schema_type, references) or state.next_id()
            version = max((v.version for v in state.of(subject, deleted=True)), default=0) + 1
            row = {"kind": SCHEMA, "subject": subject, "version": version, "id": schema_id,
                   "schema_type": schema_type, "schema": parsed.canonical, "references": references}
            return [row], {"id": schema_id}

        return self.store.change(decide)

    def delete_subject(self, subject: str, query, **_) -> list[int]:
        permanent = _flag(query, "permanent")

        def decide(state: State):
            every = state.of(subject, deleted=True)
            if not every:
                raise _subject_not_found(subject)
            live = [v for v in every if not v.deleted]
            if permanent and live:
                raise RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being "
                                                "permanently deleted")
            if not permanent and not live:
                raise RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to "
                                                "delete permanently")
            chosen = every if permanent else live
            rows = [_row(v, deleted=True, purged=permanent) for v in chosen]
            return rows, [v.version for v in chosen]

        return self.store.change(decide)

    def delete_version(self, subject: str, version: str, query, **_) -> int:
        permanent = _flag(query, "permanent")

        def decide(state: State):
            if not state.of(subject, deleted=True):
                raise _subject_not_found(subject)
            found = self._version(state, subject, version, deleted=permanent)
            if permanent and not found.deleted:
                raise RegistryError(404, 40407, f"Subject '{subject}' Version {found.version} was not deleted "
                                                "first before being permanently deleted")
            if not permanent and found.deleted:
                raise RegistryError(404, 40406, f"Subject '{subject}' Version {found.version} was soft deleted.Set "
                                                "permanent=true to delete permanently")
            return [_row(found, deleted=True, purged=permanent)], found.version

        return self.store.change(decide)

    # --- compatibility -----------------------------------------------------------------------------

    def compatible_with_version(self, subject: str, version: str, body: bytes, query, **_) -> dict[str, Any]:
        number = _version_number(version)
        parsed, _, _ = _request(body)
        state = self.store.state()
        live = state.of(subject)
        if number == -1:
            previous = live[-1:]
        else:
            previous = [v for v in live if v.version == number]
            if not previous:
                raise _version_not_found(number)
        level = _level(state, subject)
        messages = incompatibilities(level, parsed, [(ParsedSchema(v.schema), v.version) for v in previous])
        return _compatibility_body(messages, _flag(query, "verbose"))

    def compatible_with_subject(self, subject: str, body: bytes, query, **_) -> dict[str, Any]:
        parsed, _, _ = _request(body)
        state = self.store.state()
        previous = [(ParsedSchema(v.schema), v.version) for v in state.of(subject)]
        messages = incompatibilities(_level(state, subject), parsed, previous)
        return _compatibility_body(messages, _flag(query, "verbose"))

    # --- config ------------------------------------------------------------------------------------

    def global_config(self, **_) -> dict[str, str]:
        return {"compatibilityLevel": self.store.state().configs.get(GLOBAL, DEFAULT_COMPATIBILITY)}

    def put_global_config(self, body: bytes, **_) -> dict[str, str]:
        return self._put_config(GLOBAL, body)

    def subject_config(self, subject: str, query, **_) -> dict[str, str]:
        configs = self.store.state().configs
        if subject in configs:
            return {"compatibilityLevel": configs[subject]}
        if _flag(query, "defaultToGlobal"):
            return {"compatibilityLevel": configs.get(GLOBAL, DEFAULT_COMPATIBILITY)}
        raise RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")

    def put_subject_config(self, subject: str, body: bytes, **_) -> dict[str, str]:
        _check_subject(subject)
        return self._put_config(subject, body)

    def delete_subject_config(self, subject: str, **_) -> dict[str, str]:
        def decide(state: State):
            if subject not in state.configs:
                raise _subject_not_found(subject)
            return ([{"kind": CONFIG, "subject": subject, "compatibility": None}],
                    {"compatibilityLevel": state.configs[subject]})

        return self.store.change(decide)

    def _put_config(self, subject: str, body: bytes) -> dict[str, str]:
        request = _json_object(body)
        level = request.get("compatibility", request.get("compatibilityLevel"))
        if not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS:
            raise RegistryError(422, 42203, "Invalid compatibility level. Valid values are none, backward, forward, "
                                            "full, backward_transitive, forward_transitive, and full_transitive")
        level = level.upper()
        self.store.change(lambda state: ([{"kind": CONFIG, "subject": subject, "compatibility": level}], None))
        return {"compatibility": level}


    def put_mode(self, body: bytes, **_) -> dict[str, str]:
        """The lake's registry is always READWRITE: setting that is a no-op, any other mode is refused."""
        mode = _json_object(body).get("mode")
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise RegistryError(422, 42204, f"Invalid mode. Valid values are {', '.join(MODES)}.")
        if mode.upper() != READWRITE:
            raise RegistryError(422, 42205, f"Operation not permitted: mode {mode.upper()} is not supported; the "
                                            "lake's registry is always READWRITE")
        return {"mode": READWRITE}


class _Raw:
    def __init__(self, text: str):
        self.text = text


def _row(v: Version, *, deleted: bool, purged: bool) -> dict[str, Any]:
    return {"kind": SCHEMA, "subject": v.subject, "version": v.version, "id": v.id, "schema_type": v.schema_type,
            "schema": v.schema, "references": v.references, "deleted": deleted, "purged": purged}


def _schema_body(v: Version) -> dict[str, Any]:
    body: dict[str, Any] = {"schema": v.schema}
    if v.schema_type != AVRO:
        body["schemaType"] = v.schema_type
    return body


def _version_body(v: Version) -> dict[str, Any]:
    body: dict[str, Any] = {"subject": v.subject, "version": v.version, "id": v.id}
    if v.schema_type != AVRO:
        body["schemaType"] = v.schema_type
    body["schema"] = v.schema
    return body


def _compatibility_body(messages: list[str], verbose: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"is_compatible": not messages}
    if verbose:
        body["messages"] = messages
    return body


def _level(state: State, subject: str) -> str:
    return state.configs.get(subject) or state.configs.get(GLOBAL) or DEFAULT_COMPATIBILITY


def _version_number(version: str) -> int:
    if version == "latest":
        return -1
    if not re.fullmatch(r"-?[0-9]{1,10}", version) or not (int(version) == -1 or 1 <= int(version) < 2**31):
        raise _invalid_version(version)
    return int(version)


def _check_subject(subject: str) -> None:
    if not subject.strip() or len(subject) > 255 or any(ord(c) < 32 for c in subject):
        raise RegistryError(422, 42208, f"Invalid subject {subject}")


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        request = json.loads(body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise RegistryError(400, 400, "Unrecognized request body: not JSON") from None
    if not isinstance(request, dict):
        raise RegistryError(400, 400, "Unrecognized request body: expected a JSON object")
    return request


def _request(body: bytes) -> tuple[ParsedSchema, str, str]:
    """The schema of a register, look-up or compatibility request: parsed, its type and its references."""
    request = _json_object(body)
    text = request.get("schema")
    if not isinstance(text, str) or not text:
        raise RegistryError(422, 42201, "Empty schema")
    if len(text) > MAX_SCHEMA_CHARS:
        raise RegistryError(422, 42209, f"Schema too large: {len(text)} characters, at most {MAX_SCHEMA_CHARS}")
    schema_type = str(request.get("schemaType") or AVRO).upper()
    if schema_type != AVRO:
        raise RegistryError(422, 42201, f"Invalid schema type {schema_type}: this registry keeps AVRO schemas only "
                                        "(JSON and PROTOBUF are not supported)")
    references = request.get("references") or []
    if references:
        raise RegistryError(422, 42201, "Invalid schema: schema references are not supported by this registry")
    try:
        parsed = ParsedSchema(text)
    except InvalidSchema as e:
        raise RegistryError(422, 42201, str(e)) from None
    return parsed, schema_type, "[]"
