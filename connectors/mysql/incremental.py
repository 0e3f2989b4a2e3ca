"""Ad-hoc incremental snapshots (Debezium's signalling table), batch by batch.

Signals are rows inserted into `signal.data.collection` (id, type, data). A batch's read finds the
signal inserts in its binlog range and records them in a small Delta table, keyed by the batch's end
position; the next batch's plan applies them to the snapshot state kept in the offset
(`incremental_snapshot`): `execute-snapshot` queues tables, `stop-snapshot` drops them (all when no
`data-collections`), `pause-snapshot`/`resume-snapshot` hold and release the chunks. An
`execute-snapshot` may narrow a table's rows with a filter (Debezium 2.2+'s `additional-conditions`, or
2.0/2.1's single `additional-condition` for every table of the signal) and chunk by another column
(`surrogate-key`); both are kept with the table in the snapshot state, so a resumed snapshot uses them.

While a table is being snapshotted, each plan reads the next chunks of its primary key (up to the key's
maximum when the table's snapshot began), in parallel Spark tasks, between two watermark rows it writes
to the signalling table (`snapshot-window-open` / `snapshot-window-close`), then takes the binlog end.
The batch's binlog range holds every change made while the chunks were read; a chunk row whose key any
event of the batch touched is dropped (the event carries the newer row), the rest are emitted as `r`
events after the batch's binlog events (source.snapshot = incremental). So chunks and concurrent changes
never contradict, whatever order the chunks were read in.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

EXECUTE = "execute-snapshot"
STOP = "stop-snapshot"
PAUSE = "pause-snapshot"
RESUME = "resume-snapshot"
WINDOW_OPEN = "snapshot-window-open"
WINDOW_CLOSE = "snapshot-window-close"
KNOWN = (EXECUTE, STOP, PAUSE, RESUME)
STATE = "incremental_snapshot"
SIGNALS_READ = "lakeconnect.signals.applied"
"""In an offset: the batch end (file:pos) whose signals the batch applied; a batch that ends at the same
position (it only committed a new state) must not apply them again."""


ADDITIONAL_CONDITIONS = "additional-conditions"
ADDITIONAL_CONDITION = "additional-condition"
SURROGATE_KEY = "surrogate-key"
# A filter is SQL run as written inside the chunk queries' WHERE clause; these would let it end the
# statement or hide the rest of the query, so a filter holding one is refused (the docs say why).
FILTER_FORBIDDEN = (";", "--", "/*", "#")


@dataclass(frozen=True)
class Signal:
    id: str
    type: str
    collections: tuple[str, ...] | None  # None: all (stop-snapshot without data-collections)
    conditions: tuple[tuple[str, str], ...] = ()
    """execute-snapshot: (data-collection regular expression, filter), the first matching a table wins."""
    surrogate_key: str | None = None
    """execute-snapshot: the column chunks are read by instead of the primary key."""


def parse(signal_id: Any, kind: Any, data: Any) -> Signal | str | None:
    """A signal row as a Signal; a message (str) saying what is wrong with it; None for rows that are not
    signals to act on (watermarks, other kinds Debezium knows but batches need not: log)."""
    sid = str(signal_id)
    kind = str(kind or "").strip().lower()
    if kind in (WINDOW_OPEN, WINDOW_CLOSE, "log"):
        return None
    if kind not in KNOWN:
        return (f"signal '{sid}': unknown type '{kind}'; expected one of {', '.join(KNOWN)} (the row was "
                "ignored)")
    if kind in (PAUSE, RESUME):
        return Signal(sid, kind, None)
    try:
        body = json.loads(data) if data not in (None, "") else {}
    except ValueError as e:
        return (f"signal '{sid}' ({kind}): data is not JSON ({e}); expected "
                '{"data-collections": ["<db>.<table>", ...], "type": "incremental"} (the row was ignored)')
    if not isinstance(body, dict):
        return f"signal '{sid}' ({kind}): data must be a JSON object with data-collections (the row was ignored)"
    collections = body.get("data-collections")
    if collections is None and kind == STOP:
        return Signal(sid, kind, None)
    if not isinstance(collections, list) or not collections or not all(isinstance(c, str) for c in collections):
        return (f"signal '{sid}' ({kind}): data-collections must be a non-empty list of '<db>.<table>' names, "
                f"got {json.dumps(collections)} (the row was ignored)")
    snapshot_type = str(body.get("type", "incremental")).lower()
    if kind == EXECUTE and snapshot_type != "incremental":
        return (f"signal '{sid}': snapshot type '{snapshot_type}' is not supported; use \"type\": \"incremental\" "
                "(the row was ignored)")
    if kind != EXECUTE:
        return Signal(sid, kind, tuple(collections))
    conditions = _conditions(sid, body)
    if isinstance(conditions, str):
        return conditions
    surrogate = body.get(SURROGATE_KEY)
    if surrogate is not None and not isinstance(surrogate, str):
        return (f"signal '{sid}' ({kind}): {SURROGATE_KEY} must be a column name, got {json.dumps(surrogate)} "
                "(the row was ignored)")
    return Signal(sid, kind, tuple(collections), conditions, (surrogate or "").strip() or None)


def _conditions(sid: str, body: dict) -> tuple[tuple[str, str], ...] | str:
    """An execute-snapshot's filters as (data-collection pattern, filter), or what is wrong with them. As
    Debezium 2.2 to 2.7: a non-blank `additional-condition` applies to every table and wins over
    `additional-conditions`; a blank filter is no filter."""
    old = body.get(ADDITIONAL_CONDITION)
    if old is not None and not isinstance(old, str):
        return (f"signal '{sid}' ({EXECUTE}): {ADDITIONAL_CONDITION} must be a string (a SQL condition), got "
                f"{json.dumps(old)} (the row was ignored)")
    if old and old.strip():
        pairs = [(".*", old)]
    else:
        listed = body.get(ADDITIONAL_CONDITIONS) or []
        shape = (f"signal '{sid}' ({EXECUTE}): {ADDITIONAL_CONDITIONS} must be a list of "
                 '{"data-collection": "<db>.<table>", "filter": "<SQL condition>"}')
        if not isinstance(listed, list) or not all(
                isinstance(c, dict) and isinstance(c.get("data-collection"), str)
                and isinstance(c.get("filter"), (str, type(None))) for c in listed):
            return f"{shape}, got {json.dumps(listed)} (the row was ignored)"
        pairs = [(c["data-collection"].strip(), c.get("filter") or "") for c in listed]
    for pattern, text in pairs:
        try:
            re.compile(pattern)
        except re.error as e:
            return (f"signal '{sid}' ({EXECUTE}): data-collection '{pattern}' of {ADDITIONAL_CONDITIONS} is not a "
                    f"regular expression ({e}) (the row was ignored)")
        bad = [t for t in FILTER_FORBIDDEN if t in text]
        if bad:
            which = ADDITIONAL_CONDITION if old and old.strip() else f"the filter for '{pattern}'"
            return (f"signal '{sid}' ({EXECUTE}): {which} contains {' and '.join(map(repr, bad))}; a filter is "
                    "one SQL condition, without statement separators or comments (the row was ignored)")
    return tuple((p, t.strip()) for p, t in pairs if t.strip()) if any(t.strip() for _, t in pairs) else ()


def condition_for(signal: Signal, name: str) -> str | None:
    """The filter of `signal` for the table `name` (<db>.<table>): the first whose data-collection matches
    the whole name, ignoring case, as Debezium."""
    for pattern, text in signal.conditions:
        if re.fullmatch(pattern, name, re.IGNORECASE):
            return text
    return None


def matches(collection: str, db: str, table: str) -> bool:
    """A data-collection name (a regular expression, as Debezium allows) against a table."""
    try:
        return re.fullmatch(collection, f"{db}.{table}", re.IGNORECASE) is not None
    except re.error:
        return collection.lower() == f"{db}.{table}".lower()


def apply(state: dict | None, signal: Signal, tables: list[tuple[str, str]]) -> tuple[dict | None, list[str]]:
    """The snapshot state after `signal`; `tables` are the captured tables. Returns (state, warnings)."""
    state = json.loads(json.dumps(state)) if state else {"collections": [], "current": None, "paused": False}
    warnings = []
    if signal.type == PAUSE:
        state["paused"] = True
    elif signal.type == RESUME:
        state["paused"] = False
    elif signal.type == EXECUTE:
        for c in signal.collections or ():
            found = [f"{db}.{t}" for db, t in tables if matches(c, db, t)]
            if not found:
                warnings.append(f"signal '{signal.id}': data collection '{c}' is not a captured table (the "
                                "connector's include lists decide which are); nothing to snapshot for it")
            for name in found:
                queued = [q["id"] for q in state["collections"]]
                if name not in queued:
                    entry = {"id": name}
                    condition = condition_for(signal, name)
                    if condition:
                        entry["filter"] = condition
                    if signal.surrogate_key:
                        entry["surrogate_key"] = signal.surrogate_key
                    state["collections"].append(entry)
    elif signal.type == STOP:
        if signal.collections is None:
            state["collections"], state["current"] = [], None
        else:
            keep = []
            for q in state["collections"]:
                db, _, t = q["id"].partition(".")
                if not any(matches(c, db, t) for c in signal.collections):
                    keep.append(q)
            current = state.get("current")
            if current:
                db, _, t = current["id"].partition(".")
                if any(matches(c, db, t) for c in signal.collections):
                    state["current"] = None
            state["collections"] = keep
    if not state["collections"] and not state["current"]:
        return None, warnings
    return state, warnings
