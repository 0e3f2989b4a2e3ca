"""The REST API's HTTP server (uvicorn): calls on different connectors run at once, calls on one connector
one at a time, a call that takes too long is answered, and HTTPS. The server runs in this process (on a
thread, over the lake's real Delta state tables) where a test must hold a call in the middle; HTTPS runs
as `lakeconnect rest`."""

from __future__ import annotations

import datetime as dt
import json
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import REPO


def _call(url: str, method: str, path: str, body: object = None, *, context=None) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60, context=context) as r:
            status, payload = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, payload = e.code, e.read()
    return status, json.loads(payload) if payload else None


def _source(tmp_path, name: str) -> dict:
    return {"name": name, "config": {"connector.class": "FileStreamSource", "tasks.max": "1",
                                     "file": str(tmp_path / "source.txt"), "topic": "t"}}


@pytest.fixture
def served(worker_file):
    """(server, api): a RestServer on a thread; its calls may be held (`api.worker.offsets` patched)."""
    from ingest.config.worker import load_worker
    from ingest.rest.app import ConnectApi
    from ingest.rest.server import RestServer
    from ingest.runtime.worker import Worker

    made = []

    def serve(**options):
        api = ConnectApi(Worker(load_worker(str(worker_file))))
        server = RestServer(api, "http://127.0.0.1:0", **options)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        made.append(server)
        return server, api

    yield serve
    for server in made:
        server.shutdown()
        server.server_close()


def _hold_offsets(api, name: str) -> tuple[threading.Event, threading.Event]:
    """GET /connectors/{name}/offsets waits in its thread until `release` is set; `entered` says it is there."""
    entered, release = threading.Event(), threading.Event()
    offsets = api.worker.offsets

    def held(connector: str):
        if connector == name:
            entered.set()
            release.wait(60)
        return offsets(connector)

    api.worker.offsets = held
    return entered, release


def test_calls_on_other_connectors_go_on_while_one_is_held(served, tmp_path):
    server, api = served()
    for name in ("slow", "fast"):
        assert _call(server.url, "POST", "/connectors", _source(tmp_path, name))[0] == 201
    entered, release = _hold_offsets(api, "slow")
    with ThreadPoolExecutor(2) as pool:
        held = pool.submit(_call, server.url, "GET", "/connectors/slow/offsets")
        assert entered.wait(30)
        # other connectors, the worker's lists and the registry answer meanwhile
        started = time.monotonic()
        assert _call(server.url, "GET", "/connectors/fast/offsets") == (200, {"offsets": []})
        assert _call(server.url, "PUT", "/connectors/fast/pause")[0] == 202
        assert _call(server.url, "GET", "/connectors")[1] == ["fast", "slow"]
        assert _call(server.url, "GET", "/registry/subjects") == (200, [])
        assert time.monotonic() - started < 20
        # a call on the held connector waits for it: its state changes one call at a time
        waiting = pool.submit(_call, server.url, "PUT", "/connectors/slow/pause")
        time.sleep(1)
        assert not waiting.done()
        release.set()
        assert held.result(60) == (200, {"offsets": []})
        assert waiting.result(60)[0] == 202


def test_one_name_is_created_once_however_many_ask_at_once(served, tmp_path):
    server, _ = served()
    with ThreadPoolExecutor(8) as pool:
        same = list(pool.map(lambda _: _call(server.url, "POST", "/connectors", _source(tmp_path, "one"))[0],
                             range(8)))
        # "two words" and "two_words" are one DAG id: only one of them can be created
        twins = list(pool.map(lambda n: _call(server.url, "POST", "/connectors", _source(tmp_path, n)),
                              ["two words", "two_words"] * 2))
        many = list(pool.map(lambda i: _call(server.url, "POST", "/connectors", _source(tmp_path, f"c{i}"))[0],
                             range(8)))
    assert sorted(same) == [201] + [409] * 7
    assert sorted(status for status, _ in twins) == [201, 400, 400, 409], twins
    assert all("DAG id" in answer["message"] for status, answer in twins if status == 400), twins
    assert many == [201] * 8
    names = _call(server.url, "GET", "/connectors")[1]
    assert sorted(names) == sorted(["one", *[f"c{i}" for i in range(8)], *[n for n in ("two words", "two_words")
                                                                             if n in names]])
    assert len(names) == 10


def test_a_call_that_takes_too_long_is_answered(served, tmp_path):
    server, api = served(request_timeout=1)
    assert _call(server.url, "POST", "/connectors", _source(tmp_path, "slow"))[0] == 201
    entered, release = _hold_offsets(api, "slow")
    try:
        started = time.monotonic()
        assert _call(server.url, "GET", "/connectors/slow/offsets") == (
            500, {"error_code": 500, "message": "Request timed out"})
        assert entered.is_set() and time.monotonic() - started < 10
    finally:
        release.set()
    assert _call(server.url, "GET", "/connectors/slow/offsets") == (200, {"offsets": []})


def _certificate(tmp_path) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key, PEM files."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "rest.crt", tmp_path / "rest.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_file), str(key_file)


def _rest(worker_file, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ingest", "--worker", str(worker_file), "rest", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_https(worker_file, tmp_path):
    cert, key = _certificate(tmp_path)
    proc = _rest(worker_file, "--listen", "https://127.0.0.1:0", "--tls-cert", cert, "--tls-key", key)
    try:
        line = proc.stdout.readline()
        assert "REST API listening on https://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split("listening on ")[1].split()[0]
        trusting = ssl.create_default_context(cafile=cert)
        assert _call(url, "GET", "/connectors", context=trusting) == (200, [])
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            _call(url, "GET", "/connectors", context=ssl.create_default_context())
        with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP on the TLS port
            _call(url.replace("https://", "http://"), "GET", "/connectors")
    finally:
        proc.terminate()
        proc.communicate(timeout=30)

    # the settings that cannot work are refused at start, naming the flag; a file's text is never shown
    secret_text = "not-a-certificate-but-a-secret-3f1c"
    wrong = tmp_path / "wrong.pem"
    wrong.write_text(secret_text + "\n")
    for args, words in (
        (["--listen", "https://127.0.0.1:0"], "--tls-cert: listening on https://127.0.0.1:0 needs a certificate"),
        (["--tls-cert", cert, "--tls-key", key], "listeners: a certificate is given: listen on https://"),
        (["--listen", "https://127.0.0.1:0", "--tls-cert", str(wrong)], "--tls-cert: " + str(wrong)),
        (["--listen", "https://127.0.0.1:0", "--tls-cert", cert, "--tls-key", str(tmp_path / "nope.key")],
         "--tls-key: file not found"),
        (["--client-timeout", "0"], "--client-timeout: expected a number of seconds above 0"),
    ):
        proc = _rest(worker_file, *args)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2 and words in err and "Traceback" not in err, (args, err)
        assert secret_text not in err + out


def test_a_stored_offsets_table_outside_the_state_tables_is_never_opened(served, tmp_path):
    """A config stored before names were checked (written to the configs table directly here) whose
    `offsets.storage.topic` leaves `_connect`: its offsets are refused, not read from wherever it points."""
    server, api = served()
    outside = tmp_path / "elsewhere"
    config = {"name": "old", "connector.class": "FileStreamSource", "file": str(tmp_path / "s.txt"), "topic": "t",
              "offsets.storage.topic": "../../elsewhere"}
    api.worker.stores.configs.put("old", config)
    status, error = _call(server.url, "GET", "/connectors/old/offsets")
    assert status == 400 and "'../../elsewhere' is not a valid table name" in error["message"], error
    assert not outside.exists()
