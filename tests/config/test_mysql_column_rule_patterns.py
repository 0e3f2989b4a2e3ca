"""The CDC source's column rules (column.truncate/mask/hash keys) compile their own values as regular
expressions and nothing else: a password or statement holding regex syntax is just a value, and a rule
whose pattern is not one is a problem naming the key, never an exception."""

from __future__ import annotations

from connectors.mysql import config as C

BASE = {"database.hostname": "h", "database.user": "u", "database.server.id": "1", "topic.prefix": "p"}


def _problems(**raw):
    return [(p.key, p.message) for p in C.check(C.mysql_config_def().parse({**BASE, **raw}))]


def test_other_keys_values_are_not_patterns():
    assert _problems(**{"database.password": "a[b(c", "heartbeat.action.query": ""}) == []


def test_a_rule_whose_pattern_is_not_one_names_its_key():
    found = _problems(**{"column.mask.with.3.chars": "db.t.(unclosed"})
    assert len(found) == 1 and found[0][0] == "column.mask.with.3.chars", found
    assert "one here is not: missing ), unterminated subpattern" in found[0][1], found
