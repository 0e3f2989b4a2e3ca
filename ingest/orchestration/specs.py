"""What a scheduler needs to know about each connector, read without Spark and without the plugins: the
connector files of a directory (Kafka Connect's JSON or .properties) and the connectors in the config store.

Nothing here imports pyspark or a plugin: the connector's kind is Kafka Connect's rule (a sink names
`topics` or `topics.regex`), its task count is `tasks.max`, its schedule comes from the config keys.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.config.connector import POOL, SCHEDULE, TASKS_MAX, TOPICS, TOPICS_REGEX, valid_pool, valid_schedule
from ingest.config.loader import load_connector_file, load_properties_file
from ingest.cli.delegate import WORKER_URL_ENV
from ingest.config.worker import (CONFIGS_TABLE, FILE_CONNECTORS_ENABLE, LAKE_ROOT, MAINTENANCE_SCHEDULE, MSK_DEFAULTS,
                                  WORKER_ENV, WORKER_URL, parse_worker, storage_options)
from ingest.errors import ConfigError

DAG_PREFIX = "lakeconnect__"
MAINTENANCE_DAG = f"{DAG_PREFIX}maintenance"


def dag_id(name: str) -> str:
    """The Airflow DAG id of connector `name`: Airflow allows letters, digits, '_', '.' and '-' in it."""
    return DAG_PREFIX + re.sub(r"[^A-Za-z0-9_.-]", "_", name)

log = logging.getLogger("lakeconnect.orchestration")

PROJECT = Path(__file__).resolve().parents[2]
HOME_ENV = "LAKECONNECT_HOME"            # the project directory: subprocesses run there (relative lake.root)
CONNECTORS_ENV = "LAKECONNECT_CONNECTORS_DIR"
PYTHON_ENV = "LAKECONNECT_PYTHON"        # the interpreter that has lakeconnect (Airflow may live elsewhere)
POLL_INTERVAL_MS = "poll.interval.ms"


@dataclass(frozen=True)
class Environment:
    """Where things are, as the scheduler sees them; fixed when the DAG file is parsed."""

    home: Path
    worker_file: Path | None
    connectors_dir: Path
    python: str
    lake_root: str
    configs_table: str
    storage_options: dict[str, str] = field(repr=False)  # may hold credentials: never shown
    file_connectors: bool = False
    maintenance_schedule: str = "0 3 * * *"
    worker_url: str | None = field(default=None, repr=False)  # runs go to this worker (may hold a password)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Environment:
        env = os.environ if env is None else env
        home = Path(env.get(HOME_ENV) or PROJECT).resolve()
        worker_file = Path(env[WORKER_ENV]) if env.get(WORKER_ENV) else home / "conf" / "worker.properties"
        worker_file = (home / worker_file).resolve() if not worker_file.is_absolute() else worker_file
        if not worker_file.exists():
            if env.get(WORKER_ENV):
                raise ConfigError(f"the worker configuration {worker_file} (${WORKER_ENV}) does not exist")
            worker_file = None
        raw = dict(MSK_DEFAULTS) if worker_file is None else load_properties_file(worker_file)
        worker = parse_worker(raw, source=str(worker_file) if worker_file else "the default worker configuration")
        connectors = Path(env.get(CONNECTORS_ENV) or home / "conf" / "connectors")
        venv_python = home / ".venv" / "bin" / "python"
        python = env.get(PYTHON_ENV) or (str(venv_python) if venv_python.exists() else sys.executable)
        url = env[WORKER_URL_ENV].strip() if WORKER_URL_ENV in env else worker[WORKER_URL]
        return cls(home, worker_file, connectors if connectors.is_absolute() else home / connectors, python,
                   lake_root_of(str(worker[LAKE_ROOT]), home), worker[CONFIGS_TABLE], storage_options(worker),
                   bool(worker[FILE_CONNECTORS_ENABLE]), str(worker[MAINTENANCE_SCHEDULE] or "none"), url or None)

    def command(self, *args: str) -> list[str]:
        """`python -m ingest [--worker FILE] ARGS`, run in `home`."""
        return [self.python, "-m", "ingest"] + (["--worker", str(self.worker_file)] if self.worker_file else []) \
            + list(args)


def lake_root_of(root: str, home: Path) -> str:
    """An absolute lake root: a URI as it is, a relative directory against the project directory."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", root):
        return root.rstrip("/")
    path = Path(root)
    return str(path if path.is_absolute() else (home / path).resolve())


def topic_uri(lake_root: str, topic: str) -> str:
    """The topic's Delta table as a URI: what an Airflow Asset of the topic is named by."""
    base = lake_root if "://" in lake_root else Path(lake_root).as_uri()
    return f"{base.rstrip('/')}/topics/{topic}"


@dataclass(frozen=True)
class ConnectorSpec:
    name: str
    config: dict[str, str] = field(repr=False)  # as given: may hold secrets, never shown or put in a DAG
    file: Path | None = None  # the connector file, applied before each run; None: the config store's
    target_state: str | None = None  # the store's, when it was read

    @property
    def kind(self) -> str:
        # Kafka Connect's rule: a sink consumes `topics` or `topics.regex`; a source has neither.
        return "sink" if self.config.get(TOPICS) or self.config.get(TOPICS_REGEX) else "source"

    @property
    def connector_class(self) -> str:
        return self.config.get("connector.class", "")

    @property
    def tasks(self) -> int:
        try:
            return max(1, int(self.config.get(TASKS_MAX, "1")))
        except ValueError:
            return 1

    @property
    def topics(self) -> list[str]:
        return [t.strip() for t in self.config.get(TOPICS, "").split(",") if t.strip()]

    @property
    def signals(self) -> bool:
        """Takes Debezium's signals (incremental snapshots): a signalling table is configured."""
        return bool(self.config.get("signal.data.collection"))

    def schedule(self) -> str | dt.timedelta | None:
        """`lakeconnect.schedule` (cron or preset; `none`: only when triggered), else `poll.interval.ms`
        when the config sets it, else None (a sink with listed topics then waits for their new records)."""
        explicit = self.config.get(SCHEDULE)
        if explicit:
            text = explicit.strip()
            return None if text.lower() == "none" else text
        poll = self.config.get(POLL_INTERVAL_MS)
        if poll and poll.strip().isdigit() and int(poll) > 0:
            return dt.timedelta(milliseconds=int(poll))
        return None

    @property
    def pool(self) -> str | None:
        """`lakeconnect.pool`: the Airflow pool of the connector's run tasks (None: Airflow's default)."""
        return (self.config.get(POOL) or "").strip() or None

    def explicitly_unscheduled(self) -> bool:
        return (self.config.get(SCHEDULE) or "").strip().lower() == "none"


def schedule_problem(spec: ConnectorSpec) -> str | None:
    value = spec.config.get(SCHEDULE)
    problem = valid_schedule(SCHEDULE, value) if value else None
    if problem:
        return f"{SCHEDULE}: {problem}"
    pool = spec.config.get(POOL)
    return f"{POOL}: {valid_pool(POOL, pool)}" if pool and valid_pool(POOL, pool) else None


def load_specs(environment: Environment, *, store: bool = True) -> tuple[dict[str, ConnectorSpec], list[str]]:
    """Every connector: the directory's files (they win over a stored config of the same name), then the
    store's. Returns the specs and the problems found (a bad file is left out, not fatal to the others)."""
    specs: dict[str, ConnectorSpec] = {}
    problems: list[str] = []
    directory = environment.connectors_dir
    files = sorted(p for p in directory.glob("*") if p.suffix.lower() in (".json", ".properties")) \
        if directory.is_dir() else []
    for path in files:
        try:
            name, raw = load_connector_file(path)
        except ConfigError as e:
            problems.append(f"{path}: {e}")
            continue
        if name in specs:
            problems.append(f"{path}: connector '{name}' is also defined in {specs[name].file}; this file is ignored")
            continue
        if "FileStream" in raw.get("connector.class", "") and not environment.file_connectors:
            problems.append(f"{path}: {raw.get('connector.class')} needs {FILE_CONNECTORS_ENABLE}=true in the "
                            "worker configuration; no DAG for it")
            continue
        specs[name] = ConnectorSpec(name, raw, path)
    if store:
        try:
            stored = read_config_store(environment)
        except Exception as e:  # an unreadable store must not hide the files' DAGs
            problems.append(f"config store under {environment.lake_root}: cannot be read ({type(e).__name__}: "
                            f"{str(e).splitlines()[0] if str(e) else ''}); its connectors have no DAGs")
            stored = {}
        for name, (config, state) in stored.items():
            if name in specs:
                specs[name] = ConnectorSpec(name, specs[name].config, specs[name].file, state)
            else:
                specs[name] = ConnectorSpec(name, config, None, state)
    for spec in list(specs.values()):
        problem = schedule_problem(spec)
        if problem:
            problems.append(f"connector '{spec.name}': {problem}; no DAG for it")
            del specs[spec.name]
    return specs, problems


def read_config_store(environment: Environment) -> dict[str, tuple[dict[str, str], str]]:
    """name -> (config, target state) of the connectors in the config store (deleted ones left out).

    Read with delta-rs's query engine, which needs neither Spark nor pyarrow (the DAG processor parses
    often); a local lake without the table costs one stat.
    """
    import json

    uri = f"{environment.lake_root.rstrip('/')}/_connect/{environment.configs_table}"
    if "://" not in uri and not (Path(uri) / "_delta_log").is_dir():
        return {}
    from deltalake import DeltaTable, QueryBuilder
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(uri, storage_options=environment.storage_options or None)
    except TableNotFoundError:
        return {}
    latest = ("SELECT connector, config, target_state, deleted FROM (SELECT *, row_number() OVER "
              "(PARTITION BY connector ORDER BY written_at DESC, version DESC) AS rn FROM configs) WHERE rn = 1")
    rows = QueryBuilder().register("configs", table).execute(latest).read_all()
    columns: dict[str, list[Any]] = {c: rows[c].to_pylist() for c in ("connector", "config", "target_state",
                                                                       "deleted")}
    out = {}
    for name, config, state, deleted in zip(*columns.values()):
        if not deleted:
            out[name] = ({str(k): str(v) for k, v in json.loads(config).items()}, state)
    return out
