"""Kafka Connect's REST API (`lakeconnect rest`), driven with plain HTTP calls as the book's curl commands
make them, against a server process on 127.0.0.1 and the lake's real Delta state tables."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO, cli
from tests.s3._book import S3SINK_FIELD, book_config

SECRET = "wJalrXUtnFEMI-book-secret"


class Rest:
    """A `lakeconnect rest` process and curl-like calls to it."""

    def __init__(self, worker: Path, *extra: str):
        argv = [sys.executable, "-m", "ingest", "--worker", str(worker), "rest", "--listen", "http://127.0.0.1:0",
                *extra]
        self.proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert "listening on" in line, line + self.proc.stderr.read()
        self.url = line.split("listening on ")[1].split()[0]

    def call(self, method: str, path: str, body: object = None, *, raw: bytes | None = None,
             user: str | None = None) -> tuple[int, object]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        if user:
            request.add_header("Authorization", "Basic " + base64.b64encode(user.encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                status, payload = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, payload = e.code, e.read()
        if not payload:
            return status, None
        try:
            return status, json.loads(payload)
        except json.JSONDecodeError:
            return status, payload.decode()

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        return err


@pytest.fixture
def rest(worker_file):
    server = Rest(worker_file)
    yield server
    server.stop()


def _s3_config(bucket: str = "orders-rest") -> dict:
    return book_config(S3SINK_FIELD, bucket=bucket, region="us-east-1", access_key="AKIAEXAMPLE",
                       secret_key=SECRET)


def _stored(worker: Path, name: str) -> dict:
    r = cli("connectors", "get", name, worker=worker)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_books_calls(rest, worker_file):
    status, root = rest.call("GET", "/")
    assert status == 200 and set(root) == {"version", "commit", "kafka_cluster_id"}
    status, plugins = rest.call("GET", "/connector-plugins")
    assert {"class": "io.confluent.connect.s3.S3SinkConnector", "type": "sink"} in [
        {k: p[k] for k in ("class", "type")} for p in plugins]
    assert {p["type"] for p in plugins} == {"source", "sink"}
    _, everything = rest.call("GET", "/connector-plugins?connectorsOnly=false")
    assert {"transformation", "predicate", "converter"} <= {p["type"] for p in everything}
    assert rest.call("GET", "/connectors") == (200, [])

    # curl -X PUT -H "Content-Type: application/json" -d @s3sink-field.json localhost:8083/connectors/s3sink-field/config
    config = _s3_config()
    status, created = rest.call("PUT", "/connectors/s3sink-field/config", config)
    assert status == 201, created
    assert created["name"] == "s3sink-field" and created["type"] == "sink" and created["tasks"] == []
    assert created["config"]["aws.secret.access.key"] == "[hidden]"
    assert created["config"]["partition.field.name"] == "id"
    assert SECRET not in json.dumps(created)
    assert rest.call("GET", "/connectors") == (200, ["s3sink-field"])

    status, shown = rest.call("GET", "/connectors/s3sink-field/config")
    assert status == 200 and shown["aws.secret.access.key"] == "[hidden]" and shown["name"] == "s3sink-field"
    # Edit what GET gave (the secret masked) and PUT it back: the stored secret is kept, the edit applied.
    status, updated = rest.call("PUT", "/connectors/s3sink-field/config", dict(shown, **{"flush.size": "5"}))
    assert status == 200 and len(updated["tasks"]) == 5 and updated["config"]["flush.size"] == "5"
    # A PASSWORD key whose name says nothing of secrets is masked and kept the same way.
    customer_key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
    status, keyed = rest.call("PUT", "/connectors/s3sink-field/config", dict(shown, **{
        "flush.size": "5", "s3.sse.customer.key": customer_key, "s3.ssea.name": "AES256"}))
    assert status == 200 and keyed["config"]["s3.sse.customer.key"] == "[hidden]", keyed
    status, shown = rest.call("GET", "/connectors/s3sink-field/config")
    assert shown["s3.sse.customer.key"] == "[hidden]"
    assert rest.call("PUT", "/connectors/s3sink-field/config", shown)[0] == 200
    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker

    stored = Worker(load_worker(str(worker_file))).get("s3sink-field", masked=False)["config"]
    assert stored["aws.secret.access.key"] == SECRET and stored["flush.size"] == "5"
    assert stored["s3.sse.customer.key"] == customer_key

    status, expanded = rest.call("GET", "/connectors?expand=status&expand=info")
    assert status == 200 and expanded["s3sink-field"]["info"]["config"]["flush.size"] == "5"
    assert expanded["s3sink-field"]["status"]["connector"]["state"] in ("RUNNING", "UNASSIGNED")
    status, tasks = rest.call("GET", "/connectors/s3sink-field/tasks")
    assert [t["id"] for t in tasks] == [{"connector": "s3sink-field", "task": t} for t in range(5)]
    assert SECRET not in json.dumps([expanded, tasks])

    assert rest.call("PUT", "/connectors/s3sink-field/pause") == (202, None)
    assert rest.call("GET", "/connectors/s3sink-field/status")[1]["connector"]["state"] == "PAUSED"
    assert rest.call("PUT", "/connectors/s3sink-field/resume") == (202, None)
    assert rest.call("GET", "/connectors/s3sink-field/status")[1]["connector"]["state"] != "PAUSED"
    assert rest.call("PUT", "/connectors/s3sink-field/stop") == (204, None)
    status, stopped = rest.call("GET", "/connectors/s3sink-field/status")
    assert stopped["connector"]["state"] == "STOPPED" and stopped["type"] == "sink"
    assert cli("connectors", "status", "s3sink-field", worker=worker_file).stdout.count("STOPPED") >= 1
    assert rest.call("PUT", "/connectors/s3sink-field/resume")[0] == 202
    assert rest.call("POST", "/connectors/s3sink-field/restart") == (204, None)
    status, restarting = rest.call("POST", "/connectors/s3sink-field/restart?includeTasks=true&onlyFailed=false")
    assert status == 202 and restarting["name"] == "s3sink-field"

    assert rest.call("DELETE", "/connectors/s3sink-field") == (204, None)
    assert rest.call("GET", "/connectors") == (200, [])
    assert rest.call("GET", "/connectors/s3sink-field") == (
        404, {"error_code": 404, "message": "Connector s3sink-field not found"})
    assert SECRET not in rest.stop()


def test_passwords_inside_urls_are_masked_and_kept(worker_file):
    """A registry URL or a JDBC URL may carry a password; it is shown as `[hidden]` wherever the config is shown,
    and a config PUT back as GET showed it keeps the stored password."""
    registry = "http://reader:Regi5try-pw@127.0.0.1:9/registry,http://reader:Regi5try-pw@127.0.0.2:9/registry"
    config = dict(_s3_config(), **{"value.converter": "io.confluent.connect.avro.AvroConverter",
                                   "value.converter.schema.registry.url": registry})
    server = Rest(worker_file)
    try:
        status, created = server.call("PUT", "/connectors/s3sink-field/config", config)
        assert status == 201, created
        masked = "http://reader:[hidden]@127.0.0.1:9/registry,http://reader:[hidden]@127.0.0.2:9/registry"
        assert created["config"]["value.converter.schema.registry.url"] == masked
        status, shown = server.call("GET", "/connectors/s3sink-field/config")
        assert shown["value.converter.schema.registry.url"] == masked
        assert server.call("PUT", "/connectors/s3sink-field/config", dict(shown, **{"flush.size": "7"}))[0] == 200
        stored = _stored_plain(worker_file, "s3sink-field")
        assert stored["value.converter.schema.registry.url"] == registry and stored["flush.size"] == "7"
        # A new password (or no password) sent is stored as sent.
        changed = registry.replace("Regi5try-pw", "N3w-pw")
        assert server.call("PUT", "/connectors/s3sink-field/config",
                           dict(shown, **{"value.converter.schema.registry.url": changed}))[0] == 200
        assert _stored_plain(worker_file, "s3sink-field")["value.converter.schema.registry.url"] == changed

        plugin = "io.confluent.connect.jdbc.JdbcSourceConnector"
        jdbc = {"name": "jdbc", "connector.class": plugin, "topic.prefix": "t-", "mode": "bulk",
                "connection.url": "jdbc:mysql://127.0.0.1:9/shop?user=app&password=Jdbc-pw-1"}
        status, result = server.call("PUT", f"/connector-plugins/{plugin}/config/validate", jdbc)
        by_name = {c["value"]["name"]: c["value"]["value"] for c in result["configs"]}
        assert by_name["connection.url"] == "jdbc:mysql://127.0.0.1:9/shop?user=app&password=[hidden]"
        everything = [server.call("GET", "/connectors/s3sink-field"), server.call("GET", "/connectors?expand=info"),
                      server.call("GET", "/connectors/s3sink-field/tasks"), result]
        text = json.dumps(everything)
        assert "Regi5try-pw" not in text and "N3w-pw" not in text and "Jdbc-pw-1" not in text
    finally:
        log = server.stop()
    assert "Regi5try-pw" not in log and "N3w-pw" not in log and "Jdbc-pw-1" not in log
    shown = _stored(worker_file, "s3sink-field")["config"]  # `connectors get` masks the same way
    assert shown["value.converter.schema.registry.url"] == masked


def test_a_hidden_secret_is_kept_only_for_the_same_target(rest, worker_file):
    """Sending `[hidden]` back keeps the stored secret only while the connector still connects where it did:
    else whoever may edit a connector could point it at a server of theirs and receive the secret."""
    assert rest.call("PUT", "/connectors/s3sink-field/config", _s3_config())[0] == 201
    status, shown = rest.call("GET", "/connectors/s3sink-field/config")
    assert shown["aws.secret.access.key"] == "[hidden]"
    for moved in ({"s3.bucket.name": "attacker-bucket"}, {"store.url": "http://203.0.113.9:9000"},
                  {"s3.region": "eu-west-1"}):
        status, error = rest.call("PUT", "/connectors/s3sink-field/config", dict(shown, **moved))
        assert status == 400, error
        assert error["message"] == (f"aws.secret.access.key: sent as [hidden], but where the connector connects "
                                    f"changed ({next(iter(moved))}); send the secret itself again to use it with "
                                    "the new target")
        assert _stored_plain(worker_file, "s3sink-field")["s3.bucket.name"] == _s3_config()["s3.bucket.name"]
    # the secret itself, sent again, goes with the new target; an edit elsewhere keeps it as before
    status, _ = rest.call("PUT", "/connectors/s3sink-field/config",
                          dict(shown, **{"s3.bucket.name": "other-bucket", "aws.secret.access.key": "N3w-secret"}))
    assert status == 200
    assert rest.call("PUT", "/connectors/s3sink-field/config", dict(shown, **{
        "s3.bucket.name": "other-bucket", "flush.size": "9"}))[0] == 200
    stored = _stored_plain(worker_file, "s3sink-field")
    assert (stored["aws.secret.access.key"], stored["flush.size"]) == ("N3w-secret", "9")
    # a converter's target is its own: a new registry does not move the store's secret, but it does the
    # registry's credentials
    avro = {"value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": "http://127.0.0.1:9/registry",
            "value.converter.basic.auth.credentials.source": "USER_INFO",
            "value.converter.basic.auth.user.info": "reader:Regi5try-pw"}
    assert rest.call("PUT", "/connectors/s3sink-field/config", dict(shown, **{
        "s3.bucket.name": "other-bucket", **avro}))[0] == 200
    status, shown = rest.call("GET", "/connectors/s3sink-field/config")
    elsewhere = dict(shown, **{"value.converter.schema.registry.url": "http://203.0.113.9:8081"})
    status, error = rest.call("PUT", "/connectors/s3sink-field/config", elsewhere)
    assert status == 400 and error["message"].startswith("value.converter.basic.auth.user.info: sent as [hidden]")
    elsewhere["value.converter.basic.auth.user.info"] = "reader:0ther-pw"
    assert rest.call("PUT", "/connectors/s3sink-field/config", elsewhere)[0] == 200
    stored = _stored_plain(worker_file, "s3sink-field")
    assert (stored["aws.secret.access.key"], stored["value.converter.basic.auth.user.info"]) == (
        "N3w-secret", "reader:0ther-pw")


def test_errors_never_confirm_a_guessed_secret(worker_file, tmp_path):
    """Hiding registered secrets in what a caller sent back to it would tell the caller which guesses are
    secrets: a guess is echoed as sent, whether it is a stored password or not. A value that came from a config
    provider (which the caller never sent) is never shown, nor made into key names."""
    worker_file.write_text(worker_file.read_text() + f"config.providers=file\n"
                                                     f"config.providers.file.param.allowed.paths={tmp_path}\n")
    rest = Rest(worker_file)
    try:
        _guesses(rest, tmp_path)
    finally:
        rest.stop()


def _guesses(rest: Rest, tmp_path: Path) -> None:
    assert rest.call("PUT", "/connectors/s3sink-field/config", _s3_config())[0] == 201
    for guess in (SECRET, "not-the-secret"):
        status, error = rest.call("GET", f"/connectors/{guess}/status")
        assert (status, error["message"]) == (404, f"Connector {guess} not found")
        plugin = "io.confluent.connect.s3.S3SinkConnector"
        status, result = rest.call("PUT", f"/connector-plugins/{plugin}/config/validate",
                                   dict(_s3_config(), **{"flush.size": guess}))
        [flush] = [c["value"] for c in result["configs"] if c["value"]["name"] == "flush.size"]
        assert flush["errors"] == [f"expected an integer, got '{guess}'"]
    secret_file = tmp_path / "size.properties"
    secret_file.write_text("size=Pr0vided-secret\n")
    status, result = rest.call("PUT", "/connector-plugins/io.confluent.connect.s3.S3SinkConnector/config/validate",
                               dict(_s3_config(), **{"flush.size": f"${{file:{secret_file}:size}}",
                                                     "transforms": f"${{file:{secret_file}:size}}"}))
    text = json.dumps(result)
    assert "Pr0vided-secret" not in text
    by_name = {c["value"]["name"]: c["value"]["errors"] for c in result["configs"]}
    assert by_name["flush.size"] == [f"the value ${{file:{secret_file}:size}} resolves to one that is not valid "
                                     "here (not shown: it comes from a config provider)"]
    assert by_name["transforms"] == ["takes no ${provider:...} placeholder: it names keys or plugins"]


def _stored_plain(worker: Path, name: str) -> dict:
    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker

    return Worker(load_worker(str(worker))).get(name, masked=False)["config"]


def test_offsets_follow_kip_875(rest, worker_file, tmp_path):
    source = tmp_path / "source.txt"
    source.write_text("one\ntwo\nthree\n")
    # The book's POST form: {"name": …, "config": {…}}.
    body = {"name": "file-source", "config": {"connector.class": "FileStreamSource", "tasks.max": "1",
                                              "file": str(source), "topic": "topic-to-export"}}
    status, created = rest.call("POST", "/connectors", body)
    assert status == 201 and created["config"]["name"] == "file-source"
    assert rest.call("POST", "/connectors", body)[0] == 409
    assert rest.call("GET", "/connectors/file-source/offsets") == (200, {"offsets": []})
    assert cli("run", "file-source", worker=worker_file).returncode == 0
    partition = {"filename": str(source)}
    status, task = rest.call("GET", "/connectors/file-source/tasks/0/status")
    assert status == 200 and task["id"] == 0 and task["state"] == "RUNNING"
    assert rest.call("GET", "/connectors/file-source/tasks/7/status")[0] == 404
    assert rest.call("GET", "/connectors/file-source/offsets") == (
        200, {"offsets": [{"partition": partition, "offset": {"position": 14}}]})

    # Offsets altered while the connector runs: Kafka's 400, and nothing changes.
    change = {"offsets": [{"partition": partition, "offset": {"position": 4}}]}
    status, refused = rest.call("PATCH", "/connectors/file-source/offsets", change)
    assert status == 400 and "must be in the STOPPED state" in refused["message"]
    assert rest.call("DELETE", "/connectors/file-source/offsets")[0] == 400
    assert rest.call("GET", "/connectors/file-source/offsets")[1]["offsets"][0]["offset"] == {"position": 14}

    assert rest.call("PUT", "/connectors/file-source/stop")[0] == 204
    status, altered = rest.call("PATCH", "/connectors/file-source/offsets", change)
    assert status == 200 and "altered successfully" in altered["message"]
    assert rest.call("GET", "/connectors/file-source/offsets")[1]["offsets"][0]["offset"] == {"position": 4}
    status, reset = rest.call("DELETE", "/connectors/file-source/offsets")
    assert status == 200 and "reset successfully" in reset["message"]
    assert rest.call("GET", "/connectors/file-source/offsets") == (200, {"offsets": []})


def test_bad_requests_change_nothing(rest):
    status, error = rest.call("PUT", "/connectors/bad/config", raw=b'{"connector.class": ')
    assert status == 400 and error["error_code"] == 400 and "malformed JSON at line 1" in error["message"]
    status, error = rest.call("PUT", "/connectors/other/config", dict(_s3_config(), name="s3sink-field"))
    assert status == 400 and error["message"] == ("Connector name configuration (s3sink-field) doesn't match "
                                                  "connector name in the URL (other)")
    status, error = rest.call("PUT", "/connectors/s3sink-field/config",
                              dict(_s3_config(), **{"flush.size": "three", "partitioner.clas": "x"}))
    assert status == 400
    # A key nothing declares is no error (Kafka Connect accepts it); the validate response warns of it.
    assert error["message"].startswith("Connector configuration is invalid and contains the following 1 error(s):")
    assert "flush.size" in error["message"] and "partitioner.clas" not in error["message"]
    assert SECRET not in json.dumps(error)
    status, error = rest.call("PUT", "/connectors/s3sink-field/config", {"flush.size": {"nested": 1}})
    assert status == 400 and "flush.size" in error["message"]
    assert rest.call("GET", "/connectors") == (200, [])

    assert rest.call("GET", "/connectors/missing/status")[0] == 404
    assert rest.call("PUT", "/connectors/missing/pause")[0] == 404
    assert rest.call("GET", "/no/such/path") == (404, {"error_code": 404, "message": "HTTP 404 Not Found"})
    assert rest.call("POST", "/connectors/missing/config", {})[0] == 405
    assert rest.call("POST", "/connectors/missing/restart?includeTasks=true")[0] == 404


def test_plugin_config_and_validate(rest):
    status, keys = rest.call("GET", "/connector-plugins/org.apache.kafka.connect.file.FileStreamSinkConnector/config")
    assert status == 200
    file_key = next(k for k in keys if k["name"] == "file")
    assert set(file_key) == {"name", "type", "required", "default_value", "importance", "documentation", "group",
                             "width", "display_name", "dependents", "order"}
    assert file_key["type"] == "STRING"
    assert rest.call("GET", "/connector-plugins/NoSuchConnector/config")[0] == 404

    # The book's example: no name. The error is on `name`; the secret given is shown hidden.
    plugin = "io.confluent.connect.s3.S3SinkConnector"
    config = {k: v for k, v in _s3_config().items() if k != "name"}
    status, result = rest.call("PUT", f"/connector-plugins/{plugin}/config/validate", config)
    assert status == 200 and result["name"] == plugin and result["error_count"] == 1
    by_name = {c["value"]["name"]: c for c in result["configs"]}
    assert by_name["name"]["value"]["errors"] and by_name["name"]["definition"]["required"] is True
    assert by_name["aws.secret.access.key"]["value"]["value"] == "[hidden]"
    assert "Common" in result["groups"]
    assert SECRET not in json.dumps(result)
    status, result = rest.call("PUT", f"/connector-plugins/{plugin}/config/validate", dict(config, name="ok"))
    assert status == 200 and result["error_count"] == 0 and result["warnings"] == []
    status, result = rest.call("PUT", f"/connector-plugins/{plugin}/config/validate",
                               dict(config, name="ok", **{"owner.team": "payments", "flush.sise": "3"}))
    assert status == 200 and result["error_count"] == 0
    assert result["warnings"] == [
        {"name": "owner.team", "message": "not a known configuration key, ignored"},
        {"name": "flush.sise", "message": "not a known configuration key, ignored; did you mean 'flush.size'?"}]
    status, error = rest.call("PUT", "/connector-plugins/FileStreamSink/config/validate", dict(config, name="ok"))
    assert status == 400 and "does not match request type FileStreamSink" in error["message"]


def test_basic_authentication(worker_file, tmp_path):
    credentials = tmp_path / "credentials.properties"
    credentials.write_text("mickael=p4ss\nkate=w0rd\n")  # the book's PropertyFileLoginModule file
    server = Rest(worker_file, "--credentials", str(credentials))
    try:
        assert server.call("GET", "/") == (401, "User cannot access the resource.")
        assert server.call("GET", "/", user="mickael:wrong")[0] == 401
        assert server.call("GET", "/", user="mickael:p4ss")[0] == 200
        assert server.call("GET", "/connectors", user="kate:w0rd") == (200, [])
    finally:
        assert "p4ss" not in server.stop()


def _raw(rest: Rest, request: bytes, *, wait_for_close: bool = False) -> bytes:
    """`request` sent as it is on one connection; everything the server answers until it closes (with
    `wait_for_close`, the connection stays open for writing meanwhile)."""
    import socket

    host, port = rest.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(request)
        if not wait_for_close:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_web_pages_and_foreign_hosts_are_refused(rest, worker_file):
    """A page in an operator's browser can POST text/plain to 127.0.0.1 without a preflight, and after a DNS
    rebinding read answers under its own host name: both are refused before anything happens."""
    form = json.dumps({"name": "evil", "config": _s3_config()}).encode()
    request = urllib.request.Request(rest.url + "/connectors", data=form, method="POST",
                                     headers={"Content-Type": "text/plain"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(request, timeout=30)
    assert e.value.code == 415 and "must be JSON" in json.loads(e.value.read())["message"]
    for headers, words in (({"Origin": "https://evil.example"}, "cross-origin requests are not allowed"),
                           ({"Origin": "null"}, "cross-origin requests are not allowed"),
                           ({"Host": "evil.example:8083"}, "Host 'evil.example:8083' is not a name of this server")):
        request = urllib.request.Request(rest.url + "/connectors", data=form, method="POST",
                                         headers={"Content-Type": "application/json", **headers})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request, timeout=30)
        assert e.value.code == 403 and words in json.loads(e.value.read())["message"], headers
    assert rest.call("GET", "/connectors") == (200, [])
    # the server's own origin (a UI served by it) and plain clients pass
    request = urllib.request.Request(rest.url + "/connectors", headers={"Origin": rest.url})
    with urllib.request.urlopen(request, timeout=30) as r:
        assert r.status == 200

    # a Content-Length that is not a length is refused; a refused request's body is never read as a request
    answer = _raw(rest, b"POST /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400") and b"connection: close" in answer.lower()
    smuggled = b"GET /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    answer = _raw(rest, b"POST /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (len(smuggled), smuggled))
    assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 415")
    # a body too large is refused by its length before it is read, or as it grows when it is chunked
    answer = _raw(rest, b"PUT /connectors/x/config HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (17 * 2**20, smuggled))
    assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 413")
    chunk = b"%x\r\n%s\r\n" % (2**20, b" " * 2**20)
    # (the client stops where the body passes 16 MiB: a server closing with data unread would reset the
    # connection, and the answer could be lost on the way)
    answer = _raw(rest, b"PUT /connectors/x/config HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n" + chunk * 16 + b"1\r\n \r\n", wait_for_close=True)
    assert answer.startswith(b"HTTP/1.1 413") and b"at most 16 MiB" in answer
    # a chunked JSON body is a body like any other; both a length and chunks is refused
    body = json.dumps({"name": "chunked", "config": {"connector.class": "FileStreamSource", "file": "/tmp/x",
                                                     "topic": "t"}}).encode()
    answer = _raw(rest, b"POST /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
                        % (len(body), body))
    assert answer.startswith(b"HTTP/1.1 201") and b'"name": "chunked"' in answer
    answer = _raw(rest, b"POST /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled)
    assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 400")


def test_the_network_needs_credentials_and_named_hosts(worker_file, tmp_path):
    r = subprocess.run([sys.executable, "-m", "ingest", "--worker", str(worker_file), "rest", "--listen",
                        "http://0.0.0.0:0"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "listening on 0.0.0.0 (beyond this machine) needs basic authentication" in r.stderr
    credentials = tmp_path / "credentials.properties"
    credentials.write_text("mickael=\n")
    r = subprocess.run([sys.executable, "-m", "ingest", "--worker", str(worker_file), "rest", "--credentials",
                        str(credentials)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "user 'mickael' has an empty password" in r.stderr
    credentials.write_text("mickael=p4ss\n")
    server = Rest(worker_file, "--credentials", str(credentials), "--allowed-hosts", "connect.internal")
    try:
        smuggled = b"GET /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"  # a 401's unread body is no request
        answer = _raw(server, b"POST /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              b"Content-Length: %d\r\n\r\n%s" % (len(smuggled), smuggled))
        assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 401")
        answer = _raw(server, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 401") and b'www-authenticate: basic realm="lakeconnect"' in answer.lower()
        auth = base64.b64encode(b"mickael:p4ss")
        answer = _raw(server, b"GET / HTTP/1.1\r\nHost: connect.internal:8083\r\nAuthorization: Basic %s\r\n"
                              b"Connection: close\r\n\r\n" % auth)
        assert answer.startswith(b"HTTP/1.1 200")
        answer = _raw(server, b"GET / HTTP/1.1\r\nHost: other.internal\r\nAuthorization: Basic %s\r\n\r\n" % auth)
        assert answer.startswith(b"HTTP/1.1 403")
    finally:
        server.stop()


def test_connections_and_slow_clients_are_bounded(worker_file):
    """A client gets `--client-timeout` seconds to send a request's line and headers (trickling a byte now
    and then does not extend it) and as long for its body (then 408); beyond MAX_CONNECTIONS (256) held
    connections one more is answered 503 at once, and a freed slot serves again."""
    import socket
    import time

    from ingest.rest.server import MAX_CONNECTIONS

    rest = Rest(worker_file, "--client-timeout", "2")
    host, port = rest.url.removeprefix("http://").split(":")
    try:
        s = socket.create_connection((host, int(port)), timeout=10)
        started = time.monotonic()
        closed_after = None
        for piece in b"GET /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa":
            try:
                s.sendall(bytes([piece]))
                s.settimeout(0.25)
                if s.recv(100) == b"":
                    closed_after = time.monotonic() - started
                    break
            except socket.timeout:
                continue
            except OSError:
                closed_after = time.monotonic() - started
                break
        s.close()
        assert closed_after is not None and 1.5 < closed_after < 6, closed_after

        answer = _raw(rest, b"PUT /connectors/x/config HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                            b"application/json\r\nContent-Length: 100\r\n\r\n{\"a\":", wait_for_close=True)
        assert answer.startswith(b"HTTP/1.1 408") and b"took longer than 2 s" in answer

        held = []
        try:
            for _ in range(MAX_CONNECTIONS):
                held.append(socket.create_connection((host, int(port)), timeout=10))
                held[-1].sendall(b"GET /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # headers never finished
            time.sleep(0.5)
            answer = _raw(rest, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert answer.startswith(b"HTTP/1.1 503")
        finally:
            for s in held:
                s.close()
        time.sleep(0.5)
        assert rest.call("GET", "/connectors") == (200, [])
    finally:
        rest.stop()
