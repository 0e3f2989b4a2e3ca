"""The worker: connector lifecycle (create, pause, stop, delete…), offsets management (KIP-875) and runs.

What Kafka Connect's herder does for a cluster, done per call against the lake's state tables.
"""

from __future__ import annotations

import json
import logging
import socket
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from ingest.api import TaskContext
from ingest.config.configdef import Config, mask, secret_values, valid_table_name
from ingest.config.connector import CONNECTOR_CLASS, TASKS_MAX, ConnectorSetup, validate_connector
from ingest.config.providers import provider_problems
from ingest.config.worker import (CONFIGS_TABLE, LAKE_ROOT, LOCKS_DIR, OFFSET_STORAGE_TOPIC, RUNS_TABLE, STATUS_TABLE,
                                  load_worker, spark_settings, storage_options)
from ingest.errors import ConfigError, LakeConnectError, Problem, StateError
from ingest.orchestration.specs import MAINTENANCE_DAG, dag_id
from ingest.registry import Registry, default_registry
from ingest.config import secrets
from ingest.runtime.batches import abandon_pending, task_app_id, task_lease
from ingest.runtime.pipeline import Pipeline
from ingest.runtime.runner import BatchReport, BatchRunner
from ingest.state.stores import (CONNECTOR_TASK, FAILED, PAUSED, RUNNING, STOPPED, UNASSIGNED,
                                 Stores, state_uri)
from ingest.state.stores import COMMITTED, OffsetStore, TopicResetStore
from ingest.state.tables import canonical_json
from ingest.topics.backend import TopicBackend, open_topics

log = logging.getLogger("lakeconnect")


class TaskLogger(logging.LoggerAdapter):
    """Kafka Connect's log context: `[connector|task-N] message`."""

    def process(self, msg, kwargs):
        return f"[{self.extra['ctx']}] {msg}", kwargs


class Worker:
    def __init__(self, config: Config, registry: Registry | None = None, stores: Stores | None = None):
        """`stores`: state tables another Worker of this process opened (a long-running worker's runs share
        them, so each run reads only the files committed since the last; they take calls from several
        threads)."""
        self.config = config
        self.registry = registry or default_registry()
        problems = provider_problems(self.registry, config.originals)
        if problems:
            raise ConfigError(problems, source="the worker configuration")
        self.lake_root = str(config[LAKE_ROOT]).rstrip("/")
        self.storage_options = storage_options(config)
        self.stores = stores or Stores.open(self.lake_root, configs=config[CONFIGS_TABLE],
                                            offsets=config[OFFSET_STORAGE_TOPIC], status=config[STATUS_TABLE],
                                            runs=config[RUNS_TABLE], storage_options=self.storage_options)
        self.worker_id = socket.gethostname()
        self.topic_resets = TopicResetStore(state_uri(self.lake_root, f"{config[STATUS_TABLE]}-topic-resets"),
                                            self.storage_options)
        secrets.register(secret_values(config.originals))

    @classmethod
    def load(cls, path: str | None) -> Worker:
        """The worker a config file describes (None: $LAKECONNECT_WORKER, conf/worker.properties or defaults)."""
        return cls(load_worker(path))

    def topics(self, connector: Mapping[str, str] | None = None) -> TopicBackend:
        """Where topics live (`topic.backend`), with `connector`'s client overrides when given."""
        return open_topics(self.config.originals, self.lake_root, self.storage_options, connector)

    # --- Spark -------------------------------------------------------------------------------------

    def spark(self):
        from ingest.spark import get_spark

        return get_spark(spark_settings(self.config))

    # --- configs -----------------------------------------------------------------------------------

    def validate(self, raw: Mapping[str, str], *, source: str | None = None) -> ConnectorSetup:
        return validate_connector(raw, self.config, self.registry, source=source)

    def create(self, name: str, raw: Mapping[str, str], *, source: str | None = None) -> int:
        if self.stores.configs.get(name) is not None:
            raise ConfigError([Problem("name", f"connector '{name}' already exists; use `connectors update`")],
                              source=source)
        self._check_dag_id(name, source)
        _warn_unused(name, self.validate(raw, source=source))
        version = self.stores.configs.put(name, raw, RUNNING)
        self.stores.status.set(name, CONNECTOR_TASK, UNASSIGNED, worker_id=self.worker_id)
        return version

    def _check_dag_id(self, name: str, source: str | None) -> None:
        """Each connector has an Airflow DAG of its own: a name whose DAG id another connector's (or the
        maintenance DAG's) already is would shadow it, so it is refused."""
        wanted = dag_id(name)
        taken = {dag_id(other): other for other in self.stores.configs.list()}
        taken[MAINTENANCE_DAG] = "the lake's maintenance DAG"
        if wanted in taken:
            owner = taken[wanted]
            owner = owner if owner.startswith("the lake") else f"connector '{owner}'"
            raise ConfigError([Problem("name", f"'{name}' would have the Airflow DAG id '{wanted}', which is "
                                               f"{owner}'s; choose another name")], source=source)

    def update(self, name: str, raw: Mapping[str, str], *, source: str | None = None) -> int:
        _warn_unused(name, self.validate(raw, source=source))
        return self.stores.configs.put(name, raw)

    def delete(self, name: str) -> None:
        """Remove the config; offsets stay, so a connector re-created with the same name resumes. Its active
        topics go, as Kafka Connect's distributed herder forgets them: a connector re-created later starts with
        none."""
        self.stores.configs.delete(name)
        self.topic_resets.reset(name)

    def get(self, name: str, *, masked: bool = True) -> dict[str, Any]:
        found = self.stores.configs.require(name)
        config = found["config"]
        if masked:
            info = self.registry.find_connector(config.get(CONNECTOR_CLASS, ""))
            config = mask(config, info.cls.config_def() if info else None)
        found = dict(found, config=config)
        found["type"] = self._kind(found["config"])
        return found

    def _kind(self, config: Mapping[str, str]) -> str:
        info = self.registry.find_connector(config.get(CONNECTOR_CLASS, ""))
        return info.cls.kind if info else "unknown"

    def list(self) -> list[str]:
        return self.stores.configs.list()

    def set_target_state(self, name: str, state: str) -> None:
        self.stores.configs.set_target_state(name, state)
        self.stores.status.set(name, CONNECTOR_TASK, state, worker_id=self.worker_id)

    def restart(self, name: str, *, include_tasks: bool = False, only_failed: bool = False) -> list[int]:
        """Clear FAILED states so the next run starts afresh (target state RUNNING)."""
        self.stores.configs.require(name)
        statuses = self.stores.status.get(name)
        restarted = []
        for task, row in statuses.items():
            if task != CONNECTOR_TASK and not include_tasks:
                continue
            if only_failed and row["state"] != FAILED:
                continue
            self.stores.status.set(name, task, UNASSIGNED if task != CONNECTOR_TASK else RUNNING,
                                   worker_id=self.worker_id)
            restarted.append(task)
        return restarted

    def restart_task(self, name: str, task: int) -> bool:
        """Task `task`'s restart: what `restart(include_tasks=True)` does for each task, for this one (its
        state, a FAILED one's trace with it, goes back to UNASSIGNED; its next run starts afresh). False when
        the task has no state yet: it has never run, so there is nothing to clear."""
        self.stores.configs.require(name)
        if task not in self.stores.status.get(name):
            return False
        self.stores.status.set(name, task, UNASSIGNED, worker_id=self.worker_id)
        return True

    def active_topics(self, name: str) -> list[str]:
        """KIP-558's active topics: those connector `name`'s committed batches wrote (a source) or read (a
        sink) since its set was last reset, as the runs table's stats name them."""
        since = self.topic_resets.last(name)
        topics: set[str] = set()
        for row in self.stores.runs.history(name):
            if row["state"] == COMMITTED and (since is None or row["written_at"] > since):
                topics.update(json.loads(row["stats"] or "{}").get("topics") or [])
        return sorted(topics)

    def reset_active_topics(self, name: str) -> None:
        self.topic_resets.reset(name)

    def status(self, name: str, *, runs: int = 0) -> dict[str, Any]:
        """Kafka's connector status, plus the last batch and, when asked, the metrics of the last `runs` batches."""
        found = self.stores.configs.require(name)
        rows = self.stores.status.get(name)
        conn = rows.get(CONNECTOR_TASK)
        target = found["target_state"]
        conn_state = target if target in (PAUSED, STOPPED) else (conn["state"] if conn else UNASSIGNED)
        tasks = []
        for task in sorted(t for t in rows if t != CONNECTOR_TASK):
            r = rows[task]
            entry = {"id": task, "state": r["state"] if target == RUNNING else target, "worker_id": r["worker_id"]}
            if r["trace"]:
                entry["trace"] = r["trace"]
            tasks.append(entry)
        history = self.stores.runs.history(name)
        last = history[-1] if history else None
        connector = {"state": conn_state, "worker_id": conn["worker_id"] if conn else ""}
        if conn and conn["trace"] and conn_state == FAILED:  # Kafka's status shows the connector's trace too
            connector["trace"] = conn["trace"]
        out = {"name": name, "connector": connector, "tasks": tasks, "type": self._kind(found["config"])}
        if last:
            out["last_run"] = {k: last[k] for k in ("task", "batch_id", "state", "stats", "error")}
            out["last_run"]["ended_at"] = str(last["ended_at"] or last["written_at"])
        if runs:
            latest = sorted(history, key=lambda r: r["written_at"])[-runs:]
            out["runs"] = [{"task": r["task"], "batch_id": r["batch_id"], "state": r["state"],
                            "started_at": str(r["started_at"]), "ended_at": str(r["ended_at"] or ""),
                            **json.loads(r["stats"] or "{}"), **({"error": r["error"]} if r["error"] else {})}
                           for r in latest]
        return out

    # --- offsets (KIP-875) -------------------------------------------------------------------------

    def _offsets_key(self, name: str, config: Mapping[str, str]) -> tuple[str, OffsetStore]:
        if self._kind(config) == "sink":
            return f"connect-{name}", self.stores.offsets
        table = config.get("offsets.storage.topic")
        problem = valid_table_name("offsets.storage.topic", table) if table else None
        if problem:  # a config stored before names were checked
            raise StateError(f"connector '{name}': {problem}; update its config with a valid offsets.storage.topic")
        store = OffsetStore(state_uri(self.lake_root, table), self.storage_options) if table else self.stores.offsets
        return name, store

    def offsets(self, name: str) -> list[dict[str, Any]]:
        """`GET /connectors/{name}/offsets`: [{"partition": …, "offset": …}]."""
        found = self.stores.configs.get(name)
        config = found["config"] if found else {}
        key, store = self._offsets_key(name, config)
        return [{"partition": e.partition, "offset": e.offset} for e in store.committed(key).values()]

    def _require_stopped(self, name: str, action: str) -> dict[str, Any]:
        found = self.stores.configs.require(name)
        if found["target_state"] != STOPPED:
            raise StateError(f"connector '{name}' is {found['target_state']}; offsets can only be {action} when it "
                             f"is STOPPED: run `lakeconnect connectors stop {name}` first")
        return found

    def alter_offsets(self, name: str, entries: list[Mapping[str, Any]]) -> int:
        found = self._require_stopped(name, "altered")
        problems = []
        changes = {}
        sink = self._kind(found["config"]) == "sink"
        for i, e in enumerate(entries):
            if not isinstance(e, Mapping) or not isinstance(e.get("partition"), Mapping) or "offset" not in e:
                problems.append(Problem(f"offsets[{i}]", 'expected {"partition": {…}, "offset": {…} or null}'))
                continue
            p, o = e["partition"], e["offset"]
            if sink and (set(p) != {"kafka_topic", "kafka_partition"} or
                         (o is not None and (set(o) != {"kafka_offset"} or not isinstance(o["kafka_offset"], int)))):
                problems.append(Problem(f"offsets[{i}]", 'sink offsets look like {"partition": {"kafka_topic": …, '
                                        '"kafka_partition": N}, "offset": {"kafka_offset": N}}'))
                continue
            changes[canonical_json(p)] = o
        if problems:
            raise ConfigError(problems)
        abandon_pending(self.stores.runs, name, "offsets were altered or reset")
        key, store = self._offsets_key(name, found["config"])
        if sink:  # the consumer group first: a run killed in between finds the lake's old offsets, which win
            topics, positions = self.topics(found["config"]), {}
            for p, o in changes.items():
                tp = json.loads(p)
                positions[(tp["kafka_topic"], tp["kafka_partition"])] = None if o is None else o["kafka_offset"]
            topics.forget_group_offsets(key, [tp for tp, o in positions.items() if o is None])
            topics.commit_group(key, {tp: o for tp, o in positions.items() if o is not None})
        store.commit(key, changes, task=-1, batch_id=0)
        return len(changes)

    def reset_offsets(self, name: str) -> int:
        found = self._require_stopped(name, "reset")
        key, store = self._offsets_key(name, found["config"])
        current = store.committed(key)
        if self._kind(found["config"]) == "sink":  # as Kafka Connect resets a sink: its group goes (first)
            self.topics(found["config"]).delete_group(key)
        abandon_pending(self.stores.runs, name, "offsets were altered or reset")
        # With nothing to reset, a marker row still records that a person chose to start over.
        store.commit(key, {p: None for p in current} or {"null": None}, task=-1, batch_id=0)
        return len(current)

    # --- running -----------------------------------------------------------------------------------

    def run(self, name: str, *, task: int | None = None, until_caught_up: bool = False,
            progress: Callable[[str], None] | None = None, max_batches: int = 10_000,
            skip_missing_task: bool = False, stop: Callable[[], bool] | None = None,
            on_report: Callable[[BatchReport], None] | None = None) -> list[BatchReport]:
        """Batches of connector `name`'s tasks (every task, or `task`): one each, or until one finds nothing
        new; `stop()` true ends a run until caught up after its current batch (a worker shutting down), and
        `on_report` gets each batch's report as it ends."""
        found = self.stores.configs.require(name)
        if found["target_state"] in (PAUSED, STOPPED):
            log.info(f"[{name}] connector is {found['target_state']}; nothing to do "
                     f"(`lakeconnect connectors resume {name}` to run it again)")
            return []
        raw = found["config"]
        setup = self.validate(raw, source=f"connector '{name}'")
        secrets.register(setup.config.resolved_secrets(raw))
        _warn_unused(name, setup)
        connector = setup.connector()
        try:
            task_configs = connector.task_configs(setup.config[TASKS_MAX])[: setup.config[TASKS_MAX]]
        except Exception as e:  # the connector could not plan its tasks (e.g. its database is unreachable)
            trace = str(e) if isinstance(e, LakeConnectError) else "".join(traceback.format_exception(e))
            self._set_status(name, CONNECTOR_TASK, FAILED, secrets.scrub(trace))
            raise
        task_ids = range(len(task_configs)) if task is None else [task]
        if task is not None and task >= len(task_configs) and skip_missing_task:
            # tasks.max is a ceiling: a scheduler's slot beyond the tasks the connector made has nothing to do.
            log.info(f"[{name}] connector has {len(task_configs)} task(s); task {task} has nothing to do")
            return []
        if task is not None and task >= len(task_configs):
            raise ConfigError([Problem(TASKS_MAX, f"task {task} does not exist; connector '{name}' has "
                                                  f"{len(task_configs)} task(s)")])
        locks = self.config[LOCKS_DIR]
        leases = [task_lease(self.lake_root, name, t, locks).acquire(f"connector '{name}' task {t}") for t in task_ids]
        reports: list[BatchReport] = []
        try:
            self._set_status(name, CONNECTOR_TASK, RUNNING)
            pipeline = Pipeline.build(setup)
            for t in task_ids:
                reports += self._run_task(setup, task_configs, t, pipeline, until_caught_up, progress, max_batches,
                                          stop, on_report)
        finally:
            for lease in leases:
                lease.release()
        return reports

    def _run_task(self, setup, task_configs, t, pipeline, until_caught_up, progress, max_batches, stop, on_report):
        name = setup.name
        logger = TaskLogger(log, {"ctx": f"{name}|task-{t}"})
        merged = {**setup.config.originals, **task_configs[t]}
        task_config = Config(setup.config.definition, {**dict(setup.config), **_typed(setup, task_configs[t])}, merged)
        context = TaskContext(name, t, self.config, self.spark, logger, self.lake_root, self.storage_options,
                              app_id=task_app_id(name, t, sink=setup.kind == "sink"))
        task = setup.info.cls.task_class(task_config, context)
        runner = BatchRunner(setup, self.stores, self.lake_root, self.storage_options, pipeline, logger, progress,
                             topics=self.topics(setup.config.originals))
        reports = []
        try:
            self._set_status(name, t, RUNNING)
            for _ in range(max_batches):
                if setup.kind == "sink":
                    report = runner.run_sink(task, t, len(task_configs))
                else:
                    key, store = self._offsets_key(name, setup.raw)
                    report = runner.run_source(task, t, key, store)
                logger.info(report.summary())
                reports.append(report)
                if on_report is not None:
                    on_report(report)
                if not until_caught_up or report.outcome != "COMMITTED" or not report.progressed:
                    break
                if stop is not None and stop():
                    logger.info("the worker is shutting down: no further batch in this run (the next run goes on)")
                    break
        except LakeConnectError as e:
            self._set_status(name, t, FAILED, secrets.scrub(str(e)))
            raise
        except Exception as e:
            trace = secrets.scrub("".join(traceback.format_exception(e)))
            self._set_status(name, t, FAILED, trace)
            raise
        finally:
            task.close()
        return reports

    def _set_status(self, name: str, task: int, state: str, trace: str | None = None) -> None:
        current = self.stores.status.get(name).get(task)
        if current and current["state"] == state and not trace and not current["trace"]:
            return  # unchanged: no commit
        self.stores.status.set(name, task, state, trace, self.worker_id)


def _typed(setup: ConnectorSetup, overrides: Mapping[str, str]) -> dict[str, Any]:
    if not overrides:
        return {}
    typed, problems = setup.config.definition.validate({**setup.config.originals, **overrides}, strict=False)
    if problems:
        raise ConfigError(problems, source=f"task config of connector '{setup.name}'")
    return {k: typed[k] for k in overrides if k in typed}


def _warn_unused(name: str, setup: ConnectorSetup) -> None:
    """Kafka Connect's "supplied but isn't a known config", for each key nothing declares (a key's control
    characters escaped: a key is whatever a config file or a REST body holds)."""
    for warning in setup.warnings:
        key = json.dumps(warning.key, ensure_ascii=False)[1:-1] if warning.key else warning.key
        log.warning(f"[{name}] {Problem(key, warning.message)}")
