"""Shared fixtures: the test services (tests/services/fixtures.py), one Spark session, fresh lakes."""

from __future__ import annotations

import atexit
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

pytest_plugins = ["tests.services.fixtures"]

REPO = Path(__file__).resolve().parents[1]


# Tests that tests/services/pytest.sh runs in one process after the others (marker `serial`): the MySQL
# CDC tests, which need the MariaDB binlog to themselves.
SERIAL = ("tests/mysql/",)


def pytest_collection_modifyitems(items):
    for item in items:
        if item.nodeid.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)


TEST_SPARK = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4"}


def spark_session():
    """This test process's Spark session (made on first use), with the product's JVM settings (C2, G1): it
    lives for the whole run, over which C2's compiled code may repay its cost. C1 only, as below, took a
    third less CPU for one file at a time, but was not measured over a whole run."""
    from ingest.spark import get_spark

    return get_spark(TEST_SPARK)


@pytest.fixture(scope="session")
def spark():
    return spark_session()


@pytest.fixture
def lake(tmp_path) -> Path:
    root = tmp_path / "lake"
    root.mkdir()
    return root


# The JVMs of the CLI processes tests start (their own, or one their test process shares between them:
# tests/shared_jvm.py) run short commands, and spent their CPU compiling code that then ran a few times.
# Three settings cut that: C1 only (C2's compiler threads competed for the two cores with code that runs
# once), the serial garbage collector (G1's concurrent threads, for heaps that hold a few tables), and a
# class-data archive of Spark's classes (JDK 17's AppCDS) that halves a JVM's start, dumped once per
# virtualenv by the first test that needs it (without an archive the JVMs only start slower). Measured on
# an idle machine, tests/delta_sink/test_exactly_once.py (ten kills in shared JVMs): 245 -> 175 CPU seconds
# with the shared JVMs on C1 and the serial collector instead of C2 and G1.
# The archive is named after the Spark and Java versions and the settings it was dumped with: one that no
# longer matches is ignored by the JVM, which says so on stderr (JVM log lines otherwise go to stdout, the
# CLI's output).
def _java_stamp() -> str:
    java = shutil.which("java")
    real = os.path.realpath(java) if java else "none"
    when = int(os.stat(real).st_mtime) if java else 0
    return hashlib.sha256(f"{real}:{when}".encode()).hexdigest()[:12]


_FAST_START = "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xlog:disable -Xlog:all=warning:stderr"
CLASS_ARCHIVE = Path(sys.prefix) / (f"lakeconnect-spark-{importlib.metadata.version('pyspark')}-java-{_java_stamp()}"
                                    f"-{hashlib.sha256(_FAST_START.encode()).hexdigest()[:8]}.jsa")
_java_options: str | None = None


def _test_java_options() -> str:
    global _java_options
    if os.environ.get("LAKECONNECT_TEST_PLAIN_JVM"):  # to compare, or to rule the settings out
        return "-Duser.timezone=UTC"
    if _java_options is None:
        if not CLASS_ARCHIVE.exists():
            partial = CLASS_ARCHIVE.with_suffix(f".{os.getpid()}.tmp")
            dump = f"{_FAST_START} -XX:ArchiveClassesAtExit={partial}"
            code = ("from ingest.spark import get_spark; s = get_spark({'spark.master': 'local[2]', "
                    f"'spark.driver.extraJavaOptions': {dump!r}}}); "
                    "s.range(1000).selectExpr('id % 7 as k').groupBy('k').count().collect(); s.stop()")
            done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=600)
            if done.returncode == 0 and partial.exists():
                partial.replace(CLASS_ARCHIVE)
            partial.unlink(missing_ok=True)
        _java_options = _FAST_START + (f" -XX:SharedArchiveFile={CLASS_ARCHIVE}" if CLASS_ARCHIVE.exists() else "")
    return _java_options


def write_worker(path: Path, lake: Path, **extra: str) -> Path:
    """A worker config at `path` for the lake `lake`. Its directory is in `lake.allowed.paths` (before any the
    test gives): tests keep their SQLite files and local stores beside the lake (tests/config/test_paths.py
    tests the gate itself)."""
    allowed = ",".join(filter(None, [str(path.parent), extra.pop("lake.allowed.paths", "")]))
    lines = {"lake.root": str(lake), "lake.allowed.paths": allowed,
             "key.converter": "org.apache.kafka.connect.storage.StringConverter",
             "value.converter": "org.apache.kafka.connect.storage.StringConverter",
             "file.connectors.enable": "true", "spark.master": "local[2]", "spark.sql.shuffle.partitions": "4",
             "spark.driver.extraJavaOptions": _test_java_options(), **extra}
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return path


@pytest.fixture
def worker_file(tmp_path, lake) -> Path:
    return write_worker(tmp_path / "worker.properties", lake)


def run_here(worker: Path, name: str, **options) -> list:
    """Run connector `name` in this process, on its Spark session, as `lakeconnect run` does; its reports.

    For the runs of a crash test that are not killed: its run that never crashed, the batches before the
    kill and the run after it. A CLI process costs a JVM start (4-5 s on an idle machine, 15-40 s with
    two test workers on two cores), which made these runs half of the suite's time. The kill itself is
    always a real CLI process (`cli`), and so are runs that need environment variables in Spark's Python
    workers (this process's workers keep the environment its JVM started with)."""
    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker

    spark_session()  # the `spark` fixture's session, if no test of this process has made it yet
    return Worker(load_worker(str(worker))).run(name, **options)


def cli_here(*args: str, worker: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`lakeconnect [--worker W] ARGS` in this process, as `run_here` runs a connector: the CLI's own
    `main` with what it reads, prints and logs redirected; what `cli` returns (no process, no environment
    of its own). For a test's set-up (creating topics and connectors, producing records) and for runs whose
    output a test reads, e.g. the CDC tests' resume messages: a CLI process costs 3-4 s on an idle machine
    and 10-15 s with two test workers on two cores. What a test is about stays a real process (`cli`)."""
    import contextlib
    import io
    import logging

    from ingest.cli import main

    spark_session()
    argv = (["--worker", str(worker)] if worker else []) + list(args)
    out, err = io.StringIO(), io.StringIO()
    logger = logging.getLogger("lakeconnect")
    handlers, level, propagate = logger.handlers[:], logger.level, logger.propagate
    stdin_was = sys.stdin
    try:
        sys.stdin = io.StringIO(stdin or "")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse's refusals, as the process would exit
                code = e.code if isinstance(e.code, int) else 1
    finally:
        sys.stdin = stdin_was
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate
    return subprocess.CompletedProcess(["lakeconnect", *argv], code, out.getvalue(), err.getvalue())


_shared_jvms = None


def cli(*args: str, worker: Path | None = None, env: dict[str, str] | None = None, stdin: str | None = None,
        timeout: int = 300, own_jvm: bool = False) -> subprocess.CompletedProcess:
    """Run `python -m ingest` in a real process, as a user or a scheduler would.

    Its Spark runs in this test process's shared JVM (tests/shared_jvm.py), whose SparkContext is stopped
    when the process ends, as its own JVM would stop with it; `own_jvm=True` for a test about the JVM."""
    global _shared_jvms
    from tests.shared_jvm import SharedJvms

    argv = [sys.executable, "-m", "ingest"] + (["--worker", str(worker)] if worker else []) + list(args)
    full_env = {k: v for k, v in os.environ.items() if k != "LAKECONNECT_CRASH_AT"}
    full_env.update(env or {})
    jvm = None
    if not own_jvm and SharedJvms.enabled():
        if _shared_jvms is None:
            _shared_jvms = SharedJvms(REPO / ".services" / "test-jvms", REPO)
        jvm = _shared_jvms.lease(worker, full_env)
        full_env.update(jvm.env())
    try:
        forked = _fork_cli(argv, argv[3:], full_env, stdin, timeout)
        if forked is not None:
            return forked
        return subprocess.run(argv, cwd=REPO, env=full_env, input=stdin, capture_output=True, text=True,
                              timeout=timeout)
    finally:
        if jvm is not None:
            jvm.reset()


_zygote = None


def _fork_cli(argv, args, env, stdin, timeout) -> subprocess.CompletedProcess | None:
    """The CLI process forked from this test process's zygote (tests/zygote.py), which has made its imports
    already; None when it cannot be (the caller starts a new interpreter)."""
    global _zygote
    from tests import zygote

    if not zygote.enabled() or _zygote is False:
        return None
    if _zygote is None or _zygote.proc.poll() is not None:
        try:
            _zygote = zygote.Zygote(REPO)
        except (OSError, RuntimeError) as e:  # the runs get new interpreters, as without it
            warnings.warn(f"no CLI zygote: {e}", stacklevel=2)
            _zygote = False
            return None
        atexit.register(_zygote.close)
    if not _zygote.accepts(env):
        return None
    return _zygote.run(argv, args, env, stdin, timeout)
