"""Signal rows as the incremental snapshot reads them: parsed, refused with a clear message, applied."""

from __future__ import annotations

import pytest

from connectors.mysql import incremental as inc

TABLES = [("db", "a"), ("db", "b"), ("other", "c")]


def test_signals_parse_and_refuse_with_the_signal_named():
    assert inc.parse("1", "execute-snapshot", '{"data-collections": ["db.a"], "type": "INCREMENTAL"}') == \
        inc.Signal("1", "execute-snapshot", ("db.a",))
    assert inc.parse("w", "snapshot-window-open", "{}") is None
    assert "signal '2': unknown type 'explode'" in inc.parse("2", "explode", None)
    assert "data is not JSON" in inc.parse("3", "execute-snapshot", "{oops")
    assert "data-collections must be a non-empty list" in inc.parse("4", "execute-snapshot", '{"data-collections": []}')
    assert "'blocking' is not supported" in inc.parse("5", "execute-snapshot",
                                                        '{"data-collections": ["db.a"], "type": "blocking"}')
    assert inc.parse("6", "stop-snapshot", None) == inc.Signal("6", "stop-snapshot", None)


def test_signals_change_the_state_in_order():
    state, warnings = inc.apply(None, inc.Signal("1", inc.EXECUTE, ("db\\..*", "nope.x")), TABLES)
    assert [q["id"] for q in state["collections"]] == ["db.a", "db.b"]
    assert warnings == ["signal '1': data collection 'nope.x' is not a captured table (the connector's include "
                        "lists decide which are); nothing to snapshot for it"]
    state["current"] = {"id": state["collections"].pop(0)["id"], "last": [3], "max": [9]}
    paused, _ = inc.apply(state, inc.Signal("2", inc.PAUSE, None), TABLES)
    assert paused["paused"] is True and inc.apply(paused, inc.Signal("3", inc.RESUME, None), TABLES)[0]["paused"] is False
    stopped, _ = inc.apply(state, inc.Signal("4", inc.STOP, ("db.a",)), TABLES)
    assert stopped["current"] is None and [q["id"] for q in stopped["collections"]] == ["db.b"]
    assert inc.apply(stopped, inc.Signal("5", inc.STOP, ("db.b",)), TABLES)[0] is None
    assert inc.apply(state, inc.Signal("6", inc.STOP, None), TABLES)[0] is None


def _execute(sid: str, **data) -> inc.Signal | str:
    import json

    return inc.parse(sid, "execute-snapshot", json.dumps({"data-collections": ["db.a", "db.b"], **data}))


def test_additional_conditions_are_kept_per_table_in_the_state():
    signal = _execute("7", **{"additional-conditions": [{"data-collection": "DB.A", "filter": "color='blue' OR id < 3"},
                                                        {"data-collection": "db\\..*", "filter": "id > 100"}],
                              "surrogate-key": "k"})
    assert signal.conditions == (("DB.A", "color='blue' OR id < 3"), ("db\\..*", "id > 100"))
    state, warnings = inc.apply(None, signal, TABLES)
    assert warnings == []
    assert state["collections"] == [{"id": "db.a", "filter": "color='blue' OR id < 3", "surrogate_key": "k"},
                                    {"id": "db.b", "filter": "id > 100", "surrogate_key": "k"}]


def test_the_older_additional_condition_applies_to_every_table_and_wins_as_in_debezium_2():
    signal = _execute("8", **{"additional-condition": "color='red'",
                              "additional-conditions": [{"data-collection": "db.a", "filter": "id = 1"}]})
    state, _ = inc.apply(None, signal, TABLES)
    assert [q.get("filter") for q in state["collections"]] == ["color='red'", "color='red'"]
    blank = _execute("9", **{"additional-condition": " ", "additional-conditions": [{"data-collection": "db.a",
                                                                                     "filter": ""}]})
    assert inc.apply(None, blank, TABLES)[0]["collections"] == [{"id": "db.a"}, {"id": "db.b"}]


@pytest.mark.parametrize("text", ["id > 1; DROP TABLE t", "id > 1 -- rest", "id > 1 /* x */", "id > 1 # rest"])
def test_a_filter_that_could_leave_the_chunk_query_is_refused_naming_the_signal(text):
    message = _execute("evil-1", **{"additional-conditions": [{"data-collection": "db.a", "filter": text}]})
    assert isinstance(message, str) and message.startswith("signal 'evil-1' (execute-snapshot): the filter for "
                                                           "'db.a' contains"), message
    assert "without statement separators or comments (the row was ignored)" in message
    assert _execute("evil-2", **{"additional-condition": text}).startswith(
        "signal 'evil-2' (execute-snapshot): additional-condition contains")


def test_malformed_conditions_are_refused_with_the_expected_shape():
    assert "additional-conditions must be a list of" in _execute("10", **{"additional-conditions": "id > 1"})
    assert "additional-conditions must be a list of" in _execute("11", **{"additional-conditions": [{"filter": "x"}]})
    assert "is not a regular expression" in _execute("12", **{"additional-conditions": [
        {"data-collection": "db.(", "filter": "x = 1"}]})
    assert "surrogate-key must be a column name" in _execute("13", **{"surrogate-key": 3})
