"""The REST calls operators make beyond the book's: a task's restart, a connector's active topics (KIP-558),
its task configs (3.x's deprecated `tasks-config`) and the loggers (KIP-495, KIP-976), driven with plain HTTP
calls against a `lakeconnect rest` process, and compared with the same calls to a real Kafka Connect 4.1.1
worker (tests/mysql/connect_oracle.py, on the test bed's broker)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import cli, write_worker
from tests.mysql.connect_oracle import ConnectWorker, jars_present
from tests.rest.test_rest_api import SECRET, Rest, _s3_config


@pytest.fixture
def rest(worker_file):
    server = Rest(worker_file)
    yield server
    server.stop()


def _file_source(tmp_path: Path, topic: str, tasks: int = 1) -> dict:
    return {"connector.class": "FileStreamSource", "tasks.max": str(tasks), "file": str(tmp_path / "source.txt"),
            "topic": topic}


def _set_task_state(worker: Path, name: str, task: int, state: str, trace: str | None = None) -> None:
    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker

    Worker(load_worker(str(worker))).stores.status.set(name, task, state, trace, "elsewhere")


def test_a_task_restart_clears_its_state_as_the_connector_restart_does(rest, worker_file, tmp_path):
    """Kafka's ConnectorsResource.restartTask answers 204 with no body; the 404s are worded as
    DistributedHerder.restartTask words them ("Unknown connector: X", "Unknown task: X-N", the task id being
    ConnectorTaskId's `connector-task`)."""
    assert rest.call("PUT", "/connectors/restarted/config", _file_source(tmp_path, "t", tasks=2))[0] == 201
    _set_task_state(worker_file, "restarted", 0, "FAILED", "java.lang.RuntimeException: the file went away")
    _set_task_state(worker_file, "restarted", 1, "FAILED", "another failure")
    tasks = {t["id"]: t for t in rest.call("GET", "/connectors/restarted/status")[1]["tasks"]}
    assert tasks[0]["state"] == "FAILED" and "went away" in tasks[0]["trace"]

    assert rest.call("POST", "/connectors/restarted/tasks/0/restart") == (204, None)
    tasks = {t["id"]: t for t in rest.call("GET", "/connectors/restarted/status")[1]["tasks"]}
    assert tasks[0]["state"] == "UNASSIGNED" and "trace" not in tasks[0]
    assert tasks[1]["state"] == "FAILED", "only the task named is restarted"
    # The connector restart with its tasks does the same to every task.
    assert rest.call("POST", "/connectors/restarted/restart?includeTasks=true&onlyFailed=true")[0] == 202
    assert rest.call("GET", "/connectors/restarted/tasks/1/status")[1]["state"] == "UNASSIGNED"

    assert rest.call("POST", "/connectors/restarted/tasks/2/restart") == (
        404, {"error_code": 404, "message": "Unknown task: restarted-2"})
    assert rest.call("POST", "/connectors/restarted/tasks/-1/restart") == (
        404, {"error_code": 404, "message": "Unknown task: restarted--1"})
    assert rest.call("POST", "/connectors/restarted/tasks/99999999999999999999/restart")[0] == 404
    assert rest.call("POST", "/connectors/restarted/tasks/x/restart") == (
        404, {"error_code": 404, "message": "HTTP 404 Not Found"})
    assert rest.call("POST", "/connectors/nope/tasks/0/restart") == (
        404, {"error_code": 404, "message": "Unknown connector: nope"})
    assert rest.call("GET", "/connectors/restarted/tasks/0/restart")[0] == 405


def test_active_topics_are_those_of_the_batches_since_the_last_reset(rest, worker_file, tmp_path):
    """Kafka's ConnectorsResource.getConnectorActiveTopics answers {name: ActiveTopicsInfo} (whose only JSON
    property is `topics`), for any name (AbstractHerder.connectorActiveTopics checks none); the reset answers
    202 with no body."""
    (tmp_path / "source.txt").write_text("one\ntwo\n")
    assert rest.call("PUT", "/connectors/tracked/config", _file_source(tmp_path, "active-a"))[0] == 201
    assert rest.call("GET", "/connectors/tracked/topics") == (200, {"tracked": {"topics": []}})
    r = cli("run", "tracked", worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert rest.call("GET", "/connectors/tracked/topics") == (200, {"tracked": {"topics": ["active-a"]}})

    assert rest.call("PUT", "/connectors/tracked/topics/reset") == (202, None)
    assert rest.call("GET", "/connectors/tracked/topics") == (200, {"tracked": {"topics": []}})
    # A batch after the reset counts again: the topic it wrote, not the one before.
    assert rest.call("PUT", "/connectors/tracked/config", _file_source(tmp_path, "active-b"))[0] == 200
    with open(tmp_path / "source.txt", "a") as f:
        f.write("three\n")
    r = cli("run", "tracked", worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert rest.call("GET", "/connectors/tracked/topics") == (200, {"tracked": {"topics": ["active-b"]}})

    assert rest.call("GET", "/connectors/nope/topics") == (200, {"nope": {"topics": []}})
    assert rest.call("PUT", "/connectors/nope/topics/reset") == (202, None)
    assert rest.call("POST", "/connectors/tracked/topics/reset")[0] == 405


def test_the_topic_tracking_keys_are_honoured(tmp_path, lake):
    """ConnectorsResource's 403s when `topic.tracking.enable` or `topic.tracking.allow.reset` (WorkerConfig) is
    false; the keys are declared, so a bad value is refused naming the key."""
    from ingest.config.worker import load_worker
    from ingest.errors import ConfigError
    from ingest.rest.app import ConnectApi
    from ingest.runtime.worker import Worker

    def api(**keys: str) -> ConnectApi:
        path = write_worker(tmp_path / f"worker-{len(keys)}-{'-'.join(keys.values())}.properties", lake, **keys)
        return ConnectApi(Worker(load_worker(str(path))))

    def call(a: ConnectApi, method: str, path: str) -> tuple[int, object]:
        answer = a.handle(method, path, {}, b"")
        return answer.status, answer.body

    off = api(**{"topic.tracking.enable": "false"})
    disabled = (403, {"error_code": 403, "message": "Topic tracking is disabled."})
    assert call(off, "GET", "/connectors/any/topics") == disabled
    assert call(off, "PUT", "/connectors/any/topics/reset") == disabled
    no_reset = api(**{"topic.tracking.allow.reset": "false"})
    assert call(no_reset, "GET", "/connectors/any/topics") == (200, {"any": {"topics": []}})
    assert call(no_reset, "PUT", "/connectors/any/topics/reset") == (
        403, {"error_code": 403, "message": "Topic tracking reset is disabled."})
    with pytest.raises(ConfigError) as refused:
        api(**{"topic.tracking.enable": "sometimes"})
    assert "topic.tracking.enable" in refused.value.render()
    with pytest.raises(ConfigError) as refused:  # MSK Connect's blocked prefix holds for every other key
        api(**{"topic.tracking.other": "1"})
    assert "topic.tracking.other" in refused.value.render() and "blocked prefix" in refused.value.render()


def test_tasks_config_is_3x_deprecated_map(rest):
    """Kafka 3.x's ConnectorsResource.getTasksConfig: Map<ConnectorTaskId, Map<String, String>>, whose keys Jackson
    writes with ConnectorTaskId.toString() (`<connector>-<task>`); 4.0 removed it (4.1.1 answers 404)."""
    assert rest.call("PUT", "/connectors/s3sink-field/config", _s3_config())[0] == 201
    status, configs = rest.call("GET", "/connectors/s3sink-field/tasks-config")
    _, tasks = rest.call("GET", "/connectors/s3sink-field/tasks")
    assert status == 200 and list(configs) == [f"s3sink-field-{t['id']['task']}" for t in tasks]
    assert list(configs.values()) == [t["config"] for t in tasks]
    assert configs["s3sink-field-0"]["aws.secret.access.key"] == "[hidden]" and SECRET not in json.dumps(configs)
    assert rest.call("GET", "/connectors/nope/tasks-config") == (
        404, {"error_code": 404, "message": "Connector nope not found"})


def test_loggers_are_read_and_set_at_run_time(worker_file):
    """Kafka 4.1's LoggingResource and Loggers: GET answers LoggerLevel (`level`, `last_modified`), a PUT the
    loggers whose level changed (sorted), `scope=cluster` 204; an unknown level is NotFoundException's 404
    "invalid log level 'X'.", a missing one BadRequestException's 400."""
    rest = Rest(worker_file)
    try:
        status, loggers = rest.call("GET", "/admin/loggers")
        assert status == 200 and list(loggers) == sorted(loggers) and {"root", "lakeconnect"} <= set(loggers)
        assert loggers["lakeconnect"] == {"level": "INFO", "last_modified": None}
        assert all(set(v) == {"level", "last_modified"} and n in ("root", "lakeconnect") or n.startswith(
            "lakeconnect.") for n, v in loggers.items())
        assert rest.call("GET", "/admin/loggers/ROOT") == (200, loggers["root"])
        for unknown in ("does.not.exist", "py4j", "lakeconnect.nothing.here"):
            assert rest.call("GET", f"/admin/loggers/{unknown}") == (
                404, {"error_code": 404, "message": f"Logger {unknown} not found."})

        # The deprecation warning of tasks-config is logged at WARN: set lakeconnect to ERROR and it is not.
        assert rest.call("PUT", "/connectors/quiet/config", {"connector.class": "FileStreamSource",
                                                             "file": "/tmp/none.txt", "topic": "t"})[0] == 201
        assert rest.call("GET", "/connectors/quiet/tasks-config")[0] == 200
        before = int(time.time() * 1000)  # whole milliseconds, as last_modified is: the same instant is not later
        status, changed = rest.call("PUT", "/admin/loggers/lakeconnect", {"level": "error"})
        assert status == 200 and changed[0] == "lakeconnect" and changed == sorted(changed)
        assert set(changed) == {n for n in loggers if n.startswith("lakeconnect")}
        assert rest.call("PUT", "/admin/loggers/lakeconnect", {"level": " ERROR"}) == (200, [])
        level = rest.call("GET", "/admin/loggers/lakeconnect")[1]
        assert level["level"] == "ERROR" and before <= level["last_modified"] <= time.time() * 1000
        assert rest.call("GET", "/connectors/quiet/tasks-config")[0] == 200

        assert rest.call("PUT", "/admin/loggers/lakeconnect.brand.new", {"level": "TRACE"}) == (
            200, ["lakeconnect.brand.new"])
        assert rest.call("GET", "/admin/loggers/lakeconnect.brand.new")[1]["level"] == "TRACE"
        assert rest.call("PUT", "/admin/loggers/lakeconnect.brand.new?scope=cluster", {"level": "OFF"}) == (204, None)
        assert rest.call("GET", "/admin/loggers/lakeconnect.brand.new")[1]["level"] == "OFF"
        assert rest.call("PUT", "/admin/loggers/lakeconnect.brand.new?scope=bogus", {"level": "INFO"}) == (
            200, ["lakeconnect.brand.new"])

        for body, expected in (
                ({"level": "NOPE"}, (404, "invalid log level 'NOPE'.")),
                ({"level": 5}, (404, "invalid log level '5'.")),
                ({"lvl": "INFO"}, (400, "Desired 'level' parameter was not specified in request.")),
                ({"level": None}, (400, "Desired 'level' parameter was not specified in request.")),
                ({"level": ["DEBUG"]}, (400, "level must be a string")),
                (["DEBUG"], (400, 'expected {"level": "DEBUG"}')),
                ({"level": "DEBUG", "pad": "x" * 5000}, (413, "request body too large"))):
            status, error = rest.call("PUT", "/admin/loggers/lakeconnect", body)
            assert (status, error["error_code"]) == (expected[0], expected[0]), (body, error)
            assert error["message"].startswith(expected[1]), error
        assert rest.call("PUT", "/admin/loggers/lakeconnect", raw=b"{\"level\": ")[0] == 400
        for outside in ("py4j", "lakeconnectX", "lakeconnect..x", "lakeconnect.a b", "uvicorn.error"):
            status, error = rest.call("PUT", f"/admin/loggers/{outside.replace(' ', '%20')}", {"level": "DEBUG"})
            assert status == 400 and "only root, lakeconnect and the loggers under it" in error["message"], error
        assert rest.call("GET", "/admin/loggers/lakeconnect")[1]["level"] == "ERROR", "a refused call changes nothing"
        assert rest.call("PUT", "/admin/loggers", {"level": "DEBUG"})[0] == 405
    finally:
        err = rest.stop()
    assert err.count("tasks-config' endpoint is deprecated") == 1, err


def test_the_answers_are_kafka_connects(rest, worker_file, services, kafka_bootstrap, tmp_path):
    """The same calls to a real Kafka Connect 4.1.1 distributed worker (the herder operators' clusters run;
    the standalone one tracks no topics) and to lakeconnect: the same status codes and bodies."""
    missing = jars_present("debezium3")
    if missing:
        pytest.fail(missing, pytrace=False)
    kafka = ConnectWorker("debezium3", kafka_bootstrap, tmp_path / "connect", distributed=True).start()
    try:
        def both(method: str, path: str, body: object = None, ours: str | None = None):
            theirs_answer = _call(kafka.url, method, path, body)
            ours_answer = rest.call(method, ours or path, body)
            return theirs_answer, ours_answer

        (tmp_path / "in.txt").write_text("a\n")
        config = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"),
                  "topic": f"oracle-active-{int(time.time())}", "tasks.max": "1",
                  "topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "1"}
        theirs, ours = both("PUT", "/connectors/probe/config", config)
        assert theirs[0] == ours[0] == 201
        # The topic a batch wrote is active; deleting the connector forgets it: created again (on an empty file,
        # so that neither reads a record whatever offsets it kept), it has no active topic.
        r = cli("run", "probe", worker=worker_file)
        assert r.returncode == 0, r.stderr
        active = (200, {"probe": {"topics": [config["topic"]]}})
        t0 = time.monotonic()
        while _call(kafka.url, "GET", "/connectors/probe/topics") != active and time.monotonic() - t0 < 60:
            time.sleep(0.5)
        assert both("GET", "/connectors/probe/topics") == (active, active)
        theirs, ours = both("DELETE", "/connectors/probe")
        assert theirs == ours == (204, None)
        (tmp_path / "empty.txt").write_text("")
        theirs, ours = both("PUT", "/connectors/probe/config", {**config, "file": str(tmp_path / "empty.txt")})
        assert theirs[0] == ours[0] == 201
        time.sleep(2)  # Kafka's task starts again and finds nothing in the file
        assert both("GET", "/connectors/probe/topics") == ((200, {"probe": {"topics": []}}),) * 2
        for method, path in (("POST", "/connectors/probe/tasks/0/restart"),
                             ("POST", "/connectors/probe/tasks/x/restart"),
                             ("GET", "/connectors/nope/topics"),
                             ("PUT", "/connectors/nope/topics/reset"),
                             ("PUT", "/connectors/probe/topics/reset"),
                             ("GET", "/admin/loggers/does.not.exist")):
            theirs, ours = both(method, path)
            assert theirs == ours, (method, path)
        theirs, ours = both("POST", "/connectors/probe/tasks/5/restart")
        assert theirs == ours == (404, {"error_code": 404, "message": "Unknown task: probe-5"})

        theirs, ours = both("GET", "/admin/loggers")
        assert theirs[0] == ours[0] == 200 and "root" in theirs[1] and "root" in ours[1]
        assert set(theirs[1]["root"]) == set(ours[1]["root"]) == {"level", "last_modified"}
        theirs, ours = both("GET", "/admin/loggers/root")
        assert theirs == (200, {"level": "INFO", "last_modified": None})
        assert ours[0] == 200 and set(ours[1]) == {"level", "last_modified"}
        # A namespace no logger has yet: created and named in the answer; the same level again changes nothing.
        for _ in range(2):
            theirs, ours = both("PUT", "/admin/loggers/oracle.fresh", {"level": "error"},
                                ours="/admin/loggers/lakeconnect.oracle.fresh")
            assert (theirs[0], ours[0]) == (200, 200)
            assert [n.replace("lakeconnect.", "") for n in ours[1]] == theirs[1]
        theirs, ours = both("GET", "/admin/loggers/oracle.fresh", ours="/admin/loggers/lakeconnect.oracle.fresh")
        assert theirs[1]["level"] == ours[1]["level"] == "ERROR"
        assert isinstance(theirs[1]["last_modified"], int) and isinstance(ours[1]["last_modified"], int)
        for body in ({"level": "NOPE"}, {"level": 5}, {"lvl": "INFO"}):
            theirs, ours = both("PUT", "/admin/loggers/oracle.fresh", body,
                                ours="/admin/loggers/lakeconnect.oracle.fresh")
            assert theirs == ours, body
        theirs, ours = both("PUT", "/admin/loggers/oracle.fresh?scope=cluster", {"level": "WARN"},
                            ours="/admin/loggers/lakeconnect.oracle.fresh?scope=cluster")
        assert theirs == ours == (204, None)
    finally:
        kafka.stop()


def _call(url: str, method: str, path: str, body: object = None) -> tuple[int, object]:
    import urllib.error
    import urllib.request

    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            status, payload = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, payload = e.code, e.read()
    return status, json.loads(payload) if payload else None
