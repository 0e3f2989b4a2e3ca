"""Kafka Connect's REST resources, answered from the lake's state tables.

The shapes, status codes and error JSON (`{"error_code": …, "message": …}`) follow Kafka Connect 3.5's
ConnectorsResource and ConnectorPluginsResource for the calls the book uses. Secrets never leave: configs
are shown masked, and a masked value sent back (GET config, edit, PUT) keeps the stored secret.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any
from urllib.parse import unquote

from ingest.config.configdef import (HIDDEN, NO_DEFAULT, ConfigDef, ConfigKey, Type, ValidString, format_value,
                                     masked_value, secret_values)
from ingest.config.connector import CONNECTOR_CLASS, NAME, TASKS_MAX, common_config_def
from ingest.config.loader import config_size_problems, parse_json
from ingest.config.worker import TOPIC_TRACKING_ALLOW_RESET, TOPIC_TRACKING_ENABLE
from ingest.errors import ConcurrentRunError, ConfigError, LakeConnectError, StateError
from ingest.orchestration.specs import dag_id
from ingest.registry import PluginInfo, PluginKind
from ingest.rest import routes
from ingest.rest.loggers import LEVELS, LoggerError, Loggers, level_name, parse_level
from ingest.config import secrets
from ingest.schema_registry.api import PREFIX as REGISTRY_PREFIX
from ingest.schema_registry.api import RegistryApi
from ingest.schema_registry.store import SCHEMAS_TABLE, SchemaStore
from ingest.runtime.runs import Refused, RunService
from ingest.runtime.worker import Worker
from ingest.state.stores import CONNECTOR_TASK, PAUSED, RUNNING, STOPPED, state_uri

log = logging.getLogger("lakeconnect")

# Kafka's ConnectorPluginsResource types, by plugin kind (connectorsOnly=false lists them all).
_PLUGIN_TYPES = {
    PluginKind.SOURCE: "source", PluginKind.SINK: "sink", PluginKind.CONVERTER: "converter",
    PluginKind.TRANSFORM: "transformation", PluginKind.PREDICATE: "predicate",
}
REGISTRY_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_NOT_STOPPED = ("Connectors must be in the STOPPED state before their offsets can be modified. This can be done for "
                "the specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint")


@dataclass(frozen=True)
class Response:
    status: int
    body: Any = None  # JSON-able; None means no body (204, or 202 as Kafka answers pause/resume)
    raw: str | None = None  # a text sent as it is (the registry's `/schema` resources), instead of `body`
    content_type: str = "application/json"
    stream: Any = None  # a run whose events are sent as they come, one JSON line each (ingest/runtime/runs.py)


class RestError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


Handler = Callable[..., Response]


class ConnectApi:
    """One worker's REST resources, answering calls on several threads at once. The calls on one connector
    are serialised (its config, target state and offsets change one call at a time, as Kafka Connect's herder
    applies them), so are the Schema Registry's writes; calls on other connectors go on meanwhile."""

    def __init__(self, worker: Worker, runs: RunService | None = None):
        self.worker = worker
        self.runs = runs  # None: a REST server that runs no batch (`lakeconnect rest`)
        # A lock per DAG id (names that map to one id are one connector to Airflow), striped: a bounded set
        # of locks however many names requests make up.
        self._locks = [threading.Lock() for _ in range(64)]
        self._registry_lock = threading.Lock()
        self._loggers = Loggers()  # the process's: a `lakeconnect worker`'s runs log through the same loggers
        from ingest.runtime.metrics import Metrics
        self._metrics = Metrics(worker.stores, worker.registry)  # counting from now, as Kafka's from its start
        worker.registry.plugins()  # the plugins are found once, before threads look them up
        self.registry = RegistryApi(SchemaStore(state_uri(worker.lake_root, SCHEMAS_TABLE), worker.storage_options))
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        c = "/connectors/(?P<name>[^/]+)"
        for method, pattern, handler in (
            ("GET", "/", self.root),
            ("GET", "/health", self.health),
            ("GET", "/metrics", self.metrics),
            ("GET", "/connector-plugins", self.plugins),
            ("GET", "/connector-plugins/(?P<plugin>[^/]+)/config", self.plugin_config),
            ("PUT", "/connector-plugins/(?P<plugin>[^/]+)/config/validate", self.validate),
            ("GET", "/connectors", self.connectors),
            ("POST", "/connectors", self.create),
            ("GET", c, self.info),
            ("DELETE", c, self.delete),
            ("GET", c + "/config", self.config),
            ("PUT", c + "/config", self.put_config),
            ("GET", c + "/status", self.status),
            ("GET", c + "/tasks", self.tasks),
            ("GET", c + "/tasks-config", self.tasks_config),
            ("GET", c + "/tasks/(?P<task>[0-9]+)/status", self.task_status),
            ("POST", c + "/tasks/(?P<task>-?[0-9]+)/restart", self.restart_task),
            ("GET", c + "/topics", self.topics),
            ("PUT", c + "/topics/reset", self.reset_topics),
            ("PUT", c + "/pause", lambda name, **_: self._target(name, PAUSED, 202)),
            ("PUT", c + "/resume", lambda name, **_: self._target(name, RUNNING, 202)),
            ("PUT", c + "/stop", lambda name, **_: self._target(name, STOPPED, 204)),
            ("POST", c + "/restart", self.restart),
            ("GET", c + "/offsets", self.offsets),
            ("PATCH", c + "/offsets", self.alter_offsets),
            ("DELETE", c + "/offsets", self.reset_offsets),
            ("POST", c + "/runs", self.start_run),
            ("GET", c + "/runs", self.list_runs),
            ("GET", "/admin/loggers", self.loggers),
            ("GET", "/admin/loggers/(?P<logger>[^/]+)", self.logger),
            ("PUT", "/admin/loggers/(?P<logger>[^/]+)", self.set_logger),
        ):
            self._routes.append((method, re.compile(pattern.rstrip("/") + "/?"), handler))

    # --- dispatch ----------------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: Mapping[str, list[str]], body: bytes) -> Response:
        if path == REGISTRY_PREFIX or path.startswith(REGISTRY_PREFIX + "/"):
            return self._registry(method, path, query, body)
        found = routes.find(self._routes, method, path)
        if found == routes.NOT_ALLOWED:
            return _error(405, "HTTP 405 Method Not Allowed")
        if found == routes.NOT_FOUND:
            return _error(404, "HTTP 404 Not Found")
        handler, params = found
        # what the client sent: echoed back as it is, never hidden (hiding would confirm a guessed secret)
        sent = [path, unquote(path), body.decode("utf-8", "replace"), *(v for vs in query.values() for v in vs)]
        try:
            if "name" not in params:
                return handler(query=query, body=body, **params)
            with self._serial(params["name"]):
                return handler(query=query, body=body, **params)
        except (RestError, LoggerError) as e:
            return _error(e.status, e.message, sent)
        except ConfigError as e:
            return _error(400, e.render(), sent)
        except ConcurrentRunError as e:
            return _error(409, str(e), sent)
        except StateError as e:
            return _error(400, str(e), sent)
        except LakeConnectError as e:
            return _error(500, str(e), sent)
        except Exception as e:  # noqa: BLE001 - the client gets one line; the log gets the trace
            log.exception("REST %s %s failed", method, path)
            return _error(500, f"unexpected failure: {type(e).__name__}: {e}".split("\n")[0], sent)

    def _serial(self, name: str) -> threading.Lock:
        """The lock of the calls on connector `name`."""
        return self._locks[zlib.crc32(dag_id(name).encode("utf-8", "replace")) % len(self._locks)]

    def _registry(self, method: str, path: str, query: Mapping[str, list[str]], body: bytes) -> Response:
        try:
            with self._registry_lock:
                status, answer, raw = self.registry.handle(method, path, query, body)
        except LakeConnectError as e:  # the _schemas table cannot be read or written
            status, answer, raw = 500, {"error_code": 50001, "message": secrets.scrub(str(e))}, None
        except Exception as e:  # noqa: BLE001 - the client gets one line; the log gets the trace
            log.exception("REST %s %s failed", method, path)
            status, answer, raw = 500, {"error_code": 50001, "message": f"unexpected failure: {type(e).__name__}"}, None
        return Response(status, answer, raw, REGISTRY_CONTENT_TYPE)

    # --- worker and plugins ------------------------------------------------------------------------

    def health(self, **_) -> Response:
        """KIP-1017's health check (Kafka Connect 3.9), and a long-running worker's runs and resources."""
        body: dict[str, Any] = {"status": "healthy",
                                "message": "Worker has completed startup and is ready to handle requests."}
        if self.runs is not None:
            body["worker"] = self.runs.health()
        return Response(200, body)

    def metrics(self, **_) -> Response:
        """Kafka Connect's metrics (ch. 9) in Prometheus's text format, from the state tables: counters since
        this server started."""
        from ingest.runtime.metrics import CONTENT_TYPE
        return Response(200, raw=self._metrics.text(), content_type=CONTENT_TYPE)

    def root(self, **_) -> Response:
        try:
            version = metadata.version("lakeconnect")
        except metadata.PackageNotFoundError:
            version = "unknown"
        # A stable id for the lake these state tables live in: what kafka_cluster_id names for Connect.
        lake_id = hashlib.sha256(self.worker.lake_root.encode()).hexdigest()[:22]
        return Response(200, {"version": version, "commit": "", "kafka_cluster_id": lake_id})

    def plugins(self, query: Mapping[str, list[str]], **_) -> Response:
        connectors_only = _flag(query, "connectorsOnly", True)
        kinds = [PluginKind.SOURCE, PluginKind.SINK] if connectors_only else list(_PLUGIN_TYPES)
        out = []
        for kind in kinds:
            for info in self.worker.registry.plugins(kind):
                entry = {"class": info.class_name, "type": _PLUGIN_TYPES[kind]}
                if info.version:
                    entry["version"] = info.version
                out.append(entry)
        return Response(200, out)

    def _plugin(self, name: str) -> PluginInfo:
        for kind in _PLUGIN_TYPES:
            info = self.worker.registry.find(kind, name)
            if info is not None:
                return info
        raise RestError(404, f"Unknown plugin {name}.")

    def _definition(self, info: PluginInfo) -> ConfigDef:
        definition = info.cls.config_def()
        if info.kind in (PluginKind.SOURCE, PluginKind.SINK):
            definition = common_config_def(info.cls.kind).merge(definition)
        return definition

    def plugin_config(self, plugin: str, **_) -> Response:
        info = self._plugin(plugin)
        return Response(200, [_key_info(k) for k in self._definition(info).keys.values()])

    def validate(self, plugin: str, body: bytes, **_) -> Response:
        raw = _config_map(body)
        info = self.worker.registry.find_connector(plugin)
        if info is None:
            raise RestError(400, f"Failed to find any class that implements Connector and which name matches "
                                 f"{plugin}; GET /connector-plugins lists them")
        included = raw.get(CONNECTOR_CLASS)
        if included and self.worker.registry.find_connector(included) != info:
            raise RestError(400, f"Included connector type {included} does not match request type {plugin}")
        raw[CONNECTOR_CLASS] = raw.get(CONNECTOR_CLASS) or plugin
        sent = [body.decode("utf-8", "replace")]  # the client's own values are echoed as sent
        try:
            setup = self.worker.validate(raw)
            problems, warnings = [], setup.warnings
        except ConfigError as e:
            problems, warnings = e.problems, e.warnings
        definition = self._definition(info)
        errors: dict[str, list[str]] = {}
        for p in problems:  # a problem of the whole config is shown on connector.class, as Kafka does
            key = secrets.scrub(p.key or CONNECTOR_CLASS, sent)  # a key may be made of a value (an alias)
            errors.setdefault(key, []).append(secrets.scrub(p.message, sent))
        keys = list(definition.keys.values())
        keys += [ConfigKey(k, Type.STRING, None, group="Common") for k in errors if k not in definition]
        configs = [{"definition": _key_info(k), "value": _value_info(k, raw, errors.get(k.name, []), definition)}
                   for k in keys]
        groups = list(dict.fromkeys(k.group for k in keys if k.group))
        # Beyond Kafka's response: keys nothing declares, accepted and ignored as Kafka Connect does.
        unused = [{"name": secrets.scrub(w.key, sent), "message": secrets.scrub(w.message, sent)} for w in warnings]
        return Response(200, {"name": info.class_name, "error_count": sum(len(v) for v in errors.values()),
                              "groups": groups, "configs": configs, "warnings": unused})

    # --- connectors --------------------------------------------------------------------------------

    def _require(self, name: str) -> dict[str, Any]:
        if self.worker.stores.configs.get(name) is None:
            raise RestError(404, f"Connector {name} not found")
        return self.worker.get(name)

    def _info(self, name: str, found: dict[str, Any] | None = None) -> dict[str, Any]:
        found = found or self._require(name)
        tasks = int(found["config"].get(TASKS_MAX) or 1)
        return {"name": name, "config": found["config"],
                "tasks": [{"connector": name, "task": t} for t in range(tasks)], "type": found["type"]}

    def _status(self, name: str) -> dict[str, Any]:
        self._require(name)
        status = self.worker.status(name)
        for entry in [status["connector"], *status["tasks"]]:
            if "trace" in entry:
                entry["trace"] = secrets.scrub(entry["trace"])
        if status.get("last_run", {}).get("error"):
            status["last_run"]["error"] = secrets.scrub(status["last_run"]["error"])
        return status

    def connectors(self, query: Mapping[str, list[str]], **_) -> Response:
        names = self.worker.list()
        expand = query.get("expand", [])
        if not expand:
            return Response(200, names)
        out: dict[str, dict[str, Any]] = {}
        for name in names:
            entry = out.setdefault(name, {})
            if "status" in expand:
                entry["status"] = self._status(name)
            if "info" in expand:
                entry["info"] = self._info(name)
        return Response(200, out)

    def create(self, body: bytes, **_) -> Response:
        request = _json_body(body)
        if not isinstance(request, dict) or not isinstance(request.get("config"), dict):
            raise RestError(400, 'expected {"name": "...", "config": {...}}')
        name = request.get("name") or request["config"].get(NAME)
        if not isinstance(name, str) or not name.strip():
            raise RestError(400, "Connector name is missing: set \"name\" in the request")
        config = _config_map(json.dumps(request["config"]).encode())
        if config.get(NAME, name) != name:
            raise RestError(400, f"Connector name configuration ({config[NAME]}) doesn't match connector name "
                                 f"in the request ({name})")
        with self._serial(name):
            if self.worker.stores.configs.get(name) is not None:
                raise RestError(409, f"Connector {name} already exists")
            config[NAME] = name
            self._create(name, config)
            return Response(201, dict(self._info(name), tasks=[]))

    def _connector_definition(self, config: Mapping[str, str | None]) -> ConfigDef | None:
        """The keys of the connector a config names (PASSWORD types say what is secret), if it is known."""
        info = self.worker.registry.find_connector(config.get(CONNECTOR_CLASS) or "")
        return self._definition(info) if info is not None else None

    def _create(self, name: str, config: dict[str, str]) -> None:
        _register_secrets(config, self._connector_definition(config))
        try:
            self.worker.create(name, config)
        except ConfigError as e:
            raise RestError(400, _invalid(e)) from None

    def info(self, name: str, **_) -> Response:
        return Response(200, self._info(name))

    def delete(self, name: str, **_) -> Response:
        self._require(name)
        self.worker.delete(name)
        return Response(204)

    def config(self, name: str, **_) -> Response:
        return Response(200, self._require(name)["config"])

    def put_config(self, name: str, body: bytes, **_) -> Response:
        config = _config_map(body)
        if config.get(NAME, name) != name:
            raise RestError(400, f"Connector name configuration ({config[NAME]}) doesn't match connector name in "
                                 f"the URL ({name})")
        config[NAME] = name
        current = self.worker.stores.configs.get(name)
        if current is None:
            self._create(name, config)
            return Response(201, dict(self._info(name), tasks=[]))
        definition = self._connector_definition(config)
        kept = []
        for key, value in config.items():  # a value sent back as GET showed it means "keep the secret"
            stored = current["config"].get(key)
            if stored is not None and value != stored and value == masked_value(key, stored, definition):
                config[key] = stored
                kept.append(key)
        moved = [k for k in config if _TARGET_KEY.search(k) and config[k] != current["config"].get(k)]
        moved += [k for k in current["config"] if _TARGET_KEY.search(k) and k not in config]
        for key in kept:
            # A stored secret goes only where it went: else whoever may edit a connector could point it at a
            # server of theirs and receive the password. Its target: the keys of its client (the connector's
            # own, a converter's, a client override's).
            changed = next((k for k in moved if _client_of(k) == _client_of(key)), None)
            if changed:
                raise RestError(400, f"{key}: sent as {HIDDEN}, but where the connector connects changed "
                                     f"({changed}); send the secret itself again to use it with the new target")
        _register_secrets(config, definition)
        try:
            self.worker.update(name, config)
        except ConfigError as e:
            raise RestError(400, _invalid(e)) from None
        return Response(200, self._info(name))

    def status(self, name: str, **_) -> Response:
        return Response(200, self._status(name))

    def tasks(self, name: str, **_) -> Response:
        info = self._info(name)
        return Response(200, [{"id": t, "config": info["config"]} for t in info["tasks"]])

    def task_status(self, name: str, task: str, **_) -> Response:
        for entry in self._status(name)["tasks"]:
            if entry["id"] == int(task):
                return Response(200, entry)
        raise RestError(404, f"No status found for task {name}-{task}")

    def tasks_config(self, name: str, **_) -> Response:
        """Kafka Connect 3.x's deprecated `Map<ConnectorTaskId, Map<String, String>>` (gone in 4.0): each task's
        config under `<name>-<task>`, the same configs GET /connectors/{name}/tasks shows."""
        log.warning("The 'GET /connectors/{connector}/tasks-config' endpoint is deprecated and will be removed in "
                    "the next major release. Please use the 'GET /connectors/{connector}/tasks' endpoint instead.")
        info = self._info(name)
        return Response(200, {f"{name}-{t['task']}": info["config"] for t in info["tasks"]})

    def restart_task(self, name: str, task: str, **_) -> Response:
        """Kafka's task restart (204, DistributedHerder's 404 wording): the task's state goes back to
        UNASSIGNED, a FAILED one's trace with it, as `restart?includeTasks=true` does for every task."""
        found = self.worker.stores.configs.get(name)
        if found is None:
            raise RestError(404, f"Unknown connector: {name}")
        number = int(task) if len(task) <= 11 else None
        if number is None or not 0 <= number < int(found["config"].get(TASKS_MAX) or 1):
            raise RestError(404, f"Unknown task: {name}-{task}")
        self.worker.restart_task(name, number)
        return Response(204)

    def _target(self, name: str, state: str, status: int) -> Response:
        self._require(name)
        self.worker.set_target_state(name, state)
        return Response(status)

    def restart(self, name: str, query: Mapping[str, list[str]], **_) -> Response:
        self._require(name)
        include_tasks, only_failed = _flag(query, "includeTasks", False), _flag(query, "onlyFailed", False)
        restarted = self.worker.restart(name, include_tasks=include_tasks, only_failed=only_failed)
        if not include_tasks and not only_failed:
            return Response(204)
        status = self._status(name)
        # Kafka answers 202 with the tasks it is restarting shown as RESTARTING.
        for entry in [*status["tasks"], status["connector"]]:
            if entry.get("id", CONNECTOR_TASK) in restarted:
                entry["state"] = "RESTARTING"
        return Response(202, status)

    # --- active topics (KIP-558) ------------------------------------------------------------------------

    def topics(self, name: str, **_) -> Response:
        """As Kafka's herder: a connector that does not exist has no active topics (200, not 404)."""
        if not self.worker.config[TOPIC_TRACKING_ENABLE]:
            raise RestError(403, "Topic tracking is disabled.")
        known = self.worker.stores.configs.get(name) is not None
        return Response(200, {name: {"topics": self.worker.active_topics(name) if known else []}})

    def reset_topics(self, name: str, **_) -> Response:
        if not self.worker.config[TOPIC_TRACKING_ENABLE]:
            raise RestError(403, "Topic tracking is disabled.")
        if not self.worker.config[TOPIC_TRACKING_ALLOW_RESET]:
            raise RestError(403, "Topic tracking reset is disabled.")
        if self.worker.stores.configs.get(name) is not None:  # nothing is written for a name no connector has
            self.worker.reset_active_topics(name)
        return Response(202)

    # --- loggers (KIP-495, KIP-976) ----------------------------------------------------------------

    def loggers(self, **_) -> Response:
        return Response(200, self._loggers.all_levels())

    def logger(self, logger: str, **_) -> Response:
        return Response(200, self._loggers.level(logger))

    def set_logger(self, logger: str, query: Mapping[str, list[str]], body: bytes, **_) -> Response:
        if len(body) > _LOGGER_BODY_MAX:
            raise RestError(413, f"request body too large (at most {_LOGGER_BODY_MAX} bytes for a logger's level)")
        request = _json_body(body)
        if not isinstance(request, dict):
            raise RestError(400, 'expected {"level": "DEBUG"} (one of ' + ", ".join(LEVELS) + ")")
        level = request.get("level")
        if level is None:
            raise RestError(400, "Desired 'level' parameter was not specified in request.")
        if isinstance(level, (dict, list)):
            raise RestError(400, "level must be a string: one of " + ", ".join(LEVELS))
        # Jackson reads a number or a boolean into Kafka's Map<String, String> as its text
        number = parse_level(level if isinstance(level, str) else json.dumps(level))
        scope = (query.get("scope") or ["worker"])[-1]
        if scope.lower() not in ("worker", "cluster"):
            log.warning("Received invalid scope %r in request to adjust logging level; will default to worker",
                        scope[:100])
        changed = self._loggers.set_level(logger, number)  # refuses a name outside root and lakeconnect
        log.info("Set level of namespace %s and children to %s", logger, level_name(number))
        # lakeconnect's processes are no cluster: a cluster-wide change is this process's, answered as Kafka does
        return Response(204) if scope.lower() == "cluster" else Response(200, changed)

    # --- offsets (KIP-875) -------------------------------------------------------------------------

    def offsets(self, name: str, **_) -> Response:
        self._require(name)
        return Response(200, {"offsets": self.worker.offsets(name)})

    def _require_stopped(self, name: str) -> dict[str, Any]:
        found = self._require(name)
        if self.worker.stores.configs.get(name)["target_state"] != STOPPED:
            raise RestError(400, _NOT_STOPPED.format(name=name))
        return found

    def alter_offsets(self, name: str, body: bytes, **_) -> Response:
        found = self._require_stopped(name)
        request = _json_body(body)
        if not isinstance(request, dict) or not isinstance(request.get("offsets"), list):
            raise RestError(400, 'expected {"offsets": [{"partition": {...}, "offset": {...}}, ...]}')
        self.worker.alter_offsets(name, request["offsets"])
        return Response(200, {"message": _offsets_message(found["type"], "altered")})

    def reset_offsets(self, name: str, **_) -> Response:
        found = self._require_stopped(name)
        self.worker.reset_offsets(name)
        return Response(200, {"message": _offsets_message(found["type"], "reset")})

    # --- runs (the long-running worker's) ----------------------------------------------------------

    def _run_service(self) -> RunService:
        if self.runs is None:
            raise RestError(404, "this REST server runs no batches (`lakeconnect rest`); runs are served by "
                                 "`lakeconnect worker`")
        return self.runs

    def start_run(self, name: str, body: bytes, **_) -> Response:
        runs = self._run_service()
        request = _json_body(body) if body.strip() else {}
        if not isinstance(request, dict):
            raise RestError(400, 'expected {"task": N or null, "until_caught_up": true|false, '
                                 '"skip_missing_task": true|false}, every field optional')
        unknown = sorted(k for k in request if k not in _RUN_FIELDS)
        if unknown:
            raise RestError(400, f"unknown field '{unknown[0][:100]}' in the run request; known: "
                                 f"{', '.join(_RUN_FIELDS)}")
        task = request.get("task")
        if task is not None and (not isinstance(task, int) or isinstance(task, bool) or not 0 <= task < 2**31):
            raise RestError(400, "task must be a task number (0 or more) or null for every task")
        flags = {}
        for key in ("until_caught_up", "skip_missing_task"):
            if not isinstance(request.get(key, False), bool):
                raise RestError(400, f"{key} must be true or false")
            flags[key] = request.get(key, False)
        self._require(name)
        try:
            run = runs.submit(name, task=task, **flags)
        except Refused as e:
            raise RestError(e.status, e.message) from None
        return Response(200, stream=run, content_type="application/x-ndjson")

    def list_runs(self, name: str, query: Mapping[str, list[str]], **_) -> Response:
        runs = self._run_service()
        self._require(name)
        limit = (query.get("limit") or ["20"])[-1]
        if not limit.isdigit() or not 1 <= int(limit) <= 1000:
            raise RestError(400, f"query parameter limit must be a number from 1 to 1000, got '{limit[:20]}'")
        return Response(200, runs.history(name, int(limit)))


_RUN_FIELDS = ("task", "until_caught_up", "skip_missing_task")
_LOGGER_BODY_MAX = 4096
"""Bytes a logger level's body may have: `{"level": "DEBUG"}` is 18."""


# --- helpers ---------------------------------------------------------------------------------------


def _error(status: int, message: str, sent: list[str] | None = None) -> Response:
    return Response(status, {"error_code": status, "message": secrets.scrub(message, sent or ())})


def _flag(query: Mapping[str, list[str]], name: str, default: bool) -> bool:
    values = query.get(name)
    if not values:
        return default
    value = values[-1].strip().lower()
    if value not in ("true", "false"):
        raise RestError(400, f"query parameter {name} must be true or false, got '{values[-1]}'")
    return value == "true"


def _json_body(body: bytes) -> Any:
    if not body.strip():
        raise RestError(400, "the request has no body; send JSON with Content-Type: application/json")
    try:
        return parse_json(body)
    except ValueError as e:
        raise RestError(400, f"request body: {e}") from None


# Keys that say where a connector sends its credentials: URLs, hosts, ports, endpoints, buckets, brokers.
_TARGET_KEY = re.compile(r"(?:^|\.)(?:url|urls|uri|hostname|host|hosts|port|endpoint|bucket\.name|bootstrap\.servers|"
                         r"region|servers?|address)$")


_CLIENT_PREFIX = re.compile(r"^(?:(?:key|value|header)\.converter\.|(?:producer|consumer|admin)\.override\.|"
                            r"(?:transforms|predicates)\.[^.]+\.)")


def _client_of(key: str) -> str:
    """Which client a key configures: a converter's, a client override's, a transform's, else the connector's."""
    m = _CLIENT_PREFIX.match(key)
    return m.group(0) if m else ""


def _config_map(body: bytes) -> dict[str, str]:
    """A connector config: a JSON object of strings (numbers and booleans are taken as their text, as
    Kafka's JSON mapper does)."""
    config = _json_body(body)
    if not isinstance(config, dict):
        raise RestError(400, "expected the connector config as a JSON object of string values")
    too_big = config_size_problems(config)
    if too_big:
        raise RestError(400, str(too_big[0]))
    out = {}
    for key, value in config.items():
        if isinstance(value, (dict, list)):
            raise RestError(400, f"config key '{key}': expected a string value, got a JSON "
                                 f"{'object' if isinstance(value, dict) else 'array'}")
        out[key] = None if value is None else format_value(value)
    return out


def _register_secrets(config: Mapping[str, str | None], definition: ConfigDef | None) -> None:
    secrets.register(secret_values(config, definition))


def _invalid(e: ConfigError) -> str:
    lines = "\n".join(str(p) for p in e.problems)
    return (f"Connector configuration is invalid and contains the following {len(e.problems)} error(s):\n{lines}\n"
            "You can also find the above list of errors at the endpoint "
            "`/connector-plugins/{connectorType}/config/validate`")


def _offsets_message(kind: str, verb: str) -> str:
    if kind == "sink":
        return f"The offsets for this connector have been {verb} successfully"
    return (f"The Connect framework-managed offsets for this connector have been {verb} successfully. However, if "
            f"this connector manages offsets externally, they will need to be manually {verb} in the system that "
            "the connector uses.")


def _key_info(key: ConfigKey) -> dict[str, Any]:
    """Kafka's ConfigKeyInfo."""
    if key.default is NO_DEFAULT or key.default is None:
        default = None
    elif key.type is Type.PASSWORD:
        default = HIDDEN
    else:
        default = format_value(key.default)
    return {"name": key.name, "type": key.type.value, "required": key.required, "default_value": default,
            "importance": key.importance.value, "documentation": key.doc or None, "group": key.group,
            "width": "NONE", "display_name": key.name, "dependents": [], "order": key.order}


def _value_info(key: ConfigKey, raw: Mapping[str, str | None], errors: list[str],
                definition: ConfigDef) -> dict[str, Any]:
    """Kafka's ConfigValueInfo: the value given (secrets hidden), what is allowed, what is wrong."""
    value = raw.get(key.name)
    if value is not None:
        value = masked_value(key.name, value, definition)
    allowed = list(key.validator.allowed) if isinstance(key.validator, ValidString) else []
    return {"name": key.name, "value": value, "recommended_values": allowed, "errors": errors, "visible": True}
