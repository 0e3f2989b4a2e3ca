"""The lake's schema registry: global ids, per-subject versions, idempotent registration."""

from __future__ import annotations

import threading

import pytest
from deltalake import DeltaTable

from ingest.errors import DataError, StateError
from ingest.topics import SchemaRegistry

INT = '{"type": "int32", "optional": false}'
INT_REFORMATTED = '{"optional":false,"type":"int32"}'
STR = '{"type": "string", "optional": true}'


def test_register_is_idempotent_and_ids_are_global(tmp_path):
    reg = SchemaRegistry(str(tmp_path))
    assert reg.latest("orders-value") is None
    a = reg.register("orders-value", INT)
    assert a == 1
    assert reg.register("orders-value", INT) == a
    assert reg.register("orders-value", INT_REFORMATTED) == a  # same canonical JSON
    assert reg.register("customers-value", INT) == a  # same schema, same id, another subject
    b = reg.register("orders-value", STR)
    assert b == 2
    assert DeltaTable(str(tmp_path / "_schemas")).version() == 2  # 3 rows, one commit each
    fresh = SchemaRegistry(str(tmp_path))
    assert fresh.get(a) == INT and fresh.get(b) == STR
    latest = fresh.latest("orders-value")
    assert (latest.id, latest.version, latest.schema) == (2, 2, STR)
    assert [(s.id, s.version) for s in fresh.versions("orders-value")] == [(1, 1), (2, 2)]
    assert [(s.id, s.version) for s in fresh.versions("customers-value")] == [(1, 1)]


def test_unknown_id_and_bad_json(tmp_path):
    reg = SchemaRegistry(str(tmp_path))
    with pytest.raises(StateError, match="no schema with id 4"):
        reg.get(4)
    with pytest.raises(DataError, match="not valid JSON"):
        reg.register("s", "{nope")


def test_concurrent_registration(tmp_path):
    ids, errors = [], []

    def register(schema):
        try:
            ids.append((schema, SchemaRegistry(str(tmp_path)).register("s", schema)))
        except Exception as e:  # collected and asserted on below
            errors.append(e)

    schemas = [f'{{"type": "struct", "n": {i % 3}}}' for i in range(9)]
    threads = [threading.Thread(target=register, args=(s,)) for s in schemas]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    by_schema = {}
    for schema, i in ids:
        by_schema.setdefault(schema, set()).add(i)
    assert all(len(v) == 1 for v in by_schema.values())
    assert sorted(next(iter(v)) for v in by_schema.values()) == [1, 2, 3]


def test_register_many_is_one_commit_with_the_ids_one_at_a_time_would_give(tmp_path):
    one, many = tmp_path / "one", tmp_path / "many"
    pairs = [("a-value", INT), ("b-value", STR), ("a-value", INT_REFORMATTED), ("c-value", INT), ("a-value", STR),
             ("b-value", STR)]
    by_one = [SchemaRegistry(str(one)).register(s, j) for s, j in pairs]
    reg = SchemaRegistry(str(many))
    assert reg.register_many(pairs) == by_one == [1, 2, 1, 1, 2, 2]
    assert DeltaTable(str(many / "_schemas")).version() == 0  # four new rows, one commit
    assert reg.register_many(pairs) == by_one  # known: nothing more written
    assert SchemaRegistry(str(many)).register_many(pairs + [("d-value", STR)]) == by_one + [2]
    assert DeltaTable(str(many / "_schemas")).version() == 1
    fresh = SchemaRegistry(str(many))
    assert [(s.id, s.version) for s in fresh.versions("a-value")] == [(1, 1), (2, 2)]
    assert [(s.id, s.version) for s in fresh.versions("d-value")] == [(2, 1)]


def test_a_later_registry_of_the_same_lake_answers_known_schemas_without_reading_the_table(tmp_path, monkeypatch):
    first = SchemaRegistry(str(tmp_path))
    a, b = first.register_many([("orders-value", INT), ("orders-key", STR)])
    later = SchemaRegistry(str(tmp_path))  # a connector's next batch makes its own

    def unread(self):
        raise AssertionError("the registry table was read again")

    with monkeypatch.context() as m:
        m.setattr(SchemaRegistry, "_rows", unread)
        assert later.register_many([("orders-value", INT_REFORMATTED), ("orders-key", STR)]) == [a, b]
        assert later.get(b) == STR
    assert later.register("orders-value", STR) == b  # a new pair reads it, as before


def test_a_registry_deleted_and_made_again_is_another_registry(tmp_path):
    import shutil

    assert SchemaRegistry(str(tmp_path)).register_many([("x-value", INT), ("y-value", STR)]) == [1, 2]
    shutil.rmtree(tmp_path / "_schemas")
    again = SchemaRegistry(str(tmp_path))
    assert again.register("y-value", STR) == 1  # first in the new registry: not id 2 remembered from the old one
    assert SchemaRegistry(str(tmp_path)).register_many([("y-value", STR), ("x-value", INT)]) == [1, 2]
    assert SchemaRegistry(str(tmp_path)).get(2) == INT
