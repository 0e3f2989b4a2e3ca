"""Fixtures of the cluster tests: one Spark standalone cluster for the session, worker files pointing at
it, and the evidence that a run's tasks ran on the cluster's executors.

Every test of this directory is marked `serial` (each module sets it): the cluster's two executors take
both cores of a small machine, so these tests run in the one process of the serial part, never next to
pytest-xdist workers, and only one cluster runs at a time.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import cli, cli_here, write_worker
from tests.services.spark_cluster import HOST, SparkCluster

# What one application may take: both workers' single cores, 1g of each worker's 2g.
CLUSTER_SETTINGS = {
    "spark.executor.memory": "1g",
    "spark.cores.max": "2",
    "spark.driver.host": HOST,
    "spark.driver.bindAddress": HOST,
}
TASK_LINE = re.compile(r"Executor: Finished task \S+ in stage \S+ \(TID \d+\)")


@pytest.fixture(scope="session")
def standalone(tmp_path_factory):
    """The running cluster (master and two workers), stopped at the end of the session."""
    cluster = SparkCluster.start(tmp_path_factory.mktemp("spark-cluster"))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def spark_cluster(standalone) -> str:
    """The master URL of the session's Spark standalone cluster, e.g. spark://127.0.0.1:40123."""
    return standalone.url


def cluster_worker(path: Path, lake: Path, master: str, **extra: str) -> Path:
    """A worker file whose runs drive `master`; the lake's path is absolute, as executors need it."""
    assert lake.is_absolute(), lake
    return write_worker(path, lake, **{"spark.master": master, **CLUSTER_SETTINGS, **extra})


def create_connector(worker: Path, base: Path, config: dict) -> str:
    """Create connector `config["name"]` through the CLI from a JSON file under `base`; its name."""
    path = base / f"{config['name']}.json"
    path.write_text(json.dumps(config))
    r = cli_here("connectors", "create", str(path), worker=worker)
    assert r.returncode == 0, r.stdout + r.stderr
    return config["name"]


@dataclass(frozen=True)
class ClusterRun:
    """A CLI run and the applications it submitted to the cluster."""

    result: subprocess.CompletedProcess
    apps: list[dict]
    tasks_by_executor: dict[str, int]


def app_ids(cluster: SparkCluster) -> set[str]:
    status = cluster.status()
    return {a["id"] for a in status.get("activeapps", []) + status.get("completedapps", [])}


def finished_apps(cluster: SparkCluster, before: set[str], wait: float = 30.0) -> list[dict]:
    """The applications not in `before`, once the master has moved them all to its completed list (it
    learns that a driver ended a moment after the driver's process exits)."""
    deadline = time.monotonic() + wait
    while True:
        status = cluster.status()
        active = [a for a in status.get("activeapps", []) if a["id"] not in before]
        done = [a for a in status.get("completedapps", []) if a["id"] not in before]
        if not active or time.monotonic() > deadline:
            return done
        time.sleep(0.5)


def executor_tasks(cluster: SparkCluster, app_id: str) -> dict[str, int]:
    """Tasks each executor of `app_id` finished, counted in its stderr in the workers' work dirs."""
    found = {}
    for work in cluster.work_dirs():
        for stderr in sorted((work / app_id).glob("*/stderr")):
            found[f"{work.parent.name}/{stderr.parent.name}"] = len(TASK_LINE.findall(stderr.read_text()))
    return found


def run_on_cluster(cluster: SparkCluster, *args: str, worker: Path, env: dict[str, str] | None = None,
                   stdin: str | None = None, timeout: int = 600) -> ClusterRun:
    """Run the CLI with `args`, a driver of its own on the cluster; fails unless it exits 0, its
    application finished on the master, it had an executor on every worker, and its executors finished
    tasks (their logs in the workers' work dirs say so)."""
    before = app_ids(cluster)
    r = cli(*args, worker=worker, env=env, stdin=stdin, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    apps = finished_apps(cluster, before)
    assert apps, f"`{' '.join(args)}` submitted no application to {cluster.url}: {cluster.status()}"
    assert all(a["state"] == "FINISHED" for a in apps), apps
    tasks: dict[str, int] = {}
    for app in apps:
        tasks.update({f"{app['id']}/{k}": v for k, v in executor_tasks(cluster, app["id"]).items()})
    assert sum(tasks.values()) > 0, f"no executor of {[a['id'] for a in apps]} finished a task: {tasks}"
    workers = {key.split("/")[1] for key in tasks}
    assert workers == {w.parent.name for w in cluster.work_dirs()}, f"executors only on {workers}: {tasks}"
    return ClusterRun(r, apps, tasks)
