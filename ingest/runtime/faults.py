"""Fault injection: kill the process at a named step of a batch, to prove exactly-once recovery.

`LAKECONNECT_CRASH_AT=write` (or `write:2` for the second time that step is reached) makes the process
exit immediately with status 137 right after that step, as `kill -9` would: no cleanup, no finally.

Steps inside a Spark task (`executor_point`, e.g. `upload:3` after a sink's third object) kill the whole
job the same way: the Python worker kills the driver process (whose pid the CLI leaves in
LAKECONNECT_DRIVER_PID when a crash is asked for), then itself.
"""

from __future__ import annotations

import os
import signal
import sys
import time

CRASH_ENV = "LAKECONNECT_CRASH_AT"
CRASH_EXIT = 137
DRIVER_ENV = "LAKECONNECT_DRIVER_PID"
SOURCE_STEPS = ("plan", "read", "transform", "convert", "write", "commit", "done")
SINK_STEPS = ("plan", "read", "convert", "transform", "put", "write", "commit", "done")

UNREADABLE_ENV = "LAKECONNECT_UNREADABLE_ROWS"
"""`db.table`: the MySQL CDC source's binlog decoder fails on that table's row events, as on an event it cannot
deserialize (a healthy server writes none to test event.processing.failure.handling.mode with). Read by the
driver and passed to the decoding tasks as an option."""

_seen: dict[str, int] = {}


def _reached(step: str) -> bool:
    spec = os.environ.get(CRASH_ENV)
    if not spec:
        return False
    name, _, nth = spec.partition(":")
    if name != step:
        return False
    _seen[step] = _seen.get(step, 0) + 1
    return _seen[step] == int(nth or 1)


def point(step: str) -> None:
    if _reached(step):
        sys.stderr.write(f"fault injection: killed after step '{step}'\n")
        sys.stderr.flush()
        os._exit(CRASH_EXIT)


def executor_point(step: str) -> None:
    """A crash point inside a Spark task: the job dies, not just the task (which Spark would retry)."""
    if _reached(step):
        sys.stderr.write(f"fault injection: job killed inside a task after '{step}'\n")
        sys.stderr.flush()
        driver = os.environ.get(DRIVER_ENV)
        if driver:
            os.kill(int(driver), signal.SIGUSR1)
            time.sleep(5)  # the job ends first: this task's end must not look like an ordinary task failure
        os._exit(CRASH_EXIT)


def executor_env() -> dict[str, str]:
    """With a crash asked for, the Spark settings that give it to the job's Python workers too
    (`spark.executorEnv.*`): they need it for `executor_point`, and a JVM does not always pass its driver
    process's environment on (one started before the driver process, or on another machine)."""
    return {f"spark.executorEnv.{name}": os.environ[name] for name in (CRASH_ENV, DRIVER_ENV) if os.environ.get(name)}


def mark_driver() -> None:
    """Called by the CLI: with a crash asked for, Spark tasks know which process is the job, and the job
    ends the way `point` ends it when a task says so."""
    if not os.environ.get(CRASH_ENV):
        return
    os.environ[DRIVER_ENV] = str(os.getpid())

    def killed(signum, frame) -> None:
        sys.stderr.write("fault injection: killed by a task\n")
        sys.stderr.flush()
        os._exit(CRASH_EXIT)

    signal.signal(signal.SIGUSR1, killed)
