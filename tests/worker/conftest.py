"""The long-running worker in tests: `lakeconnect worker` as a real process on a free port of 127.0.0.1,
and `lakeconnect run` processes that delegate to it through LAKECONNECT_WORKER_URL.

A worker's Spark runs in a JVM of this test process's (tests/shared_jvm.py), as the CLI processes' do: its
SparkContext is stopped when the worker process has ended, killed or not, before the test goes on. The JVMs
are the workers' own (never one a `cli` run is also using). `own_jvm=True` starts the worker's own JVM, as
a user's worker does.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ingest.cli.delegate import WORKER_URL_ENV
from ingest.runtime.faults import CRASH_ENV
from tests.conftest import REPO

START_TIMEOUT_S = 180
_jvms = None


def _shared_jvms():
    global _jvms
    from tests.shared_jvm import SharedJvms

    if _jvms is None:
        _jvms = SharedJvms(REPO / ".services" / "test-jvms", REPO)
        # runs before the JVMs' close (atexit is last in, first out): py4j's goodbyes would go to streams
        # pytest (or Airflow's logging) has closed by then
        atexit.register(_quiet_py4j)
    return _jvms


def _quiet_py4j() -> None:
    for name in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(name).disabled = True


class WorkerProcess:
    """`lakeconnect --worker FILE worker --listen http://127.0.0.1:0 [ARGS]`, started and ready (its URL read
    from the line it prints first); its stderr goes to a log file beside the worker file."""

    _count = 0

    def __init__(self, worker_file: Path, *args: str, env: dict[str, str] | None = None, own_jvm: bool = False):
        from tests.shared_jvm import SharedJvms

        WorkerProcess._count += 1
        self.worker_file = worker_file
        full = {k: v for k, v in os.environ.items() if k not in (CRASH_ENV, WORKER_URL_ENV)}
        full.update(env or {})
        self.jvm = None
        if not own_jvm and SharedJvms.enabled():
            self.jvm = _shared_jvms().lease(worker_file, {**full, "LAKECONNECT_TEST_JVM_OF": "worker"})
            full.update(self.jvm.env())
        self.log_path = worker_file.parent / f"worker-{os.getpid()}-{WorkerProcess._count}.log"
        self._log = open(self.log_path, "w")
        argv = [sys.executable, "-m", "ingest", "--worker", str(worker_file), "worker", "--listen",
                "http://127.0.0.1:0", *args]
        self.proc = subprocess.Popen(argv, cwd=REPO, env=full, stdout=subprocess.PIPE, stderr=self._log, text=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: lines.put(self.proc.stdout.readline()), daemon=True).start()
        try:
            first = lines.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            first = ""
        found = re.search(r"listening on (\S+) ", first)
        if not found:
            self.close()
            raise AssertionError(f"the worker did not start: {first!r}\n{self.log()}")
        self.url = found.group(1)

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
            url: str | None = None) -> subprocess.CompletedProcess:
        """`lakeconnect --worker FILE ARGS` (a `run`) as a process that sends its run to this worker."""
        return delegated(self.worker_file, url or self.url, *args, env=env, timeout=timeout)

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait(self, timeout: float = 120) -> int:
        return self.proc.wait(timeout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 120) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(60)
        if self.jvm is not None:
            self.jvm.reset()  # what the worker's own JVM would do when its process ends
            self.jvm = None
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()


def delegated(worker_file: Path | None, url: str, *args: str, env: dict[str, str] | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess:
    """`lakeconnect [--worker FILE] ARGS` with LAKECONNECT_WORKER_URL=url: a new interpreter each time (it
    imports no Spark, so it needs neither a JVM nor the CLI zygote)."""
    full = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    full.update({WORKER_URL_ENV: url, **(env or {})})
    argv = [sys.executable, "-m", "ingest"] + (["--worker", str(worker_file)] if worker_file else []) + list(args)
    return subprocess.run(argv, cwd=REPO, env=full, capture_output=True, text=True, timeout=timeout)
