"""Record-by-record comparison of Kafka's answer to a case with lakeconnect's."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.oracle.deviations import ignored_aspects

ASPECTS = ("topic", "partition", "timestamp", "key", "value", "headers")


def differences(case: dict[str, Any], kafka: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """What differs, one line each (empty: the same). An error on one side must be an error on the other;
    the messages may differ. A query that fails as a whole (lakeconnect stops the batch at a bad record)
    matches a case in which Kafka failed at least one record."""
    ignored = ignored_aspects(case["id"])
    if "error" in kafka or "error" in ours:
        if "error" in kafka and "error" in ours:
            return []
        if "error" in ours:
            if any("error" in r for r in kafka["records"]) or "error" in ignored:
                return []
            return [f"lakeconnect failed ({ours['error']['message'][:300]}) where Kafka did not: "
                    f"{[_show(r) for r in kafka['records']]}"]
        if all("error" in r for r in ours["records"]) or "error" in ignored:
            return []
        return [f"Kafka failed ({kafka['error']['class']}: {kafka['error']['message']}) where lakeconnect did not: "
                f"{[_show(r) for r in ours['records']]}"]
    out = []
    for i, (k, o) in enumerate(zip(kafka["records"], ours["records"], strict=True)):
        if "null-value" in ignored and "error" in k and _NULL_REQUIRED in k["error"]["message"] and (
                o.get("key", "") is None or o.get("value", "") is None):
            continue  # Kafka's JsonConverter refuses a null with a required schema; lakeconnect writes a tombstone
        if "error" in k or "error" in o:
            if ("error" in k) != ("error" in o) and "error" not in ignored:
                out.append(f"record {i}: Kafka {_show(k)} / lakeconnect {_show(o)}")
            continue
        if k.get("dropped") or o.get("dropped"):
            if bool(k.get("dropped")) != bool(o.get("dropped")):
                out.append(f"record {i}: Kafka {_show(k)} / lakeconnect {_show(o)}")
            continue
        for aspect in ASPECTS:
            if aspect in ignored or k.get(aspect) == o.get(aspect):  # "read" answers have no topic, partition...
                continue
            if "json" in ignored and _json(k[aspect]) is not None and _json(k[aspect]) == _json(o[aspect]):
                continue
            if "null-value" in ignored and aspect in ("key", "value") and o[aspect] is None and (
                    _is_null_json(k[aspect]) or case["records"][i].get(aspect) is None):
                continue
            out.append(f"record {i} {aspect}: Kafka {_text(k[aspect])} / lakeconnect {_text(o[aspect])}")
    return out


_NULL_REQUIRED = "null value for field that is required"
_MISSING = object()


def _json(v: Any) -> Any:
    """Bytes (base64) or headers as parsed JSON, to compare regardless of object key order; None if not JSON."""
    try:
        if isinstance(v, list):
            return [[h[0], _json(h[1])] for h in v]
        return json.loads(base64.b64decode(v)) if isinstance(v, str) else None
    except ValueError:
        return base64.b64decode(v).decode("utf-8", "replace")


def _is_null_json(v: Any) -> bool:
    """Kafka's JsonConverter bytes of a null: `null`, or an envelope whose payload is null."""
    parsed = _json(v) if isinstance(v, str) else _MISSING
    return parsed is None or (isinstance(parsed, dict) and set(parsed) == {"schema", "payload"}
                              and parsed["payload"] is None)


def _show(record: dict[str, Any]) -> str:
    if "error" in record:
        return f"error {record['error']['class']}: {record['error']['message'][:200]}"
    if record.get("dropped"):
        return "dropped"
    return ", ".join(f"{a}={_text(record[a])}" for a in ASPECTS if a in record)


def _text(v: Any) -> str:
    """Base64 bytes shown as the text they are (converters write UTF-8 mostly), else as they are."""
    if isinstance(v, str):
        try:
            return repr(base64.b64decode(v, validate=True).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return repr(v)
    if isinstance(v, list):  # headers: [key, bytes], or [key, schema, text] read back
        return "[" + ", ".join(f"{h[0]}:{_text(h[-1])}" + (f" ({h[1]})" if len(h) == 3 else "") for h in v) + "]"
    return repr(v)
