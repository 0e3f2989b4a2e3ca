"""One Spark JVM per test process for the CLI processes the tests start, instead of one JVM each.

A `lakeconnect run` in a test is a real process (the crash tests kill it with os._exit at a step), and
until now each started its own Spark JVM: 4-5 s on an idle machine, 15-60 s with two test workers on two
cores, most of the suite's time. Here the test process starts a Spark driver JVM the way PySpark does
(`spark-submit pyspark-shell`, waiting for its gateway's port) and hands its address to the CLI process in
PYSPARK_GATEWAY_PORT / PYSPARK_GATEWAY_SECRET, which PySpark connects to instead of launching one. The CLI
process creates its own SparkContext there, as it would in a JVM of its own.

What a process's death does to its JVM is done here too: when the CLI process has ended (normally or
killed), its SparkContext is stopped (jobs cancelled, Python workers and their daemon killed, temporary
directories removed), as the JVM's shutdown hook does when its driver process dies, before the test goes
on. Nothing of the product lives in the JVM past its SparkContext: state is in the lake, written from
Python. The JVM's classes and JIT-compiled code stay warm, which is the point.

A JVM is shared only between runs that would start an identical one: the same `spark.*` settings of the
worker file (memory, JVM options, jars are fixed at launch) and the same environment for Spark's Python
workers (the JVM passes its own environment to them; variables only the driver reads are listed in
DRIVER_ONLY). Anything else gets a JVM of its own, as do runs with `own_jvm=True` (a test that kills or
starves the JVM). LAKECONNECT_TEST_OWN_JVM=1 gives every run its own JVM, to compare or to rule this out.
"""

from __future__ import annotations

import atexit
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# Read by the CLI process only (its driver), never by Spark's Python workers: they may differ between runs
# that share a JVM. The crash step reaches the workers through spark.executorEnv (ingest/spark.py).
DRIVER_ONLY = frozenset({"LAKECONNECT_CRASH_AT", "LAKECONNECT_DEBUG"})
# Set in the test process by pytest (the current test's name) and by PySpark once the test's own Spark
# session exists: no bearing on a JVM started for a CLI process.
IGNORED = frozenset({"PYTEST_CURRENT_TEST", "PYSPARK_PYTHON", "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET",
                     "SPARK_AUTH_SOCKET_TIMEOUT", "SPARK_BUFFER_SIZE"})
# A JVM serves this many runs, then a new one starts (SparkContexts leave a little behind each time).
RUNS_PER_JVM = 40
KEPT = 2  # JVMs kept per test process (least recently used goes first)
LAUNCH_TIMEOUT_S = 300


class _Jvm:
    def __init__(self, conf: dict[str, str], env: dict[str, str], log: Path, cwd: Path):
        from pyspark.find_spark_home import _find_spark_home

        self.runs = 0
        command = [os.path.join(_find_spark_home(), "bin", "spark-submit")]
        for key, value in conf.items():
            command += ["--conf", f"{key}={value}"]
        command.append("pyspark-shell")
        info_dir = tempfile.mkdtemp(prefix="lakeconnect-jvm-")
        info = os.path.join(info_dir, "gateway")
        # as the CLI would launch it: ingest.spark sets PYSPARK_PYTHON to its own interpreter first
        launch_env = {"PYSPARK_PYTHON": sys.executable, **env, "SPARK_CONNECT_MODE": "0",
                      "_PYSPARK_DRIVER_CONN_INFO_PATH": info}
        self.log = open(log, "ab")
        # stdin stays open in this process: the JVM ends when it is closed (PySpark's own arrangement)
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=launch_env, cwd=cwd, start_new_session=True)
        try:
            deadline = time.monotonic() + LAUNCH_TIMEOUT_S
            while not os.path.isfile(info) and self.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if not os.path.isfile(info):
                self.close()
                raise RuntimeError(f"the shared Spark JVM did not start: {shlex.join(command)}; its log: {log}")
            time.sleep(0.05)  # the file is written then closed by the JVM
            from pyspark.serializers import UTF8Deserializer, read_int

            with open(info, "rb") as f:
                self.port = read_int(f)
                self.secret = UTF8Deserializer().loads(f)
        finally:
            shutil.rmtree(info_dir, ignore_errors=True)
        self._client = None

    def env(self) -> dict[str, str]:
        return {"PYSPARK_GATEWAY_PORT": str(self.port), "PYSPARK_GATEWAY_SECRET": self.secret}

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _jvm(self):
        if self._client is None:
            from py4j.clientserver import ClientServer, JavaParameters, PythonParameters

            self._client = ClientServer(
                java_parameters=JavaParameters(port=self.port, auth_token=self.secret, auto_convert=True),
                python_parameters=PythonParameters(port=0, eager_load=False))
        return self._client.jvm

    def reset(self) -> None:
        """What the JVM's shutdown hook does when its driver process dies: stop the SparkContext the CLI
        process made here, if any (its jobs, its Python workers), and forget its sessions."""
        try:
            jvm = self._jvm()
            active = getattr(getattr(jvm.org.apache.spark, "SparkContext$"), "MODULE$").getActive()
            if active.isDefined():
                active.get().stop()
            sessions = jvm.org.apache.spark.sql.classic.SparkSession
            sessions.clearDefaultSession()
            sessions.clearActiveSession()
        except Exception:  # the JVM is gone or broken (a test about that): the next run gets a new one
            self.close()

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.shutdown()
            except Exception:
                pass
            self._client = None
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # the JVM's own way out: it stops its SparkContext and exits
                self.proc.wait(timeout=20)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class SharedJvms:
    """The shared JVMs of this test process, by what they were started with."""

    def __init__(self, log_dir: Path, cwd: Path):
        self.log_dir, self.cwd = log_dir, cwd
        self._jvms: dict[tuple, _Jvm] = {}
        self._lock = threading.Lock()
        atexit.register(self.close)

    @staticmethod
    def enabled() -> bool:
        return not os.environ.get("LAKECONNECT_TEST_OWN_JVM")

    def lease(self, worker: Path | None, env: dict[str, str]) -> _Jvm:
        """A JVM for a CLI process with `worker` and environment `env`; `reset` it when the process ends."""
        from ingest.spark import spark_conf

        settings = _spark_settings(worker, env)
        conf = spark_conf(settings)
        worker_env = {k: v for k, v in env.items() if k not in DRIVER_ONLY and k not in IGNORED}
        key = (tuple(sorted(conf.items())), tuple(sorted(worker_env.items())))
        with self._lock:
            jvm = self._jvms.pop(key, None)
            if jvm is not None and (not jvm.alive() or jvm.runs >= RUNS_PER_JVM):
                jvm.close()
                jvm = None
            if jvm is None:
                while len(self._jvms) >= KEPT:
                    self._jvms.pop(next(iter(self._jvms))).close()
                self.log_dir.mkdir(parents=True, exist_ok=True)
                jvm = _Jvm(conf, worker_env, self.log_dir / f"jvm-{os.getpid()}.log", self.cwd)
            self._jvms[key] = jvm  # most recently used last
            jvm.runs += 1
            return jvm

    def close(self) -> None:
        """At exit: every JVM of this test process stops. py4j's logger is silenced first, as pytest has
        closed the stream it would say its goodbyes on."""
        logging.getLogger("py4j").disabled = True
        with self._lock:
            for jvm in self._jvms.values():
                jvm.close()
            self._jvms.clear()


def _spark_settings(worker: Path | None, env: dict[str, str]) -> dict[str, str]:
    """The `spark.*` settings the CLI would start Spark with: the worker file's (or the default worker's)."""
    from ingest.config.worker import WORKER_ENV, load_properties_file, worker_path

    try:
        path = worker_path(str(worker) if worker else env.get(WORKER_ENV))
        raw = load_properties_file(path) if path is not None else {}
    except Exception:  # a worker file the CLI refuses: it fails before it starts Spark
        return {}
    return {k: str(v) for k, v in raw.items() if k.startswith("spark.")}
