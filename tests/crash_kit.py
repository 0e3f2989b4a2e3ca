"""The exactly-once crash kit every connector's crash test uses.

A crash test kills a connector's batch after each step in turn — every kill a real CLI process ended with
os._exit at the named step (`LAKECONNECT_CRASH_AT`, ingest/runtime/faults.py), as `kill -9` would — each
run resuming the batch the one before left and killed one step further on, then runs it to its end, and
compares what is left with a run that never crashed. One chain instead of a test per step: the same kills
for about half the runs.

- `kill_at_each_step`: the chain of kills, with the checks every crash test makes of each killed run.
- `Scenario` and `check_exactly_once`: a connector's crash test as data (how to make a lake with the batch
  under test ready, the steps to kill it at, what must come out the same) and the comparison itself.

tests/contract/test_exactly_once.py checks that every installed connector has a crash test built on this kit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.runtime.faults import CRASH_ENV, CRASH_EXIT
from tests.conftest import cli, run_here


def kill_at_each_step(worker: Path, name: str, steps: Sequence[str], env: Mapping[str, str] | None = None, *,
                      batch: int | None = None, between: Callable[[], Any] | None = None,
                      after_each: Callable[[str], Any] | None = None, through_worker: bool = False) -> dict[str, str]:
    """Kill connector `name` after each of `steps` in turn: the first run is killed after steps[0], and each
    run after it resumes the batch the one before left and is killed one step further on. A step the resumed
    run does not reach fails here, naming it. Each run's stderr, by the step it was killed after.

    `batch`: the id of the batch killed; its runs after the first must say they resume it (and the first must
    not). `between` runs once, after the first kill: a change made then belongs to a later batch.
    `after_each(step)` runs after every kill. The caller makes the last run and compares.

    `through_worker`: what is killed is a long-running worker (`lakeconnect worker`) in the middle of the run
    a `lakeconnect run` sent it; that command must exit 75 saying the worker stopped during the run."""
    seen = {}
    for i, step in enumerate(steps):
        if through_worker:
            code, stderr = _kill_worker(worker, name, step, env)
        else:
            r = cli("run", name, worker=worker, env={**(env or {}), CRASH_ENV: step})
            code, stderr = r.returncode, r.stderr
        assert code == CRASH_EXIT, f"the kill after step '{step}' did not happen: exit {code}\n{stderr}"
        # the driver's own step names itself; a step inside a Spark task kills the driver through it
        assert f"killed after step '{step.partition(':')[0]}'" in stderr or "killed by a task" in stderr, stderr
        if batch is not None:
            resumed = f"resuming batch {batch}, planned by an interrupted run" in stderr
            assert resumed == (i > 0), f"after the kill at '{step}': resumed={resumed}\n{stderr}"
        if i == 0 and between is not None:
            between()
        if after_each is not None:
            after_each(step)
        seen[step] = stderr
    return seen


def _kill_worker(worker: Path, name: str, step: str, env: Mapping[str, str] | None) -> tuple[int, str]:
    """A worker killed at `step` of the run a delegating `lakeconnect run` asked of it: the worker's exit code
    and log (its stderr)."""
    from tests.worker.conftest import WorkerProcess

    process = WorkerProcess(worker, env={**(env or {}), CRASH_ENV: step})
    try:
        r = process.run("run", name)
        code = process.wait()
    finally:
        process.close()
    log = process.log()
    assert r.returncode == 75 and "stopped answering during the run" in r.stderr, \
        f"the delegating run after the worker's kill at '{step}': exit {r.returncode}\n{r.stderr}\n{log}"
    return code, log


@dataclass(frozen=True)
class Scenario:
    """A connector's crash test."""

    connector: str
    """The connector's name in the lake."""
    prepare: Callable[[Path], Path]
    """A fresh lake under the directory given, holding the connector with the batch under test ready to run
    (the batches before it run, its input in place); the worker file."""
    state: Callable[[Path], Any]
    """What the lake of a worker file holds that must be the same after the crashes: records, offsets, objects."""
    steps: Sequence[str]
    """Where to kill the batch, in the order a batch reaches them."""
    env: Mapping[str, str] = field(default_factory=dict)
    """For the killed runs (settings Spark's Python workers need)."""
    finish: Callable[[Path, str], Any] = run_here
    """The run after the kills, and the clean run (default: in this process)."""


def clean_state(scenario: Scenario, root: Path) -> Any:
    """What a run of the batch that never crashed leaves."""
    worker = scenario.prepare(root)
    scenario.finish(worker, scenario.connector)
    return scenario.state(worker)


def check_exactly_once(scenario: Scenario, root: Path, expected: Any = None, *, through_worker: bool = False) -> Any:
    """Kill the scenario's batch after each of its steps in turn, run it to its end, and compare what is left
    with `expected` (a clean run's state, made here under `root` when not given). The crashed run's state.
    `through_worker`: the kills are of a long-running worker's process (`kill_at_each_step`)."""
    if expected is None:
        expected = clean_state(scenario, root / "clean")
    worker = scenario.prepare(root / "crashed")
    kill_at_each_step(worker, scenario.connector, scenario.steps, scenario.env, through_worker=through_worker)
    scenario.finish(worker, scenario.connector)
    found = scenario.state(worker)
    assert found == expected
    return found
