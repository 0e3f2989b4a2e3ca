"""The Airflow DAG factory: one DAG per connector (`lakeconnect__<name>`), built from connector specs
without Spark. Each Airflow task runs `python -m ingest ...` in a process of its own (the project's
interpreter, local Spark or the cluster the worker's `spark.master` names) and streams its output to the
task log; with a long-running worker named ($LAKECONNECT_WORKER_URL or `worker.url`), a task's run is sent
to it instead, and the worker's log lines and reports stream into the task log the same way.

DAG `prepare` checks the trigger's params, applies the connector file and carries out pause, resume, reset
or the snapshot signal; `task-<n>` runs connector task n. Exit code 75 (RetriableError), 3 (another run
holds the task's lease) and a killed process are retried; any other failure fails the task at once.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import subprocess
from collections.abc import Callable
from typing import Any

from airflow.sdk import DAG, Asset, AssetAlias, AssetAny, Param, get_current_context, task
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from ingest.config.configdef import secret_values
from ingest.config.connector import valid_schedule
from ingest.config.worker import MAINTENANCE_SCHEDULE
from ingest.orchestration.specs import (MAINTENANCE_DAG, ConnectorSpec, Environment,
                                        dag_id, load_specs, topic_uri)

log = logging.getLogger("lakeconnect.airflow")

RUN_ONCE, UNTIL_CAUGHT_UP, SNAPSHOT = "run_once", "until_caught_up", "incremental_snapshot"
PAUSE, RESUME, RESET = "pause", "resume", "reset_offsets"
ACTIONS = (UNTIL_CAUGHT_UP, RUN_ONCE, SNAPSHOT, PAUSE, RESUME, RESET)
RUNS = (UNTIL_CAUGHT_UP, RUN_ONCE, SNAPSHOT)
RETRIABLE_EXIT_CODES = (75, 3)  # RetriableError (EX_TEMPFAIL); another run holds the lease
START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def topic_asset(environment: Environment, topic: str) -> Asset:
    uri = topic_uri(environment.lake_root, topic)
    return Asset(name=uri, uri=uri, group="lakeconnect-topic")


TABLE_NAME = r"^[^.,\s]{1,64}\.[^.,\s]{1,64}$"
"""An incremental snapshot's table: <db>.<table>, each a MySQL identifier (at most 64 characters), no comma
(the CLI takes them comma-separated)."""
MAX_TABLES = 1000


def params(spec: ConnectorSpec) -> dict[str, Param]:
    return {
        "action": Param(UNTIL_CAUGHT_UP, type="string", enum=list(ACTIONS), title="Action",
                        description="until_caught_up (what a scheduled run does), run_once (one batch per task), "
                                    "incremental_snapshot (MySQL CDC: signal `tables`, then run), pause, resume, "
                                    "reset_offsets (needs `confirm`)"),
        "confirm": Param("", type="string", title="Confirm",
                         description=f"reset_offsets only: type the connector's name ({spec.name}) to confirm"),
        "tables": Param([], type="array", items={"type": "string", "pattern": TABLE_NAME}, maxItems=MAX_TABLES,
                        title="Tables", description="incremental_snapshot only: <db>.<table> names to snapshot"),
    }


class CliFailure(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def run_cli(environment: Environment, *args: str, echo: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Run `python -m ingest ARGS`, streaming every line to the task log; the JSON reports it printed.
    CliFailure (exit code and the CLI's own error line) when it fails."""
    echo = echo or log.info
    command = environment.command(*args)
    echo("$ " + " ".join(command))
    reports: list[dict[str, Any]] = []
    errors: list[str] = []
    with subprocess.Popen(command, cwd=environment.home, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, bufsize=1, env={**os.environ, "PYTHONUNBUFFERED": "1"}) as process:
        assert process.stdout is not None
        for line in process.stdout:
            line = line.rstrip("\n")
            echo(line)
            if line.startswith("{") and '"outcome"' in line:
                try:
                    reports.append(json.loads(line))
                except ValueError:
                    pass
            elif line.startswith("error: ") or (errors and line.startswith("  ")):
                errors.append(line.removeprefix("error: "))
        code = process.wait()
    if code != 0:
        raise CliFailure(code, "\n".join(errors) or f"`{' '.join(args[:2])}` exited with code {code}")
    return reports


def run_on_worker(url: str, name: str, task: int, until_caught_up: bool,
                  echo: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """The task's run, by the long-running worker at `url` (no process, no JVM here): its log lines and
    reports streamed to the task log as a CLI run's are; CliFailure with the run's exit code when it fails
    (a worker that is down: 75, retried)."""
    from ingest.cli.delegate import run_remote
    from ingest.config.configdef import redact_url

    echo = echo or log.info
    echo(f"$ lakeconnect run {name} --task {task} --skip-missing-task --json"
         f"{' --until-caught-up' if until_caught_up else ''} (on the worker at {redact_url(url)})")
    result = run_remote(url, name, task=task, until_caught_up=until_caught_up, skip_missing_task=True, on_log=echo,
                        on_result=lambda report, summary: echo(json.dumps(report)))
    if result.exit_code != 0:
        raise CliFailure(result.exit_code, result.error or f"the run exited with code {result.exit_code}")
    return result.reports


def airflow_error(failure: CliFailure, what: str) -> AirflowException:
    """Retriable failures raise AirflowException (Airflow retries); the others AirflowFailException (not)."""
    if failure.code in RETRIABLE_EXIT_CODES or failure.code < 0:
        how = f"killed by signal {-failure.code}" if failure.code < 0 else f"exit code {failure.code}"
        return AirflowException(f"{what} failed ({how}), retriable: {failure}")
    return AirflowFailException(f"{what} failed (exit code {failure.code}), not retried: {failure}")


def _mask(spec: ConnectorSpec) -> None:
    """Airflow's log masker learns the connector's secrets before any output reaches the task log."""
    try:
        from airflow.sdk.log import mask_secret
    except ImportError:  # pragma: no cover - older task SDKs
        return
    for value in secret_values(spec.config):
        mask_secret(value)


def check_trigger(spec: ConnectorSpec, values: dict[str, Any]) -> str:
    """The action a run's params ask for; AirflowFailException, before anything changed, when they do not fit
    this connector. (Types and the action's name Airflow checked already, when the run was created.)"""
    unknown = sorted(k for k in values if k not in ("action", "confirm", "tables"))
    if unknown:  # as Kafka Connect does with keys nobody declares: accepted, said
        log.warning("trigger params %s are not known here and are ignored (known: action, confirm, tables)",
                    ", ".join(repr(k[:100]) for k in unknown[:10]))
    action = values.get("action") or UNTIL_CAUGHT_UP
    if action not in ACTIONS:
        raise AirflowFailException(f"unknown action '{str(action)[:100]}'; expected one of {', '.join(ACTIONS)}")
    tables = values.get("tables") or []
    if not isinstance(tables, list) or not all(isinstance(t, str) for t in tables):
        raise AirflowFailException(f"tables must be a list of <db>.<table> names, got {json.dumps(tables)[:200]}")
    if len(tables) > MAX_TABLES:
        raise AirflowFailException(f"tables names {len(tables)} tables; at most {MAX_TABLES} per trigger. "
                                   "Nothing was changed")
    if action == RESET and (values.get("confirm") or "").strip() != spec.name:
        raise AirflowFailException(f"reset_offsets starts connector '{spec.name}' over from the beginning; to "
                                   f"confirm, trigger again with confirm set to '{spec.name}'. Nothing was changed")
    if action == SNAPSHOT:
        if spec.kind != "source" or not spec.signals:
            raise AirflowFailException(
                f"connector '{spec.name}' ({spec.connector_class}) takes no incremental snapshot signals: that is "
                "for MySQL CDC connectors with signal.data.collection set. Nothing was changed")
        bad = [t for t in tables if not re.fullmatch(TABLE_NAME, t)]
        if not tables or bad:
            raise AirflowFailException("incremental_snapshot needs tables: a list of <db>.<table> names, each "
                                       "name at most 64 characters and without a comma"
                                       + (f" (not such names: {', '.join(t[:100] for t in bad[:5])})" if bad else "")
                                       + ". Nothing was changed")
    elif tables:
        raise AirflowFailException(f"tables is only for incremental_snapshot, not for {action}. Nothing was changed")
    if spec.file is not None and not spec.file.exists():
        raise AirflowFailException(f"connector file {spec.file} is gone; the DAG goes away at the next parse. "
                                   "Nothing was changed")
    return action


def prepare(environment: Environment, spec: ConnectorSpec) -> str:
    context = get_current_context()
    action = check_trigger(spec, dict(context["params"]))
    _mask(spec)
    name = spec.name
    try:
        if spec.file is not None:
            run_cli(environment, "connectors", "apply", str(spec.file))
        else:
            run_cli(environment, "connectors", "status", name)  # still there? (exit 2 naming the known ones)
        if action == PAUSE:
            run_cli(environment, "connectors", "pause", name)
        elif action == RESUME:
            run_cli(environment, "connectors", "resume", name)
        elif action == RESET:
            reset(environment, name)
        elif action == SNAPSHOT:
            run_cli(environment, "signal", name, "--incremental-snapshot", ",".join(context["params"]["tables"]))
    except CliFailure as failure:
        raise airflow_error(failure, f"{action} of connector '{name}'") from None
    return action


def reset(environment: Environment, name: str) -> None:
    """KIP-875 wants the connector STOPPED: stop it, reset, and put it back as it was (PAUSED stays paused)."""
    lines: list[str] = []
    run_cli(environment, "connectors", "status", name, echo=lambda line: (lines.append(line), log.info(line)))
    start = lines.index("{") if "{" in lines else 0  # the JSON document, after any log line
    state = json.loads("\n".join(lines[start:]))["connector"]["state"]
    if state != "STOPPED":
        run_cli(environment, "connectors", "stop", name)
    try:
        run_cli(environment, "offsets", "reset", name)
    finally:
        if state == "PAUSED":
            run_cli(environment, "connectors", "pause", name)
        elif state != "STOPPED":
            run_cli(environment, "connectors", "resume", name)


def run_task(environment: Environment, spec: ConnectorSpec, n: int, action: str | None,
             alias: AssetAlias | None) -> list[dict[str, Any]]:
    if action not in RUNS:
        raise AirflowSkipException(f"action {action}: no batch to run")
    _mask(spec)
    args = ["run", spec.name, "--task", str(n), "--skip-missing-task", "--json"]
    if action in (UNTIL_CAUGHT_UP, SNAPSHOT):
        args.append("--until-caught-up")
    try:
        if environment.worker_url:
            reports = run_on_worker(environment.worker_url, spec.name, n, action in (UNTIL_CAUGHT_UP, SNAPSHOT))
        else:
            reports = run_cli(environment, *args)
    except CliFailure as failure:
        raise airflow_error(failure, f"connector '{spec.name}' task {n}") from None
    if alias is not None:
        written: dict[str, int] = {}
        for report in reports:
            for topic in report.get("topics") or []:
                written[topic] = written.get(topic, 0) + int(report.get("records") or 0)
        events = get_current_context()["outlet_events"][alias]
        for topic, records in sorted(written.items()):
            # New records in a topic: the DAGs of sinks that consume it are scheduled on this asset.
            events.add(topic_asset(environment, topic), extra={"connector": spec.name, "task": n})
            log.info(f"topic {topic}: new records (asset {topic_uri(environment.lake_root, topic)})")
    return reports


def schedule_of(environment: Environment, spec: ConnectorSpec):
    schedule = spec.schedule()
    if schedule is not None or spec.explicitly_unscheduled():
        return schedule
    if spec.kind == "sink" and spec.topics:
        assets = [topic_asset(environment, t) for t in spec.topics]
        return assets[0] if len(assets) == 1 else AssetAny(*assets)
    return None


def doc(spec: ConnectorSpec, schedule: Any) -> str:
    # Names and paths only: a config value could be a secret.
    where = f"`{spec.file}` (applied before each run)" if spec.file else "the lake's config store"
    return (f"**lakeconnect connector `{spec.name}`** — {spec.kind}, `{spec.connector_class}`, "
            f"{spec.tasks} task(s), config from {where}.\n\nSchedule: `{schedule}`. Trigger with params "
            "`action` (until_caught_up, run_once, incremental_snapshot, pause, resume, reset_offsets), `confirm` "
            "(the connector's name, for reset_offsets) and `tables` (for incremental_snapshot).")


def connector_dag(environment: Environment, spec: ConnectorSpec) -> DAG:
    schedule = schedule_of(environment, spec)
    default_args = {"retries": 3, "retry_delay": dt.timedelta(seconds=30), "retry_exponential_backoff": True,
                    "max_retry_delay": dt.timedelta(minutes=10)}
    with DAG(dag_id(spec.name), dag_display_name=f"lakeconnect: {spec.name}", schedule=schedule, start_date=START,
             catchup=False, max_active_runs=1, params=params(spec), default_args=default_args,
             tags=["lakeconnect", spec.kind], doc_md=doc(spec, schedule),
             description=f"lakeconnect {spec.kind} connector {spec.name}") as dag:
        # Closures, not task arguments: arguments are rendered (and shown) by Airflow, and the spec holds
        # the connector's config.
        def prepare_connector() -> str:
            return prepare(environment, spec)

        prepared = task(task_id="prepare")(prepare_connector)()
        alias = AssetAlias(f"lakeconnect-source:{spec.name}") if spec.kind == "source" else None
        for n in range(spec.tasks):
            def run_connector_task(action: str, n: int = n) -> list[dict[str, Any]]:
                return run_task(environment, spec, n, action, alias)

            pool = {"pool": spec.pool} if spec.pool else {}
            task(task_id=f"task-{n}", outlets=[alias] if alias else [], **pool)(run_connector_task)(prepared)
    return dag




def run_maintenance(environment: Environment) -> list[dict[str, Any]]:
    reports: list[dict[str, Any]] = []

    def echo(line: str) -> None:
        log.info(line)
        if line.startswith("{") and '"kind"' in line:
            try:
                reports.append(json.loads(line))
            except ValueError:
                pass

    try:
        run_cli(environment, "maintenance", "run", "--json", echo=echo)
    except CliFailure as failure:
        raise airflow_error(failure, "lake maintenance") from None
    return reports


def maintenance_dag(environment: Environment) -> DAG:
    """`lakeconnect maintenance run` on the worker's schedule (`maintenance.schedule`); one run at a time.
    A run that lost a race to a batch (exit 75) is retried; batches go on meanwhile."""
    text = environment.maintenance_schedule.strip()
    schedule = None if text.lower() in ("none", "") else text
    default_args = {"retries": 3, "retry_delay": dt.timedelta(minutes=2), "retry_exponential_backoff": True}
    with DAG(MAINTENANCE_DAG, dag_display_name="lakeconnect: maintenance", schedule=schedule, start_date=START,
             catchup=False, max_active_runs=1, default_args=default_args, tags=["lakeconnect", "maintenance"],
             doc_md=(f"**lakeconnect lake maintenance** of `{environment.lake_root}`: topic retention and "
                     "compaction, merged small files, Delta checkpoints, vacuum and state history (docs/"
                     f"operations.md, \"Maintenance\"). Schedule: `{schedule}` (worker key `maintenance.schedule`)."),
             description="lakeconnect maintenance of the lake's topic and state tables") as dag:
        def maintain() -> list[dict[str, Any]]:
            return run_maintenance(environment)

        task(task_id="maintain")(maintain)()
    return dag


def build_dags(environment: Environment | None = None) -> dict[str, DAG]:
    """Every connector's DAG, and the lake's maintenance DAG; a connector that cannot have one is logged
    and left out."""
    environment = environment or Environment.from_env()
    specs, problems = load_specs(environment)
    for problem in problems:
        log.warning(problem)
    dags: dict[str, DAG] = {}
    for spec in specs.values():  # one connector's DAG failing never takes the others with it
        wanted = dag_id(spec.name)
        if wanted in dags:
            log.warning(f"connector '{spec.name}' has the DAG id {wanted} of another connector; it is left out "
                        "(rename one of them)")
            continue
        try:
            dags[wanted] = connector_dag(environment, spec)
        except Exception as e:  # noqa: BLE001 - Airflow's own checks (an id too long, ...) raise their types
            log.warning(f"connector '{spec.name}' cannot have a DAG and is left out: {type(e).__name__}: {e}")
    problem = valid_schedule(MAINTENANCE_SCHEDULE, environment.maintenance_schedule)
    if problem and environment.maintenance_schedule.strip().lower() != "none":
        log.warning(f"worker key {MAINTENANCE_SCHEDULE}: {problem}; the maintenance DAG is left out")
    elif MAINTENANCE_DAG in dags:
        log.warning(f"a connector named 'maintenance' has the DAG id {MAINTENANCE_DAG}; the maintenance DAG is "
                    "left out (run `lakeconnect maintenance run` from another scheduler, or rename the connector)")
    else:
        dags[MAINTENANCE_DAG] = maintenance_dag(environment)
    return dags
