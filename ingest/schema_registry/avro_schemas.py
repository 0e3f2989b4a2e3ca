"""Avro schemas as Confluent's Schema Registry keeps them: parsed and checked as Avro's Java `Schema.Parser`
checks them, stored in the text Avro's `Schema.toString()` prints (the registry's canonical form, which
decides when two registrations are the same schema), and compared under a compatibility level with
Avro's `SchemaCompatibility` rules, the messages worded as the registry words them.

Parsing and the reader/writer rules are Apache Avro's own Python port (`avro.schema`,
`avro.compatibility`); the printer follows Java's `Schema.toJson`: reserved attributes in Java's order,
other properties in the order given, a named type written in full once and then by name, relative to the
enclosing namespace.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from ingest.records.schema import dumps

AVRO = "AVRO"
COMPATIBILITY_LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
                        "FULL_TRANSITIVE")
DEFAULT_COMPATIBILITY = "BACKWARD"
_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_RECORD_KEYS = ("type", "name", "namespace", "doc", "fields", "aliases")
_FIELD_KEYS = ("name", "type", "doc", "default", "order", "aliases")
_ENUM_KEYS = ("type", "name", "namespace", "doc", "symbols", "default", "aliases")
_FIXED_KEYS = ("type", "name", "namespace", "doc", "size", "aliases")
_MAX_SCHEMA_IN_MESSAGE = 10 * 1024


class InvalidSchema(ValueError):
    """The text is not an Avro schema (the registry's 42201)."""


class ParsedSchema:
    """One Avro schema: its canonical text (Java's `Schema.toString()`) and Avro's parsed form."""

    def __init__(self, text: str):
        try:
            tree = json.loads(text)
        except (ValueError, TypeError) as e:
            raise InvalidSchema(f"Invalid schema: not JSON ({e})") from None
        except RecursionError:
            raise InvalidSchema("Invalid schema: nested too deeply") from None
        try:
            import avro.schema

            with warnings.catch_warnings():  # an unknown logicalType is kept as a property, as Java keeps it
                warnings.simplefilter("ignore")
                self.avro = avro.schema.parse(json.dumps(tree))
            self.canonical = dumps(_Printer().node(tree, None))
        except InvalidSchema:
            raise
        except RecursionError:
            raise InvalidSchema("Invalid schema: nested too deeply") from None
        except Exception as e:  # noqa: BLE001 - avro raises several kinds; all mean an invalid schema
            raise InvalidSchema(f"Invalid schema: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParsedSchema) and other.canonical == self.canonical

    def __hash__(self) -> int:
        return hash(self.canonical)

    def __str__(self) -> str:
        return self.canonical


def canonical(text: str) -> str:
    """The text the registry stores and returns for `text` (InvalidSchema when it is no Avro schema)."""
    return ParsedSchema(text).canonical


class _Printer:
    """Java's Schema.toJson over the JSON tree: each named type in full the first time, then by name."""

    def __init__(self):
        self.defined: set[str] = set()

    def node(self, node: Any, space: str | None) -> Any:
        if isinstance(node, list):
            return [self.node(b, space) for b in node]
        if isinstance(node, str):
            return node if node in _PRIMITIVES else _relative(_full_name(node, space), space)
        if not isinstance(node, dict):
            raise InvalidSchema(f"Invalid schema: {node!r} is no schema")
        kind = node.get("type")
        if isinstance(kind, (dict, list)):
            return self.node(kind, space)  # {"type": {...}}: the inner schema, as Java reads it
        props = _props(node, ("type",))
        if kind in _PRIMITIVES:
            return {"type": kind, **props} if props else kind
        if kind == "array":
            return {"type": "array", "items": self.node(node.get("items"), space), **_props(node, ("type", "items"))}
        if kind == "map":
            return {"type": "map", "values": self.node(node.get("values"), space), **_props(node, ("type", "values"))}
        if kind in ("record", "error", "enum", "fixed"):
            return self.named(node, kind, space)
        if isinstance(kind, str):
            return _relative(_full_name(kind, space), space)
        raise InvalidSchema(f"Invalid schema: no type in {dumps(node)[:200]}")

    def named(self, node: dict[str, Any], kind: str, space: str | None) -> Any:
        full = _full_name(str(node.get("name")), node.get("namespace") if "namespace" in node else space)
        own = full.rpartition(".")[0] or None
        if full in self.defined:
            return _relative(full, space)
        self.defined.add(full)
        out: dict[str, Any] = {"type": kind, "name": full.rpartition(".")[2]}
        if own is not None and own != space:
            out["namespace"] = own
        elif own is None and space is not None:
            out["namespace"] = ""
        if node.get("doc") is not None:
            out["doc"] = node["doc"]
        if kind in ("record", "error"):
            out["fields"] = [self.field(f, own) for f in node.get("fields") or []]
            reserved = _RECORD_KEYS
        elif kind == "enum":
            out["symbols"] = node.get("symbols")
            if "default" in node:
                out["default"] = node["default"]
            reserved = _ENUM_KEYS
        else:
            out["size"] = node.get("size")
            reserved = _FIXED_KEYS
        out.update(_props(node, reserved))
        if node.get("aliases"):
            out["aliases"] = [_relative(_full_name(a, own), own) for a in node["aliases"]]
        return out

    def field(self, f: dict[str, Any], space: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": f.get("name"), "type": self.node(f.get("type"), space)}
        if f.get("doc") is not None:
            out["doc"] = f["doc"]
        if "default" in f:
            out["default"] = f["default"]
        if f.get("order") not in (None, "ascending"):
            out["order"] = f["order"]
        out.update(_props(f, _FIELD_KEYS))
        if f.get("aliases"):
            out["aliases"] = list(f["aliases"])
        return out


def _props(node: dict[str, Any], reserved: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in reserved}


def _full_name(name: str, space: str | None) -> str:
    if "." in name:
        return name
    return f"{space}.{name}" if space else name


def _relative(full: str, space: str | None) -> str:
    own, _, simple = full.rpartition(".")
    return simple if (own or None) == space or not own and space is None else full


# --- compatibility ---------------------------------------------------------------------------------

_DESCRIPTIONS = {
    "FIXED_SIZE_MISMATCH": "The size of FIXED type field at path '{path}' in the %s schema does not match with the "
                           "%s schema",
    "TYPE_MISMATCH": "The type (path '{path}') of a field in the %s schema does not match with the %s schema",
    "NAME_MISMATCH": "The name of the schema has changed (path '{path}')",
    "MISSING_ENUM_SYMBOLS": "The %s schema is missing enum symbols '{message}' at path '{path}' in the %s schema",
    "MISSING_UNION_BRANCH": "The %s schema is missing a type inside a union field at path '{path}' in the %s "
                            "schema",
    "READER_FIELD_MISSING_DEFAULT_VALUE": "The field '{message}' at path '{path}' in the %s schema has no default "
                                          "value and is missing in the %s schema",
}


def _differences(reader: ParsedSchema, writer: ParsedSchema, reader_role: str, writer_role: str) -> list[str]:
    """Avro's reader/writer check, each incompatibility as Confluent's `Difference` prints it."""
    from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

    result = ReaderWriterCompatibilityChecker().get_compatibility(reader.avro, writer.avro)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    out = []
    for kind, message, location in zip(result.incompatibilities, result.messages, result.locations):
        name = kind.name.upper()
        message = _java_message(name, str(message))
        path = location if isinstance(location, str) else "/" + "/".join(location)
        template = _DESCRIPTIONS.get(name, "")
        description = template.replace("{path}", path).replace("{message}", str(message))
        description = description.replace("%s", reader_role, 1).replace("%s", writer_role, 1)
        out.append(f"{{errorType:'{name}', description:'{description}', additionalInfo:'{message}'}}")
    return out


def _java_message(kind: str, message: str) -> str:
    """The Python port's message in the words of Java's SchemaCompatibility (type names upper-case, a set
    of enum symbols as Java's TreeSet prints it)."""
    if kind == "TYPE_MISMATCH":
        m = re.fullmatch(r"reader type: (\w+) not compatible with writer type: (\w+)", message)
        if m:
            return f"reader type: {m[1].upper()} not compatible with writer type: {m[2].upper()}"
    if kind == "MISSING_UNION_BRANCH":
        m = re.fullmatch(r"reader union lacking writer type:? (\w+)", message)
        if m:
            return f"reader union lacking writer type: {m[1].upper()}"
    if kind == "MISSING_ENUM_SYMBOLS" and message.startswith("{"):
        try:
            return "[" + ", ".join(sorted(ast.literal_eval(message))) + "]"
        except (ValueError, SyntaxError):
            return message
    return message


def _with_old(messages: list[str], old: ParsedSchema, version: int | None) -> list[str]:
    if messages:
        if version is not None:
            messages.append(f"{{oldSchemaVersion: {version}}}")
        text = old.canonical
        messages.append(f"{{oldSchema: '{text}'}}" if len(text) <= _MAX_SCHEMA_IN_MESSAGE
                        else f"{{oldSchema: <truncated> '{text[:_MAX_SCHEMA_IN_MESSAGE]}...'}}")
    return messages


def incompatibilities(level: str, new: ParsedSchema, previous: list[tuple[ParsedSchema, int]]) -> list[str]:
    """Why `new` may not follow `previous` (oldest first, with their versions) at `level`; [] when it may.

    BACKWARD: the new schema reads data written with the latest; FORWARD: the latest reads the new one's;
    FULL: both; the _TRANSITIVE levels check every earlier version, newest first, and stop at the first
    that fails, as the registry's validator does."""
    if level == "NONE" or not previous:
        return []
    candidates = list(reversed(previous)) if level.endswith("_TRANSITIVE") else [previous[-1]]
    base = level.removesuffix("_TRANSITIVE")
    for old, version in candidates:
        if base == "BACKWARD":
            messages = _with_old(_differences(new, old, "new", "old"), old, version)
        elif base == "FORWARD":
            messages = _with_old(_differences(old, new, "old", "new"), old, version)
        else:
            messages = _differences(old, new, "old", "new") + _with_old(_differences(new, old, "new", "old"),
                                                                          old, version)
        if messages:
            return messages + [f"{{validateFields: 'false', compatibility: '{level}'}}"]
    return []
