"""A Spark standalone cluster for tests: one master and two workers, each a process of its own.

They are started with the pyspark package's own launcher (`bin/spark-class` with Spark's Master and
Worker classes), all on 127.0.0.1 and on free ports, so that a test driver reaches its executors over
the network exactly as on a real cluster: nothing a job needs can come from the driver's memory or
its working directory unless Spark ships it.

`SparkCluster.start(base)` returns once the master's JSON status lists both workers ALIVE (or raises
with the logs' tails); `stop()` ends the three process groups. Logs, and the workers' work dirs (where
executors write their stdout/stderr, one dir per application), live under `base`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "2g"
READY_TIMEOUT = 60.0
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def pyspark_home() -> Path:
    """The installed pyspark package: it carries Spark's jars and `bin/spark-class`."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A port nobody listens on now (the kernel's pick), so parallel runs never collide on fixed ones."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def daemon_env(base: Path) -> dict[str, str]:
    """The daemons' environment: Spark's home is the pyspark package, executors' Python is this venv's
    (the project is installed in it, so Python workers import it), logs and pids under `base`.

    Without the test process's AWS_* and LAKECONNECT_* variables: executors inherit the workers'
    environment, and a job must not work only because they happen to share the driver's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LAKECONNECT_"))}
    env.update({
        "SPARK_HOME": str(pyspark_home()),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(base / "logs"),
        "SPARK_PID_DIR": str(base),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_LOCAL_DIRS": str(base / "local"),
        "SPARK_NO_DAEMONIZE": "1",
    })
    for key in ("SPARK_CONF_DIR", "PYSPARK_DRIVER_PYTHON", "SPARK_MASTER_OPTS", "SPARK_WORKER_OPTS"):
        env.pop(key, None)
    return env


def tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no {path})"
    return f"----- {path}:\n" + "\n".join(text[-lines:])


@dataclass
class Daemon:
    """One launched JVM (in a process group of its own, so stopping it ends the launcher's children)."""

    name: str
    process: subprocess.Popen
    log: Path

    def stop(self, grace: float = 15.0) -> None:
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(10)


@dataclass
class SparkCluster:
    """A running standalone master and its workers."""

    base: Path
    master_port: int
    ui_port: int
    daemons: list[Daemon] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The master URL a driver connects to (`spark.master`)."""
        return f"spark://{HOST}:{self.master_port}"

    @property
    def status_url(self) -> str:
        return f"http://{HOST}:{self.ui_port}/json/"

    def work_dirs(self) -> list[Path]:
        """The workers' work dirs: each application gets `<app id>/<executor id>/` with its logs."""
        return [self.base / f"worker-{i}" / "work" for i in range(1, WORKERS + 1)]

    @classmethod
    def start(cls, base: Path, timeout: float = READY_TIMEOUT) -> SparkCluster:
        """Launch the master and the workers under `base`; wait until all workers are ALIVE."""
        base.mkdir(parents=True, exist_ok=True)
        cluster = cls(base=base, master_port=free_port(), ui_port=free_port())
        try:
            cluster._launch("master", MASTER_CLASS, "--host", HOST, "--port", str(cluster.master_port),
                            "--webui-port", str(cluster.ui_port))
            for i in range(1, WORKERS + 1):
                work = base / f"worker-{i}" / "work"
                work.mkdir(parents=True, exist_ok=True)
                cluster._launch(f"worker-{i}", WORKER_CLASS, cluster.url, "--host", HOST,
                                "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
                                "--webui-port", str(free_port()), "--work-dir", str(work))
            cluster._wait_ready(timeout)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _launch(self, name: str, main_class: str, *args: str) -> None:
        log = self.base / f"{name}.log"
        launcher = pyspark_home() / "bin" / "spark-class"
        with log.open("ab") as out:
            process = subprocess.Popen([str(launcher), main_class, *args], stdin=subprocess.DEVNULL,
                                       stdout=out, stderr=subprocess.STDOUT, env=daemon_env(self.base),
                                       cwd=self.base, start_new_session=True)
        self.daemons.append(Daemon(name, process, log))

    def status(self) -> dict:
        """The master's JSON status page (workers, running and completed applications)."""
        with urllib.request.urlopen(self.status_url, timeout=5) as answer:
            return json.loads(answer.read())

    def _alive_workers(self) -> int:
        try:
            return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")
        except (OSError, urllib.error.URLError, ValueError):
            return 0

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [d for d in self.daemons if d.process.poll() is not None]
            if dead:
                raise RuntimeError(self._report(f"{dead[0].name} exited with status {dead[0].process.returncode}"))
            if self._alive_workers() == WORKERS:
                return
            time.sleep(0.5)
        raise RuntimeError(self._report(f"the master at {self.status_url} did not list {WORKERS} ALIVE "
                                        f"workers within {timeout:.0f}s"))

    def _report(self, what: str) -> str:
        return "Spark standalone cluster: " + what + "\n" + "\n".join(tail(d.log) for d in self.daemons)

    def stop(self) -> None:
        """Stop the workers, then the master (each launcher's whole process group)."""
        for daemon in reversed(self.daemons):
            daemon.stop()
