"""The long-running worker's runs: batches run in this process, on its one warm Spark session.

A run is what `lakeconnect run` does (one task or every task, one batch or until caught up), asked for
over the REST API. Each runs on a thread of a pool of `worker.runs.max`; more wait in a queue of at most
`worker.runs.queue.max`, and beyond it a request is refused (429) rather than held. Each connector's jobs go
to a Spark scheduler pool of its own (the session runs FAIR between pools), so a large batch of one
connector does not hold up another's poll. Runs of one task still exclude each other through the task's
lease, as separate processes do: a second is refused with exit code 3.

What one process per run made safe holds here too:
- Every run gets a `Worker` of its own over the shared config, registry and state tables, and reads the
  connector's config as stored now (an update is picked up by the next run). The state tables are shared
  (they take calls from several threads), so a run reads only the state files committed since the last.
- A run's failure is its exit code and message, as the CLI's would be; the worker goes on. Only a Spark JVM
  that stopped (an OutOfMemoryError in local mode) ends the worker, since no later run could use it.
- A run killed with the worker (kill -9, a host lost) leaves its batch PLANNED, and the next run resumes
  it, exactly as after a killed CLI process.
- Memory is bounded: a run's log lines go to its client as they come (a client that is not reading holds
  at most `MAX_BACKLOG` of them), and the worker remembers `HISTORY` runs per connector, of at most
  `CONNECTORS` connectors.

The client reads a run as lines of JSON (`application/x-ndjson`), in order: `{"log": line}` for each log
line, `{"report": {...}, "summary": text}` for each batch (the report is what `lakeconnect run --json`
prints), `{"not_run": {...}, "summary": text}` when nothing ran (paused, stopped, no such task), and last
`{"exit_code": N}` with `"error"` when N is not 0. A stream that ends without that last line means the worker
stopped during the run.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import itertools
import logging
import os
import threading
import traceback
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ingest.config import secrets
from ingest.errors import LakeConnectError
from ingest.state.stores import RUNNING

log = logging.getLogger("lakeconnect")

QUEUED, RUNNING_NOW, SUCCEEDED, FAILED, NOT_RUN, INTERRUPTED = (
    "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "NOT_RUN", "INTERRUPTED")
HISTORY = 20
"""Runs remembered per connector (`GET /connectors/{name}/runs`); the runs table keeps every batch."""
CONNECTORS = 1000
"""Connectors whose runs are remembered; the one that ran least recently is forgotten first."""
MAX_BACKLOG = 10_000
"""Events a run keeps for a client that has not read them yet; older log lines are dropped first."""
EXIT_RETRIABLE = 75
LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s"
LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"

_current: contextvars.ContextVar[Run | None] = contextvars.ContextVar("lakeconnect_run", default=None)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class Run:
    """One run: what was asked, where it stands, and its events for the client that asked."""

    id: str
    connector: str
    task: int | None
    until_caught_up: bool
    skip_missing_task: bool
    state: str = QUEUED
    submitted_at: str = field(default_factory=_now)
    started_at: str | None = None
    ended_at: str | None = None
    exit_code: int | None = None
    error: str | None = None
    reports: list[dict[str, Any]] = field(default_factory=list)
    _listener: Callable[[dict[str, Any] | None], None] | None = field(default=None, repr=False)
    _backlog: deque = field(default_factory=lambda: deque(maxlen=MAX_BACKLOG), repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _ended: bool = field(default=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        out = {"id": self.id, "connector": self.connector, "task": self.task, "until_caught_up": self.until_caught_up,
               "state": self.state, "submitted_at": self.submitted_at, "started_at": self.started_at,
               "ended_at": self.ended_at, "exit_code": self.exit_code, "reports": list(self.reports)}
        if self.error:
            out["error"] = self.error
        return out

    def emit(self, event: dict[str, Any]) -> None:
        with self._lock:
            if self._ended:
                return
            if self._listener is None:
                self._backlog.append(event)
                return
            listener = self._listener
        listener(event)

    def end(self, exit_code: int, error: str | None = None) -> None:
        """The run's last event; what comes after it (a batch still running when the worker gave up on it)
        reaches no client."""
        final: dict[str, Any] = {"exit_code": exit_code}
        if error:
            final["error"] = error
        self.emit(final)
        with self._lock:
            self._ended = True
            listener = self._listener
        if listener is not None:
            listener(None)

    def attach(self, listener: Callable[[dict[str, Any] | None], None]) -> None:
        """`listener` gets every event so far and then each as it comes, and None after the last one."""
        with self._lock:
            backlog, self._backlog = list(self._backlog), deque()
            self._listener = listener
            ended = self._ended
        for event in backlog:
            listener(event)
        if ended:
            listener(None)

    def detach(self) -> None:
        """The client went away: the run goes on, its events go nowhere."""
        with self._lock:
            self._listener = lambda event: None


class RunLogHandler(logging.Handler):
    """Sends each log line of a run's thread to that run's client, as the CLI would print it on stderr."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        run = _current.get()
        if run is None:
            return
        try:
            run.emit({"log": secrets.scrub(self.format(record))})
        except Exception:  # noqa: BLE001 - a log line must never fail the run
            self.handleError(record)


class Refused(Exception):
    """A run that is not accepted: the HTTP status and Kafka Connect's error message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class RunService:
    """Runs batches for the worker's REST API. `make_worker()` gives a fresh `Worker` over the shared config;
    `on_fatal(message)` is called when a run leaves the process unable to run more (its Spark JVM gone)."""

    def __init__(self, make_worker: Callable[[], Any], *, max_runs: int, max_queued: int,
                 on_fatal: Callable[[str], None] | None = None):
        self.make_worker = make_worker
        self.max_runs = max_runs
        self.max_queued = max_queued
        self.on_fatal = on_fatal
        self._pool = ThreadPoolExecutor(max_runs, thread_name_prefix="run")
        self._lock = threading.Lock()
        self._history: OrderedDict[str, deque[Run]] = OrderedDict()
        self._active: dict[str, Run] = {}
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._handler = RunLogHandler()
        logging.getLogger("lakeconnect").addHandler(self._handler)

    # --- asking for runs ---------------------------------------------------------------------------

    def submit(self, connector: str, *, task: int | None, until_caught_up: bool, skip_missing_task: bool) -> Run:
        with self._lock:
            if self._stopping.is_set():
                raise Refused(503, "the worker is shutting down and starts no run; run again once it is back")
            queued = sum(1 for r in self._active.values() if r.state == QUEUED)
            if queued >= self.max_queued:
                raise Refused(429, f"the worker has {queued} runs waiting (worker.runs.queue.max={self.max_queued});"
                                   " run again later, or give the worker more worker.runs.max")
            run = Run(f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S}-{next(self._ids)}", connector, task,
                      until_caught_up, skip_missing_task)
            running = sum(1 for r in self._active.values() if r.state == RUNNING_NOW)
            self._active[run.id] = run
            self._remember(run)
        if running + queued >= self.max_runs:
            run.emit({"log": f"queued behind {running + queued - self.max_runs + 1} run(s) "
                             f"(worker.runs.max={self.max_runs} run at once)"})
        try:
            self._pool.submit(self._execute, run)
        except RuntimeError:  # the pool shut down between the check above and here
            with self._lock:
                self._active.pop(run.id, None)
            raise Refused(503, "the worker is shutting down and starts no run; run again once it is back") from None
        return run

    def health(self) -> dict[str, Any]:
        """What an operator sizes a worker by: runs going on and waiting, and the process's and its Spark
        JVM's memory, threads and open files (the JVM's only once a run has started its session)."""
        with self._lock:
            states = [r.state for r in self._active.values()]
        out: dict[str, Any] = {"runs": {"running": states.count(RUNNING_NOW), "queued": states.count(QUEUED),
                                        "max": self.max_runs, "queue_max": self.max_queued},
                               "process": _process_stats()}
        jvm = _jvm_stats()
        if jvm is not None:
            out["jvm"] = jvm
        return out

    def history(self, connector: str, limit: int = HISTORY) -> list[dict[str, Any]]:
        with self._lock:
            runs = list(self._history.get(connector, ()))
        return [r.to_json() for r in runs[-limit:]]

    def active(self) -> list[Run]:
        with self._lock:
            return list(self._active.values())

    def _remember(self, run: Run) -> None:
        runs = self._history.pop(run.connector, None) or deque(maxlen=HISTORY)
        runs.append(run)
        self._history[run.connector] = runs
        while len(self._history) > CONNECTORS:
            self._history.popitem(last=False)

    # --- running -----------------------------------------------------------------------------------

    def _execute(self, run: Run) -> None:
        if self._stopping.is_set():
            self._finish(run, NOT_RUN, EXIT_RETRIABLE, "the worker shut down before this run started; nothing was "
                                                       "read or written: run again once it is back")
            return
        token = _current.set(run)
        run.state, run.started_at = RUNNING_NOW, _now()
        try:
            worker = self.make_worker()
            _bind_thread(worker, run.connector)

            def reported(report) -> None:
                run.reports.append(report.to_json())
                run.emit({"report": report.to_json(), "summary": f"{run.connector} {report.summary()}"})

            reports = worker.run(run.connector, task=run.task, until_caught_up=run.until_caught_up,
                                 skip_missing_task=run.skip_missing_task, stop=self._stopping.is_set,
                                 on_report=reported)
            last = reports[-1] if reports else None
            if self._stopping.is_set() and run.until_caught_up and last is not None and last.outcome == "COMMITTED" \
                    and last.progressed:
                self._finish(run, INTERRUPTED, EXIT_RETRIABLE, f"the worker is shutting down: the run stopped after "
                                                               f"batch {last.batch_id}, before it caught up; the next "
                                                               "run goes on from there")
                return
            if reports:
                self._finish(run, SUCCEEDED, 0)
                return
            state = worker.get(run.connector)["target_state"]
            why = f"connector is {state}" if state != RUNNING else f"the connector has no task {run.task}"
            run.emit({"not_run": {"connector": run.connector, "task": run.task, "outcome": "NOT_RUN",
                                  "target_state": state, "reason": why},
                      "summary": f"{run.connector}: not run ({why})"})
            self._finish(run, NOT_RUN, 0)
        except LakeConnectError as e:
            self._finish(run, FAILED, e.exit_code, secrets.scrub(str(e)))
        except Exception as e:  # noqa: BLE001 - the run fails, the worker goes on
            from ingest.spark import jvm_exited

            status = jvm_exited()
            if status is not None:
                message = (f"the Spark driver's JVM stopped (exit status {status}) during the run; the worker's log "
                           "says why (a java.lang.OutOfMemoryError: raise spark.driver.memory). What was committed "
                           "stays committed and the next run resumes the batch; the worker exits so that it can "
                           "be started again")
                self._finish(run, FAILED, EXIT_RETRIABLE, message)
                if self.on_fatal is not None:
                    self.on_fatal(message)
                return
            log.error("run %s of connector %s failed:\n%s", run.id, run.connector,
                      secrets.scrub("".join(traceback.format_exception(e))))
            message = secrets.scrub(f"{type(e).__name__}: {e}".split("\n")[0])
            self._finish(run, FAILED, 1, f"unexpected failure: {message} (the worker's log has the trace)")
        finally:
            _current.reset(token)

    def _finish(self, run: Run, state: str, exit_code: int, error: str | None = None) -> None:
        run.state, run.ended_at, run.exit_code, run.error = state, _now(), exit_code, error
        with self._lock:
            self._active.pop(run.id, None)
        run.end(exit_code, error)

    # --- shutting down -----------------------------------------------------------------------------

    def stop(self, timeout: float) -> list[Run]:
        """Starts no more runs; runs until caught up stop after their current batch. Waits up to `timeout`
        seconds for the running ones, then ends the streams of those still running (their batches resume
        at the next run) and returns them."""
        self._stopping.set()
        done = threading.Event()

        def wait() -> None:
            self._pool.shutdown(wait=True, cancel_futures=False)
            done.set()

        threading.Thread(target=wait, name="run-shutdown", daemon=True).start()
        done.wait(timeout)
        left = [r for r in self.active() if r.state == RUNNING_NOW]
        for run in left:
            run.state, run.exit_code = INTERRUPTED, EXIT_RETRIABLE
            run.end(EXIT_RETRIABLE, "the worker shut down during this run's batch; what was committed stays "
                                    "committed and the next run resumes the batch")
        logging.getLogger("lakeconnect").removeHandler(self._handler)
        return left


def _process_stats() -> dict[str, int]:
    """This process's resident memory, threads and open files (from /proc; what is not there is left out), and
    the bytes Arrow's memory pool holds."""
    stats: dict[str, int] = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name == "VmRSS":
                    stats["rss_bytes"] = int(value.split()[0]) * 1024
                elif name == "Threads":
                    stats["threads"] = int(value)
        stats["open_files"] = len(os.listdir("/proc/self/fd"))
    except OSError:
        pass
    import pyarrow as pa

    stats["arrow_bytes"] = pa.total_allocated_bytes()  # Arrow's pool: part of the RSS, not Python objects
    return stats


def _jvm_stats() -> dict[str, Any] | None:
    """The Spark JVM's heap in use, threads and listener bus queues, if this process's session is up."""
    from ingest.spark import current_session

    spark = current_session()
    if spark is None:
        return None
    try:
        jvm = spark._jvm
        management = jvm.java.lang.management.ManagementFactory
        gauges = spark.sparkContext._jsc.sc().listenerBus().metrics().metricRegistry().getGauges()
        queues = {str(k).removeprefix("queue.").removesuffix(".size"): int(gauges.get(k).getValue())
                  for k in gauges.keySet().toArray() if str(k).endswith(".size")}
        return {"heap_used_bytes": int(management.getMemoryMXBean().getHeapMemoryUsage().getUsed()),
                "threads": int(management.getThreadMXBean().getThreadCount()), "listener_queues": queues}
    except Exception:  # noqa: BLE001 - a JVM going away: no figures rather than a failed health call
        return None


def _bind_thread(worker, connector: str) -> None:
    """This thread's Spark jobs go to the connector's pool (created on first use; FAIR between pools), and
    the session is this thread's active one, as it is the main thread's in a process of its own: what
    looks it up (the JVM functions' registration, Kafka's partitioner) would otherwise take the slower
    Python paths."""
    spark = worker.spark()
    spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)
    spark.sparkContext.setLocalProperty("spark.scheduler.pool", f"connector-{connector}"[:200])
