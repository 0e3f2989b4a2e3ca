"""CLI processes forked from a process that has already imported the CLI, instead of started from nothing.

A `lakeconnect` process in a test (`tests/conftest.py` `cli`, the crash tests' kills) spent 1.5-2.5 s of an
idle machine's CPU before its first line of work: the interpreter's start and the imports of PySpark,
pyarrow, deltalake and the CLI's modules, the same every time, and twice that with two test workers on two
cores. Here each test process keeps one helper process (a "zygote") that made those imports once and
waits; each CLI run is a child forked from it, which sets the run's arguments, environment, working
directory and standard streams, runs the CLI's own entry point (`ingest.cli.run`, which ends with
`os._exit`) and is reaped by the zygote, which reports its exit status.

The child is a real process: its own pid, its own memory, its own connection to its Spark JVM (the zygote
never starts Spark or connects to a JVM), killed with `os._exit` at a crash step like any other. What
differs from a new interpreter is only what happened before the run's arguments existed: module imports,
which read no environment variable of the project (the runtime reads them when it runs), and the hash
seed, the same for every child. A run whose environment changes how an interpreter starts (a `PYTHON*`
variable, e.g. PYTHONPATH for a plugin installed elsewhere) gets a new interpreter as before, and so does
every run when LAKECONNECT_TEST_NO_ZYGOTE=1 (to compare, or to rule this out).

The zygote forks only while it has a single thread besides jemalloc's background ones (imports that start
threads, such as OpenBLAS's pool, are told not to); otherwise it says so and the run gets a new
interpreter.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# Read when an interpreter starts, so a run that sets them differently needs an interpreter of its own.
_STARTUP_PREFIX = "PYTHON"
_SINGLE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# What the zygote imports before it forks: everything a CLI run of any command imports.
_PRELOAD = ("ingest.cli", "ingest.cli.commands", "ingest.cli.topics", "ingest.cli.maintenance", "ingest.cli.rest",
            "ingest.runtime.worker", "ingest.spark", "pyspark.sql", "pyspark.sql.functions")


def enabled() -> bool:
    return os.environ.get("LAKECONNECT_TEST_NO_ZYGOTE") != "1"


class Zygote:
    """One zygote process; `run` forks a CLI process from it. One run at a time (as `cli` is)."""

    def __init__(self, cwd: Path):
        self.cwd = cwd
        env = {**os.environ, **_SINGLE_THREAD}
        env.pop("LAKECONNECT_CRASH_AT", None)
        self.base_env = {k: v for k, v in os.environ.items() if k.startswith(_STARTUP_PREFIX)}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.zygote"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._buffer = b""
        self._lock = threading.Lock()
        deadline = time.monotonic() + 120
        line = ""
        while line != "ready":  # an import may print something first
            line = self._line(max(0.0, deadline - time.monotonic()))
            if line is None:
                self.close()
                raise RuntimeError("the CLI zygote did not start in 120 s")

    def accepts(self, env: dict[str, str]) -> bool:
        """Whether a run with `env` may be forked: the interpreter-start variables are the zygote's own."""
        return self.proc.poll() is None and \
            {k: v for k, v in env.items() if k.startswith(_STARTUP_PREFIX)} == self.base_env

    def run(self, argv: list[str], args: list[str], env: dict[str, str], stdin: str | None,
            timeout: float) -> subprocess.CompletedProcess | None:
        """`lakeconnect ARGS` as a forked process; what subprocess.run would return (`argv` is what it shows).
        None when the zygote cannot fork it (the caller starts a process instead)."""
        with self._lock, tempfile.TemporaryDirectory(prefix="lakeconnect-cli-") as tmp:
            paths = {name: os.path.join(tmp, name) for name in ("stdin", "stdout", "stderr")}
            Path(paths["stdin"]).write_text(stdin or "")
            request = {"args": args, "env": env, "cwd": str(self.cwd), **paths}
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            started = self._line(30)
            if started is None:
                raise RuntimeError("the CLI zygote did not answer in 30 s")
            if not started.startswith("pid "):
                return None  # "refused ...": not single-threaded
            pid = int(started.split()[1])
            status_line = self._line(timeout)
            if status_line is None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._line(30)
                out, err = (Path(paths[n]).read_text(errors="replace") for n in ("stdout", "stderr"))
                raise subprocess.TimeoutExpired(argv, timeout, out, err)
            code = int(status_line.split()[1])
            out, err = (Path(paths[n]).read_text(errors="replace") for n in ("stdout", "stderr"))
        return subprocess.CompletedProcess(argv, code, out, err)

    def _line(self, timeout: float) -> str | None:
        """The zygote's next line, read from its pipe unbuffered (a buffered reader may hold the line that
        select() then waits for); None after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("the CLI zygote ended")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode().strip()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


# --- the zygote process ---------------------------------------------------------------------------------


def _threads() -> int:
    """This process's threads but jemalloc's background ones (pyarrow's and deltalake's allocators start
    one each at import): jemalloc takes its locks around a fork and resets that state in the child, which
    runs without them (it purges memory on allocation instead). Any other thread could hold a lock at the
    fork that the child would wait on for ever."""
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            names.append(Path(f"/proc/self/task/{task}/comm").read_text().strip())
        except OSError:
            pass
    return sum(1 for name in names if name != "jemalloc_bg_thd")


def _child(request: dict) -> None:
    """In the forked child: become the CLI process the request describes, run it, never return."""
    try:
        os.chdir(request["cwd"])
        fd_in = os.open(request["stdin"], os.O_RDONLY)
        fd_out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        fd_err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((fd_in, 0), (fd_out, 1), (fd_err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False)  # the zygote's stdin object reads the request pipe's buffer
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["lakeconnect", *request["args"]]
        from ingest.cli import run

        run()  # ends the process with os._exit
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - what an interpreter does with an uncaught exception
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _serve() -> None:
    import importlib

    for name in _PRELOAD:
        importlib.import_module(name)
    requests = sys.stdin
    print("ready", flush=True)
    for line in requests:
        request = json.loads(line)
        if _threads() != 1:
            print(f"refused: {_threads()} threads", flush=True)
            continue
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    _serve()
