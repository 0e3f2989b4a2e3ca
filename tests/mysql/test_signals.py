"""Signal rows as the incremental snapshot reads them: parsed, refused with a clear message, applied."""

from __future__ import annotations

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
