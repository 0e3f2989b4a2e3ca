"""Every installed connector has a crash test built on the crash kit (tests/crash_kit.py): a batch killed
after each step in turn, run again, compared with a run that never crashed. A connector without one fails
here: add its crash test, then its entry below.

The crash tests run in their connectors' suites (they need their databases and stores); this suite checks
they exist and go through the kit, which owns the kills and their checks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ingest.registry import PluginKind, default_registry

ROOT = Path(__file__).resolve().parents[2]
KIT = ("kill_at_each_step", "check_exactly_once", "check_crash_at_every_step")
"""The kit's entry points, and the JDBC source's harness over it (tests/jdbc/_books.py)."""

CRASH_TESTS = {
    "FileStreamSource": ["tests/runtime/test_exactly_once.py::test_source_killed_after_each_step_of_a_batch"],
    "FileStreamSink": ["tests/runtime/test_exactly_once.py::test_sink_killed_after_each_step_of_a_batch"],
    "JdbcSource": ["tests/jdbc/test_source_sqlite.py::test_crash_at_every_step_of_a_batch",
                   "tests/jdbc/test_source_crash_services.py::test_crash_at_every_step_of_a_batch"],
    "MySqlCdc": ["tests/mysql/test_exactly_once.py::test_killed_at_every_step_of_a_snapshot_and_a_binlog_batch"],
    "S3Sink": ["tests/s3/test_exactly_once.py::test_local_store_killed_after_each_step",
               "tests/kafka/test_sink_exactly_once.py::test_sink_on_kafka_killed_at_each_step"],
    "DeltaTableSink": ["tests/delta_sink/test_exactly_once.py::test_killed_after_each_step_then_run_again"],
}
WORKER_CRASH_TESTS = {
    "FileStreamSource": ["tests/runtime/test_exactly_once.py::"
                         "test_source_in_a_long_running_worker_killed_after_each_step_of_a_batch"],
    "FileStreamSink": ["tests/runtime/test_exactly_once.py::"
                       "test_sink_in_a_long_running_worker_killed_after_each_step_of_a_batch"],
    "JdbcSource": ["tests/jdbc/test_source_sqlite.py::test_crash_of_a_long_running_worker_at_every_step_of_a_batch"],
    "MySqlCdc": ["tests/mysql/test_exactly_once.py::test_a_long_running_worker_killed_at_every_step_of_a_binlog_batch"],
    "S3Sink": ["tests/s3/test_exactly_once.py::test_local_store_in_a_long_running_worker_killed_after_each_step"],
    "DeltaTableSink": ["tests/delta_sink/test_exactly_once.py::"
                       "test_a_long_running_worker_killed_after_each_step_then_run_again"],
}
"""The same kills of a long-running worker's process (`through_worker=True`)."""
CONNECTORS = sorted(info.name for kind in (PluginKind.SOURCE, PluginKind.SINK)
                    for info in default_registry().plugins(kind))


def kit_calls(node_id: str, *, through_worker: bool = False) -> set[str]:
    """The kit's entry points the test `path::function` calls (directly, or through a function of its own
    module it calls); with `through_worker`, only calls that pass `through_worker=True`."""
    path, _, name = node_id.partition("::")
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    functions = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
    assert name in functions, f"{node_id}: no such test"

    def called(function: ast.FunctionDef) -> set[str]:
        return {n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(function)
                if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
                and (not through_worker or any(k.arg == "through_worker" and isinstance(k.value, ast.Constant)
                                               and k.value.value is True for k in n.keywords))}

    direct = called(functions[name])
    through = set().union(*(called(functions[c]) for c in direct if c in functions))
    if through_worker:  # the test itself asks the kit for the worker's kills
        return direct & set(KIT)
    return (direct | through) & set(KIT)


@pytest.mark.parametrize("connector", CONNECTORS)
def test_every_connector_has_a_crash_test_on_the_kit(connector):
    assert connector in CRASH_TESTS, f"connector {connector} has no crash test (tests/crash_kit.py)"
    for node_id in CRASH_TESTS[connector]:
        assert kit_calls(node_id), f"{node_id} does not kill its batches through tests/crash_kit.py"


@pytest.mark.parametrize("connector", CONNECTORS)
def test_every_connector_has_a_crash_test_that_kills_a_long_running_worker(connector):
    assert connector in WORKER_CRASH_TESTS, f"connector {connector} has no crash test of a long-running worker"
    for node_id in WORKER_CRASH_TESTS[connector]:
        assert kit_calls(node_id, through_worker=True), \
            f"{node_id} does not kill a worker through tests/crash_kit.py (through_worker=True)"


def test_the_check_sees_a_test_that_kills_on_its_own(tmp_path, monkeypatch):
    (tmp_path / "t.py").write_text("def helper():\n    check_exactly_once(s, p)\n\n"
                                   "def test_kit():\n    helper()\n\n"
                                   "def test_own():\n    cli('run', 'x', env={'LAKECONNECT_CRASH_AT': 'write'})\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    assert kit_calls("t.py::test_kit") == {"check_exactly_once"}
    assert kit_calls("t.py::test_own") == set()
