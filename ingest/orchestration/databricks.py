"""A connector as a Databricks job: the Jobs API 2.1 shape (`POST /api/2.1/jobs/create`), one python wheel
task per connector task calling this package's console script with `run NAME --task N`.

Only names, paths and options go into the definition, never a config value: the job reads the connector's
config from the lake's config store when it runs, as every `lakeconnect run` does.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from ingest.orchestration.specs import ConnectorSpec

PACKAGE = "lakeconnect"
ENTRY_POINT = "lakeconnect"  # [project.scripts] in pyproject.toml
CLUSTER_KEY = "lakeconnect"

# Airflow's presets as Quartz expressions (seconds first; one of day-of-month and day-of-week is "?").
_PRESETS = {"@hourly": "0 0 * * * ?", "@daily": "0 0 0 * * ?", "@weekly": "0 0 0 ? * SUN",
            "@monthly": "0 0 0 1 * ?", "@quarterly": "0 0 0 1 1/3 ?", "@yearly": "0 0 0 1 1 ?",
            "@annually": "0 0 0 1 1 ?"}


def quartz_cron(schedule: str | dt.timedelta | None) -> str | None:
    """The Quartz cron expression Databricks schedules take, or None when there is none to give."""
    if schedule is None:
        return None
    if isinstance(schedule, dt.timedelta):
        return _interval_cron(int(schedule.total_seconds()))
    text = schedule.strip()
    if text.lower() in _PRESETS:
        return _PRESETS[text.lower()]
    fields = text.split()
    if len(fields) != 5:
        return None
    minute, hour, dom, month, dow = fields
    if dow == "*":
        dow = "?"
    elif dom == "*":
        dom = "?"
    else:
        return None  # cron ORs day-of-month and day-of-week; Quartz cannot say that
    # Quartz numbers weekdays 1-7 from Sunday; cron 0-7 (0 and 7 are Sunday).
    dow = re.sub(r"\d+", lambda m: str(int(m.group()) % 7 + 1), dow) if dow != "?" else dow
    return f"0 {minute} {hour} {dom} {month} {dow}"


def _interval_cron(seconds: int) -> str | None:
    if seconds <= 0:
        return None
    if seconds < 60 and 60 % seconds == 0:
        return f"0/{seconds} * * * * ?"
    if seconds % 60 == 0 and seconds < 3600 and 60 % (seconds // 60) == 0:
        return f"0 0/{seconds // 60} * * * ?"
    if seconds % 3600 == 0 and seconds < 86400 and 24 % (seconds // 3600) == 0:
        return f"0 0 0/{seconds // 3600} * * ?"
    if seconds == 86400:
        return "0 0 0 * * ?"
    return None


def job_definition(spec: ConnectorSpec, *, wheel: str, worker: str | None = None,
                   existing_cluster_id: str | None = None, spark_version: str = "17.3.x-scala2.13",
                   node_type_id: str = "i3.xlarge", num_workers: int = 1, until_caught_up: bool = True,
                   timezone: str = "UTC") -> tuple[dict[str, Any], list[str]]:
    """The job and the notes worth telling its user (what could not be carried over)."""
    notes: list[str] = []
    base = (["--worker", worker] if worker else [])
    tasks = []
    for n in range(spec.tasks):
        parameters = base + ["run", spec.name, "--task", str(n), "--skip-missing-task"]
        parameters += ["--until-caught-up"] if until_caught_up else []
        task: dict[str, Any] = {
            "task_key": f"task-{n}",
            "description": f"lakeconnect connector '{spec.name}', task {n}",
            "python_wheel_task": {"package_name": PACKAGE, "entry_point": ENTRY_POINT, "parameters": parameters},
            "libraries": [{"whl": wheel}],
            # Databricks retries every failure alike; the runtime's RetriableError (exit code 75) is the
            # only one worth it, so retries are left to the person (a batch resumes exactly either way).
            "max_retries": 0,
        }
        if existing_cluster_id:
            task["existing_cluster_id"] = existing_cluster_id
        else:
            task["job_cluster_key"] = CLUSTER_KEY
        tasks.append(task)
    job: dict[str, Any] = {
        "name": f"lakeconnect-{spec.name}",
        "tags": {"lakeconnect_connector": spec.name},
        "max_concurrent_runs": 1,  # a second run of a task would only find its lease taken
        "tasks": tasks,
    }
    if not existing_cluster_id:
        job["job_clusters"] = [{"job_cluster_key": CLUSTER_KEY, "new_cluster": {
            "spark_version": spark_version, "node_type_id": node_type_id, "num_workers": num_workers}}]
    schedule = spec.schedule()
    if isinstance(schedule, str) and schedule.lower() == "@continuous":
        job["continuous"] = {"pause_status": "UNPAUSED"}
    elif schedule is not None:
        cron = quartz_cron(schedule)
        if cron:
            job["schedule"] = {"quartz_cron_expression": cron, "timezone_id": timezone, "pause_status": "UNPAUSED"}
        else:
            notes.append(f"the schedule {schedule!s} has no Quartz equivalent: the job has no schedule; add one")
    elif spec.kind == "sink" and spec.topics:
        notes.append("a sink that waits for its topics' new records in Airflow has no such trigger here: the job "
                     "has no schedule (set lakeconnect.schedule, or run it after the source's job)")
    return job, notes
