"""TLS to the server (database.ssl.mode and the trust and key stores) against the MariaDB that up.sh starts
accepting TLS connections only (require_secure_transport; its certificate for 127.0.0.1, signed by a CA of
up.sh's, whose stores keytool and openssl made as a Java user would).

A connector that runs there read its snapshot, its binlog and an incremental snapshot over TLS: the server
refuses every other TCP connection. Each mode that must not connect fails the batch with the server's or
the TLS library's reason and the keys to check; nothing is emitted or committed; no password shows."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pymysql
import pytest

from tests.conftest import cli_here
from tests.mysql._cdc import connector_config, create, offsets, payloads, run

PASSWORD = "Tls-s3cret"


@pytest.fixture
def tls(services):
    port = int(services["LAKECONNECT_TEST_MARIADB_TLS_PORT"])
    stores = Path(services["LAKECONNECT_TEST_TLS_DIR"])
    db = f"lc_tls_{uuid.uuid4().hex[:8]}"
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True,
                           ssl={"check_hostname": False})
    cur = conn.cursor()
    cur.execute(f"CREATE DATABASE {db}")
    cur.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(20))")
    cur.execute(f"INSERT INTO {db}.t VALUES (1, 'a'), (2, 'b')")
    cur.execute(f"CREATE TABLE {db}.debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, "
                "data VARCHAR(2048))")
    for user, require in (("lc_tls", "SSL"), ("lc_x509", "X509")):
        cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")
        cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{PASSWORD}' REQUIRE {require}")
        cur.execute(f"GRANT SELECT, INSERT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO "
                    f"'{user}'@'%'")
    yield {"port": port, "stores": stores, "db": db, "cur": cur}
    cur.execute(f"DROP DATABASE IF EXISTS {db}")
    for user in ("lc_tls", "lc_x509"):
        cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")
    conn.close()


def _config(services, tls, **extra: str) -> dict[str, str]:
    return connector_config(services, **{
        "database.hostname": "127.0.0.1", "database.port": str(tls["port"]), "database.user": "lc_tls",
        "database.password": PASSWORD, "topic.prefix": "tls", "database.include.list": tls["db"],
        "table.include.list": f"{tls['db']}\\.t", **extra})


def _failed(tmp_path: Path, name: str, config: dict[str, str], *expected: str) -> str:
    worker = create(tmp_path / name, name, config)
    r = cli_here("run", name, worker=worker)
    assert r.returncode == 1, r.stdout + r.stderr
    for text in expected:
        assert text in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and PASSWORD not in r.stdout + r.stderr and "changeit" not in r.stderr
    assert offsets(worker, name) == []
    return r.stderr


def test_the_snapshot_the_binlog_and_an_incremental_snapshot_over_tls(tmp_path, services, tls):
    """verify_identity with a client certificate (the user REQUIRE X509): every connection, the JDBC reads of
    the incremental snapshot too."""
    db, topic, stores = tls["db"], f"tls.{tls['db']}.t", tls["stores"]
    worker = create(tmp_path, "cdc", _config(services, tls, **{
        "database.user": "lc_x509", "database.ssl.mode": "verify_identity",
        "database.ssl.truststore": str(stores / "trust.p12"), "database.ssl.truststore.password": "changeit",
        "database.ssl.keystore": str(stores / "client.p12"), "database.ssl.keystore.password": "changeit",
        "signal.data.collection": f"{db}.debezium_signal"}))
    run(worker, "cdc")
    tls["cur"].execute(f"INSERT INTO {db}.t VALUES (3, 'c')")
    tls["cur"].execute(f"INSERT INTO {db}.debezium_signal VALUES ('s1', 'execute-snapshot', %s)",
                       (json.dumps({"data-collections": [f"{db}.t"]}),))
    run(worker, "cdc")
    run(worker, "cdc")
    events = [(k["id"], v["op"]) for k, v in payloads(tmp_path / "lake", topic) if v]
    assert events[:3] == [(1, "r"), (2, "r"), (3, "c")], events
    assert sorted(events[3:]) == [(1, "r"), (2, "r"), (3, "r")], events


@pytest.mark.parametrize("mode", ["preferred", "required", "verify_ca", "verify_identity"])
def test_modes_that_trust_the_server_connect(tmp_path, services, tls, mode):
    stores = tls["stores"]
    extra = {"database.ssl.mode": mode}
    if mode.startswith("verify"):
        extra.update({"database.ssl.truststore": str(stores / "trust.p12"),
                      "database.ssl.truststore.password": "changeit"})
    worker = create(tmp_path, "cdc", _config(services, tls, **extra))
    r = run(worker, "cdc")
    assert "changeit" not in r.stdout + r.stderr
    assert [(k["id"], v["op"]) for k, v in payloads(tmp_path / "lake", f"tls.{tls['db']}.t")] == [(1, "r"), (2, "r")]


def test_a_pem_trust_store_and_a_client_certificate(tmp_path, services, tls):
    stores = tls["stores"]
    _failed(tmp_path, "nocert", _config(services, tls, **{"database.user": "lc_x509", "database.ssl.mode": "required"}),
            "cannot connect to 127.0.0.1", "Access denied for user 'lc_x509'")
    worker = create(tmp_path / "x509", "cdc", _config(services, tls, **{
        "database.user": "lc_x509", "database.ssl.mode": "verify_identity",
        "database.ssl.truststore": str(stores / "ca.pem"), "database.ssl.keystore": str(stores / "client.p12"),
        "database.ssl.keystore.password": "changeit"}))
    run(worker, "cdc")
    assert len(payloads(tmp_path / "x509" / "lake", f"tls.{tls['db']}.t")) == 2


def test_modes_that_must_not_connect_say_why(tmp_path, services, tls):
    stores = tls["stores"]
    _failed(tmp_path, "disabled", _config(services, tls, **{"database.ssl.mode": "disabled"}),
            "Access denied for user 'lc_tls'", "(a user that REQUIRE SSL or X509 is refused this way without TLS: "
            "database.ssl.mode=disabled)")
    _failed(tmp_path, "otherca", _config(services, tls, **{
        "database.ssl.mode": "verify_ca", "database.ssl.truststore": str(stores / "other-trust.p12"),
        "database.ssl.truststore.password": "changeit"}), "certificate verify failed", "check database.ssl.mode")
    _failed(tmp_path, "identity", _config(services, tls, **{
        "database.hostname": "localhost", "database.ssl.mode": "verify_identity",
        "database.ssl.truststore": str(stores / "trust.p12"), "database.ssl.truststore.password": "changeit"}),
        "Hostname mismatch", "check database.ssl.mode")
    _failed(tmp_path, "password", _config(services, tls, **{
        "database.ssl.mode": "verify_ca", "database.ssl.truststore": str(stores / "trust.p12"),
        "database.ssl.truststore.password": "wrong"}),
        "database.ssl.truststore: is neither a PEM file nor a PKCS12 store that its password opens (check "
        "database.ssl.truststore.password)")
    jks = tmp_path / "trust.jks"
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", str(stores / "ca.pem"),
                    "-keystore", str(jks), "-storetype", "JKS", "-storepass", "changeit"], check=True,
                   capture_output=True)
    _failed(tmp_path, "jks", _config(services, tls, **{
        "database.ssl.mode": "verify_ca", "database.ssl.truststore": str(jks),
        "database.ssl.truststore.password": "changeit"}),
        "database.ssl.truststore: is a JKS store, which this connector does not read: convert it to PKCS12")
    secret_file = tmp_path / "not-a-store"
    secret_file.write_text("TOP-SECRET-CONTENT\n")
    err = _failed(tmp_path, "notastore", _config(services, tls, **{
        "database.ssl.mode": "verify_ca", "database.ssl.truststore": str(secret_file)}),
        "database.ssl.truststore: is neither a PEM file nor a PKCS12 store")
    assert "TOP-SECRET" not in err


def test_tls_required_of_a_server_without_it(tmp_path, services):
    """The private MariaDB of the worker offers no TLS: required (and the verify modes) refuse to go on."""
    config = connector_config(services, **{"topic.prefix": "plain", "database.include.list": "lakeconnect_test",
                                           "table.include.list": "lakeconnect_test.none",
                                           "database.ssl.mode": "required"})
    _failed(tmp_path, "plain", config, "SSL is required but the server doesn't support it",
            "check database.ssl.mode and the server's TLS set-up")
